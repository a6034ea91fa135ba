#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The interactive shell driven through a pseudo-terminal: the prompt and its
# target, Tab completion (commands, options, process names, threads),
# history across sessions, Ctrl-C during a long command and at the prompt,
# Ctrl-D, a target exiting while the shell waits, colour and escaping.
import os
import re
import shutil
import signal
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
sys.path.insert(0, HERE)

import sdtest  # noqa: E402
from fixture import path_of, start  # noqa: E402
from ptyshell import CTRL_C, CTRL_D, UP, PtyShell  # noqa: E402

TMP = tempfile.mkdtemp(prefix="sd-shell-pty-")


def state_dir():
    """A fresh XDG_STATE_HOME, so no test sees another's history."""
    return tempfile.mkdtemp(dir=TMP)


def unique_fixture():
    """fx-mutex copied under a name no other process has (comm <= 15)."""
    name = "sdtab%d" % (os.getpid() % 100000)
    dst = os.path.join(TMP, name)
    if not os.path.exists(dst):
        shutil.copy(path_of("fx-mutex"), dst)
    return name, dst


def commands():
    return {c["name"]: c for c in sdtest.run("--list-commands").json()["commands"]}


def tracer_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    return 0


def test_prompt_without_and_with_target():
    with PtyShell(env={"XDG_STATE_HOME": state_dir()}) as sh:
        sh.expect(r"(?m)^stackdump> ")
        sh.sendline("quit")
        sdtest.eq(sh.wait_exit(), 0)
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        with PtyShell(["shell", fx.pid], env={"XDG_STATE_HOME": state_dir()}) as sh:
            sh.expect(r"attached to %d \"fx-mutex\"" % fx.pid)
            sh.expect(r"stackdump %d fx-mutex> " % fx.pid)
            sh.sendline("detach")
            sh.expect(r"detached from %d" % fx.pid)
            sh.expect(r"(?m)^stackdump> ")
            sh.sendline("quit")
            sdtest.eq(sh.wait_exit(), 0)


def test_tab_completes_a_command():
    with PtyShell(env={"XDG_STATE_HOME": state_dir()}) as sh:
        sh.expect_prompt()
        sh.send("thr\t")
        sh.expect(r"threads ")
        # The completed line runs: threads without a target says so.
        sh.sendline("")
        sh.expect(r"no target: attach to a process first")
        sh.expect_prompt()
        sh.sendline("quit")
        sh.wait_exit()


def test_tab_completes_a_process_name():
    name, path = unique_fixture()
    with start(path, "normal", "1", parked=1) as fx:
        with PtyShell(env={"XDG_STATE_HOME": state_dir()}) as sh:
            sh.expect_prompt()
            sh.send("attach %s\t" % name[:-2])
            sh.expect(re.escape("attach %s " % name))
            sh.sendline("")
            sh.expect(r"attached to %d \"%s\"" % (fx.pid, name))
            sh.expect_prompt("%d %s" % (fx.pid, name))
            sh.sendline("quit")
            sdtest.eq(sh.wait_exit(), 0)


def test_tab_completes_options_and_their_values():
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        with PtyShell(["shell", fx.pid], env={"XDG_STATE_HOME": state_dir()}) as sh:
            sh.expect_prompt("%d fx-mutex" % fx.pid)
            sh.send("dump --for\t")
            sh.expect(r"dump --format ")
            sh.send("js\t")
            sh.expect(r"json ")
            sh.sendline("")
            sh.expect(r'"pid": %d' % fx.pid)
            sh.expect_prompt("%d fx-mutex" % fx.pid)
            sh.sendline("quit")
            sdtest.eq(sh.wait_exit(), 0)


def test_tab_lists_threads_of_the_target():
    with start("fx-mutex", "normal", "2", parked=2) as fx:
        tids = fx.tids_by_name()
        with PtyShell(["shell", fx.pid], env={"XDG_STATE_HOME": state_dir()}) as sh:
            sh.expect_prompt("%d fx-mutex" % fx.pid)
            # Two threads start with "wai": the common part, then the list
            # with each name's TID.
            sh.send("dump wai\t")
            sh.expect(r"dump waiter-")
            sh.send("\t\t")  # readline lists the matches on a second try
            sh.expect(r"waiter-1\s+%d\s+waiter-2\s+%d" % (tids["waiter-1"][0],
                                                          tids["waiter-2"][0]))
            sh.send("1\t")
            sh.expect(r"waiter-1 ")
            sh.sendline("")
            sh.expect(r'Thread %d "waiter-1"' % tids["waiter-1"][0])
            sh.expect_prompt("%d fx-mutex" % fx.pid)
            # A TID prefix completes to the TID.
            tid = str(tids["holder"][0])
            sh.send("dump %s\t" % tid[:-1])
            sh.expect(r"dump %s" % tid[:-1])
            sh.send(CTRL_C)
            sh.expect_prompt("%d fx-mutex" % fx.pid)
            sh.sendline("quit")
            sh.wait_exit()


