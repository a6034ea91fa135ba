// SPDX-License-Identifier: MIT
// The interactive shell over the command table.
#include "repl.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int repl_split(const char *line, char ***argvp)
{
	char **v = NULL;
	size_t n = 0, cap = 0;
	const char *p = line;
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
			p++;
		if (!*p)
			break;
		struct strbuf w;
		strbuf_init(&w);
		strbuf_add(&w, "", 0);
		char q = 0;
		while (*p) {
			char c = *p;
			if (q) {
				if (c == q) {
					q = 0;
					p++;
					continue;
				}
				if (q == '"' && c == '\\' && p[1]) {
					strbuf_add(&w, p + 1, 1);
					p += 2;
					continue;
				}
				strbuf_add(&w, p, 1);
				p++;
				continue;
			}
			if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
				break;
			if (c == '\'' || c == '"') {
				q = c;
				p++;
				continue;
			}
			if (c == '\\' && p[1]) {
				strbuf_add(&w, p + 1, 1);
				p += 2;
				continue;
			}
			strbuf_add(&w, p, 1);
			p++;
		}
		if (q) {
			strbuf_release(&w);
			repl_free_words((int)n, v);
			*argvp = NULL;
			return -1;
		}
		sd_grow(&v, &cap, n + 2, sizeof(*v));
		v[n++] = strbuf_detach(&w);
		v[n] = NULL;
	}
	if (!v)
		v = sd_xcalloc(1, sizeof(*v));
	*argvp = v;
	return (int)n;
}

void repl_free_words(int argc, char **argv)
{
	if (!argv)
		return;
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
}

static int run_words(struct cmd_ctx *ctx, int argc, char **argv)
{
	if (argc == 0)
		return EXIT_OK;
	char msg[256];
	const struct cmd_entry *e = cmd_find(argv[0], 0, msg, sizeof(msg));
	if (!e) {
		cmd_error(ctx, "%s", msg);
		return EXIT_USAGE;
	}
	if (e->flags & CMD_CLI_ONLY) {
		cmd_error(ctx, "%s: not available in the shell", e->name);
		return EXIT_USAGE;
	}
	return cmd_run(ctx, e, argc, argv);
}

int repl_run_line(struct cmd_ctx *ctx, const char *line)
{
	int rc = EXIT_OK;
	/* Split on ';' outside quotes. */
	struct strbuf cur;
	strbuf_init(&cur);
	char q = 0;
	for (const char *p = line;; p++) {
		char c = *p;
		if (c && q) {
			if (c == q)
				q = 0;
			strbuf_add(&cur, p, 1);
			continue;
		}
		if (c == '\'' || c == '"')
			q = c;
		if (c && c != ';') {
			strbuf_add(&cur, p, 1);
			continue;
		}
		char **argv;
		int argc = repl_split(cur.buf ? cur.buf : "", &argv);
		if (argc < 0) {
			cmd_error(ctx, "unterminated quote");
			rc = EXIT_USAGE;
		} else if (argc > 0) {
			rc = run_words(ctx, argc, argv);
		}
		repl_free_words(argc < 0 ? 0 : argc, argv);
		strbuf_release(&cur);
		if (!c || ctx->session->quit)
			break;
	}
	strbuf_release(&cur);
	return rc;
}

int repl_run_string(struct cmd_ctx *ctx, const char *script, const char *target)
{
	ctx->in_shell = 1;
	int rc = EXIT_OK;
	if (target) {
		struct strbuf sb;
		strbuf_init(&sb);
		strbuf_addf(&sb, "attach '%s'", target);
		rc = repl_run_line(ctx, sb.buf);
		strbuf_release(&sb);
		if (rc != EXIT_OK)
			return rc;
	}
	return repl_run_line(ctx, script);
}

int repl_main(struct cmd_ctx *ctx, const char *target)
{
	ctx->in_shell = 1;
	int rc = EXIT_OK;
	if (target) {
		rc = repl_run_string(ctx, "", target);
		if (rc != EXIT_OK)
			return rc;
	}
	char *line = NULL;
	size_t cap = 0;
	while (!ctx->session->quit && getline(&line, &cap, stdin) > 0) {
		line[strcspn(line, "\n")] = '\0';
		const char *p = line;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '#' || !*p)
			continue;
		rc = repl_run_line(ctx, p);
	}
	free(line);
	return rc;
}

int repl_completion_script(struct cmd_ctx *ctx, const char *shell)
{
	cmd_error(ctx, "--completion: unsupported shell '%s' (bash, zsh or fish)",
		  shell ? shell : "");
	return EXIT_USAGE;
}
