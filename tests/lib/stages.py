# SPDX-License-Identifier: MIT
# The stage table of src/README.md and the checks that hold the tree to it
# (tests/cli/test_layering.py): includes and calls go only to the stages a
# row names, no include cycle, no two files calling into each other. Each
# check returns the list of what it found wrong (empty: all good), so that
# the test can also run it on a tree made wrong on purpose.
import collections
import os
import re
import subprocess

ROW = re.compile(r"^\|\s*([a-z][a-z0-9_-]*)\s*\|([^|]*)\|([^|]*)\|\s*$")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def read_table(readme):
    """[(stage, job, [stages it may use])] in the order of the table."""
    rows = []
    with open(readme, encoding="utf-8") as f:
        for line in f:
            m = ROW.match(line.rstrip("\n"))
            if not m or m.group(1) == "stage":
                continue
            uses = [u.strip() for u in m.group(3).split(",") if u.strip()]
            rows.append((m.group(1), m.group(2).strip(), uses))
    return rows


def table_problems(rows, src):
    """A stage used before its row (an upward or circular use), named twice,
    or without its folder; a folder of SRC missing from the table."""
    bad, seen = [], []
    for st, job, uses in rows:
        if st in seen:
            bad.append("stage %s is in the table twice" % st)
        if not job:
            bad.append("stage %s says no job" % st)
        for u in uses:
            if u not in seen:
                bad.append("stage %s may use %s, which is not a row above it" % (st, u))
        seen.append(st)
        if not os.path.isdir(os.path.join(src, st)):
            bad.append("stage %s has no folder src/%s" % (st, st))
    for d in sorted(os.listdir(src)):
        if os.path.isdir(os.path.join(src, d)) and d not in seen:
            bad.append("folder src/%s is in no row of the table" % d)
    return bad


def sources(src):
    """{path: stage} of every .c and .h of the stage folders of SRC."""
    out = {}
    for st in sorted(os.listdir(src)):
        d = os.path.join(src, st)
        if not os.path.isdir(d):
            continue
        for n in sorted(os.listdir(d)):
            if n.endswith((".c", ".h")):
                out[os.path.join(d, n)] = st
    return out


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return INCLUDE.findall(f.read())


# Headers generated at build time, by the stage that owns their source.
GENERATED = {"profile.pb-c.h": "render"}


def include_problems(rows, src):
    """Headers of the same name in two folders, an include of no header of
    the engine, and an include of a stage the including stage may not use."""
    uses = {st: set(u) for st, _, u in rows}
    files = sources(src)
    by_name, bad = {}, []
    for path, st in files.items():
        n = os.path.basename(path)
        if n.endswith(".h"):
            if n in by_name:
                bad.append("two headers named %s: %s and %s" % (n, by_name[n][0], path))
            by_name[n] = (path, st)
    for path, st in sorted(files.items()):
        for inc in includes(path):
            name = os.path.basename(inc)
            to = by_name[name][1] if name in by_name else GENERATED.get(name)
            if to is None:
                bad.append("%s includes \"%s\", no header of the engine" %
                           (os.path.relpath(path, src), inc))
            elif to != st and to not in uses.get(st, ()):
                bad.append("%s (stage %s) includes %s of stage %s, which its row does not name" %
                           (os.path.relpath(path, src), st, name, to))
    return bad


def include_cycles(src):
    """Cycles of includes between the files of SRC's stage folders."""
    files = sources(src)
    names = {os.path.basename(p): p for p in files}
    deps = {p: [names[os.path.basename(i)] for i in includes(p)
                if os.path.basename(i) in names and names[os.path.basename(i)] != p]
            for p in files}
    # The includes of a module (x.c and x.h) are the module's.
    mod = lambda p: p.rsplit(".", 1)[0]  # noqa: E731
    mdeps = collections.defaultdict(set)
    for p, ds in deps.items():
        for d in ds:
            if mod(d) != mod(p):
                mdeps[mod(p)].add(mod(d))
    state, cycles = {}, []

    def visit(m, path):
        state[m] = 1
        for d in sorted(mdeps.get(m, ())):
            if state.get(d) == 1:
                cycles.append(" -> ".join(os.path.relpath(x, src)
                                          for x in path[path.index(d):] + [d]))
            elif d not in state:
                visit(d, path + [d])
        state[m] = 2

    for m in sorted(mdeps):
        if m not in state:
            visit(m, [m])
    return cycles


def symbols(obj):
    """(defined, undefined) global symbols of an object file."""
    r = subprocess.run(["nm", obj], capture_output=True, text=True, check=True)
    defined, undefined = set(), set()
    for ln in r.stdout.splitlines():
        p = ln.split()
        if len(p) == 3 and p[1] in "TDBRCGSV":
            defined.add(p[2])
        elif len(p) == 2 and p[0] == "U":
            undefined.add(p[1])
    return defined, undefined


def objects(objdir):
    """{source path relative to the object folder: object path} below OBJDIR
    (CMake's FOO.c.o beside the source's own folders)."""
    out = {}
    for root, _, names in os.walk(objdir):
        for n in names:
            if n.endswith(".c.o"):
                p = os.path.join(root, n)
                out[os.path.relpath(p, objdir)[:-2]] = p
    return out


def call_edges(objs):
    """{a: {b: [symbols a uses that b defines]}} between object files."""
    syms = {k: symbols(o) for k, o in objs.items()}
    owner = {}
    for k, (defined, _) in syms.items():
        for s in defined:
            owner[s] = k
    edges = collections.defaultdict(dict)
    for k, (_, undefined) in syms.items():
        for s in sorted(undefined):
            o = owner.get(s)
            if o and o != k:
                edges[k].setdefault(o, []).append(s)
    return edges


def mutual_calls(edges):
    """Pairs of files that call into (or refer to) each other."""
    bad = []
    for a in sorted(edges):
        for b in sorted(edges[a]):
            if a < b and a in edges.get(b, {}):
                bad.append("%s and %s call into each other (%s; %s)" %
                           (a, b, ", ".join(edges[a][b][:3]), ", ".join(edges[b][a][:3])))
    return bad


def call_problems(rows, edges):
    """Calls of an engine object into a stage its row does not name. Keys
    of EDGES are paths like src/STAGE/file.c."""
    uses = {st: set(u) for st, _, u in rows}
    stage = lambda k: k.split(os.sep)[1] if k.startswith("src" + os.sep) else None  # noqa: E731
    bad = []
    for a in sorted(edges):
        sa = stage(a)
        for b, syms in sorted(edges[a].items()):
            sb = stage(b)
            if sa and sb and sa != sb and sb not in uses.get(sa, ()):
                bad.append("%s (stage %s) calls %s of %s (stage %s), which its row does not name"
                           % (a, sa, ", ".join(syms[:3]), b, sb))
    return bad
