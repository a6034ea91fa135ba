// SPDX-License-Identifier: MIT
// Findings of a series of snapshots (see findings.h): one pass per kind
// over the series, each finding kept once with the range of snapshots it
// covers.
#include "findings.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format-tokio.h"
#include "format.h"
#include "locks.h"
#include "longpoll.h"

/* How many hot spots and held locks are worth a line before the details. */
#define MAX_HOT 3
#define MAX_HELD 3
/* A function is a hot spot from this share of the on-CPU samples. */
#define HOT_SHARE 0.10

void findings_clock(char *buf, size_t n, double t)
{
	time_t sec = (time_t)t;
	struct tm tm;
	gmtime_r(&sec, &tm);
	strftime(buf, n, "%H:%M:%S", &tm);
}

static struct sd_finding *add(struct sd_findings *f, size_t *cap, enum sd_finding_kind kind)
{
	return findings_add(&f->v, &f->n, cap, kind);
}

static void add_tid(struct sd_finding *x, pid_t tid)
{
	for (size_t i = 0; i < x->ntids; i++)
		if (x->tids[i] == tid)
			return;
	x->tids = sd_xrealloc(x->tids, (x->ntids + 1) * sizeof(*x->tids));
	x->tids[x->ntids++] = tid;
}

static const char *name_in(const struct sd_snapshot *s, pid_t tid)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return s->threads[i].name;
	for (size_t i = 0; i < s->noutside; i++)
		if (s->outside[i].tid == tid)
			return s->outside[i].name;
	return NULL;
}

/* 4242 "name" */
static void who(struct strbuf *sb, const struct sd_snapshot *s, pid_t tid)
{
	const char *nm = name_in(s, tid);
	strbuf_addf(sb, "%d", (int)tid);
	if (nm) {
		strbuf_adds(sb, " \"");
		strbuf_add_escaped(sb, nm);
		strbuf_adds(sb, "\"");
	}
}

/* mutex <g_lock_a> (or the address when there is no symbol) */
static void lock_name(struct strbuf *sb, enum sd_wait_kind kind, uint64_t addr, const char *sym)
{
	strbuf_adds(sb, locks_kind_name(kind));
	if (sym) {
		strbuf_adds(sb, " <");
		strbuf_add_escaped(sb, sym);
		strbuf_adds(sb, ">");
	} else {
		strbuf_addf(sb, " 0x%" PRIx64, addr);
	}
}

/* ---- deadlocks ----------------------------------------------------------- */

static int same_cycle(const struct sd_finding *x, pid_t pid, const struct sd_deadlock *d)
{
	if (x->kind != SD_FINDING_DEADLOCK || x->pid != pid || x->ntids != d->n)
		return 0;
	for (size_t e = 0; e < d->n; e++)
		if (x->tids[e] != d->edges[e].tid)
			return 0;
	return 1;
}

static void find_deadlocks(const struct sd_snapshot *const *s, size_t n, struct sd_findings *f,
			   size_t *cap)
{
	size_t start = f->n;
	for (size_t k = 0; k < n; k++) {
		struct sd_lockgraph *g = locks_graph(s[k]);
		for (size_t i = 0; i < g->ndeadlocks; i++) {
			const struct sd_deadlock *d = &g->deadlocks[i];
			struct sd_finding *x = NULL;
			for (size_t j = start; j < f->n && !x; j++)
				if (same_cycle(&f->v[j], s[k]->pid, d))
					x = &f->v[j];
			if (x) {
				findings_set_span(x, s, x->first, k, x->seen + 1);
				continue;
			}
			x = add(f, cap, SD_FINDING_DEADLOCK);
			x->pid = s[k]->pid;
			findings_set_span(x, s, k, k, 1);
			struct strbuf t, dt;
			strbuf_init(&t);
			strbuf_init(&dt);
			strbuf_addf(&t, "deadlock: %zu thread%s in %d \"", d->n,
				    d->n == 1 ? "" : "s", (int)s[k]->pid);
			strbuf_add_escaped(&t, s[k]->comm ? s[k]->comm : "");
			strbuf_adds(&t, "\"");
			for (size_t e = 0; e < d->n; e++) {
				const struct sd_lock_edge *ed = &d->edges[e];
				add_tid(x, ed->tid);
				who(&dt, s[k], ed->tid);
				strbuf_adds(&dt, " waits for ");
				lock_name(&dt, ed->kind, ed->address, ed->symbol);
				strbuf_adds(&dt, " held by ");
				if (ed->owner == ed->tid)
					strbuf_adds(&dt, "itself");
				else
					who(&dt, s[k], ed->owner);
				strbuf_adds(&dt, "\n");
			}
			x->address = d->edges[0].address;
			x->title = strbuf_detach(&t);
			x->detail = strbuf_detach(&dt);
		}
		locks_graph_free(g);
	}
}

