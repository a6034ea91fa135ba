# SPDX-License-Identifier: MIT
# What goroutines wait on, against the fixture's own knowledge:
# fx-golocks writes the address of every object its goroutines block on
# (the accounts' mutexes of an ABBA deadlock, a global mutex held by one
# goroutine with many waiters, channels, a select, a WaitGroup) and each
# goroutine's id (from its own runtime.Stack), and the dump must name, for
# each goroutine, the object it waits on, the holder inferred, and the
# deadlock; `locks` the same, exit status 3. Built with Go 1.19 and 1.24.
# Also: a corrupt allgs entry read as a note and the rest of the dump.
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
from fixture import available, copy_renamed, path_of, start  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402

WAITERS = 12


def need(name):
    ok(available(name), "%s was not built (is its Go toolchain installed?)" % name)


def facts(fx):
    """{"obj": {name: address}, "g": {role: [ids]}} as the fixture knows."""
    fx.proc.stdin.write(b"facts\n")
    fx.proc.stdin.flush()
    buf = b""
    fd = fx.proc.stdout.fileno()
    while b"end-of-facts\n" not in buf:
        chunk = os.read(fd, 65536)
        ok(chunk, "the fixture closed its stdout: %s" % fx.stderr())
        buf += chunk
    out = {"obj": {}, "g": {}}
    for line in buf.decode().split("end-of-facts\n")[0].splitlines():
        if line.startswith("leaked "):
            out["leaked"] = int(line.split()[1])
            continue
        kind, name, value = line.split()
        if kind == "obj":
            out["obj"][name] = int(value, 16)
        else:
            out["g"].setdefault(name, []).append(int(value))
    return out


def waits(g):
    return [(w["kind"], int(w["address"], 16)) for w in g["waiting_on"]]


