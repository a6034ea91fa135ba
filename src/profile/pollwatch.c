// SPDX-License-Identifier: MIT
// Long polls while sampling (pollwatch.h): one entry per worker polling a
// task now, extended while its task and tick stay, closed when they move.
#include "pollwatch.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "demangle.h"
#include "strpool.h"
#include "symbols.h"
#include "target.h"

#define PW_KEEP 256 /* ended long polls kept, the longest */

/* A worker's current poll. */
struct pwrun {
	struct sd_long_poll lp; /* snaps counts its samples */
	uint64_t first_ns, last_ns;
	uint64_t sig; /* the frames last symbolized (a hash of their pcs) */
	int seen;     /* in the latest sample of its process */
};

struct sd_pollwatch {
	struct pwrun *runs;
	size_t nruns, rcap;
	struct sd_long_poll *done; /* ended, seen in two samples or more */
	size_t ndone, dcap, dropped;
	struct sd_long_poll *list;
	size_t lcap;
	struct sd_snapshot *strings; /* owns every string handed out */
	pid_t *pids;		     /* processes read once already */
	size_t npids, pcap;
	double once_cpu;
	double read_cpu; /* of every reading */
	uint64_t reads;
	double min_seconds; /* shorter ones are not long polls */
	int tokio;
};

struct sd_pollwatch *pollwatch_new(double min_seconds)
{
	struct sd_pollwatch *w = sd_xcalloc(1, sizeof(*w));
	w->min_seconds = min_seconds;
	w->strings = snapshot_new(0);
	return w;
}

void pollwatch_free(struct sd_pollwatch *w)
{
	if (!w)
		return;
	snapshot_free(w->strings);
	free(w->runs);
	free(w->done);
	free(w->list);
	free(w->pids);
	free(w);
}

static double thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The task's future from the name of Tokio's frame polling it,
 * "tokio::runtime::task::core::{impl#6}::poll::{closure#0}<F, S>": F, an
 * async fn's state ("fx::run::{async_fn_env#0}") named by the fn
 * ("fx::run"), an async block's ("...::{async_block_env#3}") by the block
 * ("...::{async_block#3}"), as the dump names a task's future. */
static const char *future_of(struct strpool *pool, const char *fn)
{
	if (!fn || strncmp(fn, "tokio::runtime::task::core::", 28))
		return NULL;
	const char *a = strstr(fn, "::poll::{closure#0}<");
	if (!a)
		return NULL;
	a += strlen("::poll::{closure#0}<");
	size_t n = 0;
	for (int depth = 0; a[n] && (depth || (a[n] != ',' && a[n] != '>')); n++)
		depth += a[n] == '<' ? 1 : a[n] == '>' ? -1 : 0;
	if (!n || !a[n] || n > 900)
		return NULL;
	char buf[1024];
	return strpool_intern(pool, rust_future_name(a, n, buf, sizeof(buf)));
}

/* Where R's worker is in its task, from the worker's frames in S: the
 * task's future (the Core::poll frame's type parameter) and the innermost
 * frame of that future's own code, as longpoll_find names it. */
static void place(struct sd_pollwatch *w, struct sd_target *t, const struct sd_snapshot *s,
		  struct pwrun *r)
{
	const struct sd_thread *th = snapshot_find_thread(s, r->lp.tid);
	if (!th || !th->nframes)
		return;
	uint64_t sig = sd_hash(&th->nframes, sizeof(th->nframes), 0x9011);
	for (size_t i = 0; i < th->nframes; i++)
		sig = sd_hash(&th->frames[i].pc, sizeof(th->frames[i].pc), sig);
	if (sig == r->sig)
		return;
	r->sig = sig;
	struct sd_thread tmp;
	memset(&tmp, 0, sizeof(tmp));
	tmp.tid = th->tid;
	tmp.nframes = th->nframes;
	tmp.frames = sd_xmalloc(th->nframes * sizeof(*th->frames));
	memcpy(tmp.frames, th->frames, th->nframes * sizeof(*th->frames));
	struct strpool *pool = w->strings->pool;
	int raw = 1;
	for (size_t i = 0; i < th->nframes; i++)
		raw &= !th->frames[i].function;
	if (raw && t->sym)
		symbols_thread(t->sym, w->strings, &tmp, 0, 0);
	const char *fut = NULL;
	for (size_t i = 0; i < tmp.nframes && !fut; i++)
		fut = future_of(pool, tmp.frames[i].function);
	r->lp.future = fut;
	r->lp.function = r->lp.file = NULL;
	r->lp.line = 0;
	size_t fl = fut ? strlen(fut) : 0;
	for (size_t i = 0; fl && i < tmp.nframes; i++) {
		const struct sd_frame *f = &tmp.frames[i];
		if (!f->function || strncmp(f->function, fut, fl) ||
		    (f->function[fl] && f->function[fl] != ':'))
			continue;
		r->lp.function = strpool_intern(pool, f->function);
		r->lp.file = f->file ? strpool_intern(pool, f->file) : NULL;
		r->lp.line = f->line;
		break;
	}
	free(tmp.frames);
}

static int longer(const void *a, const void *b)
{
	double x = ((const struct sd_long_poll *)a)->seconds;
	double y = ((const struct sd_long_poll *)b)->seconds;
	return x > y ? -1 : x < y;
}

