// SPDX-License-Identifier: MIT
// targets: the processes attached in the shell, the current one marked,
// and the loaded snapshot if there is one.
#include <time.h>

#include "procfs.h"
#include "shell.h"

static int targets_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	struct cmd_session *s = ctx->session;
	struct strbuf sb;
	strbuf_init(&sb);
	if (!s->ntargets && !s->loaded) {
		cmd_print(ctx, "no targets (attach PID|NAME)\n");
		strbuf_release(&sb);
		return EXIT_OK;
	}
	if (s->ntargets)
		strbuf_addf(&sb, "%s     N      PID  THREADS  STATE  NAME%s\n", ctx->color ? "\033[1m" : "",
			    ctx->color ? "\033[0m" : "");
	for (size_t i = 0; i < s->ntargets; i++) {
		struct sd_target *t = s->targets[i];
		struct sd_procinfo pi;
		int alive = procfs_procinfo(t->pid, &pi, NULL) == 0;
		char state[16] = "exited";
		long nthreads = 0;
		if (alive) {
			snprintf(state, sizeof(state), "%c", pi.state);
			nthreads = pi.nthreads;
			procfs_procinfo_release(&pi);
		}
		strbuf_addf(&sb, "  %c %2zu  %7d  %7ld  %-5s  ", i == s->current ? '*' : ' ', i + 1,
			    (int)t->pid, nthreads, state);
		strbuf_add_escaped(&sb, t->info.comm);
		if (t->info.exe) {
			strbuf_adds(&sb, "  ");
			strbuf_add_escaped(&sb, t->info.exe);
		}
		strbuf_adds(&sb, "\n");
	}
	if (s->loaded) {
		const struct sd_snapshot *l = s->loaded;
		char when[64] = "";
		time_t tt = (time_t)l->time;
		struct tm tm;
		if (l->time > 0 && localtime_r(&tt, &tm))
			strftime(when, sizeof(when), ", taken %Y-%m-%d %H:%M:%S", &tm);
		strbuf_adds(&sb, "loaded snapshot ");
		strbuf_add_escaped(&sb, s->loaded_path ? s->loaded_path : "(unnamed)");
		strbuf_addf(&sb, ": PID %d \"", (int)l->pid);
		strbuf_add_escaped(&sb, l->comm ? l->comm : "?");
		strbuf_addf(&sb, "\", %zu thread%s%s%s\n", l->nthreads, l->nthreads == 1 ? "" : "s",
			    when, " (commands look at it; 'detach' closes it)");
	}
	cmd_write(ctx, sb.buf, sb.len);
	strbuf_release(&sb);
	return EXIT_OK;
}

const struct cmd_entry cmd_targets_entry = {
	.name = "targets",
	.summary = "list the attached processes (* marks the current one)",
	.description = "'use N' makes target N the current one; 'detach N' drops it.",
	.options = NULL,
	.min_args = 0,
	.max_args = 0,
	.arg_complete = CMPL_NONE,
	.flags = CMD_SHELL_ONLY,
	.exec = targets_exec,
};
