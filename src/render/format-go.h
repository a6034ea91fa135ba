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

#endif
