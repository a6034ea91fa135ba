# SPDX-License-Identifier: MIT
# What stackdump keeps of a target: a password and a key placed right
# around a mutex (fx-secret) never appear in a saved snapshot, a recording,
# a report or a JSON dump, while the lock analysis of the saved file still
# finds the holder; files saved before (raw "lockmem") still load; the
# command line is kept whole only when asked. record --follow moves only to
# a process of the same user and executable. Control characters of names
# the target chose never reach stderr raw, errors included.
import ctypes
import glob
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
from fixture import path_of, start  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402

LIMIT = 120
SECRETS = ("hunter2-PASSWORD-sd-secret-1", "AKIA-KEY-sd-secret-2-0123456789abcdef")


def run(*args, env=None):
    try:
        return sdtest.run(*args, timeout=LIMIT, env=env)
    except subprocess.TimeoutExpired:
        raise AssertionError("stackdump %s did not finish in %d s" % (args, LIMIT))


def no_secret(text, where):
    for s in SECRETS:
        # Whole, or its first 8 bytes as hex (the raw lock memory).
        ok(s not in text, "%s holds the secret %r" % (where, s))
        ok(s[:8].encode().hex() not in text, "%s holds the secret %r as hex" % (where, s))


def read_any(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode("utf-8", "replace")


def test_secret_next_to_a_mutex_is_never_kept():
    fx = start("fx-secret", parked=1)
    d = tempfile.mkdtemp(prefix="sd-secret-")
    try:
        for argv in (("--format", "json", fx.pid), ("locks", "--format", "json", fx.pid),
                     ("locks", fx.pid)):
            r = run(*argv)
            eq(r.rc, 0, r.err)
            no_secret(r.out + r.err, " ".join(map(str, argv)))
        saved = os.path.join(d, "s.json")
        r = run("-c", "locks; save %s" % saved, fx.pid)
        eq(r.rc, 0, r.err)
        text = read_any(saved)
        no_secret(text, saved)
        doc = json.loads(text)
        words = [w for t in doc["threads"] for w in t.get("lockwords", [])]
        ok(words, "no lock word saved")
        ok(all(len(w["bytes"]) <= 32 for w in words), words)
        # The saved words are enough for the lock view of the file.
        r = run("-c", "load %s; locks" % saved)
        eq(r.rc, 0, r.err)
        contains(r.out, 'held by %d "holder"' % fx.tid("holder"))
        # A file of the format before lockwords (the raw window) loads.
        old = os.path.join(d, "old.json")
        with open(old, "w") as f:
            f.write(text.replace('"lockwords"', '"lockmem"'))
        r = run("-c", "load %s; locks" % old)
        eq(r.rc, 0, r.err)
        contains(r.out, '"holder"')
        rec = os.path.join(d, "rec")
        r = run("record", "-o", rec, "--count", "2", "--every", "200ms", "-z", fx.pid)
        eq(r.rc, 0, r.err)
        files = glob.glob(os.path.join(rec, "*"))
        ok(len(files) >= 3, files)
        for p in files:
            no_secret(read_any(p), p)
        for fmt in ("text", "json"):
            r = run("report", rec, "--format", fmt)
            eq(r.rc, 0, r.err)
            no_secret(r.out, "report --format " + fmt)
    finally:
        fx.stop()
        shutil.rmtree(d, ignore_errors=True)


def test_command_line_only_when_asked():
    # A shell whose arguments hold a secret stands in for a program.
    p = subprocess.Popen(["sh", "-c", "sleep 300; : pw-sd-secret-3", "argv0"])
    d = tempfile.mkdtemp(prefix="sd-cmdline-")
    try:
        time.sleep(0.3)
        a, b = os.path.join(d, "a.json"), os.path.join(d, "b.json")
        r = run("-c", "dump; save %s; save --cmdline %s" % (a, b), p.pid)
        eq(r.rc, 0, r.err)
        ta, tb = read_any(a), read_any(b)
        ok("pw-sd-secret-3" not in ta, "the arguments were saved unasked")
        contains(ta, '"cmdline": "sh"')
        contains(tb, "pw-sd-secret-3")
    finally:
        p.kill()
        p.wait()
        shutil.rmtree(d, ignore_errors=True)


def test_follow_only_same_user_and_executable():
    d = tempfile.mkdtemp(prefix="sd-follow-")
    os.chmod(d, 0o755)
    exe = os.path.join(d, "sdfollowx")
    other = os.path.join(d, "other")
    os.mkdir(other)
    os.chmod(other, 0o755)
    shutil.copy("/bin/sleep", exe)
    shutil.copy("/bin/sleep", os.path.join(other, "sdfollowx"))
    first = subprocess.Popen([exe, "300"])
    rec = os.path.join(d, "rec")
    procs = []
    try:
        time.sleep(0.3)
        recp = subprocess.Popen([sdtest.binary(), "record", "--follow", "-o", rec, "--every",
                                 "200ms", "--for", "12s", str(first.pid)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        first.kill()
        first.wait()
        time.sleep(0.5)
        # Same name, another user; then same name and user, another file.
        procs.append(subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup",
                                       "--clear-groups", exe, "300"]))
        procs.append(subprocess.Popen([os.path.join(other, "sdfollowx"), "300"]))
        time.sleep(3)
        good = subprocess.Popen([exe, "300"])
        procs.append(good)
        try:
            out, err = recp.communicate(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            recp.kill()
            raise AssertionError("record --follow did not end")
        contains(err, "not following %d" % procs[0].pid)
        contains(err, "runs as another user")
        contains(err, "not following %d" % procs[1].pid)
        contains(err, "runs another executable")
        contains(err, "following the new process %d (the same user 0 and the same "
                 "executable)" % good.pid)
        with open(os.path.join(rec, "manifest.json")) as f:
            man = json.load(f)
        followed = [e for e in man.get("events", []) if e.get("event") == "followed"]
        eq([e.get("detail") for e in followed], ["pid %d" % good.pid])
    finally:
        for p in procs + [first]:
            p.kill()
            p.wait()
        shutil.rmtree(d, ignore_errors=True)


PR_SET_NAME = 15
PTRACE_SEIZE = 0x4206


def test_tracer_name_escaped_in_the_error():
    """A tracer whose comm holds a clear-screen and a window-title sequence
    holds the target: the error naming it is escaped."""
    fx = start("fx-idle", blocked=1)
    rd, wr = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_NAME, b"\x1b[2J\x1b]0;pwn\x07", 0, 0, 0)
            rc = libc.ptrace(PTRACE_SEIZE, fx.pid, None, None)
            os.write(wr, b"1" if rc == 0 else b"0")
            time.sleep(60)
        finally:
            os._exit(0)
    try:
        eq(os.read(rd, 1), b"1", "the tracer could not seize the fixture")
        r = run(fx.pid)
        ok(r.rc != 0, r)
        ok("\x1b" not in r.err and "\x07" not in r.err, "raw control characters: %r" % r.err)
        contains(r.err, "\\e[2J")
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        fx.stop()


if __name__ == "__main__":
    sdtest.main(globals(), tools=(("setpriv", "util-linux"),))
