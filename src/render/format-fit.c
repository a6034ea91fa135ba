// SPDX-License-Identifier: MIT
// Text that fits the reader: function names without their generic and
// template arguments (Rust's and C++'s can be hundreds of characters), and
// lines broken to the width of the terminal, indented, so that none wraps
// at the terminal's whim; a thread's label and a file's last part.
#include <stdlib.h>
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

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return x < y ? -1 : x > y;
}

/* V (N numbers) sorted, as ranges "4..9,12" after PREFIX, cut with "..."
 * after about LIMIT bytes. */
static void add_ranges(struct strbuf *out, long *v, size_t n, size_t limit)
{
	qsort(v, n, sizeof(*v), cmp_long);
	size_t start = out->len;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j + 1 < n && v[j + 1] <= v[j] + 1)
			j++;
		if (out->len - start > limit) {
			strbuf_adds(out, ",...");
			return;
		}
		strbuf_adds(out, i ? "," : "");
		if (v[j] > v[i])
			strbuf_addf(out, "%ld..%ld", v[i], v[j]);
		else
			strbuf_addf(out, "%ld", v[i]);
		i = j + 1;
	}
}

void format_names_ranges(struct strbuf *out, const char *const *names, const pid_t *tids, size_t n,
			 size_t limit)
{
	long *num = sd_xcalloc(n ? n : 1, sizeof(*num));
	const char *a = n && names[0] ? names[0] : "";
	size_t pre = strlen(a);
	while (pre && a[pre - 1] >= '0' && a[pre - 1] <= '9')
		pre--;
	int numbered = n > 0 && pre < strlen(a), same = n > 0;
	for (size_t i = 0; i < n; i++) {
		const char *b = names[i] ? names[i] : "";
		same &= !strcmp(a, b);
		if (!numbered)
			continue;
		char *end;
		if (strncmp(a, b, pre) || b[pre] < '0' || b[pre] > '9') {
			numbered = 0;
			continue;
		}
		num[i] = strtol(b + pre, &end, 10);
		numbered &= !*end;
	}
	strbuf_adds(out, "\"");
	if (same) {
		strbuf_add_escaped(out, a);
		if (n > 1)
			strbuf_addf(out, "\" (%zu)", n);
		else
			strbuf_adds(out, "\"");
	} else if (numbered) {
		strbuf_add_escapedn(out, a, pre);
		add_ranges(out, num, n, limit);
		strbuf_adds(out, "\"");
	} else {
		size_t shown = 0;
		for (; shown < n && out->len < limit; shown++) {
			strbuf_adds(out, shown ? ", " : "");
			strbuf_add_escaped(out, names[shown] ? names[shown] : "");
		}
		strbuf_adds(out, "\"");
		if (shown < n)
			strbuf_addf(out, " and %zu more", n - shown);
	}
	for (size_t i = 0; i < n; i++)
		num[i] = tids[i];
	strbuf_adds(out, ", TIDs ");
	add_ranges(out, num, n, limit);
	free(num);
}

const char *format_base_name(const char *p)
{
	const char *b = p ? strrchr(p, '/') : NULL;
	return b ? b + 1 : p;
}

void format_thread_label(struct strbuf *out, const struct sd_snapshot *s, pid_t tid)
{
	const struct sd_thread *th = snapshot_find_thread(s, tid);
	const char *name = th ? th->name : NULL;
	/* A thread outside a --tid/--name selection is still named. */
	for (size_t i = 0; !th && i < s->noutside; i++)
		if (s->outside[i].tid == tid)
			name = s->outside[i].name;
	strbuf_addf(out, "%d", (int)tid);
	if (name) {
		strbuf_adds(out, " \"");
		strbuf_add_escaped(out, name);
		strbuf_adds(out, "\"");
	}
}
