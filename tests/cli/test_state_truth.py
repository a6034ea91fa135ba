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


HEADER_RE = re.compile(r'^Thread (\d+) "(ping|pong)" (\S) ?(.*)$')


def test_header_state_agrees_with_the_stack():
    # fx-pingpong's two threads block and wake thousands of times a second:
    # the state letter /proc gives before the freeze is often not the
    # state at the freeze, where the stack is read. A header never says
    # "S running": the letter is the stack's instant's, and the earlier
    # reading is marked as such. JSON keeps /proc's letter, and says so.
    with start("fx-pingpong", blocked=1) as fx:
        seen = 0
        for _ in range(30):
            r = sdtest.run("--no-source", fx.pid)
            eq(r.rc, 0, r.err)
            for line in r.out.splitlines():
                m = HEADER_RE.match(line)
                if not m:
                    continue
                seen += 1
                letter, rest = m.group(3), m.group(4)
                if rest.startswith(("running", "runnable")):
                    eq(letter, "R", line)
                if "before the freeze" in rest:
                    matches(rest, r"^running.* \(before the freeze: S( in \w+)?\)$")
                    eq(letter, "R", line)
            doc = sdtest.run("--format", "json", fx.pid).json()
            for t in doc["threads"]:
                if t["read_before_freeze"]:
                    eq((t["state"], t["state_at_stack"]), ("S", "R"), t)
                else:
                    eq(t["state_at_stack"], t["state"], t)
        eq(seen, 60, "ping and pong in each of 30 dumps")
        sdtest.assert_running(fx.pid)


def test_idle_go_threads_say_no_needless_warning():
    # fx-go's idle Ms sleep in futex on their g0 stacks; their unwind reads
    # two words past the copy after the thaw. They did not run in between
    # (their counters, read again after, say so): the words are as good as
    # the copy, so no warning; -v says it, JSON counts them.
    with start("fx-go", blocked=2) as fx:
        for _ in range(3):
            r = sdtest.run(fx.pid)
            eq(r.rc, 0, r.err)
            blocks = r.out.split("\n\n")
            idle = [b for b in blocks if "a thread with no work, parked" in b.split("\n")[0]]
            ok(idle, r.out[:2000])
            for b in idle:
                ok("read after the thaw" not in b, b)
        doc = sdtest.run("--format", "json", fx.pid).json()
        proven = [t for t in doc["threads"] if t["live_reads"]]
        for t in proven:
            if (t["wait"] or {}).get("note", "").endswith("a thread with no work, parked"):
                ok(t["live_reads_proven"], t)
        r = sdtest.run("-v", fx.pid)
        if any(t["live_reads_proven"] for t in doc["threads"]):
            contains(r.out, "read after the thaw, outside the copy; its scheduler counters "
                            "show the thread did not run in between")
        sdtest.assert_running(fx.pid)


if __name__ == "__main__":
    sdtest.main(globals())
