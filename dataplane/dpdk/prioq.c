/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dataplane/dpdk/prioq: strict-priority egress queues (a bitmap of non-empty
 * classes over SP/SC rte_rings) and a token-bucket shaper. See prioq.h.
 */
#include "dataplane/dpdk/prioq.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <rte_ring_peek.h>

/* Written by the producer only. */
struct dp_dpdk_prioq_prod_stats {
	uint64_t enq_pkts;
	uint64_t drop_pkts;
};

/* Written by the consumer only. */
struct dp_dpdk_prioq_cons_stats {
	uint64_t deq_pkts;
	uint64_t deq_bytes;
};

struct dp_dpdk_prioq {
	/* Shared: bit c set => class c may hold packets. Atomic or/and only. */
	uint64_t nonempty;
	uint32_t nclasses;
	struct rte_ring *rings[DP_DPDK_PRIOQ_MAX_CLASSES];

	/* Consumer only. */
	struct dp_dpdk_prioq_cons_stats cons[DP_DPDK_PRIOQ_MAX_CLASSES] __rte_cache_aligned;

	struct dp_dpdk_prioq_prod_stats prod[DP_DPDK_PRIOQ_MAX_CLASSES] __rte_cache_aligned;
};

struct dp_dpdk_prioq *dp_dpdk_prioq_new(const char *name, uint32_t nclasses, uint32_t ring_size,
					int socket_id)
{
	struct dp_dpdk_prioq *q;
	char rname[RTE_RING_NAMESIZE];
	int err;

	if (!name || !name[0] || nclasses < 1 || nclasses > DP_DPDK_PRIOQ_MAX_CLASSES ||
	    ring_size < 1 || ring_size > RTE_RING_SZ_MASK) {
		errno = EINVAL;
		return NULL;
	}
	/* The longest ring name, "<name>_63", must fit; check before allocating. */
	if (snprintf(rname, sizeof(rname), "%s_%u", name, nclasses - 1) >= (int)sizeof(rname)) {
		errno = ENAMETOOLONG;
		return NULL;
	}

	q = rte_zmalloc_socket("dp_dpdk_prioq", sizeof(*q), RTE_CACHE_LINE_SIZE, socket_id);
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	q->nclasses = nclasses;
	for (uint32_t c = 0; c < nclasses; c++) {
		snprintf(rname, sizeof(rname), "%s_%u", name, c);
		q->rings[c] = rte_ring_create(rname, ring_size, socket_id,
					      RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
		if (!q->rings[c]) {
			err = rte_errno ? rte_errno : ENOMEM;
			goto fail;
		}
	}
	return q;

fail:
	dp_dpdk_prioq_free(q);
	errno = err;
	return NULL;
}

struct dp_dpdk_prioq *dp_dpdk_prioq_free(struct dp_dpdk_prioq *q)
{
	void *m;

	if (!q)
		return NULL;
	for (uint32_t c = 0; c < q->nclasses; c++) {
		if (!q->rings[c])
			continue;
		while (rte_ring_sc_dequeue(q->rings[c], &m) == 0)
			rte_pktmbuf_free(m);
		rte_ring_free(q->rings[c]);
	}
	rte_free(q);
	return NULL;
}

uint32_t dp_dpdk_prioq_nclasses(const struct dp_dpdk_prioq *q)
{
	return q->nclasses;
}

uint16_t dp_dpdk_prioq_enqueue_burst(struct dp_dpdk_prioq *q, struct rte_mbuf **pkts,
				     const uint8_t *cls, uint16_t n)
{
	const uint32_t lowest = q->nclasses - 1;
	uint64_t touched = 0;
	uint16_t ndrop = 0;
	uint16_t i = 0;

	/*
	 * Enqueue runs of consecutive packets of one class with one ring call.
	 * Dropped packets are gathered at pkts[0..ndrop-1] as we go (ndrop <=
	 * i always, and the slots before i hold only handled packets), then
	 * moved to the end.
	 */
	while (i < n) {
		uint32_t c = cls[i] < q->nclasses ? cls[i] : lowest;
		uint16_t run = 1;
		unsigned int done;

		while (i + run < n && (cls[i + run] < q->nclasses ? cls[i + run] : lowest) == c)
			run++;
		done = rte_ring_sp_enqueue_burst(q->rings[c], (void *const *)(pkts + i), run, NULL);
		if (done)
			touched |= UINT64_C(1) << c;
		DP_DPDK_COUNT_ADD(q->prod[c].enq_pkts, done);
		if (done < run) {
			uint16_t nd = run - done;

			memmove(pkts + ndrop, pkts + i + done, nd * sizeof(*pkts));
			ndrop += nd;
			DP_DPDK_COUNT_ADD(q->prod[c].drop_pkts, nd);
		}
		i += run;
	}

	/* Release: a consumer that sees the bit also sees the ring entries. */
	if (touched)
		__atomic_fetch_or(&q->nonempty, touched, __ATOMIC_RELEASE);

	if (ndrop)
		memmove(pkts + (n - ndrop), pkts, ndrop * sizeof(*pkts));
	return n - ndrop;
}

/*
 * Consumer: class c looked empty; clear its bit unless a packet arrived.
 * The acquire-release and pairs with the producer's release or: if the
 * producer's or came first, this and reads it and so sees its ring
 * entries in the recount; if it came after, the bit ends up set.
 */
static void dp_dpdk_prioq_clear_class(struct dp_dpdk_prioq *q, uint32_t c)
{
	const uint64_t bit = UINT64_C(1) << c;

	__atomic_fetch_and(&q->nonempty, ~bit, __ATOMIC_ACQ_REL);
	if (rte_ring_count(q->rings[c]) > 0)
		__atomic_fetch_or(&q->nonempty, bit, __ATOMIC_RELAXED);
}

/* Unshaped: move up to max packets of class c to out. */
static uint16_t dp_dpdk_prioq_take_class(struct dp_dpdk_prioq *q, uint32_t c, struct rte_mbuf **out,
					 uint16_t max)
{
	unsigned int avail = 0;
	uint16_t got;
	uint64_t bytes = 0;

	got = rte_ring_sc_dequeue_burst(q->rings[c], (void **)out, max, &avail);
	for (uint16_t i = 0; i < got; i++)
		bytes += out[i]->pkt_len;
	DP_DPDK_COUNT_ADD(q->cons[c].deq_pkts, got);
	DP_DPDK_COUNT_ADD(q->cons[c].deq_bytes, bytes);
	if (avail == 0)
		dp_dpdk_prioq_clear_class(q, c);
	return got;
}

/*
 * Shaped: move packets of class c to out while the bucket pays for them.
 * Peeks (rte_ring_peek.h, SC mode) so that a packet the bucket cannot pay
 * for stays in its ring, at its head. Sets *blocked when that happens.
 */
static uint16_t dp_dpdk_prioq_take_class_shaped(struct dp_dpdk_prioq *q, uint32_t c,
						struct rte_mbuf **out, uint16_t max,
						struct dp_dpdk_shaper *sh, bool *blocked)
{
	unsigned int avail = 0, n;
	uint16_t got = 0;
	uint64_t bytes = 0;

	n = rte_ring_dequeue_burst_start(q->rings[c], (void **)out, max, &avail);
	while (got < n) {
		uint64_t cost = (uint64_t)dp_dpdk_wire_bytes(out[got]) * sh->byte_cost;

		if (cost > sh->cap)
			cost = sh->cap;
		if (sh->tokens < cost) {
			*blocked = true;
			break;
		}
		sh->tokens -= cost;
		bytes += out[got]->pkt_len;
		got++;
	}
	rte_ring_dequeue_finish(q->rings[c], got);
	DP_DPDK_COUNT_ADD(q->cons[c].deq_pkts, got);
	DP_DPDK_COUNT_ADD(q->cons[c].deq_bytes, bytes);
	if (got == n && avail == 0)
		dp_dpdk_prioq_clear_class(q, c);
	return got;
}

uint16_t dp_dpdk_prioq_dequeue_burst(struct dp_dpdk_prioq *q, struct rte_mbuf **out, uint16_t max,
				     struct dp_dpdk_shaper *sh, uint64_t now_tsc)
{
	uint64_t pending = __atomic_load_n(&q->nonempty, __ATOMIC_ACQUIRE);
	uint16_t got = 0;
	bool blocked = false;

	if (sh && sh->rate_bps == 0)
		sh = NULL;
	if (sh)
		dp_dpdk_shaper_refill(sh, now_tsc);

	/*
	 * Walk classes from the highest priority. A class is left only when
	 * it is empty (its bit cleared or about to be), so no lower class
	 * leaves while a higher one holds packets. Bits set by the producer
	 * after the load above are seen next burst.
	 */
	while (pending && got < max && !blocked) {
		uint32_t c = (uint32_t)__builtin_ctzll(pending);

		if (sh)
			got += dp_dpdk_prioq_take_class_shaped(q, c, out + got, max - got, sh,
							       &blocked);
		else
			got += dp_dpdk_prioq_take_class(q, c, out + got, max - got);
		pending &= pending - 1;
	}
	return got;
}

uint32_t dp_dpdk_prioq_count(const struct dp_dpdk_prioq *q, uint32_t cls)
{
	if (cls >= q->nclasses)
		return 0;
	return rte_ring_count(q->rings[cls]);
}

int dp_dpdk_prioq_stats(const struct dp_dpdk_prioq *q, uint32_t cls,
			struct dp_dpdk_prioq_stats *ret_stats)
{
	if (cls >= q->nclasses)
		return -EINVAL;
	*ret_stats = (struct dp_dpdk_prioq_stats){
		.enq_pkts = __atomic_load_n(&q->prod[cls].enq_pkts, __ATOMIC_RELAXED),
		.drop_pkts = __atomic_load_n(&q->prod[cls].drop_pkts, __ATOMIC_RELAXED),
		.deq_pkts = __atomic_load_n(&q->cons[cls].deq_pkts, __ATOMIC_RELAXED),
		.deq_bytes = __atomic_load_n(&q->cons[cls].deq_bytes, __ATOMIC_RELAXED),
	};
	return 0;
}

void dp_dpdk_shaper_init(struct dp_dpdk_shaper *s, uint64_t rate_bps, uint64_t burst_bytes,
			 uint64_t tsc_hz, uint64_t now_tsc)
{
	const uint64_t min_burst = DP_DPDK_WIRE_MIN_FRAME_BYTES + DP_DPDK_WIRE_OVERHEAD_BYTES;
	uint64_t max_burst;

	assert(tsc_hz > 0 && tsc_hz <= (UINT64_C(1) << 40));
	memset(s, 0, sizeof(*s));
	s->rate_bps = rate_bps;
	s->byte_cost = 8 * tsc_hz;
	max_burst = UINT64_MAX / s->byte_cost;
	if (burst_bytes < min_burst)
		burst_bytes = min_burst;
	if (burst_bytes > max_burst)
		burst_bytes = max_burst;
	s->burst_bytes = burst_bytes;
	s->cap = burst_bytes * s->byte_cost;
	s->tokens = s->cap;
	s->last_tsc = now_tsc;
	/* Any gap >= fill_cycles fills the bucket; shorter gaps earn <= cap. */
	s->fill_cycles = rate_bps ? s->cap / rate_bps + 1 : 0;
}

void dp_dpdk_shaper_refill(struct dp_dpdk_shaper *s, uint64_t now_tsc)
{
	uint64_t elapsed, add;

	if (s->rate_bps == 0 || now_tsc <= s->last_tsc)
		return;
	elapsed = now_tsc - s->last_tsc;
	s->last_tsc = now_tsc;
	if (elapsed >= s->fill_cycles) {
		s->tokens = s->cap;
		return;
	}
	/* elapsed < fill_cycles, so add <= cap: no overflow. */
	add = elapsed * s->rate_bps;
	if (add >= s->cap - s->tokens)
		s->tokens = s->cap;
	else
		s->tokens += add;
}

uint64_t dp_dpdk_shaper_tokens_bytes(const struct dp_dpdk_shaper *s)
{
	if (s->rate_bps == 0)
		return UINT64_MAX;
	return s->tokens / s->byte_cost;
}

uint64_t dp_dpdk_shaper_burst_bytes(const struct dp_dpdk_shaper *s)
{
	return s->burst_bytes;
}
