// SPDX-License-Identifier: MIT
// Unit tests of the CPU budget's decisions (budget.c) over a made-up cost
// per sample: a cost over the budget slows sampling by the ratio it went
// over (at once when far over, after two windows when a little over, one
// such window let pass); it comes back to the rate asked as soon as the cost at that rate
// would fit (not only once it is under half the budget), and stays slowed
// while it would not; the warm-up is not judged; no budget, no change.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "budget.h"

#define MS 1000000ull
#define S (1000 * MS)

/* A sampling run from time 0: the budget, the clock (ns), the CPU used,
 * and how often the budget changed the interval. */
struct runst {
	struct sd_budget b;
	uint64_t t;
	double cpu;
	int slower, faster;
};

static void start(struct runst *r, double percent, uint64_t interval_ns)
{
	*r = (struct runst){0};
	budget_init(&r->b, percent, interval_ns, 0);
}

/* Ticks at the budget's interval for WALL ns, each costing COST_S
 * seconds of CPU. */
static void run(struct runst *r, double cost_s, uint64_t wall)
{
	uint64_t end = r->t + wall;
	while (r->t < end) {
		r->t += r->b.interval_ns;
		r->cpu += cost_s;
		int c = budget_tick(&r->b, r->t, r->cpu);
		if (c == BUDGET_SLOWER)
			r->slower++;
		else if (c == BUDGET_FASTER)
			r->faster++;
	}
}

static void test_cost_within_budget_keeps_rate(void **state)
{
	(void)state;
	struct runst r;
	start(&r, 2, 50 * MS); /* 20 Hz, 2% of a core */
	/* 0.6 ms a sample at 20 Hz: 1.2% of a core. */
	run(&r, 0.0006, 20 * S);
	assert_int_equal(r.slower, 0);
	assert_int_equal(r.b.interval_ns, 50 * MS);
	assert_true(r.b.last_percent > 1.1 && r.b.last_percent < 1.3);
}

static void test_over_budget_slows_by_the_ratio(void **state)
{
	(void)state;
	struct runst r;
	start(&r, 2, 50 * MS);
	/* 2 ms a sample: 4% at 20 Hz, twice the budget. */
	run(&r, 0.002, 2 * S);
	assert_int_equal(r.slower, 1); /* cut within two seconds, at once */
	/* To a twentieth under the budget: 9.5 Hz, 1.9%. */
	assert_true(r.b.interval_ns > 105 * MS && r.b.interval_ns < 106 * MS);
	run(&r, 0.002, 10 * S);
	assert_int_equal(r.slower, 1); /* within the budget now: stays */
	assert_int_equal(r.faster, 0);
}

static void test_one_window_a_little_over_passes(void **state)
{
	(void)state;
	struct runst r;
	start(&r, 2, 50 * MS);
	/* 0.8 ms a sample (1.6%), but one second at 1.1 ms (2.2%): let
	 * pass, the rate kept. */
	run(&r, 0.0008, 3 * S);
	run(&r, 0.0011, S);
	run(&r, 0.0008, 5 * S);
	assert_int_equal(r.slower, 0);
	assert_int_equal(r.b.interval_ns, 50 * MS);
	/* Two seconds in a row at 2.2%: cut by 1.25. */
	run(&r, 0.0011, 2 * S + 100 * MS);
	assert_int_equal(r.slower, 1);
	assert_int_equal(r.b.interval_ns, 62500000ull);
}

static void test_comes_back_when_the_rate_asked_fits(void **state)
{
	(void)state;
	struct runst r;
	start(&r, 2, 50 * MS);
	/* A busy spell: 1.1 ms a sample, 2.2% at 20 Hz: slowed by 1.25. */
	run(&r, 0.0011, 5 * S);
	assert_int_equal(r.slower, 1);
	assert_int_equal(r.b.interval_ns, 62500000ull);
	/* At 16 Hz the spell's cost is 1.76%: 20 Hz would be 2.2%, over the
	 * budget, so the rate stays. */
	run(&r, 0.0011, 6 * S);
	assert_int_equal(r.faster, 0);
	assert_int_equal(r.b.interval_ns, 62500000ull);
	/* The spell is over: 0.8 ms a sample is 1.6% at 20 Hz, within the
	 * budget though not under half of it: back to the rate asked. */
	run(&r, 0.0008, 6 * S);
	assert_int_equal(r.faster, 1);
	assert_int_equal(r.b.interval_ns, 50 * MS);
	assert_int_equal(r.slower, 1);
}

static void test_warm_up_and_no_budget(void **state)
{
	(void)state;
	struct runst r;
	start(&r, 2, 50 * MS);
	/* The first second costs what it costs (the first capture and
	 * symbolization): not judged; nor is the first window before it
	 * ends, a second later. */
	run(&r, 0.01, 2 * S - 50 * MS);
	assert_int_equal(r.slower, 0);
	assert_true(budget_steady_percent(&r.b) < 0);
	start(&r, 0, 50 * MS);
	run(&r, 0.01, 20 * S);
	assert_int_equal(r.slower, 0);
	assert_int_equal(r.b.interval_ns, 50 * MS);
	assert_true(budget_steady_percent(&r.b) > 19);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cost_within_budget_keeps_rate),
	    cmocka_unit_test(test_over_budget_slows_by_the_ratio),
	    cmocka_unit_test(test_one_window_a_little_over_passes),
	    cmocka_unit_test(test_comes_back_when_the_rate_asked_fits),
	    cmocka_unit_test(test_warm_up_and_no_budget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
