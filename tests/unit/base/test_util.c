// SPDX-License-Identifier: MIT
// Unit tests of the parsers of outside input in util.c and procfs.c:
// durations, sizes, PIDs, escaping, /proc syscall, stat and maps lines.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "procfs.h"
#include "util.h"

static void test_parse_pid(void **state)
{
	(void)state;
	assert_int_equal(sd_parse_pid("1234"), 1234);
	assert_int_equal(sd_parse_pid("0"), -1);
	assert_int_equal(sd_parse_pid("-5"), -1);
	assert_int_equal(sd_parse_pid("12a"), -1);
	assert_int_equal(sd_parse_pid(""), -1);
	assert_int_equal(sd_parse_pid("99999999999999999999"), -1);
}

static void test_parse_duration(void **state)
{
	(void)state;
	uint64_t us;
	assert_int_equal(sd_parse_duration("2s", &us), 0);
	assert_int_equal(us, 2000000);
	assert_int_equal(sd_parse_duration("500ms", &us), 0);
	assert_int_equal(us, 500000);
	assert_int_equal(sd_parse_duration("1.5", &us), 0);
	assert_int_equal(us, 1500000);
	assert_int_equal(sd_parse_duration("3m", &us), 0);
	assert_int_equal(us, 180000000);
	assert_true(sd_parse_duration("abc", &us) < 0);
	assert_true(sd_parse_duration("5x", &us) < 0);
	assert_true(sd_parse_duration("-1", &us) < 0);
}

static void test_parse_size(void **state)
{
	(void)state;
	uint64_t b;
	assert_int_equal(sd_parse_size("4096", &b), 0);
	assert_int_equal(b, 4096);
	assert_int_equal(sd_parse_size("10M", &b), 0);
	assert_int_equal(b, 10u << 20);
	assert_int_equal(sd_parse_size("2GiB", &b), 0);
	assert_int_equal(b, 2ull << 30);
	assert_true(sd_parse_size("12Q", &b) < 0);
}

static void test_strbuf_never_null(void **state)
{
	(void)state;
	struct strbuf sb;
	strbuf_init(&sb);
	assert_non_null(sb.buf);
	assert_string_equal(sb.buf, "");
	strbuf_release(&sb); /* owns nothing yet */
	assert_non_null(sb.buf);
	strbuf_grow(&sb, 100);
	assert_true(sb.cap >= 101);
	assert_string_equal(sb.buf, "");
	strbuf_adds(&sb, "ab");
	strbuf_addf(&sb, "%d", 42);
	assert_string_equal(sb.buf, "ab42");
	char *d = strbuf_detach(&sb);
	assert_string_equal(d, "ab42");
	free(d);
	assert_string_equal(sb.buf, "");
	d = strbuf_detach(&sb); /* an empty one detaches a heap "" */
	assert_string_equal(d, "");
	free(d);
	struct strbuf zeroed = {0}; /* memset structs holding one still work */
	strbuf_adds(&zeroed, "x");
	assert_string_equal(zeroed.buf, "x");
	strbuf_release(&zeroed);
	assert_string_equal(zeroed.buf, "");
}

static void test_escape(void **state)
{
	(void)state;
	struct strbuf sb;
	strbuf_init(&sb);
	strbuf_add_escaped(&sb, "a\033[31mb\n\x01\xff\xc3\xa9");
	assert_string_equal(sb.buf, "a\\e[31mb\\n\\x01\\xff\xc3\xa9");
	strbuf_release(&sb);
	/* Only well-formed UTF-8 is kept: overlong forms, surrogates, C1
	 * controls and cut sequences are escaped byte by byte. */
	strbuf_add_escaped(&sb, "\xc0\xaf|\xed\xa0\x80|\xc2\x9b|\xe2\x82|\xf0\x9f\x98\x80");
	assert_string_equal(sb.buf,
			    "\\xc0\\xaf|\\xed\\xa0\\x80|\\xc2\\x9b|\\xe2\\x82|\xf0\x9f\x98\x80");
	strbuf_release(&sb);
	/* With a length, NULs are bytes like others. */
	strbuf_add_escapedn(&sb, "a\0b\\", 4);
	assert_string_equal(sb.buf, "a\\x00b\\\\");
	strbuf_release(&sb);
	strbuf_add_escaped(&sb, NULL);
	assert_string_equal(sb.buf, "");
	assert_int_equal(sd_utf8_char((const unsigned char *)"\xf4\x8f\xbf\xbf", 4), 4);
	assert_int_equal(sd_utf8_char((const unsigned char *)"\xf4\x8f\xbf\xbf", 3), 0);
	assert_int_equal(sd_utf8_char((const unsigned char *)"", 1), 1);
}

