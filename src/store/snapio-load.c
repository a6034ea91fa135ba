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

#include "jsonrd.h"
#include "snapio-go.h"

/* ---- loading ---------------------------------------------------------- */

static int read_wait(struct sd_jrd *r, json_t *o, struct sd_thread *th)
{
	struct sd_wait *w = &th->wait;
	const char *kind = NULL;
	long long x = 0;
	int b;
	if (jrd_str(r, o, "kind", 1, &kind) < 0)
		return -1;
	enum sd_wait_kind k = sd_wait_kind_parse(kind);
	/* A kind this version does not know is still a futex wait. */
	if (k < SD_WAIT_MUTEX)
		k = SD_WAIT_FUTEX;
	w->kind = k;
	if (jrd_hex(r, o, "address", 0, &w->address) < 0 || jrd_str(r, o, "symbol", 0, &w->symbol) < 0 ||
	    jrd_str(r, o, "type", 0, &w->subkind) < 0 || jrd_str(r, o, "note", 0, &w->note) < 0)
		return -1;
	int k1 = jrd_int(r, o, "owner", 0, 1, INT_MAX, &x);
	if (k1 < 0)
		return -1;
	if (k1 > 0) {
		w->owner = (pid_t)x;
		w->owner_known = 1;
	}
	int k2 = jrd_int(r, o, "owner_tid", 0, 1, INT_MAX, &x);
	if (k2 < 0)
		return -1;
	if (k2 > 0 && !w->owner)
		w->owner = (pid_t)x;
	b = w->owner_known;
	if (jrd_bool(r, o, "owner_known", &b) < 0)
		return -1;
	w->owner_known = b && w->owner > 0;
	const char *ev = NULL;
	if (jrd_str(r, o, "owner_evidence", 0, &ev) < 0)
		return -1;
	/* Absent (older files): unsaid, as it was. */
	w->owner_evidence = !w->owner_known || !ev	  ? SD_EVIDENCE_NONE
			    : !strcmp(ev, "stack") ? SD_EVIDENCE_STACK
						  : SD_EVIDENCE_MEMORY;
	long long frame = -1;
	if (jrd_int(r, o, "owner_frame", 0, 0, INT_MAX, &frame) < 0)
		return -1;
	w->owner_frame = w->owner_evidence != SD_EVIDENCE_NONE ? (int)frame : -1;
	return 0;
}

