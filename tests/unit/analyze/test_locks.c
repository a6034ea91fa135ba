// SPDX-License-Identifier: MIT
// Unit tests of lock analysis on faked snapshots: the cycle finder of the
// wait-for graph, the grouping by lock, the classification of futex waits
// from syscall arguments and lock memory alone (no frames at all: what a
// process without libc debug info gives), and the series view.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analyze.h"
#include "locks.h"
#include "snapshot.h"

/* ---- helpers ---- */

static struct sd_snapshot *snap(size_t n, pid_t first_tid)
{
	struct sd_snapshot *s = snapshot_new(1000);
	for (size_t i = 0; i < n; i++) {
		struct sd_thread *th = snapshot_add_thread(s, first_tid + (pid_t)i);
		char name[32];
		snprintf(name, sizeof(name), "t%zu", i);
		th->name = strpool_intern(s->pool, name);
		th->state = 'S';
	}
	return s;
}

static struct sd_thread *tid(struct sd_snapshot *s, pid_t t)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == t)
			return &s->threads[i];
	fail_msg("no thread %d", (int)t);
	return NULL;
}

static void waits(struct sd_snapshot *s, pid_t t, enum sd_wait_kind k, uint64_t addr, pid_t owner)
{
	struct sd_thread *th = tid(s, t);
	if (!th)
		return;
	struct sd_wait *w = &th->wait;
	memset(w, 0, sizeof(*w));
	w->kind = k;
	w->address = addr;
	w->owner = owner;
	w->owner_known = owner > 0;
}

/* Make thread T sit in futex(UADDR, OP, VAL) with the 32-bit WORDS captured
 * from BELOW words under UADDR on. */
static struct sd_thread *in_futex(struct sd_snapshot *s, pid_t t, uint64_t uaddr, unsigned op,
				  uint32_t val, const uint32_t *words, size_t nwords, size_t below)
{
	struct sd_thread *th = tid(s, t);
	th->syscall_known = 1;
	th->syscall_nr = 202;
	th->syscall_args[0] = uaddr;
	th->syscall_args[1] = op;
	th->syscall_args[2] = val;
	th->syscall_args[5] = 0xffffffff;
	th->wait.kind = SD_WAIT_FUTEX;
	th->wait.address = uaddr;
	if (nwords) {
		th->lockmem = calloc(1, sizeof(*th->lockmem));
		th->nlockmem = 1;
		th->lockmem->addr = uaddr - 4 * below;
		th->lockmem->len = (uint32_t)(4 * nwords);
		assert_true(th->lockmem->len <= sizeof(th->lockmem->bytes));
		memcpy(th->lockmem->bytes, words, 4 * nwords);
	}
	return th;
}

static void add_frame(struct sd_snapshot *s, struct sd_thread *th, const char *fn)
{
	struct sd_frame *f = snapshot_add_frame(th);
	f->function = strpool_intern(s->pool, fn);
	f->pc = 0x1000 + th->nframes;
}

#define U 0x55d0e1c3a040ull /* a futex address */

/* ---- the cycle finder ---- */

static void test_no_wait_no_deadlock(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(4, 100);
	struct sd_lockgraph *g = locks_graph(s);
	assert_int_equal(g->nlocks, 0);
	assert_int_equal(g->ndeadlocks, 0);
	locks_graph_free(g);
	snapshot_free(s);
}

static void test_two_cycle(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(3, 100);
	waits(s, 101, SD_WAIT_MUTEX, 0xb0, 102);
	waits(s, 102, SD_WAIT_MUTEX, 0xa0, 101);
	struct sd_lockgraph *g = locks_graph(s);
	assert_int_equal(g->ndeadlocks, 1);
	assert_int_equal(g->deadlocks[0].n, 2);
	assert_int_equal(g->deadlocks[0].edges[0].tid, 101);
	assert_int_equal(g->deadlocks[0].edges[0].owner, 102);
	assert_int_equal(g->deadlocks[0].edges[0].address, 0xb0);
	assert_int_equal(g->deadlocks[0].edges[1].tid, 102);
	assert_int_equal(g->deadlocks[0].edges[1].owner, 101);
	assert_int_equal(g->nlocks, 2);
	locks_graph_free(g);
	snapshot_free(s);
}

/* A three-cycle found from any starting point is reported once, starting
 * at its smallest TID; a bystander waiting into it is not part of it. */
