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

static struct sd_thread *find_thread(struct sd_snapshot *s, pid_t tid);

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
static const char *cached_name(struct sd_target *t, pid_t tid, uint64_t now)
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
	char path[96], *text;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)t->pid, (int)tid);
	if (sd_read_file(path, &text, 256) < 0)
		return NULL;
	text[strcspn(text, "\n")] = '\0';
	sd_grow(&t->names, &t->names_cap, t->nnames + 1, sizeof(*t->names));
	struct sd_tname *e = &t->names[t->nnames++];
	e->tid = tid;
	snprintf(e->comm, sizeof(e->comm), "%s", text);
	free(text);
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

static struct sd_thread *find_thread(struct sd_snapshot *s, pid_t tid)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	return NULL;
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

struct capture_ctx {
	struct sd_target *t;
	struct sd_snapshot *s;
	const struct sd_snap_opts *o;
};

/* Capture a thread the moment it stops, while the others are still
 * stopping: the copy overlaps the wait instead of adding to the pause. */
static void capture_on_stop(struct sd_tracee *tr, void *arg)
{
	struct capture_ctx *cc = arg;
	struct sd_thread *th = find_thread(cc->s, tr->tid);
	if (!th)
		th = snapshot_add_thread(cc->s, tr->tid); /* appeared */
	/* Registers now; the memory of all threads in one batch once every
	 * thread has stopped (a syscall per thread is what the pause is
	 * made of). */
	if (capture_regs(th, &cc->t->space.maps, cc->o->max_stack) < 0)
		mark_failed(cc->s, th, SD_THREAD_EXITED, "exited during the snapshot");
}

struct sd_snapshot *target_snapshot(struct sd_target *t, const struct sd_snap_opts *o,
				    struct sd_error *err)
{
	struct sd_procinfo pi;
	int light = o->light_discover >= 2;
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

	/* discover: before anything is stopped */
	struct pick pick = {o, t->pid};
	pid_t *tids = NULL;
	size_t ntids = 0;
	if (procfs_list_tids(t->pid, &tids, &ntids, err) < 0) {
		snapshot_free(s);
		return NULL;
	}
	uint64_t now = sd_now_ns();
	int taskdir = -1;
	if (o->keep_files) {
		if (!t->taskcache)
			t->taskcache = procfs_taskcache_new();
		procfs_taskcache_prune(t->taskcache, tids, ntids);
	}
	for (size_t i = 0; i < ntids; i++) {
		if (!thread_wanted(tids[i], &pick))
			continue;
		if (light) {
			const char *name = cached_name(t, tids[i], now);
			if (!name)
				continue; /* exited already */
			struct sd_thread *th = snapshot_add_thread(s, tids[i]);
			th->name = strpool_intern(s->pool, name);
			th->syscall_nr = -1;
			continue;
		}
		struct sd_taskinfo ti;
		if (taskdir < 0) {
			char path[64];
			snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
			taskdir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (taskdir < 0)
				taskdir = AT_FDCWD;
		}
		if (procfs_taskinfo_cached(o->keep_files ? t->taskcache : NULL, taskdir, t->pid,
					   tids[i], &ti,
					   (o->light_discover ? PROCFS_LIGHT : 0) | PROCFS_REGS_FOLLOW) < 0)
			continue; /* exited already */
		struct sd_thread *th = snapshot_add_thread(s, tids[i]);
		fill_taskinfo(s, th, &ti);
	}
	if (taskdir >= 0)
		close(taskdir);
	if (o->tids || o->name_glob)
		s->threads_total = ntids;
	if (!s->nthreads && (o->tids || o->name_glob)) {
		sd_error_set(err, ENOENT, "no thread of %d matches the selection", (int)t->pid);
		free(tids);
		snapshot_free(s);
		return NULL;
	}

