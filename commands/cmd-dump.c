// SPDX-License-Identifier: MIT
// dump (alias bt): one consistent all-thread snapshot of one or more
// processes, printed as text or JSON. `stackdump PID` runs this.
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format-tokio.h"
#include "format.h"
#include "locks.h"
#include "ptrace.h"
#include "symbols.h"
#include "terminal.h"
#include "cmd.h"

enum {
	DUMP_FORMAT = SNAP_OPT__COUNT,
	DUMP_VERBOSE,
	DUMP_GROUP,
	DUMP_NO_GROUP,
	DUMP_THREADS,
	DUMP_FULL_NAMES,
	DUMP_ALL_FRAMES
};

static const struct cmd_option dump_options[] = {
	CMD_SNAPSHOT_OPTIONS,
	[DUMP_FORMAT] = OPT_FORMAT("output format: text or json", "text json", "text"),
	[DUMP_VERBOSE] = OPT_FLAG("verbose", 'v',
				  "show timings (pause, unwind, symbolize) and cache statistics"),
	[DUMP_GROUP] = OPT_FLAG("group", 'g',
				"merge threads with identical stacks (a count, names, TIDs)"),
	[DUMP_NO_GROUP] = OPT_FLAG("no-group", 0, "one stack per thread, even at a terminal"),
	[DUMP_THREADS] = OPT_FLAG("threads", 0,
				  "a Go or Tokio program: only its threads, not its goroutines or tasks"),
	[DUMP_FULL_NAMES] = OPT_FLAG("full-names", 0,
				     "function names with their generic and template arguments"),
	[DUMP_ALL_FRAMES] = OPT_FLAG("all-frames", 0,
				     "every frame on its own line (no recursion or runtime run folded)"),
	{0},
};

/* Group the threads of S? --group/--no-group, then `set group`, then the
 * default: at a terminal, threads with identical stacks are one entry from
 * 4 of them (2: the holder is not lost among 50 copies of its waiters);
 * never in a pipe (scripts keep one stack per thread). */
static int want_group(struct cmd_ctx *ctx, const struct sd_snapshot *s)
{
	(void)s;
	if (cmd_has(ctx, DUMP_GROUP))
		return 1;
	if (cmd_has(ctx, DUMP_NO_GROUP))
		return 0;
	int st = ctx->session ? ctx->session->settings.group : -1;
	if (st >= 0)
		return st;
	return isatty(fileno(ctx->out)) ? 2 : 0;
}

/* Goroutines of a Go program grouped? --group merges every set of
 * identical ones, --no-group none; at a terminal, sets of 4 or more. */
static int want_go_group(struct cmd_ctx *ctx)
{
	if (cmd_has(ctx, DUMP_GROUP))
		return 1;
	if (cmd_has(ctx, DUMP_NO_GROUP))
		return 0;
	int st = ctx->session ? ctx->session->settings.group : -1;
	if (st >= 0)
		return st;
	return isatty(fileno(ctx->out)) ? 2 : 0;
}

/* The JSON documents of the snapshots dumped so far, each written apart:
 * one prints as itself, several as an array. */
struct dump_json {
	struct strbuf *docs;
	size_t n, cap;
};

/* Print one snapshot in the chosen format (JSON: into DJ). Returns 1 when
 * S holds a deadlock (the exit status says it, as `locks` does). */
static int emit(struct cmd_ctx *ctx, struct sd_target *t, struct sd_snapshot *s,
		struct dump_json *dj)
{
	struct sd_lockgraph *g = locks_graph(s);
	int deadlock = g->ndeadlocks > 0 || format_tokio_task_cycles(s) > 0;
	if (dj) {
		locks_graph_free(g);
		sd_grow(&dj->docs, &dj->cap, dj->n + 1, sizeof(*dj->docs));
		struct jsonw w;
		cmd_json_init(&w, &dj->docs[dj->n++]);
		format_json_snapshot(&w, s);
		jsonw_release(&w);
		return deadlock;
	}
	struct sd_render_opts ro = {0};
	ro.no_source = cmd_has(ctx, SNAP_OPT_NO_SOURCE);
	ro.color = ctx->color;
	ro.verbose = cmd_has(ctx, DUMP_VERBOSE);
	ro.group = want_group(ctx, s);
	ro.go_group = want_go_group(ctx);
	ro.full_names = cmd_has(ctx, DUMP_FULL_NAMES) || ro.verbose;
	ro.all_frames = cmd_has(ctx, DUMP_ALL_FRAMES);
	ro.width = terminal_width(ctx->out);
	struct strbuf sb;
	strbuf_init(&sb);
	/* The findings (deadlocks, the lock most waited for and its holder,
	 * threads in D) come first at a terminal, where the first screen is
	 * what is read, and last in a pipe, where the stacks keep their place
	 * for scripts and the tail is what is read. */
	int first = isatty(fileno(ctx->out));
	if (first && format_text_findings(&sb, s, g, 0, &ro))
		strbuf_adds(&sb, "\n");
	format_text_snapshot(&sb, s, &ro);
	if (!first && format_findings_count(s, g)) {
		strbuf_adds(&sb, "\n");
		format_text_findings(&sb, s, g, 0, &ro);
	}
	locks_graph_free(g);
	format_fit_width(&sb, 0, ro.width);
	if (ro.verbose && t) {
		uint64_t lookups, hits;
		symbols_stats(t->sym, &lookups, &hits);
		strbuf_addf(&sb, "\nsymbol cache: %llu lookups, %llu hits (%.0f%%)\n",
			    (unsigned long long)lookups, (unsigned long long)hits,
			    lookups ? 100.0 * (double)hits / (double)lookups : 0.0);
	}
	cmd_write(ctx, sb.buf, sb.len);
	strbuf_release(&sb);
	return deadlock;
}

