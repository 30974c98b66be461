/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto/wire: framing of Loom's protocol (loom.proto) and the 5-tuple type
 * shared by the controller, the client library and the agent.
 *
 * A frame is a 4-byte big-endian length n (1 <= n <= the receiver's maximum)
 * followed by n bytes: one protobuf-encoded loom.Envelope. Decoding never
 * trusts the length beyond the maximum and never reads past the buffer.
 * Nothing here logs; errors are -errno (EMSGSIZE: length out of range,
 * EBADMSG: bytes that are not an Envelope, ETIMEDOUT, EPIPE: peer closed).
 */
#ifndef LOOM_PROTO_WIRE_H
#define LOOM_PROTO_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loom.pb-c.h"

#define WIRE_VERSION_MIN       1u
#define WIRE_VERSION_MAX       1u
#define WIRE_HDR_BYTES         4u
#define WIRE_MAX_FRAME_DEFAULT (4u << 20)

/* Name of an envelope case ("register_job", ...), "unset" or "unknown". */
const char *wire_type_name(Loom__Envelope__BodyCase c);

/*
 * Reads the length of a frame from its header. Returns 0 with *ret_len, or
 * -EMSGSIZE when the length is 0 or above max_frame.
 */
int wire_hdr_parse(const uint8_t hdr[WIRE_HDR_BYTES], uint32_t max_frame, uint32_t *ret_len);

/*
 * Encodes env as one frame into a new buffer (caller frees) of *ret_len
 * bytes. Returns 0, -EMSGSIZE when the frame would exceed max_frame, or
 * -ENOMEM.
 */
int wire_encode(const Loom__Envelope *env, uint32_t max_frame, uint8_t **ret_buf, size_t *ret_len);

/*
 * Decodes a frame body (without its header). Returns the envelope (free with
 * wire_free()) or NULL + errno EBADMSG.
 */
Loom__Envelope *wire_decode(const uint8_t *body, size_t len);
void wire_free(Loom__Envelope *env);

/*
 * Blocking I/O on a stream socket, for clients and tests. timeout_ms bounds
 * the whole call (< 0: no bound). wire_send returns 0 or -errno; wire_recv
 * returns 0 with *ret_env (caller frees with wire_free), or -errno
 * (-EPIPE when the peer closed before a whole frame).
 */
int wire_send(int fd, const Loom__Envelope *env, uint32_t max_frame, int timeout_ms);
int wire_recv(int fd, uint32_t max_frame, int timeout_ms, Loom__Envelope **ret_env);

/* Writes/reads exactly len bytes with a deadline; 0 or -errno. */
int wire_write_all(int fd, const void *buf, size_t len, int timeout_ms);
int wire_read_all(int fd, void *buf, size_t len, int timeout_ms);

/*
 * Error codes <-> -errno, one table for both ends: BAD_REQUEST -EINVAL,
 * BAD_VERSION -EPROTONOSUPPORT, UNKNOWN_TYPE -EBADMSG, EXISTS -EEXIST,
 * NOT_FOUND -ENOENT, CYCLE -ELOOP, FINISHED -EALREADY, WRONG_ROLE -EPERM,
 * NOT_READY -ENOTCONN, LIMIT -ENOSPC, INTERNAL -EIO, UNAVAILABLE -ESHUTDOWN.
 * OK is 0; an unknown code is -EPROTO; an unlisted errno is INTERNAL.
 */
int wire_error_to_errno(Loom__ErrorCode code);
Loom__ErrorCode wire_errno_to_error(int neg_errno);
const char *wire_error_name(Loom__ErrorCode code);

/* A flow's 5-tuple in our own form (addresses in network order). */
struct wire_tuple {
	uint8_t family; /* 4 or 6 */
	uint8_t protocol;
	uint16_t src_port, dst_port;
	uint8_t src[16], dst[16]; /* IPv4 in the first 4 bytes, the rest zero */
};

/*
 * Converts from the wire form. Returns 0, or -EINVAL when an address is not
 * 4 or 16 bytes, the two families differ, a port is above 65535 or the
 * protocol above 255.
 */
int wire_tuple_from_pb(const Loom__FiveTuple *pb, struct wire_tuple *ret);

/* Fills pb (and its two address buffers, borrowed from t) from t. */
void wire_tuple_to_pb(const struct wire_tuple *t, Loom__FiveTuple *pb);

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
