/* SPDX-License-Identifier: BSD-3-Clause */
#include "controlplane/learn/learn.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/grow.h"
#include "common/hash.h"
#include "common/log.h"
#include "controlplane/learn/learn_mpi.h"
#include "controlplane/policy/coflow_features.h"
#include "controlplane/policy/policy.h"

#define LEARN_MAX_THREADS  16
#define LEARN_MAX_ROLLOUTS 64
#define LEARN_MAX_WORKERS  64 /* MPI ranks x threads; imitation uses a rollout each */
#define STATE_MAGIC        "LOOMTRN"
#define STATE_VERSION      1u

/* The validation workloads' seeds: far from the small seeds benchmarks use. */
#define EVAL_SEED_BASE 1000001ULL

void learn_opts_default(struct learn_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->seed = 1;
	o->iters = 1400;
	o->imitate_iters = 400;
	o->teacher = "wsrjf";
	o->dagger = false;
	o->label_prob = 0.25;
	o->imitate_top = 0;
	o->agree_weight = 1;
	o->rollouts = 4;
	o->threads = 2;
	o->jobs_min = 6;
	o->jobs_max = 20;
	o->curriculum_iters = 800;
	o->load_min = 0.5;
	o->load_max = 0.9;
	o->weight_max = 4;
	o->train_decisions = 48;
	o->lr = 1e-3f;
	o->rl_lr = 3e-4f;
	o->clip_norm = 1.0f;
	o->entropy_start = 0.02;
	o->entropy_end = 0.001;
	o->entropy_iters = 800;
	o->eval_every = 50;
	o->eval_workloads = 4;
	o->eval_jobs = 30;
	o->cfg = gnn_config_default();
	o->cfg.nfeatures = POLICY_NFEATURES;
	o->cfg.prior = 0;
	o->cfg.prior_scale = 2.0f;
}

/* ---- recorded decisions -------------------------------------------------------------------- */

struct dec {
	uint64_t t_ns;
	uint32_t nnodes, njobs, nedges, nsched, nfeat;
	bool has_prior;    /* the residual prior follows the features in fpool */
	size_t xoff, uoff; /* features (+ prior) in fpool; job_start, edges, sched, perm in upool */
	double weight;     /* subsampling weight, 0 = not used for the gradient */
	double adv;
};

struct jobres {
	double arrival_s, finish_s, weight;
};

struct rollout {
	struct dec *dec;
	size_t ndec, dcap;
	float *fpool;
	size_t nf, fcap;
	uint32_t *upool;
	size_t nu, ucap;
	struct jobres *jobs;
	size_t jcap;
	uint32_t njobs;
	double wjct_sum_s; /* sum of weight x JCT */
	int rc;
};

static void rollout_clear(struct rollout *r)
{
	r->ndec = r->nf = r->nu = 0;
	r->njobs = 0;
	r->wjct_sum_s = 0;
	r->rc = 0;
}

static void rollout_done(struct rollout *r)
{
	free(r->dec);
	free(r->fpool);
	free(r->upool);
	free(r->jobs);
	memset(r, 0, sizeof(*r));
}

/* The hook's record(): copies the graph and the ranking (decisions with a choice only). */
static void record(void *ctx, const struct policy_graph *g, const uint32_t *perm, uint32_t n,
		   uint64_t now_ns)
{
	struct rollout *r = ctx;
	size_t nf = (size_t)g->nnodes * g->nfeat + (g->has_prior ? n : 0);
	size_t nu = (size_t)g->njobs + 1 + 2 * (size_t)g->nedges + 2 * (size_t)n;
	struct dec *d;
	uint32_t *u;

	if (n < 2 || r->rc < 0)
		return;
	if (loom_grow((void **)&r->dec, &r->dcap, r->ndec + 1, sizeof(*r->dec), 1024) < 0 ||
	    loom_grow((void **)&r->fpool, &r->fcap, r->nf + nf, sizeof(float), 1024) < 0 ||
	    loom_grow((void **)&r->upool, &r->ucap, r->nu + nu, sizeof(uint32_t), 1024) < 0) {
		r->rc = -ENOMEM;
		return;
	}
	d = &r->dec[r->ndec++];
	*d = (struct dec){.t_ns = now_ns,
			  .nnodes = g->nnodes,
			  .njobs = g->njobs,
			  .nedges = g->nedges,
			  .nsched = n,
			  .nfeat = g->nfeat,
			  .has_prior = g->has_prior,
			  .xoff = r->nf,
			  .uoff = r->nu};
	memcpy(r->fpool + r->nf, g->x, (size_t)g->nnodes * g->nfeat * sizeof(float));
	if (g->has_prior)
		memcpy(r->fpool + r->nf + (size_t)g->nnodes * g->nfeat, g->prior,
		       n * sizeof(float));
	r->nf += nf;
	u = r->upool + r->nu;
	memcpy(u, g->job_start, ((size_t)g->njobs + 1) * sizeof(uint32_t));
	u += g->njobs + 1;
	memcpy(u, g->edges, 2 * (size_t)g->nedges * sizeof(uint32_t));
	u += 2 * (size_t)g->nedges;
	memcpy(u, g->sched, n * sizeof(uint32_t));
	u += n;
	memcpy(u, perm, n * sizeof(uint32_t));
	r->nu += nu;
}

/* The decision's batch, schedulable nodes, ranking and prior (NULL without one). */
static void dec_batch(const struct rollout *r, const struct dec *d, struct gnn_batch *b,
		      const uint32_t **ret_sched, const uint32_t **ret_perm,
		      const float **ret_prior)
{
	const uint32_t *u = r->upool + d->uoff;

	*ret_prior = d->has_prior ? r->fpool + d->xoff + (size_t)d->nnodes * d->nfeat : NULL;
	b->nnodes = d->nnodes;
	b->nfeatures = d->nfeat;
	b->features = r->fpool + d->xoff;
	b->njobs = d->njobs;
	b->job_start = u;
	u += d->njobs + 1;
	b->nedges = d->nedges;
	b->edges = u;
	u += 2 * (size_t)d->nedges;
	*ret_sched = u;
	*ret_perm = u + d->nsched;
}

/* ---- the trainer ------------------------------------------------------------------------- */

struct learn;

struct worker {
	struct learn *L;
	uint32_t id; /* global: rank x threads per rank + thread */
	struct gnn_model *model;
	struct cp_model *m; /* the current episode (this worker's copy) */
	uint64_t m_seed;    /* the seed it was made from */
	uint32_t m_jobs;
	double m_load;
	float *scores, *dlogp, *dent, *dscores, *work;
	size_t cap;
	/* phase results */
	double loss, entropy;
	uint32_t ntrained;
	int rc;
	struct loom_err err;
};

enum job_kind {
	JOB_IMITATE,
	JOB_ROLLOUT,
	JOB_TRAIN,
	JOB_EVAL,
	JOB_EVAL_BASE,
};

struct learn {
	const struct learn_opts *o;
	struct worker w[LEARN_MAX_THREADS]; /* this rank's */
	struct rollout ro[LEARN_MAX_ROLLOUTS];
	uint32_t nthreads, nro;
	/* MPI: worker g (0..nworkers-1) is thread g % nthreads of rank g / nthreads */
	uint32_t rank, nranks, nworkers;
	void *xbuf, *gbuf; /* exchange buffers (MPI only) */
	size_t xcap, gcap;
	/* the current iteration */
	uint32_t iter;
	uint64_t ep_seed;
	uint32_t ep_jobs;
	double ep_load;
	double beta;   /* entropy weight */
	double norm_n; /* decisions chosen for the gradient (see train_rollout) */
	enum job_kind kind;
	/* evaluation */
	struct cp_model **eval_m; /* eval_workloads models, bound */
	double *eval_best_s;      /* best heuristic's avg wJCT per workload */
	double *eval_base_s;      /* eval_setup()'s: each heuristic's, workload by workload */
	double *eval_gnn_s;
	/* the run, carried from one iteration to the next */
	struct gnn_adam adam;
	double ema, best, last_eval; /* avg wJCT running average; evaluation ratios */
	double t0_s;                 /* the run's start, monotonic clock */
	uint32_t start, skipped;     /* the first iteration (resumed); updates skipped */
	FILE *csv;                   /* learning.csv: rank 0, with an output directory */
};

/* A seed from two numbers: splitmix64's step on a, then its finaliser (common/hash.h). */
static uint64_t mix(uint64_t a, uint64_t b)
{
	return loom_hash_u64(a * 0x9E3779B97F4A7C15ULL + b + 0x632BE59BD9B4E019ULL);
}

