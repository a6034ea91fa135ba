# SPDX-License-Identifier: MIT
# The capture kinds against live fixtures: sleeping threads are read without
# a stop and running ones frozen; an unwind that needs a register /proc does
# not give stops that thread once; samples reuse threads that did not run;
# a thread in D is never interrupted and never left in a ptrace stop; a
# thread that did not stop in time is detached when it does; a saturated
# host; lock views and profiles equal to the all-frozen mode's; a target whose
# /proc/TID/syscall files cannot be read is frozen whole, said once.
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
from fixture import available, start, wait_state  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402

FROZEN = {"STACKDUMP_CAPTURE": "freeze"}


def dump_json(pid, *extra, env=None):
    r = sdtest.run("dump", "--format", "json", *extra, pid, env=env)
    eq(r.rc, 0, "dump exit code: %s" % r.err)
    sdtest.assert_running(pid)
    return r.json()


def names(th):
    return [f["function"] for f in th["frames"]]


def by_name(doc):
    out = {}
    for th in doc["threads"]:
        out.setdefault(th["name"], []).append(th)
    return out


def check_pool(doc, nsleep, nspin, depth=20):
    g = by_name(doc)
    sleepers = [t for n, ts in g.items() if n.startswith("sleeper-") for t in ts]
    spinners = [t for n, ts in g.items() if n.startswith("spinner-") for t in ts]
    eq(len(sleepers), nsleep)
    eq(len(spinners), nspin)
    tm = doc["timings"]
    # A sleeper is read without a stop; only one whose scheduler counters
    # moved under the stop for registers (a loaded host can schedule it
    # in twice) is frozen and read again, and counted as retried.
    again = 0
    for t in sleepers:
        ok(t["capture"] in ("asleep", "frozen"), "sleeper %d: %r" % (t["tid"], t["capture"]))
        again += t["capture"] == "frozen"
        eq(t["status"], "ok")
        fr = names(t)
        eq(fr.count("pool_chain"), depth + 1, "sleeper %d: %r" % (t["tid"], fr))
        ok("pool_leaf" in fr and fr[-3:-1] == ["sleeper_main", "start_thread"] and
           fr[-1].endswith("clone3"), "sleeper %d cut short: %r" % (t["tid"], fr))
    for t in spinners:
        eq(t["capture"], "frozen", "spinner %d" % t["tid"])
        fr = names(t)
        ok(("spin_big" in fr or "spin_small" in fr) and "spinner_main" in fr,
           "spinner %d: %r" % (t["tid"], fr))
    ok(again <= tm["retried"], "%d sleepers frozen, %d retried" % (again, tm["retried"]))
    eq(tm["asleep"] + tm["frozen"] + tm["reused"], len(doc["threads"]))
    ok(tm["frozen"] >= nspin, "timings: %r" % tm)
    ok(tm["asleep"] >= nsleep - again, "timings: %r" % tm)
    return tm


def test_pool_sleepers_read_without_stopping():
    # Without frame pointers every unwind completes from SP and PC alone.
    with start("fx-idlepool-nofp", 100, 2, parked=100) as fx:
        before = fx.threads()
        doc = dump_json(fx.pid)
        tm = check_pool(doc, 100, 2)
        eq(tm["regstops"], 0, "timings: %r" % tm)
        eq(tm["retried"], 0, "timings: %r" % tm)
        # A thread read without a stop was never interrupted: the futex
        # wait of each sleeper goes on (no restart_syscall).
        after = fx.threads()
        for tid, t in before.items():
            if t.name.startswith("sleeper-"):
                eq(after[tid].syscall, 202, "sleeper %d was interrupted" % tid)


def test_frame_pointer_unwind_stops_once_for_registers():
    # With frame pointers, pool_chain's CFA is rbp-based and the libc
    # syscall wrapper saves no rbp: /proc's SP and PC are not enough, each
    # sleeper is stopped once, and its unwind is complete.
    with start("fx-idlepool", 20, 1, parked=20) as fx:
        doc = dump_json(fx.pid, "-v")
        tm = check_pool(doc, 20, 1)
        ok(tm["regstops"] >= 20, "timings: %r" % tm)
        r = sdtest.run("-v", fx.pid)
        eq(r.rc, 0, r.err)
        sdtest.matches(r.out, r"^  threads: \d+ frozen, \d+ read without stopping, 0 reused, "
                       r"\d+ retried, \d+ stopped for registers, 0 with rbp from the call "
                       r"site$")


