"""bench/mdtable.py: the Markdown table writer shared by the report steps of compare.sh and
rss.sh (each copies this file next to its report.py, which imports it).
md_table(header, rows, right): header and rows are lists of strings; the columns whose index is
in `right` are right-aligned; every column is as wide as its widest cell."""


def md_table(header, rows, right):
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(header)]

    def row(cells):
        return "| " + " | ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i])
                                 for i, c in enumerate(cells)) + " |"
    sep = "|" + "|".join(("-" * (w + 1) + ":") if i in right else ("-" * (w + 2))
                         for i, w in enumerate(widths)) + "|"
    return "\n".join([row(header), sep] + [row(r) for r in rows])