/* Print the documents of DJ (if any) and release them. */
static void print_json(struct cmd_ctx *ctx, struct dump_json *dj)
{
	struct strbuf sb;
	struct jsonw w;
	cmd_json_init(&w, &sb);
	if (dj->n > 1)
		jsonw_array_begin(&w);
	for (size_t i = 0; i < dj->n; i++) {
		jsonw_json(&w, dj->docs[i].buf, dj->docs[i].len);
		strbuf_release(&dj->docs[i]);
	}
	if (dj->n > 1)
		jsonw_array_end(&w);
	if (dj->n)
		cmd_print_json(ctx, &w);
	else
		jsonw_release(&w);
	free(dj->docs);
	memset(dj, 0, sizeof(*dj));
}

/* Does thread TH pass the shell's selectors (TIDs, a name glob)? */
static int selected(const struct sd_thread *th, const pid_t *sel, size_t nsel, const char *glob)
{
	if (nsel) {
		int hit = 0;
		for (size_t i = 0; i < nsel; i++)
			hit |= sel[i] == th->tid;
		if (!hit)
			return 0;
	}
	return !glob || fnmatch(glob, th->name ? th->name : "", 0) == 0;
}

/* In the shell after `load`: the loaded snapshot, as it was saved. */
static int dump_loaded(struct cmd_ctx *ctx, const pid_t *sel, size_t nsel, const char *glob)
{
	const struct sd_snapshot *l = ctx->target.loaded;
	struct sd_snapshot view = *l;
	view.threads = sd_xcalloc(l->nthreads + 1, sizeof(*view.threads));
	view.nthreads = 0;
	for (size_t i = 0; i < l->nthreads; i++)
		if (selected(&l->threads[i], sel, nsel, glob))
			view.threads[view.nthreads++] = l->threads[i];
	if (view.nthreads < l->nthreads)
		view.threads_total = l->nthreads;
	int rc = EXIT_OK;
	if (!view.nthreads) {
		cmd_error(ctx, "no thread of the loaded snapshot matches the selection");
		rc = EXIT_FAIL;
	} else {
		struct dump_json dj = {0};
		int json = cmd_is(ctx, DUMP_FORMAT, "json");
		int dl = emit(ctx, NULL, &view, json ? &dj : NULL);
		print_json(ctx, &dj);
		rc = cmd_snapshot_status(&view);
		if (dl && rc == EXIT_OK)
			rc = EXIT_DEADLOCK;
	}
	free(view.threads);
	return rc;
}

/* In the shell: dump [TID|GLOB|all] on the current target. */
static int dump_shell(struct cmd_ctx *ctx, int argc, char **argv, struct sd_snap_opts *o)
{
	struct sd_target *t = ctx->target.t;
	pid_t *sel = NULL;
	size_t nsel = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "all"))
			continue;
		long tid = sd_parse_pid(argv[i]);
		if (tid > 0) {
			sel = sd_xrealloc(sel, (nsel + 1) * sizeof(*sel));
			sel[nsel++] = (pid_t)tid;
		} else {
			o->name_glob = argv[i];
		}
	}
	if (ctx->target.loaded) {
		int rc = dump_loaded(ctx, sel, nsel, o->name_glob);
		free(sel);
		return rc;
	}
	if (nsel) {
		o->tids = sel;
		o->ntids = nsel;
	}
	struct sd_error err = {0};
	struct sd_boost boost;
	ptrace_boost_nice(&boost, DUMP_NICE);
	struct sd_snapshot *s = target_snapshot(t, o, &err);
	ptrace_boost_end(&boost);
	free(sel);
	if (!s) {
		cmd_error(ctx, "%s", err.msg);
		return EXIT_FAIL;
	}
	struct dump_json dj = {0};
	int json = cmd_is(ctx, DUMP_FORMAT, "json");
	int dl = emit(ctx, t, s, json ? &dj : NULL);
	print_json(ctx, &dj);
	int rc = cmd_snapshot_status(s);
	if (dl && rc == EXIT_OK)
		rc = EXIT_DEADLOCK;
	snapshot_free(ctx->session->last);
	ctx->session->last = s;
	return rc;
}

