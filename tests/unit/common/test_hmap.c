/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for common/hash and common/hmap: the mixer's and FNV-1a's known
 * values, FNV-1a in pieces; the map's add, set, find-or-add, lookup, growth,
 * removal (backward shift inside runs of colliding keys), O(1) clear and the
 * generation wrap, the fixed mode (no allocation after init, -ENOSPC when
 * full), keys kept more than once, iteration with removal, and random churn
 * against a plain array.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/hash.h"
#include "common/hmap.h"
#include "common/rng.h"

/* Checks the invariants: n counts the full slots, at most half of them, each findable. */
static void check_map(const struct loom_hmap *m)
{
	size_t full = 0;

	if (!m->cap) {
		assert_int_equal(m->n, 0);
		return;
	}
	assert_int_equal(m->cap & (m->cap - 1), 0);
	assert_true(m->cap >= LOOM_HMAP_MIN_CAP);
	assert_true(m->gen != 0);
	for (size_t i = 0; i < m->cap; i++) {
		if (m->slot[i].stamp != m->gen)
			continue;
		full++;
		/* every slot from the key's home to i is full (linear probing) */
		for (size_t j = loom_hmap_home_(m, m->slot[i].key); j != i;
		     j = (j + 1) & (m->cap - 1))
			assert_int_equal(m->slot[j].stamp, m->gen);
	}
	assert_int_equal(full, m->n);
	assert_true(m->n <= m->cap / 2);
}

/* Returns n keys that share one home slot in an array of cap slots. */
static void colliding_keys(size_t cap, uint64_t *keys, size_t n)
{
	uint64_t home = loom_hash_u64(1) & (cap - 1);
	size_t k = 0;

	for (uint64_t x = 1; k < n; x++)
		if ((loom_hash_u64(x) & (cap - 1)) == home)
			keys[k++] = x;
}

static void test_hash_values(void **state)
{
	(void)state;
	assert_int_equal(loom_hash_u64(0), 0);
	/* splitmix64's first output from seed 0 */
	assert_int_equal(loom_hash_u64(0x9e3779b97f4a7c15ULL), 0xe220a8397b1dcdafULL);
	/* a bijection: no two of the first keys collide on all 64 bits */
	for (uint64_t x = 1; x < 1000; x++)
		assert_int_not_equal(loom_hash_u64(x), loom_hash_u64(x - 1));
}

static void test_hash_bytes(void **state)
{
	static const char foobar[] = "foobar";
	uint64_t h;

	(void)state;
	/* FNV-1a 64's published test vectors */
	assert_int_equal(loom_hash_bytes(NULL, 0), LOOM_HASH_BYTES_INIT);
	assert_int_equal(LOOM_HASH_BYTES_INIT, 0xcbf29ce484222325ULL);
	assert_int_equal(loom_hash_bytes("a", 1), 0xaf63dc4c8601ec8cULL);
	assert_int_equal(loom_hash_bytes(foobar, 6), 0x85944171f73967e8ULL);
	/* in pieces, the value of the whole, wherever it is cut */
	for (size_t cut = 0; cut <= 6; cut++) {
		h = loom_hash_bytes(foobar, cut);
		assert_int_equal(loom_hash_bytes_from(h, foobar + cut, 6 - cut),
				 0x85944171f73967e8ULL);
	}
	assert_int_equal(loom_hash_bytes_from(42, NULL, 0), 42);
	/* every byte counts, the order too */
	assert_int_not_equal(loom_hash_bytes("ab", 2), loom_hash_bytes("ba", 2));
	assert_int_not_equal(loom_hash_bytes("\0", 1), loom_hash_bytes(NULL, 0));
}

