#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One-shot snapshot benchmark: stackdump (default and --per-thread), eu-stack
# -i -s and gdb "thread apply all bt" against the same N-thread target in the
# same run; reports wall time, the pause a target thread felt, peak RSS and
# output size side by side, with ratios relative to stackdump.
#
# Needs: cc, python3, gdb, eu-stack, /usr/bin/time, setsid, timeout.
#   apt-get install -y time gdb elfutils   (the script checks and says so)
# Env: STACKDUMP=path (default build/stackdump), BENCH_BUILD_DIR (default
# /tmp/stackdump-bench), CC.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	cat <<EOF
usage: $0 [-n THREADS] [-d DEPTH] [-r REPEATS] [options]
  -n N               threads parked in the target (default 1000)
  -d D               call depth of each thread (default 20)
  -r R               runs per tool, median reported (default 3)
  --gdb-repeats R    runs for gdb (default: same as -r)
  --slow-limit S     a tool whose first run takes longer than S seconds
                     gets no further runs (default 40)
  --timeout S        kill a single run after S seconds (default 300)
  --tools LIST       comma list from: stackdump,stackdump-per-thread,
                     eu-stack,gdb (default: all)
  --keep DIR         keep every run's output in DIR
EOF
}

NTHREADS=1000 DEPTH=20 REPEATS=3 GDB_REPEATS='' SLOW_LIMIT=40 TMO=300
TOOLS=stackdump,stackdump-per-thread,eu-stack,gdb KEEP=
while (($#)); do
	case $1 in
	-n) NTHREADS=$2; shift 2 ;;
	-d) DEPTH=$2; shift 2 ;;
	-r) REPEATS=$2; shift 2 ;;
	--gdb-repeats) GDB_REPEATS=$2; shift 2 ;;
	--slow-limit) SLOW_LIMIT=$2; shift 2 ;;
	--timeout) TMO=$2; shift 2 ;;
	--tools) TOOLS=$2; shift 2 ;;
	--keep) KEEP=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
GDB_REPEATS=${GDB_REPEATS:-$REPEATS}

bench_require cc python3 time setsid timeout
[[ ,$TOOLS, == *,gdb,* ]] && bench_require gdb
[[ ,$TOOLS, == *,eu-stack,* ]] && bench_require eu-stack
bench_traps
bench_build

WORK=$BUILD_DIR/snapshot # output of the latest run only
rm -rf "$WORK"
mkdir -p "$WORK"
[[ -n $KEEP ]] && mkdir -p "$KEEP"
METER=$WORK/meter.shm
RESULTS=$WORK/results.tsv

# tool name -> command line in the array CMD (PID substituted)
tool_cmd() {
	local pid=${2:-PID}
	case $1 in
	stackdump) CMD=("$STACKDUMP" "$pid") ;;
	stackdump-per-thread) CMD=("$STACKDUMP" --per-thread "$pid") ;;
	eu-stack) CMD=(eu-stack -i -s -p "$pid") ;;
	gdb) CMD=(gdb -nx -batch -ex 'set pagination off'
		-ex 'set debuginfod enabled off' -ex 'thread apply all bt' -p "$pid") ;;
	*) return 1 ;;
	esac
}
tool_label() {
	case $1 in
	stackdump) echo "stackdump" ;;
	stackdump-per-thread) echo "stackdump --per-thread" ;;
	eu-stack) echo "eu-stack -i -s" ;;
	gdb) echo "gdb thread apply all bt" ;;
	esac
}

IFS=, read -r -a TOOL_LIST <<<"$TOOLS"
ACTIVE=()
for t in "${TOOL_LIST[@]}"; do
	tool_cmd "$t" || bench_die "unknown tool: $t"
	if [[ $t == stackdump* ]] && ! bench_have_stackdump; then
		bench_log "skipping $t: $STACKDUMP not found (build it or set STACKDUMP=)"
		continue
	fi
	ACTIVE+=("$t")
