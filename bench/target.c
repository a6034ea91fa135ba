// SPDX-License-Identifier: MIT
// Benchmark target for snapshot/record benchmarks: N threads each parked at
// call depth D in distinct-ish recursive chains (noinline + inlined frames),
// blocked in futex wait or read, plus a "meter" thread that measures the
// longest pause it experiences and publishes it through a mmapped file.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "benchshm.h"

#define NOINLINE __attribute__((noinline, noclone))
#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define BARRIER() __asm__ __volatile__("" ::: "memory")

enum block_mode { BLOCK_FUTEX, BLOCK_READ, BLOCK_MIX, BLOCK_LOCK };

static enum block_mode g_mode = BLOCK_MIX;
static int g_variants = 100;     /* number of distinct call chains */
static int g_pipe[2];
static atomic_int g_futex_word;  /* never changes: workers wait forever */
static atomic_int g_parked;      /* workers that reached the bottom */
static pid_t *g_tids;
static struct bench_shm *g_shm;
static volatile uint64_t g_sink;

/* ---- the blocking leaf ------------------------------------------------ */

static NOINLINE void park_futex(void)
{
	for (;;) {
		long r = syscall(SYS_futex, &g_futex_word, FUTEX_WAIT_PRIVATE, 0,
				 NULL, NULL, 0);
		if (r == -1 && errno != EINTR && errno != EAGAIN)
			abort();
	}
}

static NOINLINE void park_read(void)
{
	char c;
	for (;;) {
		ssize_t r = read(g_pipe[0], &c, 1);
		if (r < 0 && errno != EINTR)
			abort();
	}
}

/* -b lock: owner-less locks in the style of Rust's std Mutex (a futex
 * word, 0 free, 2 locked with waiters; no owner field). Even thread i
 * holds g_locks[i], keeping a pointer to it in its frame as a guard
 * would, and sleeps in read(); odd thread i waits for g_locks[i - 1]
 * through syscall(), as Rust's std does. Lock analysis then has half the
 * threads' holders to infer from every thread's stack. */
static atomic_int *g_locks;

static NOINLINE void park_hold(atomic_int *mine)
{
	atomic_int *volatile guard = mine;
	atomic_store(guard, 2);
	atomic_fetch_add(&g_parked, 1);
	park_read();
	atomic_store(guard, 0);
}

static NOINLINE void park_wait(atomic_int *theirs)
{
	atomic_fetch_add(&g_parked, 1);
	for (;;) {
		long r = syscall(SYS_futex, theirs, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 2,
				 NULL, NULL, FUTEX_BITSET_MATCH_ANY);
		if (r == -1 && errno != EINTR && errno != EAGAIN)
			abort();
	}
}

static NOINLINE void park(int idx)
{
	if (g_mode == BLOCK_LOCK) {
		if (idx % 2 == 0)
			park_hold(&g_locks[idx]);
		/* Wait until the holder has it: then the word reads 2. */
		while (atomic_load(&g_locks[idx - 1]) != 2)
			usleep(1000);
		park_wait(&g_locks[idx - 1]);
	}
	atomic_fetch_add(&g_parked, 1);
	if (g_mode == BLOCK_FUTEX || (g_mode == BLOCK_MIX && idx % 2 == 0))
		park_futex();
	else
		park_read();
}

/* ---- recursive chains -------------------------------------------------- */
/* Eight noinline functions call each other through a table; which one comes
 * next depends on the thread's variant (idx % VARIANTS) and the depth, so
 * there are about VARIANTS distinct stacks, each shared by several threads.  Three of the eight descend through
 * always_inline helpers so unwinders have inline frames to report. */

typedef int (*step_fn)(int depth, int idx);
static const step_fn g_steps[8];

/* Calls the next step (or parks at the bottom).  Inlined into every step. */
ALWAYS_INLINE int descend(int depth, int idx)
{
	if (depth <= 1) {
		park(idx);
		return 0;
	}
	/* 3 bits of the variant's hash per level choose the next step */
	uint64_t h = (uint64_t)(idx % g_variants + 1) * 0x9e3779b97f4a7c15ull;
	h ^= h >> 29;
	unsigned k = (unsigned)(h >> ((depth * 3) % 61)) + (unsigned)depth;
	int r = g_steps[k % 8](depth - 1, idx);
	BARRIER();
	return r + 1;
}

