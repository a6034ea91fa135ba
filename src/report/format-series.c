// SPDX-License-Identifier: MIT
// Renderers of a series of snapshots (series.c) into buffers: the text
// report's sections (summary, profile, timeline, locks, stuck threads) and
// the JSON report; the findings and the SVG timeline render themselves
// (findings.c, timeline.c).
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format.h"
#include "locks.h"
#include "series.h"
#include "timeline.h"

static void frame_label(struct strbuf *sb, const struct sd_frame *f)
{
	if (f->function)
		strbuf_add_escaped(sb, f->function);
	else if (f->module)
		strbuf_addf(sb, "%s+0x%" PRIx64, f->module, f->offset);
	else
		strbuf_addf(sb, "0x%" PRIx64, f->pc);
}

static void fmt_time(char *buf, size_t n, double t)
{
	time_t sec = (time_t)t;
	struct tm tm;
	gmtime_r(&sec, &tm);
	strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
	size_t l = strlen(buf);
	snprintf(buf + l, n - l, ".%03d UTC", (int)((t - (double)sec) * 1000));
}

void format_series_summary(const struct sd_series *r, struct strbuf *sb)
{
	char t0[64], t1[64];
	fmt_time(t0, sizeof(t0), r->v[0].s->time);
	fmt_time(t1, sizeof(t1), r->v[r->n - 1].s->time);
	strbuf_addf(sb, "Recording: %zu snapshot%s from %s to %s (%.1fs)\n", r->n,
		    r->n == 1 ? "" : "s", t0, t1, r->v[r->n - 1].s->time - r->v[0].s->time);
	pid_t last = 0;
	for (size_t k = 0; k < r->n; k++) {
		const struct sd_snapshot *s = r->v[k].s;
		if (s->pid == last)
			continue;
		last = s->pid;
		strbuf_addf(sb, "  process %d \"", (int)s->pid);
		strbuf_add_escaped(sb, s->comm ? s->comm : "");
		strbuf_adds(sb, "\"");
		if (r->v[k].m.hostname) {
			strbuf_adds(sb, " on ");
			strbuf_add_escaped(sb, r->v[k].m.hostname);
		}
		strbuf_addf(sb, " from snapshot %zu\n", k + 1);
	}
	/* Why the snapshots were taken, counted. */
	for (size_t k = 0; k < r->n; k++) {
		const char *why = r->v[k].m.reason ? r->v[k].m.reason : "(no reason recorded)";
		int seen = 0;
		for (size_t j = 0; j < k && !seen; j++)
			seen = r->v[j].m.reason && !strcmp(r->v[j].m.reason, why);
		if (seen)
			continue;
		size_t c = 0;
		for (size_t j = k; j < r->n; j++)
			c += r->v[j].m.reason ? !strcmp(r->v[j].m.reason, why) : !r->v[k].m.reason;
		strbuf_addf(sb, "  %4zu x ", c);
		strbuf_add_escaped(sb, why);
		strbuf_adds(sb, "\n");
	}
	strbuf_adds(sb, "\n");
}

void format_series_profile(const struct sd_series *r, struct strbuf *sb, const char *view,
			   const struct sd_prender *ro)
{
	struct sd_profile *p = r->prof;
	strbuf_addf(sb, "Profile: %llu thread stacks in %zu snapshots, %zu distinct",
		    (unsigned long long)profile_total(p), r->n, p->nstacks);
	if (p->filtered)
		strbuf_addf(sb, " (%llu filtered out)", (unsigned long long)p->filtered);
	if (p->lost)
		strbuf_addf(sb, " (%llu threads without a stack)", (unsigned long long)p->lost);
	if (p->io_workers)
		strbuf_addf(sb, " (%llu samples of io_uring workers: kernel threads, no user stack)",
			    (unsigned long long)p->io_workers);
	strbuf_adds(sb, "\n\n");
	if (!strcmp(view, "tree"))
		format_profile_tree(sb, p, ro);
	else if (!strcmp(view, "locks"))
		format_profile_locks(sb, p, ro);
	else
		format_profile_top(sb, p, ro);
	strbuf_adds(sb, "\n");
}

/* Threads that did the same all along fold from this many. */
#define FOLD_FROM 4

/* Threads of R alike thread I (the same state and stack in every
 * snapshot) and not DONE, I first: their indices in a heap array *OUT,
 * each marked DONE; returns how many. */
static size_t alike_threads(const struct sd_series *r, size_t i, char *done, size_t **out)
{
	size_t n = 0;
	size_t *v = sd_xcalloc(r->nth + 1, sizeof(*v));
	const struct sd_series_thread *a = &r->th[i];
	for (size_t j = i; j < r->nth; j++) {
		const struct sd_series_thread *b = &r->th[j];
		if (done[j] || a->pid != b->pid || memcmp(a->states, b->states, r->n) ||
		    memcmp(a->hash, b->hash, r->n * sizeof(*a->hash)))
			continue;
		done[j] = 1;
		v[n++] = j;
	}
	*out = v;
	return n;
}

