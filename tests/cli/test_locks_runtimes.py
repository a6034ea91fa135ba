# SPDX-License-Identifier: MIT
# Language runtimes that wait on futexes of their own: an idle Go server
# (its idle Ms and sysmon sleep on runtime notes) must show no lock, and a
# Java program with monitor contention must show its threads entering the
# monitor as java-monitor waits, with the JVM's idle workers as idle.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import sdtest  # noqa: E402
from fixture import available, start  # noqa: E402
from recordlib import check_recording, record, tempdir  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402


def need(name):
    # CI installs golang-go and default-jdk-headless (.ci/deps): a fixture
    # that was not built is a failure there, not a skip.
    ok(available(name), "%s was not built (is its toolchain installed?)" % name)


def locks(pid, *extra):
    r = sdtest.run("locks", "--format", "json", *extra, pid)
    eq(r.rc, 0, r.err)
    sdtest.assert_running(pid)
    return r.json()


def test_idle_go_server_has_no_lock():
    need("fx-goserver")
    with start("fx-goserver", blocked=2) as fx:
        doc = locks(fx.pid)
        eq(doc["locks"], [], "the runtime idling is not a lock")
        kinds = {lk["kind"] for lk in doc["idle"]}
        eq(kinds, {"runtime-idle"})
        # How many Ms sleep on a note at a given moment is the runtime's
        # business (sysmon may be in usleep, one M in epoll): at least one.
        ok(sum(len(lk["waiters"]) for lk in doc["idle"]) >= 1, repr(doc["idle"]))
        # Across snapshots nothing stays parked on a lock either.
        doc = locks(fx.pid, "--count", "3", "--interval", "100ms")
        eq(doc["locks"], [])
        ok(all(p["idle"] for p in doc["parked"]), repr(doc["parked"]))
        r = sdtest.run("--format", "json", fx.pid)
        eq(r.rc, 0, r.err)
        for t in r.json()["threads"]:
            w = t["wait"]
            if w is not None:
                eq((w["kind"], w["type"]), ("runtime-idle", "go"), repr(t))
        text = sdtest.run("locks", fx.pid).out
        contains(text, "no thread waiting on a lock")
        contains(text, "in the language runtime")
        contains(text, "No deadlock found.")


def test_idle_go_server_is_not_stuck():
    # The runtime idling has the same stack and no switch for as long as
    # the server is idle: it is waiting for work, not stuck.
    need("fx-goserver")
    with start("fx-goserver", blocked=2) as fx:
        d = tempdir("go-quiet")
        r = record(fx.pid, "--when", "stuck>=1s", "--every", "200ms", "--for", "3s",
                   "--out", d)
        sdtest.assert_running(fx.pid)
        eq(r.rc, 0, r.err)
        ok("triggered" not in r.err, "stuck fired on an idle Go server: %s" % r.err)
        eq(check_recording(d), [])


def test_java_monitor_contention():
    need("fx-javamonitor")
    with start("fx-javamonitor", timeout=60) as fx:
        blocked = sorted([fx.tid("blocked-1"), fx.tid("blocked-2")])
        holder = fx.tid("holder")
        # Java says BLOCKED before HotSpot parks the thread, and the
        # thread responsible for the monitor wakes from a timed park now
        # and then (1 ms at first, up to every second): wait until both
        # sleep in their futex, and take the view again in the rare case
        # one was awake at the freeze.
        fx.wait_state(lambda st: all(st[t].in_futex for t in blocked), timeout=30)
        for _ in range(5):
            doc = locks(fx.pid)
            mon = [lk for lk in doc["locks"] if lk["kind"] == "java-monitor"]
            if len(mon) == 1 and mon[0]["waiters"] == blocked:
                break
        eq(len(mon), 1, repr(doc["locks"]))
        eq(mon[0]["waiters"], blocked)
        eq(mon[0]["owner"], None)
        # The JVM's idle semaphores are not contention.
        eq([lk for lk in doc["locks"] if lk["kind"] == "semaphore"], [])
        idle_tids = {t: lk["kind"] for lk in doc["idle"] for t in lk["waiters"]}
        eq(idle_tids.get(holder), "condvar")
        sig = fx.tid("Signal Dispatch")
        eq(idle_tids.get(sig), "runtime-idle")
        r = sdtest.run("--format", "json", fx.pid)
        eq(r.rc, 0, r.err)
        threads = {t["tid"]: t for t in r.json()["threads"]}
        for t in blocked:
            fns = [f["function"] or "" for f in threads[t]["frames"]]
            ok(any("ObjectMonitor::EnterI" in f for f in fns), repr(fns[:8]))
            if threads[t]["wait"] is not None:  # None: awake at that freeze
                eq(threads[t]["wait"]["kind"], "java-monitor")
        contains(sdtest.run("locks", fx.pid).out, "java-monitor (which monitor is not known) (jvm)")


if __name__ == "__main__":
    sdtest.main(globals())
