// SPDX-License-Identifier: MIT
// "did you mean": the command or option closest to a mistyped word.
#ifndef SD_SUGGEST_H
#define SD_SUGGEST_H

#include <stddef.h>

struct cmd_entry;

/* The word of CANDS (N of them, NULLs skipped) closest to WORD by edit
 * distance (a swap of two neighbours counts one), when it is close enough
 * to be a typo (at most 2 edits, and fewer than half of WORD's length);
 * else NULL. */
const char *suggest_word(const char *word, const char *const *cands, size_t n);
/* The command of the table closest to WORD (names and aliases), or NULL. */
const char *suggest_command(const char *word);
/* The long option of E closest to NAME (without its dashes), or NULL. */
const char *suggest_option(const struct cmd_entry *e, const char *name);
/* "unknown command: NAME (did you mean 'locks'?)", or "(try 'help')"
 * without a close one, into MSG (MSGSZ bytes). */
void suggest_unknown_command(char *msg, size_t msgsz, const char *name);

#endif