static struct cp_model *make_episode(const struct learn_opts *o, uint64_t seed, uint32_t njobs,
				     double load, struct loom_err *err)
{
	struct sim_gen_params gp;
	struct cp_model *m;

	if (o->episode) {
		m = o->episode(o->episode_ctx, seed, njobs, load, err);
	} else {
		sim_gen_params_default(&gp);
		gp.njobs = njobs;
		gp.load = load;
		gp.seed = seed;
		gp.weight_max = o->weight_max;
		m = sim_gen(&gp, o->dags, o->fb, o->topo, err);
	}
	if (!m)
		return NULL;
	if (cp_model_bind(m, o->topo) < 0) {
		loom_err_set(err, EINVAL, "episode seed %llu: hosts beyond the fabric",
			     (unsigned long long)seed);
		cp_model_free(m);
		errno = EINVAL;
		return NULL;
	}
	return m;
}

static double avg_wjct_s(const struct cp_model *m)
{
	double s = 0;

	for (uint32_t j = 0; j < m->njobs; j++)
		s += m->jobs[j].weight * (double)(m->jobs[j].finish_ns - m->jobs[j].arrival_ns) *
		     1e-9;
	return m->njobs ? s / m->njobs : 0;
}

/* Makes sure worker w holds the current episode. */
static int worker_episode(struct worker *w)
{
	struct learn *L = w->L;

	if (w->m && w->m_seed == L->ep_seed && w->m_jobs == L->ep_jobs && w->m_load == L->ep_load)
		return 0;
	cp_model_free(w->m);
	w->m = make_episode(L->o, L->ep_seed, L->ep_jobs, L->ep_load, &w->err);
	if (!w->m)
		return -(errno ? errno : EINVAL);
	w->m_seed = L->ep_seed;
	w->m_jobs = L->ep_jobs;
	w->m_load = L->ep_load;
	return 0;
}

/*
 * Runs model m under policy spec: "gnn" on w's model, with the hook (or
 * greedy without), or a heuristic (hook NULL).
 */
static int run_policy(struct worker *w, struct cp_model *m, const char *spec,
		      const struct policy_gnn_hook *hook)
{
	struct policy_params pp = {
		.classes = 8, .seed = 1, .gnn_model = w->model, .gnn_rates = w->L->o->gnn_rates};
	struct sim_opts so;
	struct sim_stats st;
	struct policy *p;
	int r;

	sim_opts_default(&so);
	p = policy_new(spec, &pp, m, &w->err);
	if (!p)
		return -(errno ? errno : EINVAL);
	if (hook)
		policy_gnn_set_hook(p, hook);
	r = sim_run(m, p, &so, &st, &w->err);
	policy_free(p);
	return r;
}

/* Runs model m under the gnn policy on w's model, with the hook (or greedy without). */
static int run_episode(struct worker *w, struct cp_model *m, const struct policy_gnn_hook *hook)
{
	return run_policy(w, m, "gnn", hook);
}

static void rollout_results(struct rollout *r, const struct cp_model *m)
{
	if (loom_grow((void **)&r->jobs, &r->jcap, m->njobs, sizeof(*r->jobs), 1024) < 0) {
		r->rc = -ENOMEM;
		return;
	}
	r->njobs = m->njobs;
	r->wjct_sum_s = 0;
	for (uint32_t j = 0; j < m->njobs; j++) {
		const struct cp_job *jb = &m->jobs[j];

		r->jobs[j] = (struct jobres){(double)jb->arrival_ns * 1e-9,
					     (double)jb->finish_ns * 1e-9, jb->weight};
		r->wjct_sum_s += jb->weight * (r->jobs[j].finish_s - r->jobs[j].arrival_s);
	}
}

static int do_rollout(struct worker *w, uint32_t k)
{
	struct learn *L = w->L;
	struct rollout *r = &L->ro[k];
	struct gnn_rng rng;
	struct policy_gnn_hook hook = {.record = record, .ctx = r, .sample_rng = &rng};
	int rc;

	rollout_clear(r);
	gnn_rng_seed(&rng, mix(mix(L->o->seed, L->iter), 1000 + k));
	rc = worker_episode(w);
	if (rc < 0)
		return rc;
	rc = run_episode(w, w->m, &hook);
	if (rc < 0)
		return rc;
	rollout_results(r, w->m);
	return r->rc;
}

/*
 * One imitation episode: the teacher drives it and its rankings are
 * recorded; with dagger the model drives it (greedy) and the teacher labels
 * a share of the model's states. A teacher that runs the gnn (lookahead on
 * base=gnn) runs this worker's model: expert iteration.
 */
static int do_imitate(struct worker *w)
{
	struct learn *L = w->L;
	struct rollout *r = &L->ro[w->id];
	struct policy_params pp = {
		.classes = 8, .seed = 1, .gnn_model = w->model, .gnn_rates = w->L->o->gnn_rates};
	struct gnn_rng lrng;
	struct policy_gnn_hook hook = {.record = record,
				       .ctx = r,
				       .dagger = L->o->dagger,
				       .label_prob = L->o->label_prob,
				       .label_rng = &lrng};
	uint64_t seed = mix(mix(L->o->seed, L->iter), 2000 + w->id);
	struct cp_model *m;
	int rc;

	gnn_rng_seed(&lrng, mix(mix(L->o->seed, L->iter), 4000 + w->id));
	rollout_clear(r);
	m = make_episode(L->o, seed, L->ep_jobs, L->ep_load, &w->err);
	if (!m)
		return -(errno ? errno : EINVAL);
	hook.teacher = policy_new(L->o->teacher, &pp, m, &w->err);
	if (!hook.teacher) {
		cp_model_free(m);
		return -(errno ? errno : EINVAL);
	}
	rc = run_episode(w, m, &hook);
	policy_free(hook.teacher);
	if (rc == 0)
		rollout_results(r, m);
	cp_model_free(m);
	return rc < 0 ? rc : r->rc;
}

static int ensure_scratch(struct worker *w, size_t n)
{
	if (n <= w->cap)
		return 0;
	free(w->scores);
	free(w->dlogp);
	free(w->dent);
	free(w->dscores);
	free(w->work);
	w->scores = malloc(n * sizeof(float));
	w->dlogp = malloc(n * sizeof(float));
	w->dent = malloc(n * sizeof(float));
	w->dscores = malloc(n * sizeof(float));
	w->work = malloc(n * sizeof(float));
	w->cap = (w->scores && w->dlogp && w->dent && w->dscores && w->work) ? n : 0;
	return w->cap ? 0 : -ENOMEM;
}

/*
 * Would the model's greedy order (scores, highest first) put the teacher's
 * first `top` places (0: all) first, in the teacher's order?
 */
static bool greedy_agrees(const float *scores, uint32_t n, const uint32_t *perm, uint32_t top)
{
	float rest = -INFINITY;

	if (top == 0 || top > n)
		top = n;
	for (uint32_t k = 0; k + 1 < top; k++)
		if (!(scores[perm[k]] > scores[perm[k + 1]]))
			return false;
	for (uint32_t k = top; k < n; k++)
		rest = fmaxf(rest, scores[perm[k]]);
	return scores[perm[top - 1]] > rest;
}

/*
 * Gradient of rollout k's chosen decisions into w's model, N = L->norm_n
 * decisions chosen over all rollouts, each with weight ndec / chosen (its
 * rollout's decisions over those chosen from it):
 *   imitation:     loss = sum weight x -log P(teacher's ranking) / N
 *   reinforcement: loss = sum [weight x -adv x log P(sampled ranking)
 *                              - beta x first-choice entropy] / N
 * The weighted sums estimate per-episode sums over every decision (the
 * REINFORCE objective sums over an episode's steps), so with W decisions
 * chosen per rollout the policy term is the per-episode sum / W averaged
 * over rollouts, while the entropy bonus is a mean per decision: its
 * relative weight falls as episodes get longer, on top of its annealing.
 */
