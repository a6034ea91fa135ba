// SPDX-License-Identifier: MIT
// What profile and top print besides the profile itself (sampling.h).
#include "sampling.h"

#include <errno.h>
#include <string.h>

#include "budget.h"
#include "format-profile.h"
#include "format-run.h"
#include "pollwatch.h"
#include "safefile.h"
#include "profile.h"
#include "sampler.h"
#include "symbols.h"
#include "target.h"

void sampling_say(struct cmd_ctx *ctx, int progress, const struct sd_budget *b, int change,
		  const struct sd_pace *pace)
{
	struct strbuf sb;
	strbuf_init(&sb);
	format_sampling_note(&sb, b, change, pace);
	if (progress)
		fprintf(ctx->err, "\r\033[K");
	fprintf(ctx->err, "stackdump: %s\n", sb.buf);
	strbuf_release(&sb);
}

int sampling_write(struct cmd_ctx *ctx, const struct sd_profile *p, const char *format,
		   const uint8_t *buf, size_t len, struct safefile *sf, const char *outpath)
{
	struct strbuf rs;
	strbuf_init(&rs);
	format_profile_rate(&rs, p);
	if (sf) {
		struct sd_error werr = {0};
		int bad = safefile_write(sf, buf, len, &werr) < 0;
		if (bad)
			safefile_abort(sf);
		else
			bad = safefile_commit(sf, &werr) < 0;
		if (bad) {
			cmd_error(ctx, "%s", werr.msg);
			strbuf_release(&rs);
			return -1;
		}
		fprintf(ctx->err, "stackdump: wrote %s (%s): %s, %llu thread stacks, %zu distinct\n",
			outpath, format, rs.buf, (unsigned long long)profile_total(p), p->nstacks);
	} else {
		cmd_write(ctx, (const char *)buf, len);
		/* Folded stacks have no header: the rate got goes to stderr. */
		if (!strcmp(format, "folded"))
			fprintf(ctx->err, "stackdump: folded profile: %s\n", rs.buf);
	}
	strbuf_release(&rs);
	return 0;
}

void sampling_costs(struct cmd_ctx *ctx, const struct sd_profile *p, struct sd_target *const *t,
		    struct sd_sampler *const *s, size_t n, double cpu, double wall,
		    const struct sd_budget *b, const struct sd_pollwatch *pw)
{
	uint64_t lookups = 0, hits = 0;
	struct sd_perf_stats ps = {0};
	struct sd_symcounts sc = {0};
	for (size_t i = 0; i < n; i++) {
		uint64_t l, h;
		symbols_stats(t[i]->sym, &l, &h);
		lookups += l;
		hits += h;
		struct sd_symcounts c;
		symbols_counts(t[i]->sym, &c);
		sc.frame_resolves += c.frame_resolves;
		sc.data_lookups += c.data_lookups;
		sc.data_hits += c.data_hits;
		sc.data_scans += c.data_scans;
		if (s[i])
			sampler_stats_add(s[i], &ps);
	}
	struct strbuf sb;
	strbuf_init(&sb);
	format_profile_costs(&sb, p, &ps, lookups, hits, cpu, wall);
	format_budget_costs(&sb, b, &sc, p);
	uint64_t reads = 0;
	double tk = pw && pollwatch_tokio(pw) ? pollwatch_cpu(pw, &reads) : 0;
	if (reads > 1) /* the first reading indexes the DWARF: apart */
		strbuf_addf(&sb, "tokio workers read %llu times: first %.1f ms, then %.3f ms CPU each\n",
			    (unsigned long long)reads, pollwatch_once_cpu(pw) * 1e3,
			    (tk - pollwatch_once_cpu(pw)) * 1e3 / (double)(reads - 1));
	fputs(sb.buf, ctx->err);
	strbuf_release(&sb);
}

int sampling_ended_early(const struct sd_profile *p)
{
	if (cmd_interrupted)
		return 1;
	for (size_t i = 0; i < p->nprocs; i++)
		if (p->procs[i].exited)
			return 1;
	return 0;
}

void sampling_progress(struct cmd_ctx *ctx, size_t live, uint64_t samples, uint64_t elapsed_ns,
		       uint64_t duration_us)
{
	double el = (double)elapsed_ns / 1e9;
	fprintf(ctx->err, "\rsampling %zu process%s: %llu samples, %.1f s", live,
		live == 1 ? "" : "es", (unsigned long long)samples, el);
	if (duration_us)
		fprintf(ctx->err, " of %.0f s", (double)duration_us / 1e6);
	fprintf(ctx->err, ", %.1f Hz (Ctrl-C stops)\033[K", el > 0 ? (double)samples / el : 0.0);
	fflush(ctx->err);
}

void sampling_long_polls(struct sd_pollwatch *w, struct sd_prender *ro)
{
	ro->tokio = pollwatch_tokio(w);
	ro->nlong_polls = pollwatch_list(w, 0, &ro->long_polls, &ro->long_polls_dropped);
}

void sampling_long_polls_note(struct cmd_ctx *ctx, const char *format, const struct sd_prender *ro)
{
	/* The text and JSON formats carry them; the others are for tools. */
	if (!ro->nlong_polls || (strcmp(format, "folded") && strcmp(format, "svg") &&
				 strcmp(format, "pprof")))
		return;
	struct strbuf sb;
	strbuf_init(&sb);
	format_long_polls_text(&sb, ro, 10);
	fprintf(ctx->err, "stackdump: %s", sb.buf);
	strbuf_release(&sb);
}
