# SPDX-License-Identifier: MIT
# Goroutines of a Go program, against the Go runtime itself as the oracle:
# fx-goroutines writes runtime.Stack(buf, true) on request (after a GC,
# which stamps the waiting goroutines' waitsince) and the dump must agree
# goroutine by goroutine: ids, statuses and wait reasons, function
# sequences with file:line (filtered by the rule the runtime's traceback
# prints frames by), created by. Built with Debian 12's Go 1.19 and with
# Go 1.24. Also: the text form, grouping, --threads, a layout the reader
# does not know (a field renamed in the DWARF) and a binary without DWARF.
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
from fixture import available, path_of, start  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402

POOL = 100
LOC = re.compile(r"^\t(\S+):(\d+)")


def need(name):
    # CI builds both (.ci/deps installs golang-go and unpacks Go 1.24): a
    # fixture that was not built is a failure, not a skip.
    ok(available(name), "%s was not built (is its Go toolchain installed?)" % name)


def oracle(fx):
    """The runtime's own traceback of every goroutine, written by the
    fixture on request."""
    fx.proc.stdin.write(b"stack\n")
    fx.proc.stdin.flush()
    buf = b""
    fd = fx.proc.stdout.fileno()
    while b"\nend-of-stack\n" not in buf:
        chunk = os.read(fd, 65536)
        ok(chunk, "the fixture closed its stdout: %s" % fx.stderr())
        buf += chunk
    return buf.decode().split("\nend-of-stack\n")[0]


def parse_traceback(text):
    """{id: {"state", "minutes", "locked", "frames": [(fn, file, line)],
    "created": (fn, file, line) or None, "parent": id or None}}"""
    gs = {}
    for block in text.strip("\n").split("\n\n"):
        lines = block.split("\n")
        m = re.match(r"goroutine (\d+)(?: gp=\S+ m=\S+(?: mp=\S+)?)? \[([^\]]*)\]:$", lines[0])
        ok(m, "not a goroutine header: %r" % lines[0])
        parts = m.group(2).split(", ")
        g = {"state": parts[0], "minutes": None, "locked": "locked to thread" in parts,
             "frames": [], "created": None, "parent": None}
        for p in parts[1:]:
            if p.endswith(" minutes"):
                g["minutes"] = int(p.split()[0])
        i = 1
        while i < len(lines):
            line = lines[i]
            loc = LOC.match(lines[i + 1]) if i + 1 < len(lines) else None
            if line.startswith("created by "):
                fn, _, parent = line[len("created by "):].partition(" in goroutine ")
                g["created"] = (fn, loc.group(1), int(loc.group(2)))
                g["parent"] = int(parent) if parent else None
                i += 2
                continue
            ok(loc, "frame without a location in %r" % block)
            g["frames"].append((line[:line.rindex("(")], loc.group(1), int(loc.group(2))))
            i += 2
        gs[int(m.group(1))] = g
    return gs


def shown_by_go(fn):
    """runtime.Stack's rule for a frame (showfuncinfo at traceback level 1):
    a function of a package, not the runtime's unexported ones."""
    if "." not in fn:
        return False
    return not fn.startswith("runtime.") or fn[len("runtime."):][:1].isupper()


def ours_as_go_prints(g):
    """Our frames of G the way runtime.Stack would print them: its rule,
    and without the wrapper the compiler makes for a go statement with
    arguments (main.main.func1, main.main.gowrap1: marked a wrapper in the
    runtime's tables, which DWARF does not carry), the outermost frame."""
    frames = [(f["function"], f["file"], f["line"]) for f in g["frames"]
              if f["function"] and shown_by_go(f["function"])]
    creator = g["created_by"]["function"] if g["created_by"] else None
    if frames and creator and re.fullmatch(re.escape(creator) + r"\.(func|gowrap)\d+",
                                           frames[-1][0]):
        frames.pop()
    return frames


def status_text(g):
    return g["wait_reason"] if g["status"] == "waiting" and g["wait_reason"] else g["status"]


