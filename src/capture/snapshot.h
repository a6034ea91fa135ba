// SPDX-License-Identifier: MIT
// The snapshot: what one look at a process produced. The pipeline
// (discover, freeze, capture, thaw, unwind, symbolize, analyze) fills it;
// renderers, lock analysis, profiles and the saved format read it.
#ifndef SD_SNAPSHOT_H
#define SD_SNAPSHOT_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "procfs.h"
#include "strpool.h"
#include "util.h"

enum {
	SD_FRAME_INLINED = 1 << 0,  /* an inline frame: same pc as the next */
	SD_FRAME_SIGNAL = 1 << 1,   /* the signal trampoline (sigreturn) */
	SD_FRAME_EXACT = 1 << 2,    /* pc is exact (frame 0, after a signal) */
	SD_FRAME_FP = 1 << 3,       /* found without CFI, by frame pointer */
	SD_FRAME_DEBUGINFO = 1 << 4, /* function name came from DWARF */
};

/* One frame. Strings point into the snapshot's pool (or are NULL when
 * unknown). offset is relative to the module's load bias (the address in
 * the ELF file's own address space). */
struct sd_frame {
	uint64_t pc;
	uint64_t sp;
	unsigned flags;
	const char *function;
	const char *module;   /* basename of the module, e.g. "libc.so.6" */
	const char *build_id; /* hex, or NULL */
	uint64_t offset;
	uint64_t symoff;      /* offset from the function's start, if known */
	const char *file;
	int line;
	/* The callee-saved registers rbx, rbp, r12..r15 as this frame sees
	 * them (the unwinder's values for it; 0 where not known, e.g. a loaded
	 * snapshot): a lock's address in one of them is a variable of this
	 * frame, or of an inner one that merely preserved the register. */
	uint64_t csr[6];
};

/* Frames shared read-only by the snapshots that count a stack again (a
 * sleeper reused, a perf sample unchanged) and the entry that keeps it
 * for the next one; freed with its last reference. Only raw frames (no
 * names: those live in a snapshot's pool) are shared. Snapshots are
 * built and freed on one thread: the count is not atomic. */
struct sd_frameset {
	unsigned refs;
	size_t n;
	struct sd_frame f[];
};

/* A frameset of a copy of the N frames F, one reference. */
struct sd_frameset *frameset_new(const struct sd_frame *f, size_t n);
void frameset_unref(struct sd_frameset *fs);

/* Lock words and memory read while frozen, for lock analysis: the bytes
 * [addr, addr + len) of the target, a window around a futex word wide
 * enough for the pthread object holding it (a condvar starts up to 44
 * bytes below its futex word, an rwlock ends up to 56 bytes above). */
#define SD_LOCKMEM_BELOW 48
#define SD_LOCKMEM_ABOVE 80
struct sd_lockmem {
	uint64_t addr;
	uint32_t len;
	uint8_t bytes[SD_LOCKMEM_BELOW + SD_LOCKMEM_ABOVE];
	/* Which bytes lock analysis read (bit I of used[I / 64]: bytes[I]):
	 * only those are saved, never the memory around them (a password
	 * next to a mutex). */
	uint64_t used[(SD_LOCKMEM_BELOW + SD_LOCKMEM_ABOVE + 63) / 64];
};

enum sd_wait_kind {
	SD_WAIT_NONE = 0,
	SD_WAIT_RUNNING,
	SD_WAIT_RUNNABLE,
	SD_WAIT_SYSCALL,  /* blocked in a syscall that is not a lock */
	SD_WAIT_DISK,     /* D state */
	SD_WAIT_STOPPED,
	SD_WAIT_ZOMBIE,
	SD_WAIT_MUTEX,
	SD_WAIT_RWLOCK_READ,
	SD_WAIT_RWLOCK_WRITE,
	SD_WAIT_CONDVAR,
	SD_WAIT_SEMAPHORE,
	SD_WAIT_JOIN,
	SD_WAIT_RUST_MUTEX,
	SD_WAIT_RUST_RWLOCK,
	SD_WAIT_RUST_CONDVAR,
	SD_WAIT_IDLE,     /* a language runtime idling (Go's notes, JVM workers) */
	SD_WAIT_MONITOR,  /* entering a Java monitor (synchronized) */
	SD_WAIT_FUTEX,    /* a futex wait we could not name */
	SD_WAIT__COUNT
};

