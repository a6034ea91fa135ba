# SPDX-License-Identifier: MIT
# Lock analysis against live fixtures: every mutex kind, rwlocks both ways,
# condvar pools, semaphores, joins, C++ and Rust locks, 1/2/3-cycle
# deadlocks, idle I/O waits and lock churn. Each test checks the `locks`
# JSON, its text view, the exit code (3 = deadlock), and the wait in the
# thread headers and JSON of a dump. The target is never left stopped.
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
from fixture import start  # noqa: E402
from sdtest import contains, eq, matches, ok  # noqa: E402

HEX = r"0x[0-9a-f]+"


def locks_json(pid, *extra, rc=0):
    r = sdtest.run("locks", "--format", "json", *extra, pid)
    eq(r.rc, rc, "locks exit code: %s" % r.err)
    sdtest.assert_running(pid)
    doc = r.json()
    eq(doc["pid"], pid)
    return doc


def locks_text(pid, *extra, rc=0):
    r = sdtest.run("locks", *extra, pid)
    eq(r.rc, rc, "locks exit code: %s" % r.err)
    sdtest.assert_running(pid)
    return r.out


def dump_waits(pid):
    """{tid: wait object or None} from a JSON dump."""
    r = sdtest.run("--format", "json", pid)
    eq(r.rc, 0, r.err)
    sdtest.assert_running(pid)
    return {t["tid"]: t["wait"] for t in r.json()["threads"]}


def dump_headers(pid, rc=0):
    """{tid: header line} from a text dump (RC 3: it holds a deadlock)."""
    r = sdtest.run(pid)
    eq(r.rc, rc, r.err)
    out = {}
    for line in r.out.splitlines():
        m = re.match(r"Thread (\d+) ", line)
        if m:
            out[int(m.group(1))] = line
    return out


def label(tid, name):
    return '%d "%s"' % (tid, name)


def one(tids, name):
    v = tids[name]
    eq(len(v), 1, "threads named %s: %r" % (name, v))
    return v[0]


def waiters_named(tids, prefix, n):
    return sorted(tids["%s-%d" % (prefix, i)][0] for i in range(1, n + 1))


def check_lock(lock, kind, symbol, owner, waiters):
    eq(lock["kind"], kind, repr(lock))
    ok(re.fullmatch(HEX, lock["address"]), lock["address"])
    if symbol is not None:
        eq(lock["symbol"], symbol, repr(lock))
    eq(lock["owner"], owner, repr(lock))
    eq(lock["waiters"], waiters, repr(lock))


# ---- mutexes ----

def mutex_case(kind, n=3):
    with start("fx-mutex", kind, n, parked=n) as fx:
        tids = fx.tids_by_name()
        holder = one(tids, "holder")
        waiters = waiters_named(tids, "waiter", n)
        doc = locks_json(fx.pid)
        eq(len(doc["locks"]), 1, repr(doc["locks"]))
        lock = doc["locks"][0]
        check_lock(lock, "mutex", "g_ledger_lock", holder, waiters)
        eq(lock["owner_name"], "holder")
        eq(doc["deadlocks"], [])
        eq(doc["idle"], [])

        text = locks_text(fx.pid)
        matches(text, r"^mutex %s <g_ledger_lock> \(.*\), %d waiters$" % (HEX, n))
        contains(text, "  held by %s, " % label(holder, "holder"))
        contains(text, "holder_critical_section")
        contains(text, "  waiting (%d, same stack): %s" % (
            n, ", ".join(label(t, "waiter-%d" % (i + 1)) for i, t in enumerate(waiters))))
        contains(text, "waiter_post")
        contains(text, "No deadlock found.")

        waits = dump_waits(fx.pid)
        eq(waits[holder], None)
        for t in waiters:
            w = waits[t]
            eq((w["kind"], w["symbol"], w["owner"]), ("mutex", "g_ledger_lock", holder))
            eq(w["address"], lock["address"])
        head = dump_headers(fx.pid)
        matches(head[waiters[0]], r'^Thread %d "waiter-1" S waiting for mutex %s '
                r'<g_ledger_lock> held by %s$' % (waiters[0], HEX, re.escape(label(holder, "holder"))))
        return lock


