# SPDX-License-Identifier: MIT
# Condvars waited on every clock: pthread_cond_timedwait on a MONOTONIC
# condvar, pthread_cond_clockwait, C++ wait_for on a heap condvar, and a
# process-shared one. Each must show as one idle condvar at the condvar's
# own address (not at its futex word), in every snapshot of a series.
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
from fixture import start  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402


def cond_address(fx):
    m = re.search(r"^cond (0x[0-9a-f]+)$", fx.stderr(), re.M)
    ok(m, "no cond line on stderr: %r" % fx.stderr())
    return m.group(1)


def condvar_case(mode):
    with start("fx-cxxinfer", mode, parked=3) as fx:
        addr = cond_address(fx)
        sleepers = sorted(fx.tid("sleeper-%d" % i) for i in (1, 2, 3))
        r = sdtest.run("locks", "--format", "json", fx.pid)
        eq(r.rc, 0, r.err)
        doc = r.json()
        eq(doc["locks"], [])
        eq([(lk["kind"], lk["address"], lk["waiters"]) for lk in doc["idle"]],
           [("condvar", addr, sleepers)])
        # A series: the same condvar in every snapshot, so the sleepers
        # stay parked on it throughout.
        r = sdtest.run("locks", "--count", "3", "--interval", "50ms", "--format", "json",
                       fx.pid)
        eq(r.rc, 0, r.err)
        doc = r.json()
        eq([(lk["address"], lk["waiters"]) for lk in doc["idle"]], [(addr, sleepers)])
        eq(sorted((p["tid"], p["address"], p["idle"]) for p in doc["parked"]),
           [(t, addr, True) for t in sleepers])
        r = sdtest.run("--format", "json", fx.pid)
        eq(r.rc, 0, r.err)
        for t in r.json()["threads"]:
            if t["tid"] in sleepers:
                eq((t["wait"]["kind"], t["wait"]["address"]), ("condvar", addr))
        text = sdtest.run("locks", fx.pid).out
        contains(text, "  condvar %s, 3 threads: " % addr)


def test_condvar_monotonic():
    condvar_case("cond-monotonic")


def test_condvar_clockwait():
    condvar_case("cond-clockwait")


def test_condvar_cxx_wait_for_heap():
    condvar_case("cond-waitfor")


def test_condvar_pshared():
    condvar_case("cond-pshared")


if __name__ == "__main__":
    sdtest.main(globals())
