// SPDX-License-Identifier: MIT
// locks: the lock view of a process, by lock (holder and its stack, waiters
// and theirs), deadlock cycles, and with --count, the threads that stayed
// parked on the same lock across several snapshots.
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format-tokio.h"
#include "format.h"
#include "format-go.h"
#include "locks.h"
#include "longpoll.h"
#include "ptrace.h"
#include "terminal.h"
#include "cmd.h"

#define LOCKS_MAX_COUNT 100000

enum {
	LOCKS_FORMAT = SNAP_OPT__COUNT,
	LOCKS_COUNT,
	LOCKS_INTERVAL,
	LOCKS_FULL_NAMES,
	LOCKS_ALL_FRAMES
};

static const struct cmd_option locks_options[] = {
    CMD_SNAPSHOT_OPTIONS,
    [LOCKS_FORMAT] = OPT_FORMAT("output format: text or json", "text json", "text"),
    [LOCKS_COUNT] = OPT_COUNT("count", 'c', "N",
			      "take N snapshots; list threads parked on a lock in all (default 1)",
			      1, LOCKS_MAX_COUNT, "1", NULL),
    [LOCKS_INTERVAL] =
	OPT_DURATION("interval", 'i', "time between snapshots with --count (default 1s)", 0,
		     3600000000.0, "1s", "e.g. 200ms, 2s; at most 1h"),
    [LOCKS_FULL_NAMES] = OPT_FLAG("full-names", 0,
				  "function names with their generic and template arguments"),
    [LOCKS_ALL_FRAMES] = OPT_FLAG("all-frames", 0,
				  "every frame on its own line (no recursion or runtime run folded)"),
    {0},
};

/* Sleep US microseconds unless interrupted; returns 0, or -1 when
 * interrupted. */
static int pause_between(uint64_t us)
{
	uint64_t end = sd_now_ns() + us * 1000;
	while (!cmd_interrupted) {
		uint64_t now = sd_now_ns();
		if (now >= end)
			return 0;
		uint64_t left = end - now;
		struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
		nanosleep(&ts, NULL); /* EINTR: the loop looks at the flag */
	}
	return -1;
}

/* Render the view of SNAPS[N-1] (and the series) and return the exit code. */
static int report(struct cmd_ctx *ctx, struct sd_snapshot **snaps, size_t n, int partial_series)
{
	struct sd_snapshot *s = snaps[n - 1];
	struct sd_lockgraph *g = locks_graph(s);
	struct sd_parked *parked = NULL;
	size_t nparked = n > 1 ? locks_parked(snaps, n, &parked) : 0;
	double span = s->time - snaps[0]->time;
	/* A Tokio program's workers inside one poll across the snapshots. */
	struct sd_long_poll *lp = NULL;
	size_t nlp = longpoll_find(snaps, n, &lp);
	if (cmd_is(ctx, LOCKS_FORMAT, "json")) {
		struct strbuf sb;
		struct jsonw w;
		cmd_json_init(&w, &sb);
		format_json_locks(&w, s, g, parked, nparked, n, span, lp, nlp);
		cmd_print_json(ctx, &w);
	} else {
		struct sd_render_opts ro = {0};
		ro.no_source = cmd_has(ctx, SNAP_OPT_NO_SOURCE);
		ro.color = ctx->color;
		ro.full_names = cmd_has(ctx, LOCKS_FULL_NAMES);
		ro.all_frames = cmd_has(ctx, LOCKS_ALL_FRAMES);
		ro.width = terminal_width(ctx->out);
		struct strbuf sb;
		strbuf_init(&sb);
		format_text_locks(&sb, s, g, parked, nparked, n, span, &ro);
		/* A Tokio program: the locks its tasks hold and await. */
		format_tokio_locks_text(&sb, s, &ro);
		/* ... and the workers inside one poll across the snapshots. */
		if (nlp)
			strbuf_addf(&sb, "\nLong polls (the same poll of a task in the last %zu snapshots):\n", n);
		for (size_t i = 0; i < nlp; i++) {
			strbuf_adds(&sb, "  ");
			longpoll_text(&sb, s, &lp[i]);
			strbuf_adds(&sb, "\n");
		}
		format_fit_width(&sb, 0, ro.width);
		cmd_write(ctx, sb.buf, sb.len);
		strbuf_release(&sb);
	}
	size_t task_cycles = 0; /* async deadlocks among Tokio tasks */
	for (size_t i = 0; i < s->ntokio; i++)
		task_cycles += s->tokio[i].ncycles;
	int rc = g->ndeadlocks || format_go_deadlock_count(s) || task_cycles ? EXIT_DEADLOCK
				: (s->partial || partial_series) ? EXIT_PARTIAL : EXIT_OK;
	free(parked);
	free(lp);
	locks_graph_free(g);
	return rc;
}

/* Take COUNT snapshots of T, INTERVAL_US apart, and report. The last one
 * goes to the session (for `threads`) when KEEP_LAST. */
