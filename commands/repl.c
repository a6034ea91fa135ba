// SPDX-License-Identifier: MIT
// The interactive shell over the command table: a readline prompt showing
// the current target, history kept across sessions, ';' and '!cmd', scripts
// on stdin and -c. Targets run freely between commands; the shell notices
// when one exits, and Ctrl-C only ends the command running.
#include "repl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "shell.h"
#include "ptrace.h"
#include "safefile.h"

extern const struct cmd_entry cmd_quit_entry;

/* History lines kept in the file. */
#define HISTORY_MAX 2000

/* The status of the last command run, for `quit` without a status. */
static int last_rc;
/* The signal that set cmd_interrupted in the interactive shell. */
static volatile sig_atomic_t repl_signal;
/* The terminal was resized while readline was not looking. */
static volatile sig_atomic_t repl_winch;

/* Drop targets that exited, saying so. Between commands nothing is
 * traced, so a target may go away at any time. */
static void check_targets(struct cmd_ctx *ctx)
{
	struct cmd_session *s = ctx->session;
	for (size_t i = s->ntargets; i-- > 0;) {
		if (target_alive(s->targets[i]))
			continue;
		struct strbuf sb;
		strbuf_init(&sb);
		shell_target_label(&sb, s->targets[i]);
		shell_target_remove(s, i);
		cmd_error(ctx, "process %s exited (detached)", sb.buf);
		strbuf_release(&sb);
	}
}

/* What runs between two commands: detach threads that stopped after a
 * freeze gave up on them, drop targets that exited, pick the colour. */
static void between_commands(struct cmd_ctx *ctx)
{
	ptrace_reap_stragglers();
	check_targets(ctx);
	ctx->color = shell_color_wanted(ctx->session);
	fflush(ctx->out);
}

/* `!CMD`: run CMD with /bin/sh. The child gets the terminal's Ctrl-C
 * itself; we wait for it whatever happens. */
static int shell_escape(struct cmd_ctx *ctx, const char *cmd)
{
	cmd += strspn(cmd, " \t");
	if (!*cmd) {
		cmd_error(ctx, "!: give a shell command, e.g. !ls");
		return EXIT_USAGE;
	}
	fflush(ctx->out);
	fflush(ctx->err);
	struct cmd_session *s = ctx->session;
	char pidbuf[32] = "";
	if (s->ntargets)
		snprintf(pidbuf, sizeof(pidbuf), "%d", (int)s->targets[s->current]->pid);
	pid_t child = fork();
	if (child < 0) {
		cmd_error(ctx, "!: cannot start /bin/sh: %s", sd_strerror(errno));
		return EXIT_FAIL;
	}
	if (child == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		if (!s->interactive) {
			/* The script is on our stdin: the command must not eat it. */
			int fd = open("/dev/null", O_RDONLY);
			if (fd >= 0) {
				dup2(fd, STDIN_FILENO);
				close(fd);
			}
		}
		if (*pidbuf)
			setenv("STACKDUMP_PID", pidbuf, 1);
		else
			unsetenv("STACKDUMP_PID");
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	int st;
	while (waitpid(child, &st, 0) < 0) {
		if (errno != EINTR) {
			cmd_error(ctx, "!: cannot wait for /bin/sh: %s", sd_strerror(errno));
			return EXIT_FAIL;
		}
	}
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st)) {
		if (WTERMSIG(st) == SIGINT)
			cmd_interrupted = 1;
		return 128 + WTERMSIG(st);
	}
	return EXIT_FAIL;
}

static int run_words(struct cmd_ctx *ctx, int argc, char **argv)
{
	if (argc == 0)
		return EXIT_OK;
	between_commands(ctx);
	char msg[256];
	const struct cmd_entry *e = cmd_find(argv[0], 0, msg, sizeof(msg));
	if (!e) {
		cmd_error(ctx, "%s", msg);
		return last_rc = EXIT_USAGE;
	}
	if (e->flags & CMD_CLI_ONLY) {
		cmd_error(ctx, "%s: not available in the shell (run 'stackdump %s' instead)", e->name,
			  e->name);
		return last_rc = EXIT_USAGE;
	}
	int before = last_rc;
	int rc = cmd_run(ctx, e, argc, argv);
	fflush(ctx->out);
	/* `quit` alone keeps the status of the command before it. */
	if (e == &cmd_quit_entry && ctx->session->quit && argc == 1)
		rc = before;
	return last_rc = rc;
}

