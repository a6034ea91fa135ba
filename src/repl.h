// SPDX-License-Identifier: MIT
// The interactive shell: a readline prompt over the command table, scripts
// on stdin, `-c 'cmd; cmd'`, and the shell completion scripts.
#ifndef SD_REPL_H
#define SD_REPL_H

#include "../commands/cmd.h"

/* Run the shell: readline on a TTY, else commands from stdin. TARGET (may
 * be NULL) is attached first. Returns the last command's exit status. */
int repl_main(struct cmd_ctx *ctx, const char *target);

/* Run the ';'-separated commands of SCRIPT, attaching TARGET first. */
int repl_run_string(struct cmd_ctx *ctx, const char *script, const char *target);

/* Run one line (may hold ';'-separated commands). */
int repl_run_line(struct cmd_ctx *ctx, const char *line);

/* Split LINE into words (quotes and backslashes as in a POSIX shell, no
 * expansion). Returns the count, or -1 on an unterminated quote; *ARGV is
 * a heap array of heap strings, free with repl_free_words(). */
int repl_split(const char *line, char ***argv);
void repl_free_words(int argc, char **argv);

/* Print the completion script for SHELL (bash, zsh, fish). */
int repl_completion_script(struct cmd_ctx *ctx, const char *shell);

#endif
