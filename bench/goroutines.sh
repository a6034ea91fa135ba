#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A Go program with 10,000 goroutines (a few busy): the wall time of a dump
# of every goroutine and the longest pause a goroutine of the target feels
# (a meter goroutine's worst lateness on a 1 ms sleep), side by side in one
# run for stackdump (text dump of goroutines and threads), delve
# (`dlv attach`, `goroutines -t`, detach) and the runtime's own
# /debug/pprof/goroutine?debug=2 (it stops the world in process), with the
# meter's noise over the same window without any tool, and beside it a
# process that only spins on a CPU for as long (what CPU contention alone
# costs the meter when the target fills the CPUs).
#
# Needs: go (golang-go), dlv (delve, which reads Go 1.19), python3.
# Env: STACKDUMP (default build/stackdump), BENCH_BUILD_DIR, GO.
# Usage: bench/goroutines.sh [GOROUTINES] [RUNS]   (default 10000, 5)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

N=${1:-10000}
RUNS=${2:-5}
GO=${GO:-go}
bench_require python3 "$GO" dlv
bench_have_stackdump || bench_die "$STACKDUMP not found (build it or set STACKDUMP=)"
mkdir -p "$BUILD_DIR"
GOCACHE=$BUILD_DIR/go-cache GO111MODULE=off GOPROXY=off GOFLAGS= \
	"$GO" build -o "$BUILD_DIR/goroutines-target" "$BENCH_DIR/goroutines-target.go" ||
	bench_die "build of goroutines-target failed"

python3 - "$BUILD_DIR/goroutines-target" "$N" "$RUNS" "$STACKDUMP" <<'PY'
import os, statistics, subprocess, sys, tempfile, time, urllib.request

target, n, runs, stackdump = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
p = subprocess.Popen([target, n], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                     bufsize=1)
try:
    _, pid, port = p.stdout.readline().split()
    def ask(cmd):
        p.stdin.write(cmd + "\n")
        return p.stdout.readline().strip()
    empty = tempfile.mkdtemp()
    def run_stackdump():
        r = subprocess.run([stackdump, pid], capture_output=True, text=True)
        assert r.returncode in (0, 1), r.stderr
        return r.stdout.count("\ngoroutine ")
    def run_delve():
        r = subprocess.run(["dlv", "attach", pid, "--allow-non-terminal-interactive=true"],
                           input="goroutines -t 100\nquit -c\n", capture_output=True,
                           text=True, cwd=empty, timeout=600)
        return r.stdout.count(" Goroutine ")
    def run_pprof():
        url = "http://127.0.0.1:%s/debug/pprof/goroutine?debug=2" % port
        return urllib.request.urlopen(url, timeout=600).read().decode().count("\ngoroutine ")
    def run_nothing():
        time.sleep(window)
        return 0
    def run_burner():
        # A process that only takes a CPU for as long as stackdump runs:
        # on a host whose CPUs the target fills, what any process costs
        # the meter, with no stop at all.
        subprocess.run([sys.executable, "-c", "import time\nt = time.monotonic() + %f\n"
                        "while time.monotonic() < t: pass" % window])
        return 0
    time.sleep(1)  # let the goroutines park
    # The window without a tool lasts as long as stackdump's own run.
    t0 = time.monotonic(); run_stackdump(); window = time.monotonic() - t0
    rows = []
    for name, fn in (("no tool (meter noise)", run_nothing),
                     ("a CPU burner, no stop", run_burner), ("stackdump", run_stackdump),
                     ("delve goroutines -t", run_delve), ("pprof debug=2", run_pprof)):
        walls, pauses, seen = [], [], 0
        for _ in range(runs):
            ask("reset")
            t0 = time.monotonic()
            seen = fn()
            walls.append(time.monotonic() - t0)
            time.sleep(0.05)  # the meter's next wake-up reports the pause
            pauses.append(int(ask("max")) / 1000.0)
        rows.append((name, statistics.median(walls), max(walls), statistics.median(pauses),
                     max(pauses), seen))
    print("%d goroutines, %d runs each (median / max)" % (int(n), runs))
    print("%-24s %18s %22s %12s" % ("tool", "wall s", "meter pause ms", "goroutines"))
    for name, wm, wx, pm, px, seen in rows:
        print("%-24s %8.3f / %7.3f %10.2f / %9.2f %12s" % (name, wm, wx, pm, px,
                                                          seen if seen else "-"))
finally:
    p.kill()
    p.wait()
PY
