// SPDX-License-Identifier: MIT
// top: a live view of one process while it is sampled, like py-spy top:
// each thread's state and what it runs now, and the functions with the
// most samples (own and total) since the start. Plain ANSI, no curses.
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "../src/analyze.h"
#include "../src/profile.h"
#include "../src/sampler.h"
#include "cmd.h"

enum {
	TOP_RATE = SNAP_OPT__COUNT,
	TOP_ENGINE,
	TOP_REFRESH,
	TOP_DURATION,
	TOP_COUNT,
	TOP_NO_IDLE,
	TOP_LIMIT
};

static const struct cmd_option top_options[] = {
	CMD_SNAPSHOT_OPTIONS,
	[TOP_RATE] = {.name = "rate",
		      .short_name = 'r',
		      .arg = "HZ",
		      .help = "samples per second (default 10)",
		      .type = CMD_OPT_REAL,
		      .min = 0.1,
		      .max = 10000,
		      .def = "10",
		      .hint = "samples per second, 0.1 to 10000"},
	[TOP_ENGINE] = OPT_CHOICE("engine", 'e', "ENGINE",
				  "auto (perf events where permitted, else ptrace), perf or ptrace "
				  "(default auto)",
				  "auto perf ptrace", "auto"),
	[TOP_REFRESH] = {.name = "refresh",
			 .arg = "DURATION",
			 .help = "time between screens (default 1s)",
			 .type = CMD_OPT_DURATION,
			 .min = 50000,
			 .max = 1e15,
			 .def = "1s",
			 .hint = "e.g. 1s, 500ms; at least 50ms"},
	[TOP_DURATION] = {.name = "duration",
			  .short_name = 'd',
			  .arg = "DURATION",
			  .help = "stop after this long (default: at Ctrl-C)",
			  .type = CMD_OPT_DURATION,
			  .hint = "e.g. 30s, 2m"},
	[TOP_COUNT] = {.name = "count",
		       .short_name = 'c',
		       .arg = "N",
		       .help = "stop after N screens",
		       .type = CMD_OPT_COUNT,
		       .min = 1,
		       .max = 100000000,
		       .hint = "a number of screens, at least 1"},
	[TOP_NO_IDLE] = OPT_FLAG("no-idle", 0, "leave idle threads out of the function list"),
	[TOP_LIMIT] = {.name = "limit",
		       .short_name = 'l',
		       .arg = "N",
		       .help = "at most N functions (default: what fits the terminal)",
		       .type = CMD_OPT_COUNT,
		       .max = 100000,
		       .hint = "a number of functions"},
	{0},
};

/* One thread as top shows it. */
struct tthread {
	pid_t tid;
	char name[64];
	char state[40];
	const char *now;  /* leaf frame of the latest stack, profile pool */
	uint64_t samples, on_cpu;
	int seen;         /* in the latest snapshot */
};

/* Own and total samples of one function. */
struct tfunc {
	const char *name; /* profile pool: compared by pointer */
	uint64_t own, total;
	size_t mark;      /* last stack counted in total */
};

