// SPDX-License-Identifier: MIT
// Goroutine findings of a series of snapshots (findings_go in findings.h):
// deadlocks among goroutines, goroutine leaks (a creation site whose count
// only grows), goroutines stuck on the same wait with the same stack.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "findings.h"
#include "godeadlocks.h"
#include "goleak.h"
#include "hashmap.h"

/* Leaks and stuck groups worth a finding each, at most. */
#define MAX_LEAKS 5
#define MAX_GOSTUCK 8
/* A site is a leak when its count grew by this many or more. */
#define LEAK_MIN_GROWTH 2
/* Goroutine ids a finding's detail names before "and N more". */
#define IDS_SHOWN 24

/* 9800 as "9,800". */
static void count(struct strbuf *sb, uint64_t v)
{
	char d[32];
	int n = snprintf(d, sizeof(d), "%" PRIu64, v);
	for (int i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			strbuf_adds(sb, ",");
		strbuf_add(sb, d + i, 1);
	}
}

/* in 5843 "fx-golocks" */
static void process(struct strbuf *sb, const struct sd_snapshot *s)
{
	strbuf_addf(sb, "in %d \"", (int)s->pid);
	strbuf_add_escaped(sb, s->comm ? s->comm : "");
	strbuf_adds(sb, "\"");
}

/* "goroutines 21-23, 40" (ascending IDS), IDS_SHOWN ids at most. */
static void id_list(struct strbuf *sb, const uint64_t *ids, size_t n)
{
	strbuf_adds(sb, n == 1 ? "goroutine " : "goroutines ");
	size_t shown = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j + 1 < n && ids[j + 1] == ids[j] + 1)
			j++;
		if (shown >= IDS_SHOWN) {
			strbuf_addf(sb, " and %zu more", n - i);
			return;
		}
		strbuf_adds(sb, i ? ", " : "");
		if (j > i)
			strbuf_addf(sb, "%" PRIu64 "-%" PRIu64, ids[i], ids[j]);
		else
			strbuf_addf(sb, "%" PRIu64, ids[i]);
		shown += j - i + 1;
		i = j + 1;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static void add_goid(struct sd_finding *x, uint64_t id)
{
	for (size_t i = 0; i < x->ngoids; i++)
		if (x->goids[i] == id)
			return;
	x->goids = sd_xrealloc(x->goids, (x->ngoids + 1) * sizeof(*x->goids));
	x->goids[x->ngoids++] = id;
}

/* The first frame of G in the program's own code (not the runtime's, nor
 * sync's or internal packages'), else its first frame, or NULL. */
static const struct sd_frame *own_frame(const struct sd_goroutine *g)
{
	for (size_t i = 0; i < g->nframes; i++) {
		const char *fn = g->frames[i].function;
		if (fn && strncmp(fn, "runtime.", 8) && strncmp(fn, "sync.", 5) &&
		    strncmp(fn, "internal/", 9))
			return &g->frames[i];
	}
	return g->nframes ? &g->frames[0] : NULL;
}

/* main.contend at /src/fx.go:120 */
static void frame_name(struct strbuf *sb, const struct sd_frame *f)
{
	strbuf_add_escaped(sb, f && f->function ? f->function : "??");
	if (f && f->file) {
		strbuf_adds(sb, " at ");
		strbuf_add_escaped(sb, f->file);
		if (f->line)
			strbuf_addf(sb, ":%d", f->line);
	}
}

/* The object goroutine G waits on first, or NULL. */
static const struct sd_goobject *object_of(const struct sd_snapshot *s,
					   const struct sd_goroutine *g)
{
	return g->nwaits_on && g->waits_on[0] < s->ngoobjects ? &s->goobjects[g->waits_on[0]]
							      : NULL;
}

/* sync.Mutex 0x588a70 <main.ledger> */
static void object_name(struct strbuf *sb, const struct sd_goobject *o)
{
	strbuf_add_escaped(sb, o->kind);
	strbuf_addf(sb, " 0x%" PRIx64, o->address);
	if (o->symbol) {
		strbuf_adds(sb, " <");
		strbuf_add_escaped(sb, o->symbol);
		strbuf_adds(sb, ">");
	}
}

