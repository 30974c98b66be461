/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests for ebpf/loom_tc.bpf.c through BPF_PROG_TEST_RUN: synthetic frames
 * go through the program as loaded by ebpf/loader (without an interface),
 * and the test reads back the verdict, skb->priority (ctx_out), the frame as
 * the program left it, the per-flow and global counters and the ring
 * buffer. Needs root (or CAP_BPF) and a kernel that loads the program;
 * exits 77 (skip) otherwise.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

#include <bpf/bpf.h>

#include "ebpf/loader.h"

#define CLASSES 8
#define MAX_PKT 512
#define PRIO(c) ((uint32_t)(LOOM_TC_HTB_MAJOR << 16 | (LOOM_TC_HTB_MINOR_BASE + (c))))
#define DSCP(c) ((uint8_t)(8 * (7 - (c)))) /* the map the test loads: the default one */
#define ETH_LEN 14
#define IP4_LEN 20
#define IP6_LEN 40
#define TCP_LEN 20
#define UDP_LEN 8
#define PAYLOAD 64

static struct ebpf_tc *tc;

/* ---- frames ---------------------------------------------------------------------------------- */

static const uint8_t src4[4] = {10, 0, 0, 1}, dst4[4] = {10, 0, 0, 2};
static const uint8_t src6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
static const uint8_t dst6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};

static size_t put_eth(uint8_t *p, uint16_t ethertype, bool vlan)
{
	memset(p, 0x02, 12);
	p[5] = 0x01;
	if (vlan) {
		p[12] = 0x81, p[13] = 0x00, p[14] = 0x00, p[15] = 0x07;
		p[16] = (uint8_t)(ethertype >> 8), p[17] = (uint8_t)ethertype;
		return ETH_LEN + 4;
	}
	p[12] = (uint8_t)(ethertype >> 8), p[13] = (uint8_t)ethertype;
	return ETH_LEN;
}

/*
 * An Ethernet header with ntags VLAN tags before ethertype: 1, 802.1Q;
 * 2, QinQ (802.1ad 0x88a8 outside 802.1Q); 3, one more 802.1Q inside.
 */
static size_t put_eth_tags(uint8_t *p, uint16_t ethertype, int ntags)
{
	size_t n = ETH_LEN - 2;

	memset(p, 0x02, 12);
	p[5] = 0x01;
	for (int t = 0; t < ntags; t++) {
		uint16_t tpid = ntags >= 2 && t == 0 ? 0x88a8 : 0x8100;

		p[n++] = (uint8_t)(tpid >> 8), p[n++] = (uint8_t)tpid;
		p[n++] = 0x00, p[n++] = (uint8_t)(0x07 + t);
	}
	p[n++] = (uint8_t)(ethertype >> 8), p[n++] = (uint8_t)ethertype;
	return n;
}

static uint16_t csum16(const uint8_t *p, size_t len)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* An IPv4 header of ihl_words (5..15) with its checksum; returns its length. */
static size_t put_ip4(uint8_t *p, uint8_t tos, uint8_t proto, uint16_t frag, unsigned ihl_words,
		      size_t l4_len)
{
	size_t hl = ihl_words * 4;

	memset(p, 0, hl);
	p[0] = (uint8_t)(0x40 | ihl_words);
	p[1] = tos;
	p[2] = (uint8_t)((hl + l4_len) >> 8), p[3] = (uint8_t)(hl + l4_len);
	p[4] = 0x12, p[5] = 0x34;
	p[6] = (uint8_t)(frag >> 8), p[7] = (uint8_t)frag;
	p[8] = 64;
	p[9] = proto;
	memcpy(p + 12, src4, 4);
	memcpy(p + 16, dst4, 4);
	for (size_t i = 20; i < hl; i++)
		p[i] = 1; /* NOP options */
	{
		uint16_t c = csum16(p, hl);

		p[10] = (uint8_t)(c >> 8), p[11] = (uint8_t)c;
	}
	return hl;
}

static size_t put_ip6(uint8_t *p, uint8_t tclass, uint32_t flow, uint8_t nexthdr, size_t pl_len)
{
	p[0] = (uint8_t)(0x60 | tclass >> 4);
	p[1] = (uint8_t)((tclass & 0x0f) << 4 | (flow >> 16 & 0x0f));
	p[2] = (uint8_t)(flow >> 8), p[3] = (uint8_t)flow;
	p[4] = (uint8_t)(pl_len >> 8), p[5] = (uint8_t)pl_len;
	p[6] = nexthdr;
	p[7] = 64;
	memcpy(p + 8, src6, 16);
	memcpy(p + 24, dst6, 16);
	return IP6_LEN;
}

