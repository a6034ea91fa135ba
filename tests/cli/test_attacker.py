# SPDX-License-Identifier: MIT
# A root stackdump against an unprivileged local attacker (user nobody, as
# setpriv makes it): every trap the attacker can plant where stackdump
# writes (a symbolic link to a root file, a FIFO, a file of theirs, a
# folder of theirs) is refused with a message, in a folder the attacker
# owns and in a sticky folder both; every file the target can plant where
# stackdump reads (perf map, debuglink file, DWARF package; a FIFO, a link
# to a device, a huge file, another owner's file, a compressed section
# claiming a huge size) is passed over without blocking and with bounded
# memory. Root files used as decoys keep their checksum and inode. Each
# command has its own generous time limit: reaching it fails the test.
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sdtest  # noqa: E402
from fixture import path_of, start  # noqa: E402
from sdtest import contains, eq, ok  # noqa: E402

LIMIT = 120  # seconds any one command may take: far more than it needs
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def as_nobody(script, *args):
    subprocess.run(NOBODY + ["sh", "-c", script, "sh"] + [str(a) for a in args],
                   check=True, timeout=LIMIT)


def measured(*args, env=None):
    """Run stackdump; (Result, peak RSS in KiB). Fails past LIMIT."""
    e = dict(os.environ)
    e.pop("DEBUGINFOD_URLS", None)
    e["NO_COLOR"] = "1"
    if env:
        e.update(env)
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    p = subprocess.Popen([sdtest.binary()] + [str(a) for a in args], stdout=out, stderr=err,
                         stdin=subprocess.DEVNULL, env=e)
    deadline = time.monotonic() + LIMIT
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            p.kill()
            p.wait()
            raise AssertionError("stackdump %s did not finish in %d s (blocked?)"
                                 % (" ".join(str(a) for a in args), LIMIT))
        time.sleep(0.05)
    p.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    err.seek(0)
    r = sdtest.Result(p.returncode, out.read().decode("utf-8", "replace"),
                      err.read().decode("utf-8", "replace"))
    return r, ru.ru_maxrss


def run(*args, env=None):
    try:
        return sdtest.run(*args, timeout=LIMIT, env=env)
    except subprocess.TimeoutExpired:
        raise AssertionError("stackdump %s did not finish in %d s (blocked?)"
                             % (" ".join(str(a) for a in args), LIMIT))


class Decoys:
    """Root-owned files an attacker would like overwritten."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="sd-decoy-", dir="/root")
        self.files = []
        for i in range(2):
            p = os.path.join(self.dir, "precious-%d" % i)
            with open(p, "w") as f:
                f.write("root's own data %d\n" % i)
            self.files.append(p)
        self.before = self.state()

    def state(self):
        out = {}
        for p in self.files:
            st = os.lstat(p)
            with open(p, "rb") as f:
                out[p] = (st.st_ino, st.st_size, hashlib.sha256(f.read()).hexdigest())
        return out

    def check(self):
        eq(self.state(), self.before, "a root file changed")

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def trap_folders():
    """(name, folder): one the attacker owns (0777, not sticky), one sticky
    folder of root's that anyone writes into."""
    base = tempfile.mkdtemp(prefix="sd-att-")
    os.chmod(base, 0o755)
    theirs = os.path.join(base, "theirs")
    os.mkdir(theirs)
    os.chown(theirs, 65534, 65534)  # as if nobody had made it
    os.chmod(theirs, 0o777)
    sticky = os.path.join(base, "sticky")
    os.mkdir(sticky)
    os.chmod(sticky, 0o1777)
    return base, [("attacker-owned", os.path.join(base, "theirs")), ("sticky", sticky)]


def plant(kind, path, decoy):
    if kind == "symlink":
        as_nobody('ln -s "$2" "$1"', path, decoy)
    elif kind == "fifo":
        as_nobody('mkfifo "$1"', path)
    else:
        as_nobody('echo theirs > "$1"', path)


