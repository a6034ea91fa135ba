// SPDX-License-Identifier: MIT
// Unit tests of the readers of DWARF packages in dwp.c: the unit index of
// versions 2 and 5 (open addressing by DWO id, the column ids of each
// version), and the range lists a split unit's addresses come from.
#include <dwarf.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dwp.h"

struct buf {
	uint8_t b[1024];
	size_t n;
};

static void put(struct buf *w, uint64_t v, int len)
{
	memcpy(w->b + w->n, &v, (size_t)len);
	w->n += (size_t)len;
}

/* An index of VERSION with 4 slots and the units IDS[0..N) (N <= 3),
 * columns COLS[0..NCOLS), unit i's contribution to column c at
 * (i+1)*0x100 + c, of size 0x10 + c. */
static void make_index(struct buf *w, uint32_t version, const uint64_t *ids, int n,
		       const uint32_t *cols, int ncols)
{
	uint64_t slot_id[4] = {0};
	uint32_t slot_row[4] = {0};
	for (int i = 0; i < n; i++) {
		uint64_t h = ids[i] & 3, step = ((ids[i] >> 32) & 3) | 1;
		while (slot_row[h])
			h = (h + step) & 3;
		slot_id[h] = ids[i];
		slot_row[h] = (uint32_t)i + 1;
	}
	w->n = 0;
	put(w, version, 4);
	put(w, (uint64_t)ncols, 4);
	put(w, (uint64_t)n, 4);
	put(w, 4, 4);
	for (int s = 0; s < 4; s++)
		put(w, slot_id[s], 8);
	for (int s = 0; s < 4; s++)
		put(w, slot_row[s], 4);
	for (int c = 0; c < ncols; c++)
		put(w, cols[c], 4);
	for (int i = 0; i < n; i++)
		for (int c = 0; c < ncols; c++)
			put(w, (uint64_t)(i + 1) * 0x100 + (uint64_t)c, 4);
	for (int i = 0; i < n; i++)
		for (int c = 0; c < ncols; c++)
			put(w, 0x10 + (uint64_t)c, 4);
}

static void test_index_v5(void **state)
{
	(void)state;
	/* Two ids in the same first slot: the second is found by the step. */
	const uint64_t ids[] = {0x1111111100000001ull, 0x2222222200000001ull, 0x42};
	/* info, abbrev, line, loclists, str_offsets, rnglists */
	const uint32_t cols[] = {1, 3, 4, 5, 6, 8};
	struct buf w;
	make_index(&w, 5, ids, 3, cols, 6);
	struct dwp_index ix;
	assert_int_equal(dwp_index_parse(w.b, w.n, &ix), 0);
	assert_int_equal(ix.version, 5);
	struct dwp_contrib c[DWP_NSECT];
	assert_int_equal(dwp_index_find(&ix, ids[1], c), 0);
	assert_int_equal(c[DWP_INFO].off, 0x200);
	assert_int_equal(c[DWP_INFO].size, 0x10);
	assert_int_equal(c[DWP_ABBREV].off, 0x201);
	assert_int_equal(c[DWP_LOC].off, 0x203);
	assert_int_equal(c[DWP_STR_OFFSETS].size, 0x14);
	assert_int_equal(c[DWP_RNGLISTS].off, 0x205);
	assert_int_equal(dwp_index_find(&ix, ids[0], c), 0);
	assert_int_equal(c[DWP_INFO].off, 0x100);
	assert_int_equal(dwp_index_find(&ix, ids[2], c), 0);
	assert_int_equal(c[DWP_LINE].off, 0x302);
	assert_int_equal(dwp_index_find(&ix, 0x3333333300000001ull, c), -ENOENT);
	assert_int_equal(c[DWP_INFO].size, 0);
}

static void test_index_v2(void **state)
{
	(void)state;
	const uint64_t ids[] = {0xb7d11db00e1cca17ull};
	/* info, types, abbrev, line, loc, str_offsets, macinfo, macro: in
	 * version 2, column 8 is .debug_macro, not range lists. */
	const uint32_t cols[] = {1, 2, 3, 4, 5, 6, 7, 8};
	struct buf w;
	make_index(&w, 2, ids, 1, cols, 8);
	struct dwp_index ix;
	assert_int_equal(dwp_index_parse(w.b, w.n, &ix), 0);
	struct dwp_contrib c[DWP_NSECT];
	assert_int_equal(dwp_index_find(&ix, ids[0], c), 0);
	assert_int_equal(c[DWP_INFO].off, 0x100);
	assert_int_equal(c[DWP_ABBREV].off, 0x102);
	assert_int_equal(c[DWP_LOC].off, 0x104);
	assert_int_equal(c[DWP_STR_OFFSETS].off, 0x105);
	assert_int_equal(c[DWP_RNGLISTS].size, 0);
}

