# SPDX-License-Identifier: MIT
# record on a small file system: a full disk (ENOSPC) stops the recording
# with a clear error and leaves every earlier snapshot and the manifest
# intact; --max-disk keeps the recording under its size by dropping the
# oldest snapshots and says so. Needs to mount a tmpfs (root).
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import sdtest  # noqa: E402
from fixture import start  # noqa: E402
from recordlib import check_recording, manifest, record, snap_files  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402


class Tmpfs:
    """A tmpfs of SIZE mounted on a fresh directory, unmounted on exit."""

    def __init__(self, size):
        self.dir = tempfile.mkdtemp(prefix="sd-tmpfs-")
        self.size = size

    def __enter__(self):
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0700" % self.size,
                            "tmpfs", self.dir], capture_output=True, text=True)
        if p.returncode != 0:
            os.rmdir(self.dir)
            raise PermissionError(p.stderr.strip() or "mount failed")
        return self.dir

    def __exit__(self, *exc):
        subprocess.run(["umount", self.dir])
        os.rmdir(self.dir)
        return False


def test_full_disk_keeps_earlier_files():
    sdtest.need_root("mounting a small tmpfs to fill up")
    with Tmpfs("96k") as mnt, start("fx-mutex", "normal", "3", parked=3) as fx:
        d = os.path.join(mnt, "rec")
        # No bound: it runs until the disk is full.
        r = record(fx.pid, "--every", "50ms", "--out", d)
        sdtest.assert_running(fx.pid)
        eq(r.rc, 2, r)
        contains(r.err, "no space left on device")
        contains(r.err, "snapshots already in %s are intact" % d)
        contains(r.err, "stopped: disk full")
        ok("Traceback" not in r.err)
        snaps = check_recording(d, expect_state=None)
        ok(len(snaps) >= 2, "only %d snapshots fit" % len(snaps))
        eq(len(r.out.strip().splitlines()), len(snaps), r.out)
        # report reads what is there.
        rep = sdtest.run("report", "--only", "summary", d)
        eq(rep.rc, 0, rep.err)
        contains(rep.out, "Recording: %d snapshots" % len(snaps))


def test_max_disk_drops_oldest():
    sdtest.need_root("mounting a small tmpfs to fill up")
    with Tmpfs("4m") as mnt, start("fx-mutex", "normal", "3", parked=3) as fx:
        d = os.path.join(mnt, "rec")
        r = record(fx.pid, "--every", "50ms", "--count", "12", "--max-disk", "60k", "--out", d)
        eq(r.rc, 0, r.err)
        contains(r.err, "(--max-disk 60k reached)")
        snaps = check_recording(d)
        total = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
        ok(total <= 60 * 1024, "%d bytes in %s" % (total, d))
        m = manifest(d)
        dropped = r.err.count("dropped the oldest snapshot")
        ok(dropped >= 1)
        eq(m["dropped"]["count"], dropped)
        eq(len(snaps) + dropped, 12)
        # The newest ones are kept.
        eq([s["seq"] for s in snaps], list(range(13 - len(snaps), 13)))
        for f in m["dropped"]["last"]:
            ok(f not in snap_files(d))


if __name__ == "__main__":
    sdtest.main(globals())
