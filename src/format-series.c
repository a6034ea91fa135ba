// SPDX-License-Identifier: MIT
// Renderers of a series of snapshots (series.c) into buffers: the text
// report's sections (summary, profile, timeline, locks, stuck threads), the
// JSON report, and the timeline of thread states as an SVG chart.
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format.h"
#include "locks.h"
#include "series.h"

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
	strbuf_adds(sb, "\n\n");
	if (!strcmp(view, "tree"))
		format_profile_tree(sb, p, ro);
	else if (!strcmp(view, "locks"))
		format_profile_locks(sb, p, ro);
	else
		format_profile_top(sb, p, ro);
	strbuf_adds(sb, "\n");
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
		strbuf_addf(sb, "   (snapshots %zu-%zu)\n", c0 + 1, c1);
		for (size_t i = 0; i < r->nth; i++) {
			const struct sd_series_thread *t = &r->th[i];
			struct strbuf nm;
			strbuf_init(&nm);
			strbuf_add_escaped(&nm, t->name ? t->name : "");
			strbuf_addf(sb, "  %-8d %-16.16s ", (int)t->tid, nm.buf);
			strbuf_release(&nm);
			strbuf_add(sb, t->states + c0, c1 - c0);
			strbuf_adds(sb, "\n");
		}
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
				strbuf_addf(sb, "\" from snapshot %zu", k + 1);
			} else {
				strbuf_addf(sb, "unknown from snapshot %zu", k + 1);
			}
		}
		strbuf_adds(sb, "\n");
	}
	/* Deadlocks, per snapshot, as lock analysis finds them. */
	for (size_t k = 0; k < r->n; k++) {
		const struct sd_snapshot *s = r->v[k].s;
		struct sd_lockgraph *g = locks_graph(s);
		for (size_t i = 0; i < g->ndeadlocks; i++) {
			const struct sd_deadlock *d = &g->deadlocks[i];
			strbuf_addf(sb, "\n  deadlock in snapshot %zu: ", k + 1);
			for (size_t e = 0; e < d->n; e++) {
				const struct sd_thread *th =
				    snapshot_find_thread(s, d->edges[e].tid);
				strbuf_addf(sb, "%d \"", (int)d->edges[e].tid);
				strbuf_add_escaped(sb, th ? th->name : "");
				strbuf_addf(sb, "\" -> %s", locks_kind_name(d->edges[e].kind));
				if (d->edges[e].symbol) {
					strbuf_adds(sb, " <");
					strbuf_add_escaped(sb, d->edges[e].symbol);
					strbuf_adds(sb, ">");
				}
				strbuf_adds(sb, " -> ");
			}
			strbuf_addf(sb, "%d\n", (int)d->edges[0].tid);
		}
		locks_graph_free(g);
	}
	series_locks_free(v, n);
	strbuf_adds(sb, "\n");
}

void format_series_stuck(const struct sd_series *r, struct strbuf *sb)
{
	if (r->n < 2) {
		strbuf_adds(sb, "Threads stuck in every snapshot: needs two snapshots or more\n");
		return;
	}
	const struct sd_series_thread **rows;
	size_t cnt = series_stuck(r, &rows);
	strbuf_addf(sb,
		    "Threads with the same stack in all %zu snapshots: %zu (lock waits first)\n",
		    r->n, cnt);
	for (size_t i = 0; i < cnt; i++) {
		const struct sd_series_thread *t = rows[i];
		const struct sd_thread *th = series_thread_in(r, r->n - 1, t);
		if (!th)
			continue;
		struct sd_render_opts ro = {0};
		ro.no_source = 1;
		strbuf_adds(sb, "\n  ");
		format_text_thread_header(sb, r->v[r->n - 1].s, th, &ro);
		char c = t->states[0];
		strbuf_addf(sb, "  [%s in every snapshot%s]\n", series_state_name(c),
			    c == 'S' || c == 'C' ? ", idle?" : "");
		for (size_t f = 0; f < th->nframes; f++) {
			strbuf_adds(sb, "      ");
			frame_label(sb, &th->frames[f]);
			strbuf_adds(sb, "\n");
		}
	}
	free(rows);
	strbuf_adds(sb, "\n");
}

