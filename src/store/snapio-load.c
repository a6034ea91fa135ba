// SPDX-License-Identifier: MIT
// Saved snapshots, loaded strictly: every member checked for its type and
// range, the place of anything wrong named ("threads[2].frames[0].addr")
// instead of trusting it, gzip recognized by its magic.
#include "snapio.h"
#include "snapio-tokio.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapio-go.h"

/* ---- loading ---------------------------------------------------------- */

/* The place being read, as a member path ("threads[2].frames[0].addr"),
 * and the first error. */
struct rd {
	const char *name;
	struct sd_error *err;
	struct sd_snapshot *s;
	char path[256];
	size_t plen;
	int failed;
};

static size_t rd_push(struct rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t rd_push(struct rd *r, const char *fmt, ...)
{
	size_t old = r->plen;
	va_list ap;
	va_start(ap, fmt);
	if (r->plen < sizeof(r->path)) {
		int n = vsnprintf(r->path + r->plen, sizeof(r->path) - r->plen, fmt, ap);
		if (n > 0)
			r->plen += (size_t)n;
		if (r->plen >= sizeof(r->path))
			r->plen = sizeof(r->path) - 1;
	}
	va_end(ap);
	return old;
}

static void rd_pop(struct rd *r, size_t old)
{
	r->plen = old;
	r->path[old] = '\0';
}

static int rd_fail(struct rd *r, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int rd_fail(struct rd *r, const char *key, const char *fmt, ...)
{
	if (r->failed)
		return -1;
	r->failed = 1;
	char what[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	const char *sep = r->plen && key ? (key[0] == '[' ? "" : ".") : "";
	if (!r->plen && !key)
		sd_error_set(r->err, EINVAL, "%s: %s", r->name, what);
	else
		sd_error_set(r->err, EINVAL, "%s: %s%s%s: %s", r->name, r->path, sep,
			     key ? key : "", what);
	return -1;
}

static const char *type_name(const json_t *j)
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

/* Member KEY of O: NULL when absent (or null and NULLOK); a failure when
 * absent and REQUIRED. *BAD is set on failure. */
static json_t *member(struct rd *r, json_t *o, const char *key, int required, int *bad)
{
	json_t *v = json_object_get(o, key);
	if (required && (!v || json_is_null(v))) {
		rd_fail(r, key, v ? "must not be null" : "missing");
		*bad = 1;
	}
	return v;
}

static int get_int(struct rd *r, json_t *o, const char *key, int required, long long lo,
		   long long hi, long long *out)
{
	int bad = 0;
	json_t *v = member(r, o, key, required, &bad);
	if (bad)
		return -1;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return rd_fail(r, key, "expected an integer, found %s", type_name(v));
	long long x = json_integer_value(v);
	if (x < lo || x > hi)
		return rd_fail(r, key, "%lld is out of range (%lld..%lld)", x, lo, hi);
	*out = x;
	return 1;
}

static int get_u64(struct rd *r, json_t *o, const char *key, uint64_t *out)
{
	long long x = 0;
	int k = get_int(r, o, key, 0, 0, LLONG_MAX, &x);
	if (k > 0)
		*out = (uint64_t)x;
	return k;
}

static int get_real(struct rd *r, json_t *o, const char *key, double *out)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return rd_fail(r, key, "expected a number, found %s", type_name(v));
	*out = json_number_value(v);
	return 1;
}

static int get_bool(struct rd *r, json_t *o, const char *key, int *out)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return rd_fail(r, key, "expected true or false, found %s", type_name(v));
	*out = json_is_true(v);
	return 1;
}

/* A string member, interned in the snapshot's pool. */
static int get_str(struct rd *r, json_t *o, const char *key, int required, const char **out)
{
	int bad = 0;
	json_t *v = member(r, o, key, required, &bad);
	if (bad)
		return -1;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return rd_fail(r, key, "expected a string, found %s", type_name(v));
	*out = strpool_intern_n(r->s->pool, json_string_value(v), json_string_length(v));
	return 1;
}

static int parse_hex(const char *p, uint64_t *out)
{
	if (p[0] != '0' || (p[1] != 'x' && p[1] != 'X') || !p[2])
		return -1;
	uint64_t v = 0;
	for (p += 2; *p; p++) {
		int d;
		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			d = *p - 'A' + 10;
		else
			return -1;
		if (v >> 60)
			return -1; /* would overflow */
		v = v << 4 | (uint64_t)d;
	}
	*out = v;
	return 0;
}

static int hex_value(struct rd *r, json_t *v, const char *key, uint64_t *out)
{
	if (!json_is_string(v))
		return rd_fail(r, key, "expected a hex string (\"0x...\"), found %s", type_name(v));
	if (parse_hex(json_string_value(v), out) < 0)
		return rd_fail(r, key, "invalid hex number \"%.40s\"", json_string_value(v));
	return 1;
}

static int get_hex(struct rd *r, json_t *o, const char *key, int required, uint64_t *out)
{
	int bad = 0;
	json_t *v = member(r, o, key, required, &bad);
	if (bad)
		return -1;
	if (!v || json_is_null(v))
		return 0;
	return hex_value(r, v, key, out);
}

static int get_char(struct rd *r, json_t *o, const char *key, char *out)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v) || json_string_length(v) != 1)
		return rd_fail(r, key, "expected a one-letter state like \"S\"");
	*out = json_string_value(v)[0];
	return 1;
}

