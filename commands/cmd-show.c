// SPDX-License-Identifier: MIT
// show [NAME]: the shell's settings and their values (see set).
#include "shell.h"

static int show_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	return shell_setting_show(ctx, argc ? argv[0] : NULL);
}

const struct cmd_entry cmd_show_entry = {
	.name = "show",
	.args_usage = "[NAME]",
	.summary = "show the settings of the shell, or one of them",
	.options = NULL,
	.min_args = 0,
	.max_args = 1,
	.arg_complete = CMPL_SETTING,
	.flags = CMD_SHELL_ONLY,
	.exec = show_exec,
};
