/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for loomd's request handlers (server.c framing and Hello,
 * rpc_framework.c, rpc_agent.c) and what they drive: the registry, the
 * view, scheduling passes and the agents' table deltas.
 *
 * One server for the whole run (no sockets, no journal, no files; 8 hosts;
 * policy sebf; a virtual clock that moves 1 ms per frame). An input is
 *
 *   byte 0    selector: bits 0-1 the role prelude (0: a framework Hello,
 *             1: an agent Hello, 2 and 3: none), bits 2-4 the agent's host,
 *             bit 5: first register a fixture job (fixture_job() below,
 *             through another connection) so that agents have flows to
 *             report on and tables to receive
 *   the rest  the bytes of one connection, fed to loomd_conn_feed() a frame at
 *             a time (anything after the last whole frame in one piece),
 *             with a flush and a scheduling pass after each frame
 *
 * After each input every job is unregistered and the connection freed, so
 * that inputs do not pile up state: the server must then hold no job,
 * connection or agent. A crash, a sanitizer report or an abort() is a bug.
 * Seeds: tests/fuzz/corpus/loomd, written by gen_seeds_loomd.c.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "controlplane/loomd/config.h"
#include "controlplane/loomd/registry.h"
#include "controlplane/loomd/rpc.h"
#include "controlplane/loomd/server.h"
#include "proto/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_HOSTS      8
#define FIXTURE_JOB     4000000000ULL
#define FIXTURE_COFLOW1 4000000001ULL
#define FIXTURE_COFLOW2 4000000002ULL

static struct loomd_server srv;
static bool srv_ready;

/* Feeds one encoded envelope to c; returns loomd_conn_feed's result. */
static int feed_env(struct loomd_conn *c, const Loom__Envelope *env)
{
	uint8_t *buf;
	size_t len;
	int r;

	if (wire_encode(env, srv.cfg.max_frame, &buf, &len) < 0)
		abort();
	r = loomd_conn_feed(c, buf, len);
	free(buf);
	return r;
}

static int feed_hello(struct loomd_conn *c, Loom__Role role, uint32_t host)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Hello h = LOOM__HELLO__INIT;
	uint8_t v4[4] = {10, 0, 0, (uint8_t)host}, v6[16] = {0xfd, 0, [15] = (uint8_t)host};
	ProtobufCBinaryData addrs[2] = {{4, v4}, {16, v6}};

	h.version_min = WIRE_VERSION_MIN;
	h.version_max = WIRE_VERSION_MAX;
	h.role = role;
	h.name = role == LOOM__ROLE__AGENT ? "fuzz-agent" : "fuzz-framework";
	if (role == LOOM__ROLE__AGENT) {
		h.host_id = host;
		h.link_bps = TOPO_DEFAULT_BPS;
		h.enforcer = LOOM__ENFORCER__ENFORCER_NULL;
		h.classes = 4;
		h.n_addresses = 2;
		h.addresses = addrs;
	}
	env.seq = 1;
	env.body_case = LOOM__ENVELOPE__BODY_HELLO;
	env.hello = &h;
	return feed_env(c, &env);
}

/* The fixture flows' tuples: 10.0.0.s:(7000+i) -> 10.0.0.d:80, TCP. */
static void fixture_tuple(Loom__FiveTuple *t, uint8_t *src, uint8_t *dst, uint32_t i, uint32_t s,
			  uint32_t d)
{
	loom__five_tuple__init(t);
	src[0] = 10, src[1] = 0, src[2] = 0, src[3] = (uint8_t)s;
	dst[0] = 10, dst[1] = 0, dst[2] = 0, dst[3] = (uint8_t)d;
	t->src_addr = (ProtobufCBinaryData){4, src};
	t->dst_addr = (ProtobufCBinaryData){4, dst};
	t->src_port = 7000 + i;
	t->dst_port = 80;
	t->protocol = 6;
}

/*
 * Job FIXTURE_JOB: coflow FIXTURE_COFLOW1 (flows i = 0..3 from host i to
 * host i+4, 1 MB each) -> FIXTURE_COFLOW2 (flow 4 from host 1 to host 2,
 * unknown size), registered through a framework connection of its own.
 */
static void fixture_job(void)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__RegisterJob rj = LOOM__REGISTER_JOB__INIT;
	Loom__CoflowSpec c1 = LOOM__COFLOW_SPEC__INIT, c2 = LOOM__COFLOW_SPEC__INIT;
	Loom__CoflowSpec *cs[2] = {&c1, &c2};
	Loom__FlowSpec fs[5], *fp1[4], *fp2[1];
	Loom__FiveTuple ts[5];
	uint8_t addr[5][2][4];
	Loom__Edge e = LOOM__EDGE__INIT, *es[1] = {&e};
	struct loomd_conn *c = loomd_server_test_conn(&srv);

	if (!c || feed_hello(c, LOOM__ROLE__FRAMEWORK, 0) < 0)
		abort();
	for (uint32_t i = 0; i < 5; i++) {
		uint32_t s = i < 4 ? i : 1, d = i < 4 ? i + 4 : 2;

		loom__flow_spec__init(&fs[i]);
		fixture_tuple(&ts[i], addr[i][0], addr[i][1], i, s, d);
		fs[i].src_host = s;
		fs[i].dst_host = d;
		fs[i].bytes = i < 4 ? 1000000 : 0;
		fs[i].tuple = &ts[i];
		if (i < 4)
			fp1[i] = &fs[i];
		else
			fp2[0] = &fs[i];
	}
	c1.id = FIXTURE_COFLOW1;
	c1.n_flows = 4;
	c1.flows = fp1;
	c2.id = FIXTURE_COFLOW2;
	c2.n_flows = 1;
	c2.flows = fp2;
	e.parent = FIXTURE_COFLOW1;
	e.child = FIXTURE_COFLOW2;
	e.delay_ns = 1000000;
	rj.job_id = FIXTURE_JOB;
	rj.weight = 1;
	rj.n_coflows = 2;
	rj.coflows = cs;
	rj.n_edges = 1;
	rj.edges = es;
	rj.name = "fixture";
	env.seq = 2;
	env.body_case = LOOM__ENVELOPE__BODY_REGISTER_JOB;
	env.register_job = &rj;
	if (feed_env(c, &env) < 0)
		abort();
	if (!loomd_registry_job(srv.reg, FIXTURE_JOB))
		abort();
	/* a zero length closes (and frees) a test connection */
	if (loomd_conn_feed(c, "\0\0\0\0", 4) != -EPIPE)
		abort();
}

