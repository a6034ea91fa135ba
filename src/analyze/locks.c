// SPDX-License-Identifier: MIT
// Lock analysis over the futex waits of a snapshot: classify each wait from
// the futex call (address, operation, expected value) and the lock memory
// read while frozen, name owners, then build the wait-for graph and find
// its cycles. Frame names are only a second opinion, so that it works
// without libc debug info. Layouts are glibc's on x86_64 (2.26 and later;
// see the LOCKS.md notes), Rust std's futex locks (1.62 and later).
#include "locks.h"
#include "locks-int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols.h"

/* futex(2) operations */
#define FUTEX_WAIT 0
#define FUTEX_LOCK_PI 6
#define FUTEX_TRYLOCK_PI 8
#define FUTEX_WAIT_BITSET 9
#define FUTEX_WAIT_REQUEUE_PI 11
#define FUTEX_LOCK_PI2 13
#define FUTEX_CMD_MASK 0x7fu
#define FUTEX_PRIVATE 0x80u
#define FUTEX_TID_MASK 0x3fffffffu
#define FUTEX_OWNER_DIED 0x40000000u
#define FUTEX_WAITERS 0x80000000u

/* pthread_mutex_t */
#define MX_COUNT 4
#define MX_OWNER 8
#define MX_KIND 16
#define MX_ROBUST 0x10u
#define MX_PI 0x20u
#define MX_PP 0x40u
#define MX_PSHARED 0x80u
#define MX_KNOWN_BITS (0x3u | MX_ROBUST | MX_PI | MX_PP | MX_PSHARED | 0x300u)
#define MX_INCONSISTENT 0x7fffffff
#define MX_NOTRECOVERABLE 0x7ffffffe

/* pthread_rwlock_t */
#define RW_WRPHASE_FUTEX 8
#define RW_WRITERS_FUTEX 12
#define RW_PAD3 16
#define RW_CUR_WRITER 24
#define RW_SHARED 28
#define RW_PAD2 40
#define RW_FLAGS 48
#define RW_R_WRPHASE 1u
#define RW_R_WRLOCKED 2u
#define RW_R_RWAITING 4u
#define RW_R_SHIFT 3

/* pthread_cond_t: the waiter count in __wrefs (above 3 flag bits) */
#define CV_WREFS_SHIFT 3
#define CV_WREFS_PSHARED 1u

/* Rust std futex RwLock state */
#define RUST_RW_MASK 0x3fffffffu
#define RUST_RW_READERS_WAITING 0x40000000u
#define RUST_RW_WRITERS_WAITING 0x80000000u

#define PID_MAX_LIMIT 4194304

int locks_is_wait(enum sd_wait_kind k)
{
	return k >= SD_WAIT_MUTEX && k <= SD_WAIT_FUTEX;
}

int locks_is_idle(enum sd_wait_kind k)
{
	return k == SD_WAIT_CONDVAR || k == SD_WAIT_RUST_CONDVAR || k == SD_WAIT_IDLE;
}

const char *locks_kind_name(enum sd_wait_kind k)
{
	if (k == SD_WAIT_RWLOCK_READ || k == SD_WAIT_RWLOCK_WRITE)
		return "rwlock";
	return sd_wait_kind_name(k);
}

static int cmp_tid_index(const void *a, const void *b)
{
	const struct tid_index *x = a, *y = b;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

int locks_cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

long locks_index_find(const struct tid_index *ix, size_t n, pid_t tid)
{
	struct tid_index key = {tid, 0};
	const struct tid_index *r = bsearch(&key, ix, n, sizeof(*ix), cmp_tid_index);
	return r ? (long)r->idx : -1;
}

/* What the classifier knows besides the thread: the snapshot, and when
 * live, the process (for threads outside the snapshot) and a map from the
 * TIDs the target sees in its PID namespace to ours. */
struct ctx {
	struct sd_snapshot *s;
	pid_t pid;          /* 0: no /proc look-ups (loaded snapshot) */
	pid_t *ns_tid;      /* parallel to s->threads, or NULL */
	struct tid_index *by_tid, *by_ns_tid; /* sorted, for thousands of threads */
	int no_lockmem;     /* no thread has lock memory (perf samples): every
			     * read misses, without a scan of every thread */
};

struct tid_index *locks_tid_index_new(const struct sd_snapshot *s, const pid_t *keys)
{
	struct tid_index *ix = sd_xmalloc((s->nthreads ? s->nthreads : 1) * sizeof(*ix));
	for (size_t i = 0; i < s->nthreads; i++) {
		ix[i].tid = keys ? keys[i] : s->threads[i].tid;
		ix[i].idx = i;
	}
	sd_sort(ix, s->nthreads, sizeof(*ix), cmp_tid_index);
	return ix;
}

static void ctx_init(struct ctx *c, struct sd_snapshot *s, pid_t pid, pid_t *ns_tid)
{
	c->s = s;
	c->pid = pid;
	c->ns_tid = ns_tid;
	c->by_tid = locks_tid_index_new(s, NULL);
	c->by_ns_tid = ns_tid ? locks_tid_index_new(s, ns_tid) : NULL;
	c->no_lockmem = 1;
	for (size_t i = 0; i < s->nthreads && c->no_lockmem; i++)
		c->no_lockmem = !s->threads[i].nlockmem;
}

static void ctx_release(struct ctx *c)
{
	free(c->by_tid);
	free(c->by_ns_tid);
	free(c->ns_tid);
}

static const struct sd_thread *snap_thread(const struct ctx *c, pid_t tid)
{
	long i = locks_index_find(c->by_tid, c->s->nthreads, tid);
	return i >= 0 ? &c->s->threads[i] : NULL;
}

static int tid_plausible(uint64_t v)
{
	return v > 0 && v <= PID_MAX_LIMIT;
}

/* The TID (as we see it) of the thread the target calls V, or 0. */
static pid_t host_tid(const struct ctx *c, uint64_t v)
{
	if (!tid_plausible(v))
		return 0;
	if (c->ns_tid) {
		long i = locks_index_find(c->by_ns_tid, c->s->nthreads, (pid_t)v);
		return i >= 0 ? c->s->threads[i].tid : 0;
	}
	return (pid_t)v;
}

/* Is V (target's view) a thread of the process: in the snapshot, or, when
 * live and the snapshot was a selection, in /proc? */
static int tid_exists(const struct ctx *c, uint64_t v)
{
	pid_t h = host_tid(c, v);
	if (!h)
		return 0;
	if (snap_thread(c, h))
		return 1;
	if (!c->pid || c->ns_tid)
		return 0;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)c->pid, (int)h);
	struct stat st;
	return stat(path, &st) == 0;
}

