/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The LP lower bound on average weighted JCT (and on average CCT of
 * single-stage workloads): completion-time variables per coflow and job,
 * isolation and DAG precedence rows, and per port the parallel (Queyranne)
 * inequalities with release dates, separated lazily. docs/bounds.md has the
 * formulation and the proof that every schedule satisfies it.
 *
 * Times inside are seconds measured from the first job's arrival (t0), so
 * that the LP sees numbers of the workload's own scale. A cut is stored
 * divided by its set's total processing time p(S):
 *   sum_{j in S} (p_j / p(S)) C_j >= r_min(S) + (p(S)^2 + sum p_j^2) / (2 p(S)),
 * which keeps every coefficient in (0, 1] and the right-hand side in seconds.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/dag.h"
#include "common/errors.h"
#include "controlplane/sim/sim.h"

#ifdef LOOM_HAVE_GLPK
#include <glpk.h>
#endif

#define NS_PER_S 1e9

void sim_bound_opts_default(struct sim_bound_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_rounds = 500;
	o->tol = 1e-4;
	o->time_limit_s = 0;
	o->thresholds = 0;
}

bool sim_bound_lp_available(void)
{
#ifdef LOOM_HAVE_GLPK
	return true;
#else
	return false;
#endif
}

#ifndef LOOM_HAVE_GLPK

int sim_bound_lp(const struct cp_model *m, const struct sim_bound_opts *o,
		 struct sim_bound_result *ret, struct loom_err *err)
{
	(void)m;
	(void)o;
	(void)ret;
	return loom_err_set(err, ENOTSUP, "LP bound: built without GLPK (libglpk-dev; meson -Dlp)");
}

#else

/* One (coflow, processing time) entry of a port's list. */
struct port_entry {
	uint32_t coflow;
	double p_s; /* bytes through the port * 8 / capacity */
};

struct lp_state {
	const struct cp_model *m;
	const struct sim_bound_opts *o;
	glp_prob *lp;
	uint32_t nports;
	uint32_t *port_first;     /* nports + 1: CSR offsets into ent */
	struct port_entry *ent;   /* grouped by port */
	double *rel_s;            /* per coflow: lower bound on its release, from t0 */
	double *c_s;              /* per coflow: current LP value */
	struct port_entry *order; /* scratch: one port's list sorted by C */
	double *thr;              /* scratch: release thresholds */
	int *ind;                 /* scratch: GLPK row indices (1-based) */
	double *val;
	double eps_s; /* a cut counts as violated beyond this */
	uint32_t rounds, cuts;
	bool converged, timed_out;
	double max_viol_s;
	uint64_t t_start_ns;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Orders a port's entries by the current C (ctx), ties by coflow index. */
static int cmp_entry_c(const void *a, const void *b, void *ctx)
{
	const struct port_entry *x = a, *y = b;
	const double *c_s = ctx;
	double cx = c_s[x->coflow], cy = c_s[y->coflow];

	if (cx != cy)
		return (cx > cy) - (cx < cy);
	return (x->coflow > y->coflow) - (x->coflow < y->coflow);
}

/*
 * Builds the per-port lists: for each coflow the bytes it sends through each
 * port, as processing time at the port's capacity. 0 or -ENOMEM.
 */
static int build_ports(struct lp_state *s)
{
	const struct cp_model *m = s->m;
	_cleanup_free_ double *bytes = NULL;
	_cleanup_free_ uint32_t *touched = NULL, *fill = NULL;
	size_t nent = 0;

	bytes = calloc(s->nports + 1, sizeof(*bytes));
	touched = calloc(s->nports + 1, sizeof(*touched));
	fill = calloc(s->nports + 1, sizeof(*fill));
	s->port_first = calloc(s->nports + 1, sizeof(*s->port_first));
	if (!bytes || !touched || !fill || !s->port_first)
		return -ENOMEM;
	/* pass 1 counts (coflow, port) pairs per port, pass 2 fills them */
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t c = 0; c < m->ncoflows; c++) {
			const struct cp_coflow *cf = &m->coflows[c];
			uint32_t nt = 0;

			for (uint32_t f = cf->first_flow; f < cf->first_flow + cf->nflows; f++) {
				const struct cp_flow *fl = &m->flows[f];

				for (uint32_t k = 0; k < fl->nports; k++) {
					uint32_t p = fl->ports[k];

					if (bytes[p] == 0 && fl->bytes > 0)
						touched[nt++] = p;
					bytes[p] += (double)fl->bytes;
				}
			}
			for (uint32_t i = 0; i < nt; i++) {
				uint32_t p = touched[i];

				if (pass == 0) {
					s->port_first[p + 1]++;
				} else {
					struct port_entry *e =
						&s->ent[s->port_first[p] + fill[p]++];

					e->coflow = c;
					e->p_s = bytes[p] * 8.0 / (double)m->topo->port_bps[p];
				}
				bytes[p] = 0;
			}
		}
		if (pass == 0) {
			for (uint32_t p = 0; p < s->nports; p++)
				s->port_first[p + 1] += s->port_first[p];
			nent = s->port_first[s->nports];
			s->ent = calloc(nent ? nent : 1, sizeof(*s->ent));
			if (!s->ent)
				return -ENOMEM;
		}
	}
	return 0;
}

