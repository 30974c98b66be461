/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Clairvoyant coflow orders with Varys' rate allocation: Chowdhury, Zhong and
 * Stoica, "Efficient Coflow Scheduling with Varys", SIGCOMM 2014.
 *
 *   scf   smallest coflow first: the one whose longest remaining flow is the
 *         smallest (Varys' "SCF", coflow length = its longest flow);
 *   ncf   narrowest coflow first: fewest flows (its width, fixed);
 *   lcf   least total bytes first: smallest total remaining bytes (Varys'
 *         "TCF", smallest total coflow);
 *   sebf  smallest effective bottleneck first: the smallest Gamma = max over
 *         the coflow's ports of remaining bytes through the port / the port's
 *         free capacity (§5.1).
 *
 * All four allocate with MADD (Pseudocode 1: each flow of a coflow gets
 * remaining / Gamma so all finish together, on what earlier coflows left),
 * and the fabric backfills the leftover capacity in the same order (work
 * conservation, §5.3). The fabric has no traffic but the coflows', so a
 * port's free capacity is its capacity. Ties go to the earlier release.
 */
#include "controlplane/policy/policy.h"

#include <errno.h>
#include <stdlib.h>

#include "controlplane/policy/util.h"

enum clair_kind {
	CLAIR_SCF,
	CLAIR_NCF,
	CLAIR_LCF,
	CLAIR_SEBF
};

struct clair {
	enum clair_kind kind;
	struct policy_scratch s;
};

static int clair_init(struct policy *p, const struct cp_model *m, enum clair_kind kind)
{
	struct clair *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	c->kind = kind;
	r = policy_scratch_init(&c->s, m);
	if (r < 0) {
		free(c);
		return r;
	}
	p->priv = c;
	return 0;
}

static int scf_init(struct policy *p, const struct cp_model *m)
{
	return clair_init(p, m, CLAIR_SCF);
}

static int ncf_init(struct policy *p, const struct cp_model *m)
{
	return clair_init(p, m, CLAIR_NCF);
}

static int lcf_init(struct policy *p, const struct cp_model *m)
{
	return clair_init(p, m, CLAIR_LCF);
}

static int sebf_init(struct policy *p, const struct cp_model *m)
{
	return clair_init(p, m, CLAIR_SEBF);
}

static void clair_done(struct policy *p)
{
	struct clair *c = p->priv;

	if (!c)
		return;
	policy_scratch_done(&c->s);
	free(c);
	p->priv = NULL;
}

static double clair_key(const struct clair *c, const struct cp_model *m, uint32_t ci)
{
	const struct cp_coflow *cf = &m->coflows[ci];
	const uint32_t *slot = &m->flow_slot[cf->first_flow];
	double v = 0;

	switch (c->kind) {
	case CLAIR_SCF:
		for (uint32_t k = 0; k < cf->flows_left; k++)
			if (m->flows[slot[k]].remaining_bytes > v)
				v = m->flows[slot[k]].remaining_bytes;
		return v;
	case CLAIR_NCF:
		return (double)cf->nflows;
	case CLAIR_LCF:
		for (uint32_t k = 0; k < cf->flows_left; k++)
			v += m->flows[slot[k]].remaining_bytes;
		return v;
	case CLAIR_SEBF:
		break;
	}
	return policy_coflow_bottleneck_s(m, ci, c->s.port_load);
}

static int clair_decide(struct policy *p, const struct cp_model *m, uint64_t now_ns,
			struct policy_decision *d)
{
	struct clair *c = p->priv;

	(void)now_ns;
	for (uint32_t a = 0; a < m->nactive; a++)
		c->s.key[m->active[a]] = clair_key(c, m, m->active[a]);
	d->norder = policy_sort_active(m, d->order, c->s.key, NULL);
	policy_madd(m, d->order, d->norder, c->s.free_bps, c->s.port_load, d->rate_bps);
	d->has_rates = true;
	return 0;
}

const struct policy_class policy_scf = {
	.name = "scf",
	.summary = "smallest longest remaining flow first, MADD rates (Varys SCF; clairvoyant)",
	.clairvoyant = true,
	.init = scf_init,
	.done = clair_done,
	.decide = clair_decide,
};

const struct policy_class policy_ncf = {
	.name = "ncf",
	.summary = "narrowest coflow (fewest flows) first, MADD rates (Varys NCF; clairvoyant)",
	.clairvoyant = true,
	.init = ncf_init,
	.done = clair_done,
	.decide = clair_decide,
};

const struct policy_class policy_lcf = {
	.name = "lcf",
	.summary = "least total remaining bytes first, MADD rates (Varys TCF; clairvoyant)",
	.clairvoyant = true,
	.init = lcf_init,
	.done = clair_done,
	.decide = clair_decide,
};

const struct policy_class policy_sebf = {
	.name = "sebf",
	.summary = "Varys: smallest effective bottleneck first, MADD rates, backfill (clairvoyant)",
	.clairvoyant = true,
	.init = sebf_init,
	.done = clair_done,
	.decide = clair_decide,
};