/* Read lock memory captured while frozen (snapshot_lockmem_read), without
 * a scan of every thread when none has any. */
static int mem_read(const struct ctx *c, const struct sd_thread *th, uint64_t addr, void *buf,
		    size_t len)
{
	return !c->no_lockmem && snapshot_lockmem_read(c->s, th, addr, buf, len);
}

static int rd32(const struct ctx *c, const struct sd_thread *th, uint64_t addr, uint32_t *v)
{
	return mem_read(c, th, addr, v, sizeof(*v));
}

static int rd64(const struct ctx *c, const struct sd_thread *th, uint64_t addr, uint64_t *v)
{
	return mem_read(c, th, addr, v, sizeof(*v));
}

/* The futex call a thread sits in. */
struct fcall {
	uint64_t uaddr;
	unsigned op, cmd;
	uint32_t val;
	int priv;
	int have_word;
	uint32_t word; /* the futex word, read while frozen */
};

enum strength { EV_NONE = 0, EV_WEAK, EV_STRONG };

static const char *intern(struct ctx *c, const char *str)
{
	return strpool_intern(c->s->pool, str);
}

static void set_kind(struct sd_wait *w, enum sd_wait_kind k, uint64_t address)
{
	w->kind = k;
	w->address = address;
}

static void set_owner(struct ctx *c, struct sd_wait *w, uint64_t v)
{
	pid_t h = host_tid(c, v);
	if (h) {
		w->owner = h;
		w->owner_known = 1;
	} else if (tid_plausible(v) && !c->ns_tid) {
		w->owner = (pid_t)v;
		w->owner_known = 1;
	}
}

/* ---- frames: the second opinion ---- */

struct frame_rule {
	const char *needle;
	enum sd_wait_kind kind;
	const char *subkind;
	const char *note; /* for SD_WAIT_FUTEX: what the wait is */
};

/* Matched against function names from the innermost frame outwards; the
 * first frame that matches any rule decides. Exported libc names
 * (pthread_mutex_lock, pthread_cond_wait...) resolve even without libc
 * debug info; internal ones only with it. */
static const struct frame_rule frame_rules[] = {
	{"__pthread_mutex_cond_lock", SD_WAIT_MUTEX, NULL, NULL},
	{"__lll_lock_wait", SD_WAIT_MUTEX, NULL, NULL},
	{"__futex_clocklock", SD_WAIT_MUTEX, NULL, NULL},
	{"__futex_lock_pi", SD_WAIT_MUTEX, NULL, NULL},
	{"pthread_mutex_", SD_WAIT_MUTEX, NULL, NULL},
	{"pthread_cond_", SD_WAIT_CONDVAR, NULL, NULL},
	{"condition_variable", SD_WAIT_CONDVAR, NULL, NULL},
	{"rwlock_rdlock", SD_WAIT_RWLOCK_READ, NULL, NULL},
	{"rwlock_timedrdlock", SD_WAIT_RWLOCK_READ, NULL, NULL},
	{"rwlock_clockrdlock", SD_WAIT_RWLOCK_READ, NULL, NULL},
	{"rwlock_wrlock", SD_WAIT_RWLOCK_WRITE, NULL, NULL},
	{"rwlock_timedwrlock", SD_WAIT_RWLOCK_WRITE, NULL, NULL},
	{"rwlock_clockwrlock", SD_WAIT_RWLOCK_WRITE, NULL, NULL},
	{"sem_wait", SD_WAIT_SEMAPHORE, NULL, NULL},
	{"sem_timedwait", SD_WAIT_SEMAPHORE, NULL, NULL},
	{"sem_clockwait", SD_WAIT_SEMAPHORE, NULL, NULL},
	{"__atomic_semaphore", SD_WAIT_SEMAPHORE, NULL, NULL},
	{"counting_semaphore", SD_WAIT_SEMAPHORE, NULL, NULL},
	{"pthread_join", SD_WAIT_JOIN, NULL, NULL},
	{"pthread_timedjoin", SD_WAIT_JOIN, NULL, NULL},
	{"pthread_clockjoin", SD_WAIT_JOIN, NULL, NULL},
	{"__pthread_clockjoin_ex", SD_WAIT_JOIN, NULL, NULL},
	{"std::thread::join", SD_WAIT_JOIN, NULL, NULL},
	{"JoinInner", SD_WAIT_JOIN, NULL, NULL},
	{"mutex::futex::Mutex", SD_WAIT_RUST_MUTEX, NULL, NULL},
	{"futex_mutex", SD_WAIT_RUST_MUTEX, NULL, NULL},
	{"RwLock>::read_contended", SD_WAIT_RUST_RWLOCK, "read", NULL},
	{"RwLock::read_contended", SD_WAIT_RUST_RWLOCK, "read", NULL},
	{"RwLock>::write_contended", SD_WAIT_RUST_RWLOCK, "write", NULL},
	{"RwLock::write_contended", SD_WAIT_RUST_RWLOCK, "write", NULL},
	{"condvar::futex::Condvar", SD_WAIT_RUST_CONDVAR, NULL, NULL},
	{"futex_condvar", SD_WAIT_RUST_CONDVAR, NULL, NULL},
	{"pthread_barrier_wait", SD_WAIT_FUTEX, "barrier", "waiting at a pthread barrier"},
	{"pthread_once", SD_WAIT_FUTEX, "once", "waiting for pthread_once to finish"},
	{"call_once", SD_WAIT_FUTEX, "once", "waiting for a call_once to finish"},
	{"parking_lot", SD_WAIT_FUTEX, "parking_lot", "parking_lot: the lock is in the stack"},
	{"thread::park", SD_WAIT_FUTEX, "park", "parked thread (std::thread::park)"},
};

