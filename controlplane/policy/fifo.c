/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fifo: coflows in arrival (release) order, MADD rates inside each coflow so
 * its flows finish together; the fabric backfills leftover capacity. This is
 * the "FIFO" of the coflow literature with Varys' rate allocation (Varys
 * SIGCOMM 2014 compares against it) and the simplest coflow-aware baseline.
 */
#include "controlplane/policy/policy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct fifo {
	double *free_bps;
	double *port_load;
};

static int fifo_init(struct policy *p, const struct cp_model *m)
{
	struct fifo *f = calloc(1, sizeof(*f));
	uint32_t nports = m->topo ? m->topo->nports : 0;

	if (!f)
		return -ENOMEM;
	if (!m->topo) {
		free(f);
		return -EINVAL;
	}
	f->free_bps = calloc(nports, sizeof(double));
	f->port_load = calloc(nports, sizeof(double));
	if (!f->free_bps || !f->port_load) {
		free(f->free_bps);
		free(f->port_load);
		free(f);
		return -ENOMEM;
	}
	p->priv = f;
	return 0;
}

static void fifo_done(struct policy *p)
{
	struct fifo *f = p->priv;

	if (!f)
		return;
	free(f->free_bps);
	free(f->port_load);
	free(f);
	p->priv = NULL;
}

static int cmp_arrival(const void *a, const void *b, void *ctx)
{
	const struct cp_model *m = ctx;
	const struct cp_coflow *x = &m->coflows[*(const uint32_t *)a];
	const struct cp_coflow *y = &m->coflows[*(const uint32_t *)b];
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;

	if (x->release_ns != y->release_ns)
		return x->release_ns < y->release_ns ? -1 : 1;
	return ia < ib ? -1 : ia > ib;
}

static int fifo_decide(struct policy *p, const struct cp_model *m, uint64_t now_ns,
		       struct policy_decision *d)
{
	struct fifo *f = p->priv;

	(void)now_ns;
	memcpy(d->order, m->active, m->nactive * sizeof(*d->order));
	d->norder = m->nactive;
	qsort_r(d->order, d->norder, sizeof(*d->order), cmp_arrival, (void *)m);
	policy_madd(m, d->order, d->norder, f->free_bps, f->port_load, d->rate_bps);
	d->has_rates = true;
	return 0;
}

const struct policy_class policy_fifo = {
	.name = "fifo",
	.summary = "coflows in arrival order, MADD rates within a coflow (clairvoyant)",
	.clairvoyant = true,
	.init = fifo_init,
	.done = fifo_done,
	.decide = fifo_decide,
};
