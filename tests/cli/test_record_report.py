# SPDX-License-Identifier: MIT
# report over a real recording: every count it gives (snapshots, thread
# states per snapshot, profile samples and stacks, lock waiters and
# holders, the threads stuck in every snapshot) is recomputed here from the
# saved files themselves and must match; the profile formats and the SVG
# timeline are well-formed; -o over a device or a FIFO leaves it one.
import gzip
import os
import subprocess
import stat
import sys
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import sdtest  # noqa: E402
from fixture import start  # noqa: E402
from recordlib import check_recording, record, snap_files, tempdir  # noqa: E402
from sdtest import contains, eq, matches, ok  # noqa: E402

LOCK_KINDS = {"mutex", "rwlock-read", "rwlock-write", "semaphore", "join", "rust-mutex",
              "rust-rwlock", "futex"}


def letter(t):
    """The timeline state of a saved thread, as report documents it."""
    if t["status"] != "ok":
        return "unreadable"
    k = t["wait_kind"]
    if k == "running":
        return "running"
    if k == "runnable":
        return "runnable"
    if k in LOCK_KINDS:
        return "lock"
    if k in ("condvar", "rust-condvar"):
        return "condvar"
    if k == "disk":
        return "disk"
    if k == "stopped":
        return "stopped"
    if k == "zombie":
        return "zombie"
    if t["state"] == "R":
        return "running" if t["running"] else "runnable"
    return "syscall"


def stack_key(t):
    return tuple(f["function"] or "%s+%s" % (f["module"], f["offset"]) for f in t["frames"])


_rec = {}


def recording():
    """One recording shared by the tests: fx-mutex with 3 waiters, 4
    periodic snapshots and one SIGUSR1-free burst, plus fx-stacks files."""
    if _rec:
        return _rec["d"], _rec["snaps"], _rec["tids"]
    d = tempdir("report")
    with start("fx-mutex", "normal", "3", parked=3) as fx:
        r = record(fx.pid, "--every", "150ms", "--count", "4", "--out", d)
        eq(r.rc, 0, r.err)
        tids = fx.tids_by_name()
    snaps = check_recording(d)
    eq(len(snaps), 4)
    _rec.update(d=d, snaps=snaps, tids=tids)
    return d, snaps, tids


def test_json_counts_match_the_files():
    d, snaps, tids = recording()
    r = sdtest.run("report", "--format", "json", d)
    eq(r.rc, 0, r.err)
    rep = r.json()
    eq(len(rep["snapshots"]), len(snaps))
    eq([s["time"] for s in rep["snapshots"]], [s["time"] for s in snaps])
    eq([s["threads"] for s in rep["snapshots"]], [len(s["threads"]) for s in snaps])
    eq([s["reason"] for s in rep["snapshots"]], ["every 150ms"] * 4)

    # Timeline: one row per thread, one state per snapshot.
    rows = {t["tid"]: t["states"] for t in rep["timeline"]}
    want = {}
    for k, s in enumerate(snaps):
        for t in s["threads"]:
            want.setdefault(t["tid"], ["absent"] * len(snaps))[k] = letter(t)
    eq(rows, want)
    for w in ("waiter-1", "waiter-2", "waiter-3"):
        eq(rows[tids[w][0]], ["lock"] * 4)

    # Profile: every thread of every snapshot with a stack is one sample;
    # identical stacks are merged.
    prof = rep["profile"]
    samples = [t for s in snaps for t in s["threads"] if t["frames"]]
    eq(prof["thread_samples"], len(samples))
    eq(sum(st["count"] for st in prof["stacks"]), len(samples))
    counts = {}
    for t in samples:
        counts[stack_key(t)] = counts.get(stack_key(t), 0) + 1
    eq(sorted(st["count"] for st in prof["stacks"]), sorted(counts.values()))
    eq(prof["stacks"][0]["count"], 12)  # 3 waiters x 4 snapshots, one stack

    # Locks over time: g_ledger_lock, 3 waiters and the holder each time.
    locks = [lk for lk in rep["locks"] if lk["symbol"] == "g_ledger_lock"]
    eq(len(locks), 1, rep["locks"])
    per_snap = [sum(1 for t in s["threads"] if t["wait"] and t["wait"].get("symbol") ==
                    "g_ledger_lock") for s in snaps]
    eq(locks[0]["waiters"], per_snap)
    eq(locks[0]["waiters"], [3, 3, 3, 3])
    eq(locks[0]["holder"], [tids["holder"][0]] * 4)
    eq(rep["deadlocks"], [])

    # Stuck: threads with the same stack and state in (at least) the last
    # two snapshots, lock waits first. (The fixture's main thread may
    # still be settling at the first one.)
    stuck = rep["stuck"]

    def seen(tid, s):
        t = next((x for x in s["threads"] if x["tid"] == tid), None)
        return (stack_key(t), letter(t)) if t and t["frames"] else None

    same = [tid for tid in want
            if seen(tid, snaps[-1]) and seen(tid, snaps[-2]) == seen(tid, snaps[-1])]
    eq(sorted(t["tid"] for t in stuck), sorted(same))
    eq([t["state"] for t in stuck[:3]], ["lock"] * 3)
    eq(sorted(t["name"] for t in stuck[:3]), ["waiter-1", "waiter-2", "waiter-3"])


