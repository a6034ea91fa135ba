// SPDX-License-Identifier: MIT
// Ownership of snapshots: allocation, threads, frames and release.
#include "snapshot.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>

struct sd_snapshot *snapshot_new(pid_t pid)
{
	struct sd_snapshot *s = sd_xcalloc(1, sizeof(*s));
	s->pid = pid;
	s->pool = strpool_new();
	return s;
}

struct sd_frameset *frameset_new(const struct sd_frame *f, size_t n)
{
	struct sd_frameset *fs = sd_xmalloc(sizeof(*fs) + n * sizeof(*f));
	fs->refs = 1;
	fs->n = n;
	if (n)
		memcpy(fs->f, f, n * sizeof(*f));
	return fs;
}

void frameset_unref(struct sd_frameset *fs)
{
	if (fs && --fs->refs == 0)
		free(fs);
}

void snapshot_thread_drop_frames(struct sd_thread *t)
{
	if (t->frameset)
		frameset_unref(t->frameset);
	else
		free(t->frames);
	t->frameset = NULL;
	t->frames = NULL;
	t->nframes = 0;
}

void snapshot_thread_share_frames(struct sd_thread *t, struct sd_frameset *fs)
{
	fs->refs++;
	snapshot_thread_drop_frames(t);
	t->frameset = fs;
	t->frames = fs->f;
	t->nframes = fs->n;
}

/* The capacity snapshot_add_frame() assumes for N frames: a power of two,
 * at least 16. */
static size_t frames_cap(size_t n)
{
	size_t cap = 16;
	while (cap < n)
		cap *= 2;
	return cap;
}

void snapshot_thread_own_frames(struct sd_thread *t)
{
	struct sd_frameset *fs = t->frameset;
	if (!fs)
		return;
	size_t n = t->nframes; /* may have been cut below fs->n */
	t->frames = sd_xmalloc(frames_cap(n) * sizeof(*t->frames));
	if (n)
		memcpy(t->frames, fs->f, n * sizeof(*t->frames));
	t->frameset = NULL;
	frameset_unref(fs);
}

static void thread_release(struct sd_thread *t)
{
	if (!t->stack_in_arena)
		free(t->stack);
	free(t->lockmem);
	snapshot_thread_drop_frames(t);
	free(t->holds);
}

void snapshot_free(struct sd_snapshot *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nthreads; i++)
		thread_release(&s->threads[i]);
	free(s->threads);
	for (size_t i = 0; i < s->ngoroutines; i++) {
		free(s->goroutines[i].frames);
		free(s->goroutines[i].waits_on);
		free(s->goroutines[i].labels);
	}
	free(s->goroutines);
	for (size_t i = 0; i < s->ngoobjects; i++) {
		free(s->goobjects[i].waiters);
		free(s->goobjects[i].candidates);
		free(s->goobjects[i].candidate_frames);
	}
	free(s->goobjects);
	for (size_t i = 0; i < s->ntokio; i++) {
		for (size_t k = 0; k < s->tokio[i].ntasks; k++) {
			free(s->tokio[i].tasks[k].awaits);
			free(s->tokio[i].tasks[k].holds);
		}
		free(s->tokio[i].cycle_tasks);
		free(s->tokio[i].cycle_len);
		free(s->tokio[i].tasks);
		free(s->tokio[i].workers);
		free(s->tokio[i].worker_tasks);
		free(s->tokio[i].worker_ticks);
		free(s->tokio[i].worker_queued);
		free(s->tokio[i].blocking);
	}
	free(s->tokio);
	free(s->outside);
	free(s->modules);
	strpool_free(s->pool);
	if (s->arena)
		munmap(s->arena, s->arena_size);
	free(s);
}

