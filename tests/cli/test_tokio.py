# SPDX-License-Identifier: MIT
# Tokio tasks, against the fixture's own knowledge: fx-tokio (Tokio 1.24,
# Debian's librust-tokio-dev) parks each task at an `.await` whose
# function and line (line!()) it writes to a file, outermost first, with
# the kind of thing the task waits for. Every task's await chain in the
# dump must start with those levels, in order, and end at a leaf of that
# kind; the lock holders inferred among tasks (holder_task keeps the guard
# mutex_task waits for) and the ABBA between abba_a and abba_b, named as a
# deadlock. Built against Tokio 1.24 (Debian 12) and 1.43 (Debian 13's, unpacked
# by .ci/deps). Also: the text form, a task being polled and its worker,
# grouping, --threads, a stripped copy and one with limited debug info (a
# note that says what to rebuild with, the threads intact) and a program
# without Tokio.
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
from fixture import available, copy_renamed, start  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402

TASKS = 9
# The fixture always holds the ABBA between abba_a and abba_b: a dump of
# it exits 3, as for a deadlock among threads.
DEADLOCK = 3


def need(name):
    # CI builds it (.ci/deps installs librust-tokio-dev): a fixture that
    # was not built is a failure, not a skip.
    ok(available(name), "%s was not built (cargo and librust-tokio-dev installed?)" % name)


def expected(path):
    """{task: (kind, [(function, line)])} as the fixture wrote it."""
    with open(path) as f:
        lines = f.read().split("\n")
    ok("ready" in lines, lines)
    out = {}
    for line in lines:
        # Lines of a mode ("spin-tid TID", "stall-want TID" ...) are not tasks.
        if not line or line == "ready" or "-" in line.split()[0]:
            continue
        parts = line.split()
        levels = []
        for p in parts[2:]:
            fn, _, ln = p.rpartition(":")
            levels.append(("fx_tokio::" + fn, int(ln)))
        out[parts[0]] = (parts[1], levels)
    return out


class Tokio:
    def __init__(self, name="fx-tokio", idle=0, spin=False, mode=None):
        need(name)
        self.tmp = tempfile.TemporaryDirectory()
        self.file = os.path.join(self.tmp.name, "awaits")
        mode = "spin" if spin else mode
        self.cm = start(name, self.file, *([idle, mode] if mode else [idle] if idle else []))

    def __enter__(self):
        self.fx = self.cm.__enter__()
        return self

    def __exit__(self, *a):
        self.cm.__exit__(*a)
        self.tmp.cleanup()


def by_future(rt):
    return {t["future"]: t for t in rt["tasks"] if t["future"]}


# The fixture as built against each Tokio: its name and the folder of the
# crate's sources its DWARF names.
VERSIONS = (("fx-tokio", "/tokio-1.24"), ("fx-tokio-143", "/tokio-1.43"))


def test_every_chain_as_the_fixture_wrote_it():
    for name, src in VERSIONS:
        every_chain(name, src)


def every_chain(fx_name, src):
    with Tokio(fx_name) as tk:
        want = expected(tk.file)
        r = sdtest.run("--format", "json", tk.fx.pid)
        sdtest.assert_running(tk.fx.pid)
    eq(r.rc, DEADLOCK, r.err)
    doc = r.json()
    ok(doc["threads"], "the threads are shown too")
    eq(doc["tokio"]["note"], None)
    rts = doc["runtimes"]
    eq(len(rts), 1, rts)
    rt = rts[0]
    eq(rt["flavor"], "multi_thread")
    ok(rt["id"], rt)
    # Every task parked: nothing waits in the global queue.
    eq(rt["injected"], 0, rt)
    tids = {t["tid"] for t in doc["threads"]}
    ok(rt["workers"] and set(rt["workers"]) <= tids, rt["workers"])
    eq(len(rt["tasks"]), TASKS, [t["future"] for t in rt["tasks"]])
    eq(len({t["id"] for t in rt["tasks"]}), TASKS, "task ids are distinct")
    eq(len(want), TASKS, want)
    tasks = by_future(rt)
    for name, (kind, levels) in want.items():
        fut = levels[0][0]
        ok(fut in tasks, "no task runs %s: %r" % (fut, sorted(tasks)))
        t = tasks[fut]
        eq(t["state"], "idle", (name, t))
        eq(t["worker"], None, (name, t))
        eq(t["note"], None, (name, t))
        aw = t["awaits"]
        ok(len(aw) > len(levels), (name, aw))
        for i, (fn, line) in enumerate(levels):
            eq(aw[i]["function"], fn, (name, i, aw))
            eq(aw[i]["line"], line, (name, i, aw))
            ok(aw[i]["file"].endswith("src/main.rs"), (name, aw[i]))
            eq(aw[i]["kind"], None, (name, i, aw))
        # Below the fixture's own levels, Tokio's async fns (Mutex::lock,
        # Receiver::recv ...) with their own lines, then the leaf.
        for a in aw[len(levels):-1]:
            ok(a["function"].startswith("tokio::") and a["line"] > 0 and
               src in a["file"], (name, a))
        eq(aw[-1]["kind"], kind, (name, aw[-1]))
        eq(aw[-1]["file"], None, (name, aw[-1]))
    join = tasks["fx_tokio::join_task"]["awaits"][-1]
    eq(join["detail"], "task %d" % tasks["fx_tokio::timer_task"]["id"], join)
    timer = tasks["fx_tokio::timer_task"]["awaits"][-1]
    ok(timer["function"].startswith("tokio::time::sleep::Sleep"), timer)
    # A sleep of a day, begun a moment ago.
    m = re.match(r"deadline in (\d+\.\d+) s$", timer["detail"] or "")
    ok(m and 80000 < float(m.group(1)) <= 86400, timer)
    mutex = tasks["fx_tokio::mutex_task"]["awaits"][-1]
    ok(re.match(r"tokio::sync::Mutex 0x[0-9a-f]+$", mutex["detail"] or ""), mutex)
    sem = tasks["fx_tokio::sem_task"]["awaits"][-1]
    ok(re.match(r"tokio::sync::Semaphore 0x[0-9a-f]+$", sem["detail"] or ""), sem)
    # Lock holders inferred from the state machines: holder_task keeps the
    # guard of the Mutex mutex_task awaits; abba_a and abba_b each keep
    # the guard of the Mutex the other awaits: one deadlock.
    holder, waiter = tasks["fx_tokio::holder_task"], tasks["fx_tokio::mutex_task"]
    addr = int(mutex["detail"].split()[-1], 16)
    eq([(h["kind"], h["address"], h["inferred"]) for h in holder["holds"]],
       [("tokio::sync::Mutex", addr, True)], holder)
    ok(re.match(r"g in fx_tokio::holder_task at \S*src/main\.rs:%d$" % want["holder"][1][0][1],
                holder["holds"][0]["evidence"]), holder["holds"])
    eq(waiter["held_by"], holder["id"], waiter)
    a, b = tasks["fx_tokio::abba_a"], tasks["fx_tokio::abba_b"]
    eq(a["held_by"], b["id"])
    eq(b["held_by"], a["id"])
    eq(len(a["holds"]), 1, a)
    eq(len(b["holds"]), 1, b)
    eq(int(a["awaits"][-1]["detail"].split()[-1], 16), b["holds"][0]["address"])
    eq(int(b["awaits"][-1]["detail"].split()[-1], 16), a["holds"][0]["address"])
    eq([sorted(c) for c in rt["deadlocks"]], [sorted([a["id"], b["id"]])])
    for other in rt["tasks"]:
        if other["future"] not in ("fx_tokio::holder_task", "fx_tokio::abba_a",
                                   "fx_tokio::abba_b"):
            eq(other["holds"], [], other)
        if other["future"] not in ("fx_tokio::mutex_task", "fx_tokio::abba_a",
                                   "fx_tokio::abba_b"):
            eq(other["held_by"], None, other)
    # The two Notify waits are on two Notify objects.
    n1 = tasks["fx_tokio::notify_task"]["awaits"][-1]["detail"]
    n2 = tasks["fx_tokio::holder_task"]["awaits"][-1]["detail"]
    ok(n1 and n2 and n1 != n2, (n1, n2))


