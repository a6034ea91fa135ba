# SPDX-License-Identifier: MIT
# save --core: a live fixture's snapshot written as a small ELF core. gdb on
# that core is the oracle (Debian 12's gdb, `gdb EXE FILE`, `thread apply
# all bt`): the frames it shows are the ones the live dump shows (every
# frame in the fixture's own sources with its function and file:line, the
# others in order); eu-stack --core (its own unwinder) finds the same
# program counters; `stackdump core FILE` reads it back to the live dump's
# very frames, thread names and lock view. Written 0600 through the safe
# writer: a full disk is a clear error with nothing left behind (a small
# tmpfs in a private mount namespace), a link at the name is refused.
import atexit
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
from fixture import path_of, start  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402
import test_core  # noqa: E402
from test_core import C_SOURCES, CXX_SOURCES, RS_SOURCES, gdb_core, lock_view, upto_main  # noqa: E402
from test_frames import key  # noqa: E402

TMP = tempfile.mkdtemp(prefix="sd-core-save-")
atexit.register(shutil.rmtree, test_core.TMP, True)
STATUS_RE = re.compile(r"wrote a core of (\d+) .* \((\d+) threads?, (\d+) bytes of memory, "
                       r"(\d+) files; paused [0-9.]+ ms\) to (.*) \((\d+) bytes\)")


def save_core(fx, name, *extra):
    """save --core of the running fixture FX: (path, the status line's
    numbers); the fixture runs on."""
    path = os.path.join(TMP, name)
    r = sdtest.run("save", "--core", *extra, path, fx.pid)
    eq(r.rc, 0, r)
    m = STATUS_RE.search(r.err)
    ok(m, r.err)
    eq((int(m.group(1)), m.group(5)), (fx.pid, path), r.err)
    st = os.stat(path)
    eq(stat.S_IMODE(st.st_mode), 0o600, "mode %o" % st.st_mode)
    eq(st.st_size, int(m.group(6)))
    sdtest.assert_running(fx.pid)
    return path, int(m.group(2)), int(m.group(3))


def frames_of(t):
    return [(f["function"] or "", os.path.basename(f["file"] or ""), f["line"] or 0)
            for f in t["frames"]]


def same_as_gdb(exe, core, live, sources, min_frames):
    """gdb's frames on CORE are LIVE's (our dump of the running process):
    those in the fixture's SOURCES exactly (function, file:line, order),
    the others with a line as a subsequence (gdb adds tail-call frames no
    unwinder sees)."""
    theirs = gdb_core(exe, core)
    mine = {t["tid"]: t for t in live["threads"]}
    eq(sorted(theirs), sorted(mine), "thread sets differ")
    matched = 0
    for tid, g in theirs.items():
        m = upto_main(frames_of(mine[tid]))
        g = upto_main(g)
        gs = [f for f in g if f[1] in sources]
        ms = [f for f in m if f[1] in sources]
        eq([(f[1], f[2]) for f in ms], [(f[1], f[2]) for f in gs],
           "thread %d: file:line differ\nlive: %r\ngdb:  %r" % (tid, m, g))
        eq([key(f[0]) for f in ms], [key(f[0]) for f in gs],
           "thread %d: functions differ\nlive: %r\ngdb:  %r" % (tid, m, g))
        matched += len(gs)
        rest = iter([(f[1], f[2]) for f in g if f[1]])
        for f in m:
            if f[1] and f[1] not in sources:
                ok(any(x == (f[1], f[2]) for x in rest),
                   "thread %d: %r not in gdb's order\nlive: %r\ngdb:  %r" % (tid, f, m, g))
    ok(matched >= min_frames, "only %d frames compared" % matched)
    print("  %s: %d threads, %d frames in its sources as live" % (os.path.basename(exe),
                                                                  len(theirs), matched))


