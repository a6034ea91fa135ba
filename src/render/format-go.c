// SPDX-License-Identifier: MIT
// Goroutines rendered (format-go.h): Go's traceback form for people, the
// dump schema's "goroutines" for programs.
#include "format-go.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "godeadlocks.h"
#include "golocks.h"
#include "goroutines.h"
#include "group.h"

const char *format_go_status(const struct sd_goroutine *g)
{
	if (g->status == SD_GO_WAITING && g->wait_reason)
		return g->wait_reason;
	return sd_go_status_name(g->status);
}

/* ", 5 minutes" as Go's traceback writes a wait of a minute or more. */
static void minutes(struct strbuf *out, double lo, double hi)
{
	long a = lo < 0 ? -1 : (long)(lo / 60), b = hi < 0 ? -1 : (long)(hi / 60);
	if (b < 1)
		return;
	if (a < 0)
		a = 0;
	if (a == b)
		strbuf_addf(out, ", %ld minutes", b);
	else
		strbuf_addf(out, ", %ld-%ld minutes", a, b);
}

/* NAME with each generic instantiation's type arguments elided, as Go's
 * own tracebacks print them: "main.Map[go.shape.int]" as "main.Map[...]". */
static void go_short_name(struct strbuf *out, const char *name)
{
	struct strbuf t;
	strbuf_init(&t);
	int depth = 0;
	for (const char *p = name; *p; p++) {
		if (*p == '[') {
			if (!depth++)
				strbuf_adds(&t, "[...");
			continue;
		}
		if (*p == ']' && depth) {
			if (!--depth)
				strbuf_adds(&t, "]");
			continue;
		}
		if (!depth)
			strbuf_add(&t, p, 1);
	}
	/* An unbalanced name is shown as it is. */
	strbuf_add_escaped(out, depth ? name : t.buf);
	strbuf_release(&t);
}

static void frame_lines(struct strbuf *out, const struct sd_frame *f, const struct sd_render_opts *o)
{
	if (f->function && !o->full_names)
		go_short_name(out, f->function);
	else if (f->function)
		strbuf_add_escaped(out, f->function);
	else
		strbuf_addf(out, "0x%" PRIx64 "?", f->pc);
	strbuf_adds(out, "(...)\n\t");
	if (f->file && !o->no_source) {
		strbuf_add_escaped(out, f->file);
		strbuf_addf(out, ":%d", f->line);
	} else {
		strbuf_adds(out, "?");
	}
	if (!(f->flags & SD_FRAME_INLINED) && f->symoff)
		strbuf_addf(out, " +0x%" PRIx64, f->symoff);
	strbuf_adds(out, "\n");
}

static void object_label(struct strbuf *out, const struct sd_goobject *ob)
{
	strbuf_addf(out, "%s 0x%" PRIx64, ob->kind, ob->address);
	if (ob->symbol) {
		strbuf_adds(out, " <");
		strbuf_add_escaped(out, ob->symbol);
		strbuf_adds(out, ">");
	}
}

/* As jstack's "- locked" lines: under frame K of G, the mutexes G is
 * inferred to hold by a reference in that frame (K -1: in no frame). */
static void holds_lines(struct strbuf *out, const struct sd_snapshot *s,
			const struct sd_goroutine *g, long k)
{
	for (size_t i = 0; g->nholds && i < s->ngoobjects; i++) {
		const struct sd_goobject *ob = &s->goobjects[i];
		for (size_t c = 0; c < ob->ncandidates; c++) {
			if (ob->candidates[c] != g->id || ob->candidate_frames[c] != k)
				continue;
			strbuf_adds(out, ob->holder == g->id ? "\t- holds " : "\t- may hold ");
			object_label(out, ob);
			strbuf_addf(out, ", %zu waiting (inferred: ", ob->nwaiters);
			if (ob->holder == g->id)
				strbuf_adds(out, "a reference in this frame, in no other goroutine's "
						 "stack; Go's mutexes record no owner)\n");
			else
				strbuf_addf(out, "one of %zu goroutines with a reference to it)\n",
					    ob->ncandidates);
		}
	}
}