def check_dump(name):
    need(name)
    with start(name, WAITERS, stdin=True) as fx:
        known = facts(fx)
        r = sdtest.run("--format", "json", fx.pid)
        text = sdtest.run(fx.pid)
        locks = sdtest.run("locks", fx.pid)
        ljson = sdtest.run("locks", "--format", "json", fx.pid)
        sdtest.assert_running(fx.pid)
    eq(r.rc, 0, r.err)
    doc = r.json()
    eq(doc["go"]["note"], None)
    eq(doc["go"]["objects_note"], None)
    gs = {g["id"]: g for g in doc["goroutines"]}
    obj, role = known["obj"], known["g"]
    (ab,), (ba,), (hold,) = role["transfer-ab"], role["transfer-ba"], role["hold"]
    a, b, ledger = obj["a"], obj["b"], obj["ledger"]
    # ABBA: each waits on the mutex the other holds, the holder inferred.
    eq(waits(gs[ab]), [("sync.Mutex", b)])
    eq(waits(gs[ba]), [("sync.Mutex", a)])
    eq(gs[ab]["waiting_on"][0]["holder"], ba)
    eq(gs[ba]["waiting_on"][0]["holder"], ab)
    eq(gs[ab]["waiting_on"][0]["holder_evidence"], "stack")
    for gid, mine in ((ab, a), (ba, b)):
        (h,) = gs[gid]["holds"]
        eq((h["kind"], int(h["address"], 16), h["certain"]), ("sync.Mutex", mine, True))
        eq(gs[gid]["frames"][h["frame"]]["function"], "main.transfer")
    # The held global: every waiter on it, its name, the holder sleeping.
    eq(len(role["contend"]), WAITERS)
    for gid in role["contend"]:
        eq(waits(gs[gid]), [("sync.Mutex", ledger)], "goroutine %d" % gid)
        eq(gs[gid]["waiting_on"][0]["symbol"], "main.ledger")
        eq(gs[gid]["waiting_on"][0]["holder"], hold)
    eq(gs[hold]["waiting_on"], [])
    (h,) = gs[hold]["holds"]
    eq((int(h["address"], 16), h["symbol"], h["waiters"], h["certain"]),
       (ledger, "main.ledger", WAITERS, True))
    eq(gs[hold]["frames"][h["frame"]]["function"], "main.hold")
    # Channels, a select on two, a WaitGroup; a sleeper waits on nothing.
    eq(waits(gs[role["recv"][0]]), [("chan", obj["inbox"])])
    eq(sorted(waits(gs[role["pick"][0]])), sorted([("chan", obj["left"]), ("chan", obj["right"])]))
    eq(waits(gs[role["await"][0]]), [("sync.WaitGroup", obj["wg"])])
    eq(gs[role["nap"][0]]["waiting_on"], [])
    # pprof labels, as the fixture set them; none elsewhere.
    eq(gs[role["nap"][0]]["labels"], {"job": "nap", "tier": '2 "quoted"'})
    eq([g["id"] for g in gs.values() if g["labels"]], role["nap"])
    ok(all(g["labels"] == {} for g in gs.values() if g["id"] not in role["nap"]), gs)
    for g in gs.values():
        for w in g["waiting_on"]:
            if w["kind"] == "chan":
                eq(w["holder"], None)
    # An RWMutex write-held by a sleeper: a reader waits to read, another
    # writer on its writers' mutex; both on the RWMutex, the holder named.
    rw, (writer,) = obj["rw"], role["writer"]
    eq(waits(gs[role["reader"][0]]), [("sync.RWMutex", rw)])
    eq(gs[role["reader"][0]]["waiting_on"][0]["mode"], "read")
    eq(waits(gs[role["writer-too"][0]]), [("sync.RWMutex", rw)])
    for r in (role["reader"][0], role["writer-too"][0]):
        eq(gs[r]["waiting_on"][0]["holder"], writer)
    (h,) = gs[writer]["holds"]
    eq((h["kind"], int(h["address"], 16), h["waiters"]), ("sync.RWMutex", rw, 2))
    eq(gs[writer]["frames"][h["frame"]]["function"], "main.write")
    # sync.Cond waits: on the global one (named), on one on the heap; a
    # Cond has no holder, and its waiters hold nothing (Wait unlocked L).
    eq(len(role["cond-wait"]), 2)
    for gid in role["cond-wait"]:
        eq(waits(gs[gid]), [("sync.Cond", obj["cond-wait"])], "goroutine %d" % gid)
        eq(gs[gid]["waiting_on"][0]["symbol"], "main.signal")
        eq(gs[gid]["waiting_on"][0]["holder"], None)
    eq(waits(gs[role["cond-heap"][0]]), [("sync.Cond", obj["cond-heap"])])
    eq(gs[role["cond-heap"][0]]["waiting_on"][0]["symbol"], None)
    # Nobody else holds a mutex.
    holders = sorted(g["id"] for g in gs.values() if g["holds"])
    eq(holders, sorted([ab, ba, hold, writer]))
    # The dump's own deadlock list: the two, each edge with its holder.
    (cycle,) = doc["go"]["deadlocks"]
    eq(sorted((e["goroutine"], int(e["address"], 16), e["holder"]) for e in cycle),
       sorted([(ab, b, ba), (ba, a, ab)]))
    ok(cycle[0]["goroutine"] == min(ab, ba), cycle)

    # Text: the object in the header, the hold under its frame.
    eq(text.rc, 0, text.err)
    sdtest.matches(text.out, r"^goroutine %d \[[^\]]*, on sync\.Mutex 0x%x held by goroutine %d "
                             r"\(inferred\)\]:$" % (ab, b, ba))
    sdtest.matches(text.out, r"^goroutine %d \[[^\]]*, on sync\.Mutex 0x%x <main\.ledger> held by "
                             r"goroutine %d \(inferred\)\]:$" % (role["contend"][0], ledger, hold))
    sdtest.matches(text.out, r"^goroutine %d \[select, on chan 0x%x or chan 0x%x\]:$" %
                   ((role["pick"][0],) + tuple(sorted([obj["left"], obj["right"]]))))
    sdtest.matches(text.out, r"^main\.hold\(\.\.\.\)\n\t\S+:\d+ \+0x[0-9a-f]+\n\t- holds "
                             r"sync\.Mutex 0x%x <main\.ledger>, %d waiting \(inferred" %
                   (ledger, WAITERS))
    contains(text.out, "Found 1 deadlock among goroutines (inferred: Go's mutexes do not "
                       "record their owner")

    # locks: by object, the holder and why, the waiters; exit status 3.
    eq(locks.rc, 3, locks.err)
    sdtest.matches(locks.out, r"^sync\.Mutex 0x%x <main\.ledger>, %d waiters, locked \(its word "
                              r"counts %d waiters\)\n  held by goroutine %d \(inferred: frame #\d+ "
                              r"main\.hold holds a reference to it" % (ledger, WAITERS, WAITERS,
                                                                        hold))
    contains(locks.out, "Go's mutexes do not record their owner")
    sdtest.matches(locks.out, r"^  waiting \(%d, same stack\): goroutines " % WAITERS)
    sdtest.matches(locks.out, r"^chan 0x%x, 1 waiter\n  a channel has no holder$" % obj["inbox"])
    sdtest.matches(locks.out, r"^Found 1 deadlock among goroutines")
    sdtest.matches(locks.out, r"^  goroutine %d \[[^\]]+\] waits for sync\.Mutex 0x%x, held by "
                              r"goroutine %d \(frame #\d+ main\.transfer holds a reference" %
                   (ab, b, ba))
    eq(ljson.rc, 3, ljson.err)
    lg = ljson.json()["goroutines"]
    byaddr = {int(o["address"], 16): o for o in lg["objects"]}
    eq(byaddr[ledger]["holder"], hold)
    eq(byaddr[ledger]["locked"], True)
    eq(byaddr[ledger]["counted_waiters"], WAITERS)
    eq(byaddr[ledger]["waiters"], sorted(role["contend"]))
    eq(byaddr[a]["waiters"], [ba])
    eq(byaddr[obj["wg"]]["holder"], None)
    eq(len(lg["deadlocks"]), 1)
    print("%s: %d goroutines, %d objects, 1 deadlock" % (name, len(gs), len(lg["objects"])))