def test_history_is_recalled_in_a_second_session():
    state = state_dir()
    with PtyShell(env={"XDG_STATE_HOME": state}) as sh:
        sh.expect_prompt()
        sh.sendline("show max-frames")
        sh.expect(r"max-frames\s+256")
        sh.expect_prompt()
        sh.sendline("ps no-such-process-xyzzy")
        sh.expect(r"no process matches 'no-such-process-xyzzy'")
        sh.expect_prompt()
        sh.sendline("quit")
        sdtest.eq(sh.wait_exit(), 2)  # the status of the ps before quit
    hist = os.path.join(state, "stackdump", "history")
    with open(hist) as f:
        lines = f.read().splitlines()
    sdtest.eq(lines, ["show max-frames", "ps no-such-process-xyzzy", "quit"])
    with PtyShell(env={"XDG_STATE_HOME": state}) as sh:
        sh.expect_prompt()
        sh.send(UP)
        sh.expect(r"quit")
        sh.send(UP)
        sh.expect(r"ps no-such-process-xyzzy")
        sh.send(UP)
        sh.expect(r"show max-frames")
        sh.sendline("")
        sh.expect(r"max-frames\s+256")
        sh.expect_prompt()
        sh.send(CTRL_D)
        sdtest.eq(sh.wait_exit(), 0)
    with open(hist) as f:
        sdtest.eq(f.read().splitlines()[-1], "show max-frames")


def test_history_falls_back_to_home():
    home = state_dir()
    env = {"HOME": home, "XDG_STATE_HOME": ""}
    with PtyShell(env=env) as sh:
        sh.expect_prompt()
        sh.sendline("show color")
        sh.expect(r"color\s+auto")
        sh.expect_prompt()
        sh.send(CTRL_D)
        sh.wait_exit()
    with open(os.path.join(home, ".local", "state", "stackdump", "history")) as f:
        sdtest.eq(f.read().splitlines(), ["show color"])


def test_ctrl_c_during_profile_returns_to_the_prompt_target_running():
    with start("fx-busy") as fx:
        with PtyShell(["shell", fx.pid], env={"XDG_STATE_HOME": state_dir()}) as sh:
            sh.expect_prompt("%d fx-busy" % fx.pid)
            sh.sendline("profile --duration 0")
            # On a terminal profile shows its progress: it is sampling.
            sh.expect(r"sampling 1 process: [1-9]\d* samples")
            sh.send(CTRL_C)
            sh.expect_prompt("%d fx-busy" % fx.pid)
            sdtest.assert_running(fx.pid)
            sdtest.eq(tracer_of(fx.pid), 0)
            # The shell still works and the target is still its target.
            sh.sendline("threads")
            sh.expect(r"\bspinner\s+R\b")
            sh.expect_prompt("%d fx-busy" % fx.pid)
            sh.sendline("quit")
            sh.wait_exit()
            sdtest.ok(fx.alive(), "the target must outlive the shell")
            sdtest.assert_running(fx.pid)


def test_ctrl_c_during_a_shell_escape():
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        with PtyShell(["shell", fx.pid], env={"XDG_STATE_HOME": state_dir()}) as sh:
            sh.expect_prompt("%d fx-mutex" % fx.pid)
            sh.sendline("!echo started-$STACKDUMP_PID; exec sleep 600")
            sh.expect(r"started-%d" % fx.pid)
            sh.send(CTRL_C)
            sh.expect_prompt("%d fx-mutex" % fx.pid)
            sdtest.assert_running(fx.pid)
            sh.sendline("quit")
            # quit keeps the status of the interrupted command.
            sdtest.eq(sh.wait_exit(), 130)


def test_ctrl_c_at_the_prompt_drops_the_line():
    with PtyShell(env={"XDG_STATE_HOME": state_dir()}) as sh:
        sh.expect_prompt()
        sh.send("bogus-command")
        sh.expect(r"bogus-command")
        sh.send(CTRL_C)
        sh.expect_prompt()
        sh.sendline("show format")
        sh.expect(r"format\s+text")
        sdtest.ok("unknown command" not in sh.seen, sh.seen)
        sh.expect_prompt()
        sh.send(CTRL_D)
        sdtest.eq(sh.wait_exit(), 0)


