/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dataplane/dpdk/classify: the DPDK enforcer's packet classifier. It parses
 * a packet's 5-tuple, looks it up in a classification table built from a
 * struct dp_snapshot, gives it a class (0 = highest priority), counts it in
 * per-lcore counters, and marks the class's DSCP into the IP header.
 *
 * Invariants:
 *  - A struct dp_dpdk_ctable is immutable once built. The agent builds a new one
 *    per table version and swaps a pointer; any number of lcores may look up
 *    one table at once (rte_hash lookups without writers are read-safe). It is
 *    freed only after every reader has moved off it (e.g. an RCU grace period).
 *  - A flow's counter slot is its index in the snapshot's flows array that the
 *    table was built from, so the agent maps slot i back to snap->flows[i].
 *  - Classes are < DP_DPDK_MAX_CLASSES; DSCP values are < 64.
 *  - dp_dpdk_parse, dp_dpdk_classify_burst and dp_dpdk_set_dscp are the fast path: they
 *    never allocate, lock or log, and never read or write past the first
 *    segment's data (rte_pktmbuf_data_len). Packets are assumed to be
 *    single-segment: headers that spill into a second segment count as
 *    truncated.
 */
#ifndef LOOM_DATAPLANE_DPDK_CLASSIFY_H
#define LOOM_DATAPLANE_DPDK_CLASSIFY_H

#include <stddef.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_mbuf.h>

#include "dataplane/dpdk/prioq.h"
#include "dataplane/enforcer_args.h"
#include "dataplane/table.h"

/* Classes the fast path supports (strict-priority queues 0 .. 7). */
#define DP_DPDK_MAX_CLASSES 8

/*
 * The packed lookup key: a 5-tuple in struct wire_tuple's form (ports in host
 * order, addresses in network order, IPv4 in the first 4 address bytes and
 * the rest zero). 40 bytes: 38 and 2 of zero padding, so that the hash
 * (rte_hash_crc, which reads whole 8-byte words) never reads past a key.
 * Always fully written (zeroed first).
 */
struct dp_dpdk_key {
	uint8_t family; /* 4 or 6 */
	uint8_t protocol;
	uint16_t src_port, dst_port;
	uint8_t src[16], dst[16];
	uint8_t pad[2]; /* zero: the hash reads whole 8-byte words */
} __rte_packed;

/*
 * Why dp_dpdk_parse found a packet not classifiable; it returns the negated
 * value. These are not errno values (the fast path counts them by index).
 */
enum dp_dpdk_parse_reason {
	DP_DPDK_PARSE_OK = 0,
	DP_DPDK_PARSE_NOT_IP = 1,     /* ethertype not IPv4/IPv6 (ARP, QinQ, ...) */
	DP_DPDK_PARSE_TRUNCATED = 2,  /* a header ends past the data (or the IP length) */
	DP_DPDK_PARSE_BAD_HEADER = 3, /* IP version mismatch, IHL < 5, total length < IHL */
	DP_DPDK_PARSE_FRAGMENT = 4,   /* a non-first IPv4 fragment: no ports */
	DP_DPDK_PARSE_PROTO = 5,      /* not TCP/UDP (ICMP, IPv6 extension headers, ...) */
	DP_DPDK_PARSE_NREASONS = 6,
};

/* Returns a static name for a reason (e.g. "truncated"); "?" when unknown. */
const char *dp_dpdk_parse_reason_str(enum dp_dpdk_parse_reason r);

/*
 * Parses Ethernet (with at most two VLAN tags: 802.1Q, or QinQ with an
 * 802.1ad or 802.1Q outer tag), IPv4 (options skipped by IHL; a total
 * length below the header length is DP_DPDK_PARSE_BAD_HEADER) or IPv6 (fixed header only: a next header other than TCP/UDP is
 * DP_DPDK_PARSE_PROTO), and the TCP (20-byte minimum header) or UDP (8 bytes)
 * ports. A first IPv4 fragment (MF set, offset 0) carries the ports and is
 * classified by them like a whole packet; a non-first fragment is
 * DP_DPDK_PARSE_FRAGMENT. Returns 0 with *ret_key and *ret_l3_off (the offset of
 * the IP header), or -enum dp_dpdk_parse_reason with the outputs untouched.
 */
int dp_dpdk_parse(const struct rte_mbuf *m, struct dp_dpdk_key *ret_key, uint32_t *ret_l3_off);

struct dp_dpdk_ctable;

/*
 * Builds a classification table from snap: each flow's tuple -> its class
 * and counter slot (its index in snap->flows), with snap->default_class for
 * the rest; memory on socket_id (SOCKET_ID_ANY is fine). snap stays the
 * caller's. Returns the table (the caller owns it: dp_dpdk_ctable_free) or
 * NULL + errno: EINVAL (NULL snap, a class or default_class >=
 * DP_DPDK_MAX_CLASSES, a tuple family not 4/6, or n > 2^24), ENOMEM, or what
 * rte_hash_create set (ENOSPC ...).
 */
