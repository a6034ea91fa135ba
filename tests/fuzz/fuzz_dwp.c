// SPDX-License-Identifier: MIT
// libFuzzer target for the readers of DWARF packages: the unit index
// (.debug_cu_index) and the range lists a split unit's addresses are read
// from (.debug_ranges of DWARF 4, .debug_rnglists.dwo of DWARF 5), all of
// which come from files the target's owner wrote.
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dwp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count(void *arg, uint64_t lo, uint64_t hi)
{
	(void)lo;
	(void)hi;
	return ++*(int *)arg > 1000;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t which = data[0] % 3;
	data++;
	size--;
	if (which == 0) {
		struct dwp_index ix;
		struct dwp_contrib c[DWP_NSECT];
		if (dwp_index_parse(data, size, &ix) != 0)
			return 0;
		/* Every id the table holds, and one it may not. */
		for (uint32_t i = 0; i < ix.nslots && i < 4096; i++) {
			uint64_t id;
			memcpy(&id, ix.ids + (size_t)i * 8, 8);
			dwp_index_find(&ix, id, c);
		}
		dwp_index_find(&ix, 0x0123456789abcdefull, c);
		return 0;
	}
	/* A range list context: 8 bytes of base, a byte of address size,
	 * 2 bytes of .debug_addr length, the addresses, then the lists. */
	if (size < 11)
		return 0;
	struct dwp_rangectx rc = {.version = which == 1 ? 4 : 5};
	memcpy(&rc.base, data, 8);
	rc.addr_size = data[8] & 1 ? 4 : 8;
	uint16_t alen;
	memcpy(&alen, data + 9, 2);
	data += 11;
	size -= 11;
	if (alen > size)
		alen = (uint16_t)size;
	rc.addr = data;
	rc.addr_len = alen;
	rc.lists = data + alen;
	rc.lists_len = size - alen;
	int n = 0;
	if (rc.version == 5) {
		for (uint64_t idx = 0; idx < 8; idx++) {
			int64_t off = dwp_rnglistx(&rc, idx);
			if (off >= 0)
				dwp_rangelist(&rc, (uint64_t)off, count, &n);
		}
	}
	for (uint64_t off = 0; off < rc.lists_len && off < 64; off++)
		dwp_rangelist(&rc, off, count, &n);
	return 0;
}