def compare_with_runtime(name, version, pool=POOL, *mode):
    need(name)
    t0 = time.monotonic()
    with start(name, pool, *mode, stdin=True) as fx:
        want = parse_traceback(oracle(fx))
        r = sdtest.run("--format", "json", fx.pid)
        eq(r.rc, 0, r.err)
        sdtest.assert_running(fx.pid)
        elapsed = time.monotonic() - t0
        tids = {int(t) for t in os.listdir("/proc/%d/task" % fx.pid)}
    doc = r.json()
    ok(doc["go"]["version"].startswith(version), doc["go"])
    eq(doc["go"]["note"], None)
    ours = {g["id"]: g for g in doc["goroutines"]}
    eq(len(ours), len(doc["goroutines"]), "ids are unique")
    # The goroutine that wrote the oracle ran runtime.Stack; in ours it
    # reads its next command. Every other one is the same goroutine.
    writer = [i for i, g in want.items() if g["state"] == "running" and
              any(f[0] == "main.main" for f in g["frames"])]
    eq(len(writer), 1, want.keys())
    matched = 0
    for gid, w in sorted(want.items()):
        ok(gid in ours, "goroutine %d of the runtime is missing: %r" % (gid, w))
        g = ours[gid]
        if gid == writer[0]:
            eq([f for f in ours_as_go_prints(g) if f[0] == "main.main"][:1] != [], True)
            continue
        frames = ours_as_go_prints(g)
        if any(f[0] == "main.spin" for f in w["frames"]):
            # It never parks: running on its thread, or runnable when the
            # scheduler preempted it; in the oracle, stopped by its stop
            # of the world. The same function, the same file.
            ok(g["status"] in ("running", "runnable", "preempted"), g["status"])
            if not frames:
                # Scheduled again after the freeze, on a thread not frozen
                # on its stack: said, not guessed. A preempted one (its
                # saved registers in runtime.asyncPreempt's callees) has
                # its frames (test_preempted_goroutines_as_the_runtime).
                eq(g["status"], "running", g)
                contains(g["unwind_stop"] or "", "stack unavailable")
            else:
                eq([(f[0], f[1]) for f in frames][:1], [(f[0], f[1]) for f in w["frames"]][:1])
        else:
            eq(status_text(g), w["state"], "goroutine %d" % gid)
            eq(frames, w["frames"], "goroutine %d" % gid)
            if g["status"] == "waiting":
                # waitsince was stamped by the GC: at least this long.
                ok(g["wait_seconds"] is not None and 0 <= g["wait_seconds"] <= elapsed + 1,
                   "goroutine %d waited %r (the test ran %.1f s)" % (gid, g["wait_seconds"],
                                                                     elapsed))
        eq(g["locked"], w["locked"], "goroutine %d" % gid)
        if w["created"]:
            cb = g["created_by"]
            ok(cb, "goroutine %d has no creator" % gid)
            eq((cb["function"], cb["file"], cb["line"]), w["created"], "goroutine %d" % gid)
        eq(g["parent"], w["parent"], "goroutine %d" % gid)
        eq(g["labels"], {})  # none set (test_golocks.py reads some)
        matched += 1
    # Ours has the runtime's own goroutines too (runtime.Stack leaves them
    # out): none of them shows a frame the runtime would print.
    for gid in set(ours) - set(want):
        eq(ours_as_go_prints(ours[gid]), [], "goroutine %d is not the runtime's" % gid)
    # The one in read(2) is in a system call on one of the fixture's threads.
    (reader,) = [g for g in ours.values()
                 if any(f["function"] == "main.readPipe" for f in g["frames"])]
    eq(reader["status"], "syscall")
    ok(reader["thread"] in tids, reader)
    ok(any(t["tid"] == reader["thread"] for t in doc["threads"]), reader)
    eq(sum(1 for g in ours.values() if any(f["function"] == "main.worker" for f in g["frames"])),
       pool)
    ok(matched >= pool + 8, "matched %d" % matched)
    if mode:
        # The pool's stacks differ in depth, goroutine by goroutine.
        depths = {sum(1 for f in ours_as_go_prints(g) if f[0] == "main.climb")
                  for g in ours.values()}
        ok({1, 2, 3, 4, 5} <= depths, depths)
    print("%s: %d goroutines of the runtime's traceback matched, %d of the runtime's own "
          "beside them" % (name, matched, len(set(ours) - set(want))))