/* Does frame K of G carry a holds line? (It is never folded away.) */
static int go_holds_at(const struct sd_snapshot *s, const struct sd_goroutine *g, size_t k)
{
	for (size_t i = 0; g->nholds && i < s->ngoobjects; i++)
		for (size_t c = 0; c < s->goobjects[i].ncandidates; c++)
			if (s->goobjects[i].candidates[c] == g->id &&
			    s->goobjects[i].candidate_frames[c] == (long)k)
				return 1;
	return 0;
}

static int go_runtime(const struct sd_frame *f)
{
	return f->function && !strncmp(f->function, "runtime.", 8);
}

/* Do A and B print as the same frame (a recursion)? */
static int go_same_call(const struct sd_frame *a, const struct sd_frame *b)
{
	if (!a->function || !b->function || strcmp(a->function, b->function) ||
	    a->line != b->line || ((a->flags ^ b->flags) & SD_FRAME_INLINED))
		return 0;
	return (!a->file && !b->file) || (a->file && b->file && !strcmp(a->file, b->file));
}

/* Runs of this many frames or more fold (unless --all-frames): the
 * runtime's past the goroutine's first frame of its own (the innermost
 * ones say what it waits in), and a recursion's identical frames. */
#define GO_FOLD_FROM 3

static void body(struct strbuf *out, const struct sd_snapshot *s, const struct sd_goroutine *g,
		 const struct sd_render_opts *o)
{
	size_t first_own = g->nframes;
	for (size_t k = 0; k < g->nframes && first_own == g->nframes; k++)
		if (g->frames[k].function && !go_runtime(&g->frames[k]))
			first_own = k;
	for (size_t k = 0; k < g->nframes; k++) {
		size_t last = k;
		if (!o->all_frames && k > first_own && go_runtime(&g->frames[k]) &&
		    !go_holds_at(s, g, k)) {
			while (last + 1 < g->nframes && go_runtime(&g->frames[last + 1]) &&
			       !go_holds_at(s, g, last + 1))
				last++;
			if (last + 1 - k >= GO_FOLD_FROM) {
				strbuf_addf(out, "...%zu frames of runtime (--all-frames shows them)\n",
					    last + 1 - k);
				k = last;
				continue;
			}
			last = k;
		}
		frame_lines(out, &g->frames[k], o);
		holds_lines(out, s, g, (long)k);
		if (o->all_frames || go_holds_at(s, g, k))
			continue;
		while (last + 1 < g->nframes && go_same_call(&g->frames[k], &g->frames[last + 1]) &&
		       !go_holds_at(s, g, last + 1))
			last++;
		if (last + 1 - k >= GO_FOLD_FROM) {
			strbuf_addf(out, "...the frame above %zu more times, %zu in all "
					 "(--all-frames shows them)\n",
				    last - k, last + 1 - k);
			k = last;
		}
	}
	holds_lines(out, s, g, -1);
	if (g->unwind_stop)
		strbuf_addf(out, "-- unwinding stopped: %s\n", g->unwind_stop);
	if (g->created_by.function) {
		strbuf_adds(out, "created by ");
		strbuf_add_escaped(out, g->created_by.function);
		if (g->parent)
			strbuf_addf(out, " in goroutine %" PRIu64, g->parent);
		strbuf_adds(out, "\n\t");
		if (g->created_by.file && !o->no_source) {
			strbuf_add_escaped(out, g->created_by.file);
			strbuf_addf(out, ":%d", g->created_by.line);
		} else {
			strbuf_adds(out, "?");
		}
		strbuf_adds(out, "\n");
	}
}

/* ", on sync.Mutex 0x... <main.ledger> held by goroutine 8 (inferred)":
 * what G waits on ("or" between the channels of a select). */
static void waits_text(struct strbuf *out, const struct sd_snapshot *s,
		       const struct sd_goroutine *g)
{
	for (size_t i = 0; i < g->nwaits_on; i++) {
		const struct sd_goobject *ob = &s->goobjects[g->waits_on[i]];
		strbuf_adds(out, i ? " or " : ", on ");
		object_label(out, ob);
		if (ob->mode && g->wait_mode)
			strbuf_addf(out, " to %s", g->wait_mode);
		if (ob->holder)
			strbuf_addf(out, " held by goroutine %" PRIu64 " (inferred)", ob->holder);
	}
}

