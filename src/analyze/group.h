// SPDX-License-Identifier: MIT
// Grouping of a snapshot's threads by identical stacks (the pt-pmp view):
// a 200-thread pool asleep in one place becomes one stack with a count,
// its names and TIDs compressed into ranges.
#ifndef SD_GROUP_H
#define SD_GROUP_H

#include "snapshot.h"
#include "util.h"

/* One set of threads with the same status, state, wait, frames and held
 * locks. */
struct sd_group {
	size_t *idx; /* indices into the snapshot's threads, in snapshot order */
	size_t n;
};

/* Does a wait of kind K merge threads waiting on different objects (each
 * its own), when all else they show is the same? */
int group_wait_per_object(enum sd_wait_kind k);

struct sd_grouping {
	struct sd_group *v;
	size_t n;
};

/* Group the threads of S into G (which the caller releases with
 * group_release). Two threads are grouped when their status, state
 * letter, wait (kind, lock address, owner), syscall, every frame (pc,
 * function, file:line, flags) and the locks they hold are the same. Groups come largest first;
 * groups of the same size keep the order of their first thread. */
void group_snapshot(const struct sd_snapshot *s, struct sd_grouping *g);
/* Free what group_snapshot allocated in G; G may be zeroed or released. */
void group_release(struct sd_grouping *g);

/* Append the names of the threads of GR to OUT, compressed: names that
 * differ only in a trailing number become ranges ("worker-1..200",
 * "http-1..3,7"), repeated names a count ("pool (3)"). Names are escaped.
 * After about LIMIT bytes the list ends with "... (N names)". */
void group_names(struct strbuf *out, const struct sd_snapshot *s, const struct sd_group *gr,
		 size_t limit);
/* Append the TIDs of GR to OUT as ascending ranges ("4245..4444,4450"),
 * ending with "..." after about LIMIT bytes. */
void group_tids(struct strbuf *out, const struct sd_snapshot *s, const struct sd_group *gr,
		size_t limit);

/* Group N items of ARG: item I's key is KEY(ARG, I) and two items with
 * the same key are one group when SAME(ARG, I, J). OF[I] gets item I's
 * group, COUNT[G] each group's size (both N long); groups are numbered
 * in the order of their first item. Returns the number of groups. */
size_t group_items(size_t n, const void *arg, uint64_t (*key)(const void *arg, size_t i),
		   int (*same)(const void *arg, size_t i, size_t j), size_t *of, size_t *count);

#endif
