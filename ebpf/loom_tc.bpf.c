/* SPDX-License-Identifier: BSD-3-Clause OR GPL-2.0-only */
/*
 * Loom's tc clsact egress program: classify a packet by its 5-tuple, set
 * skb->priority to its class's HTB class, mark its DSCP, count it. What it
 * does with each kind of packet, and the class -> priority mapping, are in
 * loom_tc.h.
 *
 * Built with plain UAPI headers (<linux/bpf.h> and the like, libbpf's bpf_helpers.h), not
 * CO-RE/vmlinux.h: the program reads only struct __sk_buff (a stable UAPI
 * context the verifier rewrites) and packet bytes, never a kernel-internal
 * struct, so there is nothing to relocate, and it builds wherever
 * linux-libc-dev and libbpf-dev are installed (no BTF-enabled kernel or
 * generated vmlinux.h at build time).
 *
 * Fast path rules: no loops other than the bounded IPv6 extension-header
 * walk, one hash lookup for a known flow, per-CPU counters (no atomics).
 * Headers are read by direct packet access; the program never writes packet
 * memory directly (that would make the verifier prepend an unclone of every
 * cloned skb, i.e. every TCP segment); the DSCP is written with
 * bpf_skb_store_bytes only when it changes.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <stddef.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "ebpf/loom_tc.h"

#define IP_OFFSET_MASK        0x1fff /* IPv4 fragment offset */
#define IP6_OFFSET_MASK       0xfff8 /* IPv6 fragment header: offset (the low 3 bits are flags) */
#define ETH_P_8021Q_BE        bpf_htons(ETH_P_8021Q)
#define ETH_P_8021AD_BE       bpf_htons(ETH_P_8021AD)
#define LOOM_TC_MAX_VLAN_TAGS 2
#define LOOM_MAX_L3_OFF       (ETH_HLEN + 4 * LOOM_TC_MAX_VLAN_TAGS)

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* ---- tunables: set by the loader before load (read-only afterwards) ---------------------- */

const volatile __u32 nclasses = LOOM_TC_MAX_CLASSES; /* 1 .. LOOM_TC_MAX_CLASSES */
const volatile __u32 htb_major = LOOM_TC_HTB_MAJOR;
const volatile __u8 rewrite_dscp = 1;
const volatile __u8 dscp_of_class[LOOM_TC_MAX_CLASSES] = {56, 48, 40, 32, 24, 16, 8, 0};
/*
 * Packets of flows not in the table of at most this many bytes (skb->len:
 * TCP handshakes, acknowledgements, a receiver's short replies) go to class
 * 0 instead of the default class; 0: off. The reverse direction of a
 * scheduled flow is such a flow: its acknowledgements must not wait behind
 * the bulk of the lowest class.
 */
const volatile __u32 small_bytes = 0;

/*
 * The class of unknown and unparseable IP packets. Not const: it lives in
 * the program's .data map, which libbpf mmaps, and the agent changes it
 * with each table (the table carries its default class).
 */
__u32 loom_default_class = LOOM_TC_MAX_CLASSES - 1;

/* ---- maps ---------------------------------------------------------------------------------- */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LOOM_TC_FLOW_SLOTS);
	__type(key, struct loom_tc_key);
	__type(value, struct loom_tc_flow);
} loom_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LOOM_TC_FLOW_SLOTS);
	__type(key, __u32);
	__type(value, struct loom_tc_counter);
} loom_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct loom_tc_stats);
} loom_stats SEC(".maps");

/* Unknown flows seen (deduplicates the events) and their counters. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, LOOM_TC_MAX_UNKNOWN);
	__type(key, struct loom_tc_key);
	__type(value, struct loom_tc_counter);
} loom_unknown SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, LOOM_TC_RINGBUF_BYTES);
} loom_events SEC(".maps");

/* ---- parsing ------------------------------------------------------------------------------- */

struct loom_vlan_hdr {
	__be16 tci;
	__be16 proto;
};

struct loom_ip6_frag {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off;
	__be32 id;
};

static __always_inline void count(struct loom_tc_counter *c, __u32 len)
{
	c->packets++;
	c->bytes += len;
}

/*
 * Parses the frame into key (zeroed by the caller). Returns LOOM_TC_PARSED
 * with *ret_l3 (the IP header's offset), or why not (enum loom_tc_reason).
 * A first fragment (IPv4 MF with offset 0, or an IPv6 fragment header with
 * offset 0) carries the ports and is parsed like a whole packet. Up to two
 * VLAN tags (802.1Q, QinQ) are parsed through; an IPv4 total length below
 * the header length is a bad header, one without room for the TCP/UDP
 * header a truncated packet.
 */
static __always_inline int parse(struct __sk_buff *skb, struct loom_tc_key *key, __u32 *ret_l3)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	__u32 off = sizeof(*eth);
	__be16 proto;
	__u8 l4proto;
	__u32 l4_room = 0xffff; /* IPv4: bytes the total length leaves after the header */
	void *l4;

	if ((void *)(eth + 1) > data_end)
		return LOOM_TC_TRUNCATED;
	proto = eth->h_proto;
	/* at most two tags: 802.1Q, or QinQ (802.1ad 0x88a8 outside 802.1Q) */
