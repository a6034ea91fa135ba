// SPDX-License-Identifier: MIT
// The discover stage: what /proc says about a process and its threads,
// read before anything is stopped (threads, names, states, syscalls, maps).
#ifndef SD_PROCFS_H
#define SD_PROCFS_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "perf-regs.h"
#include "util.h"

/* One line of /proc/PID/maps. path is heap-owned by the array. */
struct sd_map {
	uint64_t start, end, offset;
	char perms[5];
	unsigned dev_major, dev_minor;
	unsigned long inode;
	char *path; /* "" for anonymous, "[stack]", "/usr/lib/... (deleted)" */
};

struct sd_maps {
	struct sd_map *v;
	size_t n, cap;
};

/* Parse the text of a maps file into MAPS (appended). Returns 0 or
 * -EINVAL on a malformed line (the lines before it are kept). */
int procfs_parse_maps(const char *text, struct sd_maps *maps);
int procfs_read_maps(pid_t pid, struct sd_maps *maps, struct sd_error *err);
void procfs_maps_release(struct sd_maps *maps);
/* The mapping holding ADDR, or NULL. Maps must be sorted (the kernel's are). */
const struct sd_map *procfs_maps_find(const struct sd_maps *maps, uint64_t addr);

/* Facts about a whole process. */
struct sd_procinfo {
	pid_t pid;
	char comm[64];
	char state;          /* R S D T t Z X I ... */
	pid_t ppid;
	pid_t tracer;        /* TracerPid, 0 if none */
	char tracer_comm[64];
	int kernel_thread;   /* PF_KTHREAD set */
	uid_t uid;
	long nthreads;
	char *exe;           /* readlink of /proc/PID/exe, heap, may be NULL */
};

/* State letter (and, each may be NULL, parent, flags and number of
 * threads) of process PID from /proc/PID/stat alone. Returns 0, or -ESRCH
 * with a message when there is no such process. */
int procfs_proc_stat(pid_t pid, char *state, pid_t *ppid, unsigned long *flags,
		     long *nthreads, struct sd_error *err);
/* Fill INFO for PID. Returns 0, or -ESRCH with a message when there is no
 * such process. */
int procfs_procinfo(pid_t pid, struct sd_procinfo *info, struct sd_error *err);
void procfs_procinfo_release(struct sd_procinfo *info);

/* Per-thread facts read from task/TID/{stat,comm,syscall,wchan,status}. */
struct sd_taskinfo {
	char comm[64];
	char state;
	int syscall_known;   /* the syscall file could be read */
	int running;         /* syscall file said "running" */
	long syscall_nr;     /* -1 blocked outside a syscall */
	uint64_t syscall_args[6];
	uint64_t sp, pc;     /* from the syscall file, 0 when running */
	char wchan[64];
	uint64_t vol_ctxsw, nonvol_ctxsw;
	uint64_t utime, stime; /* clock ticks */
	int cpu;               /* last CPU */
	unsigned long flags;   /* the kernel's PF_* flags (stat) */
};

/* An io_uring worker ("iou-wrk-*", "iou-sqp-*"): a kernel thread inside
 * the process, with no user-space registers or stack. */
#define PROCFS_PF_IO_WORKER 0x10

int procfs_taskinfo(pid_t pid, pid_t tid, struct sd_taskinfo *ti);
/* The same; LIGHT is 0 or a set of:
 *   PROCFS_LIGHT        read only stat and syscall (no wchan, no context
 *                       switch counts): what a profile sample needs;
 *   PROCFS_REGS_FOLLOW  registers will be read while frozen: skip the
 *                       syscall file of a sleeping (S) thread;
 *   PROCFS_SHOWN        only what a text dump shows: wchan for a thread
 *                       in D, no context switch counts. */
#define PROCFS_LIGHT 1
#define PROCFS_REGS_FOLLOW 2
#define PROCFS_SHOWN 4
int procfs_taskinfo_ex(pid_t pid, pid_t tid, struct sd_taskinfo *ti, int light);
/* Open task files kept between snapshots of one process, so that reading
 * them again is a pread each instead of open, read and close. */
struct procfs_taskcache;
struct procfs_taskcache *procfs_taskcache_new(void);
/* Close the files of threads not in TIDS (sorted): they exited. */
void procfs_taskcache_prune(struct procfs_taskcache *c, const pid_t *tids, size_t n);
void procfs_taskcache_free(struct procfs_taskcache *c);
/* procfs_taskinfo_ex with TASKDIR an open /proc/PID/task (or AT_FDCWD),
 * through cache C (NULL: none). */
int procfs_taskinfo_cached(struct procfs_taskcache *c, int taskdir, pid_t pid, pid_t tid,
			   struct sd_taskinfo *ti, int light);

/* A thread's scheduler counters: whether it ran between two readings.
 * From task/TID/schedstat (time on CPU in ns, times scheduled in), or,
 * where the kernel has no schedstat, the context switch counts of
 * task/TID/status (then ran_ns is 0 and the reader must also have seen
 * the thread off CPU after the second reading: see snap-capture.c); or,
 * for samples, the thread's task clock from a perf counting event kept
 * open in the cache (then ran_ns is that clock and switches 0). */
struct sd_counters {
	uint64_t ran_ns;   /* schedstat: sum of run time; task clock */
	uint64_t switches; /* schedstat: times scheduled in; else vol + nonvol */
	int from_status;   /* read from status (no schedstat) */
	int from_clock;    /* read from the task clock event */
	int from_ring;     /* switches is the head of the thread's ring of
			    * context-switch records: equal readings mean
			    * it was not scheduled in or out in between (not
			    * a time: the thread must be seen off CPU after
			    * the first reading) */
};

