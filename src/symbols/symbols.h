// SPDX-License-Identifier: MIT
// The symbolize stage: one libdwfl session per target turns addresses into
// module, function (demangled C++ and Rust), inline chain and file:line.
// Results are cached by (ELF image, address) across threads and snapshots.
#ifndef SD_SYMBOLS_H
#define SD_SYMBOLS_H

#include <stdint.h>

#include "snapshot.h"

struct sd_space;
struct sd_symbols;

struct sd_symbols *symbols_new(struct sd_space *sp);
/* NULL does nothing. Strings handed out before stay valid only in the
 * snapshots they were copied into. */
void symbols_free(struct sd_symbols *s);
/* Report the target's current modules to libdwfl (after target_refresh). */
void symbols_sync(struct sd_symbols *s);

/* Replace TH's raw frames (pc, sp, flags) by symbolized ones, expanding
 * inline frames unless NO_INLINE; file:line unless NO_SOURCE. Strings go
 * into SNAP's pool. */
void symbols_thread(struct sd_symbols *s, struct sd_snapshot *snap, struct sd_thread *th,
		    int no_inline, int no_source);

/* The data symbol (global or static object) holding ADDR, demangled, into
 * SNAP's pool; NULL if none. *OFF gets ADDR's offset into it. Answered from
 * a cache by (ELF image, address), filled from the module's symbol index
 * (symcache.h): libdw scans its symbols only when the index cannot decide. */
const char *symbols_data(struct sd_symbols *s, struct sd_snapshot *snap, uint64_t addr,
			 uint64_t *off);
/* The same answer from libdwfl alone, every time (for tests). */
const char *symbols_data_uncached(struct sd_symbols *s, struct sd_snapshot *snap, uint64_t addr,
				  uint64_t *off);


/* Start reading the debug info of the module holding PC (a stack's
 * leaf, a frame) on a second CPU while the snapshot goes on: a large
 * compressed debug file takes tens of ms to inflate. Until the other
 * symbols_* calls (which wait for it), only this may be called. Nothing
 * happens on a single CPU, or when the module is being read already. */
void symbols_prefetch(struct sd_symbols *s, uint64_t pc);
/* Wait for the reads symbols_prefetch started (before the target's maps
 * change: they read its modules). */
void symbols_settle(struct sd_symbols *s);
/* The CPU the prefetch thread used since the last call, in ns: modules
 * indexed once (their debug files opened and inflated, their symbols
 * sorted), which a CPU budget of the sampling does not count. */
uint64_t symbols_prefetch_cpu_take(struct sd_symbols *s);

/* Cache statistics, for -v. */
void symbols_stats(const struct sd_symbols *s, uint64_t *lookups, uint64_t *hits);

/* What the session asked libdw, for -v and tests. */
struct sd_symcounts {
	uint64_t frame_resolves; /* frame addresses resolved through libdw (cache misses) */
	uint64_t data_lookups;	 /* symbols_data calls */
	uint64_t data_hits;	 /* of those, answered without a new lookup */
	uint64_t data_scans;	 /* dwfl_module_addrinfo calls (a scan of a module's symbols) */
};
/* Zero for NULL. */
void symbols_counts(const struct sd_symbols *s, struct sd_symcounts *c);

#endif
