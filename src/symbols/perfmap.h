// SPDX-License-Identifier: MIT
// A JIT's own map of its code, /tmp/perf-PID.map ("START SIZE name" per
// line, hex), as node --perf-basic-prof and JVM agents write it: read only
// when it is a regular file owned by the target's user, opened inside its
// root without blocking and no larger than its cap (saferead.h:
// STACKDUMP_MAX_PERF_MAP), as perf reads it.
#ifndef SD_PERFMAP_H
#define SD_PERFMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "strpool.h"

struct sd_perfmap_ent {
	uint64_t start, end;
	const char *name; /* in the pool given to perfmap_refresh */
};

/* Embedded (zeroed to start); the entries are owned, sorted by start. */
struct sd_perfmap {
	struct sd_perfmap_ent *ents;
	size_t n;
	off_t size;		/* of the file when last read */
	struct timespec mtime;
};

/* (Re)read PID's perf map into M when its size or mtime changed since the
 * last read; names are interned in POOL. A missing or refused file
 * leaves M empty. */
void perfmap_refresh(struct sd_perfmap *m, pid_t pid, struct strpool *pool);
/* The entry holding ADDR (the latest written wins: code can be replaced
 * at the same address), or NULL. */
const struct sd_perfmap_ent *perfmap_find(const struct sd_perfmap *m, uint64_t addr);
/* Free M's entries; M is empty again. */
void perfmap_release(struct sd_perfmap *m);

#endif