/* Two nested always_inline levels: shows up as inline frames. */
ALWAYS_INLINE int descend_inline_inner(int depth, int idx)
{
	volatile int local = depth ^ idx;
	int r = descend(depth, idx);
	BARRIER();
	return r + local;
}

ALWAYS_INLINE int descend_inline_outer(int depth, int idx)
{
	int r = descend_inline_inner(depth, idx);
	BARRIER();
	return r * 3;
}

/* Each step is one real frame, so a worker sits DEPTH step frames deep. */
#define DEFINE_STEP(name, use_inline)                                  \
	static NOINLINE int name(int depth, int idx)                   \
	{                                                              \
		volatile char pad[24];                                 \
		pad[0] = (char)depth;                                  \
		int r = (use_inline) ? descend_inline_outer(depth, idx) \
				     : descend(depth, idx);            \
		BARRIER();                                             \
		return r + pad[0];                                     \
	}

DEFINE_STEP(step_alpha, 0)
DEFINE_STEP(step_bravo, 1)
DEFINE_STEP(step_charlie, 0)
DEFINE_STEP(step_delta, 0)
DEFINE_STEP(step_echo, 1)
DEFINE_STEP(step_foxtrot, 0)
DEFINE_STEP(step_golf, 0)
DEFINE_STEP(step_hotel, 1)

static const step_fn g_steps[8] = {
	step_alpha, step_bravo, step_charlie, step_delta,
	step_echo, step_foxtrot, step_golf, step_hotel,
};

struct worker_arg {
	int idx;
	int depth;
};

static void *worker_main(void *p)
{
	struct worker_arg *a = p;
	char name[16];
	snprintf(name, sizeof(name), "w%d", a->idx);
	pthread_setname_np(pthread_self(), name);
	g_tids[a->idx] = (pid_t)syscall(SYS_gettid);
	/* DEPTH step frames between worker_main and park() */
	g_sink = (uint64_t)g_steps[(a->idx % g_variants) % 8](a->depth, a->idx);
	return NULL;
}

/* ---- meter ------------------------------------------------------------- */

#define METER_SLEEP_NS 50000L

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *meter_main(void *unused)
{
	(void)unused;
	pthread_setname_np(pthread_self(), "meter");
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	struct timespec req = { 0, METER_SLEEP_NS };
	uint64_t seen_seq = 0;
	for (;;) {
		uint64_t t0 = now_ns();
		nanosleep(&req, NULL);
		uint64_t t1 = now_ns();
		uint64_t el = t1 - t0;
		uint64_t gap = el > (uint64_t)METER_SLEEP_NS ? el - METER_SLEEP_NS : 0;
		uint64_t seq = __atomic_load_n(&g_shm->reset_seq, __ATOMIC_ACQUIRE);
		if (seq != seen_seq) {
			/* this gap started before the reset request: drop it */
			__atomic_store_n(&g_shm->max_gap_ns, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&g_shm->sum_gap_ns, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&g_shm->samples, 0, __ATOMIC_RELAXED);
			seen_seq = seq;
			__atomic_store_n(&g_shm->reset_ack, seq, __ATOMIC_RELEASE);
			continue;
		}
		if (gap > g_shm->max_gap_ns)
			__atomic_store_n(&g_shm->max_gap_ns, gap, __ATOMIC_RELAXED);
		__atomic_store_n(&g_shm->sum_gap_ns, g_shm->sum_gap_ns + gap,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&g_shm->samples, g_shm->samples + 1,
				 __ATOMIC_RELAXED);
	}
	return NULL;
}

/* ---- setup ------------------------------------------------------------- */

static struct bench_shm *map_meter_file(const char *path)
{
	if (!path) {
		void *m = mmap(NULL, sizeof(struct bench_shm), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		return m == MAP_FAILED ? NULL : m;
	}
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, sizeof(struct bench_shm)) < 0) {
		perror(path);
		return NULL;
	}
	void *m = mmap(NULL, sizeof(struct bench_shm), PROT_READ | PROT_WRITE,
		       MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		perror("mmap");
		return NULL;
	}
	return m;
}

