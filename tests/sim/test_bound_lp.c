/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The LP lower bound (sim_bound_lp(), docs/bounds.md): on random small
 * workloads, multi-stage (generated) and single-stage (built here), it is
 * never above what any heuristic policy achieves in the simulator and never
 * below the isolation bound; on one port with every coflow released at 0 it
 * is the optimum (Smith's rule; Queyranne's polytope is exact there); an
 * unbound model is refused; summary.csv and the table carry it. The best
 * fixed order (sim_bound_order()) lies between the LP bound and fifo (whose
 * run is one fixed order's). Exits 77 when built without GLPK.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controlplane/sim/sim.h"
#include "tests/gen_fixture.h"

#define RATE_BPS 1000000000ULL

/* Relative slack for floating point in the comparisons (times round to ns). */
#define SLACK 1e-7

/* Runs spec (ideal mode) on m and returns its summary. */
static void run_policy(struct cp_model *m, const char *spec, struct sim_summary *ret)
{
	struct loom_err err = {{0}};
	struct sim_opts o;
	struct sim_stats st;
	struct policy_params pp = {.classes = 8, .seed = 1};
	struct policy *p = policy_new(spec, &pp, m, &err);

	if (!p)
		fail_msg("%s: %s", spec, err.msg);
	sim_opts_default(&o);
	if (sim_run(m, p, &o, &st, &err) < 0)
		fail_msg("%s: %s", spec, err.msg);
	assert_int_equal(sim_summarise(m, &st, spec, ret), 0);
	policy_free(p);
}

/* Whether the policy is a heuristic (the learned ones need a model file). */
static bool heuristic(const char *name)
{
	return strcmp(name, "gnn") != 0 && strcmp(name, "ensemble") != 0;
}

/*
 * Checks the bound of m against every heuristic and the isolation bound:
 * wJCT always, average CCT when single_stage.
 */
static void check_instance(struct cp_model *m, bool single_stage, const char *what)
{
	struct loom_err err = {{0}};
	struct sim_bound_result b;
	struct sim_summary s;
	size_t n;
	const struct policy_class *const *list = policy_class_list(&n);
	bool first = true;

	if (sim_bound_lp(m, NULL, &b, &err) < 0)
		fail_msg("%s: %s", what, err.msg);
	assert_true(b.converged);
	assert_true(b.avg_wjct_s > 0);
	assert_int_equal(isnan(b.avg_cct_s) ? 1 : 0, single_stage ? 0 : 1);
	for (size_t i = 0; i < n; i++) {
		if (!heuristic(list[i]->name))
			continue;
		run_policy(m, list[i]->name, &s);
		if (first) {
			/* the isolation bounds do not depend on the policy */
			if (b.avg_wjct_s < s.avg_wjob_isolation_s * (1 - SLACK))
				fail_msg("%s: LP bound %.9g under the isolation bound %.9g", what,
					 b.avg_wjct_s, s.avg_wjob_isolation_s);
			if (single_stage && b.avg_cct_s < s.avg_isolation_s * (1 - SLACK))
				fail_msg("%s: LP CCT bound %.9g under the isolation bound %.9g",
					 what, b.avg_cct_s, s.avg_isolation_s);
			first = false;
		}
		if (b.avg_wjct_s > s.avg_wjct_s * (1 + SLACK))
			fail_msg("%s: LP bound %.9g above %s's avg wJCT %.9g", what, b.avg_wjct_s,
				 list[i]->name, s.avg_wjct_s);
		if (single_stage && b.avg_cct_s > s.cct_s.avg * (1 + SLACK))
			fail_msg("%s: LP CCT bound %.9g above %s's avg CCT %.9g", what, b.avg_cct_s,
				 list[i]->name, s.cct_s.avg);
	}
}

/* Generated multi-stage workloads (TPC-H shapes, FB2010 coflows), weights 1..4. */
static void test_below_policies_multi(void **state)
{
	static const struct {
		uint64_t seed;
		double load, compute_scale;
	} cases[] = {
		{1, 0.9, 0},
		{2, 0.7, 0},
		{3, 0.9, 0.01},
	};
	struct topo *t = topo_new_bigswitch(150, RATE_BPS);

	(void)state;
	assert_non_null(t);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct loom_err err = {{0}};
		struct sim_gen_params gp;
		struct cp_model *m;
		char what[64];

		sim_gen_params_default(&gp);
		gp.njobs = 6;
		gp.load = cases[k].load;
		gp.seed = cases[k].seed;
		gp.bytes_scale = 0.01;
		gp.weight_max = 4;
		gp.compute_scale = cases[k].compute_scale;
		m = test_gen_workload(&gp, t, &err);
		if (!m)
			fail_msg("gen: %s", err.msg);
		snprintf(what, sizeof(what), "multi-stage seed %llu",
			 (unsigned long long)cases[k].seed);
		check_instance(m, false, what);
		cp_model_free(m);
	}
	topo_free(t);
}