def test_text_after_the_threads():
    for name, _ in VERSIONS:
        text_after_the_threads(name)


def text_after_the_threads(fx_name):
    with Tokio(fx_name) as tk:
        want = expected(tk.file)
        r = sdtest.run(tk.fx.pid)
        sdtest.assert_running(tk.fx.pid)
    eq(r.rc, DEADLOCK, r.err)
    at = r.out.find("Tokio runtime 0x")
    ok(at > 0, r.out)
    ok(r.out.find("Thread ") < at, "the threads come first")
    contains(r.out, "(multi_thread), %d tasks, 0 in its global queue, threads " % TASKS)
    for name, (kind, levels) in want.items():
        m = re.search(r"^task (\d+) \[idle\] %s\n((?:    .*\n)+)" % re.escape(levels[0][0]),
                      r.out, re.M)
        ok(m, "%s not shown: %s" % (name, r.out[at:]))
        body = m.group(2).split("\n")
        for i, (fn, line) in enumerate(levels):
            ok(re.match(r"    %s at \S*src/main\.rs:%d$" % (re.escape(fn), line), body[i]),
               (name, body))
        ok(any(b.startswith("    -> %s " % kind) for b in body), (name, body))
    ids = {}
    for fut in ("abba_a", "abba_b", "holder_task", "mutex_task"):
        ids[fut] = int(re.search(r"^task (\d+) \[idle\] fx_tokio::%s$" % fut, r.out, re.M).group(1))
    a_line, b_line = want["abba_a"][1][0][1], want["abba_b"][1][0][1]
    m = re.search(r"^Found 1 deadlock among tasks:\n  (.*)$", r.out, re.M)
    ok(m, r.out[at:])
    parts = sorted(m.group(1).split("; "))
    eq(len(parts), 2, parts)
    ok(re.match(r"task %d holds tokio::sync::Mutex 0x[0-9a-f]+ and awaits tokio::sync::Mutex "
                r"0x[0-9a-f]+ at \S*src/main\.rs:%d$" % (ids["abba_a"], a_line), parts[0]), parts)
    ok(re.match(r"task %d holds tokio::sync::Mutex 0x[0-9a-f]+ and awaits tokio::sync::Mutex "
                r"0x[0-9a-f]+ at \S*src/main\.rs:%d$" % (ids["abba_b"], b_line), parts[1]), parts)
    contains(r.out, "held by task %d" % ids["holder_task"])
    ok(re.search(r"^    - holds \(inferred\) tokio::sync::Mutex 0x[0-9a-f]+: g in "
                 r"fx_tokio::holder_task at \S*src/main\.rs:\d+$", r.out, re.M), r.out[at:])


def test_identical_chains_grouped():
    idle = 40
    with Tokio(idle=idle) as tk:
        g = sdtest.run("--group", tk.fx.pid)
        n = sdtest.run("--no-group", "--format", "json", tk.fx.pid)
    eq(g.rc, DEADLOCK, g.err)
    eq(n.rc, DEADLOCK, n.err)
    rt = n.json()["runtimes"][0]
    eq(len(rt["tasks"]), TASKS + idle)
    ids = sorted(t["id"] for t in rt["tasks"] if t["future"] == "fx_tokio::idle_task")
    eq(len(ids), idle)
    m = re.search(r"^%d tasks \[idle\] fx_tokio::idle_task: ([\d .]+)\n"
                  r"    fx_tokio::idle_task at \S*src/main\.rs:\d+\n"
                  r"    -> notify tokio::sync::notify::Notified" % idle, g.out, re.M)
    ok(m, g.out[g.out.find("Tokio runtime"):])
    shown = [int(x) for x in m.group(1).replace("...", "").split()]
    ok(shown and set(shown) <= set(ids), (shown, ids))
    # The others differ from each other: one entry each.
    for fut in ("timer_task", "chan_task", "notify_task", "holder_task", "mutex_task",
                "sem_task", "join_task", "abba_a", "abba_b"):
        eq(len(re.findall(r"^task \d+ \[idle\] fx_tokio::%s$" % fut, g.out, re.M)), 1, fut)


def test_running_task_and_its_worker():
    for name, _ in VERSIONS:
        running_task(name)


def running_task(fx_name):
    with Tokio(fx_name, spin=True) as tk:
        with open(tk.file) as f:
            tid = int(re.search(r"^spin-tid (\d+)$", f.read(), re.M).group(1))
        r = sdtest.run("--format", "json", tk.fx.pid)
        t = sdtest.run(tk.fx.pid)
        sdtest.assert_running(tk.fx.pid)
    eq(r.rc, DEADLOCK, r.err)
    rt = r.json()["runtimes"][0]
    eq(len(rt["tasks"]), TASKS + 1)
    ok(tid in rt["workers"], (tid, rt["workers"]))
    spin = by_future(rt)["fx_tokio::spin_task"]
    eq(spin["state"], "running", spin)
    eq(spin["worker"], tid, spin)
    eq(spin["awaits"], [], spin)
    contains(spin["note"] or "", "its worker's stack")
    # The others stay idle, their chains read.
    for task in rt["tasks"]:
        if task is not spin:
            eq(task["state"], "idle", task)
            ok(task["awaits"], task)
    ok(re.search(r"^task %d \[running\] fx_tokio::spin_task on thread %d$" % (spin["id"], tid),
                 t.out, re.M), t.out[t.out.find("Tokio runtime"):])
    # The thread view says which task the worker polls, and JSON too.
    ok(re.search(r"^Thread %d \"tokio-runtime-w\".* \[task %d\]$" % (tid, spin["id"]), t.out,
                 re.M), t.out)
    eq([(p["thread"], p["task"]) for p in rt["polling"] if p["thread"] == tid], [(tid, spin["id"])])
    # Its worker's tick, read from its core (a multi_thread worker).
    ok(all(isinstance(p["tick"], int) for p in rt["polling"] if p["thread"] == tid), rt["polling"])
    eq(len(re.findall(r"\[task \d+\]$", t.out, re.M)), len(rt["polling"]), rt["polling"])


def test_tasks_born_and_gone_while_read():
    """Short-lived tasks spawned and finished without end on both workers,
    dumped again and again: the list changes while it is walked. Each dump
    succeeds, the known tasks are all there with their chains, every task
    has a state; what could not be read is said, never garbage."""
    states = set()
    whole = changed = 0
    with Tokio(mode="churn") as tk:
        want = expected(tk.file)
        for _ in range(15):
            r = sdtest.run("--format", "json", tk.fx.pid)
            ok(r.rc in (0, DEADLOCK), r.err)
            doc = r.json()
            rt = doc["runtimes"][0]
            note = doc["tokio"]["note"]
            for t in rt["tasks"]:
                ok(t["state"] in ("idle", "scheduled", "running", "complete", "cancelled"), t)
                states.add(t["state"])
                ok(t["awaits"] or t["note"] or t["future"] or t["state"] != "idle", t)
            if note:
                # The only excuse: the list kept changing under the walk.
                contains(note, "changed while it was read")
                changed += 1
                continue
            tasks = by_future(rt)
            for name, (kind, levels) in want.items():
                t = tasks.get(levels[0][0])
                ok(t, "%s missing while others churn: %r" % (name, sorted(tasks)))
                eq([(a["function"], a["line"]) for a in t["awaits"][:len(levels)]], levels)
            whole += 1
        sdtest.assert_running(tk.fx.pid)
    # Walks mend themselves from the task before a freed one: giving up is
    # the exception.
    ok(whole >= 12, "only %d of 15 dumps read the whole list (%d said it changed)" %
       (whole, changed))
    print("churn: %d whole, %d said the list changed; states seen %s" %
          (whole, changed, sorted(states)))


