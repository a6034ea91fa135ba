# SPDX-License-Identifier: MIT
# Frames as gdb shows them, on every toolchain production binaries come
# from: fx-frames built with gcc, clang (DWARF 5), gcc split DWARF (.dwo
# files, and .dwp packages of DWARF 4 and 5 made by binutils' dwp and
# llvm-dwp), gcc LTO, gcc + dwz, and fx-frames-rs built with rustc -O -g; Go's fx-go against
# gdb and `go tool addr2line`. gdb is the oracle (eu-stack asks
# libdw the same questions we used to, so it fails where we failed): for
# every thread, the frames gdb places in the fixture's own source appear in
# our output with the same file:line, in the same order, inline frames
# included, under the same function.
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
from fixture import path_of, start  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402

CXX_SOURCES = {"fx-frames.cpp", "fx-frames-park.cpp", "fx-frames.h"}
RS_SOURCES = {"fx-frames-rs.rs"}

THREAD_RE = re.compile(r"^Thread \d+ \((?:.*\()?LWP (\d+)")
FRAME_RE = re.compile(r"^#(\d+)\s+(0x[0-9a-f]+ in )?(.+?) \(.* at (\S+):(\d+)$")


def gdb_threads(args, frame_re, frame_of):
    """Run gdb ARGS ending in "thread apply all bt": {tid: [FRAME_OF(match)
    for each line FRAME_RE matches]}."""
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    out, tid = {}, None
    for line in p.stdout.splitlines():
        m = THREAD_RE.match(line)
        if m:
            tid = int(m.group(1))
            out[tid] = []
            continue
        m = frame_re.match(line)
        if m and tid is not None:
            out[tid].append(frame_of(m))
    ok(out, "gdb showed no threads: %s" % p.stderr[-2000:])
    return out


def gdb_frames(pid, gdb_dir=None):
    """{tid: [(function, file basename, line, starts), ...]} from gdb,
    STARTS true on the innermost frame of the frames sharing one pc. With
    GDB_DIR, gdb reads the copy of the executable there and looks for its
    .dwo files there (its debug-file directory)."""
    args = ["gdb", "-batch", "-nx"]
    if gdb_dir:
        exe = os.path.join(gdb_dir, os.path.basename(os.readlink("/proc/%d/exe" % pid)))
        args += ["-iex", "set debug-file-directory %s:/usr/lib/debug" % gdb_dir, exe]
    # Below #0, a frame printed without its pc shares the pc of the frame
    # below (the frame below is inlined into it).
    return gdb_threads(args + ["-p", str(pid), "-ex", "thread apply all bt"], FRAME_RE,
                       lambda m: (m.group(3), os.path.basename(m.group(4)), int(m.group(5)),
                                  m.group(1) == "0" or bool(m.group(2))))


def strip_tail(name, open_ch, close_ch):
    """NAME without a balanced OPEN..CLOSE group at its end."""
    if not name.endswith(close_ch):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        if name[i] == close_ch:
            depth += 1
        elif name[i] == open_ch:
            depth -= 1
            if depth == 0:
                return name[:i]
    return name


def key(name):
    """The unqualified function name without parameters or template
    arguments: what gdb's and our spellings of a name must share."""
    n = name.strip()
    for suffix in (" const", " &&", " &"):
        if n.endswith(suffix):
            n = n[:-len(suffix)]
    if not n.endswith("operator()"):
        n = strip_tail(n, "(", ")")
    n = strip_tail(n.rstrip(), "<", ">").rstrip()
    depth, start_ = 0, 0
    for i, ch in enumerate(n):
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        elif ch == ":" and depth == 0 and n[i + 1:i + 2] == ":":
            start_ = i + 2
    n = n[start_:]
    return n.split(" ")[-1]


def ours(pid):
    r = sdtest.run("--format", "json", pid)
    eq(r.rc, 0, r)
    out = {}
    for t in r.json()["threads"]:
        fr = t["frames"]
        # A frame starts a group of frames sharing one pc unless the frame
        # below it is inlined into it.
        out[t["tid"]] = [(f["function"] or "", os.path.basename(f["file"] or ""),
                          f["line"] or 0, i == 0 or not fr[i - 1].get("inlined"))
                         for i, f in enumerate(fr)]
    return out


