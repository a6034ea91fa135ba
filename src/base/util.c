// SPDX-License-Identifier: MIT
// Small helpers shared by every module: errors with context, allocation,
// string buffers, clocks, escaping and parsing of numbers and durations.
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int sd_error_set(struct sd_error *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
		err->code = code;
	}
	return code ? -code : -1;
}

uint64_t sd_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t sd_now_us(void)
{
	return sd_now_ns() / 1000;
}

double sd_wall_time(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void *sd_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		abort();
	return p;
}

void *sd_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		abort();
	return p;
}

void *sd_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		abort();
	return p;
}

char *sd_xstrdup(const char *s)
{
	char *d = strdup(s ? s : "");
	if (!d)
		abort();
	return d;
}

void sd_grow(void *arr, size_t *cap, size_t need, size_t size)
{
	void **a = arr;
	if (need <= *cap)
		return;
	size_t n = *cap ? *cap * 2 : 8;
	while (n < need)
		n *= 2;
	*a = sd_xrealloc(*a, n * size);
	*cap = n;
}

/* What an empty strbuf points to, so that buf is never NULL. Never written:
 * a strbuf with cap 0 owns no memory and allocates before its first byte. */
static char strbuf_empty[1];

void strbuf_init(struct strbuf *sb)
{
	sb->buf = strbuf_empty;
	sb->len = sb->cap = 0;
}

void strbuf_release(struct strbuf *sb)
{
	if (sb->cap)
		free(sb->buf);
	strbuf_init(sb);
}

void strbuf_grow(struct strbuf *sb, size_t extra)
{
	if (sb->len + extra + 1 <= sb->cap)
		return;
	int fresh = !sb->cap;
	if (fresh)
		sb->buf = NULL; /* strbuf_empty, or a zeroed struct */
	sd_grow(&sb->buf, &sb->cap, sb->len + extra + 1, 1);
	if (fresh)
		sb->buf[sb->len] = '\0'; /* still a string, before anything is added */
}

static void strbuf_reserve(struct strbuf *sb, size_t extra)
{
	strbuf_grow(sb, extra);
}

void strbuf_add(struct strbuf *sb, const char *s, size_t n)
{
	strbuf_reserve(sb, n);
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

void strbuf_adds(struct strbuf *sb, const char *s)
{
	strbuf_add(sb, s, strlen(s));
}

void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	/* Formatted once into the room there is; a second time only when it
	 * did not fit (most lines fit: the buffer grows by doubling). */
	strbuf_reserve(sb, 64);
	va_list cp;
	va_copy(cp, ap);
	size_t room = sb->cap - sb->len;
	int n = vsnprintf(sb->buf + sb->len, room, fmt, cp);
	va_end(cp);
	if (n < 0) {
		sb->buf[sb->len] = '\0';
		return;
	}
	if ((size_t)n >= room) {
		strbuf_reserve(sb, (size_t)n);
		vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	}
	sb->len += (size_t)n;
}

void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
}

char *strbuf_detach(struct strbuf *sb)
{
	char *b = sb->cap ? sb->buf : sd_xstrdup("");
	strbuf_init(sb);
	return b;
}