def test_locks_names_holders_and_the_async_deadlock():
    with Tokio() as tk:
        want = expected(tk.file)
        j = sdtest.run("--format", "json", tk.fx.pid)
        r = sdtest.run("locks", tk.fx.pid)
        sdtest.assert_running(tk.fx.pid)
    # 3: a deadlock was found (among tasks: the threads are all idle).
    eq(r.rc, 3, r.err)
    tasks = by_future(j.json()["runtimes"][0])
    at = r.out.find(": locks among tasks")
    ok(at > 0, r.out)
    for holder, var, waiter, wait_line in (
            ("holder_task", "g", "mutex_task", want["mutex"][1][-1][1]),
            ("abba_a", "g1", "abba_b", want["abba_b"][1][0][1]),
            ("abba_b", "g2", "abba_a", want["abba_a"][1][0][1])):
        h, w = tasks["fx_tokio::" + holder], tasks["fx_tokio::" + waiter]
        addr = h["holds"][0]["address"]
        ok(re.search(r"^tokio::sync::Mutex 0x%x: held \(inferred\) by task %d fx_tokio::%s\n"
                     r"  evidence: %s in fx_tokio::%s at \S*src/main\.rs:\d+\n"
                     r"  awaited by 1 task: %d \(\S*src/main\.rs:%d\)$" %
                     (addr, h["id"], holder, var, holder, w["id"], wait_line), r.out, re.M),
           (holder, r.out[at:]))
    contains(r.out[at:], "Found 1 deadlock among tasks:")
    # Nothing of the kind for a program without Tokio.
    with start("fx-idle") as fx:
        plain = sdtest.run("locks", fx.pid)
    eq(plain.rc, 0, plain.err)
    ok("Tokio" not in plain.out and "among tasks" not in plain.out, plain.out)


def mode_lines(path):
    """The lines of a mode ("stall-want 123" ...): {key: [fields...], ...},
    each key's lines in order."""
    out = {}
    with open(path) as f:
        for line in f.read().split("\n"):
            parts = line.split()
            if parts and "-" in parts[0]:
                out.setdefault(parts[0], []).append(parts[1:])
    return out


def test_std_mutex_stall_named():
    for name, _ in VERSIONS:
        std_mutex_stall(name)


def std_mutex_stall(fx_name):
    """4 workers; stall_holder holds the std Mutex STALL across a blocking
    sleep, 200 stall_want tasks want it: the 3 other workers park on it.
    The findings name the mutex (at the address the fixture wrote), each
    parked worker with the task it polls (a stall_want, at the line of its
    lock()), and the holder thread with its task (stall_holder, at the line
    of its sleep), in the dump's JSON and text and in `locks`."""
    with Tokio(fx_name, mode="stall") as tk:
        m = mode_lines(tk.file)
        j = sdtest.run("--format", "json", tk.fx.pid)
        t = sdtest.run(tk.fx.pid)
        lk = sdtest.run("locks", tk.fx.pid)
        sdtest.assert_running(tk.fx.pid)
    addr = int(m["stall-mutex"][0][0], 16)
    holder, holder_line = (int(x) for x in m["stall-holder"][0])
    wanters = sorted(int(x[0]) for x in m["stall-want"])
    want_line = int(m["stall-want-line"][0][0])
    eq(len(wanters), 3, m)
    eq(j.rc, DEADLOCK, j.err)
    doc = j.json()
    rt = doc["runtimes"][0]
    tasks = {x["id"]: x for x in rt["tasks"]}
    stalls = [f for f in doc["findings"] if f["kind"] == "tokio_stall"]
    eq(len(stalls), 1, doc["findings"])
    f = stalls[0]
    eq(f["objects"][0]["address"], "0x%x" % addr, f)
    eq(f["objects"][0]["kind"], "rust-mutex", f)
    eq(f["objects"][0]["symbol"], "fx_tokio::STALL", f)
    eq(sorted(f["threads"]), wanters, f)
    eq(f["holder"], holder, f)
    eq(f["runtime"], rt["id"])
    ok(f["holder_task"] in tasks, f)
    h = tasks[f["holder_task"]]
    eq((h["future"], h["state"], h["worker"]), ("fx_tokio::stall_holder", "running", holder), h)
    eq(len(f["tasks"]), 3, f)
    for tid, tid_task in zip(f["threads"], f["tasks"]):
        w = tasks[tid_task]
        eq((w["future"], w["state"], w["worker"]), ("fx_tokio::stall_want", "running", tid), w)
    # The lock view of the threads no longer calls it merely contended.
    eq([x for x in doc["findings"] if x["kind"] == "contended_lock"], [], doc["findings"])
    # Text: the verdict says it plainly, line by line.
    eq(t.rc, DEADLOCK, t.err)
    for out in (t.out, lk.out):
        ok(re.search(r"^  Tokio stall: 3 workers parked on rust-mutex 0x%x <fx_tokio::STALL>" % addr,
                     out, re.M), out[-3000:])
        ok(re.search(r"^    held by thread %d \"tokio-runtime-w\" \(inferred\), polling task %d "
                     r"fx_tokio::stall_holder\n      in fx_tokio::stall_holder::\{async_fn#0\} at "
                     r"main\.rs:%d$" % (holder, h["id"], holder_line), out, re.M), out[-3000:])
        for tid, tid_task in zip(f["threads"], f["tasks"]):
            ok(re.search(r"^    worker %d \"tokio-runtime-w\" parked, polling task %d "
                         r"fx_tokio::stall_want\n      in fx_tokio::stall_want::\{async_fn#0\} at "
                         r"main\.rs:%d$" % (tid, tid_task, want_line), out, re.M), out[-3000:])
        queued = sum(1 for x in rt["tasks"] if x["state"] == "scheduled")
        ok(queued > 100, queued)
    # The thread view's lock block: each waiter and the holder with its task.
    eq(lk.rc, DEADLOCK, lk.err)
    contains(lk.out, '%d "tokio-runtime-w" [task %d]' % (holder, h["id"]))
    for tid, tid_task in zip(f["threads"], f["tasks"]):
        contains(lk.out, '%d "tokio-runtime-w" [task %d]' % (tid, tid_task))
        ok(re.search(r'^Thread %d "tokio-runtime-w" .*\[task %d\]$' % (tid, tid_task), t.out,
                     re.M), tid)


def test_future_lock_named():
    for name, _ in VERSIONS:
        future_lock(name)


