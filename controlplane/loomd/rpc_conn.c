/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A connection's frames (rpc.h): the body of each frame the server's loop
 * takes off a connection becomes a loom.Envelope here; Hello and heartbeats
 * are answered here, every other request goes to the handlers of the
 * connection's role (rpc_framework.c, rpc_agent.c). Envelopes going back
 * are packed straight into the connection's output (loomd_rpc_send()).
 */
#include "controlplane/loomd/rpc_wire.h"

#include <errno.h>
#include <event2/bufferevent.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "controlplane/loomd/sched.h"
#include "controlplane/loomd/tenants.h"

static void pack_envelope(const void *ctx, uint8_t *body)
{
	loom__envelope__pack(ctx, body);
}

void loomd_rpc_send(struct loomd_conn *c, const Loom__Envelope *env)
{
	loomd_conn_send(c, wire_type_name(env->body_case), loom__envelope__get_packed_size(env),
			pack_envelope, env);
}

void loomd_rpc_send_now(struct loomd_conn *c, const Loom__Envelope *env)
{
	loomd_conn_send_now(c, wire_type_name(env->body_case), loom__envelope__get_packed_size(env),
			    pack_envelope, env);
}

static void send_hello_reply(struct loomd_conn *c, uint64_t seq, int r, const char *msg)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__HelloReply hr = LOOM__HELLO_REPLY__INIT;
	Loom__Error e = LOOM__ERROR__INIT;

	env.seq = seq;
	env.body_case = LOOM__ENVELOPE__BODY_HELLO_REPLY;
	env.hello_reply = &hr;
	e.code = wire_errno_to_error(r);
	e.message = (char *)(msg ? msg : "");
	hr.error = &e;
	hr.version = c->version;
	hr.classes = loomd_sched_classes(c->srv->sched);
	hr.controller_id = c->srv->controller_id;
	loomd_rpc_send_now(c, &env);
}

static void handle_hello(struct loomd_conn *c, const Loom__Envelope *env)
{
	const Loom__Hello *h = env->hello;
	struct loom_err err = {{0}};
	uint32_t lo = h->version_min, hi = h->version_max;
	int r;

	if (c->role != LOOMD_ROLE_NONE) {
		loom_err_set(&err, EINVAL, "a second hello on one connection");
		loomd_rpc_reply(c, env->seq, -EINVAL, &err, 0);
		return;
	}
	if (hi < lo || hi < WIRE_VERSION_MIN || lo > WIRE_VERSION_MAX) {
		char msg[160];

		snprintf(msg, sizeof(msg),
			 "no protocol version in common: the client speaks %u..%u, loomd %u..%u",
			 lo, hi, WIRE_VERSION_MIN, WIRE_VERSION_MAX);
		log_info("%s: %s", c->peer, msg);
		send_hello_reply(c, env->seq, -EPROTONOSUPPORT, msg);
		loomd_conn_close(c);
		return;
	}
	c->version = hi < WIRE_VERSION_MAX ? hi : WIRE_VERSION_MAX;
	snprintf(c->name, sizeof(c->name), "%s", h->name ? h->name : "");
	switch (h->role) {
	case LOOM__ROLE__FRAMEWORK:
		r = loomd_conn_auth_framework(c, h->token, &err);
		if (r < 0) {
			log_info("%s: framework '%s' refused: %s", c->peer, c->name,
				 loom_err_str(&err));
			send_hello_reply(c, env->seq, r, loom_err_str(&err));
			loomd_conn_close(c);
			return;
		}
		c->role = LOOMD_ROLE_FRAMEWORK;
		c->srv->nframeworks++;
		if (c->bev)
			bufferevent_set_timeouts(c->bev, NULL, NULL);
		send_hello_reply(c, env->seq, 0, NULL);
		log_debug("%s: framework '%s' connected (tenant %s)", c->peer, c->name,
			  c->srv->tenants[c->tenant].name);
		return;
	case LOOM__ROLE__AGENT:
		r = loomd_agent_hello(c, h, &err);
		if (r < 0) {
			log_info("%s: agent refused: %s", c->peer, loom_err_str(&err));
			send_hello_reply(c, env->seq, r, loom_err_str(&err));
			loomd_conn_close(c);
			return;
		}
		send_hello_reply(c, env->seq, 0, NULL);
		loomd_server_schedule_pass(c->srv);
		return;
	default:
		send_hello_reply(c, env->seq, -EINVAL, "hello: role must be FRAMEWORK or AGENT");
		loomd_conn_close(c);
		return;
	}
}

static void dispatch(struct loomd_conn *c, const Loom__Envelope *env)
{
	struct loom_err err = {{0}};

	c->srv->st.requests++;
	if (env->body_case == LOOM__ENVELOPE__BODY_HELLO) {
		handle_hello(c, env);
		return;
	}
	if (env->body_case == LOOM__ENVELOPE__BODY__NOT_SET) {
		loom_err_set(&err, EBADMSG, "message type %s is not one loomd knows (protocol %u)",
			     "unset or unknown", c->version ? c->version : WIRE_VERSION_MAX);
		loomd_rpc_reply(c, env->seq, -EBADMSG, &err, 0);
		return;
	}
	if (env->body_case == LOOM__ENVELOPE__BODY_HEARTBEAT) {
		Loom__Envelope out = LOOM__ENVELOPE__INIT;
		Loom__Heartbeat hb = LOOM__HEARTBEAT__INIT;

		hb.time_ns = loomd_server_now_ns(c->srv);
		out.seq = env->seq;
		out.body_case = LOOM__ENVELOPE__BODY_HEARTBEAT;
		out.heartbeat = &hb;
		loomd_rpc_send_now(c, &out);
		return;
	}
	switch (c->role) {
	case LOOMD_ROLE_NONE:
		loom_err_set(&err, ENOTCONN, "%s before hello", wire_type_name(env->body_case));
		loomd_rpc_reply(c, env->seq, -ENOTCONN, &err, 0);
		return;
	case LOOMD_ROLE_FRAMEWORK:
		loomd_rpc_framework(c, env);
		return;
	case LOOMD_ROLE_AGENT:
		loomd_rpc_agent(c, env);
		return;
	}
}

int loomd_rpc_frame(struct loomd_conn *c, const uint8_t *body, size_t len)
{
	Loom__Envelope *env = wire_decode(body, len);

	if (!env)
		return -EBADMSG;
	dispatch(c, env);
	wire_free(env);
	return 0;
}
