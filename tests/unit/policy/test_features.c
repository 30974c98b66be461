/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The learned policy's view of the model (coflow_features.h): exact values
 * on hand-built DAGs, and invariance to the order in which jobs, coflows and
 * flows were registered.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/policy/coflow_features.h"
#include "topo/topo.h"

#define MIB  1048576ULL
#define GBIT 1073741824ULL
#define EPS  1e-5

/*
 * Three jobs: job 10 is a chain a(1) -> b(2) -> c(3); job 20 a diamond
 * 4 -> {5, 6} -> 7 with weight 3; job 30 one coflow 8 of two flows. All
 * arrive at 0. `order` permutes the registration of the jobs (and reverses
 * the coflows and flows inside them when odd).
 */
struct spec_flow {
	uint64_t coflow;
	uint32_t src, dst;
	uint64_t bytes;
};

static const struct spec_flow flows[] = {
	{1, 0, 1, 4 * MIB},  {2, 1, 2, 8 * MIB}, {3, 2, 3, 2 * MIB},
	{4, 0, 4, 16 * MIB}, {5, 4, 5, 1 * MIB}, {6, 4, 6, 3 * MIB},
	{7, 5, 0, 5 * MIB},  {8, 0, 7, 6 * MIB}, {8, 1, 7, 2 * MIB},
};
static const uint64_t job_of[9] = {0, 10, 10, 10, 20, 20, 20, 20, 30};
static const uint64_t edges[][2] = {{1, 2}, {2, 3}, {4, 5}, {4, 6}, {5, 7}, {6, 7}};

static struct cp_model *build(const int *order, bool reverse, const struct topo *t)
{
	static const uint64_t jobs[3] = {10, 20, 30};
	struct loom_err err = {{0}};
	struct cp_builder *b = cp_builder_new(8);
	struct cp_model *m;

	for (int k = 0; k < 3; k++) {
		uint64_t j = jobs[order[k]];

		assert_int_equal(cp_builder_add_job(b, j, 0, j == 20 ? 3 : 1, &err), 0);
		for (int i = 0; i < 9; i++) {
			int c = reverse ? 8 - i : i;

			if (c > 0 && job_of[c] == j)
				assert_int_equal(cp_builder_add_coflow(b, (uint64_t)c, j, 0, &err),
						 0);
		}
	}
	for (size_t i = 0; i < sizeof(flows) / sizeof(flows[0]); i++) {
		const struct spec_flow *f = &flows[reverse ? 8 - i : i];

		assert_int_equal(cp_builder_add_flow(b, f->coflow, f->src, f->dst, f->bytes, &err),
				 0);
	}
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		size_t e = reverse ? 5 - i : i;

		assert_int_equal(cp_builder_add_edge(b, edges[e][0], edges[e][1], 0, &err), 0);
	}
	m = cp_builder_finish(b, &err);
	assert_non_null(m);
	assert_int_equal(cp_model_bind(m, t), 0);
	cp_model_reset(m);
	return m;
}

/* Arrives every job at 0 and releases every ready coflow. */
static void start(struct cp_model *m)
{
	for (uint32_t j = 0; j < m->njobs; j++)
		assert_int_equal(cp_model_job_arrive(m, j, 0), 0);
	for (uint32_t c = 0; c < m->ncoflows; c++)
		if (m->coflows[c].state == CP_COFLOW_READY)
			assert_int_equal(cp_model_coflow_release(m, c, 0), 0);
}

static const float *row_of(const struct policy_graph *g, const struct cp_model *m, uint64_t id)
{
	for (uint32_t v = 0; v < g->nnodes; v++)
		if (m->coflows[g->node_coflow[v]].ext_id == id)
			return &g->x[(size_t)v * POLICY_NFEATURES];
	return NULL;
}

