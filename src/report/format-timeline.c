// SPDX-License-Identifier: MIT
// The timeline chart of a series of snapshots as SVG: one row per thread,
// its states over a wall-clock time axis, a lane of markers for deadlocks
// and long-held locks, and hover text naming the lock, the holder and the
// time of every bar.
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "findings.h"
#include "format.h"
#include "locks.h"
#include "timeline.h"

/* Geometry, in SVG pixels; text is 11px monospace (6.6px a character). */
#define TL_WIDTH 1200.0
#define TL_LABEL_W 240.0
#define TL_RIGHT 24.0
#define TL_ROW_H 16
#define TL_CHAR_W 6.7
#define TL_TITLE_Y 20
#define TL_AXIS_Y 58 /* the axis line; tick labels above it */

char timeline_letter(const struct sd_thread *th)
{
	if (th->status != SD_THREAD_OK)
		return 'x';
	switch (th->wait.kind) {
	case SD_WAIT_RUNNING: return 'R';
	case SD_WAIT_RUNNABLE: return 'r';
	case SD_WAIT_DISK: return 'D';
	case SD_WAIT_STOPPED: return 'T';
	case SD_WAIT_ZOMBIE: return 'Z';
	case SD_WAIT_CONDVAR:
	case SD_WAIT_RUST_CONDVAR:
	case SD_WAIT_IDLE: return 'C';
	case SD_WAIT_MUTEX:
	case SD_WAIT_RWLOCK_READ:
	case SD_WAIT_RWLOCK_WRITE:
	case SD_WAIT_SEMAPHORE:
	case SD_WAIT_JOIN:
	case SD_WAIT_RUST_MUTEX:
	case SD_WAIT_RUST_RWLOCK:
	case SD_WAIT_MONITOR:
	case SD_WAIT_FUTEX: return 'L';
	default: break;
	}
	if (th->state == 'R')
		return th->running ? 'R' : 'r';
	return 'S';
}

const char *timeline_state_name(char c)
{
	switch (c) {
	case 'R': return "running";
	case 'r': return "runnable";
	case 'S': return "syscall";
	case 'L': return "lock";
	case 'C': return "condvar";
	case 'D': return "disk";
	case 'T': return "stopped";
	case 'Z': return "zombie";
	case 'x': return "unreadable";
	default: return "absent";
	}
}

static const char *state_color(char c)
{
	switch (c) {
	case 'R': return "#2e9e44";
	case 'r': return "#8fd19e";
	case 'S': return "#c9d6e3";
	case 'L': return "#d9453d";
	case 'C': return "#f0b429";
	case 'D': return "#7b4fb0";
	case 'T': return "#333333";
	case 'Z': return "#8a5a2b";
	case 'x': return "#f2a0c0";
	default: return "#ffffff";
	}
}

/* Text made safe for XML: control characters escaped, then entities. */
static void add_xml(struct strbuf *out, const char *s)
{
	struct strbuf e;
	strbuf_init(&e);
	strbuf_add_escaped(&e, s ? s : "");
	for (size_t i = 0; i < e.len; i++) {
		switch (e.buf[i]) {
		case '&': strbuf_adds(out, "&amp;"); break;
		case '<': strbuf_adds(out, "&lt;"); break;
		case '>': strbuf_adds(out, "&gt;"); break;
		case '"': strbuf_adds(out, "&quot;"); break;
		case '\'': strbuf_adds(out, "&apos;"); break;
		default: strbuf_add(out, &e.buf[i], 1);
		}
	}
	strbuf_release(&e);
}

/* A label cut to MAXCH characters (with "..." when cut), then escaped. */
static void add_label(struct strbuf *out, const char *s, size_t maxch)
{
	struct strbuf e;
	strbuf_init(&e);
	strbuf_add_escaped(&e, s ? s : "");
	if (e.len > maxch && maxch > 3) {
		e.len = maxch - 3;
		strbuf_adds(&e, "...");
	}
	add_xml(out, e.buf);
	strbuf_release(&e);
}

struct row {
	pid_t pid, tid;
	const char *name;
};

struct tl {
	const struct sd_snapshot *const *s;
	size_t n;
	double t0, span, step; /* seconds; step: the time a snapshot stands for */
	double x0, w;
};

static double xat(const struct tl *c, double t)
{
	return c->x0 + (t - c->t0) / c->span * c->w;
}

/* Where snapshot K's cell starts and ends on the time axis. */
static double cell_start(const struct tl *c, size_t k)
{
	return c->s[k]->time;
}

static double cell_end(const struct tl *c, size_t k)
{
	return k + 1 < c->n ? c->s[k + 1]->time : c->s[k]->time + c->step;
}

