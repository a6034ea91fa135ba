# SPDX-License-Identifier: MIT
# The one-shot dump against live fixtures: frames agree with eu-stack -i on
# every thread (C, C++, Rust, PIE, non-PIE, stripped, no CFI, deleted
# executable, deep recursion), and, since eu-stack asks libdw for names and
# inline frames as we do, the fixtures' own frames (names, inline frames,
# lines) agree with gdb too; the options work, and the JSON is as
# documented. The target is never left stopped.
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
from fixture import path_of, start  # noqa: E402
from sdtest import contains, eq, matches, ok  # noqa: E402

NTHREADS = {"fx-stacks": 6, "fx-cxx": 6}


def eu_stack_frames(pid, *opts):
    """{tid: [(addr, function or None), ...]} from eu-stack OPTS -p PID."""
    p = subprocess.run(["eu-stack", *opts, "-p", str(pid)], capture_output=True,
                       text=True, timeout=120)
    out, tid = {}, None
    for line in p.stdout.splitlines():
        m = re.match(r"TID (\d+):", line)
        if m:
            tid = int(m.group(1))
            out[tid] = []
            continue
        m = re.match(r"#\d+\s+(0x[0-9a-f]+)\s*(.*)$", line)
        if m and tid is not None:
            out[tid].append((int(m.group(1), 16), m.group(2).strip() or None))
    return out


# Where eu-stack shows the symbol-table name of a function whose DWARF
# name differs (glibc's assembly entry clone3, symbol __clone3), we show
# the DWARF name, as gdb does.
EU_SYMTAB_NAMES = {"__clone3": "clone3"}


def eu_stack(pid):
    """{tid: [function or None, ...]} from eu-stack -i -p PID."""
    return {t: [EU_SYMTAB_NAMES.get(name, name) for _, name in fr]
            for t, fr in eu_stack_frames(pid, "-i").items()}


def strip_params(name):
    """NAME without a trailing parameter list, " const" and "+0xOFFSET"
    (our C++ names are demangled in full; gdb shows the DWARF name)."""
    name = re.sub(r"\+0x[0-9a-f]+$", "", name.strip())
    name = re.sub(r" const$", "", name)
    if name.endswith(")"):
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                # "operator()" keeps its own parentheses
                if not name[:i].endswith("operator"):
                    name = name[:i]
                break
    return name.rstrip()


def gdb_name(text):
    """The function name of a gdb frame description "NAME (ARGS)" (with
    "set print frame-arguments none" the arguments hold no parentheses)."""
    i = text.rfind(" (")
    return text[:i] if i > 0 else text.strip()


def gdb_frames(pid):
    """{tid: [(function, source file basename, line), ...]} from gdb's
    "thread apply all bt" (its own DWARF reader, not libdw); frames without
    a source line have file and line None."""
    gdb = sdtest.tool("gdb", "gdb")
    p = subprocess.run([gdb, "-q", "-nx", "-batch", "-p", str(pid), "-ex", "set pagination off",
                        "-ex", "set print frame-arguments none", "-ex", "thread apply all bt"],
                       capture_output=True, text=True, timeout=300)
    out, tid = {}, None
    for line in p.stdout.splitlines():
        m = re.match(r"Thread \d+ \(.*\(LWP (\d+)\)", line)
        if m:
            tid = int(m.group(1))
            out[tid] = []
            continue
        m = re.match(r"#\d+\s+(?:0x[0-9a-f]+ in )?(.*?)(?: at (\S+):(\d+))?(?: from \S+)?$", line)
        if m and tid is not None and not m.group(1).startswith("<"):
            out[tid].append((gdb_name(m.group(1)).strip(),
                             os.path.basename(m.group(2)) if m.group(2) else None,
                             int(m.group(3)) if m.group(3) else None))
    ok(out, "gdb showed no thread: %s" % p.stderr[-2000:])
    return out


def own_frames(frames, source):
    """The frames of SOURCE (the fixture's own file)."""
    return [f for f in frames if f[1] == source]


def same_function(ours_name, gdb):
    """gdb names a lambda's call operator "operator()", where our demangled
    name is qualified by its enclosing function: the ends must agree."""
    a = strip_params(ours_name)
    return a == gdb or a.endswith("::" + gdb)