static void server_init(void)
{
	struct loomd_config cfg;
	struct loom_err err = {{0}};

	/* LOOM_FUZZ_DEBUG=1: log every refusal (to see what a seed does) */
	loom_log_set_level(getenv("LOOM_FUZZ_DEBUG") ? LOOM_LOG_DEBUG : LOOM_LOG_ERR);
	loomd_config_default(&cfg);
	cfg.listen_unix[0] = 0;
	cfg.listen_tcp[0] = 0;
	cfg.admin_socket[0] = 0;
	cfg.metrics[0] = 0;
	cfg.journal[0] = 0;
	cfg.hosts = FUZZ_HOSTS;
	snprintf(cfg.policy, sizeof(cfg.policy), "sebf");
	cfg.virtual_clock = true;
	/*
	 * loomd_agent_hello() arms the agent timeout on the connection's
	 * bufferevent, which a test connection does not have.
	 */
	cfg.agent_timeout_ns = 0;
	if (loomd_server_init(&srv, &cfg, &err) < 0) {
		fprintf(stderr, "fuzz_loomd: loomd_server_init: %s\n", err.msg);
		abort();
	}
	/* every host's addresses, so that flows placed by address resolve */
	for (uint32_t h = 0; h < FUZZ_HOSTS; h++) {
		uint8_t v4[4] = {10, 0, 0, (uint8_t)h}, v6[16] = {0xfd, 0, [15] = (uint8_t)h};

		if (loomd_registry_set_host_addr(srv.reg, h, v4, 4) < 0 ||
		    loomd_registry_set_host_addr(srv.reg, h, v6, 6) < 0)
			abort();
	}
	srv_ready = true;
}

static void tick(void)
{
	struct loom_err err = {{0}};

	if (loom_vclock_advance_to(&srv.vclock, srv.vclock.now_ns + LOOM_NS_PER_MS) < 0)
		abort();
	loomd_server_flush(&srv);
	/* a registry that took every change must give a view the policy can decide on */
	if (loomd_server_pass(&srv, &err) < 0) {
		fprintf(stderr, "fuzz_loomd: pass: %s\n", err.msg);
		abort();
	}
}

/* Length of the next whole frame at p (header included), or 0 if none. */
static size_t next_frame(const uint8_t *p, size_t n)
{
	uint32_t len;

	if (n < WIRE_HDR_BYTES || wire_hdr_parse(p, srv.cfg.max_frame, &len) < 0 ||
	    n - WIRE_HDR_BYTES < len)
		return 0;
	return WIRE_HDR_BYTES + (size_t)len;
}

static void reset_state(void)
{
	struct loom_err err = {{0}};
	struct loomd_registry_counts counts;
	uint32_t n;

	for (;;) {
		struct loomd_rjob *const *jobs = loomd_registry_jobs(srv.reg, &n);

		if (n == 0)
			break;
		if (loomd_rpc_unregister(&srv, jobs[0]->id, true, &err) < 0)
			abort();
	}
	tick();
	loomd_registry_counts(srv.reg, &counts);
	if (counts.jobs || counts.coflows || counts.flows || srv.nconns || srv.nagents ||
	    srv.nframeworks || srv.conns || srv.dirty_conns)
		abort();
	for (uint32_t h = 0; h < FUZZ_HOSTS; h++)
		if (srv.agent_of_host[h])
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct loomd_conn *c;
	uint8_t sel;
	int r = 0;

	if (!srv_ready)
		server_init();
	if (size == 0)
		return 0;
	sel = data[0];
	data++;
	size--;
	if (sel & 0x20)
		fixture_job();
	c = loomd_server_test_conn(&srv);
	if (!c)
		abort();
	switch (sel & 3) {
	case 0:
		r = feed_hello(c, LOOM__ROLE__FRAMEWORK, 0);
		break;
	case 1:
		r = feed_hello(c, LOOM__ROLE__AGENT, (sel >> 2) & 7);
		break;
	default:
		break;
	}
	if (r < 0)
		abort(); /* a valid Hello never drops the connection */
	if ((sel & 3) == 1 &&
	    (c->role != LOOMD_ROLE_AGENT || srv.agent_of_host[(sel >> 2) & 7] != c))
		abort();
	tick();
	while (size) {
		size_t n = next_frame(data, size);

		if (n == 0)
			n = size; /* a bad header, or a partial frame: all of it at once */
		r = loomd_conn_feed(c, data, n);
		data += n;
		size -= n;
		tick();
		if (r < 0) {
			if (r != -EPIPE)
				abort();
			c = NULL; /* loomd dropped it; loomd_conn_feed freed it */
			break;
		}
	}
	if (c && loomd_conn_feed(c, "\0\0\0\0", 4) != -EPIPE)
		abort();
	reset_state();
	return 0;
}
