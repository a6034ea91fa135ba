// SPDX-License-Identifier: MIT
// Findings of one snapshot, what a reader wants before any stack: deadlock
// cycles, the lock with the most waiters and its holder, threads stuck in
// D state; in a Tokio program, deadlocks among tasks, workers parked on a
// lock (the std-mutex stall) and the FutureLock (format-tokio.c says
// those). The plain dump and the lock view say them first at a terminal
// (last in a pipe); a JSON dump carries them as "findings".
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format-tokio.h"
#include "format.h"
#include "group.h"
#include "locks.h"

#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_WARN "\033[1;31m"

/* Bytes of a compressed list of names on a finding's line. */
#define NAMES_MAX 40

static const char *col(const struct sd_render_opts *o, const char *c)
{
	return o && o->color ? c : "";
}

/* "mutex <g_lock>" (the symbol says which), else "mutex 0x5555..." */
static void add_object(struct strbuf *out, enum sd_wait_kind kind, uint64_t address,
		       const char *symbol)
{
	strbuf_adds(out, locks_kind_name(kind));
	if (symbol) {
		strbuf_adds(out, " <");
		strbuf_add_escaped(out, symbol);
		strbuf_adds(out, ">");
	} else if (address) {
		strbuf_addf(out, " 0x%" PRIx64, address);
	}
}

/* The frame of TH a reader recognizes: the innermost one of the program
 * itself (S's executable), else the innermost one with a name. -1: none. */
static long own_frame(const struct sd_snapshot *s, const struct sd_thread *th)
{
	const char *exe = format_base_name(s->exe);
	for (size_t k = 0; exe && k < th->nframes; k++)
		if (th->frames[k].module && !strcmp(th->frames[k].module, exe))
			return (long)k;
	for (size_t k = 0; k < th->nframes; k++)
		if (th->frames[k].function)
			return (long)k;
	return -1;
}

/* "in journal_sync at pool.c:40" for TH's own frame; nothing without one. */
static void add_where(struct strbuf *out, const struct sd_snapshot *s, const struct sd_thread *th)
{
	long k = th ? own_frame(s, th) : -1;
	if (k < 0)
		return;
	const struct sd_frame *f = &th->frames[k];
	strbuf_adds(out, "in ");
	strbuf_add_escaped(out, f->function ? f->function : "??");
	if (f->file && f->line > 0) {
		strbuf_adds(out, " at ");
		strbuf_add_escaped(out, format_base_name(f->file));
		strbuf_addf(out, ":%d", f->line);
	}
}

/* A group of the threads of S whose TIDs are TIDS, for group_names. */
static size_t names_of(struct strbuf *out, const struct sd_snapshot *s, const pid_t *tids,
		       size_t n)
{
	struct sd_group gr = {sd_xcalloc(n ? n : 1, sizeof(size_t)), 0};
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < s->nthreads; k++)
			if (s->threads[k].tid == tids[i]) {
				gr.idx[gr.n++] = k;
				break;
			}
	if (gr.n) {
		strbuf_adds(out, "\"");
		group_names(out, s, &gr, NAMES_MAX);
		strbuf_adds(out, "\"");
	}
	free(gr.idx);
	return gr.n;
}

static int in_deadlock(const struct sd_lockgraph *g, pid_t tid)
{
	for (size_t i = 0; i < g->ndeadlocks; i++)
		for (size_t e = 0; e < g->deadlocks[i].n; e++)
			if (g->deadlocks[i].edges[e].tid == tid)
				return 1;
	return 0;
}

/* The lock with the most waiters that a deadlock does not already
 * explain, or NULL. The graph's locks come most waiters first. */
static const struct sd_lock *contended(const struct sd_snapshot *s, const struct sd_lockgraph *g)
{
	for (size_t i = 0; i < g->nlocks; i++) {
		const struct sd_lock *l = &g->locks[i];
		if (l->kind == SD_WAIT_JOIN || !l->nwaiters || format_tokio_stalled_on(s, l))
			continue;
		size_t free_waiters = 0;
		for (size_t k = 0; k < l->nwaiters; k++)
			free_waiters += !in_deadlock(g, l->waiters[k]);
		if (free_waiters)
			return l;
	}
	return NULL;
}

static size_t count_d(const struct sd_snapshot *s)
{
	size_t n = 0;
	for (size_t i = 0; i < s->nthreads; i++)
		n += s->threads[i].state == 'D';
	return n;
}

/* One finding: its one-line summary (SUMMARY) and the lines under it
 * (DETAIL, each "    ...\n"); either may be NULL. Returns whether
 * there is a finding of KIND number I. */