def test_wait_objects_and_deadlock_go119():
    check_dump("fx-golocks")


def test_wait_objects_and_deadlock_go124():
    check_dump("fx-golocks-go124")


def test_no_deadlock_without_one():
    """fx-goroutines has a held global mutex with waiters and no cycle:
    locks finds no deadlock, says the holder is not known, exits 0."""
    need("fx-goroutines")
    with start("fx-goroutines", 4, stdin=True) as fx:
        r = sdtest.run("locks", fx.pid)
        sdtest.assert_running(fx.pid)
    eq(r.rc, 0, r.err)
    # holdLedger locks the global itself: no stack holds its address, no
    # holder is named, and the verdict says what that leaves unknown.
    sdtest.matches(r.out, r"^sync\.Mutex 0x[0-9a-f]+ <main\.ledger>, 2 waiters, locked \(its word "
                          r"counts 2 waiters\)\n  holder unknown: no other goroutine's stack holds "
                          r"a reference to it")
    contains(r.out, "No deadlock found among goroutines, but 1 mutex waited on has no holder "
                    "named: a cycle through it cannot be told.")


def test_unknown_sudog_layout_is_named_and_the_rest_stays():
    """runtime.sudog's field waitlink renamed in the DWARF: a layout the
    reader does not know. The note names the type, the field and the Go
    version; the goroutines are all there, waiting on nothing named."""
    need("fx-golocks")
    tmp = tempfile.mkdtemp()
    try:
        dst = copy_renamed(tmp, "fx-golocks", b"waitlink\0", b"waitlin_\0")
        with start(dst, 3, stdin=True) as fx:
            known = facts(fx)
            r = sdtest.run("--format", "json", fx.pid)
            text = sdtest.run(fx.pid)
            locks = sdtest.run("locks", fx.pid)
            sdtest.assert_running(fx.pid)
    finally:
        shutil.rmtree(tmp)
    eq(r.rc, 0, r.err)
    doc = r.json()
    note = doc["go"]["objects_note"]
    ok(note and "runtime.sudog" in note and "waitlink" in note and "go1.19" in note, note)
    eq(doc["go"]["note"], None)
    gs = {g["id"]: g for g in doc["goroutines"]}
    for ids in known["g"].values():
        for gid in ids:
            ok(gid in gs and gs[gid]["frames"], "goroutine %d" % gid)
            eq(gs[gid]["waiting_on"], [])
    contains(text.out, "note: wait objects: runtime.sudog")
    eq(locks.rc, 0, locks.err)
    contains(locks.out, "No deadlock found among goroutines.")