/*
 * Earliest release and isolation of every coflow (the project's isolation,
 * cp_coflow_isolation_ns()), in Kahn order: rel(c) = max(arrival + offset,
 * max over parents of rel(parent) + iso(parent) + delay). Fills s->rel_s and
 * iso_s (seconds from t0). 0 or -ENOMEM.
 */
static int release_bounds(struct lp_state *s, double t0_s, double *iso_s)
{
	const struct cp_model *m = s->m;
	_cleanup_free_ double *scratch = NULL;
	_cleanup_free_ uint32_t *order = NULL;
	uint32_t n = m->ncoflows ? m->ncoflows : 1;
	int r;

	scratch = calloc(s->nports + 1, sizeof(*scratch));
	order = calloc(n, sizeof(*order));
	if (!scratch || !order)
		return -ENOMEM;
	r = loom_dag_order(&(struct loom_dag){m->ncoflows, cp_coflow_child, m}, order, NULL, NULL);
	if (r < 0)
		return r;
	for (uint32_t c = 0; c < m->ncoflows; c++) {
		const struct cp_coflow *cf = &m->coflows[c];

		iso_s[c] = (double)cp_coflow_isolation_ns(m, c, scratch) / NS_PER_S;
		s->rel_s[c] =
			(double)(m->jobs[cf->job].arrival_ns + cf->release_offset_ns) / NS_PER_S -
			t0_s;
	}
	/* the builder rejected cycles; a coflow left by one would be LOOM_DAG_NONE */
	for (uint32_t k = 0; k < m->ncoflows && order[k] != LOOM_DAG_NONE; k++) {
		uint32_t c = order[k];
		const struct cp_coflow *cf = &m->coflows[c];

		for (uint32_t i = 0; i < cf->nchildren; i++) {
			const struct cp_edge *e = &m->edges[m->child_edge[cf->first_child + i]];
			double rel = s->rel_s[c] + iso_s[c] + (double)e->delay_ns / NS_PER_S;

			if (rel > s->rel_s[e->child])
				s->rel_s[e->child] = rel;
		}
	}
	return 0;
}

