// SPDX-License-Identifier: MIT
// ps [GLOB]: the processes one could attach to, with their thread counts,
// read from /proc without touching them. Attached targets are marked.
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <jansson.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "procfs.h"
#include "shell.h"

enum { PS_ALL, PS_FORMAT };

static const struct cmd_option ps_options[] = {
    [PS_ALL] = OPT_FLAG("all", 'a', "include kernel threads (which cannot be attached)"),
    [PS_FORMAT] = OPT_FORMAT("output format: text or json", "text json", "text"),
    {0},
};

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

/* The command line of PID with NULs turned into spaces (heap, may be ""). */
static char *read_cmdline(pid_t pid)
{
	char path[64], *text;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	ssize_t n = sd_read_file(path, &text, 1 << 16);
	if (n < 0)
		return sd_xstrdup("");
	for (ssize_t i = 0; i < n; i++)
		if (text[i] == '\0')
			text[i] = ' ';
	while (n > 0 && text[n - 1] == ' ')
		text[--n] = '\0';
	return text;
}

static const char *base_of(const char *p)
{
	const char *b = p ? strrchr(p, '/') : NULL;
	return b ? b + 1 : p;
}

static int matches(const char *glob, const struct sd_procinfo *pi)
{
	if (!glob)
		return 1;
	if (!fnmatch(glob, pi->comm, 0))
		return 1;
	return pi->exe && !fnmatch(glob, base_of(pi->exe), 0);
}

static int ps_exec(struct cmd_ctx *ctx, int argc, char **argv)
{
	const char *glob = argc ? argv[0] : NULL;
	int json = cmd_is(ctx, PS_FORMAT, "json");
	int all = cmd_has(ctx, PS_ALL);

	DIR *d = opendir("/proc");
	if (!d) {
		cmd_error(ctx, "ps: cannot read /proc: %s (is procfs mounted?)", sd_strerror(errno));
		return EXIT_FAIL;
	}
	pid_t *pids = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		long p = sd_parse_pid(de->d_name);
		if (p <= 0)
			continue;
		sd_grow(&pids, &cap, n + 1, sizeof(*pids));
		pids[n++] = (pid_t)p;
	}
	closedir(d);
	sd_sort(pids, n, sizeof(*pids), cmp_pid);

	struct strbuf sb;
	struct jsonw jw;
	cmd_json_init(&jw, &sb);
	if (json)
		jsonw_array_begin(&jw);
	else
		strbuf_addf(&sb, "%s      PID  THREADS  S  USER      NAME             COMMAND%s\n",
			    ctx->color ? "\033[1m" : "", ctx->color ? "\033[0m" : "");
	size_t shown = 0;
	for (size_t i = 0; i < n && !cmd_interrupted; i++) {
		struct sd_procinfo pi;
		if (procfs_procinfo(pids[i], &pi, NULL) < 0)
			continue; /* exited meanwhile */
		if ((pi.kernel_thread && !all) || !matches(glob, &pi) || pi.pid == getpid()) {
			procfs_procinfo_release(&pi);
			continue;
		}
		int attached = ctx->session && shell_target_index(ctx->session, pi.pid) >= 0;
		struct passwd *pw = getpwuid(pi.uid);
		char user[32];
		if (pw)
			snprintf(user, sizeof(user), "%s", pw->pw_name);
		else
			snprintf(user, sizeof(user), "%u", (unsigned)pi.uid);
		char *cmdline = read_cmdline(pi.pid);
		if (json) {
			jsonw_object_begin(&jw);
			jsonw_kint(&jw, "pid", pi.pid);
			jsonw_kint(&jw, "ppid", pi.ppid);
			jsonw_kint(&jw, "threads", pi.nthreads);
			jsonw_kstrn(&jw, "state", &pi.state, 1);
			jsonw_kint(&jw, "uid", pi.uid);
			jsonw_kstr(&jw, "user", user);
			jsonw_kstr(&jw, "name", pi.comm);
			jsonw_kstr(&jw, "exe", pi.exe);
			jsonw_kstr(&jw, "cmdline", cmdline);
			jsonw_kbool(&jw, "kernel_thread", pi.kernel_thread);
			jsonw_kbool(&jw, "attached", attached);
			jsonw_object_end(&jw);
		} else {
			strbuf_addf(&sb, "%c %7d  %7ld  %c  %-8.8s  ", attached ? '*' : ' ', (int)pi.pid,
				    pi.nthreads, pi.state ? pi.state : '?', user);
			size_t before = sb.len;
			strbuf_add_escaped(&sb, pi.comm);
			for (size_t w = sb.len - before; w < 15; w++)
				strbuf_adds(&sb, " ");
			strbuf_adds(&sb, "  ");
			if (*cmdline) {
				/* Long command lines are cut: ps is for finding a PID. */
				if (strlen(cmdline) > 100)
					strcpy(cmdline + 97, "...");
				strbuf_add_escaped(&sb, cmdline);
			} else {
				strbuf_adds(&sb, "[");
				strbuf_add_escaped(&sb, pi.comm);
				strbuf_adds(&sb, "]");
			}
			strbuf_adds(&sb, "\n");
		}
		free(cmdline);
		procfs_procinfo_release(&pi);
		shown++;
	}
	free(pids);
	int rc = EXIT_OK;
	if (json) {
		jsonw_array_end(&jw);
		cmd_print_json(ctx, &jw);
	} else if (!shown && glob) {
		cmd_error(ctx, "ps: no process matches '%s'", glob);
		rc = EXIT_FAIL;
	} else {
		cmd_write(ctx, sb.buf, sb.len);
	}
	jsonw_release(&jw);
	strbuf_release(&sb);
	if (cmd_interrupted)
		return EXIT_INTERRUPTED;
	return rc;
}

const struct cmd_entry cmd_ps_entry = {
	.name = "ps",
	.args_usage = "[GLOB]",
	.summary = "list processes with their thread counts (* marks attached ones)",
	.description = "GLOB matches the process name (comm) or the executable's file name.\n"
		       "Nothing is stopped: everything comes from /proc.\n"
		       "Exit status: 0 ok, 2 no process matches GLOB, 64 usage error.",
	.options = ps_options,
	.min_args = 0,
	.max_args = 1,
	.arg_complete = CMPL_PID,
	.exec = ps_exec,
};
