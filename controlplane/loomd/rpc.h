/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/loomd/rpc: the requests of loomd's two kinds of peers, as the
 * server's loop (server.h) and the tests see them: frames in, registry
 * changes and replies out. rpc_conn.c reads a connection's frames (Hello,
 * then by role), rpc_framework.c converts frameworks' requests (live, and
 * replayed from the journal) into registry changes and replies, rpc_agent.c
 * keeps agents' sessions and pushes each agent its table. protobuf-c types
 * stop in those files; what they share is rpc_wire.h, and nothing here
 * names a protobuf-c type.
 */
#ifndef LOOM_CONTROLPLANE_LOOMD_RPC_H
#define LOOM_CONTROLPLANE_LOOMD_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/errors.h"
#include "controlplane/loomd/server.h"

/*
 * rpc_conn.c: decodes one frame's body (len bytes, borrowed; decoded before
 * anything is handled) from c and handles it: Hello, a heartbeat, or the
 * request of c's role. Returns 0, or -EBADMSG when the bytes are not a
 * loom.Envelope (nothing handled: the caller drops c).
 */
int loomd_rpc_frame(struct loomd_conn *c, const uint8_t *body, size_t len);

/* rpc_framework.c: framework requests, live and from the journal (journal = false). */
int loomd_rpc_coflow_done(struct loomd_server *s, uint64_t coflow_id, uint64_t now_ns, bool journal,
			  struct loom_err *err);
int loomd_rpc_job_done(struct loomd_server *s, uint64_t job_id, uint64_t now_ns, bool journal,
		       struct loom_err *err);
int loomd_rpc_unregister(struct loomd_server *s, uint64_t job_id, bool journal,
			 struct loom_err *err);
/* Replays the journal into the registry. 0 or -errno with err. */
int loomd_rpc_replay(struct loomd_server *s, struct loom_err *err);

/* rpc_agent.c: agents' sessions and tables. */
void loomd_agent_gone(struct loomd_conn *c);
/* After a pass: diff every agent's table against the decision and push deltas. */
void loomd_agents_push(struct loomd_server *s);

#endif