/* Adds the static rows and columns; the objective weighs job j by w[j]. */
static void build_lp(struct lp_state *s, const double *iso_s, double t0_s)
{
	const struct cp_model *m = s->m;
	uint32_t nc = m->ncoflows;
	int ind[3];
	double val[3];

	glp_set_obj_dir(s->lp, GLP_MIN);
	glp_add_cols(s->lp, (int)(nc + m->njobs));
	for (uint32_t c = 0; c < nc; c++)
		glp_set_col_bnds(s->lp, (int)c + 1, GLP_LO, s->rel_s[c] + iso_s[c], 0);
	for (uint32_t j = 0; j < m->njobs; j++) {
		const struct cp_job *jb = &m->jobs[j];
		double lb = (double)jb->arrival_ns / NS_PER_S - t0_s;

		for (uint32_t c = jb->first_coflow; c < jb->first_coflow + jb->ncoflows; c++)
			if (s->rel_s[c] + iso_s[c] > lb)
				lb = s->rel_s[c] + iso_s[c];
		glp_set_col_bnds(s->lp, (int)(nc + j) + 1, GLP_LO, lb, 0);
	}
	/* precedence: C_child - C_parent >= delay + iso(child) */
	for (uint32_t e = 0; e < m->nedges; e++) {
		const struct cp_edge *ed = &m->edges[e];
		int row = glp_add_rows(s->lp, 1);

		ind[1] = (int)ed->child + 1;
		val[1] = 1;
		ind[2] = (int)ed->parent + 1;
		val[2] = -1;
		glp_set_mat_row(s->lp, row, 2, ind, val);
		glp_set_row_bnds(s->lp, row, GLP_LO,
				 (double)ed->delay_ns / NS_PER_S + iso_s[ed->child], 0);
	}
	/* F_job >= C of each coflow without children (the others are implied) */
	for (uint32_t c = 0; c < nc; c++) {
		int row;

		if (m->coflows[c].nchildren)
			continue;
		row = glp_add_rows(s->lp, 1);
		ind[1] = (int)(nc + m->coflows[c].job) + 1;
		val[1] = 1;
		ind[2] = (int)c + 1;
		val[2] = -1;
		glp_set_mat_row(s->lp, row, 2, ind, val);
		glp_set_row_bnds(s->lp, row, GLP_LO, 0, 0);
	}
}

/*
 * The most violated parallel inequality of port p among the prefixes (in
 * order of the current C) of the port's coflows released no earlier than
 * each of up to o->thresholds release thresholds (0: every distinct release,
 * which makes the separation exact: for a fixed threshold the most violated
 * set is a prefix in C order, Queyranne's argument). Adds it as a row when add
 * is true and it is violated by more than eps_s; returns 1 when added, 0
 * when not, and keeps the largest violation seen in s->max_viol_s.
 */
static int separate_port(struct lp_state *s, uint32_t p, bool add)
{
	uint32_t first = s->port_first[p], n = s->port_first[p + 1] - first, nthr = 0;
	double best = 0, best_thr = 0;
	uint32_t best_len = 0;
	double best_p = 0, best_q = 0, best_r = 0;

	if (n == 0)
		return 0;
	memcpy(s->order, &s->ent[first], n * sizeof(*s->order));
	qsort_r(s->order, n, sizeof(*s->order), cmp_entry_c, s->c_s);
	/* thresholds: evenly spaced in the sorted releases, the smallest first */
	for (uint32_t i = 0; i < n; i++)
		s->thr[i] = s->rel_s[s->order[i].coflow];
	qsort(s->thr, n, sizeof(*s->thr), cmp_double);
	{
		uint32_t want = s->o->thresholds ? s->o->thresholds : n, k = 0;

		for (uint32_t i = 0; i < want && i < n; i++) {
			double t = s->thr[(size_t)i * n / (want < n ? want : n)];

			if (k == 0 || t > s->thr[k - 1])
				s->thr[k++] = t;
		}
		nthr = k;
	}
	for (uint32_t t = 0; t < nthr; t++) {
		double thr = s->thr[t], sp = 0, sq = 0, lhs = 0, rmin = INFINITY;
		uint32_t len = 0;

		for (uint32_t i = 0; i < n; i++) {
			const struct port_entry *e = &s->order[i];
			double r = s->rel_s[e->coflow], viol;

			if (r < thr)
				continue;
			sp += e->p_s;
			sq += e->p_s * e->p_s;
			lhs += e->p_s * s->c_s[e->coflow];
			if (r < rmin)
				rmin = r;
			len = i + 1;
			viol = rmin + (sp * sp + sq) / (2 * sp) - lhs / sp;
			if (viol > best) {
				best = viol;
				best_thr = thr;
				best_len = len;
				best_p = sp;
				best_q = sq;
				best_r = rmin;
			}
		}
	}
	if (best > s->max_viol_s)
		s->max_viol_s = best;
	if (best <= s->eps_s || !add)
		return 0;
	{
		int row = glp_add_rows(s->lp, 1), k = 0;

		for (uint32_t i = 0; i < best_len; i++) {
			const struct port_entry *e = &s->order[i];

			if (s->rel_s[e->coflow] < best_thr)
				continue;
			k++;
			s->ind[k] = (int)e->coflow + 1;
			s->val[k] = e->p_s / best_p;
		}
		glp_set_mat_row(s->lp, row, k, s->ind, s->val);
		glp_set_row_bnds(s->lp, row, GLP_LO,
				 best_r + (best_p * best_p + best_q) / (2 * best_p), 0);
	}
	return 1;
}

