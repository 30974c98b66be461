/* SPDX-License-Identifier: BSD-3-Clause */
#include "controlplane/policy/coflow_features.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/policy/util.h"

#define MIB (1048576.0)

const char *const policy_feature_names[POLICY_NFEATURES] = {
	"total_mib",    "remaining_mib", "width",       "longest_flow_mib",
	"bottleneck_s", "sent_fraction", "wait_s",      "schedulable",
	"depth",        "height",        "descendants", "desc_remaining_mib",
	"path_s",       "weight",        "job_age_s",   "job_bottleneck_s",
	"contention_s",
};

const char *const policy_rank_heuristics[POLICY_NRANK_HEUR] = {"sincronia", "wsrjf", "sebf", "lcf"};

void policy_graph_done(struct policy_graph *g)
{
	free(g->x);
	free(g->job_start);
	free(g->edges);
	free(g->sched);
	free(g->prior);
	free(g->node_coflow);
	free(g->topo);
	free(g->node_of);
	free(g->job_seen);
	free(g->desc_seen);
	free(g->stack);
	free(g->jobs);
	free(g->port_bytes);
	free(g->port_load);
	free(g->path_s);
	free(g->depth);
	free(g->height);
	memset(g, 0, sizeof(*g));
}

int policy_graph_init(struct policy_graph *g, const struct cp_model *m)
{
	return policy_graph_init_nfeat(g, m, POLICY_NFEATURES);
}

int policy_graph_init_nfeat(struct policy_graph *g, const struct cp_model *m, uint32_t nfeat)
{
	size_t nc = m->ncoflows ? m->ncoflows : 1, nj = m->njobs + 1, np;
	int r;

	memset(g, 0, sizeof(*g));
	if (!m->topo || (nfeat != POLICY_NFEATURES && nfeat != POLICY_NFEATURES_RANKS))
		return -EINVAL;
	np = m->topo->nports ? m->topo->nports : 1;
	g->nports = m->topo->nports;
	g->nfeat = nfeat;
	g->x = calloc(nc * nfeat, sizeof(float));
	g->job_start = calloc(nj, sizeof(uint32_t));
	g->edges = calloc(2 * (m->nedges ? m->nedges : 1), sizeof(uint32_t));
	g->sched = calloc(nc, sizeof(uint32_t));
	g->prior = calloc(nc, sizeof(float));
	g->node_coflow = calloc(nc, sizeof(uint32_t));
	g->topo = calloc(nc, sizeof(uint32_t));
	g->node_of = malloc(nc * sizeof(uint32_t));
	g->job_seen = calloc(nj, sizeof(uint32_t));
	g->desc_seen = calloc(nc, sizeof(uint32_t));
	g->stack = calloc(nc, sizeof(uint32_t));
	g->jobs = calloc(nj, sizeof(uint32_t));
	g->port_bytes = calloc(np, sizeof(double));
	g->port_load = calloc(np, sizeof(double));
	g->path_s = calloc(nc, sizeof(double));
	g->depth = calloc(nc, sizeof(uint32_t));
	g->height = calloc(nc, sizeof(uint32_t));
	if (!g->x || !g->job_start || !g->edges || !g->sched || !g->prior || !g->node_coflow ||
	    !g->topo || !g->node_of || !g->job_seen || !g->desc_seen || !g->stack || !g->jobs ||
	    !g->port_bytes || !g->port_load || !g->path_s || !g->depth || !g->height) {
		policy_graph_done(g);
		return -ENOMEM;
	}
	for (size_t c = 0; c < nc; c++)
		g->node_of[c] = CP_NONE;
	r = policy_topo_order(m, g->topo, g->stack); /* stack is free until the first build */
	if (r < 0)
		policy_graph_done(g);
	return r;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static float lg(double v)
{
	return (float)log1p(v > 0 ? v : 0);
}

static double remaining_bytes(const struct cp_coflow *cf)
{
	double r = (double)cf->total_bytes - cf->sent_bytes;

	return r > 0 ? r : 0;
}

/* Count and remaining bytes of the unfinished descendants of c (DFS with a stamp). */
static void descendants(struct policy_graph *g, const struct cp_model *m, uint32_t c,
			uint32_t *ret_n, double *ret_bytes)
{
	uint32_t top = 0, n = 0;
	double bytes = 0;

	if (++g->dstamp == 0) {
		memset(g->desc_seen, 0, (m->ncoflows ? m->ncoflows : 1) * sizeof(uint32_t));
		g->dstamp = 1;
	}
	g->stack[top++] = c;
	while (top) {
		const struct cp_coflow *cf = &m->coflows[g->stack[--top]];

		for (uint32_t k = 0; k < cf->nchildren; k++) {
			uint32_t ch = m->edges[m->child_edge[cf->first_child + k]].child;

			if (g->desc_seen[ch] == g->dstamp || m->coflows[ch].state == CP_COFLOW_DONE)
				continue;
			g->desc_seen[ch] = g->dstamp;
			n++;
			bytes += remaining_bytes(&m->coflows[ch]);
			g->stack[top++] = ch;
		}
	}
	*ret_n = n;
	*ret_bytes = bytes;
}

/*
 * One pass over c's unfinished flows: the longest remaining flow (bytes) and
 * the contention (seconds): max over c's ports of the remaining bytes every
 * schedulable coflow has through the port, over the port's capacity.
 */
static void flow_pass(const struct policy_graph *g, const struct cp_model *m,
		      const struct cp_coflow *cf, double *ret_longest, double *ret_contention)
{
	const uint32_t *slot = &m->flow_slot[cf->first_flow];
	const uint64_t *cap = m->topo->port_bps;
	double longest = 0, cont = 0;

	for (uint32_t k = 0; k < cf->flows_left; k++) {
		const struct cp_flow *fl = &m->flows[slot[k]];

		if (fl->remaining_bytes > longest)
			longest = fl->remaining_bytes;
		for (uint32_t q = 0; q < fl->nports; q++) {
			double t = g->port_bytes[fl->ports[q]] * 8.0 / (double)cap[fl->ports[q]];

			if (t > cont)
				cont = t;
		}
	}
	*ret_longest = longest;
	*ret_contention = cont;
}

/*
 * Adds the remaining bytes of the schedulable coflows per port (set: true),
 * or zeroes those ports again (false: exact, no drift across builds).
 */
static void port_bytes_add(struct policy_graph *g, const struct cp_model *m, bool set)
{
	for (uint32_t a = 0; a < m->nactive; a++) {
		const struct cp_coflow *cf = &m->coflows[m->active[a]];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];

		for (uint32_t k = 0; k < cf->flows_left; k++) {
			const struct cp_flow *fl = &m->flows[slot[k]];

			for (uint32_t q = 0; q < fl->nports; q++)
				g->port_bytes[fl->ports[q]] =
					set ? g->port_bytes[fl->ports[q]] + fl->remaining_bytes : 0;
		}
	}
}

