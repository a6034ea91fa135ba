// SPDX-License-Identifier: MIT
// profile: the poor man's profiler. Samples every thread of one or more
// processes at a fixed rate (snapshots unwound but not symbolized), merges
// the stacks and writes them as top, tree, folded, SVG, pprof or JSON.
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "budget.h"
#include "format-run.h"
#include "pollwatch.h"
#include "procfs.h"
#include "profile.h"
#include "safefile.h"
#include "sampler.h"
#include "symbols.h"
#include "cmd.h"
#include "goleak-profile.h"
#include "sampling.h"

enum {
	PROF_RATE = SNAP_OPT__COUNT,
	PROF_INTERVAL,
	PROF_DURATION,
	PROF_COUNT,
	PROF_PID_OF,
	PROF_ENGINE,
	PROF_PERF_BUFFER,
	PROF_CPU_BUDGET,
	PROF_ON_CPU,
	PROF_OFF_CPU,
	PROF_NO_IDLE,
	PROF_IDLE,
	PROF_GROUP_THREADS,
	PROF_BY_ADDRESS,
	PROF_LOCKS,
	PROF_FORMAT,
	PROF_OUTPUT,
	PROF_LIMIT,
	PROF_MIN_PERCENT,
	PROF_TITLE,
	PROF_QUIET,
	PROF_VERBOSE,
	PROF_GOROUTINES,
};

static const struct cmd_option profile_options[] = {
    CMD_SNAPSHOT_OPTIONS,
    [PROF_RATE] = OPT_REAL("rate", 'r', "HZ", "samples per second (default 20)", 0.01, 10000, "20",
			   "samples per second, 0.01 to 10000"),
    [PROF_INTERVAL] =
	OPT_DURATION("interval", 'i', "time between samples, instead of --rate (e.g. 100ms)", 100,
		     3600000000.0, NULL, "e.g. 50ms, 1s; 100us to 1h"),
    [PROF_DURATION] =
	OPT_DURATION("duration", 'd', "how long to sample (default 10s; 0: until Ctrl-C)", 0, 0,
		     "10s", "e.g. 30s, 2m; 0 runs until Ctrl-C"),
    [PROF_COUNT] = OPT_COUNT("count", 'c', "N", "stop after N samples", 1, 100000000, NULL,
			     "a number of samples, at least 1"),
    [PROF_PID_OF] = OPT_PID_OF(0, "every process named NAME, aggregated"),
    [PROF_ENGINE] = OPT_CHOICE("engine", 'e', "ENGINE",
			       "auto (perf events where permitted, unless the threads wait 2000 times a second or more and no per-CPU clock samples them; else ptrace), perf or ptrace "
			       "(default auto)",
			       "auto perf ptrace", "auto"),
    [PROF_PERF_BUFFER] = OPT_SIZE("perf-buffer", 0,
				  "perf engine: ring buffer per thread that runs (default 128k, "
				  "64k past 256 such threads)",
				  4096, 64 << 20, NULL, NULL),
    [PROF_CPU_BUDGET] = OPT_CPU_BUDGET,
    [PROF_ON_CPU] = OPT_FLAG("on-cpu", 0, "only samples of threads on a CPU (state R)"),
    [PROF_OFF_CPU] = OPT_FLAG("off-cpu", 0, "only samples of threads off CPU (blocked, sleeping)"),
    [PROF_NO_IDLE] = OPT_FLAG(
	"no-idle", 0, "hide threads idling in epoll_wait, poll, accept, condvars, sleep..."),
    [PROF_IDLE] = OPT_FLAG("idle", 0, "svg: keep idle threads (the flame graph hides them by default)"),
    [PROF_GROUP_THREADS] =
	OPT_FLAG("group-threads", 'g', "count worker-1..worker-N as one family worker-*"),
    [PROF_BY_ADDRESS] = OPT_FLAG("by-address", 0, "merge stacks by address, not by function"),
    [PROF_LOCKS] =
	OPT_FLAG("locks", 0, "per lock: waiters per sample and what the holder was doing"),
    [PROF_FORMAT] = OPT_FORMAT("top, tree, folded, svg, pprof or json (default top)",
			       "top tree folded svg pprof json", "top"),
    [PROF_OUTPUT] =
	OPT_STRING("output", 'o', "FILE",
		   "write the profile to FILE (needed for pprof on a terminal)", CMPL_FILE),
    [PROF_LIMIT] =
	OPT_COUNT("limit", 'l', "N", "top: show the N hottest stacks (default 20, 0: all)", 0,
		  1000000000, "20", "a number, 0 for all"),
    [PROF_MIN_PERCENT] =
	OPT_REAL("min-percent", 0, "PCT", "tree: hide call paths under PCT% (default 0.5)", 0, 100,
		 "0.5", "0 to 100"),
    [PROF_TITLE] = OPT_STRING("title", 0, "TEXT", "svg: the title of the flame graph", CMPL_NONE),
    [PROF_QUIET] = OPT_FLAG("quiet", 'q', "no progress line"),
    [PROF_VERBOSE] =
	OPT_FLAG("verbose", 'v', "timings, sampling cost and cache hit rates on stderr"),
    [PROF_GOROUTINES] = OPT_FLAG("goroutines", 0, "a Go program: goroutines by creation site "
						  "(a leak grows), or with --format/-o their stacks"),
    {0},
};

