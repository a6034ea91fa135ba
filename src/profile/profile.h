// SPDX-License-Identifier: MIT
// The aggregate stage: many snapshots folded into a wall-clock profile.
// Identical stacks (by function and inline chain, or by address) are merged
// into counts with the threads that showed them and their on/off-CPU
// split; lock waits are summed per lock. Also the renderers of profiles
// (top, tree, folded, JSON, SVG flame graphs, pprof) and the diff of two.
#ifndef SD_PROFILE_H
#define SD_PROFILE_H

#include <stdint.h>
#include <sys/types.h>

#include "hashmap.h"
#include "jsonw.h"
#include "snapshot.h"
#include "strpool.h"
#include "util.h"

struct sd_target;

/* The signature of a target's modules at one module generation. */
struct sd_pmodsig {
	const struct sd_target *t;
	unsigned generation;
	uint64_t sig;
};

enum sd_cpu_filter {
	SD_CPU_ALL = 0,
	SD_CPU_ON,  /* only samples of threads on a CPU (state R) */
	SD_CPU_OFF, /* only samples of threads off CPU */
};

struct sd_profile_opts {
	int by_address;     /* merge by address, not by function chain */
	int group_threads;  /* "worker-1".."worker-N" count as "worker-*" */
	int no_idle;        /* drop samples of threads idling (epoll_wait...) */
	enum sd_cpu_filter cpu;
	int locks;          /* keep per-lock waiter statistics */
	int no_inline;      /* symbolize without inline frames */
	int no_source;      /* symbolize without file:line */
};

/* One frame of a merged stack; strings live in the profile's pool. pc is
 * the runtime address of the first sample that made the stack (0 when
 * loaded from a file that has none). */
struct sd_pframe {
	const char *name;     /* as shown and merged by: profile_frame_name() */
	const char *function; /* NULL when unknown */
	const char *module;
	const char *build_id;
	const char *file;
	uint64_t pc, offset, symoff;
	int line;
	unsigned flags;       /* SD_FRAME_* */
};

/* A thread (or, with group_threads, a family of threads) seen in a stack. */
struct sd_pthread {
	pid_t pid, tid;       /* tid 0 for a folded family */
	const char *name;     /* "worker-*" for a family */
	uint64_t count, on_cpu;
	size_t ntids;         /* threads in the family (1 otherwise) */
	pid_t *tids;          /* a family's tids (heap), NULL otherwise */
	size_t tidcap;
};

/* What the threads of a stack were doing (running, futex, epoll_wait...). */
struct sd_pstate {
	const char *what;
	uint64_t count;
};

#define SD_PSTACK_STATES 6

/* A merged stack. frames are innermost first, as in snapshots. */
struct sd_pstack {
	struct sd_pframe *frames;
	size_t nframes;
	uint64_t count, on_cpu;
	struct sd_pthread *threads;
	size_t nthreads, tcap;
	size_t next_thread;   /* where the next sample's thread likely is */
	struct sd_pstate states[SD_PSTACK_STATES];
	pid_t pid;            /* process of the first sample (for addresses) */
	uint64_t key_hash;
	uint64_t *key;        /* words identifying the stack */
	size_t nkey;
	double value_a;       /* diff: count in the first profile, normalized */
	uint64_t held;        /* samples in which its thread held a lock
			       * others of the sample waited on */
	const char *hold_note; /* the last such: "holds mutex <g_lock>, 50
				* waiters" (pool string), or NULL */
};

/* One holder stack of a lock, while others waited. */
struct sd_pholder {
	ssize_t stack;        /* index into stacks, -1: holder unknown */
	const char *name;     /* holder thread name, or the reason it is unknown */
	uint64_t count;
};

/* One lock over the run. */
struct sd_plock {
	pid_t pid;
	uint64_t address;
	enum sd_wait_kind kind;
	const char *symbol;
	uint64_t contended;   /* samples with at least one waiter */
	uint64_t waiters;     /* waiters summed over samples */
	uint64_t max_waiters;
	struct sd_pholder *holders;
	size_t nholders, hcap;
};

