# SPDX-License-Identifier: MIT
# Language runtimes that wait on futexes of their own: an idle Go server
# (its idle Ms and sysmon sleep on runtime notes) must show no lock, and a
# Java program with monitor contention must show its threads entering the
# monitor as java-monitor waits, with the JVM's idle workers as idle.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
from fixture import available, start  # noqa: E402
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
        ok(sum(len(lk["waiters"]) for lk in doc["idle"]) >= 2, repr(doc["idle"]))
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


def test_java_monitor_contention():
    need("fx-javamonitor")
    with start("fx-javamonitor", timeout=60) as fx:
        blocked = sorted([fx.tid("blocked-1"), fx.tid("blocked-2")])
        holder = fx.tid("holder")
        doc = locks(fx.pid)
        mon = [lk for lk in doc["locks"] if lk["kind"] == "java-monitor"]
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
            eq(threads[t]["wait"]["kind"], "java-monitor")
            fns = [f["function"] or "" for f in threads[t]["frames"]]
            ok(any("ObjectMonitor::EnterI" in f for f in fns), repr(fns[:8]))
        text = sdtest.run("locks", fx.pid).out
        contains(text, "java-monitor (which monitor is not known) (jvm), 2 waiters")


if __name__ == "__main__":
    sdtest.main(globals())
