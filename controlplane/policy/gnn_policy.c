/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gnn: the learned policy. At each decision it builds the job DAGs of the
 * schedulable coflows and their features (coflow_features.h), runs the gnn/ model
 * (pipelined DAGNN + self-attention over the schedulable coflows) and orders
 * the schedulable coflows by score, highest first, ties by coflow index:
 * deterministic at inference. Rates inside the order are Varys' MADD with
 * work-conserving backfill, as sebf and the DAG heuristics do, so the policy
 * only has to learn the order.
 *
 * Residual scoring: a model whose gnn_config.prior names a heuristic
 * (policy_gnn_prior_name()) scores each schedulable coflow as the network's
 * output plus prior_scale x (minus the coflow's place in that heuristic's
 * order, 0 first). Such a model starts with a zero last layer, so untrained
 * it orders exactly as the heuristic does (and with rates=auto, the default,
 * it takes the heuristic's rates too: strict priority for sincronia, MADD
 * for the others); the network learns corrections to it.
 *
 * The weights come from params->weights, else the shipped model
 * (policy_gnn_default_weights()); a missing, corrupt or wrongly shaped file
 * fails policy_new() with a message that names it. loom-train drives the
 * same code with a hook (sampled rankings, imitation of a teacher, a
 * teacher's labels of the model's own states).
 */
#include "controlplane/policy/policy.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/datapath.h"
#include "common/log.h"
#include "controlplane/policy/coflow_features.h"
#include "controlplane/policy/util.h"
#include "gnn/gnn.h"

enum {
	OPT_BACKEND,
	OPT_INVERT,
	OPT_RATES,
};

static const char *const backend_choices[] = {"cpu", "cuda", "naive", NULL};
static const char *const rates_choices[] = {"auto", "madd", "priority", "fill", NULL};

static const struct policy_opt_def gnn_opts[] = {
	[OPT_BACKEND] = {"backend", "gnn/ backend (cuda falls back to cpu without a GPU)",
			 POLICY_OPT_ENUM, 0, 0, 0, backend_choices},
	[OPT_INVERT] = {"invert",
			"reverse the learned order (a deliberately bad policy, for checks)",
			POLICY_OPT_BOOL, 0, 0, 1, NULL},
	[OPT_RATES] = {"rates",
		       "madd: Varys' MADD in the order, then backfill; priority: strict priority "
		       "per coflow in the order (the fabric's, as sincronia); fill: MADD, then "
		       "the rest shared per coflow in the order, in equal-share rounds; auto: "
		       "priority for a model whose prior is sincronia or blend, else madd",
		       POLICY_OPT_ENUM, 0, 0, 0, rates_choices},
};

struct rank_ent {
	float score;
	uint32_t coflow;
	uint32_t idx; /* into sched */
};

struct gnnp {
	struct gnn_model *model;
	bool own_model;
	bool invert;
	bool madd;            /* rates=madd */
	bool fill;            /* rates=fill */
	struct policy *prior; /* the residual prior's heuristic, or NULL */
	float prior_scale;
	struct policy_decision pd; /* the prior's decision */
	float *prior_pos;          /* ncoflows: place in the prior's order (scratch) */
	/* a model that takes the heuristics' places: their policies and decision */
	struct policy *rh[POLICY_NRANK_HEUR];
	struct policy_decision rd;
	struct policy_decision td; /* a labelling teacher's decision (sized on first use) */
	struct policy_graph g;
	struct policy_scratch s;
	float *scores;         /* ncoflows */
	float *work;           /* ncoflows */
	uint32_t *perm;        /* ncoflows */
	uint32_t *pos_of_node; /* ncoflows: index in g.sched, for imitation */
	struct rank_ent *rank; /* ncoflows */
	struct policy_gnn_hook hook;
	bool has_hook;
};

static void gnnp_free(struct gnnp *x)
{
	if (x->own_model)
		gnn_model_free(x->model);
	policy_free(x->prior);
	policy_decision_done(&x->pd);
	for (uint32_t i = 0; i < POLICY_NRANK_HEUR; i++)
		policy_free(x->rh[i]);
	policy_decision_done(&x->rd);
	policy_decision_done(&x->td);
	free(x->prior_pos);
	policy_graph_done(&x->g);
	policy_scratch_done(&x->s);
	free(x->scores);
	free(x->work);
	free(x->perm);
	free(x->pos_of_node);
	free(x->rank);
	free(x);
}

/* gnn_config.prior i > 0 is the heuristic prior_names[i]. */
static const char *const prior_names[] = {"none", "sincronia", "sebf",  "wsrjf", "srjf",
					  "scf",  "lcf",       "blend", NULL};