struct dp_dpdk_ctable *dp_dpdk_ctable_new(const struct dp_snapshot *snap, int socket_id);

/* Frees t (NULL is fine). Returns NULL. No reader may still use t. */
struct dp_dpdk_ctable *dp_dpdk_ctable_free(struct dp_dpdk_ctable *t);

/* Returns the snapshot version t was built from. */
uint64_t dp_dpdk_ctable_version(const struct dp_dpdk_ctable *t);

/* Returns the number of flows (counter slots) in t. */
uint32_t dp_dpdk_ctable_nflows(const struct dp_dpdk_ctable *t);

/* Returns t's class for unknown and unparseable packets. */
uint8_t dp_dpdk_ctable_default_class(const struct dp_dpdk_ctable *t);

/*
 * Looks up one key. Returns the flow's class and sets *ret_slot (may be
 * NULL), or -ENOENT when the flow is not in t (outputs untouched).
 */
int dp_dpdk_ctable_lookup(const struct dp_dpdk_ctable *t, const struct dp_dpdk_key *key,
			  uint32_t *ret_slot);

/* One flow's counters. */
struct dp_dpdk_flow_counter {
	uint64_t packets;
	uint64_t bytes;
};

/*
 * One lcore's counters: written only by that lcore, read by the agent
 * (every access is atomic: DP_DPDK_COUNT_ADD in prioq.h writes, others read with
 * relaxed __atomic_load_n; values only grow, except flows[] as below). Bytes are
 * rte_pktmbuf_pkt_len.
 *
 * flows[] (caller-owned, nflows entries) counts known packets by slot. The
 * slots belong to one table version, flows_version: the first burst with a
 * table of another version zeroes the entries it will use (min(nflows,
 * table flows)) and stamps the new version, so the agent should read the
 * per-flow counters (and note flows_version) before it swaps tables. Slots
 * >= nflows are not counted per flow.
 */
/*
 * Where classification announces flows that are not in the table: each new
 * one once (a direct-mapped cache of their hashes drops repeats; a flow
 * evicted by another is announced again), as a struct dp_dpdk_unknown_event
 * into ring (single producer: this lcore; single consumer: the control
 * side). A full ring drops the event (counted).
 */
#define DP_DPDK_UNKNOWN_CACHE 4096 /* a power of two */

struct dp_dpdk_unknown_event {
	struct dp_dpdk_key key;
	uint32_t bytes; /* its first packet's */
	uint32_t pad;
};

struct dp_dpdk_unknown_sink {
	struct rte_ring *ring; /* of struct dp_dpdk_unknown_event (rte_ring_create_elem) */
	uint64_t dropped;      /* events the ring had no room for */
	uint32_t seen[DP_DPDK_UNKNOWN_CACHE];
};

struct dp_dpdk_counters {
	struct dp_dpdk_unknown_sink *sink;           /* NULL: unknown flows are only counted */
	uint64_t class_packets[DP_DPDK_MAX_CLASSES]; /* every packet, by the class given */
	uint64_t class_bytes[DP_DPDK_MAX_CLASSES];
	uint64_t known;                               /* parsed and in the table */
	uint64_t unknown;                             /* parsed, not in the table */
	uint64_t unparseable[DP_DPDK_PARSE_NREASONS]; /* by reason; [0] unused */
	uint64_t flows_version;
	uint32_t nflows;
	struct dp_dpdk_flow_counter *flows;
} __rte_cache_aligned;

/*
 * Zeroes c and attaches flows (nflows entries, may be NULL when nflows is 0;
 * stays the caller's and must outlive c's use). flows_version is set to
 * UINT64_MAX (no table yet).
 */
void dp_dpdk_counters_init(struct dp_dpdk_counters *c, struct dp_dpdk_flow_counter *flows,
			   uint32_t nflows);

/*
 * Classifies n packets: parse, look up, and write each one's class to
 * ret_class[i] (the flow's class, or t's default class for unknown or
 * unparseable packets). For each parsed packet it also sets m->l2_len to the
 * IP header's offset (for dp_dpdk_set_dscp), and, when dscp is not NULL,
 * rewrites its DSCP to its class's (as dp_dpdk_set_dscp, while the header is
 * still in cache; unparseable packets keep theirs). Counts everything into
 * c (this lcore's). Returns the number of packets classified as known flows.
 */
uint32_t dp_dpdk_classify_burst(const struct dp_dpdk_ctable *t, struct rte_mbuf **pkts, uint16_t n,
				uint8_t *ret_class, struct dp_dpdk_counters *c,
				const struct dp_dscp_map *dscp);

/*
 * Rewrites the DSCP (upper 6 bits of the IPv4 TOS / IPv6 traffic class) of
 * the IP header at l3_off to dscp (& 63), keeping the two ECN bits. IPv4's
 * header checksum is updated incrementally (RFC 1624, eqn. 3). Does nothing
 * when the header does not fit in the data or its version is not 4/6.
 */
void dp_dpdk_set_dscp(struct rte_mbuf *m, uint32_t l3_off, uint8_t dscp);

#endif
