// SPDX-License-Identifier: MIT
// Saved snapshots, written: the documented JSON format (format-json's dump
// schema plus what a reader on another machine needs), the thread array
// streamed straight into a buffer. Loading is snapio-load.c, files
// fileio.c, the recording directory recording.c.
#include "snapio.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "format.h"
#include "locks.h"
#include "version.h"

void snapio_meta_init(struct snapio_meta *m)
{
	memset(m, 0, sizeof(*m));
	m->uid = -1;
}

void snapio_meta_from_proc(struct snapio_meta *m, pid_t pid, struct sd_snapshot *s)
{
	char path[64], *text;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	ssize_t n = sd_read_file(path, &text, 1 << 16);
	if (n >= 0) {
		const char *p = strstr(text, "\nPPid:");
		if (p)
			m->ppid = (pid_t)strtol(p + 6, NULL, 10);
		p = strstr(text, "\nUid:");
		if (p)
			m->uid = strtol(p + 5, NULL, 10);
		free(text);
	}
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	n = sd_read_file(path, &text, 1 << 16);
	if (n >= 0) {
		/* Arguments are NUL-separated; join them with spaces. (A
		 * process that is exiting has none: the text is empty.) */
		for (ssize_t i = 0; i < n - 1; i++)
			if (!text[i])
				text[i] = ' ';
		if (n > 0)
			m->cmdline = strpool_intern(s->pool, text);
		free(text);
	}
}

/* ---- writing ---------------------------------------------------------- */

static json_t *jhex(uint64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return json_string(buf);
}

/* ---- the thread array, written directly ----
 * A snapshot of a few hundred threads has thousands of frames: building
 * them as jansson objects and dumping them costs ten times more than the
 * snapshot itself, so threads and frames are written straight into the
 * text, member for member as format_json_thread() and format_json_frame()
 * write them (a unit test holds the two together), plus what a loader
 * needs. The rest of the document, small, goes through jansson. */

/* strbuf_add without the call: thousands of small pieces per snapshot. */
static inline void app(struct strbuf *sb, const char *p, size_t n)
{
	if (sb->len + n + 1 > sb->cap)
		strbuf_grow(sb, n);
	memcpy(sb->buf + sb->len, p, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

static inline void apps(struct strbuf *sb, const char *p)
{
	app(sb, p, strlen(p));
}

/* Is S strictly valid UTF-8 (no overlong forms, no surrogates), as jansson
 * requires of every string? */
static int utf8_valid(const unsigned char *p)
{
	while (*p) {
		unsigned c = *p;
		if (c < 0x80) {
			p++;
			continue;
		}
		int n;
		unsigned lo = 0x80, hi = 0xbf;
		if (c >= 0xc2 && c <= 0xdf)
			n = 1;
		else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			if (c == 0xe0)
				lo = 0xa0;
			if (c == 0xed)
				hi = 0x9f; /* no surrogates */
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			if (c == 0xf0)
				lo = 0x90;
			if (c == 0xf4)
				hi = 0x8f;
		} else
			return 0;
		if (p[1] < lo || p[1] > hi)
			return 0;
		for (int i = 2; i <= n; i++)
			if ((p[i] & 0xc0) != 0x80)
				return 0;
		p += n + 1;
	}
	return 1;
}

/* Append S (valid UTF-8) as a JSON string literal, escaped as jansson
 * escapes. */
static void put_raw(struct strbuf *sb, const char *s)
{
	app(sb, "\"", 1);
	const char *run = s;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		unsigned char c = *p;
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		app(sb, run, (size_t)((const char *)p - run));
		switch (c) {
		case '"': apps(sb, "\\\""); break;
		case '\\': apps(sb, "\\\\"); break;
		case '\b': apps(sb, "\\b"); break;
		case '\f': apps(sb, "\\f"); break;
		case '\n': apps(sb, "\\n"); break;
		case '\r': apps(sb, "\\r"); break;
		case '\t': apps(sb, "\\t"); break;
		default: strbuf_addf(sb, "\\u%04x", c); break;
		}
		run = (const char *)p + 1;
	}
	apps(sb, run);
	app(sb, "\"", 1);
}

/* Append S as a JSON string (null for NULL). A string that is not valid
 * UTF-8 (a name chosen by the target) is escaped as the text output does,
 * and as ASCII where even that is not valid. */
