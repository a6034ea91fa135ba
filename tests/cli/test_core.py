# SPDX-License-Identifier: MIT
# Post-mortem: core files written by gdb's gcore of the suite's fixtures
# (C: locks, deadlock, deep stacks; C++; Rust), of fx-crash stopped under
# gdb at its SIGSEGV or abort, and by the kernel at fx-crash's crash, read
# by `stackdump core`, `stackdump FILE`, `locks FILE` and `-f json FILE`.
# gdb on the same core is the oracle for the frames (every frame gdb shows
# with a file:line, in order, with the same function), the live dump for
# the lock view; zstd, lz4 and xz cores (as systemd-coredump keeps them)
# are read directly; bad input (truncated, another architecture, notes out
# of bounds) is a clear message and exit 2.
import glob
import json
import os
import re
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
from fixture import path_of, start  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402
from test_frames import key  # noqa: E402

THREAD_RE = re.compile(r"^Thread \d+ \((?:.*\()?LWP (\d+)")
FRAME_RE = re.compile(r"^#(\d+)\s+(0x[0-9a-f]+ in )?(.+?) \(.*\) at (\S+):(\d+)$")
ANY_FRAME_RE = re.compile(r"^#(\d+)\s")

C_SOURCES = {"fx-mutex.c", "fx-deadlock.c", "fx-stacks.c", "fx-crash.c", "fx-common.h"}
CXX_SOURCES = {"fx-frames.cpp", "fx-frames-park.cpp", "fx-frames.h"}
RS_SOURCES = {"fx-frames-rs.rs"}

TMP = tempfile.mkdtemp(prefix="sd-core-test-")


def gcore(fx, name):
    """A core of the running fixture FX, by gdb's gcore (the process runs
    on afterwards)."""
    path = os.path.join(TMP, name)
    p = subprocess.run(["gcore", "-o", path, str(fx.pid)], capture_output=True, text=True,
                       timeout=300)
    core = "%s.%d" % (path, fx.pid)
    ok(os.path.exists(core), "gcore wrote no core: %s" % p.stderr[-2000:])
    sdtest.assert_running(fx.pid)
    return core


def crash_core(mode):
    """A core of fx-crash MODE taken by gdb where it stopped at the crash."""
    core = os.path.join(TMP, "crash-%s.core" % mode)
    p = subprocess.run(["gdb", "-batch", "-nx", "-ex", "run", "-ex", "gcore " + core,
                        "-ex", "kill", "--args", path_of("fx-crash"), mode],
                       input="go\n", capture_output=True, text=True, timeout=300)
    ok(os.path.exists(core), "gdb wrote no core: %s %s" % (p.stdout[-1000:], p.stderr[-1000:]))
    return core


def kernel_core(mode):
    """A core of fx-crash MODE written by the kernel itself at the crash,
    where the host's core_pattern writes a file (Debian's default "core",
    in the crashing process's folder): the fixture runs in a folder of
    ours with RLIMIT_CORE raised for it alone; the host's settings are
    never changed. Where the pattern pipes cores to a handler
    (systemd-coredump, apport) no file can be had without changing it:
    then gdb's core taken at the crash stands in (crash_core), and the
    test says so. Returns (path, written by the kernel)."""
    pattern = open("/proc/sys/kernel/core_pattern").read().strip()
    if pattern.startswith("|") or not pattern:
        print("  core_pattern pipes cores to %r: gdb's core at the crash stands in" % pattern)
        return crash_core(mode), False
    d = tempfile.mkdtemp(dir=TMP)
    unlimited = lambda: resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY,) * 2)
    p = subprocess.Popen([path_of("fx-crash"), mode], cwd=d, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=unlimited)
    # "go" only once every thread is in place (worker-3 crashes as soon
    # as it reads it; main may still be starting the others).
    first = p.stdout.readline()
    contains(first, "ready %d" % p.pid)
    out, err = p.communicate("go\n", timeout=300)
    eq(p.returncode, -11 if mode == "segv" else -6, (first, out, err))
    pid = p.pid
    # Where the pattern puts it: %p the pid, %e the name, %% a %, any
    # other specifier a wildcard; core_uses_pid adds ".PID" without %p.
    name, i = "", 0
    while i < len(pattern):
        if pattern[i] == "%" and i + 1 < len(pattern):
            c = pattern[i + 1]
            name += {"p": str(pid), "P": str(pid), "e": "fx-crash", "%": "%"}.get(c, "*")
            i += 2
        else:
            name += glob.escape(pattern[i])
            i += 1
    if "%p" not in pattern and open("/proc/sys/kernel/core_uses_pid").read().strip() == "1":
        name += ".%d" % pid
    found = glob.glob(name if name.startswith("/") else os.path.join(d, name))
    eq(len(found), 1, "the kernel's core for %r in %s: %r" % (pattern, d, found))
    return found[0], True