/* Nodes, edges, depth, height and critical path of job j's unfinished coflows. */
static void build_job(struct policy_graph *g, const struct cp_model *m, uint32_t j, uint64_t now_ns)
{
	const struct cp_job *jb = &m->jobs[j];
	const uint32_t *topo = &g->topo[jb->first_coflow];
	uint32_t first = g->nnodes;
	double job_bn = policy_job_bottleneck_s(m, j, g->port_load);
	double age_s = now_ns > jb->arrival_ns ? (double)(now_ns - jb->arrival_ns) * 1e-9 : 0;

	/* nodes in topological order; depth from the unfinished parents */
	for (uint32_t i = 0; i < jb->ncoflows; i++) {
		uint32_t c = topo[i], v;
		const struct cp_coflow *cf = &m->coflows[c];
		uint32_t depth = 0;

		if (cf->state == CP_COFLOW_DONE)
			continue;
		v = g->nnodes++;
		g->node_of[c] = v;
		g->node_coflow[v] = c;
		for (uint32_t k = 0; k < cf->nparents; k++) {
			uint32_t par = m->edges[cf->first_parent + k].parent;

			if (g->node_of[par] == CP_NONE)
				continue; /* finished */
			g->edges[2 * g->nedges] = g->node_of[par];
			g->edges[2 * g->nedges + 1] = v;
			g->nedges++;
			if (g->depth[par] + 1 > depth)
				depth = g->depth[par] + 1;
		}
		g->depth[c] = depth;
		if (cf->state == CP_COFLOW_ACTIVE)
			g->sched[g->nsched++] = v;
	}
	/* height, remaining critical path and the per-flow features, children first */
	for (uint32_t i = jb->ncoflows; i-- > 0;) {
		uint32_t c = topo[i], h = 0;
		const struct cp_coflow *cf = &m->coflows[c];
		double tail = 0, bn, longest, cont;
		float *x;

		if (cf->state == CP_COFLOW_DONE)
			continue;
		for (uint32_t k = 0; k < cf->nchildren; k++) {
			const struct cp_edge *e = &m->edges[m->child_edge[cf->first_child + k]];
			double t = (double)e->delay_ns * 1e-9 + g->path_s[e->child];

			if (g->height[e->child] + 1 > h)
				h = g->height[e->child] + 1;
			if (t > tail)
				tail = t;
		}
		g->height[c] = h;
		bn = policy_coflow_bottleneck_s(m, c, g->port_load);
		g->path_s[c] = bn + tail;
		/* the features that walk c's flows, while we are here */
		flow_pass(g, m, cf, &longest, &cont);
		x = &g->x[(size_t)g->node_of[c] * g->nfeat];
		x[PF_BOTTLENECK_S] = lg(bn);
		x[PF_LONGEST_FLOW_MIB] = lg(longest / MIB);
		x[PF_CONTENTION_S] = lg(cont);
	}
	/* the other features */
	for (uint32_t v = first; v < g->nnodes; v++) {
		uint32_t c = g->node_coflow[v], ndesc;
		const struct cp_coflow *cf = &m->coflows[c];
		float *x = &g->x[(size_t)v * g->nfeat];
		double rem = remaining_bytes(cf), desc_bytes;
		bool active = cf->state == CP_COFLOW_ACTIVE;

		descendants(g, m, c, &ndesc, &desc_bytes);
		x[PF_TOTAL_MIB] = lg((double)cf->total_bytes / MIB);
		x[PF_REMAINING_MIB] = lg(rem / MIB);
		x[PF_WIDTH] = lg(cf->nflows);
		x[PF_SENT_FRACTION] =
			cf->total_bytes ? (float)(cf->sent_bytes / (double)cf->total_bytes) : 0;
		x[PF_WAIT_S] = active && now_ns > cf->release_ns ?
				       lg((double)(now_ns - cf->release_ns) * 1e-9) :
				       0;
		x[PF_SCHEDULABLE] = active ? 1.0f : 0.0f;
		x[PF_DEPTH] = lg(g->depth[c]);
		x[PF_HEIGHT] = lg(g->height[c]);
		x[PF_DESCENDANTS] = lg(ndesc);
		x[PF_DESC_REMAINING_MIB] = lg(desc_bytes / MIB);
		x[PF_PATH_S] = lg(g->path_s[c]);
		x[PF_WEIGHT] = lg(jb->weight);
		x[PF_JOB_AGE_S] = lg(age_s);
		x[PF_JOB_BOTTLENECK_S] = lg(job_bn);
	}
}

void policy_graph_build(struct policy_graph *g, const struct cp_model *m, uint64_t now_ns)
{
	uint32_t njobs = 0;

	for (uint32_t v = 0; v < g->nnodes; v++)
		g->node_of[g->node_coflow[v]] = CP_NONE;
	g->nnodes = g->njobs = g->nedges = g->nsched = 0;
	if (++g->stamp == 0) {
		memset(g->job_seen, 0, (m->njobs + 1) * sizeof(uint32_t));
		g->stamp = 1;
	}
	/* the jobs with a schedulable coflow, in job order */
	for (uint32_t a = 0; a < m->nactive; a++) {
		uint32_t j = m->coflows[m->active[a]].job;

		if (g->job_seen[j] != g->stamp) {
			g->job_seen[j] = g->stamp;
			g->jobs[njobs++] = j;
		}
	}
	qsort(g->jobs, njobs, sizeof(uint32_t), cmp_u32);
	port_bytes_add(g, m, true);
	for (uint32_t i = 0; i < njobs; i++) {
		g->job_start[g->njobs++] = g->nnodes;
		build_job(g, m, g->jobs[i], now_ns);
	}
	g->job_start[g->njobs] = g->nnodes;
	port_bytes_add(g, m, false);
}
