// SPDX-License-Identifier: MIT
// Tokio tasks rendered (format-tokio.h): text after the threads, grouped
// by chain, and the dump schema's "runtimes".
#include "format-tokio.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "group.h"
#include "locks.h"

static int in_cycle(const struct sd_tokio_rt *rt, size_t idx);
static void task_wait_text(struct strbuf *out, const struct sd_tokio_task *t);

static int same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Two tasks are one group when their state, future and chain agree
 * level by level (function, file:line, kind; not the detail: deadlines
 * and addresses differ task by task). */
static int same(const struct sd_tokio_task *a, const struct sd_tokio_task *b)
{
	if (!same_str(a->state, b->state) || !same_str(a->future, b->future) ||
	    a->nawaits != b->nawaits || !same_str(a->note, b->note))
		return 0;
	/* A task in the lock graph is shown on its own. */
	if (a->nholds || b->nholds || a->held_by || b->held_by)
		return 0;
	for (size_t k = 0; k < a->nawaits; k++) {
		const struct sd_tokio_await *x = &a->awaits[k], *y = &b->awaits[k];
		if (!same_str(x->function, y->function) || !same_str(x->file, y->file) ||
		    x->line != y->line || !same_str(x->kind, y->kind))
			return 0;
	}
	return 1;
}

static uint64_t hstr(const char *s, uint64_t h)
{
	return s ? sd_hash(s, strlen(s), h) : sd_hash("", 1, h);
}

static uint64_t tkey(const struct sd_tokio_task *t)
{
	uint64_t h = hstr(t->state, 0x70c);
	h = hstr(t->future, h);
	for (size_t k = 0; k < t->nawaits; k++) {
		h = hstr(t->awaits[k].function, h);
		h = sd_hash(&t->awaits[k].line, sizeof(t->awaits[k].line), h);
	}
	return h ? h : 1;
}

static uint64_t task_key(const void *arg, size_t i)
{
	return tkey(&((const struct sd_tokio_rt *)arg)->tasks[i]);
}

static int task_same(const void *arg, size_t i, size_t j)
{
	const struct sd_tokio_rt *rt = arg;
	return same(&rt->tasks[i], &rt->tasks[j]);
}

static size_t group(const struct sd_tokio_rt *rt, size_t *of, size_t *count)
{
	return group_items(rt->ntasks, rt, task_key, task_same, of, count);
}

static void chain(struct strbuf *out, const struct sd_tokio_task *t, const struct sd_render_opts *o)
{
	for (size_t k = 0; k < t->nawaits; k++) {
		const struct sd_tokio_await *a = &t->awaits[k];
		strbuf_adds(out, a->kind ? "    -> " : "    ");
		if (a->kind) {
			strbuf_add_escaped(out, a->kind);
			strbuf_adds(out, " ");
		}
		strbuf_add_escaped(out, a->function ? a->function : "?");
		if (a->file && !o->no_source) {
			strbuf_adds(out, " at ");
			strbuf_add_escaped(out, a->file);
			strbuf_addf(out, ":%d", a->line);
		}
		if (a->detail) {
			strbuf_adds(out, " (");
			strbuf_add_escaped(out, a->detail);
			strbuf_adds(out, ")");
		}
		if (a->kind && t->held_by)
			strbuf_addf(out, " held by task %" PRIu64, t->held_by);
		strbuf_adds(out, "\n");
	}
	for (size_t k = 0; k < t->nholds; k++) {
		const struct sd_tokio_hold *h = &t->holds[k];
		strbuf_addf(out, "    - holds (inferred) %s 0x%" PRIx64, h->kind, h->addr);
		if (h->evidence) {
			strbuf_adds(out, ": ");
			strbuf_add_escaped(out, h->evidence);
		}
		strbuf_adds(out, "\n");
	}
	if (t->note) {
		strbuf_adds(out, "    -- ");
		strbuf_add_escaped(out, t->note);
		strbuf_adds(out, "\n");
	}
}

static void task_head(struct strbuf *out, const struct sd_tokio_task *t)
{
	strbuf_adds(out, "[");
	strbuf_add_escaped(out, t->state ? t->state : "?");
	strbuf_adds(out, "]");
	if (t->future) {
		strbuf_adds(out, " ");
		strbuf_add_escaped(out, t->future);
	}
}

#define ID_LIST_MAX 72

/* The level of T's chain a person wrote the .await of: the deepest with a
 * file outside tokio's own code, else the deepest with a file. */
static const struct sd_tokio_await *own_level(const struct sd_tokio_task *t)
{
	const struct sd_tokio_await *any = NULL;
	for (size_t k = t->nawaits; k-- > 0;) {
		const struct sd_tokio_await *a = &t->awaits[k];
		if (!a->file)
			continue;
		if (!a->function || strncmp(a->function, "tokio::", 7))
			return a;
		if (!any)
			any = a;
	}
	return any;
}