static int train_rollout(struct worker *w, uint32_t k)
{
	struct learn *L = w->L;
	struct rollout *r = &L->ro[k];
	struct gnn_err gerr = {{0}};
	bool imitate = L->kind == JOB_TRAIN && L->beta < 0;

	for (size_t i = 0; i < r->ndec; i++) {
		struct dec *d = &r->dec[i];
		const uint32_t *sched, *perm;
		const float *prior;
		struct gnn_batch b;
		double logp, h = 0, c;
		uint32_t n = d->nsched;
		int rc;

		if (d->weight == 0)
			continue;
		if (ensure_scratch(w, n) < 0)
			return -ENOMEM;
		dec_batch(r, d, &b, &sched, &perm, &prior);
		rc = gnn_forward(w->model, &b, sched, n, w->scores, &gerr);
		for (uint32_t q = 0; rc == 0 && prior && q < n; q++)
			w->scores[q] += prior[q];
		if (rc == 0)
			rc = gnn_pl_logprob_top(w->scores, n, perm, imitate ? L->o->imitate_top : 0,
						&logp, w->dlogp, &gerr);
		if (rc == 0)
			rc = gnn_pl_entropy(w->scores, n, NULL, GNN_PL_ENTROPY_FIRST, NULL, &h,
					    w->dent, &gerr);
		if (rc < 0) {
			loom_err_set(&w->err, -rc, "training step: %s", gerr.msg);
			return rc;
		}
		if (imitate) {
			c = d->weight / L->norm_n;
			if (L->o->agree_weight < 1 &&
			    greedy_agrees(w->scores, n, perm, L->o->imitate_top))
				c *= L->o->agree_weight;
			for (uint32_t q = 0; q < n; q++)
				w->dscores[q] = (float)(-c * w->dlogp[q]);
			w->loss += -logp * c;
		} else {
			c = d->weight * d->adv / L->norm_n;
			for (uint32_t q = 0; q < n; q++)
				w->dscores[q] = (float)(-c * w->dlogp[q] -
							L->beta / L->norm_n * w->dent[q]);
			w->loss += -c * logp;
		}
		w->entropy += h;
		w->ntrained++;
		rc = gnn_backward(w->model, w->dscores, n, &gerr);
		if (rc < 0) {
			loom_err_set(&w->err, -rc, "training step: %s", gerr.msg);
			return rc;
		}
	}
	return 0;
}

/* The heuristics a validation workload's best is taken over. */
static const char *const eval_heur[] = {"wsrjf", "sincronia", "sebf"};
#define EVAL_NHEUR (sizeof(eval_heur) / sizeof(eval_heur[0]))
_Static_assert(EVAL_NHEUR == 3, "eval_setup()'s log line names three heuristics");

/* Validation workload i's load: 0.7 and 0.9 alternating. */
static double eval_load(uint32_t i)
{
	return i % 2 ? 0.9 : 0.7;
}

/*
 * Heuristic k % EVAL_NHEUR on validation workload k / EVAL_NHEUR, on the
 * worker's own copy of the workload (a replay gives the same result on any
 * copy), so that every (workload, heuristic) is a job of its own.
 */
static int do_eval_base(struct worker *w, uint32_t k)
{
	const struct learn_opts *o = w->L->o;
	uint32_t i = k / EVAL_NHEUR;
	struct cp_model *m;
	int rc;

	m = make_episode(o, EVAL_SEED_BASE + i, o->eval_jobs, eval_load(i), &w->err);
	if (!m)
		return -(errno ? errno : EINVAL);
	rc = run_policy(w, m, eval_heur[k % EVAL_NHEUR], NULL);
	if (rc == 0)
		w->L->eval_base_s[k] = avg_wjct_s(m);
	cp_model_free(m);
	return rc;
}

static int do_eval(struct worker *w, uint32_t i)
{
	struct learn *L = w->L;
	int rc = run_episode(w, L->eval_m[i], NULL);

	if (rc == 0)
		L->eval_gnn_s[i] = avg_wjct_s(L->eval_m[i]);
	return rc;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct learn *L = w->L;
	int rc = 0;

	w->loss = w->entropy = 0;
	w->ntrained = 0;
	switch (L->kind) {
	case JOB_IMITATE:
		rc = do_imitate(w);
		break;
	case JOB_ROLLOUT:
		for (uint32_t k = w->id; k < L->nro && rc == 0; k += L->nworkers)
			rc = do_rollout(w, k);
		break;
	case JOB_TRAIN:
		gnn_zero_grad(w->model);
		for (uint32_t k = w->id; k < L->nro && rc == 0; k += L->nworkers)
			rc = train_rollout(w, k);
		break;
	case JOB_EVAL:
		for (uint32_t i = w->id; i < L->o->eval_workloads && rc == 0; i += L->nworkers)
			rc = do_eval(w, i);
		break;
	case JOB_EVAL_BASE:
		for (uint32_t k = w->id; k < L->o->eval_workloads * EVAL_NHEUR && rc == 0;
		     k += L->nworkers)
			rc = do_eval_base(w, k);
		break;
	}
	w->rc = rc;
	return NULL;
}

/*
 * Under MPI (more than one rank): every rank's rc agrees (learn_mpi_agree),
 * so that no rank goes on into a collective the others have left. With one
 * rank: rc.
 */
static int agree(const struct learn *L, int rc, struct loom_err *err)
{
	return L->nranks > 1 ? learn_mpi_agree(rc, err) : rc;
}

/* Runs the current job kind on this rank's workers; the first error (of any rank) wins. */
static int run_workers(struct learn *L, struct loom_err *err)
{
	pthread_t tid[LEARN_MAX_THREADS];
	bool started[LEARN_MAX_THREADS] = {false};

	for (uint32_t t = 1; t < L->nthreads; t++)
		started[t] = pthread_create(&tid[t], NULL, worker_main, &L->w[t]) == 0;
	worker_main(&L->w[0]);
	for (uint32_t t = 1; t < L->nthreads; t++) {
		if (started[t])
			pthread_join(tid[t], NULL);
		else
			worker_main(&L->w[t]);
	}
	for (uint32_t t = 0; t < L->nthreads; t++)
		if (L->w[t].rc < 0) {
			loom_err_set(err, -L->w[t].rc, "%s",
				     L->w[t].err.msg[0] ? L->w[t].err.msg : strerror(-L->w[t].rc));
			return agree(L, L->w[t].rc, err);
		}
	return agree(L, 0, err);
}

enum sync_kind {
	SYNC_SUM_GRADS, /* worker 0's gradient += every other worker's, in worker order */
	SYNC_PARAMS,    /* every other worker's parameters = worker 0's */
};

static void sync_workers(struct learn *L, enum sync_kind kind)
{
	uint32_t np = gnn_param_count(L->w[0].model);

	for (uint32_t t = 1; t < L->nthreads; t++)
		for (uint32_t i = 0; i < np; i++) {
			struct gnn_param a, b;
			size_t n;

			gnn_param_get(L->w[0].model, i, &a);
			gnn_param_get(L->w[t].model, i, &b);
			n = (size_t)a.rows * a.cols;
			if (kind == SYNC_PARAMS) {
				memcpy(b.value, a.value, n * sizeof(float));
				continue;
			}
			for (size_t q = 0; q < n; q++)
				a.grad[q] += b.grad[q];
		}
}

/* ---- exchanges between MPI ranks (learn_mpi.h; only with more than one rank) ------------- */

/* m's parameter values (grad: gradients) into dst, in parameter order; unpack: the reverse. */
static void params_pack(struct gnn_model *m, bool grad, float *dst)
{
	uint32_t np = gnn_param_count(m);

	for (uint32_t i = 0; i < np; i++) {
		struct gnn_param p;
		size_t n;

		gnn_param_get(m, i, &p);
		n = (size_t)p.rows * p.cols;
		memcpy(dst, grad ? p.grad : p.value, n * sizeof(float));
		dst += n;
	}
}

static void params_unpack(struct gnn_model *m, const float *src)
{
	uint32_t np = gnn_param_count(m);

	for (uint32_t i = 0; i < np; i++) {
		struct gnn_param p;
		size_t n;

		gnn_param_get(m, i, &p);
		n = (size_t)p.rows * p.cols;
		memcpy(p.value, src, n * sizeof(float));
		src += n;
	}
}

/* The rank whose worker runs rollout (or evaluation workload) k. */
static uint32_t owner_rank(const struct learn *L, uint32_t k)
{
	return (k % L->nworkers) / L->nthreads;
}

/*
 * After the rollouts (or imitation episodes): every rank gets every
 * rollout's job results, its weighted JCT sum and its decisions' times, so
 * that each computes the same subsample, baselines and advantages
 * (advantages() reads only those of another rank's rollout). The
 * decisions' graphs stay with the rank that made them: each rank trains on
 * its own rollouts.
 */
