// SPDX-License-Identifier: MIT
// Long polls across snapshots (longpoll.h): the workers' polled tasks and
// ticks as each snapshot's Tokio reading left them, compared back from
// the newest.
#include "longpoll.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* What thread TID polls in S: its runtime's id, the task and the tick
 * (-1 not known). 0 when it polls nothing known. */
static uint64_t polls(const struct sd_snapshot *s, pid_t tid, uint64_t *rt, int64_t *tick)
{
	for (size_t i = 0; i < s->ntokio; i++) {
		const struct sd_tokio_rt *r = &s->tokio[i];
		for (size_t k = 0; k < r->nworkers; k++)
			if (r->workers[k] == tid && r->worker_tasks) {
				*rt = r->id;
				*tick = r->worker_ticks ? r->worker_ticks[k] : -1;
				return r->worker_tasks[k];
			}
	}
	return 0;
}

static const struct sd_tokio_task *task_in(const struct sd_snapshot *s, uint64_t rt, uint64_t id)
{
	for (size_t i = 0; i < s->ntokio; i++)
		for (size_t k = 0; s->tokio[i].id == rt && k < s->tokio[i].ntasks; k++)
			if (s->tokio[i].tasks[k].id == id)
				return &s->tokio[i].tasks[k];
	return NULL;
}

size_t longpoll_find(struct sd_snapshot *const *snaps, size_t n, struct sd_long_poll **out)
{
	*out = NULL;
	if (n < 2)
		return 0;
	const struct sd_snapshot *last = snaps[n - 1];
	size_t cnt = 0, cap = 0;
	for (size_t i = 0; i < last->ntokio; i++) {
		const struct sd_tokio_rt *r = &last->tokio[i];
		for (size_t k = 0; k < r->nworkers; k++) {
			uint64_t task = r->worker_tasks ? r->worker_tasks[k] : 0;
			int64_t tick = r->worker_ticks ? r->worker_ticks[k] : -1;
			if (!task || tick < 0)
				continue;
			size_t first = n - 1;
			while (first > 0) {
				uint64_t rt2 = 0;
				int64_t tick2 = -1;
				if (polls(snaps[first - 1], r->workers[k], &rt2, &tick2) != task ||
				    rt2 != r->id || tick2 != tick)
					break;
				first--;
			}
			if (first == n - 1)
				continue;
			sd_grow(out, &cap, cnt + 1, sizeof(**out));
			struct sd_long_poll *p = &(*out)[cnt++];
			memset(p, 0, sizeof(*p));
			p->tid = r->workers[k];
			p->runtime = r->id;
			p->task = task;
			p->tick = tick;
			p->snaps = n - first;
			p->seconds = last->time - snaps[first]->time;
			const struct sd_tokio_task *t = task_in(last, r->id, task);
			p->future = t ? t->future : NULL;
			/* Where in it: its own async fn's frame on the worker. */
			const struct sd_thread *th = snapshot_find_thread(last, p->tid);
			size_t fl = p->future ? strlen(p->future) : 0;
			for (size_t f = 0; th && fl && f < th->nframes; f++) {
				const struct sd_frame *fr = &th->frames[f];
				if (!fr->function || strncmp(fr->function, p->future, fl) ||
				    (fr->function[fl] && fr->function[fl] != ':'))
					continue;
				p->function = fr->function;
				p->file = fr->file;
				p->line = fr->line;
				break;
			}
		}
	}
	return cnt;
}

void longpoll_text(struct strbuf *out, const struct sd_snapshot *s, const struct sd_long_poll *p)
{
	const struct sd_thread *th = s && !p->name ? snapshot_find_thread(s, p->tid) : NULL;
	const char *name = p->name ? p->name : th ? th->name : NULL;
	strbuf_addf(out, "worker %d", (int)p->tid);
	if (name) {
		strbuf_adds(out, " \"");
		strbuf_add_escaped(out, name);
		strbuf_adds(out, "\"");
	}
	strbuf_addf(out, " has polled task %" PRIu64, p->task);
	if (p->future) {
		strbuf_adds(out, ", ");
		strbuf_add_escaped(out, p->future);
	}
	if (p->file && p->line > 0) {
		const char *b = strrchr(p->file, '/');
		strbuf_adds(out, " at ");
		strbuf_add_escaped(out, b ? b + 1 : p->file);
		strbuf_addf(out, ":%d", p->line);
	}
	strbuf_addf(out, ", for at least %.1f s (one poll: its tick %" PRId64 " in %zu %s)",
		    p->seconds, p->tick, p->snaps, p->samples ? "samples" : "snapshots");
}

void longpoll_json(struct jsonw *w, const struct sd_long_poll *p)
{
	jsonw_object_begin(w);
	jsonw_kint(w, "tid", p->tid);
	jsonw_ku64(w, "runtime", p->runtime);
	jsonw_ku64(w, "task", p->task);
	jsonw_kstr(w, "future", p->future);
	jsonw_kstr(w, "function", p->function);
	jsonw_kstr(w, "file", p->file);
	if (p->file && p->line > 0)
		jsonw_kint(w, "line", p->line);
	else
		jsonw_knull(w, "line");
	jsonw_kint(w, "tick", p->tick);
	jsonw_ku64(w, "snapshots", p->snaps);
	jsonw_kdouble(w, "seconds", p->seconds);
	if (p->samples) {
		jsonw_kint(w, "pid", p->pid);
		jsonw_kstr(w, "name", p->name);
		jsonw_kbool(w, "ongoing", p->ongoing);
	}
	jsonw_object_end(w);
}
