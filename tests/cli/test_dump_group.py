#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Grouped dumps (dump --group, set group) of a large pool, and the context a
# filtered dump keeps (how many threads of how many, who holds the lock).
import atexit
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sdtest  # noqa: E402
from fixture import start  # noqa: E402
from ptyshell import PtyShell  # noqa: E402

TMP = tempfile.mkdtemp(prefix="sd-group-")
atexit.register(shutil.rmtree, TMP, True)
NWORKERS, NHTTP = 200, 3
TOTAL = NWORKERS + NHTTP + 3


def pool():
    return start("fx-pool", str(NWORKERS), str(NHTTP), parked=NWORKERS + NHTTP)


def test_group_merges_the_pool_into_one_stack():
    with pool() as fx:
        r = sdtest.run("dump", "--group", fx.pid)
        sdtest.eq(r.rc, 0, r)
        lines = r.out.splitlines()
        sdtest.ok(len(lines) < 80, "grouped dump is %d lines long:\n%s" % (len(lines), r.out))
        sdtest.matches(lines[0], r"^PID %d \(fx-pool\) %d threads, 5 distinct stacks, paused "
                       % (fx.pid, TOTAL))
        # The pool first (largest group), names and TIDs compressed.
        workers = sorted(t for n, ts in fx.tids_by_name().items()
                         if n.startswith("worker-") for t in ts)
        sdtest.matches(lines[1], r'^200 threads "worker-1\.\.200" S waiting for condvar '
                       r'0x[0-9a-f]+ <g_pool_cv>')
        tids = lines[2].strip()
        sdtest.ok(tids.startswith("TIDs "), lines[2])
        # Ranges of the workers' TIDs; a long list (TIDs interleaved
        # with other processes' threads) is cut with "...".
        parts = tids[5:].split(",")
        cut = parts[-1] == "..."
        got = set()
        for part in parts[:-1] if cut else parts:
            a, _, b = part.partition("..")
            got.update(range(int(a), int(b or a) + 1))
        if cut:
            sdtest.ok(got < set(workers), tids)
            sdtest.ok(len(tids) < 100, "the TID list is not cut short: %d bytes" % len(tids))
        else:
            sdtest.eq(got, set(workers))
        # Source lines stay; the stack is shown once.
        sdtest.matches(r.out, r"pool_wait \(fx-pool\) at fx-pool\.c:\d+")
        sdtest.eq(r.out.count("worker_main"), 1, r.out)
        sdtest.matches(r.out, r'(?m)^3 threads "http-1\.\.3" S waiting for mutex 0x[0-9a-f]+ '
                       r'<g_pool_lock> held by %d "flusher"$' % fx.tid("flusher"))
        sdtest.matches(r.out, r'(?m)^Thread %d "flusher" S clock_nanosleep$' % fx.tid("flusher"))
        sdtest.matches(r.out, r'(?m)^Thread %d "reader" S read$' % fx.tid("reader"))
        sdtest.eq(r.out.count("Thread "), 3, r.out)
        sdtest.assert_running(fx.pid)


def test_parkers_each_on_its_own_condvar_group_as_one_wait():
    # fx-parkers: 15 threads, each parked on a condvar of its own from one
    # call site (a JVM's Thread.sleep). One wait, one group; the 15
    # addresses stay in JSON and with -v. The oracle: the futex word each
    # thread waits on, as the kernel shows it in /proc/TID/syscall.
    from fixture import thread_states
    with start("fx-parkers", "15", parked=15) as fx:
        parkers = sorted(t for n, ts in fx.tids_by_name().items()
                         if n.startswith("parker-") for t in ts)
        sdtest.eq(len(parkers), 15)
        words = {thread_states(fx.pid)[t].args[0] for t in parkers}
        sdtest.eq(len(words), 15, "the parkers share a futex word: %r" % words)
        r = sdtest.run("dump", "--group", fx.pid)
        sdtest.eq(r.rc, 0, r)
        lines = r.out.splitlines()
        sdtest.matches(lines[0], r"^PID %d \(fx-parkers\) 16 threads, 2 distinct stacks, "
                       % fx.pid)
        sdtest.matches(lines[1], r'^15 threads "parker-0\.\.14" S waiting for condvar '
                       r'\(.*\) \(each its own: 15 objects\)$')
        sdtest.ok("0x" not in lines[1], lines[1])
        sdtest.contains(r.out, " park_timed (fx-parkers) at fx-parkers.c:")
        # JSON keeps every thread's own address, the kernel's futex word
        # inside its condvar.
        doc = sdtest.run("--format", "json", fx.pid).json()
        addrs = {t["tid"]: int(t["wait"]["address"], 16) for t in doc["threads"]
                 if t["tid"] in parkers}
        sdtest.eq(sorted(addrs), parkers)
        sdtest.eq(len(set(addrs.values())), 15, addrs)
        for t in parkers:
            sdtest.eq(doc["threads"][[x["tid"] for x in doc["threads"]].index(t)]["wait"]["kind"],
                      "condvar")
            word = thread_states(fx.pid)[t].args[0]
            sdtest.ok(0 <= word - addrs[t] < 48,
                      "%d: futex word 0x%x is not in its condvar at 0x%x" % (t, word, addrs[t]))
        # -v lists the objects of the group.
        r = sdtest.run("dump", "--group", "-v", fx.pid)
        m = re.search(r"(?m)^  objects (.*)$", r.out)
        sdtest.ok(m, r.out[:1500])
        listed = {int(a.split()[0], 16) for a in m.group(1).split(", ")}
        sdtest.eq(listed, set(addrs.values()))
        sdtest.assert_running(fx.pid)
    # A lock's address still splits: fx-pool's workers all wait on one
    # condvar, and keep its address and symbol in the group's header.
    with start("fx-pool", "6", "2", parked=8) as fx:
        r = sdtest.run("dump", "--group", fx.pid)
        sdtest.matches(r.out, r'(?m)^6 threads "worker-1\.\.6" S waiting for condvar '
                       r'0x[0-9a-f]+ <g_pool_cv>')