/* "\"http-worker-0..49\", TIDs 4244..4293" for the threads GRP[0..N) of R. */
static void group_label(struct strbuf *out, const struct sd_series *r, const size_t *grp, size_t n)
{
	const char **names = sd_xcalloc(n, sizeof(*names));
	pid_t *tids = sd_xcalloc(n, sizeof(*tids));
	for (size_t k = 0; k < n; k++) {
		names[k] = r->th[grp[k]].name;
		tids[k] = r->th[grp[k]].tid;
	}
	format_names_ranges(out, names, tids, n, 40);
	free(names);
	free(tids);
}

void format_series_timeline(const struct sd_series *r, struct strbuf *sb)
{
	strbuf_addf(sb, "Timeline of thread states (one column per snapshot):\n");
	strbuf_adds(sb, "  R running  r runnable  S in a syscall  L waiting for a lock  C condvar"
			"  D disk  T stopped  Z zombie  x unreadable  . absent\n");
	const size_t width = 60;
	for (size_t c0 = 0; c0 < r->n; c0 += width) {
		size_t c1 = c0 + width < r->n ? c0 + width : r->n;
		strbuf_addf(sb, "\n  %-8s %-16s ", "TID", "NAME");
		for (size_t k = c0; k < c1; k++)
			strbuf_addf(sb, "%zu", (k + 1) % 10);
		char a[32], b[32];
		findings_clock(a, sizeof(a), r->v[c0].s->time);
		findings_clock(b, sizeof(b), r->v[c1 - 1].s->time);
		strbuf_addf(sb, "   (snapshots %zu-%zu, %s-%s UTC)\n", c0 + 1, c1, a, b);
		char *done = sd_xcalloc(r->nth + 1, 1);
		for (size_t i = 0; i < r->nth; i++) {
			const struct sd_series_thread *t = &r->th[i];
			if (done[i])
				continue;
			size_t *grp = NULL, ng = alike_threads(r, i, done, &grp);
			struct strbuf nm;
			strbuf_init(&nm);
			if (ng >= FOLD_FROM) {
				/* A pool that did the same all along: one row. */
				group_label(&nm, r, grp, ng);
				strbuf_addf(sb, "  %-8d %-16s ", (int)t->tid, nm.buf);
			} else {
				strbuf_add_escaped(&nm, t->name ? t->name : "");
				strbuf_addf(sb, "  %-8d %-16.16s ", (int)t->tid, nm.buf);
				for (size_t k = 1; k < ng; k++)
					done[grp[k]] = 0;
			}
			strbuf_release(&nm);
			strbuf_add(sb, t->states + c0, c1 - c0);
			if (ng >= FOLD_FROM)
				strbuf_addf(sb, "  (%zu threads alike)", ng);
			strbuf_adds(sb, "\n");
			free(grp);
		}
		free(done);
	}
	strbuf_adds(sb, "\n");
}

void format_series_locks(const struct sd_series *r, struct strbuf *sb)
{
	struct sd_series_lock *v;
	size_t n = series_locks(r, &v);
	strbuf_addf(sb, "Locks over time: %zu lock%s waited for\n", n, n == 1 ? "" : "s");
	for (size_t i = 0; i < n; i++) {
		const struct sd_series_lock *l = &v[i];
		size_t in = 0, maxw = 0, sumw = 0;
		for (size_t k = 0; k < r->n; k++) {
			in += l->waiters[k] > 0;
			sumw += l->waiters[k];
			if (l->waiters[k] > maxw)
				maxw = l->waiters[k];
		}
		strbuf_addf(sb, "\n  %s 0x%" PRIx64, sd_wait_kind_name(l->kind), l->addr);
		if (l->symbol) {
			strbuf_adds(sb, " <");
			strbuf_add_escaped(sb, l->symbol);
			strbuf_adds(sb, ">");
		}
		strbuf_addf(sb,
			    ": waited for in %zu of %zu snapshots, at most %zu waiters (%.1f on "
			    "average when waited for)\n",
			    in, r->n, maxw, in ? (double)sumw / (double)in : 0.0);
		strbuf_adds(sb, "    waiters: ");
		for (size_t k = 0; k < r->n; k++)
			strbuf_addf(sb, "%s%zu", k ? " " : "", l->waiters[k]);
		strbuf_adds(sb, "\n    holder:  ");
		pid_t prev = -1;
		for (size_t k = 0; k < r->n; k++) {
			if (l->holder[k] == prev)
				continue;
			prev = l->holder[k];
			if (k)
				strbuf_adds(sb, ", ");
			if (l->holder[k]) {
				const char *nm = series_thread_name(r, l->holder[k]);
				strbuf_addf(sb, "%d \"", (int)l->holder[k]);
				strbuf_add_escaped(sb, nm ? nm : "");
				strbuf_adds(sb, "\"");
			} else {
				strbuf_adds(sb, "unknown");
			}
			char clk[32];
			findings_clock(clk, sizeof(clk), r->v[k].s->time);
			strbuf_addf(sb, " from %s (snapshot %zu)", clk, k + 1);
		}
		strbuf_adds(sb, "\n");
	}
	/* Each deadlock once, over the snapshots it was seen in. */
	for (size_t i = 0; i < r->fnd.n; i++) {
		const struct sd_finding *x = &r->fnd.v[i];
		if (x->kind != SD_FINDING_DEADLOCK)
			continue;
		strbuf_adds(sb, "\n  ");
		strbuf_adds(sb, x->title);
		strbuf_adds(sb, ", ");
		findings_span(sb, x);
		strbuf_adds(sb, "\n");
		for (const char *p = x->detail; p && *p;) {
			size_t l = strcspn(p, "\n");
			strbuf_adds(sb, "    ");
			strbuf_add(sb, p, l);
			strbuf_adds(sb, "\n");
			p += l + (p[l] == '\n');
		}
	}
	series_locks_free(v, n);
	strbuf_adds(sb, "\n");
}

