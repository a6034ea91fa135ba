// SPDX-License-Identifier: MIT
// Targets and the snapshot pipeline: discover, freeze, capture, thaw, then
// unwind, symbolize and analyze while the target runs again.
#include "target.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
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
#include "ptrace.h"
#include "symbols.h"
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

static void reuse_clear(struct sd_target *t);

void target_free(struct sd_target *t)
{
	if (!t)
		return;
	symbols_free(t->sym);
	unwind_free(t->unw);
	mods_release(t);
	procfs_maps_release(&t->space.maps);
	procfs_procinfo_release(&t->info);
	free(t->names);
	procfs_taskcache_free(t->taskcache);
	reuse_clear(t);
	free(t->reuse);
	strpool_free(t->reuse_pool);
	free(t->last_tids);
	if (t->spare_arena)
		munmap(t->spare_arena, t->spare_arena_size);
	free(t);
}

int target_alive(const struct sd_target *t)
{
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
	char root[64];
	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	int dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
	int en = errno;
	close(dfd);
	return fd < 0 ? -en : fd;
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
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", opath);
	int fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	int en = errno;
	close(opath);
	if (fd < 0) {
		sd_error_set(err, en, "cannot open %s: %s", name, sd_strerror(en));
		return NULL;
	}
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
			ssize_t n = capture_read(t->pid, m->start, buf, len);
			if (n == (ssize_t)len)
				mod->elf = elfcache_from_memory("[vdso]", buf, len, NULL);
			free(buf);
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

/* Thread selection for a snapshot. */
struct pick {
	const struct sd_snap_opts *o;
	pid_t pid;
};

static int thread_wanted(pid_t tid, void *arg)
{
	struct pick *p = arg;
	const struct sd_snap_opts *o = p->o;
	if (o->tids && o->ntids) {
		int found = 0;
		for (size_t i = 0; i < o->ntids; i++)
			found |= o->tids[i] == tid;
		if (!found)
			return 0;
	}
	if (o->name_glob) {
		char path[96], *text;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)p->pid, (int)tid);
		if (sd_read_file(path, &text, 256) < 0)
			return 0;
		text[strcspn(text, "\n")] = '\0';
		int ok = fnmatch(o->name_glob, text, 0) == 0;
		free(text);
		return ok;
	}
	return 1;
}

static struct sd_thread *find_thread(struct sd_snapshot *s, pid_t tid)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	return NULL;
}

/* After a --tid/--name selection: the names of lock owners that were not
 * selected, so that "held by 1547" can say who 1547 is. */
static void name_outside(struct sd_snapshot *s)
{
	size_t cap = 0;
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct sd_wait *w = &s->threads[i].wait;
		if (!w->owner_known || w->owner <= 0 || find_thread(s, w->owner))
			continue;
		int known = 0;
		for (size_t k = 0; k < s->noutside && !known; k++)
			known = s->outside[k].tid == w->owner;
		if (known)
			continue;
		char path[96], *text;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)s->pid, (int)w->owner);
		if (sd_read_file(path, &text, 256) < 0)
			continue; /* not a thread of this process, or gone */
		text[strcspn(text, "\n")] = '\0';
		sd_grow(&s->outside, &cap, s->noutside + 1, sizeof(*s->outside));
		s->outside[s->noutside].tid = w->owner;
		s->outside[s->noutside++].name = strpool_intern(s->pool, text);
		free(text);
	}
}

static int cmp_tname(const void *a, const void *b)
{
	pid_t x = ((const struct sd_tname *)a)->tid, y = ((const struct sd_tname *)b)->tid;
	return (x > y) - (x < y);
}

/* The name of thread TID from the cache, which is read again for every
 * thread once it is a second old, and for a thread it has not seen. */
static const char *cached_name(struct sd_target *t, struct procfs_taskcache *tc, int taskdir,
			       pid_t tid, uint64_t now)
{
	if (now - t->names_ns > 1000000000ull) {
		t->nnames = 0;
		t->names_ns = now;
	}
	struct sd_tname key = {.tid = tid};
	struct sd_tname *hit = t->nnames ? bsearch(&key, t->names, t->nnames, sizeof(key), cmp_tname)
					 : NULL;
	if (hit)
		return hit->comm;
	char text[64];
	if (procfs_task_comm(tc, taskdir, t->pid, tid, text, sizeof(text)) < 0)
		return NULL;
	sd_grow(&t->names, &t->names_cap, t->nnames + 1, sizeof(*t->names));
	struct sd_tname *e = &t->names[t->nnames++];
	e->tid = tid;
	snprintf(e->comm, sizeof(e->comm), "%.15s", text);
	/* Discover asks in rising TID order: only a TID that wrapped around
	 * lands out of order. */
	if (t->nnames > 1 && e[-1].tid > tid) {
		sd_sort(t->names, t->nnames, sizeof(*t->names), cmp_tname);
		e = bsearch(&key, t->names, t->nnames, sizeof(key), cmp_tname);
	}
	return e->comm;
}

/* light_discover 2: the state from the registers read while frozen. */
static void state_from_regs(struct sd_thread *th)
{
	if (th->state || !th->have_regs)
		return;
	int blocked = analyze_in_syscall(th);
	th->state = blocked ? 'S' : 'R';
	th->running = !blocked;
	th->syscall_known = 1;
	th->syscall_nr = -1;
}

static void fill_taskinfo(struct sd_snapshot *s, struct sd_thread *th, const struct sd_taskinfo *ti)
{
	th->name = strpool_intern(s->pool, ti->comm);
	th->state = ti->state;
	th->wchan = ti->wchan[0] ? strpool_intern(s->pool, ti->wchan) : NULL;
	th->syscall_known = ti->syscall_known;
	th->running = ti->running;
	th->syscall_nr = ti->syscall_nr;
	memcpy(th->syscall_args, ti->syscall_args, sizeof(th->syscall_args));
	th->vol_ctxsw = ti->vol_ctxsw;
	th->proc_sp = ti->sp;
	th->nonvol_ctxsw = ti->nonvol_ctxsw;
	th->utime = ti->utime;
	th->stime = ti->stime;
}

/* Registers are the truth while frozen: take the syscall from them. */
static void syscall_from_regs(struct sd_thread *th)
{
	if (!th->have_regs)
		return;
	long nr = (long)th->regs.orig_rax;
	if (nr >= 0 && !th->running) {
		th->syscall_nr = nr;
		th->syscall_args[0] = th->regs.rdi;
		th->syscall_args[1] = th->regs.rsi;
		th->syscall_args[2] = th->regs.rdx;
		th->syscall_args[3] = th->regs.r10;
		th->syscall_args[4] = th->regs.r8;
		th->syscall_args[5] = th->regs.r9;
		th->syscall_known = 1;
	}
}

static void mark_failed(struct sd_snapshot *s, struct sd_thread *th, enum sd_thread_status st,
			const char *why)
{
	th->status = st;
	th->error = strpool_intern(s->pool, why);
	s->partial = 1;
}