def compare_with_gdb(fixture, sources, blocked, workers, gdb_dir=None):
    """Dump FIXTURE with us, then with gdb; compare the frames in SOURCES."""
    with start(fixture, blocked=blocked) as fx:
        mine = ours(fx.pid)
        sdtest.assert_running(fx.pid)
        theirs = gdb_frames(fx.pid, gdb_dir)
        sdtest.assert_running(fx.pid)
        eq(sorted(mine), sorted(theirs), "thread sets differ")
        names = fx.tids_by_name()
        for tid in theirs:
            g = [f for f in theirs[tid] if f[1] in sources]
            m = [f for f in mine[tid] if f[1] in sources]
            eq([(f[1], f[2]) for f in m], [(f[1], f[2]) for f in g],
               "%s thread %d: file:line differ\nours: %r\ngdb:  %r" % (fixture, tid, m, g))
            eq([f[3] for f in m], [f[3] for f in g],
               "%s thread %d: inline chains differ\nours: %r\ngdb:  %r" % (fixture, tid, m, g))
            eq([key(f[0]) for f in m], [key(f[0]) for f in g],
               "%s thread %d: functions differ\nours: %r\ngdb:  %r" % (fixture, tid, m, g))
        # Not vacuous: every worker has frames of its own source in gdb's
        # view, at least one of them inlined.
        for w in workers:
            tid = names[w][0]
            g = [f for f in theirs[tid] if f[1] in sources]
            ok(len(g) >= 3 and not all(f[3] for f in g),
               "%s %s: gdb shows too little to compare: %r" % (fixture, w, theirs[tid]))
        return mine, names


def test_gcc():
    compare_with_gdb("fx-frames-gcc", CXX_SOURCES, 4, ("ledger", "lambda", "queue"))


def test_leaf_without_cfi():
    """A thread parked in a system call of assembly with no unwind
    information (glibc's clone3 is such code): its return address is at
    the stack pointer; gdb finds the callers, and so must we."""
    with start("fx-rawsys", blocked=2) as fx:
        mine = ours(fx.pid)
        sdtest.assert_running(fx.pid)
        theirs = gdb_stacks(fx.pid)
        tid = fx.tids_by_name()["rawsys"][0]
        g = [f[1] for f in theirs[tid]]
        eq(g[:3], ["raw_pause", "park_raw", "rawsys_main"], theirs[tid])
        # All the way out, as gdb goes.
        eq([f[0] for f in mine[tid]], g, "ours: %r" % mine[tid])
        ok(len(g) >= 5, "gdb went out to the thread's start: %r" % theirs[tid])


def test_clang_dwarf5():
    compare_with_gdb("fx-frames-clang", CXX_SOURCES, 4, ("ledger", "lambda", "queue"))


def test_split_dwarf():
    mine, names = compare_with_gdb("fx-frames-split", CXX_SOURCES, 4,
                                   ("ledger", "lambda", "queue"))
    # The functions come from the .dwo files: the skeleton has no names.
    fns = [f[0] for f in mine[names["queue"][0]]]
    ok(any("shop::detail::settle" in f for f in fns), fns)


def compare_dwp(fixture, gdb_reads_package):
    """FIXTURE's split units are in its package (FIXTURE.dwp) and nowhere
    else we look: compared with gdb reading the package, or, where gdb
    cannot (it crashes on DWARF 5 packages), with gdb reading the very .dwo
    files that were packed, set aside in FIXTURE.gdb/."""
    exe = path_of(fixture)
    ok(os.path.isfile(exe + ".dwp"), "%s.dwp is missing" % exe)
    for d in (os.path.dirname(exe), exe + ".build"):
        eq([f for f in os.listdir(d) if f.endswith(".dwo")], [],
           "%s: .dwo files beside the package's build: they, not the package, would be read" % d)
    gdb_dir = None if gdb_reads_package else exe + ".gdb"
    mine, names = compare_with_gdb(fixture, CXX_SOURCES, 4, ("ledger", "lambda", "queue"),
                                   gdb_dir)
    # The functions come from the package: the skeletons have no names.
    fns = [f[0] for f in mine[names["queue"][0]]]
    ok(any("shop::detail::settle" in f for f in fns), fns)


def test_dwp_gnu_dwarf4():
    """gcc -gdwarf-4 -gsplit-dwarf packed by binutils' dwp (index version 2,
    DW_AT_GNU_dwo_id, DW_FORM_GNU_addr_index, ranges in the executable's
    .debug_ranges from DW_AT_GNU_ranges_base)."""
    compare_dwp("fx-frames-dwp4", True)