static void test_values(void **state)
{
	struct topo *t = topo_new_bigswitch(8, GBIT);
	struct policy_graph g;
	struct cp_model *m = build((const int[]){0, 1, 2}, false, t);
	const float *a, *b, *c, *d4, *d8;
	double s_per_mib = 8.0 * MIB / GBIT; /* seconds per MiB at 1 Gbit/s */

	(void)state;
	assert_int_equal(policy_graph_init(&g, m), 0);
	start(m);
	policy_graph_build(&g, m, 2000000000ULL); /* 2 s after the arrivals */
	/* every coflow is unfinished; roots 1, 4 and 8 are schedulable */
	assert_int_equal(g.nnodes, 8);
	assert_int_equal(g.njobs, 3);
	assert_int_equal(g.nedges, 6);
	assert_int_equal(g.nsched, 3);
	a = row_of(&g, m, 1);
	b = row_of(&g, m, 2);
	c = row_of(&g, m, 3);
	d4 = row_of(&g, m, 4);
	d8 = row_of(&g, m, 8);
	assert_non_null(a);
	/* chain a -> b -> c: depth, height, descendants, remaining path */
	assert_float_equal(a[PF_DEPTH], 0, EPS);
	assert_float_equal(c[PF_DEPTH], log1p(2), EPS);
	assert_float_equal(a[PF_HEIGHT], log1p(2), EPS);
	assert_float_equal(b[PF_HEIGHT], log1p(1), EPS);
	assert_float_equal(a[PF_DESCENDANTS], log1p(2), EPS);
	assert_float_equal(a[PF_DESC_REMAINING_MIB], log1p(10), EPS);
	assert_float_equal(a[PF_PATH_S], log1p(14 * s_per_mib), EPS);
	assert_float_equal(a[PF_SCHEDULABLE], 1, EPS);
	assert_float_equal(b[PF_SCHEDULABLE], 0, EPS);
	assert_float_equal(a[PF_WAIT_S], log1p(2.0), EPS);
	assert_float_equal(b[PF_WAIT_S], 0, EPS);
	assert_float_equal(a[PF_JOB_AGE_S], log1p(2.0), EPS);
	/* job 10: a 0->1 (4 MiB), b 1->2 (8), c 2->3 (2): its busiest port is host 1's uplink */
	assert_float_equal(a[PF_JOB_BOTTLENECK_S], log1p(8 * s_per_mib), EPS);
	/* diamond: 4 has three descendants; weight 3 */
	assert_float_equal(d4[PF_DESCENDANTS], log1p(3), EPS);
	assert_float_equal(d4[PF_DESC_REMAINING_MIB], log1p(9), EPS);
	assert_float_equal(d4[PF_WEIGHT], log1p(3), EPS);
	assert_float_equal(a[PF_WEIGHT], log1p(1), EPS);
	/* coflow 8: two flows 6 + 2 MiB into host 7 */
	assert_float_equal(d8[PF_TOTAL_MIB], log1p(8), EPS);
	assert_float_equal(d8[PF_REMAINING_MIB], log1p(8), EPS);
	assert_float_equal(d8[PF_WIDTH], log1p(2), EPS);
	assert_float_equal(d8[PF_LONGEST_FLOW_MIB], log1p(6), EPS);
	assert_float_equal(d8[PF_BOTTLENECK_S], log1p(8 * s_per_mib), EPS);
	assert_float_equal(d8[PF_SENT_FRACTION], 0, EPS);
	/* contention at host 0's uplink: 1 (4 MiB), 4 (16 MiB) and 8 (6 MiB) */
	assert_float_equal(d8[PF_CONTENTION_S], log1p(26 * s_per_mib), EPS);
	assert_float_equal(a[PF_CONTENTION_S], log1p(26 * s_per_mib), EPS);
	/* a second build gives the same graph (scratch is reset between builds) */
	{
		float copy[8 * POLICY_NFEATURES];

		memcpy(copy, g.x, sizeof(copy));
		policy_graph_build(&g, m, 2000000000ULL);
		assert_memory_equal(copy, g.x, sizeof(copy));
	}
	/*
	 * finish a's only flow: job 10 has nothing schedulable until b is
	 * released, so it leaves the graph; then b's release brings it back
	 * without a, b at depth 0
	 */
	for (uint32_t i = 0; i < m->ncoflows; i++)
		if (m->coflows[i].ext_id == 1)
			assert_int_equal(
				cp_model_flow_done(m, m->coflows[i].first_flow, 3000000000ULL), 0);
	policy_graph_build(&g, m, 3000000000ULL);
	assert_int_equal(g.nnodes, 5);
	assert_int_equal(g.nedges, 4);
	assert_int_equal(g.nsched, 2);
	assert_null(row_of(&g, m, 2));
	/* host 0's uplink now carries only 4 (16 MiB) and 8 (6 MiB) */
	assert_float_equal(row_of(&g, m, 8)[PF_CONTENTION_S], log1p(22 * s_per_mib), EPS);
	for (uint32_t i = 0; i < m->ncoflows; i++)
		if (m->coflows[i].ext_id == 2)
			assert_int_equal(cp_model_coflow_release(m, i, 3000000000ULL), 0);
	policy_graph_build(&g, m, 4000000000ULL);
	assert_int_equal(g.nnodes, 7);
	assert_int_equal(g.nedges, 5);
	assert_int_equal(g.nsched, 3);
	assert_null(row_of(&g, m, 1));
	b = row_of(&g, m, 2);
	c = row_of(&g, m, 3);
	assert_float_equal(b[PF_DEPTH], 0, EPS);
	assert_float_equal(c[PF_DEPTH], log1p(1), EPS);
	assert_float_equal(b[PF_SCHEDULABLE], 1, EPS);
	assert_float_equal(b[PF_WAIT_S], log1p(1.0), EPS);
	/* b (1->2, 8 MiB) shares host 1's uplink with coflow 8's 1->7 flow (2 MiB) */
	assert_float_equal(b[PF_CONTENTION_S], log1p(10 * s_per_mib), EPS);
	policy_graph_done(&g);
	cp_model_free(m);
	topo_free(t);
}