static void add_modules(struct sd_snapshot *s, struct sd_target *t)
{
	s->modules = sd_xcalloc(t->space.nmods ? t->space.nmods : 1, sizeof(*s->modules));
	for (size_t i = 0; i < t->space.nmods; i++) {
		struct sd_tmod *m = &t->space.mods[i];
		struct sd_module *sm = &s->modules[s->nmodules++];
		sm->name = strpool_intern(s->pool, m->name);
		sm->path = strpool_intern(s->pool, m->path);
		sm->build_id = m->elf && m->elf->build_id[0] ? strpool_intern(s->pool, m->elf->build_id)
							     : NULL;
		sm->start = m->start;
		sm->end = m->end;
		sm->bias = m->bias;
	}
}

/* The snapshot as a sequence of stages with narrow inputs:
 *
 *   process   the process state, maps, a fresh snapshot
 *   discover  threads, names, states; each thread's scheduler counters
 *             and its syscall file: which ones sleep in the kernel
 *   plan      each thread gets a capture kind (freeze, asleep, reuse)
 *   asleep    registers from /proc, stacks and lock words copied, no stop
 *   freeze    only the threads that run: SEIZE+INTERRUPT, registers,
 *             one batched copy, release (the pause)
 *   validate  the sleepers' counters read again: one that ran in between
 *             is frozen and read again (retried)
 *   unwind    offline; a thread whose unwind needs a register /proc does
 *             not give is stopped once for its registers (regstop)
 *   symbolize, analyze, and the reuse cache for the next sample
 *
 * The capture stages (discover's counters to validate) are the capture
 * seam: another engine fills the same sd_thread fields (registers, stack
 * window, lock words, kind) and the offline stages do not know which did. */

/* What is kept of a thread read asleep, for the next sample. */
struct sd_reuse {
	pid_t tid;
	struct sd_counters c; /* read after the snapshot that captured it */
	struct user_regs_struct regs;
	int regs_partial;
	char state;
	int syscall_known;
	long syscall_nr;
	uint64_t syscall_args[6];
	struct sd_frame *frames; /* strings in the target's reuse pool */
	size_t nframes;
	const char *unwind_stop;
	struct sd_lockmem *lockmem;
	size_t nlockmem;
};

enum plan { PLAN_FREEZE = 0, PLAN_ASLEEP, PLAN_REUSE, PLAN_KERNEL };

/* Working state of one thread, parallel to s->threads by index. */
struct tplan {
	enum plan plan;
	int have_c1;          /* c1 read (and, after validate, confirmed) */
	struct sd_counters c1;
	struct sd_taskinfo sc; /* the syscall file: SP, PC, syscall */
	struct sd_reuse *prev; /* PLAN_REUSE: the last sample's thread */
	int copy_now;          /* copy its memory while this freeze holds it */
	int late;              /* seized but did not stop within the budget */
	int round;             /* read asleep by the late stage of this round */
	int reunwound;         /* unwound again after a stop for registers */
};

enum stage { STAGE_MAIN, STAGE_RETRY, STAGE_REGS };

struct snapctx {
	struct sd_target *t;
	const struct sd_snap_opts *o;
	struct sd_snapshot *s;
	struct tplan *p;
	size_t pcap;
	int taskdir;
	struct procfs_taskcache *tc;
	int auto_mode, no_schedstat;
	struct pick pick;
	enum stage stage;
	const pid_t *only; /* a retry or regstop freeze: only these (sorted) */
	size_t nonly;
	size_t nsorted;    /* threads [0, nsorted) are in rising TID order */
	int round;         /* 0: the main capture, 1: the retry */
};

static int cmp_tid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

static void note_capture(struct snapctx *cx, const char *why)
{
	if (!cx->s->capture_note)
		cx->s->capture_note = strpool_intern(cx->s->pool, why);
}

static struct sd_thread *add_thread(struct snapctx *cx, pid_t tid)
{
	struct sd_thread *th = snapshot_add_thread(cx->s, tid);
	if (cx->s->nthreads > cx->pcap) {
		size_t old = cx->pcap;
		sd_grow(&cx->p, &cx->pcap, cx->s->nthreads, sizeof(*cx->p));
		memset(cx->p + old, 0, (cx->pcap - old) * sizeof(*cx->p));
	}
	return th;
}

static size_t thread_index(struct snapctx *cx, pid_t tid, int add)
{
	struct sd_snapshot *s = cx->s;
	/* Discover adds threads in rising TID order; the few that appear
	 * during the freeze come after them. */
	size_t lo = 0, hi = cx->nsorted < s->nthreads ? cx->nsorted : s->nthreads;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->threads[mid].tid < tid)
			lo = mid + 1;
		else if (s->threads[mid].tid > tid)
			hi = mid;
		else
			return mid;
	}
	for (size_t i = cx->nsorted; i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return i;
	if (!add)
		return (size_t)-1;
	add_thread(cx, tid); /* appeared during the freeze */
	return s->nthreads - 1;
}

static int counters_same(const struct sd_counters *a, const struct sd_counters *b)
{
	return a->from_status == b->from_status && a->switches == b->switches &&
	       a->ran_ns == b->ran_ns;
}

static int cmp_reuse(const void *a, const void *b)
{
	pid_t x = ((const struct sd_reuse *)a)->tid, y = ((const struct sd_reuse *)b)->tid;
	return (x > y) - (x < y);
}

static struct sd_reuse *reuse_find(struct sd_target *t, pid_t tid)
{
	struct sd_reuse key = {.tid = tid};
	return t->nreuse ? bsearch(&key, t->reuse, t->nreuse, sizeof(key), cmp_reuse) : NULL;
}

static void reuse_entry_free(struct sd_reuse *r)
{
	free(r->frames);
	free(r->lockmem);
}

static void reuse_clear(struct sd_target *t)
{
	for (size_t i = 0; i < t->nreuse; i++)
		reuse_entry_free(&t->reuse[i]);
	t->nreuse = 0;
}

/* The kernel stack of a thread, one line of function names, or "". */
static void kernel_stack(pid_t pid, pid_t tid, char *out, size_t size)
{
	char path[96], *text;
	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stack", (int)pid, (int)tid);
	if (sd_read_file(path, &text, 1 << 16) < 0)
		return;
	size_t len = 0;
	for (char *line = strtok(text, "\n"); line && len + 2 < size; line = strtok(NULL, "\n")) {
		char *fn = strchr(line, ' ');
		fn = fn ? fn + 1 : line;
		char *plus = strchr(fn, '+');
		if (plus)
			*plus = '\0';
		int n = snprintf(out + len, size - len, "%s%s", len ? " < " : "", fn);
		if (n < 0 || (size_t)n >= size - len)
			break;
		len += (size_t)n;
	}
	free(text);
}

/* discover + plan of one thread (auto mode): its counters first, then
 * its syscall file, which the kernel fills only for a thread off CPU in
 * a sleep. Counters equal before that reading and after the copy prove
 * it stayed off CPU from the reading on (see validate). */
