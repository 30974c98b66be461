/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for proto/wire: frame header bounds, encode/decode round trips
 * of several envelope kinds, refusals (oversize, empty, garbage), blocking
 * I/O over a socketpair (a frame split across writes, a peer closing
 * mid-frame, timeouts), 5-tuple conversions and their text form, and the
 * error code <-> errno table in both directions.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto/wire.h"

/* ---- helpers -------------------------------------------------------------------------------- */

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void make_pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

/* Encodes env and decodes its body again; the caller frees the result. */
static Loom__Envelope *round_trip(const Loom__Envelope *env)
{
	Loom__Envelope *out;
	uint8_t *buf = NULL;
	size_t len = 0;
	uint32_t n = 0;

	assert_int_equal(wire_encode(env, WIRE_MAX_FRAME_DEFAULT, &buf, &len), 0);
	assert_non_null(buf);
	assert_true(len > WIRE_HDR_BYTES);
	assert_int_equal(wire_hdr_parse(buf, WIRE_MAX_FRAME_DEFAULT, &n), 0);
	assert_int_equal(n, len - WIRE_HDR_BYTES);
	assert_int_equal(n, loom__envelope__get_packed_size(env));
	out = wire_decode(buf + WIRE_HDR_BYTES, n);
	free(buf);
	assert_non_null(out);
	return out;
}

static void tuple4(Loom__FiveTuple *pb, uint8_t *src, uint8_t *dst, uint32_t sport, uint32_t dport,
		   uint32_t proto)
{
	loom__five_tuple__init(pb);
	pb->src_addr.data = src;
	pb->src_addr.len = 4;
	pb->dst_addr.data = dst;
	pb->dst_addr.len = 4;
	pb->src_port = sport;
	pb->dst_port = dport;
	pb->protocol = proto;
}

/* ---- header ----------------------------------------------------------------------------------- */

static void test_hdr_bounds(void **state)
{
	const uint8_t zero[4] = {0, 0, 0, 0};
	const uint8_t one[4] = {0, 0, 0, 1};
	const uint8_t max[4] = {0, 0, 0x10, 0x00};  /* 4096 */
	const uint8_t over[4] = {0, 0, 0x10, 0x01}; /* 4097 */
	const uint8_t big_endian[4] = {0x01, 0x02, 0x03, 0x04};
	const uint8_t all[4] = {0xff, 0xff, 0xff, 0xff};
	uint32_t n = 7;

	(void)state;
	assert_int_equal(wire_hdr_parse(zero, 4096, &n), -EMSGSIZE);
	assert_int_equal(n, 7); /* untouched on failure */
	assert_int_equal(wire_hdr_parse(one, 4096, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(wire_hdr_parse(max, 4096, &n), 0);
	assert_int_equal(n, 4096);
	n = 7;
	assert_int_equal(wire_hdr_parse(over, 4096, &n), -EMSGSIZE);
	assert_int_equal(n, 7);
	assert_int_equal(wire_hdr_parse(big_endian, UINT32_MAX, &n), 0);
	assert_int_equal(n, 0x01020304u);
	assert_int_equal(wire_hdr_parse(big_endian, 0x01020303u, &n), -EMSGSIZE);
	assert_int_equal(wire_hdr_parse(all, UINT32_MAX, &n), 0);
	assert_int_equal(n, UINT32_MAX);
	assert_int_equal(wire_hdr_parse(one, 0, &n), -EMSGSIZE);
}

/* wire_hdr_put writes what wire_hdr_parse reads. */
static void test_hdr_put(void **state)
{
	const uint32_t lens[] = {1, 0xff, 0x100, 4096, 0x01020304u, UINT32_MAX};
	uint8_t hdr[WIRE_HDR_BYTES];
	uint32_t n = 0;

	(void)state;
	wire_hdr_put(hdr, 0x01020304u);
	assert_int_equal(hdr[0], 0x01);
	assert_int_equal(hdr[1], 0x02);
	assert_int_equal(hdr[2], 0x03);
	assert_int_equal(hdr[3], 0x04);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		wire_hdr_put(hdr, lens[i]);
		assert_int_equal(wire_hdr_parse(hdr, UINT32_MAX, &n), 0);
		assert_int_equal(n, lens[i]);
	}
	wire_hdr_put(hdr, 0);
	assert_int_equal(wire_hdr_parse(hdr, UINT32_MAX, &n), -EMSGSIZE);
}

/* ---- encode / decode ------------------------------------------------------------------------ */

static void test_round_trip_hello(void **state)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT, *out;
	Loom__Hello h = LOOM__HELLO__INIT;
	uint8_t a4[4] = {10, 0, 0, 3}, a6[16] = {0xfd, 0, [15] = 3};
	ProtobufCBinaryData addrs[2] = {{4, a4}, {16, a6}};

	(void)state;
	h.version_min = 1;
	h.version_max = 3;
	h.role = LOOM__ROLE__AGENT;
	h.name = "host3";
	h.host_id = 3;
	h.link_bps = 10000000000ULL;
	h.enforcer = LOOM__ENFORCER__ENFORCER_TC;
	h.classes = 8;
	h.n_addresses = 2;
	h.addresses = addrs;
	env.seq = 42;
	env.body_case = LOOM__ENVELOPE__BODY_HELLO;
	env.hello = &h;
	out = round_trip(&env);
	assert_int_equal(out->seq, 42);
	assert_int_equal(out->body_case, LOOM__ENVELOPE__BODY_HELLO);
	assert_string_equal(wire_type_name(out->body_case), "hello");
	assert_int_equal(out->hello->version_min, 1);
	assert_int_equal(out->hello->version_max, 3);
	assert_int_equal(out->hello->role, LOOM__ROLE__AGENT);
	assert_string_equal(out->hello->name, "host3");
	assert_int_equal(out->hello->host_id, 3);
	assert_int_equal(out->hello->link_bps, 10000000000ULL);
	assert_int_equal(out->hello->enforcer, LOOM__ENFORCER__ENFORCER_TC);
	assert_int_equal(out->hello->classes, 8);
	assert_int_equal(out->hello->n_addresses, 2);
	assert_int_equal(out->hello->addresses[0].len, 4);
	assert_memory_equal(out->hello->addresses[0].data, a4, 4);
	assert_int_equal(out->hello->addresses[1].len, 16);
	assert_memory_equal(out->hello->addresses[1].data, a6, 16);
	wire_free(out);
}

