// SPDX-License-Identifier: MIT
// Goroutines in saved snapshots (snapio-go.h): the dump's own members
// written again, and a strict reader of them that builds the snapshot's
// goroutines and wait objects back.
#include "snapio-go.h"

#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format-go.h"

void snapio_go_put(struct jsonw *w, const struct sd_snapshot *s)
{
	if (!s->go_read)
		return;
	format_go_json(w, s);
	jsonw_key(w, "go_objects");
	format_go_objects_json(w, s);
}

/* ---- reading ------------------------------------------------------------ */

/* Where the reader is ("goroutines[3].frames[0]") and the first error. */
struct gr {
	struct sd_snapshot *s;
	char *err;
	size_t errlen;
	char path[160];
	size_t plen;
	int failed;
};

static size_t push(struct gr *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t push(struct gr *r, const char *fmt, ...)
{
	size_t old = r->plen;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(r->path + r->plen, sizeof(r->path) - r->plen, fmt, ap);
	va_end(ap);
	if (n > 0)
		r->plen += (size_t)n;
	if (r->plen >= sizeof(r->path))
		r->plen = sizeof(r->path) - 1;
	return old;
}

static void pop(struct gr *r, size_t old)
{
	r->plen = old;
	r->path[old] = '\0';
}

static int fail(struct gr *r, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct gr *r, const char *key, const char *fmt, ...)
{
	if (r->failed)
		return -1;
	r->failed = 1;
	char what[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(r->err, r->errlen, "%s%s%s: %s", r->path, key && r->plen ? "." : "",
		 key ? key : "", what);
	return -1;
}

static const char *tname(const json_t *j)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "something else";
}

/* Member KEY of O as an integer in [LO, HI]: 1 read, 0 absent or null (a
 * failure when REQUIRED), -1 wrong. */
static int get_int(struct gr *r, const json_t *o, const char *key, int required, long long lo,
		   long long hi, long long *out)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return required ? fail(r, key, v ? "must not be null" : "missing") : 0;
	if (!json_is_integer(v))
		return fail(r, key, "expected an integer, found %s", tname(v));
	long long x = json_integer_value(v);
	if (x < lo || x > hi)
		return fail(r, key, "%lld is out of range (%lld..%lld)", x, lo, hi);
	*out = x;
	return 1;
}

static int get_str(struct gr *r, const json_t *o, const char *key, int required, const char **out)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return required ? fail(r, key, v ? "must not be null" : "missing") : 0;
	if (!json_is_string(v))
		return fail(r, key, "expected a string, found %s", tname(v));
	*out = strpool_intern_n(r->s->pool, json_string_value(v), json_string_length(v));
	return 1;
}

static int get_bool(struct gr *r, const json_t *o, const char *key, int *out)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return fail(r, key, "expected true or false, found %s", tname(v));
	*out = json_is_true(v);
	return 1;
}

static int get_hex(struct gr *r, const json_t *o, const char *key, int required, uint64_t *out)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return required ? fail(r, key, v ? "must not be null" : "missing") : 0;
	const char *p = json_is_string(v) ? json_string_value(v) : NULL;
	if (!p)
		return fail(r, key, "expected a hex string (\"0x...\"), found %s", tname(v));
	char *end;
	if (p[0] != '0' || (p[1] != 'x' && p[1] != 'X') || !p[2] || strlen(p) > 18)
		return fail(r, key, "invalid hex number \"%.40s\"", p);
	unsigned long long x = strtoull(p + 2, &end, 16);
	if (*end)
		return fail(r, key, "invalid hex number \"%.40s\"", p);
	*out = x;
	return 1;
}

/* Member KEY as an array (NULL: absent or null, or wrong: r->failed). */
static json_t *get_array(struct gr *r, const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return NULL;
	if (!json_is_array(v)) {
		fail(r, key, "expected an array, found %s", tname(v));
		return NULL;
	}
	return v;
}

/* A frame object, as the dump writes it. */
static int read_frame(struct gr *r, const json_t *o, struct sd_frame *f)
{
	memset(f, 0, sizeof(*f));
	if (!json_is_object(o))
		return fail(r, NULL, "expected a frame object, found %s", tname(o));
	long long line = 0;
	int inl = 0, sig = 0;
	if (get_hex(r, o, "addr", 1, &f->pc) < 0 || get_hex(r, o, "offset", 0, &f->offset) < 0 ||
	    get_str(r, o, "module", 0, &f->module) < 0 ||
	    get_str(r, o, "build_id", 0, &f->build_id) < 0 ||
	    get_str(r, o, "function", 0, &f->function) < 0 ||
	    get_str(r, o, "file", 0, &f->file) < 0 ||
	    get_int(r, o, "line", 0, 0, INT_MAX, &line) < 0 ||
	    get_bool(r, o, "inlined", &inl) < 0 || get_bool(r, o, "signal_frame", &sig) < 0)
		return -1;
	f->line = (int)line;
	f->flags = (inl ? SD_FRAME_INLINED : 0) | (sig ? SD_FRAME_SIGNAL : 0);
	return 0;
}

