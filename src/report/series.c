// SPDX-License-Identifier: MIT
// Analysis across saved snapshots (a recording): the snapshots in time
// order, each thread's state letter and stack per snapshot, the profile of
// them all, the findings (findings.c), each lock's holder and waiters over
// time, and the threads that kept one stack until the last snapshot.
// Rendered by format-series.c.
#include "series.h"

#include <stdlib.h>
#include <string.h>

#include "timeline.h"

struct sd_series *series_new(const struct sd_profile_opts *po)
{
	struct sd_series *r = sd_xcalloc(1, sizeof(*r));
	r->prof = profile_new(po);
	return r;
}

void series_add(struct sd_series *r, const char *path, struct sd_snapshot *s,
		const struct snapio_meta *m)
{
	sd_grow(&r->v, &r->cap, r->n + 1, sizeof(*r->v));
	r->v[r->n].path = sd_xstrdup(path);
	r->v[r->n].s = s;
	r->v[r->n].m = *m;
	r->n++;
}

void series_free(struct sd_series *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		free(r->v[i].path);
		snapshot_free(r->v[i].s);
	}
	free(r->v);
	for (size_t i = 0; i < r->nth; i++) {
		free(r->th[i].states);
		free(r->th[i].hash);
	}
	free(r->th);
	free(r->sv);
	findings_release(&r->fnd);
	profile_free(r->prof);
	free(r);
}

static int cmp_time(const void *a, const void *b)
{
	const struct sd_series_snap *x = a, *y = b;
	if (x->s->time != y->s->time)
		return x->s->time < y->s->time ? -1 : 1;
	return strcmp(x->path, y->path);
}

static struct sd_series_thread *thread_row(struct sd_series *r, pid_t pid, pid_t tid, size_t snap)
{
	for (size_t i = 0; i < r->nth; i++)
		if (r->th[i].pid == pid && r->th[i].tid == tid)
			return &r->th[i];
	sd_grow(&r->th, &r->thcap, r->nth + 1, sizeof(*r->th));
	struct sd_series_thread *t = &r->th[r->nth++];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	t->first = snap;
	t->states = sd_xmalloc(r->n + 1);
	memset(t->states, '.', r->n);
	t->states[r->n] = '\0';
	t->hash = sd_xcalloc(r->n ? r->n : 1, sizeof(*t->hash));
	return t;
}

void series_build(struct sd_series *r)
{
	sd_sort(r->v, r->n, sizeof(*r->v), cmp_time);
	r->sv = sd_xcalloc(r->n + 1, sizeof(*r->sv));
	for (size_t k = 0; k < r->n; k++)
		r->sv[k] = r->v[k].s;
	findings_analyze(r->sv, r->n, &r->fnd);
	for (size_t k = 0; k < r->n; k++) {
		struct sd_snapshot *s = r->v[k].s;
		for (size_t i = 0; i < s->nthreads; i++) {
			const struct sd_thread *th = &s->threads[i];
			struct sd_series_thread *t = thread_row(r, s->pid, th->tid, k);
			t->name = th->name;
			t->states[k] = timeline_letter(th);
			t->hash[k] = snapshot_stack_hash(th);
		}
		profile_add_snapshot(r->prof, NULL, s, NULL);
	}
	/* The profile's clock is the recording's. */
	r->prof->samples = r->n;
	if (r->n > 1) {
		double span = r->v[r->n - 1].s->time - r->v[0].s->time;
		r->prof->duration_us = span > 0 ? (uint64_t)(span * 1e6) : 0;
		r->prof->interval_us = r->prof->duration_us / (r->n - 1);
	}
	profile_sort(r->prof);
}

const char *series_thread_name(const struct sd_series *r, pid_t tid)
{
	for (size_t i = 0; i < r->nth; i++)
		if (r->th[i].tid == tid)
			return r->th[i].name;
	return NULL;
}

size_t series_locks(const struct sd_series *r, struct sd_series_lock **out)
{
	struct sd_series_lock *v = NULL;
	size_t n = 0, cap = 0;
	for (size_t k = 0; k < r->n; k++) {
		struct sd_snapshot *s = r->v[k].s;
		for (size_t i = 0; i < s->nthreads; i++) {
			const struct sd_wait *w = &s->threads[i].wait;
			if (w->kind < SD_WAIT_MUTEX || !w->address)
				continue;
			struct sd_series_lock *l = NULL;
			for (size_t j = 0; j < n; j++)
				if (v[j].addr == w->address)
					l = &v[j];
			if (!l) {
				sd_grow(&v, &cap, n + 1, sizeof(*v));
				l = &v[n++];
				memset(l, 0, sizeof(*l));
				l->addr = w->address;
				l->kind = w->kind;
				l->holder = sd_xcalloc(r->n, sizeof(*l->holder));
				l->waiters = sd_xcalloc(r->n, sizeof(*l->waiters));
			}
			if (!l->symbol && w->symbol)
				l->symbol = w->symbol;
			l->waiters[k]++;
			if (w->owner_known && w->owner > 0)
				l->holder[k] = w->owner;
		}
	}
	*out = v;
	return n;
}

void series_locks_free(struct sd_series_lock *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].holder);
		free(v[i].waiters);
	}
	free(v);
}

/* Lock waits first: those are the likely culprits; idle waits last. */
static int stuck_rank(char c)
{
	const char *order = "LDRrCS";
	const char *p = strchr(order, c);
	return p ? (int)(p - order) : 6;
}

size_t series_stuck_since(const struct sd_series *r, const struct sd_series_thread *t)
{
	size_t last = r->n - 1;
	if (!r->n || !t->hash[last] || t->states[last] == '.')
		return r->n;
	size_t k = last;
	while (k > 0 && t->hash[k - 1] == t->hash[last] && t->states[k - 1] == t->states[last])
		k--;
	return k;
}

/* Same stack and state in at least the last two snapshots. */
static int stuck_row(const struct sd_series *r, const struct sd_series_thread *t)
{
	return r->n >= 2 && series_stuck_since(r, t) + 1 < r->n;
}

static int cmp_stuck(const void *a, const void *b)
{
	const struct sd_series_thread *x = *(const struct sd_series_thread *const *)a;
	const struct sd_series_thread *y = *(const struct sd_series_thread *const *)b;
	/* Ranked by the state they are stuck in: the last snapshot's. */
	int d = stuck_rank(x->states[strlen(x->states) - 1]) -
		stuck_rank(y->states[strlen(y->states) - 1]);
	if (d)
		return d;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

size_t series_stuck(const struct sd_series *r, const struct sd_series_thread ***out)
{
	const struct sd_series_thread **v = sd_xcalloc(r->nth ? r->nth : 1, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; i < r->nth; i++)
		if (stuck_row(r, &r->th[i]))
			v[n++] = &r->th[i];
	sd_sort(v, n, sizeof(*v), cmp_stuck);
	*out = v;
	return n;
}

const struct sd_thread *series_thread_in(const struct sd_series *r, size_t k,
					 const struct sd_series_thread *t)
{
	if (r->v[k].s->pid != t->pid)
		return NULL;
	return snapshot_find_thread(r->v[k].s, t->tid);
}
