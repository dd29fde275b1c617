#!/usr/bin/env bash
# real_programs.sh: runs real Debian programs with and without LD_PRELOAD=$SLUBMALLOC_LIB and
# requires identical stdout and exit status: python3 (PYTHONMALLOC=malloc; dicts, lists, strings,
# json round trip), sort of a generated 200k-line file, perl (hash heavy), cc compiling a generated
# C file of a few thousand lines (nm output + the program's output), git (init, commits, log --stat,
# fsck, gc with fixed dates/author), sqlite3 (20k inserts in a transaction, queries), and xz and
# zstd compressing on two threads (compressed and decompressed output's md5).
# Each program is also run once more with SLUBMALLOC_STATS=1 and its stderr must contain the
# library's `slubmalloc: stats` line (proof that it really ran on slubmalloc); the preloaded run
# without stats must print no `slubmalloc:` message (those are error reports) on stderr.
# A program whose binary is missing is installed with apt-get if possible, otherwise skipped.
#
# Usage: tests/real_programs.sh [--no-stats] [--glibc-only]
#   SLUBMALLOC_LIB   library to preload (default: <repo>/build/preload/libslubmalloc.so)
#   --no-stats       skip the stats-line checks (e.g. for a library built without stats)
#   --glibc-only     sanity run without any preload (both sides on glibc; implies --no-stats)
# Prints PASS/FAIL/SKIP lines; exit status 0 only if nothing failed.
set -u
unset LD_PRELOAD  # the reference runs must not be preloaded; the library is preloaded explicitly

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
lib=${SLUBMALLOC_LIB:-$root/build/preload/libslubmalloc.so}
stats_check=1
glibc_only=0
for arg in "$@"; do
    case $arg in
        --no-stats) stats_check=0 ;;
        --glibc-only) glibc_only=1; stats_check=0 ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) echo "unknown option: $arg" >&2; exit 2 ;;
    esac
done

npass=0 nfail=0 nskip=0
pass() { echo "PASS $1"; npass=$((npass + 1)); }
fail() { echo "FAIL $1: $2"; nfail=$((nfail + 1)); }
skip() { echo "SKIP $1: $2"; nskip=$((nskip + 1)); }