static int exchange_rollouts(struct learn *L, struct loom_err *err)
{
	for (uint32_t k = 0; k < L->nro; k++) {
		struct rollout *r = &L->ro[k];
		uint32_t owner = owner_rank(L, k);
		bool mine = owner == L->rank;
		uint64_t hdr[3] = {0}, *t_ns;
		int rc = 0;

		if (mine) {
			hdr[0] = r->njobs;
			hdr[1] = r->ndec;
			memcpy(&hdr[2], &r->wjct_sum_s, sizeof(double));
		}
		learn_mpi_bcast(hdr, sizeof(hdr), owner);
		if (!mine) {
			rollout_clear(r);
			if (loom_grow((void **)&r->jobs, &r->jcap, hdr[0], sizeof(*r->jobs), 1024) <
				    0 ||
			    loom_grow((void **)&r->dec, &r->dcap, hdr[1], sizeof(*r->dec), 1024) <
				    0)
				rc = loom_err_set(err, ENOMEM, "out of memory");
			else {
				r->njobs = (uint32_t)hdr[0];
				r->ndec = hdr[1];
				memcpy(&r->wjct_sum_s, &hdr[2], sizeof(double));
			}
		}
		if (rc == 0 &&
		    loom_grow(&L->xbuf, &L->xcap, hdr[1] * sizeof(uint64_t) + 1, 1, 1024) < 0)
			rc = loom_err_set(err, ENOMEM, "out of memory");
		rc = agree(L, rc, err);
		if (rc < 0)
			return rc;
		t_ns = L->xbuf;
		if (mine)
			for (size_t i = 0; i < r->ndec; i++)
				t_ns[i] = r->dec[i].t_ns;
		learn_mpi_bcast(r->jobs, hdr[0] * sizeof(*r->jobs), owner);
		learn_mpi_bcast(t_ns, hdr[1] * sizeof(uint64_t), owner);
		if (!mine)
			for (size_t i = 0; i < r->ndec; i++)
				r->dec[i] = (struct dec){.t_ns = t_ns[i]};
	}
	return 0;
}

/*
 * SYNC_SUM_GRADS over the ranks: rank 0 receives every worker's gradient
 * separately and adds them into worker 0's in global worker order, the
 * very additions sync_workers() makes in one process with as many workers,
 * so the sum is bit for bit the same.
 */
static int mpi_sum_grads(struct learn *L, struct loom_err *err)
{
	struct gnn_model *m0 = L->w[0].model;
	size_t n = gnn_nparams(m0), per = L->nthreads * n * sizeof(float);
	uint32_t np = gnn_param_count(m0);
	int rc = 0;

	if (loom_grow(&L->xbuf, &L->xcap, per, 1, 1024) < 0 ||
	    (L->rank == 0 && loom_grow(&L->gbuf, &L->gcap, L->nranks * per, 1, 1024) < 0))
		rc = loom_err_set(err, ENOMEM, "out of memory");
	rc = agree(L, rc, err);
	if (rc < 0)
		return rc;
	for (uint32_t t = 0; t < L->nthreads; t++)
		params_pack(L->w[t].model, true, (float *)L->xbuf + t * n);
	rc = learn_mpi_gather(L->xbuf, per, L->gbuf, 0);
	if (rc < 0)
		return loom_err_set(err, -rc, "a model of %zu parameters is too large for MPI", n);
	if (L->rank != 0)
		return 0;
	for (uint32_t g = 1; g < L->nworkers; g++) {
		const float *src = (const float *)L->gbuf + g * n;

		for (uint32_t i = 0; i < np; i++) {
			struct gnn_param a;
			size_t len;

			gnn_param_get(m0, i, &a);
			len = (size_t)a.rows * a.cols;
			for (size_t q = 0; q < len; q++)
				a.grad[q] += src[q];
			src += len;
		}
	}
	return 0;
}

/* Rank 0's worker 0 parameters into every rank's worker 0 (SYNC_PARAMS does the rest). */
static int mpi_bcast_params(struct learn *L, struct loom_err *err)
{
	size_t n = gnn_nparams(L->w[0].model);
	int rc = 0;

	if (loom_grow(&L->xbuf, &L->xcap, n * sizeof(float), 1, 1024) < 0)
		rc = loom_err_set(err, ENOMEM, "out of memory");
	rc = agree(L, rc, err);
	if (rc < 0)
		return rc;
	if (L->rank == 0)
		params_pack(L->w[0].model, false, L->xbuf);
	rc = learn_mpi_bcast(L->xbuf, n * sizeof(float), 0);
	if (rc < 0)
		return loom_err_set(err, -rc, "a model of %zu parameters is too large for MPI", n);
	if (L->rank != 0)
		params_unpack(L->w[0].model, L->xbuf);
	return 0;
}

/*
 * The workers' loss, entropy and decision counts, summed in global worker
 * order (as one process sums its threads'), on every rank.
 */
static int mpi_worker_stats(struct learn *L, double *loss, double *ent, uint32_t *ntr,
			    struct loom_err *err)
{
	double mine[3 * LEARN_MAX_THREADS], *all;
	int rc = 0;

	if (loom_grow(&L->xbuf, &L->xcap, 3 * L->nworkers * sizeof(double), 1, 1024) < 0)
		rc = loom_err_set(err, ENOMEM, "out of memory");
	rc = agree(L, rc, err);
	if (rc < 0)
		return rc;
	for (uint32_t t = 0; t < L->nthreads; t++) {
		mine[3 * t] = L->w[t].loss;
		mine[3 * t + 1] = L->w[t].entropy;
		mine[3 * t + 2] = L->w[t].ntrained;
	}
	all = L->xbuf;
	learn_mpi_allgather(mine, 3 * L->nthreads * sizeof(double), all);
	for (uint32_t g = 0; g < L->nworkers; g++) {
		*loss += all[3 * g];
		*ent += all[3 * g + 1];
		*ntr += (uint32_t)all[3 * g + 2];
	}
	return 0;
}

/* Return from time t_s on of rollout r: -sum_j w_j (finish_j - max(arrival_j, t))+. */
static double return_from(const struct rollout *r, double t_s)
{
	double s = 0;

	for (uint32_t j = 0; j < r->njobs; j++) {
		const struct jobres *jr = &r->jobs[j];
		double start = jr->arrival_s > t_s ? jr->arrival_s : t_s;

		if (jr->finish_s > start)
			s -= jr->weight * (jr->finish_s - start);
	}
	return s;
}

/* Marks up to o->train_decisions decisions of r (a seeded choice), weight ndec / chosen. */
static uint32_t subsample(const struct learn *L, struct rollout *r, uint64_t seed)
{
	uint32_t want = L->o->train_decisions, chosen = 0;
	struct gnn_rng rng;

	if (want == 0 || want >= r->ndec) {
		for (size_t i = 0; i < r->ndec; i++)
			r->dec[i].weight = 1;
		return (uint32_t)r->ndec;
	}
	gnn_rng_seed(&rng, seed);
	for (size_t i = 0; i < r->ndec; i++)
		r->dec[i].weight = 0;
	/* selection sampling (Knuth's algorithm S): exactly `want`, in order */
	for (size_t i = 0; i < r->ndec && chosen < want; i++)
		if ((double)(r->ndec - i) * gnn_rng_uniform(&rng) < (double)(want - chosen)) {
			r->dec[i].weight = (double)r->ndec / want;
			chosen++;
		}
	return chosen;
}

/* Advantages of every chosen decision (time-based baseline), normalised; returns their count. */
static double advantages(struct learn *L)
{
	double sum = 0, sq = 0, n = 0, sd;

	for (uint32_t k = 0; k < L->nro; k++) {
		struct rollout *r = &L->ro[k];

		subsample(L, r, mix(mix(L->o->seed, L->iter), 3000 + k));
		for (size_t i = 0; i < r->ndec; i++) {
			struct dec *d = &r->dec[i];
			double t = (double)d->t_ns * 1e-9, b = 0;

			if (d->weight == 0)
				continue;
			for (uint32_t q = 0; q < L->nro; q++)
				b += return_from(&L->ro[q], t);
			b /= L->nro;
			d->adv = return_from(r, t) - b;
			sum += d->adv;
			sq += d->adv * d->adv;
			n++;
		}
	}
	sd = n > 1 ? sqrt(fmax(sq / n - (sum / n) * (sum / n), 0)) : 0;
	for (uint32_t k = 0; k < L->nro; k++)
		for (size_t i = 0; i < L->ro[k].ndec; i++)
			L->ro[k].dec[i].adv = sd > 0 ? L->ro[k].dec[i].adv / sd : 0;
	return n;
}

/* ---- checkpoints -------------------------------------------------------------------------- */

void learn_state_done(struct learn_state *s)
{
	free(s->mom1);
	free(s->mom2);
	memset(s, 0, sizeof(*s));
}

