/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes the seed corpora of fuzz_loomd and fuzz_wire (not a test; run it
 * by hand after changing loom.proto or the seeds, and commit the files):
 *
 *   ninja -C BUILD tests/fuzz/gen_seeds_loomd
 *   BUILD/tests/fuzz/gen_seeds_loomd tests/fuzz/corpus
 *
 * It writes CORPUS/loomd/<name>.bin (a selector byte, see fuzz_loomd.c, then
 * frames) and CORPUS/wire/<name>.bin (frames only). Every message type is
 * covered, valid and not: a job DAG with flows and tuples, announced flows,
 * coflow and job ends, unregistering, agents' statistics, acks, resyncs and
 * heartbeats, tables and replies; and frames loomd must refuse: an oversize
 * or zero length, a body that is not an Envelope, an unknown oneof field, a
 * cyclic DAG, duplicate ids. Each file stays under 4 KiB.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

#define SEED_MAX 4096

/* Selector bits of fuzz_loomd.c. */
#define SEL_FRAMEWORK 0x00
#define SEL_AGENT     0x01
#define SEL_NONE      0x02
#define SEL_HOST(h)   ((uint8_t)((h) << 2))
#define SEL_FIXTURE   0x20

struct out {
	uint8_t buf[SEED_MAX * 2];
	size_t n;
};

static const char *corpus;

static void put_raw(struct out *o, const void *p, size_t n)
{
	if (o->n + n > sizeof(o->buf)) {
		fprintf(stderr, "gen_seeds_loomd: a seed grew past %zu bytes\n", sizeof(o->buf));
		exit(1);
	}
	memcpy(o->buf + o->n, p, n);
	o->n += n;
}

static void put_env(struct out *o, const Loom__Envelope *env)
{
	uint8_t *buf;
	size_t len;

	if (wire_encode(env, WIRE_MAX_FRAME_DEFAULT, &buf, &len) < 0) {
		fprintf(stderr, "gen_seeds_loomd: cannot encode a %s\n",
			wire_type_name(env->body_case));
		exit(1);
	}
	put_raw(o, buf, len);
	free(buf);
}

/* Writes CORPUS/loomd/name.bin (selector + frames) and CORPUS/wire/name.bin (frames). */
static void save(const char *name, uint8_t sel, const struct out *o)
{
	char path[4096];
	FILE *f;

	if (o->n + 1 > SEED_MAX) {
		fprintf(stderr, "gen_seeds_loomd: %s is %zu bytes (max %d)\n", name, o->n + 1,
			SEED_MAX);
		exit(1);
	}
	for (int k = 0; k < 2; k++) {
		snprintf(path, sizeof(path), "%s/%s/%s.bin", corpus, k ? "wire" : "loomd", name);
		f = fopen(path, "wb");
		if (!f || (k == 0 && fwrite(&sel, 1, 1, f) != 1) ||
		    (o->n && fwrite(o->buf, 1, o->n, f) != o->n) || fclose(f) != 0) {
			fprintf(stderr, "gen_seeds_loomd: %s: %s\n", path, strerror(errno));
			exit(1);
		}
	}
}

/* ---- tuples ----------------------------------------------------------------------------------- */

struct tup {
	Loom__FiveTuple pb;
	uint8_t s[16], d[16];
};

/* 10.0.0.src:sport -> 10.0.0.dst:dport (or fd00::src -> fd00::dst when v6). */
static Loom__FiveTuple *mk_tuple(struct tup *t, uint32_t src, uint32_t dst, uint32_t sport,
				 uint32_t dport, uint32_t proto, bool v6)
{
	loom__five_tuple__init(&t->pb);
	memset(t->s, 0, sizeof(t->s));
	memset(t->d, 0, sizeof(t->d));
	if (v6) {
		t->s[0] = t->d[0] = 0xfd;
		t->s[15] = (uint8_t)src;
		t->d[15] = (uint8_t)dst;
	} else {
		t->s[0] = t->d[0] = 10;
		t->s[3] = (uint8_t)src;
		t->d[3] = (uint8_t)dst;
	}
	t->pb.src_addr = (ProtobufCBinaryData){v6 ? 16 : 4, t->s};
	t->pb.dst_addr = (ProtobufCBinaryData){v6 ? 16 : 4, t->d};
	t->pb.src_port = sport;
	t->pb.dst_port = dport;
	t->pb.protocol = proto;
	return &t->pb;
}

