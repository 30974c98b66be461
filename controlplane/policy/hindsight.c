/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hindsight: a research oracle, not a controller's policy. It knows every
 * job of the trace in advance (the simulator's model holds them all; a live
 * one does not) and serves one fixed priority order over all their coflows,
 * found before the first decision by a local search in the fluid model of
 * the fabric (fluid.h), with MADD rates and backfill in that order.
 *
 * What it is for: an achievable schedule for a workload, so that the
 * optimum lies between the LP bound (docs/bounds.md) and hindsight's
 * weighted JCT, replayed through the real engine like any policy. It tells
 * how much of the LP bound's room a schedule can take at all, which is what
 * an online policy's targets should be measured against.
 *
 * The search (deterministic in the policy's seed):
 *   - start: each of the fluid model's heuristics (sebf, wsebf, lcf, srjf,
 *     wsrjf, bssi, blend) is run over the whole trace and its coflows'
 *     completion order taken as a fixed order; the fixed order that costs
 *     least in the model is the start;
 *   - then `evals` moves, each tried in the model and kept if it lowers the
 *     weighted JCT (first improvement): a coflow moved to another place,
 *     all of a job's coflows moved up or down together, or two coflows
 *     swapped, by distances drawn on a log scale up to the whole order.
 *     A rollout that cannot beat the order kept is cut short (fluid.h).
 *
 * A coflow the search did not see (a job that arrives after it, in a model
 * without the whole trace) starts a new search over every job known then.
 * loomd refuses the policy (policy_class.offline).
 */
#include "controlplane/policy/policy.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controlplane/policy/fluid.h"
#include "controlplane/policy/util.h"

enum {
	OPT_EVALS,
	OPT_TEMP,
};

static const struct policy_opt_def hs_opts[] = {
	[OPT_EVALS] = {"evals",
		       "moves tried by the local search, each one fluid-model run of the whole "
		       "trace (0: the best heuristic's completion order, unsearched)",
		       POLICY_OPT_INT, 3000, 0, 1e8, NULL},
	[OPT_TEMP] = {"temp",
		      "simulated annealing: a move that costs a fraction d more is kept with "
		      "probability exp(-d / T), T falling linearly from this to 0 over the moves "
		      "(0: only improvements)",
		      POLICY_OPT_NUM, 0, 0, 1, NULL},
};

/* The heuristics whose completion orders are the search's starting points. */
static const struct {
	enum policy_fluid_rule rule;
	const char *name;
} start_rules[] = {
	{POLICY_FLUID_SEBF, "sebf"},   {POLICY_FLUID_WSEBF, "wsebf"}, {POLICY_FLUID_LCF, "lcf"},
	{POLICY_FLUID_SRJF, "srjf"},   {POLICY_FLUID_WSRJF, "wsrjf"}, {POLICY_FLUID_BSSI, "bssi"},
	{POLICY_FLUID_BLEND, "blend"},
};

struct hs {
	struct policy_fluid fl;
	struct policy_scratch s;
	uint64_t evals;
	double temp;
	double *rank;   /* ncoflows: place in the searched order; INFINITY: not searched */
	uint32_t *cur;  /* ncoflows: the order kept, snapshot-local coflows, first first */
	uint32_t *cand; /* ncoflows: a candidate */
	uint32_t *best; /* ncoflows: the cheapest order seen (annealing) */
	uint32_t *tmp;  /* ncoflows */
	double *key;    /* ncoflows: sort keys (snapshot-local) */
	uint32_t searches;
};

static void hs_free(struct hs *x)
{
	policy_fluid_done(&x->fl);
	policy_scratch_done(&x->s);
	free(x->rank);
	free(x->cur);
	free(x->cand);
	free(x->best);
	free(x->tmp);
	free(x->key);
	free(x);
}

static int hs_init(struct policy *p, const struct cp_model *m)
{
	struct hs *x = calloc(1, sizeof(*x));
	size_t nc = m->ncoflows ? m->ncoflows : 1;
	int r;

	if (!x)
		return -ENOMEM;
	x->evals = (uint64_t)p->opt[OPT_EVALS];
	x->temp = p->opt[OPT_TEMP];
	r = policy_fluid_init(&x->fl, m);
	if (r == 0)
		r = policy_scratch_init(&x->s, m);
	if (r < 0) {
		hs_free(x);
		return r;
	}
	/* every job the model holds, at its arrival */
	x->fl.future_s = INFINITY;
	x->rank = malloc(nc * sizeof(*x->rank));
	x->cur = calloc(nc, sizeof(*x->cur));
	x->cand = calloc(nc, sizeof(*x->cand));
	x->best = calloc(nc, sizeof(*x->best));
	x->tmp = calloc(nc, sizeof(*x->tmp));
	x->key = calloc(nc, sizeof(*x->key));
	if (!x->rank || !x->cur || !x->cand || !x->best || !x->tmp || !x->key) {
		hs_free(x);
		return -ENOMEM;
	}
	for (size_t c = 0; c < nc; c++)
		x->rank[c] = INFINITY;
	p->priv = x;
	return 0;
}

