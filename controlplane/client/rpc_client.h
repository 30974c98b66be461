/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/client/rpc_client: libloom's requests and loomd's answers in
 * Loom's own types (not installed, not exported from libloom.so).
 * rpc_client.c turns the caller's structs (loom.h) into protobuf-c
 * envelopes and encodes them as frames, and decodes loomd's frames into a
 * struct loom_client_reply: protobuf-c stops there, and client.c keeps the
 * connection, the lock and the deadlines, and moves bytes only.
 *
 * A request is converted once (loom_client_rpc_*_new(); it borrows the
 * caller's strings and addresses, so it lives within the API call that
 * made it) and framed once per attempt with that attempt's seq
 * (loom_client_rpc_frame()). Nothing here keeps state between calls, reads
 * the clock or does I/O.
 */
#ifndef LOOM_CONTROLPLANE_CLIENT_RPC_CLIENT_H
#define LOOM_CONTROLPLANE_CLIENT_RPC_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controlplane/client/loom.h"

#define LOOM_CLIENT_HIDDEN __attribute__((visibility("hidden")))

/* Bytes of a thread's last error message (loom_client_strerror()), NUL included. */
#define LOOM_CLIENT_ERR_MAX 512

/* One request, converted and ready to frame. Opaque. */
struct loom_client_msg;

/*
 * Makes a request: Hello as a framework (name, and token when not NULL);
 * RegisterJob (extend: of coflows added to a registered job); AnnounceFlows of n flows; CoflowDone, JobDone or Unregister
 * of one id. The arguments are as the API checked them (loom.h; a tuple of
 * family 0 is none). Returns 0 with *ret (free with
 * loom_client_rpc_free()), or -ENOMEM.
 */
LOOM_CLIENT_HIDDEN int loom_client_rpc_hello_new(const char *name, const char *token,
						 struct loom_client_msg **ret);
LOOM_CLIENT_HIDDEN int loom_client_rpc_register_new(const struct loom_client_job *job, bool extend,
						    struct loom_client_msg **ret);
LOOM_CLIENT_HIDDEN int loom_client_rpc_announce_new(const struct loom_client_announce *flows,
						    size_t n, struct loom_client_msg **ret);
LOOM_CLIENT_HIDDEN int loom_client_rpc_coflow_done_new(uint64_t coflow_id,
						       struct loom_client_msg **ret);
LOOM_CLIENT_HIDDEN int loom_client_rpc_job_done_new(uint64_t job_id, struct loom_client_msg **ret);
LOOM_CLIENT_HIDDEN int loom_client_rpc_unregister_new(uint64_t job_id,
						      struct loom_client_msg **ret);

/* Frees m (NULL is fine). Returns NULL. */
LOOM_CLIENT_HIDDEN struct loom_client_msg *loom_client_rpc_free(struct loom_client_msg *m);

/*
 * Encodes m with seq as one frame (proto/frame.h) of at most
 * WIRE_MAX_FRAME_DEFAULT bytes of body. Returns 0 with *ret_frame (the
 * caller frees it) of *ret_len bytes, or -EMSGSIZE (too large;
 * loom_client_rpc_size() says how large) or -ENOMEM.
 */
LOOM_CLIENT_HIDDEN int loom_client_rpc_frame(struct loom_client_msg *m, uint64_t seq,
					     uint8_t **ret_frame, size_t *ret_len);

/* The body's size in bytes of m as last framed (with its seq). */
LOOM_CLIENT_HIDDEN size_t loom_client_rpc_size(const struct loom_client_msg *m);

/* What an answer from loomd is. */
enum loom_client_reply_kind {
	LOOM_CLIENT_REPLY_OTHER = 0, /* anything else: a protocol error where an answer is due */
	LOOM_CLIENT_REPLY_HELLO,     /* HelloReply */
	LOOM_CLIENT_REPLY_REPLY,     /* Reply */
};

/* An answer from loomd in our form. */
struct loom_client_reply {
	enum loom_client_reply_kind kind;
	uint64_t seq;
	const char *type; /* its message type's name ("reply", "hello_reply", ...; static) */
	/*
	 * 0: accepted; else the refusal as -errno (loom.h's table; a code this
	 * library does not know is -EPROTO; UNAVAILABLE is -ESHUTDOWN), its
	 * code's name in error_name (static: "limit", "unknown"...) and
	 * loomd's words, possibly empty, in message.
	 */
	int error;
	const char *error_name;
	char message[LOOM_CLIENT_ERR_MAX];
	uint32_t version;  /* LOOM_CLIENT_REPLY_HELLO: the version loomd chose */
	uint32_t accepted; /* LOOM_CLIENT_REPLY_REPLY: flows taken before the first refusal */
};

/*
 * Decodes a frame's body (without its header; borrowed) into *ret. Returns
 * 0, or -EBADMSG when the bytes are not a loom.Envelope.
 */
LOOM_CLIENT_HIDDEN int loom_client_rpc_decode(const uint8_t *body, size_t len,
					      struct loom_client_reply *ret);

#endif
