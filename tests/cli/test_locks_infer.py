# SPDX-License-Identifier: MIT
# Holders that no lock records, inferred from the references the holders'
# stacks keep: Rust std Mutex ABBA, RwLock held by a writer or by two
# readers, a 3-cycle through a glibc mutex, decoys that must not make an
# edge; C++ std::lock_guard ABBA (recorded owners, attributed to the guard's
# frame); glibc rwlock and std::shared_mutex readers; the per-frame "- holds"
# lines of dumps and of the lock view; a saved snapshot keeps all of it.
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
from fixture import available, start  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402

HEX = r"0x[0-9a-f]+"


def need(name):
    # The Rust fixtures exist when rustc was found at build time; CI has it
    # (.ci/deps), so a missing one is a failure, not a skip.
    ok(available(name), "%s was not built (is rustc installed?)" % name)


def locks_json(pid, rc=0):
    r = sdtest.run("locks", "--format", "json", pid)
    eq(r.rc, rc, "locks exit code: %s" % r.err)
    sdtest.assert_running(pid)
    return r.json()


def locks_text(pid, rc=0):
    r = sdtest.run("locks", pid)
    eq(r.rc, rc, "locks exit code: %s" % r.err)
    sdtest.assert_running(pid)
    return r.out


def dump_json(pid, rc=0):
    """{tid: thread} of a JSON dump (RC 3: it holds a deadlock)."""
    r = sdtest.run("--format", "json", pid)
    eq(r.rc, rc, r.err)
    sdtest.assert_running(pid)
    return {t["tid"]: t for t in r.json()["threads"]}


def dump_text(pid, rc=0):
    r = sdtest.run(pid)
    eq(r.rc, rc, r.err)
    return r.out


def frame_fn(threads, tid, idx):
    ok(idx is not None, "no frame index")
    return threads[tid]["frames"][idx]["function"]


def lock_at(doc, address):
    found = [lk for lk in doc["locks"] if lk["address"] == address]
    eq(len(found), 1, "locks at %s: %r" % (address, doc["locks"]))
    return found[0]


def frame_block(text, tid):
    """The text of one thread's stack in a dump (header to blank line)."""
    m = re.search(r"^Thread %d .*?(?=^\s*$|\Z)" % tid, text, re.M | re.S)
    ok(m, "thread %d not in the dump" % tid)
    return m.group(0)


def holds_under(block, function):
    """The '- holds' lines right under the frame of FUNCTION."""
    lines = block.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"\s+#\d+ +0x[0-9a-f]+ (?:\[inlined\] )?(.*?)(?:\+0x[0-9a-f]+)? \(", line)
        if m and m.group(1) == function:
            out = []
            for nxt in lines[i + 1:]:
                if not re.match(r"\s+- ", nxt):
                    break
                out.append(nxt.strip())
            return out
    raise AssertionError("no frame %s in:\n%s" % (function, block))


# ---- Rust std locks ----