def _mutex_test(kind, subkind):
    def test():
        lock = mutex_case(kind)
        contains(lock["type"], subkind)
    test.__name__ = "test_mutex_" + kind
    return test


for _k, _sub in (("normal", "normal"), ("recursive", "recursive"), ("errorcheck", "errorcheck"),
                 ("adaptive", "adaptive"), ("robust", "robust"), ("pi", "pi"),
                 ("timed", "timed"), ("pshared", "pshared")):
    globals()["test_mutex_" + _k] = _mutex_test(_k, _sub)


def test_mutex_timed_restarted():
    # After a first ptrace stop, timed waits sit in restart_syscall (219):
    # still the same wait.
    with start("fx-mutex", "timed", 2, parked=2) as fx:
        holder = fx.tid("holder")
        for _ in range(3):
            doc = locks_json(fx.pid)
            eq(len(doc["locks"]), 1)
            eq(doc["locks"][0]["owner"], holder)
            eq(len(doc["locks"][0]["waiters"]), 2)


def test_mutex_orphan():
    # The owner exited holding the lock: its TID is named, it is not in the
    # process, no deadlock.
    with start("fx-mutex", "orphan", 2, parked=2) as fx:
        tids = fx.tids_by_name()
        waiters = waiters_named(tids, "waiter", 2)
        doc = locks_json(fx.pid)
        lock = doc["locks"][0]
        eq(lock["waiters"], waiters)
        ok(lock["owner"] is not None, repr(lock))
        ok(lock["owner"] not in [t for v in tids.values() for t in v], repr(lock))
        eq(lock["owner_name"], None)
        contains(lock["note"], "exited")
        eq(doc["deadlocks"], [])
        text = locks_text(fx.pid)
        matches(text, r"  held by %d \(the owner is not a thread of this process" % lock["owner"])


# ---- rwlocks ----

def test_rwlock_writer_holds():
    with start("fx-rwlock", "writer-holds", 2, parked=2) as fx:
        tids = fx.tids_by_name()
        writer = one(tids, "writer")
        readers = waiters_named(tids, "reader", 2)
        doc = locks_json(fx.pid)
        eq(len(doc["locks"]), 1)
        lock = doc["locks"][0]
        check_lock(lock, "rwlock", "g_table_lock", writer, readers)
        eq((lock["readers_waiting"], lock["writers_waiting"]), (2, 0))
        text = locks_text(fx.pid)
        matches(text, r"^rwlock %s <g_table_lock>, 2 waiters$" % HEX)
        contains(text, "  held by %s, " % label(writer, "writer"))
        contains(text, "  waiting (2, same stack, to read): ")
        waits = dump_waits(fx.pid)
        eq(waits[readers[0]]["kind"], "rwlock-read")
        eq(waits[readers[0]]["owner"], writer)


def test_rwlock_readers_hold():
    with start("fx-rwlock", "readers-hold", 2, parked=1) as fx:
        tids = fx.tids_by_name()
        writer = one(tids, "writer")
        doc = locks_json(fx.pid)
        eq(len(doc["locks"]), 1)
        lock = doc["locks"][0]
        # Readers are anonymous: no owner, and the view says so.
        check_lock(lock, "rwlock", "g_table_lock", None, [writer])
        contains(lock["note"], "held for reading by 2 threads")
        text = locks_text(fx.pid)
        contains(text, "  holder unknown: held for reading by 2 threads; readers are not recorded")
        contains(text, "  waiting (1, to write): %s" % label(writer, "writer"))
        eq(dump_waits(fx.pid)[writer]["kind"], "rwlock-write")


def test_rwlock_writers():
    with start("fx-rwlock", "writers", 2, parked=2) as fx:
        tids = fx.tids_by_name()
        writer = one(tids, "writer")
        waiting = waiters_named(tids, "writer", 2)
        doc = locks_json(fx.pid)
        lock = doc["locks"][0]
        check_lock(lock, "rwlock", "g_table_lock", writer, waiting)
        eq((lock["readers_waiting"], lock["writers_waiting"]), (0, 2))
        contains(locks_text(fx.pid), "  waiting (2, same stack, to write): ")