def gdb_core(exe, core):
    """{tid: [(function, file basename, line)]} of gdb's bt on CORE, one
    entry per frame gdb prints (file "" when it gives none)."""
    p = subprocess.run(["gdb", "-batch", "-nx", exe, core, "-ex", "thread apply all bt"],
                       capture_output=True, text=True, timeout=300)
    out, tid = {}, None
    for line in p.stdout.splitlines():
        m = THREAD_RE.match(line)
        if m:
            tid = int(m.group(1))
            out[tid] = []
            continue
        if tid is None or not ANY_FRAME_RE.match(line):
            continue
        m = FRAME_RE.match(line)
        out[tid].append((m.group(3), os.path.basename(m.group(4)), int(m.group(5))) if m
                        else ("", "", 0))
    ok(out, "gdb showed no threads: %s" % p.stderr[-2000:])
    return out


def ours(core, *extra, rc=0):
    """Our JSON dump of CORE (RC 3: it holds a deadlock)."""
    r = sdtest.run("-f", "json", *extra, core)
    eq(r.rc, rc, r)
    return r.json()


def upto_main(frames):
    """FRAMES up to main (gdb stops there: backtrace past-main is off)."""
    for i, f in enumerate(frames):
        if f[0] == "main":
            return frames[:i + 1]
    return frames


def compare_core(exe, core, sources, min_frames, rc=0):
    """Every thread gdb shows: the frames it places in the fixture's own
    SOURCES (file:line, function, order) are ours too, and so are the
    frames elsewhere that gdb gives a line (in order: gdb adds frames for
    tail calls that no unwinder sees, so ours may lack some). Returns our
    JSON dump."""
    doc = ours(core, rc=rc)
    theirs = gdb_core(exe, core)
    mine = {t["tid"]: t for t in doc["threads"]}
    eq(sorted(mine), sorted(theirs), "thread sets differ")
    matched = other = 0
    for tid, g in theirs.items():
        m = upto_main([(f["function"] or "", os.path.basename(f["file"] or ""), f["line"] or 0)
                       for f in mine[tid]["frames"]])
        g = upto_main(g)
        gs = [f for f in g if f[1] in sources]
        ms = [f for f in m if f[1] in sources]
        eq([(f[1], f[2]) for f in ms], [(f[1], f[2]) for f in gs],
           "thread %d: file:line differ\nours: %r\ngdb:  %r" % (tid, m, g))
        eq([key(f[0]) for f in ms], [key(f[0]) for f in gs],
           "thread %d: functions differ\nours: %r\ngdb:  %r" % (tid, m, g))
        matched += len(gs)
        # The others: ours is a subsequence of gdb's.
        rest = iter([(f[1], f[2]) for f in g if f[1]])
        for f in m:
            if f[1] and f[1] not in sources:
                ok(any(x == (f[1], f[2]) for x in rest),
                   "thread %d: %r not in gdb's order\nours: %r\ngdb:  %r" % (tid, f, m, g))
                other += 1
    ok(matched >= min_frames, "only %d frames compared" % matched)
    print("  %s: %d threads, %d frames in its sources and %d others match gdb"
          % (os.path.basename(exe), len(theirs), matched, other))
    return doc


def lock_view(doc):
    """What each thread waits for and who holds it, by TID."""
    return {t["tid"]: t["wait"] and (t["wait"]["kind"], t["wait"]["address"],
                                     t["wait"]["owner"]) for t in doc["threads"]}


