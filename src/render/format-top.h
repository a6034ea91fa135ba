// SPDX-License-Identifier: MIT
// The screen of `stackdump top`: the header, the threads (holders of what
// others wait on first, idle ones folded, a pool parked alike one row at a
// terminal), then the functions by own samples.
#ifndef SD_FORMAT_TOP_H
#define SD_FORMAT_TOP_H

#include <sys/types.h>

#include "profile.h"
#include "topview.h"
#include "util.h"

enum top_sort { SORT_CPU, SORT_NAME, SORT_TID };

/* What the keys change. */
struct topview {
	enum top_sort sort;
	int show_idle;
	int help;
	/* Lines under the header (a Tokio program's long polls while they
	 * last), each ended by "\n", escaped already; NULL: none. */
	const char *notes;
};

/* Append one screen to SB: profile P of process PID (COMM), its NTH
 * threads TH as sorted by the caller, ELAPSED seconds since the start.
 * ROWS: the terminal's height (0: not a terminal, every thread shown);
 * COLS: its width (0: none), which no line passes (a header is broken
 * between its phrases, a longer line on continuation lines); LIMIT > 0: at most this many functions. TTY: redraw in place (cursor
 * home, erase to the end of each line). IDLE[i] (of NIDLE) counts the idle
 * samples of P's stack i, left out of the functions unless VIEW shows
 * idle threads. */
void top_screen(struct strbuf *sb, struct sd_profile *p, pid_t pid, const char *comm,
		struct top_thread *th, size_t nth, double elapsed, int rows, int cols, int limit,
		int tty,
		const struct topview *view, const uint64_t *idle, size_t nidle);

#endif
