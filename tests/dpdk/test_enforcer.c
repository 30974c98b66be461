/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests for dataplane/dpdk/enforcer_dpdk: the "dpdk" enforcer end to end on
 * two net_ring vdevs (each a loopback over one ring, "ETH_RXTX0_<name>"): the
 * test enqueues packets into port 0's ring (its RX) and dequeues what the
 * worker sent from port 1's ring (its TX).
 *
 * Strict priority is made deterministic by shaping: at 100 kbit/s with the
 * smallest bucket one 60-byte frame leaves every 6.72 ms, so the whole burst
 * is queued long before it drains; the only slack allowed is for the few
 * lower-class packets the worker may send before it has received the
 * higher-class ones.
 *
 * bump=on (the return path) is watched through callbacks the worker runs:
 * what it receives on port 1 (the fabric's side) and sends on port 0.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "dataplane/agent.h"
#include "dataplane/dpdk/enforcer_dpdk.h"
#include "dataplane/table.h"

#define POOL_SIZE 1023
#define PKT_BYTES 60

static struct rte_mempool *pool;
static struct rte_ring *rx_ring, *tx_ring;
static uint16_t port0, port1;

/*
 * The software wire's hand-over, in atomics ThreadSanitizer can see. The
 * test gives the worker packets, and takes them back, through net_ring,
 * whose ring operations run inside DPDK's own libraries (built without
 * TSan), so TSan cannot see them order the test's writes of a packet before
 * the worker's reads (and the worker's DSCP rewrite before the test's
 * checks) and would report races that are not there. Each crossing also
 * goes through one of these: wire_put() releases wire_in after writing the
 * packets and before enqueueing them, and an Rx callback on port0, which
 * the worker runs after every receive, acquires it; a Tx callback on port1
 * releases wire_out before the worker's packets enter the ring, and
 * wire_take() acquires it after dequeueing them. A NIC's descriptor ring
 * orders the same things; nothing the test checks depends on them.
 */
static uint64_t wire_in, wire_out;

static uint16_t wire_rx_cb(uint16_t port, uint16_t queue, struct rte_mbuf *pkts[], uint16_t n,
			   uint16_t max, void *user)
{
	(void)port, (void)queue, (void)pkts, (void)max, (void)user;
	if (n)
		(void)__atomic_load_n(&wire_in, __ATOMIC_ACQUIRE);
	return n;
}

static uint16_t wire_tx_cb(uint16_t port, uint16_t queue, struct rte_mbuf *pkts[], uint16_t n,
			   void *user)
{
	(void)port, (void)queue, (void)pkts, (void)user;
	if (n)
		__atomic_fetch_add(&wire_out, n, __ATOMIC_RELEASE);
	return n;
}

/* Installs the callbacks, once: after the first init, which sets up the queues they sit on. */
static void wire_watch(void)
{
	static bool done;

	if (done)
		return;
	assert_non_null(rte_eth_add_rx_callback(port0, 0, wire_rx_cb, NULL));
	assert_non_null(rte_eth_add_tx_callback(port1, 0, wire_tx_cb, NULL));
	done = true;
}

/* Enqueues all n packets into port0's ring (the worker's RX). */
static void wire_put(struct rte_mbuf **m, unsigned int n)
{
	__atomic_fetch_add(&wire_in, n, __ATOMIC_RELEASE);
	assert_int_equal(rte_ring_enqueue_bulk(rx_ring, (void **)m, n, NULL), n);
}

/* Dequeues up to n packets the worker sent from port1's ring; returns how many. */
static unsigned int wire_take(struct rte_mbuf **out, unsigned int n)
{
	unsigned int k = rte_ring_dequeue_burst(tx_ring, (void **)out, n, NULL);

	if (k)
		(void)__atomic_load_n(&wire_out, __ATOMIC_ACQUIRE);
	return k;
}

enum {
	FLOW_A,
	FLOW_B,
	FLOW_UNKNOWN
};

static void tuple_of(int flow, struct wire_tuple *t)
{
	memset(t, 0, sizeof(*t));
	t->family = 4;
	t->protocol = IPPROTO_UDP;
	t->src[0] = 10, t->src[3] = 1;
	t->dst[0] = 10, t->dst[3] = 2;
	t->src_port = (uint16_t)(1000 + flow);
	t->dst_port = 2000;
}

/* A 60-byte Ethernet/IPv4/UDP frame of flow. */
static struct rte_mbuf *make_pkt(int flow)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	struct wire_tuple t;
	uint8_t p[PKT_BYTES];
	struct rte_ipv4_hdr *ip;
	char *data;

	assert_non_null(m);
	data = rte_pktmbuf_append(m, PKT_BYTES);
	assert_non_null(data);
	tuple_of(flow, &t);
	memset(p, 0, PKT_BYTES);
	memset(p, 0x02, 12);
	p[12] = 0x08;
	ip = (struct rte_ipv4_hdr *)(p + 14);
	ip->version_ihl = 0x45;
	ip->type_of_service = 0x01; /* ECN bits that must survive */
	ip->total_length = rte_cpu_to_be_16(PKT_BYTES - 14);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	memcpy(&ip->src_addr, t.src, 4);
	memcpy(&ip->dst_addr, t.dst, 4);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	p[34] = (uint8_t)(t.src_port >> 8), p[35] = (uint8_t)t.src_port;
	p[36] = (uint8_t)(t.dst_port >> 8), p[37] = (uint8_t)t.dst_port;
	p[38] = 0, p[39] = PKT_BYTES - 34;
	memcpy(data, p, PKT_BYTES);
	return m;
}

