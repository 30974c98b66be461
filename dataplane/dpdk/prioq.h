/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dataplane/dpdk/prioq: the egress side of Loom's DPDK enforcer. Each egress
 * port gets K strict-priority classes (class 0 = highest) and a token-bucket
 * shaper at the configured line rate, so the port drains like the link the
 * controller models.
 *
 * Why not rte_sched: rte_sched fixes 12 strict traffic classes plus one
 * best-effort class split into WRR queues, and needs the full
 * port/subport/pipe hierarchy (profiles, per-pipe credits, grinders) set up
 * even for a single flat port. Loom wants K configurable strict classes
 * (1..64) with nothing else, so a 64-bit bitmap of non-empty classes over one
 * single-producer/single-consumer rte_ring per class is smaller and cheaper:
 * picking the next class is one count-trailing-zeros, and there is no
 * hierarchy to configure or to walk per packet.
 *
 * Invariants:
 *  - Strict priority: a dequeue always takes from the lowest-index non-empty
 *    class, and never from a lower class while a higher one holds packets.
 *    Within a class, packets leave in the order they arrived (FIFO).
 *  - One producer lcore calls dp_dpdk_prioq_enqueue_burst() and one consumer
 *    lcore calls dp_dpdk_prioq_dequeue_burst(); they may be the same lcore or
 *    two different ones. Bit c of the bitmap is set whenever class c holds a
 *    packet (it may briefly be set for an empty class; the consumer then
 *    clears it). The bitmap is updated with lock-free atomic or/and only.
 *  - With a shaper, a packet leaves only when the bucket holds at least its
 *    wire length (see dp_dpdk_wire_bytes()); a packet that cannot leave stays at
 *    the head of its class and blocks every lower class (the port is busy).
 *  - The fast path (enqueue, dequeue, shaper refill) never allocates, locks
 *    or logs. Counters are per queue and split by writer: the producer writes
 *    enqueue/drop counters, the consumer dequeue counters, on separate cache
 *    lines; read them with dp_dpdk_prioq_stats() (values read while the lcores
 *    run are a recent snapshot, not a consistent one).
 */
#ifndef LOOM_DATAPLANE_DPDK_PRIOQ_H
#define LOOM_DATAPLANE_DPDK_PRIOQ_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

/*
 * Adds n to a counter that only this lcore writes and other threads read
 * with relaxed atomic loads. Its one writer reads it with a relaxed atomic
 * load too and stores the sum with a relaxed atomic store: no locked
 * read-modify-write is needed, as no other thread writes it, and every
 * access to it from the writer and readers alike is atomic, so there is no
 * data race in the C11 sense (a race needs a non-atomic access). Relaxed
 * loads and stores of aligned 64-bit words are plain moves on x86-64 and
 * arm64. Used by every fast-path counter of dataplane/dpdk; read them with
 * __atomic_load_n(&var, __ATOMIC_RELAXED).
 */
#define DP_DPDK_COUNT_ADD(var, n)                                                                  \
	__atomic_store_n(&(var), __atomic_load_n(&(var), __ATOMIC_RELAXED) + (n), __ATOMIC_RELAXED)

/* Most classes a queue can have (one bit each in a uint64_t). */
#define DP_DPDK_PRIOQ_MAX_CLASSES 64u

/*
 * Bytes a frame occupies on the wire beyond what the mbuf holds: preamble 7 +
 * start-of-frame 1 + FCS 4 + inter-frame gap 12 = 24. A frame shorter than
 * the Ethernet minimum (60 bytes without FCS) is counted as padded to it.
 */
#define DP_DPDK_WIRE_OVERHEAD_BYTES  24u
#define DP_DPDK_WIRE_MIN_FRAME_BYTES 60u

struct dp_dpdk_prioq;

/* Per-class counters. Bytes are mbuf pkt_len (no wire overhead). */
struct dp_dpdk_prioq_stats {
	uint64_t enq_pkts;
	uint64_t drop_pkts;
	uint64_t deq_pkts;
	uint64_t deq_bytes;
};

/*
 * Token bucket, owned and placed by the caller (one per egress port, used by
 * the consumer lcore only). Tokens are kept in "bit-cycles": a byte costs
 * 8 * tsc_hz and each TSC cycle adds rate_bps, so refill is one 64-bit
 * multiply with no division and no rounding loss. Fields are private.
 */
struct dp_dpdk_shaper {
	uint64_t rate_bps;    /* 0 = no shaping */
	uint64_t byte_cost;   /* 8 * tsc_hz */
	uint64_t tokens;      /* bit-cycles, <= cap */
	uint64_t cap;         /* burst_bytes * byte_cost */
	uint64_t burst_bytes; /* after clamping */
	uint64_t fill_cycles; /* cycles that fill an empty bucket, + 1 */
	uint64_t last_tsc;
};

/*
 * Frees nothing and takes nothing: the wire length of an mbuf in bytes,
 * max(pkt_len, DP_DPDK_WIRE_MIN_FRAME_BYTES) + DP_DPDK_WIRE_OVERHEAD_BYTES.
 */
static inline uint32_t dp_dpdk_wire_bytes(const struct rte_mbuf *m)
{
	uint32_t len = m->pkt_len;

	if (len < DP_DPDK_WIRE_MIN_FRAME_BYTES)
		len = DP_DPDK_WIRE_MIN_FRAME_BYTES;
	return len + DP_DPDK_WIRE_OVERHEAD_BYTES;
}

