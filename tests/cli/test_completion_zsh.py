#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# zsh completion: completions/_stackdump loaded by compinit in a real,
# interactive zsh on a pseudo-terminal, then Tab on command lines. Skipped
# (77) when zsh is not installed.
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
sys.path.insert(0, HERE)

import sdtest  # noqa: E402
from fixture import path_of, start  # noqa: E402
import ptyshell  # noqa: E402

ZSH = shutil.which("zsh")
TMP = tempfile.mkdtemp(prefix="sd-zsh-")


class Zsh(ptyshell.PtyShell):
    """An interactive zsh with only our completion function on $fpath."""

    def __init__(self):
        fdir = os.path.join(TMP, "fpath")
        os.makedirs(fdir, exist_ok=True)
        shutil.copy(os.path.join(sdtest.SRC, "completions", "_stackdump"), fdir)
        bindir = os.path.join(TMP, "bin")
        os.makedirs(bindir, exist_ok=True)
        link = os.path.join(bindir, "stackdump")
        if not os.path.exists(link):
            os.symlink(sdtest.binary(), link)
        rc = os.path.join(TMP, ".zshrc")
        with open(rc, "w") as f:
            f.write("PS1='ZSH> '\nunsetopt PROMPT_SP\nfpath=(%s $fpath)\nautoload -U compinit\n"
                    "compinit -u -D\nPATH=%s:$PATH\n" % (fdir, bindir))
        super().__init__(env={"ZDOTDIR": TMP, "HOME": TMP}, argv=[ZSH, "-i"])

    def complete(self, line, want):
        """Type LINE and Tab; wait for the line to read WANT (a regex)."""
        self.expect(r"ZSH> $")
        self.send(line + "\t")
        self.expect(want)
        self.send("\x15")  # kill the line
        self.sendline("")


def test_zsh_completes_commands_options_values_and_names():
    name = "sdzsh%d" % (os.getpid() % 100000)
    path = os.path.join(TMP, name)
    shutil.copy(path_of("fx-mutex"), path)
    with start(path, "normal", "1", parked=1), Zsh() as z:
        z.complete("stackdump thr", r"stackdump threads ")
        z.complete("stackdump help att", r"stackdump help attach ")
        z.complete("stackdump dump --for", r"stackdump dump --format=")
        z.complete("stackdump dump --format j", r"stackdump dump --format json ")
        z.complete("stackdump locks --fo", r"stackdump locks --format=")
        z.complete("stackdump --completion z", r"stackdump --completion zsh ")
        z.complete("stackdump %s" % name[:-2], r"stackdump %s " % name)
        z.complete("stackdump dump %s" % name[:-1], r"stackdump dump %s " % name)
        os.makedirs(os.path.join(TMP, "snaps"), exist_ok=True)
        open(os.path.join(TMP, "snaps", "one.json"), "w").close()
        z.complete("stackdump load %s/snaps/o" % TMP,
                   re.escape("stackdump load %s/snaps/one.json " % TMP))


def test_zsh_offers_every_option_of_every_command():
    t = sdtest.run("--list-commands").json()
    with Zsh() as z:
        for c in t["commands"]:
            if c["shell_only"] or not c["options"]:
                continue
            o = c["options"][-1]
            # A unique prefix of the long option completes to it.
            names = ["--" + p["name"] for p in c["options"]] + ["--help"]
            full = "--" + o["name"]
            n = 3
            while sum(x.startswith(full[:n]) for x in names) > 1:
                n += 1
            z.complete("stackdump %s %s" % (c["name"], full[:n]),
                       re.escape("stackdump %s %s" % (c["name"], full)))


if __name__ == "__main__":
    try:
        sdtest.main(globals(), needs_ptrace=False, tools=[("zsh", "zsh")])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
