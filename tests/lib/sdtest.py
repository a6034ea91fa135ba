# SPDX-License-Identifier: MIT
# A tiny test runner for the CLI tests: runs every test_* function of the
# calling module, prints one line per test and the closing line
# "N passed, N failed, N skipped (N assertions)", and exits non-zero on any
# failure. A test that cannot run fails; it skips (exit 77 when nothing
# ran) only when STACKDUMP_TEST_UNPRIVILEGED=1 asks for it and what it
# lacks is a privilege, never a tool.
"""Helpers to run the real stackdump binary in tests.

    import sdtest
    def test_something():
        r = sdtest.run("123")
        sdtest.eq(r.rc, 0)
    if __name__ == "__main__":
        sdtest.main(globals())
"""

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

SKIP = 77

# The one way to allow skips: a person running the suite without root on
# purpose sets it. CI sets nothing, so there every test runs or fails.
UNPRIVILEGED = os.environ.get("STACKDUMP_TEST_UNPRIVILEGED") == "1"

ASSERTIONS = 0

# Every test sees the debug files as they are on the machine: a debug
# cache the machine's user made (~/.cache/stackdump/debug) would outlive
# a test that hides them. test_debugcache.py names its own caches.
os.environ["STACKDUMP_DEBUG_CACHE"] = "off"


class Skipped(Exception):
    """Raised by need() when the run asked for skips and a privilege is
    missing."""


def binary():
    """Path of the stackdump binary under test ($STACKDUMP or build/)."""
    b = os.environ.get("STACKDUMP")
    if b:
        return b
    for cand in ("build/stackdump", "build-asan/stackdump"):
        p = os.path.join(SRC, cand)
        if os.path.exists(p):
            return p
    raise RuntimeError("stackdump binary not found: set STACKDUMP")


class Result:
    def __init__(self, rc, out, err):
        self.rc = rc
        self.out = out
        self.err = err

    def json(self):
        return json.loads(self.out)

    def __repr__(self):
        return "Result(rc=%d, out=%r, err=%r)" % (self.rc, self.out[:2000], self.err[:2000])


def run(*args, input=None, timeout=120, env=None):
    """Run stackdump with ARGS; returns Result. Never hangs past TIMEOUT."""
    e = dict(os.environ)
    e.pop("DEBUGINFOD_URLS", None)
    e["NO_COLOR"] = "1"
    if env:
        e.update(env)
    p = subprocess.run([binary()] + [str(a) for a in args], input=input,
                       capture_output=True, text=True, timeout=timeout, env=e)
    return Result(p.returncode, p.stdout, p.stderr)


def eq(a, b, msg=""):
    global ASSERTIONS
    ASSERTIONS += 1
    if a != b:
        raise AssertionError("%r != %r %s" % (a, b, msg))


def ok(cond, msg=""):
    global ASSERTIONS
    ASSERTIONS += 1
    if not cond:
        raise AssertionError(msg or "condition failed")


def contains(haystack, needle, msg=""):
    global ASSERTIONS
    ASSERTIONS += 1
    if needle not in haystack:
        raise AssertionError("%r not found in %r %s" % (needle, haystack[:3000], msg))


def matches(text, pattern, msg=""):
    global ASSERTIONS
    ASSERTIONS += 1
    m = re.search(pattern, text, re.M)
    if not m:
        raise AssertionError("/%s/ not found in %r %s" % (pattern, text[:3000], msg))
    return m


def need(cond, why):
    """A privilege the test needs (root, ptrace rights, a mount). Without
    it the test fails, unless STACKDUMP_TEST_UNPRIVILEGED=1 asks to skip."""
    if cond:
        return
    if UNPRIVILEGED:
        raise Skipped(why)
    raise AssertionError("cannot run: %s (to skip instead, run the suite with "
                         "STACKDUMP_TEST_UNPRIVILEGED=1)" % why)


def need_root(what):
    need(os.geteuid() == 0, "%s needs root" % what)


def tool(name, package, *alternatives):
    """Path of a tool the test uses. A missing tool always fails: .ci/deps
    installs PACKAGE."""
    for n in (name,) + alternatives:
        p = shutil.which(n)
        if p:
            return p
    raise AssertionError("%s is not installed (apt-get install %s, or run .ci/deps)"
                         % (name, package))


