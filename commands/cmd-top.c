// SPDX-License-Identifier: MIT
// top: a live view of one process while it is sampled, like py-spy top:
// each thread's state and what it runs now (busiest first, idle threads
// folded), and the functions with the most samples (own and total) since
// the start. Plain ANSI, no curses; keys at a terminal.
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "analyze.h"
#include "budget.h"
#include "holders.h"
#include "locks.h"
#include "pollwatch.h"
#include "profile.h"
#include "sampler.h"
#include "format-top.h"
#include "topview.h"
#include "cmd.h"
#include "terminal.h"

enum {
	TOP_RATE = SNAP_OPT__COUNT,
	TOP_ENGINE,
	TOP_CPU_BUDGET,
	TOP_REFRESH,
	TOP_DURATION,
	TOP_COUNT,
	TOP_IDLE,
	TOP_SORT,
	TOP_LIMIT
};

static const struct cmd_option top_options[] = {
    CMD_SNAPSHOT_OPTIONS,
    [TOP_RATE] = OPT_REAL("rate", 'r', "HZ", "samples per second (default 10)", 0.1, 10000, "10",
			  "samples per second, 0.1 to 10000"),
    [TOP_ENGINE] = OPT_CHOICE("engine", 'e', "ENGINE",
			      "auto (perf events where permitted, unless the threads wait 2000 times a second or more and no per-CPU clock samples them; else ptrace), perf or ptrace "
			      "(default auto)",
			      "auto perf ptrace", "auto"),
    [TOP_CPU_BUDGET] = OPT_CPU_BUDGET,
    [TOP_REFRESH] = OPT_DURATION("refresh", 0, "time between screens (default 1s)", 50000, 1e15,
				 "1s", "e.g. 1s, 500ms; at least 50ms"),
    [TOP_DURATION] = OPT_DURATION("duration", 'd', "stop after this long (default: at Ctrl-C)", 0,
				  0, NULL, "e.g. 30s, 2m"),
    [TOP_COUNT] = OPT_COUNT("count", 'c', "N", "stop after N screens", 1, 100000000, NULL,
			    "a number of screens, at least 1"),
    [TOP_IDLE] =
	OPT_FLAG("idle", 0, "show idle threads and count their samples (key i at a terminal)"),
    [TOP_SORT] = OPT_CHOICE("sort", 's', "KEY",
			    "order of threads: cpu (default: busiest first), name or tid",
			    "cpu name tid", "cpu"),
    [TOP_LIMIT] =
	OPT_COUNT("limit", 'l', "N", "at most N functions (default: what fits the terminal)", 0,
		  100000, NULL, "a number of functions"),
    {0},
};

/* What a thread of stack PST does now, as top shows it: the innermost
 * frame of the program itself (EXE), as a reader looks for it, else the
 * leaf (libc's futex_wait says less than the function that called it). */
static const char *now_frame(const struct sd_pstack *pst, const char *exe)
{
	if (!pst || !pst->nframes)
		return NULL;
	const char *b = exe ? strrchr(exe, '/') : NULL;
	b = b ? b + 1 : exe;
	for (size_t k = 0; b && k < pst->nframes; k++)
		if (pst->frames[k].module && !strcmp(pst->frames[k].module, b))
			return pst->frames[k].name;
	return pst->frames[0].name;
}

/* The long polls going on now, one line each ("long poll: worker ..."),
 * into OUT (emptied first). */
static void long_poll_notes(struct strbuf *out, struct sd_pollwatch *pw)
{
	const struct sd_long_poll *lp;
	size_t n = pollwatch_list(pw, 1, &lp, NULL);
	out->len = 0;
	if (out->buf)
		out->buf[0] = '\0';
	for (size_t i = 0; i < n && i < 4; i++) {
		strbuf_adds(out, "long poll: ");
		longpoll_text(out, NULL, &lp[i]);
		strbuf_adds(out, "\n");
	}
	if (n > 4)
		strbuf_addf(out, "... and %zu more long polls\n", n - 4);
}

static int terminal_rows(FILE *f)
{
	struct winsize ws;
	if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0)
		return ws.ws_row;
	return 0;
}

