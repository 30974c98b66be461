/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dataplane/rpc_loomd: the agent's messages to and from loomd, in Loom's own
 * types. rpc_loomd.c encodes what the agent says (Hello, Resync, TableAck,
 * FlowStats, Heartbeat) into whole frames (proto/frame.h: header and body)
 * and decodes what loomd says (HelloReply, PriorityTable, Reply) from a
 * frame's body; protobuf-c stops there, and agent.c moves bytes only.
 *
 * Encoders return 0 with a new frame in *ret_frame (the caller frees it) of
 * *ret_len bytes, or -ENOMEM, or -EMSGSIZE when the frame would be larger
 * than WIRE_MAX_FRAME_DEFAULT. Nothing here logs.
 */
#ifndef LOOM_DATAPLANE_RPC_LOOMD_H
#define LOOM_DATAPLANE_RPC_LOOMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/errors.h"
#include "dataplane/agent.h"
#include "dataplane/table.h"
#include "proto/tuple.h"

/* One flow's counters since the last report (FlowStats). */
struct dp_flow_stat {
	struct wire_tuple tuple;
	uint64_t bytes; /* sent since the previous report */
	bool done;      /* the flow has ended */
};

/*
 * Hello as cfg's agent (role AGENT, protocol versions WIRE_VERSION_MIN..MAX,
 * host, link rate, classes, enforcer by name, addresses), named name (for
 * loomd's logs; borrowed).
 */
int dp_rpc_hello_encode(const struct dp_agent_config *cfg, const char *name, uint64_t seq,
			uint8_t **ret_frame, size_t *ret_len);

/* Resync: the agent asks for a full table. */
int dp_rpc_resync_encode(uint64_t seq, uint8_t **ret_frame, size_t *ret_len);

/* TableAck: the table version now in force. */
int dp_rpc_ack_encode(uint64_t seq, uint64_t version, uint8_t **ret_frame, size_t *ret_len);

/* FlowStats: n flows' counters (stats may be NULL when n is 0; borrowed). */
int dp_rpc_stats_encode(uint64_t seq, const struct dp_flow_stat *stats, size_t n,
			uint8_t **ret_frame, size_t *ret_len);

/* Heartbeat at the agent's wall clock time_ns. */
int dp_rpc_heartbeat_encode(uint64_t seq, uint64_t time_ns, uint8_t **ret_frame, size_t *ret_len);

/* What a message from loomd is; the agent ignores DP_RPC_OTHER. */
enum dp_rpc_kind {
	DP_RPC_OTHER = 0,
	DP_RPC_HELLO_REPLY,
	DP_RPC_TABLE,
	DP_RPC_REPLY,
};

/* A message from loomd in our form (dp_rpc_msg_decode). */
struct dp_rpc_msg {
	enum dp_rpc_kind kind;
	uint64_t seq;
	/*
	 * DP_RPC_HELLO_REPLY, DP_RPC_REPLY: loomd's refusal as -errno (its error
	 * code through wire_error_to_errno(); 0: none), in message its words.
	 * DP_RPC_TABLE: 0, or why the table is not one (-EINVAL: a malformed
	 * tuple; -ENOMEM); table then holds its version only.
	 */
	int error;
	char message[LOOM_ERR_MSG_MAX];
	uint64_t controller_id; /* DP_RPC_HELLO_REPLY */
	/* DP_RPC_TABLE: the update, its arrays owned by the message */
	struct dp_update table;
};

/*
 * Decodes a frame's body (without its header; borrowed) into *ret. Returns 0
 * (release *ret with dp_rpc_msg_release() then), or -EBADMSG when the bytes
 * are not a loom.Envelope (*ret is then empty). A table that does not
 * convert is not an error here: it comes back with ret->error set.
 */
int dp_rpc_msg_decode(const uint8_t *body, size_t len, struct dp_rpc_msg *ret);

/* Frees what m holds (the table's arrays) and empties it. */
void dp_rpc_msg_release(struct dp_rpc_msg *m);

#endif