/*
 * Creates a queue of nclasses (1..64) classes, each an SP/SC rte_ring holding
 * exactly ring_size packets (1..RTE_RING_SZ_MASK), on NUMA socket socket_id
 * (or SOCKET_ID_ANY). name (non-empty, short: rings are named "<name>_<c>"
 * and must fit RTE_RING_NAMESIZE) must be unique among live queues. Control
 * side only. Returns the queue, owned by the caller (free with
 * dp_dpdk_prioq_free()), or NULL with errno set: EINVAL (bad argument),
 * ENAMETOOLONG, ENOMEM, EEXIST (name in use).
 */
struct dp_dpdk_prioq *dp_dpdk_prioq_new(const char *name, uint32_t nclasses, uint32_t ring_size,
					int socket_id);

/*
 * Frees q, its rings and every packet still queued in it (the queue owns
 * them). Accepts NULL; returns NULL. No lcore may be using q.
 */
struct dp_dpdk_prioq *dp_dpdk_prioq_free(struct dp_dpdk_prioq *q);

/* The number of classes q was created with. */
uint32_t dp_dpdk_prioq_nclasses(const struct dp_dpdk_prioq *q);

/*
 * Producer. Enqueues pkts[i] into class cls[i] for i < n; a class >=
 * nclasses is clamped to the lowest class (nclasses - 1). Packets whose class
 * is full are dropped and counted in that class's drop_pkts.
 *
 * Returns the number enqueued, k. Ownership: the k enqueued packets now
 * belong to q, and pkts[0..k-1] are left holding stale pointers the caller
 * must not use. The n - k dropped packets are moved to pkts[k..n-1], in
 * their original order, and still belong to the caller, which must free
 * them (e.g. rte_pktmbuf_free_bulk(pkts + k, n - k)) - as with
 * rte_eth_tx_burst(). cls is not changed.
 */
uint16_t dp_dpdk_prioq_enqueue_burst(struct dp_dpdk_prioq *q, struct rte_mbuf **pkts,
				     const uint8_t *cls, uint16_t n);

/*
 * Consumer. Dequeues up to max packets into out in strict priority order
 * (all of class 0, then class 1, ...; FIFO within a class). If sh is non-NULL
 * and shaping (rate_bps > 0), it is first refilled to now_tsc and each packet
 * leaves only if the bucket holds its dp_dpdk_wire_bytes(); the first packet
 * that does not fit stays queued at the head of its class and ends the burst.
 * sh may be NULL (no shaping); now_tsc is then ignored.
 *
 * out must have room for max pointers; entries past the returned count may
 * be overwritten with pointers the caller does not own (peeked, not taken).
 * Returns the number of packets written to out; they now belong to the
 * caller (typically handed to rte_eth_tx_burst()).
 */
uint16_t dp_dpdk_prioq_dequeue_burst(struct dp_dpdk_prioq *q, struct rte_mbuf **out, uint16_t max,
				     struct dp_dpdk_shaper *sh, uint64_t now_tsc);

/*
 * Packets queued in class cls (0 if cls >= nclasses). Exact when called from
 * the consumer or with both lcores idle.
 */
uint32_t dp_dpdk_prioq_count(const struct dp_dpdk_prioq *q, uint32_t cls);

/*
 * Copies class cls's counters into *ret_stats. Returns 0, or -EINVAL if cls
 * >= nclasses (ret_stats then untouched).
 */
int dp_dpdk_prioq_stats(const struct dp_dpdk_prioq *q, uint32_t cls,
			struct dp_dpdk_prioq_stats *ret_stats);

/*
 * Sets up s for rate_bps bits per second with a bucket of burst_bytes, for a
 * TSC running at tsc_hz (> 0, at most 2^40), starting full at now_tsc.
 * rate_bps == 0 means no shaping: every packet may leave. burst_bytes should
 * be at least the largest wire length sent; a larger packet still leaves,
 * but only from a full bucket, which it empties. burst_bytes is clamped to at
 * least DP_DPDK_WIRE_MIN_FRAME_BYTES + DP_DPDK_WIRE_OVERHEAD_BYTES and at most what
 * 64-bit bit-cycles can hold ((2^64 - 1) / (8 * tsc_hz): about 768 MB at
 * 3 GHz). Refill multiplies only gaps shorter than one bucket fill, so it
 * never overflows for any rate (400 Gbit/s and far beyond) and any gap
 * between calls. Control side; not thread-safe.
 */
void dp_dpdk_shaper_init(struct dp_dpdk_shaper *s, uint64_t rate_bps, uint64_t burst_bytes,
			 uint64_t tsc_hz, uint64_t now_tsc);

/*
 * Adds the tokens earned from the last refill to now_tsc (capped at the
 * burst). A now_tsc before the last refill adds nothing. Fast path.
 */
void dp_dpdk_shaper_refill(struct dp_dpdk_shaper *s, uint64_t now_tsc);

/*
 * Whole bytes in the bucket now (without refilling); UINT64_MAX when not
 * shaping.
 */
uint64_t dp_dpdk_shaper_tokens_bytes(const struct dp_dpdk_shaper *s);

/* The burst in bytes after clamping. */
uint64_t dp_dpdk_shaper_burst_bytes(const struct dp_dpdk_shaper *s);

#endif /* LOOM_DATAPLANE_DPDK_PRIOQ_H */
