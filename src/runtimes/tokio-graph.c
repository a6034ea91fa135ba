// SPDX-License-Identifier: MIT
// Locks among Tokio tasks (tokio-graph.h): the holders by lock address,
// each waiter's holder, and the cycles of the wait-for graph.
#include "tokio-graph.h"

#include <stdint.h>
#include <stdlib.h>

#include "hashmap.h"
#include "util.h"

struct lockent {
	uint64_t addr;
	size_t task; /* index of a task holding it */
};

static int lockent_eq(const void *e, const void *k)
{
	return ((const struct lockent *)e)->addr == *(const uint64_t *)k;
}

#define TK_MAX_CYCLES 64

/* Each task waits for one lock at most: a walk along held_by that comes
 * back to a task of the same walk has found a cycle. */
void tokio_lock_graph(struct sd_tokio_rt *out)
{
	struct hashmap m;
	hashmap_init(&m, sizeof(struct lockent));
	for (size_t i = 0; i < out->ntasks; i++)
		for (size_t k = 0; k < out->tasks[i].nholds; k++) {
			uint64_t a = out->tasks[i].holds[k].addr;
			int found;
			struct lockent *e = hashmap_put(&m, sd_hash(&a, 8, 0x10c), &a, lockent_eq, &found);
			if (!found) {
				e->addr = a;
				e->task = i;
			}
		}
	size_t n = out->ntasks;
	size_t *next = sd_xmalloc((n + 1) * sizeof(*next));
	for (size_t i = 0; i < n; i++) {
		struct sd_tokio_task *t = &out->tasks[i];
		const struct lockent *e =
		    t->wait_addr ? hashmap_find(&m, sd_hash(&t->wait_addr, 8, 0x10c), &t->wait_addr,
						lockent_eq)
				 : NULL;
		next[i] = e && e->task != i ? e->task : SIZE_MAX;
		if (next[i] != SIZE_MAX)
			t->held_by = out->tasks[e->task].id;
	}
	hashmap_release(&m);
	/* 0 not seen, 1 on the walk begun at WALK, 2 done. */
	unsigned char *mark = sd_xcalloc(n + 1, 1);
	size_t *walk = sd_xcalloc(n + 1, sizeof(*walk));
	size_t cap = 0, lcap = 0, used = 0;
	for (size_t i = 0; i < n && out->ncycles < TK_MAX_CYCLES; i++) {
		size_t len = 0, j = i;
		while (j != SIZE_MAX && !mark[j]) {
			mark[j] = 1;
			walk[len++] = j;
			j = next[j];
		}
		if (j != SIZE_MAX && mark[j] == 1) {
			/* Back on this walk: the cycle is from J on. */
			size_t from = 0;
			while (walk[from] != j)
				from++;
			sd_grow(&out->cycle_len, &lcap, out->ncycles + 1, sizeof(*out->cycle_len));
			sd_grow(&out->cycle_tasks, &cap, used + len - from, sizeof(*out->cycle_tasks));
			out->cycle_len[out->ncycles++] = len - from;
			for (size_t k = from; k < len; k++)
				out->cycle_tasks[used++] = walk[k];
		}
		for (size_t k = 0; k < len; k++)
			mark[walk[k]] = 2;
	}
	free(mark);
	free(walk);
	free(next);
}

