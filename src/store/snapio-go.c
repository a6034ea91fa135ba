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
#include "jsonrd.h"

void snapio_go_put(struct jsonw *w, const struct sd_snapshot *s)
{
	if (!s->go_read)
		return;
	format_go_json(w, s);
	jsonw_key(w, "go_objects");
	format_go_objects_json(w, s);
}

/* ---- reading ------------------------------------------------------------ */

/* An array of goroutine ids (KEY of O) into a heap array. */
static int read_ids(struct sd_jrd *r, const json_t *o, const char *key, uint64_t **out, size_t *n)
{
	json_t *a = jrd_array(r, o, key, 0);
	if (r->failed)
		return -1;
	size_t len = json_array_size(a);
	*out = sd_xcalloc(len ? len : 1, sizeof(**out));
	*n = 0;
	for (size_t i = 0; i < len; i++) {
		json_t *v = json_array_get(a, i);
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			jrd_push(r, ".%s[%zu]", key, i);
			return jrd_fail(r, NULL, "expected a goroutine id, found %s", jrd_type_name(v));
		}
		(*out)[(*n)++] = (uint64_t)json_integer_value(v);
	}
	return 0;
}

static int read_object(struct sd_jrd *r, const json_t *o, struct sd_goobject *ob)
{
	memset(ob, 0, sizeof(*ob));
	ob->locked = -1;
	ob->holder_frame = -1;
	if (!json_is_object(o))
		return jrd_fail(r, NULL, "expected an object, found %s", jrd_type_name(o));
	long long x = 0;
	int locked = 0;
	if (jrd_str(r, o, "kind", 1, &ob->kind) < 0 ||
	    jrd_hex(r, o, "address", 1, &ob->address) < 0 ||
	    jrd_str(r, o, "symbol", 0, &ob->symbol) < 0 ||
	    jrd_str(r, o, "mode", 0, &ob->mode) < 0 || jrd_str(r, o, "note", 0, &ob->note) < 0)
		return -1;
	int k = jrd_bool(r, o, "locked", &locked);
	if (k < 0)
		return -1;
	if (k > 0) {
		ob->locked = locked;
		if (jrd_int(r, o, "counted_waiters", 0, 0, UINT_MAX, &x) < 0)
			return -1;
		ob->counted = (unsigned)x;
	}
	x = 0;
	if (jrd_int(r, o, "holder", 0, 1, LLONG_MAX, &x) < 0)
		return -1;
	ob->holder = (uint64_t)x;
	x = -1;
	if (jrd_int(r, o, "holder_frame", 0, 0, INT_MAX, &x) < 0)
		return -1;
	ob->holder_frame = ob->holder ? (int)x : -1;
	if (read_ids(r, o, "waiters", &ob->waiters, &ob->nwaiters) < 0)
		return -1;
	json_t *c = jrd_array(r, o, "candidates", 0);
	if (r->failed)
		return -1;
	size_t nc = json_array_size(c);
	ob->candidates = sd_xcalloc(nc ? nc : 1, sizeof(*ob->candidates));
	ob->candidate_frames = sd_xcalloc(nc ? nc : 1, sizeof(*ob->candidate_frames));
	for (size_t i = 0; i < nc; i++) {
		size_t old = jrd_push(r, ".candidates[%zu]", i);
		json_t *e = json_array_get(c, i);
		long long gid = 0, fr = -1;
		if (!json_is_object(e))
			return jrd_fail(r, NULL, "expected an object, found %s", jrd_type_name(e));
		if (jrd_int(r, e, "goroutine", 1, 0, LLONG_MAX, &gid) < 0 ||
		    jrd_int(r, e, "frame", 0, 0, INT_MAX, &fr) < 0)
			return -1;
		ob->candidates[ob->ncandidates] = (uint64_t)gid;
		ob->candidate_frames[ob->ncandidates++] = (int)fr;
		jrd_pop(r, old);
	}
	return 0;
}

/* The object of S of KIND at ADDR, or a new one (a dump's JSON has no
 * "go_objects": its objects are what its goroutines wait on). */
