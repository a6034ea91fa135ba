# SPDX-License-Identifier: MIT
# Hostile targets that once won: a FIFO where a mapped file was (seen
# through /proc/PID/root), an absolute symlink inside the target's root
# that points at a FIFO in ours, a /proc/PID/maps line over 5 KB (a path
# full of escaped newlines), ten thousand threads whose stack pointers sit
# 1 MiB deep (the stack copies of all threads are capped together), and a
# thread name holding a terminal escape in every view. Each finishes within
# the subprocess timeout with the right output, and the target runs on.
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
from fixture import path_of, start, wait_state  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402

# A dump that blocks (open() on a FIFO waits for a writer that never
# comes) is ended here and fails the test; a good one takes well under a
# second on these fixtures.
HANG = 60


def thread_named(doc, name):
    for t in doc["threads"]:
        if t["name"] == name:
            return t
    raise AssertionError("no thread %r in %r" % (name, [t["name"] for t in doc["threads"]]))


def timed_run(*args):
    t0 = time.monotonic()
    try:
        r = sdtest.run(*args, timeout=HANG)
    except subprocess.TimeoutExpired:
        raise AssertionError("stackdump %s did not finish in %d s (blocked?)" % (
            " ".join(str(a) for a in args), HANG))
    print("  stackdump %s: %.2f s" % (" ".join(str(a) for a in args), time.monotonic() - t0))
    return r


def check_alpha(r, module):
    """fx-stacks' alpha thread unwound and symbolized in full."""
    eq(r.rc, 0, r.err)
    alpha = thread_named(r.json(), "alpha")
    funcs = [f["function"] for f in alpha["frames"]]
    ok("alpha_middle" in funcs and funcs[-1] == "clone3", funcs)
    f = [x for x in alpha["frames"] if x["function"] == "alpha_middle"][0]
    eq(f["module"], module)
    ok(f["file"] and f["file"].endswith("fx-stacks.c"), f)