static void test_syscall_line(void **state)
{
	(void)state;
	struct sd_taskinfo ti;
	assert_int_equal(procfs_parse_syscall("202 0x55d0e1c3a040 0x80 0x2 0x0 0x0 0x0 0x7ffc 0x7f12\n", &ti), 0);
	assert_int_equal(ti.syscall_nr, 202);
	assert_int_equal(ti.syscall_args[0], 0x55d0e1c3a040ull);
	assert_int_equal(ti.syscall_args[1], 0x80);
	assert_int_equal(ti.syscall_args[2], 2);
	assert_int_equal(procfs_parse_syscall("running\n", &ti), 0);
	assert_true(ti.running);
	assert_int_equal(procfs_parse_syscall("-1 0x7ffc 0x7f12\n", &ti), 0);
	assert_int_equal(ti.syscall_nr, -1);
	assert_true(procfs_parse_syscall("garbage", &ti) < 0);
	assert_true(procfs_parse_syscall("202 zz", &ti) < 0);
}

static void test_stat_line(void **state)
{
	(void)state;
	char st;
	pid_t ppid;
	unsigned long flags;
	uint64_t ut, stt;
	int cpu;
	const char *line = "42 (a) b) c) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 "
			   "100 1000 200 1 1 1 1 1 1 1 1 1 0 0 0 17 0 1 0";
	assert_int_equal(procfs_parse_stat(line, &st, &ppid, &flags, &ut, &stt, &cpu), 0);
	assert_int_equal(st, 'S');
	assert_int_equal(ppid, 1);
	assert_int_equal(ut, 7);
	assert_int_equal(stt, 3);
	assert_int_equal(cpu, 1);
	assert_true(procfs_parse_stat("no paren", &st, NULL, NULL, NULL, NULL, NULL) < 0);
}

static void test_maps(void **state)
{
	(void)state;
	struct sd_maps m = {0};
	const char *text =
	    "55d0e1a00000-55d0e1a0c000 r-xp 00001000 fd:01 1234   /usr/bin/orderd\n"
	    "7f3a1c200000-7f3a1c228000 r--p 00000000 fd:01 99  /lib/x86_64-linux-gnu/libc.so.6\n"
	    "7ffc0000000-7ffc0021000 rw-p 00000000 00:00 0          [stack]\n"
	    "7f00-7f10 rw-p 00000000 00:00 0\n";
	assert_int_equal(procfs_parse_maps(text, &m), 0);
	assert_int_equal(m.n, 4);
	assert_string_equal(m.v[0].path, "/usr/bin/orderd");
	assert_int_equal(m.v[0].offset, 0x1000);
	assert_int_equal(m.v[0].inode, 1234);
	assert_string_equal(m.v[2].path, "[stack]");
	assert_string_equal(m.v[3].path, "");
	procfs_maps_release(&m);
	assert_true(procfs_parse_maps("zzzz\n", &m) < 0);
	procfs_maps_release(&m);
	assert_true(procfs_parse_maps("10-5 r-xp 0 0:0 0 x\n", &m) < 0);
	procfs_maps_release(&m);
}

/* A maps line of any length parses: here a 20,000-byte path made of
 * escaped newlines, as the kernel writes them (\012). */
