// SPDX-License-Identifier: MIT
// The layout of a recording directory: snapshot file names by UTC time,
// temporary files a killed run left, the manifest (written atomically, one
// snapshot per line) and the list of snapshots in the manifest's order.
#include "snapio.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