/* Reads a sent packet: its flow, DSCP, and whether its IPv4 checksum holds. */
static void read_pkt(struct rte_mbuf *m, int *ret_flow, uint8_t *ret_dscp, bool *ret_cksum_ok)
{
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(p + 14);
	uint16_t stored = ip->hdr_checksum;

	assert_int_equal(rte_pktmbuf_pkt_len(m), PKT_BYTES);
	*ret_flow = ((p[34] << 8) | p[35]) - 1000;
	*ret_dscp = ip->type_of_service >> 2;
	assert_int_equal(ip->type_of_service & 3, 1);
	ip->hdr_checksum = 0;
	*ret_cksum_ok = rte_ipv4_cksum(ip) == stored;
	ip->hdr_checksum = stored;
}

/* A snapshot of flows A and B in classes cls_a and cls_b (coflows 1 and 2). */
static struct dp_snapshot *snapshot(uint64_t version, uint32_t cls_a, uint32_t cls_b)
{
	struct dp_table *t = dp_table_new(8);
	struct dp_flow_entry flows[2];
	struct dp_class_entry classes[2] = {{1, cls_a, 0}, {2, cls_b, 0}};
	struct dp_update u = {.version = version, .full = true, .default_class = 7};
	struct dp_snapshot *s;

	assert_non_null(t);
	tuple_of(FLOW_A, &flows[0].tuple);
	flows[0].coflow_id = 1;
	tuple_of(FLOW_B, &flows[1].tuple);
	flows[1].coflow_id = 2;
	u.flows = flows, u.nflows = 2;
	u.classes = classes, u.nclasses = 2;
	assert_int_equal(dp_table_apply(t, &u), 0);
	s = dp_table_snapshot(t);
	assert_non_null(s);
	dp_table_free(t);
	return s;
}

static void inject(const int *flows, unsigned int n)
{
	struct rte_mbuf *m[128];

	assert_true(n <= 128);
	for (unsigned int i = 0; i < n; i++)
		m[i] = make_pkt(flows[i]);
	wire_put(m, n);
}

/* Dequeues exactly n sent packets into out, waiting at most 10 s. */
static void drain(struct rte_mbuf **out, unsigned int n)
{
	unsigned int got = 0;

	for (int tries = 0; got < n && tries < 10000; tries++) {
		struct timespec ts = {0, 1000000};

		got += wire_take(out + got, n - got);
		if (got < n)
			nanosleep(&ts, NULL);
	}
	assert_int_equal(got, n);
}

