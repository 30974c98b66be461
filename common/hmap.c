/* SPDX-License-Identifier: BSD-3-Clause */
#include "common/hmap.h"

#include <errno.h>
#include <stdlib.h>

/* Returns the array size for n entries (at most half full), or 0 when it would not fit in memory. */
static size_t cap_for(size_t n)
{
	size_t cap = LOOM_HMAP_MIN_CAP;

	while (cap / 2 < n) {
		if (cap > SIZE_MAX / 2 / sizeof(struct loom_hmap_slot))
			return 0;
		cap *= 2;
	}
	return cap;
}

/* Puts key -> val in an empty slot of its run; the caller made room. */
static void insert_new(struct loom_hmap *m, uint64_t key, uint64_t val)
{
	size_t i = loom_hmap_home_(m, key);

	while (m->slot[i].stamp == m->gen)
		i = (i + 1) & (m->cap - 1);
	m->slot[i].key = key;
	m->slot[i].val = val;
	m->slot[i].stamp = m->gen;
	m->n++;
}

/* Moves m's entries into a new array of ncap slots. 0, or -ENOMEM with m unchanged. */
static int resize(struct loom_hmap *m, size_t ncap)
{
	struct loom_hmap nm = {.cap = ncap, .gen = 1, .fixed = m->fixed};

	nm.slot = calloc(ncap, sizeof(*nm.slot));
	if (!nm.slot)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		if (m->slot[i].stamp == m->gen)
			insert_new(&nm, m->slot[i].key, m->slot[i].val);
	free(m->slot);
	*m = nm;
	return 0;
}

int loom_hmap_init(struct loom_hmap *m, size_t n, unsigned flags)
{
	size_t cap;

	*m = (struct loom_hmap){.fixed = (flags & LOOM_HMAP_FIXED) != 0};
	if (!n && !m->fixed)
		return 0;
	cap = cap_for(n);
	if (!cap)
		goto fail;
	m->slot = calloc(cap, sizeof(*m->slot));
	if (!m->slot)
		goto fail;
	m->cap = cap;
	m->gen = 1;
	return 0;
fail:
	*m = (struct loom_hmap){0};
	return -ENOMEM;
}

void loom_hmap_done(struct loom_hmap *m)
{
	free(m->slot);
	*m = (struct loom_hmap){0};
}

int loom_hmap_reserve(struct loom_hmap *m, size_t extra)
{
	size_t need, ncap;

	if (extra > SIZE_MAX - m->n)
		return m->fixed ? -ENOSPC : -ENOMEM;
	need = m->n + extra;
	if (need <= m->cap / 2)
		return 0;
	if (m->fixed)
		return -ENOSPC;
	ncap = cap_for(need);
	return ncap ? resize(m, ncap) : -ENOMEM;
}

int loom_hmap_get_or_add_slow_(struct loom_hmap *m, uint64_t key, uint64_t val, uint64_t *ret_val)
{
	size_t i = loom_hmap_find(m, key);
	int r;

	if (i != LOOM_HMAP_NPOS) {
		if (ret_val)
			*ret_val = m->slot[i].val;
		return 0;
	}
	r = loom_hmap_reserve(m, 1);
	if (r < 0)
		return r;
	insert_new(m, key, val);
	if (ret_val)
		*ret_val = val;
	return 1;
}

int loom_hmap_add(struct loom_hmap *m, uint64_t key, uint64_t val)
{
	int r;

	if (loom_hmap_find(m, key) != LOOM_HMAP_NPOS)
		return -EEXIST;
	r = loom_hmap_reserve(m, 1);
	if (r < 0)
		return r;
	insert_new(m, key, val);
	return 0;
}

int loom_hmap_set(struct loom_hmap *m, uint64_t key, uint64_t val)
{
	size_t i = loom_hmap_find(m, key);
	int r;

	if (i != LOOM_HMAP_NPOS) {
		m->slot[i].val = val;
		return 0;
	}
	r = loom_hmap_reserve(m, 1);
	if (r < 0)
		return r;
	insert_new(m, key, val);
	return 0;
}

int loom_hmap_add_dup(struct loom_hmap *m, uint64_t key, uint64_t val)
{
	int r = loom_hmap_reserve(m, 1);

	if (r < 0)
		return r;
	insert_new(m, key, val);
	return 0;
}

void loom_hmap_remove_at(struct loom_hmap *m, size_t pos)
{
	size_t mask = m->cap - 1, i = pos;

	for (size_t j = (i + 1) & mask; m->slot[j].stamp == m->gen; j = (j + 1) & mask) {
		size_t home = loom_hmap_home_(m, m->slot[j].key);

		/* the entry at j may fill i when i lies on its probe path home .. j */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->slot[i] = m->slot[j];
			i = j;
		}
	}
	m->slot[i].stamp = 0;
	m->n--;
}

bool loom_hmap_remove(struct loom_hmap *m, uint64_t key, uint64_t *ret_val)
{
	size_t i = loom_hmap_find(m, key);

	if (i == LOOM_HMAP_NPOS)
		return false;
	if (ret_val)
		*ret_val = m->slot[i].val;
	loom_hmap_remove_at(m, i);
	return true;
}

bool loom_hmap_remove_val(struct loom_hmap *m, uint64_t key, uint64_t val)
{
	size_t i = loom_hmap_find_val(m, key, val);

	if (i == LOOM_HMAP_NPOS)
		return false;
	loom_hmap_remove_at(m, i);
	return true;
}

void loom_hmap_clear(struct loom_hmap *m)
{
	m->n = 0;
	if (!m->cap)
		return;
	if (++m->gen == 0) {
		for (size_t i = 0; i < m->cap; i++)
			m->slot[i].stamp = 0;
		m->gen = 1;
	}
}

void loom_hmap_shrink(struct loom_hmap *m)
{
	if (!m->fixed && m->cap > LOOM_HMAP_MIN_CAP && m->n < m->cap / 8)
		(void)resize(m, cap_for(m->n));
}

/*
 * An iteration starts just after an empty slot and goes once round the
 * array. Removal moves entries back only within their run, which ends
 * before that empty slot: from slots not yet visited into the slot just
 * visited, which the iteration looks at again.
 */
void loom_hmap_iter_init(const struct loom_hmap *m, struct loom_hmap_iter *it)
{
	size_t s = 0;

	*it = (struct loom_hmap_iter){0};
	if (!m->n)
		return;
	while (m->slot[s].stamp == m->gen)
		s++;
	it->pos = (s + 1) & (m->cap - 1);
	it->left = m->cap;
}

bool loom_hmap_iter_next(const struct loom_hmap *m, struct loom_hmap_iter *it, uint64_t *ret_key,
			 uint64_t *ret_val)
{
	while (it->left) {
		size_t i = it->pos;

		it->pos = (i + 1) & (m->cap - 1);
		it->left--;
		if (m->slot[i].stamp != m->gen)
			continue;
		it->last = i;
		if (ret_key)
			*ret_key = m->slot[i].key;
		if (ret_val)
			*ret_val = m->slot[i].val;
		return true;
	}
	return false;
}

void loom_hmap_iter_remove(struct loom_hmap *m, struct loom_hmap_iter *it)
{
	loom_hmap_remove_at(m, it->last);
	it->pos = it->last;
	it->left++;
}
