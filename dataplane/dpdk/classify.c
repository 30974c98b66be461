/* SPDX-License-Identifier: BSD-3-Clause */
/* dataplane/dpdk/classify: packet parsing, classification, DSCP marking. */
#include "dataplane/dpdk/classify.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_errno.h>
#include <rte_ether.h>
#include <rte_hash.h>
#include <rte_ip.h>
#include <rte_hash_crc.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

_Static_assert(sizeof(struct dp_dpdk_key) == 40, "dp_dpdk_key: packed, a multiple of 4 bytes");

#define DP_DPDK_MAX_SLOTS (1u << 24)

struct dp_dpdk_ctable {
	struct rte_hash *hash;
	uint64_t version;
	uint32_t nflows;
	uint8_t default_class;
};

/* The hash value: slot << 8 | class, stored in the data pointer. */
static inline void *value_make(uint32_t slot, uint8_t cls)
{
	return (void *)(uintptr_t)(((uintptr_t)slot << 8) | cls);
}

static inline uint8_t value_class(const void *v)
{
	return (uint8_t)((uintptr_t)v & 0xff);
}

static inline uint32_t value_slot(const void *v)
{
	return (uint32_t)((uintptr_t)v >> 8);
}

const char *dp_dpdk_parse_reason_str(enum dp_dpdk_parse_reason r)
{
	switch (r) {
	case DP_DPDK_PARSE_OK:
		return "ok";
	case DP_DPDK_PARSE_NOT_IP:
		return "not-ip";
	case DP_DPDK_PARSE_TRUNCATED:
		return "truncated";
	case DP_DPDK_PARSE_BAD_HEADER:
		return "bad-header";
	case DP_DPDK_PARSE_FRAGMENT:
		return "fragment";
	case DP_DPDK_PARSE_PROTO:
		return "protocol";
	default:
		return "?";
	}
}

static inline uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

/*
 * Parses m into *kp directly (*kp is written even on failure): the burst
 * path parses into its key array, without a copy of the key through the
 * stack (reloading a key just built by byte stores stalls on the stores).
 */
static inline __attribute__((always_inline)) int
parse_key(const struct rte_mbuf *m, struct dp_dpdk_key *kp, uint32_t *ret_l3_off)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = rte_pktmbuf_data_len(m);
	uint32_t off = RTE_ETHER_HDR_LEN, end, l4;
	uint16_t type;

	if (len < RTE_ETHER_HDR_LEN)
		return -DP_DPDK_PARSE_TRUNCATED;
	type = rd16(p + 12);
	/* at most two tags: 802.1Q, or QinQ (802.1ad, or 802.1Q twice) */
	for (int tags = 0; tags < 2; tags++) {
		if (type != RTE_ETHER_TYPE_VLAN && type != RTE_ETHER_TYPE_QINQ)
			break;
		if (len < off + 4)
			return -DP_DPDK_PARSE_TRUNCATED;
		type = rd16(p + off + 2);
		off += 4;
	}

	memset(kp, 0, sizeof(*kp));
	if (type == RTE_ETHER_TYPE_IPV4) {
		const uint8_t *ip = p + off;
		uint32_t ihl, tot;
		uint16_t frag;

		if (len - off < 20)
			return -DP_DPDK_PARSE_TRUNCATED;
		if ((ip[0] >> 4) != 4)
			return -DP_DPDK_PARSE_BAD_HEADER;
		ihl = (uint32_t)(ip[0] & 0x0f) * 4;
		tot = rd16(ip + 2);
		if (ihl < 20 || tot < ihl)
			return -DP_DPDK_PARSE_BAD_HEADER;
		if (len - off < ihl)
			return -DP_DPDK_PARSE_TRUNCATED;
		frag = rd16(ip + 6);
		if (frag & RTE_IPV4_HDR_OFFSET_MASK)
			return -DP_DPDK_PARSE_FRAGMENT;
		kp->family = 4;
		kp->protocol = ip[9];
		memcpy(kp->src, ip + 12, 4);
		memcpy(kp->dst, ip + 16, 4);
		l4 = off + ihl;
		end = off + tot; /* the IP length bounds L4 (Ethernet padding) */
	} else if (type == RTE_ETHER_TYPE_IPV6) {
		const uint8_t *ip = p + off;

		if (len - off < 40)
			return -DP_DPDK_PARSE_TRUNCATED;
		if ((ip[0] >> 4) != 6)
			return -DP_DPDK_PARSE_BAD_HEADER;
		kp->family = 6;
		kp->protocol = ip[6];
		memcpy(kp->src, ip + 8, 16);
		memcpy(kp->dst, ip + 24, 16);
		l4 = off + 40;
		end = l4 + rd16(ip + 4);
	} else {
		return -DP_DPDK_PARSE_NOT_IP;
	}

	if (end > len)
		end = len;
	if (kp->protocol == IPPROTO_TCP) {
		if (l4 + 20 > end)
			return -DP_DPDK_PARSE_TRUNCATED;
	} else if (kp->protocol == IPPROTO_UDP) {
		if (l4 + 8 > end)
			return -DP_DPDK_PARSE_TRUNCATED;
	} else {
		return -DP_DPDK_PARSE_PROTO;
	}
	kp->src_port = rd16(p + l4);
	kp->dst_port = rd16(p + l4 + 2);

	*ret_l3_off = off;
	return 0;
}