static const char *hold_kind(const struct sd_tokio_task *t, uint64_t addr)
{
	for (size_t k = 0; k < t->nholds; k++)
		if (t->holds[k].addr == addr)
			return t->holds[k].kind;
	return "lock";
}

/* "Found 1 deadlock among tasks: task 17 holds tokio::sync::Mutex 0x..
 * and awaits tokio::sync::Mutex 0x.. at a.rs:40; task 23 ..." */
static void deadlocks(struct strbuf *out, const struct sd_tokio_rt *rt,
		      const struct sd_render_opts *o)
{
	if (!rt->ncycles)
		return;
	strbuf_addf(out, "\n%sFound %zu deadlock%s among tasks:%s\n", o->color ? "\033[1;31m" : "",
		    rt->ncycles, rt->ncycles == 1 ? "" : "s", o->color ? "\033[0m" : "");
	size_t at = 0;
	for (size_t c = 0; c < rt->ncycles; c++) {
		strbuf_adds(out, " ");
		for (size_t k = 0; k < rt->cycle_len[c]; k++) {
			const struct sd_tokio_task *t = &rt->tasks[rt->cycle_tasks[at + k]];
			const struct sd_tokio_task *h =
			    &rt->tasks[rt->cycle_tasks[at + (k + 1) % rt->cycle_len[c]]];
			const struct sd_tokio_await *lv = own_level(t);
			strbuf_addf(out, "%s task %" PRIu64, k ? ";" : "", t->id);
			/* What it holds that the one before it in the cycle awaits. */
			const struct sd_tokio_task *p =
			    &rt->tasks[rt->cycle_tasks[at + (k + rt->cycle_len[c] - 1) % rt->cycle_len[c]]];
			if (p->wait_addr)
				strbuf_addf(out, " holds %s 0x%" PRIx64 " and", hold_kind(t, p->wait_addr),
					    p->wait_addr);
			strbuf_addf(out, " awaits %s 0x%" PRIx64, hold_kind(h, t->wait_addr),
				    t->wait_addr);
			if (lv && !o->no_source) {
				strbuf_adds(out, " at ");
				strbuf_add_escaped(out, lv->file);
				strbuf_addf(out, ":%d", lv->line);
			}
		}
		strbuf_adds(out, "\n");
		at += rt->cycle_len[c];
	}
}

static void runtime_text(struct strbuf *out, const struct sd_snapshot *s,
			 const struct sd_tokio_rt *rt, const struct sd_render_opts *o)
{
	strbuf_addf(out, "%sPID %d (", o->color ? "\033[1m" : "", (int)s->pid);
	strbuf_add_escaped(out, s->comm ? s->comm : "?");
	strbuf_addf(out, ") Tokio runtime 0x%" PRIx64 " (%s), %zu task%s", rt->id,
		    rt->flavor ? rt->flavor : "?", rt->ntasks, rt->ntasks == 1 ? "" : "s");
	if (rt->injected >= 0)
		strbuf_addf(out, ", %lld in its global queue", (long long)rt->injected);
	if (rt->nworkers) {
		strbuf_adds(out, ", threads");
		for (size_t i = 0; i < rt->nworkers; i++)
			strbuf_addf(out, " %d", (int)rt->workers[i]);
	}
	/* Each worker's local run queue, where it could be read. */
	for (size_t i = 0, n = 0; rt->worker_queued && i < rt->nworkers; i++)
		if (rt->worker_queued[i] >= 0)
			strbuf_addf(out, "%s %d:%lld", n++ ? "" : ", local queues", (int)rt->workers[i],
				    (long long)rt->worker_queued[i]);
	strbuf_addf(out, "%s\n", o->color ? "\033[0m" : "");
	for (size_t i = 0; i < rt->nblocking; i++) {
		const struct sd_tokio_blocking *b = &rt->blocking[i];
		strbuf_addf(out, "  blocking pool thread %d ", (int)b->tid);
		if (b->job) {
			strbuf_adds(out, "runs spawn_blocking job ");
			strbuf_add_escaped(out, b->job);
		} else {
			strbuf_adds(out, b->idle ? "idle, waiting for a job" : "runs a job of unknown type");
		}
		strbuf_adds(out, "\n");
	}
	size_t n = rt->ntasks;
	size_t *of = sd_xcalloc(n + 1, sizeof(*of)), *count = sd_xcalloc(n + 1, sizeof(*count));
	size_t ngroups = o->go_group ? group(rt, of, count) : 0;
	unsigned char *shown = sd_xcalloc(ngroups + 1, 1);
	for (size_t i = 0; i < n; i++) {
		const struct sd_tokio_task *t = &rt->tasks[i];
		size_t c = o->go_group ? count[of[i]] : 1;
		int merge = o->go_group == 1 ? c > 1 : o->go_group == 2 ? c >= 4 : 0;
		if (!merge) {
			strbuf_addf(out, "\ntask %" PRIu64 " ", t->id);
			task_head(out, t);
			if (t->worker)
				strbuf_addf(out, " on thread %d", (int)t->worker);
			strbuf_adds(out, "\n");
			chain(out, t, o);
			continue;
		}
		if (shown[of[i]])
			continue;
		shown[of[i]] = 1;
		struct strbuf ids;
		strbuf_init(&ids);
		for (size_t k = i; k < n; k++) {
			if (of[k] != of[i])
				continue;
			if (ids.len < ID_LIST_MAX)
				strbuf_addf(&ids, "%s%" PRIu64, ids.len ? " " : "", rt->tasks[k].id);
			else if (ids.buf[ids.len - 1] != '.')
				strbuf_adds(&ids, " ...");
		}
		strbuf_addf(out, "\n%zu tasks ", c);
		task_head(out, t);
		strbuf_addf(out, ": %s\n", ids.buf);
		strbuf_release(&ids);
		chain(out, t, o);
	}
	free(shown);
	free(of);
	free(count);
	deadlocks(out, rt, o);
}

