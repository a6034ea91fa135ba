// SPDX-License-Identifier: MIT
// Targets: one process across snapshots, its address space and modules,
// its unwinder and symbolizer. The snapshot itself is target-snapshot.c.
#include "target.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "analyze.h"
#include "capture.h"
#include "core.h"
#include "goroutines.h"
#include "tokio.h"
#include "ptrace.h"
#include "saferead.h"
#include "symbols.h"
#include "snapctx.h"
#include "unwind.h"

void snap_opts_init(struct sd_snap_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_frames = 256;
	o->max_stack = 1u << 20;
	o->max_stack_total = (size_t)256 << 20;
	o->timeout_ms = 2000;
}

struct sd_target *target_new(pid_t pid, struct sd_error *err)
{
	if (pid <= 0) {
		sd_error_set(err, EINVAL, "invalid process id: %d", (int)pid);
		return NULL;
	}
	if (pid == getpid()) {
		sd_error_set(err, EINVAL, "cannot attach to %d: that is stackdump itself", (int)pid);
		return NULL;
	}
	struct sd_target *t = sd_xcalloc(1, sizeof(*t));
	t->pid = pid;
	t->space.pid = pid;
	if (procfs_procinfo(pid, &t->info, err) < 0) {
		free(t);
		return NULL;
	}
	/* A TID that is not a thread group leader names a thread, not a
	 * process: use its process. */
	char path[64], *text;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (sd_read_file(path, &text, 1 << 16) >= 0) {
		const char *p = strstr(text, "Tgid:");
		long tgid = p ? strtol(p + 5, NULL, 10) : pid;
		free(text);
		if (tgid > 0 && tgid != pid) {
			sd_error_set(err, EINVAL,
				     "%d is a thread of process %ld, not a process (use %ld, "
				     "with --tid %d to pick the thread)",
				     (int)pid, tgid, tgid, (int)pid);
			goto fail;
		}
	}
	if (t->info.kernel_thread) {
		sd_error_set(err, EINVAL,
			     "cannot attach to %d \"%s\": it is a kernel thread (it has no user "
			     "stack; see /proc/%d/stack)",
			     (int)pid, t->info.comm, (int)pid);
		goto fail;
	}
	if (t->info.state == 'Z' || t->info.state == 'X') {
		sd_error_set(err, ESRCH,
			     "cannot attach to %d \"%s\": it is a zombie (it exited; its parent "
			     "%d has not reaped it)",
			     (int)pid, t->info.comm, (int)t->info.ppid);
		goto fail;
	}
	if (t->info.tracer > 0 && t->info.tracer != getpid()) {
		sd_error_set(err, EBUSY,
			     "cannot attach to %d: already traced by %d \"%s\" (detach that "
			     "debugger first)",
			     (int)pid, (int)t->info.tracer, t->info.tracer_comm);
		goto fail;
	}
	/* Reading the memory map needs the same permission as ptrace: fail
	 * early with the explanation rather than with a bare EACCES. */
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	int mfd = open(path, O_RDONLY | O_CLOEXEC);
	if (mfd < 0 && (errno == EACCES || errno == EPERM)) {
		ptrace_explain_seize(pid, EPERM, err);
		goto fail;
	}
	if (mfd >= 0)
		close(mfd);
	t->unw = unwind_new(&t->space);
	t->sym = symbols_new(&t->space);
	return t;
fail:
	procfs_procinfo_release(&t->info);
	free(t);
	return NULL;
}

static void mods_array_free(struct sd_tmod *mods, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		elfcache_put(mods[i].elf);
		free(mods[i].path);
		free(mods[i].name_buf);
	}
	free(mods);
}

static void mods_release(struct sd_target *t)
{
	mods_array_free(t->space.mods, t->space.nmods);
	t->space.mods = NULL;
	t->space.nmods = 0;
}


