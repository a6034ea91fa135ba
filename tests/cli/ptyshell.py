# SPDX-License-Identifier: MIT
# A small pseudo-terminal harness for the shell tests: runs the real
# stackdump binary on a pty (so it sees a terminal, uses readline and gets
# Ctrl-C as SIGINT from the line discipline), sends keys and waits for
# output. Escape sequences are stripped before matching.
"""Drive `stackdump` through a pseudo-terminal.

    with PtyShell(env={"XDG_STATE_HOME": tmp}) as sh:
        sh.expect_prompt()
        sh.send("thr\\t")
        sh.expect(r"threads ")
        sh.sendline("")

expect() waits for a regular expression in the output that arrived since
the last successful expect (escape sequences and \\r removed) and returns
the match; it raises AssertionError with everything seen when the program
exits or HANG_GUARD seconds pass first. That bound only guards against a
hung test, it is not an assertion about speed.
"""

import errno
import fcntl
import os
import pty
import re
import select
import signal
import struct
import tempfile
import termios
import time

import sdtest

HANG_GUARD = 120
CTRL_C = "\x03"
CTRL_D = "\x04"
UP = "\x1b[A"

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\x1b\][^\x07]*\x07")


def strip(text):
    """Text without terminal escapes, \\r and the readline \\x01/\\x02 marks."""
    text = _ANSI.sub("", text)
    return (text.replace("\r", "").replace("\x01", "").replace("\x02", "")
            .replace("\x07", ""))


class PtyShell:
    def __init__(self, args=(), env=None, color=False, rows=50, cols=200, argv=None):
        """Run stackdump ARGS (or the program ARGV) on a new pty."""
        e = dict(os.environ)
        e.pop("DEBUGINFOD_URLS", None)
        e["TERM"] = "xterm"
        # No personal key bindings: an empty file of our own (not
        # /dev/null, which a bug once turned into a regular file holding a
        # dump, and readline read it as bindings that dropped keys).
        self._inputrc = tempfile.NamedTemporaryFile(prefix="sd-inputrc-")
        e["INPUTRC"] = self._inputrc.name
        if color:
            e.pop("NO_COLOR", None)
        else:
            e["NO_COLOR"] = "1"
        if env:
            e.update(env)
        argv = argv or [sdtest.binary()] + [str(a) for a in args]
        pid, fd = pty.fork()
        if pid == 0:  # child: the pty is our controlling terminal
            try:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
                os.execve(argv[0], argv, e)
            finally:
                os._exit(127)
        self.pid = pid
        self.fd = fd
        self.raw = b""        # everything read
        self.seen = ""        # stripped text since the last expect
        self.status = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _read(self, timeout):
        try:
            r, _, _ = select.select([self.fd], [], [], timeout)
        except InterruptedError:
            return True
        if not r:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError as e:
            if e.errno == errno.EIO:  # the child closed the pty
                return False
            raise
        if not data:
            return False
        self.raw += data
        self.seen += strip(data.decode("utf-8", "replace"))
        return True

    def send(self, keys):
        os.write(self.fd, keys.encode())

    def sendline(self, line):
        """Type LINE and Enter as a person does: a key, then its echo;
        Enter once the whole line shows. (A line whose echo is incomplete
        is cleared with Ctrl-U and typed again, up to three times, and the
        test judges what follows. Lines lost characters when INPUTRC was a
        /dev/null that had become a regular file: see __init__.)"""
        for _ in range(3):
            start = len(self.raw)
            for c in line:
                before = len(self.raw)
                self.send(c)
                # Wait for the echo (at most a second; the expect after
                # the line is what judges).
                deadline = time.monotonic() + 1.0
                while len(self.raw) == before and time.monotonic() < deadline:
                    if not self._read(0.05):
                        break
            shown = strip(self.raw[start:].decode("utf-8", "replace"))
            if line in shown:
                break
            self.send("\x15")  # Ctrl-U: discard the line, type it again
            self._read(0.2)
        self.send("\r")

    def expect(self, pattern, guard=HANG_GUARD):
        """Wait for PATTERN (a regex) in the output; returns the match."""
        rx = re.compile(pattern, re.M)
        deadline = time.monotonic() + guard
        while True:
            m = rx.search(self.seen)
            if m:
                self.seen = self.seen[m.end():]
                return m
            if time.monotonic() > deadline:
                raise AssertionError("no /%s/ in the shell's output; seen since last match: %r"
                                     % (pattern, self.seen[-3000:]))
            if not self._read(0.2):
                m = rx.search(self.seen)
                if m:
                    self.seen = self.seen[m.end():]
                    return m
                raise AssertionError("the shell ended before /%s/; seen: %r"
                                     % (pattern, self.seen[-3000:]))

    def expect_prompt(self, target=None):
        """Wait for the prompt, "stackdump> " or "stackdump PID NAME> "."""
        if target is None:
            return self.expect(r"stackdump(?: [^\n>]*)?> ")
        return self.expect(r"stackdump %s(?: \(\d+/\d+\))?> " % re.escape(target))

    def wait_exit(self, guard=HANG_GUARD):
        """Read until the program exits; returns its exit status."""
        deadline = time.monotonic() + guard
        while self.status is None:
            self._read(0.1)
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid == self.pid:
                self.status = os.waitstatus_to_exitcode(st)
                while self._read(0):
                    if not select.select([self.fd], [], [], 0)[0]:
                        break
                break
            if time.monotonic() > deadline:
                raise AssertionError("the shell did not exit; seen: %r" % self.seen[-3000:])
        return self.status

    def close(self):
        self._inputrc.close()
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                _, st = os.waitpid(self.pid, 0)
                self.status = os.waitstatus_to_exitcode(st)
            except ChildProcessError:
                pass
        try:
            os.close(self.fd)
        except OSError:
            pass
