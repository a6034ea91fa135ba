// SPDX-License-Identifier: MIT
// Goroutines by creation site over samples (goleak.h) as a table, with a
// line for each site whose count only grew: the goroutine-leak view of
// `profile --goroutines`.
#ifndef SD_FORMAT_GOLEAK_H
#define SD_FORMAT_GOLEAK_H

#include "goleak.h"
#include "util.h"

/* Append G's table to OUT: at most LIMIT sites (0: all), most grown
 * first. Strings are escaped. */
void format_goleak_text(struct strbuf *out, const struct sd_goleak *g, size_t limit);

#endif
