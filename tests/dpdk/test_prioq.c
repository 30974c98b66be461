/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for dataplane/dpdk/prioq, in a process running the EAL without
 * hugepages or PCI (exit 77 = skipped when the EAL cannot start): bad
 * arguments to dp_dpdk_prioq_new(); strict-priority order over a mixed enqueue;
 * FIFO within a class; overflow drops (compacted to the end of the burst, in
 * order) and the per-class counters; clamping of out-of-range classes; a
 * randomized sequence (fixed seed) against a reference model, checked after
 * every dequeue burst, with and without a shaper; and the token bucket on a
 * virtual TSC advanced by the test (never wall time): 1 s at 100 Mbit/s
 * within 1% (plus the burst), rate 0 = unlimited, exact refill without
 * overflow at 400 Gbit/s on a 3 GHz TSC over short and very long gaps, and
 * the burst cap after idle.
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

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "common/rng.h"
#include "dataplane/dpdk/prioq.h"

#define TSC_HZ UINT64_C(3000000000)

static struct rte_mempool *pool;

/* What the test writes at the start of each packet. */
struct tag {
	uint32_t seq;
	uint32_t cls;
};

static struct rte_mbuf *mkpkt(uint32_t seq, uint32_t cls, uint16_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	struct tag *t;

	assert_non_null(m);
	assert_true(len >= sizeof(*t));
	t = (struct tag *)rte_pktmbuf_append(m, len);
	assert_non_null(t);
	t->seq = seq;
	t->cls = cls;
	return m;
}

static uint32_t pkt_seq(const struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod(m, const struct tag *)->seq;
}

static uint32_t pkt_cls(const struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod(m, const struct tag *)->cls;
}

static void free_all(struct rte_mbuf **pkts, unsigned int n)
{
	rte_pktmbuf_free_bulk(pkts, n);
}

static void test_new_args(void **state)
{
	char longname[64];
	struct dp_dpdk_prioq *q, *q2;

	(void)state;
	errno = 0;
	assert_null(dp_dpdk_prioq_new("a", 0, 8, SOCKET_ID_ANY));
	assert_int_equal(errno, EINVAL);
	assert_null(dp_dpdk_prioq_new("a", 65, 8, SOCKET_ID_ANY));
	assert_int_equal(errno, EINVAL);
	assert_null(dp_dpdk_prioq_new("a", 4, 0, SOCKET_ID_ANY));
	assert_int_equal(errno, EINVAL);
	assert_null(dp_dpdk_prioq_new("", 4, 8, SOCKET_ID_ANY));
	assert_int_equal(errno, EINVAL);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_null(dp_dpdk_prioq_new(longname, 4, 8, SOCKET_ID_ANY));
	assert_int_equal(errno, ENAMETOOLONG);

	q = dp_dpdk_prioq_new("dup", 64, 8, SOCKET_ID_ANY);
	assert_non_null(q);
	assert_int_equal(dp_dpdk_prioq_nclasses(q), 64);
	q2 = dp_dpdk_prioq_new("dup", 2, 8, SOCKET_ID_ANY);
	assert_null(q2);
	assert_int_equal(errno, EEXIST);
	assert_null(dp_dpdk_prioq_free(q));
	assert_null(dp_dpdk_prioq_free(NULL));
	/* The name is free again, and the failed attempt left nothing behind. */
	q = dp_dpdk_prioq_new("dup", 2, 8, SOCKET_ID_ANY);
	assert_non_null(q);
	dp_dpdk_prioq_free(q);
}