static void test_empty(void **state)
{
	struct loom_hmap m = {0};
	struct loom_hmap_iter it;
	uint64_t v = 7;

	(void)state;
	assert_false(loom_hmap_get(&m, 0, &v));
	assert_int_equal(v, 7);
	assert_int_equal(loom_hmap_find(&m, 5), LOOM_HMAP_NPOS);
	assert_false(loom_hmap_remove(&m, 5, NULL));
	loom_hmap_iter_init(&m, &it);
	assert_false(loom_hmap_iter_next(&m, &it, NULL, NULL));
	loom_hmap_clear(&m);
	loom_hmap_shrink(&m);
	assert_int_equal(loom_hmap_count(&m), 0);
	assert_null(m.slot);
	loom_hmap_done(&m);
	/* init with 0: still no array */
	assert_int_equal(loom_hmap_init(&m, 0, 0), 0);
	assert_null(m.slot);
	loom_hmap_done(&m);
}

static void test_add_get_set(void **state)
{
	struct loom_hmap m = {0};
	uint64_t v;

	(void)state;
	assert_int_equal(loom_hmap_add(&m, 0, 10), 0); /* key 0 is a key like any */
	assert_int_equal(loom_hmap_add(&m, UINT64_MAX, 20), 0);
	assert_int_equal(loom_hmap_add(&m, 0, 11), -EEXIST);
	assert_true(loom_hmap_get(&m, 0, &v));
	assert_int_equal(v, 10);
	assert_true(loom_hmap_get(&m, UINT64_MAX, &v));
	assert_int_equal(v, 20);
	assert_true(loom_hmap_get(&m, 0, NULL));
	assert_false(loom_hmap_get(&m, 1, NULL));
	assert_int_equal(loom_hmap_set(&m, 0, 12), 0);
	assert_int_equal(loom_hmap_set(&m, 3, 30), 0);
	assert_int_equal(loom_hmap_count(&m), 3);
	assert_true(loom_hmap_get(&m, 0, &v));
	assert_int_equal(v, 12);

	assert_int_equal(loom_hmap_get_or_add(&m, 3, 99, &v), 0);
	assert_int_equal(v, 30);
	assert_int_equal(loom_hmap_get_or_add(&m, 4, 40, &v), 1);
	assert_int_equal(v, 40);
	assert_int_equal(loom_hmap_get_or_add(&m, 4, 41, NULL), 0);
	assert_true(loom_hmap_get(&m, 4, &v));
	assert_int_equal(v, 40);
	assert_int_equal(loom_hmap_count(&m), 4);

	assert_true(loom_hmap_remove(&m, 3, &v));
	assert_int_equal(v, 30);
	assert_false(loom_hmap_remove(&m, 3, &v));
	assert_false(loom_hmap_get(&m, 3, NULL));
	assert_int_equal(loom_hmap_count(&m), 3);
	check_map(&m);
	loom_hmap_done(&m);
	assert_null(m.slot);
	assert_int_equal(m.cap, 0);
}

static void test_grow(void **state)
{
	struct loom_hmap m = {0};
	const size_t n = 100000;
	size_t caps = 0, last_cap = 0;

	(void)state;
	for (size_t i = 0; i < n; i++) {
		uint64_t key = i % 2 ? i : (uint64_t)i << 40; /* small and large keys */

		if (i % 3)
			assert_int_equal(loom_hmap_add(&m, key, i * 7), 0);
		else
			assert_int_equal(loom_hmap_get_or_add(&m, key, i * 7, NULL), 1);
		if (m.cap != last_cap) {
			caps++;
			last_cap = m.cap;
		}
	}
	assert_int_equal(loom_hmap_count(&m), n);
	assert_true(caps > 10); /* it grew, from 16 slots to 2^18 */
	assert_int_equal(m.cap, 262144);
	check_map(&m);
	for (size_t i = 0; i < n; i++) {
		uint64_t key = i % 2 ? i : (uint64_t)i << 40, v;

		assert_true(loom_hmap_get(&m, key, &v));
		assert_int_equal(v, i * 7);
	}
	assert_false(loom_hmap_get(&m, (uint64_t)n << 40, NULL));

	/* shrink gives memory back once few are left, keeping them */
	for (size_t i = 0; i < n - 10; i++)
		assert_true(loom_hmap_remove(&m, i % 2 ? i : (uint64_t)i << 40, NULL));
	loom_hmap_shrink(&m);
	assert_int_equal(m.cap, LOOM_HMAP_MIN_CAP * 2);
	check_map(&m);
	for (size_t i = n - 10; i < n; i++)
		assert_true(loom_hmap_get(&m, i % 2 ? i : (uint64_t)i << 40, NULL));
	loom_hmap_done(&m);
}