static size_t put_l4(uint8_t *p, uint8_t proto, uint16_t sport, uint16_t dport)
{
	size_t len = proto == IPPROTO_TCP ? TCP_LEN : UDP_LEN;

	memset(p, 0, len + PAYLOAD);
	p[0] = (uint8_t)(sport >> 8), p[1] = (uint8_t)sport;
	p[2] = (uint8_t)(dport >> 8), p[3] = (uint8_t)dport;
	if (proto == IPPROTO_TCP)
		p[12] = 0x50;
	else
		p[5] = (uint8_t)(len + PAYLOAD);
	for (size_t i = len; i < len + PAYLOAD; i++)
		p[i] = (uint8_t)i;
	return len + PAYLOAD;
}

/* A whole Ethernet/IPv4/TCP-or-UDP frame. */
static size_t frame4(uint8_t *p, uint8_t proto, uint16_t sport, uint16_t dport, uint8_t tos)
{
	size_t l4 = (proto == IPPROTO_TCP ? TCP_LEN : UDP_LEN) + PAYLOAD;
	size_t n = put_eth(p, 0x0800, false);

	n += put_ip4(p + n, tos, proto, 0, 5, l4);
	return n + put_l4(p + n, proto, sport, dport);
}

static size_t frame6(uint8_t *p, uint8_t proto, uint16_t sport, uint16_t dport, uint8_t tclass)
{
	size_t l4 = (proto == IPPROTO_TCP ? TCP_LEN : UDP_LEN) + PAYLOAD;
	size_t n = put_eth(p, 0x86dd, false);

	n += put_ip6(p + n, tclass, 0xabcde, proto, l4);
	return n + put_l4(p + n, proto, sport, dport);
}

static struct loom_tc_key key4(uint8_t proto, uint16_t sport, uint16_t dport)
{
	struct loom_tc_key k;

	memset(&k, 0, sizeof(k));
	k.family = 4;
	k.protocol = proto;
	k.src_port = htons(sport);
	k.dst_port = htons(dport);
	memcpy(k.src, src4, 4);
	memcpy(k.dst, dst4, 4);
	return k;
}

static struct loom_tc_key key6(uint8_t proto, uint16_t sport, uint16_t dport)
{
	struct loom_tc_key k = key4(proto, sport, dport);

	k.family = 6;
	memcpy(k.src, src6, 16);
	memcpy(k.dst, dst6, 16);
	return k;
}

/* ---- running the program ------------------------------------------------------------------ */

struct result {
	uint8_t out[MAX_PKT];
	uint32_t out_len;
	uint32_t priority;
};

static void run_prog(int fd, const uint8_t *pkt, size_t len, struct result *res)
{
	struct __sk_buff ctx, ctx_out;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = (uint32_t)len,
		    .data_out = res->out, .data_size_out = sizeof(res->out), .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .ctx_out = &ctx_out,
		    .ctx_size_out = sizeof(ctx_out), .repeat = 1);
	int r;

	memset(&ctx, 0, sizeof(ctx));
	memset(&ctx_out, 0, sizeof(ctx_out));
	r = bpf_prog_test_run_opts(fd, &o);
	if (r < 0)
		fail_msg("BPF_PROG_TEST_RUN (%zu bytes): %s", len, strerror(-r));
	assert_int_equal(o.retval, TC_ACT_OK); /* never drops */
	res->out_len = o.data_size_out;
	res->priority = ctx_out.priority;
}

static void run(const uint8_t *pkt, size_t len, struct result *res)
{
	run_prog(ebpf_tc_prog_fd(tc), pkt, len, res);
}

static struct loom_tc_stats stats(void)
{
	struct loom_tc_stats s;

	assert_int_equal(ebpf_tc_stats_read(tc, &s), 0);
	return s;
}

static struct loom_tc_counter slot_counter(uint32_t slot)
{
	static struct loom_tc_counter c[LOOM_TC_FLOW_SLOTS];

	assert_int_equal(ebpf_tc_counters_read(tc, slot + 1, c), 0);
	return c[slot];
}

static void assert_ip4_csum_ok(const uint8_t *ip)
{
	size_t hl = (size_t)(ip[0] & 0x0f) * 4;

	assert_int_equal(csum16(ip, hl), 0); /* over a valid header the sum is all ones */
}

struct ev_log {
	int n;
	struct loom_tc_event last;
};

static void on_event(void *ctx, const struct loom_tc_event *ev)
{
	struct ev_log *l = ctx;

	l->n++;
	l->last = *ev;
}

static int drain_events(struct loom_tc_event *ret_last)
{
	struct ev_log l = {0};
	int r = ebpf_tc_events_poll(tc, on_event, &l);

	assert_true(r >= 0);
	assert_int_equal(r, l.n);
	if (ret_last)
		*ret_last = l.last;
	return l.n;
}

/* ---- the table the tests use ----------------------------------------------------------------- */

enum {
	SLOT_V4_TCP = 7,
	SLOT_V4_UDP = 8,
	SLOT_V6_TCP = 9,
	SLOT_V6_UDP = 10,
	SLOT_V4_FRAG = 11,
	SLOT_V6_EXT = 12,
	SLOT_V4_OPT = 13,
	SLOT_V6_FRAG = 14,
};

