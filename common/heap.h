/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common/heap: one binary min-heap, stamped out per element type.
 *
 *   LOOM_HEAP_DEFINE(name, elem_t, ctx_t, LESS, MOVED)
 *
 * defines static inline functions name_push(), name_pop(), name_up(),
 * name_down(), name_fix(), name_remove_at() and name_heapify() over a
 * caller-owned array `elem_t *h` of `uint32_t n` entries (the caller owns the
 * array, sizes it and keeps the count; nothing here allocates). The order is
 * the caller's, inlined, with no function pointer per comparison:
 *
 *   LESS(ctx, a, b)  nonzero when element a must leave before element b (a
 *                    strict weak order: elements neither less than the other
 *                    are equal). A macro or a function; ctx is passed through.
 *   MOVED(ctx, e, i) runs each time element e is stored at index i: position
 *                    tracking for an indexed heap (pos[e] = i), so that the
 *                    caller can find an element again to change its key or
 *                    remove it. LOOM_HEAP_NO_MOVED when nothing is tracked.
 *
 * Two uses cover what Loom needs: a heap of small structs whose key is in
 * the struct (ctx unused: pass NULL), and an indexed heap of uint32_t ids
 * whose keys live in a caller-owned array that ctx points into (LESS reads
 * key[a] < key[b]; MOVED writes pos[e] = i).
 *
 * Invariant: for every i > 0, LESS(ctx, h[i], h[(i - 1) / 2]) is false, so
 * h[0] is a least element. Ties are broken by position alone, by these fixed
 * sift rules, which callers' results (the simulator's event order) depend on:
 * an element moves up past its parent only while it is strictly less; moving
 * down, it goes to its right child only when that is strictly less than the
 * left, and swaps only while that child is strictly less than it. Both
 * moving up and down leave a hole and write the moving element once, at the
 * end. Equal keys therefore leave in an order that is deterministic but not
 * first-in first-out; a caller that wants FIFO puts a sequence number in LESS.
 *
 * A heap holds fewer than 2^31 entries (child indices are uint32_t).
 */
#ifndef LOOM_COMMON_HEAP_H
#define LOOM_COMMON_HEAP_H

#include <stdint.h>

/* MOVED for a heap that tracks no positions. */
#define LOOM_HEAP_NO_MOVED(ctx, e, i) ((void)0)

/* The generated functions: a heap that uses only some of them draws no warning. */
#define LOOM_HEAP_FN_ static inline __attribute__((unused))