size_t sd_utf8_char(const unsigned char *p, size_t left)
{
	if (!left)
		return 0;
	unsigned c = p[0];
	if (c < 0x80)
		return 1;
	size_t n;
	unsigned lo = 0x80, hi = 0xbf; /* the second byte's range */
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0; /* overlong below U+0800 */
		else if (c == 0xed)
			hi = 0x9f; /* surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90; /* overlong below U+10000 */
		else if (c == 0xf4)
			hi = 0x8f; /* above U+10FFFF */
	} else {
		return 0; /* a continuation byte, 0xc0, 0xc1 or 0xf5.. */
	}
	if (left < n || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

void strbuf_add_escapedn(struct strbuf *sb, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	while (p < end) {
		/* A run of printable ASCII goes in at once. */
		const unsigned char *q = p;
		while (q < end && *q >= 0x20 && *q < 0x7f && *q != '\\')
			q++;
		if (q > p) {
			strbuf_add(sb, (const char *)p, (size_t)(q - p));
			p = q;
			continue;
		}
		unsigned char c = *p;
		if (c == '\\')
			strbuf_adds(sb, "\\\\");
		else if (c == '\n')
			strbuf_adds(sb, "\\n");
		else if (c == '\t')
			strbuf_adds(sb, "\\t");
		else if (c == 0x1b)
			strbuf_adds(sb, "\\e");
		else if (c < 0x20 || c == 0x7f)
			strbuf_addf(sb, "\\x%02x", c);
		else if (c >= 0x80) {
			/* Keep well-formed UTF-8, escape the rest and C1 controls. */
			size_t k = sd_utf8_char(p, (size_t)(end - p));
			if (k == 2 && c == 0xc2 && p[1] < 0xa0)
				k = 0; /* U+0080..U+009F are C1 controls */
			if (k) {
				strbuf_add(sb, (const char *)p, k);
				p += k;
				continue;
			}
			strbuf_addf(sb, "\\x%02x", c);
		} else
			strbuf_add(sb, (const char *)p, 1);
		p++;
	}
}

void strbuf_add_escaped(struct strbuf *sb, const char *s)
{
	if (s)
		strbuf_add_escapedn(sb, s, strlen(s));
}

ssize_t sd_read_file(const char *path, char **out, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t cap = 4096, len = 0;
	char *buf = sd_xmalloc(cap);
	for (;;) {
		if (len + 1 >= cap) {
			if (cap >= max)
				break;
			cap *= 2;
			buf = sd_xrealloc(buf, cap);
		}
		ssize_t n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			close(fd);
			free(buf);
			return -e;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	*out = buf;
	return (ssize_t)len;
}

long sd_parse_pid(const char *s)
{
	if (!s || !*s)
		return -1;
	for (const char *p = s; *p; p++)
		if (!isdigit((unsigned char)*p))
			return -1;
	errno = 0;
	char *end;
	long v = strtol(s, &end, 10);
	if (errno || *end || v <= 0 || v > INT_MAX)
		return -1;
	return v;
}

int sd_parse_duration(const char *s, uint64_t *us)
{
	if (!s || !*s)
		return -EINVAL;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -EINVAL;
	double mul = 1e6;
	if (!strcmp(end, "") || !strcmp(end, "s"))
		mul = 1e6;
	else if (!strcmp(end, "ms"))
		mul = 1e3;
	else if (!strcmp(end, "us"))
		mul = 1;
	else if (!strcmp(end, "m") || !strcmp(end, "min"))
		mul = 60e6;
	else if (!strcmp(end, "h"))
		mul = 3600e6;
	else
		return -EINVAL;
	double r = v * mul;
	if (r > 1e15)
		return -EINVAL;
	*us = (uint64_t)r;
	return 0;
}

int sd_parse_size(const char *s, uint64_t *bytes)
{
	if (!s || !*s)
		return -EINVAL;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -EINVAL;
	double mul = 1;
	switch (toupper((unsigned char)*end)) {
	case '\0': mul = 1; break;
	case 'K': mul = 1024.0; break;
	case 'M': mul = 1024.0 * 1024; break;
	case 'G': mul = 1024.0 * 1024 * 1024; break;
	default: return -EINVAL;
	}
	if (*end) {
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'B' || *end == 'b')
			end++;
		if (*end)
			return -EINVAL;
	}
	*bytes = (uint64_t)(v * mul);
	return 0;
}

void sd_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	/* Most arrays sorted here are already in order (threads listed by
	 * TID, sample after sample): one pass tells. */
	const char *b = base;
	size_t i = 1;
	while (i < n && cmp(b + (i - 1) * size, b + i * size) <= 0)
		i++;
	if (i < n)
		qsort(base, n, size, cmp);
}

