// SPDX-License-Identifier: MIT
// Unit tests of the call-site frame-pointer offsets (fpsite.c): a site is
// used only from its second sighting with one offset, never once it was
// seen with another, forgotten on clear, and the table stops learning new
// sites at its cap while the known ones still answer.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fpsite.h"

static void test_used_from_the_second_sighting(void **state)
{
	(void)state;
	struct fpsites t;
	fpsite_init(&t);
	int64_t d = -1;
	assert_int_equal(fpsite_lookup(&t, 0x401234, &d), 0);
	fpsite_learn(&t, 0x401234, 0x40);
	assert_int_equal(fpsite_lookup(&t, 0x401234, &d), 0);
	fpsite_learn(&t, 0x401234, 0x40);
	assert_int_equal(fpsite_lookup(&t, 0x401234, &d), 1);
	assert_int_equal(d, 0x40);
	/* Another site is its own. */
	assert_int_equal(fpsite_lookup(&t, 0x401238, &d), 0);
	assert_int_equal(t.learned, 2);
	fpsite_release(&t);
}

static void test_a_site_that_varies_is_never_used(void **state)
{
	(void)state;
	struct fpsites t;
	fpsite_init(&t);
	int64_t d;
	for (int i = 0; i < 5; i++)
		fpsite_learn(&t, 0x7000, 0x30);
	assert_int_equal(fpsite_lookup(&t, 0x7000, &d), 1);
	/* One alloca of another size: the frame grows at run time. */
	fpsite_learn(&t, 0x7000, 0x50);
	assert_int_equal(fpsite_lookup(&t, 0x7000, &d), 0);
	for (int i = 0; i < 5; i++)
		fpsite_learn(&t, 0x7000, 0x30);
	assert_int_equal(fpsite_lookup(&t, 0x7000, &d), 0);
	assert_int_equal(t.conflicts, 1);
	fpsite_release(&t);
}

static void test_clear_forgets(void **state)
{
	(void)state;
	struct fpsites t;
	fpsite_init(&t);
	int64_t d;
	fpsite_learn(&t, 0x9000, 0x10);
	fpsite_learn(&t, 0x9000, 0x10);
	assert_int_equal(fpsite_lookup(&t, 0x9000, &d), 1);
	fpsite_clear(&t);
	assert_int_equal(fpsite_lookup(&t, 0x9000, &d), 0);
	fpsite_learn(&t, 0x9000, 0x20);
	fpsite_learn(&t, 0x9000, 0x20);
	assert_int_equal(fpsite_lookup(&t, 0x9000, &d), 1);
	assert_int_equal(d, 0x20);
	fpsite_release(&t);
}

static void test_cap_keeps_the_known_sites(void **state)
{
	(void)state;
	struct fpsites t;
	fpsite_init(&t);
	int64_t d;
	for (uint64_t i = 0; i < FPSITE_CAP + 100; i++) {
		fpsite_learn(&t, 0x100000 + 16 * i, (int64_t)(8 * (i % 7)));
		fpsite_learn(&t, 0x100000 + 16 * i, (int64_t)(8 * (i % 7)));
	}
	assert_int_equal(fpsite_lookup(&t, 0x100000 + 16 * 5, &d), 1);
	assert_int_equal(d, 8 * 5);
	assert_int_equal(fpsite_lookup(&t, 0x100000 + 16 * (FPSITE_CAP - 1), &d), 1);
	assert_int_equal(fpsite_lookup(&t, 0x100000 + 16 * (FPSITE_CAP + 50), &d), 0);
	fpsite_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_used_from_the_second_sighting),
	    cmocka_unit_test(test_a_site_that_varies_is_never_used),
	    cmocka_unit_test(test_clear_forgets),
	    cmocka_unit_test(test_cap_keeps_the_known_sites),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