static void plan_thread(struct snapctx *cx, size_t i)
{
	struct sd_target *t = cx->t;
	struct sd_thread *th = &cx->s->threads[i];
	struct tplan *tp = &cx->p[i];
	tp->plan = PLAN_FREEZE;
	if (cx->o->reuse) {
		/* Read at the end of the last sample and equal then: not read
		 * again now. Validate's one reading after the freeze tells
		 * whether it ran since; if it did, it is frozen and read. */
		struct sd_reuse *prev = reuse_find(t, th->tid);
		if (prev) {
			tp->plan = PLAN_REUSE;
			tp->prev = prev;
			tp->c1 = prev->c;
			tp->have_c1 = 1;
			return;
		}
	}
	int r = procfs_task_counters(cx->tc, cx->taskdir, t->pid, th->tid, cx->no_schedstat,
				     &tp->c1);
	if (r < 0) {
		if (r != -ESRCH && r != -ENOENT)
			note_capture(cx, "scheduler counters unreadable: every thread frozen");
		return;
	}
	tp->have_c1 = 1;
	r = procfs_task_syscall(cx->tc, cx->taskdir, t->pid, th->tid, &tp->sc);
	if (r < 0 || !tp->sc.syscall_known) {
		if (r == -ESRCH || r == -ENOENT)
			return;
		note_capture(cx, "/proc/PID/task/TID/syscall unreadable: threads frozen");
		struct sd_taskinfo st;
		char state = th->state;
		if (!state && procfs_task_state(cx->tc, cx->taskdir, t->pid, th->tid, &st) == 0)
			state = st.state;
		/* Never interrupt a thread in D: it would keep the others
		 * stopped until it wakes. Shown from the kernel's side. */
		if (state == 'D')
			tp->plan = PLAN_KERNEL;
		return;
	}
	if (tp->sc.running || !tp->sc.sp || !tp->sc.pc)
		return;
	tp->plan = PLAN_ASLEEP;
}

/* The threads not to seize: planned otherwise, and the user's selection. */
static int freeze_wanted(pid_t tid, void *arg)
{
	struct snapctx *cx = arg;
	if (cx->only)
		return bsearch(&tid, cx->only, cx->nonly, sizeof(tid), cmp_tid) != NULL;
	size_t i = thread_index(cx, tid, 0);
	if (i != (size_t)-1 && cx->p[i].plan != PLAN_FREEZE)
		return 0;
	if (cx->o->tids || cx->o->name_glob)
		return thread_wanted(tid, &cx->pick);
	return 1;
}

/* A thread stopped: registers now, memory in one batch once all stopped
 * (a syscall per thread is what the pause is made of). */
static void capture_on_stop(struct sd_tracee *tr, void *arg)
{
	struct snapctx *cx = arg;
	size_t i = thread_index(cx, tr->tid, cx->stage == STAGE_MAIN);
	if (i == (size_t)-1)
		return;
	struct sd_thread *th = &cx->s->threads[i];
	struct tplan *tp = &cx->p[i];
	if (cx->stage == STAGE_REGS) {
		/* Stopped for the registers /proc does not give. The stop
		 * itself schedules the thread in once; one more means it ran
		 * between the first reading and the interrupt, and so does a
		 * stop elsewhere than where /proc saw it. */
		struct sd_thread tmp = {.tid = th->tid};
		struct sd_counters c;
		int ok = 0;
		if (capture_regs(&tmp, &cx->t->space.maps, cx->o->max_stack) == 0 &&
		    procfs_task_counters(cx->tc, cx->taskdir, cx->t->pid, th->tid, cx->no_schedstat,
					 &c) == 0) {
			ok = c.from_status == tp->c1.from_status &&
			     c.switches == tp->c1.switches + 1 && tmp.regs.rsp == th->regs.rsp &&
			     tmp.regs.rip == th->regs.rip && tmp.regs.orig_rax == th->regs.orig_rax;
		}
		if (ok) {
			th->regs = tmp.regs; /* the copy taken before is still exact */
			th->regs_partial = 0;
			return;
		}
		th->retried = 1;
	}
	th->nlockmem = 0;
	/* The copy taken before is dropped: its bytes go back to the total
	 * cap for the new one. */
	cx->s->stack_bytes -= th->stack_len < cx->s->stack_bytes ? th->stack_len : cx->s->stack_bytes;
	th->stack_len = 0;
	th->regs_partial = 0;
	th->kind = SD_CAPTURE_FROZEN;
	if (capture_regs(th, &cx->t->space.maps, cx->o->max_stack) < 0) {
		mark_failed(cx->s, th, SD_THREAD_EXITED, "exited during the snapshot");
		return;
	}
	tp->copy_now = 1;
}

/* Hold the copies of a batch to what is left of the snapshot's cap on all
 * stack copies together (--stack-total): sleepers are copied first, the
 * frozen ones then share the rest. */
static void budget_copies(struct snapctx *cx, struct sd_thread **batch, size_t nb)
{
	size_t total = cx->o->max_stack_total;
	if (!total || !nb)
		return;
	size_t left = total > cx->s->stack_bytes ? total - (size_t)cx->s->stack_bytes : 0;
	/* Those not copied yet and not in this batch keep their share. */
	size_t pending = 0;
	for (size_t i = 0; i < cx->s->nthreads; i++)
		if (cx->s->threads[i].status == SD_THREAD_OK && !cx->s->threads[i].stack &&
		    cx->p[i].plan != PLAN_REUSE && cx->p[i].plan != PLAN_KERNEL)
			pending++;
	size_t later = pending > nb ? pending - nb : 0;
	cx->s->stack_cut += capture_budget(batch, nb, left, later, cx->o->max_stack);
}

/* Freeze KNOWN (or, with cx->only, only those), capture what stops, copy
 * its memory in one batch, release. The window runs at raised priority.
 * Returns 0, or a negative errno when the freeze failed as a whole. */
