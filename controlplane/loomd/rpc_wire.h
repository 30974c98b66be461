/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/loomd/rpc_wire: what loomd's rpc_*.c files share in
 * protobuf-c types, and only they include (scripts/check-layering.py):
 * the handlers that take wire messages, and sending an envelope on a
 * connection (packed straight into its output by loomd_conn_send()).
 */
#ifndef LOOM_CONTROLPLANE_LOOMD_RPC_WIRE_H
#define LOOM_CONTROLPLANE_LOOMD_RPC_WIRE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/errors.h"
#include "controlplane/loomd/rpc.h"
#include "controlplane/loomd/server.h"
#include "proto/wire.h"

/*
 * rpc_conn.c: queues env on c as a reply (held until the journal commits),
 * or sends it now (tables, hello replies, heartbeats); see loomd_conn_send().
 */
void loomd_rpc_send(struct loomd_conn *c, const Loom__Envelope *env);
void loomd_rpc_send_now(struct loomd_conn *c, const Loom__Envelope *env);

/*
 * rpc_framework.c: framework requests, live and from the journal. Flows
 * placed by address are resolved into m (hosts written back) before it is
 * journaled.
 */
int loomd_rpc_register_job(struct loomd_server *s, Loom__RegisterJob *m, uint64_t now_ns,
			   bool journal, struct loom_err *err);
int loomd_rpc_announce(struct loomd_server *s, Loom__AnnounceFlow *a, uint64_t now_ns, bool journal,
		       struct loom_err *err);
/* Handles one framework envelope on c (after Hello). */
void loomd_rpc_framework(struct loomd_conn *c, const Loom__Envelope *env);
/* Fills a Reply envelope: error code from r (0 = OK) and err's text. */
void loomd_rpc_reply(struct loomd_conn *c, uint64_t seq, int r, const struct loom_err *err,
		     uint32_t accepted);

/* rpc_agent.c: an agent's Hello (0, or -errno with err: refused), then its messages. */
int loomd_agent_hello(struct loomd_conn *c, const Loom__Hello *h, struct loom_err *err);
void loomd_rpc_agent(struct loomd_conn *c, const Loom__Envelope *env);

#endif