struct sd_thread *snapshot_add_thread(struct sd_snapshot *s, pid_t tid)
{
	sd_grow(&s->threads, &s->cap, s->nthreads + 1, sizeof(*s->threads));
	struct sd_thread *t = &s->threads[s->nthreads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->syscall_nr = -1;
	return t;
}

struct sd_frame *snapshot_add_frame(struct sd_thread *t)
{
	/* frames grow by doubling; capacity is kept implicit via powers of 2 */
	if (t->frameset) {
		if (!t->nframes)
			snapshot_thread_drop_frames(t);
		else
			snapshot_thread_own_frames(t);
	}
	size_t n = t->nframes;
	if (n == 0 || (n & (n - 1)) == 0) {
		size_t cap = n ? n * 2 : 16;
		if (n < 16 && n)
			cap = 16;
		t->frames = sd_xrealloc(t->frames, cap * sizeof(*t->frames));
	}
	struct sd_frame *f = &t->frames[t->nframes++];
	memset(f, 0, sizeof(*f));
	return f;
}

void snapshot_drop_capture(struct sd_snapshot *s)
{
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *t = &s->threads[i];
		if (!t->stack_in_arena)
			free(t->stack);
		t->stack = NULL;
		t->stack_in_arena = 0;
		t->stack_len = 0;
	}
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* A fresh anonymous mapping of SIZE bytes, its pages faulted in now. From
 * 2 MiB up it is aligned to 2 MiB and asks for transparent huge pages:
 * a few faults instead of one per 4 KiB page (a page fault is dear in a
 * VM, and a thousand stacks make thousands of pages). */
static void *arena_map(size_t *sizep)
{
	const size_t huge = (size_t)2 << 20;
	size_t size = *sizep;
	if (size < huge) {
		void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		return p == MAP_FAILED ? NULL : p;
	}
	size = (size + huge - 1) & ~(huge - 1);
	uint8_t *raw = mmap(NULL, size + huge, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	uint8_t *p = (uint8_t *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	if ((size_t)(p - raw) < huge)
		munmap(p + size, huge - (size_t)(p - raw));
	madvise(p, size, MADV_HUGEPAGE); /* a hint: refused is fine */
	if (madvise(p, size, MADV_POPULATE_WRITE) != 0)
		for (size_t off = 0; off < size; off += 4096)
			p[off] = 0; /* before Linux 5.14 */
	*sizep = size;
	return p;
}

void snapshot_arena_reserve(struct sd_snapshot *s, size_t size)
{
	if (s->arena || !size)
		return;
	size = (size + 4095) & ~(size_t)4095;
	void *p = arena_map(&size);
	if (!p)
		return;
	s->arena = p;
	s->arena_size = size;
	s->arena_used = 0;
}

void snapshot_arena_adopt(struct sd_snapshot *s, void *arena, size_t size)
{
	if (s->arena)
		munmap(s->arena, s->arena_size);
	s->arena = arena;
	s->arena_size = size;
	s->arena_used = 0;
}

size_t snapshot_arena_release(struct sd_snapshot *s, void **arena)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].stack_in_arena) {
			*arena = NULL;
			return 0; /* still in use */
		}
	size_t size = s->arena ? s->arena_size : 0;
	*arena = s->arena;
	s->arena = NULL;
	s->arena_size = s->arena_used = 0;
	return size;
}

void snapshot_stack_alloc(struct sd_snapshot *s, struct sd_thread *t, size_t len)
{
	size_t need = (len + 15) & ~(size_t)15;
	if (s->arena && s->arena_size - s->arena_used >= need) {
		t->stack = (uint8_t *)s->arena + s->arena_used;
		t->stack_in_arena = 1;
		s->arena_used += need;
		return;
	}
	t->stack = sd_xmalloc(len);
	t->stack_in_arena = 0;
}

uint64_t snapshot_stack_hash(const struct sd_thread *th)
{
	if (!th || th->status != SD_THREAD_OK || !th->nframes)
		return 0;
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < th->nframes; i++) {
		const struct sd_frame *f = &th->frames[i];
		if (f->function) {
			h = sd_hash(f->function, strlen(f->function), h);
		} else {
			if (f->module)
				h = sd_hash(f->module, strlen(f->module), h);
			h = sd_hash(&f->offset, sizeof(f->offset), h);
		}
		h = sd_hash("|", 1, h);
	}
	return h ? h : 1;
}

static const char *const wait_names[SD_WAIT__COUNT] = {
	[SD_WAIT_NONE] = "none",
	[SD_WAIT_RUNNING] = "running",
	[SD_WAIT_RUNNABLE] = "runnable",
	[SD_WAIT_SYSCALL] = "syscall",
	[SD_WAIT_DISK] = "disk",
	[SD_WAIT_STOPPED] = "stopped",
	[SD_WAIT_ZOMBIE] = "zombie",
	[SD_WAIT_MUTEX] = "mutex",
	[SD_WAIT_RWLOCK_READ] = "rwlock-read",
	[SD_WAIT_RWLOCK_WRITE] = "rwlock-write",
	[SD_WAIT_CONDVAR] = "condvar",
	[SD_WAIT_SEMAPHORE] = "semaphore",
	[SD_WAIT_JOIN] = "join",
	[SD_WAIT_RUST_MUTEX] = "rust-mutex",
	[SD_WAIT_RUST_RWLOCK] = "rust-rwlock",
	[SD_WAIT_RUST_CONDVAR] = "rust-condvar",
	[SD_WAIT_IDLE] = "runtime-idle",
	[SD_WAIT_MONITOR] = "java-monitor",
	[SD_WAIT_FUTEX] = "futex",
};