static int finding(const struct sd_snapshot *s, const struct sd_lockgraph *g, int kind, size_t i,
		   struct strbuf *summary, struct strbuf *detail, const struct sd_render_opts *o)
{
	/* Kinds 1 to 3: among a Tokio program's tasks. */
	if (kind >= 1 && kind <= 3)
		return format_tokio_finding(s, g, kind - 1, i, summary, detail, o);
	if (kind > 3)
		kind -= 3;
	if (kind == 0) {
		if (i >= g->ndeadlocks)
			return 0;
		const struct sd_deadlock *d = &g->deadlocks[i];
		if (summary) {
			if (d->n == 1) {
				strbuf_adds(summary, "deadlock: ");
				format_thread_label(summary, s, d->edges[0].tid);
				strbuf_adds(summary, " waits for a lock it holds");
			} else {
				strbuf_addf(summary, "deadlock: %zu threads wait for each other", d->n);
			}
		}
		for (size_t e = 0; detail && e < d->n; e++) {
			const struct sd_lock_edge *ed = &d->edges[e];
			const struct sd_thread *th = snapshot_find_thread(s, ed->tid);
			strbuf_adds(detail, "    ");
			format_thread_label(detail, s, ed->tid);
			strbuf_adds(detail, " waits for ");
			add_object(detail, ed->kind, ed->address, ed->symbol);
			strbuf_adds(detail, " held by ");
			format_thread_label(detail, s, ed->owner);
			strbuf_adds(detail, "\n");
			if (th && own_frame(s, th) >= 0) {
				strbuf_adds(detail, "      ");
				add_where(detail, s, th);
				strbuf_adds(detail, "\n");
			}
		}
		return 1;
	}
	if (kind == 1) {
		const struct sd_lock *l = i == 0 ? contended(s, g) : NULL;
		if (!l)
			return 0;
		if (summary) {
			strbuf_adds(summary, "most waited for: ");
			add_object(summary, l->kind, l->address, l->symbol);
			strbuf_addf(summary, ", %zu waiter%s", l->nwaiters,
				    l->nwaiters == 1 ? "" : "s");
		}
		if (!detail)
			return 1;
		const struct sd_thread *h =
		    l->owner_known ? snapshot_find_thread(s, l->owner) : NULL;
		strbuf_adds(detail, "    ");
		if (l->owner_known) {
			strbuf_adds(detail, "held by ");
			format_thread_label(detail, s, l->owner);
			if (l->owner_evidence == SD_EVIDENCE_STACK)
				strbuf_adds(detail, " (inferred)");
			if (h && own_frame(s, h) >= 0) {
				strbuf_adds(detail, "\n      ");
				add_where(detail, s, h);
			}
		} else if (l->ncandidates) {
			strbuf_addf(detail, "holder unknown: one of %zu candidates", l->ncandidates);
		} else {
			strbuf_adds(detail, "holder unknown");
		}
		strbuf_adds(detail, "\n    waiters: ");
		if (!names_of(detail, s, l->waiters, l->nwaiters))
			strbuf_adds(detail, "(none in this snapshot)");
		const struct sd_thread *w = snapshot_find_thread(s, l->waiters[0]);
		if (w && own_frame(s, w) >= 0) {
			strbuf_adds(detail, "\n      ");
			add_where(detail, s, w);
		}
		strbuf_adds(detail, "\n");
		return 1;
	}
	if (kind == 2) {
		size_t n = count_d(s);
		if (i > 0 || !n)
			return 0;
		if (summary)
			strbuf_addf(summary, "%zu thread%s in D state (uninterruptible, in the kernel)",
				    n, n == 1 ? "" : "s");
		size_t shown = 0;
		for (size_t k = 0; detail && k < s->nthreads; k++) {
			const struct sd_thread *th = &s->threads[k];
			if (th->state != 'D')
				continue;
			if (shown++ == 8) {
				strbuf_addf(detail, "    ... and %zu more\n", n - 8);
				break;
			}
			strbuf_adds(detail, "    ");
			format_thread_label(detail, s, th->tid);
			if (th->wchan)
				strbuf_addf(detail, " (wchan %s)", th->wchan);
			strbuf_adds(detail, "\n");
		}
		return 1;
	}
	return 0;
}

#define NKINDS 6

static const char *const kind_names[NKINDS] = {"deadlock",	"task_deadlock", "tokio_stall",
					       "future_lock",	"contended_lock", "d_state"};

size_t format_findings_count(const struct sd_snapshot *s, const struct sd_lockgraph *g)
{
	size_t n = 0;
	for (int kind = 0; kind < NKINDS; kind++)
		for (size_t i = 0; finding(s, g, kind, i, NULL, NULL, NULL); i++)
			n++;
	return n;
}

