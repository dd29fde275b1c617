#!/usr/bin/env bash
# redis.sh [REQUESTS]: Debian's redis-server under the allocator this script was started with
# (its LD_PRELOAD), on 127.0.0.1 and CPU 0, driven by redis-benchmark under glibc on CPU 1:
# REQUESTS (default 200000) each of SET, GET, LPUSH and HSET, 256-byte values over 100k keys,
# 16 commands per pipeline. The server is stopped by the script (SHUTDOWN NOSAVE), and waited
# for, so the caller's /usr/bin/time sees its peak RSS. Bounded: the server must answer within
# 10 s, the client runs under `timeout`.
# redis-server is linked with jemalloc. Under a preloaded slubmalloc all its calls bind to
# slubmalloc, mallctl, nallocx and malloc_stats_print too; under another library those three
# stay jemalloc's, which is harmless: redis frees no block through jemalloc, and its one
# nallocx call (sds.c) only skips a realloc when the two sizes agree.
# Prints: RESULT name=real_redis rps=<all requests / total time> set=... get=... lpush=... hset=...
set -euo pipefail
n=${1:-200000}
server_preload=${LD_PRELOAD:-}
unset LD_PRELOAD
if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
	echo "redis.sh: redis-server and redis-benchmark are needed (apt-get install redis-server redis-tools)" >&2
	exit 2
fi
cpus=$(nproc)
server_cpu=0 client_cpu=$((cpus > 1 ? 1 : 0))
dir=$(mktemp -d "${TMPDIR:-/tmp}/slub-redis.XXXXXX")
spid=
cleanup() {
	if [ -n "$spid" ]; then kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true; fi
	rm -rf "$dir"
}
trap cleanup EXIT
# a port below the kernel's ephemeral range (32768 up), where clients' ports never are; tried
# again with another if it is taken
port=
for try in 1 2 3 4 5; do
	p=$((20000 + ($$ * 7 + try * 1009) % 12000))
	LD_PRELOAD=$server_preload taskset -c "$server_cpu" redis-server --port "$p" --bind 127.0.0.1 \
		--save "" --appendonly no --dir "$dir" --daemonize no --loglevel warning >"$dir/server.log" 2>&1 &
	spid=$!
	for _ in $(seq 100); do
		[ "$(redis-cli -p "$p" ping 2>/dev/null)" = PONG ] && port=$p && break 2
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	kill "$spid" 2>/dev/null || true
	wait "$spid" 2>/dev/null || true
	spid=
done
[ -n "$port" ] || { echo "redis.sh: the server did not answer:" >&2; cat "$dir/server.log" >&2; exit 2; }
timeout 300 taskset -c "$client_cpu" redis-benchmark -p "$port" -n "$n" -r 100000 -d 256 -P 16 \
	-t set,get,lpush,hset -q --csv >"$dir/bench.csv"
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
wait "$spid" || true
spid=
awk -F'"' -v n="$n" '
	$2 ~ /^(SET|GET|LPUSH|HSET)$/ { rps[tolower($2)] = $4; total += n / $4; k++ }
	END {
		if (k != 4) { print "redis.sh: redis-benchmark printed " k " of 4 tests" > "/dev/stderr"; exit 2 }
		printf "RESULT name=real_redis rps=%.0f set=%s get=%s lpush=%s hset=%s\n", 4 * n / total,
			rps["set"], rps["get"], rps["lpush"], rps["hset"]
	}' "$dir/bench.csv"