def test_ctrl_d_detaches_every_target():
    with start("fx-mutex", "normal", "1", parked=1) as a, \
            start("fx-mutex", "recursive", "1", parked=1) as b:
        with PtyShell(env={"XDG_STATE_HOME": state_dir()}) as sh:
            sh.expect_prompt()
            sh.sendline("attach %d %d" % (a.pid, b.pid))
            sh.expect(r"attached to %d" % b.pid)
            sh.expect_prompt(r"%d fx-mutex" % a.pid)
            sh.sendline("dump")
            sh.expect(r"waiting for mutex")
            sh.expect_prompt(r"%d fx-mutex" % a.pid)
            sh.sendline("use 2")
            sh.expect_prompt(r"%d fx-mutex" % b.pid)
            sh.send(CTRL_D)
            sdtest.eq(sh.wait_exit(), 0)
        for fx in (a, b):
            sdtest.ok(fx.alive())
            sdtest.assert_running(fx.pid)
            sdtest.eq(tracer_of(fx.pid), 0)


def test_sigterm_at_the_prompt_detaches_and_exits_130():
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        with PtyShell(["shell", fx.pid], env={"XDG_STATE_HOME": state_dir()}) as sh:
            sh.expect_prompt("%d fx-mutex" % fx.pid)
            os.kill(sh.pid, signal.SIGTERM)
            sdtest.eq(sh.wait_exit(), 130)
        sdtest.ok(fx.alive())
        sdtest.assert_running(fx.pid)
        sdtest.eq(tracer_of(fx.pid), 0)


def test_target_exit_is_noticed_at_the_prompt():
    fx = start("fx-mutex", "normal", "1", parked=1)
    try:
        with PtyShell(["shell", fx.pid], env={"XDG_STATE_HOME": state_dir()}) as sh:
            sh.expect_prompt("%d fx-mutex" % fx.pid)
            sh.send("thr")  # a half-typed line survives the notice
            sh.expect(r"thr")
            fx.stop()
            sh.expect(r"process %d \"fx-mutex\" exited \(detached\)" % fx.pid)
            sh.expect(r"(?m)^stackdump> thr")
            sh.send("eads\r")
            sh.expect(r"no target")
            sh.expect_prompt()
            sh.send(CTRL_D)
            sh.wait_exit()
    finally:
        fx.stop()


def test_color_on_a_terminal_unless_no_color():
    sgr = re.compile(rb"\x1b\[[0-9;]*m")
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        with PtyShell(["shell", fx.pid], env={"XDG_STATE_HOME": state_dir()},
                      color=True) as sh:
            sh.expect_prompt("%d fx-mutex" % fx.pid)
            sh.sendline("dump")
            sh.expect(r"Thread %d" % fx.pid)
            sh.expect_prompt("%d fx-mutex" % fx.pid)
            sdtest.ok(sgr.search(sh.raw), "no colour on a terminal: %r" % sh.raw[-500:])
            sh.sendline("quit")
            sh.wait_exit()
        with PtyShell(["shell", fx.pid], env={"XDG_STATE_HOME": state_dir()},
                      color=False) as sh:
            sh.expect_prompt("%d fx-mutex" % fx.pid)
            sh.sendline("dump")
            sh.expect(r"Thread %d" % fx.pid)
            sh.expect_prompt("%d fx-mutex" % fx.pid)
            sh.sendline("quit")
            sh.wait_exit()
            sdtest.ok(not sgr.search(sh.raw), "colour despite NO_COLOR: %r"
                      % sgr.findall(sh.raw)[:5])


def test_prompt_escapes_the_target_name():
    code = ("import os, sys, time\n"
            "open('/proc/self/comm', 'w').write('\\x1b[31mevil\\x07')\n"
            "print('ready %d' % os.getpid(), flush=True)\n"
            "time.sleep(600)\n")
    with start(sys.executable, "-c", code) as fx:
        with PtyShell(["shell", fx.pid], env={"XDG_STATE_HOME": state_dir()}) as sh:
            sh.expect(re.escape(r'stackdump %d \e[31mevil\x07> ' % fx.pid))
            sh.sendline("threads")
            sh.expect(re.escape(r'\e[31mevil\x07'))
            sh.expect_prompt()
            sh.sendline("quit")
            sh.wait_exit()
            sdtest.ok(b"\x1b[31m" not in sh.raw, "a raw escape from the target reached the terminal")


if __name__ == "__main__":
    try:
        sdtest.main(globals())
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