size_t format_text_findings(struct strbuf *out, const struct sd_snapshot *s,
			    const struct sd_lockgraph *g, int always,
			    const struct sd_render_opts *o)
{
	size_t n = format_findings_count(s, g);
	if (!n) {
		if (always)
			strbuf_addf(out, "%sVerdict:%s no deadlock, no lock waited for, no thread "
					 "in D state\n",
				    col(o, C_BOLD), col(o, C_RESET));
		return 0;
	}
	strbuf_addf(out, "%sVerdict:%s ", col(o, C_BOLD), col(o, C_RESET));
	size_t cycles = g->ndeadlocks + format_tokio_task_cycles(s);
	if (cycles)
		strbuf_addf(out, "%sDEADLOCK%s (%zu cycle%s%s)", col(o, C_WARN), col(o, C_RESET),
			    cycles, cycles == 1 ? "" : "s", g->ndeadlocks ? "" : " among tasks");
	else
		strbuf_adds(out, "no deadlock");
	strbuf_addf(out, ", %zu finding%s\n", n, n == 1 ? "" : "s");
	for (int kind = 0; kind < NKINDS; kind++) {
		for (size_t i = 0;; i++) {
			struct strbuf sum, det;
			strbuf_init(&sum);
			strbuf_init(&det);
			int got = finding(s, g, kind, i, &sum, &det, o);
			if (got) {
				strbuf_addf(out, "  %s%s%s\n", col(o, kind <= 1 ? C_WARN : C_BOLD),
					    sum.buf, col(o, C_RESET));
				strbuf_add(out, det.buf, det.len);
			}
			strbuf_release(&sum);
			strbuf_release(&det);
			if (!got)
				break;
		}
	}
	return n;
}

static void json_object(struct jsonw *w, enum sd_wait_kind kind, uint64_t address,
			const char *symbol, int owner_known, pid_t owner)
{
	jsonw_object_begin(w);
	jsonw_kstr(w, "kind", locks_kind_name(kind));
	jsonw_khex(w, "address", address);
	jsonw_kstr(w, "symbol", symbol);
	if (owner_known)
		jsonw_kint(w, "owner", owner);
	else
		jsonw_knull(w, "owner");
	jsonw_object_end(w);
}

void format_json_findings(struct jsonw *w, const struct sd_snapshot *s,
			  const struct sd_lockgraph *g)
{
	jsonw_karray(w, "findings");
	for (int kind = 0; kind < NKINDS; kind++) {
		for (size_t i = 0;; i++) {
			struct strbuf sum;
			strbuf_init(&sum);
			int got = finding(s, g, kind, i, &sum, NULL, NULL);
			if (!got) {
				strbuf_release(&sum);
				break;
			}
			jsonw_object_begin(w);
			jsonw_kstr(w, "kind", kind_names[kind]);
			jsonw_kstr(w, "summary", sum.buf);
			strbuf_release(&sum);
			if (kind >= 1 && kind <= 3) {
				format_tokio_finding_json(w, s, g, kind - 1, i);
				jsonw_object_end(w);
				continue;
			}
			jsonw_karray(w, "threads");
			if (kind == 0) {
				const struct sd_deadlock *d = &g->deadlocks[i];
				for (size_t e = 0; e < d->n; e++)
					jsonw_int(w, d->edges[e].tid);
				jsonw_array_end(w);
				jsonw_karray(w, "objects");
				for (size_t e = 0; e < d->n; e++)
					json_object(w, d->edges[e].kind, d->edges[e].address,
						    d->edges[e].symbol, 1, d->edges[e].owner);
			} else if (kind == 4) {
				const struct sd_lock *l = contended(s, g);
				if (l->owner_known)
					jsonw_int(w, l->owner);
				for (size_t k = 0; k < l->nwaiters; k++)
					jsonw_int(w, l->waiters[k]);
				jsonw_array_end(w);
				jsonw_karray(w, "objects");
				json_object(w, l->kind, l->address, l->symbol, l->owner_known,
					    l->owner);
			} else {
				for (size_t k = 0; k < s->nthreads; k++)
					if (s->threads[k].state == 'D')
						jsonw_int(w, s->threads[k].tid);
				jsonw_array_end(w);
				jsonw_karray(w, "objects");
			}
			jsonw_array_end(w);
			if (kind == 4) {
				const struct sd_lock *l = contended(s, g);
				if (l->owner_known)
					jsonw_kint(w, "holder", l->owner);
				else
					jsonw_knull(w, "holder");
				jsonw_ku64(w, "waiters", l->nwaiters);
			}
			jsonw_object_end(w);
		}
	}
	jsonw_array_end(w);
}