static void test_strict_order(void **state)
{
	static const uint8_t order[] = {3, 1, 0, 2, 1, 3, 0, 2, 2, 0, 3, 1, 0, 0, 3, 1};
	struct rte_mbuf *pkts[32], *out[32];
	uint8_t cls[32];
	uint32_t next_seq[4] = {0}, prev_cls = 0;
	struct dp_dpdk_prioq *q;
	uint16_t n = RTE_DIM(order), got, total = 0;

	(void)state;
	q = dp_dpdk_prioq_new("strict", 4, 64, SOCKET_ID_ANY);
	assert_non_null(q);
	for (uint16_t i = 0; i < n; i++) {
		cls[i] = order[i];
		pkts[i] = mkpkt(i, order[i], 64);
	}
	assert_int_equal(dp_dpdk_prioq_enqueue_burst(q, pkts, cls, n), n);

	/* Bursts of 3: every class-c packet comes before any of class c + 1. */
	while ((got = dp_dpdk_prioq_dequeue_burst(q, out, 3, NULL, 0)) > 0) {
		for (uint16_t i = 0; i < got; i++) {
			uint32_t c = pkt_cls(out[i]);

			assert_true(c >= prev_cls);
			for (uint32_t h = 0; h < c; h++)
				assert_int_equal(dp_dpdk_prioq_count(q, h), 0);
			/* FIFO within the class: seqs of class c grow. */
			assert_true(pkt_seq(out[i]) >= next_seq[c]);
			next_seq[c] = pkt_seq(out[i]) + 1;
			prev_cls = c;
		}
		total += got;
		free_all(out, got);
	}
	assert_int_equal(total, n);
	dp_dpdk_prioq_free(q);
}

static void test_fifo_within_class(void **state)
{
	struct rte_mbuf *pkts[200], *out[64];
	uint8_t cls[200];
	struct dp_dpdk_prioq *q;
	uint32_t expect = 0;
	uint16_t got;

	(void)state;
	q = dp_dpdk_prioq_new("fifo", 2, 256, SOCKET_ID_ANY);
	assert_non_null(q);
	for (uint32_t i = 0; i < 200; i++) {
		cls[i] = 1;
		pkts[i] = mkpkt(i, 1, 100);
	}
	/* Several enqueue bursts of odd sizes. */
	assert_int_equal(dp_dpdk_prioq_enqueue_burst(q, pkts, cls, 7), 7);
	assert_int_equal(dp_dpdk_prioq_enqueue_burst(q, pkts + 7, cls, 120), 120);
	assert_int_equal(dp_dpdk_prioq_enqueue_burst(q, pkts + 127, cls, 73), 73);
	assert_int_equal(dp_dpdk_prioq_count(q, 1), 200);
	while ((got = dp_dpdk_prioq_dequeue_burst(q, out, 64, NULL, 0)) > 0) {
		for (uint16_t i = 0; i < got; i++)
			assert_int_equal(pkt_seq(out[i]), expect++);
		free_all(out, got);
	}
	assert_int_equal(expect, 200);
	dp_dpdk_prioq_free(q);
}

