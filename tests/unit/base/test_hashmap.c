// SPDX-License-Identifier: MIT
// Unit tests of the hash map (hashmap.c): many keys, every key colliding,
// growth keeping entries, iteration, keys of another type than entries.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hashmap.h"
#include "strpool.h"
#include "util.h"

struct kv {
	uint64_t key;
	uint64_t val;
};

static int kv_eq(const void *entry, const void *key)
{
	return ((const struct kv *)entry)->key == *(const uint64_t *)key;
}

static uint64_t key_hash(uint64_t k)
{
	return sd_hash(&k, sizeof(k), 0);
}

/* Insert keys 0..N-1 (value: key * 3 + 1) with HASH, then find each. */
static void fill_and_check(struct hashmap *m, size_t n, uint64_t (*hash)(uint64_t))
{
	for (uint64_t k = 0; k < n; k++) {
		int found = -1;
		struct kv *e = hashmap_put(m, hash(k), &k, kv_eq, &found);
		assert_int_equal(found, 0);
		assert_int_equal(e->key, 0); /* a new entry is zero-filled */
		assert_int_equal(e->val, 0);
		e->key = k;
		e->val = k * 3 + 1;
		assert_int_equal(hashmap_count(m), k + 1);
	}
	for (uint64_t k = 0; k < n; k++) {
		struct kv *e = hashmap_find(m, hash(k), &k, kv_eq);
		assert_non_null(e);
		assert_int_equal(e->key, k);
		assert_int_equal(e->val, k * 3 + 1);
	}
	for (uint64_t k = n; k < n + 100; k++)
		assert_null(hashmap_find(m, hash(k), &k, kv_eq));
}

static void test_many_keys(void **state)
{
	(void)state;
	struct hashmap m;
	hashmap_init(&m, sizeof(struct kv));
	fill_and_check(&m, 100000, key_hash);
	/* Putting a key again finds it, untouched, and adds nothing. */
	for (uint64_t k = 0; k < 100000; k += 7) {
		int found = 0;
		struct kv *e = hashmap_put(&m, key_hash(k), &k, kv_eq, &found);
		assert_int_equal(found, 1);
		assert_int_equal(e->val, k * 3 + 1);
	}
	assert_int_equal(hashmap_count(&m), 100000);
	hashmap_release(&m);
}

static uint64_t constant_zero(uint64_t k)
{
	(void)k;
	return 0;
}

static uint64_t constant_hash(uint64_t k)
{
	(void)k;
	return 0x1234567890abcdefull;
}

/* Two hashes only: half the keys collide with each other, and the two
 * probe runs meet. */
static uint64_t two_hashes(uint64_t k)
{
	return k & 1 ? 5 : 6;
}

static void test_collisions(void **state)
{
	(void)state;
	uint64_t (*hashes[])(uint64_t) = {constant_zero, constant_hash, two_hashes};
	for (size_t i = 0; i < sizeof(hashes) / sizeof(hashes[0]); i++) {
		struct hashmap m;
		hashmap_init(&m, sizeof(struct kv));
		fill_and_check(&m, 2000, hashes[i]);
		assert_int_equal(hashmap_count(&m), 2000);
		hashmap_release(&m);
	}
}

static void test_growth_keeps_entries(void **state)
{
	(void)state;
	struct hashmap m;
	hashmap_init(&m, sizeof(struct kv));
	assert_int_equal(m.cap, 0); /* nothing before the first put */
	size_t grew = 0, last = 0;
	for (uint64_t k = 0; k < 5000; k++) {
		struct kv *e = hashmap_put(&m, key_hash(k), &k, kv_eq, NULL);
		e->key = k;
		e->val = ~k;
		if (m.cap != last) {
			grew++;
			last = m.cap;
		}
		/* At most half full, a power of two. */
		assert_true(hashmap_count(&m) * 2 <= m.cap);
		assert_int_equal(m.cap & (m.cap - 1), 0);
		/* Every key put so far survives each growth. */
		if (m.cap == hashmap_count(&m) * 2 || k % 997 == 0)
			for (uint64_t j = 0; j <= k; j++) {
				struct kv *x = hashmap_find(&m, key_hash(j), &j, kv_eq);
				assert_non_null(x);
				assert_int_equal(x->val, ~j);
			}
	}
	assert_true(grew >= 9); /* 16 .. 16384 */
	/* Released, the map is empty and usable again. */
	hashmap_release(&m);
	uint64_t k = 3;
	assert_null(hashmap_find(&m, key_hash(k), &k, kv_eq));
	size_t pos = 0;
	assert_null(hashmap_next(&m, &pos));
	fill_and_check(&m, 100, key_hash);
	hashmap_release(&m);
	/* Reserved, a map takes that many entries (and up to half its table)
	 * without growing. */
	hashmap_reserve(&m, 1000);
	size_t reserved = m.cap;
	assert_true(reserved >= 2000);
	fill_and_check(&m, reserved / 2, key_hash);
	assert_int_equal(m.cap, reserved);
	uint64_t more = reserved / 2;
	hashmap_put(&m, key_hash(more), &more, kv_eq, NULL);
	assert_true(m.cap > reserved);
	hashmap_release(&m);
}

