/* SPDX-License-Identifier: BSD-3-Clause */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "controlplane/policy/policy.h"

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
		cmocka_unit_test(test_fair_one_class),
		cmocka_unit_test(test_validate),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