size_t format_tokio_locks_text(struct strbuf *out, const struct sd_snapshot *s,
			       const struct sd_render_opts *o)
{
	size_t cycles = 0;
	for (size_t i = 0; i < s->ntokio; i++) {
		const struct sd_tokio_rt *rt = &s->tokio[i];
		int header = 0;
		for (size_t k = 0; k < rt->ntasks; k++) {
			const struct sd_tokio_task *t = &rt->tasks[k];
			for (size_t h = 0; h < t->nholds; h++) {
				const struct sd_tokio_hold *hd = &t->holds[h];
				size_t waiters = 0;
				for (size_t w = 0; w < rt->ntasks; w++)
					waiters += rt->tasks[w].wait_addr == hd->addr &&
						   rt->tasks[w].held_by == t->id;
				if (!waiters)
					continue;
				if (!header++)
					strbuf_addf(out, "\nTokio runtime 0x%" PRIx64 ": locks among tasks\n",
						    rt->id);
				strbuf_addf(out, "\n%s 0x%" PRIx64 ": held (inferred) by task %" PRIu64,
					    hd->kind, hd->addr, t->id);
				if (t->future) {
					strbuf_adds(out, " ");
					strbuf_add_escaped(out, t->future);
				}
				strbuf_adds(out, "\n");
				if (hd->evidence) {
					strbuf_adds(out, "  evidence: ");
					strbuf_add_escaped(out, hd->evidence);
					strbuf_adds(out, "\n");
				}
				strbuf_addf(out, "  awaited by %zu task%s:", waiters, waiters == 1 ? "" : "s");
				for (size_t w = 0; w < rt->ntasks; w++) {
					const struct sd_tokio_task *x = &rt->tasks[w];
					if (x->wait_addr != hd->addr || x->held_by != t->id)
						continue;
					const struct sd_tokio_await *lv = own_level(x);
					strbuf_addf(out, " %" PRIu64, x->id);
					if (lv && !o->no_source) {
						strbuf_adds(out, " (");
						strbuf_add_escaped(out, lv->file);
						strbuf_addf(out, ":%d)", lv->line);
					}
				}
				strbuf_adds(out, "\n");
				/* Suspended on something else while it keeps the lock:
				 * the FutureLock (a cycle is a deadlock, below). */
				if (t->state && !strcmp(t->state, "idle") && !t->held_by &&
				    !in_cycle(rt, k)) {
					strbuf_adds(out, "  FutureLock: the holder is suspended, it awaits ");
					task_wait_text(out, t);
					strbuf_adds(out, "\n");
				}
			}
		}
		deadlocks(out, rt, o);
		cycles += rt->ncycles;
	}
	return cycles;
}

uint64_t format_tokio_task_of(const struct sd_snapshot *s, pid_t tid)
{
	for (size_t i = 0; i < s->ntokio; i++)
		for (size_t k = 0; k < s->tokio[i].nworkers; k++)
			if (s->tokio[i].workers[k] == tid && s->tokio[i].worker_tasks)
				return s->tokio[i].worker_tasks[k];
	return 0;
}

void format_tokio_text(struct strbuf *out, const struct sd_snapshot *s,
		       const struct sd_render_opts *o)
{
	if (!s->tokio_read)
		return;
	strbuf_adds(out, "\n");
	if (!s->ntokio) {
		strbuf_addf(out, "%sPID %d (", o->color ? "\033[1m" : "", (int)s->pid);
		strbuf_add_escaped(out, s->comm ? s->comm : "?");
		strbuf_addf(out, ") Tokio: no tasks shown%s\n", o->color ? "\033[0m" : "");
	}
	if (s->tokio_note) {
		strbuf_adds(out, "  note: ");
		strbuf_add_escaped(out, s->tokio_note);
		strbuf_adds(out, "\n");
	}
	if (o->verbose)
		strbuf_addf(out, "  tasks read in %.2f ms\n", (double)s->tokio_us / 1000.0);
	for (size_t i = 0; i < s->ntokio; i++) {
		if (i)
			strbuf_adds(out, "\n");
		runtime_text(out, s, &s->tokio[i], o);
	}
}