static int freeze_stage(struct snapctx *cx, const pid_t *known, size_t nknown, unsigned budget,
			struct sd_error *err)
{
	struct sd_snapshot *s = cx->s;
	struct sd_freeze fz;
	struct sd_boost boost;
	ptrace_boost_begin(&boost);
	int r = ptrace_freeze_all(&fz, cx->t->pid, budget, known, nknown,
				  (cx->only || cx->auto_mode || cx->o->tids || cx->o->name_glob)
					  ? freeze_wanted
					  : NULL,
				  cx, capture_on_stop, cx, err);
	if (r < 0) {
		ptrace_boost_end(&boost);
		/* No thread stopped within the budget (or every one is still
		 * ours from before): the sleepers stand. */
		if ((r == -ETIMEDOUT || (r == -ESRCH && fz.n == 0)) && cx->auto_mode &&
		    target_alive(cx->t)) {
			for (size_t k = 0; k < nknown && cx->stage != STAGE_REGS; k++) {
				size_t i = thread_index(cx, known[k], 0);
				if (i != (size_t)-1)
					cx->p[i].late = 1;
			}
			for (size_t k = 0; k < fz.n; k++) {
				size_t i = thread_index(cx, fz.v[k].tid, 0);
				if (i != (size_t)-1 && fz.v[k].state == SD_TRACEE_GONE)
					mark_failed(cx->s, &cx->s->threads[i], SD_THREAD_EXITED,
						    "exited during the snapshot");
			}
			ptrace_freeze_release(&fz);
			return 0;
		}
		ptrace_freeze_release(&fz);
		if (r == -ETIMEDOUT && !target_alive(cx->t))
			return sd_error_set(err, ESRCH, "process %d exited during the snapshot",
					    (int)cx->t->pid);
		return r;
	}
	struct sd_thread **batch = sd_xmalloc((s->nthreads + 1) * sizeof(*batch));
	size_t nb = 0;
	for (size_t k = 0; k < fz.n; k++) {
		struct sd_tracee *tr = &fz.v[k];
		size_t i = thread_index(cx, tr->tid, cx->stage == STAGE_MAIN);
		if (i == (size_t)-1)
			continue;
		struct sd_thread *th = &s->threads[i];
		if (tr->state == SD_TRACEE_STOPPED && !cx->p[i].copy_now && !th->have_regs &&
		    th->status == SD_THREAD_OK && cx->stage == STAGE_MAIN)
			capture_on_stop(tr, cx); /* stopped after the wait's callback */
		if (cx->p[i].copy_now && th->status == SD_THREAD_OK)
			batch[nb++] = th;
	}
	uint64_t m0 = sd_now_ns();
	budget_copies(cx, batch, nb);
	capture_memory(cx->t->pid, s, batch, nb, &s->stack_bytes);
	uint64_t memcopy = (sd_now_ns() - m0) / 1000;
	free(batch);
	ptrace_thaw_all(&fz);
	ptrace_boost_end(&boost);
	uint64_t pause = (fz.end_ns - fz.start_ns) / 1000;
	if (cx->stage == STAGE_MAIN) {
		s->pause_us = pause;
		s->seize_us = (fz.seized_ns - fz.start_ns) / 1000;
		s->stop_us = (fz.stopped_ns - fz.seized_ns) / 1000;
		s->detach_us = (fz.end_ns - fz.stopped_ns) / 1000;
		s->memcopy_us = memcopy;
	} else if (pause > s->pause_us) {
		s->pause_us = pause;
	}
	for (size_t k = 0; k < fz.n; k++) {
		struct sd_tracee *tr = &fz.v[k];
		size_t i = thread_index(cx, tr->tid, 0);
		if (i == (size_t)-1)
			continue;
		struct sd_thread *th = &s->threads[i];
		struct tplan *tp = &cx->p[i];
		tp->copy_now = 0;
		uint64_t p = tr->detach_ns > fz.start_ns ? (tr->detach_ns - fz.start_ns) / 1000 : 0;
		if (p > th->pause_us)
			th->pause_us = p;
		if (tr->group_stop && s->state != 'T' && s->state != 't')
			s->state = 'T';
		if (tr->group_stop && !th->state)
			th->state = 'T';
		if (tr->state == SD_TRACEE_GONE && th->status == SD_THREAD_OK) {
			mark_failed(s, th, SD_THREAD_EXITED, "exited during the snapshot");
		} else if (tr->state == SD_TRACEE_FAILED && th->status == SD_THREAD_OK) {
			char why[128];
			snprintf(why, sizeof(why), "could not be traced: %s", strerror(tr->err));
			mark_failed(s, th, SD_THREAD_ERROR, why);
		} else if (tr->state == SD_TRACEE_OURS || tr->detach_ns == 0) {
			/* Never stopped (a thread gone into D since it was
			 * seen running, or one still ours from before): read
			 * it asleep after the others are released. */
			if (cx->auto_mode && cx->stage != STAGE_REGS)
				tp->late = 1;
			else if (cx->stage != STAGE_REGS && !th->have_regs &&
				 th->status == SD_THREAD_OK)
				mark_failed(s, th, SD_THREAD_NOT_STOPPED,
					    "did not stop in time (uninterruptible sleep?)");
		}
	}
	ptrace_freeze_release(&fz);
	return 0;
}

/* Copy the planned sleepers' memory: registers from /proc, no stop. */
static void asleep_stage(struct snapctx *cx, int only_late)
{
	struct sd_snapshot *s = cx->s;
	struct sd_thread **batch = sd_xmalloc((s->nthreads + 1) * sizeof(*batch));
	size_t nb = 0;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		struct tplan *tp = &cx->p[i];
		if (th->status != SD_THREAD_OK || tp->plan != PLAN_ASLEEP || (only_late && !tp->late))
			continue;
		capture_regs_from_syscall(th, &tp->sc);
		capture_plan(th, &cx->t->space.maps, cx->o->max_stack);
		th->kind = SD_CAPTURE_ASLEEP;
		batch[nb++] = th;
	}
	budget_copies(cx, batch, nb);
	capture_memory(cx->t->pid, s, batch, nb, &s->stack_bytes);
	free(batch);
}

/* Threads that did not stop within the budget, once the others run
 * again: one that /proc shows asleep now (gone into D) is read like a
 * sleeper; one that is runnable (a starved CPU) is waited for alone, up
 * to --timeout, and read when it stops. */
static void late_stage(struct snapctx *cx)
{
	struct sd_snapshot *s = cx->s;
	int any = 0;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		struct tplan *tp = &cx->p[i];
		if (!tp->late || th->have_regs || th->status != SD_THREAD_OK)
			continue;
		tp->plan = PLAN_FREEZE;
		tp->late = 0;
		struct sd_tracee tr = {.tid = th->tid};
		uint64_t a = sd_now_ns();
		int r = ptrace_wait_straggler(&tr, 0);
		if (r == -ETIMEDOUT && procfs_task_counters(cx->tc, cx->taskdir, cx->t->pid, th->tid,
							  cx->no_schedstat, &tp->c1) == 0 &&
		    procfs_task_syscall(cx->tc, cx->taskdir, cx->t->pid, th->tid, &tp->sc) == 0 &&
		    tp->sc.syscall_known && !tp->sc.running && tp->sc.sp) {
			/* Asleep now (gone into D since it was seen running):
			 * read like a sleeper; it stops when it wakes and is
			 * detached then. */
			tp->have_c1 = 1;
			tp->plan = PLAN_ASLEEP;
			tp->late = 1;
			tp->round = cx->round;
			th->retried = 1;
			any = 1;
			continue;
		}
		if (r == -ETIMEDOUT)
			r = ptrace_wait_straggler(&tr, cx->o->timeout_ms);
		if (r == -ESRCH && !ptrace_is_straggler(th->tid)) {
			/* Not ours any more (it stopped as it was let go, and
			 * was detached then): stop it alone, once more. */
			struct sd_error e1 = {0};
			memset(&tr, 0, sizeof(tr));
			tr.tid = th->tid;
			r = ptrace_freeze_one(&tr, cx->o->timeout_ms, &e1) == 0 ? 0
			    : e1.code == ESRCH					 ? -ESRCH
										 : -ETIMEDOUT;
		}
		if (r == 0) {
			if (capture_regs(th, &cx->t->space.maps, cx->o->max_stack) == 0) {
				th->kind = SD_CAPTURE_FROZEN;
				budget_copies(cx, &th, 1);
				capture_memory(cx->t->pid, s, &th, 1, &s->stack_bytes);
			}
			ptrace_thaw_one(&tr);
			th->pause_us = (sd_now_ns() - a) / 1000;
			if (th->have_regs)
				continue;
		}
		mark_failed(s, th, r == -ESRCH ? SD_THREAD_EXITED : SD_THREAD_NOT_STOPPED,
			    r == -ESRCH ? "exited during the snapshot"
					: "did not stop in time (uninterruptible sleep?)");
	}
	if (any)
		asleep_stage(cx, 1);
}

/* The second counter reading: a sleeper whose counters moved ran since
 * its syscall file was read, so its copy may be stale: list it for a
 * retry. Without schedstat the syscall file is read again first: the
 * kernel fills it only once the thread is off CPU, so equal switch counts
 * after it mean the thread never left its sleep. */
