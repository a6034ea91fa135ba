#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# stackdump diff of two known profiles: folded files written here with a
# known change, a JSON profile against a folded one, the differential flame
# graph, and unreadable inputs.
import json
import os
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sdtest  # noqa: E402
from fixture import start  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402

# A: 75% in hot_a, 25% in hot_b (400 samples). B: 50/50, twice the samples,
# plus a new stack in cold_c.
A = """__clone3;start_thread;worker;hot_a 300
__clone3;start_thread;worker;hot_b 100
"""
B = """__clone3;start_thread;worker;hot_a 400
__clone3;start_thread;worker;hot_b 300
__clone3;start_thread;worker;cold_c 100
"""


def write(d, name, text):
    p = os.path.join(d, name)
    with open(p, "w") as f:
        f.write(text)
    return p


def test_diff_text():
    with tempfile.TemporaryDirectory() as d:
        a, b = write(d, "a.folded", A), write(d, "b.folded", B)
        r = sdtest.run("diff", a, b)
    eq(r.rc, 0, r.err)
    contains(r.out, "A: 400 samples, B: 800 samples (A scaled by 2 to compare shares)")
    # hot_a: 75% -> 50% (-25 points); hot_b 25% -> 37.5% (+12.5); cold_c new 12.5%.
    grew, shrank = r.out.split("Stacks that shrank:")
    sdtest.matches(grew, r"^\s+\+12\.5\s+25\.0% ->\s+37\.5%\s+hot_b < worker < start_thread < __clone3$")
    sdtest.matches(grew, r"^\s+\+12\.5\s+0\.0% ->\s+12\.5% \(new\)\s+cold_c < worker")
    sdtest.matches(shrank, r"^\s+-25\.0\s+75\.0% ->\s+50\.0%\s+hot_a < worker")
    ok("hot_a" not in grew)
    fn = r.out.split("Self time by function:")[1]
    sdtest.matches(fn, r"^\s+-25\.0\s+75\.0% ->\s+50\.0%\s+hot_a$")


def test_diff_same_profile():
    with tempfile.TemporaryDirectory() as d:
        a = write(d, "a.folded", A)
        r = sdtest.run("diff", a, a)
    eq(r.rc, 0, r.err)
    eq(r.out.count("(none)"), 2)
    contains(r.out, "(no change)")


def test_diff_svg():
    with tempfile.TemporaryDirectory() as d:
        a, b = write(d, "a.folded", A), write(d, "b.folded", B)
        out = os.path.join(d, "d.svg")
        r = sdtest.run("diff", a, b, "--format", "svg", "-o", out)
        eq(r.rc, 0, r.err)
        root = ET.parse(out).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    fills = {}
    for g in root.iter(ns + "g"):
        if g.get("class") == "f":
            fills[g.find(ns + "title").text.split(" (")[0]] = g.find(ns + "rect").get("fill")
    for fn in ("hot_a", "hot_b", "cold_c", "worker", "all"):
        ok(fn in fills, fills)
    # Red for growth, blue for shrinkage.
    ok(fills["hot_b"].startswith("rgb(255,"), fills["hot_b"])
    ok(fills["hot_a"].endswith(",255)"), fills["hot_a"])


def test_diff_folded_and_json():
    with tempfile.TemporaryDirectory() as d:
        a, b = write(d, "a.folded", A), write(d, "b.folded", B)
        r = sdtest.run("diff", a, b, "--format", "folded")
        eq(r.rc, 0, r.err)
        got = sorted(r.out.splitlines())
        eq(got, sorted(["__clone3;start_thread;worker;hot_a 600 400",
                        "__clone3;start_thread;worker;hot_b 200 300",
                        "__clone3;start_thread;worker;cold_c 0 100"]))
        r = sdtest.run("diff", a, b, "--format", "json")
        eq(r.rc, 0, r.err)
        doc = json.loads(r.out)
        eq(doc["samples_a"], 400)
        eq(doc["samples_b"], 800)
        st = {s["frames"][0]: s for s in doc["stacks"]}
        eq(st["hot_a"]["delta_percent"], -25.0)


def test_diff_of_saved_profiles():
    # A JSON profile and a folded profile of the same run compare equal.
    with start("fx-hot") as fx, tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "p.json")
        r = sdtest.run("profile", fx.pid, "-c", "5", "-f", "json", "-o", js)
        eq(r.rc, 0, r.err)
        r = sdtest.run("diff", js, js)
        eq(r.rc, 0, r.err)
        contains(r.out, "A: 25 samples, B: 25 samples")
        contains(r.out, "(no change)")
        fo = os.path.join(d, "p.folded")
        r = sdtest.run("profile", fx.pid, "-c", "5", "-f", "folded", "-o", fo, "--no-idle")
        eq(r.rc, 0, r.err)
        r = sdtest.run("diff", js, fo)
        eq(r.rc, 0, r.err)
        # main's pause stack (20%) is gone from B (--no-idle).
        sdtest.matches(r.out, r"-20\.0\s+20\.0% ->\s+0\.0% \(gone\)\s+__libc_pause < main")


def test_diff_errors():
    with tempfile.TemporaryDirectory() as d:
        a = write(d, "a.folded", A)
        bad = write(d, "bad.folded", "this is not folded\n")
        r = sdtest.run("diff", a, os.path.join(d, "missing"))
        eq(r.rc, 2)
        contains(r.err, "cannot open %s" % os.path.join(d, "missing"))
        r = sdtest.run("diff", a, bad)
        eq(r.rc, 2)
        contains(r.err, "line 1 is not a folded stack")
        j = write(d, "x.json", '{"foo": 1}')
        r = sdtest.run("diff", j, a)
        eq(r.rc, 2)
        contains(r.err, "not a stackdump profile")
        r = sdtest.run("diff", a)
        eq(r.rc, 64)


if __name__ == "__main__":
    sdtest.main(globals())
