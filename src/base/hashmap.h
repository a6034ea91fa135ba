// SPDX-License-Identifier: MIT
// The one hash map of the engine: entries of a fixed size, stored in the
// map by value, found by a hash and an equality test that the caller gives
// (string pools, symbol and stack caches, renderers' indexes all use it).
#ifndef SD_HASHMAP_H
#define SD_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

/* Is ENTRY (in the map) the one KEY (as given to hashmap_find or
 * hashmap_put) stands for? Nonzero when it is. A key may carry whatever
 * the test needs besides the entry (a table the entry indexes). */
typedef int (*hashmap_eq_fn)(const void *entry, const void *key);

/* An open-addressing map: linear probing over a power-of-two table kept at
 * most half full, each slot's hash kept beside it (growing needs no help
 * from the caller, and most mismatches cost no EQ call). The map owns its
 * slots, not what entries point to: whatever an entry holds (strings,
 * arrays) is the caller's, to free by iterating before hashmap_release.
 * Fields are private. */
struct hashmap {
	size_t esize;		/* bytes per entry */
	size_t cap, n;		/* slots (0 or a power of two), entries */
	unsigned shift;		/* 64 - log2(cap): a hash's first slot */
	uint64_t *hashes;	/* per slot: its entry's hash, 0 when empty */
	unsigned char *entries; /* cap entries of esize bytes */
};

/* An empty map of entries of ESIZE bytes (sizeof the caller's struct).
 * Nothing is allocated before the first put. */
void hashmap_init(struct hashmap *m, size_t esize);
/* Free the slots; M is left empty and may be used again. Entries' own
 * memory is not touched. */
void hashmap_release(struct hashmap *m);
/* Make room for N entries in all without growing (a map that will hold
 * hundreds skips the small tables). */
void hashmap_reserve(struct hashmap *m, size_t n);

/* Iteration, in no particular order: start with *POS = 0; each call gives
 * the next entry, NULL after the last. Entries may be changed in place
 * (not what EQ compares); nothing may be put meanwhile. */
void *hashmap_next(const struct hashmap *m, size_t *pos);

/* Entries in the map. */
static inline size_t hashmap_count(const struct hashmap *m)
{
	return m->n;
}

/* Double the table (for hashmap_put; not for callers). */
void hashmap_grow(struct hashmap *m);

/* The first slot of hash H (for the lookups; not for callers). The top
 * bits of a Fibonacci product depend on every bit of the hash (FNV-1a's
 * low bits mix poorly, and pointers' are zero). */
static inline size_t hashmap_first(const struct hashmap *m, uint64_t h)
{
	return (size_t)((h * 0x9e3779b97f4a7c15ull) >> m->shift);
}

/* The slot of KEY (hash H, never 0), or the empty slot where it would
 * go (for the lookups; not for callers). */
static inline size_t hashmap_probe(const struct hashmap *m, uint64_t h, const void *key,
				   hashmap_eq_fn eq)
{
	size_t s = hashmap_first(m, h);
	while (m->hashes[s]) {
		if (m->hashes[s] == h && eq(m->entries + s * m->esize, key))
			return s;
		s = (s + 1) & (m->cap - 1);
	}
	return s;
}

/* The lookups are inline so that EQ, a constant where they are called,
 * is inlined too: string pools and stack caches call them per frame. */

/* The entry for KEY with hash HASH, or NULL. The pointer is valid until
 * the next hashmap_put. EQ is called only on entries of the same hash. */
static inline void *hashmap_find(const struct hashmap *m, uint64_t hash, const void *key,
				 hashmap_eq_fn eq)
{
	if (!m->n)
		return NULL;
	size_t s = hashmap_probe(m, hash ? hash : 1, key, eq);
	return m->hashes[s] ? m->entries + s * m->esize : NULL;
}

/* Lookup or insert: the entry for KEY with hash HASH; when there is none,
 * a new one, zero-filled, and *FOUND (may be NULL) is 0 (else 1). The
 * caller fills a new entry so that EQ holds for KEY before the map is used
 * again. The pointer is valid until the next hashmap_put (the map may
 * grow, moving every entry). */
static inline void *hashmap_put(struct hashmap *m, uint64_t hash, const void *key, hashmap_eq_fn eq,
				int *found)
{
	uint64_t h = hash ? hash : 1; /* 0 marks an empty slot */
	/* Grow before probing, so that the slot found is where the entry
	 * stays: at most half full keeps probe runs short. */
	if ((m->n + 1) * 2 > m->cap)
		hashmap_grow(m);
	size_t s = hashmap_probe(m, h, key, eq);
	if (found)
		*found = m->hashes[s] != 0;
	if (!m->hashes[s]) {
		m->hashes[s] = h;
		m->n++;
	}
	return m->entries + s * m->esize;
}

#endif
