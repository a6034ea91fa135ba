// SPDX-License-Identifier: MIT
// help [COMMAND]: the overview of commands, or one command's usage and
// options, generated from the command table.
#include <string.h>

#include "cmd.h"

static int help_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct strbuf sb;
	strbuf_init(&sb);
	if (argc == 0) {
		strbuf_adds(&sb, "stackdump: all-thread stacks, lock waits and profiles of live "
				 "processes\n\n");
		cmd_help_overview(&sb);
		strbuf_adds(&sb, "\n'help COMMAND' or 'stackdump COMMAND --help' for details; 'help "
				 "shell' for the shell.\n");
	} else if (!strcmp(argv[0], "shell")) {
		/* Not a command: the shell the commands run in. */
		cmd_help_shell(&sb);
	} else {
		char msg[256];
		const struct cmd_entry *e = cmd_find(argv[0], 0, msg, sizeof(msg));
		if (!e) {
			cmd_error(ctx, "%s", msg);
			strbuf_release(&sb);
			return EXIT_USAGE;
		}
		cmd_help_command(&sb, e);
	}
	cmd_write(ctx, sb.buf, sb.len);
	strbuf_release(&sb);
	return EXIT_OK;
}

const struct cmd_entry cmd_help_entry = {
	.name = "help",
	.args_usage = "[COMMAND|shell]",
	.summary = "list the commands, or show how to use one (help shell: the shell)",
	.options = NULL,
	.min_args = 0,
	.max_args = 1,
	.arg_complete = CMPL_COMMAND,
	.exec = help_exec,
};
