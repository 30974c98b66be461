/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One scheduling pass (sched.h): the same policy code as the simulator, on
 * the registry's view. The order becomes the classes each host enforces
 * (class_assign): by default (conflict) a coflow gets, on every host, one
 * class above every earlier coflow it shares a port with; with per-host,
 * the i-th coflow with unfinished flows from host h gets class min(i, K-1)
 * there. A policy that gives its own classes keeps them (capped at K-1) on
 * every host. The simulator's classes mode calls the same functions.
 */
#include "controlplane/loomd/sched.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "controlplane/loomd/registry.h"
#include "controlplane/loomd/server.h"

struct loomd_sched {
	struct loomd_registry *reg;
	const struct topo *topo;
	char spec[POLICY_SPEC_MAX];
	char weights[PATH_MAX];
	uint32_t classes;
	enum policy_class_assign assign;
	uint64_t seed;
	struct gnn_model *gnn; /* loaded once when the policy needs it */
	struct policy *p;      /* made for the current view */
	const struct cp_model *p_model;
	struct policy_decision d;
	bool have_d;
	uint32_t *stamp;
	uint32_t stamp_gen;
	uint32_t *flow_class; /* per view flow */
	uint32_t *rank;       /* per view coflow */
	uint32_t *scratch;    /* POLICY_CLASSES_SCRATCH(topo) */
	uint32_t cap_flows, cap_coflows;
	uint64_t decisions;
};

/* Loads the model of s->weights ("" = the shipped one); err says "weights: ..." and the file. */
static int load_weights(struct loomd_sched *s, struct gnn_model **ret_gnn, struct loom_err *err)
{
	struct loom_err e2 = {{0}};

	*ret_gnn = policy_gnn_model_load(s->weights[0] ? s->weights : NULL, NULL, &e2);
	if (!*ret_gnn) {
		int e = errno ? errno : EINVAL;

		return loom_err_set(err, e, "weights: %s", loom_err_str(&e2));
	}
	return 0;
}

/* Checks spec and loads what it needs into *ret_gnn (kept when already there). */
static int prepare_spec(struct loomd_sched *s, const char *spec, struct gnn_model **ret_gnn,
			struct loom_err *err)
{
	const struct policy_class *cls;
	double opt[POLICY_MAX_OPTS];
	int r = policy_spec_parse(spec, &cls, opt, err);

	*ret_gnn = NULL;
	if (r < 0)
		return r;
	r = policy_class_check_live(cls, err);
	if (r < 0)
		return r;
	if (policy_spec_uses_gnn(spec) && !s->gnn)
		return load_weights(s, ret_gnn, err);
	return 0;
}

struct loomd_sched *loomd_sched_new(struct loomd_registry *r, const struct topo *t,
				    const char *spec, const char *weights, uint32_t classes,
				    enum policy_class_assign assign, uint64_t seed,
				    struct loom_err *err)
{
	struct loomd_sched *s = calloc(1, sizeof(*s));
	struct gnn_model *g;
	int rc;