class Namespaced:
    """fx-stacks run from a tmpfs mounted in a private mount namespace:
    SETUP (sh, "$1" = that tmpfs, "$2" = the fixture, "$3" = EXTRA) copies
    it and execs it. nsenter() then changes the files under the running
    target, in its namespace only."""

    def __init__(self, setup, extra=""):
        sdtest.need_root("a private mount namespace")
        self.unshare = sdtest.tool("unshare", "util-linux")
        self.nsenter_bin = sdtest.tool("nsenter", "util-linux")
        self.mnt = tempfile.mkdtemp(prefix="sd-ns-")
        self.p = subprocess.Popen(
            [self.unshare, "--mount", "--propagation", "private", "sh", "-c",
             'mount -t tmpfs sd-hostile "$1" && ' + setup, "sh", self.mnt,
             path_of("fx-stacks"), extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if not line.startswith("ready "):
            self.close()
            raise AssertionError("the namespaced fixture did not start: %r %s" % (
                line, self.p.stderr.read(500)))
        self.pid = int(line.split()[1])
        eq(self.pid, self.p.pid)
        wait_state(self.pid, lambda st: sum(s.blocked for s in st.values()) >= 6)

    def nsenter(self, script, *args):
        p = subprocess.run([self.nsenter_bin, "-t", str(self.pid), "-m", "sh", "-c", script,
                            "sh", self.mnt] + list(args),
                           capture_output=True, text=True, timeout=60)
        eq(p.returncode, 0, "in the target's namespace: %s: %s" % (script, p.stderr))
        return p.stdout

    def close(self):
        self.p.kill()
        self.p.wait()
        self.p.stdout.close()
        self.p.stderr.close()
        shutil.rmtree(self.mnt, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def test_fifo_where_the_executable_was():
    """A second tmpfs over the directory puts a FIFO at the mapped path (the
    mapped file lives on below it, so maps does not say deleted): opening
    /proc/PID/root/PATH would wait for a writer forever."""
    with Namespaced('cp "$2" "$1/fx-ns" && exec "$1/fx-ns" 20') as ns:
        ns.nsenter('mount -t tmpfs sd-fifo "$1" && mkfifo "$1/fx-ns"')
        eq(ns.nsenter('test -p "$1/fx-ns" && echo fifo').strip(), "fifo")
        with open("/proc/%d/maps" % ns.pid) as f:
            maps = f.read()
        contains(maps, "%s/fx-ns\n" % ns.mnt)
        r = timed_run("--format", "json", ns.pid)
        check_alpha(r, "fx-ns")
        sdtest.assert_running(ns.pid)
        # The text view and the other commands open the same files.
        r = timed_run("locks", ns.pid)
        eq(r.rc, 0, r.err)
        sdtest.assert_running(ns.pid)


def test_absolute_symlink_resolves_in_the_targets_root():
    """Inside the target's root, a directory of the mapped path becomes an
    absolute symlink to HOST: in our root HOST holds a FIFO named like the
    executable, in the target's an empty tmpfs hides it. Followed from our
    root (a plain open of /proc/PID/root/...) the FIFO would block; resolved
    in the target's root it is simply not there, and map_files serves."""
    host = tempfile.mkdtemp(prefix="sd-host-")
    try:
        os.mkfifo(os.path.join(host, "fx-ns"))
        setup = ('mkdir "$1/real" && cp "$2" "$1/real/fx-ns" && '
                 'mount -t tmpfs sd-hide "$3" && exec "$1/real/fx-ns" 20')
        with Namespaced(setup, host) as ns:
            ns.nsenter('mount -t tmpfs sd-link "$1" && ln -s "$2" "$1/real"', host)
            with open("/proc/%d/maps" % ns.pid) as f:
                contains(f.read(), "%s/real/fx-ns\n" % ns.mnt)
            # Through /proc/PID/root the link leads to our FIFO.
            ok(os.path.islink("/proc/%d/root%s/real" % (ns.pid, ns.mnt)))
            eq(os.readlink("/proc/%d/root%s/real" % (ns.pid, ns.mnt)), host)
            r = timed_run("--format", "json", ns.pid)
            check_alpha(r, "fx-ns")
            sdtest.assert_running(ns.pid)
    finally:
        shutil.rmtree(host, ignore_errors=True)


def test_5k_maps_line():
    """The executable's path holds 1,393 newlines, which maps escapes as
    \\012 (4 bytes each): its maps lines are over 5 KB."""
    top = tempfile.mkdtemp(prefix="sd-nl-")
    try:
        d = top
        for i in range(7):
            d = os.path.join(d, "\n" * 199 + str(i))
        os.makedirs(d)
        exe = os.path.join(d, "fx-nl")
        shutil.copy(path_of("fx-stacks"), exe)
        with start(exe, "20", blocked=6) as fx:
            with open("/proc/%d/maps" % fx.pid) as f:
                longest = max(len(line) for line in f.read().splitlines())
            ok(longest > 5000, "the longest maps line has only %d bytes" % longest)
            r = timed_run("--format", "json", fx.pid)
            check_alpha(r, "fx-nl")
            # The module's path is shown as maps gives it: escaped, one line.
            r = timed_run(fx.pid)
            eq(r.rc, 0, r.err)
            contains(r.out, "alpha_middle (fx-nl) at fx-stacks.c:")
            sdtest.assert_running(fx.pid)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_stack_total_cap_10k_threads_1m_deep():
    """10,000 threads, each with its stack pointer 1 MiB below the end of
    its stack: copying every window whole would take 10 GiB. The cap (256
    MiB by default) cuts each to an even share and says so."""
    n = 10000
    # n + 1: main sleeps in pause(2) too, and a thread that has said it
    # arrived may not have reached its read(2) yet.
    with start("fx-hugestack", n, 1024, blocked=n + 1, timeout=300) as fx, \
            tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        # wait4 gives this very child's peak RSS.
        env = dict(os.environ, NO_COLOR="1")
        env.pop("DEBUGINFOD_URLS", None)
        p = subprocess.Popen([sdtest.binary(), "--timeout", "60s", str(fx.pid)], stdout=out,
                             stderr=err, env=env)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        r = sdtest.Result(p.returncode, out.read().decode("utf-8", "replace"),
                          err.read().decode("utf-8", "replace"))
        eq(r.rc, 0, r.err)
        contains(r.out, "PID %d (fx-hugestack) %d threads" % (fx.pid, n + 1))
        contains(r.out, "note: %d threads got a shorter stack copy: all copies together "
                 "are capped at 256 MiB (--stack-total)" % n)
        eq(r.out.count("-- unwinding stopped: stack window exhausted at "), n)
        eq(r.out.count("cut to share the 256 MiB all threads' copies may take "
                       "(raise --stack-total)"), n)
        eq(r.out.count(" deep_wait (fx-hugestack) at fx-hugestack.c:"), n)
        ok("read after the thaw" not in r.out, "a cut window was patched from live memory")
        # The copies stayed within the cap: stackdump's peak RSS (about 300
        # MiB here; more under ASan) is far below the 10 GiB the windows
        # add up to.
        print("  stackdump peak RSS: %d MiB" % (usage.ru_maxrss >> 10))
        ok(usage.ru_maxrss < 2 << 20, "peak RSS %d MiB" % (usage.ru_maxrss >> 10))
        sdtest.assert_running(fx.pid)


def test_stack_total_forced_low():
    """With the cap forced to 64K on fx-stacks, the deep recursion thread is
    cut (all-thread freeze and per-thread mode alike); a larger cap leaves
    it whole."""
    with start("fx-stacks", "5000", blocked=6) as fx:
        for extra in ([], ["--per-thread"]):
            r = sdtest.run("--format", "json", "--max-frames", "0", "--stack-total", "64K",
                           *extra, fx.pid)
            eq(r.rc, 0, r.err)
            doc = r.json()
            rec = thread_named(doc, "recurse")
            contains(rec["unwind_stop"], "cut to share the 64 KiB all threads' copies may take")
            alpha = thread_named(doc, "alpha")
            eq(alpha["unwind_stop"], None)
            ok("alpha_middle" in [f["function"] for f in alpha["frames"]], alpha)
            r = sdtest.run("--stack-total", "64K", *extra, fx.pid)
            # recurse at least (how many others depends on the capture kind)
            sdtest.matches(r.out, r"^  note: [1-6] threads? got a shorter stack copy: all copies "
                           r"together are capped at 64 KiB \(--stack-total\)$")
        r = sdtest.run("--format", "json", "--max-frames", "0", "--stack-total", "64M", fx.pid)
        rec = thread_named(r.json(), "recurse")
        eq(rec["unwind_stop"], None)
        eq([f["function"] for f in rec["frames"]].count("recurse_down"), 5001)
        for bad in ("0", "1K", "100G", "lots"):
            r = sdtest.run("--stack-total", bad, fx.pid)
            eq(r.rc, 64, r)
            contains(r.err, "invalid --stack-total: %s" % bad)
        sdtest.assert_running(fx.pid)


def test_thread_name_with_terminal_escapes_in_every_view():
    """fx-hostile's thread "evil-\\e[31m": no view writes the raw escape."""
    with start("fx-hostile", "1000", blocked=7) as fx:
        tid = fx.tid("evil-\x1b[31m")
        views = {
            "dump": sdtest.run(fx.pid),
            "threads": sdtest.run("-c", "threads", fx.pid),
            "locks": sdtest.run("locks", fx.pid),
            "profile": sdtest.run("profile", "-c", "2", "-r", "50", "-q", fx.pid),
            "folded": sdtest.run("profile", "-c", "2", "-r", "50", "--format", "folded", "-q",
                                 fx.pid),
        }
        for view, r in views.items():
            eq(r.rc, 0, "%s: %r" % (view, r))
            ok("\x1b" not in r.out and "\x1b" not in r.err, "raw escape in %s: %r" % (view, r))
        contains(views["dump"].out, 'Thread %d "evil-\\e[31m"' % tid)
        contains(views["threads"].out, "%d  evil-\\e[31m  S" % tid)
        contains(views["profile"].out, "evil-\\e[31m (%d)" % tid)
        # JSON keeps the name itself, escaped as JSON.
        doc = json.loads(sdtest.run("--format", "json", fx.pid).out)
        eq(thread_named(doc, "evil-\x1b[31m")["tid"], tid)
        sdtest.assert_running(fx.pid)


if __name__ == "__main__":
    sdtest.main(globals())