def test_dwp_llvm_dwarf4():
    compare_dwp("fx-frames-dwp4-llvm", True)


def test_dwp_llvm_dwarf5():
    """gcc DWARF 5 packed by llvm-dwp (index version 5, dwo id in the unit
    header, DW_FORM_addrx, rnglistx in the package's .debug_rnglists.dwo)."""
    compare_dwp("fx-frames-dwp5", False)


def test_dwp_clang_dwarf5():
    compare_dwp("fx-frames-dwp5-clang", False)


def test_lto():
    mine, names = compare_with_gdb("fx-frames-lto", CXX_SOURCES, 4,
                                   ("ledger", "lambda", "queue"))
    # shop::audit lives in the other unit and is called once: LTO inlines
    # it into shop::Queue<long>::drain, its name comes through an abstract
    # origin in another unit.
    queue = mine[names["queue"][0]]
    i = [f[0] for f in queue].index("shop::audit(long)")
    ok(not queue[i + 1][3], "shop::audit is not inlined: %r" % queue)


def test_dwz():
    """dwz -m: names and types moved to an alt file, reached through
    DW_FORM_GNU_ref_alt from partial units."""
    mine, names = compare_with_gdb("fx-frames-dwz", CXX_SOURCES, 4,
                                   ("ledger", "lambda", "queue"))
    fns = [f[0] for f in mine[names["ledger"][0]]]
    ok(any("shop::Ledger::post<int>" in f for f in fns), fns)


def test_rust_release():
    mine, names = compare_with_gdb("fx-frames-rs", RS_SOURCES, 3, ("ledger", "closure"))
    fns = [f[0] for f in mine[names["closure"][0]]]
    for want in ("fx_frames_rs::main::{closure#1}::{closure#0}",
                 "fx_frames_rs::main::{closure#1}", "fx_frames_rs::shop::relay<u64>"):
        contains(fns, want)
    fns = [f[0] for f in mine[names["ledger"][0]]]
    contains(fns, "fx_frames_rs::shop::Ledger<u32>::post<u32, u32>")


def go_addr2line(binary, addrs):
    """[(function, file, line)] for ADDRS from `go tool addr2line`."""
    p = subprocess.run(["go", "tool", "addr2line", binary], capture_output=True, text=True,
                       input="".join("0x%x\n" % a for a in addrs), timeout=120)
    eq(p.returncode, 0, p.stderr)
    lines = p.stdout.splitlines()
    eq(len(lines), 2 * len(addrs), p.stdout)
    out = []
    for i in range(len(addrs)):
        f, _, ln = lines[2 * i + 1].rpartition(":")
        out.append((lines[2 * i], f, int(ln)))
    return out


def test_go_matches_go_addr2line():
    """Every frame in Go code has the function and file:line that `go tool
    addr2line` gives for its address (the outer function of an inline
    chain, the innermost file:line)."""
    binary = path_of("fx-go")
    with start("fx-go", blocked=2) as fx:
        r = sdtest.run("--format", "json", fx.pid)
        eq(r.rc, 0, r)
        sdtest.assert_running(fx.pid)
    groups, checked = [], 0
    for t in r.json()["threads"]:
        group = []
        for i, f in enumerate(t["frames"]):
            # The innermost frame's pc is where the thread is, not a
            # return address.
            f["exact"] = f.get("exact") or i == 0
            if f.get("module") != "fx-go":
                group = []
                continue
            group.append(f)
            if not f.get("inlined"):
                groups.append(group)
                group = []
    addrs = [int(g[0]["addr"], 16) - (0 if g[0].get("exact") else 1) for g in groups]
    for g, (fn, file, line) in zip(groups, go_addr2line(binary, addrs)):
        if file == "?":
            # cgo's C trampolines (crosscall_amd64): not Go code.
            continue
        eq(g[-1]["function"], fn, "function of %r" % g)
        eq((g[0]["file"], g[0]["line"]), (file, line), "file:line of %r" % g)
        checked += 1
    ok(checked >= 10, "only %d Go frames" % checked)
    fns = [f["function"] for t in r.json()["threads"] for f in t["frames"]]
    for want in ("main.waitByte", "main.reader", "runtime.goexit", "runtime.futexsleep",
                 "syscall.Read"):
        contains(fns, want)
    ok(not any(f and (f.endswith(".abi0") or "+0x" in f) for f in fns), fns)