done
((${#ACTIVE[@]})) || bench_die "no tool to run"

bench_log "starting target: $NTHREADS threads, depth $DEPTH"
bench_start_target "$WORK/target.out" "$BUILD_DIR/target" -n "$NTHREADS" -d "$DEPTH" \
	-m "$METER" -t $((TMO * 20 + 600))
NTASKS=$(ls /proc/"$TARGET_PID"/task | wc -l)
bench_log "target pid $TARGET_PID ready ($NTASKS threads incl. main and meter)"

idle_pause() {
	bench_meter_reset "$METER"
	sleep 1
	bench_meter_read "$METER"
	echo "$PAUSE_MAX_NS"
}
IDLE1=$(idle_pause)

printf 'tool\trun\twall_s\tpause_ns\trss_kb\tlines\trc\tstopped\tuser_s\tsys_s\n' >"$RESULTS"
declare -A SKIP
for ((rep = 1; rep <= REPEATS || rep <= GDB_REPEATS; rep++)); do
	for t in "${ACTIVE[@]}"; do
		limit=$REPEATS
		[[ $t == gdb ]] && limit=$GDB_REPEATS
		((rep > limit)) && continue
		[[ -n ${SKIP[$t]:-} ]] && continue
		tool_cmd "$t" "$TARGET_PID"
		out=$WORK/$t.$rep.out
		bench_meter_reset "$METER"
		bench_timed "$TMO" "$out" "$out.err" "${CMD[@]}"
		bench_meter_read "$METER"
		stopped=$(bench_check_stopped "$TARGET_PID")
		kill -0 "$TARGET_PID" 2>/dev/null || bench_die "target died during $t"
		lines=$(wc -l <"$out")
		printf '%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$rep" "$RUN_WALL" \
			"$PAUSE_MAX_NS" "$RUN_RSS_KB" "$lines" "$RUN_RC" "$stopped" \
			"$RUN_USER" "$RUN_SYS" >>"$RESULTS"
		bench_log "$(printf '%-24s run %d: %7.3f s  pause %8.2f ms  rss %6d KB  %6d lines  rc %s  stopped %s' \
			"$(tool_label "$t")" "$rep" "$RUN_WALL" \
			"$(awk -v n="$PAUSE_MAX_NS" 'BEGIN{print n/1e6}')" \
			"$RUN_RSS_KB" "$lines" "$RUN_RC" "$stopped")"
		((stopped > 0)) && bench_log "WARNING: $t left $stopped thread(s) stopped"
		if ((rep == 1)) && awk -v w="$RUN_WALL" -v l="$SLOW_LIMIT" 'BEGIN{exit !(w > l)}'; then
			bench_log "$t took more than ${SLOW_LIMIT}s: no further runs"
			SKIP[$t]=1
		fi
		[[ -n $KEEP ]] && cp "$out" "$out.err" "$KEEP/" 2>/dev/null
	done
done
IDLE2=$(idle_pause)

python3 - "$RESULTS" "$NTHREADS" "$DEPTH" "$NTASKS" "$IDLE1" "$IDLE2" "$STACKDUMP" <<'PY'
import csv, statistics, sys

path, nthreads, depth, ntasks, idle1, idle2, sdpath = sys.argv[1:]
labels = {
    "stackdump": "stackdump",
    "stackdump-per-thread": "stackdump --per-thread",
    "eu-stack": "eu-stack -i -s",
    "gdb": "gdb thread apply all bt",
}
rows = {}
order = []
with open(path) as f:
    for r in csv.DictReader(f, delimiter="\t"):
        if r["tool"] not in rows:
            rows[r["tool"]] = []
            order.append(r["tool"])
        rows[r["tool"]].append(r)

def med(rs, k):
    return statistics.median(float(r[k]) for r in rs)

summary = {}
for t in order:
    rs = rows[t]
    summary[t] = dict(
        runs=len(rs),
        wall=med(rs, "wall_s"),
        wall_min=min(float(r["wall_s"]) for r in rs),
        pause=med(rs, "pause_ns") / 1e6,
        pause_max=max(float(r["pause_ns"]) for r in rs) / 1e6,
        rss=max(float(r["rss_kb"]) for r in rs) / 1024,
        lines=int(med(rs, "lines")),
        cpu=med(rs, "user_s") + med(rs, "sys_s"),
        rc=",".join(sorted({r["rc"] for r in rs})),
        stopped=max(int(r["stopped"]) for r in rs),
    )

ref = "stackdump" if "stackdump" in summary else order[0]

def ratio(a, b, more, less):
    if b <= 0 or a <= 0:
        return "n/a"
    if abs(a / b - 1) < 0.005:
        return "same"
    return f"{a / b:.1f}x {more}" if a >= b else f"{b / a:.1f}x {less}"

print()
print(f"snapshot benchmark: {nthreads} threads at depth {depth} "
      f"({ntasks} threads in the target incl. main and meter)")
print(f"stackdump: {sdpath}")
print(f"meter noise floor (idle, 1 s): {int(idle1)/1e6:.2f} ms before, "
      f"{int(idle2)/1e6:.2f} ms after")
print()
hdr = ["tool", "runs", "wall med s", "wall min s", "pause med ms",
       "pause max ms", "peak RSS MB", "cpu s", "lines", "rc", "left stopped"]
table = [hdr]
for t in order:
    s = summary[t]
    table.append([labels.get(t, t), str(s["runs"]), f"{s['wall']:.3f}",
                  f"{s['wall_min']:.3f}", f"{s['pause']:.2f}",
                  f"{s['pause_max']:.2f}", f"{s['rss']:.1f}",
                  f"{s['cpu']:.2f}", str(s["lines"]), s["rc"],
                  str(s["stopped"])])
w = [max(len(r[i]) for r in table) for i in range(len(hdr))]
for i, r in enumerate(table):
    print("  ".join(c.ljust(w[j]) if j == 0 else c.rjust(w[j])
                    for j, c in enumerate(r)))
    if i == 0:
        print("  ".join("-" * x for x in w))
print()
print(f"relative to {labels.get(ref, ref)} (medians; pause = longest stop the "
      f"meter thread felt):")
r0 = summary[ref]
for t in order:
    if t == ref:
        continue
    s = summary[t]
    print(f"  {labels.get(t, t)}: wall {ratio(s['wall'], r0['wall'], 'slower', 'faster')}"
          f", pause {ratio(s['pause'], r0['pause'], 'longer', 'shorter')}"
          f", RSS {ratio(s['rss'], r0['rss'], 'more', 'less')}"
          f", cpu {ratio(s['cpu'], r0['cpu'], 'more', 'less')}")
bad = [labels.get(t, t) for t in order if summary[t]["stopped"]]
if bad:
    print(f"WARNING: threads left in t/T state after: {', '.join(bad)}")
else:
    print("no tool left any target thread stopped (t/T)")
PY
bench_log "raw results: $RESULTS"