static size_t validate_stage(struct snapctx *cx, pid_t **retry)
{
	/* The retry round checks only what its own late stage read. */
	struct sd_snapshot *s = cx->s;
	size_t n = 0;
	*retry = sd_xmalloc((s->nthreads + 1) * sizeof(**retry));
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		struct tplan *tp = &cx->p[i];
		if (th->status != SD_THREAD_OK ||
		    (th->kind != SD_CAPTURE_ASLEEP && th->kind != SD_CAPTURE_REUSED) ||
		    (cx->round && tp->round != cx->round))
			continue;
		struct sd_counters c2;
		int ok = 1;
		if (tp->c1.from_status) {
			struct sd_taskinfo sc;
			ok = procfs_task_syscall(cx->tc, cx->taskdir, cx->t->pid, th->tid, &sc) == 0 &&
			     sc.syscall_known && !sc.running && sc.sp == th->regs.rsp &&
			     sc.pc == th->regs.rip;
		}
		if (ok)
			ok = procfs_task_counters(cx->tc, cx->taskdir, cx->t->pid, th->tid,
						  cx->no_schedstat, &c2) == 0 &&
			     counters_same(&c2, &tp->c1);
		if (!ok)
			(*retry)[n++] = th->tid;
	}
	return n;
}

static void reuse_apply(struct snapctx *cx, struct sd_thread *th, const struct sd_reuse *r)
{
	struct sd_snapshot *s = cx->s;
	th->kind = SD_CAPTURE_REUSED;
	th->regs = r->regs;
	th->regs_partial = r->regs_partial;
	th->have_regs = 1;
	if (!th->state)
		th->state = r->state;
	th->syscall_known = r->syscall_known;
	th->syscall_nr = r->syscall_nr;
	memcpy(th->syscall_args, r->syscall_args, sizeof(th->syscall_args));
	/* One copy in the capacity snapshot_add_frame() assumes (a power of
	 * two, at least 16); names only when the frames have them. */
	size_t cap = 16;
	while (cap < r->nframes)
		cap *= 2;
	free(th->frames);
	th->frames = sd_xmalloc(cap * sizeof(*th->frames));
	memcpy(th->frames, r->frames, r->nframes * sizeof(*th->frames));
	th->nframes = r->nframes;
	for (size_t k = 0; k < th->nframes; k++) {
		struct sd_frame *f = &th->frames[k];
		if (!f->function && !f->module && !f->build_id && !f->file)
			continue;
		f->function = strpool_intern(s->pool, f->function);
		f->module = strpool_intern(s->pool, f->module);
		f->build_id = strpool_intern(s->pool, f->build_id);
		f->file = strpool_intern(s->pool, f->file);
	}
	th->unwind_stop = strpool_intern(s->pool, r->unwind_stop);
	if (r->nlockmem) {
		th->lockmem = sd_xmalloc(r->nlockmem * sizeof(*th->lockmem));
		memcpy(th->lockmem, r->lockmem, r->nlockmem * sizeof(*th->lockmem));
		th->nlockmem = r->nlockmem;
	}
}

/* Remember every thread read asleep (or reused) and confirmed, for the
 * next sample; forget the others. */
static void reuse_save(struct snapctx *cx)
{
	struct sd_target *t = cx->t;
	struct sd_snapshot *s = cx->s;
	if (!t->reuse_pool)
		t->reuse_pool = strpool_new();
	struct sd_reuse *v = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		struct tplan *tp = &cx->p[i];
		if (th->status != SD_THREAD_OK || !tp->have_c1 || th->retried ||
		    (th->kind != SD_CAPTURE_ASLEEP && th->kind != SD_CAPTURE_REUSED) ||
		    (th->regs_partial && th->needs_regs) || ptrace_is_straggler(th->tid))
			continue;
		sd_grow(&v, &cap, n + 1, sizeof(*v));
		struct sd_reuse *r = &v[n++];
		if (th->kind == SD_CAPTURE_REUSED && tp->prev) {
			/* Unchanged: the entry moves over as it is. */
			*r = *tp->prev;
			tp->prev->frames = NULL;
			tp->prev->lockmem = NULL;
			tp->prev->nframes = tp->prev->nlockmem = 0;
			continue;
		}
		memset(r, 0, sizeof(*r));
		r->tid = th->tid;
		r->c = tp->c1;
		r->regs = th->regs;
		r->regs_partial = th->regs_partial;
		r->state = th->state;
		r->syscall_known = th->syscall_known;
		r->syscall_nr = th->syscall_nr;
		memcpy(r->syscall_args, th->syscall_args, sizeof(r->syscall_args));
		if (th->nframes) {
			r->frames = sd_xmalloc(th->nframes * sizeof(*r->frames));
			for (size_t k = 0; k < th->nframes; k++) {
				struct sd_frame *f = &r->frames[k];
				*f = th->frames[k];
				f->function = strpool_intern(t->reuse_pool, f->function);
				f->module = strpool_intern(t->reuse_pool, f->module);
				f->build_id = strpool_intern(t->reuse_pool, f->build_id);
				f->file = strpool_intern(t->reuse_pool, f->file);
			}
			r->nframes = th->nframes;
		}
		r->unwind_stop = strpool_intern(t->reuse_pool, th->unwind_stop);
		if (th->nlockmem) {
			r->lockmem = sd_xmalloc(th->nlockmem * sizeof(*r->lockmem));
			memcpy(r->lockmem, th->lockmem, th->nlockmem * sizeof(*r->lockmem));
			r->nlockmem = th->nlockmem;
		}
	}
	reuse_clear(t);
	free(t->reuse);
	sd_sort(v, n, sizeof(*v), cmp_reuse);
	t->reuse = v;
	t->nreuse = n;
	t->reuse_cap = cap;
}

/* How many sleepers one stop for registers seizes at once. */
#define REGSTOP_GROUP 256

/* Stop the N sleepers NEED (sorted) for their registers and unwind them
 * again. */
static void regstop_group(struct snapctx *cx, const pid_t *need, size_t n)
{
	struct sd_snapshot *s = cx->s;
	cx->stage = STAGE_REGS;
	cx->only = need;
	cx->nonly = n;
	struct sd_error e2 = {0};
	unsigned budget = cx->o->timeout_ms < SD_STOP_BUDGET_MS ? cx->o->timeout_ms
								 : SD_STOP_BUDGET_MS;
	freeze_stage(cx, need, n, budget, &e2);
	cx->only = NULL;
	cx->nonly = 0;
	for (size_t k = 0; k < n; k++) {
		size_t i = thread_index(cx, need[k], 0);
		struct sd_thread *th = &s->threads[i];
		struct tplan *tp = &cx->p[i];
		if (th->regs_partial && th->status == SD_THREAD_OK &&
		    ptrace_is_straggler(th->tid)) {
			/* Not stopped within the budget (a starved
			 * CPU): the others run already, wait for it
			 * alone. */
			struct sd_tracee tr = {.tid = th->tid};
			int r = ptrace_wait_straggler(&tr, cx->o->timeout_ms);
			if (r == 0) {
				capture_on_stop(&tr, cx);
				if (tp->copy_now && th->status == SD_THREAD_OK) {
					budget_copies(cx, &th, 1);
					capture_memory(cx->t->pid, s, &th, 1, &s->stack_bytes);
				}
				tp->copy_now = 0;
				ptrace_thaw_one(&tr);
			} else if (r == -ESRCH) {
				mark_failed(s, th, SD_THREAD_EXITED,
					    "exited during the snapshot");
			}
		}
		if (th->status != SD_THREAD_OK)
			continue;
		if (th->regs_partial) {
			/* Did not stop: keep what the copy gave, and say
			 * why it ends there. */
			th->unwind_stop = strpool_intern(s->pool,
							 "the rest needs registers only a stop "
							 "gives, and the thread did not stop in time");
			continue;
		}
		s->nregstops++;
		th->nframes = 0;
		th->unwind_stop = NULL;
		unwind_thread(cx->t->unw, s, th, cx->o->max_frames);
		tp->reunwound = 1;
	}
}

