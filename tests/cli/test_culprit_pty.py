#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The culprit on the first screen: at a terminal of 80 and of 200 columns,
# the plain dump and the lock view of a pool piling up behind one holder
# (fx-culprit-pool) and of an ABBA deadlock (fx-deadlock 2) say the
# verdict and name the holder before any stack; in a pipe the stacks keep
# their place and the findings come last; JSON carries them as
# "findings"; a deadlock exits 3 in the dump as in `locks`. The oracle is
# the fixtures' own knowledge: the thread names they give (from /proc).
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sdtest  # noqa: E402
from fixture import start  # noqa: E402
from ptyshell import PtyShell  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402

TMP = tempfile.mkdtemp(prefix="sd-culprit-")
SIZES = ((80, 24), (200, 50))
WORKERS = 50


def at_terminal(args, cols, rows):
    """(exit status, lines) of stackdump ARGS at a COLS x ROWS pty."""
    with PtyShell(args, env={"XDG_STATE_HOME": TMP}, cols=cols, rows=rows) as sh:
        rc = sh.wait_exit()
        text = sh.seen
    return rc, text.split("\n")


def first_screen(lines, rows):
    return "\n".join(lines[:rows - 1])


def no_wraps(lines, cols, what):
    long = [ln for ln in lines if len(ln) > cols]
    eq(long, [], "%s: %d line(s) longer than %d columns" % (what, len(long), cols))


def pool():
    return start("fx-culprit-pool", WORKERS, parked=WORKERS)


def syncer_of(fx):
    return fx.tids_by_name()["syncer"][0]


def test_dump_names_the_holder_first_at_a_terminal():
    with pool() as fx:
        syncer = syncer_of(fx)
        for cols, rows in SIZES:
            rc, lines = at_terminal([fx.pid], cols, rows)
            eq(rc, 0, "\n".join(lines[:40]))
            scr = first_screen(lines, rows)
            contains(scr, "Verdict: no deadlock")
            contains(scr, "mutex <g_journal_lock>, %d waiters" % WORKERS)
            contains(scr, '%d "syncer"' % syncer)
            contains(scr, "http-worker-0..%d" % (WORKERS - 1))
        sdtest.assert_running(fx.pid)


def test_dump_in_a_pipe_keeps_stacks_first_findings_last():
    with pool() as fx:
        syncer = syncer_of(fx)
        r = sdtest.run(fx.pid)
        eq(r.rc, 0, r.err)
        ok(r.out.startswith("PID %d (" % fx.pid), r.out[:200])
        tail = r.out[r.out.rindex("\nVerdict:"):]
        contains(tail, '%d "syncer"' % syncer)
        ok("Thread " not in tail, "a stack after the findings: %s" % tail)


def test_dump_json_has_findings():
    with pool() as fx:
        syncer = syncer_of(fx)
        workers = sorted(t for n, ts in fx.tids_by_name().items()
                         if n.startswith("http-worker-") for t in ts)
        eq(len(workers), WORKERS)
        r = sdtest.run("--format", "json", fx.pid)
        eq(r.rc, 0, r.err)
        f = r.json()["findings"]
        eq([x["kind"] for x in f], ["contended_lock"], f)
        eq(f[0]["holder"], syncer)
        eq(f[0]["waiters"], WORKERS)
        eq(sorted(f[0]["threads"]), sorted(workers + [syncer]))
        eq(f[0]["objects"][0]["symbol"], "g_journal_lock")
        eq(f[0]["objects"][0]["owner"], syncer)
        contains(f[0]["summary"], "g_journal_lock")
    with start("fx-idle") as idle:
        r = sdtest.run("--format", "json", idle.pid)
        eq(r.rc, 0, r.err)
        eq(r.json()["findings"], [])


