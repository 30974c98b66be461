/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lookahead: decision-time rollouts on top of a base policy (Bertsekas and
 * Castanon, "Rollout algorithms for stochastic scheduling problems", Journal
 * of Heuristics 1999; Bertsekas, Tsitsiklis and Wu, "Rollout algorithms for
 * combinatorial optimization", 1997).
 *
 * At each decision the base policy orders the schedulable coflows, and a
 * few candidate orders are played forward in the fluid model of the fabric
 * (fluid.h) from the current state of every job that has arrived, until they
 * are all done (or for `horizon` seconds). The cost of a rollout is the
 * jobs' weighted unfinished time from now (their weighted JCT); the cheapest
 * candidate wins if it beats the base's own order by `margin` (relative),
 * else the base's decision stands untouched. The candidates:
 *   - the base's order, completed by the base's rule: inside a rollout the
 *     order holds until the first completion or release, then the fluid
 *     model re-sorts by the rule that reproduces the base (sebf, lcf, srjf,
 *     wsrjf, fifo, ncf, cpf, wcpf; bssi is sincronia's, sebf stands in for scf;
 *     blend's is its default vote of those rules; the other bases' order
 *     stays frozen, coflows released later taking their parent's place);
 *   - with mix=1, the whole orders of the fluid model's sebf, wsebf (Smith's
 *     ratio: bottleneck / job weight), lcf, srjf, wsrjf and bssi, each
 *     completed by its own rule (a rollout over several heuristics: the
 *     result is at least as good, in the model, as the best of them from
 *     here); mix=2 adds blend's vote of them. A rollout that would repeat
 *     one already played is skipped: wsebf's is sebf's and wsrjf's is
 *     srjf's when every job weighs 1 (as loomd's jobs do unless given a
 *     weight), and a heuristic's is the base's when it is the base's rule
 *     and order;
 *   - for each of the first `depth` places of the best order so far, its top
 *     k moved up to that place.
 *
 * With future=S (a research oracle, not for a live controller) the snapshot
 * also holds the jobs that arrive within S seconds, at their arrival times:
 * the simulator's model has every job of the trace, a live one has none.
 *
 * The cost-improvement property of rollouts follows: each decision's winner
 * costs, in the model, no more than continuing the base (or the heuristic it
 * chose last time, which is a candidate again), so where the model is exact
 * and every job is known the run costs no more than the base's
 * (test_lookahead checks it on random instances).
 *
 * A changed order gets MADD rates (what the rollouts modelled), what they
 * leave shared per coflow in the order in equal-share rounds (rates=fill,
 * the default; rates=madd leaves it to the fabric's greedy backfill), and a
 * wake-up at the end of its rollout's first interval: if the fabric brings
 * no event by then, the policy decides again then, as the rollout assumed. The
 * base's classes, wake-ups and watches are kept. Only jobs that have arrived
 * are rolled out: the policy knows what a live controller knows.
 * Deterministic: no randomness is drawn.
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
	OPT_BASE,
	OPT_K,
	OPT_DEPTH,
	OPT_HORIZON,
	OPT_COMPLETE,
	OPT_MARGIN,
	OPT_MIX,
	OPT_BUDGET,
	OPT_RATES,
	OPT_FUTURE,
};

/* Bases: every registered policy whose decisions depend only on the model's state. */
static const char *const base_choices[] = {
	"sincronia", "sebf", "wsrjf", "srjf", "scf",   "lcf",       "ncf",   "fifo",
	"fair",      "cpf",  "wcpf",  "gnn",  "dclas", "dclas-job", "blend", NULL,
};

/* Index i > 0 is enum policy_fluid_rule i - 1. */
static const char *const complete_choices[] = {"auto",  "frozen", "sebf",  "lcf", "srjf",
					       "wsrjf", "wsebf",  "fifo",  "ncf", "cpf",
					       "wcpf",  "bssi",   "blend", NULL};