/* An array of goroutine ids (KEY of O) into a heap array. */
static int read_ids(struct gr *r, const json_t *o, const char *key, uint64_t **out, size_t *n)
{
	json_t *a = get_array(r, o, key);
	if (r->failed)
		return -1;
	size_t len = json_array_size(a);
	*out = sd_xcalloc(len ? len : 1, sizeof(**out));
	*n = 0;
	for (size_t i = 0; i < len; i++) {
		json_t *v = json_array_get(a, i);
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			push(r, ".%s[%zu]", key, i);
			return fail(r, NULL, "expected a goroutine id, found %s", tname(v));
		}
		(*out)[(*n)++] = (uint64_t)json_integer_value(v);
	}
	return 0;
}

static int read_object(struct gr *r, const json_t *o, struct sd_goobject *ob)
{
	memset(ob, 0, sizeof(*ob));
	ob->locked = -1;
	ob->holder_frame = -1;
	if (!json_is_object(o))
		return fail(r, NULL, "expected an object, found %s", tname(o));
	long long x = 0;
	int locked = 0;
	if (get_str(r, o, "kind", 1, &ob->kind) < 0 ||
	    get_hex(r, o, "address", 1, &ob->address) < 0 ||
	    get_str(r, o, "symbol", 0, &ob->symbol) < 0 ||
	    get_str(r, o, "mode", 0, &ob->mode) < 0 || get_str(r, o, "note", 0, &ob->note) < 0)
		return -1;
	int k = get_bool(r, o, "locked", &locked);
	if (k < 0)
		return -1;
	if (k > 0) {
		ob->locked = locked;
		if (get_int(r, o, "counted_waiters", 0, 0, UINT_MAX, &x) < 0)
			return -1;
		ob->counted = (unsigned)x;
	}
	x = 0;
	if (get_int(r, o, "holder", 0, 1, LLONG_MAX, &x) < 0)
		return -1;
	ob->holder = (uint64_t)x;
	x = -1;
	if (get_int(r, o, "holder_frame", 0, 0, INT_MAX, &x) < 0)
		return -1;
	ob->holder_frame = ob->holder ? (int)x : -1;
	if (read_ids(r, o, "waiters", &ob->waiters, &ob->nwaiters) < 0)
		return -1;
	json_t *c = get_array(r, o, "candidates");
	if (r->failed)
		return -1;
	size_t nc = json_array_size(c);
	ob->candidates = sd_xcalloc(nc ? nc : 1, sizeof(*ob->candidates));
	ob->candidate_frames = sd_xcalloc(nc ? nc : 1, sizeof(*ob->candidate_frames));
	for (size_t i = 0; i < nc; i++) {
		size_t old = push(r, ".candidates[%zu]", i);
		json_t *e = json_array_get(c, i);
		long long gid = 0, fr = -1;
		if (!json_is_object(e))
			return fail(r, NULL, "expected an object, found %s", tname(e));
		if (get_int(r, e, "goroutine", 1, 0, LLONG_MAX, &gid) < 0 ||
		    get_int(r, e, "frame", 0, 0, INT_MAX, &fr) < 0)
			return -1;
		ob->candidates[ob->ncandidates] = (uint64_t)gid;
		ob->candidate_frames[ob->ncandidates++] = (int)fr;
		pop(r, old);
	}
	return 0;
}

/* The object of S of KIND at ADDR, or a new one (a dump's JSON has no
 * "go_objects": its objects are what its goroutines wait on). */
static size_t object_at(struct gr *r, size_t *cap, const char *kind, uint64_t addr, int add)
{
	struct sd_snapshot *s = r->s;
	for (size_t i = 0; i < s->ngoobjects; i++)
		if (s->goobjects[i].address == addr && !strcmp(s->goobjects[i].kind, kind))
			return i;
	if (!add)
		return (size_t)-1;
	sd_grow(&s->goobjects, cap, s->ngoobjects + 1, sizeof(*s->goobjects));
	struct sd_goobject *ob = &s->goobjects[s->ngoobjects];
	memset(ob, 0, sizeof(*ob));
	ob->kind = kind;
	ob->address = addr;
	ob->locked = -1;
	ob->holder_frame = -1;
	ob->waiters = sd_xcalloc(1, sizeof(*ob->waiters));
	ob->candidates = sd_xcalloc(1, sizeof(*ob->candidates));
	ob->candidate_frames = sd_xcalloc(1, sizeof(*ob->candidate_frames));
	return s->ngoobjects++;
}