/* The locks a thread held, as lock analysis saw them when it was taken. */
static int read_holds(struct sd_jrd *r, json_t *arr, struct sd_thread *th)
{
	size_t n = json_array_size(arr);
	th->holds = sd_xcalloc(n ? n : 1, sizeof(*th->holds));
	for (size_t i = 0; i < n; i++) {
		size_t old = jrd_push(r, ".holds[%zu]", i);
		json_t *o = json_array_get(arr, i);
		struct sd_hold *h = &th->holds[th->nholds];
		const char *kind = NULL, *ev = NULL;
		long long x = -1, c = 1;
		if (!json_is_object(o))
			return jrd_fail(r, NULL, "expected a hold object, found %s", jrd_type_name(o));
		if (jrd_str(r, o, "kind", 1, &kind) < 0 || jrd_hex(r, o, "address", 1, &h->address) < 0 ||
		    jrd_str(r, o, "symbol", 0, &h->symbol) < 0 || jrd_str(r, o, "mode", 0, &h->mode) < 0 ||
		    jrd_int(r, o, "frame", 0, 0, INT_MAX, &x) < 0 ||
		    jrd_str(r, o, "owner_evidence", 0, &ev) < 0 ||
		    jrd_int(r, o, "candidates", 0, 0, INT_MAX, &c) < 0)
			return -1;
		h->kind = !strcmp(kind, "rwlock") ? SD_WAIT_RWLOCK_READ : sd_wait_kind_parse(kind);
		if (h->kind < SD_WAIT_MUTEX)
			h->kind = SD_WAIT_FUTEX;
		h->frame = (int)x;
		h->evidence = ev && !strcmp(ev, "stack") ? SD_EVIDENCE_STACK : SD_EVIDENCE_MEMORY;
		h->ncandidates = (size_t)c;
		th->nholds++;
		jrd_pop(r, old);
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
static int read_lockmem(struct sd_jrd *r, json_t *arr, struct sd_thread *th, const char *key)
{
	size_t n = json_array_size(arr);
	if (!n)
		return 0;
	th->lockmem = sd_xrealloc(th->lockmem, (th->nlockmem + n) * sizeof(*th->lockmem));
	memset(th->lockmem + th->nlockmem, 0, n * sizeof(*th->lockmem));
	for (size_t i = 0; i < n; i++) {
		size_t old = jrd_push(r, ".%s[%zu]", key, i);
		json_t *e = json_array_get(arr, i);
		struct sd_lockmem *m = &th->lockmem[th->nlockmem];
		const char *hexs = NULL;
		if (!json_is_object(e)) {
			jrd_fail(r, NULL, "expected an object, found %s", jrd_type_name(e));
			return -1;
		}
		if (jrd_hex(r, e, "addr", 1, &m->addr) < 0 || jrd_str(r, e, "bytes", 1, &hexs) < 0)
			return -1;
		size_t hl = strlen(hexs);
		if (hl % 2 || hl / 2 > sizeof(m->bytes))
			return jrd_fail(r, "bytes", "expected at most %zu bytes as hex digits",
				       sizeof(m->bytes));
		for (size_t k = 0; k < hl / 2; k++) {
			char two[5] = {'0', 'x', hexs[2 * k], hexs[2 * k + 1], 0};
			uint64_t v;
			if (jrd_parse_hex(two, &v) < 0)
				return jrd_fail(r, "bytes", "invalid hex digits at %zu", 2 * k);
			m->bytes[k] = (uint8_t)v;
		}
		m->len = (uint32_t)(hl / 2);
		/* Saved bytes were read: saved again if saved once. */
		for (size_t k = 0; k < m->len; k++)
			m->used[k / 64] |= 1ull << (k % 64);
		th->nlockmem++;
		jrd_pop(r, old);
	}
	return 0;
}

static int read_thread(struct sd_jrd *r, json_t *o, struct sd_thread **out)
{
	long long x = 0;
	int b;
	if (!json_is_object(o))
		return jrd_fail(r, NULL, "expected a thread object, found %s", jrd_type_name(o));
	if (jrd_int(r, o, "tid", 1, 1, INT_MAX, &x) < 0)
		return -1;
	struct sd_thread *th = snapshot_add_thread(r->s, (pid_t)x);
	*out = th;
	if (jrd_str(r, o, "name", 0, &th->name) < 0)
		return -1;
	if (!th->name)
		th->name = strpool_intern(r->s->pool, "");
	if (jrd_char(r, o, "state", &th->state) < 0)
		return -1;
	if (th->state == '?')
		th->state = 0;
	if (jrd_str(r, o, "wchan", 0, &th->wchan) < 0)
		return -1;

	/* The syscall: by number when the file has it, else by name. */
	int knr = jrd_int(r, o, "syscall_nr", 0, -1, 4095, &x);
	if (knr < 0)
		return -1;
	const char *scname = NULL;
	if (jrd_str(r, o, "syscall", 0, &scname) < 0)
		return -1;
	if (knr > 0)
		th->syscall_nr = (long)x;
	else if (scname)
		th->syscall_nr = syscall_by_name(scname);
	th->syscall_known = th->syscall_nr >= 0;
	b = th->syscall_known;
	if (jrd_bool(r, o, "syscall_known", &b) < 0)
		return -1;
	th->syscall_known = b;
	b = knr > 0 ? 0 : (!scname && th->state == 'R');
	if (jrd_bool(r, o, "running", &b) < 0)
		return -1;
	th->running = b;
	json_t *args = jrd_array(r, o, "syscall_args", 0);
	if (r->failed)
		return -1;
	if (args) {
		if (json_array_size(args) != 6)
			return jrd_fail(r, "syscall_args", "expected 6 arguments, found %zu",
				       json_array_size(args));
		for (size_t i = 0; i < 6; i++) {
			size_t old = jrd_push(r, ".syscall_args");
			char key[8];
			snprintf(key, sizeof(key), "[%zu]", i);
			if (jrd_hex_value(r, json_array_get(args, i), key, &th->syscall_args[i]) < 0)
				return -1;
			jrd_pop(r, old);
		}
	}

	const char *st = NULL;
	if (jrd_str(r, o, "status", 0, &st) < 0)
		return -1;
	if (!st || !strcmp(st, "ok"))
		th->status = SD_THREAD_OK;
	else if (!strcmp(st, "exited"))
		th->status = SD_THREAD_EXITED;
	else if (!strcmp(st, "not_stopped"))
		th->status = SD_THREAD_NOT_STOPPED;
	else
		th->status = SD_THREAD_ERROR;
	if (jrd_str(r, o, "error", 0, &th->error) < 0 ||
	    jrd_str(r, o, "unwind_stop", 0, &th->unwind_stop) < 0)
		return -1;
	if (jrd_u64(r, o, "pause_us", &th->pause_us) < 0 ||
	    jrd_u64(r, o, "voluntary_ctxt_switches", &th->vol_ctxsw) < 0 ||
	    jrd_u64(r, o, "nonvoluntary_ctxt_switches", &th->nonvol_ctxsw) < 0 ||
	    jrd_u64(r, o, "utime", &th->utime) < 0 || jrd_u64(r, o, "stime", &th->stime) < 0)
		return -1;
	b = 0;
	if (jrd_bool(r, o, "stack_truncated", &b) < 0)
		return -1;
	th->stack_truncated = b;
	b = 0;
	if (jrd_bool(r, o, "io_worker", &b) < 0)
		return -1;
	th->io_worker = b;

	/* What it waits for: the lock analysis as saved, not redone. */
	json_t *w = json_object_get(o, "wait");
	const char *wk = NULL;
	if (jrd_str(r, o, "wait_kind", 0, &wk) < 0)
		return -1;
	if (w && !json_is_null(w)) {
		if (!json_is_object(w))
			return jrd_fail(r, "wait", "expected an object or null, found %s",
				       jrd_type_name(w));
		size_t old = jrd_push(r, ".wait");
		if (read_wait(r, w, th) < 0)
			return -1;
		jrd_pop(r, old);
	} else if (wk) {
		th->wait.kind = sd_wait_kind_parse(wk);
	}

	json_t *lm = jrd_array(r, o, "lockmem", 0);
	if (r->failed)
		return -1;
	if (lm && read_lockmem(r, lm, th, "lockmem") < 0)
		return -1;
	json_t *lw = jrd_array(r, o, "lockwords", 0);
	if (r->failed)
		return -1;
	if (lw && read_lockmem(r, lw, th, "lockwords") < 0)
		return -1;
	json_t *holds = jrd_array(r, o, "holds", 0);
	if (r->failed)
		return -1;
	if (holds && read_holds(r, holds, th) < 0)
		return -1;

	json_t *frames = jrd_array(r, o, "frames", 0);
	if (r->failed)
		return -1;
	for (size_t i = 0; frames && i < json_array_size(frames); i++) {
		size_t old = jrd_push(r, ".frames[%zu]", i);
		struct sd_frame *f = snapshot_add_frame(th);
		if (jrd_frame(r, json_array_get(frames, i), f) < 0)
			return -1;
		jrd_pop(r, old);
	}
	return 0;
}

static int read_modules(struct sd_jrd *r, json_t *arr)
{
	struct sd_snapshot *s = r->s;
	size_t n = json_array_size(arr);
	s->modules = sd_xcalloc(n ? n : 1, sizeof(*s->modules));
	s->modcap = n ? n : 1;
	for (size_t i = 0; i < n; i++) {
		size_t old = jrd_push(r, "modules[%zu]", i);
		json_t *o = json_array_get(arr, i);
		struct sd_module *m = &s->modules[s->nmodules];
		if (!json_is_object(o))
			return jrd_fail(r, NULL, "expected a module object, found %s", jrd_type_name(o));
		if (jrd_str(r, o, "name", 0, &m->name) < 0 || jrd_str(r, o, "path", 0, &m->path) < 0 ||
		    jrd_str(r, o, "build_id", 0, &m->build_id) < 0 ||
		    jrd_hex(r, o, "start", 0, &m->start) < 0 || jrd_hex(r, o, "end", 0, &m->end) < 0 ||
		    jrd_hex(r, o, "bias", 0, &m->bias) < 0)
			return -1;
		s->nmodules++;
		jrd_pop(r, old);
	}
	return 0;
}

static int read_meta(struct sd_jrd *r, json_t *doc, struct snapio_meta *m)
{
	long long x = 0;
	const char *reason = NULL, *tool = NULL;
	if (jrd_str(r, doc, "reason", 0, &reason) < 0 || jrd_str(r, doc, "tool", 0, &tool) < 0 ||
	    jrd_str(r, doc, "engine", 0, &m->engine) < 0)
		return -1;
	m->reason = reason;
	m->tool = tool;
	if (jrd_int(r, doc, "seq", 0, 0, LLONG_MAX, &x) < 0)
		return -1;
	m->seq = json_is_integer(json_object_get(doc, "seq")) ? (uint64_t)x : 0;
	json_t *p = jrd_object(r, doc, "process");
	if (r->failed)
		return -1;
	if (p) {
		size_t old = jrd_push(r, "process");
		if (jrd_int(r, p, "ppid", 0, 0, INT_MAX, &x) < 0)
			return -1;
		m->ppid = json_is_integer(json_object_get(p, "ppid")) ? (pid_t)x : 0;
		if (jrd_int(r, p, "uid", 0, 0, UINT32_MAX, &x) < 0)
			return -1;
		m->uid = json_is_integer(json_object_get(p, "uid")) ? (long)x : -1;
		if (jrd_str(r, p, "cmdline", 0, &m->cmdline) < 0)
			return -1;
		jrd_pop(r, old);
	}
	json_t *h = jrd_object(r, doc, "host");
	if (r->failed)
		return -1;
	if (h) {
		size_t old = jrd_push(r, "host");
		if (jrd_str(r, h, "hostname", 0, &m->hostname) < 0 ||
		    jrd_str(r, h, "kernel", 0, &m->kernel) < 0 ||
		    jrd_str(r, h, "machine", 0, &m->machine) < 0)
			return -1;
		jrd_pop(r, old);
	}
	return 0;
}

static int read_doc(struct sd_jrd *r, json_t *doc, struct snapio_meta *m)
{
	struct sd_snapshot *s = r->s;
	long long x = 0;
	int b;
	if (!json_is_object(doc))
		return jrd_fail(r, NULL, "expected a snapshot object at the top, found %s%s",
			       jrd_type_name(doc),
			       json_is_array(doc) ? " (a dump of several processes? save one "
						    "snapshot per file)"
						  : "");
	json_t *fmt = json_object_get(doc, "format");
	if (fmt) {
		if (!json_is_string(fmt))
			return jrd_fail(r, "format", "expected \"%s\"", SNAPIO_FORMAT);
		if (!strcmp(json_string_value(fmt), SNAPIO_MANIFEST_FORMAT))
			return jrd_fail(r, "format",
				       "this is the manifest of a recording, not a snapshot (give "
				       "its directory to 'stackdump report')");
		if (strcmp(json_string_value(fmt), SNAPIO_FORMAT))
			return jrd_fail(r, "format", "\"%.60s\" is not a stackdump snapshot",
				       json_string_value(fmt));
		if (jrd_int(r, doc, "version", 1, LLONG_MIN, LLONG_MAX, &x) < 0)
			return -1;
		if (x > SNAPIO_VERSION)
			return jrd_fail(r, "version",
				       "format version %lld is newer than this stackdump reads (%d): "
				       "use a newer stackdump",
				       x, SNAPIO_VERSION);
		if (x < 1)
			return jrd_fail(r, "version", "invalid format version %lld", x);
		m->version = (int)x;
	} else if (json_is_array(json_object_get(doc, "threads")) &&
		   json_object_get(doc, "pid")) {
		m->version = 0; /* `stackdump dump --format json` output */
	} else {
		return jrd_fail(r, NULL,
			       "not a stackdump snapshot (no \"format\": \"%s\" member and no "
			       "threads)",
			       SNAPIO_FORMAT);
	}
	if (jrd_int(r, doc, "pid", 1, 1, INT_MAX, &x) < 0)
		return -1;
	s->pid = (pid_t)x;
	if (jrd_str(r, doc, "comm", 0, &s->comm) < 0 || jrd_str(r, doc, "exe", 0, &s->exe) < 0 ||
	    jrd_real(r, doc, "time", &s->time) < 0 || jrd_u64(r, doc, "pause_us", &s->pause_us) < 0 ||
	    jrd_char(r, doc, "state", &s->state) < 0)
		return -1;
	if (s->state == '?')
		s->state = 0;
	b = 0;
	if (jrd_bool(r, doc, "per_thread", &b) < 0)
		return -1;
	s->per_thread = b;
	b = 0;
	if (jrd_bool(r, doc, "partial", &b) < 0)
		return -1;
	s->partial = b;
	json_t *tm = jrd_object(r, doc, "timings");
	if (r->failed)
		return -1;
	if (tm) {
		size_t old = jrd_push(r, "timings");
		if (jrd_u64(r, tm, "capture_us", &s->capture_us) < 0 ||
		    jrd_u64(r, tm, "unwind_us", &s->unwind_us) < 0 ||
		    jrd_u64(r, tm, "symbolize_us", &s->symbolize_us) < 0 ||
		    jrd_u64(r, tm, "infer_us", &s->infer_us) < 0 ||
		    jrd_u64(r, tm, "stack_bytes", &s->stack_bytes) < 0)
			return -1;
		jrd_pop(r, old);
	}
	if (read_meta(r, doc, m) < 0)
		return -1;
	json_t *mods = jrd_array(r, doc, "modules", 0);
	if (r->failed)
		return -1;
	if (mods && read_modules(r, mods) < 0)
		return -1;
	json_t *threads = jrd_array(r, doc, "threads", 1);
	if (!threads)
		return -1;
	for (size_t i = 0; i < json_array_size(threads); i++) {
		size_t old = jrd_push(r, "threads[%zu]", i);
		struct sd_thread *th = NULL;
		if (read_thread(r, json_array_get(threads, i), &th) < 0)
			return -1;
		jrd_pop(r, old);
	}
	/* A Tokio program's tasks: never fails the load (snapio-tokio.c). */
	snapio_get_tokio(doc, s);
	char msg[400];
	if (snapio_go_load(doc, s, msg, sizeof(msg)) < 0)
		return jrd_fail(r, NULL, "%s", msg);
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
	struct sd_jrd r = {.name = name, .err = err};
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
