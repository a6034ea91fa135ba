#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The profile command against real fixtures: the known 75/25 split of
# fx-hot, the on/off-CPU split of fx-busy, --no-idle, --group-threads, every
# output format (folded parses, the SVG is well-formed XML with a frame per
# function, pprof decodes against profile.proto with the right counts),
# Ctrl-C, a process exiting mid-profile, --locks, and the error paths.
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sdtest  # noqa: E402
from fixture import path_of, start  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402



def profile_json(pid, *args):
    r = sdtest.run("profile", pid, "--format", "json", "-q", *args)
    eq(r.rc, 0, r.err)
    return r.json()


def leaf_counts(doc):
    """{leaf function: samples} of a JSON profile."""
    out = {}
    for st in doc["stacks"]:
        leaf = st["frames"][0]["function"] if st["frames"] else None
        out[leaf] = out.get(leaf, 0) + st["count"]
    return out


def test_hot_split_75_25():
    with start("fx-hot") as fx:
        doc = profile_json(fx.pid, "--count", "40", "--rate", "50", "--no-idle")
        sdtest.assert_running(fx.pid)
    leaves = leaf_counts(doc)
    a, b = leaves.get("hot_a", 0), leaves.get("hot_b", 0)
    eq(a + b, doc["thread_samples"], "only hot_a and hot_b once main is hidden: %r" % leaves)
    eq(doc["thread_samples"], 4 * doc["samples"])
    share = 100.0 * a / (a + b)
    ok(65 <= share <= 85, "hot_a share %.1f%% not 75%% within 10 points" % share)
    # main sleeps in pause(): idle, hidden, and counted as such.
    eq(doc["idle"], doc["samples"])
    # Frames: the whole chain, with modules.
    st = next(s for s in doc["stacks"] if s["frames"][0]["function"] == "hot_a")
    eq([f["function"] for f in st["frames"][:2]], ["hot_a", "hot_a_main"])
    eq(st["frames"][0]["module"], "fx-hot")
    ok(st["frames"][0]["build_id"], "build-id of fx-hot")
    eq(sorted(t["name"] for t in st["threads"]), ["hot-a-1", "hot-a-2", "hot-a-3"])
    eq(st["on_cpu"], st["count"])


def test_group_threads():
    with start("fx-hot") as fx:
        doc = profile_json(fx.pid, "--count", "10", "--rate", "50", "--group-threads")
    st = next(s for s in doc["stacks"] if s["frames"][0]["function"] == "hot_a")
    eq(len(st["threads"]), 1, st["threads"])
    eq(st["threads"][0]["name"], "hot-a-*")
    eq(st["threads"][0]["threads"], 3)
    eq(st["threads"][0]["tid"], None)


def test_top_text():
    with start("fx-hot") as fx:
        r = sdtest.run("profile", fx.pid, "-c", "10", "-r", "50", "-g", "-q")
    eq(r.rc, 0, r.err)
    contains(r.out, 'Profile of %d "fx-hot": 10 samples' % fx.pid)
    sdtest.matches(r.out, r"^\s+30\s+60\.0%\s+running 100%\s+hot-a-\* \(3 threads\)$")
    # main sleeps in pause(), though each freeze kicks it out of the call
    # for a moment, so its states may include running or sleeping.
    sdtest.matches(r.out, r"^\s+10\s+20\.0%\s+pause \d+%.*\s+fx-hot \(1 thread\)$")
    sdtest.matches(r.out, r"^\s+hot_a \(fx-hot\)$")
    sdtest.matches(r.out, r"^\s+__libc_pause \(libc\.so\.6\)$")


def test_busy_on_off_cpu_split():
    with start("fx-busy", blocked=2) as fx:
        doc = profile_json(fx.pid, "--count", "20", "--rate", "50")
        on = profile_json(fx.pid, "--count", "10", "--rate", "50", "--on-cpu")
        off = profile_json(fx.pid, "--count", "10", "--rate", "50", "--off-cpu")
        sdtest.assert_running(fx.pid)
    for st in doc["stacks"]:
        leaf = st["frames"][0]["function"]
        if leaf == "spin_hot":
            # The spinner can be runnable or running, never asleep.
            eq(st["on_cpu"], st["count"], st)
        else:
            eq(st["on_cpu"], 0, st)
    eq(doc["on_cpu"], doc["samples"])
    eq(doc["off_cpu"], 2 * doc["samples"])
    eq(set(leaf_counts(on)), {"spin_hot"})
    eq(on["thread_samples"], 10)
    eq(on["filtered"], 20)
    ok("spin_hot" not in leaf_counts(off), leaf_counts(off))
    eq(off["thread_samples"], 20)
    eq(off["on_cpu"], 0)