static int locks_live(struct cmd_ctx *ctx, struct sd_target *t, struct sd_snap_opts *o,
		      size_t count, uint64_t interval_us, int keep_last)
{
	struct sd_snapshot **snaps = sd_xcalloc(count, sizeof(*snaps));
	size_t n = 0;
	int rc = EXIT_OK, cut_short = 0;
	for (size_t i = 0; i < count; i++) {
		if (i && pause_between(interval_us) < 0)
			break;
		struct sd_error err = {0};
		struct sd_boost boost;
		ptrace_boost_nice(&boost, DUMP_NICE);
		struct sd_snapshot *s = target_snapshot(t, o, &err);
		ptrace_boost_end(&boost);
		if (!s) {
			cmd_error(ctx, "%s", err.msg);
			if (!n) {
				rc = EXIT_FAIL;
				goto out;
			}
			cmd_error(ctx, "locks: reporting the %zu snapshot%s taken before", n,
				  n == 1 ? "" : "s");
			cut_short = 1;
			break;
		}
		snaps[n++] = s;
		if (cmd_interrupted)
			break;
	}
	if (cmd_interrupted) {
		cmd_error(ctx, "interrupted; every thread was detached");
		rc = EXIT_INTERRUPTED;
		goto out;
	}
	rc = report(ctx, snaps, n, cut_short);
	if (keep_last && ctx->session) {
		snapshot_free(ctx->session->last);
		ctx->session->last = snaps[--n];
	}
out:
	for (size_t i = 0; i < n; i++)
		snapshot_free(snaps[i]);
	free(snaps);
	return rc;
}

static int locks_check(struct cmd_ctx *ctx)
{
	if (cmd_has(ctx, SNAP_OPT_PER_THREAD)) {
		cmd_error(ctx, "locks: --per-thread cannot be used here: threads frozen one at a "
			       "time give an inconsistent wait-for graph (false deadlocks)");
		return -1;
	}
	return 0;
}

static int locks_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	struct sd_snap_opts o;
	pid_t *tids;
	size_t count = (size_t)cmd_num(ctx, LOCKS_COUNT);
	uint64_t interval_us = cmd_num(ctx, LOCKS_INTERVAL);
	if (cmd_snap_opts(ctx, &o, &tids) < 0)
		return EXIT_USAGE;
	o.goroutines = 1; /* a Go program: what its goroutines wait on too */
	o.tokio = 1;
	int rc = EXIT_USAGE;
	if (ctx->target.loaded) {
		/* A loaded snapshot: its waits as they were analyzed. */
		if (count > 1) {
			cmd_error(ctx,
				  "locks: --count needs a live process, not a loaded snapshot");
			goto out;
		}
		struct sd_snapshot *one[1] = {(struct sd_snapshot *)ctx->target.loaded};
		rc = report(ctx, one, 1, 0);
		goto out;
	}
	rc = locks_live(ctx, ctx->target.t, &o, count, interval_us, ctx->target.from_shell);
out:
	free(tids);
	return rc;
}

const struct cmd_entry cmd_locks_entry = {
	.name = "locks",
	.args_usage = "PID|NAME (in the shell: [PID|NAME])",
	.summary = "show which threads wait on which lock, who holds it, and deadlocks",
	.description =
	    "Takes one consistent snapshot and lists, by lock and most waiters first, the\n"
	    "lock (kind, address, symbol), its holder with its stack when the lock records\n"
	    "one or, inferred, when one thread's stack alone keeps a reference to it (Rust\n"
	    "std locks, rwlock readers), and the waiters (stacks merged when identical).\n"
	    "Under each frame, what it holds. Waits are classified from the futex call and\n"
	    "the lock memory read while frozen (libc debug info is not needed). Condvar\n"
	    "waits and runtimes idling (Go, the JVM) are listed as idle. Then deadlocks:\n"
	    "every cycle of the wait-for graph (mutexes, rwlock writers, joins, inferred\n"
	    "holders; a thread relocking its own mutex). With --count N, takes N snapshots\n"
	    "--interval apart and lists the threads parked on the same lock in all of them,\n"
	    "and whether they woke up in between.\n"
	    "A Go program: the channels, mutexes and WaitGroups its goroutines wait on,\n"
	    "mutex holders inferred from the stacks, and deadlocks among goroutines.\n"
	    "A Tokio program's tasks follow: each tokio::sync lock a task holds (inferred\n"
	    "from its state machine) with the tasks awaiting it, and deadlocks among tasks.\n"
	    "Exit status: 0 no deadlock, 3 deadlock found, 1 partial (a thread could not be\n"
	    "read), 2 failure, 64 usage error, 130 interrupted.",
	.options = locks_options,
	.min_args = 0,
	.max_args = 1,
	.arg_complete = CMPL_PID,
	.flags = CMD_NEEDS_TARGET | CMD_TARGET_ATTACH | CMD_TARGET_CORE | CMD_TARGET_LOADED,
	.check = locks_check,
	.exec = locks_exec,
};
