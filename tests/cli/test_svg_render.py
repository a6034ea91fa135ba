#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The flame graph and the timeline as a browser draws them (headless
# Chromium): the title, the axis and the labels are there, inside the
# picture, labels fit their boxes, and a screenshot is not blank. The PNGs
# are kept under $SD_SCREENSHOTS (if set) for a look by eye.
import os
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sdtest  # noqa: E402
from fixture import start  # noqa: E402
from recordlib import record, record_late_deadlock  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402
from svgrender import layout, screenshot  # noqa: E402

TMP = tempfile.mkdtemp(prefix="sd-svg-")
KEEP = os.environ.get("SD_SCREENSHOTS")


def inside(box, w, h, what):
    ok(box["w"] > 0 and box["h"] > 0, "%s has no size: %r" % (what, box))
    ok(box["x"] >= -0.5 and box["y"] >= -0.5, "%s starts outside: %r" % (what, box))
    ok(box["x"] + box["w"] <= w + 0.5 and box["y"] + box["h"] <= h + 0.5,
       "%s overflows the %gx%g picture: %r" % (what, w, h, box))


def keep(png):
    if KEEP:
        os.makedirs(KEEP, exist_ok=True)
        shutil.copy(png, KEEP)


def test_flame_graph_renders_title_and_labels():
    path = os.path.join(TMP, "flame.svg")
    with start("fx-hot") as fx:
        r = sdtest.run("profile", fx.pid, "-c", "20", "-r", "50", "-f", "svg", "-o", path)
        eq(r.rc, 0, r.err)
        pid = fx.pid
    lay = layout(path)
    w, h = lay["w"], lay["h"]
    texts = [t for t in lay["texts"] if t["shown"] and t["text"].strip()]
    title = [t for t in texts if t["id"] == "title"]
    eq(len(title), 1, texts[:5])
    ok(title[0]["text"].startswith("Flame graph: fx-hot (PID %d), " % pid), title[0])
    contains(title[0]["text"], "on- and off-CPU, idle hidden")
    for t in texts:
        inside(t, w, h, "text %r" % t["text"])
    # Every frame wide enough for a label has one, and it fits its box.
    frames = [f for f in lay["frames"] if f["shown"]]
    labelled = [f for f in frames if f["text"].strip()]
    ok(any(f["text"].startswith("hot_a") for f in labelled), labelled[:10])
    ok(any(f["text"] == "all" for f in labelled), labelled[:10])
    for f in labelled:
        ok(f["tx"] >= f["rx"] - 0.5 and f["tx"] + f["tw"] <= f["rx"] + f["rw"] + 0.5,
           "label %r overflows its frame: %r" % (f["text"], f))
    png = os.path.join(TMP, "flame.png")
    pw, ph, colours = screenshot(path, png, int(w), int(h))
    eq((pw, ph), (int(w), int(h)))
    ok(colours > 40, "the screenshot looks blank (%d byte values)" % colours)
    keep(png)


def rgb(fill):
    m = re.match(r"rgb\((\d+), ?(\d+), ?(\d+)\)", fill)
    ok(m, "not an rgb() colour: %r" % fill)
    return tuple(int(x) for x in m.groups())


