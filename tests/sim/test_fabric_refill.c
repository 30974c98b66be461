/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The water-fill's incremental update (re-fill from the highest class that
 * lost a flow, per-port flow counts kept as flows finish, the zero prefix
 * kept as counts, each class's logged filling walked again with only the
 * ports that differ from the log filled live, only the pairs whose rate
 * changed reported) gives what re-filling every class from scratch as the
 * progressive filling reads (sim_opts.full_refill: no log, no zero prefix,
 * a scan of the class's ports at every step) and comparing every pair
 * gives, to the nanosecond: every coflow's finish time, every job's, and
 * the step and event counts. Random generated workloads (several seeds) on a big switch
 * and on oversubscribed racks (three-port paths), each policy in classes
 * mode under every quantisation, and the order-only policies (water-filled
 * in ideal mode too) in ideal mode. Then a workload made of ties: flows of
 * a few equal sizes released together, several per (src, dst), so that
 * ports share bottleneck shares exactly and flows finish at the same
 * nanosecond, with 2, 4 and 64 classes (64: every coflow a class of its
 * own), which takes the re-fill's replay through equal shares broken by
 * port order, through classes whose input did not change, and through
 * many classes below the one that lost flows. Then a workload whose first
 * coflows use whole ports, so that the classes below see ports with no
 * capacity at all, and see them come back: pairs enter and leave the zero
 * prefix, and logged steps are taken again with pairs frozen early and late,
 * under every policy that gives an order (the MADD-rate ones included).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/rng.h"
#include "controlplane/sim/sim.h"
#include "tests/gen_fixture.h"

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
static void compare_k(struct cp_model *m, const char *what, const char *spec, enum sim_mode mode,
		      enum sim_quantize q, uint32_t k)
{
	struct sim_opts o;
	struct outcome inc, ref;

	sim_opts_default(&o);
	o.mode = mode;
	o.quantize = q;
	o.classes = k;
	run(m, spec, &o, &inc);
	o.full_refill = true;
	run(m, spec, &o, &ref);
	for (uint32_t c = 0; c < m->ncoflows; c++)
		if (inc.cf_finish[c] != ref.cf_finish[c])
			fail_msg(
				"%s, %s, %s/%s/K%u: coflow %u finished at %llu ns, from scratch %llu ns",
				what, spec, mode == SIM_MODE_IDEAL ? "ideal" : "classes",
				sim_quantize_name(q), k, c, (unsigned long long)inc.cf_finish[c],
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

/* Fewer classes than coflows in flight: classes hold several. */
static void compare(struct cp_model *m, const char *what, const char *spec, enum sim_mode mode,
		    enum sim_quantize q)
{
	compare_k(m, what, spec, mode, q, 4);
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
		for (size_t i = 0; i < ARRAY_SIZE(classed); i++)
			for (size_t k = 0; k < ARRAY_SIZE(quants); k++)
				compare(m, label, classed[i], SIM_MODE_CLASSES, quants[k]);
		for (size_t i = 0; i < ARRAY_SIZE(order_only); i++)
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

/*
 * Every spec x quantisation x class count in classes mode on m (bound to t),
 * compared with the from-scratch filling.
 */
static void compare_grid(struct topo *t, struct cp_model *m, const char *what,
			 const char *const *specs, size_t nspecs, const enum sim_quantize *quants,
			 size_t nquants, const uint32_t *ks, size_t nks)
{
	assert_non_null(t);
	assert_int_equal(cp_model_bind(m, t), 0);
	for (size_t i = 0; i < nspecs; i++)
		for (size_t q = 0; q < nquants; q++)
			for (size_t k = 0; k < nks; k++)
				compare_k(m, what, specs[i], SIM_MODE_CLASSES, quants[q], ks[k]);
}

/*
 * 40 single-coflow jobs on 10 hosts, released in four bursts; each coflow
 * 1 to 6 flows of 1 or 2 MB (a third of them repeating the previous flow's
 * endpoints) from common/rng with a fixed seed.
 */
static struct cp_model *tie_workload(void)
{
	struct loom_err err = {{0}};
	struct cp_builder *b = cp_builder_new(10);
	struct loom_rng rng;
	uint64_t x;
	uint32_t src = 0, dst = 1;
	struct cp_model *m;

	assert_non_null(b);
	loom_rng_seed(&rng, 1);
	for (uint64_t c = 0; c < 40; c++) {
		uint32_t nf;

		x = loom_rng_u64(&rng);
		assert_int_equal(cp_builder_add_job(b, c, (c % 4) * 5000000ULL, 1, &err), 0);
		assert_int_equal(cp_builder_add_coflow(b, c, c, 0, &err), 0);
		nf = 1 + (uint32_t)(x % 6);
		for (uint32_t f = 0; f < nf; f++) {
			x = loom_rng_u64(&rng);
			if (x % 3) {
				src = (uint32_t)(x % 10);
				dst = (uint32_t)((src + 1 + (x >> 8) % 9) % 10);
			}
			assert_int_equal(cp_builder_add_flow(b, c, src, dst,
							     (1 + (x >> 20) % 2) * 1048576ULL,
							     &err),
					 0);
		}
	}
	m = cp_builder_finish(b, &err);
	if (!m)
		fail_msg("tie workload: %s", err.msg);
	return m;
}

static void test_ties(void **state)
{
	static const char *const classed[] = {"fifo", "fair", "sebf", "sincronia", "dclas"};
	static const enum sim_quantize quants[] = {SIM_QUANT_CONFLICT, SIM_QUANT_PER_HOST,
						   SIM_QUANT_TOP, SIM_QUANT_EVEN};
	static const uint32_t ks[] = {2, 4, 64};
	struct topo *t = topo_new_bigswitch(10, 1073741824ULL);
	struct cp_model *m = tie_workload();

	(void)state;
	compare_grid(t, m, "ties", classed, ARRAY_SIZE(classed), quants, ARRAY_SIZE(quants), ks,
		     ARRAY_SIZE(ks));
	compare_k(m, "ties", "sincronia", SIM_MODE_IDEAL, SIM_QUANT_CONFLICT, 4);
	compare_k(m, "ties", "fair", SIM_MODE_IDEAL, SIM_QUANT_CONFLICT, 4);
	cp_model_free(m);
	topo_free(t);
}

/*
 * 36 single-coflow jobs on 8 hosts in three bursts. Every sixth coflow is
 * one flow of 4 to 12 MB from host 0 or 1 to host 2 or 3 (a whole port each
 * while it is first); the others have 3 to 9 flows of 0.5 to 3 MB among all
 * hosts, a third repeating the previous flow's endpoints.
 */
static struct cp_model *saturating_workload(void)
{
	struct loom_err err = {{0}};
	struct cp_builder *b = cp_builder_new(8);
	struct loom_rng rng;
	uint64_t x;
	uint32_t src = 0, dst = 1;
	struct cp_model *m;

	assert_non_null(b);
	loom_rng_seed(&rng, 2);
	for (uint64_t c = 0; c < 36; c++) {
		uint32_t nf;

		x = loom_rng_u64(&rng);
		assert_int_equal(cp_builder_add_job(b, c, (c / 12) * 20000000ULL, 1, &err), 0);
		assert_int_equal(cp_builder_add_coflow(b, c, c, 0, &err), 0);
		if (c % 6 == 0) {
			assert_int_equal(cp_builder_add_flow(b, c, (uint32_t)(x % 2),
							     2 + (uint32_t)((x >> 4) % 2),
							     (4 + (x >> 8) % 9) * 1048576ULL, &err),
					 0);
			continue;
		}
		nf = 3 + (uint32_t)(x % 7);
		for (uint32_t f = 0; f < nf; f++) {
			x = loom_rng_u64(&rng);
			if (x % 3) {
				src = (uint32_t)(x % 8);
				dst = (uint32_t)((src + 1 + (x >> 8) % 7) % 8);
			}
			assert_int_equal(cp_builder_add_flow(b, c, src, dst,
							     (1 + (x >> 20) % 6) * 524288ULL, &err),
					 0);
		}
	}
	m = cp_builder_finish(b, &err);
	if (!m)
		fail_msg("saturating workload: %s", err.msg);
	return m;
}

/* The saturating workload under every order policy on t (freed). */
static void saturated_on(struct topo *t, const char *what)
{
	static const char *const ordered[] = {"fifo", "sebf", "scf",   "ncf",      "lcf",
					      "cpf",  "srjf", "wsrjf", "sincronia"};
	static const enum sim_quantize quants[] = {SIM_QUANT_CONFLICT, SIM_QUANT_PER_HOST};
	static const uint32_t ks[] = {3, 8};
	struct cp_model *m = saturating_workload();

	compare_grid(t, m, what, ordered, ARRAY_SIZE(ordered), quants, ARRAY_SIZE(quants), ks,
		     ARRAY_SIZE(ks));
	cp_model_free(m);
	topo_free(t);
}

/*
 * On a big switch (two ports per pair) and on two oversubscribed racks
 * (three-port paths: a pair entering the zero prefix through one port still
 * holds log records at two others).
 */
static void test_saturated(void **state)
{
	(void)state;
	saturated_on(topo_new_bigswitch(8, 1073741824ULL), "saturated");
	saturated_on(topo_new_racks(2, 4, 1073741824ULL, 2.0), "saturated racks");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bigswitch),
		cmocka_unit_test(test_racks),
		cmocka_unit_test(test_ties),
		cmocka_unit_test(test_saturated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
