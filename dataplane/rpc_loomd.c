/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent's side of the wire (rpc_loomd.h): its messages to loomd become
 * protobuf-c envelopes here, and loomd's become ours (a PriorityTable a
 * struct dp_update). protobuf-c stops here.
 */
#include "dataplane/rpc_loomd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

/* Encodes env as one frame of at most WIRE_MAX_FRAME_DEFAULT bytes. */
static int encode(uint64_t seq, Loom__Envelope *env, uint8_t **ret_frame, size_t *ret_len)
{
	env->seq = seq;
	return wire_encode(env, WIRE_MAX_FRAME_DEFAULT, ret_frame, ret_len);
}

static Loom__Enforcer enforcer_to_pb(const char *name)
{
	if (!strcmp(name, "dpdk"))
		return LOOM__ENFORCER__ENFORCER_DPDK;
	if (!strcmp(name, "tc"))
		return LOOM__ENFORCER__ENFORCER_TC;
	return LOOM__ENFORCER__ENFORCER_NULL;
}

int dp_rpc_hello_encode(const struct dp_agent_config *cfg, const char *name, uint64_t seq,
			uint8_t **ret_frame, size_t *ret_len)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Hello h = LOOM__HELLO__INIT;
	ProtobufCBinaryData addrs[DP_MAX_ADDRS];
	uint32_t naddrs = cfg->naddrs < DP_MAX_ADDRS ? cfg->naddrs : DP_MAX_ADDRS;

	for (uint32_t i = 0; i < naddrs; i++) {
		addrs[i].data = (uint8_t *)cfg->addrs[i];
		addrs[i].len = cfg->addr_family[i] == 4 ? 4 : 16;
	}
	h.version_min = WIRE_VERSION_MIN;
	h.version_max = WIRE_VERSION_MAX;
	h.role = LOOM__ROLE__AGENT;
	h.name = (char *)name;
	h.host_id = cfg->host_id;
	h.link_bps = cfg->link_bps;
	h.classes = cfg->classes;
	h.enforcer = enforcer_to_pb(cfg->enforcer);
	h.n_addresses = naddrs;
	h.addresses = addrs;
	env.body_case = LOOM__ENVELOPE__BODY_HELLO;
	env.hello = &h;
	return encode(seq, &env, ret_frame, ret_len);
}

int dp_rpc_resync_encode(uint64_t seq, uint8_t **ret_frame, size_t *ret_len)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Resync rs = LOOM__RESYNC__INIT;

	env.body_case = LOOM__ENVELOPE__BODY_RESYNC;
	env.resync = &rs;
	return encode(seq, &env, ret_frame, ret_len);
}

int dp_rpc_ack_encode(uint64_t seq, uint64_t version, uint8_t **ret_frame, size_t *ret_len)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__TableAck ack = LOOM__TABLE_ACK__INIT;

	ack.version = version;
	env.body_case = LOOM__ENVELOPE__BODY_TABLE_ACK;
	env.table_ack = &ack;
	return encode(seq, &env, ret_frame, ret_len);
}

int dp_rpc_stats_encode(uint64_t seq, const struct dp_flow_stat *stats, size_t n,
			uint8_t **ret_frame, size_t *ret_len)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__FlowStats fs = LOOM__FLOW_STATS__INIT;
	Loom__FlowStat *st = calloc(n + 1, sizeof(*st));
	Loom__FlowStat **stp = calloc(n + 1, sizeof(*stp));
	Loom__FiveTuple *pt = calloc(n + 1, sizeof(*pt));
	int r = -ENOMEM;

	if (!st || !stp || !pt)
		goto out;
	for (size_t i = 0; i < n; i++) {
		loom__flow_stat__init(&st[i]);
		wire_tuple_to_pb(&stats[i].tuple, &pt[i]);
		st[i].tuple = &pt[i];
		st[i].bytes_sent = stats[i].bytes;
		st[i].done = stats[i].done;
		stp[i] = &st[i];
	}
	fs.n_flows = n;
	fs.flows = stp;
	env.body_case = LOOM__ENVELOPE__BODY_FLOW_STATS;
	env.flow_stats = &fs;
	r = encode(seq, &env, ret_frame, ret_len);
out:
	free(st);
	free(stp);
	free(pt);
	return r;
}

int dp_rpc_heartbeat_encode(uint64_t seq, uint64_t time_ns, uint8_t **ret_frame, size_t *ret_len)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Heartbeat hb = LOOM__HEARTBEAT__INIT;

	hb.time_ns = time_ns;
	env.body_case = LOOM__ENVELOPE__BODY_HEARTBEAT;
	env.heartbeat = &hb;
	return encode(seq, &env, ret_frame, ret_len);
}