def test_flame_graph_marks_the_holder():
    # fx-culprit-pool: "syncer" holds g_journal_lock across a write that
    # never completes, 50 workers wait for it. The syncer's own frames are
    # drawn red with what it holds in their title; the waiters' frames and
    # the callers all threads share are not. The oracle for who holds:
    # the fixture's thread names and its worker count.
    import xml.etree.ElementTree as ET
    path = os.path.join(TMP, "holder.svg")
    for engine in ("perf", "ptrace"):
        with start("fx-culprit-pool", 50, parked=50) as fx:
            r = sdtest.run("profile", fx.pid, "-c", "5", "-r", "20", "-e", engine, "-f", "svg",
                           "-o", path)
            eq(r.rc, 0, r.err)
        ns = "{http://www.w3.org/2000/svg}"
        root = ET.parse(path).getroot()
        held, other = {}, {}
        for g in root.iter(ns + "g"):
            if not (g.get("class") or "").startswith("f"):
                continue
            title = g.find(ns + "title").text
            name = title.split(" (")[0]
            fill = rgb(g.find(ns + "rect").get("fill"))
            (held if g.get("class") == "f holder" else other)[name] = (title, fill)
        what = "%s: %s" % (engine, sorted(held))
        for fn in ("syncer_main", "journal_sync", "slow_disk_write"):
            ok(fn in held, what)
            contains(held[fn][0], "; holds mutex <g_journal_lock>, 50 waiters", what)
        for fn in ("handle_request", "worker_main", "start_thread", "all"):
            ok(fn not in held, what)
        ok("handle_request" in other, what)
        # Red, apart from both palettes (warm on-CPU has green >= 80, the
        # off-CPU blues blue >= 200).
        for fn, (_, (r_, g_, b_)) in held.items():
            ok(r_ >= 200 and g_ < 80 and b_ < 80, "%s: %s %r" % (engine, fn, (r_, g_, b_)))
        for fn, (_, (r_, g_, b_)) in other.items():
            ok(not (g_ < 80 and b_ < 80), "%s: %s %r" % (engine, fn, (r_, g_, b_)))
        legend = [t.text or "" for t in root.iter(ns + "text")]
        ok(any("red: holds a lock others wait on" in t for t in legend), legend)
    # As the browser draws it: the holder's frames shown, in that red, with
    # their title.
    lay = layout(path)
    drawn = [f for f in lay["frames"] if f["shown"] and f["cls"] == "f holder"]
    ok(any(f["title"].startswith("journal_sync (") for f in drawn), drawn)
    for f in drawn:
        r_, g_, b_ = rgb(f["fill"])
        ok(r_ >= 200 and g_ < 80 and b_ < 80, f)
        contains(f["title"], "holds mutex <g_journal_lock>, 50 waiters")
    w, h = lay["w"], lay["h"]
    for t in lay["texts"]:
        if t["shown"] and t["text"].strip():
            inside(t, w, h, "text %r" % t["text"])


def deadlock_recording():
    """fx-pool whose late deadlock forms after the second snapshot."""
    d, tids, _, _ = record_late_deadlock("svgrec", "200ms", 6, 2)
    return d, tids


def test_timeline_renders_title_axis_labels_and_markers():
    d, tids = deadlock_recording()
    path = os.path.join(TMP, "timeline.svg")
    r = sdtest.run("report", "--only", "findings", "--timeline-svg", path, d)
    eq(r.rc, 0, r.err)
    lay = layout(path)
    w, h = lay["w"], lay["h"]
    texts = [t for t in lay["texts"] if t["shown"] and t["text"].strip()]
    for t in texts:
        inside(t, w, h, "text %r" % t["text"])
    title = [t for t in texts if t["id"] == "title"]
    eq(len(title), 1)
    contains(title[0]["text"], "Thread states of fx-pool (PID ")
    contains(title[0]["text"], ": 6 snapshots, ")
    ticks = [t for t in texts if t["cls"] == "tick"]
    ok(len(ticks) >= 3, "axis has %d tick labels" % len(ticks))
    xs = [t["x"] for t in ticks]
    eq(xs, sorted(xs), "ticks out of order")
    for a, b in zip(ticks, ticks[1:]):
        ok(a["x"] + a["w"] <= b["x"], "tick labels overlap: %r %r" % (a, b))
    ok(any(t["text"] == "time (UTC)" for t in texts))
    rows = [t for t in texts if t["cls"] == "row"]
    names = {t["text"].split(" ", 1)[1] for t in rows}
    for n in ("late-1", "late-2", "flusher", "http-1", "worker-1", "reader", "fx-pool"):
        ok(n in names, "no row label for %s: %s" % (n, sorted(names)))
    for t in rows:
        ok(t["x"] + t["w"] <= 240, "row label %r runs into the chart" % t["text"])
    markers = [t for t in texts if t["parent"] and "marker" in t["parent"]]
    ok(any(t["text"].startswith("deadlock (2 threads)") for t in markers), markers)
    ok(any(t["text"].startswith("held: mutex <g_pool_lock>") for t in markers), markers)
    png = os.path.join(TMP, "timeline.png")
    pw, ph, colours = screenshot(path, png, int(w), int(h))
    eq((pw, ph), (int(w), int(h)))
    ok(colours > 40, "the screenshot looks blank (%d byte values)" % colours)
    keep(png)


if __name__ == "__main__":
    try:
        sdtest.main(globals())
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
