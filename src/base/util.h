// SPDX-License-Identifier: MIT
// Small helpers shared by every module: errors with context, growable
// arrays, string buffers, clocks and escaping of strings from the target.
#ifndef SD_UTIL_H
#define SD_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* An error with context. Library functions fill one in and return a
 * negative errno (or NULL); the UI prints msg. code is the errno, or 0. */
struct sd_error {
	int code;
	char msg[512];
};

/* Fill ERR (may be NULL) with a formatted message and CODE; returns -CODE
 * (or -1 when CODE is 0) so callers can `return sd_error_set(...)`. */
int sd_error_set(struct sd_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Monotonic and wall clocks in microseconds / nanoseconds. */
uint64_t sd_now_ns(void);
uint64_t sd_now_us(void);
double sd_wall_time(void);

/* Allocation that never returns NULL: aborts the process on exhaustion,
 * as there is no useful partial result once malloc fails. */
void *sd_xmalloc(size_t n);
void *sd_xcalloc(size_t n, size_t size);
void *sd_xrealloc(void *p, size_t n);
char *sd_xstrdup(const char *s);

/* Grow *ARR (of element size SIZE) so that it holds at least NEED
 * elements; *CAP is updated. */
void sd_grow(void *arr, size_t *cap, size_t need, size_t size);

/* A growable string. After strbuf_init, buf is never NULL: an empty
 * strbuf holds "" (owning no memory until the first byte is added), so
 * sb.buf can be passed to printf or strcmp at any time. */
struct strbuf {
	char *buf;
	size_t len, cap;
};
void strbuf_init(struct strbuf *sb);
/* Make room for EXTRA more bytes (and the NUL) without adding them. */
void strbuf_grow(struct strbuf *sb, size_t extra);
void strbuf_release(struct strbuf *sb);
void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap);
void strbuf_add(struct strbuf *sb, const char *s, size_t n);
void strbuf_adds(struct strbuf *sb, const char *s);
/* Take ownership of the buffer (never NULL); SB is reset. */
char *strbuf_detach(struct strbuf *sb);

/* Append S with control characters, DEL, backslash and invalid bytes
 * escaped (\n, \e, \xNN), so names chosen by the target cannot drive the
 * terminal. Well-formed UTF-8 is kept, but for the C1 controls (U+0080 to
 * U+009F); every other byte, NUL included, reads \xNN. S may be NULL
 * (nothing is added). */
void strbuf_add_escaped(struct strbuf *sb, const char *s);
/* The same for the N bytes at S, which may hold NULs. */
void strbuf_add_escapedn(struct strbuf *sb, const char *s, size_t n);

/* The length (1 to 4) of the well-formed UTF-8 character at P, of which
 * LEFT bytes can be read, or 0 when there is none: a stray continuation
 * byte, an overlong form, a surrogate, a code point above U+10FFFF or a
 * sequence cut short. NUL is a character (U+0000) of length 1. */
size_t sd_utf8_char(const unsigned char *p, size_t left);

/* CPU time this process has used (all threads, user and system), in
 * seconds. */
double sd_cpu_seconds(void);

/* strerror() as our messages write it: lowercase ("no such process"),
 * thread-safe; the text lives until the thread's next call. */
const char *sd_strerror(int e);

/* Read a whole small file (/proc) into a NUL-terminated heap buffer.
 * Returns the length or a negative errno. On success *OUT is always a
 * heap buffer to free, even when the length is 0. */
ssize_t sd_read_file(const char *path, char **out, size_t max);

/* Parse a decimal PID; returns it or -1 when S is not a valid positive
 * number within pid_t's range. */
long sd_parse_pid(const char *s);

/* Parse a duration ("500ms", "2s", "1.5", "3m", "1h") into microseconds.
 * Returns 0 on success, -EINVAL otherwise. */
int sd_parse_duration(const char *s, uint64_t *us);

/* Parse a size ("10M", "512k", "2G", "4096") into bytes. */
int sd_parse_size(const char *s, uint64_t *bytes);

/* qsort() that accepts an empty array (qsort(NULL, 0, ...) is undefined,
 * and UBSan stops on it). */
void sd_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
/* The same order as sd_sort for a CMP that orders first by the uint64_t
 * at KEY_OFF in each element: a radix sort on that key (a symbol table of
 * 30,000 entries in a tenth of the time), then CMP among equal keys only,
 * stably. */
void sd_sort_u64(void *base, size_t n, size_t size, size_t key_off,
		 int (*cmp)(const void *, const void *));
/* bsearch for lookups that mostly come in the array's order: the element
 * at *HINT (the one after the last found) and the one before it (asked
 * again) are looked at first. *HINT becomes the found element's index + 1.
 * NULL when KEY is not there. */
void *sd_bsearch_hint(const void *key, const void *base, size_t n, size_t size,
		      int (*cmp)(const void *, const void *), size_t *hint);

/* The element of BASE (N elements of SIZE bytes, sorted by address, whose
 * [start, end) ranges, two uint64_t at START_OFF and END_OFF, do not
 * overlap) that holds ADDR, or NULL. */
const void *sd_range_find(const void *base, size_t n, size_t size, size_t start_off,
			  size_t end_off, uint64_t addr);

/* The N bytes at IN in lower-case hex, NUL-terminated, into OUT (2N + 1
 * bytes): build-ids as file names show them. */
void sd_hex(char *out, const unsigned char *in, size_t n);

/* FNV-1a hash. */
uint64_t sd_hash(const void *p, size_t n, uint64_t seed);

#endif
