/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common/dag: Kahn's algorithm, the one topological order and cycle check
 * of Loom. The model's builder (cycles among a trace's coflows), the
 * critical-path bound, the LP bound's release times, the DAG policies'
 * per-job orders, the trace reader (which edge closes a cycle), the reader
 * of DAG shapes (dags.txt) and loomd's registry (a submitted job's DAG) all
 * go through it; gnn/ keeps its own, as it includes nothing of common/.
 *
 * A graph (struct loom_dag) is nodes 0 .. n-1 and a function that names
 * each node's children in an order of the caller's, so that the model hands
 * over its per-coflow child lists as they are; code that holds (parent,
 * child) pairs builds a CSR of them with loom_dag_csr_init() and passes
 * loom_dag_csr_child().
 *
 * The order is fixed, and callers' results (the simulator's) depend on it:
 * the nodes without parents are queued in index order, then taken first in
 * first out; taking a node visits its children in the caller's order and
 * queues each child whose parents have now all been taken. A cycle leaves
 * the nodes on it, and every node after one, never taken: exactly the nodes
 * whose count of parents not taken stays nonzero. That set does not depend
 * on the order; the lowest numbered node in it is the one reported.
 *
 * loom_dag_order() allocates nothing when the caller passes both arrays
 * (policy_topo_order() relies on it); loom_dag_csr_init() allocates the CSR
 * it fills. Nothing logs.
 */
#ifndef LOOM_COMMON_DAG_H
#define LOOM_COMMON_DAG_H

#include <stddef.h>
#include <stdint.h>

#define LOOM_DAG_NONE UINT32_MAX /* no node: after a node's last child; an order slot not filled */

/*
 * The i-th child of node v (i = 0, 1, ... in the caller's order), or
 * LOOM_DAG_NONE once i is past the last. Every child is below the graph's n.
 */
typedef uint32_t loom_dag_child_fn(const void *ctx, uint32_t v, uint32_t i);

struct loom_dag {
	uint32_t n;               /* nodes 0 .. n-1 */
	loom_dag_child_fn *child; /* called with ctx */
	const void *ctx;
};

/*
 * Kahn's algorithm over g (which it only reads).
 *   order: NULL, or n entries of the caller's: receives the nodes in
 *          topological order (parents first); with a cycle, the nodes taken
 *          and then LOOM_DAG_NONE in each entry left.
 *   indeg: NULL, or n entries of the caller's scratch: left holding, per
 *          node, how many of its parents were not taken (all zero when
 *          acyclic; nonzero exactly on the nodes on or after a cycle).
 * A NULL array is allocated and freed here. Returns 0 when g is acyclic, 1
 * when it has a cycle with *ret_node (when ret_node is not NULL) the lowest
 * numbered node on or after one, or -ENOMEM (only when an array is NULL).
 */
int loom_dag_order(const struct loom_dag *g, uint32_t *order, uint32_t *indeg, uint32_t *ret_node);

/* A graph's children as a CSR: those of v are child[first[v] .. first[v + 1]). */
struct loom_dag_csr {
	uint32_t *first; /* n + 1 offsets */
	uint32_t *child; /* one entry per pair */
};

/*
 * Builds g from npairs (parent, child) pairs over nodes 0 .. n-1, each
 * pair the two uint32_t that start a record of stride bytes (a uint32_t[2],
 * or a struct whose first two members are uint32_t parent, child); records
 * are only read. Each node's children keep the order of their pairs. g owns
 * the two arrays it allocates; loom_dag_csr_done() frees them. Returns 0,
 * or -ENOMEM with g empty (loom_dag_csr_done() is still safe).
 */
int loom_dag_csr_init(struct loom_dag_csr *g, uint32_t n, const void *pairs, uint32_t npairs,
		      size_t stride);

/* Frees g's arrays and empties it. */
void loom_dag_csr_done(struct loom_dag_csr *g);

/* loom_dag_child_fn of a CSR: ctx is a const struct loom_dag_csr *. */
uint32_t loom_dag_csr_child(const void *ctx, uint32_t v, uint32_t i);

#endif
