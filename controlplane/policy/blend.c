/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * blend: a weighted vote of the strong heuristics' orders (a Borda count).
 *
 * Each named heuristic orders the schedulable coflows; a coflow's score is
 * the sum over the heuristics of weight x its place in that heuristic's
 * order, divided by the number of schedulable coflows (so weights mean the
 * same at any size); the blend orders by score, ties by the first heuristic
 * with a non-zero weight, then release, then index. Weights of 0 leave a
 * heuristic out (it is not even run). Rates: strict priority in the order
 * (as sincronia), or MADD then backfill (as sebf).
 *
 * The default weights (sincronia 1, wsrjf 1, sebf 0.5, lcf 0.3, priority
 * rates) came from a small search on generated 30-job workloads that the
 * benchmarks' held-out workloads do not include (docs/policies.md#blend).
 */
#include "controlplane/policy/policy.h"

#include <errno.h>
#include <stdlib.h>

#include "controlplane/policy/util.h"

static const char *const blend_heur[] = {"sincronia", "wsrjf", "sebf", "srjf", "lcf"};
#define BLEND_NH (sizeof(blend_heur) / sizeof(blend_heur[0]))

enum {
	OPT_RATES = BLEND_NH,
};

static const char *const rates_choices[] = {"priority", "madd", "fill", NULL};

static const struct policy_opt_def blend_opts[] = {
	{"sincronia", "weight of Sincronia's (BSSI) place", POLICY_OPT_NUM, 1, 0, 1e6, NULL},
	{"wsrjf", "weight of wsrjf's place", POLICY_OPT_NUM, 1, 0, 1e6, NULL},
	{"sebf", "weight of sebf's place", POLICY_OPT_NUM, 0.5, 0, 1e6, NULL},
	{"srjf", "weight of srjf's place", POLICY_OPT_NUM, 0, 0, 1e6, NULL},
	{"lcf", "weight of lcf's place", POLICY_OPT_NUM, 0.3, 0, 1e6, NULL},
	[OPT_RATES] = {"rates",
		       "priority: strict priority per coflow in the order (as sincronia); madd: "
		       "Varys' MADD in the order, then backfill; fill: MADD, then the rest "
		       "shared per coflow in the order, in equal-share rounds",
		       POLICY_OPT_ENUM, 0, 0, 0, rates_choices},
};

struct blend {
	struct policy *h[BLEND_NH]; /* NULL where the weight (p->opt[i]) is 0 */
	struct policy_decision hd;
	struct policy_scratch s;
};

static void blend_done(struct policy *p)
{
	struct blend *x = p->priv;

	if (!x)
		return;
	for (uint32_t i = 0; i < BLEND_NH; i++)
		policy_free(x->h[i]);
	policy_decision_done(&x->hd);
	policy_scratch_done(&x->s);
	free(x);
	p->priv = NULL;
}

static int blend_init(struct policy *p, const struct cp_model *m)
{
	struct blend *x = calloc(1, sizeof(*x));
	bool any = false;
	int r;

	if (!x)
		return -ENOMEM;
	p->priv = x;
	r = policy_scratch_init(&x->s, m);
	if (r == 0)
		r = policy_decision_init(&x->hd, m);
	for (uint32_t i = 0; i < BLEND_NH; i++)
		any = any || p->opt[i] > 0;
	if (r == 0 && !any) {
		r = -EINVAL;
		loom_err_set(&p->init_err, EINVAL,
			     "every weight is 0: give at least one heuristic a weight above 0");
	}
	for (uint32_t i = 0; r == 0 && i < BLEND_NH; i++) {
		struct loom_err e = {0};

		if (!(p->opt[i] > 0))
			continue;
		x->h[i] = policy_new(blend_heur[i], &p->params, m, &e);
		if (!x->h[i]) {
			r = -errno;
			loom_err_set(&p->init_err, -r, "%s: %s", blend_heur[i], e.msg);
			break;
		}
		p->decide_on_flow_done = p->decide_on_flow_done || x->h[i]->decide_on_flow_done;
	}
	if (r < 0)
		blend_done(p);
	return r;
}

static void blend_on_event(struct policy *p, const struct cp_model *m, const struct cp_event *ev)
{
	struct blend *x = p->priv;

	for (uint32_t i = 0; i < BLEND_NH; i++)
		if (x->h[i])
			policy_on_event(x->h[i], m, ev);
}

static int blend_decide(struct policy *p, const struct cp_model *m, uint64_t now_ns,
			struct policy_decision *d)
{
	struct blend *x = p->priv;
	double inv = m->nactive ? 1.0 / m->nactive : 0;
	bool first = true;

	for (uint32_t a = 0; a < m->nactive; a++) {
		x->s.key[m->active[a]] = 0;
		x->s.key2[m->active[a]] = 0;
	}
	for (uint32_t i = 0; i < BLEND_NH; i++) {
		if (!x->h[i])
			continue;
		policy_decision_clear(&x->hd);
		int r = policy_decide(x->h[i], m, now_ns, &x->hd);

		if (r < 0)
			return r;
		for (uint32_t q = 0; q < x->hd.norder; q++) {
			uint32_t c = x->hd.order[q];

			x->s.key[c] += p->opt[i] * q * inv;
			if (first)
				x->s.key2[c] = q;
		}
		first = false;
	}
	d->norder = policy_sort_active(m, d->order, x->s.key, x->s.key2);
	if (p->opt[OPT_RATES] == 1) {
		policy_madd(m, d->order, d->norder, x->s.free_bps, x->s.port_load, d->rate_bps);
		d->has_rates = true;
	} else if (p->opt[OPT_RATES] == 2) {
		policy_madd_fill(m, d->order, d->norder, x->s.free_bps, x->s.port_load,
				 d->rate_bps);
		d->has_rates = true;
	}
	return 0;
}

const struct policy_class policy_blend = {
	.name = "blend",
	.summary = "weighted vote (Borda count) of sincronia, wsrjf, sebf, srjf and lcf's orders "
		   "(clairvoyant)",
	.clairvoyant = true,
	.opts = blend_opts,
	.nopts = sizeof(blend_opts) / sizeof(blend_opts[0]),
	.init = blend_init,
	.done = blend_done,
	.on_event = blend_on_event,
	.decide = blend_decide,
};
