// SPDX-License-Identifier: MIT
// A target: one process we look at, with its memory map, its modules (ELF
// images and load biases), and the unwind and symbol sessions kept across
// snapshots. Attaching to a target is a handle, not a stop.
#ifndef SD_TARGET_H
#define SD_TARGET_H

#include <stdint.h>
#include <sys/types.h>

#include "elfcache.h"
#include "procfs.h"
#include "snapshot.h"
#include "space.h"
#include "util.h"

struct sd_unwinder;
struct sd_symbols;
struct sd_core;

struct sd_target {
	pid_t pid;
	struct sd_procinfo info;
	struct sd_space space; /* maps and modules: what unwind and symbols see */
	uint64_t maps_hash;
	unsigned generation;  /* bumped when the modules change (= space.generation) */
	struct sd_unwinder *unw;
	struct sd_symbols *sym;
	uint64_t snapshots;   /* taken so far */
	/* Thread names for light_discover 2, sorted by tid. */
	struct sd_tname {
		pid_t tid;
		char comm[16];
		uint64_t read_ns; /* when it was read */
		int ran;	  /* the thread ran since */
	} *names;
	size_t nnames, names_cap;
	size_t names_hint;	  /* where cached_name() looks first */
	uint64_t names_ns;	  /* when the old ones were last dropped */
	size_t last_stack_bytes;  /* copied by the previous snapshot */
	struct procfs_taskcache *taskcache; /* with keep_files */
	uint64_t maps_ns;         /* when the maps were read */
	void *spare_arena;        /* the previous snapshot's stack arena */
	size_t spare_arena_size;
	/* Sampling reuse: each thread read asleep by the last snapshot, its
	 * counters after that snapshot and its frames (sorted by tid). */
	struct sd_reuse *reuse;
	size_t nreuse, reuse_cap;
	size_t reuse_hint;	      /* where reuse_find() looks first */
	struct sd_reuse *reuse_spare; /* the last vector but one, for the next */
	size_t reuse_spare_cap;
	struct tplan *plans;	    /* the working state of the last snapshot, kept */
	size_t plans_cap;	    /* for the next one (sampling: no page faults) */
	struct strpool *reuse_pool; /* strings of the reused frames */
	uint64_t token_seq;	    /* the last frames token handed out (both engines) */
	struct sd_core *core;     /* a core file's target (pid is the crashed
				   * process's, space.pid 0: no /proc), or NULL */
	char *sysroot;            /* where a core's files are looked for first */
	char *core_notes;         /* modules of the core not matched, lines */
	pid_t *last_tids;         /* the last listing of task/ (samples) */
	size_t nlast_tids;
	uint64_t tids_ns;         /* when it was read */
	struct sd_goruntime *goruntime; /* a Go program's runtime layout (goroutines.h) */
	struct sd_tokioruntime *tokioruntime; /* a Tokio program's layout (tokio.h) */
};

/* How threads are captured (see DESIGN.md, capture kinds). */
enum sd_capture_mode {
	SD_CAPMODE_AUTO = 0, /* freeze only what runs; read sleepers without
			      * a stop, proven by their scheduler counters */
	SD_CAPMODE_FREEZE,   /* stop every thread (the all-frozen mode) */
	SD_CAPMODE_CTXSW,    /* as AUTO, with the context switch counts in
			      * place of schedstat (what a kernel without
			      * schedstat gets) */
	SD_CAPMODE_SCHEDSTAT, /* as AUTO, samples proven by schedstat in place
			       * of context-switch records (what a host that
			       * refuses perf events gets) */
	SD_CAPMODE_CLOCK,     /* as AUTO, samples proven by the task clock
			       * (what a host that refuses the records' ring
			       * gets, e.g. past perf_event_mlock_kb) */
};

/* The longest a snapshot waits for a running thread to stop, once it has
 * the others, before it copies and releases them: a thread that does not
 * stop by then is detached when it does, between snapshots. */
#define SD_STOP_BUDGET_MS 40

