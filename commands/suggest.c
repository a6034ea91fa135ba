// SPDX-License-Identifier: MIT
// "did you mean": the command or option closest to a mistyped word
// (suggest.h), by the edit distance with swaps of neighbours (lcoks).
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "suggest.h"

/* Longer words are never typos of ours. */
#define WORD_MAX 40

static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > WORD_MAX || lb > WORD_MAX)
		return (size_t)-1;
	size_t d[WORD_MAX + 1][WORD_MAX + 1];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			size_t v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < v)
				v = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[la][lb];
}

const char *suggest_word(const char *word, const char *const *cands, size_t n)
{
	const char *best = NULL;
	size_t bd = (size_t)-1, len = strlen(word);
	for (size_t i = 0; i < n; i++) {
		if (!cands[i])
			continue;
		size_t d = distance(word, cands[i]);
		if (d < bd) {
			bd = d;
			best = cands[i];
		}
	}
	if (!best || bd > 2 || bd * 2 >= len)
		return NULL;
	return best;
}

const char *suggest_command(const char *word)
{
	const char *c[2 * 64];
	size_t n = 0;
	for (size_t i = 0; i < cmd_table_len && n + 2 <= sizeof(c) / sizeof(c[0]); i++) {
		c[n++] = cmd_table[i]->name;
		c[n++] = cmd_table[i]->alias;
	}
	return suggest_word(word, c, n);
}

const char *suggest_option(const struct cmd_entry *e, const char *name)
{
	const char *c[128];
	size_t n = 0;
	for (int k = 0; e->options && e->options[k].name && n < sizeof(c) / sizeof(c[0]); k++)
		c[n++] = e->options[k].name;
	return suggest_word(name, c, n);
}

void suggest_unknown_command(char *msg, size_t msgsz, const char *name)
{
	const char *s = suggest_command(name);
	snprintf(msg, msgsz, "unknown command: %s (%s%s%s)", name, s ? "did you mean '" : "try 'help'",
		 s ? s : "", s ? "'?" : "");
}
