/* SPDX-License-Identifier: BSD-3-Clause */
#include "common/grow.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

int loom_grow(void **p, size_t *cap, size_t need, size_t elem, size_t min_cap)
{
	size_t ncap = *cap ? *cap : min_cap ? min_cap : 1;
	void *q;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
	assert(elem > 0);
	if (ncap > SIZE_MAX / elem)
		return -ENOMEM;
	q = realloc(*p, ncap * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = ncap;
	return 0;
}