static const struct sd_thread *thread_at(const struct tl *c, size_t k, const struct row *r)
{
	const struct sd_snapshot *s = c->s[k];
	if (s->pid != r->pid)
		return NULL;
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == r->tid)
			return &s->threads[i];
	return NULL;
}

/* Same bar: the same state letter and, for waits, the same lock and
 * holder. */
static int same_bar(const struct sd_thread *a, const struct sd_thread *b)
{
	if (!a || !b)
		return !a && !b;
	return timeline_letter(a) == timeline_letter(b) && a->wait.kind == b->wait.kind &&
	       a->wait.address == b->wait.address && a->wait.owner == b->wait.owner;
}

/* "16:26:18-16:26:24 (snapshots 12-16)" */
static void span_text(struct strbuf *out, const struct tl *c, size_t a, size_t b)
{
	char x[32], y[32];
	findings_clock(x, sizeof(x), c->s[a]->time);
	findings_clock(y, sizeof(y), c->s[b]->time);
	if (a == b)
		strbuf_addf(out, "%s (snapshot %zu)", x, a + 1);
	else
		strbuf_addf(out, "%s-%s (snapshots %zu-%zu)", x, y, a + 1, b + 1);
}

/* A tick step that gives about 4 to 10 ticks over SPAN seconds. */
static double tick_step(double span)
{
	static const double steps[] = {0.01, 0.02, 0.05, 0.1,  0.2,   0.5,   1,	   2,
				       5,    10,   15,	 30,   60,    120,   300,  600,
				       900,  1800, 3600, 7200, 21600, 43200, 86400};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (span / steps[i] <= 10)
			return steps[i];
	return 86400 * ceil(span / 86400 / 10);
}

static void axis(struct strbuf *out, const struct tl *c)
{
	double step = tick_step(c->span);
	strbuf_addf(out,
		    "<g id=\"axis\"><line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
		    "stroke=\"#444\"/>\n",
		    c->x0, TL_AXIS_Y, c->x0 + c->w, TL_AXIS_Y);
	double first = ceil(c->t0 / step) * step;
	for (double t = first; t <= c->t0 + c->span + 1e-9; t += step) {
		double x = xat(c, t);
		char clk[48];
		findings_clock(clk, sizeof(clk), t);
		if (step < 1) {
			int digits = step < 0.1 ? 2 : 1, scale = step < 0.1 ? 100 : 10;
			size_t l = strlen(clk);
			snprintf(clk + l, sizeof(clk) - l, ".%0*d", digits,
				 (int)lround(fmod(t, 1.0) * scale) % scale);
		}
		/* A label that would cross the chart's edge is anchored at
		 * its tick's side instead of centred on it. */
		double half = TL_CHAR_W * (double)strlen(clk) / 2;
		const char *anchor = x + half > TL_WIDTH - 2 ? "end"
				     : x - half < 2	     ? "start"
							     : "middle";
		strbuf_addf(
		    out,
		    "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#444\"/>"
		    "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"%s\">%s</text>\n",
		    x, TL_AXIS_Y, x, TL_AXIS_Y + 5, x, TL_AXIS_Y - 4, anchor, clk);
	}
	strbuf_addf(out, "<text x=\"%.1f\" y=\"%d\" style=\"fill:#555\">time (UTC)</text></g>\n",
		    8.0, TL_AXIS_Y - 4);
}

/* The lane of markers: deadlocks and locks held across snapshots. */
static int markers(struct strbuf *out, const struct tl *c, const struct sd_findings *f, int y)
{
	int lanes = 0;
	for (size_t i = 0; f && i < f->n; i++) {
		const struct sd_finding *x = &f->v[i];
		if (x->kind != SD_FINDING_DEADLOCK && x->kind != SD_FINDING_LOCK_HELD)
			continue;
		int dl = x->kind == SD_FINDING_DEADLOCK;
		double a = xat(c, cell_start(c, x->first)), b = xat(c, cell_end(c, x->last));
		strbuf_addf(out, "<g class=\"marker %s\"><title>", dl ? "deadlock" : "held");
		add_xml(out, x->title);
		strbuf_adds(out, "\n");
		struct strbuf sp;
		strbuf_init(&sp);
		span_text(&sp, c, x->first, x->last);
		add_xml(out, sp.buf);
		strbuf_release(&sp);
		if (x->detail) {
			strbuf_adds(out, "\n");
			add_xml(out, x->detail);
		}
		strbuf_addf(out,
			    "</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
			    "fill=\"%s\" stroke=\"%s\"/>",
			    a, y + 2, b - a > 2 ? b - a : 2, TL_ROW_H - 4,
			    dl ? "#b00020" : "#f08c00", dl ? "#600010" : "#a05a00");
		strbuf_addf(out, "<text x=\"8\" y=\"%d\">", y + 12);
		/* The lane's label: what the marker is, cut to the label
		 * column. */
		struct strbuf l;
		strbuf_init(&l);
		if (dl) {
			strbuf_addf(&l, "deadlock (%zu threads)", x->ntids);
		} else {
			const char *p = strstr(x->title, ": ");
			const char *e = p ? strstr(p, " held by") : NULL;
			strbuf_adds(&l, "held: ");
			if (p && e)
				strbuf_add(&l, p + 2, (size_t)(e - p - 2));
		}
		add_label(out, l.buf, (size_t)((TL_LABEL_W - 16) / TL_CHAR_W));
		strbuf_release(&l);
		strbuf_adds(out, "</text></g>\n");
		y += TL_ROW_H;
		lanes++;
	}
	return lanes;
}