static void test_round_trip_register(void **state)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT, *out;
	Loom__RegisterJob rj = LOOM__REGISTER_JOB__INIT;
	Loom__CoflowSpec c1 = LOOM__COFLOW_SPEC__INIT, c2 = LOOM__COFLOW_SPEC__INIT;
	Loom__CoflowSpec *cs[2] = {&c1, &c2};
	Loom__FlowSpec f1 = LOOM__FLOW_SPEC__INIT, f2 = LOOM__FLOW_SPEC__INIT;
	Loom__FlowSpec *fs[2] = {&f1, &f2};
	Loom__FiveTuple t1;
	Loom__Edge e = LOOM__EDGE__INIT, *es[1] = {&e};
	uint8_t s[4] = {10, 0, 0, 1}, d[4] = {10, 0, 0, 2};

	(void)state;
	tuple4(&t1, s, d, 40000, 5201, 6);
	f1.src_host = 0;
	f1.dst_host = 1;
	f1.bytes = 1 << 20;
	f1.tuple = &t1;
	f2.src_host = 2;
	f2.dst_host = 3;
	f2.bytes = 0;
	c1.id = 100;
	c1.n_flows = 2;
	c1.flows = fs;
	c2.id = 101;
	c2.release_offset_ns = 5000;
	c2.expected_flows = 4;
	e.parent = 100;
	e.child = 101;
	e.delay_ns = 77;
	rj.job_id = 9;
	rj.weight = 2.5;
	rj.n_coflows = 2;
	rj.coflows = cs;
	rj.n_edges = 1;
	rj.edges = es;
	rj.name = "spark-17";
	env.seq = UINT64_MAX;
	env.body_case = LOOM__ENVELOPE__BODY_REGISTER_JOB;
	env.register_job = &rj;
	out = round_trip(&env);
	assert_true(out->seq == UINT64_MAX);
	assert_int_equal(out->body_case, LOOM__ENVELOPE__BODY_REGISTER_JOB);
	assert_int_equal(out->register_job->job_id, 9);
	assert_true(out->register_job->weight == 2.5);
	assert_string_equal(out->register_job->name, "spark-17");
	assert_int_equal(out->register_job->n_coflows, 2);
	assert_int_equal(out->register_job->coflows[0]->id, 100);
	assert_int_equal(out->register_job->coflows[0]->n_flows, 2);
	assert_int_equal(out->register_job->coflows[0]->flows[0]->bytes, 1 << 20);
	assert_non_null(out->register_job->coflows[0]->flows[0]->tuple);
	assert_int_equal(out->register_job->coflows[0]->flows[0]->tuple->src_port, 40000);
	assert_null(out->register_job->coflows[0]->flows[1]->tuple);
	assert_int_equal(out->register_job->coflows[0]->flows[1]->src_host, 2);
	assert_int_equal(out->register_job->coflows[1]->release_offset_ns, 5000);
	assert_int_equal(out->register_job->coflows[1]->expected_flows, 4);
	assert_int_equal(out->register_job->coflows[1]->n_flows, 0);
	assert_int_equal(out->register_job->n_edges, 1);
	assert_int_equal(out->register_job->edges[0]->parent, 100);
	assert_int_equal(out->register_job->edges[0]->child, 101);
	assert_int_equal(out->register_job->edges[0]->delay_ns, 77);
	wire_free(out);
}

