/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for controlplane/client/rpc_client, libloom's edge of the
 * wire: each request (Hello with and without a token, RegisterJob with
 * flows with and without tuples, IPv4 and IPv6, by address, and edges;
 * AnnounceFlows; CoflowDone, JobDone, Unregister) framed and decoded again
 * with proto/wire, and framed again with another seq; a request over the
 * frame limit refused with its size; loomd's answers decoded into ours
 * (HelloReply and Reply, accepted or refused, with and without words, an
 * unknown code, UNAVAILABLE, a message longer than the error buffer, a kind
 * that is no answer) and bytes that are not an Envelope refused.
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

#include "controlplane/client/rpc_client.h"
#include "proto/wire.h"
#include "tests/unit/wire_frame.h"

/* ---- helpers -------------------------------------------------------------------------------- */

/* Frames m with seq and decodes the frame again; the caller frees the result. */
static Loom__Envelope *reframe(struct loom_client_msg *m, uint64_t seq)
{
	Loom__Envelope *env;
	uint8_t *frame = NULL;
	size_t len = 0;

	assert_int_equal(loom_client_rpc_frame(m, seq, &frame, &len), 0);
	env = wire_frame_unframe(frame, len);
	assert_int_equal(len - WIRE_HDR_BYTES, loom_client_rpc_size(m));
	assert_int_equal(env->seq, seq);
	return env;
}

/* Packs env as a frame body and decodes it with loom_client_rpc_decode(). */
static int decode_env(const Loom__Envelope *env, struct loom_client_reply *ret)
{
	size_t n;
	uint8_t *body = wire_frame_pack(env, &n);
	int r = loom_client_rpc_decode(body, n, ret);

	free(body);
	return r;
}

static struct loom_client_tuple tup(uint8_t family, uint8_t last, uint16_t sport)
{
	struct loom_client_tuple t = {
		.family = family, .protocol = 6, .src_port = sport, .dst_port = 7000};

	t.src[0] = t.dst[0] = family == 4 ? 10 : 0xfd;
	t.src[family == 4 ? 3 : 15] = last;
	t.dst[family == 4 ? 3 : 15] = (uint8_t)(last + 1);
	return t;
}

/* The wire's tuple pb says t (addresses 4 or 16 bytes as its family says). */
static void assert_tuple(const Loom__FiveTuple *pb, const struct loom_client_tuple *t)
{
	size_t alen = t->family == 4 ? 4 : 16;

	assert_non_null(pb);
	assert_int_equal(pb->src_addr.len, alen);
	assert_int_equal(pb->dst_addr.len, alen);
	assert_memory_equal(pb->src_addr.data, t->src, alen);
	assert_memory_equal(pb->dst_addr.data, t->dst, alen);
	assert_int_equal(pb->src_port, t->src_port);
	assert_int_equal(pb->dst_port, t->dst_port);
	assert_int_equal(pb->protocol, t->protocol);
}

/* ---- requests ------------------------------------------------------------------------------- */

static void test_hello(void **state)
{
	struct loom_client_msg *m = NULL;
	Loom__Envelope *env;

	(void)state;
	assert_int_equal(loom_client_rpc_hello_new("spark-driver-17", NULL, &m), 0);
	env = reframe(m, 1);
	assert_int_equal(env->body_case, LOOM__ENVELOPE__BODY_HELLO);
	assert_int_equal(env->hello->version_min, WIRE_VERSION_MIN);
	assert_int_equal(env->hello->version_max, WIRE_VERSION_MAX);
	assert_int_equal(env->hello->role, LOOM__ROLE__FRAMEWORK);
	assert_string_equal(env->hello->name, "spark-driver-17");
	assert_string_equal(env->hello->token, "");
	assert_int_equal(env->hello->host_id, 0);
	assert_int_equal(env->hello->n_addresses, 0);
	wire_free(env);
	loom_client_rpc_free(m);

	assert_int_equal(loom_client_rpc_hello_new("x", "s3cret", &m), 0);
	env = reframe(m, 2);
	assert_string_equal(env->hello->token, "s3cret");
	wire_free(env);
	assert_null(loom_client_rpc_free(m));
	assert_null(loom_client_rpc_free(NULL));
}