#define FRAMES_LOOKED_AT 12

/* Language runtimes that wait on futexes of their own, recognised from
 * their functions anywhere in the frames looked at, before the libc
 * rules: HotSpot parks a thread entering a monitor on its own event (a
 * pthread condvar), and its idle workers on semaphores; Go's idle Ms and
 * sysmon sleep on notes. None of these is contention on a lock whose
 * memory we can read. */
static const struct frame_rule runtime_rules[] = {
	{"ObjectMonitor::EnterI", SD_WAIT_MONITOR, "jvm",
	 "entering a synchronized block; the monitor and its owner are not read"},
	{"ObjectMonitor::ReenterI", SD_WAIT_MONITOR, "jvm",
	 "re-entering a synchronized block after wait(); the monitor and its owner are "
	 "not read"},
	{"PosixSemaphore::wait", SD_WAIT_IDLE, "jvm", "a JVM thread idle on its semaphore"},
	{"runtime.notesleep", SD_WAIT_IDLE, "go", "Go runtime: a thread with no work, parked"},
	{"runtime.notetsleep", SD_WAIT_IDLE, "go", "Go runtime: a timed sleep (sysmon, timers)"},
	{"runtime.lock2", SD_WAIT_FUTEX, "go-runtime-lock", "a Go runtime lock (runtime.lock)"},
};

static int runtime_kind(const struct sd_thread *th, const struct frame_rule **rule)
{
	for (size_t i = 0; i < th->nframes && i < FRAMES_LOOKED_AT; i++) {
		const char *f = th->frames[i].function;
		if (!f)
			continue;
		for (size_t r = 0; r < sizeof(runtime_rules) / sizeof(runtime_rules[0]); r++)
			if (strstr(f, runtime_rules[r].needle)) {
				*rule = &runtime_rules[r];
				return 1;
			}
	}
	return 0;
}

static enum sd_wait_kind frames_kind(const struct sd_thread *th, const char **subkind,
				     const char **note)
{
	*subkind = *note = NULL;
	for (size_t i = 0; i < th->nframes && i < FRAMES_LOOKED_AT; i++) {
		const char *f = th->frames[i].function;
		if (!f)
			continue;
		for (size_t r = 0; r < sizeof(frame_rules) / sizeof(frame_rules[0]); r++)
			if (strstr(f, frame_rules[r].needle)) {
				*subkind = frame_rules[r].subkind;
				*note = frame_rules[r].note;
				return frame_rules[r].kind;
			}
	}
	return SD_WAIT_NONE;
}

/* Did the futex go through libc's generic syscall() wrapper? glibc's own
 * locks never do; Rust std and C++ atomic waits do. */
static int via_syscall_wrapper(const struct sd_thread *th)
{
	return th->nframes && th->frames[0].function && !strcmp(th->frames[0].function, "syscall");
}

/* ---- pthread mutexes ---- */

static const char *mutex_subkind(struct ctx *c, uint32_t kind, int timed)
{
	static const char *const types[] = {"normal", "recursive", "errorcheck", "adaptive"};
	char buf[64];
	snprintf(buf, sizeof(buf), "%s%s%s%s%s", types[kind & 3], kind & MX_ROBUST ? ",robust" : "",
		 kind & MX_PI ? ",pi" : "", kind & MX_PSHARED ? ",pshared" : "",
		 timed ? ",timed" : "");
	return intern(c, buf);
}

static int mutex_kind_valid(uint32_t kind)
{
	return !(kind & ~MX_KNOWN_BITS) && !((kind & MX_PI) && (kind & MX_PP));
}

/* The owner TID field says something: a thread, or that it died. */
static void mutex_owner_note(struct ctx *c, struct sd_wait *w, int32_t owner)
{
	if (owner == MX_INCONSISTENT) {
		w->note = intern(c, "the owner died holding it (robust mutex, inconsistent)");
	} else if (owner == MX_NOTRECOVERABLE) {
		w->note = intern(c, "not recoverable (its owner died holding it)");
	} else if (owner > 0) {
		set_owner(c, w, (uint64_t)owner);
	} else {
		w->note = intern(c, "owner not recorded yet (the lock is changing hands)");
	}
}

