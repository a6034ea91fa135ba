// SPDX-License-Identifier: MIT
// Layout of the small mmapped file through which the bench targets talk to the
// bench scripts (via benchctl): the meter's longest pause, a reset handshake,
// and per-thread work counters for cpu-target.
#ifndef STACKDUMP_BENCHSHM_H
#define STACKDUMP_BENCHSHM_H

#include <stdint.h>

#define BENCH_SHM_MAGIC 0x31686d7368636e62ULL /* "bnchshm1" */
#define BENCH_KIND_METER 1u
#define BENCH_KIND_WORK 2u

/* 64-byte header; the first two words are {max_gap_ns, reset_seq} so a
 * script can also read them with od(1).  Counter slots follow for WORK. */
struct bench_shm {
	uint64_t max_gap_ns;  /* meter: longest gap beyond the sleep since reset */
	uint64_t reset_seq;   /* bumped by benchctl to ask for a reset */
	uint64_t reset_ack;   /* set to reset_seq by the target once reset */
	uint64_t samples;     /* meter: loop iterations since reset */
	uint64_t magic;       /* BENCH_SHM_MAGIC once the target is set up */
	uint64_t kind;        /* BENCH_KIND_* */
	uint64_t nslots;      /* WORK: number of counter slots after the header */
	uint64_t sum_gap_ns;  /* meter: sum of gaps since reset (for a mean) */
};

/* One cache line per worker so the counters do not bounce between cores. */
struct bench_slot {
	uint64_t count;
	uint64_t pad[7];
};

static inline struct bench_slot *bench_slots(struct bench_shm *h)
{
	return (struct bench_slot *)(h + 1);
}

#endif
