// SPDX-License-Identifier: MIT
// Rendering of the lock view (`stackdump locks`): by lock, most waiters
// first, with the holder's stack and the waiters' stacks merged when
// identical, then idle condvar waits, threads parked across a series of
// snapshots, and deadlock cycles the way jstack reports them.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "format.h"
#include "format-go.h"
#include "format-tokio.h"
#include "group.h"
#include "locks.h"
#include "longpoll.h"

#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_WARN "\033[31m"

/* Thread names listed on one line before "... and N more". */
#define NAMES_SHOWN 16
/* From this many waiters with one stack, their names and TIDs are ranges
 * ("http-worker-0..49", TIDs 4244..4293), each cut after RANGE_MAX bytes. */
#define RANGE_FROM 4
#define RANGE_MAX 32

static const char *col(const struct sd_render_opts *o, const char *c)
{
	return o && o->color ? c : "";
}

static void add_thread_label(struct strbuf *out, const struct sd_snapshot *s, pid_t tid)
{
	format_thread_label(out, s, tid);
	/* A Tokio worker: the task it polls (the std-mutex stall's waiters
	 * and holder). */
	uint64_t task = format_tokio_task_of(s, tid);
	if (task)
		strbuf_addf(out, " [task %" PRIu64 "]", task);
}

static void add_lock_label(struct strbuf *out, enum sd_wait_kind kind, uint64_t address,
			   const char *symbol)
{
	if (!address && kind == SD_WAIT_MONITOR) {
		/* Grouped by kind alone: the monitor is not read. */
		strbuf_adds(out, "java-monitor (which monitor is not known)");
		return;
	}
	strbuf_addf(out, "%s 0x%" PRIx64, locks_kind_name(kind), address);
	if (symbol) {
		strbuf_adds(out, " <");
		strbuf_add_escaped(out, symbol);
		strbuf_adds(out, ">");
	}
}

static void add_stack(struct strbuf *out, const struct sd_thread *th,
		      const struct sd_render_opts *o)
{
	format_text_stack(out, th, 2, o);
	if (!th->nframes)
		strbuf_adds(out, "    (no stack)\n");
}

static int same_stack(const struct sd_thread *a, const struct sd_thread *b)
{
	if (a->nframes != b->nframes)
		return 0;
	for (size_t i = 0; i < a->nframes; i++)
		if (a->frames[i].pc != b->frames[i].pc)
			return 0;
	return 1;
}

/* The waiters of L, grouped by identical stacks, each group with its
 * stack once. */
static void add_waiters(struct strbuf *out, const struct sd_snapshot *s, const struct sd_lock *l,
			const struct sd_render_opts *o)
{
	size_t n = l->nwaiters;
	const struct sd_thread **th = sd_xcalloc(n ? n : 1, sizeof(*th));
	char *done = sd_xcalloc(n ? n : 1, 1);
	for (size_t i = 0; i < n; i++)
		th[i] = snapshot_find_thread(s, l->waiters[i]);
	for (size_t i = 0; i < n; i++) {
		if (done[i] || !th[i])
			continue;
		size_t cnt = 0;
		for (size_t k = i; k < n; k++)
			if (!done[k] && th[k] && same_stack(th[i], th[k]))
				cnt++;
		strbuf_addf(out, "  waiting (%zu%s", cnt, cnt > 1 ? ", same stack" : "");
		if (th[i]->wait.kind == SD_WAIT_RWLOCK_READ)
			strbuf_adds(out, ", to read");
		else if (th[i]->wait.kind == SD_WAIT_RWLOCK_WRITE)
			strbuf_adds(out, ", to write");
		else if (th[i]->wait.kind == SD_WAIT_RUST_RWLOCK && th[i]->wait.subkind)
			strbuf_addf(out, ", to %s", th[i]->wait.subkind);
		strbuf_adds(out, "): ");
		if (cnt >= RANGE_FROM) {
			/* A pool: its names and TIDs as ranges, one short line. */
			struct sd_group gr = {sd_xcalloc(cnt, sizeof(size_t)), 0};
			for (size_t k = i; k < n; k++) {
				if (done[k] || !th[k] || !same_stack(th[i], th[k]))
					continue;
				done[k] = 1;
				gr.idx[gr.n++] = (size_t)(th[k] - s->threads);
			}
			strbuf_adds(out, "\"");
			group_names(out, s, &gr, RANGE_MAX);
			strbuf_adds(out, "\", TIDs ");
			group_tids(out, s, &gr, RANGE_MAX);
			free(gr.idx);
			strbuf_adds(out, "\n");
			add_stack(out, th[i], o);
			continue;
		}
		size_t shown = 0;
		for (size_t k = i; k < n; k++) {
			if (done[k] || !th[k] || !same_stack(th[i], th[k]))
				continue;
			done[k] = 1;
			if (shown < NAMES_SHOWN) {
				strbuf_adds(out, shown ? ", " : "");
				add_thread_label(out, s, th[k]->tid);
			}
			shown++;
		}
		if (shown > NAMES_SHOWN)
			strbuf_addf(out, " and %zu more", shown - NAMES_SHOWN);
		strbuf_adds(out, "\n");
		add_stack(out, th[i], o);
	}
	free(done);
	free(th);
}

