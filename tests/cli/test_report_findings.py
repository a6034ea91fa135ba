#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# report: the findings block comes first (deadlocks, locks held longest,
# threads stuck, CPU hot spots), each finding once with wall-clock times and
# snapshot ranges; the first lines of the report on a recording during which
# a deadlock forms are checked whole against the snapshots on disk.
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sdtest  # noqa: E402
from fixture import start  # noqa: E402
from recordlib import check_recording, record, record_late_deadlock, tempdir  # noqa: E402
from sdtest import contains, eq, matches, ok  # noqa: E402

_rec = {}


def clock(t):
    return time.strftime("%H:%M:%S", time.gmtime(t))


def late_deadlock_recording():
    """fx-pool with 2 workers, 1 http thread and the late-deadlock pair,
    recorded 8 times; the deadlock is set off after the third snapshot."""
    if _rec:
        return _rec["d"], _rec["snaps"], _rec["tids"], _rec["pid"]
    d, tids, pid, parked_at = record_late_deadlock("findings", "250ms", 8, 3)
    snaps = check_recording(d)
    eq(len(snaps), 8)
    ok(parked_at < 8, "the recording ended before the deadlock formed")
    _rec.update(d=d, snaps=snaps, tids=tids, pid=pid)
    return d, snaps, tids, pid


def in_deadlock(s, tid):
    t = next(x for x in s["threads"] if x["tid"] == tid)
    return bool(t["wait"]) and t["wait"].get("symbol") in ("g_late_a", "g_late_b")


def test_first_lines_on_a_deadlock_that_forms():
    d, snaps, tids, pid = late_deadlock_recording()
    l1, l2 = tids["late-1"][0], tids["late-2"][0]
    # The snapshots in which both late threads wait, from the files.
    dl = [k for k, s in enumerate(snaps) if in_deadlock(s, l1) and in_deadlock(s, l2)]
    ok(dl and dl[-1] == 7 and dl == list(range(dl[0], 8)), dl)
    ok(dl[0] >= 3, "deadlock seen before it was set off: %r" % dl)
    first, last = snaps[dl[0]]["time"], snaps[7]["time"]
    r = sdtest.run("report", d)
    eq(r.rc, 0, r.err)
    lines = r.out.splitlines()
    flusher, http = tids["flusher"][0], tids["http-1"][0]
    want = [
        "Findings (times UTC):",
        '  deadlock: 2 threads in %d "fx-pool"' % pid,
        "    %s-%s, snapshots %d-8" % (clock(first), clock(last), dl[0] + 1),
        '    %d "late-1" waits for mutex <g_late_b> held by %d "late-2"' % (l1, l2),
        '    %d "late-2" waits for mutex <g_late_a> held by %d "late-1"' % (l2, l1),
        '  lock held: mutex <g_pool_lock> held by %d "flusher" for %.1f s or more, 1 waiter '
        'at most' % (flusher, snaps[7]["time"] - snaps[0]["time"]),
        "    %s-%s, snapshots 1-8" % (clock(snaps[0]["time"]), clock(snaps[7]["time"])),
        '    holder: Thread %d "flusher" S clock_nanosleep, in flush_locked' % flusher,
    ]
    eq(lines[:len(want)], want, "\n".join(lines[:20]))
    # The http thread is stuck behind the flusher all along; found once.
    stuck = [i for i, x in enumerate(lines) if x.startswith("  stuck: ")]
    eq(len(stuck), 1, r.out[:3000])
    matches(lines[stuck[0]], r'^  stuck: 1 thread waiting for mutex 0x[0-9a-f]+ <g_pool_lock> '
            r'held by %d "flusher", same stack for \d+\.\d s$' % flusher)
    eq(lines[stuck[0] + 2], '    %d "http-1"' % http)
    # Then the evidence, after a blank line: the summary, the profile.
    blank = lines.index("")
    ok(lines[blank + 1].startswith("Recording: 8 snapshots from "), lines[blank + 1])
    # Each finding once: the deadlock is not repeated per snapshot.
    eq(r.out.count('waits for mutex <g_late_b> held by %d "late-2"' % l2), 2, r.out)
    eq(r.out.count("deadlock: 2 threads"), 2, r.out)  # findings and the locks section


def test_stuck_section_counts_a_late_deadlock():
    d, snaps, tids, pid = late_deadlock_recording()
    r = sdtest.run("report", "--only", "stuck", d)
    eq(r.rc, 0, r.err)
    for name in ("late-1", "late-2"):
        matches(r.out, r'Thread %d "%s" S waiting for mutex 0x[0-9a-f]+ <g_late_[ab]> held by '
                r'\d+ "late-[12]"  \[lock since \d\d:\d\d:\d\d UTC, snapshots \d-8\]'
                % (tids[name][0], name))
    rep = sdtest.run("report", "--format", "json", d).json()
    kinds = [f["kind"] for f in rep["findings"]]
    eq(kinds[:2], ["deadlock", "lock_held"], rep["findings"])
    f = rep["findings"][0]
    eq(sorted(f["tids"]), sorted([tids["late-1"][0], tids["late-2"][0]]))
    eq(f["last"], 8)
    eq(f["end"], snaps[7]["time"])
    stuck = {t["tid"]: t["since"] for t in rep["stuck"]}
    ok(stuck[tids["late-1"][0]] > 1, stuck)
    eq(stuck[tids["http-1"][0]], 1)


def test_hot_spot_and_no_findings():
    d = tempdir("hot")
    with start("fx-hot") as fx:
        r = record(fx.pid, "--every", "100ms", "--count", "6", "--out", d)
        eq(r.rc, 0, r.err)
    r = sdtest.run("report", "--only", "findings", d)
    eq(r.rc, 0, r.err)
    lines = r.out.splitlines()
    eq(lines[0], "Findings (times UTC):")
    matches(lines[1], r"^  hot spot: hot_a on top of (\d+)% of the on-CPU thread samples "
            r"\((\d+) of (\d+)\), 3 threads$")
    matches(r.out, r"(?m)^  hot spot: hot_b on top of \d+% ")
    ok("deadlock" not in r.out and "stuck" not in r.out, r.out)
    d2 = tempdir("idle")
    with start("fx-idle", blocked=7) as fx:
        r = record(fx.pid, "--every", "100ms", "--count", "3", "--out", d2)
        eq(r.rc, 0, r.err)
    r = sdtest.run("report", "--only", "findings", d2)
    eq(r.rc, 0, r.err)
    eq(r.out.strip(), "Findings: none in 3 snapshots (no deadlock, no lock held across "
       "snapshots, no thread stuck, no CPU hot spot)")


if __name__ == "__main__":
    sdtest.main(globals())