/* Where a lock's owner comes from: the lock memory records it (a fact), or
 * the owner's frozen stack holds a reference to the lock (an inference). */
enum sd_evidence {
	SD_EVIDENCE_NONE = 0,
	SD_EVIDENCE_MEMORY,
	SD_EVIDENCE_STACK,
};

/* What a thread waits for; filled by lock analysis. owner is a TID, 0 when
 * unknown; owner_known says the evidence named it, owner_evidence which
 * evidence; owner_frame is the frame of the owner that holds a reference
 * to the lock (an index into its frames), -1 when none was found. */
struct sd_wait {
	enum sd_wait_kind kind;
	uint64_t address;
	const char *symbol;  /* data symbol of the lock, pool string or NULL */
	pid_t owner;
	int owner_known;
	enum sd_evidence owner_evidence;
	int owner_frame;
	const char *note;    /* why no owner, or a detail; pool string */
	const char *subkind; /* "normal", "recursive", "robust", "pi" ... */
};

/* A lock a thread holds, as jstack's "- locked" lines: recorded by the lock
 * (evidence memory) or inferred from a reference to it in this thread's
 * live stack or registers (evidence stack). frame indexes the thread's
 * frames, -1 when the reference was not found in any frame. */
struct sd_hold {
	enum sd_wait_kind kind; /* the kind the waiters wait with */
	uint64_t address;
	const char *symbol;     /* pool string or NULL */
	const char *mode;       /* "read", "write" or NULL */
	enum sd_evidence evidence;
	int frame;
	size_t ncandidates;     /* > 1: one of that many candidates, not a holder for sure */
};

enum sd_thread_status {
	SD_THREAD_OK = 0,
	SD_THREAD_EXITED,     /* went away during the snapshot */
	SD_THREAD_NOT_STOPPED, /* did not stop in time (e.g. D state) */
	SD_THREAD_ERROR,
};

/* How a thread was captured. */
enum sd_capture_kind {
	SD_CAPTURE_FROZEN = 0, /* stopped with ptrace (running, runnable, or
				* where /proc could not prove it asleep) */
	SD_CAPTURE_ASLEEP,     /* asleep in the kernel: read without a stop,
				* proven unchanged by its scheduler counters */
	SD_CAPTURE_REUSED,     /* did not run since the last sample: that
				* sample's stack, counted again */
	SD_CAPTURE_KERNEL,     /* D state with no readable user registers:
				* state, wchan and kernel stack only */
};

struct sd_thread {
	pid_t tid;
	const char *name;     /* comm, pool string */
	char state;           /* stat letter before the freeze */
	const char *wchan;
	int syscall_known, running;
	long syscall_nr;      /* -1 when not in a syscall */
	uint64_t syscall_args[6];
	uint64_t vol_ctxsw, nonvol_ctxsw, utime, stime;
	uint64_t proc_sp;     /* stack pointer /proc showed before the freeze */
	enum sd_thread_status status;
	const char *error;    /* why status is not OK, pool string */

	/* capture */
	enum sd_capture_kind kind; /* how the thread was read */
	int regs_partial;     /* only SP, PC and the syscall registers are
			       * known (read from /proc without a stop) */
	int needs_regs;       /* the unwind asked for a register not known */
	int rbp_inferred;     /* read without a stop, unwound through
			       * frame-pointer code with rbp from the offset
			       * learned at its call site (fpsite.h) */
	int retried;          /* it ran between the counter readings */
	int io_worker;        /* an io_uring worker: a kernel thread of the
			       * process, never stopped, with no user stack */
	int have_regs;
	struct user_regs_struct regs;
	uint8_t *stack;       /* heap copy of [stack_base, stack_base+stack_len) */
	uint64_t stack_base;
	size_t stack_len;
	int stack_truncated;  /* the window cap was hit */
	int stack_cut;        /* ... because of the total cap of all threads */
	int stack_in_arena;   /* stack points into the snapshot's arena */
	size_t stack_want;    /* planned window length (capture) */
	uint64_t lock_want_addr; /* planned lock read (capture) */
	uint32_t lock_want_len;
	struct sd_lockmem *lockmem;
	size_t nlockmem;
	uint64_t pause_us;    /* how long this thread was stopped */