struct counts {
	uint64_t bytes[3];
	unsigned int calls;
	bool any_done;
};

static void on_counter(void *ctx, const struct wire_tuple *t, uint64_t bytes, bool done)
{
	struct counts *c = ctx;
	int flow = t->src_port - 1000;

	assert_true(flow >= 0 && flow < 3);
	c->bytes[flow] += bytes;
	c->calls++;
	c->any_done |= done;
}

struct stat_list {
	char names[48][32];
	uint64_t v[48];
	int n;
};

static void on_stat(void *ctx, const char *name, uint64_t v)
{
	struct stat_list *l = ctx;

	assert_true(l->n < 48);
	snprintf(l->names[l->n], sizeof(l->names[0]), "%s", name);
	l->v[l->n++] = v;
}

static uint64_t stat(const struct stat_list *l, const char *name)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->names[i], name))
			return l->v[i];
	fail_msg("no stat %s", name);
	return 0;
}

/*
 * Waits (bounded) until the worker has used n applied tables: apply waits
 * only briefly for the worker, which a busy machine may keep off its core
 * for longer, so packets injected right after apply could still meet the
 * previous table.
 */
static void wait_table_used(struct dp_enforcer *e, uint64_t n)
{
	for (int i = 0; i < 5000; i++) {
		struct stat_list st = {0};
		struct timespec ts = {0, 1000000};

		e->cls->stats(e, on_stat, &st);
		if (stat(&st, "table_updates_measured") >= n)
			return;
		nanosleep(&ts, NULL);
	}
	fail_msg("the worker did not take up table %llu in 5 s", (unsigned long long)n);
}

static void test_registered(void **state)
{
	(void)state;
	assert_ptr_equal(dp_enforcer_find("dpdk"), &dp_enforcer_dpdk);
	assert_non_null(dp_enforcer_find("null"));
}

static void expect_einval(const char *args, uint32_t classes, const char *needle)
{
	struct dp_enforcer e = {.cls = &dp_enforcer_dpdk};
	struct loom_err err;

	loom_err_clear(&err);
	assert_int_equal(e.cls->init(&e, args, classes, &err), -EINVAL);
	assert_null(e.priv);
	if (!strstr(loom_err_str(&err), needle))
		fail_msg("'%s': message '%s' does not name '%s'", args, loom_err_str(&err), needle);
}

static void test_bad_args(void **state)
{
	(void)state;
	expect_einval("-- rate=fast", 8, "rate");
	expect_einval("-- rate=10X", 8, "rate");
	expect_einval("-- burst=0", 8, "burst");
	expect_einval("-- burst=100000", 8, "burst");
	expect_einval("-- rx=99", 8, "rx");
	expect_einval("-- tx=x", 8, "tx");
	expect_einval("-- dscp=0:64", 8, "dscp");
	expect_einval("-- colour=blue", 8, "colour");
	expect_einval("-- rate", 8, "rate");
	expect_einval("-- rate=0", 9, "classes");
	expect_einval("-- offload=maybe", 8, "offload");
	expect_einval("-- bump=yes", 8, "bump");
	expect_einval("-- idle=1001", 8, "idle");
	expect_einval("-- idle=-1", 8, "idle");
	expect_einval("-- idle=1ms", 8, "idle");
	expect_einval("-- rx=0 tx=0 bump=on", 8, "bump");
}

