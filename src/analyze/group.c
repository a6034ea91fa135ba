// SPDX-License-Identifier: MIT
// Grouping of threads with identical stacks, and the compressed name and
// TID lists that stand for a group (see group.h).
#include "group.h"

#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "locks.h"

static int same_str(const char *a, const char *b)
{
	if (a == b)
		return 1;
	return a && b && !strcmp(a, b);
}

/* Waits on an object of each thread's own (a JVM's threads each parked
 * on its Parker's condvar, a Go M on its note): threads that wait so in
 * one kind of wait from one call site (their frames are compared too)
 * wait alike, whatever the object's address (kept in JSON, listed with
 * -v). A lock's address always counts: it says who contends with whom. */
int group_wait_per_object(enum sd_wait_kind k)
{
	return locks_is_idle(k);
}

/* Do A and B show the same thing? Everything a dump prints for a thread
 * but its TID and name. */
static int same_thread(const struct sd_thread *a, const struct sd_thread *b)
{
	if (a->status != b->status || a->state != b->state || a->nframes != b->nframes)
		return 0;
	if (a->status != SD_THREAD_OK)
		return same_str(a->error, b->error);
	int any_object = group_wait_per_object(a->wait.kind);
	if (a->wait.kind != b->wait.kind ||
	    (!any_object && (a->wait.address != b->wait.address ||
			     !same_str(a->wait.symbol, b->wait.symbol))) ||
	    a->wait.owner != b->wait.owner || a->wait.owner_known != b->wait.owner_known ||
	    !same_str(a->wait.note, b->wait.note))
		return 0;
	if (a->syscall_nr != b->syscall_nr || !same_str(a->unwind_stop, b->unwind_stop))
		return 0;
	if (a->state == 'D' && !same_str(a->wchan, b->wchan))
		return 0;
	/* What a thread holds is printed under its frames: a holder is
	 * never merged with the threads that only look like it. */
	if (a->nholds != b->nholds)
		return 0;
	for (size_t k = 0; k < a->nholds; k++)
		if (a->holds[k].address != b->holds[k].address ||
		    a->holds[k].frame != b->holds[k].frame ||
		    a->holds[k].evidence != b->holds[k].evidence ||
		    a->holds[k].ncandidates != b->holds[k].ncandidates)
			return 0;
	for (size_t k = 0; k < a->nframes; k++) {
		const struct sd_frame *x = &a->frames[k], *y = &b->frames[k];
		if (x->pc != y->pc || x->flags != y->flags || x->line != y->line ||
		    x->symoff != y->symoff || !same_str(x->function, y->function) ||
		    !same_str(x->module, y->module) || !same_str(x->file, y->file))
			return 0;
	}
	return 1;
}

/* A cheap hash of what same_thread compares. */
static uint64_t thread_key(const struct sd_thread *th)
{
	uint64_t h = 1469598103934665603ull;
#define MIX(v) (h = (h ^ (uint64_t)(v)) * 1099511628211ull)
	MIX(th->status);
	MIX(th->state);
	MIX(th->nframes);
	MIX(th->wait.kind);
	MIX(group_wait_per_object(th->wait.kind) ? 0 : th->wait.address);
	MIX(th->wait.owner);
	MIX(th->syscall_nr);
	MIX(th->nholds);
	for (size_t k = 0; k < th->nframes; k++)
		MIX(th->frames[k].pc);
#undef MIX
	return h;
}

struct slot {
	size_t first; /* order of the group's first thread */
	struct sd_group g;
	size_t cap;
};

/* The groups by what their threads show: the index of the group's slot
 * and of its first thread, compared with a thread by same_thread. */
struct group_entry {
	size_t first, slot;
};

struct group_key {
	const struct sd_snapshot *s;
	const struct sd_thread *th;
};

static int group_eq(const void *entry, const void *key)
{
	const struct group_key *k = key;
	return same_thread(&k->s->threads[((const struct group_entry *)entry)->first], k->th);
}

static int cmp_slot(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;
	if (x->g.n != y->g.n)
		return x->g.n < y->g.n ? 1 : -1;
	return (x->first > y->first) - (x->first < y->first);
}

void group_snapshot(const struct sd_snapshot *s, struct sd_grouping *g)
{
	struct slot *slots = NULL;
	size_t nslots = 0, cap = 0;
	struct hashmap groups;
	hashmap_init(&groups, sizeof(struct group_entry));
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct sd_thread *th = &s->threads[i];
		struct group_key k = {s, th};
		int found;
		struct group_entry *e = hashmap_put(&groups, thread_key(th), &k, group_eq, &found);
		if (!found) {
			sd_grow(&slots, &cap, nslots + 1, sizeof(*slots));
			memset(&slots[nslots], 0, sizeof(*slots));
			slots[nslots].first = i;
			e->first = i;
			e->slot = nslots++;
		}
		struct slot *hit = &slots[e->slot];
		sd_grow(&hit->g.idx, &hit->cap, hit->g.n + 1, sizeof(*hit->g.idx));
		hit->g.idx[hit->g.n++] = i;
	}
	hashmap_release(&groups);
	sd_sort(slots, nslots, sizeof(*slots), cmp_slot);
	g->v = nslots ? sd_xcalloc(nslots, sizeof(*g->v)) : NULL;
	g->n = nslots;
	for (size_t k = 0; k < nslots; k++)
		g->v[k] = slots[k].g;
	free(slots);
}

void group_release(struct sd_grouping *g)
{
	for (size_t k = 0; k < g->n; k++)
		free(g->v[k].idx);
	free(g->v);
	g->v = NULL;
	g->n = 0;
}