/* complete=auto: the fluid rule standing in for each base, by base name. */
static enum policy_fluid_rule auto_rule(const char *base)
{
	static const struct {
		const char *base;
		enum policy_fluid_rule rule;
	} map[] = {
		{"sebf", POLICY_FLUID_SEBF},   {"sincronia", POLICY_FLUID_BSSI},
		{"lcf", POLICY_FLUID_LCF},     {"scf", POLICY_FLUID_SEBF},
		{"srjf", POLICY_FLUID_SRJF},   {"wsrjf", POLICY_FLUID_WSRJF},
		{"fifo", POLICY_FLUID_FIFO},   {"ncf", POLICY_FLUID_NCF},
		{"cpf", POLICY_FLUID_CPF},     {"wcpf", POLICY_FLUID_WCPF},
		{"blend", POLICY_FLUID_BLEND},
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(map[i].base, base) == 0)
			return map[i].rule;
	return POLICY_FLUID_FROZEN;
}

/* mix=1: the strong heuristics whose whole orders are rolled out too. */
static const enum policy_fluid_rule mix_rules[] = {
	POLICY_FLUID_SEBF,  POLICY_FLUID_WSEBF, POLICY_FLUID_LCF,   POLICY_FLUID_SRJF,
	POLICY_FLUID_WSRJF, POLICY_FLUID_BSSI,  POLICY_FLUID_BLEND, /* mix=2 only */
};

static const char *const rates_choices[] = {"madd", "base", "fill", NULL};

static const struct policy_opt_def la_opts[] = {
	[OPT_BASE] = {"base", "policy whose order is improved (and completes the rollouts)",
		      POLICY_OPT_ENUM, 0, 0, 0, base_choices},
	[OPT_K] = {"k", "candidates for each place: the base's top k", POLICY_OPT_INT, 4, 1, 64,
		   NULL},
	[OPT_DEPTH] = {"depth", "places chosen by rollouts (the rest as the base orders)",
		       POLICY_OPT_INT, 1, 1, 8, NULL},
	[OPT_HORIZON] = {"horizon",
			 "seconds each rollout looks ahead (0: until the known jobs end)",
			 POLICY_OPT_NUM, 0, 0, 1e9, NULL},
	[OPT_COMPLETE] = {"complete",
			  "how rollouts order after their first event: auto (the base's rule where "
			  "the fluid model has one, else frozen) or a rule",
			  POLICY_OPT_ENUM, 0, 0, 0, complete_choices},
	[OPT_MARGIN] = {"margin",
			"a candidate replaces the base's choice only if its rollout costs this "
			"fraction less",
			POLICY_OPT_NUM, 0.001, 0, 1, NULL},
	[OPT_MIX] = {"mix",
		     "1: also roll out the whole orders of the fluid model's sebf, wsebf, lcf, "
		     "srjf, wsrjf and bssi, each completed by itself; 2: and blend's vote; 0: none",
		     POLICY_OPT_INT, 1, 0, 2, NULL},
	[OPT_BUDGET] = {"budget",
			"work per decision, in millions of demand-steps (a rollout costs one per "
			"live port demand per event): candidates past it are not rolled out, the "
			"best so far stands (0: no limit)",
			POLICY_OPT_NUM, 20, 0, 1e6, NULL},
	[OPT_RATES] = {"rates",
		       "rates of a changed order: fill (MADD, as the rollouts model, then what is "
		       "left shared per coflow in the order), madd (MADD, then the simulator's "
		       "greedy backfill) or base (as the base gives its own: none, strict "
		       "priority, when it gives none)",
		       POLICY_OPT_ENUM, 2, 0, 0, rates_choices},
	[OPT_FUTURE] = {"future",
			"research oracle: rollouts also hold the jobs that arrive within this "
			"many seconds (the simulator knows them; a live controller does not)",
			POLICY_OPT_NUM, 0, 0, 1e9, NULL},
};

struct la {
	struct policy *base;
	uint32_t k, depth;
	double horizon_s, margin;
	enum policy_fluid_rule rule;
	struct policy_fluid fl;
	struct policy_scratch s;
	struct policy_decision bd; /* the base's decision */
	uint32_t *order;           /* ncoflows: the order being built */
	uint32_t *cand;            /* ncoflows: a candidate order */
	uint32_t *best;            /* ncoflows: the best whole order so far */
	uint32_t mix;              /* mix= */
	bool base_rates;           /* rates=base */
	bool fill;                 /* rates=fill */
	uint64_t budget;           /* demand-steps per decision; POLICY_FLUID_WORK_ANY: none */
	double *job_rank;          /* njobs */
	/* for the summary at the end (log level debug) */
	uint64_t decisions, rollouts;
	uint64_t out_of_work;        /* decisions the budget cut short */
	uint64_t work_sum, work_max; /* demand-steps per decision */
};

