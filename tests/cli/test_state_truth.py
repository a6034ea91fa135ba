#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# What stackdump shows as a thread's state is the target's, not its own
# footprint: after a snapshot, a sleeper that /proc shows in restart_syscall
# is shown in the wait it continues (dump, threads, profile); an
# unprivileged user is told why WAIT reads '?'; the Yama hint appears only
# where Yama is.
import os
import pwd
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sdtest  # noqa: E402
from fixture import SYS_RESTART_SYSCALL, start, thread_states  # noqa: E402
from sdtest import contains, eq, matches, ok  # noqa: E402

YAMA = "/proc/sys/kernel/yama/ptrace_scope"


def restarted(fx, name):
    """Take a snapshot, then require that /proc shows NAME in
    restart_syscall: the footprint the views must not show."""
    eq(sdtest.run("dump", fx.pid).rc, 0)
    st = thread_states(fx.pid)[fx.tid(name)]
    eq(st.syscall, SYS_RESTART_SYSCALL, "not in restart_syscall after a snapshot: %r" % st)


def test_threads_dump_and_profile_show_the_restarted_wait():
    with start("fx-pool", "2", "1", parked=3) as fx:
        restarted(fx, "flusher")
        flusher = fx.tid("flusher")
        r = sdtest.run("threads", fx.pid)
        eq(r.rc, 0, r)
        matches(r.out, r"(?m)^\s*%d\s+flusher\s+S\s+clock_nanosleep\s" % flusher)
        ok("restart_syscall" not in r.out, r.out)
        doc = sdtest.run("threads", "--format", "json", fx.pid).json()
        row = next(t for t in doc["threads"] if t["tid"] == flusher)
        eq(row["syscall"], "clock_nanosleep")
        r = sdtest.run("dump", "--no-source", fx.pid)
        matches(r.out, r'(?m)^Thread %d "flusher" S clock_nanosleep$' % flusher)
        # A profile does not split one state in two.
        r = sdtest.run("profile", fx.pid, "-c", "6", "-r", "20", "-q")
        eq(r.rc, 0, r)
        line = next(x for x in r.out.splitlines() if "flusher (%d)" % flusher in x)
        matches(line, r"\s\d+\.\d%  clock_nanosleep 100%  flusher")
        ok("restart_syscall" not in r.out, r.out)


def as_nobody(*args):
    nobody = pwd.getpwnam("nobody")

    def drop():
        os.setgroups([])
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)
    env = dict(os.environ, NO_COLOR="1")
    return subprocess.run([sdtest.binary()] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=120, preexec_fn=drop, env=env)


def test_unprivileged_threads_explain_the_question_marks():
    ok(os.getuid() == 0, "this test switches to the user nobody: run it as root")
    with start("fx-pool", "2", "1", parked=3) as fx:
        p = as_nobody("threads", fx.pid)
        eq(p.returncode, 0, p)
        ok(re.search(r"(?m)^\s*%d\s+worker-1\s+S\s+\?\s" % fx.tid("worker-1"), p.stdout),
           p.stdout)
        contains(p.stdout, "? in WAIT: /proc/TID/syscall is readable only with ptrace access "
                 "to the process (run as root or as its owner")
        eq("kernel.yama.ptrace_scope" in p.stdout, os.path.exists(YAMA), p.stdout)


def test_yama_hint_only_with_yama():
    ok(os.getuid() == 0, "this test switches to the user nobody: run it as root")
    with start("fx-pool", "2", "1", parked=3) as fx:
        p = as_nobody(fx.pid)
        eq(p.returncode, 2, p)
        contains(p.stderr, "cannot attach to %d: operation not permitted (run as root or the "
                 "process owner with CAP_SYS_PTRACE" % fx.pid)
        scope = None
        if os.path.exists(YAMA):
            with open(YAMA) as f:
                scope = int(f.read())
        if scope:
            contains(p.stderr, "kernel.yama.ptrace_scope is %d" % scope)
        else:
            ok("yama" not in p.stderr, p.stderr)


if __name__ == "__main__":
    sdtest.main(globals())