static void test_round_trip_table_stats_reply(void **state)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT, *out;
	Loom__PriorityTable t = LOOM__PRIORITY_TABLE__INIT;
	Loom__FlowEntry fe = LOOM__FLOW_ENTRY__INIT, *fep[1] = {&fe};
	Loom__CoflowClass cc = LOOM__COFLOW_CLASS__INIT, *ccp[1] = {&cc};
	Loom__FiveTuple ft, rm, *rmp[1] = {&rm};
	uint64_t rmc[3] = {5, 6, 7};
	Loom__FlowStats st = LOOM__FLOW_STATS__INIT;
	Loom__FlowStat fs = LOOM__FLOW_STAT__INIT, *fsp[1] = {&fs};
	Loom__Reply rep = LOOM__REPLY__INIT;
	Loom__Error e = LOOM__ERROR__INIT;
	uint8_t s[4] = {1, 2, 3, 4}, d[4] = {5, 6, 7, 8};

	(void)state;
	tuple4(&ft, s, d, 1, 2, 17);
	tuple4(&rm, d, s, 2, 1, 6);
	fe.tuple = &ft;
	fe.coflow_id = 33;
	cc.coflow_id = 33;
	cc.class_ = 2;
	cc.rate_bps = 1000;
	t.version = 8;
	t.base_version = 7;
	t.n_flows = 1;
	t.flows = fep;
	t.n_classes = 1;
	t.classes = ccp;
	t.n_removed_flows = 1;
	t.removed_flows = rmp;
	t.n_removed_coflows = 3;
	t.removed_coflows = rmc;
	t.default_class = 7;
	t.sent_ns = 123456789;
	env.body_case = LOOM__ENVELOPE__BODY_TABLE;
	env.table = &t;
	out = round_trip(&env);
	assert_int_equal(out->body_case, LOOM__ENVELOPE__BODY_TABLE);
	assert_int_equal(out->table->version, 8);
	assert_int_equal(out->table->base_version, 7);
	assert_false(out->table->full);
	assert_int_equal(out->table->n_flows, 1);
	assert_int_equal(out->table->flows[0]->coflow_id, 33);
	assert_int_equal(out->table->flows[0]->tuple->protocol, 17);
	assert_int_equal(out->table->classes[0]->class_, 2);
	assert_int_equal(out->table->classes[0]->rate_bps, 1000);
	assert_int_equal(out->table->n_removed_flows, 1);
	assert_memory_equal(out->table->removed_flows[0]->src_addr.data, d, 4);
	assert_int_equal(out->table->n_removed_coflows, 3);
	assert_memory_equal(out->table->removed_coflows, rmc, sizeof(rmc));
	assert_int_equal(out->table->default_class, 7);
	assert_int_equal(out->table->sent_ns, 123456789);
	wire_free(out);

	fs.tuple = &ft;
	fs.bytes_sent = 1500;
	fs.done = true;
	st.n_flows = 1;
	st.flows = fsp;
	st.unknown_bytes = 99;
	env = (Loom__Envelope)LOOM__ENVELOPE__INIT;
	env.seq = 3;
	env.body_case = LOOM__ENVELOPE__BODY_FLOW_STATS;
	env.flow_stats = &st;
	out = round_trip(&env);
	assert_int_equal(out->body_case, LOOM__ENVELOPE__BODY_FLOW_STATS);
	assert_int_equal(out->flow_stats->n_flows, 1);
	assert_int_equal(out->flow_stats->flows[0]->bytes_sent, 1500);
	assert_true(out->flow_stats->flows[0]->done);
	assert_int_equal(out->flow_stats->unknown_bytes, 99);
	wire_free(out);

	e.code = LOOM__ERROR_CODE__CYCLE;
	e.message = "job 1: its coflows form a cycle";
	rep.error = &e;
	rep.accepted = 4;
	env = (Loom__Envelope)LOOM__ENVELOPE__INIT;
	env.seq = 5;
	env.body_case = LOOM__ENVELOPE__BODY_REPLY;
	env.reply = &rep;
	out = round_trip(&env);
	assert_int_equal(out->body_case, LOOM__ENVELOPE__BODY_REPLY);
	assert_int_equal(out->reply->accepted, 4);
	assert_int_equal(out->reply->error->code, LOOM__ERROR_CODE__CYCLE);
	assert_string_equal(out->reply->error->message, "job 1: its coflows form a cycle");
	assert_int_equal(wire_error_to_errno(out->reply->error->code), -ELOOP);
	wire_free(out);
}

