/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fair: per-flow max-min fair sharing with no coflow awareness — what TCP
 * approximates, and the baseline the coflow papers normalise to (Varys
 * SIGCOMM 2014, Aalo SIGCOMM 2015). Every schedulable coflow goes into one
 * class, inside which the fabric shares capacity max-min fairly per flow.
 */
#include "controlplane/policy/policy.h"

#include <string.h>

static int fair_decide(struct policy *p, const struct cp_model *m, uint64_t now_ns,
		       struct policy_decision *d)
{
	(void)p;
	(void)now_ns;
	memcpy(d->order, m->active, m->nactive * sizeof(*d->order));
	d->norder = m->nactive;
	memset(d->class_of, 0, m->nactive * sizeof(*d->class_of));
	d->has_classes = true;
	return 0;
}

const struct policy_class policy_fair = {
	.name = "fair",
	.summary = "per-flow max-min fair sharing, no coflow awareness (non-clairvoyant)",
	.clairvoyant = false,
	.decide = fair_decide,
};