def test_mutex_frames_and_locks_as_live():
    with start("fx-mutex", "normal", "3", parked=3) as fx:
        live = sdtest.run("-f", "json", fx.pid).json()
        core = gcore(fx, "mutex")
    doc = compare_core(path_of("fx-mutex"), core, C_SOURCES, 6)
    eq(lock_view(doc), lock_view(live))
    waits = [t for t in doc["threads"] if t["wait"] and t["wait"]["kind"] == "mutex"]
    eq(len(waits), 3, doc)
    eq(doc["core"]["file"], core)
    eq(doc["pause_us"], None)
    eq(doc["crash"], None)
    for t in doc["threads"]:
        eq((t["wchan"], t["voluntary_ctxt_switches"], t["pause_us"]), (None, None, None))
    r = sdtest.run("locks", "-f", "json", core)
    eq(r.rc, 0, r)
    lk = r.json()
    eq(len(lk["locks"]), 1, lk)
    eq(lk["locks"][0]["symbol"], "g_ledger_lock")
    eq(sorted(lk["locks"][0]["waiters"]), sorted(t["tid"] for t in waits))
    holder = [t["tid"] for t in live["threads"] if t["name"] == "holder"]
    eq([lk["locks"][0]["owner"]], holder)


def test_deadlock_found_in_core():
    with start("fx-deadlock", "2", parked=2) as fx:
        live = sdtest.run("locks", "-f", "json", fx.pid)
        core = gcore(fx, "deadlock")
    eq(live.rc, 3, live)
    compare_core(path_of("fx-deadlock"), core, C_SOURCES, 4, rc=3)
    r = sdtest.run("locks", "-f", "json", core)
    eq(r.rc, 3, r)
    cyc = lambda d: sorted(sorted((e["tid"], e["address"], e["owner"]) for e in c)
                           for c in d["deadlocks"])
    eq(cyc(r.json()), cyc(live.json()))
    ok(r.json()["deadlocks"], r.out)
    text = sdtest.run("locks", core)
    eq(text.rc, 3, text)
    contains(text.out, "from core " + core)
    contains(text.out, "deadlock")


def test_deep_stacks():
    with start("fx-stacks", blocked=2) as fx:
        core = gcore(fx, "stacks")
    compare_core(path_of("fx-stacks"), core, C_SOURCES, 20)


def test_cxx_frames():
    with start("fx-frames-gcc", blocked=4) as fx:
        core = gcore(fx, "cxx")
    compare_core(path_of("fx-frames-gcc"), core, CXX_SOURCES, 12)


def test_rust_frames():
    with start("fx-frames-rs", blocked=3) as fx:
        core = gcore(fx, "rust")
    compare_core(path_of("fx-frames-rs"), core, RS_SOURCES, 6)


def test_segv_crash_first():
    core = crash_core("segv")
    doc = compare_core(path_of("fx-crash"), core, C_SOURCES, 6)
    cr = doc["crash"]
    eq((cr["signal"], cr["code"], cr["address"]), (11, 1, 0), cr)
    eq(doc["threads"][0]["tid"], cr["tid"])
    eq(doc["threads"][0]["frames"][0]["function"], "parse_header")
    src = open(os.path.join(os.path.dirname(__file__), "..", "fixtures", "fx-crash.c")).read()
    line = [i + 1 for i, l in enumerate(src.split("\n")) if "*g_header = v;" in l][0]
    eq(cr["text"], "SIGSEGV (SEGV_MAPERR) at 0x0 in parse_header at fx-crash.c:%d, thread %d"
       % (line, cr["tid"]))
    r = sdtest.run("core", core)
    eq(r.rc, 0, r)
    lines = r.out.split("\n")
    contains(lines[2], "crash: SIGSEGV (SEGV_MAPERR) at 0x0 in parse_header")
    ok(lines[3].startswith("Thread %d " % cr["tid"]), r.out)


def test_abort_names_the_caller():
    core = crash_core("abort")
    doc = compare_core(path_of("fx-crash"), core, C_SOURCES, 6)
    cr = doc["crash"]
    eq(cr["signal"], 6, cr)
    eq(doc["threads"][0]["tid"], cr["tid"])
    contains(cr["text"], "SIGABRT (SI_TKILL) in check_header at fx-crash.c:")
    fns = [f["function"] for f in doc["threads"][0]["frames"]]
    ok("check_header" in fns and "handle_request" in fns, fns)


