# SPDX-License-Identifier: MIT
# record against live fixtures: the files, the manifest and their content,
# compression, the target exiting (and --follow), SIGUSR1, SIGINT/SIGTERM
# while a snapshot is being written (no partial file), SIGKILL (only a
# hidden temporary file, removed by the next run), and the loader refusing
# truncated, corrupted and wrong-version files with the place named.
import gzip
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import sdtest  # noqa: E402
from fixture import start  # noqa: E402
from recordlib import (Recorder, check_recording, kill_quietly,  # noqa: E402
                       manifest, read_snap, record, snap_files, temp_files,
                       tempdir, unique_fixture)
from sdtest import contains, eq, matches, ok  # noqa: E402


def test_count_files_and_content():
    d = tempdir("rec")
    with start("fx-mutex", "normal", "3", parked=3) as fx:
        r = record(fx.pid, "--every", "200ms", "--count", "5", "--out", d)
        sdtest.assert_running(fx.pid)
        eq(r.rc, 0, r.err)
        tids = fx.tids_by_name()
    snaps = check_recording(d)
    eq(len(snaps), 5)
    eq(len(r.out.strip().splitlines()), 5, r.out)
    contains(r.err, "stopped: --count reached")
    m = manifest(d)
    eq(m["options"]["every"], "200ms")
    eq([e["seq"] for e in m["snapshots"]], [1, 2, 3, 4, 5])
    holder = tids["holder"][0]
    for s in snaps:
        eq(s["pid"], fx.pid)
        eq(s["reason"], "every 200ms")
        eq(s["process"]["pid"], fx.pid)
        # Only the program: arguments can hold secrets (record --cmdline
        # keeps them).
        ok(s["process"]["cmdline"].endswith("fx-mutex"), s["process"])
        ok(s["host"]["kernel"], "no kernel release")
        eq(len(s["threads"]), 5)
        # Modules with build-ids: what another machine needs.
        names = {mo["name"]: mo for mo in s["modules"]}
        ok("fx-mutex" in names and "libc.so.6" in names, list(names))
        matches(names["fx-mutex"]["build_id"], r"^[0-9a-f]{40}$")
        for t in s["threads"]:
            for f in t["frames"]:
                matches(f["addr"], r"^0x[0-9a-f]+$")
        # Lock analysis is saved: the waiters wait for g_ledger_lock held
        # by the holder.
        waiters = [t for t in s["threads"] if t["name"].startswith("waiter-")]
        eq(len(waiters), 3)
        for t in waiters:
            eq(t["wait"]["kind"], "mutex")
            eq(t["wait"]["owner"], holder)
            eq(t["wait"]["symbol"], "g_ledger_lock")
            fn = [f["function"] for f in t["frames"]]
            ok("waiter_post" in fn, fn)
        locks = [lk for lk in s["locks"] if lk["symbol"] == "g_ledger_lock"]
        eq(len(locks), 1, s["locks"])
        eq(locks[0]["owner"], holder)
        eq(sorted(locks[0]["waiters"]), sorted(t["tid"] for t in waiters))
        eq(s["deadlocks"], [])


def test_churning_threads_files_kept_bounded():
    # The recorder keeps each thread's /proc files open between snapshots.
    # With threads born and gone by the thousand (TIDs reused as they
    # wrap), every snapshot must still name its threads right, and the
    # open files must follow the live threads, not pile up.
    d = tempdir("rec")
    fds = []
    with start("fx-churn", 2, 2) as fx:
        rec = Recorder(fx.pid, "--every", "100ms", "--count", "30", "-q", "--out", d)
        try:
            for _ in range(20):
                if rec.proc.poll() is not None:
                    break
                try:
                    fds.append(len(os.listdir("/proc/%d/fd" % rec.pid)))
                except OSError:
                    break
                time.sleep(0.1)
            rc = rec.proc.wait(timeout=120)
        finally:
            rec.kill()
        eq(rc, 0, rec.stderr())
    snaps = check_recording(d)
    eq(len(snaps), 30)
    ok(fds, "the recorder's descriptors were never seen")
    # 4 files a thread: stable (2), spawners (2), main, at most 8
    # ephemeral ones alive at a time, and the recorder's own few.
    ok(max(fds) < 4 * 13 + 32, "descriptors piled up: %s" % fds)
    for s in snaps:
        names = sorted(t["name"] for t in s["threads"])
        ok("stable-1" in names and "stable-2" in names and "fx-churn" in names, names)
        for t in s["threads"]:
            if t["name"].startswith("stable-"):
                fns = [f["function"] for f in t["frames"]]
                ok("stable_wait" in fns, fns)
                eq(t["state"], "S")


