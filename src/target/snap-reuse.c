// SPDX-License-Identifier: MIT
// Reuse across samples: a thread whose scheduler counters did not move
// since the last sample is not touched; its last stack, exact still, is
// counted again.
#include <stdlib.h>
#include <string.h>

#include "ptrace.h"
#include "snapctx.h"
#include "target.h"

static int cmp_reuse(const void *a, const void *b)
{
	pid_t x = ((const struct sd_reuse *)a)->tid, y = ((const struct sd_reuse *)b)->tid;
	return (x > y) - (x < y);
}

struct sd_reuse *reuse_find(struct sd_target *t, pid_t tid)
{
	/* Discover asks in rising TID order (and planning asks again). */
	struct sd_reuse key = {.tid = tid};
	return sd_bsearch_hint(&key, t->reuse, t->nreuse, sizeof(key), cmp_reuse, &t->reuse_hint);
}

static void reuse_entry_free(struct sd_reuse *r)
{
	frameset_unref(r->fs);
	free(r->lockmem);
}

void reuse_clear(struct sd_target *t)
{
	for (size_t i = 0; i < t->nreuse; i++)
		reuse_entry_free(&t->reuse[i]);
	t->nreuse = 0;
}

void reuse_apply(struct snapctx *cx, struct sd_thread *th, const struct sd_reuse *r)
{
	struct sd_snapshot *s = cx->s;
	th->kind = SD_CAPTURE_REUSED;
	th->regs = r->regs;
	th->regs_partial = r->regs_partial;
	th->have_regs = 1;
	if (!th->state)
		th->state = r->state;
	th->syscall_known = r->syscall_known;
	th->syscall_nr = r->syscall_nr;
	memcpy(th->syscall_args, r->syscall_args, sizeof(th->syscall_args));
	snapshot_thread_share_frames(th, r->fs);
	if (r->named) {
		/* Names live in the snapshot's pool: a copy of its own. */
		snapshot_thread_own_frames(th);
		for (size_t k = 0; k < th->nframes; k++) {
			struct sd_frame *f = &th->frames[k];
			f->function = strpool_intern(s->pool, f->function);
			f->module = strpool_intern(s->pool, f->module);
			f->build_id = strpool_intern(s->pool, f->build_id);
			f->file = strpool_intern(s->pool, f->file);
		}
	}
	th->unwind_stop = strpool_intern(s->pool, r->unwind_stop);
	th->frames_token = r->token;
	if (r->nlockmem) {
		th->lockmem = sd_xmalloc(r->nlockmem * sizeof(*th->lockmem));
		memcpy(th->lockmem, r->lockmem, r->nlockmem * sizeof(*th->lockmem));
		th->nlockmem = r->nlockmem;
	}
}

/* Remember every thread read asleep (or reused) and confirmed, for the
 * next sample; forget the others. */
void reuse_save(struct snapctx *cx)
{
	struct sd_target *t = cx->t;
	struct sd_snapshot *s = cx->s;
	if (!t->reuse_pool)
		t->reuse_pool = strpool_new();
	/* Into the vector before last (its entries long freed), sized once. */
	struct sd_reuse *v = t->reuse_spare;
	size_t n = 0, cap = t->reuse_spare_cap;
	t->reuse_spare = NULL;
	t->reuse_spare_cap = 0;
	sd_grow(&v, &cap, s->nthreads + 1, sizeof(*v));
	for (size_t i = 0; i < s->nthreads; i++) {
		struct sd_thread *th = &s->threads[i];
		struct tplan *tp = &cx->p[i];
		if (th->status != SD_THREAD_OK || !tp->have_c1 || th->retried ||
		    (th->kind != SD_CAPTURE_ASLEEP && th->kind != SD_CAPTURE_REUSED) ||
		    (th->regs_partial && th->needs_regs) || ptrace_is_straggler(th->tid))
			continue;
		sd_grow(&v, &cap, n + 1, sizeof(*v));
		struct sd_reuse *r = &v[n++];
		if (th->kind == SD_CAPTURE_REUSED && tp->prev) {
			/* Unchanged: the entry moves over as it is. */
			*r = *tp->prev;
			tp->prev->fs = NULL;
			tp->prev->lockmem = NULL;
			tp->prev->nlockmem = 0;
			continue;
		}
		memset(r, 0, sizeof(*r));
		r->tid = th->tid;
		r->c = tp->c1;
		r->regs = th->regs;
		r->regs_partial = th->regs_partial;
		r->state = th->state;
		r->syscall_known = th->syscall_known;
		r->syscall_nr = th->syscall_nr;
		memcpy(r->syscall_args, th->syscall_args, sizeof(r->syscall_args));
		for (size_t k = 0; k < th->nframes && !r->named; k++) {
			const struct sd_frame *f = &th->frames[k];
			r->named = f->function || f->module || f->build_id || f->file;
		}
		if (!r->named) {
			/* The snapshot's thread and the entry share one copy. */
			if (th->frameset && th->frameset->n == th->nframes) {
				r->fs = th->frameset;
				r->fs->refs++;
			} else {
				r->fs = frameset_new(th->frames, th->nframes);
				snapshot_thread_share_frames(th, r->fs);
			}
		} else {
			r->fs = frameset_new(th->frames, th->nframes);
			for (size_t k = 0; k < r->fs->n; k++) {
				struct sd_frame *f = &r->fs->f[k];
				f->function = strpool_intern(t->reuse_pool, f->function);
				f->module = strpool_intern(t->reuse_pool, f->module);
				f->build_id = strpool_intern(t->reuse_pool, f->build_id);
				f->file = strpool_intern(t->reuse_pool, f->file);
			}
		}
		r->unwind_stop = strpool_intern(t->reuse_pool, th->unwind_stop);
		/* The frames the next samples reuse are these: same token. */
		r->token = th->frames_token = ++t->token_seq;
		if (th->nlockmem) {
			r->lockmem = sd_xmalloc(th->nlockmem * sizeof(*r->lockmem));
			memcpy(r->lockmem, th->lockmem, th->nlockmem * sizeof(*r->lockmem));
			r->nlockmem = th->nlockmem;
		}
	}
	reuse_clear(t);
	free(t->reuse_spare);
	t->reuse_spare = t->reuse;
	t->reuse_spare_cap = t->reuse_cap;
	sd_sort(v, n, sizeof(*v), cmp_reuse);
	t->reuse = v;
	t->nreuse = n;
	t->reuse_hint = 0;
	t->reuse_cap = cap;
}

