/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests for dataplane/dpdk/classify: parsing, classification, counters, DSCP. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "dataplane/dpdk/classify.h"

static struct rte_mempool *pool;

/* A packet to build by hand. */
struct spec {
	int vlan;   /* tags: 0; 1: 802.1Q; 2: QinQ, 802.1ad outside 802.1Q; 3: one more 802.1Q */
	int family; /* 4, 6, or 0: ARP */
	uint8_t proto;
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	int opt_words;  /* IPv4 options, 4-byte words */
	uint16_t frag;  /* IPv4 flags + offset field */
	size_t payload; /* bytes after the L4 header */
	uint8_t tos;    /* IPv4 TOS / IPv6 traffic class */
};

/* Builds s into buf; returns its length and sets *l4_end (end of L4 header). */
static size_t build(const struct spec *s, uint8_t *buf, size_t *l4_end)
{
	size_t off = 12, l4, l4len;
	uint16_t type = s->family == 4 ? 0x0800 : s->family == 6 ? 0x86dd : 0x0806;

	memset(buf, 0, 2048);
	memset(buf, 0x02, 12);
	for (int t = 0; t < s->vlan; t++) {
		uint16_t tpid = s->vlan >= 2 && t == 0 ? 0x88a8 : 0x8100;

		buf[off++] = (uint8_t)(tpid >> 8);
		buf[off++] = (uint8_t)tpid;
		buf[off++] = 0x00;
		buf[off++] = (uint8_t)(0x05 + t); /* VLAN id */
	}
	buf[off++] = (uint8_t)(type >> 8);
	buf[off++] = (uint8_t)type;
	if (s->family == 0) { /* ARP: 28 bytes */
		memset(buf + off, 0x11, 28);
		*l4_end = off + 28;
		return off + 28;
	}
	l4len = s->proto == IPPROTO_TCP ? 20 : 8;
	if (s->family == 4) {
		uint8_t *ip = buf + off;
		size_t ihl = 20 + 4 * (size_t)s->opt_words;
		size_t tot = ihl + l4len + s->payload;
		struct rte_ipv4_hdr *h = (struct rte_ipv4_hdr *)ip;

		ip[0] = (uint8_t)(0x40 | (ihl / 4));
		ip[1] = s->tos;
		ip[2] = (uint8_t)(tot >> 8);
		ip[3] = (uint8_t)tot;
		ip[4] = 0x12;
		ip[5] = 0x34;
		ip[6] = (uint8_t)(s->frag >> 8);
		ip[7] = (uint8_t)s->frag;
		ip[8] = 64;
		ip[9] = s->proto;
		memcpy(ip + 12, s->src, 4);
		memcpy(ip + 16, s->dst, 4);
		for (size_t i = 20; i < ihl; i++)
			ip[i] = i + 1 == ihl ? 0 : 1; /* NOPs, then EOL */
		h->hdr_checksum = 0;
		h->hdr_checksum = rte_ipv4_cksum(h);
		l4 = off + ihl;
	} else {
		uint8_t *ip = buf + off;
		size_t plen = l4len + s->payload;

		ip[0] = (uint8_t)(0x60 | s->tos >> 4);
		ip[1] = (uint8_t)((s->tos & 0x0f) << 4 | 0x0a);
		ip[2] = 0xbc;
		ip[3] = 0xde;
		ip[4] = (uint8_t)(plen >> 8);
		ip[5] = (uint8_t)plen;
		ip[6] = s->proto;
		ip[7] = 64;
		memcpy(ip + 8, s->src, 16);
		memcpy(ip + 24, s->dst, 16);
		l4 = off + 40;
	}
	buf[l4] = (uint8_t)(s->sport >> 8);
	buf[l4 + 1] = (uint8_t)s->sport;
	buf[l4 + 2] = (uint8_t)(s->dport >> 8);
	buf[l4 + 3] = (uint8_t)s->dport;
	if (s->proto == IPPROTO_TCP)
		buf[l4 + 12] = 0x50;
	memset(buf + l4 + l4len, 0xab, s->payload);
	*l4_end = l4 + l4len;
	return l4 + l4len + s->payload;
}

static struct rte_mbuf *mk(const uint8_t *buf, size_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	char *d;

	assert_non_null(m);
	d = rte_pktmbuf_append(m, (uint16_t)len);
	if (len)
		assert_non_null(d);
	memcpy(d, buf, len);
	return m;
}