def read_back(core, live, rc=0):
    """stackdump core FILE gives LIVE's frames (pc, function, file:line),
    thread names and lock view, with exit status RC (3: a deadlock).
    Returns that dump."""
    r = sdtest.run("core", "-f", "json", core)
    eq(r.rc, rc, r)
    doc = r.json()
    eq(doc["core"]["file"], core)
    eq(doc["core"]["notes"], [], "every module matched by build-id")
    mine = {t["tid"]: t for t in doc["threads"]}
    eq(sorted(mine), sorted(t["tid"] for t in live["threads"]))
    for t in live["threads"]:
        c = mine[t["tid"]]
        eq(c["name"], t["name"])
        eq([(f["addr"], f["function"], f["file"], f["line"]) for f in c["frames"]],
           [(f["addr"], f["function"], f["file"], f["line"]) for f in t["frames"]],
           "thread %d" % t["tid"])
    eq(lock_view(doc), lock_view(live))
    return doc


def eu_stack_pcs(exe, core):
    """{tid: [pc]} of eu-stack --core (libdw's own unwinder)."""
    p = subprocess.run(["eu-stack", "--core", core, "-e", exe], capture_output=True, text=True,
                       timeout=300)
    out, tid = {}, None
    for line in p.stdout.splitlines():
        m = re.match(r"^TID (\d+):", line)
        if m:
            tid = int(m.group(1))
            out[tid] = []
            continue
        m = re.match(r"^#\d+\s+0x([0-9a-f]+)", line)
        if m and tid is not None:
            out[tid].append(int(m.group(1), 16))
    ok(out, "eu-stack showed no threads: %s" % p.stderr[-2000:])
    return out


def test_mutex_gdb_and_read_back():
    with start("fx-mutex", "normal", "3", parked=3) as fx:
        live = sdtest.run("-f", "json", fx.pid).json()
        core, nthreads, memory = save_core(fx, "mutex.core")
    eq(nthreads, len(live["threads"]))
    # Small: the stacks' used parts and a few pages, not the address space.
    ok(os.path.getsize(core) < 4 << 20, os.path.getsize(core))
    same_as_gdb(path_of("fx-mutex"), core, live, C_SOURCES, 6)
    read_back(core, live)
    r = sdtest.run("locks", "-f", "json", core)
    eq(r.rc, 0, r)
    lk = r.json()
    eq(len(lk["locks"]), 1, lk)
    eq(lk["locks"][0]["symbol"], "g_ledger_lock")
    holder = [t["tid"] for t in live["threads"] if t["name"] == "holder"]
    eq([lk["locks"][0]["owner"]], holder)
    # eu-stack finds the modules (headers, link_map) and unwinds to the
    # same program counters with its own unwinder.
    pcs = eu_stack_pcs(path_of("fx-mutex"), core)
    for t in live["threads"]:
        want = [int(f["addr"], 16) for f in t["frames"] if not f["inlined"]]
        want = [pc for i, pc in enumerate(want) if i == 0 or pc != want[i - 1]]
        eq(pcs[t["tid"]][:len(want)], want, "thread %d" % t["tid"])


def test_deadlock_read_back():
    # blocked=3: main too, in pause(), not still returning from the write
    # of its ready line (the live dump once found it there, gdb later in
    # pause on the core).
    with start("fx-deadlock", "2", parked=2, blocked=3) as fx:
        live = sdtest.run("-f", "json", fx.pid).json()
        live_locks = sdtest.run("locks", "-f", "json", fx.pid)
        core, _, _ = save_core(fx, "deadlock.core")
    eq(live_locks.rc, 3, live_locks)
    same_as_gdb(path_of("fx-deadlock"), core, live, C_SOURCES, 4)
    read_back(core, live, rc=3)
    r = sdtest.run("locks", "-f", "json", core)
    eq(r.rc, 3, r)
    cyc = lambda d: sorted(sorted((e["tid"], e["address"], e["owner"]) for e in c)
                           for c in d["deadlocks"])
    eq(cyc(r.json()), cyc(live_locks.json()))
    ok(r.json()["deadlocks"], r.out)


