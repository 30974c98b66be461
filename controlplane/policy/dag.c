/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DAG-aware orders for multi-stage jobs, with Varys' MADD rates inside each
 * coflow and work-conserving backfill (as sebf).
 *
 *   cpf   critical path first: the coflow heading the longest remaining
 *         path to its job's sink goes first. A coflow's remaining path is
 *         L(c) = T(c) + max over children (edge compute delay + L(child)),
 *         T(c) = its remaining bottleneck time on the empty fabric. This is
 *         the classic critical-path list-scheduling rule (Kwok and Ahmad,
 *         "Static scheduling algorithms for allocating directed task graphs
 *         to multiprocessors", ACM Computing Surveys 1999) applied to coflow
 *         DAGs, as in the DAG-aware coflow work of Shafiee and Ghaderi ("Scheduling
 *         coflows with dependency graph", IEEE/ACM ToN 2021) and Tian et al.
 *         ("Scheduling dependent coflows to minimize the total weighted job
 *         completion time", IEEE/ACM ToN 2020).
 *   srjf  smallest remaining job first: jobs ordered by their job-level
 *         bottleneck, max over ports of (bytes all the job's unfinished
 *         coflows still have through the port / capacity), the SEBF idea lifted
 *         to jobs; inside a job, the coflow on the longer remaining path first.
 *
 * Weighted forms (`weighted=1`, registered as "wcpf" and "wsrjf"): cpf orders
 * by weight x L(c), largest first; srjf by bottleneck / weight, smallest first
 * (Smith's ratio rule).
 */
#include "controlplane/policy/policy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/policy/util.h"

enum {
	OPT_WEIGHTED
};

static const struct policy_opt_def dag_opts[] = {
	[OPT_WEIGHTED] = {"weighted", "use job weights", POLICY_OPT_BOOL, 0, 0, 1, NULL},
};

enum dag_kind {
	DAG_CPF,
	DAG_SRJF
};

struct dag {
	enum dag_kind kind;
	bool weighted;
	struct policy_scratch s;
	uint32_t *topo;     /* ncoflows: each job's coflows in topological order */
	double *path_s;     /* ncoflows: L(c) */
	uint64_t *job_seen; /* njobs: decision stamp */
	double *job_key;    /* njobs: srjf's key */
	uint64_t gen;
};

static void dag_free(struct dag *x)
{
	policy_scratch_done(&x->s);
	free(x->topo);
	free(x->path_s);
	free(x->job_seen);
	free(x->job_key);
	free(x);
}

/* Each job's coflows in topological order; the builder rejected cycles. */
static int topo_sort(struct dag *x, const struct cp_model *m)
{
	uint32_t *indeg = calloc(m->ncoflows ? m->ncoflows : 1, sizeof(uint32_t));
	int r;

	if (!indeg)
		return -ENOMEM;
	r = policy_topo_order(m, x->topo, indeg);
	free(indeg);
	return r;
}

static int dag_init(struct policy *p, const struct cp_model *m, enum dag_kind kind)
{
	struct dag *x = calloc(1, sizeof(*x));
	int r;

	if (!x)
		return -ENOMEM;
	r = policy_scratch_init(&x->s, m);
	if (r < 0) {
		free(x);
		return r;
	}
	x->kind = kind;
	x->weighted = p->opt[OPT_WEIGHTED] == 1;
	x->topo = calloc(m->ncoflows ? m->ncoflows : 1, sizeof(uint32_t));
	x->path_s = calloc(m->ncoflows ? m->ncoflows : 1, sizeof(double));
	x->job_seen = calloc(m->njobs ? m->njobs : 1, sizeof(uint64_t));
	x->job_key = calloc(m->njobs ? m->njobs : 1, sizeof(double));
	if (!x->topo || !x->path_s || !x->job_seen || !x->job_key) {
		dag_free(x);
		return -ENOMEM;
	}
	r = topo_sort(x, m);
	if (r < 0) {
		dag_free(x);
		return r;
	}
	p->priv = x;
	return 0;
}

static int cpf_init(struct policy *p, const struct cp_model *m)
{
	return dag_init(p, m, DAG_CPF);
}

static int srjf_init(struct policy *p, const struct cp_model *m)
{
	return dag_init(p, m, DAG_SRJF);
}

static void dag_done(struct policy *p)
{
	if (p->priv)
		dag_free(p->priv);
	p->priv = NULL;
}

/* L(c) for every unfinished coflow of job j, children before parents. */
static void job_paths(struct dag *x, const struct cp_model *m, uint32_t j)
{
	const struct cp_job *jb = &m->jobs[j];

	for (uint32_t i = jb->ncoflows; i-- > 0;) {
		uint32_t c = x->topo[jb->first_coflow + i];
		const struct cp_coflow *cf = &m->coflows[c];
		double tail = 0;

		if (cf->state == CP_COFLOW_DONE) {
			x->path_s[c] = 0;
			continue;
		}
		for (uint32_t k = 0; k < cf->nchildren; k++) {
			const struct cp_edge *e = &m->edges[m->child_edge[cf->first_child + k]];
			double t = (double)e->delay_ns * 1e-9 + x->path_s[e->child];

			if (t > tail)
				tail = t;
		}
		x->path_s[c] = policy_coflow_bottleneck_s(m, c, x->s.port_load) + tail;
	}
}

static int dag_decide(struct policy *p, const struct cp_model *m, uint64_t now_ns,
		      struct policy_decision *d)
{
	struct dag *x = p->priv;

	(void)now_ns;
	x->gen++;
	for (uint32_t a = 0; a < m->nactive; a++) {
		uint32_t j = m->coflows[m->active[a]].job;

		if (x->job_seen[j] == x->gen)
			continue;
		x->job_seen[j] = x->gen;
		job_paths(x, m, j);
		if (x->kind == DAG_SRJF)
			x->job_key[j] = policy_job_bottleneck_s(m, j, x->s.port_load) /
					(x->weighted ? m->jobs[j].weight : 1.0);
	}
	for (uint32_t a = 0; a < m->nactive; a++) {
		uint32_t c = m->active[a], j = m->coflows[c].job;

		if (x->kind == DAG_CPF) {
			x->s.key[c] = -(x->weighted ? m->jobs[j].weight : 1.0) * x->path_s[c];
			x->s.key2[c] = 0;
		} else {
			x->s.key[c] = x->job_key[j];
			x->s.key2[c] = -x->path_s[c];
		}
	}
	d->norder = policy_sort_active(m, d->order, x->s.key, x->s.key2);
	policy_madd(m, d->order, d->norder, x->s.free_bps, x->s.port_load, d->rate_bps);
	d->has_rates = true;
	return 0;
}

#define DAG_CLASS(var, nm, sum, ini, pre)                                                          \
	const struct policy_class var = {                                                          \
		.name = nm,                                                                        \
		.summary = sum,                                                                    \
		.clairvoyant = true,                                                               \
		.opts = dag_opts,                                                                  \
		.nopts = sizeof(dag_opts) / sizeof(dag_opts[0]),                                   \
		.preset = pre,                                                                     \
		.init = ini,                                                                       \
		.done = dag_done,                                                                  \
		.decide = dag_decide,                                                              \
	}

DAG_CLASS(policy_cpf, "cpf", "critical path first: longest remaining DAG path, MADD (clairvoyant)",
	  cpf_init, NULL);
DAG_CLASS(policy_wcpf, "wcpf", "weighted cpf: job weight x remaining path, largest first", cpf_init,
	  "weighted=1");
DAG_CLASS(policy_srjf, "srjf",
	  "smallest remaining job first by job-level bottleneck, MADD (clairvoyant)", srjf_init,
	  NULL);
DAG_CLASS(policy_wsrjf, "wsrjf", "weighted srjf: job bottleneck / weight, smallest first",
	  srjf_init, "weighted=1");
