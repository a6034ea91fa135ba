// SPDX-License-Identifier: MIT
// Helpers shared by the lock analysis modules (locks.c, locks-graph.c),
// not part of the engine's interface.
#ifndef SD_LOCKS_INT_H
#define SD_LOCKS_INT_H

#include "snapshot.h"

/* A thread of a snapshot by TID: sorted (tid, index) pairs. */
struct tid_index {
	pid_t tid;
	size_t idx;
};

/* Sorted (tid, index) pairs of S's threads, keyed by KEYS[i] when given
 * (else their TIDs). Heap; never NULL. */
struct tid_index *locks_tid_index_new(const struct sd_snapshot *s, const pid_t *keys);
/* The index of TID in IX (N pairs), or -1. */
long locks_index_find(const struct tid_index *ix, size_t n, pid_t tid);
/* qsort comparator of pid_t. */
int locks_cmp_pid(const void *a, const void *b);

#endif
