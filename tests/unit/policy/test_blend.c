/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * blend: the weighted vote of heuristic orders (controlplane/policy/blend.c)
 * on a generated multi-stage workload. Every decision of a replay is checked
 * against the vote computed here from the heuristics' own orders; a blend
 * with one heuristic is that heuristic, rates included; bad weights are
 * refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/policy/policy.h"
#include "controlplane/sim/sim.h"
#include "tests/gen_fixture.h"

static struct topo *t;
static struct cp_model *m;

static int setup(void **state)
{
	struct loom_err err = {{0}};
	struct sim_gen_params gp;

	(void)state;
	t = topo_new_bigswitch(150, 1073741824ULL);
	if (!t)
		return -1;
	sim_gen_params_default(&gp);
	gp.njobs = 7;
	gp.load = 0.9;
	gp.seed = 11;
	gp.bytes_scale = 0.05;
	gp.weight_max = 4;
	m = test_gen_workload(&gp, t, &err);
	if (!m) {
		print_error("setup: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	cp_model_free(m);
	topo_free(t);
	return 0;
}

/* Runs spec over the workload; returns the weighted JCT sum (ns). */
static double run(const char *spec, struct sim_opts *so)
{
	struct loom_err err = {{0}};
	struct policy_params pp = {.classes = 8, .seed = 1};
	struct policy *p = policy_new(spec, &pp, m, &err);
	struct sim_stats st;
	double s = 0;

	if (!p)
		fail_msg("%s: %s", spec, err.msg);
	if (sim_run(m, p, so, &st, &err) < 0)
		fail_msg("%s: %s", spec, err.msg);
	policy_free(p);
	for (uint32_t j = 0; j < m->njobs; j++)
		s += m->jobs[j].weight * (double)(m->jobs[j].finish_ns - m->jobs[j].arrival_ns);
	return s;
}

struct vote_check {
	struct policy *sinc, *wsrjf;
	struct policy_decision a, b;
	double *score;   /* per coflow */
	uint32_t *place; /* per coflow: place in sincronia's order */
	uint32_t decisions, checked;
};

/* Every blend decision (sincronia 1, wsrjf 2) against the vote of the two orders. */
static void check_vote(void *ctx, const struct cp_model *mm, uint64_t now_ns,
		       const struct policy_decision *d)
{
	struct vote_check *c = ctx;
	double inv = 1.0 / mm->nactive;

	c->decisions++;
	policy_decision_clear(&c->a);
	policy_decision_clear(&c->b);
	assert_int_equal(policy_decide(c->sinc, mm, now_ns, &c->a), 0);
	assert_int_equal(policy_decide(c->wsrjf, mm, now_ns, &c->b), 0);
	assert_int_equal(d->norder, c->a.norder);
	assert_int_equal(d->norder, c->b.norder);
	for (uint32_t q = 0; q < c->a.norder; q++) {
		c->score[c->a.order[q]] = q * inv;
		c->place[c->a.order[q]] = q;
	}
	for (uint32_t q = 0; q < c->b.norder; q++)
		c->score[c->b.order[q]] += 2 * q * inv;
	/* the order is by score, ties by sincronia's place */
	for (uint32_t q = 0; q + 1 < d->norder; q++) {
		uint32_t x = d->order[q], y = d->order[q + 1];

		assert_true(c->score[x] <= c->score[y]);
		if (c->score[x] == c->score[y])
			assert_true(c->place[x] < c->place[y]);
	}
	/* strict priority in that order: no rates of its own */
	assert_false(d->has_rates);
	if (d->norder > 2)
		c->checked++;
}

static void test_every_decision_is_the_vote(void **state)
{
	struct loom_err err = {{0}};
	struct policy_params pp = {.classes = 8, .seed = 1};
	struct vote_check c = {0};
	struct sim_opts so;

	(void)state;
	c.sinc = policy_new("sincronia", &pp, m, &err);
	c.wsrjf = policy_new("wsrjf", &pp, m, &err);
	assert_non_null(c.sinc);
	assert_non_null(c.wsrjf);
	assert_int_equal(policy_decision_init(&c.a, m), 0);
	assert_int_equal(policy_decision_init(&c.b, m), 0);
	c.score = calloc(m->ncoflows, sizeof(*c.score));
	c.place = calloc(m->ncoflows, sizeof(*c.place));
	assert_non_null(c.score);
	assert_non_null(c.place);
	sim_opts_default(&so);
	so.check = true;
	so.on_decision = check_vote;
	so.decision_ctx = &c;
	run("blend:sincronia=1:wsrjf=2:sebf=0:lcf=0", &so);
	print_message("%u decisions, %u with more than two coflows\n", c.decisions, c.checked);
	assert_true(c.checked > 10);
	free(c.score);
	free(c.place);
	policy_decision_done(&c.a);
	policy_decision_done(&c.b);
	policy_free(c.sinc);
	policy_free(c.wsrjf);
}

/* A blend of one heuristic is that heuristic, decision by decision and in the end. */
static void test_one_heuristic_is_itself(void **state)
{
	static const char *const pairs[][2] = {
		{"blend:wsrjf=0:sebf=0:lcf=0", "sincronia"},
		{"blend:sincronia=0:wsrjf=0:sebf=1:lcf=0:rates=madd", "sebf"},
		{"blend:sincronia=0:sebf=0:lcf=0:rates=madd", "wsrjf"},
	};
	struct sim_opts so;

	(void)state;
	sim_opts_default(&so);
	so.check = true;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		double got = run(pairs[i][0], &so), want = run(pairs[i][1], &so);

		print_message("%s %.6g, %s %.6g\n", pairs[i][0], got, pairs[i][1], want);
		assert_true(got > 0);
		assert_true(got == want);
	}
	/* and the default blend is not sincronia's run */
	assert_true(run("blend", &so) != run("sincronia", &so));
}

static void test_all_weights_zero_refused(void **state)
{
	struct loom_err err = {{0}};
	struct policy_params pp = {.classes = 8, .seed = 1};
	struct policy *p =
		policy_new("blend:sincronia=0:wsrjf=0:sebf=0:srjf=0:lcf=0", &pp, m, &err);

	(void)state;
	assert_null(p);
	assert_non_null(strstr(err.msg, "every weight is 0"));
	p = policy_new("blend:sebf=-1", &pp, m, &err);
	assert_null(p);
	assert_non_null(strstr(err.msg, "sebf"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_decision_is_the_vote),
		cmocka_unit_test(test_one_heuristic_is_itself),
		cmocka_unit_test(test_all_weights_zero_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
