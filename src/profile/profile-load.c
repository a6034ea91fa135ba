// SPDX-License-Identifier: MIT
// Loading saved profiles: folded stacks ("a;b;c 12" per line) and the JSON
// of format_profile_json(), back into a profile that diff and the
// renderers read like a sampled one.
#include "profile.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static struct sd_profile *parse_folded(const char *text, size_t len, const char *name,
				       struct sd_error *err)
{
	struct sd_profile *p = profile_new(NULL);
	size_t lineno = 0, cap = 0;
	struct sd_pframe *fr = NULL;
	const char *c = text, *end = text + len;
	while (c < end) {
		const char *nl = memchr(c, '\n', (size_t)(end - c));
		const char *le = nl ? nl : end;
		lineno++;
		size_t l = (size_t)(le - c);
		while (l && (c[l - 1] == '\r' || c[l - 1] == ' ' || c[l - 1] == '\t'))
			l--;
		if (l == 0 || c[0] == '#') {
			c = nl ? nl + 1 : end;
			continue;
		}
		const char *sp = NULL;
		for (size_t i = l; i-- > 0;)
			if (c[i] == ' ') {
				sp = c + i;
				break;
			}
		char *e = NULL;
		unsigned long long cnt = 0;
		if (sp) {
			char num[32];
			size_t nl2 = (size_t)(c + l - sp - 1);
			if (nl2 == 0 || nl2 >= sizeof(num))
				sp = NULL;
			else {
				memcpy(num, sp + 1, nl2);
				num[nl2] = '\0';
				errno = 0;
				cnt = strtoull(num, &e, 10);
				if (errno || *e || num[0] == '-')
					sp = NULL;
			}
		}
		if (!sp || sp == c) {
			sd_error_set(err, EINVAL,
				     "cannot read %s: line %zu is not a folded stack (expected "
				     "'frame;frame;... COUNT')",
				     name, lineno);
			free(fr);
			profile_free(p);
			return NULL;
		}
		/* Frames root first, separated by ';'. */
		size_t n = 0;
		const char *f = c;
		while (f < sp) {
			const char *semi = memchr(f, ';', (size_t)(sp - f));
			const char *fe = semi ? semi : sp;
			sd_grow(&fr, &cap, n + 1, sizeof(*fr));
			memset(&fr[n], 0, sizeof(*fr));
			fr[n].function = strpool_intern_n(p->pool, f, (size_t)(fe - f));
			n++;
			f = semi ? semi + 1 : sp;
		}
		for (size_t i = 0; i < n / 2; i++) {
			struct sd_pframe tmp = fr[i];
			fr[i] = fr[n - 1 - i];
			fr[n - 1 - i] = tmp;
		}
		profile_add_stack(p, fr, n, cnt, 0, 0, 0, "", NULL);
		c = nl ? nl + 1 : end;
	}
	free(fr);
	return p;
}

static const char *jstr(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static uint64_t jnum(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	if (json_is_integer(v) && json_integer_value(v) > 0)
		return (uint64_t)json_integer_value(v);
	if (json_is_string(v))
		return strtoull(json_string_value(v), NULL, 0);
	return 0;
}

static struct sd_profile *parse_json(const char *text, size_t len, const char *name,
				     struct sd_error *err)
{
	json_error_t je;
	json_t *doc = json_loadb(text, len, 0, &je);
	if (!doc) {
		sd_error_set(err, EINVAL, "cannot read %s: invalid JSON at line %d: %s", name,
			     je.line, je.text);
		return NULL;
	}
	json_t *stacks = json_object_get(doc, "stacks");
	if (!json_is_array(stacks)) {
		sd_error_set(err, EINVAL,
			     "cannot read %s: not a stackdump profile (no \"stacks\" array; save "
			     "one with 'profile --format json')",
			     name);
		json_decref(doc);
		return NULL;
	}
	struct sd_profile_opts o;
	profile_opts_init(&o);
	/* Frames of a by-address profile are merged by their saved names
	 * ("function+0xOFF"), kept as they were. */
	int by_address = json_is_true(json_object_get(doc, "by_address"));
	struct sd_profile *p = profile_new(&o);
	p->samples = jnum(doc, "samples");
	p->duration_us = jnum(doc, "duration_us");
	p->interval_us = jnum(doc, "interval_us");
	if (jstr(doc, "engine"))
		p->engine = strpool_intern(p->pool, jstr(doc, "engine"));
	p->lost_samples = jnum(doc, "lost_samples");
	p->stale_stacks = jnum(doc, "stale_stacks");
	p->throttled = jnum(doc, "throttled");
	size_t i;
	json_t *st;
	json_array_foreach(stacks, i, st)
	{
		json_t *frames = json_object_get(st, "frames");
		size_t n = json_array_size(frames);
		struct sd_pframe *f = sd_xcalloc(n ? n : 1, sizeof(*f));
		for (size_t k = 0; k < n; k++) {
			json_t *jf = json_array_get(frames, k);
			f[k].function = jstr(jf, "function");
			if (by_address && jstr(jf, "name"))
				f[k].function = jstr(jf, "name");
			f[k].module = jstr(jf, "module");
			f[k].build_id = jstr(jf, "build_id");
			f[k].file = jstr(jf, "file");
			f[k].line = (int)jnum(jf, "line");
			f[k].pc = jnum(jf, "addr");
			f[k].offset = jnum(jf, "offset");
			if (json_is_true(json_object_get(jf, "inlined")))
				f[k].flags |= SD_FRAME_INLINED;
		}
		uint64_t count = jnum(st, "count"), on = jnum(st, "on_cpu");
		json_t *threads = json_object_get(st, "threads");
		if (json_array_size(threads) == 0) {
			profile_add_stack(p, f, n, count, on, 0, 0, "", NULL);
		} else {
			size_t k;
			json_t *jt;
			json_array_foreach(threads, k, jt)
			{
				profile_add_stack(p, f, n, jnum(jt, "count"), jnum(jt, "on_cpu"),
						  (pid_t)jnum(jt, "pid"), (pid_t)jnum(jt, "tid"),
						  jstr(jt, "name"), NULL);
			}
		}
		free(f);
	}
	json_decref(doc);
	return p;
}

struct sd_profile *profile_parse(const char *text, size_t len, const char *name,
				 struct sd_error *err)
{
	size_t i = 0;
	while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r'))
		i++;
	if (i < len && text[i] == '{')
		return parse_json(text, len, name, err);
	if (len >= 2 && (uint8_t)text[0] == 0x1f && (uint8_t)text[1] == 0x8b) {
		sd_error_set(err, EINVAL,
			     "cannot read %s: a gzipped file (pprof?): diff reads folded stacks "
			     "or stackdump JSON profiles",
			     name);
		return NULL;
	}
	if (memchr(text, '\0', len)) {
		sd_error_set(err, EINVAL, "cannot read %s: binary data, not folded stacks or JSON",
			     name);
		return NULL;
	}
	return parse_folded(text, len, name, err);
}

struct sd_profile *profile_load(const char *path, struct sd_error *err)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		int e = errno;
		sd_error_set(err, e, "cannot open %s: %s", path, sd_strerror(e));
		return NULL;
	}
	struct strbuf sb;
	strbuf_init(&sb);
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		strbuf_add(&sb, buf, n);
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		strbuf_release(&sb);
		sd_error_set(err, EIO, "cannot read %s: read error", path);
		return NULL;
	}
	struct sd_profile *p = profile_parse(sb.buf ? sb.buf : "", sb.len, path, err);
	strbuf_release(&sb);
	return p;
}
