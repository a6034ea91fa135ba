// SPDX-License-Identifier: MIT
// The one hash map of the engine: entries of a fixed size, stored in the
// map by value, found by a hash and an equality test that the caller gives
// (string pools, symbol and stack caches, renderers' indexes all use it).
#ifndef SD_HASHMAP_H
#define SD_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

/* Is ENTRY (in the map) the one KEY (as given to hashmap_find or
 * hashmap_put) stands for? Nonzero when it is. ARG is the map's. */
typedef int (*hashmap_eq_fn)(const void *entry, const void *key, void *arg);

/* An open-addressing map. The map owns its slots, not what entries point
 * to: whatever an entry holds (strings, arrays) is the caller's, to free
 * by iterating before hashmap_release. Fields are private. */
struct hashmap {
	size_t esize;		/* bytes per entry */
	size_t cap, n;		/* slots (0 or a power of two), entries */
	unsigned shift;		/* 64 - log2(cap): a hash's first slot */
	uint64_t *hashes;	/* per slot: its entry's hash, 0 when empty */
	unsigned char *entries; /* cap entries of esize bytes */
	hashmap_eq_fn eq;
	void *arg;
};

/* An empty map of entries of ESIZE bytes (sizeof the caller's struct),
 * compared by EQ with ARG. Nothing is allocated before the first put. */
void hashmap_init(struct hashmap *m, size_t esize, hashmap_eq_fn eq, void *arg);
/* Free the slots; M is left empty and may be used again. Entries' own
 * memory is not touched. */
void hashmap_release(struct hashmap *m);

/* The entry for KEY with hash HASH, or NULL. The pointer is valid until
 * the next hashmap_put. EQ is called only on entries of the same hash. */
void *hashmap_find(const struct hashmap *m, uint64_t hash, const void *key);

/* Lookup or insert: the entry for KEY with hash HASH; when there is none,
 * a new one, zero-filled, and *FOUND (may be NULL) is 0 (else 1). The
 * caller fills a new entry so that EQ holds for KEY before the map is used
 * again. The pointer is valid until the next hashmap_put (the map may
 * grow, moving every entry). */
void *hashmap_put(struct hashmap *m, uint64_t hash, const void *key, int *found);

/* Entries in the map. */
static inline size_t hashmap_count(const struct hashmap *m)
{
	return m->n;
}

/* Iteration, in no particular order: start with *POS = 0; each call gives
 * the next entry, NULL after the last. Entries may be changed in place
 * (not what EQ compares); nothing may be put meanwhile. */
void *hashmap_next(const struct hashmap *m, size_t *pos);

#endif
