// SPDX-License-Identifier: MIT
// The streaming JSON writer (jsonw.h): separators, indentation and string
// escaping in one place, written straight into a strbuf with no tree in
// between, fast enough for the saved format's thousands of frames.
#include "jsonw.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	JSONW_OBJECT = 1,   /* an object (else an array) */
	JSONW_NONEMPTY = 2, /* something was written in it */
	JSONW_INLINE = 4,   /* written compact */
};

/* Room for N more bytes and the NUL; returns where they go. A document is
 * thousands of small pieces: they are written in place, not through
 * strbuf_add. */
static inline char *room(struct jsonw *w, size_t n)
{
	struct strbuf *sb = w->out;
	if (sb->len + n + 1 > sb->cap)
		strbuf_grow(sb, n);
	return sb->buf + sb->len;
}

/* The N bytes just written at room() are part of the text. */
static inline void wrote(struct jsonw *w, size_t n)
{
	w->out->len += n;
	w->out->buf[w->out->len] = '\0';
}

static inline void put(struct jsonw *w, const char *p, size_t n)
{
	memcpy(room(w, n), p, n);
	wrote(w, n);
}

static inline void put1(struct jsonw *w, char c)
{
	*room(w, 1) = c;
	wrote(w, 1);
}

void jsonw_init(struct jsonw *w, struct strbuf *out, int indent)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
	w->indent = indent > 0 ? indent : 0;
}

void jsonw_release(struct jsonw *w)
{
	free(w->level);
	w->level = NULL;
	w->depth = w->cap = 0;
}

int jsonw_finish(const struct jsonw *w)
{
	return w->bad || w->depth || w->after_key || !w->done ? -EINVAL : 0;
}

static void newline(struct jsonw *w, size_t depth)
{
	static const char spaces[] = "                                ";
	put1(w, '\n');
	size_t n = depth * (size_t)w->indent;
	while (n) {
		size_t k = n < sizeof(spaces) - 1 ? n : sizeof(spaces) - 1;
		put(w, spaces, k);
		n -= k;
	}
}

/* The separator and the line before an element of the innermost open
 * container (a member's key, or an array's value). */
static void element(struct jsonw *w)
{
	unsigned char *l = &w->level[w->depth - 1];
	if (*l & JSONW_NONEMPTY)
		put1(w, ',');
	*l |= JSONW_NONEMPTY;
	if (!(*l & JSONW_INLINE))
		newline(w, w->depth);
}

/* Before any value: a member's value follows its key, an array's is an
 * element, and the top level holds one value. */
static void before_value(struct jsonw *w)
{
	if (w->after_key) {
		w->after_key = 0;
		return;
	}
	if (!w->depth) {
		if (w->done)
			w->bad = 1; /* a second value at the top */
		return;
	}
	if (w->level[w->depth - 1] & JSONW_OBJECT)
		w->bad = 1; /* a value without its key */
	element(w);
}

static void after_value(struct jsonw *w)
{
	if (!w->depth)
		w->done = 1;
}

/* ---- strings ---- */

/* Append "\u00XX". */
static void put_u(struct jsonw *w, unsigned c)
{
	char e[6] = {'\\', 'u', '0', '0', "0123456789abcdef"[c >> 4], "0123456789abcdef"[c & 15]};
	put(w, e, sizeof(e));
}

