// SPDX-License-Identifier: MIT
// A Tokio program's runtimes and tasks in the saved snapshot format: the
// members "tokio" and "runtimes", as the dump's JSON has them (docs/tokio.md),
// beside "threads". Files saved before them load with no tasks.
#ifndef SD_SNAPIO_TOKIO_H
#define SD_SNAPIO_TOKIO_H

#include <jansson.h>

#include "jsonw.h"
#include "snapshot.h"

/* Write S's "tokio" and "runtimes" members (nothing when S->tokio_read is
 * not set) through W, inside the snapshot's object. */
void snapio_put_tokio(struct jsonw *w, const struct sd_snapshot *s);

/* Read them back from the saved document DOC into S (its pool holds the
 * strings). Nothing when DOC has neither. A member that is not as written
 * leaves S with no runtimes and a tokio_note saying what was wrong; it
 * never fails the load. */
void snapio_get_tokio(json_t *doc, struct sd_snapshot *s);

#endif