struct rd {
	const uint8_t *p;
	size_t len, off;
};

static bool rd_get(struct rd *r, void *out, size_t n)
{
	if (r->len - r->off < n)
		return false;
	memcpy(out, r->p + r->off, n);
	r->off += n;
	return true;
}

int learn_state_parse(const void *buf, size_t len, const char *name, struct learn_state *ret,
		      struct loom_err *err)
{
	struct rd r = {.p = buf, .len = len};
	struct learn_state s = {0};
	char magic[8];
	uint32_t ver, threads, next;
	uint64_t seed, step, n, sum;

	if (!rd_get(&r, magic, 8) || memcmp(magic, STATE_MAGIC, 8) != 0)
		return loom_err_set(err, EINVAL, "%s: not a loom-train state file (bad magic)",
				    name);
	if (!rd_get(&r, &ver, 4) || ver != STATE_VERSION)
		return loom_err_set(err, EINVAL, "%s: unsupported state version", name);
	if (!rd_get(&r, &next, 4) || !rd_get(&r, &seed, 8) || !rd_get(&r, &threads, 4) ||
	    !rd_get(&r, &s.ema_s, 8) || !rd_get(&r, &s.best_ratio, 8) || !rd_get(&r, &step, 8) ||
	    !rd_get(&r, &n, 8))
		return loom_err_set(err, EINVAL, "%s: truncated header", name);
	if (n == 0 || n > (r.len - r.off) / 8)
		return loom_err_set(err, EINVAL, "%s: %llu moments do not fit in the file", name,
				    (unsigned long long)n);
	if (r.len - r.off != 8 * n + 8)
		return loom_err_set(err, EINVAL, "%s: size does not match %llu moments", name,
				    (unsigned long long)n);
	memcpy(&sum, r.p + r.len - 8, 8);
	if (loom_hash_bytes(r.p, r.len - 8) != sum)
		return loom_err_set(err, EINVAL, "%s: checksum mismatch (corrupt file)", name);
	if (!isfinite(s.ema_s) || isnan(s.best_ratio) || threads == 0 ||
	    threads > LEARN_MAX_WORKERS || next > 1000000000u)
		return loom_err_set(err, EINVAL, "%s: bad field values", name);
	s.mom1 = malloc(n * sizeof(float));
	s.mom2 = malloc(n * sizeof(float));
	if (!s.mom1 || !s.mom2) {
		learn_state_done(&s);
		return loom_err_set(err, ENOMEM, "%s: out of memory", name);
	}
	rd_get(&r, s.mom1, n * 4);
	rd_get(&r, s.mom2, n * 4);
	for (size_t i = 0; i < n; i++)
		if (!isfinite(s.mom1[i]) || !isfinite(s.mom2[i]) || s.mom2[i] < 0) {
			learn_state_done(&s);
			return loom_err_set(err, EINVAL, "%s: moment %zu is not a finite value",
					    name, i);
		}
	s.next_iter = next;
	s.seed = seed;
	s.threads = threads;
	s.adam_step = step;
	s.n = n;
	*ret = s;
	return 0;
}

static int write_all(FILE *f, const void *p, size_t n, uint64_t *h)
{
	*h = loom_hash_bytes_from(*h, p, n);
	return fwrite(p, 1, n, f) == n ? 0 : -EIO;
}

/*
 * Closes f, written as tmp, and renames it over path when everything went
 * well (rc == 0), so readers see the old file or the new one, never half;
 * otherwise removes tmp. Returns 0 or -errno.
 */
static int replace_with_tmp(FILE *f, int rc, const char *tmp, const char *path)
{
	if (fclose(f) != 0 && rc == 0)
		rc = -EIO;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc < 0)
		remove(tmp);
	return rc;
}

static int state_save(const char *path, const struct learn_state *s, struct loom_err *err)
{
	char tmp[4200];
	uint64_t h = LOOM_HASH_BYTES_INIT, n = s->n;
	uint32_t ver = STATE_VERSION;
	FILE *f;
	int rc = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "wb");
	if (!f)
		return loom_err_set(err, errno, "%s: %s", tmp, strerror(errno));
	rc |= write_all(f, STATE_MAGIC "", 8, &h);
	rc |= write_all(f, &ver, 4, &h);
	rc |= write_all(f, &s->next_iter, 4, &h);
	rc |= write_all(f, &s->seed, 8, &h);
	rc |= write_all(f, &s->threads, 4, &h);
	rc |= write_all(f, &s->ema_s, 8, &h);
	rc |= write_all(f, &s->best_ratio, 8, &h);
	rc |= write_all(f, &s->adam_step, 8, &h);
	rc |= write_all(f, &n, 8, &h);
	rc |= write_all(f, s->mom1, n * 4, &h);
	rc |= write_all(f, s->mom2, n * 4, &h);
	if (fwrite(&h, 1, 8, f) != 8)
		rc = -EIO;
	rc = replace_with_tmp(f, rc, tmp, path);
	if (rc < 0)
		return loom_err_set(err, -rc, "%s: cannot write: %s", path, strerror(-rc));
	return 0;
}

static int checkpoint(struct learn *L, uint32_t next_iter, double ema, double best,
		      struct loom_err *err)
{
	struct gnn_adam_state as;
	struct learn_state s;
	struct gnn_err gerr = {{0}};
	char path[4096];
	int rc;

	if (!L->o->out_dir || L->rank != 0)
		return 0;
	gnn_adam_state(L->w[0].model, &as);
	s = (struct learn_state){.next_iter = next_iter,
				 .seed = L->o->seed,
				 .threads = L->nworkers,
				 .ema_s = isfinite(ema) ? ema : 0,
				 .best_ratio = best,
				 .adam_step = *as.step,
				 .n = as.n,
				 .mom1 = as.mom1,
				 .mom2 = as.mom2};
	snprintf(path, sizeof(path), "%s/checkpoint.lgw", L->o->out_dir);
	rc = gnn_save(L->w[0].model, path, &gerr);
	if (rc < 0)
		return loom_err_from(err, -rc, gerr.msg);
	snprintf(path, sizeof(path), "%s/checkpoint.state", L->o->out_dir);
	return state_save(path, &s, err);
}

static int resume(struct learn *L, double *ema, double *best, uint32_t *next, struct loom_err *err)
{
	struct gnn_err gerr = {{0}};
	struct gnn_adam_state as;
	struct learn_state s;
	char path[4096];
	FILE *f;
	long len;
	uint8_t *buf;
	int rc;

	snprintf(path, sizeof(path), "%s/checkpoint.state", L->o->out_dir);
	f = fopen(path, "rb");
	if (!f)
		return loom_err_set(err, errno, "--resume: %s: %s", path, strerror(errno));
	if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		return loom_err_set(err, EIO, "--resume: %s: cannot read", path);
	}
	buf = malloc((size_t)len + 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		free(buf);
		fclose(f);
		return loom_err_set(err, EIO, "--resume: %s: cannot read", path);
	}
	fclose(f);
	rc = learn_state_parse(buf, (size_t)len, path, &s, err);
	free(buf);
	if (rc < 0)
		return rc;
	gnn_adam_state(L->w[0].model, &as);
	if (s.seed != L->o->seed || s.threads != L->nworkers || s.n != as.n) {
		loom_err_set(err, EINVAL,
			     "--resume: %s was made with --seed %llu, %u workers (MPI ranks x "
			     "--threads) and %zu parameters; this run has --seed %llu, %u workers "
			     "and %zu",
			     path, (unsigned long long)s.seed, s.threads, s.n,
			     (unsigned long long)L->o->seed, L->nworkers, as.n);
		learn_state_done(&s);
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "%s/checkpoint.lgw", L->o->out_dir);
	rc = gnn_load_into(L->w[0].model, path, &gerr);
	if (rc < 0) {
		learn_state_done(&s);
		return loom_err_set(err, -rc, "--resume: %s", gerr.msg);
	}
	memcpy(as.mom1, s.mom1, as.n * sizeof(float));
	memcpy(as.mom2, s.mom2, as.n * sizeof(float));
	*as.step = s.adam_step;
	*ema = s.ema_s;
	*best = s.best_ratio;
	*next = s.next_iter;
	learn_state_done(&s);
	return 0;
}

/* ---- evaluation ---------------------------------------------------------------------------- */

/*
 * The validation workloads, and the best heuristic's result on each: every
 * (workload, heuristic) replay is a job for the workers (of every rank),
 * each done by one worker on its own copy; the others add zeros, exactly.
 */
