// SPDX-License-Identifier: MIT
// Text rendering of snapshots: one header per process, one per thread, one
// line per frame. Strings from the target are escaped.
#include <inttypes.h>
#include <string.h>

#include "analyze.h"
#include "format.h"
#include "locks.h"

#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_DIM "\033[2m"
#define C_FUNC "\033[33m"
#define C_WARN "\033[31m"

static const char *col(const struct sd_render_opts *o, const char *c)
{
	return o && o->color ? c : "";
}

const struct sd_thread *snapshot_find_thread(const struct sd_snapshot *s, pid_t tid)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	return NULL;
}

static const char *base(const char *p)
{
	const char *b = p ? strrchr(p, '/') : NULL;
	return b ? b + 1 : p;
}

void format_text_frame(struct strbuf *out, size_t idx, const struct sd_frame *f,
		       const struct sd_render_opts *o)
{
	strbuf_addf(out, "  #%-3zu 0x%016" PRIx64 " ", idx, f->pc);
	if (f->flags & SD_FRAME_INLINED)
		strbuf_adds(out, "[inlined] ");
	strbuf_adds(out, col(o, C_FUNC));
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
		if (f->line)
			strbuf_addf(out, ":%d", f->line);
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
	if (o && o->name) {
		strbuf_adds(out, " \"");
		strbuf_add_escaped(out, o->name);
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

void format_text_thread_header(struct strbuf *out, const struct sd_snapshot *s,
			       const struct sd_thread *th, const struct sd_render_opts *o)
{
	strbuf_addf(out, "%sThread %d \"", col(o, C_BOLD), (int)th->tid);
	strbuf_add_escaped(out, th->name ? th->name : "");
	strbuf_addf(out, "\"%s %c", col(o, C_RESET), th->state ? th->state : '?');
	if (th->status != SD_THREAD_OK) {
		strbuf_addf(out, " %s", col(o, C_WARN));
		strbuf_add_escaped(out, th->error ? th->error : "unreadable");
		strbuf_adds(out, col(o, C_RESET));
		return;
	}
	int plain = th->wait.kind == SD_WAIT_FUTEX || th->wait.kind == SD_WAIT_IDLE;
	if (is_lock_wait(th->wait.kind) && !plain) {
		strbuf_adds(out, " waiting for ");
		format_text_wait(out, s, th);
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

void format_text_snapshot(struct strbuf *out, const struct sd_snapshot *s,
			  const struct sd_render_opts *o)
{
	strbuf_addf(out, "%sPID %d (", col(o, C_BOLD), (int)s->pid);
	strbuf_add_escaped(out, s->comm ? s->comm : "?");
	strbuf_addf(out, ")%s %zu thread%s, paused %.2f ms%s", col(o, C_RESET), s->nthreads,
		    s->nthreads == 1 ? "" : "s", (double)s->pause_us / 1000.0,
		    s->per_thread ? " (per thread)" : "");
	if (s->state == 'T' || s->state == 't')
		strbuf_adds(out, ", process is stopped (left stopped)");
	if (s->partial)
		strbuf_adds(out, ", partial");
	strbuf_adds(out, "\n");
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
	}
	if (o && o->verbose)
		strbuf_addf(out,
			    "  capture %.2f ms (%.1f KiB of stack), unwind %.2f ms, symbolize %.2f ms, "
			    "lock inference %.2f ms\n",
			    (double)s->capture_us / 1000.0, (double)s->stack_bytes / 1024.0,
			    (double)s->unwind_us / 1000.0, (double)s->symbolize_us / 1000.0,
			    (double)s->infer_us / 1000.0);
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
		if (i + 1 < s->nthreads)
			strbuf_adds(out, "\n");
	}
}
