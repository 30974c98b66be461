/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ensemble: a run-time choice among the learned policy and the best
 * heuristics, by their measured outcomes, as MARS does for HPC-cloud job
 * scheduling (Baheri, Tronge, Fang, Li, Chaudhary and Guan, "MARS: Malleable
 * Actor-Critic Reinforcement Learning Scheduler", IPCCC 2022, arXiv
 * 2005.01584: pick at run time, by measured cost, among pre-built heuristics
 * and a learned model).
 *
 * Candidates: slot 0 is the learned policy (`learned=`: gnn, gnn reversed,
 * or a heuristic standing in for it), then wsrjf, sincronia and sebf. Each is
 * a complete sub-policy that sees every model event, so its state is current
 * whenever it is put in charge; decide() delegates to the one in charge.
 * Only order-from-state policies are candidates: one that counts on being
 * decided regularly (Aalo's queues) would drift while idle.
 *
 * Outcomes: a finished job costs its weighted slowdown, weight x JCT /
 * critical-path isolation time (cp_job_critical_paths_ns). It is credited to
 * the candidates in proportion to the share of the job's lifetime each was in
 * charge, from a cumulative in-charge clock per candidate snapshotted at the
 * job's arrival. A candidate's estimate is the exponentially forgetting mean
 * of the costs credited to it, weighted by share (each completion multiplies
 * the old sums by 2^(-1/halflife)); lower is better.
 *
 * Choice points come every `window` job completions. Each candidate that
 * has never been in charge gets the next window, in slot order (so the
 * learned one starts); after that, with probability `explore` a uniformly
 * drawn candidate other than the best gets one window (flagged as
 * exploration), otherwise the one with the lowest estimate is in charge.
 *
 * A policy that starves jobs completes few of them, so a window counted in
 * completions alone could leave it in charge for most of a run (cpf, on a
 * loaded fabric, finishes the longest job first). A window therefore also
 * ends at the first job arrival or completion after it has lasted `patience`
 * x `window` mean job inter-arrival gaps: at a steady state completions keep
 * pace with arrivals, so only a candidate that falls behind is cut.
 *
 * Every change of the candidate in charge is recorded
 * (policy_ensemble_switches()) and logged at debug. Randomness comes only
 * from p->rng, so a run is reproducible from its seed.
 */
#include "controlplane/policy/policy.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

enum {
	OPT_LEARNED,
	OPT_EXPLORE,
	OPT_WINDOW,
	OPT_HALFLIFE,
	OPT_PATIENCE
};

/* The choices of `learned` and the specs they stand for, index for index. */
static const char *const learned_choices[] = {"gnn",  "gnn-inverted", "cpf",
					      "fifo", "lookahead",    NULL};
static const char *const learned_specs[] = {"gnn", "gnn:invert=1", "cpf", "fifo",
					    "lookahead:base=gnn"};

/* The heuristics after the learned slot: the strongest on multi-stage workloads. */
static const char *const heuristic_specs[] = {"wsrjf", "sincronia", "sebf"};

#define ENS_NHEUR (sizeof(heuristic_specs) / sizeof(heuristic_specs[0]))
#define ENS_NCAND (1 + ENS_NHEUR)

static const struct policy_opt_def ens_opts[] = {
	[OPT_LEARNED] = {"learned",
			 "candidate in the learned slot (gnn-inverted: the model reversed; "
			 "lookahead: lookahead:base=gnn; cpf, fifo: stand-ins)",
			 POLICY_OPT_ENUM, 0, 0, 0, learned_choices},
	[OPT_EXPLORE] = {"explore", "probability that a choice point tries a non-best candidate",
			 POLICY_OPT_NUM, 0.1, 0, 1, NULL},
	[OPT_WINDOW] = {"window", "job completions between choice points", POLICY_OPT_INT, 3, 1,
			1e6, NULL},
	[OPT_HALFLIFE] = {"halflife", "half-life of old outcomes, in job completions",
			  POLICY_OPT_NUM, 20, 1e-3, 1e6, NULL},
	[OPT_PATIENCE] = {"patience",
			  "a window also ends after this x window mean job inter-arrival gaps "
			  "(0: never)",
			  POLICY_OPT_NUM, 2, 0, 1e6, NULL},
};

struct ens {
	uint32_t ncand;
	struct policy *cand[ENS_NCAND];
	const char *name[ENS_NCAND]; /* static strings */
	uint32_t active;             /* the candidate in charge */
	double explore;
	double decay; /* 2^(-1/halflife): weight left to old outcomes per completion */
	double patience;
	uint32_t window;
	uint32_t since;     /* job completions since the last choice point */
	uint64_t window_ns; /* when the current window began */
	uint64_t first_arrival_ns, last_arrival_ns;
	uint32_t narrivals, ndone;
	bool started; /* a time has been seen and the first pick recorded */
	uint64_t last_ns;
	bool tried[ENS_NCAND];         /* has been in charge */
	uint64_t charge_ns[ENS_NCAND]; /* cumulative time each has been in charge */
	double num[ENS_NCAND];         /* decayed sum of share x cost */
	double den[ENS_NCAND];         /* decayed sum of share; 0: no outcome yet */
	uint32_t njobs;
	uint64_t *job_cp_ns; /* njobs: critical-path isolation time */
	uint64_t *arrive_ns; /* njobs: when the job arrived here; CP_TIME_NEVER before */
	uint64_t *snap_ns;   /* njobs x ncand: charge_ns at the job's arrival */
	struct policy_ensemble_switch *sw;
	uint32_t nsw, capsw;
};

static void ens_free(struct ens *x)
{
	for (uint32_t k = 0; k < x->ncand; k++)
		policy_free(x->cand[k]);
	free(x->job_cp_ns);
	free(x->arrive_ns);
	free(x->snap_ns);
	free(x->sw);
	free(x);
}

static double ens_estimate(const struct ens *x, uint32_t k)
{
	if (k >= x->ncand || !(x->den[k] > 0))
		return NAN;
	return x->num[k] / x->den[k];
}

/*
 * Records a change of the candidate in charge. Choice points come only at job
 * arrivals and completions, so the array sized at init holds a whole run and
 * never moves under a caller (policy_ensemble_switches()); it grows only if
 * the model is replayed again, and a failed growth loses the record, never
 * the switch.
 */
static void ens_switch(struct ens *x, uint64_t now_ns, uint32_t to, bool explore, const char *why)
{
	struct policy_ensemble_switch *s;
	uint32_t from = x->started ? x->active : CP_NONE;

	if (x->nsw == x->capsw) {
		uint32_t ncap = x->capsw ? x->capsw * 2 : 8;
		struct policy_ensemble_switch *v = realloc(x->sw, ncap * sizeof(*v));

		if (v) {
			x->sw = v;
			x->capsw = ncap;
		}
	}
	if (x->nsw < x->capsw) {
		s = &x->sw[x->nsw++];
		s->time_ns = now_ns;
		s->from = from;
		s->to = to;
		s->explore = explore;
		s->est_from = from == CP_NONE ? NAN : ens_estimate(x, from);
		s->est_to = ens_estimate(x, to);
	}
	log_debug("ensemble: t=%.6f s: %s -> %s (%s; estimates %.4g -> %.4g)", now_ns * 1e-9,
		  from == CP_NONE ? "none" : x->name[from], x->name[to], why,
		  from == CP_NONE ? NAN : ens_estimate(x, from), ens_estimate(x, to));
	x->active = to;
	x->tried[to] = true;
}

/* Charges the time since the last one seen to the candidate in charge. */
static void ens_advance(struct ens *x, uint64_t now_ns)
{
	if (!x->started) {
		ens_switch(x, now_ns, x->active, false, "first");
		x->started = true;
		x->last_ns = now_ns;
		x->window_ns = now_ns;
		return;
	}
	/* A driver that resets the model and replays restarts the clock: no negative charge. */
	if (now_ns > x->last_ns)
		x->charge_ns[x->active] += now_ns - x->last_ns;
	x->last_ns = now_ns;
}

/* Credits job j, finished at now_ns, to the candidates by their share of its lifetime. */
static void ens_outcome(struct ens *x, const struct cp_model *m, uint32_t j, uint64_t now_ns)
{
	const struct cp_job *jb = &m->jobs[j];
	const uint64_t *snap = &x->snap_ns[(size_t)j * x->ncand];
	double life, cost;

	if (x->arrive_ns[j] == CP_TIME_NEVER || now_ns <= x->arrive_ns[j] || x->job_cp_ns[j] == 0 ||
	    now_ns < jb->arrival_ns)
		return; /* arrived before we were made, or took no time: says nothing */
	/* JCT from the trace's arrival, as the report counts it; shares from admission */
	life = (double)(now_ns - x->arrive_ns[j]);
	cost = jb->weight * (double)(now_ns - jb->arrival_ns) / (double)x->job_cp_ns[j];
	for (uint32_t k = 0; k < x->ncand; k++) {
		double share = (double)(x->charge_ns[k] - snap[k]) / life;

		x->num[k] = x->num[k] * x->decay + share * cost;
		x->den[k] = x->den[k] * x->decay + share;
	}
}

/* A choice point: puts the next untried, an exploration pick or the best in charge. */
static void ens_choose(struct policy *p, struct ens *x, uint64_t now_ns)
{
	uint32_t best = CP_NONE, to = x->active;
	const char *why = "untried";
	bool explore = false;

	x->since = 0;
	x->window_ns = now_ns;
	for (uint32_t k = 0; k < x->ncand && to == x->active; k++)
		if (!x->tried[k])
			to = k;
	if (to == x->active) {
		for (uint32_t k = 0; k < x->ncand; k++) {
			double e = ens_estimate(x, k);

			/* none yet (a window cut before any outcome): left to exploration */
			if (!isnan(e) && (best == CP_NONE || e < ens_estimate(x, best)))
				best = k;
		}
		if (best == CP_NONE)
			return;
		to = best;
		why = "best";
		if (x->ncand > 1 && loom_rng_uniform(&p->rng) < x->explore) {
			to = (uint32_t)loom_rng_below(&p->rng, x->ncand - 1);
			if (to >= best)
				to++;
			explore = true;
			why = "exploring";
		}
	}
	if (to != x->active)
		ens_switch(x, now_ns, to, explore, why);
}

/*
 * True when the current window has outlasted patience x window mean arrival
 * gaps. Not before the first job completion: until then every candidate
 * lags the arrivals, and cutting windows would only try them all unmeasured.
 */
static bool ens_overdue(const struct ens *x, uint64_t now_ns)
{
	double gap_ns;

	if (!(x->patience > 0) || x->narrivals < 2 || x->ndone == 0 || now_ns <= x->window_ns)
		return false;
	gap_ns = (double)(x->last_arrival_ns - x->first_arrival_ns) / (x->narrivals - 1);
	return (double)(now_ns - x->window_ns) > x->patience * x->window * gap_ns;
}

static int ens_init(struct policy *p, const struct cp_model *m)
{
	struct ens *x = calloc(1, sizeof(*x));
	size_t nj;
	int r;

	if (!x)
		return -ENOMEM;
	x->explore = p->opt[OPT_EXPLORE];
	x->patience = p->opt[OPT_PATIENCE];
	x->window = (uint32_t)p->opt[OPT_WINDOW];
	x->decay = exp2(-1.0 / p->opt[OPT_HALFLIFE]);
	x->njobs = m->njobs;
	nj = m->njobs ? m->njobs : 1;
	x->job_cp_ns = calloc(nj, sizeof(*x->job_cp_ns));
	x->arrive_ns = malloc(nj * sizeof(*x->arrive_ns));
	x->snap_ns = calloc(nj * ENS_NCAND, sizeof(*x->snap_ns));
	x->capsw = 2 * m->njobs + 1;
	x->sw = calloc(x->capsw, sizeof(*x->sw));
	if (!x->job_cp_ns || !x->arrive_ns || !x->snap_ns || !x->sw) {
		r = -ENOMEM;
		goto fail;
	}
	for (uint32_t j = 0; j < m->njobs; j++)
		x->arrive_ns[j] = CP_TIME_NEVER;
	if (!m->topo) {
		r = loom_err_set(&p->init_err, EINVAL, "the model is not bound to a fabric");
		goto fail;
	}
	r = cp_job_critical_paths_ns(m, x->job_cp_ns);
	if (r < 0)
		goto fail;

	for (uint32_t k = 0; k < ENS_NCAND; k++) {
		const char *spec = k ? heuristic_specs[k - 1] :
				       learned_specs[(size_t)p->opt[OPT_LEARNED]];
		struct loom_err err = {{0}};

		x->cand[k] = policy_new(spec, &p->params, m, &err);
		if (!x->cand[k]) {
			r = loom_negerrno();
			/* The learned slot fails when its weights are missing: say how to go on. */
			loom_err_set(&p->init_err, -r, "%s%s", err.msg,
				     k ? "" :
					 " (learned=cpf or learned=fifo runs without the model)");
			goto fail;
		}
		x->name[k] = k ? heuristic_specs[k - 1] :
				 learned_choices[(size_t)p->opt[OPT_LEARNED]];
		x->ncand++;
		if (x->cand[k]->decide_on_flow_done)
			p->decide_on_flow_done = true;
	}
	x->active = 0;
	x->tried[0] = true;
	p->priv = x;
	return 0;
fail:
	ens_free(x);
	return r;
}

static void ens_done(struct policy *p)
{
	if (p->priv)
		ens_free(p->priv);
	p->priv = NULL;
}

static void ens_on_event(struct policy *p, const struct cp_model *m, const struct cp_event *ev)
{
	struct ens *x = p->priv;

	ens_advance(x, ev->time_ns);
	for (uint32_t k = 0; k < x->ncand; k++)
		policy_on_event(x->cand[k], m, ev);
	if ((ev->type != CP_EV_JOB_ARRIVAL && ev->type != CP_EV_JOB_DONE) || ev->id >= x->njobs)
		return;
	if (ev->type == CP_EV_JOB_ARRIVAL) {
		x->arrive_ns[ev->id] = ev->time_ns;
		memcpy(&x->snap_ns[(size_t)ev->id * x->ncand], x->charge_ns,
		       x->ncand * sizeof(*x->charge_ns));
		if (x->narrivals++ == 0)
			x->first_arrival_ns = ev->time_ns;
		x->last_arrival_ns = ev->time_ns;
		if (ens_overdue(x, ev->time_ns))
			ens_choose(p, x, ev->time_ns);
	} else {
		ens_outcome(x, m, ev->id, ev->time_ns);
		x->ndone++;
		if (++x->since >= x->window || ens_overdue(x, ev->time_ns))
			ens_choose(p, x, ev->time_ns);
	}
}

static int ens_decide(struct policy *p, const struct cp_model *m, uint64_t now_ns,
		      struct policy_decision *d)
{
	struct ens *x = p->priv;

	ens_advance(x, now_ns);
	return policy_decide(x->cand[x->active], m, now_ns, d);
}

const struct policy_class policy_ensemble = {
	.name = "ensemble",
	.summary = "run-time choice among the learned policy and the best heuristics by measured "
		   "weighted slowdown",
	.clairvoyant = true,
	.opts = ens_opts,
	.nopts = sizeof(ens_opts) / sizeof(ens_opts[0]),
	.init = ens_init,
	.done = ens_done,
	.on_event = ens_on_event,
	.decide = ens_decide,
};

static const struct ens *ens_of(const struct policy *p)
{
	return p && p->cls == &policy_ensemble ? p->priv : NULL;
}

uint32_t policy_ensemble_candidates(const struct policy *p, const char **ret_names, uint32_t cap)
{
	const struct ens *x = ens_of(p);

	if (!x)
		return 0;
	for (uint32_t k = 0; k < x->ncand && k < cap; k++)
		ret_names[k] = x->name[k];
	return x->ncand;
}

const struct policy_ensemble_switch *policy_ensemble_switches(const struct policy *p,
							      uint32_t *ret_n)
{
	const struct ens *x = ens_of(p);

	*ret_n = x ? x->nsw : 0;
	return x ? x->sw : NULL;
}

void policy_ensemble_time_ns(const struct policy *p, uint64_t *ret_ns, uint32_t cap)
{
	const struct ens *x = ens_of(p);

	for (uint32_t k = 0; k < cap; k++)
		ret_ns[k] = x && k < x->ncand ? x->charge_ns[k] : 0;
}
