/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lookahead policy and its forward model (controlplane/policy/fluid.h):
 *   - at the snapshot, each fluid rule orders as its base policy does;
 *   - the fluid model predicts the flow-level engine exactly where it should
 *     (one flow per coflow: MADD gives each flow its bottleneck's capacity
 *     and no backfill is possible) and within a stated error on generated
 *     multi-stage workloads of wide coflows;
 *   - the cost-improvement property of rollouts: on random deterministic
 *     workloads whose jobs are all known at the start and on which the
 *     fluid model is exact, lookahead:base=X never has a larger total
 *     weighted JCT than X, for every base whose order the model reproduces;
 *   - with one candidate and no heuristic mix it is its base, decision for
 *     decision;
 *   - a changed order gets MADD rates, or with rates=base the base's way of
 *     serving its orders;
 *   - options are checked, and decisions are valid in both fabric modes;
 *   - hindsight (the research oracle: one fixed order searched in the fluid
 *     model over the whole trace) reaches the exhaustive best fixed order
 *     (sim_bound_order) where the model is exact, never beats it, is
 *     deterministic in its seed, and a released coflow keeps its own rank
 *     in a fixed-order rollout.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "controlplane/policy/fluid.h"
#include "controlplane/policy/policy.h"
#include "controlplane/sim/sim.h"
#include "tests/gen_fixture.h"
#include "tests/unit/policy/fill_check.h"

#define PORT_BPS 8000ULL /* 1000 bytes/s: bytes read as milliseconds */
#define NS       1000000000ULL

/* ---- random workloads ----------------------------------------------------------- */

struct rand_opts {
	uint32_t hosts, jobs, max_coflows, max_flows;
	bool delays;        /* compute delays on edges and release offsets */
	uint64_t spread_ns; /* jobs arrive uniformly in [0, spread_ns), else all at 0 */
	uint64_t bytes;     /* every flow this size, else random */
	double weight;      /* every job this weight, else random 1..4 (drawn either way) */
};

/*
 * Random jobs, all arriving at 0 (or spread, o->spread_ns), each a random DAG (edges only from lower
 * to higher coflow numbers) of 1..max_coflows coflows of 1..max_flows flows
 * between random distinct hosts; weights 1..4 (or o->weight). Bound to a big switch t.
 */
static struct cp_model *rand_model(struct loom_rng *rng, const struct rand_opts *o,
				   const struct topo *t)
{
	struct cp_builder *b = cp_builder_new(o->hosts);
	struct loom_err err;
	struct cp_model *m;
	uint64_t cid = 0;

	assert_non_null(b);
	for (uint32_t j = 0; j < o->jobs; j++) {
		uint32_t nc = 1 + (uint32_t)loom_rng_below(rng, o->max_coflows);
		uint64_t first = cid;

		uint64_t at = o->spread_ns ? loom_rng_below(rng, o->spread_ns) : 0;
		double w = 1 + (double)loom_rng_below(rng, 4);

		assert_int_equal(cp_builder_add_job(b, j, at, o->weight > 0 ? o->weight : w, &err),
				 0);
		for (uint32_t c = 0; c < nc; c++, cid++) {
			uint32_t nf = 1 + (uint32_t)loom_rng_below(rng, o->max_flows);
			uint64_t off = o->delays ? loom_rng_below(rng, 3) * NS / 2 : 0;

			assert_int_equal(cp_builder_add_coflow(b, cid, j, off, &err), 0);
			for (uint32_t f = 0; f < nf; f++) {
				uint32_t src = (uint32_t)loom_rng_below(rng, o->hosts);
				uint32_t dst = (uint32_t)loom_rng_below(rng, o->hosts - 1);

				dst += dst >= src;
				assert_int_equal(cp_builder_add_flow(
							 b, cid, src, dst,
							 o->bytes ? o->bytes :
								    100 + loom_rng_below(rng, 5000),
							 &err),
						 0);
			}
			for (uint64_t p = first; p < cid; p++)
				if (loom_rng_below(rng, 3) == 0)
					assert_int_equal(
						cp_builder_add_edge(b, p, cid,
								    o->delays ?
									    loom_rng_below(rng, 2) *
										    NS / 4 :
									    0,
								    &err),
						0);
		}
	}
	m = cp_builder_finish(b, &err);
	if (!m)
		fail_msg("cp_builder_finish: %s", loom_err_str(&err));
	assert_int_equal(cp_model_bind(m, t), 0);
	return m;
}

/*
 * A big switch whose ports have random capacities around PORT_BPS: with
 * round numbers everywhere, two coflows' keys tie exactly, and which one a
 * policy puts first then depends on the last bit of a float.
 */
static struct topo *rand_fabric(struct loom_rng *rng, uint32_t hosts)
{
	struct topo *t = topo_new_bigswitch(hosts, PORT_BPS);

	assert_non_null(t);
	for (uint32_t p = 0; p < t->nports; p++)
		t->port_bps[p] = PORT_BPS / 2 + loom_rng_below(rng, PORT_BPS);
	return t;
}

/* Runs spec on m (ideal mode) and returns the sum over jobs of weight x JCT, in seconds. */
static double run_wjct(struct cp_model *m, const char *spec, enum sim_mode mode)
{
	struct loom_err err;
	struct sim_opts o;
	struct sim_stats st;
	struct policy *p = policy_new(spec, NULL, m, &err);
	double sum = 0;

	if (!p)
		fail_msg("%s: %s", spec, loom_err_str(&err));
	sim_opts_default(&o);
	o.mode = mode;
	o.check = true;
	if (sim_run(m, p, &o, &st, &err) < 0)
		fail_msg("%s: %s", spec, loom_err_str(&err));
	assert_true(st.max_port_load <= 1 + 1e-9);
	for (uint32_t j = 0; j < m->njobs; j++)
		sum += m->jobs[j].weight * (double)(m->jobs[j].finish_ns - m->jobs[j].arrival_ns) *
		       1e-9;
	policy_free(p);
	return sum;
}

