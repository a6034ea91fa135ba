// SPDX-License-Identifier: MIT
// The screen of `stackdump top` (format-top.h).
#include <stdlib.h>
#include <string.h>

#include "format-top.h"
#include "format.h"

/* End a line of the screen: at a terminal, erase what the last screen left
 * to its right, instead of clearing the screen first (no flicker). */
static void eol(struct strbuf *sb, int tty)
{
	strbuf_adds(sb, tty ? "\033[K\n" : "\n");
}

/* Append LINE (escaped already, no newline) to SB as one or more lines
 * of at most COLS columns (0: as it is), each ended by eol; returns how
 * many lines it took. */
static int emit(struct strbuf *sb, struct strbuf *line, int cols, int tty)
{
	format_fit_width(line, 0, cols);
	int n = 0;
	const char *s = line->buf, *end = line->buf + line->len;
	while (s <= end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t len = nl ? (size_t)(nl - s) : (size_t)(end - s);
		strbuf_add(sb, s, len);
		eol(sb, tty);
		n++;
		if (!nl)
			break;
		s = nl + 1;
	}
	line->len = 0;
	line->buf[0] = '\0';
	return n;
}

/* Append the pieces SEG[0..N) to LINE joined by ", ", starting a new
 * line (with "\n") before a piece that would take it past COLS columns
 * (0: no limit): a header broken between its phrases, not inside one. */
static void pack(struct strbuf *line, const char *const *seg, size_t n, int cols)
{
	size_t at = 0; /* where the current line starts */
	for (size_t i = 0; i < n; i++) {
		if (!seg[i] || !*seg[i])
			continue;
		if (line->len > at) {
			if (cols > 0 && line->len - at + 2 + strlen(seg[i]) > (size_t)cols) {
				strbuf_adds(line, ",\n");
				at = line->len;
			} else {
				strbuf_adds(line, ", ");
			}
		}
		strbuf_adds(line, seg[i]);
	}
}

/* Rows of top from which threads alike in a row fold into one. */
#define TOP_FOLD_FROM 4

/* Threads TH[I..] alike (shown, same state and function now, holding
 * nothing, same on-CPU share): how many in a row. */
static size_t alike_run(const struct top_thread *th, size_t nth, size_t i,
			const struct topview *view)
{
	size_t n = 1;
	for (size_t k = i + 1; k < nth; k++) {
		const struct top_thread *a = &th[i], *b = &th[k];
		if (!b->seen || (!view->show_idle && b->idle && !b->on_cpu))
			break;
		if (a->holding || b->holding || strcmp(a->state, b->state) || a->now != b->now ||
		    top_oncpu(a) != top_oncpu(b))
			break;
		n++;
	}
	return n;
}

/* The names of TH[I..I+N) as "http-worker-0..49" when they differ only in
 * a trailing number, else the first name and "+N-1". */
static void run_name(struct strbuf *out, const struct top_thread *th, size_t i, size_t n)
{
	const char *a = th[i].name;
	size_t pre = strlen(a);
	while (pre && a[pre - 1] >= '0' && a[pre - 1] <= '9')
		pre--;
	long lo = -1, hi = -1;
	int same = pre < strlen(a);
	for (size_t k = i; same && k < i + n; k++) {
		const char *b = th[k].name, *d = b + pre;
		char *end;
		if (strncmp(a, b, pre) || !*d || *d < '0' || *d > '9') {
			same = 0;
			break;
		}
		long v = strtol(d, &end, 10);
		if (*end)
			same = 0;
		if (lo < 0 || v < lo)
			lo = v;
		if (v > hi)
			hi = v;
	}
	if (same && (size_t)(hi - lo + 1) == n) {
		strbuf_add_escapedn(out, a, pre);
		strbuf_addf(out, "%ld..%ld", lo, hi);
	} else {
		strbuf_add_escaped(out, a);
		strbuf_addf(out, " +%zu", n - 1);
	}
}

