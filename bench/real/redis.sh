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
. "$(dirname "$0")/server_common.sh"
if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
	echo "redis.sh: redis-server and redis-benchmark are needed (apt-get install redis-server redis-tools)" >&2
	exit 2
fi
scratch redis
start() {
	LD_PRELOAD=$server_preload taskset -c "$server_cpu" redis-server --port "$1" --bind 127.0.0.1 \
		--save "" --appendonly no --dir "$dir" --daemonize no --loglevel warning >"$dir/server.log" 2>&1 &
}
answers() { [ "$(redis-cli -p "$1" ping)" = PONG ]; }
start_server 7 start answers || true
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