def compare_with_gdb(pid, doc, source):
    """Every thread's frames in the fixture's own source file, inline ones
    included, have the same names and lines in gdb and in our JSON DOC."""
    theirs = gdb_frames(pid)
    sdtest.assert_running(pid)
    mine = {t["tid"]: [(f["function"] or "", os.path.basename(f["file"]) if f["file"] else None,
                        f["line"]) for f in t["frames"]] for t in doc["threads"]}
    eq(sorted(mine), sorted(theirs), "thread sets differ from gdb's")
    compared = 0
    for tid in theirs:
        a, b = own_frames(mine[tid], source), own_frames(theirs[tid], source)
        why = "thread %d: frames in %s differ from gdb's\nours: %r\ngdb:  %r" % (
            tid, source, a, b)
        eq(len(a), len(b), why)
        for x, y in zip(a, b):
            ok(same_function(x[0], y[0]) and x[1:] == y[1:], why)
        compared += len(a)
    ok(compared >= len(theirs), "only %d frames of %s compared" % (compared, source))


def ours(pid, *extra):
    r = sdtest.run("--format", "json", *extra, pid)
    eq(r.rc, 0, r.err)
    return r, {t["tid"]: [f["function"] for f in t["frames"]] for t in r.json()["threads"]}


def compare_with_eu_stack(fixture, *args, blocked=0, normalize=None):
    with start(fixture, *args, blocked=blocked) as fx:
        r, mine = ours(fx.pid)
        sdtest.assert_running(fx.pid)
        theirs = eu_stack(fx.pid)
        sdtest.assert_running(fx.pid)
        eq(sorted(mine), sorted(theirs), "thread sets differ")
        for tid in theirs:
            a, b = mine[tid], theirs[tid]
            if normalize:
                a = [normalize(x) for x in a]
                b = [normalize(x) for x in b]
            eq(a, b, "frames of thread %d differ\nours:  %r\ntheirs: %r" % (tid, a, b))
        return r


def test_fx_stacks_matches_eu_stack():
    r = compare_with_eu_stack("fx-stacks", "50", blocked=6)
    j = r.json()
    names = {t["name"] for t in j["threads"]}
    ok({"alpha", "beta", "inliner", "recurse", "sighandler"} <= names, names)


def test_fx_stacks_own_frames_match_gdb():
    with start("fx-stacks", "50", blocked=6) as fx:
        r, _ = ours(fx.pid)
        compare_with_gdb(fx.pid, r.json(), "fx-stacks.c")
        inl = [f for t in r.json()["threads"] for f in t["frames"] if f["inlined"]
               and f["file"] and f["file"].endswith("fx-stacks.c")]
        ok(inl, "no inline frame of fx-stacks.c was compared")


def test_fx_cxx_own_frames_match_gdb():
    with start("fx-cxx", blocked=6) as fx:
        r, _ = ours(fx.pid)
        compare_with_gdb(fx.pid, r.json(), "fx-cxx.cpp")


def test_variants_match_eu_stack():
    for v in ("fx-stacks-nopie", "fx-stacks-nodebug", "fx-stacks-stripped",
              "fx-stacks-bare", "fx-stacks-nocfi"):
        compare_with_eu_stack(v, "20", blocked=6)


def test_cxx_matches_eu_stack():
    compare_with_eu_stack("fx-cxx", blocked=6)


def test_rust_matches_eu_stack():
    """eu-stack cannot demangle Rust v0 names, so compare the physical
    frames by address; the fixture's own functions are named (from DWARF).
    Names from std depend on the toolchain's version; the fixture's do
    not."""
    ok(os.access(path_of("fx-rust"), os.X_OK),
       "fx-rust was not built: CMake found no rustc (run .ci/deps)")
    with start("fx-rust", blocked=4) as fx:
        r, _ = ours(fx.pid, "--no-inline")
        theirs = {t: [addr for addr, _ in fr] for t, fr in eu_stack_frames(fx.pid).items()}
        mine = {t["tid"]: [int(f["addr"], 16) for f in t["frames"]]
                for t in r.json()["threads"]}
        eq(mine, theirs)
        # Names in full, every frame: text elides generic arguments and
        # folds runs of std frames by default.
        r = sdtest.run("--full-names", "--all-frames", fx.pid)
        eq(r.rc, 0, r.err)
        for name in (r"fx_rust::workers::park_inner", r"fx_rust::workers::park_outer",
                     r"fx_rust::parker_main", r"fx_rust::workers::pump\b",
                     r"fx_rust::reader_main", r"<?fx_rust::workers::Decoder<u64>>?::wait_for_input",
                     r"<?fx_rust::workers::Decoder<u64>>?::run", r"fx_rust::decoder_main",
                     r"fx_rust::main\b", r"std::thread::(functions::)?park\b",
                     r"std::sys(_common)?::backtrace::__rust_begin_short_backtrace"):
            sdtest.matches(r.out, r"#\d+ +0x[0-9a-f]+ (\[inlined\] )?" + name)
        ok(not re.search(r"_RN|_ZN|\$u7b\$|17h[0-9a-f]{16}", r.out), r.out)