	/* unwind + symbolize */
	struct sd_frame *frames;
	size_t nframes;
	struct sd_frameset *frameset; /* non-NULL: frames are its f, shared and
				       * read-only until
				       * snapshot_thread_own_frames() */
	const char *unwind_stop; /* why unwinding ended early, or NULL */
	unsigned live_reads;  /* stack words read after the thaw (outside the copy) */
	int live_reads_proven; /* ... and the thread's scheduler counters, read
				* again after them, show it did not run since
				* before its copy: they are as good as the copy */
	uint64_t frames_token; /* nonzero: the raw frames are those of every
				* thread of this target with the same tid and
				* token (a sample reused, a perf sample
				* unchanged): a profile need not look them
				* up again */

	uint64_t goid;        /* Go: the goroutine this thread (an M) runs, 0 none */

	/* analyze */
	char stack_state;     /* the state the stack's instant shows when the
			       * letter read before the freeze says otherwise
			       * ('R': asleep then, in user space when frozen;
			       * the letter, syscall and wchan are then /proc's
			       * of that earlier moment), else 0 */
	struct sd_wait wait;
	struct sd_hold *holds; /* heap; locks others wait for that this one holds */
	size_t nholds;
};

/* A goroutine's status as its runtime names it (dead ones are left out). */
enum sd_go_status {
	SD_GO_IDLE = 0,
	SD_GO_RUNNABLE,
	SD_GO_RUNNING,
	SD_GO_SYSCALL,
	SD_GO_WAITING,
	SD_GO_PREEMPTED,
	SD_GO_COPYSTACK,
};

/* A goroutine of a Go program, read from its runtime's own structures
 * (runtimes/goroutines.c). Strings are pool strings; frames are the
 * goroutine's own array, freed with the snapshot. */
struct sd_goroutine {
	uint64_t id;
	enum sd_go_status status;
	const char *wait_reason;  /* the runtime's own string, NULL when not waiting */
	double wait_seconds;      /* at least this long; < 0: not known */
	pid_t thread;             /* the thread (M) running it, 0 none */
	int locked;               /* locked to its thread (LockOSThread) */
	struct sd_frame created_by; /* the go statement; function NULL: none */
	uint64_t parent;          /* the creating goroutine's id, 0 unknown */
	struct sd_frame *frames;
	size_t nframes;
	const char *unwind_stop;  /* why its stack ended early, or NULL */
	unsigned retakes;         /* read again because it moved while copied */
	const char **labels;      /* heap: pprof labels, key and value pairs
				   * (pool strings), by key */
	size_t nlabels;
	int labels_read;          /* labels known (none set, or these) */
	size_t *waits_on;         /* heap: indexes into the snapshot's
				   * goobjects (a select waits on several) */
	size_t nwaits_on;
	const char *wait_mode;    /* on a sync.RWMutex: "read" or "write" */
	unsigned nholds;          /* objects it holds or may hold (a candidate) */
};

/* An object goroutines wait on (runtimes/golocks.c): a channel, a sync
 * mutex, a WaitGroup or a bare runtime semaphore, found through the
 * waiters' sudogs. Go's mutexes do not record their owner: a holder is
 * inferred from a reference in one goroutine's stack alone (candidates
 * when several hold one). Strings are static or pool strings; arrays are
 * the object's own, freed with the snapshot. */