static int eval_setup(struct learn *L, struct loom_err *err)
{
	const struct learn_opts *o = L->o;
	uint32_t n = o->eval_workloads;
	double t0;
	int rc = 0;

	L->eval_m = calloc(n, sizeof(*L->eval_m));
	L->eval_best_s = calloc(n, sizeof(double));
	L->eval_base_s = calloc((size_t)n * EVAL_NHEUR, sizeof(double));
	L->eval_gnn_s = calloc(n, sizeof(double));
	if (!L->eval_m || !L->eval_best_s || !L->eval_base_s || !L->eval_gnn_s)
		rc = loom_err_set(err, ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		L->eval_m[i] = make_episode(o, EVAL_SEED_BASE + i, o->eval_jobs, eval_load(i), err);
		if (!L->eval_m[i])
			rc = -(errno ? errno : EINVAL);
	}
	/* every rank goes on into the workers' collectives, or none does */
	rc = agree(L, rc, err);
	if (rc < 0)
		return rc;
	if (L->rank == 0)
		log_info("validation: %u workloads of %u jobs, the best of %s, %s and %s on each "
			 "(%u replays over %u workers)",
			 n, o->eval_jobs, eval_heur[0], eval_heur[1], eval_heur[2],
			 n * (uint32_t)EVAL_NHEUR, L->nworkers);
	t0 = (double)loom_clock_mono_ns() * 1e-9;
	L->kind = JOB_EVAL_BASE;
	rc = run_workers(L, err);
	if (rc < 0)
		return rc;
	if (L->nranks > 1) {
		rc = learn_mpi_sum(L->eval_base_s, (size_t)n * EVAL_NHEUR);
		if (rc < 0)
			return loom_err_set(err, -rc, "too many validation workloads for MPI");
	}
	if (L->rank == 0)
		log_info("validation baselines ready in %.1f s",
			 (double)loom_clock_mono_ns() * 1e-9 - t0);
	for (uint32_t i = 0; i < n; i++) {
		L->eval_best_s[i] = INFINITY;
		for (size_t h = 0; h < EVAL_NHEUR; h++)
			L->eval_best_s[i] =
				fmin(L->eval_best_s[i], L->eval_base_s[i * EVAL_NHEUR + h]);
	}
	free(L->eval_base_s);
	L->eval_base_s = NULL;
	return 0;
}

static int evaluate(struct learn *L, double *ret_ratio, struct loom_err *err)
{
	double s = 0;
	int rc;

	L->kind = JOB_EVAL;
	/* each workload's result comes from one rank; the others add zeros, exactly */
	for (uint32_t i = 0; i < L->o->eval_workloads; i++)
		L->eval_gnn_s[i] = 0;
	rc = run_workers(L, err);
	if (rc < 0)
		return rc;
	if (L->nranks > 1) {
		rc = learn_mpi_sum(L->eval_gnn_s, L->o->eval_workloads);
		if (rc < 0)
			return loom_err_set(err, -rc, "too many validation workloads for MPI");
	}
	for (uint32_t i = 0; i < L->o->eval_workloads; i++)
		s += L->eval_best_s[i] > 0 ? L->eval_gnn_s[i] / L->eval_best_s[i] : 1;
	*ret_ratio = s / L->o->eval_workloads;
	return 0;
}

/* ---- the loop ------------------------------------------------------------------------------- */

static int check_opts(const struct learn_opts *o, struct loom_err *err)
{
	if (o->threads == 0 || o->threads > LEARN_MAX_THREADS)
		return loom_err_set(err, EINVAL, "threads must be 1..%d", LEARN_MAX_THREADS);
	if (o->rollouts < 2 || o->rollouts > LEARN_MAX_ROLLOUTS)
		return loom_err_set(err, EINVAL,
				    "rollouts must be 2..%d (the baseline is their mean)",
				    LEARN_MAX_ROLLOUTS);
	if (o->jobs_min == 0 || o->jobs_max < o->jobs_min)
		return loom_err_set(err, EINVAL, "need 1 <= jobs-min <= jobs-max");
	if (!(o->load_min > 0) || o->load_max < o->load_min)
		return loom_err_set(err, EINVAL, "need 0 < load-min <= load-max");
	if (o->imitate_iters > o->iters)
		return loom_err_set(err, EINVAL, "imitation iterations exceed the total");
	if (!(o->agree_weight >= 0 && o->agree_weight <= 1))
		return loom_err_set(err, EINVAL, "the agreement weight must be in [0, 1]");
	if (o->dagger && !(o->label_prob > 0 && o->label_prob <= 1))
		return loom_err_set(err, EINVAL, "dagger needs a label probability in (0, 1]");
	if (!o->episode && (!o->dags || !o->fb))
		return loom_err_set(err, EINVAL, "no DAG shapes or FB2010 trace to generate from");
	if (!o->topo)
		return loom_err_set(err, EINVAL, "no fabric");
	if (o->cfg.nfeatures != POLICY_NFEATURES && o->cfg.nfeatures != POLICY_NFEATURES_RANKS)
		return loom_err_set(err, EINVAL, "the model must take %u or %u features",
				    POLICY_NFEATURES, POLICY_NFEATURES_RANKS);
	if (o->resume && !o->out_dir)
		return loom_err_set(err, EINVAL, "resume needs an output directory");
	if (o->eval_every && o->eval_workloads == 0)
		return loom_err_set(err, EINVAL, "evaluation needs at least one workload");
	return 0;
}

/*
 * Drops the rows of learning.csv after iteration `keep` (a run that died
 * after its last checkpoint wrote them; the resumed run writes them again).
 */
static int csv_truncate(const char *dir, uint32_t keep, struct loom_err *err)
{
	char path[4096], tmp[4200], line[1024];
	FILE *in, *out;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/learning.csv", dir);
	in = fopen(path, "r");
	if (!in)
		return errno == ENOENT ? 0 :
					 loom_err_set(err, errno, "%s: %s", path, strerror(errno));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	out = fopen(tmp, "w");
	if (!out) {
		fclose(in);
		return loom_err_set(err, errno, "%s: %s", tmp, strerror(errno));
	}
	while (fgets(line, sizeof(line), in)) {
		unsigned long it = strtoul(line, NULL, 10);

		/* the header parses as 0 and stays */
		if (it <= keep && fputs(line, out) < 0)
			rc = -EIO;
	}
	fclose(in);
	rc = replace_with_tmp(out, rc, tmp, path);
	if (rc < 0)
		return loom_err_set(err, -rc, "%s: cannot rewrite: %s", path, strerror(-rc));
	return 0;
}