/* "frame #2 fx::keep" of TID's stack, or "a register" */
static void add_frame_ref(struct strbuf *out, const struct sd_snapshot *s, pid_t tid, int frame)
{
	const struct sd_thread *th = snapshot_find_thread(s, tid);
	if (th && frame >= 0 && (size_t)frame < th->nframes) {
		strbuf_addf(out, "frame #%d ", frame);
		strbuf_add_escaped(out, th->frames[frame].function ? th->frames[frame].function
								   : "??");
	} else {
		strbuf_adds(out, "a register");
	}
}

/* Threads holding a reference to a lock no memory names the owner of:
 * all of them hold it (the readers of a read-held rwlock), or one of them
 * may (no owner edge is drawn). */
static void add_candidates(struct strbuf *out, const struct sd_snapshot *s,
			   const struct sd_lock *l)
{
	int certain = 1;
	for (size_t i = 0; i < l->ncandidates; i++)
		certain &= l->candidates[i].certain;
	if (certain)
		strbuf_addf(out, "  held by %zu threads (inferred: a reference in each stack): ",
			    l->ncandidates);
	else
		strbuf_addf(out, "  may be held by one of %zu threads (inferred: a reference in "
				 "each stack, too many to say which): ",
			    l->ncandidates);
	for (size_t i = 0; i < l->ncandidates; i++) {
		strbuf_adds(out, i ? ", " : "");
		add_thread_label(out, s, l->candidates[i].tid);
		strbuf_adds(out, " (");
		add_frame_ref(out, s, l->candidates[i].tid, l->candidates[i].frame);
		strbuf_adds(out, ")");
	}
	strbuf_adds(out, "\n");
}

static void add_holder(struct strbuf *out, const struct sd_snapshot *s, const struct sd_lock *l,
		       const struct sd_render_opts *o)
{
	if (!l->owner_known) {
		strbuf_adds(out, "  holder unknown");
		if (l->note) {
			strbuf_adds(out, ": ");
			strbuf_add_escaped(out, l->note);
		}
		strbuf_adds(out, "\n");
		if (l->ncandidates)
			add_candidates(out, s, l);
		return;
	}
	const struct sd_thread *h = snapshot_find_thread(s, l->owner);
	strbuf_adds(out, l->kind == SD_WAIT_JOIN ? "  joined thread " : "  held by ");
	add_thread_label(out, s, l->owner);
	if (h && l->owner_evidence == SD_EVIDENCE_STACK) {
		strbuf_adds(out, " (inferred: ");
		add_frame_ref(out, s, l->owner, l->owner_frame);
		strbuf_adds(out, " holds a reference to it)");
	}
	if (!h) {
		strbuf_adds(out, " (");
		strbuf_add_escaped(out, l->note ? l->note : "not in this snapshot");
		strbuf_adds(out, ")\n");
		return;
	}
	if (locks_is_wait(h->wait.kind)) {
		strbuf_adds(out, ", itself waiting for ");
		format_text_wait(out, s, h);
	} else {
		const char *st = analyze_state_text(h);
		if (*st)
			strbuf_addf(out, ", %s", st);
	}
	strbuf_adds(out, "\n");
	add_stack(out, h, o);
}