/* What Go prints after the status: the wait, "locked to thread", and
 * ours: what it waits on, the thread that runs it. */
static void tail(struct strbuf *out, const struct sd_snapshot *s, const struct sd_goroutine *g,
		 double lo, double hi, int one)
{
	if (g->status == SD_GO_WAITING)
		minutes(out, lo, hi);
	if (g->locked)
		strbuf_adds(out, ", locked to thread");
	waits_text(out, s, g);
	if (one && g->thread)
		strbuf_addf(out, ", thread %d", (int)g->thread);
}

/* Two goroutines are one group when Go would print them alike but for
 * the id and the wait: status, frames, created by. */
static uint64_t gkey(const struct sd_goroutine *g)
{
	uint64_t h = sd_hash(format_go_status(g), strlen(format_go_status(g)), g->status);
	h = sd_hash(&g->locked, sizeof(g->locked), h);
	for (size_t k = 0; k < g->nframes; k++) {
		const struct sd_frame *f = &g->frames[k];
		if (f->function)
			h = sd_hash(f->function, strlen(f->function), h);
		else
			h = sd_hash(&f->pc, sizeof(f->pc), h);
		h = sd_hash(&f->line, sizeof(f->line), h);
	}
	if (g->created_by.function)
		h = sd_hash(g->created_by.function, strlen(g->created_by.function), h);
	h = sd_hash(&g->created_by.line, sizeof(g->created_by.line), h);
	for (size_t k = 0; k < g->nwaits_on; k++)
		h = sd_hash(&g->waits_on[k], sizeof(g->waits_on[k]), h);
	return h ? h : 1;
}

static int same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Two goroutines alike but for the id and the wait, waiting on the same
 * objects, holding none (a holder is always shown alone). */
static int same(const struct sd_goroutine *a, const struct sd_goroutine *b)
{
	if (a->nwaits_on != b->nwaits_on ||
	    (a->nwaits_on && memcmp(a->waits_on, b->waits_on, a->nwaits_on * sizeof(size_t))) ||
	    a->nholds || b->nholds)
		return 0;
	if (a->status != b->status || !same_str(format_go_status(a), format_go_status(b)) ||
	    a->locked != b->locked || a->nframes != b->nframes ||
	    !same_str(a->created_by.function, b->created_by.function) ||
	    a->created_by.line != b->created_by.line || !same_str(a->unwind_stop, b->unwind_stop))
		return 0;
	for (size_t k = 0; k < a->nframes; k++) {
		const struct sd_frame *x = &a->frames[k], *y = &b->frames[k];
		if (!same_str(x->function, y->function) || x->line != y->line ||
		    !same_str(x->file, y->file) || (!x->function && x->pc != y->pc))
			return 0;
	}
	return 1;
}

static uint64_t go_key(const void *arg, size_t i)
{
	return gkey(&((const struct sd_snapshot *)arg)->goroutines[i]);
}

static int go_same(const void *arg, size_t i, size_t j)
{
	const struct sd_snapshot *s = arg;
	return same(&s->goroutines[i], &s->goroutines[j]);
}

/* Group index of each goroutine (*OF), groups in order of their first. */
static size_t group(const struct sd_snapshot *s, size_t *of, size_t *count)
{
	return group_items(s->ngoroutines, s, go_key, go_same, of, count);
}

#define ID_LIST_MAX 72

