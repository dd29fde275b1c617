#!/usr/bin/env python3
"""layers.py: the source tree's layers depend only downward (tests/run.sh runs it).

  preload/ (the libc and C++ names) -> src/ (the engine) -> src/percpu/ -> src/report.c
  -> src/platform/ (the only files that call the OS)

The engine is the core, flat in src/, and its separable parts, each a folder with one header
that the rest of the library includes (PARTS): src/diag/ (diag.h), src/jemalloc/ (compat.h).

Fails, naming the file and the line, when:
  - a file under src/ includes a file of preload/, or calls a function defined there;
  - a file outside src/platform/ calls the OS directly (mmap, syscall, sched_yield, open, ...);
  - a file of src/percpu/ or src/platform/ includes an engine header (any header of src/ and
    its part folders but report.h: the engine is a layer above);
  - a file of src/ or preload/ outside a part's folder includes a file of that folder other
    than the part's header;
  - a header under src/ includes a file after its first declaration (includes at the top);
  - a file under src/ has more than 1,000 lines (a file holds one part; a long part may be long).
Includes are found as the compiler finds them: beside the file, then in INCLUDE_DIRS.
Comments and string literals are ignored. Usage: tests/layers.py [ROOT]
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
MAX_LINES = 1000
# meson.build's slub_inc, in its order
INCLUDE_DIRS = ["include", "src", "src/platform", "src/percpu"]
# a separable part's folder -> the one header of it that files outside it may include
PARTS = {"src/diag": "diag.h", "src/jemalloc": "compat.h"}
# the engine's header that the layers below it share
BELOW_ENGINE = {"src/report.h"}
OS_CALLS = ["mmap", "munmap", "madvise", "mremap", "mprotect", "syscall", "sched_yield",
            "sched_getcpu", "open", "openat", "fcntl", "read", "write", "close", "sysconf",
            "getauxval", "clock_gettime", "gettid", "getpid", "getrandom", "membarrier",
            "prctl"]


def strip(text):
    """The text with comments and string and character literals blanked, lines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def files(top, exts=(".c", ".h")):
    for d, _, names in os.walk(os.path.join(ROOT, top)):
        for name in sorted(names):
            if name.endswith(exts):
                yield os.path.join(d, name)


def rel(path):
    return os.path.relpath(path, ROOT)


def resolve(name, path):
    """The file an #include "name" in path reaches, relative to ROOT; None: not in the tree."""
    for d in [os.path.dirname(rel(path))] + INCLUDE_DIRS:
        p = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(os.path.join(ROOT, p)):
            return p
    return None


def engine_header(p):
    """Whether p (relative to ROOT) is a header of the engine: flat in src/, or in a part."""
    d = os.path.dirname(p)
    return p.endswith(".h") and (d == "src" or d in PARTS) and p not in BELOW_ENGINE


def include_problems(r, path, no, name):
    """What is wrong with file r including name at line no."""
    bad = []
    target = resolve(name, path)
    if target is None:
        return bad
    if r.startswith(("src/percpu/", "src/platform/")) and engine_header(target):
        bad.append("%s:%d: includes %s, an engine header (the engine is a layer above)" %
                   (r, no, target))
    folder = os.path.dirname(target)
    if folder in PARTS and os.path.dirname(r) != folder and \
            os.path.basename(target) != PARTS[folder]:
        bad.append("%s:%d: includes %s; outside %s/, only %s/%s" %
                   (r, no, target, folder, folder, PARTS[folder]))
    return bad


def preload_names():
    """Functions defined in preload/: exported names and the C++ shims' function names."""
    names = set()
    for path in files("preload"):
        if os.path.basename(path) == "memops.c":
            continue  # libc's memcpy and memset, checked in the debug library: the engine's
            # calls are calls of libc, which is what they reach in libslubmalloc.so
        text = strip(open(path).read())
        names.update(re.findall(r"^SM_EXPORT\b[^(;]*?\b(\w+)\s*\(", text, re.M))
        names.update(re.findall(r"^(?:NEW|DELETE)\s*\(\s*(\w+)\s*,", text, re.M))
        names.update(re.findall(r"^static\b[^(;=]*?\b(\w+)\s*\([^;]*\)\s*\{", text, re.M))
    return names


def main():
    bad = []
    defined = preload_names()
    calls = re.compile(r"(?<![\w.>])(%s)\s*\(" % "|".join(sorted(defined))) if defined else None
    os_calls = re.compile(r"(?<![\w.>])(%s)\s*\(" % "|".join(OS_CALLS))
    for path in files("preload"):
        raw = open(path).read().split("\n")
        for no, line in enumerate(raw, 1):
            inc = re.match(r'\s*#\s*include\s*"([^"]+)"', line)
            if inc:
                bad += include_problems(rel(path), path, no, inc.group(1))
    for path in files("src"):
        r = rel(path)
        raw = open(path).read()
        lines = raw.count("\n")
        if lines > MAX_LINES:
            bad.append("%s: %d lines (at most %d)" % (r, lines, MAX_LINES))
        text = strip(raw)
        code_from = None  # a header's first line of code: its includes come before it
        for no, line in enumerate(text.split("\n"), 1):
            inc = re.match(r'\s*#\s*include\s*[<"]([^>"]+)[>"]', raw.split("\n")[no - 1])
            if inc:
                name = inc.group(1)
                target = os.path.basename(name)
                if "preload/" in name or os.path.exists(os.path.join(ROOT, "preload", target)):
                    bad.append("%s:%d: includes %s, a file of preload/" % (r, no, name))
                if '"' in raw.split("\n")[no - 1]:
                    bad += include_problems(r, path, no, name)
                if code_from is not None:
                    bad.append("%s:%d: includes %s after its first declaration (line %d)" %
                               (r, no, name, code_from))
                continue
            directive = line.lstrip().startswith("#") or \
                (no > 1 and raw.split("\n")[no - 2].endswith("\\"))  # or its continuation
            if r.endswith(".h") and code_from is None and line.strip() and not directive:
                code_from = no
            if re.match(r"\s*#\s*define\b", line):
                continue
            if calls:
                for m in calls.finditer(line):
                    bad.append("%s:%d: calls %s(), defined in preload/" % (r, no, m.group(1)))
            if not r.startswith("src/platform/"):
                for m in os_calls.finditer(line):
                    bad.append("%s:%d: calls the OS (%s) outside src/platform/" %
                               (r, no, m.group(1)))
    for b in bad:
        print("layers: " + b)
    print("layers: %d preload functions checked, %d problems" % (len(defined), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