static void add_lock(struct strbuf *out, const struct sd_snapshot *s, const struct sd_lock *l,
		     const struct sd_render_opts *o)
{
	strbuf_adds(out, col(o, C_BOLD));
	if (l->kind == SD_WAIT_JOIN && l->owner_known) {
		strbuf_adds(out, "join of ");
		add_thread_label(out, s, l->owner);
	} else {
		add_lock_label(out, l->kind, l->address, l->symbol);
	}
	strbuf_adds(out, col(o, C_RESET));
	if (l->subkind) {
		strbuf_adds(out, " (");
		strbuf_add_escaped(out, l->subkind);
		strbuf_adds(out, ")");
	}
	strbuf_addf(out, ", %zu waiter%s", l->nwaiters, l->nwaiters == 1 ? "" : "s");
	if (l->nreaders && l->nwriters)
		strbuf_addf(out, " (%zu to read, %zu to write)", l->nreaders, l->nwriters);
	strbuf_adds(out, "\n");
	add_holder(out, s, l, o);
	add_waiters(out, s, l, o);
}

static void add_idle(struct strbuf *out, const struct sd_snapshot *s, const struct sd_lockgraph *g)
{
	strbuf_adds(out, "Idle, waiting for a signal (not contention):\n");
	for (size_t i = 0; i < g->nidle; i++) {
		const struct sd_lock *l = &g->idle[i];
		strbuf_adds(out, "  ");
		add_lock_label(out, l->kind, l->address, l->symbol);
		strbuf_addf(out, ", %zu thread%s: ", l->nwaiters, l->nwaiters == 1 ? "" : "s");
		for (size_t k = 0; k < l->nwaiters && k < NAMES_SHOWN; k++) {
			strbuf_adds(out, k ? ", " : "");
			add_thread_label(out, s, l->waiters[k]);
		}
		if (l->nwaiters > NAMES_SHOWN)
			strbuf_addf(out, " and %zu more", l->nwaiters - NAMES_SHOWN);
		strbuf_adds(out, "\n");
	}
}

static void add_parked(struct strbuf *out, const struct sd_snapshot *s,
		       const struct sd_parked *parked, size_t nparked, size_t nsnaps, double span)
{
	size_t idle = 0;
	for (size_t i = 0; i < nparked; i++)
		idle += locks_is_idle(parked[i].wait.kind);
	if (nparked == idle) {
		strbuf_addf(out,
			    "Across %zu snapshots over %.2f s: no thread stayed parked on the same "
			    "lock",
			    nsnaps, span);
		if (idle)
			strbuf_addf(out, " (%zu idle on condvars throughout)", idle);
		strbuf_adds(out, ".\n");
		return;
	}
	strbuf_addf(out, "Parked on the same lock in all %zu snapshots, over %.2f s:\n", nsnaps,
		    span);
	char *done = sd_xcalloc(nparked + 1, 1);
	const char **names = sd_xcalloc(nparked + 1, sizeof(*names));
	pid_t *tids = sd_xcalloc(nparked + 1, sizeof(*tids));
	for (size_t i = 0; i < nparked; i++) {
		const struct sd_parked *p = &parked[i];
		if (locks_is_idle(p->wait.kind) || done[i])
			continue;
		const struct sd_thread *th = snapshot_find_thread(s, p->tid);
		/* Threads parked alike (same lock, holder, none moved) from
		 * RANGE_FROM on: one line, their names and TIDs as ranges. */
		size_t n = 0;
		for (size_t k = i; k < nparked && !p->moved; k++) {
			const struct sd_parked *q = &parked[k];
			if (!done[k] && !q->moved && q->wait.kind == p->wait.kind &&
			    q->wait.address == p->wait.address && q->wait.owner == p->wait.owner) {
				names[n] = q->name;
				tids[n++] = q->tid;
			}
		}
		if (n >= RANGE_FROM) {
			double least = p->seconds;
			for (size_t k = i; k < nparked; k++) {
				const struct sd_parked *q = &parked[k];
				if (!done[k] && !q->moved && q->wait.kind == p->wait.kind &&
				    q->wait.address == p->wait.address && q->wait.owner == p->wait.owner) {
					done[k] = 1;
					least = q->seconds < least ? q->seconds : least;
				}
			}
			strbuf_addf(out, "  %zu threads ", n);
			format_names_ranges(out, names, tids, n, RANGE_MAX);
			strbuf_adds(out, " waiting for ");
			if (th)
				format_text_wait(out, s, th);
			strbuf_addf(out, ": at least %.2f s, none moved\n", least);
			continue;
		}
		strbuf_adds(out, "  ");
		add_thread_label(out, s, p->tid);
		strbuf_adds(out, " waiting for ");
		if (th)
			format_text_wait(out, s, th);
		if (p->moved)
			strbuf_addf(out, ": woke up in between (%" PRIu64 " voluntary switch%s), "
					 "parked again\n",
				    p->switches, p->switches == 1 ? "" : "es");
		else
			strbuf_addf(out, ": at least %.2f s, did not move\n", p->seconds);
	}
	free(done);
	free(names);
	free(tids);
	if (idle)
		strbuf_addf(out, "  (and %zu idle on condvars throughout)\n", idle);
}

