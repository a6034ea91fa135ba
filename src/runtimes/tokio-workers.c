// SPDX-License-Identifier: MIT
// A Tokio runtime's threads and queues beside its tasks (tokio-workers.h):
// the owned-task lists' heads and the local run queues through the
// scheduler handle's DWARF type, the blocking pool's threads from their
// stacks and the task type of the poll function each runs.
#include "tokio-workers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "strpool.h"
#include "util.h"

#define TKW_MAX_SHARDS 65536u /* lists of one sharded owned-task list */
#define TKW_MAX_WORKERS 4096u /* local queues of one runtime */

size_t tkw_list_heads(struct dwt *d, struct rtmem *mem, uint64_t id, const struct dwt_type *ht,
		      uint64_t **heads, int64_t *tail_delta, struct sd_error *err)
{
	uint64_t off, toff;
	*heads = NULL;
	if (dwt_member(d, ht, "shared.owned.inner.__0.data.value.list.head", &off, NULL, NULL) == 0) {
		if (dwt_member(d, ht, "shared.owned.inner.__0.data.value.list.tail", &toff, NULL, err) < 0)
			return 0;
		*tail_delta = (int64_t)toff - (int64_t)off;
		*heads = sd_xmalloc(sizeof(**heads));
		(*heads)[0] = id + off;
		return 1;
	}
	uint64_t poff, loff, hoff;
	struct dwt_type lt, pt, et;
	if (dwt_member(d, ht, "shared.owned.list.lists", &off, &lt, err) < 0 ||
	    dwt_member(d, &lt, "data_ptr", &poff, &pt, err) < 0 ||
	    dwt_member(d, &lt, "length", &loff, NULL, err) < 0 || dwt_pointee(d, &pt, &et, err) < 0 ||
	    dwt_member(d, &et, "__0.data.value.head", &hoff, NULL, err) < 0 ||
	    dwt_member(d, &et, "__0.data.value.tail", &toff, NULL, err) < 0)
		return 0;
	*tail_delta = (int64_t)toff - (int64_t)hoff;
	uint64_t arr = 0, n = 0;
	if (rtmem_uint(mem, id + off + poff, 8, &arr, "the owned-task shards", err) < 0 ||
	    rtmem_uint(mem, id + off + loff, 8, &n, "the owned-task shards", err) < 0)
		return 0;
	if (n > TKW_MAX_SHARDS || !et.size || et.size > 4096) {
		sd_error_set(err, E2BIG, "an owned-task list of %llu shards of %llu bytes",
			     (unsigned long long)n, (unsigned long long)et.size);
		return 0;
	}
	*heads = sd_xcalloc(n + 1, sizeof(**heads));
	for (uint64_t i = 0; i < n; i++)
		(*heads)[i] = arr + i * et.size + hoff;
	return n;
}

size_t tkw_local_queues(struct dwt *d, struct rtmem *mem, uint64_t id, const struct dwt_type *ht,
			int64_t **out)
{
	*out = NULL;
	/* shared.remotes: Box<[Remote]>; Remote.steal: Steal(Arc<Inner>);
	 * Inner.head packs (steal, real) halves, Inner.tail the other end. */
	uint64_t off, poff, loff, soff, doff, hoff, toff;
	struct dwt_type lt, pt, et, at, ai, inner, hdt, tlt;
	if (dwt_member(d, ht, "shared.remotes", &off, &lt, NULL) < 0 ||
	    dwt_member(d, &lt, "data_ptr", &poff, &pt, NULL) < 0 ||
	    dwt_member(d, &lt, "length", &loff, NULL, NULL) < 0 ||
	    dwt_pointee(d, &pt, &et, NULL) < 0 ||
	    dwt_member(d, &et, "steal.__0.ptr.pointer", &soff, &at, NULL) < 0 ||
	    dwt_pointee(d, &at, &ai, NULL) < 0 ||
	    dwt_member(d, &ai, "data", &doff, &inner, NULL) < 0 ||
	    dwt_member(d, &inner, "head", &hoff, &hdt, NULL) < 0 ||
	    dwt_member(d, &inner, "tail", &toff, &tlt, NULL) < 0 || !et.size ||
	    (tlt.size != 2 && tlt.size != 4) || hdt.size != 2 * tlt.size)
		return 0;
	uint64_t arr = 0, n = 0;
	if (rtmem_uint(mem, id + off + poff, 8, &arr, "the workers' queues", NULL) < 0 ||
	    rtmem_uint(mem, id + off + loff, 8, &n, "the workers' queues", NULL) < 0 || !n ||
	    n > TKW_MAX_WORKERS)
		return 0;
	uint64_t mask = tlt.size == 4 ? 0xffffffffu : 0xffffu;
	*out = sd_xcalloc(n, sizeof(**out));
	for (uint64_t i = 0; i < n; i++) {
		uint64_t a = 0, head = 0, tail = 0;
		(*out)[i] = -1;
		if (rtmem_uint(mem, arr + i * et.size + soff, 8, &a, "a worker's queue", NULL) < 0 ||
		    !a || rtmem_uint(mem, a + doff + hoff, hdt.size, &head, "a queue's head", NULL) < 0 ||
		    rtmem_uint(mem, a + doff + toff, tlt.size, &tail, "a queue's tail", NULL) < 0)
			continue;
		/* The real head is the lower half (the steal head the upper). */
		uint64_t depth = (tail - (head & mask)) & mask;
		/* More than a queue holds: read while it moved (or not a queue). */
		if (depth <= 1u << 16)
			(*out)[i] = (int64_t)depth;
	}
	return n;
}