/* Edge (parent id, child id) pairs of the graph, sorted. */
static size_t edge_ids(const struct policy_graph *g, const struct cp_model *m, uint64_t (*out)[2])
{
	for (uint32_t e = 0; e < g->nedges; e++) {
		out[e][0] = m->coflows[g->node_coflow[g->edges[2 * e]]].ext_id;
		out[e][1] = m->coflows[g->node_coflow[g->edges[2 * e + 1]]].ext_id;
	}
	for (uint32_t i = 1; i < g->nedges; i++)
		for (uint32_t k = i;
		     k > 0 && (out[k][0] < out[k - 1][0] ||
			       (out[k][0] == out[k - 1][0] && out[k][1] < out[k - 1][1]));
		     k--) {
			uint64_t t0 = out[k][0], t1 = out[k][1];

			out[k][0] = out[k - 1][0];
			out[k][1] = out[k - 1][1];
			out[k - 1][0] = t0;
			out[k - 1][1] = t1;
		}
	return g->nedges;
}

static void test_registration_order(void **state)
{
	static const int orders[][3] = {{0, 1, 2}, {2, 1, 0}, {1, 2, 0}, {2, 0, 1}};
	struct topo *t = topo_new_bigswitch(8, GBIT);
	struct cp_model *ref = build(orders[0], false, t);
	struct policy_graph gr;
	uint64_t eref[8][2], e[8][2];

	(void)state;
	assert_int_equal(policy_graph_init(&gr, ref), 0);
	start(ref);
	policy_graph_build(&gr, ref, 1000000000ULL);
	edge_ids(&gr, ref, eref);
	for (size_t k = 1; k < sizeof(orders) / sizeof(orders[0]); k++) {
		struct cp_model *m = build(orders[k], k % 2, t);
		struct policy_graph g;

		assert_int_equal(policy_graph_init(&g, m), 0);
		start(m);
		policy_graph_build(&g, m, 1000000000ULL);
		assert_int_equal(g.nnodes, gr.nnodes);
		assert_int_equal(g.nsched, gr.nsched);
		assert_int_equal(g.nedges, gr.nedges);
		/* the same jobs in the same order, each with the same coflows */
		assert_memory_equal(g.job_start, gr.job_start, (gr.njobs + 1) * sizeof(uint32_t));
		for (uint32_t v = 0; v < g.nnodes; v++) {
			uint64_t id = m->coflows[g.node_coflow[v]].ext_id;

			assert_int_equal(job_of[id],
					 m->jobs[m->coflows[g.node_coflow[v]].job].ext_id);
			assert_memory_equal(&g.x[(size_t)v * POLICY_NFEATURES],
					    row_of(&gr, ref, id), POLICY_NFEATURES * sizeof(float));
		}
		edge_ids(&g, m, e);
		assert_memory_equal(e, eref, gr.nedges * sizeof(e[0]));
		policy_graph_done(&g);
		cp_model_free(m);
	}
	policy_graph_done(&gr);
	cp_model_free(ref);
	topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_registration_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
