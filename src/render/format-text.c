// SPDX-License-Identifier: MIT
// Text rendering of snapshots: one header per process, one per thread, one
// line per frame. Strings from the target are escaped.
#include <inttypes.h>
#include <string.h>

#include "analyze.h"
#include "format.h"
#include "format-go.h"
#include "format-tokio.h"
#include "group.h"
#include "locks.h"

#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_DIM "\033[2m"
#define C_OWN "\033[1;33m"  /* a function of the program itself */
#define C_WARN "\033[31m"
#define C_LOCK "\033[1;31m" /* waiting for a lock someone holds */
#define C_IDLE "\033[36m"   /* waiting for work (condvar) */

static const char *col(const struct sd_render_opts *o, const char *c)
{
	return o && o->color ? c : "";
}

static const char *base(const char *p)
{
	const char *b = p ? strrchr(p, '/') : NULL;
	return b ? b + 1 : p;
}

/* V in decimal, written backwards so that it ends just before END;
 * returns where it starts. */
static char *decimal_before(char *end, uint64_t v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

void format_text_frame(struct strbuf *out, size_t idx, const struct sd_frame *f,
		       const struct sd_render_opts *o)
{
	/* "  #%-3zu 0x%016lx ", written by hand: a dump of a thousand
	 * threads has tens of thousands of these lines. */
	char pre[48], *w = pre;
	*w++ = ' ';
	*w++ = ' ';
	*w++ = '#';
	char num[24], *d = decimal_before(num + sizeof(num), idx);
	size_t nd = (size_t)(num + sizeof(num) - d);
	memcpy(w, d, nd);
	w += nd;
	for (size_t k = nd; k < 3; k++)
		*w++ = ' ';
	*w++ = ' ';
	*w++ = '0';
	*w++ = 'x';
	for (int sh = 60; sh >= 0; sh -= 4)
		*w++ = "0123456789abcdef"[(f->pc >> sh) & 0xf];
	*w++ = ' ';
	strbuf_add(out, pre, (size_t)(w - pre));
	if (f->flags & SD_FRAME_INLINED)
		strbuf_adds(out, "[inlined] ");
	/* The program's own frames stand out from the libraries' ones: that
	 * is where a reader starts. */
	int own = o && o->main_module && f->module && !strcmp(f->module, o->main_module);
	if (own)
		strbuf_adds(out, col(o, C_OWN));
	if (f->function) {
		strbuf_add_escaped(out, f->function);
		if (!(f->flags & SD_FRAME_DEBUGINFO) && f->symoff)
			strbuf_addf(out, "+0x%" PRIx64, f->symoff);
	} else {
		strbuf_adds(out, "??");
	}
	strbuf_adds(out, col(o, C_RESET));
	strbuf_adds(out, col(o, C_DIM));
	if (f->module) {
		strbuf_adds(out, " (");
		strbuf_add_escaped(out, f->module);
		if (!f->function)
			strbuf_addf(out, "+0x%" PRIx64, f->offset);
		strbuf_adds(out, ")");
	} else {
		strbuf_adds(out, " (unknown)");
	}
	strbuf_adds(out, col(o, C_RESET));
	if (f->file && !(o && o->no_source)) {
		strbuf_adds(out, " at ");
		strbuf_add_escaped(out, base(f->file));
		if (f->line > 0) {
			char ln[16], *e = ln + sizeof(ln), *b = decimal_before(e, (uint64_t)f->line);
			*--b = ':';
			strbuf_add(out, b, (size_t)(e - b));
		} else if (f->line) {
			strbuf_addf(out, ":%d", f->line);
		}
	}
	if (f->flags & SD_FRAME_SIGNAL)
		strbuf_adds(out, " <signal handler called>");
	if (f->flags & SD_FRAME_FP)
		strbuf_adds(out, " [frame pointer]");
	strbuf_adds(out, "\n");
}

void format_text_wait(struct strbuf *out, const struct sd_snapshot *s, const struct sd_thread *th)
{
	const struct sd_wait *w = &th->wait;
	int owned = w->owner_known && w->owner > 0;
	const struct sd_thread *o = owned ? snapshot_find_thread(s, w->owner) : NULL;
	const char *oname = o ? o->name : NULL;
	/* A holder outside a --name/--tid selection is still named. */
	for (size_t i = 0; owned && !o && i < s->noutside; i++)
		if (s->outside[i].tid == w->owner)
			oname = s->outside[i].name;
	if (w->kind == SD_WAIT_JOIN && owned) {
		/* The address of a join wait is the joined thread's tid
		 * field: the thread says more. */
		strbuf_addf(out, "join of %d", (int)w->owner);
	} else {
		strbuf_addf(out, "%s", sd_wait_kind_name(w->kind));
		if (w->address)
			strbuf_addf(out, " 0x%" PRIx64, w->address);
		else if (w->kind == SD_WAIT_MONITOR)
			strbuf_adds(out, " (which one is not known)");
		if (w->symbol) {
			strbuf_adds(out, " <");
			strbuf_add_escaped(out, w->symbol);
			strbuf_adds(out, ">");
		}
		if (owned)
			strbuf_addf(out, " held by %d", (int)w->owner);
	}
	if (oname) {
		strbuf_adds(out, " \"");
		strbuf_add_escaped(out, oname);
		strbuf_adds(out, "\"");
	}
	if (w->note) {
		strbuf_adds(out, " (");
		strbuf_add_escaped(out, w->note);
		strbuf_adds(out, ")");
	}
}

/* The jstack-style lines under frame IDX of TH (IDX -1: the holds no
 * frame was found for, after the last frame): what that frame holds. */
void format_text_holds(struct strbuf *out, const struct sd_thread *th, long idx,
		       const struct sd_render_opts *o)
{
	for (size_t i = 0; i < th->nholds; i++) {
		const struct sd_hold *h = &th->holds[i];
		int frame = h->frame >= 0 && (size_t)h->frame < th->nframes ? h->frame : -1;
		if (frame != idx)
			continue;
		strbuf_addf(out, "  %s        - ", col(o, C_DIM));
		if (h->evidence != SD_EVIDENCE_STACK)
			strbuf_adds(out, "holds ");
		else if (h->ncandidates > 1)
			strbuf_addf(out, "may hold (inferred, one of %zu candidates) ",
				    h->ncandidates);
		else
			strbuf_adds(out, "holds (inferred) ");
		strbuf_addf(out, "%s 0x%" PRIx64, locks_kind_name(h->kind), h->address);
		if (h->symbol) {
			strbuf_adds(out, " <");
			strbuf_add_escaped(out, h->symbol);
			strbuf_adds(out, ">");
		}
		if (h->mode)
			strbuf_addf(out, " for %s", !strcmp(h->mode, "read") ? "reading" : "writing");
		if (frame < 0)
			strbuf_adds(out, " (no frame holds a reference to it)");
		strbuf_addf(out, "%s\n", col(o, C_RESET));
	}
}

static int is_lock_wait(enum sd_wait_kind k)
{
	return k >= SD_WAIT_MUTEX && k <= SD_WAIT_FUTEX;
}

/* The part of a thread header after the name: state letter, then what
 * the thread does or waits for. */
static void thread_state(struct strbuf *out, const struct sd_snapshot *s,
			 const struct sd_thread *th, const struct sd_render_opts *o);

void format_text_thread_header(struct strbuf *out, const struct sd_snapshot *s,
			       const struct sd_thread *th, const struct sd_render_opts *o)
{
	strbuf_addf(out, "%sThread %d \"", col(o, C_BOLD), (int)th->tid);
	strbuf_add_escaped(out, th->name ? th->name : "");
	strbuf_addf(out, "\"%s", col(o, C_RESET));
	thread_state(out, s, th, o);
	if (th->goid)
		strbuf_addf(out, " [goroutine %" PRIu64 "]", th->goid);
	uint64_t task = format_tokio_task_of(s, th->tid);
	if (task)
		strbuf_addf(out, " [task %" PRIu64 "]", task);
}

static void thread_state(struct strbuf *out, const struct sd_snapshot *s,
			 const struct sd_thread *th, const struct sd_render_opts *o)
{
	strbuf_addf(out, " %c", th->state ? th->state : '?');
	if (th->status != SD_THREAD_OK) {
		strbuf_addf(out, " %s", col(o, C_WARN));
		strbuf_add_escaped(out, th->error ? th->error : "unreadable");
		strbuf_adds(out, col(o, C_RESET));
		return;
	}
	int plain = th->wait.kind == SD_WAIT_FUTEX || th->wait.kind == SD_WAIT_IDLE;
	if (is_lock_wait(th->wait.kind) && !plain) {
		strbuf_addf(out, " %swaiting for ",
			    col(o, locks_is_idle(th->wait.kind) ? C_IDLE : C_LOCK));
		format_text_wait(out, s, th);
		strbuf_adds(out, col(o, C_RESET));
	} else {
		const char *st = analyze_state_text(th);
		if (*st)
			strbuf_addf(out, " %s", st);
		if (plain && th->wait.address)
			strbuf_addf(out, " 0x%" PRIx64, th->wait.address);
		if (plain && th->wait.note) {
			strbuf_adds(out, " (");
			strbuf_add_escaped(out, th->wait.note);
			strbuf_adds(out, ")");
		}
	}
	if (th->state == 'D' && th->wchan)
		strbuf_addf(out, " (wchan %s)", th->wchan);
	if (o && o->verbose)
		strbuf_addf(out, " [paused %.2f ms]", (double)th->pause_us / 1000.0);
}

/* The process line; NGROUPS > 0 adds the number of distinct stacks. */
static void process_header(struct strbuf *out, const struct sd_snapshot *s,
			   const struct sd_render_opts *o, size_t ngroups)
{
	strbuf_addf(out, "%sPID %d (", col(o, C_BOLD), (int)s->pid);
	strbuf_add_escaped(out, s->comm ? s->comm : "?");
	strbuf_addf(out, ")%s %zu", col(o, C_RESET), s->nthreads);
	/* A selection says what it was taken from: "60 of 201 threads". */
	if (s->threads_total > s->nthreads)
		strbuf_addf(out, " of %zu", s->threads_total);
	strbuf_addf(out, " thread%s", (s->threads_total > s->nthreads ? s->threads_total
								   : s->nthreads) == 1
					  ? ""
					  : "s");
	if (ngroups)
		strbuf_addf(out, ", %zu distinct stack%s", ngroups, ngroups == 1 ? "" : "s");
	if (s->core) {
		/* Nothing was paused: the process is gone, its core remains. */
		strbuf_adds(out, ", from core ");
		strbuf_add_escaped(out, s->core);
	} else {
		strbuf_addf(out, ", paused %.2f ms%s", (double)s->pause_us / 1000.0,
			    s->per_thread ? " (per thread)" : "");
	}
	if (s->state == 'T' || s->state == 't')
		strbuf_adds(out, ", process is stopped (left stopped)");
	if (s->partial)
		strbuf_adds(out, ", partial");
	strbuf_adds(out, "\n");
	if (s->core && s->core_args && *s->core_args) {
		strbuf_adds(out, "  command: ");
		strbuf_add_escaped(out, s->core_args);
		strbuf_adds(out, "\n");
	}
	if (s->crash.text) {
		strbuf_addf(out, "  %scrash: ", col(o, C_BOLD));
		strbuf_add_escaped(out, s->crash.text);
		strbuf_addf(out, "%s\n", col(o, C_RESET));
	}
	for (const char *n = s->core_notes; n && *n;) {
		const char *e = strchr(n, '\n');
		size_t len = e ? (size_t)(e - n) : strlen(n);
		strbuf_adds(out, "  note: ");
		strbuf_add_escapedn(out, n, len);
		strbuf_adds(out, "\n");
		n = e ? e + 1 : n + len;
	}
	if (s->stack_cut)
		strbuf_addf(out,
			    "  note: %zu thread%s got a shorter stack copy: all copies together are "
			    "capped at %zu %s (--stack-total)\n",
			    s->stack_cut, s->stack_cut == 1 ? "" : "s",
			    s->stack_total % (1u << 20) ? s->stack_total >> 10 : s->stack_total >> 20,
			    s->stack_total % (1u << 20) ? "KiB" : "MiB");
	if (o && o->verbose && !s->per_thread)
		strbuf_addf(out,
			    "  pause: seize %.2f ms, stop %.2f ms, memory copy %.2f ms, detach %.2f ms\n",
			    (double)s->seize_us / 1000.0, (double)s->stop_us / 1000.0,
			    (double)s->memcopy_us / 1000.0,
			    (double)(s->detach_us - s->memcopy_us) / 1000.0);
	if (o && o->verbose && !s->per_thread) {
		strbuf_addf(out,
			    "  threads: %zu frozen, %zu read without stopping, %zu reused, %zu retried, "
			    "%zu stopped for registers\n",
			    s->nfrozen, s->nasleep, s->nreused, s->nretried, s->nregstops);
		if (s->capture_note)
			strbuf_addf(out, "  note: %s\n", s->capture_note);
		if (s->proof)
			strbuf_addf(out, "  sleepers proven off CPU by %s\n", s->proof);
	}
	if (o && o->verbose)
		strbuf_addf(out,
			    "  capture %.2f ms (%.1f KiB of stack), unwind %.2f ms, symbolize %.2f ms, "
			    "lock inference %.2f ms\n",
			    (double)s->capture_us / 1000.0, (double)s->stack_bytes / 1024.0,
			    (double)s->unwind_us / 1000.0, (double)s->symbolize_us / 1000.0,
			    (double)s->infer_us / 1000.0);
}

/* O with the program's module named, for the colour of its frames. */
static struct sd_render_opts with_main(const struct sd_snapshot *s, const struct sd_render_opts *o)
{
	struct sd_render_opts r = {0};
	if (o)
		r = *o;
	if (!r.main_module && s->exe) {
		const char *b = strrchr(s->exe, '/');
		r.main_module = b ? b + 1 : s->exe;
	}
	return r;
}

void format_text_snapshot(struct strbuf *out, const struct sd_snapshot *s,
			  const struct sd_render_opts *o0)
{
	struct sd_render_opts ro = with_main(s, o0);
	const struct sd_render_opts *o = &ro;
	if (s->go_read) {
		/* A Go program: its goroutines first, then its threads. */
		format_go_text(out, s, o);
		strbuf_adds(out, "\n");
	}
	if (o->group) {
		format_text_grouped(out, s, o);
		format_tokio_text(out, s, o);
		return;
	}
	process_header(out, s, o, 0);
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct sd_thread *th = &s->threads[i];
		format_text_thread_header(out, s, th, o);
		strbuf_adds(out, "\n");
		for (size_t k = 0; k < th->nframes; k++) {
			format_text_frame(out, k, &th->frames[k], o);
			format_text_holds(out, th, (long)k, o);
		}
		format_text_holds(out, th, -1, o);
		if (th->unwind_stop && th->status == SD_THREAD_OK)
			strbuf_addf(out, "  %s-- unwinding stopped: %s%s\n", col(o, C_WARN),
				    th->unwind_stop, col(o, C_RESET));
		if (th->live_reads && th->status == SD_THREAD_OK)
			strbuf_addf(out,
				    "  %s-- %u stack word%s read after the thaw, outside the copy: "
				    "frames found from %s may be out of date%s\n",
				    col(o, C_WARN), th->live_reads, th->live_reads == 1 ? "" : "s",
				    th->live_reads == 1 ? "it" : "them", col(o, C_RESET));
		if (i + 1 < s->nthreads)
			strbuf_adds(out, "\n");
	}
	/* A Tokio program: its tasks after its threads. */
	format_tokio_text(out, s, o);
}