static int in_deadlock(const struct sd_findings *f, pid_t pid, pid_t tid)
{
	for (size_t j = 0; j < f->n; j++) {
		const struct sd_finding *x = &f->v[j];
		if (x->kind != SD_FINDING_DEADLOCK || x->pid != pid)
			continue;
		for (size_t i = 0; i < x->ntids; i++)
			if (x->tids[i] == tid)
				return 1;
	}
	return 0;
}

/* ---- locks held ---------------------------------------------------------- */

/* A lock held by one thread over consecutive snapshots. */
struct hrun {
	pid_t pid, owner;
	uint64_t addr;
	enum sd_wait_kind kind;
	size_t first, last, maxwait, k;
	size_t waiting;	    /* waiters in snapshot k */
	const char *symbol; /* pool string of snapshot `last` */
	int open;
};

static int cmp_hrun(const void *a, const void *b)
{
	const struct hrun *x = a, *y = b;
	size_t lx = x->last - x->first, ly = y->last - y->first;
	if (lx != ly)
		return lx < ly ? 1 : -1;
	if (x->maxwait != y->maxwait)
		return x->maxwait < y->maxwait ? 1 : -1;
	return (x->first > y->first) - (x->first < y->first);
}

static void find_held(const struct sd_snapshot *const *s, size_t n, struct sd_findings *f,
		      size_t *cap)
{
	struct hrun *v = NULL;
	size_t nv = 0, vcap = 0;
	for (size_t k = 0; k < n; k++) {
		for (size_t i = 0; i < s[k]->nthreads; i++) {
			const struct sd_thread *th = &s[k]->threads[i];
			const struct sd_wait *w = &th->wait;
			if (w->kind < SD_WAIT_MUTEX || w->kind == SD_WAIT_FUTEX ||
			    locks_is_idle(w->kind) || !w->address || !w->owner_known ||
			    w->owner <= 0 || w->kind == SD_WAIT_JOIN)
				continue;
			struct hrun *r = NULL;
			for (size_t j = 0; j < nv && !r; j++)
				if (v[j].open && v[j].pid == s[k]->pid && v[j].addr == w->address &&
				    v[j].owner == w->owner &&
				    (v[j].last == k || v[j].last + 1 == k))
					r = &v[j];
			if (!r) {
				sd_grow(&v, &vcap, nv + 1, sizeof(*v));
				r = &v[nv++];
				memset(r, 0, sizeof(*r));
				r->pid = s[k]->pid;
				r->owner = w->owner;
				r->addr = w->address;
				r->kind = w->kind;
				r->first = k;
				r->open = 1;
			}
			if (r->k != k || r->last != k)
				r->waiting = 0;
			r->k = k;
			r->last = k;
			r->waiting++;
			if (r->waiting > r->maxwait)
				r->maxwait = r->waiting;
			if (w->symbol)
				r->symbol = w->symbol;
		}
		/* A run not seen in this snapshot is over. */
		for (size_t j = 0; j < nv; j++)
			if (v[j].open && v[j].last != k)
				v[j].open = 0;
	}
	sd_sort(v, nv, sizeof(*v), cmp_hrun);
	size_t shown = 0;
	for (size_t j = 0; j < nv && shown < MAX_HELD; j++) {
		const struct hrun *r = &v[j];
		/* Held in one snapshot of many is no finding: any lock is
		 * held at some instant. */
		if (n > 1 && r->last == r->first)
			continue;
		if (in_deadlock(f, r->pid, r->owner))
			continue;
		const struct sd_snapshot *sl = s[r->last];
		struct sd_finding *x = add(f, cap, SD_FINDING_LOCK_HELD);
		x->pid = r->pid;
		x->address = r->addr;
		x->holder = r->owner;
		add_tid(x, r->owner);
		findings_set_span(x, s, r->first, r->last, r->last - r->first + 1);
		struct strbuf t;
		strbuf_init(&t);
		strbuf_adds(&t, "lock held: ");
		lock_name(&t, r->kind, r->addr, r->symbol);
		strbuf_adds(&t, " held by ");
		who(&t, sl, r->owner);
		if (n > 1)
			strbuf_addf(&t, " for %.1f s or more", x->t1 - x->t0);
		strbuf_addf(&t, ", %zu waiter%s at most", r->maxwait, r->maxwait == 1 ? "" : "s");
		x->title = strbuf_detach(&t);
		/* What the holder was doing meanwhile: its last state. */
		const struct sd_thread *h = NULL;
		for (size_t i = 0; i < sl->nthreads && !h; i++)
			if (sl->threads[i].tid == r->owner)
				h = &sl->threads[i];
		if (h) {
			struct strbuf d;
			strbuf_init(&d);
			struct sd_render_opts ro = {0};
			strbuf_adds(&d, "holder: ");
			format_text_thread_header(&d, sl, h, &ro);
			for (size_t fr = 0; fr < h->nframes; fr++)
				if (h->frames[fr].function && h->frames[fr].module && sl->comm &&
				    !strncmp(h->frames[fr].module, sl->comm, 15)) {
					strbuf_adds(&d, ", in ");
					strbuf_add_escaped(&d, h->frames[fr].function);
					break;
				}
			strbuf_adds(&d, "\n");
			x->detail = strbuf_detach(&d);
		}
		shown++;
	}
	free(v);
}

