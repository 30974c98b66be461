/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common/hash: Loom's one 64-bit integer mixer, for hash tables and for
 * seeding (common/rng.c's splitmix64 is loom_hash_u64() of a counter), and
 * its one hash of byte strings.
 *
 * loom_hash_u64() is the finaliser of splitmix64 (Steele, Lea and Flood,
 * "Fast splittable pseudorandom number generators", OOPSLA 2014; the
 * constants are Stafford's "Mix13"): a bijection on 64-bit words in which
 * every input bit flips each output bit with probability close to 1/2, so
 * the low bits of its result can index a power-of-two table even when the
 * keys are small consecutive integers. It maps 0 to 0. Same input, same
 * output, on every platform; it is not a cryptographic hash (keys chosen by
 * an adversary can collide on purpose).
 *
 * loom_hash_bytes() is FNV-1a 64 (Fowler, Noll and Vo; the offset basis
 * LOOM_HASH_BYTES_INIT and the prime 0x100000001b3 of the published
 * algorithm) over a byte string, for keys that are not one integer
 * (addresses, 5-tuples) and for checksums. loom_hash_bytes_from() goes on
 * from an earlier result, so a string hashed in pieces gives the value of the
 * whole: loom_hash_bytes_from(loom_hash_bytes(a, m), b, n) is the hash of a's
 * m bytes followed by b's n. The value depends only on the bytes (not on
 * their alignment or the platform), so it may be written to files; hash a
 * struct's bytes only when it has no padding or the padding is zeroed. FNV-1a
 * does not avalanche: a hash table indexes by loom_hash_u64() of it
 * (common/hmap does). Not cryptographic either.
 */
#ifndef LOOM_COMMON_HASH_H
#define LOOM_COMMON_HASH_H

#include <stddef.h>
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

#define LOOM_HASH_BYTES_INIT 0xcbf29ce484222325ULL /* FNV-1a 64's offset basis */

/*
 * Returns the FNV-1a 64 hash of n bytes at p, going on from h (the result of
 * an earlier piece, or LOOM_HASH_BYTES_INIT to start). p may be NULL when n
 * is 0; then h is returned.
 */
static inline uint64_t loom_hash_bytes_from(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

/* Returns the FNV-1a 64 hash of n bytes at p (LOOM_HASH_BYTES_INIT when n is 0). */
static inline uint64_t loom_hash_bytes(const void *p, size_t n)
{
	return loom_hash_bytes_from(LOOM_HASH_BYTES_INIT, p, n);
}

#endif
