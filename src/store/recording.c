// SPDX-License-Identifier: MIT
// The layout of a recording directory: snapshot file names by UTC time,
// temporary files a killed run left, the manifest (written atomically, one
// snapshot per line) and the list of snapshots in the manifest's order.
#include "snapio.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jsonw.h"
#include "version.h"

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
		/* ".NAME.tmp.PID" (older) or ".NAME.tmp.PID.RANDOM"
		 * (safefile.h). */
		char digits[16];
		size_t nd = strspn(t + 5, "0123456789");
		snprintf(digits, sizeof(digits), "%.*s", (int)(nd < 15 ? nd : 15), t + 5);
		long pid = sd_parse_pid(digits);
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

void snapio_manifest_init(struct snapio_manifest *m)
{
	memset(m, 0, sizeof(*m));
	m->version = SNAPIO_MANIFEST_VERSION;
	m->tool = sd_xstrdup("stackdump " STACKDUMP_VERSION);
	m->started = m->updated = sd_wall_time();
	m->state = sd_xstrdup("recording");
}

static void snap_release(struct snapio_manifest_snap *e)
{
	free(e->file);
	free(e->reason);
}

void snapio_manifest_release(struct snapio_manifest *m)
{
	free(m->tool);
	free(m->state);
	free(m->stop_reason);
	free(m->target.comm);
	free(m->target.exe);
	free(m->options.every);
	free(m->options.when);
	for (size_t i = 0; i < m->nsnaps; i++)
		snap_release(&m->snaps[i]);
	free(m->snaps);
	for (size_t i = 0; i < m->ndropped_last; i++)
		free(m->dropped_last[i]);
	free(m->dropped_last);
	for (size_t i = 0; i < m->nevents; i++) {
		free(m->events[i].event);
		free(m->events[i].detail);
	}
	free(m->events);
	memset(m, 0, sizeof(*m));
}

void snapio_manifest_set(char **field, const char *s)
{
	free(*field);
	*field = s ? sd_xstrdup(s) : NULL;
}

void snapio_manifest_add_snap(struct snapio_manifest *m, const struct snapio_manifest_snap *e)
{
	sd_grow(&m->snaps, &m->snapcap, m->nsnaps + 1, sizeof(*m->snaps));
	struct snapio_manifest_snap *d = &m->snaps[m->nsnaps++];
	*d = *e;
	d->file = sd_xstrdup(e->file);
	d->reason = e->reason ? sd_xstrdup(e->reason) : NULL;
}

void snapio_manifest_pop_snap(struct snapio_manifest *m)
{
	if (m->nsnaps)
		snap_release(&m->snaps[--m->nsnaps]);
}

/* The names of the last dropped snapshots a manifest keeps. */
#define MANIFEST_DROPPED_LAST 20

void snapio_manifest_drop_first(struct snapio_manifest *m, uint64_t bytes)
{
	if (!m->nsnaps)
		return;
	m->dropped++;
	m->dropped_bytes += bytes;
	if (m->ndropped_last == MANIFEST_DROPPED_LAST) {
		free(m->dropped_last[0]);
		memmove(m->dropped_last, m->dropped_last + 1,
			--m->ndropped_last * sizeof(*m->dropped_last));
	}
	sd_grow(&m->dropped_last, &m->lastcap, m->ndropped_last + 1, sizeof(*m->dropped_last));
	m->dropped_last[m->ndropped_last++] = m->snaps[0].file;
	free(m->snaps[0].reason);
	memmove(m->snaps, m->snaps + 1, --m->nsnaps * sizeof(*m->snaps));
}

/* A recording that follows a flapping process must not grow without
 * bound: the first events and the latest ones are kept. */
#define MANIFEST_EVENTS 1000
#define MANIFEST_FIRST_EVENTS 10

void snapio_manifest_event(struct snapio_manifest *m, double t, const char *event,
			   const char *detail)
{
	if (m->nevents >= MANIFEST_EVENTS) {
		struct snapio_manifest_event *x = &m->events[MANIFEST_FIRST_EVENTS];
		free(x->event);
		free(x->detail);
		memmove(x, x + 1,
			(m->nevents - MANIFEST_FIRST_EVENTS - 1) * sizeof(*m->events));
		m->nevents--;
	}
	sd_grow(&m->events, &m->evcap, m->nevents + 1, sizeof(*m->events));
	struct snapio_manifest_event *e = &m->events[m->nevents++];
	e->time = t;
	e->event = sd_xstrdup(event);
	e->detail = detail ? sd_xstrdup(detail) : NULL;
}

/* One member per line, each snapshot and event on a line of its own: the
 * manifest stays readable and diffable. */
