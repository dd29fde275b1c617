# bench/peers.sh: sourced by compare.sh, public.sh, rss.sh and call_forms.sh; defines functions only.
# set_build_dir sets BUILD_ABS from BUILD_DIR (needs ROOT). install_packages
# installs the Debian packages that are missing (as root, with apt-get; INSTALL=0: never).
# build_release builds the given targets in BUILD_ABS (set up as a release build if needed;
# another buildtype is refused; needs BUILD_DIR, TMPD and PY).
# locate_allocators finds the allocator libraries to compare (the Debian packages' shared
# objects, or JEMALLOC_LIB/MIMALLOC_LIB/TCMALLOC_LIB/SLUBMALLOC_LIB) and keeps those that really
# load under LD_PRELOAD. Both expect from the caller the functions note and die;
# locate_allocators also ALLOCATORS (names, glibc first) and BUILD_ABS (the build folder), and
# sets LIB[name] (absolute path, or "none" for glibc), AVAIL (the usable allocators, in
# ALLOCATORS' order), SKIPPED (one "name: why" line each) and NA (how many are usable).
# select_named turns an --only list into SELECTED; env_md_allocators writes a report's lines on
# the allocators and the SLUBMALLOC_* settings (public.sh, compare.sh and rss.sh share both).
# shellcheck shell=bash

