/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto/tuple: a flow's 5-tuple in Loom's own form, shared by the
 * controller, the client library and the agent, with its text form, hash
 * and equality. No protobuf-c here: wire.h converts it to and from the
 * wire's FiveTuple.
 *
 * Invariant of a well-formed tuple: family 4 or 6; an IPv4 tuple's
 * addresses are in the first 4 bytes of src and dst, the other 12 zero.
 */
#ifndef LOOM_PROTO_TUPLE_H
#define LOOM_PROTO_TUPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A flow's 5-tuple in our own form (addresses in network order). */
struct wire_tuple {
	uint8_t family; /* 4 or 6 */
	uint8_t protocol;
	uint16_t src_port, dst_port;
	uint8_t src[16], dst[16]; /* IPv4 in the first 4 bytes, the rest zero */
};

/* Writes "proto src:port->dst:port" into buf; returns buf. */
const char *wire_tuple_str(const struct wire_tuple *t, char *buf, size_t size);

/* Hash and equality for tables keyed by 5-tuple. */
uint64_t wire_tuple_hash(const struct wire_tuple *t);
static inline bool wire_tuple_eq(const struct wire_tuple *a, const struct wire_tuple *b)
{
	return a->family == b->family && a->protocol == b->protocol && a->src_port == b->src_port &&
	       a->dst_port == b->dst_port && !__builtin_memcmp(a->src, b->src, 16) &&
	       !__builtin_memcmp(a->dst, b->dst, 16);
}

#endif