/* The snapshots of S (N) of one process, in order: indexes into S of the
 * snapshots whose pid is PID and whose goroutines were read. */
static size_t of_process(const struct sd_snapshot *const *s, size_t n, pid_t pid, size_t *idx)
{
	size_t m = 0;
	for (size_t k = 0; k < n; k++)
		if (s[k]->pid == pid && s[k]->go_read)
			idx[m++] = k;
	return m;
}

/* Is PID's first Go snapshot S[K]? (each process once) */
static int first_of(const struct sd_snapshot *const *s, size_t k)
{
	if (!s[k]->go_read)
		return 0;
	for (size_t j = 0; j < k; j++)
		if (s[j]->pid == s[k]->pid && s[j]->go_read)
			return 0;
	return 1;
}

/* ---- deadlocks ----------------------------------------------------------- */

static void find_deadlocks(const struct sd_snapshot *const *s, size_t n, struct sd_finding **v,
			   size_t *nv, size_t *cap)
{
	size_t start = *nv;
	for (size_t k = 0; k < n; k++) {
		if (!s[k]->go_read)
			continue;
		struct sd_godeadlock *d;
		size_t nd = godeadlocks_find(s[k], &d);
		for (size_t i = 0; i < nd; i++) {
			struct sd_finding *x = NULL;
			for (size_t j = start; j < *nv && !x; j++) {
				struct sd_finding *y = &(*v)[j];
				int same = y->pid == s[k]->pid && y->ngoids == d[i].n;
				for (size_t e = 0; same && e < d[i].n; e++)
					same =
					    y->goids[e] == s[k]->goroutines[d[i].goroutines[e]].id;
				if (same)
					x = y;
			}
			if (x) {
				findings_set_span(x, s, x->first, k, x->seen + 1);
				continue;
			}
			x = findings_add(v, nv, cap, SD_FINDING_GODEADLOCK);
			x->pid = s[k]->pid;
			findings_set_span(x, s, k, k, 1);
			struct strbuf t, dt;
			strbuf_init(&t);
			strbuf_init(&dt);
			strbuf_addf(&t, "deadlock: %zu goroutine%s ", d[i].n,
				    d[i].n == 1 ? "" : "s");
			process(&t, s[k]);
			strbuf_adds(&t, " (inferred: Go's mutexes do not record their owner)");
			/* In the cycle's order, from its smallest id. */
			x->goids = sd_xmalloc(d[i].n * sizeof(*x->goids));
			for (size_t e = 0; e < d[i].n; e++) {
				const struct sd_goroutine *g =
				    &s[k]->goroutines[d[i].goroutines[e]];
				const struct sd_goobject *o = &s[k]->goobjects[d[i].objects[e]];
				x->goids[e] = g->id;
				strbuf_addf(&dt, "goroutine %" PRIu64 " waits for ", g->id);
				object_name(&dt, o);
				strbuf_addf(&dt, " held by goroutine %" PRIu64 ", ", o->holder);
				frame_name(&dt, own_frame(g));
				strbuf_adds(&dt, "\n");
			}
			x->ngoids = d[i].n;
			x->address = s[k]->goobjects[d[i].objects[0]].address;
			x->title = strbuf_detach(&t);
			x->detail = strbuf_detach(&dt);
		}
		godeadlocks_free(d, nd);
	}
}

/* ---- leaks --------------------------------------------------------------- */

/* Where the goroutines of SITE are in snapshot S: the commonest program
 * frames and statuses, as detail lines ("70 in main.leaked [chan
 * receive]"), at most three. */
