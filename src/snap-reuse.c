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
	struct sd_reuse key = {.tid = tid};
	return t->nreuse ? bsearch(&key, t->reuse, t->nreuse, sizeof(key), cmp_reuse) : NULL;
}

static void reuse_entry_free(struct sd_reuse *r)
{
	free(r->frames);
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
	/* One copy in the capacity snapshot_add_frame() assumes (a power of
	 * two, at least 16); names only when the frames have them. */
	size_t cap = 16;
	while (cap < r->nframes)
		cap *= 2;
	free(th->frames);
	th->frames = sd_xmalloc(cap * sizeof(*th->frames));
	memcpy(th->frames, r->frames, r->nframes * sizeof(*th->frames));
	th->nframes = r->nframes;
	for (size_t k = 0; k < th->nframes; k++) {
		struct sd_frame *f = &th->frames[k];
		if (!f->function && !f->module && !f->build_id && !f->file)
			continue;
		f->function = strpool_intern(s->pool, f->function);
		f->module = strpool_intern(s->pool, f->module);
		f->build_id = strpool_intern(s->pool, f->build_id);
		f->file = strpool_intern(s->pool, f->file);
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
	struct sd_reuse *v = NULL;
	size_t n = 0, cap = 0;
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
			tp->prev->frames = NULL;
			tp->prev->lockmem = NULL;
			tp->prev->nframes = tp->prev->nlockmem = 0;
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
		if (th->nframes) {
			r->frames = sd_xmalloc(th->nframes * sizeof(*r->frames));
			for (size_t k = 0; k < th->nframes; k++) {
				struct sd_frame *f = &r->frames[k];
				*f = th->frames[k];
				f->function = strpool_intern(t->reuse_pool, f->function);
				f->module = strpool_intern(t->reuse_pool, f->module);
				f->build_id = strpool_intern(t->reuse_pool, f->build_id);
				f->file = strpool_intern(t->reuse_pool, f->file);
			}
			r->nframes = th->nframes;
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
	free(t->reuse);
	sd_sort(v, n, sizeof(*v), cmp_reuse);
	t->reuse = v;
	t->nreuse = n;
	t->reuse_cap = cap;
}

