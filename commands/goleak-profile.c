// SPDX-License-Identifier: MIT
// profile --goroutines (goleak-profile.h): one consistent snapshot of the
// goroutines per tick, counted by creation site (the leak table) or folded
// into a profile of their stacks, under the CPU budget of every sampling
// command.
#include "goleak-profile.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "budget.h"
#include "format-goleak.h"
#include "format-run.h"
#include "goleak.h"
#include "profile.h"
#include "safefile.h"
#include "sampling.h"

/* Sleep until NS on the monotonic clock unless interrupted. */
static void sleep_until(uint64_t ns)
{
	while (!cmd_interrupted) {
		uint64_t now = sd_now_ns();
		if (now >= ns)
			return;
		uint64_t left = ns - now;
		struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
		nanosleep(&ts, NULL); /* EINTR: the loop looks at the flag */
	}
}

int goleak_profile(struct cmd_ctx *ctx, struct sd_snap_opts *so, uint64_t interval_us,
		   uint64_t duration_us, uint64_t count, double budget, size_t limit,
		   const char *format, struct safefile *sf, const char *outpath, int locks,
		   const struct sd_prender *ro, const struct sd_profile_opts *po)
{
	/* The leak table at the terminal; any other output: the profile of
	 * the goroutines' stacks in it. */
	int table = !strcmp(format, "top") && !sf;
	if (locks || ctx->target.nprocs != 1) {
		if (locks)
			cmd_error(ctx, "profile: --goroutines: not with --locks (the lock view of "
				       "goroutines is 'stackdump locks')");
		else
			cmd_error(ctx, "profile: --goroutines samples one process (%zu given)",
				  ctx->target.nprocs);
		if (sf)
			safefile_abort(sf);
		return EXIT_USAGE;
	}
	struct sd_target *t = ctx->target.procs[0].t;
	so->goroutines = 1;
	so->no_symbols = 0; /* creation sites and frames are named from the line tables */
	so->reuse = 0;
	struct sd_goleak *gl = goleak_new();
	struct sd_profile *prof = table ? NULL : profile_new(po);
	if (prof) {
		prof->interval_us = interval_us;
		prof->rate_asked = 1e6 / (double)interval_us;
		prof->engine = strpool_intern(prof->pool, "ptrace");
	}
	uint64_t start = sd_now_ns(), next = start, interval_ns = interval_us * 1000;
	uint64_t end = duration_us ? start + duration_us * 1000 : 0;
	double cpu0 = sd_cpu_seconds();
	struct sd_budget b;
	budget_init(&b, budget, interval_ns, start);
	int rc = EXIT_OK;
	while (!cmd_interrupted) {
		if (count && gl->nsamples >= count)
			break;
		if (end && sd_now_ns() >= end)
			break;
		struct sd_error err = {0};
		struct sd_snapshot *s = target_snapshot(t, so, &err);
		if (!s) {
			cmd_error(ctx, "%s", err.msg);
			rc = gl->nsamples ? EXIT_PARTIAL : EXIT_FAIL;
			break;
		}
		if (!s->go_read) {
			cmd_error(ctx, "profile: --goroutines: process %d is not a Go program",
				  (int)s->pid);
			snapshot_free(s);
			rc = EXIT_FAIL;
			goto out;
		}
		goleak_add(gl, s);
		if (prof) {
			profile_add_goroutines(prof, s);
			prof->samples++;
		}
		if (s->partial)
			rc = EXIT_PARTIAL;
		snapshot_free(s);
		uint64_t now = sd_now_ns();
		int change = budget_tick(&b, now, sd_cpu_seconds() - cpu0);
		if (change == BUDGET_SLOWER && prof)
			prof->rate_note = "slowed to keep within the CPU budget (--cpu-budget)";
		if (change != BUDGET_SAME)
			sampling_say(ctx, 0, &b, change, NULL);
		interval_ns = b.interval_ns;
		next += interval_ns;
		if (next < now)
			next = now; /* late: missed ticks are skipped, not made up */
		if (end && next > end)
			break;
		if (!count || gl->nsamples < count)
			sleep_until(next);
	}
	if (cmd_interrupted && !gl->nsamples) {
		rc = EXIT_INTERRUPTED;
		goto out;
	}
	if (table) {
		struct strbuf sb;
		strbuf_init(&sb);
		format_goleak_text(&sb, gl, limit);
		cmd_write(ctx, sb.buf, sb.len);
		strbuf_release(&sb);
		goto out;
	}
	/* The wall time covered: the samples' intervals, or the clock when
	 * the run was cut short. */
	prof->duration_us = (sd_now_ns() - start) / 1000;
	if (!cmd_interrupted && prof->duration_us < prof->samples * b.interval_ns / 1000)
		prof->duration_us = prof->samples * b.interval_ns / 1000;
	uint8_t *buf = NULL;
	size_t len = 0;
	struct sd_error rerr = {0};
	if (format_profile_as(prof, format, ro, &buf, &len, &rerr) < 0) {
		cmd_error(ctx, "%s", rerr.msg);
		rc = EXIT_FAIL;
		goto out;
	}
	int written = sampling_write(ctx, prof, format, buf, len, sf, outpath);
	sf = NULL; /* committed or aborted */
	free(buf);
	if (written < 0)
		rc = EXIT_FAIL;
out:
	if (sf)
		safefile_abort(sf);
	profile_free(prof);
	goleak_free(gl);
	return rc;
}