/* Solves (warm: dual simplex after cuts); 0, or -EIO with err filled. */
static int solve(struct lp_state *s, int meth, struct loom_err *err)
{
	glp_smcp parm;
	int r;

	glp_init_smcp(&parm);
	parm.msg_lev = GLP_MSG_OFF;
	parm.meth = meth;
	r = glp_simplex(s->lp, &parm);
	if (r != 0 && meth == GLP_DUALP) {
		/* the dual simplex may give up on a badly conditioned basis: retry primal */
		parm.meth = GLP_PRIMAL;
		r = glp_simplex(s->lp, &parm);
	}
	if (r != 0 || glp_get_status(s->lp) != GLP_OPT)
		return loom_err_set(err, EIO, "LP bound: GLPK simplex failed (code %d, status %d)",
				    r, glp_get_status(s->lp));
	return 0;
}

/*
 * Separation rounds until no cut is violated beyond eps_s, the round cap or
 * the time limit. Returns 0 with the LP optimal for the current cuts, or -EIO.
 */
static int cut_loop(struct lp_state *s, struct loom_err *err)
{
	int r = solve(s, GLP_PRIMAL, err);

	while (r == 0) {
		uint32_t added = 0;
		bool add = s->rounds < s->o->max_rounds;

		if (add && s->o->time_limit_s > 0 &&
		    (double)(loom_clock_mono_ns() - s->t_start_ns) / NS_PER_S >
			    s->o->time_limit_s) {
			s->timed_out = true;
			add = false;
		}
		for (uint32_t c = 0; c < s->m->ncoflows; c++)
			s->c_s[c] = glp_get_col_prim(s->lp, (int)c + 1);
		s->max_viol_s = 0;
		/* out of rounds or time, only measure: the bound is the last optimum */
		for (uint32_t p = 0; p < s->nports; p++)
			added += (uint32_t)separate_port(s, p, add);
		s->converged = s->max_viol_s <= s->eps_s;
		if (!added)
			break;
		s->cuts += added;
		s->rounds++;
		r = solve(s, GLP_DUALP, err);
	}
	return r;
}

static void state_done(struct lp_state *s)
{
	if (s->lp)
		glp_delete_prob(s->lp);
	free(s->port_first);
	free(s->ent);
	free(s->rel_s);
	free(s->c_s);
	free(s->order);
	free(s->thr);
	free(s->ind);
	free(s->val);
}

int sim_bound_lp(const struct cp_model *m, const struct sim_bound_opts *o,
		 struct sim_bound_result *ret, struct loom_err *err)
{
	struct sim_bound_opts def;
	struct lp_state s;
	struct sim_bound_result res;
	_cleanup_free_ double *iso_s = NULL;
	double t0_s = 0, iso_sum = 0, wsum = 0, obj;
	bool single_stage = true, unit_weights = true;
	uint32_t maxn = 1;
	int r, term;

