/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test helper of the unit tests of the RPC edges (libloom's rpc_client, the
 * agent's rpc_loomd): a frame an encoder made checked and decoded with
 * proto/wire, and an Envelope packed into the body a decoder takes.
 */
#ifndef LOOM_TESTS_UNIT_WIRE_FRAME_H
#define LOOM_TESTS_UNIT_WIRE_FRAME_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "proto/wire.h"

/*
 * Checks the header of frame (len bytes, a body after the header) and
 * decodes its body; frees frame. The caller frees the result
 * (loom__envelope__free_unpacked()).
 */
static inline Loom__Envelope *wire_frame_unframe(uint8_t *frame, size_t len)
{
	Loom__Envelope *env;
	uint32_t n = 0;

	assert_non_null(frame);
	assert_true(len > WIRE_HDR_BYTES);
	assert_int_equal(wire_hdr_parse(frame, WIRE_MAX_FRAME_DEFAULT, &n), 0);
	assert_int_equal(n, len - WIRE_HDR_BYTES);
	env = wire_decode(frame + WIRE_HDR_BYTES, n);
	free(frame);
	assert_non_null(env);
	return env;
}

/* Returns env packed as a frame body of *ret_n bytes, which the caller frees. */
static inline uint8_t *wire_frame_pack(const Loom__Envelope *env, size_t *ret_n)
{
	size_t n = loom__envelope__get_packed_size(env);
	uint8_t *body = malloc(n + 1); /* + 1: not NULL for an empty body */

	assert_non_null(body);
	loom__envelope__pack(env, body);
	*ret_n = n;
	return body;
}

#endif
