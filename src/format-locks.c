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
#include "locks.h"

#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_WARN "\033[31m"

/* Thread names listed on one line before "... and N more". */
#define NAMES_SHOWN 16

static const char *col(const struct sd_render_opts *o, const char *c)
{
	return o && o->color ? c : "";
}

static void add_thread_label(struct strbuf *out, const struct sd_snapshot *s, pid_t tid)
{
	const struct sd_thread *th = snapshot_find_thread(s, tid);
	strbuf_addf(out, "%d", (int)tid);
	if (th && th->name) {
		strbuf_adds(out, " \"");
		strbuf_add_escaped(out, th->name);
		strbuf_adds(out, "\"");
	}
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
	for (size_t k = 0; k < th->nframes; k++) {
		strbuf_adds(out, "  ");
		format_text_frame(out, k, &th->frames[k], o);
		format_text_holds(out, th, (long)k, o);
	}
	format_text_holds(out, th, -1, o);
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
	for (size_t i = 0; i < nparked; i++) {
		const struct sd_parked *p = &parked[i];
		if (locks_is_idle(p->wait.kind))
			continue;
		const struct sd_thread *th = snapshot_find_thread(s, p->tid);
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
	strbuf_addf(out, ", %zu thread%s, paused %.2f ms", s->nthreads, s->nthreads == 1 ? "" : "s",
		    (double)s->pause_us / 1000.0);
	if (nsnaps > 1)
		strbuf_addf(out, " (the last of %zu snapshots)", nsnaps);
	if (s->partial)
		strbuf_adds(out, ", partial");
	strbuf_adds(out, "\n");
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
}

/* ---- JSON ---- */

static json_t *jhex(uint64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return json_string(buf);
}

/* Names and symbols the target chose: escaped when not UTF-8, never
 * dropped (format_json_str). */
static json_t *jstr(const char *str)
{
	return format_json_str(str);
}

static json_t *jname(const struct sd_snapshot *s, pid_t tid)
{
	const struct sd_thread *th = tid > 0 ? snapshot_find_thread(s, tid) : NULL;
	return jstr(th ? th->name : NULL);
}

static json_t *jtids(const pid_t *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer(v[i]));
	return a;
}

static json_t *json_lock(const struct sd_snapshot *s, const struct sd_lock *l)
{
	json_t *o = json_object();
	json_object_set_new(o, "kind", json_string(locks_kind_name(l->kind)));
	json_object_set_new(o, "address", jhex(l->address));
	json_object_set_new(o, "symbol", jstr(l->symbol));
	json_object_set_new(o, "owner", l->owner_known ? json_integer(l->owner) : json_null());
	json_object_set_new(o, "waiters", jtids(l->waiters, l->nwaiters));
	json_object_set_new(o, "type", jstr(l->subkind));
	json_object_set_new(o, "owner_name", l->owner_known ? jname(s, l->owner) : json_null());
	json_object_set_new(o, "note", jstr(l->note));
	json_object_set_new(o, "owner_evidence",
			    l->owner_known ? jstr(sd_evidence_name(l->owner_evidence)) : json_null());
	json_object_set_new(o, "owner_frame", l->owner_known && l->owner_frame >= 0
						      ? json_integer(l->owner_frame)
						      : json_null());
	if (!locks_is_idle(l->kind)) {
		json_t *c = json_array();
		for (size_t i = 0; i < l->ncandidates; i++) {
			json_t *x = json_object();
			json_object_set_new(x, "tid", json_integer(l->candidates[i].tid));
			json_object_set_new(x, "name", jname(s, l->candidates[i].tid));
			json_object_set_new(x, "frame", l->candidates[i].frame >= 0
								? json_integer(l->candidates[i].frame)
								: json_null());
			json_object_set_new(x, "certain", json_boolean(l->candidates[i].certain));
			json_array_append_new(c, x);
		}
		json_object_set_new(o, "candidates", c);
	}
	if (l->kind == SD_WAIT_RWLOCK_READ || l->kind == SD_WAIT_RUST_RWLOCK) {
		json_object_set_new(o, "readers_waiting", json_integer((json_int_t)l->nreaders));
		json_object_set_new(o, "writers_waiting", json_integer((json_int_t)l->nwriters));
	}
	return o;
}

