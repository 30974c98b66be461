/* SPDX-License-Identifier: BSD-3-Clause */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "controlplane/policy/policy.h"
#include "tests/unit/policy/fill_check.h"

struct fixture {
	struct topo *t;
	struct cp_model *m;
};

/*
 * Three single-coflow jobs on 4 hosts at 8000 bit/s (1000 B/s):
 * c1 (arrives 20): h0->h1 1000 B, h0->h2 3000 B
 * c2 (arrives 10): h3->h1 500 B
 * c3 (arrives 30): h2->h3 100 B
 */
static int setup(void **state)
{
	static struct fixture fx;
	struct cp_builder *b = cp_builder_new(4);
	struct loom_err err;

	cp_builder_add_job(b, 1, 20, 1.0, NULL);
	cp_builder_add_coflow(b, 1, 1, 0, NULL);
	cp_builder_add_flow(b, 1, 0, 1, 1000, NULL);
	cp_builder_add_flow(b, 1, 0, 2, 3000, NULL);
	cp_builder_add_job(b, 2, 10, 1.0, NULL);
	cp_builder_add_coflow(b, 2, 2, 0, NULL);
	cp_builder_add_flow(b, 2, 3, 1, 500, NULL);
	cp_builder_add_job(b, 3, 30, 1.0, NULL);
	cp_builder_add_coflow(b, 3, 3, 0, NULL);
	cp_builder_add_flow(b, 3, 2, 3, 100, NULL);
	fx.m = cp_builder_finish(b, &err);
	fx.t = topo_new_bigswitch(4, 8000);
	if (!fx.m || !fx.t || cp_model_bind(fx.m, fx.t) < 0)
		return -1;
	/* Release all three (jobs are sorted by arrival: c2, c1, c3). */
	for (uint32_t j = 0; j < 3; j++) {
		cp_model_job_arrive(fx.m, j, fx.m->jobs[j].arrival_ns);
		cp_model_coflow_release(fx.m, j, fx.m->jobs[j].arrival_ns);
	}
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	cp_model_free(fx->m);
	topo_free(fx->t);
	return 0;
}

static void test_registry(void **state)
{
	struct loom_err err;
	size_t n;
	const struct policy_class *const *list = policy_class_list(&n);

	(void)state;
	assert_true(n >= 2);
	for (size_t i = 0; i < n; i++)
		assert_ptr_equal(policy_class_find(list[i]->name), list[i]);
	assert_null(policy_class_find("nope"));
	assert_null(policy_new("nope", NULL, NULL, &err));
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(err.msg, "unknown policy 'nope'"));
	assert_non_null(strstr(err.msg, "fifo"));
}

static void test_fifo_order_and_madd(void **state)
{
	struct fixture *fx = *state;
	struct policy_decision d;
	struct loom_err err;
	struct policy *p = policy_new("fifo", NULL, fx->m, &err);
	uint32_t stamp[3] = {0};

	assert_non_null(p);
	assert_int_equal(policy_decision_init(&d, fx->m), 0);
	assert_int_equal(policy_decide(p, fx->m, 100, &d), 0);
	assert_int_equal(policy_decision_validate(&d, fx->m, stamp, 1, &err), 0);
	assert_int_equal(d.norder, 3);
	/* arrival order: c2 (index 0), c1 (index 1), c3 (index 2) */
	assert_int_equal(fx->m->coflows[d.order[0]].ext_id, 2);
	assert_int_equal(fx->m->coflows[d.order[1]].ext_id, 1);
	assert_int_equal(fx->m->coflows[d.order[2]].ext_id, 3);
	assert_true(d.has_rates);
	/* c2 alone: 500 B at full rate. */
	assert_true(fabs(d.rate_bps[fx->m->coflows[0].first_flow] - 8000) < 1e-6);
	/*
	 * c1: h0 uplink carries 4000 B (4 s), h1 downlink has 0 free (c2 took it):
	 * blocked, so both flows get 0.
	 */
	assert_true(d.rate_bps[fx->m->coflows[1].first_flow] == 0);
	assert_true(d.rate_bps[fx->m->coflows[1].first_flow + 1] == 0);
	/* c3: h2 -> h3, both free: full rate. */
	assert_true(fabs(d.rate_bps[fx->m->coflows[2].first_flow] - 8000) < 1e-6);
	policy_decision_done(&d);
	policy_free(p);
}

