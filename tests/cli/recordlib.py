# SPDX-License-Identifier: MIT
# Helpers shared by the record and report tests: run `stackdump record` in
# the background, watch its directory, and read what it wrote the way a
# user would (the manifest, and every snapshot through `stackdump load`).
import atexit
import gzip
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import sdtest
from fixture import path_of, start, thread_states

SNAP_FORMAT = "stackdump-snapshot"


_dirs = []


def _cleanup():
    # SD_KEEP=1 keeps the recordings for a look after a failure.
    if os.environ.get("SD_KEEP"):
        print("kept: %s" % " ".join(_dirs))
        return
    for d in _dirs:
        shutil.rmtree(d, ignore_errors=True)


atexit.register(_cleanup)


def tempdir(tag):
    """A fresh directory, removed when the test script exits."""
    d = tempfile.mkdtemp(prefix="sd-%s-" % tag)
    _dirs.append(d)
    return d


def unique_fixture(name, tag):
    """A copy of fixture NAME under a name no other process has (other
    tests may run the same fixture at the same time), for --pid-of.
    Returns (path, comm)."""
    comm = ("r%d%s" % (os.getpid() % 100000, tag))[:15]
    d = tempdir("fx")
    dst = os.path.join(d, comm)
    shutil.copy(path_of(name), dst)
    return dst, comm


class Recorder:
    """`stackdump record ARGS` in the background; stdout and stderr go to
    files so that a test can wait for a line without blocking."""

    def __init__(self, *args):
        self.out = tempfile.TemporaryFile()
        self.err = tempfile.TemporaryFile()
        e = dict(os.environ)
        e.pop("DEBUGINFOD_URLS", None)
        e["NO_COLOR"] = "1"
        self.proc = subprocess.Popen(
            [sdtest.binary(), "record"] + [str(a) for a in args],
            stdin=subprocess.DEVNULL, stdout=self.out, stderr=self.err, env=e)
        self.pid = self.proc.pid

    def _read(self, f):
        f.seek(0)
        return f.read().decode("utf-8", "replace")

    def stdout(self):
        return self._read(self.out)

    def stderr(self):
        return self._read(self.err)

    def wait_for(self, pred, what, timeout=60):
        """Poll until pred() is true; fails the test (with the recorder's
        output) after timeout seconds. The timeout only bounds a hang."""
        deadline = time.monotonic() + timeout
        while not pred():
            if self.proc.poll() is not None and not pred():
                raise AssertionError("recorder exited (rc %s) before %s; stderr: %s" % (
                    self.proc.returncode, what, self.stderr()))
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError("no %s; stderr: %s" % (what, self.stderr()))
            time.sleep(0.02)

    def wait_err(self, text, timeout=60):
        self.wait_for(lambda: text in self.stderr(), repr(text), timeout)

    def signal(self, sig):
        self.proc.send_signal(sig)

    def wait(self, timeout=120):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("recorder did not stop; stderr: %s" % self.stderr())

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def record(*args, timeout=300):
    """Run record to completion; returns sdtest.Result."""
    return sdtest.run("record", *args, timeout=timeout)


def manifest(d):
    with open(os.path.join(d, "manifest.json")) as f:
        return json.load(f)


def snap_files(d):
    """Snapshot files on disk, sorted (= by time)."""
    return sorted(f for f in os.listdir(d) if f.startswith("snap-") and
                  (f.endswith(".json") or f.endswith(".json.gz")))


def temp_files(d):
    return [f for f in os.listdir(d) if ".tmp." in f]


def read_snap(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)


def check_recording(d, expect_state="stopped"):
    """The invariants of any recording directory: no temporary file, the
    manifest lists exactly the snapshot files on disk in time order, and
    each one loads (through `stackdump load`) and is a valid snapshot.
    Returns the parsed snapshots in order."""
    sdtest.eq(temp_files(d), [], "temporary files left in %s" % d)
    m = manifest(d)
    sdtest.eq(m["format"], "stackdump-recording")
    if expect_state:
        sdtest.eq(m["state"], expect_state)
    listed = [e["file"] for e in m["snapshots"]]
    sdtest.eq(listed, snap_files(d), "manifest and directory disagree")
    snaps = []
    for e in m["snapshots"]:
        p = os.path.join(d, e["file"])
        r = sdtest.run("load", p)
        sdtest.eq(r.rc, 0, "load %s: %s" % (p, r.err))
        sdtest.contains(r.out, "loaded ")
        s = read_snap(p)
        sdtest.eq(s["format"], SNAP_FORMAT)
        sdtest.eq(s["version"], 1)
        sdtest.eq(s["pid"], e["pid"])
        sdtest.eq(len(s["threads"]), e["threads"])
        sdtest.eq(os.path.getsize(p), e["bytes"])
        snaps.append(s)
    times = [s["time"] for s in snaps]
    sdtest.eq(times, sorted(times), "snapshots out of time order")
    return snaps


def record_late_deadlock(tag, every, count, before):
    """Record fx-pool (2 workers, 1 http thread and the late-deadlock pair)
    COUNT times EVERY apart into a new directory, setting the deadlock off
    once BEFORE snapshots exist and waiting until both late threads park on
    each other's lock. Returns (dir, {name: [tids]}, pid, the number of
    snapshots written when both had parked)."""
    d = tempdir(tag)
    with start("fx-pool", "2", "1", "late-deadlock", parked=3) as fx:
        tids = fx.tids_by_name()
        rec = Recorder(fx.pid, "--every", every, "--count", str(count), "--out", d)
        rec.wait_for(lambda: len(snap_files(d)) >= before, "%d snapshots" % before)
        os.kill(fx.pid, signal.SIGUSR1)
        # Both late threads parked on each other's lock before the next
        # snapshot counts them (a snapshot in between is fine: it shows
        # them on their way).
        late = {tids["late-1"][0], tids["late-2"][0]}
        deadline = time.monotonic() + 60
        while sum(1 for t, s in thread_states(fx.pid).items() if t in late and s.in_futex) < 2:
            sdtest.ok(time.monotonic() < deadline, "late threads did not park")
            time.sleep(0.01)
        parked_at = len(snap_files(d))
        sdtest.eq(rec.wait(), 0, rec.stderr())
        return d, tids, fx.pid, parked_at


def kill_quietly(pid, sig=signal.SIGKILL):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
