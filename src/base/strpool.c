// SPDX-License-Identifier: MIT
// Interned strings in a set over the hash map: entries are the pool's
// copies, with their lengths.
#include "strpool.h"

#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "util.h"

struct strpool {
	struct hashmap set; /* of struct pooled */
};

/* A string of the pool: a heap copy of N bytes and a NUL. */
struct pooled {
	char *s;
	size_t n;
};

/* A string looked up: N bytes at S, not necessarily NUL-terminated. The
 * length kept with each copy spares a strlen per lookup: interning is on
 * the path of every frame symbolized. */
static int str_eq(const void *entry, const void *key)
{
	const struct pooled *e = entry, *k = key;
	return e->n == k->n && !memcmp(e->s, k->s, k->n);
}

struct strpool *strpool_new(void)
{
	struct strpool *sp = sd_xcalloc(1, sizeof(*sp));
	hashmap_init(&sp->set, sizeof(struct pooled));
	hashmap_reserve(&sp->set, 128); /* a snapshot's names, without regrowing */
	return sp;
}

void strpool_free(struct strpool *sp)
{
	if (!sp)
		return;
	size_t pos = 0;
	for (struct pooled *p; (p = hashmap_next(&sp->set, &pos));)
		free(p->s);
	hashmap_release(&sp->set);
	free(sp);
}

const char *strpool_intern_n(struct strpool *sp, const char *s, size_t n)
{
	if (!s)
		return NULL;
	struct pooled k = {(char *)s, n};
	int found;
	struct pooled *p = hashmap_put(&sp->set, sd_hash(s, n, 0), &k, str_eq, &found);
	if (!found) {
		p->s = sd_xmalloc(n + 1);
		memcpy(p->s, s, n);
		p->s[n] = '\0';
		p->n = n;
	}
	return p->s;
}

const char *strpool_intern(struct strpool *sp, const char *s)
{
	return s ? strpool_intern_n(sp, s, strlen(s)) : NULL;
}
