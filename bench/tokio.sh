#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A Tokio program with 10,000 idle tasks (fx-tokio with its IDLE argument,
# each task awaiting one Notify) beside its 9 known ones: the wall time of
# a dump with every task and its await chain, against a plain thread dump
# (--threads) of the same process, side by side in one run, with the pause
# stackdump measures (the longest any thread was stopped: reading the tasks
# stops none), the time the task reading took (-v), and the pause a task
# of the program feels: its meter task (fx-tokio's "meter" mode) sleeps
# 1 ms again and again and keeps its longest gap between two wake-ups,
# read from the fixture before and after each dump; a row with no dump
# (as long a wait as each dump took) gives the meter's own noise.
#
# Needs: the fixtures built (cmake --build build: fx-tokio), python3.
# Env: STACKDUMP (default build/stackdump), FX_TOKIO (default
# build/tests/fixtures/fx-tokio).
# Usage: bench/tokio.sh [TASKS] [RUNS]   (default 10000, 5)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

N=${1:-10000}
RUNS=${2:-5}
bench_require python3
bench_have_stackdump || bench_die "$STACKDUMP not found (build it or set STACKDUMP=)"
FX=${FX_TOKIO:-$REPO_DIR/build/tests/fixtures/fx-tokio}
[ -x "$FX" ] || bench_die "$FX not found (cmake --build build --target fx-tokio, or set FX_TOKIO=)"

python3 - "$FX" "$N" "$RUNS" "$STACKDUMP" <<'PY'
import os, re, statistics, subprocess, sys, tempfile, time

fx, n, runs, stackdump = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
tmp = tempfile.mkdtemp()
p = subprocess.Popen([fx, os.path.join(tmp, "awaits"), n, "meter"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, text=True)
try:
    ready = p.stdout.readline().split()
    assert ready and ready[0] == "ready", ready
    pid = ready[1]
    def gap():
        """The meter's longest gap (ms) since the last call."""
        p.stdin.write("\n")
        p.stdin.flush()
        g = p.stdout.readline().split()
        assert g and g[0] == "gap", g
        return int(g[1]) / 1000.0
    def dump(*args):
        gap()
        t0 = time.monotonic()
        r = subprocess.run([stackdump, *args, pid], capture_output=True, text=True)
        wall = time.monotonic() - t0
        assert r.returncode in (0, 1, 3), r.stderr  # 3: its async ABBA
        return wall, r.stdout, gap()
    rows = []
    last_walls = [0.5]
    for name, args in (("threads only (--threads)", ("--threads", "--no-group", "-v")),
                       ("threads + tasks", ("--no-group", "-v")),
                       ("no dump (meter noise)", None)):
        walls, pauses, reads, tasks, gaps = [], [], [], 0, []
        for i in range(runs):
            if args is None:
                # As long a wait as a dump with tasks took.
                gap()
                time.sleep(last_walls[i % len(last_walls)])
                gaps.append(gap())
                walls.append(last_walls[i % len(last_walls)])
                pauses.append(0.0)
                reads.append(0.0)
                continue
            w, out, g = dump(*args)
            gaps.append(g)
            walls.append(w)
            tasks = out.count("\ntask ")
            # stackdump's own measure of the pause (the longest a thread
            # was stopped) and of the task reading (-v).
            m = re.search(r"paused ([0-9.]+) ms", out)
            pauses.append(float(m.group(1)) if m else float("nan"))
            m = re.search(r"tasks read in ([0-9.]+) ms", out)
            reads.append(float(m.group(1)) if m else 0.0)
        if args and "--threads" not in args:
            last_walls = walls
        rows.append((name, statistics.median(walls), max(walls), statistics.median(pauses),
                     max(pauses), statistics.median(reads), tasks, statistics.median(gaps),
                     max(gaps)))
    print("fx-tokio with %s idle tasks, %d runs each (median / max)" % (n, runs))
    print("%-26s %20s %18s %14s %8s %20s" % ("dump", "wall s", "pause ms", "tasks read ms",
                                             "tasks", "meter gap ms"))
    for name, wm, wx, pm, px, rd, t, gm, gx in rows:
        print("%-26s %9.3f / %8.3f %8.2f / %7.2f %14.1f %8d %9.2f / %8.2f" %
              (name, wm, wx, pm, px, rd, t, gm, gx))
finally:
    p.kill()
    p.wait()
PY