/* Keys at a terminal: stdin without line buffering or echo while top
 * runs, restored on every way out. */
struct keys {
	int on;
	struct termios saved;
};

static void keys_start(struct keys *k, struct cmd_ctx *ctx)
{
	k->on = 0;
	if (!isatty(STDIN_FILENO) || !isatty(fileno(ctx->out)))
		return;
	if (tcgetattr(STDIN_FILENO, &k->saved) < 0)
		return;
	struct termios raw = k->saved;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0)
		k->on = 1;
}

static void keys_stop(struct keys *k)
{
	if (k->on)
		tcsetattr(STDIN_FILENO, TCSANOW, &k->saved);
	k->on = 0;
}

/* Wait until the monotonic time NEXT (ns), or a key, draining the
 * sampler's buffers meanwhile. Returns the key, 0 at the deadline, -1 when
 * interrupted. */
static int keys_wait(struct keys *k, struct sd_sampler *smp, uint64_t next)
{
	for (;;) {
		uint64_t now = sd_now_ns();
		if (now >= next)
			return 0;
		if (cmd_interrupted)
			return -1;
		if (!k->on) {
			sampler_sleep_until(&smp, 1, next);
			continue;
		}
		struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
		int r = poll(&pfd, 1, 0);
		if (r < 0 && errno != EINTR)
			keys_stop(k);
		if (r > 0) {
			unsigned char c;
			ssize_t n = read(STDIN_FILENO, &c, 1);
			if (n == 1)
				return c;
			if (n == 0 || (errno != EINTR && errno != EAGAIN))
				keys_stop(k); /* end of input or an error: no more keys */
			continue;
		}
		/* A key waits at most this long to be seen. */
		uint64_t slice = now + 50000000ull;
		sampler_sleep_until(&smp, 1, slice < next ? slice : next);
	}
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
	struct top_thread *th = NULL;
	size_t nth = 0, thcap = 0;
	double rate = cmd_real(ctx, TOP_RATE);
	uint64_t refresh_us = cmd_num(ctx, TOP_REFRESH), duration_us = cmd_num(ctx, TOP_DURATION);
	long count = (long)cmd_num(ctx, TOP_COUNT), limit = (long)cmd_num(ctx, TOP_LIMIT);
	struct topview view = {.sort = cmd_is(ctx, TOP_SORT, "name")  ? SORT_NAME
				       : cmd_is(ctx, TOP_SORT, "tid") ? SORT_TID
								      : SORT_CPU,
			       .show_idle = cmd_has(ctx, TOP_IDLE)};
	uint64_t *idle = NULL;
	size_t nidle = 0, idlecap = 0;
	struct keys keys = {0};
	struct sd_profile_opts po;
	profile_opts_init(&po);
	/* Idle samples are kept and counted apart: the key i shows them
	 * without starting over. */
	po.no_idle = 0;
	po.no_inline = so.no_inline;
	po.no_source = so.no_source;
	p = profile_new(&po);
	uint64_t interval_ns = (uint64_t)(1e9 / rate);
	p->interval_us = interval_ns / 1000;
	p->rate_asked = rate;
	/* A Tokio program: a worker inside one poll for long, while it lasts. */
	struct sd_pollwatch *pw = pollwatch_new((double)interval_ns / 1e9);
	struct strbuf notes;
	strbuf_init(&notes);
	struct sd_sampler_opts smo = {.engine = SD_ENGINE_AUTO, .interval_us = p->interval_us};
	sd_engine_parse(cmd_str(ctx, TOP_ENGINE), &smo.engine); /* a checked choice */
	{
		struct sd_error err = {0};
		smp = sampler_new(t, &so, &smo, &err);
		if (!smp) {
			cmd_error(ctx, "%s", err.msg);
			profile_free(p);
			pollwatch_free(pw);
			strbuf_release(&notes);
			free(tids);
			return EXIT_FAIL;
		}
		if (sampler_fallback(smp))
			cmd_error(ctx, "perf engine not available, sampling with ptrace: %s",
				  sampler_fallback(smp));
		p->engine = strpool_intern(p->pool, sd_engine_name(sampler_engine(smp)));
		if (sampler_choice(smp))
			p->engine_why = strpool_intern(p->pool, sampler_choice(smp));
	}
	int tty = isatty(fileno(ctx->out));
	uint64_t start = sd_now_ns(), next = start, next_screen = start + refresh_us * 1000;
	uint64_t end = duration_us ? start + duration_us * 1000 : 0;
	struct sd_budget budget;
	budget_init(&budget, cmd_real(ctx, TOP_CPU_BUDGET), interval_ns, start);
	double cpu0 = sd_cpu_seconds();
	long screens = 0;
	rc = EXIT_OK;
	ssize_t *groups = NULL;
	size_t gcap = 0;
	if (tty) /* hide the cursor while drawing; a clean screen to start */
		cmd_print(ctx, "\033[?25l\033[H\033[2J");
	keys_start(&keys, ctx);
	int redraw = 0;
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
		pollwatch_sample(pw, t, s);
		profile_add_snapshot(p, t, s, groups);
		p->samples++;
		{
			struct sd_perf_stats ps = {0};
			sampler_stats_add(smp, &ps);
			p->lost_samples = ps.lost;
			p->stale_stacks = ps.stale;
			p->throttled = ps.throttled;
		}
		for (size_t i = 0; i < nth; i++)
			th[i].seen = 0;
		sd_grow(&idle, &idlecap, p->nstacks + 1, sizeof(*idle));
		if (nidle < p->nstacks) {
			memset(idle + nidle, 0, (p->nstacks - nidle) * sizeof(*idle));
			nidle = p->nstacks;
		}
		/* Who holds what the others wait on: never folded as idle,
		 * shown first, with what it holds (either engine: the perf
		 * one records no owner, the mutex's owner field says it). */
		struct sd_holder *hv = NULL;
		size_t nh = holders_of(t->core ? 0 : t->pid, s, &hv);
		for (size_t i = 0; i < s->nthreads; i++) {
			const struct sd_thread *x = &s->threads[i];
			const struct sd_pstack *pst = groups[i] >= 0 ? &p->stacks[groups[i]] : NULL;
			int is_idle = profile_thread_idle(x, pst ? pst->frames : NULL,
							  pst ? pst->nframes : 0);
			const struct sd_holder *hd = holders_find(hv, nh, x->tid);
			if (hd)
				is_idle = 0;
			if (pst && is_idle)
				idle[groups[i]]++;
			size_t k = 0;
			while (k < nth && th[k].tid != x->tid)
				k++;
			if (k == nth) {
				sd_grow(&th, &thcap, nth + 1, sizeof(*th));
				memset(&th[nth], 0, sizeof(*th));
				th[nth].tid = x->tid;
				nth++;
			}
			struct top_thread *y = &th[k];
			y->seen = 1;
			snprintf(y->name, sizeof(y->name), "%s", x->name ? x->name : "");
			int on = x->wait.kind == SD_WAIT_RUNNING || x->wait.kind == SD_WAIT_RUNNABLE;
			const char *st = x->wait.kind >= SD_WAIT_MUTEX ? sd_wait_kind_name(x->wait.kind)
								       : analyze_state_text(x);
			/* Samples are symbolized in the profile, not in X. */
			if (x->syscall_nr == 219 && pst && pst->nframes &&
			    analyze_restart_name(pst->frames[0].function))
				st = analyze_restart_name(pst->frames[0].function);
			snprintf(y->state, sizeof(y->state), "%s", st && *st ? st : "sleeping");
			y->samples++;
			y->on_cpu += on;
			y->idle = is_idle;
			y->rank = top_state_rank(x, is_idle);
			y->now = now_frame(pst, s->exe);
			y->holding = hd ? hd->nwaiters : 0;
			y->holds[0] = '\0';
			if (hd && hd->symbol)
				snprintf(y->holds, sizeof(y->holds), "holds %s <%s>, %zu waiter%s",
					 locks_kind_name(hd->kind), hd->symbol, hd->nwaiters,
					 hd->nwaiters == 1 ? "" : "s");
			else if (hd)
				snprintf(y->holds, sizeof(y->holds), "holds %s 0x%llx, %zu waiter%s",
					 locks_kind_name(hd->kind), (unsigned long long)hd->address,
					 hd->nwaiters, hd->nwaiters == 1 ? "" : "s");
		}
		free(hv);
		snapshot_free(s);
		uint64_t now = sd_now_ns();
		p->duration_us = (now - start) / 1000;
		int last = end && now >= end;
		if (now >= next_screen || last || redraw) {
			sd_sort(th, nth, sizeof(*th),
				view.sort == SORT_NAME ? top_cmp_name
				: view.sort == SORT_TID ? top_cmp_tid
							: top_cmp_activity);
			long_poll_notes(&notes, pw);
			view.notes = notes.len ? notes.buf : NULL;
			struct strbuf sb;
			strbuf_init(&sb);
			top_screen(&sb, p, t->pid, t->info.comm, th, nth, (double)(now - start) / 1e9,
			       tty ? terminal_rows(ctx->out) : 0, tty ? terminal_width(ctx->out) : 0,
			       (int)limit, tty, &view, idle, nidle);
			cmd_write(ctx, sb.buf, sb.len);
			fflush(ctx->out);
			strbuf_release(&sb);
			if (!redraw) {
				screens++;
				next_screen += refresh_us * 1000;
				if (next_screen < now)
					next_screen = now + refresh_us * 1000;
			}
			redraw = 0;
		}
		if (last || (count && screens >= count))
			break;
		/* Our own CPU against the budget (new stacks' first
		 * symbolization and modules indexed by the prefetch thread
		 * are work done once: not counted). */
		double used = sd_cpu_seconds() - cpu0 - (double)p->symbolize_cpu_ns / 1e9 -
			      pollwatch_once_cpu(pw);
		int change = budget_tick(&budget, now, used);
		if (change == BUDGET_SLOWER)
			p->rate_note = "slowed to keep within the CPU budget (--cpu-budget)";
		else if (change == BUDGET_FASTER && budget.interval_ns == budget.asked_ns)
			p->rate_note = NULL;
		interval_ns = budget.interval_ns;
		next += interval_ns;
		if (next < now)
			next = now;
		int key = keys_wait(&keys, smp, next);
		if (key == 'q' || key == 'Q')
			break;
		/* A key changes the view at once; sampling goes on. */
		switch (key) {
		case 'c': view.sort = SORT_CPU; redraw = 1; break;
		case 'n': view.sort = SORT_NAME; redraw = 1; break;
		case 't': view.sort = SORT_TID; redraw = 1; break;
		case 'i': view.show_idle = !view.show_idle; redraw = 1; break;
		case 'h':
		case '?': view.help = !view.help; redraw = 1; break;
		default: break;
		}
		if (redraw)
			next = sd_now_ns();
	}
	keys_stop(&keys);
	if (tty)
		cmd_print(ctx, "\033[?25h");
	/* Ctrl-C is how top is meant to end. */
	cmd_interrupted = 0;
	free(groups);
	free(idle);
	sampler_free(smp);
	profile_free(p);
	pollwatch_free(pw);
	strbuf_release(&notes);
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
	    "%TOTAL (the function was anywhere on the stack). Threads come busiest first\n"
	    "(on-CPU share, then state); idle threads (waiting for work in epoll_wait, a\n"
	    "condvar, sleep...) are folded into one line and left out of the functions\n"
	    "unless --idle. Keys at a terminal: c, n, t sort by CPU, name, TID; i shows or\n"
	    "folds idle threads; h lists the keys; q (or Ctrl-C) quits. The screen is\n"
	    "redrawn in place. On a pipe, screens are printed one after another.\n"
	    "A Tokio program's long polls (a worker inside one poll of a task across\n"
	    "samples) are named under the header while they last.\n"
	    "Exit status: 0 ok, 1 the process exited, 2 failure, 64 usage error.",
	.options = top_options,
	.min_args = 0,
	.max_args = 1,
	.arg_complete = CMPL_PID,
	.flags = CMD_NEEDS_TARGET | CMD_TARGET_ATTACH,
	.exec = top_exec,
};