/* ---- stuck threads ------------------------------------------------------- */

static char wait_letter(const struct sd_thread *th)
{
	if (th->status != SD_THREAD_OK)
		return 0;
	if (th->state == 'D' || th->wait.kind == SD_WAIT_DISK)
		return 'D';
	if (th->wait.kind >= SD_WAIT_MUTEX && !locks_is_idle(th->wait.kind))
		return 'L';
	return 0;
}

/* A thread's current run of the same wait and stack. */
struct srun {
	pid_t pid, tid;
	uint64_t hash, addr;
	pid_t owner;
	char letter;
	size_t first, last;
	size_t best_first, best_last; /* its longest run */
	const struct sd_thread *th;   /* in snapshot best_last */
};

static void find_stuck(const struct sd_snapshot *const *s, size_t n, struct sd_findings *f,
		       size_t *cap)
{
	struct srun *v = NULL;
	size_t nv = 0, vcap = 0;
	for (size_t k = 0; k < n; k++) {
		for (size_t i = 0; i < s[k]->nthreads; i++) {
			const struct sd_thread *th = &s[k]->threads[i];
			char c = wait_letter(th);
			uint64_t h = c ? snapshot_stack_hash(th) : 0;
			struct srun *r = NULL;
			for (size_t j = 0; j < nv && !r; j++)
				if (v[j].pid == s[k]->pid && v[j].tid == th->tid)
					r = &v[j];
			if (!r) {
				sd_grow(&v, &vcap, nv + 1, sizeof(*v));
				r = &v[nv++];
				memset(r, 0, sizeof(*r));
				r->pid = s[k]->pid;
				r->tid = th->tid;
			}
			int same = c && r->letter == c && r->hash == h &&
				   r->addr == th->wait.address && r->owner == th->wait.owner &&
				   r->last + 1 == k && r->hash;
			if (!same) {
				r->letter = c;
				r->hash = h;
				r->addr = th->wait.address;
				r->owner = th->wait.owner;
				r->first = k;
			}
			r->last = k;
			if (c && (!r->th || r->last - r->first >= r->best_last - r->best_first)) {
				r->best_first = r->first;
				r->best_last = r->last;
				r->th = th;
			}
		}
	}
	size_t need = n < 3 ? 2 : 3;
	if (n < 2) {
		free(v);
		return;
	}
	size_t start = f->n;
	/* The wait letter of each stuck finding (by index from START):
	 * threads stuck on the same thing over the same snapshots make one
	 * finding. */
	char *letter = sd_xcalloc(nv + 1, 1);
	for (size_t j = 0; j < nv; j++) {
		const struct srun *r = &v[j];
		if (!r->th || r->best_last - r->best_first + 1 < need)
			continue;
		if (in_deadlock(f, r->pid, r->tid))
			continue;
		char c = wait_letter(r->th);
		struct sd_finding *x = NULL;
		for (size_t i = start; i < f->n && !x; i++)
			if (f->v[i].pid == r->pid && f->v[i].address == r->th->wait.address &&
			    f->v[i].holder == r->th->wait.owner && f->v[i].first == r->best_first &&
			    f->v[i].last == r->best_last && letter[i - start] == c)
				x = &f->v[i];
		if (!x) {
			letter[f->n - start] = c;
			x = add(f, cap, SD_FINDING_STUCK);
			x->pid = r->pid;
			x->address = r->th->wait.address;
			x->holder = r->th->wait.owner;
			findings_set_span(x, s, r->best_first, r->best_last,
				 r->best_last - r->best_first + 1);
		}
		add_tid(x, r->tid);
		struct strbuf d;
		strbuf_init(&d);
		if (x->detail)
			strbuf_adds(&d, x->detail);
		who(&d, s[r->best_last], r->tid);
		strbuf_adds(&d, "\n");
		free(x->detail);
		x->detail = strbuf_detach(&d);
	}
	/* The title says what they wait for, once the threads are counted. */
	for (size_t i = start; i < f->n; i++) {
		struct sd_finding *x = &f->v[i];
		const struct sd_snapshot *sl = s[x->last];
		const struct sd_thread *th = NULL;
		for (size_t t = 0; t < sl->nthreads && !th; t++)
			if (sl->threads[t].tid == x->tids[0])
				th = &sl->threads[t];
		struct strbuf t;
		strbuf_init(&t);
		strbuf_addf(&t, "stuck: %zu thread%s ", x->ntids, x->ntids == 1 ? "" : "s");
		if (th && letter[i - start] == 'L') {
			strbuf_adds(&t, "waiting for ");
			format_text_wait(&t, sl, th);
		} else {
			strbuf_adds(&t, "in uninterruptible sleep");
			if (th && th->wchan)
				strbuf_addf(&t, " (wchan %s)", th->wchan);
		}
		strbuf_addf(&t, ", same stack for %.1f s", x->t1 - x->t0);
		x->title = strbuf_detach(&t);
	}
	free(letter);
	free(v);
}