const char *policy_gnn_prior_name(uint32_t prior)
{
	return prior < sizeof(prior_names) / sizeof(prior_names[0]) - 1 ? prior_names[prior] : NULL;
}

int policy_gnn_prior_find(const char *name)
{
	for (int i = 0; prior_names[i]; i++)
		if (strcmp(prior_names[i], name) == 0)
			return i;
	return -ENOENT;
}

const char *policy_gnn_default_weights(char *buf, size_t size)
{
	return loom_data_path(POLICY_GNN_WEIGHTS_REL, buf, size);
}

/*
 * Consulted on flow completions whenever a policy it runs beside the
 * network would be (its prior, so that untrained it is the prior; the
 * heuristics of its place features; a hook's teacher).
 */
static void set_decide_on_flow_done(struct policy *p, const struct gnnp *x)
{
	bool any = p->cls->decide_on_flow_done || (x->prior && x->prior->decide_on_flow_done) ||
		   (x->has_hook && x->hook.teacher && x->hook.teacher->decide_on_flow_done);

	for (uint32_t i = 0; i < POLICY_NRANK_HEUR; i++)
		any = any || (x->rh[i] && x->rh[i]->decide_on_flow_done);
	p->decide_on_flow_done = any;
}

static int gnn_init(struct policy *p, const struct cp_model *m)
{
	size_t nc = m->ncoflows ? m->ncoflows : 1;
	const char *backend = backend_choices[(size_t)p->opt[OPT_BACKEND]];
	struct gnn_err gerr = {{0}};
	struct gnnp *x = calloc(1, sizeof(*x));
	const struct gnn_config *cfg;
	char path[PATH_MAX];
	int r;

	if (!x)
		return -ENOMEM;
	x->invert = p->opt[OPT_INVERT] == 1;
	x->madd = p->opt[OPT_RATES] == 1;
	x->fill = p->opt[OPT_RATES] == 3;
	if (p->params.gnn_model) {
		x->model = p->params.gnn_model;
	} else {
		const char *w = p->params.weights;

		if (!w)
			w = policy_gnn_default_weights(path, sizeof(path));
		x->model = gnn_model_load(w, backend, &gerr);
		if (!x->model) {
			r = -errno;
			loom_err_set(&p->init_err, -r, "cannot load the model: %s%s", gerr.msg,
				     p->params.weights ? "" :
							 " (the shipped model; give another with "
							 "--weights or $LOOM_DATA)");
			free(x);
			return r;
		}
		x->own_model = true;
		if (gnn_model_fallback(x->model))
			log_debug("gnn policy: backend %s unavailable (%s), running on cpu",
				  backend, gnn_model_fallback(x->model));
	}
	cfg = gnn_model_config(x->model);
	/* auto: a residual model's rates are its prior heuristic's, so untrained it is that heuristic */
	if (p->opt[OPT_RATES] == 0 && p->params.gnn_rates != POLICY_GNN_RATES_PRIOR)
		x->madd = p->params.gnn_rates == POLICY_GNN_RATES_MADD;
	else if (p->opt[OPT_RATES] == 0)
		x->madd = cfg->prior != (uint32_t)policy_gnn_prior_find("sincronia") &&
			  cfg->prior != (uint32_t)policy_gnn_prior_find("blend");
	if (cfg->nfeatures != POLICY_NFEATURES && cfg->nfeatures != POLICY_NFEATURES_RANKS) {
		loom_err_set(&p->init_err, EINVAL,
			     "model %s has %u input features per coflow, this policy computes %u "
			     "(or %u with the heuristics' places; a model for another feature set)",
			     p->params.gnn_model ? "in memory" :
						   (p->params.weights ? p->params.weights : path),
			     cfg->nfeatures, POLICY_NFEATURES, POLICY_NFEATURES_RANKS);
		gnnp_free(x);
		return -EINVAL;
	}
	if (cfg->prior) {
		const char *name = policy_gnn_prior_name(cfg->prior);
		struct policy_params pp = p->params;
		struct loom_err perr = {0};

		if (!name) {
			loom_err_set(&p->init_err, EINVAL,
				     "model %s scores residuals on prior %u, which this build does "
				     "not know (a model of a newer build)",
				     p->params.weights ? p->params.weights : "in memory",
				     cfg->prior);
			gnnp_free(x);
			return -EINVAL;
		}
		pp.gnn_model = NULL;
		x->prior = policy_new(name, &pp, m, &perr);
		if (!x->prior) {
			r = -errno;
			loom_err_set(&p->init_err, -r, "prior %s: %s", name, perr.msg);
			gnnp_free(x);
			return r;
		}
		x->prior_scale = cfg->prior_scale;
		r = policy_decision_init(&x->pd, m);
		x->prior_pos = calloc(nc, sizeof(float));
		if (r < 0 || !x->prior_pos) {
			gnnp_free(x);
			return -ENOMEM;
		}
	}
	if (cfg->nfeatures == POLICY_NFEATURES_RANKS) {
		struct policy_params pp = p->params;
		struct loom_err perr = {0};

		pp.gnn_model = NULL;
		for (uint32_t i = 0; i < POLICY_NRANK_HEUR; i++) {
			x->rh[i] = policy_new(policy_rank_heuristics[i], &pp, m, &perr);
			if (!x->rh[i]) {
				r = -errno;
				loom_err_set(&p->init_err, -r, "place feature %s: %s",
					     policy_rank_heuristics[i], perr.msg);
				gnnp_free(x);
				return r;
			}
		}
		r = policy_decision_init(&x->rd, m);
		if (r < 0) {
			gnnp_free(x);
			return r;
		}
	}
	r = policy_graph_init_nfeat(&x->g, m, cfg->nfeatures);
	if (r < 0) {
		gnnp_free(x);
		return r;
	}
	r = policy_scratch_init(&x->s, m);
	if (r < 0) {
		gnnp_free(x);
		return r;
	}
	x->scores = calloc(nc, sizeof(float));
	x->work = calloc(nc, sizeof(float));
	x->perm = calloc(nc, sizeof(uint32_t));
	x->pos_of_node = calloc(nc, sizeof(uint32_t));
	x->rank = calloc(nc, sizeof(struct rank_ent));
	if (!x->scores || !x->work || !x->perm || !x->pos_of_node || !x->rank) {
		gnnp_free(x);
		return -ENOMEM;
	}
	p->priv = x;
	set_decide_on_flow_done(p, x);
	return 0;
}