/* One process of the profile, with the modules its samples came from. */
struct sd_pproc {
	pid_t pid;
	const char *comm;
	uint64_t samples;     /* snapshots of this process */
	struct sd_module *modules;
	size_t nmodules, modcap;
	int exited;
};

struct sd_profile {
	struct sd_profile_opts opts;
	struct strpool *pool;  /* owns every string of the profile */
	struct sd_pstack *stacks;
	size_t nstacks, scap;
	struct sd_pproc *procs;
	size_t nprocs, pcap;
	struct sd_plock *locks;
	size_t nlocks, lcap;

	uint64_t samples;       /* sampling ticks */
	uint64_t thread_samples; /* thread stacks counted */
	uint64_t on_cpu;        /* of which on a CPU */
	uint64_t filtered;      /* thread stacks dropped by filters */
	uint64_t idle;          /* of which idle (--no-idle) */
	uint64_t lost;          /* threads that could not be read */
	uint64_t io_workers;    /* io_uring workers met (kernel threads of
				 * the process: no user stack, never stopped) */
	const char *engine;     /* capture engine ("perf", "ptrace"), pool
				 * string; NULL when not known (old files) */
	const char *engine_why;  /* what auto chose and why (pool), or NULL */
	uint64_t lost_samples;  /* perf: samples the kernel dropped (ring full) */
	uint64_t stale_stacks;  /* perf: thread stacks a tick counted again from
				 * an earlier tick for want of a sample (what
				 * the drops cost: often nothing, the task
				 * clock samples 4 times a tick) */
	uint64_t throttled;     /* perf: times the kernel throttled sampling */
	uint64_t interval_us;   /* planned interval between samples */
	uint64_t duration_us;   /* wall time sampled */
	double rate_asked;      /* Hz asked (0: not known, files from before) */
	const char *rate_note;  /* why fewer samples were taken than asked (static), or NULL */
	double start_time;      /* wall clock of the first sample */
	uint64_t capture_us, unwind_us, symbolize_us; /* summed over samples */
	uint64_t symbolize_cpu_ns; /* CPU of the first symbolization of each stack,
				    * and of the modules indexed meanwhile */
	uint64_t max_pause_us;
	uint64_t pause_us; /* summed over the samples */
	/* Threads by capture kind, summed over samples (see sd_snapshot). */
	uint64_t nfrozen, nasleep, nreused, nretried, nregstops, nrbp_inferred;
	const char *proof; /* the last snapshot's proof of its sleepers (static) */
	uint64_t total_a;       /* diff: samples of the first profile */

	/* caches: raw stacks seen before and their stack index */
	struct hashmap raw;     /* of struct rawslot (profile.c) */
	struct hashmap memo;    /* of struct memoslot: each thread's last raw
				 * stack, by its frames token (profile.c) */
	struct memoslot *memo_at; /* the same by the thread's place in the
				   * last snapshot: looked at first */
	size_t nmemo_at;
	uint64_t raw_lookups, raw_hits;
	struct sd_pmodsig *sigs;    /* per target: its modules' signature */
	size_t nsigs, sigcap;
	struct hashmap index;   /* stacks by key: indices into stacks */
	int sorted;             /* stacks are in count order */
};

void profile_opts_init(struct sd_profile_opts *o);

/* A new, empty profile with options O (copied; NULL for defaults). */
struct sd_profile *profile_new(const struct sd_profile_opts *o);
/* NULL does nothing. */
void profile_free(struct sd_profile *p);

/* Fold one snapshot into P. With T non-NULL, S's frames are raw (taken with
 * no_symbols); new stacks are symbolized through T's symbols session once
 * and remembered, so later samples of the same addresses cost a hash. With
 * T NULL, S's frames are used as they are. GROUPS, if not NULL, receives
 * for each thread of S the index of its stack in P (or -1). Indices stay
 * valid until profile_sort(). */
