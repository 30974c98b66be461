/* SPDX-License-Identifier: BSD-3-Clause */
#include "controlplane/policy/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/dag.h"

int policy_scratch_init(struct policy_scratch *s, const struct cp_model *m)
{
	size_t nports, nc;

	memset(s, 0, sizeof(*s));
	if (!m || !m->topo)
		return -EINVAL;
	nports = m->topo->nports ? m->topo->nports : 1;
	nc = m->ncoflows ? m->ncoflows : 1;
	s->free_bps = calloc(nports, sizeof(double));
	s->port_load = calloc(nports, sizeof(double));
	s->key = calloc(nc, sizeof(double));
	s->key2 = calloc(nc, sizeof(double));
	if (!s->free_bps || !s->port_load || !s->key || !s->key2) {
		policy_scratch_done(s);
		return -ENOMEM;
	}
	return 0;
}

void policy_scratch_done(struct policy_scratch *s)
{
	free(s->free_bps);
	free(s->port_load);
	free(s->key);
	free(s->key2);
	memset(s, 0, sizeof(*s));
}

struct sort_ctx {
	const struct cp_model *m;
	const double *key, *key2;
};

static int cmp_keys(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *x = arg;
	uint32_t ca = *(const uint32_t *)a, cb = *(const uint32_t *)b;
	uint64_t ra = x->m->coflows[ca].release_ns, rb = x->m->coflows[cb].release_ns;

	if (x->key[ca] != x->key[cb])
		return x->key[ca] < x->key[cb] ? -1 : 1;
	if (x->key2 && x->key2[ca] != x->key2[cb])
		return x->key2[ca] < x->key2[cb] ? -1 : 1;
	if (ra != rb)
		return ra < rb ? -1 : 1;
	return ca < cb ? -1 : ca > cb;
}

uint32_t policy_sort_active(const struct cp_model *m, uint32_t *order, const double *key,
			    const double *key2)
{
	struct sort_ctx x = {.m = m, .key = key, .key2 = key2};

	memcpy(order, m->active, m->nactive * sizeof(*order));
	qsort_r(order, m->nactive, sizeof(*order), cmp_keys, &x);
	return m->nactive;
}

/* Adds coflow c's remaining bytes to port_load; returns the bottleneck so far. */
static double add_load(const struct cp_model *m, const struct cp_coflow *cf, double *port_load,
		       double worst)
{
	const uint32_t *slot = &m->flow_slot[cf->first_flow];
	const uint64_t *cap = m->topo->port_bps;

	for (uint32_t k = 0; k < cf->flows_left; k++) {
		const struct cp_flow *fl = &m->flows[slot[k]];

		for (uint32_t q = 0; q < fl->nports; q++) {
			uint32_t p = fl->ports[q];
			double t;

			port_load[p] += fl->remaining_bytes;
			t = port_load[p] * 8.0 / (double)cap[p];
			if (t > worst)
				worst = t;
		}
	}
	return worst;
}

static void clear_load(const struct cp_model *m, const struct cp_coflow *cf, double *port_load)
{
	const uint32_t *slot = &m->flow_slot[cf->first_flow];

	for (uint32_t k = 0; k < cf->flows_left; k++) {
		const struct cp_flow *fl = &m->flows[slot[k]];

		for (uint32_t q = 0; q < fl->nports; q++)
			port_load[fl->ports[q]] = 0;
	}
}

double policy_coflow_bottleneck_s(const struct cp_model *m, uint32_t c, double *port_load)
{
	const struct cp_coflow *cf = &m->coflows[c];
	double t = add_load(m, cf, port_load, 0);

	clear_load(m, cf, port_load);
	return t;
}

double policy_job_bottleneck_s(const struct cp_model *m, uint32_t j, double *port_load)
{
	const struct cp_job *jb = &m->jobs[j];
	double t = 0;

	for (uint32_t i = 0; i < jb->ncoflows; i++)
		t = add_load(m, &m->coflows[jb->first_coflow + i], port_load, t);
	for (uint32_t i = 0; i < jb->ncoflows; i++)
		clear_load(m, &m->coflows[jb->first_coflow + i], port_load);
	return t;
}

/* A job's coflows as nodes 0 .. ncoflows-1 (common/dag.h): coflow base + v. */
struct job_dag {
	const struct cp_model *m;
	uint32_t base;
};

static uint32_t job_child(const void *ctx, uint32_t v, uint32_t i)
{
	const struct job_dag *d = ctx;
	uint32_t ch = cp_coflow_child(d->m, d->base + v, i);

	return ch == LOOM_DAG_NONE ? ch : ch - d->base;
}

int policy_topo_order(const struct cp_model *m, uint32_t *out_all, uint32_t *indeg)
{
	for (uint32_t j = 0; j < m->njobs; j++) {
		const struct cp_job *jb = &m->jobs[j];
		struct job_dag d = {m, jb->first_coflow};
		uint32_t *out = &out_all[jb->first_coflow];

		/* both arrays are the caller's: nothing is allocated, 1 is a cycle */
		if (loom_dag_order(&(struct loom_dag){jb->ncoflows, job_child, &d}, out,
				   &indeg[jb->first_coflow], NULL) != 0)
			return -EINVAL;
		for (uint32_t i = 0; i < jb->ncoflows; i++)
			out[i] += jb->first_coflow;
	}
	return 0;
}