static void test_iteration(void **state)
{
	(void)state;
	struct hashmap m;
	hashmap_init(&m, sizeof(struct kv));
	size_t pos = 0;
	assert_null(hashmap_next(&m, &pos));
	const size_t n = 3000;
	fill_and_check(&m, n, two_hashes);
	unsigned char *seen = calloc(n, 1);
	size_t count = 0;
	pos = 0;
	for (struct kv *e; (e = hashmap_next(&m, &pos));) {
		assert_true(e->key < n);
		assert_int_equal(seen[e->key], 0); /* each entry once */
		seen[e->key] = 1;
		e->val = 7; /* changed in place */
		count++;
	}
	assert_int_equal(count, n);
	assert_int_equal(count, hashmap_count(&m));
	for (uint64_t k = 0; k < n; k++) {
		assert_int_equal(seen[k], 1);
		struct kv *e = hashmap_find(&m, two_hashes(k), &k, kv_eq);
		assert_non_null(e);
		assert_int_equal(e->val, 7);
	}
	free(seen);
	hashmap_release(&m);
}

/* Entries own strings; keys are (bytes, length) that need no NUL, and
 * count the tests made with them. */
struct skey {
	const char *s;
	size_t n;
	int *calls;
};

static int str_eq(const void *entry, const void *key)
{
	const char *e = *(char *const *)entry;
	const struct skey *k = key;
	(*k->calls)++;
	return strlen(e) == k->n && !memcmp(e, k->s, k->n);
}

static void test_keys_of_another_type(void **state)
{
	(void)state;
	int calls = 0;
	struct hashmap m;
	hashmap_init(&m, sizeof(char *));
	char buf[32];
	for (int i = 0; i < 1000; i++) {
		int n = snprintf(buf, sizeof(buf), "name-%d", i);
		struct skey k = {buf, (size_t)n, &calls};
		int found;
		char **e = hashmap_put(&m, sd_hash(buf, (size_t)n, 0), &k, str_eq, &found);
		assert_int_equal(found, 0);
		*e = sd_xstrdup(buf);
	}
	/* A prefix of the bytes, not NUL-terminated: "name-12" in "name-123". */
	struct skey k = {"name-123", 7, &calls};
	char **e = hashmap_find(&m, sd_hash(k.s, k.n, 0), &k, str_eq);
	assert_non_null(e);
	assert_string_equal(*e, "name-12");
	/* EQ runs only on entries of the same hash: about once per find. */
	calls = 0;
	for (int i = 0; i < 1000; i++) {
		int n = snprintf(buf, sizeof(buf), "name-%d", i);
		struct skey q = {buf, (size_t)n, &calls};
		assert_non_null(hashmap_find(&m, sd_hash(buf, (size_t)n, 0), &q, str_eq));
	}
	assert_true(calls >= 1000 && calls < 1010);
	size_t pos = 0;
	for (char **x; (x = hashmap_next(&m, &pos));)
		free(*x);
	hashmap_release(&m);
}

/* The string pool over the map: one copy per distinct string. */
static void test_strpool(void **state)
{
	(void)state;
	struct strpool *sp = strpool_new();
	const char *a = strpool_intern(sp, "alpha");
	assert_ptr_equal(strpool_intern(sp, "alpha"), a);
	assert_ptr_equal(strpool_intern_n(sp, "alphabet", 5), a);
	assert_ptr_not_equal(strpool_intern(sp, "alph"), a);
	assert_null(strpool_intern(sp, NULL));
	const char *v[2000];
	char buf[32];
	for (int i = 0; i < 2000; i++) {
		snprintf(buf, sizeof(buf), "fn_%d", i);
		v[i] = strpool_intern(sp, buf);
	}
	for (int i = 0; i < 2000; i++) {
		snprintf(buf, sizeof(buf), "fn_%d", i);
		assert_ptr_equal(strpool_intern(sp, buf), v[i]);
		assert_string_equal(v[i], buf);
	}
	assert_string_equal(a, "alpha");
	strpool_free(sp);
	strpool_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_many_keys),
	    cmocka_unit_test(test_collisions),
	    cmocka_unit_test(test_growth_keeps_entries),
	    cmocka_unit_test(test_iteration),
	    cmocka_unit_test(test_keys_of_another_type),
	    cmocka_unit_test(test_strpool),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
