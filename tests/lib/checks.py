# SPDX-License-Identifier: MIT
# Counts the checks the suite runs. Every CTest test runs through
# "checks.py run", which passes its output on and records how many checks
# it passed; CTest's pre- and post-test hooks (CTestCustom.cmake) call
# "reset" and "total", which prints the sum and, after a whole-suite run,
# fails when it is lower than the floor kept in tests/check-floor.
"""Usage:

    checks.py run NAME DIR -- COMMAND...   run one test program, record its count
    checks.py reset DIR                    forget the counts of the last run
    checks.py total BUILD DIR FLOOR        print the total; check it against FLOOR
    checks.py verify BUILD FLOOR           fail unless the last run in BUILD was the
                                           whole suite, skipped nothing and passed
                                           at least FLOOR checks (.ci/run)

The floor's file holds two numbers on its first line: checks and
assertions (those the CLI tests make through sdtest's eq/ok/contains/
matches, summed over the run), so that a test gutted of its assertions
fails the run as surely as one that stopped running.

A check is one test case: a test_* function of a CLI test (sdtest prints
"N passed, N failed[, N skipped] (N assertions)"), one cmocka test ("[  PASSED
 ] N test(s)."), or one fuzz target that finished its runs. A program that
exits 0 without printing its count fails: nothing may pass unseen.
"""

import json
import os
import re
import subprocess
import sys

SKIP = 77

SDTEST = re.compile(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?"
                    r"(?: \((\d+) assertions\))?$", re.M)
CMOCKA_PASSED = re.compile(r"^\[  PASSED  \] (\d+) test\(s\)\.$", re.M)
CMOCKA_FAILED = re.compile(r"^\[  FAILED  \] (\d+) test\(s\)", re.M)
CMOCKA_SKIPPED = re.compile(r"^\[  SKIPPED \] (\d+) test\(s\)", re.M)
FUZZ_DONE = re.compile(r"^Done (\d+) runs in ", re.M)


def parse(text):
    """(passed, failed, skipped, assertions) from a program's output, or None."""
    m = SDTEST.findall(text)
    if m:
        p, f, s, a = m[-1]
        return int(p), int(f), int(s or 0), int(a or 0)
    p = CMOCKA_PASSED.findall(text)
    if p:
        f = CMOCKA_FAILED.findall(text)
        s = CMOCKA_SKIPPED.findall(text)
        return int(p[-1]), int(f[-1]) if f else 0, int(s[-1]) if s else 0, 0
    if FUZZ_DONE.search(text):
        return 1, 0, 0, 0
    return None


def read_floor(floor_file):
    """(checks, assertions) from FLOOR_FILE's first line: the fewest checks
    a whole run may pass, and the fewest assertions its CLI tests may make
    (0 when the line names none)."""
    with open(floor_file) as f:
        words = f.readline().split()
    return int(words[0]), int(words[1]) if len(words) > 1 else 0


def cmd_run(name, outdir, argv):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen = []
    for raw in iter(p.stdout.readline, b""):
        sys.stdout.buffer.write(raw)
        sys.stdout.flush()
        seen.append(raw.decode("utf-8", "replace"))
    rc = p.wait()
    counts = parse("".join(seen))
    os.makedirs(outdir, exist_ok=True)
    if counts is None:
        if rc == 0:
            print("checks: %s exited 0 but printed no count of its checks" % name)
            rc = 1
        counts = (0, 1, 0, 0)
    elif rc == 0 and counts[0] == 0 and counts[2] == 0:
        print("checks: %s ran no check" % name)
        rc = 1
    passed, failed, skipped, asserts = counts
    if rc == SKIP:
        skipped = max(skipped, 1)
    with open(os.path.join(outdir, name), "w") as f:
        json.dump({"name": name, "rc": rc, "passed": passed, "failed": failed,
                   "skipped": skipped, "assertions": asserts}, f)
    return rc


def cmd_reset(outdir):
    if os.path.isdir(outdir):
        for n in os.listdir(outdir):
            os.unlink(os.path.join(outdir, n))
    return 0


