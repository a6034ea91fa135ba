// SPDX-License-Identifier: MIT
// Text and JSON renderings of profiles: the pt-pmp like top view, the call
// tree, the per-lock report of profile --locks, the JSON document (read back
// by diff) and the text of a diff.
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "format-profile.h"
#include "longpoll.h"

static double pct(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : 0.0;
}

static void add_frame_line(struct strbuf *out, struct sd_profile *p, const struct sd_pframe *f)
{
	strbuf_add_escaped(out, f->name);
	if (f->module && f->function) {
		strbuf_adds(out, " (");
		strbuf_add_escaped(out, f->module);
		strbuf_adds(out, ")");
	}
	if (f->flags & SD_FRAME_INLINED)
		strbuf_adds(out, " [inlined]");
	if (p->opts.by_address && f->file) {
		strbuf_adds(out, " at ");
		const char *b = strrchr(f->file, '/');
		strbuf_add_escaped(out, b ? b + 1 : f->file);
		if (f->line)
			strbuf_addf(out, ":%d", f->line);
	}
}

static void add_header(struct strbuf *out, struct sd_profile *p)
{
	if (p->nprocs == 1) {
		strbuf_addf(out, "Profile of %d \"", (int)p->procs[0].pid);
		strbuf_add_escaped(out, p->procs[0].comm);
		strbuf_adds(out, "\"");
	} else if (p->nprocs > 1) {
		strbuf_addf(out, "Profile of %zu processes (", p->nprocs);
		for (size_t i = 0; i < p->nprocs && i < 8; i++) {
			strbuf_addf(out, "%s%d \"", i ? ", " : "", (int)p->procs[i].pid);
			strbuf_add_escaped(out, p->procs[i].comm);
			strbuf_adds(out, "\"");
		}
		strbuf_adds(out, p->nprocs > 8 ? ", ...)" : ")");
	} else {
		strbuf_adds(out, "Profile");
	}
	if (p->samples) {
		strbuf_adds(out, ": ");
		format_profile_rate(out, p);
	}
	strbuf_addf(out, ", %" PRIu64 " thread samples", p->thread_samples);
	if (p->engine)
		strbuf_addf(out, ", engine %s", p->engine);
	strbuf_adds(out, "\n");
	uint64_t total = profile_total(p);
	strbuf_addf(out, "on-CPU %" PRIu64 " (%.1f%%), off-CPU %" PRIu64 " (%.1f%%)", p->on_cpu,
		    pct((double)p->on_cpu, (double)total), total - p->on_cpu,
		    pct((double)(total - p->on_cpu), (double)total));
	if (p->idle)
		strbuf_addf(out, "; %" PRIu64 " idle thread samples hidden", p->idle);
	if (p->filtered > p->idle)
		strbuf_addf(out, "; %" PRIu64 " filtered out", p->filtered - p->idle);
	if (p->lost)
		strbuf_addf(out, "; %" PRIu64 " unreadable", p->lost);
	if (p->io_workers)
		strbuf_addf(out, "; %" PRIu64 " samples of io_uring workers left out (kernel threads: no "
			    "user stack)", p->io_workers);
	/* Dropped samples are said when they cost the profile something: a
	 * tick that had to count a thread's stack of an earlier tick. */
	if (p->stale_stacks)
		strbuf_addf(out,
			    "; %" PRIu64 " thread stack%s counted again from an earlier tick for want "
			    "of a sample (%" PRIu64 " lost by the kernel: ring buffer full)",
			    p->stale_stacks, p->stale_stacks == 1 ? "" : "s", p->lost_samples);
	if (p->throttled)
		strbuf_addf(out, "; sampling throttled %" PRIu64 " times (perf_event_max_sample_rate)",
			    p->throttled);
	strbuf_adds(out, "\n");
}

static int cmp_state(const void *a, const void *b)
{
	const struct sd_pstate *x = a, *y = b;
	return (x->count < y->count) - (x->count > y->count);
}

