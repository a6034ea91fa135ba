#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The shell without a terminal: scripts piped on stdin, -c 'cmd; cmd' PID,
# source FILE and !cmd, exit statuses (the last command's), the shell
# commands (attach, detach, targets, use, ps, threads, set, show, quit) and
# a session through attach, threads, dump, locks, save, load, detach, quit.
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))

import sdtest  # noqa: E402
from fixture import path_of, start  # noqa: E402

TMP = tempfile.mkdtemp(prefix="sd-shell-script-")


def sh(script, *args, env=None):
    """Pipe SCRIPT into `stackdump [ARGS]` (stdin is not a terminal)."""
    e = {"XDG_STATE_HOME": TMP}
    if env:
        e.update(env)
    return sdtest.run(*args, input=script, env=e)


def commands():
    return {c["name"]: c for c in sdtest.run("--list-commands").json()["commands"]}


def tracer_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    return 0


def test_session_attach_threads_dump_locks_save_load_detach_quit():
    snap = os.path.join(TMP, "session.json")
    with start("fx-mutex", "normal", "2", parked=2) as fx:
        tids = fx.tids_by_name()
        holder = tids["holder"][0]
        lines = ["attach %d" % fx.pid, "threads", "dump", "locks", "save %s" % snap, "detach",
                 "load %s" % snap, "targets", "threads", "locks", "detach", "quit"]
        r = sh("\n".join(lines) + "\n")
        sdtest.eq(r.rc, 0, r)
        out = r.out
        sdtest.contains(r.err, 'attached to %d "fx-mutex", 4 threads (target 1)' % fx.pid)
        # threads before any snapshot: /proc only, futex address.
        sdtest.matches(out, r"(?m)^\s*%d\s+waiter-1\s+S\s+futex 0x[0-9a-f]+\s+\d+\.\d" %
                       tids["waiter-1"][0])
        sdtest.matches(out, r'Thread %d "waiter-1" S waiting for mutex 0x[0-9a-f]+ '
                       r'<g_ledger_lock> held by %d "holder"' % (tids["waiter-1"][0], holder))
        sdtest.matches(out, r"mutex 0x[0-9a-f]+ <g_ledger_lock>.*2 waiters")
        sdtest.ok(os.path.getsize(snap) > 0, "save wrote nothing")
        sdtest.contains(r.err, 'detached from %d "fx-mutex"' % fx.pid)
        sdtest.matches(r.err, r"loaded .*session\.json: pid %d \"fx-mutex\", "
                       r"4 threads" % fx.pid)
        # threads of the loaded snapshot: lock waits as analyzed, no CPU%.
        sdtest.matches(out, r"(?m)^snapshot .*session\.json: PID %d" % fx.pid)
        sdtest.matches(out, r'(?m)^\s*%d\s+waiter-2\s+S\s+mutex 0x[0-9a-f]+ <g_ledger_lock> '
                       r'held by %d "holder"\s+-' % (tids["waiter-2"][0], holder))
        sdtest.contains(r.err, "closed the loaded snapshot")
        sdtest.assert_running(fx.pid)
        sdtest.eq(tracer_of(fx.pid), 0)


def test_dump_shows_a_loaded_snapshot():
    snap = os.path.join(TMP, "for-dump.json")
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        r = sh("attach %d\ndump\nsave %s\n" % (fx.pid, snap))
        sdtest.eq(r.rc, 0, r)
    # The process is gone: the snapshot alone is looked at.
    r = sh("load %s\ndump\n" % snap)
    sdtest.eq(r.rc, 0, "dump does not look at the loaded snapshot (session->loaded): %r" % r)
    sdtest.contains(r.out, '"waiter-1"')


def test_c_runs_commands_on_a_target():
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        r = sdtest.run("-c", "threads; dump --no-source", fx.pid)
        sdtest.eq(r.rc, 0, r)
        sdtest.contains(r.err, 'attached to %d "fx-mutex"' % fx.pid)
        sdtest.matches(r.out, r"(?m)^\s*%d\s+holder\s+S\s" % fx.tid("holder"))
        sdtest.matches(r.out, r'Thread %d "waiter-1" S waiting for mutex' % fx.tid("waiter-1"))
        # dump fed threads: its lock waits now show in threads.
        r = sdtest.run("-c", "dump; threads", fx.pid)
        sdtest.eq(r.rc, 0, r)
        sdtest.matches(r.out, r"(?m)^\s*%d\s+waiter-1\s+S\s+mutex 0x[0-9a-f]+ <g_ledger_lock> held "
                       r"by %d \"holder\"" % (fx.tid("waiter-1"), fx.tid("holder")))
        sdtest.contains(r.out, "lock waits as of the last snapshot")
        sdtest.assert_running(fx.pid)


