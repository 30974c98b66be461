/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The best priority order of a small workload (loom-replay --bound order;
 * docs/bounds.md): every permutation of its coflows served as one fixed
 * priority order with MADD rates and backfill (how fifo and sebf serve their
 * orders), each through the real engine (sim_run(), ideal mode), and the
 * smallest average weighted JCT and average CCT any of them reaches.
 *
 * Exhaustive rather than branch and bound: a prefix of an order does not fix
 * its coflows' completions in this engine (a lower coflow's arrival or
 * departure is a decision, where MADD re-paces the higher ones), so no
 * prefix bound is valid and every order is simulated. Permutations in
 * lexicographic order, so of several best orders the smallest permutation
 * is kept.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "controlplane/sim/sim.h"

struct fixed_order {
	const uint32_t *rank; /* coflow -> position in the order */
	double *free_bps, *port_load;
};

static int cmp_rank(const void *a, const void *b, void *ctx)
{
	const uint32_t *rank = ctx;
	uint32_t x = rank[*(const uint32_t *)a], y = rank[*(const uint32_t *)b];

	return x < y ? -1 : x > y;
}

static int fixed_decide(struct policy *p, const struct cp_model *m, uint64_t now_ns,
			struct policy_decision *d)
{
	struct fixed_order *fo = p->priv;

	(void)now_ns;
	memcpy(d->order, m->active, m->nactive * sizeof(*d->order));
	d->norder = m->nactive;
	qsort_r(d->order, d->norder, sizeof(*d->order), cmp_rank, (void *)fo->rank);
	policy_madd(m, d->order, d->norder, fo->free_bps, fo->port_load, d->rate_bps);
	d->has_rates = true;
	return 0;
}

/* Not registered: it exists only for this search (its order comes from here). */
static const struct policy_class fixed_order_class = {
	.name = "(order)",
	.summary = "a fixed priority order with MADD rates",
	.clairvoyant = true,
	.decide = fixed_decide,
};

/* The next permutation of a[0 .. n) in lexicographic order; false after the last. */
static bool next_permutation(uint32_t *a, uint32_t n)
{
	uint32_t i, j, t;

	if (n < 2)
		return false;
	i = n - 1;
	while (i > 0 && a[i - 1] >= a[i])
		i--;
	if (i == 0)
		return false;
	j = n - 1;
	while (a[j] <= a[i - 1])
		j--;
	t = a[i - 1];
	a[i - 1] = a[j];
	a[j] = t;
	for (uint32_t lo = i, hi = n - 1; lo < hi; lo++, hi--) {
		t = a[lo];
		a[lo] = a[hi];
		a[hi] = t;
	}
	return true;
}

/* Average weighted JCT and average CCT of m's finished run. */
static void run_costs(const struct cp_model *m, double *ret_wjct, double *ret_cct)
{
	double w = 0, c = 0;

	for (uint32_t j = 0; j < m->njobs; j++)
		w += m->jobs[j].weight * (double)(m->jobs[j].finish_ns - m->jobs[j].arrival_ns);
	for (uint32_t k = 0; k < m->ncoflows; k++)
		c += (double)(m->coflows[k].finish_ns - m->coflows[k].release_ns);
	*ret_wjct = w / m->njobs * 1e-9;
	*ret_cct = c / m->ncoflows * 1e-9;
}

void sim_order_opts_default(struct sim_order_opts *o)
{
	*o = (struct sim_order_opts){.max_coflows = SIM_ORDER_MAX_COFLOWS};
}

int sim_bound_order(struct cp_model *m, const struct sim_order_opts *o,
		    struct sim_order_result *ret, struct loom_err *err)
{
	const struct loom_clock *clock = loom_clock_real();
	uint64_t t0 = loom_clock_now_ns(clock);
	struct sim_order_opts def;
	struct fixed_order fo = {0};
	struct policy p = {.cls = &fixed_order_class};
	struct sim_opts so;
	uint32_t *perm = NULL, *rank = NULL, n;
	int r = 0;

	if (!o) {
		sim_order_opts_default(&def);
		o = &def;
	}
	*ret = (struct sim_order_result){.avg_wjct_s = INFINITY, .avg_cct_s = INFINITY};
	if (!m || !m->topo || m->njobs == 0)
		return loom_err_set(err, EINVAL, "the model is not bound or has no jobs");
	n = m->ncoflows;
	if (n > o->max_coflows)
		return loom_err_set(
			err, E2BIG,
			"%u coflows is over the %u whose orders are searched (%u! runs)", n,
			o->max_coflows, o->max_coflows);
	perm = calloc(n + 1, sizeof(*perm));
	rank = calloc(n + 1, sizeof(*rank));
	fo.free_bps = calloc((size_t)m->topo->nports + 1, sizeof(double));
	fo.port_load = calloc((size_t)m->topo->nports + 1, sizeof(double));
	ret->best_wjct_order = calloc(n + 1, sizeof(uint32_t));
	ret->best_cct_order = calloc(n + 1, sizeof(uint32_t));
	if (!perm || !rank || !fo.free_bps || !fo.port_load || !ret->best_wjct_order ||
	    !ret->best_cct_order) {
		r = loom_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	fo.rank = rank;
	p.priv = &fo;
	p.params.classes = 8;
	sim_opts_default(&so);
	for (uint32_t i = 0; i < n; i++)
		perm[i] = i;
	do {
		double wjct, cct;

		for (uint32_t i = 0; i < n; i++)
			rank[perm[i]] = i;
		r = sim_run(m, &p, &so, NULL, err);
		if (r < 0)
			goto out;
		ret->orders++;
		run_costs(m, &wjct, &cct);
		if (wjct < ret->avg_wjct_s) {
			ret->avg_wjct_s = wjct;
			memcpy(ret->best_wjct_order, perm, n * sizeof(*perm));
		}
		if (cct < ret->avg_cct_s) {
			ret->avg_cct_s = cct;
			memcpy(ret->best_cct_order, perm, n * sizeof(*perm));
		}
	} while (next_permutation(perm, n));
	ret->n = n;
out:
	ret->solve_s = (double)(loom_clock_now_ns(clock) - t0) * 1e-9;
	free(perm);
	free(rank);
	free(fo.free_bps);
	free(fo.port_load);
	if (r < 0)
		sim_order_result_done(ret);
	return r;
}

void sim_order_result_done(struct sim_order_result *r)
{
	free(r->best_wjct_order);
	free(r->best_cct_order);
	r->best_wjct_order = NULL;
	r->best_cct_order = NULL;
}
