// SPDX-License-Identifier: MIT
// Tiny helper the bench scripts use to read and reset the mmapped files of
// target and cpu-target (see benchshm.h): meter pause reset/read, and the
// summed work counter of cpu-target with a CLOCK_MONOTONIC timestamp.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "benchshm.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct bench_shm *map_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDWR);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		perror(path);
		return NULL;
	}
	if ((size_t)st.st_size < sizeof(struct bench_shm)) {
		fprintf(stderr, "%s: too small\n", path);
		close(fd);
		return NULL;
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
		       MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		perror("mmap");
		return NULL;
	}
	struct bench_shm *h = m;
	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != BENCH_SHM_MAGIC) {
		fprintf(stderr, "%s: not initialised by a bench target\n", path);
		return NULL;
	}
	*len = (size_t)st.st_size;
	return h;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: benchctl reset FILE     ask the meter to reset; waits for it\n"
		"       benchctl pause FILE     print max_gap_ns samples mean_gap_ns\n"
		"       benchctl work FILE      print summed_work_units monotonic_ns\n");
	return 2;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return usage();
	size_t len;
	struct bench_shm *h = map_file(argv[2], &len);
	if (!h)
		return 1;

	if (!strcmp(argv[1], "reset")) {
		uint64_t seq = __atomic_add_fetch(&h->reset_seq, 1, __ATOMIC_ACQ_REL);
		uint64_t deadline = now_ns() + 5000000000ull;
		while (__atomic_load_n(&h->reset_ack, __ATOMIC_ACQUIRE) != seq) {
			if (now_ns() > deadline) {
				fprintf(stderr, "benchctl: meter did not acknowledge reset\n");
				return 1;
			}
			usleep(50);
		}
		return 0;
	}
	if (!strcmp(argv[1], "pause")) {
		uint64_t max = __atomic_load_n(&h->max_gap_ns, __ATOMIC_RELAXED);
		uint64_t n = __atomic_load_n(&h->samples, __ATOMIC_RELAXED);
		uint64_t sum = __atomic_load_n(&h->sum_gap_ns, __ATOMIC_RELAXED);
		printf("%llu %llu %llu\n", (unsigned long long)max,
		       (unsigned long long)n,
		       (unsigned long long)(n ? sum / n : 0));
		return 0;
	}
	if (!strcmp(argv[1], "work")) {
		uint64_t n = h->nslots;
		if (sizeof(*h) + n * sizeof(struct bench_slot) > len) {
			fprintf(stderr, "benchctl: bad slot count\n");
			return 1;
		}
		struct bench_slot *s = bench_slots(h);
		uint64_t sum = 0;
		for (uint64_t i = 0; i < n; i++)
			sum += __atomic_load_n(&s[i].count, __ATOMIC_RELAXED);
		printf("%llu %llu\n", (unsigned long long)sum,
		       (unsigned long long)now_ns());
		return 0;
	}
	return usage();
}