static void test_overflow_drops(void **state)
{
	/* 7 of class 0 and 6 of class 1 into rings of 4, interleaved. */
	static const uint8_t cl[] = {0, 0, 1, 0, 1, 1, 0, 0, 1, 1, 1, 0, 0};
	struct rte_mbuf *pkts[16], *out[16];
	uint8_t cls[16];
	struct dp_dpdk_prioq_stats st;
	struct dp_dpdk_prioq *q;
	uint16_t n = RTE_DIM(cl), k, got;
	uint32_t seen[2] = {0};
	uint32_t expect_drop[16], nexp = 0;

	(void)state;
	q = dp_dpdk_prioq_new("ovf", 2, 4, SOCKET_ID_ANY);
	assert_non_null(q);
	for (uint16_t i = 0; i < n; i++) {
		cls[i] = cl[i];
		pkts[i] = mkpkt(i, cl[i], 200);
		if (seen[cl[i]]++ >= 4)
			expect_drop[nexp++] = i;
	}
	k = dp_dpdk_prioq_enqueue_burst(q, pkts, cls, n);
	assert_int_equal(k, 8);
	assert_int_equal(n - k, nexp);
	/* The dropped packets are at the end, in their original order. */
	for (uint16_t i = 0; i < nexp; i++)
		assert_int_equal(pkt_seq(pkts[k + i]), expect_drop[i]);
	free_all(pkts + k, n - k);

	assert_int_equal(dp_dpdk_prioq_stats(q, 0, &st), 0);
	assert_int_equal(st.enq_pkts, 4);
	assert_int_equal(st.drop_pkts, 3);
	assert_int_equal(st.deq_pkts, 0);
	assert_int_equal(dp_dpdk_prioq_stats(q, 1, &st), 0);
	assert_int_equal(st.enq_pkts, 4);
	assert_int_equal(st.drop_pkts, 2);
	assert_int_equal(dp_dpdk_prioq_stats(q, 2, &st), -EINVAL);

	/* A full class still drops while the other has room. */
	got = dp_dpdk_prioq_dequeue_burst(q, out, 2, NULL, 0);
	assert_int_equal(got, 2);
	assert_int_equal(pkt_cls(out[0]), 0);
	assert_int_equal(pkt_seq(out[0]), 0);
	assert_int_equal(pkt_seq(out[1]), 1);
	free_all(out, got);
	pkts[0] = mkpkt(100, 1, 200);
	pkts[1] = mkpkt(101, 0, 200);
	cls[0] = 1;
	cls[1] = 0;
	k = dp_dpdk_prioq_enqueue_burst(q, pkts, cls, 2);
	assert_int_equal(k, 1);
	assert_int_equal(pkt_seq(pkts[1]), 100);
	free_all(pkts + 1, 1);

	got = dp_dpdk_prioq_dequeue_burst(q, out, 16, NULL, 0);
	assert_int_equal(got, 7);
	free_all(out, got);
	assert_int_equal(dp_dpdk_prioq_stats(q, 0, &st), 0);
	assert_int_equal(st.enq_pkts, 5);
	assert_int_equal(st.drop_pkts, 3);
	assert_int_equal(st.deq_pkts, 5);
	assert_int_equal(st.deq_bytes, 5 * 200);
	assert_int_equal(dp_dpdk_prioq_stats(q, 1, &st), 0);
	assert_int_equal(st.enq_pkts, 4);
	assert_int_equal(st.drop_pkts, 3);
	assert_int_equal(st.deq_pkts, 4);
	assert_int_equal(st.deq_bytes, 4 * 200);
	assert_int_equal(dp_dpdk_prioq_dequeue_burst(q, out, 16, NULL, 0), 0);
	dp_dpdk_prioq_free(q);
}

static void test_clamp_class(void **state)
{
	struct rte_mbuf *pkts[4], *out[4];
	uint8_t cls[4] = {7, 255, 3, 1};
	struct dp_dpdk_prioq_stats st;
	struct dp_dpdk_prioq *q;
	uint16_t got;

	(void)state;
	q = dp_dpdk_prioq_new("clamp", 3, 8, SOCKET_ID_ANY);
	assert_non_null(q);
	for (uint32_t i = 0; i < 4; i++)
		pkts[i] = mkpkt(i, cls[i], 64);
	assert_int_equal(dp_dpdk_prioq_enqueue_burst(q, pkts, cls, 4), 4);
	assert_int_equal(dp_dpdk_prioq_count(q, 0), 0);
	assert_int_equal(dp_dpdk_prioq_count(q, 1), 1);
	assert_int_equal(dp_dpdk_prioq_count(q, 2), 3);
	assert_int_equal(dp_dpdk_prioq_count(q, 3), 0);
	assert_int_equal(dp_dpdk_prioq_stats(q, 2, &st), 0);
	assert_int_equal(st.enq_pkts, 3);

	got = dp_dpdk_prioq_dequeue_burst(q, out, 4, NULL, 0);
	assert_int_equal(got, 4);
	assert_int_equal(pkt_seq(out[0]), 3);
	assert_int_equal(pkt_seq(out[1]), 0);
	assert_int_equal(pkt_seq(out[2]), 1);
	assert_int_equal(pkt_seq(out[3]), 2);
	free_all(out, got);
	dp_dpdk_prioq_free(q);
}

/* Reference model: per-class FIFOs of seqs. */
#define MODEL_CLASSES 8
#define MODEL_RING    32

struct model {
	uint32_t q[MODEL_CLASSES][MODEL_RING];
	uint32_t head[MODEL_CLASSES], len[MODEL_CLASSES];
};

static bool model_push(struct model *m, uint32_t c, uint32_t seq)
{
	if (m->len[c] == MODEL_RING)
		return false;
	m->q[c][(m->head[c] + m->len[c]) % MODEL_RING] = seq;
	m->len[c]++;
	return true;
}