static struct ebpf_tc_entry table[] = {
	{.val = {.slot = SLOT_V4_TCP, .cls = 2}},  {.val = {.slot = SLOT_V4_UDP, .cls = 0}},
	{.val = {.slot = SLOT_V6_TCP, .cls = 1}},  {.val = {.slot = SLOT_V6_UDP, .cls = 3}},
	{.val = {.slot = SLOT_V4_FRAG, .cls = 4}}, {.val = {.slot = SLOT_V6_EXT, .cls = 6}},
	{.val = {.slot = SLOT_V4_OPT, .cls = 5}},  {.val = {.slot = SLOT_V6_FRAG, .cls = 3}},
};

static int group_setup(void **state)
{
	struct ebpf_err err;
	struct ebpf_tc_sync_result res;

	(void)state;
	table[0].key = key4(IPPROTO_TCP, 40001, 5001);
	table[1].key = key4(IPPROTO_UDP, 40002, 5002);
	table[2].key = key6(IPPROTO_TCP, 40003, 5003);
	table[3].key = key6(IPPROTO_UDP, 40004, 5004);
	table[4].key = key4(IPPROTO_UDP, 40005, 5005);
	table[5].key = key6(IPPROTO_TCP, 40006, 5006);
	table[6].key = key4(IPPROTO_TCP, 40007, 5007);
	table[7].key = key6(IPPROTO_UDP, 40008, 5008);
	if (ebpf_tc_sync(tc, table, sizeof(table) / sizeof(table[0]), &res, &err) < 0) {
		fprintf(stderr, "sync: %s\n", err.msg);
		return -1;
	}
	return res.updated == sizeof(table) / sizeof(table[0]) && res.deleted == 0 ? 0 : -1;
}

/* ---- tests ----------------------------------------------------------------------------------- */

/* Sends a known flow's frame n times; checks class, DSCP (ECN kept) and the flow's counter. */
static void check_known(const uint8_t *pkt, size_t len, size_t l3, int family, uint32_t cls,
			uint32_t slot, int n)
{
	struct loom_tc_counter before = slot_counter(slot), after;
	struct loom_tc_stats s0 = stats(), s1;
	struct result res;

	for (int i = 0; i < n; i++) {
		run(pkt, len, &res);
		assert_int_equal(res.out_len, len);
		assert_int_equal(res.priority, PRIO(cls));
		if (family == 4) {
			assert_int_equal(res.out[l3 + 1], DSCP(cls) << 2 | (pkt[l3 + 1] & 3));
			assert_ip4_csum_ok(res.out + l3);
			/* nothing else changed */
			assert_memory_equal(res.out, pkt, l3 + 1);
			assert_memory_equal(res.out + l3 + 2, pkt + l3 + 2, 8);
			assert_memory_equal(res.out + l3 + 12, pkt + l3 + 12, len - l3 - 12);
		} else {
			uint8_t tc_in = (uint8_t)((pkt[l3] & 0x0f) << 4 | pkt[l3 + 1] >> 4);
			uint8_t tc_out =
				(uint8_t)((res.out[l3] & 0x0f) << 4 | res.out[l3 + 1] >> 4);

			assert_int_equal(tc_out, DSCP(cls) << 2 | (tc_in & 3));
			assert_int_equal(res.out[l3] >> 4, 6);
			assert_int_equal(res.out[l3 + 1] & 0x0f,
					 pkt[l3 + 1] & 0x0f); /* flow label */
			assert_memory_equal(res.out, pkt, l3);
			assert_memory_equal(res.out + l3 + 2, pkt + l3 + 2, len - l3 - 2);
		}
	}
	after = slot_counter(slot);
	assert_int_equal(after.packets - before.packets, n);
	assert_int_equal(after.bytes - before.bytes, (uint64_t)n * len);
	s1 = stats();
	assert_int_equal(s1.known.packets - s0.known.packets, n);
	assert_int_equal(s1.cls[cls].packets - s0.cls[cls].packets, n);
	assert_int_equal(s1.cls[cls].bytes - s0.cls[cls].bytes, (uint64_t)n * len);
	assert_int_equal(drain_events(NULL), 0);
}

static void test_ipv4_tcp(void **state)
{
	uint8_t p[MAX_PKT];
	size_t len = frame4(p, IPPROTO_TCP, 40001, 5001, 0x01); /* ECT(1) */

	(void)state;
	check_known(p, len, ETH_LEN, 4, 2, SLOT_V4_TCP, 3);
}

static void test_ipv4_udp(void **state)
{
	uint8_t p[MAX_PKT];
	size_t len = frame4(p, IPPROTO_UDP, 40002, 5002, 0x03 | 10 << 2); /* CE, AF11 */

	(void)state;
	check_known(p, len, ETH_LEN, 4, 0, SLOT_V4_UDP, 2);
}

