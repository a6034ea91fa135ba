// SPDX-License-Identifier: MIT
// Module lookup in a target's address space (space.h).
#include "space.h"

#include <stddef.h>

#include "util.h"

struct sd_tmod *space_module_at(struct sd_space *sp, uint64_t addr)
{
	return (struct sd_tmod *)sd_range_find(sp->mods, sp->nmods, sizeof(*sp->mods),
					       offsetof(struct sd_tmod, start),
					       offsetof(struct sd_tmod, end), addr);
}