json_t *format_json_locks(const struct sd_snapshot *s, const struct sd_lockgraph *g,
			  const struct sd_parked *parked, size_t nparked, size_t nsnaps,
			  double span)
{
	json_t *o = json_object();
	json_object_set_new(o, "pid", json_integer(s->pid));
	json_object_set_new(o, "comm", jstr(s->comm));
	json_object_set_new(o, "time", json_real(s->time));
	json_object_set_new(o, "pause_us", json_integer((json_int_t)s->pause_us));
	json_object_set_new(o, "partial", json_boolean(s->partial));
	json_t *locks = json_array();
	for (size_t i = 0; i < g->nlocks; i++)
		json_array_append_new(locks, json_lock(s, &g->locks[i]));
	json_object_set_new(o, "locks", locks);
	json_t *idle = json_array();
	for (size_t i = 0; i < g->nidle; i++)
		json_array_append_new(idle, json_lock(s, &g->idle[i]));
	json_object_set_new(o, "idle", idle);
	json_t *dl = json_array();
	for (size_t i = 0; i < g->ndeadlocks; i++) {
		const struct sd_deadlock *d = &g->deadlocks[i];
		json_t *cyc = json_array();
		for (size_t e = 0; e < d->n; e++) {
			const struct sd_lock_edge *ed = &d->edges[e];
			json_t *x = json_object();
			json_object_set_new(x, "tid", json_integer(ed->tid));
			json_object_set_new(x, "kind", json_string(sd_wait_kind_name(ed->kind)));
			json_object_set_new(x, "address", jhex(ed->address));
			json_object_set_new(x, "owner", json_integer(ed->owner));
			json_object_set_new(x, "name", jname(s, ed->tid));
			json_object_set_new(x, "symbol", jstr(ed->symbol));
			json_object_set_new(x, "owner_name", jname(s, ed->owner));
			json_object_set_new(x, "owner_evidence",
					    jstr(sd_evidence_name(ed->owner_evidence)));
			json_object_set_new(x, "owner_frame", ed->owner_frame >= 0
								  ? json_integer(ed->owner_frame)
								  : json_null());
			if (ed->owner_evidence == SD_EVIDENCE_STACK)
				json_object_set_new(x, "evidence", jstr(ed->note));
			json_array_append_new(cyc, x);
		}
		json_array_append_new(dl, cyc);
	}
	json_object_set_new(o, "deadlocks", dl);
	if (nsnaps > 1) {
		json_object_set_new(o, "snapshots", json_integer((json_int_t)nsnaps));
		json_object_set_new(o, "seconds", json_real(span));
		json_t *pa = json_array();
		for (size_t i = 0; i < nparked; i++) {
			const struct sd_parked *p = &parked[i];
			json_t *x = json_object();
			json_object_set_new(x, "tid", json_integer(p->tid));
			json_object_set_new(x, "name", jstr(p->name));
			json_object_set_new(x, "kind",
					    json_string(sd_wait_kind_name(p->wait.kind)));
			json_object_set_new(x, "address", jhex(p->wait.address));
			json_object_set_new(x, "symbol", jstr(p->wait.symbol));
			json_object_set_new(x, "owner", p->wait.owner_known && p->wait.owner > 0
								 ? json_integer(p->wait.owner)
								 : json_null());
			json_object_set_new(x, "idle", json_boolean(locks_is_idle(p->wait.kind)));
			json_object_set_new(x, "seconds", json_real(p->seconds));
			json_object_set_new(x, "moved", json_boolean(p->moved));
			json_object_set_new(x, "voluntary_ctxt_switches",
					    json_integer((json_int_t)p->switches));
			json_array_append_new(pa, x);
		}
		json_object_set_new(o, "parked", pa);
	}
	return o;
}