def test_rust_panic_names_where_it_panicked():
    # fx-rustpanic (panic=abort): the panic ends in abort(3). The crash
    # line names the program's frame that panicked, past libc's abort and
    # std's and core's panic machinery, and says it was a panic.
    core = os.path.join(TMP, "rustpanic.core")
    p = subprocess.run(["gdb", "-batch", "-nx", "-ex", "run", "-ex", "gcore " + core,
                        "-ex", "kill", "--args", path_of("fx-rustpanic")],
                       input="go\n", capture_output=True, text=True, timeout=300)
    ok(os.path.exists(core), "gdb wrote no core: %s %s" % (p.stdout[-1000:], p.stderr[-1000:]))
    doc = compare_core(path_of("fx-rustpanic"), core, {"fx-rustpanic.rs"}, 3)
    cr = doc["crash"]
    eq(cr["signal"], 6, cr)
    eq(doc["threads"][0]["tid"], cr["tid"])
    src = open(os.path.join(os.path.dirname(__file__), "..", "fixtures", "fx-rustpanic.rs")).read()
    line = [i + 1 for i, l in enumerate(src.splitlines()) if "// PANIC" in l][0]
    contains(cr["text"], "SIGABRT (SI_TKILL), a Rust panic, in fx_rustpanic::parse_header at "
             "fx-rustpanic.rs:%d (through core::panicking::panic_fmt" % line)
    contains(cr["text"], ", thread %d" % cr["tid"])
    # The text dump leads with it too.
    r = sdtest.run("core", core)
    contains(r.out.splitlines()[0] + r.out, "a Rust panic, in fx_rustpanic::parse_header")


def test_kernel_core():
    # The kernel's own core (all of the process's private memory, its
    # NT_SIGINFO, NT_FILE and the modules' first pages), read as gdb reads it.
    for mode in ("segv", "abort"):
        core, by_kernel = kernel_core(mode)
        try:
            doc = compare_core(path_of("fx-crash"), core, C_SOURCES, 6)
            cr = doc["crash"]
            eq(doc["threads"][0]["tid"], cr["tid"])
            if mode == "segv":
                eq((cr["signal"], cr["code"], cr["address"]), (11, 1, 0), cr)
                eq(doc["threads"][0]["frames"][0]["function"], "parse_header")
            else:
                eq(cr["signal"], 6, cr)
                contains(cr["text"], "SIGABRT (SI_TKILL) in check_header at fx-crash.c:")
            eq(doc["core"]["notes"], [])
            eq(doc["core"]["command"], path_of("fx-crash") + " " + mode)
        finally:
            if by_kernel:
                os.unlink(core)


