// SPDX-License-Identifier: MIT
// The sampling driver that profile, top and record take their ticks from:
// one target, one capture engine (ptrace snapshots, or perf-event samples
// drained from ring buffers), chosen once, with the reason when the
// engine asked for automatically could not be used.
#ifndef SD_SAMPLER_H
#define SD_SAMPLER_H

#include <stdint.h>

#include "perf.h"
#include "snapshot.h"
#include "util.h"

struct sd_target;
struct sd_snap_opts;

enum sd_engine {
	SD_ENGINE_AUTO = 0, /* perf where perf_event_open is permitted and the
			     * threads switch less than 2000 times a second,
			     * else ptrace */
	SD_ENGINE_PTRACE,
	SD_ENGINE_PERF,
};

/* "auto", "ptrace" or "perf". */
const char *sd_engine_name(enum sd_engine e);
/* Parse NAME into *E. 0, or -1 when NAME is none of the above. */
int sd_engine_parse(const char *name, enum sd_engine *e);

struct sd_sampler_opts {
	enum sd_engine engine;
	uint64_t interval_us; /* the tick interval (the perf sample period) */
	size_t stack_copy;    /* perf: user stack bytes per sample (0: 16 KiB) */
	size_t ring_kb;       /* perf: ring buffer per thread (0: default) */
};

struct sd_sampler;

/* A sampler of T (not owned; T must outlive it) taking snapshots with SO
 * (copied, except the arrays it points to, which must outlive it). With
 * engine auto, a refused perf_event_open falls back to ptrace and
 * sampler_fallback() says why. With engine perf, a refusal is an error.
 * NULL and ERR on failure. */
struct sd_sampler *sampler_new(struct sd_target *t, const struct sd_snap_opts *so,
			       const struct sd_sampler_opts *o, struct sd_error *err);
/* NULL does nothing. Closes every perf event. */
void sampler_free(struct sd_sampler *s);
/* Sampling is over: close what watches the target (perf events and their
 * rings, the target's open /proc files and switch-record rings) at once,
 * before the profile is written; the statistics stay. */
void sampler_stop(struct sd_sampler *s);

/* The engine in use (never auto). */
enum sd_engine sampler_engine(const struct sd_sampler *s);
/* Why auto fell back to ptrace (static to the sampler), or NULL. */
const char *sampler_fallback(const struct sd_sampler *s);
/* What auto chose and why (the threads' switches a second, watched for
 * 0.1 s before the first tick), or NULL when no choice was made. */
const char *sampler_choice(const struct sd_sampler *s);

/* One tick: a snapshot of every thread (unwound, not symbolized) owned by
 * the caller, or NULL and ERR (ESRCH when the process exited). */
struct sd_snapshot *sampler_take(struct sd_sampler *s, struct sd_error *err);
/* The same for a tick planned at AT_NS (CLOCK_MONOTONIC ns, at or before
 * now; 0: now). perf composes the threads as they were then (a tick taken
 * late is still the state at its own time); ptrace can only look now. */
struct sd_snapshot *sampler_take_at(struct sd_sampler *s, uint64_t at_ns, struct sd_error *err);

/* Sleep until DEADLINE_NS (CLOCK_MONOTONIC, as sd_now_ns), draining the
 * ring buffers of the perf samplers among V[0..N) when they fill up. Returns
 * early when a signal arrives. */
void sampler_sleep_until(struct sd_sampler *const *v, size_t n, uint64_t deadline_ns);

/* Add the perf counters of S (zero for ptrace) to *ST. */
void sampler_stats_add(const struct sd_sampler *s, struct sd_perf_stats *st);

#endif