def test_no_idle_hides_sleepers():
    with start("fx-busy", blocked=2) as fx:
        doc = profile_json(fx.pid, "--count", "10", "--rate", "50", "--no-idle")
    # sleeper (nanosleep) and main (pause) are idle; the spinner stays.
    eq(set(leaf_counts(doc)), {"spin_hot"})
    eq(doc["idle"], 20)


def test_no_idle_on_idle_waits():
    # Every thread of fx-idle waits for work (epoll, accept, poll, select,
    # read on a pipe, sigwait, pause): --no-idle leaves nothing.
    with start("fx-idle", blocked=7) as fx:
        full = profile_json(fx.pid, "--count", "5", "--rate", "50")
        doc = profile_json(fx.pid, "--count", "5", "--rate", "50", "--no-idle")
    eq(full["thread_samples"], 35)
    eq(doc["thread_samples"], 0, [s["frames"][0]["function"] for s in doc["stacks"]])
    eq(doc["idle"], 35)


def folded_lines(text):
    out = []
    for line in text.splitlines():
        m = re.match(r"^(\S.*) (\d+)$", line)
        ok(m, "not a folded line: %r" % line)
        out.append((m.group(1).split(";"), int(m.group(2))))
    return out


def test_folded_parses():
    with start("fx-hot") as fx:
        r = sdtest.run("profile", fx.pid, "-c", "10", "-r", "50", "-f", "folded", "-q")
    eq(r.rc, 0, r.err)
    lines = folded_lines(r.out)
    eq(sum(n for _, n in lines), 50)
    stacks = {tuple(f): n for f, n in lines}
    eq(stacks[("clone3", "start_thread", "hot_a_main", "hot_a")], 30)
    eq(stacks[("clone3", "start_thread", "hot_b_main", "hot_b")], 10)
    main = [f for f in stacks if f[-1] == "__libc_pause"]
    eq(len(main), 1, stacks)
    eq(main[0][:2], ("_start", "__libc_start_main_impl"))


def test_by_address():
    with start("fx-hot") as fx:
        r = sdtest.run("profile", fx.pid, "-c", "10", "-r", "50", "-f", "folded", "-q",
                       "--by-address")
    eq(r.rc, 0, r.err)
    lines = folded_lines(r.out)
    eq(sum(n for _, n in lines), 50)
    # Return addresses make frames "function+0xOFF"; leaves differ by pc.
    for frames, _ in lines:
        ok(all(re.match(r"^\S+\+0x[0-9a-f]+$|^\[", f) for f in frames), frames)
    ok(any(f[-1].startswith("hot_a+0x") for f, _ in lines))


def test_svg_well_formed():
    with start("fx-hot") as fx, tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "p.svg")
        r = sdtest.run("profile", fx.pid, "-c", "10", "-r", "50", "-f", "svg", "-o", path,
                       "--title", "hot <&> test", "--idle")
        eq(r.rc, 0, r.err)
        contains(r.err, "wrote %s" % path)
        root = ET.parse(path).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    eq(root.tag, ns + "svg")
    frames = {}
    for g in root.iter(ns + "g"):
        if g.get("class") != "f":
            continue
        title = g.find(ns + "title").text
        name = title.split(" (")[0]
        frames[name] = title
        ok(g.find(ns + "rect") is not None)
    for fn in ("all", "hot_a", "hot_b", "hot_a_main", "hot_b_main", "start_thread", "clone3",
               "main", "__libc_pause", "_start"):
        ok(fn in frames, "no frame for %s in %s" % (fn, sorted(frames)))
    contains(frames["hot_a"], "(30 samples, 60.00%")
    contains(frames["all"], "(50 samples, 100.00%")
    script = root.find(ns + "script").text
    for what in ("onclick", "onmouseover", "RegExp", "zoom"):
        contains(script, what)
    title = [t for t in root.iter(ns + "text") if t.get("id") == "title"][0]
    eq(title.text, "hot <&> test")


