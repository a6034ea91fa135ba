#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The inflated debug file cache: the first dump of a process whose libc
# debug file has compressed sections (Debian's libc6-dbg) leaves an
# inflated copy named by build-id; later dumps open it; the frames are the
# same with and without it; a damaged copy is made again; a cache that
# cannot be written changes nothing but the time.
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sdtest  # noqa: E402
from fixture import start  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402


def libc_debug_file():
    """The separate debug file of the libc the fixtures run on, and its
    build-id (hex)."""
    r = subprocess.run(["readelf", "-n", "/lib/x86_64-linux-gnu/libc.so.6"],
                       capture_output=True, text=True, check=True)
    m = re.search(r"Build ID: ([0-9a-f]+)", r.stdout)
    ok(m, r.stdout)
    bid = m.group(1)
    path = "/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:])
    ok(os.path.exists(path), "%s missing: apt-get install libc6-dbg" % path)
    return path, bid


def compressed_sections(path):
    r = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True)
    # Flag C: SHF_COMPRESSED.
    return [ln.split()[1] for ln in r.stdout.splitlines()
            if re.search(r"\]\s+\.debug\S*\s", ln) and re.search(r"\s[A-Z]*C[A-Z]*\s+\d+\s+\d+\s+\d+$", ln)]


def frames(out):
    """The frame lines, addresses kept (same process, same addresses)."""
    return [ln for ln in out.splitlines() if ln.lstrip().startswith("#")]


def test_inflated_copy_made_used_and_equal():
    path, bid = libc_debug_file()
    ok(compressed_sections(path), "libc's debug file has no compressed section: %s" % path)
    d = tempfile.mkdtemp(prefix="sd-debugcache-")
    try:
        cache = os.path.join(d, "cache")
        with start("fx-stacks", blocked=6) as fx:
            off = sdtest.run(fx.pid, env={"STACKDUMP_DEBUG_CACHE": "off"})
            eq(off.rc, 0, off.err)
            contains(off.out, "(libc.so.6) at ")
            first = sdtest.run(fx.pid, env={"STACKDUMP_DEBUG_CACHE": cache})
            eq(first.rc, 0, first.err)
            copy = os.path.join(cache, bid + ".debug")
            ok(os.path.isfile(copy), os.listdir(cache) if os.path.isdir(cache) else cache)
            eq(compressed_sections(copy), [])
            eq(os.listdir(cache), [bid + ".debug"], "a temporary file left behind")
            os.utime(copy, (1, 1))
            again = sdtest.run(fx.pid, env={"STACKDUMP_DEBUG_CACHE": cache})
            eq(again.rc, 0, again.err)
            ok(os.stat(copy).st_mtime > 1, "the copy was not used")
            # libc's frames name their source file and line the same way.
            eq(frames(first.out), frames(off.out))
            eq(frames(again.out), frames(off.out))
            # A damaged copy (cut short by a crash) is made again.
            with open(copy, "wb") as f:
                f.write(b"junk")
            fixed = sdtest.run(fx.pid, env={"STACKDUMP_DEBUG_CACHE": cache})
            eq(fixed.rc, 0, fixed.err)
            eq(frames(fixed.out), frames(off.out))
            with open(copy, "rb") as f:
                eq(f.read(4), b"\x7fELF")
            sdtest.assert_running(fx.pid)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_default_directory_only_when_made():
    # A dump writes no file unless asked: ~/.cache/stackdump/debug is used
    # when it exists, and not made when it does not.
    _, bid = libc_debug_file()
    home = tempfile.mkdtemp(prefix="sd-debugcache-home-")
    try:
        env = {"HOME": home, "XDG_CACHE_HOME": ""}
        env_no = dict(env)
        with start("fx-stacks", blocked=6) as fx:
            saved = os.environ.pop("STACKDUMP_DEBUG_CACHE", None)
            try:
                r = sdtest.run(fx.pid, env=env_no)
                eq(r.rc, 0, r.err)
                eq(os.listdir(home), [], "a file written without being asked")
                cache = os.path.join(home, ".cache", "stackdump", "debug")
                os.makedirs(cache)
                r = sdtest.run(fx.pid, env=env)
                eq(r.rc, 0, r.err)
                eq(os.listdir(cache), [bid + ".debug"])
            finally:
                if saved is not None:
                    os.environ["STACKDUMP_DEBUG_CACHE"] = saved
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_unwritable_cache_changes_nothing():
    d = tempfile.mkdtemp(prefix="sd-debugcache-")
    try:
        # A directory under a regular file cannot be made.
        blocker = os.path.join(d, "file")
        open(blocker, "w").close()
        with start("fx-stacks", blocked=6) as fx:
            off = sdtest.run(fx.pid, env={"STACKDUMP_DEBUG_CACHE": "off"})
            r = sdtest.run(fx.pid, env={"STACKDUMP_DEBUG_CACHE": os.path.join(blocker, "c")})
            eq(r.rc, 0, r.err)
            eq(r.err, "")
            eq(frames(r.out), frames(off.out))
        eq(os.listdir(d), ["file"])
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sdtest.main(globals())