install_packages() { # install_packages PACKAGE...
	[ "$INSTALL" = 1 ] && command -v dpkg-query >/dev/null 2>&1 || return 0
	local missing=() p
	for p in "$@"; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
			missing+=("$p")
		fi
	done
	[ ${#missing[@]} -gt 0 ] || return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		note "installing missing packages: ${missing[*]}"
		apt-get update -qq >/dev/null || die "apt-get update failed"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
			die "apt-get install ${missing[*]} failed"
	else
		note "missing packages (not root, not installing): ${missing[*]}"
	fi
}

set_build_dir() { # BUILD_DIR (default build; absolute, or relative to ROOT) -> BUILD_ABS
	BUILD_DIR=${BUILD_DIR:-build}
	case "$BUILD_DIR" in
	/*) BUILD_ABS=$BUILD_DIR ;;
	*) BUILD_ABS=$ROOT/$BUILD_DIR ;;
	esac
}

build_release() { # build_release TARGET...
	note "building ($BUILD_DIR, release: $*) ..."
	if [ ! -f "$BUILD_ABS/build.ninja" ]; then
		if ! meson setup "$BUILD_ABS" --buildtype=release >"$TMPD/build.log" 2>&1; then
			tail -n 30 "$TMPD/build.log" >&2
			die "meson setup $BUILD_DIR failed (log above)"
		fi
	fi
	if ! ninja -C "$BUILD_ABS" "$@" >>"$TMPD/build.log" 2>&1; then
		tail -n 30 "$TMPD/build.log" >&2
		die "ninja -C $BUILD_DIR failed (log above)"
	fi
	if grep -q 'warning:' "$TMPD/build.log"; then
		note "the build printed warnings:"
		grep -A3 'warning:' "$TMPD/build.log" | head -n 20 >&2
	fi
	BUILDTYPE=$(meson introspect --buildoptions "$BUILD_ABS" 2>/dev/null |
		"$PY" -c 'import json,sys; print(next((o["value"] for o in json.load(sys.stdin) if o["name"]=="buildtype"), "unknown"))' ||
		echo unknown)
	[ "$BUILDTYPE" = release ] ||
		die "$BUILD_DIR is configured with buildtype=$BUILDTYPE; benchmarks need a release build (meson configure $BUILD_DIR -Dbuildtype=release, or BUILD_DIR=build-release)"
}

MULTIARCH=$(cc -print-multiarch 2>/dev/null || true)
LIBDIRS=("/usr/lib/${MULTIARCH:-x86_64-linux-gnu}" /usr/lib64 /usr/lib /usr/local/lib)

find_lib() { # find_lib NAME... -> first existing path
	local n d
	for n in "$@"; do
		for d in "${LIBDIRS[@]}"; do
			if [ -e "$d/$n" ]; then
				echo "$d/$n"
				return 0
			fi
		done
	done
	return 1
}

declare -A LIB
locate_allocators() {
	LIB[glibc]=none
	LIB[jemalloc]=${JEMALLOC_LIB:-$(find_lib libjemalloc.so.2 libjemalloc.so || echo "")}
	LIB[mimalloc]=${MIMALLOC_LIB:-$(find_lib libmimalloc.so.2 libmimalloc.so || echo "")}
	LIB[tcmalloc]=${TCMALLOC_LIB:-$(find_lib libtcmalloc_minimal.so.4 libtcmalloc.so.4 || echo "")}
	SLUB_DEFAULT="$BUILD_ABS/preload/libslubmalloc.so"
	LIB[slubmalloc]=${SLUBMALLOC_LIB:-$SLUB_DEFAULT}
	if [ ! -f "${LIB[slubmalloc]}" ]; then
		if [ -n "${SLUBMALLOC_LIB:-}" ]; then
			die "SLUBMALLOC_LIB=${SLUBMALLOC_LIB} does not exist"
		fi
		die "slubmalloc library not found at $SLUB_DEFAULT after the build (is preload/meson.build building it?); set SLUBMALLOC_LIB=/path/to/lib.so to override"
	fi

	# Checks that LD_PRELOAD of $1 really maps the library (ld.so only warns when it cannot).
	preload_works() {
		local real maps
		real=$(readlink -f "$1")
		maps=$(env LD_PRELOAD="$1" cat /proc/self/maps 2>/dev/null) || return 1
		[[ "$maps" == *"$real"* ]]
	}

	AVAIL=()
	SKIPPED=()
	for a in "${ALLOCATORS[@]}"; do
		lib=${LIB[$a]}
		if [ "$lib" = none ]; then
			AVAIL+=("$a")
		elif [ -z "$lib" ] || [ ! -e "$lib" ]; then
			note "$a: library not found${lib:+ ($lib)}, skipping"
			SKIPPED+=("$a: library not found${lib:+ ($lib)}")
		else
			LIB[$a]=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
			if preload_works "${LIB[$a]}"; then
				AVAIL+=("$a")
			elif [ "$a" = slubmalloc ]; then
				die "LD_PRELOAD=${LIB[$a]} does not load or crashes a trivial program (try: LD_PRELOAD=${LIB[$a]} cat /proc/self/maps)"
			else
				note "$a: LD_PRELOAD=${LIB[$a]} does not load, skipping"
				SKIPPED+=("$a: $lib does not preload")
			fi
		fi
	done
	# shellcheck disable=SC2034 # read by the caller
	NA=${#AVAIL[@]}
}

pkg_versions() { # pkg_versions PACKAGE... -> "name version, ..." of those installed
	dpkg-query -W -f='${Package} ${Version}\n' "$@" 2>/dev/null |
		awk 'NF == 2' | paste -sd, - | sed 's/,/, /g'
}

# The machine lines a results file's environment section opens with.
env_md_machine() { # env_md_machine GIT_COMMIT LOAD_START PACKAGE...
	local commit=$1 load_start=$2
	shift 2
	echo "- date: $(date -u +%FT%TZ)"
	echo "- host: $(uname -n)"
	echo "- git commit: $commit"
	echo "- CPU: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
	echo "- cores: $(nproc) online ($(grep -c '^processor' /proc/cpuinfo) in /proc/cpuinfo)"
	echo "- memory: $(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
	echo "- kernel: $(uname -sr)"
	echo "- load average (1/5/15 min): $load_start at start, $(cut -d' ' -f1-3 /proc/loadavg) at end"
	echo "- THP enabled: $(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)," \
		"defrag: $(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null || echo unknown)"
	echo "- packages: $(pkg_versions "$@")"
}

# SELECTED = the entries ("NAME|...") that the comma-separated ONLY names, in its order, or all
# of them when ONLY is empty; an unknown name ends the script (die, usage).
select_named() { # select_named ONLY WHAT ENTRY...
	local only=$1 what=$2 name e found
	local -a wanted
	shift 2
	SELECTED=()
	if [ -z "$only" ]; then
		SELECTED=("$@")
		return
	fi
	IFS=',' read -r -a wanted <<<"$only"
	for name in "${wanted[@]}"; do
		found=""
		for e in "$@"; do
			[ "${e%%|*}" = "$name" ] && found=$e
		done
		[ -n "$found" ] || die "unknown $what '$name' for --only ($(usage | tail -n1))"
		SELECTED+=("$found")
	done
}

# The report's lines on what ran: the SLUBMALLOC_* settings, the total time (elapsed), each
# allocator of AVAIL with its library (LIB) and each of SKIPPED.
env_md_allocators() {
	local a s extra slub_env
	slub_env=$(env | grep '^SLUBMALLOC_' | grep -v '^SLUBMALLOC_LIB=' | sort | paste -sd' ' - || true)
	echo "- SLUBMALLOC_* settings: ${slub_env:-none (the library defaults)}"
	echo "- total time: $(elapsed)"
	for a in "${AVAIL[@]}"; do
		if [ "${LIB[$a]}" = none ]; then
			echo "- $a: system malloc (no LD_PRELOAD)"
		else
			extra=""
			[ "$a" = slubmalloc ] && [ -n "${SLUBMALLOC_LIB:-}" ] && extra=" (SLUBMALLOC_LIB override)"
			echo "- $a: LD_PRELOAD=${LIB[$a]}$extra, sha256 $(sha256sum "${LIB[$a]}" | cut -c1-12)"
		fi
	done
	for s in "${SKIPPED[@]+"${SKIPPED[@]}"}"; do
		echo "- skipped $s"
	done
}
