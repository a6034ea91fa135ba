// SPDX-License-Identifier: MIT
// A Tokio program's runtimes and tasks in a saved snapshot (snapio-tokio.h):
// written as the dump's JSON gives them ("tokio", "runtimes"), read back
// leniently: a saved file whose tasks cannot be read still loads, its
// threads intact, with a note that says what was wrong.
#include "snapio-tokio.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format-tokio.h"
#include "strpool.h"

/* Bounds on what a saved file may claim. */
#define TKS_MAX_RUNTIMES 16
#define TKS_MAX_TASKS (1u << 20)
#define TKS_MAX_AWAITS 256
#define TKS_MAX_HOLDS 64
#define TKS_MAX_WORKERS 65536

void snapio_put_tokio(struct jsonw *w, const struct sd_snapshot *s)
{
	format_tokio_json(w, s);
}

/* The string member KEY of O, interned (NULL: absent or null); -1 when it
 * is there and no string. */
static int str(struct sd_snapshot *s, json_t *o, const char *key, const char **out)
{
	json_t *v = json_object_get(o, key);
	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return -1;
	*out = strpool_intern(s->pool, json_string_value(v));
	return 0;
}

/* An unsigned integer member, or a "0x..." string (0 when absent or null). */
static int u64m(json_t *o, const char *key, uint64_t *out)
{
	json_t *v = json_object_get(o, key);
	*out = 0;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (json_is_string(v)) {
		const char *p = json_string_value(v);
		char *end;
		if (strncmp(p, "0x", 2))
			return -1;
		errno = 0;
		unsigned long long x = strtoull(p + 2, &end, 16);
		if (errno || *end || end == p + 2)
			return -1;
		*out = x;
		return 0;
	}
	return -1;
}

static const char *const states[] = {"idle", "scheduled", "running", "complete", "cancelled", NULL};

static int read_task(struct sd_snapshot *s, json_t *o, struct sd_tokio_task *t, char *why,
		     size_t whylen)
{
	uint64_t x;
	const char *st;
	if (!json_is_object(o) || u64m(o, "id", &t->id) < 0 || str(s, o, "state", &st) < 0 ||
	    str(s, o, "future", &t->future) < 0 || str(s, o, "note", &t->note) < 0 ||
	    u64m(o, "worker", &x) < 0 || x > INT32_MAX || u64m(o, "held_by", &t->held_by) < 0 ||
	    u64m(o, "waits_for", &t->wait_addr) < 0) {
		snprintf(why, whylen, "a task is no object of the expected members");
		return -1;
	}
	t->worker = (pid_t)x;
	t->state = NULL;
	for (size_t i = 0; st && states[i]; i++)
		if (!strcmp(st, states[i]))
			t->state = states[i];
	if (!t->state) {
		snprintf(why, whylen, "task %" PRIu64 ": no state of the five", t->id);
		return -1;
	}
	json_t *aw = json_object_get(o, "awaits"), *hd = json_object_get(o, "holds");
	size_t na = json_is_array(aw) ? json_array_size(aw) : 0;
	size_t nh = json_is_array(hd) ? json_array_size(hd) : 0;
	if (na > TKS_MAX_AWAITS || nh > TKS_MAX_HOLDS) {
		snprintf(why, whylen, "task %" PRIu64 ": %zu levels, %zu locks held", t->id, na, nh);
		return -1;
	}
	t->awaits = na ? sd_xcalloc(na, sizeof(*t->awaits)) : NULL;
	for (size_t i = 0; i < na; i++) {
		json_t *a = json_array_get(aw, i);
		struct sd_tokio_await *l = &t->awaits[t->nawaits++];
		json_t *line = json_object_get(a, "line");
		if (!json_is_object(a) || str(s, a, "function", &l->function) < 0 ||
		    str(s, a, "file", &l->file) < 0 || str(s, a, "kind", &l->kind) < 0 ||
		    str(s, a, "detail", &l->detail) < 0 ||
		    (line && !json_is_null(line) &&
		     (!json_is_integer(line) || json_integer_value(line) < 0 ||
		      json_integer_value(line) > INT32_MAX))) {
			snprintf(why, whylen, "task %" PRIu64 ": awaits[%zu]", t->id, i);
			return -1;
		}
		l->line = json_is_integer(line) ? (int)json_integer_value(line) : 0;
	}
	t->holds = nh ? sd_xcalloc(nh, sizeof(*t->holds)) : NULL;
	for (size_t i = 0; i < nh; i++) {
		json_t *h = json_array_get(hd, i);
		struct sd_tokio_hold *l = &t->holds[t->nholds++];
		if (!json_is_object(h) || str(s, h, "kind", &l->kind) < 0 || !l->kind ||
		    u64m(h, "address", &l->addr) < 0 || str(s, h, "evidence", &l->evidence) < 0) {
			snprintf(why, whylen, "task %" PRIu64 ": holds[%zu]", t->id, i);
			return -1;
		}
	}
	return 0;
}

