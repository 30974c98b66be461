/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/loomd/rpc: the requests of loomd's two kinds of peers, where
 * protobuf-c types stop: rpc_framework.c converts frameworks' requests
 * (live, and replayed from the journal) into registry changes and replies;
 * rpc_agent.c keeps agents' sessions and pushes each agent its table.
 * Called by the server's loop (server.h) on a connection after Hello.
 */
#ifndef LOOM_CONTROLPLANE_LOOMD_RPC_H
#define LOOM_CONTROLPLANE_LOOMD_RPC_H

#include <stdbool.h>
#include <stdint.h>

#include "common/errors.h"
#include "controlplane/loomd/server.h"
#include "proto/wire.h"

/*
 * rpc_framework.c: framework requests, live and from the journal. Flows
 * placed by address are resolved into m (hosts written back) before it is
 * journaled.
 */
int cp_rpc_register_job(struct cp_server *s, Loom__RegisterJob *m, uint64_t now_ns, bool journal,
			struct loom_err *err);
int cp_rpc_announce(struct cp_server *s, Loom__AnnounceFlow *a, uint64_t now_ns, bool journal,
		    struct loom_err *err);
int cp_rpc_coflow_done(struct cp_server *s, uint64_t coflow_id, uint64_t now_ns, bool journal,
		       struct loom_err *err);
int cp_rpc_job_done(struct cp_server *s, uint64_t job_id, uint64_t now_ns, bool journal,
		    struct loom_err *err);
int cp_rpc_unregister(struct cp_server *s, uint64_t job_id, bool journal, struct loom_err *err);
/* Handles one framework envelope on c (after Hello). */
void cp_rpc_framework(struct cp_conn *c, const Loom__Envelope *env);
/* Replays the journal into the registry. 0 or -errno with err. */
int cp_rpc_replay(struct cp_server *s, struct loom_err *err);
/* Fills a Reply envelope: error code from r (0 = OK) and err's text. */
void cp_rpc_reply(struct cp_conn *c, uint64_t seq, int r, const struct loom_err *err,
		  uint32_t accepted);

/* rpc_agent.c: agents' sessions and tables. */
int cp_agent_hello(struct cp_conn *c, const Loom__Hello *h, struct loom_err *err);
void cp_agent_gone(struct cp_conn *c);
void cp_rpc_agent(struct cp_conn *c, const Loom__Envelope *env);
/* After a pass: diff every agent's table against the decision and push deltas. */
void cp_agents_push(struct cp_server *s);

#endif