/* Options of one snapshot. */
struct sd_snap_opts {
	int per_thread;        /* freeze one thread at a time */
	unsigned max_frames;   /* default 256; 0 = unlimited */
	size_t max_stack;      /* stack window cap in bytes (default 1 MiB) */
	size_t max_stack_total; /* cap on all threads' windows together
				 * (default 256 MiB): more threads than it
				 * holds get shorter windows */
	unsigned timeout_ms;   /* bound on waiting for threads to stop */
	int no_inline;         /* do not expand inline frames */
	int no_source;         /* skip file:line lookup */
	int no_symbols;        /* unwind only (profiles symbolize later) */
	const pid_t *tids;     /* only these threads (NULL: all) */
	size_t ntids;
	int tids_listed;       /* tids are threads of the process, listed by
				* the caller in rising order: the task list
				* is not read again (one gone is skipped) */
	int tids_internal;     /* tids are an engine's own pick, not the
				* user's selection: what the threads left out
				* wait on and who holds it is not looked for */
	const char *name_glob; /* only threads whose name matches */
	int keep_capture;      /* keep registers and stacks in the snapshot */
	int keep_files;        /* keep each thread's /proc files open for the
				* next snapshot (repeated snapshots) */
	int light_discover;    /* 1: read only stat and syscall of each thread
				* (no wchan, no context switch counts);
				* 2: read nothing per thread: names come from
				* a cache refreshed each second, the state
				* from the registers (profile samples) */
	int text_only;         /* a text dump: read wchan only for threads in D
				* (the only ones it is shown for) and no
				* context switch counts (never shown) */
	enum sd_capture_mode capture; /* default AUTO */
	int goroutines;        /* a Go program: read its goroutines too (and a
				* Tokio program's tasks) */
	int tokio;             /* a Tokio program: read its tasks (without
				* goroutines) */
	int reuse;             /* samples: a thread that did not run since
				* the last snapshot is not read again */
	/* The registers TID went to sleep with, from the caller's own ring of
	 * its switches, when it was not switched in since that sample (0, or
	 * a negative errno): a sleeper whose unwind needs more registers than
	 * /proc gives is then not stopped for them. NULL: none. */
	int (*switch_regs)(void *arg, pid_t tid, struct user_regs_struct *regs);
	void *switch_arg;
	/* Called once the sleeping threads were copied and before their
	 * counters are read again (tests: make a thread run in between). */
	void (*between_readings)(void *arg);
	void *between_arg;
};

void snap_opts_init(struct sd_snap_opts *o);

/* Check PID can be looked at (exists, not a kernel thread, not a zombie,
 * not ourselves) and make a target for it. Nothing is stopped. NULL and
 * ERR (code ESRCH, EINVAL, EPERM...) on failure. */
struct sd_target *target_new(pid_t pid, struct sd_error *err);
/* A target for the ELF core file PATH (plain, or compressed with zstd,
 * lz4 or xz): its threads, memory and maps from the core, its modules' files
 * looked for under SYSROOT (may be NULL) first and kept only when their
 * build-id matches the core's. target_snapshot() of it reads the core
 * (nothing is attached) and runs the same unwind, symbolize and analyze
 * stages as for a process. NULL and ERR on failure (EINVAL: not a core,
 * another architecture, truncated, notes out of bounds). */
struct sd_target *target_open_core(const char *path, const char *sysroot, struct sd_error *err);
/* Is PATH an ELF core file (or a compressed file, which only opening
 * can tell)? Reads its first bytes, safely; 0 when it cannot be read. */
int target_is_core_file(const char *path);

/* Release the target and its sessions. NULL does nothing. */
void target_free(struct sd_target *t);

/* Re-read maps and update modules if they changed. */
int target_refresh(struct sd_target *t, struct sd_error *err);

/* The module holding ADDR, or NULL (space_module_at on T's space). */
struct sd_tmod *target_module_at(struct sd_target *t, uint64_t addr);

/* Take one snapshot: discover, freeze, capture, thaw, unwind, symbolize,
 * analyze. Returns a snapshot (owned by the caller) or NULL with ERR.
 * A snapshot with some threads unreadable has ->partial set. */
struct sd_snapshot *target_snapshot(struct sd_target *t, const struct sd_snap_opts *o,
				    struct sd_error *err);
/* The goroutines and tasks of the runtimes S's process runs (with
 * O->goroutines or O->tokio), read into S: for a snapshot made another
 * way than target_snapshot (perf events), whose threads are unwound. */
void target_runtimes(struct sd_target *t, const struct sd_snap_opts *o, struct sd_snapshot *s);

/* Close the thread files and rings kept open for repeated snapshots
 * (they are opened again when needed). */
void target_release_files(struct sd_target *t);

/* A sample S of T (profile, top): what a Tokio program's threads poll
 * now, read into S's runtimes (tokio.h: workers only, no task read, no
 * thread stopped). Nothing for a program without Tokio, or a core. */
void target_tokio_workers(struct sd_target *t, struct sd_snapshot *s);

/* Is the process still there (and not a zombie)? */
int target_alive(const struct sd_target *t);

/* The name (comm) of thread TID of T, from a cache: read again a second
 * after it was read if the thread ran since (RAN: it did since the last
 * call), else after ten seconds, as of NOW (sd_now_ns(); a caller naming
 * many threads reads the clock once). NULL when the thread is gone. The
 * string lives until the next call. */
const char *target_thread_name(struct sd_target *t, pid_t tid, int ran, uint64_t now);
/* Fill S's module list from T's modules (for snapshots composed outside
 * target_snapshot); does nothing when S has one. */
void target_snapshot_modules(struct sd_target *t, struct sd_snapshot *s);

/* A thread that /proc shows in restart_syscall continues a wait
 * that a stop interrupted (ours, or a signal's): the name of that wait
 * ("clock_nanosleep", "epoll_wait", "poll", "pselect6", "futex"), from
 * the libc wrapper at its user PC (symbolized with T's symbols); NULL when
 * the wrapper is not one of those. Static storage. */
const char *target_restarted(struct sd_target *t, uint64_t pc);

#endif