static void put_str(struct strbuf *sb, const char *s)
{
	if (!s) {
		apps(sb, "null");
		return;
	}
	if (utf8_valid((const unsigned char *)s)) {
		put_raw(sb, s);
		return;
	}
	struct strbuf e;
	strbuf_init(&e);
	apps(&e, "");
	strbuf_add_escaped(&e, s);
	if (!utf8_valid((const unsigned char *)e.buf)) {
		struct strbuf a;
		strbuf_init(&a);
		apps(&a, "");
		for (const unsigned char *p = (const unsigned char *)e.buf; *p; p++) {
			if (*p < 0x80)
				app(&a, (const char *)p, 1);
			else
				strbuf_addf(&a, "\\x%02x", *p);
		}
		strbuf_release(&e);
		e = a;
	}
	put_raw(sb, e.buf);
	strbuf_release(&e);
}

static json_t *jstr(const char *s)
{
	if (!s)
		return json_null();
	json_t *j = json_string(s);
	if (j)
		return j;
	/* The same escaping as put_str. */
	struct strbuf sb;
	strbuf_init(&sb);
	put_str(&sb, s);
	j = json_loads(sb.buf, JSON_DECODE_ANY, NULL);
	strbuf_release(&sb);
	return j ? j : json_null();
}

/* Encoded strings by address. Frame strings are interned in the snapshot's
 * pool, so the same few hundred names come back thousands of times: encode
 * each once per document. */
struct strcache {
	const char **key;
	char **enc;
	size_t *len;
	size_t cap, n;
};

static void strcache_release(struct strcache *c)
{
	for (size_t i = 0; i < c->cap; i++)
		free(c->enc[i]);
	free(c->key);
	free(c->enc);
	free(c->len);
	memset(c, 0, sizeof(*c));
}

static void put_cached(struct strbuf *sb, struct strcache *c, const char *s)
{
	if (!s || !c) {
		put_str(sb, s);
		return;
	}
	if (c->n * 2 >= c->cap) {
		struct strcache big = {0};
		big.cap = c->cap ? c->cap * 2 : 1024;
		big.key = sd_xcalloc(big.cap, sizeof(*big.key));
		big.enc = sd_xcalloc(big.cap, sizeof(*big.enc));
		big.len = sd_xcalloc(big.cap, sizeof(*big.len));
		for (size_t i = 0; i < c->cap; i++) {
			if (!c->key[i])
				continue;
			size_t h = (size_t)(((uintptr_t)c->key[i] >> 3) * 0x9e3779b97f4a7c15ull);
			size_t j = h & (big.cap - 1);
			while (big.key[j])
				j = (j + 1) & (big.cap - 1);
			big.key[j] = c->key[i];
			big.enc[j] = c->enc[i];
			big.len[j] = c->len[i];
			big.n++;
		}
		free(c->key);
		free(c->enc);
		free(c->len);
		*c = big;
	}
	size_t h = (size_t)(((uintptr_t)s >> 3) * 0x9e3779b97f4a7c15ull);
	size_t j = h & (c->cap - 1);
	while (c->key[j] && c->key[j] != s)
		j = (j + 1) & (c->cap - 1);
	if (!c->key[j]) {
		struct strbuf e;
		strbuf_init(&e);
		put_str(&e, s);
		c->key[j] = s;
		c->len[j] = e.len;
		c->enc[j] = strbuf_detach(&e);
		c->n++;
	}
	app(sb, c->enc[j], c->len[j]);
}