def test_frame_pointer_sleepers_from_the_call_site_match_gdb():
    # In the shell the target's unwinder lives on between dumps: the first
    # dump stops each frame-pointer sleeper once for its rbp and learns the
    # offset at every call site of its chain; the second reads them all
    # without a stop, rbp from the call site (fpsite.c). gdb is the oracle:
    # each such sleeper's frames in the fixture's source, function and
    # line, must be gdb's, with the chain whole.
    import test_frames
    nsleep = 8
    with start("fx-idlepool", nsleep, 1, parked=nsleep) as fx:
        r = sdtest.run(input="attach %d\ndump -v\ndump -v --format json\n" % fx.pid)
        eq(r.rc, 0, r.err)
        sdtest.assert_running(fx.pid)
        sdtest.matches(r.out, r"^  threads: \d+ frozen, \d+ read without stopping, 0 reused, "
                       r"\d+ retried, [1-9]\d* stopped for registers, 0 with rbp from the call "
                       r"site$")
        doc, _ = json.JSONDecoder().raw_decode(r.out[r.out.index("\n{") + 1:])
        theirs = test_frames.gdb_frames(fx.pid)
        sdtest.assert_running(fx.pid)
    # main (in pause) alone is stopped again: its call site was seen once,
    # and a site is used from its second sighting on.
    eq(doc["timings"]["regstops"], 1, "second dump: %r" % doc["timings"])
    inferred = [t for t in doc["threads"] if t.get("rbp_from_call_site")]
    eq(sorted(t["name"] for t in inferred), sorted("sleeper-%d" % i for i in range(nsleep)),
       "read with rbp from the call site")
    eq(doc["timings"]["rbp_inferred"], nsleep)
    for t in inferred:
        eq(t["capture"], "asleep", t["name"])
        eq(t["unwind_stop"], None, t["name"])
        mine = [(f["function"], os.path.basename(f["file"] or ""), f["line"])
                for f in t["frames"] if (f["file"] or "").endswith("fx-idlepool.c")]
        gdb = [(fn, base, line) for fn, base, line, _ in theirs[t["tid"]]
               if base == "fx-idlepool.c"]
        # pool_leaf, 21 pool_chain (depth 20), sleeper_main
        eq(len(mine), 23, "%s: %r" % (t["name"], mine))
        eq(mine, gdb, "%s: ours and gdb's differ" % t["name"])


def test_context_switch_counts_without_schedstat():
    # What a kernel without schedstat gets: the proof from the context
    # switch counts, the same stacks.
    with start("fx-idlepool-nofp", 30, 1, parked=30) as fx:
        doc = dump_json(fx.pid, env={"STACKDUMP_CAPTURE": "ctxsw"})
        check_pool(doc, 30, 1)


def hidden_syscall_files(pid, *args):
    # /proc/PID/task/TID/syscall unreadable, as under hidepid or another
    # user's process: in a mount namespace of its own, each thread's file
    # has /dev/null bound over it (it reads empty), the target untouched.
    script = ('for f in /proc/%d/task/*/syscall; do mount --bind /dev/null "$f" || exit 99; '
              'done; exec "$@"') % pid
    cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh",
           sdtest.binary()] + [str(a) for a in args]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=300)
    ok(r.returncode != 99, "bind mount refused: %s" % r.stderr)
    return r


def test_syscall_file_unreadable_falls_back_to_freezing():
    with start("fx-idlepool-nofp", 10, 1, parked=10) as fx:
        r = hidden_syscall_files(fx.pid, "dump", "--format", "json", fx.pid)
        eq(r.returncode, 0, r.stderr)
        sdtest.assert_running(fx.pid)
        doc = json.loads(r.stdout)
        # Nothing read without a stop: every thread frozen, none lost,
        # the stacks whole.
        tm = doc["timings"]
        eq(tm["frozen"], 12, "timings: %r" % tm)
        eq(tm["asleep"] + tm["reused"], 0, "timings: %r" % tm)
        g = by_name(doc)
        sleepers = [t for n, ts in g.items() if n.startswith("sleeper-") for t in ts]
        eq(len(sleepers), 10)
        for t in sleepers:
            eq(t["status"], "ok")
            eq(names(t).count("pool_chain"), 21, "sleeper %d: %r" % (t["tid"], names(t)))
        # -v says why, once.
        r = hidden_syscall_files(fx.pid, "dump", "-v", fx.pid)
        eq(r.returncode, 0, r.stderr)
        eq((r.stdout + r.stderr).count("syscall unreadable"), 1, r.stdout[:2000] + r.stderr)
        sdtest.assert_running(fx.pid)
        # Samples too: every sleeper counted at every tick, all frozen.
        r = hidden_syscall_files(fx.pid, "profile", "--engine", "ptrace", "--count", "5",
                                 "--format", "json", "-q", fx.pid)
        eq(r.returncode, 0, r.stderr)
        prof = json.loads(r.stdout)
        n = sum(th["count"] for st in prof["stacks"] for th in st["threads"]
                if th["name"].startswith("sleeper-"))
        eq(n, 50, "sleeper samples")
        sdtest.assert_running(fx.pid)