def test_zstd_core():
    core = crash_core("segv")
    zst = core + ".zst"
    subprocess.run(["zstd", "-q", "-f", core, "-o", zst], check=True, timeout=300)
    a, b = ours(core), ours(zst)
    eq([t["frames"] for t in b["threads"]], [t["frames"] for t in a["threads"]])
    eq(b["crash"], a["crash"])
    r = sdtest.run(zst)
    eq(r.rc, 0, r)
    contains(r.out, "crash: SIGSEGV")
    # A stream cut short is refused with the reason.
    cut = os.path.join(TMP, "cut.zst")
    data = open(zst, "rb").read()
    open(cut, "wb").write(data[:len(data) // 2])
    r = sdtest.run("core", cut)
    eq(r.rc, 2, r)
    contains(r.err, "zstd")


def test_lz4_and_xz_cores():
    # systemd-coredump's other compressions (Compress= with lz4 or xz).
    core = crash_core("segv")
    a = ours(core)
    for tool, ext, magic in (("lz4", ".lz4", b"\x04\x22\x4d\x18"), ("xz", ".xz", b"\xfd7zXZ")):
        z = core + ext
        subprocess.run([tool, "-q", "-f", "-k", core] if tool == "xz" else
                       [tool, "-q", "-f", core, z], check=True, timeout=300)
        ok(open(z, "rb").read(len(magic)) == magic, z)
        b = ours(z)
        eq([t["frames"] for t in b["threads"]], [t["frames"] for t in a["threads"]], tool)
        eq(b["crash"], a["crash"], tool)
        r = sdtest.run(z)
        eq(r.rc, 0, r)
        contains(r.out, "crash: SIGSEGV")
        # Cut short: refused with the reason, naming the compression.
        cut = os.path.join(TMP, "cut" + ext)
        data = open(z, "rb").read()
        open(cut, "wb").write(data[:len(data) // 2])
        r = sdtest.run("core", cut)
        eq(r.rc, 2, r)
        contains(r.err, tool)


def test_module_mismatch_not_symbolized():
    # The executable replaced since the crash (another binary at its path):
    # its build-id differs, so it is named and never symbolized.
    d = tempfile.mkdtemp(dir=TMP)
    exe = os.path.join(d, "fx-crash")
    shutil.copy(path_of("fx-crash"), exe)
    core = os.path.join(d, "replaced.core")
    subprocess.run(["gdb", "-batch", "-nx", "-ex", "run", "-ex", "gcore " + core, "-ex", "kill",
                    "--args", exe, "segv"], input="go\n", capture_output=True, text=True,
                   timeout=300)
    ok(os.path.exists(core))
    shutil.copy(path_of("fx-stacks"), exe)
    doc = ours(core)
    notes = doc["core"]["notes"]
    ok(any(n.startswith("module fx-crash: build-id ") and "does not match " + exe in n
           and n.endswith("not symbolized") for n in notes), notes)
    fns = [f["function"] for t in doc["threads"] for f in t["frames"]
           if f["module"] == "fx-crash"]
    ok(fns and all(f is None for f in fns), fns)
    # --sysroot with the right file: matched again.
    root = os.path.join(d, "root")
    os.makedirs(root + d)
    shutil.copy(path_of("fx-crash"), root + exe)
    r = sdtest.run("core", "--sysroot", root, "-f", "json", core)
    eq(r.rc, 0, r)
    eq(r.json()["core"]["notes"], [])
    eq(r.json()["threads"][0]["frames"][0]["function"], "parse_header")


def free_port():
    import socket
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def test_debuginfod_when_asked():
    # The executable gone from this host since the crash: found by its
    # build-id through debuginfod (a server of our own on loopback, serving
    # a folder holding it) only when asked (STACKDUMP_DEBUGINFOD=1), and
    # kept because its build-id is the core's.
    d = tempfile.mkdtemp(dir=TMP)
    exe = os.path.join(d, "fx-crash")
    shutil.copy(path_of("fx-crash"), exe)
    core = os.path.join(d, "gone.core")
    subprocess.run(["gdb", "-batch", "-nx", "-ex", "run", "-ex", "gcore " + core, "-ex", "kill",
                    "--args", exe, "segv"], input="go\n", capture_output=True, text=True,
                   timeout=300)
    ok(os.path.exists(core))
    served = os.path.join(d, "served")
    os.makedirs(served)
    shutil.move(exe, os.path.join(served, "fx-crash"))
    # Not asked: named as not found, never symbolized.
    doc = ours(core)
    ok(any(n.startswith("module fx-crash: build-id ") and "not found" in n
           for n in doc["core"]["notes"]), doc["core"]["notes"])
    eq(doc["threads"][0]["frames"][0]["function"], None)
    port = free_port()
    srv = subprocess.Popen(["debuginfod", "-F", served, "-p", str(port), "-d",
                            os.path.join(d, "db.sqlite"), "-t", "0", "-g", "0"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        env = {"STACKDUMP_DEBUGINFOD": "1", "DEBUGINFOD_URLS": "http://127.0.0.1:%d" % port,
               "DEBUGINFOD_CACHE_PATH": os.path.join(d, "cache"), "DEBUGINFOD_TIMEOUT": "30"}
        # The server scans its folder once it starts: asked until it
        # answers (bounded by the number of tries, not by a clock).
        for i in range(600):
            # A cache of its own at each try: the client remembers a miss.
            env["DEBUGINFOD_CACHE_PATH"] = os.path.join(d, "cache%d" % i)
            r = sdtest.run("core", "-f", "json", core, env=env)
            if r.rc == 0 and not r.json()["core"]["notes"]:
                break
            time.sleep(0.1)
        eq(r.rc, 0, r.err)
        eq(r.json()["core"]["notes"], [], "fx-crash not had from debuginfod")
        eq(r.json()["threads"][0]["frames"][0]["function"], "parse_header")
        # Asked with any other value: not contacted.
        env["STACKDUMP_DEBUGINFOD"] = "yes"
        env["DEBUGINFOD_CACHE_PATH"] = os.path.join(d, "cache2")
        r = sdtest.run("core", "-f", "json", core, env=env)
        ok(r.json()["core"]["notes"], "debuginfod contacted without STACKDUMP_DEBUGINFOD=1")
    finally:
        srv.kill()
        srv.wait()


def test_shell_load_core():
    core = crash_core("segv")
    r = sdtest.run(input="load %s\ndump\nlocks\n" % core, env={"XDG_STATE_HOME": TMP})
    eq(r.rc, 0, r)
    contains(r.err, "loaded %s" % core)
    contains(r.out, "from core %s" % core)
    contains(r.out, "crash: SIGSEGV (SEGV_MAPERR) at 0x0 in parse_header")
    ok(r.out.count("parse_header (fx-crash)") >= 1, r.out)


def test_huge_sparse_core():
    # 100 GiB of which a few KiB are data (the fuzz seed, then a hole): it
    # is mapped, never read whole.
    seed = os.path.join(os.path.dirname(__file__), "..", "fuzz", "corpus", "core",
                        "seed-min.core")
    big = os.path.join(TMP, "sparse.core")
    shutil.copy(seed, big)
    os.truncate(big, 100 << 30)
    r = sdtest.run("-f", "json", big)
    eq(r.rc, 0, r)
    doc = r.json()
    eq((doc["pid"], doc["comm"], len(doc["threads"])), (1234, "crash", 1))
    eq(doc["core"]["command"], "crash --now")
    eq((doc["crash"]["signal"], doc["crash"]["code"]), (11, 1))
    os.unlink(big)


def write(name, data):
    path = os.path.join(TMP, name)
    open(path, "wb").write(data)
    return path


def test_bad_input():
    good = open(crash_core("segv"), "rb").read()
    cases = {
        "truncated-header": (good[:40], "truncated in the ELF header"),
        "truncated-phdrs": (good[:100], "truncated"),
        "not-elf": (b"x" * 4096, "not an ELF file"),
        "arm64": (good[:18] + struct.pack("<H", 183) + good[20:], "another architecture"),
        "32bit": (good[:4] + b"\x01" + good[5:], "another architecture"),
    }
    # The notes segment claims more bytes than the file has.
    phoff, = struct.unpack_from("<Q", good, 32)
    phnum, = struct.unpack_from("<H", good, 56)
    bad = bytearray(good)
    for i in range(phnum):
        o = phoff + i * 56
        if struct.unpack_from("<I", bad, o)[0] == 4:  # PT_NOTE
            struct.pack_into("<Q", bad, o + 32, len(good) * 4)
    cases["notes-out-of-bounds"] = (bytes(bad), "notes")
    # A note inside the segment whose size runs past it.
    bad2 = bytearray(good)
    for i in range(phnum):
        o = phoff + i * 56
        if struct.unpack_from("<I", bad2, o)[0] == 4:
            noff, = struct.unpack_from("<Q", bad2, o + 8)
            struct.pack_into("<I", bad2, noff + 4, 0x7ffffff0)
    cases["note-past-segment"] = (bytes(bad2), "runs past its segment")
    for name, (data, msg) in cases.items():
        path = write(name, data)
        r = sdtest.run("core", path)
        eq(r.rc, 2, "%s: %r" % (name, r))
        contains(r.err, msg, name)
        contains(r.err, path, name)
        r = sdtest.run(path)
        eq(r.rc, 2, "%s: %r" % (name, r))
    # gcore writes its notes last: a core cut anywhere loses them.
    cut = write("truncated-memory", good[:len(good) - len(good) // 3])
    r = sdtest.run("core", cut)
    eq(r.rc, 2, r)
    contains(r.err, "truncated or corrupt: its notes")
    # A symbolic link is not followed.
    link = os.path.join(TMP, "link.core")
    os.symlink(os.path.join(TMP, "crash-segv.core"), link)
    r = sdtest.run("core", link)
    eq(r.rc, 2, r)
    contains(r.err, "symbolic link")


if __name__ == "__main__":
    try:
        sdtest.main(globals(), tools=(("gdb", "gdb"), ("gcore", "gdb"), ("zstd", "zstd"),
                                      ("lz4", "lz4"), ("xz", "xz-utils")))
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