/* Every job arrives at its time and its ready roots are released (time 0 here). */
static void arrive_all(struct cp_model *m)
{
	cp_model_reset(m);
	for (uint32_t j = 0; j < m->njobs; j++) {
		const struct cp_job *jb = &m->jobs[j];

		assert_int_equal(cp_model_job_arrive(m, j, jb->arrival_ns), 0);
		for (uint32_t c = jb->first_coflow; c < jb->first_coflow + jb->ncoflows; c++)
			if (m->coflows[c].state == CP_COFLOW_READY && m->coflows[c].ready_ns == 0)
				assert_int_equal(cp_model_coflow_release(m, c, 0), 0);
	}
	for (uint32_t f = 0; f < m->nflows; f++)
		m->flows[f].remaining_bytes = (double)m->flows[f].bytes;
}

/* The fluid model's prediction of rule's total weighted JCT from time 0. */
static double fluid_wjct(struct cp_model *m, enum policy_fluid_rule rule)
{
	struct policy_fluid f;
	uint32_t *order = calloc(m->ncoflows, sizeof(*order));
	uint32_t n;
	double cost;

	assert_non_null(order);
	arrive_all(m);
	assert_int_equal(policy_fluid_init(&f, m), 0);
	assert_true(policy_fluid_build(&f, m, 0) >= 0);
	n = policy_fluid_order(&f, rule, order);
	assert_int_equal(n, m->nactive);
	for (uint32_t i = 0; i < f.n; i++)
		f.rank[i] = (double)n;
	for (uint32_t q = 0; q < n; q++)
		f.rank[f.local[order[q]]] = q;
	cost = policy_fluid_run(&f, rule, 0, INFINITY);
	for (uint32_t j = 0; j < f.nj; j++)
		assert_true(f.jfinish_s[j] >= 0);
	/*
	 * The bound never cuts a run short that would cost less (its floor is a
	 * true lower bound), and a run that cannot beat it returns its cost
	 * exactly or INFINITY.
	 */
	if (cost > 0) {
		double above = policy_fluid_run(&f, rule, 0, cost * (1 + 1e-12));
		double below = policy_fluid_run(&f, rule, 0, cost * 0.97);

		assert_true(above == cost);
		assert_true(below == cost || below == INFINITY);
	}
	policy_fluid_done(&f);
	free(order);
	return cost;
}

/* ---- the forward model ------------------------------------------------------------ */

/* Bases whose order the fluid model's rule reproduces, with that rule. */
static const struct {
	const char *base;
	enum policy_fluid_rule rule;
} exact[] = {
	{"sebf", POLICY_FLUID_SEBF},      {"lcf", POLICY_FLUID_LCF},
	{"srjf", POLICY_FLUID_SRJF},      {"wsrjf", POLICY_FLUID_WSRJF},
	{"fifo", POLICY_FLUID_FIFO},      {"ncf", POLICY_FLUID_NCF},
	{"cpf", POLICY_FLUID_CPF},        {"wcpf", POLICY_FLUID_WCPF},
	{"sincronia", POLICY_FLUID_BSSI}, {"blend", POLICY_FLUID_BLEND},
};

#define NEXACT (sizeof(exact) / sizeof(exact[0]))

/* One flow per coflow, no delays: the fluid model is the engine, to rounding. */
static void test_fluid_exact_single_flows(void **state)
{
	struct rand_opts o = {.hosts = 5, .jobs = 6, .max_coflows = 4, .max_flows = 1};
	struct loom_rng rng;
	struct topo *t;

	(void)state;
	loom_rng_seed(&rng, 11);
	t = rand_fabric(&rng, o.hosts);
	for (int inst = 0; inst < 20; inst++) {
		struct cp_model *m = rand_model(&rng, &o, t);

		for (size_t b = 0; b < NEXACT; b++) {
			double pred = fluid_wjct(m, exact[b].rule);
			double real = run_wjct(m, exact[b].base, SIM_MODE_IDEAL);

			/* completions are whole nanoseconds in the engine */
			if (fabs(pred - real) > 1e-6 * real + 1e-6 * m->ncoflows)
				fail_msg("instance %d, %s: fluid %.9f s, engine %.9f s", inst,
					 exact[b].base, pred, real);
		}
		cp_model_free(m);
	}
	topo_free(t);
}

/*
 * At the snapshot each rule's order is its base policy's, coflow for
 * coflow, on wide coflows too (the order needs no model of the fabric).
 * Flows of one size on equal ports make keys and BSSI's port loads tie, so
 * the tie rules (the first most loaded port, release then index) are
 * checked as well as the keys.
 */