/* A process being sampled. */
struct ptarget {
	struct sd_target *t;
	struct sd_sampler *smp;
	int gone;    /* exited or failed: not sampled any more */
};

/* Checks between options, before the processes are resolved. */
static int profile_check(struct cmd_ctx *ctx)
{
	if (cmd_snap_check(ctx) < 0)
		return -1;
	if (cmd_has(ctx, PROF_RATE) && cmd_has(ctx, PROF_INTERVAL)) {
		cmd_error(ctx, "profile: give --rate or --interval, not both");
		return -1;
	}
	if (cmd_has(ctx, PROF_ON_CPU) && cmd_has(ctx, PROF_OFF_CPU)) {
		cmd_error(ctx, "profile: --on-cpu and --off-cpu exclude each other");
		return -1;
	}
	const char *format = cmd_output_format(ctx, PROF_FORMAT, PROF_OUTPUT, 0);
	if (!format)
		return -1;
	int locks = cmd_has(ctx, PROF_LOCKS);
	if (locks && cmd_is(ctx, PROF_ENGINE, "perf")) {
		cmd_error(ctx, "profile: --locks needs --engine ptrace (lock words are read while "
			       "the threads are stopped)");
		return -1;
	}
	if (locks && strcmp(format, "top") && strcmp(format, "tree") && strcmp(format, "json")) {
		cmd_error(ctx, "profile: --locks gives a text or JSON report, not %s", format);
		return -1;
	}
	const char *outpath = cmd_str(ctx, PROF_OUTPUT);
	if (!strcmp(format, "pprof") && !outpath && isatty(fileno(ctx->out))) {
		cmd_error(ctx, "profile: pprof output is binary: write it with -o FILE (or redirect "
			       "stdout)");
		return -1;
	}
	/* A flame graph is for a browser: refused on a terminal before any
	 * sampling, like pprof, rather than XML on the screen after it. */
	if (!strcmp(format, "svg") && !outpath && isatty(fileno(ctx->out))) {
		cmd_error(ctx, "profile: an SVG flame graph is for a browser: write it with -o "
			       "FILE.svg (or redirect stdout)");
		return -1;
	}
	if (cmd_has(ctx, PROF_IDLE) && cmd_has(ctx, PROF_NO_IDLE)) {
		cmd_error(ctx, "profile: --idle and --no-idle exclude each other");
		return -1;
	}
	return 0;
}

