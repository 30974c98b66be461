/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for common/heap: a heap of structs and an indexed heap of ids
 * with position tracking, each driven by random operations and checked
 * against a sorted reference; and the tie-breaking order, against a literal
 * copy of the sift code the simulator used before common/heap existed (its
 * results depend on which of two equal keys leaves first).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/heap.h"
#include "common/rng.h"

#define NONE UINT32_MAX

/* ---- a heap of structs ----------------------------------------------------------------- */

struct item {
	uint64_t key;
	uint32_t tag; /* tells equal keys apart */
};

#define ITEM_LESS(ctx, a, b) ((a).key < (b).key)
LOOM_HEAP_DEFINE(iheap, struct item, const void *, ITEM_LESS, LOOM_HEAP_NO_MOVED)

/* Ties by tag: a total order, so the pop order is exactly the sorted order. */
#define ITEM_LESS_TAG(ctx, a, b) ((a).key != (b).key ? (a).key < (b).key : (a).tag < (b).tag)
LOOM_HEAP_DEFINE(theap, struct item, const void *, ITEM_LESS_TAG, LOOM_HEAP_NO_MOVED)

static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->tag < y->tag ? -1 : x->tag > y->tag;
}

static void check_order(const struct item *h, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++)
		assert_false(h[i].key < h[(i - 1) / 2].key);
}

/* Random pushes and pops (many equal keys) against a sorted multiset. */
static void test_struct_random(void **state)
{
	enum {
		CAP = 600
	};
	struct item h[CAP], ref[CAP], t[CAP];
	struct loom_rng rng;

	(void)state;
	loom_rng_seed(&rng, 7);
	for (int round = 0; round < 200; round++) {
		uint32_t n = 0, nref = 0, nt = 0, tag = 0;
		uint64_t range = 1 + loom_rng_below(&rng, round % 2 ? 8 : 1000000);

		for (int op = 0; op < 1000; op++) {
			bool push = n == 0 || (n < CAP && loom_rng_below(&rng, 3) != 0);

			if (push) {
				struct item it = {loom_rng_below(&rng, range), tag++};

				iheap_push(NULL, h, &n, it);
				theap_push(NULL, t, &nt, it);
				ref[nref++] = it;
				qsort(ref, nref, sizeof(*ref), cmp_item);
			} else {
				struct item a = iheap_pop(NULL, h, &n), b = theap_pop(NULL, t, &nt);

				/* the least key; with ties by tag, exactly the first of ref */
				assert_int_equal(a.key, ref[0].key);
				assert_int_equal(b.key, ref[0].key);
				assert_int_equal(b.tag, ref[0].tag);
				memmove(ref, ref + 1, --nref * sizeof(*ref));
			}
			assert_int_equal(n, nref);
			assert_int_equal(nt, nref);
			check_order(h, n);
		}
		while (n) {
			assert_int_equal(iheap_pop(NULL, h, &n).key, ref[0].key);
			memmove(ref, ref + 1, --nref * sizeof(*ref));
		}
	}
}

/* heapify, then pop everything: the sorted order. */
static void test_struct_heapify(void **state)
{
	enum {
		N = 777
	};
	struct item h[N], ref[N];
	struct loom_rng rng;

	(void)state;
	loom_rng_seed(&rng, 11);
	for (uint32_t len = 0; len < N; len += 1 + len / 3) {
		uint32_t n = len;

		for (uint32_t i = 0; i < len; i++)
			h[i] = ref[i] = (struct item){loom_rng_below(&rng, 50), i};
		theap_heapify(NULL, h, n);
		qsort(ref, len, sizeof(*ref), cmp_item);
		for (uint32_t i = 0; i < len; i++) {
			struct item it = theap_pop(NULL, h, &n);

			assert_int_equal(it.key, ref[i].key);
			assert_int_equal(it.tag, ref[i].tag);
		}
		assert_int_equal(n, 0);
	}
}

/* Equal keys leave in the order the sift rules give, not first in first out. */
static void test_struct_ties(void **state)
{
	struct item h[8];
	uint32_t n = 0;
	static const uint32_t want[] = {3, 1, 2, 0};

	(void)state;
	iheap_push(NULL, h, &n, (struct item){1, 0});
	iheap_push(NULL, h, &n, (struct item){1, 1});
	iheap_push(NULL, h, &n, (struct item){1, 2});
	iheap_push(NULL, h, &n, (struct item){0, 3});
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(iheap_pop(NULL, h, &n).tag, want[i]);
	assert_int_equal(n, 0);
}

/* ---- the struct heap the simulator had (rel_push / rel_pop), verbatim -------------------- */