def test_profile_goroutines_finds_the_leak():
    """fx-golocks leaking a goroutine every 20 ms: profile --goroutines
    counts them by creation site sample after sample; the leak's site only
    grows, between what the fixture said it had started before and after;
    the mutex waiters' site stays as it is."""
    need("fx-golocks")
    with start("fx-golocks", 3, "leak", stdin=True) as fx:
        before = facts(fx)["leaked"]
        r = sdtest.run("profile", "--goroutines", "--count", "4", "--interval", "300ms", fx.pid)
        after = facts(fx)["leaked"]
        sdtest.assert_running(fx.pid)
    eq(r.rc, 0, r.err)
    sdtest.matches(r.out, r"^PID %d \(Go go1\.19\S*\): goroutines by creation site, 4 samples "
                          r"over \d+\.\d s$" % fx.pid)
    rows = {}
    for m in re.finditer(r"^ +(\d+) +(\d+) +(\d+) +(\d+) +([+-]\d+)  (\S+) at (\S+):(\d+)$",
                         r.out, re.M):
        rows[(m.group(6), int(m.group(8)))] = [int(m.group(i)) for i in range(1, 6)]
    (leak,) = [v for k, v in rows.items() if k[0] == "main.leakForever"]
    first, last, lo, hi, growth = leak
    ok(before <= first < last <= after, (before, leak, after))
    eq((lo, hi, growth), (first, last, last - first))
    sdtest.matches(r.out, r"^goroutines created by main\.leakForever at \S+/fx-golocks\.go:\d+ grew "
                          r"from %d to %d and never fell \(a leak\?\)$" % (first, last))
    # The waiters on the held mutex: 3 throughout, one site.
    (cont,) = [v for k, v in rows.items() if k[0] == "main.start" and v[0] == 3]
    eq(cont, [3, 3, 3, 3, 0])
    # Not a Go program: said, and a failure.
    with start("fx-idle") as fx:
        r = sdtest.run("profile", "--goroutines", "--count", "1", fx.pid)
    eq(r.rc, 2, r.err)
    contains(r.err, "is not a Go program")


def test_ambiguous_holders_claim_no_deadlock():
    """fx-golocks shared: main keeps references to both accounts of the
    ABBA pair. Each mutex is held by one of two goroutines with a reference
    (main, and the one of the pair that took it): no holder is named, no
    deadlock claimed, and both say why; the waiters and the mutex words
    are still shown."""
    need("fx-golocks")
    with start("fx-golocks", 3, "shared", stdin=True) as fx:
        known = facts(fx)
        r = sdtest.run("--format", "json", fx.pid)
        locks = sdtest.run("locks", fx.pid)
        sdtest.assert_running(fx.pid)
    eq(r.rc, 0, r.err)
    doc = r.json()
    gs = {g["id"]: g for g in doc["goroutines"]}
    (ab,), (ba,) = known["g"]["transfer-ab"], known["g"]["transfer-ba"]
    eq(waits(gs[ab]), [("sync.Mutex", known["obj"]["b"])])
    eq(gs[ab]["waiting_on"][0]["holder"], None)
    eq(gs[ba]["waiting_on"][0]["holder"], None)
    eq(doc["go"]["deadlocks"], [])
    (main,) = [g["id"] for g in gs.values()
               if any(f["function"] == "main.main" for f in g["frames"])]
    for gid in (ab, main):
        ok(any(int(h["address"], 16) == known["obj"]["a"] and not h["certain"]
               for h in gs[gid]["holds"]), gs[gid]["holds"])
    eq(locks.rc, 0, locks.err)
    sdtest.matches(locks.out, r"^sync\.Mutex 0x%x, 1 waiter, locked \(its word counts 1 waiter\)\n"
                              r"  holder unknown: 2 goroutines hold a reference to it" %
                   known["obj"]["a"])
    sdtest.matches(locks.out, r"^    goroutine %d \(frame #\d+ main\.main\)$" % main)
    contains(locks.out, "No deadlock found among goroutines, but 2 mutexes waited on have no "
                        "holder named: a cycle through them cannot be told.")


def nm_address(path, symbol):
    out = subprocess.run([sdtest.tool("nm", "binutils"), path], capture_output=True, text=True,
                         check=True).stdout
    m = re.search(r"^([0-9a-f]+) \S %s$" % re.escape(symbol), out, re.M)
    ok(m, "%s not in %s" % (symbol, path))
    return int(m.group(1), 16)