/* Stop, once, each sleeper whose unwind needs a register /proc does not
 * give; unwind it again from the copy when the stop proves the copy is
 * still exact, else from what was read while it was stopped. */
static void regstop_stage(struct snapctx *cx, int for_locks, struct sd_error *err)
{
	struct sd_snapshot *s = cx->s;
	pid_t *need = sd_xmalloc((s->nthreads + 1) * sizeof(*need));
	size_t n = 0;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		if (th->status != SD_THREAD_OK || !th->regs_partial || !th->needs_regs ||
		    th->kind != SD_CAPTURE_ASLEEP)
			continue;
		/* Never interrupt a thread in D: the stack stays as far as
		 * the copy alone goes. */
		struct sd_taskinfo st;
		if (procfs_task_state(cx->tc, cx->taskdir, cx->t->pid, th->tid, &st) == 0 &&
		    st.state == 'D') {
			if (for_locks)
				continue;
			th->unwind_stop = strpool_intern(s->pool,
							 "the rest needs registers only a stop gives, "
							 "and the thread is in uninterruptible sleep");
			continue;
		}
		need[n++] = th->tid;
	}
	sd_sort(need, n, sizeof(*need), cmp_tid);
	/* In groups: these threads sleep, so no two need to stop together,
	 * and a group small enough to seize within the stop budget stops
	 * in time on a loaded host, each for a short while. */
	for (size_t g = 0; g < n; g += REGSTOP_GROUP)
		regstop_group(cx, need + g, n - g < REGSTOP_GROUP ? n - g : REGSTOP_GROUP);
	(void)err;
	free(need);
}

/* Does lock analysis need the callee-saved registers of the sleepers?
 * Only when a thread waits on a lock that keeps no owner a holder could
 * be found for (a mutex or rwlock, glibc's or Rust's) and some sleeper's
 * registers came from /proc. Marks those sleepers for a stop. */
static int locks_need_registers(struct snapctx *cx)
{
	struct sd_snapshot *s = cx->s;
	int all = 0;
	size_t n = 0;
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct sd_wait *w = &s->threads[i].wait;
		enum sd_wait_kind k = w->kind;
		if (k != SD_WAIT_MUTEX && k != SD_WAIT_RWLOCK_READ && k != SD_WAIT_RWLOCK_WRITE &&
		    k != SD_WAIT_RUST_MUTEX && k != SD_WAIT_RUST_RWLOCK)
			continue;
		if (!(w->owner_known && w->owner_evidence == SD_EVIDENCE_MEMORY)) {
			all = 1;
			continue;
		}
		/* A recorded owner: its frame that holds the lock is found
		 * the same way, in its slots and registers. */
		for (size_t k2 = 0; k2 < s->nthreads; k2++) {
			struct sd_thread *o = &s->threads[k2];
			if (o->tid == w->owner && o->kind == SD_CAPTURE_ASLEEP && o->regs_partial &&
			    o->status == SD_THREAD_OK) {
				o->needs_regs = 1;
				n++;
			}
		}
	}
	for (size_t i = 0; i < s->nthreads && all; i++) {
		struct sd_thread *th = &s->threads[i];
		if (th->kind == SD_CAPTURE_ASLEEP && th->regs_partial && th->status == SD_THREAD_OK) {
			th->needs_regs = 1;
			n++;
		}
	}
	return n > 0;
}

struct sd_snapshot *target_snapshot(struct sd_target *t, const struct sd_snap_opts *o,
				    struct sd_error *err)
{
	struct sd_procinfo pi;
	int light = o->light_discover >= 2;
	/* A thread that did not stop in time at the last snapshot has
	 * perhaps stopped since: let it go before anything else. */
	ptrace_reap_stragglers();
	if (light) {
		/* Samples: the state letter is all we need of the process. */
		memset(&pi, 0, sizeof(pi));
		if (procfs_proc_stat(t->pid, &pi.state, NULL, NULL, err) < 0)
			return NULL;
	} else {
		if (procfs_procinfo(t->pid, &pi, err) < 0)
			return NULL;
		procfs_procinfo_release(&pi);
	}
	if (pi.state == 'Z' || pi.state == 'X') {
		sd_error_set(err, ESRCH, "process %d exited (zombie)", (int)t->pid);
		return NULL;
	}
	/* Samples read the maps once a second, or when the last unwind met
	 * an address they lack; a snapshot whose unwind meets one reads
	 * them again and unwinds once more (below). */
	uint64_t misses = t->space.maps_misses;
	int maps_fresh = 0;
	if (!light || !t->space.maps.n || sd_now_ns() - t->maps_ns > 1000000000ull) {
		if (target_refresh(t, err) < 0)
			return NULL;
		maps_fresh = 1;
	}
	symbols_sync(t->sym);

	struct sd_snapshot *s = snapshot_new(t->pid);
	s->comm = strpool_intern(s->pool, t->info.comm);
	s->exe = t->info.exe ? strpool_intern(s->pool, t->info.exe) : NULL;
	s->state = pi.state;
	s->per_thread = o->per_thread;
	s->stack_total = o->max_stack_total;
	s->time = sd_wall_time();

	struct snapctx cx = {.t = t, .o = o, .s = s, .taskdir = -1, .pick = {o, t->pid}};
	cx.auto_mode = !o->per_thread && o->capture != SD_CAPMODE_FREEZE;
	cx.no_schedstat = o->capture == SD_CAPMODE_CTXSW;
	if (!cx.auto_mode)
		reuse_clear(t);

