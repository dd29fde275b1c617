# server_common.sh: what the server scripts of bench/real share; they source it.
# The preloaded library goes to the server alone: the script and its client run unpreloaded.
# The server gets CPU 0 and the client CPU 1 (CPU 0 on one CPU).
# scratch NAME makes the scratch folder $dir; at exit the server ($spid) is stopped and the
# folder removed.
server_preload=${LD_PRELOAD:-}
unset LD_PRELOAD
cpus=$(nproc)
server_cpu=0 client_cpu=$((cpus > 1 ? 1 : 0))
spid=
cleanup() {
	if [ -n "$spid" ]; then kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true; fi
	rm -rf "$dir"
}
scratch() {
	dir=$(mktemp -d "${TMPDIR:-/tmp}/slub-$1.XXXXXX")
	trap cleanup EXIT
}
# start_server SALT START ANSWERS: the server on a port below the kernel's ephemeral range
# (32768 up), where clients' ports never are; five ports are tried. `START PORT` starts it in
# the background; `ANSWERS PORT` succeeds once it answers (20 s at most). Sets $port and $spid;
# fails when no port worked.
start_server() {
	local salt=$1 start=$2 answers=$3 try p
	port=
	for try in 1 2 3 4 5; do
		p=$((20000 + ($$ * salt + try * 1009) % 12000))
		"$start" "$p"
		spid=$!
		for _ in $(seq 200); do
			"$answers" "$p" >/dev/null 2>&1 && port=$p && return 0
			kill -0 "$spid" 2>/dev/null || break
			sleep 0.1
		done
		kill "$spid" 2>/dev/null || true
		wait "$spid" 2>/dev/null || true
		spid=
	done
	return 1
}
