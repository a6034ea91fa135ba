// SPDX-License-Identifier: MIT
// Saved snapshots: write the documented JSON format (format-json's dump
// schema plus what a reader on another machine needs), atomically and
// optionally gzipped, and load it back strictly, naming the file and the
// place of anything wrong instead of trusting it.
#include "snapio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "format.h"
#include "locks.h"
#include "procfs.h"
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

/* strerror() in lowercase, as our messages are. */
static const char *errtext(int e)
{
	static __thread char buf[128];
	snprintf(buf, sizeof(buf), "%s", strerror(e));
	if (buf[0] >= 'A' && buf[0] <= 'Z' && (buf[1] < 'A' || buf[1] > 'Z'))
		buf[0] = (char)(buf[0] - 'A' + 'a');
	return buf;
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
		sd_grow(&sb->buf, &sb->cap, sb->len + n + 1, 1);
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
	strbuf_add(sb, "", 0);
	sd_grow(&sb->buf, &sb->cap, per + (head ? strlen(head) : 2), 1);
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

int snapio_gzip_buf(const void *in, size_t len, struct strbuf *out, struct sd_error *err)
{
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	/* 15 + 16: a gzip wrapper, so `zcat` and `gunzip` read the files.
	 * Level 1: snapshot JSON is repetitive enough that the fastest level
	 * already shrinks it about 25 times, at a fraction of level 6's CPU. */
	if (deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return sd_error_set(err, ENOMEM, "cannot compress: zlib failed to start");
	uLong bound = deflateBound(&zs, (uLong)len);
	out->len = 0;
	sd_grow(&out->buf, &out->cap, bound + 64, 1);
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = (Bytef *)out->buf;
	zs.avail_out = (uInt)(bound + 64);
	int r = deflate(&zs, Z_FINISH);
	if (r != Z_STREAM_END) {
		deflateEnd(&zs);
		return sd_error_set(err, EIO, "cannot compress: zlib error %d", r);
	}
	out->len = zs.total_out;
	deflateEnd(&zs);
	return 0;
}


int snapio_gunzip(const char *name, const void *in, size_t len, size_t max, char **out,
		  size_t *outlen, struct sd_error *err)
{
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return sd_error_set(err, ENOMEM, "%s: cannot decompress: zlib failed to start",
				    name);
	size_t cap = len * 4 + 4096, n = 0;
	if (cap > max + 1)
		cap = max + 1;
	char *buf = sd_xmalloc(cap + 1);
	zs.next_in = (Bytef *)in;
	int r = Z_OK;
	size_t fed = 0;
	for (;;) {
		if (zs.avail_in == 0 && fed < len) {
			size_t chunk = len - fed > (1u << 30) ? (1u << 30) : len - fed;
			zs.next_in = (Bytef *)in + fed;
			zs.avail_in = (uInt)chunk;
			fed += chunk;
		}
		if (n == cap) {
			if (cap > max) {
				inflateEnd(&zs);
				free(buf);
				return sd_error_set(err, EFBIG,
						    "%s: decompresses to more than %zu bytes: not a "
						    "snapshot (or a damaged one)",
						    name, max);
			}
			cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			buf = sd_xrealloc(buf, cap + 1);
		}
		zs.next_out = (Bytef *)buf + n;
		zs.avail_out = (uInt)(cap - n);
		r = inflate(&zs, Z_NO_FLUSH);
		n = cap - zs.avail_out;
		if (r == Z_STREAM_END)
			break;
		if (r == Z_BUF_ERROR && zs.avail_in == 0 && fed >= len) {
			inflateEnd(&zs);
			free(buf);
			return sd_error_set(err, EINVAL,
					    "%s: truncated: the compressed data ends after %zu bytes "
					    "(%zu bytes decompressed)",
					    name, len, n);
		}
		if (r != Z_OK && r != Z_BUF_ERROR) {
			const char *why = zs.msg ? zs.msg : "invalid data";
			size_t at = (size_t)zs.total_in;
			inflateEnd(&zs);
			free(buf);
			return sd_error_set(err, EINVAL, "%s: corrupted compressed data at byte %zu: %s",
					    name, at, r == Z_MEM_ERROR ? "out of memory" : why);
		}
	}
	size_t used = (size_t)zs.total_in;
	inflateEnd(&zs);
	if (used < len) {
		free(buf);
		return sd_error_set(err, EINVAL,
				    "%s: corrupted: %zu bytes of garbage after the compressed data "
				    "(at byte %zu)",
				    name, len - used, used);
	}
	buf[n] = '\0';
	*out = buf;
	*outlen = n;
	return 0;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static const char *errno_hint(int e)
{
	switch (e) {
	case ENOSPC: return " (free some space, or bound the recording with --max-disk)";
	case EDQUOT: return " (disk quota exceeded: free some space)";
	case EROFS: return " (the file system is read-only)";
	case EACCES:
	case EPERM: return " (check the directory's permissions)";
	default: return "";
	}
}

int snapio_write_atomic(const char *path, const void *data, size_t len, int flags,
			unsigned mode, uint64_t *written, struct sd_error *err)
{
	struct strbuf zbuf;
	strbuf_init(&zbuf);
	if (flags & SNAPIO_GZIP) {
		int r = snapio_gzip_buf(data, len, &zbuf, err);
		if (r < 0) {
			strbuf_release(&zbuf);
			return r;
		}
		data = zbuf.buf;
		len = zbuf.len;
	}
	/* The temporary file lives in the target directory so that rename()
	 * is atomic; its name starts with a dot so readers skip it. */
	const char *slash = strrchr(path, '/');
	size_t dlen = slash ? (size_t)(slash - path) : 0;
	const char *base = slash ? slash + 1 : path;
	struct strbuf tmp, dir;
	strbuf_init(&tmp);
	strbuf_init(&dir);
	if (slash)
		strbuf_add(&dir, path, dlen ? dlen : 1);
	else
		strbuf_adds(&dir, ".");
	strbuf_addf(&tmp, "%s/.%s.tmp.%d", dir.buf, base, (int)getpid());
	int rc = 0, fd = -1;
	const char *what = "write";
	fd = open(tmp.buf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0) {
		rc = -errno;
		what = "create";
		goto fail;
	}
	if ((rc = write_all(fd, data, len)) < 0)
		goto fail;
	if (fsync(fd) < 0) {
		rc = -errno;
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		rc = -errno;
		goto fail;
	}
	fd = -1;
	if (rename(tmp.buf, path) < 0) {
		rc = -errno;
		what = "rename into place";
		goto fail;
	}
	/* Make the rename itself durable; failing here loses nothing. (A
	 * caller that writes another file into the same directory next
	 * leaves it to that one.) */
	int dfd = flags & SNAPIO_NO_DIR_SYNC ? -1 : open(dir.buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	if (written)
		*written = len;
	strbuf_release(&tmp);
	strbuf_release(&dir);
	strbuf_release(&zbuf);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp.buf);
	sd_error_set(err, -rc, "cannot %s %s: %s%s", what, path, errtext(-rc), errno_hint(-rc));
	strbuf_release(&tmp);
	strbuf_release(&dir);
	strbuf_release(&zbuf);
	return rc;
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

int snapio_read_file(const char *path, char **out, size_t *len, struct sd_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		return sd_error_set(err, e, "cannot open %s: %s", path, errtext(e));
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return sd_error_set(err, e, "cannot read %s: %s", path, errtext(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		if (S_ISDIR(st.st_mode))
			return sd_error_set(err, EISDIR, "%s: is a directory, not a snapshot file",
					    path);
		return sd_error_set(err, EINVAL, "%s: not a regular file", path);
	}
	if ((uint64_t)st.st_size > SNAPIO_MAX_BYTES) {
		close(fd);
		return sd_error_set(err, EFBIG, "%s: too large for a snapshot (%lld bytes)", path,
				    (long long)st.st_size);
	}
	size_t cap = (size_t)st.st_size + 1, n = 0;
	char *buf = sd_xmalloc(cap + 1);
	for (;;) {
		if (n == cap) {
			if (cap > SNAPIO_MAX_BYTES) {
				free(buf);
				close(fd);
				return sd_error_set(err, EFBIG, "%s: too large for a snapshot",
						    path);
			}
			cap *= 2;
			buf = sd_xrealloc(buf, cap + 1);
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			free(buf);
			close(fd);
			return sd_error_set(err, e, "cannot read %s: %s", path, errtext(e));
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	if (n >= 2 && (unsigned char)buf[0] == 0x1f && (unsigned char)buf[1] == 0x8b) {
		char *plain;
		size_t pl;
		int r = snapio_gunzip(path, buf, n, SNAPIO_MAX_BYTES, &plain, &pl, err);
		free(buf);
		if (r < 0)
			return r;
		buf = plain;
		n = pl;
	}
	*out = buf;
	*len = n;
	return 0;
}

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

static int read_lockmem(struct rd *r, json_t *arr, struct sd_thread *th)
{
	size_t n = json_array_size(arr);
	if (!n)
		return 0;
	th->lockmem = sd_xcalloc(n, sizeof(*th->lockmem));
	for (size_t i = 0; i < n; i++) {
		size_t old = rd_push(r, ".lockmem[%zu]", i);
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
	const char *kind = NULL;
	if (get_str(r, o, "error", 0, &th->error) < 0 ||
	    get_str(r, o, "unwind_stop", 0, &th->unwind_stop) < 0 ||
	    get_str(r, o, "capture", 0, &kind) < 0)
		return -1;
	th->kind = snapshot_capture_kind_parse(kind);
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
	if (lm && read_lockmem(r, lm, th) < 0)
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

/* ---- names in a recording directory ----------------------------------- */

void snapio_file_name(char *buf, size_t size, double t, int compress)
{
	time_t sec = (time_t)t;
	int ms = (int)((t - (double)sec) * 1000.0);
	if (ms < 0)
		ms = 0;
	if (ms > 999)
		ms = 999;
	struct tm tm;
	gmtime_r(&sec, &tm);
	char stamp[32];
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	snprintf(buf, size, "snap-%s.%03dZ.json%s", stamp, ms, compress ? ".gz" : "");
}

int snapio_is_snapshot_name(const char *name)
{
	size_t n = strlen(name);
	if (strncmp(name, "snap-", 5))
		return 0;
	return (n > 10 && !strcmp(name + n - 5, ".json")) ||
	       (n > 13 && !strcmp(name + n - 8, ".json.gz"));
}

int snapio_clean_temp(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *t = strstr(de->d_name, ".tmp.");
		if (de->d_name[0] != '.' || !t)
			continue;
		/* Leave alone the file of a writer that is still running. */
		long pid = sd_parse_pid(t + 5);
		if (pid > 0 && pid != (long)getpid() && kill((pid_t)pid, 0) == 0)
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (unlink(path) == 0)
			n++;
	}
	closedir(d);
	return n;
}

/* ---- the manifest ------------------------------------------------------ */

static void add_member_line(struct strbuf *sb, const char *key, json_t *val, int last)
{
	json_t *jk = json_string(key);
	char *ks = json_dumps(jk, JSON_ENCODE_ANY);
	json_decref(jk);
	strbuf_addf(sb, " %s: ", ks ? ks : "\"?\"");
	free(ks);
	if (json_is_array(val) && json_array_size(val)) {
		strbuf_adds(sb, "[\n");
		size_t n = json_array_size(val);
		for (size_t i = 0; i < n; i++) {
			char *e = json_dumps(json_array_get(val, i),
					     JSON_ENCODE_ANY | JSON_COMPACT | JSON_PRESERVE_ORDER);
			strbuf_addf(sb, "  %s%s\n", e ? e : "null", i + 1 < n ? "," : "");
			free(e);
		}
		strbuf_adds(sb, " ]");
	} else {
		char *e = json_dumps(val, JSON_ENCODE_ANY | JSON_COMPACT | JSON_PRESERVE_ORDER);
		strbuf_adds(sb, e ? e : "null");
		free(e);
	}
	strbuf_adds(sb, last ? "\n" : ",\n");
}

int snapio_manifest_write(const char *dir, json_t *m, uint64_t *bytes, struct sd_error *err)
{
	struct strbuf sb, path;
	strbuf_init(&sb);
	strbuf_init(&path);
	strbuf_adds(&sb, "{\n");
	size_t n = json_object_size(m), i = 0;
	const char *key;
	json_t *val;
	json_object_foreach(m, key, val)
	{
		add_member_line(&sb, key, val, ++i == n);
	}
	strbuf_adds(&sb, "}\n");
	strbuf_addf(&path, "%s/%s", dir, SNAPIO_MANIFEST_NAME);
	int r = snapio_write_atomic(path.buf, sb.buf, sb.len, 0, 0600, bytes, err);
	strbuf_release(&sb);
	strbuf_release(&path);
	return r;
}

static int plain_name(const char *f)
{
	return f[0] && f[0] != '.' && !strchr(f, '/');
}

json_t *snapio_manifest_load(const char *dir, struct sd_error *err)
{
	struct strbuf path;
	strbuf_init(&path);
	strbuf_addf(&path, "%s/%s", dir, SNAPIO_MANIFEST_NAME);
	char *text;
	size_t len;
	if (access(path.buf, F_OK) < 0 && errno == ENOENT) {
		sd_error_set(err, ENOENT, "%s: no manifest", path.buf);
		strbuf_release(&path);
		return NULL;
	}
	if (snapio_read_file(path.buf, &text, &len, err) < 0) {
		strbuf_release(&path);
		return NULL;
	}
	json_error_t je;
	json_t *m = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!m) {
		sd_error_set(err, EINVAL, "%s: line %d column %d: %s", path.buf, je.line, je.column,
			     je.text);
		goto fail;
	}
	json_t *fmt = json_object_get(m, "format");
	json_t *ver = json_object_get(m, "version");
	if (!json_is_object(m) || !json_is_string(fmt) ||
	    strcmp(json_string_value(fmt), SNAPIO_MANIFEST_FORMAT)) {
		sd_error_set(err, EINVAL, "%s: not the manifest of a stackdump recording",
			     path.buf);
		goto fail;
	}
	if (!json_is_integer(ver) || json_integer_value(ver) < 1) {
		sd_error_set(err, EINVAL, "%s: version: expected a positive integer", path.buf);
		goto fail;
	}
	if (json_integer_value(ver) > SNAPIO_MANIFEST_VERSION) {
		sd_error_set(err, EINVAL,
			     "%s: version: manifest version %lld is newer than this stackdump reads "
			     "(%d): use a newer stackdump",
			     path.buf, (long long)json_integer_value(ver), SNAPIO_MANIFEST_VERSION);
		goto fail;
	}
	json_t *snaps = json_object_get(m, "snapshots");
	if (!json_is_array(snaps)) {
		sd_error_set(err, EINVAL, "%s: snapshots: expected an array", path.buf);
		goto fail;
	}
	for (size_t i = 0; i < json_array_size(snaps); i++) {
		json_t *e = json_array_get(snaps, i);
		json_t *f = json_object_get(e, "file");
		if (!json_is_string(f) || !plain_name(json_string_value(f))) {
			sd_error_set(err, EINVAL,
				     "%s: snapshots[%zu].file: expected the name of a file in the "
				     "directory",
				     path.buf, i);
			goto fail;
		}
	}
	strbuf_release(&path);
	return m;
fail:
	json_decref(m);
	strbuf_release(&path);
	return NULL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void snapio_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int snapio_list_dir(const char *dir, char ***names, size_t *n, size_t *missing,
		    struct sd_error *err)
{
	char **v = NULL;
	size_t cnt = 0, cap = 0, miss = 0;
	struct sd_error e1 = {0};
	json_t *m = snapio_manifest_load(dir, &e1);
	if (!m && e1.code != ENOENT) {
		if (err)
			*err = e1;
		return -(e1.code ? e1.code : EINVAL);
	}
	if (m) {
		json_t *snaps = json_object_get(m, "snapshots");
		for (size_t i = 0; i < json_array_size(snaps); i++) {
			const char *f = json_string_value(json_object_get(json_array_get(snaps, i), "file"));
			struct strbuf p;
			strbuf_init(&p);
			strbuf_addf(&p, "%s/%s", dir, f);
			if (access(p.buf, F_OK) < 0) {
				miss++;
				strbuf_release(&p);
				continue;
			}
			sd_grow(&v, &cap, cnt + 1, sizeof(*v));
			v[cnt++] = strbuf_detach(&p);
		}
		json_decref(m);
	} else {
		DIR *d = opendir(dir);
		if (!d) {
			int e = errno;
			return sd_error_set(err, e, "cannot read directory %s: %s", dir, errtext(e));
		}
		struct dirent *de;
		while ((de = readdir(d))) {
			if (!snapio_is_snapshot_name(de->d_name))
				continue;
			sd_grow(&v, &cap, cnt + 1, sizeof(*v));
			v[cnt++] = sd_xstrdup(de->d_name);
		}
		closedir(d);
		/* The names hold the UTC time: sorting them sorts by time. */
		if (cnt)
			sd_sort(v, cnt, sizeof(*v), cmp_str);
		for (size_t i = 0; i < cnt; i++) {
			struct strbuf p;
			strbuf_init(&p);
			strbuf_addf(&p, "%s/%s", dir, v[i]);
			free(v[i]);
			v[i] = strbuf_detach(&p);
		}
	}
	*names = v;
	*n = cnt;
	if (missing)
		*missing = miss;
	return 0;
}