/* Pops the strict-priority next packet; returns its class via *ret_cls. */
static uint32_t model_pop(struct model *m, uint32_t *ret_cls)
{
	for (uint32_t c = 0; c < MODEL_CLASSES; c++) {
		if (m->len[c]) {
			uint32_t seq = m->q[c][m->head[c]];

			m->head[c] = (m->head[c] + 1) % MODEL_RING;
			m->len[c]--;
			*ret_cls = c;
			return seq;
		}
	}
	fail_msg("model is empty");
	return 0;
}

static void test_random_vs_model(void **state)
{
	struct rte_mbuf *pkts[64], *out[64];
	uint8_t cls[64];
	struct model m;
	struct loom_rng rng;
	struct dp_dpdk_shaper sh;
	struct dp_dpdk_prioq *q;
	uint64_t now = 0;
	uint32_t seq = 0, ndeq = 0, ndrop = 0;

	(void)state;
	memset(&m, 0, sizeof(m));
	loom_rng_seed(&rng, 0x10011001);
	q = dp_dpdk_prioq_new("rand", MODEL_CLASSES, MODEL_RING, SOCKET_ID_ANY);
	assert_non_null(q);
	/* 1 Gbit/s, a burst of ~4 full-size frames. */
	dp_dpdk_shaper_init(&sh, 1000000000, 6000, TSC_HZ, now);

	for (int step = 0; step < 20000; step++) {
		uint16_t n = (uint16_t)loom_rng_below(&rng, 41);
		uint32_t expect_drop[64], nexp = 0;
		uint16_t k, max, got;
		bool shaped;

		for (uint16_t i = 0; i < n; i++) {
			/* Mostly valid classes, sometimes out of range. */
			uint32_t c = (uint32_t)loom_rng_below(&rng, MODEL_CLASSES + 3);
			uint32_t mc = c < MODEL_CLASSES ? c : MODEL_CLASSES - 1;
			uint16_t len = (uint16_t)(64 + loom_rng_below(&rng, 1437));

			cls[i] = c < MODEL_CLASSES ? (uint8_t)c : (uint8_t)(200 + c);
			pkts[i] = mkpkt(seq, mc, len);
			if (!model_push(&m, mc, seq))
				expect_drop[nexp++] = seq;
			seq++;
		}
		k = dp_dpdk_prioq_enqueue_burst(q, pkts, cls, n);
		assert_int_equal(n - k, nexp);
		for (uint32_t i = 0; i < nexp; i++)
			assert_int_equal(pkt_seq(pkts[k + i]), expect_drop[i]);
		free_all(pkts + k, n - k);
		ndrop += nexp;

		/* Dequeue with the shaper on in alternating stretches. */
		shaped = (step / 500) % 2 == 1;
		now += loom_rng_below(&rng, 20000);
		max = (uint16_t)loom_rng_below(&rng, 49);
		got = dp_dpdk_prioq_dequeue_burst(q, out, max, shaped ? &sh : NULL, now);
		assert_true(got <= max);
		for (uint16_t i = 0; i < got; i++) {
			uint32_t mc;
			uint32_t s = model_pop(&m, &mc);

			assert_int_equal(pkt_seq(out[i]), s);
			assert_int_equal(pkt_cls(out[i]), mc);
		}
		/*
		 * After the burst, no class above the lowest one that left may
		 * still hold packets, and the queue agrees with the model.
		 */
		for (uint16_t i = 0; i < got; i++)
			for (uint32_t h = 0; h < pkt_cls(out[i]); h++)
				assert_int_equal(dp_dpdk_prioq_count(q, h), 0);
		for (uint32_t c = 0; c < MODEL_CLASSES; c++)
			assert_int_equal(dp_dpdk_prioq_count(q, c), m.len[c]);
		if (!shaped && got < max)
			for (uint32_t c = 0; c < MODEL_CLASSES; c++)
				assert_int_equal(m.len[c], 0);
		ndeq += got;
		free_all(out, got);
	}
	assert_true(ndeq > 10000);
	assert_true(ndrop > 100);
	dp_dpdk_prioq_free(q);
}

/* Keeps q's class 0 topped up to 64 packets of pkt_len bytes. */
static void top_up(struct dp_dpdk_prioq *q, uint16_t pkt_len, uint32_t *seq)
{
	struct rte_mbuf *pkts[64];
	uint8_t cls[64] = {0};
	uint32_t have = dp_dpdk_prioq_count(q, 0);
	uint16_t n = (uint16_t)(64 - have);

	for (uint16_t i = 0; i < n; i++)
		pkts[i] = mkpkt((*seq)++, 0, pkt_len);
	assert_int_equal(dp_dpdk_prioq_enqueue_burst(q, pkts, cls, n), n);
}

