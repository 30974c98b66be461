/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dataplane/table: the agent's control-side copy of its priority table, as
 * the controller sends it (loom.proto's PriorityTable): which coflow each
 * flow (5-tuple) belongs to, which class (0 = highest priority) and rate cap
 * each coflow has, and the class of flows not in the table. It is updated by
 * full tables and deltas, queried by tuple, and flattened into an immutable
 * snapshot that a fast path (eBPF map loader, DPDK enforcer) can load or
 * swap in; the fast path never reads a struct dp_table.
 *
 * Invariants:
 *  - Two independent maps: flows (tuple -> coflow id) and classes (coflow
 *    id -> class, rate). A flow may name a coflow with no class entry (it
 *    then gets default_class); removing a coflow removes its class entry
 *    only, never its flows (the controller removes those by tuple).
 *  - Every class held, and default_class, is < nclasses (fixed at creation).
 *  - Every tuple held has family 4 or 6; an IPv4 tuple's address bytes
 *    past the first 4 are zero (struct wire_tuple's form).
 *  - A delta moves the version forward; a full table sets it to its own
 *    (any version >= 1: a controller session numbers its tables from 1, so a
 *    restarted controller's first full table may be older than ours). A new
 *    table is empty at version 0 with default_class nclasses - 1 (the lowest
 *    priority).
 *  - dp_table_apply() is all or nothing: on any error the table is exactly
 *    as before. Its cost is O(update size) expected, plus an occasional
 *    O(table) resize amortised over the entries that caused it; a full
 *    update costs O(its own size) plus freeing the old table.
 *
 * A struct dp_table is not thread-safe: one thread (the agent's loop) owns
 * it. Nothing here logs; errors are -errno.
 */
#ifndef LOOM_DATAPLANE_TABLE_H
#define LOOM_DATAPLANE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/tuple.h"

struct dp_table;

/* One flow of an update: added, or moved to another coflow. */
struct dp_flow_entry {
	struct wire_tuple tuple;
	uint64_t coflow_id;
};

/* One coflow's class of an update: added or changed. */
struct dp_class_entry {
	uint64_t coflow_id;
	uint32_t cls;
	uint64_t rate_bps; /* 0 = no cap */
};

/*
 * Our form of one PriorityTable; the arrays are borrowed for the call only
 * (a NULL array is fine when its count is 0). A full update replaces the
 * whole table with flows and classes (base_version and the removed lists
 * are ignored). A delta applies on base_version: first the removals
 * (removed_flows by tuple, removed_coflows' class entries by id; absent
 * ones are no-ops), then flows and classes (added, or replacing the entry
 * with the same key; within one array the last entry for a key wins).
 * Either kind sets default_class and the version.
 */
struct dp_update {
	uint64_t version;
	uint64_t base_version; /* delta only */
	bool full;
	uint32_t default_class; /* for flows not in the table, or whose coflow has no class */
	const struct dp_flow_entry *flows;
	size_t nflows;
	const struct dp_class_entry *classes;
	size_t nclasses;
	const struct wire_tuple *removed_flows; /* delta only */
	size_t nremoved_flows;
	const uint64_t *removed_coflows; /* delta only */
	size_t nremoved_coflows;
};

/*
 * Creates an empty table (version 0, no flows, no classes, default_class
 * nclasses - 1) for classes 0 .. nclasses - 1. Returns it (the caller owns
 * it: dp_table_free) or NULL + errno (EINVAL: nclasses is 0; ENOMEM).
 */
struct dp_table *dp_table_new(uint32_t nclasses);

/* Frees t and everything it holds (NULL is fine). Returns NULL. */
struct dp_table *dp_table_free(struct dp_table *t);

/*
 * Applies one update, all or nothing. Returns 0, or with nothing changed:
 * -ESTALE: a delta whose base_version is not the table's version (the
 *          agent asks for a full table: Resync);
 * -EINVAL: a malformed update: NULL u, a NULL array with a count, a delta
 *          whose version is not greater than the table's, a full table at
 *          version 0, a class or default_class >=
 *          nclasses, or a tuple not in struct wire_tuple's form (family not
 *          4/6, nonzero IPv4 padding); the base is checked before the
 *          version and the entries, so a stale delta is -ESTALE even when
 *          they are malformed too;
 * -ENOMEM.
 * u and its arrays stay the caller's.
 */
int dp_table_apply(struct dp_table *t, const struct dp_update *u);

/* Returns the version of the last update applied (0 before any). */
uint64_t dp_table_version(const struct dp_table *t);

/* Returns the number of classes the table was created for. */
uint32_t dp_table_nclasses(const struct dp_table *t);

/* Returns the class given to flows not in the table. */
uint32_t dp_table_default_class(const struct dp_table *t);

/*
 * Returns the class of a packet's tuple: its flow's coflow's class, or
 * default_class when the flow is unknown or its coflow has no class entry.
 * *ret_known (may be NULL) says whether the flow is in the table;
 * *ret_coflow (may be NULL) is its coflow id, 0 when it is not. An
 * ill-formed tuple is simply not found. Expected O(1); never allocates.
 */
uint32_t dp_table_lookup(const struct dp_table *t, const struct wire_tuple *tuple,
			 uint64_t *ret_coflow, bool *ret_known);

/*
 * Looks up a coflow's class entry. Returns 0 with *ret_cls and *ret_rate_bps
 * (either may be NULL), or -ENOENT (outputs untouched).
 */
int dp_table_coflow(const struct dp_table *t, uint64_t coflow_id, uint32_t *ret_cls,
		    uint64_t *ret_rate_bps);

/* Returns the number of flows held. */
size_t dp_table_nflows(const struct dp_table *t);

/* Returns the number of coflow class entries held (not coflows named by flows). */
size_t dp_table_ncoflows(const struct dp_table *t);

/*
 * The total order of snapshots: family, protocol, source address bytes,
 * destination address bytes, source port, destination port (ports as
 * numbers). The same on every host. Returns <0, 0 or >0 as for memcmp.
 */
int dp_tuple_cmp(const struct wire_tuple *a, const struct wire_tuple *b);

/* One flow of a snapshot, resolved: a coflow without a class entry gives default_class, rate 0. */
struct dp_snapshot_flow {
	struct wire_tuple tuple;
	uint64_t coflow_id;
	uint32_t cls;
	uint64_t rate_bps; /* 0 = no cap */
};

/* A flat, immutable copy of a table: every flow, sorted by dp_tuple_cmp. */
struct dp_snapshot {
	uint64_t version;
	uint32_t default_class;
	size_t n;
	struct dp_snapshot_flow *flows; /* n entries (NULL when n is 0); part of the snapshot */
};

/*
 * Makes a snapshot of t (O(n log n)). Returns it (the caller owns it, one
 * allocation: dp_snapshot_free) or NULL + errno ENOMEM. It shares nothing
 * with t: t may change or be freed while the snapshot lives.
 */
struct dp_snapshot *dp_table_snapshot(const struct dp_table *t);

/* Frees s (NULL is fine). Returns NULL. */
struct dp_snapshot *dp_snapshot_free(struct dp_snapshot *s);

/*
 * Finds tuple in s by binary search. Returns its entry (owned by s) or
 * NULL when the flow is not in s (its class is then s->default_class).
 */
const struct dp_snapshot_flow *dp_snapshot_find(const struct dp_snapshot *s,
						const struct wire_tuple *tuple);

#endif
