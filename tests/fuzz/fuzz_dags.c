/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the dags.txt reader (DAG shapes for loom-gen). Any input must
 * either parse into DAGs whose edges are in range and acyclic-checked, or be
 * rejected with a "name:line: reason" message; never crash or leak.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/sim/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct loom_err err = {{0}};
	struct sim_dags *d = sim_dags_parse((const char *)data, size, "fuzz", &err);

	if (!d) {
		if (strncmp(err.msg, "fuzz:", 5) != 0)
			abort();
		return 0;
	}
	if (d->n == 0)
		abort();
	for (uint32_t i = 0; i < d->n; i++) {
		const struct sim_dag *g = &d->dags[i];

		if (g->nnodes == 0 || strlen(g->label) >= sizeof(g->label))
			abort();
		for (uint32_t e = 0; e < g->nedges; e++)
			if (g->edges[e][0] >= g->nnodes || g->edges[e][1] >= g->nnodes ||
			    g->edges[e][0] == g->edges[e][1])
				abort();
		for (uint32_t v = 0; v < g->nnodes; v++)
			if (g->ntasks[v] == 0 || !(g->mean_task_ms[v] >= 0))
				abort();
	}
	sim_dags_free(d);
	return 0;
}