/* Run one command: split into words, run. */
static int run_command(struct cmd_ctx *ctx, const char *text)
{
	char **argv;
	int argc = repl_split(text, &argv);
	if (argc < 0) {
		cmd_error(ctx, "unterminated quote in: %s", text);
		return last_rc = EXIT_USAGE;
	}
	int rc = argc ? run_words(ctx, argc, argv) : last_rc;
	repl_free_words(argc, argv);
	return rc;
}

int repl_run_line(struct cmd_ctx *ctx, const char *line)
{
	int rc = last_rc;
	struct strbuf cur;
	strbuf_init(&cur);
	char q = 0;
	const char *p = line;
	for (;;) {
		/* At the start of a command: `!` takes the rest of the line,
		 * `#` comments it out. */
		if (!q && cur.len == strspn(cur.buf, " \t")) {
			const char *w = p + strspn(p, " \t");
			if (*w == '!') {
				between_commands(ctx);
				rc = last_rc = shell_escape(ctx, w + 1);
				break;
			}
			if (*w == '#')
				break;
		}
		char c = *p;
		if (c && q) {
			if (c == '\\' && q == '"' && p[1]) {
				strbuf_add(&cur, p, 2);
				p += 2;
				continue;
			}
			if (c == q)
				q = 0;
			strbuf_add(&cur, p++, 1);
			continue;
		}
		if (c == '\\' && p[1]) {
			strbuf_add(&cur, p, 2);
			p += 2;
			continue;
		}
		if (c == '\'' || c == '"')
			q = c;
		if (c && c != ';') {
			strbuf_add(&cur, p++, 1);
			continue;
		}
		if (!c && q) {
			cmd_error(ctx, "unterminated quote in: %s", line);
			rc = last_rc = EXIT_USAGE;
			break;
		}
		if (cur.len > strspn(cur.buf, " \t"))
			rc = run_command(ctx, cur.buf);
		cur.len = 0;
		cur.buf[0] = '\0';
		if (!c || ctx->session->quit || cmd_interrupted)
			break;
		p++;
	}
	strbuf_release(&cur);
	return rc;
}

static int attach_first(struct cmd_ctx *ctx, const char *target)
{
	char *argv[] = {"attach", (char *)target, NULL};
	return run_words(ctx, 2, argv);
}

int repl_run_string(struct cmd_ctx *ctx, const char *script, const char *target)
{
	ctx->in_shell = 1;
	last_rc = EXIT_OK;
	if (target) {
		int rc = attach_first(ctx, target);
		if (rc != EXIT_OK)
			return rc;
	}
	int rc = repl_run_line(ctx, script);
	between_commands(ctx);
	if (cmd_interrupted && rc == EXIT_OK)
		rc = EXIT_INTERRUPTED;
	return rc;
}

char *repl_history_path(void)
{
	struct strbuf sb;
	strbuf_init(&sb);
	const char *x = getenv("XDG_STATE_HOME");
	/* The XDG spec says relative paths are to be ignored. */
	if (x && x[0] == '/') {
		strbuf_adds(&sb, x);
	} else {
		const char *home = getenv("HOME");
		if (!home || !*home) {
			struct passwd *pw = getpwuid(getuid());
			home = pw ? pw->pw_dir : NULL;
		}
		if (!home || !*home)
			return NULL;
		strbuf_addf(&sb, "%s/.local/state", home);
	}
	strbuf_adds(&sb, "/stackdump/history");
	return strbuf_detach(&sb);
}

/* The interactive shell's state. */
static struct {
	struct cmd_ctx *ctx;
	char *history;       /* file, NULL when it cannot be kept */
	char *line;          /* a line readline handed over */
	int got_line, got_eof;
	struct pollfd fds[33]; /* stdin, then a pidfd per target */
	pid_t fd_pid[33];
	size_t nfds;
} sh;

static void on_line(char *line)
{
	if (!line) {
		sh.got_eof = 1;
	} else {
		sh.line = line;
		sh.got_line = 1;
	}
	/* Else readline shows a new prompt at once: ours comes after the
	 * command. */
	rl_callback_handler_remove();
}

static void on_signal(int sig)
{
	cmd_interrupted = 1;
	repl_signal = sig;
}

