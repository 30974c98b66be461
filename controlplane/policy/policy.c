/* SPDX-License-Identifier: BSD-3-Clause */
#include "controlplane/policy/policy.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"

static const struct policy_class *const registry[] = {
	&policy_fifo,      &policy_fair,  &policy_scf,       &policy_ncf,       &policy_lcf,
	&policy_sebf,      &policy_dclas, &policy_dclas_job, &policy_sincronia, &policy_cpf,
	&policy_wcpf,      &policy_srjf,  &policy_wsrjf,     &policy_gnn,       &policy_ensemble,
	&policy_lookahead, &policy_blend, &policy_hindsight,
};

#define NREGISTRY (sizeof(registry) / sizeof(registry[0]))

const struct policy_class *const *policy_class_list(size_t *ret_n)
{
	*ret_n = NREGISTRY;
	return registry;
}

int policy_class_check_live(const struct policy_class *cls, struct loom_err *err)
{
	if (!cls->offline)
		return 0;
	return loom_err_set(err, EINVAL,
			    "policy '%s' needs every job of a trace in advance: it runs in "
			    "loom-replay, not in loomd",
			    cls->name);
}

const struct policy_class *policy_class_find(const char *name)
{
	for (size_t i = 0; name && i < NREGISTRY; i++)
		if (strcmp(registry[i]->name, name) == 0)
			return registry[i];
	return NULL;
}

static const char *const bool_words[][2] = {{"0", "1"},
					    {"no", "yes"},
					    {"false", "true"},
					    {"off", "on"}};

/*
 * A number with an optional suffix (common/units.h): Ki/Mi/Gi/Ti are powers
 * of 1024, and so are bare k/M/G/T here, as before units.h (deprecated:
 * docs/units.md).
 */
static int parse_num(const char *s, double *ret)
{
	return loom_units_scaled(s, LOOM_UNITS_LEGACY_1024, ret, NULL);
}

static int set_opt(const struct policy_class *cls, const char *key, const char *val, double *opt,
		   struct loom_err *err)
{
	char valid[160] = "";
	size_t off = 0;

	for (uint32_t i = 0; i < cls->nopts; i++) {
		const struct policy_opt_def *o = &cls->opts[i];
		double v = 0;

		if (strcmp(o->key, key) != 0)
			continue;
		switch (o->type) {
		case POLICY_OPT_NUM:
		case POLICY_OPT_INT:
			if (parse_num(val, &v) < 0 || v < o->min || v > o->max ||
			    (o->type == POLICY_OPT_INT && v != floor(v)))
				return loom_err_set(err, EINVAL,
						    "policy '%s': option '%s' wants %s in "
						    "[%g, %g], got '%s'",
						    cls->name, key,
						    o->type == POLICY_OPT_INT ? "an integer" :
										"a number",
						    o->min, o->max, val);
			break;
		case POLICY_OPT_BOOL:
			v = -1;
			for (size_t w = 0; w < sizeof(bool_words) / sizeof(bool_words[0]); w++)
				for (int b = 0; b < 2; b++)
					if (strcmp(val, bool_words[w][b]) == 0)
						v = b;
			if (v < 0)
				return loom_err_set(err, EINVAL,
						    "policy '%s': option '%s' wants 0 or 1 (or "
						    "no/yes), got '%s'",
						    cls->name, key, val);
			break;
		case POLICY_OPT_ENUM:
			v = -1;
			for (size_t c = 0; o->choices[c]; c++) {
				if (strcmp(val, o->choices[c]) == 0)
					v = (double)c;
				off += (size_t)snprintf(
					valid + off, off < sizeof(valid) ? sizeof(valid) - off : 0,
					"%s%s", c ? ", " : "", o->choices[c]);
			}
			if (v < 0)
				return loom_err_set(
					err, EINVAL,
					"policy '%s': option '%s' must be one of %s, got "
					"'%s'",
					cls->name, key, valid, val);
			break;
		}
		opt[i] = v;
		return 0;
	}
	for (uint32_t i = 0; i < cls->nopts; i++)
		off += (size_t)snprintf(valid + off, off < sizeof(valid) ? sizeof(valid) - off : 0,
					"%s%s", i ? ", " : "", cls->opts[i].key);
	return loom_err_set(err, EINVAL, "policy '%s': unknown option '%s' (%s%s)", cls->name, key,
			    cls->nopts ? "valid: " : "it takes no options", valid);
}

