/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common/rng: a small, fast, seedable PRNG (xoshiro256**, seeded through
 * splitmix64). The state is a plain value: copy it to fork a stream, store
 * it to replay one. Same seed, same sequence, on every platform.
 */
#ifndef LOOM_COMMON_RNG_H
#define LOOM_COMMON_RNG_H

#include <stdint.h>

struct loom_rng {
	uint64_t s[4];
};

void loom_rng_seed(struct loom_rng *rng, uint64_t seed);

/* Returns 64 uniformly distributed bits. */
uint64_t loom_rng_u64(struct loom_rng *rng);

/* Returns a double uniform in [0, 1). */
double loom_rng_uniform(struct loom_rng *rng);

/* Returns an integer uniform in [0, n) (n > 0), without modulo bias. */
uint64_t loom_rng_below(struct loom_rng *rng, uint64_t n);

/* Returns an exponential variate with the given mean (> 0). */
double loom_rng_exp(struct loom_rng *rng, double mean);

#endif