/* A runtime's local queue depths (one per worker, null: not read) and
 * the threads of its blocking pool (each with the job it runs, or idle),
 * as format_tokio_json writes them; files from before have neither. */
static int read_queues(struct sd_snapshot *s, json_t *o, struct sd_tokio_rt *rt, char *why,
		       size_t whylen)
{
	json_t *qd = json_object_get(o, "queued"), *bl = json_object_get(o, "blocking");
	if (json_is_array(qd) && rt->nworkers) {
		if (json_array_size(qd) != rt->nworkers) {
			snprintf(why, whylen, "queued: %zu depths for %zu workers",
				 json_array_size(qd), rt->nworkers);
			return -1;
		}
		rt->worker_queued = sd_xcalloc(rt->nworkers, sizeof(*rt->worker_queued));
		for (size_t i = 0; i < rt->nworkers; i++) {
			json_t *v = json_array_get(qd, i);
			if (!json_is_null(v) && (!json_is_integer(v) || json_integer_value(v) < 0)) {
				snprintf(why, whylen, "queued[%zu]", i);
				return -1;
			}
			rt->worker_queued[i] = json_is_integer(v) ? json_integer_value(v) : -1;
		}
	}
	size_t nb = json_is_array(bl) ? json_array_size(bl) : 0;
	if (nb > TKS_MAX_WORKERS) {
		snprintf(why, whylen, "%zu blocking pool threads", nb);
		return -1;
	}
	rt->blocking = nb ? sd_xcalloc(nb, sizeof(*rt->blocking)) : NULL;
	for (size_t i = 0; i < nb; i++) {
		json_t *b = json_array_get(bl, i);
		uint64_t tid = 0;
		const char *st = NULL, *job = NULL;
		if (!json_is_object(b) || u64m(b, "thread", &tid) < 0 || !tid || tid > INT32_MAX ||
		    str(s, b, "state", &st) < 0 || !st ||
		    (strcmp(st, "idle") && strcmp(st, "running")) || str(s, b, "job", &job) < 0) {
			snprintf(why, whylen, "blocking[%zu]", i);
			return -1;
		}
		struct sd_tokio_blocking *t = &rt->blocking[rt->nblocking++];
		t->tid = (pid_t)tid;
		t->idle = !strcmp(st, "idle");
		t->job = t->idle ? NULL : job;
	}
	return 0;
}