struct sd_goobject {
	const char *kind;         /* "chan", "sync.Mutex", "sync.RWMutex",
				   * "sync.WaitGroup", "sync.Cond", "semaphore" */
	uint64_t address;
	const char *symbol;       /* the global it is (or lies in), or NULL */
	const char *mode;         /* sync.RWMutex: "read" or "write" waiters */
	int locked;               /* mutexes: 1 locked, 0 not, -1 not read */
	unsigned counted;         /* waiters the mutex word counts (locked >= 0) */
	uint64_t *waiters;        /* goroutine ids, ascending */
	size_t nwaiters;
	uint64_t holder;          /* the goroutine inferred to hold it, 0 none */
	int holder_frame;         /* its frame holding the reference, -1 none */
	uint64_t *candidates;     /* goroutines holding a reference to it,
				   * not waiting on it (more than one: no holder) */
	int *candidate_frames;
	size_t ncandidates;
	const char *note;         /* why no holder, or what else is known */
};

/* One level of a Tokio task's await chain, outermost first: the async fn
 * or block suspended at FILE:LINE (its `.await`), or the leaf it awaits
 * (a future that is no state machine: KIND "timer", "channel", "notify",
 * "mutex", "semaphore", "join", "io", "future"; DETAIL what it names: a
 * lock's address, the task joined, a deadline). Pool strings, NULL none. */
struct sd_tokio_await {
	const char *function;
	const char *file;
	int line;
	const char *kind;
	const char *detail;
};

/* A tokio::sync lock a suspended task holds: its state machine keeps the
 * guard or permit (a MutexGuard, an OwnedMutexGuard, a SemaphorePermit)
 * across the .await it is suspended at. Inferred from the layout: EVIDENCE
 * names the variable and the level ("g in fx::run at src/main.rs:66"). */
struct sd_tokio_hold {
	const char *kind;     /* "tokio::sync::Mutex", "tokio::sync::Semaphore" */
	uint64_t addr;	      /* the lock's address */
	const char *evidence; /* pool string */
};

/* A task of a Tokio runtime (runtimes/tokio.c). STATE is "idle",
 * "scheduled", "running", "complete" or "cancelled"; WORKER the thread
 * polling it (0 none or not known). AWAITS is the task's own array. */
struct sd_tokio_task {
	uint64_t id;
	const char *state;
	pid_t worker;
	const char *future;	/* the future's name, NULL: not known */
	struct sd_tokio_await *awaits;
	size_t nawaits;
	const char *note;	/* why its chain stops early, or NULL */
	struct sd_tokio_hold *holds; /* the task's own array */
	size_t nholds;
	uint64_t wait_addr;	/* the lock its leaf waits for, 0 none */
	uint64_t held_by;	/* the task holding it (inferred), 0 none */
};

/* A Tokio runtime found in the process: its scheduler handle's address
 * (ID), "multi_thread" or "current_thread", the threads seen driving it. */
struct sd_tokio_rt {
	uint64_t id;
	const char *flavor;
	pid_t *workers;
	uint64_t *worker_tasks; /* per worker: the task it polls, 0 none */
	/* per worker polling a task: its core's tick (one more each task it
	 * takes from its queues), -1 not known; NULL: none known */
	int64_t *worker_ticks;
	size_t nworkers;
	int64_t injected;	/* tasks in its global (inject) queue, -1 not known */
	/* per worker: the tasks in its local run queue (its tail less its
	 * head), -1 not known; NULL: none known */
	int64_t *worker_queued;
	/* The threads of its blocking pool that are no worker of it: the
	 * spawn_blocking job each runs (its closure's or function's type,
	 * pool string; NULL with IDLE set: idle, waiting for a job; NULL
	 * without: a job whose type is not known). */
	struct sd_tokio_blocking {
		pid_t tid;
		const char *job;
		int idle;
	} *blocking;
	size_t nblocking;
	struct sd_tokio_task *tasks;
	size_t ntasks;
	/* Cycles among tasks, each waiting for a lock the next holds: indexes
	 * into TASKS, one cycle after another (CYCLE_LEN[i] of them each). */
	size_t *cycle_tasks, *cycle_len;
	size_t ncycles;
};

/* A loaded module as the snapshot saw it. */
struct sd_module {
	const char *name;     /* basename */
	const char *path;     /* as in maps */
	const char *build_id; /* hex or NULL */
	uint64_t start, end, bias;
};

