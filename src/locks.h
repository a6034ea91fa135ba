// SPDX-License-Identifier: MIT
// Lock analysis: name what a futex-waiting thread is parked on (mutex,
// rwlock, condvar, semaphore, join, Rust std locks), who holds it when the
// evidence says so, and the wait-for graph with its deadlock cycles.
#ifndef SD_LOCKS_H
#define SD_LOCKS_H

#include "snapshot.h"

struct sd_target;

/* Refine th->wait of every futex-waiting thread of S (classify() in
 * analyze.c marks them SD_WAIT_FUTEX first) from the syscall arguments and
 * the lock memory captured while frozen, with frame names as a second
 * opinion only, so it works without libc debug info. Owners the evidence
 * names are checked against the snapshot; data symbols of the locks are
 * resolved through T. T may be NULL (a loaded snapshot): no symbols, no
 * PID namespace translation, no /proc look-ups; the rest works. */
void locks_analyze(struct sd_target *t, struct sd_snapshot *s);

/* Classify the futex wait of TH alone (no symbols), from th->syscall_nr,
 * th->syscall_args, th->lockmem (or the lockmem of another thread of S
 * covering the same words) and th->frames. Fills th->wait; strings go to
 * S's pool. Exposed for the unit tests. */
void locks_classify(struct sd_snapshot *s, struct sd_thread *th);

/* Is K a wait on something (a lock, condvar, semaphore, join, futex),
 * as opposed to running or another syscall? */
int locks_is_wait(enum sd_wait_kind k);
/* Is K a wait for a signal rather than for a holder (condvars)? */
int locks_is_idle(enum sd_wait_kind k);
/* The name of the lock a wait of kind K is on, as in the lock view:
 * "rwlock" for both rwlock waits, else sd_wait_kind_name(K). */
const char *locks_kind_name(enum sd_wait_kind k);

/* One lock (or other wait target) and the threads parked on it. */
struct sd_lock {
	enum sd_wait_kind kind;   /* for rwlocks: of the first waiter */
	uint64_t address;
	const char *symbol;       /* pool string of the snapshot, or NULL */
	const char *subkind;
	pid_t owner;              /* 0 when unknown */
	int owner_known;
	const char *note;         /* why no owner, or about the owner */
	pid_t *waiters;           /* heap, ascending */
	size_t nwaiters;
	size_t nreaders, nwriters; /* rwlock waiters by mode */
};

/* One edge of a deadlock cycle: TID waits for a lock held by OWNER. */
struct sd_lock_edge {
	pid_t tid;
	enum sd_wait_kind kind;
	uint64_t address;
	const char *symbol;
	pid_t owner;
};

struct sd_deadlock {
	struct sd_lock_edge *edges; /* heap; edges[i].owner == edges[i+1].tid */
	size_t n;                   /* 1: a thread waits for itself */
};

/* The lock view of one snapshot. Strings point into the snapshot's pool:
 * the graph must not outlive it. */
struct sd_lockgraph {
	struct sd_lock *locks;    /* waits with a holder to blame: most waiters first */
	size_t nlocks;
	struct sd_lock *idle;     /* condvars: waiting for a signal, no holder */
	size_t nidle;
	struct sd_deadlock *deadlocks; /* ordered by their smallest TID */
	size_t ndeadlocks;
};

/* Build the lock view of S from th->wait alone (so it works on loaded and
 * faked snapshots). Every thread has at most one outgoing wait-for edge
 * (to the owner of what it waits for); every cycle is a deadlock,
 * reported once, starting at its smallest TID. Never NULL. */
struct sd_lockgraph *locks_graph(const struct sd_snapshot *s);
/* NULL does nothing. */
void locks_graph_free(struct sd_lockgraph *g);

/* A thread parked on the same lock in every snapshot of a series. */
struct sd_parked {
	pid_t tid;
	const char *name;         /* from the last snapshot's pool */
	struct sd_wait wait;      /* as in the last snapshot */
	double seconds;           /* time between the first and last snapshot */
	uint64_t switches;        /* voluntary context switches between them
				   * beyond the ones our own stops cause */
	int moved;                /* woke up in between (switches > 0) */
};

/* Voluntary context switches one snapshot causes in a thread parked in a
 * futex: the ptrace stop, and sleeping again when the wait restarts. */
#define SD_SNAPSHOT_CTXSW 2

/* Threads parked on the same lock (same kind and address) in all N
 * snapshots SNAPS (oldest first), condvar waits included. Returns the count
 * and a heap array in *OUT (free it; strings point into SNAPS[N-1]). A
 * thread "moved" when its voluntary context switches grew by more than
 * SD_SNAPSHOT_CTXSW per snapshot in between. */
size_t locks_parked(struct sd_snapshot *const *snaps, size_t n, struct sd_parked **out);

#endif