static json_t *get_array(struct rd *r, json_t *o, const char *key, int required)
{
	int bad = 0;
	json_t *v = member(r, o, key, required, &bad);
	if (bad || !v || (json_is_null(v) && !required))
		return NULL;
	if (!json_is_array(v)) {
		rd_fail(r, key, "expected an array, found %s", type_name(v));
		return NULL;
	}
	return v;
}

static json_t *get_object(struct rd *r, json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return NULL;
	if (!json_is_object(v)) {
		rd_fail(r, key, "expected an object, found %s", type_name(v));
		return NULL;
	}
	return v;
}

static int read_frame(struct rd *r, json_t *o, struct sd_frame *f)
{
	long long x = 0;
	int b;
	uint64_t u = 0;
	if (!json_is_object(o))
		return rd_fail(r, NULL, "expected a frame object, found %s", type_name(o));
	if (get_hex(r, o, "addr", 1, &f->pc) < 0)
		return -1;
	if (get_hex(r, o, "sp", 0, &f->sp) < 0 || get_hex(r, o, "offset", 0, &f->offset) < 0)
		return -1;
	if (get_str(r, o, "module", 0, &f->module) < 0 ||
	    get_str(r, o, "build_id", 0, &f->build_id) < 0 ||
	    get_str(r, o, "function", 0, &f->function) < 0 ||
	    get_str(r, o, "file", 0, &f->file) < 0)
		return -1;
	if (get_int(r, o, "line", 0, 0, INT_MAX, &x) < 0)
		return -1;
	f->line = json_is_integer(json_object_get(o, "line")) ? (int)x : 0;
	if (get_u64(r, o, "symoff", &u) < 0)
		return -1;
	if (json_is_integer(json_object_get(o, "symoff")))
		f->symoff = u;
	static const struct {
		const char *key;
		unsigned flag;
	} flags[] = {
	    {"inlined", SD_FRAME_INLINED}, {"signal_frame", SD_FRAME_SIGNAL},
	    {"exact", SD_FRAME_EXACT},	   {"fp", SD_FRAME_FP},
	    {"debuginfo", SD_FRAME_DEBUGINFO},
	};
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		b = 0;
		if (get_bool(r, o, flags[i].key, &b) < 0)
			return -1;
		if (b)
			f->flags |= flags[i].flag;
	}
	return 0;
}