	if (!s) {
		loom_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	s->reg = r;
	s->topo = t;
	s->classes = classes ? classes : 1;
	s->assign = assign;
	s->seed = seed;
	snprintf(s->weights, sizeof(s->weights), "%s", weights ? weights : "");
	s->scratch = calloc(POLICY_CLASSES_SCRATCH(t) + 1, sizeof(*s->scratch));
	if (!s->scratch) {
		loom_err_set(err, ENOMEM, "out of memory");
		loomd_sched_free(s);
		errno = ENOMEM;
		return NULL;
	}
	rc = prepare_spec(s, spec, &g, err);
	if (rc < 0) {
		loomd_sched_free(s);
		errno = -rc;
		return NULL;
	}
	if (g)
		s->gnn = g;
	/*
	 * A weights file given for a policy that does not run the gnn is
	 * loaded now all the same: a bad file stops loomd at start-up, not at
	 * a later set-policy, and that set-policy finds the model loaded.
	 */
	if (!s->gnn && s->weights[0] && (rc = load_weights(s, &s->gnn, err)) < 0) {
		loomd_sched_free(s);
		errno = -rc;
		return NULL;
	}
	snprintf(s->spec, sizeof(s->spec), "%s", spec);
	return s;
}

static void drop_policy(struct loomd_sched *s)
{
	s->p = policy_free(s->p);
	s->p_model = NULL;
	if (s->have_d)
		policy_decision_done(&s->d);
	s->have_d = false;
}

struct loomd_sched *loomd_sched_free(struct loomd_sched *s)
{
	if (!s)
		return NULL;
	drop_policy(s);
	policy_gnn_model_free(s->gnn);
	free(s->stamp);
	free(s->flow_class);
	free(s->rank);
	free(s->scratch);
	free(s);
	return NULL;
}

int loomd_sched_set_policy(struct loomd_sched *s, const char *spec, struct loom_err *err)
{
	struct gnn_model *g;
	int r;

	if (strlen(spec) >= sizeof(s->spec))
		return loom_err_set(err, EINVAL, "policy spec is longer than %zu characters",
				    sizeof(s->spec) - 1);
	r = prepare_spec(s, spec, &g, err);
	if (r < 0)
		return r;
	if (g)
		s->gnn = g;
	snprintf(s->spec, sizeof(s->spec), "%s", spec);
	drop_policy(s);
	return 0;
}

const char *loomd_sched_policy(const struct loomd_sched *s)
{
	return s->spec;
}

uint32_t loomd_sched_classes(const struct loomd_sched *s)
{
	return s->classes;
}

uint64_t loomd_sched_decisions(const struct loomd_sched *s)
{
	return s->decisions;
}

const struct policy_decision *loomd_sched_decision(const struct loomd_sched *s)
{
	return s->have_d ? &s->d : NULL;
}

const struct cp_model *loomd_sched_view(const struct loomd_sched *s)
{
	return s->p_model;
}

uint32_t loomd_sched_flow_class(const struct loomd_sched *s, uint32_t f)
{
	return f < s->cap_flows ? s->flow_class[f] : s->classes - 1;
}

uint32_t loomd_sched_rank(const struct loomd_sched *s, uint32_t c)
{
	return c < s->cap_coflows ? s->rank[c] : CP_NONE;
}

/* Makes the policy and the per-view arrays for model m. */
static int remake(struct loomd_sched *s, const struct cp_model *m, struct loom_err *err)
{
	struct policy_params params = {
		.classes = s->classes,
		.seed = s->seed,
		.weights = s->weights[0] ? s->weights : NULL,
		.gnn_model = s->gnn,
	};
	uint32_t nf = m->nflows + 1, nc = m->ncoflows + 1;
	int r;

	drop_policy(s);
	s->p = policy_new(s->spec, &params, m, err);
	if (!s->p)
		return -errno;
	r = policy_decision_init(&s->d, m);
	if (r < 0) {
		s->p = policy_free(s->p);
		return loom_err_set(err, -r, "out of memory");
	}
	s->have_d = true;
	if (nf > s->cap_flows) {
		uint32_t *v = realloc(s->flow_class, nf * sizeof(*v));

		if (!v)
			return loom_err_set(err, ENOMEM, "out of memory");
		s->flow_class = v;
		s->cap_flows = nf;
	}
	if (nc > s->cap_coflows) {
		uint32_t *a = realloc(s->rank, nc * sizeof(*a)), *b;

		if (a)
			s->rank = a;
		b = realloc(s->stamp, nc * sizeof(*b));
		if (b)
			s->stamp = b;
		if (!a || !b)
			return loom_err_set(err, ENOMEM, "out of memory");
		s->cap_coflows = nc;
	}
	memset(s->stamp, 0, s->cap_coflows * sizeof(*s->stamp));
	s->stamp_gen = 0;
	s->p_model = m;
	return 0;
}

static void compute_classes(struct loomd_sched *s, const struct cp_model *m)
{
	const struct policy_decision *d = &s->d;

	for (uint32_t f = 0; f < m->nflows; f++)
		s->flow_class[f] = s->classes - 1;
	for (uint32_t c = 0; c < m->ncoflows; c++)
		s->rank[c] = CP_NONE;
	for (uint32_t i = 0; i < d->norder; i++)
		s->rank[d->order[i]] = i;
	/* the one implementation the simulator's classes mode runs too */
	policy_decision_assign_classes(d, m, s->classes, s->assign, s->flow_class, s->scratch);
}

/*
 * Tells a policy made for a rebuilt view what is under way: an arrival for
 * every running job and a release for every active coflow (what it would
 * have seen live; completions before it existed are not its to judge).
 */
static void introduce(struct loomd_sched *s, const struct cp_model *m)
{
	for (uint32_t j = 0; j < m->njobs; j++)
		if (m->jobs[j].state == CP_JOB_RUNNING) {
			struct cp_event ev = {CP_EV_JOB_ARRIVAL, j, m->jobs[j].arrival_ns};

			policy_on_event(s->p, m, &ev);
		}
	for (uint32_t a = 0; a < m->nactive; a++) {
		uint32_t c = m->active[a];
		struct cp_event ev = {CP_EV_COFLOW_RELEASE, c, m->coflows[c].release_ns};

		policy_on_event(s->p, m, &ev);
	}
}

int loomd_sched_pass(struct loomd_sched *s, uint64_t now_ns, struct loomd_sched_result *ret,
		     struct loom_err *err)
{
	struct loomd_sched_result res = {.next_ns = CP_TIME_NEVER};
	const struct cp_event *evs;
	bool rebuilt = false;
	struct cp_model *m;
	uint32_t nev;
	uint64_t t0;
	int r;