static void add_deadlocks(struct strbuf *out, const struct sd_snapshot *s,
			  const struct sd_lockgraph *g, const struct sd_render_opts *o)
{
	if (!g->ndeadlocks) {
		strbuf_adds(out, "No deadlock found.\n");
		return;
	}
	strbuf_addf(out, "%sFound %zu deadlock%s:%s\n", col(o, C_WARN), g->ndeadlocks,
		    g->ndeadlocks == 1 ? "" : "s", col(o, C_RESET));
	for (size_t i = 0; i < g->ndeadlocks; i++) {
		const struct sd_deadlock *d = &g->deadlocks[i];
		strbuf_addf(out, "\nDeadlock %zu, %zu thread%s:\n", i + 1, d->n,
			    d->n == 1 ? "" : "s");
		for (size_t e = 0; e < d->n; e++) {
			const struct sd_thread *th = snapshot_find_thread(s, d->edges[e].tid);
			strbuf_adds(out, "  ");
			add_thread_label(out, s, d->edges[e].tid);
			strbuf_adds(out, " waits for ");
			format_text_wait(out, s, th);
			if (d->n == 1)
				strbuf_adds(out, ": itself (it locks a lock it already holds)");
			strbuf_adds(out, "\n");
		}
		for (size_t e = 0; e < d->n; e++) {
			const struct sd_thread *th = snapshot_find_thread(s, d->edges[e].tid);
			strbuf_adds(out, "\n  Thread ");
			add_thread_label(out, s, d->edges[e].tid);
			strbuf_adds(out, ":\n");
			add_stack(out, th, o);
		}
	}
}

void format_text_locks(struct strbuf *out, const struct sd_snapshot *s,
		       const struct sd_lockgraph *g, const struct sd_parked *parked, size_t nparked,
		       size_t nsnaps, double span, const struct sd_render_opts *o)
{
	size_t nwait = 0, nidle = 0, nruntime = 0;
	for (size_t i = 0; i < g->nlocks; i++)
		nwait += g->locks[i].nwaiters;
	for (size_t i = 0; i < g->nidle; i++) {
		nidle += g->idle[i].nwaiters;
		if (g->idle[i].kind == SD_WAIT_IDLE)
			nruntime += g->idle[i].nwaiters;
	}
	strbuf_addf(out, "%sPID %d (", col(o, C_BOLD), (int)s->pid);
	strbuf_add_escaped(out, s->comm ? s->comm : "?");
	if (nwait)
		strbuf_addf(out, ")%s: %zu thread%s waiting on %zu lock%s", col(o, C_RESET), nwait,
			    nwait == 1 ? "" : "s", g->nlocks, g->nlocks == 1 ? "" : "s");
	else
		strbuf_addf(out, ")%s: no thread waiting on a lock", col(o, C_RESET));
	if (nidle && !nruntime)
		strbuf_addf(out, ", %zu idle on condvars", nidle);
	else if (nidle)
		strbuf_addf(out, ", %zu idle (%zu on condvars, %zu in the language runtime)", nidle,
			    nidle - nruntime, nruntime);
	strbuf_addf(out, ", %zu thread%s", s->nthreads, s->nthreads == 1 ? "" : "s");
	if (s->core) {
		strbuf_adds(out, ", from core ");
		strbuf_add_escaped(out, s->core);
	} else {
		strbuf_addf(out, ", paused %.2f ms", (double)s->pause_us / 1000.0);
	}
	if (nsnaps > 1)
		strbuf_addf(out, " (the last of %zu snapshots)", nsnaps);
	if (s->partial)
		strbuf_adds(out, ", partial");
	strbuf_adds(out, "\n");
	/* The verdict before the evidence: the details follow. */
	format_text_findings(out, s, g, 1, o);
	for (size_t i = 0; i < g->nlocks; i++) {
		strbuf_adds(out, "\n");
		add_lock(out, s, &g->locks[i], o);
	}
	if (g->nidle) {
		strbuf_adds(out, "\n");
		add_idle(out, s, g);
	}
	if (nsnaps > 1) {
		strbuf_adds(out, "\n");
		add_parked(out, s, parked, nparked, nsnaps, span);
	}
	strbuf_adds(out, "\n");
	add_deadlocks(out, s, g, o);
	format_go_locks_text(out, s, o);
}