def test_text_report():
    d, snaps, tids = recording()
    r = sdtest.run("report", d)
    eq(r.rc, 0, r.err)
    out = r.out
    contains(out, "Recording: 4 snapshots from ")
    contains(out, "     4 x every 150ms")
    matches(out, r"Profile: %d thread stacks in 4 snapshots" % sum(
        len(s["threads"]) for s in snaps))
    contains(out, "waiter_post")
    # The timeline row of each waiter reads LLLL.
    for w in ("waiter-1", "waiter-2", "waiter-3"):
        matches(out, r"\n  %-8d %-16s LLLL\n" % (tids[w][0], w))
    # Its columns say when, not only which snapshot.
    clock = [time.strftime("%H:%M:%S", time.gmtime(s["time"])) for s in snaps]
    contains(out, "   (snapshots 1-4, %s-%s UTC)\n" % (clock[0], clock[3]))
    matches(out, r"mutex 0x[0-9a-f]+ <g_ledger_lock>: waited for in 4 of 4 snapshots, at most 3 "
                 r"waiters")
    contains(out, "    waiters: 3 3 3 3\n")
    matches(out, r"holder:  %d \"holder\" from \d\d:\d\d:\d\d \(snapshot 1\)" % tids["holder"][0])
    contains(out, "Threads with the same stack until the last snapshot (of 4): ")
    # Sections can be chosen.
    r = sdtest.run("report", "--only", "timeline", d)
    eq(r.rc, 0)
    ok("Profile" not in r.out and "Timeline" in r.out)
    r = sdtest.run("report", "--only", "bogus", d)
    eq(r.rc, 64)
    contains(r.err, "unknown section 'bogus'")


def test_profile_views_and_formats():
    d, snaps, tids = recording()
    total = sum(1 for s in snaps for t in s["threads"] if t["frames"])
    r = sdtest.run("report", "--format", "folded", d)
    eq(r.rc, 0, r.err)
    lines = r.out.strip().splitlines()
    eq(sum(int(x.rsplit(" ", 1)[1]) for x in lines), total)
    ok(any("waiter_post" in x for x in lines))
    r = sdtest.run("report", "--view", "tree", "--only", "profile", d)
    eq(r.rc, 0, r.err)
    contains(r.out, "waiter_post")
    r = sdtest.run("report", "--view", "locks", "--only", "profile", d)
    eq(r.rc, 0, r.err)
    contains(r.out, "g_ledger_lock")
    r = sdtest.run("report", "--format", "svg", d)
    eq(r.rc, 0, r.err)
    ET.fromstring(r.out)
    out = os.path.join(tempdir("pprof"), "p.pb.gz")
    r = sdtest.run("report", "--format", "pprof", "-o", out, d)
    eq(r.rc, 0, r.err)
    with open(out, "rb") as f:
        ok(len(gzip.decompress(f.read())) > 0)


def test_timeline_svg():
    d, snaps, tids = recording()
    svg = os.path.join(tempdir("svg"), "timeline.svg")
    r = sdtest.run("report", "--only", "summary", "--timeline-svg", svg, d)
    eq(r.rc, 0, r.err)
    root = ET.parse(svg).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    titles = [t.text for t in root.iter(ns + "title")]
    # One bar per thread here (each stays in one state), plus the legend.
    for w in ("waiter-1", "waiter-2", "waiter-3"):
        matches("\n".join(titles), r'%d "%s": waiting for mutex 0x[0-9a-f]+ <g_ledger_lock> '
                r'held by %d "holder", \d\d:\d\d:\d\d-\d\d:\d\d:\d\d \(snapshots 1-4\)'
                % (tids[w][0], w, tids["holder"][0]))