/* R ended: kept when it was a long poll (seen twice or more). */
static void end_run(struct sd_pollwatch *w, const struct pwrun *r)
{
	if (r->lp.snaps < 2 || r->lp.seconds < w->min_seconds)
		return;
	struct sd_long_poll lp = r->lp;
	lp.ongoing = 0;
	if (w->ndone == PW_KEEP) {
		/* Full: the shortest goes (kept sorted longest first). */
		w->dropped++;
		if (lp.seconds <= w->done[w->ndone - 1].seconds)
			return;
		w->ndone--;
	}
	sd_grow(&w->done, &w->dcap, w->ndone + 1, sizeof(*w->done));
	size_t at = w->ndone;
	while (at > 0 && w->done[at - 1].seconds < lp.seconds)
		at--;
	memmove(&w->done[at + 1], &w->done[at], (w->ndone - at) * sizeof(*w->done));
	w->done[at] = lp;
	w->ndone++;
}

void pollwatch_sample(struct sd_pollwatch *w, struct sd_target *t, struct sd_snapshot *s)
{
	size_t k = 0;
	while (k < w->npids && w->pids[k] != s->pid)
		k++;
	double c0 = thread_cpu();
	target_tokio_workers(t, s);
	uint64_t now = sd_now_ns();
	double c1 = thread_cpu();
	w->reads++;
	w->read_cpu += c1 - c0;
	if (k == w->npids) {
		w->once_cpu += c1 - c0;
		sd_grow(&w->pids, &w->pcap, w->npids + 1, sizeof(*w->pids));
		w->pids[w->npids++] = s->pid;
	}
	if (s->ntokio)
		w->tokio = 1;
	for (size_t i = 0; i < w->nruns; i++)
		w->runs[i].seen = w->runs[i].lp.pid != s->pid;
	for (size_t i = 0; i < s->ntokio; i++) {
		const struct sd_tokio_rt *rt = &s->tokio[i];
		for (size_t j = 0; j < rt->nworkers; j++) {
			uint64_t task = rt->worker_tasks ? rt->worker_tasks[j] : 0;
			int64_t tick = rt->worker_ticks ? rt->worker_ticks[j] : -1;
			/* No tick: no worker core (a blocking-pool thread, a
			 * current_thread runtime): one poll cannot be told. */
			if (!task || tick < 0)
				continue;
			size_t r = 0;
			while (r < w->nruns &&
			       (w->runs[r].lp.pid != s->pid || w->runs[r].lp.tid != rt->workers[j]))
				r++;
			struct pwrun *x = r < w->nruns ? &w->runs[r] : NULL;
			if (x && (x->lp.runtime != rt->id || x->lp.task != task || x->lp.tick != tick)) {
				end_run(w, x);
				memset(x, 0, sizeof(*x));
			} else if (!x) {
				sd_grow(&w->runs, &w->rcap, w->nruns + 1, sizeof(*w->runs));
				x = &w->runs[w->nruns++];
				memset(x, 0, sizeof(*x));
			}
			x->seen = 1;
			if (!x->lp.snaps) {
				const struct sd_thread *th = snapshot_find_thread(s, rt->workers[j]);
				x->lp.pid = s->pid;
				x->lp.tid = rt->workers[j];
				x->lp.runtime = rt->id;
				x->lp.task = task;
				x->lp.tick = tick;
				x->lp.name = th && th->name ? strpool_intern(w->strings->pool, th->name)
							    : NULL;
				x->lp.samples = 1;
				x->first_ns = now;
			}
			x->lp.snaps++;
			x->last_ns = now;
			x->lp.seconds = (double)(now - x->first_ns) / 1e9;
			x->lp.ongoing = 1;
			if (x->lp.snaps >= 2)
				place(w, t, s, x);
		}
	}
	/* Workers of this process polling nothing now (or another task)
	 * ended their poll. */
	for (size_t i = 0; i < w->nruns;) {
		if (w->runs[i].seen) {
			i++;
			continue;
		}
		end_run(w, &w->runs[i]);
		w->runs[i] = w->runs[--w->nruns];
	}
}

size_t pollwatch_list(struct sd_pollwatch *w, int ongoing, const struct sd_long_poll **out,
		      size_t *dropped)
{
	size_t n = 0;
	sd_grow(&w->list, &w->lcap, w->nruns + w->ndone + 1, sizeof(*w->list));
	for (size_t i = 0; i < w->nruns; i++)
		if (w->runs[i].lp.snaps >= 2 && w->runs[i].lp.seconds >= w->min_seconds)
			w->list[n++] = w->runs[i].lp;
	for (size_t i = 0; !ongoing && i < w->ndone; i++)
		w->list[n++] = w->done[i];
	sd_sort(w->list, n, sizeof(*w->list), longer);
	if (dropped)
		*dropped = ongoing ? 0 : w->dropped;
	*out = w->list;
	return n;
}

int pollwatch_tokio(const struct sd_pollwatch *w)
{
	return w->tokio;
}

double pollwatch_once_cpu(const struct sd_pollwatch *w)
{
	return w->once_cpu;
}

double pollwatch_cpu(const struct sd_pollwatch *w, uint64_t *reads)
{
	*reads = w->reads;
	return w->read_cpu;
}