def test_deadlock_is_said_first_and_exits_3():
    with start("fx-deadlock", 2, parked=2) as fx:
        names = fx.tids_by_name()
        c1, c2 = names["cycle-1"][0], names["cycle-2"][0]
        for cols, rows in SIZES:
            for args in ([fx.pid], ["locks", fx.pid]):
                rc, lines = at_terminal(args, cols, rows)
                eq(rc, 3, "%r: %s" % (args, "\n".join(lines[:30])))
                scr = first_screen(lines, rows)
                # The verdict is in the first lines, before any stack.
                head = "\n".join(lines[:3])
                contains(head, "Verdict: DEADLOCK (1 cycle)", "%r" % args)
                contains(scr, '%d "cycle-1" waits for mutex <g_lock_b> held by %d "cycle-2"'
                         % (c1, c2))
                contains(scr, '%d "cycle-2" waits for mutex <g_lock_a> held by %d "cycle-1"'
                         % (c2, c1))
        # In a pipe too: the status, and the findings at the end.
        r = sdtest.run(fx.pid)
        eq(r.rc, 3, r.err)
        ok(re.search(r"\nVerdict: DEADLOCK \(1 cycle\), 1 finding\n  deadlock: .*\n.*cycle-1",
                     r.out), r.out[-600:])
        r = sdtest.run("--format", "json", fx.pid)
        eq(r.rc, 3, r.err)
        f = r.json()["findings"]
        eq([x["kind"] for x in f], ["deadlock"], f)
        eq(sorted(f[0]["threads"]), sorted([c1, c2]))
        eq(sorted((o["symbol"], o["owner"]) for o in f[0]["objects"]),
           [("g_lock_a", c1), ("g_lock_b", c2)])
        sdtest.assert_running(fx.pid)


def test_locks_starts_with_the_verdict():
    with pool() as fx:
        syncer = syncer_of(fx)
        r = sdtest.run("locks", fx.pid)
        eq(r.rc, 0, r.err)
        lines = r.out.split("\n")
        contains(lines[1], "Verdict: no deadlock, 1 finding")
        contains("\n".join(lines[:6]), '%d "syncer"' % syncer)
    with start("fx-idle") as idle:
        r = sdtest.run("locks", idle.pid)
        contains(r.out.split("\n")[1], "Verdict: no deadlock, no lock waited for")


def test_top_shows_the_holder_first_with_either_engine():
    with pool() as fx:
        syncer = syncer_of(fx)
        for engine in ("perf", "ptrace"):
            for cols, rows in SIZES:
                with PtyShell(["top", fx.pid, "--refresh", "200ms", "--rate", "20",
                               "-e", engine], env={"XDG_STATE_HOME": TMP},
                              cols=cols, rows=rows) as sh:
                    sh.expect(r"stackdump top: %d" % fx.pid)
                    scr = sh.expect(r"(?s)stackdump top:.*?%OWN %TOTAL").group(0)
                    sh.send("q")
                    eq(sh.wait_exit(), 0, sh.seen[-2000:])
                what = "%s at %d columns: %s" % (engine, cols, scr)
                # No line of the screen, its header first, wraps.
                no_wraps(scr.rstrip("\r").split("\n"), cols, what)
                # A row too wide for the terminal goes on on the lines
                # below it (indented): one row each.
                lines = []
                for ln in scr.split("\n"):
                    if re.match(r"\s+\d+  ", ln):
                        lines.append(ln)
                    elif lines and re.match(r" {5,}\S", ln) and "..." not in ln:
                        lines[-1] += " " + ln.strip()
                    elif lines:
                        break
                ok(lines, what)
                # NOW is the program's own innermost frame, not libc's.
                contains(lines[0], "; in slow_disk_write", what)
                pool_row = [ln for ln in lines if "http-worker" in ln]
                ok(pool_row, what)
                contains(pool_row[0], "  handle_request (", what)
                ok("futex_wait" not in "\n".join(lines), what)
                # The holder heads the list, with what it holds.
                ok(re.match(r"\s+%d  syncer " % syncer, lines[0]), what)
                contains(lines[0], "holds mutex <g_journal_lock>, %d waiters" % WORKERS, what)
                # The pool parked alike is one row, not 50.
                eq(len([ln for ln in lines if "http-worker" in ln]), 1, what)
                contains(scr, "http-worker-0..%d" % (WORKERS - 1), what)
                contains(scr, "(%d threads alike)" % WORKERS, what)
        sdtest.assert_running(fx.pid)


