// SPDX-License-Identifier: MIT
// Goroutines by creation site over samples (goleak.h).
#include "goleak.h"

#include <stdlib.h>
#include <string.h>

#include "hashmap.h"

struct sitekey {
	const char *function, *file;
	int line;
};

struct sent {
	size_t site;
};

struct sarg {
	const struct sd_goleak *g;
	struct sitekey k;
};

static int same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static int sent_eq(const void *e, const void *key)
{
	const struct sent *x = e;
	const struct sarg *a = key;
	const struct sd_goleak_site *s = &a->g->sites[x->site];
	return s->line == a->k.line && same_str(s->function, a->k.function) &&
	       same_str(s->file, a->k.file);
}

struct sd_goleak *goleak_new(void)
{
	struct sd_goleak *g = sd_xcalloc(1, sizeof(*g));
	g->pool = strpool_new();
	struct hashmap *m = sd_xmalloc(sizeof(*m));
	hashmap_init(m, sizeof(struct sent));
	g->index = m;
	return g;
}

void goleak_free(struct sd_goleak *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->nsites; i++)
		free(g->sites[i].counts);
	free(g->sites);
	hashmap_release(g->index);
	free(g->index);
	strpool_free(g->pool);
	free(g);
}

static size_t site_of(struct sd_goleak *g, const struct sd_frame *cb)
{
	struct sarg a = {g, {cb->function, cb->function ? cb->file : NULL,
			     cb->function ? cb->line : 0}};
	uint64_t h = sd_hash(&a.k.line, sizeof(a.k.line), 7);
	if (a.k.function)
		h = sd_hash(a.k.function, strlen(a.k.function), h);
	if (a.k.file)
		h = sd_hash(a.k.file, strlen(a.k.file), h);
	int found;
	struct sent *e = hashmap_put(g->index, h ? h : 1, &a, sent_eq, &found);
	if (found)
		return e->site;
	sd_grow(&g->sites, &g->cap, g->nsites + 1, sizeof(*g->sites));
	struct sd_goleak_site *s = &g->sites[g->nsites];
	memset(s, 0, sizeof(*s));
	s->function = a.k.function ? strpool_intern(g->pool, a.k.function) : NULL;
	s->file = a.k.file ? strpool_intern(g->pool, a.k.file) : NULL;
	s->line = a.k.line;
	/* Earlier samples had none of it. */
	s->counts = sd_xcalloc(g->nsamples + 1, sizeof(*s->counts));
	e->site = g->nsites;
	return g->nsites++;
}

void goleak_add(struct sd_goleak *g, const struct sd_snapshot *s)
{
	size_t n = g->nsamples;
	for (size_t i = 0; i < g->nsites; i++) {
		g->sites[i].counts = sd_xrealloc(g->sites[i].counts, (n + 1) * sizeof(uint64_t));
		g->sites[i].counts[n] = 0;
	}
	for (size_t i = 0; i < s->ngoroutines; i++) {
		size_t k = site_of(g, &s->goroutines[i].created_by); /* may move sites */
		g->sites[k].counts[n]++;
	}
	g->nsamples = n + 1;
	for (size_t i = 0; i < g->nsites; i++) {
		struct sd_goleak_site *x = &g->sites[i];
		uint64_t c = x->counts[n];
		if (!n || c < x->min)
			x->min = c;
		if (c > x->max)
			x->max = c;
	}
	if (!n)
		g->first_time = s->time;
	g->last_time = s->time;
	g->pid = s->pid;
	g->version = s->go_version ? strpool_intern(g->pool, s->go_version) : g->version;
	g->note = s->go_note ? strpool_intern(g->pool, s->go_note) : NULL;
}

int goleak_site_grew(const struct sd_goleak_site *s, size_t n)
{
	if (n < 2 || s->counts[n - 1] <= s->counts[0])
		return 0;
	for (size_t i = 1; i < n; i++)
		if (s->counts[i] < s->counts[i - 1])
			return 0;
	return 1;
}

/* A site's place in the order: growth, then the last count. */
struct okey {
	int64_t growth;
	uint64_t last;
	size_t site;
};

static int cmp_okey(const void *a, const void *b)
{
	const struct okey *x = a, *y = b;
	if (x->growth != y->growth)
		return x->growth > y->growth ? -1 : 1;
	if (x->last != y->last)
		return x->last > y->last ? -1 : 1;
	return (x->site > y->site) - (x->site < y->site);
}

size_t *goleak_order(const struct sd_goleak *g)
{
	size_t *o = sd_xmalloc((g->nsites + 1) * sizeof(*o));
	struct okey *k = sd_xmalloc((g->nsites + 1) * sizeof(*k));
	size_t last = g->nsamples ? g->nsamples - 1 : 0;
	for (size_t i = 0; i < g->nsites; i++) {
		const uint64_t *c = g->sites[i].counts;
		k[i] = (struct okey){g->nsamples ? (int64_t)c[last] - (int64_t)c[0] : 0,
				     g->nsamples ? c[last] : 0, i};
	}
	sd_sort(k, g->nsites, sizeof(*k), cmp_okey);
	for (size_t i = 0; i < g->nsites; i++)
		o[i] = k[i].site;
	free(k);
	return o;
}
