/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto/wire: Loom's protocol (loom.proto) in protobuf-c: encoding and
 * decoding envelopes as frames (frame.h), the wire's 5-tuple against ours
 * (tuple.h), and the error codes against -errno.
 *
 * A frame's body is one protobuf-encoded loom.Envelope. Decoding never
 * trusts the length beyond the maximum and never reads past the buffer.
 * Nothing here logs; errors are -errno (EMSGSIZE: length out of range,
 * EBADMSG: bytes that are not an Envelope, ETIMEDOUT, EPIPE: peer closed).
 *
 * protobuf-c stops at the RPC edge: only proto/, loomd's rpc_*.c, the
 * agent's rpc_loomd.c, libloom's rpc_*.c, tests and benchmarks include this
 * header (scripts/check-layering.py); everything else speaks frame.h and
 * tuple.h.
 */
#ifndef LOOM_PROTO_WIRE_H
#define LOOM_PROTO_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loom.pb-c.h"
#include "proto/frame.h"
#include "proto/tuple.h"

/* Name of an envelope case ("register_job", ...), "unset" or "unknown". */
const char *wire_type_name(Loom__Envelope__BodyCase c);

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

/*
 * Error codes <-> -errno, one table for both ends: BAD_REQUEST -EINVAL,
 * BAD_VERSION -EPROTONOSUPPORT, UNKNOWN_TYPE -EBADMSG, EXISTS -EEXIST,
 * NOT_FOUND -ENOENT, CYCLE -ELOOP, FINISHED -EALREADY, WRONG_ROLE -EPERM,
 * NOT_READY -ENOTCONN, LIMIT -ENOSPC, INTERNAL -EIO, UNAVAILABLE -ESHUTDOWN,
 * DENIED -EACCES.
 * OK is 0; an unknown code is -EPROTO; an unlisted errno is INTERNAL.
 */
int wire_error_to_errno(Loom__ErrorCode code);
Loom__ErrorCode wire_errno_to_error(int neg_errno);
const char *wire_error_name(Loom__ErrorCode code);

/*
 * Converts from the wire form. Returns 0, or -EINVAL when an address is not
 * 4 or 16 bytes, the two families differ, a port is above 65535 or the
 * protocol above 255.
 */
int wire_tuple_from_pb(const Loom__FiveTuple *pb, struct wire_tuple *ret);

/* Fills pb (and its two address buffers, borrowed from t) from t. */
void wire_tuple_to_pb(const struct wire_tuple *t, Loom__FiveTuple *pb);

#endif