/* "waiting_on" and "holds" of goroutine G. REBUILD: the file has no
 * "go_objects", the objects are made from these. */
static int read_waits(struct gr *r, const json_t *o, struct sd_goroutine *g, int rebuild,
		      size_t *ocap)
{
	struct sd_snapshot *s = r->s;
	json_t *a = get_array(r, o, "waiting_on");
	if (r->failed)
		return -1;
	size_t n = json_array_size(a);
	g->waits_on = sd_xcalloc(n ? n : 1, sizeof(*g->waits_on));
	for (size_t i = 0; i < n; i++) {
		size_t old = push(r, ".waiting_on[%zu]", i);
		json_t *e = json_array_get(a, i);
		const char *kind = NULL, *sym = NULL, *mode = NULL;
		uint64_t addr = 0;
		long long holder = 0;
		if (!json_is_object(e))
			return fail(r, NULL, "expected an object, found %s", tname(e));
		if (get_str(r, e, "kind", 1, &kind) < 0 || get_hex(r, e, "address", 1, &addr) < 0 ||
		    get_str(r, e, "symbol", 0, &sym) < 0 || get_str(r, e, "mode", 0, &mode) < 0 ||
		    get_int(r, e, "holder", 0, 1, LLONG_MAX, &holder) < 0)
			return -1;
		size_t k = object_at(r, ocap, kind, addr, rebuild);
		if (k == (size_t)-1)
			return fail(r, NULL, "%s 0x%llx is not among go_objects", kind,
				    (unsigned long long)addr);
		struct sd_goobject *ob = &s->goobjects[k];
		if (rebuild) {
			ob->symbol = ob->symbol ? ob->symbol : sym;
			if (holder)
				ob->holder = (uint64_t)holder;
			if (mode)
				ob->mode = mode;
			ob->waiters =
			    sd_xrealloc(ob->waiters, (ob->nwaiters + 1) * sizeof(uint64_t));
			ob->waiters[ob->nwaiters++] = g->id;
		}
		if (mode)
			g->wait_mode = mode;
		g->waits_on[g->nwaits_on++] = k;
		pop(r, old);
	}
	a = get_array(r, o, "holds");
	if (r->failed)
		return -1;
	for (size_t i = 0; i < json_array_size(a); i++) {
		size_t old = push(r, ".holds[%zu]", i);
		json_t *e = json_array_get(a, i);
		const char *kind = NULL;
		uint64_t addr = 0;
		long long fr = -1;
		int certain = 0;
		if (!json_is_object(e))
			return fail(r, NULL, "expected an object, found %s", tname(e));
		if (get_str(r, e, "kind", 1, &kind) < 0 || get_hex(r, e, "address", 1, &addr) < 0 ||
		    get_int(r, e, "frame", 0, 0, INT_MAX, &fr) < 0 ||
		    get_bool(r, e, "certain", &certain) < 0)
			return -1;
		g->nholds++;
		size_t k = object_at(r, ocap, kind, addr, rebuild);
		if (rebuild && k != (size_t)-1) {
			struct sd_goobject *ob = &s->goobjects[k];
			size_t c = ob->ncandidates;
			ob->candidates = sd_xrealloc(ob->candidates, (c + 1) * sizeof(uint64_t));
			ob->candidate_frames =
			    sd_xrealloc(ob->candidate_frames, (c + 1) * sizeof(int));
			ob->candidates[c] = g->id;
			ob->candidate_frames[c] = (int)fr;
			ob->ncandidates++;
			if (certain) {
				ob->holder = g->id;
				ob->holder_frame = (int)fr;
			}
		}
		pop(r, old);
	}
	return 0;
}

static int read_labels(struct gr *r, const json_t *o, struct sd_goroutine *g)
{
	json_t *l = json_object_get(o, "labels");
	if (!l || json_is_null(l))
		return 0;
	if (!json_is_object(l))
		return fail(r, "labels", "expected an object, found %s", tname(l));
	size_t n = json_object_size(l), k = 0;
	g->labels = sd_xcalloc(2 * (n ? n : 1), sizeof(*g->labels));
	const char *key;
	json_t *v;
	json_object_foreach(l, key, v)
	{
		if (!json_is_string(v))
			return fail(r, "labels", "the value of \"%.40s\" is %s, not a string", key,
				    tname(v));
		g->labels[2 * k] = strpool_intern(r->s->pool, key);
		g->labels[2 * k + 1] = strpool_intern(r->s->pool, json_string_value(v));
		k++;
	}
	g->nlabels = k;
	g->labels_read = 1;
	return 0;
}