/* The fixture job's flow i of fuzz_loomd.c. */
static Loom__FiveTuple *fixture_tuple(struct tup *t, uint32_t i)
{
	return mk_tuple(t, i < 4 ? i : 1, i < 4 ? i + 4 : 2, 7000 + i, 80, 6, false);
}

/* ---- framework messages ------------------------------------------------------------------- */

struct gflow {
	uint32_t src, dst;
	uint64_t bytes;
	int port; /* tuple 10.0.0.src:port -> 10.0.0.dst:80; 0: no tuple */
	bool by_address, v6;
	uint32_t proto; /* 0: TCP */
};

#define FL(s, d, b, p)                                                                             \
	{                                                                                          \
		.src = (s), .dst = (d), .bytes = (b), .port = (p)                                  \
	}

struct gcoflow {
	uint64_t id;
	uint64_t offset_ns;
	uint32_t expected;
	uint32_t nflows;
	struct gflow f[4];
};

struct gedge {
	uint64_t parent, child, delay_ns;
};

static void fill_flow(Loom__FlowSpec *fs, struct tup *t, const struct gflow *g)
{
	loom__flow_spec__init(fs);
	fs->src_host = g->src;
	fs->dst_host = g->dst;
	fs->bytes = g->bytes;
	fs->by_address = g->by_address;
	if (g->port)
		fs->tuple = mk_tuple(t, g->src, g->dst, (uint32_t)g->port, 80,
				     g->proto ? g->proto : 6, g->v6);
}

static void e_hello(struct out *o, uint64_t seq, Loom__Role role, uint32_t vmin, uint32_t vmax,
		    uint32_t host, size_t addr_len)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Hello h = LOOM__HELLO__INIT;
	uint8_t a[32] = {10, 0, 0, (uint8_t)host};
	ProtobufCBinaryData addrs[1] = {{addr_len, a}};

	h.version_min = vmin;
	h.version_max = vmax;
	h.role = role;
	h.name = role == LOOM__ROLE__AGENT ? "seed-agent" : "seed-framework";
	h.host_id = host;
	if (role == LOOM__ROLE__AGENT) {
		h.link_bps = 10000000000ULL;
		h.enforcer = LOOM__ENFORCER__ENFORCER_TC;
		h.classes = 8;
		h.n_addresses = addr_len ? 1 : 0;
		h.addresses = addrs;
	}
	env.seq = seq;
	env.body_case = LOOM__ENVELOPE__BODY_HELLO;
	env.hello = &h;
	put_env(o, &env);
}

/* RegisterJob; extend: coflows and edges added to a registered job. */
static void e_register_x(struct out *o, uint64_t seq, uint64_t job, double weight, const char *name,
			 const struct gcoflow *gc, size_t nc, const struct gedge *ge, size_t ne,
			 bool extend)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__RegisterJob rj = LOOM__REGISTER_JOB__INIT;
	Loom__CoflowSpec cs[6], *csp[6];
	Loom__FlowSpec fs[6][4], *fsp[6][4];
	struct tup ts[6][4];
	Loom__Edge es[8], *esp[8];

	for (size_t c = 0; c < nc; c++) {
		loom__coflow_spec__init(&cs[c]);
		cs[c].id = gc[c].id;
		cs[c].release_offset_ns = gc[c].offset_ns;
		cs[c].expected_flows = gc[c].expected;
		cs[c].n_flows = gc[c].nflows;
		cs[c].flows = fsp[c];
		for (uint32_t f = 0; f < gc[c].nflows; f++) {
			fill_flow(&fs[c][f], &ts[c][f], &gc[c].f[f]);
			fsp[c][f] = &fs[c][f];
		}
		csp[c] = &cs[c];
	}
	for (size_t e = 0; e < ne; e++) {
		loom__edge__init(&es[e]);
		es[e].parent = ge[e].parent;
		es[e].child = ge[e].child;
		es[e].delay_ns = ge[e].delay_ns;
		esp[e] = &es[e];
	}
	rj.job_id = job;
	rj.weight = weight;
	rj.name = (char *)name;
	rj.n_coflows = nc;
	rj.coflows = csp;
	rj.n_edges = ne;
	rj.edges = esp;
	rj.extend = extend;
	env.seq = seq;
	env.body_case = LOOM__ENVELOPE__BODY_REGISTER_JOB;
	env.register_job = &rj;
	put_env(o, &env);
}

