#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Recording-cost benchmark: `stackdump record` on a 200-thread target, with
# and without --compress; reports stackdump's average CPU use (% of one core),
# bytes per snapshot, peak RSS and the longest pause a target thread felt.
#
# Needs: cc, python3, /usr/bin/time, setsid, timeout (eu-stack for
# --with-eu-stack).  apt-get install -y time elfutils  (the script checks)
# Env: STACKDUMP=path (default build/stackdump), BENCH_BUILD_DIR, CC.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	cat <<EOF
usage: $0 [options]
  -n N              threads parked in the target (default 200)
  -d D              call depth of each thread (default 20)
  --every T         value passed to record --every (default 1)
  --count C         snapshots per recording (default 20)
  --with-eu-stack   also time an "eu-stack -i -s every T" shell loop writing
                    the same number of snapshot files (plain and gzip)
EOF
}

NTHREADS=200 DEPTH=20 EVERY=1 COUNT=20 WITH_EU=0
while (($#)); do
	case $1 in
	-n) NTHREADS=$2; shift 2 ;;
	-d) DEPTH=$2; shift 2 ;;
	--every) EVERY=$2; shift 2 ;;
	--count) COUNT=$2; shift 2 ;;
	--with-eu-stack) WITH_EU=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done

bench_require cc python3 time setsid timeout
((WITH_EU)) && bench_require eu-stack
bench_have_stackdump || bench_die "$STACKDUMP not found (build it or set STACKDUMP=)"
bench_traps
bench_build

WORK=$BUILD_DIR/record # output of the latest run only
rm -rf "$WORK"
mkdir -p "$WORK"
METER=$WORK/meter.shm
RESULTS=$WORK/results.tsv
# generous: COUNT intervals of EVERY seconds plus slow snapshots
TMO=$(awk -v c="$COUNT" -v e="$EVERY" 'BEGIN{printf "%d", c * (e + 5) * 3 + 60}')

bench_log "starting target: $NTHREADS threads, depth $DEPTH"
bench_start_target "$WORK/target.out" "$BUILD_DIR/target" -n "$NTHREADS" -d "$DEPTH" \
	-m "$METER" -t $((TMO * 4 + 600))
NTASKS=$(ls /proc/"$TARGET_PID"/task | wc -l)
bench_log "target pid $TARGET_PID ready ($NTASKS threads)"

bench_meter_reset "$METER"
sleep 1
bench_meter_read "$METER"
IDLE=$PAUSE_MAX_NS

printf 'mode\twall_s\tcpu_s\trss_kb\tfiles\tbytes\tpause_ns\tpause_mean_ns\trc\tstopped\n' >"$RESULTS"

# loop standing in for a recorder: COUNT eu-stack snapshots EVERY seconds apart
EU_LOOP='dir=$1 every=$2 count=$3 z=$4 pid=$5; mkdir -p "$dir"
for ((i = 0; i < count; i++)); do
	f=$(printf "%s/snap-%04d.txt" "$dir" "$i")
	if ((z)); then eu-stack -i -s -p "$pid" 2>/dev/null | gzip >"$f.gz"
	else eu-stack -i -s -p "$pid" >"$f" 2>/dev/null; fi
	((i + 1 < count)) && sleep "$every"
done; exit 0'

run_mode() {
	local mode=$1
	shift
	local dir=$WORK/out-$mode
	rm -rf "$dir"
	bench_meter_reset "$METER"
	bench_timed "$TMO" "$WORK/$mode.log" "$WORK/$mode.err" "$@"
	bench_meter_read "$METER"
	local stopped files bytes cpu
	stopped=$(bench_check_stopped "$TARGET_PID")
	kill -0 "$TARGET_PID" 2>/dev/null || bench_die "target died during $mode"
	files=$(find "$dir" -type f 2>/dev/null | wc -l)
	bytes=$(find "$dir" -type f -printf '%s\n' 2>/dev/null | awk '{s += $1} END {print s + 0}')
	cpu=$(awk -v u="$RUN_USER" -v s="$RUN_SYS" 'BEGIN{print u+s}')
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$mode" "$RUN_WALL" "$cpu" \
		"$RUN_RSS_KB" "$files" "$bytes" "$PAUSE_MAX_NS" "$PAUSE_MEAN_NS" \
		"$RUN_RC" "$stopped" >>"$RESULTS"
	bench_log "$(printf '%-22s wall %6.2f s  cpu %6.2f s  %4d files  %10d bytes  pause %8.2f ms  rc %s' \
		"$mode" "$RUN_WALL" "$cpu" "$files" "$bytes" \
		"$(awk -v n="$PAUSE_MAX_NS" 'BEGIN{print n/1e6}')" "$RUN_RC")"
	[[ $RUN_RC == 0 ]] || { bench_log "stderr of $mode:"; tail -n 5 "$WORK/$mode.err" >&2; }
	((stopped > 0)) && bench_log "WARNING: $mode left $stopped thread(s) stopped"
	return 0
}