/* MADD alone: every flow of a coflow finishes at its bottleneck time. */
static void test_madd_equal_finish(void **state)
{
	struct fixture *fx = *state;
	double free_bps[8], load[8] = {0}, rate[4] = {0};
	uint32_t order[1] = {1}; /* c1 */
	const struct cp_coflow *cf = &fx->m->coflows[1];

	policy_madd(fx->m, order, 1, free_bps, load, rate);
	/* bottleneck: h0 uplink 4000 B at 1000 B/s = 4 s. */
	for (uint32_t f = cf->first_flow; f < cf->first_flow + cf->nflows; f++) {
		double t = fx->m->flows[f].remaining_bytes * 8 / rate[f];

		assert_true(fabs(t - 4.0) < 1e-9);
	}
	assert_true(free_bps[0] < 1e-6); /* h0 uplink used up */
	for (int i = 0; i < 8; i++)
		assert_true(load[i] == 0);
}

/* Releases every job of m at its arrival and binds it to a fresh big switch. */
static struct topo *bind_all(struct cp_model *m, uint32_t hosts)
{
	struct topo *t = topo_new_bigswitch(hosts, 8000);

	assert_non_null(t);
	assert_int_equal(cp_model_bind(m, t), 0);
	for (uint32_t j = 0; j < m->njobs; j++) {
		cp_model_job_arrive(m, j, m->jobs[j].arrival_ns);
		for (uint32_t c = m->jobs[j].first_coflow;
		     c < m->jobs[j].first_coflow + m->jobs[j].ncoflows; c++)
			cp_model_coflow_release(m, c, m->jobs[j].arrival_ns);
	}
	return t;
}

/*
 * MADD then the fill: the capacity MADD leaves on a coflow's shared port
 * is split between its flows there, not given to the first of them as the
 * simulator's greedy backfill would.
 *   f1 h0->h1 3000 B: the bottleneck (3 s at 1000 B/s), full rate;
 *   f2 h2->h3 100 B, f3 h2->h4 200 B: MADD rates 266.7 and 533.3 bit/s, which
 *   leave 7200 bit/s on h2's uplink: 3600 more each.
 */
static void test_madd_fill_shares(void **state)
{
	struct cp_builder *b = cp_builder_new(5);
	struct loom_err err;
	struct cp_model *m;
	struct topo *t;
	double free_bps[10], load[10] = {0}, madd[3] = {0}, fill[3] = {0};
	uint32_t order[1] = {0};

	(void)state;
	cp_builder_add_job(b, 1, 0, 1.0, NULL);
	cp_builder_add_coflow(b, 1, 1, 0, NULL);
	cp_builder_add_flow(b, 1, 0, 1, 3000, NULL);
	cp_builder_add_flow(b, 1, 2, 3, 100, NULL);
	cp_builder_add_flow(b, 1, 2, 4, 200, NULL);
	m = cp_builder_finish(b, &err);
	assert_non_null(m);
	t = bind_all(m, 5);
	policy_madd(m, order, 1, free_bps, load, madd);
	policy_madd_fill(m, order, 1, free_bps, load, fill);
	for (uint32_t k = 0; k < 3; k++) {
		uint32_t f = m->flow_slot[k];
		const struct cp_flow *fl = &m->flows[f];

		if (fl->src == 0) {
			assert_true(fabs(fill[f] - 8000) < 1e-6);
		} else {
			assert_true(fabs(madd[f] - fl->remaining_bytes * 8.0 / 3.0) < 1e-6);
			assert_true(fabs(fill[f] - madd[f] - 3600) < 1e-6);
		}
	}
	for (int i = 0; i < 10; i++)
		assert_true(load[i] == 0);
	cp_model_free(m);
	topo_free(t);
}

/*
 * On random instances (6 hosts, up to 8 coflows of up to 6 flows, random
 * orders): no flow below its MADD rate, no port oversubscribed, and every
 * flow of the order ends with a saturated port (Pareto: no flow could take
 * more without taking it from another).
 */
