#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Shell completion: the committed completions/ and docs/stackdump.1 are
# what the binary generates from the command table, and the bash script
# works in a real bash (COMP_WORDS/COMP_CWORD in, COMPREPLY out) for every
# command and option of the table.
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))

import sdtest  # noqa: E402
from fixture import path_of, start  # noqa: E402

SRC = sdtest.SRC
BASH = os.path.join(SRC, "completions", "stackdump.bash")
GENERATED = {
    "completions/stackdump.bash": ("--completion", "bash"),
    "completions/_stackdump": ("--completion", "zsh"),
    "completions/stackdump.fish": ("--completion", "fish"),
    "docs/stackdump.1": ("--man-page",),
}
TMP = tempfile.mkdtemp(prefix="sd-completion-")


def table():
    return sdtest.run("--list-commands").json()


def bash_complete(*words, cwd=None):
    """COMPREPLY of _stackdump for the command line WORDS (the last is the
    word being completed), in a real bash with the committed script."""
    script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); '
              'COMPREPLY=(); _stackdump; printf "%s\\n" "${COMPREPLY[@]}"')
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", script, "bash", BASH,
                        "stackdump"] + list(words), capture_output=True, text=True,
                       timeout=120, cwd=cwd)
    if p.returncode != 0 or p.stderr:
        raise AssertionError("bash failed (%d): %s" % (p.returncode, p.stderr))
    return [w for w in p.stdout.split("\n") if w]


def test_generated_files_are_in_step_with_the_table():
    stale = []
    for rel, args in GENERATED.items():
        r = sdtest.run(*args)
        sdtest.eq(r.rc, 0, r)
        try:
            with open(os.path.join(SRC, rel)) as f:
                committed = f.read()
        except FileNotFoundError:
            committed = None
        if committed != r.out:
            stale.append(rel)
    if stale:
        raise AssertionError(
            "out of step with the command table: %s; regenerate with "
            "`cmake --build BUILD --target regen-docs` (or `stackdump --completion bash > "
            "completions/stackdump.bash`, zsh > completions/_stackdump, fish > "
            "completions/stackdump.fish, --man-page > docs/stackdump.1)" % ", ".join(stale))


def test_completion_rejects_an_unknown_shell():
    r = sdtest.run("--completion", "tcsh")
    sdtest.eq(r.rc, 64)
    sdtest.contains(r.err, "unsupported shell 'tcsh' (bash, zsh or fish)")
    sdtest.eq(sdtest.run("--completion").rc, 64)


def test_bash_completes_commands():
    t = table()
    cli = sorted(c["name"] for c in t["commands"] if not c["shell_only"])
    got = bash_complete("")
    for name in cli + ["shell"]:
        sdtest.ok(name in got, "%s not offered: %r" % (name, got))
    for c in t["commands"]:
        if c["shell_only"]:
            sdtest.ok(c["name"] not in got, "shell-only %s offered on the command line"
                      % c["name"])
    sdtest.eq(bash_complete("thr"), ["threads"])
    # help takes any command, shell-only ones too.
    sdtest.eq(bash_complete("help", "att"), ["attach"])


def test_bash_completes_every_option_of_every_command():
    for c in table()["commands"]:
        if c["shell_only"]:
            continue
        got = set(bash_complete(c["name"], "--"))
        want = {"--" + o["name"] for o in c["options"]} | {"--help"}
        sdtest.eq(got, want, "options of %s" % c["name"])
        if c["alias"]:
            sdtest.eq(set(bash_complete(c["alias"], "--")), want, "alias %s" % c["alias"])
        for o in c["options"]:
            if o["choices"]:
                words = [c["name"], "--" + o["name"], ""]
                sdtest.eq(sorted(bash_complete(*words)), sorted(o["choices"]), words)
                if o["short"]:
                    words = [c["name"], "-" + o["short"], ""]
                    sdtest.eq(sorted(bash_complete(*words)), sorted(o["choices"]), words)
                # --opt=value comes to bash as three words.
                words = [c["name"], "--" + o["name"], "=", o["choices"][0][:1]]
                sdtest.ok(o["choices"][0] in bash_complete(*words), words)


def test_bash_completes_the_top_level():
    sdtest.eq(bash_complete("--completion", "z"), ["zsh"])
    sdtest.eq(bash_complete("--vers"), ["--version"])
    # `stackdump [options] PID` is a dump: its options are offered.
    sdtest.ok("--format" in bash_complete("--for"))
    sdtest.eq(bash_complete("--format", "js"), ["json"])
    sdtest.eq(bash_complete("--format", "json", "thr"), ["threads"])


def test_bash_completes_pids_and_process_names():
    name = "sdbash%d" % (os.getpid() % 100000)
    path = os.path.join(TMP, name)
    shutil.copy(path_of("fx-mutex"), path)
    with start(path, "normal", "1", parked=1) as fx:
        sdtest.eq(bash_complete(name[:-2]), [name])
        sdtest.eq(bash_complete("dump", name[:-1]), [name])
        sdtest.eq(bash_complete("shell", name[:-1]), [name])
        sdtest.ok(str(fx.pid) in bash_complete("dump", str(fx.pid)[:-1]))
        sdtest.ok(str(fx.pid) in bash_complete(str(fx.pid)))


def test_bash_completes_files():
    d = os.path.join(TMP, "files")
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "snap-1.json"), "w").close()
    sdtest.eq(bash_complete("load", os.path.join(d, "sna")), [os.path.join(d, "snap-1.json")])
    sdtest.eq(bash_complete("load", "sna", cwd=d), ["snap-1.json"])


if __name__ == "__main__":
    try:
        sdtest.main(globals(), needs_ptrace=False)
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