#define SD_SNAPSHOT_VERSION 1

struct sd_snapshot {
	pid_t pid;
	const char *comm;
	const char *exe;
	double time;          /* wall clock, seconds since the epoch */
	char state;           /* process state before the freeze */
	int per_thread;       /* taken in per-thread mode */
	uint64_t pause_us;    /* longest time any thread was stopped */
	uint64_t capture_us, unwind_us, symbolize_us;
	uint64_t infer_us;    /* lock holders inferred from the stacks (part of analyze) */
	uint64_t seize_us, stop_us, detach_us; /* the pause, phase by phase */
	uint64_t memcopy_us;  /* part of detach_us: the batched memory copy */
	uint64_t freeze_us;   /* the main freeze: seize + stop + detach */
	uint64_t later_us;    /* the longest of the stops after it (a retry, a
			       * stop for registers); pause_us is the longer
			       * of the two */
	uint64_t stack_bytes; /* bytes copied */
	/* Threads by capture kind: stopped, read without a stop, reused
	 * from the last sample, read again because they ran between the
	 * counter readings, and stopped afterwards for the registers /proc
	 * does not give. */
	size_t nfrozen, nasleep, nreused, nretried, nregstops;
	/* Sleepers unwound with rbp from their call site, not stopped. */
	size_t nrbp_inferred;
	const char *capture_note; /* why capture fell back to freezing, or NULL */
	const char *proof;        /* what proved the sleepers off CPU ("the task
				   * clock", "schedstat", "context switches"; a
				   * static string), NULL: none read */
	size_t stack_total;   /* the cap on all stack copies together */
	size_t stack_cut;     /* threads whose copy that cap cut */
	struct sd_thread *threads;
	size_t nthreads, cap;
	struct sd_module *modules;
	size_t nmodules, modcap;
	int partial;          /* some thread could not be read */
	size_t threads_total; /* threads of the process when only some were
			       * selected (--tid, --name), else 0 */
	struct sd_tname_ref {
		pid_t tid;
		const char *name; /* pool string */
	} *outside;           /* names of threads outside the selection that
			       * the snapshot refers to (lock owners) */
	size_t noutside;
	/* Go programs: goroutines read from the runtime (go_read set, even
	 * when none could be: go_note says why). */
	int go_read;
	const char *go_version;   /* "go1.19.8", or NULL */
	const char *go_note;      /* what could not be shown, or NULL */
	struct sd_goroutine *goroutines;
	size_t ngoroutines;
	uint64_t go_us;           /* reading and unwinding them */
	struct sd_goobject *goobjects; /* what the waiting goroutines wait on */
	size_t ngoobjects;
	const char *golocks_note; /* what could not be learnt of wait objects */
	/* Tokio programs: runtimes and tasks (tokio_read set, even when none
	 * could be read: tokio_note says why). */
	int tokio_read;
	const char *tokio_note;
	struct sd_tokio_rt *tokio;
	size_t ntokio;
	uint64_t tokio_us;
	/* A snapshot read from a core file (NULL core: a live process).
	 * Then wchan, the scheduler counters (context switches, CPU times)
	 * and the pause are not known: the JSON has them null. */
	const char *core;	  /* the core file's path */
	const char *core_args;	  /* the command line the core recorded */
	const char *core_notes;	  /* what could not be matched (modules not
				   * symbolized), one per line, or NULL */
	struct sd_crash {
		int signo;	  /* 0: the core records no crash */
		int code;
		uint64_t addr;	  /* the faulting address (si_addr) */
		pid_t tid;	  /* the thread that took it (first in threads) */
		const char *text; /* "SIGSEGV at 0x0 in f at x.c:3, thread 42 "n"" */
	} crash;
	struct strpool *pool; /* owns every string above */
	void *arena;          /* prefaulted memory for stack copies, or NULL */
	size_t arena_size, arena_used;
};

/* Reserve and prefault SIZE bytes for stack copies before a freeze, so
 * the copy itself takes no page faults while the target is stopped. */