def test_deep_stacks():
    with start("fx-stacks", blocked=2) as fx:
        live = sdtest.run("-f", "json", fx.pid).json()
        core, _, _ = save_core(fx, "stacks.core")
    same_as_gdb(path_of("fx-stacks"), core, live, C_SOURCES, 20)
    read_back(core, live)


def test_cxx_frames():
    with start("fx-frames-gcc", blocked=4) as fx:
        live = sdtest.run("-f", "json", fx.pid).json()
        core, _, _ = save_core(fx, "cxx.core")
    same_as_gdb(path_of("fx-frames-gcc"), core, live, CXX_SOURCES, 12)
    read_back(core, live)


def test_rust_frames():
    with start("fx-frames-rs", blocked=3) as fx:
        live = sdtest.run("-f", "json", fx.pid).json()
        core, _, _ = save_core(fx, "rust.core")
    same_as_gdb(path_of("fx-frames-rs"), core, live, RS_SOURCES, 6)
    read_back(core, live)


def gdb_bt(exe, core, limit):
    """{tid: [frame line without its number]} of gdb's bt LIMIT on CORE."""
    p = subprocess.run(["gdb", "-batch", "-nx", exe, core, "-ex", "thread apply all bt %d" % limit],
                       capture_output=True, text=True, timeout=300)
    out, tid = {}, None
    for line in p.stdout.splitlines():
        m = re.match(r"^Thread \d+ \((?:.*\()?LWP (\d+)", line)
        if m:
            tid = int(m.group(1))
            out[tid] = []
        elif tid is not None and re.match(r"^#\d+\s", line):
            # Arguments gdb cannot read in a small core print as errors.
            out[tid].append(re.sub(r"\(.*\) at ", "() at ", line.split(None, 1)[1]))
    ok(out, "gdb showed no threads: %s" % p.stderr[-2000:])
    return out


def test_hostile_as_gcore():
    # Broken stacks (a garbage stack pointer, a smashed return address, a
    # handler on a sigaltstack, JIT code in anonymous memory, a deep
    # recursion): gdb shows on save --core's file what it shows on
    # gcore's of the same process, frame for frame, when every thread is
    # stopped for all its registers (gdb walks garbage-sp's frame pointer,
    # which a sleeper read without a stop does not give).
    with start("fx-hostile", "2000", blocked=6) as fx:
        core, _, _ = save_core(fx, "hostile.core", "--all-registers")
        g = test_core.gcore(fx, "hostile-gcore")
    mine = gdb_bt(path_of("fx-hostile"), core, 40)
    theirs = gdb_bt(path_of("fx-hostile"), g, 40)
    eq(sorted(mine), sorted(theirs))
    for tid in theirs:
        eq(mine[tid], theirs[tid], "thread %d" % tid)
    ok(sum(len(v) for v in theirs.values()) >= 60, theirs)
    ok(os.path.getsize(core) * 4 < os.path.getsize(g), (os.path.getsize(core), os.path.getsize(g)))
    os.unlink(g)


def test_shell_save_core():
    with start("fx-mutex", "normal", "2", parked=2) as fx:
        live = sdtest.run("-f", "json", fx.pid).json()
        core = os.path.join(TMP, "shell.core")
        r = sdtest.run(input="attach %d\nsave --core %s\n" % (fx.pid, core),
                       env={"XDG_STATE_HOME": TMP})
        eq(r.rc, 0, r)
        contains(r.err, "wrote a core of %d " % fx.pid)
        sdtest.assert_running(fx.pid)
    read_back(core, live)
    # The shell opens it again (load), and refuses to --core a core.
    r = sdtest.run(input="load %s\ndump\nsave --core %s.again\n" % (core, core),
                   env={"XDG_STATE_HOME": TMP})
    contains(r.out, "from core %s" % core)
    contains(r.out, "waiter-1")
    contains(r.err, "save: --core writes a live process's snapshot, not a loaded file's")
    ok(not os.path.exists(core + ".again"))


