#!/usr/bin/env bash
# tests/fuzz/build.sh: builds the libFuzzer harness build-fuzz/tests/fuzz/fuzz_ops. Configures
# build-fuzz (once) with clang, -Dfuzzer=true, the whole engine instrumented for libFuzzer's
# coverage (-fsanitize=fuzzer-no-link) and UBSan without recovery (-fsanitize=undefined
# -fno-sanitize-recover=all: undefined behaviour in the engine is a crash too). No ASan: it
# replaces malloc, the very thing under test. Then builds only the harness and what it needs.
# Prints the harness's path last; exits non-zero if anything fails.
# Env: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_CC (default clang).
set -eu
cd "$(dirname "$0")/../.."
dir=${FUZZ_BUILD_DIR:-build-fuzz}
cc=${FUZZ_CC:-clang}

# clang and its libFuzzer runtime (Debian: libclang-rt-N-dev), installed with apt-get when
# missing and we are root
apt_install() {
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "tests/fuzz/build.sh: installing $*" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1 ||
            { apt-get update -qq >/dev/null 2>&1 &&
                DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1; }
    fi
}
command -v "$cc" >/dev/null 2>&1 || apt_install clang
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "tests/fuzz/build.sh: $cc not found (apt-get install clang libclang-rt-dev)" >&2
    exit 2
fi
runtime=$("$cc" -print-resource-dir)/lib/linux/libclang_rt.fuzzer-x86_64.a
if [ ! -f "$runtime" ]; then
    apt_install "libclang-rt-$("$cc" -dumpversion | cut -d. -f1)-dev"
    if [ ! -f "$runtime" ]; then
        echo "tests/fuzz/build.sh: no libFuzzer runtime ($runtime)" >&2
        exit 2
    fi
fi
if [ ! -f "$dir/build.ninja" ]; then
    rm -rf "$dir"
    CC=$cc meson setup "$dir" --buildtype=release -Dfuzzer=true \
        -Db_sanitize=undefined -Db_lundef=false \
        -Dc_args='-g -fsanitize=fuzzer-no-link -fno-sanitize-recover=all' \
        -Dc_link_args='-fno-sanitize-recover=all' >"$dir.setup.log" 2>&1 || {
        cat "$dir.setup.log" >&2
        exit 1
    }
    rm -f "$dir.setup.log"
fi
ninja -C "$dir" tests/fuzz/fuzz_ops >&2
echo "$dir/tests/fuzz/fuzz_ops"