def future_lock(fx_name):
    """holder_task keeps a tokio::sync::Mutex guard and awaits a Notify
    that never comes; mutex_task queues behind it; no worker polls a
    task: the FutureLock, named in the findings (JSON and text) and under
    the lock in `locks`. The ABBA pair is a deadlock, no FutureLock."""
    with Tokio(fx_name) as tk:
        want = expected(tk.file)
        j = sdtest.run("--format", "json", tk.fx.pid)
        t = sdtest.run(tk.fx.pid)
        lk = sdtest.run("locks", tk.fx.pid)
        sdtest.assert_running(tk.fx.pid)
    doc = j.json()
    rt = doc["runtimes"][0]
    tasks = by_future(rt)
    holder, waiter = tasks["fx_tokio::holder_task"], tasks["fx_tokio::mutex_task"]
    addr = holder["holds"][0]["address"]
    fl = [f for f in doc["findings"] if f["kind"] == "future_lock"]
    eq(len(fl), 1, doc["findings"])
    eq(fl[0]["tasks"], [holder["id"], waiter["id"]], fl)
    eq(fl[0]["holder_task"], holder["id"], fl)
    eq(fl[0]["objects"][0]["address"], "0x%x" % addr, fl)
    eq(fl[0]["objects"][0]["kind"], "tokio::sync::Mutex", fl)
    dl = [f for f in doc["findings"] if f["kind"] == "task_deadlock"]
    eq(len(dl), 1, doc["findings"])
    a, b = tasks["fx_tokio::abba_a"], tasks["fx_tokio::abba_b"]
    eq(sorted(dl[0]["tasks"]), sorted([a["id"], b["id"]]), dl)
    eq(sorted(int(o["address"], 16) for o in dl[0]["objects"]),
       sorted([a["holds"][0]["address"], b["holds"][0]["address"]]), dl)
    eq(rt["polling"], [], rt)
    hold_line = want["holder"][1][0][1]
    wait_line = want["mutex"][1][-1][1]
    for out in (t.out, lk.out):
        ok(re.search(r"^Verdict: DEADLOCK \(1 cycle among tasks\)", out, re.M), out[-3000:])
        ok(re.search(r"^  FutureLock: task %d fx_tokio::holder_task holds tokio::sync::Mutex 0x%x "
                     r"while it awaits something else; 1 task waits for it\n"
                     r"    task %d awaits notify tokio::sync::notify::Notified \(Notify 0x[0-9a-f]+\) "
                     r"at \S*src/main\.rs:%d\n"
                     r"      holding the lock \(inferred\): g in fx_tokio::holder_task at "
                     r"\S*src/main\.rs:%d\n"
                     r"    waiting for the lock: task %d \(\S*src/main\.rs:%d\)\n"
                     r"    no thread of the runtime polls a task \(\d+ idle\): a thread dump shows "
                     r"an idle runtime$" %
                     (holder["id"], addr, holder["id"], hold_line, hold_line, waiter["id"],
                      wait_line), out, re.M), out[-3000:])
        ok(re.search(r"^  deadlock among tasks: 2 tasks wait for each other's locks$", out, re.M),
           out[-3000:])
        for x, y in ((a, b), (b, a)):
            ok(re.search(r"^    task %d %s awaits tokio::sync::Mutex 0x%x held by task %d\n"
                         r"      at \S*src/main\.rs:%d$" %
                         (x["id"], x["future"], x["awaits"][-1]["detail"] and
                          int(x["awaits"][-1]["detail"].split()[-1], 16), y["id"],
                          x["awaits"][0]["line"]), out, re.M), out[-3000:])
    # Under the lock in `locks`: the holder is suspended elsewhere.
    ok(re.search(r"^tokio::sync::Mutex 0x%x: held \(inferred\) by task %d fx_tokio::holder_task\n"
                 r"  evidence: .*\n"
                 r"  awaited by 1 task: .*\n"
                 r"  FutureLock: the holder is suspended, it awaits notify "
                 r"tokio::sync::notify::Notified \(Notify 0x[0-9a-f]+\) at \S*src/main\.rs:%d$" %
                 (addr, holder["id"], hold_line), lk.out, re.M), lk.out)
    eq(lk.out.count("FutureLock: the holder is suspended"), 1, lk.out)


def chains_agree(rt, want, src, names):
    """Each task NAMES of WANT has its levels as the fixture wrote them,
    Tokio's own below them (from SRC), and a leaf of its kind."""
    tasks = by_future(rt)
    for name in names:
        kind, levels = want[name]
        t = tasks.get(levels[0][0])
        ok(t, "no task runs %s: %r" % (levels[0][0], sorted(tasks)))
        eq(t["state"], "idle", t)
        eq(t["worker"], None, t)
        aw = t["awaits"]
        eq([(a["function"], a["line"]) for a in aw[:len(levels)]], levels, (name, aw))
        for a in aw[len(levels):-1]:
            ok(a["function"].startswith("tokio::") and src in a["file"], (name, a))
        eq(aw[-1]["kind"], kind, (name, aw[-1]))


def test_current_thread_runtime():
    for name, src in VERSIONS:
        current_thread(name, src)


def current_thread(fx_name, src):
    """The same tasks on a current_thread runtime, driven by the main
    thread's block_on: flavor current_thread, that thread its one worker,
    every chain as the fixture wrote it, the ABBA a deadlock still."""
    with Tokio(fx_name, mode="current") as tk:
        want = expected(tk.file)
        r = sdtest.run("--format", "json", tk.fx.pid)
        t = sdtest.run(tk.fx.pid)
        sdtest.assert_running(tk.fx.pid)
    eq(r.rc, DEADLOCK, r.err)
    doc = r.json()
    eq(doc["tokio"]["note"], None)
    eq(len(doc["runtimes"]), 1, doc["runtimes"])
    rt = doc["runtimes"][0]
    eq(rt["flavor"], "current_thread")
    eq(rt["workers"], [doc["pid"]], rt["workers"])
    eq(len(rt["tasks"]), TASKS, [x["future"] for x in rt["tasks"]])
    chains_agree(rt, want, src, want)
    eq(len(rt["deadlocks"]), 1, rt["deadlocks"])
    contains(t.out, "(current_thread), %d tasks" % TASKS)
    contains(t.out, "Found 1 deadlock among tasks:")


def test_two_runtimes_in_one_process():
    for name, src in VERSIONS:
        two_runtimes(name, src)


def two_runtimes(fx_name, src):
    """The multi_thread runtime with its 9 tasks and, on the thread
    second-rt, a current_thread one with second_task: two runtimes, each
    with its own workers and tasks, none of one in the other."""
    with Tokio(fx_name, mode="two") as tk:
        want = expected(tk.file)
        second = int(mode_lines(tk.file)["second-tid"][0][0])
        r = sdtest.run("--format", "json", tk.fx.pid)
        t = sdtest.run(tk.fx.pid)
        sdtest.assert_running(tk.fx.pid)
    eq(r.rc, DEADLOCK, r.err)
    doc = r.json()
    rts = sorted(doc["runtimes"], key=lambda x: x["flavor"])
    eq([x["flavor"] for x in rts], ["current_thread", "multi_thread"], rts)
    cur, multi = rts
    ok(cur["id"] != multi["id"], rts)
    eq(cur["workers"], [second], cur)
    ok(second not in multi["workers"] and doc["pid"] in multi["workers"], multi)
    eq([x["future"] for x in cur["tasks"]], ["fx_tokio::second_task"], cur["tasks"])
    chains_agree(cur, want, src, ["second"])
    eq(len(multi["tasks"]), TASKS, [x["future"] for x in multi["tasks"]])
    chains_agree(multi, want, src, [n for n in want if n != "second"])
    # Task ids come from one counter of the process: none is in both.
    ok(not {x["id"] for x in cur["tasks"]} & {x["id"] for x in multi["tasks"]}, rts)
    # Text: one header per runtime, each with its threads.
    ok(re.search(r"Tokio runtime 0x%x \(current_thread\), 1 task(, \d+ in its global queue)?, threads %d$" % (cur["id"], second),
                 t.out, re.M), t.out[t.out.find("Tokio runtime"):])
    ok(re.search(r"Tokio runtime 0x%x \(multi_thread\), %d tasks, 0 in its global queue, threads " %
                 (multi["id"], TASKS), t.out, re.M), t.out[t.out.find("Tokio runtime"):])


def test_long_poll_named():
    for name, _ in VERSIONS:
        long_poll(name)


def long_poll(fx_name):
    """long_poll sleeps an hour between two awaits on one worker (its TID
    and the line of the sleep written by the fixture); yielder, on the
    other, polls again and again (20 ms each). Over 3 snapshots `locks`
    names the first as a long poll, with its task, where it is and for at
    least the time between the snapshots; never the second, whose
    worker's tick moves."""
    with Tokio(fx_name, mode="longpoll") as tk:
        tid, line = (int(x) for x in mode_lines(tk.file)["long-poll"][0])
        j1 = sdtest.run("--format", "json", tk.fx.pid)
        j2 = sdtest.run("--format", "json", tk.fx.pid)
        r = sdtest.run("locks", "--count", "3", "--interval", "200ms", tk.fx.pid)
        lj = sdtest.run("locks", "--format", "json", "--count", "2", "--interval", "200ms",
                        tk.fx.pid)
        sdtest.assert_running(tk.fx.pid)
    eq(r.rc, DEADLOCK, r.err)
    eq(lj.rc, DEADLOCK, lj.err)
    d1, d2 = j1.json(), j2.json()
    tasks = by_future(d2["runtimes"][0])
    lp = tasks["fx_tokio::long_poll"]
    eq((lp["state"], lp["worker"]), ("running", tid), lp)
    p1 = {p["thread"]: p for p in d1["runtimes"][0]["polling"]}
    p2 = {p["thread"]: p for p in d2["runtimes"][0]["polling"]}
    eq(p1[tid]["task"], lp["id"])
    ok(p1[tid]["tick"] is not None and p1[tid]["tick"] == p2[tid]["tick"], (p1, p2))
    y = tasks["fx_tokio::yielder"]
    for t in set(p1) & set(p2):
        if t != tid and p1[t]["task"] == p2[t]["task"] == y["id"]:
            # Polled again, not once: its worker took other tasks between.
            ok(p1[t]["tick"] != p2[t]["tick"], (p1[t], p2[t]))
    m = re.findall(r"^  worker (\d+) \"tokio-runtime-w\" has polled task (\d+), (\S+) at "
                   r"main\.rs:(\d+), for at least ([0-9.]+) s \(one poll: its tick (\d+) in 3 "
                   r"snapshots\)$", r.out, re.M)
    eq(len(m), 1, r.out[r.out.find("Long polls"):])
    w, task, fut, at, secs, tick = m[0]
    eq((int(w), int(task), fut, int(at), int(tick)),
       (tid, lp["id"], "fx_tokio::long_poll", line, p1[tid]["tick"]), m)
    # Two intervals at least lie between the first and the last snapshot.
    ok(float(secs) >= 0.4, secs)
    contains(r.out, "Long polls (the same poll of a task in the last 3 snapshots):")
    lps = lj.json()["long_polls"]
    eq([(x["tid"], x["task"], x["future"], x["line"], x["tick"], x["snapshots"]) for x in lps],
       [(tid, lp["id"], "fx_tokio::long_poll", line, p1[tid]["tick"], 2)], lps)
    ok(lps[0]["seconds"] >= 0.2 and lps[0]["file"].endswith("main.rs"), lps)