static char thread_state(pid_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return '?';
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return (p && p[1] == ' ') ? p[2] : '?';
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [-n THREADS] [-d DEPTH] [-u VARIANTS] [-b futex|read|mix|lock]"
		" [-m METER_FILE] [-t TIMEOUT_S]\n"
		"Parks THREADS threads (default 1000) at call depth DEPTH (default 20)\n"
		"in about VARIANTS (default 100) distinct call chains, blocked in futex\n"
		"wait, pipe read or both (mix, default), or half holding owner-less\n"
		"locks and half waiting for them (lock), then prints 'ready <pid>'.\n"
		"Exits after TIMEOUT_S seconds (default 3600) or when its parent dies.\n",
		argv0);
}

int main(int argc, char **argv)
{
	int nthreads = 1000, depth = 20, timeout_s = 3600;
	const char *meter_path = NULL;
	int opt;
	while ((opt = getopt(argc, argv, "n:d:u:b:m:t:h")) != -1) {
		switch (opt) {
		case 'n': nthreads = atoi(optarg); break;
		case 'd': depth = atoi(optarg); break;
		case 'u': g_variants = atoi(optarg); break;
		case 'm': meter_path = optarg; break;
		case 't': timeout_s = atoi(optarg); break;
		case 'b':
			if (!strcmp(optarg, "futex")) g_mode = BLOCK_FUTEX;
			else if (!strcmp(optarg, "read")) g_mode = BLOCK_READ;
			else if (!strcmp(optarg, "mix")) g_mode = BLOCK_MIX;
			else if (!strcmp(optarg, "lock")) g_mode = BLOCK_LOCK;
			else { usage(argv[0]); return 2; }
			break;
		default: usage(argv[0]); return opt == 'h' ? 0 : 2;
		}
	}
	if (nthreads < 0 || depth < 1 || timeout_s < 1 || g_variants < 1) {
		usage(argv[0]);
		return 2;
	}
	/* die with the bench script even if it is SIGKILLed */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() == 1)
		return 1;

	if (pipe(g_pipe) < 0) {
		perror("pipe");
		return 1;
	}
	g_shm = map_meter_file(meter_path);
	if (!g_shm)
		return 1;
	g_shm->kind = BENCH_KIND_METER;
	__atomic_store_n(&g_shm->magic, BENCH_SHM_MAGIC, __ATOMIC_RELEASE);

	g_tids = calloc((size_t)nthreads + 1, sizeof(*g_tids));
	g_locks = calloc((size_t)nthreads + 1, sizeof(*g_locks));
	if (!g_locks)
		return 1;
	struct worker_arg *args = calloc((size_t)nthreads + 1, sizeof(*args));
	if (!g_tids || !args)
		return 1;

	pthread_attr_t attr;
	pthread_attr_init(&attr);
	size_t stack = 128 * 1024 + (size_t)depth * 1024;
	pthread_attr_setstacksize(&attr, stack);

	pthread_t meter;
	if (pthread_create(&meter, &attr, meter_main, NULL) != 0) {
		fprintf(stderr, "cannot start meter thread\n");
		return 1;
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_t th;
		args[i].idx = i;
		args[i].depth = depth;
		int err = pthread_create(&th, &attr, worker_main, &args[i]);
		if (err) {
			fprintf(stderr, "pthread_create #%d: %s\n", i, strerror(err));
			return 1;
		}
		pthread_detach(th);
	}

	/* wait until every worker is at the bottom and asleep in the kernel */
	while (atomic_load(&g_parked) < nthreads)
		usleep(1000);
	for (;;) {
		int asleep = 0;
		for (int i = 0; i < nthreads; i++)
			asleep += thread_state(g_tids[i]) == 'S';
		if (asleep == nthreads)
			break;
		usleep(2000);
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);

	struct timespec ts = { timeout_s, 0 };
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
	return 0;
}