void format_go_text(struct strbuf *out, const struct sd_snapshot *s,
		    const struct sd_render_opts *o)
{
	if (!s->go_read)
		return;
	strbuf_addf(out, "%sPID %d (", o->color ? "\033[1m" : "", (int)s->pid);
	strbuf_add_escaped(out, s->comm ? s->comm : "?");
	strbuf_adds(out, ") Go ");
	strbuf_add_escaped(out, s->go_version ? s->go_version : "?");
	strbuf_addf(out, ", %zu goroutine%s%s\n", s->ngoroutines, s->ngoroutines == 1 ? "" : "s",
		    o->color ? "\033[0m" : "");
	if (s->go_note) {
		strbuf_adds(out, "  note: ");
		strbuf_add_escaped(out, s->go_note);
		strbuf_adds(out, "\n");
	}
	if (o->verbose)
		strbuf_addf(out, "  goroutines read and unwound in %.2f ms\n", (double)s->go_us / 1000.0);
	size_t n = s->ngoroutines;
	size_t *of = sd_xcalloc(n + 1, sizeof(*of)), *count = sd_xcalloc(n + 1, sizeof(*count));
	size_t ngroups = o->go_group ? group(s, of, count) : 0;
	unsigned char *shown = sd_xcalloc(ngroups + 1, 1);
	for (size_t i = 0; i < n; i++) {
		const struct sd_goroutine *g = &s->goroutines[i];
		size_t c = o->go_group ? count[of[i]] : 1;
		int merge = o->go_group == 1 ? c > 1 : o->go_group == 2 ? c >= 4 : 0;
		strbuf_adds(out, "\n");
		if (!merge) {
			strbuf_addf(out, "goroutine %" PRIu64 " [", g->id);
			strbuf_add_escaped(out, format_go_status(g));
			tail(out, s, g, g->wait_seconds, g->wait_seconds, 1);
			strbuf_adds(out, "]:\n");
			body(out, s, g, o);
			continue;
		}
		if (shown[of[i]]) {
			out->len--; /* no blank line for a member shown already */
			out->buf[out->len] = 0;
			continue;
		}
		shown[of[i]] = 1;
		double lo = -1, hi = -1;
		struct strbuf ids;
		strbuf_init(&ids);
		for (size_t k = i; k < n; k++) {
			if (of[k] != of[i])
				continue;
			const struct sd_goroutine *m = &s->goroutines[k];
			if (m->wait_seconds >= 0 && (lo < 0 || m->wait_seconds < lo))
				lo = m->wait_seconds;
			if (m->wait_seconds > hi)
				hi = m->wait_seconds;
			if (ids.len < ID_LIST_MAX)
				strbuf_addf(&ids, "%s%" PRIu64, ids.len ? " " : "", m->id);
			else if (ids.buf[ids.len - 1] != '.')
				strbuf_adds(&ids, " ...");
		}
		strbuf_addf(out, "%zu goroutines [", c);
		strbuf_add_escaped(out, format_go_status(g));
		tail(out, s, g, lo, hi, 0);
		strbuf_addf(out, "]: %s\n", ids.buf);
		strbuf_release(&ids);
		body(out, s, g, o);
	}
	free(shown);
	free(of);
	free(count);
	if (s->golocks_note) {
		strbuf_adds(out, "\nnote: wait objects: ");
		strbuf_add_escaped(out, s->golocks_note);
		strbuf_adds(out, "\n");
	}
	struct sd_godeadlock *d;
	size_t nd = godeadlocks_find(s, &d);
	if (nd) {
		strbuf_adds(out, "\n");
		format_go_deadlocks_text(out, s, d, nd, NULL);
	}
	godeadlocks_free(d, nd);
}

/* "goroutine 7 [sync.Mutex.Lock]" */
static void goroutine_label(struct strbuf *out, const struct sd_goroutine *g)
{
	strbuf_addf(out, "goroutine %" PRIu64 " [", g->id);
	strbuf_add_escaped(out, format_go_status(g));
	strbuf_adds(out, "]");
}

/* "frame #6 main.transfer", or "no frame" */
static void frame_ref(struct strbuf *out, const struct sd_goroutine *g, int k)
{
	if (k >= 0 && (size_t)k < g->nframes) {
		strbuf_addf(out, "frame #%d ", k);
		strbuf_add_escaped(out, g->frames[k].function ? g->frames[k].function : "??");
	} else {
		strbuf_adds(out, "no frame");
	}
}

static const struct sd_goroutine *by_id(const struct sd_snapshot *s, uint64_t id)
{
	for (size_t i = 0; i < s->ngoroutines; i++)
		if (s->goroutines[i].id == id)
			return &s->goroutines[i];
	return NULL;
}