#pragma unroll
	for (int i = 0; i < LOOM_TC_MAX_VLAN_TAGS; i++) {
		struct loom_vlan_hdr *vh = data + off;

		if (proto != ETH_P_8021Q_BE && proto != ETH_P_8021AD_BE)
			break;
		if ((void *)(vh + 1) > data_end)
			return LOOM_TC_TRUNCATED;
		proto = vh->proto;
		off += sizeof(*vh);
	}
	*ret_l3 = off;
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data + off;

		if ((void *)(ip + 1) > data_end)
			return LOOM_TC_TRUNCATED;
		if (ip->version != 4 || ip->ihl < 5)
			return LOOM_TC_BAD_HEADER;
		/* a total length below the header's: not a packet to classify */
		if (bpf_ntohs(ip->tot_len) < ip->ihl * 4)
			return LOOM_TC_BAD_HEADER;
		l4_room = bpf_ntohs(ip->tot_len) - ip->ihl * 4;
		if (ip->frag_off & bpf_htons(IP_OFFSET_MASK))
			return LOOM_TC_FRAGMENT;
		key->family = 4;
		l4proto = ip->protocol;
		__builtin_memcpy(key->src, &ip->saddr, 4);
		__builtin_memcpy(key->dst, &ip->daddr, 4);
		l4 = (void *)ip + ip->ihl * 4; /* options skipped */
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = data + off;

		if ((void *)(ip6 + 1) > data_end)
			return LOOM_TC_TRUNCATED;
		if (ip6->version != 6)
			return LOOM_TC_BAD_HEADER;
		key->family = 6;
		l4proto = ip6->nexthdr;
		__builtin_memcpy(key->src, &ip6->saddr, 16);
		__builtin_memcpy(key->dst, &ip6->daddr, 16);
		l4 = ip6 + 1;
#pragma unroll
		for (int i = 0; i < LOOM_TC_MAX_EXT_HDRS; i++) {
			if (l4proto == IPPROTO_HOPOPTS || l4proto == IPPROTO_ROUTING ||
			    l4proto == IPPROTO_DSTOPTS) {
				struct ipv6_opt_hdr *h = l4;

				if ((void *)(h + 1) > data_end)
					return LOOM_TC_TRUNCATED;
				l4proto = h->nexthdr;
				l4 += (h->hdrlen + 1) * 8;
			} else if (l4proto == IPPROTO_AH) {
				struct ipv6_opt_hdr *h = l4;

				if ((void *)(h + 1) > data_end)
					return LOOM_TC_TRUNCATED;
				l4proto = h->nexthdr;
				l4 += (h->hdrlen + 2) * 4;
			} else if (l4proto == IPPROTO_FRAGMENT) {
				struct loom_ip6_frag *fh = l4;

				if ((void *)(fh + 1) > data_end)
					return LOOM_TC_TRUNCATED;
				if (fh->frag_off & bpf_htons(IP6_OFFSET_MASK))
					return LOOM_TC_FRAGMENT;
				l4proto = fh->nexthdr;
				l4 = fh + 1;
			} else {
				break;
			}
		}
	} else {
		return LOOM_TC_NON_IP;
	}
	key->protocol = l4proto;
	if (l4proto == IPPROTO_TCP) {
		struct tcphdr *th = l4;

		if ((void *)(th + 1) > data_end || l4_room < sizeof(*th))
			return LOOM_TC_TRUNCATED;
		key->src_port = th->source;
		key->dst_port = th->dest;
	} else if (l4proto == IPPROTO_UDP) {
		struct udphdr *uh = l4;

		if ((void *)(uh + 1) > data_end || l4_room < sizeof(*uh))
			return LOOM_TC_TRUNCATED;
		key->src_port = uh->source;
		key->dst_port = uh->dest;
	} else {
		/* still an extension header here: more than LOOM_TC_MAX_EXT_HDRS of them */
		return LOOM_TC_OTHER_PROTO;
	}
	return LOOM_TC_PARSED;
}

/* ---- actions ------------------------------------------------------------------------------- */

/*
 * Sets the DSCP of the IP header at l3 (ECN bits kept); the IPv4 header
 * checksum is fixed with bpf_l3_csum_replace. Writes nothing when the DSCP
 * is already right. Packet pointers are invalid afterwards.
 */