int dp_dpdk_parse(const struct rte_mbuf *m, struct dp_dpdk_key *ret_key, uint32_t *ret_l3_off)
{
	struct dp_dpdk_key k;
	uint32_t l3;
	int r = parse_key(m, &k, &l3);

	if (r == 0) {
		*ret_key = k;
		*ret_l3_off = l3;
	}
	return r;
}

struct dp_dpdk_ctable *dp_dpdk_ctable_new(const struct dp_snapshot *snap, int socket_id)
{
	static atomic_uint seq;
	struct rte_hash_parameters hp = {0};
	struct dp_dpdk_ctable *t;
	char name[RTE_HASH_NAMESIZE];
	uint32_t entries;
	int err;

	if (!snap || (snap->n && !snap->flows) || snap->n > DP_DPDK_MAX_SLOTS ||
	    snap->default_class >= DP_DPDK_MAX_CLASSES) {
		errno = EINVAL;
		return NULL;
	}
	for (size_t i = 0; i < snap->n; i++) {
		const struct dp_snapshot_flow *f = &snap->flows[i];

		if (f->cls >= DP_DPDK_MAX_CLASSES ||
		    (f->tuple.family != 4 && f->tuple.family != 6)) {
			errno = EINVAL;
			return NULL;
		}
	}

	t = rte_zmalloc_socket("dp_dpdk_ctable", sizeof(*t), RTE_CACHE_LINE_SIZE, socket_id);
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	t->version = snap->version;
	t->nflows = (uint32_t)snap->n;
	t->default_class = (uint8_t)snap->default_class;

	/* Room: 1.5x the flows plus slack, and the extendable bucket table so
	 * that every insertion succeeds however the keys hash. */
	entries = t->nflows + t->nflows / 2 + 64;
	snprintf(name, sizeof(name), "dp_dpdk_ct_%u", atomic_fetch_add(&seq, 1));
	hp.name = name;
	hp.entries = entries;
	hp.key_len = sizeof(struct dp_dpdk_key);
	hp.hash_func = rte_hash_crc; /* CRC32 instructions where the CPU has them */
	hp.hash_func_init_val = 0;
	hp.socket_id = socket_id;
	hp.extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE;
	t->hash = rte_hash_create(&hp);
	if (!t->hash) {
		err = rte_errno ? rte_errno : ENOMEM;
		goto fail;
	}