void profile_add_snapshot(struct sd_profile *p, struct sd_target *t, struct sd_snapshot *s,
			  ssize_t *groups);

/* Add COUNT samples (ON_CPU of them on a CPU) of a stack given as frames
 * (innermost first; strings are copied) for thread TID "NAME" of PID, and,
 * when STATE is not NULL, with that state. Returns the stack index. For
 * loaders and tests; filters do not apply. */
ssize_t profile_add_stack(struct sd_profile *p, const struct sd_pframe *frames, size_t n,
			  uint64_t count, uint64_t on_cpu, pid_t pid, pid_t tid, const char *name,
			  const char *state);

/* The process of S in P (added when new, its comm interned), and S's
 * modules added to its own (those it did not have). For the adders of
 * samples beside profile_add_snapshot. */
struct sd_pproc *profile_proc_get(struct sd_profile *p, struct sd_snapshot *s);
void profile_proc_modules(struct sd_profile *p, struct sd_pproc *pr, const struct sd_snapshot *s);
/* Fold the goroutines of S (a Go program's snapshot with its goroutines
 * read and symbolized) into P as one sample of each goroutine's stack
 * (profile-go.c): thread "goroutines" (no tid), the state its wait reason
 * or status, on a CPU when it runs. P's CPU filter applies; goroutines
 * without frames are counted lost. The caller counts the tick
 * (p->samples). */
void profile_add_goroutines(struct sd_profile *p, struct sd_snapshot *s);
/* Sort stacks by count, largest first (stack indices change; lock holder
 * indices are remapped). */
void profile_sort(struct sd_profile *p);

/* Samples counted (after filters). */
static inline uint64_t profile_total(const struct sd_profile *p)
{
	return p->thread_samples;
}

/* The name a frame is shown and merged by: "function" (by address:
 * "function+0xOFF"), "[module]" when the function is unknown, or
 * "[unknown]". Returns a pool string of P. */
const char *profile_frame_name(struct sd_profile *p, const struct sd_pframe *f);

/* The family name of a thread name: runs of digits become "*". Writes into
 * BUF of SIZE bytes and returns BUF. */
char *profile_thread_family(const char *name, char *buf, size_t size);

/* Is a thread in this state and stack idle (waiting for work: epoll_wait,
 * poll, accept, a condvar, sleep...) rather than busy or contending? */
int profile_thread_idle(const struct sd_thread *th, const struct sd_pframe *frames, size_t n);

/* Load a profile saved as folded stacks ("a;b;c 12" per line) or as the
 * JSON of format_profile_json(). NULL and ERR on failure. */
struct sd_profile *profile_load(const char *path, struct sd_error *err);
/* The same from text in memory; NAME names the source in messages. */
struct sd_profile *profile_parse(const char *text, size_t len, const char *name,
				 struct sd_error *err);

/* A call tree (flame graph) built from a profile: root is "all". */
struct sd_flame {
	const char *name;       /* pool string of the profile */
	uint64_t value;         /* inclusive samples */
	uint64_t self;
	uint64_t on_cpu;        /* inclusive on-CPU samples */
	double delta;           /* diff: inclusive (B - A) in samples */
	uint64_t held;          /* inclusive samples of a lock's holder */
	const char *hold_note;  /* what it held (a stack's hold_note) */
	struct sd_flame *child, *next; /* children sorted by name */
	size_t nchild;
};

/* The tree of P (by frame names, root first). Free with profile_flame_free. */
struct sd_flame *profile_flame(struct sd_profile *p);
void profile_flame_free(struct sd_flame *f);

/* The diff of two profiles: a profile whose stacks are those of B and A,
 * with count = samples in B and value_a = samples in A scaled to B's
 * total. */
struct sd_profile *profile_diff(struct sd_profile *a, struct sd_profile *b);

#endif
