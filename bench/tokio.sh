#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A Tokio program with 10,000 idle tasks (fx-tokio with its IDLE argument,
# each task awaiting one Notify) beside its 9 known ones: the wall time of
# a dump with every task and its await chain, against a plain thread dump
# (--threads) of the same process, side by side in one run, with the pause
# stackdump measures (the longest any thread was stopped: reading the tasks
# stops none) and the time the task reading took (-v).
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
p = subprocess.Popen([fx, os.path.join(tmp, "awaits"), n], stdout=subprocess.PIPE, text=True)
try:
    ready = p.stdout.readline().split()
    assert ready and ready[0] == "ready", ready
    pid = ready[1]
    def dump(*args):
        t0 = time.monotonic()
        r = subprocess.run([stackdump, *args, pid], capture_output=True, text=True)
        wall = time.monotonic() - t0
        assert r.returncode in (0, 1, 3), r.stderr  # 3: its async ABBA
        return wall, r.stdout
    rows = []
    for name, args in (("threads only (--threads)", ("--threads", "--no-group", "-v")),
                       ("threads + tasks", ("--no-group", "-v"))):
        walls, pauses, reads, tasks = [], [], [], 0
        for _ in range(runs):
            w, out = dump(*args)
            walls.append(w)
            tasks = out.count("\ntask ")
            # stackdump's own measure of the pause (the longest a thread
            # was stopped) and of the task reading (-v).
            m = re.search(r"paused ([0-9.]+) ms", out)
            pauses.append(float(m.group(1)) if m else float("nan"))
            m = re.search(r"tasks read in ([0-9.]+) ms", out)
            reads.append(float(m.group(1)) if m else 0.0)
        rows.append((name, statistics.median(walls), max(walls), statistics.median(pauses),
                     max(pauses), statistics.median(reads), tasks))
    print("fx-tokio with %s idle tasks, %d runs each (median / max)" % (n, runs))
    print("%-26s %20s %18s %14s %8s" % ("dump", "wall s", "pause ms", "tasks read ms",
                                        "tasks"))
    for name, wm, wx, pm, px, rd, t in rows:
        print("%-26s %9.3f / %8.3f %8.2f / %7.2f %14.1f %8d" % (name, wm, wx, pm, px, rd, t))
finally:
    p.kill()
    p.wait()
PY
