/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for dataplane/rpc_loomd, the agent's edge of the wire: each
 * encoder's frame decoded again with proto/wire (Hello with its enforcer and
 * addresses, Resync, TableAck, FlowStats of IPv4 and IPv6 flows, Heartbeat;
 * a FlowStats over the frame limit refused); loomd's messages decoded into
 * ours (a full table and a delta, applied to a dp_table; HelloReply and
 * Reply with and without an error, an unknown error code; a kind the agent
 * ignores); and the refusals: bytes that are not an Envelope, and tables
 * with a malformed tuple (a port or protocol out of range, addresses of
 * different or bad lengths, a flow without a tuple), which keep their
 * version and nothing else.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dataplane/rpc_loomd.h"
#include "dataplane/table.h"
#include "proto/wire.h"
#include "tests/unit/wire_frame.h"

/* ---- helpers -------------------------------------------------------------------------------- */

/* Packs env as a frame body and decodes it with dp_rpc_msg_decode(). */
static int decode_env(const Loom__Envelope *env, struct dp_rpc_msg *ret)
{
	size_t n;
	uint8_t *body = wire_frame_pack(env, &n);
	int r = dp_rpc_msg_decode(body, n, ret);

	free(body);
	return r;
}

static struct wire_tuple tup4(uint8_t last_src, uint8_t last_dst, uint16_t sport, uint16_t dport)
{
	struct wire_tuple t = {.family = 4, .protocol = 6, .src_port = sport, .dst_port = dport};

	t.src[0] = t.dst[0] = 10;
	t.src[3] = last_src;
	t.dst[3] = last_dst;
	return t;
}

static struct wire_tuple tup6(uint8_t last_src, uint8_t last_dst, uint16_t sport, uint16_t dport)
{
	struct wire_tuple t = {.family = 6, .protocol = 17, .src_port = sport, .dst_port = dport};

	t.src[0] = t.dst[0] = 0xfd;
	t.src[15] = last_src;
	t.dst[15] = last_dst;
	return t;
}

/* ---- agent -> loomd ------------------------------------------------------------------------- */

static void test_hello(void **state)
{
	const struct {
		const char *name;
		Loom__Enforcer want;
	} enforcers[] = {
		{"null", LOOM__ENFORCER__ENFORCER_NULL},
		{"dpdk", LOOM__ENFORCER__ENFORCER_DPDK},
		{"tc", LOOM__ENFORCER__ENFORCER_TC},
		{"other", LOOM__ENFORCER__ENFORCER_NULL},
	};
	struct dp_agent_config cfg;

	(void)state;
	dp_agent_config_default(&cfg);
	cfg.host_id = 7;
	cfg.link_bps = 25000000000ULL;
	cfg.classes = 4;
	cfg.naddrs = 2;
	cfg.addr_family[0] = 4;
	memcpy(cfg.addrs[0], (const uint8_t[4]){192, 0, 2, 7}, 4);
	cfg.addr_family[1] = 6;
	memset(cfg.addrs[1], 0, 16);
	cfg.addrs[1][0] = 0x20;
	cfg.addrs[1][1] = 0x01;
	cfg.addrs[1][15] = 7;
	for (size_t i = 0; i < sizeof(enforcers) / sizeof(enforcers[0]); i++) {
		Loom__Envelope *env;
		uint8_t *frame = NULL;
		size_t len = 0;
		const Loom__Hello *h;

		snprintf(cfg.enforcer, sizeof(cfg.enforcer), "%s", enforcers[i].name);
		assert_int_equal(dp_rpc_hello_encode(&cfg, "loom-agent[1]", 41 + i, &frame, &len),
				 0);
		env = wire_frame_unframe(frame, len);
		assert_int_equal(env->seq, 41 + i);
		assert_int_equal(env->body_case, LOOM__ENVELOPE__BODY_HELLO);
		h = env->hello;
		assert_int_equal(h->version_min, WIRE_VERSION_MIN);
		assert_int_equal(h->version_max, WIRE_VERSION_MAX);
		assert_int_equal(h->role, LOOM__ROLE__AGENT);
		assert_string_equal(h->name, "loom-agent[1]");
		assert_int_equal(h->host_id, 7);
		assert_int_equal(h->link_bps, 25000000000ULL);
		assert_int_equal(h->classes, 4);
		assert_int_equal(h->enforcer, enforcers[i].want);
		assert_int_equal(h->n_addresses, 2);
		assert_int_equal(h->addresses[0].len, 4);
		assert_memory_equal(h->addresses[0].data, cfg.addrs[0], 4);
		assert_int_equal(h->addresses[1].len, 16);
		assert_memory_equal(h->addresses[1].data, cfg.addrs[1], 16);
		assert_string_equal(h->token, "");
		wire_free(env);
	}
}

