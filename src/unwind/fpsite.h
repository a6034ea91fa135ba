// SPDX-License-Identifier: MIT
// Frame-pointer offsets learned at call sites, so that a sleeper read
// without a stop (whose rbp /proc does not give) can be unwound through
// frame-pointer code: see fpsite.c for why the offset is fixed.
#ifndef SD_FPSITE_H
#define SD_FPSITE_H

#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"

/* Sightings a call site needs before its offset is used. */
#define FPSITE_MIN_SEEN 2
/* Call sites kept at most; past that, new ones are not learned. */
#define FPSITE_CAP 8192

/* The table of one target (its addresses are that process's). Embedded;
 * fpsite_init / fpsite_release. */
struct fpsites {
	struct hashmap map;
	uint64_t learned, conflicts; /* sightings kept; sites found to vary */
};

void fpsite_init(struct fpsites *t);
void fpsite_release(struct fpsites *t);
/* Forget every site (the target's modules changed). */
void fpsite_clear(struct fpsites *t);

/* A frame stopped at return address RA kept its frame pointer at
 * RBP - SP = D, seen in an unwind from real registers. A site seen with
 * two different offsets is marked as varying and never used again. */
void fpsite_learn(struct fpsites *t, uint64_t ra, int64_t d);
/* The offset at RA into *D: 1 when it was seen at least FPSITE_MIN_SEEN
 * times and never varied, else 0. */
int fpsite_lookup(const struct fpsites *t, uint64_t ra, int64_t *d);

#endif
