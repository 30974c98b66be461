/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the coflow-benchmark (FB2010) trace reader (see fuzz_trace.h),
 * in both of its sizings (Loom's and CoflowSim's, SIM_TRACE_FB_COFLOWSIM);
 * a small trace that parses also runs through the CoflowSim-exact mode under
 * every algorithm, which must finish it or refuse it with a reason.
 */
#include <errno.h>

#include "tests/fuzz/fuzz_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Small enough that stepping 8-ms quanta until every flow is done stays cheap. */
#define COFLOWSIM_MAX_FLOWS 64
#define COFLOWSIM_MAX_BYTES (256ULL << 20)

static void fuzz_coflowsim(const uint8_t *data, size_t size)
{
	struct loom_err err = {{0}};
	struct cp_model *m;
	struct topo *t;
	uint32_t nhosts = 0;

	m = sim_trace_parse((const char *)data, size, "fuzz", SIM_TRACE_FB_COFLOWSIM, &nhosts,
			    &err);
	if (!m)
		return;
	uint64_t bytes = 0;

	for (uint32_t c = 0; c < m->ncoflows; c++)
		bytes += m->coflows[c].total_bytes;
	t = topo_new_bigswitch(nhosts, SIM_CFS_RATE_BPS);
	if (m->nflows <= COFLOWSIM_MAX_FLOWS && bytes <= COFLOWSIM_MAX_BYTES && t &&
	    cp_model_bind(m, t) == 0 && sim_coflowsim_prepare(m, NULL, &err) == 0) {
		for (int a = SIM_CFS_FAIR; a <= SIM_CFS_DARK; a++) {
			int r = sim_coflowsim_run(m, (enum sim_cfs_algo)a, NULL, NULL, &err);

			if (r < 0 && r != -EDEADLK)
				abort(); /* only CoflowSim's end of time may stop a prepared run */
			for (uint32_t c = 0; r == 0 && c < m->ncoflows; c++)
				if (m->coflows[c].state != CP_COFLOW_DONE ||
				    m->coflows[c].finish_ns < m->coflows[c].release_ns)
					abort();
		}
	}
	topo_free(t);
	cp_model_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_trace_one(data, size, SIM_TRACE_FB_COFLOWSIM);
	fuzz_coflowsim(data, size);
	return fuzz_trace_one(data, size, SIM_TRACE_FB);
}