/* The bytes that are not written as they are. */
static const unsigned char special[256] = {
	[0 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1, [0x7f ... 0xff] = 1,
};

/* How many leading bytes of P[0..N) are written as they are: printable
 * ASCII but '"' and '\\'. Eight bytes at a time (names are long and
 * rarely need anything), with the usual bit tricks: a byte below 0x20, or
 * equal to '"', '\\' or DEL, or with its high bit set, stops the run. */
static inline size_t plain_run(const unsigned char *p, size_t n)
{
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t x;
		memcpy(&x, p + i, 8);
		uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\'), d = x ^ (ones * 0x7f);
		uint64_t hit = ((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b) |
			       ((d - ones) & ~d) | x;
		if (hit & highs)
			break;
	}
	for (; i < n; i++)
		if (special[p[i]])
			break;
	return i;
}

/* Append S[0..N) quoted and escaped when it is valid UTF-8 and return 1;
 * return 0 at the first invalid byte, having written part of it. */
static int put_utf8(struct jsonw *w, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	size_t k = plain_run(p, n);
	if (k == n) {
		/* Most strings: nothing to escape. */
		char *o = room(w, n + 2);
		o[0] = '"';
		memcpy(o + 1, s, n);
		o[n + 1] = '"';
		wrote(w, n + 2);
		return 1;
	}
	put1(w, '"');
	const unsigned char *run = p;
	p += k;
	while (p < end) {
		unsigned c = *p;
		if (!special[c]) {
			p++;
			continue;
		}
		if (c >= 0x80) {
			size_t len = sd_utf8_char(p, (size_t)(end - p));
			if (!len)
				return 0;
			if (len > 2 || c != 0xc2 || p[1] >= 0xa0) {
				p += len;
				continue;
			}
		}
		put(w, (const char *)run, (size_t)(p - run));
		switch (c) {
		case '"': put(w, "\\\"", 2); break;
		case '\\': put(w, "\\\\", 2); break;
		case '\b': put(w, "\\b", 2); break;
		case '\f': put(w, "\\f", 2); break;
		case '\n': put(w, "\\n", 2); break;
		case '\r': put(w, "\\r", 2); break;
		case '\t': put(w, "\\t", 2); break;
		case 0xc2: /* a C1 control, U+0080..U+009F */
			p++;
			put_u(w, *p);
			break;
		default: put_u(w, c); break;
		}
		run = ++p;
	}
	put(w, (const char *)run, (size_t)(p - run));
	put1(w, '"');
	return 1;
}

/* The policy of jsonw.h: exact when valid UTF-8, else as the text output
 * shows it (which is valid UTF-8). */
static void put_string(struct jsonw *w, const char *s, size_t n)
{
	size_t mark = w->out->len;
	if (put_utf8(w, s, n))
		return;
	w->out->len = mark;
	w->out->buf[mark] = '\0';
	struct strbuf e;
	strbuf_init(&e);
	strbuf_add_escapedn(&e, s, n);
	put_utf8(w, e.buf, e.len);
	strbuf_release(&e);
}

/* ---- containers ---- */

static void open_container(struct jsonw *w, unsigned char kind, char c)
{
	before_value(w);
	unsigned char flags = kind;
	if (!w->indent || w->inline_next || (w->depth && (w->level[w->depth - 1] & JSONW_INLINE)))
		flags |= JSONW_INLINE;
	w->inline_next = 0;
	sd_grow(&w->level, &w->cap, w->depth + 1, 1);
	w->level[w->depth++] = flags;
	put1(w, c);
}

static void close_container(struct jsonw *w, unsigned char kind, char c)
{
	if (!w->depth || (w->level[w->depth - 1] & JSONW_OBJECT) != kind || w->after_key) {
		w->bad = 1;
		w->after_key = 0;
		if (!w->depth)
			return;
	}
	unsigned char l = w->level[--w->depth];
	if ((l & JSONW_NONEMPTY) && !(l & JSONW_INLINE))
		newline(w, w->depth);
	put1(w, c);
	after_value(w);
}

void jsonw_object_begin(struct jsonw *w)
{
	open_container(w, JSONW_OBJECT, '{');
}

void jsonw_object_end(struct jsonw *w)
{
	close_container(w, JSONW_OBJECT, '}');
}

void jsonw_array_begin(struct jsonw *w)
{
	open_container(w, 0, '[');
}

void jsonw_array_end(struct jsonw *w)
{
	close_container(w, 0, ']');
}

void jsonw_inline(struct jsonw *w)
{
	w->inline_next = 1;
}

void jsonw_keyn(struct jsonw *w, const char *key, size_t n)
{
	if (!w->depth || !(w->level[w->depth - 1] & JSONW_OBJECT) || w->after_key) {
		w->bad = 1;
		if (!w->depth)
			return;
	}
	unsigned char *l = &w->level[w->depth - 1];
	int compact = *l & JSONW_INLINE;
	if (!w->after_key && compact && plain_run((const unsigned char *)key, n) == n) {
		/* The saved format's case, thousands of times: ,"key": at once. */
		char *o = room(w, n + 4), *q = o;
		if (*l & JSONW_NONEMPTY)
			*q++ = ',';
		*l |= JSONW_NONEMPTY;
		*q++ = '"';
		memcpy(q, key, n);
		q += n;
		*q++ = '"';
		*q++ = ':';
		wrote(w, (size_t)(q - o));
		w->after_key = 1;
		return;
	}
	if (!w->after_key)
		element(w);
	put_string(w, key, n);
	if (compact)
		put1(w, ':');
	else
		put(w, ": ", 2);
	w->after_key = 1;
}

/* ---- values ---- */

void jsonw_strn(struct jsonw *w, const char *s, size_t n)
{
	before_value(w);
	put_string(w, s, n);
	after_value(w);
}

/* Decimal digits of U, right-aligned in BUF; returns where they start. */
static char *digits(char *end, uint64_t u)
{
	do {
		*--end = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	return end;
}

void jsonw_u64(struct jsonw *w, uint64_t v)
{
	char buf[24], *p = digits(buf + sizeof(buf), v);
	before_value(w);
	put(w, p, (size_t)(buf + sizeof(buf) - p));
	after_value(w);
}

void jsonw_int(struct jsonw *w, int64_t v)
{
	char buf[24];
	/* Negated as unsigned: -INT64_MIN does not fit an int64_t. */
	char *p = digits(buf + sizeof(buf), v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
	if (v < 0)
		*--p = '-';
	before_value(w);
	put(w, p, (size_t)(buf + sizeof(buf) - p));
	after_value(w);
}

void jsonw_double(struct jsonw *w, double v)
{
	if (!isfinite(v)) {
		jsonw_null(w);
		return;
	}
	/* The fewest of 15, 16 or 17 significant digits that read back the
	 * same (%g drops trailing zeros: 0.25 stays 0.25). */
	char buf[40];
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf) - 2, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	int real = 0;
	for (char *p = buf; *p; p++) {
		if (*p == ',')
			*p = '.'; /* a locale's decimal comma */
		if (*p == '.' || *p == 'e')
			real = 1;
	}
	if (!real)
		strcat(buf, ".0");
	before_value(w);
	put(w, buf, strlen(buf));
	after_value(w);
}

void jsonw_bool(struct jsonw *w, int b)
{
	before_value(w);
	if (b)
		put(w, "true", 4);
	else
		put(w, "false", 5);
	after_value(w);
}

void jsonw_null(struct jsonw *w)
{
	before_value(w);
	put(w, "null", 4);
	after_value(w);
}

void jsonw_hex(struct jsonw *w, uint64_t v)
{
	char buf[24], *p = buf + sizeof(buf);
	*--p = '"';
	do {
		*--p = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	*--p = 'x';
	*--p = '0';
	*--p = '"';
	before_value(w);
	put(w, p, (size_t)(buf + sizeof(buf) - p));
	after_value(w);
}

void jsonw_json(struct jsonw *w, const char *json, size_t n)
{
	before_value(w);
	/* The sub-document's lines are indented for its own top level: shift
	 * them to this depth. Strings hold no raw newline (they are escaped),
	 * so every newline is the layout's. */
	int shift = w->indent && w->depth && !(w->level[w->depth - 1] & JSONW_INLINE);
	const char *p = json, *end = json + n;
	while (p < end) {
		const char *nl = shift ? memchr(p, '\n', (size_t)(end - p)) : NULL;
		if (!nl) {
			put(w, p, (size_t)(end - p));
			break;
		}
		put(w, p, (size_t)(nl - p));
		newline(w, w->depth);
		p = nl + 1;
	}
	after_value(w);
}
