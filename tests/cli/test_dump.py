# SPDX-License-Identifier: MIT
# The one-shot dump against live fixtures: frames agree with eu-stack -i on
# every thread (C, C++, Rust, PIE, non-PIE, stripped, no CFI, deleted
# executable, deep recursion), the options work, and the JSON is as
# documented. The target is never left stopped.
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
from fixture import available, path_of, start  # noqa: E402
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


def ours(pid, *extra):
    r = sdtest.run("--format", "json", *extra, pid)
    ok(r.rc in (0, 1), "rc %d: %s" % (r.rc, r.err))
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


def test_variants_match_eu_stack():
    for v in ("fx-stacks-nopie", "fx-stacks-nodebug", "fx-stacks-stripped",
              "fx-stacks-bare", "fx-stacks-nocfi"):
        compare_with_eu_stack(v, "20", blocked=6)


def test_cxx_matches_eu_stack():
    compare_with_eu_stack("fx-cxx", blocked=6)


def test_rust_matches_eu_stack():
    """eu-stack cannot demangle Rust v0 names, so compare the physical
    frames by address, and check our names are demangled."""
    if not available("fx-rust"):
        print("  (no rustc: fx-rust not built)")
        return
    with start("fx-rust", blocked=4) as fx:
        r, _ = ours(fx.pid, "--no-inline")
        theirs = {t: [addr for addr, _ in fr] for t, fr in eu_stack_frames(fx.pid).items()}
        mine = {t["tid"]: [int(f["addr"], 16) for f in t["frames"]]
                for t in r.json()["threads"]}
        eq(mine, theirs)
        r = sdtest.run(fx.pid)
        for name in ("fx_rust::workers::park_inner", "fx_rust::workers::park_outer",
                     "fx_rust::parker_main", "std::thread::functions::park",
                     "fx_rust::workers::pump", "fx_rust::decoder_main",
                     "std::sys::backtrace::__rust_begin_short_backtrace"):
            contains(r.out, name)
        ok("_RNv" not in r.out and "$u7b$" not in r.out and "17h" not in r.out, r.out)


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
    if not shutil.which("unshare"):
        print("  (no unshare)")
        return
    import tempfile
    mnt = tempfile.mkdtemp()
    script = ('mount -t tmpfs none "$1" && cp "$2" "$1/fx-ns" && exec "$1/fx-ns"')
    p = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                          script, "sh", mnt, path_of("fx-stacks")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        if not line.startswith("ready"):
            print("  (cannot make a mount namespace here: %s)" % p.stderr.read(300))
            return
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
    if not os.path.isdir("/usr/lib/debug/.build-id"):
        print("  (no separate debug info installed)")
        return
    with start("fx-stacks", blocked=6) as fx:
        r = sdtest.run("--format", "json", fx.pid)
        alpha = thread_named(r.json(), "alpha")
        libc = [f for f in alpha["frames"] if f["module"] == "libc.so.6"]
        eq(libc[0]["function"], "__GI___libc_read")
        ok(libc[0]["inlined"])
        ok(libc[0]["file"].endswith("read.c") and libc[0]["line"] > 0, libc[0])


if __name__ == "__main__":
    sdtest.main(globals())
