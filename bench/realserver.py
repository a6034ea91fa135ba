#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The driver of bench/realserver.sh (run that: it checks the packages and
# runs this in its own process group). Starts each server on loopback (or a
# unix socket), loads it with a bounded load generator, and alternates
# baseline windows with windows under `stackdump profile` and under
# `perf record -F 20 --call-graph dwarf`; prints the figures and keeps them
# in DIR/results.json.
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

TCK = os.sysconf("SC_CLK_TCK")
CHILDREN = []  # Popen objects to stop at the end
DATA_ON_TMPFS = True  # MariaDB's datadir under /dev/shm (--disk: where it is)


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def spawn(cmd, **kw):
    kw.setdefault("stdout", subprocess.DEVNULL)
    kw.setdefault("stderr", subprocess.DEVNULL)
    p = subprocess.Popen(cmd, **kw)
    CHILDREN.append(p)
    return p


def stop_all():
    for p in reversed(CHILDREN):
        if p.poll() is None:
            p.terminate()
    deadline = time.monotonic() + 20
    for p in reversed(CHILDREN):
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()


def proc_cpu(pid):
    """CPU seconds (user + system) of PID and its threads, 0 if gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TCK
    except (OSError, IndexError, ValueError):
        return 0.0


def host_busy():
    """CPU seconds the host spent busy (all CPUs), from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / TCK


def wait_for(cond, what, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.2)
    raise RuntimeError("timed out waiting for " + what)


# ---- servers ----

class MariaDB:
    name = "mariadbd"
    unit = "queries/s"

    def __init__(self, d, total):
        self.d = os.path.join(d, "mariadb")
        self.sock = os.path.join(self.d, "sock")
        self.total = total
        self.loadgen = []

    def sql(self, q):
        return subprocess.run(["mariadb", "-S", self.sock, "-uroot", "-N", "-B", "-e", q],
                              capture_output=True, text=True, timeout=30).stdout

    def start(self):
        shutil.rmtree(self.d, ignore_errors=True)
        os.makedirs(self.d)
        data = os.path.join(self.d, "data")
        durable = []
        if DATA_ON_TMPFS:
            # The tables in memory (a folder of our own under /dev/shm)
            # and commits not flushed: the throughput then follows the
            # CPU the server gets, which is what a profiler can take from
            # it. On this VM's disk it drifted 13-41% between baselines.
            self.tmp = tempfile.mkdtemp(prefix="stackdump-bench-mariadb.", dir="/dev/shm")
            data = os.path.join(self.tmp, "data")
            durable = ["--innodb-flush-log-at-trx-commit=0", "--innodb-doublewrite=0",
                       "--innodb-flush-method=nosync"]
        subprocess.run(["mariadb-install-db", "--no-defaults", "--datadir=" + data, "--user=root",
                        "--auth-root-authentication-method=socket"],
                       check=True, capture_output=True, timeout=300)
        exe = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
        # No TCP at all: the socket in our directory only.
        self.proc = spawn(["timeout", str(self.total), exe, "--no-defaults", "--datadir=" + data,
                           "--socket=" + self.sock, "--skip-networking", "--user=root",
                           "--pid-file=" + os.path.join(self.d, "pid"),
                           "--innodb-buffer-pool-size=128M",
                           "--log-error=" + os.path.join(self.d, "err.log")] + durable)
        wait_for(lambda: os.path.exists(self.sock) and "1" in self.sql("select 1"), "mariadbd")
        self.pid = int(open(os.path.join(self.d, "pid")).read())
        self.sql("create database sbtest")
        sb = ["sysbench", "oltp_read_write", "--mysql-socket=" + self.sock, "--mysql-user=root",
              "--tables=4", "--table-size=20000"]
        subprocess.run(sb + ["prepare"], check=True, capture_output=True, timeout=300)
        # 8 clients under load, 12 idle connections; all bounded in time.
        self.loadgen.append(spawn(["timeout", str(self.total)] + sb +
                                  ["--threads=8", "--time=%d" % self.total,
                                   "--report-interval=0", "run"]))
        for _ in range(12):
            self.loadgen.append(spawn(["timeout", str(self.total), "sh", "-c",
                                       "sleep %d | mariadb -S %s -uroot" % (self.total, self.sock)]))
        wait_for(lambda: int(self.sql("select count(*) from information_schema.processlist")
                             or 0) >= 21, "the clients")

    def stop(self):
        if getattr(self, "tmp", None):
            shutil.rmtree(self.tmp, ignore_errors=True)

    def counter(self):
        out = self.sql("show global status like 'Questions'")
        return int(out.split()[1])


