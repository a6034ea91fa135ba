// SPDX-License-Identifier: MIT
// The working state one snapshot's stages share: target-snapshot.c runs
// the stages in order, snap-capture.c captures (plan, asleep, freeze,
// late, validate, retry, stop for registers), snap-reuse.c keeps what the
// next sample may count again, thread-names.c names threads. Private to
// those files.
#ifndef SD_SNAPCTX_H
#define SD_SNAPCTX_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/user.h>

#include "procfs.h"
#include "snapshot.h"

struct sd_target;
struct sd_snap_opts;
struct sd_tracee;

/* The snapshot as a sequence of stages with narrow inputs:
 *
 *   process   the process state, maps, a fresh snapshot
 *   discover  threads, names, states; each thread's scheduler counters
 *             and its syscall file: which ones sleep in the kernel
 *   plan      each thread gets a capture kind (freeze, asleep, reuse)
 *   asleep    registers from /proc, stacks and lock words copied, no stop
 *   freeze    only the threads that run: SEIZE+INTERRUPT, registers,
 *             one batched copy, release (the pause)
 *   validate  the sleepers' counters read again: one that ran in between
 *             is frozen and read again (retried)
 *   unwind    offline; a thread whose unwind needs a register /proc does
 *             not give is stopped once for its registers (regstop)
 *   symbolize, analyze, and the reuse cache for the next sample
 *
 * The capture stages (discover's counters to validate) are the capture
 * seam: another engine fills the same sd_thread fields (registers, stack
 * window, lock words, kind) and the offline stages do not know which did. */

/* Thread selection for a snapshot. */
struct pick {
	const struct sd_snap_opts *o;
	pid_t pid;
};

/* What is kept of a thread read asleep, for the next sample. */
struct sd_reuse {
	pid_t tid;
	struct sd_counters c; /* read after the snapshot that captured it */
	struct user_regs_struct regs;
	int regs_partial;
	char state;
	int syscall_known;
	long syscall_nr;
	uint64_t syscall_args[6];
	struct sd_frameset *fs; /* the frames; strings in the target's reuse pool */
	int named;		/* some frame has a string: copied, not shared */
	const char *unwind_stop;
	struct sd_lockmem *lockmem;
	size_t nlockmem;
	uint64_t token; /* the frames' token (sd_thread.frames_token) */
};

enum plan { PLAN_FREEZE = 0, PLAN_ASLEEP, PLAN_REUSE, PLAN_KERNEL };

/* Working state of one thread, parallel to s->threads by index. */
struct tplan {
	enum plan plan;
	int have_c1;          /* c1 read (and, after validate, confirmed) */
	struct sd_counters c1;
	struct sd_taskinfo sc; /* the syscall file: SP, PC, syscall */
	struct sd_reuse *prev; /* PLAN_REUSE: the last sample's thread */
	int copy_now;          /* copy its memory while this freeze holds it */
	int late;              /* seized but did not stop within the budget */
	int round;             /* read asleep by the late stage of this round */
	int reunwound;         /* unwound again after a stop for registers */
	int have_c2;           /* c2 read, after that stop */
	struct sd_counters c2;
};

enum stage { STAGE_MAIN, STAGE_RETRY, STAGE_REGS };

struct snapctx {
	struct sd_target *t;
	const struct sd_snap_opts *o;
	struct sd_snapshot *s;
	struct tplan *p;
	size_t pcap;
	int taskdir;
	struct procfs_taskcache *tc;
	int auto_mode;
	enum procfs_counter_src counters;
	struct pick pick;
	enum stage stage;
	const pid_t *only; /* a retry or regstop freeze: only these (sorted) */
	size_t nonly;
	size_t nsorted;    /* threads [0, nsorted) are in rising TID order */
	int round;         /* 0: the main capture, 1: the retry */
};

/* thread-names.c: the name of thread TID of T from its cache, read again
 * (through TC, in TASKDIR or AT_FDCWD) when it may have changed; RAN: the
 * thread ran since the last call. NULL: the thread is gone. */
const char *snap_thread_name(struct sd_target *t, struct procfs_taskcache *tc, int taskdir,
			     pid_t tid, uint64_t now, int ran);

/* snap-capture.c: the capture stages. Each takes the context and works on
 * the threads its plan names; none prints. */

/* Is TID in the user's selection (--tid, --name)? ARG is a struct pick. */
int snap_thread_wanted(pid_t tid, void *arg);
int snap_cmp_tid(const void *a, const void *b);
/* A new thread of the snapshot, with its plan entry zeroed. */
struct sd_thread *snap_add_thread(struct snapctx *cx, pid_t tid);
/* The index of TID in the snapshot, added when ADD and not there;
 * (size_t)-1 when absent. */
size_t snap_thread_index(struct snapctx *cx, pid_t tid, int add);
void snap_mark_failed(struct sd_snapshot *s, struct sd_thread *th, enum sd_thread_status st,
		      const char *why);
/* Give thread I its capture kind from what /proc shows of it. */
void snap_plan_thread(struct snapctx *cx, size_t i);
/* Read the planned sleepers (with ONLY_LATE, only the late ones) without
 * a stop. */
void snap_asleep_stage(struct snapctx *cx, int only_late);
/* The threads in uninterruptible sleep, shown from the kernel's side. */
void snap_kernel_stage(struct snapctx *cx);
/* Freeze KNOWN, capture, copy, release within BUDGET ms. 0 or -errno. */
int snap_freeze_stage(struct snapctx *cx, const pid_t *known, size_t nknown, unsigned budget,
		      struct sd_error *err);
/* The threads that did not stop within the budget, once the others run. */
void snap_late_stage(struct snapctx *cx);
/* Read the sleepers' counters again; those that ran in between are
 * frozen and read again once, or shown as not stopped. */
void snap_retry_stage(struct snapctx *cx);
/* --per-thread: each thread stopped and read alone. 0 or -errno. */
int snap_perthread_stage(struct snapctx *cx, struct sd_error *err);
/* Stop once each sleeper whose unwind (or, FOR_LOCKS, whose lock's
 * holder inference) needs registers /proc does not give. */
void snap_regstop_stage(struct snapctx *cx, int for_locks);
/* The sleepers whose unwind read stack words of the live process (after
 * the thaw, outside their copy): their counters read again, equal to
 * those read before the copy, prove those words did not move
 * (live_reads_proven). */
void snap_prove_live_reads(struct snapctx *cx);
/* Does lock analysis need the sleepers' callee-saved registers? */
int snap_locks_need_registers(struct snapctx *cx);

/* snap-reuse.c: what a sample may count again. Entries live in the
 * target (t->reuse) until the next reuse_save or reuse_clear. */
struct sd_reuse *reuse_find(struct sd_target *t, pid_t tid);
void reuse_clear(struct sd_target *t);
/* Fill TH from R (the last sample's copy of it). */
void reuse_apply(struct snapctx *cx, struct sd_thread *th, const struct sd_reuse *r);
/* Remember the threads read asleep or reused and confirmed. */
void reuse_save(struct snapctx *cx);

#endif
