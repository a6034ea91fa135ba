// SPDX-License-Identifier: MIT
// The timeline of a series of snapshots: each thread's state per snapshot
// as a letter, and the chart of them over wall-clock time (SVG).
#ifndef SD_TIMELINE_H
#define SD_TIMELINE_H

#include "findings.h"
#include "snapshot.h"
#include "util.h"

/* The timeline letter of a thread: R running, r runnable, S in a syscall,
 * L waiting for a lock, C on a condition variable, D disk, T stopped, Z
 * zombie, x not read. */
char timeline_letter(const struct sd_thread *th);
/* "running", "lock", ... for a letter of timeline_letter ("absent" for
 * anything else). Static storage. */
const char *timeline_state_name(char c);

/* Append the SVG chart of the N snapshots S (ordered by time) to OUT: a
 * title (process, date, times), a time axis in UTC with ticks, one row
 * per thread whose bars are runs of the same state and wait, each with
 * hover text (state, lock, holder, times and snapshots), a lane of
 * markers for the deadlocks and held locks of F (may be NULL), deadlocked
 * rows outlined, and a legend. Labels are cut to fit their column. */
void format_timeline_svg(struct strbuf *out, const struct sd_snapshot *const *s, size_t n,
			 const struct sd_findings *f);

#endif
