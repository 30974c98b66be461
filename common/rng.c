/* SPDX-License-Identifier: BSD-3-Clause */
#include "common/rng.h"

#include <math.h>

#include "common/hash.h"

/* splitmix64: the mixer of a counter stepped by the golden gamma. */
static uint64_t splitmix64(uint64_t *x)
{
	return loom_hash_u64(*x += 0x9e3779b97f4a7c15ULL);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void loom_rng_seed(struct loom_rng *rng, uint64_t seed)
{
	uint64_t x = seed;

	for (int i = 0; i < 4; i++)
		rng->s[i] = splitmix64(&x);
}

uint64_t loom_rng_u64(struct loom_rng *rng)
{
	uint64_t *s = rng->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double loom_rng_uniform(struct loom_rng *rng)
{
	return (double)(loom_rng_u64(rng) >> 11) * 0x1.0p-53;
}

uint64_t loom_rng_below(struct loom_rng *rng, uint64_t n)
{
	uint64_t limit, x;

	if (n <= 1)
		return 0;
	limit = UINT64_MAX - UINT64_MAX % n;
	do
		x = loom_rng_u64(rng);
	while (x >= limit);
	return x % n;
}

double loom_rng_exp(struct loom_rng *rng, double mean)
{
	double u = loom_rng_uniform(rng);

	return -mean * log1p(-u);
}