def test_commands_on_a_process_take_the_current_target():
    # Every command that looks at a process declares it in the table, which
    # resolves the shell's current target for it.
    table = commands()
    for name in ("dump", "profile", "record", "locks", "threads", "top"):
        sdtest.ok(table[name]["needs_target"], name)
    for name in ("attach", "diff", "load", "report", "ps", "save"):
        sdtest.ok(not table[name]["needs_target"], name)
    rec = os.path.join(TMP, "rec-current")
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        r = sh("attach %d\nprofile -c 2 -r 20 -q -f folded\n"
               "record --every 100ms --count 2 --out %s -q\n" % (fx.pid, rec))
        sdtest.eq(r.rc, 0, r)
        sdtest.contains(r.out, "waiter_main")
        snaps = [f for f in os.listdir(rec) if f.startswith("snap-")]
        sdtest.eq(len(snaps), 2, snaps)
        with open(os.path.join(rec, snaps[0])) as f:
            sdtest.eq(json.load(f)["pid"], fx.pid)
        # In the shell, dump's arguments select threads of the target.
        r = sh("attach %d\ndump waiter-1\n" % fx.pid)
        sdtest.eq(r.rc, 0, r)
        sdtest.contains(r.out, "1 of 3 threads")
        sdtest.matches(r.out, r'Thread %d "waiter-1"' % fx.tid("waiter-1"))
        sdtest.assert_running(fx.pid)
    # Without a target, each says what it misses.
    for line, msg in (("dump", "dump: missing argument (PID...)"),
                      ("profile -c 1", "profile: missing argument (PID|NAME... or --pid-of"),
                      ("record --every 1s --out %s" % rec, "record: missing target"),
                      ("locks", "no target: attach to a process first")):
        r = sh(line + "\n")
        sdtest.eq(r.rc, 2 if line == "locks" else 64, r)
        sdtest.contains(r.err, msg)


def test_exit_status_is_the_last_commands():
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        sdtest.eq(sdtest.run("-c", "threads; no-such-command", fx.pid).rc, 64)
        sdtest.eq(sdtest.run("-c", "no-such-command; threads", fx.pid).rc, 0)
        sdtest.eq(sh("attach %d\nuse 7\n" % fx.pid).rc, 64)
        sdtest.eq(sh("attach %d\nuse 7\nthreads\n" % fx.pid).rc, 0)
        # quit keeps the status before it; quit N sets it.
        sdtest.eq(sh("attach %d\nuse 7\nquit\nthreads\n" % fx.pid).rc, 64)
        sdtest.eq(sh("quit 3\nthreads\n").rc, 3)
        sdtest.eq(sh("exit 5\n").rc, 5)
        sdtest.eq(sh("quit 300\n").rc, 64)
        # A failing attach in -c runs nothing else.
        r = sdtest.run("-c", "show format", "no-such-process-xyzzy")
        sdtest.eq(r.rc, 2, r)
        sdtest.eq(r.out, "")
        sdtest.contains(r.err, "no process named 'no-such-process-xyzzy'")
        # An empty script succeeds.
        sdtest.eq(sh("").rc, 0)
        sdtest.eq(sh("# only a comment\n\n").rc, 0)


