// SPDX-License-Identifier: MIT
// The analyze stage: classify each thread of a snapshot (running, in which
// syscall, parked on which kind of lock) from syscall arguments and lock
// memory captured while frozen, with frame names as a second opinion.
#ifndef SD_ANALYZE_H
#define SD_ANALYZE_H

#include "snapshot.h"

struct sd_target;

/* Fill th->wait for every thread of S. T may be NULL (a loaded snapshot:
 * no data symbols can be resolved). */
void analyze_snapshot(struct sd_target *t, struct sd_snapshot *s);

/* Were TH's registers read while it sat in a blocking system call that has
 * not returned (rather than on a CPU or on its way back from one)? */
int analyze_in_syscall(const struct sd_thread *th);

/* A short human description of TH's state, e.g. "in epoll_wait",
 * "running", "waiting for mutex". Static or pool storage. */
const char *analyze_state_text(const struct sd_thread *th);

#endif
