#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Reading a core file: a gcore core of a 1000-thread process (the suite's
# fx-signals with 1000 idle threads: read, condvar and nanosleep waits),
# dumped by stackdump (`stackdump core`, text), `eu-stack --core` and
# `gdb -batch -ex 'thread apply all bt'`, interleaved, RUNS times each, on
# the same file (page cache warm for all: one untimed run of each first).
# Prints a TSV row per tool: median and best wall time, max RSS, threads
# and frames it printed.
# Then writing a core: `stackdump save --core` (and with --all-registers,
# every thread stopped) against `gcore` of the same
# process (bench/target.c: THREADS threads parked 20 frames deep and a meter
# thread that measures the longest pause it feels), interleaved, RUNS times
# each: wall time, the meter's pause, the file's size, and the ratios
# gcore / save --core; then gdb's `thread apply all bt` on either file (the
# threads and frames it shows).
#
# Needs: gdb (gcore), elfutils (eu-stack), time, python3; the fixtures
# built (build/tests/fixtures, or STACKDUMP_FIXTURE_DIR).
# Env: STACKDUMP (default build/stackdump), BENCH_BUILD_DIR.
# Usage: bench/core.sh [THREADS] [RUNS]     (default 1000 and 5)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

NTHREADS=${1:-1000}
RUNS=${2:-5}
FIXTURES=${STACKDUMP_FIXTURE_DIR:-$REPO_DIR/build/tests/fixtures}
bench_require python3 time gdb gcore eu-stack cc
bench_traps
bench_build
OUT=$BUILD_DIR/core
rm -rf "$OUT"
mkdir -p "$OUT"

bench_start_target "$OUT/target.out" "$FIXTURES/fx-signals" "$OUT/signals.txt" "$NTHREADS"
EXE=$FIXTURES/fx-signals
bench_log "gcore of $TARGET_PID ($NTHREADS threads and its own)"
gcore -o "$OUT/core" "$TARGET_PID" >"$OUT/gcore.log" 2>&1 || bench_die "gcore failed"
CORE=$OUT/core.$TARGET_PID
kill "$TARGET_PID" 2>/dev/null || true
bench_log "core: $(du -h --apparent-size "$CORE" | cut -f1)"

run_tool() { # NAME: one run, output in $OUT/NAME.out
	case $1 in
	stackdump) bench_timed 600 "$OUT/$1.out" "$OUT/$1.err" "$STACKDUMP" core "$CORE" ;;
	eu-stack) bench_timed 600 "$OUT/$1.out" "$OUT/$1.err" eu-stack --core "$CORE" -e "$EXE" ;;
	gdb) bench_timed 600 "$OUT/$1.out" "$OUT/$1.err" gdb -batch -nx "$EXE" "$CORE" \
		-ex 'thread apply all bt' ;;
	esac
}
TOOLS=(stackdump eu-stack gdb)
for t in "${TOOLS[@]}"; do run_tool "$t"; done # warm the page cache
: >"$OUT/runs.tsv"
for ((i = 0; i < RUNS; i++)); do
	for t in "${TOOLS[@]}"; do
		run_tool "$t"
		printf '%s\t%s\t%s\n' "$t" "$RUN_WALL" "$RUN_RSS_KB" >>"$OUT/runs.tsv"
	done
done
python3 - "$OUT" <<'PY'
import re, statistics, sys
out = sys.argv[1]
runs = {}
for line in open(out + "/runs.tsv"):
    t, wall, rss = line.split()
    runs.setdefault(t, []).append((float(wall), int(rss)))
def counts(t):
    text = open("%s/%s.out" % (out, t), errors="replace").read()
    if t == "gdb":
        return len(re.findall(r"^Thread \d+ ", text, re.M)), len(re.findall(r"^#\d+ ", text, re.M))
    if t == "eu-stack":
        return len(re.findall(r"^TID \d+", text, re.M)), len(re.findall(r"^#\d+ ", text, re.M))
    return (len(re.findall(r"^Thread \d+ ", text, re.M)),
            len(re.findall(r"^  #\d+ ", text, re.M)))
print("tool\tmedian_s\tbest_s\tmax_rss_mb\tthreads\tframes")
for t, v in runs.items():
    th, fr = counts(t)
    print("%s\t%.3f\t%.3f\t%.0f\t%d\t%d" % (t, statistics.median(w for w, _ in v),
                                             min(w for w, _ in v), max(r for _, r in v) / 1024,
                                             th, fr))
