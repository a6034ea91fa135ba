// SPDX-License-Identifier: MIT
// report: read saved snapshots (a recording directory or files) and show
// what happened across them: the aggregated profile, a timeline of thread
// states (text and SVG), locks over time, and the threads that sat in every
// snapshot with the same stack.
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../src/analyze.h"
#include "../src/findings.h"
#include "../src/format.h"
#include "../src/locks.h"
#include "../src/profile.h"
#include "../src/snapio.h"
#include "../src/timeline.h"
#include "cmd.h"

enum {
	REP_FORMAT,
	REP_VIEW,
	REP_OUTPUT,
	REP_TIMELINE_SVG,
	REP_ONLY,
	REP_LIMIT,
	REP_MIN_PERCENT,
	REP_ON_CPU,
	REP_OFF_CPU,
	REP_NO_IDLE,
	REP_GROUP_THREADS,
	REP_BY_ADDRESS,
	REP_TITLE,
};

static const struct cmd_option report_options[] = {
	[REP_FORMAT] = OPT_FORMAT("text or json: the whole report; folded, svg or pprof: the "
				  "profile alone",
				  "text json folded svg pprof", "text"),
	[REP_VIEW] = OPT_CHOICE("view", 0, "VIEW",
				"the profile in the text report: top, tree or locks (default top)",
				"top tree locks", "top"),
	[REP_OUTPUT] = OPT_STRING("output", 'o', "FILE", "write to FILE instead of standard output",
				  CMPL_FILE),
	[REP_TIMELINE_SVG] = OPT_STRING("timeline-svg", 0, "FILE",
					"also write the timeline of thread states as an SVG chart",
					CMPL_FILE),
	[REP_ONLY] = OPT_STRING("only", 0, "SECTIONS",
				"only these sections: findings, summary, profile, timeline, locks, "
				"stuck (comma-separated)",
				CMPL_NONE),
	[REP_LIMIT] = {.name = "limit",
		       .short_name = 'l',
		       .arg = "N",
		       .help = "profile top: the N hottest stacks (default 10, 0: all)",
		       .type = CMD_OPT_COUNT,
		       .max = 1e9,
		       .def = "10",
		       .hint = "a number >= 0"},
	[REP_MIN_PERCENT] = {.name = "min-percent",
			     .arg = "PCT",
			     .help = "profile tree: hide call paths under PCT% (default 0.5)",
			     .type = CMD_OPT_REAL,
			     .max = 100,
			     .def = "0.5",
			     .hint = "0 to 100"},
	[REP_ON_CPU] = OPT_FLAG("on-cpu", 0, "profile: only threads on a CPU (state R)"),
	[REP_OFF_CPU] = OPT_FLAG("off-cpu", 0, "profile: only threads off CPU"),
	[REP_NO_IDLE] = OPT_FLAG(
	    "no-idle", 0, "profile: hide threads idling (epoll_wait, poll, condvars, sleep...)"),
	[REP_GROUP_THREADS] = OPT_FLAG("group-threads", 'g',
				       "profile: count worker-1..worker-N as one family worker-*"),
	[REP_BY_ADDRESS] = OPT_FLAG("by-address", 0,
				    "profile: merge stacks by address, not by function"),
	[REP_TITLE] = OPT_STRING("title", 0, "TEXT", "svg: the title of the flame graph", CMPL_NONE),
	{0},
};

/* One loaded snapshot. */
struct rsnap {
	char *path;
	struct sd_snapshot *s;
	struct snapio_meta m;
};

/* A thread across snapshots, keyed by (pid, tid). */
struct rthread {
	pid_t pid, tid;
	const char *name;     /* latest name, pool string of some snapshot */
	char *states;         /* one state letter per snapshot, '.' when absent */
	uint64_t *hash;       /* stack hash per snapshot, 0 when absent */
	size_t first;         /* first snapshot it is in */
};

struct report {
	struct cmd_ctx *ctx;
	struct rsnap *v;
	size_t n, cap;
	struct rthread *th;
	size_t nth, thcap;
	struct sd_profile *prof;
	unsigned sections;
	const struct sd_snapshot **sv; /* the snapshots in time order */
	struct sd_findings fnd;
};

enum {
	SEC_SUMMARY = 1,
	SEC_PROFILE = 2,
	SEC_TIMELINE = 4,
	SEC_LOCKS = 8,
	SEC_STUCK = 16,
	SEC_FINDINGS = 32,
	SEC_ALL = 63,
};