def test_all_frozen_mode_is_available():
    with start("fx-idlepool-nofp", 10, 1, parked=10) as fx:
        doc = dump_json(fx.pid, env=FROZEN)
        tm = doc["timings"]
        eq(tm["frozen"], 12, "timings: %r" % tm)
        eq(tm["asleep"] + tm["reused"], 0)


def folded_counts(path):
    out = {}
    with open(path) as f:
        for line in f:
            stack, n = line.rsplit(" ", 1)
            out[stack] = out.get(stack, 0) + int(n)
    return out


def profile(pid, n, env=None, *extra):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "p.folded")
        # The ptrace engine: the one that captures by kind (perf events
        # sample without stopping anything at all).
        r = sdtest.run("profile", pid, "--engine", "ptrace", "--count", n, "--rate", 20,
                       "--format", "folded", "-o", path, "-v", *extra, env=env, timeout=300)
        eq(r.rc, 0, r.err)
        sdtest.assert_running(pid)
        return folded_counts(path), r.err


def split(counts):
    """(sleeper stacks, spin_big share of the spinners' samples)."""
    sleep = sum(n for s, n in counts.items() if "pool_leaf" in s)
    big = sum(n for s, n in counts.items() if s.endswith("spin_big"))
    small = sum(n for s, n in counts.items() if s.endswith("spin_small"))
    return sleep, big / float(big + small) if big + small else None


def test_profile_reuses_and_stays_true():
    # Each sleeper counted at every tick; most of them reused, not read;
    # the spinners' split as in the all-frozen mode within sampling noise.
    nsleep, nspin, n = 60, 2, 30
    with start("fx-idlepool-nofp", nsleep, nspin, parked=nsleep) as fx:
        auto, err = profile(fx.pid, n)
        sdtest.contains(err, "%d samples" % n)
        m = re.search(r"threads per snapshot: ([\d.]+) frozen, ([\d.]+) read without "
                             r"stopping, ([\d.]+) reused", err)
        ok(m, err)
        ok(float(m.group(3)) > nsleep / 2, "few threads reused: %s" % m.group(0))
        frozen, err2 = profile(fx.pid, n, FROZEN)
        sa, ba = split(auto)
        sf, bf = split(frozen)
        eq(sa, nsleep * n, "sleepers counted at every tick (auto)")
        eq(sf, nsleep * n, "sleepers counted at every tick (frozen)")
        ok(ba is not None and bf is not None, "no spinner samples: %r %r" % (auto, frozen))
        # 60 spinner samples each: 75% +- 6% is one standard deviation.
        ok(abs(ba - bf) < 0.3, "spin_big share %.2f (auto) vs %.2f (frozen)" % (ba, bf))
        ok(0.45 < ba < 0.95, "spin_big share %.2f, expected about 0.75" % ba)


