#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# top at a terminal (a pty): busiest threads first, idle threads folded
# (i shows them), keys to sort (c, n, t), q quits, and the screen is redrawn
# in place (cursor home and erase-to-end-of-line) rather than cleared each
# time.
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sdtest  # noqa: E402
from fixture import start  # noqa: E402
from ptyshell import PtyShell  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402

TMP = tempfile.mkdtemp(prefix="sd-top-")


def rows(block):
    """(tid, name) of the thread rows of one screen, in order."""
    return [(int(m.group(1)), m.group(2)) for m in
            re.finditer(r"(?m)^\s+(\d+)  (\S+)\s+\S", block.split("%OWN")[0])]


def screen_after(sh, marker):
    """The text of the first complete screen after MARKER."""
    sh.expect(marker)
    m = sh.expect(r"(?s)stackdump top:.*?%OWN %TOTAL")
    return m.group(0)


def test_top_sorts_folds_and_quits_on_q():
    with start("fx-pool", "30", "2", parked=32) as pool:
        # ptrace: the perf engine reads no lock words, so it cannot tell
        # the holder of a lock from an idle sleeper.
        with PtyShell(["top", pool.pid, "--refresh", "200ms", "--rate", "20", "-e", "ptrace"],
                      env={"XDG_STATE_HOME": TMP}, rows=100) as sh:
            first = screen_after(sh, r"stackdump top: %d" % pool.pid)
            # Busy first: the lock waiters and the holder; the 30 idle
            # workers, the reader and main (in pause) fold into one line.
            names = [n for _, n in rows(first)]
            eq(sorted(names), ["flusher", "http-1", "http-2"], first)
            contains(first, "... 32 idle threads (waiting for work): i shows them")
            ok("worker-1 " not in first, first)
            # i shows them, n sorts by name.
            sh.send("i")
            shown = screen_after(sh, r"idle threads shown")
            # The 30 workers parked alike are one row at a terminal; the
            # holder (flusher) heads the list with what it holds.
            eq(len(rows(shown)), 6, shown)
            contains(shown, "worker-1..30")
            contains(shown, "(30 threads alike)")
            eq(rows(shown)[0][1], "flusher", shown)
            contains(shown, "holds mutex <g_pool_lock>, 2 waiters")
            sh.send("n")
            byname = screen_after(sh, r"sorted by name")
            names = [n for _, n in rows(byname)]
            eq(names, sorted(names), byname)
            sh.send("t")
            bytid = screen_after(sh, r"sorted by TID")
            tids = [t for t, _ in rows(bytid)]
            eq(tids, sorted(tids), bytid)
            sh.send("q")
            eq(sh.wait_exit(), 0, sh.seen[-2000:])
            raw = sh.raw.decode("utf-8", "replace")
        # Cleared once at the start, then redrawn in place.
        eq(raw.count("\033[2J"), 1, "the screen is cleared on every redraw")
        ok(raw.count("\033[H") >= 4, "no cursor-home redraws")
        ok("\033[K" in raw and "\033[J" in raw, "lines are not erased in place")
        sdtest.assert_running(pool.pid)


def test_top_puts_cpu_hogs_first():
    with start("fx-hot") as fx:
        with PtyShell(["top", fx.pid, "--refresh", "200ms", "--rate", "20"],
                      env={"XDG_STATE_HOME": TMP}) as sh:
            sh.expect(r"stackdump top: %d" % fx.pid)
            scr = screen_after(sh, r"sorted by activity")
            names = [n for _, n in rows(scr)]
            eq(sorted(names[:4]), ["hot-a-1", "hot-a-2", "hot-a-3", "hot-b"], scr)
            ok("fx-hot" not in names, "main (idle in pause) is not folded: %s" % scr)
            sh.send("h")
            sh.expect(r"keys: c sort by CPU, n by name, t by TID; i idle threads "
                      r"shown/folded; q quit")
            sh.send("q")
            eq(sh.wait_exit(), 0)
        sdtest.assert_running(fx.pid)


if __name__ == "__main__":
    sdtest.main(globals())
