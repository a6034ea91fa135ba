#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# What a profile costs and says about it: libdw's symbol lookups per sample
# stay bounded on a fixture with many condvar waiters and a large symbol
# table (the lock view names every waiter's condvar at every sample); a
# tiny --cpu-budget slows sampling and every output says the rate got
# beside the rate asked; the output format follows the file's name, and a
# -f that the name contradicts is refused.
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sdtest  # noqa: E402
from fixture import start  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402

WAITERS = 32

LOOKUPS = re.compile(r"^libdw lookups: (\d+) frame addresses resolved, (\d+) data symbol scans "
                     r"\(([\d.]+) per sample\); data symbols: (\d+) lookups", re.M)


def lookups(pid, count, engine):
    """(frame resolves, data scans, data lookups) of a profile of COUNT
    samples, from -v."""
    r = sdtest.run("profile", pid, "-c", str(count), "-r", "50", "-e", engine, "-v", "-q",
                   "--cpu-budget", "0")
    eq(r.rc, 0, r.err)
    m = LOOKUPS.search(r.err)
    ok(m, "no libdw lookups line in -v:\n" + r.err)
    return int(m.group(1)), int(m.group(2)), int(m.group(4))


def test_libdw_lookups_bounded_per_sample():
    with start("fx-condsyms", str(WAITERS), parked=WAITERS) as fx:
        # The lock view names each condvar: the dump shows the symbols.
        r = sdtest.run(fx.pid)
        eq(r.rc, 0, r.err)
        for i in (0, 7, WAITERS - 1):
            contains(r.out, "<g_cv_%02d>" % i)
        for engine in ("ptrace", "perf"):
            f10, s10, d10 = lookups(fx.pid, 10, engine)
            f40, s40, d40 = lookups(fx.pid, 40, engine)
            # Every sample asked for the waiters' condvar symbols...
            ok(d40 >= WAITERS * 40, "%s: %d data lookups in 40 samples" % (engine, d40))
            ok(d40 > d10, "%s: data lookups %d then %d" % (engine, d10, d40))
            # ...and libdw scanned the 20,000 symbols for none of them:
            # the per-module index decides, and each address is cached.
            ok(s10 <= 2 and s40 <= 2, "%s: data scans %d, %d" % (engine, s10, s40))
            # Frames: each distinct address once, whatever the samples.
            ok(f40 <= f10 + 2, "%s: frame resolves %d in 10 samples, %d in 40" %
               (engine, f10, f40))
            ok(f40 + s40 <= 40, "%s: %d libdw lookups in 40 samples" % (engine, f40 + s40))
        sdtest.assert_running(fx.pid)


def test_tiny_budget_slows_and_says_so():
    with start("fx-hot") as fx, tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "p.json")
        r = sdtest.run("profile", fx.pid, "--rate", "50", "--duration", "7s", "--cpu-budget",
                       "0.01", "-o", path, "-v")
        eq(r.rc, 0, r.err)
        contains(r.err, "over the budget of 0.01% (--cpu-budget)")
        sdtest.matches(r.err, r"^cpu budget: 0\.01% of a core \(--cpu-budget\); used [\d.]+% "
                       r"of a core after the first second .*sampling slowed [1-9]\d* times")
        with open(path) as f:
            doc = json.load(f)
        eq(doc["rate_asked"], 50.0)
        ok(doc["rate_achieved"] < 49, doc["rate_achieved"])
        eq(doc["duration_s"], doc["duration_us"] / 1e6)
        ok(abs(doc["rate_achieved"] - doc["samples"] / doc["duration_s"]) < 0.01, doc)
        ok(doc["samples"] < 50 * 7 * 0.98, doc["samples"])
        contains(doc["rate_note"], "CPU budget")
        # The summary line says the same.
        sdtest.matches(r.err, r"wrote .*p\.json \(json\): \d+ samples in [\d.]+ s \([\d.]+ Hz of "
                       r"50\.0 Hz asked: slowed to keep within the CPU budget")
        # The text header, from the same run saved as JSON and shown again
        # by a second, slowed run.
        r = sdtest.run("profile", fx.pid, "--rate", "50", "--duration", "7s", "--cpu-budget",
                       "0.01", "-q")
        eq(r.rc, 0, r.err)
        first = r.out.splitlines()[0]
        sdtest.matches(first, r"^Profile of \d+ \"fx-hot\": \d+ samples in [\d.]+ s "
                       r"\([\d.]+ Hz of 50\.0 Hz asked: slowed to keep within the CPU budget "
                       r"\(--cpu-budget\)\)")
        # Folded stacks have no header: the rate goes to stderr.
        r = sdtest.run("profile", fx.pid, "-c", "5", "-r", "50", "-f", "folded", "-q")
        eq(r.rc, 0, r.err)
        sdtest.matches(r.err, r"^stackdump: folded profile: 5 samples in [\d.]+ s \([\d.]+ Hz")




def test_format_follows_the_name():
    with start("fx-hot") as fx, tempfile.TemporaryDirectory() as d:
        def prof(name, *extra):
            path = os.path.join(d, name)
            r = sdtest.run("profile", fx.pid, "-c", "4", "-r", "50", "-o", path, *extra)
            eq(r.rc, 0, r.err)
            with open(path, "rb") as f:
                return r, f.read()

        for name in ("x.pprof", "x.pb", "x.pb.gz"):
            r, data = prof(name)
            contains(r.err, "(pprof): 4 samples")
            eq(data[:2], b"\x1f\x8b", name)  # gzip
            text = sdtest.decode_pprof(os.path.join(d, name))
            contains(text, "period: 20000000\n")
            sdtest.matches(text, r"^duration_nanos: \d+$")
            contains(text, '"hot_a"')
        r, data = prof("x.json")
        eq(json.loads(data)["kind"], "stackdump-profile")
        r, data = prof("x.svg")
        ok(ET.fromstring(data).tag.endswith("svg"))
        r, data = prof("x.folded")
        sdtest.matches(data.decode(), r"^\S.*;hot_a \d+$")
        r, data = prof("x.txt")
        ok(data.startswith(b"Profile of %d" % fx.pid), data[:80])
        # A name that says nothing: the default, said on stderr.
        r, data = prof("x.out")
        contains(r.err, "x.out: no format known by that name")
        contains(r.err, "writing top (-f chooses)")
        ok(data.startswith(b"Profile of"), data[:80])
        # -f agreeing with the name, or text for .txt, is fine.
        r, data = prof("y.pprof", "-f", "pprof")
        eq(data[:2], b"\x1f\x8b")
        r, data = prof("y.txt", "-f", "tree")
        # -f that the name contradicts: refused before sampling.
        for name, fmt in (("p.pprof", "json"), ("p.svg", "folded"), ("p.json", "top"),
                          ("p.pb.gz", "svg")):
            path = os.path.join(d, name)
            r = sdtest.run("profile", fx.pid, "-c", "2", "-f", fmt, "-o", path)
            eq(r.rc, 64, r)
            contains(r.err, "profile: -f %s does not match the output file %s" % (fmt, path))
            ok(not os.path.exists(path), "%s written" % path)
        sdtest.assert_running(fx.pid)


if __name__ == "__main__":
    sdtest.main(globals())
