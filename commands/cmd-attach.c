// SPDX-License-Identifier: MIT
// attach PID|NAME...: add processes to the shell's targets. Attaching is a
// handle, not a stop: nothing is traced until a command takes a snapshot,
// and the target runs between commands.
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"
#include "ptrace.h"
#include "shell.h"

enum { ATTACH_ALL };

static const struct cmd_option attach_options[] = {
    [ATTACH_ALL] =
	OPT_FLAG("all", 'a', "attach every process of that name (not only a unique one)"),
    {0},
};

/* Can we trace PID? Opening /proc/PID/mem asks the kernel the same
 * question as PTRACE_SEIZE (PTRACE_MODE_ATTACH, Yama included) without
 * touching the process, so `attach` reports a refusal at once instead of
 * at the first dump. */
static int check_traceable(pid_t pid, struct sd_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	int e = errno;
	if (e == EACCES || e == EPERM)
		return ptrace_explain_seize(pid, EPERM, err);
	return 0; /* anything else will show at the first snapshot */
}

/* Attach one PID. Returns 0, or -1 after an error message. */
static int attach_one(struct cmd_ctx *ctx, pid_t pid, long *first)
{
	struct cmd_session *s = ctx->session;
	struct strbuf sb;
	strbuf_init(&sb);
	int i = shell_target_index(s, pid);
	if (i >= 0) {
		shell_target_label(&sb, s->targets[i]);
		cmd_status(ctx, "already attached to %s (target %d)\n", sb.buf, i + 1);
		strbuf_release(&sb);
		if (*first < 0)
			*first = i;
		return 0;
	}
	struct sd_error err = {0};
	struct sd_target *t = target_new(pid, &err);
	if (t && check_traceable(pid, &err) < 0) {
		target_free(t);
		t = NULL;
	}
	if (!t) {
		cmd_error(ctx, "%s", err.msg);
		strbuf_release(&sb);
		return -1;
	}
	size_t idx = shell_target_add(s, t);
	if (*first < 0)
		*first = (long)idx;
	shell_target_label(&sb, t);
	cmd_status(ctx, "attached to %s, %ld thread%s (target %zu)\n", sb.buf, t->info.nthreads,
		  t->info.nthreads == 1 ? "" : "s", idx + 1);
	strbuf_release(&sb);
	return 0;
}

static int attach_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct cmd_session *s = ctx->session;
	int ok = 0, failed = 0;
	long first = -1;
	for (int a = 0; a < argc; a++) {
		long p = sd_parse_pid(argv[a]);
		if (p > 0 || !cmd_has(ctx, ATTACH_ALL)) {
			pid_t pid = p > 0 ? (pid_t)p : cmd_resolve_pid(ctx, argv[a]);
			if (pid > 0 && attach_one(ctx, pid, &first) == 0)
				ok++;
			else
				failed++;
			continue;
		}
		pid_t *pids;
		size_t n = procfs_pids_by_name(argv[a], &pids);
		if (!n) {
			cmd_error(ctx, "no process named '%s'", argv[a]);
			failed++;
		}
		for (size_t k = 0; k < n; k++) {
			if (attach_one(ctx, pids[k], &first) == 0)
				ok++;
			else
				failed++;
		}
		free(pids);
	}
	if (first >= 0) {
		s->current = (size_t)first;
		/* The loaded snapshot was what commands looked at; now it is
		 * the live process again. */
		if (s->loaded)
			shell_close_loaded(ctx);
	}
	if (!ok)
		return EXIT_FAIL;
	return failed ? EXIT_PARTIAL : EXIT_OK;
}

const struct cmd_entry cmd_attach_entry = {
	.name = "attach",
	.args_usage = "PID|NAME...",
	.summary = "add processes to the targets of the shell (they keep running)",
	.description =
	    "Attaching is a handle, not a stop: nothing is traced until a command looks at\n"
	    "the process, and it runs freely between commands. The first process named\n"
	    "becomes the current target (see 'targets' and 'use'). A NAME must match one\n"
	    "process (its comm or executable name) unless --all is given.\n"
	    "Exit status: 0 attached, 1 some could not be attached, 2 none.",
	.options = attach_options,
	.min_args = 1,
	.max_args = -1,
	.arg_complete = CMPL_PID,
	.flags = CMD_SHELL_ONLY,
	.exec = attach_exec,
};