def test_args_only_program_by_default():
    # NT_PRPSINFO keeps the program only, unless --cmdline.
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        a, _, _ = save_core(fx, "args.core")
        b, _, _ = save_core(fx, "args-full.core", "--cmdline")
    da = sdtest.run("core", "-f", "json", a).json()
    db = sdtest.run("core", "-f", "json", b).json()
    eq(da["core"]["command"], path_of("fx-mutex"))
    eq(db["core"]["command"], path_of("fx-mutex") + " normal 1")


def test_tid_selects_threads():
    # The snapshot options apply: --tid writes those threads only.
    with start("fx-mutex", "normal", "2", parked=2) as fx:
        holder = fx.tid("holder")
        core, n, _ = save_core(fx, "tid.core", "--tid", str(holder))
        live = sdtest.run("-f", "json", "--tid", str(holder), fx.pid).json()
    eq(n, 1)
    eq(sorted(gdb_core(path_of("fx-mutex"), core)), [holder])
    doc = sdtest.run("core", "-f", "json", core).json()
    eq([(t["tid"], t["name"]) for t in doc["threads"]], [(holder, "holder")])
    eq([f["function"] for f in doc["threads"][0]["frames"]],
       [f["function"] for f in live["threads"][0]["frames"]])


def test_full_disk_leaves_nothing():
    # A tmpfs of 64 KiB in a private mount namespace: the core does not
    # fit; the error says so, no temporary file stays, and the file that
    # was at the name is untouched.
    unshare = sdtest.tool("unshare", "util-linux")
    mnt = tempfile.mkdtemp(dir=TMP)
    with start("fx-stacks", blocked=2) as fx:
        script = ('mount -t tmpfs -o size=64k none "$1" && printf old > "$1/x.core" && '
                  '"$2" save --core "$1/x.core" "$3"; echo "rc=$?"; ls -A "$1"; cat "$1/x.core"')
        p = subprocess.run([unshare, "--mount", "--propagation", "private", "sh", "-c", script,
                            "sh", mnt, sdtest.binary(), str(fx.pid)],
                           capture_output=True, text=True, timeout=300)
        sdtest.assert_running(fx.pid)
    contains(p.stdout, "rc=2", p)
    contains(p.stderr, "cannot write %s/x.core: no space left on device" % mnt, p)
    contains(p.stderr, "(the disk is full: free some space; a recording can be bounded with "
             "--max-disk)", p)
    eq(p.stdout.split("rc=2\n", 1)[1], "x.core\nold", p)
    # /dev/full, written through: the same clear error.
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        r = sdtest.run("save", "--core", "/dev/full", fx.pid)
        sdtest.assert_running(fx.pid)
    eq(r.rc, 2, r)
    contains(r.err, "cannot write /dev/full: no space left on device")


def test_bad_use():
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        # A symbolic link at the name is refused, never followed.
        victim = os.path.join(TMP, "victim")
        open(victim, "w").write("keep")
        link = os.path.join(TMP, "link.core")
        os.symlink(victim, link)
        r = sdtest.run("save", "--core", link, fx.pid)
        eq(r.rc, 2, r)
        contains(r.err, "symbolic link")
        eq(open(victim).read(), "keep")
        # Without --core, save is the shell's; --core needs a process.
        r = sdtest.run("save", os.path.join(TMP, "x.json"), fx.pid)
        eq(r.rc, 64, r)
        contains(r.err, "save --core FILE PID|NAME")
        r = sdtest.run("save", "--core", os.path.join(TMP, "x.core"))
        eq(r.rc, 64, r)
        contains(r.err, "missing argument (PID|NAME)")
        r = sdtest.run("save", "--core", "--compress", os.path.join(TMP, "x.core"), fx.pid)
        eq(r.rc, 64, r)
        sdtest.assert_running(fx.pid)
    r = sdtest.run("save", "--core", os.path.join(TMP, "y.core"), "999999999")
    eq(r.rc, 2, r)
    ok(not os.path.exists(os.path.join(TMP, "y.core")))


if __name__ == "__main__":
    try:
        sdtest.main(globals(), tools=(("gdb", "gdb"), ("eu-stack", "elfutils")))
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
