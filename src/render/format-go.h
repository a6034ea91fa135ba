// SPDX-License-Identifier: MIT
// Rendering of a Go program's goroutines (snapshot.h, sd_goroutine): text
// in the form of Go's own traceback, grouped as panicparse does, and the
// JSON "goroutines" array of the dump schema.
#ifndef SD_FORMAT_GO_H
#define SD_FORMAT_GO_H

#include "format.h"

/* Append the goroutines of S (when S->go_read) to OUT: a header line, a
 * note when some could not be shown, then each goroutine as Go prints it
 * ("goroutine 18 [chan receive, 5 minutes]:", frames with file:line,
 * "created by"). O->go_group: 0 one by one, 1 identical ones merged, 2
 * merged only where 4 or more are identical. Strings are escaped. */
void format_go_text(struct strbuf *out, const struct sd_snapshot *s,
		    const struct sd_render_opts *o);

/* The members "go" (version, note) and "goroutines" of S's JSON object,
 * written through W (nothing when S has no goroutines read). */
void format_go_json(struct jsonw *w, const struct sd_snapshot *s);

/* The text of a goroutine's status as Go prints it between brackets: the
 * wait reason when waiting with one, else the status name. */
const char *format_go_status(const struct sd_goroutine *g);

struct sd_godeadlock;

/* The goroutine deadlocks D (ND of them, golocks_deadlocks) of S: each
 * edge with its evidence, then, when O is not NULL, each goroutine's
 * stack. */
void format_go_deadlocks_text(struct strbuf *out, const struct sd_snapshot *s,
			      const struct sd_godeadlock *d, size_t nd, const struct sd_render_opts *o);

/* The goroutine half of the lock view (when S->go_read): each object
 * goroutines wait on, its holder (inferred) with its stack, its waiters
 * grouped by stack, then the deadlocks among goroutines. */
void format_go_locks_text(struct strbuf *out, const struct sd_snapshot *s,
			  const struct sd_render_opts *o);
/* The member "goroutines" of the lock view's JSON object (objects and
 * deadlocks), nothing when S has no goroutines read. */
void format_go_locks_json(struct jsonw *w, const struct sd_snapshot *s);
/* The array of S's wait objects (each as in the lock view's "objects"),
 * written through W as one value (after a key, or in an array). */
void format_go_objects_json(struct jsonw *w, const struct sd_snapshot *s);
/* How many deadlocks S's goroutines are in (0 for other programs). */
size_t format_go_deadlock_count(const struct sd_snapshot *s);

#endif