void target_free(struct sd_target *t)
{
	if (!t)
		return;
	symbols_free(t->sym);
	unwind_free(t->unw);
	mods_release(t);
	core_free(t->core);
	free(t->sysroot);
	free(t->core_notes);
	procfs_maps_release(&t->space.maps);
	procfs_procinfo_release(&t->info);
	free(t->names);
	target_release_files(t);
	free(t->reuse);
	free(t->reuse_spare);
	free(t->plans);
	strpool_free(t->reuse_pool);
	free(t->last_tids);
	goruntime_free(t->goruntime);
	tokioruntime_free(t->tokioruntime);
	if (t->spare_arena)
		munmap(t->spare_arena, t->spare_arena_size);
	free(t);
}

void target_release_files(struct sd_target *t)
{
	if (!t)
		return;
	procfs_taskcache_free(t->taskcache);
	t->taskcache = NULL;
	/* Entries reused from now on would be judged by counters of closed
	 * rings: start over. */
	reuse_clear(t);
}

int target_alive(const struct sd_target *t)
{
	if (t->core)
		return 1; /* a core does not go away */
	struct sd_procinfo pi;
	if (procfs_procinfo(t->pid, &pi, NULL) < 0)
		return 0;
	procfs_procinfo_release(&pi);
	return pi.state != 'Z' && pi.state != 'X';
}

static const char *basename_of(const char *p)
{
	const char *b = strrchr(p, '/');
	return b ? b + 1 : p;
}

/* An O_PATH descriptor of PATH resolved inside the target's root: absolute
 * symlinks and ".." stay in the target's root (RESOLVE_IN_ROOT), where a
 * plain open of /proc/PID/root/PATH would follow them into ours. Returns
 * the descriptor or -errno (-ENOSYS before Linux 5.6). */
static int open_in_root(pid_t pid, const char *path)
{
	return saferead_path(pid, path);
}

/* Turn the O_PATH descriptor OPATH (closed here) into an image, if it is a
 * regular file, and, when WANT is given, the very file mapping WANT maps
 * (device and inode). Nothing but a regular file is ever opened for
 * reading: no FIFO to block on, no device to wake. NAME names the image. */