static void test_three_cycle_with_bystander(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(6, 100);
	waits(s, 100, SD_WAIT_MUTEX, 0xa0, 104); /* bystander, first in order */
	waits(s, 104, SD_WAIT_MUTEX, 0xb0, 103);
	waits(s, 103, SD_WAIT_MUTEX, 0xc0, 102);
	waits(s, 102, SD_WAIT_MUTEX, 0xa0, 104);
	waits(s, 105, SD_WAIT_MUTEX, 0xa0, 104); /* another bystander */
	struct sd_lockgraph *g = locks_graph(s);
	assert_int_equal(g->ndeadlocks, 1);
	const struct sd_deadlock *d = &g->deadlocks[0];
	assert_int_equal(d->n, 3);
	assert_int_equal(d->edges[0].tid, 102);
	assert_int_equal(d->edges[1].tid, 104);
	assert_int_equal(d->edges[2].tid, 103);
	for (size_t i = 0; i < d->n; i++)
		assert_int_equal(d->edges[i].owner, d->edges[(i + 1) % d->n].tid);
	/* Most waiters first: 0xa0 has three. */
	assert_int_equal(g->locks[0].address, 0xa0);
	assert_int_equal(g->locks[0].nwaiters, 3);
	assert_int_equal(g->locks[0].waiters[0], 100);
	assert_int_equal(g->locks[0].waiters[2], 105);
	assert_int_equal(g->locks[0].owner, 104);
	locks_graph_free(g);
	snapshot_free(s);
}

static void test_self_deadlock(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(2, 100);
	waits(s, 101, SD_WAIT_MUTEX, 0xa0, 101);
	struct sd_lockgraph *g = locks_graph(s);
	assert_int_equal(g->ndeadlocks, 1);
	assert_int_equal(g->deadlocks[0].n, 1);
	assert_int_equal(g->deadlocks[0].edges[0].tid, 101);
	assert_int_equal(g->deadlocks[0].edges[0].owner, 101);
	locks_graph_free(g);
	snapshot_free(s);
}

/* Mutex, rwlock writer and join edges close one cycle together. */
static void test_mixed_edges(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(3, 200);
	waits(s, 200, SD_WAIT_MUTEX, 0xa0, 201);
	waits(s, 201, SD_WAIT_RWLOCK_WRITE, 0xb0, 202);
	waits(s, 202, SD_WAIT_JOIN, 0x7f00, 200);
	struct sd_lockgraph *g = locks_graph(s);
	assert_int_equal(g->ndeadlocks, 1);
	assert_int_equal(g->deadlocks[0].n, 3);
	assert_int_equal(g->deadlocks[0].edges[1].kind, SD_WAIT_RWLOCK_WRITE);
	assert_int_equal(g->deadlocks[0].edges[2].kind, SD_WAIT_JOIN);
	locks_graph_free(g);
	snapshot_free(s);
}

/* Chains that end at a running thread, at an owner outside the snapshot,
 * or at a wait without owner are no deadlock; neither are condvars. */
static void test_no_false_cycles(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(8, 300);
	waits(s, 300, SD_WAIT_MUTEX, 0xa0, 301);  /* 301 runs */
	waits(s, 302, SD_WAIT_MUTEX, 0xb0, 9999); /* owner exited */
	waits(s, 303, SD_WAIT_RWLOCK_WRITE, 0xc0, 0);
	waits(s, 304, SD_WAIT_MUTEX, 0xd0, 303);
	waits(s, 305, SD_WAIT_CONDVAR, 0xe0, 0);
	waits(s, 306, SD_WAIT_CONDVAR, 0xe0, 0);
	waits(s, 307, SD_WAIT_RUST_MUTEX, 0xf0, 0);
	struct sd_lockgraph *g = locks_graph(s);
	assert_int_equal(g->ndeadlocks, 0);
	assert_int_equal(g->nidle, 1);
	assert_int_equal(g->idle[0].nwaiters, 2);
	assert_int_equal(g->nlocks, 5);
	locks_graph_free(g);
	snapshot_free(s);
}