static void where_they_are(struct strbuf *d, const struct sd_snapshot *s,
			   const struct sd_goleak_site *site)
{
	struct pos {
		const struct sd_frame *f;
		const char *status;
		uint64_t n;
	} *p = NULL;
	size_t np = 0, cap = 0;
	for (size_t i = 0; i < s->ngoroutines; i++) {
		const struct sd_goroutine *g = &s->goroutines[i];
		const struct sd_frame *cb = &g->created_by;
		if (!cb->function || !site->function || strcmp(cb->function, site->function) ||
		    cb->line != site->line)
			continue;
		const struct sd_frame *f = own_frame(g);
		const char *st = g->wait_reason ? g->wait_reason : sd_go_status_name(g->status);
		size_t k = 0;
		for (; k < np; k++)
			if (!strcmp(p[k].status, st) &&
			    (p[k].f == f ||
			     (p[k].f && f && p[k].f->function && f->function &&
			      !strcmp(p[k].f->function, f->function) && p[k].f->line == f->line)))
				break;
		if (k == np) {
			sd_grow(&p, &cap, np + 1, sizeof(*p));
			p[np++] = (struct pos){f, st, 0};
		}
		p[k].n++;
	}
	for (int shown = 0; shown < 3; shown++) {
		size_t best = np;
		for (size_t k = 0; k < np; k++)
			if (p[k].n && (best == np || p[k].n > p[best].n))
				best = k;
		if (best == np)
			break;
		strbuf_adds(d, shown ? ", " : "now: ");
		count(d, p[best].n);
		strbuf_adds(d, " in ");
		frame_name(d, p[best].f);
		strbuf_adds(d, " [");
		strbuf_add_escaped(d, p[best].status);
		strbuf_adds(d, "]");
		p[best].n = 0;
	}
	if (np)
		strbuf_adds(d, "\n");
	free(p);
}

static void find_leaks(const struct sd_snapshot *const *s, size_t n, struct sd_finding **v,
		       size_t *nv, size_t *cap)
{
	size_t *idx = sd_xmalloc((n ? n : 1) * sizeof(*idx));
	for (size_t k0 = 0; k0 < n; k0++) {
		if (!first_of(s, k0))
			continue;
		size_t m = of_process(s, n, s[k0]->pid, idx);
		if (m < 2)
			continue;
		struct sd_goleak *gl = goleak_new();
		for (size_t i = 0; i < m; i++)
			goleak_add(gl, s[idx[i]]);
		size_t *order = goleak_order(gl);
		size_t found = 0;
		for (size_t i = 0; i < gl->nsites && found < MAX_LEAKS; i++) {
			const struct sd_goleak_site *site = &gl->sites[order[i]];
			uint64_t a = site->counts[0], b = site->counts[m - 1];
			if (!site->function || !goleak_site_grew(site, m) ||
			    b - a < LEAK_MIN_GROWTH)
				continue;
			found++;
			struct sd_finding *x = findings_add(v, nv, cap, SD_FINDING_GOLEAK);
			x->pid = s[k0]->pid;
			findings_set_span(x, s, idx[0], idx[m - 1], m);
			x->site_function = sd_xstrdup(site->function);
			x->site_file = site->file ? sd_xstrdup(site->file) : NULL;
			x->site_line = site->line;
			x->counts = sd_xmalloc(m * sizeof(*x->counts));
			memcpy(x->counts, site->counts, m * sizeof(*x->counts));
			x->ncounts = m;
			x->count = b;
			struct strbuf t, d;
			strbuf_init(&t);
			strbuf_init(&d);
			strbuf_adds(&t, "goroutine leak: goroutines created by ");
			strbuf_add_escaped(&t, site->function);
			strbuf_adds(&t, " grew from ");
			count(&t, a);
			strbuf_adds(&t, " to ");
			count(&t, b);
			strbuf_addf(&t, " in %.1f s and never fell, ", x->t1 - x->t0);
			process(&t, s[k0]);
			strbuf_adds(&d, "created at ");
			strbuf_add_escaped(&d, site->file ? site->file : "??");
			strbuf_addf(&d, ":%d; per snapshot: ", site->line);
			for (size_t c = 0; c < m; c++) {
				if (m > 12 && c == 6) {
					strbuf_addf(&d, "... (%zu more), ", m - 10);
					c = m - 4;
				}
				strbuf_adds(&d, c ? (m > 12 && c == m - 4 ? "" : ", ") : "");
				count(&d, site->counts[c]);
			}
			strbuf_adds(&d, "\n");
			where_they_are(&d, s[idx[m - 1]], site);
			x->title = strbuf_detach(&t);
			x->detail = strbuf_detach(&d);
		}
		free(order);
		goleak_free(gl);
	}
	free(idx);
}

