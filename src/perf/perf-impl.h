// SPDX-License-Identifier: MIT
// Private to the perf-events engine (perf.c: events, rings and draining;
// perf-tick.c: composing a wall-clock tick from each thread's latest
// sample): the per-thread state both halves share. Not for other modules.
// Include perf.h before it (its types are embedded here).
#ifndef SD_PERF_IMPL_H
#define SD_PERF_IMPL_H

#include <linux/perf_event.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "perf-regs.h"

#define DEFAULT_STACK_COPY (16u << 10)
#define SAMPLE_TYPE                                                                                \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER |     \
	 PERF_SAMPLE_STACK_USER)

enum { LATEST_NONE = 0, LATEST_CLOCK, LATEST_SWITCH, LATEST_SEED };

/* A sample drained but not yet used by a tick (a tick composes the state
 * at its own time: a late tick uses the samples up to that time). */
struct psample {
	int kind;
	uint64_t time;
	struct user_regs_struct regs;
	uint8_t *stack;
	size_t stack_len;
};
#define PENDING_MAX 32

/* One thread with its events and its latest sample. */
struct pthr {
	pid_t tid;
	int fd, fd_sw; /* task-clock, context switch; -1: none (asleep since
			* the start or for a while: see perf_thr_sync) */
	uint8_t *ring; /* task-clock samples, read and consumed */
	size_t ring_len;
	uint8_t *sw_ring; /* switch samples, overwritten: only the latest counts */
	size_t sw_ring_len;
	uint64_t sw_head;     /* its data_head when last read */
	uint64_t sw_time;     /* time of the newest switch sample taken */
	uint64_t sw_since, sw_cpu; /* when it was last measured
				    * (perf_switch_mode), and its task
				    * clock then */
	uint64_t sw_waits; /* the waits it had gone into then (voluntary
			    * switches) */
	int hot; /* switches too often for a switch event: its task clock
		  * only, and each tick reads it asleep without a stop
		  * (perf-hot.c) */
	int cpu_clock; /* a hot thread without events: its clock samples
			* come from the per-CPU clock, its schedstat is its
			* clock (perf_thr_clock) */
	uint64_t cpu_read; /* the CPU ring read that took its newest sample */
	int hot_use; /* HOT_* at this tick */
	uint64_t period_ns; /* its task clock's period once hot (0: the engine's) */
	/* A hot thread's last proven sleep: read without a stop while its
	 * task clock stood still (perf-hot.c). */
	int slp_valid;
	uint64_t slp_clock; /* its task clock then */
	struct user_regs_struct slp_regs;
	uint8_t *slp_stack;
	size_t slp_cap;
	struct sd_frameset *slp_fs;
	char *slp_stop;
	uint64_t slp_token;
	char slp_state;
	long slp_nr;
	uint64_t slp_args[6];
	int io_worker; /* an io_uring worker: no user stack (sd_thread's) */
	struct psample *pend; /* samples newer than the last tick, by time */
	size_t npend;
	int gone;	    /* not in the task list any more: kept until
			     * the ticks reach its last sample */
	uint64_t opened_ns; /* when its events were opened */
	int fd_watch;	    /* without events: its switch records (-1: none) */
	void *watch_ring;   /* their ring, overwritten: only the head counts */
	uint64_t watch_head; /* its data_head at the last capture */
	char name[16];	    /* its comm when last read */

	/* The latest sample: LATEST_* kind, with registers and stack. */
	int kind;
	uint64_t time; /* CLOCK_MONOTONIC ns */
	uint64_t gen;  /* bumped at every new latest sample */
	uint64_t tick_gen; /* gen at the last tick that counted it (0: none) */
	uint64_t lost_recs; /* samples the kernel dropped, from its LOST records */
	uint64_t lost_seen; /* perf_thr_lost at the last tick that looked */
	uint64_t name_gen; /* gen when the name was last asked for */
	struct user_regs_struct regs;
	uint8_t *stack;
	size_t stack_len, stack_cap;

	/* Derived from the latest sample, redone when gen moves on. */
	uint64_t frames_gen; /* gen the frames below belong to (0: none) */
	uint64_t token;      /* the frames' token (sd_thread.frames_token) */
	struct sd_frameset *fs; /* the frames, shared with the ticks' snapshots */
	char *unwind_stop;
	uint64_t state_gen;
	char state;
	int running, syscall_known;
	long syscall_nr;
	uint64_t syscall_args[6];
	char *wchan;
};

/* One CPU's clock event and its ring (perf-ring.c). */
struct cpuring {
	int cpu, fd;
	uint8_t *ring; /* overwritten backwards, read-only */
	size_t ring_len;
	uint64_t head, time; /* data_head and the newest sample's time at
			      * the last read */
};