def test_profile_and_top_name_the_long_poll():
    for name, _ in VERSIONS:
        profile_top_long_poll(name)


LONG_POLL_LINE = (r"worker %d \"tokio-runtime-w\" has polled task %d, fx_tokio::long_poll at "
                  r"main\.rs:%d, for at least ([0-9.]+) s \(one poll: its tick %d in (\d+) "
                  r"samples\)")


def profile_top_long_poll(fx_name):
    """Sampled by profile (either engine) and top, long_poll's one poll of
    an hour on its worker (TID and line from the fixture; task and tick
    from a dump) is named over the samples: after the profile in text, as
    long_polls in JSON, on stderr for folded stacks, on top's screens; the
    yielder, polled again and again, never is. A program without Tokio has
    no such member."""
    with Tokio(fx_name, mode="longpoll") as tk:
        tid, line = (int(x) for x in mode_lines(tk.file)["long-poll"][0])
        d = sdtest.run("--format", "json", tk.fx.pid).json()
        runs = {}
        # Counted samples, not a duration: 10 at 5 Hz lie 1.8 s apart at
        # least, however late each comes.
        for engine in ("perf", "ptrace"):
            runs[engine] = sdtest.run("profile", "--engine", engine, "--count", "10", "--rate",
                                      "5", "-q", tk.fx.pid)
        pj = sdtest.run("profile", "--format", "json", "--count", "10", "--rate", "5", "-q",
                        tk.fx.pid)
        pf = sdtest.run("profile", "--format", "folded", "--count", "10", "--rate", "5", "-q",
                        tk.fx.pid)
        top = sdtest.run("top", "--count", "3", "--rate", "5", "--refresh", "1s", tk.fx.pid)
        sdtest.assert_running(tk.fx.pid)
    tasks = by_future(d["runtimes"][0])
    lp, y = tasks["fx_tokio::long_poll"], tasks["fx_tokio::yielder"]
    tick = [p["tick"] for p in d["runtimes"][0]["polling"] if p["thread"] == tid]
    eq(len(tick), 1, d["runtimes"][0]["polling"])
    want = LONG_POLL_LINE % (tid, lp["id"], line, tick[0])
    for engine, r in runs.items():
        eq(r.rc, 0, (engine, r.err))
        at = r.out.find("\nLong polls of Tokio tasks (one poll across samples, longest first):\n")
        ok(at > 0, (engine, r.out[-2000:]))
        m = re.findall(r"^  " + want + r", still in it at the last sample$", r.out[at:], re.M)
        eq(len(m), 1, (engine, r.out[at:]))
        ok(float(m[0][0]) >= 0.2 and int(m[0][1]) >= 2, m)
        ok("task %d," % y["id"] not in r.out[at:], (engine, r.out[at:]))
    eq(pj.rc, 0, pj.err)
    lps = pj.json()["long_polls"]
    eq([(x["pid"], x["tid"], x["name"], x["task"], x["future"], x["function"], x["line"],
         x["tick"], x["ongoing"]) for x in lps],
       [(tk.fx.pid, tid, "tokio-runtime-w", lp["id"], "fx_tokio::long_poll",
         "fx_tokio::long_poll::{async_fn#0}", line, tick[0], True)], lps)
    ok(lps[0]["file"].endswith("main.rs") and lps[0]["snapshots"] >= 2 and
       lps[0]["seconds"] >= 0.2 and lps[0]["runtime"] == d["runtimes"][0]["id"], lps)
    eq(pf.rc, 0, pf.err)
    ok(re.search(r"^  " + want, pf.err, re.M), pf.err)
    ok("Long polls" not in pf.out, pf.out[-500:])
    eq(top.rc, 0, top.err)
    screens = top.out.split("stackdump top: ")
    eq(len(screens), 4, top.out[-3000:])
    m = re.findall(r"^long poll: " + want + r"$", screens[-1], re.M)
    eq(len(m), 1, screens[-1])
    ok("task %d," % y["id"] not in top.out, top.out)
    # Nothing of the kind for a program without Tokio.
    with start("fx-idle") as fx:
        plain = sdtest.run("profile", "--format", "json", "--count", "3", "--rate", "10", "-q",
                           fx.pid)
    eq(plain.rc, 0, plain.err)
    ok("long_polls" not in plain.json(), list(plain.json()))


def test_locks_json_names_the_locks_among_tasks():
    for name, _ in VERSIONS:
        locks_json(name)


def locks_json(fx_name):
    """`locks --format json`: each tokio::sync lock a task holds or awaits,
    with its waiting tasks and its holder (inferred, with the evidence):
    holder_task keeps the Mutex mutex_task awaits, abba_a and abba_b each
    keep the one the other awaits, sem_task awaits a Semaphore nobody
    holds; the cycle among tasks, and the findings (task deadlock,
    FutureLock) as the dump has them. A program without Tokio has none."""
    with Tokio(fx_name) as tk:
        want = expected(tk.file)
        d = sdtest.run("--format", "json", tk.fx.pid).json()
        r = sdtest.run("locks", "--format", "json", tk.fx.pid)
        sdtest.assert_running(tk.fx.pid)
    eq(r.rc, DEADLOCK, r.err)
    doc = r.json()
    tasks = by_future(d["runtimes"][0])
    rts = doc["tokio"]["runtimes"]
    eq([x["id"] for x in rts], [d["runtimes"][0]["id"]], rts)
    locks = {int(x["address"], 16): x for x in rts[0]["locks"]}
    for holder, var, waiter in (("holder_task", "g", "mutex_task"), ("abba_a", "g1", "abba_b"),
                                ("abba_b", "g2", "abba_a")):
        h, w = tasks["fx_tokio::" + holder], tasks["fx_tokio::" + waiter]
        hold_line = want[holder.replace("_task", "")][1][0][1]
        x = locks.get(h["holds"][0]["address"])
        ok(x, (holder, locks))
        eq((x["kind"], x["waiters"], x["holder"], x["holder_future"], x["inferred"], x["holders"]),
           ("tokio::sync::Mutex", [w["id"]], h["id"], "fx_tokio::" + holder, True, [h["id"]]), x)
        ok(re.match(r"%s in fx_tokio::%s at \S*src/main\.rs:%d$" % (var, holder, hold_line),
                    x["evidence"]), x)
    sem = tasks["fx_tokio::sem_task"]
    sx = [x for x in rts[0]["locks"] if x["waiters"] == [sem["id"]]]
    eq([(x["kind"], x["holder"], x["inferred"], x["evidence"], x["holders"]) for x in sx],
       [("tokio::sync::Semaphore", None, False, None, [])], sx)
    eq(sx[0]["address"], sem["waits_for"], (sx, sem))
    eq(len(rts[0]["locks"]), 4, rts[0]["locks"])
    a, b = tasks["fx_tokio::abba_a"], tasks["fx_tokio::abba_b"]
    eq([sorted(c) for c in rts[0]["deadlocks"]], [sorted([a["id"], b["id"]])], rts)
    kinds = {f["kind"]: f for f in doc["findings"]}
    eq(sorted(kinds), sorted(f["kind"] for f in d["findings"]), (doc["findings"], d["findings"]))
    eq(sorted(kinds["task_deadlock"]["tasks"]), sorted([a["id"], b["id"]]), kinds)
    eq(kinds["future_lock"]["tasks"],
       [tasks["fx_tokio::holder_task"]["id"], tasks["fx_tokio::mutex_task"]["id"]], kinds)
    with start("fx-idle") as fx:
        plain = sdtest.run("locks", "--format", "json", fx.pid)
    eq(plain.rc, 0, plain.err)
    ok("tokio" not in plain.json() and plain.json()["findings"] == [], plain.json())