/* ---- from loomd -------------------------------------------------------------------------- */

static void update_release(struct dp_update *u)
{
	free((void *)u->flows);
	free((void *)u->classes);
	free((void *)u->removed_flows);
	free((void *)u->removed_coflows);
	memset(u, 0, sizeof(*u));
}

/*
 * PriorityTable -> dp_update: the arrays are allocated into *ret (freed by
 * update_release). 0 or -EINVAL (a malformed tuple) / -ENOMEM.
 */
static int update_from_pb(const Loom__PriorityTable *pb, struct dp_update *ret)
{
	struct dp_flow_entry *flows = calloc(pb->n_flows + 1, sizeof(*flows));
	struct dp_class_entry *classes = calloc(pb->n_classes + 1, sizeof(*classes));
	struct wire_tuple *rm = calloc(pb->n_removed_flows + 1, sizeof(*rm));
	uint64_t *rmc = calloc(pb->n_removed_coflows + 1, sizeof(*rmc));
	struct dp_update u = {0};
	int r = -ENOMEM;

	if (!flows || !classes || !rm || !rmc)
		goto fail;
	r = -EINVAL;
	for (size_t i = 0; i < pb->n_flows; i++) {
		if (!pb->flows[i]->tuple ||
		    wire_tuple_from_pb(pb->flows[i]->tuple, &flows[i].tuple) < 0)
			goto fail;
		flows[i].coflow_id = pb->flows[i]->coflow_id;
	}
	for (size_t i = 0; i < pb->n_classes; i++) {
		classes[i].coflow_id = pb->classes[i]->coflow_id;
		classes[i].cls = pb->classes[i]->class_;
		classes[i].rate_bps = pb->classes[i]->rate_bps;
	}
	for (size_t i = 0; i < pb->n_removed_flows; i++)
		if (wire_tuple_from_pb(pb->removed_flows[i], &rm[i]) < 0)
			goto fail;
	if (pb->n_removed_coflows)
		memcpy(rmc, pb->removed_coflows, pb->n_removed_coflows * sizeof(*rmc));
	u.version = pb->version;
	u.base_version = pb->base_version;
	u.full = pb->full;
	u.default_class = pb->default_class;
	u.flows = flows;
	u.nflows = pb->n_flows;
	u.classes = classes;
	u.nclasses = pb->n_classes;
	u.removed_flows = rm;
	u.nremoved_flows = pb->n_removed_flows;
	u.removed_coflows = rmc;
	u.nremoved_coflows = pb->n_removed_coflows;
	*ret = u;
	return 0;
fail:
	free(flows);
	free(classes);
	free(rm);
	free(rmc);
	return r;
}

/* Sets m's error and message from a wire Error (NULL or OK: none). */
static void error_from_pb(const Loom__Error *e, struct dp_rpc_msg *m)
{
	if (!e || !e->code)
		return;
	m->error = wire_error_to_errno(e->code);
	snprintf(m->message, sizeof(m->message), "%s", e->message ? e->message : "");
}

int dp_rpc_msg_decode(const uint8_t *body, size_t len, struct dp_rpc_msg *ret)
{
	Loom__Envelope *env = wire_decode(body, len);

	memset(ret, 0, sizeof(*ret));
	if (!env)
		return -EBADMSG;
	ret->seq = env->seq;
	switch (env->body_case) {
	case LOOM__ENVELOPE__BODY_HELLO_REPLY:
		ret->kind = DP_RPC_HELLO_REPLY;
		error_from_pb(env->hello_reply->error, ret);
		ret->controller_id = env->hello_reply->controller_id;
		break;
	case LOOM__ENVELOPE__BODY_TABLE:
		ret->kind = DP_RPC_TABLE;
		ret->error = update_from_pb(env->table, &ret->table);
		if (ret->error < 0)
			ret->table.version = env->table->version;
		break;
	case LOOM__ENVELOPE__BODY_REPLY:
		ret->kind = DP_RPC_REPLY;
		error_from_pb(env->reply->error, ret);
		break;
	default:
		ret->kind = DP_RPC_OTHER;
		break;
	}
	wire_free(env);
	return 0;
}

void dp_rpc_msg_release(struct dp_rpc_msg *m)
{
	update_release(&m->table);
	memset(m, 0, sizeof(*m));
}