static void test_index_refused(void **state)
{
	(void)state;
	const uint64_t ids[] = {7};
	const uint32_t cols[] = {1, 3};
	struct buf w;
	struct dwp_index ix;
	make_index(&w, 5, ids, 1, cols, 2);
	/* cut short */
	assert_int_equal(dwp_index_parse(w.b, w.n - 1, &ix), -EINVAL);
	/* unknown version */
	make_index(&w, 3, ids, 1, cols, 2);
	assert_int_equal(dwp_index_parse(w.b, w.n, &ix), -EINVAL);
	/* slots not a power of two */
	make_index(&w, 5, ids, 1, cols, 2);
	uint32_t three = 3;
	memcpy(w.b + 12, &three, 4);
	assert_int_equal(dwp_index_parse(w.b, w.n, &ix), -EINVAL);
	assert_int_equal(dwp_index_parse(NULL, 0, &ix), -EINVAL);
}

struct got {
	uint64_t lo[8], hi[8];
	int n;
};

static int collect(void *arg, uint64_t lo, uint64_t hi)
{
	struct got *g = arg;
	g->lo[g->n] = lo;
	g->hi[g->n] = hi;
	return ++g->n == 8;
}

static void test_ranges_v4(void **state)
{
	(void)state;
	/* Offsets from the skeleton's base, then a base address selection,
	 * then offsets from that base; (0, 0) ends the list. */
	struct buf w = {0};
	put(&w, 0x10, 8);
	put(&w, 0x20, 8);
	put(&w, ~0ull, 8);
	put(&w, 0x9000, 8);
	put(&w, 0x1, 8);
	put(&w, 0x4, 8);
	put(&w, 0, 8);
	put(&w, 0, 8);
	struct dwp_rangectx rc = {
	    .version = 4, .addr_size = 8, .base = 0x1000, .lists = w.b, .lists_len = w.n};
	struct got g = {0};
	assert_int_equal(dwp_rangelist(&rc, 0, collect, &g), 2);
	assert_int_equal(g.lo[0], 0x1010);
	assert_int_equal(g.hi[0], 0x1020);
	assert_int_equal(g.lo[1], 0x9001);
	assert_int_equal(g.hi[1], 0x9004);
	/* no end of list: refused */
	rc.lists_len = w.n - 16;
	assert_int_equal(dwp_rangelist(&rc, 0, collect, &g), -1);
}

static void test_rnglists_v5(void **state)
{
	(void)state;
	uint64_t addr[3] = {0x4000, 0x5000, 0x6000};
	struct buf w = {0};
	/* header: length, version 5, address size 8, no segments, 2 offsets */
	put(&w, 0, 4); /* length, filled below */
	put(&w, 5, 2);
	put(&w, 8, 1);
	put(&w, 0, 1);
	put(&w, 2, 4);
	put(&w, 8, 4);	/* list 0, after the offsets */
	put(&w, 17, 4); /* list 1 */
	/* list 0: base_addressx 1, offset_pair (0x10, 0x18), end */
	put(&w, DW_RLE_base_addressx, 1);
	put(&w, 1, 1);
	put(&w, DW_RLE_offset_pair, 1);
	put(&w, 0x10, 1);
	put(&w, 0x18, 1);
	put(&w, DW_RLE_end_of_list, 1);
	/* padding up to list 1 at 12 + 17 */
	while (w.n < 12 + 17)
		put(&w, 0, 1);
	/* list 1: offset_pair from the skeleton's base, startx_length 2 (8),
	 * end */
	put(&w, DW_RLE_offset_pair, 1);
	put(&w, 0x2, 1);
	put(&w, 0x6, 1);
	put(&w, DW_RLE_startx_length, 1);
	put(&w, 2, 1);
	put(&w, 8, 1);
	put(&w, DW_RLE_end_of_list, 1);
	uint32_t len = (uint32_t)(w.n - 4);
	memcpy(w.b, &len, 4);
	struct dwp_rangectx rc = {.version = 5,
				  .addr_size = 8,
				  .base = 0x1000,
				  .addr = (const uint8_t *)addr,
				  .addr_len = sizeof(addr),
				  .lists = w.b,
				  .lists_len = w.n};
	int64_t off = dwp_rnglistx(&rc, 0);
	assert_int_equal(off, 12 + 8);
	struct got g = {0};
	assert_int_equal(dwp_rangelist(&rc, (uint64_t)off, collect, &g), 1);
	assert_int_equal(g.lo[0], 0x5010);
	assert_int_equal(g.hi[0], 0x5018);
	off = dwp_rnglistx(&rc, 1);
	assert_int_equal(off, 12 + 17);
	g.n = 0;
	assert_int_equal(dwp_rangelist(&rc, (uint64_t)off, collect, &g), 2);
	assert_int_equal(g.lo[0], 0x1002);
	assert_int_equal(g.hi[0], 0x1006);
	assert_int_equal(g.lo[1], 0x6000);
	assert_int_equal(g.hi[1], 0x6008);
	/* an index past the table, an address index past .debug_addr */
	assert_int_equal(dwp_rnglistx(&rc, 2), -1);
	rc.addr_len = 8;
	g.n = 0;
	assert_int_equal(dwp_rangelist(&rc, 12 + 8, collect, &g), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_index_v5),	  cmocka_unit_test(test_index_v2),
	    cmocka_unit_test(test_index_refused), cmocka_unit_test(test_ranges_v4),
	    cmocka_unit_test(test_rnglists_v5),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