void format_go_deadlocks_text(struct strbuf *out, const struct sd_snapshot *s,
			      const struct sd_godeadlock *d, size_t nd, const struct sd_render_opts *o)
{
	strbuf_addf(out,
		    "Found %zu deadlock%s among goroutines (inferred: Go's mutexes do not record "
		    "their owner; each holder is the one goroutine whose stack holds a reference to "
		    "the mutex, and it waits itself):\n",
		    nd, nd == 1 ? "" : "s");
	for (size_t i = 0; i < nd; i++) {
		strbuf_addf(out, "\nDeadlock %zu, %zu goroutine%s:\n", i + 1, d[i].n,
			    d[i].n == 1 ? "" : "s");
		for (size_t e = 0; e < d[i].n; e++) {
			const struct sd_goroutine *g = &s->goroutines[d[i].goroutines[e]];
			const struct sd_goobject *ob = &s->goobjects[d[i].objects[e]];
			const struct sd_goroutine *h = by_id(s, ob->holder);
			strbuf_adds(out, "  ");
			goroutine_label(out, g);
			strbuf_adds(out, " waits for ");
			object_label(out, ob);
			strbuf_addf(out, ", held by goroutine %" PRIu64 " (", ob->holder);
			if (h)
				frame_ref(out, h, ob->holder_frame);
			strbuf_adds(out, " holds a reference to it)\n");
		}
		for (size_t e = 0; o && e < d[i].n; e++) {
			const struct sd_goroutine *g = &s->goroutines[d[i].goroutines[e]];
			strbuf_adds(out, "\n  ");
			goroutine_label(out, g);
			strbuf_adds(out, ":\n");
			body(out, s, g, o);
		}
	}
}

/* Goroutines by id, for the lock view: sorted (id, index) pairs. */
static const struct sd_goroutine *find(const struct sd_snapshot *s, const struct sd_goindex *ix,
				       uint64_t id)
{
	long i = sd_goindex_find(ix, s->ngoroutines, id);
	return i >= 0 ? &s->goroutines[i] : NULL;
}

/* The waiters of OB, those with the same stack as one entry. */
static void lock_waiters(struct strbuf *out, const struct sd_snapshot *s,
			 const struct sd_goindex *ix, const struct sd_goobject *ob,
			 const struct sd_render_opts *o)
{
	unsigned char *done = sd_xcalloc(ob->nwaiters + 1, 1);
	for (size_t i = 0; i < ob->nwaiters; i++) {
		const struct sd_goroutine *g = find(s, ix, ob->waiters[i]);
		if (done[i] || !g)
			continue;
		size_t cnt = 0;
		struct strbuf ids;
		strbuf_init(&ids);
		for (size_t k = i; k < ob->nwaiters; k++) {
			const struct sd_goroutine *m = find(s, ix, ob->waiters[k]);
			if (done[k] || !m || (m != g && !same(g, m)))
				continue;
			done[k] = 1;
			if (cnt++ < 16)
				strbuf_addf(&ids, "%s%" PRIu64, cnt > 1 ? ", " : "", m->id);
		}
		if (cnt > 16)
			strbuf_addf(&ids, " and %zu more", cnt - 16);
		strbuf_addf(out, "  waiting (%zu%s): goroutine%s %s\n", cnt,
			    cnt > 1 ? ", same stack" : "", cnt > 1 ? "s" : "", ids.buf);
		strbuf_release(&ids);
		body(out, s, g, o);
	}
	free(done);
}