def test_svg_script_behaviour():
    # The embedded script, run by node against a minimal DOM: hover fills the
    # details line, click zooms a frame to the full width and hides what is
    # outside it, search highlights matches and reports their share.
    node = sdtest.tool("node", "nodejs", "nodejs")
    with start("fx-hot") as fx, tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "p.svg")
        r = sdtest.run("profile", fx.pid, "-c", "10", "-r", "50", "-f", "svg", "-o", path,
                       "--idle")
        eq(r.rc, 0, r.err)
        p = subprocess.run([node, os.path.join(sdtest.HERE, "flamegraph_dom.js"), path,
                            "hot_a_main", "^hot_a"], capture_output=True, text=True,
                           timeout=60)
    eq(p.returncode, 0, p.stderr)
    out = dict(line.split(": ", 1) for line in p.stdout.splitlines())
    eq(out["hover"], "hot_a_main (30 samples, 60.00%, on-CPU 100%)")
    eq(out["zoom width"], "1180")
    hidden = out["zoom hidden"].split(",")
    ok("hot_b" in hidden and "main" in hidden and "hot_a" not in hidden, hidden)
    eq(out["reset shown"], "true")
    eq(out["search"], "Matched: 60.0%")
    eq(out["highlighted"], "hot_a,hot_a_main")
    eq(out["after reset hidden"], "0")




def test_pprof_decodes():
    with start("fx-hot") as fx, tempfile.TemporaryDirectory() as d:
        doc = profile_json(fx.pid, "-c", "2")
        build_id = [s for s in doc["stacks"] if s["frames"][0]["function"] == "hot_a"][0][
            "frames"][0]["build_id"]
        path = os.path.join(d, "p.pb.gz")
        r = sdtest.run("profile", fx.pid, "-c", "10", "-r", "50", "-f", "pprof", "-o", path)
        eq(r.rc, 0, r.err)
        text = sdtest.decode_pprof(path)
    strings = re.findall(r'^string_table: "(.*)"$', text, re.M)
    eq(strings[0], "")
    # Sample counts: the first value of every sample adds up to the thread
    # samples; the second is wall time (count x 20 ms).
    samples = re.findall(r"^sample \{\n((?:  .*\n)*?)\}", text, re.M)
    ok(samples, text[:2000])
    total = wall = 0
    for s in samples:
        vals = [int(v) for v in re.findall(r"^  value: (-?\d+)$", s, re.M)]
        eq(len(vals), 2)
        total += vals[0]
        wall += vals[1]
    eq(total, 50)
    eq(wall, 50 * 20000000)
    for fn in ("hot_a", "hot_b", "hot_a_main", "start_thread", "samples", "count", "wall",
               "nanoseconds", "thread", "hot-a-1", "hot-b", "on-cpu", "off-cpu"):
        ok(fn in strings, "%s not in the string table" % fn)
    ok(build_id in strings, "build-id %s of fx-hot in a mapping" % build_id)
    contains(text, "has_functions: true")
    # Per thread: hot-a-1 has 10 samples of its own.
    idx = strings.index("hot-a-1")
    per = [s for s in samples if re.search(r"str: %d\n" % idx, s)]
    eq(len(per), 1)
    contains(per[0], "value: 10\n")


def test_pprof_inline_lines():
    # fx-stacks' inliner thread: __libc_pause, inline_leaf [inline],
    # inline_mid [inline], inliner_outer: the inline chain is one location
    # with three lines, innermost first.
    with start("fx-stacks", blocked=5) as fx, tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "p.pb.gz")
        r = sdtest.run("profile", fx.pid, "-c", "2", "--name", "inliner", "-f", "pprof", "-o",
                       path)
        eq(r.rc, 0, r.err)
        text = sdtest.decode_pprof(path)
    strings = re.findall(r'^string_table: "(.*)"$', text, re.M)
    funcs = {}
    for body in re.findall(r"^function \{\n((?:  .*\n)*?)\}", text, re.M):
        fid = int(re.search(r"id: (\d+)", body).group(1))
        name = int(re.search(r"name: (\d+)", body).group(1))
        funcs[fid] = strings[name]
    chains = []
    for body in re.findall(r"^location \{\n((?:  .*\n)*?)\}", text, re.M):
        ids = [int(x) for x in re.findall(r"function_id: (\d+)", body)]
        chains.append([funcs[i] for i in ids])
    ok(["inline_leaf", "inline_mid", "inliner_outer"] in chains, chains)