static void test_reserve(void **state)
{
	struct loom_hmap m = {0};
	struct loom_hmap_slot *slot;

	(void)state;
	assert_int_equal(loom_hmap_reserve(&m, 1000), 0);
	assert_true(m.cap >= 2000);
	slot = m.slot;
	for (uint64_t k = 0; k < 1000; k++)
		assert_int_equal(loom_hmap_add(&m, k, k), 0);
	assert_ptr_equal(m.slot, slot); /* the reserved array took them all */
	assert_int_equal(loom_hmap_reserve(&m, SIZE_MAX), -ENOMEM);
	assert_int_equal(loom_hmap_count(&m), 1000);
	check_map(&m);
	loom_hmap_done(&m);
}

static void test_collisions(void **state)
{
	struct loom_hmap m;
	uint64_t keys[8], v;

	(void)state;
	assert_int_equal(loom_hmap_init(&m, 8, LOOM_HMAP_FIXED), 0);
	assert_int_equal(m.cap, 16);
	colliding_keys(m.cap, keys, 8);
	for (size_t i = 0; i < 8; i++)
		assert_int_equal(loom_hmap_add(&m, keys[i], i), 0);
	check_map(&m);
	/* one run of 8 from the shared home */
	assert_int_equal(loom_hmap_find(&m, keys[0]), loom_hmap_home_(&m, keys[0]));
	assert_int_equal(loom_hmap_find(&m, keys[7]),
			 (loom_hmap_home_(&m, keys[0]) + 7) & (m.cap - 1));
	/* removing from the front and the middle shifts the rest back */
	assert_true(loom_hmap_remove(&m, keys[0], NULL));
	assert_true(loom_hmap_remove(&m, keys[4], NULL));
	check_map(&m);
	assert_int_equal(loom_hmap_find(&m, keys[1]), loom_hmap_home_(&m, keys[0]));
	for (size_t i = 1; i < 8; i++) {
		if (i == 4) {
			assert_false(loom_hmap_get(&m, keys[i], NULL));
			continue;
		}
		assert_true(loom_hmap_get(&m, keys[i], &v));
		assert_int_equal(v, i);
	}
	/* a key of another home inside the run is found and survives removals */
	for (uint64_t x = 1000;; x++)
		if (loom_hmap_home_(&m, x) == ((loom_hmap_home_(&m, keys[0]) + 2) & (m.cap - 1))) {
			assert_int_equal(loom_hmap_add(&m, x, 77), 0);
			assert_true(loom_hmap_remove(&m, keys[1], NULL));
			assert_true(loom_hmap_remove(&m, keys[2], NULL));
			check_map(&m);
			assert_true(loom_hmap_get(&m, x, &v));
			assert_int_equal(v, 77);
			break;
		}
	loom_hmap_done(&m);
}

