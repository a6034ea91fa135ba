// SPDX-License-Identifier: MIT
// The strict reader of saved JSON (jsonrd.h): typed members, the place of
// the first error, frames as a dump writes them.
#include "jsonrd.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t jrd_push(struct sd_jrd *r, const char *fmt, ...)
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

void jrd_pop(struct sd_jrd *r, size_t old)
{
	r->plen = old;
	r->path[old] = '\0';
}

int jrd_fail(struct sd_jrd *r, const char *key, const char *fmt, ...)
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
		snprintf(r->msg, sizeof(r->msg), "%s", what);
	else
		snprintf(r->msg, sizeof(r->msg), "%s%s%s: %s", r->path, sep, key ? key : "", what);
	if (r->err)
		sd_error_set(r->err, EINVAL, "%s: %s", r->name, r->msg);
	return -1;
}

const char *jrd_type_name(const json_t *j)
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
static json_t *member(struct sd_jrd *r, const json_t *o, const char *key, int required, int *bad)
{
	json_t *v = json_object_get(o, key);
	if (required && (!v || json_is_null(v))) {
		jrd_fail(r, key, v ? "must not be null" : "missing");
		*bad = 1;
	}
	return v;
}

int jrd_int(struct sd_jrd *r, const json_t *o, const char *key, int required, long long lo,
		   long long hi, long long *out)
{
	int bad = 0;
	json_t *v = member(r, o, key, required, &bad);
	if (bad)
		return -1;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return jrd_fail(r, key, "expected an integer, found %s", jrd_type_name(v));
	long long x = json_integer_value(v);
	if (x < lo || x > hi)
		return jrd_fail(r, key, "%lld is out of range (%lld..%lld)", x, lo, hi);
	*out = x;
	return 1;
}

int jrd_u64(struct sd_jrd *r, const json_t *o, const char *key, uint64_t *out)
{
	long long x = 0;
	int k = jrd_int(r, o, key, 0, 0, LLONG_MAX, &x);
	if (k > 0)
		*out = (uint64_t)x;
	return k;
}

int jrd_real(struct sd_jrd *r, const json_t *o, const char *key, double *out)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return jrd_fail(r, key, "expected a number, found %s", jrd_type_name(v));
	*out = json_number_value(v);
	return 1;
}

int jrd_bool(struct sd_jrd *r, const json_t *o, const char *key, int *out)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return jrd_fail(r, key, "expected true or false, found %s", jrd_type_name(v));
	*out = json_is_true(v);
	return 1;
}

/* A string member, interned in the snapshot's pool. */
int jrd_str(struct sd_jrd *r, const json_t *o, const char *key, int required, const char **out)
{
	int bad = 0;
	json_t *v = member(r, o, key, required, &bad);
	if (bad)
		return -1;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return jrd_fail(r, key, "expected a string, found %s", jrd_type_name(v));
	*out = strpool_intern_n(r->s->pool, json_string_value(v), json_string_length(v));
	return 1;
}

int jrd_parse_hex(const char *p, uint64_t *out)
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

int jrd_hex_value(struct sd_jrd *r, const json_t *v, const char *key, uint64_t *out)
{
	if (!json_is_string(v))
		return jrd_fail(r, key, "expected a hex string (\"0x...\"), found %s", jrd_type_name(v));
	if (jrd_parse_hex(json_string_value(v), out) < 0)
		return jrd_fail(r, key, "invalid hex number \"%.40s\"", json_string_value(v));
	return 1;
}

int jrd_hex(struct sd_jrd *r, const json_t *o, const char *key, int required, uint64_t *out)
{
	int bad = 0;
	json_t *v = member(r, o, key, required, &bad);
	if (bad)
		return -1;
	if (!v || json_is_null(v))
		return 0;
	return jrd_hex_value(r, v, key, out);
}

int jrd_char(struct sd_jrd *r, const json_t *o, const char *key, char *out)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v) || json_string_length(v) != 1)
		return jrd_fail(r, key, "expected a one-letter state like \"S\"");
	*out = json_string_value(v)[0];
	return 1;
}

json_t *jrd_array(struct sd_jrd *r, const json_t *o, const char *key, int required)
{
	int bad = 0;
	json_t *v = member(r, o, key, required, &bad);
	if (bad || !v || (json_is_null(v) && !required))
		return NULL;
	if (!json_is_array(v)) {
		jrd_fail(r, key, "expected an array, found %s", jrd_type_name(v));
		return NULL;
	}
	return v;
}

json_t *jrd_object(struct sd_jrd *r, const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return NULL;
	if (!json_is_object(v)) {
		jrd_fail(r, key, "expected an object, found %s", jrd_type_name(v));
		return NULL;
	}
	return v;
}

int jrd_frame(struct sd_jrd *r, const json_t *o, struct sd_frame *f)
{
	memset(f, 0, sizeof(*f));
	long long x = 0;
	int b;
	uint64_t u = 0;
	if (!json_is_object(o))
		return jrd_fail(r, NULL, "expected a frame object, found %s", jrd_type_name(o));
	if (jrd_hex(r, o, "addr", 1, &f->pc) < 0)
		return -1;
	if (jrd_hex(r, o, "sp", 0, &f->sp) < 0 || jrd_hex(r, o, "offset", 0, &f->offset) < 0)
		return -1;
	if (jrd_str(r, o, "module", 0, &f->module) < 0 ||
	    jrd_str(r, o, "build_id", 0, &f->build_id) < 0 ||
	    jrd_str(r, o, "function", 0, &f->function) < 0 ||
	    jrd_str(r, o, "file", 0, &f->file) < 0)
		return -1;
	if (jrd_int(r, o, "line", 0, 0, INT_MAX, &x) < 0)
		return -1;
	f->line = json_is_integer(json_object_get(o, "line")) ? (int)x : 0;
	if (jrd_u64(r, o, "symoff", &u) < 0)
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
		if (jrd_bool(r, o, flags[i].key, &b) < 0)
			return -1;
		if (b)
			f->flags |= flags[i].flag;
	}
	return 0;
}