/* Applies "key=value:key=value" (modified in place) to opt. */
static int apply_opts(const struct policy_class *cls, char *list, double *opt, struct loom_err *err)
{
	char *save = NULL;

	for (char *kv = strtok_r(list, ":", &save); kv; kv = strtok_r(NULL, ":", &save)) {
		char *eq = strchr(kv, '=');
		int r;

		if (!eq || eq == kv)
			return loom_err_set(err, EINVAL,
					    "policy '%s': option '%s' is not key=value", cls->name,
					    kv);
		*eq = '\0';
		r = set_opt(cls, kv, eq + 1, opt, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int policy_spec_parse(const char *spec, const struct policy_class **ret_cls, double *opt,
		      struct loom_err *err)
{
	char buf[POLICY_SPEC_MAX], *colon;
	const struct policy_class *cls;
	size_t len = spec ? strlen(spec) : 0;
	int r;

	if (len >= sizeof(buf))
		return loom_err_set(err, EINVAL, "policy spec '%.40s...' is longer than %zu bytes",
				    spec, sizeof(buf) - 1);
	memcpy(buf, spec ? spec : "", len + 1);
	colon = strchr(buf, ':');
	if (colon)
		*colon = '\0';
	cls = policy_class_find(buf);
	if (!cls) {
		char known[256] = "";
		size_t off = 0;

		for (size_t i = 0; i < NREGISTRY; i++)
			off += (size_t)snprintf(known + off,
						off < sizeof(known) ? sizeof(known) - off : 0,
						"%s%s", i ? ", " : "", registry[i]->name);
		if (!buf[0])
			return loom_err_set(err, ENOENT, "empty policy name (known: %s)", known);
		return loom_err_set(err, ENOENT, "unknown policy '%s' (known: %s)", buf, known);
	}
	for (uint32_t i = 0; i < POLICY_MAX_OPTS; i++)
		opt[i] = i < cls->nopts ? cls->opts[i].def : 0;
	if (cls->preset) {
		char pre[POLICY_SPEC_MAX];

		snprintf(pre, sizeof(pre), "%s", cls->preset);
		r = apply_opts(cls, pre, opt, err);
		if (r < 0)
			return r;
	}
	if (colon && (r = apply_opts(cls, colon + 1, opt, err)) < 0)
		return r;
	if (ret_cls)
		*ret_cls = cls;
	return 0;
}

struct policy *policy_new(const char *spec, const struct policy_params *params,
			  const struct cp_model *m, struct loom_err *err)
{
	const struct policy_class *cls;
	double opt[POLICY_MAX_OPTS];
	struct policy *p;
	int r;

	r = policy_spec_parse(spec, &cls, opt, err);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		loom_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	p->cls = cls;
	p->decide_on_flow_done = cls->decide_on_flow_done;
	memcpy(p->opt, opt, sizeof(opt));
	snprintf(p->spec, sizeof(p->spec), "%s", spec);
	if (params)
		p->params = *params;
	if (p->params.classes == 0)
		p->params.classes = 8;
	loom_rng_seed(&p->rng, p->params.seed);
	r = cls->init ? cls->init(p, m) : 0;
	if (r < 0) {
		if (p->init_err.msg[0])
			loom_err_set(err, -r, "policy '%s': %s", spec, p->init_err.msg);
		else
			loom_err_set(err, -r, "policy '%s': initialisation failed: %s", spec,
				     strerror(-r));
		free(p);
		errno = -r;
		return NULL;
	}
	return p;
}

void policy_describe(FILE *f)
{
	for (size_t i = 0; i < NREGISTRY; i++) {
		const struct policy_class *c = registry[i];

		fprintf(f, "  %-10s %s\n", c->name, c->summary);
		if (c->preset)
			fprintf(f, "  %-10s   = the policy above with %s (same options)\n", "",
				c->preset);
		for (uint32_t k = 0; k < c->nopts && !c->preset; k++) {
			const struct policy_opt_def *o = &c->opts[k];

			fprintf(f, "  %-10s   :%s=", "", o->key);
			if (o->type == POLICY_OPT_ENUM) {
				for (size_t x = 0; o->choices[x]; x++)
					fprintf(f, "%s%s", x ? "|" : "", o->choices[x]);
				fprintf(f, "  %s (default %s)\n", o->help,
					o->choices[(size_t)o->def]);
			} else if (o->type == POLICY_OPT_BOOL) {
				fprintf(f, "0|1  %s (default %.15g)\n", o->help, o->def);
			} else {
				fprintf(f, "N  %s (default %.15g)\n", o->help, o->def);
			}
		}
	}
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

uint32_t policy_decision_host_classes(const struct policy_decision *d, const struct cp_model *m,
				      uint32_t k, uint32_t *flow_class, uint32_t *host_next,
				      uint32_t *host_seen)
{
	uint32_t used = 0;

	if (k == 0)
		k = 1;
	if (!d->has_classes) {
		memset(host_next, 0, m->topo->nhosts * sizeof(*host_next));
		for (uint32_t h = 0; h < m->topo->nhosts; h++)
			host_seen[h] = CP_NONE;
	}
	for (uint32_t i = 0; i < d->norder; i++) {
		const struct cp_coflow *cf = &m->coflows[d->order[i]];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];

		for (uint32_t q = 0; q < cf->flows_left; q++) {
			uint32_t f = slot[q], h = m->flows[f].src, cls;

			if (d->has_classes) {
				cls = d->class_of[i] < k ? d->class_of[i] : k - 1;
			} else {
				if (host_seen[h] != i) {
					/* this coflow's first flow on h: one more coflow there */
					host_seen[h] = i;
					host_next[h]++;
				}
				cls = host_next[h] - 1 < k - 1 ? host_next[h] - 1 : k - 1;
			}
			flow_class[f] = cls;
			if (cls + 1 > used)
				used = cls + 1;
		}
	}
	return used;
}

uint32_t policy_decision_conflict_classes(const struct policy_decision *d, const struct cp_model *m,
					  uint32_t k, uint32_t *flow_class, uint32_t *port_top)
{
	uint32_t used = 0;

	if (k == 0)
		k = 1;
	for (uint32_t p = 0; !d->has_classes && p < m->topo->nports; p++)
		port_top[p] = 0; /* 1 + the highest class given on p so far; 0: none */
	for (uint32_t i = 0; i < d->norder; i++) {
		const struct cp_coflow *cf = &m->coflows[d->order[i]];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];
		uint32_t cls = 0;

		if (cf->flows_left == 0)
			continue;
		if (d->has_classes) {
			cls = d->class_of[i] < k ? d->class_of[i] : k - 1;
		} else {
			/* one class above every earlier coflow this one shares a port with */
			for (uint32_t q = 0; q < cf->flows_left; q++) {
				const struct cp_flow *fl = &m->flows[slot[q]];

				for (uint32_t x = 0; x < fl->nports; x++)
					if (port_top[fl->ports[x]] > cls)
						cls = port_top[fl->ports[x]];
			}
			if (cls > k - 1)
				cls = k - 1;
			for (uint32_t q = 0; q < cf->flows_left; q++) {
				const struct cp_flow *fl = &m->flows[slot[q]];

				for (uint32_t x = 0; x < fl->nports; x++)
					if (port_top[fl->ports[x]] < cls + 1)
						port_top[fl->ports[x]] = cls + 1;
			}
		}
		for (uint32_t q = 0; q < cf->flows_left; q++)
			flow_class[slot[q]] = cls;
		if (cls + 1 > used)
			used = cls + 1;
	}
	return used;
}

int policy_class_assign_parse(const char *s, enum policy_class_assign *ret_a)
{
	if (s && strcmp(s, "conflict") == 0) {
		*ret_a = POLICY_CLASSES_CONFLICT;
		return 0;
	}
	if (s && strcmp(s, "per-host") == 0) {
		*ret_a = POLICY_CLASSES_PER_HOST;
		return 0;
	}
	return -EINVAL;
}

const char *policy_class_assign_name(enum policy_class_assign a)
{
	return a == POLICY_CLASSES_PER_HOST ? "per-host" : "conflict";
}

uint32_t policy_decision_assign_classes(const struct policy_decision *d, const struct cp_model *m,
					uint32_t k, enum policy_class_assign a,
					uint32_t *flow_class, uint32_t *scratch)
{
	if (a == POLICY_CLASSES_PER_HOST)
		return policy_decision_host_classes(d, m, k, flow_class, scratch,
						    scratch + m->topo->nhosts);
	return policy_decision_conflict_classes(d, m, k, flow_class, scratch);
}