static void test_small_kinds(void **state)
{
	Loom__Envelope *env;
	uint8_t *frame = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(dp_rpc_resync_encode(3, &frame, &len), 0);
	env = wire_frame_unframe(frame, len);
	assert_int_equal(env->seq, 3);
	assert_int_equal(env->body_case, LOOM__ENVELOPE__BODY_RESYNC);
	wire_free(env);

	assert_int_equal(dp_rpc_ack_encode(4, 1234567890123ULL, &frame, &len), 0);
	env = wire_frame_unframe(frame, len);
	assert_int_equal(env->seq, 4);
	assert_int_equal(env->body_case, LOOM__ENVELOPE__BODY_TABLE_ACK);
	assert_int_equal(env->table_ack->version, 1234567890123ULL);
	wire_free(env);

	assert_int_equal(dp_rpc_heartbeat_encode(5, 1700000000000000000ULL, &frame, &len), 0);
	env = wire_frame_unframe(frame, len);
	assert_int_equal(env->seq, 5);
	assert_int_equal(env->body_case, LOOM__ENVELOPE__BODY_HEARTBEAT);
	assert_int_equal(env->heartbeat->time_ns, 1700000000000000000ULL);
	wire_free(env);
}

static void test_stats(void **state)
{
	const struct dp_flow_stat in[] = {
		{.tuple = tup4(1, 2, 40000, 5001), .bytes = 1500, .done = false},
		{.tuple = tup6(3, 4, 40001, 5002), .bytes = UINT64_MAX, .done = true},
		{.tuple = tup4(5, 6, 0, 65535), .bytes = 0, .done = true},
	};
	size_t n = sizeof(in) / sizeof(in[0]);
	Loom__Envelope *env;
	uint8_t *frame = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(dp_rpc_stats_encode(9, in, n, &frame, &len), 0);
	env = wire_frame_unframe(frame, len);
	assert_int_equal(env->seq, 9);
	assert_int_equal(env->body_case, LOOM__ENVELOPE__BODY_FLOW_STATS);
	assert_int_equal(env->flow_stats->n_flows, n);
	assert_int_equal(env->flow_stats->unknown_bytes, 0);
	for (size_t i = 0; i < n; i++) {
		const Loom__FlowStat *st = env->flow_stats->flows[i];
		struct wire_tuple t;

		assert_non_null(st->tuple);
		assert_int_equal(wire_tuple_from_pb(st->tuple, &t), 0);
		assert_true(wire_tuple_eq(&t, &in[i].tuple));
		assert_int_equal(st->bytes_sent, in[i].bytes);
		assert_int_equal(st->done, in[i].done);
	}
	wire_free(env);

	/* none: an empty report is still a FlowStats */
	assert_int_equal(dp_rpc_stats_encode(10, NULL, 0, &frame, &len), 0);
	env = wire_frame_unframe(frame, len);
	assert_int_equal(env->body_case, LOOM__ENVELOPE__BODY_FLOW_STATS);
	assert_int_equal(env->flow_stats->n_flows, 0);
	wire_free(env);
}

/* A report larger than a frame is refused, and nothing is handed back. */
static void test_stats_too_large(void **state)
{
	size_t n = WIRE_MAX_FRAME_DEFAULT / 32; /* an IPv6 flow takes ~50 bytes */
	struct dp_flow_stat *st = calloc(n, sizeof(*st));
	uint8_t *frame = NULL;
	size_t len = 0;

	(void)state;
	assert_non_null(st);
	for (size_t i = 0; i < n; i++)
		st[i] = (struct dp_flow_stat){.tuple = tup6(1, 2, (uint16_t)i, 80),
					      .bytes = UINT64_MAX};
	assert_int_equal(dp_rpc_stats_encode(1, st, n, &frame, &len), -EMSGSIZE);
	assert_null(frame);
	free(st);
}

/* ---- loomd -> agent ------------------------------------------------------------------------- */

/* A PriorityTable's parts, built on the stack by table_init(). */
struct pb_table {
	Loom__PriorityTable t;
	Loom__FlowEntry fe[2], *fep[2];
	Loom__FiveTuple ft[3], *rmp[1];
	Loom__CoflowClass cc[2], *ccp[2];
	uint64_t rmc[2];
	struct wire_tuple tuples[3];
};

