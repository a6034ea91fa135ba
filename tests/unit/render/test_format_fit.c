// SPDX-License-Identifier: MIT
// Unit tests of the text that fits the reader (format-fit.c): short
// function names, lines broken to a terminal's width, names and TIDs as
// ranges; and of the frame lines and findings a terminal gets
// (format-text.c, format-findings.c) on faked snapshots.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "format.h"
#include "locks.h"
#include "snapshot.h"

static char *short_name(const char *name)
{
	struct strbuf sb;
	strbuf_init(&sb);
	format_short_name(&sb, name);
	return strbuf_detach(&sb);
}

static void expect_short(const char *name, const char *want)
{
	char *got = short_name(name);
	assert_string_equal(got, want);
	free(got);
}

static void test_short_names(void **state)
{
	(void)state;
	expect_short("tokio::runtime::task::harness::Harness<tokio::runtime::blocking::task::"
		     "BlockingTask<F>, S>::poll<T>",
		     "tokio::runtime::task::harness::Harness<..>::poll<..>");
	expect_short("std::vector<int, std::allocator<int> >::push_back(int const&)",
		     "std::vector<..>::push_back(int const&)");
	/* A qualified path keeps its brackets, its inner generics go. */
	expect_short("<fx_rust::workers::Decoder<u64>>::wait_for_input",
		     "<fx_rust::workers::Decoder<..>>::wait_for_input");
	/* Operators are not generics. */
	expect_short("std::ostream::operator<<(int)", "std::ostream::operator<<(int)");
	expect_short("operator<", "operator<");
	/* "->" in a function type does not close the arguments. */
	expect_short("call<fn() -> u8>::go", "call<..>::go");
	/* Unbalanced: left alone. */
	expect_short("broken<name", "broken<name");
	expect_short("plain_c_function", "plain_c_function");
	expect_short("", "");
}

/* The widest line of S, in bytes (the tests use ASCII). */
static size_t widest(const char *s)
{
	size_t w = 0;
	while (*s) {
		size_t l = strcspn(s, "\n");
		if (l > w)
			w = l;
		s += l + (s[l] == '\n');
	}
	return w;
}

static void test_fit_width_breaks_lines(void **state)
{
	(void)state;
	struct strbuf sb;
	strbuf_init(&sb);
	strbuf_adds(&sb, "short line\n");
	strbuf_adds(&sb, "  held by 21942 \"cycle-2\", itself waiting for mutex 0x564ca41761a0 "
			 "<g_lock_a> held by 21941 \"cycle-1\"\n");
	strbuf_adds(&sb, "  ");
	for (int i = 0; i < 120; i++)
		strbuf_adds(&sb, "x");
	strbuf_adds(&sb, "\n");
	size_t words = 0;
	for (size_t i = 0; i < sb.len; i++)
		words += sb.buf[i] != ' ' && sb.buf[i] != '\n';
	format_fit_width(&sb, 0, 80);
	assert_true(widest(sb.buf) <= 80);
	/* Nothing is lost: only spaces and line ends were added. */
	size_t after = 0;
	for (size_t i = 0; i < sb.len; i++)
		after += sb.buf[i] != ' ' && sb.buf[i] != '\n';
	assert_int_equal(after, words);
	assert_non_null(strstr(sb.buf, "short line\n  held by 21942"));
	/* The continuation is indented 4 more than the line. */
	assert_non_null(strstr(sb.buf, "<g_lock_a>\n      held by 21941"));
	/* Escape sequences take no column. */
	strbuf_release(&sb);
	strbuf_init(&sb);
	strbuf_adds(&sb, "\033[1m");
	for (int i = 0; i < 78; i++)
		strbuf_adds(&sb, "y");
	strbuf_adds(&sb, "\033[0m\n");
	size_t len = sb.len;
	format_fit_width(&sb, 0, 80);
	assert_int_equal(sb.len, len);
	/* Width 0: a pipe, nothing changes. */
	strbuf_adds(&sb, "  ");
	for (int i = 0; i < 300; i++)
		strbuf_adds(&sb, "z ");
	len = sb.len;
	format_fit_width(&sb, 0, 0);
	assert_int_equal(sb.len, len);
	strbuf_release(&sb);
}

static void expect_ranges(const char *const *names, const pid_t *tids, size_t n, const char *want)
{
	struct strbuf sb;
	strbuf_init(&sb);
	format_names_ranges(&sb, names, tids, n, 60);
	assert_string_equal(sb.buf, want);
	strbuf_release(&sb);
}

static void test_names_as_ranges(void **state)
{
	(void)state;
	const char *pool[] = {"http-worker-2", "http-worker-0", "http-worker-1", "http-worker-5"};
	const pid_t ptid[] = {102, 100, 101, 105};
	expect_ranges(pool, ptid, 4, "\"http-worker-0..2,5\", TIDs 100..102,105");
	const char *same[] = {"pool", "pool", "pool"};
	const pid_t stid[] = {7, 8, 9};
	expect_ranges(same, stid, 3, "\"pool\" (3), TIDs 7..9");
	const char *mixed[] = {"a", "b1", "c"};
	expect_ranges(mixed, stid, 3, "\"a, b1, c\", TIDs 7..9");
}