def shell(*lines):
    return sdtest.run(input="\n".join(lines) + "\n")


def record(tk, count):
    """COUNT snapshots of TK's fixture recorded 300 ms apart: the
    recording's directory and its snapshot files, in order."""
    out = os.path.join(tk.tmp.name, "rec")
    rec = sdtest.run("record", tk.fx.pid, "--out", out, "--every", "300ms", "--count", str(count))
    sdtest.assert_running(tk.fx.pid)
    eq(rec.rc, 0, rec.err)
    files = sorted(f for f in os.listdir(out) if f.startswith("snap-"))
    eq(len(files), count, files)
    return out, files


def test_record_and_report_keep_the_tasks():
    for name, src in VERSIONS:
        record_report(name, src)


def record_report(fx_name, src):
    """record saves each snapshot's runtimes and tasks; every saved chain
    agrees with what the fixture wrote; `report` names the deadlock among
    tasks, the FutureLock and the long poll (with its worker, task and
    line, over the 3 snapshots); a saved file without tasks (as older ones
    are) loads; one whose tasks are damaged loads with a note, its
    threads intact."""
    with Tokio(fx_name, mode="longpoll") as tk:
        want = expected(tk.file)
        tid, line = (int(x) for x in mode_lines(tk.file)["long-poll"][0])
        out, files = record(tk, 3)
        for f in files:
            with open(os.path.join(out, f)) as fh:
                doc = json.load(fh)
            eq(len(doc["runtimes"]), 1, f)
            rt = doc["runtimes"][0]
            chains_agree(rt, want, src, want)
            lp = by_future(rt)["fx_tokio::long_poll"]
            eq((lp["state"], lp["worker"]), ("running", tid), lp)
            eq([p["task"] for p in rt["polling"] if p["thread"] == tid], [lp["id"]], rt["polling"])
            kinds = [x["kind"] for x in doc["findings"]]
            ok("task_deadlock" in kinds and "future_lock" in kinds, kinds)
        r = sdtest.run("report", out)
        j = sdtest.run("report", "--format", "json", out)
        # Loaded back: the tasks, as the dump showed them.
        first = os.path.join(out, files[0])
        ld = shell("load " + first, "dump")
        # A file saved without tasks (before they were saved), and one
        # whose tasks are damaged.
        with open(first) as fh:
            doc = json.load(fh)
        old = dict(doc)
        del old["runtimes"], old["tokio"]
        bad = json.loads(json.dumps(doc))
        bad["runtimes"][0]["tasks"][0]["state"] = "sleeping"
        paths = []
        for name, d in (("old.json", old), ("bad.json", bad)):
            paths.append(os.path.join(tk.tmp.name, name))
            with open(paths[-1], "w") as fh:
                json.dump(d, fh)
        lo = shell("load " + paths[0], "dump")
        lb = shell("load " + paths[1], "dump")
    eq(r.rc, 0, r.err)
    tasks = by_future(doc["runtimes"][0])
    a, b = tasks["fx_tokio::abba_a"], tasks["fx_tokio::abba_b"]
    h = tasks["fx_tokio::holder_task"]
    ok(re.search(r"^  deadlock among tasks: 2 tasks wait for each other's locks in %d \"%s\"\n"
                 r"    \S+-\S+, snapshots 1-3$" % (doc["pid"], doc["comm"]), r.out, re.M), r.out)
    ok(re.search(r"^  FutureLock: task %d fx_tokio::holder_task holds tokio::sync::Mutex 0x%x " %
                 (h["id"], h["holds"][0]["address"]), r.out, re.M), r.out)
    m = re.search(r"^  long poll in %d \"%s\": worker %d \"tokio-runtime-w\" has polled task %d, "
                  r"fx_tokio::long_poll at main\.rs:%d, for at least ([0-9.]+) s \(one poll: its "
                  r"tick \d+ in 3 snapshots\)\n    \S+-\S+, snapshots 1-3$" %
                  (doc["pid"], doc["comm"], tid, tasks["fx_tokio::long_poll"]["id"], line),
                  r.out, re.M)
    ok(m and float(m.group(1)) >= 0.6, r.out)
    eq(r.out.count("long poll in "), 1, r.out)
    # Deadlocks first: the one among tasks before any other kind.
    eq(j.rc, 0, j.err)
    kinds = [x["kind"] for x in j.json()["findings"]]
    ok(kinds and kinds[0] == "task_deadlock" and "future_lock" in kinds and
       "long_poll" in kinds, kinds)
    poll = [x for x in j.json()["findings"] if x["kind"] == "long_poll"][0]
    eq((poll["tids"], poll["first"], poll["last"]), ([tid], 1, 3), poll)
    ok(re.search(r"^task %d \[idle\] fx_tokio::abba_a$" % a["id"], ld.out, re.M), ld.out)
    contains(ld.out, "Found 1 deadlock among tasks:")
    ok("Tokio" not in lo.out and "Thread " in lo.out, lo.out)
    contains(lb.out, "note: the saved tasks could not be read (task %d: no state of the five): "
             "not shown" % doc["runtimes"][0]["tasks"][0]["id"])
    contains(lb.out, "Thread ")
    ok(not re.search(r"^task \d+ ", lb.out, re.M), lb.out)
    ok(a["held_by"] == b["id"] and b["held_by"] == a["id"], (a, b))


def test_report_names_the_stall():
    with Tokio(mode="stall") as tk:
        m = mode_lines(tk.file)
        out = os.path.join(tk.tmp.name, "rec")
        rec = sdtest.run("record", tk.fx.pid, "--out", out, "--every", "200ms", "--count", "2")
        sdtest.assert_running(tk.fx.pid)
        r = sdtest.run("report", out)
    eq(rec.rc, 0, rec.err)
    eq(r.rc, 0, r.err)
    addr = int(m["stall-mutex"][0][0], 16)
    holder = int(m["stall-holder"][0][0])
    ok(re.search(r"^  Tokio stall: 3 workers parked on rust-mutex 0x%x <fx_tokio::STALL>: .*\n"
                 r"    \S+-\S+, snapshots 1-2\n"
                 r"    held by thread %d \"tokio-runtime-w\" \(inferred\), polling task \d+ "
                 r"fx_tokio::stall_holder$" % (addr, holder), r.out, re.M), r.out)
    for w in m["stall-want"]:
        ok(re.search(r"^    worker %s \"tokio-runtime-w\" parked, polling task \d+ "
                     r"fx_tokio::stall_want$" % w[0], r.out, re.M), r.out)


def test_threads_only():
    with Tokio() as tk:
        j = sdtest.run("--threads", "--format", "json", tk.fx.pid)
        t = sdtest.run("--threads", tk.fx.pid)
    eq(j.rc, 0, j.err)
    doc = j.json()
    ok("runtimes" not in doc and "tokio" not in doc, list(doc))
    ok(doc["threads"], doc)
    ok("Tokio" not in t.out, t.out)
    contains(t.out, "Thread ")