if [ "$glibc_only" = 0 ]; then
    case $lib in /*) ;; *) lib=$PWD/$lib ;; esac
    if [ ! -f "$lib" ]; then
        fail "real_programs" "preload library $lib not found"
        echo "real_programs: $npass passed, $nfail failed, $nskip skipped"
        exit 1
    fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/slub_real.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

export LC_ALL=C TZ=UTC
unset SLUBMALLOC_STATS
tmo=180

apt_updated=0
# ensure_cmd COMMAND PACKAGE: 0 if COMMAND is (or could be made) available
ensure_cmd() {
    command -v "$1" >/dev/null 2>&1 && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        if [ "$apt_updated" = 0 ]; then
            DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1
            apt_updated=1
        fi
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null 2>&1
    fi
    command -v "$1" >/dev/null 2>&1
}

# with_lib CMD...: runs CMD with the library preloaded (or plain, in --glibc-only mode)
with_lib() {
    if [ "$glibc_only" = 1 ]; then
        "$@"
    else
        LD_PRELOAD="$lib" "$@"
    fi
}

show() { sed -e 's/^/    | /' "$1" | tail -n "${2:-10}"; }

# check NAME INPUT_DIR STATS_CMD -- CMD...
#   Runs CMD (in fresh copies of directory $work/INPUT_DIR) without and with the
#   library, compares stdout and exit status; then runs STATS_CMD (a shell snippet evaluated in
#   the preloaded run's directory, with LD_PRELOAD and SLUBMALLOC_STATS=1 set only for it)
#   and requires the stats line on its stderr.
check() {
    local name=$1 input=$work/$2 stats_cmd=$3
    shift 4
    local d=$work/$name
    local t0=$SECONDS
    mkdir -p "$d"
    for side in ref pre; do
        rm -rf "${d:?}/$side"
        cp -a "$input" "$d/$side"
    done
    (cd "$d/ref" && timeout "$tmo" "$@" >"$d/ref.out" 2>"$d/ref.err" </dev/null)
    local rc_ref=$?
    (cd "$d/pre" && with_lib timeout "$tmo" "$@" >"$d/pre.out" 2>"$d/pre.err" </dev/null)
    local rc_pre=$?
    local ok=1
    if [ "$rc_ref" != 0 ]; then
        fail "$name" "reference run (without preload) exited $rc_ref - test setup problem"
        show "$d/ref.err"
        return
    fi
    if [ "$rc_pre" != "$rc_ref" ]; then
        fail "$name" "exit status $rc_pre under preload, $rc_ref without"
        show "$d/pre.err"
        ok=0
    elif ! cmp -s "$d/ref.out" "$d/pre.out"; then
        fail "$name" "stdout differs under preload ($(wc -l <"$d/ref.out") vs $(wc -l <"$d/pre.out") lines)"
        diff "$d/ref.out" "$d/pre.out" >"$d/diff" 2>&1
        show "$d/diff" 12
        ok=0
    elif [ ! -s "$d/ref.out" ]; then
        fail "$name" "no output at all - test setup problem"
        ok=0
    fi
    if [ "$ok" = 1 ] && [ "$glibc_only" = 0 ] && grep -q '^slubmalloc:' "$d/pre.err"; then
        fail "$name" "slubmalloc reported a problem on stderr"
        grep '^slubmalloc:' "$d/pre.err" | head -5 | sed -e 's/^/    | /'
        ok=0
    fi
    [ "$ok" = 1 ] && pass "$name: same output with and without preload ($(wc -l <"$d/ref.out") lines, $((SECONDS - t0)) s)"

    if [ "$stats_check" = 1 ]; then
        (cd "$d/pre" && LD_PRELOAD="$lib" SLUBMALLOC_STATS=1 timeout "$tmo" bash -c "$stats_cmd" \
            >/dev/null 2>"$d/stats.err" </dev/null)
        local rc_st=$?
        if grep -q '^slubmalloc: stats' "$d/stats.err"; then
            pass "$name: runs on slubmalloc (stats line printed)"
        else
            fail "$name" "no 'slubmalloc: stats' line on stderr with SLUBMALLOC_STATS=1 (exit $rc_st): $stats_cmd"
            echo "    (either the library was not used, or the program closed fd 2 before the library's exit-time"
            echo "     report ran - coreutils programs close stderr in an atexit handler)"
            show "$d/stats.err" 5
        fi
    fi
}

# ---------------- python3 ----------------
py=/usr/bin/python3
[ -x "$py" ] || { ensure_cmd python3 python3; py=$(command -v python3 || true); }
if [ -n "$py" ] && [ -x "$py" ]; then
    mkdir -p python.in
    cat >python.in/work.py <<'EOF'
import hashlib, json, random
random.seed(12345)
d = {}
for i in range(150000):
    d["key%d" % i] = [i, str(i) * 3, {"x": i * 1.5, "y": [i] * 5, "s": "v" * (i % 40)}]
s = json.dumps(d, sort_keys=True)
d2 = json.loads(s)
assert d2 == d
print(len(s), hashlib.sha256(s.encode()).hexdigest())
words = ["".join(random.choice("abcdefghij") for _ in range(random.randint(1, 12))) for _ in range(200000)]
cnt = {}
for w in words:
    cnt[w] = cnt.get(w, 0) + 1
print(sorted(cnt.items(), key=lambda kv: (-kv[1], kv[0]))[:15])
lst = [list(range(i % 100)) for i in range(50000)]
print(sum(map(len, lst)), sum(sum(x) for x in lst))
big = " ".join(words)
print(len(big), big.count("abc"), hashlib.md5(big.upper().encode()).hexdigest())
for i in range(0, 150000, 2):
    del d["key%d" % i]
print(len(d), sum(v[0] for v in d.values()))
t = tuple(sorted(set(words)))
print(len(t), t[:5], t[-5:])
EOF
    check python3 python.in "PYTHONMALLOC=malloc $py work.py" -- env PYTHONMALLOC=malloc PYTHONHASHSEED=0 "$py" work.py
else
    skip python3 "python3 not installed and could not be installed"
fi

# ---------------- sort ----------------
if ensure_cmd sort coreutils && ensure_cmd awk mawk; then
    mkdir -p sort.in
    awk 'BEGIN { x = 12345; for (i = 0; i < 200000; i++) { x = (x * 1103515245 + 12345) % 2147483648;
                 printf "%010d %s%d %d\n", x % 1000000007, substr("qwertyuiopasdfghjklzxcvbnm", x % 26 + 1, x % 7 + 1), x % 1000, i } }' \
        >sort.in/input.txt
    check sort sort.in "sort -k2,2 input.txt" -- sort -S 32M --parallel=2 input.txt
    check sort_keys sort.in "sort -k2,2 -k1,1n input.txt" -- sort -S 16M --parallel=2 -k2,2 -k1,1n input.txt
else
    skip sort "sort/awk not available"
fi

# ---------------- perl ----------------
if ensure_cmd perl perl-base; then
    mkdir -p perl.in
    cat >perl.in/prog.pl <<'EOF'
my %h; for my $i (1..300000) { $h{"k$i"} = [$i, "v" x ($i % 50)]; }
my $s = 0; for my $k (sort keys %h) { $s += $h{$k}[0] + length($h{$k}[1]); }
delete $h{"k$_"} for grep { $_ % 3 } 1..300000;
print scalar(keys %h), " $s\n";
my %w; my $j = 0;
for my $n (1..200000) { my $w = join "", map { chr(97 + ($_ * 7 + $j++) % 26) } 1..($n % 20 + 1); $w{$w}++; }
my @top = (sort { $w{$b} <=> $w{$a} || $a cmp $b } keys %w)[0..9];
print join(",", map { "$_=$w{$_}" } @top), "\n";
my @a = map { { id => $_, name => "n" . ($_ * 17 % 1000) } } 1..100000;
print scalar(grep { $_->{name} eq "n500" } @a), "\n";
EOF
    check perl perl.in "perl prog.pl" -- perl prog.pl
else
    skip perl "perl not installed and could not be installed"
fi

# ---------------- cc ----------------
if ensure_cmd cc gcc && ensure_cmd nm binutils; then
    mkdir -p cc.in
    awk 'BEGIN {
        print "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>";
        print "static const int table[] = {";
        for (i = 0; i < 1500; i++) printf "  %d, %d, %d, %d,\n", i, i * 3 % 101, i * 7 % 997, i * 13 % 4099;
        print "};";
        for (f = 0; f < 400; f++) {
            printf "int fn%d(int x) {\n  int acc = %d;\n", f, f;
            printf "  for (int i = 0; i < x %% 17; i++) acc += table[(x + i * %d) %% (int)(sizeof table / sizeof table[0])];\n", f + 1;
            printf "  if (acc %% 3 == 0) acc ^= 0x%x;\n  return acc;\n}\n", f * 2654435 % 65536;
            printf "struct s%d { int a[%d]; char name[%d]; };\n", f, f % 7 + 1, f % 13 + 4;
        }
        print "int main(void) {\n  long sum = 0;";
        for (f = 0; f < 400; f++) printf "  sum += fn%d(%d);\n", f, f * 31 % 1000;
        print "  char *buf = malloc(100); snprintf(buf, 100, \"%ld\", sum); puts(buf); free(buf);\n  return 0;\n}";
    }' >cc.in/gen.c
    cc_job='cc -O2 -c gen.c -o gen.o && nm gen.o && cc gen.o -o gen && ./gen'
    check cc cc.in "cc -O2 -c gen.c -o stats.o" -- bash -c "$cc_job"
else
    skip cc "cc/nm not installed and could not be installed"
fi

# ---------------- git ----------------
if ensure_cmd git git; then
    mkdir -p git.in
    cat >git.in/job.sh <<'EOF'
set -e
export GIT_AUTHOR_NAME='Slub Test' GIT_AUTHOR_EMAIL=slub@example.com
export GIT_COMMITTER_NAME='Slub Test' GIT_COMMITTER_EMAIL=slub@example.com
export GIT_AUTHOR_DATE='2021-02-03T04:05:06+0000' GIT_COMMITTER_DATE='2021-02-03T04:05:06+0000'
export HOME=$PWD GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
git init -q -b main repo
cd repo
for c in 1 2 3 4 5 6; do
    awk -v c=$c 'BEGIN { for (f = 0; f < 120; f++) { fn = sprintf("dir%d/file%03d.txt", f % 6, f);
        system("mkdir -p dir" f % 6); for (l = 0; l < 40 + (f * c) % 50; l++)
        printf "line %d of file %d in commit %d %s\n", l, f, (l % c == 0 ? c : 0), (l % 7 ? "x" : "yy") > fn; close(fn) } }'
    git add -A
    git commit -q -m "commit $c"
done
git rm -q -r dir3
git commit -q -m "remove dir3"
git log --stat
git fsck --full --no-progress 2>&1
git gc -q
git fsck --full --no-progress 2>&1
git log --oneline --shortstat | tail -5
git ls-files | wc -l
git cat-file -p 'HEAD^{tree}'
git diff --stat HEAD~3 HEAD | tail -3
EOF
    check git git.in "git -C repo log --stat -p" -- bash job.sh
else
    skip git "git not installed and could not be installed"
fi

# ---------------- sqlite3 ----------------
if ensure_cmd sqlite3 sqlite3; then
    mkdir -p sqlite.in
    awk 'BEGIN {
        print "DROP TABLE IF EXISTS t; DROP TABLE IF EXISTS u;";
        print "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, grp INTEGER, val REAL, blobby TEXT);";
        print "CREATE TABLE u (grp INTEGER PRIMARY KEY, label TEXT);";
        print "BEGIN;";
        for (i = 1; i <= 20000; i++)
            printf "INSERT INTO t VALUES (%d, %cname%d%c, %d, %d.25, %c%s%c);\n", i, 39, i * 7919 % 20011, 39, i % 97, i * 3 % 1000, 39, substr("abcdefghijklmnopqrstuvwxyz0123456789", 1, i % 36 + 1), 39;
        for (g = 0; g < 97; g++) printf "INSERT INTO u VALUES (%d, %clabel-%d%c);\n", g, 39, g * g, 39;
        print "COMMIT;";
        print "CREATE INDEX t_name ON t(name);";
        print "SELECT count(*), sum(val), min(name), max(name) FROM t;";
        print "SELECT grp, count(*), round(avg(val), 3) FROM t GROUP BY grp ORDER BY grp LIMIT 20;";
        print "SELECT u.label, count(*) FROM t JOIN u USING (grp) WHERE t.val > 500 GROUP BY u.label ORDER BY 2 DESC, 1 LIMIT 10;";
        print "SELECT name, length(blobby) FROM t WHERE name LIKE \x27name1%\x27 ORDER BY name LIMIT 10;";
        print "UPDATE t SET blobby = blobby || blobby WHERE id % 3 = 0;";
        print "DELETE FROM t WHERE id % 5 = 0;";
        print "SELECT count(*), sum(length(blobby)) FROM t;";
        print "VACUUM;";
        print "SELECT group_concat(id, \x27,\x27) FROM (SELECT id FROM t ORDER BY val DESC, id LIMIT 25);";
    }' >sqlite.in/job.sql
    check sqlite3 sqlite.in "sqlite3 stats.db '.read job.sql'" -- sqlite3 test.db '.read job.sql'
else
    skip sqlite3 "sqlite3 not installed and could not be installed"
fi

# ---------------- xz and zstd, two threads ----------------
# Both compress with two worker threads (xz also decompresses with them): blocks of 1 MiB.
mkdir -p mt.in
awk 'BEGIN { x = 777; for (i = 0; i < 300000; i++) { x = (x * 1103515245 + 12345) % 2147483648;
             printf "%d %s %d\n", i, substr("lorem ipsum dolor sit amet consectetur", x % 20 + 1, x % 17 + 3), x % 100003 } }' \
    >mt.in/input.txt
if ensure_cmd xz xz-utils; then
    check xz_threads mt.in "xz -T2 --block-size=1MiB -6 -c input.txt >/dev/null" -- bash -c \
        'xz -T2 --block-size=1MiB -6 -c input.txt >c.xz && md5sum <c.xz && xz -T2 -dc c.xz | md5sum'
else
    skip xz_threads "xz not installed and could not be installed"
fi
if ensure_cmd zstd zstd; then
    check zstd_threads mt.in "zstd -q -T2 -B1MiB -9 -c input.txt >/dev/null" -- bash -c \
        'zstd -q -T2 -B1MiB -9 -c input.txt >c.zst && md5sum <c.zst && zstd -q -dc c.zst | md5sum'
else
    skip zstd_threads "zstd not installed and could not be installed"
fi

echo "real_programs: $npass passed, $nfail failed, $nskip skipped"
[ "$nfail" = 0 ]