def test_threads_has_a_holds_column():
    with pool() as fx:
        syncer = syncer_of(fx)
        r = sdtest.run("threads", fx.pid)
        eq(r.rc, 0, r.err)
        lines = r.out.split("\n")
        ok(re.match(r"\s*TID  NAME\s+S  WAIT\s+CPU%  WCHAN\s+HOLDS$", lines[1]), r.out[:300])
        row = [ln for ln in lines if re.match(r"\s*%d  syncer " % syncer, ln)]
        eq(len(row), 1, r.out)
        contains(row[0], "(%d waiting)" % WORKERS)
        others = [ln for ln in lines[2:] if "waiting)" in ln]
        eq(others, row, "only the holder holds")
    with start("fx-idle") as idle:
        r = sdtest.run("threads", idle.pid)
        ok("HOLDS" not in r.out, r.out[:300])


def test_no_line_wraps_at_80_columns():
    with pool() as fx, start("fx-deadlock", 2, parked=2) as dl:
        for args in ([fx.pid], ["locks", fx.pid], [dl.pid], ["locks", dl.pid]):
            rc, lines = at_terminal(args, 80, 24)
            ok(rc in (0, 3), "%r: %d" % (args, rc))
            no_wraps(lines, 80, "%r" % args)
            # Nothing lost: the holder's lock and frames are all there.
            text = "\n".join(lines)
            if args[-1] == fx.pid:
                contains(text, "<g_journal_lock>")
                contains(text, "journal_sync (fx-culprit-pool) at fx-culprit-pool.c:")
            else:
                contains(text, "lock_second (fx-deadlock) at fx-deadlock.c:")
        # Unchanged in a pipe: one line per frame, addresses kept.
        r = sdtest.run(fx.pid)
        ok(re.search(r"(?m)^  #\d+ +0x[0-9a-f]{16} handle_request \(fx-culprit-pool\) "
                     r"at fx-culprit-pool\.c:\d+$", r.out), r.out[:2000])


def test_pool_folds_at_a_terminal_from_4():
    with pool() as fx:
        syncer = syncer_of(fx)
        rc, lines = at_terminal([fx.pid], 200, 50)
        eq(rc, 0)
        text = "\n".join(lines)
        eq(text.count('"http-worker-'), 2, "the pool is one entry (verdict + group)")
        contains(text, '%d threads "http-worker-0..%d"' % (WORKERS, WORKERS - 1))
        # The holder comes before the pool, with its holds line.
        hold = text.index("- holds mutex")
        ok(text.index('Thread %d "syncer"' % syncer) < hold < text.index("%d threads" % WORKERS),
           text[:3000])
        eq(len(lines) < 60, True, "%d lines" % len(lines))
        # In a pipe, one stack per thread.
        r = sdtest.run(fx.pid)
        eq(r.out.count('"http-worker-'), WORKERS + 1)


def test_selection_keeps_holds_lines():
    with pool() as fx:
        syncer = syncer_of(fx)
        for sel in (["--name", "syncer"], ["--tid", str(syncer)]):
            r = sdtest.run(*sel, fx.pid)
            eq(r.rc, 0, r.err)
            contains(r.out, "1 of %d threads" % (WORKERS + 2))
            ok(re.search(r"\n  #\d+ .*\n +- holds mutex 0x[0-9a-f]+ <g_journal_lock>\n", r.out),
               r.out)
            doc = sdtest.run("--format", "json", *sel, fx.pid).json()
            holds = doc["threads"][0]["holds"]
            eq([(h["kind"], h["symbol"]) for h in holds], [("mutex", "g_journal_lock")])
        sdtest.assert_running(fx.pid)


def test_recursion_is_one_line_in_text_every_frame_in_json():
    depth = 60
    with start("fx-culprit-recurse", depth, blocked=2) as fx:
        tid = fx.tids_by_name()["recurser"][0]
        r = sdtest.run("--tid", tid, fx.pid)
        eq(r.rc, 0, r.err)
        m = re.search(r"(?m)^  #(\d+)-#(\d+) +0x[0-9a-f]+ beta_recurse \(fx-culprit-recurse\) "
                      r"at fx-culprit-recurse\.c:\d+, (\d+) times$", r.out)
        ok(m, r.out)
        first, last, times = int(m.group(1)), int(m.group(2)), int(m.group(3))
        eq((last - first + 1, times), (depth, depth))
        eq(r.out.count("beta_recurse"), 1)
        ok(re.search(r"(?m)^  #%d +0x[0-9a-f]+ recurse_main " % (last + 1), r.out), r.out)
        # --all-frames: each frame; JSON: every frame, always.
        r = sdtest.run("--all-frames", "--tid", tid, fx.pid)
        eq(r.out.count("beta_recurse"), depth)
        doc = sdtest.run("--format", "json", "--tid", tid, fx.pid).json()
        eq([f["function"] for f in doc["threads"][0]["frames"]].count("beta_recurse"), depth)
        for cols, rows in SIZES:
            rc, lines = at_terminal(["--tid", tid, fx.pid], cols, rows)
            contains(first_screen(lines, rows), "%d times" % depth)
            no_wraps(lines, cols, "recursion at %d" % cols)