def test_rust_v0_names_demangled():
    """The fixture is built with -C symbol-mangling-version=v0 whatever the
    toolchain's default: check it holds v0 symbols, then, with its DWARF
    stripped so that every name comes from the symbol table, that our v0
    demangling gives the names (generic arguments included) and leaves
    none mangled."""
    ok(os.access(path_of("fx-rust"), os.X_OK),
       "fx-rust was not built: CMake found no rustc (run .ci/deps)")
    nm = sdtest.tool("nm", "binutils")
    objcopy = sdtest.tool("objcopy", "binutils")
    syms = subprocess.run([nm, path_of("fx-rust")], capture_output=True, text=True,
                          timeout=60).stdout
    ok(re.search(r" _RNvNtCs\w+_7fx_rust7workers10park_inner$", syms, re.M),
       "fx-rust's own functions are not v0-mangled")
    import tempfile
    d = tempfile.mkdtemp()
    try:
        exe = os.path.join(d, "fx-rust-nodwarf")
        subprocess.run([objcopy, "--strip-debug", path_of("fx-rust"), exe], check=True,
                       timeout=120)
        with start(exe, blocked=4) as fx:
            r = sdtest.run("--full-names", "--all-frames", fx.pid)
            eq(r.rc, 0, r.err)
            for name in ("fx_rust::workers::park_inner+0x", "fx_rust::parker_main+0x",
                         "fx_rust::workers::pump::<std::fs::File>+0x",
                         "<fx_rust::workers::Decoder<u64>>::wait_for_input",
                         "<fx_rust::workers::Decoder<u64>>::run", "fx_rust::decoder_main+0x"):
                contains(r.out, name)
            ok(" at fx-rust.rs:" not in r.out, "DWARF was not stripped")
            ok(not re.search(r"_RN|_ZN|\$u7b\$|17h[0-9a-f]{16}", r.out), r.out)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def thread_named(j, name):
    for t in j["threads"]:
        if t["name"] == name:
            return t
    raise AssertionError("no thread %r in %r" % (name, [t["name"] for t in j["threads"]]))


def test_inline_frames_and_source():
    with start("fx-stacks", blocked=6) as fx:
        r = sdtest.run("--format", "json", fx.pid)
        t = thread_named(r.json(), "inliner")
        funcs = [(f["function"], f["inlined"]) for f in t["frames"]]
        i = funcs.index(("inline_leaf", True))
        eq(funcs[i + 1], ("inline_mid", True))
        eq(funcs[i + 2], ("inliner_outer", False))
        f = t["frames"][i]
        ok(f["file"].endswith("fx-stacks.c") and f["line"] > 0, f)
        eq(t["frames"][i]["addr"], t["frames"][i + 2]["addr"])
        # --no-inline drops them
        r = sdtest.run("--format", "json", "--no-inline", fx.pid)
        t = thread_named(r.json(), "inliner")
        funcs = [f["function"] for f in t["frames"]]
        ok("inline_leaf" not in funcs and "inliner_outer" in funcs, funcs)
        # --no-source drops file and line
        r = sdtest.run("--format", "json", "--no-source", fx.pid)
        t = thread_named(r.json(), "alpha")
        ok(all(f["file"] is None for f in t["frames"]), t["frames"])
        # text view shows [inlined] and file:line
        r = sdtest.run(fx.pid)
        matches(r.out, r"\[inlined\] inline_leaf \(fx-stacks\) at fx-stacks\.c:\d+")
        sdtest.assert_running(fx.pid)


def test_json_schema():
    with start("fx-stacks", blocked=6) as fx:
        r = sdtest.run("--format", "json", fx.pid)
        eq(r.rc, 0, r.err)
        j = r.json()
        for k in ("pid", "exe", "time", "pause_us", "threads"):
            ok(k in j, "missing %s" % k)
        eq(j["pid"], fx.pid)
        ok(j["exe"].endswith("fx-stacks"), j["exe"])
        ok(j["pause_us"] >= 0)
        for t in j["threads"]:
            for k in ("tid", "name", "state", "syscall", "frames", "wait"):
                ok(k in t, "missing thread.%s" % k)
            for f in t["frames"]:
                for k in ("addr", "module", "build_id", "offset", "function", "file", "line",
                          "inlined"):
                    ok(k in f, "missing frame.%s" % k)
        alpha = thread_named(j, "alpha")
        eq(alpha["syscall"], "read")
        eq(alpha["state"], "S")
        f = [x for x in alpha["frames"] if x["function"] == "alpha_inner"][0]
        eq(f["module"], "fx-stacks")
        ok(re.fullmatch(r"[0-9a-f]{40}", f["build_id"] or ""), f["build_id"])