/* ---- JSON ---- */

/* The name of thread TID of S, or null. */
static void kname(struct jsonw *w, const char *key, const struct sd_snapshot *s, pid_t tid)
{
	const struct sd_thread *th = tid > 0 ? snapshot_find_thread(s, tid) : NULL;
	jsonw_kstr(w, key, th ? th->name : NULL);
}

/* KEY: V, or null when V is negative (no frame). */
static void kframe(struct jsonw *w, const char *key, int v)
{
	if (v >= 0)
		jsonw_kint(w, key, v);
	else
		jsonw_knull(w, key);
}

static void json_lock(struct jsonw *w, const struct sd_snapshot *s, const struct sd_lock *l)
{
	jsonw_object_begin(w);
	jsonw_kstr(w, "kind", locks_kind_name(l->kind));
	jsonw_khex(w, "address", l->address);
	jsonw_kstr(w, "symbol", l->symbol);
	if (l->owner_known)
		jsonw_kint(w, "owner", l->owner);
	else
		jsonw_knull(w, "owner");
	jsonw_karray(w, "waiters");
	for (size_t i = 0; i < l->nwaiters; i++)
		jsonw_int(w, l->waiters[i]);
	jsonw_array_end(w);
	jsonw_kstr(w, "type", l->subkind);
	if (l->owner_known)
		kname(w, "owner_name", s, l->owner);
	else
		jsonw_knull(w, "owner_name");
	jsonw_kstr(w, "note", l->note);
	jsonw_kstr(w, "owner_evidence", l->owner_known ? sd_evidence_name(l->owner_evidence) : NULL);
	kframe(w, "owner_frame", l->owner_known ? l->owner_frame : -1);
	if (!locks_is_idle(l->kind)) {
		jsonw_karray(w, "candidates");
		for (size_t i = 0; i < l->ncandidates; i++) {
			jsonw_object_begin(w);
			jsonw_kint(w, "tid", l->candidates[i].tid);
			kname(w, "name", s, l->candidates[i].tid);
			kframe(w, "frame", l->candidates[i].frame);
			jsonw_kbool(w, "certain", l->candidates[i].certain);
			jsonw_object_end(w);
		}
		jsonw_array_end(w);
	}
	if (l->kind == SD_WAIT_RWLOCK_READ || l->kind == SD_WAIT_RUST_RWLOCK) {
		jsonw_ku64(w, "readers_waiting", l->nreaders);
		jsonw_ku64(w, "writers_waiting", l->nwriters);
	}
	jsonw_object_end(w);
}

/* Is ADDR in T's holds? */
static const struct sd_tokio_hold *task_hold(const struct sd_tokio_task *t, uint64_t addr)
{
	for (size_t k = 0; k < t->nholds; k++)
		if (t->holds[k].addr == addr)
			return &t->holds[k];
	return NULL;
}

/* The kind of the lock T's leaf waits for: its detail names it
 * ("tokio::sync::Mutex 0x55..."), else the leaf's kind ("mutex"). */