static struct sd_elf *open_checked(int opath, const struct sd_map *want, const char *name,
				   struct sd_error *err)
{
	struct stat st;
	if (fstat(opath, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(opath);
		sd_error_set(err, EINVAL, "%s is not a regular file", name);
		return NULL;
	}
	if (want && (st.st_ino != want->inode || major(st.st_dev) != want->dev_major ||
		     minor(st.st_dev) != want->dev_minor)) {
		close(opath);
		sd_error_set(err, ESTALE, "%s is not the file mapped", name);
		return NULL;
	}
	int fd = saferead_reopen(opath, saferead_cap("STACKDUMP_MAX_DEBUG_FILE", SAFEREAD_DEBUG_CAP),
				 (uid_t)-1, NULL, name, err);
	if (fd < 0)
		return NULL;
	return elfcache_open_fd(fd, name, err);
}

/* Open the file behind mapping M: by its path inside the target's root
 * (its own mount namespace; the path also lets libdw find separate debug
 * info next to it), if that path still names the mapped file, else through
 * /proc/PID/map_files (deleted or replaced files, paths the maps escape). */
static struct sd_elf *open_mapped(struct sd_target *t, const struct sd_map *m,
				  const char **why)
{
	char name[64];
	struct sd_error err = {0};
	size_t plen = strlen(m->path);
	int deleted = plen > 10 && !strcmp(m->path + plen - 10, " (deleted)");
	struct sd_elf *e = NULL;
	if (!deleted) {
		int fd = open_in_root(t->pid, m->path);
		if (fd >= 0) {
			size_t n = strlen(m->path) + 32;
			char *path = sd_xmalloc(n);
			snprintf(path, n, "/proc/%d/root%s", (int)t->pid, m->path);
			e = open_checked(fd, m, path, &err);
			free(path);
		}
	}
	if (!e) {
		snprintf(name, sizeof(name), "/proc/%d/map_files/%llx-%llx", (int)t->pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);
		int fd = open(name, O_PATH | O_CLOEXEC);
		if (fd >= 0)
			e = open_checked(fd, NULL, name, &err);
		else if (deleted)
			sd_error_set(&err, errno, "cannot open %s: %s", name, sd_strerror(errno));
	}
	if (!e)
		*why = err.msg[0] ? "cannot open file" : "not found";
	return e;
}

static uint64_t compute_bias(const struct sd_elf *e, const struct sd_map *m)
{
	for (int i = 0; i < e->nloads; i++) {
		const struct sd_load *l = &e->loads[i];
		uint64_t pstart = l->offset & ~0xfffull;
		if (m->offset >= pstart && m->offset < l->offset + (l->filesz ? l->filesz : 1))
			return m->start - l->vaddr - m->offset + l->offset;
	}
	return m->start - (e->loads[0].vaddr & ~0xfffull);
}

/* A module's extent is what its load segments cover at its bias, not the
 * span of every mapping of its file: a runtime that maps its own binary a
 * second time (node moves its text to huge pages) would otherwise claim
 * everything in between, its JIT code included. */
static void range_from_loads(struct sd_tmod *mod)
{
	const struct sd_elf *e = mod->elf;
	uint64_t lo = UINT64_MAX, hi = 0, tlo = UINT64_MAX, thi = 0;
	for (int i = 0; i < e->nloads; i++) {
		const struct sd_load *l = &e->loads[i];
		uint64_t s = (l->vaddr + mod->bias) & ~0xfffull;
		uint64_t end = (l->vaddr + l->memsz + mod->bias + 0xfff) & ~0xfffull;
		if (end <= s)
			continue;
		lo = s < lo ? s : lo;
		hi = end > hi ? end : hi;
		if (l->flags & PF_X) {
			tlo = s < tlo ? s : tlo;
			thi = end > thi ? end : thi;
		}
	}
	if (lo < hi) {
		mod->start = lo;
		mod->end = hi;
	}
	if (tlo < thi) {
		mod->text_start = tlo;
		mod->text_end = thi;
	}
}

static int cmp_mod(const void *a, const void *b)
{
	const struct sd_tmod *x = a, *y = b;
	return (x->start > y->start) - (x->start < y->start);
}

static void build_modules(struct sd_target *t)
{
	/* The old modules are released only once the new ones hold their
	 * files: an ELF still mapped keeps its cache entry, so a module that
	 * did not change keeps the very sd_elf the symbolizer's libdwfl
	 * session points at (freeing and reopening it would leave libdwfl a
	 * dangling pointer for the modules it keeps across a refresh). */
	struct sd_tmod *old = t->space.mods;
	size_t nold = t->space.nmods;
	t->space.mods = NULL;
	t->space.nmods = 0;
	size_t cap = 0;
	for (size_t i = 0; i < t->space.maps.n; i++) {
		const struct sd_map *m = &t->space.maps.v[i];
		int vdso = !strcmp(m->path, "[vdso]");
		if (!vdso && (m->path[0] != '/' || m->perms[2] != 'x'))
			continue;
		/* One module per file: skip if already made. */
		struct sd_tmod *mod = NULL;
		for (size_t k = 0; k < t->space.nmods; k++)
			if (!strcmp(t->space.mods[k].path, m->path) && !vdso)
				mod = &t->space.mods[k];
		if (mod)
			continue;
		sd_grow(&t->space.mods, &cap, t->space.nmods + 1, sizeof(*t->space.mods));
		mod = &t->space.mods[t->space.nmods++];
		memset(mod, 0, sizeof(*mod));
		mod->path = sd_xstrdup(m->path);
		mod->name = basename_of(mod->path);
		size_t pl = strlen(mod->path);
		if (pl > 10 && !strcmp(mod->path + pl - 10, " (deleted)")) {
			/* name without the suffix; path keeps it */
			mod->name_buf = sd_xstrdup(mod->name);
			mod->name_buf[strlen(mod->name_buf) - 10] = '\0';
			mod->name = mod->name_buf;
		}
		mod->is_vdso = vdso;
		mod->start = m->start;
		mod->end = m->end;
		mod->text_start = m->start;
		mod->text_end = m->end;
		const struct sd_map *first = m;
		/* Every mapping of the same file widens the module. */
		for (size_t k = 0; k < t->space.maps.n && !vdso; k++) {
			const struct sd_map *o = &t->space.maps.v[k];
			if (strcmp(o->path, m->path) || o->inode != m->inode)
				continue;
			if (o->start < mod->start)
				mod->start = o->start;
			if (o->end > mod->end)
				mod->end = o->end;
			if (o->perms[2] == 'x') {
				if (o->start < mod->text_start)
					mod->text_start = o->start;
				if (o->end > mod->text_end)
					mod->text_end = o->end;
			}
			if (o->offset < first->offset ||
			    (o->offset == first->offset && o->start < first->start))
				first = o;
		}
		struct sd_tmod *same = NULL;
		for (size_t k = 0; k < nold && vdso && !same; k++)
			if (old[k].is_vdso && old[k].elf && old[k].start == m->start &&
			    old[k].end == m->end)
				same = &old[k];
		if (same) {
			/* The vdso of a process never changes: keep the image. */
			mod->elf = same->elf;
			same->elf = NULL;
		} else if (vdso) {
			size_t len = m->end - m->start;
			uint8_t *buf = sd_xmalloc(len);
			ssize_t n = t->core ? (ssize_t)core_read(t->core, m->start, buf, len)
					    : capture_read(t->pid, m->start, buf, len);
			if (n == (ssize_t)len)
				mod->elf = elfcache_from_memory("[vdso]", buf, len, NULL);
			free(buf);
		} else if (t->core) {
			char *why = NULL;
			mod->elf = core_open_module(t->core, t->sysroot, m->path, first->start, &why);
			if (!mod->elf)
				mod->open_err = "build-id not matched";
			if (why) {
				size_t have = t->core_notes ? strlen(t->core_notes) : 0;
				t->core_notes = sd_xrealloc(t->core_notes, have + strlen(why) + 2);
				sprintf(t->core_notes + have, "%s%s", have ? "\n" : "", why);
				free(why);
			}
		} else {
			mod->elf = open_mapped(t, first, &mod->open_err);
		}
		if (mod->elf)
			mod->bias = compute_bias(mod->elf, first);
		if (mod->elf && !vdso)
			range_from_loads(mod);
	}
	sd_sort(t->space.mods, t->space.nmods, sizeof(*t->space.mods), cmp_mod);
	mods_array_free(old, nold);
	t->space.generation = ++t->generation;
}

int target_refresh(struct sd_target *t, struct sd_error *err)
{
	if (t->core)
		return 0; /* its maps are the core's, read once */
	symbols_settle(t->sym); /* its reads use the modules about to change */
	t->maps_ns = sd_now_ns();
	char path[64], *text;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)t->pid);
	ssize_t n = sd_read_file(path, &text, 256u << 20);
	if (n < 0) {
		if (n == -ENOENT || n == -ESRCH)
			return sd_error_set(err, ESRCH, "process %d exited", (int)t->pid);
		return sd_error_set(err, (int)-n, "cannot read %s: %s", path, sd_strerror((int)-n));
	}
	uint64_t h = sd_hash(text, (size_t)n, 0);
	if (h == t->maps_hash && t->space.maps.n) {
		free(text);
		return 0;
	}
	procfs_maps_release(&t->space.maps);
	if (procfs_parse_maps(text, &t->space.maps) < 0) {
		free(text);
		return sd_error_set(err, EINVAL, "cannot parse %s", path);
	}
	free(text);
	t->maps_hash = h;
	build_modules(t);
	unwind_flush(t->unw);
	return 0;
}

