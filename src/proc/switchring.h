// SPDX-License-Identifier: MIT
// A thread's ring of context-switch records: one perf event per thread,
// read with one load to tell whether it was scheduled, and holding the user
// registers it last went to sleep with.
#ifndef SD_SWITCHRING_H
#define SD_SWITCHRING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

/* Open a ring of TID's context switches, written backwards over itself:
 * a PERF_RECORD_SWITCH (8 bytes) each time the thread is scheduled in or
 * out, and at each switch out, before its record, a sample of its user
 * registers (those it entered the kernel with: for a thread going to
 * sleep in a system call, the ones it sleeps with). Every switch moves
 * data_head, and reading it is one load, no system call. The ring is two
 * pages of PAGE bytes mapped read-only at *RING (the caller unmaps it).
 * Returns the event's descriptor, or a negative errno (-ESRCH: the thread
 * is gone); *RING is then MAP_FAILED when the event opened but its mapping
 * was refused (locked memory), else NULL. */
int switchring_open(pid_t tid, size_t page, void **ring);
/* The user registers the thread of RING (switchring_open; PAGE
 * as given there) went to sleep with: the sample of its last switch out,
 * provided the ring's head is still HEAD and no switch in came after that
 * sample. orig_rax is -1 (not sampled). Returns 0, -EAGAIN (scheduled
 * since HEAD), or -ENODATA (no such sample: asleep since before the ring
 * was opened). */
int switchring_regs(const void *ring, size_t page, uint64_t head, struct user_regs_struct *regs);

#endif
