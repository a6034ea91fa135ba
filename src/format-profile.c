// SPDX-License-Identifier: MIT
// Text and JSON renderings of profiles: the pt-pmp like top view, the call
// tree, the per-lock report of profile --locks, the JSON document (read back
// by diff) and the text of a diff.
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "profile.h"

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
	double secs = (double)p->duration_us / 1e6;
	if (p->samples)
		strbuf_addf(out, ": %" PRIu64 " samples in %.2f s (%.1f Hz)", p->samples, secs,
			    secs > 0 ? (double)p->samples / secs : 0.0);
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
	if (p->lost_samples)
		strbuf_addf(out, "; %" PRIu64 " samples lost by the kernel (ring buffer full)",
			    p->lost_samples);
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

static json_t *json_pframe(const struct sd_pframe *f)
{
	json_t *o = json_object();
	json_object_set_new(o, "function", format_json_str(f->function));
	json_object_set_new(o, "name", json_string(f->name));
	json_object_set_new(o, "module", format_json_str(f->module));
	json_object_set_new(o, "build_id", format_json_str(f->build_id));
	json_object_set_new(o, "offset", format_json_hex(f->offset));
	json_object_set_new(o, "addr", format_json_hex(f->pc));
	json_object_set_new(o, "file", format_json_str(f->file));
	json_object_set_new(o, "line", f->line ? json_integer(f->line) : json_null());
	json_object_set_new(o, "inlined", json_boolean(f->flags & SD_FRAME_INLINED));
	return o;
}