def test_goroutines_match_the_runtime_go119():
    compare_with_runtime("fx-goroutines", "go1.19")


def test_goroutines_match_the_runtime_go124():
    compare_with_runtime("fx-goroutines-go124", "go1.24")


# goroutines_read takes the descriptors, the stacks and the descriptors
# again of 512 goroutines in one read each (GO_BATCH in goroutines.c): a
# pool of 1,300 workers whose neighbours' stacks differ in depth spans
# three batches, the last one partly filled, and a goroutine given another
# one's stack or descriptor, or one left out at a boundary, fails the
# comparison with the runtime's own traceback.
def test_goroutines_match_the_runtime_across_batches():
    compare_with_runtime("fx-goroutines", "go1.19", 1300, "varied")


def test_goroutines_match_the_runtime_across_batches_go124():
    compare_with_runtime("fx-goroutines-go124", "go1.24", 1300, "varied")


def parse_delve(text):
    """{id: [(fn, file, line)]} from delve's `goroutines -t`."""
    gs, cur = {}, None
    lines = text.split("\n")
    for i, line in enumerate(lines):
        # The first one follows the prompt: "(dlv)   Goroutine 1 - ...".
        m = re.match(r"^(?:\(dlv\))?\s*\*?\s*Goroutine (\d+) - ", line)
        if m:
            cur = gs.setdefault(int(m.group(1)), [])
            continue
        m = re.match(r"^\s+\d+\s+0x[0-9a-f]+ in (\S+)$", line)
        if m and cur is not None:
            at = re.match(r"^\s+at (\S+):(\d+)$", lines[i + 1])
            ok(at, "no location after %r" % line)
            cur.append((m.group(1), at.group(1), int(at.group(2))))
    return gs


def test_goroutines_match_delve_go119():
    """delve (Debian 12's 1.20, which knows Go 1.19) attached after our
    dump, `goroutines -t`: the same goroutines with the same frames. delve
    names a parked goroutine's first frame at its saved pc (runtime.gopark
    a line below Go's own, which looks up pc - 1), and a goroutine in a
    system call from its thread's registers (from the syscall wrapper down,
    where Go's traceback starts at syscall.Syscall, at the line where it
    entered the call): ours is then the end of delve's."""
    need("fx-goroutines")
    dlv = sdtest.tool("dlv", "delve")
    empty = tempfile.mkdtemp()  # delve shortens the paths below its cwd
    with start("fx-goroutines", POOL, stdin=True) as fx:
        r = sdtest.run("--format", "json", fx.pid)
        eq(r.rc, 0, r.err)
        p = subprocess.run([dlv, "attach", str(fx.pid), "--allow-non-terminal-interactive=true"],
                           input="goroutines -t 200\nquit -c\n", capture_output=True, text=True,
                           timeout=300, cwd=empty)
        os.rmdir(empty)
        sdtest.assert_running(fx.pid)
    want = parse_delve(p.stdout)
    ok(len(want) >= POOL + 8, p.stdout[:3000] + p.stderr[:2000])
    ours = {g["id"]: g for g in r.json()["goroutines"]}
    eq(sorted(ours), sorted(want))
    matched = 0
    for gid, w in want.items():
        g = ours[gid]
        mine = [(f["function"], f["file"], f["line"]) for f in g["frames"]]
        if g["status"] in ("running", "runnable", "preempted"):
            eq([f[0] for f in mine][:1], [f[0] for f in w][-len(mine):][:1], "goroutine %d" % gid)
            continue
        if g["status"] == "syscall":
            # The same frames; the first one's line differs: ours is where
            # it entered the system call (entersyscall), as Go prints it,
            # delve's where its thread is now.
            theirs = w[len(w) - len(mine):]
            eq([f[0] for f in mine], [f[0] for f in theirs], "goroutine %d" % gid)
            eq(mine[1:], theirs[1:], "goroutine %d" % gid)
        else:
            eq([f[0] for f in mine], [f[0] for f in w], "goroutine %d" % gid)
            eq(mine[1:], w[1:], "goroutine %d" % gid)
        matched += 1
    ok(matched >= POOL + 8, "matched %d" % matched)
    print("fx-goroutines: %d goroutines of delve's matched" % matched)


