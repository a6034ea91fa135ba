// SPDX-License-Identifier: MIT
// Goroutines: a Go program's goroutines read from its runtime's own
// structures (runtime.allgs, each runtime.g, the wait-reason strings, the
// Ms' thread ids) in the target's memory, by the layout its DWARF
// describes (dwtype.h), and unwound from their saved registers with the
// unwinder and symbolizer that threads use. Nothing is stopped: a parked
// goroutine is copied and its status and registers read again after the
// copy; one that runs is taken from its thread, frozen by the snapshot.
#ifndef SD_GOROUTINES_H
#define SD_GOROUTINES_H

#include <stddef.h>

#include "snapshot.h"

struct sd_space;
struct sd_unwinder;
struct sd_symbols;
struct sd_goruntime;

struct go_read_opts {
	unsigned max_frames; /* per goroutine, 0: no limit */
	size_t max_stack;    /* bytes of one goroutine's stack copied at most */
	int no_inline, no_source;
};

/* Read the goroutines of S's process into S (go_read, go_version,
 * go_note, goroutines) and mark each thread with the goroutine it runs
 * (goid). S's threads must be unwound and symbolized, their registers
 * still held. *RT holds what is learnt of the runtime once per target
 * (NULL at first; free with goruntime_free). Nothing happens when the
 * executable is not a Go program. A layout the reader does not know, a
 * binary without DWARF, memory that does not read: S gets go_note and as
 * many goroutines as could be read, never a guess. */
void goroutines_read(struct sd_goruntime **rt, struct sd_space *sp, struct sd_unwinder *u,
		     struct sd_symbols *sym, struct sd_snapshot *s, const struct go_read_opts *o);
/* NULL does nothing. */
void goruntime_free(struct sd_goruntime *rt);

#endif