static void la_free(struct la *x)
{
	policy_free(x->base);
	policy_fluid_done(&x->fl);
	policy_scratch_done(&x->s);
	policy_decision_done(&x->bd);
	free(x->order);
	free(x->cand);
	free(x->best);
	free(x->job_rank);
	free(x);
}

static int la_init(struct policy *p, const struct cp_model *m)
{
	struct la *x = calloc(1, sizeof(*x));
	size_t nc = m->ncoflows ? m->ncoflows : 1;
	struct policy_params bp = p->params;
	struct loom_err err = {0};
	int r;

	if (!x)
		return -ENOMEM;
	x->k = (uint32_t)p->opt[OPT_K];
	x->depth = (uint32_t)p->opt[OPT_DEPTH];
	x->horizon_s = p->opt[OPT_HORIZON];
	x->margin = p->opt[OPT_MARGIN];
	x->mix = (uint32_t)p->opt[OPT_MIX];
	x->base_rates = p->opt[OPT_RATES] == 1;
	x->fill = p->opt[OPT_RATES] == 2;
	x->budget = p->opt[OPT_BUDGET] > 0 ? (uint64_t)(p->opt[OPT_BUDGET] * 1e6) :
					     POLICY_FLUID_WORK_ANY;
	if (p->opt[OPT_COMPLETE] == 0)
		x->rule = auto_rule(base_choices[(int)p->opt[OPT_BASE]]);
	else
		x->rule = (enum policy_fluid_rule)((int)p->opt[OPT_COMPLETE] - 1);
	x->base = policy_new(base_choices[(int)p->opt[OPT_BASE]], &bp, m, &err);
	if (!x->base) {
		r = -errno;
		loom_err_set(&p->init_err, -r, "base: %s", err.msg);
		la_free(x);
		return r;
	}
	p->decide_on_flow_done = x->base->decide_on_flow_done;
	r = policy_fluid_init(&x->fl, m);
	x->fl.future_s = p->opt[OPT_FUTURE];
	if (r == 0)
		r = policy_scratch_init(&x->s, m);
	if (r == 0)
		r = policy_decision_init(&x->bd, m);
	if (r < 0) {
		la_free(x);
		return r;
	}
	x->order = calloc(nc, sizeof(*x->order));
	x->cand = calloc(nc, sizeof(*x->cand));
	x->best = calloc(nc, sizeof(*x->best));
	x->job_rank = calloc(m->njobs ? m->njobs : 1, sizeof(*x->job_rank));
	if (!x->order || !x->cand || !x->best || !x->job_rank) {
		la_free(x);
		return -ENOMEM;
	}
	p->priv = x;
	return 0;
}

static void la_done(struct policy *p)
{
	struct la *x = p->priv;

	if (x && x->decisions)
		log_debug("lookahead: %" PRIu64 " decisions with rollouts, %" PRIu64
			  " rollouts, %.3g M demand-steps each on average, %.3g M at most, %" PRIu64
			  " cut short by budget=%g",
			  x->decisions, x->rollouts,
			  (double)x->work_sum / (double)x->decisions * 1e-6,
			  (double)x->work_max * 1e-6, x->out_of_work,
			  x->budget == POLICY_FLUID_WORK_ANY ? 0 : (double)x->budget * 1e-6);
	if (x)
		la_free(x);
	p->priv = NULL;
}

static void la_on_event(struct policy *p, const struct cp_model *m, const struct cp_event *ev)
{
	struct la *x = p->priv;

	policy_on_event(x->base, m, ev);
}

/*
 * Rolls the order o[0 .. n) out in the fluid snapshot; returns its cost, or
 * INFINITY as soon as it is certain to cost at least bound.
 */
static double rollout(struct la *x, const struct cp_model *m, const uint32_t *o, uint32_t n,
		      enum policy_fluid_rule rule, double bound)
{
	struct policy_fluid *f = &x->fl;