def test_go_matches_gdb():
    compare_with_gdb("fx-go", {"fx-go.go"}, 2, ())


def test_go_under_load():
    """An HTTP server hashing request bodies: threads running through
    crypto/sha256's assembly (BP used as data), the runtime switching
    between g0 and goroutine stacks. Every stack with user code ends in
    runtime.goexit, the handler is found below crypto/sha256.block, and
    nothing is taken from the other side of a stack switch."""
    seen_block = seen_futexsleep = 0
    with start("fx-go", "load") as fx:
        for _ in range(40):
            r = sdtest.run("--format", "json", fx.pid)
            ok(r.rc in (0, 1), r)
            for t in r.json()["threads"]:
                fns = [f["function"] for f in t["frames"]]
                if any(f and f.startswith("main.") for f in fns):
                    eq(fns[-1], "runtime.goexit", "%r" % t)
                    eq(t["unwind_stop"], None, "%r" % t)
                if "crypto/sha256.block" in fns:
                    seen_block += 1
                    ok("main.handleHash" in fns[fns.index("crypto/sha256.block"):], fns)
                for sw in ("runtime.mcall", "runtime.systemstack"):
                    # the last frame of its stack: what lies beyond is the
                    # other stack's
                    if sw in fns:
                        eq(fns.index(sw), len(fns) - 1, fns)
                seen_futexsleep += "runtime.futexsleep" in fns
            if seen_block >= 3 and seen_futexsleep:
                break
        sdtest.assert_running(fx.pid)
    ok(seen_block >= 3, "crypto/sha256.block seen on %d stacks only" % seen_block)
    ok(seen_futexsleep, "no runtime.futexsleep")


# Where a Go stack ends: a goroutine's root, a thread's root, and the
# functions that switch to the g0 stack (what lies beyond them is the other
# stack's). gdb walks on past them into stale words and past the thread's
# start (runtime/cgo(.text), ??): its frames are cut at the first one.
GO_ROOTS = ("runtime.goexit", "runtime.mstart", "runtime.rt0_go", "runtime.mcall",
            "runtime.systemstack", "runtime.morestack")
GDB_ANY_FRAME_RE = re.compile(r"^#\d+\s+(?:(0x[0-9a-f]+) in )?(<signal handler called>|\S+)")


def gdb_stacks(pid):
    """{tid: [(pc, function), ...]} of every frame gdb shows, the pc of
    frame #0 included (gdb prints it only when asked)."""
    return gdb_threads(["gdb", "-batch", "-nx", "-p", str(pid),
                        "-ex", "set print frame-info location-and-address",
                        "-ex", "thread apply all bt"], GDB_ANY_FRAME_RE,
                       lambda m: (int(m.group(1), 16) if m.group(1) else None, m.group(2)))


