// SPDX-License-Identifier: MIT
// Deadlocks among goroutines: each goroutine waiting on one mutex whose
// holder was inferred (runtimes/golocks.c) has one wait-for edge, to that
// holder; every cycle is a deadlock. Pure logic over a snapshot's
// goroutines and wait objects, live or loaded from a saved file.
#ifndef SD_GODEADLOCKS_H
#define SD_GODEADLOCKS_H

#include <stddef.h>

#include "snapshot.h"

/* A cycle among goroutines: goroutines[i] waits on a mutex inferred to be
 * held by goroutines[i + 1] (the last by the first). Indexes into
 * s->goroutines; OBJECTS[i] the object goroutines[i] waits on. */
struct sd_godeadlock {
	size_t *goroutines;
	size_t *objects;
	size_t n;
};

/* The cycles of S's goroutine wait-for graph (each goroutine waiting on
 * one mutex whose holder is inferred has one edge), each once, starting
 * at its smallest id. Returns their count, a heap array in *OUT (free
 * with godeadlocks_free). */
size_t godeadlocks_find(const struct sd_snapshot *s, struct sd_godeadlock **out);
void godeadlocks_free(struct sd_godeadlock *d, size_t n);

#endif