static int profile_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	struct sd_snap_opts so;
	pid_t *tids = NULL;
	struct ptarget *tv = NULL;
	struct sd_profile *prof = NULL;
	struct sd_pollwatch *pw = NULL; /* a Tokio program's long polls */
	struct safefile sf;
	int have_out = 0;
	int rc = EXIT_FAIL;

	if (cmd_snap_opts(ctx, &so, &tids) < 0)
		return EXIT_USAGE;
	so.no_symbols = 1;
	so.reuse = 1; /* a thread that did not run since the last sample is not read */
	so.light_discover = 2; /* a sample reads nothing per thread from /proc */

	/* Rate and stop conditions (checked by profile_check). */
	double rate = cmd_real(ctx, PROF_RATE);
	uint64_t interval_us, duration_us = cmd_num(ctx, PROF_DURATION),
			      count = cmd_num(ctx, PROF_COUNT);
	interval_us = (uint64_t)(1e6 / rate);
	if (cmd_has(ctx, PROF_INTERVAL))
		interval_us = cmd_num(ctx, PROF_INTERVAL);
	if (count && !cmd_has(ctx, PROF_DURATION))
		duration_us = 0;
	const char *format = cmd_output_format(ctx, PROF_FORMAT, PROF_OUTPUT, 1);
	if (!format)
		return EXIT_USAGE;
	int locks = cmd_has(ctx, PROF_LOCKS);
	struct sd_sampler_opts smo = {.engine = SD_ENGINE_AUTO};
	sd_engine_parse(cmd_str(ctx, PROF_ENGINE), &smo.engine); /* a checked choice */
	smo.ring_kb = (size_t)(cmd_num(ctx, PROF_PERF_BUFFER) / 1024);
	/* Lock words must be read at the instant of the stack: ptrace. */
	if (locks)
		smo.engine = SD_ENGINE_PTRACE;
	struct sd_prender ro = {.limit = (int)cmd_num(ctx, PROF_LIMIT),
				.min_percent = cmd_real(ctx, PROF_MIN_PERCENT),
				.color = ctx->color};
	ro.title = cmd_str(ctx, PROF_TITLE);
	const char *outpath = cmd_str(ctx, PROF_OUTPUT);

	/* Processes: PIDs or names, every process named by --pid-of, or the
	 * shell's current target (resolved by the table). */
	size_t nt = ctx->target.nprocs;
	tv = sd_xcalloc(nt + 1, sizeof(*tv));
	for (size_t i = 0; i < nt; i++)
		tv[i].t = ctx->target.procs[i].t;
	int partial = ctx->target.failed > 0;
	if (outpath) {
		/* Created before sampling, so that a refused name fails at
		 * once (safefile.h: never through a link or FIFO). */
		struct sd_error oerr = {0};
		if (safefile_begin(&sf, outpath, 0600, 0, &oerr) < 0) {
			cmd_error(ctx, "%s", oerr.msg);
			rc = EXIT_FAIL;
			goto out;
		}
		have_out = 1;
	}

	struct sd_profile_opts po;
	profile_opts_init(&po);
	po.by_address = cmd_has(ctx, PROF_BY_ADDRESS);
	po.group_threads = cmd_has(ctx, PROF_GROUP_THREADS);
	/* The flame graph of a server is mostly threads asleep waiting for
	 * work: hidden there unless --idle asks for them. */
	po.no_idle = cmd_has(ctx, PROF_NO_IDLE) || (!strcmp(format, "svg") && !cmd_has(ctx, PROF_IDLE));
	po.cpu = cmd_has(ctx, PROF_ON_CPU)    ? SD_CPU_ON
		 : cmd_has(ctx, PROF_OFF_CPU) ? SD_CPU_OFF
					      : SD_CPU_ALL;
	po.locks = locks;
	po.no_inline = so.no_inline;
	po.no_source = so.no_source;
	if (cmd_has(ctx, PROF_GOROUTINES)) { /* the goroutines' view */
		rc = goleak_profile(ctx, &so, interval_us, duration_us, count,
				    cmd_real(ctx, PROF_CPU_BUDGET), (size_t)cmd_num(ctx, PROF_LIMIT),
				    format, have_out ? &sf : NULL, outpath, locks, &ro, &po);
		have_out = 0;
		goto out;
	}
	prof = profile_new(&po);
	prof->interval_us = interval_us;
	prof->rate_asked = 1e6 / (double)interval_us;
	pw = pollwatch_new((double)interval_us / 1e6);

	/* One sampler per process; auto says once why perf could not be used. */
	smo.interval_us = interval_us;
	int said_fallback = 0, nperf = 0, nptrace = 0;
	for (size_t i = 0; i < nt; i++) {
		struct sd_error err = {0};
		tv[i].smp = sampler_new(tv[i].t, &so, &smo, &err);
		if (!tv[i].smp) {
			cmd_error(ctx, "%s", err.msg);
			rc = EXIT_FAIL;
			goto out;
		}
		if (sampler_fallback(tv[i].smp) && !said_fallback) {
			cmd_error(ctx, "perf engine not available, sampling with ptrace: %s",
				  sampler_fallback(tv[i].smp));
			said_fallback = 1;
		}
		if (sampler_choice(tv[i].smp) && !prof->engine_why)
			prof->engine_why = strpool_intern(prof->pool, sampler_choice(tv[i].smp));
		int perf = sampler_engine(tv[i].smp) == SD_ENGINE_PERF;
		nperf += perf;
		nptrace += !perf;
	}
	prof->engine = strpool_intern(prof->pool, nperf && nptrace ? "perf+ptrace"
						  : nperf	    ? "perf"
								    : "ptrace");

	/* Sample. Ticks are planned on a fixed grid; when a snapshot takes
	 * longer than the interval the missed ticks are skipped, not made up
	 * in a burst, so the achieved rate is what the machine allows. */
	int progress = isatty(fileno(ctx->err)) && !cmd_has(ctx, PROF_QUIET);
	double cpu0 = sd_cpu_seconds();
	uint64_t start = sd_now_ns(), next = start, last_progress = 0;
	uint64_t interval_ns = interval_us * 1000, end_ns = duration_us ? start + duration_us * 1000 : 0;
	/* Our own CPU against the budget: over it, ticks come less often. */
	struct sd_budget budget;
	budget_init(&budget, cmd_real(ctx, PROF_CPU_BUDGET), interval_ns, start);
	struct sd_pace pace;
	pace_init(&pace, start + 2000000000ull); /* the start is not judged */
	int ended_by_clock = 0;
	size_t live = nt;
	int fatal = 0;
	struct sd_sampler **smps = sd_xcalloc(nt + 1, sizeof(*smps));
	for (size_t i = 0; i < nt; i++)
		smps[i] = tv[i].smp;
	/* perf: a tick is the latest sample of each thread, so the first
	 * one comes an interval after the events were opened. */
	uint64_t last_tick = start;
	if (nperf) {
		/* Ticks at start + k intervals, k = 1..N: N ticks cover
		 * (start, start + N intervals], the duration asked. */
		if (end_ns)
			end_ns += interval_ns / 2;
		next = start + interval_ns;
		if (end_ns && next > end_ns)
			next = end_ns;
		sampler_sleep_until(smps, nt, next);
	}
	/* With perf alone, ticks stay on the grid: a tick composed late shows
	 * the threads as they were at its planned time, so a stackdump that
	 * was not scheduled in time makes the missed ticks up from the
	 * samples the kernel took meanwhile instead of skipping them. */
	int on_grid = nperf && !nptrace;
	while (!cmd_interrupted && live) {
		if (count && prof->samples >= count)
			break;
		uint64_t now = sd_now_ns();
		if (end_ns && (on_grid ? next : now) >= end_ns)
			break;
		/* The time asked is kept: ticks a late stackdump has not
		 * composed by then are not made up after it. */
		if (end_ns && now >= end_ns) {
			ended_by_clock = 1;
			break;
		}
		int took = 0;
		for (size_t i = 0; i < nt && !cmd_interrupted; i++) {
			if (tv[i].gone)
				continue;
			struct sd_error err = {0};
			struct sd_snapshot *s = sampler_take_at(tv[i].smp, on_grid ? next : 0, &err);
			if (!s) {
				tv[i].gone = 1;
				live--;
				partial = 1;
				if (progress)
					fprintf(ctx->err, "\r\033[K");
				if (!target_alive(tv[i].t)) {
					cmd_error(ctx, "process %d exited after %.1f s; its samples are kept",
						  (int)tv[i].t->pid, (double)(now - start) / 1e9);
					for (size_t k = 0; k < prof->nprocs; k++)
						if (prof->procs[k].pid == tv[i].t->pid)
							prof->procs[k].exited = 1;
				} else {
					cmd_error(ctx, "%s", err.msg);
					if (!prof->samples)
						fatal = 1;
				}
				continue;
			}
			pollwatch_sample(pw, tv[i].t, s);
			profile_add_snapshot(prof, tv[i].t, s, NULL);
			snapshot_free(s);
			took = 1;
		}
		if (took) {
			prof->samples++;
			last_tick = on_grid ? next : sd_now_ns();
		}
		now = sd_now_ns();
		prof->duration_us = (now - start) / 1000;
		if (progress && now - last_progress > 250000000ull) {
			sampling_progress(ctx, live, prof->samples, now - start, duration_us);
			last_progress = now;
		}
		/* Work done once (new stacks symbolized, a Tokio DWARF read): not budgeted. */
		double used = sd_cpu_seconds() - cpu0 - (double)prof->symbolize_cpu_ns / 1e9 -
			      pollwatch_once_cpu(pw);
		int change = budget_tick(&budget, now, used);
		if (change != BUDGET_SAME) {
			if (change == BUDGET_SLOWER)
				prof->rate_note = "slowed to keep within the CPU budget (--cpu-budget)";
			sampling_say(ctx, progress, &budget, change, NULL);
			pace_init(&pace, now); /* judged again at the new rate */
			pace.win_samples = prof->samples;
		}
		interval_ns = budget.interval_ns;
		if (pace_check(&pace, now, prof->samples, interval_ns, on_grid, now - next)) {
			if (!prof->rate_note)
				prof->rate_note = "stackdump fell behind (a busy host, or samples "
						  "slower than the interval)";
			sampling_say(ctx, progress, &budget, BUDGET_SAME, &pace);
		}
		next += interval_ns;
		if (next < now && !on_grid)
			next = now; /* behind: sample again at once, skip the missed ticks */
		if (end_ns && next > end_ns)
			next = end_ns;
		if (count && prof->samples >= count)
			break;
		if (!cmd_interrupted && live)
			sampler_sleep_until(smps, nt, next);
	}
	free(smps);
	/* Nothing watches the target while the profile is written. */
	for (size_t i = 0; i < nt; i++)
		sampler_stop(tv[i].smp);
	{
		struct sd_perf_stats ps = {0};
		for (size_t i = 0; i < nt; i++)
			sampler_stats_add(tv[i].smp, &ps);
		prof->lost_samples = ps.lost;
		prof->stale_stacks = ps.stale;
		prof->throttled = ps.throttled;
	}
	uint64_t stop = sd_now_ns();
	/* Each sample stands for one interval: N samples on time cover N
	 * intervals, even though the last one was taken at (N-1) intervals. */
	prof->duration_us = (stop - start) / 1000;
	if (!sampling_ended_early(prof) && prof->duration_us < prof->samples * interval_us)
		prof->duration_us = prof->samples * interval_us;
	/* perf: each tick closes the interval before it; the run covered up
	 * to the last one. */
	if (nperf && !sampling_ended_early(prof) && prof->samples)
		prof->duration_us = (last_tick - start) / 1000;
	/* Ended by the clock with ticks not composed: the run covered the
	 * time asked, at the rate it got. */
	if (ended_by_clock && nperf && !sampling_ended_early(prof))
		prof->duration_us = duration_us;
	double cpu = sd_cpu_seconds() - cpu0;
	if (progress)
		fprintf(ctx->err, "\r\033[K");
	int interrupted = cmd_interrupted;
	if (interrupted)
		cmd_interrupted = 0; /* handled: the profile is still written */
	if (fatal && !prof->samples) {
		rc = EXIT_FAIL;
		goto out;
	}
	if (!prof->samples) {
		if (interrupted)
			cmd_error(ctx, "interrupted before the first sample; nothing written");
		rc = interrupted ? EXIT_INTERRUPTED : EXIT_FAIL;
		goto out;
	}
	if (interrupted)
		cmd_error(ctx, "interrupted: writing the profile of %llu samples",
			  (unsigned long long)prof->samples);

	sampling_long_polls(pw, &ro);
	uint8_t *buf = NULL;
	size_t len = 0;
	struct sd_error rerr = {0};
	if (format_profile_as(prof, format, &ro, &buf, &len, &rerr) < 0) {
		cmd_error(ctx, "%s", rerr.msg);
		rc = EXIT_FAIL;
		goto out;
	}
	int written = sampling_write(ctx, prof, format, buf, len, have_out ? &sf : NULL, outpath);
	have_out = 0;
	if (written < 0) {
		free(buf);
		rc = EXIT_FAIL;
		goto out;
	}
	free(buf);
	fflush(ctx->out);
	sampling_long_polls_note(ctx, format, &ro);
	if (cmd_has(ctx, PROF_VERBOSE)) {
		struct sd_target **ts = sd_xcalloc(nt + 1, sizeof(*ts));
		struct sd_sampler **ss = sd_xcalloc(nt + 1, sizeof(*ss));
		for (size_t i = 0; i < nt; i++) {
			ts[i] = tv[i].t;
			ss[i] = tv[i].smp;
		}
		sampling_costs(ctx, prof, ts, ss, nt, cpu, (double)(stop - start) / 1e9, &budget, pw);
		free(ts);
		free(ss);
	}
	rc = partial ? EXIT_PARTIAL : EXIT_OK;
