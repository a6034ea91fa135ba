# SPDX-License-Identifier: MIT
# Bad input gets a clear message and its documented exit code, never a
# crash or a hang: missing, invalid and special PIDs, kernel threads,
# zombies, our own PID, an already traced process, permission denied,
# unknown options and missing arguments.
import os
import pwd
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
from fixture import path_of, start  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402


def free_pid():
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    for p in range(pid_max - 1, 1, -1):
        if not os.path.exists("/proc/%d" % p):
            return p
    raise RuntimeError("no free pid")


def test_no_such_process():
    r = sdtest.run(free_pid())
    eq(r.rc, 2, r)
    contains(r.err, "no such process")


def test_invalid_pids():
    for bad in ("0", "-1", "-42", "99999999999", "12abc"):
        r = sdtest.run(bad)
        eq(r.rc, 2, r)
        contains(r.err, "stackdump:")
        ok("Traceback" not in r.err and "Segmentation" not in r.err)
    r = sdtest.run("0")
    contains(r.err, "invalid process id")
    r = sdtest.run("dump", "-5")
    contains(r.err, "invalid process id")


def test_not_a_command_nor_a_process():
    r = sdtest.run("no-such-process-name-xyz")
    eq(r.rc, 64, r)
    contains(r.err, "neither a command, a PID nor a process name")


def test_pid_one_init():
    # PID 1 is ours to trace as root, unless it is this very sandbox's init
    # with more privileges than we have. Whether we may read its maps (the
    # same kernel check as ptrace's, made here and not taken from
    # stackdump's output) says which of the two it must be.
    try:
        with open("/proc/1/maps"):
            readable = True
    except PermissionError:
        readable = False
    r = sdtest.run("--max-frames", "5", "1")
    if readable:
        eq(r.rc, 0, r)
        contains(r.out, "PID 1 (")
    else:
        eq(r.rc, 2, r)
        contains(r.err, "cannot attach to 1: operation not permitted")
    sdtest.assert_running(1)


def test_kernel_thread():
    kthread = None
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                st = f.read()
            flags = int(st[st.rindex(")") + 2:].split()[6])
            if flags & 0x00200000:
                kthread = int(p)
                break
        except (OSError, ValueError, IndexError):
            pass
    sdtest.need(kthread is not None, "no kernel thread is visible here (a PID namespace?)")
    r = sdtest.run(kthread)
    eq(r.rc, 2, r)
    contains(r.err, "kernel thread")


def test_own_pid_and_parent():
    # stackdump's own PID is not known in advance: use `-c` with self.
    r = sdtest.run("--format", "json", os.getpid())  # our parent: python, fine
    eq(r.rc, 0, r.err)
    # the binary refuses itself: it reads its own pid through /proc/self
    sh = subprocess.run(["sh", "-c", 'exec "$0" $$', sdtest.binary()], capture_output=True,
                        text=True, timeout=60)
    eq(sh.returncode, 2, sh)
    contains(sh.stderr, "stackdump itself")


def test_zombie():
    child = subprocess.Popen(["sh", "-c", "exit 0"])
    for _ in range(500):
        with open("/proc/%d/stat" % child.pid) as f:
            if f.read().split(") ")[1][0] == "Z":
                break
        time.sleep(0.01)
    try:
        r = sdtest.run(child.pid)
        eq(r.rc, 2, r)
        contains(r.err, "zombie")
    finally:
        child.wait()


def test_thread_id_instead_of_pid():
    with start("fx-stacks", blocked=6) as fx:
        tid = fx.tid("alpha")
        r = sdtest.run(tid)
        eq(r.rc, 2, r)
        contains(r.err, "is a thread of process %d" % fx.pid)