class Redis:
    name = "redis-server"
    unit = "commands/s"

    def __init__(self, d, total):
        self.d = os.path.join(d, "redis")
        self.sock = os.path.join(self.d, "sock")
        self.total = total
        self.loadgen = []

    def start(self):
        shutil.rmtree(self.d, ignore_errors=True)
        os.makedirs(self.d)
        self.proc = spawn(["timeout", str(self.total), "redis-server", "--port", "0",
                           "--unixsocket", self.sock, "--save", "", "--appendonly", "no",
                           "--dir", self.d])
        wait_for(lambda: os.path.exists(self.sock), "redis-server")
        self.pid = self.proc.pid
        # timeout runs redis-server as its child: the server's own PID.
        wait_for(lambda: self._child() is not None, "redis-server's pid")
        self.pid = self._child()
        self.loadgen.append(spawn(["timeout", str(self.total), "redis-benchmark", "-s", self.sock,
                                   "-c", "8", "-n", "2000000000", "-t", "set,get", "-l", "-q"]))

    def _child(self):
        try:
            with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)) as f:
                kids = f.read().split()
            return int(kids[0]) if kids else None
        except OSError:
            return None

    def counter(self):
        out = subprocess.run(["redis-cli", "-s", self.sock, "info", "stats"], capture_output=True,
                             text=True, timeout=30).stdout
        return int(re.search(r"total_commands_processed:(\d+)", out).group(1))


NODE_SERVER = r"""
const http = require('http'), crypto = require('crypto');
let served = 0;
const body = Buffer.alloc(2048, 'x');
const srv = http.createServer((req, res) => {
  if (req.url === '/stats') { res.end(String(served)); return; }
  let h = body;
  for (let i = 0; i < 20; i++) h = crypto.createHash('sha256').update(h).digest();
  served++;
  res.end(JSON.stringify({ok: true, hash: h.toString('hex')}));
});
srv.keepAliveTimeout = 60000;
srv.listen(0, '127.0.0.1', () => console.log(srv.address().port));
setTimeout(() => process.exit(0), Number(process.argv[2]) * 1000).unref();
"""

NODE_CLIENT = r"""
const http = require('http');
const [port, conc, secs] = process.argv.slice(2).map(Number);
const agent = new http.Agent({keepAlive: true, maxSockets: conc});
const end = Date.now() + secs * 1000;
function one() {
  if (Date.now() > end) process.exit(0);
  http.get({host: '127.0.0.1', port, path: '/', agent}, res => {
    res.resume(); res.on('end', one);
  }).on('error', () => setTimeout(one, 10));
}
for (let i = 0; i < conc; i++) one();
"""


