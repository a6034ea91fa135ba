// SPDX-License-Identifier: MIT
// What top shows, computed: each thread's share of samples on a CPU and the
// rank of its latest state (busiest first), and the functions of a profile
// by own and total samples. top (commands/cmd-top.c) draws them.
#ifndef SD_TOPVIEW_H
#define SD_TOPVIEW_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile.h"
#include "snapshot.h"

/* One thread as top shows it. */
struct top_thread {
	pid_t tid;
	char name[64];
	char state[40];
	const char *now; /* leaf frame of the latest stack, profile pool */
	uint64_t samples, on_cpu;
	int seen; /* in the latest snapshot */
	int idle; /* idle in the latest snapshot (waiting for work) */
	int rank; /* of its latest state: lower is busier */
	size_t holding; /* threads waiting on a lock it holds (latest snapshot) */
	char holds[80]; /* "holds mutex <g_lock>, 50 waiters", or empty */
};

/* Own and total samples of one function. */
struct top_func {
	const char *name; /* profile pool: compared by pointer */
	uint64_t own, total;
	size_t mark; /* last stack counted in total */
};

/* Orders of threads for sd_sort: by TID, by name (then TID), busiest first
 * (holders of what others wait on first, most waiters first; then share
 * of samples on a CPU, then the latest state's rank, then TID). */
int top_cmp_tid(const void *a, const void *b);
int top_cmp_name(const void *a, const void *b);
int top_cmp_activity(const void *a, const void *b);
/* The share of X's samples it was on a CPU (0 to 1). */
double top_oncpu(const struct top_thread *x);
/* The rank of a thread's latest state: running 0, runnable 1, lock waits 2,
 * disk 3, other waits 4, idle (IDLE set) 6. */
int top_state_rank(const struct sd_thread *x, int idle);
/* Functions of P by own samples, into a heap array of *NOUT entries.
 * IDLE[i] (of NIDLE) counts the idle samples of stack i, left out (NULL:
 * none). Names are P's pool strings. */
struct top_func *top_functions(struct sd_profile *p, const uint64_t *idle, size_t nidle,
			       size_t *nout);

#endif
