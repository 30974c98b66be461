/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ebpf/loom_tc: the one header shared by the tc egress program
 * (loom_tc.bpf.c) and user space (loader.c, the "tc" enforcer, tests). It
 * holds only fixed-width kernel UAPI types (<linux/types.h>), so that it
 * means the same thing to clang -target bpf and to the host compiler.
 *
 * The program marks each packet leaving an interface:
 *   - a flow (5-tuple) in loom_flows gets the class the agent gave it;
 *   - a parsed IP flow that is not there gets the table's default class
 *     (loom_default_class, changed by the agent with each table), and is
 *     announced once through the loom_events ring buffer;
 *   - a non-IP frame (ARP, LLDP...) gets class 0: it is small control
 *     traffic, and starving neighbour resolution would stall every flow;
 *   - an IP packet that cannot be parsed to its ports (truncated, a
 *     non-first fragment, not TCP/UDP, bad header) gets the default class
 *     and keeps its DSCP.
 * Class c becomes skb->priority = TC_H_MAKE(major << 16, LOOM_TC_HTB_MINOR_BASE
 * + c), i.e. HTB class "major:1c" in tc's hex notation (1:10 for class 0 ...
 * 1:1f for class 15), which the HTB qdisc the loader installs picks up
 * directly (no filter needed). A parsed packet's DSCP becomes the class's
 * (ECN bits kept). The program never drops: it always returns TC_ACT_OK.
 *
 * Invariants:
 *  - struct loom_tc_key is always fully written (zeroed first): the hash
 *    maps compare all 40 bytes. IPv4 addresses use the first 4 bytes of
 *    src/dst, the rest zero (struct wire_tuple's form); ports are in network
 *    byte order as on the wire (wire_tuple holds them in host order).
 *  - loom_flows holds at most LOOM_TC_FLOW_SLOTS flows and counter slots are
 *    < LOOM_TC_FLOW_SLOTS. A table has at most LOOM_TC_MAX_FLOWS flows: the
 *    other half lets the agent add a new table's flows before deleting the
 *    old table's (no flow is transiently unknown) and keep removed flows'
 *    slots until their last bytes are read.
 *  - Classes are < LOOM_TC_MAX_CLASSES.
 */
#ifndef LOOM_EBPF_LOOM_TC_H
#define LOOM_EBPF_LOOM_TC_H

#include <linux/types.h>

#define LOOM_TC_MAX_CLASSES    16                      /* HTB classes major:10 .. major:1f */
#define LOOM_TC_MAX_FLOWS      65536                   /* flows in one table */
#define LOOM_TC_FLOW_SLOTS     (2 * LOOM_TC_MAX_FLOWS) /* loom_flows entries, counter slots */
#define LOOM_TC_MAX_UNKNOWN    16384                   /* unknown flows remembered (LRU) */
#define LOOM_TC_RINGBUF_BYTES  (256 * 1024)            /* loom_events */
#define LOOM_TC_HTB_MAJOR      1                       /* default root qdisc handle 1: */
#define LOOM_TC_HTB_MINOR_BASE 0x10                    /* class c -> minor 0x10 + c */
#define LOOM_TC_HTB_PARENT     1                       /* the inner class major:1 */
#define LOOM_TC_FILTER_HANDLE  0x4c4d                  /* our cls_bpf filter: handle ... */
#define LOOM_TC_FILTER_PRIO    0x4c4d                  /* ... and pref ("LM") */
#define LOOM_TC_MAX_EXT_HDRS   4                       /* IPv6 extension headers skipped */
#define LOOM_TC_PULL_BYTES     128                     /* headers pulled into the linear part */

/* Why a packet was not parsed to a 5-tuple (the program counts them). */
enum loom_tc_reason {
	LOOM_TC_PARSED = 0,
	LOOM_TC_NON_IP = 1,      /* ethertype not IPv4/IPv6 (after up to two VLAN tags) */
	LOOM_TC_TRUNCATED = 2,   /* a header ends past the packet */
	LOOM_TC_BAD_HEADER = 3,  /* IP version mismatch, IPv4 IHL < 5 */
	LOOM_TC_FRAGMENT = 4,    /* a non-first IPv4/IPv6 fragment: no ports */
	LOOM_TC_OTHER_PROTO = 5, /* not TCP/UDP (ICMP, ESP, too many IPv6 ext headers) */
};

/*
 * The flow key: a 5-tuple, 40 bytes, no implicit padding. The fields are in
 * the order of dp_tuple_cmp (family, protocol, addresses, ports as numbers),
 * so that memcmp of two keys orders them as the agent's snapshots are
 * ordered (ports big-endian compare as numbers).
 */
struct loom_tc_key {
	__u8 family;   /* 4 or 6 */
	__u8 protocol; /* IPPROTO_TCP or IPPROTO_UDP */
	__u8 src[16];
	__u8 dst[16];
	__be16 src_port; /* network byte order */
	__be16 dst_port;
	__u8 pad[2]; /* zero */
};

/* loom_flows' value: the flow's class and its counter slot in loom_counters. */
struct loom_tc_flow {
	__u32 slot; /* < LOOM_TC_FLOW_SLOTS */
	__u8 cls;   /* < LOOM_TC_MAX_CLASSES */
	__u8 pad[3];
};

struct loom_tc_counter {
	__u64 packets;
	__u64 bytes; /* skb->len: the frame from the Ethernet header on */
};

/* The program's per-CPU totals (loom_stats, one entry); user space sums the CPUs. */
struct loom_tc_stats {
	struct loom_tc_counter cls[LOOM_TC_MAX_CLASSES]; /* every packet, by the class given */
	struct loom_tc_counter known;                    /* parsed, in loom_flows */
	struct loom_tc_counter unknown;                  /* parsed, not in loom_flows */
	struct loom_tc_counter non_ip;
	struct loom_tc_counter truncated;
	struct loom_tc_counter bad_header;
	struct loom_tc_counter fragment;
	struct loom_tc_counter other_proto;
	__u64 events;      /* unknown flows announced through loom_events */
	__u64 events_lost; /* loom_events was full: announced again by a later packet */
};

/* One loom_events record: a flow not in loom_flows, seen for the first time. */
struct loom_tc_event {
	struct loom_tc_key key;
	__u32 len; /* its first packet's skb->len */
	__u8 cls;  /* the class it got (the default class then) */
	__u8 pad[3];
};

_Static_assert(sizeof(struct loom_tc_key) == 40, "loom_tc_key is 40 bytes, no holes");
_Static_assert(sizeof(struct loom_tc_flow) == 8, "loom_tc_flow is 8 bytes");
_Static_assert(sizeof(struct loom_tc_event) == 48, "loom_tc_event is 48 bytes");

#endif