static struct rte_mbuf *mk_spec(const struct spec *s)
{
	uint8_t buf[2048];
	size_t l4_end;
	size_t len = build(s, buf, &l4_end);

	return mk(buf, len);
}

static void v4(uint8_t *a, uint8_t x, uint8_t y, uint8_t z, uint8_t w)
{
	memset(a, 0, 16);
	a[0] = x;
	a[1] = y;
	a[2] = z;
	a[3] = w;
}

static void v6(uint8_t *a, uint8_t last)
{
	memset(a, 0, 16);
	a[0] = 0x20;
	a[1] = 0x01;
	a[2] = 0x0d;
	a[3] = 0xb8;
	a[15] = last;
}

static struct spec tcp4(void)
{
	struct spec s = {.family = 4, .proto = IPPROTO_TCP, .sport = 1234, .dport = 80};

	v4(s.src, 10, 0, 0, 1);
	v4(s.dst, 10, 0, 0, 2);
	return s;
}

static struct spec udp6(void)
{
	struct spec s = {.family = 6, .proto = IPPROTO_UDP, .sport = 5353, .dport = 53};

	v6(s.src, 1);
	v6(s.dst, 2);
	return s;
}

static void expect_key(const struct dp_dpdk_key *k, const struct spec *s)
{
	assert_int_equal(k->family, s->family);
	assert_int_equal(k->protocol, s->proto);
	assert_int_equal(k->src_port, s->sport);
	assert_int_equal(k->dst_port, s->dport);
	assert_memory_equal(k->src, s->src, 16);
	assert_memory_equal(k->dst, s->dst, 16);
}

static int parse_spec(const struct spec *s, struct dp_dpdk_key *k, uint32_t *l3)
{
	struct rte_mbuf *m = mk_spec(s);
	int r = dp_dpdk_parse(m, k, l3);

	rte_pktmbuf_free(m);
	return r;
}

static void test_parse_ok(void **state)
{
	struct spec s;
	struct dp_dpdk_key k;
	uint32_t l3;
	(void)state;

	s = tcp4(); /* IPv4 TCP */
	assert_int_equal(parse_spec(&s, &k, &l3), 0);
	expect_key(&k, &s);
	assert_int_equal(l3, 14);

	s = tcp4(); /* IPv4 UDP, with payload */
	s.proto = IPPROTO_UDP;
	s.payload = 100;
	assert_int_equal(parse_spec(&s, &k, &l3), 0);
	expect_key(&k, &s);

	s = udp6(); /* IPv6 UDP */
	assert_int_equal(parse_spec(&s, &k, &l3), 0);
	expect_key(&k, &s);
	assert_int_equal(l3, 14);

	s = udp6(); /* IPv6 TCP */
	s.proto = IPPROTO_TCP;
	s.payload = 7;
	assert_int_equal(parse_spec(&s, &k, &l3), 0);
	expect_key(&k, &s);

	s = tcp4(); /* VLAN-tagged IPv4 */
	s.vlan = 1;
	assert_int_equal(parse_spec(&s, &k, &l3), 0);
	expect_key(&k, &s);
	assert_int_equal(l3, 18);

	s = udp6(); /* VLAN-tagged IPv6 */
	s.vlan = 1;
	assert_int_equal(parse_spec(&s, &k, &l3), 0);
	expect_key(&k, &s);
	assert_int_equal(l3, 18);

	s = tcp4(); /* QinQ (802.1ad 0x88a8 outside an 802.1Q tag) IPv4 */
	s.vlan = 2;
	assert_int_equal(parse_spec(&s, &k, &l3), 0);
	expect_key(&k, &s);
	assert_int_equal(l3, 22);

	s = udp6(); /* QinQ IPv6 */
	s.vlan = 2;
	assert_int_equal(parse_spec(&s, &k, &l3), 0);
	expect_key(&k, &s);
	assert_int_equal(l3, 22);

	s = tcp4(); /* IPv4 with options: 40 bytes, the maximum */
	s.opt_words = 10;
	s.sport = 40000;
	assert_int_equal(parse_spec(&s, &k, &l3), 0);
	expect_key(&k, &s);

	s = tcp4(); /* first fragment (MF, offset 0): classified by ports */
	s.frag = RTE_IPV4_HDR_MF_FLAG;
	s.payload = 64;
	assert_int_equal(parse_spec(&s, &k, &l3), 0);
	expect_key(&k, &s);

	s = tcp4(); /* DF set is not a fragment */
	s.frag = RTE_IPV4_HDR_DF_FLAG;
	assert_int_equal(parse_spec(&s, &k, &l3), 0);
}

