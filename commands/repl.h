// SPDX-License-Identifier: MIT
// The interactive shell: a readline prompt over the command table, scripts
// on stdin, `-c 'cmd; cmd'`, and what is generated from the table (shell
// completion scripts, the man page, the JSON list of commands).
#ifndef SD_REPL_H
#define SD_REPL_H

#include <stdio.h>

#include "cmd.h"

/* Run the shell: readline on a TTY, else commands from stdin. TARGET (may
 * be NULL) is attached first. Returns the last command's exit status (130
 * when a script was interrupted). Every target is dropped on return. */
int repl_main(struct cmd_ctx *ctx, const char *target);

/* Run the ';'-separated commands of SCRIPT, attaching TARGET (may be NULL)
 * first. Returns the last command's exit status; when the attach fails,
 * its status and nothing else runs. */
int repl_run_string(struct cmd_ctx *ctx, const char *script, const char *target);

/* Run the lines of IN (blank lines and '#' comments skipped) until its end,
 * `quit`, or an interrupt (then 130). RC is the status if no line runs;
 * returns the last command's status. */
int repl_run_stream(struct cmd_ctx *ctx, FILE *in, int rc);

/* Run one line: ';'-separated commands, `!CMD` (the rest of the line goes
 * to /bin/sh), `#` comments. Stops after `quit` or an interrupted command.
 * Returns the last command's exit status. */
int repl_run_line(struct cmd_ctx *ctx, const char *line);

/* Split LINE into words (repl-words.c; quotes and backslashes as in a
 * POSIX shell, no expansion). Returns the count, or -1 on an unterminated quote; *ARGV is
 * a heap array of heap strings, free with repl_free_words(). */
int repl_split(const char *line, char ***argv);
void repl_free_words(int argc, char **argv);

/* Where the shell keeps its history: $XDG_STATE_HOME/stackdump/history,
 * or ~/.local/state/stackdump/history. Heap string; NULL without a home. */
char *repl_history_path(void);

/* Readline completion (repl-complete.c): install it for the session of
 * CTX, which must outlive the shell. */
void repl_complete_init(struct cmd_ctx *ctx);

/* Generated from the table (docgen.c). Each writes through CTX and
 * returns an exit status. */
/* The completion script for SHELL: bash, zsh or fish. */
int repl_completion_script(struct cmd_ctx *ctx, const char *shell);
/* The man page stackdump(1) in roff. */
int repl_man_page(struct cmd_ctx *ctx);
/* The table as JSON (names, aliases, flags, options), for tests. */
int repl_list_commands(struct cmd_ctx *ctx);

#endif
