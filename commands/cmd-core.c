// SPDX-License-Identifier: MIT
// core: the dump of an ELF core file (kernel, gcore or systemd-coredump's
// compressed ones): the same stacks, locks and findings as a live dump,
// the crash first. `stackdump ./core` and `stackdump locks ./core` read
// cores too (CMD_TARGET_CORE); this command adds --sysroot.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format-tokio.h"
#include "format.h"
#include "locks.h"
#include "terminal.h"
#include "cmd.h"

enum { CORE_FORMAT = SNAP_OPT__COUNT, CORE_GROUP, CORE_SYSROOT, CORE_THREADS };

static const struct cmd_option core_options[] = {
	CMD_SNAPSHOT_OPTIONS,
	[CORE_FORMAT] = OPT_FORMAT("output format: text or json", "text json", "text"),
	[CORE_GROUP] = OPT_FLAG("group", 'g',
				"merge threads with identical stacks (a count, names, TIDs)"),
	[CORE_SYSROOT] = OPT_STRING("sysroot", 0, "DIR",
				    "look for the core's files under DIR first (a copy of the "
				    "crashed host's)",
				    CMPL_DIR),
	[CORE_THREADS] = OPT_FLAG("threads", 0,
				  "a Go or Tokio program: only its threads, not its goroutines or tasks"),
	{0},
};

static int core_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	struct sd_snap_opts o;
	pid_t *tids;
	if (cmd_snap_opts(ctx, &o, &tids) < 0)
		return EXIT_USAGE;
	/* A Go or Tokio program's goroutines and tasks, from the core's memory. */
	o.goroutines = !cmd_has(ctx, CORE_THREADS);
	struct sd_target *t = ctx->target.t;
	struct sd_error err = {0};
	struct sd_snapshot *s = target_snapshot(t, &o, &err);
	free(tids);
	if (!s) {
		cmd_error(ctx, "%s", err.msg);
		return EXIT_FAIL;
	}
	if (cmd_is(ctx, CORE_FORMAT, "json")) {
		struct strbuf sb;
		struct jsonw w;
		cmd_json_init(&w, &sb);
		format_json_snapshot(&w, s);
		cmd_print_json(ctx, &w);
	} else {
		struct sd_render_opts ro = {0};
		ro.no_source = cmd_has(ctx, SNAP_OPT_NO_SOURCE);
		ro.color = ctx->color;
		ro.group = cmd_has(ctx, CORE_GROUP);
		ro.go_group = ro.group ? 1 : isatty(fileno(ctx->out)) ? 2 : 0;
		ro.width = terminal_width(ctx->out);
		struct strbuf sb;
		strbuf_init(&sb);
		/* The findings as in a dump: first at a terminal, else last. */
		struct sd_lockgraph *g = locks_graph(s);
		if (ro.width && format_text_findings(&sb, s, g, 0, &ro))
			strbuf_adds(&sb, "\n");
		format_text_snapshot(&sb, s, &ro);
		if (!ro.width && format_findings_count(s, g)) {
			strbuf_adds(&sb, "\n");
			format_text_findings(&sb, s, g, 0, &ro);
		}
		locks_graph_free(g);
		format_fit_width(&sb, 0, ro.width);
		cmd_write(ctx, sb.buf, sb.len);
		strbuf_release(&sb);
	}
	int rc = cmd_snapshot_status(s);
	struct sd_lockgraph *g = locks_graph(s);
	if ((g->ndeadlocks || format_tokio_task_cycles(s)) && rc == EXIT_OK)
		rc = EXIT_DEADLOCK; /* as in dump and locks */
	locks_graph_free(g);
	snapshot_free(s);
	return rc;
}

const struct cmd_entry cmd_core_entry = {
	.name = "core",
	.args_usage = "FILE",
	.summary = "print the stacks, locks and crash of an ELF core file",
	.description =
	    "Reads a core written by the kernel, by gcore, or kept by systemd-coredump\n"
	    "(compressed with zstd, lz4 or xz, inflated into an unlinked temporary file):\n"
	    "the threads' registers and the memory come from the core, the modules' files\n"
	    "from this host (or --sysroot), used only when their build-id is the one in the\n"
	    "core; a module that does not match is named and not symbolized. The crashing\n"
	    "thread comes first, with the signal, its code and the faulting address. Fields\n"
	    "only a live process has (wchan, scheduler counters, the pause) are null in JSON.\n"
	    "'stackdump FILE', 'stackdump locks FILE' and '-f json FILE' read cores too.\n"
	    "Deadlocks, the lock most waited for and threads in D come first at a terminal,\n"
	    "last in a pipe, as in a dump.\n"
	    "Exit status: 0 all threads shown, 3 a deadlock was found, 1 partial, 2 failure\n"
	    "(not a core, another architecture, truncated), 64 usage error.",
	.options = core_options,
	.min_args = 1,
	.max_args = 1,
	.arg_complete = CMPL_FILE,
	.flags = CMD_NEEDS_TARGET | CMD_TARGET_ATTACH | CMD_TARGET_CORE,
	.target_missing = "missing argument (FILE)\nusage: stackdump core [options] FILE",
	.check = cmd_snap_check,
	.exec = core_exec,
};