static int read_wait(struct rd *r, json_t *o, struct sd_thread *th)
{
	struct sd_wait *w = &th->wait;
	const char *kind = NULL;
	long long x = 0;
	int b;
	if (get_str(r, o, "kind", 1, &kind) < 0)
		return -1;
	enum sd_wait_kind k = sd_wait_kind_parse(kind);
	/* A kind this version does not know is still a futex wait. */
	if (k < SD_WAIT_MUTEX)
		k = SD_WAIT_FUTEX;
	w->kind = k;
	if (get_hex(r, o, "address", 0, &w->address) < 0 || get_str(r, o, "symbol", 0, &w->symbol) < 0 ||
	    get_str(r, o, "type", 0, &w->subkind) < 0 || get_str(r, o, "note", 0, &w->note) < 0)
		return -1;
	int k1 = get_int(r, o, "owner", 0, 1, INT_MAX, &x);
	if (k1 < 0)
		return -1;
	if (k1 > 0) {
		w->owner = (pid_t)x;
		w->owner_known = 1;
	}
	int k2 = get_int(r, o, "owner_tid", 0, 1, INT_MAX, &x);
	if (k2 < 0)
		return -1;
	if (k2 > 0 && !w->owner)
		w->owner = (pid_t)x;
	b = w->owner_known;
	if (get_bool(r, o, "owner_known", &b) < 0)
		return -1;
	w->owner_known = b && w->owner > 0;
	const char *ev = NULL;
	if (get_str(r, o, "owner_evidence", 0, &ev) < 0)
		return -1;
	/* Absent (older files): unsaid, as it was. */
	w->owner_evidence = !w->owner_known || !ev	  ? SD_EVIDENCE_NONE
			    : !strcmp(ev, "stack") ? SD_EVIDENCE_STACK
						  : SD_EVIDENCE_MEMORY;
	long long frame = -1;
	if (get_int(r, o, "owner_frame", 0, 0, INT_MAX, &frame) < 0)
		return -1;
	w->owner_frame = w->owner_evidence != SD_EVIDENCE_NONE ? (int)frame : -1;
	return 0;
}

/* The locks a thread held, as lock analysis saw them when it was taken. */
static int read_holds(struct rd *r, json_t *arr, struct sd_thread *th)
{
	size_t n = json_array_size(arr);
	th->holds = sd_xcalloc(n ? n : 1, sizeof(*th->holds));
	for (size_t i = 0; i < n; i++) {
		size_t old = rd_push(r, ".holds[%zu]", i);
		json_t *o = json_array_get(arr, i);
		struct sd_hold *h = &th->holds[th->nholds];
		const char *kind = NULL, *ev = NULL;
		long long x = -1, c = 1;
		if (!json_is_object(o))
			return rd_fail(r, NULL, "expected a hold object, found %s", type_name(o));
		if (get_str(r, o, "kind", 1, &kind) < 0 || get_hex(r, o, "address", 1, &h->address) < 0 ||
		    get_str(r, o, "symbol", 0, &h->symbol) < 0 || get_str(r, o, "mode", 0, &h->mode) < 0 ||
		    get_int(r, o, "frame", 0, 0, INT_MAX, &x) < 0 ||
		    get_str(r, o, "owner_evidence", 0, &ev) < 0 ||
		    get_int(r, o, "candidates", 0, 0, INT_MAX, &c) < 0)
			return -1;
		h->kind = !strcmp(kind, "rwlock") ? SD_WAIT_RWLOCK_READ : sd_wait_kind_parse(kind);
		if (h->kind < SD_WAIT_MUTEX)
			h->kind = SD_WAIT_FUTEX;
		h->frame = (int)x;
		h->evidence = ev && !strcmp(ev, "stack") ? SD_EVIDENCE_STACK : SD_EVIDENCE_MEMORY;
		h->ncandidates = (size_t)c;
		th->nholds++;
		rd_pop(r, old);
	}
	return 0;
}

static long syscall_by_name(const char *n)
{
	if (!strncmp(n, "syscall_", 8)) {
		char *end;
		long v = strtol(n + 8, &end, 10);
		return *end || v < 0 ? -1 : v;
	}
	for (long i = 0; i < 1024; i++) {
		const char *m = procfs_syscall_name(i);
		if (m && !strcmp(m, n))
			return i;
	}
	return -1;
}