static void test_ipv6_tcp(void **state)
{
	uint8_t p[MAX_PKT];
	size_t len = frame6(p, IPPROTO_TCP, 40003, 5003, 0x03);

	(void)state;
	check_known(p, len, ETH_LEN, 6, 1, SLOT_V6_TCP, 3);
}

static void test_ipv6_udp(void **state)
{
	uint8_t p[MAX_PKT];
	size_t len = frame6(p, IPPROTO_UDP, 40004, 5004, 0x02 | 46 << 2);

	(void)state;
	check_known(p, len, ETH_LEN, 6, 3, SLOT_V6_UDP, 1);
}

/* IPv4 options (IHL 7) and an 802.1Q tag: still the flow's class; checksum valid. */
static void test_ipv4_options_vlan(void **state)
{
	uint8_t p[MAX_PKT];
	size_t n = put_eth(p, 0x0800, true), l3 = n;

	(void)state;
	n += put_ip4(p + n, 0x02, IPPROTO_TCP, 0, 7, TCP_LEN + PAYLOAD);
	n += put_l4(p + n, IPPROTO_TCP, 40007, 5007);
	check_known(p, n, l3, 4, 5, SLOT_V4_OPT, 2);
}

/* QinQ (802.1ad outside 802.1Q): parsed through both tags, the flow's class and DSCP. */
static void test_qinq(void **state)
{
	uint8_t p[MAX_PKT];
	size_t n = put_eth_tags(p, 0x0800, 2), l3 = n;

	(void)state;
	assert_int_equal(l3, ETH_LEN + 8);
	n += put_ip4(p + n, 0x01, IPPROTO_TCP, 0, 5, TCP_LEN + PAYLOAD);
	n += put_l4(p + n, IPPROTO_TCP, 40001, 5001);
	check_known(p, n, l3, 4, 2, SLOT_V4_TCP, 2);
	/* with IPv4 options */
	n = put_eth_tags(p, 0x0800, 2);
	n += put_ip4(p + n, 0x02, IPPROTO_TCP, 0, 7, TCP_LEN + PAYLOAD);
	n += put_l4(p + n, IPPROTO_TCP, 40007, 5007);
	check_known(p, n, l3, 4, 5, SLOT_V4_OPT, 1);
	/* IPv6 */
	n = put_eth_tags(p, 0x86dd, 2);
	n += put_ip6(p + n, 0x02, 0x12345, IPPROTO_UDP, UDP_LEN + PAYLOAD);
	n += put_l4(p + n, IPPROTO_UDP, 40004, 5004);
	check_known(p, n, l3, 6, 3, SLOT_V6_UDP, 2);
}

/* Unknown flow: default class, its DSCP, one event for many packets, counted in loom_unknown. */
static void test_unknown(void **state)
{
	uint8_t p[MAX_PKT];
	size_t len = frame4(p, IPPROTO_UDP, 41000, 6000, 0x01);
	struct loom_tc_key k = key4(IPPROTO_UDP, 41000, 6000);
	struct loom_tc_stats s0 = stats(), s1;
	struct loom_tc_event ev;
	struct loom_tc_counter c;
	struct result res;

	(void)state;
	assert_int_equal(ebpf_tc_set_default_class(tc, 5), 0);
	assert_int_equal(ebpf_tc_set_default_class(tc, CLASSES), -EINVAL);
	assert_int_equal(ebpf_tc_unknown_read(tc, &k, &c), -ENOENT);
	for (int i = 0; i < 4; i++) {
		run(p, len, &res);
		assert_int_equal(res.priority, PRIO(5));
		assert_int_equal(res.out[ETH_LEN + 1], DSCP(5) << 2 | 0x01);
		assert_ip4_csum_ok(res.out + ETH_LEN);
	}
	assert_int_equal(drain_events(&ev), 1); /* once, not four times */
	assert_memory_equal(&ev.key, &k, sizeof(k));
	assert_int_equal(ev.len, len);
	assert_int_equal(ev.cls, 5);
	assert_int_equal(ebpf_tc_unknown_read(tc, &k, &c), 0);
	assert_int_equal(c.packets, 4);
	assert_int_equal(c.bytes, 4 * len);
	s1 = stats();
	assert_int_equal(s1.unknown.packets - s0.unknown.packets, 4);
	assert_int_equal(s1.events - s0.events, 1);
	assert_int_equal(s1.known.packets, s0.known.packets);

	/* forgotten: announced again by its next packet */
	assert_int_equal(ebpf_tc_unknown_forget(tc, &k), 0);
	run(p, len, &res);
	assert_int_equal(drain_events(NULL), 1);
	/* an unknown IPv6 TCP flow too */
	len = frame6(p, IPPROTO_TCP, 41001, 6001, 0);
	run(p, len, &res);
	run(p, len, &res);
	assert_int_equal(res.priority, PRIO(5));
	assert_int_equal(drain_events(&ev), 1);
	k = key6(IPPROTO_TCP, 41001, 6001);
	assert_memory_equal(&ev.key, &k, sizeof(k));
	assert_int_equal(ebpf_tc_set_default_class(tc, CLASSES - 1), 0);
}

