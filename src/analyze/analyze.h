// SPDX-License-Identifier: MIT
// The analyze stage: classify each thread of a snapshot (running, in which
// syscall, parked on which kind of lock) from syscall arguments and lock
// memory captured while frozen, with frame names as a second opinion.
#ifndef SD_ANALYZE_H
#define SD_ANALYZE_H

#include "snapshot.h"

struct sd_symbols;

/* Fill th->wait for every thread of S, taken of process PID whose data
 * symbols SYM names. PID 0 and SYM NULL for a loaded snapshot (no data
 * symbols can be resolved). */
void analyze_snapshot(pid_t pid, struct sd_symbols *sym, struct sd_snapshot *s);

/* Were TH's registers read while it sat in a blocking system call that has
 * not returned (rather than on a CPU or on its way back from one)? */
int analyze_in_syscall(const struct sd_thread *th);

/* A short human description of TH's state, e.g. "in epoll_wait",
 * "running", "waiting for mutex". Static or pool storage. */
const char *analyze_state_text(const struct sd_thread *th);

/* The wait a restart_syscall continues, named from FUNCTION, the libc
 * wrapper on top of the thread's stack ("clock_nanosleep" for
 * __GI___clock_nanosleep); NULL when FUNCTION is NULL or none of
 * nanosleep, epoll, poll, select, futex. Static storage. */
const char *analyze_restart_name(const char *function);

#endif