/* ---- per-thread facts ---------------------------------------------------- */

/* ---- loading ------------------------------------------------------------- */

static int add_file(struct report *r, const char *path, int *bad)
{
	struct sd_error err = {0};
	struct snapio_meta m;
	struct sd_snapshot *s = snapio_load(path, &m, &err);
	if (!s) {
		cmd_error(r->ctx, "report: %s", err.msg);
		(*bad)++;
		return -1;
	}
	sd_grow(&r->v, &r->cap, r->n + 1, sizeof(*r->v));
	r->v[r->n].path = sd_xstrdup(path);
	r->v[r->n].s = s;
	r->v[r->n].m = m;
	r->n++;
	return 0;
}

static int cmp_time(const void *a, const void *b)
{
	const struct rsnap *x = a, *y = b;
	if (x->s->time != y->s->time)
		return x->s->time < y->s->time ? -1 : 1;
	return strcmp(x->path, y->path);
}

static struct rthread *thread_row(struct report *r, pid_t pid, pid_t tid, size_t snap)
{
	for (size_t i = 0; i < r->nth; i++)
		if (r->th[i].pid == pid && r->th[i].tid == tid)
			return &r->th[i];
	sd_grow(&r->th, &r->thcap, r->nth + 1, sizeof(*r->th));
	struct rthread *t = &r->th[r->nth++];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	t->first = snap;
	t->states = sd_xmalloc(r->n + 1);
	memset(t->states, '.', r->n);
	t->states[r->n] = '\0';
	t->hash = sd_xcalloc(r->n ? r->n : 1, sizeof(*t->hash));
	return t;
}

static void build(struct report *r)
{
	sd_sort(r->v, r->n, sizeof(*r->v), cmp_time);
	r->sv = sd_xcalloc(r->n + 1, sizeof(*r->sv));
	for (size_t k = 0; k < r->n; k++)
		r->sv[k] = r->v[k].s;
	findings_analyze(r->sv, r->n, &r->fnd);
	for (size_t k = 0; k < r->n; k++) {
		struct sd_snapshot *s = r->v[k].s;
		for (size_t i = 0; i < s->nthreads; i++) {
			const struct sd_thread *th = &s->threads[i];
			struct rthread *t = thread_row(r, s->pid, th->tid, k);
			t->name = th->name;
			t->states[k] = timeline_letter(th);
			t->hash[k] = snapshot_stack_hash(th);
		}
		profile_add_snapshot(r->prof, NULL, s, NULL);
	}
	/* The profile's clock is the recording's. */
	r->prof->samples = r->n;
	if (r->n > 1) {
		double span = r->v[r->n - 1].s->time - r->v[0].s->time;
		r->prof->duration_us = span > 0 ? (uint64_t)(span * 1e6) : 0;
		r->prof->interval_us = r->prof->duration_us / (r->n - 1);
	}
	profile_sort(r->prof);
}

static void report_release(struct report *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->v[i].path);
		snapshot_free(r->v[i].s);
	}
	free(r->v);
	for (size_t i = 0; i < r->nth; i++) {
		free(r->th[i].states);
		free(r->th[i].hash);
	}
	free(r->th);
	free(r->sv);
	findings_release(&r->fnd);
	profile_free(r->prof);
}

/* ---- helpers ------------------------------------------------------------- */

static const char *thread_name_of(const struct report *r, pid_t tid)
{
	for (size_t i = 0; i < r->nth; i++)
		if (r->th[i].tid == tid)
			return r->th[i].name;
	return NULL;
}

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

/* A lock seen in some snapshot: address, kind, and per snapshot its
 * holder and number of waiters. */
struct rlock {
	uint64_t addr;
	const char *symbol;
	enum sd_wait_kind kind;
	pid_t *holder;   /* per snapshot, 0 none/unknown */
	size_t *waiters; /* per snapshot */
};