void format_go_locks_text(struct strbuf *out, const struct sd_snapshot *s,
			  const struct sd_render_opts *o)
{
	if (!s->go_read)
		return;
	size_t nw = 0;
	for (size_t i = 0; i < s->ngoobjects; i++)
		nw += s->goobjects[i].nwaiters;
	strbuf_addf(out, "\nGoroutines (Go %s): %zu waiting on %zu object%s\n",
		    s->go_version ? s->go_version : "?", nw, s->ngoobjects,
		    s->ngoobjects == 1 ? "" : "s");
	if (s->go_note) {
		strbuf_adds(out, "  note: ");
		strbuf_add_escaped(out, s->go_note);
		strbuf_adds(out, "\n");
	}
	if (s->golocks_note) {
		strbuf_adds(out, "  note: wait objects: ");
		strbuf_add_escaped(out, s->golocks_note);
		strbuf_adds(out, "\n");
	}
	struct sd_goindex *ix = sd_goindex_new(s);
	for (size_t i = 0; i < s->ngoobjects; i++) {
		const struct sd_goobject *ob = &s->goobjects[i];
		strbuf_adds(out, "\n");
		object_label(out, ob);
		strbuf_addf(out, ", %zu waiter%s", ob->nwaiters, ob->nwaiters == 1 ? "" : "s");
		if (ob->mode)
			strbuf_addf(out, " (to %s)", ob->mode);
		if (ob->locked == 1)
			strbuf_addf(out, ", locked (its word counts %u waiter%s)", ob->counted,
				    ob->counted == 1 ? "" : "s");
		else if (ob->locked == 0)
			strbuf_adds(out, ", not locked");
		strbuf_adds(out, "\n");
		const struct sd_goroutine *h = ob->holder ? find(s, ix, ob->holder) : NULL;
		if (h) {
			strbuf_addf(out, "  held by goroutine %" PRIu64 " (inferred: ", h->id);
			frame_ref(out, h, ob->holder_frame);
			strbuf_adds(out, " holds a reference to it, no other goroutine's stack does; "
					 "Go's mutexes do not record their owner), ");
			strbuf_add_escaped(out, format_go_status(h));
			waits_text(out, s, h);
			strbuf_adds(out, "\n");
			body(out, s, h, o);
		} else if (!strcmp(ob->kind, "chan")) {
			strbuf_adds(out, "  a channel has no holder\n");
		} else if (!strcmp(ob->kind, "sync.WaitGroup")) {
			strbuf_adds(out, "  a WaitGroup has no holder: its waiters wait for its count "
					 "to reach zero\n");
		} else if (!strcmp(ob->kind, "sync.Cond")) {
			strbuf_adds(out, "  a Cond has no holder: its waiters wait for a Signal or a "
					 "Broadcast\n");
		} else if (ob->note) {
			strbuf_adds(out, "  holder unknown: ");
			strbuf_add_escaped(out, ob->note);
			strbuf_adds(out, "\n");
			for (size_t c = 0; c < ob->ncandidates && ob->ncandidates > 1; c++) {
				const struct sd_goroutine *m = find(s, ix, ob->candidates[c]);
				strbuf_addf(out, "    goroutine %" PRIu64 " (", ob->candidates[c]);
				if (m)
					frame_ref(out, m, ob->candidate_frames[c]);
				strbuf_adds(out, ")\n");
			}
		} else {
			strbuf_adds(out, "  holder unknown\n");
		}
		lock_waiters(out, s, ix, ob, o);
	}
	free(ix);
	struct sd_godeadlock *d;
	size_t nd = godeadlocks_find(s, &d);
	strbuf_adds(out, "\n");
	size_t unnamed = 0;
	for (size_t i = 0; i < s->ngoobjects; i++) {
		const struct sd_goobject *ob = &s->goobjects[i];
		unnamed += !ob->holder && ob->locked != 0 && strcmp(ob->kind, "chan") &&
			   strcmp(ob->kind, "sync.WaitGroup") && strcmp(ob->kind, "semaphore") &&
			   strcmp(ob->kind, "sync.Cond");
	}
	if (nd)
		format_go_deadlocks_text(out, s, d, nd, o);
	else if (unnamed)
		strbuf_addf(out,
			    "No deadlock found among goroutines, but %zu mutex%s waited on ha%s no "
			    "holder named: a cycle through %s cannot be told.\n",
			    unnamed, unnamed == 1 ? "" : "es", unnamed == 1 ? "s" : "ve",
			    unnamed == 1 ? "it" : "them");
	else
		strbuf_adds(out, "No deadlock found among goroutines.\n");
	godeadlocks_free(d, nd);
}