static void test_shaper_rate(void **state)
{
	const uint64_t rate_bps = 100000000, burst = 10 * 1524;
	const uint64_t ideal = rate_bps / 8; /* bytes in 1 s */
	struct rte_mbuf *out[32];
	struct dp_dpdk_shaper sh;
	struct dp_dpdk_prioq_stats st;
	struct loom_rng rng;
	struct dp_dpdk_prioq *q;
	uint64_t now = 12345, end = now + TSC_HZ, wire = 0, pkts = 0;
	uint32_t seq = 0;

	(void)state;
	loom_rng_seed(&rng, 42);
	q = dp_dpdk_prioq_new("rate", 2, 128, SOCKET_ID_ANY);
	assert_non_null(q);
	dp_dpdk_shaper_init(&sh, rate_bps, burst, TSC_HZ, now);
	assert_int_equal(dp_dpdk_shaper_burst_bytes(&sh), burst);

	/* Irregular polling, 1 cycle to 10 us apart, over 1 s of virtual TSC. */
	while (now < end) {
		uint16_t got;

		top_up(q, 1500, &seq);
		got = dp_dpdk_prioq_dequeue_burst(q, out, 32, &sh, now);
		for (uint16_t i = 0; i < got; i++)
			wire += dp_dpdk_wire_bytes(out[i]);
		pkts += got;
		free_all(out, got);
		now += 1 + loom_rng_below(&rng, 30000);
	}
	assert_int_equal(wire, pkts * 1524);
	assert_true(wire <= ideal + burst);
	assert_true(wire >= ideal - ideal / 100);
	/* The bucket is exact: short of the ideal by less than one packet. */
	assert_true(wire + 1524 > ideal + burst - 1524);
	assert_int_equal(dp_dpdk_prioq_stats(q, 0, &st), 0);
	assert_int_equal(st.deq_pkts, pkts);
	assert_int_equal(st.deq_bytes, pkts * 1500);
	dp_dpdk_prioq_free(q);
}

static void test_shaper_unlimited(void **state)
{
	struct rte_mbuf *pkts[200], *out[256];
	uint8_t cls[200] = {0};
	struct dp_dpdk_shaper sh;
	struct dp_dpdk_prioq *q;

	(void)state;
	q = dp_dpdk_prioq_new("unl", 1, 256, SOCKET_ID_ANY);
	assert_non_null(q);
	dp_dpdk_shaper_init(&sh, 0, 0, TSC_HZ, 0);
	assert_int_equal(dp_dpdk_shaper_tokens_bytes(&sh), UINT64_MAX);
	for (uint32_t i = 0; i < 200; i++)
		pkts[i] = mkpkt(i, 0, 1500);
	assert_int_equal(dp_dpdk_prioq_enqueue_burst(q, pkts, cls, 200), 200);
	/* Same instant, 300 kB: all of it leaves. */
	assert_int_equal(dp_dpdk_prioq_dequeue_burst(q, out, 150, &sh, 0), 150);
	assert_int_equal(dp_dpdk_prioq_dequeue_burst(q, out + 150, 100, &sh, 0), 50);
	for (uint32_t i = 0; i < 200; i++)
		assert_int_equal(pkt_seq(out[i]), i);
	free_all(out, 200);
	dp_dpdk_prioq_free(q);
}

/* Expected bytes in a bucket after a refill, in 128-bit arithmetic. */
static uint64_t expect_tokens(const struct dp_dpdk_shaper *s, uint64_t tokens_before,
			      uint64_t elapsed)
{
	unsigned __int128 t =
		(unsigned __int128)tokens_before + (unsigned __int128)elapsed * s->rate_bps;

	if (t > s->cap)
		t = s->cap;
	return (uint64_t)(t / s->byte_cost);
}