def test_corrupt_allgs_entry():
    """One entry of runtime.allgs overwritten (with the address of an
    unmapped page, then of bytes that are no g: main.junk) while the
    fixture idles,
    restored after: a note says how many goroutines could not be read and
    the rest of the dump stands."""
    need("fx-golocks")
    path = path_of("fx-golocks")
    allgs = nm_address(path, "runtime.allgs")
    with start("fx-golocks", 3, stdin=True) as fx:
        known = facts(fx)
        before = sdtest.run("--format", "json", fx.pid)
        eq(before.rc, 0, before.err)
        n = len(before.json()["goroutines"])
        with open("/proc/%d/mem" % fx.pid, "r+b", buffering=0) as mem:
            mem.seek(allgs)
            array = int.from_bytes(mem.read(8), "little")
            victim = array + 8 * 5
            mem.seek(victim)
            saved = mem.read(8)
            results = []
            try:
                for bad in (0x10000, nm_address(path, "main.junk")):
                    mem.seek(victim)
                    mem.write(bad.to_bytes(8, "little"))
                    results.append(sdtest.run("--format", "json", fx.pid))
            finally:
                mem.seek(victim)
                mem.write(saved)
        after = sdtest.run("--format", "json", fx.pid)
        sdtest.assert_running(fx.pid)
    unmapped, nog = results
    eq(unmapped.rc, 0, unmapped.err)
    doc = unmapped.json()
    contains(doc["go"]["note"] or "", "1 goroutine could not be read, 0 in a status not known")
    eq(len(doc["goroutines"]), n - 1)
    ok(all(t["frames"] for t in doc["threads"]), doc["threads"])
    # The rest stands: 3 on the mutex, the ABBA pair, 2 chans, a select, a
    # WaitGroup (one of them may be the one left out).
    ok(sum(1 for g in doc["goroutines"] if g["waiting_on"]) >= 8, doc["goroutines"])
    ok(len(doc["go"]["deadlocks"]) <= 1, doc["go"])
    eq(nog.rc, 0, nog.err)
    d2 = nog.json()
    contains(d2["go"]["note"] or "", "0 goroutines could not be read, 1 in a status not known")
    eq(len(d2["goroutines"]), n - 1)
    eq(after.rc, 0, after.err)
    eq(after.json()["go"]["note"], None)
    eq(len(after.json()["goroutines"]), n)