def test_stripped_binary_says_what_to_rebuild_with():
    with Tokio("fx-tokio-stripped") as tk:
        r = sdtest.run("--format", "json", tk.fx.pid)
        t = sdtest.run(tk.fx.pid)
        sdtest.assert_running(tk.fx.pid)
    eq(r.rc, 0, r.err)
    doc = r.json()
    note = doc["tokio"]["note"]
    ok(note and "no DWARF" in note and "debug = 2" in note, note)
    eq(doc["runtimes"], [])
    ok(len(doc["threads"]) >= 3, "every thread is still shown")
    eq(t.rc, 0, t.err)
    contains(t.out, "note: tasks not shown")
    contains(t.out, "Thread ")


def test_limited_debug_info_says_what_to_rebuild_with():
    with Tokio("fx-tokio-limited") as tk:
        r = sdtest.run("--format", "json", tk.fx.pid)
        t = sdtest.run(tk.fx.pid)
        sdtest.assert_running(tk.fx.pid)
    eq(r.rc, 0, r.err)
    doc = r.json()
    note = doc["tokio"]["note"]
    ok(note and "no DWARF type tokio::runtime::task::core::Header" in note and
       "limited debug info" in note and "debug = 2" in note, note)
    eq(doc["runtimes"], [])
    ok(len(doc["threads"]) >= 3, "every thread is still shown")
    # The threads' frames are still symbolized from the line tables.
    fns = [f["function"] for th in doc["threads"] for f in th["frames"] if f["function"]]
    ok(any("tokio::runtime" in f for f in fns), fns)
    eq(t.rc, 0, t.err)
    contains(t.out, "note: tasks not shown")


def test_unknown_layout_is_named_and_threads_stay():
    for name, _ in VERSIONS:
        unknown_layout(name)


def unknown_layout(fx_name):
    """A Tokio whose layout the reader does not know (the task trailer's
    field `owned` renamed in a copy's DWARF, as a version that renamed it
    would be): a note names the field it looked for, no task is shown, the
    threads are, and the dump succeeds."""
    need(fx_name)
    with tempfile.TemporaryDirectory() as tmp:
        copy = copy_renamed(tmp, fx_name, b"\0owned\0", b"\0ownex\0")
        with start(copy, os.path.join(tmp, "awaits")) as fx:
            r = sdtest.run("--format", "json", fx.pid)
            t = sdtest.run(fx.pid)
            sdtest.assert_running(fx.pid)
    eq(r.rc, 0, r.err)
    doc = r.json()
    note = doc["tokio"]["note"]
    ok(note and "a Tokio layout stackdump does not know" in note and "owned" in note, note)
    eq(doc["runtimes"], [])
    ok(len(doc["threads"]) >= 3 and all(th["frames"] for th in doc["threads"]), doc["threads"])
    eq(t.rc, 0, t.err)
    contains(t.out, "note: tasks not shown: a Tokio layout stackdump does not know")
    sdtest.matches(t.out, r"^Thread \d+ \"")


def test_other_programs_have_no_tasks():
    with start("fx-idle") as fx:
        r = sdtest.run("--format", "json", fx.pid)
        t = sdtest.run(fx.pid)
    eq(r.rc, 0, r.err)
    doc = r.json()
    ok("runtimes" not in doc and "tokio" not in doc, list(doc))
    ok("Tokio" not in t.out, t.out)


def test_blocking_pool_jobs_named():
    for name, _ in VERSIONS:
        blocking_pool(name)


def blocking_pool(fx_name):
    """blocking_job, the closure of start_blocking run by spawn_blocking,
    holds the std Mutex BLOCK on a thread of the blocking pool; a short
    job has left a second thread of the pool idle; the 2 workers park on
    BLOCK. The blocking pool's threads are named with what they run (the
    job as the fixture's std::any::type_name spells its type, less the
    closure's index), the idle one idle, neither of them a worker; the
    std-mutex stall names the job as the holder's, in JSON and text."""
    with Tokio(fx_name, mode="blocking") as tk:
        m = mode_lines(tk.file)
        j = sdtest.run("--format", "json", tk.fx.pid)
        t = sdtest.run(tk.fx.pid)
        lk = sdtest.run("locks", tk.fx.pid)
        sdtest.assert_running(tk.fx.pid)
    job_tid, idle_tid = int(m["blocking-job"][0][0]), int(m["blocking-idle"][0][0])
    wanters = sorted(int(x[0]) for x in m["block-want"])
    eq(len(wanters), 2, m)
    # type_name spells a closure "{{closure}}", DWARF "{closure#N}".
    want_type = m["blocking-type"][0][0]
    ok(want_type.endswith("::{{closure}}"), want_type)
    eq(j.rc, DEADLOCK, j.err)
    doc = j.json()
    rt = doc["runtimes"][0]
    by_tid = {b["thread"]: b for b in rt["blocking"]}
    eq(sorted(by_tid), sorted([job_tid, idle_tid]), rt["blocking"])
    job = by_tid[job_tid]
    eq(job["state"], "running", job)
    ok(job["job"] and re.sub(r"\{closure#\d+\}$", "{{closure}}", job["job"]) == want_type,
       (job, want_type))
    eq(by_tid[idle_tid], {"thread": idle_tid, "state": "idle", "job": None}, by_tid)
    # The pool's threads are not the runtime's workers; the parked ones are.
    eq(set(rt["workers"]) & {job_tid, idle_tid}, set(), rt["workers"])
    ok(set(wanters) <= set(rt["workers"]), (wanters, rt["workers"]))
    stalls = [f for f in doc["findings"] if f["kind"] == "tokio_stall"]
    eq(len(stalls), 1, doc["findings"])
    eq(stalls[0]["objects"][0]["symbol"], "fx_tokio::BLOCK", stalls)
    eq(sorted(stalls[0]["threads"]), wanters, stalls)
    eq(stalls[0]["holder"], job_tid, stalls)
    eq(stalls[0]["holder_task"], None, stalls)
    eq(stalls[0]["holder_job"], job["job"], stalls)
    eq(t.rc, DEADLOCK, t.err)
    esc = re.escape(job["job"])
    ok(re.search(r"^  blocking pool thread %d runs spawn_blocking job %s$" % (job_tid, esc),
                 t.out, re.M), t.out[-4000:])
    ok(re.search(r"^  blocking pool thread %d idle, waiting for a job$" % idle_tid, t.out, re.M),
       t.out[-4000:])
    for out in (t.out, lk.out):
        ok(re.search(r"^  Tokio stall: 2 workers parked on rust-mutex 0x[0-9a-f]+ "
                     r"<fx_tokio::BLOCK>", out, re.M), out[-3000:])
        ok(re.search(r"^    held by thread %d \"tokio-runtime-w\" \(inferred\), running "
                     r"spawn_blocking job %s$" % (job_tid, esc), out, re.M), out[-3000:])


def test_record_keeps_the_pool_and_queues():
    for name, _ in VERSIONS:
        record_pool(name)


