#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The perf-events engine of profile and top against real fixtures: both
# engines give the same profile (share of every merged stack, on and off
# CPU) on the profile fixtures; a thread that goes on and off CPU while
# sampled shows both stacks; threads born and exiting during sampling;
# threads asleep get no events until they run, and lose them after a
# rest; lost samples counted and shown; perf_event_open refused by a seccomp
# filter (auto falls back and says why once, --engine perf fails with exit
# 2), and ring buffers past the locked-memory budget (the same); SIGKILL
# of stackdump mid-profile leaves the target running, untraced and holding
# no perf event; record with --engine perf (the saved format names the
# engine; record's default stays ptrace).
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sdtest  # noqa: E402
from recordlib import check_recording, record, tempdir  # noqa: E402
from fixture import path_of, start  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402


def profile_json(pid, *args):
    r = sdtest.run("profile", pid, "--format", "json", "-q", *args)
    eq(r.rc, 0, r.err)
    return r.json()


def shares(doc):
    """{stack (function names, innermost first): (share %, on-CPU share %,
    off-CPU share %)} of a JSON profile; shares of all thread samples."""
    total = doc["thread_samples"]
    out = {}
    for st in doc["stacks"]:
        key = tuple(f["function"] or "?" for f in st["frames"])
        c, on = out.get(key, (0, 0))
        out[key] = (c + st["count"], on + st["on_cpu"])
    return {k: (100.0 * c / total, 100.0 * on / total, 100.0 * (c - on) / total)
            for k, (c, on) in out.items()}


def agree(name, *args, parked=0, blocked=0):
    with start(name, *args, parked=parked, blocked=blocked) as fx:
        a = profile_json(fx.pid, "--engine", "ptrace", "--count", "40", "--rate", "20")
        b = profile_json(fx.pid, "--engine", "perf", "--count", "40", "--rate", "20")
        sdtest.assert_running(fx.pid)
    eq(a["engine"], "ptrace")
    eq(b["engine"], "perf")
    eq(a["samples"], 40)
    eq(b["samples"], 40)
    # Every thread at every tick, with either engine.
    eq(b["thread_samples"], a["thread_samples"], name)
    sa, sb = shares(a), shares(b)
    for key in set(sa) | set(sb):
        x, y = sa.get(key, (0, 0, 0)), sb.get(key, (0, 0, 0))
        for what, i in (("share", 0), ("on-CPU share", 1), ("off-CPU share", 2)):
            ok(abs(x[i] - y[i]) <= 3.0,
               "%s: %s of %s: ptrace %.1f%%, perf %.1f%%" % (name, what, list(key), x[i], y[i]))
    return a, b


def test_engines_agree_hot():
    a, b = agree("fx-hot")
    # The shares themselves: 3 of 5 threads in hot_a, on CPU.
    st = shares(b)
    hot_a = [v for k, v in st.items() if k and k[0] == "hot_a"]
    eq(len(hot_a), 1, st)
    ok(abs(hot_a[0][1] - 60.0) <= 3.0, hot_a)


def test_engines_agree_busy():
    agree("fx-busy", blocked=1)


def test_engines_agree_idle():
    agree("fx-idle", blocked=7)


def test_engines_agree_stacks():
    agree("fx-stacks", blocked=6)


def test_engines_agree_mutex():
    agree("fx-mutex", "normal", "3", parked=3)


def test_phases_on_and_off_cpu():
    # The phaser alternates 300 ms of spinning and 300 ms of sleep: the
    # perf engine must see both, the sleep from context-switch samples
    # taken after the first tick (a thread seen only once would stay in
    # one phase).
    with start("fx-phases") as fx:
        r = sdtest.run("profile", fx.pid, "--engine", "perf", "--format", "json", "-q", "-v",
                       "--count", "60", "--rate", "20")
        eq(r.rc, 0, r.err)
        doc = r.json()
    busy = sleep = sleep_on = 0
    for st in doc["stacks"]:
        if not any(t["name"] == "phaser" for t in st["threads"]):
            continue
        fns = [f["function"] for f in st["frames"]]
        if "phase_busy" in fns:
            ok(st["on_cpu"] == st["count"], "phase_busy off CPU: %r" % st)
            busy += st["count"]
        elif "phase_sleep" in fns:
            eq(fns[-4:], ["phase_sleep", "phaser_main", "start_thread", "clone3"])
            sleep += st["count"]
            sleep_on += st["on_cpu"]
    eq(busy + sleep, 60, "phaser in every tick, in one of its two phases")
    # A tick can catch the phaser on a CPU as it enters or leaves its
    # nanosleep (a task-clock sample at the system call, the stack already
    # in phase_sleep): at most one tick per edge, 10 edges in 3 s.
    ok(sleep_on <= 10, "phase_sleep on CPU in %d of %d ticks" % (sleep_on, sleep))
    ok(15 <= busy <= 45 and 15 <= sleep <= 45,
       "phases: %d busy, %d asleep of 60" % (busy, sleep))
    m = [l for l in r.err.splitlines() if l.startswith("perf: ")]
    eq(len(m), 1, r.err)
    # A starved stackdump (ASan, a loaded CI host) can let a ring fill; the
    # loss must then be the profile's own count, and small beside what the
    # kernel delivered, the ticks still complete (checked above).
    mm = re.search(r"perf: (\d+) task-clock and (\d+) context-switch samples, (\d+) lost", m[0])
    ok(mm, m[0])
    clock, switches, lost = (int(x) for x in mm.groups())
    ok(switches > 0, m[0])
    eq(doc["lost_samples"] <= lost, True, "%d lost in the profile, %d in -v" % (
        doc["lost_samples"], lost))
    ok(lost * 4 <= clock, "most task-clock samples lost: " + m[0])