static void test_round_trip_small_kinds(void **state)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT, *out;
	Loom__CoflowDone cd = LOOM__COFLOW_DONE__INIT;
	Loom__Resync rs = LOOM__RESYNC__INIT;
	Loom__Heartbeat hb = LOOM__HEARTBEAT__INIT;

	(void)state;
	cd.coflow_id = 77;
	env.seq = 1;
	env.body_case = LOOM__ENVELOPE__BODY_COFLOW_DONE;
	env.coflow_done = &cd;
	out = round_trip(&env);
	assert_int_equal(out->body_case, LOOM__ENVELOPE__BODY_COFLOW_DONE);
	assert_int_equal(out->coflow_done->coflow_id, 77);
	wire_free(out);

	/* An empty message body still names its case. */
	env = (Loom__Envelope)LOOM__ENVELOPE__INIT;
	env.body_case = LOOM__ENVELOPE__BODY_RESYNC;
	env.resync = &rs;
	out = round_trip(&env);
	assert_int_equal(out->seq, 0);
	assert_int_equal(out->body_case, LOOM__ENVELOPE__BODY_RESYNC);
	assert_non_null(out->resync);
	wire_free(out);

	hb.time_ns = 1ULL << 62;
	env = (Loom__Envelope)LOOM__ENVELOPE__INIT;
	env.seq = 2;
	env.body_case = LOOM__ENVELOPE__BODY_HEARTBEAT;
	env.heartbeat = &hb;
	out = round_trip(&env);
	assert_int_equal(out->heartbeat->time_ns, 1ULL << 62);
	wire_free(out);

	/* A seq alone is a valid frame whose case is unset. */
	env = (Loom__Envelope)LOOM__ENVELOPE__INIT;
	env.seq = 9;
	out = round_trip(&env);
	assert_int_equal(out->body_case, LOOM__ENVELOPE__BODY__NOT_SET);
	assert_string_equal(wire_type_name(out->body_case), "unset");
	wire_free(out);
}

static void test_encode_refusals(void **state)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Hello h = LOOM__HELLO__INIT;
	char name[200];
	uint8_t *buf = (uint8_t *)0x1;
	size_t len = 12345, n;

	(void)state;
	/* Nothing set packs to 0 bytes, which no frame may carry. */
	assert_int_equal(wire_encode(&env, WIRE_MAX_FRAME_DEFAULT, &buf, &len), -EMSGSIZE);
	assert_ptr_equal(buf, (uint8_t *)0x1);
	assert_int_equal(len, 12345);

	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	h.name = name;
	env.body_case = LOOM__ENVELOPE__BODY_HELLO;
	env.hello = &h;
	n = loom__envelope__get_packed_size(&env);
	assert_true(n > 199);
	assert_int_equal(wire_encode(&env, (uint32_t)n - 1, &buf, &len), -EMSGSIZE);
	assert_ptr_equal(buf, (uint8_t *)0x1);
	assert_int_equal(wire_encode(&env, (uint32_t)n, &buf, &len), 0);
	assert_int_equal(len, n + WIRE_HDR_BYTES);
	free(buf);
}

