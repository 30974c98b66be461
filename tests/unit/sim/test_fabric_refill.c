/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The water-fill's incremental update (re-fill from the highest class that
 * lost a flow, per-port flow counts kept as flows finish, only the pairs
 * whose rate changed reported) gives what re-filling every class from
 * scratch and comparing every pair gives (sim_opts.full_refill), to the
 * nanosecond: every coflow's finish time, every job's, and the step and
 * event counts. Random generated workloads (several seeds) on a big switch
 * and on oversubscribed racks (three-port paths), each policy in classes
 * mode under every quantisation, and the order-only policies (water-filled
 * in ideal mode too) in ideal mode.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/sim/sim.h"
#include "tests/unit/gen_fixture.h"

struct outcome {
	uint64_t *cf_finish; /* per coflow */
	uint64_t *job_finish;
	struct sim_stats st;
};

static void run(struct cp_model *m, const char *spec, const struct sim_opts *o, struct outcome *out)
{
	struct loom_err err = {{0}};
	struct policy_params pp = {.classes = o->classes, .seed = 1};
	struct policy *p = policy_new(spec, &pp, m, &err);

	if (!p)
		fail_msg("%s: %s", spec, err.msg);
	if (sim_run(m, p, o, &out->st, &err) < 0)
		fail_msg("%s: %s", spec, err.msg);
	out->cf_finish = calloc(m->ncoflows, sizeof(*out->cf_finish));
	out->job_finish = calloc(m->njobs, sizeof(*out->job_finish));
	assert_non_null(out->cf_finish);
	assert_non_null(out->job_finish);
	for (uint32_t c = 0; c < m->ncoflows; c++)
		out->cf_finish[c] = m->coflows[c].finish_ns;
	for (uint32_t j = 0; j < m->njobs; j++)
		out->job_finish[j] = m->jobs[j].finish_ns;
	policy_free(p);
}

/* Runs spec incrementally and from scratch; every figure must match. */
static void compare(struct cp_model *m, const char *what, const char *spec, enum sim_mode mode,
		    enum sim_quantize q)
{
	struct sim_opts o;
	struct outcome inc, ref;

	sim_opts_default(&o);
	o.mode = mode;
	o.quantize = q;
	o.classes = 4; /* fewer classes than coflows in flight: classes hold several */
	run(m, spec, &o, &inc);
	o.full_refill = true;
	run(m, spec, &o, &ref);
	for (uint32_t c = 0; c < m->ncoflows; c++)
		if (inc.cf_finish[c] != ref.cf_finish[c])
			fail_msg(
				"%s, %s, %s/%s: coflow %u finished at %llu ns, from scratch %llu ns",
				what, spec, mode == SIM_MODE_IDEAL ? "ideal" : "classes",
				sim_quantize_name(q), c, (unsigned long long)inc.cf_finish[c],
				(unsigned long long)ref.cf_finish[c]);
	for (uint32_t j = 0; j < m->njobs; j++)
		assert_int_equal(inc.job_finish[j], ref.job_finish[j]);
	assert_int_equal(inc.st.steps, ref.st.steps);
	assert_int_equal(inc.st.events, ref.st.events);
	assert_int_equal(inc.st.decisions, ref.st.decisions);
	/* the runs did complete flows one by one: updates happened */
	assert_true(inc.st.steps > inc.st.decisions);
	free(inc.cf_finish);
	free(inc.job_finish);
	free(ref.cf_finish);
	free(ref.job_finish);
}

static void check_fabric(struct topo *t, const char *what)
{
	static const char *const classed[] = {"fifo", "fair", "sebf", "sincronia", "dclas"};
	static const enum sim_quantize quants[] = {SIM_QUANT_CONFLICT, SIM_QUANT_PER_HOST,
						   SIM_QUANT_TOP, SIM_QUANT_EVEN};
	static const char *const order_only[] = {"sincronia", "dclas", "fair"};

	assert_non_null(t);
	for (uint64_t seed = 1; seed <= 3; seed++) {
		struct loom_err err = {{0}};
		struct sim_gen_params gp;
		struct cp_model *m;
		char label[64];

		sim_gen_params_default(&gp);
		gp.njobs = 6;
		gp.load = 0.9;
		gp.seed = seed;
		gp.bytes_scale = 0.005;
		gp.weight_max = 3;
		gp.compute_scale = 0;
		m = test_gen_workload(&gp, t, &err);
		if (!m)
			fail_msg("%s seed %llu: %s", what, (unsigned long long)seed, err.msg);
		snprintf(label, sizeof(label), "%s seed %llu", what, (unsigned long long)seed);
		for (size_t i = 0; i < sizeof(classed) / sizeof(classed[0]); i++)
			for (size_t k = 0; k < sizeof(quants) / sizeof(quants[0]); k++)
				compare(m, label, classed[i], SIM_MODE_CLASSES, quants[k]);
		for (size_t i = 0; i < sizeof(order_only) / sizeof(order_only[0]); i++)
			compare(m, label, order_only[i], SIM_MODE_IDEAL, SIM_QUANT_CONFLICT);
		cp_model_free(m);
	}
	topo_free(t);
}

static void test_bigswitch(void **state)
{
	(void)state;
	check_fabric(topo_new_bigswitch(40, 1073741824ULL), "big switch");
}

static void test_racks(void **state)
{
	(void)state;
	check_fabric(topo_new_racks(5, 8, 1073741824ULL, 2.0), "racks");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bigswitch),
		cmocka_unit_test(test_racks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