static void wait_kind(struct jsonw *w, const struct sd_tokio_task *t)
{
	const struct sd_tokio_await *leaf = t->nawaits ? &t->awaits[t->nawaits - 1] : NULL;
	const char *d = leaf ? leaf->detail : NULL, *sp = d ? strrchr(d, ' ') : NULL;
	if (sp && sp > d && strtoull(sp + 1, NULL, 16) == t->wait_addr)
		jsonw_kstrn(w, "kind", d, (size_t)(sp - d));
	else
		jsonw_kstr(w, "kind", leaf ? leaf->kind : NULL);
}

/* One runtime's tokio::sync locks that its tasks hold (inferred) or
 * await, each once, in the order first met: holders, then waits. */
static void json_task_locks(struct jsonw *w, const struct sd_tokio_rt *rt)
{
	size_t n = 0, cap = 0;
	uint64_t *seen = NULL;
	for (size_t pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < rt->ntasks; i++) {
			const struct sd_tokio_task *t = &rt->tasks[i];
			for (size_t h = 0; h < (pass ? 1 : t->nholds); h++) {
				uint64_t a = pass ? t->wait_addr : t->holds[h].addr;
				size_t k = 0;
				while (k < n && seen[k] != a)
					k++;
				if (!a || k < n)
					continue;
				sd_grow(&seen, &cap, n + 1, sizeof(*seen));
				seen[n++] = a;
				/* The holder: the one the graph names for its waiters,
				 * else the first keeping a guard or permit. */
				const struct sd_tokio_task *hd = NULL;
				for (size_t x = 0; x < rt->ntasks && !hd; x++)
					if (rt->tasks[x].wait_addr == a && rt->tasks[x].held_by)
						for (size_t y = 0; y < rt->ntasks && !hd; y++)
							if (rt->tasks[y].id == rt->tasks[x].held_by)
								hd = &rt->tasks[y];
				for (size_t y = 0; y < rt->ntasks && !hd; y++)
					if (task_hold(&rt->tasks[y], a))
						hd = &rt->tasks[y];
				const struct sd_tokio_hold *ev = hd ? task_hold(hd, a) : NULL;
				jsonw_object_begin(w);
				if (ev)
					jsonw_kstr(w, "kind", ev->kind);
				else
					wait_kind(w, t);
				jsonw_khex(w, "address", a);
				jsonw_karray(w, "waiters");
				for (size_t x = 0; x < rt->ntasks; x++)
					if (rt->tasks[x].wait_addr == a)
						jsonw_u64(w, rt->tasks[x].id);
				jsonw_array_end(w);
				if (hd) {
					jsonw_ku64(w, "holder", hd->id);
					jsonw_kstr(w, "holder_future", hd->future);
					jsonw_kstr(w, "holder_state", hd->state);
				} else {
					jsonw_knull(w, "holder");
					jsonw_knull(w, "holder_future");
					jsonw_knull(w, "holder_state");
				}
				/* No tokio::sync lock records its holder: a holder is
				 * always inferred from its state machine. */
				jsonw_kbool(w, "inferred", hd != NULL);
				jsonw_kstr(w, "evidence", ev ? ev->evidence : NULL);
				/* Every task keeping one (a semaphore's permits: more). */
				jsonw_karray(w, "holders");
				for (size_t y = 0; y < rt->ntasks; y++)
					if (task_hold(&rt->tasks[y], a))
						jsonw_u64(w, rt->tasks[y].id);
				jsonw_array_end(w);
				jsonw_object_end(w);
			}
		}
	free(seen);
}

/* "tokio": a Tokio program's locks among tasks, per runtime, and the
 * cycles among them (nothing for other programs). */
