#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Short windows on a loaded MariaDB, to tell apart what a sampling run costs
# the server: starts mariadbd under sysbench as realserver.sh does, then, for
# each round in a shuffled order, runs every named command in a window of its
# own, each followed by a baseline window (a sleep), and gives each command's
# loss against the mean of the baselines on either side. {pid} and {w} in a
# command stand for the server's pid and the window in seconds. Run as root,
# in its own process group (everything started dies with it):
#
#   setsid python3 bench/alternate.py --window 4 --rounds 8 \
#     "null=sleep {w}" \
#     "ptrace1=build/stackdump profile {pid} --engine ptrace --rate 1 -d {w}s -o /tmp/p1" \
#     "floor1=/tmp/bb/ptrace-floor -p {pid} -r 1 -d {w}"
#
# "null" (a sleep in the tool's place) is the windows' own noise. Needs what
# realserver.sh needs for MariaDB (mariadb-server, mariadb-client, sysbench).
import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import realserver  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--window", type=float, default=4)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--dir", default="/tmp/stackdump-bench/alternate")
    ap.add_argument("tools", nargs="+", help="NAME=COMMAND")
    args = ap.parse_args()
    tools = {}
    for spec in args.tools:
        name, sep, cmd = spec.partition("=")
        if not sep or not name or not cmd:
            ap.error("each tool is NAME=COMMAND: %r" % spec)
        tools[name] = cmd
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))
    os.environ["DEBUGINFOD_URLS"] = ""
    total = int(args.rounds * len(tools) * 2 * (args.window + 3) + args.warmup + 300)
    srv = realserver.MariaDB(args.dir, total)
    try:
        srv.start()
        realserver.log("mariadbd: pid %d; warming up %d s" % (srv.pid, args.warmup))
        time.sleep(args.warmup)

        def window(cmd):
            c0, t0 = srv.counter(), time.monotonic()
            if cmd is None:
                time.sleep(args.window)
            else:
                cmd = cmd.replace("{pid}", str(srv.pid)).replace("{w}", "%g" % args.window)
                subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=args.window * 10 + 60)
            return (srv.counter() - c0) / (time.monotonic() - t0)

        loss = {n: [] for n in tools}
        order = list(tools)
        before = window(None)
        for k in range(args.rounds):
            random.shuffle(order)
            for name in order:
                got = window(tools[name])
                after = window(None)
                loss[name].append(100 * (1 - got / ((before + after) / 2)))
                before = after
            realserver.log("round %d: %s" % (k, ", ".join(
                "%s %.1f%%" % (n, loss[n][-1]) for n in order)))
        print("| command | loss, mean (median; range over %d rounds of %g s windows) |"
              % (args.rounds, args.window))
        print("| --- | --- |")
        for name, xs in loss.items():
            print("| %s | %.1f%% (%.1f; %.1f to %.1f) |" % (
                name, statistics.mean(xs), statistics.median(xs), min(xs), max(xs)))
    finally:
        realserver.stop_all()
        srv.stop()


if __name__ == "__main__":
    main()
