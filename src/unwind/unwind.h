// SPDX-License-Identifier: MIT
// The unwind stage, offline: libunwind's remote API over our own accessors.
// Stack memory comes from the captured window, unwind tables from local
// images of the ELF files. The target is already running again.
#ifndef SD_UNWIND_H
#define SD_UNWIND_H

#include "snapshot.h"

struct sd_space;
struct sd_unwinder;

/* One unwinder per target; caches unwind info across snapshots. */
struct sd_unwinder *unwind_new(struct sd_space *sp);
void unwind_free(struct sd_unwinder *u);
/* Forget cached unwind info (the target's modules changed). */
void unwind_flush(struct sd_unwinder *u);

/* Code in [LO, HI) (target addresses) is a function entered by pushing
 * the interrupted pc as its return address, with no call (Go's
 * runtime.asyncPreempt, injected by its preemption signal): the frame
 * above it is at that exact pc, which follows no call and is symbolized
 * as it is (not at pc - 1). Kept until unwind_free; the same range twice
 * is kept once. */
void unwind_pushed_return(struct sd_unwinder *u, uint64_t lo, uint64_t hi);

/* Unwind thread TH from its captured registers and stack into frames (pc,
 * sp, flags only). At most MAX_FRAMES (0: no limit). Sets th->unwind_stop
 * (a pool string of SNAP) when it ended for any reason other than reaching
 * the outermost frame. */
void unwind_thread(struct sd_unwinder *u, struct sd_snapshot *snap, struct sd_thread *th,
		   unsigned max_frames);

#endif