/* ARP: passes untouched in class 0, counted as non-IP. */
static void test_non_ip(void **state)
{
	uint8_t p[MAX_PKT];
	size_t n = put_eth(p, 0x0806, false);
	struct loom_tc_stats s0 = stats(), s1;
	struct result res;

	(void)state;
	memset(p + n, 0, 28);
	p[n + 1] = 1, p[n + 2] = 0x08, p[n + 4] = 6, p[n + 5] = 4, p[n + 7] = 1;
	n += 28;
	run(p, n, &res);
	assert_int_equal(res.priority, PRIO(0));
	assert_int_equal(res.out_len, n);
	assert_memory_equal(res.out, p, n);
	s1 = stats();
	assert_int_equal(s1.non_ip.packets - s0.non_ip.packets, 1);
	assert_int_equal(s1.cls[0].packets - s0.cls[0].packets, 1);
	assert_int_equal(drain_events(NULL), 0);
}

/* Expects an unparseable frame: default class, untouched, counted under *field. */
static void check_unparseable(const uint8_t *p, size_t len, size_t field_off)
{
	struct loom_tc_stats s0 = stats(), s1;
	struct result res;
	uint64_t before, after;

	run(p, len, &res);
	assert_int_equal(res.priority, PRIO(CLASSES - 1));
	assert_int_equal(res.out_len, len);
	assert_memory_equal(res.out, p, len);
	s1 = stats();
	memcpy(&before, (const char *)&s0 + field_off, sizeof(before));
	memcpy(&after, (const char *)&s1 + field_off, sizeof(after));
	assert_int_equal(after - before, 1);
	assert_int_equal(s1.known.packets, s0.known.packets);
	assert_int_equal(s1.unknown.packets, s0.unknown.packets);
	assert_int_equal(drain_events(NULL), 0);
}

#define FIELD(f) offsetof(struct loom_tc_stats, f.packets)

/*
 * Truncated frames. Recent kernels refuse to run a test frame whose
 * ethertype says IPv4/IPv6 when the IP header is not all there, so the cuts
 * inside the IP header are made behind an 802.1Q tag (the kernel looks at
 * the outer ethertype only; the program parses through the tag).
 */
static void test_truncated(void **state)
{
	uint8_t p[MAX_PKT];
	size_t n;

	(void)state;
	n = put_eth(p, 0x0800, true);
	n += put_ip4(p + n, 0, IPPROTO_TCP, 0, 5, TCP_LEN + PAYLOAD);
	n += put_l4(p + n, IPPROTO_TCP, 40001, 5001);
	check_unparseable(p, ETH_LEN, FIELD(truncated));          /* Ethernet only */
	check_unparseable(p, ETH_LEN + 2, FIELD(truncated));      /* the VLAN tag cut */
	check_unparseable(p, ETH_LEN + 4 + 10, FIELD(truncated)); /* IPv4 header cut */
	check_unparseable(p, ETH_LEN + 4 + IP4_LEN - 1, FIELD(truncated));
	n = frame4(p, IPPROTO_TCP, 40001, 5001, 0);
	check_unparseable(p, ETH_LEN + IP4_LEN + 10, FIELD(truncated)); /* TCP header cut */
	check_unparseable(p, ETH_LEN + IP4_LEN + TCP_LEN - 1, FIELD(truncated));
	n = frame4(p, IPPROTO_UDP, 40002, 5002, 0);
	check_unparseable(p, ETH_LEN + IP4_LEN + UDP_LEN - 1, FIELD(truncated)); /* UDP cut */
	n = put_eth(p, 0x86dd, true);
	n += put_ip6(p + n, 0, 0, IPPROTO_UDP, UDP_LEN + PAYLOAD);
	check_unparseable(p, ETH_LEN + 4 + IP6_LEN - 1, FIELD(truncated)); /* IPv6 header cut */
	n = frame6(p, IPPROTO_UDP, 40004, 5004, 0);
	check_unparseable(p, ETH_LEN + IP6_LEN + 4, FIELD(truncated)); /* UDP header cut */
	/* QinQ: every cut short of the TCP header's end */
	n = put_eth_tags(p, 0x0800, 2);
	n += put_ip4(p + n, 0, IPPROTO_TCP, 0, 5, TCP_LEN + PAYLOAD);
	n += put_l4(p + n, IPPROTO_TCP, 40001, 5001);
	for (size_t cut = ETH_LEN; cut < ETH_LEN + 8 + IP4_LEN + TCP_LEN; cut++)
		check_unparseable(p, cut, FIELD(truncated));
	(void)n;
}