static void e_register(struct out *o, uint64_t seq, uint64_t job, double weight, const char *name,
		       const struct gcoflow *gc, size_t nc, const struct gedge *ge, size_t ne)
{
	e_register_x(o, seq, job, weight, name, gc, nc, ge, ne, false);
}

struct gannounce {
	uint64_t coflow;
	struct gflow f;
	bool no_flow;
};

static void e_announce(struct out *o, uint64_t seq, const struct gannounce *ga, size_t n)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__AnnounceFlows af = LOOM__ANNOUNCE_FLOWS__INIT;
	Loom__AnnounceFlow a[6], *ap[6];
	Loom__FlowSpec fs[6];
	struct tup ts[6];

	for (size_t i = 0; i < n; i++) {
		loom__announce_flow__init(&a[i]);
		a[i].coflow_id = ga[i].coflow;
		fill_flow(&fs[i], &ts[i], &ga[i].f);
		a[i].flow = ga[i].no_flow ? NULL : &fs[i];
		ap[i] = &a[i];
	}
	af.n_flows = n;
	af.flows = ap;
	env.seq = seq;
	env.body_case = LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS;
	env.announce_flows = &af;
	put_env(o, &env);
}

static void e_coflow_done(struct out *o, uint64_t seq, uint64_t id)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__CoflowDone m = LOOM__COFLOW_DONE__INIT;

	m.coflow_id = id;
	env.seq = seq;
	env.body_case = LOOM__ENVELOPE__BODY_COFLOW_DONE;
	env.coflow_done = &m;
	put_env(o, &env);
}

static void e_job_done(struct out *o, uint64_t seq, uint64_t id)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__JobDone m = LOOM__JOB_DONE__INIT;

	m.job_id = id;
	env.seq = seq;
	env.body_case = LOOM__ENVELOPE__BODY_JOB_DONE;
	env.job_done = &m;
	put_env(o, &env);
}

static void e_unregister(struct out *o, uint64_t seq, uint64_t id)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Unregister m = LOOM__UNREGISTER__INIT;

	m.job_id = id;
	env.seq = seq;
	env.body_case = LOOM__ENVELOPE__BODY_UNREGISTER;
	env.unregister = &m;
	put_env(o, &env);
}

static void e_heartbeat(struct out *o, uint64_t seq, uint64_t t)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Heartbeat m = LOOM__HEARTBEAT__INIT;

	m.time_ns = t;
	env.seq = seq;
	env.body_case = LOOM__ENVELOPE__BODY_HEARTBEAT;
	env.heartbeat = &m;
	put_env(o, &env);
}

/* ---- agent messages --------------------------------------------------------------------------- */

static void e_table_ack(struct out *o, uint64_t seq, uint64_t version)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__TableAck m = LOOM__TABLE_ACK__INIT;

	m.version = version;
	env.seq = seq;
	env.body_case = LOOM__ENVELOPE__BODY_TABLE_ACK;
	env.table_ack = &m;
	put_env(o, &env);
}

static void e_resync(struct out *o, uint64_t seq)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Resync m = LOOM__RESYNC__INIT;

	env.seq = seq;
	env.body_case = LOOM__ENVELOPE__BODY_RESYNC;
	env.resync = &m;
	put_env(o, &env);
}

struct gstat {
	int fixture; /* fixture flow index, or -1 */
	int port;    /* else: 10.0.0.1:port -> 10.0.0.2:80 */
	uint64_t bytes;
	bool done;
	bool bad_tuple; /* a 5-byte source address */
};

static void e_flow_stats(struct out *o, uint64_t seq, const struct gstat *gs, size_t n,
			 uint64_t unknown)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__FlowStats m = LOOM__FLOW_STATS__INIT;
	Loom__FlowStat st[8], *stp[8];
	struct tup ts[8];

	for (size_t i = 0; i < n; i++) {
		loom__flow_stat__init(&st[i]);
		if (gs[i].fixture >= 0)
			st[i].tuple = fixture_tuple(&ts[i], (uint32_t)gs[i].fixture);
		else
			st[i].tuple = mk_tuple(&ts[i], 1, 2, (uint32_t)gs[i].port, 80, 6, false);
		if (gs[i].bad_tuple)
			ts[i].pb.src_addr.len = 5;
		st[i].bytes_sent = gs[i].bytes;
		st[i].done = gs[i].done;
		stp[i] = &st[i];
	}
	m.n_flows = n;
	m.flows = stp;
	m.unknown_bytes = unknown;
	env.seq = seq;
	env.body_case = LOOM__ENVELOPE__BODY_FLOW_STATS;
	env.flow_stats = &m;
	put_env(o, &env);
}

