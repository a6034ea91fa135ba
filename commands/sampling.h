// SPDX-License-Identifier: MIT
// What the sampling commands (profile, top) print besides their output:
// notes during the run when sampling is slowed or falls behind, the file
// written with the rate got, and -v's costs.
#ifndef SD_SAMPLING_H
#define SD_SAMPLING_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cmd.h"

struct safefile;
struct sd_budget;
struct sd_pace;
struct sd_pollwatch;
struct sd_prender;
struct sd_profile;
struct sd_sampler;
struct sd_target;

/* A line on stderr: B's interval changed (CHANGE, budget.h), or with
 * PACE, sampling fell behind. PROGRESS: a progress line is to be erased
 * first. */
void sampling_say(struct cmd_ctx *ctx, int progress, const struct sd_budget *b, int change,
		  const struct sd_pace *pace);

/* Write the rendered profile BUF (LEN bytes, in FORMAT) through SF (begun
 * for OUTPATH, safefile.h; committed, or aborted on failure, here) with a
 * summary line on stderr, or to stdout when SF is NULL (with the rate got
 * on stderr for folded stacks, which have no header). 0, or -1 after
 * saying why. */
int sampling_write(struct cmd_ctx *ctx, const struct sd_profile *p, const char *format,
		   const uint8_t *buf, size_t len, struct safefile *sf, const char *outpath);

/* -v: what the run cost (engine, caches, libdw lookups, CPU and its
 * budget B; with PW, the reading of a Tokio program's workers) for the N
 * targets T sampled by S, on stderr. */
void sampling_costs(struct cmd_ctx *ctx, const struct sd_profile *p, struct sd_target *const *t,
		    struct sd_sampler *const *s, size_t n, double cpu, double wall,
		    const struct sd_budget *b, const struct sd_pollwatch *pw);

/* Did the run of P stop before its samples' intervals were over (Ctrl-C,
 * or a process exit)? Then the wall time is the truth. */
int sampling_ended_early(const struct sd_profile *p);

/* The progress line at a terminal: LIVE processes sampled, SAMPLES taken
 * in ELAPSED_NS of DURATION_US (0: until Ctrl-C). */
void sampling_progress(struct cmd_ctx *ctx, size_t live, uint64_t samples, uint64_t elapsed_ns,
		       uint64_t duration_us);

/* The long polls W found (a Tokio program's, pollwatch.h) into RO, for the
 * profile's text and JSON; and, for the formats that have no room for
 * them (folded, svg, pprof), on stderr after the profile. */
void sampling_long_polls(struct sd_pollwatch *w, struct sd_prender *ro);
void sampling_long_polls_note(struct cmd_ctx *ctx, const char *format,
			      const struct sd_prender *ro);

#endif