#define LOOM_HEAP_DEFINE(name, elem_t, ctx_t, LESS, MOVED)                                         \
	/* Stores e in the hole at i and moves it up; returns where it ends. */                    \
	LOOM_HEAP_FN_ uint32_t name##_place_up(ctx_t ctx, elem_t *h, uint32_t i, elem_t e)         \
	{                                                                                          \
		(void)ctx;                                                                         \
		while (i > 0) {                                                                    \
			uint32_t parent = (i - 1) / 2;                                             \
                                                                                                   \
			if (!(LESS(ctx, e, h[parent])))                                            \
				break;                                                             \
			h[i] = h[parent];                                                          \
			MOVED(ctx, h[i], i);                                                       \
			i = parent;                                                                \
		}                                                                                  \
		h[i] = e;                                                                          \
		MOVED(ctx, e, i);                                                                  \
		return i;                                                                          \
	}                                                                                          \
                                                                                                   \
	/* Stores e in the hole at i of h[0 .. n) and moves it down; returns where it ends. */     \
	LOOM_HEAP_FN_ uint32_t name##_place_down(ctx_t ctx, elem_t *h, uint32_t n, uint32_t i,     \
						 elem_t e)                                         \
	{                                                                                          \
		(void)ctx;                                                                         \
		for (;;) {                                                                         \
			uint32_t c = 2 * i + 1;                                                    \
                                                                                                   \
			if (c >= n)                                                                \
				break;                                                             \
			if (c + 1 < n && (LESS(ctx, h[c + 1], h[c])))                              \
				c++;                                                               \
			if (!(LESS(ctx, h[c], e)))                                                 \
				break;                                                             \
			h[i] = h[c];                                                               \
			MOVED(ctx, h[i], i);                                                       \
			i = c;                                                                     \
		}                                                                                  \
		h[i] = e;                                                                          \
		MOVED(ctx, e, i);                                                                  \
		return i;                                                                          \
	}                                                                                          \
                                                                                                   \
	/* Moves h[i] up after its key decreased; returns its new index. */                        \
	LOOM_HEAP_FN_ uint32_t name##_up(ctx_t ctx, elem_t *h, uint32_t i)                         \
	{                                                                                          \
		return name##_place_up(ctx, h, i, h[i]);                                           \
	}                                                                                          \
                                                                                                   \
	/* Moves h[i] of h[0 .. n) down after its key increased; returns its new index. */         \
	LOOM_HEAP_FN_ uint32_t name##_down(ctx_t ctx, elem_t *h, uint32_t n, uint32_t i)           \
	{                                                                                          \
		return name##_place_down(ctx, h, n, i, h[i]);                                      \
	}                                                                                          \
                                                                                                   \
	/* Restores the order after h[i]'s key changed either way; returns its new index. */       \
	LOOM_HEAP_FN_ uint32_t name##_fix(ctx_t ctx, elem_t *h, uint32_t n, uint32_t i)            \
	{                                                                                          \
		uint32_t j = name##_place_up(ctx, h, i, h[i]);                                     \
                                                                                                   \
		/* moved up: no element under it is less than it */                                \
		return j == i ? name##_place_down(ctx, h, n, i, h[i]) : j;                         \
	}                                                                                          \
                                                                                                   \
	/* Adds e to h[0 .. *n), which has room for it; *n grows by one. */                        \
	LOOM_HEAP_FN_ void name##_push(ctx_t ctx, elem_t *h, uint32_t *n, elem_t e)                \
	{                                                                                          \
		name##_place_up(ctx, h, (*n)++, e);                                                \
	}                                                                                          \
                                                                                                   \
	/* Removes and returns the least element of h[0 .. *n), *n > 0; *n shrinks by one. */      \
	LOOM_HEAP_FN_ elem_t name##_pop(ctx_t ctx, elem_t *h, uint32_t *n)                         \
	{                                                                                          \
		elem_t top = h[0], last = h[--*n];                                                 \
                                                                                                   \
		if (*n)                                                                            \
			name##_place_down(ctx, h, *n, 0, last);                                    \
		return top;                                                                        \
	}                                                                                          \
                                                                                                   \
	/* Removes h[i] from h[0 .. *n); *n shrinks by one. No MOVED for the removed element: */   \
	/* a caller tracking positions marks it absent itself. */                                  \
	LOOM_HEAP_FN_ void name##_remove_at(ctx_t ctx, elem_t *h, uint32_t *n, uint32_t i)         \
	{                                                                                          \
		elem_t last = h[--*n];                                                             \
		uint32_t j;                                                                        \
                                                                                                   \
		if (i == *n)                                                                       \
			return;                                                                    \
		j = name##_place_up(ctx, h, i, last);                                              \
		if (j == i)                                                                        \
			name##_place_down(ctx, h, *n, i, last);                                    \
	}                                                                                          \
                                                                                                   \
	/* Orders any h[0 .. n) into a heap (bottom-up, each inner node moved down). MOVED runs */ \
	/* only for the entries it stores: a caller tracking positions sets all n first. */        \
	LOOM_HEAP_FN_ void name##_heapify(ctx_t ctx, elem_t *h, uint32_t n)                        \
	{                                                                                          \
		for (uint32_t i = n / 2; i-- > 0;)                                                 \
			name##_place_down(ctx, h, n, i, h[i]);                                     \
	}

#endif
