// SPDX-License-Identifier: MIT
// Deadlocks among goroutines (godeadlocks.h): the cycles of the wait-for
// graph drawn from each goroutine's wait object and its inferred holder.
#include "godeadlocks.h"

#include <stdlib.h>

/* The edge of goroutine I: the object it waits on (a mutex whose holder is
 * inferred, its only wait), or -1. */
static long edge_of(const struct sd_snapshot *s, size_t i)
{
	const struct sd_goroutine *g = &s->goroutines[i];
	if (g->nwaits_on != 1 || g->waits_on[0] >= s->ngoobjects)
		return -1;
	const struct sd_goobject *o = &s->goobjects[g->waits_on[0]];
	return o->holder && o->holder != g->id ? (long)g->waits_on[0] : -1;
}

size_t godeadlocks_find(const struct sd_snapshot *s, struct sd_godeadlock **out)
{
	*out = NULL;
	size_t n = s->ngoroutines, nd = 0, cap = 0;
	if (!n || !s->ngoobjects)
		return 0;
	struct sd_goindex *ix = sd_goindex_new(s);
	/* 0 unvisited, 1 on the current path, 2 done */
	unsigned char *mark = sd_xcalloc(n, 1);
	size_t *path = sd_xmalloc(n * sizeof(*path));
	for (size_t k = 0; k < n; k++) {
		size_t start = ix[k].idx, len = 0, cur = start;
		for (;;) {
			if (mark[cur] == 2)
				break;
			if (mark[cur] == 1) {
				/* A cycle: from cur's place on the path. */
				size_t at = 0;
				while (path[at] != cur)
					at++;
				struct sd_godeadlock d = {0};
				d.n = len - at;
				d.goroutines = sd_xmalloc(d.n * sizeof(size_t));
				d.objects = sd_xmalloc(d.n * sizeof(size_t));
				/* Rotate to start at the smallest id. */
				size_t lo = 0;
				for (size_t e = 1; e < d.n; e++)
					if (s->goroutines[path[at + e]].id <
					    s->goroutines[path[at + lo]].id)
						lo = e;
				for (size_t e = 0; e < d.n; e++) {
					size_t gi = path[at + (lo + e) % d.n];
					d.goroutines[e] = gi;
					d.objects[e] = (size_t)edge_of(s, gi);
				}
				sd_grow(out, &cap, nd + 1, sizeof(**out));
				(*out)[nd++] = d;
				break;
			}
			mark[cur] = 1;
			path[len++] = cur;
			long e = edge_of(s, cur);
			if (e < 0)
				break;
			long h = sd_goindex_find(ix, n, s->goobjects[e].holder);
			if (h < 0)
				break;
			cur = (size_t)h;
		}
		for (size_t p = 0; p < len; p++)
			mark[path[p]] = 2;
	}
	free(path);
	free(mark);
	free(ix);
	return nd;
}

void godeadlocks_free(struct sd_godeadlock *d, size_t n)
{
	for (size_t i = 0; d && i < n; i++) {
		free(d[i].goroutines);
		free(d[i].objects);
	}
	free(d);
}