static void test_fluid_order_is_base_order(void **state)
{
	struct rand_opts o = {.hosts = 6, .jobs = 8, .max_coflows = 4, .max_flows = 3};
	struct loom_rng rng;

	(void)state;
	loom_rng_seed(&rng, 31);
	for (int inst = 0; inst < 24; inst++) {
		/* even instances: equal ports and equal flows, where keys and loads tie */
		struct topo *t = inst % 2 ? rand_fabric(&rng, o.hosts) :
					    topo_new_bigswitch(o.hosts, PORT_BPS);
		struct cp_model *m;
		struct policy_fluid f;
		struct policy_decision d;
		uint32_t *order;

		assert_non_null(t);
		o.bytes = inst % 2 ? 0 : 1000;
		m = rand_model(&rng, &o, t);
		order = calloc(m->ncoflows, sizeof(*order));
		assert_non_null(order);
		arrive_all(m);
		assert_int_equal(policy_fluid_init(&f, m), 0);
		assert_true(policy_fluid_build(&f, m, 0) >= 0);
		assert_int_equal(policy_decision_init(&d, m), 0);
		for (size_t b = 0; b < NEXACT; b++) {
			struct loom_err err;
			struct policy *p = policy_new(exact[b].base, NULL, m, &err);
			uint32_t n;

			if (!p)
				fail_msg("%s: %s", exact[b].base, loom_err_str(&err));
			policy_decision_clear(&d);
			assert_int_equal(policy_decide(p, m, 0, &d), 0);
			n = policy_fluid_order(&f, exact[b].rule, order);
			assert_int_equal(n, d.norder);
			for (uint32_t q = 0; q < n; q++)
				if (order[q] != d.order[q])
					fail_msg(
						"instance %d, %s: place %u is coflow %u in the fluid "
						"model, %u in the policy",
						inst, exact[b].base, q, order[q], d.order[q]);
			policy_free(p);
		}
		policy_decision_done(&d);
		policy_fluid_done(&f);
		free(order);
		cp_model_free(m);
		topo_free(t);
	}
}

/*
 * A generated multi-stage workload (TPC-H shapes, FB2010 coflows of up to
 * thousands of flows), every job at time 0: the fluid model's wsrjf and
 * sebf against the engine's. Wide coflows' flow-level backfill is only
 * approximated (fluid.h); the error measured here is stated in
 * docs/policies.md.
 */
static void test_fluid_close_on_generated(void **state)
{
	struct sim_gen_params gp;
	struct topo *t = topo_new_bigswitch(40, TOPO_DEFAULT_BPS);
	struct loom_err err;
	struct cp_model *m;

	(void)state;
	assert_non_null(t);
	sim_gen_params_default(&gp);
	gp.njobs = 8;
	gp.seed = 7;
	gp.weight_max = 4;
	gp.compute_scale = 0;
	gp.bytes_scale = 0.05;
	m = test_gen_workload(&gp, t, &err);
	if (!m)
		fail_msg("workload: %s", loom_err_str(&err));
	for (uint32_t j = 0; j < m->njobs; j++)
		m->jobs[j].arrival_ns = 0;
	for (size_t b = 0; b < NEXACT; b++) {
		double pred, real;

		if (exact[b].rule != POLICY_FLUID_WSRJF && exact[b].rule != POLICY_FLUID_SEBF)
			continue;
		pred = fluid_wjct(m, exact[b].rule);
		real = run_wjct(m, exact[b].base, SIM_MODE_IDEAL);
		print_message("fluid vs engine, %s: %.3f s vs %.3f s (%+.2f%%)\n", exact[b].base,
			      pred, real, 100 * (pred / real - 1));
		if (fabs(pred / real - 1) > 0.05)
			fail_msg("%s: fluid %.3f s, engine %.3f s", exact[b].base, pred, real);
	}
	cp_model_free(m);
	topo_free(t);
}

/* ---- the policy ------------------------------------------------------------------- */

/*
 * Rollouts improve on their base: where the model is exact and every job is
 * known, each decision's best candidate costs no more than continuing the
 * base, and the next decision can continue what was chosen, so the whole run
 * costs no more than the base's.
 */
static void test_cost_improvement(void **state)
{
	struct rand_opts o = {.hosts = 6, .jobs = 7, .max_coflows = 4, .max_flows = 1};
	uint32_t better = 0, runs = 0;
	struct loom_rng rng;
	struct topo *t;

	(void)state;
	loom_rng_seed(&rng, 23);
	t = rand_fabric(&rng, o.hosts);
	for (int inst = 0; inst < 12; inst++) {
		struct cp_model *m = rand_model(&rng, &o, t);

		for (size_t b = 0; b < NEXACT; b++) {
			char spec[POLICY_SPEC_MAX];
			double base = run_wjct(m, exact[b].base, SIM_MODE_IDEAL), la;

			snprintf(spec, sizeof(spec), "lookahead:base=%s:margin=0", exact[b].base);
			la = run_wjct(m, spec, SIM_MODE_IDEAL);
			if (la > base * (1 + 1e-6))
				fail_msg("instance %d: %s %.6f s > %s %.6f s", inst, spec, la,
					 exact[b].base, base);
			better += la < base * (1 - 1e-6);
			runs++;
		}
		cp_model_free(m);
	}
	print_message("lookahead strictly better than its base in %u of %u runs\n", better, runs);
	/* and it is not the base under another name */
	assert_true(better > runs / 4);
	topo_free(t);
}

/*
 * future= (the research oracle): with jobs arriving over time the rollouts
 * of a live controller cannot see the later ones, so a decision can cost
 * more than its base; given every arrival, the rollouts are exact again
 * (one flow per coflow) and the run costs no more than its base's.
 */
