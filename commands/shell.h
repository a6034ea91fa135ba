// SPDX-License-Identifier: MIT
// What the shell commands (attach, detach, targets, use, threads, set, show)
// share with each other and with the shell in commands/repl.c: the list of
// attached targets and the settings of set/show.
#ifndef SD_SHELL_H
#define SD_SHELL_H

#include "cmd.h"

/* Targets of the session (commands/session.c). Indexes are 0-based here;
 * users see N+1. */

/* Index of the attached target with PID, or -1. */
int shell_target_index(const struct cmd_session *s, pid_t pid);
/* Add T (ownership passes to the session) and return its index. */
size_t shell_target_add(struct cmd_session *s, struct sd_target *t);
/* Free target I and drop it from the list; the current target stays the
 * same one when it was another, else becomes the first. */
void shell_target_remove(struct cmd_session *s, size_t i);
/* Close the loaded snapshot (session->loaded), saying so. While one is
 * open, commands that look at a process (dump, threads, locks) look at it
 * instead; attach and detach close it. */
void shell_close_loaded(struct cmd_ctx *ctx);
/* Append `4242 "orderd"` for T, the name escaped. */
void shell_target_label(struct strbuf *sb, const struct sd_target *t);

/* Settings (set/show). */
struct shell_setting {
	const char *name;
	const char *values;   /* completion: "on off", or NULL for free text */
	const char *help;
};
/* Terminated by {0}. */
extern const struct shell_setting shell_settings[];

/* Set NAME to VALUE in CTX's session; prints an error and returns
 * EXIT_USAGE on a bad name or value. */
int shell_setting_set(struct cmd_ctx *ctx, const char *name, const char *value);
/* Print one setting ("format  text  (output format: ...)"), or all when
 * NAME is NULL. Returns EXIT_USAGE for an unknown NAME. */
int shell_setting_show(struct cmd_ctx *ctx, const char *name);

/* The colour the session's settings ask for: 1 or 0 (auto: a terminal on
 * stdout and no NO_COLOR). */
int shell_color_wanted(const struct cmd_session *s);

#endif