static void hs_done(struct policy *p)
{
	if (p->priv)
		hs_free(p->priv);
	p->priv = NULL;
}

/*
 * The cost of the fixed order o (snapshot-local, all n coflows); a run that
 * cannot come below bound may stop early and return INFINITY (fluid.h).
 */
static double fixed_cost(struct hs *x, const uint32_t *o, double bound)
{
	struct policy_fluid *f = &x->fl;

	for (uint32_t q = 0; q < f->n; q++)
		f->rank[o[q]] = (double)q;
	f->own_rank = true;
	return policy_fluid_run(f, POLICY_FLUID_FROZEN, 0, bound);
}

static int cmp_key(const void *a, const void *b, void *ctx)
{
	const double *key = ctx;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;

	if (key[i] != key[j])
		return key[i] < key[j] ? -1 : 1;
	return i < j ? -1 : i > j;
}

/*
 * Runs rule over the whole snapshot from its schedulable order now and
 * writes its coflows' completion order to o. Returns the rule's own cost.
 */
static double completion_order(struct hs *x, enum policy_fluid_rule rule, uint32_t *o)
{
	struct policy_fluid *f = &x->fl;
	uint32_t na = policy_fluid_order(f, rule, x->tmp);
	double cost;

	/* the schedulable in the rule's order, the rest after them (the rule re-sorts them) */
	for (uint32_t i = 0; i < f->n; i++)
		f->rank[i] = (double)na + i;
	for (uint32_t q = 0; q < na; q++)
		f->rank[f->local[x->tmp[q]]] = (double)q;
	f->own_rank = false;
	cost = policy_fluid_run(f, rule, 0, INFINITY);
	for (uint32_t i = 0; i < f->n; i++) {
		o[i] = i;
		x->key[i] = f->cfinish_s[i] >= 0 ? f->cfinish_s[i] : INFINITY;
	}
	qsort_r(o, f->n, sizeof(*o), cmp_key, x->key);
	return cost;
}

/* A distance on a log scale: 1 .. n - 1, each power of two as likely. */
static uint32_t draw_distance(struct policy *p, uint32_t n)
{
	uint32_t bits = 0, d;

	while (bits < 31 && (1u << (bits + 1)) < n)
		bits++;
	d = (1u << loom_rng_below(&p->rng, bits + 1));
	d += (uint32_t)loom_rng_below(&p->rng, d);
	return d < n ? d : n - 1;
}

/* One random move of x->cur into x->cand. */
static void draw_move(struct policy *p, struct hs *x)
{
	struct policy_fluid *f = &x->fl;
	uint32_t n = f->n, a = (uint32_t)loom_rng_below(&p->rng, n);
	uint32_t d = draw_distance(p, n);
	bool up = loom_rng_below(&p->rng, 2) == 0;
	uint32_t b = up ? (a >= d ? a - d : 0) : (a + d < n ? a + d : n - 1);

	memcpy(x->cand, x->cur, n * sizeof(*x->cand));
	switch (loom_rng_below(&p->rng, 3)) {
	case 0: { /* move the coflow at a to b */
		uint32_t c = x->cand[a];

		if (b < a)
			memmove(&x->cand[b + 1], &x->cand[b], (a - b) * sizeof(*x->cand));
		else
			memmove(&x->cand[a], &x->cand[a + 1], (b - a) * sizeof(*x->cand));
		x->cand[b] = c;
		break;
	}
	case 1: { /* every coflow of a's job moved by the same distance */
		uint32_t j = f->job[x->cur[a]];
		double shift = up ? -(double)d - 0.5 : (double)d + 0.5;

		for (uint32_t q = 0; q < n; q++)
			x->key[x->cur[q]] = (double)q + (f->job[x->cur[q]] == j ? shift : 0);
		qsort_r(x->cand, n, sizeof(*x->cand), cmp_key, x->key);
		break;
	}
	default: { /* swap the coflows at a and b */
		uint32_t c = x->cand[a];

		x->cand[a] = x->cand[b];
		x->cand[b] = c;
		break;
	}
	}
}

