// SPDX-License-Identifier: MIT
// load: read a saved snapshot (from save or record) so that the shell's
// commands inspect it instead of a live process; on the command line it
// checks the file and prints what it holds.
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "snapio.h"
#include "cmd.h"

static void describe(struct strbuf *sb, const char *path, const struct sd_snapshot *s,
		     const struct snapio_meta *m)
{
	strbuf_adds(sb, "loaded ");
	strbuf_add_escaped(sb, path);
	strbuf_addf(sb, ": pid %d \"", (int)s->pid);
	strbuf_add_escaped(sb, s->comm ? s->comm : "");
	strbuf_addf(sb, "\", %zu threads", s->nthreads);
	if (s->time > 0) {
		time_t t = (time_t)s->time;
		struct tm tm;
		char when[64];
		gmtime_r(&t, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
		strbuf_addf(sb, ", taken %s", when);
	}
	if (m->hostname) {
		strbuf_adds(sb, " on ");
		strbuf_add_escaped(sb, m->hostname);
	}
	if (m->reason) {
		strbuf_adds(sb, " (");
		strbuf_add_escaped(sb, m->reason);
		strbuf_adds(sb, ")");
	}
	if (m->engine && strcmp(m->engine, "ptrace")) {
		strbuf_adds(sb, " [engine ");
		strbuf_add_escaped(sb, m->engine);
		strbuf_adds(sb, "]");
	}
	if (m->version == 0)
		strbuf_adds(sb, " [dump JSON: no module list]");
	if (s->partial)
		strbuf_adds(sb, " [partial]");
	strbuf_adds(sb, "\n");
}

static int load_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	(void)argc;
	const char *path = argv[0];
	struct snapio_meta m;
	struct sd_error err = {0};
	struct sd_snapshot *s = NULL;
	if (target_is_core_file(path)) {
		/* A core file: its snapshot, read once (the core does not change). */
		snapio_meta_init(&m);
		m.reason = "core file";
		m.version = SD_SNAPSHOT_VERSION;
		struct sd_target *t = target_open_core(path, NULL, &err);
		if (t) {
			struct sd_snap_opts o;
			snap_opts_init(&o);
			s = target_snapshot(t, &o, &err);
			target_free(t);
		}
	} else {
		s = snapio_load(path, &m, &err);
	}
	if (!s) {
		cmd_error(ctx, "load: %s", err.msg);
		return EXIT_FAIL;
	}
	struct strbuf sb;
	strbuf_init(&sb);
	describe(&sb, path, s, &m);
	/* In the shell this line is status (a later command's output is
	 * what stdout is for); `stackdump load FILE` asked for it. */
	if (ctx->in_shell)
		cmd_status(ctx, "%s", sb.buf);
	else
		cmd_write(ctx, sb.buf, sb.len);
	strbuf_release(&sb);
	struct cmd_session *ss = ctx->session;
	if (ctx->in_shell && ss) {
		snapshot_free(ss->loaded);
		free(ss->loaded_path);
		ss->loaded = s;
		ss->loaded_path = sd_xstrdup(path);
	} else {
		snapshot_free(s);
	}
	return EXIT_OK;
}

const struct cmd_entry cmd_load_entry = {
	.name = "load",
	.alias = NULL,
	.args_usage = "FILE",
	.summary = "load a saved snapshot to inspect it (dump, threads, locks)",
	.description =
	    "Reads a snapshot written by save or record (gzip or not), or the output of\n"
	    "'dump --format json' for one process, or an ELF core file (see core). In the\n"
	    "shell, dump, threads and locks then\n"
	    "show the loaded snapshot. A malformed, truncated or newer-version file is\n"
	    "refused with the place of the problem. On the command line it only checks the\n"
	    "file. Exit status: 0 loaded, 2 the file cannot be read, 64 usage error.",
	.options = NULL,
	.min_args = 1,
	.max_args = 1,
	.arg_complete = CMPL_FILE,
	.exec = load_exec,
};
