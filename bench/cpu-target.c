// SPDX-License-Identifier: MIT
// CPU-bound benchmark target for profile/sampling benchmarks: N worker threads
// spin on small work units a few frames deep and count them in per-thread
// counters inside a mmapped file, so a script can measure throughput; and
// optionally S more threads that sleep (the mostly-idle server shape).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "benchshm.h"

#define NOINLINE __attribute__((noinline, noclone))
#define BARRIER() __asm__ __volatile__("" ::: "memory")

static struct bench_shm *g_shm;
static atomic_int g_started;
static volatile uint64_t g_sink;

/* One work unit: a few hundred xorshift rounds (well under a microsecond). */
static NOINLINE uint64_t work_unit(uint64_t x)
{
	for (int i = 0; i < 256; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

static NOINLINE uint64_t work_batch(uint64_t x, struct bench_slot *slot,
				    uint64_t *count)
{
	for (int i = 0; i < 64; i++) {
		x = work_unit(x);
		__atomic_store_n(&slot->count, ++*count, __ATOMIC_RELAXED);
	}
	return x;
}

/* Two alternating noinline levels so samples have some depth to them. */
static NOINLINE uint64_t spin_even(int depth, uint64_t x, struct bench_slot *slot,
				   uint64_t *count);

static NOINLINE uint64_t spin_odd(int depth, uint64_t x, struct bench_slot *slot,
				  uint64_t *count)
{
	uint64_t r = depth > 0 ? spin_even(depth - 1, x, slot, count)
			       : work_batch(x, slot, count);
	BARRIER();
	return r ^ 1;
}

static NOINLINE uint64_t spin_even(int depth, uint64_t x, struct bench_slot *slot,
				   uint64_t *count)
{
	uint64_t r = depth > 0 ? spin_odd(depth - 1, x, slot, count)
			       : work_batch(x, slot, count);
	BARRIER();
	return r ^ 2;
}

struct worker_arg {
	int idx;
	int depth;
};

static void *worker_main(void *p)
{
	struct worker_arg *a = p;
	char name[16];
	snprintf(name, sizeof(name), "cpu%d", a->idx);
	pthread_setname_np(pthread_self(), name);
	struct bench_slot *slot = &bench_slots(g_shm)[a->idx];
	uint64_t count = 0, x = 0x9e3779b97f4a7c15ull + (uint64_t)a->idx;
	atomic_fetch_add(&g_started, 1);
	for (;;) {
		x = (a->idx & 1) ? spin_odd(a->depth, x, slot, &count)
				 : spin_even(a->depth, x, slot, &count);
		g_sink = x;
	}
	return NULL;
}

/* A sleeper: a few frames deep, asleep in the kernel for good. */
static NOINLINE void sleep_deep(int depth)
{
	if (depth > 0) {
		sleep_deep(depth - 1);
		BARRIER();
		return;
	}
	atomic_fetch_add(&g_started, 1);
	for (;;)
		pause();
}

static void *sleeper_main(void *p)
{
	(void)p;
	pthread_setname_np(pthread_self(), "sleeper");
	sleep_deep(6);
	return NULL;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s -w WORK_FILE [-n THREADS] [-s SLEEPERS] [-d DEPTH] [-t TIMEOUT_S]\n"
		"Runs THREADS (default 100) CPU-bound workers, DEPTH (default 6) frames\n"
		"deep, counting work units into WORK_FILE, and SLEEPERS (default 0)\n"
		"threads asleep in pause(); prints 'ready <pid>'.\n"
		"Exits after TIMEOUT_S seconds (default 3600) or when its parent dies.\n",
		argv0);
}

int main(int argc, char **argv)
{
	int nthreads = 100, depth = 6, timeout_s = 3600, nsleepers = 0;
	const char *path = NULL;
	int opt;
	while ((opt = getopt(argc, argv, "n:s:d:w:t:h")) != -1) {
		switch (opt) {
		case 'n': nthreads = atoi(optarg); break;
		case 's': nsleepers = atoi(optarg); break;
		case 'd': depth = atoi(optarg); break;
		case 'w': path = optarg; break;
		case 't': timeout_s = atoi(optarg); break;
		default: usage(argv[0]); return opt == 'h' ? 0 : 2;
		}
	}
	if (!path || nthreads < 1 || nsleepers < 0 || depth < 0 || timeout_s < 1) {
		usage(argv[0]);
		return 2;
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() == 1)
		return 1;

	size_t len = sizeof(struct bench_shm) + (size_t)nthreads * sizeof(struct bench_slot);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)len) < 0) {
		perror(path);
		return 1;
	}
	g_shm = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (g_shm == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	g_shm->kind = BENCH_KIND_WORK;
	g_shm->nslots = (uint64_t)nthreads;
	__atomic_store_n(&g_shm->magic, BENCH_SHM_MAGIC, __ATOMIC_RELEASE);

	struct worker_arg *args = calloc((size_t)nthreads, sizeof(*args));
	if (!args)
		return 1;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
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
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (int i = 0; i < nsleepers; i++) {
		pthread_t th;
		int err = pthread_create(&th, &attr, sleeper_main, NULL);
		if (err) {
			fprintf(stderr, "pthread_create sleeper #%d: %s\n", i, strerror(err));
			return 1;
		}
		pthread_detach(th);
	}
	while (atomic_load(&g_started) < nthreads + nsleepers)
		usleep(1000);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);

	struct timespec ts = { timeout_s, 0 };
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
	return 0;
}
