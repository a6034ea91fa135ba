#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# stdout carries only the output asked for, in every mode (-c, scripts on
# stdin, pipes); status lines ("attached to ...", "saved ...") go to stderr.
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sdtest  # noqa: E402
from fixture import start  # noqa: E402


def pipe_to_json_tool(args):
    """stackdump ARGS | python3 -m json.tool, as a user types it."""
    env = dict(os.environ, NO_COLOR="1")
    env.pop("DEBUGINFOD_URLS", None)
    sd = subprocess.Popen([sdtest.binary()] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env)
    tool = subprocess.run([sys.executable, "-m", "json.tool"], stdin=sd.stdout,
                          capture_output=True, text=True, timeout=120)
    sd.stdout.close()
    err = sd.stderr.read().decode()
    sd.wait(timeout=120)
    return sd.returncode, tool, err


def test_c_locks_json_pipes_into_json_tool():
    with start("fx-mutex", "normal", "2", parked=2) as fx:
        rc, tool, err = pipe_to_json_tool(["-c", "locks --format json", fx.pid])
        sdtest.eq(rc, 0, err)
        sdtest.eq(tool.returncode, 0, "json.tool failed: %s" % tool.stderr)
        doc = json.loads(tool.stdout)
        sdtest.eq(doc["pid"], fx.pid)
        sdtest.eq(doc["locks"][0]["owner"], fx.tid("holder"))
        sdtest.contains(err, 'attached to %d "fx-mutex"' % fx.pid)


def test_c_dump_json_then_save_keeps_stdout_json():
    d = tempfile.mkdtemp(prefix="sd-streams-")
    snap = os.path.join(d, "s.json")
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        r = sdtest.run("-c", "dump --format json; save %s; detach" % snap, fx.pid)
        sdtest.eq(r.rc, 0, r)
        doc = json.loads(r.out)
        sdtest.eq(doc["pid"], fx.pid)
        sdtest.contains(r.err, "saved the snapshot of %d" % fx.pid)
        sdtest.contains(r.err, "detached from %d" % fx.pid)
        # load in a script: its description is status too.
        r = sdtest.run("-c", "load %s; locks --format json" % snap)
        sdtest.eq(r.rc, 0, r)
        sdtest.eq(json.loads(r.out)["pid"], fx.pid)
        sdtest.contains(r.err, "loaded %s" % snap)
    os.unlink(snap)
    os.rmdir(d)


def test_script_on_stdin_keeps_stdout_json():
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        r = sdtest.run(input="attach %d\nthreads --format json\nuse 1\ndetach\n" % fx.pid)
        sdtest.eq(r.rc, 0, r)
        doc = json.loads(r.out)
        sdtest.ok(isinstance(doc, (dict, list)), r.out)
        sdtest.contains(r.err, "attached to %d" % fx.pid)
        sdtest.contains(r.err, "current target: %d" % fx.pid)


if __name__ == "__main__":
    sdtest.main(globals())
