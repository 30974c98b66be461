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

/* Whether flow fl still has bytes and free capacity on every port it crosses. */
static inline bool fill_open(const struct topo *t, const struct cp_flow *fl, const double *free_bps)
{
	if (!(fl->remaining_bytes > 0))
		return false;
	for (uint32_t q = 0; q < fl->nports; q++) {
		uint32_t p = fl->ports[q];

		if (free_bps[p] <= MADD_FREE_EPS * (double)t->port_bps[p])
			return false;
	}
	return true;
}

/*
 * One equal-share round for the flows of cf: each open flow gets
 * the smallest, over its ports, of the port's free capacity divided by the
 * open flows of cf there. No port is oversubscribed (a port's flows each take
 * at most its share), and the port with the smallest share saturates.
 * Returns whether any flow was open. port_load: all zero in and out (a count,
 * then the share stored negated, so that each port converts once).
 */
static bool fill_round(const struct topo *t, const struct cp_model *m, const struct cp_coflow *cf,
		       double *free_bps, double *port_load, double *rate_bps)
{
	const uint32_t *slot = &m->flow_slot[cf->first_flow];
	bool any = false;

	for (uint32_t k = 0; k < cf->flows_left; k++) {
		const struct cp_flow *fl = &m->flows[slot[k]];

		if (!fill_open(t, fl, free_bps))
			continue;
		any = true;
		for (uint32_t q = 0; q < fl->nports; q++)
			port_load[fl->ports[q]] += 1;
	}
	if (!any)
		return false;
	for (uint32_t k = 0; k < cf->flows_left; k++) {
		const struct cp_flow *fl = &m->flows[slot[k]];

		for (uint32_t q = 0; q < fl->nports; q++) {
			uint32_t p = fl->ports[q];

			if (port_load[p] > 0)
				port_load[p] = -(free_bps[p] / port_load[p]);
		}
	}
	/*
	 * A flow is open iff every port it crosses was counted: a closed flow
	 * has a saturated port, which no open flow crosses.
	 */
	for (uint32_t k = 0; k < cf->flows_left; k++) {
		const struct cp_flow *fl = &m->flows[slot[k]];
		double r = INFINITY;

		if (!(fl->remaining_bytes > 0))
			continue;
		for (uint32_t q = 0; q < fl->nports; q++) {
			double share = -port_load[fl->ports[q]];

			if (!(share > 0)) {
				r = 0;
				break;
			}
			if (share < r)
				r = share;
		}
		if (!(r > 0) || !isfinite(r))
			continue;
		rate_bps[slot[k]] += r;
		for (uint32_t q = 0; q < fl->nports; q++) {
			uint32_t p = fl->ports[q];

			free_bps[p] -= r;
			if (free_bps[p] < 0)
				free_bps[p] = 0;
		}
	}
	for (uint32_t k = 0; k < cf->flows_left; k++) {
		const struct cp_flow *fl = &m->flows[slot[k]];

		for (uint32_t q = 0; q < fl->nports; q++)
			port_load[fl->ports[q]] = 0;
	}
	return true;
}

void policy_madd_fill(const struct cp_model *m, const uint32_t *order, uint32_t n, double *free_bps,
		      double *port_load, double *rate_bps)
{
	const struct topo *t = m->topo;

	policy_madd(m, order, n, free_bps, port_load, rate_bps);
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t round = 0; round < POLICY_FILL_ROUNDS; round++)
			if (!fill_round(t, m, &m->coflows[order[i]], free_bps, port_load, rate_bps))
				break;
}