def can_ptrace():
    """Whether we may trace processes we did not start, decided from our
    credentials (never from the output of the binary under test): root,
    CAP_SYS_PTRACE, or Yama's ptrace_scope 0."""
    if os.geteuid() == 0:
        return True
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:") and int(line.split()[1], 16) & (1 << 19):
                    return True
    except OSError:
        pass
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            return f.read().strip() == "0"
    except OSError:
        return True  # no Yama: same user is enough


def state_of(pid):
    """State letters of every thread of PID ({tid: letter})."""
    out = {}
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                    s = f.read()
                out[int(t)] = s[s.rindex(")") + 2]
            except OSError:
                pass
    except OSError:
        pass
    return out


def assert_running(pid):
    """No thread of PID is left stopped (t or T)."""
    st = state_of(pid)
    bad = {t: s for t, s in st.items() if s in "tT"}
    if bad:
        raise AssertionError("threads left stopped: %r" % bad)


def perf_fds(pid):
    """How many perf event descriptors process PID holds (0 when gone)."""
    n = 0
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                if os.readlink("/proc/%d/fd/%s" % (pid, fd)) == "anon_inode:[perf_event]":
                    n += 1
            except OSError:
                pass
    except OSError:
        pass
    return n


def strace(args, trace, *stackdump_args, timeout=120):
    """Run ARGS (a prefix such as ["nice", "-n", "3"], or []) then
    stackdump with STACKDUMP_ARGS under `strace -f -qq -e trace=TRACE`:
    the CompletedProcess, strace's lines in its stderr. LeakSanitizer
    cannot work under ptrace (a sanitized build): its leak check is left
    to the other tests."""
    if not shutil.which("strace"):
        raise AssertionError("strace is needed (apt-get install strace)")
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    return subprocess.run(list(args) + ["strace", "-f", "-qq", "-e", "trace=" + trace, binary()] +
                          [str(a) for a in stackdump_args],
                          capture_output=True, text=True, timeout=timeout, env=env)


def main(ns, needs_ptrace=True, tools=()):
    """Runs the test_* functions of NS (those whose names contain one of
    the command-line arguments, if any) and exits: 0 when all passed, 1 on
    a failure, 77 when the run allowed skips and nothing could run.
    TOOLS: (command, Debian package) pairs the whole file needs; a missing
    one fails the file."""
    only = sys.argv[1:]
    tests = [(n, f) for n, f in sorted(ns.items()) if n.startswith("test_") and callable(f)]
    if only:
        tests = [(n, f) for n, f in tests if any(o in n for o in only)]
    if needs_ptrace and UNPRIVILEGED and not can_ptrace():
        print("SKIP: ptrace is not permitted here (need root or CAP_SYS_PTRACE)")
        print("0 passed, 0 failed, %d skipped (0 assertions)" % len(tests))
        sys.exit(SKIP)
    for name, package in tools:
        try:
            tool(name, package)
        except AssertionError as e:
            print("FAIL %s" % e)
            print("0 passed, 1 failed, 0 skipped (0 assertions)")
            sys.exit(1)
    passed = failed = skipped = 0
    for name, fn in tests:
        try:
            fn()
            print("ok   %s" % name)
            passed += 1
        except Skipped as e:
            print("SKIP %s: %s" % (name, e))
            skipped += 1
        except Exception:
            print("FAIL %s" % name)
            traceback.print_exc(file=sys.stdout)
            failed += 1
        sys.stdout.flush()
    print("%d passed, %d failed, %d skipped (%d assertions)" % (passed, failed, skipped,
                                                                 ASSERTIONS))
    sys.exit(1 if failed else SKIP if skipped and not passed else 0)


# profile.proto, pprof's schema, as the engine's pprof renderer has it.
PROTO_DIR = os.path.join(SRC, "src", "render")


def decode_pprof(path):
    """The text form protoc gives of the gzipped pprof profile at PATH (the
    suite's pprof reader: protoc against the schema we encode with)."""
    protoc = tool("protoc", "protobuf-compiler")
    with gzip.open(path, "rb") as f:
        raw = f.read()
    p = subprocess.run([protoc, "--decode", "perftools.profiles.Profile", "-I", PROTO_DIR,
                        os.path.join(PROTO_DIR, "profile.proto")], input=raw,
                       capture_output=True, timeout=60)
    eq(p.returncode, 0, p.stderr)
    return p.stdout.decode()
