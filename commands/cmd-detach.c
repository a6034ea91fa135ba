// SPDX-License-Identifier: MIT
// detach [N|PID|all]: drop targets from the shell (the current one by
// default). Nothing is traced between commands, so this only forgets the
// handle; with no target it closes a loaded snapshot.
#include <stdlib.h>
#include <string.h>

#include "shell.h"

/* Which target ARG names: an attached PID first, then a 1-based index. */
static int find_target(struct cmd_ctx *ctx, const char *arg)
{
	struct cmd_session *s = ctx->session;
	long n = sd_parse_pid(arg);
	if (n > 0) {
		int i = shell_target_index(s, (pid_t)n);
		if (i >= 0)
			return i;
		if ((size_t)n <= s->ntargets)
			return (int)n - 1;
	}
	cmd_error(ctx, "no target %s (see 'targets')", arg);
	return -1;
}

static void detach_one(struct cmd_ctx *ctx, size_t i)
{
	struct strbuf sb;
	strbuf_init(&sb);
	shell_target_label(&sb, ctx->session->targets[i]);
	shell_target_remove(ctx->session, i);
	cmd_status(ctx, "detached from %s\n", sb.buf);
	strbuf_release(&sb);
}

static int detach_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct cmd_session *s = ctx->session;
	int all = argc > 0 && !strcmp(argv[0], "all");
	/* A loaded snapshot is what commands look at while it is open, so it
	 * goes first. */
	if (s->loaded && (argc == 0 || all)) {
		shell_close_loaded(ctx);
		if (!all)
			return EXIT_OK;
	}
	if (!s->ntargets) {
		if (all)
			return EXIT_OK;
		cmd_error(ctx, "no target to detach from");
		return EXIT_FAIL;
	}
	if (argc == 0) {
		detach_one(ctx, s->current);
		return EXIT_OK;
	}
	if (all) {
		while (s->ntargets)
			detach_one(ctx, s->ntargets - 1);
		return EXIT_OK;
	}
	int i = find_target(ctx, argv[0]);
	if (i < 0)
		return EXIT_FAIL;
	detach_one(ctx, (size_t)i);
	return EXIT_OK;
}

const struct cmd_entry cmd_detach_entry = {
	.name = "detach",
	.args_usage = "[N|PID|all]",
	.summary = "drop the current target (or target N, or all of them)",
	.description = "The process is not touched: between commands no target is traced.\n"
		       "A loaded snapshot (see 'load') is closed first: while it is open, commands\n"
		       "look at it rather than at the current target.",
	.options = NULL,
	.min_args = 0,
	.max_args = 1,
	.arg_complete = CMPL_NONE,
	.flags = CMD_SHELL_ONLY,
	.exec = detach_exec,
};