static size_t collect_locks(struct report *r, struct rlock **out)
{
	struct rlock *v = NULL;
	size_t n = 0, cap = 0;
	for (size_t k = 0; k < r->n; k++) {
		struct sd_snapshot *s = r->v[k].s;
		for (size_t i = 0; i < s->nthreads; i++) {
			const struct sd_wait *w = &s->threads[i].wait;
			if (w->kind < SD_WAIT_MUTEX || !w->address)
				continue;
			struct rlock *l = NULL;
			for (size_t j = 0; j < n; j++)
				if (v[j].addr == w->address)
					l = &v[j];
			if (!l) {
				sd_grow(&v, &cap, n + 1, sizeof(*v));
				l = &v[n++];
				memset(l, 0, sizeof(*l));
				l->addr = w->address;
				l->kind = w->kind;
				l->holder = sd_xcalloc(r->n, sizeof(*l->holder));
				l->waiters = sd_xcalloc(r->n, sizeof(*l->waiters));
			}
			if (!l->symbol && w->symbol)
				l->symbol = w->symbol;
			l->waiters[k]++;
			if (w->owner_known && w->owner > 0)
				l->holder[k] = w->owner;
		}
	}
	*out = v;
	return n;
}

static void locks_free(struct rlock *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].holder);
		free(v[i].waiters);
	}
	free(v);
}

/* Lock waits first: those are the likely culprits; idle waits last. */
static int stuck_rank(char c)
{
	const char *order = "LDRrCS";
	const char *p = strchr(order, c);
	return p ? (int)(p - order) : 6;
}

/* The stuck rows (see stuck_row) in the order to show them. */
static size_t stuck_rows(const struct report *r, const struct rthread ***out);

/* The first snapshot of T's last run of one stack and state that lasts
 * to the end of the recording (r->n when T is not in the last snapshot). */
static size_t stuck_since(const struct report *r, const struct rthread *t)
{
	size_t last = r->n - 1;
	if (!r->n || !t->hash[last] || t->states[last] == '.')
		return r->n;
	size_t k = last;
	while (k > 0 && t->hash[k - 1] == t->hash[last] && t->states[k - 1] == t->states[last])
		k--;
	return k;
}

/* Threads with the same stack and state in at least the last two
 * snapshots: a deadlock that forms during the recording counts from the
 * snapshot it formed in. */
static int stuck_row(const struct report *r, const struct rthread *t)
{
	return r->n >= 2 && stuck_since(r, t) + 1 < r->n;
}

static int cmp_stuck(const void *a, const void *b)
{
	const struct rthread *x = *(const struct rthread *const *)a;
	const struct rthread *y = *(const struct rthread *const *)b;
	/* Ranked by the state they are stuck in: the last snapshot's. */
	int d = stuck_rank(x->states[strlen(x->states) - 1]) -
		stuck_rank(y->states[strlen(y->states) - 1]);
	if (d)
		return d;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static size_t stuck_rows(const struct report *r, const struct rthread ***out)
{
	const struct rthread **v = sd_xcalloc(r->nth ? r->nth : 1, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; i < r->nth; i++)
		if (stuck_row(r, &r->th[i]))
			v[n++] = &r->th[i];
	sd_sort(v, n, sizeof(*v), cmp_stuck);
	*out = v;
	return n;
}

static const struct sd_thread *thread_in(const struct report *r, size_t k, const struct rthread *t)
{
	if (r->v[k].s->pid != t->pid)
		return NULL;
	return snapshot_find_thread(r->v[k].s, t->tid);
}

/* ---- text ---------------------------------------------------------------- */

static void text_summary(struct report *r, struct strbuf *sb)
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

static void text_profile(struct report *r, struct strbuf *sb, const char *view,
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

static void text_timeline(struct report *r, struct strbuf *sb)
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
		for (size_t i = 0; i < r->nth; i++) {
			const struct rthread *t = &r->th[i];
			struct strbuf nm;
			strbuf_init(&nm);
			strbuf_adds(&nm, "");
			strbuf_add_escaped(&nm, t->name ? t->name : "");
			strbuf_addf(sb, "  %-8d %-16.16s ", (int)t->tid, nm.buf);
			strbuf_release(&nm);
			strbuf_add(sb, t->states + c0, c1 - c0);
			strbuf_adds(sb, "\n");
		}
	}
	strbuf_adds(sb, "\n");
}

