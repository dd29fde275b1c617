#!/usr/bin/env bash
# jemalloc_programs.sh: Debian programs built against libjemalloc, run with
# LD_PRELOAD=$SLUBMALLOC_LIB, on 127.0.0.1 only, each under a time limit.
#   named (bind9): every jemalloc call of libisc (mallocx, sdallocx, rallocx, sallocx, mallctl)
#     binds to the library (LD_DEBUG=bindings); dig's answers for a zone written here are the
#     same as without the library; dnsperf for 3 s loses no query.
#   redis-server: after DEBUG POPULATE, INFO memory's allocator_allocated is within 5% (or
#     2 MiB) of used_memory; with every key deleted, MEMORY PURGE lowers allocator_resident by
#     8 MiB or more, to within 2 MiB of where it was before the keys.
# A program that is missing is installed with apt-get if possible, otherwise skipped.
# Usage: tests/jemalloc_programs.sh  (SLUBMALLOC_LIB: the library; default build/preload/...)
# Prints PASS/FAIL/SKIP lines; exit status 0 only if nothing failed.
set -u
unset LD_PRELOAD
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
lib=${SLUBMALLOC_LIB:-$root/build/preload/libslubmalloc.so}
case $lib in /*) ;; *) lib=$PWD/$lib ;; esac

npass=0 nfail=0 nskip=0
pass() { echo "PASS $1"; npass=$((npass + 1)); }
fail() { echo "FAIL $1: $2"; nfail=$((nfail + 1)); }
skip() { echo "SKIP $1: $2"; nskip=$((nskip + 1)); }

work=$(mktemp -d "${TMPDIR:-/tmp}/slub_jem.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

apt_updated=0
# ensure_cmd COMMAND PACKAGE: 0 if COMMAND is (or could be made) available
ensure_cmd() {
    command -v "$1" >/dev/null 2>&1 && return 0
    [ -x "/usr/sbin/$1" ] && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        if [ "$apt_updated" = 0 ]; then
            apt-get update -qq >/dev/null 2>&1
            apt_updated=1
        fi
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null 2>&1
    fi
    command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]
}

# A free TCP and UDP port on 127.0.0.1.
free_port() {
    python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_for SECONDS COMMAND...: until COMMAND succeeds.
wait_for() {
    local t=$1 i
    shift
    for ((i = 0; i < t * 10; i++)); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}

if [ ! -f "$lib" ]; then
    fail jemalloc_programs "preload library $lib not found"
    echo "jemalloc_programs: $npass passed, $nfail failed, $nskip skipped"
    exit 1
fi

# ---- named ----
test_named() {
    local d=$work/named port out
    mkdir -p "$d"
    port=$(free_port)
    {
        printf '$TTL 300\n@ IN SOA ns.example.test. admin.example.test. 1 3600 600 86400 300\n'
        printf '@ IN NS ns.example.test.\nns IN A 127.0.0.1\n'
        for i in $(seq 1 2000); do
            printf 'h%d IN A 10.0.%d.%d\nh%d IN TXT "record %d"\n' "$i" $((i / 250)) $((i % 250)) "$i" "$i"
        done
    } > "$d/example.zone"
    cat > "$d/named.conf" <<EOF
options { directory "$d"; listen-on port $port { 127.0.0.1; }; listen-on-v6 { none; };
  recursion no; pid-file none; dnssec-validation no; };
zone "example.test" { type primary; file "$d/example.zone"; };
EOF
    local names="h1 h17 h250 h1999 nosuch" qs=()
    for n in $names; do qs+=("$n.example.test A" "$n.example.test TXT"); done
    qs+=("example.test SOA" "example.test NS")
    # answers ($1: with the library or not)
    run_named() {
        local pre=$1 pid ans=$d/answers.$1
        if [ "$pre" = slub ]; then
            env LD_PRELOAD="$lib" LD_DEBUG=bindings LD_DEBUG_OUTPUT="$d/bind" \
                timeout 60 named -g -n 2 -u root -c "$d/named.conf" > "$d/named.$pre.log" 2>&1 &
        else
            timeout 60 named -g -n 2 -u root -c "$d/named.conf" > "$d/named.$pre.log" 2>&1 &
        fi
        pid=$!
        pids+=("$pid")
        if ! wait_for 20 dig +time=1 +tries=1 @127.0.0.1 -p "$port" example.test SOA +short; then
            fail "named ($pre)" "does not answer (log: $(tail -3 "$d/named.$pre.log" | tr '\n' ' '))"
            kill "$pid" 2>/dev/null
            return 1
        fi
        : > "$ans"
        local a k
        for q in "${qs[@]}"; do
            # dig can get its own query back (no QR bit: "query response not set"), when its
            # ephemeral source port is named's: ask again, up to three times
            for k in 1 2 3; do
                # shellcheck disable=SC2086
                a=$(dig +time=2 +tries=2 +nocookie @127.0.0.1 -p "$port" $q +noall +answer +comments)
                case $a in *"query response not set"*) ;; *) break ;; esac
            done
            printf '%s\n' "$a" |
                grep -E -v '^;; (Query time|WHEN|SERVER|MSG SIZE|global|Got answer)|id: ' >> "$ans"
        done
        if [ "$pre" = slub ]; then
            for i in $(seq 1 4000); do echo "h$((i % 2000 + 1)).example.test A"; done > "$d/q.txt"
            timeout 30 dnsperf -s 127.0.0.1 -p "$port" -d "$d/q.txt" -l 3 > "$d/dnsperf.out" 2>&1
        fi
        kill "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        return 0
    }
    run_named glibc || return
    run_named slub || return
    if cmp -s "$d/answers.glibc" "$d/answers.slub" && [ -s "$d/answers.slub" ]; then
        pass "named: ${#qs[@]} answers the same as without the library"
    else
        fail named "answers differ: $(diff "$d/answers.glibc" "$d/answers.slub" | head -5 | tr '\n' ' ')"
    fi
    local want bad=""
    for sym in mallocx sdallocx rallocx sallocx mallctl; do
        want=$(grep -h "libisc-.*normal symbol \`$sym'" "$d"/bind.* 2>/dev/null | head -1)
        case $want in
            *"to $lib "*) ;;
            *) bad="$bad $sym(${want##*to }) " ;;
        esac
    done
    if [ -z "$bad" ]; then
        pass "named: libisc's mallocx, sdallocx, rallocx, sallocx and mallctl bind to the library"
    else
        fail named "libisc binds elsewhere:$bad"
    fi
    local sent lost
    sent=$(awk '/Queries sent:/ {print $3}' "$d/dnsperf.out")
    lost=$(awk '/Queries lost:/ {print $3}' "$d/dnsperf.out")
    if [ -n "$sent" ] && [ "$sent" -gt 1000 ] && [ "$lost" = 0 ]; then
        pass "named under dnsperf: $sent queries, 0 lost"
    else
        fail named "dnsperf: sent ${sent:-?}, lost ${lost:-?} ($(tail -3 "$d/dnsperf.out" | tr '\n' ' '))"
    fi
}

if ensure_cmd named bind9 && ensure_cmd dig bind9-dnsutils && ensure_cmd dnsperf dnsperf; then
    test_named
else
    skip named "named, dig or dnsperf missing"
fi

# ---- redis ----
info() { redis-cli -p "$rport" INFO memory | tr -d '\r' | awk -F: -v k="$1" '$1 == k {print $2}'; }

test_redis() {
    local d=$work/redis pid
    mkdir -p "$d"
    rport=$(free_port)
    # INFO shows the figures of redis's last cron run (hz: 20 a second). The purge delay is long,
    # so that only MEMORY PURGE gives the freed pages back.
    env LD_PRELOAD="$lib" SLUBMALLOC_PURGE_DELAY_MS=60000 timeout 120 redis-server --port "$rport" \
        --bind 127.0.0.1 --save '' --appendonly no --enable-debug-command yes --hz 20 \
        --dir "$d" > "$d/log" 2>&1 &
    pid=$!
    pids+=("$pid")
    if ! wait_for 20 redis-cli -p "$rport" PING; then
        fail redis "does not answer ($(tail -3 "$d/log" | tr '\n' ' '))"
        return
    fi
    local used alloc res0 res1 res2 diff lim
    sleep 0.3
    res0=$(info allocator_resident)
    redis-cli -p "$rport" DEBUG POPULATE 200000 key 200 > /dev/null
    sleep 0.3
    used=$(info used_memory)
    alloc=$(info allocator_allocated)
    diff=$((alloc > used ? alloc - used : used - alloc))
    lim=$((used / 20 > 2097152 ? used / 20 : 2097152))
    if [ -n "$alloc" ] && [ "$alloc" -gt 0 ] && [ "$diff" -le "$lim" ]; then
        pass "redis: allocator_allocated $alloc tracks used_memory $used"
    else
        fail redis "allocator_allocated ${alloc:-?} against used_memory $used"
    fi
    # every key deleted by commands (a Lua loop would keep its strings until Lua's collector)
    python3 -c 'import sys
for i in range(200000):
    k = "key:%d" % i
    sys.stdout.write("*2\r\n$3\r\nDEL\r\n$%d\r\n%s\r\n" % (len(k), k))' > "$d/del.resp"
    redis-cli -p "$rport" --pipe < "$d/del.resp" > /dev/null
    sleep 0.3
    res1=$(info allocator_resident)
    redis-cli -p "$rport" MEMORY PURGE > /dev/null
    sleep 0.3
    res2=$(info allocator_resident)
    # The freed pages that stay (up to 32 MiB) go back: resident returns to where it started.
    if [ "$(redis-cli -p "$rport" DBSIZE)" = 0 ] && [ "$res1" -gt $((res2 + 8388608)) ] &&
        [ "$res2" -le $((res0 + 2097152)) ]; then
        pass "redis: MEMORY PURGE took allocator_resident from $res1 to $res2 (it started at $res0)"
    else
        fail redis "MEMORY PURGE: allocator_resident $res1 -> $res2 (it started at $res0)"
    fi
    redis-cli -p "$rport" MEMORY MALLOC-STATS | grep -q "Allocated: " ||
        fail redis "MEMORY MALLOC-STATS has no totals"
    redis-cli -p "$rport" SHUTDOWN NOSAVE > /dev/null 2>&1
    wait "$pid" 2>/dev/null
    if grep -q "slubmalloc:" "$d/log"; then
        fail redis "a slubmalloc report: $(grep slubmalloc: "$d/log" | head -2)"
    fi
}

if ensure_cmd redis-server redis-server && ensure_cmd redis-cli redis-tools; then
    test_redis
else
    skip redis "redis-server or redis-cli missing"
fi

echo "jemalloc_programs: $npass passed, $nfail failed, $nskip skipped"
[ "$nfail" = 0 ]