PY

# ---- writing a core: save --core against gcore ------------------------
METER=$OUT/meter.shm
bench_start_target "$OUT/btarget.out" "$BUILD_DIR/target" -n "$NTHREADS" -m "$METER" -t 3600
BPID=$TARGET_PID
BEXE=$BUILD_DIR/target
bench_log "writing cores of $BPID ($(ls /proc/"$BPID"/task | wc -l) threads)"
write_tool() { # NAME: one run; sets FILE_SIZE
	case $1 in
	save-core)
		rm -f "$OUT/save.core"
		bench_timed 600 "$OUT/$1.out" "$OUT/$1.err" "$STACKDUMP" save --core "$OUT/save.core" "$BPID"
		FILE_SIZE=$(stat -c %s "$OUT/save.core" 2>/dev/null || echo 0) ;;
	save-core-all)
		rm -f "$OUT/save-all.core"
		bench_timed 600 "$OUT/$1.out" "$OUT/$1.err" "$STACKDUMP" save --core --all-registers \
			"$OUT/save-all.core" "$BPID"
		FILE_SIZE=$(stat -c %s "$OUT/save-all.core" 2>/dev/null || echo 0) ;;
	gcore)
		rm -f "$OUT/gcore.$BPID"
		bench_timed 600 "$OUT/$1.out" "$OUT/$1.err" gcore -o "$OUT/gcore" "$BPID"
		FILE_SIZE=$(stat -c %s "$OUT/gcore.$BPID" 2>/dev/null || echo 0) ;;
	esac
	((RUN_RC == 0)) || bench_die "$1 failed: $(tail -3 "$OUT/$1.err")"
}
WTOOLS=(save-core save-core-all gcore)
: >"$OUT/write.tsv"
for ((i = 0; i < RUNS; i++)); do
	for t in "${WTOOLS[@]}"; do
		bench_meter_reset "$METER"
		write_tool "$t"
		bench_meter_read "$METER"
		kill -0 "$BPID" 2>/dev/null || bench_die "target died during $t"
		printf '%s\t%s\t%s\t%s\t%s\n' "$t" "$RUN_WALL" "$PAUSE_MAX_NS" "$FILE_SIZE" \
			"$RUN_RSS_KB" >>"$OUT/write.tsv"
	done
done
for t in save.core "gcore.$BPID"; do
	bench_timed 600 "$OUT/gdb-$t.out" "$OUT/gdb-$t.err" gdb -batch -nx "$BEXE" "$OUT/$t" \
		-ex 'thread apply all bt'
	printf '%s\t%s\n' "$t" "$RUN_WALL" >>"$OUT/gdb-read.tsv"
done
python3 - "$OUT" "$BPID" <<'PY'
import re, statistics, sys
out, pid = sys.argv[1], sys.argv[2]
runs = {}
for line in open(out + "/write.tsv"):
    t, wall, pause, size, rss = line.split()
    runs.setdefault(t, []).append((float(wall), int(pause) / 1e6, int(size), int(rss)))
med = lambda t, i: statistics.median(r[i] for r in runs[t])
print()
print("writer\tmedian_wall_s\tmedian_pause_ms\tmax_pause_ms\tfile_mb\tmax_rss_mb")
for t in runs:
    print("%s\t%.3f\t%.1f\t%.1f\t%.1f\t%.0f" % (t, med(t, 0), med(t, 1),
          max(r[1] for r in runs[t]), med(t, 2) / 2**20, max(r[3] for r in runs[t]) / 1024))
for t in ("save-core", "save-core-all"):
    print("gcore / %s: wall %.1fx, pause %.1fx, size %.1fx" % (
        t, med("gcore", 0) / med(t, 0), med("gcore", 1) / max(med(t, 1), 1e-3),
        med("gcore", 2) / med(t, 2)))
print("gdb thread apply all bt on the file\twall_s\tthreads\tframes")
for line in open(out + "/gdb-read.tsv"):
    f, wall = line.split()
    text = open("%s/gdb-%s.out" % (out, f), errors="replace").read()
    print("%s\t%.3f\t%d\t%d" % ("save --core" if f == "save.core" else "gcore", float(wall),
          len(re.findall(r"^Thread \d+ ", text, re.M)), len(re.findall(r"^#\d+ ", text, re.M))))
PY