/* A waiter on a normal-protocol mutex expects 2 (locked, with waiters).
 * NEED_OWNER: accept only when __owner names a thread of the process. */
static enum strength try_mutex(struct ctx *c, struct sd_thread *th, const struct fcall *f,
			       int need_owner)
{
	uint32_t count, owner, kind;
	if (f->val != 2 || !f->have_word || f->word > 2)
		return EV_NONE;
	if (!rd32(c, th, f->uaddr + MX_COUNT, &count) ||
	    !rd32(c, th, f->uaddr + MX_OWNER, &owner) || !rd32(c, th, f->uaddr + MX_KIND, &kind))
		return EV_NONE;
	if (!mutex_kind_valid(kind) || (kind & (MX_ROBUST | MX_PI | MX_PP)) || count > (1u << 24))
		return EV_NONE;
	/* The futex is private exactly when the mutex is not pshared. */
	if (f->priv == !!(kind & MX_PSHARED))
		return EV_NONE;
	if ((kind & 3) != 1 && count != 0)
		return EV_NONE;
	int known = tid_exists(c, owner);
	if (need_owner && !known)
		return EV_NONE;
	struct sd_wait *w = &th->wait;
	set_kind(w, SD_WAIT_MUTEX, f->uaddr);
	w->subkind = mutex_subkind(c, kind, f->cmd == FUTEX_WAIT_BITSET);
	mutex_owner_note(c, w, (int32_t)owner);
	if (w->owner_known && !known)
		w->note = intern(c, "the owner is not a thread of this process: it exited "
				    "without unlocking");
	return known ? EV_STRONG : EV_WEAK;
}

/* glibc's internal low-level locks (malloc arenas, stdio, the loader) use
 * the same 0/1/2 protocol without the rest of a pthread mutex. stdio's
 * _IO_lock_t records its owner as a thread pointer (= fs_base) at +8. */
static enum strength try_lll(struct ctx *c, struct sd_thread *th, const struct fcall *f)
{
	if (f->val != 2 || !f->priv || f->cmd != FUTEX_WAIT || (f->have_word && f->word > 2))
		return EV_NONE;
	struct sd_wait *w = &th->wait;
	set_kind(w, SD_WAIT_MUTEX, f->uaddr);
	w->subkind = intern(c, "lll");
	uint64_t self;
	if (rd64(c, th, f->uaddr + 8, &self) && self) {
		for (size_t i = 0; i < c->s->nthreads; i++) {
			const struct sd_thread *o = &c->s->threads[i];
			if (o->have_regs && o->regs.fs_base == self) {
				w->owner = o->tid;
				w->owner_known = 1;
				return EV_WEAK;
			}
		}
	}
	w->note = intern(c, "a glibc internal lock: no owner recorded");
	return EV_WEAK;
}

/* Robust mutexes: the futex word is the owner's TID | FUTEX_WAITERS, and
 * the waiter expects exactly that value. */
static enum strength try_robust(struct ctx *c, struct sd_thread *th, const struct fcall *f)
{
	if (!(f->val & FUTEX_WAITERS) || !tid_plausible(f->val & FUTEX_TID_MASK))
		return EV_NONE;
	if (f->have_word && (f->word & FUTEX_TID_MASK) != (f->val & FUTEX_TID_MASK))
		return EV_NONE;
	uint32_t kind = 0;
	int have_kind = rd32(c, th, f->uaddr + MX_KIND, &kind);
	if (have_kind && (!mutex_kind_valid(kind) || !(kind & MX_ROBUST)))
		return EV_NONE;
	if (!have_kind && !tid_exists(c, f->val & FUTEX_TID_MASK))
		return EV_NONE;
	struct sd_wait *w = &th->wait;
	set_kind(w, SD_WAIT_MUTEX, f->uaddr);
	w->subkind = have_kind ? mutex_subkind(c, kind, 0) : intern(c, "robust");
	set_owner(c, w, f->val & FUTEX_TID_MASK);
	if (f->val & FUTEX_OWNER_DIED)
		w->note = intern(c, "the owner died holding it");
	else if (!tid_exists(c, f->val & FUTEX_TID_MASK))
		w->note = intern(c, "the owner is not a thread of this process");
	return EV_STRONG;
}

/* Priority-inheritance mutexes: FUTEX_LOCK_PI; the word holds the owner. */
static enum strength try_pi(struct ctx *c, struct sd_thread *th, const struct fcall *f)
{
	struct sd_wait *w = &th->wait;
	set_kind(w, SD_WAIT_MUTEX, f->uaddr);
	uint32_t kind;
	if (rd32(c, th, f->uaddr + MX_KIND, &kind) && mutex_kind_valid(kind) && (kind & MX_PI))
		w->subkind =
		    mutex_subkind(c, kind, f->cmd == FUTEX_LOCK_PI2 || th->syscall_args[3]);
	else
		w->subkind = intern(c, "pi");
	if (!f->have_word) {
		w->note = intern(c, "owner unknown (lock word not captured)");
		return EV_STRONG;
	}
	uint32_t tid = f->word & FUTEX_TID_MASK;
	if (tid) {
		set_owner(c, w, tid);
		if (f->word & FUTEX_OWNER_DIED)
			w->note = intern(c, "the owner died holding it");
		else if (!tid_exists(c, tid))
			w->note = intern(c, "the owner is not a thread of this process");
	} else {
		w->note = intern(c, "owner not recorded yet (the lock is changing hands)");
	}
	return EV_STRONG;
}

/* ---- pthread_join ---- */

