#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The flame graph's defaults: refused on a terminal at once (before any
# sampling), as pprof is; idle threads left out unless --idle; a title that
# says what was sampled.
import atexit
import os
import shutil
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sdtest  # noqa: E402
from fixture import start  # noqa: E402
from ptyshell import PtyShell  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402

NS = "{http://www.w3.org/2000/svg}"
TMP = tempfile.mkdtemp(prefix="sd-flame-")
atexit.register(shutil.rmtree, TMP, True)


def frames(path):
    root = ET.parse(path).getroot()
    names = set()
    for g in root.iter(NS + "g"):
        if g.get("class") == "f":
            names.add(g.find(NS + "title").text.split(" (")[0])
    title = [t for t in root.iter(NS + "text") if t.get("id") == "title"][0].text
    return names, title


def test_svg_to_a_terminal_is_refused_before_sampling():
    with start("fx-hot") as fx:
        # -d 1h: only a refusal at once ends this before the guard.
        with PtyShell(["profile", "-f", "svg", "-d", "1h", fx.pid],
                      env={"XDG_STATE_HOME": TMP}) as sh:
            sh.expect(r"profile: an SVG flame graph is for a browser: write it with -o "
                      r"FILE\.svg \(or redirect stdout\)")
            eq(sh.wait_exit(), 64)
            ok("sampling" not in sh.raw.decode("utf-8", "replace"), "it sampled first")
        sdtest.assert_running(fx.pid)
    # report's flame graph too.
    with PtyShell(["report", "-f", "svg", TMP], env={"XDG_STATE_HOME": TMP}) as sh:
        sh.expect(r"report: an SVG flame graph is for a browser")
        eq(sh.wait_exit(), 64)


def test_idle_hidden_by_default_and_kept_with_idle():
    with start("fx-hot") as fx:
        a, b = os.path.join(TMP, "default.svg"), os.path.join(TMP, "idle.svg")
        r = sdtest.run("profile", fx.pid, "-c", "10", "-r", "50", "-f", "svg", "-o", a)
        eq(r.rc, 0, r.err)
        r = sdtest.run("profile", fx.pid, "-c", "10", "-r", "50", "-f", "svg", "-o", b,
                       "--idle")
        eq(r.rc, 0, r.err)
        pid = fx.pid
    names, title = frames(a)
    ok("hot_a" in names and "hot_b" in names, names)
    ok("__libc_pause" not in names and "main" not in names, "idle main shown: %s" % names)
    ok(title.startswith("Flame graph: fx-hot (PID %d), " % pid), title)
    ok(title.endswith(", on- and off-CPU, idle hidden"), title)
    names, title = frames(b)
    ok("__libc_pause" in names and "main" in names, names)
    ok("idle hidden" not in title, title)
    # --title replaces the default; --idle and --no-idle exclude each other.
    with start("fx-hot") as fx:
        r = sdtest.run("profile", fx.pid, "-c", "2", "-f", "svg", "-o", a, "--title", "x")
        eq(frames(a)[1], "x")
        r = sdtest.run("profile", fx.pid, "-c", "2", "--idle", "--no-idle")
        eq(r.rc, 64, r)
        contains(r.err, "--idle and --no-idle exclude each other")


if __name__ == "__main__":
    sdtest.main(globals())
