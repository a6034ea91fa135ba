// SPDX-License-Identifier: MIT
// Long polls of Tokio tasks while processes are sampled (profile, top): at
// each sample, what each worker of a Tokio runtime polls and its core's
// tick (the threads' contexts only, never the tasks); a worker found
// polling the same task with the same tick in consecutive samples is
// inside one poll of it (longpoll.h), for at least the time between them.
#ifndef SD_POLLWATCH_H
#define SD_POLLWATCH_H

#include <stddef.h>
#include <stdint.h>

#include "longpoll.h"
#include "snapshot.h"

struct sd_target;
struct sd_pollwatch;

/* A new watch, empty, of polls of MIN_SECONDS or more (the interval
 * between samples: two readings an instant apart prove little). Free with
 * pollwatch_free (NULL does nothing). */
struct sd_pollwatch *pollwatch_new(double min_seconds);
void pollwatch_free(struct sd_pollwatch *w);

/* After sample S of T (its frames raw or symbolized): read what T's
 * workers poll now (target_tokio_workers, into S) and follow each one's
 * poll. A poll seen in two samples or more has the place of the task's own
 * frame on its worker's stack, symbolized through T's session when its
 * frames changed (the task's future is the type parameter of Tokio's
 * Core::poll frame there). Nothing for a program without Tokio. */
void pollwatch_sample(struct sd_pollwatch *w, struct sd_target *t, struct sd_snapshot *s);

/* The long polls so far, longest first, into *OUT (W's, valid until the
 * next call): each poll seen in two samples or more, MIN_SECONDS apart at
 * least, ended or still going
 * (ongoing set; ONGOING: only those). Strings live until pollwatch_free.
 * Of the ended ones, only the 256 longest are kept; *DROPPED (may be NULL)
 * gets how many others there were. */
size_t pollwatch_list(struct sd_pollwatch *w, int ongoing, const struct sd_long_poll **out,
		      size_t *dropped);

/* Did a sampled process have a Tokio runtime (its threads' contexts read)? */
int pollwatch_tokio(const struct sd_pollwatch *w);
/* CPU seconds of the first reading of each process (the executable's
 * DWARF indexed once): work done once, not each sample. */
double pollwatch_once_cpu(const struct sd_pollwatch *w);
/* CPU seconds of every reading so far (the first ones included), and in
 * *READS how many there were. */
double pollwatch_cpu(const struct sd_pollwatch *w, uint64_t *reads);

#endif
