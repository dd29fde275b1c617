#!/usr/bin/env bash
# tests/linkage.sh BUILD: what the shared libraries ask of the loader and give to it.
# Each needs only libc and the loader: libgcc's unwinder is linked in (-static-libgcc), so a C
# program loads no libgcc_s.so.1. Each exports only the API: no engine name (sm_*), no name of
# libgcc's (_Unwind_*, __gcc_*), nothing else that begins with _ but C++'s operators (_Z*) and
# the debug library's checked copies (__mem*_chk).
set -u
build=${1:-build}
fails=0
for lib in "$build/preload/libslubmalloc.so" "$build/preload/libslubmalloc-debug.so"; do
    if [ ! -f "$lib" ]; then
        echo "FAIL $lib: missing"
        fails=$((fails + 1))
        continue
    fi
    needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    extra=$(echo "$needed" | grep -vE '^(libc\.so\.6|ld-linux-[a-z0-9_-]+\.so\.[0-9]+)$')
    if [ -n "$extra" ]; then
        echo "FAIL $lib needs more than libc and the loader: $(echo $extra)"
        fails=$((fails + 1))
    fi
    bad=$(nm -D --defined-only "$lib" | awk '{print $NF}' |
          grep -E '^(sm_|_)' | grep -vE '^(_Z|__mem(cpy|move|set)_chk$)')
    if [ -n "$bad" ]; then
        echo "FAIL $lib exports names outside the API: $(echo $bad | head -c 300)"
        fails=$((fails + 1))
    fi
    echo "$lib: needs $(echo $needed)"
done
[ "$fails" = 0 ] && echo "PASS linkage" || exit 1