	/* discover: before anything is stopped */
	pid_t *tids = NULL;
	size_t ntids = 0;
	uint64_t now = sd_now_ns();
	if (cx.auto_mode && o->reuse && !o->tids && !o->name_glob && t->last_tids &&
	    now - t->tids_ns < 1000000000ull) {
		/* Samples list the threads once a second: the freeze lists
		 * them again for threads born since, and one gone fails its
		 * reads. */
		tids = sd_xmalloc((t->nlast_tids + 1) * sizeof(*tids));
		memcpy(tids, t->last_tids, t->nlast_tids * sizeof(*tids));
		ntids = t->nlast_tids;
	} else {
		if (procfs_list_tids(t->pid, &tids, &ntids, err) < 0) {
			snapshot_free(s);
			return NULL;
		}
		free(t->last_tids);
		t->last_tids = sd_xmalloc((ntids + 1) * sizeof(*tids));
		memcpy(t->last_tids, tids, ntids * sizeof(*tids));
		t->nlast_tids = ntids;
		t->tids_ns = now;
	}
	/* Repeated snapshots keep each thread's files open: a pread each. */
	if (o->keep_files || (cx.auto_mode && (light || o->reuse))) {
		if (!t->taskcache)
			t->taskcache = procfs_taskcache_new();
		procfs_taskcache_prune(t->taskcache, tids, ntids);
		cx.tc = t->taskcache;
	}
	{
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
		cx.taskdir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (cx.taskdir < 0)
			cx.taskdir = AT_FDCWD;
	}
	for (size_t i = 0; i < ntids; i++) {
		if (!thread_wanted(tids[i], &cx.pick))
			continue;
		if (light) {
			const char *name = cached_name(t, cx.tc, cx.taskdir, tids[i], now);
			if (!name)
				continue; /* exited already */
			struct sd_thread *th = add_thread(&cx, tids[i]);
			th->name = strpool_intern(s->pool, name);
			th->syscall_nr = -1;
		} else {
			struct sd_taskinfo ti;
			if (procfs_taskinfo_cached(cx.tc, cx.taskdir, t->pid, tids[i], &ti,
						   (o->light_discover ? PROCFS_LIGHT : 0) |
							   PROCFS_REGS_FOLLOW) < 0)
				continue; /* exited already */
			struct sd_thread *th = add_thread(&cx, tids[i]);
			fill_taskinfo(s, th, &ti);
		}
		if (cx.auto_mode)
			plan_thread(&cx, s->nthreads - 1);
	}
	cx.nsorted = s->nthreads;
	if (o->tids || o->name_glob)
		s->threads_total = ntids;
	if (!s->nthreads && (o->tids || o->name_glob)) {
		sd_error_set(err, ENOENT, "no thread of %d matches the selection", (int)t->pid);
		goto fail;
	}

	if (!o->per_thread) {
		/* Prefault room for the stack copies now, while the target
		 * runs: the stack pointers /proc showed tell how much. */
		size_t est = 0;
		for (size_t i = 0; i < s->nthreads; i++) {
			const struct sd_thread *th = &s->threads[i];
			if (cx.p[i].plan == PLAN_REUSE || cx.p[i].plan == PLAN_KERNEL)
				continue;
			uint64_t sp = th->proc_sp ? th->proc_sp : cx.p[i].sc.sp;
			const struct sd_map *m = sp ? procfs_maps_find(&t->space.maps, sp) : NULL;
			/* Without a stack pointer from /proc, the share of
			 * what the last snapshot copied. */
			size_t w = m			       ? (size_t)(m->end - sp) + 8192
				   : t->last_stack_bytes && t->snapshots ? t->last_stack_bytes / s->nthreads + 4096
									 : 65536;
			est += w < o->max_stack ? w : o->max_stack;
		}
		est += est / 8;
		if (o->max_stack_total && est > o->max_stack_total)
			est = o->max_stack_total;
		if (t->spare_arena && t->spare_arena_size >= est && t->spare_arena_size / 4 <= est) {
			snapshot_arena_adopt(s, t->spare_arena, t->spare_arena_size);
			t->spare_arena = NULL;
		} else {
			snapshot_arena_reserve(s, est);
		}
	}
	uint64_t t0 = sd_now_ns();
	if (!o->per_thread) {
		/* asleep: copied before anything is stopped */
		if (cx.auto_mode)
			asleep_stage(&cx, 0);
		for (size_t i = 0; i < s->nthreads; i++) {
			struct sd_thread *th = &s->threads[i];
			if (cx.p[i].plan == PLAN_REUSE) {
				reuse_apply(&cx, th, cx.p[i].prev);
			} else if (cx.p[i].plan == PLAN_KERNEL) {
				char ks[512], msg[640];
				kernel_stack(t->pid, th->tid, ks, sizeof(ks));
				th->kind = SD_CAPTURE_KERNEL;
				snprintf(msg, sizeof(msg),
					 "in uninterruptible sleep, not stopped; user registers "
					 "unreadable%s%s",
					 ks[0] ? "; kernel stack: " : "", ks);
				th->unwind_stop = strpool_intern(s->pool, msg);
				s->partial = 1;
			}
		}
		/* freeze: only what runs */
		pid_t *known = sd_xmalloc((s->nthreads + 1) * sizeof(*known));
		size_t nknown = 0;
		for (size_t i = 0; i < s->nthreads; i++)
			if (cx.p[i].plan == PLAN_FREEZE)
				known[nknown++] = s->threads[i].tid;
		int r = 0;
		if (nknown || !cx.auto_mode) {
			unsigned budget = o->timeout_ms;
			if (cx.auto_mode && budget > SD_STOP_BUDGET_MS)
				budget = SD_STOP_BUDGET_MS;
			cx.stage = STAGE_MAIN;
			r = freeze_stage(&cx, cx.auto_mode ? known : tids,
					 cx.auto_mode ? nknown : ntids, budget, err);
		}
		free(known);
		if (r < 0)
			goto fail;
		if (cx.auto_mode) {
			/* A thread to freeze that the freeze did not take
			 * (still ours from an earlier snapshot, not stopped
			 * yet): waited for or read asleep like a late one. */
			for (size_t i = 0; i < s->nthreads; i++)
				if (cx.p[i].plan == PLAN_FREEZE && !s->threads[i].have_regs &&
				    s->threads[i].status == SD_THREAD_OK)
					cx.p[i].late = 1;
			late_stage(&cx);
			/* validate; a thread that ran in between is frozen and
			 * read again (once; one that does not stop is shown as
			 * such) */
			if (o->between_readings)
				o->between_readings(o->between_arg);
			pid_t *retry;
			size_t nr = validate_stage(&cx, &retry);
			if (nr) {
				sd_sort(retry, nr, sizeof(*retry), cmp_tid);
				for (size_t k = 0; k < nr; k++) {
					size_t i = thread_index(&cx, retry[k], 0);
					struct sd_thread *th = &s->threads[i];
					th->retried = 1;
					th->have_regs = 0;
					th->nframes = 0;
					th->nlockmem = 0;
					th->stack_len = 0;
					th->kind = SD_CAPTURE_FROZEN;
					cx.p[i].have_c1 = 0;
				}
				cx.stage = STAGE_RETRY;
				cx.only = retry;
				cx.nonly = nr;
				struct sd_error e2 = {0};
				unsigned budget = o->timeout_ms < SD_STOP_BUDGET_MS ? o->timeout_ms
										    : SD_STOP_BUDGET_MS;
				freeze_stage(&cx, retry, nr, budget, &e2);
				cx.only = NULL;
				cx.nonly = 0;
				/* One that did not stop within the budget: waited
				 * for alone, or read asleep once more and checked. */
				cx.round = 1;
				late_stage(&cx);
				pid_t *again;
				size_t na = validate_stage(&cx, &again);
				for (size_t k = 0; k < na; k++) {
					size_t i = thread_index(&cx, again[k], 0);
					mark_failed(s, &s->threads[i], SD_THREAD_NOT_STOPPED,
						    "kept running while read and did not stop in time");
				}
				free(again);
				for (size_t k = 0; k < nr; k++) {
					size_t i = thread_index(&cx, retry[k], 0);
					struct sd_thread *th = &s->threads[i];
					cx.p[i].late = 0;
					if (!th->have_regs && th->status == SD_THREAD_OK)
						mark_failed(s, th, SD_THREAD_NOT_STOPPED,
							    "kept running while read and did not "
							    "stop in time");
				}
			}
			free(retry);
		}
	} else {
		for (size_t i = 0; i < s->nthreads; i++) {
			struct sd_thread *th = &s->threads[i];
			struct sd_tracee tr = {.tid = th->tid};
			struct sd_error e1 = {0};
			uint64_t a = sd_now_ns();
			if (ptrace_freeze_one(&tr, o->timeout_ms, &e1) < 0) {
				if (e1.code == EPERM || e1.code == EBUSY) {
					sd_error_set(err, e1.code, "%s", e1.msg);
					goto fail;
				}
				mark_failed(s, th,
					    e1.code == ESRCH ? SD_THREAD_EXITED
							     : SD_THREAD_NOT_STOPPED,
					    e1.code == ESRCH ? "exited during the snapshot" : e1.msg);
				continue;
			}
			/* One at a time, the total cap is shared as it goes:
			 * an even share of what is left for those left. */
			size_t lim = o->max_stack;
			if (o->max_stack_total) {
				size_t left = o->max_stack_total > s->stack_bytes
						      ? o->max_stack_total - (size_t)s->stack_bytes
						      : 0;
				size_t share = (left / (s->nthreads - i)) & ~(size_t)15;
				if (share < lim)
					lim = share;
			}
			int cr = capture_thread(t->pid, th, &t->space.maps, lim, &s->stack_bytes);
			if (lim < o->max_stack && th->stack_truncated) {
				th->stack_cut = 1;
				s->stack_cut++;
			}
			ptrace_thaw_one(&tr);
			th->pause_us = (sd_now_ns() - a) / 1000;
			if (th->pause_us > s->pause_us)
				s->pause_us = th->pause_us;
			if (cr < 0)
				mark_failed(s, th, SD_THREAD_EXITED, "exited during the snapshot");
		}
	}
	free(tids);
	tids = NULL;
	uint64_t t1 = sd_now_ns();
	s->capture_us = (t1 - t0) / 1000;