/* ---- controller messages (loomd refuses them; fuzz_wire decodes them) ------------------------- */

static void e_reply(struct out *o, uint64_t seq, Loom__ErrorCode code, const char *msg,
		    uint32_t accepted)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Reply m = LOOM__REPLY__INIT;
	Loom__Error e = LOOM__ERROR__INIT;

	e.code = code;
	e.message = (char *)msg;
	m.error = code ? &e : NULL;
	m.accepted = accepted;
	env.seq = seq;
	env.body_case = LOOM__ENVELOPE__BODY_REPLY;
	env.reply = &m;
	put_env(o, &env);
}

static void e_hello_reply(struct out *o, uint64_t seq, Loom__ErrorCode code)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__HelloReply m = LOOM__HELLO_REPLY__INIT;
	Loom__Error e = LOOM__ERROR__INIT;

	e.code = code;
	e.message = code ? "no protocol version in common" : "";
	m.error = &e;
	m.version = 1;
	m.classes = 8;
	m.controller_id = 0x1234567890abcdefULL;
	env.seq = seq;
	env.body_case = LOOM__ENVELOPE__BODY_HELLO_REPLY;
	env.hello_reply = &m;
	put_env(o, &env);
}

static void e_table(struct out *o, bool full, uint64_t version)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__PriorityTable m = LOOM__PRIORITY_TABLE__INIT;
	Loom__FlowEntry fe[2], *fep[2];
	Loom__CoflowClass cc[2], *ccp[2];
	struct tup ts[3];
	Loom__FiveTuple *rm[1];
	uint64_t rmc[2] = {77, 78};

	for (int i = 0; i < 2; i++) {
		loom__flow_entry__init(&fe[i]);
		fe[i].tuple = fixture_tuple(&ts[i], (uint32_t)i);
		fe[i].coflow_id = 4000000001ULL;
		fep[i] = &fe[i];
		loom__coflow_class__init(&cc[i]);
		cc[i].coflow_id = 4000000001ULL + (uint64_t)i;
		cc[i].class_ = (uint32_t)i;
		cc[i].rate_bps = i ? 1000000000ULL : 0;
		ccp[i] = &cc[i];
	}
	rm[0] = mk_tuple(&ts[2], 3, 4, 9, 9, 17, true);
	m.version = version;
	m.base_version = full ? 0 : version - 1;
	m.full = full;
	m.n_flows = 2;
	m.flows = fep;
	m.n_classes = 2;
	m.classes = ccp;
	m.n_removed_flows = full ? 0 : 1;
	m.removed_flows = rm;
	m.n_removed_coflows = full ? 0 : 2;
	m.removed_coflows = rmc;
	m.default_class = 7;
	m.sent_ns = 5000000;
	env.body_case = LOOM__ENVELOPE__BODY_TABLE;
	env.table = &m;
	put_env(o, &env);
}

/* An envelope with only a seq: its case is unset. */
static void e_unset(struct out *o, uint64_t seq)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;

	env.seq = seq;
	put_env(o, &env);
}

/*
 * Two frames whose only known field is seq: field 20 (not in loom.Envelope)
 * as an empty message, then as a varint. Their case is unset.
 */
static void e_unknown_field(struct out *o, uint8_t seq)
{
	const uint8_t as_message[] = {0, 0, 0, 5, 0x08, seq, 0xa2, 0x01, 0x00};
	const uint8_t as_varint[] = {0, 0, 0, 5, 0x08, seq, 0xa0, 0x01, 0x05};

	put_raw(o, as_message, sizeof(as_message));
	put_raw(o, as_varint, sizeof(as_varint));
}

/* ---- the seeds ------------------------------------------------------------------------------ */

/* A three-coflow DAG: 10 -> 11, 10 -> 12 (open); flows with tuples on hosts 0-7. */
static const struct gcoflow dag3[] = {
	{.id = 10,
	 .nflows = 3,
	 .f = {FL(0, 1, 1000000, 20001), FL(2, 3, 2000000, 20002), FL(4, 5, 0, 20003)}},
	{.id = 11, .nflows = 2, .f = {FL(1, 0, 500000, 20004), FL(3, 2, 500000, 0)}},
	{.id = 12, .offset_ns = 1000000},
};
static const struct gedge dag3_edges[] = {{10, 11, 0}, {10, 12, 2000000}};