# -v: each snapshot's own CPU (take, serialize, compress, write) on stderr,
# for the steady-state figure next to the whole-run one.
run_mode stackdump "$STACKDUMP" record "$TARGET_PID" --every "$EVERY" --count "$COUNT" \
	--out "$WORK/out-stackdump" -v
run_mode stackdump-compress "$STACKDUMP" record "$TARGET_PID" --every "$EVERY" \
	--count "$COUNT" --out "$WORK/out-stackdump-compress" --compress -v
if ((WITH_EU)); then
	run_mode eu-stack-loop bash -c "$EU_LOOP" eu-loop "$WORK/out-eu-stack-loop" \
		"$EVERY" "$COUNT" 0 "$TARGET_PID"
	run_mode eu-stack-loop-gzip bash -c "$EU_LOOP" eu-loop "$WORK/out-eu-stack-loop-gzip" \
		"$EVERY" "$COUNT" 1 "$TARGET_PID"
fi

python3 - "$RESULTS" "$NTHREADS" "$DEPTH" "$NTASKS" "$EVERY" "$COUNT" "$IDLE" "$STACKDUMP" "$WORK" <<'PY'
import csv, os, re, statistics, sys

path, nthreads, depth, ntasks, every, count, idle, sdpath, work = sys.argv[1:]


def steady(mode):
    """Median CPU ms of the snapshots after the first, from record -v."""
    pat = re.compile(r"CPU ([0-9.]+) ms to take it .*?, ([0-9.]+) ms to serialize, "
                     r"([0-9.]+) ms to compress, ([0-9.]+) ms to write")
    try:
        text = open(os.path.join(work, mode + ".err")).read()
    except OSError:
        return None
    v = [sum(float(x) for x in m.groups()) for m in pat.finditer(text)][1:]
    return statistics.median(v) if v else None


count = int(count)
labels = {
    "stackdump": "stackdump record",
    "stackdump-compress": "stackdump record --compress",
    "eu-stack-loop": "eu-stack -i -s loop",
    "eu-stack-loop-gzip": "eu-stack -i -s | gzip loop",
}
rows = list(csv.DictReader(open(path), delimiter="\t"))
print()
print(f"record benchmark: {nthreads} threads at depth {depth} ({ntasks} in the "
      f"target), --every {every} --count {count}")
print(f"stackdump: {sdpath}")
print(f"meter noise floor (idle, 1 s): {int(idle) / 1e6:.2f} ms")
print()
hdr = ["mode", "wall s", "cpu s", "cpu % core", "cpu ms/snap", "steady ms/snap",
       "steady % core", "files", "bytes/snapshot", "peak RSS MB", "max pause ms", "rc",
       "left stopped"]
t = [hdr]
for r in rows:
    wall, cpu = float(r["wall_s"]), float(r["cpu_s"])
    r["bps"] = int(r["bytes"]) / count
    st = steady(r["mode"]) if r["mode"].startswith("stackdump") else None
    t.append([labels.get(r["mode"], r["mode"]), f"{wall:.2f}", f"{cpu:.2f}",
              f"{100 * cpu / wall:.2f}" if wall else "n/a",
              f"{1000 * cpu / count:.1f}",
              f"{st:.1f}" if st is not None else "-",
              f"{st / (10 * float(every)):.2f}" if st is not None else "-",
              r["files"], f"{r['bps']:.0f}",
              f"{int(r['rss_kb']) / 1024:.1f}",
              f"{int(r['pause_ns']) / 1e6:.2f}", r["rc"], r["stopped"]])
w = [max(len(x[i]) for x in t) for i in range(len(hdr))]
for i, x in enumerate(t):
    print("  ".join(c.ljust(w[j]) if j == 0 else c.rjust(w[j])
                    for j, c in enumerate(x)))
    if i == 0:
        print("  ".join("-" * n for n in w))
by = {r["mode"]: r for r in rows}
print()
if "stackdump" in by and "stackdump-compress" in by and by["stackdump-compress"]["bps"]:
    q = by["stackdump"]["bps"] / by["stackdump-compress"]["bps"]
    print(f"--compress: {q:.1f}x fewer bytes per snapshot")
for a, b in (("eu-stack-loop", "stackdump"), ("eu-stack-loop-gzip", "stackdump-compress")):
    if a in by and b in by and float(by[b]["cpu_s"]) > 0:
        q = float(by[a]["cpu_s"]) / float(by[b]["cpu_s"])
        print(f"{labels[a]} uses {q:.1f}x the CPU of {labels[b]}")
print("bytes/snapshot = all files under the output directory / count; "
      "cpu = user+sys of the recorder over its whole run (start-up included); "
      "steady = median CPU per snapshot after the first (record -v), and what it "
      "costs at --every")
bad = [r["mode"] for r in rows if int(r["stopped"])]
if bad:
    print("WARNING: threads left in t/T state after: " + ", ".join(bad))
PY
bench_log "raw results: $RESULTS"
