#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What sampling costs a thread that switches thousands of times a second
# (a server's worker): the fixture fx-pingpong's two threads bounce a byte
# over pipes; the throughput is pong's context switches per second (from
# /proc/PID/task/TID/status). Windows alternate: a baseline (sleep), then
# `stackdump profile --rate R --duration W` with each engine, then `perf
# record -F R --call-graph dwarf` (the alternative, for reference: it
# samples only what is on a CPU), in an order that rotates each round;
# each profiled window's loss is against the mean of the baselines around
# it. Printed: per tool the loss per pair, its mean and range, and the
# baselines' spread.
#
#   bench/switchcost.sh [PAIRS [WINDOW_SECONDS [RATE]]]   (defaults 4, 4, 20)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
pairs=${1:-4}
win=${2:-4}
rate=${3:-20}
bench_require python3 setsid
bench_have_stackdump
fx=${FX_PINGPONG:-$REPO_DIR/build/tests/fixtures/fx-pingpong}
[[ -x $fx ]] || bench_die "no fixture at $fx (build the tests, or set FX_PINGPONG)"
have_perf=1
command -v perf >/dev/null || { have_perf=0; bench_log "no perf (linux-perf): its windows are skipped"; }
bench_traps
mkdir -p "$BUILD_DIR/switchcost" || bench_die "cannot create $BUILD_DIR/switchcost"
out=$BUILD_DIR/switchcost
bench_start_target "$out/fx.out" "$fx"
pid=$TARGET_PID
pong=$(ls "/proc/$pid/task" | sort -n | sed -n 2p)
switches() {
	awk '/^voluntary_ctxt/{v=$2} /^nonvoluntary_ctxt/{n=$2} END{print v+n}' \
		"/proc/$pid/task/$pong/status"
}
# window TOOL: pong's switches per second while TOOL runs (or sleeps).
window() {
	local a b t0 t1
	a=$(switches)
	t0=$(date +%s.%N)
	case $1 in
	baseline) sleep "$win" ;;
	perf-engine | ptrace-engine)
		"$STACKDUMP" profile "$pid" --engine "${1%-engine}" --rate "$rate" \
			--duration "${win}s" -q -o "$out/profile.json" 2>"$out/stackdump.err" ||
			bench_die "stackdump failed: $(tail -3 "$out/stackdump.err")" ;;
	perf-record)
		perf record -q -F "$rate" --call-graph dwarf -p "$pid" -o "$out/perf.data" \
			-- sleep "$win" >/dev/null 2>&1 || bench_die "perf record failed"
		rm -f "$out/perf.data" ;;
	esac
	t1=$(date +%s.%N)
	b=$(switches)
	python3 -c "print(($b - $a) / ($t1 - $t0))"
}
tools=(perf-engine ptrace-engine)
((have_perf)) && tools+=(perf-record)
results=$out/windows.txt
: >"$results"
bench_log "fx-pingpong $pid (pong $pong): $pairs rounds of ${win}s windows at $rate Hz"
echo "baseline $(window baseline)" >>"$results"
for ((r = 0; r < pairs; r++)); do
	n=${#tools[@]}
	for ((k = 0; k < n; k++)); do
		t=${tools[$(((k + r) % n))]}
		echo "$t $(window "$t") $r" >>"$results"
	done
	echo "baseline $(window baseline) $r" >>"$results"
	bench_log "round $((r + 1)) of $pairs done (load $(cut -d' ' -f1 /proc/loadavg))"
done
python3 - "$results" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
base = [float(r[1]) for r in rows if r[0] == "baseline"]
print("baselines: %.0f-%.0f switches/s (spread %.1f%%)" %
      (min(base), max(base), 100 * (max(base) - min(base)) / max(base)))
print("| tool | loss, mean (range over pairs) | per pair |")
print("| --- | --- | --- |")
by = {}
for r in rows:
    if r[0] == "baseline":
        continue
    k = int(r[2])
    ref = (base[k] + base[k + 1]) / 2  # the baselines before and after the round
    by.setdefault(r[0], []).append(100 * (1 - float(r[1]) / ref))
for t, v in by.items():
    print("| %s | %.1f%% (%.1f to %.1f) | %s |" % (t, sum(v) / len(v), min(v), max(v),
                                              ", ".join("%.1f" % x for x in v)))
PY