def test_text_form_grouping_and_thread_view():
    need("fx-goroutines")
    with start("fx-goroutines", POOL, stdin=True) as fx:
        plain = sdtest.run(fx.pid)
        grouped = sdtest.run("-g", fx.pid)
        threads = sdtest.run("--threads", fx.pid)
        sdtest.assert_running(fx.pid)
    eq(plain.rc, 0, plain.err)
    # Go's own header, then the frames as Go prints them, then creator.
    sdtest.matches(plain.out, r"^PID \d+ \(fx-goroutines\) Go go1\.\d+\S*, \d+ goroutines$")
    # ... with what it waits on (test_golocks.py checks the objects).
    sdtest.matches(plain.out, r"^goroutine \d+ \[chan send, on chan 0x[0-9a-f]+\]:\n(.+\n\t.+\n)*"
                              r"main\.sendForever"
                              r"\(\.\.\.\)\n\t\S+/fx-goroutines\.go:\d+ \+0x[0-9a-f]+\n")
    sdtest.matches(plain.out, r"^created by main\.main\n\t\S+/fx-goroutines\.go:\d+$")
    sdtest.matches(plain.out, r"^goroutine \d+ \[syscall, thread \d+\]:$")
    eq(len(re.findall(r"^goroutine \d+ \[chan receive, on chan 0x[0-9a-f]+\]:$", plain.out,
                      re.M)), POOL + 1)
    # The threads follow, each M with the goroutine it runs.
    sdtest.matches(plain.out, r"^Thread \d+ \"fx-goroutines\" .*\[goroutine \d+\]$")
    # Grouped: the pool is one entry with its count and ids.
    eq(grouped.rc, 0, grouped.err)
    sdtest.matches(grouped.out, r"^%d goroutines \[chan receive, on chan 0x[0-9a-f]+\]: \d+ \d+ "
                   % POOL)
    eq(len(re.findall(r"^goroutine \d+ \[chan receive, on chan 0x[0-9a-f]+\]:$", grouped.out,
                      re.M)), 1)
    # --threads: today's thread view, no goroutine.
    eq(threads.rc, 0, threads.err)
    ok(not re.search(r"^goroutine |\[goroutine ", threads.out, re.M), threads.out[:2000])
    sdtest.matches(threads.out, r"^PID \d+ \(fx-goroutines\) \d+ threads")


DEPTH = 40


def goroutine_block(text, gid):
    m = re.search(r"(?ms)^goroutine %d \[.*?(?=\n\n|\Z)" % gid, text)
    ok(m, "no goroutine %d in:\n%s" % (gid, text[:3000]))
    return m.group(0)