def test_ungrouped_in_a_pipe_by_default():
    with pool() as fx:
        r = sdtest.run("dump", "--no-source", fx.pid)
        sdtest.eq(r.rc, 0, r)
        sdtest.eq(len(re.findall(r"(?m)^Thread \d+ ", r.out)), TOTAL)
        sdtest.ok("distinct stacks" not in r.out, r.out[:300])
        r = sdtest.run("dump", "-g", "--no-group", fx.pid)
        sdtest.eq(r.rc, 0, r)


def test_group_names_compress_ranges_with_gaps():
    with pool() as fx:
        r = sdtest.run("dump", "-g", "-t", ",".join(str(fx.tid("worker-%d" % i))
                                                     for i in (1, 2, 3, 7, 9, 10)), fx.pid)
        sdtest.eq(r.rc, 0, r)
        sdtest.matches(r.out, r'(?m)^6 threads "worker-1\.\.3,7,9\.\.10" S waiting for condvar')


def test_filtered_dump_says_of_how_many_and_names_the_holder():
    with pool() as fx:
        r = sdtest.run("dump", "-n", "http-*", fx.pid)
        sdtest.eq(r.rc, 0, r)
        sdtest.matches(r.out.splitlines()[0], r"^PID %d \(fx-pool\) 3 of %d threads, paused"
                       % (fx.pid, TOTAL))
        # The holder is not in the selection; it is still named.
        sdtest.matches(r.out, r'Thread %d "http-1" S waiting for mutex 0x[0-9a-f]+ <g_pool_lock> '
                       r'held by %d "flusher"' % (fx.tid("http-1"), fx.tid("flusher")))


def test_shell_set_group_and_auto_at_a_terminal():
    with pool() as fx:
        r = sdtest.run("-c", "set group on; dump --no-source", fx.pid)
        sdtest.eq(r.rc, 0, r)
        sdtest.contains(r.out, "5 distinct stacks")
        r = sdtest.run("-c", "set group off; dump --no-source", fx.pid)
        sdtest.eq(len(re.findall(r"(?m)^Thread \d+ ", r.out)), TOTAL)
        r = sdtest.run("-c", "set group maybe", fx.pid)
        sdtest.eq(r.rc, 64, r)
        sdtest.contains(r.err, "set group: expected on, off or auto, not 'maybe'")
        # At a terminal a process of more than 64 threads is grouped.
        with PtyShell(["shell", fx.pid], env={"XDG_STATE_HOME": TMP}) as sh:
            sh.expect_prompt()
            sh.sendline("dump --no-source")
            sh.expect(r'200 threads "worker-1\.\.200"')
            sh.expect_prompt()
            sh.sendline("set group off")
            sh.expect_prompt()
            sh.sendline("dump --no-source")
            sh.expect(r'Thread \d+ "worker-200"')
            sh.expect_prompt()
            sh.sendline("quit")
            sh.wait_exit()
        sdtest.assert_running(fx.pid)


def test_colour_marks_lock_waits_and_the_programs_own_frames():
    with pool() as fx:
        r = sdtest.run("-c", "set color on; dump --no-source -n http-1", fx.pid)
        sdtest.eq(r.rc, 0, r)
        out = r.out
        # A lock wait in bold red, an idle condvar wait in cyan.
        sdtest.contains(out, '"http-1"\033[0m S \033[1;31mwaiting for mutex ')
        # The program's frames in bold yellow, the libraries' plain.
        sdtest.contains(out, "\033[1;33mhttp_serve\033[0m")
        sdtest.matches(out, r"\] futex_wait\033\[0m")
        sdtest.ok("\033[1;33m___pthread_mutex_lock" not in out, out)
        r = sdtest.run("-c", "set color on; dump --no-source -n worker-1", fx.pid)
        sdtest.contains(r.out, " S \033[36mwaiting for condvar ")
        # NO_COLOR and pipes stay plain.
        r = sdtest.run("dump", "--no-source", "-n", "http-1", fx.pid)
        sdtest.ok("\033[" not in r.out, r.out)


if __name__ == "__main__":
    sdtest.main(globals())