static void seed_framework_dag(void)
{
	struct out o = {.n = 0};
	const struct gannounce an[] = {
		{.coflow = 12, .f = FL(6, 7, 4096, 20010)},
		{.coflow = 12,
		 .f = {.src = 0,
		       .dst = 0,
		       .bytes = 100,
		       .port = 20011,
		       .by_address = true}}, /* hosts from 10.0.0.x */
		{.coflow = 12, .f = {.src = 1, .dst = 2, .bytes = 100, .port = 20012, .v6 = true}},
	};

	e_register(&o, 2, 1, 2.0, "shuffle", dag3, 3, dag3_edges, 2);
	e_announce(&o, 3, an, 3);
	e_heartbeat(&o, 4, 0);
	e_coflow_done(&o, 5, 10);
	e_coflow_done(&o, 6, 12);
	e_job_done(&o, 7, 1);
	e_unregister(&o, 8, 1);
	save("fw-dag", SEL_FRAMEWORK, &o);
}

static void seed_framework_stages(void)
{
	struct out o = {.n = 0};
	/* closed coflows expecting more flows than listed, an open one, a release offset */
	const struct gcoflow cf[] = {
		{.id = 100, .expected = 3, .nflows = 1, .f = {FL(0, 1, 100000, 21001)}},
		{.id = 101, .expected = 1, .offset_ns = 3000000},
		{.id = 102},
	};
	const struct gedge ed[] = {{100, 101, 500000}, {101, 102, 0}};
	const struct gannounce an1[] = {
		{.coflow = 100, .f = FL(1, 2, 100000, 21002)},
		{.coflow = 100, .f = FL(2, 3, 0, 21003)},
	};
	const struct gannounce an2[] = {
		{.coflow = 100, .f = FL(3, 4, 100, 21004)}, /* a fourth flow: LIMIT */
	};
	const struct gannounce an3[] = {
		{.coflow = 101, .f = FL(5, 6, 100, 21005)},
		{.coflow = 102, .f = FL(5, 6, 100, 21006)},
		{.coflow = 102, .f = FL(5, 6, 100, 21006)}, /* the same tuple: EXISTS, accepted 2 */
		{.coflow = 102, .f = FL(6, 7, 100, 21007)},
	};

	e_register(&o, 10, 7, 0, "stages", cf, 3, ed, 2);
	e_announce(&o, 11, an1, 2);
	e_announce(&o, 12, an2, 1);
	e_announce(&o, 13, an3, 4);
	e_heartbeat(&o, 14, 1);
	e_job_done(&o, 15, 7);
	e_job_done(&o, 16, 7); /* FINISHED */
	e_coflow_done(&o, 17, 102);
	save("fw-stages", SEL_FRAMEWORK, &o);
}

/* A job that grows (RegisterJob with extend), and every refusal of an extension. */
static void seed_framework_extend(void)
{
	struct out o = {.n = 0};
	const struct gcoflow first[] = {{.id = 400}, {.id = 401}};
	const struct gcoflow more[] = {{.id = 402, .nflows = 1, .f = {FL(1, 2, 5000, 24001)}}};
	const struct gcoflow again[] = {{.id = 403}};
	const struct gcoflow dup[] = {{.id = 401}};
	const struct gedge chain[] = {{401, 402, 0}}, into_old[] = {{403, 401, 0}},
			   unknown[] = {{999, 403, 0}}, next[] = {{402, 403, 1000}};

	e_register(&o, 10, 40, 1, "grows", first, 2, NULL, 0);
	e_register_x(&o, 11, 40, 0, NULL, more, 1, chain, 1, true);
	e_register_x(&o, 12, 40, 0, NULL, again, 1, into_old, 1, true); /* BAD_REQUEST */
	e_register_x(&o, 13, 40, 0, NULL, again, 1, unknown, 1, true);  /* NOT_FOUND */
	e_register_x(&o, 14, 40, 0, NULL, dup, 1, NULL, 0, true);       /* EXISTS */
	e_register_x(&o, 15, 41, 0, NULL, again, 1, NULL, 0, true);     /* no such job */
	e_register_x(&o, 16, 40, 0, NULL, again, 0, NULL, 0, true);     /* no coflows */
	e_coflow_done(&o, 17, 401);
	e_register_x(&o, 18, 40, 0, NULL, again, 1, next, 1, true);
	e_job_done(&o, 19, 40);
	e_register_x(&o, 20, 40, 0, NULL, (const struct gcoflow[]){{.id = 404}}, 1, NULL, 0,
		     true); /* FINISHED */
	save("fw-extend", SEL_FRAMEWORK, &o);
}

