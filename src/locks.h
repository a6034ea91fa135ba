// SPDX-License-Identifier: MIT
// Lock analysis: name what a futex-waiting thread is parked on (mutex,
// rwlock, condvar, semaphore, join, Rust std locks), who holds it when the
// evidence says so, and the wait-for graph with its deadlock cycles.
#ifndef SD_LOCKS_H
#define SD_LOCKS_H

#include "snapshot.h"

struct sd_target;

/* Refine th->wait of every futex-waiting thread of S using the lock
 * memory captured while frozen. T may be NULL for a loaded snapshot. */
void locks_analyze(struct sd_target *t, struct sd_snapshot *s);

#endif
