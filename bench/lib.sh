# SPDX-License-Identifier: MIT
# Shared helpers for the bench scripts (sourced, not run): tool checks,
# building the targets, starting processes in their own process groups, and
# a cleanup trap that kills everything started, also on Ctrl-C.
# shellcheck shell=bash disable=SC2034  # RUN_* / PAUSE_* are read by callers

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$BENCH_DIR")
STACKDUMP=${STACKDUMP:-$REPO_DIR/build/stackdump}
BUILD_DIR=${BENCH_BUILD_DIR:-/tmp/stackdump-bench}
CC=${CC:-cc}
TIME_BIN=${TIME_BIN:-/usr/bin/time}
# keep gdb and eu-stack off the network (an empty list disables debuginfod)
export DEBUGINFOD_URLS=

BENCH_PGIDS=()   # process groups started by bench_spawn, killed on exit

bench_log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
bench_die() { bench_log "error: $*"; exit 1; }

# Report missing tools with the Debian packages that provide them.
# Arguments: list of needed commands (time, python3, gdb, eu-stack, cc).
bench_require() {
	local missing=() pkgs=() c
	for c in "$@"; do
		case $c in
		time) [[ -x $TIME_BIN ]] || { missing+=("$TIME_BIN"); pkgs+=(time); } ;;
		python3) command -v python3 >/dev/null || { missing+=(python3); pkgs+=(python3); } ;;
		gdb) command -v gdb >/dev/null || { missing+=(gdb); pkgs+=(gdb); } ;;
		eu-stack) command -v eu-stack >/dev/null || { missing+=(eu-stack); pkgs+=(elfutils); } ;;
		cc) command -v "$CC" >/dev/null || { missing+=("$CC"); pkgs+=(gcc libc6-dev); } ;;
		setsid | timeout) command -v "$c" >/dev/null || { missing+=("$c"); pkgs+=(util-linux coreutils); } ;;
		*) command -v "$c" >/dev/null || missing+=("$c") ;;
		esac
	done
	if ((${#missing[@]})); then
		bench_log "missing: ${missing[*]}"
		((${#pkgs[@]})) && bench_log "install with: apt-get install -y ${pkgs[*]}"
		exit 1
	fi
}

# Compile the targets and benchctl into $BUILD_DIR (cc -O2 -g -pthread).
bench_build() {
	mkdir -p "$BUILD_DIR" || bench_die "cannot create $BUILD_DIR"
	local p
	for p in target cpu-target benchctl ptrace-floor; do
		if [[ ! -x $BUILD_DIR/$p || $BENCH_DIR/$p.c -nt $BUILD_DIR/$p ||
			$BENCH_DIR/benchshm.h -nt $BUILD_DIR/$p ]]; then
			$CC -O2 -g -pthread -Wall -o "$BUILD_DIR/$p" "$BENCH_DIR/$p.c" ||
				bench_die "build of $p failed"
		fi
	done
}

# Kill every process group we started.  Called from the EXIT trap.
bench_cleanup() {
	local g
	# A group gone already fails its kill: under set -e that must not end
	# the cleanup before the others.
	for g in "${BENCH_PGIDS[@]}"; do
		kill -KILL -- "-$g" 2>/dev/null || true
		kill -KILL "$g" 2>/dev/null || true
	done
	for g in "${BENCH_PGIDS[@]}"; do
		wait "$g" 2>/dev/null || true
	done
	BENCH_PGIDS=()
}

bench_traps() {
	trap bench_cleanup EXIT
	trap 'bench_log "interrupted"; exit 130' INT
	trap 'exit 143' TERM HUP
}

# bench_spawn OUT ERR CMD...: start CMD in a new session (own process group,
# same pid as the group id) in the background; sets BENCH_LAST_PID.
bench_spawn() {
	local out=$1 err=$2
	shift 2
	setsid "$@" </dev/null >"$out" 2>"$err" &
	BENCH_LAST_PID=$!
	BENCH_PGIDS+=("$BENCH_LAST_PID")
}

# Forget a finished process group (so cleanup does not hit a reused pid).
bench_forget() {
	local g keep=()
	for g in "${BENCH_PGIDS[@]}"; do
		[[ $g == "$1" ]] || keep+=("$g")
	done
	BENCH_PGIDS=("${keep[@]}")
}

# bench_start_target OUTFILE CMD...: start a target, wait for "ready <pid>".
# Sets TARGET_PID.
bench_start_target() {
	local out=$1
	shift
	bench_spawn "$out" "$out.err" "$@"
	local launcher=$BENCH_LAST_PID i
	for ((i = 0; i < 1200; i++)); do
		if grep -q '^ready ' "$out" 2>/dev/null; then
			TARGET_PID=$(awk '/^ready /{print $2; exit}' "$out")
			[[ $TARGET_PID == "$launcher" ]] ||
				bench_log "note: target pid $TARGET_PID differs from launcher $launcher"
			return 0
		fi
		kill -0 "$launcher" 2>/dev/null || {
			cat "$out.err" >&2
			bench_die "target exited before it was ready: $*"
		}
		sleep 0.05
	done
	bench_die "target not ready after 60 s: $*"
}

# Number of threads of PID in state t (tracing stop) or T (stopped).
bench_stopped_threads() {
	local pid=$1 n=0 f st
	for f in /proc/"$pid"/task/*/stat; do
		read -r st 2>/dev/null <"$f" || continue
		st=${st##*) }
		case ${st:0:1} in t | T) ((n++)) ;; esac
	done
	echo "$n"
}

# Threads left stopped after a tool exits: allow the kernel a moment, then
# count; if any are still stopped, SIGCONT the target so later runs are fair.
bench_check_stopped() {
	local pid=$1 n
	n=$(bench_stopped_threads "$pid")
	if ((n > 0)); then
		sleep 0.3
		n=$(bench_stopped_threads "$pid")
		((n > 0)) && kill -CONT "$pid" 2>/dev/null
	fi
	echo "$n"
}

# bench_timed TIMEOUT OUT ERR CMD...: run CMD under timeout(1) and
# /usr/bin/time in its own process group and wait for it.  Sets RUN_RC,
# RUN_WALL (s, from the shell clock), RUN_RSS_KB, RUN_USER, RUN_SYS.
bench_timed() {
	local tmo=$1 out=$2 err=$3
	shift 3
	local tf=$err.time
	rm -f "$tf"
	local t0=$EPOCHREALTIME
	# timeout outermost: it is the session leader, so its setpgid() is a
	# no-op and time(1) and the tool stay in the group bench_cleanup kills
	bench_spawn "$out" "$err" timeout --kill-after=5 "$tmo" \
		"$TIME_BIN" -o "$tf" -f '%M %U %S %e %x' "$@"
	local pid=$BENCH_LAST_PID
	wait "$pid"
	RUN_RC=$?
	local t1=$EPOCHREALTIME
	bench_forget "$pid"
	RUN_WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f", b-a}')
	local line
	line=$(tail -n 1 "$tf" 2>/dev/null)
	read -r RUN_RSS_KB RUN_USER RUN_SYS _ _ <<<"$line"
	[[ $RUN_RSS_KB =~ ^[0-9]+$ ]] || { RUN_RSS_KB=0; RUN_USER=0; RUN_SYS=0; }
	((RUN_RC == 124 || RUN_RC == 137)) && bench_log "timed out after ${tmo}s: $*"
	return 0
}

# Read the meter: sets PAUSE_MAX_NS PAUSE_SAMPLES PAUSE_MEAN_NS.
bench_meter_read() {
	read -r PAUSE_MAX_NS PAUSE_SAMPLES PAUSE_MEAN_NS < <("$BUILD_DIR/benchctl" pause "$1")
}

bench_meter_reset() {
	"$BUILD_DIR/benchctl" reset "$1" || bench_die "meter reset failed"
}

# Prints "work_units monotonic_ns" of a cpu-target work file.
bench_work() {
	"$BUILD_DIR/benchctl" work "$1"
}

bench_have_stackdump() {
	[[ -x $STACKDUMP ]]
}

# bench_start_mariadb DIR [MARIADBD OPTIONS...]: a scratch MariaDB in DIR
# (data directory DIR/mariadb, socket DIR/mysqld.sock), up and answering,
# with an empty database sbtest and the sysbench command line SB for it
# (4 tables of 20000 rows). Sets MYSQLD (its pid), SOCK and SB.
bench_start_mariadb() {
	local dir=$1 i
	shift
	SOCK=$dir/mysqld.sock
	bench_log "mariadb: installing a scratch data directory in $dir/mariadb"
	mariadb-install-db --no-defaults --datadir="$dir/mariadb" --user=root >"$dir/install.log" 2>&1 ||
		bench_die "mariadb-install-db failed (see $dir/install.log)"
	bench_spawn "$dir/mariadbd.out" "$dir/mariadbd.err" mariadbd --no-defaults \
		--datadir="$dir/mariadb" --socket="$SOCK" --skip-networking --user=root \
		--pid-file="$dir/mariadbd.pid" "$@"
	MYSQLD=$BENCH_LAST_PID
	for ((i = 0; i < 600; i++)); do
		mariadb-admin --no-defaults --socket="$SOCK" -uroot ping >/dev/null 2>&1 && break
		kill -0 "$MYSQLD" 2>/dev/null || bench_die "mariadbd exited (see $dir/mariadbd.err)"
		sleep 0.1
	done
	mariadb --no-defaults --socket="$SOCK" -uroot -e 'create database sbtest'
	SB=(sysbench oltp_read_write --db-driver=mysql --mysql-socket="$SOCK" --mysql-user=root
		--tables=4 --table-size=20000)
}