def test_attach_errors_and_several_targets():
    r = sh("attach 999999999\n")
    sdtest.eq(r.rc, 2, r)
    sdtest.matches(r.err, r"no such process: 999999999|invalid process id")
    r = sh("attach %d\n" % os.getpid())
    sdtest.eq(r.rc, 0, r)  # our parent, the test, is a fine target
    name = "sdtwin%d" % (os.getpid() % 100000)
    path = os.path.join(TMP, name)
    shutil.copy(path_of("fx-mutex"), path)
    with start(path, "normal", "1", parked=1) as a, start(path, "normal", "1", parked=1) as b:
        r = sh("attach %s\n" % name)
        sdtest.eq(r.rc, 2, r)
        sdtest.contains(r.err, "2 processes named '%s'" % name)
        r = sh("attach --all %s\ntargets\nuse %d\ntargets\nthreads\ndetach\ntargets\n"
               "detach all\ntargets\n" % (name, b.pid))
        sdtest.eq(r.rc, 0, r)
        sdtest.contains(r.err, "attached to %d" % a.pid)
        sdtest.contains(r.err, "attached to %d" % b.pid)
        tables = r.out.split("     N      PID")
        sdtest.matches(tables[1], r"(?m)^  \*  1\s+%d\s+3\s+S\s+%s" % (a.pid, name))
        sdtest.matches(tables[1], r"(?m)^     2\s+%d\s+3\s+S\s+%s" % (b.pid, name))
        sdtest.contains(r.err, "current target: %d \"%s\" (target 2)" % (b.pid, name))
        sdtest.matches(tables[2], r"(?m)^  \*  2\s+%d" % b.pid)
        sdtest.contains(r.out, 'PID %d "%s": 3 threads' % (b.pid, name))
        sdtest.contains(r.err, 'detached from %d "%s"' % (b.pid, name))
        sdtest.matches(tables[3], r"(?m)^  \*  1\s+%d" % a.pid)
        sdtest.contains(r.err, 'detached from %d "%s"' % (a.pid, name))
        sdtest.ok(r.out.rstrip().endswith("no targets (attach PID|NAME)"), r.out)
        # The same process twice is one target.
        r = sh("attach %d %d\ntargets\n" % (a.pid, a.pid))
        sdtest.contains(r.err, "already attached to %d" % a.pid)
        sdtest.eq(len(re.findall(r"(?m)^  [ *]\s+\d+\s+%d\s" % a.pid, r.out)), 1, r.out)
        r = sh("use 1\n")
        sdtest.eq(r.rc, 64)
        sdtest.contains(r.err, "no targets")
        r = sh("detach\n")
        sdtest.eq(r.rc, 2)
        sdtest.contains(r.err, "no target to detach from")


def test_commands_can_be_shortened_and_ambiguity_is_reported():
    r = sh("sho format\n")
    sdtest.eq(r.rc, 0, r)
    sdtest.matches(r.out, r"^format\s+text")
    r = sh("t\n")
    sdtest.eq(r.rc, 64)
    sdtest.matches(r.err, r"ambiguous command: t, could be: targets, threads")
    r = sh("frobnicate\n")
    sdtest.eq(r.rc, 64)
    sdtest.contains(r.err, "unknown command: frobnicate (try 'help')")
    r = sh("help targets\n")
    sdtest.eq(r.rc, 0)
    sdtest.contains(r.out, "list the attached processes")


def test_shell_only_commands_refuse_the_command_line():
    for name in ("attach", "detach", "targets", "use", "set", "show", "quit", "source"):
        r = sdtest.run(name, "1")
        sdtest.eq(r.rc, 64, r)
        sdtest.contains(r.err, "only available in the shell")


def test_threads_on_the_command_line():
    with start("fx-busy") as fx:
        r = sdtest.run("threads", fx.pid)
        sdtest.eq(r.rc, 0, r)
        sdtest.matches(r.out, r'^PID %d "fx-busy": 3 threads, CPU%% over the last' % fx.pid)
        sdtest.matches(r.out, r"(?m)^\s*TID\s+NAME\s+S\s+WAIT\s+CPU%\s+WCHAN$")
        sdtest.matches(r.out, r"(?m)^\s*%d\s+spinner\s+R\s+running\s+\d+\.\d$" % fx.tid("spinner"))
        sdtest.matches(r.out, r"(?m)^\s*%d\s+sleeper\s+S\s+(clock_nanosleep|restart_syscall)\s+"
                       r"0\.0\s+\S+$" % fx.tid("sleeper"))
        # CPU% since the last look: the spinner burns, the sleeper does not.
        r = sh("attach %d\nthreads\n!sleep 0.5\nthreads --format json\n" % fx.pid)
        sdtest.eq(r.rc, 0, r)
        doc = json.loads(r.out[r.out.index("\n{") + 1:])
        sdtest.eq(doc["pid"], fx.pid)
        by = {t["name"]: t for t in doc["threads"]}
        sdtest.eq(set(by), {"fx-busy", "spinner", "sleeper"})
        sdtest.ok(by["spinner"]["cpu_percent"] > by["sleeper"]["cpu_percent"], doc)
        sdtest.eq(by["sleeper"]["cpu_percent"], 0.0)
        sdtest.eq(by["spinner"]["state"], "R")
        sdtest.eq(by["fx-busy"]["syscall"], "pause")
        sdtest.ok(doc["interval"] > 0)
        sdtest.assert_running(fx.pid)
    r = sdtest.run("threads")
    sdtest.eq(r.rc, 64)
    sdtest.contains(r.err, "threads: missing argument (PID|NAME)")
    r = sdtest.run("threads", "999999999")
    sdtest.eq(r.rc, 2)