/* "lockwords" (the bytes lock analysis read), or "lockmem" in files
 * before them (the raw window around each lock word), KEY: the same
 * members, addr and bytes. */
static int read_lockmem(struct rd *r, json_t *arr, struct sd_thread *th, const char *key)
{
	size_t n = json_array_size(arr);
	if (!n)
		return 0;
	th->lockmem = sd_xrealloc(th->lockmem, (th->nlockmem + n) * sizeof(*th->lockmem));
	memset(th->lockmem + th->nlockmem, 0, n * sizeof(*th->lockmem));
	for (size_t i = 0; i < n; i++) {
		size_t old = rd_push(r, ".%s[%zu]", key, i);
		json_t *e = json_array_get(arr, i);
		struct sd_lockmem *m = &th->lockmem[th->nlockmem];
		const char *hexs = NULL;
		if (!json_is_object(e)) {
			rd_fail(r, NULL, "expected an object, found %s", type_name(e));
			return -1;
		}
		if (get_hex(r, e, "addr", 1, &m->addr) < 0 || get_str(r, e, "bytes", 1, &hexs) < 0)
			return -1;
		size_t hl = strlen(hexs);
		if (hl % 2 || hl / 2 > sizeof(m->bytes))
			return rd_fail(r, "bytes", "expected at most %zu bytes as hex digits",
				       sizeof(m->bytes));
		for (size_t k = 0; k < hl / 2; k++) {
			char two[5] = {'0', 'x', hexs[2 * k], hexs[2 * k + 1], 0};
			uint64_t v;
			if (parse_hex(two, &v) < 0)
				return rd_fail(r, "bytes", "invalid hex digits at %zu", 2 * k);
			m->bytes[k] = (uint8_t)v;
		}
		m->len = (uint32_t)(hl / 2);
		/* Saved bytes were read: saved again if saved once. */
		for (size_t k = 0; k < m->len; k++)
			m->used[k / 64] |= 1ull << (k % 64);
		th->nlockmem++;
		rd_pop(r, old);
	}
	return 0;
}