static void on_winch(int sig)
{
	(void)sig;
	repl_winch = 1;
}

static void history_open(void)
{
	sh.history = repl_history_path();
	using_history();
	if (!sh.history)
		return;
	char *dir = sd_xstrdup(sh.history);
	*strrchr(dir, '/') = '\0';
	/* A folder of ours that nobody else can change, and a regular file
	 * of ours in it: readline then reads and writes it by name. */
	struct sd_error err = {0};
	int dfd = safefile_opendir(dir, SAFEFILE_MKDIR | SAFEFILE_OWN_DIR, NULL, &err);
	int fd = dfd < 0 ? -1 : safefile_open_own(dfd, dir, "history", 0600, 1, &err);
	if (dfd >= 0)
		close(dfd);
	if (fd < 0) {
		struct strbuf e;
		strbuf_init(&e);
		strbuf_add_escaped(&e, err.msg);
		fprintf(stderr, "stackdump: history will not be kept: %s\n", e.buf);
		strbuf_release(&e);
		free(sh.history);
		sh.history = NULL;
	} else {
		close(fd);
		history_truncate_file(sh.history, HISTORY_MAX);
		read_history(sh.history);
	}
	free(dir);
}

static void history_add(const char *line)
{
	if (!*line)
		return;
	HIST_ENTRY *prev = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
	if (prev && !strcmp(prev->line, line))
		return;
	add_history(line);
	/* Appended at once: a second shell, or a crash, keeps it. */
	if (sh.history)
		append_history(1, sh.history);
}

/* The prompt: "stackdump 4242 orderd> ", the name escaped. */
static char *make_prompt(struct cmd_ctx *ctx)
{
	struct cmd_session *s = ctx->session;
	int color = shell_color_wanted(s);
	/* \001 and \002 tell readline the escapes take no room. */
	const char *bold = color ? "\001\033[1m\002" : "";
	const char *cyan = color ? "\001\033[36m\002" : "";
	const char *reset = color ? "\001\033[0m\002" : "";
	struct strbuf sb;
	strbuf_init(&sb);
	strbuf_addf(&sb, "%sstackdump%s", bold, reset);
	if (s->loaded) {
		const char *p = s->loaded_path ? s->loaded_path : "snapshot";
		const char *b = strrchr(p, '/');
		strbuf_addf(&sb, " %s", cyan);
		strbuf_add_escaped(&sb, b ? b + 1 : p);
		strbuf_adds(&sb, reset);
	} else if (s->ntargets) {
		const struct sd_target *t = s->targets[s->current];
		strbuf_addf(&sb, " %s%d ", cyan, (int)t->pid);
		strbuf_add_escaped(&sb, t->info.comm);
		strbuf_adds(&sb, reset);
		if (s->ntargets > 1)
			strbuf_addf(&sb, " (%zu/%zu)", s->current + 1, s->ntargets);
	}
	strbuf_adds(&sb, "> ");
	return strbuf_detach(&sb);
}

/* Print MSG above the prompt while the user may be typing. */
static void print_above_prompt(struct cmd_ctx *ctx, const char *msg)
{
	char *saved = rl_copy_text(0, rl_end);
	int point = rl_point;
	rl_set_prompt("");
	rl_replace_line("", 0);
	rl_redisplay();
	fputs(msg, ctx->err);
	fflush(ctx->err);
	char *prompt = make_prompt(ctx);
	rl_set_prompt(prompt);
	free(prompt);
	rl_replace_line(saved, 0);
	rl_point = point;
	rl_redisplay();
	free(saved);
}

static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

/* Keep one pidfd per target in the poll set, so the shell notices a target
 * exiting while it waits for input. Returns 0 when every target has one. */