def test_profile_frame_pointer_sleepers_stopped_once():
    # With frame pointers each sleeper's unwind needs registers /proc does
    # not give. Samples take them from the register sample of its ring of
    # switch records (taken as it went to sleep): a sleeper is stopped at
    # most once (asleep since before the ring was opened), then reused,
    # its whole chain at every tick. Under the task clock there is no such
    # sample: the first stops teach the unwinder each frame-pointer call
    # site's rbp offset (fpsite.c), and the sleepers are read again without
    # a stop, their chains still whole.
    nsleep, n = 20, 30
    with start("fx-idlepool", nsleep, 1, parked=nsleep) as fx:
        per = {}
        for mode, env in (("ring", None), ("clock", {"STACKDUMP_CAPTURE": "clock"})):
            counts, err = profile(fx.pid, n, env)
            m = re.search(r"threads per snapshot: ([\d.]+) frozen, ([\d.]+) read without "
                          r"stopping, ([\d.]+) reused, ([\d.]+) retried, ([\d.]+) stopped "
                          r"for registers, ([\d.]+) with rbp from the call site", err)
            ok(m, err)
            per[mode] = (float(m.group(3)), float(m.group(5)), float(m.group(6)))
            sleepers = {s: c for s, c in counts.items() if "pool_leaf" in s}
            eq(sum(sleepers.values()), nsleep * n, "%s: sleepers at every tick" % mode)
            for s in sleepers:
                eq(s.split(";").count("pool_chain"), 21, "%s: chain cut short: %s" % (mode, s))
        reused, regstops, _ = per["ring"]
        ok(regstops * n <= 2 * nsleep, "sleepers stopped again and again: %r" % per)
        ok(reused > nsleep / 2, "sleepers not reused: %r" % per)
        reused, regstops, inferred = per["clock"]
        ok(regstops * n <= 2 * nsleep, "task clock: sleepers stopped again and again: %r" % per)
        ok(inferred * n >= nsleep, "task clock: sleepers not read from their call sites: %r"
           % per)


def test_profile_sees_a_sleeper_move():
    # Samples prove a sleeper unchanged by its ring of context-switch
    # records (the task clock where the ring is refused, schedstat where
    # perf events are): fx-wake-nofp's flip sleeps in wait_first, is woken
    # mid-profile and sleeps on in wait_second. A proof that missed the
    # wake would count the stale wait_first stack for ever.
    for env, proof in ((None, "context-switch records"),
                       ({"STACKDUMP_CAPTURE": "clock"}, "the task clock"),
                       ({"STACKDUMP_CAPTURE": "schedstat"}, "schedstat")):
        with tempfile.TemporaryDirectory() as d:
            wake, ack = os.path.join(d, "wake"), os.path.join(d, "ack")
            os.mkfifo(wake)
            os.mkfifo(ack)
            with start("fx-wake-nofp", wake, ack, blocked=3) as fx:
                out = os.path.join(d, "p.json")
                p = subprocess.Popen([sdtest.binary(), "profile", str(fx.pid), "--engine",
                                      "ptrace", "--rate", "20", "--duration", "0", "--format",
                                      "json", "-o", out, "-v"], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     env=dict(os.environ, **(env or {})))
                # A few samples of flip in wait_first (the output file is
                # written at the end: count the ticks by time, generously).
                time.sleep(1.5)
                # Opened read-write: the open does not wait for a writer.
                afd = os.open(ack, os.O_RDWR)
                release(wake)
                os.read(afd, 1)
                os.close(afd)
                time.sleep(1.5)
                p.send_signal(signal.SIGINT)
                _, err = p.communicate(timeout=300)
                eq(p.returncode, 0, err)
                sdtest.assert_running(fx.pid)
                with open(out) as f:
                    doc = json.load(f)
            counts, names = {}, {}
            for st in doc["stacks"]:
                key = ";".join(fr.get("function") or "?" for fr in reversed(st["frames"]))
                counts[key] = counts.get(key, 0) + st["count"]
                names.setdefault(key, set()).update(t["name"] for t in st["threads"])
            contains(err, "sleepers proven by %s" % proof)
            first = sum(n for s, n in counts.items() if "wait_first" in s)
            second = sum(n for s, n in counts.items() if "wait_second" in s)
            m = re.search(r"sampling: (\d+) samples", err)
            ok(m, err)
            ok(first > 0 and second > 0, "%s: flip in wait_first %d, wait_second %d times"
               % (proof, first, second))
            # flip at every tick: in one of the two waits, or (a tick or
            # two) caught between them, writing its answer.
            flip = sum(n for s, n in counts.items() if "flip_main" in s)
            eq(flip, int(m.group(1)), counts)
            ok(flip - first - second <= 2, counts)
            # flip named itself "flop" when it woke (it ran; its name was
            # read over a second before): the samples in wait_second say
            # so, those in wait_first do not.
            for key, who in names.items():
                if "wait_second" in key:
                    eq(who, {"flop"}, (proof, key))
                if "wait_first" in key:
                    eq(who, {"flip"}, (proof, key))