static int read_thread(struct rd *r, json_t *o, struct sd_thread **out)
{
	long long x = 0;
	int b;
	if (!json_is_object(o))
		return rd_fail(r, NULL, "expected a thread object, found %s", type_name(o));
	if (get_int(r, o, "tid", 1, 1, INT_MAX, &x) < 0)
		return -1;
	struct sd_thread *th = snapshot_add_thread(r->s, (pid_t)x);
	*out = th;
	if (get_str(r, o, "name", 0, &th->name) < 0)
		return -1;
	if (!th->name)
		th->name = strpool_intern(r->s->pool, "");
	if (get_char(r, o, "state", &th->state) < 0)
		return -1;
	if (th->state == '?')
		th->state = 0;
	if (get_str(r, o, "wchan", 0, &th->wchan) < 0)
		return -1;

	/* The syscall: by number when the file has it, else by name. */
	int knr = get_int(r, o, "syscall_nr", 0, -1, 4095, &x);
	if (knr < 0)
		return -1;
	const char *scname = NULL;
	if (get_str(r, o, "syscall", 0, &scname) < 0)
		return -1;
	if (knr > 0)
		th->syscall_nr = (long)x;
	else if (scname)
		th->syscall_nr = syscall_by_name(scname);
	th->syscall_known = th->syscall_nr >= 0;
	b = th->syscall_known;
	if (get_bool(r, o, "syscall_known", &b) < 0)
		return -1;
	th->syscall_known = b;
	b = knr > 0 ? 0 : (!scname && th->state == 'R');
	if (get_bool(r, o, "running", &b) < 0)
		return -1;
	th->running = b;
	json_t *args = get_array(r, o, "syscall_args", 0);
	if (r->failed)
		return -1;
	if (args) {
		if (json_array_size(args) != 6)
			return rd_fail(r, "syscall_args", "expected 6 arguments, found %zu",
				       json_array_size(args));
		for (size_t i = 0; i < 6; i++) {
			size_t old = rd_push(r, ".syscall_args");
			char key[8];
			snprintf(key, sizeof(key), "[%zu]", i);
			if (hex_value(r, json_array_get(args, i), key, &th->syscall_args[i]) < 0)
				return -1;
			rd_pop(r, old);
		}
	}

	const char *st = NULL;
	if (get_str(r, o, "status", 0, &st) < 0)
		return -1;
	if (!st || !strcmp(st, "ok"))
		th->status = SD_THREAD_OK;
	else if (!strcmp(st, "exited"))
		th->status = SD_THREAD_EXITED;
	else if (!strcmp(st, "not_stopped"))
		th->status = SD_THREAD_NOT_STOPPED;
	else
		th->status = SD_THREAD_ERROR;
	if (get_str(r, o, "error", 0, &th->error) < 0 ||
	    get_str(r, o, "unwind_stop", 0, &th->unwind_stop) < 0)
		return -1;
	if (get_u64(r, o, "pause_us", &th->pause_us) < 0 ||
	    get_u64(r, o, "voluntary_ctxt_switches", &th->vol_ctxsw) < 0 ||
	    get_u64(r, o, "nonvoluntary_ctxt_switches", &th->nonvol_ctxsw) < 0 ||
	    get_u64(r, o, "utime", &th->utime) < 0 || get_u64(r, o, "stime", &th->stime) < 0)
		return -1;
	b = 0;
	if (get_bool(r, o, "stack_truncated", &b) < 0)
		return -1;
	th->stack_truncated = b;

	/* What it waits for: the lock analysis as saved, not redone. */
	json_t *w = json_object_get(o, "wait");
	const char *wk = NULL;
	if (get_str(r, o, "wait_kind", 0, &wk) < 0)
		return -1;
	if (w && !json_is_null(w)) {
		if (!json_is_object(w))
			return rd_fail(r, "wait", "expected an object or null, found %s",
				       type_name(w));
		size_t old = rd_push(r, ".wait");
		if (read_wait(r, w, th) < 0)
			return -1;
		rd_pop(r, old);
	} else if (wk) {
		th->wait.kind = sd_wait_kind_parse(wk);
	}

	json_t *lm = get_array(r, o, "lockmem", 0);
	if (r->failed)
		return -1;
	if (lm && read_lockmem(r, lm, th, "lockmem") < 0)
		return -1;
	json_t *lw = get_array(r, o, "lockwords", 0);
	if (r->failed)
		return -1;
	if (lw && read_lockmem(r, lw, th, "lockwords") < 0)
		return -1;
	json_t *holds = get_array(r, o, "holds", 0);
	if (r->failed)
		return -1;
	if (holds && read_holds(r, holds, th) < 0)
		return -1;

	json_t *frames = get_array(r, o, "frames", 0);
	if (r->failed)
		return -1;
	for (size_t i = 0; frames && i < json_array_size(frames); i++) {
		size_t old = rd_push(r, ".frames[%zu]", i);
		struct sd_frame *f = snapshot_add_frame(th);
		if (read_frame(r, json_array_get(frames, i), f) < 0)
			return -1;
		rd_pop(r, old);
	}
	return 0;
}

static int read_modules(struct rd *r, json_t *arr)
{
	struct sd_snapshot *s = r->s;
	size_t n = json_array_size(arr);
	s->modules = sd_xcalloc(n ? n : 1, sizeof(*s->modules));
	s->modcap = n ? n : 1;
	for (size_t i = 0; i < n; i++) {
		size_t old = rd_push(r, "modules[%zu]", i);
		json_t *o = json_array_get(arr, i);
		struct sd_module *m = &s->modules[s->nmodules];
		if (!json_is_object(o))
			return rd_fail(r, NULL, "expected a module object, found %s", type_name(o));
		if (get_str(r, o, "name", 0, &m->name) < 0 || get_str(r, o, "path", 0, &m->path) < 0 ||
		    get_str(r, o, "build_id", 0, &m->build_id) < 0 ||
		    get_hex(r, o, "start", 0, &m->start) < 0 || get_hex(r, o, "end", 0, &m->end) < 0 ||
		    get_hex(r, o, "bias", 0, &m->bias) < 0)
			return -1;
		s->nmodules++;
		rd_pop(r, old);
	}
	return 0;
}

