// SPDX-License-Identifier: MIT
// Interned strings in a set over the hash map: entries are the pool's
// copies.
#include "strpool.h"

#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "util.h"

struct strpool {
	struct hashmap set; /* of char *, each a heap copy */
};

/* A string looked up: N bytes at S, not necessarily NUL-terminated. */
struct strkey {
	const char *s;
	size_t n;
};

static int str_eq(const void *entry, const void *key)
{
	const char *e = *(char *const *)entry;
	const struct strkey *k = key;
	return strlen(e) == k->n && !memcmp(e, k->s, k->n);
}

struct strpool *strpool_new(void)
{
	struct strpool *sp = sd_xcalloc(1, sizeof(*sp));
	hashmap_init(&sp->set, sizeof(char *));
	return sp;
}

void strpool_free(struct strpool *sp)
{
	if (!sp)
		return;
	size_t pos = 0;
	for (char **s; (s = hashmap_next(&sp->set, &pos));)
		free(*s);
	hashmap_release(&sp->set);
	free(sp);
}

const char *strpool_intern_n(struct strpool *sp, const char *s, size_t n)
{
	if (!s)
		return NULL;
	struct strkey k = {s, n};
	int found;
	char **slot = hashmap_put(&sp->set, sd_hash(s, n, 0), &k, str_eq, &found);
	if (!found) {
		char *c = sd_xmalloc(n + 1);
		memcpy(c, s, n);
		c[n] = '\0';
		*slot = c;
	}
	return *slot;
}

const char *strpool_intern(struct strpool *sp, const char *s)
{
	return s ? strpool_intern_n(sp, s, strlen(s)) : NULL;
}
