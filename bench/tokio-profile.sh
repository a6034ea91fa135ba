#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What looking for long polls costs `profile`: fx-tokio with TASKS idle
# tasks and its long poll, profiled for SECONDS at 20 Hz, RUNS times; each
# run's own CPU ("stackdump CPU" of -v) and the reading of the workers it
# did at every sample ("tokio workers read N times: first ... ms, then ...
# ms CPU each"), side by side, alternating, with the same profile by
# BASELINE (a stackdump built before the reading was added, when given),
# as the ratio of the two CPU times.
#
# Needs: the fixtures built (cmake --build build: fx-tokio), python3.
# Env: STACKDUMP (default build/stackdump), FX_TOKIO (default
# build/tests/fixtures/fx-tokio), BASELINE (a stackdump binary; none: the
# -v figures only).
# Usage: bench/tokio-profile.sh [TASKS] [SECONDS] [RUNS]   (default 10000, 10, 3)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

N=${1:-10000}
SECS=${2:-10}
RUNS=${3:-3}
bench_require python3
bench_have_stackdump || bench_die "$STACKDUMP not found (build it or set STACKDUMP=)"
FX=${FX_TOKIO:-$REPO_DIR/build/tests/fixtures/fx-tokio}
[ -x "$FX" ] || bench_die "$FX not found (cmake --build build --target fx-tokio, or set FX_TOKIO=)"

python3 - "$FX" "$N" "$SECS" "$RUNS" "$STACKDUMP" "${BASELINE:-}" <<'PY'
import os, re, subprocess, sys, tempfile

fx, n, secs, runs, stackdump, base = sys.argv[1:7]
tmp = tempfile.mkdtemp()
p = subprocess.Popen([fx, os.path.join(tmp, "awaits"), n, "longpoll"], stdout=subprocess.PIPE,
                     text=True)
try:
    ready = p.stdout.readline().split()
    assert ready and ready[0] == "ready", ready
    pid = ready[1]
    def prof(binary):
        r = subprocess.run([binary, "profile", "-d", secs + "s", "-q", "-v", pid],
                           capture_output=True, text=True, timeout=int(secs) * 10 + 60)
        cpu = re.search(r"stackdump CPU: ([0-9.]+) s", r.stderr)
        tk = re.search(r"tokio workers read (\d+) times: first ([0-9.]+) ms, then ([0-9.]+) ms",
                       r.stderr)
        lp = re.search(r"^  (worker .*)$", r.stdout, re.M)
        return float(cpu.group(1)) if cpu else None, tk, lp.group(1) if lp else None
    print("fx-tokio with %s idle tasks and a long poll, profile -d %ss at 20 Hz, %s runs"
          % (n, secs, runs))
    print("%-10s %8s  %s" % ("run", "CPU s", "tokio reading"))
    for i in range(int(runs)):
        cpu, tk, lp = prof(stackdump)
        print("%-10s %8.2f  %s" % ("measured", cpu,
              "%s readings, first %s ms, then %s ms each" % tk.groups() if tk else "none"))
        if lp:
            print("           long poll: %s" % lp)
        if base:
            bcpu, _, _ = prof(base)
            print("%-10s %8.2f  (ratio %.2f)" % ("baseline", bcpu, cpu / bcpu if bcpu else 0))
finally:
    p.kill()
    p.wait()
PY
