// SPDX-License-Identifier: MIT
// The lock view of a snapshot built from its threads' waits: locks by
// waiters with their holders (recorded or inferred) and candidates, idle
// condvar waits, the wait-for graph and its deadlock cycles, and threads
// parked on the same lock across a series of snapshots.
#include "locks-int.h"
#include "locks.h"

#include <stdlib.h>
#include <string.h>

static int cmp_tid_index(const void *a, const void *b)
{
	const struct tid_index *x = a, *y = b;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* ---- the graph ---- */

/* rwlock waits of either mode are waits on one lock. */
static enum sd_wait_kind lock_group(enum sd_wait_kind k)
{
	return k == SD_WAIT_RWLOCK_WRITE ? SD_WAIT_RWLOCK_READ : k;
}

static int cmp_lock(const void *a, const void *b)
{
	const struct sd_lock *x = a, *y = b;
	if (x->nwaiters != y->nwaiters)
		return x->nwaiters < y->nwaiters ? 1 : -1;
	if (x->address != y->address)
		return x->address < y->address ? -1 : 1;
	return (int)x->kind - (int)y->kind;
}

static int cmp_deadlock(const void *a, const void *b)
{
	const struct sd_deadlock *x = a, *y = b;
	return locks_cmp_pid(&x->edges[0].tid, &y->edges[0].tid);
}

/* Add TH's wait to the lock it waits on in *V (found by kind group and
 * address), creating it if needed. */
static void add_waiter(struct sd_lock **v, size_t *n, size_t *cap, const struct sd_thread *th)
{
	const struct sd_wait *w = &th->wait;
	struct sd_lock *l = NULL;
	for (size_t i = 0; i < *n; i++)
		if ((*v)[i].address == w->address &&
		    lock_group((*v)[i].kind) == lock_group(w->kind))
			l = &(*v)[i];
	if (!l) {
		sd_grow(v, cap, *n + 1, sizeof(**v));
		l = &(*v)[(*n)++];
		memset(l, 0, sizeof(*l));
		l->kind = lock_group(w->kind);
		l->address = w->address;
		l->owner_frame = -1;
	}
	l->waiters = sd_xrealloc(l->waiters, (l->nwaiters + 1) * sizeof(*l->waiters));
	l->waiters[l->nwaiters++] = th->tid;
	if (w->kind == SD_WAIT_RWLOCK_READ ||
	    (w->kind == SD_WAIT_RUST_RWLOCK && w->subkind && !strcmp(w->subkind, "read")))
		l->nreaders++;
	if (w->kind == SD_WAIT_RWLOCK_WRITE ||
	    (w->kind == SD_WAIT_RUST_RWLOCK && w->subkind && !strcmp(w->subkind, "write")))
		l->nwriters++;
	if (!l->symbol)
		l->symbol = w->symbol;
	if (!l->subkind && w->kind != SD_WAIT_RUST_RWLOCK)
		l->subkind = w->subkind;
	if (!l->owner_known && w->owner_known && w->owner > 0) {
		l->owner = w->owner;
		l->owner_known = 1;
		l->owner_evidence = w->owner_evidence;
		l->owner_frame = w->owner_frame;
		l->note = w->note; /* about the owner, if anything */
	} else if (!l->owner_known && !l->note) {
		l->note = w->note;
	}
}

/* Threads that may hold L (inferred, several): from their holds. */
static void add_candidates(struct sd_lock *l, const struct sd_snapshot *s)
{
	if (l->owner_known)
		return;
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct sd_thread *th = &s->threads[i];
		for (size_t k = 0; k < th->nholds; k++) {
			const struct sd_hold *h = &th->holds[k];
			if (h->address != l->address || lock_group(h->kind) != l->kind ||
			    h->evidence != SD_EVIDENCE_STACK)
				continue;
			l->candidates = sd_xrealloc(l->candidates,
						    (l->ncandidates + 1) * sizeof(*l->candidates));
			l->candidates[l->ncandidates].tid = th->tid;
			l->candidates[l->ncandidates].certain = h->ncandidates <= 1;
			l->candidates[l->ncandidates++].frame = h->frame;
		}
	}
}