static void test_decode_refusals(void **state)
{
	/* field 1 with wire type 7 (no such type) */
	const uint8_t bad_type[] = {0x0f, 0x01};
	/* field 2 (hello), length 10, but 2 bytes follow */
	const uint8_t short_len[] = {0x12, 0x0a, 0x08, 0x01};
	/* a varint that never ends */
	const uint8_t long_varint[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
				       0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	/* field 20 (not in loom.Envelope), varint 5, then seq 3: kept as unknown */
	const uint8_t unknown_field[] = {0xa0, 0x01, 0x05, 0x08, 0x03};
	Loom__Envelope *env;

	(void)state;
	errno = 0;
	assert_null(wire_decode(bad_type, sizeof(bad_type)));
	assert_int_equal(errno, EBADMSG);
	errno = 0;
	assert_null(wire_decode(short_len, sizeof(short_len)));
	assert_int_equal(errno, EBADMSG);
	errno = 0;
	assert_null(wire_decode(long_varint, sizeof(long_varint)));
	assert_int_equal(errno, EBADMSG);
	env = wire_decode(unknown_field, sizeof(unknown_field));
	assert_non_null(env);
	assert_int_equal(env->seq, 3);
	assert_int_equal(env->body_case, LOOM__ENVELOPE__BODY__NOT_SET);
	wire_free(env);
	wire_free(NULL);
}

static void test_type_names(void **state)
{
	(void)state;
	assert_string_equal(wire_type_name(LOOM__ENVELOPE__BODY_REGISTER_JOB), "register_job");
	assert_string_equal(wire_type_name(LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS), "announce_flows");
	assert_string_equal(wire_type_name(LOOM__ENVELOPE__BODY_TABLE_ACK), "table_ack");
	assert_string_equal(wire_type_name(LOOM__ENVELOPE__BODY_HEARTBEAT), "heartbeat");
	assert_string_equal(wire_type_name((Loom__Envelope__BodyCase)99), "unknown");
}

/* ---- blocking I/O ----------------------------------------------------------------------------- */

static void test_send_recv(void **state)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT, *out = NULL;
	Loom__JobDone jd = LOOM__JOB_DONE__INIT;
	int sv[2];

	(void)state;
	make_pair(sv);
	jd.job_id = 5;
	env.seq = 11;
	env.body_case = LOOM__ENVELOPE__BODY_JOB_DONE;
	env.job_done = &jd;
	assert_int_equal(wire_send(sv[0], &env, WIRE_MAX_FRAME_DEFAULT, 1000), 0);
	env.seq = 12;
	jd.job_id = 6;
	assert_int_equal(wire_send(sv[0], &env, WIRE_MAX_FRAME_DEFAULT, -1), 0);
	assert_int_equal(wire_recv(sv[1], WIRE_MAX_FRAME_DEFAULT, 1000, &out), 0);
	assert_int_equal(out->seq, 11);
	assert_int_equal(out->job_done->job_id, 5);
	wire_free(out);
	assert_int_equal(wire_recv(sv[1], WIRE_MAX_FRAME_DEFAULT, -1, &out), 0);
	assert_int_equal(out->seq, 12);
	assert_int_equal(out->job_done->job_id, 6);
	wire_free(out);

	/* wire_send refuses what wire_encode refuses, and writes nothing */
	env = (Loom__Envelope)LOOM__ENVELOPE__INIT;
	assert_int_equal(wire_send(sv[0], &env, WIRE_MAX_FRAME_DEFAULT, 100), -EMSGSIZE);
	out = NULL;
	assert_int_equal(wire_recv(sv[1], WIRE_MAX_FRAME_DEFAULT, 50, &out), -ETIMEDOUT);
	assert_null(out);
	close(sv[0]);
	close(sv[1]);
}

/* wire_recv_frame hands back a frame's body as it is, without reading it. */
static void test_recv_frame(void **state)
{
	const uint8_t frame[] = {0, 0, 0, 3, 0xde, 0xad, 0xbe, 0, 0, 0x10, 0x01};
	uint8_t *body = NULL;
	uint32_t n = 0;
	int sv[2];

	(void)state;
	make_pair(sv);
	assert_int_equal(wire_write_all(sv[0], frame, sizeof(frame), 1000), 0);
	/* not an Envelope, but a whole frame: its bytes come back */
	assert_int_equal(wire_recv_frame(sv[1], 4096, 1000, &body, &n), 0);
	assert_int_equal(n, 3);
	assert_memory_equal(body, frame + 4, 3);
	free(body);
	/* then a header of 4097 bytes: refused before anything is allocated */
	body = NULL;
	assert_int_equal(wire_recv_frame(sv[1], 4096, 1000, &body, &n), -EMSGSIZE);
	assert_null(body);
	assert_int_equal(wire_recv_frame(sv[1], 4096, 50, &body, &n), -ETIMEDOUT);
	close(sv[0]);
	assert_int_equal(wire_recv_frame(sv[1], 4096, 1000, &body, &n), -EPIPE);
	assert_null(body);
	close(sv[1]);
}

/* A child writes buf in the given pieces with pauses between them, then exits. */
static pid_t write_in_pieces(int fd, const uint8_t *buf, const size_t *cuts, size_t ncuts,
			     int pause_ms, bool close_after)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		size_t at = 0;

		for (size_t i = 0; i < ncuts; i++) {
			if (wire_write_all(fd, buf + at, cuts[i] - at, 1000) < 0)
				_exit(1);
			at = cuts[i];
			sleep_ms(pause_ms);
		}
		if (close_after)
			close(fd);
		_exit(0);
	}
	return pid;
}

static void reap(pid_t pid)
{
	int status = 0;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_recv_split_frame(void **state)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT, *out = NULL;
	Loom__Hello h = LOOM__HELLO__INIT;
	uint8_t *buf;
	size_t len;
	int sv[2];
	pid_t pid;

	(void)state;
	h.version_min = 1;
	h.version_max = 1;
	h.role = LOOM__ROLE__FRAMEWORK;
	h.name = "a framework with a long enough name to split";
	env.seq = 77;
	env.body_case = LOOM__ENVELOPE__BODY_HELLO;
	env.hello = &h;
	assert_int_equal(wire_encode(&env, WIRE_MAX_FRAME_DEFAULT, &buf, &len), 0);
	make_pair(sv);
	{
		/* header in two pieces, then the body in two more */
		size_t cuts[4] = {2, 4, 10, len};

		pid = write_in_pieces(sv[0], buf, cuts, 4, 20, false);
	}
	assert_int_equal(wire_recv(sv[1], WIRE_MAX_FRAME_DEFAULT, 5000, &out), 0);
	reap(pid);
	assert_int_equal(out->seq, 77);
	assert_string_equal(out->hello->name, h.name);
	wire_free(out);
	free(buf);
	close(sv[0]);
	close(sv[1]);
}