/* ---- hot spots ----------------------------------------------------------- */

struct hot {
	const char *fn; /* pool string of some snapshot */
	pid_t pid;
	size_t first, last, seen, lastk;
	uint64_t count;
	pid_t *tids;
	size_t ntids;
};

static int cmp_hot(const void *a, const void *b)
{
	const struct hot *x = a, *y = b;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->fn, y->fn);
}

static void find_hot(const struct sd_snapshot *const *s, size_t n, struct sd_findings *f,
		     size_t *cap)
{
	struct hot *v = NULL;
	size_t nv = 0, vcap = 0;
	uint64_t total = 0;
	for (size_t k = 0; k < n; k++) {
		for (size_t i = 0; i < s[k]->nthreads; i++) {
			const struct sd_thread *th = &s[k]->threads[i];
			if (th->status != SD_THREAD_OK || th->wait.kind != SD_WAIT_RUNNING ||
			    !th->nframes)
				continue;
			total++;
			const char *fn = th->frames[0].function;
			if (!fn)
				continue;
			struct hot *h = NULL;
			for (size_t j = 0; j < nv && !h; j++)
				if (v[j].pid == s[k]->pid && !strcmp(v[j].fn, fn))
					h = &v[j];
			if (!h) {
				sd_grow(&v, &vcap, nv + 1, sizeof(*v));
				h = &v[nv++];
				memset(h, 0, sizeof(*h));
				h->fn = fn;
				h->pid = s[k]->pid;
				h->first = k;
				h->lastk = (size_t)-1;
			}
			h->count++;
			h->last = k;
			if (h->lastk != k)
				h->seen++;
			h->lastk = k;
			int known = 0;
			for (size_t t = 0; t < h->ntids && !known; t++)
				known = h->tids[t] == th->tid;
			if (!known) {
				h->tids = sd_xrealloc(h->tids, (h->ntids + 1) * sizeof(*h->tids));
				h->tids[h->ntids++] = th->tid;
			}
		}
	}
	sd_sort(v, nv, sizeof(*v), cmp_hot);
	size_t shown = 0;
	for (size_t j = 0; j < nv; j++) {
		struct hot *h = &v[j];
		if (shown < MAX_HOT && total && (double)h->count >= HOT_SHARE * (double)total) {
			struct sd_finding *x = add(f, cap, SD_FINDING_HOT);
			x->pid = h->pid;
			x->count = h->count;
			x->total = total;
			findings_set_span(x, s, h->first, h->last, h->seen);
			for (size_t t = 0; t < h->ntids; t++)
				add_tid(x, h->tids[t]);
			struct strbuf t, d;
			strbuf_init(&t);
			strbuf_init(&d);
			strbuf_adds(&t, "hot spot: ");
			strbuf_add_escaped(&t, h->fn);
			strbuf_addf(&t,
				    " on top of %.0f%% of the on-CPU thread samples (%" PRIu64
				    " of %" PRIu64 "), %zu thread%s",
				    100.0 * (double)h->count / (double)total, h->count, total,
				    h->ntids, h->ntids == 1 ? "" : "s");
			const struct sd_snapshot *sl = s[h->last];
			for (size_t t2 = 0; t2 < h->ntids && t2 < 8; t2++) {
				strbuf_adds(&d, t2 ? ", " : "");
				who(&d, sl, h->tids[t2]);
			}
			if (h->ntids > 8)
				strbuf_addf(&d, " and %zu more", h->ntids - 8);
			strbuf_adds(&d, "\n");
			x->title = strbuf_detach(&t);
			x->detail = strbuf_detach(&d);
			shown++;
		}
		free(h->tids);
	}
	free(v);
}