size_t format_go_deadlock_count(const struct sd_snapshot *s)
{
	struct sd_godeadlock *d;
	size_t nd = s->go_read ? godeadlocks_find(s, &d) : 0;
	if (nd)
		godeadlocks_free(d, nd);
	return nd;
}

/* One object of the lock view's "goroutines". */
static void json_goobject(struct jsonw *w, const struct sd_goobject *ob)
{
	jsonw_object_begin(w);
	jsonw_kstr(w, "kind", ob->kind);
	jsonw_khex(w, "address", ob->address);
	jsonw_kstr(w, "symbol", ob->symbol);
	jsonw_kstr(w, "mode", ob->mode);
	if (ob->locked >= 0) {
		jsonw_kbool(w, "locked", ob->locked);
		jsonw_ku64(w, "counted_waiters", ob->counted);
	} else {
		jsonw_knull(w, "locked");
		jsonw_knull(w, "counted_waiters");
	}
	jsonw_karray(w, "waiters");
	for (size_t i = 0; i < ob->nwaiters; i++)
		jsonw_u64(w, ob->waiters[i]);
	jsonw_array_end(w);
	if (ob->holder) {
		jsonw_ku64(w, "holder", ob->holder);
		jsonw_kstr(w, "holder_evidence", "stack");
	} else {
		jsonw_knull(w, "holder");
		jsonw_knull(w, "holder_evidence");
	}
	if (ob->holder && ob->holder_frame >= 0)
		jsonw_kint(w, "holder_frame", ob->holder_frame);
	else
		jsonw_knull(w, "holder_frame");
	jsonw_karray(w, "candidates");
	for (size_t c = 0; c < ob->ncandidates; c++) {
		jsonw_object_begin(w);
		jsonw_ku64(w, "goroutine", ob->candidates[c]);
		if (ob->candidate_frames[c] >= 0)
			jsonw_kint(w, "frame", ob->candidate_frames[c]);
		else
			jsonw_knull(w, "frame");
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	jsonw_kstr(w, "note", ob->note);
	jsonw_object_end(w);
}

static void json_deadlocks(struct jsonw *w, const struct sd_snapshot *s)
{
	struct sd_godeadlock *d;
	size_t nd = godeadlocks_find(s, &d);
	jsonw_karray(w, "deadlocks");
	for (size_t i = 0; i < nd; i++) {
		jsonw_array_begin(w);
		for (size_t e = 0; e < d[i].n; e++) {
			const struct sd_goobject *ob = &s->goobjects[d[i].objects[e]];
			jsonw_object_begin(w);
			jsonw_ku64(w, "goroutine", s->goroutines[d[i].goroutines[e]].id);
			jsonw_kstr(w, "kind", ob->kind);
			jsonw_khex(w, "address", ob->address);
			jsonw_kstr(w, "symbol", ob->symbol);
			jsonw_ku64(w, "holder", ob->holder);
			if (ob->holder_frame >= 0)
				jsonw_kint(w, "holder_frame", ob->holder_frame);
			else
				jsonw_knull(w, "holder_frame");
			jsonw_kstr(w, "holder_evidence", "stack");
			jsonw_object_end(w);
		}
		jsonw_array_end(w);
	}
	jsonw_array_end(w);
	godeadlocks_free(d, nd);
}

void format_go_locks_json(struct jsonw *w, const struct sd_snapshot *s)
{
	if (!s->go_read)
		return;
	jsonw_kobject(w, "goroutines");
	jsonw_kstr(w, "version", s->go_version);
	jsonw_kstr(w, "note", s->go_note);
	jsonw_kstr(w, "objects_note", s->golocks_note);
	jsonw_key(w, "objects");
	format_go_objects_json(w, s);
	json_deadlocks(w, s);
	jsonw_object_end(w);
}

void format_go_objects_json(struct jsonw *w, const struct sd_snapshot *s)
{
	jsonw_array_begin(w);
	for (size_t i = 0; i < s->ngoobjects; i++)
		json_goobject(w, &s->goobjects[i]);
	jsonw_array_end(w);
}

/* The object O as a member of a goroutine's "waiting_on" or "holds". */
static void json_object_ref(struct jsonw *w, const struct sd_goobject *o)
{
	jsonw_kstr(w, "kind", o->kind);
	jsonw_khex(w, "address", o->address);
	jsonw_kstr(w, "symbol", o->symbol);
}

/* "waiting_on": the objects G waits on, each with its holder (inferred:
 * Go's mutexes record none), and "holds": the mutexes G is inferred to
 * hold, the frame holding the reference. */
static void json_waits(struct jsonw *w, const struct sd_snapshot *s, const struct sd_goroutine *g)
{
	jsonw_karray(w, "waiting_on");
	for (size_t i = 0; i < g->nwaits_on; i++) {
		const struct sd_goobject *o = &s->goobjects[g->waits_on[i]];
		jsonw_object_begin(w);
		json_object_ref(w, o);
		jsonw_kstr(w, "mode", o->mode ? g->wait_mode : NULL);
		if (o->holder)
			jsonw_ku64(w, "holder", o->holder);
		else
			jsonw_knull(w, "holder");
		jsonw_kstr(w, "holder_evidence", o->holder ? "stack" : NULL);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	jsonw_karray(w, "holds");
	for (size_t i = 0; g->nholds && i < s->ngoobjects; i++) {
		const struct sd_goobject *o = &s->goobjects[i];
		for (size_t c = 0; c < o->ncandidates; c++) {
			if (o->candidates[c] != g->id)
				continue;
			jsonw_object_begin(w);
			json_object_ref(w, o);
			if (o->candidate_frames[c] >= 0)
				jsonw_kint(w, "frame", o->candidate_frames[c]);
			else
				jsonw_knull(w, "frame");
			jsonw_kstr(w, "evidence", "stack");
			jsonw_kbool(w, "certain", o->holder == g->id);
			jsonw_ku64(w, "waiters", o->nwaiters);
			jsonw_object_end(w);
		}
	}
	jsonw_array_end(w);
}

void format_go_json(struct jsonw *w, const struct sd_snapshot *s)
{
	if (!s->go_read)
		return;
	jsonw_kobject(w, "go");
	jsonw_kstr(w, "version", s->go_version);
	jsonw_kstr(w, "note", s->go_note);
	jsonw_kstr(w, "objects_note", s->golocks_note);
	json_deadlocks(w, s);
	jsonw_object_end(w);
	jsonw_karray(w, "goroutines");
	for (size_t i = 0; i < s->ngoroutines; i++) {
		const struct sd_goroutine *g = &s->goroutines[i];
		jsonw_object_begin(w);
		jsonw_ku64(w, "id", g->id);
		jsonw_kstr(w, "status", sd_go_status_name(g->status));
		jsonw_kstr(w, "wait_reason", g->wait_reason);
		if (g->wait_seconds >= 0)
			jsonw_kdouble(w, "wait_seconds", g->wait_seconds);
		else
			jsonw_knull(w, "wait_seconds");
		if (g->thread)
			jsonw_kint(w, "thread", g->thread);
		else
			jsonw_knull(w, "thread");
		jsonw_kbool(w, "locked", g->locked);
		jsonw_key(w, "created_by");
		if (g->created_by.function)
			format_json_frame(w, &g->created_by);
		else
			jsonw_null(w);
		if (g->parent)
			jsonw_ku64(w, "parent", g->parent);
		else
			jsonw_knull(w, "parent");
		/* pprof labels: an object ({} none set), null when they could
		 * not be read. */
		if (g->labels_read) {
			jsonw_kobject(w, "labels");
			for (size_t k = 0; k < g->nlabels; k++)
				jsonw_kstr(w, g->labels[2 * k], g->labels[2 * k + 1]);
			jsonw_object_end(w);
		} else {
			jsonw_knull(w, "labels");
		}
		jsonw_karray(w, "frames");
		for (size_t k = 0; k < g->nframes; k++)
			format_json_frame(w, &g->frames[k]);
		jsonw_array_end(w);
		json_waits(w, s, g);
		jsonw_kstr(w, "unwind_stop", g->unwind_stop);
		if (g->retakes)
			jsonw_kint(w, "retakes", g->retakes);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
}