static void test_parse_not_classifiable(void **state)
{
	struct spec s;
	struct dp_dpdk_key k;
	uint32_t l3 = 999;
	(void)state;

	s = tcp4(); /* non-first fragment, last (MF clear) and middle (MF set) */
	s.frag = 3;
	assert_int_equal(parse_spec(&s, &k, &l3), -DP_DPDK_PARSE_FRAGMENT);
	s.frag = RTE_IPV4_HDR_MF_FLAG | 1;
	assert_int_equal(parse_spec(&s, &k, &l3), -DP_DPDK_PARSE_FRAGMENT);

	s = tcp4(); /* ARP */
	s.family = 0;
	assert_int_equal(parse_spec(&s, &k, &l3), -DP_DPDK_PARSE_NOT_IP);
	s.vlan = 1;
	assert_int_equal(parse_spec(&s, &k, &l3), -DP_DPDK_PARSE_NOT_IP);
	s.vlan = 2; /* ARP inside QinQ */
	assert_int_equal(parse_spec(&s, &k, &l3), -DP_DPDK_PARSE_NOT_IP);
	s = tcp4(); /* three tags: more than QinQ, not parsed through */
	s.vlan = 3;
	assert_int_equal(parse_spec(&s, &k, &l3), -DP_DPDK_PARSE_NOT_IP);

	s = tcp4(); /* ICMP */
	s.proto = IPPROTO_ICMP;
	assert_int_equal(parse_spec(&s, &k, &l3), -DP_DPDK_PARSE_PROTO);
	s = udp6(); /* ICMPv6, and a hop-by-hop extension header */
	s.proto = IPPROTO_ICMPV6;
	assert_int_equal(parse_spec(&s, &k, &l3), -DP_DPDK_PARSE_PROTO);
	s.proto = 0;
	assert_int_equal(parse_spec(&s, &k, &l3), -DP_DPDK_PARSE_PROTO);
	assert_int_equal(l3, 999); /* outputs untouched */

	/* IHL < 5, version mismatch, total length < IHL */
	{
		uint8_t buf[2048];
		size_t l4_end, len;
		struct rte_mbuf *m;

		s = tcp4();
		len = build(&s, buf, &l4_end);
		buf[14] = 0x44;
		m = mk(buf, len);
		assert_int_equal(dp_dpdk_parse(m, &k, &l3), -DP_DPDK_PARSE_BAD_HEADER);
		rte_pktmbuf_free(m);
		buf[14] = 0x65;
		m = mk(buf, len);
		assert_int_equal(dp_dpdk_parse(m, &k, &l3), -DP_DPDK_PARSE_BAD_HEADER);
		rte_pktmbuf_free(m);
		buf[14] = 0x45;
		buf[16] = 0;
		buf[17] = 19;
		m = mk(buf, len);
		assert_int_equal(dp_dpdk_parse(m, &k, &l3), -DP_DPDK_PARSE_BAD_HEADER);
		rte_pktmbuf_free(m);
		/* IP total length covering the IP header only: L4 truncated */
		buf[17] = 30;
		m = mk(buf, len);
		assert_int_equal(dp_dpdk_parse(m, &k, &l3), -DP_DPDK_PARSE_TRUNCATED);
		rte_pktmbuf_free(m);
	}
}

/* Every length short of the L4 header's end is truncated; the full one parses. */
static void check_truncations(const struct spec *s)
{
	uint8_t buf[2048];
	size_t l4_end, len = build(s, buf, &l4_end);
	struct dp_dpdk_key k;
	uint32_t l3;

	for (size_t n = 0; n < l4_end; n++) {
		struct rte_mbuf *m = mk(buf, n);

		assert_int_equal(dp_dpdk_parse(m, &k, &l3), -DP_DPDK_PARSE_TRUNCATED);
		rte_pktmbuf_free(m);
	}
	for (size_t n = l4_end; n <= len; n++) {
		struct rte_mbuf *m = mk(buf, n);

		assert_int_equal(dp_dpdk_parse(m, &k, &l3), 0);
		rte_pktmbuf_free(m);
	}
}