def test_saturated_host():
    # More spinners than CPUs: every one is frozen and read, none of the
    # samples loses a thread, nothing is left stopped.
    ncpu = os.cpu_count() or 2
    nspin = min(64, 3 * ncpu)
    with start("fx-idlepool-nofp", 20, nspin, parked=20) as fx:
        # A runnable thread that misses the stop budget is waited for
        # alone, up to --timeout: generous, for a loaded CI machine.
        doc = dump_json(fx.pid, "--timeout", "60s")
        check_pool(doc, 20, nspin)
        counts, err = profile(fx.pid, 10, None, "--timeout", "60s")
        sdtest.contains(err, "10 samples")
        sdtest.matches(err, r", 0 unreadable$")
        sleep, _ = split(counts)
        eq(sleep, 20 * 10)


def wait_thread_state(pid, name, states, timeout=30):
    return wait_state(pid, lambda ts: any(t.name == name and t.state in states
                                          for t in ts.values()), timeout=timeout)


def release(fifo):
    fd = os.open(fifo, os.O_WRONLY)
    os.write(fd, b"x")
    os.close(fd)


class StateWatch:
    """Samples the state letter of one thread until stopped."""

    def __init__(self, pid, tid):
        self.pid, self.tid, self.seen, self.run = pid, tid, [], True
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        path = "/proc/%d/task/%d/stat" % (self.pid, self.tid)
        while self.run:
            try:
                with open(path) as f:
                    s = f.read()
                self.seen.append(s[s.rindex(")") + 2])
            except OSError:
                pass
            time.sleep(0.002)

    def stop(self):
        self.run = False
        self.t.join()
        return self.seen


@contextlib.contextmanager
def vforker_in_d():
    """fx-vfork with its "vforker" thread in D (a vfork parent until a
    byte is written to the FIFO): yields the fixture and the FIFO."""
    with tempfile.TemporaryDirectory() as d:
        fifo = os.path.join(d, "fifo")
        os.mkfifo(fifo)
        with start("fx-vfork", fifo) as fx:
            wait_thread_state(fx.pid, "vforker", "D")
            yield fx, fifo


def test_d_state_thread_never_interrupted():
    with vforker_in_d() as (fx, fifo):
        tid = fx.tid("vforker")
        watch = StateWatch(fx.pid, tid)
        doc = dump_json(fx.pid)
        g = by_name(doc)
        v = g["vforker"][0]
        eq(v["state"], "D")
        eq(v["capture"], "asleep")
        # __vfork keeps its return address in rdi, which /proc gives;
        # in_vfork's frame needs rbp (a frame-pointer build), which
        # only a stop gives, and a D thread is never stopped.
        ok(names(v)[0].endswith("vfork") and names(v)[1] == "in_vfork", names(v))
        ok("vforker_main" in names(v) or "uninterruptible" in (v["unwind_stop"] or ""),
           "%r, %r" % (names(v), v["unwind_stop"]))
        eq(g["spinner"][0]["capture"], "frozen")
        eq(g["sleeper"][0]["capture"], "asleep")
        # JSON has every thread's wchan and switch counts; the text dump
        # reads wchan only for a thread in D, where it shows it.
        ok(v["wchan"] and g["sleeper"][0]["wchan"], "wchan: %r" % [v, g["sleeper"][0]])
        ok(v["voluntary_ctxt_switches"] > 0, "no switch counts: %r" % v)
        r = sdtest.run(fx.pid)
        eq(r.rc, 0, r.err)
        sdtest.matches(r.out, r'^Thread %d "vforker" D .*\(wchan %s\)' % (
            tid, re.escape(v["wchan"])))
        # record every 0.5 s takes all its snapshots while the thread
        # is in D and after it wakes (mid-recording).
        with tempfile.TemporaryDirectory() as out:
            timer = threading.Timer(1.2, release, [fifo])
            timer.start()
            r = sdtest.run("record", "--every", "0.5s", "--count", 6, "--out", out, fx.pid,
                           timeout=120)
            timer.join()
            eq(r.rc, 0, r.err)
            eq(len(r.out.strip().splitlines()), 6, "snapshots: %s; %s" % (r.out, r.err))
            sdtest.contains(r.err, "stopped: --count reached")
        seen = watch.stop()
        ok("D" in seen, "the watcher never saw the vfork parent in D")
        ok("t" not in seen, "the D thread was put in a ptrace stop: %r" % set(seen))
        wait_thread_state(fx.pid, "vforker", "S")
        sdtest.assert_running(fx.pid)