void top_screen(struct strbuf *sb, struct sd_profile *p, pid_t pid, const char *comm,
		   struct top_thread *th, size_t nth, double elapsed, int rows, int cols, int limit,
		   int tty,
		   const struct topview *view, const uint64_t *idle, size_t nidle)
{
	uint64_t total = profile_total(p), idle_total = 0;
	for (size_t i = 0; idle && !view->show_idle && i < nidle; i++)
		idle_total += idle[i];
	uint64_t shown_total = total - idle_total;
	int used = 0;
	/* Home, then overwrite: the old screen stays until each line is
	 * replaced. */
	strbuf_adds(sb, tty ? "\033[H" : "\n");
	struct strbuf line, a, b, c, d;
	strbuf_init(&line);
	strbuf_init(&a);
	strbuf_init(&b);
	strbuf_init(&c);
	strbuf_init(&d);
	strbuf_addf(&a, "stackdump top: %d \"", (int)pid);
	strbuf_add_escaped(&a, comm ? comm : "?");
	double got = elapsed > 0 ? (double)p->samples / elapsed : 0.0;
	strbuf_addf(&a, "\"  %.1f s", elapsed);
	strbuf_addf(&b, "%llu samples (%.1f Hz", (unsigned long long)p->samples, got);
	/* The rate got beside the rate asked when sampling was slowed. */
	if (p->rate_note && p->rate_asked > 0) {
		strbuf_addf(&b, " of %.1f Hz asked: ", p->rate_asked);
		strbuf_add_escaped(&b, p->rate_note);
	}
	strbuf_adds(&b, ")");
	strbuf_addf(&c, "engine %s", p->engine ? p->engine : "ptrace");
	strbuf_addf(&d, "longest pause %.2f ms", (double)p->max_pause_us / 1000.0);
	char lost[64] = "";
	if (p->stale_stacks)
		snprintf(lost, sizeof(lost), "%llu stacks from an earlier tick (samples lost)",
			 (unsigned long long)p->stale_stacks);
	const char *seg[] = {a.buf, b.buf, c.buf, d.buf, lost};
	pack(&line, seg, sizeof(seg) / sizeof(seg[0]), cols);
	used += emit(sb, &line, cols, tty);
	strbuf_release(&a);
	strbuf_release(&b);
	strbuf_release(&c);
	strbuf_release(&d);
	size_t live = 0, running = 0, nidle_threads = 0;
	for (size_t i = 0; i < nth; i++)
		if (th[i].seen) {
			live++;
			running += !strcmp(th[i].state, "running") || !strcmp(th[i].state, "runnable");
			nidle_threads += th[i].idle && !th[i].on_cpu;
		}
	strbuf_addf(&line, "threads: %zu, %zu on a CPU, %zu off, %zu idle; on-CPU share of samples "
			   "%.1f%%",
		    live, running, live - running, nidle_threads,
		    total ? 100.0 * (double)p->on_cpu / (double)total : 0.0);
	used += emit(sb, &line, cols, tty);
	if (tty && view->help)
		strbuf_adds(&line, "keys: c sort by CPU, n by name, t by TID; i idle threads "
				   "shown/folded; q quit; h this help");
	else if (tty)
		strbuf_addf(&line, "sorted by %s; idle threads %s (i); h for keys, q quits",
			    view->sort == SORT_CPU ? "activity" : view->sort == SORT_NAME ? "name" : "TID",
			    view->show_idle ? "shown" : "folded");
	used += emit(sb, &line, cols, tty);
	for (const char *n = view->notes; n && *n;) {
		const char *nl = strchr(n, '\n');
		size_t len = nl ? (size_t)(nl - n) : strlen(n);
		strbuf_add(&line, n, len);
		used += emit(sb, &line, cols, tty);
		n += len + (nl != NULL);
	}
	/* A narrow terminal gets a narrower STATE column (most states are
	 * one word: "write", "mutex", "epoll_wait"), leaving room to NOW. */
	int narrow = cols > 0 && cols < 100, tw = narrow ? 7 : 8, sw = narrow ? 10 : 18;
	strbuf_addf(&line, "%*s  %-16s %-*s %6s  %s", tw, "TID", "NAME", sw, "STATE", "ONCPU", "NOW");
	used += emit(sb, &line, cols, tty);
	int thread_rows = rows > 0 ? rows / 2 - used : (int)nth + 1;
	if (thread_rows < 3)
		thread_rows = 3;
	int shown = 0;
	size_t folded = 0, hidden = 0;
	for (size_t i = 0; i < nth; i++) {
		if (!th[i].seen)
			continue;
		/* Idle threads (waiting for work, never on a CPU here) fold
		 * into one line unless asked for. */
		if (!view->show_idle && th[i].idle && !th[i].on_cpu) {
			folded++;
			continue;
		}
		if (shown >= thread_rows) {
			hidden++;
			continue;
		}
		/* At a terminal, 4 or more alike in a row (a pool parked in
		 * one place) are one row: the holder stays on the screen. */
		size_t run = tty && view->sort == SORT_CPU ? alike_run(th, nth, i, view) : 1;
		struct strbuf nm;
		strbuf_init(&nm);
		if (run >= TOP_FOLD_FROM)
			run_name(&nm, th, i, run);
		else
			strbuf_add_escaped(&nm, th[i].name);
		strbuf_addf(&line, run >= TOP_FOLD_FROM ? "%*d  %-16s %-*.*s %5.0f%%  "
							 : "%*d  %-16.16s %-*.*s %5.0f%%  ",
			    tw, (int)th[i].tid, nm.buf, sw, sw, th[i].state, 100.0 * top_oncpu(&th[i]));
		strbuf_release(&nm);
		if (run >= TOP_FOLD_FROM) {
			strbuf_add_escaped(&line, th[i].now ? th[i].now : "-");
			strbuf_addf(&line, " (%zu threads alike)", run);
			shown += emit(sb, &line, cols, tty);
			i += run - 1;
			continue;
		}
		if (th[i].holds[0]) {
			/* What it holds first: the reason it heads the list. */
			strbuf_add_escaped(&line, th[i].holds);
			strbuf_adds(&line, "; in ");
		}
		strbuf_add_escaped(&line, th[i].now ? th[i].now : "-");
		shown += emit(sb, &line, cols, tty);
	}
	if (hidden) {
		strbuf_addf(&line, "%8s  ... %zu more threads", "", hidden);
		shown += emit(sb, &line, cols, tty);
	}
	if (folded) {
		strbuf_addf(&line, "%8s  ... %zu idle thread%s (waiting for work)%s", "", folded,
			    folded == 1 ? "" : "s", tty ? ": i shows them" : "");
		shown += emit(sb, &line, cols, tty);
	}
	used += shown;
	size_t nf;
	struct top_func *fv = top_functions(p, view->show_idle ? NULL : idle, nidle, &nf);
	eol(sb, tty);
	strbuf_addf(sb, "%6s %6s  %s", "%OWN", "%TOTAL",
		    view->show_idle ? "FUNCTION (all samples since start)"
				    : "FUNCTION (samples since start, idle left out)");
	eol(sb, tty);
	used += 2;
	int frows = limit > 0 ? limit : (rows > 0 ? rows - used - 1 : 20);
	if (frows < 3)
		frows = 3;
	for (size_t i = 0, n = 0; i < nf && (int)n < frows; i++) {
		strbuf_addf(&line, "%5.1f%% %5.1f%%  ",
			    shown_total ? 100.0 * (double)fv[i].own / (double)shown_total : 0.0,
			    shown_total ? 100.0 * (double)fv[i].total / (double)shown_total : 0.0);
		strbuf_add_escaped(&line, fv[i].name);
		n += (size_t)emit(sb, &line, cols, tty);
	}
	if (!nf) {
		strbuf_adds(sb, "  (no samples yet)");
		eol(sb, tty);
	}
	/* Whatever the last screen had below this one goes. */
	if (tty)
		strbuf_adds(sb, "\033[J");
	strbuf_release(&line);
	free(fv);
}