def record_pool(fx_name):
    """A recording of the blocking-pool stall keeps what the dump showed
    of the runtime's threads and queues: each saved snapshot has the
    pool's threads (the job, the idle one) and the workers' local queue
    depths; `load` shows them again as the live dump showed them (text and
    JSON); `report` names the job the holder runs; a file whose depths do
    not match its workers loads with a note, its threads intact."""
    with Tokio(fx_name, mode="blocking") as tk:
        m = mode_lines(tk.file)
        live = sdtest.run("--format", "json", tk.fx.pid)
        lt = sdtest.run(tk.fx.pid)
        out, files = record(tk, 2)
        first = os.path.join(out, files[0])
        with open(first) as fh:
            saved = json.load(fh)
        ld = shell("load " + first, "dump")
        lj = shell("load " + first, "dump --format json")
        r = sdtest.run("report", out)
        bad = json.loads(json.dumps(saved))
        bad["runtimes"][0]["queued"] = bad["runtimes"][0]["queued"][:1]
        path = os.path.join(tk.tmp.name, "bad.json")
        with open(path, "w") as fh:
            json.dump(bad, fh)
        lb = shell("load " + path, "dump")
    job_tid, idle_tid = int(m["blocking-job"][0][0]), int(m["blocking-idle"][0][0])
    want = live.json()["runtimes"][0]
    job = {b["thread"]: b for b in want["blocking"]}[job_tid]["job"]
    ok(job, want["blocking"])
    rt = saved["runtimes"][0]
    eq(sorted(rt["blocking"], key=lambda b: b["thread"]),
       sorted(want["blocking"], key=lambda b: b["thread"]))
    eq(rt["queued"], want["queued"])
    eq(len(rt["queued"]), len(rt["workers"]), rt)
    ok(lj.rc in (0, DEADLOCK), lj.err)
    doc = json.loads(lj.out[lj.out.index("{"):])
    back = doc["runtimes"][0]
    eq((back["blocking"], back["queued"], back["injected"]),
       (rt["blocking"], rt["queued"], rt["injected"]))
    esc = re.escape(job)
    for text in (lt.out, ld.out):
        ok(re.search(r"^  blocking pool thread %d runs spawn_blocking job %s$" % (job_tid, esc),
                     text, re.M), text[-4000:])
        ok(re.search(r"^  blocking pool thread %d idle, waiting for a job$" % idle_tid, text,
                     re.M), text[-4000:])
    hdr = lambda text: re.findall(r"^PID \d+ \(\S+\) Tokio runtime 0x[0-9a-f]+ \(multi_thread\).*$",
                                   text, re.M)
    # The runtime's header line, its local queues with it, as live.
    ok(hdr(lt.out) and ", local queues " in hdr(lt.out)[0], hdr(lt.out) or lt.out[:3000])
    eq(hdr(ld.out), hdr(lt.out))
    eq(r.rc, 0, r.err)
    ok(re.search(r"running spawn_blocking job %s" % esc, r.out), r.out)
    contains(lb.out, "note: the saved tasks could not be read (queued: 1 depths for %d "
             "workers): not shown" % len(rt["workers"]))
    contains(lb.out, "Thread ")


def test_local_queue_depths():
    for name, _ in VERSIONS:
        local_queues(name)


def local_queues(fx_name):
    """Each multi_thread worker's local run queue is read (a count for
    every worker but block_on's thread): with every task parked, all
    empty; in the std-mutex stall (200 tasks spawned from block_on's
    thread, 3 workers parked, none taking more), the tasks in the global
    queue and in the workers' local queues are those the task headers
    say are scheduled."""
    with Tokio(fx_name) as tk:
        doc = sdtest.run("--format", "json", tk.fx.pid).json()
        t = sdtest.run(tk.fx.pid)
    rt = doc["runtimes"][0]
    eq(len(rt["queued"]), len(rt["workers"]), rt)
    for tid, q in zip(rt["workers"], rt["queued"]):
        eq(q, None if tid == doc["pid"] else 0, (tid, rt["queued"]))
    ok(re.search(r"Tokio runtime 0x[0-9a-f]+ \(multi_thread\), .*, local queues( \d+:0){2}$",
                 t.out, re.M), t.out)
    with Tokio(fx_name, mode="stall") as tk:
        doc = sdtest.run("--format", "json", tk.fx.pid).json()
        sdtest.assert_running(tk.fx.pid)
    rt = doc["runtimes"][0]
    qs = [q for tid, q in zip(rt["workers"], rt["queued"]) if tid != doc["pid"]]
    eq(len(qs), 4, rt)
    ok(all(isinstance(q, int) for q in qs), rt["queued"])
    scheduled = sum(1 for x in rt["tasks"] if x["state"] == "scheduled")
    ok(scheduled > 100, scheduled)
    eq(rt["injected"] + sum(qs), scheduled, (rt["injected"], qs))


def test_rwlock_guards_held():
    for name, src in VERSIONS:
        rwlock_guards(name, src)


def rwlock_guards(fx_name, src):
    """rw_wholder keeps a write guard of one tokio::sync::RwLock while it
    awaits a Notify, and rw_reader waits to read it; rw_rholder keeps a
    read guard of another, and rw_writer waits to write it. Each holder
    holds (inferred) the lock its waiter awaits, with the variable as its
    evidence; both are FutureLocks; `locks` names the holders."""
    with Tokio(fx_name, mode="rwlock") as tk:
        want = expected(tk.file)
        j = sdtest.run("--format", "json", tk.fx.pid)
        lk = sdtest.run("locks", tk.fx.pid)
        sdtest.assert_running(tk.fx.pid)
    doc = j.json()
    rt = doc["runtimes"][0]
    names = ["rw_wholder", "rw_rholder", "rw_reader", "rw_writer"]
    chains_agree(rt, want, src, names)
    tasks = by_future(rt)
    fl = [f for f in doc["findings"] if f["kind"] == "future_lock"]
    for holder, waiter in (("rw_wholder", "rw_reader"), ("rw_rholder", "rw_writer")):
        h, w = tasks["fx_tokio::" + holder], tasks["fx_tokio::" + waiter]
        line = want[holder][1][0][1]
        eq(len(h["holds"]), 1, h)
        hd = h["holds"][0]
        eq((hd["kind"], hd["inferred"]), ("tokio::sync::RwLock", True), hd)
        ok(hd["evidence"].startswith("g in fx_tokio::%s at " % holder) and
           hd["evidence"].endswith("src/main.rs:%d" % line), hd)
        eq(w["held_by"], h["id"], w)
        eq(w["waits_for"], "0x%x" % hd["address"], w)
        eq(w["awaits"][-1]["detail"], "tokio::sync::RwLock 0x%x" % hd["address"], w)
        ok(any(f["holder_task"] == h["id"] and
               f["objects"][0]["kind"] == "tokio::sync::RwLock" for f in fl), fl)
        ok(re.search(r"^tokio::sync::RwLock 0x%x: held \(inferred\) by task %d fx_tokio::%s$" %
                     (hd["address"], h["id"], holder), lk.out, re.M), lk.out)


def test_separate_debug_file():
    """fx-tokio with its DWARF moved to a separate debug file beside it
    (objcopy --only-keep-debug, then --strip-debug --add-gnu-debuglink):
    its tasks are read from that file, every chain as the fixture wrote
    it; with another program's debug file under its name, or none, the
    note says what to rebuild with."""
    need("fx-tokio")
    import shutil
    import subprocess
    from fixture import path_of
    with tempfile.TemporaryDirectory() as d:
        exe, dbg = os.path.join(d, "fx-tokio"), os.path.join(d, "fx-tokio.debug")
        shutil.copy(path_of("fx-tokio"), exe)
        for cmd in (["objcopy", "--only-keep-debug", exe, dbg],
                    ["objcopy", "--strip-debug", "--add-gnu-debuglink=" + dbg, exe]):
            subprocess.run(cmd, check=True)
        out = subprocess.run(["readelf", "-S", exe], check=True, capture_output=True,
                             text=True).stdout
        ok(".debug_info" not in out and ".gnu_debuglink" in out, out)
        aw = os.path.join(d, "awaits")
        with start(exe, aw) as fx:
            want = expected(aw)
            r = sdtest.run("--format", "json", fx.pid)
            sdtest.assert_running(fx.pid)
        eq(r.rc, DEADLOCK, r.err)
        doc = r.json()
        eq(doc["tokio"]["note"], None)
        rt = doc["runtimes"][0]
        eq(len(rt["tasks"]), TASKS, [t["future"] for t in rt["tasks"]])
        chains_agree(rt, want, "/tokio-1.24", want)
        # Another program's debug file under that name is not its: none.
        need("fx-tokio-143")
        os.unlink(dbg)
        subprocess.run(["objcopy", "--only-keep-debug", path_of("fx-tokio-143"), dbg], check=True)
        for k in range(2):
            if k:
                os.unlink(dbg)
            with start(exe, aw + str(k)) as fx:
                r = sdtest.run("--format", "json", fx.pid)
            eq(r.rc, 0, r.err)
            note = r.json()["tokio"]["note"]
            ok(note and "nor a separate debug file" in note and "debug = 2" in note, note)


if __name__ == "__main__":
    sdtest.main(globals())