def test_rwlock_prefer_writer():
    with start("fx-rwlock", "prefer-writer", 2, parked=2) as fx:
        tids = fx.tids_by_name()
        writer, late = one(tids, "writer"), one(tids, "late-reader")
        doc = locks_json(fx.pid)
        eq(len(doc["locks"]), 1)
        lock = doc["locks"][0]
        check_lock(lock, "rwlock", "g_table_lock", None, sorted([writer, late]))
        eq((lock["readers_waiting"], lock["writers_waiting"]), (1, 1))
        waits = dump_waits(fx.pid)
        eq(waits[late]["kind"], "rwlock-read")
        contains(waits[late]["note"], "behind a waiting writer")
        text = locks_text(fx.pid)
        contains(text, "2 waiters (1 to read, 1 to write)")
        eq(doc["deadlocks"], [])


# ---- waits without an owner ----

def test_condpool_is_idle():
    with start("fx-condpool", 4, parked=4) as fx:
        tids = fx.tids_by_name()
        workers = waiters_named(tids, "worker", 4)
        doc = locks_json(fx.pid)
        eq(doc["locks"], [])
        eq(doc["deadlocks"], [])
        eq(len(doc["idle"]), 1)
        check_lock(doc["idle"][0], "condvar", "g_work_cv", None, workers)
        text = locks_text(fx.pid)
        contains(text, "no thread waiting on a lock, 4 idle on condvars")
        matches(text, r"^  condvar %s <g_work_cv>, 4 threads: " % HEX)
        contains(text, "No deadlock found.")
        head = dump_headers(fx.pid)
        matches(head[workers[0]], r"waiting for condvar %s <g_work_cv> \(waiting for a signal" % HEX)


def test_semaphore():
    with start("fx-sem", 3, parked=3) as fx:
        tids = fx.tids_by_name()
        waiters = waiters_named(tids, "waiter", 3)
        doc = locks_json(fx.pid)
        eq(len(doc["locks"]), 1)
        check_lock(doc["locks"][0], "semaphore", "g_sem", None, waiters)
        text = locks_text(fx.pid)
        matches(text, r"^semaphore %s <g_sem>, 3 waiters$" % HEX)
        contains(text, "  holder unknown: its count is 0; a semaphore has no owner")
        eq(dump_waits(fx.pid)[waiters[0]]["owner"], None)


def test_raw_futex_is_no_pthread_object():
    # fx-idlepool's sleepers wait on a bare int through syscall(2); the
    # globals next to it (its call depth, 20, four bytes below) read like
    # a condvar's waiter count. glibc's own waits never go through
    # syscall(): every sleeper is a plain futex wait, and so is the one
    # wait the lock view lists.
    for exe in ("fx-idlepool-nofp", "fx-idlepool"):
        with start(exe, 20, 2, parked=20) as fx:
            tids = fx.tids_by_name()
            sleepers = [tids["sleeper-%d" % i][0] for i in range(20)]
            waits = dump_waits(fx.pid)
            for tid in sleepers:
                eq(waits[tid]["kind"], "futex", (exe, tid, waits[tid]))
            doc = locks_json(fx.pid)
            eq([lk["kind"] for lk in doc["locks"]], ["futex"], exe)
            eq(sorted(doc["locks"][0]["waiters"]), sorted(sleepers), exe)


def test_join():
    with start("fx-join", parked=1) as fx:
        tids = fx.tids_by_name()
        joiner, blocked = one(tids, "joiner"), one(tids, "blocked")
        doc = locks_json(fx.pid)
        eq(len(doc["locks"]), 1)
        check_lock(doc["locks"][0], "join", None, blocked, [joiner])
        eq(doc["deadlocks"], [])
        text = locks_text(fx.pid)
        contains(text, "join of %s, 1 waiter" % label(blocked, "blocked"))
        contains(text, "  joined thread %s, read" % label(blocked, "blocked"))
        contains(text, "blocked_read")
        head = dump_headers(fx.pid)
        eq(head[joiner], 'Thread %d "joiner" S waiting for join of %s' % (
            joiner, label(blocked, "blocked")))
        w = dump_waits(fx.pid)
        eq((w[joiner]["kind"], w[joiner]["owner"]), ("join", blocked))
        eq(w[blocked], None)