void format_series_stuck(const struct sd_series *r, struct strbuf *sb)
{
	if (r->n < 2) {
		strbuf_adds(sb, "Threads stuck: needs two snapshots or more\n");
		return;
	}
	const struct sd_series_thread **rows;
	size_t cnt = series_stuck(r, &rows);
	strbuf_addf(sb,
		    "Threads with the same stack until the last snapshot (of %zu): %zu (lock waits "
		    "first)\n",
		    r->n, cnt);
	char *done = sd_xcalloc(cnt + 1, 1);
	for (size_t i = 0; i < cnt; i++) {
		const struct sd_series_thread *t = rows[i];
		const struct sd_thread *th = series_thread_in(r, r->n - 1, t);
		if (!th || done[i])
			continue;
		/* Threads stuck alike (same states, same stacks) are one
		 * entry with their names as ranges: the stack once. */
		size_t ng = 0;
		const char **names = sd_xcalloc(cnt, sizeof(*names));
		pid_t *tids = sd_xcalloc(cnt, sizeof(*tids));
		for (size_t j = i; j < cnt; j++)
			if (!done[j] && rows[j]->pid == t->pid &&
			    !memcmp(rows[j]->states, t->states, r->n) &&
			    !memcmp(rows[j]->hash, t->hash, r->n * sizeof(*t->hash))) {
				names[ng] = rows[j]->name;
				tids[ng++] = rows[j]->tid;
			}
		struct sd_render_opts ro = {0};
		ro.no_source = 1;
		strbuf_adds(sb, "\n  ");
		if (ng >= FOLD_FROM) {
			for (size_t j = i; j < cnt; j++)
				if (rows[j]->pid == t->pid && !memcmp(rows[j]->states, t->states, r->n) &&
				    !memcmp(rows[j]->hash, t->hash, r->n * sizeof(*t->hash)))
					done[j] = 1;
			struct strbuf h;
			strbuf_init(&h);
			format_text_thread_header(&h, r->v[r->n - 1].s, th, &ro);
			/* The header without its 'Thread TID "name"'. */
			const char *rest = strchr(h.buf, '"');
			rest = rest ? strchr(rest + 1, '"') : NULL;
			strbuf_addf(sb, "%zu threads ", ng);
			format_names_ranges(sb, names, tids, ng, 40);
			strbuf_adds(sb, rest ? rest + 1 : "");
			strbuf_release(&h);
		} else {
			format_text_thread_header(sb, r->v[r->n - 1].s, th, &ro);
		}
		free(names);
		free(tids);
		char c = t->states[r->n - 1];
		size_t since = series_stuck_since(r, t);
		char clk[32];
		findings_clock(clk, sizeof(clk), r->v[since].s->time);
		/* A sleeper others wait for is the culprit, not idle. */
		const char *idle = c != 'S' && c != 'C' ? ""
				   : th->nholds		  ? ", holds what others wait for"
							  : ", idle?";
		if (since == 0)
			strbuf_addf(sb, "  [%s in every snapshot%s]\n", timeline_state_name(c), idle);
		else
			strbuf_addf(sb, "  [%s since %s UTC, snapshots %zu-%zu%s]\n",
				    timeline_state_name(c), clk, since + 1, r->n, idle);
		for (size_t f = 0; f < th->nframes; f++) {
			strbuf_adds(sb, "      ");
			frame_label(sb, &th->frames[f]);
			strbuf_adds(sb, "\n");
		}
	}
	free(done);
	free(rows);
	strbuf_adds(sb, "\n");
}

