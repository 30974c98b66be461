/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A small open-addressing hash map of pointers keyed by a 64-bit hash, for
 * loomd's tables. The caller supplies the hash (never 0 or 1: mix64() maps
 * into range) and the equality of a stored value with a key; several values
 * may share a hash. Insert assumes the key is absent.
 */
#ifndef LOOM_CONTROLPLANE_LOOMD_HMAP_H
#define LOOM_CONTROLPLANE_LOOMD_HMAP_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HM_EMPTY 0
#define HM_TOMB  1

struct hmap {
	uint64_t *hash;
	void **val;
	uint32_t cap, used, live; /* used counts tombstones too */
};

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x < 2 ? x + 2 : x;
}

typedef bool (*hm_eq_fn)(const void *val, const void *key);

static inline void hm_done(struct hmap *m)
{
	free(m->hash);
	free(m->val);
	memset(m, 0, sizeof(*m));
}

static inline void *hm_find(const struct hmap *m, uint64_t h, hm_eq_fn eq, const void *key)
{
	if (!m->cap)
		return NULL;
	for (uint32_t i = (uint32_t)h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (m->hash[i] == HM_EMPTY)
			return NULL;
		if (m->hash[i] == h && eq(m->val[i], key))
			return m->val[i];
	}
}

static inline int hm_grow(struct hmap *m)
{
	uint32_t ncap = m->cap ? m->cap : 64;
	struct hmap n = {0};

	while (m->live * 2 + 2 > ncap)
		ncap *= 2;
	n.hash = calloc(ncap, sizeof(*n.hash));
	n.val = calloc(ncap, sizeof(*n.val));
	if (!n.hash || !n.val) {
		hm_done(&n);
		return -ENOMEM;
	}
	n.cap = ncap;
	for (uint32_t i = 0; i < m->cap; i++) {
		uint32_t j;

		if (m->hash[i] < 2)
			continue;
		for (j = (uint32_t)m->hash[i] & (ncap - 1); n.hash[j] != HM_EMPTY;
		     j = (j + 1) & (ncap - 1))
			;
		n.hash[j] = m->hash[i];
		n.val[j] = m->val[i];
		n.used++;
		n.live++;
	}
	hm_done(m);
	*m = n;
	return 0;
}

/* Inserts (the caller made sure the key is absent). 0 or -ENOMEM. */
static inline int hm_insert(struct hmap *m, uint64_t h, void *val)
{
	uint32_t i;

	if ((m->used + 1) * 4 >= m->cap * 3) {
		int r = hm_grow(m);

		if (r < 0)
			return r;
	}
	for (i = (uint32_t)h & (m->cap - 1); m->hash[i] >= 2; i = (i + 1) & (m->cap - 1))
		;
	if (m->hash[i] == HM_EMPTY)
		m->used++;
	m->hash[i] = h;
	m->val[i] = val;
	m->live++;
	return 0;
}

static inline void hm_remove(struct hmap *m, uint64_t h, const void *val)
{
	if (!m->cap)
		return;
	for (uint32_t i = (uint32_t)h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (m->hash[i] == HM_EMPTY)
			return;
		if (m->hash[i] == h && m->val[i] == val) {
			m->hash[i] = HM_TOMB;
			m->val[i] = NULL;
			m->live--;
			return;
		}
	}
}

/* Visits every value: for (i = 0; i < m->cap; i++) if (m->hash[i] >= 2) use m->val[i]. */

#endif
