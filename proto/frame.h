/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto/frame: the framing of Loom's protocol without its messages, for the
 * code that moves frames but does not read them (loomd's server loop, the
 * agent's and libloom's transports). No protobuf-c here: what a frame's
 * body means is wire.h's, and only the rpc_*.c files read it.
 *
 * A frame is a 4-byte big-endian length n (1 <= n <= the receiver's maximum)
 * followed by n bytes of body. The length is never trusted beyond the
 * maximum. Nothing here logs; errors are -errno (EMSGSIZE: length out of
 * range, ETIMEDOUT, EPIPE: peer closed).
 */
#ifndef LOOM_PROTO_FRAME_H
#define LOOM_PROTO_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define WIRE_VERSION_MIN       1u
#define WIRE_VERSION_MAX       1u
#define WIRE_HDR_BYTES         4u
#define WIRE_MAX_FRAME_DEFAULT (4u << 20)

/*
 * Reads the length of a frame from its header. Returns 0 with *ret_len, or
 * -EMSGSIZE when the length is 0 or above max_frame.
 */
int wire_hdr_parse(const uint8_t hdr[WIRE_HDR_BYTES], uint32_t max_frame, uint32_t *ret_len);

/* Writes the header of a frame whose body is len bytes. */
void wire_hdr_put(uint8_t hdr[WIRE_HDR_BYTES], uint32_t len);

/* Writes/reads exactly len bytes with a deadline; 0 or -errno. */
int wire_write_all(int fd, const void *buf, size_t len, int timeout_ms);
int wire_read_all(int fd, void *buf, size_t len, int timeout_ms);

/*
 * Blocking read of one whole frame from a stream socket; timeout_ms bounds
 * the whole call (< 0: no bound). Returns 0 with its body in *ret_body (the
 * caller frees it) and its length in *ret_len, or -errno: -EMSGSIZE (a
 * length of 0 or above max_frame), -ENOMEM, -ETIMEDOUT, -EPIPE (the peer
 * closed before a whole frame).
 */
int wire_recv_frame(int fd, uint32_t max_frame, int timeout_ms, uint8_t **ret_body,
		    uint32_t *ret_len);

#endif