/* A pool of N waiters on a mutex held by thread 10, in frame 1 of it. */
static struct sd_snapshot *pool_snapshot(size_t n)
{
	struct sd_snapshot *s = snapshot_new(10);
	s->exe = strpool_intern(s->pool, "/usr/bin/app");
	struct sd_thread *h = snapshot_add_thread(s, 10);
	h->name = strpool_intern(s->pool, "syncer");
	h->state = 'S';
	for (size_t i = 0; i < n; i++) {
		struct sd_thread *w = snapshot_add_thread(s, 20 + (pid_t)i);
		char name[32];
		snprintf(name, sizeof(name), "http-worker-%zu", i);
		w->name = strpool_intern(s->pool, name);
		w->state = 'S';
		w->wait.kind = SD_WAIT_MUTEX;
		w->wait.address = 0x5000;
		w->wait.symbol = strpool_intern(s->pool, "g_journal_lock");
		w->wait.owner = 10;
		w->wait.owner_known = 1;
		w->wait.owner_evidence = SD_EVIDENCE_MEMORY;
	}
	return s;
}

static void test_findings_name_the_holder(void **state)
{
	(void)state;
	struct sd_snapshot *s = pool_snapshot(50);
	struct sd_lockgraph *g = locks_graph(s);
	assert_int_equal(format_findings_count(s, g), 1);
	struct strbuf sb;
	strbuf_init(&sb);
	struct sd_render_opts o = {0};
	assert_int_equal(format_text_findings(&sb, s, g, 0, &o), 1);
	assert_non_null(strstr(sb.buf, "Verdict: no deadlock, 1 finding\n"));
	assert_non_null(strstr(sb.buf, "most waited for: mutex <g_journal_lock>, 50 waiters"));
	assert_non_null(strstr(sb.buf, "held by 10 \"syncer\""));
	assert_non_null(strstr(sb.buf, "waiters: \"http-worker-0..49\""));
	locks_graph_free(g);
	strbuf_release(&sb);
	snapshot_free(s);
	/* Nothing to find: nothing said, unless asked. */
	s = snapshot_new(10);
	snapshot_add_thread(s, 10)->state = 'S';
	g = locks_graph(s);
	strbuf_init(&sb);
	assert_int_equal(format_text_findings(&sb, s, g, 0, &o), 0);
	assert_int_equal(sb.len, 0);
	format_text_findings(&sb, s, g, 1, &o);
	assert_non_null(strstr(sb.buf, "Verdict: no deadlock, no lock waited for"));
	locks_graph_free(g);
	strbuf_release(&sb);
	snapshot_free(s);
}

static void test_recursion_folds_in_text(void **state)
{
	(void)state;
	struct sd_snapshot *s = snapshot_new(10);
	struct sd_thread *t = snapshot_add_thread(s, 10);
	t->name = strpool_intern(s->pool, "recurser");
	size_t n = 64;
	t->frames = calloc(n, sizeof(*t->frames));
	t->nframes = n;
	for (size_t i = 0; i < n; i++) {
		struct sd_frame *f = &t->frames[i];
		int mid = i >= 2 && i < 62;
		f->pc = 0x1000 + i;
		f->function = strpool_intern(s->pool, mid ? "beta_recurse" : i < 2 ? "leaf" : "main");
		f->module = strpool_intern(s->pool, "app");
		f->file = strpool_intern(s->pool, "/src/x.c");
		f->line = mid ? 32 : (int)i;
		f->flags = SD_FRAME_DEBUGINFO;
	}
	struct strbuf sb;
	strbuf_init(&sb);
	struct sd_render_opts o = {0};
	format_text_stack(&sb, t, 0, &o);
	assert_non_null(strstr(sb.buf, "  #2-#61 0x0000000000001002 beta_recurse (app) at x.c:32, "
					"60 times\n  #62  "));
	strbuf_release(&sb);
	strbuf_init(&sb);
	o.all_frames = 1;
	format_text_stack(&sb, t, 0, &o);
	size_t count = 0;
	for (const char *p = sb.buf; (p = strstr(p, "beta_recurse")); p++)
		count++;
	assert_int_equal(count, 60);
	strbuf_release(&sb);
	free(t->frames);
	t->frames = NULL;
	t->nframes = 0;
	snapshot_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_short_names),
	    cmocka_unit_test(test_fit_width_breaks_lines),
	    cmocka_unit_test(test_names_as_ranges),
	    cmocka_unit_test(test_findings_name_the_holder),
	    cmocka_unit_test(test_recursion_folds_in_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