out:
	if (have_out)
		safefile_abort(&sf);
	profile_free(prof);
	pollwatch_free(pw);
	for (size_t i = 0; i < nt; i++)
		sampler_free(tv[i].smp);
	free(tv);
	free(tids);
	return rc;
}

const struct cmd_entry cmd_profile_entry = {
	.name = "profile",
	.args_usage = "PID|NAME...",
	.summary = "sample every thread at a fixed rate and show where time goes",
	.description =
	    "The poor man's profiler: takes a snapshot of every thread RATE times a second\n"
	    "(unwound only; each distinct stack is symbolized once), merges identical\n"
	    "stacks and shows them hottest first (top), as a call tree, as folded stacks\n"
	    "(flamegraph.pl, inferno, speedscope), as an interactive SVG flame graph, as\n"
	    "pprof (gzipped profile.proto for pprof, Pyroscope, Parca) or as JSON (read\n"
	    "back by 'diff'). Samples are wall-clock: threads off CPU are counted too, with\n"
	    "their state, so --off-cpu shows where threads block. Ctrl-C stops early and\n"
	    "still writes the profile. --goroutines: a Go program's goroutines counted by\n"
	    "the go statement that created them, sample by sample (a leak only grows); with\n"
	    "--format or -o, each sample counts each goroutine's stack instead.\n"
	    "Exit status: 0 profile written, 1 partial (a process exited or could not be\n"
	    "sampled), 2 failure, 64 usage error, 130 interrupted before any sample.",
	.options = profile_options,
	.min_args = 0,
	.max_args = -1,
	.arg_complete = CMPL_PID,
	.flags = CMD_NEEDS_TARGET | CMD_TARGET_ATTACH | CMD_TARGET_MANY | CMD_TARGET_SET,
	.target_missing = "missing argument (PID|NAME... or --pid-of NAME)\nusage: stackdump "
			  "profile [options] PID|NAME...",
	.check = profile_check,
	.exec = profile_exec,
};
