// SPDX-License-Identifier: MIT
// The streaming JSON writer: every JSON document stackdump produces (the
// renderers, the saved format, the manifest, the commands' --format json)
// is written through it, member by member, straight into a strbuf. jansson
// is only used to parse.
#ifndef SD_JSONW_H
#define SD_JSONW_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util.h"

/* Strings. Every string (values and keys) is given with its length or as
 * a NUL-terminated string, and nothing is ever dropped:
 *
 * - A string that is valid UTF-8 (strictly: no overlong forms, no
 *   surrogates, nothing above U+10FFFF; an embedded NUL is U+0000) is
 *   written exactly: a reader gets back the same bytes. '"', '\' and
 *   control characters are escaped as JSON does (\", \\, \b, \f, \n, \r,
 *   \t, else \u00XX); DEL and the C1 controls (U+0080..U+009F) too, so
 *   that a JSON file printed on a terminal cannot drive it.
 * - A string that is not valid UTF-8 (a name the target chose) is written
 *   as the text output shows it (strbuf_add_escapedn): each byte that is
 *   not part of a valid sequence reads \xNN, control characters \e, \n,
 *   \t or \xNN, a backslash \\; valid sequences are kept. A reader gets
 *   that text, so a name looks the same in the text output and in JSON.
 *
 * Layout: with INDENT 0 the document is compact (no space or newline, as
 * the saved format wants); with INDENT N > 0 each member and element is on
 * its own line, indented N spaces per level, "key": value, and empty
 * containers read {} and []. jsonw_inline() writes one container compact
 * inside an indented document (the manifest: one snapshot per line). */

struct jsonw {
	struct strbuf *out; /* not owned */
	int indent;
	int bad; /* a call out of place: jsonw_finish reports it */
	size_t depth, cap;
	unsigned char *level; /* per open container: its kind and state */
	int inline_next;
	int after_key;
	int done; /* a whole top-level value was written */
};

/* Start a writer appending to OUT (which the caller owns and which must
 * outlive the writer) with INDENT spaces per level (0: compact). */
void jsonw_init(struct jsonw *w, struct strbuf *out, int indent);
/* Free the writer's own state; OUT and what was written stay. */
void jsonw_release(struct jsonw *w);
/* 0 when exactly one complete value was written with every call in its
 * place (keys only in objects, before each member's value; every container
 * closed), else -EINVAL. The text is written either way. */
int jsonw_finish(const struct jsonw *w);

/* Containers. In an object, each member is jsonw_key() then one value
 * (or one of the jsonw_k*() shorthands below). */
void jsonw_object_begin(struct jsonw *w);
void jsonw_object_end(struct jsonw *w);
void jsonw_array_begin(struct jsonw *w);
void jsonw_array_end(struct jsonw *w);
/* Write the next container (and everything in it) compact on one line,
 * whatever the indent. */
void jsonw_inline(struct jsonw *w);

/* The key KEY[0..N) of the next member. */
void jsonw_keyn(struct jsonw *w, const char *key, size_t n);

/* Values. */
void jsonw_strn(struct jsonw *w, const char *s, size_t n);
void jsonw_int(struct jsonw *w, int64_t v);
void jsonw_u64(struct jsonw *w, uint64_t v);
/* A number with as few digits as read back to the same double, always
 * with a '.' or an exponent (2.0, not 2) so that it reads as a real;
 * NaN and infinities, which JSON cannot write, as null. */
void jsonw_double(struct jsonw *w, double v);
void jsonw_bool(struct jsonw *w, int b);
void jsonw_null(struct jsonw *w);
/* An address as a string, "0x7f4d01690545": JSON numbers lose precision
 * above 2^53. */
void jsonw_hex(struct jsonw *w, uint64_t v);
/* A whole value JSON[0..N) written by another writer with the same indent
 * (at its top level), placed here and indented to this depth: a document
 * built apart (dump's one snapshot per process) joins a larger one. */
void jsonw_json(struct jsonw *w, const char *json, size_t n);

/* A NUL-terminated key (not NULL), and a NUL-terminated string value
 * (NULL writes null). Inline, so that the length of a literal key is
 * known when compiling. */
static inline void jsonw_key(struct jsonw *w, const char *key)
{
	jsonw_keyn(w, key, strlen(key));
}

static inline void jsonw_str(struct jsonw *w, const char *s)
{
	if (s)
		jsonw_strn(w, s, strlen(s));
	else
		jsonw_null(w);
}

/* Members: the key, then the value. */
static inline void jsonw_kobject(struct jsonw *w, const char *key)
{
	jsonw_key(w, key);
	jsonw_object_begin(w);
}

static inline void jsonw_karray(struct jsonw *w, const char *key)
{
	jsonw_key(w, key);
	jsonw_array_begin(w);
}

static inline void jsonw_kstr(struct jsonw *w, const char *key, const char *s)
{
	jsonw_key(w, key);
	jsonw_str(w, s);
}

static inline void jsonw_kstrn(struct jsonw *w, const char *key, const char *s, size_t n)
{
	jsonw_key(w, key);
	jsonw_strn(w, s, n);
}

static inline void jsonw_kint(struct jsonw *w, const char *key, int64_t v)
{
	jsonw_key(w, key);
	jsonw_int(w, v);
}

static inline void jsonw_ku64(struct jsonw *w, const char *key, uint64_t v)
{
	jsonw_key(w, key);
	jsonw_u64(w, v);
}

static inline void jsonw_kdouble(struct jsonw *w, const char *key, double v)
{
	jsonw_key(w, key);
	jsonw_double(w, v);
}

static inline void jsonw_kbool(struct jsonw *w, const char *key, int b)
{
	jsonw_key(w, key);
	jsonw_bool(w, b);
}

static inline void jsonw_knull(struct jsonw *w, const char *key)
{
	jsonw_key(w, key);
	jsonw_null(w);
}

static inline void jsonw_khex(struct jsonw *w, const char *key, uint64_t v)
{
	jsonw_key(w, key);
	jsonw_hex(w, v);
}

#endif