static void seed_framework_refusals(void)
{
	struct out o = {.n = 0};
	const struct gcoflow two[] = {{.id = 30}, {.id = 31}};
	const struct gedge cycle[] = {{30, 31, 0}, {31, 30, 0}};
	const struct gedge self[] = {{30, 30, 0}};
	const struct gedge unknown_edge[] = {{30, 99, 0}};
	const struct gedge dup_edge[] = {{30, 31, 0}, {30, 31, 5}};
	const struct gcoflow dup_ids[] = {{.id = 40}, {.id = 40}};
	const struct gcoflow bad_host[] = {{.id = 50, .nflows = 1, .f = {FL(0, 99, 10, 0)}}};
	const struct gcoflow bad_proto[] = {
		{.id = 51,
		 .nflows = 1,
		 .f = {{.src = 0, .dst = 1, .bytes = 10, .port = 22001, .proto = 1}}}};
	const struct gcoflow dup_tuple[] = {
		{.id = 52, .nflows = 2, .f = {FL(0, 1, 10, 22002), FL(0, 1, 10, 22002)}}};
	const struct gcoflow too_many[] = {
		{.id = 53, .expected = 1, .nflows = 2, .f = {FL(0, 1, 10, 0), FL(1, 0, 10, 0)}}};
	const struct gcoflow no_owner[] = {
		{.id = 54,
		 .nflows = 1,
		 .f = {{.src = 0, .dst = 200, .bytes = 10, .port = 22003, .by_address = true}}}};
	const struct gcoflow by_addr_no_tuple[] = {
		{.id = 55,
		 .nflows = 1,
		 .f = {{.src = 0, .dst = 1, .bytes = 10, .port = 0, .by_address = true}}}};
	const struct gcoflow ok[] = {{.id = 60, .nflows = 1, .f = {FL(0, 1, 10, 22004)}}};

	e_register(&o, 1, 20, 1, "cycle", two, 2, cycle, 2);
	e_register(&o, 2, 21, 1, "self", two, 2, self, 1);
	e_register(&o, 3, 22, 1, "edge", two, 2, unknown_edge, 1);
	e_register(&o, 4, 23, 1, "dup-edge", two, 2, dup_edge, 2);
	e_register(&o, 5, 24, 1, "dup-ids", dup_ids, 2, NULL, 0);
	e_register(&o, 6, 25, -1, "weight", ok, 1, NULL, 0);
	e_register(&o, 7, 26, 1, "host", bad_host, 1, NULL, 0);
	e_register(&o, 8, 27, 1, "proto", bad_proto, 1, NULL, 0);
	e_register(&o, 9, 28, 1, "dup-tuple", dup_tuple, 1, NULL, 0);
	e_register(&o, 10, 29, 1, "too-many", too_many, 1, NULL, 0);
	e_register(&o, 11, 30, 1, "no-owner", no_owner, 1, NULL, 0);
	e_register(&o, 12, 31, 1, "no-tuple", by_addr_no_tuple, 1, NULL, 0);
	e_register(&o, 13, 32, 1, "empty", NULL, 0, NULL, 0);
	e_register(&o, 14, 33, 1, "ok", ok, 1, NULL, 0);
	e_register(&o, 15, 33, 1, "again", ok, 1, NULL, 0);        /* job id: EXISTS */
	e_register(&o, 16, 34, 1, "coflow-again", ok, 1, NULL, 0); /* coflow id: EXISTS */
	{
		const struct gannounce an[] = {{.coflow = 99, .f = FL(0, 1, 10, 22005)}};
		const struct gannounce no_tuple[] = {{.coflow = 60, .f = FL(0, 1, 10, 0)}};
		const struct gannounce no_flow[] = {{.coflow = 60, .no_flow = true}};

		e_announce(&o, 17, an, 1);
		e_announce(&o, 18, no_tuple, 1);
		e_announce(&o, 19, no_flow, 1);
	}
	e_coflow_done(&o, 20, 99);
	e_job_done(&o, 21, 99);
	e_unregister(&o, 22, 99);
	save("fw-refusals", SEL_FRAMEWORK, &o);
}