static void test_parse_truncated(void **state)
{
	struct spec s;
	(void)state;

	s = tcp4();
	s.payload = 5;
	check_truncations(&s);
	s.vlan = 1;
	s.opt_words = 3;
	check_truncations(&s);
	s.proto = IPPROTO_UDP;
	check_truncations(&s);
	s = udp6();
	check_truncations(&s);
	s.vlan = 1;
	s.proto = IPPROTO_TCP;
	check_truncations(&s);
	s.vlan = 2; /* QinQ: cut in either tag, the IP or the L4 header */
	check_truncations(&s);
	s = tcp4();
	s.vlan = 2;
	s.opt_words = 2;
	check_truncations(&s);
}

/* xorshift64 with a fixed seed: the same run every time. */
static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void test_parse_fuzz(void **state)
{
	static const uint16_t types[] = {0x0800, 0x86dd, 0x8100, 0x0806};
	uint8_t buf[256];
	unsigned int ok = 0;
	(void)state;

	for (int i = 0; i < 10000; i++) {
		size_t len = rnd() % sizeof(buf);
		struct rte_mbuf *m;
		struct dp_dpdk_key k;
		uint32_t l3;
		int r;

		for (size_t j = 0; j < sizeof(buf); j++)
			buf[j] = (uint8_t)rnd();
		if (rnd() & 1) { /* mostly-plausible headers, to get deep */
			uint16_t t = types[rnd() % 4];
			int vl = t == 0x8100;

			buf[12] = (uint8_t)(t >> 8);
			buf[13] = (uint8_t)t;
			if (vl) {
				t = types[rnd() % 2];
				buf[16] = (uint8_t)(t >> 8);
				buf[17] = (uint8_t)t;
			}
			buf[14 + 4 * vl] = (uint8_t)(t == 0x0800 ? 0x40 | (rnd() % 16) : 0x60);
			if (rnd() & 1) {
				buf[14 + 4 * vl + 6] &= 0xc0; /* no fragment offset */
				buf[14 + 4 * vl + 7] = 0;
			}
			buf[14 + 4 * vl + 9] = rnd() & 1 ? IPPROTO_TCP : IPPROTO_UDP;
			buf[14 + 4 * vl + 6 + (rnd() & 1 ? 0 : 3)] = rnd() & 1 ? IPPROTO_TCP :
										 IPPROTO_UDP;
		}
		m = mk(buf, len);
		r = dp_dpdk_parse(m, &k, &l3);
		assert_true(r <= 0 && r > -DP_DPDK_PARSE_NREASONS);
		if (r == 0) {
			assert_true(l3 == 14 || l3 == 18);
			assert_true(k.family == 4 || k.family == 6);
			ok++;
		}
		rte_pktmbuf_free(m);
	}
	assert_true(ok > 0); /* the fuzz got past the headers sometimes */
}

/* The snapshot: 4 flows in classes 0, 2, 5, 1; default class 7. */
static struct dp_snapshot_flow snap_flows[4];
static struct dp_snapshot snap = {.version = 42, .default_class = 7, .n = 4, .flows = snap_flows};

static void tuple_of(const struct spec *s, struct wire_tuple *t)
{
	memset(t, 0, sizeof(*t));
	t->family = (uint8_t)s->family;
	t->protocol = s->proto;
	t->src_port = s->sport;
	t->dst_port = s->dport;
	memcpy(t->src, s->src, 16);
	memcpy(t->dst, s->dst, 16);
}

static struct spec flow_specs[4];

static void make_snapshot(void)
{
	static const uint32_t classes[4] = {0, 2, 5, 1};

	flow_specs[0] = tcp4();
	flow_specs[1] = tcp4();
	flow_specs[1].proto = IPPROTO_UDP;
	flow_specs[1].sport = 9999;
	flow_specs[2] = udp6();
	flow_specs[3] = udp6();
	flow_specs[3].proto = IPPROTO_TCP;
	flow_specs[3].dport = 443;
	for (int i = 0; i < 4; i++) {
		tuple_of(&flow_specs[i], &snap_flows[i].tuple);
		snap_flows[i].coflow_id = 100 + (uint64_t)i;
		snap_flows[i].cls = classes[i];
	}
}