def check_record_report(name, version, *engine):
    """fx-golocks leaking a goroutine every 20 ms, recorded: every saved
    snapshot holds its goroutines, and `report` finds the leak (its
    creation site, counts that only grow, between what the fixture said it
    had started before and after the recording, each the count of that
    snapshot's own file), the ABBA pair as a deadlock among goroutines, and
    the waiters on the held global mutex stuck on it, its holder named."""
    need(name)
    out = tempfile.mkdtemp(prefix="sd-goreport-")
    try:
        with start(name, 3, "leak", stdin=True) as fx:
            known = facts(fx)
            rec = sdtest.run("record", "--every", "300ms", "--count", "4", "--out", out,
                             *engine, fx.pid)
            after = facts(fx)["leaked"]
            sdtest.assert_running(fx.pid)
        eq(rec.rc, 0, rec.err)
        role, obj = known["g"], known["obj"]
        files = sorted(f for f in os.listdir(out) if f.startswith("snap-"))
        eq(len(files), 4, files)
        saved = []
        for f in files:
            with open(os.path.join(out, f)) as fh:
                doc = json.load(fh)
            ok(doc["go"]["version"].startswith(version), doc["go"])
            eq(doc["engine"], engine[1] if engine else "ptrace", f)
            saved.append(sum(1 for g in doc["goroutines"]
                             if (g["created_by"] or {}).get("function") == "main.leakForever"))
            ids = {g["id"] for g in doc["goroutines"]}
            ok(set(role["contend"]) | set(role["transfer-ab"]) <= ids, sorted(ids))
        rj = sdtest.run("report", "--format", "json", out)
        rt = sdtest.run("report", out)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    eq(rj.rc, 0, rj.err)
    eq(rt.rc, 0, rt.err)
    fnd = rj.json()["findings"]
    (leak,) = [x for x in fnd if x["kind"] == "goroutine_leak"]
    eq(leak["created_by"]["function"], "main.leakForever")
    ok(leak["created_by"]["file"].endswith("/fx-golocks.go"), leak)
    counts = leak["counts"]
    eq(counts, saved)
    eq(counts, sorted(counts))
    ok(known["leaked"] <= counts[0] < counts[-1] <= after, (known["leaked"], counts, after))
    eq((leak["first"], leak["last"], leak["seen"]), (1, 4, 4))
    sdtest.matches(rt.out, r"^  goroutine leak: goroutines created by main\.leakForever grew from "
                           r"%d to %d in \d+\.\d s and never fell, in \d+ \"fx-golocks" %
                   (counts[0], counts[-1]))
    sdtest.matches(rt.out, r"now: %d in main\.leaked at \S+/fx-golocks\.go:\d+ \[chan receive\]"
                   % counts[-1])
    (dl,) = [x for x in fnd if x["kind"] == "goroutine_deadlock"]
    eq(sorted(dl["goroutines"]), sorted(role["transfer-ab"] + role["transfer-ba"]))
    eq(dl["seen"], 4)
    stuck = [x for x in fnd if x["kind"] == "goroutines_stuck"]
    (mu,) = [x for x in stuck if x["address"] and int(x["address"], 16) == obj["ledger"]]
    eq(mu["goroutines"], sorted(role["contend"]))
    eq(mu["holder_goroutine"], role["hold"][0])
    eq((mu["first"], mu["last"]), (1, 4))
    # The ABBA pair is the deadlock, not also stuck; the leaked goroutines
    # (a receive, as idle workers wait) and the sleepers are no finding.
    for x in stuck:
        ok(not set(x["goroutines"]) & set(dl["goroutines"] + role["nap"] + role["recv"]), x)
    waited = {int(x["address"], 16) for x in stuck if x["address"]}
    ok({obj["ledger"], obj["wg"], obj["rw"]} <= waited, (stuck, obj))
    sdtest.matches(rt.out, r"^  stuck: 3 goroutines \[(semacquire|sync\.Mutex\.Lock)\] on sync\.Mutex "
                           r"0x%x <main\.ledger> held by goroutine %d \(inferred\)" %
                   (obj["ledger"], role["hold"][0]))


def test_record_report_goroutines():
    check_record_report("fx-golocks", "go1.19")


def test_record_report_goroutines_go124():
    check_record_report("fx-golocks-go124", "go1.24")


def test_record_report_goroutines_perf_engine():
    """The perf engine's snapshots hold the goroutines too: the same leak,
    deadlock and stuck waiters found from them."""
    check_record_report("fx-golocks", "go1.19", "--engine", "perf")


def test_saved_goroutines_malformed():
    """A saved snapshot whose goroutines are damaged is refused with the
    member named; one saved before goroutines were (no "go") loads."""
    need("fx-golocks")
    out = tempfile.mkdtemp(prefix="sd-gosave-")
    try:
        with start("fx-golocks", 3, stdin=True) as fx:
            facts(fx)
            rec = sdtest.run("record", "--every", "200ms", "--count", "1", "--out", out, fx.pid)
            sdtest.assert_running(fx.pid)
        eq(rec.rc, 0, rec.err)
        (f,) = [f for f in os.listdir(out) if f.startswith("snap-")]
        with open(os.path.join(out, f)) as fh:
            doc = json.load(fh)
        ok(doc["go_objects"], doc.get("go_objects"))
        cases = []
        d = json.loads(json.dumps(doc))
        d["goroutines"][1]["status"] = "sleeping"
        cases.append((d, r"goroutines\[1\]\.status: \"sleeping\" is no goroutine status"))
        d = json.loads(json.dumps(doc))
        d["goroutines"][0]["frames"][0]["addr"] = 12
        cases.append((d, r"goroutines\[0\]\.frames\[0\]\.addr: expected a hex string"))
        d = json.loads(json.dumps(doc))
        d["go_objects"][0]["waiters"] = ["x"]
        cases.append((d, r"go_objects\[0\]\.waiters\[0\]: expected a goroutine id"))
        d = json.loads(json.dumps(doc))
        d["goroutines"] = {"id": 1}
        cases.append((d, r": goroutines: expected an array, found an object"))
        for i, (bad, pattern) in enumerate(cases):
            p = os.path.join(out, "bad%d.json" % i)
            with open(p, "w") as fh:
                json.dump(bad, fh)
            r = sdtest.run("report", p)
            eq(r.rc, 2, (r.out, r.err))
            sdtest.matches(r.err, pattern)
        # Saved before goroutines were: no "go" members; it loads, and
        # the dump's JSON (objects rebuilt from waiting_on) loads too.
        old = json.loads(json.dumps(doc))
        for k in ("go", "goroutines", "go_objects"):
            del old[k]
        p = os.path.join(out, "old.json")
        with open(p, "w") as fh:
            json.dump(old, fh)
        r = sdtest.run("report", p)
        eq(r.rc, 0, r.err)
        plain = json.loads(json.dumps(doc))
        del plain["go_objects"]
        p = os.path.join(out, "plain.json")
        with open(p, "w") as fh:
            json.dump(plain, fh)
        r = sdtest.run("report", "--format", "json", p)
        eq(r.rc, 0, r.err)
        eq([x["kind"] for x in r.json()["findings"] if x["kind"].startswith("goroutine")],
           ["goroutine_deadlock"])
    finally:
        shutil.rmtree(out, ignore_errors=True)


