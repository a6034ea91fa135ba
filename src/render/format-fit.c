// SPDX-License-Identifier: MIT
// Text that fits the reader: function names without their generic and
// template arguments (Rust's and C++'s can be hundreds of characters), and
// lines broken to the width of the terminal, indented, so that none wraps
// at the terminal's whim.
#include <string.h>

#include "format.h"

static int ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '$';
}

/* The byte just past the '>' closing the '<' at S, or NULL when there is
 * none ("->" in a function type does not close). */
static const char *closing(const char *s)
{
	int depth = 0;
	for (const char *p = s; *p; p++) {
		if (*p == '-' && p[1] == '>') {
			p++;
			continue;
		}
		if (*p == '<')
			depth++;
		else if (*p == '>' && --depth == 0)
			return p + 1;
	}
	return NULL;
}

void format_short_name(struct strbuf *out, const char *name)
{
	const char *p = name, *run = name;
	while (*p) {
		/* Generic arguments follow a name: "Vec<", "Harness<". A '<'
		 * after something else opens a qualified path ("<T as
		 * Trait>::f"), kept; "operator<" is an operator. */
		int generic = *p == '<' && p > name && ident_char(p[-1]) &&
			      !(p - name >= 8 && !strncmp(p - 8, "operator", 8));
		const char *end = generic ? closing(p) : NULL;
		if (!end) {
			p++;
			continue;
		}
		strbuf_add_escapedn(out, run, (size_t)(p - run));
		strbuf_adds(out, "<..>");
		p = run = end;
	}
	strbuf_add_escaped(out, run);
}

/* Columns of S[0..N): escape sequences ("\033[...m") take none, a UTF-8
 * character one. */
static size_t columns(const char *s, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\033') {
			while (i + 1 < n && !(s[i + 1] >= '@' && s[i + 1] <= '~' && s[i + 1] != '['))
				i++;
			i++;
			continue;
		}
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			c++;
	}
	return c;
}

/* The byte offset in S[0..N) where column COL starts (skipping escapes). */
static size_t byte_at(const char *s, size_t n, size_t col)
{
	size_t c = 0, i = 0;
	while (i < n) {
		if (s[i] == '\033') {
			while (i + 1 < n && !(s[i + 1] >= '@' && s[i + 1] <= '~' && s[i + 1] != '['))
				i++;
			i += 2;
			continue;
		}
		if (((unsigned char)s[i] & 0xc0) != 0x80) {
			if (c == col)
				return i;
			c++;
		}
		i++;
	}
	return n;
}

/* Append line S[0..N) (COLS columns) to OUT in pieces of at most W
 * columns: broken at the last space that fits, each continuation indented
 * 4 more than the line; a word longer than that is broken where it must. */
static void wrap_line(struct strbuf *out, const char *s, size_t n, size_t cols, size_t w)
{
	size_t lead = 0;
	while (lead < n && s[lead] == ' ')
		lead++;
	size_t indent = lead + 4 < w / 2 ? lead + 4 : w / 2;
	size_t room = w;
	int first = 1;
	while (n) {
		if (!first)
			for (size_t k = 0; k < indent; k++)
				strbuf_adds(out, " ");
		if (cols <= room) {
			strbuf_add(out, s, n);
			break;
		}
		size_t cut = byte_at(s, n, room), brk = cut;
		while (brk > 0 && s[brk] != ' ')
			brk--;
		/* A break too close to the start leaves a stub: cut the word. */
		if (brk <= (first ? lead : 0) + 8)
			brk = cut;
		strbuf_add(out, s, brk);
		strbuf_adds(out, "\n");
		while (brk < n && s[brk] == ' ')
			brk++;
		s += brk;
		n -= brk;
		cols = columns(s, n);
		room = w - indent;
		first = 0;
	}
}

void format_fit_width(struct strbuf *out, size_t from, int width)
{
	if (width <= 0 || from >= out->len)
		return;
	size_t w = (size_t)width;
	if (w < 20)
		w = 20;
	struct strbuf fit;
	strbuf_init(&fit);
	const char *s = out->buf + from, *end = out->buf + out->len;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
		size_t cols = columns(s, n);
		if (cols <= w)
			strbuf_add(&fit, s, n);
		else
			wrap_line(&fit, s, n, cols, w);
		if (nl)
			strbuf_adds(&fit, "\n");
		s += n + (nl ? 1 : 0);
	}
	out->len = from;
	out->buf[from] = '\0';
	strbuf_add(out, fit.buf, fit.len);
	strbuf_release(&fit);
}