static void test_ctable(void **state)
{
	struct dp_dpdk_ctable *t;
	struct dp_snapshot bad;
	struct dp_snapshot_flow bf;
	struct dp_dpdk_key k;
	uint32_t l3, slot = 99;
	(void)state;

	make_snapshot();
	t = dp_dpdk_ctable_new(&snap, (int)rte_socket_id());
	assert_non_null(t);
	assert_int_equal(dp_dpdk_ctable_version(t), 42);
	assert_int_equal(dp_dpdk_ctable_nflows(t), 4);
	assert_int_equal(dp_dpdk_ctable_default_class(t), 7);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(parse_spec(&flow_specs[i], &k, &l3), 0);
		assert_int_equal(dp_dpdk_ctable_lookup(t, &k, &slot), snap_flows[i].cls);
		assert_int_equal(slot, i);
	}
	k.dst_port++;
	assert_int_equal(dp_dpdk_ctable_lookup(t, &k, NULL), -ENOENT);
	t = dp_dpdk_ctable_free(t);
	assert_null(t);

	/* empty, and invalid snapshots */
	bad = (struct dp_snapshot){.version = 1, .default_class = 3};
	t = dp_dpdk_ctable_new(&bad, SOCKET_ID_ANY);
	assert_non_null(t);
	dp_dpdk_ctable_free(t);
	bad.default_class = DP_DPDK_MAX_CLASSES;
	errno = 0;
	assert_null(dp_dpdk_ctable_new(&bad, SOCKET_ID_ANY));
	assert_int_equal(errno, EINVAL);
	bf = snap_flows[0];
	bf.cls = DP_DPDK_MAX_CLASSES;
	bad = (struct dp_snapshot){.default_class = 0, .n = 1, .flows = &bf};
	assert_null(dp_dpdk_ctable_new(&bad, SOCKET_ID_ANY));
	assert_int_equal(errno, EINVAL);
	bf.cls = 0;
	bf.tuple.family = 5;
	assert_null(dp_dpdk_ctable_new(&bad, SOCKET_ID_ANY));
	assert_int_equal(errno, EINVAL);
	assert_null(dp_dpdk_ctable_new(NULL, SOCKET_ID_ANY));
	dp_dpdk_ctable_free(NULL);
}

/* Many flows: every one is inserted and found with its class and slot. */
static void test_ctable_many(void **state)
{
	enum {
		N = 20000
	};
	struct dp_snapshot_flow *fl = calloc(N, sizeof(*fl));
	struct dp_snapshot big = {.version = 9, .default_class = 7, .n = N, .flows = fl};
	struct dp_dpdk_ctable *t;
	(void)state;

	assert_non_null(fl);
	for (uint32_t i = 0; i < N; i++) {
		fl[i].tuple.family = 4;
		fl[i].tuple.protocol = IPPROTO_UDP;
		fl[i].tuple.src_port = (uint16_t)i;
		fl[i].tuple.dst_port = 4791;
		v4(fl[i].tuple.src, 10, 1, (uint8_t)(i >> 8), (uint8_t)i);
		v4(fl[i].tuple.dst, 10, 2, 0, 1);
		fl[i].cls = i % DP_DPDK_MAX_CLASSES;
	}
	t = dp_dpdk_ctable_new(&big, SOCKET_ID_ANY);
	assert_non_null(t);
	for (uint32_t i = 0; i < N; i++) {
		struct dp_dpdk_key k;
		uint32_t slot;

		memset(&k, 0, sizeof(k));
		k.family = 4;
		k.protocol = IPPROTO_UDP;
		k.src_port = (uint16_t)i;
		k.dst_port = 4791;
		memcpy(k.src, fl[i].tuple.src, 16);
		memcpy(k.dst, fl[i].tuple.dst, 16);
		assert_int_equal(dp_dpdk_ctable_lookup(t, &k, &slot),
				 (int)(i % DP_DPDK_MAX_CLASSES));
		assert_int_equal(slot, i);
	}
	dp_dpdk_ctable_free(t);
	free(fl);
}

