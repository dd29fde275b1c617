#!/usr/bin/env bash
# redis_idle.sh [KEYS [SECONDS]]: what Debian's redis-server keeps resident once its data is gone
# and it sits idle, under the allocator this script was started with (its LD_PRELOAD; the
# SLUBMALLOC_* variables reach the server too).
# The server fills KEYS keys (default 300000) of 512-byte values (DEBUG POPULATE), deletes them
# all (FLUSHALL SYNC), then gets no command for SECONDS seconds (default 3).
# Prints: RESULT name=redis_idle filled_kib=... flushed_kib=... idle_kib=... (VmRSS right after
# the fill, right after the flush, and at the end of the idle time) and idle1_kib=... per second.
set -euo pipefail
keys=${1:-300000} secs=${2:-3}
. "$(dirname "$0")/server_common.sh"
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
	echo "redis_idle.sh: redis-server and redis-cli are needed (apt-get install redis-server redis-tools)" >&2
	exit 2
fi
scratch redis-idle
port=$((20000 + ($$ * 7 + 503) % 12000))
LD_PRELOAD=$server_preload redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
	--dir "$dir" --daemonize no --loglevel warning --enable-debug-command yes >"$dir/server.log" 2>&1 &
spid=$!
for _ in $(seq 200); do
	[ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break
	sleep 0.05
done
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$spid/status"; }
redis-cli -p "$port" debug populate "$keys" key 512 >/dev/null
filled=$(rss)
redis-cli -p "$port" flushall sync >/dev/null
flushed=$(rss) per=""
for s in $(seq "$secs"); do
	sleep 1
	per="$per idle${s}_kib=$(rss)"
done
echo "RESULT name=redis_idle filled_kib=$filled flushed_kib=$flushed idle_kib=$(rss)$per"
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
wait "$spid" 2>/dev/null || true
spid=