def trap_intact(kind, path):
    st = os.lstat(path)
    if kind == "symlink":
        ok(os.path.islink(path), "%s: the link was replaced" % path)
    elif kind == "fifo":
        ok(__import__("stat").S_ISFIFO(st.st_mode), "%s: the FIFO was replaced" % path)
    else:
        with open(path) as f:
            eq(f.read(), "theirs\n", "%s was written" % path)
    eq(st.st_uid, 65534)


def test_writers_refuse_planted_traps():
    """save, profile -o, report -o and diff -o: a link, a FIFO or the
    attacker's file at the name asked for, in either folder."""
    fx = start("fx-idle", blocked=1)
    dec = Decoys()
    base, folders = trap_folders()
    src = tempfile.mkdtemp(prefix="sd-att-src-")
    try:
        rec = os.path.join(src, "rec")
        r = run("record", "-o", rec, "--count", "1", "--every", "100ms", fx.pid)
        eq(r.rc, 0, r.err)
        a = os.path.join(src, "a.folded")
        with open(a, "w") as f:
            f.write("main;f 3\n")
        writers = {
            "save": lambda p: ("-c", "dump; save %s" % p, fx.pid),
            "profile": lambda p: ("profile", "-d", "300ms", "-o", p, fx.pid),
            "report": lambda p: ("report", rec, "-o", p),
            "diff": lambda p: ("diff", a, a, "-o", p),
        }
        for fname, folder in folders:
            for kind in ("symlink", "fifo", "file"):
                for w, argv in writers.items():
                    p = os.path.join(folder, "%s-%s.out" % (w, kind))
                    plant(kind, p, dec.files[0])
                    r = run(*argv(p))
                    ok(r.rc != 0, "%s into a planted %s in the %s folder succeeded: %r"
                       % (w, kind, fname, r))
                    contains(r.err, "refusing")
                    trap_intact(kind, p)
            # A new name in the attacker's folder is refused as well; in
            # the sticky folder it is created, 0600, root's.
            p = os.path.join(folder, "new.json")
            r = run("-c", "dump; save %s" % p, fx.pid)
            if fname == "sticky":
                eq(r.rc, 0, r.err)
                st = os.lstat(p)
                eq((st.st_uid, st.st_mode & 0o777), (0, 0o600))
            else:
                ok(r.rc != 0, r.err)
                contains(r.err, "belongs to user 65534")
        dec.check()
        # Write-through stays for stdout and character devices.
        r = run("-c", "dump; save /dev/null", fx.pid)
        eq(r.rc, 0, r.err)
        r = run("-c", "dump; save -", fx.pid)
        eq(r.rc, 0, r.err)
        contains(r.out, '"threads"')
    finally:
        fx.stop()
        dec.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(src, ignore_errors=True)


def test_record_folder_traps():
    """The recording folder: the attacker's own folder with a planted lock
    file link or manifest temporary, a folder of theirs inside a sticky
    one, a link where the folder should be, and a sticky folder itself."""
    fx = start("fx-idle", blocked=1)
    dec = Decoys()
    base, folders = trap_folders()
    try:
        theirs = folders[0][1]
        sticky = folders[1][1]
        cases = []
        as_nobody('mkdir -m 777 "$1/rec" && ln -s "$2" "$1/rec/.record.lock" && '
                  'ln -s "$3" "$1/rec/.manifest.json.tmp.1"', theirs, dec.files[0], dec.files[1])
        cases.append(os.path.join(theirs, "rec"))
        as_nobody('mkdir -m 777 "$1/rec"', sticky)
        cases.append(os.path.join(sticky, "rec"))
        as_nobody('ln -s "$2" "$1/reclink"', sticky, dec.dir)
        cases.append(os.path.join(sticky, "reclink"))
        cases.append(sticky)
        cases.append(os.path.join(theirs, "new", "rec"))
        for d in cases:
            r = run("record", "-o", d, "--count", "1", "--every", "100ms", fx.pid)
            eq(r.rc, 2, "record -o %s: %r" % (d, r))
            contains(r.err, "refusing")
        eq(os.listdir(dec.dir), ["precious-0", "precious-1"])
        dec.check()
        # A folder of root's own inside the sticky one works, and is private.
        d = os.path.join(sticky, "mine")
        r = run("record", "-o", d, "--count", "1", "--every", "100ms", fx.pid)
        eq(r.rc, 0, r.err)
        eq(os.stat(d).st_mode & 0o777, 0o700)
        for n in os.listdir(d):
            eq(os.stat(os.path.join(d, n)).st_mode & 0o777, 0o600, n)
    finally:
        fx.stop()
        dec.close()
        shutil.rmtree(base, ignore_errors=True)


