// SPDX-License-Identifier: MIT
// Goroutines rendered (format-go.h): Go's traceback form for people, the
// dump schema's "goroutines" for programs.
#include "format-go.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "goroutines.h"
#include "hashmap.h"

const char *format_go_status(const struct sd_goroutine *g)
{
	if (g->status == SD_GO_WAITING && g->wait_reason)
		return g->wait_reason;
	return goroutine_status_name(g->status);
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

static void frame_lines(struct strbuf *out, const struct sd_frame *f, const struct sd_render_opts *o)
{
	if (f->function)
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

static void body(struct strbuf *out, const struct sd_goroutine *g, const struct sd_render_opts *o)
{
	for (size_t k = 0; k < g->nframes; k++)
		frame_lines(out, &g->frames[k], o);
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

/* What Go prints after the status: the wait, "locked to thread", and
 * ours: the thread that runs it. */
static void tail(struct strbuf *out, const struct sd_goroutine *g, double lo, double hi,
		 int one)
{
	if (g->status == SD_GO_WAITING)
		minutes(out, lo, hi);
	if (g->locked)
		strbuf_adds(out, ", locked to thread");
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
	return h ? h : 1;
}

static int same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static int same(const struct sd_goroutine *a, const struct sd_goroutine *b)
{
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

struct gent {
	uint64_t key;
	size_t first; /* index of the group's first goroutine */
	size_t group;
};

struct gkeyarg {
	uint64_t key;
	const struct sd_snapshot *s;
	size_t idx;
};

static int gent_eq(const void *e, const void *k)
{
	const struct gent *x = e;
	const struct gkeyarg *a = k;
	return x->key == a->key && same(&a->s->goroutines[x->first], &a->s->goroutines[a->idx]);
}

/* Group index of each goroutine (*OF), groups in order of their first. */
static size_t group(const struct sd_snapshot *s, size_t *of, size_t *count)
{
	struct hashmap m;
	hashmap_init(&m, sizeof(struct gent));
	size_t n = 0;
	for (size_t i = 0; i < s->ngoroutines; i++) {
		struct gkeyarg a = {gkey(&s->goroutines[i]), s, i};
		int found;
		struct gent *e = hashmap_put(&m, a.key, &a, gent_eq, &found);
		if (!found) {
			e->key = a.key;
			e->first = i;
			e->group = n++;
			count[e->group] = 0;
		}
		of[i] = e->group;
		count[e->group]++;
	}
	hashmap_release(&m);
	return n;
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
			tail(out, g, g->wait_seconds, g->wait_seconds, 1);
			strbuf_adds(out, "]:\n");
			body(out, g, o);
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
		tail(out, g, lo, hi, 0);
		strbuf_addf(out, "]: %s\n", ids.buf);
		strbuf_release(&ids);
		body(out, g, o);
	}
	free(shown);
	free(of);
	free(count);
}

void format_go_json(struct jsonw *w, const struct sd_snapshot *s)
{
	if (!s->go_read)
		return;
	jsonw_kobject(w, "go");
	jsonw_kstr(w, "version", s->go_version);
	jsonw_kstr(w, "note", s->go_note);
	jsonw_object_end(w);
	jsonw_karray(w, "goroutines");
	for (size_t i = 0; i < s->ngoroutines; i++) {
		const struct sd_goroutine *g = &s->goroutines[i];
		jsonw_object_begin(w);
		jsonw_ku64(w, "id", g->id);
		jsonw_kstr(w, "status", goroutine_status_name(g->status));
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
		/* pprof labels are not read yet: null says so (an object when
		 * they are). */
		jsonw_knull(w, "labels");
		jsonw_karray(w, "frames");
		for (size_t k = 0; k < g->nframes; k++)
			format_json_frame(w, &g->frames[k]);
		jsonw_array_end(w);
		jsonw_kstr(w, "unwind_stop", g->unwind_stop);
		if (g->retakes)
			jsonw_kint(w, "retakes", g->retakes);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
}
