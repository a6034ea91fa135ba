// SPDX-License-Identifier: MIT
// source FILE: run the shell commands in FILE, one line at a time, as if
// typed (';' and '!cmd' included, '#' starts a comment line).
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "repl.h"
#include "shell.h"

/* Nesting bound: a file that sources itself stops here. */
#define SOURCE_MAX_DEPTH 16

static int depth;

static int source_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	(void)argc;
	if (depth >= SOURCE_MAX_DEPTH) {
		cmd_error(ctx, "source %s: nested more than %d deep (does it source itself?)", argv[0],
			  SOURCE_MAX_DEPTH);
		return EXIT_FAIL;
	}
	FILE *f = fopen(argv[0], "re");
	if (!f) {
		cmd_error(ctx, "source: cannot open %s: %s", argv[0], sd_strerror(errno));
		return EXIT_FAIL;
	}
	depth++;
	int rc = repl_run_stream(ctx, f, EXIT_OK);
	fclose(f);
	depth--;
	return rc;
}

const struct cmd_entry cmd_source_entry = {
	.name = "source",
	.args_usage = "FILE",
	.summary = "run the shell commands in FILE",
	.description = "One command per line ('#' starts a comment). The exit status is that of the\n"
		       "last command.",
	.options = NULL,
	.min_args = 1,
	.max_args = 1,
	.arg_complete = CMPL_FILE,
	.flags = CMD_SHELL_ONLY,
	.exec = source_exec,
};
