#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A Tokio program with 10,000 idle tasks (fx-tokio with its IDLE argument,
# each task awaiting one Notify) beside its 7 known ones: the wall time of
# a dump with every task and its await chain, against a plain thread dump
# (--threads) of the same process, side by side in one run.
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
import os, statistics, subprocess, sys, tempfile, time

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
        assert r.returncode in (0, 1), r.stderr
        return wall, r.stdout
    rows = []
    for name, args in (("threads only (--threads)", ("--threads", "--no-group")),
                       ("threads + tasks", ("--no-group",))):
        walls, tasks = [], 0
        for _ in range(runs):
            w, out = dump(*args)
            walls.append(w)
            tasks = out.count("\ntask ")
        rows.append((name, statistics.median(walls), max(walls), tasks))
    print("fx-tokio with %s idle tasks, %d runs each (median / max)" % (n, runs))
    print("%-26s %20s %8s" % ("dump", "wall s", "tasks"))
    for name, wm, wx, t in rows:
        print("%-26s %9.3f / %8.3f %8d" % (name, wm, wx, t))
finally:
    p.kill()
    p.wait()
PY
