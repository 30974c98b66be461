/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for common/dag: the empty graph, a chain, a diamond (the
 * children's order decides the order), cycles and self-loops (the node
 * reported is the lowest one left, and every node left keeps parents not
 * taken), the CSR built from pairs and from wider records, random graphs
 * against a literal copy of the Kahn loop the callers had before common/dag
 * (the simulator's results depend on the order), and running out of memory
 * (RLIMIT_AS in a child).
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
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/dag.h"
#include "common/rng.h"
#include "tests/oom.h"
#include "tests/precond.h"

#define NONE LOOM_DAG_NONE

/* Runs Kahn over pairs through a CSR; order and indeg hold n entries. */
static int order_pairs(uint32_t n, const uint32_t (*pairs)[2], uint32_t npairs, uint32_t *order,
		       uint32_t *indeg, uint32_t *ret_node)
{
	struct loom_dag_csr csr;
	int r = loom_dag_csr_init(&csr, n, pairs, npairs, sizeof(*pairs));

	assert_int_equal(r, 0);
	r = loom_dag_order(&(struct loom_dag){n, loom_dag_csr_child, &csr}, order, indeg, ret_node);
	loom_dag_csr_done(&csr);
	assert_null(csr.first);
	assert_null(csr.child);
	return r;
}

static void test_empty(void **state)
{
	struct loom_dag_csr csr;
	uint32_t node = 7, order[1] = {5}, indeg[1] = {5};

	(void)state;
	assert_int_equal(loom_dag_csr_init(&csr, 0, NULL, 0, 8), 0);
	assert_int_equal(csr.first[0], 0);
	assert_int_equal(loom_dag_order(&(struct loom_dag){0, loom_dag_csr_child, &csr}, NULL, NULL,
					&node),
			 0);
	assert_int_equal(loom_dag_order(&(struct loom_dag){0, loom_dag_csr_child, &csr}, order,
					indeg, &node),
			 0);
	assert_int_equal(node, 7); /* not written */
	assert_int_equal(order[0], 5);
	assert_int_equal(indeg[0], 5);
	loom_dag_csr_done(&csr);
	loom_dag_csr_done(&csr); /* twice is safe */
}

static void test_chain(void **state)
{
	enum {
		N = 10
	};
	uint32_t fwd[N - 1][2], back[N - 1][2], order[N], indeg[N];

	(void)state;
	for (uint32_t i = 0; i + 1 < N; i++) {
		fwd[i][0] = i;
		fwd[i][1] = i + 1;
		back[i][0] = i + 1;
		back[i][1] = i;
	}
	assert_int_equal(order_pairs(N, (const uint32_t(*)[2])fwd, N - 1, order, indeg, NULL), 0);
	for (uint32_t i = 0; i < N; i++) {
		assert_int_equal(order[i], i);
		assert_int_equal(indeg[i], 0);
	}
	assert_int_equal(order_pairs(N, (const uint32_t(*)[2])back, N - 1, order, indeg, NULL), 0);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(order[i], N - 1 - i);
}

static void test_diamond(void **state)
{
	/* 0 -> {2, 1} -> 3; 4 alone: seeded in index order, children in pair order */
	static const uint32_t pairs[][2] = {{0, 2}, {1, 3}, {0, 1}, {2, 3}};
	static const uint32_t want[] = {0, 4, 2, 1, 3};
	uint32_t order[5], indeg[5], node = 9;

	(void)state;
	assert_int_equal(order_pairs(5, pairs, 4, order, indeg, &node), 0);
	assert_memory_equal(order, want, sizeof(want));
	assert_int_equal(node, 9);
	/* the order is the same without the caller's arrays */
	assert_int_equal(order_pairs(5, pairs, 4, NULL, NULL, &node), 0);
	assert_int_equal(order_pairs(5, pairs, 4, order, NULL, NULL), 0);
	assert_memory_equal(order, want, sizeof(want));
}

static void test_cycle(void **state)
{
	/* 5 -> 0 -> 1 <-> 2 -> 3; 4 alone; 6 -> 3 */
	static const uint32_t pairs[][2] = {{0, 1}, {1, 2}, {2, 1}, {2, 3}, {5, 0}, {6, 3}};
	static const uint32_t want[] = {4, 5, 6, 0, NONE, NONE, NONE};
	static const uint32_t want_indeg[] = {0, 1, 1, 1, 0, 0, 0};
	uint32_t order[7], indeg[7], node = 99;

	(void)state;
	assert_int_equal(order_pairs(7, pairs, 6, order, indeg, &node), 1);
	assert_int_equal(node, 1);
	assert_memory_equal(order, want, sizeof(want));
	assert_memory_equal(indeg, want_indeg, sizeof(want_indeg));
	node = 99;
	assert_int_equal(order_pairs(7, pairs, 6, NULL, NULL, &node), 1);
	assert_int_equal(node, 1);
	assert_int_equal(order_pairs(7, pairs, 6, NULL, NULL, NULL), 1);
}

static void test_self_loop(void **state)
{
	static const uint32_t alone[][2] = {{0, 0}};
	static const uint32_t after[][2] = {{0, 1}, {1, 1}, {1, 2}};
	uint32_t order[3], indeg[3], node = 99;

	(void)state;
	assert_int_equal(order_pairs(1, alone, 1, order, indeg, &node), 1);
	assert_int_equal(node, 0);
	assert_int_equal(indeg[0], 1);
	assert_int_equal(order[0], NONE);
	assert_int_equal(order_pairs(3, after, 3, order, indeg, &node), 1);
	assert_int_equal(node, 1);
	assert_int_equal(order[0], 0);
	assert_int_equal(order[1], NONE);
	assert_int_equal(indeg[0], 0);
	assert_int_equal(indeg[1], 1);
	assert_int_equal(indeg[2], 1);
}

/* Records wider than a pair: parent and child first, then the caller's own fields. */
struct rec {
	uint32_t parent, child;
	unsigned long line;
};

static void test_csr(void **state)
{
	static const struct rec recs[] = {
		{2, 0, 10}, {0, 3, 11}, {2, 1, 12}, {0, 1, 13}, {2, 3, 14}};
	static const uint32_t want_first[] = {0, 2, 2, 5, 5};
	static const uint32_t want_child[] = {3, 1, 0, 1, 3};
	struct loom_dag_csr csr;
	uint32_t order[4];

	(void)state;
	assert_int_equal(loom_dag_csr_init(&csr, 4, recs, 5, sizeof(*recs)), 0);
	assert_memory_equal(csr.first, want_first, sizeof(want_first));
	assert_memory_equal(csr.child, want_child, sizeof(want_child));
	assert_int_equal(loom_dag_csr_child(&csr, 0, 0), 3);
	assert_int_equal(loom_dag_csr_child(&csr, 0, 1), 1);
	assert_int_equal(loom_dag_csr_child(&csr, 0, 2), NONE);
	assert_int_equal(loom_dag_csr_child(&csr, 1, 0), NONE);
	assert_int_equal(loom_dag_csr_child(&csr, 3, 0), NONE);
	assert_int_equal(loom_dag_order(&(struct loom_dag){4, loom_dag_csr_child, &csr}, order,
					NULL, NULL),
			 0);
	assert_int_equal(order[0], 2);
	assert_int_equal(order[1], 0);
	assert_int_equal(order[2], 3);
	assert_int_equal(order[3], 1);
	loom_dag_csr_done(&csr);
}

/* ---- random graphs against the callers' old loop ---------------------------------------------- */

/*
 * The Kahn loop of controlplane/model (find_cycle, cp_job_critical_paths_ns)
 * and controlplane/policy (policy_topo_order) before common/dag, copied as it
 * was with the model's child lists replaced by a per-node list here
 * (children of v: kids[kfirst[v] .. kfirst[v + 1])). Returns the number taken.
 */
static uint32_t old_kahn(uint32_t n, const uint32_t *kfirst, const uint32_t *kids,
			 const uint32_t *nparents, uint32_t *queue, uint32_t *indeg)
{
	uint32_t head = 0, tail = 0;

	for (uint32_t c = 0; c < n; c++) {
		indeg[c] = nparents[c];
		if (!indeg[c])
			queue[tail++] = c;
	}
	while (head < tail) {
		uint32_t c = queue[head++];

		for (uint32_t i = 0; i < kfirst[c + 1] - kfirst[c]; i++) {
			uint32_t ch = kids[kfirst[c] + i];

			if (--indeg[ch] == 0)
				queue[tail++] = ch;
		}
	}
	return tail;
}

struct lists {
	const uint32_t *kfirst, *kids;
};

/* Children taken from the far end of each list: the order is the caller's. */
static uint32_t lists_child_rev(const void *ctx, uint32_t v, uint32_t i)
{
	const struct lists *l = ctx;
	uint32_t k = l->kfirst[v + 1] - l->kfirst[v];

	return i < k ? l->kids[l->kfirst[v + 1] - 1 - i] : NONE;
}

static void test_random(void **state)
{
	enum {
		MAXN = 80,
		MAXE = 400
	};
	struct loom_rng rng;
	uint32_t pairs[MAXE][2], rank[MAXN], kfirst[MAXN + 1], kids[MAXE], rkids[MAXE],
		nparents[MAXN];
	uint32_t want[MAXN], want_indeg[MAXN], got[MAXN], got_indeg[MAXN], node;
	unsigned ncyclic = 0;

	(void)state;
	loom_rng_seed(&rng, 11);
	for (int round = 0; round < 3000; round++) {
		uint32_t n = (uint32_t)loom_rng_below(&rng, MAXN + 1);
		uint32_t ne = n ? (uint32_t)loom_rng_below(&rng, (uint64_t)n * 4 + 1) : 0;
		bool cyclic = round % 3 == 2;
		uint32_t taken, low = NONE;
		struct lists l = {kfirst, kids};
		int r;

		if (ne > MAXE)
			ne = MAXE;
		/* acyclic: edges go up a random ranking of the nodes; duplicates allowed */
		for (uint32_t v = 0; v < n; v++) {
			uint32_t k = (uint32_t)loom_rng_below(&rng, v + 1);

			rank[v] = rank[k];
			rank[k] = v;
		}
		if (!cyclic && n < 2)
			ne = 0;
		for (uint32_t e = 0; e < ne; e++) {
			uint32_t a = (uint32_t)loom_rng_below(&rng, n);
			uint32_t b = (uint32_t)loom_rng_below(&rng, n);

			if (!cyclic) {
				if (a == b)
					b = (a + 1 + (uint32_t)loom_rng_below(&rng, n - 1)) % n;
				if (rank[a] > rank[b]) {
					uint32_t t = a;

					a = b;
					b = t;
				}
			}
			pairs[e][0] = a;
			pairs[e][1] = b;
		}
		/* the per-node lists of the old loop: the pairs' order within a parent */
		memset(kfirst, 0, sizeof(kfirst));
		memset(nparents, 0, sizeof(nparents));
		for (uint32_t e = 0; e < ne; e++) {
			kfirst[pairs[e][0] + 1]++;
			nparents[pairs[e][1]]++;
		}
		for (uint32_t v = 0; v < n; v++)
			kfirst[v + 1] += kfirst[v];
		{
			uint32_t cur[MAXN + 1];

			memcpy(cur, kfirst, sizeof(cur));
			for (uint32_t e = 0; e < ne; e++)
				kids[cur[pairs[e][0]]++] = pairs[e][1];
		}
		for (uint32_t v = 0; v < n; v++)
			for (uint32_t k = kfirst[v]; k < kfirst[v + 1]; k++)
				rkids[kfirst[v] + kfirst[v + 1] - 1 - k] = kids[k];

		taken = old_kahn(n, kfirst, kids, nparents, want, want_indeg);
		for (uint32_t v = 0; v < n && taken < n; v++)
			if (want_indeg[v]) {
				low = v;
				break;
			}
		for (uint32_t k = taken; k < n; k++)
			want[k] = NONE;
		if (taken < n)
			ncyclic++;
		assert_true(cyclic || taken == n);

		/* through a CSR of the pairs */
		node = NONE;
		r = order_pairs(n, (const uint32_t(*)[2])pairs, ne, got, got_indeg, &node);
		assert_int_equal(r, taken < n ? 1 : 0);
		assert_int_equal(node, low);
		assert_memory_equal(got, want, n * sizeof(*got));
		assert_memory_equal(got_indeg, want_indeg, n * sizeof(*got));
		if (taken < n)
			assert_int_not_equal(got_indeg[node], 0);
		else
			for (uint32_t e = 0; e < ne; e++) {
				uint32_t pa = 0, ch = 0;

				for (uint32_t k = 0; k < n; k++) {
					if (got[k] == pairs[e][0])
						pa = k;
					if (got[k] == pairs[e][1])
						ch = k;
				}
				assert_true(pa < ch);
			}

		/* through a function, children in reverse: the old loop over reversed lists */
		taken = old_kahn(n, kfirst, rkids, nparents, want, want_indeg);
		for (uint32_t k = taken; k < n; k++)
			want[k] = NONE;
		node = NONE;
		r = loom_dag_order(&(struct loom_dag){n, lists_child_rev, &l}, got, got_indeg,
				   &node);
		assert_int_equal(r, taken < n ? 1 : 0);
		assert_int_equal(node, low); /* the nodes left do not depend on the order */
		assert_memory_equal(got, want, n * sizeof(*got));
		assert_memory_equal(got_indeg, want_indeg, n * sizeof(*got));
		/* and allocating its own arrays */
		node = NONE;
		r = loom_dag_order(&(struct loom_dag){n, lists_child_rev, &l}, NULL, NULL, &node);
		assert_int_equal(r, taken < n ? 1 : 0);
		assert_int_equal(node, low);
	}
	assert_true(ncyclic > 500); /* the cyclic rounds mostly have a cycle */
}

/* ---- out of memory ---------------------------------------------------------------------------- */

/* Never reached: the arrays fail first. */
static uint32_t child_not_called(const void *ctx, uint32_t v, uint32_t i)
{
	(void)ctx;
	(void)v;
	(void)i;
	_exit(2);
}

/* In a child: address space capped, then graphs whose arrays cannot fit. */
static void oom_child(void)
{
	static const uint32_t pairs[][2] = {{0, 1}, {1, 2}};
	const uint32_t big = 1u << 28; /* 1 GiB per array */
	struct loom_dag big_dag = {big, child_not_called, NULL};
	struct loom_dag_csr csr = {NULL, NULL};
	uint32_t order[3], indeg[3], node = 77;
	struct rlimit old;

	OOM_CHECK(loom_dag_csr_init(&csr, 3, pairs, 2, sizeof(*pairs)) == 0);
	oom_cap(&old);

	OOM_CHECK(loom_dag_order(&big_dag, NULL, NULL, &node) == -ENOMEM);
	OOM_CHECK(loom_dag_order(&big_dag, order, NULL, &node) == -ENOMEM);
	OOM_CHECK(loom_dag_order(&big_dag, NULL, indeg, &node) == -ENOMEM);
	OOM_CHECK(node == 77);
	{
		struct loom_dag_csr g;

		OOM_CHECK(loom_dag_csr_init(&g, big, pairs, 2, sizeof(*pairs)) == -ENOMEM);
		OOM_CHECK(!g.first && !g.child);
		loom_dag_csr_done(&g);
	}
	/* with the caller's arrays nothing is allocated */
	OOM_CHECK(loom_dag_order(&(struct loom_dag){3, loom_dag_csr_child, &csr}, order, indeg,
				 &node) == 0);
	OOM_CHECK(order[0] == 0 && order[1] == 1 && order[2] == 2);

	oom_uncap(&old);
	loom_dag_csr_done(&csr);
	_exit(0);
}

static void test_oom(void **state)
{
	(void)state;
	oom_run(oom_child);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),     cmocka_unit_test(test_chain),
		cmocka_unit_test(test_diamond),   cmocka_unit_test(test_cycle),
		cmocka_unit_test(test_self_loop), cmocka_unit_test(test_csr),
		cmocka_unit_test(test_random),    cmocka_unit_test(test_oom),
	};
	size_t n = sizeof(tests) / sizeof(tests[0]);
	n = precond_leave_out(tests, n, test_oom, oom_unsupported());
	return precond_run(tests, n, NULL, NULL);
}
