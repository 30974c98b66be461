/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common/hash: Loom's one 64-bit integer mixer, for hash tables and for
 * seeding (common/rng.c's splitmix64 is loom_hash_u64() of a counter).
 *
 * loom_hash_u64() is the finaliser of splitmix64 (Steele, Lea and Flood,
 * "Fast splittable pseudorandom number generators", OOPSLA 2014; the
 * constants are Stafford's "Mix13"): a bijection on 64-bit words in which
 * every input bit flips each output bit with probability close to 1/2, so
 * the low bits of its result can index a power-of-two table even when the
 * keys are small consecutive integers. It maps 0 to 0. Same input, same
 * output, on every platform; it is not a cryptographic hash (keys chosen by
 * an adversary can collide on purpose).
 */
#ifndef LOOM_COMMON_HASH_H
#define LOOM_COMMON_HASH_H

#include <stdint.h>

/* Returns x mixed: a bijection of the 64-bit words, avalanching (see above). */
static inline uint64_t loom_hash_u64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

#endif