def test_rust_abba():
    need("fx-rustinfer")
    with start("fx-rustinfer", "abba", parked=2) as fx:
        left, right = fx.tid("left"), fx.tid("right")
        doc = locks_json(fx.pid, rc=3)
        eq(len(doc["locks"]), 2, repr(doc["locks"]))
        owner = {}
        for lk in doc["locks"]:
            eq(lk["kind"], "rust-mutex")
            eq(len(lk["waiters"]), 1)
            eq(lk["owner_evidence"], "stack")
            owner[lk["waiters"][0]] = (lk["owner"], lk["owner_frame"], lk["address"])
        eq(sorted(owner), sorted([left, right]))
        eq(owner[left][0], right)
        eq(owner[right][0], left)
        threads = dump_json(fx.pid, rc=3)
        for waiter, (holder, frame, _) in owner.items():
            eq(frame_fn(threads, holder, frame), "fx_rustinfer::lock_both")
        eq(len(doc["deadlocks"]), 1)
        cyc = doc["deadlocks"][0]
        eq([e["tid"] for e in cyc], sorted([left, right]))
        for e in cyc:
            eq(e["owner_evidence"], "stack")
            contains(e["evidence"], "fx_rustinfer::lock_both holds a reference to it")
            eq(e["owner"], owner[e["tid"]][0])

        text = locks_text(fx.pid, rc=3)
        contains(text, 'held by %d "right" (inferred: frame #%d fx_rustinfer::lock_both '
                       'holds a reference to it)' % (right, owner[left][1]))
        contains(text, "Found 1 deadlock:")
        contains(text, '%d "left" waits for rust-mutex %s held by %d "right" (inferred: '
                       'frame #%d fx_rustinfer::lock_both holds a reference to it)'
                 % (left, owner[left][2], right, owner[left][1]))

        # The dump: each thread holds the other's lock in lock_both.
        t = dump_text(fx.pid, rc=3)
        eq(holds_under(frame_block(t, left), "fx_rustinfer::lock_both"),
           ["- holds (inferred) rust-mutex %s" % owner[right][2]])
        eq(holds_under(frame_block(t, right), "fx_rustinfer::lock_both"),
           ["- holds (inferred) rust-mutex %s" % owner[left][2]])
        h = threads[left]["holds"]
        eq(len(h), 1, repr(h))
        eq((h[0]["kind"], h[0]["address"], h[0]["owner_evidence"], h[0]["candidates"]),
           ("rust-mutex", owner[right][2], "stack", 1))
        w = threads[left]["wait"]
        eq((w["owner"], w["owner_evidence"], w["owner_frame"]),
           (right, "stack", owner[left][1]))


def test_rust_rwlock_writer():
    need("fx-rustinfer")
    with start("fx-rustinfer", "rwlock", parked=2) as fx:
        writer = fx.tid("writer")
        readers = sorted([fx.tid("reader-1"), fx.tid("reader-2")])
        doc = locks_json(fx.pid)
        eq(len(doc["locks"]), 1)
        lk = doc["locks"][0]
        eq((lk["kind"], lk["owner"], lk["owner_evidence"], lk["waiters"]),
           ("rust-rwlock", writer, "stack", readers))
        eq(doc["deadlocks"], [])
        threads = dump_json(fx.pid)
        eq(frame_fn(threads, writer, lk["owner_frame"]), "fx_rustinfer::write_hold")
        h = threads[writer]["holds"]
        eq([(x["address"], x["mode"], x["owner_evidence"]) for x in h],
           [(lk["address"], "write", "stack")])
        for r in readers:
            eq(threads[r]["holds"], [])
        text = dump_text(fx.pid)
        eq(holds_under(frame_block(text, writer), "fx_rustinfer::write_hold"),
           ["- holds (inferred) rust-rwlock %s for writing" % lk["address"]])


def test_rust_rwlock_readers():
    need("fx-rustinfer")
    with start("fx-rustinfer", "rwread", parked=1) as fx:
        writer = fx.tid("writer")
        readers = sorted([fx.tid("reader-1"), fx.tid("reader-2")])
        doc = locks_json(fx.pid)
        eq(len(doc["locks"]), 1)
        lk = doc["locks"][0]
        # Two readers hold it: no single owner to draw an edge to.
        eq((lk["kind"], lk["owner"], lk["waiters"]), ("rust-rwlock", None, [writer]))
        eq(sorted(c["tid"] for c in lk["candidates"]), readers)
        eq([c["certain"] for c in lk["candidates"]], [True, True])
        threads = dump_json(fx.pid)
        for c in lk["candidates"]:
            eq(frame_fn(threads, c["tid"], c["frame"]), "fx_rustinfer::read_hold")
            h = threads[c["tid"]]["holds"]
            eq([(x["mode"], x["owner_evidence"], x["candidates"]) for x in h],
               [("read", "stack", 1)])
        text = locks_text(fx.pid)
        contains(text, "  held by 2 threads (inferred: a reference in each stack): ")
        contains(text, '%d "reader-1" (frame #' % readers[0])


