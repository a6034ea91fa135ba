// SPDX-License-Identifier: MIT
// Unit tests of the goroutine wait-for graph (analyze/godeadlocks.c,
// godeadlocks_find): cycles among goroutines through mutexes whose holder
// is inferred, found once each, starting at their smallest id; chains,
// selects and a goroutine named the holder of what it waits on give none.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "godeadlocks.h"
#include "snapshot.h"
#include "util.h"

/* A snapshot of goroutines IDS[0..N), none waiting yet. */
static struct sd_snapshot *with_goroutines(const uint64_t *ids, size_t n)
{
	struct sd_snapshot *s = snapshot_new(1);
	s->go_read = 1;
	s->goroutines = sd_xcalloc(n, sizeof(*s->goroutines));
	s->ngoroutines = n;
	for (size_t i = 0; i < n; i++) {
		s->goroutines[i].id = ids[i];
		s->goroutines[i].status = SD_GO_WAITING;
	}
	return s;
}

/* A mutex held by HOLDER (0: unknown) that the goroutine at index WAITER
 * waits on. Returns its index. */
static size_t mutex(struct sd_snapshot *s, uint64_t address, uint64_t holder, size_t waiter)
{
	s->goobjects = sd_xrealloc(s->goobjects, (s->ngoobjects + 1) * sizeof(*s->goobjects));
	struct sd_goobject *o = &s->goobjects[s->ngoobjects];
	memset(o, 0, sizeof(*o));
	o->kind = "sync.Mutex";
	o->address = address;
	o->holder = holder;
	o->holder_frame = -1;
	o->waiters = sd_xmalloc(sizeof(uint64_t));
	o->waiters[0] = s->goroutines[waiter].id;
	o->nwaiters = 1;
	struct sd_goroutine *g = &s->goroutines[waiter];
	g->waits_on = sd_xrealloc(g->waits_on, (g->nwaits_on + 1) * sizeof(size_t));
	g->waits_on[g->nwaits_on++] = s->ngoobjects;
	return s->ngoobjects++;
}

static void test_abba(void **state)
{
	(void)state;
	const uint64_t ids[] = {11, 10, 3};
	struct sd_snapshot *s = with_goroutines(ids, 3);
	size_t ma = mutex(s, 0xa0, 11, 1); /* 10 waits on A, held by 11 */
	size_t mb = mutex(s, 0xb0, 10, 0); /* 11 waits on B, held by 10 */
	struct sd_godeadlock *d;
	size_t n = godeadlocks_find(s, &d);
	assert_int_equal(n, 1);
	assert_int_equal(d[0].n, 2);
	/* From the smallest id: 10 (index 1) waits on A, then 11 on B. */
	assert_int_equal(d[0].goroutines[0], 1);
	assert_int_equal(d[0].objects[0], ma);
	assert_int_equal(d[0].goroutines[1], 0);
	assert_int_equal(d[0].objects[1], mb);
	godeadlocks_free(d, n);
	snapshot_free(s);
}

static void test_chain_is_no_deadlock(void **state)
{
	(void)state;
	const uint64_t ids[] = {1, 2, 3};
	struct sd_snapshot *s = with_goroutines(ids, 3);
	mutex(s, 0x10, 2, 0); /* 1 waits for 2 */
	mutex(s, 0x20, 3, 1); /* 2 waits for 3, which waits on nothing */
	mutex(s, 0x30, 0, 2); /* 3 on a mutex with no holder named */
	struct sd_godeadlock *d;
	assert_int_equal(godeadlocks_find(s, &d), 0);
	assert_null(d);
	snapshot_free(s);
}

static void test_cycle_of_three_with_a_tail(void **state)
{
	(void)state;
	const uint64_t ids[] = {8, 7, 6, 5};
	struct sd_snapshot *s = with_goroutines(ids, 4);
	mutex(s, 0x50, 6, 3); /* 5 waits for 6 */
	mutex(s, 0x60, 7, 2); /* 6 waits for 7 */
	mutex(s, 0x70, 5, 1); /* 7 waits for 5 */
	mutex(s, 0x51, 5, 0); /* 8 waits for 5: led into the cycle, not in it */
	struct sd_godeadlock *d;
	size_t n = godeadlocks_find(s, &d);
	assert_int_equal(n, 1);
	assert_int_equal(d[0].n, 3);
	assert_int_equal(s->goroutines[d[0].goroutines[0]].id, 5);
	assert_int_equal(s->goroutines[d[0].goroutines[1]].id, 6);
	assert_int_equal(s->goroutines[d[0].goroutines[2]].id, 7);
	godeadlocks_free(d, n);
	snapshot_free(s);
}

static void test_select_and_self_give_no_edge(void **state)
{
	(void)state;
	const uint64_t ids[] = {1, 2};
	struct sd_snapshot *s = with_goroutines(ids, 2);
	/* 1 in a select on two mutex-like objects held by 2: no single
	 * wait, no edge; 2 named the holder of what it waits on itself. */
	mutex(s, 0x10, 2, 0);
	mutex(s, 0x20, 2, 0);
	mutex(s, 0x30, 2, 1);
	struct sd_godeadlock *d;
	assert_int_equal(godeadlocks_find(s, &d), 0);
	snapshot_free(s);
}

static void test_two_cycles(void **state)
{
	(void)state;
	const uint64_t ids[] = {40, 30, 20, 10};
	struct sd_snapshot *s = with_goroutines(ids, 4);
	mutex(s, 0x1, 20, 3); /* 10 -> 20 */
	mutex(s, 0x2, 10, 2); /* 20 -> 10 */
	mutex(s, 0x3, 40, 1); /* 30 -> 40 */
	mutex(s, 0x4, 30, 0); /* 40 -> 30 */
	struct sd_godeadlock *d;
	size_t n = godeadlocks_find(s, &d);
	assert_int_equal(n, 2);
	assert_int_equal(s->goroutines[d[0].goroutines[0]].id, 10);
	assert_int_equal(s->goroutines[d[1].goroutines[0]].id, 30);
	godeadlocks_free(d, n);
	snapshot_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_abba),
		cmocka_unit_test(test_chain_is_no_deadlock),
		cmocka_unit_test(test_cycle_of_three_with_a_tail),
		cmocka_unit_test(test_select_and_self_give_no_edge),
		cmocka_unit_test(test_two_cycles),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