def test_debug_cache_in_a_folder_of_theirs():
    """STACKDUMP_DEBUG_CACHE naming a folder the attacker owns: nothing is
    written into it, nothing read from it."""
    fx = start("fx-idle", blocked=1)
    base, folders = trap_folders()
    try:
        theirs = folders[0][1]
        r = run("--format", "json", fx.pid, env={"STACKDUMP_DEBUG_CACHE": theirs})
        eq(r.rc, 0, r.err)
        eq(os.listdir(theirs), [])
    finally:
        fx.stop()
        shutil.rmtree(base, ignore_errors=True)


def jit_as_nobody():
    return start("/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                 path_of("fx-jit"), blocked=2)


def test_perf_map_traps():
    """/tmp/perf-PID.map of a target running as nobody: a FIFO, a link to
    /dev/zero, a 100 GB sparse file and a file of another user are passed
    over (no block, no spin, memory bounded); the target's own map is
    read."""
    for kind in ("fifo", "zero", "huge", "owner", "good"):
        fx = jit_as_nobody()
        path = "/tmp/perf-%d.map" % fx.pid
        try:
            if kind == "fifo":
                as_nobody('mkfifo "$1"', path)
            elif kind == "zero":
                as_nobody('ln -s /dev/zero "$1"', path)
            elif kind == "huge":
                as_nobody('truncate -s 100G "$1"', path)
            else:
                with open("/proc/%d/maps" % fx.pid) as f:
                    stub = [ln for ln in f if ln.split()[1] == "r-xp" and len(ln.split()) == 5]
                start_addr = stub[0].split("-")[0] if stub else "0"
                with open(path, "w") as f:
                    f.write("%s 40 planted_by_%s\n" % (start_addr, kind))
                if kind == "owner":
                    os.chown(path, 1234, 1234)
                else:
                    os.chown(path, 65534, 65534)
            r, rss = measured("--format", "json", fx.pid)
            eq(r.rc, 0, "%s: %r" % (kind, r))
            ok(rss < 400 * 1024, "%s: stackdump peaked at %d KiB" % (kind, rss))
            if kind == "owner":
                ok("planted_by_owner" not in r.out, "another user's perf map was read")
            if kind == "good":
                contains(r.out, "planted_by_good")
        finally:
            fx.stop()
            if os.path.lexists(path):
                os.unlink(path)


def elf_section(data, name):
    """(header offset, sh_offset, sh_size) of section NAME of a 64-bit ELF."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", data, 0x3c)
    stroff = struct.unpack_from("<Q", data, shoff + shstrndx * 64 + 24)[0]
    for i in range(shnum):
        h = shoff + i * 64
        nm, = struct.unpack_from("<I", data, h)
        end = data.index(b"\0", stroff + nm)
        if data[stroff + nm:end] == name:
            off, size = struct.unpack_from("<QQ", data, h + 24)
            return h, off, size
    raise AssertionError("no section %r" % name)


def debuglinked(folder):
    """A copy of fx-idle in FOLDER whose debug info lives in the separate
    file FOLDER/fx-dl.debug (named by .gnu_debuglink); returns the binary
    and the real debug file made from it (compressed)."""
    objcopy = sdtest.tool("objcopy", "binutils")
    exe = os.path.join(folder, "fx-dl")
    linked = os.path.join(folder, "fx-dl.debug")
    dbg = os.path.join(folder, "real.debug")
    shutil.copy(path_of("fx-idle"), exe)
    for argv in (["--only-keep-debug", "--compress-debug-sections=zlib", exe, linked],
                 ["--strip-debug", "--add-gnu-debuglink=fx-dl.debug", exe]):
        subprocess.run([objcopy] + argv, check=True, cwd=folder, timeout=LIMIT)
    os.rename(linked, dbg)
    os.chmod(exe, 0o755)
    os.chmod(folder, 0o777)
    return exe, dbg


def test_debuglink_and_dwp_traps():
    """Where the target's .gnu_debuglink file and DWARF package are looked
    for (beside it, in a folder the attacker owns): a FIFO, a link to
    /dev/zero, a huge file, a debug file with a compressed section that
    claims 1 GiB. None blocks; memory stays bounded; the dump goes on."""
    folder = tempfile.mkdtemp(prefix="sd-att-dl-")
    try:
        exe, dbg = debuglinked(folder)
        data = bytearray(open(dbg, "rb").read())
        h, off, size = elf_section(data, b".debug_info")
        eq(struct.unpack_from("<I", data, off)[0], 1, "not an ELFCOMPRESS_ZLIB section")
        struct.pack_into("<Q", data, off + 8, 1 << 30)  # ch_size: 1 GiB
        bomb = os.path.join(folder, "bomb.debug")
        with open(bomb, "wb") as f:
            f.write(data)
        os.chmod(bomb, 0o644)
        for kind in ("fifo", "zero", "huge", "bomb", "dwp-fifo", "dwp-zero"):
            for n in ("fx-dl.debug", "fx-dl.dwp", ".debug"):
                p = os.path.join(folder, n)
                if os.path.lexists(p):
                    subprocess.run(["rm", "-rf", p], check=True)
            link = os.path.join(folder, "fx-dl.dwp" if kind.startswith("dwp") else "fx-dl.debug")
            if kind.endswith("fifo"):
                as_nobody('mkfifo "$1"', link)
            elif kind.endswith("zero"):
                as_nobody('ln -s /dev/zero "$1"', link)
            elif kind == "huge":
                as_nobody('truncate -s 200G "$1"', link)
            else:
                as_nobody('cp "$2" "$1"', link, bomb)
            fx = start("/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup",
                       "--clear-groups", exe, blocked=1)
            try:
                r, rss = measured("--format", "json", fx.pid)
                eq(r.rc, 0, "%s: %r" % (kind, r))
                ok(rss < 400 * 1024, "%s: stackdump peaked at %d KiB" % (kind, rss))
                contains(r.out, '"threads"')
                r, rss = measured("locks", fx.pid)
                ok(r.rc in (0, 1), "%s: %r" % (kind, r))
            finally:
                fx.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_debuginfod_only_for_1():
    fx = start("fx-idle", blocked=1)
    try:
        for v in ("0", "no", ""):
            r = run("dump", "-v", fx.pid, env={"STACKDUMP_DEBUGINFOD": v,
                                               "DEBUGINFOD_URLS": "http://127.0.0.1:9/"})
            eq(r.rc, 0, r.err)
            contains(r.err, "debuginfod stays off")
        r = run("dump", "-v", fx.pid, env={"STACKDUMP_DEBUGINFOD": "1"})
        ok("debuginfod stays off" not in r.err, r.err)
    finally:
        fx.stop()


if __name__ == "__main__":
    sdtest.main(globals(), tools=(("setpriv", "util-linux"), ("objcopy", "binutils")))
