# SPDX-License-Identifier: MIT
# Starts the fixture programs of tests/fixtures/, waits until they are in
# place (the "ready <pid>" line, then optionally until enough threads sit in
# a futex or another syscall) and makes sure none outlives the test run.
"""Start fixture processes for stackdump tests (python3 stdlib only).

    from fixture import start, thread_states, wait_state

    with start("fx-mutex", "normal", "3", parked=3) as fx:
        tids = fx.tids_by_name()          # {"holder": [123], "waiter-1": [124], ...}
        ... run stackdump against fx.pid ...

A bare name ("fx-mutex") is looked up in $STACKDUMP_FIXTURE_DIR, then in
build/tests/fixtures of the source tree (then any other build*/); a path
containing "/" is used as is.
Each fixture's header comment (tests/fixtures/fx-*.c) gives the parked= or
blocked= count that means "every thread is in place".

A fixture dies with the thread that started it (PR_SET_PDEATHSIG), and
every fixture still running when the interpreter exits is killed (atexit).
"""

import atexit
import ctypes
import glob
import os
import select
import signal
import subprocess
import tempfile
import time

SYS_FUTEX = 202
SYS_RESTART_SYSCALL = 219

_live = set()


class FixtureError(RuntimeError):
    """The fixture did not start or did not settle in time."""


class ThreadState:
    """One thread as /proc shows it at one moment.

    syscall is None when the thread is running in user space ("running")
    and -1 when it is blocked outside a syscall; args holds the six
    syscall arguments as ints (empty unless syscall >= 0).
    """

    __slots__ = ("tid", "name", "state", "syscall", "args", "wchan")

    def __init__(self, tid, name, state, syscall, args, wchan):
        self.tid = tid
        self.name = name
        self.state = state
        self.syscall = syscall
        self.args = args
        self.wchan = wchan

    @property
    def in_futex(self):
        """True when the thread sleeps in futex(2) (or its restart)."""
        return self.state in ("S", "D") and self.syscall in (
            SYS_FUTEX, SYS_RESTART_SYSCALL)

    @property
    def blocked(self):
        """True when the thread sleeps inside any syscall."""
        return (self.state in ("S", "D") and self.syscall is not None
                and self.syscall >= 0)

    def __repr__(self):
        return ("ThreadState(tid=%d, name=%r, state=%r, syscall=%r, "
                "args=%s, wchan=%r)" % (
                    self.tid, self.name, self.state, self.syscall,
                    [hex(a) for a in self.args], self.wchan))