/* ---- stuck goroutines ---------------------------------------------------- */

/* Does G wait in a way that is no idleness? An idle worker waits on a
 * channel receive or a select, a server in I/O, a timer in sleep: those
 * wait for ever by design. A mutex, a WaitGroup, a semaphore, sync.Cond,
 * a channel send and a nil channel are waits that should end. */
static int blocked(const struct sd_snapshot *s, const struct sd_goroutine *g)
{
	if (g->status != SD_GO_WAITING)
		return 0;
	const struct sd_goobject *o = object_of(s, g);
	if (o && strcmp(o->kind, "chan"))
		return 1;
	const char *r = g->wait_reason;
	if (!r)
		return 0;
	static const char *const reasons[] = {
	    "semacquire",	  "sync.Mutex.Lock",	  "sync.RWMutex.Lock",
	    "sync.RWMutex.RLock", "sync.WaitGroup.Wait",  "sync.Cond.Wait",
	    "chan send",	  "chan send (nil chan)", "chan receive (nil chan)",
	};
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (!strcmp(r, reasons[i]))
			return 1;
	return 0;
}

/* G's stack and wait, as one number. */
static uint64_t ghash(const struct sd_snapshot *s, const struct sd_goroutine *g)
{
	uint64_t h = sd_hash(&g->nframes, sizeof(g->nframes), 17);
	for (size_t i = 0; i < g->nframes; i++)
		h = sd_hash(&g->frames[i].pc, sizeof(g->frames[i].pc), h);
	if (g->wait_reason)
		h = sd_hash(g->wait_reason, strlen(g->wait_reason), h);
	const struct sd_goobject *o = object_of(s, g);
	if (o)
		h = sd_hash(&o->address, sizeof(o->address), h);
	return h ? h : 1;
}

/* A goroutine's current run of one wait and stack, and its longest. */
struct grun {
	uint64_t id, hash;
	size_t first, last; /* positions among the process's snapshots */
	uint64_t best_hash;
	size_t best_first, best_last; /* its longest run of NEED or more */
	int have, have_best;
};

static int grun_eq(const void *e, const void *key)
{
	return ((const struct grun *)e)->id == *(const uint64_t *)key;
}

static int in_cycle(const struct sd_finding *v, size_t from, size_t to, pid_t pid, uint64_t id)
{
	for (size_t j = from; j < to; j++)
		if (v[j].kind == SD_FINDING_GODEADLOCK && v[j].pid == pid)
			for (size_t i = 0; i < v[j].ngoids; i++)
				if (v[j].goids[i] == id)
					return 1;
	return 0;
}

/* One group of stuck goroutines being gathered. */
struct ggroup {
	uint64_t hash;
	size_t first, last;
	size_t finding;
};