	for (uint32_t j = 0; j < m->njobs; j++)
		x->job_rank[j] = INFINITY;
	for (uint32_t q = n; q-- > 0;)
		x->job_rank[m->coflows[o[q]].job] = (double)q;
	/* Not yet schedulable: after everything ordered, its job's place, else by job. */
	for (uint32_t i = 0; i < f->n; i++) {
		uint32_t jm = m->coflows[f->cof[i]].job;

		f->rank[i] = isfinite(x->job_rank[jm]) ? x->job_rank[jm] + 0.5 : (double)n + jm;
	}
	for (uint32_t q = 0; q < n; q++)
		f->rank[f->local[o[q]]] = (double)q;
	x->rollouts++;
	return policy_fluid_run(f, rule, x->horizon_s, bound);
}

/* Copies the parts of decision s that order-independent consumers read into d. */
static void copy_decision(struct policy_decision *d, const struct policy_decision *s,
			  const struct cp_model *m)
{
	d->norder = s->norder;
	memcpy(d->order, s->order, s->norder * sizeof(*d->order));
	d->has_classes = s->has_classes;
	if (s->has_classes)
		memcpy(d->class_of, s->class_of, s->norder * sizeof(*d->class_of));
	d->has_rates = s->has_rates;
	if (s->has_rates)
		for (uint32_t a = 0; a < m->nactive; a++) {
			const struct cp_coflow *cf = &m->coflows[m->active[a]];

			for (uint32_t k = 0; k < cf->flows_left; k++) {
				uint32_t fi = m->flow_slot[cf->first_flow + k];

				d->rate_bps[fi] = s->rate_bps[fi];
			}
		}
	d->wakeup_ns = s->wakeup_ns;
	d->nwatch = s->nwatch;
	memcpy(d->watch, s->watch, s->nwatch * sizeof(*d->watch));
}

/* The decision's work, for the summary. */
static void count_work(struct la *x)
{
	uint64_t used = x->budget - x->fl.work_left;

	x->out_of_work += x->fl.out_of_work;
	x->work_sum += used;
	if (used > x->work_max)
		x->work_max = used;
}

/*
 * Whether mix candidate q (its order of n coflows in x->cand) would play a
 * rollout already played: the base's (rule, its order in x->order), or an
 * earlier candidate's. Rules alike (fluid.h) order alike at every event, so
 * their rollouts cost the same and the second could not win (the test is
 * strict). Skipping it changes no decision, only the work, which a
 * decision the budget cuts short may spend on a later candidate instead.
 */
static bool rolled_before(const struct la *x, size_t q, enum policy_fluid_rule rule, uint32_t n)
{
	if (policy_fluid_rules_alike(&x->fl, mix_rules[q], rule) &&
	    memcmp(x->cand, x->order, n * sizeof(*x->cand)) == 0)
		return true;
	for (size_t i = 0; i < q; i++)
		if (policy_fluid_rules_alike(&x->fl, mix_rules[q], mix_rules[i]))
			return true;
	return false;
}

static int la_decide(struct policy *p, const struct cp_model *m, uint64_t now_ns,
		     struct policy_decision *d)
{
	struct la *x = p->priv;
	enum policy_fluid_rule rule, best_rule = POLICY_FLUID_FROZEN;
	double base_cost, best_cost = INFINITY, best_hold = INFINITY;
	double hold_s; /* how long the chosen order holds in its rollout */
	bool changed = false;
	uint32_t n;
	int r;

