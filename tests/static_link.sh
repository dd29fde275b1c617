#!/usr/bin/env bash
# static_link.sh BUILD: a program linked statically with libslubmalloc.a, as a user would:
#   cc -static tests/linked/static_prog.c -I include -L BUILD/preload -lslubmalloc -lpthread
# Its malloc must be slubmalloc's: SLUBMALLOC_STATS=1 prints slubmalloc's statistics at exit,
# with the program's allocations counted, and the program's own checks pass.
# Also checks that `meson install` puts libslubmalloc.a next to the shared library.
set -u
build=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/slub-static.XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail=0
cc=${CC:-cc}
if ! $cc -O2 -static -o "$dir/prog" tests/linked/static_prog.c -I include -L "$build/preload" \
    -lslubmalloc -lpthread 2>"$dir/link.txt"; then
    echo "FAIL: static link: $(head -c 600 "$dir/link.txt")"
    exit 1
fi
if file "$dir/prog" 2>/dev/null | grep -q dynamically; then
    echo "FAIL: the program is not static: $(file "$dir/prog")"
    fail=1
fi
SLUBMALLOC_STATS=1 "$dir/prog" >"$dir/out.txt" 2>"$dir/err.txt"
rc=$?
cat "$dir/out.txt"
if [ "$rc" != 0 ]; then
    echo "FAIL: the static program exited with $rc"
    fail=1
fi
if ! grep -q '^slubmalloc: stats of pid' "$dir/err.txt"; then
    echo "FAIL: no slubmalloc statistics: its malloc is not slubmalloc's"
    fail=1
fi
# the kmalloc-48 row's alloc_fastpath + alloc_slowpath: the workers' and the bulk's allocations
allocs=$(awk '$1 == "kmalloc-48" && NF == 9 { print $2 + $3 }' "$dir/err.txt" | tail -n 1)
echo "static_link: kmalloc-48 allocations counted: ${allocs:-none}"
if [ "${allocs:-0}" -lt 64 ]; then
    echo "FAIL: SLUBMALLOC_STATS=1 counted ${allocs:-no} allocations in kmalloc-48"
    fail=1
fi
# The profiler and KFENCE start before the static libc has set up the loader's tables: their
# first unwind must not abort (libgcc's unwinder did, at 0c03400).
for opt in SLUBMALLOC_PROF=1 SLUBMALLOC_KFENCE=100; do
    (cd "$dir" && env "$opt" SLUBMALLOC_PROF_SAMPLE=4096 ./prog >/dev/null 2>"$dir/opt.txt")
    rc=$?
    if [ "$rc" != 0 ]; then
        echo "FAIL: under $opt the static program exited with $rc: $(head -c 300 "$dir/opt.txt")"
        fail=1
    fi
done
if ! head -n 1 "$dir"/slubmalloc.*.heap 2>/dev/null | grep -q '^heap profile: '; then
    echo "FAIL: SLUBMALLOC_PROF=1 wrote no heap profile"
    fail=1
else
    echo "static_link: SLUBMALLOC_PROF=1 and SLUBMALLOC_KFENCE=100 run; the profile: $(head -n 1 "$dir"/slubmalloc.*.heap)"
fi
if meson install -C "$build" --destdir "$dir/inst" --no-rebuild >/dev/null 2>&1; then
    a=$(find "$dir/inst" -name libslubmalloc.a | head -n 1)
    so=$(find "$dir/inst" -name 'libslubmalloc.so' | head -n 1)
    if [ -n "$a" ] && [ "$(dirname "$a")" = "$(dirname "$so")" ]; then
        echo "static_link: meson install puts ${a#"$dir/inst"} beside the shared library"
    else
        echo "FAIL: meson install did not install libslubmalloc.a beside libslubmalloc.so"
        fail=1
    fi
else
    echo "FAIL: meson install --destdir failed"
    fail=1
fi
[ "$fail" = 0 ] && echo "static_link: ok"
exit "$fail"