static void old_push(struct item *h, size_t *n, struct item e)
{
	size_t i = (*n)++;

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (h[parent].key <= e.key)
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i] = e;
}

static struct item old_pop(struct item *h, size_t *n)
{
	struct item top = h[0], last = h[--(*n)];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1].key < h[c].key)
			c++;
		if (last.key <= h[c].key)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = last;
	return top;
}

/* The same operations leave the same array, entry for entry, ties included. */
static void test_struct_matches_old(void **state)
{
	enum {
		CAP = 400
	};
	struct item h[CAP], o[CAP];
	struct loom_rng rng;

	(void)state;
	loom_rng_seed(&rng, 3);
	for (int round = 0; round < 100; round++) {
		uint32_t n = 0, tag = 0;
		size_t no = 0;

		for (int op = 0; op < 2000; op++) {
			if (n == 0 || (n < CAP && loom_rng_below(&rng, 2))) {
				struct item it = {loom_rng_below(&rng, 4), tag++};

				iheap_push(NULL, h, &n, it);
				old_push(o, &no, it);
			} else {
				struct item a = iheap_pop(NULL, h, &n), b = old_pop(o, &no);

				assert_int_equal(a.tag, b.tag);
			}
			assert_int_equal(n, no);
			for (uint32_t i = 0; i < n; i++)
				assert_int_equal(h[i].tag, o[i].tag);
		}
	}
}

/* ---- an indexed heap of ids keyed by an array, with positions -------------------------- */

enum {
	NID = 300
};

struct keyed {
	uint64_t key[NID];
	uint32_t pos[NID];
	uint32_t heap[NID];
	uint32_t n;
};

#define ID_LESS(k, a, b)  ((k)->key[a] < (k)->key[b])
#define ID_MOVED(k, e, i) ((k)->pos[e] = (i))
LOOM_HEAP_DEFINE(xheap, uint32_t, struct keyed *, ID_LESS, ID_MOVED)

static void check_keyed(const struct keyed *k)
{
	uint32_t present = 0;

	for (uint32_t i = 0; i < k->n; i++) {
		assert_int_equal(k->pos[k->heap[i]], i);
		if (i)
			assert_false(k->key[k->heap[i]] < k->key[k->heap[(i - 1) / 2]]);
	}
	for (uint32_t id = 0; id < NID; id++)
		if (k->pos[id] != NONE) {
			assert_true(k->pos[id] < k->n);
			assert_int_equal(k->heap[k->pos[id]], id);
			present++;
		}
	assert_int_equal(present, k->n);
}

/* Random inserts, key changes either way and removals; drained in key order. */
static void test_indexed_random(void **state)
{
	static struct keyed k;
	struct loom_rng rng;

	(void)state;
	loom_rng_seed(&rng, 5);
	for (int round = 0; round < 50; round++) {
		uint64_t range = round % 2 ? 10 : 1000000;

		memset(k.pos, 0xff, sizeof(k.pos));
		k.n = 0;
		for (int op = 0; op < 3000; op++) {
			uint32_t id = (uint32_t)loom_rng_below(&rng, NID);
			uint64_t key = loom_rng_below(&rng, range);

			switch (loom_rng_below(&rng, 4)) {
			case 0: /* remove */
				if (k.pos[id] != NONE) {
					uint32_t i = k.pos[id];

					k.pos[id] = NONE;
					xheap_remove_at(&k, k.heap, &k.n, i);
				}
				break;
			case 1: /* pop the least: nothing present is less */
				if (k.n) {
					uint32_t top = xheap_pop(&k, k.heap, &k.n);

					k.pos[top] = NONE;
					for (uint32_t j = 0; j < k.n; j++)
						assert_false(k.key[k.heap[j]] < k.key[top]);
				}
				break;
			default: /* insert or change the key */
				k.key[id] = key;
				if (k.pos[id] == NONE)
					xheap_push(&k, k.heap, &k.n, id);
				else
					xheap_fix(&k, k.heap, k.n, k.pos[id]);
				break;
			}
			check_keyed(&k);
		}
		/* a key change by up/down as well, then drain in order */
		for (uint32_t j = 0; j < k.n; j++) {
			uint32_t id = k.heap[j];
			uint64_t old = k.key[id];

			k.key[id] = loom_rng_below(&rng, range);
			if (k.key[id] < old)
				xheap_up(&k, k.heap, k.pos[id]);
			else
				xheap_down(&k, k.heap, k.n, k.pos[id]);
			check_keyed(&k);
		}
		for (uint64_t last = 0; k.n;) {
			uint32_t top = k.heap[0];

			assert_true(k.key[top] >= last);
			last = k.key[top];
			k.pos[top] = NONE;
			xheap_remove_at(&k, k.heap, &k.n, 0);
			check_keyed(&k);
		}
	}
}