json_t *format_series_json(const struct sd_series *r, unsigned sections)
{
	json_t *o = json_object();
	json_t *snaps = json_array();
	for (size_t k = 0; k < r->n; k++) {
		const struct sd_series_snap *x = &r->v[k];
		json_t *e = json_object();
		json_object_set_new(e, "file", format_json_str(x->path));
		json_object_set_new(e, "time", json_real(x->s->time));
		json_object_set_new(e, "pid", json_integer(x->s->pid));
		json_object_set_new(e, "threads", json_integer((json_int_t)x->s->nthreads));
		json_object_set_new(e, "reason", format_json_str(x->m.reason));
		json_array_append_new(snaps, e);
	}
	json_object_set_new(o, "snapshots", snaps);
	if (sections & SD_SERIES_PROFILE)
		json_object_set_new(o, "profile", format_profile_json(r->prof));
	if (sections & SD_SERIES_TIMELINE) {
		json_t *tl = json_array();
		for (size_t i = 0; i < r->nth; i++) {
			const struct sd_series_thread *t = &r->th[i];
			json_t *e = json_object();
			json_object_set_new(e, "pid", json_integer(t->pid));
			json_object_set_new(e, "tid", json_integer(t->tid));
			json_object_set_new(e, "name", format_json_str(t->name));
			json_t *sts = json_array();
			for (size_t k = 0; k < r->n; k++)
				json_array_append_new(sts,
						      json_string(series_state_name(t->states[k])));
			json_object_set_new(e, "states", sts);
			json_array_append_new(tl, e);
		}
		json_object_set_new(o, "timeline", tl);
	}
	if (sections & SD_SERIES_LOCKS) {
		struct sd_series_lock *v;
		size_t n = series_locks(r, &v);
		json_t *ls = json_array();
		for (size_t i = 0; i < n; i++) {
			json_t *e = json_object();
			char a[32];
			snprintf(a, sizeof(a), "0x%" PRIx64, v[i].addr);
			json_object_set_new(e, "address", json_string(a));
			json_object_set_new(e, "symbol", format_json_str(v[i].symbol));
			json_object_set_new(e, "kind", json_string(sd_wait_kind_name(v[i].kind)));
			json_t *w = json_array(), *h = json_array();
			for (size_t k = 0; k < r->n; k++) {
				json_array_append_new(w, json_integer((json_int_t)v[i].waiters[k]));
				json_array_append_new(
				    h, v[i].holder[k] ? json_integer(v[i].holder[k]) : json_null());
			}
			json_object_set_new(e, "waiters", w);
			json_object_set_new(e, "holder", h);
			json_array_append_new(ls, e);
		}
		series_locks_free(v, n);
		json_object_set_new(o, "locks", ls);
		json_t *dls = json_array();
		for (size_t k = 0; k < r->n; k++) {
			struct sd_lockgraph *g = locks_graph(r->v[k].s);
			for (size_t i = 0; i < g->ndeadlocks; i++) {
				json_t *e = json_object(), *tids = json_array();
				json_object_set_new(e, "snapshot", json_integer((json_int_t)k + 1));
				for (size_t j = 0; j < g->deadlocks[i].n; j++)
					json_array_append_new(
					    tids, json_integer(g->deadlocks[i].edges[j].tid));
				json_object_set_new(e, "threads", tids);
				json_array_append_new(dls, e);
			}
			locks_graph_free(g);
		}
		json_object_set_new(o, "deadlocks", dls);
	}
	if (sections & SD_SERIES_STUCK) {
		json_t *ss = json_array();
		const struct sd_series_thread **rows;
		size_t cnt = series_stuck(r, &rows);
		for (size_t i = 0; i < cnt; i++) {
			const struct sd_series_thread *t = rows[i];
			json_t *e = json_object();
			json_object_set_new(e, "pid", json_integer(t->pid));
			json_object_set_new(e, "tid", json_integer(t->tid));
			json_object_set_new(e, "name", format_json_str(t->name));
			json_object_set_new(e, "state",
					    json_string(series_state_name(t->states[0])));
			const struct sd_thread *th = series_thread_in(r, r->n - 1, t);
			json_t *fr = json_array();
			for (size_t f = 0; th && f < th->nframes; f++) {
				struct strbuf l;
				strbuf_init(&l);
				frame_label(&l, &th->frames[f]);
				json_array_append_new(fr, format_json_str(l.buf));
				strbuf_release(&l);
			}
			json_object_set_new(e, "frames", fr);
			json_array_append_new(ss, e);
		}
		free(rows);
		json_object_set_new(o, "stuck", ss);
	}
	return o;
}