/* Names and TIDs of a group are cut after this many bytes: the header of
 * a 1,000-thread pool stays one line. */
#define GROUP_LIST_MAX 72

void format_text_grouped(struct strbuf *out, const struct sd_snapshot *s,
			 const struct sd_render_opts *o0)
{
	struct sd_render_opts ro = with_main(s, o0);
	const struct sd_render_opts *o = &ro;
	struct sd_grouping g;
	group_snapshot(s, &g);
	process_header(out, s, o, g.n);
	for (size_t k = 0; k < g.n; k++) {
		const struct sd_group *gr = &g.v[k];
		const struct sd_thread *th = &s->threads[gr->idx[0]];
		if (gr->n == 1) {
			format_text_thread_header(out, s, th, o);
		} else {
			strbuf_addf(out, "%s%zu threads \"", col(o, C_BOLD), gr->n);
			group_names(out, s, gr, GROUP_LIST_MAX);
			strbuf_addf(out, "\"%s", col(o, C_RESET));
			thread_state(out, s, th, o);
			strbuf_adds(out, "\n  TIDs ");
			group_tids(out, s, gr, GROUP_LIST_MAX);
		}
		strbuf_adds(out, "\n");
		for (size_t f = 0; f < th->nframes; f++) {
			format_text_frame(out, f, &th->frames[f], o);
			format_text_holds(out, th, (long)f, o);
		}
		format_text_holds(out, th, -1, o);
		if (th->unwind_stop && th->status == SD_THREAD_OK)
			strbuf_addf(out, "  %s-- unwinding stopped: %s%s\n", col(o, C_WARN),
				    th->unwind_stop, col(o, C_RESET));
		if (k + 1 < g.n)
			strbuf_adds(out, "\n");
	}
	group_release(&g);
}
