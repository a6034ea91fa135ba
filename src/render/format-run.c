// SPDX-License-Identifier: MIT
// The profile in a format chosen by name, and the costs of a sampling run
// (format-run.h).
#include "format-run.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "budget.h"
#include "longpoll.h"
#include "symbols.h"

int format_profile_as(struct sd_profile *p, const char *format, const struct sd_prender *ro,
		      uint8_t **buf, size_t *len, struct sd_error *err)
{
	if (!strcmp(format, "pprof"))
		return format_profile_pprof(p, buf, len, err);
	struct strbuf sb;
	strbuf_init(&sb);
	if (!strcmp(format, "json")) {
		struct jsonw w;
		jsonw_init(&w, &sb, 2);
		format_profile_json(&w, p, ro);
		jsonw_release(&w);
		strbuf_adds(&sb, "\n");
	} else if (!strcmp(format, "folded")) {
		format_profile_folded(&sb, p);
	} else if (!strcmp(format, "svg")) {
		format_profile_svg(&sb, p, ro);
	} else if (p->opts.locks) {
		format_profile_locks(&sb, p, ro);
	} else if (!strcmp(format, "tree")) {
		format_profile_tree(&sb, p, ro);
	} else {
		format_profile_top(&sb, p, ro);
	}
	/* The text formats: a Tokio program's long polls after the profile. */
	if (ro->nlong_polls && strcmp(format, "json") && strcmp(format, "folded") &&
	    strcmp(format, "svg")) {
		strbuf_adds(&sb, "\n");
		format_long_polls_text(&sb, ro, 10);
	}
	*len = sb.len;
	*buf = (uint8_t *)strbuf_detach(&sb);
	return 0;
}

void format_long_polls_text(struct strbuf *out, const struct sd_prender *ro, size_t limit)
{
	size_t n = ro->nlong_polls, more = n > limit ? n - limit + ro->long_polls_dropped : 0;
	strbuf_adds(out, "Long polls of Tokio tasks (one poll across samples, longest first):\n");
	for (size_t i = 0; i < n && i < limit; i++) {
		strbuf_adds(out, "  ");
		longpoll_text(out, NULL, &ro->long_polls[i]);
		strbuf_adds(out, ro->long_polls[i].ongoing ? ", still in it at the last sample\n" : "\n");
	}
	if (more)
		strbuf_addf(out, "  ... and %zu more (--format json lists the %zu longest)\n", more, n);
}

void format_profile_costs(struct strbuf *sb, const struct sd_profile *p,
			  const struct sd_perf_stats *ps, uint64_t lookups, uint64_t hits,
			  double cpu, double wall)
{
	uint64_t snaps = 0;
	for (size_t i = 0; i < p->nprocs; i++)
		snaps += p->procs[i].samples;
	double per = snaps ? 1.0 / (double)snaps : 0;
	strbuf_addf(sb, "engine: %s", p->engine ? p->engine : "ptrace");
	if (p->engine_why)
		strbuf_addf(sb, " (auto: %s)", p->engine_why);
	strbuf_adds(sb, "\n");
	if (ps && p->engine && strstr(p->engine, "perf"))
		strbuf_addf(sb,
			    "perf: %llu task-clock and %llu context-switch samples, %llu lost "
			    "(%llu thread stacks counted again for want of one), "
			    "throttled %llu times; %llu unwound, %llu stacks captured by ptrace, "
			    "%llu threads followed, %llu gone, events opened %llu times "
			    "(%llu refused), closed at rest %llu times, %llu threads unwatched, "
			    "%llu ring reads; %llu threads switching too often for a switch "
			    "event (hot: at a tick, %llu read asleep without a stop, %llu "
			    "still in that sleep, %llu from their latest task-clock sample, "
			    "%llu stopped; %llu hot from their first events); per-CPU clock on "
			    "%llu CPUs: %llu samples of hot threads taken, %llu older ones of "
			    "theirs and %llu of anything else passed over\n",
			    (unsigned long long)ps->clock_samples,
			    (unsigned long long)ps->switch_samples, (unsigned long long)ps->lost,
			    (unsigned long long)ps->stale,
			    (unsigned long long)ps->throttled, (unsigned long long)ps->unwinds,
			    (unsigned long long)ps->seeded, (unsigned long long)ps->threads_opened,
			    (unsigned long long)ps->threads_closed, (unsigned long long)ps->armed,
			    (unsigned long long)ps->arm_failed, (unsigned long long)ps->rested,
			    (unsigned long long)ps->watch_failed, (unsigned long long)ps->drains,
			    (unsigned long long)ps->hot, (unsigned long long)ps->hot_asleep,
			    (unsigned long long)ps->hot_kept, (unsigned long long)ps->hot_clock,
			    (unsigned long long)ps->hot_stopped, (unsigned long long)ps->hot_at_start,
			    (unsigned long long)ps->cpus, (unsigned long long)ps->cpu_samples,
			    (unsigned long long)ps->cpu_older, (unsigned long long)ps->cpu_passed);
	strbuf_addf(
	    sb,
	    "sampling: %llu samples in %.2f s (%.1f Hz), %llu thread stacks, %llu "
	    "unreadable\n"
	    "per snapshot: capture %.2f ms (pause %.2f ms, max %.2f ms), unwind %.2f ms\n"
	    "stack cache: %llu lookups, %llu hits (%.1f%%), %zu distinct stacks symbolized "
	    "in %.1f ms\n"
	    "symbol cache: %llu lookups, %llu hits (%.1f%%)\n"
	    "stackdump CPU: %.2f s over %.2f s (%.0f%% of a core)\n",
	    (unsigned long long)p->samples, wall, wall > 0 ? (double)p->samples / wall : 0.0,
	    (unsigned long long)(p->thread_samples + p->filtered), (unsigned long long)p->lost,
	    (double)p->capture_us * per / 1000.0, (double)p->pause_us * per / 1000.0,
	    (double)p->max_pause_us / 1000.0,
	    (double)p->unwind_us * per / 1000.0, (unsigned long long)p->raw_lookups,
	    (unsigned long long)p->raw_hits,
	    p->raw_lookups ? 100.0 * (double)p->raw_hits / (double)p->raw_lookups : 0.0, p->nstacks,
	    (double)p->symbolize_us / 1000.0, (unsigned long long)lookups, (unsigned long long)hits,
	    lookups ? 100.0 * (double)hits / (double)lookups : 0.0, cpu, wall,
	    wall > 0 ? 100.0 * cpu / wall : 0.0);
	if (p->nfrozen + p->nasleep + p->nreused)
		strbuf_addf(sb,
			    "threads per snapshot: %.1f frozen, %.1f read without stopping, "
			    "%.1f reused, %.2f retried, %.2f stopped for registers, %.2f with rbp "
			    "from the call site%s%s\n",
			    (double)p->nfrozen * per, (double)p->nasleep * per,
			    (double)p->nreused * per, (double)p->nretried * per,
			    (double)p->nregstops * per, (double)p->nrbp_inferred * per,
			    p->proof ? "; sleepers proven by " : "", p->proof ? p->proof : "");
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n > k && strcasecmp(s + n - k, suffix) == 0;
}

