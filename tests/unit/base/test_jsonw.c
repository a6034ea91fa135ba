// SPDX-License-Identifier: MIT
// Unit tests of the streaming JSON writer: the exact text (compact and
// indented, as jansson lays it out), what a parser reads back, the string
// policy (control characters, embedded NULs, invalid UTF-8 escaped and
// never dropped), number limits, and calls out of place being reported.
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "jsonw.h"

/* A writer with its buffer, for one test. */
struct doc {
	struct strbuf sb;
	struct jsonw w;
};

static struct jsonw *doc_start(struct doc *d, int indent)
{
	strbuf_init(&d->sb);
	jsonw_init(&d->w, &d->sb, indent);
	return &d->w;
}

/* The text must be EXPECT, the writer satisfied, and jansson must parse it. */
static void doc_expect(struct doc *d, const char *expect)
{
	assert_int_equal(jsonw_finish(&d->w), 0);
	assert_string_equal(d->sb.buf, expect);
	json_error_t je;
	json_t *j = json_loadb(d->sb.buf, d->sb.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	if (!j)
		fail_msg("jansson cannot parse %s: %s", d->sb.buf, je.text);
	json_decref(j);
	jsonw_release(&d->w);
	strbuf_release(&d->sb);
}

/* Write the string S[0..N) alone and return what a parser reads back. */
static json_t *string_back(const char *s, size_t n, struct strbuf *text)
{
	struct jsonw w;
	strbuf_init(text);
	jsonw_init(&w, text, 0);
	jsonw_strn(&w, s, n);
	assert_int_equal(jsonw_finish(&w), 0);
	jsonw_release(&w);
	json_error_t je;
	json_t *j = json_loadb(text->buf, text->len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	if (!j)
		fail_msg("jansson cannot parse %s: %s", text->buf, je.text);
	assert_true(json_is_string(j));
	return j;
}

static void test_nesting_compact(void **state)
{
	(void)state;
	struct doc d;
	struct jsonw *w = doc_start(&d, 0);
	jsonw_object_begin(w);
	jsonw_karray(w, "a");
	jsonw_int(w, 1);
	jsonw_object_begin(w);
	jsonw_knull(w, "b");
	jsonw_karray(w, "c");
	jsonw_array_begin(w);
	jsonw_array_begin(w);
	jsonw_array_end(w);
	jsonw_array_end(w);
	jsonw_array_end(w);
	jsonw_object_end(w);
	jsonw_array_begin(w);
	jsonw_array_end(w);
	jsonw_array_end(w);
	jsonw_kobject(w, "d");
	jsonw_object_end(w);
	jsonw_kbool(w, "t", 1);
	jsonw_kbool(w, "f", 0);
	jsonw_kstr(w, "s", "x");
	jsonw_kstr(w, "n", NULL);
	jsonw_khex(w, "h", 0x7f4d01690545);
	jsonw_khex(w, "z", 0);
	jsonw_object_end(w);
	doc_expect(&d, "{\"a\":[1,{\"b\":null,\"c\":[[[]]]},[]],\"d\":{},\"t\":true,\"f\":false,"
		       "\"s\":\"x\",\"n\":null,\"h\":\"0x7f4d01690545\",\"z\":\"0x0\"}");
}

/* Indented output is laid out as jansson's JSON_INDENT(N) lays it out, so
 * that the --format json of every command reads as before. */
static void test_indent_as_jansson(void **state)
{
	(void)state;
	for (int indent = 1; indent <= 2; indent++) {
		struct doc d;
		struct jsonw *w = doc_start(&d, indent);
		json_t *j = json_object();
		jsonw_object_begin(w);
		jsonw_kint(w, "pid", 4242);
		json_object_set_new(j, "pid", json_integer(4242));
		jsonw_karray(w, "empty");
		jsonw_array_end(w);
		json_object_set_new(j, "empty", json_array());
		jsonw_kobject(w, "none");
		jsonw_object_end(w);
		json_object_set_new(j, "none", json_object());
		jsonw_karray(w, "threads");
		json_t *a = json_array();
		for (int i = 0; i < 2; i++) {
			jsonw_object_begin(w);
			jsonw_kint(w, "tid", i);
			jsonw_karray(w, "frames");
			jsonw_str(w, "main");
			jsonw_str(w, "start");
			jsonw_array_end(w);
			jsonw_object_end(w);
			json_t *t = json_pack("{s:i, s:[s, s]}", "tid", i, "frames", "main", "start");
			json_array_append_new(a, t);
		}
		jsonw_array_end(w);
		json_object_set_new(j, "threads", a);
		jsonw_kstr(w, "name", "a\"b\\c\n");
		json_object_set_new(j, "name", json_string("a\"b\\c\n"));
		jsonw_object_end(w);
		char *want = json_dumps(j, JSON_INDENT(indent) | JSON_PRESERVE_ORDER);
		json_decref(j);
		doc_expect(&d, want);
		free(want);
	}
}

/* A top-level value that is not a container, and one compact container
 * inside an indented document (the manifest's one entry per line). */
static void test_scalars_and_inline(void **state)
{
	(void)state;
	struct doc d;
	jsonw_int(doc_start(&d, 2), -7);
	doc_expect(&d, "-7");

	struct jsonw *w = doc_start(&d, 1);
	jsonw_object_begin(w);
	jsonw_kstr(w, "format", "stackdump-recording");
	jsonw_karray(w, "snapshots");
	for (int i = 1; i <= 2; i++) {
		jsonw_inline(w);
		jsonw_object_begin(w);
		jsonw_kint(w, "seq", i);
		jsonw_karray(w, "x");
		jsonw_int(w, i);
		jsonw_array_end(w);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	jsonw_key(w, "target");
	jsonw_inline(w);
	jsonw_object_begin(w);
	jsonw_kint(w, "pid", 9);
	jsonw_object_end(w);
	jsonw_karray(w, "events");
	jsonw_array_end(w);
	jsonw_object_end(w);
	doc_expect(&d, "{\n"
		       " \"format\": \"stackdump-recording\",\n"
		       " \"snapshots\": [\n"
		       "  {\"seq\":1,\"x\":[1]},\n"
		       "  {\"seq\":2,\"x\":[2]}\n"
		       " ],\n"
		       " \"target\": {\"pid\":9},\n"
		       " \"events\": []\n"
		       "}");
}

/* Control characters, quotes and backslashes of a valid string come back
 * exactly; DEL and the C1 controls are escaped too. */
static void test_control_characters(void **state)
{
	(void)state;
	static const char s[] = "\x01\b\f\n\r\t\"\\/\x1b[31m\x1f\x7f \xc2\x85\xc2\xa0";
	size_t n = sizeof(s) - 1;
	struct strbuf text;
	json_t *j = string_back(s, n, &text);
	assert_string_equal(text.buf, "\"\\u0001\\b\\f\\n\\r\\t\\\"\\\\/\\u001b[31m\\u001f\\u007f "
				      "\\u0085\xc2\xa0\"");
	assert_int_equal(json_string_length(j), n);
	assert_memory_equal(json_string_value(j), s, n);
	json_decref(j);
	strbuf_release(&text);
}

/* With an explicit length, a NUL is a character like any other. */
static void test_embedded_nul(void **state)
{
	(void)state;
	struct strbuf text;
	json_t *j = string_back("a\0b", 3, &text);
	assert_string_equal(text.buf, "\"a\\u0000b\"");
	assert_int_equal(json_string_length(j), 3);
	assert_memory_equal(json_string_value(j), "a\0b", 3);
	json_decref(j);
	strbuf_release(&text);
	/* Cut at N: what follows is not written. */
	j = string_back("abc", 2, &text);
	assert_string_equal(json_string_value(j), "ab");
	json_decref(j);
	strbuf_release(&text);
	/* Empty. */
	j = string_back("", 0, &text);
	assert_string_equal(text.buf, "\"\"");
	json_decref(j);
	strbuf_release(&text);
}

/* Well-formed UTF-8 of every length is kept as it is. */
static void test_valid_utf8_kept(void **state)
{
	(void)state;
	static const char s[] = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbf\xbf \xf4\x8f\xbf\xbf";
	struct strbuf text;
	json_t *j = string_back(s, sizeof(s) - 1, &text);
	assert_string_equal(json_string_value(j), s);
	assert_string_equal(text.buf + 1, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbf\xbf "
					  "\xf4\x8f\xbf\xbf\"");
	json_decref(j);
	strbuf_release(&text);
}

/* A string that is not valid UTF-8 reads as the text output shows it:
 * never dropped, never invalid JSON. */
static void test_invalid_utf8_escaped(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		size_t n;
		const char *back;
	} cases[] = {
		{"w\xff\x1b[31mx", 8, "w\\xff\\e[31mx"},
		{"\xc3", 1, "\\xc3"},                      /* cut short */
		{"\xe2\x82", 2, "\\xe2\\x82"},              /* cut short */
		{"\x80x", 2, "\\x80x"},                     /* stray continuation */
		{"\xc0\xaf", 2, "\\xc0\\xaf"},              /* overlong '/' */
		{"\xe0\x80\xaf", 3, "\\xe0\\x80\\xaf"},      /* overlong */
		{"\xed\xa0\x80", 3, "\\xed\\xa0\\x80"},      /* a surrogate */
		{"\xf4\x90\x80\x80", 4, "\\xf4\\x90\\x80\\x80"}, /* above U+10FFFF */
		{"\xf8\x88\x80\x80\x80", 5, "\\xf8\\x88\\x80\\x80\\x80"},
		/* Valid pieces stay, the rest of the text escaping applies. */
		{"\xc3\xa9\xff\\\n\t\0", 7, "\xc3\xa9\\xff\\\\\\n\\t\\x00"},
		{"\xc2\x85\xfe", 3, "\\xc2\\x85\\xfe"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct strbuf text;
		json_t *j = string_back(cases[i].in, cases[i].n, &text);
		if (strcmp(json_string_value(j), cases[i].back))
			fail_msg("case %zu: read back \"%s\", expected \"%s\"", i,
				 json_string_value(j), cases[i].back);
		json_decref(j);
		strbuf_release(&text);
	}
	/* Keys follow the same policy. */
	struct doc d;
	struct jsonw *w = doc_start(&d, 0);
	jsonw_object_begin(w);
	jsonw_kint(w, "k\xff", 1);
	jsonw_object_end(w);
	doc_expect(&d, "{\"k\\\\xff\":1}");
}

static void test_integer_limits(void **state)
{
	(void)state;
	struct doc d;
	struct jsonw *w = doc_start(&d, 0);
	jsonw_array_begin(w);
	jsonw_u64(w, UINT64_MAX);
	jsonw_u64(w, 0);
	jsonw_int(w, INT64_MAX);
	jsonw_int(w, INT64_MIN);
	jsonw_int(w, 0);
	jsonw_int(w, -1);
	jsonw_array_end(w);
	assert_int_equal(jsonw_finish(w), 0);
	/* jansson reads integers as long long: it refuses the first. */
	assert_string_equal(d.sb.buf,
			    "[18446744073709551615,0,9223372036854775807,-9223372036854775808,0,-1]");
	assert_true(strtoull(d.sb.buf + 1, NULL, 10) == UINT64_MAX);
	char rest[128] = "[";
	strcat(rest, strchr(d.sb.buf, ',') + 1);
	json_t *j = json_loads(rest, 0, NULL);
	assert_non_null(j);
	assert_true(json_integer_value(json_array_get(j, 1)) == INT64_MAX);
	assert_true(json_integer_value(json_array_get(j, 2)) == INT64_MIN);
	json_decref(j);
	jsonw_release(w);
	strbuf_release(&d.sb);
}

static void test_doubles(void **state)
{
	(void)state;
	static const double v[] = {0.1, 2.0, 1700000000.25, -0.5, 1e300, 5e-324,
				   1.0 / 3.0, 123456789.123456789, 0.0};
	struct doc d;
	struct jsonw *w = doc_start(&d, 0);
	jsonw_array_begin(w);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		jsonw_double(w, v[i]);
	jsonw_double(w, NAN);
	jsonw_double(w, INFINITY);
	jsonw_array_end(w);
	assert_int_equal(jsonw_finish(w), 0);
	/* Short where short reads back the same; always a real. */
	assert_non_null(strstr(d.sb.buf, "[0.1,2.0,1700000000.25,-0.5,1e+300,"));
	assert_non_null(strstr(d.sb.buf, ",0.0,null,null]"));
	json_t *j = json_loads(d.sb.buf, 0, NULL);
	assert_non_null(j);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		json_t *x = json_array_get(j, i);
		assert_true(json_is_real(x));
		if (json_real_value(x) != v[i])
			fail_msg("%.17g came back as %.17g", v[i], json_real_value(x));
	}
	json_decref(j);
	jsonw_release(w);
	strbuf_release(&d.sb);
}

/* A sub-document written apart is placed at the depth where it goes, as
 * if it had been written there. */
static void test_sub_document(void **state)
{
	(void)state;
	for (int indent = 0; indent <= 2; indent += 2) {
		struct strbuf sub;
		strbuf_init(&sub);
		struct jsonw s;
		jsonw_init(&s, &sub, indent);
		jsonw_object_begin(&s);
		jsonw_karray(&s, "a");
		jsonw_int(&s, 1);
		jsonw_array_end(&s);
		jsonw_object_end(&s);
		assert_int_equal(jsonw_finish(&s), 0);
		jsonw_release(&s);

		struct doc d, e;
		struct jsonw *w = doc_start(&d, indent), *x = doc_start(&e, indent);
		jsonw_array_begin(w);
		jsonw_array_begin(x);
		for (int i = 0; i < 2; i++) {
			jsonw_json(w, sub.buf, sub.len);
			jsonw_object_begin(x);
			jsonw_karray(x, "a");
			jsonw_int(x, 1);
			jsonw_array_end(x);
			jsonw_object_end(x);
		}
		jsonw_array_end(w);
		jsonw_array_end(x);
		assert_int_equal(jsonw_finish(x), 0);
		char *want = strbuf_detach(&e.sb);
		jsonw_release(x);
		doc_expect(&d, want);
		free(want);
		strbuf_release(&sub);
	}
}

/* Calls out of place are reported by jsonw_finish (the text is still
 * written: a bug must not lose the output). */
static void test_misuse_reported(void **state)
{
	(void)state;
	for (int k = 0; k < 7; k++) {
		struct doc d;
		struct jsonw *w = doc_start(&d, 0);
		switch (k) {
		case 0: /* a value without a key */
			jsonw_object_begin(w);
			jsonw_int(w, 1);
			jsonw_object_end(w);
			break;
		case 1: /* a key in an array */
			jsonw_array_begin(w);
			jsonw_key(w, "a");
			jsonw_int(w, 1);
			jsonw_array_end(w);
			break;
		case 2: /* left open */
			jsonw_object_begin(w);
			break;
		case 3: /* closed with the wrong bracket */
			jsonw_object_begin(w);
			jsonw_array_end(w);
			break;
		case 4: /* two values at the top */
			jsonw_int(w, 1);
			jsonw_int(w, 2);
			break;
		case 5: /* a key without its value */
			jsonw_object_begin(w);
			jsonw_key(w, "a");
			jsonw_object_end(w);
			break;
		case 6: /* nothing */
			break;
		}
		if (jsonw_finish(w) != -EINVAL)
			fail_msg("case %d not reported: %s", k, d.sb.buf);
		jsonw_release(w);
		strbuf_release(&d.sb);
	}
}

/* Deep nesting grows the writer's stack. */
static void test_deep(void **state)
{
	(void)state;
	struct doc d;
	struct jsonw *w = doc_start(&d, 1);
	for (int i = 0; i < 300; i++)
		jsonw_array_begin(w);
	jsonw_int(w, 1);
	for (int i = 0; i < 300; i++)
		jsonw_array_end(w);
	assert_int_equal(jsonw_finish(w), 0);
	json_t *j = json_loads(d.sb.buf, 0, NULL);
	assert_non_null(j);
	json_decref(j);
	/* The innermost value sits 300 levels in. */
	assert_non_null(strstr(d.sb.buf, "\n" "                                                  "));
	jsonw_release(w);
	strbuf_release(&d.sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nesting_compact),	  cmocka_unit_test(test_indent_as_jansson),
		cmocka_unit_test(test_scalars_and_inline),  cmocka_unit_test(test_control_characters),
		cmocka_unit_test(test_embedded_nul),	  cmocka_unit_test(test_valid_utf8_kept),
		cmocka_unit_test(test_invalid_utf8_escaped), cmocka_unit_test(test_integer_limits),
		cmocka_unit_test(test_doubles),		  cmocka_unit_test(test_sub_document),
		cmocka_unit_test(test_misuse_reported),	  cmocka_unit_test(test_deep),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