/* Bytes one scheduling of a thread (in, then out) writes to its ring of
 * switch records: a switch in, a sample of its registers, a switch out. */
#define PROCFS_RING_CYCLE (8 + PERF_REGS_SAMPLE_SIZE + 8)

/* Where procfs_task_counters reads from. */
enum procfs_counter_src {
	PROCFS_CNT_SCHEDSTAT = 0, /* schedstat, else status */
	PROCFS_CNT_STATUS,        /* status even where schedstat exists (what a
				   * kernel without it gets) */
	PROCFS_CNT_CLOCK,         /* the head of a ring of context-switch
				   * records (a load, no system call), else the
				   * task clock (a read of an open perf counter:
				   * a third of a schedstat read), else
				   * schedstat; needs a cache to keep them in */
	PROCFS_CNT_TASKCLOCK,     /* the task clock, else schedstat */
};

/* Read the counters of TID through cache C (NULL: uncached) relative to
 * TASKDIR (an open /proc/PID/task or AT_FDCWD), from SRC. A task clock,
 * once the kernel refuses one, is not asked for again by C. Returns 0 or
 * a negative errno (the thread exited, or nothing is readable). */
int procfs_task_counters(struct procfs_taskcache *c, int taskdir, pid_t pid, pid_t tid,
			 enum procfs_counter_src src, struct sd_counters *out);
/* The user registers TID went to sleep with, from its ring of switch
 * records in C (PROCFS_CNT_CLOCK readings opened it): the sample of its
 * last switch out, provided the ring's head is still HEAD (a reading
 * taken while it was off CPU: it has not been scheduled since) and no
 * switch in came after that sample. orig_rax is -1 (not sampled).
 * Returns 0, -EAGAIN (scheduled since HEAD), or -ENODATA (no ring, no
 * such sample: asleep since before the ring was opened). */
int procfs_task_switch_regs(struct procfs_taskcache *c, pid_t tid, uint64_t head,
			    struct user_regs_struct *regs);
/* Read only task/TID/syscall of TID into TI (its syscall_*, running, sp
 * and pc fields; the rest untouched). Returns 0 or a negative errno. */
int procfs_task_syscall(struct procfs_taskcache *c, int taskdir, pid_t pid, pid_t tid,
			struct sd_taskinfo *ti);
/* A thread over its life so far: seconds since it started, times it was
 * scheduled in a second (schedstat's count over that time) and the share
 * of a CPU it ran. */
struct procfs_life {
	double secs, switches_per_s, cpu_share;
};
/* TID's life so far (through cache C, which may be NULL). 0 or a
 * negative errno (-ENODATA: no schedstat). */
int procfs_task_life(struct procfs_taskcache *c, int taskdir, pid_t pid, pid_t tid,
		     struct procfs_life *out);
/* The waits TID went into so far (its voluntary context switches, from
 * task/TID/status; a preemption is not one). 0 or a negative errno. */
int procfs_task_waits(pid_t pid, pid_t tid, uint64_t *out);
/* Read task/TID/comm of TID into OUT (SIZE bytes, no newline). */
int procfs_task_comm(struct procfs_taskcache *c, int taskdir, pid_t pid, pid_t tid, char *out,
		     size_t size);
/* Read task/TID/stat (state, comm, times) and wchan of TID into TI. */
int procfs_task_state(struct procfs_taskcache *c, int taskdir, pid_t pid, pid_t tid,
		      struct sd_taskinfo *ti);
/* Parse a schedstat line ("RUN_NS WAIT_NS COUNT"). 0 or -EINVAL. */
int procfs_parse_schedstat(const char *text, struct sd_counters *out);

/* List the TIDs in /proc/PID/task into a heap array, sorted. */
int procfs_list_tids(pid_t pid, pid_t **tids, size_t *n, struct sd_error *err);

/* One thread as /proc shows it between snapshots, for the recorder's
 * conditions (triggers.h). */
struct sd_tobs {
	pid_t tid;
	char state;
	int running; /* the syscall file says "running" */
	long nr;     /* syscall, -1 when none */
	uint64_t arg0;
	int futex;   /* asleep in a futex wait */
	uint64_t vol, nonvol;
};

/* Observe every thread of PID: state, syscall, whether it sleeps in a
 * futex, and with SWITCHES the context switch counts. Threads that vanish
 * meanwhile are skipped. Returns the count and a heap array in *OUT (NULL
 * when the process is gone). */
size_t procfs_observe(pid_t pid, int switches, struct sd_tobs **out);

/* utime + stime of process PID in clock ticks. Returns 0 or a negative
 * errno. */
int procfs_cpu_ticks(pid_t pid, uint64_t *ticks);

/* Parse a /proc/TID/syscall line into TI. Exposed for tests and fuzzing. */
int procfs_parse_syscall(const char *text, struct sd_taskinfo *ti);

/* Parse the content of a stat file (after the comm) into TI. */
int procfs_parse_stat(const char *text, char *state, pid_t *ppid,
		      unsigned long *flags, uint64_t *utime, uint64_t *stime,
		      int *cpu);

/* Find processes whose comm or exe basename equals NAME. Returns the count
 * and a heap array of PIDs (not including our own). */
size_t procfs_pids_by_name(const char *name, pid_t **pids);

/* Name of syscall NR on x86_64 (common ones), or NULL. */
const char *procfs_syscall_name(long nr);

#endif