static void test_classify_burst(void **state)
{
	struct dp_dpdk_ctable *t;
	struct dp_dpdk_counters c;
	struct dp_dpdk_flow_counter flows[4];
	struct rte_mbuf *pkts[100];
	uint8_t cls[100];
	uint32_t expect_bytes[DP_DPDK_MAX_CLASSES] = {0};
	uint32_t expect_pkts[DP_DPDK_MAX_CLASSES] = {0};
	uint32_t n = 0;
	struct spec s;
	(void)state;

	make_snapshot();
	t = dp_dpdk_ctable_new(&snap, SOCKET_ID_ANY);
	assert_non_null(t);
	dp_dpdk_counters_init(&c, flows, 4);

	/* 100 packets (more than one bulk lookup of 64): per i, a mix. */
	for (int i = 0; i < 100; i++) {
		switch (i % 5) {
		case 0: /* known flow i/5 % 4, VLAN-tagged sometimes */
		case 1:
			s = flow_specs[(i / 5) % 4];
			s.vlan = (int)(i % 3); /* none, 802.1Q, QinQ */
			s.payload = (size_t)i;
			break;
		case 2: /* unknown flow */
			s = tcp4();
			s.dport = 8080;
			break;
		case 3: /* ICMP */
			s = tcp4();
			s.proto = IPPROTO_ICMP;
			break;
		default: /* ARP */
			s = tcp4();
			s.family = 0;
			break;
		}
		pkts[n++] = mk_spec(&s);
	}
	assert_int_equal(dp_dpdk_classify_burst(t, pkts, (uint16_t)n, cls, &c, NULL), 40);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t want = i % 5 < 2 ? (uint8_t)snap_flows[(i / 5) % 4].cls : 7;

		assert_int_equal(cls[i], want);
		expect_pkts[want]++;
		expect_bytes[want] += rte_pktmbuf_pkt_len(pkts[i]);
		if (i % 5 < 3)
			assert_int_equal(pkts[i]->l2_len, i % 5 < 2 ? 14 + 4 * (i % 3) : 14);
	}
	for (int k = 0; k < DP_DPDK_MAX_CLASSES; k++) {
		assert_int_equal(c.class_packets[k], expect_pkts[k]);
		assert_int_equal(c.class_bytes[k], expect_bytes[k]);
	}
	assert_int_equal(c.known, 40);
	assert_int_equal(c.unknown, 20);
	assert_int_equal(c.unparseable[DP_DPDK_PARSE_PROTO], 20);
	assert_int_equal(c.unparseable[DP_DPDK_PARSE_NOT_IP], 20);
	assert_int_equal(c.unparseable[DP_DPDK_PARSE_TRUNCATED], 0);
	assert_int_equal(c.flows_version, 42);
	for (int f = 0; f < 4; f++) {
		uint64_t p = 0, b = 0;

		for (uint32_t i = 0; i < n; i++) {
			if (i % 5 < 2 && (i / 5) % 4 == (uint32_t)f) {
				p++;
				b += rte_pktmbuf_pkt_len(pkts[i]);
			}
		}
		assert_int_equal(flows[f].packets, p);
		assert_int_equal(flows[f].bytes, b);
	}

	/* Again with the same table: counters add up. */
	assert_int_equal(dp_dpdk_classify_burst(t, pkts, 5, cls, &c, NULL), 2);
	assert_int_equal(c.known, 42);
	assert_int_equal(flows[0].packets, 12);

	/* A new table version resets per-flow counters; a smaller counter
	 * array leaves the slots beyond it uncounted. */
	dp_dpdk_ctable_free(t);
	snap.version = 43;
	t = dp_dpdk_ctable_new(&snap, SOCKET_ID_ANY);
	assert_non_null(t);
	c.nflows = 2;
	assert_int_equal(dp_dpdk_classify_burst(t, pkts, (uint16_t)n, cls, &c, NULL), 40);
	assert_int_equal(c.flows_version, 43);
	assert_int_equal(flows[0].packets, 10);
	assert_int_equal(flows[1].packets, 10);
	assert_int_equal(flows[3].packets, 10); /* beyond nflows: untouched */
	assert_int_equal(c.known, 82);
	assert_int_equal(dp_dpdk_classify_burst(t, pkts, 0, cls, &c, NULL), 0);

	/* With a DSCP map: every parsed packet leaves with its class's DSCP, checksum fixed. */
	{
		struct dp_dscp_map map;
		unsigned int marked = 0;

		dp_dscp_map_default(&map);
		for (uint32_t i = 0; i < n; i++)
			pkts[i]->l2_len = 0;
		assert_int_equal(dp_dpdk_classify_burst(t, pkts, (uint16_t)n, cls, &c, &map), 40);
		for (uint32_t i = 0; i < n; i++) {
			const uint8_t *ip =
				rte_pktmbuf_mtod_offset(pkts[i], const uint8_t *, pkts[i]->l2_len);
			uint8_t dscp;

			if (!pkts[i]->l2_len)
				continue; /* not parsed: untouched */
			if ((ip[0] >> 4) == 4) {
				const struct rte_ipv4_hdr *h = (const struct rte_ipv4_hdr *)ip;

				dscp = ip[1] >> 2;
				assert_int_equal(rte_raw_cksum(h, (size_t)(ip[0] & 0xf) * 4),
						 0xffff);
			} else {
				dscp = (uint8_t)(((ip[0] & 0x0f) << 4 | ip[1] >> 4) >> 2);
			}
			assert_int_equal(dscp, dp_dscp_map_get(&map, cls[i]));
			marked++;
		}
		assert_true(marked > 40); /* known and unknown flows alike */
	}

	for (uint32_t i = 0; i < n; i++)
		rte_pktmbuf_free(pkts[i]);
	dp_dpdk_ctable_free(t);
	snap.version = 42;
}

