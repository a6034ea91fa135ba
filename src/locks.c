// SPDX-License-Identifier: MIT
// Lock analysis over the futex waits of a snapshot.
#include "locks.h"

void locks_analyze(struct sd_target *t, struct sd_snapshot *s)
{
	(void)t;
	(void)s;
}
