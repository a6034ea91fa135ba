// SPDX-License-Identifier: MIT
// The renderers of profiles (profile.h): top, call tree, lock statistics,
// folded stacks, JSON, flame graph SVG, pprof and the text of a diff, each
// into a buffer the caller owns.
#ifndef SD_FORMAT_PROFILE_H
#define SD_FORMAT_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "jsonw.h"
#include "profile.h"
#include "util.h"

struct sd_long_poll;

/* How a profile is rendered. */
struct sd_prender {
	int limit;            /* top: stacks shown (0: all) */
	double min_percent;   /* tree: hide nodes below */
	int color;
	int verbose;
	const char *title;
	int diff;             /* svg: differential flame graph */
	/* A Tokio program's long polls over the run (longpoll.h), longest
	 * first: after the profile (top, tree), its "long_polls" (json).
	 * TOKIO: a sampled process had a Tokio runtime (json: the member is
	 * there, empty when none); DROPPED: ended ones not kept. */
	const struct sd_long_poll *long_polls;
	size_t nlong_polls, long_polls_dropped;
	int tokio;
};

/* Samples per second P got over its duration (0 without samples). */
double profile_rate_achieved(const struct sd_profile *p);
/* "200 samples in 10.00 s (20.0 Hz)", or with the rate asked beside the
 * one got when they differ ("(12.4 Hz of 20.0 Hz asked: ...)"). */
void format_profile_rate(struct strbuf *out, const struct sd_profile *p);

/* pt-pmp like: hottest merged stacks first, with threads and states. */
void format_profile_top(struct strbuf *out, struct sd_profile *p, const struct sd_prender *o);
/* Call tree with inclusive and self percentages. */
void format_profile_tree(struct strbuf *out, struct sd_profile *p, const struct sd_prender *o);
/* Per-lock waiter statistics and holder stacks (profile --locks). */
void format_profile_locks(struct strbuf *out, struct sd_profile *p, const struct sd_prender *o);
/* Brendan Gregg's folded stacks: "root;...;leaf COUNT" per line. */
void format_profile_folded(struct strbuf *out, struct sd_profile *p);
/* The JSON document, written through W (read back by profile_load); with
 * O (may be NULL) for a Tokio program, its "long_polls". */
void format_profile_json(struct jsonw *w, struct sd_profile *p, const struct sd_prender *o);
/* A self-contained interactive flame graph. */
void format_profile_svg(struct strbuf *out, struct sd_profile *p, const struct sd_prender *o);
/* gzipped profile.proto; *OUT is heap. Returns 0 or a negative errno. */
int format_profile_pprof(struct sd_profile *p, uint8_t **out, size_t *len, struct sd_error *err);
/* Diff (from profile_diff) as text: the stacks that grew and shrank. */
void format_diff_text(struct strbuf *out, struct sd_profile *d, const struct sd_prender *o);

#endif