static int cmp_tfunc(const void *a, const void *b)
{
	const struct tfunc *x = a, *y = b;
	if (x->own != y->own)
		return x->own < y->own ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int cmp_tthread(const void *a, const void *b)
{
	const struct tthread *x = a, *y = b;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* Functions of P by own samples, into a heap array. */
static struct tfunc *functions(struct sd_profile *p, size_t *nout)
{
	size_t cap = 64;
	while (cap < p->nstacks * 4 + 16)
		cap *= 2;
	struct tfunc *h = sd_xcalloc(cap, sizeof(*h));
	size_t n = 0;
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct sd_pstack *st = &p->stacks[i];
		if (!st->count)
			continue;
		for (size_t k = 0; k < st->nframes; k++) {
			const char *name = st->frames[k].name;
			size_t s = ((uintptr_t)name >> 4) & (cap - 1);
			while (h[s].name && h[s].name != name)
				s = (s + 1) & (cap - 1);
			if (!h[s].name) {
				if ((n + 1) * 2 > cap)
					break; /* full enough: leave the rest out */
				h[s].name = name;
				h[s].mark = (size_t)-1;
				n++;
			}
			if (k == 0)
				h[s].own += st->count;
			if (h[s].mark != i) { /* recursion counts once */
				h[s].total += st->count;
				h[s].mark = i;
			}
		}
	}
	struct tfunc *v = sd_xmalloc((n ? n : 1) * sizeof(*v));
	size_t k = 0;
	for (size_t i = 0; i < cap; i++)
		if (h[i].name)
			v[k++] = h[i];
	free(h);
	sd_sort(v, k, sizeof(*v), cmp_tfunc);
	*nout = k;
	return v;
}

static void screen(struct strbuf *sb, struct sd_profile *p, const struct sd_target *t,
		   struct tthread *th, size_t nth, double elapsed, int rows, int limit, int tty)
{
	uint64_t total = profile_total(p);
	int used = 0;
	if (tty)
		strbuf_adds(sb, "\033[H\033[2J");
	else
		strbuf_adds(sb, "\n");
	strbuf_addf(sb, "stackdump top: %d \"", (int)t->pid);
	strbuf_add_escaped(sb, t->info.comm);
	strbuf_addf(sb, "\"  %.1f s, %llu samples (%.1f Hz), engine %s, longest pause %.2f ms",
		    elapsed, (unsigned long long)p->samples,
		    elapsed > 0 ? (double)p->samples / elapsed : 0.0, p->engine ? p->engine : "ptrace",
		    (double)p->max_pause_us / 1000.0);
	if (p->lost_samples)
		strbuf_addf(sb, ", %llu samples lost", (unsigned long long)p->lost_samples);
	strbuf_adds(sb, "\n");
	size_t live = 0, running = 0;
	for (size_t i = 0; i < nth; i++)
		if (th[i].seen) {
			live++;
			running += !strcmp(th[i].state, "running") || !strcmp(th[i].state, "runnable");
		}
	strbuf_addf(sb, "threads: %zu, %zu on a CPU, %zu off; on-CPU share of samples %.1f%%\n\n",
		    live, running, live - running,
		    total ? 100.0 * (double)p->on_cpu / (double)total : 0.0);
	used += 3;
	strbuf_addf(sb, "%8s  %-16s %-18s %6s  %s\n", "TID", "NAME", "STATE", "ONCPU", "NOW");
	used++;
	int thread_rows = rows > 0 ? rows / 2 - used : (int)nth;
	if (thread_rows < 3)
		thread_rows = 3;
	int shown = 0;
	for (size_t i = 0; i < nth; i++) {
		if (!th[i].seen)
			continue;
		if (shown >= thread_rows) {
			strbuf_addf(sb, "%8s  ... %zu more threads\n", "", live - (size_t)shown);
			shown++;
			break;
		}
		struct strbuf nm;
		strbuf_init(&nm);
		strbuf_add_escaped(&nm, th[i].name);
		strbuf_addf(sb, "%8d  %-16.16s %-18.18s %5.0f%%  ", (int)th[i].tid, nm.buf ? nm.buf : "",
			    th[i].state,
			    th[i].samples ? 100.0 * (double)th[i].on_cpu / (double)th[i].samples : 0.0);
		strbuf_release(&nm);
		strbuf_add_escaped(sb, th[i].now ? th[i].now : "-");
		strbuf_adds(sb, "\n");
		shown++;
	}
	used += shown;
	size_t nf;
	struct tfunc *fv = functions(p, &nf);
	strbuf_addf(sb, "\n%6s %6s  %s\n", "%OWN", "%TOTAL", "FUNCTION (all samples since start)");
	used += 2;
	int frows = limit > 0 ? limit : (rows > 0 ? rows - used - 1 : 20);
	if (frows < 3)
		frows = 3;
	for (size_t i = 0; i < nf && (int)i < frows; i++) {
		strbuf_addf(sb, "%5.1f%% %5.1f%%  ", total ? 100.0 * (double)fv[i].own / (double)total : 0.0,
			    total ? 100.0 * (double)fv[i].total / (double)total : 0.0);
		strbuf_add_escaped(sb, fv[i].name);
		strbuf_adds(sb, "\n");
	}
	if (!nf)
		strbuf_adds(sb, "  (no samples yet)\n");
	free(fv);
}

static int terminal_rows(FILE *f)
{
	struct winsize ws;
	if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0)
		return ws.ws_row;
	return 0;
}