static size_t object_at(struct sd_jrd *r, size_t *cap, const char *kind, uint64_t addr, int add)
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
static int read_waits(struct sd_jrd *r, const json_t *o, struct sd_goroutine *g, int rebuild,
		      size_t *ocap)
{
	struct sd_snapshot *s = r->s;
	json_t *a = jrd_array(r, o, "waiting_on", 0);
	if (r->failed)
		return -1;
	size_t n = json_array_size(a);
	g->waits_on = sd_xcalloc(n ? n : 1, sizeof(*g->waits_on));
	for (size_t i = 0; i < n; i++) {
		size_t old = jrd_push(r, ".waiting_on[%zu]", i);
		json_t *e = json_array_get(a, i);
		const char *kind = NULL, *sym = NULL, *mode = NULL;
		uint64_t addr = 0;
		long long holder = 0;
		if (!json_is_object(e))
			return jrd_fail(r, NULL, "expected an object, found %s", jrd_type_name(e));
		if (jrd_str(r, e, "kind", 1, &kind) < 0 || jrd_hex(r, e, "address", 1, &addr) < 0 ||
		    jrd_str(r, e, "symbol", 0, &sym) < 0 || jrd_str(r, e, "mode", 0, &mode) < 0 ||
		    jrd_int(r, e, "holder", 0, 1, LLONG_MAX, &holder) < 0)
			return -1;
		size_t k = object_at(r, ocap, kind, addr, rebuild);
		if (k == (size_t)-1)
			return jrd_fail(r, NULL, "%s 0x%llx is not among go_objects", kind,
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
		jrd_pop(r, old);
	}
	a = jrd_array(r, o, "holds", 0);
	if (r->failed)
		return -1;
	for (size_t i = 0; i < json_array_size(a); i++) {
		size_t old = jrd_push(r, ".holds[%zu]", i);
		json_t *e = json_array_get(a, i);
		const char *kind = NULL;
		uint64_t addr = 0;
		long long fr = -1;
		int certain = 0;
		if (!json_is_object(e))
			return jrd_fail(r, NULL, "expected an object, found %s", jrd_type_name(e));
		if (jrd_str(r, e, "kind", 1, &kind) < 0 || jrd_hex(r, e, "address", 1, &addr) < 0 ||
		    jrd_int(r, e, "frame", 0, 0, INT_MAX, &fr) < 0 ||
		    jrd_bool(r, e, "certain", &certain) < 0)
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
		jrd_pop(r, old);
	}
	return 0;
}

static int read_labels(struct sd_jrd *r, const json_t *o, struct sd_goroutine *g)
{
	json_t *l = json_object_get(o, "labels");
	if (!l || json_is_null(l))
		return 0;
	if (!json_is_object(l))
		return jrd_fail(r, "labels", "expected an object, found %s", jrd_type_name(l));
	size_t n = json_object_size(l), k = 0;
	g->labels = sd_xcalloc(2 * (n ? n : 1), sizeof(*g->labels));
	const char *key;
	json_t *v;
	json_object_foreach(l, key, v)
	{
		if (!json_is_string(v))
			return jrd_fail(r, "labels", "the value of \"%.40s\" is %s, not a string", key,
				    jrd_type_name(v));
		g->labels[2 * k] = strpool_intern(r->s->pool, key);
		g->labels[2 * k + 1] = strpool_intern(r->s->pool, json_string_value(v));
		k++;
	}
	g->nlabels = k;
	g->labels_read = 1;
	return 0;
}

static int read_goroutine(struct sd_jrd *r, const json_t *o, struct sd_goroutine *g, int rebuild,
			  size_t *ocap)
{
	long long x = 0;
	if (!json_is_object(o))
		return jrd_fail(r, NULL, "expected a goroutine object, found %s", jrd_type_name(o));
	if (jrd_int(r, o, "id", 1, 0, LLONG_MAX, &x) < 0)
		return -1;
	g->id = (uint64_t)x;
	const char *st = NULL;
	if (jrd_str(r, o, "status", 1, &st) < 0)
		return -1;
	int k = sd_go_status_parse(st);
	if (k < 0)
		return jrd_fail(r, "status",
			    "\"%.40s\" is no goroutine status (idle, runnable, running, syscall, "
			    "waiting, preempted, copystack)",
			    st);
	g->status = (enum sd_go_status)k;
	if (jrd_str(r, o, "wait_reason", 0, &g->wait_reason) < 0 ||
	    jrd_str(r, o, "unwind_stop", 0, &g->unwind_stop) < 0)
		return -1;
	json_t *ws = json_object_get(o, "wait_seconds");
	if (ws && !json_is_null(ws)) {
		if (!json_is_number(ws) || json_number_value(ws) < 0)
			return jrd_fail(r, "wait_seconds",
				    "expected a number of seconds or null, found %s",
				    json_is_number(ws) ? "a negative number" : jrd_type_name(ws));
		g->wait_seconds = json_number_value(ws);
	}
	x = 0;
	if (jrd_int(r, o, "thread", 0, 1, INT_MAX, &x) < 0)
		return -1;
	g->thread = (pid_t)x;
	x = 0;
	if (jrd_int(r, o, "parent", 0, 0, LLONG_MAX, &x) < 0)
		return -1;
	g->parent = (uint64_t)x;
	x = 0;
	if (jrd_int(r, o, "retakes", 0, 0, UINT_MAX, &x) < 0)
		return -1;
	g->retakes = (unsigned)x;
	if (jrd_bool(r, o, "locked", &g->locked) < 0)
		return -1;
	json_t *cb = json_object_get(o, "created_by");
	if (cb && !json_is_null(cb)) {
		size_t old = jrd_push(r, ".created_by");
		if (jrd_frame(r, cb, &g->created_by) < 0)
			return -1;
		jrd_pop(r, old);
	}
	if (read_labels(r, o, g) < 0)
		return -1;
	json_t *fr = jrd_array(r, o, "frames", 0);
	if (r->failed)
		return -1;
	size_t nf = json_array_size(fr);
	g->frames = sd_xcalloc(nf ? nf : 1, sizeof(*g->frames));
	for (size_t i = 0; i < nf; i++) {
		size_t old = jrd_push(r, ".frames[%zu]", i);
		if (jrd_frame(r, json_array_get(fr, i), &g->frames[i]) < 0)
			return -1;
		g->nframes++;
		jrd_pop(r, old);
	}
	return read_waits(r, o, g, rebuild, ocap);
}

static int go_load(struct sd_jrd *r, const json_t *doc, struct sd_snapshot *s)
{
	json_t *go = json_object_get(doc, "go");
	if (!go || json_is_null(go))
		return 0;
	if (!json_is_object(go))
		return jrd_fail(r, "go", "expected an object, found %s", jrd_type_name(go));
	size_t old = jrd_push(r, "go");
	if (jrd_str(r, go, "version", 0, &s->go_version) < 0 ||
	    jrd_str(r, go, "note", 0, &s->go_note) < 0 ||
	    jrd_str(r, go, "objects_note", 0, &s->golocks_note) < 0)
		return -1;
	jrd_pop(r, old);
	s->go_read = 1;
	size_t ocap = 0;
	json_t *objs = jrd_array(r, doc, "go_objects", 0);
	if (r->failed)
		return -1;
	for (size_t i = 0; objs && i < json_array_size(objs); i++) {
		old = jrd_push(r, "go_objects[%zu]", i);
		sd_grow(&s->goobjects, &ocap, s->ngoobjects + 1, sizeof(*s->goobjects));
		if (read_object(r, json_array_get(objs, i), &s->goobjects[s->ngoobjects++]) < 0)
			return -1;
		jrd_pop(r, old);
	}
	json_t *gs = jrd_array(r, doc, "goroutines", 0);
	if (r->failed)
		return -1;
	size_t n = json_array_size(gs);
	s->goroutines = sd_xcalloc(n ? n : 1, sizeof(*s->goroutines));
	for (size_t i = 0; i < n; i++) {
		old = jrd_push(r, "goroutines[%zu]", i);
		struct sd_goroutine *g = &s->goroutines[s->ngoroutines++];
		memset(g, 0, sizeof(*g));
		g->wait_seconds = -1;
		if (read_goroutine(r, json_array_get(gs, i), g, !objs, &ocap) < 0)
			return -1;
		jrd_pop(r, old);
	}
	return 0;
}

int snapio_go_load(const struct json_t *doc, struct sd_snapshot *s, char *err, size_t errlen)
{
	struct sd_jrd r = {.s = s};
	int rc = go_load(&r, doc, s);
	if (rc < 0)
		snprintf(err, errlen, "%s", r.msg);
	return rc;
}