static void test_maps_long_line(void **state)
{
	(void)state;
	const char *head = "7f0000000000-7f0000001000 r-xp 00000000 fd:01 42 /tmp/";
	size_t hl = strlen(head), n = 5000, len = hl + 4 * n + 40;
	char *text = malloc(len);
	assert_non_null(text);
	memcpy(text, head, hl);
	for (size_t i = 0; i < n; i++)
		memcpy(text + hl + 4 * i, "\\012", 4);
	strcpy(text + hl + 4 * n, "/x\n7f00-7f10 rw-p 00000000 00:00 0\n");
	struct sd_maps m = {0};
	assert_int_equal(procfs_parse_maps(text, &m), 0);
	assert_int_equal(m.n, 2);
	assert_int_equal(strlen(m.v[0].path), 5 + 4 * n + 2);
	assert_int_equal(m.v[0].inode, 42);
	assert_int_equal(m.v[0].dev_major, 0xfd);
	assert_memory_equal(m.v[0].path + 5, "\\012\\012", 8);
	procfs_maps_release(&m);
	/* fields that overflow or lack their separators are refused */
	assert_true(procfs_parse_maps("1ffffffffffffffff-2 r-xp 0 0:0 0 x\n", &m) < 0);
	procfs_maps_release(&m);
	assert_true(procfs_parse_maps("10-20 r-x 0 0:0 0 x\n", &m) < 0);
	procfs_maps_release(&m);
	assert_true(procfs_parse_maps("10-20 r-xp 0 00 0 x\n", &m) < 0);
	procfs_maps_release(&m);
	free(text);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Lookups in order, again, out of order, missing, in an empty array. */
static void test_hex(void **state)
{
	(void)state;
	const unsigned char id[] = {0x00, 0x93, 0xac, 0x0f, 0xff};
	char out[11];
	memset(out, 'x', sizeof(out));
	sd_hex(out, id, sizeof(id));
	assert_string_equal(out, "0093ac0fff");
	sd_hex(out, id, 0);
	assert_string_equal(out, "");
}

static void test_bsearch_hint(void **state)
{
	(void)state;
	const int v[] = {3, 5, 8, 13, 21};
	size_t hint = 0;
	for (size_t i = 0; i < 5; i++) {
		const int *e = sd_bsearch_hint(&v[i], v, 5, sizeof(int), cmp_int, &hint);
		assert_ptr_equal(e, &v[i]);
		assert_int_equal(hint, i + 1);
	}
	int k = 21; /* asked again: the one before the hint */
	assert_ptr_equal(sd_bsearch_hint(&k, v, 5, sizeof(int), cmp_int, &hint), &v[4]);
	assert_int_equal(hint, 5);
	k = 5; /* out of order */
	assert_ptr_equal(sd_bsearch_hint(&k, v, 5, sizeof(int), cmp_int, &hint), &v[1]);
	assert_int_equal(hint, 2);
	k = 7; /* missing: the hint stays */
	assert_null(sd_bsearch_hint(&k, v, 5, sizeof(int), cmp_int, &hint));
	assert_int_equal(hint, 2);
	hint = 9; /* past the end */
	k = 3;
	assert_ptr_equal(sd_bsearch_hint(&k, v, 5, sizeof(int), cmp_int, &hint), &v[0]);
	hint = 0;
	assert_null(sd_bsearch_hint(&k, v, 0, sizeof(int), cmp_int, &hint));
}

struct sortel {
	uint64_t key;
	int tie;  /* ordered by cmp_sortel among equal keys */
	int orig; /* the element's first place: not looked at by cmp_sortel */
};

static int cmp_sortel(const void *a, const void *b)
{
	const struct sortel *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->tie > y->tie) - (x->tie < y->tie);
}

/* The stable order: equal by cmp_sortel, first place first. */
static int cmp_sortel_stable(const void *a, const void *b)
{
	int c = cmp_sortel(a, b);
	if (c)
		return c;
	const struct sortel *x = a, *y = b;
	return (x->orig > y->orig) - (x->orig < y->orig);
}

static void test_sort_u64(void **state)
{
	(void)state;
	/* Sizes on both sides of the radix threshold; keys spread over every
	 * byte, keys sharing high bytes (a module's addresses), many equal
	 * keys, and an array already in order. */
	size_t sizes[] = {0, 1, 7, 511, 512, 3000, 30000};
	unsigned seed = 12345;
	for (size_t si = 0; si < sizeof(sizes) / sizeof(*sizes); si++) {
		for (int shape = 0; shape < 4; shape++) {
			size_t n = sizes[si];
			struct sortel *a = calloc(n ? n : 1, sizeof(*a)),
				      *b = calloc(n ? n : 1, sizeof(*b));
			for (size_t i = 0; i < n; i++) {
				seed = seed * 1103515245u + 12345u;
				uint64_t r = ((uint64_t)seed << 32) ^ (seed * 2654435761u);
				a[i].key = shape == 0   ? r
					   : shape == 1 ? 0x7f0000400000ull + (r % 0x200000)
					   : shape == 2 ? 0x55e0000000ull + (r % 64) * 16
							: 0x1000 + i * 8;
				a[i].tie = (int)(r >> 40) % 3;
				a[i].orig = (int)i;
			}
			memcpy(b, a, n * sizeof(*a));
			sd_sort_u64(a, n, sizeof(*a), offsetof(struct sortel, key), cmp_sortel);
			qsort(b, n, sizeof(*b), cmp_sortel_stable);
			for (size_t i = 0; i < n; i++) {
				assert_int_equal(a[i].key, b[i].key);
				assert_int_equal(a[i].tie, b[i].tie);
				assert_int_equal(a[i].orig, b[i].orig);
			}
			free(a);
			free(b);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_pid),
	    cmocka_unit_test(test_parse_duration),
	    cmocka_unit_test(test_parse_size),
	    cmocka_unit_test(test_strbuf_never_null),
	    cmocka_unit_test(test_escape),
	    cmocka_unit_test(test_syscall_line),
	    cmocka_unit_test(test_stat_line),
	    cmocka_unit_test(test_maps),
	    cmocka_unit_test(test_maps_long_line),
	    cmocka_unit_test(test_bsearch_hint),
	    cmocka_unit_test(test_hex),
	    cmocka_unit_test(test_sort_u64),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