const char *format_for_path(const char *path)
{
	static const struct {
		const char *suffix, *format;
	} by_name[] = {
	    {".pprof", "pprof"}, {".pb", "pprof"},   {".pb.gz", "pprof"}, {".svg", "svg"},
	    {".json", "json"},	 {".folded", "folded"}, {".txt", "top"},
	};
	for (size_t i = 0; path && i < sizeof(by_name) / sizeof(by_name[0]); i++)
		if (ends_with(path, by_name[i].suffix))
			return by_name[i].format;
	return NULL;
}

void format_budget_costs(struct strbuf *sb, const struct sd_budget *b,
			 const struct sd_symcounts *c, const struct sd_profile *p)
{
	uint64_t samples = p->samples;
	if (b) {
		double steady = budget_steady_percent(b);
		strbuf_addf(sb, "cpu budget: ");
		if (b->percent > 0)
			strbuf_addf(sb, "%g%% of a core (--cpu-budget)", b->percent);
		else
			strbuf_adds(sb, "none (--cpu-budget 0)");
		if (steady >= 0)
			strbuf_addf(sb,
				    "; used %.2f%% of a core after the first second (the first "
				    "symbolization of each new stack and the modules' indexing, "
				    "%.0f ms of CPU in all, not counted)",
				    steady, (double)p->symbolize_cpu_ns / 1e6);
		strbuf_addf(sb, "; sampling slowed %u times, sped up again %u times", b->slowed,
			    b->restored);
		if (b->interval_ns != b->asked_ns)
			strbuf_addf(sb, "; last at %.2f Hz of %.2f Hz asked", 1e9 / (double)b->interval_ns,
				    1e9 / (double)b->asked_ns);
		strbuf_adds(sb, "\n");
	}
	if (c) {
		double per = samples ? 1.0 / (double)samples : 0;
		strbuf_addf(sb,
			    "libdw lookups: %llu frame addresses resolved, %llu data symbol scans "
			    "(%.3f per sample); data symbols: %llu lookups, %llu from the cache or "
			    "index without libdw\n",
			    (unsigned long long)c->frame_resolves, (unsigned long long)c->data_scans,
			    (double)(c->frame_resolves + c->data_scans) * per,
			    (unsigned long long)c->data_lookups,
			    (unsigned long long)(c->data_lookups - c->data_scans));
	}
}

void format_sampling_note(struct strbuf *sb, const struct sd_budget *b, int change,
			  const struct sd_pace *pace)
{
	double asked = 1e9 / (double)b->asked_ns, now = 1e9 / (double)b->interval_ns;
	if (pace)
		strbuf_addf(sb, "falling behind: %.1f samples/s over the last %.0f s, %.1f Hz asked",
			    pace->last_rate, pace->last_window_s, now);
	else if (change == BUDGET_SLOWER)
		strbuf_addf(sb,
			    "sampling costs %.1f%% of a core, over the budget of %g%% "
			    "(--cpu-budget): %.1f Hz instead of %.1f Hz",
			    b->last_percent, b->percent, now, asked);
	else
		strbuf_addf(sb, "sampling costs %.1f%% of a core: %.1f Hz again (%.1f Hz asked)",
			    b->last_percent, now, asked);
}