static int sync_pidfds(struct cmd_session *s)
{
	int missing = 0;
	/* Close those of targets that are gone. */
	for (size_t i = 1; i < sh.nfds;) {
		if (shell_target_index(s, sh.fd_pid[i]) >= 0) {
			i++;
			continue;
		}
		close(sh.fds[i].fd);
		sh.fds[i] = sh.fds[sh.nfds - 1];
		sh.fd_pid[i] = sh.fd_pid[sh.nfds - 1];
		sh.nfds--;
	}
	for (size_t t = 0; t < s->ntargets; t++) {
		pid_t pid = s->targets[t]->pid;
		int have = 0;
		for (size_t i = 1; i < sh.nfds; i++)
			have |= sh.fd_pid[i] == pid;
		if (have)
			continue;
		int fd = sh.nfds < sizeof(sh.fds) / sizeof(sh.fds[0]) ? open_pidfd(pid) : -1;
		if (fd < 0) {
			missing = 1;
			continue;
		}
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		sh.fds[sh.nfds] = (struct pollfd){.fd = fd, .events = POLLIN};
		sh.fd_pid[sh.nfds] = pid;
		sh.nfds++;
	}
	return missing ? -1 : 0;
}

static void close_pidfds(void)
{
	for (size_t i = 1; i < sh.nfds; i++)
		close(sh.fds[i].fd);
	sh.nfds = 1;
}

/* A target exited while we were at the prompt. */
static void notice_exits(struct cmd_ctx *ctx)
{
	struct cmd_session *s = ctx->session;
	size_t before = s->ntargets;
	struct strbuf msg;
	strbuf_init(&msg);
	for (size_t i = s->ntargets; i-- > 0;) {
		if (target_alive(s->targets[i]))
			continue;
		strbuf_adds(&msg, "stackdump: process ");
		shell_target_label(&msg, s->targets[i]);
		strbuf_adds(&msg, " exited (detached)\n");
		shell_target_remove(s, i);
	}
	if (s->ntargets != before)
		print_above_prompt(ctx, msg.buf);
	strbuf_release(&msg);
}

static void install_prompt(struct cmd_ctx *ctx)
{
	char *prompt = make_prompt(ctx);
	rl_callback_handler_install(prompt, on_line);
	free(prompt);
}

/* Ctrl-C at the prompt: drop the line, show a fresh prompt. */
static void cancel_line(void)
{
	rl_echo_signal_char(SIGINT);
	rl_callback_sigcleanup();
	rl_free_line_state();
	rl_replace_line("", 0);
	rl_crlf();
	rl_on_new_line();
	rl_redisplay();
}