	for (size_t i = 0; i < snap->n; i++) {
		const struct dp_snapshot_flow *f = &snap->flows[i];
		struct dp_dpdk_key k;
		int r;

		memset(&k, 0, sizeof(k));
		k.family = f->tuple.family;
		k.protocol = f->tuple.protocol;
		k.src_port = f->tuple.src_port;
		k.dst_port = f->tuple.dst_port;
		memcpy(k.src, f->tuple.src, 16);
		memcpy(k.dst, f->tuple.dst, 16);
		r = rte_hash_add_key_data(t->hash, &k, value_make((uint32_t)i, (uint8_t)f->cls));
		if (r < 0) {
			err = -r;
			goto fail;
		}
	}
	return t;

fail:
	dp_dpdk_ctable_free(t);
	errno = err;
	return NULL;
}

struct dp_dpdk_ctable *dp_dpdk_ctable_free(struct dp_dpdk_ctable *t)
{
	if (!t)
		return NULL;
	rte_hash_free(t->hash);
	rte_free(t);
	return NULL;
}

uint64_t dp_dpdk_ctable_version(const struct dp_dpdk_ctable *t)
{
	return t->version;
}

uint32_t dp_dpdk_ctable_nflows(const struct dp_dpdk_ctable *t)
{
	return t->nflows;
}

uint8_t dp_dpdk_ctable_default_class(const struct dp_dpdk_ctable *t)
{
	return t->default_class;
}

int dp_dpdk_ctable_lookup(const struct dp_dpdk_ctable *t, const struct dp_dpdk_key *key,
			  uint32_t *ret_slot)
{
	void *v;

	if (rte_hash_lookup_data(t->hash, key, &v) < 0)
		return -ENOENT;
	if (ret_slot)
		*ret_slot = value_slot(v);
	return value_class(v);
}

void dp_dpdk_counters_init(struct dp_dpdk_counters *c, struct dp_dpdk_flow_counter *flows,
			   uint32_t nflows)
{
	memset(c, 0, sizeof(*c));
	c->flows = flows;
	c->nflows = flows ? nflows : 0;
	c->flows_version = UINT64_MAX;
}

static inline void count(struct dp_dpdk_counters *c, uint8_t cls, uint32_t bytes)
{
	DP_DPDK_COUNT_ADD(c->class_packets[cls], 1);
	DP_DPDK_COUNT_ADD(c->class_bytes[cls], bytes);
}

static inline void set_dscp(struct rte_mbuf *m, uint32_t l3_off, uint8_t dscp);

/* Announces key through sink unless it was the last flow announced in its cache slot. */
static inline void note_unknown(struct dp_dpdk_unknown_sink *sink, const struct dp_dpdk_key *key,
				uint32_t bytes)
{
	uint32_t sig = rte_hash_crc(key, sizeof(*key), 0x9e3779b9u) | 1u;
	uint32_t *slot = &sink->seen[sig & (DP_DPDK_UNKNOWN_CACHE - 1)];
	struct dp_dpdk_unknown_event ev;

	if (*slot == sig)
		return;
	*slot = sig;
	ev.key = *key;
	ev.bytes = bytes;
	ev.pad = 0;
	if (rte_ring_sp_enqueue_elem(sink->ring, &ev, sizeof(ev)) != 0)
		DP_DPDK_COUNT_ADD(sink->dropped, 1);
}