static void text_locks(struct report *r, struct strbuf *sb)
{
	struct rlock *v;
	size_t n = collect_locks(r, &v);
	strbuf_addf(sb, "Locks over time: %zu lock%s waited for\n", n, n == 1 ? "" : "s");
	for (size_t i = 0; i < n; i++) {
		const struct rlock *l = &v[i];
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
		strbuf_addf(sb, ": waited for in %zu of %zu snapshots, at most %zu waiters (%.1f on "
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
				const char *nm = thread_name_of(r, l->holder[k]);
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
	locks_free(v, n);
	strbuf_adds(sb, "\n");
}

static void text_stuck(struct report *r, struct strbuf *sb)
{
	if (r->n < 2) {
		strbuf_adds(sb, "Threads stuck: needs two snapshots or more\n");
		return;
	}
	const struct rthread **rows;
	size_t cnt = stuck_rows(r, &rows);
	strbuf_addf(sb,
		    "Threads with the same stack until the last snapshot (of %zu): %zu (lock waits "
		    "first)\n",
		    r->n, cnt);
	for (size_t i = 0; i < cnt; i++) {
		const struct rthread *t = rows[i];
		const struct sd_thread *th = thread_in(r, r->n - 1, t);
		if (!th)
			continue;
		struct sd_render_opts ro = {0};
		ro.no_source = 1;
		strbuf_adds(sb, "\n  ");
		format_text_thread_header(sb, r->v[r->n - 1].s, th, &ro);
		char c = t->states[r->n - 1];
		size_t since = stuck_since(r, t);
		char clk[32];
		findings_clock(clk, sizeof(clk), r->v[since].s->time);
		if (since == 0)
			strbuf_addf(sb, "  [%s in every snapshot%s]\n", timeline_state_name(c),
				    c == 'S' || c == 'C' ? ", idle?" : "");
		else
			strbuf_addf(sb, "  [%s since %s UTC, snapshots %zu-%zu%s]\n",
				    timeline_state_name(c), clk, since + 1, r->n,
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

/* ---- JSON ---------------------------------------------------------------- */


static json_t *report_json(struct report *r)
{
	json_t *o = json_object();
	json_t *snaps = json_array();
	for (size_t k = 0; k < r->n; k++) {
		const struct rsnap *x = &r->v[k];
		json_t *e = json_object();
		json_object_set_new(e, "file", format_json_str(x->path));
		json_object_set_new(e, "time", json_real(x->s->time));
		json_object_set_new(e, "pid", json_integer(x->s->pid));
		json_object_set_new(e, "threads", json_integer((json_int_t)x->s->nthreads));
		json_object_set_new(e, "reason", format_json_str(x->m.reason));
		json_array_append_new(snaps, e);
	}
	json_object_set_new(o, "snapshots", snaps);
	if (r->sections & SEC_FINDINGS)
		json_object_set_new(o, "findings", findings_json(&r->fnd));
	if (r->sections & SEC_PROFILE)
		json_object_set_new(o, "profile", format_profile_json(r->prof));
	if (r->sections & SEC_TIMELINE) {
		json_t *tl = json_array();
		for (size_t i = 0; i < r->nth; i++) {
			const struct rthread *t = &r->th[i];
			json_t *e = json_object();
			json_object_set_new(e, "pid", json_integer(t->pid));
			json_object_set_new(e, "tid", json_integer(t->tid));
			json_object_set_new(e, "name", format_json_str(t->name));
			json_t *sts = json_array();
			for (size_t k = 0; k < r->n; k++)
				json_array_append_new(sts, json_string(timeline_state_name(t->states[k])));
			json_object_set_new(e, "states", sts);
			json_array_append_new(tl, e);
		}
		json_object_set_new(o, "timeline", tl);
	}
	if (r->sections & SEC_LOCKS) {
		struct rlock *v;
		size_t n = collect_locks(r, &v);
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
				json_array_append_new(h, v[i].holder[k] ? json_integer(v[i].holder[k])
									: json_null());
			}
			json_object_set_new(e, "waiters", w);
			json_object_set_new(e, "holder", h);
			json_array_append_new(ls, e);
		}
		locks_free(v, n);
		json_object_set_new(o, "locks", ls);
		json_t *dls = json_array();
		for (size_t k = 0; k < r->n; k++) {
			struct sd_lockgraph *g = locks_graph(r->v[k].s);
			for (size_t i = 0; i < g->ndeadlocks; i++) {
				json_t *e = json_object(), *tids = json_array();
				json_object_set_new(e, "snapshot", json_integer((json_int_t)k + 1));
				for (size_t j = 0; j < g->deadlocks[i].n; j++)
					json_array_append_new(tids,
							      json_integer(g->deadlocks[i].edges[j].tid));
				json_object_set_new(e, "threads", tids);
				json_array_append_new(dls, e);
			}
			locks_graph_free(g);
		}
		json_object_set_new(o, "deadlocks", dls);
	}
	if (r->sections & SEC_STUCK) {
		json_t *ss = json_array();
		const struct rthread **rows;
		size_t cnt = stuck_rows(r, &rows);
		for (size_t i = 0; i < cnt; i++) {
			const struct rthread *t = rows[i];
			json_t *e = json_object();
			json_object_set_new(e, "pid", json_integer(t->pid));
			json_object_set_new(e, "tid", json_integer(t->tid));
			json_object_set_new(e, "name", format_json_str(t->name));
			json_object_set_new(e, "state",
					    json_string(timeline_state_name(t->states[r->n - 1])));
			json_object_set_new(e, "since",
					    json_integer((json_int_t)stuck_since(r, t) + 1));
			const struct sd_thread *th = thread_in(r, r->n - 1, t);
			json_t *fr = json_array();
			for (size_t f = 0; th && f < th->nframes; f++) {
				struct strbuf l;
				strbuf_init(&l);
				strbuf_adds(&l, "");
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

/* ---- the command --------------------------------------------------------- */

static int parse_sections(struct cmd_ctx *ctx, const char *v, unsigned *out)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {{"summary", SEC_SUMMARY},	 {"profile", SEC_PROFILE}, {"timeline", SEC_TIMELINE},
		     {"locks", SEC_LOCKS},	 {"stuck", SEC_STUCK},	   {"findings", SEC_FINDINGS}};
	*out = 0;
	char *copy = sd_xstrdup(v), *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned bit = 0;
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcmp(tok, names[i].name))
				bit = names[i].bit;
		if (!bit) {
			cmd_error(ctx,
				  "report: unknown section '%s' (findings, summary, profile, timeline, "
				  "locks, stuck)",
				  tok);
			free(copy);
			return -1;
		}
		*out |= bit;
	}
	free(copy);
	return *out ? 0 : -1;
}

/* Write LEN bytes to PATH, or to the command's output when PATH is NULL. */
static int emit(struct cmd_ctx *ctx, const char *path, const void *buf, size_t len)
{
	if (!path) {
		cmd_write(ctx, buf, len);
		return 0;
	}
	struct sd_error err = {0};
	if (snapio_write_atomic(path, buf, len, 0, 0644, NULL, &err) < 0) {
		cmd_error(ctx, "report: %s", err.msg);
		return -1;
	}
	return 0;
}

static int report_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct report r;
	memset(&r, 0, sizeof(r));
	r.ctx = ctx;
	r.sections = SEC_ALL;
	const char *v;
	if ((v = cmd_str(ctx, REP_ONLY)) && parse_sections(ctx, v, &r.sections) < 0)
		return EXIT_USAGE;
	struct sd_prender ro;
	memset(&ro, 0, sizeof(ro));
	ro.limit = (int)cmd_num(ctx, REP_LIMIT);
	ro.min_percent = cmd_real(ctx, REP_MIN_PERCENT);
	ro.color = ctx->color && !cmd_has(ctx, REP_OUTPUT);
	ro.title = cmd_str(ctx, REP_TITLE);
	if (cmd_has(ctx, REP_ON_CPU) && cmd_has(ctx, REP_OFF_CPU)) {
		cmd_error(ctx, "report: --on-cpu and --off-cpu exclude each other");
		return EXIT_USAGE;
	}
	const char *format = cmd_str(ctx, REP_FORMAT);
	const char *view = cmd_str(ctx, REP_VIEW);
	const char *outpath = cmd_str(ctx, REP_OUTPUT);
	if (!strcmp(format, "pprof") && !outpath && isatty(fileno(ctx->out))) {
		cmd_error(ctx, "report: pprof is binary: write it to a file with -o FILE");
		return EXIT_USAGE;
	}
	if (!strcmp(format, "svg") && !outpath && isatty(fileno(ctx->out))) {
		cmd_error(ctx, "report: an SVG flame graph is for a browser: write it with -o "
			       "FILE.svg (or redirect stdout)");
		return EXIT_USAGE;
	}
	struct sd_profile_opts po;
	profile_opts_init(&po);
	po.by_address = cmd_has(ctx, REP_BY_ADDRESS);
	po.group_threads = cmd_has(ctx, REP_GROUP_THREADS);
	po.no_idle = cmd_has(ctx, REP_NO_IDLE);
	po.cpu = cmd_has(ctx, REP_ON_CPU)    ? SD_CPU_ON
		 : cmd_has(ctx, REP_OFF_CPU) ? SD_CPU_OFF
					     : SD_CPU_ALL;
	po.locks = !strcmp(view, "locks") || !strcmp(format, "json");
	r.prof = profile_new(&po);

	int bad = 0;
	for (int i = 0; i < argc && !cmd_interrupted; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			char **names;
			size_t n, missing = 0;
			struct sd_error err = {0};
			if (snapio_list_dir(argv[i], &names, &n, &missing, &err) < 0) {
				cmd_error(ctx, "report: %s", err.msg);
				bad++;
				continue;
			}
			if (missing)
				cmd_error(ctx,
					  "report: %s: %zu snapshots listed in the manifest are gone "
					  "(removed by hand?)",
					  argv[i], missing);
			if (!n)
				cmd_error(ctx, "report: %s: no snapshots in this directory", argv[i]);
			for (size_t k = 0; k < n; k++)
				add_file(&r, names[k], &bad);
			snapio_names_free(names, n);
		} else {
			add_file(&r, argv[i], &bad);
		}
	}
	if (cmd_interrupted) {
		cmd_error(ctx, "report: interrupted");
		report_release(&r);
		return EXIT_INTERRUPTED;
	}
	if (!r.n) {
		cmd_error(ctx, "report: no snapshot could be read");
		report_release(&r);
		return EXIT_FAIL;
	}
	build(&r);

	int rc = bad ? EXIT_PARTIAL : EXIT_OK;
	struct strbuf sb;
	strbuf_init(&sb);
	if (!strcmp(format, "pprof")) {
		uint8_t *buf = NULL;
		size_t len = 0;
		struct sd_error err = {0};
		if (format_profile_pprof(r.prof, &buf, &len, &err) < 0) {
			cmd_error(ctx, "report: %s", err.msg);
			rc = EXIT_FAIL;
		} else if (emit(ctx, outpath, buf, len) < 0) {
			rc = EXIT_FAIL;
		}
		free(buf);
	} else {
		if (!strcmp(format, "json")) {
			cmd_json_text(&sb, report_json(&r));
		} else if (!strcmp(format, "folded")) {
			format_profile_folded(&sb, r.prof);
		} else if (!strcmp(format, "svg")) {
			format_profile_svg(&sb, r.prof, &ro);
		} else {
			/* What to look at first, then the evidence. */
			if (r.sections & SEC_FINDINGS) {
				findings_format_text(&sb, &r.fnd);
				strbuf_adds(&sb, "\n");
			}
			if (r.sections & SEC_SUMMARY)
				text_summary(&r, &sb);
			if (r.sections & SEC_PROFILE)
				text_profile(&r, &sb, view, &ro);
			if (r.sections & SEC_TIMELINE)
				text_timeline(&r, &sb);
			if (r.sections & SEC_LOCKS)
				text_locks(&r, &sb);
			if (r.sections & SEC_STUCK)
				text_stuck(&r, &sb);
		}
		if (emit(ctx, outpath, sb.buf, sb.len) < 0)
			rc = EXIT_FAIL;
	}
	strbuf_release(&sb);

	if ((v = cmd_str(ctx, REP_TIMELINE_SVG))) {
		struct strbuf svg;
		strbuf_init(&svg);
		format_timeline_svg(&svg, r.sv, r.n, &r.fnd);
		if (emit(ctx, v, svg.buf, svg.len) < 0)
			rc = EXIT_FAIL;
		strbuf_release(&svg);
	}
	report_release(&r);
	return rc;
}

const struct cmd_entry cmd_report_entry = {
	.name = "report",
	.alias = NULL,
	.args_usage = "DIR|FILE...",
	.summary = "summarize saved snapshots: findings first, then profile, timeline, locks",
	.description =
	    "Reads a recording directory (in the order of its manifest) or snapshot files\n"
	    "and shows, across all of them: the profile (identical stacks merged, counted over\n"
	    "threads and snapshots; --view and --format give every view and format of\n"
	    "'profile'), a timeline of each thread's state per snapshot (--timeline-svg draws\n"
	    "it), each lock's waiters and holder over time with any deadlock, and the\n"
	    "threads that kept the same stack until the last snapshot. Findings come first:\n"
	    "deadlocks, locks held longest and their holders, threads stuck, CPU hot spots,\n"
	    "each once, with its wall-clock times (UTC) and snapshots. Files that cannot be read\n"
	    "are reported and skipped.\n"
	    "Exit status: 0 ok, 1 some files could not be read, 2 none could, 64 usage error.",
	.options = report_options,
	.min_args = 1,
	.max_args = -1,
	.arg_complete = CMPL_FILE,
	.exec = report_exec,
};