	loomd_registry_jobs(s->reg, &nev);
	if (nev == 0) {
		/* nothing registered: no view, no policy; agents' tables empty out */
		drop_policy(s);
		loomd_registry_release_due(s->reg, now_ns, NULL);
		loomd_registry_events_clear(s->reg);
		*ret = res;
		return 0;
	}
	m = loomd_registry_view(s->reg, &rebuilt, err);
	if (!m) {
		drop_policy(s); /* its model may be gone */
		return -errno;
	}
	if (rebuilt || !s->p || s->p_model != m) {
		/* events of the old view name its indices: the new policy gets the present instead */
		loomd_registry_events_clear(s->reg);
		r = remake(s, m, err);
		if (r < 0)
			return r;
		introduce(s, m);
	}
	res.released = loomd_registry_release_due(s->reg, now_ns, &res.next_ns);
	evs = loomd_registry_events(s->reg, &nev);
	for (uint32_t i = 0; i < nev; i++)
		policy_on_event(s->p, m, &evs[i]);
	loomd_registry_events_clear(s->reg);
	if (m->nactive == 0) {
		policy_decision_clear(&s->d);
		compute_classes(s, m);
		*ret = res;
		return 0;
	}
	t0 = loom_clock_mono_ns();
	policy_decision_clear(&s->d);
	r = policy_decide(s->p, m, now_ns, &s->d);
	res.decide_ns = loom_clock_mono_ns() - t0;
	s->decisions++;
	if (r < 0) {
		/* an empty order, never a half-made one, for readers (admin priorities) */
		policy_decision_clear(&s->d);
		return loom_err_set(err, -r, "policy '%s' failed", s->spec);
	}
	if (++s->stamp_gen == 0) {
		memset(s->stamp, 0, s->cap_coflows * sizeof(*s->stamp));
		s->stamp_gen = 1;
	}
	r = policy_decision_validate(&s->d, m, s->stamp, s->stamp_gen, err);
	if (r < 0) {
		policy_decision_clear(&s->d);
		return r;
	}
	compute_classes(s, m);
	res.decided = true;
	res.watches = s->d.nwatch > 0;
	if (s->d.wakeup_ns != CP_TIME_NEVER && s->d.wakeup_ns > now_ns &&
	    s->d.wakeup_ns < res.next_ns)
		res.next_ns = s->d.wakeup_ns;
	*ret = res;
	return 0;
}