void format_tokio_json(struct jsonw *w, const struct sd_snapshot *s)
{
	if (!s->tokio_read)
		return;
	jsonw_kobject(w, "tokio");
	jsonw_kstr(w, "note", s->tokio_note);
	jsonw_object_end(w);
	jsonw_karray(w, "runtimes");
	for (size_t i = 0; i < s->ntokio; i++) {
		const struct sd_tokio_rt *rt = &s->tokio[i];
		jsonw_object_begin(w);
		jsonw_ku64(w, "id", rt->id);
		jsonw_kstr(w, "flavor", rt->flavor);
		if (rt->injected >= 0)
			jsonw_kint(w, "injected", rt->injected);
		else
			jsonw_knull(w, "injected");
		jsonw_karray(w, "workers");
		for (size_t k = 0; k < rt->nworkers; k++)
			jsonw_int(w, rt->workers[k]);
		jsonw_array_end(w);
		/* Per worker: the tasks in its local run queue (null: not read). */
		jsonw_karray(w, "queued");
		for (size_t k = 0; k < rt->nworkers; k++)
			if (rt->worker_queued && rt->worker_queued[k] >= 0)
				jsonw_int(w, rt->worker_queued[k]);
			else
				jsonw_null(w);
		jsonw_array_end(w);
		jsonw_karray(w, "blocking");
		for (size_t k = 0; k < rt->nblocking; k++) {
			jsonw_object_begin(w);
			jsonw_kint(w, "thread", rt->blocking[k].tid);
			jsonw_kstr(w, "state", rt->blocking[k].idle ? "idle" : "running");
			jsonw_kstr(w, "job", rt->blocking[k].job);
			jsonw_object_end(w);
		}
		jsonw_array_end(w);
		/* What each thread polls now (the std-mutex stall: the task of
		 * each parked worker, and of the holder). */
		jsonw_karray(w, "polling");
		for (size_t k = 0; k < rt->nworkers; k++) {
			if (!rt->worker_tasks || !rt->worker_tasks[k])
				continue;
			jsonw_object_begin(w);
			jsonw_kint(w, "thread", rt->workers[k]);
			jsonw_ku64(w, "task", rt->worker_tasks[k]);
			/* Its worker core's tick: the same in two snapshots with the
			 * same task, one poll (a long poll). */
			if (rt->worker_ticks && rt->worker_ticks[k] >= 0)
				jsonw_kint(w, "tick", rt->worker_ticks[k]);
			else
				jsonw_knull(w, "tick");
			jsonw_object_end(w);
		}
		jsonw_array_end(w);
		jsonw_karray(w, "tasks");
		for (size_t k = 0; k < rt->ntasks; k++) {
			const struct sd_tokio_task *t = &rt->tasks[k];
			jsonw_object_begin(w);
			jsonw_ku64(w, "id", t->id);
			jsonw_kstr(w, "state", t->state);
			if (t->worker)
				jsonw_kint(w, "worker", t->worker);
			else
				jsonw_knull(w, "worker");
			jsonw_kstr(w, "future", t->future);
			jsonw_karray(w, "awaits");
			for (size_t a = 0; a < t->nawaits; a++) {
				const struct sd_tokio_await *x = &t->awaits[a];
				jsonw_object_begin(w);
				jsonw_kstr(w, "function", x->function);
				jsonw_kstr(w, "file", x->file);
				if (x->file)
					jsonw_kint(w, "line", x->line);
				else
					jsonw_knull(w, "line");
				jsonw_kstr(w, "kind", x->kind);
				jsonw_kstr(w, "detail", x->detail);
				jsonw_object_end(w);
			}
			jsonw_array_end(w);
			jsonw_karray(w, "holds");
			for (size_t a = 0; a < t->nholds; a++) {
				jsonw_object_begin(w);
				jsonw_kstr(w, "kind", t->holds[a].kind);
				jsonw_ku64(w, "address", t->holds[a].addr);
				jsonw_kstr(w, "evidence", t->holds[a].evidence);
				jsonw_kbool(w, "inferred", 1);
				jsonw_object_end(w);
			}
			jsonw_array_end(w);
			if (t->held_by)
				jsonw_ku64(w, "held_by", t->held_by);
			else
				jsonw_knull(w, "held_by");
			/* The tokio::sync lock its leaf waits for. */
			if (t->wait_addr)
				jsonw_khex(w, "waits_for", t->wait_addr);
			else
				jsonw_knull(w, "waits_for");
			jsonw_kstr(w, "note", t->note);
			jsonw_object_end(w);
		}
		jsonw_array_end(w);
		format_tokio_json_deadlocks(w, rt);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
}

/* RT's deadlocks among tasks, as "deadlocks": [[task id, ...], ...]. */
void format_tokio_json_deadlocks(struct jsonw *w, const struct sd_tokio_rt *rt)
{
	jsonw_karray(w, "deadlocks");
	for (size_t c = 0, at = 0; c < rt->ncycles; at += rt->cycle_len[c], c++) {
		jsonw_array_begin(w);
		for (size_t k = 0; k < rt->cycle_len[c]; k++)
			jsonw_u64(w, rt->tasks[rt->cycle_tasks[at + k]].id);
		jsonw_array_end(w);
	}
	jsonw_array_end(w);
}

/* ---- Findings among tasks (format-findings.c lists them) ---- */

/* Threads and tasks named on a finding's lines before "... and N more". */
#define FIND_SHOWN 8

static const struct sd_tokio_task *task_by_id(const struct sd_tokio_rt *rt, uint64_t id)
{
	for (size_t i = 0; id && i < rt->ntasks; i++)
		if (rt->tasks[i].id == id)
			return &rt->tasks[i];
	return NULL;
}

/* The runtime thread TID drives in S (and the task it polls), or NULL. */
static const struct sd_tokio_rt *runtime_of(const struct sd_snapshot *s, pid_t tid,
					    uint64_t *task)
{
	for (size_t i = 0; i < s->ntokio; i++)
		for (size_t k = 0; k < s->tokio[i].nworkers; k++)
			if (s->tokio[i].workers[k] == tid) {
				*task = s->tokio[i].worker_tasks ? s->tokio[i].worker_tasks[k] : 0;
				return &s->tokio[i];
			}
	return NULL;
}

/* The thread TID of a runtime's blocking pool, or NULL. */
static const struct sd_tokio_blocking *blocking_of(const struct sd_snapshot *s, pid_t tid)
{
	for (size_t i = 0; i < s->ntokio; i++)
		for (size_t k = 0; k < s->tokio[i].nblocking; k++)
			if (s->tokio[i].blocking[k].tid == tid)
				return &s->tokio[i].blocking[k];
	return NULL;
}

/* "task 15 fx::want" for the task TID polls; nothing when it polls none. */
static int polled_task(struct strbuf *out, const struct sd_snapshot *s, pid_t tid)
{
	uint64_t id = 0;
	const struct sd_tokio_rt *rt = runtime_of(s, tid, &id);
	const struct sd_tokio_task *t = rt ? task_by_id(rt, id) : NULL;
	if (!t)
		return 0;
	strbuf_addf(out, "task %" PRIu64, t->id);
	if (t->future) {
		strbuf_adds(out, " ");
		strbuf_add_escaped(out, t->future);
	}
	/* Where in it: the frame of its own async fn or block on TID's stack
	 * ("fx::want::{async_fn#0}"), innermost first. */
	const struct sd_thread *th = snapshot_find_thread(s, tid);
	size_t fl = t->future ? strlen(t->future) : 0;
	for (size_t k = 0; th && fl && k < th->nframes; k++) {
		const struct sd_frame *f = &th->frames[k];
		if (!f->function || strncmp(f->function, t->future, fl) ||
		    (f->function[fl] && f->function[fl] != ':'))
			continue;
		strbuf_adds(out, "\n      in ");
		strbuf_add_escaped(out, f->function);
		if (f->file && f->line > 0) {
			strbuf_adds(out, " at ");
			strbuf_add_escaped(out, format_base_name(f->file));
			strbuf_addf(out, ":%d", f->line);
		}
		break;
	}
	return 1;
}

/* Is L a lock that threads of a Tokio runtime are parked on (the std-mutex
 * stall: a worker parked in a lock stops every task behind it)? */
int format_tokio_stalled_on(const struct sd_snapshot *s, const struct sd_lock *l)
{
	uint64_t task;
	if (l->kind == SD_WAIT_JOIN || locks_is_idle(l->kind))
		return 0;
	for (size_t k = 0; k < l->nwaiters; k++)
		if (runtime_of(s, l->waiters[k], &task))
			return 1;
	return 0;
}

static const struct sd_lock *stall_lock(const struct sd_snapshot *s, const struct sd_lockgraph *g,
					size_t i)
{
	for (size_t k = 0; k < g->nlocks; k++)
		if (format_tokio_stalled_on(s, &g->locks[k]) && i-- == 0)
			return &g->locks[k];
	return NULL;
}

static int in_cycle(const struct sd_tokio_rt *rt, size_t idx)
{
	size_t all = 0;
	for (size_t c = 0; c < rt->ncycles; c++)
		all += rt->cycle_len[c];
	for (size_t k = 0; k < all; k++)
		if (rt->cycle_tasks[k] == idx)
			return 1;
	return 0;
}

static size_t lock_waiters(const struct sd_tokio_rt *rt, const struct sd_tokio_task *t,
			   uint64_t addr)
{
	size_t n = 0;
	for (size_t w = 0; w < rt->ntasks; w++)
		n += rt->tasks[w].wait_addr == addr && rt->tasks[w].held_by == t->id;
	return n;
}

/* The I-th FutureLock of S: a task suspended (idle) on something other
 * than a lock another task holds, keeping a lock tasks wait for. */
static int future_lock(const struct sd_snapshot *s, size_t i, const struct sd_tokio_rt **rtp,
		       const struct sd_tokio_task **tp, const struct sd_tokio_hold **hp)
{
	for (size_t r = 0; r < s->ntokio; r++) {
		const struct sd_tokio_rt *rt = &s->tokio[r];
		for (size_t k = 0; k < rt->ntasks; k++) {
			const struct sd_tokio_task *t = &rt->tasks[k];
			if (!t->nholds || !t->state || strcmp(t->state, "idle") || t->held_by ||
			    in_cycle(rt, k))
				continue;
			for (size_t h = 0; h < t->nholds; h++) {
				if (!lock_waiters(rt, t, t->holds[h].addr) || i-- != 0)
					continue;
				*rtp = rt;
				*tp = t;
				*hp = &t->holds[h];
				return 1;
			}
		}
	}
	return 0;
}

/* The I-th cycle among the tasks of S's runtimes: its runtime and where
 * its tasks start in cycle_tasks. */
static int task_cycle(const struct sd_snapshot *s, size_t i, const struct sd_tokio_rt **rtp,
		      size_t *at, size_t *len)
{
	for (size_t r = 0; r < s->ntokio; r++) {
		const struct sd_tokio_rt *rt = &s->tokio[r];
		size_t from = 0;
		for (size_t c = 0; c < rt->ncycles; from += rt->cycle_len[c], c++)
			if (i-- == 0) {
				*rtp = rt;
				*at = from;
				*len = rt->cycle_len[c];
				return 1;
			}
	}
	return 0;
}

size_t format_tokio_task_cycles(const struct sd_snapshot *s)
{
	size_t n = 0;
	for (size_t r = 0; r < s->ntokio; r++)
		n += s->tokio[r].ncycles;
	return n;
}

static void task_wait_text(struct strbuf *out, const struct sd_tokio_task *t)
{
	const struct sd_tokio_await *leaf = t->nawaits ? &t->awaits[t->nawaits - 1] : NULL;
	const struct sd_tokio_await *lv = own_level(t);
	if (leaf && leaf->kind) {
		strbuf_adds(out, leaf->kind);
		strbuf_adds(out, " ");
		strbuf_add_escaped(out, leaf->function ? leaf->function : "?");
		if (leaf->detail) {
			strbuf_adds(out, " (");
			strbuf_add_escaped(out, leaf->detail);
			strbuf_adds(out, ")");
		}
	} else {
		strbuf_adds(out, "something");
	}
	if (lv) {
		strbuf_adds(out, " at ");
		strbuf_add_escaped(out, lv->file);
		strbuf_addf(out, ":%d", lv->line);
	}
}

static int stall_finding(const struct sd_snapshot *s, const struct sd_lockgraph *g, size_t i,
			 struct strbuf *summary, struct strbuf *detail)
{
	const struct sd_lock *l = stall_lock(s, g, i);
	if (!l)
		return 0;
	size_t nw = 0;
	uint64_t task;
	const struct sd_tokio_rt *rt = NULL;
	for (size_t k = 0; k < l->nwaiters; k++)
		if (runtime_of(s, l->waiters[k], &task)) {
			rt = rt ? rt : runtime_of(s, l->waiters[k], &task);
			nw++;
		}
	if (summary) {
		strbuf_addf(summary, "Tokio stall: %zu worker%s parked on %s 0x%" PRIx64, nw,
			    nw == 1 ? "" : "s", locks_kind_name(l->kind), l->address);
		if (l->symbol) {
			strbuf_adds(summary, " <");
			strbuf_add_escaped(summary, l->symbol);
			strbuf_adds(summary, ">");
		}
		strbuf_adds(summary, ": the tasks they poll and those queued behind them wait");
	}
	if (!detail)
		return 1;
	strbuf_adds(detail, "    ");
	if (l->owner_known) {
		strbuf_adds(detail, "held by thread ");
		format_thread_label(detail, s, l->owner);
		if (l->owner_evidence == SD_EVIDENCE_STACK)
			strbuf_adds(detail, " (inferred)");
		struct strbuf pt;
		strbuf_init(&pt);
		const struct sd_tokio_blocking *bj = blocking_of(s, l->owner);
		if (polled_task(&pt, s, l->owner)) {
			strbuf_adds(detail, ", polling ");
			strbuf_add(detail, pt.buf, pt.len);
		} else if (bj && bj->job) {
			strbuf_adds(detail, ", running spawn_blocking job ");
			strbuf_add_escaped(detail, bj->job);
		} else if (runtime_of(s, l->owner, &task)) {
			strbuf_adds(detail, ", a thread of the runtime polling no task of it");
		}
		strbuf_release(&pt);
	} else {
		strbuf_adds(detail, "holder unknown");
	}
	strbuf_adds(detail, "\n");
	size_t shown = 0;
	for (size_t k = 0; k < l->nwaiters; k++) {
		if (!runtime_of(s, l->waiters[k], &task))
			continue;
		if (shown++ == FIND_SHOWN) {
			strbuf_addf(detail, "    ... and %zu more workers\n", nw - FIND_SHOWN);
			break;
		}
		strbuf_adds(detail, "    worker ");
		format_thread_label(detail, s, l->waiters[k]);
		strbuf_adds(detail, " parked, polling ");
		if (!polled_task(detail, s, l->waiters[k]))
			strbuf_adds(detail, "no task it could name");
		strbuf_adds(detail, "\n");
	}
	size_t queued = 0;
	for (size_t k = 0; rt && k < rt->ntasks; k++)
		queued += rt->tasks[k].state && !strcmp(rt->tasks[k].state, "scheduled");
	if (queued)
		strbuf_addf(detail, "    %zu task%s scheduled, waiting for a worker\n", queued,
			    queued == 1 ? "" : "s");
	return 1;
}

static int future_lock_finding(const struct sd_snapshot *s, size_t i, struct strbuf *summary,
			       struct strbuf *detail, const struct sd_render_opts *o)
{
	const struct sd_tokio_rt *rt;
	const struct sd_tokio_task *t;
	const struct sd_tokio_hold *hd;
	if (!future_lock(s, i, &rt, &t, &hd))
		return 0;
	size_t nw = lock_waiters(rt, t, hd->addr);
	if (summary) {
		strbuf_addf(summary, "FutureLock: task %" PRIu64, t->id);
		if (t->future) {
			strbuf_adds(summary, " ");
			strbuf_add_escaped(summary, t->future);
		}
		strbuf_addf(summary, " holds %s 0x%" PRIx64 " while it awaits something else; %zu task%s wait%s for it",
			    hd->kind, hd->addr, nw, nw == 1 ? "" : "s", nw == 1 ? "s" : "");
	}
	if (!detail)
		return 1;
	strbuf_addf(detail, "    task %" PRIu64 " awaits ", t->id);
	task_wait_text(detail, t);
	strbuf_adds(detail, "\n");
	if (hd->evidence) {
		strbuf_adds(detail, "      holding the lock (inferred): ");
		strbuf_add_escaped(detail, hd->evidence);
		strbuf_adds(detail, "\n");
	}
	strbuf_adds(detail, "    waiting for the lock:");
	size_t shown = 0;
	for (size_t w = 0; w < rt->ntasks; w++) {
		const struct sd_tokio_task *x = &rt->tasks[w];
		if (x->wait_addr != hd->addr || x->held_by != t->id)
			continue;
		if (shown++ == FIND_SHOWN) {
			strbuf_addf(detail, " ... and %zu more", nw - FIND_SHOWN);
			break;
		}
		const struct sd_tokio_await *lv = own_level(x);
		strbuf_addf(detail, " task %" PRIu64, x->id);
		if (lv && !o->no_source) {
			strbuf_adds(detail, " (");
			strbuf_add_escaped(detail, lv->file);
			strbuf_addf(detail, ":%d)", lv->line);
		}
	}
	strbuf_adds(detail, "\n");
	size_t polling = 0;
	for (size_t k = 0; k < rt->nworkers; k++)
		polling += rt->worker_tasks && rt->worker_tasks[k];
	if (!polling && rt->nworkers)
		strbuf_addf(detail, "    no thread of the runtime polls a task (%zu idle): a thread dump "
				    "shows an idle runtime\n",
			    rt->nworkers);
	return 1;
}

static int deadlock_finding(const struct sd_snapshot *s, size_t i, struct strbuf *summary,
			    struct strbuf *detail, const struct sd_render_opts *o)
{
	const struct sd_tokio_rt *rt;
	size_t at, len;
	if (!task_cycle(s, i, &rt, &at, &len))
		return 0;
	if (summary)
		strbuf_addf(summary, "deadlock among tasks: %zu tasks wait for each other's locks", len);
	for (size_t k = 0; detail && k < len; k++) {
		const struct sd_tokio_task *t = &rt->tasks[rt->cycle_tasks[at + k]];
		const struct sd_tokio_task *h = &rt->tasks[rt->cycle_tasks[at + (k + 1) % len]];
		strbuf_addf(detail, "    task %" PRIu64, t->id);
		if (t->future) {
			strbuf_adds(detail, " ");
			strbuf_add_escaped(detail, t->future);
		}
		strbuf_addf(detail, " awaits %s 0x%" PRIx64 " held by task %" PRIu64 "\n",
			    hold_kind(h, t->wait_addr), t->wait_addr, h->id);
		const struct sd_tokio_await *lv = own_level(t);
		if (lv && !o->no_source) {
			strbuf_adds(detail, "      at ");
			strbuf_add_escaped(detail, lv->file);
			strbuf_addf(detail, ":%d\n", lv->line);
		}
	}
	return 1;
}

int format_tokio_finding(const struct sd_snapshot *s, const struct sd_lockgraph *g, int kind,
			 size_t i, struct strbuf *summary, struct strbuf *detail,
			 const struct sd_render_opts *o)
{
	static const struct sd_render_opts none;
	if (!o)
		o = &none;
	if (!s->ntokio)
		return 0;
	switch (kind) {
	case SD_TOKIO_FINDING_DEADLOCK:
		return deadlock_finding(s, i, summary, detail, o);
	case SD_TOKIO_FINDING_STALL:
		return stall_finding(s, g, i, summary, detail);
	case SD_TOKIO_FINDING_FUTURE_LOCK:
		return future_lock_finding(s, i, summary, detail, o);
	}
	return 0;
}

static void lock_object(struct jsonw *w, const char *kind, uint64_t addr, const char *symbol)
{
	jsonw_object_begin(w);
	jsonw_kstr(w, "kind", kind);
	jsonw_khex(w, "address", addr);
	jsonw_kstr(w, "symbol", symbol);
	jsonw_knull(w, "owner");
	jsonw_object_end(w);
}

void format_tokio_finding_json(struct jsonw *w, const struct sd_snapshot *s,
			       const struct sd_lockgraph *g, int kind, size_t i)
{
	jsonw_karray(w, "threads");
	if (kind == SD_TOKIO_FINDING_DEADLOCK) {
		const struct sd_tokio_rt *rt;
		size_t at, len;
		task_cycle(s, i, &rt, &at, &len);
		jsonw_array_end(w);
		jsonw_karray(w, "objects");
		for (size_t k = 0; k < len; k++) {
			const struct sd_tokio_task *t = &rt->tasks[rt->cycle_tasks[at + k]];
			const struct sd_tokio_task *h = &rt->tasks[rt->cycle_tasks[at + (k + 1) % len]];
			lock_object(w, hold_kind(h, t->wait_addr), t->wait_addr, NULL);
		}
		jsonw_array_end(w);
		jsonw_karray(w, "tasks");
		for (size_t k = 0; k < len; k++)
			jsonw_u64(w, rt->tasks[rt->cycle_tasks[at + k]].id);
		jsonw_array_end(w);
		jsonw_ku64(w, "runtime", rt->id);
		return;
	}
	if (kind == SD_TOKIO_FINDING_STALL) {
		const struct sd_lock *l = stall_lock(s, g, i);
		uint64_t task = 0, id;
		const struct sd_tokio_rt *rt = NULL;
		for (size_t k = 0; k < l->nwaiters; k++)
			if (runtime_of(s, l->waiters[k], &task)) {
				jsonw_int(w, l->waiters[k]);
				rt = rt ? rt : runtime_of(s, l->waiters[k], &task);
			}
		jsonw_array_end(w);
		jsonw_karray(w, "objects");
		jsonw_object_begin(w);
		jsonw_kstr(w, "kind", locks_kind_name(l->kind));
		jsonw_khex(w, "address", l->address);
		jsonw_kstr(w, "symbol", l->symbol);
		if (l->owner_known)
			jsonw_kint(w, "owner", l->owner);
		else
			jsonw_knull(w, "owner");
		jsonw_object_end(w);
		jsonw_array_end(w);
		/* The task each parked worker polls, in the order of "threads"
		 * (null: none named). */
		jsonw_karray(w, "tasks");
		for (size_t k = 0; k < l->nwaiters; k++) {
			if (!runtime_of(s, l->waiters[k], &task))
				continue;
			if (task)
				jsonw_u64(w, task);
			else
				jsonw_null(w);
		}
		jsonw_array_end(w);
		if (l->owner_known)
			jsonw_kint(w, "holder", l->owner);
		else
			jsonw_knull(w, "holder");
		id = 0;
		if (l->owner_known && runtime_of(s, l->owner, &id) && id)
			jsonw_ku64(w, "holder_task", id);
		else
			jsonw_knull(w, "holder_task");
		/* A holder of the blocking pool: the spawn_blocking job it runs. */
		const struct sd_tokio_blocking *bj = l->owner_known ? blocking_of(s, l->owner) : NULL;
		jsonw_kstr(w, "holder_job", bj ? bj->job : NULL);
		if (rt)
			jsonw_ku64(w, "runtime", rt->id);
		return;
	}
	const struct sd_tokio_rt *rt;
	const struct sd_tokio_task *t;
	const struct sd_tokio_hold *hd;
	future_lock(s, i, &rt, &t, &hd);
	jsonw_array_end(w);
	jsonw_karray(w, "objects");
	lock_object(w, hd->kind, hd->addr, NULL);
	jsonw_array_end(w);
	jsonw_karray(w, "tasks");
	jsonw_u64(w, t->id);
	for (size_t k = 0; k < rt->ntasks; k++)
		if (rt->tasks[k].wait_addr == hd->addr && rt->tasks[k].held_by == t->id)
			jsonw_u64(w, rt->tasks[k].id);
	jsonw_array_end(w);
	jsonw_ku64(w, "holder_task", t->id);
	jsonw_ku64(w, "runtime", rt->id);
}
