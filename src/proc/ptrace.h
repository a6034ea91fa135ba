// SPDX-License-Identifier: MIT
// The freeze and thaw stages: PTRACE_SEIZE + PTRACE_INTERRUPT, bounded
// waits, and PTRACE_DETACH on every path. Never PTRACE_ATTACH: it queues a
// SIGSTOP that can leave the whole process stopped if we die.
#ifndef SD_PTRACE_H
#define SD_PTRACE_H

#include <sched.h>
#include <stdint.h>
#include <sys/types.h>

#include "util.h"

enum sd_tracee_state {
	SD_TRACEE_NEW = 0,
	SD_TRACEE_SEIZED,   /* seized and interrupted, not yet stopped */
	SD_TRACEE_STOPPED,  /* in a ptrace stop: registers can be read */
	SD_TRACEE_GONE,     /* exited before or during the freeze */
	SD_TRACEE_FAILED,   /* could not be seized (see err) */
	SD_TRACEE_DETACHED,
	SD_TRACEE_OURS,     /* already traced by us: an earlier straggler */
};

struct sd_tracee {
	pid_t tid;
	enum sd_tracee_state state;
	int inject_sig;      /* signal-delivery-stop: give the signal back */
	int group_stop;      /* stopped by job control before we came */
	int err;             /* errno of a failed seize */
	uint64_t stop_ns, detach_ns;
};

/* A set of tracees for one freeze. */
struct sd_freeze {
	pid_t pid;
	struct sd_tracee *v;
	size_t n, cap;
	uint64_t start_ns, end_ns;
	uint64_t seized_ns;  /* every thread seized and interrupted */
	uint64_t stopped_ns; /* every thread stopped (and captured) */
};

/* Seize and interrupt every thread of PID (KNOWN first, NKNOWN of them;
 * with RESCAN, task/ is then listed again until no new thread appears;
 * without, KNOWN is all: samples whose listing is fresh), then wait (at
 * most TIMEOUT_MS in all) for each to stop.
 * Threads that exit are marked GONE; the freeze stands for the rest.
 * Returns 0 when at least one thread is stopped, else a negative errno
 * with a message that says what the user can do. On error every thread
 * seized so far is already detached. WANT (may be NULL) picks threads.
 * ON_STOP (may be NULL) is called as soon as each thread stops, so the
 * capture of one overlaps the wait for the others. */
int ptrace_freeze_all(struct sd_freeze *fz, pid_t pid, unsigned timeout_ms,
		      const pid_t *known, size_t nknown, int rescan,
		      int (*want)(pid_t tid, void *arg), void *want_arg,
		      void (*on_stop)(struct sd_tracee *t, void *arg), void *stop_arg,
		      struct sd_error *err);

/* Seize, interrupt and wait for one thread (per-thread mode). */
int ptrace_freeze_one(struct sd_tracee *t, unsigned timeout_ms, struct sd_error *err);

/* Detach one stopped tracee, giving back any signal it was delivering.
 * A tracee that never stopped is remembered and detached by
 * ptrace_reap_stragglers() once it does. */
void ptrace_thaw_one(struct sd_tracee *t);
/* Detach all tracees of FZ; safe to call twice. */
void ptrace_thaw_all(struct sd_freeze *fz);
void ptrace_freeze_release(struct sd_freeze *fz);

/* Detach threads that were interrupted but had not stopped by the
 * deadline. Returns how many remain. Call between commands. */
size_t ptrace_reap_stragglers(void);

/* Wait at most TIMEOUT_MS for straggler T->tid (filled in) to stop.
 * Returns 0 when it stopped (capture it, then ptrace_thaw_one()),
 * -ETIMEDOUT when it did not (it stays a straggler), -ESRCH when it is
 * gone or not a straggler. */
int ptrace_wait_straggler(struct sd_tracee *t, unsigned timeout_ms);

/* Is TID a straggler of ours (interrupted, not yet stopped)? */
int ptrace_is_straggler(pid_t tid);

/* Raise our priority for the freeze window, where permitted: SCHED_FIFO
 * at priority 1, else nice -20, else nothing (silently). _end restores
 * what _begin changed. On a saturated host this keeps the window between
 * the first stop and the last release short. */
struct sd_boost {
	int how; /* 0 nothing, 1 policy, 2 nice */
	int policy, nice;
	struct sched_param saved_param;
};
void ptrace_boost_begin(struct sd_boost *b);
void ptrace_boost_end(struct sd_boost *b);
/* A one-shot snapshot's own priority: nice DUMP_NICE for the calling
 * thread (and the threads it starts meanwhile) where permitted, undone by
 * ptrace_boost_end. On a saturated host a dump otherwise waits behind the
 * server's threads for the CPU it needs (MariaDB under sysbench: 60 ms of
 * CPU took 0.2-0.3 s); its CPU is the same either way, taken sooner. */
#define DUMP_NICE (-10)
void ptrace_boost_nice(struct sd_boost *b, int nice);

/* Describe why PTRACE_SEIZE failed for PID with errno E. */
int ptrace_explain_seize(pid_t pid, int e, struct sd_error *err);

/* Emergency thaw from a signal handler: detach every tracee of the
 * current freeze (async-signal-safe). */
void ptrace_emergency_thaw(void);

#endif
