/* SPDX-License-Identifier: BSD-3-Clause */
#include "controlplane/policy/policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct policy_class *const registry[] = {
	&policy_fifo,
	&policy_fair,
};

const struct policy_class *const *policy_class_list(size_t *ret_n)
{
	*ret_n = sizeof(registry) / sizeof(registry[0]);
	return registry;
}

const struct policy_class *policy_class_find(const char *name)
{
	for (size_t i = 0; name && i < sizeof(registry) / sizeof(registry[0]); i++)
		if (strcmp(registry[i]->name, name) == 0)
			return registry[i];
	return NULL;
}

struct policy *policy_new(const char *name, const struct policy_params *params,
			  const struct cp_model *m, struct loom_err *err)
{
	const struct policy_class *cls = policy_class_find(name);
	struct policy *p;
	int r;

	if (!cls) {
		char known[256] = "";
		size_t off = 0;

		for (size_t i = 0; i < sizeof(registry) / sizeof(registry[0]); i++)
			off += (size_t)snprintf(known + off,
						off < sizeof(known) ? sizeof(known) - off : 0,
						"%s%s", i ? ", " : "", registry[i]->name);
		loom_err_set(err, ENOENT, "unknown policy '%s' (known: %s)", name ? name : "",
			     known);
		errno = ENOENT;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		loom_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	p->cls = cls;
	if (params)
		p->params = *params;
	if (p->params.classes == 0)
		p->params.classes = 8;
	loom_rng_seed(&p->rng, p->params.seed);
	r = cls->init ? cls->init(p, m) : 0;
	if (r < 0) {
		loom_err_set(err, -r, "policy '%s': initialisation failed: %s", name, strerror(-r));
		free(p);
		errno = -r;
		return NULL;
	}
	return p;
}

struct policy *policy_free(struct policy *p)
{
	if (!p)
		return NULL;
	if (p->cls->done)
		p->cls->done(p);
	free(p);
	return NULL;
}

int policy_decision_init(struct policy_decision *d, const struct cp_model *m)
{
	size_t nc = m->ncoflows ? m->ncoflows : 1, nf = m->nflows ? m->nflows : 1;

	memset(d, 0, sizeof(*d));
	d->order = calloc(nc, sizeof(*d->order));
	d->class_of = calloc(nc, sizeof(*d->class_of));
	d->rate_bps = calloc(nf, sizeof(*d->rate_bps));
	d->watch = calloc(nc, sizeof(*d->watch));
	if (!d->order || !d->class_of || !d->rate_bps || !d->watch) {
		policy_decision_done(d);
		return -ENOMEM;
	}
	policy_decision_clear(d);
	return 0;
}

void policy_decision_done(struct policy_decision *d)
{
	free(d->order);
	free(d->class_of);
	free(d->rate_bps);
	free(d->watch);
	memset(d, 0, sizeof(*d));
}

void policy_decision_clear(struct policy_decision *d)
{
	d->norder = 0;
	d->has_classes = false;
	d->has_rates = false;
	d->wakeup_ns = CP_TIME_NEVER;
	d->nwatch = 0;
}

int policy_decision_validate(const struct policy_decision *d, const struct cp_model *m,
			     uint32_t *stamp, uint32_t gen, struct loom_err *err)
{
	if (d->norder != m->nactive)
		return loom_err_set(err, EPROTO, "decision orders %u coflows, %u are schedulable",
				    d->norder, m->nactive);
	for (uint32_t i = 0; i < d->norder; i++) {
		uint32_t c = d->order[i];

		if (c >= m->ncoflows || m->coflows[c].state != CP_COFLOW_ACTIVE)
			return loom_err_set(
				err, EPROTO,
				"decision position %u: coflow index %u is not schedulable", i, c);
		if (stamp[c] == gen)
			return loom_err_set(err, EPROTO, "decision lists coflow %llu twice",
					    (unsigned long long)m->coflows[c].ext_id);
		stamp[c] = gen;
		if (d->has_classes && i > 0 && d->class_of[i] < d->class_of[i - 1])
			return loom_err_set(
				err, EPROTO,
				"decision classes decrease at position %u (%u after %u)", i,
				d->class_of[i], d->class_of[i - 1]);
	}
	for (uint32_t i = 0; i < d->nwatch; i++)
		if (d->watch[i].coflow >= m->ncoflows)
			return loom_err_set(err, EPROTO, "decision watches unknown coflow index %u",
					    d->watch[i].coflow);
	return 0;
}