static void seed_framework_wrong_messages(void)
{
	struct out o = {.n = 0};
	const struct gstat st[] = {{.fixture = 0, .bytes = 10}};

	e_flow_stats(&o, 1, st, 1, 0);
	e_table_ack(&o, 2, 1);
	e_resync(&o, 3);
	e_reply(&o, 4, LOOM__ERROR_CODE__OK, "", 0);
	e_hello_reply(&o, 5, LOOM__ERROR_CODE__OK);
	e_table(&o, true, 1);
	e_unset(&o, 6);
	e_unknown_field(&o, 7);
	e_hello(&o, 8, LOOM__ROLE__FRAMEWORK, 1, 1, 0, 0); /* a second hello */
	e_heartbeat(&o, 9, 0);
	save("fw-wrong-messages", SEL_FRAMEWORK, &o);
}

static void seed_no_hello(void)
{
	struct out o = {.n = 0};
	const struct gcoflow ok[] = {{.id = 70, .nflows = 1, .f = {FL(0, 1, 10, 23001)}}};

	e_register(&o, 1, 70, 1, "early", ok, 1, NULL, 0); /* NOT_READY */
	e_heartbeat(&o, 2, 0);                             /* fine before hello */
	e_unset(&o, 3);
	e_hello(&o, 4, LOOM__ROLE__FRAMEWORK, 1, 1, 0, 0);
	e_register(&o, 5, 70, 1, "late", ok, 1, NULL, 0);
	e_coflow_done(&o, 6, 70);
	save("none-then-hello", SEL_NONE, &o);

	o.n = 0;
	e_hello(&o, 1, LOOM__ROLE__FRAMEWORK, 5, 9, 0, 0); /* BAD_VERSION, closed */
	e_heartbeat(&o, 2, 0);
	save("none-bad-version", SEL_NONE, &o);

	o.n = 0;
	e_hello(&o, 1, LOOM__ROLE__ROLE_UNSPECIFIED, 1, 1, 0, 0); /* no role: closed */
	save("none-no-role", SEL_NONE, &o);

	o.n = 0;
	e_hello(&o, 1, LOOM__ROLE__AGENT, 1, 1, 99, 4); /* host out of range: closed */
	save("none-agent-bad-host", SEL_NONE, &o);

	o.n = 0;
	e_hello(&o, 1, LOOM__ROLE__AGENT, 1, 2, 3, 5); /* a 5-byte address: closed */
	save("none-agent-bad-address", SEL_NONE, &o);

	o.n = 0;
	e_hello(&o, 1, LOOM__ROLE__AGENT, 0, 3, 6, 16); /* an IPv6 address */
	e_heartbeat(&o, 2, 0);
	e_table_ack(&o, 3, 1);
	save("none-agent-hello", SEL_NONE | SEL_FIXTURE, &o);
}

static void seed_agent(void)
{
	struct out o = {.n = 0};
	const struct gstat first[] = {
		{.fixture = 0, .bytes = 400000},
		{.fixture = 1, .bytes = 1000000, .done = true},
		{.fixture = -1, .port = 9999, .bytes = 5000}, /* unknown flow */
		{.fixture = 2, .bytes = 1, .bad_tuple = true},
	};
	const struct gstat rest[] = {
		{.fixture = 0, .bytes = 600000, .done = true},
		{.fixture = 2, .bytes = 1000000, .done = true},
		{.fixture = 3, .bytes = 1000000, .done = true},
		{.fixture = 1, .bytes = 10, .done = true}, /* already done */
	};
	const struct gstat child[] = {{.fixture = 4, .bytes = 123456}};
	const struct gcoflow ok[] = {{.id = 80}};

	e_table_ack(&o, 1, 1);
	e_flow_stats(&o, 2, first, 4, 777);
	e_table_ack(&o, 3, 2);
	e_heartbeat(&o, 4, 0);
	e_flow_stats(&o, 5, rest, 4, 0);
	e_resync(&o, 6);
	e_flow_stats(&o, 7, child, 1, 0);
	e_table_ack(&o, 8, 100);
	e_register(&o, 9, 80, 1, "wrong-role", ok, 1, NULL, 0); /* WRONG_ROLE */
	e_coflow_done(&o, 10, 4000000001ULL);                   /* WRONG_ROLE */
	e_hello_reply(&o, 11, LOOM__ERROR_CODE__OK);            /* UNKNOWN_TYPE */
	e_unset(&o, 12);
	save("agent-stats", SEL_AGENT | SEL_HOST(0) | SEL_FIXTURE, &o);

	o.n = 0;
	e_flow_stats(&o, 1, rest + 1, 1, 0);
	e_resync(&o, 2);
	e_table_ack(&o, 3, 1);
	save("agent-host2", SEL_AGENT | SEL_HOST(2) | SEL_FIXTURE, &o);

	o.n = 0;
	e_flow_stats(&o, 1, first + 2, 1, 1);
	e_table_ack(&o, 2, 0);
	save("agent-no-jobs", SEL_AGENT | SEL_HOST(7), &o);
}