static void check_v4_dscp(uint8_t tos, uint8_t dscp, int opt_words)
{
	struct spec s = tcp4();
	struct rte_mbuf *m;
	struct rte_ipv4_hdr *h, copy[3];
	uint16_t ck;
	struct dp_dpdk_key k;
	uint32_t l3;

	s.tos = tos;
	s.opt_words = opt_words;
	s.src[3] = (uint8_t)rnd();
	s.dst[2] = (uint8_t)rnd();
	m = mk_spec(&s);
	assert_int_equal(dp_dpdk_parse(m, &k, &l3), 0);
	dp_dpdk_set_dscp(m, l3, dscp);
	h = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, l3);
	assert_int_equal(h->type_of_service, (uint8_t)(dscp << 2 | (tos & 3)));
	/* the incremental checksum equals a full recompute */
	memcpy(copy, h, rte_ipv4_hdr_len(h));
	ck = copy[0].hdr_checksum;
	copy[0].hdr_checksum = 0;
	assert_int_equal(ck, rte_ipv4_cksum(copy));
	rte_pktmbuf_free(m);
}

static void test_dscp_v4(void **state)
{
	(void)state;
	for (unsigned int tos = 0; tos < 256; tos++)
		for (unsigned int d = 0; d < 64; d += 7)
			check_v4_dscp((uint8_t)tos, (uint8_t)d, (int)(tos % 3));
	check_v4_dscp(0xff, 0, 0);
	check_v4_dscp(0x00, 63, 0);
	check_v4_dscp(0x01, 46, 0); /* ECT(1) kept */
	check_v4_dscp(0x03, 10, 0); /* CE kept */
}

static void test_dscp_v6(void **state)
{
	(void)state;
	for (unsigned int tc = 0; tc < 256; tc += 5) {
		struct spec s = udp6();
		struct rte_mbuf *m;
		uint8_t *ip, before[40];
		uint8_t dscp = (uint8_t)((tc * 7) & 63);

		s.tos = (uint8_t)tc;
		s.vlan = (int)(tc % 3); /* none, 802.1Q, QinQ */
		m = mk_spec(&s);
		ip = rte_pktmbuf_mtod_offset(m, uint8_t *, 14 + 4 * s.vlan);
		memcpy(before, ip, 40);
		dp_dpdk_set_dscp(m, 14 + 4 * s.vlan, dscp);
		assert_int_equal(ip[0] >> 4, 6);
		assert_int_equal((ip[0] & 0x0f) << 4 | ip[1] >> 4, dscp << 2 | (tc & 3));
		assert_int_equal(ip[1] & 0x0f, before[1] & 0x0f); /* flow label kept */
		assert_memory_equal(ip + 2, before + 2, 38);
		rte_pktmbuf_free(m);
	}
}