static void test_register(void **state)
{
	const struct loom_client_flow f0[] = {
		{.src_host = 1, .dst_host = 2, .bytes = 1000000},
		{.bytes = 5, .by_address = true, .tuple = tup(4, 1, 40000)},
	};
	const struct loom_client_flow f1[] = {
		{.src_host = 3, .dst_host = 0, .bytes = UINT64_MAX, .tuple = tup(6, 9, 40001)},
	};
	const struct loom_client_coflow cfs[] = {
		{.id = 10, .release_offset_ns = 0, .flows = f0, .n_flows = 2},
		{.id = 11,
		 .release_offset_ns = 250000000,
		 .expected_flows = 4,
		 .flows = f1,
		 .n_flows = 1},
		{.id = 12}, /* open: no flows */
	};
	const struct loom_client_edge edges[] = {
		{.parent = 10, .child = 11, .delay_ns = 1000},
		{.parent = 11, .child = 12},
	};
	struct loom_client_job job = {.id = 7,
				      .weight = 2.5,
				      .name = "tpch-q3",
				      .coflows = cfs,
				      .n_coflows = 3,
				      .edges = edges,
				      .n_edges = 2};
	struct loom_client_msg *m = NULL;
	const Loom__RegisterJob *rj;
	Loom__Envelope *env;

	(void)state;
	assert_int_equal(loom_client_rpc_register_new(&job, false, &m), 0);
	env = reframe(m, 5);
	assert_int_equal(env->body_case, LOOM__ENVELOPE__BODY_REGISTER_JOB);
	rj = env->register_job;
	assert_int_equal(rj->job_id, 7);
	assert_true(rj->weight == 2.5);
	assert_string_equal(rj->name, "tpch-q3");
	assert_string_equal(rj->tenant, "");
	assert_int_equal(rj->n_coflows, 3);
	assert_int_equal(rj->coflows[0]->id, 10);
	assert_int_equal(rj->coflows[0]->n_flows, 2);
	assert_int_equal(rj->coflows[0]->flows[0]->src_host, 1);
	assert_int_equal(rj->coflows[0]->flows[0]->dst_host, 2);
	assert_int_equal(rj->coflows[0]->flows[0]->bytes, 1000000);
	assert_false(rj->coflows[0]->flows[0]->by_address);
	assert_null(rj->coflows[0]->flows[0]->tuple); /* family 0: none */
	assert_true(rj->coflows[0]->flows[1]->by_address);
	assert_tuple(rj->coflows[0]->flows[1]->tuple, &f0[1].tuple);
	assert_int_equal(rj->coflows[1]->id, 11);
	assert_int_equal(rj->coflows[1]->release_offset_ns, 250000000);
	assert_int_equal(rj->coflows[1]->expected_flows, 4);
	assert_int_equal(rj->coflows[1]->n_flows, 1);
	assert_int_equal(rj->coflows[1]->flows[0]->bytes, UINT64_MAX);
	assert_tuple(rj->coflows[1]->flows[0]->tuple, &f1[0].tuple);
	assert_int_equal(rj->coflows[2]->id, 12);
	assert_int_equal(rj->coflows[2]->n_flows, 0);
	assert_int_equal(rj->n_edges, 2);
	assert_int_equal(rj->edges[0]->parent, 10);
	assert_int_equal(rj->edges[0]->child, 11);
	assert_int_equal(rj->edges[0]->delay_ns, 1000);
	assert_int_equal(rj->edges[1]->parent, 11);
	assert_int_equal(rj->edges[1]->child, 12);
	assert_false(rj->extend);
	wire_free(env);
	/* a second attempt: the same request with its own seq */
	env = reframe(m, 6);
	assert_int_equal(env->register_job->n_coflows, 3);
	wire_free(env);
	loom_client_rpc_free(m);

	/* nothing but an id; no name */
	job = (struct loom_client_job){.id = 8};
	assert_int_equal(loom_client_rpc_register_new(&job, false, &m), 0);
	env = reframe(m, 7);
	assert_int_equal(env->register_job->job_id, 8);
	assert_string_equal(env->register_job->name, "");
	assert_int_equal(env->register_job->n_coflows, 0);
	assert_int_equal(env->register_job->n_edges, 0);
	wire_free(env);
	loom_client_rpc_free(m);

	/* an extension: the same message with extend set */
	job = (struct loom_client_job){.id = 7, .coflows = cfs + 2, .n_coflows = 1};
	assert_int_equal(loom_client_rpc_register_new(&job, true, &m), 0);
	env = reframe(m, 8);
	assert_int_equal(env->register_job->job_id, 7);
	assert_true(env->register_job->extend);
	assert_int_equal(env->register_job->n_coflows, 1);
	assert_int_equal(env->register_job->coflows[0]->id, 12);
	wire_free(env);
	loom_client_rpc_free(m);
}