static __always_inline void set_dscp(struct __sk_buff *skb, __u32 l3, __u8 family, __u8 dscp)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	__u8 *p;

	if (l3 > LOOM_MAX_L3_OFF)
		return;
	p = data + l3;
	if (family == 4) {
		__u8 b[2];
		__be16 from, to;

		if ((void *)(p + sizeof(struct iphdr)) > data_end)
			return;
		b[0] = p[0];
		b[1] = (__u8)(dscp << 2 | (p[1] & 0x03));
		if (b[1] == p[1])
			return;
		__builtin_memcpy(&from, p, 2);
		__builtin_memcpy(&to, b, 2);
		bpf_skb_store_bytes(skb, l3 + offsetof(struct iphdr, tos), &b[1], 1, 0);
		bpf_l3_csum_replace(skb, l3 + offsetof(struct iphdr, check), from, to, 2);
	} else {
		__u8 b[2], tc;

		if ((void *)(p + sizeof(struct ipv6hdr)) > data_end)
			return;
		/* version(4) | traffic class(8) | flow label(20) */
		tc = (__u8)((p[0] & 0x0f) << 4 | p[1] >> 4);
		tc = (__u8)(dscp << 2 | (tc & 0x03));
		b[0] = (__u8)((p[0] & 0xf0) | tc >> 4);
		b[1] = (__u8)((p[1] & 0x0f) | (tc & 0x0f) << 4);
		if (b[0] == p[0] && b[1] == p[1])
			return;
		bpf_skb_store_bytes(skb, l3, b, 2, 0);
	}
}

/*
 * Counts an unknown flow's packet; the first packet of a flow not in
 * loom_unknown inserts it and announces it on loom_events. When the ring
 * buffer is full the entry is removed again, so a later packet retries:
 * every flow in loom_unknown has been announced exactly once.
 */
static __always_inline void unknown_flow(struct loom_tc_key *key, __u32 len, __u32 cls,
					 struct loom_tc_stats *st)
{
	struct loom_tc_counter *c = bpf_map_lookup_elem(&loom_unknown, key);
	struct loom_tc_counter first = {.packets = 1, .bytes = len};
	struct loom_tc_event ev;

	if (c) {
		count(c, len);
		return;
	}
	if (bpf_map_update_elem(&loom_unknown, key, &first, BPF_NOEXIST) != 0) {
		/* another CPU inserted it just now */
		c = bpf_map_lookup_elem(&loom_unknown, key);
		if (c)
			count(c, len);
		return;
	}
	__builtin_memcpy(&ev.key, key, sizeof(ev.key));
	ev.len = len;
	ev.cls = (__u8)cls;
	ev.pad[0] = ev.pad[1] = ev.pad[2] = 0;
	if (bpf_ringbuf_output(&loom_events, &ev, sizeof(ev), 0) == 0) {
		st->events++;
	} else {
		bpf_map_delete_elem(&loom_unknown, key);
		st->events_lost++;
	}
}

SEC("tc")
int loom_tc_egress(struct __sk_buff *skb)
{
	__u32 zero = 0, len = skb->len, l3 = 0, cls, slot;
	struct loom_tc_stats *st = bpf_map_lookup_elem(&loom_stats, &zero);
	struct loom_tc_key key;
	struct loom_tc_flow *f;
	int r;

	if (!st)
		return TC_ACT_OK; /* cannot happen: a 1-entry array */
	__builtin_memset(&key, 0, sizeof(key));
	r = parse(skb, &key, &l3);
	if (r == LOOM_TC_TRUNCATED) {
		/* headers may sit in the paged part: pull them into the linear part, once */
		if (bpf_skb_pull_data(skb, len < LOOM_TC_PULL_BYTES ? len : LOOM_TC_PULL_BYTES) ==
		    0) {
			__builtin_memset(&key, 0, sizeof(key));
			r = parse(skb, &key, &l3);
		}
	}

	cls = loom_default_class;
	switch (r) {
	case LOOM_TC_PARSED:
		f = bpf_map_lookup_elem(&loom_flows, &key);
		if (f) {
			struct loom_tc_counter *c;

			cls = f->cls;
			slot = f->slot;
			c = bpf_map_lookup_elem(&loom_counters, &slot);
			if (c)
				count(c, len);
			count(&st->known, len);
		} else {
			if (len <= small_bytes)
				cls = 0;
			count(&st->unknown, len);
			unknown_flow(&key, len, cls, st);
		}
		break;
	case LOOM_TC_NON_IP:
		cls = 0;
		count(&st->non_ip, len);
		break;
	case LOOM_TC_TRUNCATED:
		count(&st->truncated, len);
		break;
	case LOOM_TC_BAD_HEADER:
		count(&st->bad_header, len);
		break;
	case LOOM_TC_FRAGMENT:
		count(&st->fragment, len);
		break;
	default:
		count(&st->other_proto, len);
		break;
	}
	if (cls >= nclasses)
		cls = nclasses - 1;
	cls &= LOOM_TC_MAX_CLASSES - 1;
	count(&st->cls[cls], len);
	skb->priority = htb_major << 16 | (LOOM_TC_HTB_MINOR_BASE + cls);
	if (r == LOOM_TC_PARSED && rewrite_dscp)
		set_dscp(skb, l3, key.family, dscp_of_class[cls] & 0x3f);
	return TC_ACT_OK;
}