/* "{closure_env#0}" -> "{closure#0}", as frames name closures. */
static const char *job_name(struct strpool *pool, const char *f, size_t n)
{
	struct strbuf b;
	strbuf_init(&b);
	static const char env[] = "{closure_env#";
	for (size_t i = 0; i < n;) {
		if (n - i >= sizeof(env) - 1 && !strncmp(f + i, env, sizeof(env) - 1)) {
			strbuf_adds(&b, "{closure#");
			i += sizeof(env) - 1;
			continue;
		}
		strbuf_add(&b, f + i, 1);
		i++;
	}
	const char *r = strpool_intern(pool, b.buf ? b.buf : "");
	strbuf_release(&b);
	return r;
}

/* What the blocking pool's thread TH runs: 1 with *JOB (a job's name, or
 * NULL when its type is not known) or *IDLE; 0 when TH is no thread of a
 * blocking pool, or one that runs the runtime's own (a worker). */
static int pool_thread(struct tkl *l, uint64_t bias, struct strpool *pool,
		       const struct sd_thread *th, const char **job, int *idle)
{
	static const char run[] = "tokio::runtime::blocking::pool::Inner::run";
	static const char task[] = "tokio::runtime::blocking::task::BlockingTask<";
	size_t at = th->nframes;
	for (size_t i = 0; i < th->nframes && at == th->nframes; i++)
		if (th->frames[i].function && !strncmp(th->frames[i].function, run, sizeof(run) - 1))
			at = i;
	if (at == th->nframes)
		return 0;
	*job = NULL;
	*idle = 0;
	/* The innermost poll function of a task below Inner::run (the
	 * vtable's raw::poll, or the Harness::poll it jumps to): its T. */
	static const char raw[] = "tokio::runtime::task::raw::poll";
	static const char harness[] = "tokio::runtime::task::harness::Harness<";
	for (size_t i = 0; i < at; i++) {
		const struct sd_frame *f = &th->frames[i];
		struct dwt_type t;
		const char *fn = f->function;
		if (!fn || (f->flags & SD_FRAME_INLINED) || !f->symoff || f->pc < f->symoff ||
		    (strncmp(fn, raw, sizeof(raw) - 1) &&
		     (strncmp(fn, harness, sizeof(harness) - 1) || !strstr(fn, ">::poll<"))) ||
		    tkl_fn_param(l, f->pc - f->symoff - bias, "T", &t) < 0)
			continue;
		const char *q = tkl_qualname(l, t.die), *end = q ? strrchr(q, '>') : NULL;
		if (!q || strncmp(q, task, sizeof(task) - 1) || !end)
			continue;
		q += sizeof(task) - 1;
		/* The runtime's own job: a worker's run loop. */
		if (!strncmp(q, "tokio::runtime::", 16))
			return 0;
		*job = job_name(pool, q, (size_t)(end - q));
		return 1;
	}
	/* No job: idle when the first of Tokio's frames is Inner::run's own
	 * (waiting for a job on its condvar). */
	size_t first = 0;
	while (first < at && (!th->frames[first].function ||
			      strncmp(th->frames[first].function, "tokio::", 7)))
		first++;
	*idle = first == at;
	return 1;
}

void tkw_blocking(struct tkl *l, uint64_t bias, const struct sd_snapshot *s,
		  struct sd_tokio_rt *rt)
{
	size_t keep = 0;
	for (size_t k = 0; k < rt->nworkers; k++) {
		const struct sd_thread *th = NULL;
		for (size_t i = 0; i < s->nthreads && !th; i++)
			if (s->threads[i].tid == rt->workers[k])
				th = &s->threads[i];
		const char *job;
		int idle;
		if (th && pool_thread(l, bias, s->pool, th, &job, &idle)) {
			rt->blocking = sd_xrealloc(rt->blocking, (rt->nblocking + 1) * sizeof(*rt->blocking));
			rt->blocking[rt->nblocking++] = (struct sd_tokio_blocking){th->tid, job, idle};
			continue;
		}
		rt->workers[keep] = rt->workers[k];
		rt->worker_tasks[keep] = rt->worker_tasks[k];
		rt->worker_ticks[keep] = rt->worker_ticks[k];
		if (rt->worker_queued)
			rt->worker_queued[keep] = rt->worker_queued[k];
		keep++;
	}
	rt->nworkers = keep;
}