def _read(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def _thread_state(pid, tid):
    base = "/proc/%d/task/%d/" % (pid, tid)
    name = _read(base + "comm").rstrip("\n")
    stat = _read(base + "stat")
    # The name in stat may hold spaces and parentheses: cut at the last ")".
    state = stat[stat.rindex(")") + 2:].split(" ", 1)[0]
    try:
        fields = _read(base + "syscall").split()
    except OSError:
        fields = []
    syscall, args = None, []
    if fields and fields[0] != "running":
        syscall = int(fields[0])
        if syscall >= 0:
            args = [int(a, 16) for a in fields[1:7]]
    try:
        wchan = _read(base + "wchan").strip() or None
    except OSError:
        wchan = None
    return ThreadState(tid, name, state, syscall, args, wchan)


def thread_states(pid):
    """Returns {tid: ThreadState} for every thread of pid still alive.

    Threads that exit while being read are left out. Raises
    ProcessLookupError when the process itself is gone.
    """
    try:
        tids = sorted(int(t) for t in os.listdir("/proc/%d/task" % pid))
    except FileNotFoundError:
        raise ProcessLookupError(pid)
    states = {}
    for tid in tids:
        try:
            states[tid] = _thread_state(pid, tid)
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    return states


def wait_state(pid, predicate, timeout=20, interval=0.01):
    """Polls thread_states(pid) until predicate(states) is true.

    Returns the states that satisfied it; raises FixtureError with the last
    states seen when timeout seconds pass first.
    """
    deadline = time.monotonic() + timeout
    while True:
        states = thread_states(pid)
        if predicate(states):
            return states
        if time.monotonic() >= deadline:
            raise FixtureError(
                "pid %d: condition not met after %gs; threads: %s" % (
                    pid, timeout, "; ".join(repr(s) for s in states.values())))
        time.sleep(interval)


def fixture_dir():
    """Where bare fixture names are looked up."""
    env = os.environ.get("STACKDUMP_FIXTURE_DIR")
    if env:
        return env
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    plain = os.path.join(root, "build", "tests", "fixtures")
    if os.path.isdir(plain):
        return plain  # before build-asan and the others, which sort first
    found = sorted(glob.glob(os.path.join(root, "build*", "tests", "fixtures")))
    return found[0] if found else plain


def path_of(name):
    """The path start() would run for name (a bare name or a path)."""
    if "/" in name:
        return name
    return os.path.join(fixture_dir(), name)


def available(name):
    """True when the fixture was built (fx-rust* need rustc at build time)."""
    return os.access(path_of(name), os.X_OK)


def copy_renamed(tmp, name, old, new):
    """A copy of fixture NAME in the directory TMP, its debug sections
    decompressed and the bytes OLD (a name in its DWARF, with its
    terminator) replaced by NEW, of the same length: a layout the readers
    do not know. Returns its path."""
    assert len(old) == len(new)
    dst = os.path.join(tmp, name)
    import sdtest
    subprocess.run([sdtest.tool("objcopy", "binutils"), "--decompress-debug-sections",
                    path_of(name), dst], check=True)
    with open(dst, "rb") as f:
        data = f.read()
    sdtest.ok(data.count(old) >= 1, "no %r in the DWARF of %s" % (old, name))
    with open(dst, "wb") as f:
        f.write(data.replace(old, new))
    os.chmod(dst, 0o755)
    return dst


def _die_with_parent():
    # Runs in the child between fork and exec: if the test process dies
    # without cleaning up, the kernel kills the fixture. Note the death
    # signal fires when the *thread* that forked exits.
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class Fixture:
    """A running fixture process. Use as a context manager or call stop()."""

    def __init__(self, proc, path, args, stderr_file):
        self.proc = proc
        self.pid = proc.pid
        self.path = path
        self.args = args
        self._stderr = stderr_file

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def __repr__(self):
        return "Fixture(%s %s, pid=%d)" % (
            os.path.basename(self.path), " ".join(self.args), self.pid)

    def alive(self):
        return self.proc.poll() is None

    def stderr(self):
        """Everything the fixture wrote on stderr so far."""
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def threads(self):
        """{tid: ThreadState} for the fixture's threads."""
        return thread_states(self.pid)

    def tids_by_name(self):
        """{thread name: [tids, ascending]} from /proc/PID/task/*/comm."""
        names = {}
        for tid in sorted(os.listdir("/proc/%d/task" % self.pid), key=int):
            try:
                name = _read("/proc/%d/task/%s/comm" % (self.pid, tid))
            except (FileNotFoundError, ProcessLookupError):
                continue
            names.setdefault(name.rstrip("\n"), []).append(int(tid))
        return names

    def tid(self, name):
        """The tid of the single thread called name (KeyError otherwise)."""
        tids = self.tids_by_name().get(name, [])
        if len(tids) != 1:
            raise KeyError("%r: %d threads of that name in %r" % (
                name, len(tids), self))
        return tids[0]

    def wait_state(self, predicate, timeout=20):
        return wait_state(self.pid, predicate, timeout)

    def stop(self):
        """SIGKILL and reap; safe to call more than once."""
        if self.proc.returncode is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass  # stuck in D state: nothing more we can do
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        _live.discard(self)


def _read_ready(proc, deadline):
    fd = proc.stdout.fileno()
    buf = b""
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            return None, "no ready line in time"
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 256)
        if not chunk:
            try:
                status = proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                status = "none yet"
            return None, "stdout closed (exit status %s)" % status
        buf += chunk
    line, _, rest = buf.partition(b"\n")
    if rest:
        return None, "unexpected output after ready: %r" % rest
    return line.decode("utf-8", "replace"), None


def start(path, *args, parked=0, blocked=0, timeout=20, env=None, stdin=False):
    """Starts a fixture and waits until it is in place.

    path is a fixture name or a path; args are passed as strings. Waits for
    the "ready <pid>" line, then, if parked > 0, until at least that many
    threads sleep in futex(2), and, if blocked > 0, until at least that
    many threads sleep in any syscall. All waits together are bounded by
    timeout seconds; on failure the fixture is killed and FixtureError
    raised with its stderr. With stdin, the fixture's stdin is a pipe
    (fx.proc.stdin) for commands. Returns a Fixture.
    """
    path = path_of(path)
    args = [str(a) for a in args]
    if not os.access(path, os.X_OK):
        raise FixtureError("%s: no such executable fixture" % path)
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen([path] + args,
                            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=err, env=env,
                            preexec_fn=_die_with_parent)
    fx = Fixture(proc, path, args, err)
    _live.add(fx)
    deadline = time.monotonic() + timeout

    def fail(why):
        text = fx.stderr()
        fx.stop()
        raise FixtureError("%s: %s; stderr: %s" % (
            " ".join([os.path.basename(path)] + args), why,
            text.strip() or "(empty)"))

    line, why = _read_ready(proc, deadline)
    if line is None:
        fail(why)
    if line != "ready %d" % proc.pid:
        fail("bad ready line %r (pid is %d)" % (line, proc.pid))

    def settled(states):
        if sum(s.in_futex for s in states.values()) < parked:
            return False
        return sum(s.blocked for s in states.values()) >= blocked

    if parked > 0 or blocked > 0:
        try:
            wait_state(proc.pid, settled,
                       max(0.0, deadline - time.monotonic()))
        except (FixtureError, ProcessLookupError) as e:
            fail("did not settle (parked=%d blocked=%d): %s" % (
                parked, blocked, e))
    return fx


def stop_all():
    """Kills every fixture this process started and has not stopped."""
    for fx in list(_live):
        fx.stop()


atexit.register(stop_all)