static void test_clear(void **state)
{
	struct loom_hmap m = {0};
	struct loom_hmap_iter it;
	struct loom_hmap_slot *slot;
	size_t cap;
	uint64_t v;

	(void)state;
	for (uint64_t k = 0; k < 100; k++)
		assert_int_equal(loom_hmap_add(&m, k, k + 1), 0);
	cap = m.cap;
	slot = m.slot;
	loom_hmap_clear(&m);
	assert_int_equal(loom_hmap_count(&m), 0);
	assert_int_equal(m.cap, cap);
	assert_ptr_equal(m.slot, slot);
	for (uint64_t k = 0; k < 100; k++)
		assert_false(loom_hmap_get(&m, k, NULL));
	loom_hmap_iter_init(&m, &it);
	assert_false(loom_hmap_iter_next(&m, &it, NULL, NULL));
	check_map(&m);
	/* after a clear the old entries do not come back, the new ones are found */
	for (uint64_t k = 50; k < 60; k++)
		assert_int_equal(loom_hmap_add(&m, k, k + 2), 0);
	assert_int_equal(loom_hmap_count(&m), 10);
	assert_false(loom_hmap_get(&m, 49, NULL));
	assert_true(loom_hmap_get(&m, 55, &v));
	assert_int_equal(v, 57);
	check_map(&m);

	/* the generation wraps: the stamps are rewritten, nothing stale reads as full */
	m.gen = UINT32_MAX;
	for (size_t i = 0; i < m.cap; i++)
		if (m.slot[i].stamp)
			m.slot[i].stamp = UINT32_MAX; /* the entries of generation UINT32_MAX */
	loom_hmap_clear(&m);
	assert_int_equal(m.gen, 1);
	for (size_t i = 0; i < m.cap; i++)
		assert_int_equal(m.slot[i].stamp, 0);
	for (uint64_t k = 0; k < 100; k++)
		assert_false(loom_hmap_get(&m, k, NULL));
	assert_int_equal(loom_hmap_add(&m, 3, 4), 0);
	assert_true(loom_hmap_get(&m, 3, &v));
	assert_int_equal(v, 4);
	check_map(&m);
	loom_hmap_done(&m);
}