def test_cycle3_glibc_and_rust():
    need("fx-rustinfer")
    with start("fx-rustinfer", "cycle3", parked=3) as fx:
        c1, c2, c3 = fx.tid("c-1"), fx.tid("c-2"), fx.tid("c-3")
        doc = locks_json(fx.pid, rc=3)
        eq(len(doc["deadlocks"]), 1, repr(doc["deadlocks"]))
        cyc = doc["deadlocks"][0]
        eq([(e["tid"], e["kind"], e["owner"], e["owner_evidence"]) for e in cyc],
           [(c1, "rust-mutex", c2, "stack"), (c2, "rust-mutex", c3, "stack"),
            (c3, "mutex", c1, "memory")])
        threads = dump_json(fx.pid, rc=3)
        eq(frame_fn(threads, c2, cyc[0]["owner_frame"]), "fx_rustinfer::lock_both")
        eq(frame_fn(threads, c3, cyc[1]["owner_frame"]), "fx_rustinfer::rust_then_pthread")
        # The recorded owner is attributed to the frame keeping the mutex.
        h = threads[c1]["holds"]
        eq([(x["kind"], x["owner_evidence"]) for x in h], [("mutex", "memory")])
        eq(frame_fn(threads, c1, h[0]["frame"]), "fx_rustinfer::pthread_then_rust")
        text = locks_text(fx.pid, rc=3)
        contains(text, "Deadlock 1, 3 threads:")
        t = dump_text(fx.pid, rc=3)
        eq(holds_under(frame_block(t, c1), "fx_rustinfer::pthread_then_rust"),
           ["- holds mutex %s" % cyc[2]["address"]])


def test_decoys_make_no_edge():
    need("fx-rustinfer")
    with start("fx-rustinfer", "decoys", parked=4) as fx:
        tid = {n: fx.tid(n) for n in ("keeper", "holder", "eager", "copier", "arcer")}
        doc = locks_json(fx.pid)
        eq(doc["deadlocks"], [])
        eq(len(doc["locks"]), 2)
        y = [lk for lk in doc["locks"] if len(lk["waiters"]) == 3][0]
        x = [lk for lk in doc["locks"] if len(lk["waiters"]) == 1][0]
        eq(y["waiters"], sorted([tid["eager"], tid["copier"], tid["arcer"]]))
        eq((y["owner"], y["owner_evidence"]), (tid["holder"], "stack"))
        eq(y["candidates"], [])
        eq(x["waiters"], [tid["holder"]])
        # keeper holds X; eager and copier only keep its address: one of
        # three, nobody named. The Arc and the data pointer are not X.
        eq(x["owner"], None)
        eq(sorted(c["tid"] for c in x["candidates"]),
           sorted([tid["keeper"], tid["eager"], tid["copier"]]))
        eq([c["certain"] for c in x["candidates"]], [False] * 3)
        threads = dump_json(fx.pid)
        eq(threads[tid["arcer"]]["holds"], [])
        eq(threads[tid["holder"]]["wait"]["owner"], None)
        for n in ("keeper", "eager", "copier"):
            h = threads[tid[n]]["holds"]
            eq([(e["address"], e["candidates"]) for e in h], [(x["address"], 3)])
        text = locks_text(fx.pid)
        contains(text, "may be held by one of 3 threads")
        contains(text, "No deadlock found.")
        t = dump_text(fx.pid)
        eq(holds_under(frame_block(t, tid["keeper"]), "fx_rustinfer::keep"),
           ["- may hold (inferred, one of 3 candidates) rust-mutex %s" % x["address"]])


# ---- C++ and glibc ----

def test_cxx_lock_guard_abba():
    with start("fx-cxxinfer", "abba", parked=2) as fx:
        left, right = fx.tid("left"), fx.tid("right")
        doc = locks_json(fx.pid, rc=3)
        cyc = doc["deadlocks"][0]
        eq([(e["tid"], e["owner"], e["owner_evidence"]) for e in cyc],
           [(left, right, "memory"), (right, left, "memory")])
        threads = dump_json(fx.pid, rc=3)
        for e in cyc:
            eq(frame_fn(threads, e["owner"], e["owner_frame"]), "transfer")
        for t in (left, right):
            h = threads[t]["holds"]
            eq(len(h), 1, repr(h))
            eq((h[0]["kind"], h[0]["owner_evidence"]), ("mutex", "memory"))
            eq(frame_fn(threads, t, h[0]["frame"]), "transfer")
        text = dump_text(fx.pid, rc=3)
        held_by_left = [e["address"] for e in cyc if e["owner"] == left][0]
        eq(holds_under(frame_block(text, left), "transfer"),
           ["- holds mutex %s" % held_by_left])


