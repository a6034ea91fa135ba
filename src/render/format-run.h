// SPDX-License-Identifier: MIT
// What profile (and report) write at the end of a run: the profile in the
// format named on the command line, into a buffer, and the run's own costs
// (engine, sampling, caches, CPU) as text.
#ifndef SD_FORMAT_RUN_H
#define SD_FORMAT_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "perf.h"
#include "format-profile.h"
#include "util.h"

/* Render P as FORMAT ("top", "tree", "folded", "svg", "pprof" or "json";
 * top and tree show the lock view when P was made with opts.locks) into a
 * heap buffer *BUF of *LEN bytes, to free(). Returns 0, or a negative errno
 * with ERR (pprof encoding). */
int format_profile_as(struct sd_profile *p, const char *format, const struct sd_prender *ro,
		      uint8_t **buf, size_t *len, struct sd_error *err);

/* RO's long polls (a Tokio program's, longpoll.h) as lines: a heading,
 * then one per long poll, at most LIMIT, and how many more there were. */
void format_long_polls_text(struct strbuf *out, const struct sd_prender *ro, size_t limit);

/* The format a file name asks for by its ending: "pprof" (.pprof, .pb,
 * .pb.gz), "svg", "json", "folded", "top" (.txt); NULL for any other name.
 * Static strings. */
const char *format_for_path(const char *path);

/* The costs of a sampling run, as `profile -v` prints them: PS the perf
 * engine's counters (NULL or zeroed with ptrace), SYM_LOOKUPS and SYM_HITS
 * the symbol caches', CPU and WALL seconds. */
void format_profile_costs(struct strbuf *sb, const struct sd_profile *p,
			  const struct sd_perf_stats *ps, uint64_t sym_lookups, uint64_t sym_hits,
			  double cpu, double wall);

/* What changed while sampling, for stderr: CHANGE (BUDGET_SLOWER or
 * BUDGET_FASTER, budget.h) of B's interval, or with PACE, that sampling
 * fell behind. */
struct sd_budget;
struct sd_pace;
void format_sampling_note(struct strbuf *sb, const struct sd_budget *b, int change,
			  const struct sd_pace *pace);

/* -v's lines on the CPU budget (budget.h; NULL: none) and on what the
 * symbols session asked libdw (symbols.h), per sample of P. */
struct sd_symcounts;
void format_budget_costs(struct strbuf *sb, const struct sd_budget *b,
			 const struct sd_symcounts *c, const struct sd_profile *p);

#endif