/* Threads a finding names one per line from this many on are one line. */
#define WHO_FOLD_FROM 4

/* DETAIL's lines, each 'TID "name"', as one line "    N threads: ..."
 * into OUT; 0 (nothing written) when a line is of another form. */
static int fold_who(struct strbuf *out, const char *detail)
{
	size_t n = 0, cap = 0;
	pid_t *tids = NULL;
	char **names = NULL;
	int ok = detail != NULL;
	for (const char *p = detail; ok && p && *p;) {
		size_t l = strcspn(p, "\n");
		char *end;
		long tid = strtol(p, &end, 10);
		const char *q = end + 2, *close = l >= 2 ? p + l - 1 : p;
		ok = tid > 0 && end[0] == ' ' && end[1] == '"' && q <= close && *close == '"';
		if (ok) {
			sd_grow(&tids, &cap, n + 1, sizeof(*tids));
			names = sd_xrealloc(names, (n + 1) * sizeof(*names));
			tids[n] = (pid_t)tid;
			names[n] = sd_xmalloc((size_t)(close - q) + 1);
			memcpy(names[n], q, (size_t)(close - q));
			names[n][close - q] = '\0';
			n++;
		}
		p += l + (p[l] == '\n');
	}
	if (ok && n) {
		strbuf_addf(out, "    %zu threads: ", n);
		format_names_ranges(out, (const char *const *)names, tids, n, 60);
		strbuf_adds(out, "\n");
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(tids);
	return ok && n;
}

/* ---- a Tokio program's ---------------------------------------------------- */

/* " in 4242 "comm"" */
static void in_process(struct strbuf *sb, const struct sd_snapshot *s)
{
	strbuf_addf(sb, " in %d \"", (int)s->pid);
	strbuf_add_escaped(sb, s->comm ? s->comm : "");
	strbuf_adds(sb, "\"");
}

/* The finding of KIND of process PID keyed KEY among F's from START, or NULL. */
static struct sd_finding *same_key(struct sd_findings *f, size_t start,
				   enum sd_finding_kind kind, pid_t pid, uint64_t key)
{
	for (size_t j = start; j < f->n; j++)
		if (f->v[j].kind == kind && f->v[j].pid == pid && f->v[j].key == key)
			return &f->v[j];
	return NULL;
}

/* DETAIL's lines without the 4 spaces of the dump's indent. */
static char *unindent(const struct strbuf *d)
{
	struct strbuf o;
	strbuf_init(&o);
	for (const char *p = d->buf; p && *p;) {
		size_t l = strcspn(p, "\n");
		size_t sp = 0;
		while (sp < 4 && sp < l && p[sp] == ' ')
			sp++;
		strbuf_add(&o, p + sp, l - sp);
		strbuf_adds(&o, "\n");
		p += l + (p[l] == '\n');
	}
	return strbuf_detach(&o);
}

static void find_tokio(const struct sd_snapshot *const *s, size_t n, struct sd_findings *f,
		       size_t *cap)
{
	static const enum sd_finding_kind kinds[] = {SD_FINDING_TASK_DEADLOCK, SD_FINDING_TOKIO_STALL,
						     SD_FINDING_FUTURE_LOCK};
	size_t start = f->n;
	for (size_t k = 0; k < n; k++) {
		if (!s[k]->ntokio)
			continue;
		struct sd_lockgraph *g = locks_graph(s[k]);
		for (int kind = 0; kind < 3; kind++) {
			for (size_t i = 0;; i++) {
				struct strbuf sum, det;
				strbuf_init(&sum);
				strbuf_init(&det);
				int got = format_tokio_finding(s[k], g, kind, i, &sum, &det, NULL);
				uint64_t key = got ? sd_hash(sum.buf, sum.len, 0x70f) : 0;
				struct sd_finding *x = got ? same_key(f, start, kinds[kind], s[k]->pid, key) : NULL;
				if (x && x->last + 1 >= k) {
					findings_set_span(x, s, x->first, k, x->seen + 1);
				} else if (got) {
					x = add(f, cap, kinds[kind]);
					x->pid = s[k]->pid;
					x->key = key;
					findings_set_span(x, s, k, k, 1);
					in_process(&sum, s[k]);
					x->title = strbuf_detach(&sum);
					x->detail = unindent(&det);
				}
				strbuf_release(&sum);
				strbuf_release(&det);
				if (!got)
					break;
			}
		}
		locks_graph_free(g);
	}
	/* Long polls: the run of snapshots up to each one; one finding per
	 * poll (worker, task, tick), its longest run. */
	for (size_t k = 1; k < n; k++) {
		struct sd_long_poll *lp = NULL;
		size_t nlp = longpoll_find((struct sd_snapshot *const *)s, k + 1, &lp);
		for (size_t i = 0; i < nlp; i++) {
			uint64_t key = sd_hash(&lp[i].tid, sizeof(lp[i].tid),
					       sd_hash(&lp[i].task, 8, sd_hash(&lp[i].tick, 8, 0x10f)));
			struct sd_finding *x = same_key(f, start, SD_FINDING_LONG_POLL, s[k]->pid, key);
			if (!x) {
				x = add(f, cap, SD_FINDING_LONG_POLL);
				x->pid = s[k]->pid;
				x->key = key;
				x->holder = lp[i].tid;
				add_tid(x, lp[i].tid);
			}
			free(x->title);
			struct strbuf t;
			strbuf_init(&t);
			strbuf_adds(&t, "long poll");
			in_process(&t, s[k]);
			strbuf_adds(&t, ": ");
			longpoll_text(&t, s[k], &lp[i]);
			x->title = strbuf_detach(&t);
			findings_set_span(x, s, k + 1 - lp[i].snaps, k, lp[i].snaps);
		}
		free(lp);
	}
}

/* ---- the whole set ------------------------------------------------------- */

void findings_analyze(const struct sd_snapshot *const *s, size_t n, struct sd_findings *f)
{
	memset(f, 0, sizeof(*f));
	f->nsnaps = n;
	if (!n)
		return;
	size_t cap = 0;
	find_deadlocks(s, n, f, &cap);
	find_tokio(s, n, f, &cap);
	findings_go(s, n, 1, &f->v, &f->n, &cap);
	find_held(s, n, f, &cap);
	find_stuck(s, n, f, &cap);
	findings_go(s, n, 0, &f->v, &f->n, &cap);
	find_hot(s, n, f, &cap);
}

void findings_release(struct sd_findings *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].title);
		free(f->v[i].detail);
		free(f->v[i].tids);
		free(f->v[i].goids);
		free(f->v[i].site_function);
		free(f->v[i].site_file);
		free(f->v[i].counts);
	}
	free(f->v);
	memset(f, 0, sizeof(*f));
}