static void seed_bad_frames(void)
{
	struct out o = {.n = 0};
	const uint8_t oversize[] = {0x7f, 0xff, 0xff, 0xff, 0x08, 0x01};
	const uint8_t zero[] = {0, 0, 0, 0};
	const uint8_t garbage[] = {0, 0, 0, 6, 0x0f, 0xff, 0xff, 0xff, 0xff, 0xff};
	const uint8_t truncated_varint[] = {0, 0, 0, 3, 0x08, 0xff, 0xff};
	const uint8_t partial[] = {0, 0, 0, 40, 0x08, 0x01, 0x12};
	const uint8_t wrong_wire_type[] = {0, 0, 0, 2, 0x10, 0x05}; /* hello as a varint */
	const struct gcoflow ok[] = {{.id = 90, .nflows = 1, .f = {FL(0, 1, 10, 24001)}}};

	e_register(&o, 1, 90, 1, "before-oversize", ok, 1, NULL, 0);
	put_raw(&o, oversize, sizeof(oversize));
	save("bad-oversize", SEL_FRAMEWORK, &o);

	o.n = 0;
	e_heartbeat(&o, 1, 0);
	put_raw(&o, zero, sizeof(zero));
	e_heartbeat(&o, 2, 0);
	save("bad-zero-length", SEL_FRAMEWORK, &o);

	o.n = 0;
	e_register(&o, 1, 90, 1, "before-garbage", ok, 1, NULL, 0);
	put_raw(&o, garbage, sizeof(garbage));
	save("bad-garbage", SEL_FRAMEWORK, &o);

	o.n = 0;
	put_raw(&o, truncated_varint, sizeof(truncated_varint));
	save("bad-varint", SEL_NONE, &o);

	o.n = 0;
	put_raw(&o, wrong_wire_type, sizeof(wrong_wire_type));
	save("bad-wire-type", SEL_FRAMEWORK, &o);

	o.n = 0;
	e_heartbeat(&o, 1, 0);
	put_raw(&o, partial, sizeof(partial));
	save("bad-partial", SEL_FRAMEWORK, &o);

	o.n = 0;
	e_unknown_field(&o, 1);
	{
		/* field 20 as a length-delimited message, then field 2 (hello) empty */
		const uint8_t f[] = {0, 0, 0, 7, 0x08, 0x02, 0xa2, 0x01, 0x00, 0x12, 0x00};

		put_raw(&o, f, sizeof(f));
	}
	save("unknown-oneof", SEL_FRAMEWORK, &o);
}

/* Frames only fuzz_wire cares about: what loomd sends. */
static void seed_controller_messages(void)
{
	struct out o = {.n = 0};

	e_hello_reply(&o, 1, LOOM__ERROR_CODE__OK);
	e_hello_reply(&o, 1, LOOM__ERROR_CODE__BAD_VERSION);
	e_reply(&o, 2, LOOM__ERROR_CODE__CYCLE, "job 1: its coflows form a cycle", 0);
	e_reply(&o, 3, LOOM__ERROR_CODE__OK, "", 3);
	e_reply(&o, 4, (Loom__ErrorCode)99, "from the future", 0);
	e_table(&o, true, 1);
	e_table(&o, false, 2);
	save("controller-messages", SEL_AGENT | SEL_HOST(1), &o);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR (with loomd/ and wire/ in it)\n", argv[0]);
		return 2;
	}
	corpus = argv[1];
	seed_framework_dag();
	seed_framework_stages();
	seed_framework_extend();
	seed_framework_refusals();
	seed_framework_wrong_messages();
	seed_no_hello();
	seed_agent();
	seed_bad_frames();
	seed_controller_messages();
	return 0;
}