static int read_meta(struct rd *r, json_t *doc, struct snapio_meta *m)
{
	long long x = 0;
	const char *reason = NULL, *tool = NULL;
	if (get_str(r, doc, "reason", 0, &reason) < 0 || get_str(r, doc, "tool", 0, &tool) < 0 ||
	    get_str(r, doc, "engine", 0, &m->engine) < 0)
		return -1;
	m->reason = reason;
	m->tool = tool;
	if (get_int(r, doc, "seq", 0, 0, LLONG_MAX, &x) < 0)
		return -1;
	m->seq = json_is_integer(json_object_get(doc, "seq")) ? (uint64_t)x : 0;
	json_t *p = get_object(r, doc, "process");
	if (r->failed)
		return -1;
	if (p) {
		size_t old = rd_push(r, "process");
		if (get_int(r, p, "ppid", 0, 0, INT_MAX, &x) < 0)
			return -1;
		m->ppid = json_is_integer(json_object_get(p, "ppid")) ? (pid_t)x : 0;
		if (get_int(r, p, "uid", 0, 0, UINT32_MAX, &x) < 0)
			return -1;
		m->uid = json_is_integer(json_object_get(p, "uid")) ? (long)x : -1;
		if (get_str(r, p, "cmdline", 0, &m->cmdline) < 0)
			return -1;
		rd_pop(r, old);
	}
	json_t *h = get_object(r, doc, "host");
	if (r->failed)
		return -1;
	if (h) {
		size_t old = rd_push(r, "host");
		if (get_str(r, h, "hostname", 0, &m->hostname) < 0 ||
		    get_str(r, h, "kernel", 0, &m->kernel) < 0 ||
		    get_str(r, h, "machine", 0, &m->machine) < 0)
			return -1;
		rd_pop(r, old);
	}
	return 0;
}

