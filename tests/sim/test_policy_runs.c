/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every registered policy (and the non-default options) replays a generated
 * multi-stage workload (TPC-H shapes, FB2010-sampled coflows, weights 1..4,
 * load 0.9) in both fabric modes with the simulator's capacity checks on,
 * and the outcome obeys the lower bounds: no coflow beats its isolation time
 * and no job its critical-path isolation time, every job finishes, no port
 * is ever over capacity.
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
#include "tests/gen_fixture.h"

struct fixture {
	struct topo *t;
	struct cp_model *m;
	uint64_t *iso_ns;    /* per coflow */
	uint64_t *job_cp_ns; /* per job */
};

static int setup(void **state)
{
	static struct fixture fx;
	struct loom_err err = {{0}};
	struct sim_gen_params gp;
	double *scratch;

	fx.t = topo_new_bigswitch(150, 1073741824ULL);
	if (!fx.t)
		return -1;
	sim_gen_params_default(&gp);
	gp.njobs = 8;
	gp.load = 0.9;
	gp.seed = 7;
	gp.bytes_scale = 0.01;
	gp.weight_max = 4;
	gp.compute_scale = 0; /* no compute gaps: the jobs contend for the network */
	fx.m = test_gen_workload(&gp, fx.t, &err);
	if (!fx.m) {
		print_error("setup: %s\n", err.msg);
		return -1;
	}
	fx.iso_ns = calloc(fx.m->ncoflows, sizeof(*fx.iso_ns));
	fx.job_cp_ns = calloc(fx.m->njobs, sizeof(*fx.job_cp_ns));
	scratch = calloc(fx.t->nports, sizeof(*scratch));
	if (!fx.iso_ns || !fx.job_cp_ns || !scratch ||
	    cp_job_critical_paths_ns(fx.m, fx.job_cp_ns) < 0)
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

	free(fx->iso_ns);
	free(fx->job_cp_ns);
	cp_model_free(fx->m);
	topo_free(fx->t);
	return 0;
}

/* Runs spec in mode and checks the bounds. */
static void run_checked(struct fixture *fx, const char *spec, enum sim_mode mode)
{
	struct cp_model *m = fx->m;
	struct loom_err err = {{0}};
	struct sim_opts o;
	struct sim_stats st;
	struct sim_summary s;
	struct policy_params pp = {.classes = 8, .seed = 1};
	struct policy *p = policy_new(spec, &pp, m, &err);

	if (!p)
		fail_msg("%s: %s", spec, err.msg);
	sim_opts_default(&o);
	o.mode = mode;
	o.check = true;
	if (sim_run(m, p, &o, &st, &err) < 0)
		fail_msg("%s (%s): %s", spec, mode == SIM_MODE_IDEAL ? "ideal" : "classes",
			 err.msg);
	if (m->jobs_done != m->njobs)
		fail_msg("%s: %u of %u jobs done", spec, m->jobs_done, m->njobs);
	if (st.max_port_load > 1 + 1e-9)
		fail_msg("%s: a port ran at %.12g of its capacity", spec, st.max_port_load);
	for (uint32_t c = 0; c < m->ncoflows; c++) {
		const struct cp_coflow *cf = &m->coflows[c];

		/* Completions round up to whole nanoseconds: one ns of slack per flow. */
		if (cf->finish_ns - cf->release_ns + 1 < fx->iso_ns[c])
			fail_msg("%s: coflow %llu took %llu ns, under its isolation time %llu",
				 spec, (unsigned long long)cf->ext_id,
				 (unsigned long long)(cf->finish_ns - cf->release_ns),
				 (unsigned long long)fx->iso_ns[c]);
	}
	for (uint32_t j = 0; j < m->njobs; j++) {
		const struct cp_job *jb = &m->jobs[j];

		if (jb->finish_ns - jb->arrival_ns + jb->ncoflows < fx->job_cp_ns[j])
			fail_msg("%s: job %llu took %llu ns, under its critical path %llu", spec,
				 (unsigned long long)jb->ext_id,
				 (unsigned long long)(jb->finish_ns - jb->arrival_ns),
				 (unsigned long long)fx->job_cp_ns[j]);
	}
	assert_int_equal(sim_summarise(m, &st, spec, &s), 0);
	assert_true(s.avg_jct_slowdown >= 1 - 1e-6);
	assert_true(s.avg_cct_slowdown >= 1 - 1e-6);
	policy_free(p);
}

static void test_every_policy(void **state)
{
	struct fixture *fx = *state;
	size_t n;
	const struct policy_class *const *list = policy_class_list(&n);

	for (size_t i = 0; i < n; i++) {
		run_checked(fx, list[i]->name, SIM_MODE_IDEAL);
		run_checked(fx, list[i]->name, SIM_MODE_CLASSES);
	}
}

static void test_options(void **state)
{
	static const char *const specs[] = {
		"dclas:sharing=weighted", "dclas:within=fair:queues=4", "dclas-job:first=1M",
		"sincronia:rates=greedy", "sincronia:weights=unit",
	};
	struct fixture *fx = *state;

	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		run_checked(fx, specs[i], SIM_MODE_IDEAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_policy),
		cmocka_unit_test(test_options),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
