# SPDX-License-Identifier: MIT
# Lock analysis without libc debug info: stackdump runs in a private mount
# namespace where an empty tmpfs hides /usr/lib/debug (libc6-dbg), so libc's
# internal frames do not resolve. Every lock fixture must give exactly the
# same lock view (kinds, owners, symbols, waiters, deadlocks) as with debug
# info: classification comes from the futex call and the lock memory.
# Needs root (a mount namespace) and libc6-dbg: without them it fails
# (skips only under STACKDUMP_TEST_UNPRIVILEGED=1, when root is missing).
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
from fixture import path_of, start  # noqa: E402
from sdtest import eq, ok  # noqa: E402

DEBUG_DIR = "/usr/lib/debug"
HIDE = 'mount -t tmpfs stackdump-test-nodebug %s && exec "$0" "$@"' % DEBUG_DIR


def run_hidden(*args):
    can_hide()
    env = dict(os.environ)
    env.pop("DEBUGINFOD_URLS", None)
    env["NO_COLOR"] = "1"
    p = subprocess.run(["unshare", "-m", "sh", "-c", HIDE, sdtest.binary()] +
                       [str(a) for a in args], capture_output=True, text=True, timeout=120,
                       env=env)
    return sdtest.Result(p.returncode, p.stdout, p.stderr)


def start_hidden(fixture, *args, **kw):
    """The fixture in a mount namespace of its own with /usr/lib/debug
    hidden too: debug files are looked for inside the target's root
    first, then in ours (README, Safety)."""
    can_hide()
    return start("/usr/bin/unshare", "-m", "sh", "-c", HIDE, path_of(fixture),
                 *[str(a) for a in args], **kw)


_hide_checked = []


def can_hide():
    """Fails unless the namespace trick can work here (checked once)."""
    if _hide_checked:
        return
    sdtest.need_root("hiding /usr/lib/debug in a mount namespace")
    ok(os.path.isdir(DEBUG_DIR) and os.listdir(DEBUG_DIR),
       "%s is empty: install libc6-dbg (.ci/deps does)" % DEBUG_DIR)
    p = subprocess.run(["unshare", "-m", "sh", "-c", HIDE, "true"], capture_output=True,
                       text=True, timeout=60)
    eq(p.returncode, 0, "cannot mount a tmpfs in a new mount namespace: %s" % p.stderr.strip())
    _hide_checked.append(True)


def functions(doc):
    return [f["function"] or "" for t in doc["threads"] for f in t["frames"]]


def view(doc):
    """The parts of a locks document that must not depend on debug info."""
    return {k: doc[k] for k in ("locks", "idle", "deadlocks")}


def same_view(fixture, *args, parked=0, blocked=0, rc=0):
    with start_hidden(fixture, *args, parked=parked, blocked=blocked) as fx:
        plain = sdtest.run("locks", "--format", "json", fx.pid)
        eq(plain.rc, rc, plain.err)
        hidden = run_hidden("locks", "--format", "json", fx.pid)
        eq(hidden.rc, rc, hidden.err)
        sdtest.assert_running(fx.pid)
        a, b = view(plain.json()), view(hidden.json())
        eq(b, a, "lock view differs without libc debug info")
        ok(a["locks"] or a["idle"], "nothing classified: %r" % a)
        # Thread waits in a dump agree too.
        d1 = sdtest.run("--format", "json", fx.pid)
        d2 = run_hidden("--format", "json", fx.pid)
        # The dump exits as the lock view does: 3 on a deadlock.
        eq(d1.rc, rc, d1.err)
        eq(d2.rc, rc, d2.err)
        w1 = {t["tid"]: t["wait"] for t in d1.json()["threads"]}
        w2 = {t["tid"]: t["wait"] for t in d2.json()["threads"]}
        eq(w2, w1)
        return a


def test_debug_info_is_really_hidden():
    with start_hidden("fx-mutex", "normal", 1, parked=1) as fx:
        plain = sdtest.run("--format", "json", fx.pid)
        hidden = run_hidden("--format", "json", fx.pid)
        eq((plain.rc, hidden.rc), (0, 0), plain.err + hidden.err)
        ok("__GI___lll_lock_wait" in functions(plain.json()),
           "libc6-dbg names missing even with debug info")
        ok("__GI___lll_lock_wait" not in functions(hidden.json()),
           "libc debug info was not hidden")


def test_mutex_kinds():
    for kind in ("normal", "recursive", "errorcheck", "adaptive", "robust", "pi", "timed",
                 "pshared", "orphan"):
        v = same_view("fx-mutex", kind, 2, parked=2)
        eq(v["locks"][0]["kind"], "mutex", kind)


def test_rwlocks():
    for mode, parked in (("writer-holds", 2), ("readers-hold", 1), ("writers", 2),
                         ("prefer-writer", 2)):
        v = same_view("fx-rwlock", mode, 2, parked=parked)
        eq(v["locks"][0]["kind"], "rwlock", mode)


def test_no_owner_waits():
    eq(same_view("fx-condpool", 3, parked=3)["idle"][0]["kind"], "condvar")
    eq(same_view("fx-sem", 2, parked=2)["locks"][0]["kind"], "semaphore")
    eq(same_view("fx-join", parked=1)["locks"][0]["kind"], "join")


def test_deadlocks():
    for n in (1, 2, 3):
        v = same_view("fx-deadlock", n, parked=n, rc=3)
        eq(len(v["deadlocks"]), 1)
        eq(len(v["deadlocks"][0]), n)


def test_cxx_and_rust():
    v = same_view("fx-cxxlocks", 2, 2, parked=5)
    eq(len(v["locks"]), 3)
    # Each view is checked equal with and without debug info; the kinds
    # are the fixture's once it has settled (seen once in CI without the
    # readers parked on the RwLock yet: a fresh fixture, up to 3 times).
    for _ in range(3):
        v = same_view("fx-rustlock", 2, 2, parked=4)
        kinds = sorted(lk["kind"] for lk in v["locks"])
        if kinds == ["rust-mutex", "rust-rwlock"]:
            break
    eq(kinds, ["rust-mutex", "rust-rwlock"])


if __name__ == "__main__":
    sdtest.main(globals(), tools=[("unshare", "util-linux")])