static int read_doc(struct rd *r, json_t *doc, struct snapio_meta *m)
{
	struct sd_snapshot *s = r->s;
	long long x = 0;
	int b;
	if (!json_is_object(doc))
		return rd_fail(r, NULL, "expected a snapshot object at the top, found %s%s",
			       type_name(doc),
			       json_is_array(doc) ? " (a dump of several processes? save one "
						    "snapshot per file)"
						  : "");
	json_t *fmt = json_object_get(doc, "format");
	if (fmt) {
		if (!json_is_string(fmt))
			return rd_fail(r, "format", "expected \"%s\"", SNAPIO_FORMAT);
		if (!strcmp(json_string_value(fmt), SNAPIO_MANIFEST_FORMAT))
			return rd_fail(r, "format",
				       "this is the manifest of a recording, not a snapshot (give "
				       "its directory to 'stackdump report')");
		if (strcmp(json_string_value(fmt), SNAPIO_FORMAT))
			return rd_fail(r, "format", "\"%.60s\" is not a stackdump snapshot",
				       json_string_value(fmt));
		if (get_int(r, doc, "version", 1, LLONG_MIN, LLONG_MAX, &x) < 0)
			return -1;
		if (x > SNAPIO_VERSION)
			return rd_fail(r, "version",
				       "format version %lld is newer than this stackdump reads (%d): "
				       "use a newer stackdump",
				       x, SNAPIO_VERSION);
		if (x < 1)
			return rd_fail(r, "version", "invalid format version %lld", x);
		m->version = (int)x;
	} else if (json_is_array(json_object_get(doc, "threads")) &&
		   json_object_get(doc, "pid")) {
		m->version = 0; /* `stackdump dump --format json` output */
	} else {
		return rd_fail(r, NULL,
			       "not a stackdump snapshot (no \"format\": \"%s\" member and no "
			       "threads)",
			       SNAPIO_FORMAT);
	}
	if (get_int(r, doc, "pid", 1, 1, INT_MAX, &x) < 0)
		return -1;
	s->pid = (pid_t)x;
	if (get_str(r, doc, "comm", 0, &s->comm) < 0 || get_str(r, doc, "exe", 0, &s->exe) < 0 ||
	    get_real(r, doc, "time", &s->time) < 0 || get_u64(r, doc, "pause_us", &s->pause_us) < 0 ||
	    get_char(r, doc, "state", &s->state) < 0)
		return -1;
	if (s->state == '?')
		s->state = 0;
	b = 0;
	if (get_bool(r, doc, "per_thread", &b) < 0)
		return -1;
	s->per_thread = b;
	b = 0;
	if (get_bool(r, doc, "partial", &b) < 0)
		return -1;
	s->partial = b;
	json_t *tm = get_object(r, doc, "timings");
	if (r->failed)
		return -1;
	if (tm) {
		size_t old = rd_push(r, "timings");
		if (get_u64(r, tm, "capture_us", &s->capture_us) < 0 ||
		    get_u64(r, tm, "unwind_us", &s->unwind_us) < 0 ||
		    get_u64(r, tm, "symbolize_us", &s->symbolize_us) < 0 ||
		    get_u64(r, tm, "infer_us", &s->infer_us) < 0 ||
		    get_u64(r, tm, "stack_bytes", &s->stack_bytes) < 0)
			return -1;
		rd_pop(r, old);
	}
	if (read_meta(r, doc, m) < 0)
		return -1;
	json_t *mods = get_array(r, doc, "modules", 0);
	if (r->failed)
		return -1;
	if (mods && read_modules(r, mods) < 0)
		return -1;
	json_t *threads = get_array(r, doc, "threads", 1);
	if (!threads)
		return -1;
	for (size_t i = 0; i < json_array_size(threads); i++) {
		size_t old = rd_push(r, "threads[%zu]", i);
		struct sd_thread *th = NULL;
		if (read_thread(r, json_array_get(threads, i), &th) < 0)
			return -1;
		rd_pop(r, old);
	}
	/* A Tokio program's tasks: never fails the load (snapio-tokio.c). */
	snapio_get_tokio(doc, s);
	char msg[400];
	if (snapio_go_load(doc, s, msg, sizeof(msg)) < 0)
		return rd_fail(r, NULL, "%s", msg);
	return 0;
}

struct sd_snapshot *snapio_parse(const char *name, const char *text, size_t len,
				 struct snapio_meta *meta, struct sd_error *err)
{
	struct snapio_meta dummy;
	if (!meta)
		meta = &dummy;
	snapio_meta_init(meta);
	if (!name)
		name = "snapshot";
	json_error_t je;
	json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!doc) {
		if (len == 0) {
			sd_error_set(err, EINVAL, "%s: empty file: not a snapshot", name);
			return NULL;
		}
		/* jansson's texts: "premature end of input", "invalid token"... */
		int trunc = strstr(je.text, "premature end") != NULL ||
			    strstr(je.text, "end of file") != NULL ||
			    (je.position >= 0 && (size_t)je.position >= len);
		sd_error_set(err, EINVAL, "%s: line %d column %d: %s%s", name, je.line, je.column,
			     je.text, trunc ? " (the file is truncated)" : "");
		return NULL;
	}
	struct rd r = {.name = name, .err = err};
	r.s = snapshot_new(0);
	if (read_doc(&r, doc, meta) < 0) {
		json_decref(doc);
		snapshot_free(r.s);
		return NULL;
	}
	json_decref(doc);
	return r.s;
}

struct sd_snapshot *snapio_load(const char *path, struct snapio_meta *meta, struct sd_error *err)
{
	char *text;
	size_t len;
	if (meta)
		snapio_meta_init(meta);
	if (snapio_read_file(path, &text, &len, err) < 0)
		return NULL;
	struct sd_snapshot *s = snapio_parse(path, text, len, meta, err);
	free(text);
	return s;
}