static void gnn_done(struct policy *p)
{
	if (p->priv)
		gnnp_free(p->priv);
	p->priv = NULL;
}

static void gnn_on_event(struct policy *p, const struct cp_model *m, const struct cp_event *ev)
{
	struct gnnp *x = p->priv;

	if (x->prior)
		policy_on_event(x->prior, m, ev);
	for (uint32_t i = 0; i < POLICY_NRANK_HEUR; i++)
		if (x->rh[i])
			policy_on_event(x->rh[i], m, ev);
	if (x->has_hook && x->hook.teacher)
		policy_on_event(x->hook.teacher, m, ev);
}

int policy_gnn_set_hook(struct policy *p, const struct policy_gnn_hook *hook)
{
	struct gnnp *x;

	if (!p || p->cls != &policy_gnn)
		return -EINVAL;
	x = p->priv;
	x->has_hook = hook != NULL;
	if (hook)
		x->hook = *hook;
	else
		memset(&x->hook, 0, sizeof(x->hook));
	set_decide_on_flow_done(p, x);
	return 0;
}

/* Decreasing score, then increasing coflow index (increasing score when inverted). */
static int rank_cmp(const void *a, const void *b)
{
	const struct rank_ent *x = a, *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return (x->coflow > y->coflow) - (x->coflow < y->coflow);
}

/*
 * The teacher decides into d; its order over g.sched goes to record()
 * (imitation, where d is the acting decision, and labelling, where it is
 * scratch).
 */
static int decide_teacher(struct gnnp *x, const struct cp_model *m, uint64_t now_ns,
			  struct policy_decision *d)
{
	int r = policy_decide(x->hook.teacher, m, now_ns, d);

	if (r < 0)
		return r;
	if (d->norder != x->g.nsched)
		return -EPROTO;
	for (uint32_t i = 0; i < x->g.nnodes; i++)
		x->pos_of_node[i] = CP_NONE;
	for (uint32_t i = 0; i < x->g.nsched; i++)
		x->pos_of_node[x->g.sched[i]] = i;
	for (uint32_t i = 0; i < d->norder; i++) {
		uint32_t v = d->order[i] < m->ncoflows ? x->g.node_of[d->order[i]] : CP_NONE;

		if (v == CP_NONE || x->pos_of_node[v] == CP_NONE)
			return -EPROTO; /* the teacher ordered a coflow that is not schedulable */
		x->perm[i] = x->pos_of_node[v];
	}
	if (x->hook.record)
		x->hook.record(x->hook.ctx, &x->g, x->perm, d->norder, now_ns);
	return 0;
}

/*
 * The residual prior of every schedulable coflow into g->prior: minus its
 * place in the prior heuristic's order, times the model's prior_scale.
 */
