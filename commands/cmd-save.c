// SPDX-License-Identifier: MIT
// save: write the shell's last snapshot (or the loaded one) to a file in the
// saved snapshot format, atomically, gzip-compressed on request.
#include <string.h>

#include "snapio.h"
#include "cmd.h"

enum { SAVE_COMPRESS, SAVE_CMDLINE };

static const struct cmd_option save_options[] = {
    [SAVE_COMPRESS] =
	OPT_FLAG("compress", 'z', "gzip the file (the default when FILE ends in .gz)"),
    [SAVE_CMDLINE] = OPT_FLAG("cmdline", 0,
			      "keep the target's whole command line (by default only the program: "
			      "arguments can hold secrets)"),
    {0},
};

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && !strcmp(s + a - b, suffix);
}

static int save_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	(void)argc;
	struct cmd_session *ss = ctx->session;
	struct sd_snapshot *s = ss ? ss->last : NULL;
	if (!s && ss)
		s = ss->loaded;
	if (!s) {
		cmd_error(ctx, "save: no snapshot to save: take one first (dump), or load one");
		return EXIT_FAIL;
	}
	const char *path = argv[0];
	int compress = cmd_has(ctx, SAVE_COMPRESS) || ends_with(path, ".gz");
	struct snapio_meta m;
	snapio_meta_init(&m);
	m.reason = "save";
	m.full_cmdline = cmd_has(ctx, SAVE_CMDLINE);
	if (s == ss->last)
		snapio_meta_from_proc(&m, s->pid, s);
	struct sd_error err = {0};
	uint64_t bytes = 0;
	if (snapio_save(path, s, &m, compress, !compress, &bytes, &err) < 0) {
		cmd_error(ctx, "save: %s", err.msg);
		return EXIT_FAIL;
	}
	struct strbuf sb;
	strbuf_init(&sb);
	strbuf_adds(&sb, "saved the snapshot of ");
	strbuf_addf(&sb, "%d \"", (int)s->pid);
	strbuf_add_escaped(&sb, s->comm ? s->comm : "");
	strbuf_addf(&sb, "\" (%zu threads) to ", s->nthreads);
	strbuf_add_escaped(&sb, path);
	strbuf_addf(&sb, " (%llu bytes%s)\n", (unsigned long long)bytes, compress ? ", gzip" : "");
	cmd_status(ctx, "%s", sb.buf);
	strbuf_release(&sb);
	return EXIT_OK;
}

const struct cmd_entry cmd_save_entry = {
	.name = "save",
	.alias = NULL,
	.args_usage = "FILE",
	.summary = "save the last snapshot to a file (read it with load or report)",
	.description =
	    "Writes the last snapshot taken in the shell (or the loaded one) in the saved\n"
	    "snapshot format: documented JSON with process metadata, modules with build-ids\n"
	    "and lock analysis, readable on another machine without the binaries (see \"The\n"
	    "saved snapshot format\" in docs/recording.md). The file is written to a temporary name\n"
	    "and renamed, so it is never left half-written.\n"
	    "Exit status: 0 saved, 2 failure, 64 usage error.",
	.options = save_options,
	.min_args = 1,
	.max_args = 1,
	.arg_complete = CMPL_FILE,
	.flags = CMD_SHELL_ONLY,
	.exec = save_exec,
};
