/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for loom-run's flow header between hosts (lrun_rx_feed(),
 * controlplane/run/run.h): the input is the byte stream a host's listener
 * reads from one connection. It is fed whole, one byte at a time, and cut
 * into pieces of 0 to 64 bytes (sizes drawn from a hash of the input), each
 * feed until it says done or refuses.
 *
 * Each must answer what run.h says of the stream, however it is cut: fewer
 * than 16 bytes, or fewer than the header announces, is more to come (and
 * the bytes still expected are the rest); a first 16 bytes without
 * LRUN_MAGIC is -EPROTO; exactly the bytes announced is done; more is
 * -EMSGSIZE fed whole, and done when a piece ends right after the last byte
 * announced. A refusal has a message (naming the flow once the header is
 * read). A header read back and written again by lrun_hdr_write() is the
 * same 16 bytes. Anything else (crash, sanitizer report, leak, abort) is a
 * bug.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "controlplane/run/run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* Feeds data[0, size) in pieces of piece(i) bytes until the feed answers; its answer. */
static int feed(const uint8_t *data, size_t size, size_t (*piece)(size_t i, uint64_t seed),
		uint64_t seed, struct lrun_rx *rx, size_t *ret_used, struct loom_err *err)
{
	size_t off = 0;
	int r = lrun_rx_feed(rx, NULL, 0, err);

	if (r != 0)
		abort(); /* nothing fed is never an answer */
	for (size_t i = 0; off < size; i++) {
		size_t n = piece(i, seed);

		if (n > size - off)
			n = size - off;
		r = lrun_rx_feed(rx, data + off, n, err);
		off += n;
		if (r != 0)
			break;
	}
	*ret_used = off;
	return r;
}

static size_t piece_whole(size_t i, uint64_t seed)
{
	(void)i;
	return (size_t)seed;
}

static size_t piece_byte(size_t i, uint64_t seed)
{
	(void)i;
	(void)seed;
	return 1;
}

static size_t piece_hashed(size_t i, uint64_t seed)
{
	return (size_t)(loom_hash_u64(seed + i) % 65);
}

/* One way of cutting: the answer r after used bytes, against the stream's own header. */
static void check(const uint8_t *data, size_t size, int r, size_t used, const struct lrun_rx *rx,
		  const struct loom_err *err, bool whole)
{
	uint64_t word, announced, end;
	char flow[32];

	if (size < LRUN_HDR_BYTES) {
		if (r != 0 || used != size || rx->hdr_off != size)
			abort();
		return;
	}
	word = be64(data);
	if (word >> 32 != LRUN_MAGIC) {
		if (r != -EPROTO || used < LRUN_HDR_BYTES || !err->msg[0])
			abort();
		return;
	}
	announced = be64(data + 8);
	if (rx->flow != (uint32_t)word)
		abort();
	/* where the announced bytes end (beyond the input when they do not fit) */
	end = announced > (uint64_t)(size - LRUN_HDR_BYTES) ? UINT64_MAX :
							      LRUN_HDR_BYTES + announced;
	if (end == UINT64_MAX) {
		if (r != 0 || used != size || rx->left != announced - (size - LRUN_HDR_BYTES))
			abort();
	} else if (end == size || (!whole && used == end)) {
		if (r != 1 || used != end || rx->left != 0)
			abort();
	} else {
		snprintf(flow, sizeof(flow), "flow %u ", (uint32_t)word);
		if (r != -EMSGSIZE || used <= end || !strstr(err->msg, flow))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct {
		size_t (*piece)(size_t i, uint64_t seed);
		bool whole;
	} cuts[] = {
		{piece_whole, true},
		{piece_byte, false},
		{piece_hashed, false},
	};
	uint64_t seed = size;

	for (size_t i = 0; i < size; i++)
		seed = loom_hash_u64(seed ^ data[i]);
	for (size_t c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++) {
		struct lrun_rx rx = {.hdr_off = 0};
		struct loom_err err = {{0}};
		size_t used = 0;
		int r;

		r = feed(data, size, cuts[c].piece, cuts[c].whole ? size : seed, &rx, &used, &err);
		check(data, size, r, used, &rx, &err, cuts[c].whole);
	}
	if (size >= LRUN_HDR_BYTES && be64(data) >> 32 == LRUN_MAGIC) {
		uint8_t hdr[LRUN_HDR_BYTES];

		lrun_hdr_write(hdr, (uint32_t)be64(data), be64(data + 8));
		if (memcmp(hdr, data, LRUN_HDR_BYTES) != 0)
			abort();
	}
	return 0;
}