void format_timeline_svg(struct strbuf *out, const struct sd_snapshot *const *s, size_t n,
			 const struct sd_findings *f)
{
	struct tl c = {.s = s, .n = n};
	struct row *rows = NULL;
	size_t nrows = 0, cap = 0;
	for (size_t k = 0; k < n; k++)
		for (size_t i = 0; i < s[k]->nthreads; i++) {
			const struct sd_thread *th = &s[k]->threads[i];
			struct row *r = NULL;
			for (size_t j = 0; j < nrows && !r; j++)
				if (rows[j].pid == s[k]->pid && rows[j].tid == th->tid)
					r = &rows[j];
			if (!r) {
				sd_grow(&rows, &cap, nrows + 1, sizeof(*rows));
				r = &rows[nrows++];
				r->pid = s[k]->pid;
				r->tid = th->tid;
			}
			r->name = th->name;
		}
	c.t0 = n ? s[0]->time : 0;
	double whole = n > 1 ? s[n - 1]->time - s[0]->time : 0;
	c.step = n > 1 && whole > 0 ? whole / (double)(n - 1) : 1.0;
	c.span = whole + c.step;
	c.x0 = TL_LABEL_W;
	c.w = TL_WIDTH - TL_LABEL_W - TL_RIGHT;

	size_t nmark = 0;
	for (size_t i = 0; f && i < f->n; i++)
		nmark +=
		    f->v[i].kind == SD_FINDING_DEADLOCK || f->v[i].kind == SD_FINDING_LOCK_HELD;
	int top = TL_AXIS_Y + 10;
	int rows_y = top + (int)nmark * TL_ROW_H + (nmark ? 6 : 0);
	int legend_y = rows_y + (int)nrows * TL_ROW_H + 14;
	int height = legend_y + 30;

	strbuf_addf(out,
		    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		    "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
		    "height=\"%d\" viewBox=\"0 0 %.0f %d\" font-family=\"monospace\" "
		    "font-size=\"11\">\n",
		    TL_WIDTH, height, TL_WIDTH, height);
	strbuf_adds(out,
		    "<style type=\"text/css\">\n"
		    "text { font-family: monospace; font-size: 11px; fill: #000; }\n"
		    "#title { font-size: 15px; }\n"
		    "g.bar rect:hover, g.marker rect:hover { stroke: #000; stroke-width: 1; }\n"
		    "</style>\n");
	strbuf_addf(out, "<rect width=\"%.0f\" height=\"%d\" fill=\"#ffffff\"/>\n", TL_WIDTH,
		    height);
	/* The title: what, whose, when. */
	struct strbuf t;
	strbuf_init(&t);
	strbuf_adds(&t, "Thread states");
	pid_t last = 0;
	size_t nproc = 0;
	for (size_t k = 0; k < n; k++) {
		if (s[k]->pid == last)
			continue;
		last = s[k]->pid;
		if (nproc++ < 2) {
			strbuf_adds(&t, nproc == 1 ? " of " : ", ");
			strbuf_add_escaped(&t, s[k]->comm ? s[k]->comm : "?");
			strbuf_addf(&t, " (PID %d)", (int)s[k]->pid);
		}
	}
	if (n) {
		char a[32], b[32], day[32];
		time_t sec = (time_t)s[0]->time;
		struct tm tm;
		gmtime_r(&sec, &tm);
		strftime(day, sizeof(day), "%Y-%m-%d", &tm);
		findings_clock(a, sizeof(a), s[0]->time);
		findings_clock(b, sizeof(b), s[n - 1]->time);
		strbuf_addf(&t, ": %zu snapshot%s, %s %s to %s UTC (%.1f s)", n, n == 1 ? "" : "s",
			    day, a, b, whole);
	}
	strbuf_addf(out, "<text id=\"title\" x=\"8\" y=\"%d\">", TL_TITLE_Y);
	add_label(out, t.buf, (size_t)((TL_WIDTH - 16) / 9.0));
	strbuf_adds(out, "</text>\n");
	strbuf_release(&t);
	strbuf_addf(out,
		    "<text id=\"subtitle\" x=\"8\" y=\"%d\" style=\"fill:#555\">one row per "
		    "thread; hover a bar for its state, lock, holder and time</text>\n",
		    TL_TITLE_Y + 16);
	if (n)
		axis(out, &c);
	markers(out, &c, f, top);

	size_t maxch = (size_t)((TL_LABEL_W - 16) / TL_CHAR_W);
	for (size_t j = 0; j < nrows; j++) {
		const struct row *r = &rows[j];
		int y = rows_y + (int)j * TL_ROW_H;
		struct strbuf l;
		strbuf_init(&l);
		strbuf_addf(&l, "%d ", (int)r->tid);
		strbuf_add_escaped(&l, r->name ? r->name : "");
		strbuf_addf(out, "<text class=\"row\" x=\"8\" y=\"%d\">", y + 12);
		add_label(out, l.buf, maxch);
		strbuf_adds(out, "</text>\n");
		strbuf_release(&l);
		for (size_t k = 0; k < n;) {
			const struct sd_thread *th = thread_at(&c, k, r);
			size_t e = k + 1;
			while (e < n && same_bar(thread_at(&c, e, r), th))
				e++;
			if (th) {
				double a = xat(&c, cell_start(&c, k)),
				       b = xat(&c, cell_end(&c, e - 1));
				char letter = timeline_letter(th);
				strbuf_adds(out, "<g class=\"bar\"><title>");
				struct strbuf h;
				strbuf_init(&h);
				strbuf_addf(&h, "%d \"", (int)r->tid);
				strbuf_add_escaped(&h, th->name ? th->name : "");
				strbuf_adds(&h, "\": ");
				if (letter == 'L' || letter == 'C') {
					strbuf_adds(&h, "waiting for ");
					format_text_wait(&h, s[e - 1], th);
				} else {
					strbuf_adds(&h, timeline_state_name(letter));
					if (th->syscall_nr >= 0 && letter == 'S') {
						const char *nm =
						    procfs_syscall_name(th->syscall_nr);
						if (nm)
							strbuf_addf(&h, " (%s)", nm);
					}
				}
				strbuf_adds(&h, ", ");
				span_text(&h, &c, k, e - 1);
				add_xml(out, h.buf);
				strbuf_release(&h);
				strbuf_addf(out,
					    "</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" "
					    "height=\"%d\" fill=\"%s\"/></g>\n",
					    a, y + 2, b - a > 0.5 ? b - a : 0.5, TL_ROW_H - 3,
					    state_color(letter));
			}
			k = e;
		}
	}
	/* Deadlocked threads: their rows outlined over the deadlock. */
	for (size_t i = 0; f && i < f->n; i++) {
		const struct sd_finding *x = &f->v[i];
		if (x->kind != SD_FINDING_DEADLOCK)
			continue;
		double a = xat(&c, cell_start(&c, x->first)), b = xat(&c, cell_end(&c, x->last));
		for (size_t j = 0; j < nrows; j++)
			for (size_t m = 0; m < x->ntids; m++)
				if (rows[j].pid == x->pid && rows[j].tid == x->tids[m])
					strbuf_addf(
					    out,
					    "<rect class=\"deadlocked\" x=\"%.2f\" y=\"%d\" "
					    "width=\"%.2f\" height=\"%d\" fill=\"none\" "
					    "stroke=\"#b00020\" stroke-width=\"2\"/>\n",
					    a, rows_y + (int)j * TL_ROW_H + 1, b - a, TL_ROW_H - 1);
	}
	/* The legend. */
	static const char letters[] = "RrSLCDTZx";
	double lx = 8;
	strbuf_adds(out, "<g id=\"legend\">");
	for (const char *p = letters; *p; p++) {
		const char *nm = timeline_state_name(*p);
		strbuf_addf(out,
			    "<rect x=\"%.0f\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\" "
			    "stroke=\"#888\"/><text x=\"%.0f\" y=\"%d\">%s</text>",
			    lx, legend_y, state_color(*p), lx + 16, legend_y + 10, nm);
		lx += 16 + TL_CHAR_W * (double)strlen(nm) + 14;
	}
	if (nmark)
		strbuf_addf(
		    out,
		    "<rect x=\"%.0f\" y=\"%d\" width=\"12\" height=\"12\" fill=\"#b00020\"/>"
		    "<text x=\"%.0f\" y=\"%d\">deadlock</text>"
		    "<rect x=\"%.0f\" y=\"%d\" width=\"12\" height=\"12\" fill=\"#f08c00\"/>"
		    "<text x=\"%.0f\" y=\"%d\">lock held</text>",
		    lx, legend_y, lx + 16, legend_y + 10, lx + 90, legend_y, lx + 106,
		    legend_y + 10);
	strbuf_adds(out, "</g>\n</svg>\n");
	free(rows);
}