	uint64_t t0;
	if (!o->per_thread) {
		/* Prefault room for the stack copies now, while the target
		 * runs: the stack pointers /proc showed tell how much. */
		size_t est = 0;
		for (size_t i = 0; i < s->nthreads; i++) {
			const struct sd_thread *th = &s->threads[i];
			const struct sd_map *m = th->proc_sp ? procfs_maps_find(&t->space.maps, th->proc_sp) : NULL;
			/* Without a stack pointer from /proc, the share of
			 * what the last snapshot copied. */
			size_t w = m			       ? (size_t)(m->end - th->proc_sp) + 8192
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
	t0 = sd_now_ns();
	if (!o->per_thread) {
		struct sd_freeze fz;
		struct capture_ctx cc = {t, s, o};
		int r = ptrace_freeze_all(&fz, t->pid, o->timeout_ms, tids, ntids,
					  (o->tids || o->name_glob) ? thread_wanted : NULL, &pick,
					  capture_on_stop, &cc, err);
		free(tids);
		tids = NULL;
		if (r < 0) {
			ptrace_freeze_release(&fz);
			snapshot_free(s);
			return NULL;
		}
		for (size_t i = 0; i < fz.n; i++) {
			struct sd_tracee *tr = &fz.v[i];
			struct sd_thread *th = find_thread(s, tr->tid);
			if (!th)
				th = snapshot_add_thread(s, tr->tid); /* appeared */
			if (tr->state != SD_TRACEE_STOPPED || th->have_regs ||
			    th->status != SD_THREAD_OK)
				continue;
			if (capture_regs(th, &t->space.maps, o->max_stack) < 0)
				mark_failed(s, th, SD_THREAD_EXITED, "exited during the snapshot");
		}
		{
			struct sd_thread **batch = sd_xmalloc((s->nthreads + 1) * sizeof(*batch));
			size_t nb = 0;
			for (size_t i = 0; i < s->nthreads; i++)
				if (s->threads[i].have_regs)
					batch[nb++] = &s->threads[i];
			uint64_t m0 = sd_now_ns();
			if (o->max_stack_total)
				s->stack_cut = capture_budget(batch, nb, o->max_stack_total);
			capture_memory(t->pid, s, batch, nb, &s->stack_bytes);
			s->memcopy_us = (sd_now_ns() - m0) / 1000;
			free(batch);
		}
		ptrace_thaw_all(&fz);
		s->pause_us = (fz.end_ns - fz.start_ns) / 1000;
		s->seize_us = (fz.seized_ns - fz.start_ns) / 1000;
		s->stop_us = (fz.stopped_ns - fz.seized_ns) / 1000;
		s->detach_us = (fz.end_ns - fz.stopped_ns) / 1000;
		for (size_t i = 0; i < fz.n; i++) {
			struct sd_tracee *tr = &fz.v[i];
			struct sd_thread *th = find_thread(s, tr->tid);
			th->pause_us = tr->detach_ns > fz.start_ns ? (tr->detach_ns - fz.start_ns) / 1000 : 0;
			if (tr->group_stop && s->state != 'T' && s->state != 't')
				s->state = 'T';
			if (tr->group_stop && !th->state)
				th->state = 'T';
			if (tr->state == SD_TRACEE_GONE && th->status == SD_THREAD_OK)
				mark_failed(s, th, SD_THREAD_EXITED, "exited during the snapshot");
			else if (tr->state == SD_TRACEE_FAILED && th->status == SD_THREAD_OK) {
				char why[128];
				snprintf(why, sizeof(why), "could not be traced: %s", sd_strerror(tr->err));
				mark_failed(s, th, SD_THREAD_ERROR, why);
			}
			else if (!th->have_regs && th->status == SD_THREAD_OK)
				mark_failed(s, th, SD_THREAD_NOT_STOPPED,
					    "did not stop in time (uninterruptible sleep?)");
		}
		ptrace_freeze_release(&fz);
	} else {
		free(tids);
		tids = NULL;
		for (size_t i = 0; i < s->nthreads; i++) {
			struct sd_thread *th = &s->threads[i];
			struct sd_tracee tr = {.tid = th->tid};
			struct sd_error e1 = {0};
			uint64_t a = sd_now_ns();
			if (ptrace_freeze_one(&tr, o->timeout_ms, &e1) < 0) {
				if (e1.code == EPERM || e1.code == EBUSY) {
					sd_error_set(err, e1.code, "%s", e1.msg);
					snapshot_free(s);
					return NULL;
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
		unwind_thread(t->unw, s, th, o->max_frames);
	}
	if (!maps_fresh && t->space.maps_misses != misses) {
		/* A new thread's stack or a library loaded since the maps
		 * were read: read them and unwind again from the copy. */
		if (target_refresh(t, err) < 0) {
			snapshot_free(s);
			return NULL;
		}
		symbols_sync(t->sym);
		for (size_t i = 0; i < s->nthreads; i++) {
			struct sd_thread *th = &s->threads[i];
			th->nframes = 0;
			th->unwind_stop = NULL;
			unwind_thread(t->unw, s, th, o->max_frames);
		}
	}
	uint64_t t2 = sd_now_ns();
	s->unwind_us = (t2 - t1) / 1000;
	if (!o->no_symbols) {
		for (size_t i = 0; i < s->nthreads; i++) {
			struct sd_thread *th = &s->threads[i];
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
}

const char *target_thread_name(struct sd_target *t, pid_t tid)
{
	return cached_name(t, tid, sd_now_ns());
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
