#!/usr/bin/env bash
# named.sh [SECONDS]: Debian's named (bind9) under the allocator this script was started with
# (its LD_PRELOAD), on 127.0.0.1 and CPU 0, serving a zone of 20,000 names written here,
# driven by dnsperf under glibc on CPU 1 for SECONDS (default 10): A and TXT queries of names
# that exist and names that do not, in a fixed order.
# named is linked with jemalloc. Its libisc calls mallocx, sdallocx, rallocx, sallocx and
# mallctl; under a preloaded slubmalloc they bind to slubmalloc (tests/jemalloc_programs.sh
# checks it), under another library they stay jemalloc's.
# The server is stopped by the script, and waited for, so the caller's /usr/bin/time sees its
# peak RSS. Bounded: the server must answer within 20 s, the client runs under `timeout`.
# Prints: RESULT name=real_named qps=<queries answered per second> lost=<queries lost>
set -euo pipefail
secs=${1:-10}
. "$(dirname "$0")/server_common.sh"
for c in named dnsperf dig; do
	command -v "$c" >/dev/null || [ -x "/usr/sbin/$c" ] || {
		echo "named.sh: named, dig and dnsperf are needed (apt-get install bind9 bind9-dnsutils dnsperf)" >&2
		exit 2
	}
done
scratch named
{
	printf '$TTL 300\n@ IN SOA ns.example.test. admin.example.test. 1 3600 600 86400 300\n'
	printf '@ IN NS ns.example.test.\nns IN A 127.0.0.1\n'
	awk 'BEGIN { for (i = 1; i <= 20000; i++)
		printf "h%d IN A 10.%d.%d.%d\nh%d IN TXT \"record %d of the bench zone\"\n",
			i, int(i / 65536), int(i / 256) % 256, i % 256, i, i }'
} >"$dir/example.zone"
awk 'BEGIN { s = 1; for (i = 0; i < 100000; i++) { s = (s * 1103515245 + 12345) % 2147483648
	n = s % 24000; printf "%s.example.test %s\n", (n < 20000 ? "h" n : "none" n), (i % 3 ? "A" : "TXT") } }' \
	>"$dir/queries.txt"
start() {
	cat >"$dir/named.conf" <<CONF
options { directory "$dir"; listen-on port $1 { 127.0.0.1; }; listen-on-v6 { none; };
  recursion no; pid-file none; dnssec-validation no; };
zone "example.test" { type primary; file "$dir/example.zone"; };
CONF
	LD_PRELOAD=$server_preload taskset -c "$server_cpu" named -g -n 1 -u root -c "$dir/named.conf" \
		>"$dir/server.log" 2>&1 &
}
answers() { dig +time=1 +tries=1 @127.0.0.1 -p "$1" example.test SOA +short; }
start_server 11 start answers || true
[ -n "$port" ] || { echo "named.sh: the server did not answer:" >&2; tail -5 "$dir/server.log" >&2; exit 2; }
timeout $((secs + 60)) taskset -c "$client_cpu" dnsperf -s 127.0.0.1 -p "$port" -d "$dir/queries.txt" \
	-l "$secs" -c 4 -q 64 >"$dir/perf.txt" 2>&1
kill "$spid" 2>/dev/null || true
wait "$spid" 2>/dev/null || true
spid=
awk '/Queries completed:/ { done = $3 } /Queries lost:/ { lost = $3 } /Queries per second:/ { qps = $4 }
	END {
		if (qps == "") { print "named.sh: dnsperf printed no rate" > "/dev/stderr"; exit 2 }
		printf "RESULT name=real_named qps=%.0f lost=%s\n", qps, lost
	}' "$dir/perf.txt"