def go_frames(functions):
    """The Go functions of a stack up to its first root: signal frames
    (gdb's "<signal handler called>", our trampoline frame) and frames
    without a Go name (C, the vdso, gdb's ??) left out."""
    out = []
    for f in functions:
        if f and "." in f and not f.startswith("<"):
            out.append(f)
            if f in GO_ROOTS:
                break
    return out


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def test_go_under_load_matches_gdb():
    """fx-go under load (its clients hashing through the server's handler),
    compared with gdb thread by thread on the same state: the fixture is
    stopped (SIGSTOP) while it works, dumped by us, then by gdb, then let
    go; the innermost pc of every thread is the same in both, which shows
    they read the same registers. In every thread gdb unwinds to a root,
    our stack ends in the same root (runtime.goexit, runtime.mstart, or a
    switch to the g0 stack), with the same Go frames on the way (so the
    handler below crypto/sha256's assembly, runtime.futexsleep, and the
    frames past a signal handler the thread was in, where gdb shows
    them). Several rounds, until enough hashing threads were seen."""
    rounds = compared = handler = futexsleep = 0
    with start("fx-go", "load") as fx:
        try:
            while rounds < 40 and (rounds < 4 or handler < 3 or not futexsleep):
                # Loaded: it has worked since it was let go last.
                t0 = cpu_ticks(fx.pid)
                fx.wait_state(lambda st: cpu_ticks(fx.pid) >= t0 + 20, timeout=300)
                os.kill(fx.pid, signal.SIGSTOP)
                fx.wait_state(lambda st: st and all(s.state == "T" for s in st.values()),
                              timeout=300)
                r = sdtest.run("--format", "json", fx.pid)
                theirs = gdb_stacks(fx.pid)
                os.kill(fx.pid, signal.SIGCONT)
                rounds += 1
                eq(r.rc, 0, r)
                mine = {t["tid"]: t for t in r.json()["threads"]}
                eq(sorted(mine), sorted(theirs), "thread sets differ")
                for tid, g in theirs.items():
                    t = mine[tid]
                    ok(t["frames"] and g, "round %d thread %d: %r %r" % (rounds, tid, t, g))
                    eq(int(t["frames"][0]["addr"], 16), g[0][0],
                       "round %d thread %d: not the same state\nours: %r\ngdb: %r"
                       % (rounds, tid, t["frames"], g))
                    gf = go_frames([f for _, f in g])
                    if not gf or gf[-1] not in GO_ROOTS:
                        continue  # gdb did not unwind it to a root
                    fns = [f["function"] for f in t["frames"] if not f.get("signal_frame")]
                    of = go_frames(fns)
                    why = "round %d thread %d\nours: %r\ngdb:  %r" % (rounds, tid, fns, gf)
                    eq(t["unwind_stop"], None, why)
                    eq(fns[-1], gf[-1], "not the same root: " + why)
                    if "main.handleHash" in gf and "crypto/sha256.block" in gf:
                        ok("main.handleHash" in of[of.index("crypto/sha256.block"):], why)
                        handler += 1
                    if "runtime.futexsleep" in gf:
                        contains(of, "runtime.futexsleep", why)
                        futexsleep += 1
                    eq(of, gf, "Go frames differ: " + why)
                    compared += 1
        finally:
            try:
                os.kill(fx.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        sdtest.assert_running(fx.pid)
    print("  %d rounds, %d threads compared, %d in the handler below crypto/sha256, "
          "%d in runtime.futexsleep" % (rounds, compared, handler, futexsleep))
    ok(handler >= 3, "the handler below crypto/sha256.block in %d stacks only" % handler)
    ok(futexsleep, "no runtime.futexsleep in %d rounds" % rounds)


def jit_frames(*args):
    with start("fx-jit", *args, blocked=2) as fx:
        try:
            r = sdtest.run("--format", "json", "--tid", fx.tid("jit"), fx.pid)
            eq(r.rc, 0, r)
        finally:
            try:
                os.unlink("/tmp/perf-%d.map" % fx.pid)
            except FileNotFoundError:
                pass
    fr = r.json()["threads"][0]["frames"]
    fns = [f["function"] for f in fr]
    i = fns.index("jit_park")
    return fr, i


def test_jit_code_is_anonymous():
    """Code in anonymous memory between two mappings of the executable is
    not the executable's: the module spans its load segments only."""
    fr, i = jit_frames()
    eq(fr[i + 1]["module"], "[anonymous]", fr)
    eq(fr[i + 1]["function"], None, fr)
    eq(fr[i + 2]["function"], "jit_main", fr)


def test_jit_perf_map():
    fr, i = jit_frames("perfmap")
    eq(fr[i + 1]["module"], "[anonymous]", fr)
    eq(fr[i + 1]["function"], "jit_stub_loop", fr)
    eq(fr[i + 2]["function"], "jit_main", fr)


def in_jit(f):
    return f["module"] == "[anonymous]"


def node_jit_frames(*node_opts, until=in_jit):
    """Frames of node's main thread over dumps taken until one has a frame
    UNTIL holds for (default: one in anonymous memory, JIT code); every
    frame seen is returned."""
    node = shutil.which("node")
    ok(node, "node not found (the test needs it)")
    script = os.path.join(os.path.dirname(__file__), "..", "fixtures", "fx-node.js")
    seen = []
    with start(node, *node_opts, script) as fx:
        try:
            for _ in range(60):
                r = sdtest.run("--format", "json", "--tid", fx.pid, fx.pid)
                eq(r.rc, 0, r)
                fr = r.json()["threads"][0]["frames"]
                seen += fr
                if any(until(f) for f in fr):
                    break
        finally:
            try:
                os.unlink("/tmp/perf-%d.map" % fx.pid)
            except FileNotFoundError:
                pass
    # JIT code is never node's own: no frame of module node has an offset
    # the size of an address (the module once spanned the gap between
    # node's two mappings of itself, JIT code included).
    for f in seen:
        if f["module"] == "node":
            ok(int(f["offset"], 16) < 1 << 32, f)
    jit = [f for f in seen if f["module"] == "[anonymous]"]
    ok(jit, "no frame in JIT code in 60 dumps")
    return jit


def test_node_jit_anonymous():
    jit = node_jit_frames()
    eq({f["function"] for f in jit}, {None})


def fx_node_js_named(f):
    n = f["function"]
    return in_jit(f) and n and n.startswith("JS:") and "fx-node.js" in n


def test_node_jit_perf_map():
    # Until a frame of the fixture's own script: the first JIT frame caught
    # may be node's (seen: JS:^processImmediate node:internal/timers).
    jit = node_jit_frames("--perf-basic-prof", until=fx_node_js_named)
    names = [f["function"] for f in jit]
    ok(any(n and n.startswith("JS:") and "fx-node.js" in n for n in names), names)


def test_io_uring_worker_labelled():
    """An io-wq worker thread (a kernel thread inside the process) is said
    to be one, not shown as a corrupt stack at address 0."""
    with start("fx-iouring", blocked=2) as fx:
        r = sdtest.run("--format", "json", fx.pid)
        eq(r.rc, 0, r)
        text = sdtest.run(fx.pid)
        stat = {t: open("/proc/%d/task/%s/stat" % (fx.pid, t)).read()
                for t in os.listdir("/proc/%d/task" % fx.pid)}
    threads = {t["name"]: t for t in r.json()["threads"]}
    workers = [t for n, t in threads.items() if n.startswith("iou-wrk-")]
    eq(len(workers), 1, sorted(threads))
    w = workers[0]
    eq(w["frames"], [])
    contains(w["unwind_stop"], "io_uring worker")
    eq([f["function"] for f in threads["fx-iouring"]["frames"]][1], "main")
    ok("corrupt" not in text.out and "0x0000000000000000" not in text.out, text.out)
    # The kernel's own word that it is one (PF_IO_WORKER in its stat flags),
    # read here: then it is never stopped (nothing to read from it), its
    # state is /proc's, and the system call its creator's registers show
    # (io_uring_enter) is not said to be its own.
    flags = int(stat[str(w["tid"])].rsplit(")", 1)[1].split()[6])
    ok(flags & 0x10, flags)
    eq(w["capture"], "kernel", w)
    eq(w["pause_us"], 0, w)
    eq(w["state"], "S", w)
    eq(w["syscall"], None, w)
    eq(w["wchan"], "io_wq_worker", w)
    line = [x for x in text.out.splitlines() if '"iou-wrk-' in x]
    eq(len(line), 1, text.out)
    ok("running" not in line[0] and "before the freeze" not in line[0], line)


def test_io_uring_worker_in_a_profile():
    """A profile leaves an io_uring worker out with its reason, never
    counting it unreadable."""
    with start("fx-iouring", blocked=2) as fx:
        r = sdtest.run("profile", fx.pid, "--rate", "20", "--duration", "1s", "-f", "json")
        eq(r.rc, 0, r)
        t = sdtest.run("profile", fx.pid, "--rate", "20", "--duration", "1s")
    d = r.json()
    eq(d["lost"], 0, d)
    ok(d["samples"] > 0, d)
    eq(d["io_worker_samples"], d["samples"], d)
    contains(t.out, "samples of io_uring workers left out (kernel threads: no user stack)")
    ok("unreadable" not in t.out, t.out)
    # Saved and read back: a recording's report says the same.
    d = tempfile.mkdtemp(prefix="sd-iou-")
    try:
        with start("fx-iouring", blocked=2) as fx:
            r = sdtest.run("record", fx.pid, "--out", d + "/r", "--for", "1s", "--every", "0.25s")
            eq(r.rc, 0, r)
        rep = sdtest.run("report", d + "/r")
        eq(rep.rc, 0, rep)
        contains(rep.out, "samples of io_uring workers: kernel threads, no user stack")
        ok("without a stack" not in rep.out and not re.search(r"\d unreadable", rep.out),
           rep.out)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_key():
    eq(key("long shop::Ledger::post<int>(int)"), "post")
    eq(key("shop::Ledger::post<int>"), "post")
    eq(key("lambda_main()::{lambda(int)#1}::operator()(int) const"), "operator()")
    eq(key("shop::for_each_fd<lambda_main()::<lambda(int)> >"), "for_each_fd")
    eq(key("fx_frames_rs::main::{closure#1}::{closure#0}"), "{closure#0}")


if __name__ == "__main__":
    sdtest.main(globals())