static int compute_prior(struct gnnp *x, const struct cp_model *m, uint64_t now_ns)
{
	struct policy_graph *g = &x->g;
	int r;

	g->has_prior = x->prior != NULL;
	if (!x->prior)
		return 0;
	policy_decision_clear(&x->pd);
	r = policy_decide(x->prior, m, now_ns, &x->pd);
	if (r < 0)
		return r;
	if (x->pd.norder != g->nsched)
		return -EPROTO;
	for (uint32_t i = 0; i < g->nsched; i++)
		x->prior_pos[g->node_coflow[g->sched[i]]] = -1;
	for (uint32_t q = 0; q < x->pd.norder; q++) {
		uint32_t c = x->pd.order[q];

		if (c >= m->ncoflows || x->prior_pos[c] != -1)
			return -EPROTO; /* not schedulable, or twice */
		x->prior_pos[c] = (float)q;
	}
	for (uint32_t i = 0; i < g->nsched; i++)
		g->prior[i] = -x->prior_scale * x->prior_pos[g->node_coflow[g->sched[i]]];
	return 0;
}

/*
 * The heuristics' places (a model with POLICY_NFEATURES_RANKS features):
 * columns POLICY_NFEATURES.. of every node of the graph.
 */
static int compute_ranks(struct gnnp *x, const struct cp_model *m, uint64_t now_ns)
{
	struct policy_graph *g = &x->g;
	float n = (float)g->nsched, lgn = log1pf(n);

	if (g->nfeat != POLICY_NFEATURES_RANKS)
		return 0;
	for (uint32_t v = 0; v < g->nnodes; v++)
		for (uint32_t h = 0; h < POLICY_NRANK_HEUR; h++) {
			g->x[(size_t)v * g->nfeat + POLICY_NFEATURES + 2 * h] = 1;
			g->x[(size_t)v * g->nfeat + POLICY_NFEATURES + 2 * h + 1] = lgn;
		}
	for (uint32_t h = 0; h < POLICY_NRANK_HEUR; h++) {
		int r;

		policy_decision_clear(&x->rd);
		r = policy_decide(x->rh[h], m, now_ns, &x->rd);
		if (r < 0)
			return r;
		if (x->rd.norder != g->nsched)
			return -EPROTO;
		for (uint32_t q = 0; q < x->rd.norder; q++) {
			uint32_t c = x->rd.order[q];
			uint32_t v = c < m->ncoflows ? g->node_of[c] : CP_NONE;
			float *f;

			if (v == CP_NONE || g->x[(size_t)v * g->nfeat + PF_SCHEDULABLE] != 1)
				return -EPROTO; /* not schedulable */
			f = &g->x[(size_t)v * g->nfeat + POLICY_NFEATURES + 2 * h];
			if (f[0] != 1 || f[1] != lgn)
				return -EPROTO; /* twice */
			f[0] = (float)q / n;
			f[1] = log1pf((float)q);
		}
	}
	return 0;
}

/* DAgger: the teacher labels the state the model acts in, with probability label_prob. */
static int label(struct gnnp *x, const struct cp_model *m, uint64_t now_ns)
{
	int r;

	if (x->hook.label_prob < 1 &&
	    !(x->hook.label_rng && gnn_rng_uniform(x->hook.label_rng) < x->hook.label_prob))
		return 0;
	if (!x->td.order) {
		r = policy_decision_init(&x->td, m);
		if (r < 0)
			return r;
	}
	policy_decision_clear(&x->td);
	return decide_teacher(x, m, now_ns, &x->td);
}

void policy_graph_gnn_batch(const struct policy_graph *g, struct gnn_batch *b)
{
	*b = (struct gnn_batch){
		.nnodes = g->nnodes,
		.nfeatures = g->nfeat,
		.features = g->x,
		.njobs = g->njobs,
		.job_start = g->job_start,
		.nedges = g->nedges,
		.edges = g->edges,
	};
}

static int gnn_decide(struct policy *p, const struct cp_model *m, uint64_t now_ns,
		      struct policy_decision *d)
{
	struct gnnp *x = p->priv;
	struct policy_graph *g = &x->g;
	struct gnn_err gerr = {{0}};
	struct gnn_batch b;
	uint32_t n;
	int r;