# ---- deadlocks ----

def deadlock_case(n, bystander=False):
    args = [n] + (["bystander"] if bystander else [])
    with start("fx-deadlock", *args, parked=n + (1 if bystander else 0)) as fx:
        tids = fx.tids_by_name()
        cyc = [one(tids, "cycle-%d" % (i + 1)) for i in range(n)]
        syms = ["g_lock_a", "g_lock_b", "g_lock_c"][:n]
        doc = locks_json(fx.pid, rc=3)
        eq(len(doc["deadlocks"]), 1, repr(doc["deadlocks"]))
        d = doc["deadlocks"][0]
        eq(len(d), n)
        # cycle-i waits for lock i+1, held by cycle-(i+1); cycle-1 has the
        # smallest TID, so the cycle starts there.
        for i, e in enumerate(d):
            eq(e["tid"], cyc[i])
            eq(e["kind"], "mutex")
            eq(e["owner"], cyc[(i + 1) % n])
            eq(e["symbol"], syms[(i + 1) % n])
            ok(re.fullmatch(HEX, e["address"]))
        by_sym = {lk["symbol"]: lk for lk in doc["locks"]}
        eq(sorted(by_sym), sorted(syms))
        if bystander:
            eq(by_sym["g_lock_a"]["waiters"], sorted([cyc[-1], one(tids, "bystander")]))
            ok(one(tids, "bystander") not in [e["tid"] for e in d])

        text = locks_text(fx.pid, rc=3)
        contains(text, "Found 1 deadlock:")
        contains(text, "Deadlock 1, %d thread%s:" % (n, "" if n == 1 else "s"))
        for i in range(n):
            matches(text, r"^  %s waits for mutex %s <%s> held by %s" % (
                re.escape(label(cyc[i], "cycle-%d" % (i + 1))), HEX, syms[(i + 1) % n],
                re.escape(label(cyc[(i + 1) % n], "cycle-%d" % ((i + 1) % n + 1)))))
            contains(text, "\n  Thread %s:\n" % label(cyc[i], "cycle-%d" % (i + 1)))
        contains(text, "lock_second")
        if n == 1:
            contains(text, ": itself (it locks a lock it already holds)")
        head = dump_headers(fx.pid, rc=3)
        matches(head[cyc[0]], r"waiting for mutex %s <%s> held by %s$" % (
            HEX, syms[1 % n], re.escape(label(cyc[1 % n], "cycle-%d" % (1 % n + 1)))))


def test_deadlock_self():
    deadlock_case(1)


def test_deadlock_two():
    deadlock_case(2)


def test_deadlock_three():
    deadlock_case(3)


def test_deadlock_three_bystander():
    deadlock_case(3, bystander=True)


# ---- what is not contention ----

def test_idle_waits_are_not_locks():
    with start("fx-idle", blocked=7) as fx:
        tids = fx.tids_by_name()
        # Twice: after the first stop epoll_wait and sigtimedwait return
        # EINTR to the program, which loops and waits again.
        for _ in range(2):
            doc = locks_json(fx.pid)
            eq((doc["locks"], doc["idle"], doc["deadlocks"]), ([], [], []))
        contains(locks_text(fx.pid), "no thread waiting on a lock")
        waits = dump_waits(fx.pid)
        ok(all(w is None for w in waits.values()), repr(waits))
        head = dump_headers(fx.pid)
        for name, sc in (("epoller", "epoll_wait"), ("acceptor", "accept"), ("poller", "poll"),
                         ("selector", "pselect6"), ("reader", "read"),
                         ("sigwaiter", "rt_sigtimedwait")):
            matches(head[one(tids, name)], r'"%s" S %s' % (name, sc))