/* Two separate cycles, and a long ring: both found, in TID order. */
static void test_many_cycles(void **state)
{
	(void)state;
	enum { RING = 2000 };
	struct sd_snapshot *s = snap(RING + 2, 10);
	for (pid_t t = 12; t < 12 + RING; t++)
		waits(s, t, SD_WAIT_MUTEX, 0x1000 + (uint64_t)t, t + 1 < 12 + RING ? t + 1 : 12);
	waits(s, 10, SD_WAIT_MUTEX, 0xa0, 11);
	waits(s, 11, SD_WAIT_MUTEX, 0xb0, 10);
	struct sd_lockgraph *g = locks_graph(s);
	assert_int_equal(g->ndeadlocks, 2);
	assert_int_equal(g->deadlocks[0].n, 2);
	assert_int_equal(g->deadlocks[0].edges[0].tid, 10);
	assert_int_equal(g->deadlocks[1].n, RING);
	assert_int_equal(g->deadlocks[1].edges[0].tid, 12);
	assert_int_equal(g->deadlocks[1].edges[RING - 1].owner, 12);
	locks_graph_free(g);
	snapshot_free(s);
}

/* rwlock waits of both modes are one lock. */
static void test_rwlock_grouping(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(4, 100);
	waits(s, 101, SD_WAIT_RWLOCK_READ, 0xa0, 100);
	waits(s, 102, SD_WAIT_RWLOCK_READ, 0xa0, 100);
	waits(s, 103, SD_WAIT_RWLOCK_WRITE, 0xa0, 100);
	struct sd_lockgraph *g = locks_graph(s);
	assert_int_equal(g->nlocks, 1);
	assert_int_equal(g->locks[0].nwaiters, 3);
	assert_int_equal(g->locks[0].nreaders, 2);
	assert_int_equal(g->locks[0].nwriters, 1);
	assert_string_equal(locks_kind_name(g->locks[0].kind), "rwlock");
	locks_graph_free(g);
	snapshot_free(s);
}

/* ---- classification from memory, no frames ---- */

/* Values observed on glibc 2.36 with the fixtures (see their headers). */

static void test_classify_mutex_normal(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(2, 500);
	const uint32_t w[] = {2, 0, 500, 1, 0, 0, 0, 0, 0, 0};
	struct sd_thread *th = in_futex(s, 501, U, 0x80, 2, w, 10, 0);
	locks_classify(s, th);
	assert_int_equal(th->wait.kind, SD_WAIT_MUTEX);
	assert_int_equal(th->wait.address, U);
	assert_int_equal(th->wait.owner, 500);
	assert_true(th->wait.owner_known);
	assert_string_equal(th->wait.subkind, "normal");
	snapshot_free(s);
}

static void test_classify_mutex_recursive_timed(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(3, 500);
	const uint32_t rec[] = {2, 2, 500, 1, 1, 0};
	struct sd_thread *a = in_futex(s, 501, U, 0x80, 2, rec, 6, 0);
	const uint32_t timed[] = {2, 0, 500, 1, 0, 0};
	struct sd_thread *b = in_futex(s, 502, U + 0x100, 0x189, 2, timed, 6, 0);
	locks_classify(s, a);
	locks_classify(s, b);
	assert_int_equal(a->wait.kind, SD_WAIT_MUTEX);
	assert_string_equal(a->wait.subkind, "recursive");
	assert_int_equal(a->wait.owner, 500);
	assert_int_equal(b->wait.kind, SD_WAIT_MUTEX);
	assert_string_equal(b->wait.subkind, "normal,timed");
	assert_int_equal(b->wait.owner, 500);
	snapshot_free(s);
}

static void test_classify_mutex_robust_pi(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(3, 500);
	const uint32_t rob[] = {0x800001f4, 1, 500, 1, 0x90, 0};
	struct sd_thread *a = in_futex(s, 501, U, 0x0, 0x800001f4, rob, 6, 0);
	const uint32_t pi[] = {0x800001f4, 1, 500, 1, 0x20, 0};
	struct sd_thread *b = in_futex(s, 502, U + 0x100, 0x86, 0, pi, 6, 0);
	locks_classify(s, a);
	locks_classify(s, b);
	assert_int_equal(a->wait.kind, SD_WAIT_MUTEX);
	assert_int_equal(a->wait.owner, 500);
	assert_non_null(strstr(a->wait.subkind, "robust"));
	assert_int_equal(b->wait.kind, SD_WAIT_MUTEX);
	assert_int_equal(b->wait.owner, 500);
	assert_non_null(strstr(b->wait.subkind, "pi"));
	snapshot_free(s);
}