static void test_announce(void **state)
{
	const struct loom_client_announce a[] = {
		{.coflow_id = 11, .flow = {.src_host = 1, .dst_host = 2, .tuple = tup(4, 5, 1)}},
		{.coflow_id = 12, .flow = {.bytes = 99, .by_address = true, .tuple = tup(6, 6, 2)}},
	};
	struct loom_client_msg *m = NULL;
	Loom__Envelope *env;

	(void)state;
	assert_int_equal(loom_client_rpc_announce_new(a, 2, &m), 0);
	env = reframe(m, 9);
	assert_int_equal(env->body_case, LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS);
	assert_int_equal(env->announce_flows->n_flows, 2);
	for (int i = 0; i < 2; i++) {
		const Loom__AnnounceFlow *af = env->announce_flows->flows[i];

		assert_int_equal(af->coflow_id, a[i].coflow_id);
		assert_int_equal(af->flow->src_host, a[i].flow.src_host);
		assert_int_equal(af->flow->dst_host, a[i].flow.dst_host);
		assert_int_equal(af->flow->bytes, a[i].flow.bytes);
		assert_int_equal(af->flow->by_address, a[i].flow.by_address);
		assert_tuple(af->flow->tuple, &a[i].flow.tuple);
	}
	wire_free(env);
	loom_client_rpc_free(m);
}

static void test_ids(void **state)
{
	struct loom_client_msg *m = NULL;
	Loom__Envelope *env;

	(void)state;
	assert_int_equal(loom_client_rpc_coflow_done_new(UINT64_MAX, &m), 0);
	env = reframe(m, 1);
	assert_int_equal(env->body_case, LOOM__ENVELOPE__BODY_COFLOW_DONE);
	assert_int_equal(env->coflow_done->coflow_id, UINT64_MAX);
	wire_free(env);
	loom_client_rpc_free(m);

	assert_int_equal(loom_client_rpc_job_done_new(42, &m), 0);
	env = reframe(m, 2);
	assert_int_equal(env->body_case, LOOM__ENVELOPE__BODY_JOB_DONE);
	assert_int_equal(env->job_done->job_id, 42);
	wire_free(env);
	loom_client_rpc_free(m);

	assert_int_equal(loom_client_rpc_unregister_new(43, &m), 0);
	env = reframe(m, 3);
	assert_int_equal(env->body_case, LOOM__ENVELOPE__BODY_UNREGISTER);
	assert_int_equal(env->unregister->job_id, 43);
	wire_free(env);
	loom_client_rpc_free(m);
}

/* Over the frame limit: refused, with the size the message names. */
static void test_too_large(void **state)
{
	size_t n = WIRE_MAX_FRAME_DEFAULT / 32; /* an IPv6 announce takes ~60 bytes */
	struct loom_client_announce *a = calloc(n, sizeof(*a));
	struct loom_client_msg *m = NULL;
	uint8_t *frame = NULL;
	size_t len = 0;

	(void)state;
	assert_non_null(a);
	for (size_t i = 0; i < n; i++)
		a[i] = (struct loom_client_announce){.coflow_id = UINT64_MAX,
						     .flow = {.bytes = UINT64_MAX,
							      .tuple = tup(6, 1, (uint16_t)i)}};
	assert_int_equal(loom_client_rpc_announce_new(a, n, &m), 0);
	assert_int_equal(loom_client_rpc_frame(m, 1, &frame, &len), -EMSGSIZE);
	assert_null(frame);
	assert_true(loom_client_rpc_size(m) > WIRE_MAX_FRAME_DEFAULT);
	loom_client_rpc_free(m);
	free(a);
}

/* ---- answers -------------------------------------------------------------------------------- */