static void test_future_oracle(void **state)
{
	struct rand_opts o = {
		.hosts = 6, .jobs = 7, .max_coflows = 4, .max_flows = 1, .spread_ns = 6 * NS};
	uint32_t better = 0, runs = 0;
	struct loom_rng rng;
	struct topo *t;

	(void)state;
	loom_rng_seed(&rng, 29);
	t = rand_fabric(&rng, o.hosts);
	for (int inst = 0; inst < 8; inst++) {
		struct cp_model *m = rand_model(&rng, &o, t);

		for (size_t b = 0; b < NEXACT; b++) {
			char spec[POLICY_SPEC_MAX];
			double base = run_wjct(m, exact[b].base, SIM_MODE_IDEAL), la;

			snprintf(spec, sizeof(spec), "lookahead:base=%s:margin=0:future=1e9",
				 exact[b].base);
			la = run_wjct(m, spec, SIM_MODE_IDEAL);
			if (la > base * (1 + 1e-6))
				fail_msg("instance %d: %s %.6f s > %s %.6f s", inst, spec, la,
					 exact[b].base, base);
			better += la < base * (1 - 1e-6);
			runs++;
		}
		cp_model_free(m);
	}
	print_message("with the future known, lookahead strictly better than its base in %u of "
		      "%u runs\n",
		      better, runs);
	assert_true(better > runs / 4);
	topo_free(t);
}

/* k=1 without the mix is the base itself: the same completion of every job. */
static void test_k1_is_base(void **state)
{
	static const char *const bases[] = {"sincronia", "wsrjf", "dclas", "gnn"};
	struct rand_opts o = {
		.hosts = 8, .jobs = 6, .max_coflows = 3, .max_flows = 6, .delays = true};
	struct topo *t = topo_new_bigswitch(o.hosts, PORT_BPS);
	struct loom_rng rng;

	(void)state;
	assert_non_null(t);
	loom_rng_seed(&rng, 5);
	for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
		struct cp_model *m = rand_model(&rng, &o, t);
		uint64_t *fin = calloc(m->njobs, sizeof(*fin));
		char spec[POLICY_SPEC_MAX];

		assert_non_null(fin);
		run_wjct(m, bases[b], SIM_MODE_IDEAL);
		for (uint32_t j = 0; j < m->njobs; j++)
			fin[j] = m->jobs[j].finish_ns;
		snprintf(spec, sizeof(spec), "lookahead:base=%s:k=1:mix=0", bases[b]);
		run_wjct(m, spec, SIM_MODE_IDEAL);
		for (uint32_t j = 0; j < m->njobs; j++)
			if (m->jobs[j].finish_ns != fin[j])
				fail_msg("%s: job %u finishes at %llu, its base at %llu", spec, j,
					 (unsigned long long)m->jobs[j].finish_ns,
					 (unsigned long long)fin[j]);
		free(fin);
		cp_model_free(m);
	}
	topo_free(t);
}

/* Each job's finish in m's last run. */
static void finishes(const struct cp_model *m, uint64_t *fin)
{
	for (uint32_t j = 0; j < m->njobs; j++)
		fin[j] = m->jobs[j].finish_ns;
}

/*
 * Rules alike (policy_fluid_rules_alike): a weighted rule and its unweighted
 * one order alike and cost the same, bit for bit, when every job weighs 1,
 * and are not alike otherwise; so the lookahead plays such a rollout once.
 * That changes no decision: the same jobs weighing 2 each (every weighted
 * key and every cost scaled by an exact 2, no rule alike, every rollout
 * played) finish at the same times under each base.
 */