static int read_goroutine(struct gr *r, const json_t *o, struct sd_goroutine *g, int rebuild,
			  size_t *ocap)
{
	long long x = 0;
	if (!json_is_object(o))
		return fail(r, NULL, "expected a goroutine object, found %s", tname(o));
	if (get_int(r, o, "id", 1, 0, LLONG_MAX, &x) < 0)
		return -1;
	g->id = (uint64_t)x;
	const char *st = NULL;
	if (get_str(r, o, "status", 1, &st) < 0)
		return -1;
	int k = sd_go_status_parse(st);
	if (k < 0)
		return fail(r, "status",
			    "\"%.40s\" is no goroutine status (idle, runnable, running, syscall, "
			    "waiting, preempted, copystack)",
			    st);
	g->status = (enum sd_go_status)k;
	if (get_str(r, o, "wait_reason", 0, &g->wait_reason) < 0 ||
	    get_str(r, o, "unwind_stop", 0, &g->unwind_stop) < 0)
		return -1;
	json_t *ws = json_object_get(o, "wait_seconds");
	if (ws && !json_is_null(ws)) {
		if (!json_is_number(ws) || json_number_value(ws) < 0)
			return fail(r, "wait_seconds",
				    "expected a number of seconds or null, found %s",
				    json_is_number(ws) ? "a negative number" : tname(ws));
		g->wait_seconds = json_number_value(ws);
	}
	x = 0;
	if (get_int(r, o, "thread", 0, 1, INT_MAX, &x) < 0)
		return -1;
	g->thread = (pid_t)x;
	x = 0;
	if (get_int(r, o, "parent", 0, 0, LLONG_MAX, &x) < 0)
		return -1;
	g->parent = (uint64_t)x;
	x = 0;
	if (get_int(r, o, "retakes", 0, 0, UINT_MAX, &x) < 0)
		return -1;
	g->retakes = (unsigned)x;
	if (get_bool(r, o, "locked", &g->locked) < 0)
		return -1;
	json_t *cb = json_object_get(o, "created_by");
	if (cb && !json_is_null(cb)) {
		size_t old = push(r, ".created_by");
		if (read_frame(r, cb, &g->created_by) < 0)
			return -1;
		pop(r, old);
	}
	if (read_labels(r, o, g) < 0)
		return -1;
	json_t *fr = get_array(r, o, "frames");
	if (r->failed)
		return -1;
	size_t nf = json_array_size(fr);
	g->frames = sd_xcalloc(nf ? nf : 1, sizeof(*g->frames));
	for (size_t i = 0; i < nf; i++) {
		size_t old = push(r, ".frames[%zu]", i);
		if (read_frame(r, json_array_get(fr, i), &g->frames[i]) < 0)
			return -1;
		g->nframes++;
		pop(r, old);
	}
	return read_waits(r, o, g, rebuild, ocap);
}

int snapio_go_load(const struct json_t *doc, struct sd_snapshot *s, char *err, size_t errlen)
{
	struct gr r = {.s = s, .err = err, .errlen = errlen};
	json_t *go = json_object_get(doc, "go");
	if (!go || json_is_null(go))
		return 0;
	if (!json_is_object(go))
		return fail(&r, "go", "expected an object, found %s", tname(go));
	size_t old = push(&r, "go");
	if (get_str(&r, go, "version", 0, &s->go_version) < 0 ||
	    get_str(&r, go, "note", 0, &s->go_note) < 0 ||
	    get_str(&r, go, "objects_note", 0, &s->golocks_note) < 0)
		return -1;
	pop(&r, old);
	s->go_read = 1;
	size_t ocap = 0;
	json_t *objs = get_array(&r, doc, "go_objects");
	if (r.failed)
		return -1;
	for (size_t i = 0; objs && i < json_array_size(objs); i++) {
		old = push(&r, "go_objects[%zu]", i);
		sd_grow(&s->goobjects, &ocap, s->ngoobjects + 1, sizeof(*s->goobjects));
		if (read_object(&r, json_array_get(objs, i), &s->goobjects[s->ngoobjects++]) < 0)
			return -1;
		pop(&r, old);
	}
	json_t *gs = get_array(&r, doc, "goroutines");
	if (r.failed)
		return -1;
	size_t n = json_array_size(gs);
	s->goroutines = sd_xcalloc(n ? n : 1, sizeof(*s->goroutines));
	for (size_t i = 0; i < n; i++) {
		old = push(&r, "goroutines[%zu]", i);
		struct sd_goroutine *g = &s->goroutines[s->ngoroutines++];
		memset(g, 0, sizeof(*g));
		g->wait_seconds = -1;
		if (read_goroutine(&r, json_array_get(gs, i), g, !objs, &ocap) < 0)
			return -1;
		pop(&r, old);
	}
	return 0;
}