def test_a_reader_that_stops_early_ends_it_quietly():
    # 200 workers: far more text than a pipe holds, so the write after
    # head has gone fails (EPIPE).
    with start("fx-culprit-pool", 200, parked=200) as fx:
        p = subprocess.Popen([sdtest.binary(), str(fx.pid)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        first = p.stdout.readline()
        p.stdout.close()
        err = p.stderr.read()
        rc = p.wait()
        ok(first.startswith(b"PID %d (" % fx.pid), first)
        eq((rc, err), (0, b""))
        sdtest.assert_running(fx.pid)


def test_did_you_mean():
    with start("fx-idle") as fx:
        r = sdtest.run("lcoks", fx.pid)
        eq(r.rc, 64, r.err)
        contains(r.err, "did you mean 'locks'?")
        r = sdtest.run("locks", "--cuont", "3", fx.pid)
        eq(r.rc, 64, r.err)
        contains(r.err, "unknown option --cuont (did you mean --count? see 'stackdump locks --help')")
        r = sdtest.run("-c", "lcoks", fx.pid)
        contains(r.err, "unknown command: lcoks (did you mean 'locks'?)")
        # Nothing close: no guess.
        r = sdtest.run("-c", "zzzzzz", fx.pid)
        contains(r.err, "unknown command: zzzzzz (try 'help')")


def svg_functions(path):
    import xml.etree.ElementTree as ET
    ns = "{http://www.w3.org/2000/svg}"
    return {g.find(ns + "title").text.split(" (")[0]
            for g in ET.parse(path).getroot().iter(ns + "g")
            if (g.get("class") or "").split()[:1] == ["f"]}


def test_flame_graph_keeps_the_holder_when_idle_is_hidden():
    # fx-pool's flusher holds g_pool_lock while it sleeps (an idle-looking
    # wait); the http threads wait for it. Idle stacks are hidden by
    # default in an SVG: the holder's stays.
    d = tempfile.mkdtemp(prefix="sd-culprit-svg-")
    try:
        with start("fx-pool", 6, 2, parked=8) as fx:
            for engine in ("perf", "ptrace"):
                path = os.path.join(d, "%s.svg" % engine)
                r = sdtest.run("profile", fx.pid, "-c", "5", "-r", "20", "-e", engine,
                               "-f", "svg", "-o", path)
                eq(r.rc, 0, r.err)
                names = svg_functions(path)
                ok("flush_locked" in names and "flusher_main" in names,
                   "%s: the holder's stack is missing: %s" % (engine, sorted(names)))
                ok("worker_main" not in names, "%s: idle workers shown" % engine)
    finally:
        shutil.rmtree(d, True)


def test_report_names_the_holder_on_its_first_screen():
    d = tempfile.mkdtemp(prefix="sd-culprit-rec-")
    try:
        with pool() as fx:
            syncer = syncer_of(fx)
            rec = os.path.join(d, "rec")
            r = sdtest.run("record", fx.pid, "--out", rec, "--every", "200ms", "--count", "4",
                           "-q")
            eq(r.rc, 0, r.err)
        for cols, rows in SIZES:
            rc, lines = at_terminal(["report", rec], cols, rows)
            eq(rc, 0, "\n".join(lines[:20]))
            scr = first_screen(lines, rows)
            contains(scr, 'held by %d "syncer"' % syncer)
            contains(scr, '%d threads: "http-worker-0..%d"' % (WORKERS, WORKERS - 1))
            no_wraps(lines, cols, "report at %d" % cols)
        # The pool is folded everywhere in the text: the stuck threads and
        # the timeline are one entry each, not one per thread.
        r = sdtest.run("report", rec)
        eq(r.rc, 0, r.err)
        contains(r.out, '%d threads "http-worker-0..%d"' % (WORKERS, WORKERS - 1))
        contains(r.out, "(%d threads alike)" % WORKERS)
        ok(r.out.count("handle_request") <= 3, "the workers' stack repeats")
        ok(r.out.count("\n") < 200, "%d lines" % r.out.count("\n"))
        contains(r.out, "holds what others wait for")
        # JSON keeps every thread.
        doc = sdtest.run("report", "--format", "json", rec).json()
        stuck = [f for f in doc["findings"] if f["kind"] == "stuck"]
        eq(len(stuck), 1, doc["findings"])
        eq(len(stuck[0]["tids"]), WORKERS)
    finally:
        shutil.rmtree(d, True)


def test_locks_count_folds_the_parked_pool():
    with pool() as fx:
        syncer = syncer_of(fx)
        r = sdtest.run("locks", "--count", "3", "--interval", "100ms", fx.pid)
        eq(r.rc, 0, r.err)
        tail = r.out[r.out.index("Parked on the same lock in all 3 snapshots"):]
        ok(re.search(r'\n  %d threads "http-worker-0\.\.%d", TIDs [\d.,]+ waiting for mutex '
                     r'0x[0-9a-f]+ <g_journal_lock> held by %d "syncer": at least [\d.]+ s, '
                     r'none moved\n' % (WORKERS, WORKERS - 1, syncer), tail), tail)
        eq(tail.count("http-worker-"), 1, tail)
        doc = sdtest.run("locks", "--count", "3", "--interval", "100ms", "--format", "json",
                         fx.pid).json()
        eq(len([p for p in doc["parked"] if p["name"].startswith("http-worker-")]), WORKERS)


def test_verbose_pause_breakdown_adds_up():
    with pool() as fx:
        for _ in range(3):
            r = sdtest.run("-v", fx.pid)
            eq(r.rc, 0, r.err)
            paused = float(re.search(r"(?m)^PID \d+ .*, paused ([\d.]+) ms", r.out).group(1))
            line = re.search(r"(?m)^  pause: (.*)$", r.out).group(1)
            parts = [float(x) for x in re.findall(r"([\d.]+) ms", line)]
            ok(sum(parts) >= paused - 0.05,
               "the breakdown (%s) does not add up to the pause %.2f ms" % (line, paused))


def test_diff_says_what_is_within_noise():
    d = tempfile.mkdtemp(prefix="sd-culprit-diff-")
    try:
        a, b = os.path.join(d, "a.folded"), os.path.join(d, "b.folded")
        # 100 samples each: +3 points of 50% is well within the noise of
        # such counts; 10% to 40% is not.
        with open(a, "w") as f:
            f.write("main;work;hot 50\nmain;work;cold 40\nmain;rare 10\n")
        with open(b, "w") as f:
            f.write("main;work;hot 53\nmain;work;cold 7\nmain;rare 40\n")
        r = sdtest.run("diff", a, b)
        eq(r.rc, 0, r.err)
        grew, rest = r.out.split("Stacks that shrank:")
        shrank, noise = rest.split("Within sampling noise")
        ok(re.search(r"(?m)^\s+\+30\.0\s+10\.0% ->\s+40\.0%\s+rare < main$", grew), r.out)
        ok(re.search(r"(?m)^\s+-33\.0\s+40\.0% ->\s+7\.0%\s+cold < work < main$", shrank), r.out)
        ok("hot" not in grew and "hot" not in shrank, r.out)
        contains(noise, "(a 95% interval of the counts): 1 stack")
        ok(re.search(r"(?m)^\s+\+3\.0\s+50\.0% ->\s+53\.0%\s+hot < work < main$", noise), r.out)
        fn = r.out[r.out.index("Self time by function:"):]
        ok(re.search(r"(?m)^\s+\+3\.0\s+50\.0% ->\s+53\.0%\s+hot  \(within noise\)$", fn), fn)
        # The significant ones first.
        ok(fn.index("cold") < fn.index("hot"), fn)
    finally:
        shutil.rmtree(d, True)


GDB_LIVE = r"""
import gdb
addr = int(gdb.parse_and_eval("&g_journal_lock"))
for th in gdb.selected_inferior().threads():
    if th.ptid[1] != %d:
        continue
    th.switch()
    f, i = gdb.newest_frame(), 0
    while f is not None:
        live = False
        for r in ("rbx", "rbp", "r12", "r13", "r14", "r15"):
            try:
                live |= (int(f.read_register(r)) & (2**64 - 1)) == addr
            except gdb.error:
                pass
        print("FRAME %%d %%s %%d" %% (i, f.name(), live))
        f, i = f.older(), i + 1
"""


def gdb_live_frames(pid, tid):
    """[(function, the address of g_journal_lock is in one of its
    callee-saved registers)] of thread TID, innermost first, from gdb."""
    gdb = sdtest.tool("gdb", "gdb")
    script = os.path.join(TMP, "live.py")
    with open(script, "w") as fh:
        fh.write(GDB_LIVE % tid)
    p = subprocess.run([gdb, "-q", "-nx", "-batch", "-p", str(pid), "-ex", "source " + script],
                       capture_output=True, text=True, timeout=300)
    out = [(m.group(1), m.group(2) == "1")
           for m in re.finditer(r"(?m)^FRAME \d+ (\S+) ([01])$", p.stdout)]
    ok(out, "gdb listed no frame of %d: %s" % (tid, p.stderr[-2000:]))
    return out


def test_holds_sits_under_the_frame_that_took_the_lock():
    # journal_sync loads &g_journal_lock into a callee-saved register,
    # locks, then calls slow_disk_write, which saves that register in its
    # own frame: the reference found there is journal_sync's, and the
    # lock was taken there. gdb's frames and their registers are the
    # oracle: the outermost of the consecutive frames that see the address.
    with pool() as fx:
        syncer = syncer_of(fx)
        frames = gdb_live_frames(fx.pid, syncer)
        live = [i for i, (_, v) in enumerate(frames) if v]
        ok(live, "gdb: no frame of the syncer sees the lock: %r" % frames)
        eq(live, list(range(live[0], live[-1] + 1)), "one run of frames: %r" % frames)
        taker = frames[live[-1]][0]
        eq(taker, "journal_sync", frames)
        for args in (["--all-frames", "--full-names", fx.pid], ["--tid", str(syncer), fx.pid]):
            r = sdtest.run(*args)
            eq(r.rc, 0, r.err)
            block = r.out[r.out.index('Thread %d "syncer"' % syncer):]
            block = block[:block.index("\n\n")] if "\n\n" in block else block
            m = re.search(r"(?m)^  #\d+(?:-#\d+)? .*?(\S+) \(fx-culprit-pool\).*\n"
                          r"(?:\s+at .*\n)?\s+- holds mutex 0x[0-9a-f]+ <g_journal_lock>", block)
            ok(m, "%r: no holds line: %s" % (args, block))
            eq(m.group(1), taker, "%r: %s" % (args, block))
        # JSON names the same frame.
        doc = sdtest.run("--format", "json", fx.pid).json()
        th = [t for t in doc["threads"] if t["tid"] == syncer][0]
        eq(len(th["holds"]), 1, th["holds"])
        eq(th["frames"][th["holds"][0]["frame"]]["function"], taker, th["holds"])


def test_runtime_frames_fold_program_frames_stay():
    with start("fx-rust", blocked=4) as fx:
        r = sdtest.run(fx.pid)
        eq(r.rc, 0, r.err)
        folded = re.findall(r"(?m)^  #(\d+)-#(\d+) \.\.\. (\d+) frames of ([\w:, .]+) "
                            r"\(--all-frames shows them\)$", r.out)
        ok(folded, r.out[:3000])
        for a, b, n, _ in folded:
            eq(int(b) - int(a) + 1, int(n))
        # The program's own frames are all there, and the innermost std
        # frames that say what the thread waits in.
        for fn in ("fx_rust::workers::park_inner", "fx_rust::workers::park_outer",
                   "fx_rust::parker_main", "fx_rust::main", "std::thread::functions::park"):
            contains(r.out, " %s " % fn)
        ok("__rust_begin_short_backtrace" not in r.out, "a std run was not folded")
        full = sdtest.run("--all-frames", fx.pid)
        contains(full.out, "__rust_begin_short_backtrace")
        ok(" frames of " not in full.out, "--all-frames folded something")
        # JSON: every frame.
        doc = sdtest.run("--format", "json", fx.pid).json()
        fns = [f["function"] or "" for t in doc["threads"] for f in t["frames"]]
        ok(any("__rust_begin_short_backtrace" in f for f in fns), "JSON lost frames")
        njson = sum(len(t["frames"]) for t in doc["threads"])
        ntext = len(re.findall(r"(?m)^  #\d+ ", full.out))
        eq(ntext, njson, "--all-frames shows every frame JSON has")


PERF_LINE = re.compile(r"(?m)^perf: \d+ task-clock and \d+ context-switch samples, (\d+) lost "
                       r"\((\d+) thread stacks counted again for want of one\)")


def test_samples_lost_said_only_when_the_profile_lost_some():
    # A one-thread CPU burner sampled 200 times with the perf engine: the
    # kernel may drop some of its samples (the task clock samples 4 times
    # a tick), which costs the profile nothing unless a tick went without
    # one. The summary says "lost" only then, with both counts; -v always
    # gives them.
    with start("fx-busy") as fx:
        for _ in range(3):
            r = sdtest.run("profile", fx.pid, "-c", "200", "-r", "99", "-e", "perf", "-v")
            eq(r.rc, 0, r.err)
            m = PERF_LINE.search(r.err)
            ok(m, r.err[-1500:])
            lost, stale = int(m.group(1)), int(m.group(2))
            ok(stale == 0 or lost > 0, "stacks counted again without a drop: %s" % m.group(0))
            head = r.out.split("\n\n")[0]
            contains(head, ": 200 samples in ")
            if stale:
                contains(head, "; %d thread stack%s counted again from an earlier tick for "
                         "want of a sample (%d lost by the kernel: ring buffer full)"
                         % (stale, "" if stale == 1 else "s", lost))
            else:
                ok("lost" not in head, "%d dropped, none missed, yet: %s" % (lost, head))
        doc = sdtest.run("profile", fx.pid, "-c", "20", "-e", "perf", "-f", "json").json()
        ok("lost_samples" in doc and "stale_stacks" in doc, sorted(doc))
        sdtest.assert_running(fx.pid)


PAUSE_LINE = re.compile(r"(?m)^  pause (\d+\.\d\d) ms: (?:the freeze (\d+\.\d\d) ms \(seize "
                        r"(\d+\.\d\d), stop (\d+\.\d\d), memory copy (\d+\.\d\d), detach "
                        r"(\d+\.\d\d)\)|no freeze \(no thread was running\))(?:, then stops for "
                        r"registers or retries of single threads, the longest (\d+\.\d\d) ms"
                        r"|, then retries of single threads, the longest (\d+\.\d\d) ms)?$")


def test_verbose_pause_breakdown_adds_up():
    # fx-busy has a thread on a CPU (frozen), fx-idle none (all read
    # asleep, some stopped once for registers). The freeze's phases add up
    # to the freeze, and the pause is the longest of the freeze and the
    # later stops, as the header says.
    for name in ("fx-busy", "fx-idle"):
        with start(name) as fx:
            for _ in range(3):
                r = sdtest.run("-v", fx.pid)
                eq(r.rc, 0, r.err)
                head = re.search(r"(?m)^PID \d+ \(.*?\) \d+ threads.*, paused (\d+\.\d\d) ms",
                                 r.out)
                ok(head, r.out[:300])
                m = PAUSE_LINE.search(r.out)
                ok(m, "%s: %s" % (name, r.out[:600]))
                pause = float(m.group(1))
                eq(m.group(1), head.group(1), "%s: the header and -v disagree" % name)
                freeze = float(m.group(2)) if m.group(2) else 0.0
                if m.group(2):
                    parts = sum(float(m.group(i)) for i in (3, 4, 5, 6))
                    ok(abs(parts - freeze) <= 0.025, "%s: %s" % (name, m.group(0)))
                later = float(m.group(7) or m.group(8) or 0)
                eq("%.2f" % max(freeze, later), m.group(1), "%s: %s" % (name, m.group(0)))


if __name__ == "__main__":
    sdtest.main(globals())