def test_compress():
    d, dz = tempdir("plain"), tempdir("gz")
    with start("fx-mutex", "normal", "3", parked=3) as fx:
        eq(record(fx.pid, "--every", "100ms", "--count", "3", "--out", d).rc, 0)
        r = record(fx.pid, "--every", "100ms", "--count", "3", "--compress", "--out", dz)
        eq(r.rc, 0, r.err)
    snaps = check_recording(dz)
    eq(len(snaps), 3)
    for f in snap_files(dz):
        ok(f.endswith(".json.gz"), f)
        with open(os.path.join(dz, f), "rb") as fh:
            eq(fh.read(2), b"\x1f\x8b")
    plain = sum(os.path.getsize(os.path.join(d, f)) for f in snap_files(d))
    packed = sum(os.path.getsize(os.path.join(dz, f)) for f in snap_files(dz))
    ok(packed * 3 < plain, "compressed %d bytes vs %d" % (packed, plain))
    # The same content either way (but for the times and timings).
    a = read_snap(os.path.join(d, snap_files(d)[0]))
    b = snaps[0]
    eq([t["name"] for t in a["threads"]], [t["name"] for t in b["threads"]])


def test_for_and_usage_errors():
    d = tempdir("for")
    with start("fx-stacks", blocked=6) as fx:
        r = record(fx.pid, "--every", "300ms", "--for", "1s", "--out", d)
        eq(r.rc, 0, r.err)
        contains(r.err, "stopped: --for elapsed")
        ok(len(check_recording(d)) >= 1)
        for args, msg in [
            (["--every", "1s"], "--out DIR is required"),
            (["--out", d], "--every DURATION is required"),
            (["--every", "0.001s", "--out", d], "invalid --every"),
            (["--every", "1s", "--count", "0", "--out", d], "invalid --count"),
            (["--every", "1s", "--max-disk", "12q", "--out", d], "invalid --max-disk"),
            (["--when", "parked>8", "--out", d], "invalid --when condition 'parked>8'"),
            (["--when", "load>=3", "--out", d], "invalid --when condition"),
            (["--every", "1s", "--burst", "3", "--out", d], "--burst needs --when"),
            (["--pid-of", "x", "--every", "1s", "--out", d], "not both"),
        ]:
            r = record(fx.pid, *args)
            eq(r.rc, 64, "%s: %r" % (args, r))
            contains(r.err, msg)
    r = record("--every", "1s", "--out", d)
    eq(r.rc, 64)
    contains(r.err, "missing target")
    r = record("999999999", "--every", "1s", "--out", d)
    eq(r.rc, 2, r)
    contains(r.err, "999999999")
    r = record("--pid-of", "no-such-process-xyz", "--every", "1s", "--out", d)
    eq(r.rc, 2)
    contains(r.err, "no process named 'no-such-process-xyz'")
    with start("fx-stacks", blocked=6) as fx:
        r = record(fx.pid, "--every", "1s", "--out", "/proc/version/x")
        eq(r.rc, 2)
        contains(r.err, "/proc/version")


def test_target_killed_mid_recording():
    d = tempdir("kill")
    fx = start("fx-mutex", "normal", "2", parked=2)
    rec = Recorder(fx.pid, "--every", "150ms", "--out", d)
    try:
        rec.wait_for(lambda: len(rec.stdout().splitlines()) >= 2, "two snapshots")
        fx.stop()
        rc = rec.wait()
    finally:
        rec.kill()
        fx.stop()
    eq(rc, 1, rec.stderr())
    contains(rec.stderr(), "target %d \"fx-mutex\" exited" % fx.pid)
    contains(rec.stderr(), "stopped: target exited")
    snaps = check_recording(d)
    ok(len(snaps) >= 2)
    m = manifest(d)
    eq(m["stop_reason"], "target exited")
    ok(any(e["event"] == "target-exited" for e in m["events"]), m["events"])