static void put_hex(struct strbuf *sb, uint64_t v)
{
	char buf[24];
	int n = 0;
	do {
		buf[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	char out[28];
	out[0] = '"';
	out[1] = '0';
	out[2] = 'x';
	for (int i = 0; i < n; i++)
		out[3 + i] = buf[n - 1 - i];
	out[3 + n] = '"';
	app(sb, out, (size_t)n + 4);
}

static void put_int(struct strbuf *sb, long long v)
{
	char buf[24];
	int n = 0;
	unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
	do {
		buf[sizeof(buf) - 1 - n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		buf[sizeof(buf) - 1 - n++] = '-';
	app(sb, buf + sizeof(buf) - n, (size_t)n);
}

/* ,"KEY": (KEY is one of ours: plain ASCII) */
static void put_key(struct strbuf *sb, const char *key, int first)
{
	if (!first)
		app(sb, ",", 1);
	app(sb, "\"", 1);
	apps(sb, key);
	app(sb, "\":", 2);
}

static void put_bool(struct strbuf *sb, int b)
{
	apps(sb, b ? "true" : "false");
}

static void put_frame(struct strbuf *sb, struct strcache *c, const struct sd_frame *f)
{
	app(sb, "{", 1);
	put_key(sb, "addr", 1);
	put_hex(sb, f->pc);
	put_key(sb, "module", 0);
	put_cached(sb, c, f->module);
	put_key(sb, "build_id", 0);
	put_cached(sb, c, f->build_id);
	put_key(sb, "offset", 0);
	put_hex(sb, f->offset);
	put_key(sb, "function", 0);
	put_cached(sb, c, f->function);
	put_key(sb, "file", 0);
	put_cached(sb, c, f->file);
	put_key(sb, "line", 0);
	if (f->line)
		put_int(sb, f->line);
	else
		apps(sb, "null");
	put_key(sb, "inlined", 0);
	put_bool(sb, f->flags & SD_FRAME_INLINED);
	if (f->flags & SD_FRAME_SIGNAL) {
		put_key(sb, "signal_frame", 0);
		apps(sb, "true");
	}
	/* What the dump leaves out. */
	put_key(sb, "sp", 0);
	put_hex(sb, f->sp);
	if (f->symoff) {
		put_key(sb, "symoff", 0);
		put_int(sb, (long long)f->symoff);
	}
	if (f->flags & SD_FRAME_EXACT) {
		put_key(sb, "exact", 0);
		apps(sb, "true");
	}
	if (f->flags & SD_FRAME_FP) {
		put_key(sb, "fp", 0);
		apps(sb, "true");
	}
	if (f->flags & SD_FRAME_DEBUGINFO) {
		put_key(sb, "debuginfo", 0);
		apps(sb, "true");
	}
	app(sb, "}", 1);
}

/* format-json leaves out a member whose string jansson refused (invalid
 * UTF-8 from the target); put it back, escaped, after member AFTER so that
 * the order of members stays that of the dump. */
static void fill_missing(json_t *o, const char *after, const char *key, const char *val)
{
	if (json_object_get(o, key))
		return;
	json_t *n = json_object();
	const char *k;
	json_t *v;
	int placed = 0;
	json_object_foreach(o, k, v)
	{
		json_object_set(n, k, v);
		if (!placed && after && !strcmp(k, after)) {
			json_object_set_new(n, key, jstr(val));
			placed = 1;
		}
	}
	if (!placed)
		json_object_set_new(n, key, jstr(val));
	json_object_clear(o);
	json_object_update(o, n);
	json_decref(n);
}

static void put_wait(struct strbuf *sb, const struct sd_snapshot *s, const struct sd_thread *th)
{
	json_t *w = format_json_wait(s, th);
	if (!json_is_object(w)) {
		json_decref(w);
		apps(sb, "null");
		return;
	}
	fill_missing(w, "address", "symbol", th->wait.symbol);
	if (th->wait.subkind)
		fill_missing(w, "owner", "type", th->wait.subkind);
	if (th->wait.note)
		fill_missing(w, th->wait.subkind ? "type" : "owner", "note", th->wait.note);
	json_object_set_new(w, "owner_known", json_boolean(th->wait.owner_known));
	if (th->wait.owner > 0)
		json_object_set_new(w, "owner_tid", json_integer(th->wait.owner));
	char *txt = json_dumps(w, JSON_COMPACT | JSON_PRESERVE_ORDER);
	apps(sb, txt ? txt : "null");
	free(txt);
	json_decref(w);
}

static void put_thread(struct strbuf *sb, struct strcache *c, const struct sd_snapshot *s,
		       const struct sd_thread *th)
{
	app(sb, "{", 1);
	put_key(sb, "tid", 1);
	put_int(sb, th->tid);
	put_key(sb, "name", 0);
	put_str(sb, th->name ? th->name : "");
	put_key(sb, "state", 0);
	char st[2] = {th->state ? th->state : '?', 0};
	put_str(sb, st);
	put_key(sb, "syscall", 0);
	if (th->syscall_nr >= 0 && !th->running) {
		const char *scn = procfs_syscall_name(th->syscall_nr);
		char buf[32];
		if (!scn) {
			snprintf(buf, sizeof(buf), "syscall_%ld", th->syscall_nr);
			scn = buf;
		}
		put_str(sb, scn);
	} else {
		apps(sb, "null");
	}
	put_key(sb, "wchan", 0);
	put_str(sb, th->wchan);
	put_key(sb, "wait", 0);
	put_wait(sb, s, th);
	put_key(sb, "status", 0);
	put_str(sb, th->status == SD_THREAD_OK		  ? "ok"
		    : th->status == SD_THREAD_EXITED	  ? "exited"
		    : th->status == SD_THREAD_NOT_STOPPED ? "not_stopped"
							  : "error");
	if (th->error) {
		put_key(sb, "error", 0);
		put_str(sb, th->error);
	}
	put_key(sb, "pause_us", 0);
	put_int(sb, (long long)th->pause_us);
	put_key(sb, "voluntary_ctxt_switches", 0);
	put_int(sb, (long long)th->vol_ctxsw);
	put_key(sb, "frames", 0);
	app(sb, "[", 1);
	for (size_t i = 0; i < th->nframes; i++) {
		if (i)
			app(sb, ",", 1);
		put_frame(sb, c, &th->frames[i]);
	}
	app(sb, "]", 1);
	put_key(sb, "unwind_stop", 0);
	put_str(sb, th->unwind_stop);
	put_key(sb, "capture", 0);
	put_str(sb, snapshot_capture_kind_name(th->kind));
	put_key(sb, "holds", 0);
	{
		json_t *h = format_json_holds(th);
		char *txt = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
		apps(sb, txt ? txt : "[]");
		free(txt);
		json_decref(h);
	}

	/* What the dump leaves out. */
	put_key(sb, "syscall_nr", 0);
	put_int(sb, th->syscall_nr);
	if (th->syscall_nr >= 0) {
		put_key(sb, "syscall_args", 0);
		app(sb, "[", 1);
		for (int i = 0; i < 6; i++) {
			if (i)
				app(sb, ",", 1);
			put_hex(sb, th->syscall_args[i]);
		}
		app(sb, "]", 1);
	}
	put_key(sb, "syscall_known", 0);
	put_bool(sb, th->syscall_known);
	put_key(sb, "running", 0);
	put_bool(sb, th->running);
	put_key(sb, "nonvoluntary_ctxt_switches", 0);
	put_int(sb, (long long)th->nonvol_ctxsw);
	put_key(sb, "utime", 0);
	put_int(sb, (long long)th->utime);
	put_key(sb, "stime", 0);
	put_int(sb, (long long)th->stime);
	put_key(sb, "wait_kind", 0);
	put_str(sb, sd_wait_kind_name(th->wait.kind));
	if (th->stack_truncated) {
		put_key(sb, "stack_truncated", 0);
		apps(sb, "true");
	}
	if (th->nlockmem) {
		put_key(sb, "lockmem", 0);
		app(sb, "[", 1);
		for (size_t i = 0; i < th->nlockmem; i++) {
			const struct sd_lockmem *m = &th->lockmem[i];
			size_t n = m->len < sizeof(m->bytes) ? m->len : sizeof(m->bytes);
			apps(sb, i ? ",{" : "{");
			put_key(sb, "addr", 1);
			put_hex(sb, m->addr);
			put_key(sb, "bytes", 0);
			app(sb, "\"", 1);
			for (size_t k = 0; k < n; k++) {
				char two[2] = {"0123456789abcdef"[m->bytes[k] >> 4],
					       "0123456789abcdef"[m->bytes[k] & 15]};
				app(sb, two, 2);
			}
			apps(sb, "\"}");
		}
		app(sb, "]", 1);
	}
	app(sb, "}", 1);
}

static json_t *lock_json(const struct sd_lock *l, int idle)
{
	json_t *o = json_object();
	json_object_set_new(o, "address", jhex(l->address));
	json_object_set_new(o, "symbol", jstr(l->symbol));
	json_object_set_new(o, "kind", json_string(locks_kind_name(l->kind)));
	if (l->subkind)
		json_object_set_new(o, "type", jstr(l->subkind));
	json_object_set_new(o, "owner", l->owner_known && l->owner > 0 ? json_integer(l->owner)
								      : json_null());
	if (l->note)
		json_object_set_new(o, "note", jstr(l->note));
	json_t *w = json_array();
	for (size_t i = 0; i < l->nwaiters; i++)
		json_array_append_new(w, json_integer(l->waiters[i]));
	json_object_set_new(o, "waiters", w);
	if (idle)
		json_object_set_new(o, "idle", json_true());
	return o;
}

/* The lock view (locks with waiters and holders, idle waits, deadlock
 * cycles) as lock analysis built it from the threads' waits. It is derived
 * data, for readers of the file: the loader rebuilds it from the threads. */
static void locks_into(json_t *o, const struct sd_snapshot *s)
{
	struct sd_lockgraph *g = locks_graph(s);
	json_t *arr = json_array();
	for (size_t i = 0; i < g->nlocks; i++)
		json_array_append_new(arr, lock_json(&g->locks[i], 0));
	for (size_t i = 0; i < g->nidle; i++)
		json_array_append_new(arr, lock_json(&g->idle[i], 1));
	json_object_set_new(o, "locks", arr);
	json_t *dl = json_array();
	for (size_t i = 0; i < g->ndeadlocks; i++) {
		const struct sd_deadlock *d = &g->deadlocks[i];
		json_t *c = json_array();
		for (size_t k = 0; k < d->n; k++) {
			const struct sd_lock_edge *e = &d->edges[k];
			json_t *eo = json_object();
			json_object_set_new(eo, "tid", json_integer(e->tid));
			json_object_set_new(eo, "waits_for", json_string(locks_kind_name(e->kind)));
			json_object_set_new(eo, "address", jhex(e->address));
			json_object_set_new(eo, "symbol", jstr(e->symbol));
			json_object_set_new(eo, "held_by", json_integer(e->owner));
			json_array_append_new(c, eo);
		}
		json_array_append_new(dl, c);
	}
	json_object_set_new(o, "deadlocks", dl);
	locks_graph_free(g);
}

/* Everything but the threads, as a jansson object. */
static json_t *head_json(const struct sd_snapshot *s, const struct snapio_meta *meta)
{
	struct snapio_meta none;
	if (!meta) {
		snapio_meta_init(&none);
		meta = &none;
	}
	/* The dump's members, without rendering every thread twice. */
	struct sd_snapshot bare = *s;
	bare.nthreads = 0;
	json_t *dump = format_json_snapshot(&bare);
	json_t *o = json_object();
	/* format and version first, so `head -c 100 FILE` tells what it is. */
	json_object_set_new(o, "format", json_string(SNAPIO_FORMAT));
	json_object_set_new(o, "version", json_integer(SNAPIO_VERSION));
	json_object_set_new(o, "tool", json_string("stackdump " STACKDUMP_VERSION));
	json_object_set_new(o, "reason", jstr(meta->reason));
	if (meta->engine)
		json_object_set_new(o, "engine", json_string(meta->engine));
	if (meta->seq)
		json_object_set_new(o, "seq", json_integer((json_int_t)meta->seq));
	const char *key;
	json_t *val;
	json_object_foreach(dump, key, val)
	{
		if (strcmp(key, "threads"))
			json_object_set(o, key, val);
	}
	json_decref(dump);
	fill_missing(o, "pid", "comm", s->comm);
	fill_missing(o, "comm", "exe", s->exe);

	struct utsname u;
	int have_u = uname(&u) == 0;
	char host[256] = "";
	if (!meta->hostname && gethostname(host, sizeof(host) - 1) < 0)
		host[0] = '\0';
	json_t *h = json_object();
	json_object_set_new(h, "hostname", jstr(meta->hostname ? meta->hostname
						: host[0]	 ? host
								 : NULL));
	json_object_set_new(h, "kernel", jstr(meta->kernel ? meta->kernel
					      : have_u	   ? u.release
							   : NULL));
	json_object_set_new(h, "machine", jstr(meta->machine ? meta->machine
					       : have_u	     ? u.machine
							     : NULL));
	json_object_set_new(o, "host", h);

	json_t *p = json_object();
	json_object_set_new(p, "pid", json_integer(s->pid));
	json_object_set_new(p, "ppid", meta->ppid > 0 ? json_integer(meta->ppid) : json_null());
	json_object_set_new(p, "uid", meta->uid >= 0 ? json_integer(meta->uid) : json_null());
	json_object_set_new(p, "cmdline", jstr(meta->cmdline));
	json_object_set_new(p, "nthreads", json_integer((json_int_t)s->nthreads));
	json_object_set_new(o, "process", p);

	json_t *mods = json_array();
	for (size_t i = 0; i < s->nmodules; i++) {
		const struct sd_module *m = &s->modules[i];
		json_t *mo = json_object();
		json_object_set_new(mo, "name", jstr(m->name));
		json_object_set_new(mo, "path", jstr(m->path));
		json_object_set_new(mo, "build_id", jstr(m->build_id));
		json_object_set_new(mo, "start", jhex(m->start));
		json_object_set_new(mo, "end", jhex(m->end));
		json_object_set_new(mo, "bias", jhex(m->bias));
		json_array_append_new(mods, mo);
	}
	json_object_set_new(o, "modules", mods);
	locks_into(o, s);
	return o;
}

/* The compact document, threads last. */
/* Write S compactly into SB, which is emptied first; its memory is kept,
 * so a recorder that passes the same buffer every time does not map and
 * fault in megabytes per snapshot. */
static void dump_into(struct strbuf *sb, const struct sd_snapshot *s,
		      const struct snapio_meta *meta)
{
	json_t *o = head_json(s, meta);
	char *head = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
	json_decref(o);
	sb->len = 0;
	/* Room for the usual frame, so the buffer rarely moves. */
	size_t per = 64;
	for (size_t i = 0; i < s->nthreads; i++)
		per += 256 + 320 * s->threads[i].nframes;
	strbuf_grow(sb, per + (head ? strlen(head) : 2));
	/* head is "{...}": reopen it for the threads. */
	if (head && strlen(head) > 2) {
		strbuf_add(sb, head, strlen(head) - 1);
		strbuf_add(sb, ",", 1);
	} else {
		strbuf_add(sb, "{", 1);
	}
	free(head);
	strbuf_adds(sb, "\"threads\":[");
	struct strcache cache = {0};
	for (size_t i = 0; i < s->nthreads; i++) {
		if (i)
			strbuf_add(sb, ",", 1);
		put_thread(sb, &cache, s, &s->threads[i]);
	}
	strcache_release(&cache);
	strbuf_adds(sb, "]}");
}

void snapio_dump_buf(struct strbuf *sb, const struct sd_snapshot *s,
		     const struct snapio_meta *meta)
{
	dump_into(sb, s, meta);
	strbuf_add(sb, "\n", 1);
}

json_t *snapio_to_json(const struct sd_snapshot *s, const struct snapio_meta *meta)
{
	struct strbuf sb;
	strbuf_init(&sb);
	dump_into(&sb, s, meta);
	json_t *o = json_loadb(sb.buf, sb.len, 0, NULL);
	strbuf_release(&sb);
	return o ? o : json_object(); /* only on allocation failure */
}

char *snapio_dumps(const struct sd_snapshot *s, const struct snapio_meta *meta, int indent,
		   size_t *len)
{
	struct strbuf sb;
	strbuf_init(&sb);
	dump_into(&sb, s, meta);
	if (indent) {
		json_t *o = json_loadb(sb.buf, sb.len, 0, NULL);
		char *pretty = o ? json_dumps(o, JSON_PRESERVE_ORDER | JSON_INDENT(1)) : NULL;
		json_decref(o);
		if (pretty) {
			sb.len = 0;
			strbuf_adds(&sb, pretty);
			free(pretty);
		}
	}
	/* End with a newline, as text files do. */
	strbuf_add(&sb, "\n", 1);
	if (len)
		*len = sb.len;
	return strbuf_detach(&sb);
}

int snapio_save(const char *path, const struct sd_snapshot *s, const struct snapio_meta *meta,
		int compress, int indent, uint64_t *written, struct sd_error *err)
{
	size_t len;
	char *txt = snapio_dumps(s, meta, indent, &len);
	int r = snapio_write_atomic(path, txt, len, compress, 0600, written, err);
	free(txt);
	return r;
}
