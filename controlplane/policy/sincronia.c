/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sincronia: Bottleneck-Select-Scale-Iterate (BSSI) ordering with
 * order-preserving rates (Agarwal, Rajakrishnan, Narayan, Agarwal, Shmoys and
 * Vahdat, "Sincronia: Near-Optimal Network Design for Coflows", SIGCOMM 2018,
 * Algorithm 1 and §4).
 *
 * BSSI builds the order from the back. With C the unordered coflows, w_c
 * their weights and d_{c,p} their remaining bytes through port p:
 *   1. b = the most loaded port, argmax_p sum_{c in C} d_{c,p};
 *   2. the coflow placed last among C is argmin_{c : d_{c,b} > 0} w_c / d_{c,b}
 *      (the largest weight-scaled demand at b);
 *   3. every other c with demand at b has its weight scaled down by
 *      w_last * d_{c,b} / d_{last,b};
 *   4. remove it and iterate.
 * It is a 4-approximation of the total weighted CCT (offline, all coflows at
 * zero) and runs in O(n (P + n)) for n coflows on P ports. The order is
 * recomputed on every arrival and completion.
 *
 * Rates (§4: any order-preserving, work-conserving allocation): by default
 * the order is strict priority, each coflow a priority level of its own, as
 * the paper's implementation gets from the network's priority queues: a flow
 * takes whatever its ports have left after every flow of earlier coflows,
 * and takes it back from later ones the moment it can use it (the fabric
 * re-fills from the highest level that changed). `rates=greedy` computes the
 * same greedy allocation once per decision and hands it to the fabric as
 * rates; it is cheaper to simulate but between decisions a flow whose port
 * frees up cannot preempt a later coflow already holding its other port,
 * which on FB2010 costs small coflows dearly (bench/README.md).
 *
 * Weights: the job's weight (default) or 1 (`weights=unit`).
 */
#include "controlplane/policy/policy.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/policy/util.h"

enum {
	OPT_WEIGHTS,
	OPT_RATES
};

static const char *const weights_choices[] = {"job", "unit", NULL};
static const char *const rates_choices[] = {"priority", "greedy", NULL};

static const struct policy_opt_def sinc_opts[] = {
	[OPT_WEIGHTS] = {"weights", "coflow weights: its job's weight, or all 1", POLICY_OPT_ENUM,
			 0, 0, 0, weights_choices},
	[OPT_RATES] = {"rates", "strict priority per coflow, or greedy rates per decision",
		       POLICY_OPT_ENUM, 0, 0, 0, rates_choices},
};

struct demand {
	uint32_t pos; /* coflow position in the unordered set */
	uint32_t port;
	double bytes;
};

struct sinc {
	bool unit, greedy;
	uint32_t nports;
	struct policy_scratch s;
	double *load;       /* nports: sum of unordered coflows' demand */
	uint32_t *pfirst;   /* nports + 1: CSR of demands by port */
	struct demand *byp; /* demands grouped by port */
	struct demand *byc; /* demands grouped by coflow position */
	uint32_t *cfirst;   /* ncoflows + 1 */
	uint32_t *touched;  /* nports */
	uint32_t *set;      /* ncoflows: the active coflows in release order */
	double *w;          /* per position */
	bool *placed;       /* per position */
	size_t cap;         /* capacity of byp/byc */
};

static void sinc_free(struct sinc *x)
{
	policy_scratch_done(&x->s);
	free(x->load);
	free(x->pfirst);
	free(x->byp);
	free(x->byc);
	free(x->cfirst);
	free(x->touched);
	free(x->set);
	free(x->w);
	free(x->placed);
	free(x);
}

static int sinc_init(struct policy *p, const struct cp_model *m)
{
	struct sinc *x = calloc(1, sizeof(*x));
	size_t nc;
	int r;

	if (!x)
		return -ENOMEM;
	r = policy_scratch_init(&x->s, m);
	if (r < 0) {
		free(x);
		return r;
	}
	x->unit = p->opt[OPT_WEIGHTS] == 1;
	x->greedy = p->opt[OPT_RATES] == 1;
	x->nports = m->topo->nports;
	nc = m->ncoflows ? m->ncoflows : 1;
	x->load = calloc(x->nports + 1, sizeof(double));
	x->pfirst = calloc(x->nports + 1, sizeof(uint32_t));
	x->touched = calloc(x->nports + 1, sizeof(uint32_t));
	x->cfirst = calloc(nc + 1, sizeof(uint32_t));
	x->set = calloc(nc, sizeof(uint32_t));
	x->w = calloc(nc, sizeof(double));
	x->placed = calloc(nc, sizeof(bool));
	if (!x->load || !x->pfirst || !x->touched || !x->cfirst || !x->set || !x->w || !x->placed) {
		sinc_free(x);
		return -ENOMEM;
	}
	p->priv = x;
	return 0;
}