static void test_alike_rules_played_once(void **state)
{
	static const struct {
		enum policy_fluid_rule a, b;
		bool alike;
	} pairs[] = {
		{POLICY_FLUID_SEBF, POLICY_FLUID_WSEBF, true},
		{POLICY_FLUID_WSRJF, POLICY_FLUID_SRJF, true},
		{POLICY_FLUID_SEBF, POLICY_FLUID_SRJF, false},
		{POLICY_FLUID_WSEBF, POLICY_FLUID_WSRJF, false},
		{POLICY_FLUID_LCF, POLICY_FLUID_SEBF, false},
	};
	static const char *const bases[] = {"sebf", "srjf", "wsrjf", "sincronia", "lcf"};
	struct rand_opts o = {.hosts = 8,
			      .jobs = 6,
			      .max_coflows = 3,
			      .max_flows = 5,
			      .delays = true,
			      .spread_ns = 4 * NS};
	uint32_t *oa, *ob;
	struct topo *t;
	struct loom_rng rng;

	(void)state;
	loom_rng_seed(&rng, 37);
	t = rand_fabric(&rng, o.hosts);
	for (int inst = 0; inst < 6; inst++) {
		struct loom_rng again = rng;
		struct cp_model *m1, *m2, *mr;
		struct policy_fluid f;
		uint64_t *fin;

		o.weight = 1;
		m1 = rand_model(&rng, &o, t);
		o.weight = 2;
		m2 = rand_model(&again, &o, t);
		o.weight = 0;
		mr = rand_model(&again, &o, t);
		oa = calloc(m1->ncoflows, sizeof(*oa));
		ob = calloc(m1->ncoflows, sizeof(*ob));
		fin = calloc(m1->njobs, sizeof(*fin));
		assert_true(oa && ob && fin);

		/* the fluid model: weight 1, alike pairs give the same order and cost */
		arrive_all(m1);
		assert_int_equal(policy_fluid_init(&f, m1), 0);
		assert_true(policy_fluid_build(&f, m1, 0) >= 0);
		for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
			uint32_t n = policy_fluid_order(&f, pairs[i].a, oa);
			double ca, cb;

			assert_int_equal(policy_fluid_rules_alike(&f, pairs[i].a, pairs[i].b),
					 pairs[i].alike);
			assert_true(policy_fluid_rules_alike(&f, pairs[i].a, pairs[i].a));
			if (!pairs[i].alike)
				continue;
			assert_int_equal(policy_fluid_order(&f, pairs[i].b, ob), n);
			assert_memory_equal(oa, ob, n * sizeof(*oa));
			for (uint32_t c = 0; c < f.n; c++)
				f.rank[c] = (double)n;
			for (uint32_t q = 0; q < n; q++)
				f.rank[f.local[oa[q]]] = q;
			ca = policy_fluid_run(&f, pairs[i].a, 0, INFINITY);
			cb = policy_fluid_run(&f, pairs[i].b, 0, INFINITY);
			assert_memory_equal(&ca, &cb, sizeof(ca));
		}
		policy_fluid_done(&f);
		/* any weight but 1 (here 2, or drawn from 1..4): no pair is alike */
		for (int w = 0; w < 2; w++) {
			struct cp_model *mw = w ? m2 : mr;
			bool all1 = true;

			for (uint32_t j = 0; j < mw->njobs; j++)
				all1 &= mw->jobs[j].weight == 1;
			arrive_all(mw);
			assert_int_equal(policy_fluid_init(&f, mw), 0);
			assert_true(policy_fluid_build(&f, mw, 0) >= 0);
			assert_int_equal(policy_fluid_rules_alike(&f, POLICY_FLUID_SEBF,
								  POLICY_FLUID_WSEBF),
					 all1);
			policy_fluid_done(&f);
		}

		/* the policy: the same finishes with every rollout played */
		for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
			char spec[POLICY_SPEC_MAX];

			snprintf(spec, sizeof(spec), "lookahead:base=%s", bases[b]);
			run_wjct(m2, spec, SIM_MODE_IDEAL);
			finishes(m2, fin);
			run_wjct(m1, spec, SIM_MODE_IDEAL);
			for (uint32_t j = 0; j < m1->njobs; j++)
				if (m1->jobs[j].finish_ns != fin[j])
					fail_msg(
						"instance %d, %s: job %u finishes at %llu with weight "
						"1, at %llu with weight 2",
						inst, spec, j,
						(unsigned long long)m1->jobs[j].finish_ns,
						(unsigned long long)fin[j]);
		}
		free(oa);
		free(ob);
		free(fin);
		cp_model_free(m1);
		cp_model_free(m2);
		cp_model_free(mr);
	}
	topo_free(t);
}

/*
 * budget=: a decision whose base rollout does not fit is the base's; a
 * budget no decision reaches changes nothing; in the fluid model, a run
 * given less work than it needs stops with INFINITY and out_of_work, and
 * one given exactly what it needs returns its cost.
 */
static void test_budget(void **state)
{
	struct rand_opts o = {
		.hosts = 8, .jobs = 6, .max_coflows = 3, .max_flows = 6, .delays = true};
	struct topo *t = topo_new_bigswitch(o.hosts, PORT_BPS);
	struct loom_rng rng;
	struct cp_model *m;
	uint64_t *base, *fin;
	struct policy_fluid f;
	uint32_t *order, n;
	uint64_t used;
	double cost;

	(void)state;
	assert_non_null(t);
	loom_rng_seed(&rng, 31);
	m = rand_model(&rng, &o, t);
	base = calloc(m->njobs, sizeof(*base));
	fin = calloc(m->njobs, sizeof(*fin));
	order = calloc(m->ncoflows, sizeof(*order));
	assert_non_null(base);
	assert_non_null(fin);
	assert_non_null(order);

	run_wjct(m, "sincronia", SIM_MODE_IDEAL);
	finishes(m, base);
	run_wjct(m, "lookahead:base=sincronia:budget=1e-6", SIM_MODE_IDEAL);
	finishes(m, fin);
	assert_memory_equal(fin, base, m->njobs * sizeof(*fin));
	run_wjct(m, "lookahead:base=sincronia:budget=0", SIM_MODE_IDEAL);
	finishes(m, base);
	run_wjct(m, "lookahead:base=sincronia:budget=1000", SIM_MODE_IDEAL);
	finishes(m, fin);
	assert_memory_equal(fin, base, m->njobs * sizeof(*fin));

	arrive_all(m);
	assert_int_equal(policy_fluid_init(&f, m), 0);
	assert_true(policy_fluid_build(&f, m, 0) >= 0);
	n = policy_fluid_order(&f, POLICY_FLUID_SEBF, order);
	assert_true(n > 1);
	for (uint32_t i = 0; i < f.n; i++)
		f.rank[i] = (double)n;
	for (uint32_t q = 0; q < n; q++)
		f.rank[f.local[order[q]]] = q;
	assert_int_equal(f.work_left, POLICY_FLUID_WORK_ANY);
	cost = policy_fluid_run(&f, POLICY_FLUID_SEBF, 0, INFINITY);
	assert_true(isfinite(cost));
	assert_false(f.out_of_work);
	used = POLICY_FLUID_WORK_ANY - f.work_left;
	assert_true(used > 0);
	f.work_left = used;
	assert_true(policy_fluid_run(&f, POLICY_FLUID_SEBF, 0, INFINITY) == cost);
	assert_false(f.out_of_work);
	assert_int_equal(f.work_left, 0);
	f.work_left = used - 1;
	assert_true(policy_fluid_run(&f, POLICY_FLUID_SEBF, 0, INFINITY) == INFINITY);
	assert_true(f.out_of_work);
	policy_fluid_done(&f);
	free(order);
	free(base);
	free(fin);
	cp_model_free(m);
	topo_free(t);
}