static void test_recv_peer_closes(void **state)
{
	const uint8_t partial[] = {0, 0, 0, 100, 0x08, 0x01};
	const uint8_t half_hdr[] = {0, 0};
	Loom__Envelope *out = NULL;
	int sv[2];
	pid_t pid;

	(void)state;
	/* mid-body */
	make_pair(sv);
	{
		size_t cuts[1] = {sizeof(partial)};

		pid = write_in_pieces(sv[0], partial, cuts, 1, 10, true);
	}
	close(sv[0]);
	assert_int_equal(wire_recv(sv[1], WIRE_MAX_FRAME_DEFAULT, 5000, &out), -EPIPE);
	assert_null(out);
	reap(pid);
	close(sv[1]);

	/* mid-header */
	make_pair(sv);
	assert_int_equal(wire_write_all(sv[0], half_hdr, sizeof(half_hdr), 100), 0);
	close(sv[0]);
	assert_int_equal(wire_recv(sv[1], WIRE_MAX_FRAME_DEFAULT, 1000, &out), -EPIPE);
	close(sv[1]);

	/* before anything */
	make_pair(sv);
	close(sv[0]);
	assert_int_equal(wire_recv(sv[1], WIRE_MAX_FRAME_DEFAULT, 1000, &out), -EPIPE);
	assert_null(out);
	close(sv[1]);
}

static void test_send_to_closed_peer(void **state)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Resync rs = LOOM__RESYNC__INIT;
	void (*old)(int) = signal(SIGPIPE, SIG_IGN);
	int sv[2];

	(void)state;
	make_pair(sv);
	close(sv[1]);
	env.seq = 1;
	env.body_case = LOOM__ENVELOPE__BODY_RESYNC;
	env.resync = &rs;
	assert_int_equal(wire_send(sv[0], &env, WIRE_MAX_FRAME_DEFAULT, 100), -EPIPE);
	close(sv[0]);
	signal(SIGPIPE, old);
}