/* Searches a fixed order over every coflow the model holds at now_ns. */
static int search(struct policy *p, struct hs *x, const struct cp_model *m, uint64_t now_ns)
{
	struct policy_fluid *f = &x->fl;
	double best = INFINITY, start, now, rule_best = INFINITY, arrivals = 0;
	const char *start_name = "";
	uint64_t kept = 0;
	int r;

	r = policy_fluid_build(f, m, now_ns);
	if (r < 0)
		return r;
	x->searches++;
	for (uint32_t c = 0; c < m->ncoflows; c++)
		x->rank[c] = INFINITY;
	/* with the whole future in it, the snapshot holds every unfinished job */
	for (uint32_t j = 0; j < m->njobs; j++)
		if (m->jobs[j].state != CP_JOB_DONE)
			arrivals += m->jobs[j].weight *
				    ((double)m->jobs[j].arrival_ns - (double)now_ns) * 1e-9;
	if (f->n == 0)
		return 0;
	for (uint32_t i = 0; i < f->n; i++)
		x->cur[i] = i; /* kept unless a start costs less (every start is finite) */
	for (size_t q = 0; q < sizeof(start_rules) / sizeof(start_rules[0]); q++) {
		double rc = completion_order(x, start_rules[q].rule, x->cand);
		double cost = fixed_cost(x, x->cand, INFINITY);

		if (rc < rule_best)
			rule_best = rc;
		if (cost < best) {
			best = cost;
			start_name = start_rules[q].name;
			memcpy(x->cur, x->cand, f->n * sizeof(*x->cur));
		}
	}
	start = best;
	now = best;
	memcpy(x->best, x->cur, f->n * sizeof(*x->best));
	for (uint64_t e = 0; e < x->evals && f->n > 1; e++) {
		double cost, below = now * (1 - 1e-9);

		draw_move(p, x);
		/*
		 * Annealing: kept if below now x (1 + T ln(1/u)), u uniform in (0, 1],
		 * which is exp(-d / T) for a move costing a fraction d more; the
		 * threshold is drawn first so that the rollout can stop above it.
		 */
		if (x->temp > 0) {
			double t = x->temp * (1 - (double)e / (double)x->evals);

			below = now * (1 + t * -log(1 - loom_rng_uniform(&p->rng))) - 1e-9 * now;
		}
		/* a move that changes nothing (at an end of the order) is not played */
		if (memcmp(x->cand, x->cur, f->n * sizeof(*x->cand)) == 0)
			cost = INFINITY;
		else
			cost = fixed_cost(x, x->cand, below);
		if (cost < below) {
			uint32_t *t = x->cur;

			x->cur = x->cand;
			x->cand = t;
			now = cost;
			kept++;
			if (now < best * (1 - 1e-9)) {
				best = now;
				memcpy(x->best, x->cur, f->n * sizeof(*x->best));
			}
		}
		if (x->evals >= 10 && (e + 1) % (x->evals / 10) == 0)
			log_debug("hindsight: %" PRIu64 "/%" PRIu64 " moves, %" PRIu64
				  " kept, cost %.6g (start %.6g)",
				  e + 1, x->evals, kept, best, start);
	}
	/* the model's costs sum weight x finish from now: as avg weighted JCTs */
	log_debug("hindsight: %u coflows of %u jobs; avg weighted JCT in the model %.6g s, from "
		  "%.6g s (%s's completion order; the best heuristic's own run %.6g s), %" PRIu64
		  " of %" PRIu64 " moves kept",
		  f->n, f->nj, (best - arrivals) / f->nj, (start - arrivals) / f->nj, start_name,
		  (rule_best - arrivals) / f->nj, kept, x->evals);
	for (uint32_t q = 0; q < f->n; q++)
		x->rank[f->cof[x->best[q]]] = (double)q;
	return 0;
}

static int hs_decide(struct policy *p, const struct cp_model *m, uint64_t now_ns,
		     struct policy_decision *d)
{
	struct hs *x = p->priv;

	for (uint32_t a = 0; a < m->nactive; a++)
		if (!isfinite(x->rank[m->active[a]])) {
			int r = search(p, x, m, now_ns);

			if (r < 0)
				return r;
			break;
		}
	d->norder = policy_sort_active(m, d->order, x->rank, NULL);
	d->has_rates = true;
	policy_madd(m, d->order, d->norder, x->s.free_bps, x->s.port_load, d->rate_bps);
	return 0;
}

const struct policy_class policy_hindsight = {
	.name = "hindsight",
	.summary = "research oracle: one fixed order over the whole trace, known in advance, "
		   "found by a local search in the fluid model (an achievable schedule)",
	.clairvoyant = true,
	.offline = true,
	.opts = hs_opts,
	.nopts = sizeof(hs_opts) / sizeof(hs_opts[0]),
	.init = hs_init,
	.done = hs_done,
	.decide = hs_decide,
};