def test_text_folds_recursion_and_elides_type_arguments():
    # fx-gorecurse: a goroutine 41 frames deep in descend[int]. The text
    # shows the recursion once with its count, the name as Go prints it
    # (type arguments elided: "main.descend[...]"); --all-frames
    # --full-names shows every frame, and JSON keeps them all. The oracle:
    # runtime.Stack of the same goroutine.
    need("fx-gorecurse")
    with start("fx-gorecurse", DEPTH, stdin=True) as fx:
        go = parse_traceback(oracle(fx))
        plain = sdtest.run(fx.pid)
        full = sdtest.run("--all-frames", "--full-names", fx.pid)
        doc = sdtest.run("--format", "json", fx.pid).json()
        sdtest.assert_running(fx.pid)
    gid = [i for i, g in go.items() if g["state"] == "chan receive"]
    eq(len(gid), 1, go)
    gid = gid[0]
    theirs = [f[0] for f in go[gid]["frames"] if f[0].startswith("main.descend")]
    eq(len(theirs), DEPTH + 1, go[gid])
    eq(set(theirs), {"main.descend[...]"})
    eq(plain.rc, 0, plain.err)
    block = goroutine_block(plain.out, gid)
    lines = block.split("\n")
    eq(sum(1 for ln in lines if ln.startswith("main.descend")), 2, block)
    ok(all(ln == "main.descend[...](...)" for ln in lines if ln.startswith("main.descend")),
       block)
    m = re.search(r"(?m)^\.\.\.the frame above (\d+) more times, (\d+) in all "
                  r"\(--all-frames shows them\)$", block)
    ok(m, block)
    # The innermost descend (at the receive) plus the folded run.
    eq(1 + int(m.group(2)), len(theirs), block)
    eq(int(m.group(1)) + 1, int(m.group(2)))
    contains(block, "main.start(...)")
    # Everything with --all-frames --full-names: each frame, full names.
    fblock = goroutine_block(full.out, gid)
    mine = [ln for ln in fblock.split("\n") if ln.startswith("main.descend")]
    eq(len(mine), len(theirs), fblock)
    ok(all(ln.startswith("main.descend[") and "[...]" not in ln for ln in mine), mine)
    ok("more times" not in full.out and "frames of runtime" not in full.out, fblock)
    # JSON: every frame, the full name.
    g = [x for x in doc["goroutines"] if x["id"] == gid][0]
    fns = [f["function"] for f in g["frames"] if f["function"].startswith("main.descend")]
    eq(len(fns), len(theirs), fns)
    ok(all("[...]" not in f for f in fns), fns)


def copy_fixture(tmp, name, edit):
    """A copy of fixture NAME in TMP, its debug sections decompressed and
    EDIT (bytes -> bytes) applied to the file."""
    dst = os.path.join(tmp, name)
    objcopy = sdtest.tool("objcopy", "binutils")
    subprocess.run([objcopy, "--decompress-debug-sections", path_of(name), dst], check=True)
    with open(dst, "rb") as f:
        data = f.read()
    with open(dst, "wb") as f:
        f.write(edit(data))
    os.chmod(dst, 0o755)
    return dst


def dump_copy(path):
    with start(path, 4, stdin=True) as fx:
        text = sdtest.run(fx.pid)
        doc = sdtest.run("--format", "json", fx.pid)
        sdtest.assert_running(fx.pid)
    eq(text.rc, 0, text.err)
    eq(doc.rc, 0, doc.err)
    return text.out, doc.json()


def test_unknown_layout_is_named_and_threads_stay():
    need("fx-goroutines")
    tmp = tempfile.mkdtemp()
    try:
        # runtime.g's field waitsince renamed in the DWARF: a layout this
        # reader does not know. The name is a DW_FORM_string in the entry.
        def rename(data):
            ok(data.count(b"waitsince\0") >= 1, "no waitsince in the DWARF")
            return data.replace(b"waitsince\0", b"waitsinc_\0")
        path = copy_fixture(tmp, "fx-goroutines", rename)
        text, doc = dump_copy(path)
    finally:
        shutil.rmtree(tmp)
    note = doc["go"]["note"]
    ok(note and "waitsince" in note and "go1.19" in note, note)
    eq(doc["goroutines"], [])
    ok(len(doc["threads"]) >= 2 and all(t["frames"] for t in doc["threads"]), doc["threads"])
    contains(text, "note: goroutines not shown")
    contains(text, "waitsince")
    sdtest.matches(text, r"^Thread \d+ \"")