struct sd_tmod *target_module_at(struct sd_target *t, uint64_t addr)
{
	return space_module_at(&t->space, addr);
}

const char *target_restarted(struct sd_target *t, uint64_t pc)
{
	if (!t || !t->sym || !pc)
		return NULL;
	/* A target that took no snapshot yet has not read its maps. */
	if (!t->space.maps.n && target_refresh(t, NULL) < 0)
		return NULL;
	/* One frame at the wrapper's return address, symbolized like any
	 * stack, then named by the same rule as a snapshot's threads. */
	struct sd_snapshot *s = snapshot_new(t->pid);
	struct sd_thread *th = snapshot_add_thread(s, t->pid);
	struct sd_frame *f = snapshot_add_frame(th);
	f->pc = pc;
	f->flags = SD_FRAME_EXACT;
	symbols_sync(t->sym);
	symbols_thread(t->sym, s, th, 1, 1);
	th->syscall_nr = SYS_restart_syscall;
	th->wait.kind = SD_WAIT_SYSCALL;
	const char *text = analyze_state_text(th);
	/* Only the static names of the table; anything else says nothing. */
	const char *plain = procfs_syscall_name(SYS_restart_syscall);
	const char *r = text && *text && (!plain || strcmp(text, plain)) ? text : NULL;
	snapshot_free(s);
	return r;
}