	policy_decision_clear(&x->bd);
	r = policy_decide(x->base, m, now_ns, &x->bd);
	if (r < 0)
		return r;
	n = x->bd.norder;
	if (n < 2 || (x->k < 2 && !x->mix)) {
		copy_decision(d, &x->bd, m);
		return 0;
	}
	r = policy_fluid_build(&x->fl, m, now_ns);
	if (r < 0)
		return r;
	memcpy(x->order, x->bd.order, n * sizeof(*x->order));
	rule = x->rule;
	x->fl.work_left = x->budget;
	x->decisions++;
	base_cost = rollout(x, m, x->order, n, rule, INFINITY);
	if (x->fl.out_of_work) {
		/* not even the base's own rollout fits the budget: its decision stands */
		count_work(x);
		copy_decision(d, &x->bd, m);
		return 0;
	}
	hold_s = x->fl.first_s;
	/*
	 * Whole orders of the fluid model's heuristics, each completed by
	 * itself. Past the budget no candidate is rolled out (a cut-short
	 * rollout costs INFINITY: it never wins).
	 */
	for (size_t q = 0; x->mix && !x->fl.out_of_work &&
			   q < sizeof(mix_rules) / sizeof(mix_rules[0]) - (x->mix < 2);
	     q++) {
		enum policy_fluid_rule h = mix_rules[q];
		double cost;

		if (policy_fluid_order(&x->fl, h, x->cand) != n || rolled_before(x, q, rule, n))
			continue;
		/* it wins only below both: a rollout that cannot is cut short */
		cost = rollout(x, m, x->cand, n, h,
			       fmin(base_cost * (1 - x->margin - 1e-12), best_cost));
		if (cost < base_cost * (1 - x->margin - 1e-12) && cost < best_cost) {
			memcpy(x->best, x->cand, n * sizeof(*x->best));
			best_cost = cost;
			best_rule = h;
			best_hold = x->fl.first_s;
		}
	}
	if (isfinite(best_cost)) {
		memcpy(x->order, x->best, n * sizeof(*x->order));
		rule = best_rule;
		base_cost = best_cost;
		hold_s = best_hold;
		changed = true;
	}
	/* Then each place in turn: the top k of the order so far, moved up. */
	for (uint32_t pos = 0; pos < x->depth && pos + 1 < n && !x->fl.out_of_work; pos++) {
		uint32_t best = 0;
		double pos_cost = base_cost, pos_hold = hold_s;

		for (uint32_t i = 1; i < x->k && pos + i < n && !x->fl.out_of_work; i++) {
			double cost;

			memcpy(x->cand, x->order, n * sizeof(*x->cand));
			memmove(&x->cand[pos + 1], &x->cand[pos], i * sizeof(*x->cand));
			x->cand[pos] = x->order[pos + i];
			cost = rollout(x, m, x->cand, n, rule,
				       fmin(pos_cost, base_cost * (1 - x->margin - 1e-12)));
			if (cost < pos_cost && cost < base_cost * (1 - x->margin - 1e-12)) {
				pos_cost = cost;
				best = i;
				pos_hold = x->fl.first_s;
			}
		}
		if (best) {
			uint32_t c = x->order[pos + best];

			memmove(&x->order[pos + 1], &x->order[pos], best * sizeof(*x->order));
			x->order[pos] = c;
			changed = true;
			base_cost = pos_cost;
			hold_s = pos_hold;
		}
	}
	count_work(x);
	copy_decision(d, &x->bd, m);
	if (!changed)
		return 0;
	memcpy(d->order, x->order, n * sizeof(*d->order));
	/*
	 * Served as the base serves its own: the rollouts' timing does not
	 * hold, so no wakeup from them (the base's own wakeup stands).
	 */
	if (x->base_rates && !x->bd.has_rates)
		return 0;
	/*
	 * The rollout kept this order only until its first event; if the fabric
	 * brings no event by then, decide again then (the rollout's assumption).
	 */
	if (isfinite(hold_s)) {
		double w = ceil(hold_s * 1e9);
		uint64_t at = w < 1                                 ? now_ns + 1 :
			      w >= (double)(CP_TIME_NEVER - now_ns) ? CP_TIME_NEVER :
								      now_ns + (uint64_t)w;

		if (at < d->wakeup_ns)
			d->wakeup_ns = at;
	}
	/*
	 * The rollouts modelled MADD with backfill: that is what the fabric gets,
	 * the backfill per coflow in the order (fill) or the fabric's own.
	 */
	d->has_rates = true;
	if (x->fill)
		policy_madd_fill(m, d->order, n, x->s.free_bps, x->s.port_load, d->rate_bps);
	else
		policy_madd(m, d->order, n, x->s.free_bps, x->s.port_load, d->rate_bps);
	return 0;
}

const struct policy_class policy_lookahead = {
	.name = "lookahead",
	.summary = "decision-time rollouts of the base's top-k choices in a fluid model of the "
		   "fabric; keeps the cheapest",
	.clairvoyant = true,
	.opts = la_opts,
	.nopts = sizeof(la_opts) / sizeof(la_opts[0]),
	.init = la_init,
	.done = la_done,
	.on_event = la_on_event,
	.decide = la_decide,
};