def test_straggler_detached_when_it_stops():
    # In the all-frozen mode a D thread does not stop within --timeout: the
    # snapshot stands without it, and when the thread wakes the shell,
    # idle at its prompt, detaches it; the next snapshot is not refused
    # ("already traced").
    with vforker_in_d() as (fx, fifo):
        tid = fx.tid("vforker")
        env = dict(os.environ, NO_COLOR="1", **FROZEN)
        sh = subprocess.Popen([sdtest.binary()], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, env=env)
        try:
            sh.stdin.write("dump --timeout 100ms %d\n" % fx.pid)
            sh.stdin.flush()
            # The first snapshot ends without the D thread, which stays
            # ours (interrupted, not stopped) until it wakes.
            first = []
            while not first or "Thread %d \"vforker\"" % tid not in first[-1]:
                line = sh.stdout.readline()
                ok(line, "the shell ended early: %r" % first)
                first.append(line)
            contains(first[-1], "did not stop in time")
            eq(tracer_of(fx.pid, tid), sh.pid)
            release(fifo)
            # It stops as soon as it wakes, and the shell, idle at its
            # prompt, lets it go.
            wait_state(fx.pid, lambda ts: tracer_of(fx.pid, tid) == 0
                       and ts.get(tid) is not None and ts[tid].state == "S", timeout=60)
            sh.stdin.write("dump %d\nquit\n" % fx.pid)
            sh.stdin.flush()
            out, _ = sh.communicate(timeout=120)
        finally:
            if sh.poll() is None:
                sh.kill()
        ok("already traced" not in out, out[-3000:])
        eq(out.count("Thread %d \"vforker\"" % tid), 1, out[-3000:])
        sdtest.assert_running(fx.pid)


def tracer_of(pid, tid):
    try:
        with open("/proc/%d/task/%d/status" % (pid, tid)) as f:
            for line in f:
                if line.startswith("TracerPid:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def lock_view(doc):
    def one(lk):
        return (lk["kind"], lk.get("symbol") or lk["address"], lk["owner"],
                tuple(sorted(lk["waiters"])), lk.get("type"), lk.get("owner_evidence"))
    dl = sorted(tuple(sorted((e["tid"], e["owner"], e["kind"]) for e in c))
                for c in doc.get("deadlocks") or [])
    idle = json.dumps(doc.get("idle"), sort_keys=True)
    return sorted(one(lk) for lk in doc["locks"]), dl, idle


LOCK_FIXTURES = [
    (("fx-mutex", "normal", 3), 3),
    (("fx-mutex", "recursive", 2), 2),
    (("fx-mutex", "robust", 2), 2),
    (("fx-rwlock", "writer-holds", 2), 2),
    (("fx-rwlock", "readers-hold", 2), 1),
    (("fx-rwlock", "writers", 2), 2),
    (("fx-condpool", 4), 4),
    (("fx-sem", 3), 3),
    (("fx-join",), 1),
    (("fx-deadlock", 2), 2),
    (("fx-deadlock", 3), 3),
    (("fx-cxxlocks", 2, 2), 5),
    (("fx-rustlock", 2, 2), 4),
    (("fx-rustinfer", "abba"), 2),
    (("fx-rustinfer", "rwlock"), 2),
    (("fx-rustinfer", "rwread"), 1),
    (("fx-rustinfer", "cycle3"), 3),
    (("fx-rustinfer", "decoys"), 4),
    (("fx-cxxinfer", "abba"), 2),
]


def test_lock_views_as_all_frozen():
    for args, parked in LOCK_FIXTURES:
        if args[0].startswith("fx-rust") and not available(args[0]):
            raise AssertionError("%s was not built (rustc missing?)" % args[0])
        with start(*args, parked=parked) as fx:
            views = []
            for env in (FROZEN, None, FROZEN):
                r = sdtest.run("locks", "--format", "json", fx.pid, env=env)
                ok(r.rc in (0, 3), "%r: %s" % (args, r.err))
                sdtest.assert_running(fx.pid)
                views.append(lock_view(r.json()))
            eq(views[1], views[0], "%r: all-frozen then auto" % (args,))
            eq(views[2], views[1], "%r: auto then all-frozen" % (args,))
            if args[0] in ("fx-mutex", "fx-rwlock", "fx-deadlock", "fx-cxxlocks"):
                ok(views[0][0], "%r: no lock found" % (args,))


if __name__ == "__main__":
    sdtest.main(globals())