	if (!m || !m->topo)
		return loom_err_set(err, EINVAL, "LP bound: the model is not bound to a fabric");
	if (m->njobs == 0)
		return loom_err_set(err, EINVAL, "LP bound: the workload has no jobs");
	if (!o) {
		sim_bound_opts_default(&def);
		o = &def;
	}
	memset(&s, 0, sizeof(s));
	memset(&res, 0, sizeof(res));
	s.m = m;
	s.o = o;
	s.nports = m->topo->nports;
	s.t_start_ns = loom_clock_mono_ns();
	t0_s = (double)m->jobs[0].arrival_ns / NS_PER_S;
	for (uint32_t j = 0; j < m->njobs; j++) {
		double a = (double)m->jobs[j].arrival_ns / NS_PER_S;

		if (a < t0_s)
			t0_s = a;
		if (m->jobs[j].ncoflows != 1)
			single_stage = false;
		if (m->jobs[j].weight != 1)
			unit_weights = false;
	}
	r = -ENOMEM;
	iso_s = calloc(m->ncoflows + 1, sizeof(*iso_s));
	s.rel_s = calloc(m->ncoflows + 1, sizeof(*s.rel_s));
	s.c_s = calloc(m->ncoflows + 1, sizeof(*s.c_s));
	if (!iso_s || !s.rel_s || !s.c_s || build_ports(&s) < 0 ||
	    release_bounds(&s, t0_s, iso_s) < 0)
		goto nomem;
	for (uint32_t p = 0; p < s.nports; p++)
		if (s.port_first[p + 1] - s.port_first[p] > maxn)
			maxn = s.port_first[p + 1] - s.port_first[p];
	s.order = calloc(maxn, sizeof(*s.order));
	s.thr = calloc(maxn, sizeof(*s.thr));
	s.ind = calloc((size_t)maxn + 1, sizeof(*s.ind));
	s.val = calloc((size_t)maxn + 1, sizeof(*s.val));
	if (!s.order || !s.thr || !s.ind || !s.val)
		goto nomem;
	for (uint32_t c = 0; c < m->ncoflows; c++)
		iso_sum += iso_s[c];
	s.eps_s = o->tol * (m->ncoflows ? iso_sum / m->ncoflows : 0);
	if (s.eps_s < 1e-12)
		s.eps_s = 1e-12;

	term = glp_term_out(GLP_OFF);
	s.lp = glp_create_prob();
	build_lp(&s, iso_s, t0_s);
	for (uint32_t j = 0; j < m->njobs; j++) {
		glp_set_obj_coef(s.lp, (int)(m->ncoflows + j) + 1, m->jobs[j].weight);
		wsum += m->jobs[j].weight * ((double)m->jobs[j].arrival_ns / NS_PER_S - t0_s);
	}
	r = cut_loop(&s, err);
	if (r < 0)
		goto out;
	obj = glp_get_obj_val(s.lp);
	res.avg_wjct_s = (obj - wsum) / m->njobs;
	res.avg_cct_s = NAN;
	res.converged = s.converged;
	if (single_stage) {
		double off = 0;

		for (uint32_t j = 0; j < m->njobs; j++)
			off += (double)m->jobs[j].arrival_ns / NS_PER_S - t0_s +
			       (double)m->coflows[m->jobs[j].first_coflow].release_offset_ns /
				       NS_PER_S;
		if (!unit_weights) {
			for (uint32_t j = 0; j < m->njobs; j++)
				glp_set_obj_coef(s.lp, (int)(m->ncoflows + j) + 1, 1);
			r = cut_loop(&s, err);
			if (r < 0)
				goto out;
			res.converged = res.converged && s.converged;
		}
		res.avg_cct_s = (glp_get_obj_val(s.lp) - off) / m->njobs;
	}
	res.rounds = s.rounds;
	res.cuts = s.cuts;
	res.rows = (uint32_t)glp_get_num_rows(s.lp);
	res.cols = (uint32_t)glp_get_num_cols(s.lp);
	res.max_violation_s = s.max_viol_s;
	res.timed_out = s.timed_out;
	res.solve_s = (double)(loom_clock_mono_ns() - s.t_start_ns) / NS_PER_S;
	*ret = res;
	r = 0;
out:
	glp_term_out(term);
	state_done(&s);
	return r;
nomem:
	state_done(&s);
	return loom_err_set(err, ENOMEM, "LP bound: out of memory");
}

#endif
