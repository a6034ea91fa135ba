// SPDX-License-Identifier: MIT
// The hash map (hashmap.h): linear probing over a power-of-two table kept
// at most half full, with each slot's hash kept beside it so that growing
// needs no rehashing by the caller and most mismatches cost no EQ call.
#include "hashmap.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* First table: small maps (a snapshot's few hundred names) stay small. */
#define HASHMAP_MIN_CAP 16

void hashmap_init(struct hashmap *m, size_t esize, hashmap_eq_fn eq, void *arg)
{
	memset(m, 0, sizeof(*m));
	m->esize = esize;
	m->eq = eq;
	m->arg = arg;
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

/* 0 marks an empty slot: a hash of 0 is stored as 1. */
static uint64_t stored(uint64_t hash)
{
	return hash ? hash : 1;
}

/* The first slot of HASH. Callers' hashes are FNV-1a, whose low bits mix
 * poorly (and pointers' low bits are zero): the top bits of a Fibonacci
 * product depend on every bit of the hash. */
static size_t first_slot(const struct hashmap *m, uint64_t hash)
{
	return (size_t)((hash * 0x9e3779b97f4a7c15ull) >> m->shift);
}

static void *entry_at(const struct hashmap *m, size_t i)
{
	return m->entries + i * m->esize;
}

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
	for (size_t i = 0; i < old.cap; i++) {
		if (!old.hashes[i])
			continue;
		size_t s = first_slot(m, old.hashes[i]);
		while (m->hashes[s])
			s = (s + 1) & (m->cap - 1);
		m->hashes[s] = old.hashes[i];
		memcpy(entry_at(m, s), entry_at(&old, i), m->esize);
	}
	free(old.hashes);
	free(old.entries);
}

/* The slot of KEY, or the empty slot where it would go. */
static size_t probe(const struct hashmap *m, uint64_t h, const void *key)
{
	size_t s = first_slot(m, h);
	while (m->hashes[s]) {
		if (m->hashes[s] == h && m->eq(entry_at(m, s), key, m->arg))
			return s;
		s = (s + 1) & (m->cap - 1);
	}
	return s;
}

void *hashmap_find(const struct hashmap *m, uint64_t hash, const void *key)
{
	if (!m->n)
		return NULL;
	size_t s = probe(m, stored(hash), key);
	return m->hashes[s] ? entry_at(m, s) : NULL;
}

void *hashmap_put(struct hashmap *m, uint64_t hash, const void *key, int *found)
{
	uint64_t h = stored(hash);
	/* Grow before probing, so that the slot found is where the entry
	 * stays: at most half full keeps probe runs short. */
	if ((m->n + 1) * 2 > m->cap)
		resize(m, m->cap ? m->cap * 2 : HASHMAP_MIN_CAP);
	size_t s = probe(m, h, key);
	if (m->hashes[s]) {
		if (found)
			*found = 1;
		return entry_at(m, s);
	}
	m->hashes[s] = h;
	m->n++;
	if (found)
		*found = 0;
	return entry_at(m, s);
}

void *hashmap_next(const struct hashmap *m, size_t *pos)
{
	while (*pos < m->cap) {
		size_t i = (*pos)++;
		if (m->hashes[i])
			return entry_at(m, i);
	}
	return NULL;
}