static int dump_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct sd_snap_opts o;
	pid_t *tids;
	if (cmd_snap_opts(ctx, &o, &tids) < 0)
		return EXIT_USAGE;
	o.goroutines = !cmd_has(ctx, DUMP_THREADS);
	int rc;
	/* In the shell the target is the current one or the loaded snapshot,
	 * and arguments select threads. */
	if (ctx->target.from_shell || ctx->target.loaded) {
		rc = dump_shell(ctx, argc, argv, &o);
		free(tids);
		return rc;
	}
	/* Each process named (the table opened those it could). */
	struct dump_json dj = {0};
	int json = cmd_is(ctx, DUMP_FORMAT, "json");
	/* Read from /proc only what the text shows (nothing is kept). */
	o.text_only = !json;
	int ok = 0, failed = (int)ctx->target.failed, partial = 0, deadlocks = 0;
	struct sd_boost boost;
	ptrace_boost_nice(&boost, DUMP_NICE);
	for (size_t i = 0; i < ctx->target.nprocs && !cmd_interrupted; i++) {
		struct cmd_proc *pr = &ctx->target.procs[i];
		struct sd_error err = {0};
		struct sd_snapshot *s = target_snapshot(pr->t, &o, &err);
		if (!s) {
			cmd_error(ctx, "%s", err.msg);
			failed++;
		} else {
			if (!json && i > 0)
				cmd_print(ctx, "\n");
			deadlocks += emit(ctx, pr->t, s, json ? &dj : NULL);
			if (s->partial)
				partial++;
			ok++;
			snapshot_free(s);
		}
		/* Done with it: its images and debug info need not stay open
		 * while the others are dumped. */
		target_free(pr->t);
		pr->t = NULL;
	}
	ptrace_boost_end(&boost);
	print_json(ctx, &dj);
	free(tids);
	if (cmd_interrupted) {
		cmd_error(ctx, "interrupted; every thread was detached");
		return EXIT_INTERRUPTED;
	}
	if (!ok)
		return EXIT_FAIL;
	/* A deadlock is what the reader must act on, as in `locks`. */
	if (deadlocks)
		return EXIT_DEADLOCK;
	if (failed || partial)
		return EXIT_PARTIAL;
	return EXIT_OK;
}

const struct cmd_entry cmd_dump_entry = {
	.name = "dump",
	.alias = "bt",
	.args_usage = "PID|NAME... (in the shell: [TID|GLOB|all])",
	.summary = "print the stack of every thread (one consistent snapshot)",
	.description =
	    "Freezes every thread (PTRACE_SEIZE + PTRACE_INTERRUPT), copies registers and a\n"
	    "stack window, lets the process run again, then unwinds and symbolizes offline.\n"
	    "With --group, threads with identical stacks are shown once, with their count,\n"
	    "names and TIDs compressed (worker-1..200); at a terminal, 4 or more identical\n"
	    "ones are (--no-group, or 'set group off' in the shell, turns it off); output\n"
	    "to a pipe or a file is grouped only when asked. Text shows function names\n"
	    "without generic or template arguments (--full-names, -v: in full), a\n"
	    "recursion as one line with its count, and runs of runtime frames (Rust's\n"
	    "std, core, alloc, tokio::runtime, Go's runtime) past the program's first\n"
	    "frame as one line (--all-frames: each frame); at a terminal, lines fit its\n"
	    "width. JSON always has everything.\n"
	    "A Go program is shown as its goroutines, in the form of Go's own traceback\n"
	    "(read from the runtime's structures without stopping them), then its threads,\n"
	    "each with the goroutine it runs; at a terminal, 4 or more identical goroutines\n"
	    "are one entry (--group: any; --no-group: none). A Tokio program's tasks follow\n"
	    "its threads, each with its await chain (the file:line of each .await), grouped\n"
	    "alike. --threads: the threads only.\n"
	    "Findings come first at a terminal, last in a pipe: deadlocks, the lock most\n"
	    "waited for and its holder, threads in D state (JSON: \"findings\").\n"
	    "Exit status: 0 all threads shown, 3 a deadlock was found (as in 'locks'),\n"
	    "1 partial (a thread or a process could not be read), 2 failure, 64 usage.",
	.options = dump_options,
	.min_args = 0,
	.max_args = -1,
	.arg_complete = CMPL_PID,
	.flags = CMD_NEEDS_TARGET | CMD_TARGET_ATTACH | CMD_TARGET_CORE | CMD_TARGET_LOADED | CMD_TARGET_MANY |
		 CMD_TARGET_SHELL_ARGS,
	.target_missing = "missing argument (PID...)\nusage: stackdump dump [options] PID...",
	.check = cmd_snap_check,
	.exec = dump_exec,
};