/* net_ring has no rte_flow: offload=on is refused with the reason, auto falls back. */
static void test_offload_fallback(void **state)
{
	struct dp_enforcer e = {.cls = &dp_enforcer_dpdk};
	struct stat_list st = {0};
	struct loom_err err;
	char args[128];

	(void)state;
	loom_err_clear(&err);
	snprintf(args, sizeof(args), "-- rx=%u tx=%u offload=on", port0, port1);
	assert_int_equal(e.cls->init(&e, args, 8, &err), -ENOTSUP);
	assert_null(e.priv);
	if (!strstr(loom_err_str(&err), "offload=on") || !strstr(loom_err_str(&err), "DSCP"))
		fail_msg("offload=on refused without saying why: '%s'", loom_err_str(&err));

	snprintf(args, sizeof(args), "-- rx=%u tx=%u", port0, port1);
	if (e.cls->init(&e, args, 8, &err) < 0)
		fail_msg("init: %s", loom_err_str(&err));
	e.cls->stats(&e, on_stat, &st);
	assert_int_equal(stat(&st, "offload_hw_dscp"), 0);
	assert_int_equal(stat(&st, "offload_rules"), 0);
	e.cls->done(&e);
}

static void test_run(void **state)
{
	struct dp_enforcer e = {.cls = dp_enforcer_find("dpdk")};
	struct loom_err err;
	char args[128];
	int flows[128];
	struct rte_mbuf *out[128];
	struct counts c = {0};
	struct stat_list st = {0};
	unsigned int n = 0, first_a = UINT32_MAX, last_a = 0, b_after = 0;

	(void)state;
	assert_non_null(e.cls);
	loom_err_clear(&err);
	snprintf(args, sizeof(args), "-- rx=%u tx=%u rate=100k bucket=0 burst=32", port0, port1);
	if (e.cls->init(&e, args, 8, &err) < 0)
		fail_msg("init: %s", loom_err_str(&err));
	wire_watch();
	assert_int_equal(e.cls->apply(&e, snapshot(1, 0, 1)), 0);
	wait_table_used(&e, 1);

	/* 32 of B (class 1), then 32 of A (class 0), then 8 unknown (default class 7) */
	for (int i = 0; i < 32; i++)
		flows[n++] = FLOW_B;
	for (int i = 0; i < 32; i++)
		flows[n++] = FLOW_A;
	for (int i = 0; i < 8; i++)
		flows[n++] = FLOW_UNKNOWN;
	inject(flows, n);
	drain(out, n);
	for (unsigned int i = 0; i < n; i++) {
		int flow;
		uint8_t dscp;
		bool ok;

		read_pkt(out[i], &flow, &dscp, &ok);
		assert_true(ok);
		assert_int_equal(dscp, flow == FLOW_A ? 56 : flow == FLOW_B ? 48 : 0);
		if (flow == FLOW_A) {
			if (first_a == UINT32_MAX)
				first_a = i;
			last_a = i;
		}
		if (flow == FLOW_UNKNOWN)
			assert_true(i >= n - 8); /* the lowest class leaves last */
		rte_pktmbuf_free(out[i]);
	}
	/* strict priority: A leaves in one run, and most of B waits behind it */
	assert_int_equal(last_a - first_a, 31);
	b_after = n - 8 - 1 - last_a;
	if (b_after < 16)
		fail_msg("only %u of 32 class-1 packets left after the class-0 ones", b_after);

	e.cls->collect(&e, on_counter, &c);
	assert_int_equal(c.bytes[FLOW_A], 32 * PKT_BYTES);
	assert_int_equal(c.bytes[FLOW_B], 32 * PKT_BYTES);
	/* the unknown flow is announced once (8 packets), with its first packet's bytes */
	assert_int_equal(c.bytes[FLOW_UNKNOWN], PKT_BYTES);
	assert_false(c.any_done);
	memset(&c, 0, sizeof(c));
	e.cls->collect(&e, on_counter, &c);
	assert_int_equal(c.calls, 0); /* nothing since the last collect */

	/* swap the classes: A -> 1, B -> 0 */
	assert_int_equal(e.cls->apply(&e, snapshot(2, 1, 0)), 0);
	wait_table_used(&e, 2);
	n = 0;
	for (int i = 0; i < 4; i++) {
		flows[n++] = FLOW_A;
		flows[n++] = FLOW_B;
	}
	inject(flows, n);
	drain(out, n);
	for (unsigned int i = 0; i < n; i++) {
		int flow;
		uint8_t dscp;
		bool ok;

		read_pkt(out[i], &flow, &dscp, &ok);
		assert_true(ok);
		assert_int_equal(dscp, flow == FLOW_A ? 48 : 56);
		rte_pktmbuf_free(out[i]);
	}
	memset(&c, 0, sizeof(c));
	e.cls->collect(&e, on_counter, &c);
	assert_int_equal(c.bytes[FLOW_A], 4 * PKT_BYTES);
	assert_int_equal(c.bytes[FLOW_B], 4 * PKT_BYTES);
	assert_false(c.any_done);

	e.cls->stats(&e, on_stat, &st);
	assert_int_equal(stat(&st, "rx_packets"), 80);
	assert_int_equal(stat(&st, "tx_packets"), 80);
	assert_int_equal(stat(&st, "dropped_packets"), 0);
	assert_int_equal(stat(&st, "class0_packets"), 36);
	assert_int_equal(stat(&st, "class1_packets"), 36);
	assert_int_equal(stat(&st, "class7_packets"), 8);
	assert_int_equal(stat(&st, "unknown"), 8);
	assert_int_equal(stat(&st, "unknown_flows_reported"), 1);
	assert_int_equal(stat(&st, "unknown_events_dropped"), 0);
	assert_int_equal(stat(&st, "unparseable"), 0);
	assert_int_equal(stat(&st, "snapshots_applied"), 2);
	assert_int_equal(stat(&st, "offload_hw_dscp"), 0);
	/* both tables were used by the worker: their update latency was measured */
	assert_int_equal(stat(&st, "table_updates_measured"), 2);
	assert_true(stat(&st, "table_build_ns_max") > 0);
	assert_true(stat(&st, "table_swap_ns_max") >= stat(&st, "table_swap_ns_last"));

	e.cls->done(&e);
	assert_null(e.priv);
	assert_int_equal(rte_mempool_avail_count(pool), POOL_SIZE);
}