	policy_graph_build(g, m, now_ns);
	n = g->nsched;
	if (n == 0)
		return 0;
	r = compute_prior(x, m, now_ns);
	if (r < 0) {
		log_debug("gnn policy: the prior %s failed: %d", x->prior->spec, r);
		return r;
	}
	r = compute_ranks(x, m, now_ns);
	if (r < 0) {
		log_debug("gnn policy: a heuristic's places failed: %d", r);
		return r;
	}
	if (x->has_hook && x->hook.teacher && !x->hook.dagger)
		return decide_teacher(x, m, now_ns, d);
	policy_graph_gnn_batch(g, &b);
	r = gnn_forward(x->model, &b, g->sched, n, x->scores, &gerr);
	if (r < 0) {
		log_debug("gnn policy: forward failed: %s", gerr.msg);
		return r;
	}
	if (g->has_prior)
		for (uint32_t i = 0; i < n; i++)
			x->scores[i] += g->prior[i];
	for (uint32_t i = 0; i < n; i++)
		if (!isfinite(x->scores[i])) {
			log_debug("gnn policy: score %u is not finite (a broken model)", i);
			return -EINVAL;
		}
	if (x->has_hook && x->hook.sample_rng) {
		r = gnn_pl_sample(x->scores, n, x->hook.sample_rng, x->work, x->perm, &gerr);
		if (r < 0) {
			log_debug("gnn policy: sampling failed: %s", gerr.msg);
			return r;
		}
	} else {
		for (uint32_t i = 0; i < n; i++) {
			x->rank[i].score = x->invert ? -x->scores[i] : x->scores[i];
			x->rank[i].coflow = g->node_coflow[g->sched[i]];
			x->rank[i].idx = i;
		}
		qsort(x->rank, n, sizeof(x->rank[0]), rank_cmp);
		for (uint32_t i = 0; i < n; i++)
			x->perm[i] = x->rank[i].idx;
	}
	for (uint32_t i = 0; i < n; i++)
		d->order[i] = g->node_coflow[g->sched[x->perm[i]]];
	d->norder = n;
	if (x->fill) {
		policy_madd_fill(m, d->order, n, x->s.free_bps, x->s.port_load, d->rate_bps);
		d->has_rates = true;
	} else if (x->madd) {
		policy_madd(m, d->order, n, x->s.free_bps, x->s.port_load, d->rate_bps);
		d->has_rates = true;
	}
	if (x->has_hook && x->hook.teacher && x->hook.dagger)
		return label(x, m, now_ns);
	if (x->has_hook && x->hook.record)
		x->hook.record(x->hook.ctx, g, x->perm, n, now_ns);
	return 0;
}

const struct policy_class policy_gnn = {
	.name = "gnn",
	.summary = "learned: DAG neural network + attention scores the coflows, MADD rates "
		   "(clairvoyant; weights: --weights, default the shipped model)",
	.clairvoyant = true,
	.opts = gnn_opts,
	.nopts = sizeof(gnn_opts) / sizeof(gnn_opts[0]),
	.init = gnn_init,
	.done = gnn_done,
	.on_event = gnn_on_event,
	.decide = gnn_decide,
};

struct gnn_model *policy_gnn_model_load(const char *weights, const char *backend,
					struct loom_err *err)
{
	struct gnn_err gerr = {{0}};
	char path[PATH_MAX];
	struct gnn_model *m;

	if (!weights)
		weights = policy_gnn_default_weights(path, sizeof(path));
	m = gnn_model_load(weights, backend, &gerr);
	if (!m) {
		int e = errno;

		loom_err_set(err, e, "cannot load the model: %s", gerr.msg);
		errno = e;
		return NULL;
	}
	if (gnn_model_config(m)->nfeatures != POLICY_NFEATURES &&
	    gnn_model_config(m)->nfeatures != POLICY_NFEATURES_RANKS) {
		loom_err_set(
			err, EINVAL,
			"model %s has %u input features per coflow, the gnn policy computes %u "
			"(or %u with the heuristics' places)",
			weights, gnn_model_config(m)->nfeatures, POLICY_NFEATURES,
			POLICY_NFEATURES_RANKS);
		gnn_model_free(m);
		errno = EINVAL;
		return NULL;
	}
	return m;
}

struct gnn_model *policy_gnn_model_free(struct gnn_model *m)
{
	return gnn_model_free(m);
}

bool policy_spec_uses_gnn(const char *spec)
{
	size_t n = strcspn(spec, ":");
	const char *b;

	if ((n == 3 && !strncmp(spec, "gnn", 3)) || (n == 8 && !strncmp(spec, "ensemble", 8)))
		return true;
	/* lookahead:...:base=gnn:... */
	if (n != 9 || strncmp(spec, "lookahead", 9) != 0)
		return false;
	for (b = spec + n; (b = strstr(b, ":base=gnn")) != NULL; b++)
		if (b[9] == ':' || b[9] == '\0')
			return true;
	return false;
}