static int cmp_pthread(const void *a, const void *b)
{
	const struct sd_pthread *x = a, *y = b;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

static void add_threads(struct strbuf *out, struct sd_profile *p, struct sd_pstack *st)
{
	sd_sort(st->threads, st->nthreads, sizeof(*st->threads), cmp_pthread);
	size_t shown = st->nthreads <= 8 ? st->nthreads : 6;
	for (size_t i = 0; i < shown; i++) {
		const struct sd_pthread *t = &st->threads[i];
		strbuf_adds(out, i ? ", " : "");
		strbuf_add_escaped(out, t->name);
		if (p->opts.group_threads)
			strbuf_addf(out, " (%zu thread%s)", t->ntids, t->ntids == 1 ? "" : "s");
		else if (p->nprocs > 1)
			strbuf_addf(out, " (%d:%d)", (int)t->pid, (int)t->tid);
		else if (t->tid)
			strbuf_addf(out, " (%d)", (int)t->tid);
	}
	if (shown < st->nthreads)
		strbuf_addf(out, ", +%zu more", st->nthreads - shown);
}

void format_profile_top(struct strbuf *out, struct sd_profile *p, const struct sd_prender *o)
{
	profile_sort(p);
	add_header(out, p);
	uint64_t total = profile_total(p);
	size_t shown = 0;
	for (size_t i = 0; i < p->nstacks; i++) {
		struct sd_pstack *st = &p->stacks[i];
		if (!st->count)
			continue;
		if (o && o->limit > 0 && shown >= (size_t)o->limit) {
			size_t rest = 0;
			uint64_t rc = 0;
			for (size_t k = i; k < p->nstacks; k++)
				if (p->stacks[k].count) {
					rest++;
					rc += p->stacks[k].count;
				}
			strbuf_addf(out, "\n... %zu more stacks (%" PRIu64 " samples, %.1f%%); use --limit 0 to see all\n",
				    rest, rc, pct((double)rc, (double)total));
			break;
		}
		shown++;
		strbuf_addf(out, "\n%6" PRIu64 " %5.1f%%  ", st->count, pct((double)st->count, (double)total));
		struct sd_pstate sv[SD_PSTACK_STATES];
		memcpy(sv, st->states, sizeof(sv));
		sd_sort(sv, SD_PSTACK_STATES, sizeof(*sv), cmp_state);
		for (int k = 0; k < SD_PSTACK_STATES && sv[k].what && k < 3; k++)
			strbuf_addf(out, "%s%s %.0f%%", k ? ", " : "", sv[k].what,
				    pct((double)sv[k].count, (double)st->count));
		strbuf_adds(out, "  ");
		add_threads(out, p, st);
		strbuf_adds(out, "\n");
		if (!st->nframes)
			strbuf_adds(out, "        [no frames]\n");
		for (size_t k = 0; k < st->nframes; k++) {
			strbuf_adds(out, "        ");
			add_frame_line(out, p, &st->frames[k]);
			strbuf_adds(out, "\n");
		}
	}
	if (!shown)
		strbuf_adds(out, "\nno samples\n");
}

/* ---- tree ---- */

static int cmp_flame_value(const void *a, const void *b)
{
	const struct sd_flame *x = *(struct sd_flame *const *)a, *y = *(struct sd_flame *const *)b;
	if (x->value != y->value)
		return x->value < y->value ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void tree_node(struct strbuf *out, const struct sd_flame *n, int depth, double total,
		      double minp, uint64_t *hidden)
{
	if (depth >= 0) {
		if (pct((double)n->value, total) < minp) {
			(*hidden)++;
			return;
		}
		strbuf_addf(out, "%6.1f%% %6.1f%%  ", pct((double)n->value, total),
			    pct((double)n->self, total));
		int ind = depth < 40 ? depth : 40;
		for (int i = 0; i < ind; i++)
			strbuf_adds(out, "  ");
		if (depth > 40)
			strbuf_addf(out, "[%d] ", depth);
		strbuf_add_escaped(out, n->name);
		strbuf_adds(out, "\n");
	}
	if (!n->nchild)
		return;
	const struct sd_flame **v = sd_xmalloc(n->nchild * sizeof(*v));
	size_t k = 0;
	for (const struct sd_flame *c = n->child; c; c = c->next)
		v[k++] = c;
	sd_sort(v, k, sizeof(*v), cmp_flame_value);
	for (size_t i = 0; i < k; i++)
		tree_node(out, v[i], depth + 1, total, minp, hidden);
	free(v);
}

void format_profile_tree(struct strbuf *out, struct sd_profile *p, const struct sd_prender *o)
{
	add_header(out, p);
	struct sd_flame *root = profile_flame(p);
	strbuf_adds(out, "\n total    self  function (callers above callees)\n");
	uint64_t hidden = 0;
	double minp = o ? o->min_percent : 0;
	tree_node(out, root, -1, (double)root->value, minp, &hidden);
	if (!root->value)
		strbuf_adds(out, "no samples\n");
	if (hidden)
		strbuf_addf(out, "(%" PRIu64 " call paths under %.2g%% hidden; --min-percent 0 shows all)\n",
			    hidden, minp);
	profile_flame_free(root);
}

/* ---- locks ---- */

static int cmp_lock(const void *a, const void *b)
{
	const struct sd_plock *x = a, *y = b;
	if (x->waiters != y->waiters)
		return x->waiters < y->waiters ? 1 : -1;
	return (x->address > y->address) - (x->address < y->address);
}

static int cmp_holder(const void *a, const void *b)
{
	const struct sd_pholder *x = a, *y = b;
	return (x->count < y->count) - (x->count > y->count);
}

static void add_stack_line(struct strbuf *out, const struct sd_pstack *st, size_t max)
{
	for (size_t k = 0; k < st->nframes && k < max; k++) {
		strbuf_adds(out, k ? " < " : "");
		strbuf_add_escaped(out, st->frames[k].name);
	}
	if (st->nframes > max)
		strbuf_adds(out, " < ...");
}

static uint64_t proc_samples(const struct sd_profile *p, pid_t pid)
{
	for (size_t i = 0; i < p->nprocs; i++)
		if (p->procs[i].pid == pid)
			return p->procs[i].samples;
	return p->samples;
}

void format_profile_locks(struct strbuf *out, struct sd_profile *p, const struct sd_prender *o)
{
	(void)o;
	profile_sort(p);
	add_header(out, p);
	if (!p->nlocks) {
		strbuf_adds(out, "\nno thread waited for a lock in any sample\n");
		return;
	}
	sd_sort(p->locks, p->nlocks, sizeof(*p->locks), cmp_lock);
	for (size_t i = 0; i < p->nlocks; i++) {
		struct sd_plock *l = &p->locks[i];
		uint64_t n = proc_samples(p, l->pid);
		strbuf_addf(out, "\n%s 0x%" PRIx64, sd_wait_kind_name(l->kind), l->address);
		if (l->symbol) {
			strbuf_adds(out, " <");
			strbuf_add_escaped(out, l->symbol);
			strbuf_adds(out, ">");
		}
		if (p->nprocs > 1)
			strbuf_addf(out, " in %d", (int)l->pid);
		strbuf_addf(out,
			    ": waiters avg %.2f, max %" PRIu64 " per sample; contended in %" PRIu64
			    " of %" PRIu64 " samples (%.0f%%)\n",
			    n ? (double)l->waiters / (double)n : 0.0, l->max_waiters, l->contended, n,
			    pct((double)l->contended, (double)n));
		sd_sort(l->holders, l->nholders, sizeof(*l->holders), cmp_holder);
		strbuf_adds(out, "  holder while others waited:\n");
		for (size_t k = 0; k < l->nholders; k++) {
			const struct sd_pholder *h = &l->holders[k];
			strbuf_addf(out, "  %6" PRIu64 " %5.1f%%  ", h->count,
				    pct((double)h->count, (double)l->contended));
			strbuf_add_escaped(out, h->name);
			if (h->stack >= 0) {
				strbuf_adds(out, ": ");
				add_stack_line(out, &p->stacks[h->stack], 10);
			}
			strbuf_adds(out, "\n");
		}
	}
}

/* ---- JSON ---- */

static void json_pframe(struct jsonw *w, const struct sd_pframe *f)
{
	jsonw_object_begin(w);
	jsonw_kstr(w, "function", f->function);
	jsonw_kstr(w, "name", f->name);
	jsonw_kstr(w, "module", f->module);
	jsonw_kstr(w, "build_id", f->build_id);
	jsonw_khex(w, "offset", f->offset);
	jsonw_khex(w, "addr", f->pc);
	jsonw_kstr(w, "file", f->file);
	if (f->line)
		jsonw_kint(w, "line", f->line);
	else
		jsonw_knull(w, "line");
	jsonw_kbool(w, "inlined", f->flags & SD_FRAME_INLINED);
	jsonw_object_end(w);
}

/* {"state": count...}: one member per state name (two buckets of the same
 * name, which interning should prevent, count as one: the last). */
static void json_states(struct jsonw *w, const struct sd_pstack *st)
{
	jsonw_object_begin(w);
	for (int k = 0; k < SD_PSTACK_STATES && st->states[k].what; k++) {
		int seen = 0;
		for (int j = 0; j < k; j++)
			seen |= !strcmp(st->states[j].what, st->states[k].what);
		if (seen)
			continue;
		uint64_t count = st->states[k].count;
		for (int j = k + 1; j < SD_PSTACK_STATES && st->states[j].what; j++)
			if (!strcmp(st->states[j].what, st->states[k].what))
				count = st->states[j].count;
		jsonw_ku64(w, st->states[k].what, count);
	}
	jsonw_object_end(w);
}

static void json_lock(struct jsonw *w, struct sd_profile *p, const struct sd_plock *l)
{
	uint64_t n = proc_samples(p, l->pid);
	jsonw_object_begin(w);
	jsonw_kint(w, "pid", l->pid);
	jsonw_khex(w, "address", l->address);
	jsonw_kstr(w, "kind", sd_wait_kind_name(l->kind));
	jsonw_kstr(w, "symbol", l->symbol);
	jsonw_ku64(w, "samples", n);
	jsonw_ku64(w, "contended", l->contended);
	jsonw_kdouble(w, "avg_waiters", n ? (double)l->waiters / (double)n : 0.0);
	jsonw_ku64(w, "max_waiters", l->max_waiters);
	jsonw_karray(w, "holders");
	for (size_t k = 0; k < l->nholders; k++) {
		const struct sd_pholder *h = &l->holders[k];
		jsonw_object_begin(w);
		jsonw_ku64(w, "count", h->count);
		jsonw_kstr(w, "holder", h->name);
		if (h->stack >= 0) {
			const struct sd_pstack *st = &p->stacks[h->stack];
			jsonw_karray(w, "stack");
			for (size_t f = 0; f < st->nframes; f++)
				jsonw_str(w, st->frames[f].name);
			jsonw_array_end(w);
		} else {
			jsonw_knull(w, "stack");
		}
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	jsonw_object_end(w);
}

void format_profile_json(struct jsonw *w, struct sd_profile *p, const struct sd_prender *o)
{
	profile_sort(p);
	uint64_t total = profile_total(p);
	jsonw_object_begin(w);
	jsonw_kint(w, "version", 1);
	jsonw_kstr(w, "kind", "stackdump-profile");
	jsonw_kbool(w, "by_address", p->opts.by_address);
	jsonw_kbool(w, "group_threads", p->opts.group_threads);
	jsonw_kbool(w, "no_idle", p->opts.no_idle);
	jsonw_kstr(w, "cpu", p->opts.cpu == SD_CPU_ON    ? "on"
			  : p->opts.cpu == SD_CPU_OFF ? "off"
						      : "all");
	jsonw_karray(w, "processes");
	for (size_t i = 0; i < p->nprocs; i++) {
		jsonw_object_begin(w);
		jsonw_kint(w, "pid", p->procs[i].pid);
		jsonw_kstr(w, "comm", p->procs[i].comm);
		jsonw_ku64(w, "samples", p->procs[i].samples);
		jsonw_kbool(w, "exited", p->procs[i].exited);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	jsonw_kdouble(w, "start_time", p->start_time);
	jsonw_ku64(w, "samples", p->samples);
	jsonw_ku64(w, "duration_us", p->duration_us);
	jsonw_ku64(w, "interval_us", p->interval_us);
	jsonw_kdouble(w, "rate_hz", profile_rate_achieved(p));
	/* The rate asked beside the rate got: they differ when sampling was
	 * slowed (the CPU budget) or fell behind. */
	jsonw_kdouble(w, "rate_asked", p->rate_asked > 0 ? p->rate_asked
							 : p->interval_us ? 1e6 / (double)p->interval_us
									  : 0.0);
	jsonw_kdouble(w, "rate_achieved", profile_rate_achieved(p));
	jsonw_kdouble(w, "duration_s", (double)p->duration_us / 1e6);
	if (p->rate_note)
		jsonw_kstr(w, "rate_note", p->rate_note);
	jsonw_ku64(w, "thread_samples", total);
	jsonw_ku64(w, "on_cpu", p->on_cpu);
	jsonw_ku64(w, "off_cpu", total - p->on_cpu);
	jsonw_ku64(w, "filtered", p->filtered);
	jsonw_ku64(w, "idle", p->idle);
	jsonw_ku64(w, "lost", p->lost);
	jsonw_ku64(w, "io_worker_samples", p->io_workers);
	jsonw_kstr(w, "engine", p->engine);
	jsonw_ku64(w, "lost_samples", p->lost_samples);
	jsonw_ku64(w, "stale_stacks", p->stale_stacks);
	jsonw_ku64(w, "throttled", p->throttled);
	jsonw_karray(w, "stacks");
	for (size_t i = 0; i < p->nstacks; i++) {
		struct sd_pstack *st = &p->stacks[i];
		if (!st->count)
			continue;
		jsonw_object_begin(w);
		jsonw_ku64(w, "count", st->count);
		jsonw_kdouble(w, "percent", pct((double)st->count, (double)total));
		jsonw_ku64(w, "on_cpu", st->on_cpu);
		jsonw_ku64(w, "off_cpu", st->count - st->on_cpu);
		jsonw_key(w, "states");
		json_states(w, st);
		jsonw_karray(w, "threads");
		sd_sort(st->threads, st->nthreads, sizeof(*st->threads), cmp_pthread);
		for (size_t k = 0; k < st->nthreads; k++) {
			const struct sd_pthread *t = &st->threads[k];
			jsonw_object_begin(w);
			jsonw_kint(w, "pid", t->pid);
			if (t->tid)
				jsonw_kint(w, "tid", t->tid);
			else
				jsonw_knull(w, "tid");
			jsonw_kstr(w, "name", t->name ? t->name : "");
			jsonw_ku64(w, "threads", t->ntids);
			jsonw_ku64(w, "count", t->count);
			jsonw_ku64(w, "on_cpu", t->on_cpu);
			jsonw_object_end(w);
		}
		jsonw_array_end(w);
		jsonw_karray(w, "frames");
		for (size_t k = 0; k < st->nframes; k++)
			json_pframe(w, &st->frames[k]);
		jsonw_array_end(w);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	if (p->opts.locks) {
		jsonw_karray(w, "locks");
		sd_sort(p->locks, p->nlocks, sizeof(*p->locks), cmp_lock);
		for (size_t i = 0; i < p->nlocks; i++)
			json_lock(w, p, &p->locks[i]);
		jsonw_array_end(w);
	}
	if (o && o->tokio) {
		jsonw_karray(w, "long_polls");
		for (size_t i = 0; i < o->nlong_polls; i++)
			longpoll_json(w, &o->long_polls[i]);
		jsonw_array_end(w);
	}
	jsonw_object_end(w);
}

/* ---- diff ---- */

struct dline {
	const struct sd_pstack *st;
	double d;
	int noise; /* within the sampling noise of the counts */
};

/* Is a share going from A to B (both scaled to B's total TB; A had TA
 * samples in all) within sampling noise? The two shares are binomial
 * proportions: the change is noise when it is under 1.96 standard errors
 * of their difference (a 95% interval). */
static int within_noise(double a, double b, double ta, double tb)
{
	if (ta <= 0 || tb <= 0)
		return 0;
	double pa = a / tb, pb = b / tb;
	double se = sqrt(pa * (1 - pa) / ta + pb * (1 - pb) / tb);
	return se > 0 && fabs(pb - pa) < 1.96 * se;
}

static int cmp_dline(const void *a, const void *b)
{
	const struct dline *x = a, *y = b;
	if (x->noise != y->noise)
		return x->noise - y->noise;
	if (fabs(x->d) != fabs(y->d))
		return fabs(x->d) < fabs(y->d) ? 1 : -1;
	return (x->st->key_hash > y->st->key_hash) - (x->st->key_hash < y->st->key_hash);
}

struct fdelta {
	const char *name;
	double b, a;
	int noise;
};

static int cmp_fdelta(const void *x, const void *y)
{
	const struct fdelta *a = x, *b = y;
	if (a->noise != b->noise)
		return a->noise - b->noise;
	double da = fabs(a->b - a->a), db = fabs(b->b - b->a);
	if (da != db)
		return da < db ? 1 : -1;
	return strcmp(a->name, b->name);
}

void format_diff_text(struct strbuf *out, struct sd_profile *d, const struct sd_prender *o)
{
	double tb = (double)profile_total(d);
	double ta = (double)d->total_a;
	int limit = o && o->limit > 0 ? o->limit : 0;
	strbuf_addf(out, "A: %.0f samples, B: %.0f samples", ta, tb);
	if (ta && tb && ta != tb)
		strbuf_addf(out, " (A scaled by %.3g to compare shares)", tb / ta);
	strbuf_adds(out, "\nchanges in points of the total: B% - A%\n");
	struct dline *v = sd_xmalloc((d->nstacks ? d->nstacks : 1) * sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; i < d->nstacks; i++) {
		const struct sd_pstack *st = &d->stacks[i];
		double delta = (double)st->count - st->value_a;
		if (fabs(delta) < 1e-9)
			continue;
		v[n].st = st;
		v[n].d = delta;
		v[n].noise = within_noise(st->value_a, (double)st->count, ta, tb);
		n++;
	}
	sd_sort(v, n, sizeof(*v), cmp_dline);
	/* What the counts show, then what they cannot tell from chance. */
	for (int pass = 0; pass < 3; pass++) {
		size_t nnoise = 0;
		for (size_t i = 0; i < n; i++)
			nnoise += v[i].noise;
		if (pass == 2 && !nnoise)
			break;
		if (pass == 2)
			strbuf_addf(out, "\nWithin sampling noise (a 95%% interval of the counts): %zu "
					 "stack%s\n",
				    nnoise, nnoise == 1 ? "" : "s");
		else
			strbuf_adds(out, pass == 0 ? "\nStacks that grew:\n" : "\nStacks that shrank:\n");
		int shown = 0;
		for (size_t i = 0; i < n; i++) {
			if (pass < 2 && ((pass == 0) != (v[i].d > 0) || v[i].noise))
				continue;
			if (pass == 2 && !v[i].noise)
				continue;
			if (limit && shown >= limit) {
				strbuf_adds(out, "  ...\n");
				break;
			}
			const struct sd_pstack *st = v[i].st;
			strbuf_addf(out, "  %+6.1f  %5.1f%% -> %5.1f%%%s  ", pct(v[i].d, tb),
				    pct(st->value_a, tb), pct((double)st->count, tb),
				    !st->value_a ? " (new) " : !st->count ? " (gone)" : "       ");
			add_stack_line(out, st, 12);
			strbuf_adds(out, "\n");
			shown++;
		}
		if (!shown)
			strbuf_adds(out, "  (none)\n");
	}
	free(v);
	/* Self time by function: which leaves moved. */
	struct fdelta *fd = NULL;
	size_t nf = 0, cap = 0;
	for (size_t i = 0; i < d->nstacks; i++) {
		const struct sd_pstack *st = &d->stacks[i];
		const char *leaf = st->nframes ? st->frames[0].name : "[no frames]";
		size_t k = 0;
		while (k < nf && strcmp(fd[k].name, leaf))
			k++;
		if (k == nf) {
			sd_grow(&fd, &cap, nf + 1, sizeof(*fd));
			fd[nf].name = leaf;
			fd[nf].a = fd[nf].b = 0;
			nf++;
		}
		fd[k].b += (double)st->count;
		fd[k].a += st->value_a;
	}
	for (size_t i = 0; i < nf; i++)
		fd[i].noise = within_noise(fd[i].a, fd[i].b, ta, tb);
	sd_sort(fd, nf, sizeof(*fd), cmp_fdelta);
	strbuf_adds(out, "\nSelf time by function:\n");
	int shown = 0;
	for (size_t i = 0; i < nf; i++) {
		if (fabs(fd[i].b - fd[i].a) < 1e-9)
			continue;
		if (limit && shown >= limit)
			break;
		strbuf_addf(out, "  %+6.1f  %5.1f%% -> %5.1f%%  ", pct(fd[i].b - fd[i].a, tb),
			    pct(fd[i].a, tb), pct(fd[i].b, tb));
		strbuf_add_escaped(out, fd[i].name);
		if (fd[i].noise)
			strbuf_adds(out, "  (within noise)");
		strbuf_adds(out, "\n");
		shown++;
	}
	if (!shown)
		strbuf_adds(out, "  (no change)\n");
	free(fd);
}

double profile_rate_achieved(const struct sd_profile *p)
{
	return p->duration_us ? (double)p->samples * 1e6 / (double)p->duration_us : 0.0;
}

void format_profile_rate(struct strbuf *out, const struct sd_profile *p)
{
	double got = profile_rate_achieved(p), asked = p->rate_asked;
	strbuf_addf(out, "%" PRIu64 " samples in %.2f s (%.1f Hz", p->samples,
		    (double)p->duration_us / 1e6, got);
	/* Within 2% is the rate asked (the first tick comes an interval in). */
	if (asked > 0 && (got < asked * 0.98 || got > asked * 1.02)) {
		strbuf_addf(out, " of %.1f Hz asked", asked);
		if (p->rate_note)
			strbuf_addf(out, ": %s", p->rate_note);
	}
	strbuf_adds(out, ")");
}