/*
 * Tables swapped under traffic are applied whole: the worker classifies a
 * burst with one table, never with a mix. Flows A and B trade classes at
 * every update; every injected burst (A, B, A, B, ...) must come out with
 * all its A packets in one class and all its B packets in the other, both
 * orientations must be seen, and the per-flow byte counters must add up
 * to what was injected across all the tables.
 */
static void test_update_atomic(void **state)
{
	enum {
		BURSTS = 400,
		PER = 16,
		EVERY = 4
	};
	struct dp_enforcer e = {.cls = dp_enforcer_find("dpdk")};
	static uint8_t dscp_a[BURSTS], dscp_b[BURSTS];
	unsigned int out_n = 0, seen[2] = {0, 0};
	struct counts c = {0};
	struct loom_err err;
	char args[128];

	(void)state;
	memset(dscp_a, 0xff, sizeof(dscp_a));
	memset(dscp_b, 0xff, sizeof(dscp_b));
	loom_err_clear(&err);
	snprintf(args, sizeof(args), "-- rx=%u tx=%u burst=32", port0, port1);
	if (e.cls->init(&e, args, 8, &err) < 0)
		fail_msg("init: %s", loom_err_str(&err));
	wire_watch();
	assert_int_equal(e.cls->apply(&e, snapshot(1, 0, 1)), 0);
	/* Later bursts may meet either of two successive tables (apply waits only briefly). */
	wait_table_used(&e, 1);
	/*
	 * At most half the pool in flight: a worker slowed by a loaded machine
	 * holds what was sent, and the producer must not run the pool dry.
	 */
#define ROOM(b) ((b) < BURSTS && ((b) + 1) * PER - out_n <= POOL_SIZE / 2)
	for (unsigned int b = 0; b < BURSTS || out_n < BURSTS * PER;) {
		struct rte_mbuf *m[PER], *o[64];
		unsigned int k = 0;
		int tries;

		if (ROOM(b)) {
			if (b % EVERY == EVERY - 1) {
				uint64_t v = 2 + b / EVERY;

				assert_int_equal(e.cls->apply(&e, v % 2 ? snapshot(v, 0, 1) :
									  snapshot(v, 1, 0)),
						 0);
			}
			for (unsigned int i = 0; i < PER; i++) {
				m[i] = make_pkt(i % 2 ? FLOW_B : FLOW_A);
				rte_pktmbuf_mtod(m[i], uint8_t *)[42] = (uint8_t)(b >> 8);
				rte_pktmbuf_mtod(m[i], uint8_t *)[43] = (uint8_t)b;
			}
			wire_put(m, PER);
			b++;
		}
		/* up to 10 s for the worker when nothing more may be sent */
		for (tries = 0; tries < 100000; tries++) {
			struct timespec ts = {0, 100000};

			k = wire_take(o, RTE_DIM(o));
			if (k || ROOM(b))
				break;
			nanosleep(&ts, NULL);
		}
		if (k == 0 && !ROOM(b))
			fail_msg("only %u of %u packets came out (%u sent)", out_n, BURSTS * PER,
				 b * PER);
		for (unsigned int i = 0; i < k; i++) {
			uint8_t *p = rte_pktmbuf_mtod(o[i], uint8_t *);
			unsigned int id = (unsigned int)(p[42] << 8 | p[43]);
			int flow;
			uint8_t dscp, *slot;
			bool ok;

			read_pkt(o[i], &flow, &dscp, &ok);
			assert_true(ok);
			assert_true(id < BURSTS);
			slot = flow == FLOW_A ? &dscp_a[id] : &dscp_b[id];
			if (*slot != 0xff && *slot != dscp)
				fail_msg("burst %u: flow %s in two classes (DSCP %u and %u)", id,
					 flow == FLOW_A ? "A" : "B", *slot, dscp);
			*slot = dscp;
			rte_pktmbuf_free(o[i]);
		}
		out_n += k;
	}
#undef ROOM
	for (unsigned int b = 0; b < BURSTS; b++) {
		if (!((dscp_a[b] == 56 && dscp_b[b] == 48) || (dscp_a[b] == 48 && dscp_b[b] == 56)))
			fail_msg("burst %u: A has DSCP %u and B %u: a mix of two tables", b,
				 dscp_a[b], dscp_b[b]);
		seen[dscp_a[b] == 56]++;
	}
	assert_true(seen[0] > 0 && seen[1] > 0);
	e.cls->collect(&e, on_counter, &c);
	assert_int_equal(c.bytes[FLOW_A], (uint64_t)BURSTS * PER / 2 * PKT_BYTES);
	assert_int_equal(c.bytes[FLOW_B], (uint64_t)BURSTS * PER / 2 * PKT_BYTES);
	e.cls->done(&e);
	assert_int_equal(rte_mempool_avail_count(pool), POOL_SIZE);
}