/* The joiner waits on the joined thread's tid field (in its struct
 * pthread, just above its fs_base), a shared futex, expecting its TID;
 * the kernel clears it and wakes the joiner when that thread exits. */
static enum strength try_join(struct ctx *c, struct sd_thread *th, const struct fcall *f)
{
	if (f->priv || (f->val & ~FUTEX_TID_MASK) || !tid_plausible(f->val))
		return EV_NONE;
	if (f->have_word && f->word != f->val)
		return EV_NONE;
	pid_t target = host_tid(c, f->val);
	const struct sd_thread *o = target ? snap_thread(c, target) : NULL;
	/* With the joined thread's registers, its TCB must hold the word. */
	if (o && o->have_regs && o->regs.fs_base &&
	    (f->uaddr < o->regs.fs_base || f->uaddr >= o->regs.fs_base + 4096))
		return EV_NONE;
	if (!o && !tid_exists(c, f->val))
		return EV_NONE;
	struct sd_wait *w = &th->wait;
	set_kind(w, SD_WAIT_JOIN, f->uaddr);
	set_owner(c, w, f->val);
	if (!o)
		w->note = intern(c, "the joined thread is not in this snapshot");
	return EV_STRONG;
}

/* ---- pthread rwlocks ---- */

struct rwlock_words {
	uint32_t readers, wrphase, writers, pad3, pad4, shared, flags, cur_writer;
	uint64_t pad2;
};

static int rwlock_read(struct ctx *c, struct sd_thread *th, uint64_t b, struct rwlock_words *r)
{
	return rd32(c, th, b, &r->readers) && rd32(c, th, b + RW_WRPHASE_FUTEX, &r->wrphase) &&
	       rd32(c, th, b + RW_WRITERS_FUTEX, &r->writers) &&
	       rd32(c, th, b + RW_PAD3, &r->pad3) &&
	       rd32(c, th, b + RW_PAD3 + 4, &r->pad4) &&
	       rd32(c, th, b + RW_CUR_WRITER, &r->cur_writer) &&
	       rd32(c, th, b + RW_SHARED, &r->shared) && rd64(c, th, b + RW_PAD2, &r->pad2) &&
	       rd32(c, th, b + RW_FLAGS, &r->flags);
}

/* Words of a pthread_rwlock_t that are never written stay 0; __shared and
 * __flags have few values; the futex is private unless shared. */
static int rwlock_plausible(const struct rwlock_words *r, const struct fcall *f)
{
	return r->pad3 == 0 && r->pad4 == 0 && r->pad2 == 0 && r->flags <= 2 && r->shared <= 1 &&
	       f->priv == !r->shared && (r->readers >> RW_R_SHIFT) < (1u << 24);
}

static void rwlock_writer_owner(struct ctx *c, struct sd_wait *w, const struct rwlock_words *r)
{
	if (tid_plausible(r->cur_writer))
		set_owner(c, w, r->cur_writer);
	else
		w->note = intern(c, "write-locked, writer not recorded yet");
}

static void rwlock_readers_note(struct ctx *c, struct sd_wait *w, const struct rwlock_words *r,
				const char *what)
{
	char buf[160];
	unsigned n = r->readers >> RW_R_SHIFT;
	snprintf(buf, sizeof(buf), "%sheld for reading by %u thread%s; readers are not recorded",
		 what, n, n == 1 ? "" : "s");
	w->note = intern(c, buf);
}

static enum strength try_rwlock(struct ctx *c, struct sd_thread *th, const struct fcall *f)
{
	struct rwlock_words r;
	struct sd_wait *w = &th->wait;
	uint64_t b;

	/* On __wrphase_futex: 3 (write phase | used) = a reader waits for
	 * the writer; 2 (read phase | used) = a writer waits for readers. */
	b = f->uaddr - RW_WRPHASE_FUTEX;
	if ((f->val == 2 || f->val == 3) && rwlock_read(c, th, b, &r) && rwlock_plausible(&r, f)) {
		if (f->val == 3 && (r.readers & RW_R_WRPHASE)) {
			set_kind(w, SD_WAIT_RWLOCK_READ, b);
			if (r.readers & RW_R_WRLOCKED)
				rwlock_writer_owner(c, w, &r);
			else
				w->note = intern(c, "the write phase is ending");
			return EV_STRONG;
		}
		if (f->val == 2 && !(r.readers & RW_R_WRPHASE) && (r.readers & RW_R_WRLOCKED)) {
			set_kind(w, SD_WAIT_RWLOCK_WRITE, b);
			rwlock_readers_note(c, w, &r, "");
			return EV_STRONG;
		}
	}
	/* On __writers_futex: 3 = a writer waits for another writer. */
	b = f->uaddr - RW_WRITERS_FUTEX;
	if (f->val == 3 && rwlock_read(c, th, b, &r) && rwlock_plausible(&r, f) &&
	    (r.readers & RW_R_WRLOCKED)) {
		set_kind(w, SD_WAIT_RWLOCK_WRITE, b);
		if (r.readers & RW_R_WRPHASE)
			rwlock_writer_owner(c, w, &r);
		else
			rwlock_readers_note(c, w, &r, "");
		return EV_STRONG;
	}
	/* On __readers itself: a reader queued behind a waiting writer
	 * (writer-preferring kinds), expecting RWAITING set. */
	b = f->uaddr;
	if ((f->val & RW_R_RWAITING) && rwlock_read(c, th, b, &r) && rwlock_plausible(&r, f) &&
	    (r.readers & RW_R_WRLOCKED)) {
		set_kind(w, SD_WAIT_RWLOCK_READ, b);
		if (r.readers & RW_R_WRPHASE)
			rwlock_writer_owner(c, w, &r);
		else
			rwlock_readers_note(c, w, &r, "queued behind a waiting writer; ");
		return EV_STRONG;
	}
	return EV_NONE;
}