def test_follow_new_process():
    d = tempdir("follow")
    path, comm = unique_fixture("fx-stacks", "fol")
    a = start(path, blocked=6)
    rec = Recorder("--pid-of", comm, "--follow", "--every", "150ms", "--out", d)
    b = None
    try:
        rec.wait_for(lambda: len(rec.stdout().splitlines()) >= 1, "a snapshot")
        a.stop()
        rec.wait_err("waiting for a new process named \"%s\"" % comm)
        b = start(path, blocked=6)
        rec.wait_err("following the new process %d" % b.pid)
        rec.wait_for(lambda: any(e["pid"] == b.pid for e in manifest(d)["snapshots"]),
                     "a snapshot of the new process")
        rec.signal(signal.SIGINT)
        rc = rec.wait()
        # Once the recorder is gone (while it runs, a snapshot in progress
        # holds a thread in t for its pause).
        sdtest.assert_running(b.pid)
    finally:
        rec.kill()
        a.stop()
        if b:
            b.stop()
    eq(rc, 130, rec.stderr())
    snaps = check_recording(d)
    pids = [s["pid"] for s in snaps]
    ok(a.pid in pids and b.pid in pids, pids)
    eq(pids, sorted(pids, key=lambda p: p == b.pid), "old pid after the new one")
    m = manifest(d)
    events = [e["event"] for e in m["events"]]
    ok("target-exited" in events and "followed" in events, events)
    eq(m["target"]["pid"], b.pid)
    eq(m["stop_reason"], "interrupted")


def test_sigusr1_takes_one_now():
    d = tempdir("usr1")
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        # A condition that never holds: only SIGUSR1 takes snapshots.
        rec = Recorder(fx.pid, "--when", "parked>=50", "--every", "100ms", "--out", d)
        try:
            rec.wait_err("kill -USR1 %d" % rec.pid)
            eq(snap_files(d), [])
            # One recorder per directory.
            r = record(fx.pid, "--every", "1s", "--count", "1", "--out", d)
            eq(r.rc, 2, r)
            contains(r.err, "another recording (stackdump pid %d) is writing into %s" % (
                rec.pid, d))
            rec.signal(signal.SIGUSR1)
            rec.wait_for(lambda: len(snap_files(d)) == 1, "the SIGUSR1 snapshot")
            rec.signal(signal.SIGUSR1)
            rec.wait_for(lambda: len(snap_files(d)) == 2, "a second SIGUSR1 snapshot")
            rec.signal(signal.SIGTERM)
            rc = rec.wait()
        finally:
            rec.kill()
        sdtest.assert_running(fx.pid)
    eq(rc, 130, rec.stderr())
    snaps = check_recording(d)
    eq([s["reason"] for s in snaps], ["SIGUSR1", "SIGUSR1"])


def big_fixture():
    """A process whose snapshots take a while to write (many threads)."""
    f = os.path.join(tempdir("sig"), "progress")
    return start("fx-signals", f, "600", blocked=600, timeout=120)


def test_sigterm_mid_write_leaves_no_partial_file():
    caught = 0
    with big_fixture() as fx:
        for attempt in range(8):
            d = tempdir("term")
            rec = Recorder(fx.pid, "--every", "10ms", "--out", d)
            try:
                # Wait for a snapshot being written (its hidden temporary
                # file), then SIGTERM right away.
                deadline = time.monotonic() + 60
                seen = False
                while time.monotonic() < deadline and rec.proc.poll() is None:
                    if any(t.startswith(".snap-") for t in temp_files(d)):
                        rec.signal(signal.SIGTERM)
                        seen = True
                        break
                if not seen:
                    rec.signal(signal.SIGTERM)
                rc = rec.wait()
            finally:
                rec.kill()
            eq(rc, 130, rec.stderr())
            contains(rec.stderr(), "stopped: interrupted")
            snaps = check_recording(d)
            if seen:
                caught += 1
                # The file being written when SIGTERM came was finished.
                ok(len(snaps) >= 1, "the snapshot in progress was dropped")
            if caught >= 2:
                break
        sdtest.assert_running(fx.pid)
    print("  caught the recorder writing a snapshot %d times" % caught)
    ok(caught >= 1, "never caught the recorder while it wrote a file")