def folded_counts(text):
    out = {}
    for line in text.splitlines():
        stack, n = line.rsplit(" ", 1)
        out[stack] = out.get(stack, 0) + int(n)
    return out


def test_profile_goroutines_formats():
    """profile --goroutines --format folded / -o FILE.pprof: each sample
    counts each goroutine's stack once: the fixture's WAITERS goroutines
    in main.contend count WAITERS per sample, the ABBA pair 2, the holder
    1, against the fixture's own list of goroutines; go tool pprof reads
    the pprof file to the same counts; a tiny --cpu-budget slows the
    goroutine sampling and says so, as for threads."""
    need("fx-golocks")
    gotool = shutil.which("go")
    ok(gotool, "go (golang-go) is needed to read the pprof file")
    with start("fx-golocks", WAITERS, stdin=True) as fx, tempfile.TemporaryDirectory() as d:
        known = facts(fx)
        fo = sdtest.run("profile", "--goroutines", "--count", "3", "--interval", "100ms",
                        "--format", "folded", fx.pid)
        path = os.path.join(d, "g.pprof")
        pp = sdtest.run("profile", "--goroutines", "--count", "4", "--interval", "100ms",
                        "-o", path, fx.pid)
        slow = sdtest.run("profile", "--goroutines", "--duration", "7s", "--interval", "10ms",
                          "--cpu-budget", "0.01", "-o", os.path.join(d, "s.json"), fx.pid)
        sdtest.assert_running(fx.pid)
        top = subprocess.run([gotool, "tool", "pprof", "-top", "-sample_index=samples", path],
                             capture_output=True, text=True, timeout=120)
        with open(os.path.join(d, "s.json")) as f:
            sj = json.load(f)
    eq(fo.rc, 0, fo.err)
    role = known["g"]
    counts = folded_counts(fo.out)

    def total(fn):
        return sum(n for st, n in counts.items() if (";%s;" % fn) in st + ";")

    eq(total("main.contend"), 3 * len(role["contend"]))
    eq(total("main.transfer"), 3 * 2)
    eq(total("main.hold"), 3)
    eq(total("main.recv"), 3)
    # Every sample has the same goroutines: the total is a multiple of 3.
    eq(sum(counts.values()) % 3, 0)
    contains(fo.err, "stackdump: folded profile: 3 samples in")
    eq(pp.rc, 0, pp.err)
    eq(top.returncode, 0, top.stderr)
    m = re.search(r"Total samples = (\d+)", top.stdout)
    ok(m, top.stdout)
    eq(int(m.group(1)), sum(counts.values()) // 3 * 4)
    cum = {}
    for line in top.stdout.splitlines():
        f = line.split()
        if len(f) >= 6 and f[0].isdigit():
            cum[f[5]] = int(f[3])
    eq(cum.get("main.contend"), 4 * len(role["contend"]), top.stdout)
    eq(cum.get("main.hold"), 4, top.stdout)
    eq(slow.rc, 0, slow.err)
    contains(slow.err, "over the budget of 0.01% (--cpu-budget)")
    eq(sj["rate_asked"], 100.0)
    ok(sj["samples"] < 7 * 100 * 0.9, sj["samples"])
    contains(sj["rate_note"], "CPU budget")


if __name__ == "__main__":
    sdtest.main(globals())