/* ---- the indexed heap the simulator had (fh_*), verbatim ------------------------------- */

struct old_keyed {
	uint64_t key[NID];
	uint32_t hpos[NID];
	uint32_t fheap[NID];
	uint32_t nfheap;
};

static inline void fh_place(struct old_keyed *e, uint32_t i, uint32_t f)
{
	e->fheap[i] = f;
	e->hpos[f] = i;
}

static void fh_up(struct old_keyed *e, uint32_t i)
{
	uint32_t f = e->fheap[i];
	uint64_t key = e->key[f];

	while (i > 0) {
		uint32_t parent = (i - 1) / 2;

		if (e->key[e->fheap[parent]] <= key)
			break;
		fh_place(e, i, e->fheap[parent]);
		i = parent;
	}
	fh_place(e, i, f);
}

static void fh_down(struct old_keyed *e, uint32_t i)
{
	uint32_t f = e->fheap[i];
	uint64_t key = e->key[f];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= e->nfheap)
			break;
		if (c + 1 < e->nfheap && e->key[e->fheap[c + 1]] < e->key[e->fheap[c]])
			c++;
		if (key <= e->key[e->fheap[c]])
			break;
		fh_place(e, i, e->fheap[c]);
		i = c;
	}
	fh_place(e, i, f);
}

static void fh_remove(struct old_keyed *e, uint32_t f)
{
	uint32_t i = e->hpos[f], last;

	if (i == NONE)
		return;
	e->hpos[f] = NONE;
	last = e->fheap[--e->nfheap];
	if (i == e->nfheap)
		return;
	fh_place(e, i, last);
	fh_up(e, i);
	fh_down(e, e->hpos[last]);
}

static void fh_update(struct old_keyed *e, uint32_t f)
{
	if (e->hpos[f] == NONE) {
		fh_place(e, e->nfheap++, f);
		fh_up(e, e->hpos[f]);
		return;
	}
	fh_up(e, e->hpos[f]);
	fh_down(e, e->hpos[f]);
}

/* Same operations, same array and positions, entry for entry, ties included. */
static void test_indexed_matches_old(void **state)
{
	static struct keyed k;
	static struct old_keyed o;
	struct loom_rng rng;

	(void)state;
	loom_rng_seed(&rng, 9);
	for (int round = 0; round < 40; round++) {
		memset(k.pos, 0xff, sizeof(k.pos));
		memset(o.hpos, 0xff, sizeof(o.hpos));
		k.n = o.nfheap = 0;
		for (int op = 0; op < 4000; op++) {
			uint32_t id = (uint32_t)loom_rng_below(&rng, NID);

			k.key[id] = o.key[id] = loom_rng_below(&rng, 6);
			if (loom_rng_below(&rng, 4) == 0) {
				if (k.pos[id] != NONE) {
					uint32_t i = k.pos[id];

					k.pos[id] = NONE;
					xheap_remove_at(&k, k.heap, &k.n, i);
				}
				fh_remove(&o, id);
			} else {
				if (k.pos[id] == NONE)
					xheap_push(&k, k.heap, &k.n, id);
				else
					xheap_fix(&k, k.heap, k.n, k.pos[id]);
				fh_update(&o, id);
			}
			assert_int_equal(k.n, o.nfheap);
			assert_memory_equal(k.heap, o.fheap, k.n * sizeof(*k.heap));
			assert_memory_equal(k.pos, o.hpos, sizeof(k.pos));
		}
		/* heapify an arbitrary order, as the simulator's full re-plan does */
		for (uint32_t i = 0; i < k.n; i++) {
			k.key[k.heap[i]] = o.key[k.heap[i]] = loom_rng_below(&rng, 6);
			o.fheap[i] = k.heap[i];
		}
		for (uint32_t i = 0; i < k.n; i++)
			o.hpos[o.fheap[i]] = i;
		for (uint32_t i = o.nfheap / 2; i-- > 0;)
			fh_down(&o, i);
		xheap_heapify(&k, k.heap, k.n);
		assert_memory_equal(k.heap, o.fheap, k.n * sizeof(*k.heap));
		assert_memory_equal(k.pos, o.hpos, sizeof(k.pos));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_struct_random),  cmocka_unit_test(test_struct_heapify),
		cmocka_unit_test(test_struct_ties),    cmocka_unit_test(test_struct_matches_old),
		cmocka_unit_test(test_indexed_random), cmocka_unit_test(test_indexed_matches_old),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