static void json_tokio_locks(struct jsonw *w, const struct sd_snapshot *s)
{
	if (!s->tokio_read)
		return;
	jsonw_kobject(w, "tokio");
	jsonw_kstr(w, "note", s->tokio_note);
	jsonw_karray(w, "runtimes");
	for (size_t i = 0; i < s->ntokio; i++) {
		const struct sd_tokio_rt *rt = &s->tokio[i];
		jsonw_object_begin(w);
		jsonw_ku64(w, "id", rt->id);
		jsonw_kstr(w, "flavor", rt->flavor);
		jsonw_karray(w, "locks");
		json_task_locks(w, rt);
		jsonw_array_end(w);
		format_tokio_json_deadlocks(w, rt);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	jsonw_object_end(w);
}

void format_json_locks(struct jsonw *w, const struct sd_snapshot *s, const struct sd_lockgraph *g,
		       const struct sd_parked *parked, size_t nparked, size_t nsnaps, double span,
		       const struct sd_long_poll *lp, size_t nlp)
{
	jsonw_object_begin(w);
	jsonw_kint(w, "pid", s->pid);
	jsonw_kstr(w, "comm", s->comm);
	jsonw_kdouble(w, "time", s->time);
	if (s->core)
		jsonw_knull(w, "pause_us"); /* a core: nothing was paused */
	else
		jsonw_ku64(w, "pause_us", s->pause_us);
	jsonw_kbool(w, "partial", s->partial);
	jsonw_karray(w, "locks");
	for (size_t i = 0; i < g->nlocks; i++)
		json_lock(w, s, &g->locks[i]);
	jsonw_array_end(w);
	jsonw_karray(w, "idle");
	for (size_t i = 0; i < g->nidle; i++)
		json_lock(w, s, &g->idle[i]);
	jsonw_array_end(w);
	jsonw_karray(w, "deadlocks");
	for (size_t i = 0; i < g->ndeadlocks; i++) {
		const struct sd_deadlock *d = &g->deadlocks[i];
		jsonw_array_begin(w);
		for (size_t e = 0; e < d->n; e++) {
			const struct sd_lock_edge *ed = &d->edges[e];
			jsonw_object_begin(w);
			jsonw_kint(w, "tid", ed->tid);
			jsonw_kstr(w, "kind", sd_wait_kind_name(ed->kind));
			jsonw_khex(w, "address", ed->address);
			jsonw_kint(w, "owner", ed->owner);
			kname(w, "name", s, ed->tid);
			jsonw_kstr(w, "symbol", ed->symbol);
			kname(w, "owner_name", s, ed->owner);
			jsonw_kstr(w, "owner_evidence", sd_evidence_name(ed->owner_evidence));
			kframe(w, "owner_frame", ed->owner_frame);
			if (ed->owner_evidence == SD_EVIDENCE_STACK)
				jsonw_kstr(w, "evidence", ed->note);
			jsonw_object_end(w);
		}
		jsonw_array_end(w);
	}
	jsonw_array_end(w);
	format_go_locks_json(w, s);
	json_tokio_locks(w, s);
	/* The verdict's findings, the dump's "findings" (threads' and tasks'). */
	format_json_findings(w, s, g);
	if (nsnaps > 1) {
		jsonw_ku64(w, "snapshots", nsnaps);
		jsonw_kdouble(w, "seconds", span);
		jsonw_karray(w, "parked");
		for (size_t i = 0; i < nparked; i++) {
			const struct sd_parked *p = &parked[i];
			jsonw_object_begin(w);
			jsonw_kint(w, "tid", p->tid);
			jsonw_kstr(w, "name", p->name);
			jsonw_kstr(w, "kind", sd_wait_kind_name(p->wait.kind));
			jsonw_khex(w, "address", p->wait.address);
			jsonw_kstr(w, "symbol", p->wait.symbol);
			if (p->wait.owner_known && p->wait.owner > 0)
				jsonw_kint(w, "owner", p->wait.owner);
			else
				jsonw_knull(w, "owner");
			jsonw_kbool(w, "idle", locks_is_idle(p->wait.kind));
			jsonw_kdouble(w, "seconds", p->seconds);
			jsonw_kbool(w, "moved", p->moved);
			jsonw_ku64(w, "voluntary_ctxt_switches", p->switches);
			jsonw_object_end(w);
		}
		jsonw_array_end(w);
		/* A Tokio program's workers inside one poll across the series. */
		jsonw_karray(w, "long_polls");
		for (size_t i = 0; i < nlp; i++)
			longpoll_json(w, &lp[i]);
		jsonw_array_end(w);
	}
	jsonw_object_end(w);
}