static void test_hello_reply(void **state)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__HelloReply hr = LOOM__HELLO_REPLY__INIT;
	Loom__Error e = LOOM__ERROR__INIT;
	struct loom_client_reply r;

	(void)state;
	env.seq = 1;
	env.body_case = LOOM__ENVELOPE__BODY_HELLO_REPLY;
	env.hello_reply = &hr;
	hr.version = 1;
	assert_int_equal(decode_env(&env, &r), 0);
	assert_int_equal(r.kind, LOOM_CLIENT_REPLY_HELLO);
	assert_int_equal(r.seq, 1);
	assert_string_equal(r.type, "hello_reply");
	assert_int_equal(r.error, 0);
	assert_int_equal(r.version, 1);
	/* an error of code OK is none */
	hr.error = &e;
	assert_int_equal(decode_env(&env, &r), 0);
	assert_int_equal(r.error, 0);
	/* refused, in loomd's words */
	e.code = LOOM__ERROR_CODE__DENIED;
	e.message = "hello: the token is not in loomd's tokens file";
	assert_int_equal(decode_env(&env, &r), 0);
	assert_int_equal(r.error, -EACCES);
	assert_string_equal(r.error_name, "denied");
	assert_string_equal(r.message, e.message);
	/* refused without words */
	e.code = LOOM__ERROR_CODE__BAD_VERSION;
	e.message = "";
	assert_int_equal(decode_env(&env, &r), 0);
	assert_int_equal(r.error, -EPROTONOSUPPORT);
	assert_string_equal(r.error_name, "bad_version");
	assert_string_equal(r.message, "");
	/* a code this library does not know */
	e.code = (Loom__ErrorCode)1000;
	assert_int_equal(decode_env(&env, &r), 0);
	assert_int_equal(r.error, -EPROTO);
	assert_string_equal(r.error_name, "unknown");
}

static void test_reply(void **state)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Reply rep = LOOM__REPLY__INIT;
	Loom__Error e = LOOM__ERROR__INIT;
	struct loom_client_reply r;
	char long_msg[LOOM_CLIENT_ERR_MAX * 2];

	(void)state;
	env.seq = 77;
	env.body_case = LOOM__ENVELOPE__BODY_REPLY;
	env.reply = &rep;
	rep.accepted = 3;
	assert_int_equal(decode_env(&env, &r), 0);
	assert_int_equal(r.kind, LOOM_CLIENT_REPLY_REPLY);
	assert_int_equal(r.seq, 77);
	assert_string_equal(r.type, "reply");
	assert_int_equal(r.error, 0);
	assert_int_equal(r.accepted, 3);
	/* refused after three flows */
	rep.error = &e;
	e.code = LOOM__ERROR_CODE__LIMIT;
	e.message = "flow 3 of 5: over max_flows";
	assert_int_equal(decode_env(&env, &r), 0);
	assert_int_equal(r.error, -ENOSPC);
	assert_int_equal(r.accepted, 3);
	assert_string_equal(r.message, "flow 3 of 5: over max_flows");
	/* UNAVAILABLE: the client drops the connection on -ESHUTDOWN */
	e.code = LOOM__ERROR_CODE__UNAVAILABLE;
	assert_int_equal(decode_env(&env, &r), 0);
	assert_int_equal(r.error, -ESHUTDOWN);
	/* words longer than the error buffer are cut at its size */
	memset(long_msg, 'x', sizeof(long_msg) - 1);
	long_msg[sizeof(long_msg) - 1] = 0;
	e.message = long_msg;
	assert_int_equal(decode_env(&env, &r), 0);
	assert_int_equal(strlen(r.message), LOOM_CLIENT_ERR_MAX - 1);
}

static void test_other_and_garbage(void **state)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__PriorityTable t = LOOM__PRIORITY_TABLE__INIT;
	const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
	struct loom_client_reply r;

	(void)state;
	env.seq = 4;
	env.body_case = LOOM__ENVELOPE__BODY_TABLE;
	env.table = &t;
	assert_int_equal(decode_env(&env, &r), 0);
	assert_int_equal(r.kind, LOOM_CLIENT_REPLY_OTHER);
	assert_int_equal(r.seq, 4);
	assert_string_equal(r.type, "table");
	assert_int_equal(r.error, 0);
	r.seq = 99;
	assert_int_equal(loom_client_rpc_decode(garbage, sizeof(garbage), &r), -EBADMSG);
	assert_int_equal(r.seq, 99); /* untouched */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hello),     cmocka_unit_test(test_register),
		cmocka_unit_test(test_announce),  cmocka_unit_test(test_ids),
		cmocka_unit_test(test_too_large), cmocka_unit_test(test_hello_reply),
		cmocka_unit_test(test_reply),     cmocka_unit_test(test_other_and_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
