# SPDX-License-Identifier: MIT
# The shape the tree promises: the engine (src/) includes nothing of the
# front-end and never prints or exits (it may abort when memory runs out);
# its stages (the folders of src/) include and call only the stages their
# row of src/README.md names (tests/lib/stages.py), and the checks catch a
# tree made wrong on purpose; no engine module includes, directly or not,
# one that includes it back; no two files call into each other;
# command files stay under 500 lines; the binary defines no symbol of libc
# (libunwind's signal masking is quieted through its own GOT slots
# instead); and profile makes only a few rt_sigprocmask calls per sample,
# counted with strace on a live fixture.
import glob
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
import stages  # noqa: E402
from fixture import start  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def lines_of(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read().splitlines()


def test_engine_includes_no_front_end_and_never_prints():
    files = sorted(glob.glob(os.path.join(ROOT, "src", "*", "*.[ch]")))
    ok(len(files) > 20, files)
    bad = []
    call = re.compile(r"\b(printf|puts|putchar|fputs|exit|_exit|isatty|readline)\s*\(|"
                      r"\b(stdout|stderr|stdin)\b")
    for path in files:
        for n, line in enumerate(lines_of(path), 1):
            # What the code says, not its strings ("/dev/stdout" is a name).
            code = re.sub(r'"(\\.|[^"\\])*"', '""', line).split("//")[0]
            if code.lstrip().startswith(("*", "/*")):
                continue
            if re.match(r'\s*#\s*include\s*["<](\.\./commands/|cmd\.h|repl\.h|shell\.h|'
                        r'readline/)', code):
                bad.append("%s:%d: %s" % (os.path.basename(path), n, line.strip()))
            if call.search(code):
                bad.append("%s:%d: %s" % (os.path.basename(path), n, line.strip()))
    eq(bad, [])


SRC = os.path.join(ROOT, "src")
TABLE = os.path.join(SRC, "README.md")


def test_no_include_cycle_between_engine_modules():
    ok(len(stages.sources(SRC)) > 80, "too few engine files found")
    eq(stages.include_cycles(SRC), [])


def test_stage_table_names_every_folder_in_order():
    rows = stages.read_table(TABLE)
    names = [r[0] for r in rows]
    ok(len(rows) >= 10 and names[0] == "base", names)
    eq(stages.table_problems(rows, SRC), [])


def test_each_stage_folder_says_what_it_is():
    bad = []
    for st, _, uses in stages.read_table(TABLE):
        path = os.path.join(SRC, st, "README.md")
        text = open(path).read() if os.path.exists(path) else ""
        m = re.search(r"^May use: (.*)\.$", text, re.M)
        said = [] if not m or m.group(1).startswith("nothing") else \
            [u.strip() for u in m.group(1).split(",")]
        if not text.startswith("# %s\n" % st) or "Holds: " not in text or said != uses:
            bad.append("%s: README.md missing, or its 'May use' is not the table's %s" %
                       (st, uses))
    eq(bad, [])


def test_stage_folders_stay_small():
    big = []
    for st in sorted(os.listdir(SRC)):
        d = os.path.join(SRC, st)
        if os.path.isdir(d):
            n = len([f for f in os.listdir(d) if f.endswith(".c")])
            if n > 15:
                big.append("src/%s: %d source files" % (st, n))
    eq(big, [])


def test_includes_follow_the_stage_table():
    rows = stages.read_table(TABLE)
    eq(stages.include_problems(rows, SRC), [])
    # No file is left outside the stage folders.
    eq(sorted(f for f in os.listdir(SRC) if f.endswith((".c", ".h"))), [])


def build_dir():
    return os.path.dirname(os.path.realpath(sdtest.binary()))


def edges_of(*targets):
    objs = {}
    for t in targets:
        d = os.path.join(build_dir(), "CMakeFiles", t + ".dir")
        ok(os.path.isdir(d), "no object folder %s" % d)
        objs.update(stages.objects(d))
    # Only objects of sources that still exist (a build folder keeps those
    # of files since moved).
    return stages.call_edges({k: v for k, v in objs.items()
                              if os.path.exists(os.path.join(ROOT, k))})


def test_calls_follow_the_stage_table_and_no_two_files_call_each_other():
    rows = stages.read_table(TABLE)
    edges = edges_of("stackdump_engine", "stackdump_cli")
    ok(len(edges) > 50, "too few object files with calls: %d" % len(edges))
    ok("src/base/util.c" in edges.get("src/analyze/locks.c", {}), "locks.c calls util.c")
    eq(stages.call_problems(rows, edges), [])
    eq(stages.mutual_calls(edges), [])


def test_the_checks_catch_a_tree_made_wrong():
    """The same checks, on a copy of the table and two stage folders in
    which base includes and calls upward and two files call each other:
    each is reported."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "src")
        for st in ("base", "proc"):
            os.makedirs(os.path.join(src, st))
        with open(os.path.join(src, "README.md"), "w") as f:
            f.write("| stage | job | may use |\n| --- | --- | --- |\n"
                    "| base | helpers | |\n| proc | /proc | base |\n")
        files = {
            "base/util.h": "int util_f(void);\n",
            "base/util.c": '#include "util.h"\n#include "procfs.h"\n'
                           "int util_f(void) { return procfs_g(); }\n",
            "proc/procfs.h": '#include "util.h"\nint procfs_g(void);\n',
            "proc/procfs.c": '#include "procfs.h"\nint procfs_g(void) { return util_f(); }\n',
        }
        for rel, text in files.items():
            with open(os.path.join(src, rel), "w") as f:
                f.write(text)
        rows = stages.read_table(os.path.join(src, "README.md"))
        eq(stages.table_problems(rows, src), [])
        inc = stages.include_problems(rows, src)
        ok(any("base/util.c (stage base) includes procfs.h of stage proc" in b for b in inc), inc)
        ok(len(inc) == 1, inc)
        ok(stages.include_cycles(src), "the util <-> procfs include cycle was not found")
        # A row that uses a stage below it, out of order.
        bad_rows = [("proc", "x", ["base"]), ("base", "y", [])]
        ok(stages.table_problems(bad_rows, src), "a use of a later row was not refused")
        objdir = os.path.join(d, "obj")
        os.makedirs(os.path.join(objdir, "src", "base"))
        os.makedirs(os.path.join(objdir, "src", "proc"))
        for rel in ("base/util.c", "proc/procfs.c"):
            subprocess.run(["cc", "-c", "-I", os.path.join(src, "base"), "-I",
                            os.path.join(src, "proc"), os.path.join(src, rel), "-o",
                            os.path.join(objdir, "src", rel + ".o")], check=True)
        edges = stages.call_edges(stages.objects(objdir))
        calls = stages.call_problems(rows, edges)
        ok(any("src/base/util.c (stage base) calls procfs_g" in c for c in calls), calls)
        mutual = stages.mutual_calls(edges)
        ok(any("src/base/util.c and src/proc/procfs.c call into each other" in m
               for m in mutual), mutual)


def test_command_files_stay_small():
    files = sorted(glob.glob(os.path.join(ROOT, "commands", "cmd-*.c")))
    ok(len(files) >= 20, files)
    big = ["%s: %d lines" % (os.path.basename(p), len(lines_of(p)))
           for p in files if len(lines_of(p)) > 500]
    eq(big, [])


def test_no_source_file_over_1000_lines():
    files = sorted(glob.glob(os.path.join(ROOT, "src", "*", "*.[ch]")) +
                   glob.glob(os.path.join(ROOT, "commands", "*.[ch]")))
    ok(len(files) >= 60, files)
    big = ["%s: %d lines" % (os.path.relpath(p, ROOT), len(lines_of(p)))
           for p in files if len(lines_of(p)) > 1000]
    eq(big, [])


def defined_globals(path):
    r = subprocess.run(["nm", "--defined-only", "-g", path], capture_output=True, text=True,
                       check=True)
    return {ln.split()[-1] for ln in r.stdout.splitlines() if ln.strip()}


def libc_exports():
    libc = subprocess.run(["gcc", "-print-file-name=libc.so.6"], capture_output=True,
                          text=True, check=True).stdout.strip()
    if not os.path.isabs(libc):
        libc = "/lib/x86_64-linux-gnu/libc.so.6"
    r = subprocess.run(["nm", "-D", "--defined-only", libc], capture_output=True, text=True,
                       check=True)
    names = {ln.split()[-1].split("@")[0] for ln in r.stdout.splitlines() if ln.strip()}
    ok("sigprocmask" in names and "malloc" in names, "cannot read libc's exports")
    return names


def test_binary_defines_no_libc_symbol():
    clash = sorted(defined_globals(sdtest.binary()) & libc_exports())
    eq(clash, [], "the binary replaces these libc functions for every library")


def rt_sigprocmask_calls(out):
    """The rt_sigprocmask count of an `strace -c` summary (0 if absent)."""
    with open(out) as f:
        for line in f:
            cols = line.split()
            if cols and cols[-1] == "rt_sigprocmask":
                return int(cols[3])
    return 0


def test_profile_masks_signals_only_a_few_times_per_sample():
    samples = 40
    # LeakSanitizer cannot run under ptrace (the sanitizer build).
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ":".join(o for o in (env.get("ASAN_OPTIONS", ""), "detect_leaks=0")
                                   if o)
    with start("fx-stacks", blocked=6) as fx, tempfile.TemporaryDirectory() as d:
        for engine in ("ptrace", "perf"):
            out = os.path.join(d, "strace-%s.txt" % engine)
            p = subprocess.run(["strace", "-f", "-c", "-o", out, "-e", "trace=rt_sigprocmask",
                                sdtest.binary(), "profile", "--engine", engine, "--count",
                                str(samples), "--rate", "100", "--format", "folded", "-q",
                                str(fx.pid)],
                               capture_output=True, text=True, timeout=300, env=env)
            eq(p.returncode, 0, p.stderr)
            # The profile is real: every thread's stack is in it.
            contains(p.stdout, "alpha_inner")
            contains(p.stdout, "beta_b")
            calls = rt_sigprocmask_calls(out)
            per = calls / samples
            sys.stderr.write("%s: %d rt_sigprocmask calls in %d samples (%.2f per sample)\n"
                             % (engine, calls, samples, per))
            # Measured: 2 per sample with ptrace (the SIGCHLD block around
            # the wait for the stops), 0.1 with perf. libunwind's own
            # masking would add about 180.
            ok(per <= 4, "%s: %d rt_sigprocmask calls for %d samples" % (engine, calls, samples))
        sdtest.assert_running(fx.pid)


if __name__ == "__main__":
    sdtest.main(globals())
