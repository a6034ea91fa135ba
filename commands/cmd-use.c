// SPDX-License-Identifier: MIT
// use N|PID: make another attached target the current one (the one the
// prompt shows and commands look at).
#include "shell.h"

static int use_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	(void)argc;
	struct cmd_session *s = ctx->session;
	long n = sd_parse_pid(argv[0]);
	int i = n > 0 ? shell_target_index(s, (pid_t)n) : -1;
	if (i < 0 && n > 0 && (size_t)n <= s->ntargets)
		i = (int)n - 1;
	if (i < 0) {
		if (!s->ntargets)
			cmd_error(ctx, "no targets: attach a process first (attach PID|NAME)");
		else
			cmd_error(ctx, "no target %s: give a number from 'targets' (1 to %zu) or an "
				       "attached PID",
				  argv[0], s->ntargets);
		return EXIT_USAGE;
	}
	s->current = (size_t)i;
	struct strbuf sb;
	strbuf_init(&sb);
	shell_target_label(&sb, s->targets[i]);
	cmd_status(ctx, "current target: %s (target %d)\n", sb.buf, i + 1);
	strbuf_release(&sb);
	return EXIT_OK;
}

const struct cmd_entry cmd_use_entry = {
	.name = "use",
	.args_usage = "N|PID",
	.summary = "make target N (see 'targets') or the attached PID the current target",
	.options = NULL,
	.min_args = 1,
	.max_args = 1,
	.arg_complete = CMPL_NONE,
	.flags = CMD_SHELL_ONLY,
	.exec = use_exec,
};