def test_signal_frame():
    with start("fx-stacks", blocked=6) as fx:
        r = sdtest.run("--format", "json", fx.pid)
        t = thread_named(r.json(), "sighandler")
        funcs = [f["function"] for f in t["frames"]]
        i = funcs.index("on_sigusr1")
        eq(funcs[i + 1], "__restore_rt")
        ok(t["frames"][i + 1].get("signal_frame"), t["frames"][i + 1])
        eq(funcs[i + 2], "__pthread_kill_implementation")
        ok("sig_raise" in funcs and "sighandler_main" in funcs, funcs)


def test_deep_recursion_5000():
    with start("fx-stacks", "5000", blocked=6) as fx:
        r = sdtest.run("--format", "json", "--max-frames", "0", "--tid",
                       fx.tid("recurse"), fx.pid)
        eq(r.rc, 0, r.err)
        t = r.json()["threads"][0]
        eq(t["name"], "recurse")
        funcs = [f["function"] for f in t["frames"]]
        eq(funcs.count("recurse_down"), 5001)
        eq(funcs[-2:], ["start_thread", "clone3"])
        eq(t["unwind_stop"], None)
        # the default limit of 256 frames stops early and says so
        r = sdtest.run("--format", "json", "--tid", fx.tid("recurse"), fx.pid)
        t = r.json()["threads"][0]
        eq(len(t["frames"]), 256)
        contains(t["unwind_stop"], "max-frames")


def test_thread_selection():
    with start("fx-stacks", blocked=6) as fx:
        r = sdtest.run("--format", "json", "--name", "al*", fx.pid)
        eq([t["name"] for t in r.json()["threads"]], ["alpha"])
        tids = "%d,%d" % (fx.tid("beta"), fx.tid("recurse"))
        r = sdtest.run("--format", "json", "--tid", tids, fx.pid)
        eq(sorted(t["name"] for t in r.json()["threads"]), ["beta", "recurse"])
        r = sdtest.run("--name", "nosuch*", fx.pid)
        eq(r.rc, 2)
        contains(r.err, "no thread")


def test_per_thread_mode():
    with start("fx-stacks", blocked=6) as fx:
        r = sdtest.run("--format", "json", "--per-thread", fx.pid)
        eq(r.rc, 0, r.err)
        j = r.json()
        ok(j["per_thread"])
        eq(len(j["threads"]), 6)
        alpha = thread_named(j, "alpha")
        ok("alpha_outer" in [f["function"] for f in alpha["frames"]])
        sdtest.assert_running(fx.pid)


def test_verbose_timings():
    with start("fx-stacks", blocked=6) as fx:
        r = sdtest.run("-v", fx.pid)
        eq(r.rc, 0, r.err)
        matches(r.out, r"^PID \d+ \(fx-stacks\) 6 threads, paused [\d.]+ ms")
        matches(r.out, r"capture [\d.]+ ms .* unwind [\d.]+ ms, symbolize [\d.]+ ms")
        matches(r.out, r"symbol cache: \d+ lookups, \d+ hits")


def test_dump_runs_at_a_raised_priority():
    # On a saturated host a dump waits behind the server's threads for
    # the CPU it needs (MariaDB under sysbench: 60 ms of CPU took 0.2-0.3
    # s). From the first thread seized to the last detached and the
    # symbols read, the one-shot dump runs at nice -10, and gives back the
    # priority it was started with afterwards. Seen by strace from
    # outside: the calls and their order.
    with start("fx-stacks", blocked=6) as fx:
        p = sdtest.strace(["nice", "-n", "3"], "setpriority,ptrace", fx.pid)
        sdtest.assert_running(fx.pid)
    eq(p.returncode, 0, p.stderr[-2000:])
    contains(p.stdout, "Thread %d" % fx.pid)
    calls = [l for l in p.stderr.splitlines() if "setpriority(" in l or "PTRACE_" in l]
    raised = [i for i, l in enumerate(calls) if re.search(r"setpriority\(PRIO_PROCESS, 0, -10\)\s+= 0", l)]
    back = [i for i, l in enumerate(calls) if re.search(r"setpriority\(PRIO_PROCESS, 0, 3\)\s+= 0", l)]
    seize = [i for i, l in enumerate(calls) if "PTRACE_SEIZE" in l]
    detach = [i for i, l in enumerate(calls) if "PTRACE_DETACH" in l]
    ok(raised and back and seize and detach, "\n".join(calls[:40]))
    ok(raised[0] < seize[0], "raised only after the first seize:\n" + "\n".join(calls[:40]))
    ok(back[-1] > detach[-1], "given back before the last detach:\n" + "\n".join(calls[-40:]))