void format_series_json(struct jsonw *w, const struct sd_series *r, unsigned sections)
{
	jsonw_object_begin(w);
	jsonw_karray(w, "snapshots");
	for (size_t k = 0; k < r->n; k++) {
		const struct sd_series_snap *x = &r->v[k];
		jsonw_object_begin(w);
		jsonw_kstr(w, "file", x->path);
		jsonw_kdouble(w, "time", x->s->time);
		jsonw_kint(w, "pid", x->s->pid);
		jsonw_ku64(w, "threads", x->s->nthreads);
		jsonw_kstr(w, "reason", x->m.reason);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	if (sections & SD_SERIES_FINDINGS) {
		jsonw_key(w, "findings");
		findings_json(w, &r->fnd);
	}
	if (sections & SD_SERIES_PROFILE) {
		jsonw_key(w, "profile");
		format_profile_json(w, r->prof, NULL);
	}
	if (sections & SD_SERIES_TIMELINE) {
		jsonw_karray(w, "timeline");
		for (size_t i = 0; i < r->nth; i++) {
			const struct sd_series_thread *t = &r->th[i];
			jsonw_object_begin(w);
			jsonw_kint(w, "pid", t->pid);
			jsonw_kint(w, "tid", t->tid);
			jsonw_kstr(w, "name", t->name);
			jsonw_karray(w, "states");
			for (size_t k = 0; k < r->n; k++)
				jsonw_str(w, timeline_state_name(t->states[k]));
			jsonw_array_end(w);
			jsonw_object_end(w);
		}
		jsonw_array_end(w);
	}
	if (sections & SD_SERIES_LOCKS) {
		struct sd_series_lock *v;
		size_t n = series_locks(r, &v);
		jsonw_karray(w, "locks");
		for (size_t i = 0; i < n; i++) {
			jsonw_object_begin(w);
			jsonw_khex(w, "address", v[i].addr);
			jsonw_kstr(w, "symbol", v[i].symbol);
			jsonw_kstr(w, "kind", sd_wait_kind_name(v[i].kind));
			jsonw_karray(w, "waiters");
			for (size_t k = 0; k < r->n; k++)
				jsonw_u64(w, v[i].waiters[k]);
			jsonw_array_end(w);
			jsonw_karray(w, "holder");
			for (size_t k = 0; k < r->n; k++) {
				if (v[i].holder[k])
					jsonw_int(w, v[i].holder[k]);
				else
					jsonw_null(w);
			}
			jsonw_array_end(w);
			jsonw_object_end(w);
		}
		jsonw_array_end(w);
		series_locks_free(v, n);
		jsonw_karray(w, "deadlocks");
		for (size_t k = 0; k < r->n; k++) {
			struct sd_lockgraph *g = locks_graph(r->v[k].s);
			for (size_t i = 0; i < g->ndeadlocks; i++) {
				jsonw_object_begin(w);
				jsonw_ku64(w, "snapshot", (uint64_t)k + 1);
				jsonw_karray(w, "threads");
				for (size_t j = 0; j < g->deadlocks[i].n; j++)
					jsonw_int(w, g->deadlocks[i].edges[j].tid);
				jsonw_array_end(w);
				jsonw_object_end(w);
			}
			locks_graph_free(g);
		}
		jsonw_array_end(w);
	}
	if (sections & SD_SERIES_STUCK) {
		const struct sd_series_thread **rows;
		size_t cnt = series_stuck(r, &rows);
		jsonw_karray(w, "stuck");
		for (size_t i = 0; i < cnt; i++) {
			const struct sd_series_thread *t = rows[i];
			jsonw_object_begin(w);
			jsonw_kint(w, "pid", t->pid);
			jsonw_kint(w, "tid", t->tid);
			jsonw_kstr(w, "name", t->name);
			jsonw_kstr(w, "state", timeline_state_name(t->states[r->n - 1]));
			jsonw_ku64(w, "since", (uint64_t)series_stuck_since(r, t) + 1);
			const struct sd_thread *th = series_thread_in(r, r->n - 1, t);
			jsonw_karray(w, "frames");
			struct strbuf l;
			strbuf_init(&l);
			for (size_t f = 0; th && f < th->nframes; f++) {
				l.len = 0;
				frame_label(&l, &th->frames[f]);
				jsonw_strn(w, l.buf, l.len);
			}
			strbuf_release(&l);
			jsonw_array_end(w);
			jsonw_object_end(w);
		}
		jsonw_array_end(w);
		free(rows);
	}
	jsonw_object_end(w);
}
