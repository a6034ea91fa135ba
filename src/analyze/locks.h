// SPDX-License-Identifier: MIT
// Lock analysis: name what a futex-waiting thread is parked on (mutex,
// rwlock, condvar, semaphore, join, Rust std locks), who holds it when the
// evidence says so, and the wait-for graph with its deadlock cycles.
#ifndef SD_LOCKS_H
#define SD_LOCKS_H

#include "snapshot.h"

struct sd_symbols;

/* Refine th->wait of every futex-waiting thread of S (classify() in
 * analyze.c marks them SD_WAIT_FUTEX first) from the syscall arguments and
 * the lock memory captured while frozen, with frame names as a second
 * opinion only, so it works without libc debug info. Owners the evidence
 * names are checked against the snapshot; data symbols of the locks are
 * resolved through SYM. PID 0 and SYM NULL (a loaded snapshot): no
 * symbols, no PID namespace translation, no /proc look-ups; the rest
 * works. */
void locks_analyze(pid_t pid, struct sd_symbols *sym, struct sd_snapshot *s);

/* Classify the futex wait of TH alone (no symbols), from th->syscall_nr,
 * th->syscall_args, th->lockmem (or the lockmem of another thread of S
 * covering the same words) and th->frames. Fills th->wait; strings go to
 * S's pool. Exposed for the unit tests. */
void locks_classify(struct sd_snapshot *s, struct sd_thread *th);

/* Infer the holders of the locks S's threads wait on that the lock
 * memory does not record: a thread that is not waiting on the lock and
 * holds its address in a live stack slot (from its stack pointer up) or in
 * a callee-saved register is a candidate. One candidate (as many as the
 * readers of a read-held rwlock): it holds it, recorded in th->holds, and
 * the waiters' wait.owner is set with owner_evidence SD_EVIDENCE_STACK.
 * More: each is listed in its holds with ncandidates > 1, and no owner is
 * set. Recorded owners get a hold with SD_EVIDENCE_MEMORY, attributed to
 * the frame holding the reference when one is found. Needs the stack
 * copies (before snapshot_drop_capture); without them only recorded
 * owners get holds. locks_analyze() calls it. */
void locks_infer(struct sd_snapshot *s);

/* The frame of TH that holds a reference to ADDR, as locks_infer
 * attributes a recorded owner's hold: the frame of the first live stack
 * slot holding it, else the innermost program frame when a callee-saved
 * register does; -1 when none does (or the stack copy is gone). */
int locks_frame_of_reference(const struct sd_thread *th, uint64_t addr);

/* Is K a wait on something (a lock, condvar, semaphore, join, futex),
 * as opposed to running or another syscall? */
int locks_is_wait(enum sd_wait_kind k);
/* Is K a wait for a signal rather than for a holder (condvars)? */
int locks_is_idle(enum sd_wait_kind k);
/* The name of the lock a wait of kind K is on, as in the lock view:
 * "rwlock" for both rwlock waits, else sd_wait_kind_name(K). */
const char *locks_kind_name(enum sd_wait_kind k);

/* A thread holding a reference to an owner-less lock, in its frame FRAME
 * (-1: in a register). CERTAIN: it holds it (one of as many readers as a
 * read-held lock counts); else it is one of more candidates than holders,
 * and no owner was named. */
struct sd_lock_candidate {
	pid_t tid;
	int frame;
	int certain;
};

/* One lock (or other wait target) and the threads parked on it. */
struct sd_lock {
	enum sd_wait_kind kind;   /* for rwlocks: of the first waiter */
	uint64_t address;
	const char *symbol;       /* pool string of the snapshot, or NULL */
	const char *subkind;
	pid_t owner;              /* 0 when unknown */
	int owner_known;
	enum sd_evidence owner_evidence;
	int owner_frame;          /* frame of the owner holding a reference, or -1 */
	const char *note;         /* why no owner, or about the owner */
	pid_t *waiters;           /* heap, ascending */
	struct sd_lock_candidate *candidates; /* heap: inferred, none certain */
	size_t ncandidates;
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
	enum sd_evidence owner_evidence; /* memory, or stack (inferred) */
	int owner_frame;
	const char *note;                /* the evidence of an inferred edge */
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
