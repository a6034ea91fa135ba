// SPDX-License-Identifier: MIT
// Splitting a shell line into words, for running it (repl.c) and for
// completing it (repl-complete.c): quotes and backslashes as in a POSIX
// shell, no expansion (repl.h).
#include "repl.h"

#include <stdlib.h>

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