def test_retake_churn_is_no_deadlock():
    # A lock released and re-taken in a tight loop: never a deadlock, and
    # no thread is reported as parked without moving across snapshots.
    with start("fx-retake", 4) as fx:
        for _ in range(3):
            doc = locks_json(fx.pid, "--count", 3, "--interval", "100ms")
            eq(doc["deadlocks"], [])
            eq(doc["snapshots"], 3)
            for p in doc["parked"]:
                ok(p["moved"], "parked without moving: %r" % p)
            for lk in doc["locks"]:
                eq(lk["symbol"], "g_hot_lock")
        text = locks_text(fx.pid, "--count", 2, "--interval", "50ms")
        ok("did not move" not in text, text)
        contains(text, "No deadlock found.")


# ---- other runtimes ----

def test_cxx_locks():
    with start("fx-cxxlocks", 2, 2, parked=5) as fx:
        tids = fx.tids_by_name()
        holder, exclusive = one(tids, "holder"), one(tids, "exclusive")
        doc = locks_json(fx.pid)
        by_sym = {lk["symbol"]: lk for lk in doc["locks"]}
        eq(sorted(by_sym), ["Registry::instance_lock", "g_shared", "g_timed"])
        check_lock(by_sym["Registry::instance_lock"], "mutex", None, holder,
                   waiters_named(tids, "waiter", 2))
        check_lock(by_sym["g_timed"], "mutex", None, holder, [one(tids, "timed-waiter")])
        check_lock(by_sym["g_shared"], "rwlock", None, exclusive, waiters_named(tids, "shared", 2))
        eq(doc["locks"][2]["symbol"], "g_timed")  # most waiters first
        eq(doc["deadlocks"], [])
        text = locks_text(fx.pid)
        matches(text, r"^mutex %s <Registry::instance_lock> \(normal\), 2 waiters$" % HEX)
        contains(text, "Registry::hold()")
        contains(text, "Registry::lookup(int)")


def test_rust_locks():
    with start("fx-rustlock", 2, 2, parked=4) as fx:
        tids = fx.tids_by_name()
        doc = locks_json(fx.pid)
        by_kind = {lk["kind"]: lk for lk in doc["locks"]}
        eq(sorted(by_kind), ["rust-mutex", "rust-rwlock"])
        m, rw = by_kind["rust-mutex"], by_kind["rust-rwlock"]
        check_lock(m, "rust-mutex", None, None, waiters_named(tids, "waiter", 2))
        contains(m["symbol"], "LEDGER")
        contains(m["note"], "no owner")
        check_lock(rw, "rust-rwlock", None, None, waiters_named(tids, "reader", 2))
        contains(rw["symbol"], "TABLE")
        eq(rw["readers_waiting"], 2)
        text = locks_text(fx.pid)
        contains(text, "  holder unknown: Rust std Mutex records no owner")
        contains(text, "post_ledger")
        w = dump_waits(fx.pid)[tids["waiter-1"][0]]
        eq((w["kind"], w["owner"]), ("rust-mutex", None))


# ---- several snapshots ----

def test_count_parked():
    with start("fx-mutex", "normal", 2, parked=2) as fx:
        tids = fx.tids_by_name()
        holder = one(tids, "holder")
        waiters = waiters_named(tids, "waiter", 2)
        doc = locks_json(fx.pid, "--count", 3, "--interval", "150ms")
        eq(doc["snapshots"], 3)
        ok(doc["seconds"] >= 0.3, repr(doc["seconds"]))  # two intervals at least
        parked = {p["tid"]: p for p in doc["parked"]}
        eq(sorted(parked), waiters)
        for t in waiters:
            p = parked[t]
            eq((p["kind"], p["symbol"], p["owner"], p["moved"], p["idle"]),
               ("mutex", "g_ledger_lock", holder, False, False))
            eq(p["voluntary_ctxt_switches"], 0)
            eq(p["seconds"], doc["seconds"])
        text = locks_text(fx.pid, "--count", 2, "--interval", "100ms")
        contains(text, "(the last of 2 snapshots)")
        contains(text, "Parked on the same lock in all 2 snapshots")
        matches(text, r'^  %s waiting for mutex %s <g_ledger_lock> held by %s: at least '
                r'[0-9.]+ s, did not move$' % (re.escape(label(waiters[0], "waiter-1")), HEX,
                                              re.escape(label(holder, "holder"))))


