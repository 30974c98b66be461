/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ebpf/loader: loads Loom's tc egress program (loom_tc.bpf.c, through its
 * generated skeleton) and installs it on one interface:
 *
 *   root qdisc   htb, handle major: (default 1:), default class major:(0x10+K-1)
 *     class major:1         rate = ceil = the link rate
 *       class major:10+c    c = 0 .. K-1, prio c, rate = the link / 1000 (at
 *                           least 8 kbit/s), ceil = the link rate
 *   clsact       (created unless there is one) with our cls_bpf filter on
 *                egress: direct-action, handle/pref LOOM_TC_FILTER_HANDLE/_PRIO
 *
 * HTB serves a class within its own rate first, then lends what is left of
 * the parent's rate to the classes that want more, lowest prio first: with
 * the guaranteed rates this small (0.1% each), the classes behave as strict
 * priorities, and no class is ever starved to zero.
 *
 * A previous agent that died without cleaning up leaves these behind; a new
 * one replaces them: an HTB root with our handle is deleted and built
 * afresh, our filter (same handle and pref) is replaced, and a clsact that
 * held only our filter is treated as ours. ebpf_tc_free() removes all of it:
 * the filter, the HTB root (the kernel's default root qdisc comes back), and
 * the clsact qdisc when it is ours and no other filter is left on it.
 *
 * Everything here is control side (the program is the fast path). Functions
 * return 0 (or a count) or -errno; those that take a struct ebpf_err write a
 * message naming the interface and what failed there (err may be NULL). Not
 * thread-safe: one thread owns a struct ebpf_tc. Uses libbpf and
 * libnl-route-3; logs nothing itself (libbpf prints its warnings, e.g. a
 * verifier log, to stderr).
 */
#ifndef LOOM_EBPF_LOADER_H
#define LOOM_EBPF_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ebpf/loom_tc.h"

/*
 * The message of the last failing call; msg is "" when none was written.
 * A private copy of common/errors.h's struct loom_err and loom_err_set():
 * ebpf/ may not include common/ (docs/architecture.md, layering), so the
 * shape is the same and a caller copies msg into its loom_err in one line
 * (loom_err_from(), or loom_err_set() with its own context).
 */
#define EBPF_ERR_MAX 256

struct ebpf_err {
	char msg[EBPF_ERR_MAX];
};

/* Writes a message into err (may be NULL) and returns -code (code > 0). */
__attribute__((format(printf, 3, 4))) int ebpf_err_set(struct ebpf_err *err, int code,
						       const char *fmt, ...);

struct ebpf_tc_opts {
	/* the interface; NULL or "": load the program only (no qdisc, no filter) */
	const char *ifname;
	uint32_t classes;   /* K: 1 .. LOOM_TC_MAX_CLASSES */
	uint64_t rate_bps;  /* the link: HTB root rate and every class's ceil (with ifname) */
	uint32_t htb_major; /* root qdisc handle major; 0: LOOM_TC_HTB_MAJOR */
	bool rewrite_dscp;  /* mark dscp[class] into parsed IP packets */
	uint8_t dscp[LOOM_TC_MAX_CLASSES];
	uint32_t default_class; /* class of unknown flows until ebpf_tc_set_default_class */
	uint32_t small_bytes; /* unknown flows' packets of at most this length: class 0 (0: off) */
};

struct ebpf_tc;

/*
 * Loads the program with opts' tunables and, with an interface, builds the
 * HTB tree and attaches the program to its egress (replacing what a dead
 * agent left, see above). Returns the instance (the caller owns it:
 * ebpf_tc_free) or NULL with errno and a message in err: EINVAL (bad
 * opts), ENODEV (no such interface), EPERM (not root / no CAP_BPF and
 * CAP_NET_ADMIN), or what the kernel said. On failure nothing of ours is
 * left on the interface.
 */
struct ebpf_tc *ebpf_tc_new(const struct ebpf_tc_opts *opts, struct ebpf_err *err);

/*
 * Detaches the program, deletes the HTB root and (when ours and empty) the
 * clsact qdisc, unloads the program and frees tc. NULL is fine. Returns NULL.
 */
struct ebpf_tc *ebpf_tc_free(struct ebpf_tc *tc);

/* Returns the program's fd (BPF_PROG_TEST_RUN in tests and benchmarks); owned by tc. */
int ebpf_tc_prog_fd(const struct ebpf_tc *tc);

/* Returns the interface's index, 0 when loaded without one. */
int ebpf_tc_ifindex(const struct ebpf_tc *tc);

/* Sets the class of unknown and unparseable IP packets from now on. 0 or -EINVAL. */
int ebpf_tc_set_default_class(struct ebpf_tc *tc, uint32_t cls);

/* One flow of a table as the program sees it. */
struct ebpf_tc_entry {
	struct loom_tc_key key;
	struct loom_tc_flow val;
};

/* What ebpf_tc_sync wrote. */
struct ebpf_tc_sync_result {
	size_t updated; /* flows added or changed (class or slot) */
	size_t deleted; /* flows removed */
};

/*
 * Makes loom_flows hold exactly entries[0 .. n-1] (any order, fastest in
 * key (memcmp) order, which is dp_tuple_cmp's; borrowed for the call). Only the differences from the last sync are written: first
 * every added or changed flow, then the deletions, so a flow in both tables
 * is never missing in between. Returns 0 with *ret (may be NULL), or
 * -EINVAL (n > LOOM_TC_MAX_FLOWS, a class >= the classes, a slot >=
 * LOOM_TC_FLOW_SLOTS, the same key twice: nothing written) / -ENOMEM / what
 * the kernel said, with a message. After a kernel error the map may hold a
 * mix of both tables; the next sync rereads the map and fixes it.
 */
int ebpf_tc_sync(struct ebpf_tc *tc, const struct ebpf_tc_entry *entries, size_t n,
		 struct ebpf_tc_sync_result *ret, struct ebpf_err *err);

/* Returns the number of flows in loom_flows (after the last sync). */
size_t ebpf_tc_nflows(const struct ebpf_tc *tc);

/*
 * Reads counter slots 0 .. n-1 (n <= LOOM_TC_FLOW_SLOTS), each summed over
 * the CPUs, into ret[0 .. n-1]. Returns 0 or -errno.
 */
int ebpf_tc_counters_read(struct ebpf_tc *tc, uint32_t n, struct loom_tc_counter *ret);

/* Zeroes one counter slot on every CPU. Returns 0 or -errno. */
int ebpf_tc_counter_clear(struct ebpf_tc *tc, uint32_t slot);

/* Reads the program's totals, summed over the CPUs. Returns 0 or -errno. */
int ebpf_tc_stats_read(struct ebpf_tc *tc, struct loom_tc_stats *ret);

/* Receives one unknown-flow event (borrowed for the call). */
typedef void (*ebpf_tc_event_fn)(void *ctx, const struct loom_tc_event *ev);

/*
 * Hands every pending unknown-flow event to fn, without blocking. Returns
 * the number of events or -errno.
 */
int ebpf_tc_events_poll(struct ebpf_tc *tc, ebpf_tc_event_fn fn, void *ctx);

/* Returns the ring buffer's epoll fd (readable when events wait); owned by tc. */
int ebpf_tc_events_fd(const struct ebpf_tc *tc);

/*
 * Reads an unknown flow's counters (since it entered loom_unknown), summed
 * over the CPUs. Returns 0, or -ENOENT when it is not there (never seen, or
 * evicted by newer unknown flows).
 */
int ebpf_tc_unknown_read(struct ebpf_tc *tc, const struct loom_tc_key *key,
			 struct loom_tc_counter *ret);

/* Removes an unknown flow from loom_unknown: its next packet announces it again. 0 or -errno. */
int ebpf_tc_unknown_forget(struct ebpf_tc *tc, const struct loom_tc_key *key);

#endif
