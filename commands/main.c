// SPDX-License-Identifier: MIT
// The stackdump binary: `stackdump PID...` dumps and exits, `stackdump
// COMMAND ...` runs one command, `stackdump` alone opens the shell.
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "repl.h"
#include "suggest.h"
#include "version.h"

static void on_signal(int sig)
{
	(void)sig;
	cmd_interrupted = 1;
}

static void install_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: blocking reads in long commands return EINTR. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void usage(FILE *f)
{
	struct strbuf sb;
	strbuf_init(&sb);
	strbuf_adds(&sb,
		    "usage: stackdump [options] PID|NAME...     dump every thread and exit\n"
		    "       stackdump COMMAND [options] [args]  run one command\n"
		    "       stackdump [shell [PID|NAME]]        interactive shell\n"
		    "       stackdump -c 'CMD; CMD' [PID|NAME]  run shell commands\n\n");
	cmd_help_overview(&sb);
	strbuf_adds(&sb, "\nGlobal options:\n");
	cmd_help_globals(&sb);
	strbuf_adds(&sb,
		    "\nExit status: 0 ok, 1 partial (some threads or processes could not be read),\n"
		    "2 failure, 3 deadlock found (locks), 64 usage error, 130 interrupted.\n");
	fputs(sb.buf, f);
	strbuf_release(&sb);
}

/* Which global option ARG is (cmd_global_options), or -1. */
static int global_option(const char *arg)
{
	for (int i = 0; cmd_global_options[i].help; i++) {
		const struct cmd_option *o = &cmd_global_options[i];
		if (arg[0] != '-')
			return -1;
		if (o->short_name && arg[1] == o->short_name && !arg[2])
			return i;
		if (o->name && arg[1] == '-' && !strcmp(arg + 2, o->name))
			return i;
	}
	return -1;
}

/* Everything written to stdout must have arrived: a full disk turns a
 * successful exit into a failure (exit 2). A reader that closed the pipe
 * early (`stackdump PID | head -1`) already has what it wanted: nothing is
 * said and the status stays, as with git log | head. */
static int check_stdout(const struct cmd_ctx *ctx, int rc)
{
	int err = ctx->out_errno;
	errno = 0;
	if (fflush(stdout) != 0 && !err)
		err = errno ? errno : EIO;
	else if (ferror(stdout) && !err)
		err = EIO;
	if (!err)
		return rc;
	if (err == EPIPE)
		return rc;
	fprintf(stderr, "stackdump: cannot write the output: %s\n", sd_strerror(err));
	return rc == EXIT_OK || rc == EXIT_PARTIAL ? EXIT_FAIL : rc;
}

int main(int argc, char **argv)
{
	/* One heap for every thread of ours: glibc grows a second thread's
	 * heap one page at a time (an mprotect each: 720 of them while the
	 * prefetch thread read a libc debug file and mariadbd's symbols),
	 * where the main heap grows by M_TOP_PAD at once. */
	mallopt(M_ARENA_MAX, 1);
	mallopt(M_TOP_PAD, 1 << 20);
	install_signals();
	/* debuginfod is contacted only when the user asks for it, with
	 * STACKDUMP_DEBUGINFOD=1: any other value (0, no, an empty one)
	 * leaves it off, and -v says so. */
	const char *di = getenv("STACKDUMP_DEBUGINFOD");
	if (!di || strcmp(di, "1")) {
		unsetenv("DEBUGINFOD_URLS");
		for (int i = 1; di && i < argc; i++)
			if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
				struct strbuf e;
				strbuf_init(&e);
				strbuf_add_escaped(&e, di);
				fprintf(stderr,
					"stackdump: debuginfod stays off: STACKDUMP_DEBUGINFOD is "
					"\"%s\", not 1\n",
					e.buf);
				strbuf_release(&e);
				break;
			}
	}

	struct cmd_session session;
	cmd_session_init(&session);
	struct cmd_ctx ctx = {.out = stdout, .err = stderr, .session = &session};
	ctx.color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
	int rc;
	int g = argc >= 2 ? global_option(argv[1]) : -1;

	if (g == CMD_GLOBAL_HELP) {
		usage(stdout);
		rc = EXIT_OK;
	} else if (g == CMD_GLOBAL_VERSION) {
		printf("stackdump %s\n", STACKDUMP_VERSION);
		rc = EXIT_OK;
	} else if (g == CMD_GLOBAL_COMPLETION) {
		rc = repl_completion_script(&ctx, argc > 2 ? argv[2] : NULL);
	} else if (argc == 2 && !strcmp(argv[1], "--list-commands")) {
		/* Hidden: the command table as JSON, for the consistency tests. */
		rc = repl_list_commands(&ctx);
	} else if (argc == 2 && !strcmp(argv[1], "--man-page")) {
		/* Hidden: regenerates docs/stackdump.1. */
		rc = repl_man_page(&ctx);
	} else if (g == CMD_GLOBAL_COMMANDS) {
		if (argc < 3) {
			fprintf(stderr, "stackdump: -c needs commands, e.g. -c 'threads; locks' PID\n");
			rc = EXIT_USAGE;
		} else {
			rc = repl_run_string(&ctx, argv[2], argc > 3 ? argv[3] : NULL);
		}
	} else if (argc >= 3 && !strcmp(argv[1], "shell") &&
		   (!strcmp(argv[2], "-h") || !strcmp(argv[2], "--help"))) {
		struct strbuf sb;
		strbuf_init(&sb);
		cmd_help_shell(&sb);
		fputs(sb.buf, stdout);
		strbuf_release(&sb);
		rc = EXIT_OK;
	} else if (argc == 1 || !strcmp(argv[1], "shell")) {
		rc = repl_main(&ctx, argc > 2 ? argv[2] : NULL);
	} else {
		char msg[256];
		const struct cmd_entry *e = cmd_find(argv[1], 1, msg, sizeof(msg));
		if (e && !(e->flags & CMD_SHELL_ONLY)) {
			rc = cmd_run(&ctx, e, argc - 1, argv + 1);
		} else if (argv[1][0] == '-' || sd_parse_pid(argv[1]) > 0 || !e ||
			   strchr(argv[1], '/')) {
			/* `stackdump [options] PID...` is a dump. A word that is
			 * neither a command nor a number is tried as a process
			 * name, and reported as an unknown command otherwise. */
			extern const struct cmd_entry cmd_dump_entry;
			int looks_like_word = argv[1][0] != '-' && !strchr(argv[1], '/') &&
					      (argv[1][0] < '0' || argv[1][0] > '9');
			if (looks_like_word && !e) {
				pid_t *pids;
				size_t n = procfs_pids_by_name(argv[1], &pids);
				free(pids);
				if (n == 0) {
					const char *s = suggest_command(argv[1]);
					fprintf(stderr,
						"stackdump: '%s' is neither a command, a PID nor a "
						"process name (%s%s%ssee 'stackdump --help')\n",
						argv[1], s ? "did you mean '" : "", s ? s : "",
						s ? "'? " : "");
					cmd_session_release(&session);
					return EXIT_USAGE;
				}
			}
			rc = cmd_run(&ctx, &cmd_dump_entry, argc, argv);
		} else {
			fprintf(stderr, "stackdump: %s: only available in the shell\n", argv[1]);
			rc = EXIT_USAGE;
		}
	}
	rc = check_stdout(&ctx, rc);
	cmd_ctx_release(&ctx);
	cmd_session_release(&session);
	return rc;
}