static void sinc_done(struct policy *p)
{
	if (p->priv)
		sinc_free(p->priv);
	p->priv = NULL;
}

static int reserve(struct sinc *x, size_t need)
{
	struct demand *a, *b;
	size_t cap = x->cap ? x->cap : 256;

	if (need <= x->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	a = realloc(x->byp, cap * sizeof(*a));
	if (!a)
		return -ENOMEM;
	x->byp = a;
	b = realloc(x->byc, cap * sizeof(*b));
	if (!b)
		return -ENOMEM;
	x->byc = b;
	x->cap = cap;
	return 0;
}

/* Collects each active coflow's per-port remaining demand (by position). */
static int collect(struct sinc *x, const struct cp_model *m, const uint32_t *set, uint32_t n)
{
	double *pl = x->s.port_load;
	size_t nd = 0;

	for (uint32_t i = 0; i < n; i++) {
		const struct cp_coflow *cf = &m->coflows[set[i]];
		uint32_t nt = 0;
		int r;

		x->cfirst[i] = (uint32_t)nd;
		for (uint32_t k = 0; k < cf->flows_left; k++) {
			const struct cp_flow *fl = &m->flows[m->flow_slot[cf->first_flow + k]];

			for (uint32_t q = 0; q < fl->nports; q++) {
				uint32_t p = fl->ports[q];

				if (pl[p] == 0 && fl->remaining_bytes > 0)
					x->touched[nt++] = p;
				pl[p] += fl->remaining_bytes;
			}
		}
		r = reserve(x, nd + nt);
		if (r < 0) {
			for (uint32_t t = 0; t < nt; t++)
				pl[x->touched[t]] = 0;
			return r;
		}
		for (uint32_t t = 0; t < nt; t++) {
			uint32_t p = x->touched[t];

			x->byc[nd++] = (struct demand){.pos = i, .port = p, .bytes = pl[p]};
			pl[p] = 0;
		}
		x->w[i] = x->unit ? 1.0 : m->jobs[cf->job].weight;
		x->placed[i] = false;
	}
	x->cfirst[n] = (uint32_t)nd;
	/* Group by port (counting sort). */
	memset(x->pfirst, 0, (x->nports + 1) * sizeof(uint32_t));
	memset(x->load, 0, x->nports * sizeof(double));
	for (size_t k = 0; k < nd; k++) {
		x->pfirst[x->byc[k].port + 1]++;
		x->load[x->byc[k].port] += x->byc[k].bytes;
	}
	for (uint32_t p = 0; p < x->nports; p++)
		x->pfirst[p + 1] += x->pfirst[p];
	memcpy(x->touched, x->pfirst, x->nports * sizeof(uint32_t));
	for (size_t k = 0; k < nd; k++)
		x->byp[x->touched[x->byc[k].port]++] = x->byc[k];
	return 0;
}

/* BSSI: fills order[0 .. n) from set[0 .. n). */
/*
 * Relative differences below this are ties, in port loads and in weight per
 * byte: loomd's byte counts come from agents in whole bytes, so the same
 * state reaches it a fraction of a byte per flow away from the simulator's,
 * and an order must not hang on that (the differential test against loomd
 * found one that did).
 */
#define BSSI_TIE 1e-5

static int bssi(struct sinc *x, const struct cp_model *m, const uint32_t *set, uint32_t n,
		uint32_t *order)
{
	uint32_t left = n, front = 0;
	int r = collect(x, m, set, n);

	if (r < 0)
		return r;
	while (left > 0) {
		uint32_t b = 0, last = UINT32_MAX;
		double best = -1, ratio = INFINITY;

		/* near ties go to the first port: see BSSI_TIE */
		for (uint32_t p = 0; p < x->nports; p++)
			if (x->load[p] > best + BSSI_TIE * (best > 0 ? best : 0)) {
				best = x->load[p];
				b = p;
			}
		if (!(best > 0))
			break; /* the rest have no demand left: they go first */
		for (uint32_t k = x->pfirst[b]; k < x->pfirst[b + 1]; k++) {
			const struct demand *dm = &x->byp[k];
			double v;

			if (x->placed[dm->pos])
				continue;
			v = x->w[dm->pos] / dm->bytes;
			/* Ties (within BSSI_TIE): the later release goes last. */
			if (v < ratio * (1 - BSSI_TIE) ||
			    (v <= ratio * (1 + BSSI_TIE) && last != UINT32_MAX &&
			     m->coflows[set[dm->pos]].release_ns >
				     m->coflows[set[last]].release_ns)) {
				ratio = v;
				last = dm->pos;
			}
		}
		if (last == UINT32_MAX)
			break; /* float residue on b; cannot happen with exact sums */
		{
			double dl = 0;

			for (uint32_t k = x->cfirst[last]; k < x->cfirst[last + 1]; k++)
				if (x->byc[k].port == b)
					dl = x->byc[k].bytes;
			for (uint32_t k = x->pfirst[b]; k < x->pfirst[b + 1]; k++) {
				const struct demand *dm = &x->byp[k];

				if (x->placed[dm->pos] || dm->pos == last)
					continue;
				x->w[dm->pos] -= x->w[last] * dm->bytes / dl;
				if (x->w[dm->pos] < 0)
					x->w[dm->pos] = 0;
			}
		}
		x->placed[last] = true;
		for (uint32_t k = x->cfirst[last]; k < x->cfirst[last + 1]; k++) {
			x->load[x->byc[k].port] -= x->byc[k].bytes;
			if (x->load[x->byc[k].port] < 0)
				x->load[x->byc[k].port] = 0;
		}
		order[--left] = set[last];
	}
	/* Coflows with nothing left to send (or float residue): first, in release order. */
	for (uint32_t i = 0; i < n && front < left; i++)
		if (!x->placed[i])
			order[front++] = set[i];
	return 0;
}

/* Greedy order-preserving rates: each flow takes what its ports still have. */
static void greedy_rates(const struct cp_model *m, const uint32_t *order, uint32_t n,
			 double *free_bps, double *rate_bps)
{
	const struct topo *t = m->topo;

	for (uint32_t p = 0; p < t->nports; p++)
		free_bps[p] = (double)t->port_bps[p];
	for (uint32_t i = 0; i < n; i++) {
		const struct cp_coflow *cf = &m->coflows[order[i]];

		for (uint32_t k = 0; k < cf->flows_left; k++) {
			uint32_t f = m->flow_slot[cf->first_flow + k];
			const struct cp_flow *fl = &m->flows[f];
			double r = INFINITY;

			for (uint32_t q = 0; q < fl->nports; q++)
				if (free_bps[fl->ports[q]] < r)
					r = free_bps[fl->ports[q]];
			if (!(r > 0))
				r = 0;
			rate_bps[f] = r;
			for (uint32_t q = 0; q < fl->nports; q++)
				free_bps[fl->ports[q]] -= r;
		}
	}
}

static int sinc_decide(struct policy *p, const struct cp_model *m, uint64_t now_ns,
		       struct policy_decision *d)
{
	struct sinc *x = p->priv;
	int r;

	(void)now_ns;
	/* A release-ordered copy of the active set, so ties are deterministic. */
	for (uint32_t a = 0; a < m->nactive; a++)
		x->s.key[m->active[a]] = 0;
	policy_sort_active(m, x->set, x->s.key, NULL);
	r = bssi(x, m, x->set, m->nactive, d->order);
	if (r < 0)
		return r;
	d->norder = m->nactive;
	if (x->greedy) {
		greedy_rates(m, d->order, d->norder, x->s.free_bps, d->rate_bps);
		d->has_rates = true;
	}
	return 0;
}

const struct policy_class policy_sincronia = {
	.name = "sincronia",
	.summary = "Sincronia: BSSI order, strict priority in that order (clairvoyant)",
	.clairvoyant = true,
	.opts = sinc_opts,
	.nopts = sizeof(sinc_opts) / sizeof(sinc_opts[0]),
	.init = sinc_init,
	.done = sinc_done,
	.decide = sinc_decide,
};
