// SPDX-License-Identifier: MIT
// The stackdump binary: `stackdump PID...` dumps and exits, `stackdump
// COMMAND ...` runs one command, `stackdump` alone opens the shell.
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "repl.h"
#include "../src/version.h"

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
	strbuf_adds(&sb,
		    "\nGlobal options:\n"
		    "  -h, --help         show this help ('stackdump COMMAND --help' for a command)\n"
		    "  -V, --version      show the version\n"
		    "  -c CMDS            run shell commands (separated by ';') and exit\n"
		    "  --completion SHELL print the completion script for bash, zsh or fish\n\n"
		    "Exit status: 0 ok, 1 partial (some threads or processes could not be read),\n"
		    "2 failure, 3 deadlock found (locks), 64 usage error, 130 interrupted.\n");
	fputs(sb.buf, f);
	strbuf_release(&sb);
}

int main(int argc, char **argv)
{
	install_signals();
	/* debuginfod is contacted only when the user asks for it. */
	if (!getenv("STACKDUMP_DEBUGINFOD"))
		unsetenv("DEBUGINFOD_URLS");

	struct cmd_session session;
	cmd_session_init(&session);
	struct cmd_ctx ctx = {.out = stdout, .err = stderr, .session = &session};
	ctx.color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
	int rc;

	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		rc = EXIT_OK;
	} else if (argc >= 2 && (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version"))) {
		printf("stackdump %s\n", STACKDUMP_VERSION);
		rc = EXIT_OK;
	} else if (argc >= 2 && !strcmp(argv[1], "--completion")) {
		rc = repl_completion_script(&ctx, argc > 2 ? argv[2] : NULL);
	} else if (argc == 2 && !strcmp(argv[1], "--list-commands")) {
		/* Hidden: the command table as JSON, for the consistency tests. */
		rc = repl_list_commands(&ctx);
	} else if (argc == 2 && !strcmp(argv[1], "--man-page")) {
		/* Hidden: regenerates docs/stackdump.1. */
		rc = repl_man_page(&ctx);
	} else if (argc >= 2 && !strcmp(argv[1], "-c")) {
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
		} else if (argv[1][0] == '-' || sd_parse_pid(argv[1]) > 0 || !e) {
			/* `stackdump [options] PID...` is a dump. A word that is
			 * neither a command nor a number is tried as a process
			 * name, and reported as an unknown command otherwise. */
			extern const struct cmd_entry cmd_dump_entry;
			int looks_like_word = argv[1][0] != '-' &&
					      (argv[1][0] < '0' || argv[1][0] > '9');
			if (looks_like_word && !e) {
				pid_t *pids;
				size_t n = procfs_pids_by_name(argv[1], &pids);
				free(pids);
				if (n == 0) {
					fprintf(stderr,
						"stackdump: '%s' is neither a command, a PID nor a "
						"process name (see 'stackdump --help')\n",
						argv[1]);
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
	fflush(stdout);
	cmd_ctx_release(&ctx);
	cmd_session_release(&session);
	return rc;
}