static void test_dscp_bounds(void **state)
{
	uint8_t buf[2048], before[2048];
	size_t l4_end, len;
	struct spec s = tcp4();
	struct rte_mbuf *m;
	(void)state;

	/* A header that does not fit, or no IP at l3_off: nothing changes. */
	len = build(&s, buf, &l4_end);
	m = mk(buf, 30);
	memcpy(before, buf, 30);
	dp_dpdk_set_dscp(m, 14, 46);
	assert_memory_equal(rte_pktmbuf_mtod(m, uint8_t *), before, 30);
	dp_dpdk_set_dscp(m, 1000, 46);
	rte_pktmbuf_free(m);
	s.family = 0;
	len = build(&s, buf, &l4_end);
	m = mk(buf, len);
	dp_dpdk_set_dscp(m, 14, 46);
	assert_memory_equal(rte_pktmbuf_mtod(m, uint8_t *), buf, len);
	rte_pktmbuf_free(m);
}

static void test_dscp_map(void **state)
{
	struct dp_dscp_map map, def;
	struct loom_err err;
	static const char *const bad[] = {
		"",
		"0",
		"0:",
		":1",
		"8:1",
		"0:64",
		"0:1,",
		"0:1,0:2",
		"0:1;1:2",
		"a:1",
		"0:1x",
		" 0:1",
		"0:-1",
		"-1:0",
		"0:1,,1:2",
		"0::1",
		"00000000000000000009:1",
		"0:0000000000000000000064",
	};
	(void)state;

	dp_dscp_map_default(&def);
	for (int k = 0; k < DP_DPDK_MAX_CLASSES; k++)
		assert_int_equal(def.dscp[k], 8 * (7 - k));
	assert_int_equal(dp_dscp_map_get(&def, 0), 56);
	assert_int_equal(dp_dscp_map_get(&def, 200), 0);

	assert_int_equal(dp_dscp_map_parse("0:46,1:34,7:0", DP_DPDK_MAX_CLASSES, &map, &err), 0);
	assert_int_equal(map.dscp[0], 46);
	assert_int_equal(map.dscp[1], 34);
	assert_int_equal(map.dscp[2], def.dscp[2]);
	assert_int_equal(map.dscp[7], 0);
	assert_int_equal(dp_dscp_map_parse("3:63", DP_DPDK_MAX_CLASSES, &map, NULL), 0);
	assert_int_equal(map.dscp[3], 63);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct dp_dscp_map m2 = map;

		err.msg[0] = '\0';
		assert_int_equal(dp_dscp_map_parse(bad[i], DP_DPDK_MAX_CLASSES, &m2, &err),
				 -EINVAL);
		assert_true(err.msg[0] != '\0');
		assert_memory_equal(&m2, &map, sizeof(map)); /* untouched */
	}
	assert_int_equal(dp_dscp_map_parse(NULL, DP_DPDK_MAX_CLASSES, &map, NULL), -EINVAL);
}

int main(void)
{
	char *argv[] = {"test",        "--no-huge", "--no-pci", "--no-shconf", "-m", "512",
			"--log-level", "error",     "--vdev",   "net_null0",   NULL};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_ok),
		cmocka_unit_test(test_parse_not_classifiable),
		cmocka_unit_test(test_parse_truncated),
		cmocka_unit_test(test_parse_fuzz),
		cmocka_unit_test(test_ctable),
		cmocka_unit_test(test_ctable_many),
		cmocka_unit_test(test_classify_burst),
		cmocka_unit_test(test_dscp_v4),
		cmocka_unit_test(test_dscp_v6),
		cmocka_unit_test(test_dscp_bounds),
		cmocka_unit_test(test_dscp_map),
	};
	int r;

	if (rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv) < 0) {
		fprintf(stderr, "rte_eal_init failed: %s; skipping\n", rte_strerror(rte_errno));
		return 77;
	}
	pool = rte_pktmbuf_pool_create("test_classify", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				       (int)rte_socket_id());
	if (!pool) { /* the EAL runs: a missing pool is a failure, not this machine's */
		fprintf(stderr, "FAIL: mbuf pool: %s\n", rte_strerror(rte_errno));
		rte_eal_cleanup();
		return 1;
	}
	r = cmocka_run_group_tests(tests, NULL, NULL);
	rte_mempool_free(pool);
	rte_eal_cleanup();
	return r;
}
