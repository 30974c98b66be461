/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common/hmap: Loom's hash map, from uint64_t keys to uint64_t values (an
 * index, an id, or a pointer through uintptr_t). Every table keyed by an
 * integer, or by the 64-bit hash of a larger record, is one of these.
 *
 * Open addressing with linear probing over a power-of-two array of slots;
 * a key's home slot is loom_hash_u64(key) & (cap - 1) (common/hash.h).
 *
 * Invariants:
 *  - at most half the slots are full (n <= cap / 2), so a probe ends soon and
 *    there is always an empty slot;
 *  - a slot is full when its stamp equals the map's generation gen (never 0
 *    once there is an array): loom_hmap_clear() empties the map in O(1) by
 *    starting a new generation (every 2^32 - 1 clears it rewrites the stamps);
 *  - removal shifts the later entries of the run back (no tombstones), so
 *    lookups do not slow down with churn;
 *  - a key is in the map at most once, unless the caller added it again with
 *    loom_hmap_add_dup() (see below).
 *
 * Two modes:
 *  - growing (flags 0; a zeroed struct loom_hmap is an empty growing map):
 *    adding may allocate (the array doubles) and fail with -ENOMEM, leaving
 *    the map as it was; loom_hmap_reserve() makes room ahead so that the
 *    adds that follow cannot fail;
 *  - fixed (LOOM_HMAP_FIXED): loom_hmap_init() allocates the array for n
 *    entries once and nothing else ever allocates or frees until
 *    loom_hmap_done(): an add that would pass n's room fails with -ENOSPC.
 *    For hot paths (the simulator's fabric) and code that must not malloc.
 *
 * Keys that are hashes of larger records (tuples, addresses) may collide:
 * add them with loom_hmap_add_dup(), which keeps several entries under one
 * key, find the one meant with loom_hmap_find_match() (or walk a key's
 * entries with loom_hmap_find() and loom_hmap_find_next()) comparing the
 * records the values stand for, and remove it with loom_hmap_remove_at()
 * (loom_hmap_find_val() finds an entry by key and value). A position (size_t) is valid until the next add,
 * removal or clear; the caller may rewrite m->slot[pos].val in place, never
 * the key.
 *
 * Iteration (loom_hmap_iter_*) visits every entry once, in slot order: the
 * same for the same sequence of calls, but not insertion order. Removing the
 * entry just visited (loom_hmap_iter_remove()) is allowed during it; adding
 * is not. The map is not thread-safe: readers may share it while nobody
 * writes. The map owns its array; values are the caller's.
 */
#ifndef LOOM_COMMON_HMAP_H
#define LOOM_COMMON_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hash.h"

#define LOOM_HMAP_FIXED   1u       /* loom_hmap_init(): never allocate after init */
#define LOOM_HMAP_MIN_CAP 16u      /* the smallest array */
#define LOOM_HMAP_NPOS    SIZE_MAX /* no position: not found */

struct loom_hmap_slot {
	uint64_t key;
	uint64_t val;
	uint32_t stamp; /* == the map's gen: full */
};

struct loom_hmap {
	struct loom_hmap_slot *slot; /* cap slots; NULL while cap is 0 */
	size_t cap;                  /* 0 or a power of two >= LOOM_HMAP_MIN_CAP */
	size_t n;                    /* entries */
	uint32_t gen;                /* the stamp of a full slot; 0 only while cap is 0 */
	bool fixed;                  /* LOOM_HMAP_FIXED */
};

struct loom_hmap_iter {
	size_t pos;  /* the next slot to look at */
	size_t left; /* slots left to look at */
	size_t last; /* the slot of the entry last returned */
};

/*
 * Makes m an empty map with room for n entries; flags 0 or LOOM_HMAP_FIXED
 * (then n is all it will ever hold, and n 0 means LOOM_HMAP_MIN_CAP / 2).
 * Returns 0, or -ENOMEM (m is then an empty growing map without an array).
 */
int loom_hmap_init(struct loom_hmap *m, size_t n, unsigned flags);

/* Frees m's array and leaves m an empty growing map. */
void loom_hmap_done(struct loom_hmap *m);

/* Returns the number of entries. */
static inline size_t loom_hmap_count(const struct loom_hmap *m)
{
	return m->n;
}

static inline size_t loom_hmap_home_(const struct loom_hmap *m, uint64_t key)
{
	return (size_t)loom_hash_u64(key) & (m->cap - 1);
}

/* Returns the position of key's first entry, or LOOM_HMAP_NPOS. */
static inline size_t loom_hmap_find(const struct loom_hmap *m, uint64_t key)
{
	if (!m->cap)
		return LOOM_HMAP_NPOS;
	for (size_t i = loom_hmap_home_(m, key);; i = (i + 1) & (m->cap - 1)) {
		if (m->slot[i].stamp != m->gen)
			return LOOM_HMAP_NPOS;
		if (m->slot[i].key == key)
			return i;
	}
}

/* Returns the position of key's next entry after pos (a position of key), or LOOM_HMAP_NPOS. */
static inline size_t loom_hmap_find_next(const struct loom_hmap *m, uint64_t key, size_t pos)
{
	for (size_t i = (pos + 1) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (m->slot[i].stamp != m->gen)
			return LOOM_HMAP_NPOS;
		if (m->slot[i].key == key)
			return i;
	}
}

/* Returns the position of the entry key -> val, or LOOM_HMAP_NPOS. */
static inline size_t loom_hmap_find_val(const struct loom_hmap *m, uint64_t key, uint64_t val)
{
	size_t i = loom_hmap_find(m, key);

	while (i != LOOM_HMAP_NPOS && m->slot[i].val != val)
		i = loom_hmap_find_next(m, key, i);
	return i;
}

/* Says whether the record a value stands for is the one arg describes. */
typedef bool (*loom_hmap_match_fn)(uint64_t val, const void *arg);

/*
 * Returns the position of the first entry under key whose value match()
 * accepts, or LOOM_HMAP_NPOS: the lookup of maps keyed by hashes of records.
 */
static inline size_t loom_hmap_find_match(const struct loom_hmap *m, uint64_t key,
					  loom_hmap_match_fn match, const void *arg)
{
	size_t i = loom_hmap_find(m, key);

	while (i != LOOM_HMAP_NPOS && !match(m->slot[i].val, arg))
		i = loom_hmap_find_next(m, key, i);
	return i;
}

/* Returns whether key is in m; when it is and ret_val is not NULL, writes its value there. */
static inline bool loom_hmap_get(const struct loom_hmap *m, uint64_t key, uint64_t *ret_val)
{
	size_t i = loom_hmap_find(m, key);

	if (i == LOOM_HMAP_NPOS)
		return false;
	if (ret_val)
		*ret_val = m->slot[i].val;
	return true;
}

int loom_hmap_get_or_add_slow_(struct loom_hmap *m, uint64_t key, uint64_t val, uint64_t *ret_val);

/*
 * Finds key, adding key -> val when it is absent. Returns 1 when it added
 * (*ret_val = val), 0 when key was there (*ret_val = its value), or -ENOMEM
 * (growing) / -ENOSPC (fixed) when it could not add. ret_val may be NULL.
 * One probe when there is room: the fast path of find-or-insert tables.
 */
static inline int loom_hmap_get_or_add(struct loom_hmap *m, uint64_t key, uint64_t val,
				       uint64_t *ret_val)
{
	size_t i;

	if (!m->cap || m->n + 1 > m->cap / 2)
		return loom_hmap_get_or_add_slow_(m, key, val, ret_val);
	for (i = loom_hmap_home_(m, key); m->slot[i].stamp == m->gen; i = (i + 1) & (m->cap - 1))
		if (m->slot[i].key == key) {
			if (ret_val)
				*ret_val = m->slot[i].val;
			return 0;
		}
	m->slot[i].key = key;
	m->slot[i].val = val;
	m->slot[i].stamp = m->gen;
	m->n++;
	if (ret_val)
		*ret_val = val;
	return 1;
}

/* Adds key -> val. Returns 0, -EEXIST when key is there (m unchanged), -ENOMEM or -ENOSPC. */
int loom_hmap_add(struct loom_hmap *m, uint64_t key, uint64_t val);

/* Adds key -> val, or replaces key's value. Returns 0, -ENOMEM or -ENOSPC. */
int loom_hmap_set(struct loom_hmap *m, uint64_t key, uint64_t val);

/*
 * Adds key -> val even when key has entries already (keys that are hashes:
 * see the top of this file). Returns 0, -ENOMEM or -ENOSPC.
 */
int loom_hmap_add_dup(struct loom_hmap *m, uint64_t key, uint64_t val);

/*
 * Makes room for extra more entries, so that the next extra adds cannot
 * fail. Returns 0, -ENOMEM (growing; m unchanged) or -ENOSPC (fixed: they
 * would not fit).
 */
int loom_hmap_reserve(struct loom_hmap *m, size_t extra);

/* Removes key's first entry. Returns whether there was one; its value into *ret_val (may be NULL). */
bool loom_hmap_remove(struct loom_hmap *m, uint64_t key, uint64_t *ret_val);

/* Removes the entry key -> val. Returns whether there was one. */
bool loom_hmap_remove_val(struct loom_hmap *m, uint64_t key, uint64_t val);

/* Removes the entry at pos (from loom_hmap_find*()). */
void loom_hmap_remove_at(struct loom_hmap *m, size_t pos);

/* Removes every entry in O(1) (the array stays). */
void loom_hmap_clear(struct loom_hmap *m);

/*
 * Gives memory back when a growing map is at most 1/8 full (to an array
 * half full at most); keeps the old array when the new one cannot be had.
 * Does nothing to a fixed map.
 */
void loom_hmap_shrink(struct loom_hmap *m);

/* Starts an iteration over m. */
void loom_hmap_iter_init(const struct loom_hmap *m, struct loom_hmap_iter *it);

/*
 * Moves to the next entry: returns false when there is none, else true with
 * its key and value in *ret_key and *ret_val (either may be NULL).
 */
bool loom_hmap_iter_next(const struct loom_hmap *m, struct loom_hmap_iter *it, uint64_t *ret_key,
			 uint64_t *ret_val);

/*
 * Removes the entry loom_hmap_iter_next() returned last; the iteration goes
 * on over the rest, each still visited once.
 */
void loom_hmap_iter_remove(struct loom_hmap *m, struct loom_hmap_iter *it);

#endif