static void test_recv_timeouts_and_bad_frames(void **state)
{
	const uint8_t partial[] = {0, 0, 0, 10, 0x08};
	const uint8_t oversize[] = {0, 0x10, 0, 1, 0x08, 0x01};
	const uint8_t zero[] = {0, 0, 0, 0};
	const uint8_t garbage[] = {0, 0, 0, 2, 0x0f, 0x01};
	Loom__Envelope *out = NULL;
	struct timespec t0, t1;
	double ms;
	int sv[2];

	(void)state;
	/* nothing comes */
	make_pair(sv);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(wire_recv(sv[1], WIRE_MAX_FRAME_DEFAULT, 60, &out), -ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
	assert_true(ms >= 50 && ms < 2000);
	assert_null(out);

	/* half a frame comes, then nothing: the deadline bounds the whole call */
	assert_int_equal(wire_write_all(sv[0], partial, sizeof(partial), 100), 0);
	assert_int_equal(wire_recv(sv[1], WIRE_MAX_FRAME_DEFAULT, 50, &out), -ETIMEDOUT);
	assert_null(out);
	close(sv[0]);
	close(sv[1]);

	/* a length over the receiver's maximum */
	make_pair(sv);
	assert_int_equal(wire_write_all(sv[0], oversize, sizeof(oversize), 100), 0);
	assert_int_equal(wire_recv(sv[1], 4096, 100, &out), -EMSGSIZE);
	close(sv[0]);
	close(sv[1]);

	/* a zero length */
	make_pair(sv);
	assert_int_equal(wire_write_all(sv[0], zero, sizeof(zero), 100), 0);
	assert_int_equal(wire_recv(sv[1], 4096, 100, &out), -EMSGSIZE);
	close(sv[0]);
	close(sv[1]);

	/* a body that is not an Envelope */
	make_pair(sv);
	assert_int_equal(wire_write_all(sv[0], garbage, sizeof(garbage), 100), 0);
	assert_int_equal(wire_recv(sv[1], 4096, 100, &out), -EBADMSG);
	assert_null(out);
	close(sv[0]);
	close(sv[1]);

	/* read_all/write_all on their own */
	make_pair(sv);
	{
		uint8_t got[3];

		assert_int_equal(wire_write_all(sv[0], "abc", 3, 100), 0);
		assert_int_equal(wire_read_all(sv[1], got, 3, 100), 0);
		assert_memory_equal(got, "abc", 3);
		assert_int_equal(wire_read_all(sv[1], got, 1, 30), -ETIMEDOUT);
	}
	close(sv[0]);
	close(sv[1]);
}

/* ---- tuples --------------------------------------------------------------------------------- */

static void test_tuple_v4(void **state)
{
	uint8_t s[4] = {192, 168, 1, 10}, d[4] = {10, 0, 0, 2};
	Loom__FiveTuple pb, back;
	struct wire_tuple t, t2;
	char buf[128];

	(void)state;
	tuple4(&pb, s, d, 65535, 0, 6);
	memset(&t, 0xaa, sizeof(t));
	assert_int_equal(wire_tuple_from_pb(&pb, &t), 0);
	assert_int_equal(t.family, 4);
	assert_int_equal(t.protocol, 6);
	assert_int_equal(t.src_port, 65535);
	assert_int_equal(t.dst_port, 0);
	assert_memory_equal(t.src, s, 4);
	assert_memory_equal(t.dst, d, 4);
	for (int i = 4; i < 16; i++) {
		assert_int_equal(t.src[i], 0);
		assert_int_equal(t.dst[i], 0);
	}
	assert_string_equal(wire_tuple_str(&t, buf, sizeof(buf)),
			    "tcp 192.168.1.10:65535->10.0.0.2:0");

	wire_tuple_to_pb(&t, &back);
	assert_int_equal(back.src_addr.len, 4);
	assert_int_equal(back.dst_addr.len, 4);
	assert_int_equal(back.src_port, 65535);
	assert_int_equal(back.protocol, 6);
	assert_int_equal(wire_tuple_from_pb(&back, &t2), 0);
	assert_true(wire_tuple_eq(&t, &t2));
	assert_true(wire_tuple_hash(&t) == wire_tuple_hash(&t2));
	t2.dst_port = 1;
	assert_false(wire_tuple_eq(&t, &t2));
	assert_true(wire_tuple_hash(&t) != wire_tuple_hash(&t2));

	pb.protocol = 17;
	assert_int_equal(wire_tuple_from_pb(&pb, &t), 0);
	assert_string_equal(wire_tuple_str(&t, buf, sizeof(buf)),
			    "udp 192.168.1.10:65535->10.0.0.2:0");
	pb.protocol = 1;
	assert_int_equal(wire_tuple_from_pb(&pb, &t), 0);
	assert_string_equal(wire_tuple_str(&t, buf, sizeof(buf)),
			    "ip 192.168.1.10:65535->10.0.0.2:0");
	/* a short buffer is truncated, still terminated */
	assert_string_equal(wire_tuple_str(&t, buf, 8), "ip 192.");
}

static void test_tuple_v6(void **state)
{
	uint8_t s[16], d[16];
	Loom__FiveTuple pb = LOOM__FIVE_TUPLE__INIT, back;
	struct wire_tuple t, t2;
	char buf[128];

	(void)state;
	assert_int_equal(inet_pton(AF_INET6, "2001:db8::1", s), 1);
	assert_int_equal(inet_pton(AF_INET6, "fe80::2", d), 1);
	pb.src_addr.data = s;
	pb.src_addr.len = 16;
	pb.dst_addr.data = d;
	pb.dst_addr.len = 16;
	pb.src_port = 443;
	pb.dst_port = 50000;
	pb.protocol = 17;
	assert_int_equal(wire_tuple_from_pb(&pb, &t), 0);
	assert_int_equal(t.family, 6);
	assert_memory_equal(t.src, s, 16);
	assert_memory_equal(t.dst, d, 16);
	assert_string_equal(wire_tuple_str(&t, buf, sizeof(buf)),
			    "udp [2001:db8::1]:443->[fe80::2]:50000");
	wire_tuple_to_pb(&t, &back);
	assert_int_equal(back.src_addr.len, 16);
	assert_int_equal(wire_tuple_from_pb(&back, &t2), 0);
	assert_true(wire_tuple_eq(&t, &t2));
}

static void test_tuple_refusals(void **state)
{
	uint8_t s[16] = {1, 2, 3, 4}, d[16] = {5, 6, 7, 8};
	Loom__FiveTuple pb;
	struct wire_tuple t, before;

	(void)state;
	tuple4(&pb, s, d, 1, 2, 6);
	memset(&t, 0x5a, sizeof(t));
	before = t;
	assert_int_equal(wire_tuple_from_pb(NULL, &t), -EINVAL);

	/* families differ */
	pb.dst_addr.len = 16;
	assert_int_equal(wire_tuple_from_pb(&pb, &t), -EINVAL);
	/* neither 4 nor 16 bytes, though equal */
	pb.src_addr.len = 5;
	pb.dst_addr.len = 5;
	assert_int_equal(wire_tuple_from_pb(&pb, &t), -EINVAL);
	pb.src_addr.len = 0;
	pb.dst_addr.len = 0;
	assert_int_equal(wire_tuple_from_pb(&pb, &t), -EINVAL);
	/* ports and protocol out of range */
	tuple4(&pb, s, d, 65536, 2, 6);
	assert_int_equal(wire_tuple_from_pb(&pb, &t), -EINVAL);
	tuple4(&pb, s, d, 1, 70000, 6);
	assert_int_equal(wire_tuple_from_pb(&pb, &t), -EINVAL);
	tuple4(&pb, s, d, 1, 2, 256);
	assert_int_equal(wire_tuple_from_pb(&pb, &t), -EINVAL);
	/* nothing was written on failure */
	assert_memory_equal(&t, &before, sizeof(t));
	/* the edges themselves are fine */
	tuple4(&pb, s, d, 65535, 65535, 255);
	assert_int_equal(wire_tuple_from_pb(&pb, &t), 0);
}

/* ---- error codes ------------------------------------------------------------------------------ */

static void test_error_mapping(void **state)
{
	static const struct {
		Loom__ErrorCode code;
		int neg_errno;
		const char *name;
	} want[] = {
		{LOOM__ERROR_CODE__OK, 0, "ok"},
		{LOOM__ERROR_CODE__BAD_REQUEST, -EINVAL, "bad_request"},
		{LOOM__ERROR_CODE__BAD_VERSION, -EPROTONOSUPPORT, "bad_version"},
		{LOOM__ERROR_CODE__UNKNOWN_TYPE, -EBADMSG, "unknown_type"},
		{LOOM__ERROR_CODE__EXISTS, -EEXIST, "exists"},
		{LOOM__ERROR_CODE__NOT_FOUND, -ENOENT, "not_found"},
		{LOOM__ERROR_CODE__CYCLE, -ELOOP, "cycle"},
		{LOOM__ERROR_CODE__FINISHED, -EALREADY, "finished"},
		{LOOM__ERROR_CODE__WRONG_ROLE, -EPERM, "wrong_role"},
		{LOOM__ERROR_CODE__NOT_READY, -ENOTCONN, "not_ready"},
		{LOOM__ERROR_CODE__LIMIT, -ENOSPC, "limit"},
		{LOOM__ERROR_CODE__INTERNAL, -EIO, "internal"},
		{LOOM__ERROR_CODE__UNAVAILABLE, -ESHUTDOWN, "unavailable"},
		{LOOM__ERROR_CODE__DENIED, -EACCES, "denied"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(wire_error_to_errno(want[i].code), want[i].neg_errno);
		assert_int_equal(wire_errno_to_error(want[i].neg_errno), want[i].code);
		assert_string_equal(wire_error_name(want[i].code), want[i].name);
		/* both directions compose to the identity */
		assert_int_equal(wire_errno_to_error(wire_error_to_errno(want[i].code)),
				 want[i].code);
	}
	/* every code the protocol defines is in the table */
	assert_int_equal(sizeof(want) / sizeof(want[0]), loom__error_code__descriptor.n_values);
	assert_int_equal(wire_error_to_errno((Loom__ErrorCode)14), -EPROTO);
	assert_int_equal(wire_error_to_errno((Loom__ErrorCode)-1), -EPROTO);
	assert_string_equal(wire_error_name((Loom__ErrorCode)99), "unknown");
	assert_int_equal(wire_errno_to_error(-ENOMEM), LOOM__ERROR_CODE__INTERNAL);
	assert_int_equal(wire_errno_to_error(-EMSGSIZE), LOOM__ERROR_CODE__INTERNAL);
	/* positive errno values are not in the table */
	assert_int_equal(wire_errno_to_error(EINVAL), LOOM__ERROR_CODE__INTERNAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hdr_bounds),
		cmocka_unit_test(test_hdr_put),
		cmocka_unit_test(test_round_trip_hello),
		cmocka_unit_test(test_round_trip_register),
		cmocka_unit_test(test_round_trip_table_stats_reply),
		cmocka_unit_test(test_round_trip_small_kinds),
		cmocka_unit_test(test_encode_refusals),
		cmocka_unit_test(test_decode_refusals),
		cmocka_unit_test(test_type_names),
		cmocka_unit_test(test_send_recv),
		cmocka_unit_test(test_recv_frame),
		cmocka_unit_test(test_recv_split_frame),
		cmocka_unit_test(test_recv_peer_closes),
		cmocka_unit_test(test_send_to_closed_peer),
		cmocka_unit_test(test_recv_timeouts_and_bad_frames),
		cmocka_unit_test(test_tuple_v4),
		cmocka_unit_test(test_tuple_v6),
		cmocka_unit_test(test_tuple_refusals),
		cmocka_unit_test(test_error_mapping),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