void format_series_svg(const struct sd_series *r, struct strbuf *sb)
{
	const int label_w = 220, row_h = 16, top = 40, legend_h = 40;
	double cell = r->n <= 40 ? 20.0 : r->n <= 200 ? 6.0 : 1200.0 / (double)r->n;
	if (cell < 1.0)
		cell = 1.0;
	int width = label_w + (int)ceil(cell * (double)r->n) + 20;
	if (width < 640)
		width = 640;
	int height = top + row_h * (int)r->nth + legend_h + 10;
	strbuf_addf(sb,
		    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		    "font-family=\"monospace\" font-size=\"11\">\n"
		    "<title>stackdump: thread states per snapshot</title>\n"
		    "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
		    width, height);
	char t0[64];
	fmt_time(t0, sizeof(t0), r->v[0].s->time);
	strbuf_addf(sb,
		    "<text x=\"8\" y=\"18\" font-size=\"13\">Thread states in %zu snapshots from "
		    "%s (%.1fs)</text>\n",
		    r->n, t0, r->v[r->n - 1].s->time - r->v[0].s->time);
	for (size_t i = 0; i < r->nth; i++) {
		const struct sd_series_thread *t = &r->th[i];
		int y = top + row_h * (int)i;
		strbuf_addf(sb, "<text x=\"8\" y=\"%d\">%d ", y + 12, (int)t->tid);
		format_xml_escaped(sb, t->name);
		strbuf_adds(sb, "</text>\n");
		/* Runs of one state become one rectangle. */
		for (size_t k = 0; k < r->n;) {
			size_t e = k;
			while (e < r->n && t->states[e] == t->states[k])
				e++;
			if (t->states[k] != '.') {
				strbuf_addf(
				    sb,
				    "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
				    "fill=\"%s\"><title>",
				    label_w + cell * (double)k, y + 2, cell * (double)(e - k),
				    row_h - 3, series_state_color(t->states[k]));
				strbuf_addf(sb, "%d ", (int)t->tid);
				format_xml_escaped(sb, t->name);
				strbuf_addf(sb, ": %s in snapshots %zu-%zu</title></rect>\n",
					    series_state_name(t->states[k]), k + 1, e);
			}
			k = e;
		}
	}
	int ly = top + row_h * (int)r->nth + 20;
	int lx = 8;
	for (const char *c = SD_SERIES_STATES; *c; c++) {
		strbuf_addf(sb,
			    "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\" "
			    "stroke=\"#888\"/><text x=\"%d\" y=\"%d\">%s</text>\n",
			    lx, ly, series_state_color(*c), lx + 16, ly + 10,
			    series_state_name(*c));
		lx += 16 + 8 * (int)strlen(series_state_name(*c)) + 14;
	}
	strbuf_adds(sb, "</svg>\n");
}