struct rate_count {
	uint32_t decisions, with_rates;
	uint32_t madd_exact; /* decisions with rates that are MADD's, bit for bit */
	uint32_t filled;     /* ... that are at least MADD's and leave every flow a full port */
};

/*
 * Counts decisions, and classifies the rates of those that carry them against
 * policy_madd() on the same order: MADD's exactly, or MADD's filled (no flow
 * below its MADD rate, no port over its capacity, every flow of the order
 * with bytes left crossing a full port).
 */
static void count_rates(void *ctx, const struct cp_model *m, uint64_t now_ns,
			const struct policy_decision *d)
{
	struct rate_count *rc = ctx;
	bool same;

	(void)now_ns;
	rc->decisions++;
	if (!d->has_rates)
		return;
	rc->with_rates++;
	rc->filled += fill_check(m, d->order, d->norder, d->rate_bps, &same);
	rc->madd_exact += same;
}

/* Runs spec on m in ideal mode, counting decisions and those that carry rates. */
static struct rate_count run_counting(struct cp_model *m, const char *spec)
{
	struct rate_count rc = {0};
	struct loom_err err;
	struct sim_opts o;
	struct policy *p = policy_new(spec, NULL, m, &err);

	if (!p)
		fail_msg("%s: %s", spec, loom_err_str(&err));
	sim_opts_default(&o);
	o.check = true;
	o.on_decision = count_rates;
	o.decision_ctx = &rc;
	if (sim_run(m, p, &o, NULL, &err) < 0)
		fail_msg("%s: %s", spec, loom_err_str(&err));
	policy_free(p);
	return rc;
}

/*
 * rates=: a changed order gets MADD rates, then what is left shared per
 * coflow in the order, by default (rates=fill); MADD's own with rates=madd;
 * with rates=base it is served as the base serves its own orders (a base
 * without rates: none, strict priority), while the orders still change.
 */
static void test_rates_option(void **state)
{
	struct rand_opts o = {
		.hosts = 8, .jobs = 6, .max_coflows = 3, .max_flows = 6, .delays = true};
	struct topo *t = topo_new_bigswitch(o.hosts, PORT_BPS);
	struct loom_rng rng;
	uint32_t madd_changed = 0, base_changed = 0, fill_changed = 0, fill_not_madd = 0;

	(void)state;
	assert_non_null(t);
	loom_rng_seed(&rng, 77);
	for (int inst = 0; inst < 6; inst++) {
		struct cp_model *m = rand_model(&rng, &o, t);
		uint64_t *base = calloc(m->njobs, sizeof(*base));
		uint64_t *fin = calloc(m->njobs, sizeof(*fin));
		struct rate_count rc;

		assert_non_null(base);
		assert_non_null(fin);
		rc = run_counting(m, "sincronia");
		assert_int_equal(rc.with_rates, 0); /* the base gives none */
		finishes(m, base);
		rc = run_counting(m, "lookahead:base=sincronia");
		fill_changed += rc.with_rates;
		fill_not_madd += rc.with_rates - rc.madd_exact;
		assert_int_equal(rc.filled, rc.with_rates);
		rc = run_counting(m, "lookahead:base=sincronia:rates=madd");
		madd_changed += rc.with_rates;
		assert_int_equal(rc.madd_exact, rc.with_rates);
		/* blend's and gnn's rates=fill: every decision filled MADD */
		rc = run_counting(m, "blend:rates=fill");
		assert_int_equal(rc.with_rates, rc.decisions);
		assert_int_equal(rc.filled, rc.decisions);
		rc = run_counting(m, "gnn:rates=fill");
		assert_int_equal(rc.with_rates, rc.decisions);
		assert_int_equal(rc.filled, rc.decisions);
		rc = run_counting(m, "lookahead:base=sincronia:rates=base");
		assert_int_equal(rc.with_rates, 0);
		finishes(m, fin);
		base_changed += memcmp(fin, base, m->njobs * sizeof(*fin)) != 0;
		free(base);
		free(fin);
		cp_model_free(m);
	}
	/*
	 * the rollouts did change orders: with filled MADD rates (some of them
	 * not MADD's alone), with MADD's, and with the base's
	 */
	assert_true(fill_changed > 0);
	assert_true(fill_not_madd > 0);
	assert_true(madd_changed > 0);
	assert_true(base_changed > 0);
	topo_free(t);
}

/* Multi-flow DAGs with delays, both fabric modes, every base: runs to the end, valid. */
static void test_every_base_runs(void **state)
{
	static const char *const bases[] = {"sincronia", "sebf", "wsrjf", "srjf",      "scf",
					    "lcf",       "ncf",  "fifo",  "fair",      "cpf",
					    "wcpf",      "gnn",  "dclas", "dclas-job", "blend"};
	struct rand_opts o = {
		.hosts = 8, .jobs = 5, .max_coflows = 3, .max_flows = 5, .delays = true};
	struct topo *t = topo_new_bigswitch(o.hosts, PORT_BPS);
	struct loom_rng rng;

	(void)state;
	assert_non_null(t);
	loom_rng_seed(&rng, 9);
	for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
		struct cp_model *m = rand_model(&rng, &o, t);
		char spec[POLICY_SPEC_MAX];

		snprintf(spec, sizeof(spec), "lookahead:base=%s:depth=2", bases[b]);
		run_wjct(m, spec, SIM_MODE_IDEAL);
		assert_int_equal(m->jobs_done, m->njobs);
		run_wjct(m, spec, SIM_MODE_CLASSES);
		assert_int_equal(m->jobs_done, m->njobs);
		cp_model_free(m);
	}
	topo_free(t);
}