/* Two flows (IPv4, IPv6), two classes, one removed flow, two removed coflows. */
static void table_init(struct pb_table *p, bool full)
{
	memset(p, 0, sizeof(*p));
	loom__priority_table__init(&p->t);
	p->tuples[0] = tup4(1, 2, 1000, 80);
	p->tuples[1] = tup6(3, 4, 1001, 443);
	p->tuples[2] = tup4(9, 9, 9, 9);
	for (int i = 0; i < 3; i++)
		wire_tuple_to_pb(&p->tuples[i], &p->ft[i]);
	for (int i = 0; i < 2; i++) {
		loom__flow_entry__init(&p->fe[i]);
		p->fe[i].tuple = &p->ft[i];
		p->fe[i].coflow_id = 100 + (uint64_t)i;
		p->fep[i] = &p->fe[i];
		loom__coflow_class__init(&p->cc[i]);
		p->cc[i].coflow_id = 100 + (uint64_t)i;
		p->cc[i].class_ = 2 + (uint32_t)i;
		p->cc[i].rate_bps = i ? 1000000000ULL : 0;
		p->ccp[i] = &p->cc[i];
	}
	p->rmp[0] = &p->ft[2];
	p->rmc[0] = 7;
	p->rmc[1] = 8;
	p->t.version = full ? 5 : 6;
	p->t.base_version = full ? 0 : 5;
	p->t.full = full;
	p->t.n_flows = 2;
	p->t.flows = p->fep;
	p->t.n_classes = 2;
	p->t.classes = p->ccp;
	if (!full) {
		p->t.n_removed_flows = 1;
		p->t.removed_flows = p->rmp;
		p->t.n_removed_coflows = 2;
		p->t.removed_coflows = p->rmc;
	}
	p->t.default_class = 3;
	p->t.sent_ns = 42;
}

static void test_table(void **state)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	struct dp_table *tab = dp_table_new(4);
	struct pb_table p;
	struct dp_rpc_msg m;
	uint64_t coflow = 0;
	bool known = false;

	(void)state;
	assert_non_null(tab);
	env.seq = 77;
	env.body_case = LOOM__ENVELOPE__BODY_TABLE;
	env.table = &p.t;

	table_init(&p, true);
	assert_int_equal(decode_env(&env, &m), 0);
	assert_int_equal(m.kind, DP_RPC_TABLE);
	assert_int_equal(m.seq, 77);
	assert_int_equal(m.error, 0);
	assert_int_equal(m.table.version, 5);
	assert_true(m.table.full);
	assert_int_equal(m.table.default_class, 3);
	assert_int_equal(m.table.nflows, 2);
	assert_int_equal(m.table.nclasses, 2);
	for (int i = 0; i < 2; i++) {
		assert_true(wire_tuple_eq(&m.table.flows[i].tuple, &p.tuples[i]));
		assert_int_equal(m.table.flows[i].coflow_id, 100 + i);
		assert_int_equal(m.table.classes[i].coflow_id, 100 + i);
		assert_int_equal(m.table.classes[i].cls, 2 + i);
		assert_int_equal(m.table.classes[i].rate_bps, i ? 1000000000ULL : 0);
	}
	assert_int_equal(m.table.nremoved_flows, 0);
	assert_int_equal(m.table.nremoved_coflows, 0);
	assert_int_equal(dp_table_apply(tab, &m.table), 0);
	dp_rpc_msg_release(&m);
	assert_int_equal(m.table.nflows, 0);
	assert_null(m.table.flows);
	assert_int_equal(dp_table_lookup(tab, &p.tuples[1], &coflow, &known), 3);
	assert_true(known);
	assert_int_equal(coflow, 101);

	/* a delta on it, with removals */
	table_init(&p, false);
	assert_int_equal(decode_env(&env, &m), 0);
	assert_int_equal(m.error, 0);
	assert_false(m.table.full);
	assert_int_equal(m.table.version, 6);
	assert_int_equal(m.table.base_version, 5);
	assert_int_equal(m.table.nremoved_flows, 1);
	assert_true(wire_tuple_eq(&m.table.removed_flows[0], &p.tuples[2]));
	assert_int_equal(m.table.nremoved_coflows, 2);
	assert_int_equal(m.table.removed_coflows[0], 7);
	assert_int_equal(m.table.removed_coflows[1], 8);
	assert_int_equal(dp_table_apply(tab, &m.table), 0);
	assert_int_equal(dp_table_version(tab), 6);
	dp_rpc_msg_release(&m);
	dp_table_free(tab);
}