/* ---- bump=on --------------------------------------------------------------------------------- */

#define FABRIC_DSCP 10 /* what the test's "fabric" packets carry; the classes' DSCPs differ */

/* Packets seen per DSCP: sent by the worker's main path (dropped at port 1's receive, so that
 * they do not go round), and returned to port 0 intact (checksum right, ECN kept). */
static uint64_t bump_out[64], bump_back[64];

static uint8_t pkt_dscp(struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod(m, uint8_t *)[15] >> 2;
}

/* Port 1's receive (the return path's): the test's fabric packets pass, the rest are counted
 * and dropped. Runs on the worker: no cmocka asserts here. */
static uint16_t bump_fabric_cb(uint16_t port, uint16_t queue, struct rte_mbuf *pkts[], uint16_t n,
			       uint16_t max, void *user)
{
	uint16_t kept = 0;

	(void)port, (void)queue, (void)max, (void)user;
	if (n)
		(void)__atomic_load_n(&wire_in, __ATOMIC_ACQUIRE);
	for (uint16_t i = 0; i < n; i++) {
		uint8_t d = pkt_dscp(pkts[i]);

		if (d == FABRIC_DSCP) {
			pkts[kept++] = pkts[i];
			continue;
		}
		__atomic_fetch_add(&bump_out[d], 1, __ATOMIC_RELEASE);
		rte_pktmbuf_free(pkts[i]);
	}
	return kept;
}