void snapshot_arena_reserve(struct sd_snapshot *s, size_t size);
/* Hand S an arena made earlier (prefaulted, SIZE bytes) instead of a new
 * one; and take S's arena back once its stacks are dropped, for reuse by
 * the next snapshot (0 when S has none). Sampling reuses one arena
 * rather than mapping and faulting in a new one every time. */
void snapshot_arena_adopt(struct sd_snapshot *s, void *arena, size_t size);
size_t snapshot_arena_release(struct sd_snapshot *s, void **arena);
/* LEN bytes from the arena, or from the heap when it is used up; sets
 * t->stack and t->stack_in_arena. */
void snapshot_stack_alloc(struct sd_snapshot *s, struct sd_thread *t, size_t len);

struct sd_snapshot *snapshot_new(pid_t pid);
/* Frees the snapshot, its threads, frames, stacks and strings. */
void snapshot_free(struct sd_snapshot *s);
/* Append a zeroed thread and return it. */
struct sd_thread *snapshot_add_thread(struct sd_snapshot *s, pid_t tid);
/* Append a frame to T (its own copy first if its frames are shared). */
struct sd_frame *snapshot_add_frame(struct sd_thread *t);
/* T's frames become FS's (one more reference), its own freed. */
void snapshot_thread_share_frames(struct sd_thread *t, struct sd_frameset *fs);
/* T's frames in an array of its own, writable (a no-op unless shared). */
void snapshot_thread_own_frames(struct sd_thread *t);
/* T's frames released (freed, or a reference dropped): none left. */
void snapshot_thread_drop_frames(struct sd_thread *t);
/* Drop captured registers, stacks and lock memory (after unwinding). */
void snapshot_drop_capture(struct sd_snapshot *s);
/* Find a thread of S by TID (NULL if none). */
const struct sd_thread *snapshot_find_thread(const struct sd_snapshot *s, pid_t tid);
/* Copy LEN bytes at ADDR from the lock memory captured while frozen into
 * BUF: TH's own copy (TH a thread of S), or any other thread's of S that
 * covers them. The bytes copied are marked used: only those are saved
 * (store/snapio.c), hence S is not const. Returns 1 when found, 0 when no
 * copy covers them (BUF untouched). */
int snapshot_lockmem_read(struct sd_snapshot *s, const struct sd_thread *th, uint64_t addr,
			  void *buf, size_t len);

/* A hash of TH's stack by function names (module+offset where there is
 * none), to tell "the same stack" across snapshots; 0 when TH is NULL, not
 * read or has no frames, never 0 otherwise. */
uint64_t snapshot_stack_hash(const struct sd_thread *th);

/* "frozen", "asleep", "reused" or "kernel"; parse gives FROZEN for an
 * unknown or NULL name (files saved before the capture kinds). */
const char *snapshot_capture_kind_name(enum sd_capture_kind k);
enum sd_capture_kind snapshot_capture_kind_parse(const char *name);
/* "memory", "stack", or NULL for none. */
const char *sd_evidence_name(enum sd_evidence e);

/* A goroutine's status as the JSON names it: "idle", "runnable",
 * "running", "syscall", "waiting", "preempted", "copystack"; the parse
 * returns the enum value or -1 for a name not among them. */
const char *sd_go_status_name(enum sd_go_status st);
int sd_go_status_parse(const char *name);

/* S's goroutines by id (ids are unique): a sorted heap array of
 * s->ngoroutines entries, never NULL; sd_goindex_find gives the index in
 * s->goroutines of goroutine ID, or -1. */
struct sd_goindex {
	uint64_t id;
	size_t idx;
};
struct sd_goindex *sd_goindex_new(const struct sd_snapshot *s);
long sd_goindex_find(const struct sd_goindex *ix, size_t n, uint64_t id);

/* Short name of a wait kind, as in JSON ("mutex", "rwlock-read"...). */
const char *sd_wait_kind_name(enum sd_wait_kind k);
enum sd_wait_kind sd_wait_kind_parse(const char *name);

#endif