def wait_sampled(pid, sampler):
    """Waits until SAMPLER has frozen PID at least once (TracerPid names it
    while a snapshot is taken) or holds perf events on it (the perf engine),
    so a profile has its first sample."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/status" % pid) as f:
                if "\nTracerPid:\t%d\n" % sampler in f.read():
                    return
        except OSError:
            pass
        if sdtest.perf_fds(sampler):
            return
        if sampler_gone(sampler):
            raise AssertionError("the profiler exited before sampling")
        time.sleep(0.0005)
    raise AssertionError("pid %d never frozen by %d" % (pid, sampler))


def sampler_gone(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_ctrl_c_writes_profile():
    with start("fx-hot") as fx, tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "p.folded")
        env = dict(os.environ, NO_COLOR="1")
        p = subprocess.Popen([sdtest.binary(), "profile", str(fx.pid), "--duration", "0",
                              "-r", "20", "-f", "folded", "-o", path],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        # Let it take a few samples, then interrupt as a terminal would.
        wait_sampled(fx.pid, p.pid)
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
        eq(p.returncode, 0, err)
        contains(err, "interrupted: writing the profile of")
        with open(path) as f:
            lines = folded_lines(f.read())
        ok(sum(n for _, n in lines) >= 5, lines)  # one sample: 5 threads
        ok(any(fr[-1] == "hot_a" for fr, _ in lines))
        sdtest.assert_running(fx.pid)


def test_process_exit_mid_profile():
    fx = start("fx-hot")
    try:
        env = dict(os.environ, NO_COLOR="1")
        p = subprocess.Popen([sdtest.binary(), "profile", str(fx.pid), "--duration", "0",
                              "-r", "20", "-f", "json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        wait_sampled(fx.pid, p.pid)
        time.sleep(0.3)
        fx.stop()
        out, err = p.communicate(timeout=120)
    finally:
        fx.stop()
    eq(p.returncode, 1, err)
    contains(err, "process %d exited after" % fx.pid)
    doc = json.loads(out)
    ok(doc["samples"] >= 1)
    eq(doc["processes"][0]["exited"], True)


def test_new_threads_on_new_stacks():
    # Samples read /proc/PID/maps once a second, not every time: a thread
    # born since, on a stack mapped since, must still unwind in full (its
    # stack was copied while frozen), and names come from a cache that
    # must still name every thread.
    fx = start("fx-churn", 2, 2, env=dict(os.environ, FX_CHURN_FRESH_STACKS="1"))
    try:
        doc = profile_json(fx.pid, "--rate", "50", "--count", "40")
    finally:
        fx.stop()
    eq(doc["samples"], 40)
    stable = [st for st in doc["stacks"]
              if any(t["name"].startswith("stable-") for t in st["threads"])]
    eq(sum(st["count"] for st in stable), 80)
    for st in stable:
        eq([f["function"] for f in st["frames"]][-4:],
           ["stable_wait", "stable_main", "start_thread", "clone3"])
    # Every sample of an ephemeral thread caught in its work or its
    # nanosleep: a whole stack down to clone3, not a lone frame.
    seen = 0
    for st in doc["stacks"]:
        fns = [f["function"] for f in st["frames"]]
        if fns and fns[0] in ("ephemeral_work", "__GI___clock_nanosleep") and \
                "stable_main" not in fns:
            seen += st["count"]
            ok(fns[-3:] == ["ephemeral_main", "start_thread", "clone3"],
               "ephemeral stack cut short: %s" % fns)
    ok(seen > 0, "no ephemeral thread was sampled in its work")


def test_pid_of_aggregates():
    # A copy under a name of its own: other tests (run in parallel) start
    # and stop fx-hot processes too.
    import shutil
    import tempfile
    d = tempfile.mkdtemp()
    name = "fxpo%d" % (os.getpid() % 100000)
    exe = os.path.join(d, name)
    shutil.copy(path_of("fx-hot"), exe)
    try:
        with start(exe) as a, start(exe) as b:
            r = sdtest.run("profile", "--pid-of", name, "-c", "3", "-r", "50", "--no-idle",
                           "-f", "json", "-q")
            eq(r.rc, 0, r.err)
            doc = r.json()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    pids = sorted(p["pid"] for p in doc["processes"])
    eq(pids, sorted([a.pid, b.pid]))
    st = next(s for s in doc["stacks"] if s["frames"][0]["function"] == "hot_a")
    eq(st["count"], 3 * 3 * len(pids))
    eq(len({t["pid"] for t in st["threads"]}), len(pids))


def test_locks_report():
    with start("fx-mutex", "normal", "3", parked=3) as fx:
        r = sdtest.run("profile", fx.pid, "-c", "5", "-r", "50", "--locks", "-q")
        j = profile_json(fx.pid, "-c", "5", "-r", "50", "--locks")
    eq(r.rc, 0, r.err)
    locks = [l for l in j["locks"] if l["max_waiters"] == 3]
    eq(len(locks), 1, j["locks"])
    lk = locks[0]
    eq(lk["contended"], 5)
    eq(lk["avg_waiters"], 3.0)
    sdtest.matches(r.out, r"waiters avg 3\.00, max 3 per sample; contended in 5 of 5 samples")
    # Lock analysis names the holder: its stack while the others waited.
    eq(lk["kind"], "mutex")
    eq(lk["symbol"], "g_ledger_lock")
    eq(lk["holders"][0]["holder"], "holder")
    eq(lk["holders"][0]["count"], 5)
    ok(lk["holders"][0]["stack"], lk)
    contains(r.out, "<g_ledger_lock>")
    contains(r.out, "holder: ")


def test_usage_errors():
    r = sdtest.run("profile")
    eq(r.rc, 64)
    contains(r.err, "missing argument")
    r = sdtest.run("profile", "1", "--rate", "0")
    eq(r.rc, 64)
    contains(r.err, "invalid --rate: 0")
    r = sdtest.run("profile", "1", "--rate", "5", "--interval", "1s")
    eq(r.rc, 64)
    r = sdtest.run("profile", "1", "--on-cpu", "--off-cpu")
    eq(r.rc, 64)
    r = sdtest.run("profile", "1", "--format", "png")
    eq(r.rc, 64)
    contains(r.err, "one of: top tree folded svg pprof json")
    r = sdtest.run("profile", "1", "--locks", "--format", "svg")
    eq(r.rc, 64)
    r = sdtest.run("profile", "--count", "x", "1")
    eq(r.rc, 64)


def test_failures():
    r = sdtest.run("profile", "999999999", "-c", "1")
    eq(r.rc, 64 if "invalid" in r.err else 2, r)
    r = sdtest.run("profile", "4194303", "-c", "1")
    eq(r.rc, 2, r)
    r = sdtest.run("profile", "--pid-of", "no-such-process-xyz", "-c", "1")
    eq(r.rc, 2)
    contains(r.err, "no process named 'no-such-process-xyz'")
    with start("fx-hot") as fx:
        r = sdtest.run("profile", fx.pid, "-c", "1", "-o", "/nonexistent/dir/p.svg")
        eq(r.rc, 2)
        contains(r.err, "cannot write /nonexistent/dir/p.svg")
        sdtest.assert_running(fx.pid)


def test_tree():
    with start("fx-hot") as fx:
        r = sdtest.run("profile", fx.pid, "-c", "10", "-r", "50", "-f", "tree", "-q")
    eq(r.rc, 0, r.err)
    sdtest.matches(r.out, r"^\s+80\.0%\s+0\.0%\s+clone3$")
    sdtest.matches(r.out, r"^\s+60\.0%\s+60\.0%\s+hot_a$")
    sdtest.matches(r.out, r"^\s+20\.0%\s+20\.0%\s+__libc_pause$")


def test_top_command():
    with start("fx-hot") as fx:
        r = sdtest.run("top", fx.pid, "--count", "2", "--refresh", "200ms", "--rate", "20")
        sdtest.assert_running(fx.pid)
    eq(r.rc, 0, r.err)
    contains(r.out, 'stackdump top: %d "fx-hot"' % fx.pid)
    eq(r.out.count("stackdump top:"), 2)
    for name in ("hot-a-1", "hot-a-2", "hot-a-3", "hot-b"):
        sdtest.matches(r.out, r"^\s+\d+\s+%s\s+(running|runnable)\s+100%%\s+hot_%s$" % (
            name, name[4]))
    # main idles in pause(): folded, and its samples left out of the
    # functions by default; --idle counts them.
    contains(r.out, "... 1 idle thread (waiting for work)\n")
    sdtest.matches(r.out, r"^\s*75\.0%\s+75\.0%\s+hot_a$")
    sdtest.matches(r.out, r"^\s*0\.0%\s+100\.0%\s+start_thread$")
    ok("\033[" not in r.out, "no terminal codes on a pipe")
    with start("fx-hot") as fx:
        r = sdtest.run("top", fx.pid, "--count", "1", "--refresh", "200ms", "--rate", "20",
                       "--idle")
    eq(r.rc, 0, r.err)
    sdtest.matches(r.out, r"^\s*60\.0%\s+60\.0%\s+hot_a$")
    sdtest.matches(r.out, r"^\s*0\.0%\s+80\.0%\s+start_thread$")
    # NOW is the program's own innermost frame (main), not libc's leaf.
    sdtest.matches(r.out, r"^\s+%d\s+fx-hot\s+pause\s+0%%\s+main$" % fx.pid)


if __name__ == "__main__":
    sdtest.main(globals())