def interrupt(p, fx):
    """Ctrl-C to profile P (JSON on stdout) of fixture FX: its profile and
    stderr, once it ended well and left FX running."""
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=300)
    eq(p.returncode, 0, err)
    sdtest.assert_running(fx.pid)
    return json.loads(out), err


def test_sleepers_without_events():
    # fx-rest: 40 nappers asleep for good, and a sprinter asleep until
    # SIGUSR1 (blocked in every other thread: main never wakes), then on
    # the CPU for a second, then asleep for good. The
    # perf engine opens events only on what runs: the nappers are captured
    # once (read without a stop) and then only watched for a switch; the
    # sprinter is captured again when it wakes, sampled while it runs, and
    # its events are closed once it has slept two seconds.
    nnap = 40
    with start("fx-rest", nnap, blocked=nnap + 2) as fx:
        p = subprocess.Popen([sdtest.binary(), "profile", str(fx.pid), "--engine", "perf",
                              "--format", "json", "-q", "-v", "--duration", "0", "--rate", "20"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # The nappers' switch-record rings open before the first tick.
        deadline = time.monotonic() + 120
        while sdtest.perf_fds(p.pid) < nnap and time.monotonic() < deadline:
            time.sleep(0.01)
        ok(sdtest.perf_fds(p.pid) >= nnap, "no switch-record rings opened")
        time.sleep(1.0)
        os.kill(fx.pid, signal.SIGUSR1)
        # A second of sprint, then asleep past the two seconds of rest.
        time.sleep(4.5)
        doc, err = interrupt(p, fx)
    phases = {"wait_go": [0, 0], "sprint": [0, 0], "rest": [0, 0]}
    naps = 0
    for st in doc["stacks"]:
        fns = [f["function"] for f in st["frames"]]
        for fn, c in phases.items():
            if fn in fns:
                eq(fns[-4:], [fn, "sprinter_main", "start_thread", "clone3"])
                c[0] += st["count"]
                c[1] += st["on_cpu"]
        if "nap" in fns:
            eq(st["on_cpu"], 0, "a napper on CPU")
            naps += st["count"]
    samples = doc["samples"]
    eq(naps, nnap * samples, "every napper at every tick")
    eq(sum(c[0] for c in phases.values()), samples, "the sprinter in every tick: %r" % phases)
    ok(phases["wait_go"][0] > 0 and phases["rest"][0] > 0, phases)
    # One second on the CPU at 20 Hz: about 20 ticks, all on CPU; on a
    # host so busy that the sprinter gets a twentieth of a CPU it is
    # runnable in sprint for up to a second more before it blocks in rest
    # (seen: 38-40 ticks beside four spinners at nice -10). Far fewer than
    # the 90 ticks a sprint never left would show.
    ok(8 <= phases["sprint"][0] <= 45, "sprint in %d ticks" % phases["sprint"][0])
    eq(phases["sprint"][1], phases["sprint"][0], "sprint ticks off CPU")
    eq(phases["wait_go"][1] + phases["rest"][1], 0, "asleep on CPU")
    m = [l for l in err.splitlines() if l.startswith("perf: ")]
    eq(len(m), 1, err)
    mm = re.search(r"(\d+) stacks captured by ptrace, (\d+) threads followed, \d+ gone, "
                   r"events opened (\d+) times \((\d+) refused\), closed at rest (\d+) times, "
                   r"(\d+) threads unwatched", m[0])
    ok(mm, m[0])
    captured, followed, opened, refused, rested, unwatched = (int(x) for x in mm.groups())
    eq(followed, nnap + 2, m[0])
    # The sprinter's events, once or twice (a second wake within the rest
    # would be a bug of the fixture); never the nappers' or main's.
    ok(1 <= opened <= 2, m[0])
    eq(refused + unwatched, 0, m[0])
    ok(rested >= 1, "the sprinter's events never closed: " + m[0])
    # Each thread captured at the start (and once more where that capture
    # stopped it for registers: the stop moved its ring), the sprinter
    # again when it woke and after its rest: not every napper at every
    # tick (that would be over 40 times as many).
    ok(nnap + 2 <= captured <= 2 * (nnap + 2) + 6, m[0])
    ok(samples >= 60, "only %d samples in 5.5 s" % samples)


def pingpong(engine, fixture="fx-pingpong"):
    """A 4 s profile of FIXTURE (fx-pingpong or its -O2 build) with ENGINE:
    (JSON, stderr of -v), every ping and pong stack checked whole, each
    thread in every tick."""
    with start(fixture, blocked=1) as fx:
        r = sdtest.run("profile", fx.pid, "--engine", engine, "--format", "json", "-q", "-v",
                       "--duration", "4s", "--rate", "20")
        sdtest.assert_running(fx.pid)
    eq(r.rc, 0, r)
    doc = json.loads(r.out)
    shapes = {
        "ping": ({"ping_wait", "ping_send"}, "ping_main"),
        "pong": ({"pong_wait", "pong_send", "pong_nap"}, "pong_main"),
    }
    seen = {"ping": 0, "pong": 0}
    for st in doc["stacks"]:
        fns = [f["function"] for f in st["frames"]]
        for who, (calls, top) in shapes.items():
            if top in fns:
                i = fns.index(top)
                eq(fns[i:], [top, "start_thread", "clone3"], fns)
                # On a CPU in the loop itself, or in one of its calls.
                ok(i == 0 or fns[i - 1] in calls, "a torn %s stack: %r" % (who, fns))
                # Below the fixture's call: libc's, nothing of the other
                # thread's and nothing unnamed (none when on a CPU in the
                # loop itself: fns[:-1] would be its own frames).
                ok(all(f and "ping" not in f and "pong" not in f for f in fns[:max(i - 1, 0)]),
                   fns)
                seen[who] += st["count"]
    samples = doc["samples"]
    # Each thread in every tick (one found on a CPU is stopped once for
    # it, as a sleeper that woke is).
    eq(seen, {"ping": samples, "pong": samples}, engine)
    eq(doc["thread_samples"], 3 * samples, engine)
    ok(samples >= 40, "only %d samples in 4 s" % samples)
    return doc, r.err


def hot_counts(err):
    """The -v perf line's hot-thread counts: (hot threads, read asleep,
    still in that sleep, from the latest task-clock sample, stopped)."""
    m = [l for l in err.splitlines() if l.startswith("perf: ")]
    eq(len(m), 1, err)
    mm = re.search(r"(\d+) threads switching too often for a switch event \(hot: at a tick, "
                   r"(\d+) read asleep without a stop, (\d+) still in that sleep, (\d+) from "
                   r"their latest task-clock sample, (\d+) stopped;", m[0])
    ok(mm, m[0])
    return tuple(int(x) for x in mm.groups())


def test_switching_threads_have_no_events():
    # fx-pingpong: ping and pong block and wake tens of thousands of times
    # a second, asleep most of the time. A switch event on such a thread
    # costs it at every switch (a sample written, its stack copied): the
    # perf engine closes it and keeps the task clock alone. Each tick reads
    # the two asleep without a stop (their clock standing still is the
    # proof), or shows the latest task-clock sample of one on a CPU. Built
    # with frame pointers (as here), their sleeps need an rbp /proc does
    # not give: the first sleep at each call site is stopped for it, the
    # later ones take it from the offset learned there (fpsite.c), so
    # nearly no stop is left. The ptrace engine proves them by schedstat
    # in place of their rings of switch records, and unwinds their sleeps
    # the same way. pingpong checks every stack whole.
    doc, err = pingpong("perf")
    hot = hot_counts(err)
    eq(hot[0], 2, "ping's and pong's switch events were not closed: " + err)
    ticks = doc["samples"] * 2
    ok(hot[1] + hot[2] >= ticks // 4, "few frame-pointer sleeps read without a stop: %r of %d"
       % (hot, ticks))
    # A fifth: the nofp build's tenth, plus the stops that learn each call
    # site (two sightings of each of the five) and, on a loaded host, the
    # wakes with no recent clock sample (22 of 160 seen under ASan beside
    # a CPU burner); before the call sites, 62 of about 160.
    ok(hot[4] <= ticks // 5, "hot threads stopped at many ticks: %r of %d" % (hot, ticks))
    doc, err = pingpong("ptrace")
    contains(err, "sleepers proven by context-switch records, and schedstat for threads "
             "that switch too often for them")
    m = re.search(r"([\d.]+) stopped for registers, ([\d.]+) with rbp from the call site", err)
    ok(m, err)
    ok(float(m.group(2)) > 0, "no sleep unwound with rbp from its call site: " + err)


def test_busy_switchers_never_get_a_ring():
    # A ring of switch records costs its thread a record at every switch,
    # and ping and pong switch tens of thousands of times a second: a
    # thread scheduled over 1000 times a second over its life (a second of
    # it at least: schedstat's count, stat's start) gets no ring at all,
    # where it used to pay for one until a second of it had been measured.
    # main, asleep in pthread_join, still gets its ring (the control).
    # Seen by strace from outside: the rings' perf_event_open calls.
    with start("fx-pingpong", blocked=1) as fx:
        byname = fx.tids_by_name()
        busy = byname["ping"] + byname["pong"]
        time.sleep(1.5)  # a life of over a second
        p = sdtest.strace([], "perf_event_open", "profile", fx.pid, "--engine", "ptrace",
                          "--count", "10", "--rate", "20", "-f", "folded", "-q", "-v")
        sdtest.assert_running(fx.pid)
    eq(p.returncode, 0, p.stderr[-2000:])
    rings = [int(m.group(1)) for m in re.finditer(
        r"perf_event_open\(\{[^\n]*PERF_COUNT_SW_CONTEXT_SWITCHES[^\n]*\}, (\d+), -1, -1, "
        r"[^\n]*\) = \d+", p.stderr)]
    eq([t for t in rings if t in busy], [], "rings opened for ping and pong (%r)" % busy)
    ok(fx.pid in rings, "no ring for main either: %r\n%s" % (rings, p.stderr[-2000:]))
    contains(p.stderr, "and schedstat for threads that switch too often for them")
    # Both still at every tick, whole (the folded stacks).
    for who in ("ping_main", "pong_main"):
        n = sum(int(l.rsplit(" ", 1)[1]) for l in p.stdout.splitlines() if who in l)
        eq(n, 10, "%s in %s" % (who, p.stdout))


def cpu_clock_counts(err):
    """The -v perf line's per-CPU clock: (hot from their first events,
    CPUs, samples of hot threads taken, older ones of theirs, others
    passed over)."""
    m = re.search(r"; (\d+) hot from their first events\); per-CPU clock on (\d+) CPUs: "
                  r"(\d+) samples of hot threads taken, (\d+) older ones of theirs and "
                  r"(\d+) of anything else passed over$", err, re.M)
    ok(m, err)
    return tuple(int(x) for x in m.groups())


def test_hot_threads_sampled_by_the_cpu_clock():
    # A task clock that samples is a timer the kernel starts and cancels
    # at each switch of its thread: ping and pong switch tens of thousands
    # of times a second, and on a loaded server that timer was the perf
    # engine's cost (bench/README.md, run 12). Threads that switched that
    # often all their life (over a second of it) get no event of their own
    # (schedstat proves their sleeps); their samples on a CPU come from one
    # clock per CPU, whose timer runs whatever switches. Seen from outside
    # by strace: the events opened.
    # The control, STACKDUMP_PERF_CPU_CLOCK=off (as without root): no clock
    # per CPU, and the two sampled by their own task clocks again.
    sdtest.need_root("a clock event per CPU")
    with start("fx-pingpong", blocked=1) as fx:
        byname = fx.tids_by_name()
        busy = byname["ping"] + byname["pong"]
        time.sleep(1.5)  # a life of over a second
        args = ("profile", fx.pid, "--engine", "perf", "--count", "40", "--rate", "20",
                "-f", "folded", "-q", "-v")
        p = sdtest.strace([], "perf_event_open", *args)
        sdtest.assert_running(fx.pid)
        os.environ["STACKDUMP_PERF_CPU_CLOCK"] = "off"
        try:
            off = sdtest.strace([], "perf_event_open", *args)
        finally:
            del os.environ["STACKDUMP_PERF_CPU_CLOCK"]
        sdtest.assert_running(fx.pid)
    eq(off.returncode, 0, off.stderr[-2000:])
    notcpu = re.findall(r"perf_event_open\(\{([^\n]*)\}, (-?\d+), (-?\d+), -1, [^\n]*\) = \d+",
                        off.stderr)
    eq([a for a, pid, _ in notcpu if "PERF_COUNT_SW_CPU_CLOCK" in a], [], off.stderr[-2000:])
    ok(any("PERF_COUNT_SW_TASK_CLOCK" in a and "sample_period=0" not in a
           for a, pid, _ in notcpu if int(pid) in busy), off.stderr[-2000:])
    eq(cpu_clock_counts(off.stderr)[:3], (0, 0, 0), off.stderr[-2000:])
    eq(p.returncode, 0, p.stderr[-2000:])
    opened = re.findall(r"perf_event_open\(\{([^\n]*)\}, (-?\d+), (-?\d+), -1, [^\n]*\) = \d+",
                        p.stderr)
    cpus = [int(c) for attr, pid, c in opened
            if "PERF_COUNT_SW_CPU_CLOCK" in attr and pid == "-1"]
    eq(sorted(cpus), list(range(os.cpu_count())), "one clock per CPU: " + p.stderr[-2000:])
    eq([(pid, attr) for attr, pid, _ in opened if int(pid) in busy], [],
       "events of ping's or pong's own")
    ok(any(int(pid) == fx.pid for attr, pid, _ in opened), "no event for main either")
    at_start, ncpu, samples, _, _ = cpu_clock_counts(p.stderr)
    eq(at_start, 2, p.stderr[-2000:])
    eq(ncpu, os.cpu_count(), p.stderr[-2000:])
    ok(samples > 0, "no sample of ping or pong from the CPUs' clocks: " + p.stderr[-2000:])
    hot = hot_counts(p.stderr)
    ok(hot[3] > 0, "no tick showed a clock sample: %r" % (hot,))
    # Both at every tick, whole: the fixture's loop under its thread's
    # start, and nothing of the other thread (the samples are told apart
    # by their thread, on whichever CPU they ran).
    for out in (p.stdout, off.stdout):
        for who, other in (("ping_main", "pong_"), ("pong_main", "ping_")):
            lines = [l for l in out.splitlines() if who in l]
            eq(sum(int(l.rsplit(" ", 1)[1]) for l in lines), 40, "%s in %s" % (who, out))
            for l in lines:
                ok(other not in l and "start_thread;" + who in l, "a torn stack: " + l)


def test_cpu_clock_follows_the_affinity():
    # The per-CPU clock is opened only on the CPUs the target may run on
    # (its leader's affinity): here the fixture's leader is pinned to the
    # last CPU, and ping and pong (pinned there too) still get their
    # samples from that CPU's clock, whole.
    sdtest.need_root("a clock event per CPU")
    sdtest.need(os.cpu_count() >= 2, "two CPUs, to pin the fixture to one")
    last = os.cpu_count() - 1
    with start("fx-pingpong", blocked=1) as fx:
        for tids in fx.tids_by_name().values():
            for t in tids:
                os.sched_setaffinity(t, {last})
        time.sleep(1.5)  # a life of over a second
        p = sdtest.strace([], "perf_event_open", "profile", fx.pid, "--engine", "perf",
                          "--count", "20", "--rate", "20", "-f", "folded", "-q", "-v")
        sdtest.assert_running(fx.pid)
    eq(p.returncode, 0, p.stderr[-2000:])
    cpus = [int(c) for c in re.findall(
        r"perf_event_open\(\{[^\n]*PERF_COUNT_SW_CPU_CLOCK[^\n]*\}, -1, (\d+), -1, [^\n]*\) = \d+",
        p.stderr)]
    eq(cpus, [last], p.stderr[-2000:])
    at_start, ncpu, samples, _, _ = cpu_clock_counts(p.stderr)
    eq((at_start, ncpu), (2, 1), p.stderr[-2000:])
    ok(samples > 0, "no sample from the pinned CPU's clock: " + p.stderr[-2000:])
    for who in ("ping_main", "pong_main"):
        lines = [l for l in p.stdout.splitlines() if who in l]
        eq(sum(int(l.rsplit(" ", 1)[1]) for l in lines), 20, "%s in %s" % (who, p.stdout))


def test_switching_threads_read_without_a_stop():
    # The same two threads built as a server is (-O2, no frame pointers):
    # their sleeps unwind from what /proc gives, so the perf engine's ticks
    # read them asleep without stopping them, or take their latest
    # task-clock sample while they are on a CPU. Nearly no stop is left
    # (one where a woken thread has no recent sample), no pause is felt,
    # and every stack is whole (pingpong checks them).
    doc, err = pingpong("perf", "fx-pingpong-nofp")
    hot = hot_counts(err)
    eq(hot[0], 2, err)
    ticks = doc["samples"] * 2
    ok(hot[1] + hot[2] >= ticks // 4, "few sleeps read without a stop: %r of %d" % (hot, ticks))
    ok(hot[4] <= ticks // 10, "hot threads stopped at many ticks: %r of %d" % (hot, ticks))
    # Hot from their first second on (the switch rate is measured over it).
    ok(hot[1] + hot[2] + hot[3] + hot[4] >= ticks // 2, "ticks without a hot reading: %r" % (hot,))


def auto_engine(name, blocked=0, env=None):
    """The engine auto picks for fixture NAME, and its -v line."""
    with start(name, blocked=blocked) as fx:
        r = sdtest.run("profile", fx.pid, "--format", "json", "-q", "-v", "--count", "5",
                       "--rate", "20", env=env)
        sdtest.assert_running(fx.pid)
    eq(r.rc, 0, r)
    lines = [l for l in r.err.splitlines() if l.startswith("engine: ")]
    eq(len(lines), 1, r.err)
    return json.loads(r.out)["engine"], lines[0]


def test_auto_takes_ptrace_for_busy_switchers():
    # A server's threads in and out of their waits pay for per-thread perf
    # events at every switch: auto counts their waits (voluntary switches)
    # for 0.1 s, and over 2000 a second (fx-pingpong's threads wait tens
    # of thousands of times a second, as MariaDB's under sysbench do) it
    # takes perf only when the per-CPU clock samples them (root), ptrace
    # otherwise (here with the per-CPU clock turned off); perf for a target
    # that computes (fx-busy: one thread spins, preempted however often
    # the host's load makes it, the other sleeps). -v says why.
    def busy(want, why, env=None):
        engine, line = auto_engine("fx-pingpong", blocked=1, env=env)
        eq(engine, want, line)
        m = re.fullmatch(r"engine: %s \(auto: the threads go into a wait (\d+) times a second; "
                         r"over 2000, %s\)" % (want, why), line)
        ok(m, line)
        ok(int(m.group(1)) >= 2000, line)
    if not sdtest.UNPRIVILEGED:
        busy("perf", "the per-CPU clock samples them without a timer at each switch")
    busy("ptrace", "perf events would cost them at every switch, and no per-CPU clock samples "
         "them", env={"STACKDUMP_PERF_CPU_CLOCK": "off"})
    engine, line = auto_engine("fx-busy", blocked=1)
    eq(engine, "perf", line)
    m = re.fullmatch(r"engine: perf \(auto: the threads go into a wait (\d+) times a second, "
                     r"under 2000\)", line)
    ok(m, line)


def test_thread_born_and_exiting():
    # fx-phases starts "late" on SIGUSR1; it spins a second and exits. Sent
    # once the profile runs, the new thread must be followed (its own
    # samples, on CPU in late_spin) and dropped when gone. The profile runs
    # until interrupted, after the late thread is gone: however slowly the
    # host lets stackdump start, the thread's whole life is inside it.
    with start("fx-phases") as fx:
        p = subprocess.Popen([sdtest.binary(), "profile", str(fx.pid), "--engine", "perf",
                              "--format", "json", "-q", "-v", "--duration", "0", "--rate", "20"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        # Each thread followed: a ring of switch records while it
        # sleeps, two events once it runs.
        while sdtest.perf_fds(p.pid) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        ok(sdtest.perf_fds(p.pid) >= 2, "no perf events opened")
        time.sleep(0.5)
        os.kill(fx.pid, signal.SIGUSR1)
        task = "/proc/%d/task" % fx.pid
        seen = False
        while time.monotonic() < deadline:
            n_tasks = len(os.listdir(task))
            seen = seen or n_tasks == 3
            if seen and n_tasks == 2:
                break
            time.sleep(0.01)
        ok(seen and len(os.listdir(task)) == 2, "the late thread did not come and go")
        time.sleep(0.5)
        doc, err = interrupt(p, fx)
    # By stack, not by name: thread names come from a cache read once a
    # second, and the new thread names itself after it starts.
    late = [st for st in doc["stacks"]
            if any(f["function"] == "late_main" for f in st["frames"])]
    n = sum(st["count"] for st in late)
    # One second of life at 20 Hz: about 20 ticks.
    ok(8 <= n <= 30, "late thread in %d ticks" % n)
    for st in late:
        eq([f["function"] for f in st["frames"]][-4:],
           ["late_spin", "late_main", "start_thread", "clone3"])
        eq(st["on_cpu"], st["count"])
    # The phaser and main in every tick, before and after; the rest is the
    # late thread: in late_main, or (a tick or two on a loaded host) caught
    # being born or on its way out, in neither main's nor the phaser's code.
    def fns(st):
        return {f["function"] for f in st["frames"]}
    edge = [st for st in doc["stacks"] if st not in late and
            not fns(st) & {"main", "phaser_main"}]
    n_edge = sum(st["count"] for st in edge)
    ok(n_edge <= 2, "late thread outside late_main in %d ticks: %r" % (n_edge, edge))
    eq(doc["thread_samples"], 2 * doc["samples"] + n + n_edge)
    m = [l for l in err.splitlines() if l.startswith("perf: ")]
    eq(len(m), 1, err)
    contains(m[0], " 3 threads followed, 1 gone")


def test_threads_churning():
    # fx-churn creates and joins short-lived threads all the time: the perf
    # engine opens events on each new one and drops the ones gone; the
    # stable threads are in every tick.
    with start("fx-churn", 2, 2) as fx:
        r = sdtest.run("profile", fx.pid, "--engine", "perf", "--format", "json", "-q", "-v",
                       "--count", "40", "--rate", "20")
        eq(r.rc, 0, r.err)
        doc = r.json()
        sdtest.assert_running(fx.pid)
    eq(doc["samples"], 40)
    stable = [st for st in doc["stacks"]
              if any(t["name"].startswith("stable-") for t in st["threads"])]
    eq(sum(st["count"] for st in stable), 80)
    for st in stable:
        eq([f["function"] for f in st["frames"]][-4:],
           ["stable_wait", "stable_main", "start_thread", "clone3"])
    # The two spawners (the threads seen in spawn_loop) in every tick; a
    # switch sample caught where no unwind info covers the pc may end its
    # stack early now and then.
    in_loop = [st for st in doc["stacks"]
               if any(f["function"] == "spawn_loop" for f in st["frames"])]
    tids = {t["tid"] for st in in_loop for t in st["threads"]}
    eq(len(tids), 2, tids)
    per_tid = sum(t["count"] for st in doc["stacks"] for t in st["threads"] if t["tid"] in tids)
    eq(per_tid, 80)
    ok(sum(st["count"] for st in in_loop) >= 76, "spawn_loop in fewer than 95% of the ticks")
    m = [l for l in r.err.splitlines() if l.startswith("perf: ")][0]
    opened = int(m.split(" threads followed")[0].rsplit(" ", 1)[1])
    closed = int(m.split(" gone")[0].rsplit(" ", 1)[1])
    ok(opened > 5 + 10, "only %d threads followed: %s" % (opened, m))
    ok(closed > 10, "only %d threads dropped: %s" % (closed, m))
    # Threads born during sampling were sampled: an ephemeral stack.
    eph = [st for st in doc["stacks"]
           if any(f["function"] == "ephemeral_main" for f in st["frames"])]
    for st in eph:
        eq([f["function"] for f in st["frames"]][-3:],
           ["ephemeral_main", "start_thread", "clone3"])


def test_lost_samples_counted():
    # A ring of one page cannot hold a sample with 16 KiB of stack: the
    # kernel drops every task-clock sample, and the profile says so while
    # still counting every thread at every tick. A spinner that is switched
    # out has a fresh stack from its switch sample all the same; hot-b runs
    # at real-time priority alone on a CPU, so nothing switches it out (but
    # the kernel's real-time throttling, 5% of a second), and its ticks
    # have no sample of their own: they count its stack of before.
    cpus = sorted(os.sched_getaffinity(0))
    ok(len(cpus) >= 2, "needs two CPUs (one for the real-time spinner), has %s" % cpus)
    with start("fx-hot") as fx:
        spinner = fx.tid("hot-b")
        os.sched_setaffinity(spinner, {cpus[-1]})
        os.sched_setscheduler(spinner, os.SCHED_FIFO, os.sched_param(1))
        try:
            r = sdtest.run("profile", fx.pid, "--engine", "perf", "--perf-buffer", "4k",
                           "--count", "20", "--rate", "20", "-q", "-v")
            eq(r.rc, 0, r.err)
            # Ticks counted hot-b's stack of before for want of a sample:
            # said, with the drops, as often as -v counts them.
            m = sdtest.matches(r.out, r"; ([1-9][0-9]*) thread stacks? counted again from an "
                                      r"earlier tick for want of a sample \([1-9][0-9]* lost by "
                                      r"the kernel: ring buffer full\)")
            stale = int(m.group(1))
            contains(r.err, "(%d thread stacks counted again for want of one)" % stale)
            # (Not at every tick: ticks a loaded host delays come in a
            # burst, with no drop between them.)
            print("  stacks counted again at %d ticks" % stale)
            r = sdtest.run("profile", fx.pid, "--engine", "perf", "--perf-buffer", "4k",
                           "--count", "20", "--rate", "20", "-q", "-v", "--format", "json")
            eq(r.rc, 0, r.err)
            doc = r.json()
        finally:
            os.sched_setscheduler(spinner, os.SCHED_OTHER, os.sched_param(0))
    ok(doc["lost_samples"] > 0, doc["lost_samples"])
    eq(doc["thread_samples"], 5 * 20)
    # Not one task-clock sample fit; all of them are counted as lost.
    m = [l for l in r.err.splitlines() if l.startswith("perf: ")]
    eq(len(m), 1, r.err)
    contains(m[0], "perf: 0 task-clock and ")
    # -v reads the counters a moment later: as many or more by then.
    lost_v = int(re.search(r" (\d+) lost \(", m[0]).group(1))
    ok(lost_v >= doc["lost_samples"], "%d lost in -v, %d in the profile" % (
        lost_v, doc["lost_samples"]))


def noperf(errno_name, *args):
    return subprocess.run([path_of("fx-noperf"), errno_name, sdtest.binary()] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=120, env=dict(os.environ, NO_COLOR="1"))


def test_refused_perf_falls_back():
    with start("fx-hot") as fx:
        for e in ("EPERM", "EACCES", "ENOSYS"):
            r = noperf(e, "profile", str(fx.pid), "--count", "5", "--rate", "20",
                       "--format", "json", "-q")
            eq(r.returncode, 0, r.stderr)
            eq(json.loads(r.stdout)["engine"], "ptrace")
            eq(r.stderr.count("perf engine not available, sampling with ptrace"), 1, r.stderr)
            if e == "ENOSYS":
                contains(r.stderr, "the kernel has no perf events")
            else:
                contains(r.stderr, "perf_event_paranoid")
                contains(r.stderr, "seccomp")
            # Two processes: still said once.
            if e == "EPERM":
                with start("fx-busy", blocked=1) as fx2:
                    r = noperf(e, "profile", str(fx.pid), str(fx2.pid), "--count", "3",
                               "-q")
                eq(r.returncode, 0, r.stderr)
                eq(r.stderr.count("perf engine not available"), 1, r.stderr)
                contains(r.stdout, "engine ptrace")
        r = noperf("EPERM", "profile", str(fx.pid), "--engine", "perf", "--count", "3", "-q")
        eq(r.returncode, 2, r.stderr)
        contains(r.stderr, "perf_event_open refused for process %d" % fx.pid)
        eq(r.stdout, "")
        r = noperf("EACCES", "top", str(fx.pid), "--engine", "perf", "--count", "1")
        eq(r.returncode, 2, r.stderr)
        contains(r.stderr, "perf_event_open refused")
        r = noperf("EACCES", "top", str(fx.pid), "--count", "1", "--refresh", "100ms")
        eq(r.returncode, 0, r.stderr)
        contains(r.stdout, "engine ptrace")
        eq(r.stderr.count("perf engine not available"), 1, r.stderr)
        sdtest.assert_running(fx.pid)


def locked_memory_capped(*args):
    """stackdump ARGS without CAP_IPC_LOCK and with no locked memory beyond
    the kernel's perf_event_mlock_kb budget (RLIMIT_MEMLOCK 0)."""
    import resource

    def cap():
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (0, 0))
    return subprocess.run(["setpriv", "--inh-caps=-ipc_lock", "--bounding-set=-ipc_lock",
                           sdtest.binary()] + [str(a) for a in args],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=120, env=dict(os.environ, NO_COLOR="1"), preexec_fn=cap)


def test_locked_memory_refused():
    # Ring buffers are locked memory: a 16 MiB one is past any user's
    # perf_event_mlock_kb budget (516 KiB per CPU by default) with nothing
    # beyond it. Refused at the start, said as a mapping refusal (not as
    # perf_event_open's), and auto samples with ptrace instead.
    with start("fx-hot") as fx:
        r = locked_memory_capped("profile", fx.pid, "--engine", "perf", "--perf-buffer", "16m",
                                 "--count", "2", "-q")
        eq(r.returncode, 2, r.stderr)
        contains(r.stderr, "perf ring buffers for process %d refused" % fx.pid)
        contains(r.stderr, "perf_event_mlock_kb")
        contains(r.stderr, "CAP_IPC_LOCK")
        eq(r.stdout, "")
        r = locked_memory_capped("profile", fx.pid, "--perf-buffer", "16m", "--count", "3",
                                 "--format", "json", "-q")
        eq(r.returncode, 0, r.stderr)
        eq(json.loads(r.stdout)["engine"], "ptrace")
        eq(r.stderr.count("perf engine not available, sampling with ptrace"), 1, r.stderr)
        sdtest.assert_running(fx.pid)


def test_engine_usage():
    with start("fx-hot") as fx:
        r = sdtest.run("profile", fx.pid, "--engine", "dtrace", "-c", "1")
        eq(r.rc, 64)
        contains(r.err, "--engine: dtrace")
        r = sdtest.run("profile", fx.pid, "--engine", "perf", "--locks", "-c", "1")
        eq(r.rc, 64)
        contains(r.err, "--locks needs --engine ptrace")
        r = sdtest.run("profile", fx.pid, "--perf-buffer", "1k", "-c", "1")
        eq(r.rc, 64)
        contains(r.err, "invalid --perf-buffer: 1k")
        # auto with --locks samples with ptrace (lock words need the stop).
        doc = profile_json(fx.pid, "--locks", "-c", "2")
        eq(doc["engine"], "ptrace")
        # The default is perf here (root, no filter), shown in text and -v.
        r = sdtest.run("profile", fx.pid, "-c", "3", "-q", "-v")
        eq(r.rc, 0, r.err)
        contains(r.out.splitlines()[0], ", engine perf")
        contains(r.err, "engine: perf (auto: the threads go into a wait ")
        r = sdtest.run("top", fx.pid, "--count", "1", "--refresh", "100ms")
        eq(r.rc, 0, r.err)
        contains(r.out, "engine perf")


def test_saved_profile_keeps_engine():
    with start("fx-hot") as fx:
        doc = profile_json(fx.pid, "--engine", "perf", "-c", "3")
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "sd-perf-%d.json" % os.getpid())
    try:
        with open(path, "w") as f:
            json.dump(doc, f)
        r = sdtest.run("diff", path, path, "--format", "json")
        eq(r.rc, 0, r.err)
    finally:
        os.unlink(path)


def test_sigkill_leaves_nothing():
    with start("fx-hot") as fx:
        p = subprocess.Popen([sdtest.binary(), "profile", str(fx.pid), "--engine", "perf",
                              "--duration", "0", "-q", "-o", os.devnull],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        # Two events on each of the four hot threads, a ring of switch
        # records on main, which sleeps.
        while sdtest.perf_fds(p.pid) < 9 and time.monotonic() < deadline:
            ok(p.poll() is None, "profile exited early")
            time.sleep(0.01)
        ok(sdtest.perf_fds(p.pid) >= 9, "no perf events opened")
        time.sleep(0.5)  # ticks under way
        p.kill()
        p.wait(timeout=60)
        eq(p.returncode, -signal.SIGKILL)
        # No thread stopped or traced, no perf descriptor in the target.
        sdtest.assert_running(fx.pid)
        for tid in os.listdir("/proc/%d/task" % fx.pid):
            with open("/proc/%d/task/%s/status" % (fx.pid, tid)) as f:
                contains(f.read(), "\nTracerPid:\t0\n")
        eq(sdtest.perf_fds(fx.pid), 0)

        # Still running: the hot threads keep using CPU.
        def cpu():
            with open("/proc/%d/stat" % fx.pid) as f:
                v = f.read().rsplit(")", 1)[1].split()
            return int(v[11]) + int(v[12])
        c0 = cpu()
        deadline = time.monotonic() + 60
        while cpu() == c0 and time.monotonic() < deadline:
            time.sleep(0.05)
        ok(cpu() > c0, "target stopped using CPU")
        # And it can be sampled again at once.
        doc = profile_json(fx.pid, "--engine", "perf", "-c", "2")
        eq(doc["thread_samples"], 10)


def test_nothing_watches_while_the_profile_is_written():
    # Sampling is over before the output is: the events, rings and open
    # /proc files are closed first. The output goes to a FIFO whose pipe
    # holds one page and is not read until stackdump blocks writing it;
    # then stackdump holds no perf event (it held some while sampling).
    import fcntl
    for engine in ("perf", "ptrace"):
        d = tempdir("written")
        with start("fx-hot") as fx:
            # A pipe handed over as /dev/fd/N (a FIFO found at a name is
            # refused: anyone may have planted it).
            rfd, wfd = os.pipe()
            os.set_blocking(rfd, False)
            fcntl.fcntl(rfd, 1031, 4096)  # F_SETPIPE_SZ: one page
            p = subprocess.Popen([sdtest.binary(), "profile", str(fx.pid), "--engine", engine,
                                  "--count", "20", "--rate", "20", "--format", "json",
                                  "-o", "/dev/fd/%d" % wfd], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True, pass_fds=(wfd,))
            os.close(wfd)
            most = 0
            deadline = time.monotonic() + 120
            blocked = False
            while time.monotonic() < deadline and p.poll() is None:
                try:
                    with open("/proc/%d/syscall" % p.pid) as f:
                        sc = f.read().split()
                except OSError:
                    break
                n = sdtest.perf_fds(p.pid)
                if sc and sc[0] == "1":  # write(2), blocked on the full pipe
                    blocked = True
                    eq(n, 0, "%s: perf events open while the profile is written" % engine)
                    break
                most = max(most, n)
                time.sleep(0.005)
            ok(blocked, "%s: never blocked writing the profile" % engine)
            # perf: two events a thread; ptrace: the switch-record ring
            # proving main asleep.
            ok(most >= (5 if engine == "perf" else 1),
               "%s: no perf event seen while sampling (%d)" % (engine, most))
            os.set_blocking(rfd, True)
            data = b""
            while True:
                chunk = os.read(rfd, 65536)
                if not chunk:
                    break
                data += chunk
            os.close(rfd)
            _, err = p.communicate(timeout=120)
            eq(p.returncode, 0, err)
            eq(json.loads(data)["samples"], 20)
            eq(sdtest.perf_fds(fx.pid), 0)


def test_record_engines():
    d = tempdir("perf")
    with start("fx-busy", blocked=1) as fx:
        r = record(fx.pid, "--every", "100ms", "--count", "6", "--engine", "perf",
                   "--out", d)
        eq(r.rc, 0, r.err)
        sdtest.assert_running(fx.pid)
    snaps = check_recording(d)
    eq(len(snaps), 6)
    for s in snaps:
        eq(s["engine"], "perf")
        eq(len(s["threads"]), 3)
        by = {t["name"]: t for t in s["threads"]}
        # Symbolized as record's snapshots always are.
        eq([f["function"] for f in by["spinner"]["frames"]][:2], ["spin_hot", "spinner_main"])
        ok(any(f["function"] == "sleep_cold" for f in by["sleeper"]["frames"]),
           by["sleeper"]["frames"])
    d2 = tempdir("ptrace")
    with start("fx-busy", blocked=1) as fx:
        r = record(fx.pid, "--every", "100ms", "--count", "2", "--out", d2)
        eq(r.rc, 0, r.err)
    for s in check_recording(d2):
        eq(s["engine"], "ptrace")
    d3 = tempdir("noperf")
    with start("fx-busy", blocked=1) as fx:
        r = noperf("EPERM", "record", str(fx.pid), "--every", "100ms", "--count", "2",
                   "--engine", "perf", "--out", d3)
        eq(r.returncode, 2, r.stderr)
        contains(r.stderr, "perf_event_open refused")


if __name__ == "__main__":
    sdtest.main(globals())
