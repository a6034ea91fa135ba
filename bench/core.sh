#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Reading a core file: a gcore core of a 1000-thread process (the suite's
# fx-signals with 1000 idle threads: read, condvar and nanosleep waits),
# dumped by stackdump (`stackdump core`, text), `eu-stack --core` and
# `gdb -batch -ex 'thread apply all bt'`, interleaved, RUNS times each, on
# the same file (page cache warm for all: one untimed run of each first).
# Prints a TSV row per tool: median and best wall time, max RSS, threads
# and frames it printed.
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
bench_require python3 time gdb gcore eu-stack
bench_traps
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