int target_is_core_file(const char *path)
{
	uint64_t size;
	int fd = core_safe_open(path, SD_CORE_MAX_MAPPED, &size, NULL);
	if (fd < 0)
		return 0;
	unsigned char h[18];
	ssize_t n = pread(fd, h, sizeof(h), 0);
	close(fd);
	if (n >= 6 && h[0] == 0xfd && !memcmp(h + 1, "7zXZ", 4))
		return 1;
	if (n >= 4 && h[0] == 0x28 && h[1] == 0xb5 && h[2] == 0x2f && h[3] == 0xfd)
		return 1;
	if (n >= 4 && h[0] == 0x04 && h[1] == 0x22 && h[2] == 0x4d && h[3] == 0x18)
		return 1; /* an LZ4 frame */
	return n >= 18 && !memcmp(h, ELFMAG, SELFMAG) && h[16] == ET_CORE && h[17] == 0;
}

/* The executable's path: the file mapped at the entry point. */
static const char *core_exe(const struct sd_core *c)
{
	uint64_t entry = core_auxv(c, AT_ENTRY);
	for (size_t i = 0; i < c->nfiles; i++)
		if (entry >= c->files[i].start && entry < c->files[i].end)
			return c->files[i].path;
	return c->nfiles ? c->files[0].path : NULL;
}

/* Memory of a core's process: what the core holds, else, for read-only
 * data a core leaves out (gcore dumps what is writable: the strings and
 * tables of .rodata are not there), the bytes of the module file mapped
 * there, as gdb reads them. Writable segments are never taken from the
 * file: their content then was the process's, not the file's. */
static ssize_t core_space_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	struct sd_target *t = arg;
	size_t got = core_read(t->core, addr, buf, len);
	while (got < len) {
		uint64_t a = addr + got;
		struct sd_tmod *m = space_module_at(&t->space, a);
		if (!m || !m->elf)
			break;
		const struct sd_load *l = elfcache_load_at(m->elf, a - m->bias);
		if (!l || (l->flags & PF_W))
			break;
		uint64_t end = l->vaddr + l->filesz, at = a - m->bias;
		size_t n = len - got;
		if (at >= end)
			break;
		if (n > end - at)
			n = (size_t)(end - at);
		if (elfcache_read(m->elf, at, (uint8_t *)buf + got, n) < 0)
			break;
		got += n;
	}
	return (ssize_t)got;
}

struct sd_target *target_open_core(const char *path, const char *sysroot, struct sd_error *err)
{
	struct sd_core *c = core_open(path, err);
	if (!c)
		return NULL;
	struct sd_target *t = sd_xcalloc(1, sizeof(*t));
	t->core = c;
	t->pid = c->pid;
	t->space.pid = 0; /* no /proc look-up may reach a host process */
	t->space.read_mem = core_space_read;
	t->space.read_arg = t;
	t->sysroot = sysroot && *sysroot ? sd_xstrdup(sysroot) : NULL;
	t->info.pid = c->pid;
	snprintf(t->info.comm, sizeof(t->info.comm), "%s", c->comm);
	t->info.state = 'S';
	t->info.nthreads = (long)c->nthreads;
	const char *exe = core_exe(c);
	t->info.exe = exe ? sd_xstrdup(exe) : NULL;
	core_maps(c, &t->space.maps);
	t->maps_ns = sd_now_ns();
	build_modules(t);
	t->unw = unwind_new(&t->space);
	t->sym = symbols_new(&t->space);
	return t;
}