def test_sigkill_leaves_only_a_temporary_file():
    with big_fixture() as fx:
        for attempt in range(8):
            d = tempdir("kill9")
            rec = Recorder(fx.pid, "--every", "10ms", "--out", d)
            seen = False
            try:
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and rec.proc.poll() is None:
                    if any(t.startswith(".snap-") for t in temp_files(d)):
                        rec.signal(signal.SIGKILL)
                        seen = True
                        break
            finally:
                rec.kill()
            if seen and temp_files(d):
                break
        else:
            raise AssertionError("never caught the recorder while it wrote a file")
        sdtest.assert_running(fx.pid)
        # Every snapshot the manifest lists is whole; the temporary file is
        # hidden, and report skips it.
        tmp = temp_files(d)
        ok(all(t.startswith(".") for t in tmp), tmp)
        m = manifest(d)
        for e in m["snapshots"]:
            eq(sdtest.run("load", os.path.join(d, e["file"])).rc, 0)
        if m["snapshots"]:
            eq(sdtest.run("report", "--only", "summary", d).rc, 0)
        # The next recording into the directory removes it and appends.
        r = record(fx.pid, "--every", "10ms", "--count", "1", "--out", d)
        eq(r.rc, 0, r.err)
        contains(r.err, "removed 1 temporary files")
        contains(r.err, "appending to the recording")
        eq(temp_files(d), [])
        snaps = check_recording(d)
        eq(len(snaps), len(m["snapshots"]) + 1)


def make_snapshot():
    d = tempdir("load")
    with start("fx-mutex", "normal", "2", parked=2) as fx:
        r = record(fx.pid, "--every", "100ms", "--count", "1", "--out", d)
        eq(r.rc, 0, r.err)
    return os.path.join(d, snap_files(d)[0])


def test_loader_rejects_bad_files():
    good = make_snapshot()
    with open(good, "rb") as f:
        data = f.read()
    d = os.path.dirname(good)

    def load_fails(name, content, *expect):
        p = os.path.join(d, name)
        with open(p, "wb") as f:
            f.write(content)
        r = sdtest.run("load", p)
        eq(r.rc, 2, "%s: %r" % (name, r))
        contains(r.err, p + ":")
        for e in expect:
            contains(r.err, e)
        ok("Traceback" not in r.err and "Sanitizer" not in r.err)
        # report refuses it too, naming it, and reads the good one.
        r = sdtest.run("report", "--only", "summary", good, p)
        eq(r.rc, 1, r)
        contains(r.err, p + ":")
        contains(r.out, "Recording: 1 snapshot ")

    load_fails("truncated.json", data[: len(data) // 2], "line 1 column", "truncated")
    load_fails("empty.json", b"", "empty file")
    mid = len(data) // 2
    load_fails("corrupted.json", data[:mid] + b"\x00garbage{" + data[mid + 9:], "line 1 column")
    doc = json.loads(data)
    doc["version"] = 99
    load_fails("newer.json", json.dumps(doc).encode(),
               "version: format version 99 is newer than this stackdump reads")
    doc["version"] = 1
    doc["threads"][1]["frames"][0]["addr"] = "nowhere"
    load_fails("badaddr.json", json.dumps(doc).encode(),
               "threads[1].frames[0].addr: invalid hex number \"nowhere\"")
    doc = json.loads(data)
    del doc["threads"][0]["tid"]
    load_fails("notid.json", json.dumps(doc).encode(), "threads[0].tid: missing")
    load_fails("other.json", b'{"format": "pcap", "version": 1}', "is not a stackdump snapshot")
    z = gzip.compress(data)
    load_fails("truncated.json.gz", z[: len(z) // 2], "truncated")
    zb = bytearray(z)
    zb[-6] ^= 0xFF
    load_fails("crc.json.gz", bytes(zb), "corrupted")
    load_fails("manifest.json", b'{"format": "stackdump-recording", "version": 1}',
               "manifest of a recording")
    # The good one still loads, and a dump JSON loads too.
    eq(sdtest.run("load", good).rc, 0)


def test_shell_save_and_load():
    d = tempdir("shell")
    p, pz = os.path.join(d, "one.json"), os.path.join(d, "one.json.gz")
    with start("fx-mutex", "normal", "2", parked=2) as fx:
        r = sdtest.run("-c", "dump; save %s; save %s" % (p, pz), fx.pid)
        eq(r.rc, 0, r.err)
        contains(r.err, "saved the snapshot of %d \"fx-mutex\" (4 threads) to %s" % (fx.pid, p))
        sdtest.assert_running(fx.pid)
    eq(temp_files(d), [])
    s = read_snap(p)
    eq(s["reason"], "save")
    eq(read_snap(pz)["threads"], s["threads"])
    r = sdtest.run("-c", "load %s" % pz)
    eq(r.rc, 0, r.err)
    contains(r.err, "loaded %s: pid %d \"fx-mutex\", 4 threads" % (pz, s["pid"]))
    r = sdtest.run("-c", "save %s" % p)
    eq(r.rc, 2)
    contains(r.err, "no snapshot to save")
    r = sdtest.run("save", p)
    eq(r.rc, 64)


if __name__ == "__main__":
    sdtest.main(globals())