/* ---- hindsight ------------------------------------------------------------------- */

/* Average weighted JCT of m's last run, as sim_bound_order() counts it. */
static double avg_wjct(const struct cp_model *m)
{
	double w = 0;

	for (uint32_t j = 0; j < m->njobs; j++)
		w += m->jobs[j].weight * (double)(m->jobs[j].finish_ns - m->jobs[j].arrival_ns);
	return w / m->njobs * 1e-9;
}

/*
 * On workloads of at most 8 one-flow coflows (the fluid model is the
 * engine), with arrivals spread over time, hindsight's local search finds
 * the best fixed order that trying all of them does, and never beats it
 * (it serves one fixed order with MADD, as sim_bound_order's runs do).
 */
static void test_hindsight_best_order(void **state)
{
	struct rand_opts o = {
		.hosts = 5, .jobs = 4, .max_coflows = 3, .max_flows = 1, .spread_ns = 4 * NS};
	uint32_t found = 0, runs = 0, beaten = 0, start_found = 0;
	struct loom_rng rng;
	struct topo *t;

	(void)state;
	loom_rng_seed(&rng, 41);
	t = rand_fabric(&rng, o.hosts);
	while (runs < 12) {
		struct cp_model *m = rand_model(&rng, &o, t);
		struct sim_order_result best;
		struct loom_err err;
		double hs, heur = INFINITY;

		if (m->ncoflows > 8 || m->ncoflows < 4) {
			cp_model_free(m);
			continue;
		}
		if (sim_bound_order(m, NULL, &best, &err) < 0)
			fail_msg("sim_bound_order: %s", loom_err_str(&err));
		for (size_t b = 0; b < NEXACT; b++)
			heur = fmin(heur, run_wjct(m, exact[b].base, SIM_MODE_IDEAL) / m->njobs);
		run_wjct(m, "hindsight:evals=0", SIM_MODE_IDEAL);
		start_found += avg_wjct(m) <= best.avg_wjct_s * (1 + 1e-9);
		run_wjct(m, "hindsight:evals=2000", SIM_MODE_IDEAL);
		hs = avg_wjct(m);
		if (hs < best.avg_wjct_s * (1 - 1e-9))
			fail_msg("instance %u: hindsight %.9f s beats the best fixed order %.9f s",
				 runs, hs, best.avg_wjct_s);
		found += hs <= best.avg_wjct_s * (1 + 1e-9);
		/* annealing keeps the cheapest order it saw: the same here */
		run_wjct(m, "hindsight:evals=2000:temp=0.01", SIM_MODE_IDEAL);
		if (fabs(avg_wjct(m) - hs) > 1e-9 * hs)
			fail_msg("instance %u: hindsight %.9f s, annealing %.9f s", runs, hs,
				 avg_wjct(m));
		beaten += best.avg_wjct_s < heur * (1 - 1e-6);
		runs++;
		sim_order_result_done(&best);
		cp_model_free(m);
	}
	print_message("hindsight found the best fixed order in %u of %u instances, its start "
		      "alone in %u (the best order beats every heuristic in %u)\n",
		      found, runs, start_found, beaten);
	assert_int_equal(found, runs);
	/* the search does the work: its start (evals=0) misses some */
	assert_true(start_found < runs);
	topo_free(t);
}

/* The same seed, the same schedule; and evals=0 is the unsearched start. */
static void test_hindsight_deterministic(void **state)
{
	struct rand_opts o = {.hosts = 8,
			      .jobs = 8,
			      .max_coflows = 4,
			      .max_flows = 5,
			      .delays = true,
			      .spread_ns = 5 * NS};
	struct policy_params pp = {.classes = 8, .seed = 3};
	struct topo *t = topo_new_bigswitch(o.hosts, PORT_BPS);
	struct cp_model *m;
	struct loom_rng rng;
	uint64_t *fin;
	double searched, start;

	(void)state;
	assert_non_null(t);
	loom_rng_seed(&rng, 9);
	m = rand_model(&rng, &o, t);
	fin = calloc(m->njobs, sizeof(*fin));
	assert_non_null(fin);
	for (int rep = 0; rep < 2; rep++) {
		struct loom_err err;
		struct sim_opts so;
		struct policy *p = policy_new("hindsight:evals=300", &pp, m, &err);

		if (!p)
			fail_msg("hindsight: %s", loom_err_str(&err));
		sim_opts_default(&so);
		so.check = true;
		if (sim_run(m, p, &so, NULL, &err) < 0)
			fail_msg("hindsight: %s", loom_err_str(&err));
		assert_int_equal(m->jobs_done, m->njobs);
		for (uint32_t j = 0; j < m->njobs; j++) {
			if (rep == 0)
				fin[j] = m->jobs[j].finish_ns;
			else
				assert_true(m->jobs[j].finish_ns == fin[j]);
		}
		policy_free(p);
	}
	searched = avg_wjct(m);
	run_wjct(m, "hindsight:evals=0", SIM_MODE_IDEAL);
	start = avg_wjct(m);
	print_message("hindsight: %.4f s searched, %.4f s at its start\n", searched, start);
	/* wide coflows: the model is close, not exact, so only a loose check */
	assert_true(searched <= start * 1.02);
	free(fin);
	cp_model_free(m);
	topo_free(t);
}

/*
 * own_rank: a fixed-order rollout gives a released coflow its own rank. Job
 * 0 is A -> B (B released when A ends), job 1 is C; all one-flow coflows
 * through host 0's uplink. With ranks A 0, C 1, B 2, B waits for C; with
 * B inheriting A's rank, C waits for B.
 */