void findings_span(struct strbuf *out, const struct sd_finding *x)
{
	char a[32], b[32];
	findings_clock(a, sizeof(a), x->t0);
	findings_clock(b, sizeof(b), x->t1);
	if (x->first == x->last) {
		strbuf_addf(out, "%s, snapshot %zu", a, x->first + 1);
		return;
	}
	strbuf_addf(out, "%s-%s, snapshots %zu-%zu", a, b, x->first + 1, x->last + 1);
	if (x->seen < x->last - x->first + 1)
		strbuf_addf(out, " (in %zu of them)", x->seen);
}

void findings_format_text(struct strbuf *out, const struct sd_findings *f)
{
	strbuf_adds(out, "Findings");
	if (!f->n) {
		strbuf_addf(out,
			    ": none in %zu snapshot%s (no deadlock, no lock held across "
			    "snapshots, no thread stuck, no CPU hot spot)\n",
			    f->nsnaps, f->nsnaps == 1 ? "" : "s");
		return;
	}
	strbuf_adds(out, " (times UTC):\n");
	for (size_t i = 0; i < f->n; i++) {
		const struct sd_finding *x = &f->v[i];
		strbuf_adds(out, "  ");
		strbuf_adds(out, x->title);
		strbuf_adds(out, "\n    ");
		findings_span(out, x);
		strbuf_adds(out, "\n");
		/* A pool stuck alike is one line, not one per thread. */
		if (x->kind == SD_FINDING_STUCK && x->ntids >= WHO_FOLD_FROM && fold_who(out, x->detail))
			continue;
		for (const char *p = x->detail; p && *p;) {
			size_t l = strcspn(p, "\n");
			strbuf_adds(out, "    ");
			strbuf_add(out, p, l);
			strbuf_adds(out, "\n");
			p += l + (p[l] == '\n');
		}
	}
}