def test_several_pids():
    with start("fx-stacks", blocked=6) as a, start("fx-stacks-nopie", blocked=6) as b:
        r = sdtest.run("--format", "json", a.pid, b.pid)
        eq(r.rc, 0, r.err)
        j = r.json()
        eq([x["pid"] for x in j], [a.pid, b.pid])
        r = sdtest.run(a.pid, b.pid)
        eq(r.out.count("\nPID ") + r.out.startswith("PID "), 2)


def test_deleted_executable():
    """The executable is removed after start: frames still resolve through
    /proc/PID/map_files."""
    import tempfile
    d = tempfile.mkdtemp()
    try:
        exe = os.path.join(d, "fx-stacks-copy")
        shutil.copy(path_of("fx-stacks"), exe)
        with start(exe, blocked=6) as fx:
            os.unlink(exe)
            r = sdtest.run("--format", "json", fx.pid)
            eq(r.rc, 0, r.err)
            alpha = thread_named(r.json(), "alpha")
            funcs = [f["function"] for f in alpha["frames"]]
            ok("alpha_middle" in funcs, funcs)
            eq([f["module"] for f in alpha["frames"] if f["function"] == "alpha_middle"],
               ["fx-stacks-copy"])
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_stopped_process_stays_stopped():
    import signal
    import time
    with start("fx-stacks", blocked=6) as fx:
        os.kill(fx.pid, signal.SIGSTOP)
        for _ in range(200):
            if set(sdtest.state_of(fx.pid).values()) == {"T"}:
                break
            time.sleep(0.01)
        r = sdtest.run(fx.pid)
        eq(r.rc, 0, r.err)
        contains(r.out, "alpha_inner")
        contains(r.out, "process is stopped")
        time.sleep(0.2)
        eq(set(sdtest.state_of(fx.pid).values()), {"T"}, "process no longer stopped")
        os.kill(fx.pid, signal.SIGCONT)
        time.sleep(0.2)
        sdtest.assert_running(fx.pid)



def test_other_mount_namespace():
    """The executable exists only inside the target's mount namespace: its
    file is opened through /proc/PID/root."""
    sdtest.need_root("a private mount namespace")
    sdtest.tool("unshare", "util-linux")
    import tempfile
    mnt = tempfile.mkdtemp()
    script = ('mount -t tmpfs none "$1" && cp "$2" "$1/fx-ns" && exec "$1/fx-ns"')
    p = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                          script, "sh", mnt, path_of("fx-stacks")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        if not line.startswith("ready"):
            raise AssertionError("cannot make a mount namespace here: %s" % p.stderr.read(300))
        pid = int(line.split()[1])
        ok(not os.path.exists(os.path.join(mnt, "fx-ns")), "tmpfs leaked out")
        import time
        for _ in range(500):
            st = sdtest.state_of(pid)
            if len(st) == 6:
                break
            time.sleep(0.01)
        time.sleep(0.2)
        r = sdtest.run("--format", "json", pid)
        eq(r.rc, 0, r.err)
        alpha = thread_named(r.json(), "alpha")
        funcs = [f["function"] for f in alpha["frames"]]
        ok("alpha_middle" in funcs, funcs)
        f = [x for x in alpha["frames"] if x["function"] == "alpha_middle"][0]
        eq(f["module"], "fx-ns")
        ok(f["file"].endswith("fx-stacks.c"), f)
    finally:
        p.kill()
        p.wait()
        os.rmdir(mnt)


def test_separate_debug_info_by_build_id():
    """libc.so.6 has no .symtab or DWARF: its function names, inline frames
    and lines come from libc6-dbg's file found by build-id."""
    ok(os.path.isdir("/usr/lib/debug/.build-id"),
       "no separate debug info installed: apt-get install libc6-dbg (.ci/deps does)")
    with start("fx-stacks", blocked=6) as fx:
        r = sdtest.run("--format", "json", fx.pid)
        alpha = thread_named(r.json(), "alpha")
        libc = [f for f in alpha["frames"] if f["module"] == "libc.so.6"]
        eq(libc[0]["function"], "__GI___libc_read")
        ok(libc[0]["inlined"])
        ok(libc[0]["file"].endswith("read.c") and libc[0]["line"] > 0, libc[0])


if __name__ == "__main__":
    sdtest.main(globals())