class Node:
    name = "node"
    unit = "requests/s"

    def __init__(self, d, total):
        self.d = os.path.join(d, "node")
        self.total = total
        self.loadgen = []

    def start(self):
        shutil.rmtree(self.d, ignore_errors=True)
        os.makedirs(self.d)
        for n, text in (("server.js", NODE_SERVER), ("client.js", NODE_CLIENT)):
            with open(os.path.join(self.d, n), "w") as f:
                f.write(text)
        self.proc = spawn(["node", os.path.join(self.d, "server.js"), str(self.total)],
                          stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())
        self.pid = self.proc.pid
        self.loadgen.append(spawn(["timeout", str(self.total), "node",
                                   os.path.join(self.d, "client.js"), str(self.port), "8",
                                   str(self.total)]))

    def counter(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/stats" % self.port, timeout=30) as r:
            return int(r.read())


# ---- windows ----

def run_tool(cmd):
    """Run CMD; (stderr text, CPU seconds of it and its children, wall)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        log("%s exited with %d: %s" % (cmd[0], p.returncode, err.strip()[-500:]))
    return err, ru.ru_utime + ru.ru_stime, time.monotonic() - t0


def window(srv, secs, tool, args, rate=None, engine=None):
    """One window: throughput, the tool's CPU and rate, the host's load."""
    lg = [p.pid for p in srv.loadgen if p.poll() is None]
    c0, t0, h0 = srv.counter(), time.monotonic(), host_busy()
    s0, l0 = proc_cpu(srv.pid), sum(proc_cpu(p) for p in lg)
    load = os.getloadavg()[0]
    res = {"tool": tool, "rate_asked": rate, "engine": engine}
    if tool == "baseline":
        time.sleep(secs)
        cpu, took, rate_got = 0.0, secs, None
    elif tool == "stackdump":
        out = os.path.join(args.dir, "stackdump.txt")
        err, cpu, took = run_tool([args.stackdump, "profile", str(srv.pid), "--rate", str(rate),
                                   "--duration", "%gs" % secs, "-o", out, "-v", "-q",
                                   "--engine", engine])
        m = re.search(r"wrote \S+ \(\w+\): (\d+) samples in ([\d.]+) s \(([\d.]+) Hz", err)
        rate_got = float(m.group(3)) if m else None
        res["samples"] = int(m.group(1)) if m else None
        m = re.search(r"used ([\d.]+)% of a core after the first second", err)
        res["steady_cpu_percent"] = float(m.group(1)) if m else None
        res["slowed"] = "over the budget" in err
        # The engine's own counters (-v): what the sampling cost where.
        res["engine_counters"] = [l for l in err.splitlines()
                                  if l.startswith(("engine: ", "perf: ", "sampling: ", "per snapshot: "))]
    else:
        out = os.path.join(args.dir, "perf.data")
        err, cpu, took = run_tool(["perf", "record", "-F", str(rate), "--call-graph", "dwarf",
                                   "-p", str(srv.pid), "-o", out, "--", "sleep", "%g" % secs])
        m = re.search(r"\((\d+) samples\)", err)
        res["samples"] = int(m.group(1)) if m else None
        rate_got = res["samples"] / secs if m else None
        if os.path.exists(out):
            os.unlink(out)
    c1, t1, h1 = srv.counter(), time.monotonic(), host_busy()
    s1, l1 = proc_cpu(srv.pid), sum(proc_cpu(p) for p in lg)
    wall = t1 - t0
    res.update({"throughput": (c1 - c0) / wall, "wall": wall, "took": took,
                "tool_cpu": cpu, "tool_cpu_percent": 100 * cpu / wall,
                "rate_got": rate_got, "load1": load,
                "target_cpu_percent": 100 * (s1 - s0) / wall,
                "others_cpu_percent": 100 * max(0.0, (h1 - h0) - (s1 - s0) - (l1 - l0) - cpu)
                / wall})
    return res


def bench_server(srv, args, rates):
    log("%s: starting" % srv.name)
    srv.start()
    log("%s: pid %d, %d threads; warming up %d s" % (
        srv.name, srv.pid, len(os.listdir("/proc/%d/task" % srv.pid)), args.warmup))
    time.sleep(args.warmup)
    tools = [("stackdump", r, e) for e in args.engines for r in rates] + [("perf", 20, None)]
    rows = []
    for k in range(args.pairs):
        rows.append(window(srv, args.window, "baseline", args))
        log("%s: baseline %.0f %s (load %.2f)" % (srv.name, rows[-1]["throughput"], srv.unit,
                                                  rows[-1]["load1"]))
        order = tools[k % len(tools):] + tools[:k % len(tools)]
        for j, (tool, rate, engine) in enumerate(order):
            if args.sandwich and j:
                # A baseline of its own before each profiled window.
                rows.append(window(srv, args.window, "baseline", args))
            r = window(srv, args.window, tool, args, rate, engine)
            r["round"] = k
            rows.append(r)
            log("%s: %s%s %d Hz: %.0f %s, %.1f Hz got, CPU %.2f%% of a core, took %.2f s" % (
                srv.name, tool, " --engine " + engine if engine else "", rate, r["throughput"],
                srv.unit, r["rate_got"] or 0,
                r["tool_cpu_percent"], r["took"]))
    rows.append(window(srv, args.window, "baseline", args))
    threads = len(os.listdir("/proc/%d/task" % srv.pid))
    dumps = {}
    if srv.name == "mariadbd" and args.dumps:
        # One-shot dumps, each a new process (a cold start), beside the
        # tools a user would run instead, taken in turn: under the load,
        # then with the load generator stopped (the server idle).
        tools = [("stackdump", [args.stackdump, str(srv.pid)]),
                 ("eu-stack", ["eu-stack", "-i", "-s", "-p", str(srv.pid)]),
                 ("gdb", ["gdb", "-nx", "-batch", "-ex", "set pagination off", "-ex",
                          "set debuginfod enabled off", "-ex", "thread apply all bt",
                          "-p", str(srv.pid)])]
        tools = [(n, c) for n, c in tools if shutil.which(c[0]) or os.path.exists(c[0])]
        for phase in ("loaded", "idle"):
            if phase == "idle":
                for p in srv.loadgen:
                    if p.poll() is None:
                        p.terminate()  # timeout(1) passes it on to its command
                time.sleep(3)
            for _ in range(args.dumps):
                for name, cmd in tools:
                    t0 = time.monotonic()
                    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   timeout=120)
                    dumps.setdefault(phase, {}).setdefault(name, []).append(
                        time.monotonic() - t0)
    storage = ""
    if srv.name == "mariadbd":
        storage = ", data on tmpfs, commits not flushed" if DATA_ON_TMPFS else ", data on disk"
    return {"server": srv.name, "unit": srv.unit, "threads": threads, "rows": rows,
            "dumps": dumps, "storage": storage}


# Student's t at 97.5% for n - 1 degrees of freedom (n pairs, 2 to 31).
T975 = [12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.14, 2.13,
        2.12, 2.11, 2.10, 2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05, 2.05, 2.04]


def interval(xs):
    """The mean of XS and the half-width of its 95% confidence interval
    (Student's t; the pairs taken as independent), None when under 2."""
    if len(xs) < 2:
        return statistics.mean(xs), None
    t = T975[min(len(xs) - 2, len(T975) - 1)]
    return statistics.mean(xs), t * statistics.stdev(xs) / len(xs) ** 0.5


def summarize(res):
    rows = res["rows"]
    base = [(i, r) for i, r in enumerate(rows) if r["tool"] == "baseline"]
    bvals = [r["throughput"] for _, r in base]
    out = []
    out.append("%s (%d threads%s): baselines %.0f-%.0f %s (spread %.1f%%), load %.2f-%.2f, others' "
               "CPU %.0f-%.0f%% of a core" % (
                   res["server"], res["threads"], res.get("storage", ""), min(bvals), max(bvals), res["unit"],
                   100 * (max(bvals) - min(bvals)) / statistics.mean(bvals),
                   min(r["load1"] for r in rows), max(r["load1"] for r in rows),
                   min(r["others_cpu_percent"] for r in rows),
                   max(r["others_cpu_percent"] for r in rows)))
    groups = {}
    for i, r in enumerate(rows):
        if r["tool"] == "baseline":
            continue
        before = max(j for j, _ in base if j < i)
        after = min(j for j, _ in base if j > i)
        ref = (rows[before]["throughput"] + rows[after]["throughput"]) / 2
        r["loss_percent"] = 100 * (1 - r["throughput"] / ref)
        groups.setdefault((r["tool"], r["rate_asked"], r.get("engine")), []).append(r)
    out.append("| tool | loss, mean (median; range over pairs) | 95%% interval of the mean | per pair "
               "| rate got | tool CPU, "
               "%% of a core | took (asked %gs) |" % rows[0]["wall"].__round__())
    out.append("| --- | --- | --- | --- | --- | --- | --- |")
    for (tool, rate, engine), rs in groups.items():
        losses = [r["loss_percent"] for r in rs]
        got = [r["rate_got"] or 0 for r in rs]
        # The engine the profiles used (auto's choice), from their -v.
        used = sorted({l.split(" (")[0][len("engine: "):] for r in rs
                       for l in r.get("engine_counters", []) if l.startswith("engine: ")})
        label = "stackdump profile --rate %d (%s engine%s)" % (
            rate, engine, ": " + "+".join(used) if engine == "auto" and used else "") \
            if tool == "stackdump" else \
            "perf record -F %d --call-graph dwarf" % rate
        unit = "Hz" if tool == "stackdump" else "samples/s (on-CPU only)"
        mean, half = interval(losses)
        out.append("| %s | %.1f%% (%.1f; %.1f to %.1f) | %s | %s | %.1f-%.1f %s | %.2f-%.2f | %.2f-%.2f s |" % (
            label, mean, statistics.median(losses), min(losses), max(losses),
            "%.1f to %.1f" % (mean - half, mean + half) if half is not None else "-",
            ", ".join("%.1f" % x for x in losses), min(got), max(got), unit,
            min(r["tool_cpu_percent"] for r in rs), max(r["tool_cpu_percent"] for r in rs),
            min(r["took"] for r in rs), max(r["took"] for r in rs)))
    for phase, by_tool in (res["dumps"] or {}).items():
        ours = statistics.median(by_tool["stackdump"])
        parts = []
        for name, d in by_tool.items():
            d = sorted(d)
            med = statistics.median(d)
            parts.append("%s median %.0f ms (%.0f-%.0f)%s" % (
                name, 1000 * med, 1000 * d[0], 1000 * d[-1],
                "" if name == "stackdump" else ", %.1fx stackdump's" % (med / ours)))
        out.append("one-shot dumps, %s server (a new process each, %d in turn each): %s" % (
            phase, len(by_tool["stackdump"]), "; ".join(parts)))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stackdump", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--window", type=float, default=8)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--servers", default="mariadb,redis,node")
    ap.add_argument("--rates", default="20,99")
    ap.add_argument("--dumps", type=int, default=15)
    # One engine, or several (auto,perf) side by side in every round.
    ap.add_argument("--engine", default="auto")
    # Each profiled window between two baselines of its own (a server whose
    # throughput drifts, as MariaDB's does with its disk, is compared over
    # 16 s, not over the 40 s of a round).
    ap.add_argument("--sandwich", action="store_true")
    # MariaDB's tables on disk with every commit flushed, as installed.
    ap.add_argument("--disk", action="store_true")
    args = ap.parse_args()
    global DATA_ON_TMPFS
    args.engines = args.engine.split(",")
    for e in args.engines:
        if e not in ("auto", "perf", "ptrace"):
            ap.error("--engine: auto, perf or ptrace, or several of them with commas")
    DATA_ON_TMPFS = not args.disk
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))
    os.environ["DEBUGINFOD_URLS"] = ""
    rates = [int(x) for x in args.rates.split(",")]
    servers = args.servers.split(",")
    # A bound on everything started: windows, warm-up, setup and dumps.
    per = (args.pairs * (len(rates) * len(args.engines) + 2) * (2 if args.sandwich else 1) + 1) * (args.window + 2) \
        + args.warmup + 240
    results = []
    try:
        for name in servers:
            cls = {"mariadb": MariaDB, "redis": Redis, "node": Node}[name]
            srv = cls(args.dir, int(per))
            try:
                res = bench_server(srv, args, rates if name == "mariadb" else rates[:1])
            finally:
                stop_all()
                CHILDREN.clear()
                if hasattr(srv, "stop"):
                    srv.stop()
            results.append(res)
            print(summarize(res) + "\n", flush=True)
    finally:
        stop_all()
        with open(os.path.join(args.dir, "results.json"), "w") as f:
            json.dump({"time": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "uname": os.uname().release,
                       "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