struct sd_perf {
	struct sd_target *t;
	struct sd_perf_opts o;
	size_t page;
	int map_refused;   /* errno of a ring's mapping refused (locked
			    * memory), 0 if none was */
	int lost_records;  /* the kernel has no PERF_FORMAT_LOST: count
			    * PERF_RECORD_LOST instead */
	size_t sw_ring_kb; /* switch ring per thread */
	size_t narmed;	   /* threads with their events open */
	struct pthr *v;	   /* sorted by tid */
	size_t n, cap;
	int epfd; /* every task-clock event, for "a ring is filling" */
	struct cpuring *cpus; /* the per-CPU clock (none: refused, or
			       * --engine-cpu-clock off) */
	size_t ncpus;
	uint64_t cpu_period_ns;
	int cpu_refused; /* errno of the per-CPU clock refused, 0 if not */
	uint64_t cpu_read_seq; /* reads of a CPU ring so far (pthr.cpu_read) */
	uint8_t **pool; /* spare sample stack buffers (o.stack_copy bytes) */
	size_t npool, poolcap;
	uint8_t *scratch; /* a record that wraps around the ring's end */
	size_t scratch_cap;
	uint64_t synced_ns; /* when the task list was last read */
	/* The time asked of the last tick, and the gap to the one before
	 * (the interval the sampler delivers: the budget's when it slowed
	 * it), 0 until the second tick. */
	uint64_t last_at_ns, tick_gap_ns;
	/* The stat and syscall files of threads found blocked (thr_state),
	 * kept open: a pread at each new switch-out, not an open and close
	 * of two files (a loaded server's threads block many times a
	 * second). NULL until the first. */
	struct procfs_taskcache *tc;
	struct sd_perf_stats st;
};

/* perf-ring.c: a spare stack buffer (o.stack_copy bytes), and one given
 * back. */
uint8_t *perf_buf_get(struct sd_perf *p);
void perf_buf_put(struct sd_perf *p, uint8_t *b);
/* Drain TH's task-clock ring into its queue. */
void perf_drain_one(struct sd_perf *p, struct pthr *th);
/* Read CPU ring I: each hot thread of the target queues its newest
 * sample there. */
void perf_cpu_drain(struct sd_perf *p, size_t i);

/* Has TH a clock: its task-clock event, or schedstat with the per-CPU
 * clock's samples? */
static inline int perf_thr_clocked(const struct pthr *th)
{
	return th->fd >= 0 || th->cpu_clock;
}

/* The thread of P with TID, or NULL. */
struct pthr *perf_thr_find(struct sd_perf *p, pid_t tid);
/* Rescan the task list (see perf.c); 0, or -1 with ERR set. */
int perf_thr_sync(struct sd_perf *p, int first, uint64_t at, struct sd_error *err);
/* Open TH's events (a thread found running that had none): 0 or a
 * negative errno (it stays without, captured like a sleeper). */
int perf_thr_arm(struct sd_perf *p, struct pthr *th);
/* Close TH's events (asleep for a while): it is captured like a sleeper
 * from the next tick on. */
void perf_thr_rest(struct sd_perf *p, struct pthr *th);
/* Whether TH, without events, was scheduled since the last call (its
 * switch-record ring moved; always when it has none). */
int perf_thr_ran(struct pthr *th);
/* TH counts as having run at the next perf_thr_ran (its capture failed). */
void perf_thr_forget_run(struct pthr *th);
/* The registers TID (without events) went to sleep with, from its watch
 * ring, when it was not switched in since (sd_snap_opts.switch_regs; ARG
 * is the engine). 0 or a negative errno. */
int perf_switch_regs(void *arg, pid_t tid, struct user_regs_struct *regs);
/* Move TH's queued samples up to time AT into its latest sample. */
void perf_promote(struct sd_perf *p, struct pthr *th, uint64_t at);
/* Take the newest switch sample of TH from its overwritten ring. */
void perf_read_switch(struct sd_perf *p, struct pthr *th);
/* Close TH's events when it switches too often for them (see perf.c). */
void perf_switch_mode(struct sd_perf *p, struct pthr *th, uint64_t now);
/* The task-clock count of TH (its CPU time, ns). 0 or -1. */
int perf_thr_clock(const struct sd_perf *p, const struct pthr *th, uint64_t *v);

/* How a hot thread is shown at a tick (perf-hot.c). */
enum { HOT_NONE = 0, HOT_ASLEEP, HOT_CLOCK, HOT_STOP };
/* Read hot thread TH for the tick at NOW: HOT_ASLEEP (its sleep, read
 * without a stop and proven by its task clock, is in its slp_* fields),
 * HOT_CLOCK (on a CPU or waiting for one: its latest clock sample,
 * recent enough at NOW, the tick's time, stands) or HOT_STOP (neither: the tick's capture stops
 * it once). S is the tick's snapshot (its pool and unwinder). */
int perf_hot_read(struct sd_perf *p, struct sd_snapshot *s, struct pthr *th,
		  const struct sd_snap_opts *so, uint64_t now);
/* Show hot thread TH's proven sleep as ST of the tick's snapshot S. */
void perf_hot_compose(struct sd_snapshot *s, struct sd_thread *st, const struct pthr *th);
/* How old a hot thread's latest sample on a CPU may be to show it on a
 * CPU at a tick: 16 periods of its clock (4 ticks asked, the clock's
 * period being a quarter tick), or 4 ticks as the sampler delivers them
 * (TICK_GAP_NS, 0 when not known yet) when the budget slowed it. */
uint64_t perf_hot_max_age(uint64_t period_ns, uint64_t tick_gap_ns);

/* How many samples of TH's task-clock event the kernel dropped so far
 * (ring full): its event's lost count, or its LOST records. */
uint64_t perf_thr_lost(const struct sd_perf *p, const struct pthr *th);

#endif