/* Port 0's send: what the return path hands the host, counted when intact. */
static uint16_t bump_host_cb(uint16_t port, uint16_t queue, struct rte_mbuf *pkts[], uint16_t n,
			     void *user)
{
	(void)port, (void)queue, (void)user;
	for (uint16_t i = 0; i < n; i++) {
		struct rte_ipv4_hdr *ip =
			(struct rte_ipv4_hdr *)(rte_pktmbuf_mtod(pkts[i], uint8_t *) + 14);
		uint16_t stored = ip->hdr_checksum;
		bool ok;

		ip->hdr_checksum = 0;
		ok = rte_ipv4_cksum(ip) == stored && (ip->type_of_service & 3) == 1 &&
		     rte_pktmbuf_pkt_len(pkts[i]) == PKT_BYTES;
		ip->hdr_checksum = stored;
		if (ok)
			__atomic_fetch_add(&bump_back[ip->type_of_service >> 2], 1,
					   __ATOMIC_RELEASE);
	}
	return n;
}

/* Waits up to 10 s until at least these counts are reached; false if they were not. */
static bool bump_wait(uint64_t a56, uint64_t b48, uint64_t back)
{
	for (int tries = 0; tries < 10000; tries++) {
		struct timespec ts = {0, 1000000};

		if (__atomic_load_n(&bump_out[56], __ATOMIC_ACQUIRE) >= a56 &&
		    __atomic_load_n(&bump_out[48], __ATOMIC_ACQUIRE) >= b48 &&
		    __atomic_load_n(&bump_back[FABRIC_DSCP], __ATOMIC_ACQUIRE) >= back)
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

/*
 * bump=on idle=50: flow A from the host (port 0) leaves on port 1 with its
 * class's DSCP; flow B from the fabric (port 1) reaches port 0 unchanged
 * (its own DSCP, its checksum), is counted as returned, and only then
 * (looped back by net_ring into port 0) classified like any host packet.
 * The sleeping worker still moves everything.
 */
static void test_bump(void **state)
{
	struct dp_enforcer e = {.cls = &dp_enforcer_dpdk};
	struct stat_list st = {0};
	struct rte_mbuf *m[8];
	struct loom_err err;
	char args[128];
	(void)state;
	loom_err_clear(&err);
	snprintf(args, sizeof(args), "-- rx=%u tx=%u bump=on idle=50", port0, port1);
	if (e.cls->init(&e, args, 8, &err) < 0)
		fail_msg("init: %s", loom_err_str(&err));
	wire_watch();
	/* port 1's receive queue exists now (bump=on); these stay for the process */
	assert_non_null(rte_eth_add_rx_callback(port1, 0, bump_fabric_cb, NULL));
	assert_non_null(rte_eth_add_tx_callback(port0, 0, bump_host_cb, NULL));
	assert_int_equal(e.cls->apply(&e, snapshot(1, 0, 1)), 0);
	wait_table_used(&e, 1);

	for (int i = 0; i < 8; i++)
		m[i] = make_pkt(FLOW_A);
	wire_put(m, 8);
	/*
	 * net_ring's rings take one producer at a time, and the worker sends
	 * on port1 into the very ring B enters by: B goes in only once A is out.
	 */
	if (!bump_wait(8, 0, 0))
		fail_msg("after 10 s: %llu of A with DSCP 56 out (8 expected)",
			 (unsigned long long)__atomic_load_n(&bump_out[56], __ATOMIC_ACQUIRE));
	for (int i = 0; i < 8; i++) {
		struct rte_ipv4_hdr *ip;

		m[i] = make_pkt(FLOW_B);
		ip = (struct rte_ipv4_hdr *)(rte_pktmbuf_mtod(m[i], uint8_t *) + 14);
		ip->type_of_service = FABRIC_DSCP << 2 | 1;
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	}
	__atomic_fetch_add(&wire_in, 8, __ATOMIC_RELEASE);
	assert_int_equal(rte_ring_enqueue_bulk(tx_ring, (void **)m, 8, NULL), 8);
	if (!bump_wait(8, 8, 8))
		fail_msg("after 10 s: %llu of A with DSCP 56 out, %llu of B returned intact, %llu "
			 "of B with DSCP 48 out (8 each expected)",
			 (unsigned long long)__atomic_load_n(&bump_out[56], __ATOMIC_ACQUIRE),
			 (unsigned long long)__atomic_load_n(&bump_back[FABRIC_DSCP],
							     __ATOMIC_ACQUIRE),
			 (unsigned long long)__atomic_load_n(&bump_out[48], __ATOMIC_ACQUIRE));
	assert_int_equal(__atomic_load_n(&bump_out[56], __ATOMIC_ACQUIRE), 8);
	assert_int_equal(__atomic_load_n(&bump_out[48], __ATOMIC_ACQUIRE), 8);
	assert_int_equal(__atomic_load_n(&bump_back[FABRIC_DSCP], __ATOMIC_ACQUIRE), 8);
	e.cls->stats(&e, on_stat, &st);
	assert_int_equal(stat(&st, "return_packets"), 8);
	assert_int_equal(stat(&st, "return_dropped_packets"), 0);
	assert_int_equal(stat(&st, "rx_packets"), 16);
	assert_int_equal(stat(&st, "tx_packets"), 16);
	assert_int_equal(stat(&st, "class0_packets"), 8);
	assert_int_equal(stat(&st, "class1_packets"), 8);
	for (unsigned int d = 0; d < 64; d++)
		if (d != FABRIC_DSCP)
			assert_int_equal(__atomic_load_n(&bump_back[d], __ATOMIC_ACQUIRE), 0);
	e.cls->done(&e);
	assert_int_equal(rte_mempool_avail_count(pool), POOL_SIZE);
}

int main(void)
{
	const char *args[] = {"test",   "--no-huge", "--no-pci", "--no-shconf", "-m",
			      "512",    "-l",        "0-1",      "--log-level", "error",
			      "--vdev", "net_ring0", "--vdev",   "net_ring1"};
	char *argv[RTE_DIM(args)];
	int rc;

	for (size_t i = 0; i < RTE_DIM(args); i++)
		argv[i] = (char *)args[i];
	if (rte_eal_init((int)RTE_DIM(args), argv) < 0) {
		printf("skipped: rte_eal_init failed: %s\n", rte_strerror(rte_errno));
		return 77;
	}
	/* the EAL runs: from here on, whatever is missing is a failure, not this machine's */
	pool = rte_pktmbuf_pool_create("enf_test", POOL_SIZE, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				       SOCKET_ID_ANY);
	if (!pool) {
		fprintf(stderr, "FAIL: no mbuf pool: %s\n", rte_strerror(rte_errno));
		rte_eal_cleanup();
		return 1;
	}
	/* net_ring's own name for a vdev's ring (drivers/net/ring): a new DPDK may rename it */
	rx_ring = rte_ring_lookup("ETH_RXTX0_net_ring0");
	tx_ring = rte_ring_lookup("ETH_RXTX0_net_ring1");
	if (!rx_ring || !tx_ring || rte_eth_dev_get_port_by_name("net_ring0", &port0) != 0 ||
	    rte_eth_dev_get_port_by_name("net_ring1", &port1) != 0) {
		fprintf(stderr,
			"FAIL: the net_ring vdevs or their rings ETH_RXTX0_net_ring0/1 are not "
			"there: %s\n",
			rte_strerror(rte_errno));
		rte_mempool_free(pool);
		rte_eal_cleanup();
		return 1;
	}

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registered),       cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_offload_fallback), cmocka_unit_test(test_run),
		cmocka_unit_test(test_update_atomic),    cmocka_unit_test(test_bump),
	};
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rte_mempool_free(pool);
	rte_eal_cleanup();
	return rc;
}
