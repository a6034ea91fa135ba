#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# fish completion: completions/stackdump.fish sourced in a real fish, asked
# with `complete -C LINE` for commands, every option of every command, their
# values, process names and files. Skipped (77) when fish is not installed.
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))

import sdtest  # noqa: E402
from fixture import path_of, start  # noqa: E402

FISH = shutil.which("fish")
SCRIPT = os.path.join(sdtest.SRC, "completions", "stackdump.fish")
TMP = tempfile.mkdtemp(prefix="sd-fish-")


def fish_complete(line):
    """The candidates fish offers for LINE (the words, descriptions cut)."""
    p = subprocess.run([FISH, "--no-config", "-c", 'source $argv[1]; complete -C $argv[2]',
                        SCRIPT, line], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, HOME=TMP, XDG_CONFIG_HOME=TMP, XDG_DATA_HOME=TMP))
    if p.returncode != 0 or p.stderr:
        raise AssertionError("fish failed (%d): %s" % (p.returncode, p.stderr))
    return [ln.split("\t")[0] for ln in p.stdout.splitlines()]


def test_fish_completes_commands():
    t = sdtest.run("--list-commands").json()
    got = fish_complete("stackdump ")
    for c in t["commands"]:
        if c["shell_only"]:
            sdtest.ok(c["name"] not in got, "shell-only %s offered" % c["name"])
        else:
            sdtest.ok(c["name"] in got, "%s not offered" % c["name"])
    sdtest.eq(fish_complete("stackdump thr"), ["threads"])
    sdtest.eq(fish_complete("stackdump help att"), ["attach"])
    sdtest.eq(sorted(fish_complete("stackdump --completion ")), ["bash", "fish", "zsh"])


def test_fish_completes_every_option_and_its_values():
    for c in sdtest.run("--list-commands").json()["commands"]:
        if c["shell_only"]:
            continue
        got = set(fish_complete("stackdump %s --" % c["name"]))
        want = {"--" + o["name"] for o in c["options"]} | {"--help"}
        sdtest.eq(got, want, "options of %s" % c["name"])
        for o in c["options"]:
            if o["choices"]:
                line = "stackdump %s --%s " % (c["name"], o["name"])
                sdtest.eq(sorted(fish_complete(line)), sorted(o["choices"]), line)


def test_fish_completes_process_names_and_files():
    name = "sdfish%d" % (os.getpid() % 100000)
    path = os.path.join(TMP, name)
    shutil.copy(path_of("fx-mutex"), path)
    with start(path, "normal", "1", parked=1) as fx:
        sdtest.ok(name in fish_complete("stackdump %s" % name[:-2]))
        sdtest.ok(name in fish_complete("stackdump dump %s" % name[:-1]))
        sdtest.ok(str(fx.pid) in fish_complete("stackdump dump %d" % fx.pid))
    open(os.path.join(TMP, "snap-2.json"), "w").close()
    sdtest.eq(fish_complete("stackdump load %s/snap-" % TMP), ["%s/snap-2.json" % TMP])


if __name__ == "__main__":
    try:
        sdtest.main(globals(), needs_ptrace=False, tools=[("fish", "fish")])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
