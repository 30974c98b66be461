/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test helper of the policy unit tests: whether a decision's rates are
 * policy_madd_fill()'s kind of rates for its order, checked against
 * policy_madd() on the same order.
 */
#ifndef LOOM_TESTS_UNIT_POLICY_FILL_CHECK_H
#define LOOM_TESTS_UNIT_POLICY_FILL_CHECK_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "controlplane/policy/policy.h"

/*
 * Whether rate (per flow) over order[0 .. n) is filled MADD: no flow of the
 * order below its MADD rate, no port over its capacity, and every flow of
 * the order with bytes left crossing a full port (nothing could take more
 * without taking it from another). *ret_madd: whether it is MADD's exactly,
 * bit for bit.
 */
static inline bool fill_check(const struct cp_model *m, const uint32_t *order, uint32_t n,
			      const double *rate, bool *ret_madd)
{
	const struct topo *t = m->topo;
	double *free_bps = calloc(t->nports, sizeof(*free_bps));
	double *load = calloc(t->nports, sizeof(*load));
	double *used = calloc(t->nports, sizeof(*used));
	double *madd = calloc(m->nflows ? m->nflows : 1, sizeof(*madd));
	bool filled = true, same = true;

	assert_true(free_bps && load && used && madd);
	policy_madd(m, order, n, free_bps, load, madd);
	for (uint32_t i = 0; i < n; i++) {
		const struct cp_coflow *cf = &m->coflows[order[i]];

		for (uint32_t k = 0; k < cf->flows_left; k++) {
			uint32_t f = m->flow_slot[cf->first_flow + k];

			same = same && rate[f] == madd[f];
			filled = filled && rate[f] >= madd[f];
			for (uint32_t q = 0; q < m->flows[f].nports; q++)
				used[m->flows[f].ports[q]] += rate[f];
		}
	}
	for (uint32_t p = 0; p < t->nports; p++)
		filled = filled && used[p] <= (double)t->port_bps[p] * (1 + 1e-9);
	for (uint32_t i = 0; i < n; i++) {
		const struct cp_coflow *cf = &m->coflows[order[i]];

		for (uint32_t k = 0; k < cf->flows_left; k++) {
			const struct cp_flow *fl = &m->flows[m->flow_slot[cf->first_flow + k]];
			bool full = !(fl->remaining_bytes > 0);

			for (uint32_t q = 0; q < fl->nports; q++)
				full = full ||
				       used[fl->ports[q]] >=
					       (double)t->port_bps[fl->ports[q]] * (1 - 1e-9);
			filled = filled && full;
		}
	}
	free(free_bps);
	free(load);
	free(used);
	free(madd);
	if (ret_madd)
		*ret_madd = same;
	return filled;
}

#endif