	/* Everything below runs with the target running again. */
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		state_from_regs(th);
		if (!th->name || !th->state || (!th->have_regs && !th->syscall_known)) {
			struct sd_taskinfo ti;
			if (procfs_taskinfo(t->pid, th->tid, &ti) == 0)
				fill_taskinfo(s, th, &ti);
			else if (!th->name)
				th->name = strpool_intern(s->pool, "");
		}
		syscall_from_regs(th);
		if (th->kind == SD_CAPTURE_REUSED || th->kind == SD_CAPTURE_KERNEL)
			continue;
		unwind_thread(t->unw, s, th, o->max_frames);
	}
	if (!maps_fresh && t->space.maps_misses != misses) {
		/* A new thread's stack or a library loaded since the maps
		 * were read: read them and unwind again from the copy. */
		if (target_refresh(t, err) < 0)
			goto fail;
		symbols_sync(t->sym);
		for (size_t i = 0; i < s->nthreads; i++) {
			struct sd_thread *th = &s->threads[i];
			if (th->kind == SD_CAPTURE_REUSED || th->kind == SD_CAPTURE_KERNEL)
				continue;
			th->nframes = 0;
			th->unwind_stop = NULL;
			unwind_thread(t->unw, s, th, o->max_frames);
		}
	}
	if (cx.auto_mode) {
		regstop_stage(&cx, 0, err);
		for (size_t i = 0; i < s->nthreads; i++)
			cx.p[i].reunwound = 0; /* symbolized with the others below */
	}
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		switch (th->kind) {
		case SD_CAPTURE_FROZEN: s->nfrozen += th->have_regs; break;
		case SD_CAPTURE_ASLEEP: s->nasleep++; break;
		case SD_CAPTURE_REUSED: s->nreused++; break;
		case SD_CAPTURE_KERNEL: break;
		}
		s->nretried += th->retried;
	}
	/* A thread read twice (retried, stopped for registers) may have
	 * been held to the cap twice: count threads, not cuts. */
	if (o->max_stack_total && !o->per_thread) {
		s->stack_cut = 0;
		for (size_t i = 0; i < s->nthreads; i++)
			s->stack_cut += s->threads[i].stack_cut;
	}
	uint64_t t2 = sd_now_ns();
	s->unwind_us = (t2 - t1) / 1000;
	if (!o->no_symbols) {
		for (size_t i = 0; i < s->nthreads; i++) {
			struct sd_thread *th = &s->threads[i];
			if (th->kind == SD_CAPTURE_REUSED && o->reuse)
				continue; /* frames as symbolized last time */
			symbols_thread(t->sym, s, th, o->no_inline, o->no_source);
			/* --max-frames counts the frames shown, inline ones too. */
			if (o->max_frames && th->nframes > o->max_frames) {
				char msg[64];
				th->nframes = o->max_frames;
				snprintf(msg, sizeof(msg), "stopped at --max-frames %u", o->max_frames);
				th->unwind_stop = strpool_intern(s->pool, msg);
			}
		}
	}
	s->symbolize_us = (sd_now_ns() - t2) / 1000;
	analyze_snapshot(t->pid, t->sym, s);
	if (cx.auto_mode && locks_need_registers(&cx)) {
		/* A lock waited on with no owner in memory: its holder is
		 * inferred from stack slots and callee-saved registers, and
		 * /proc gave none of the latter. Every sleeper is stopped
		 * once for them (the copy stays the one taken before when
		 * the stop proves it exact), then unwound and judged again. */
		regstop_stage(&cx, 1, err);
		for (size_t i = 0; i < s->nthreads; i++) {
			struct sd_thread *th = &s->threads[i];
			th->needs_regs = 0;
			if (!cx.p[i].reunwound)
				continue;
			cx.p[i].reunwound = 0;
			syscall_from_regs(th);
			if (!o->no_symbols)
				symbols_thread(t->sym, s, th, o->no_inline, o->no_source);
		}
		analyze_snapshot(t->pid, t->sym, s);
	}
	if (cx.auto_mode && o->reuse)
		reuse_save(&cx);
	if (cx.taskdir >= 0)
		close(cx.taskdir);
	cx.taskdir = -1;
	free(cx.p);
	cx.p = NULL;
	if (s->threads_total)
		name_outside(s);
	add_modules(s, t);
	t->last_stack_bytes = s->stack_bytes;
	if (!o->keep_capture) {
		snapshot_drop_capture(s);
		void *arena;
		size_t size = snapshot_arena_release(s, &arena);
		if (arena) {
			if (t->spare_arena)
				munmap(t->spare_arena, t->spare_arena_size);
			t->spare_arena = arena;
			t->spare_arena_size = size;
		}
	}
	t->snapshots++;
	return s;
fail:
	free(tids);
	if (cx.taskdir >= 0)
		close(cx.taskdir);
	free(cx.p);
	snapshot_free(s);
	return NULL;
}

const char *target_thread_name(struct sd_target *t, pid_t tid)
{
	return cached_name(t, t->taskcache, AT_FDCWD, tid, sd_now_ns());
}

void target_snapshot_modules(struct sd_target *t, struct sd_snapshot *s)
{
	if (!s->modules)
		add_modules(s, t);
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