/* More tags than QinQ: not parsed through; as non-IP, class 0 and untouched. */
static void test_three_tags(void **state)
{
	uint8_t p[MAX_PKT];
	size_t n = put_eth_tags(p, 0x0800, 3);
	struct loom_tc_stats s0 = stats(), s1;
	struct result res;

	(void)state;
	n += put_ip4(p + n, 0, IPPROTO_TCP, 0, 5, TCP_LEN + PAYLOAD);
	n += put_l4(p + n, IPPROTO_TCP, 40001, 5001);
	run(p, n, &res);
	assert_int_equal(res.priority, PRIO(0));
	assert_int_equal(res.out_len, n);
	assert_memory_equal(res.out, p, n);
	s1 = stats();
	assert_int_equal(s1.non_ip.packets - s0.non_ip.packets, 1);
	assert_int_equal(s1.known.packets, s0.known.packets);
	assert_int_equal(drain_events(NULL), 0);
}

/*
 * An IPv4 total length below the header length is a bad header; one that
 * leaves no room for the TCP/UDP header truncates it (the ports read past
 * it would be Ethernet padding): neither is classified as a flow.
 */
static void test_ipv4_total_length(void **state)
{
	static const int tags[] = {0, 1, 2};
	uint8_t p[MAX_PKT];

	(void)state;
	for (size_t t = 0; t < sizeof(tags) / sizeof(tags[0]); t++) {
		size_t l3 = put_eth_tags(p, 0x0800, tags[t]), n = l3;
		uint16_t c;

		n += put_ip4(p + n, 0, IPPROTO_TCP, 0, 6, TCP_LEN + PAYLOAD);
		n += put_l4(p + n, IPPROTO_TCP, 40001, 5001);
		for (unsigned tot = 0; tot <= 24 + TCP_LEN; tot++) {
			p[l3 + 2] = (uint8_t)(tot >> 8), p[l3 + 3] = (uint8_t)tot;
			p[l3 + 10] = 0, p[l3 + 11] = 0;
			c = csum16(p + l3, 24);
			p[l3 + 10] = (uint8_t)(c >> 8), p[l3 + 11] = (uint8_t)c;
			if (tot < 24)
				check_unparseable(p, n, FIELD(bad_header));
			else if (tot < 24 + TCP_LEN)
				check_unparseable(p, n, FIELD(truncated));
		}
		/* the same with UDP */
		n = l3 + put_ip4(p + l3, 0, IPPROTO_UDP, 0, 5, UDP_LEN + PAYLOAD);
		n += put_l4(p + n, IPPROTO_UDP, 40002, 5002);
		p[l3 + 2] = 0, p[l3 + 3] = 20 + UDP_LEN - 1;
		p[l3 + 10] = 0, p[l3 + 11] = 0;
		c = csum16(p + l3, 20);
		p[l3 + 10] = (uint8_t)(c >> 8), p[l3 + 11] = (uint8_t)c;
		check_unparseable(p, n, FIELD(truncated));
		p[l3 + 3] = 19;
		check_unparseable(p, n, FIELD(bad_header));
	}
}

static void test_bad_header_and_proto(void **state)
{
	uint8_t p[MAX_PKT];
	size_t len = frame4(p, IPPROTO_TCP, 40001, 5001, 0);

	(void)state;
	p[ETH_LEN] = 0x44; /* IHL 4 */
	check_unparseable(p, len, FIELD(bad_header));
	p[ETH_LEN] = 0x65; /* version 6 in an IPv4 frame */
	check_unparseable(p, len, FIELD(bad_header));
	len = frame4(p, 1 /* ICMP */, 0, 0, 0);
	check_unparseable(p, len, FIELD(other_proto));
}

static void test_fragments(void **state)
{
	uint8_t p[MAX_PKT];
	size_t n = put_eth(p, 0x0800, false);

	(void)state;
	/* a non-first IPv4 fragment of a known flow: no ports, so the default class */
	put_ip4(p + n, 0, IPPROTO_UDP, 185, 5, PAYLOAD);
	memset(p + n + IP4_LEN, 0xee, PAYLOAD);
	check_unparseable(p, n + IP4_LEN + PAYLOAD, FIELD(fragment));
	/* the first fragment (MF, offset 0) has the ports: the flow's class */
	n += put_ip4(p + n, 0, IPPROTO_UDP, 0x2000, 5, UDP_LEN + PAYLOAD);
	n += put_l4(p + n, IPPROTO_UDP, 40005, 5005);
	check_known(p, n, ETH_LEN, 4, 4, SLOT_V4_FRAG, 1);

	/* IPv6: a fragment header; non-first, then first */
	n = put_eth(p, 0x86dd, false);
	n += put_ip6(p + n, 0, 1, 44, 8 + UDP_LEN + PAYLOAD);
	p[n] = IPPROTO_UDP, p[n + 1] = 0, p[n + 2] = 0x01, p[n + 3] = 0x01; /* offset 32, MF */
	memset(p + n + 4, 0x11, 4);
	n += 8;
	n += put_l4(p + n, IPPROTO_UDP, 40008, 5008);
	check_unparseable(p, n, FIELD(fragment));
	p[ETH_LEN + IP6_LEN + 2] = 0x00; /* offset 0, MF: the first fragment */
	check_known(p, n, ETH_LEN, 6, 3, SLOT_V6_FRAG, 1);
}

