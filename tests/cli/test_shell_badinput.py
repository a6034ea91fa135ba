# SPDX-License-Identifier: MIT
# The bad input matrix in the shell: every bad PID, unknown commands and
# options, missing arguments get their own message and a non-zero status,
# and the shell goes on with the next line.
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
from sdtest import contains, ok  # noqa: E402


def free_pid():
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    for p in range(pid_max - 1, 1, -1):
        if not os.path.exists("/proc/%d" % p):
            return p
    raise RuntimeError("no free pid")


CASES = [
    ("attach 0", "invalid process id"),
    ("attach -5", "invalid process id"),
    ("attach 99999999999", "invalid process id"),
    ("attach %d" % free_pid(), "no such process"),
    ("attach no-such-process-xyz", "no process named"),
    ("attach 2", "kernel thread"),
    ("bogus", "unknown command"),
    ("dump --bogus", "unknown option --bogus"),
    ("dump --max-frames", "needs a value"),
    ("locks --format xml", "one of:"),
    ("threads", "no target"),
    ("help nosuchcommand", "unknown command"),
    ("load /nonexistent/file.json", "/nonexistent/file.json"),
]


def test_each_bad_line_alone():
    for line, want in CASES:
        r = sdtest.run(input=line + "\n")
        ok(r.rc != 0, (line, r))
        contains(r.err, want, "for %r" % line)
        ok("Segmentation" not in r.err and "AddressSanitizer" not in r.err, r.err)


def test_shell_goes_on_after_errors():
    script = "\n".join(line for line, _ in CASES) + "\nhelp\n"
    r = sdtest.run(input=script)
    eq_last = r.rc
    ok(eq_last == 0, r)  # the status is the last command's: help
    contains(r.out, "Commands:")
    for _, want in CASES:
        contains(r.err, want)


if __name__ == "__main__":
    sdtest.main(globals())