static void find_stuck(const struct sd_snapshot *const *s, size_t n, struct sd_finding **v,
		       size_t *nv, size_t *cap, size_t cycles_from, size_t cycles_to)
{
	size_t *idx = sd_xmalloc((n ? n : 1) * sizeof(*idx));
	for (size_t k0 = 0; k0 < n; k0++) {
		if (!first_of(s, k0))
			continue;
		pid_t pid = s[k0]->pid;
		size_t m = of_process(s, n, pid, idx);
		if (m < 2)
			continue;
		size_t need = m < 3 ? 2 : 3;
		struct hashmap runs;
		hashmap_init(&runs, sizeof(struct grun));
		for (size_t p = 0; p < m; p++) {
			const struct sd_snapshot *sn = s[idx[p]];
			for (size_t i = 0; i < sn->ngoroutines; i++) {
				const struct sd_goroutine *g = &sn->goroutines[i];
				if (!blocked(sn, g))
					continue;
				uint64_t h = ghash(sn, g);
				int found;
				struct grun *r =
				    hashmap_put(&runs, g->id * 0x9e3779b97f4a7c15ull + 1, &g->id,
						grun_eq, &found);
				if (!found) {
					memset(r, 0, sizeof(*r));
					r->id = g->id;
				}
				if (!r->have || r->hash != h || r->last + 1 != p) {
					r->hash = h;
					r->first = p;
				}
				r->have = 1;
				r->last = p;
				if (r->last - r->first + 1 >= need &&
				    (!r->have_best ||
				     r->last - r->first >= r->best_last - r->best_first)) {
					r->have_best = 1;
					r->best_hash = h;
					r->best_first = r->first;
					r->best_last = r->last;
				}
			}
		}
		/* Group the stuck ones by wait and stack over the same span. */
		struct ggroup *grp = NULL;
		size_t ng = 0, gcap = 0, start = *nv;
		size_t pos = 0;
		struct grun *r;
		while ((r = hashmap_next(&runs, &pos))) {
			if (!r->have_best || in_cycle(*v, cycles_from, cycles_to, pid, r->id))
				continue;
			size_t j = 0;
			for (; j < ng; j++)
				if (grp[j].first == r->best_first && grp[j].last == r->best_last &&
				    grp[j].hash == r->best_hash)
					break;
			if (j == ng) {
				sd_grow(&grp, &gcap, ng + 1, sizeof(*grp));
				grp[ng++] =
				    (struct ggroup){r->best_hash, r->best_first, r->best_last, 0};
				struct sd_finding *x = findings_add(v, nv, cap, SD_FINDING_GOSTUCK);
				x->pid = pid;
				findings_set_span(x, s, idx[r->best_first], idx[r->best_last],
				     r->best_last - r->best_first + 1);
				grp[j].finding = *nv - 1;
			}
			add_goid(&(*v)[grp[j].finding], r->id);
		}
		hashmap_release(&runs);
		free(grp);
		/* Titles and details from the last snapshot of each span. */
		for (size_t j = start; j < *nv; j++) {
			struct sd_finding *x = &(*v)[j];
			sd_sort(x->goids, x->ngoids, sizeof(*x->goids), cmp_u64);
			const struct sd_snapshot *sl = s[x->last];
			const struct sd_goroutine *g = NULL;
			for (size_t i = 0; i < sl->ngoroutines && !g; i++)
				if (sl->goroutines[i].id == x->goids[0])
					g = &sl->goroutines[i];
			struct strbuf t, d;
			strbuf_init(&t);
			strbuf_init(&d);
			strbuf_addf(&t, "stuck: %zu goroutine%s [", x->ngoids,
				    x->ngoids == 1 ? "" : "s");
			strbuf_add_escaped(&t, g && g->wait_reason ? g->wait_reason : "waiting");
			strbuf_adds(&t, "]");
			const struct sd_goobject *o = g ? object_of(sl, g) : NULL;
			if (o) {
				strbuf_adds(&t, " on ");
				object_name(&t, o);
				x->address = o->address;
				if (o->holder) {
					strbuf_addf(&t, " held by goroutine %" PRIu64 " (inferred)",
						    o->holder);
					x->goholder = o->holder;
				}
			}
			strbuf_addf(&t, ", same stack for %.1f s, ", x->t1 - x->t0);
			process(&t, sl);
			id_list(&d, x->goids, x->ngoids);
			strbuf_adds(&d, ", in ");
			frame_name(&d, g ? own_frame(g) : NULL);
			strbuf_adds(&d, "\n");
			x->title = strbuf_detach(&t);
			x->detail = strbuf_detach(&d);
		}
		/* The most goroutines first, MAX_GOSTUCK groups at most. */
		for (size_t a = start; a < *nv; a++)
			for (size_t b = a + 1; b < *nv; b++)
				if ((*v)[b].ngoids > (*v)[a].ngoids) {
					struct sd_finding tmp = (*v)[a];
					(*v)[a] = (*v)[b];
					(*v)[b] = tmp;
				}
		while (*nv > start + MAX_GOSTUCK) {
			struct sd_finding *x = &(*v)[--*nv];
			free(x->title);
			free(x->detail);
			free(x->goids);
		}
	}
	free(idx);
}

void findings_go(const struct sd_snapshot *const *s, size_t n, int deadlocks, struct sd_finding **v,
		 size_t *n_v, size_t *cap)
{
	if (deadlocks) {
		find_deadlocks(s, n, v, n_v, cap);
		return;
	}
	find_leaks(s, n, v, n_v, cap);
	find_stuck(s, n, v, n_v, cap, 0, *n_v);
}