/* xorshift64*: the test's own deterministic draws. */
static uint64_t draw(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

/*
 * A random single-stage workload on nhosts hosts: ncoflows jobs of one
 * coflow each, 1..3 flows of 0.1..10 MB, arrivals in 0..20 ms, weights 1..3,
 * some release offsets.
 */
static struct cp_model *random_single(uint64_t seed, uint32_t nhosts, uint32_t ncoflows,
				      const struct topo *t)
{
	struct loom_err err = {{0}};
	struct cp_builder *b = cp_builder_new(nhosts);
	struct cp_model *m;
	uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 1;

	assert_non_null(b);
	for (uint32_t c = 0; c < ncoflows; c++) {
		uint32_t nf = 1 + (uint32_t)(draw(&s) % 3);

		assert_int_equal(cp_builder_add_job(b, c, draw(&s) % 20000000ULL,
						    (double)(1 + draw(&s) % 3), &err),
				 0);
		assert_int_equal(
			cp_builder_add_coflow(b, c, c, c % 3 ? 0 : draw(&s) % 1000000ULL, &err), 0);
		for (uint32_t f = 0; f < nf; f++) {
			uint32_t src = (uint32_t)(draw(&s) % nhosts);
			uint32_t dst = (src + 1 + (uint32_t)(draw(&s) % (nhosts - 1))) % nhosts;

			assert_int_equal(cp_builder_add_flow(b, c, src, dst,
							     100000 + draw(&s) % 10000000ULL, &err),
					 0);
		}
	}
	m = cp_builder_finish(b, &err);
	if (!m)
		fail_msg("build: %s", err.msg);
	assert_int_equal(cp_model_bind(m, t), 0);
	return m;
}

static void test_below_policies_single(void **state)
{
	struct topo *t = topo_new_bigswitch(4, RATE_BPS);

	(void)state;
	assert_non_null(t);
	for (uint64_t seed = 1; seed <= 5; seed++) {
		struct cp_model *m = random_single(seed, 4, 6 + (uint32_t)seed * 2, t);
		char what[64];

		snprintf(what, sizeof(what), "single-stage seed %llu", (unsigned long long)seed);
		check_instance(m, true, what);
		cp_model_free(m);
	}
	topo_free(t);
}

/*
 * One port: n single-flow coflows from distinct hosts into host 0, all
 * released at 0, weights w. Smith's rule (p / w ascending) is optimal, and
 * with equal releases the parallel inequalities describe the single
 * machine's completion-time polytope exactly, so the LP is that optimum.
 */
static void test_one_port_exact(void **state)
{
	enum {
		N = 8
	};
	static const uint64_t bytes[N] = {3000000, 500000,  9000000, 1250000,
					  7000000, 2000000, 640000,  4400000};
	static const double weight[N] = {1, 3, 2, 1, 4, 1, 2, 3};
	struct loom_err err = {{0}};
	struct topo *t = topo_new_bigswitch(N + 1, RATE_BPS);
	struct sim_bound_result b;
	struct cp_builder *bld;
	struct cp_model *m;
	uint32_t order[N];
	double now_s = 0, wsum = 0, csum = 0;

	(void)state;
	assert_non_null(t);
	for (int unit = 0; unit < 2; unit++) {
		bld = cp_builder_new(N + 1);
		assert_non_null(bld);
		for (uint32_t j = 0; j < N; j++) {
			assert_int_equal(cp_builder_add_job(bld, j, 0, unit ? 1 : weight[j], &err),
					 0);
			assert_int_equal(cp_builder_add_coflow(bld, j, j, 0, &err), 0);
			assert_int_equal(cp_builder_add_flow(bld, j, j + 1, 0, bytes[j], &err), 0);
		}
		m = cp_builder_finish(bld, &err);
		assert_non_null(m);
		assert_int_equal(cp_model_bind(m, t), 0);
		/* Smith's order by insertion sort on p / w */
		for (uint32_t j = 0; j < N; j++) {
			uint32_t k = j;
			double wj = unit ? 1 : weight[j];

			while (k > 0) {
				double wk = unit ? 1 : weight[order[k - 1]];

				if ((double)bytes[order[k - 1]] / wk <= (double)bytes[j] / wj)
					break;
				order[k] = order[k - 1];
				k--;
			}
			order[k] = j;
		}
		now_s = wsum = csum = 0;
		for (uint32_t k = 0; k < N; k++) {
			uint32_t j = order[k];

			now_s += (double)bytes[j] * 8 / (double)RATE_BPS;
			wsum += (unit ? 1 : weight[j]) * now_s;
			csum += now_s;
		}
		assert_int_equal(sim_bound_lp(m, NULL, &b, &err), 0);
		assert_true(b.converged);
		if (fabs(b.avg_wjct_s - wsum / N) > 1e-6 * (wsum / N))
			fail_msg("one port (%s weights): LP %.12g, optimum %.12g",
				 unit ? "unit" : "job", b.avg_wjct_s, wsum / N);
		/* the CCT bound is the unweighted optimum: SPT */
		if (unit && fabs(b.avg_cct_s - csum / N) > 1e-6 * (csum / N))
			fail_msg("one port: LP CCT %.12g, optimum %.12g", b.avg_cct_s, csum / N);
		cp_model_free(m);
	}
	topo_free(t);
}

static void test_bad_input(void **state)
{
	struct loom_err err = {{0}};
	struct cp_builder *b = cp_builder_new(2);
	struct sim_bound_result res;
	struct cp_model *m;

	(void)state;
	assert_int_equal(cp_builder_add_job(b, 1, 0, 1, &err), 0);
	assert_int_equal(cp_builder_add_coflow(b, 1, 1, 0, &err), 0);
	assert_int_equal(cp_builder_add_flow(b, 1, 0, 1, 1000, &err), 0);
	m = cp_builder_finish(b, &err);
	assert_non_null(m);
	/* not bound to a fabric */
	assert_int_equal(sim_bound_lp(m, NULL, &res, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not bound"));
	assert_int_equal(sim_bound_lp(NULL, NULL, &res, &err), -EINVAL);
	cp_model_free(m);
}

/* A few jobs of two or three chained coflows each (edges with compute delays). */
static struct cp_model *random_chains(uint64_t seed, uint32_t nhosts, uint32_t njobs,
				      const struct topo *t, uint32_t *ret_ncoflows)
{
	struct loom_err err = {{0}};
	struct cp_builder *b = cp_builder_new(nhosts);
	struct cp_model *m;
	uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 7;
	uint32_t id = 0;

	assert_non_null(b);
	for (uint32_t j = 0; j < njobs; j++) {
		uint32_t len = 2 + (uint32_t)(draw(&s) % 2);

		assert_int_equal(cp_builder_add_job(b, j, draw(&s) % 5000000ULL,
						    (double)(1 + draw(&s) % 4), &err),
				 0);
		for (uint32_t k = 0; k < len; k++, id++) {
			uint32_t src = (uint32_t)(draw(&s) % nhosts);
			uint32_t dst = (src + 1 + (uint32_t)(draw(&s) % (nhosts - 1))) % nhosts;

			assert_int_equal(cp_builder_add_coflow(b, id, j, 0, &err), 0);
			assert_int_equal(cp_builder_add_flow(b, id, src, dst,
							     100000 + draw(&s) % 5000000ULL, &err),
					 0);
			if (k > 0)
				assert_int_equal(cp_builder_add_edge(b, id - 1, id,
								     draw(&s) % 2000000ULL, &err),
						 0);
		}
	}
	m = cp_builder_finish(b, &err);
	if (!m)
		fail_msg("build: %s", err.msg);
	assert_int_equal(cp_model_bind(m, t), 0);
	*ret_ncoflows = id;
	return m;
}

/*
 * The best fixed order: LP bound <= best order <= fifo (fifo's run is the
 * fixed order of its release times), for wJCT and, single-stage, CCT; at
 * least the isolation bound; n! orders simulated; more than max_coflows
 * refused.
 */
static void check_order(struct cp_model *m, bool single_stage, const char *what)
{
	struct loom_err err = {{0}};
	struct sim_bound_result b;
	struct sim_order_result o;
	struct sim_summary fifo;
	uint64_t fact = 1;

	if (sim_bound_lp(m, NULL, &b, &err) < 0)
		fail_msg("%s: %s", what, err.msg);
	if (sim_bound_order(m, NULL, &o, &err) < 0)
		fail_msg("%s: %s", what, err.msg);
	for (uint32_t i = 2; i <= m->ncoflows; i++)
		fact *= i;
	assert_int_equal(o.orders, fact);
	assert_int_equal(o.n, m->ncoflows);
	run_policy(m, "fifo", &fifo);
	if (o.avg_wjct_s < b.avg_wjct_s * (1 - SLACK) ||
	    o.avg_wjct_s > fifo.avg_wjct_s * (1 + SLACK))
		fail_msg("%s: best order's wJCT %.9g not within [LP %.9g, fifo %.9g]", what,
			 o.avg_wjct_s, b.avg_wjct_s, fifo.avg_wjct_s);
	if (o.avg_wjct_s < fifo.avg_wjob_isolation_s * (1 - SLACK))
		fail_msg("%s: best order's wJCT %.9g under the isolation bound %.9g", what,
			 o.avg_wjct_s, fifo.avg_wjob_isolation_s);
	if (single_stage &&
	    (o.avg_cct_s < b.avg_cct_s * (1 - SLACK) || o.avg_cct_s > fifo.cct_s.avg * (1 + SLACK)))
		fail_msg("%s: best order's CCT %.9g not within [LP %.9g, fifo %.9g]", what,
			 o.avg_cct_s, b.avg_cct_s, fifo.cct_s.avg);
	/* every coflow once in each best order */
	for (uint32_t c = 0; c < m->ncoflows; c++) {
		uint32_t seen = 0;

		for (uint32_t i = 0; i < o.n; i++)
			seen += (o.best_wjct_order[i] == c) + (o.best_cct_order[i] == c);
		assert_int_equal(seen, 2);
	}
	sim_order_result_done(&o);
}

static void test_best_order(void **state)
{
	struct topo *t = topo_new_bigswitch(4, RATE_BPS);
	struct loom_err err = {{0}};
	struct sim_order_opts oo;
	struct sim_order_result o;

	(void)state;
	assert_non_null(t);
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct cp_model *m = random_single(seed, 4, 3 + (uint32_t)seed % 4, t);
		char what[64];

		snprintf(what, sizeof(what), "single-stage seed %llu", (unsigned long long)seed);
		check_order(m, true, what);
		cp_model_free(m);
	}
	for (uint64_t seed = 1; seed <= 4; seed++) {
		uint32_t n;
		struct cp_model *m = random_chains(seed, 4, 2, t, &n);
		char what[64];

		snprintf(what, sizeof(what), "chains seed %llu (%u coflows)",
			 (unsigned long long)seed, n);
		check_order(m, false, what);
		cp_model_free(m);
	}
	{
		struct cp_model *m = random_single(3, 4, SIM_ORDER_MAX_COFLOWS + 1, t);

		assert_int_equal(sim_bound_order(m, NULL, &o, &err), -E2BIG);
		assert_non_null(strstr(err.msg, "over the 8"));
		sim_order_opts_default(&oo);
		oo.max_coflows = 3;
		cp_model_free(m);
		m = random_single(4, 4, 4, t);
		assert_int_equal(sim_bound_order(m, &oo, &o, &err), -E2BIG);
		cp_model_free(m);
	}
	topo_free(t);
}

/* summary.csv has the bound columns (nan when not computed); the table a row. */
static void test_report(void **state)
{
	struct topo *t = topo_new_bigswitch(4, RATE_BPS);
	struct cp_model *m = random_single(9, 4, 6, t);
	struct sim_summary s[2];
	struct sim_bound_result b;
	struct loom_err err = {{0}};
	char dir[] = "/tmp/loom-test-bound-XXXXXX", path[128], buf[8192];
	char *table = NULL;
	size_t tlen = 0, len;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(sim_bound_lp(m, NULL, &b, &err), 0);
	run_policy(m, "fifo", &s[0]);
	run_policy(m, "sebf", &s[1]);
	assert_true(isnan(s[0].lp_bound_wjct_s) && isnan(s[0].lp_bound_cct_s));

	/* without the bound: nan columns, no row */
	snprintf(path, sizeof(path), "%s/summary.csv", dir);
	assert_int_equal(sim_write_summary_csv(s, 2, path), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	len = fread(buf, 1, sizeof(buf) - 1, f);
	buf[len] = '\0';
	fclose(f);
	assert_non_null(
		strstr(buf, ",wall_s,lp_bound_wjct_s,lp_bound_cct_s,order_wjct_s,order_cct_s\n"));
	assert_non_null(strstr(buf, ",nan,nan,nan,nan\n"));
	f = open_memstream(&table, &tlen);
	assert_non_null(f);
	sim_print_table(f, s, 2);
	fclose(f);
	assert_null(strstr(table, "(LP bound)"));
	free(table);
	table = NULL;

	/* with it: the values, and the row */
	for (int i = 0; i < 2; i++) {
		s[i].lp_bound_wjct_s = b.avg_wjct_s;
		s[i].lp_bound_cct_s = b.avg_cct_s;
		s[i].order_wjct_s = s[1].avg_wjct_s;
		s[i].order_cct_s = s[1].cct_s.avg;
	}
	assert_int_equal(sim_write_summary_csv(s, 2, path), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	len = fread(buf, 1, sizeof(buf) - 1, f);
	buf[len] = '\0';
	fclose(f);
	assert_null(strstr(buf, "nan"));
	f = open_memstream(&table, &tlen);
	assert_non_null(f);
	sim_print_table(f, s, 2);
	fclose(f);
	assert_non_null(strstr(table, "\n(LP bound) "));
	assert_non_null(strstr(table, "\n(best order) "));
	assert_non_null(strstr(table, "\n(isolation bound) "));
	free(table);
	unlink(path);
	rmdir(dir);
	cp_model_free(m);
	topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_port_exact),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_best_order),
		cmocka_unit_test(test_below_policies_single),
		cmocka_unit_test(test_below_policies_multi),
	};

	if (!sim_bound_lp_available()) {
		fprintf(stderr, "test_bound_lp: built without GLPK (meson option lp): skipped\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
