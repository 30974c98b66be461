/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom_coflowsim_ablate: what each of CoflowSim's conventions does to the
 * average CCT of a coflow-benchmark trace (default: the bundled FB2010), for
 * the seven algorithms of loom-replay --compat coflowsim. Each row changes
 * one setting of the CoflowSim-exact engine (struct sim_cfs_opts) away from
 * CoflowSim's and prints every algorithm's average CCT in seconds:
 *
 *   coflowsim        CoflowSim's settings: 10240-ms epochs, 8-ms quanta
 *   epoch=8          admissions every 8 ms: a coflow starts at most 8 ms early
 *   rerate=flow      rates re-decided on every flow completion as well
 *   both             the two together
 *
 * (The 8-ms quantum itself rounds each finish up by 4 ms on average, under
 * 0.02% of FB2010's average CCTs; a 1-ms quantum costs 8x the time.)
 *
 * The remaining differences from loom-replay's default mode (order keys fixed
 * at admission, CoflowSim's MADD/fair-share/backfill, FAIR and DARK rules,
 * the port rate) are what separates the last row from the default mode's
 * figures (docs/simulator.md). Usage: loom_coflowsim_ablate [TRACE [ROW...]]
 * (rows by name, e.g. epoch=8; default all), one row at a time on one core:
 * about 3-4 minutes a row on FB2010 (2-core VM), so run rows side by side.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/sim/sim.h"

struct config {
	const char *name;
	uint32_t epoch_ms, quantum_ms;
	bool rerate;
};

static const struct config configs[] = {
	{"coflowsim", SIM_CFS_EPOCH_MS, SIM_CFS_QUANTUM_MS, false},
	{"epoch=8", 8, 8, false},
	{"rerate=flow", SIM_CFS_EPOCH_MS, SIM_CFS_QUANTUM_MS, true},
	{"both", 8, SIM_CFS_QUANTUM_MS, true},
};

#define NCONFIGS (sizeof(configs) / sizeof(configs[0]))
#define NALGOS   (SIM_CFS_DARK + 1)

/* Average CCT in seconds of algo under c, on a fresh load of path; < 0 on error. */
static double run(const char *path, const struct config *c, enum sim_cfs_algo algo)
{
	struct sim_cfs_opts o = {.epoch_ms = c->epoch_ms,
				 .quantum_ms = c->quantum_ms,
				 .rerate_on_flow_done = c->rerate};
	struct loom_err err = {{0}};
	struct cp_model *m;
	struct topo *t = NULL;
	uint32_t nhosts = 0;
	double sum = 0;

	m = sim_trace_load(path, SIM_TRACE_FB_COFLOWSIM, &nhosts, &err);
	if (!m || !(t = topo_new_bigswitch(nhosts, SIM_CFS_RATE_BPS)) || cp_model_bind(m, t) < 0 ||
	    sim_coflowsim_prepare(m, &o, &err) < 0 ||
	    sim_coflowsim_run(m, algo, &o, NULL, &err) < 0) {
		fprintf(stderr, "loom_coflowsim_ablate: %s %s: %s\n", c->name,
			sim_cfs_algo_name(algo), err.msg[0] ? err.msg : "cannot set up");
		cp_model_free(m);
		topo_free(t);
		return -1;
	}
	for (uint32_t i = 0; i < m->ncoflows; i++)
		sum += (double)(m->coflows[i].finish_ns - m->coflows[i].release_ns) * 1e-9;
	sum /= m->ncoflows;
	cp_model_free(m);
	topo_free(t);
	return sum;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "data/fb2010/FB2010-1Hr-150-0.txt";

	if (argc > 1 && argv[1][0] == '-') {
		fprintf(stderr, "usage: loom_coflowsim_ablate [TRACE [ROW...]]\n");
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		bool known = false;

		for (size_t k = 0; k < NCONFIGS; k++)
			known |= strcmp(argv[i], configs[k].name) == 0;
		if (!known) {
			fprintf(stderr, "loom_coflowsim_ablate: no row '%s'\n", argv[i]);
			return 2;
		}
	}
	printf("%-12s", "setting");
	for (int a = 0; a < NALGOS; a++)
		printf(" %8s", sim_cfs_algo_name((enum sim_cfs_algo)a));
	printf("\n");
	for (size_t k = 0; k < NCONFIGS; k++) {
		bool wanted = argc <= 2;

		for (int i = 2; i < argc; i++)
			wanted |= strcmp(argv[i], configs[k].name) == 0;
		if (!wanted)
			continue;
		printf("%-12s", configs[k].name);
		for (int a = 0; a < NALGOS; a++) {
			double v = run(path, &configs[k], (enum sim_cfs_algo)a);

			if (v < 0)
				return 1;
			printf(" %7.3fs", v);
			fflush(stdout);
		}
		printf("\n");
	}
	return 0;
}
