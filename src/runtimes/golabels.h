// SPDX-License-Identifier: MIT
// pprof labels of goroutines (runtime/pprof.Do, SetGoroutineLabels): the
// labelMap g.labels points to, read by the layout the binary's DWARF
// describes: a Go map[string]string (Go 1.19 to 1.20) or a sorted slice of
// {key, value} (Go 1.21 and later).
#ifndef SD_GOLABELS_H
#define SD_GOLABELS_H

#include <stdint.h>

#include "snapshot.h"

struct dwt;
struct dwt_type;
struct rtmem;
struct golabels_layout;

/* Learn the layout from D, G being runtime.g. Never NULL; free with
 * golabels_layout_free (NULL does nothing). */
struct golabels_layout *golabels_learn(struct dwt *d, const struct dwt_type *g);
void golabels_layout_free(struct golabels_layout *l);

/* The labels of the goroutine whose runtime.g bytes are GB (GLEN of
 * them) into G (labels, nlabels, labels_read), strings in S's pool.
 * Returns 0, or -1 when they could not be read (labels_read stays 0). */
int golabels_read(struct golabels_layout *l, struct rtmem *m, struct sd_snapshot *s,
		  const uint8_t *gb, size_t glen, struct sd_goroutine *g);

#endif