static FILE *open_csv(const struct learn_opts *o, bool append, struct loom_err *err)
{
	char path[4096];
	FILE *f;

	if (!o->out_dir)
		return NULL;
	snprintf(path, sizeof(path), "%s/learning.csv", o->out_dir);
	f = fopen(path, append ? "a" : "w");
	if (!f) {
		loom_err_set(err, errno, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (!append || ftell(f) == 0)
		fprintf(f, "iter,phase,jobs,load,avg_wjct_s,avg_wjct_ema_s,loss,entropy,grad_norm,"
			   "decisions,eval_ratio,best_eval_ratio,wall_s\n");
	snprintf(path, sizeof(path), "%s/learning.gp", o->out_dir);
	{
		FILE *g = fopen(path, "w");

		if (g) {
			fprintf(g,
				"# The learning curve of loom-train (gnuplot learning.gp)\n"
				"set datafile separator ','\n"
				"set terminal pngcairo size 1000,700\n"
				"set output 'learning.png'\n"
				"set multiplot layout 2,1\n"
				"set key top right\n"
				"set xlabel 'iteration'\n"
				"set ylabel 'avg weighted JCT (s)'\n"
				"set logscale y\n"
				"plot 'learning.csv' using 1:5 every ::1 with points pt 7 ps 0.2 "
				"title 'episode', '' using 1:6 every ::1 with lines lw 2 "
				"title 'running average'\n"
				"unset logscale y\n"
				"set ylabel 'validation wJCT / best heuristic'\n"
				"plot 'learning.csv' using 1:($11 > 0 ? $11 : 1/0) every ::1 "
				"with linespoints title 'greedy gnn', 1 with lines dt 2 "
				"title 'best heuristic'\n"
				"unset multiplot\n");
			fclose(g);
		}
	}
	return f;
}

/* Frees L: its workers (models, episodes, scratch), rollouts, validation workloads, buffers. */
static void learn_free(struct learn *L)
{
	for (uint32_t t = 0; t < LEARN_MAX_THREADS; t++) {
		struct worker *w = &L->w[t];

		gnn_model_free(w->model);
		cp_model_free(w->m);
		free(w->scores);
		free(w->dlogp);
		free(w->dent);
		free(w->dscores);
		free(w->work);
	}
	for (uint32_t k = 0; k < LEARN_MAX_ROLLOUTS; k++)
		rollout_done(&L->ro[k]);
	for (uint32_t i = 0; L->eval_m && i < L->o->eval_workloads; i++)
		cp_model_free(L->eval_m[i]);
	free(L->eval_m);
	free(L->eval_best_s);
	free(L->eval_base_s);
	free(L->eval_gnn_s);
	free(L->xbuf);
	free(L->gbuf);
	free(L);
}

/* Lays out the workers over the MPI ranks and gives this rank's each its model. */
static int workers_init(struct learn *L, struct loom_err *err)
{
	const struct learn_opts *o = L->o;
	struct gnn_err gerr = {{0}};
	int rc = 0;

	L->nthreads = o->threads;
	L->rank = o->mpi ? learn_mpi_rank() : 0;
	L->nranks = o->mpi ? learn_mpi_size() : 1;
	L->nworkers = L->nranks * L->nthreads;
	if (L->nworkers > LEARN_MAX_WORKERS)
		return loom_err_set(err, EINVAL,
				    "%u MPI ranks x %u threads: at most %d workers in all",
				    L->nranks, L->nthreads, LEARN_MAX_WORKERS);
	L->nro = o->rollouts > L->nworkers ? o->rollouts : L->nworkers;
	L->adam.clip_norm = o->clip_norm;
	for (uint32_t t = 0; t < L->nthreads; t++) {
		L->w[t].L = L;
		L->w[t].id = L->rank * L->nthreads + t;
		if (o->init_weights)
			L->w[t].model = gnn_model_load(o->init_weights, "cpu", &gerr);
		else
			L->w[t].model = gnn_model_new(&o->cfg, "cpu", o->seed, &gerr);
		if (!L->w[t].model) {
			rc = loom_err_from(err, errno ? errno : EINVAL, gerr.msg);
			break;
		}
		if (gnn_model_config(L->w[t].model)->nfeatures != POLICY_NFEATURES &&
		    gnn_model_config(L->w[t].model)->nfeatures != POLICY_NFEATURES_RANKS) {
			rc = loom_err_set(err, EINVAL,
					  "%s: the model takes %u features, not %u or %u",
					  o->init_weights,
					  gnn_model_config(L->w[t].model)->nfeatures,
					  POLICY_NFEATURES, POLICY_NFEATURES_RANKS);
			break;
		}
	}
	return agree(L, rc, err);
}

/*
 * Continues from the checkpoint in out_dir: rank 0 reads it and hands the
 * others what they need, then every worker takes the parameters.
 */
static int resume_ranks(struct learn *L, struct loom_err *err)
{
	int rc = 0;

	if (L->rank == 0)
		rc = resume(L, &L->ema, &L->best, &L->start, err);
	rc = agree(L, rc, err);
	if (rc < 0)
		return rc;
	if (L->nranks > 1) {
		struct {
			double ema, best;
			uint32_t start;
		} hdr = {L->ema, L->best, L->start};

		learn_mpi_bcast(&hdr, sizeof(hdr), 0);
		L->ema = hdr.ema;
		L->best = hdr.best;
		L->start = hdr.start;
		rc = mpi_bcast_params(L, err);
		if (rc < 0)
			return rc;
	}
	if (L->start > L->o->iters)
		return loom_err_set(err, EINVAL,
				    "--resume: the checkpoint is at iteration %u, past --iters %u",
				    L->start, L->o->iters);
	sync_workers(L, SYNC_PARAMS);
	return 0;
}

/* A fresh run: nothing of an earlier run in dir may pass for ours. */
static int remove_stale(const char *dir, struct loom_err *err)
{
	static const char *const stale[] = {"best.lgw", "checkpoint.lgw", "checkpoint.state"};

	for (size_t i = 0; i < sizeof(stale) / sizeof(stale[0]); i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/%s", dir, stale[i]);
		if (remove(path) < 0 && errno != ENOENT)
			return loom_err_set(err, errno, "%s: %s", path, strerror(errno));
	}
	return 0;
}

/* Before the first iteration: resume or start afresh, the validation workloads, learning.csv. */
static int learn_prepare(struct learn *L, struct loom_err *err)
{
	const struct learn_opts *o = L->o;
	int rc = 0;

	if (o->resume) {
		rc = resume_ranks(L, err);
		if (rc < 0)
			return rc;
		if (L->rank == 0)
			rc = csv_truncate(o->out_dir, L->start, err);
	} else if (o->out_dir && L->rank == 0) {
		rc = remove_stale(o->out_dir, err);
	}
	/* rank 0's file errors, before the ranks go into eval_setup()'s collectives together */
	rc = agree(L, rc, err);
	if (rc < 0)
		return rc;
	if (o->eval_every)
		rc = eval_setup(L, err);
	/* only rank 0 writes files */
	if (rc == 0 && o->out_dir && L->rank == 0) {
		L->csv = open_csv(o, o->resume, err);
		if (!L->csv)
			rc = -EIO;
	}
	return agree(L, rc, err);
}

/* Iteration it's episode (curriculum size, load, seed) and phase. */
static void iter_plan(struct learn *L, uint32_t it, bool imitation)
{
	const struct learn_opts *o = L->o;
	struct gnn_rng rng;
	double frac;

	L->iter = it;
	frac = o->curriculum_iters ? fmin(1.0, (double)it / o->curriculum_iters) : 1.0;
	L->ep_jobs = o->jobs_min + (uint32_t)lround(frac * (o->jobs_max - o->jobs_min));
	gnn_rng_seed(&rng, mix(o->seed, it));
	L->ep_load = o->load_min + (o->load_max - o->load_min) * gnn_rng_uniform(&rng);
	/* bit 40 keeps training seeds away from the small ones benchmarks use */
	L->ep_seed = (mix(mix(o->seed, it), 7) | (1ULL << 40)) & ~(1ULL << 63);
	if (imitation) {
		L->kind = JOB_IMITATE;
		L->nro = L->nworkers;
	} else {
		double a = o->entropy_iters ?
				   fmin(1.0, (double)(it - o->imitate_iters) / o->entropy_iters) :
				   1.0;

		L->beta = o->entropy_start + (o->entropy_end - o->entropy_start) * a;
		L->kind = JOB_ROLLOUT;
		L->nro = o->rollouts;
	}
}

/* Plays the iteration's rollouts (or imitation episodes) on every worker of every rank. */
static int collect_rollouts(struct learn *L, struct loom_err *err)
{
	int rc = run_workers(L, err);

	if (rc == 0 && L->nranks > 1)
		rc = exchange_rollouts(L, err);
	return rc;
}

/* The mean over the rollouts of each one's average weighted JCT. */
static double rollouts_avg_wjct_s(const struct learn *L)
{
	double sum = 0;

	for (uint32_t k = 0; k < L->nro; k++)
		sum += L->ro[k].njobs ? L->ro[k].wjct_sum_s / L->ro[k].njobs : 0;
	return sum / L->nro;
}

/* Chooses and weighs the decisions the gradient uses (norm_n): subsampled, or by advantage. */
static void weigh_decisions(struct learn *L, uint32_t it, bool imitation)
{
	if (imitation) {
		double n = 0;

		for (uint32_t k = 0; k < L->nro; k++)
			n += subsample(L, &L->ro[k], mix(mix(L->o->seed, it), 3000 + k));
		L->norm_n = n;
		L->beta = -1; /* marks imitation for train_rollout */
	} else {
		L->norm_n = advantages(L);
	}
}

/*
 * One optimiser step on the gradient summed over every worker, which then
 * all take the new parameters. A non-finite gradient skips the update
 * (counted in skipped; *grad_norm NAN) and training goes on.
 */
static int train_step(struct learn *L, uint32_t it, bool imitation, double *grad_norm,
		      struct loom_err *err)
{
	struct gnn_err gerr = {{0}};
	int rc;

	rc = run_workers(L, err);
	if (rc < 0)
		return rc;
	if (L->nranks > 1)
		rc = mpi_sum_grads(L, err);
	else
		sync_workers(L, SYNC_SUM_GRADS);
	if (rc < 0)
		return rc;
	L->adam.lr = imitation ? L->o->lr : L->o->rl_lr;
	/* rank 0 holds the summed gradient and the optimiser state */
	if (L->rank == 0)
		rc = gnn_adam_step(L->w[0].model, &L->adam, grad_norm, &gerr);
	if (rc == -EINVAL) {
		L->skipped++;
		*grad_norm = NAN;
		rc = 0;
	} else if (rc < 0) {
		loom_err_set(err, -rc, "iteration %u: %s", it, gerr.msg);
	}
	rc = agree(L, rc, err);
	if (rc == 0 && L->nranks > 1)
		rc = mpi_bcast_params(L, err);
	if (rc < 0)
		return rc;
	sync_workers(L, SYNC_PARAMS);
	return 0;
}

/* The iteration's loss, entropy and decisions trained, summed over every worker. */
static int sum_worker_stats(struct learn *L, double *loss, double *ent, uint32_t *ntr,
			    struct loom_err *err)
{
	if (L->nranks > 1)
		return mpi_worker_stats(L, loss, ent, ntr, err);
	for (uint32_t t = 0; t < L->nthreads; t++) {
		*loss += L->w[t].loss;
		*ent += L->w[t].entropy;
		*ntr += L->w[t].ntrained;
	}
	return 0;
}

static bool eval_due(const struct learn_opts *o, uint32_t it)
{
	return o->eval_every && ((it + 1) % o->eval_every == 0 || it + 1 == o->iters);
}

/* Writes the model as best.lgw (rank 0, when there is an out_dir). 0 or -errno with err. */
static int save_best(struct learn *L, struct loom_err *err)
{
	struct gnn_err gerr = {{0}};
	char path[4096];
	int rc;

	if (!L->o->out_dir || L->rank != 0)
		return 0;
	snprintf(path, sizeof(path), "%s/best.lgw", L->o->out_dir);
	rc = gnn_save(L->w[0].model, path, &gerr);
	if (rc < 0)
		loom_err_from(err, -rc, gerr.msg);
	return rc;
}

/* Validates the model, keeps it as best.lgw (rank 0, out_dir) if best so far, checkpoints. */
static int evaluate_and_keep(struct learn *L, uint32_t it, struct loom_err *err)
{
	int rc;

	rc = evaluate(L, &L->last_eval, err);
	if (rc < 0)
		return rc;
	if (L->last_eval < L->best) {
		L->best = L->last_eval;
		rc = save_best(L, err);
	}
	if (rc == 0)
		rc = checkpoint(L, it + 1, L->ema, L->best, err);
	return agree(L, rc, err);
}

/*
 * A residual model (one with a prior) starts as its prior's heuristic, or as
 * the --init model: it is validated before the first iteration and kept as
 * best.lgw, so that the model a run keeps is never worse on validation than
 * where it started.
 */
static int evaluate_start(struct learn *L, struct loom_err *err)
{
	double v;
	int rc;

	rc = evaluate(L, &v, err);
	if (rc < 0)
		return rc;
	L->best = v;
	if (L->rank == 0 && L->o->init_weights)
		log_info("validation before training: %.4f x the best heuristic (the model of %s)",
			 v, L->o->init_weights);
	else if (L->rank == 0)
		log_info("validation before training: %.4f x the best heuristic (the prior %s)", v,
			 policy_gnn_prior_name(gnn_model_config(L->w[0].model)->prior));
	rc = save_best(L, err);
	return agree(L, rc, err);
}

/* One row of learning.csv. */
static void csv_write_row(FILE *csv, const struct learn_progress *pr)
{
	fprintf(csv, "%u,%s,%u,%.3f,%.6g,%.6g,%.6g,%.6g,%.6g,%u,", pr->iter,
		pr->imitation ? "imitate" : "rl", pr->jobs, pr->load, pr->avg_wjct_s,
		pr->avg_wjct_ema_s, pr->loss, pr->entropy, pr->grad_norm, pr->decisions);
	if (isnan(pr->eval_ratio))
		fprintf(csv, ",");
	else
		fprintf(csv, "%.6f,", pr->eval_ratio);
	fprintf(csv, "%.6f,%.1f\n", isfinite(pr->best_eval_ratio) ? pr->best_eval_ratio : 0,
		pr->wall_s);
	fflush(csv);
}

/*
 * Past the time limit (rank 0's clock decides for all) with iterations left:
 * checkpoints and returns -ETIME. Otherwise 0.
 */
static int stop_at_time_limit(struct learn *L, uint32_t it, double wall_s, struct loom_err *err)
{
	const struct learn_opts *o = L->o;
	bool stop = o->time_limit_s > 0 && wall_s > o->time_limit_s && it + 1 < o->iters;
	int rc;

	if (L->nranks > 1 && o->time_limit_s > 0) {
		uint8_t b = stop;

		learn_mpi_bcast(&b, 1, 0);
		stop = b;
	}
	if (!stop)
		return 0;
	rc = checkpoint(L, it + 1, L->ema, L->best, err);
	rc = agree(L, rc, err);
	if (rc < 0)
		return rc;
	loom_err_set(err, ETIME,
		     "time limit reached after iteration %u; checkpoint written "
		     "(continue with --resume)",
		     it + 1);
	return -ETIME;
}

/* Iteration it: rollouts, a training step, maybe a validation, the progress report. */
static int learn_iter(struct learn *L, uint32_t it, struct loom_err *err)
{
	const struct learn_opts *o = L->o;
	bool imitation = it < o->imitate_iters;
	double avg_s, grad_norm = 0, loss = 0, ent = 0, eval_ratio = NAN;
	struct learn_progress pr;
	uint32_t ntr = 0;
	int rc;

	iter_plan(L, it, imitation);
	rc = collect_rollouts(L, err);
	if (rc < 0)
		return rc;
	avg_s = rollouts_avg_wjct_s(L);
	weigh_decisions(L, it, imitation);
	L->kind = JOB_TRAIN;
	if (L->norm_n > 0) {
		rc = train_step(L, it, imitation, &grad_norm, err);
		if (rc < 0)
			return rc;
	}
	rc = sum_worker_stats(L, &loss, &ent, &ntr, err);
	if (rc < 0)
		return rc;
	L->ema = isnan(L->ema) ? avg_s : 0.98 * L->ema + 0.02 * avg_s;
	if (eval_due(o, it)) {
		rc = evaluate_and_keep(L, it, err);
		if (rc < 0)
			return rc;
		eval_ratio = L->last_eval;
	}
	pr = (struct learn_progress){.iter = it + 1,
				     .iters = o->iters,
				     .imitation = imitation,
				     .jobs = L->ep_jobs,
				     .load = L->ep_load,
				     .avg_wjct_s = avg_s,
				     .avg_wjct_ema_s = L->ema,
				     .loss = loss,
				     .skipped = L->skipped,
				     .entropy = ntr ? ent / ntr : 0,
				     .grad_norm = grad_norm,
				     .decisions = ntr,
				     .eval_ratio = eval_ratio,
				     .best_eval_ratio = L->best,
				     .wall_s = (double)loom_clock_mono_ns() * 1e-9 - L->t0_s};
	if (L->csv)
		csv_write_row(L->csv, &pr);
	if (o->progress && L->rank == 0)
		o->progress(o->progress_ctx, &pr);
	return stop_at_time_limit(L, it, pr.wall_s, err);
}

int learn_run(const struct learn_opts *o, struct gnn_model **ret_model, struct loom_err *err)
{
	double t0_s = (double)loom_clock_mono_ns() * 1e-9;
	struct learn *L;
	int rc;

	rc = check_opts(o, err);
	if (rc < 0)
		return rc;
	L = calloc(1, sizeof(*L));
	if (!L)
		return loom_err_set(err, ENOMEM, "out of memory");
	L->o = o;
	L->adam = gnn_adam_default();
	L->ema = NAN;
	L->best = INFINITY;
	L->last_eval = NAN;
	L->t0_s = t0_s;
	rc = workers_init(L, err);
	if (rc == 0)
		rc = learn_prepare(L, err);
	if (rc == 0 && o->eval_every && L->start == 0 && gnn_model_config(L->w[0].model)->prior)
		rc = evaluate_start(L, err);
	for (uint32_t it = L->start; rc == 0 && it < o->iters; it++)
		rc = learn_iter(L, it, err);
	if (rc == 0) {
		rc = checkpoint(L, o->iters, L->ema, L->best, err);
		rc = agree(L, rc, err);
	}
	if (L->csv)
		fclose(L->csv);
	if (ret_model && (rc == 0 || rc == -ETIME)) {
		*ret_model = L->w[0].model;
		L->w[0].model = NULL;
	}
	learn_free(L);
	return rc;
}