def test_binary_without_dwarf_says_what_it_cannot_show():
    need("fx-goroutines")
    tmp = tempfile.mkdtemp()
    try:
        path = os.path.join(tmp, "fx-goroutines")
        subprocess.run([sdtest.tool("objcopy", "binutils"), "--strip-debug",
                        path_of("fx-goroutines"), path], check=True)
        text, doc = dump_copy(path)
    finally:
        shutil.rmtree(tmp)
    note = doc["go"]["note"]
    ok(note and "no DWARF" in note and "threads are shown" in note, note)
    eq(doc["goroutines"], [])
    ok(len(doc["threads"]) >= 2, doc["threads"])
    contains(text, "goroutines cannot be listed")
    sdtest.matches(text, r"^Thread \d+ \"")


def test_stacks_that_move_while_read():
    """Goroutines that keep growing their stacks (copied by the runtime to a
    larger one) and parking, dumped again and again: each is shown whole
    (down to runtime.goexit) or says why not; never a crash or garbage."""
    need("fx-goroutines")
    whole = cut = retaken = 0
    with start("fx-goroutines", 4, "churn", stdin=True) as fx:
        for _ in range(15):
            r = sdtest.run("--format", "json", fx.pid)
            eq(r.rc, 0, r.err)
            for g in r.json()["goroutines"]:
                fns = [f["function"] for f in g["frames"]]
                if "main.churn" not in fns and not (g["unwind_stop"] and not fns):
                    continue
                retaken += g.get("retakes", 0)
                if fns and fns[-1] == "runtime.goexit":
                    # Whole: every frame a function of the program.
                    ok(all(f in ("main.deep", "main.churn", "runtime.goexit") or
                           f.startswith(("runtime.", "time.", "sync/atomic."))
                           for f in fns if f), fns)
                    whole += 1
                else:
                    ok(g["unwind_stop"], "goroutine %d ends early without a word: %r" %
                       (g["id"], fns))
                    cut += 1
        sdtest.assert_running(fx.pid)
    ok(whole >= 15, "whole %d, cut %d" % (whole, cut))
    print("churn: %d stacks whole, %d cut with a reason, %d retakes" % (whole, cut, retaken))


def test_other_programs_have_no_goroutines():
    with start("fx-idle") as fx:
        r = sdtest.run("--format", "json", fx.pid)
        t = sdtest.run(fx.pid)
    eq(r.rc, 0, r.err)
    doc = r.json()
    ok("goroutines" not in doc and "go" not in doc, list(doc))
    ok(not re.search(r"^goroutine |\[goroutine ", t.out, re.M), t.out)


def core_of(fx):
    """A core of FX by gdb's gcore (the process runs on)."""
    d = tempfile.mkdtemp(prefix="sd-gocore-")
    path = os.path.join(d, "go")
    p = subprocess.run(["gcore", "-o", path, str(fx.pid)], capture_output=True, text=True,
                       timeout=300)
    core = "%s.%d" % (path, fx.pid)
    ok(os.path.exists(core), "gcore wrote no core: %s" % p.stderr[-2000:])
    sdtest.assert_running(fx.pid)
    return core, d


def goroutines_from_core(name):
    # The same typed reader over the core's memory: every goroutine of the
    # live dump taken just before, with its status and frames (those that
    # run on may have moved: only their set is compared).
    need(name)
    with start(name, POOL, stdin=True) as fx:
        live = sdtest.run("--format", "json", fx.pid)
        eq(live.rc, 0, live.err)
        core, d = core_of(fx)
    try:
        r = sdtest.run("core", "--format", "json", core)
        eq(r.rc, 0, r.err)
        doc = r.json()
        eq(doc["go"]["note"], None, doc["go"])
        eq(doc["go"]["version"], live.json()["go"]["version"])
        ours = {g["id"]: g for g in doc["goroutines"]}
        want = {g["id"]: g for g in live.json()["goroutines"]}
        eq(sorted(ours), sorted(want), "goroutine ids")
        same = 0
        for gid, w in want.items():
            if w["status"] in ("running", "runnable", "syscall"):
                continue
            g = ours[gid]
            eq((g["status"], g["wait_reason"]), (w["status"], w["wait_reason"]), gid)
            eq([(f["function"], f["line"]) for f in g["frames"]],
               [(f["function"], f["line"]) for f in w["frames"]], gid)
            same += 1
        ok(same >= POOL, "only %d parked goroutines compared" % same)
        # --threads: the thread view only.
        r = sdtest.run("core", "--threads", "--format", "json", core)
        eq(r.rc, 0, r.err)
        ok(not r.json().get("goroutines"), "goroutines with --threads")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_goroutines_from_a_core():
    goroutines_from_core("fx-goroutines")