def test_already_traced_by_gdb():
    with start("fx-stacks", blocked=6) as fx:
        gdb = subprocess.Popen(["gdb", "-q", "-nx", "-p", str(fx.pid)], stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(3000):
                with open("/proc/%d/status" % fx.pid) as f:
                    if "TracerPid:\t0" not in f.read():
                        break
                time.sleep(0.01)
            r = sdtest.run(fx.pid)
            eq(r.rc, 2, r)
            contains(r.err, "already traced by %d \"gdb\"" % gdb.pid)
        finally:
            gdb.stdin.write(b"detach\nquit\n")
            gdb.stdin.close()
            gdb.wait(timeout=60)
        time.sleep(0.2)
        sdtest.assert_running(fx.pid)


def test_permission_denied():
    sdtest.need_root("switching to the user nobody")
    nobody = pwd.getpwnam("nobody")
    with start("fx-stacks", blocked=6) as fx:
        def drop():
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
        p = subprocess.run([sdtest.binary(), str(fx.pid)], capture_output=True, text=True,
                           timeout=60, preexec_fn=drop)
        eq(p.returncode, 2, p)
        contains(p.stderr, "operation not permitted")
        contains(p.stderr, "CAP_SYS_PTRACE")


def test_unknown_option_and_missing_values():
    r = sdtest.run("--bogus", "1")
    eq(r.rc, 64, r)
    contains(r.err, "unknown option --bogus")
    r = sdtest.run("dump")
    eq(r.rc, 64, r)
    contains(r.err, "missing argument")
    r = sdtest.run("--max-frames")
    eq(r.rc, 64, r)
    contains(r.err, "needs a value")
    r = sdtest.run("--max-frames", "abc", "1")
    eq(r.rc, 64, r)
    contains(r.err, "invalid --max-frames")
    r = sdtest.run("--format", "xml", "1")
    eq(r.rc, 64, r)
    contains(r.err, "one of: text json")
    r = sdtest.run("--tid", "x", "1")
    eq(r.rc, 64, r)


def test_help_and_version():
    r = sdtest.run("--help")
    eq(r.rc, 0)
    contains(r.out, "Exit status")
    r = sdtest.run("--version")
    eq(r.rc, 0)
    ok(r.out.startswith("stackdump "), r.out)
    r = sdtest.run("dump", "--help")
    eq(r.rc, 0)
    contains(r.out, "--per-thread")


def test_process_exits_right_away():
    """A process that exits while we look gives a result or a clear error:
    which one depends on the race, but each must be whole."""
    for _ in range(5):
        p = subprocess.Popen(["sh", "-c", "exit 0"])
        r = sdtest.run(p.pid)
        p.wait()
        if r.rc == 2:
            ok("no such process" in r.err or "exited" in r.err or "zombie" in r.err, r)
        else:
            ok(r.rc in (0, 1), r)  # 1: its thread went away mid-snapshot
            contains(r.out, "PID %d (" % p.pid)


def test_partial_result_when_some_pids_fail():
    with start("fx-stacks", blocked=6) as fx:
        r = sdtest.run(fx.pid, free_pid())
        eq(r.rc, 1, r)
        contains(r.out, "alpha_inner")
        contains(r.err, "no such process")


def test_write_error_on_stdout_fails():
    """A dump that cannot be written (a full disk) is a failure, said so."""
    with start("fx-stacks", blocked=6) as fx:
        e = dict(os.environ)
        e["NO_COLOR"] = "1"
        for args in ([fx.pid], ["dump", "--format", "json", fx.pid], ["--version"]):
            with open("/dev/full", "w") as full:
                p = subprocess.run([sdtest.binary()] + [str(a) for a in args], stdout=full,
                                   stderr=subprocess.PIPE, text=True, timeout=120, env=e)
            eq(p.returncode, 2, (args, p.stderr))
            contains(p.stderr, "cannot write the output: no space left on device")
        sdtest.assert_running(fx.pid)
        # The same dump to a working stdout succeeds.
        r = sdtest.run(fx.pid)
        eq(r.rc, 0, r)


if __name__ == "__main__":
    sdtest.main(globals())