static const char *kind_name(enum sd_finding_kind k)
{
	switch (k) {
	case SD_FINDING_DEADLOCK: return "deadlock";
	case SD_FINDING_LOCK_HELD: return "lock_held";
	case SD_FINDING_STUCK: return "stuck";
	case SD_FINDING_HOT: return "hot_spot";
	case SD_FINDING_TASK_DEADLOCK: return "task_deadlock";
	case SD_FINDING_TOKIO_STALL: return "tokio_stall";
	case SD_FINDING_FUTURE_LOCK: return "future_lock";
	case SD_FINDING_LONG_POLL: return "long_poll";
	case SD_FINDING_GODEADLOCK: return "goroutine_deadlock";
	case SD_FINDING_GOLEAK: return "goroutine_leak";
	case SD_FINDING_GOSTUCK: return "goroutines_stuck";
	}
	return "?";
}

/* What a goroutine finding adds: its goroutines, the holder goroutine of
 * what they wait on, a leak's creation site and counts. */
static void go_members(struct jsonw *w, const struct sd_finding *x)
{
	jsonw_karray(w, "goroutines");
	for (size_t k = 0; k < x->ngoids; k++)
		jsonw_u64(w, x->goids[k]);
	jsonw_array_end(w);
	if (x->goholder)
		jsonw_ku64(w, "holder_goroutine", x->goholder);
	else
		jsonw_knull(w, "holder_goroutine");
	if (x->kind != SD_FINDING_GOLEAK)
		return;
	jsonw_kobject(w, "created_by");
	jsonw_kstr(w, "function", x->site_function);
	jsonw_kstr(w, "file", x->site_file);
	if (x->site_line)
		jsonw_kint(w, "line", x->site_line);
	else
		jsonw_knull(w, "line");
	jsonw_object_end(w);
	jsonw_karray(w, "counts");
	for (size_t k = 0; k < x->ncounts; k++)
		jsonw_u64(w, x->counts[k]);
	jsonw_array_end(w);
}

void findings_json(struct jsonw *w, const struct sd_findings *f)
{
	jsonw_array_begin(w);
	for (size_t i = 0; i < f->n; i++) {
		const struct sd_finding *x = &f->v[i];
		jsonw_object_begin(w);
		jsonw_kstr(w, "kind", kind_name(x->kind));
		jsonw_kstr(w, "title", x->title);
		jsonw_kstr(w, "detail", x->detail);
		jsonw_kint(w, "pid", x->pid);
		jsonw_ku64(w, "first", (uint64_t)x->first + 1);
		jsonw_ku64(w, "last", (uint64_t)x->last + 1);
		jsonw_ku64(w, "seen", x->seen);
		jsonw_kdouble(w, "start", x->t0);
		jsonw_kdouble(w, "end", x->t1);
		jsonw_karray(w, "tids");
		for (size_t k = 0; k < x->ntids; k++)
			jsonw_int(w, x->tids[k]);
		jsonw_array_end(w);
		if (x->address)
			jsonw_khex(w, "address", x->address);
		else
			jsonw_knull(w, "address");
		if (x->holder)
			jsonw_kint(w, "holder", x->holder);
		else
			jsonw_knull(w, "holder");
		if (x->kind >= SD_FINDING_GODEADLOCK)
			go_members(w, x);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
}
