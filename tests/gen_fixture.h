/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test helper: a generated multi-stage workload (loom-gen's generator on the
 * bundled TPC-H shapes and FB2010 trace, found under $LOOM_SRCDIR), bound to
 * its fabric. Shared by the tests that replay such a workload.
 */
#ifndef LOOM_TESTS_GEN_FIXTURE_H
#define LOOM_TESTS_GEN_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

#include "controlplane/sim/sim.h"

/* $LOOM_SRCDIR/rel (or ./rel) into buf. */
static inline void test_src_path(char *buf, size_t size, const char *rel)
{
	const char *root = getenv("LOOM_SRCDIR");

	snprintf(buf, size, "%s/%s", root ? root : ".", rel);
}

/* Generates gp's workload on t and binds it; NULL with err filled on failure. */
static inline struct cp_model *test_gen_workload(const struct sim_gen_params *gp,
						 const struct topo *t, struct loom_err *err)
{
	struct sim_dags *dags;
	struct cp_model *fb, *m = NULL;
	char path[4096];

	test_src_path(path, sizeof(path), "data/tpch/dags.txt");
	dags = sim_dags_load(path, err);
	test_src_path(path, sizeof(path), "data/fb2010/FB2010-1Hr-150-0.txt");
	fb = dags ? sim_trace_load(path, SIM_TRACE_FB, NULL, err) : NULL;
	if (dags && fb)
		m = sim_gen(gp, dags, fb, t, err);
	sim_dags_free(dags);
	cp_model_free(fb);
	if (m && cp_model_bind(m, t) < 0) {
		loom_err_set(err, EINVAL, "workload does not fit the fabric");
		m = cp_model_free(m);
	}
	return m;
}

#endif