/* Each malformed tuple makes the table an error that keeps its version only. */
static void test_table_refusals(void **state)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	struct pb_table p;
	struct dp_rpc_msg m;
	uint8_t five[5] = {1, 2, 3, 4, 5};

	(void)state;
	env.body_case = LOOM__ENVELOPE__BODY_TABLE;
	env.table = &p.t;
	for (int k = 0; k < 7; k++) {
		table_init(&p, false);
		switch (k) {
		case 0:
			p.ft[0].src_port = 65536;
			break;
		case 1:
			p.ft[1].dst_port = UINT32_MAX;
			break;
		case 2:
			p.ft[0].protocol = 256;
			break;
		case 3:
			p.ft[1].dst_addr.len = 4; /* families differ */
			break;
		case 4:
			p.fe[1].tuple = NULL;
			break;
		case 5:
			p.ft[2].src_addr.data = five; /* a removed flow */
			p.ft[2].src_addr.len = 5;
			p.ft[2].dst_addr.data = five;
			p.ft[2].dst_addr.len = 5;
			break;
		case 6:
			p.ft[2].src_addr.len = 0;
			p.ft[2].dst_addr.len = 0;
			break;
		}
		assert_int_equal(decode_env(&env, &m), 0);
		assert_int_equal(m.kind, DP_RPC_TABLE);
		assert_int_equal(m.error, -EINVAL);
		assert_int_equal(m.table.version, 6);
		assert_int_equal(m.table.nflows, 0);
		assert_null(m.table.flows);
		assert_null(m.table.classes);
		assert_null(m.table.removed_flows);
		assert_null(m.table.removed_coflows);
		dp_rpc_msg_release(&m);
	}
}

static void test_replies(void **state)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__HelloReply hr = LOOM__HELLO_REPLY__INIT;
	Loom__Reply rep = LOOM__REPLY__INIT;
	Loom__Heartbeat hb = LOOM__HEARTBEAT__INIT;
	Loom__Error e = LOOM__ERROR__INIT;
	struct dp_rpc_msg m;

	(void)state;
	/* accepted */
	env.seq = 1;
	env.body_case = LOOM__ENVELOPE__BODY_HELLO_REPLY;
	env.hello_reply = &hr;
	hr.version = 1;
	hr.classes = 8;
	hr.controller_id = 0xfeedfacecafeULL;
	assert_int_equal(decode_env(&env, &m), 0);
	assert_int_equal(m.kind, DP_RPC_HELLO_REPLY);
	assert_int_equal(m.seq, 1);
	assert_int_equal(m.error, 0);
	assert_string_equal(m.message, "");
	assert_int_equal(m.controller_id, 0xfeedfacecafeULL);
	dp_rpc_msg_release(&m);
	/* an error of code OK is none */
	hr.error = &e;
	e.message = "fine";
	assert_int_equal(decode_env(&env, &m), 0);
	assert_int_equal(m.error, 0);
	dp_rpc_msg_release(&m);
	/* refused */
	e.code = LOOM__ERROR_CODE__WRONG_ROLE;
	e.message = "host 3: the client certificate does not name host-3";
	assert_int_equal(decode_env(&env, &m), 0);
	assert_int_equal(m.error, -EPERM);
	assert_string_equal(m.message, e.message);
	dp_rpc_msg_release(&m);
	/* a code this agent does not know */
	e.code = (Loom__ErrorCode)99;
	assert_int_equal(decode_env(&env, &m), 0);
	assert_int_equal(m.error, -EPROTO);
	dp_rpc_msg_release(&m);

	/* Reply */
	env.seq = 2;
	env.body_case = LOOM__ENVELOPE__BODY_REPLY;
	env.reply = &rep;
	assert_int_equal(decode_env(&env, &m), 0);
	assert_int_equal(m.kind, DP_RPC_REPLY);
	assert_int_equal(m.error, 0);
	dp_rpc_msg_release(&m);
	rep.error = &e;
	e.code = LOOM__ERROR_CODE__BAD_REQUEST;
	e.message = "flow_stats: no";
	assert_int_equal(decode_env(&env, &m), 0);
	assert_int_equal(m.error, -EINVAL);
	assert_string_equal(m.message, "flow_stats: no");
	dp_rpc_msg_release(&m);

	/* what the agent does not read */
	env.seq = 3;
	env.body_case = LOOM__ENVELOPE__BODY_HEARTBEAT;
	env.heartbeat = &hb;
	assert_int_equal(decode_env(&env, &m), 0);
	assert_int_equal(m.kind, DP_RPC_OTHER);
	assert_int_equal(m.seq, 3);
	dp_rpc_msg_release(&m);
}

static void test_not_an_envelope(void **state)
{
	const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
	struct dp_rpc_msg m;

	(void)state;
	memset(&m, 0x5a, sizeof(m));
	assert_int_equal(dp_rpc_msg_decode(garbage, sizeof(garbage), &m), -EBADMSG);
	assert_int_equal(m.kind, DP_RPC_OTHER);
	assert_null(m.table.flows);
	dp_rpc_msg_release(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hello),   cmocka_unit_test(test_small_kinds),
		cmocka_unit_test(test_stats),   cmocka_unit_test(test_stats_too_large),
		cmocka_unit_test(test_table),   cmocka_unit_test(test_table_refusals),
		cmocka_unit_test(test_replies), cmocka_unit_test(test_not_an_envelope),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