/* ---- condvars and semaphores: waits with no owner ---- */

/* A condvar waiter sleeps on __g_signals[g]. __wrefs (waiters << 3 |
 * flags) sits 4 bytes below __g_signals[0] in every layout since 2.25;
 * glibc up to 2.40 also counts the group's waiters in __g_refs[g], 24
 * bytes below, and starts the condvar 40 bytes below __g_signals[0]
 * (32 from 2.41, which dropped __g_refs). Flags: bit 0 process-shared,
 * which must agree with the futex being private or not; bit 1 the
 * condvar's clock (MONOTONIC), which says nothing about the futex call:
 * pthread_cond_wait always passes REALTIME, pthread_cond_clockwait the
 * caller's clock, pthread_cond_timedwait the condvar's. */
static enum strength try_condvar(struct ctx *c, struct sd_thread *th, const struct fcall *f,
				 int strong_only)
{
	for (int g = 0; g < 2; g++) {
		uint32_t wrefs, grefs;
		if (!rd32(c, th, f->uaddr - 4 - 4 * (uint64_t)g, &wrefs))
			continue;
		uint32_t waiters = wrefs >> CV_WREFS_SHIFT;
		if (waiters < 1 || waiters > (1u << 24))
			continue;
		if (!!(wrefs & CV_WREFS_PSHARED) == f->priv)
			continue;
		int old_layout = rd32(c, th, f->uaddr - 24, &grefs) && grefs >= 2 &&
				 (grefs >> 1) <= waiters;
		if (strong_only && !old_layout)
			continue;
		struct sd_wait *w = &th->wait;
		set_kind(w, SD_WAIT_CONDVAR, f->uaddr - (old_layout ? 40 : 32) - 4 * (uint64_t)g);
		w->note = intern(c, "waiting for a signal: no owner");
		return old_layout ? EV_STRONG : EV_WEAK;
	}
	return EV_NONE;
}

/* sem_t (64-bit atomics): value at +0 (the futex word, 0 while anyone
 * waits), waiter count at +4, private flag at +8 (0 private, 128 shared),
 * padding at +12. */
static enum strength try_sem(struct ctx *c, struct sd_thread *th, const struct fcall *f)
{
	uint32_t nwaiters, priv, pad;
	if (f->val != 0 || (f->have_word && f->word != 0))
		return EV_NONE;
	if (!rd32(c, th, f->uaddr + 4, &nwaiters) || !rd32(c, th, f->uaddr + 8, &priv) ||
	    !rd32(c, th, f->uaddr + 12, &pad))
		return EV_NONE;
	if (nwaiters < 1 || nwaiters > (1u << 24) || pad || (priv != 0 && priv != 128) ||
	    f->priv != (priv == 0))
		return EV_NONE;
	struct sd_wait *w = &th->wait;
	set_kind(w, SD_WAIT_SEMAPHORE, f->uaddr);
	w->note = intern(c, "its count is 0; a semaphore has no owner");
	return EV_WEAK;
}

/* ---- Rust std ---- */

/* Rust std's futex locks wait with FUTEX_WAIT_BITSET|PRIVATE through
 * libc's syscall(): a Mutex expects 2 on its word (0 free, 1 locked, 2
 * contended); an RwLock reader expects the state with READERS_WAITING, a
 * writer waits on writer_notify just above the state. No owner anywhere. */
static enum strength try_rust(struct ctx *c, struct sd_thread *th, const struct fcall *f,
			      enum sd_wait_kind fk, const char *fsub)
{
	if (!f->priv || f->cmd != FUTEX_WAIT_BITSET)
		return EV_NONE;
	int rusty = fk == SD_WAIT_RUST_MUTEX || fk == SD_WAIT_RUST_RWLOCK ||
		    fk == SD_WAIT_RUST_CONDVAR || via_syscall_wrapper(th);
	if (!rusty)
		return EV_NONE;
	struct sd_wait *w = &th->wait;
	if (fk == SD_WAIT_RUST_CONDVAR) {
		set_kind(w, SD_WAIT_RUST_CONDVAR, f->uaddr);
		w->note = intern(c, "waiting for a notify: no owner");
		return EV_STRONG;
	}
	if (f->val == 2 && (!f->have_word || f->word <= 2) &&
	    (fk == SD_WAIT_RUST_MUTEX || fk == SD_WAIT_NONE)) {
		set_kind(w, SD_WAIT_RUST_MUTEX, f->uaddr);
		w->note = intern(c, "Rust std Mutex records no owner");
		return fk == SD_WAIT_RUST_MUTEX ? EV_STRONG : EV_WEAK;
	}
	if (fk == SD_WAIT_RUST_RWLOCK || fk == SD_WAIT_NONE) {
		uint32_t state;
		int reader = (f->val & RUST_RW_READERS_WAITING) && (f->val & RUST_RW_MASK) &&
			     (!f->have_word || f->word == f->val);
		if (fsub && !strcmp(fsub, "read") && !reader)
			reader = 1;
		if (reader && !(fsub && !strcmp(fsub, "write"))) {
			set_kind(w, SD_WAIT_RUST_RWLOCK, f->uaddr);
			w->subkind = intern(c, "read");
			w->note = intern(c, (f->val & RUST_RW_MASK) == RUST_RW_MASK
						? "write-locked; Rust std RwLock records no owner"
						: "Rust std RwLock records no owner");
			return fk == SD_WAIT_RUST_RWLOCK ? EV_STRONG : EV_WEAK;
		}
		if (rd32(c, th, f->uaddr - 4, &state) && (state & RUST_RW_WRITERS_WAITING) &&
		    (state & RUST_RW_MASK)) {
			set_kind(w, SD_WAIT_RUST_RWLOCK, f->uaddr - 4);
			w->subkind = intern(c, "write");
			w->note = intern(c, (state & RUST_RW_MASK) == RUST_RW_MASK
						? "write-locked; Rust std RwLock records no owner"
						: "read-locked; Rust std RwLock records no owner");
			return fk == SD_WAIT_RUST_RWLOCK ? EV_STRONG : EV_WEAK;
		}
	}
	return EV_NONE;
}

