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

/* The name of F as text shows it: short unless asked for in full, the
 * offset when there is no debug info, "??" when unknown. */
static void frame_name(struct strbuf *out, const struct sd_frame *f, const struct sd_render_opts *o)
{
	if (!f->function) {
		strbuf_adds(out, "??");
		return;
	}
	if (o && !o->full_names)
		format_short_name(out, f->function);
	else
		strbuf_add_escaped(out, f->function);
	if (!(f->flags & SD_FRAME_DEBUGINFO) && f->symoff)
		strbuf_addf(out, "+0x%" PRIx64, f->symoff);
}

/* " (module) at file:line" and the frame's marks, without colour. */
static void frame_where(struct strbuf *out, const struct sd_frame *f, const struct sd_render_opts *o)
{
	if (f->module) {
		strbuf_adds(out, " (");
		strbuf_add_escaped(out, f->module);
		if (!f->function)
			strbuf_addf(out, "+0x%" PRIx64, f->offset);
		strbuf_adds(out, ")");
	} else {
		strbuf_adds(out, " (unknown)");
	}
	if (f->file && !(o && o->no_source)) {
		strbuf_adds(out, " at ");
		strbuf_add_escaped(out, format_base_name(f->file));
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
}

/* Terminals narrower than this show frames without their address. */
#define ADDR_WIDTH 120

/* One frame line; LAST > IDX: the line stands for frames IDX..LAST of a
 * recursion, COUNT times. */
static void frame_line(struct strbuf *out, size_t indent, size_t idx, size_t last,
		       const struct sd_frame *f, const struct sd_render_opts *o)
{
	/* "  #%-3zu 0x%016lx ", written by hand: a dump of a thousand
	 * threads has tens of thousands of these lines. */
	char pre[64], *w = pre;
	*w++ = ' ';
	*w++ = ' ';
	*w++ = '#';
	char num[24], *d = decimal_before(num + sizeof(num), idx);
	size_t nd = (size_t)(num + sizeof(num) - d);
	memcpy(w, d, nd);
	w += nd;
	if (last > idx) {
		*w++ = '-';
		*w++ = '#';
		d = decimal_before(num + sizeof(num), last);
		size_t nl = (size_t)(num + sizeof(num) - d);
		memcpy(w, d, nl);
		w += nl;
		nd += nl + 2;
	}
	for (size_t k = nd; k < 3; k++)
		*w++ = ' ';
	*w++ = ' ';
	char *noaddr = w;
	*w++ = '0';
	*w++ = 'x';
	for (int sh = 60; sh >= 0; sh -= 4)
		*w++ = "0123456789abcdef"[(f->pc >> sh) & 0xf];
	*w++ = ' ';
	struct strbuf name, where;
	strbuf_init(&name);
	strbuf_init(&where);
	if (f->flags & SD_FRAME_INLINED)
		strbuf_adds(&name, "[inlined] ");
	frame_name(&name, f, o);
	frame_where(&where, f, o);
	if (last > idx)
		strbuf_addf(&where, ", %zu times", last - idx + 1);
	size_t width = o && o->width > 0 ? (size_t)o->width : 0;
	size_t plen = (size_t)(w - pre);
	int cont = 0;
	/* A narrow terminal: no addresses at all (a column of them, with
	 * holes, reads worse than none). */
	if (width && width < ADDR_WIDTH)
		plen = (size_t)(noaddr - pre);
	if (width && plen + name.len + where.len > width) {
		/* A terminal: the address goes first (JSON and -v keep it),
		 * then the module and file go to a line of their own, then a
		 * name still too long loses its middle. */
		plen = (size_t)(noaddr - pre);
		if (plen + name.len + where.len > width) {
			cont = 1;
			size_t keep = width > plen + 8 ? width - plen - 3 : 5;
			if (plen + name.len > width && name.len > keep + 3) {
				size_t head = keep * 2 / 3, tail = keep - head;
				struct strbuf cut;
				strbuf_init(&cut);
				strbuf_add(&cut, name.buf, head);
				strbuf_adds(&cut, "...");
				strbuf_add(&cut, name.buf + name.len - tail, tail);
				strbuf_release(&name);
				name = cut;
			}
		}
	}
	for (size_t k = 0; k < indent; k++)
		strbuf_adds(out, " ");
	strbuf_add(out, pre, plen);
	/* The program's own frames stand out from the libraries' ones: that
	 * is where a reader starts. */
	int own = o && o->main_module && f->module && !strcmp(f->module, o->main_module);
	if (own)
		strbuf_adds(out, col(o, C_OWN));
	strbuf_add(out, name.buf, name.len);
	strbuf_adds(out, col(o, C_RESET));
	if (cont) {
		strbuf_adds(out, "\n");
		for (size_t k = 0; k < indent + plen + 2; k++)
			strbuf_adds(out, " ");
		/* Without its leading space. */
		strbuf_adds(out, col(o, C_DIM));
		strbuf_add(out, where.buf + 1, where.len - 1);
		strbuf_adds(out, col(o, C_RESET));
	} else {
		strbuf_adds(out, col(o, C_DIM));
		strbuf_add(out, where.buf, where.len);
		strbuf_adds(out, col(o, C_RESET));
	}
	strbuf_adds(out, "\n");
	strbuf_release(&name);
	strbuf_release(&where);
}

void format_text_frame(struct strbuf *out, size_t idx, const struct sd_frame *f,
		       const struct sd_render_opts *o)
{
	frame_line(out, 0, idx, idx, f, o);
}

/* Do frames A and B show as the same line of a recursion? */
static int same_call(const struct sd_frame *a, const struct sd_frame *b)
{
	if (!a->function || !b->function || strcmp(a->function, b->function))
		return 0;
	if ((a->flags ^ b->flags) & (SD_FRAME_INLINED | SD_FRAME_SIGNAL))
		return 0;
	if (a->line != b->line || (!a->file) != (!b->file))
		return 0;
	return !a->file || !strcmp(a->file, b->file);
}

static int holds_at(const struct sd_thread *th, size_t k)
{
	for (size_t i = 0; i < th->nholds; i++)
		if (th->holds[i].frame == (int)k)
			return 1;
	return 0;
}

/* Recursions shorter than this keep a line per frame; so do runs of
 * runtime frames. */
#define FOLD_FROM 3

/* The runtime or standard library frame F belongs to ("std", "core",
 * "alloc", "tokio::runtime", Go's "runtime"), or NULL: the program's own,
 * or a library's. */
static const char *runtime_of(const struct sd_frame *f)
{
	static const struct {
		const char *prefix, *name;
	} rt[] = {
	    {"std::", "std"},
	    {"core::", "core"},
	    {"alloc::", "alloc"},
	    {"tokio::runtime::", "tokio::runtime"},
	    {"__rust_begin_short_backtrace", "std"},
	    {"__rust_end_short_backtrace", "std"},
	    {"__rust_try", "std"},
	    {"runtime.", "runtime"},
	};
	const char *fn = f->function;
	if (!fn)
		return NULL;
	if (*fn == '<')
		fn++;
	for (size_t i = 0; i < sizeof(rt) / sizeof(rt[0]); i++)
		if (!strncmp(fn, rt[i].prefix, strlen(rt[i].prefix)))
			return rt[i].name;
	return NULL;
}

/* Past the program's first frame, a run of FOLD_FROM or more runtime
 * frames from K on holding nothing: its last index (K when none). */
static size_t runtime_run(const struct sd_thread *th, size_t k, size_t first_own)
{
	if (k < first_own || !runtime_of(&th->frames[k]))
		return k;
	size_t last = k;
	while (last + 1 < th->nframes && runtime_of(&th->frames[last + 1]) && !holds_at(th, last + 1))
		last++;
	return last + 1 - k >= FOLD_FROM && !holds_at(th, k) ? last : k;
}

/* "... 12 frames of std, core" for frames K..LAST of TH. */
static void runtime_line(struct strbuf *out, size_t indent, const struct sd_thread *th, size_t k,
			 size_t last, const struct sd_render_opts *o)
{
	for (size_t i = 0; i < indent; i++)
		strbuf_adds(out, " ");
	strbuf_addf(out, "  #%zu-#%zu %s... %zu frames of ", k, last, col(o, C_DIM), last - k + 1);
	const char *seen[4] = {0};
	size_t ns = 0;
	for (size_t i = k; i <= last; i++) {
		const char *r = runtime_of(&th->frames[i]);
		int dup = 0;
		for (size_t j = 0; j < ns; j++)
			dup |= !strcmp(seen[j], r);
		if (dup)
			continue;
		if (ns == 3) {
			strbuf_adds(out, ", ...");
			break;
		}
		strbuf_adds(out, ns ? ", " : "");
		strbuf_adds(out, r);
		seen[ns++] = r;
	}
	strbuf_addf(out, " (--all-frames shows them)%s\n", col(o, C_RESET));
}

void format_text_stack(struct strbuf *out, const struct sd_thread *th, size_t indent,
		       const struct sd_render_opts *o)
{
	struct sd_render_opts narrow;
	if (indent && o && o->width > 0) {
		narrow = *o;
		narrow.width = o->width > (int)indent + 20 ? o->width - (int)indent : 20;
		o = &narrow;
	}
	/* The innermost runtime frames say what the thread waits in: they
	 * stay; past the program's first frame, runs of them fold. */
	size_t first_own = th->nframes;
	const char *own = o ? o->main_module : NULL;
	for (size_t k = 0; own && k < th->nframes && first_own == th->nframes; k++)
		if (th->frames[k].function && !runtime_of(&th->frames[k]) && th->frames[k].module &&
		    !strcmp(th->frames[k].module, own))
			first_own = k;
	for (size_t k = 0; k < th->nframes; k++) {
		size_t last = k;
		if (!(o && o->all_frames) && (last = runtime_run(th, k, first_own)) > k) {
			runtime_line(out, indent, th, k, last, o);
			k = last;
			continue;
		}
		if (!(o && o->all_frames) && !holds_at(th, k))
			while (last + 1 < th->nframes && same_call(&th->frames[k], &th->frames[last + 1]) &&
			       !holds_at(th, last + 1))
				last++;
		if (last + 1 - k < FOLD_FROM)
			last = k;
		frame_line(out, indent, k, last, &th->frames[k], o);
		format_text_holds(out, th, (long)k, o);
		k = last;
	}
	format_text_holds(out, th, -1, o);
}

/* The wait of TH; TERSE (a terminal): no address when a symbol names
 * the lock; 2: neither address nor symbol (a group of threads each
 * waiting on its own object). */
static void wait_text(struct strbuf *out, const struct sd_snapshot *s, const struct sd_thread *th,
		      int terse);

void format_text_wait(struct strbuf *out, const struct sd_snapshot *s, const struct sd_thread *th)
{
	wait_text(out, s, th, 0);
}

static void wait_text(struct strbuf *out, const struct sd_snapshot *s, const struct sd_thread *th,
		      int terse)
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
		if (w->address && terse < 2 && !(terse && w->symbol))
			strbuf_addf(out, " 0x%" PRIx64, w->address);
		else if (w->kind == SD_WAIT_MONITOR)
			strbuf_adds(out, " (which one is not known)");
		if (w->symbol && terse < 2) {
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
			 const struct sd_thread *th, const struct sd_render_opts *o, size_t nobj);

void format_text_thread_header(struct strbuf *out, const struct sd_snapshot *s,
			       const struct sd_thread *th, const struct sd_render_opts *o)
{
	strbuf_addf(out, "%sThread %d \"", col(o, C_BOLD), (int)th->tid);
	strbuf_add_escaped(out, th->name ? th->name : "");
	strbuf_addf(out, "\"%s", col(o, C_RESET));
	thread_state(out, s, th, o, 1);
	if (th->goid)
		strbuf_addf(out, " [goroutine %" PRIu64 "]", th->goid);
	uint64_t task = format_tokio_task_of(s, th->tid);
	if (task)
		strbuf_addf(out, " [task %" PRIu64 "]", task);
}

/* NOBJ > 1: TH stands for a group whose threads wait each on its own
 * object, NOBJ of them: no one address is theirs. */
static void thread_state(struct strbuf *out, const struct sd_snapshot *s,
			 const struct sd_thread *th, const struct sd_render_opts *o, size_t nobj)
{
	strbuf_addf(out, " %c", th->stack_state ? th->stack_state : th->state ? th->state : '?');
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
		wait_text(out, s, th, nobj > 1 ? 2 : o && o->width > 0);
		if (nobj > 1)
			strbuf_addf(out, " (each its own: %zu objects)", nobj);
		strbuf_adds(out, col(o, C_RESET));
	} else {
		const char *st = analyze_state_text(th);
		if (*st)
			strbuf_addf(out, " %s", st);
		if (plain && nobj > 1)
			strbuf_addf(out, " (each its own: %zu objects)", nobj);
		else if (plain && th->wait.address)
			strbuf_addf(out, " 0x%" PRIx64, th->wait.address);
		if (plain && th->wait.note) {
			strbuf_adds(out, " (");
			strbuf_add_escaped(out, th->wait.note);
			strbuf_adds(out, ")");
		}
	}
	if ((th->state == 'D' || th->io_worker) && th->wchan)
		strbuf_addf(out, " (wchan %s)", th->wchan);
	if (th->stack_state) {
		/* What /proc said a moment before the stack's instant. */
		strbuf_addf(out, " %s(before the freeze: %c", col(o, C_DIM), th->state);
		const char *scn = th->syscall_nr >= 0 && !th->running
					  ? procfs_syscall_name(th->syscall_nr)
					  : NULL;
		if (scn)
			strbuf_addf(out, " in %s", scn);
		else if (th->wchan && *th->wchan)
			strbuf_addf(out, " in %s", th->wchan);
		strbuf_addf(out, ")%s", col(o, C_RESET));
	}
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
	if (o && o->verbose && !s->per_thread) {
		/* The freeze's phases add up to it; stops after it (for
		 * registers, retries) are pauses of their own threads, not
		 * added to it: the pause is the longest of them all. */
		strbuf_addf(out, "  pause %.2f ms: ", (double)s->pause_us / 1000.0);
		if (s->freeze_us || s->seize_us || s->stop_us)
			strbuf_addf(out,
				    "the freeze %.2f ms (seize %.2f, stop %.2f, memory copy %.2f, "
				    "detach %.2f)",
				    (double)s->freeze_us / 1000.0, (double)s->seize_us / 1000.0,
				    (double)s->stop_us / 1000.0, (double)s->memcopy_us / 1000.0,
				    (double)(s->detach_us - s->memcopy_us) / 1000.0);
		else
			strbuf_adds(out, "no freeze (no thread was running)");
		if (s->later_us)
			strbuf_addf(out, ", then %s of single threads, the longest %.2f ms",
				    s->nregstops ? "stops for registers or retries" : "retries",
				    (double)s->later_us / 1000.0);
		strbuf_adds(out, "\n");
	}
	if (o && o->verbose && !s->per_thread) {
		strbuf_addf(
		    out,
		    "  threads: %zu frozen, %zu read without stopping, %zu reused, %zu retried, "
		    "%zu stopped for registers, %zu with rbp from the call site\n",
		    s->nfrozen, s->nasleep, s->nreused, s->nretried, s->nregstops,
		    s->nrbp_inferred);
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

/* One thread: its header, its stack, why the stack ends early. */
static void thread_block(struct strbuf *out, const struct sd_snapshot *s,
			 const struct sd_thread *th, const struct sd_render_opts *o)
{
	format_text_thread_header(out, s, th, o);
	strbuf_adds(out, "\n");
	format_text_stack(out, th, 0, o);
	if (th->unwind_stop && th->status == SD_THREAD_OK)
		strbuf_addf(out, "  %s-- unwinding stopped: %s%s\n", col(o, C_WARN),
			    th->unwind_stop, col(o, C_RESET));
	/* Words the thread did not move since its copy (its counters say it
	 * did not run) change nothing: said with -v only. */
	if (th->live_reads && th->live_reads_proven && th->status == SD_THREAD_OK &&
	    o && o->verbose)
		strbuf_addf(out,
			    "  %s-- %u stack word%s read after the thaw, outside the copy; its scheduler "
			    "counters show the thread did not run in between%s\n",
			    col(o, C_DIM), th->live_reads, th->live_reads == 1 ? "" : "s",
			    col(o, C_RESET));
	else if (th->live_reads && !th->live_reads_proven && th->status == SD_THREAD_OK)
		strbuf_addf(out,
			    "  %s-- %u stack word%s read after the thaw, outside the copy: "
			    "frames found from %s may be out of date%s\n",
			    col(o, C_WARN), th->live_reads, th->live_reads == 1 ? "" : "s",
			    th->live_reads == 1 ? "it" : "them", col(o, C_RESET));
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
		thread_block(out, s, &s->threads[i], o);
		if (i + 1 < s->nthreads)
			strbuf_adds(out, "\n");
	}
	/* A Tokio program: its tasks after its threads. */
	format_tokio_text(out, s, o);
}

/* Names and TIDs of a group are cut after this many bytes: the header of
 * a 1,000-thread pool stays one line. */
#define GROUP_LIST_MAX 72
/* At a terminal, threads with identical stacks merge from this many. */
#define GROUP_FROM 4

/* How many distinct objects the threads of GR wait on (each its own:
 * group_wait_per_object); with OUT and LIST, " 0x... <sym>," each, in the
 * threads' order. */
static size_t group_objects(const struct sd_snapshot *s, const struct sd_group *gr,
			    struct strbuf *out, int list)
{
	const struct sd_thread *th0 = &s->threads[gr->idx[0]];
	if (!group_wait_per_object(th0->wait.kind))
		return 1;
	size_t n = 0;
	for (size_t i = 0; i < gr->n; i++) {
		const struct sd_wait *w = &s->threads[gr->idx[i]].wait;
		size_t k = 0;
		while (k < i && s->threads[gr->idx[k]].wait.address != w->address)
			k++;
		if (k < i)
			continue;
		n++;
		if (out && list) {
			strbuf_addf(out, "%s 0x%" PRIx64, n > 1 ? "," : "", w->address);
			if (w->symbol) {
				strbuf_adds(out, " <");
				strbuf_add_escaped(out, w->symbol);
				strbuf_adds(out, ">");
			}
		}
	}
	return n;
}

void format_text_grouped(struct strbuf *out, const struct sd_snapshot *s,
			 const struct sd_render_opts *o0)
{
	struct sd_render_opts ro = with_main(s, o0);
	const struct sd_render_opts *o = &ro;
	struct sd_grouping g;
	group_snapshot(s, &g);
	process_header(out, s, o, g.n);
	/* With group 2 (a terminal), only sets of GROUP_FROM or more merge,
	 * and the threads holding what others wait on come first. */
	size_t from = o->group == 2 ? GROUP_FROM : 2;
	int sep = 0;
	for (int pass = o->group == 2 ? 0 : 1; pass < 2; pass++) {
		for (size_t k = 0; k < g.n; k++) {
			const struct sd_group *gr = &g.v[k];
			const struct sd_thread *th = &s->threads[gr->idx[0]];
			if (o->group == 2 && (pass == 0) != (th->nholds > 0))
				continue;
			if (gr->n < from) {
				for (size_t i = 0; i < gr->n; i++) {
					if (sep++)
						strbuf_adds(out, "\n");
					thread_block(out, s, &s->threads[gr->idx[i]], o);
				}
				continue;
			}
			if (sep++)
				strbuf_adds(out, "\n");
			strbuf_addf(out, "%s%zu threads \"", col(o, C_BOLD), gr->n);
			group_names(out, s, gr, GROUP_LIST_MAX);
			strbuf_addf(out, "\"%s", col(o, C_RESET));
			size_t nobj = group_objects(s, gr, NULL, 0);
			thread_state(out, s, th, o, nobj);
			strbuf_adds(out, "\n  TIDs ");
			group_tids(out, s, gr, GROUP_LIST_MAX);
			strbuf_adds(out, "\n");
			if (nobj > 1 && o->verbose) {
				strbuf_adds(out, "  objects");
				group_objects(s, gr, out, 1);
				strbuf_adds(out, "\n");
			}
			format_text_stack(out, th, 0, o);
			if (th->unwind_stop && th->status == SD_THREAD_OK)
				strbuf_addf(out, "  %s-- unwinding stopped: %s%s\n", col(o, C_WARN),
					    th->unwind_stop, col(o, C_RESET));
		}
	}
	group_release(&g);
}