/* A name split into a stem and a trailing number ("worker-" 12); num is
 * -1 when the name does not end in a plain number. */
struct nm {
	const char *name;
	size_t stemlen;
	long num;
};

static void split_name(const char *name, struct nm *n)
{
	size_t len = strlen(name), d = len;
	while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
		d--;
	n->name = name;
	n->stemlen = len;
	n->num = -1;
	/* "007" is not 7: leading zeros keep the name whole, and so do very
	 * long digit runs. */
	if (d < len && len - d <= 9 && (name[d] != '0' || len - d == 1)) {
		n->stemlen = d;
		n->num = strtol(name + d, NULL, 10);
	}
}

static int cmp_nm(const void *a, const void *b)
{
	const struct nm *x = a, *y = b;
	size_t l = x->stemlen < y->stemlen ? x->stemlen : y->stemlen;
	int c = memcmp(x->name, y->name, l);
	if (c)
		return c;
	if (x->stemlen != y->stemlen)
		return (x->stemlen > y->stemlen) - (x->stemlen < y->stemlen);
	return (x->num > y->num) - (x->num < y->num);
}

static int same_stem(const struct nm *x, const struct nm *y)
{
	return x->stemlen == y->stemlen && !memcmp(x->name, y->name, x->stemlen) &&
	       (x->num < 0) == (y->num < 0);
}

void group_names(struct strbuf *out, const struct sd_snapshot *s, const struct sd_group *gr,
		 size_t limit)
{
	struct nm *v = sd_xcalloc(gr->n + 1, sizeof(*v));
	for (size_t i = 0; i < gr->n; i++) {
		const char *name = s->threads[gr->idx[i]].name;
		split_name(name ? name : "", &v[i]);
	}
	sd_sort(v, gr->n, sizeof(*v), cmp_nm);
	size_t start = out->len, shown = 0, stems = 0;
	for (size_t i = 0; i < gr->n;) {
		size_t j = i + 1;
		while (j < gr->n && same_stem(&v[i], &v[j]))
			j++;
		stems++;
		if (out->len - start > limit) {
			i = j;
			continue;
		}
		if (shown++)
			strbuf_adds(out, ", ");
		char *stem = sd_xmalloc(v[i].stemlen + 1);
		memcpy(stem, v[i].name, v[i].stemlen);
		stem[v[i].stemlen] = '\0';
		strbuf_add_escaped(out, stem);
		free(stem);
		if (v[i].num < 0) {
			if (j - i > 1)
				strbuf_addf(out, " (%zu)", j - i);
		} else {
			/* Ranges of consecutive numbers; a repeated number
			 * counts once in the range and adds "(N)". */
			size_t k = i, nranges = 0;
			while (k < j) {
				size_t e = k;
				while (e + 1 < j && v[e + 1].num <= v[e].num + 1)
					e++;
				strbuf_addf(out, "%s%ld", nranges++ ? "," : "", v[k].num);
				if (v[e].num != v[k].num)
					strbuf_addf(out, "..%ld", v[e].num);
				k = e + 1;
			}
			size_t distinct = 1;
			for (size_t m = i + 1; m < j; m++)
				distinct += v[m].num != v[m - 1].num;
			if (distinct != j - i)
				strbuf_addf(out, " (%zu)", j - i);
		}
		i = j;
	}
	if (shown < stems)
		strbuf_addf(out, ", ... (%zu names)", stems);
	free(v);
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

void group_tids(struct strbuf *out, const struct sd_snapshot *s, const struct sd_group *gr,
		size_t limit)
{
	pid_t *t = sd_xcalloc(gr->n + 1, sizeof(*t));
	for (size_t i = 0; i < gr->n; i++)
		t[i] = s->threads[gr->idx[i]].tid;
	sd_sort(t, gr->n, sizeof(*t), cmp_pid);
	size_t start = out->len;
	for (size_t i = 0; i < gr->n;) {
		size_t e = i;
		while (e + 1 < gr->n && t[e + 1] == t[e] + 1)
			e++;
		if (out->len - start > limit) {
			strbuf_adds(out, ",...");
			break;
		}
		strbuf_addf(out, "%s%d", i ? "," : "", (int)t[i]);
		if (e > i)
			strbuf_addf(out, "..%d", (int)t[e]);
		i = e + 1;
	}
	free(t);
}

struct item_ent {
	uint64_t key;
	size_t first, group;
};

struct item_arg {
	uint64_t key;
	size_t idx;
	const void *arg;
	int (*same)(const void *arg, size_t i, size_t j);
};

static int item_eq(const void *e, const void *k)
{
	const struct item_ent *x = e;
	const struct item_arg *a = k;
	return x->key == a->key && a->same(a->arg, x->first, a->idx);
}

size_t group_items(size_t n, const void *arg, uint64_t (*key)(const void *arg, size_t i),
		   int (*same)(const void *arg, size_t i, size_t j), size_t *of, size_t *count)
{
	struct hashmap m;
	hashmap_init(&m, sizeof(struct item_ent));
	size_t ng = 0;
	for (size_t i = 0; i < n; i++) {
		struct item_arg a = {key(arg, i), i, arg, same};
		int found;
		struct item_ent *e = hashmap_put(&m, a.key, &a, item_eq, &found);
		if (!found) {
			e->key = a.key;
			e->first = i;
			e->group = ng++;
			count[e->group] = 0;
		}
		of[i] = e->group;
		count[e->group]++;
	}
	hashmap_release(&m);
	return ng;
}