/* ---- putting it together ---- */

static void classify_futex(struct ctx *c, struct sd_thread *th)
{
	struct sd_wait *w = &th->wait;
	struct fcall f = {0};
	f.uaddr = th->syscall_args[0];
	f.op = (unsigned)th->syscall_args[1];
	f.cmd = f.op & FUTEX_CMD_MASK;
	f.val = (uint32_t)th->syscall_args[2];
	f.priv = !!(f.op & FUTEX_PRIVATE);
	f.have_word = rd32(c, th, f.uaddr, &f.word);

	memset(w, 0, sizeof(*w));
	set_kind(w, SD_WAIT_FUTEX, f.uaddr);
	const struct frame_rule *rr;
	if (runtime_kind(th, &rr)) {
		/* The runtime's own functions are decisive: its futex words
		 * may look like a pthread object's by chance. A monitor's
		 * address is not the futex (the thread's own event). */
		set_kind(w, rr->kind, rr->kind == SD_WAIT_MONITOR ? 0 : f.uaddr);
		w->subkind = intern(c, rr->subkind);
		w->note = intern(c, rr->note);
		return;
	}
	const char *fsub, *fnote;
	enum sd_wait_kind fk = frames_kind(th, &fsub, &fnote);
	enum strength ev = EV_NONE;

	switch (f.cmd) {
	case FUTEX_LOCK_PI:
	case FUTEX_LOCK_PI2:
	case FUTEX_TRYLOCK_PI:
		try_pi(c, th, &f);
		return;
	case FUTEX_WAIT_REQUEUE_PI:
		set_kind(w, SD_WAIT_CONDVAR, f.uaddr);
		w->note = intern(c, "waiting for a signal: no owner");
		return;
	case FUTEX_WAIT:
	case FUTEX_WAIT_BITSET:
		break;
	default:
		w->note = intern(c, "not a futex wait operation");
		return;
	}

	/* Strongest evidence first: each check below validates several
	 * words of the object, not just the futex word. */
	ev = try_join(c, th, &f);
	if (!ev)
		ev = try_robust(c, th, &f);
	if (!ev)
		ev = try_mutex(c, th, &f, 1);
	if (!ev)
		ev = try_rwlock(c, th, &f);
	if (!ev)
		ev = try_condvar(c, th, &f, 1);
	if (!ev)
		ev = try_rust(c, th, &f, fk, fsub);
	if (!ev)
		ev = try_mutex(c, th, &f, 0);
	if (!ev)
		ev = try_sem(c, th, &f);
	if (!ev)
		ev = try_condvar(c, th, &f, 0);
	if (!ev)
		ev = try_lll(c, th, &f);
	/* glibc's own locks make their futex calls inline, never through
	 * syscall(): a call that went through it (a raw futex, a Rust or C++
	 * atomic wait) and seems to wait on a pthread object met a look-alike
	 * (globals next to a raw futex word read as a condvar's counts). */
	if (via_syscall_wrapper(th) &&
	    (w->kind == SD_WAIT_MUTEX || w->kind == SD_WAIT_CONDVAR ||
	     w->kind == SD_WAIT_SEMAPHORE || w->kind == SD_WAIT_RWLOCK_READ ||
	     w->kind == SD_WAIT_RWLOCK_WRITE || w->kind == SD_WAIT_JOIN)) {
		memset(w, 0, sizeof(*w));
		set_kind(w, SD_WAIT_FUTEX, f.uaddr);
		ev = EV_NONE;
	}
	if (ev == EV_STRONG || fk == SD_WAIT_NONE)
		return;
	if (ev == EV_WEAK && fk == w->kind)
		return;
	/* pthread_cond_wait re-takes its mutex after a wakeup: without libc
	 * debug info the innermost named frame is pthread_cond_wait, yet the
	 * word is the mutex's. */
	if (ev == EV_WEAK && w->kind == SD_WAIT_MUTEX && fk == SD_WAIT_CONDVAR)
		return;
	if (fk == SD_WAIT_FUTEX) {
		/* Barriers, once, parking_lot, thread::park: named by the
		 * stack, no owner; weak memory evidence was a look-alike. */
		memset(w, 0, sizeof(*w));
		set_kind(w, SD_WAIT_FUTEX, f.uaddr);
		w->subkind = intern(c, fsub);
		w->note = intern(c, fnote);
		return;
	}
	/* The memory said little or disagreed weakly: the stack decides. */
	memset(w, 0, sizeof(*w));
	set_kind(w, fk, f.uaddr);
	w->subkind = fsub ? intern(c, fsub) : NULL;
	switch (fk) {
	case SD_WAIT_JOIN:
		if (tid_plausible(f.val) && !f.priv)
			set_owner(c, w, f.val);
		break;
	case SD_WAIT_CONDVAR:
	case SD_WAIT_RUST_CONDVAR:
		w->note = intern(c, "waiting for a signal: no owner");
		break;
	case SD_WAIT_SEMAPHORE:
		w->note = intern(c, "a semaphore has no owner");
		break;
	case SD_WAIT_RUST_MUTEX:
		w->note = intern(c, "Rust std Mutex records no owner");
		break;
	case SD_WAIT_RUST_RWLOCK:
		w->note = intern(c, "Rust std RwLock records no owner");
		break;
	default:
		w->note = intern(c, "owner unknown (classified from the stack)");
		break;
	}
}

