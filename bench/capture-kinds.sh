#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# How stackdump captures the threads of real servers: for MariaDB (idle,
# then under sysbench oltp_read_write with 32 client connections), a busy
# node and a JVM with a pool of parked and sleeping threads, how many
# threads each one-shot dump froze, read without stopping, retried and
# stopped once for registers, and the same per snapshot of a 5 s profile
# (ptrace engine, 20 Hz), with the pause each felt.
#
# Needs: mariadb-server, sysbench, nodejs, a JDK (java), python3, setsid.
#   apt-get install -y mariadb-server sysbench nodejs default-jdk-headless
# Env: STACKDUMP (default build/stackdump), BENCH_BUILD_DIR.
# Usage: bench/capture-kinds.sh [DUMPS]   (one-shot dumps per target, default 5)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DUMPS=${1:-5}
bench_require python3 setsid mariadbd mariadb-install-db mariadb-admin mariadb sysbench node java
bench_have_stackdump || bench_die "$STACKDUMP not found (build it or set STACKDUMP=)"
bench_traps
OUT=$BUILD_DIR/capture-kinds
rm -rf "$OUT"
mkdir -p "$OUT"
TSV=$OUT/results.tsv
printf 'target\tmode\tthreads\tfrozen\tasleep\treused\tretried\tregstops\tpause_ms\n' >"$TSV"

# One line of `dump -v` or `profile -v` into the table.
row() {
	python3 - "$@" >>"$TSV" <<'EOF'
import re, sys
log, name, mode = sys.argv[1:4]
t = open(log).read()
if mode == "dump":
    m = re.search(r"(\d+) threads, paused ([\d.]+) ms", t)
    k = re.search(r"threads: (\d+) frozen, (\d+) read without stopping, (\d+) reused, "
                  r"(\d+) retried, (\d+) stopped for registers", t)
    vals = [m.group(1) if m else "?"] + (list(k.groups()) if k else ["?"] * 5) + \
        [m.group(2) if m else "?"]
else:
    n = re.search(r"sampling: \d+ samples in [\d.]+ s \([\d.]+ Hz\), (\d+) thread stacks", t)
    s = re.search(r"sampling: (\d+) samples", t)
    k = re.search(r"threads per snapshot: ([\d.]+) frozen, ([\d.]+) read without stopping, "
                  r"([\d.]+) reused, ([\d.]+) retried, ([\d.]+) stopped for registers", t)
    p = re.search(r"\(pause, max ([\d.]+) ms\)", t)
    per = "%.1f" % (int(n.group(1)) / int(s.group(1))) if n and s and int(s.group(1)) else "?"
    vals = [per] + (list(k.groups()) if k else ["?"] * 5) + [p.group(1) if p else "?"]
print("\t".join([name, mode] + vals))
EOF
}

measure() {
	local name=$1 pid=$2 i
	for ((i = 1; i <= DUMPS; i++)); do
		"$STACKDUMP" dump -v "$pid" >"$OUT/$name-dump$i.txt" 2>&1 || true
		row "$OUT/$name-dump$i.txt" "$name" dump
	done
	"$STACKDUMP" profile -v --engine ptrace -r 20 -d 5s --format folded -o "$OUT/$name.folded" \
		"$pid" >"$OUT/$name-profile.log" 2>&1 || true
	row "$OUT/$name-profile.log" "$name" "profile/snapshot"
	local left
	left=$(bench_check_stopped "$pid")
	((left == 0)) || bench_log "$name: $left threads left stopped"
}

# --- MariaDB, idle then under load ---------------------------------------------
bench_start_mariadb "$OUT" --thread-handling=one-thread-per-connection
"${SB[@]}" prepare >"$OUT/sysbench-prepare.log" 2>&1 || bench_die "sysbench prepare failed"
bench_log "mariadbd idle"
measure mariadbd-idle "$MYSQLD"
bench_spawn "$OUT/sysbench.out" "$OUT/sysbench.err" "${SB[@]}" --threads=32 --time=600 run
SYSB=$BENCH_LAST_PID
sleep 5
bench_log "mariadbd under sysbench (32 connections)"
measure mariadbd-load "$MYSQLD"
kill -- "-$SYSB" 2>/dev/null || true
bench_forget "$SYSB"

# --- a busy node ---------------------------------------------------------------
# The test suite's node fixture: JIT code hashing, sorting and parsing JSON.
bench_start_target "$OUT/node.out" node "$(dirname "$0")/../tests/fixtures/fx-node.js"
bench_log "node"
measure node "$TARGET_PID"

# --- a JVM: a pool parked on a queue, sleepers, two busy threads ----------------
mkdir -p "$OUT/jvm"
cat >"$OUT/jvm/Pool.java" <<'EOF'
import java.util.concurrent.*;
public class Pool {
	public static void main(String[] a) throws Exception {
		BlockingQueue<Runnable> q = new LinkedBlockingQueue<>();
		ThreadPoolExecutor pool = new ThreadPoolExecutor(200, 200, 1, TimeUnit.HOURS, q);
		pool.prestartAllCoreThreads();
		for (int i = 0; i < 50; i++) {
			Thread t = new Thread(() -> {
				try { Thread.sleep(Long.MAX_VALUE); } catch (InterruptedException e) { }
			}, "sleeper-" + i);
			t.setDaemon(true);
			t.start();
		}
		for (int i = 0; i < 2; i++) {
			Thread t = new Thread(() -> {
				long x = 0;
				while (true) x += Long.toHexString(x).hashCode();
			}, "busy-" + i);
			t.setDaemon(true);
			t.start();
		}
		System.out.println("ready " + ProcessHandle.current().pid());
		Thread.sleep(Long.MAX_VALUE);
	}
}
EOF
bench_start_target "$OUT/jvm.out" java "$OUT/jvm/Pool.java"
bench_log "jvm"
measure jvm "$TARGET_PID"

echo
echo "capture kinds on real servers ($(nproc)-core machine); a dump's row: one dump;"
echo "a profile's row: per snapshot, averaged over its samples"
echo
column -t -s $'\t' "$TSV"
bench_log "raw results: $TSV"
