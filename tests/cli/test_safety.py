# SPDX-License-Identifier: MIT
# The safety promises, proven on live targets: killing stackdump at any
# moment never leaves the target stopped, signalled or dead; SIGINT and
# SIGTERM detach cleanly; races (threads appearing and exiting, a process
# that exits, forks or execs mid-snapshot) give a result or a clear error;
# hostile stacks are printed as far as they go, with the reason, and names
# from the target are escaped.
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
from fixture import path_of, start  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402

KILLS = int(os.environ.get("STACKDUMP_FAULT_KILLS", "200"))


def read_counters(path):
    vals = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0] in ("progress", "signals"):
                vals[parts[0]] = int(parts[1])
    return vals


def wait_progress(path, after, timeout=30):
    """The target keeps making progress: its counter passes AFTER."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = read_counters(path)
        if v.get("progress", -1) > after:
            return v
        time.sleep(0.02)
    raise AssertionError("target made no progress past %d: %r" % (after, read_counters(path)))


def no_thread_stopped(pid, settle=2.0):
    """No thread left in t/T: a thread being detached may still show t for
    a moment, so allow it to settle, but fail if any stays stopped."""
    deadline = time.time() + settle
    while True:
        bad = {t: s for t, s in sdtest.state_of(pid).items() if s in "tT"}
        if not bad:
            return
        if time.time() > deadline:
            raise AssertionError("threads left stopped: %r" % bad)
        time.sleep(0.01)


def kill_at_random(args, fx_pid, counters, rounds, max_delay):
    rng = random.Random(1234)
    env = dict(os.environ, NO_COLOR="1")
    env.pop("DEBUGINFOD_URLS", None)
    for i in range(rounds):
        before = read_counters(counters)["progress"]
        p = subprocess.Popen([sdtest.binary()] + args, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env=env)
        time.sleep(rng.uniform(0, max_delay))
        p.kill()
        p.wait()
        no_thread_stopped(fx_pid)
        v = wait_progress(counters, before)
        eq(v["signals"], 0, "the target saw a signal (round %d)" % i)
        ok(os.path.exists("/proc/%d" % fx_pid), "target died")


def test_sigkill_at_random_moments_500_threads():
    d = tempfile.mkdtemp()
    counters = os.path.join(d, "counters")
    with start("fx-signals", counters, "500", blocked=500) as fx:
        # One untimed run tells how long a whole dump takes here; kills
        # then land anywhere in it (freeze, capture, unwind, output).
        t0 = time.time()
        r = sdtest.run("--format", "json", fx.pid)
        eq(r.rc, 0, r.err)
        whole = time.time() - t0
        kill_at_random([str(fx.pid)], fx.pid, counters, KILLS, whole * 1.2)
        eq(read_counters(counters)["signals"], 0)
    print("  %d kills over a %.2fs dump" % (KILLS, whole))


def test_sigkill_per_thread_mode():
    d = tempfile.mkdtemp()
    counters = os.path.join(d, "counters")
    with start("fx-signals", counters, "100", blocked=100) as fx:
        kill_at_random(["--per-thread", str(fx.pid)], fx.pid, counters, 30, 0.5)


def test_sigkill_during_profile_and_record():
    """The same for the long-running commands: profile and record."""
    d = tempfile.mkdtemp()
    counters = os.path.join(d, "counters")
    out = os.path.join(d, "rec")
    with start("fx-signals", counters, "200", blocked=200) as fx:
        kill_at_random(["profile", "--rate", "50", "--count", "20", "--format", "folded",
                        "-o", os.path.join(d, "p.folded"), str(fx.pid)],
                       fx.pid, counters, 30, 1.0)
        kill_at_random(["record", "--every", "100ms", "--count", "10", "--out", out,
                        str(fx.pid)], fx.pid, counters, 30, 1.5)
        # whatever the kills left, every snapshot file is whole
        for name in os.listdir(out):
            if name.startswith("snap-") and name.endswith(".json"):
                r = sdtest.run("report", os.path.join(out, name))
                ok(r.rc in (0, 1), (name, r))


def test_no_leaks_in_a_long_profile():
    """200 snapshots leak nothing: under valgrind in the plain build, under
    LeakSanitizer in the ASan build (which cannot run under valgrind)."""
    with open(sdtest.binary(), "rb") as f:
        asan = b"__asan_init" in f.read()
    d = tempfile.mkdtemp()
    out = os.path.join(d, "p.folded")
    args = [sdtest.binary(), "profile", "--count", "200", "--interval", "5ms", "--format",
            "folded", "-o", out]
    env = dict(os.environ)
    if asan:
        env["ASAN_OPTIONS"] = "detect_leaks=1:exitcode=99"
    else:
        args = [sdtest.tool("valgrind", "valgrind"), "--quiet", "--leak-check=full",
                "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=99"] + args
    with start("fx-stacks", blocked=6) as fx:
        p = subprocess.run(args + [str(fx.pid)], capture_output=True, text=True, timeout=900,
                           env=env)
        eq(p.returncode, 0, p.stderr[-3000:])
        ok("LeakSanitizer" not in p.stderr and "definitely lost" not in p.stderr,
           p.stderr[-3000:])
        with open(out) as f:
            ok("alpha_inner" in f.read())
        sdtest.assert_running(fx.pid)


def test_sigint_and_sigterm_detach_cleanly():
    d = tempfile.mkdtemp()
    counters = os.path.join(d, "counters")
    interrupted = 0
    with start("fx-signals", counters, "300", blocked=300) as fx:
        # One untimed run tells how long a whole dump takes here: the
        # signals are aimed across it (a fixed delay may fall after the
        # end of a fast dump, or before main() on a slow build).
        t0 = time.time()
        r = sdtest.run(fx.pid)
        eq(r.rc, 0, r.err)
        whole = time.time() - t0
        for sig in (signal.SIGINT, signal.SIGTERM):
            for frac in (0.0, 0.15, 0.3, 0.45, 0.6, 0.8):
                delay = whole * frac
                p = subprocess.Popen([sdtest.binary(), str(fx.pid)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
                time.sleep(delay)
                p.send_signal(sig)
                _, err = p.communicate(timeout=120)
                # A signal that lands before main() installed its handlers
                # (a sanitizer build starts slowly) kills stackdump before
                # it touched anything; after that it must detach and say so.
                ok(p.returncode in (0, 130, -sig), (p.returncode, err))
                if p.returncode == 130:
                    contains(err, "interrupted; every thread was detached")
                    interrupted += 1
                no_thread_stopped(fx.pid)
        eq(read_counters(counters)["signals"], 0)
    ok(interrupted > 0, "no signal landed while a dump was under way")


def test_threads_appearing_and_exiting():
    with start("fx-churn", "2", "2", blocked=3) as fx:
        for i in range(40):
            # half of the rounds freeze one thread at a time
            extra = ["--per-thread"] if i % 2 else []
            r = sdtest.run("--format", "json", *extra, fx.pid)
            j = r.json()
            # 0 or 1 depends on the race (1: a thread went away while we
            # looked); either way the status, the document's "partial" and
            # its threads must agree.
            ok(r.rc in (0, 1), r)
            eq(j["partial"], r.rc == 1, r)
            eq(any(t["status"] != "ok" for t in j["threads"]), j["partial"], r)
            stable = [t for t in j["threads"] if t["name"].startswith("stable-")]
            eq(len(stable), 2)
            for t in stable:
                ok("stable_wait" in [f["function"] for f in t["frames"]], t)
            for t in j["threads"]:
                if t["status"] != "ok":
                    ok(t["error"], t)
            sdtest.assert_running(fx.pid)


def test_process_that_exits_forks_or_execs():
    script = ("i=0; while [ $i -lt 200 ]; do i=$((i+1)); (sleep 0.001 &); "
              "/bin/true; done; exec sleep 5")
    for _ in range(10):
        p = subprocess.Popen(["sh", "-c", script])
        for delay in (0.0, 0.01, 0.05):
            time.sleep(delay)
            r = sdtest.run(p.pid, timeout=60)
            if r.rc == 2:
                ok(r.err.startswith("stackdump: "), r)
            else:
                ok(r.rc in (0, 1), r)
                ok(r.out.startswith("PID %d (" % p.pid), r)
            st = sdtest.state_of(p.pid)
            ok(not any(s in "tT" for s in st.values()), st)
        p.kill()
        p.wait()


def test_stopped_before_stays_stopped_after_many():
    with start("fx-stacks", blocked=6) as fx:
        os.kill(fx.pid, signal.SIGSTOP)
        time.sleep(0.1)
        for _ in range(5):
            r = sdtest.run(fx.pid)
            eq(r.rc, 0, r.err)
            time.sleep(0.05)
            eq(set(sdtest.state_of(fx.pid).values()), {"T"})
        os.kill(fx.pid, signal.SIGCONT)


def thread(j, name):
    for t in j["threads"]:
        if t["name"] == name:
            return t
    raise AssertionError("no thread %r" % name)


def test_hostile_stacks():
    with start("fx-hostile", "100000", blocked=7) as fx:
        r = sdtest.run("--format", "json", fx.pid)
        eq(r.rc, 0, r.err)
        j = r.json()
        g = thread(j, "garbage-sp")
        eq(len(g["frames"]), 1)
        contains(g["unwind_stop"], "stack pointer 0xdead0000 is not mapped")
        s = thread(j, "smashed")
        funcs = [f["function"] for f in s["frames"]]
        ok("smashed_frame" in funcs, funcs)
        eq(s["frames"][-1]["addr"], "0x1234")
        contains(s["unwind_stop"], "outside any executable mapping")
        a = thread(j, "altstack")
        funcs = [f["function"] for f in a["frames"]]
        i = funcs.index("on_altstack_signal")
        eq(funcs[i + 1], "__restore_rt")
        ok("altstack_main" in funcs and funcs[-1] == "clone3", funcs)
        jt = thread(j, "jit")
        funcs = [f["function"] for f in jt["frames"]]
        i = funcs.index("jit_callee")
        eq(funcs[i + 1], None)
        eq(jt["frames"][i + 1]["module"], "[anonymous]")
        eq(funcs[i + 2], "jit_main")
        eq(funcs[-1], "clone3")
        d = thread(j, "deep")
        eq(len(d["frames"]), 256)
        contains(d["unwind_stop"], "max-frames")
        # the escape sequence in a thread name is escaped in text output
        r = sdtest.run(fx.pid)
        contains(r.out, 'Thread %d "evil-\\e[31m"' % fx.tid("evil-\x1b[31m"))
        ok("\x1b" not in r.out, "raw escape in output")


def test_unbounded_recursion_100k():
    with start("fx-hostile", "100000", blocked=7) as fx:
        tid = fx.tid("deep")
        r = sdtest.run("--format", "json", "--max-frames", "0", "--tid", tid, fx.pid)
        eq(r.rc, 0, r.err)
        d = r.json()["threads"][0]
        contains(d["unwind_stop"], "stack window exhausted")
        ok(len(d["frames"]) > 1000, len(d["frames"]))
        r = sdtest.run("--format", "json", "--max-frames", "0", "--stack-bytes", "64M",
                       "--tid", tid, fx.pid)
        d = r.json()["threads"][0]
        eq(d["unwind_stop"], None)
        eq([f["function"] for f in d["frames"]].count("deep_down"), 100001)


def test_writes_nothing():
    """A dump writes no file anywhere: run it in an empty, read-only cwd
    with HOME there too, and compare."""
    d = tempfile.mkdtemp()
    os.chmod(d, 0o555)
    try:
        with start("fx-stacks", blocked=6) as fx:
            p = subprocess.run([sdtest.binary(), str(fx.pid)], cwd=d, capture_output=True,
                               text=True, timeout=120, env=dict(os.environ, HOME=d))
            eq(p.returncode, 0, p.stderr)
        eq(os.listdir(d), [])
    finally:
        os.chmod(d, 0o755)


if __name__ == "__main__":
    sdtest.main(globals())
