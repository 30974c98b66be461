/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MADD, minimum allocation for desired duration (Chowdhury, Zhong, Stoica,
 * "Efficient Coflow Scheduling with Varys", SIGCOMM 2014, Pseudocode 1).
 */
#include "controlplane/policy/policy.h"

#include <math.h>

/* Capacity below this fraction of a port's rate counts as none (float residue). */
#define MADD_FREE_EPS 1e-9

void policy_madd(const struct cp_model *m, const uint32_t *order, uint32_t n, double *free_bps,
		 double *port_load, double *rate_bps)
{
	const struct topo *t = m->topo;

	for (uint32_t p = 0; p < t->nports; p++)
		free_bps[p] = (double)t->port_bps[p];
	for (uint32_t i = 0; i < n; i++) {
		const struct cp_coflow *cf = &m->coflows[order[i]];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];
		double gamma_s = 0; /* time to finish at the bottleneck, in seconds */
		bool blocked = false;

		for (uint32_t k = 0; k < cf->flows_left; k++) {
			const struct cp_flow *fl = &m->flows[slot[k]];

			for (uint32_t q = 0; q < fl->nports; q++)
				port_load[fl->ports[q]] += fl->remaining_bytes;
		}
		for (uint32_t k = 0; k < cf->flows_left; k++) {
			const struct cp_flow *fl = &m->flows[slot[k]];

			for (uint32_t q = 0; q < fl->nports; q++) {
				uint32_t p = fl->ports[q];
				double load = port_load[p];

				if (load <= 0)
					continue;
				if (free_bps[p] <= MADD_FREE_EPS * (double)t->port_bps[p])
					blocked = true;
				else if (load * 8.0 / free_bps[p] > gamma_s)
					gamma_s = load * 8.0 / free_bps[p];
			}
		}
		for (uint32_t k = 0; k < cf->flows_left; k++) {
			const struct cp_flow *fl = &m->flows[slot[k]];
			double r = 0;

			if (!blocked && gamma_s > 0)
				r = fl->remaining_bytes * 8.0 / gamma_s;
			rate_bps[slot[k]] = r;
			for (uint32_t q = 0; q < fl->nports; q++) {
				uint32_t p = fl->ports[q];

				port_load[p] = 0;
				free_bps[p] -= r;
				if (free_bps[p] < 0)
					free_bps[p] = 0;
			}
		}
	}
}
