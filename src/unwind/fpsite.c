// SPDX-License-Identifier: MIT
// Frame-pointer offsets learned at call sites. A function built with frame
// pointers sets rbp once in its prologue (push rbp; mov rsp, rbp; then its
// fixed frame below), so at a given call in it, rbp - sp is the same every
// time the call is reached, unless the function grows its frame at run
// time (alloca, a variable-length array). Unwinds from real registers (a
// stop, a perf sample) see that offset at every frame-pointer frame; a
// sleeper read from /proc alone has only sp and pc, and its caller's rbp,
// which the leaf (libc's poll, futex...) never saved, is then its frame's
// sp plus the offset. A site seen with two offsets grows its frame at run
// time: it is never used, and such a thread is stopped for its registers.
#include "fpsite.h"

#include <string.h>

struct fpent {
	uint64_t ra;
	int64_t d;
	uint32_t seen;
	uint32_t varies;
};

static int fpent_eq(const void *entry, const void *key)
{
	return ((const struct fpent *)entry)->ra == *(const uint64_t *)key;
}

void fpsite_init(struct fpsites *t)
{
	memset(t, 0, sizeof(*t));
	hashmap_init(&t->map, sizeof(struct fpent));
}

void fpsite_release(struct fpsites *t)
{
	hashmap_release(&t->map);
}

void fpsite_clear(struct fpsites *t)
{
	hashmap_release(&t->map);
	hashmap_init(&t->map, sizeof(struct fpent));
}

void fpsite_learn(struct fpsites *t, uint64_t ra, int64_t d)
{
	struct fpent *e = hashmap_find(&t->map, ra, &ra, fpent_eq);
	if (!e) {
		if (hashmap_count(&t->map) >= FPSITE_CAP)
			return;
		int found;
		e = hashmap_put(&t->map, ra, &ra, fpent_eq, &found);
		e->ra = ra;
		e->d = d;
	} else if (e->d != d && !e->varies) {
		e->varies = 1;
		t->conflicts++;
	}
	if (e->seen < UINT32_MAX)
		e->seen++;
	t->learned++;
}

int fpsite_lookup(const struct fpsites *t, uint64_t ra, int64_t *d)
{
	const struct fpent *e = hashmap_find(&t->map, ra, &ra, fpent_eq);
	if (!e || e->varies || e->seen < FPSITE_MIN_SEEN)
		return 0;
	*d = e->d;
	return 1;
}
