// SPDX-License-Identifier: MIT
// profile --goroutines: a Go program's goroutines counted by creation site
// in each sample, the goroutine-leak view.
#ifndef SD_GOLEAK_PROFILE_H
#define SD_GOLEAK_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "cmd.h"
#include "format-profile.h"
#include "profile.h"
#include "safefile.h"

/* Sample the one process of CTX's target every INTERVAL_US (slowed to
 * keep within BUDGET percent of a core, 0: no budget) for DURATION_US (0:
 * until COUNT samples or Ctrl-C) or COUNT samples (0: no count), reading
 * its goroutines with the options SO. FORMAT "top" without SF: write the
 * table of creation sites (at most LIMIT, 0 all); else the profile of the
 * goroutines' stacks (each sample counts each goroutine's stack, with the
 * options PO) rendered in FORMAT with RO, to stdout or through SF (begun
 * for OUTPATH; committed or aborted here). LOCKS (--locks) is refused.
 * Returns an exit status. */
int goleak_profile(struct cmd_ctx *ctx, struct sd_snap_opts *so, uint64_t interval_us,
		   uint64_t duration_us, uint64_t count, double budget, size_t limit,
		   const char *format, struct safefile *sf, const char *outpath, int locks,
		   const struct sd_prender *ro, const struct sd_profile_opts *po);

#endif