static void test_ipv6_ext_headers(void **state)
{
	uint8_t p[MAX_PKT];
	size_t n = put_eth(p, 0x86dd, false), l4;

	(void)state;
	/* hop-by-hop (8 bytes) -> destination options (16 bytes) -> TCP */
	n += put_ip6(p + n, 0x01, 7, 0, 8 + 16 + TCP_LEN + PAYLOAD);
	memset(p + n, 0, 24);
	p[n] = 60, p[n + 1] = 0, p[n + 2] = 1, p[n + 3] = 4; /* PadN */
	p[n + 8] = IPPROTO_TCP, p[n + 9] = 1, p[n + 10] = 1, p[n + 11] = 12;
	n += 24;
	n += put_l4(p + n, IPPROTO_TCP, 40006, 5006);
	check_known(p, n, ETH_LEN, 6, 6, SLOT_V6_EXT, 2);

	/* five routing-like headers: more than the program walks, so not parsed */
	n = put_eth(p, 0x86dd, false);
	n += put_ip6(p + n, 0, 0, 60, 5 * 8 + TCP_LEN + PAYLOAD);
	for (int i = 0; i < 5; i++, n += 8) {
		memset(p + n, 0, 8);
		p[n] = i == 4 ? IPPROTO_TCP : 60;
		p[n + 2] = 1, p[n + 3] = 4;
	}
	l4 = n;
	n += put_l4(p + n, IPPROTO_TCP, 40006, 5006);
	(void)l4;
	check_unparseable(p, n, FIELD(other_proto));
}

/* Only the differences are written; a flow removed is unknown afterwards; bad input refused. */
static void test_sync(void **state)
{
	struct ebpf_tc_entry t2[4];
	struct ebpf_tc_sync_result res;
	struct ebpf_err err;
	uint8_t p[MAX_PKT];
	size_t len;
	struct result r;

	(void)state;
	memcpy(t2, table, sizeof(t2));
	t2[1].val.cls = 7;                          /* changed */
	t2[3].key = key4(IPPROTO_TCP, 42000, 7000); /* new; table[3] and [4..7] go */
	t2[3].val.slot = 20;
	t2[3].val.cls = 1;
	assert_int_equal(ebpf_tc_sync(tc, t2, 4, &res, &err), 0);
	assert_int_equal(res.updated, 2);
	assert_int_equal(res.deleted, 5);
	assert_int_equal(ebpf_tc_nflows(tc), 4);
	assert_int_equal(ebpf_tc_sync(tc, t2, 4, &res, &err), 0);
	assert_int_equal(res.updated, 0);
	assert_int_equal(res.deleted, 0);

	len = frame4(p, IPPROTO_UDP, 40002, 5002, 0);
	run(p, len, &r);
	assert_int_equal(r.priority, PRIO(7));
	len = frame4(p, IPPROTO_TCP, 42000, 7000, 0);
	run(p, len, &r);
	assert_int_equal(r.priority, PRIO(1));
	len = frame6(p, IPPROTO_UDP, 40004, 5004, 0); /* removed: unknown now */
	run(p, len, &r);
	assert_int_equal(r.priority, PRIO(CLASSES - 1));
	assert_int_equal(drain_events(NULL), 1);

	/* refused, and nothing changes */
	t2[0].val.cls = CLASSES;
	assert_int_equal(ebpf_tc_sync(tc, t2, 4, NULL, &err), -EINVAL);
	t2[0].val.cls = 0;
	t2[0].val.slot = LOOM_TC_FLOW_SLOTS;
	assert_int_equal(ebpf_tc_sync(tc, t2, 4, NULL, &err), -EINVAL);
	t2[0] = t2[1];
	assert_int_equal(ebpf_tc_sync(tc, t2, 4, NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "twice"));
	assert_int_equal(ebpf_tc_nflows(tc), 4);
	assert_int_equal(ebpf_tc_sync(tc, NULL, 0, &res, &err), 0);
	assert_int_equal(res.deleted, 4);
	assert_int_equal(ebpf_tc_nflows(tc), 0);
}