static int read_runtime(struct sd_snapshot *s, json_t *o, struct sd_tokio_rt *rt, char *why,
			size_t whylen)
{
	const char *fl;
	json_t *inj = json_object_get(o, "injected");
	if (!json_is_object(o) || u64m(o, "id", &rt->id) < 0 || str(s, o, "flavor", &fl) < 0 ||
	    !fl || (strcmp(fl, "multi_thread") && strcmp(fl, "current_thread"))) {
		snprintf(why, whylen, "a runtime without its id or flavor");
		return -1;
	}
	rt->flavor = fl;
	rt->injected = json_is_integer(inj) && json_integer_value(inj) >= 0 ? json_integer_value(inj)
									    : -1;
	json_t *wk = json_object_get(o, "workers"), *pl = json_object_get(o, "polling");
	size_t nw = json_is_array(wk) ? json_array_size(wk) : 0;
	if (nw > TKS_MAX_WORKERS) {
		snprintf(why, whylen, "%zu workers", nw);
		return -1;
	}
	rt->workers = sd_xcalloc(nw + 1, sizeof(*rt->workers));
	rt->worker_tasks = sd_xcalloc(nw + 1, sizeof(*rt->worker_tasks));
	rt->worker_ticks = sd_xcalloc(nw + 1, sizeof(*rt->worker_ticks));
	for (size_t i = 0; i < nw; i++) {
		json_t *v = json_array_get(wk, i);
		if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
		    json_integer_value(v) > INT32_MAX) {
			snprintf(why, whylen, "workers[%zu]", i);
			return -1;
		}
		rt->workers[rt->nworkers] = (pid_t)json_integer_value(v);
		rt->worker_ticks[rt->nworkers++] = -1;
	}
	if (read_queues(s, o, rt, why, whylen) < 0)
		return -1;
	for (size_t i = 0; json_is_array(pl) && i < json_array_size(pl); i++) {
		json_t *p = json_array_get(pl, i), *tk = json_object_get(p, "tick");
		uint64_t tid = 0, task = 0;
		if (!json_is_object(p) || u64m(p, "thread", &tid) < 0 || u64m(p, "task", &task) < 0) {
			snprintf(why, whylen, "polling[%zu]", i);
			return -1;
		}
		for (size_t k = 0; k < rt->nworkers; k++)
			if ((uint64_t)rt->workers[k] == tid) {
				rt->worker_tasks[k] = task;
				rt->worker_ticks[k] = json_is_integer(tk) && json_integer_value(tk) >= 0
							  ? json_integer_value(tk)
							  : -1;
			}
	}
	json_t *ts = json_object_get(o, "tasks");
	size_t nt = json_is_array(ts) ? json_array_size(ts) : 0;
	if (nt > TKS_MAX_TASKS) {
		snprintf(why, whylen, "%zu tasks", nt);
		return -1;
	}
	rt->tasks = sd_xcalloc(nt + 1, sizeof(*rt->tasks));
	for (size_t i = 0; i < nt; i++)
		if (read_task(s, json_array_get(ts, i), &rt->tasks[rt->ntasks++], why, whylen) < 0)
			return -1;
	/* The cycles by task id, back to indexes. */
	json_t *dl = json_object_get(o, "deadlocks");
	size_t cap = 0, lcap = 0, used = 0;
	for (size_t c = 0; json_is_array(dl) && c < json_array_size(dl) && c < 64; c++) {
		json_t *cy = json_array_get(dl, c);
		size_t len = json_is_array(cy) ? json_array_size(cy) : 0;
		if (!len || len > rt->ntasks) {
			snprintf(why, whylen, "deadlocks[%zu]", c);
			return -1;
		}
		sd_grow(&rt->cycle_len, &lcap, rt->ncycles + 1, sizeof(*rt->cycle_len));
		sd_grow(&rt->cycle_tasks, &cap, used + len, sizeof(*rt->cycle_tasks));
		for (size_t k = 0; k < len; k++) {
			json_t *v = json_array_get(cy, k);
			size_t at = 0;
			while (json_is_integer(v) && at < rt->ntasks &&
			       rt->tasks[at].id != (uint64_t)json_integer_value(v))
				at++;
			if (!json_is_integer(v) || at == rt->ntasks) {
				snprintf(why, whylen, "deadlocks[%zu]: no such task", c);
				return -1;
			}
			rt->cycle_tasks[used++] = at;
		}
		rt->cycle_len[rt->ncycles++] = len;
	}
	return 0;
}

void snapio_get_tokio(json_t *doc, struct sd_snapshot *s)
{
	json_t *tk = json_object_get(doc, "tokio"), *rts = json_object_get(doc, "runtimes");
	if (!tk && !rts)
		return; /* no Tokio program, or saved before tasks were */
	s->tokio_read = 1;
	const char *note = NULL;
	if (json_is_object(tk) && str(s, tk, "note", &note) == 0)
		s->tokio_note = note;
	size_t n = json_is_array(rts) ? json_array_size(rts) : 0;
	char why[200] = "";
	if (!json_is_array(rts) || n > TKS_MAX_RUNTIMES) {
		snprintf(why, sizeof(why), "runtimes is no array of at most %d", TKS_MAX_RUNTIMES);
		n = 0;
	}
	s->tokio = sd_xcalloc(n + 1, sizeof(*s->tokio));
	for (size_t i = 0; i < n && !why[0]; i++)
		if (read_runtime(s, json_array_get(rts, i), &s->tokio[s->ntokio++], why, sizeof(why)) <
		    0)
			break;
	if (why[0]) {
		/* None of it is shown: the threads are. */
		char msg[300];
		snprintf(msg, sizeof(msg), "the saved tasks could not be read (%s): not shown", why);
		s->tokio_note = strpool_intern(s->pool, msg);
		for (size_t i = 0; i < s->ntokio; i++) {
			struct sd_tokio_rt *rt = &s->tokio[i];
			for (size_t k = 0; k < rt->ntasks; k++) {
				free(rt->tasks[k].awaits);
				free(rt->tasks[k].holds);
			}
			free(rt->cycle_tasks);
			free(rt->cycle_len);
			free(rt->tasks);
			free(rt->workers);
			free(rt->worker_tasks);
			free(rt->worker_ticks);
			free(rt->worker_queued);
			free(rt->blocking);
			memset(rt, 0, sizeof(*rt));
		}
		s->ntokio = 0;
	}
}