def readers_case(mode, function):
    with start("fx-cxxinfer", mode, parked=1) as fx:
        writer = fx.tid("writer")
        readers = sorted([fx.tid("reader-1"), fx.tid("reader-2")])
        doc = locks_json(fx.pid)
        eq(len(doc["locks"]), 1)
        lk = doc["locks"][0]
        eq((lk["kind"], lk["owner"], lk["waiters"]), ("rwlock", None, [writer]))
        contains(lk["note"], "held for reading by 2 threads")
        eq(sorted(c["tid"] for c in lk["candidates"]), readers)
        threads = dump_json(fx.pid)
        for c in lk["candidates"]:
            eq(frame_fn(threads, c["tid"], c["frame"]), function)
            eq([(h["mode"], h["candidates"]) for h in threads[c["tid"]]["holds"]],
               [("read", 1)])
        text = dump_text(fx.pid)
        eq(holds_under(frame_block(text, readers[0]), function),
           ["- holds (inferred) rwlock %s for reading" % lk["address"]])


def test_glibc_rwlock_readers():
    readers_case("rwreaders", "read_hold")


def test_shared_mutex_readers():
    readers_case("shared", "shared_hold")


# ---- what did not change ----

def test_recorded_owner_without_reference():
    # fx-deadlock locks globals: the holders keep no pointer to them. The
    # view is as before; the hold is listed after the stack.
    with start("fx-deadlock", 2, parked=2) as fx:
        c1, c2 = fx.tid("cycle-1"), fx.tid("cycle-2")
        doc = locks_json(fx.pid, rc=3)
        eq([(e["tid"], e["owner"], e["owner_evidence"], e["owner_frame"])
            for e in doc["deadlocks"][0]],
           [(c1, c2, "memory", None), (c2, c1, "memory", None)])
        for lk in doc["locks"]:
            eq(lk["candidates"], [])
        text = dump_text(fx.pid, rc=3)
        contains(frame_block(text, c1),
                 "- holds mutex %s <g_lock_a> (no frame holds a reference to it)"
                 % [lk["address"] for lk in doc["locks"] if lk["symbol"] == "g_lock_a"][0])


def test_static_rust_lock_stays_unknown():
    # A static Mutex's address is a constant the compiler rebuilds: no
    # reference stays behind, and no holder is guessed.
    need("fx-rustlock")
    with start("fx-rustlock", 2, 2, parked=4) as fx:
        doc = locks_json(fx.pid)
        for lk in doc["locks"]:
            eq((lk["owner"], lk["candidates"]), (None, []), repr(lk))


def test_saved_snapshot_keeps_inference():
    need("fx-rustinfer")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "abba.sd")
        with start("fx-rustinfer", "abba", parked=2) as fx:
            left, right = fx.tid("left"), fx.tid("right")
            r = sdtest.run("-c", "locks; save %s" % path, fx.pid)
            eq(r.rc, 0, r.err)  # the exit code of the last command, save
        r = sdtest.run("-c", "load %s; locks --format json" % path)
        eq(r.rc, 3, r.err)
        doc = json.loads(r.out[r.out.index("{"):])
        eq([(e["tid"], e["owner"], e["owner_evidence"]) for e in doc["deadlocks"][0]],
           [(left, right, "stack"), (right, left, "stack")])
        r = sdtest.run("-c", "load %s; dump" % path)
        eq(r.rc, 3, r.err)  # the dump of a deadlock says so, as locks does
        contains(r.out, "- holds (inferred) rust-mutex ")


if __name__ == "__main__":
    sdtest.main(globals())
