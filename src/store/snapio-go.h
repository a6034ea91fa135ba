// SPDX-License-Identifier: MIT
// A Go program's goroutines in saved snapshots: written as the dump's
// "go" and "goroutines" members plus "go_objects" (what they wait on, as
// the lock view's objects), and read back strictly, each member checked
// and the place of anything wrong named ("goroutines[3].frames[0].addr").
#ifndef SD_SNAPIO_GO_H
#define SD_SNAPIO_GO_H

#include <stddef.h>

#include "jsonw.h"
#include "snapshot.h"

struct json_t;

/* The members "go", "goroutines" and "go_objects" of S's saved object,
 * written through W; nothing when S has no goroutines read. */
void snapio_go_put(struct jsonw *w, const struct sd_snapshot *s);

/* Read the goroutines of the saved object DOC into S (go_read,
 * go_version, go_note, golocks_note, goroutines, goobjects; strings in
 * S's pool). A document without "go" (not a Go program, or a file saved
 * before goroutines were) leaves S as it is. A document whose "go_objects"
 * is absent (a dump's JSON) has its objects rebuilt from each goroutine's
 * "waiting_on" and "holds". Returns 0, or -1 with the member path and what
 * is wrong in ERR (ERRLEN bytes), S then holding what was read. */
int snapio_go_load(const struct json_t *doc, struct sd_snapshot *s, char *err, size_t errlen);

#endif