const char *sd_wait_kind_name(enum sd_wait_kind k)
{
	return (unsigned)k < SD_WAIT__COUNT ? wait_names[k] : "unknown";
}

const char *sd_evidence_name(enum sd_evidence e)
{
	return e == SD_EVIDENCE_MEMORY ? "memory" : e == SD_EVIDENCE_STACK ? "stack" : NULL;
}

enum sd_wait_kind sd_wait_kind_parse(const char *name)
{
	for (int i = 0; i < SD_WAIT__COUNT; i++)
		if (name && !strcmp(wait_names[i], name))
			return (enum sd_wait_kind)i;
	return SD_WAIT_NONE;
}

static const char *const go_status_names[] = {
    [SD_GO_IDLE] = "idle",	   [SD_GO_RUNNABLE] = "runnable",   [SD_GO_RUNNING] = "running",
    [SD_GO_SYSCALL] = "syscall",   [SD_GO_WAITING] = "waiting",	    [SD_GO_PREEMPTED] = "preempted",
    [SD_GO_COPYSTACK] = "copystack",
};
#define NGO_STATUS (sizeof(go_status_names) / sizeof(go_status_names[0]))

static int cmp_goindex(const void *a, const void *b)
{
	const struct sd_goindex *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

struct sd_goindex *sd_goindex_new(const struct sd_snapshot *s)
{
	struct sd_goindex *ix = sd_xmalloc((s->ngoroutines + 1) * sizeof(*ix));
	for (size_t i = 0; i < s->ngoroutines; i++)
		ix[i] = (struct sd_goindex){s->goroutines[i].id, i};
	sd_sort(ix, s->ngoroutines, sizeof(*ix), cmp_goindex);
	return ix;
}

long sd_goindex_find(const struct sd_goindex *ix, size_t n, uint64_t id)
{
	struct sd_goindex key = {id, 0};
	const struct sd_goindex *e = bsearch(&key, ix, n, sizeof(key), cmp_goindex);
	return e ? (long)e->idx : -1;
}

const char *sd_go_status_name(enum sd_go_status st)
{
	return (unsigned)st < NGO_STATUS ? go_status_names[st] : "?";
}

int sd_go_status_parse(const char *name)
{
	for (size_t i = 0; name && i < NGO_STATUS; i++)
		if (!strcmp(go_status_names[i], name))
			return (int)i;
	return -1;
}

static const char *const capture_kinds[] = {"frozen", "asleep", "reused", "kernel"};

const char *snapshot_capture_kind_name(enum sd_capture_kind k)
{
	return (unsigned)k < sizeof(capture_kinds) / sizeof(capture_kinds[0]) ? capture_kinds[k]
										: "frozen";
}

enum sd_capture_kind snapshot_capture_kind_parse(const char *name)
{
	for (size_t i = 0; name && i < sizeof(capture_kinds) / sizeof(capture_kinds[0]); i++)
		if (!strcmp(name, capture_kinds[i]))
			return (enum sd_capture_kind)i;
	return SD_CAPTURE_FROZEN;
}

const struct sd_thread *snapshot_find_thread(const struct sd_snapshot *s, pid_t tid)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	return NULL;
}

int snapshot_lockmem_read(struct sd_snapshot *s, const struct sd_thread *th, uint64_t addr,
			  void *buf, size_t len)
{
	/* TH's own copy first, else any other thread's copy of the same words
	 * (all taken in the same freeze). */
	size_t own = (size_t)(th - s->threads);
	for (int pass = 0; pass < 2; pass++) {
		size_t n = pass ? s->nthreads : 1;
		for (size_t i = 0; i < n; i++) {
			size_t ti = pass ? i : own;
			if ((pass && ti == own) || ti >= s->nthreads)
				continue;
			struct sd_thread *o = &s->threads[ti];
			for (size_t k = 0; k < o->nlockmem; k++) {
				struct sd_lockmem *lm = &o->lockmem[k];
				if (addr >= lm->addr && addr + len <= lm->addr + lm->len &&
				    addr + len > addr) {
					size_t at = (size_t)(addr - lm->addr);
					memcpy(buf, lm->bytes + at, len);
					/* What is saved of the words (snapio.c). */
					for (size_t b = at; b < at + len; b++)
						lm->used[b / 64] |= 1ull << (b % 64);
					return 1;
				}
			}
		}
	}
	return 0;
}