uint32_t dp_dpdk_classify_burst(const struct dp_dpdk_ctable *t, struct rte_mbuf **pkts, uint16_t n,
				uint8_t *ret_class, struct dp_dpdk_counters *c,
				const struct dp_dscp_map *dscp)
{
	struct dp_dpdk_key keys[RTE_HASH_LOOKUP_BULK_MAX];
	const void *kp[RTE_HASH_LOOKUP_BULK_MAX];
	void *vals[RTE_HASH_LOOKUP_BULK_MAX];
	uint16_t idx[RTE_HASH_LOOKUP_BULK_MAX];
	uint32_t known = 0;

	if (__atomic_load_n(&c->flows_version, __ATOMIC_RELAXED) != t->version) {
		uint32_t nz = RTE_MIN(c->nflows, t->nflows);

		/* atomic stores, as every write of a counter others read (prioq.h) */
		for (uint32_t i = 0; i < nz; i++) {
			__atomic_store_n(&c->flows[i].packets, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&c->flows[i].bytes, 0, __ATOMIC_RELAXED);
		}
		__atomic_store_n(&c->flows_version, t->version, __ATOMIC_RELEASE);
	}

	for (uint16_t base = 0; base < n; base += RTE_HASH_LOOKUP_BULK_MAX) {
		uint16_t chunk = (uint16_t)RTE_MIN(n - base, RTE_HASH_LOOKUP_BULK_MAX);
		uint64_t hits = 0;
		unsigned int nk = 0;

		for (uint16_t i = 0; i < chunk; i++) {
			struct rte_mbuf *m = pkts[base + i];
			uint32_t l3;
			int r = parse_key(m, &keys[nk], &l3);

			ret_class[base + i] = t->default_class;
			if (r < 0) {
				DP_DPDK_COUNT_ADD(c->unparseable[-r], 1);
				count(c, t->default_class, rte_pktmbuf_pkt_len(m));
				continue;
			}
			m->l2_len = l3;
			kp[nk] = &keys[nk];
			idx[nk] = (uint16_t)(base + i);
			nk++;
		}
		if (nk && rte_hash_lookup_bulk_data(t->hash, kp, nk, &hits, vals) < 0)
			hits = 0;
		for (unsigned int j = 0; j < nk; j++) {
			struct rte_mbuf *m = pkts[idx[j]];
			uint32_t bytes = rte_pktmbuf_pkt_len(m);

			if (hits & (1ULL << j)) {
				uint8_t cls = value_class(vals[j]);
				uint32_t slot = value_slot(vals[j]);

				ret_class[idx[j]] = cls;
				if (dscp)
					set_dscp(m, m->l2_len, dp_dscp_map_get(dscp, cls));
				count(c, cls, bytes);
				if (slot < c->nflows) {
					DP_DPDK_COUNT_ADD(c->flows[slot].packets, 1);
					DP_DPDK_COUNT_ADD(c->flows[slot].bytes, bytes);
				}
				known++;
			} else {
				if (dscp)
					set_dscp(m, m->l2_len,
						 dp_dscp_map_get(dscp, t->default_class));
				if (c->sink)
					note_unknown(c->sink, &keys[j], bytes);
				DP_DPDK_COUNT_ADD(c->unknown, 1);
				count(c, t->default_class, bytes);
			}
		}
	}
	DP_DPDK_COUNT_ADD(c->known, known);
	return known;
}

void dp_dpdk_set_dscp(struct rte_mbuf *m, uint32_t l3_off, uint8_t dscp)
{
	set_dscp(m, l3_off, dscp);
}

static inline void set_dscp(struct rte_mbuf *m, uint32_t l3_off, uint8_t dscp)
{
	uint8_t *ip = rte_pktmbuf_mtod(m, uint8_t *);
	uint32_t len = rte_pktmbuf_data_len(m);

	dscp &= 0x3f;
	if (l3_off >= len)
		return;
	ip += l3_off;
	len -= l3_off;
	if (len >= 20 && (ip[0] >> 4) == 4) {
		uint8_t tos = (uint8_t)(dscp << 2 | (ip[1] & 0x03));
		uint16_t old_w = rd16(ip), new_w = (uint16_t)(ip[0] << 8 | tos);
		uint32_t sum;

		if (tos == ip[1])
			return;
		/* RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m') */
		sum = (uint16_t)~rd16(ip + 10);
		sum += (uint16_t)~old_w;
		sum += new_w;
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (uint16_t)~sum;
		ip[1] = tos;
		ip[10] = (uint8_t)(sum >> 8);
		ip[11] = (uint8_t)sum;
	} else if (len >= 40 && (ip[0] >> 4) == 6) {
		uint8_t tc = (uint8_t)((ip[0] & 0x0f) << 4 | ip[1] >> 4);

		tc = (uint8_t)(dscp << 2 | (tc & 0x03));
		ip[0] = (uint8_t)((ip[0] & 0xf0) | tc >> 4);
		ip[1] = (uint8_t)((ip[1] & 0x0f) | (tc & 0x0f) << 4);
	}
}
