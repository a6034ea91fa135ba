#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# One command table: every command and option in it must show in `help`,
# the user documentation (README.md and docs/*.md), the man page and the
# completion scripts. Each failure says
# exactly what is missing where.
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))

import sdtest  # noqa: E402

SRC = sdtest.SRC


def table():
    return sdtest.run("--list-commands").json()


def read(rel):
    path = os.path.join(SRC, rel)
    if not os.path.exists(path):
        raise AssertionError("%s does not exist" % rel)
    with open(path) as f:
        return f.read()


def long_options(t, cli_only=False):
    """(command, option) for every long option of the table."""
    for c in t["commands"]:
        if cli_only and c["shell_only"]:
            continue
        for o in c["options"]:
            yield c["name"], o["name"]


def report(where, gaps):
    if gaps:
        raise AssertionError("%s is missing %d item(s):\n  %s" % (where, len(gaps),
                                                                  "\n  ".join(gaps)))


def test_help_lists_every_command_and_option():
    t = table()
    r = sdtest.run("help")
    sdtest.eq(r.rc, 0, r)
    gaps = ["command '%s'" % c["name"] for c in t["commands"]
            if not re.search(r"(?m)^  %s\b" % re.escape(c["name"]), r.out)]
    for c in t["commands"]:
        h = sdtest.run("help", c["name"])
        sdtest.eq(h.rc, 0, h)
        for o in c["options"]:
            if "--" + o["name"] not in h.out:
                gaps.append("option '%s --%s' (in 'help %s')" % (c["name"], o["name"],
                                                                 c["name"]))
            if o["short"] and "-%s, --%s" % (o["short"], o["name"]) not in h.out:
                gaps.append("short option '%s -%s' (in 'help %s')" % (c["name"], o["short"],
                                                                     c["name"]))
    g = sdtest.run("--help")
    for o in t["global_options"]:
        flag = "--" + o["name"] if o["name"] else "-" + o["short"]
        if flag not in g.out:
            gaps.append("global option '%s' (in 'stackdump --help')" % flag)
    report("help", gaps)


def user_docs():
    """The README (the door) and the reference it leads to, docs/*.md."""
    docs = os.path.join(SRC, "docs")
    names = sorted(n for n in os.listdir(docs) if n.endswith(".md")) if os.path.isdir(docs) else []
    if not names:
        raise AssertionError("docs/ holds no reference (*.md)")
    return "\n".join([read("README.md")] + [read(os.path.join("docs", n)) for n in names])


def test_readme_stays_a_door():
    # The README is what it is, the quick start, what to run when, a tour
    # and links: the reference lives in docs/.
    text = read("README.md")
    n = text.count("\n")
    sdtest.ok(n <= 420, "README.md is %d lines (at most about 400: move reference to docs/)" % n)
    for heading in ("## Quick start", "## What to run when", "## A tour", "## Documentation"):
        sdtest.contains(text, "\n%s\n" % heading)
    for link in re.findall(r"\]\(((?:docs|bench)/[^)#]+|ARCHITECTURE\.md)", text):
        sdtest.ok(os.path.exists(os.path.join(SRC, link)), "README links to missing %s" % link)


def test_readme_documents_every_command_and_option():
    t = table()
    text = user_docs()
    # A command counts when it shows as code: `locks`, `stackdump locks
    # PID`, or a line of a fenced block.
    code = "\n".join(re.findall(r"`([^`\n]+)`", text))
    code += "\n" + "\n".join(re.findall(r"(?ms)^```[^\n]*\n(.*?)^```", text))
    gaps = []
    for c in t["commands"]:
        if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(c["name"]), code):
            gaps.append("command `%s`" % c["name"])
    for cmd, opt in long_options(t):
        if not re.search(r"--%s(?![\w-])" % re.escape(opt), text):
            gaps.append("option `--%s` (of %s)" % (opt, cmd))
    for o in t["global_options"]:
        if o["name"] and not re.search(r"--%s(?![\w-])" % re.escape(o["name"]), text):
            gaps.append("global option `--%s`" % o["name"])
    report("README.md and docs/*.md", sorted(set(gaps), key=gaps.index))


def test_man_page_documents_every_command_and_option():
    t = table()
    text = read("docs/stackdump.1")
    gaps = []
    for c in t["commands"]:
        if not re.search(r"(?m)^\.SS %s\b" % re.escape(c["name"]), text):
            gaps.append("command '%s' (a .SS section)" % c["name"])
    for cmd, opt in long_options(t):
        if "\\-\\-" + opt.replace("-", "\\-") not in text:
            gaps.append("option '%s --%s'" % (cmd, opt))
    for o in t["global_options"]:
        if o["name"] and "\\-\\-" + o["name"].replace("-", "\\-") not in text:
            gaps.append("global option '--%s'" % o["name"])
    report("docs/stackdump.1", gaps)


def test_completion_scripts_offer_every_command_and_option():
    t = table()
    scripts = {
        "completions/stackdump.bash": (lambda name: r"(?<![\w-])%s(?![\w-])" % name,
                                       lambda opt: r"--%s(?![\w-])" % opt),
        "completions/_stackdump": (lambda name: r"'%s:" % name,
                                   lambda opt: r"--%s(?![\w-])" % opt),
        "completions/stackdump.fish": (lambda name: r"-a %s -d" % name,
                                       lambda opt: r"-l %s(?![\w-])" % opt),
    }
    gaps = []
    for rel, (cmd_rx, opt_rx) in scripts.items():
        text = read(rel)
        for c in t["commands"]:
            if c["shell_only"]:
                continue  # not a command of the command line
            if not re.search(cmd_rx(re.escape(c["name"])), text):
                gaps.append("%s: command '%s'" % (rel, c["name"]))
            for o in c["options"]:
                if not re.search(opt_rx(re.escape(o["name"])), text):
                    gaps.append("%s: option '%s --%s'" % (rel, c["name"], o["name"]))
        for o in t["global_options"]:
            if o["name"] and not re.search(opt_rx(re.escape(o["name"])), text):
                gaps.append("%s: global option '--%s'" % (rel, o["name"]))
    report("the completion scripts", gaps)


def test_shell_help_lists_shell_commands():
    # In the shell, help shows the whole table, shell-only commands too.
    t = table()
    r = sdtest.run(input="help\n", env={"XDG_STATE_HOME": "/nonexistent"})
    sdtest.eq(r.rc, 0, r)
    report("'help' in the shell", ["command '%s'" % c["name"] for c in t["commands"]
                                   if not re.search(r"(?m)^  %s\b" % re.escape(c["name"]),
                                                    r.out)])


if __name__ == "__main__":
    sdtest.main(globals(), needs_ptrace=False)