struct sd_lockgraph *locks_graph(const struct sd_snapshot *s)
{
	struct sd_lockgraph *g = sd_xcalloc(1, sizeof(*g));
	size_t lcap = 0, icap = 0, dcap = 0;
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct sd_thread *th = &s->threads[i];
		if (!locks_is_wait(th->wait.kind))
			continue;
		if (locks_is_idle(th->wait.kind))
			add_waiter(&g->idle, &g->nidle, &icap, th);
		else
			add_waiter(&g->locks, &g->nlocks, &lcap, th);
	}
	for (size_t i = 0; i < g->nlocks; i++)
		add_candidates(&g->locks[i], s);
	for (size_t i = 0; i < g->nlocks; i++)
		sd_sort(g->locks[i].waiters, g->locks[i].nwaiters, sizeof(pid_t), locks_cmp_pid);
	for (size_t i = 0; i < g->nidle; i++)
		sd_sort(g->idle[i].waiters, g->idle[i].nwaiters, sizeof(pid_t), locks_cmp_pid);
	if (g->nlocks)
		sd_sort(g->locks, g->nlocks, sizeof(*g->locks), cmp_lock);
	if (g->nidle)
		sd_sort(g->idle, g->nidle, sizeof(*g->idle), cmp_lock);

	/* Wait-for edges: each thread waits for at most one thing, so each
	 * node has at most one outgoing edge; follow the chains, and a walk
	 * that meets itself has found a cycle (jstack does the same). */
	size_t n = s->nthreads;
	if (!n)
		return g;
	struct tid_index *ix = sd_xmalloc(n * sizeof(*ix));
	for (size_t i = 0; i < n; i++) {
		ix[i].tid = s->threads[i].tid;
		ix[i].idx = i;
	}
	sd_sort(ix, n, sizeof(*ix), cmp_tid_index);
	long *next = sd_xmalloc(n * sizeof(*next));
	size_t *walk = sd_xcalloc(n, sizeof(*walk));
	for (size_t i = 0; i < n; i++) {
		const struct sd_wait *w = &s->threads[i].wait;
		next[i] = -1;
		if (locks_is_wait(w->kind) && !locks_is_idle(w->kind) && w->owner_known &&
		    w->owner > 0)
			next[i] = locks_index_find(ix, n, w->owner);
	}
	for (size_t start = 0; start < n; start++) {
		if (walk[start])
			continue;
		long j = (long)start;
		while (j >= 0 && !walk[j]) {
			walk[j] = start + 1;
			j = next[j];
		}
		if (j < 0 || walk[j] != start + 1)
			continue; /* ended, or joined an earlier walk */
		/* j is on a cycle: collect it, starting at its smallest TID. */
		size_t len = 0;
		long k = j, first = j;
		do {
			len++;
			if (s->threads[k].tid < s->threads[first].tid)
				first = k;
			k = next[k];
		} while (k != j);
		sd_grow(&g->deadlocks, &dcap, g->ndeadlocks + 1, sizeof(*g->deadlocks));
		struct sd_deadlock *d = &g->deadlocks[g->ndeadlocks++];
		d->n = len;
		d->edges = sd_xcalloc(len, sizeof(*d->edges));
		k = first;
		for (size_t e = 0; e < len; e++, k = next[k]) {
			const struct sd_thread *th = &s->threads[k];
			d->edges[e].tid = th->tid;
			d->edges[e].kind = th->wait.kind;
			d->edges[e].address = th->wait.address;
			d->edges[e].symbol = th->wait.symbol;
			d->edges[e].owner = th->wait.owner;
			d->edges[e].owner_evidence = th->wait.owner_evidence;
			d->edges[e].owner_frame = th->wait.owner_frame;
			d->edges[e].note = th->wait.note;
		}
	}
	if (g->ndeadlocks > 1)
		sd_sort(g->deadlocks, g->ndeadlocks, sizeof(*g->deadlocks), cmp_deadlock);
	free(walk);
	free(next);
	free(ix);
	return g;
}

void locks_graph_free(struct sd_lockgraph *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->nlocks; i++) {
		free(g->locks[i].waiters);
		free(g->locks[i].candidates);
	}
	for (size_t i = 0; i < g->nidle; i++)
		free(g->idle[i].waiters);
	for (size_t i = 0; i < g->ndeadlocks; i++)
		free(g->deadlocks[i].edges);
	free(g->locks);
	free(g->idle);
	free(g->deadlocks);
	free(g);
}

/* ---- across snapshots ---- */

size_t locks_parked(struct sd_snapshot *const *snaps, size_t n, struct sd_parked **out)
{
	*out = NULL;
	if (!n)
		return 0;
	const struct sd_snapshot *first = snaps[0], *last = snaps[n - 1];
	struct tid_index **ix = sd_xcalloc(n, sizeof(*ix));
	for (size_t k = 0; k + 1 < n; k++)
		ix[k] = locks_tid_index_new(snaps[k], NULL);
	size_t cnt = 0, cap = 0;
	for (size_t i = 0; i < last->nthreads; i++) {
		const struct sd_thread *th = &last->threads[i], *o = th;
		if (!locks_is_wait(th->wait.kind))
			continue;
		int all = 1;
		for (size_t k = n - 1; k-- > 0 && all;) {
			long j = locks_index_find(ix[k], snaps[k]->nthreads, th->tid);
			o = j >= 0 ? &snaps[k]->threads[j] : NULL;
			all = o && o->wait.address == th->wait.address &&
			      lock_group(o->wait.kind) == lock_group(th->wait.kind);
		}
		if (!all)
			continue;
		/* o is now the thread in the first snapshot */
		sd_grow(out, &cap, cnt + 1, sizeof(**out));
		struct sd_parked *p = &(*out)[cnt++];
		memset(p, 0, sizeof(*p));
		p->tid = th->tid;
		p->name = th->name;
		p->wait = th->wait;
		p->seconds = last->time - first->time;
		uint64_t ours = SD_SNAPSHOT_CTXSW * (uint64_t)(n - 1);
		uint64_t delta = th->vol_ctxsw >= o->vol_ctxsw ? th->vol_ctxsw - o->vol_ctxsw : 0;
		p->switches = delta > ours ? delta - ours : 0;
		p->moved = p->switches > 0;
	}
	for (size_t k = 0; k + 1 < n; k++)
		free(ix[k]);
	free(ix);
	return cnt;
}