/* Tunables: no DSCP rewrite, another HTB major, fewer classes (a class beyond is clamped). */
static void test_tunables(void **state)
{
	struct ebpf_tc_opts o = {
		.classes = 3, .htb_major = 7, .rewrite_dscp = false, .default_class = 1};
	struct ebpf_tc_entry e = {.key = key4(IPPROTO_TCP, 40001, 5001),
				  .val = {.slot = 0, .cls = 2}};
	struct ebpf_tc *t2;
	uint8_t p[MAX_PKT];
	size_t len = frame4(p, IPPROTO_TCP, 40001, 5001, 0x01);
	struct ebpf_err err;
	struct result r;

	(void)state;
	t2 = ebpf_tc_new(&o, &err);
	assert_non_null(t2);
	assert_int_equal(ebpf_tc_sync(t2, &e, 1, NULL, &err), 0);
	run_prog(ebpf_tc_prog_fd(t2), p, len, &r);
	assert_int_equal(r.priority, 7u << 16 | (LOOM_TC_HTB_MINOR_BASE + 2));
	assert_memory_equal(r.out, p, len); /* DSCP untouched */
	len = frame4(p, IPPROTO_TCP, 40009, 5009, 0x01);
	run_prog(ebpf_tc_prog_fd(t2), p, len, &r);
	assert_int_equal(r.priority, 7u << 16 | (LOOM_TC_HTB_MINOR_BASE + 1));
	e.val.cls = 3;
	assert_int_equal(ebpf_tc_sync(t2, &e, 1, NULL, &err), -EINVAL);
	ebpf_tc_free(t2);

	/* bad options */
	o.classes = 0;
	assert_null(ebpf_tc_new(&o, &err));
	assert_int_equal(errno, EINVAL);
	o.classes = LOOM_TC_MAX_CLASSES + 1;
	assert_null(ebpf_tc_new(&o, &err));
	o.classes = 3;
	o.default_class = 3;
	assert_null(ebpf_tc_new(&o, &err));
	o.default_class = 0;
	o.dscp[1] = 64;
	assert_null(ebpf_tc_new(&o, &err));
	assert_non_null(strstr(err.msg, "DSCP"));
}

/*
 * small=: an unknown flow's packet of at most small_bytes goes to class 0, a
 * longer one to the default class; a known flow's keeps its class whatever
 * its length.
 */
static void test_small(void **state)
{
	struct ebpf_tc_opts o = {.classes = 4, .rewrite_dscp = true, .default_class = 3};
	struct ebpf_tc_entry e = {.key = key4(IPPROTO_UDP, 40002, 5002),
				  .val = {.slot = 0, .cls = 2}};
	struct ebpf_tc *t2;
	uint8_t p[MAX_PKT];
	size_t small = frame4(p, IPPROTO_UDP, 41100, 6100, 0), len;
	struct ebpf_err err;
	struct result r;

	(void)state;
	for (int c = 0; c < 4; c++)
		o.dscp[c] = DSCP(c);
	o.small_bytes = (uint32_t)small;
	t2 = ebpf_tc_new(&o, &err);
	assert_non_null(t2);
	assert_int_equal(ebpf_tc_sync(t2, &e, 1, NULL, &err), 0);
	run_prog(ebpf_tc_prog_fd(t2), p, small, &r);
	assert_int_equal(r.priority, PRIO(0));
	assert_int_equal(r.out[ETH_LEN + 1], DSCP(0) << 2);
	/* longer (a TCP header instead of UDP's): the default class */
	len = frame4(p, IPPROTO_TCP, 41101, 6101, 0);
	assert_true(len > small);
	run_prog(ebpf_tc_prog_fd(t2), p, len, &r);
	assert_int_equal(r.priority, PRIO(3));
	/* a known flow's small packet: its own class */
	len = frame4(p, IPPROTO_UDP, 40002, 5002, 0);
	run_prog(ebpf_tc_prog_fd(t2), p, len, &r);
	assert_int_equal(r.priority, PRIO(2));
	ebpf_tc_free(t2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4_tcp),
		cmocka_unit_test(test_ipv4_udp),
		cmocka_unit_test(test_ipv6_tcp),
		cmocka_unit_test(test_ipv6_udp),
		cmocka_unit_test(test_ipv4_options_vlan),
		cmocka_unit_test(test_qinq),
		cmocka_unit_test(test_three_tags),
		cmocka_unit_test(test_ipv4_total_length),
		cmocka_unit_test(test_unknown),
		cmocka_unit_test(test_non_ip),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_bad_header_and_proto),
		cmocka_unit_test(test_fragments),
		cmocka_unit_test(test_ipv6_ext_headers),
		cmocka_unit_test(test_sync),
		cmocka_unit_test(test_tunables),
		cmocka_unit_test(test_small),
	};
	struct ebpf_tc_opts o = {
		.classes = CLASSES, .rewrite_dscp = true, .default_class = CLASSES - 1};
	struct ebpf_err err;
	int r;

	if (geteuid() != 0) {
		printf("skipped: loading BPF programs needs root\n");
		return 77;
	}
	for (int c = 0; c < CLASSES; c++)
		o.dscp[c] = DSCP(c);
	tc = ebpf_tc_new(&o, &err);
	if (!tc && (errno == EPERM || errno == ENOSYS || errno == EOPNOTSUPP)) {
		printf("skipped: no BPF here: %s\n", err.msg);
		return 77;
	}
	if (!tc) { /* e.g. the verifier refused it: a bug, not a missing feature */
		printf("the program does not load: %s\n", err.msg);
		return 1;
	}
	r = cmocka_run_group_tests(tests, group_setup, NULL);
	ebpf_tc_free(tc);
	return r;
}
