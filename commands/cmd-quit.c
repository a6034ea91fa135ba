// SPDX-License-Identifier: MIT
// quit [STATUS]: leave the shell. Every target is dropped (none is traced
// between commands, so none is left stopped). The exit status is STATUS,
// or that of the command before quit.
#include <stdlib.h>

#include "shell.h"

static int quit_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct cmd_session *s = ctx->session;
	int rc = EXIT_OK;
	if (argc) {
		char *end;
		long n = strtol(argv[0], &end, 10);
		if (!*argv[0] || *end || n < 0 || n > 255) {
			cmd_error(ctx, "quit: STATUS must be a number from 0 to 255, not '%s'", argv[0]);
			return EXIT_USAGE;
		}
		rc = (int)n;
	}
	while (s->ntargets)
		shell_target_remove(s, s->ntargets - 1);
	s->quit = 1;
	return rc;
}

const struct cmd_entry cmd_quit_entry = {
	.name = "quit",
	.alias = "exit",
	.args_usage = "[STATUS]",
	.summary = "detach from every target and leave the shell (also Ctrl-D)",
	.description = "The exit status is STATUS, or else that of the command before quit.",
	.options = NULL,
	.min_args = 0,
	.max_args = 1,
	.arg_complete = CMPL_NONE,
	.flags = CMD_SHELL_ONLY,
	.exec = quit_exec,
};