def test_goroutines_from_a_core_go124():
    goroutines_from_core("fx-goroutines-go124")

GO124 = "/var/cache/go124/root/usr/lib/go-1.24/bin/go"


def addr2line(path, addrs, version):
    """{addr: (file, line)} by Go's own tool of the binary's version (its
    line table as the Go toolchain reads it), for exact pcs."""
    gotool = GO124 if version == "go1.24" else shutil.which("go")
    ok(gotool and os.path.exists(gotool), "the go tool of %s is needed for addr2line" % version)
    env = dict(os.environ, GOTOOLCHAIN="local")
    if version == "go1.24":
        env["GOROOT"] = os.path.dirname(os.path.dirname(GO124))
    p = subprocess.run([gotool, "tool", "addr2line", path], capture_output=True, text=True,
                       input="".join("0x%x\n" % a for a in addrs), timeout=120, env=env)
    eq(p.returncode, 0, p.stderr)
    lines = p.stdout.splitlines()
    eq(len(lines), 2 * len(addrs), p.stdout)
    out = {}
    for i, a in enumerate(addrs):
        f, _, ln = lines[2 * i + 1].rpartition(":")
        out[a] = (f, int(ln))
    return out


def check_preempted(name, version):
    """fx-gospin: three goroutines spinning on one P, all but one stopped
    by asynchronous preemption at any instant. A stopped one's frames go
    on past runtime.asyncPreempt (whose caller's pc, pushed by the signal,
    follows no call) to main.spin at that exact pc: its line is the one
    Go's own addr2line gives for that pc, and its frames as Go prints them
    are runtime.Stack's (function and file; the line moves as it spins)."""
    need(name)
    seen = 0
    pcs = []
    with start(name, 3, stdin=True) as fx:
        want = parse_traceback(oracle(fx))
        spinners = sorted(i for i, w in want.items()
                          if any(f[0] == "main.spin" for f in w["frames"]))
        eq(len(spinners), 3, want)
        for attempt in range(40):
            r = sdtest.run("--format", "json", fx.pid)
            eq(r.rc, 0, r.err)
            doc = r.json()
            ok(doc["go"]["version"].startswith(version), doc["go"])
            gs = {g["id"]: g for g in doc["goroutines"]}
            for gid in spinners:
                g = gs[gid]
                if g["status"] == "running" and not g["frames"]:
                    contains(g["unwind_stop"] or "", "stack unavailable")
                    continue
                eq(g["unwind_stop"], None, g)
                fns = [f["function"] for f in g["frames"]]
                ok("main.spin" in fns, g)
                k = fns.index("main.spin")
                if g["status"] in ("runnable", "preempted"):
                    eq(fns[k - 1], "runtime.asyncPreempt", fns)
                    pcs.append((int(g["frames"][k]["addr"], 16), g["frames"][k]["file"],
                                g["frames"][k]["line"]))
                    seen += 1
                eq([f[:2] for f in ours_as_go_prints(g)],
                   [f[:2] for f in want[gid]["frames"]], "goroutine %d" % gid)
            if seen >= 12:
                break
        sdtest.assert_running(fx.pid)
    ok(seen >= 6, "only %d preempted spinners seen in 40 dumps" % seen)
    exact = addr2line(path_of(name), sorted({a for a, _, _ in pcs}), version)
    for a, f, line in pcs:
        eq((f, line), exact[a], "main.spin at 0x%x" % a)


def test_preempted_goroutines_as_the_runtime():
    check_preempted("fx-gospin", "go1.19")


def test_preempted_goroutines_as_the_runtime_go124():
    check_preempted("fx-gospin-go124", "go1.24")


if __name__ == "__main__":
    sdtest.main(globals())
