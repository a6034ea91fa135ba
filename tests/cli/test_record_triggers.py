# SPDX-License-Identifier: MIT
# record --when: each condition fires on a fixture that meets it (and the
# saved snapshot says why) and stays quiet on one that does not. --for
# bounds every run, so a condition that never fires ends the run with no
# snapshot instead of hanging.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import sdtest  # noqa: E402
from fixture import start  # noqa: E402
from recordlib import check_recording, record, tempdir  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402


def fires(fx, when, *extra, burst="2"):
    """Record FX with condition WHEN until it fires once (a burst of 2).
    Returns the saved snapshots."""
    d = tempdir("trig")
    r = record(fx.pid, "--when", when, "--every", "200ms", "--burst", burst, "--count", burst,
               "--for", "60s", "--out", d, *extra)
    sdtest.assert_running(fx.pid)
    eq(r.rc, 0, r.err)
    contains(r.err, "stopped: --count reached", "%s never fired" % when)
    contains(r.err, "triggered: ")
    snaps = check_recording(d)
    eq(len(snaps), int(burst))
    for i, s in enumerate(snaps):
        if burst != "1":
            contains(s["reason"], "(burst %d/%s)" % (i + 1, burst))
    return snaps


def quiet(fx, when, seconds="3s"):
    d = tempdir("quiet")
    r = record(fx.pid, "--when", when, "--every", "200ms", "--for", seconds, "--out", d)
    sdtest.assert_running(fx.pid)
    eq(r.rc, 0, r.err)
    ok("triggered" not in r.err, "%s fired: %s" % (when, r.err))
    eq(check_recording(d), [])


def test_parked():
    with start("fx-mutex", "normal", "8", parked=8) as fx:
        snaps = fires(fx, "parked>=8")
        contains(snaps[0]["reason"], "parked>=8: 8 threads parked in futex waits")
        parked = [t for t in snaps[0]["threads"] if t["wait"] and t["wait"]["kind"] == "mutex"]
        eq(len(parked), 8)
    with start("fx-mutex", "normal", "7", parked=7) as fx:
        quiet(fx, "parked>=8")
    # Threads asleep in other syscalls are not parked on locks.
    with start("fx-idle", blocked=7) as fx:
        quiet(fx, "parked>=1")


def test_deadlock():
    with start("fx-deadlock", "2", parked=2) as fx:
        snaps = fires(fx, "deadlock")
        tids = fx.tids_by_name()
        c1, c2 = tids["cycle-1"][0], tids["cycle-2"][0]
        contains(snaps[0]["reason"], "deadlock: 2 threads in a cycle: %d \"cycle-1\" -> %d "
                 "\"cycle-2\" -> %d" % (c1, c2, c1))
        for s in snaps:
            eq(len(s["deadlocks"]), 1, s["deadlocks"])
            eq(sorted(e["tid"] for e in s["deadlocks"][0]), sorted([c1, c2]))
    with start("fx-deadlock", "1", parked=1) as fx:
        fires(fx, "deadlock", burst="1")
    # Contention without a deadlock, and a wait on a lock whose holder
    # sleeps, never fire.
    with start("fx-retake", "4") as fx:
        quiet(fx, "deadlock")
    with start("fx-mutex", "normal", "3", parked=3) as fx:
        quiet(fx, "deadlock")


def test_cpu():
    # fx-busy spins one thread: close to 100% of a core on an idle
    # machine, well above 20% on a busy one.
    with start("fx-busy") as fx:
        snaps = fires(fx, "cpu>=20")
        contains(snaps[0]["reason"], "cpu>=20: process at ")
    with start("fx-idle", blocked=7) as fx:
        quiet(fx, "cpu>=20")


def test_stuck():
    # A waiter parked on a mutex whose holder sleeps: same stack, no
    # context switch.
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        snaps = fires(fx, "stuck>=1s")
        w = fx.tid("waiter-1")
        contains(snaps[0]["reason"], "stuck>=1s: thread %d \"waiter-1\" had the same stack and "
                 "no voluntary context switch for " % w)
        contains(snaps[0]["reason"], "(parked in futex)")
    # A thread spinning in one function.
    with start("fx-busy") as fx:
        snaps = fires(fx, "stuck>=1s")
        contains(snaps[0]["reason"], "\"spinner\" had the same stack")
        contains(snaps[0]["reason"], "(running)")
    # Threads idle in epoll_wait, poll, read... or on a condition variable
    # are waiting for work, not stuck.
    with start("fx-idle", blocked=7) as fx:
        quiet(fx, "stuck>=1s")
    with start("fx-condpool", "4", parked=4) as fx:
        quiet(fx, "stuck>=1s", seconds="4s")


def test_several_conditions_and_rearm():
    # Either condition fires; once fired, a condition that stays true does
    # not fire again (a burst per episode, not per check).
    with start("fx-mutex", "normal", "3", parked=3) as fx:
        d = tempdir("rearm")
        r = record(fx.pid, "--when", "cpu>=5000,parked>=3", "--every", "100ms", "--burst", "1",
                   "--for", "2s", "--out", d)
        eq(r.rc, 0, r.err)
        eq(r.err.count("triggered: "), 1, r.err)
        snaps = check_recording(d)
        eq(len(snaps), 1)
        contains(snaps[0]["reason"], "parked>=3")


if __name__ == "__main__":
    sdtest.main(globals())