def test_ps_lists_processes_with_thread_counts():
    with start("fx-mutex", "normal", "3", parked=3) as fx:
        # The S column is the leader's state: main may still be on its way
        # into its sleep when the waiters are parked (seen R under load).
        fx.wait_state(lambda st: fx.pid in st and st[fx.pid].state == "S")
        r = sdtest.run("ps", "fx-mut*")
        sdtest.eq(r.rc, 0, r)
        sdtest.matches(r.out, r"(?m)^\s+%d\s+5\s+S\s+\S+\s+fx-mutex\s+\S*fx-mutex normal 3$" % fx.pid)
        r = sdtest.run("ps", "--format", "json")
        sdtest.eq(r.rc, 0)
        mine = [p for p in r.json() if p["pid"] == fx.pid]
        sdtest.eq(len(mine), 1)
        sdtest.eq(mine[0]["threads"], 5)
        sdtest.eq(mine[0]["name"], "fx-mutex")
        sdtest.eq(mine[0]["attached"], False)
        sdtest.ok(not any(p["kernel_thread"] for p in r.json()), "kernel threads without --all")
        r = sh("attach %d\nps fx-mutex\n" % fx.pid)
        sdtest.matches(r.out, r"(?m)^\*\s+%d\s" % fx.pid)
    r = sdtest.run("ps", "no-such-process-xyzzy")
    sdtest.eq(r.rc, 2)
    sdtest.contains(r.err, "no process matches 'no-such-process-xyzzy'")


def test_names_from_the_target_are_escaped():
    code = ("import os, time\n"
            "open('/proc/self/comm', 'w').write('\\x1b[31mevil\\x07')\n"
            "print('ready %d' % os.getpid(), flush=True)\n"
            "time.sleep(600)\n")
    with start(sys.executable, "-c", code) as fx:
        for r in (sdtest.run("-c", "threads; targets; ps --all", fx.pid),
                  sdtest.run("threads", fx.pid)):
            sdtest.eq(r.rc, 0, r)
            sdtest.ok("\x1b" not in r.out and "\x07" not in r.out, "raw control characters: %r"
                      % r.out)
            sdtest.contains(r.out, r"\e[31mevil\x07")


def test_source_and_shell_escape():
    script = os.path.join(TMP, "cmds.sd")
    with open(script, "w") as f:
        f.write("# a comment\n\nshow format\n  set format json ; show format\n"
                "!echo pid=$STACKDUMP_PID\n")
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        r = sdtest.run("-c", "source %s" % script, fx.pid)
        sdtest.eq(r.rc, 0, r)
        sdtest.matches(r.out, r"(?m)^format\s+text \(default\)")
        sdtest.matches(r.out, r"(?m)^format\s+json")
        sdtest.contains(r.out, "pid=%d\n" % fx.pid)
    # !cmd takes the rest of the line, ';' included, and its status.
    r = sh("!echo a; echo b; exit 7\n")
    sdtest.eq(r.rc, 7, r)
    sdtest.eq(r.out, "a\nb\n")
    # It does not eat the script on stdin.
    r = sh("!cat\nshow color\n")
    sdtest.eq(r.rc, 0, r)
    sdtest.matches(r.out, r"^color\s+auto")
    r = sh("source /no/such/file\n")
    sdtest.eq(r.rc, 2)
    sdtest.contains(r.err, "source: cannot open /no/such/file")
    loop = os.path.join(TMP, "loop.sd")
    with open(loop, "w") as f:
        f.write("source %s\n" % loop)
    r = sh("source %s\n" % loop)
    sdtest.eq(r.rc, 2)
    sdtest.contains(r.err, "nested more than 16 deep")