static void test_fixed(void **state)
{
	struct loom_hmap m;
	struct loom_hmap_slot *slot;
	size_t cap;
	uint64_t v;

	(void)state;
	assert_int_equal(loom_hmap_init(&m, 100, LOOM_HMAP_FIXED), 0);
	assert_true(m.fixed);
	assert_int_equal(m.cap, 256);
	slot = m.slot;
	cap = m.cap;
	/* it takes what init made room for (half the array), then refuses */
	for (uint64_t k = 0; k < cap / 2; k++)
		assert_int_equal(loom_hmap_get_or_add(&m, k * 3, k, NULL), 1);
	assert_int_equal(loom_hmap_add(&m, 1000, 0), -ENOSPC);
	assert_int_equal(loom_hmap_set(&m, 1000, 0), -ENOSPC);
	assert_int_equal(loom_hmap_add_dup(&m, 3, 0), -ENOSPC);
	assert_int_equal(loom_hmap_get_or_add(&m, 1000, 0, &v), -ENOSPC);
	assert_int_equal(loom_hmap_reserve(&m, 1), -ENOSPC);
	assert_int_equal(loom_hmap_reserve(&m, 0), 0);
	/* what is there is still found, also through get_or_add */
	assert_int_equal(loom_hmap_get_or_add(&m, 3, 99, &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(loom_hmap_set(&m, 3, 5), 0);
	assert_true(loom_hmap_get(&m, 3, &v));
	assert_int_equal(v, 5);
	check_map(&m);
	/* removals and clears make room again; the array never moves */
	assert_true(loom_hmap_remove(&m, 0, NULL));
	assert_int_equal(loom_hmap_add(&m, 1000, 1), 0);
	loom_hmap_shrink(&m);
	loom_hmap_clear(&m);
	for (int round = 0; round < 3; round++) {
		for (uint64_t k = 0; k < cap / 2; k++)
			assert_int_equal(loom_hmap_add(&m, k + (uint64_t)round * 1000, k), 0);
		check_map(&m);
		loom_hmap_clear(&m);
	}
	assert_ptr_equal(m.slot, slot);
	assert_int_equal(m.cap, cap);
	loom_hmap_done(&m);

	/* a fixed map of 0 entries still has the smallest array */
	assert_int_equal(loom_hmap_init(&m, 0, LOOM_HMAP_FIXED), 0);
	assert_int_equal(m.cap, LOOM_HMAP_MIN_CAP);
	loom_hmap_done(&m);
	assert_int_equal(loom_hmap_init(&m, SIZE_MAX, LOOM_HMAP_FIXED), -ENOMEM);
	assert_null(m.slot);
}

static bool val_is(uint64_t val, const void *arg)
{
	return val == *(const uint64_t *)arg;
}

static void test_dup(void **state)
{
	struct loom_hmap m = {0};
	uint64_t keys[4], seen = 0, two;
	size_t pos, n = 0;

	(void)state;
	assert_int_equal(loom_hmap_init(&m, 16, 0), 0);
	colliding_keys(m.cap, keys, 4);
	/* keys[0] three times, with another key of the same home between */
	assert_int_equal(loom_hmap_add_dup(&m, keys[0], 1), 0);
	assert_int_equal(loom_hmap_add(&m, keys[1], 100), 0);
	assert_int_equal(loom_hmap_add_dup(&m, keys[0], 2), 0);
	assert_int_equal(loom_hmap_add_dup(&m, keys[0], 4), 0);
	assert_int_equal(loom_hmap_count(&m), 4);
	for (pos = loom_hmap_find(&m, keys[0]); pos != LOOM_HMAP_NPOS;
	     pos = loom_hmap_find_next(&m, keys[0], pos)) {
		seen |= m.slot[pos].val;
		n++;
	}
	assert_int_equal(n, 3);
	assert_int_equal(seen, 7);
	/* by key and value; by a match on the value */
	pos = loom_hmap_find_val(&m, keys[0], 4);
	assert_int_not_equal(pos, LOOM_HMAP_NPOS);
	assert_int_equal(m.slot[pos].key, keys[0]);
	assert_int_equal(m.slot[pos].val, 4);
	assert_int_equal(loom_hmap_find_val(&m, keys[0], 100), LOOM_HMAP_NPOS);
	assert_int_equal(loom_hmap_find_val(&m, keys[1], 100), loom_hmap_find(&m, keys[1]));
	two = 2;
	pos = loom_hmap_find_match(&m, keys[0], val_is, &two);
	assert_int_not_equal(pos, LOOM_HMAP_NPOS);
	assert_int_equal(m.slot[pos].val, 2);
	assert_int_equal(loom_hmap_find_match(&m, keys[2], val_is, &two), LOOM_HMAP_NPOS);
	/* remove the one of value 2 by its position; rewrite another in place */
	loom_hmap_remove_at(&m, pos);
	check_map(&m);
	pos = loom_hmap_find(&m, keys[0]);
	m.slot[pos].val = 8;
	seen = 0;
	n = 0;
	for (pos = loom_hmap_find(&m, keys[0]); pos != LOOM_HMAP_NPOS;
	     pos = loom_hmap_find_next(&m, keys[0], pos)) {
		seen |= m.slot[pos].val;
		n++;
	}
	assert_int_equal(n, 2);
	assert_true(seen == (8 | 4) || seen == (8 | 1));
	assert_true(loom_hmap_get(&m, keys[1], NULL));
	/* by key and value */
	assert_false(loom_hmap_remove_val(&m, keys[0], 2));
	assert_false(loom_hmap_remove_val(&m, keys[1], 8));
	assert_true(loom_hmap_remove_val(&m, keys[0], 8));
	assert_true(loom_hmap_remove_val(&m, keys[1], 100));
	assert_int_equal(loom_hmap_count(&m), 1);
	assert_true(loom_hmap_get(&m, keys[0], &seen));
	assert_true(seen == 4 || seen == 1);
	check_map(&m);
	loom_hmap_done(&m);
}

static void test_iter_remove(void **state)
{
	struct loom_hmap m = {0};
	struct loom_hmap_iter it;
	static uint8_t visits[4096];
	uint64_t k, v;
	size_t n = 0;

	(void)state;
	/* many colliding runs, some wrapping past the end of the array */
	assert_int_equal(loom_hmap_init(&m, 2048, 0), 0);
	for (k = 0; k < 2048; k++)
		assert_int_equal(loom_hmap_add(&m, k, k * 2), 0);
	assert_int_equal(m.cap, 4096);
	memset(visits, 0, sizeof(visits));
	loom_hmap_iter_init(&m, &it);
	while (loom_hmap_iter_next(&m, &it, &k, &v)) {
		assert_int_equal(v, k * 2);
		visits[k]++;
		n++;
		if (k % 3)
			loom_hmap_iter_remove(&m, &it);
	}
	assert_int_equal(n, 2048);
	for (k = 0; k < 2048; k++)
		assert_int_equal(visits[k], 1);
	assert_int_equal(loom_hmap_count(&m), (2048 + 2) / 3);
	check_map(&m);
	for (k = 0; k < 2048; k++)
		assert_int_equal(loom_hmap_get(&m, k, NULL), k % 3 == 0);
	/* removing everything while iterating */
	loom_hmap_iter_init(&m, &it);
	while (loom_hmap_iter_next(&m, &it, NULL, NULL))
		loom_hmap_iter_remove(&m, &it);
	assert_int_equal(loom_hmap_count(&m), 0);
	check_map(&m);
	loom_hmap_done(&m);
}

/* Random adds, sets, removals and clears against a plain array of small keys. */
static void test_churn(void **state)
{
	enum {
		NKEYS = 512
	};
	struct loom_hmap m = {0};
	static uint64_t ref[NKEYS];
	static bool in[NKEYS];
	struct loom_rng rng;
	size_t n = 0;

	(void)state;
	loom_rng_seed(&rng, 42);
	memset(in, 0, sizeof(in));
	for (int step = 0; step < 200000; step++) {
		uint64_t k = loom_rng_below(&rng, NKEYS), op = loom_rng_below(&rng, 100), v;

		if (op < 45) {
			int r = loom_hmap_add(&m, k * 0x10001, step);

			assert_int_equal(r, in[k] ? -EEXIST : 0);
			if (!in[k]) {
				in[k] = true;
				ref[k] = (uint64_t)step;
				n++;
			}
		} else if (op < 55) {
			assert_int_equal(loom_hmap_set(&m, k * 0x10001, step), 0);
			n += !in[k];
			in[k] = true;
			ref[k] = (uint64_t)step;
		} else if (op < 99) {
			assert_int_equal(loom_hmap_remove(&m, k * 0x10001, &v), in[k]);
			if (in[k]) {
				assert_int_equal(v, ref[k]);
				in[k] = false;
				n--;
			}
		} else if (loom_rng_below(&rng, 20) == 0) {
			loom_hmap_clear(&m);
			memset(in, 0, sizeof(in));
			n = 0;
		}
		assert_int_equal(loom_hmap_count(&m), n);
		if (step % 1000 == 0) {
			check_map(&m);
			for (uint64_t j = 0; j < NKEYS; j++) {
				assert_int_equal(loom_hmap_get(&m, j * 0x10001, &v), in[j]);
				if (in[j])
					assert_int_equal(v, ref[j]);
			}
		}
	}
	loom_hmap_done(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_values), cmocka_unit_test(test_hash_bytes),
		cmocka_unit_test(test_empty),       cmocka_unit_test(test_add_get_set),
		cmocka_unit_test(test_grow),        cmocka_unit_test(test_reserve),
		cmocka_unit_test(test_collisions),  cmocka_unit_test(test_clear),
		cmocka_unit_test(test_fixed),       cmocka_unit_test(test_dup),
		cmocka_unit_test(test_iter_remove), cmocka_unit_test(test_churn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