static void test_fluid_own_rank(void **state)
{
	struct topo *t = topo_new_bigswitch(3, PORT_BPS);
	struct cp_builder *b = cp_builder_new(3);
	struct policy_fluid f;
	struct loom_err err;
	struct cp_model *m;
	double own, inherited;

	(void)state;
	assert_non_null(t);
	assert_non_null(b);
	assert_int_equal(cp_builder_add_job(b, 0, 0, 1, &err), 0);
	assert_int_equal(cp_builder_add_coflow(b, 0, 0, 0, &err), 0);
	assert_int_equal(cp_builder_add_flow(b, 0, 0, 1, 1000, &err), 0);
	assert_int_equal(cp_builder_add_coflow(b, 1, 0, 0, &err), 0);
	assert_int_equal(cp_builder_add_flow(b, 1, 0, 2, 1000, &err), 0);
	assert_int_equal(cp_builder_add_edge(b, 0, 1, 0, &err), 0);
	assert_int_equal(cp_builder_add_job(b, 1, 0, 1, &err), 0);
	assert_int_equal(cp_builder_add_coflow(b, 2, 1, 0, &err), 0);
	assert_int_equal(cp_builder_add_flow(b, 2, 0, 1, 1000, &err), 0);
	m = cp_builder_finish(b, &err);
	assert_non_null(m);
	assert_int_equal(cp_model_bind(m, t), 0);
	arrive_all(m);
	assert_int_equal(policy_fluid_init(&f, m), 0);
	assert_int_equal(policy_fluid_build(&f, m, 0), 3);
	f.rank[f.local[0]] = 0;
	f.rank[f.local[2]] = 1;
	f.rank[f.local[1]] = 2;
	f.own_rank = true;
	own = policy_fluid_run(&f, POLICY_FLUID_FROZEN, 0, INFINITY);
	/* A 1 s, then C 1 s, then B 1 s: job 0 at 3 s, job 1 at 2 s */
	assert_true(fabs(f.cfinish_s[f.local[1]] - 3) < 1e-6);
	assert_true(fabs(f.cfinish_s[f.local[2]] - 2) < 1e-6);
	assert_true(fabs(own - 5) < 1e-6);
	f.own_rank = false;
	inherited = policy_fluid_run(&f, POLICY_FLUID_FROZEN, 0, INFINITY);
	assert_true(fabs(f.cfinish_s[f.local[1]] - 2) < 1e-6);
	assert_true(fabs(f.cfinish_s[f.local[2]] - 3) < 1e-6);
	assert_true(fabs(inherited - 5) < 1e-6);
	policy_fluid_done(&f);
	cp_model_free(m);
	topo_free(t);
}

static void expect_bad_spec(const char *spec, const char *needle)
{
	struct loom_err err;
	double opt[POLICY_MAX_OPTS];

	assert_int_equal(policy_spec_parse(spec, NULL, opt, &err), -EINVAL);
	if (!strstr(err.msg, needle))
		fail_msg("%s: '%s' not in: %s", spec, needle, err.msg);
}

static void test_spec(void **state)
{
	const struct policy_class *cls;
	double opt[POLICY_MAX_OPTS];
	struct loom_err err;

	(void)state;
	assert_int_equal(policy_spec_parse("lookahead", &cls, opt, &err), 0);
	assert_string_equal(cls->name, "lookahead");
	assert_int_equal(
		policy_spec_parse("lookahead:base=gnn:k=8:depth=2:horizon=30", &cls, opt, &err), 0);
	/* loomd loads the model for these */
	assert_true(policy_spec_uses_gnn("lookahead:base=gnn"));
	assert_true(policy_spec_uses_gnn("lookahead:k=2:base=gnn:depth=1"));
	assert_false(policy_spec_uses_gnn("lookahead"));
	assert_false(policy_spec_uses_gnn("lookahead:base=sincronia"));
	assert_int_equal(policy_spec_parse("ensemble:learned=lookahead", &cls, opt, &err), 0);
	expect_bad_spec("lookahead:base=ensemble", "base");
	expect_bad_spec("lookahead:base=lookahead", "base");
	expect_bad_spec("lookahead:k=0", "[1, 64]");
	expect_bad_spec("lookahead:depth=9", "[1, 8]");
	expect_bad_spec("lookahead:complete=bsi", "complete");
	expect_bad_spec("lookahead:margin=-1", "margin");
	expect_bad_spec("lookahead:budget=-1", "budget");
	assert_int_equal(policy_spec_parse("hindsight:evals=10", &cls, opt, &err), 0);
	assert_true(cls->clairvoyant);
	expect_bad_spec("hindsight:evals=-1", "evals");
	expect_bad_spec("hindsight:temp=2", "temp");
	expect_bad_spec("hindsight:k=2", "evals");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec),
		cmocka_unit_test(test_fluid_exact_single_flows),
		cmocka_unit_test(test_fluid_order_is_base_order),
		cmocka_unit_test(test_fluid_close_on_generated),
		cmocka_unit_test(test_cost_improvement),
		cmocka_unit_test(test_future_oracle),
		cmocka_unit_test(test_k1_is_base),
		cmocka_unit_test(test_alike_rules_played_once),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_every_base_runs),
		cmocka_unit_test(test_rates_option),
		cmocka_unit_test(test_fluid_own_rank),
		cmocka_unit_test(test_hindsight_best_order),
		cmocka_unit_test(test_hindsight_deterministic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