def test_quotes_and_semicolons():
    r = sdtest.run("-c", "set format 'json'; show format; set format \"text\";show format")
    sdtest.eq(r.rc, 0, r)
    sdtest.matches(r.out, r"(?s)^format\s+json.*\nformat\s+text")
    r = sdtest.run("-c", "show 'format")
    sdtest.eq(r.rc, 64)
    sdtest.contains(r.err, "unterminated quote")


def test_set_and_show():
    r = sh("set\nset inline off\nset source off\nset max-frames 2\nset color on\n"
           "set format json\nshow\nset max-frames default\nshow max-frames\n")
    sdtest.eq(r.rc, 0, r)
    sdtest.matches(r.out, r"(?m)^inline\s+off\b")
    sdtest.matches(r.out, r"(?m)^source\s+off\b")
    sdtest.matches(r.out, r"(?m)^max-frames\s+2\b")
    sdtest.matches(r.out, r"(?m)^color\s+on\b")
    sdtest.matches(r.out, r"(?m)^format\s+json\b")
    sdtest.matches(r.out, r"(?m)^max-frames\s+256 \(default\)\s")
    for bad in ("set inline maybe", "set max-frames -1", "set format xml", "set color blue",
                "set nosuch 1", "show nosuch", "set inline"):
        r = sh(bad + "\n")
        sdtest.eq(r.rc, 64, bad)
        sdtest.ok(r.err.startswith("stackdump: "), r.err)
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        # Settings reach the commands: at most 2 frames, no file:line.
        r = sh("attach %d\nset max-frames 2\nset source off\ndump\n" % fx.pid)
        sdtest.eq(r.rc, 0, r)
        frames = [ln for ln in r.out.splitlines() if re.match(r"\s+#\d", ln)]
        sdtest.ok(frames and not any(" at " in ln for ln in frames), r.out)
        sdtest.ok(not re.search(r"(?m)^\s+#2 ", r.out), r.out)
        # set color on: escapes even on a pipe.
        r = sh("attach %d\nset color on\ndump\n" % fx.pid)
        sdtest.ok("\x1b[" in r.out, "set color on had no effect")


def test_target_exit_between_commands():
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        # !cmd takes the rest of the line: the next command is on the next one.
        # (kill returns before the process is gone: wait for its zombie.)
        r = sh("attach %d\nthreads\n"
               "!kill -9 $STACKDUMP_PID; while [ \"$(cut -d' ' -f3 /proc/$STACKDUMP_PID/stat)\" "
               "!= Z ]; do sleep 0.01; done\nthreads\n" % fx.pid)
        sdtest.eq(r.rc, 2, r)
        sdtest.contains(r.err, 'process %d "fx-mutex" exited (detached)' % fx.pid)
        sdtest.contains(r.err, "no target: attach to a process first")


def test_sigterm_stops_a_script_and_leaves_targets_running():
    with start("fx-mutex", "normal", "1", parked=1) as fx:
        env = dict(os.environ, NO_COLOR="1", XDG_STATE_HOME=TMP)
        env.pop("DEBUGINFOD_URLS", None)
        p = subprocess.Popen([sdtest.binary()], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
        p.stdin.write("attach %d\n!echo ready; exec sleep 600\nthreads\n" % fx.pid)
        p.stdin.flush()
        sdtest.eq(p.stderr.readline(), 'attached to %d "fx-mutex", 3 threads (target 1)\n'
                  % fx.pid)
        sdtest.eq(p.stdout.readline(), "ready\n")
        # The sleep is running in its own child: signal stackdump and the
        # sleep together, as a terminal's Ctrl-C would.
        p.send_signal(signal.SIGINT)
        for pid in _children(p.pid):
            os.kill(pid, signal.SIGINT)
        out, err = p.communicate(timeout=120)
        sdtest.eq(p.returncode, 130, (out, err))
        sdtest.ok("CPU%" not in out, "the script went on after Ctrl-C: %r" % out)
        sdtest.assert_running(fx.pid)
        sdtest.eq(tracer_of(fx.pid), 0)


def _children(pid):
    kids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        if int(st[st.rindex(")") + 2:].split()[1]) == pid:
            kids.append(int(d))
    return kids


if __name__ == "__main__":
    try:
        sdtest.main(globals())
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