void sd_sort_u64(void *base, size_t n, size_t size, size_t key_off,
		 int (*cmp)(const void *, const void *))
{
	char *b = base;
	if (n < 512 || n > UINT32_MAX) {
		sd_sort(base, n, size, cmp);
		return;
	}
	uint64_t *key = sd_xmalloc(n * sizeof(*key)), *key2 = sd_xmalloc(n * sizeof(*key2));
	uint32_t *idx = sd_xmalloc(n * sizeof(*idx)), *idx2 = sd_xmalloc(n * sizeof(*idx2));
	uint64_t differ = 0;
	int sorted = 1;
	for (size_t i = 0; i < n; i++) {
		memcpy(&key[i], b + i * size + key_off, sizeof(*key));
		idx[i] = (uint32_t)i;
		differ |= key[i] ^ key[0];
		sorted &= i == 0 || key[i - 1] <= key[i];
	}
	if (!sorted) {
		/* Least significant byte first, each pass stable; bytes where
		 * every key agrees are skipped. */
		for (unsigned shift = 0; shift < 64; shift += 8) {
			if (!((differ >> shift) & 0xff))
				continue;
			size_t count[257] = {0};
			for (size_t i = 0; i < n; i++)
				count[((key[i] >> shift) & 0xff) + 1]++;
			for (size_t d = 1; d < 257; d++)
				count[d] += count[d - 1];
			for (size_t i = 0; i < n; i++) {
				size_t at = count[(key[i] >> shift) & 0xff]++;
				key2[at] = key[i];
				idx2[at] = idx[i];
			}
			uint64_t *tk = key;
			key = key2;
			key2 = tk;
			uint32_t *ti = idx;
			idx = idx2;
			idx2 = ti;
		}
		char *tmp = sd_xmalloc(n * size);
		for (size_t i = 0; i < n; i++)
			memcpy(tmp + i * size, b + (size_t)idx[i] * size, size);
		memcpy(b, tmp, n * size);
		free(tmp);
	}
	/* Equal keys: in their order by CMP, stably (runs are short). */
	char *one = sd_xmalloc(size);
	for (size_t i = 1; i < n; i++) {
		if (key[i] != key[i - 1] || cmp(b + (i - 1) * size, b + i * size) <= 0)
			continue;
		memcpy(one, b + i * size, size);
		size_t j = i;
		while (j > 0 && key[j - 1] == key[i] && cmp(b + (j - 1) * size, one) > 0) {
			memcpy(b + j * size, b + (j - 1) * size, size);
			j--;
		}
		memcpy(b + j * size, one, size);
	}
	free(one);
	free(key);
	free(key2);
	free(idx);
	free(idx2);
}

const void *sd_range_find(const void *base, size_t n, size_t size, size_t start_off, size_t end_off,
			  uint64_t addr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const char *e = (const char *)base + mid * size;
		uint64_t start, end;
		memcpy(&start, e + start_off, sizeof(start));
		memcpy(&end, e + end_off, sizeof(end));
		if (addr < start)
			hi = mid;
		else if (addr >= end)
			lo = mid + 1;
		else
			return e;
	}
	return NULL;
}

void *sd_bsearch_hint(const void *key, const void *base, size_t n, size_t size,
		      int (*cmp)(const void *, const void *), size_t *hint)
{
	const char *b = base, *e = NULL;
	size_t h = *hint;
	if (h < n && cmp(key, b + h * size) == 0)
		e = b + h * size;
	else if (h > 0 && h <= n && cmp(key, b + (h - 1) * size) == 0)
		e = b + (h - 1) * size;
	else if (n)
		e = bsearch(key, base, n, size, cmp);
	if (e)
		*hint = (size_t)(e - b) / size + 1;
	return (void *)e;
}

void sd_hex(char *out, const unsigned char *in, size_t n)
{
	static const char digit[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digit[in[i] >> 4];
		out[2 * i + 1] = digit[in[i] & 15];
	}
	out[2 * n] = '\0';
}

uint64_t sd_hash(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *c = p;
	uint64_t h = 1469598103934665603ull ^ seed;
	for (size_t i = 0; i < n; i++) {
		h ^= c[i];
		h *= 1099511628211ull;
	}
	return h;
}

const char *sd_strerror(int e)
{
	static __thread char buf[128];
	/* The GNU strerror_r returns its own string or fills BUF. */
	const char *m = strerror_r(e, buf, sizeof(buf));
	if (m != buf)
		snprintf(buf, sizeof(buf), "%s", m);
	/* "No such process" but not "ENOENT"-like acronyms. */
	if (buf[0] >= 'A' && buf[0] <= 'Z' && (buf[1] < 'A' || buf[1] > 'Z'))
		buf[0] = (char)(buf[0] - 'A' + 'a');
	return buf;
}

double sd_cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