static void test_madd_fill_random(void **state)
{
	enum {
		H = 6,
		P = 2 * H
	};
	struct loom_rng rng;

	(void)state;
	loom_rng_seed(&rng, 11);
	for (int inst = 0; inst < 200; inst++) {
		struct cp_builder *b = cp_builder_new(H);
		uint32_t nc = 1 + (uint32_t)loom_rng_below(&rng, 8), order[8];
		double free_bps[P], load[P] = {0}, *fill;
		struct loom_err err;
		struct cp_model *m;
		struct topo *t;

		for (uint32_t c = 0; c < nc; c++) {
			uint32_t nf = 1 + (uint32_t)loom_rng_below(&rng, 6);

			cp_builder_add_job(b, c + 1, 0, 1.0, NULL);
			cp_builder_add_coflow(b, c + 1, c + 1, 0, NULL);
			for (uint32_t k = 0; k < nf; k++)
				cp_builder_add_flow(b, c + 1, (uint32_t)loom_rng_below(&rng, H),
						    (uint32_t)loom_rng_below(&rng, H),
						    1 + loom_rng_below(&rng, 5000), NULL);
		}
		m = cp_builder_finish(b, &err);
		assert_non_null(m);
		t = bind_all(m, H);
		fill = calloc(m->nflows, sizeof(*fill));
		assert_non_null(fill);
		for (uint32_t c = 0; c < nc; c++)
			order[c] = c;
		for (uint32_t c = nc; c > 1; c--) {
			uint32_t j = (uint32_t)loom_rng_below(&rng, c), x = order[c - 1];

			order[c - 1] = order[j];
			order[j] = x;
		}
		policy_madd_fill(m, order, nc, free_bps, load, fill);
		for (uint32_t p = 0; p < P; p++)
			assert_true(load[p] == 0);
		assert_true(fill_check(m, order, nc, fill, NULL));
		free(fill);
		cp_model_free(m);
		topo_free(t);
	}
}

static void test_fair_one_class(void **state)
{
	struct fixture *fx = *state;
	struct policy_decision d;
	struct loom_err err;
	struct policy *p = policy_new("fair", NULL, fx->m, &err);

	assert_non_null(p);
	assert_int_equal(policy_decision_init(&d, fx->m), 0);
	assert_int_equal(policy_decide(p, fx->m, 100, &d), 0);
	assert_int_equal(d.norder, 3);
	assert_true(d.has_classes);
	assert_false(d.has_rates);
	for (uint32_t i = 0; i < d.norder; i++)
		assert_int_equal(d.class_of[i], 0);
	policy_decision_done(&d);
	policy_free(p);
}

static void test_validate(void **state)
{
	struct fixture *fx = *state;
	struct policy_decision d;
	struct loom_err err;
	uint32_t stamp[3] = {0}, gen = 0;

	assert_int_equal(policy_decision_init(&d, fx->m), 0);
	d.norder = 2;
	d.order[0] = 0;
	d.order[1] = 1;
	assert_int_equal(policy_decision_validate(&d, fx->m, stamp, ++gen, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "orders 2 coflows, 3 are schedulable"));
	d.norder = 3;
	d.order[2] = 1;
	assert_int_equal(policy_decision_validate(&d, fx->m, stamp, ++gen, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "twice"));
	d.order[2] = 7;
	assert_int_equal(policy_decision_validate(&d, fx->m, stamp, ++gen, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "not schedulable"));
	d.order[2] = 2;
	d.has_classes = true;
	d.class_of[0] = 1;
	d.class_of[1] = 0;
	d.class_of[2] = 2;
	assert_int_equal(policy_decision_validate(&d, fx->m, stamp, ++gen, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "classes decrease"));
	d.class_of[0] = 0;
	assert_int_equal(policy_decision_validate(&d, fx->m, stamp, ++gen, &err), 0);
	policy_decision_done(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry),
		cmocka_unit_test(test_fifo_order_and_madd),
		cmocka_unit_test(test_madd_equal_finish),
		cmocka_unit_test(test_madd_fill_shares),
		cmocka_unit_test(test_madd_fill_random),
		cmocka_unit_test(test_fair_one_class),
		cmocka_unit_test(test_validate),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