static void test_shaper_400g(void **state)
{
	const uint64_t rate_bps = 400000000000, burst = 1 << 20;
	struct rte_mbuf *pkts[1000], *out[1000];
	uint8_t cls[1000] = {0};
	struct dp_dpdk_shaper sh;
	struct dp_dpdk_prioq *q;
	uint64_t now = 0, before;
	uint16_t got;

	(void)state;
	q = dp_dpdk_prioq_new("g400", 1, 1024, SOCKET_ID_ANY);
	assert_non_null(q);
	dp_dpdk_shaper_init(&sh, rate_bps, burst, TSC_HZ, now);
	assert_int_equal(dp_dpdk_shaper_tokens_bytes(&sh), burst);
	for (uint32_t i = 0; i < 1000; i++)
		pkts[i] = mkpkt(i, 0, 1500);
	assert_int_equal(dp_dpdk_prioq_enqueue_burst(q, pkts, cls, 1000), 1000);

	/* Drain the bucket at one instant: floor(1 MiB / 1524) packets. */
	got = dp_dpdk_prioq_dequeue_burst(q, out, 1000, &sh, now);
	assert_int_equal(got, burst / 1524);
	assert_int_equal(dp_dpdk_shaper_tokens_bytes(&sh), burst - got * 1524);
	free_all(out, got);

	/* 1 us at 400 Gbit/s = 50,000 bytes, exactly. */
	before = sh.tokens;
	now += TSC_HZ / 1000000;
	dp_dpdk_shaper_refill(&sh, now);
	assert_int_equal(dp_dpdk_shaper_tokens_bytes(&sh), burst - got * 1524 + 50000);
	assert_int_equal(dp_dpdk_shaper_tokens_bytes(&sh), expect_tokens(&sh, before, 3000));

	/* Gaps around the fill time (~62,915 cycles), and far beyond it. */
	static const uint64_t gaps[] = {1,
					62000,
					62914,
					62915,
					62916,
					1000000,
					TSC_HZ * 3600,
					UINT64_C(1) << 40,
					UINT64_C(1) << 62};
	for (size_t i = 0; i < RTE_DIM(gaps); i++) {
		/* Refill the queue to 1000 packets, then empty the bucket. */
		uint16_t n = (uint16_t)(1000 - dp_dpdk_prioq_count(q, 0));

		for (uint16_t j = 0; j < n; j++)
			pkts[j] = mkpkt(j, 0, 1500);
		assert_int_equal(dp_dpdk_prioq_enqueue_burst(q, pkts, cls, n), n);
		got = dp_dpdk_prioq_dequeue_burst(q, out, 1000, &sh, now);
		free_all(out, got);
		before = sh.tokens;
		assert_true(dp_dpdk_shaper_tokens_bytes(&sh) < 1524);
		now += gaps[i];
		dp_dpdk_shaper_refill(&sh, now);
		assert_int_equal(dp_dpdk_shaper_tokens_bytes(&sh),
				 expect_tokens(&sh, before, gaps[i]));
		assert_true(dp_dpdk_shaper_tokens_bytes(&sh) <= burst);
	}
	assert_int_equal(dp_dpdk_shaper_tokens_bytes(&sh), burst);

	/* A TSC going backwards earns nothing and breaks nothing. */
	dp_dpdk_shaper_refill(&sh, 5);
	assert_int_equal(dp_dpdk_shaper_tokens_bytes(&sh), burst);

	/* A burst too big for 64-bit bit-cycles is clamped, and still refills. */
	dp_dpdk_shaper_init(&sh, rate_bps, UINT64_MAX, TSC_HZ, 0);
	assert_int_equal(dp_dpdk_shaper_burst_bytes(&sh), UINT64_MAX / (8 * TSC_HZ));
	sh.tokens = 0;
	dp_dpdk_shaper_refill(&sh, UINT64_MAX);
	assert_int_equal(dp_dpdk_shaper_tokens_bytes(&sh), dp_dpdk_shaper_burst_bytes(&sh));
	sh.tokens = 0;
	sh.last_tsc = 0;
	dp_dpdk_shaper_refill(&sh, TSC_HZ / 1000);
	assert_int_equal(dp_dpdk_shaper_tokens_bytes(&sh), rate_bps / 8 / 1000);
	dp_dpdk_prioq_free(q);
}