/* The owner TID is not a thread of the snapshot: still a mutex, with the
 * owner named and a note, and no edge anywhere. */
static void test_classify_mutex_dead_owner(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(2, 500);
	const uint32_t w[] = {2, 0, 499, 1, 0, 0};
	struct sd_thread *th = in_futex(s, 501, U, 0x80, 2, w, 6, 0);
	locks_classify(s, th);
	assert_int_equal(th->wait.kind, SD_WAIT_MUTEX);
	assert_int_equal(th->wait.owner, 499);
	assert_non_null(th->wait.note);
	struct sd_lockgraph *g = locks_graph(s);
	assert_int_equal(g->ndeadlocks, 0);
	locks_graph_free(g);
	snapshot_free(s);
}

static void test_classify_rwlock(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(5, 600);
	/* writer 600 holds; a reader waits on +8 expecting 3 */
	const uint32_t wh[] = {0x13, 0, 3, 1, 0, 0, 600, 0, 0, 0, 0, 0, 0, 0};
	struct sd_thread *r = in_futex(s, 601, U + 8, 0x189, 3, wh, 14, 2);
	/* readers hold; the writer waits on +8 expecting 2 */
	const uint32_t rh[] = {0x12, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	struct sd_thread *w = in_futex(s, 602, U + 0x108, 0x189, 2, rh, 14, 2);
	/* writer 600 holds; a writer waits on +12 expecting 3 */
	const uint32_t ww[] = {3, 0, 1, 3, 0, 0, 600, 0, 0, 0, 0, 0, 0, 0};
	struct sd_thread *w2 = in_futex(s, 603, U + 0x20c, 0x189, 3, ww, 14, 3);
	/* writer-preferring: a late reader waits on __readers itself */
	const uint32_t pw[] = {0x16, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0};
	struct sd_thread *lr = in_futex(s, 604, U + 0x300, 0x189, 0x16, pw, 14, 0);
	locks_classify(s, r);
	locks_classify(s, w);
	locks_classify(s, w2);
	locks_classify(s, lr);
	assert_int_equal(r->wait.kind, SD_WAIT_RWLOCK_READ);
	assert_int_equal(r->wait.address, U);
	assert_int_equal(r->wait.owner, 600);
	assert_int_equal(w->wait.kind, SD_WAIT_RWLOCK_WRITE);
	assert_int_equal(w->wait.address, U + 0x100);
	assert_false(w->wait.owner_known);
	assert_non_null(strstr(w->wait.note, "2 threads"));
	assert_int_equal(w2->wait.kind, SD_WAIT_RWLOCK_WRITE);
	assert_int_equal(w2->wait.address, U + 0x200);
	assert_int_equal(w2->wait.owner, 600);
	assert_int_equal(lr->wait.kind, SD_WAIT_RWLOCK_READ);
	assert_int_equal(lr->wait.address, U + 0x300);
	assert_false(lr->wait.owner_known);
	snapshot_free(s);
}

static void test_classify_condvar_sem_join(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(5, 700);
	/* pthread_cond_t: __wseq, __g1_start, __g_refs {4,0}, __g_size,
	 * __g1_orig_size, __wrefs 0x10 (2 waiters), __g_signals {0,0} */
	const uint32_t cv[] = {4, 0, 0, 0, 4, 0, 0, 0, 0, 0x10, 0, 0, 0, 0};
	struct sd_thread *c = in_futex(s, 701, U + 40, 0x189, 0, cv, 14, 10);
	/* sem_t: value 0, 2 waiters, private */
	const uint32_t sem[] = {0, 0, 0, 0, 0, 2, 0, 0};
	struct sd_thread *m = in_futex(s, 702, U + 0x100, 0x189, 0, sem, 8, 4);
	/* join: the tid field of thread 700, in its TCB above fs_base */
	tid(s, 700)->have_regs = 1;
	tid(s, 700)->regs.fs_base = U + 0x1000;
	const uint32_t j[] = {700, 0};
	struct sd_thread *jn = in_futex(s, 703, U + 0x1000 + 0x2d0, 0x109, 700, j, 2, 0);
	locks_classify(s, c);
	locks_classify(s, m);
	locks_classify(s, jn);
	assert_int_equal(c->wait.kind, SD_WAIT_CONDVAR);
	assert_int_equal(c->wait.address, U);
	assert_false(c->wait.owner_known);
	assert_int_equal(m->wait.kind, SD_WAIT_SEMAPHORE);
	assert_int_equal(m->wait.address, U + 0x100);
	assert_int_equal(jn->wait.kind, SD_WAIT_JOIN);
	assert_int_equal(jn->wait.owner, 700);
	/* condvar waiters are idle; the join is an edge to 700 */
	struct sd_lockgraph *g = locks_graph(s);
	assert_int_equal(g->nidle, 1);
	assert_int_equal(g->nlocks, 2);
	assert_int_equal(g->ndeadlocks, 0);
	locks_graph_free(g);
	snapshot_free(s);
}

/* A futex waited on through libc's syscall() is no glibc pthread object,
 * whatever the words around it look like: the same condvar-shaped words
 * as above (old layout: strong evidence by memory alone) beside a raw
 * FUTEX_WAIT_PRIVATE on an int, and a mutex-shaped word. */
static void test_classify_raw_futex_lookalikes(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(3, 720);
	const uint32_t cv[] = {4, 0, 0, 0, 4, 0, 0, 0, 0, 0x10, 0, 0, 0, 0};
	struct sd_thread *raw = in_futex(s, 721, U + 40, 0x80, 0, cv, 14, 10);
	add_frame(s, raw, "syscall");
	add_frame(s, raw, "pool_leaf");
	/* The control: the same words, waited on by glibc's own code. */
	struct sd_thread *cond = in_futex(s, 722, U + 40, 0x80, 0, cv, 14, 10);
	add_frame(s, cond, "__futex_abstimed_wait_common");
	locks_classify(s, raw);
	locks_classify(s, cond);
	assert_int_equal(raw->wait.kind, SD_WAIT_FUTEX);
	assert_int_equal(raw->wait.address, U + 40);
	assert_false(raw->wait.owner_known);
	assert_int_equal(cond->wait.kind, SD_WAIT_CONDVAR);
	snapshot_free(s);
}

/* Rust std locks wait through libc's syscall(): that one exported frame
 * (no debug info needed) plus the words name them. */
static void test_classify_rust(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(3, 800);
	const uint32_t mu[] = {2, 0, 1, 0, 0x200001, 0};
	struct sd_thread *a = in_futex(s, 801, U, 0x89, 2, mu, 6, 0);
	add_frame(s, a, "syscall");
	const uint32_t rw[] = {0x7fffffff, 0, 0, 0};
	struct sd_thread *b = in_futex(s, 802, U + 0x100, 0x89, 0x7fffffff, rw, 4, 0);
	add_frame(s, b, "syscall");
	add_frame(s, b, "<std::sys::sync::rwlock::futex::RwLock>::read_contended");
	locks_classify(s, a);
	locks_classify(s, b);
	assert_int_equal(a->wait.kind, SD_WAIT_RUST_MUTEX);
	assert_false(a->wait.owner_known);
	assert_int_equal(b->wait.kind, SD_WAIT_RUST_RWLOCK);
	assert_string_equal(b->wait.subkind, "read");
	snapshot_free(s);
}

/* Memory that proves a mutex beats a frame name that says otherwise; a
 * wait nothing explains stays an unknown futex. */
static void test_classify_memory_over_frames(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(3, 900);
	const uint32_t w[] = {2, 0, 900, 1, 0, 0};
	struct sd_thread *a = in_futex(s, 901, U, 0x80, 2, w, 6, 0);
	add_frame(s, a, "??");
	add_frame(s, a, "pthread_cond_wait");
	locks_classify(s, a);
	assert_int_equal(a->wait.kind, SD_WAIT_MUTEX);
	assert_int_equal(a->wait.owner, 900);
	const uint32_t x[] = {5, 0, 0, 0};
	struct sd_thread *b = in_futex(s, 902, U + 0x100, 0x80, 5, x, 4, 0);
	locks_classify(s, b);
	assert_int_equal(b->wait.kind, SD_WAIT_FUTEX);
	assert_int_equal(b->wait.address, U + 0x100);
	snapshot_free(s);
}

/* The whole analyze stage on registers: a restarted clock_nanosleep is no
 * futex, a futex that already returned is no wait, a restarted timed
 * mutex wait is one. */
static void test_analyze_restart_and_woken(void **state)
{
	(void)state;
	struct sd_snapshot *s = snap(4, 1000);
	struct sd_thread *sl = tid(s, 1001);
	sl->have_regs = 1;
	sl->syscall_known = 1;
	sl->syscall_nr = 219;
	sl->regs.orig_rax = 219;
	sl->regs.rax = (uint64_t)-516;
	sl->syscall_args[2] = 0x7ffc0000e80; /* clock_nanosleep(0, 0, &ts, NULL) */
	const uint32_t w[] = {2, 0, 1000, 1, 0, 0};
	struct sd_thread *tm = in_futex(s, 1002, U, 0x189, 2, w, 6, 0);
	tm->have_regs = 1;
	tm->syscall_nr = 219;
	tm->regs.orig_rax = 219;
	tm->regs.rax = (uint64_t)-516;
	struct sd_thread *wk = in_futex(s, 1003, U, 0x80, 2, w, 6, 0);
	wk->have_regs = 1;
	wk->regs.orig_rax = 202;
	wk->regs.rax = 0;
	analyze_snapshot(0, NULL, s);
	assert_int_equal(tid(s, 1001)->wait.kind, SD_WAIT_SYSCALL);
	assert_int_equal(tid(s, 1002)->wait.kind, SD_WAIT_MUTEX);
	assert_int_equal(tid(s, 1002)->wait.owner, 1000);
	assert_int_equal(tid(s, 1003)->wait.kind, SD_WAIT_RUNNABLE);
	snapshot_free(s);
}

/* ---- across snapshots ---- */

static void test_parked(void **state)
{
	(void)state;
	struct sd_snapshot *v[3];
	for (int i = 0; i < 3; i++) {
		v[i] = snap(4, 100);
		v[i]->time = 10.0 + i;
		waits(v[i], 100, SD_WAIT_MUTEX, 0xa0, 103); /* stuck */
		tid(v[i], 100)->vol_ctxsw = 5 + SD_SNAPSHOT_CTXSW * (uint64_t)i;
		waits(v[i], 101, SD_WAIT_MUTEX, 0xa0, 103); /* woke and parked again */
		tid(v[i], 101)->vol_ctxsw = 5 + 7 * (uint64_t)i;
		tid(v[i], 102)->vol_ctxsw = 1;
		waits(v[i], 103, SD_WAIT_CONDVAR, 0xc0, 0);
	}
	waits(v[1], 102, SD_WAIT_MUTEX, 0xa0, 103); /* only once */
	struct sd_parked *p;
	size_t n = locks_parked(v, 3, &p);
	assert_int_equal(n, 3);
	assert_int_equal(p[0].tid, 100);
	assert_false(p[0].moved);
	assert_int_equal(p[0].switches, 0);
	assert_true(p[0].seconds > 1.99 && p[0].seconds < 2.01);
	assert_int_equal(p[1].tid, 101);
	assert_true(p[1].moved);
	assert_int_equal(p[1].switches, 14 - 2 * SD_SNAPSHOT_CTXSW);
	assert_int_equal(p[2].tid, 103);
	assert_true(locks_is_idle(p[2].wait.kind));
	free(p);
	for (int i = 0; i < 3; i++)
		snapshot_free(v[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_wait_no_deadlock),
	    cmocka_unit_test(test_two_cycle),
	    cmocka_unit_test(test_three_cycle_with_bystander),
	    cmocka_unit_test(test_self_deadlock),
	    cmocka_unit_test(test_mixed_edges),
	    cmocka_unit_test(test_no_false_cycles),
	    cmocka_unit_test(test_many_cycles),
	    cmocka_unit_test(test_rwlock_grouping),
	    cmocka_unit_test(test_classify_mutex_normal),
	    cmocka_unit_test(test_classify_mutex_recursive_timed),
	    cmocka_unit_test(test_classify_mutex_robust_pi),
	    cmocka_unit_test(test_classify_mutex_dead_owner),
	    cmocka_unit_test(test_classify_rwlock),
	    cmocka_unit_test(test_classify_condvar_sem_join),
	    cmocka_unit_test(test_classify_raw_futex_lookalikes),
	    cmocka_unit_test(test_classify_rust),
	    cmocka_unit_test(test_classify_memory_over_frames),
	    cmocka_unit_test(test_analyze_restart_and_woken),
	    cmocka_unit_test(test_parked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
