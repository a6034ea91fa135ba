// SPDX-License-Identifier: MIT
// Module lookup in a target's address space (space.h).
#include "space.h"

struct sd_tmod *space_module_at(struct sd_space *sp, uint64_t addr)
{
	size_t lo = 0, hi = sp->nmods;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		struct sd_tmod *m = &sp->mods[mid];
		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}
