// SPDX-License-Identifier: MIT
// The names of a target's threads, cached across snapshots and ticks: a
// comm file is read again only when the name may have changed (snapctx.h,
// target.h).
#include "target.h"

#include <fcntl.h>
#include <stdio.h>

#include "snapctx.h"

static int cmp_tname(const void *a, const void *b)
{
	pid_t x = ((const struct sd_tname *)a)->tid, y = ((const struct sd_tname *)b)->tid;
	return (x > y) - (x < y);
}

/* How old a cached thread name may be: a thread names itself only while
 * it runs, so the name of one that has not run since it was read is kept
 * longer; another thread writing its comm file is seen within
 * NAME_AGE_IDLE. */
#define NAME_AGE (1000000000ull)
#define NAME_AGE_IDLE (10000000000ull)

/* The name of thread TID from the cache, read again when it was never
 * read, is older than NAME_AGE_IDLE, or older than NAME_AGE and the
 * thread ran since (RAN: it did since the last call). NULL: the thread is
 * gone. */
const char *snap_thread_name(struct sd_target *t, struct procfs_taskcache *tc, int taskdir,
			     pid_t tid, uint64_t now, int ran)
{
	if (now - t->names_ns > NAME_AGE) {
		/* Forget the names of threads not asked for in a while (gone). */
		size_t k = 0;
		for (size_t i = 0; i < t->nnames; i++)
			if (now - t->names[i].read_ns <= NAME_AGE_IDLE)
				t->names[k++] = t->names[i];
		t->nnames = k;
		t->names_ns = now;
	}
	/* Asked in rising TID order. */
	struct sd_tname key = {.tid = tid};
	struct sd_tname *e =
	    sd_bsearch_hint(&key, t->names, t->nnames, sizeof(key), cmp_tname, &t->names_hint);
	if (e) {
		e->ran |= ran;
		if (now - e->read_ns <= (e->ran ? NAME_AGE : NAME_AGE_IDLE))
			return e->comm;
	}
	char text[64];
	if (procfs_task_comm(tc, taskdir, t->pid, tid, text, sizeof(text)) < 0)
		return NULL;
	if (!e) {
		sd_grow(&t->names, &t->names_cap, t->nnames + 1, sizeof(*t->names));
		/* Keep them sorted: insert in place (a new TID is mostly the
		 * highest). */
		size_t i = t->nnames++;
		while (i > 0 && t->names[i - 1].tid > tid) {
			t->names[i] = t->names[i - 1];
			i--;
		}
		e = &t->names[i];
		e->tid = tid;
	}
	snprintf(e->comm, sizeof(e->comm), "%.15s", text);
	e->read_ns = now;
	/* Read while it runs: perhaps just before it names itself. */
	e->ran = ran;
	t->names_hint = (size_t)(e - t->names) + 1;
	return e->comm;
}

const char *target_thread_name(struct sd_target *t, pid_t tid, int ran, uint64_t now)
{
	return snap_thread_name(t, t->taskcache, AT_FDCWD, tid, now, ran);
}

