#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real servers, not fixtures: what `stackdump profile` costs a loaded
# MariaDB (sysbench oltp_read_write), redis (redis-benchmark) and a node
# HTTP server (a local load generator), beside `perf record -F 20
# --call-graph dwarf` on the same server in the same run. Each server is
# installed from Debian if asked (--install), started here on loopback
# only, loaded by bounded loops, and stopped at the end.
#
#   bench/realserver.sh [--install] [--pairs N] [--window SECONDS]
#                       [--servers mariadb,redis,node] [--rates 20,99]
#                       [--engine auto|perf|ptrace[,...]] [--dumps N] [--warmup SECONDS]
#                       [--sandwich] [--disk]
#
# Windows alternate: a baseline, then stackdump at each rate, then perf
# record, then the next baseline...; a profiled window's loss is against
# the mean of the baselines before and after it. With --sandwich every
# profiled window has a baseline of its own before it (and the next one's
# after it): twice the windows, for a server whose throughput drifts. Throughput comes from the
# servers' own counters (MariaDB's Questions, redis's
# total_commands_processed, the node server's request count). Printed:
# per window and per server the loss (mean and range over the pairs), the
# baselines' spread, the rate each tool achieved, its CPU, how long the
# profile took against the duration asked, and the host's load (load
# average, and the CPU of processes other than the server, its load
# generator and the tool). Results under $BENCH_BUILD_DIR/realserver/.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

install=0
args=()
for a in "$@"; do
	case $a in
	--install) install=1 ;;
	*) args+=("$a") ;;
	esac
done

# Debian packages that provide what the servers and tools need.
need_pkgs() {
	local p=()
	command -v mariadbd >/dev/null || [[ -x /usr/sbin/mariadbd ]] || p+=(mariadb-server)
	command -v mariadb >/dev/null || p+=(mariadb-client)
	command -v sysbench >/dev/null || p+=(sysbench)
	command -v redis-server >/dev/null || p+=(redis-server)
	command -v redis-benchmark >/dev/null || p+=(redis-tools)
	command -v node >/dev/null || p+=(nodejs)
	command -v perf >/dev/null || p+=(linux-perf)
	command -v python3 >/dev/null || p+=(python3)
	echo "${p[@]}"
}
missing=$(need_pkgs)
if [[ -n $missing ]]; then
	if ((install)); then
		bench_log "installing: $missing"
		apt-get install -y $missing >/dev/null || bench_die "apt-get install -y $missing failed"
	else
		bench_log "missing packages: $missing"
		bench_die "install with: apt-get install -y $missing (or run with --install)"
	fi
fi
[[ -x $STACKDUMP ]] || bench_die "no stackdump binary at $STACKDUMP (build it, or set STACKDUMP)"
mkdir -p "$BUILD_DIR/realserver" || bench_die "cannot create $BUILD_DIR/realserver"

# The driver runs in its own process group: whatever it started dies with
# it, also on Ctrl-C.
setsid python3 "$BENCH_DIR/realserver.py" --stackdump "$STACKDUMP" \
	--dir "$BUILD_DIR/realserver" "${args[@]}" &
pid=$!
trap 'kill -TERM -- -$pid 2>/dev/null || true' INT TERM EXIT
wait $pid
