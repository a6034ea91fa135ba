// SPDX-License-Identifier: MIT
// The perf-events capture engine: the kernel samples the registers and the
// top of the user stack of each thread of a target (a task-clock sample
// while it runs, a context-switch sample when it stops running), without
// stopping it; stackdump drains the ring buffers later and composes one
// wall-clock snapshot per tick from each thread's latest sample.
#ifndef SD_PERF_H
#define SD_PERF_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot.h"
#include "util.h"

struct sd_target;
struct sd_snap_opts;
struct sd_perf;

struct sd_perf_opts {
	uint64_t period_ns;  /* task-clock sample period (CPU time of the thread;
			      * the sampler asks a quarter of the tick) */
	size_t stack_copy;   /* bytes of user stack per sample (default 16 KiB) */
	size_t ring_kb;	     /* task-clock ring buffer per thread with events
			      * (default 128 KiB while fewer than 256 threads
			      * have theirs, 64 KiB after), rounded up to a
			      * power of two pages; switch samples have a ring
			      * of three samples each */
	int no_cpu_clock;    /* no per-CPU clock: hot threads keep a sampling
			      * task clock each (STACKDUMP_PERF_CPU_CLOCK=off) */
};

/* Counters of one session (or summed over several). */
struct sd_perf_stats {
	uint64_t clock_samples;  /* task-clock samples read */
	uint64_t switch_samples; /* context-switch samples read */
	uint64_t lost;           /* samples the kernel dropped (ring full) */
	uint64_t stale;          /* thread stacks a tick counted again from an
				  * earlier tick: on a CPU at its latest
				  * sample, and not one sample since (the task
				  * clock samples 4 times a tick): what the
				  * drops (or throttling) cost the profile */
	uint64_t throttled;      /* times the kernel throttled an event */
	uint64_t seeded;	 /* stacks captured by ptrace (stop only what
				  * runs): threads without events, and threads
				  * with no sample yet */
	uint64_t armed;		 /* times a thread's events were opened */
	uint64_t arm_failed;	 /* ... and refused for one thread */
	uint64_t rested;	 /* times a thread asleep for a while had its
				  * events closed */
	uint64_t watch_failed;	 /* threads without events whose switch
				  * records were refused (read at every tick) */
	uint64_t unwinds;        /* samples unwound (the rest reused a stack) */
	uint64_t threads_opened, threads_closed;
	uint64_t drains;         /* ring buffer reads */
	uint64_t hot;            /* threads whose switch event was closed:
				  * they switch too often (perf_switch_mode) */
	uint64_t hot_asleep;	 /* ticks that read a hot thread asleep
				  * without a stop (its task clock still) */
	uint64_t hot_kept;	 /* ... that found it still in that sleep */
	uint64_t hot_clock;	 /* ... that used its latest task-clock sample
				  * (on a CPU, or woken while read) */
	uint64_t hot_stopped;	 /* ... that had neither and stopped it */
	uint64_t cpus;		 /* CPUs with a clock event of their own
				  * (hot threads' samples; 0: none) */
	uint64_t cpu_samples;	 /* ... samples of a hot thread taken (its
				  * newest at a read of the ring) */
	uint64_t cpu_older;	 /* ... older ones of the same thread, not
				  * copied */
	uint64_t cpu_passed;	 /* ... samples of anything else, not read */
	uint64_t hot_at_start;	 /* threads hot from their first events: they
				  * had switched that often all their life */
};

/* Start sampling every thread of T (events on each thread, enabled at once).
 * O may be NULL for defaults. The session keeps T (not owned; T must
 * outlive it). NULL and ERR on failure: ERR's code is the errno of
 * perf_event_open (EACCES, EPERM, ENOSYS, ENOENT...) so callers can fall
 * back. Nothing of the target is stopped or changed but the events. */
struct sd_perf *perf_new(struct sd_target *t, const struct sd_perf_opts *o, struct sd_error *err);
/* Close every event and ring buffer. NULL does nothing. */
void perf_free(struct sd_perf *p);
/* Close every thread's events and rings now; the statistics (lost
 * samples included) stay for perf_stats_add(). */
void perf_stop(struct sd_perf *p);

/* Read every ring buffer of P, keeping each thread's latest sample. Cheap
 * when nothing arrived. */
void perf_drain(struct sd_perf *p);

/* One descriptor (an epoll set of every thread's task-clock event) that
 * polls readable when a ring buffer is filling; -1 when there is none. */
int perf_poll_fd(const struct sd_perf *p);
/* Drain the rings the poll descriptor says are filling (it polled
 * readable): cheap, and only those threads are looked at. */
void perf_drain_ready(struct sd_perf *p);

/* One tick at time AT_NS (CLOCK_MONOTONIC ns; 0: now): drain, pick up
 * new threads and drop those gone, and compose a snapshot of every thread
 * (unwound; symbolized unless SO says no_symbols) from its latest sample
 * taken at or before AT_NS, so that a tick composed late (stackdump was
 * not scheduled in time) still shows each thread as it was at AT_NS, as
 * far as the samples kept allow. Threads with no sample yet get one from a
 * ptrace snapshot of just them, taken with SO. Returns the snapshot (owned
 * by the caller) or NULL and ERR (the process exited, ESRCH). The
 * snapshot's capture_us is the drain and compose time; pause_us is that
 * of the ptrace seed, if any. */
struct sd_snapshot *perf_tick(struct sd_perf *p, const struct sd_snap_opts *so, uint64_t at_ns,
			      struct sd_error *err);

/* The CPUs the per-CPU clock samples (0: none, refused or turned off):
 * hot threads are then sampled without a timer at each of their
 * switches. */
size_t perf_cpu_clock(const struct sd_perf *p);

/* Add P's counters to *ST. */
void perf_stats_add(const struct sd_perf *p, struct sd_perf_stats *st);

#endif
