// SPDX-License-Identifier: MIT
// The model of top's screen: threads by activity, functions by own and
// total samples (topview.h).
#include "topview.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "locks.h"

static int top_cmp_func(const void *a, const void *b)
{
	const struct top_func *x = a, *y = b;
	if (x->own != y->own)
		return x->own < y->own ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(x->name, y->name);
}

int top_cmp_tid(const void *a, const void *b)
{
	const struct top_thread *x = a, *y = b;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

int top_cmp_name(const void *a, const void *b)
{
	const struct top_thread *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : top_cmp_tid(a, b);
}

double top_oncpu(const struct top_thread *x)
{
	return x->samples ? (double)x->on_cpu / (double)x->samples : 0.0;
}

/* Busiest first: share of samples on a CPU, then the latest state (running,
 * runnable, lock waits, disk, other waits, idle), then TID. */
int top_cmp_activity(const void *a, const void *b)
{
	const struct top_thread *x = a, *y = b;
	/* The thread others wait for is the story, busy or not. */
	if (x->holding != y->holding)
		return x->holding < y->holding ? 1 : -1;
	double cx = top_oncpu(x), cy = top_oncpu(y);
	if (cx != cy)
		return cx < cy ? 1 : -1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return top_cmp_tid(a, b);
}

/* The rank of a thread's latest state for the activity order. */
int top_state_rank(const struct sd_thread *x, int idle)
{
	if (x->wait.kind == SD_WAIT_RUNNING)
		return 0;
	if (x->wait.kind == SD_WAIT_RUNNABLE)
		return 1;
	if (idle)
		return 6;
	if (x->wait.kind >= SD_WAIT_MUTEX && !locks_is_idle(x->wait.kind))
		return 2;
	if (x->wait.kind == SD_WAIT_DISK)
		return 3;
	return 4;
}

/* Functions are compared by their pool pointer. */
static int func_eq(const void *entry, const void *key)
{
	return ((const struct top_func *)entry)->name == key;
}

/* Functions of P by own samples, into a heap array. IDLE[i] counts the
 * idle samples of stack i (NULL: count none apart). */
struct top_func *top_functions(struct sd_profile *p, const uint64_t *idle, size_t nidle,
			       size_t *nout)
{
	struct hashmap funcs;
	hashmap_init(&funcs, sizeof(struct top_func));
	hashmap_reserve(&funcs, p->nstacks * 2 + 8);
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct sd_pstack *st = &p->stacks[i];
		uint64_t count = st->count - (idle && i < nidle ? idle[i] : 0);
		if (!count)
			continue;
		for (size_t k = 0; k < st->nframes; k++) {
			const char *name = st->frames[k].name;
			int found;
			struct top_func *f = hashmap_put(&funcs, sd_hash(&name, sizeof(name), 0),
							 name, func_eq, &found);
			if (!found) {
				f->name = name;
				f->mark = (size_t)-1;
			}
			if (k == 0)
				f->own += count;
			if (f->mark != i) { /* recursion counts once */
				f->total += count;
				f->mark = i;
			}
		}
	}
	size_t n = hashmap_count(&funcs), k = 0, pos = 0;
	struct top_func *v = sd_xmalloc((n ? n : 1) * sizeof(*v));
	for (struct top_func *f; (f = hashmap_next(&funcs, &pos));)
		v[k++] = *f;
	hashmap_release(&funcs);
	sd_sort(v, k, sizeof(*v), top_cmp_func);
	*nout = k;
	return v;
}
