// SPDX-License-Identifier: MIT
// Interned strings in an open-addressing hash set.
#include "strpool.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

struct strpool {
	char **slots;
	size_t cap, n;
};

struct strpool *strpool_new(void)
{
	struct strpool *sp = sd_xcalloc(1, sizeof(*sp));
	sp->cap = 256;
	sp->slots = sd_xcalloc(sp->cap, sizeof(char *));
	return sp;
}

void strpool_free(struct strpool *sp)
{
	if (!sp)
		return;
	for (size_t i = 0; i < sp->cap; i++)
		free(sp->slots[i]);
	free(sp->slots);
	free(sp);
}

static void rehash(struct strpool *sp)
{
	size_t ncap = sp->cap * 2;
	char **ns = sd_xcalloc(ncap, sizeof(char *));
	for (size_t i = 0; i < sp->cap; i++) {
		char *s = sp->slots[i];
		if (!s)
			continue;
		size_t h = sd_hash(s, strlen(s), 0) & (ncap - 1);
		while (ns[h])
			h = (h + 1) & (ncap - 1);
		ns[h] = s;
	}
	free(sp->slots);
	sp->slots = ns;
	sp->cap = ncap;
}

const char *strpool_intern_n(struct strpool *sp, const char *s, size_t n)
{
	if (!s)
		return NULL;
	if ((sp->n + 1) * 2 > sp->cap)
		rehash(sp);
	size_t h = sd_hash(s, n, 0) & (sp->cap - 1);
	while (sp->slots[h]) {
		if (strlen(sp->slots[h]) == n && !memcmp(sp->slots[h], s, n))
			return sp->slots[h];
		h = (h + 1) & (sp->cap - 1);
	}
	char *c = sd_xmalloc(n + 1);
	memcpy(c, s, n);
	c[n] = '\0';
	sp->slots[h] = c;
	sp->n++;
	return c;
}

const char *strpool_intern(struct strpool *sp, const char *s)
{
	return s ? strpool_intern_n(sp, s, strlen(s)) : NULL;
}