static int interactive(struct cmd_ctx *ctx)
{
	struct cmd_session *s = ctx->session;
	int rc = last_rc;
	memset(&sh, 0, sizeof(sh));
	sh.ctx = ctx;
	history_open();
	repl_complete_init(ctx);
	rl_readline_name = "stackdump";
	/* Our handlers, not readline's: SIGINT must reach us while we wait
	 * in poll() and while a command runs. */
	rl_catch_signals = 0;
	rl_catch_sigwinch = 0;
	struct sigaction wa, old_winch;
	memset(&wa, 0, sizeof(wa));
	wa.sa_handler = on_winch;
	sigemptyset(&wa.sa_mask);
	sigaction(SIGWINCH, &wa, &old_winch);
	rl_outstream = stdout;
	sh.fds[0] = (struct pollfd){.fd = STDIN_FILENO, .events = POLLIN};
	sh.nfds = 1;
	/* SIGINT, SIGTERM and SIGHUP are blocked except inside ppoll() and
	 * while a command runs: a Ctrl-C that lands just before we wait
	 * cannot be missed. */
	sigset_t block, waitmask;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &waitmask);
	sigdelset(&waitmask, SIGINT);
	sigdelset(&waitmask, SIGTERM);
	sigdelset(&waitmask, SIGHUP);
	/* The first thing a newcomer needs: where the help is. */
	cmd_print(ctx, "type 'help' for the commands, 'help COMMAND' for one; Tab completes, "
		       "Ctrl-D quits\n");
	install_prompt(ctx);
	while (!s->quit) {
		int no_pidfd = sync_pidfds(s) < 0;
		size_t stragglers = ptrace_reap_stragglers();
		/* Without a pidfd, or with threads still to detach, look again
		 * now and then. */
		struct timespec ts = {0, 100 * 1000000L};
		if (!stragglers && no_pidfd)
			ts = (struct timespec){1, 0};
		int n = cmd_interrupted ? -1
					: ppoll(sh.fds, sh.nfds, stragglers || no_pidfd ? &ts : NULL,
						&waitmask);
		if (n < 0 && errno != EINTR && !cmd_interrupted) {
			cmd_error(ctx, "cannot read the terminal: %s", sd_strerror(errno));
			rc = EXIT_FAIL;
			break;
		}
		if (repl_winch) {
			repl_winch = 0;
			rl_resize_terminal();
		}
		if (cmd_interrupted) {
			int sig = repl_signal;
			cmd_interrupted = 0;
			repl_signal = 0;
			if (sig == SIGTERM || sig == SIGHUP) {
				rl_crlf();
				rc = EXIT_INTERRUPTED;
				break; /* leave, detaching */
			}
			cancel_line();
			continue;
		}
		if (n <= 0) {
			if (no_pidfd && s->ntargets)
				notice_exits(ctx);
			continue;
		}
		for (size_t i = 1; i < sh.nfds; i++)
			if (sh.fds[i].revents) {
				notice_exits(ctx);
				break;
			}
		if (sh.fds[0].revents & (POLLIN | POLLHUP | POLLERR))
			rl_callback_read_char();
		if (sh.got_eof) {
			/* Ctrl-D: a newline after the prompt, and out. */
			fputs("\n", rl_outstream);
			break;
		}
		if (!sh.got_line)
			continue;
		/* The handler is removed: the terminal is back to normal while
		 * the command runs, so Ctrl-C reaches us as SIGINT. */
		char *line = sh.line;
		sh.line = NULL;
		sh.got_line = 0;
		const char *p = line + strspn(line, " \t");
		history_add(p);
		cmd_interrupted = 0;
		repl_signal = 0;
		sigprocmask(SIG_UNBLOCK, &block, NULL);
		if (*p)
			rc = repl_run_line(ctx, p);
		sigprocmask(SIG_BLOCK, &block, NULL);
		free(line);
		int sig = repl_signal;
		cmd_interrupted = 0;
		repl_signal = 0;
		if (sig == SIGTERM || sig == SIGHUP) {
			rc = EXIT_INTERRUPTED;
			break;
		}
		if (sig == SIGINT)
			fputs("\n", ctx->out); /* after the terminal's "^C" */
		between_commands(ctx);
		if (!s->quit)
			install_prompt(ctx);
	}
	sigprocmask(SIG_UNBLOCK, &block, NULL);
	sigaction(SIGWINCH, &old_winch, NULL);
	rl_callback_handler_remove();
	close_pidfds();
	free(sh.history);
	sh.history = NULL;
	return rc;
}

/* Wait for the next line of IN while threads that did not stop in time
 * are still ours: each is detached the moment it stops, not when the next
 * line happens to come. (glibc's FILE: buffered bytes mean a line is
 * there already.) */
static void await_line(FILE *in)
{
	while (!cmd_interrupted && ptrace_reap_stragglers() &&
	       in->_IO_read_ptr >= in->_IO_read_end) {
		struct pollfd pfd = {fileno(in), POLLIN, 0};
		if (poll(&pfd, 1, 100) != 0)
			break;
	}
}

int repl_run_stream(struct cmd_ctx *ctx, FILE *in, int rc)
{
	char *line = NULL;
	size_t cap = 0;
	while (!ctx->session->quit && !cmd_interrupted && (await_line(in), 1) &&
	       getline(&line, &cap, in) >= 0) {
		line[strcspn(line, "\r\n")] = '\0';
		const char *p = line + strspn(line, " \t");
		if (!*p || *p == '#')
			continue;
		rc = repl_run_line(ctx, p);
	}
	free(line);
	/* Ctrl-C or SIGTERM stops a script (130), whatever ran last. */
	if (cmd_interrupted)
		rc = EXIT_INTERRUPTED;
	return rc;
}

int repl_main(struct cmd_ctx *ctx, const char *target)
{
	struct cmd_session *s = ctx->session;
	ctx->in_shell = 1;
	last_rc = EXIT_OK;
	s->interactive = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	struct sigaction sa, old_int, old_term, old_hup;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);

	int rc = EXIT_OK;
	if (target)
		rc = attach_first(ctx, target);
	if (!target || rc == EXIT_OK || s->interactive)
		rc = s->interactive ? interactive(ctx) : repl_run_stream(ctx, stdin, last_rc);
	/* Ctrl-D, quit, the end of a script or a signal: drop every target.
	 * None is traced between commands, so none is left stopped. */
	ptrace_reap_stragglers();
	while (s->ntargets)
		shell_target_remove(s, s->ntargets - 1);

	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	return rc;
}
