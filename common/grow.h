/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common/grow: Loom's growable array, for the builders and buffers that
 * append to a plain C array (elements, count, capacity) and double it when
 * it is full.
 *
 * The array is the caller's: a pointer *p (NULL with *cap 0 when empty) to
 * *cap elements of elem bytes each, freed with free(). loom_grow() changes
 * *p and *cap only when it succeeds, so on -ENOMEM the array is as it was
 * and still the caller's. Capacities go min_cap, 2 min_cap, 4 min_cap, ...
 * (from a nonzero *cap: *cap doubled), doubled until they hold need; sizes
 * whose bytes would pass SIZE_MAX are refused as out of memory, never
 * wrapped.
 */
#ifndef LOOM_COMMON_GROW_H
#define LOOM_COMMON_GROW_H

#include <stddef.h>

/*
 * Makes the array *p of *cap elements of elem (> 0) bytes hold at least need
 * elements. Nothing happens when need <= *cap; otherwise *p is reallocated to
 * the first capacity of the doubling from *cap (min_cap when *cap is 0, 1
 * when both are) that holds need, or to need itself when doubling would pass
 * SIZE_MAX. Returns 0, or -ENOMEM (also when the bytes would pass SIZE_MAX)
 * with *p and *cap unchanged.
 */
int loom_grow(void **p, size_t *cap, size_t need, size_t elem, size_t min_cap);

#endif