json_t *format_profile_json(struct sd_profile *p)
{
	profile_sort(p);
	uint64_t total = profile_total(p);
	json_t *doc = json_object();
	json_object_set_new(doc, "version", json_integer(1));
	json_object_set_new(doc, "kind", json_string("stackdump-profile"));
	json_object_set_new(doc, "by_address", json_boolean(p->opts.by_address));
	json_object_set_new(doc, "group_threads", json_boolean(p->opts.group_threads));
	json_object_set_new(doc, "no_idle", json_boolean(p->opts.no_idle));
	json_object_set_new(doc, "cpu",
			    json_string(p->opts.cpu == SD_CPU_ON    ? "on"
					: p->opts.cpu == SD_CPU_OFF ? "off"
								    : "all"));
	json_t *procs = json_array();
	for (size_t i = 0; i < p->nprocs; i++) {
		json_t *pr = json_object();
		json_object_set_new(pr, "pid", json_integer(p->procs[i].pid));
		json_object_set_new(pr, "comm", json_string(p->procs[i].comm));
		json_object_set_new(pr, "samples", json_integer((json_int_t)p->procs[i].samples));
		json_object_set_new(pr, "exited", json_boolean(p->procs[i].exited));
		json_array_append_new(procs, pr);
	}
	json_object_set_new(doc, "processes", procs);
	json_object_set_new(doc, "start_time", json_real(p->start_time));
	json_object_set_new(doc, "samples", json_integer((json_int_t)p->samples));
	json_object_set_new(doc, "duration_us", json_integer((json_int_t)p->duration_us));
	json_object_set_new(doc, "interval_us", json_integer((json_int_t)p->interval_us));
	json_object_set_new(doc, "rate_hz",
			    json_real(p->duration_us ? (double)p->samples * 1e6 / (double)p->duration_us
						     : 0.0));
	json_object_set_new(doc, "thread_samples", json_integer((json_int_t)total));
	json_object_set_new(doc, "on_cpu", json_integer((json_int_t)p->on_cpu));
	json_object_set_new(doc, "off_cpu", json_integer((json_int_t)(total - p->on_cpu)));
	json_object_set_new(doc, "filtered", json_integer((json_int_t)p->filtered));
	json_object_set_new(doc, "idle", json_integer((json_int_t)p->idle));
	json_object_set_new(doc, "lost", json_integer((json_int_t)p->lost));
	json_object_set_new(doc, "engine", p->engine ? json_string(p->engine) : json_null());
	json_object_set_new(doc, "lost_samples", json_integer((json_int_t)p->lost_samples));
	json_object_set_new(doc, "throttled", json_integer((json_int_t)p->throttled));
	json_t *stacks = json_array();
	for (size_t i = 0; i < p->nstacks; i++) {
		struct sd_pstack *st = &p->stacks[i];
		if (!st->count)
			continue;
		json_t *js = json_object();
		json_object_set_new(js, "count", json_integer((json_int_t)st->count));
		json_object_set_new(js, "percent", json_real(pct((double)st->count, (double)total)));
		json_object_set_new(js, "on_cpu", json_integer((json_int_t)st->on_cpu));
		json_object_set_new(js, "off_cpu", json_integer((json_int_t)(st->count - st->on_cpu)));
		json_t *states = json_object();
		for (int k = 0; k < SD_PSTACK_STATES && st->states[k].what; k++)
			json_object_set_new(states, st->states[k].what,
					    json_integer((json_int_t)st->states[k].count));
		json_object_set_new(js, "states", states);
		json_t *th = json_array();
		sd_sort(st->threads, st->nthreads, sizeof(*st->threads), cmp_pthread);
		for (size_t k = 0; k < st->nthreads; k++) {
			const struct sd_pthread *t = &st->threads[k];
			json_t *jt = json_object();
			json_object_set_new(jt, "pid", json_integer(t->pid));
			json_object_set_new(jt, "tid", t->tid ? json_integer(t->tid) : json_null());
			json_object_set_new(jt, "name", json_string(t->name ? t->name : ""));
			json_object_set_new(jt, "threads", json_integer((json_int_t)t->ntids));
			json_object_set_new(jt, "count", json_integer((json_int_t)t->count));
			json_object_set_new(jt, "on_cpu", json_integer((json_int_t)t->on_cpu));
			json_array_append_new(th, jt);
		}
		json_object_set_new(js, "threads", th);
		json_t *fr = json_array();
		for (size_t k = 0; k < st->nframes; k++)
			json_array_append_new(fr, json_pframe(&st->frames[k]));
		json_object_set_new(js, "frames", fr);
		json_array_append_new(stacks, js);
	}
	json_object_set_new(doc, "stacks", stacks);
	if (p->opts.locks) {
		json_t *locks = json_array();
		sd_sort(p->locks, p->nlocks, sizeof(*p->locks), cmp_lock);
		for (size_t i = 0; i < p->nlocks; i++) {
			const struct sd_plock *l = &p->locks[i];
			uint64_t n = proc_samples(p, l->pid);
			json_t *jl = json_object();
			json_object_set_new(jl, "pid", json_integer(l->pid));
			json_object_set_new(jl, "address", format_json_hex(l->address));
			json_object_set_new(jl, "kind", json_string(sd_wait_kind_name(l->kind)));
			json_object_set_new(jl, "symbol", format_json_str(l->symbol));
			json_object_set_new(jl, "samples", json_integer((json_int_t)n));
			json_object_set_new(jl, "contended", json_integer((json_int_t)l->contended));
			json_object_set_new(jl, "avg_waiters",
					    json_real(n ? (double)l->waiters / (double)n : 0.0));
			json_object_set_new(jl, "max_waiters", json_integer((json_int_t)l->max_waiters));
			json_t *hs = json_array();
			for (size_t k = 0; k < l->nholders; k++) {
				const struct sd_pholder *h = &l->holders[k];
				json_t *jh = json_object();
				json_object_set_new(jh, "count", json_integer((json_int_t)h->count));
				json_object_set_new(jh, "holder", json_string(h->name));
				json_t *fr = json_array();
				if (h->stack >= 0) {
					const struct sd_pstack *st = &p->stacks[h->stack];
					for (size_t f = 0; f < st->nframes; f++)
						json_array_append_new(fr, json_string(st->frames[f].name));
				}
				json_object_set_new(jh, "stack", h->stack >= 0 ? fr : json_null());
				if (h->stack < 0)
					json_decref(fr);
				json_array_append_new(hs, jh);
			}
			json_object_set_new(jl, "holders", hs);
			json_array_append_new(locks, jl);
		}
		json_object_set_new(doc, "locks", locks);
	}
	return doc;
}

/* ---- diff ---- */

struct dline {
	const struct sd_pstack *st;
	double d;
};

static int cmp_dline(const void *a, const void *b)
{
	const struct dline *x = a, *y = b;
	if (fabs(x->d) != fabs(y->d))
		return fabs(x->d) < fabs(y->d) ? 1 : -1;
	return (x->st->key_hash > y->st->key_hash) - (x->st->key_hash < y->st->key_hash);
}

struct fdelta {
	const char *name;
	double b, a;
};

static int cmp_fdelta(const void *x, const void *y)
{
	const struct fdelta *a = x, *b = y;
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
		n++;
	}
	sd_sort(v, n, sizeof(*v), cmp_dline);
	for (int pass = 0; pass < 2; pass++) {
		strbuf_adds(out, pass == 0 ? "\nStacks that grew:\n" : "\nStacks that shrank:\n");
		int shown = 0;
		for (size_t i = 0; i < n; i++) {
			if ((pass == 0) != (v[i].d > 0))
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
		strbuf_adds(out, "\n");
		shown++;
	}
	if (!shown)
		strbuf_adds(out, "  (no change)\n");
	free(fd);
}
