// SPDX-License-Identifier: MIT
// Goroutines counted by where they were created (the go statement of
// their creator), sample after sample: a count that only grows is a
// goroutine leak ("goroutines created at server.handle grew from 120 to
// 9,800").
#ifndef SD_GOLEAK_H
#define SD_GOLEAK_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot.h"

/* One creation site: its counts, one per sample (0 where none). Strings
 * live with the sd_goleak. */
struct sd_goleak_site {
	const char *function; /* the creator's function, or NULL: no creator */
	const char *file;
	int line;
	uint64_t *counts;     /* nsamples of them */
	uint64_t min, max;
};

struct sd_goleak {
	struct sd_goleak_site *sites;
	size_t nsites, cap;
	size_t nsamples;
	double first_time, last_time; /* wall clock of the first and last sample */
	pid_t pid;
	const char *version;          /* Go version, or NULL */
	const char *note;             /* the last sample's go_note, or NULL */
	struct strpool *pool;
	void *index;                  /* site lookup (a hashmap) */
};

/* Empty; free with goleak_free (NULL does nothing). */
struct sd_goleak *goleak_new(void);
void goleak_free(struct sd_goleak *g);

/* Count S's goroutines by creation site as one more sample. A snapshot of
 * a program that is not Go counts as a sample with no goroutine. */
void goleak_add(struct sd_goleak *g, const struct sd_snapshot *s);

/* Did the count of S only grow over the N samples: more in the last than
 * in the first, and never fewer than in the sample before? */
int goleak_site_grew(const struct sd_goleak_site *s, size_t n);

/* The sites in the order to show them: the most grown (last sample minus
 * first) first, then the most goroutines in the last sample. Heap array
 * of N indexes into g->sites. */
size_t *goleak_order(const struct sd_goleak *g);

#endif