def test_files_and_bad_input():
    d, snaps, tids = recording()
    files = [os.path.join(d, f) for f in snap_files(d)]
    # Files given one by one, in any order, are put in time order.
    r = sdtest.run("report", "--format", "json", files[2], files[0])
    eq(r.rc, 0, r.err)
    eq([s["time"] for s in r.json()["snapshots"]], [snaps[0]["time"], snaps[2]["time"]])
    # A bad file is named and skipped; the rest is reported (exit 1).
    bad = os.path.join(tempdir("bad"), "snap-bad.json")
    with open(bad, "w") as f:
        f.write('{"format": "stackdump-snapshot", "version": 1, "pid": 1, "threads": [')
    r = sdtest.run("report", "--only", "summary", bad, files[1])
    eq(r.rc, 1, r)
    contains(r.err, bad + ": line 1 column")
    contains(r.out, "Recording: 1 snapshot ")
    r = sdtest.run("report", bad)
    eq(r.rc, 2)
    contains(r.err, "no snapshot could be read")
    r = sdtest.run("report", "/nonexistent/x.json")
    eq(r.rc, 2)
    contains(r.err, "/nonexistent/x.json")
    empty = tempdir("empty")
    r = sdtest.run("report", empty)
    eq(r.rc, 2)
    contains(r.err, "no snapshots in this directory")


def test_output_to_a_device_or_fifo_is_written_through():
    # report -o writes a temporary file and renames it into place; over
    # /dev/null (a device) that would leave a regular file in its place: it
    # is written through instead, and stays what it is, and so is a pipe
    # the caller hands over as /dev/fd/N. A FIFO found at the name (anyone
    # may have planted it) is refused, not written into (test_attacker.py).
    d, snaps, tids = recording()
    t = tempdir("special")
    fifo = os.path.join(t, "fifo")
    os.mkfifo(fifo)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    r = sdtest.run("report", "--only", "summary", "-o", fifo, d)
    eq(r.rc, 2, r.err)
    contains(r.err, "it is a FIFO")
    os.close(rfd)
    ok(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced")
    prd, pwr = os.pipe()
    p = subprocess.run([sdtest.binary(), "report", "--only", "summary", "-o",
                        "/dev/fd/%d" % pwr, d], pass_fds=(pwr,), capture_output=True,
                       text=True, timeout=120)
    os.close(pwr)
    eq(p.returncode, 0, p.stderr)
    got = os.read(prd, 1 << 20).decode()
    os.close(prd)
    contains(got, "Recording: 4 snapshots")
    # A null device of the test's own (the real one is the machine's):
    # made where mknod is permitted, else /dev/null itself is checked.
    node = os.path.join(t, "null")
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        node = "/dev/null"
    r = sdtest.run("report", "--only", "summary", "-o", node, d)
    eq(r.rc, 0, r.err)
    ok(stat.S_ISCHR(os.lstat(node).st_mode), "%s is no longer a device" % node)
    ok(not [f for f in os.listdir(t) if ".tmp." in f], os.listdir(t))


def test_deadlock_in_report():
    d = tempdir("repdl")
    with start("fx-deadlock", "2", parked=2) as fx:
        r = record(fx.pid, "--every", "100ms", "--count", "2", "--out", d)
        eq(r.rc, 0, r.err)
        tids = fx.tids_by_name()
    r = sdtest.run("report", "--only", "locks", d)
    eq(r.rc, 0, r.err)
    c1, c2 = tids["cycle-1"][0], tids["cycle-2"][0]
    # Once, over the snapshots it was seen in.
    matches(r.out, r"deadlock: 2 threads in %d \"fx-deadlock\", \d\d:\d\d:\d\d-\d\d:\d\d:\d\d, "
            r"snapshots 1-2\n    %d \"cycle-1\" waits for mutex <g_lock_b> held by %d "
            r"\"cycle-2\"\n    %d \"cycle-2\" waits for mutex <g_lock_a> held by %d \"cycle-1\"\n"
            % (fx.pid, c1, c2, c2, c1))
    eq(r.out.count("deadlock:"), 1, r.out)
    rep = sdtest.run("report", "--format", "json", d).json()
    eq(len(rep["deadlocks"]), 2)
    eq(sorted(rep["deadlocks"][0]["threads"]), sorted([c1, c2]))


if __name__ == "__main__":
    sdtest.main(globals())
