// SPDX-License-Identifier: MIT
// Unit tests of how old a hot thread's latest sample on a CPU may be to
// show it on a CPU at a tick (perf_hot_max_age, perf-hot.c): four ticks,
// as asked (16 periods of a quarter tick) or as the sampler delivers them
// when its budget slowed it, whichever is longer; a gap of over a second
// is not an interval the sampler keeps.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "perf.h"

#include "perf-impl.h" /* after perf.h: it embeds its types */

#define MS 1000000ull

/* 20 Hz: a quarter tick is 12.5 ms; four ticks of 50 ms. */
static void test_four_ticks_asked(void **state)
{
	(void)state;
	assert_int_equal(perf_hot_max_age(12500000ull, 0), 200 * MS);
	assert_int_equal(perf_hot_max_age(12500000ull, 50 * MS), 200 * MS);
}

/* 99 Hz asked, delivered at 45 Hz: four ticks of 22.2 ms, not 40 ms. */
static void test_four_ticks_delivered_when_slowed(void **state)
{
	(void)state;
	uint64_t period = 10101010ull / 4, gap = 22222222ull;
	assert_int_equal(perf_hot_max_age(period, 0), 16 * period);
	assert_int_equal(perf_hot_max_age(period, gap), 4 * gap);
	assert_true(perf_hot_max_age(period, gap) > 88 * MS);
}

/* Seconds between the times asked (a sampler held back) do not make
 * every old sample fresh. */
static void test_long_gap_capped(void **state)
{
	(void)state;
	assert_int_equal(perf_hot_max_age(2500000ull, 30000 * MS), 4000 * MS);
	/* The period of a hot thread's own clock at high rates (10 ms)
	 * still counts when it is the longer. */
	assert_int_equal(perf_hot_max_age(10 * MS, 10 * MS), 160 * MS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_four_ticks_asked),
	    cmocka_unit_test(test_four_ticks_delivered_when_slowed),
	    cmocka_unit_test(test_long_gap_capped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