void locks_classify(struct sd_snapshot *s, struct sd_thread *th)
{
	struct ctx c;
	ctx_init(&c, s, 0, NULL);
	classify_futex(&c, th);
	ctx_release(&c);
}

/* Threads of a process in another PID namespace record TIDs of that
 * namespace in lock words: map them through NSpid (its last field). */
static pid_t *ns_map(struct sd_snapshot *s, pid_t pid)
{
	/* A process keeps its namespace: asked again after a few seconds
	 * only (a sampler analyzes its target many times a second). */
	static struct {
		pid_t pid;
		int same;
		uint64_t at;
	} memo;
	uint64_t now = sd_now_ns();
	if (memo.pid == pid && memo.same && now - memo.at < 5000000000ull)
		return NULL;
	char a[64], b[64];
	struct stat sa, sb;
	snprintf(a, sizeof(a), "/proc/%d/ns/pid", (int)pid);
	snprintf(b, sizeof(b), "/proc/self/ns/pid");
	int same = stat(a, &sa) < 0 || stat(b, &sb) < 0 || sa.st_ino == sb.st_ino;
	memo.pid = pid;
	memo.same = same;
	memo.at = now;
	if (same)
		return NULL;
	pid_t *map = sd_xcalloc(s->nthreads ? s->nthreads : 1, sizeof(*map));
	for (size_t i = 0; i < s->nthreads; i++) {
		char path[96], *text;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid,
			 (int)s->threads[i].tid);
		if (sd_read_file(path, &text, 1 << 16) < 0)
			continue;
		const char *p = strstr(text, "\nNSpid:");
		if (p) {
			p += 7;
			long last = 0;
			char *end;
			for (;;) {
				long v = strtol(p, &end, 10);
				if (end == p)
					break;
				last = v;
				p = end;
			}
			map[i] = (pid_t)last;
		}
		free(text);
	}
	return map;
}

/* The data symbol naming a lock, "sym" or "sym+0x10" inside a struct. */
static const char *lock_symbol(struct sd_symbols *sym, struct sd_snapshot *s, uint64_t addr)
{
	uint64_t off = 0;
	const char *name = symbols_data(sym, s, addr, &off);
	if (!name || !off)
		return name;
	char buf[512];
	snprintf(buf, sizeof(buf), "%s+0x%llx", name, (unsigned long long)off);
	return strpool_intern(s->pool, buf);
}

/* Which __g_signals word a condvar waiter sleeps on (and the glibc
 * layout) is ambiguous from memory alone; a data symbol holding the futex
 * word settles where the condvar starts. */
static void condvar_by_symbol(struct sd_symbols *sym, struct sd_snapshot *s, struct sd_thread *th)
{
	uint64_t uaddr = th->syscall_args[0], off = 0;
	if (!symbols_data(sym, s, uaddr, &off))
		return;
	if (off == 32 || off == 36 || off == 40 || off == 44)
		th->wait.address = uaddr - off;
}

/* TH waits on a futex that classify_futex() is to explain. */
static int futex_to_classify(const struct sd_thread *th)
{
	return th->wait.kind == SD_WAIT_FUTEX && th->syscall_known;
}

void locks_analyze(pid_t pid, struct sd_symbols *sym, struct sd_snapshot *s)
{
	struct ctx c;
	/* TIDs in lock words need mapping only when some thread waits on a
	 * futex (two stat calls of /proc a snapshot otherwise). */
	int futex_waits = 0;
	for (size_t i = 0; i < s->nthreads && !futex_waits; i++)
		futex_waits = futex_to_classify(&s->threads[i]);
	ctx_init(&c, s, pid, pid && futex_waits ? ns_map(s, pid) : NULL);
	for (size_t i = 0; i < s->nthreads; i++)
		if (futex_to_classify(&s->threads[i]))
			classify_futex(&c, &s->threads[i]);
	if (sym) {
		/* Many waiters share a lock: look each address up once. */
		uint64_t last_addr = 0;
		const char *last_sym = NULL;
		for (size_t i = 0; i < s->nthreads; i++) {
			struct sd_wait *w = &s->threads[i].wait;
			if (!locks_is_wait(w->kind) || w->kind == SD_WAIT_JOIN || !w->address ||
			    w->symbol)
				continue;
			if (w->kind == SD_WAIT_CONDVAR)
				condvar_by_symbol(sym, s, &s->threads[i]);
			if (w->address != last_addr) {
				last_addr = w->address;
				last_sym = lock_symbol(sym, s, w->address);
			}
			w->symbol = last_sym;
		}
	}
	ctx_release(&c);
	uint64_t t0 = sd_now_ns();
	locks_infer(s);
	s->infer_us = (sd_now_ns() - t0) / 1000;
}