def test_count_deadlock_exit_code():
    with start("fx-deadlock", 2, parked=2) as fx:
        doc = locks_json(fx.pid, "--count", 2, "--interval", "50ms", rc=3)
        eq(len(doc["deadlocks"]), 1)
        eq(len(doc["parked"]), 2)
        ok(not any(p["moved"] for p in doc["parked"]), repr(doc["parked"]))


def test_pid_namespace():
    # In a container the lock words hold TIDs of the container's PID
    # namespace; owners and cycles must still name our TIDs.
    import subprocess
    import fixture
    sdtest.need_root("a PID namespace")
    sdtest.tool("unshare", "util-linux")
    p = subprocess.Popen(["unshare", "--pid", "--fork", fixture.path_of("fx-deadlock"), "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         stdin=subprocess.DEVNULL)
    child = None
    try:
        eq(p.stdout.readline().decode().strip(), "ready 1")  # its own PID there
        with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
            child = int(f.read().split()[0])
        states = fixture.wait_state(child, lambda st: sum(x.in_futex for x in st.values()) >= 2)
        names = {s.name: t for t, s in states.items()}
        doc = locks_json(child, rc=3)
        eq([(e["tid"], e["owner"]) for e in doc["deadlocks"][0]],
           [(names["cycle-1"], names["cycle-2"]), (names["cycle-2"], names["cycle-1"])])
    finally:
        if child:
            os.kill(child, 9)
        p.kill()
        p.wait()


# ---- the shell, errors ----

def test_shell_locks():
    with start("fx-deadlock", 2, parked=2) as fx:
        r = sdtest.run("-c", "locks", fx.pid)
        eq(r.rc, 3, r.err)
        contains(r.out, "Found 1 deadlock:")
        r = sdtest.run("-c", "locks --format json", fx.pid)
        eq(r.rc, 3, r.err)
        # attach may say hello first: the document starts at the first "{"
        start_at = r.out.index("\n{") + 1 if not r.out.startswith("{") else 0
        eq(len(json.loads(r.out[start_at:])["deadlocks"]), 1)
        # threads sees the waits of the last snapshot taken in the shell
        r = sdtest.run("-c", "locks; threads", fx.pid)
        eq(r.rc, 0, r.err)
        contains(r.out, "g_lock_b")
        sdtest.assert_running(fx.pid)


def test_loaded_snapshot():
    # A saved snapshot keeps its waits: locks on it after load finds the
    # same deadlock, with no process to look at.
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "deadlock.sd")
        with start("fx-deadlock", 2, parked=2) as fx:
            cyc = [fx.tid("cycle-1"), fx.tid("cycle-2")]
            r = sdtest.run("-c", "locks; save %s" % path, fx.pid)
            eq(r.rc, 0, r.err)
        r = sdtest.run("-c", "load %s; locks --format json" % path)
        eq(r.rc, 3, r.err)
        doc = json.loads(r.out[r.out.index("{"):])
        eq([e["tid"] for e in doc["deadlocks"][0]], cyc)
        eq([e["symbol"] for e in doc["deadlocks"][0]], ["g_lock_b", "g_lock_a"])
        r = sdtest.run("-c", "load %s; locks --count 2" % path)
        eq(r.rc, 64)
        contains(r.err, "--count needs a live process")


def test_usage_and_errors():
    r = sdtest.run("locks")
    eq(r.rc, 64)
    contains(r.err, "missing argument")
    r = sdtest.run("locks", "--count", "0", "1")
    eq(r.rc, 64)
    contains(r.err, "invalid --count")
    r = sdtest.run("locks", "--interval", "soon", "1")
    eq(r.rc, 64)
    contains(r.err, "invalid --interval")
    r = sdtest.run("locks", "--per-thread", "1")
    eq(r.rc, 64)
    contains(r.err, "--per-thread")
    r = sdtest.run("locks", "2147483646")
    eq(r.rc, 2)
    ok(r.err.strip(), "no error message")
    r = sdtest.run("locks", "--help")
    eq(r.rc, 0)
    contains(r.out, "3 deadlock found")


if __name__ == "__main__":
    sdtest.main(globals())
