// SPDX-License-Identifier: MIT
// The hash map (hashmap.h): what is not on the lookup path, which the
// header keeps inline: setting up, growing, iterating and freeing.
#include "hashmap.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* First table: small maps (a snapshot's few hundred names) stay small. */
#define HASHMAP_MIN_CAP 16

void hashmap_init(struct hashmap *m, size_t esize)
{
	memset(m, 0, sizeof(*m));
	m->esize = esize;
}

void hashmap_release(struct hashmap *m)
{
	free(m->hashes);
	free(m->entries);
	m->hashes = NULL;
	m->entries = NULL;
	m->cap = m->n = 0;
	m->shift = 0;
}

/* Move every entry into a table of at least NCAP slots. */
static void resize(struct hashmap *m, size_t ncap)
{
	struct hashmap old = *m;
	unsigned bits = 0;
	while (((size_t)1 << bits) < ncap)
		bits++;
	m->cap = (size_t)1 << bits;
	m->shift = 64 - bits;
	m->hashes = sd_xcalloc(m->cap, sizeof(*m->hashes));
	m->entries = sd_xcalloc(m->cap, m->esize);
	/* Entries move by their kept hash: no EQ is needed, every one is
	 * distinct. */
	for (size_t i = 0; i < old.cap; i++) {
		uint64_t h = old.hashes[i];
		if (!h)
			continue;
		size_t s = hashmap_first(m, h);
		while (m->hashes[s])
			s = (s + 1) & (m->cap - 1);
		m->hashes[s] = h;
		memcpy(m->entries + s * m->esize, old.entries + i * old.esize, m->esize);
	}
	free(old.hashes);
	free(old.entries);
}

void hashmap_grow(struct hashmap *m)
{
	resize(m, m->cap ? m->cap * 2 : HASHMAP_MIN_CAP);
}

void hashmap_reserve(struct hashmap *m, size_t n)
{
	if (n * 2 > m->cap)
		resize(m, n * 2 < HASHMAP_MIN_CAP ? HASHMAP_MIN_CAP : n * 2);
}

void *hashmap_next(const struct hashmap *m, size_t *pos)
{
	while (*pos < m->cap) {
		size_t i = (*pos)++;
		if (m->hashes[i])
			return m->entries + i * m->esize;
	}
	return NULL;
}