def registered(build):
    """{test name: command list} of every test CTest knows in BUILD, read
    from the CTestTestfile.cmake files (asking ctest itself would run these
    hooks again)."""
    tests = {}
    todo = [build]
    while todo:
        d = todo.pop()
        try:
            with open(os.path.join(d, "CTestTestfile.cmake")) as f:
                text = f.read()
        except FileNotFoundError:
            continue
        for m in re.finditer(r'^add_test\((\S+) (.*)\)$', text, re.M):
            tests[m.group(1)] = re.findall(r'"([^"]*)"', m.group(2))
        for m in re.finditer(r'^subdirs\("([^"]*)"\)$', text, re.M):
            todo.append(os.path.join(d, m.group(1)))
    return tests


def cmd_total(build, outdir, floor_file):
    floor, afloor = read_floor(floor_file)
    recs = []
    if os.path.isdir(outdir):
        for n in sorted(os.listdir(outdir)):
            with open(os.path.join(outdir, n)) as f:
                recs.append(json.load(f))
    tests = registered(build)
    unwrapped = sorted(n for n, c in tests.items()
                       if not any(os.path.basename(a) == "checks.py" for a in c))
    passed = sum(r["passed"] for r in recs)
    failed = sum(r["failed"] for r in recs)
    skipped = sum(r["skipped"] for r in recs)
    asserts = sum(r["assertions"] for r in recs)
    whole = {r["name"] for r in recs} >= set(tests) - set(unwrapped)
    print("checks: %d passed, %d failed, %d skipped (%d assertions) in %d of %d test programs"
          % (passed, failed, skipped, asserts, len(recs), len(tests)))
    with open(os.path.join(build, "checks-total"), "w") as f:
        f.write("%d passed %d failed %d skipped %d assertions %d programs %d registered%s\n" % (
            passed, failed, skipped, asserts, len(recs), len(tests),
            " whole" if whole else ""))
    rc = 0
    if unwrapped:
        print("checks: these tests do not report their checks (add them with "
              "sd_add_test in tests/CMakeLists.txt): %s" % ", ".join(unwrapped))
        rc = 1
    for r in recs:
        if r["skipped"]:
            print("checks: %s skipped %d (only allowed with STACKDUMP_TEST_UNPRIVILEGED=1)"
                  % (r["name"], r["skipped"]))
    if whole and not skipped and passed < floor:
        print("checks: %d checks passed, fewer than the floor of %d in %s: a test stopped "
              "running (or lower the floor on purpose)" % (passed, floor, floor_file))
        rc = 1
    elif whole and not skipped and asserts < afloor:
        print("checks: %d assertions made, fewer than the floor of %d in %s: assertions "
              "were removed from a test (or lower the floor on purpose)"
              % (asserts, afloor, floor_file))
        rc = 1
    elif whole and skipped:
        print("checks: %d skipped, so the floor of %d is not applied" % (skipped, floor))
    elif whole:
        print("checks: the floor is %d checks, %d assertions (%s)" % (floor, afloor, floor_file))
    return rc


def cmd_verify(build, floor_file):
    floor, afloor = read_floor(floor_file)
    try:
        with open(os.path.join(build, "checks-total")) as f:
            words = f.read().split()
    except FileNotFoundError:
        print("checks: %s has no checks-total: did ctest run there?" % build)
        return 1
    passed, failed, skipped = int(words[0]), int(words[2]), int(words[4])
    asserts = int(words[6])
    if words[-1] != "whole":
        print("checks: the last run in %s was not the whole suite" % build)
        return 1
    if failed or skipped or passed < floor or asserts < afloor:
        print("checks: %d passed, %d failed, %d skipped, %d assertions; the floor is %d "
              "checks, %d assertions" % (passed, failed, skipped, asserts, floor, afloor))
        return 1
    print("checks: %d passed in %s, %d assertions (floor %d, %d)" % (
        passed, build, asserts, floor, afloor))
    return 0


def main(argv):
    if len(argv) >= 5 and argv[1] == "run" and argv[4] == "--":
        return cmd_run(argv[2], argv[3], argv[5:])
    if len(argv) == 3 and argv[1] == "reset":
        return cmd_reset(argv[2])
    if len(argv) == 4 and argv[1] == "verify":
        return cmd_verify(argv[2], argv[3])
    if len(argv) == 5 and argv[1] == "total":
        return cmd_total(argv[2], argv[3], argv[4])
    print(__doc__)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv))