static void manifest_json(struct jsonw *w, const struct snapio_manifest *m)
{
	jsonw_object_begin(w);
	jsonw_kstr(w, "format", SNAPIO_MANIFEST_FORMAT);
	jsonw_kint(w, "version", m->version);
	jsonw_kstr(w, "tool", m->tool);
	jsonw_kdouble(w, "started", m->started);
	jsonw_kdouble(w, "updated", m->updated);
	jsonw_kstr(w, "state", m->state);
	jsonw_key(w, "target");
	jsonw_inline(w);
	jsonw_object_begin(w);
	if (m->target.pid > 0) {
		jsonw_kint(w, "pid", m->target.pid);
		jsonw_kstr(w, "comm", m->target.comm);
		jsonw_kstr(w, "exe", m->target.exe);
		jsonw_kbool(w, "follow", m->target.follow);
	}
	jsonw_object_end(w);
	jsonw_key(w, "options");
	jsonw_inline(w);
	jsonw_object_begin(w);
	if (m->options.set) {
		jsonw_kstr(w, "every", m->options.every);
		jsonw_kstr(w, "when", m->options.when);
		if (m->options.when)
			jsonw_kint(w, "burst", m->options.burst);
		jsonw_kbool(w, "compress", m->options.compress);
		if (m->options.max_disk)
			jsonw_ku64(w, "max_disk", m->options.max_disk);
		else
			jsonw_knull(w, "max_disk");
	}
	jsonw_object_end(w);
	jsonw_karray(w, "snapshots");
	for (size_t i = 0; i < m->nsnaps; i++) {
		const struct snapio_manifest_snap *e = &m->snaps[i];
		jsonw_inline(w);
		jsonw_object_begin(w);
		jsonw_kstr(w, "file", e->file);
		jsonw_ku64(w, "seq", e->seq);
		jsonw_kdouble(w, "time", e->time);
		jsonw_kint(w, "pid", e->pid);
		jsonw_ku64(w, "threads", e->threads);
		jsonw_ku64(w, "bytes", e->bytes);
		jsonw_kstr(w, "reason", e->reason ? e->reason : "?");
		jsonw_kbool(w, "partial", e->partial);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	jsonw_key(w, "dropped");
	jsonw_inline(w);
	jsonw_object_begin(w);
	jsonw_ku64(w, "count", m->dropped);
	jsonw_ku64(w, "bytes", m->dropped_bytes);
	jsonw_karray(w, "last");
	for (size_t i = 0; i < m->ndropped_last; i++)
		jsonw_str(w, m->dropped_last[i]);
	jsonw_array_end(w);
	jsonw_object_end(w);
	jsonw_karray(w, "events");
	for (size_t i = 0; i < m->nevents; i++) {
		const struct snapio_manifest_event *e = &m->events[i];
		jsonw_inline(w);
		jsonw_object_begin(w);
		jsonw_kdouble(w, "time", e->time);
		jsonw_kstr(w, "event", e->event);
		if (e->detail)
			jsonw_kstr(w, "detail", e->detail);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	if (m->stop_reason)
		jsonw_kstr(w, "stop_reason", m->stop_reason);
	jsonw_object_end(w);
}

int snapio_manifest_write(const char *dir, const struct snapio_manifest *m, uint64_t *bytes,
			  struct sd_error *err)
{
	struct strbuf sb, path;
	strbuf_init(&sb);
	strbuf_init(&path);
	struct jsonw w;
	jsonw_init(&w, &sb, 1);
	manifest_json(&w, m);
	jsonw_release(&w);
	strbuf_adds(&sb, "\n");
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

/* ---- reading it back (jansson parses; members of the wrong type read as
 * absent) ---- */

static char *jdup(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	return v ? sd_xstrdup(v) : NULL;
}

static uint64_t ju64(json_t *o, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(o, key));
	return v > 0 ? (uint64_t)v : 0;
}

static void manifest_from_json(struct snapio_manifest *m, json_t *o)
{
	m->version = (long)json_integer_value(json_object_get(o, "version"));
	m->tool = jdup(o, "tool");
	m->started = json_number_value(json_object_get(o, "started"));
	m->updated = json_number_value(json_object_get(o, "updated"));
	m->state = jdup(o, "state");
	m->stop_reason = jdup(o, "stop_reason");
	json_t *t = json_object_get(o, "target");
	m->target.pid = (pid_t)ju64(t, "pid");
	m->target.comm = jdup(t, "comm");
	m->target.exe = jdup(t, "exe");
	m->target.follow = json_is_true(json_object_get(t, "follow"));
	json_t *op = json_object_get(o, "options");
	m->options.set = json_object_size(op) > 0;
	m->options.every = jdup(op, "every");
	m->options.when = jdup(op, "when");
	m->options.burst = (int)ju64(op, "burst");
	m->options.compress = json_is_true(json_object_get(op, "compress"));
	m->options.max_disk = ju64(op, "max_disk");
	json_t *snaps = json_object_get(o, "snapshots");
	for (size_t i = 0; i < json_array_size(snaps); i++) {
		json_t *e = json_array_get(snaps, i);
		struct snapio_manifest_snap x = {
		    .file = (char *)json_string_value(json_object_get(e, "file")),
		    .seq = ju64(e, "seq"),
		    .time = json_number_value(json_object_get(e, "time")),
		    .pid = (pid_t)ju64(e, "pid"),
		    .threads = ju64(e, "threads"),
		    .bytes = ju64(e, "bytes"),
		    .reason = (char *)json_string_value(json_object_get(e, "reason")),
		    .partial = json_is_true(json_object_get(e, "partial")),
		};
		snapio_manifest_add_snap(m, &x);
	}
	json_t *d = json_object_get(o, "dropped");
	m->dropped = ju64(d, "count");
	m->dropped_bytes = ju64(d, "bytes");
	json_t *last = json_object_get(d, "last");
	for (size_t i = 0; i < json_array_size(last); i++) {
		const char *f = json_string_value(json_array_get(last, i));
		if (!f)
			continue;
		sd_grow(&m->dropped_last, &m->lastcap, m->ndropped_last + 1,
			sizeof(*m->dropped_last));
		m->dropped_last[m->ndropped_last++] = sd_xstrdup(f);
	}
	json_t *ev = json_object_get(o, "events");
	for (size_t i = 0; i < json_array_size(ev); i++) {
		json_t *e = json_array_get(ev, i);
		const char *what = json_string_value(json_object_get(e, "event"));
		if (what)
			snapio_manifest_event(m, json_number_value(json_object_get(e, "time")), what,
					      json_string_value(json_object_get(e, "detail")));
	}
}

int snapio_manifest_load(const char *dir, struct snapio_manifest *out, struct sd_error *err)
{
	struct strbuf path;
	strbuf_init(&path);
	strbuf_addf(&path, "%s/%s", dir, SNAPIO_MANIFEST_NAME);
	char *text;
	size_t len;
	if (access(path.buf, F_OK) < 0 && errno == ENOENT) {
		int r = sd_error_set(err, ENOENT, "%s: no manifest", path.buf);
		strbuf_release(&path);
		return r;
	}
	int r = snapio_read_file(path.buf, &text, &len, err);
	if (r < 0) {
		strbuf_release(&path);
		return r;
	}
	json_error_t je;
	json_t *m = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!m) {
		r = sd_error_set(err, EINVAL, "%s: line %d column %d: %s", path.buf, je.line,
				 je.column, je.text);
		goto out;
	}
	json_t *fmt = json_object_get(m, "format");
	json_t *ver = json_object_get(m, "version");
	if (!json_is_object(m) || !json_is_string(fmt) ||
	    strcmp(json_string_value(fmt), SNAPIO_MANIFEST_FORMAT)) {
		r = sd_error_set(err, EINVAL, "%s: not the manifest of a stackdump recording",
				 path.buf);
		goto out;
	}
	if (!json_is_integer(ver) || json_integer_value(ver) < 1) {
		r = sd_error_set(err, EINVAL, "%s: version: expected a positive integer", path.buf);
		goto out;
	}
	if (json_integer_value(ver) > SNAPIO_MANIFEST_VERSION) {
		r = sd_error_set(err, EINVAL,
				 "%s: version: manifest version %lld is newer than this stackdump "
				 "reads (%d): use a newer stackdump",
				 path.buf, (long long)json_integer_value(ver),
				 SNAPIO_MANIFEST_VERSION);
		goto out;
	}
	json_t *snaps = json_object_get(m, "snapshots");
	if (!json_is_array(snaps)) {
		r = sd_error_set(err, EINVAL, "%s: snapshots: expected an array", path.buf);
		goto out;
	}
	for (size_t i = 0; i < json_array_size(snaps); i++) {
		json_t *e = json_array_get(snaps, i);
		json_t *f = json_object_get(e, "file");
		if (!json_is_string(f) || !plain_name(json_string_value(f))) {
			r = sd_error_set(err, EINVAL,
					 "%s: snapshots[%zu].file: expected the name of a file in "
					 "the directory",
					 path.buf, i);
			goto out;
		}
	}
	memset(out, 0, sizeof(*out));
	manifest_from_json(out, m);
	r = 0;
out:
	json_decref(m);
	strbuf_release(&path);
	return r;
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
	struct snapio_manifest m;
	int have = snapio_manifest_load(dir, &m, &e1);
	if (have < 0 && e1.code != ENOENT) {
		if (err)
			*err = e1;
		return -(e1.code ? e1.code : EINVAL);
	}
	if (have == 0) {
		for (size_t i = 0; i < m.nsnaps; i++) {
			const char *f = m.snaps[i].file;
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
		snapio_manifest_release(&m);
	} else {
		DIR *d = opendir(dir);
		if (!d) {
			int e = errno;
			return sd_error_set(err, e, "cannot read directory %s: %s", dir, sd_strerror(e));
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
