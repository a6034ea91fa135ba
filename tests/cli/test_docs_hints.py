#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Docs and hints agree with the command table in the other direction too:
# every option the README, the man page and the help texts show on a
# stackdump command line exists for that command; every document they point
# to exists; `help shell` and `stackdump shell --help` describe the shell;
# errors in the shell point to `help CMD`; the man page renders its escapes
# and shows examples of each kind of use; trigger conditions have a form a
# shell leaves alone (parked:2).
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sdtest  # noqa: E402
from fixture import start  # noqa: E402
from recordlib import check_recording, record, tempdir  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402

SRC = sdtest.SRC
HIDDEN = {"man-page", "list-commands"}  # generator entry points, not for users


def table():
    t = sdtest.run("--list-commands").json()
    cmds = {}
    for c in t["commands"]:
        names = {o["name"] for o in c.get("options") or []} | {"help"}
        cmds[c["name"]] = names
        if c.get("alias"):
            cmds[c["alias"]] = names
    glob = {g["name"] for g in t["global_options"] if g["name"]} | HIDDEN
    return t, cmds, glob


def command_lines(text):
    """The words after each 'stackdump' that starts a command line in TEXT."""
    for m in re.finditer(r"(?<![\w/.-])stackdump((?: +[^\s`|;#)'\"]+)+)", text):
        yield m.group(1).split()


def unknown_options(text):
    t, cmds, glob = table()
    bad = []
    for words in command_lines(text):
        cmd = next((w for w in words if not w.startswith("-")), None)
        names = cmds.get(cmd, cmds["dump"])  # `stackdump [options] PID` is a dump
        for w in words:
            m = re.match(r"--([a-z][a-z0-9-]*)", w)
            if m and m.group(1) not in names and m.group(1) not in glob:
                bad.append("stackdump %s: --%s" % (" ".join(words)[:60], m.group(1)))
    return bad


def man_text():
    with open(os.path.join(SRC, "docs", "stackdump.1")) as f:
        roff = f.read()
    return re.sub(r"\\f[BIRP]", "", roff).replace("\\-", "-").replace("\\e", "\\")


def test_checker_finds_an_option_a_command_lacks():
    # The check below must be able to fail.
    eq(unknown_options("run `stackdump top --no-idle 42` or stackdump dump --group 1"),
       ["stackdump top --no-idle 42: --no-idle"])


def user_docs():
    """{relative path: text} of README.md and docs/*.md."""
    out = {}
    for rel in ["README.md"] + sorted(os.path.join("docs", n)
                                      for n in os.listdir(os.path.join(SRC, "docs"))
                                      if n.endswith(".md")):
        with open(os.path.join(SRC, rel)) as f:
            out[rel] = f.read()
    return out


def test_readme_man_and_help_show_only_real_options():
    for rel, text in user_docs().items():
        eq(unknown_options(text), [], rel)
    eq(unknown_options(man_text()), [], "docs/stackdump.1")
    t, cmds, glob = table()
    for c in t["commands"]:
        r = sdtest.run("help", c["name"]) if not c["shell_only"] else \
            sdtest.run("-c", "help %s" % c["name"])
        eq(r.rc, 0, r)
        eq(unknown_options(r.out), [], "help %s" % c["name"])


def test_every_document_referenced_exists():
    texts = dict(user_docs())
    texts["docs/stackdump.1"] = man_text()
    t, _, _ = table()
    for c in t["commands"]:
        texts["help %s" % c["name"]] = sdtest.run("-c", "help %s" % c["name"]).out
    texts["--help"] = sdtest.run("--help").out
    missing = []
    for where, text in texts.items():
        for path in re.findall(r"(?<![\w/.])((?:docs|bench|tests|completions|\.ci)/[\w./-]*\w)",
                               text):
            # A program is named by what it builds from (bench/ptrace-floor).
            full = os.path.join(SRC, path)
            if not any(os.path.exists(full + ext) for ext in ("", ".c", ".sh")):
                missing.append("%s: %s" % (where, path))
    eq(missing, [])


def test_help_shell_and_shell_help():
    r = sdtest.run("help", "shell")
    eq(r.rc, 0, r)
    contains(r.out, "usage: stackdump [shell [PID|NAME]]")
    contains(r.out, "separated by ';'")
    contains(r.out, "attach ")  # then the commands
    r2 = sdtest.run("shell", "--help")
    eq(r2.rc, 0, r2)
    eq(r2.out, r.out)
    ok("attach PID|NAME..." not in r2.out.split("\n")[0], "shell --help is attach's help")
    r3 = sdtest.run("-c", "help shell")
    eq(r3.out, r.out)


def test_shell_errors_point_to_help_cmd():
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        r = sdtest.run("-c", "dump --bogus", fx.pid)
        eq(r.rc, 64, r)
        contains(r.err, "dump: unknown option --bogus (see 'help dump')")
        r = sdtest.run("-c", "locks -Z", fx.pid)
        contains(r.err, "(see 'help locks')")
    r = sdtest.run("dump", "--bogus", "1")
    contains(r.err, "dump: unknown option --bogus (see 'stackdump dump --help')")


def test_man_page_escapes_and_examples():
    with open(os.path.join(SRC, "docs", "stackdump.1")) as f:
        roff = f.read()
    # "\e e" renders as "\ e": the escape and its letter must be one token.
    ok(not re.search(r"\\e [a-z]", roff), re.findall(r".{20}\\e [a-z].{10}", roff))
    contains(man_text(), "(\\e, \\n, \\xNN)")
    ex = man_text().split(".SH EXAMPLES")[1].split(".SH")[0]
    for use in ("stackdump profile", "-f svg -o", "stackdump record", "stackdump report",
                "stackdump locks", "stackdump top", "--group", "--timeline-svg"):
        contains(ex, use)


def test_shell_safe_trigger_condition():
    with start("fx-mutex", "normal", "2", parked=2) as fx:
        d = tempdir("parked")
        r = record(fx.pid, "--when", "parked:2", "--burst", "1", "--every", "100ms",
                   "--count", "1", "--out", d)
        eq(r.rc, 0, r.err)
        snaps = check_recording(d)
        eq(len(snaps), 1)
        contains(snaps[0]["reason"], "parked>=2: 2 threads parked in futex waits")
        # What an unquoted parked>=2 leaves of the condition.
        r = record(fx.pid, "--when", "parked", "--out", tempdir("eaten"))
        eq(r.rc, 64, r)
        contains(r.err, "invalid --when condition 'parked': no value (an unquoted '>' is a "
                 "redirection for the shell: write parked:VALUE, or quote it)")
        r = record(fx.pid, "--when", "parked:x", "--out", tempdir("bad"))
        eq(r.rc, 64, r)
        contains(r.err, "expected parked:N, deadlock, cpu:PERCENT or stuck:DURATION")


if __name__ == "__main__":
    sdtest.main(globals())