static int top_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	struct sd_snap_opts so;
	pid_t *tids = NULL;
	if (cmd_snap_opts(ctx, &so, &tids) < 0)
		return EXIT_USAGE;
	so.no_symbols = 1;
	so.reuse = 1; /* a thread that did not run since the last sample is not read */
	so.light_discover = 1; /* a sample needs no wchan or switch counts */
	int rc = EXIT_USAGE;
	struct sd_target *t = ctx->target.t;
	struct sd_sampler *smp = NULL;
	struct sd_profile *p = NULL;
	struct tthread *th = NULL;
	size_t nth = 0, thcap = 0;
	double rate = cmd_real(ctx, TOP_RATE);
	uint64_t refresh_us = cmd_num(ctx, TOP_REFRESH), duration_us = cmd_num(ctx, TOP_DURATION);
	long count = (long)cmd_num(ctx, TOP_COUNT), limit = (long)cmd_num(ctx, TOP_LIMIT);
	struct sd_profile_opts po;
	profile_opts_init(&po);
	po.no_idle = cmd_has(ctx, TOP_NO_IDLE);
	po.no_inline = so.no_inline;
	po.no_source = so.no_source;
	p = profile_new(&po);
	uint64_t interval_ns = (uint64_t)(1e9 / rate);
	p->interval_us = interval_ns / 1000;
	struct sd_sampler_opts smo = {.engine = SD_ENGINE_AUTO, .interval_us = p->interval_us};
	sd_engine_parse(cmd_str(ctx, TOP_ENGINE), &smo.engine); /* a checked choice */
	{
		struct sd_error err = {0};
		smp = sampler_new(t, &so, &smo, &err);
		if (!smp) {
			cmd_error(ctx, "%s", err.msg);
			profile_free(p);
			free(tids);
			return EXIT_FAIL;
		}
		if (sampler_fallback(smp))
			cmd_error(ctx, "perf engine not available, sampling with ptrace: %s",
				  sampler_fallback(smp));
		p->engine = strpool_intern(p->pool, sd_engine_name(sampler_engine(smp)));
	}
	int tty = isatty(fileno(ctx->out));
	uint64_t start = sd_now_ns(), next = start, next_screen = start + refresh_us * 1000;
	uint64_t end = duration_us ? start + duration_us * 1000 : 0;
	long screens = 0;
	rc = EXIT_OK;
	ssize_t *groups = NULL;
	size_t gcap = 0;
	if (tty)
		cmd_print(ctx, "\033[?25l"); /* hide the cursor while drawing */
	/* perf: a tick is each thread's latest sample; wait for the first. */
	if (sampler_engine(smp) == SD_ENGINE_PERF) {
		next = start + interval_ns;
		sampler_sleep_until(&smp, 1, next);
	}
	while (!cmd_interrupted) {
		struct sd_error err = {0};
		struct sd_snapshot *s = sampler_take(smp, &err);
		if (!s) {
			if (!target_alive(t))
				cmd_error(ctx, "process %d exited", (int)t->pid);
			else
				cmd_error(ctx, "%s", err.msg);
			rc = p->samples ? EXIT_PARTIAL : EXIT_FAIL;
			break;
		}
		sd_grow(&groups, &gcap, s->nthreads + 1, sizeof(*groups));
		profile_add_snapshot(p, t, s, groups);
		p->samples++;
		{
			struct sd_perf_stats ps = {0};
			sampler_stats_add(smp, &ps);
			p->lost_samples = ps.lost;
			p->throttled = ps.throttled;
		}
		for (size_t i = 0; i < nth; i++)
			th[i].seen = 0;
		for (size_t i = 0; i < s->nthreads; i++) {
			const struct sd_thread *x = &s->threads[i];
			size_t k = 0;
			while (k < nth && th[k].tid != x->tid)
				k++;
			if (k == nth) {
				sd_grow(&th, &thcap, nth + 1, sizeof(*th));
				memset(&th[nth], 0, sizeof(*th));
				th[nth].tid = x->tid;
				nth++;
			}
			struct tthread *y = &th[k];
			y->seen = 1;
			snprintf(y->name, sizeof(y->name), "%s", x->name ? x->name : "");
			int on = x->wait.kind == SD_WAIT_RUNNING || x->wait.kind == SD_WAIT_RUNNABLE;
			const char *st = x->wait.kind >= SD_WAIT_MUTEX ? sd_wait_kind_name(x->wait.kind)
								       : analyze_state_text(x);
			snprintf(y->state, sizeof(y->state), "%s", st && *st ? st : "sleeping");
			y->samples++;
			y->on_cpu += on;
			y->now = groups[i] >= 0 && p->stacks[groups[i]].nframes
					 ? p->stacks[groups[i]].frames[0].name
					 : NULL;
		}
		snapshot_free(s);
		uint64_t now = sd_now_ns();
		p->duration_us = (now - start) / 1000;
		int last = end && now >= end;
		if (now >= next_screen || last) {
			sd_sort(th, nth, sizeof(*th), cmp_tthread);
			struct strbuf sb;
			strbuf_init(&sb);
			screen(&sb, p, t, th, nth, (double)(now - start) / 1e9,
			       tty ? terminal_rows(ctx->out) : 0, (int)limit, tty);
			cmd_write(ctx, sb.buf, sb.len);
			fflush(ctx->out);
			strbuf_release(&sb);
			screens++;
			next_screen += refresh_us * 1000;
			if (next_screen < now)
				next_screen = now + refresh_us * 1000;
		}
		if (last || (count && screens >= count))
			break;
		next += interval_ns;
		if (next < now)
			next = now;
		sampler_sleep_until(&smp, 1, next);
	}
	if (tty)
		cmd_print(ctx, "\033[?25h");
	/* Ctrl-C is how top is meant to end. */
	cmd_interrupted = 0;
	free(groups);
	sampler_free(smp);
	profile_free(p);
	free(th);
	free(tids);
	return rc;
}

const struct cmd_entry cmd_top_entry = {
	.name = "top",
	.alias = NULL,
	.args_usage = "PID|NAME",
	.summary = "live view of thread states and the hottest functions",
	.description =
	    "Samples the process RATE times a second and redraws, every REFRESH, each\n"
	    "thread's state and the function it is in now, and the functions with the most\n"
	    "samples since the start: %OWN (the sample was in the function itself) and\n"
	    "%TOTAL (the function was anywhere on the stack). Ctrl-C quits. On a pipe,\n"
	    "screens are printed one after another.\n"
	    "Exit status: 0 ok, 1 the process exited, 2 failure, 64 usage error.",
	.options = top_options,
	.min_args = 0,
	.max_args = 1,
	.arg_complete = CMPL_PID,
	.flags = CMD_NEEDS_TARGET | CMD_TARGET_ATTACH,
	.exec = top_exec,
};