static void test_shaper_burst_after_idle(void **state)
{
	const uint64_t rate_bps = 100000000, burst = 10 * 1524;
	/* One 1524-byte frame at 100 Mbit/s: 121.92 us = 365,760 cycles. */
	const uint64_t pkt_cycles = 1524 * 8 * TSC_HZ / rate_bps;
	struct rte_mbuf *out[64];
	struct dp_dpdk_shaper sh;
	struct dp_dpdk_prioq *q;
	uint64_t now = 1000;
	uint32_t seq = 0;
	uint16_t got;

	(void)state;
	assert_int_equal(pkt_cycles, 365760);
	q = dp_dpdk_prioq_new("idle", 2, 128, SOCKET_ID_ANY);
	assert_non_null(q);
	dp_dpdk_shaper_init(&sh, rate_bps, burst, TSC_HZ, now);
	top_up(q, 1500, &seq);

	got = dp_dpdk_prioq_dequeue_burst(q, out, 64, &sh, now);
	assert_int_equal(got, 10);
	free_all(out, got);
	assert_int_equal(dp_dpdk_prioq_dequeue_burst(q, out, 64, &sh, now), 0);

	/* Idle for 10 s: the bucket holds one burst, no more. */
	now += 10 * TSC_HZ;
	got = dp_dpdk_prioq_dequeue_burst(q, out, 64, &sh, now);
	assert_int_equal(got, 10);
	free_all(out, got);
	assert_int_equal(dp_dpdk_prioq_count(q, 0), 64 - 20);

	/* Then exactly one frame per frame time. */
	now += pkt_cycles - 1;
	assert_int_equal(dp_dpdk_prioq_dequeue_burst(q, out, 64, &sh, now), 0);
	now += 1;
	got = dp_dpdk_prioq_dequeue_burst(q, out, 64, &sh, now);
	assert_int_equal(got, 1);
	assert_int_equal(pkt_seq(out[0]), 20);
	free_all(out, got);

	/* A blocked class-1 head never passes a waiting class-0 packet. */
	{
		struct rte_mbuf *p[1] = {mkpkt(1000, 1, 60)};
		uint8_t c1[1] = {1};

		assert_int_equal(dp_dpdk_prioq_enqueue_burst(q, p, c1, 1), 1);
	}
	now += pkt_cycles / 2;
	assert_int_equal(dp_dpdk_prioq_dequeue_burst(q, out, 64, &sh, now), 0);
	assert_int_equal(dp_dpdk_prioq_count(q, 1), 1);
	dp_dpdk_prioq_free(q);
}

int main(void)
{
	const char *args[] = {"test", "--no-huge", "--no-pci",    "--no-shconf",
			      "-m",   "512",       "--log-level", "error"};
	char *argv[RTE_DIM(args)];
	int rc;

	for (size_t i = 0; i < RTE_DIM(args); i++)
		argv[i] = (char *)args[i];
	if (rte_eal_init((int)RTE_DIM(args), argv) < 0) {
		printf("skipped: rte_eal_init failed: %s\n", rte_strerror(rte_errno));
		return 77;
	}
	pool = rte_pktmbuf_pool_create("prioq_test", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				       SOCKET_ID_ANY);
	if (!pool) { /* the EAL runs: a missing pool is a failure, not this machine's */
		fprintf(stderr, "FAIL: mbuf pool: %s\n", rte_strerror(rte_errno));
		rte_eal_cleanup();
		return 1;
	}

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_args),
		cmocka_unit_test(test_strict_order),
		cmocka_unit_test(test_fifo_within_class),
		cmocka_unit_test(test_overflow_drops),
		cmocka_unit_test(test_clamp_class),
		cmocka_unit_test(test_random_vs_model),
		cmocka_unit_test(test_shaper_rate),
		cmocka_unit_test(test_shaper_unlimited),
		cmocka_unit_test(test_shaper_400g),
		cmocka_unit_test(test_shaper_burst_after_idle),
	};
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	/* Every test returns its mbufs: the pool is whole again. */
	if (rc == 0 && rte_mempool_avail_count(pool) != 4095) {
		printf("mbuf leak: %u of 4095 in the pool\n", rte_mempool_avail_count(pool));
		rc = 1;
	}
	rte_mempool_free(pool);
	rte_eal_cleanup();
	return rc;
}
