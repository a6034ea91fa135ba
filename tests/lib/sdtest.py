# SPDX-License-Identifier: MIT
# A tiny test runner for the CLI tests: runs every test_* function of the
# calling module, prints one line per test and the closing line
# "N passed, N failed", and exits non-zero on any failure (77 = skip).
"""Helpers to run the real stackdump binary in tests.

    import sdtest
    def test_something():
        r = sdtest.run("123")
        sdtest.eq(r.rc, 0)
    if __name__ == "__main__":
        sdtest.main(globals())
"""

import json
import os
import re
import subprocess
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

SKIP = 77


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
    if a != b:
        raise AssertionError("%r != %r %s" % (a, b, msg))


def ok(cond, msg=""):
    if not cond:
        raise AssertionError(msg or "condition failed")


def contains(haystack, needle, msg=""):
    if needle not in haystack:
        raise AssertionError("%r not found in %r %s" % (needle, haystack[:3000], msg))


def matches(text, pattern, msg=""):
    if not re.search(pattern, text, re.M):
        raise AssertionError("/%s/ not found in %r %s" % (pattern, text[:3000], msg))


def ptrace_allowed():
    """Can we trace a child of ours? (CI containers may forbid it.)"""
    try:
        p = subprocess.Popen(["sleep", "30"])
        try:
            r = run(p.pid, timeout=60)
            return "operation not permitted" not in r.err
        finally:
            p.kill()
            p.wait()
    except Exception:
        return False


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


def main(ns):
    only = sys.argv[1:]
    tests = [(n, f) for n, f in sorted(ns.items()) if n.startswith("test_") and callable(f)]
    if only:
        tests = [(n, f) for n, f in tests if any(o in n for o in only)]
    if not ptrace_allowed():
        print("SKIP: ptrace is not permitted here (need root or CAP_SYS_PTRACE)")
        sys.exit(SKIP)
    passed = failed = 0
    for name, fn in tests:
        try:
            fn()
            print("ok   %s" % name)
            passed += 1
        except Exception:
            print("FAIL %s" % name)
            traceback.print_exc(file=sys.stdout)
            failed += 1
        sys.stdout.flush()
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)
