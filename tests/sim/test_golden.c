/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Golden simulator cases computed by hand. Every port runs at 8e9 bit/s, so
 * 1e9 bytes take exactly one second on an otherwise idle port.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/sim/sim.h"

#define RATE 8000000000ULL
#define GB   1000000000ULL
#define S(x) ((uint64_t)((x)*1e9 + 0.5))

struct golden {
	struct topo *t;
	struct cp_model *m;
};

static void golden_finish(struct golden *g, struct cp_builder *b, uint32_t nhosts)
{
	struct loom_err err;

	g->m = cp_builder_finish(b, &err);
	assert_non_null(g->m);
	g->t = topo_new_bigswitch(nhosts, RATE);
	assert_non_null(g->t);
	assert_int_equal(cp_model_bind(g->m, g->t), 0);
}

static void golden_free(struct golden *g)
{
	cp_model_free(g->m);
	topo_free(g->t);
}

/* Steps a run of these tiny workloads may take: a few hundred; a regression that steps every nanosecond fails here instead of at meson's timeout. */
#define MAX_STEPS 1000000u

static void step_guard(void *ctx, const struct sim_progress *pr)
{
	uint64_t *steps = ctx;

	if (++*steps > MAX_STEPS)
		fail_msg("over %u simulation steps (simulated time %llu ns)", MAX_STEPS,
			 (unsigned long long)pr->now_ns);
}

/* Bounds a run (every run of this file): o's progress callback counts its steps in *steps. */
static void guard_steps(struct sim_opts *o, uint64_t *steps)
{
	*steps = 0;
	o->progress = step_guard;
	o->progress_ctx = steps;
	o->progress_every = 1;
}

/* Returns the policy's decisions. */
static uint64_t run_stats(struct golden *g, const char *policy, enum sim_mode mode, uint32_t k,
			  enum sim_quantize q, uint64_t stats_ns)
{
	struct policy_params pp = {.classes = k, .seed = 1};
	struct loom_err err = {{0}};
	struct sim_stats st;
	struct sim_opts o;
	struct policy *p;
	uint64_t steps;

	sim_opts_default(&o);
	o.mode = mode;
	o.classes = k;
	o.quantize = q;
	o.check = true;
	o.stats_ns = stats_ns;
	guard_steps(&o, &steps);
	p = policy_new(policy, &pp, g->m, &err);
	assert_non_null(p);
	assert_int_equal(sim_run(g->m, p, &o, &st, &err), 0);
	policy_free(p);
	assert_true(cp_model_all_done(g->m));
	assert_true(st.max_port_load <= 1.0 + 1e-9);
	assert_true(st.max_residual_ns <= 1.0 + 1e-6);
	return st.decisions;
}

static void run(struct golden *g, const char *policy, enum sim_mode mode, uint32_t k,
		enum sim_quantize q)
{
	run_stats(g, policy, mode, k, q, 0);
}

/* CCT of the coflow with external id ext, in ns. */
static uint64_t cct(const struct golden *g, uint64_t ext)
{
	for (uint32_t c = 0; c < g->m->ncoflows; c++)
		if (g->m->coflows[c].ext_id == ext)
			return g->m->coflows[c].finish_ns - g->m->coflows[c].release_ns;
	fail_msg("no coflow %llu", (unsigned long long)ext);
	return 0;
}

/* Whether it took want_s, give or take the nanosecond a report's sync of the bytes may add. */
static bool cct_near(const struct golden *g, uint64_t ext, double want_s)
{
	return llabs((long long)cct(g, ext) - (long long)S(want_s)) <= 1;
}

static void add_single(struct cp_builder *b, uint64_t id, double arrival_s, uint32_t src,
		       uint32_t dst, uint64_t bytes)
{
	assert_int_equal(cp_builder_add_job(b, id, S(arrival_s), 1.0, NULL), 0);
	assert_int_equal(cp_builder_add_coflow(b, id, id, 0, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, id, src, dst, bytes, NULL), 0);
}

/*
 * A: h0->h2, 2 GB at 0 s; B: h1->h2, 1 GB at 0.5 s; both cross h2's downlink.
 * fifo: A alone, done 2 s; B waits, runs 2..3 s: CCT A 2 s, B 2.5 s.
 * fair: A alone 0..0.5 (0.5 GB), then halves: B done at 2.5 s (CCT 2 s),
 *       A has 0.5 GB left, alone again: done 3 s (CCT 3 s).
 */
static void build_shared_port(struct golden *g)
{
	struct cp_builder *b = cp_builder_new(3);

	add_single(b, 1, 0, 0, 2, 2 * GB);
	add_single(b, 2, 0.5, 1, 2, GB);
	golden_finish(g, b, 3);
}

static void test_shared_port_fifo(void **state)
{
	struct golden g;

	(void)state;
	build_shared_port(&g);
	run(&g, "fifo", SIM_MODE_IDEAL, 8, SIM_QUANT_TOP);
	assert_int_equal(cct(&g, 1), S(2));
	assert_int_equal(cct(&g, 2), S(2.5));
	golden_free(&g);
}

static void test_shared_port_fair(void **state)
{
	struct golden g;

	(void)state;
	build_shared_port(&g);
	run(&g, "fair", SIM_MODE_IDEAL, 8, SIM_QUANT_TOP);
	assert_int_equal(cct(&g, 1), S(3));
	assert_int_equal(cct(&g, 2), S(2));
	/* The same in classes mode: fair puts everything in one class. */
	run(&g, "fair", SIM_MODE_CLASSES, 8, SIM_QUANT_TOP);
	assert_int_equal(cct(&g, 1), S(3));
	assert_int_equal(cct(&g, 2), S(2));
	golden_free(&g);
}

/*
 * MADD and backfill: coflow A has h0->h2 2 GB and h1->h3 1 GB. Its
 * bottleneck is 2 s, so MADD gives 1 and 0.5 GB/s; backfill tops the second
 * flow up to the full 1 GB/s, so it ends at 1 s and A at 2 s. Coflow B,
 * h1->h4 1 GB released at 1.5 s, finds h1's uplink free: CCT 1 s.
 */
static void test_madd_backfill(void **state)
{
	struct cp_builder *b = cp_builder_new(5);
	struct golden g;

	(void)state;
	assert_int_equal(cp_builder_add_job(b, 1, 0, 1.0, NULL), 0);
	assert_int_equal(cp_builder_add_coflow(b, 1, 1, 0, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 1, 0, 2, 2 * GB, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 1, 1, 3, GB, NULL), 0);
	add_single(b, 2, 1.5, 1, 4, GB);
	golden_finish(&g, b, 5);
	run(&g, "fifo", SIM_MODE_IDEAL, 8, SIM_QUANT_TOP);
	assert_int_equal(cct(&g, 1), S(2));
	assert_int_equal(cct(&g, 2), S(1));
	assert_int_equal(g.m->flows[1].finish_ns, S(1)); /* backfilled flow */
	golden_free(&g);
}

/*
 * A three-stage job arriving at 1 s: C1 -> C2 -> C3, each one 1 GB flow on
 * its own hosts; edge delays 0.5 s and 0.25 s; C1 has a release offset of
 * 0.1 s. C1 runs 1.1..2.1, C2 2.6..3.6, C3 3.85..4.85: JCT 3.85 s.
 */
static void test_three_stage_job(void **state)
{
	struct cp_builder *b = cp_builder_new(6);
	struct golden g;

	(void)state;
	assert_int_equal(cp_builder_add_job(b, 7, S(1), 2.0, NULL), 0);
	assert_int_equal(cp_builder_add_coflow(b, 10, 7, S(0.1), NULL), 0);
	assert_int_equal(cp_builder_add_coflow(b, 20, 7, 0, NULL), 0);
	assert_int_equal(cp_builder_add_coflow(b, 30, 7, 0, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 10, 0, 1, GB, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 20, 2, 3, GB, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 30, 4, 5, GB, NULL), 0);
	assert_int_equal(cp_builder_add_edge(b, 10, 20, S(0.5), NULL), 0);
	assert_int_equal(cp_builder_add_edge(b, 20, 30, S(0.25), NULL), 0);
	golden_finish(&g, b, 6);
	for (int pol = 0; pol < 2; pol++) {
		run(&g, pol ? "fair" : "fifo", SIM_MODE_IDEAL, 8, SIM_QUANT_TOP);
		assert_int_equal(g.m->coflows[0].release_ns, S(1.1));
		assert_int_equal(g.m->coflows[1].release_ns, S(2.6));
		assert_int_equal(g.m->coflows[2].release_ns, S(3.85));
		assert_int_equal(g.m->jobs[0].finish_ns - g.m->jobs[0].arrival_ns, S(3.85));
	}
	golden_free(&g);
}

/*
 * Diamond with contention: C1 (h0->h1, 1 GB) gates C2 (h2->h4, 1 GB) and C3
 * (h3->h4, 2 GB), which both gate C4 (h5->h6, 1 GB); no delays. Under fair,
 * C2 and C3 share h4's downlink from 1 s: C2 done at 3 s, C3 alone after,
 * done at 4 s; C4 runs 4..5 s. JCT 5 s. Under fifo (C2 before C3 by index),
 * C2 runs 1..2, C3 2..4, C4 4..5: JCT 5 s, but C2's CCT is 1 s.
 */
static void test_diamond(void **state)
{
	struct cp_builder *b = cp_builder_new(7);
	struct golden g;

	(void)state;
	assert_int_equal(cp_builder_add_job(b, 1, 0, 1.0, NULL), 0);
	for (uint64_t c = 1; c <= 4; c++)
		assert_int_equal(cp_builder_add_coflow(b, c, 1, 0, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 1, 0, 1, GB, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 2, 2, 4, GB, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 3, 3, 4, 2 * GB, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 4, 5, 6, GB, NULL), 0);
	assert_int_equal(cp_builder_add_edge(b, 1, 2, 0, NULL), 0);
	assert_int_equal(cp_builder_add_edge(b, 1, 3, 0, NULL), 0);
	assert_int_equal(cp_builder_add_edge(b, 2, 4, 0, NULL), 0);
	assert_int_equal(cp_builder_add_edge(b, 3, 4, 0, NULL), 0);
	golden_finish(&g, b, 7);
	run(&g, "fair", SIM_MODE_IDEAL, 8, SIM_QUANT_TOP);
	assert_int_equal(cct(&g, 2), S(2));
	assert_int_equal(cct(&g, 3), S(3));
	assert_int_equal(g.m->jobs[0].finish_ns, S(5));
	run(&g, "fifo", SIM_MODE_IDEAL, 8, SIM_QUANT_TOP);
	assert_int_equal(cct(&g, 2), S(1));
	assert_int_equal(cct(&g, 3), S(3));
	assert_int_equal(g.m->jobs[0].finish_ns, S(5));
	golden_free(&g);
}

/*
 * K-class quantisation changes the outcome: three 1 GB coflows at 0 s, in
 * order A (h0->h3), B (h1->h4), C (h2->h4). Ideal fifo: A and B run at once
 * (disjoint ports) and end at 1 s, C waits for h4 and ends at 2 s.
 * K = 2, top: A in class 0, B and C share class 1, so they split h4 until
 * A ends at 1 s; the order is then re-quantised (B in class 0): B has
 * 0.5 GB left and ends at 1.5 s, C at 2 s. K = 2, even: classes 0, 0, 1, the
 * same as ideal.
 */
static void test_quantisation(void **state)
{
	struct cp_builder *b = cp_builder_new(5);
	struct golden g;

	(void)state;
	add_single(b, 1, 0, 0, 3, GB);
	add_single(b, 2, 0, 1, 4, GB);
	add_single(b, 3, 0, 2, 4, GB);
	golden_finish(&g, b, 5);
	run(&g, "fifo", SIM_MODE_IDEAL, 8, SIM_QUANT_TOP);
	assert_int_equal(cct(&g, 1), S(1));
	assert_int_equal(cct(&g, 2), S(1));
	assert_int_equal(cct(&g, 3), S(2));
	run(&g, "fifo", SIM_MODE_CLASSES, 2, SIM_QUANT_TOP);
	assert_int_equal(cct(&g, 1), S(1));
	assert_int_equal(cct(&g, 2), S(1.5));
	assert_int_equal(cct(&g, 3), S(2));
	run(&g, "fifo", SIM_MODE_CLASSES, 2, SIM_QUANT_EVEN);
	assert_int_equal(cct(&g, 1), S(1));
	assert_int_equal(cct(&g, 2), S(1));
	assert_int_equal(cct(&g, 3), S(2));
	/* With K >= 3 the classes mode equals the ideal order. */
	run(&g, "fifo", SIM_MODE_CLASSES, 3, SIM_QUANT_TOP);
	assert_int_equal(cct(&g, 2), S(1));
	assert_int_equal(cct(&g, 3), S(2));
	golden_free(&g);
}

/* Classes of the first decisions' flows, from the simulator's on_classes hook. */
struct seen_classes {
	uint32_t ndecisions;
	uint64_t t_ns[4];
	uint32_t cls[4][4]; /* [decision][flow], CP_NONE: not served */
};

static void record_classes(void *ctx, const struct cp_model *m, uint64_t now_ns,
			   const uint32_t *flow_class)
{
	struct seen_classes *sc = ctx;
	uint32_t k = sc->ndecisions++;

	if (k >= 4)
		return;
	sc->t_ns[k] = now_ns;
	for (uint32_t f = 0; f < m->nflows && f < 4; f++)
		sc->cls[k][f] = m->flows[f].done || m->coflows[m->flows[f].coflow].state !=
							    CP_COFLOW_ACTIVE ?
					CP_NONE :
					flow_class[f];
}

/* fifo in classes mode with K = 2 and quantisation q, recording each decision's classes. */
static void run_k2(struct golden *g, enum sim_quantize q, struct seen_classes *sc)
{
	struct policy_params pp = {.classes = 2, .seed = 1};
	struct loom_err err = {{0}};
	struct sim_stats st;
	struct sim_opts o;
	struct policy *p;
	uint64_t steps;

	memset(sc, 0, sizeof(*sc));
	sim_opts_default(&o);
	o.mode = SIM_MODE_CLASSES;
	o.classes = 2;
	o.quantize = q;
	o.check = true;
	o.on_classes = record_classes;
	o.classes_ctx = sc;
	guard_steps(&o, &steps);
	p = policy_new("fifo", &pp, g->m, &err);
	assert_non_null(p);
	assert_int_equal(sim_run(g->m, p, &o, &st, &err), 0);
	policy_free(p);
	assert_true(cp_model_all_done(g->m));
	assert_true(st.max_port_load <= 1.0 + 1e-9);
	assert_true(st.max_residual_ns <= 1.0 + 1e-6);
}

static void expect_classes(const struct seen_classes *sc, uint32_t k, uint64_t t_ns,
			   const uint32_t want[4], const char *what)
{
	assert_true(sc->ndecisions > k);
	assert_int_equal(sc->t_ns[k], t_ns);
	for (uint32_t f = 0; f < 4; f++)
		if (sc->cls[k][f] != want[f])
			fail_msg("%s, decision %u: flow %u in class %d, expected %d", what, k, f,
				 sc->cls[k][f] == CP_NONE ? -1 : (int)sc->cls[k][f],
				 want[f] == CP_NONE ? -1 : (int)want[f]);
}

/*
 * Per-host quantisation (what loomd gives the agents) against top and even,
 * K = 2, two hosts, three 1 GB-per-flow coflows at 0 s in fifo order:
 *   A = {a h0->h1}, B = {b1 h0->h1, b2 h1->h0}, C = {c h1->h0}
 * (flows 0..3 = a, b1, b2, c).
 * per-host: h0 serves A then B (a: 0, b1: 1), h1 serves B then C (b2: 0,
 *   c: 1): B is in class 1 on h0 and class 0 on h1. a and b2 run alone at
 *   full rate and end at 1 s; then b1 and c are class 0 on their hosts
 *   (disjoint ports) and end at 2 s. CCT A 1 s, B 2 s, C 2 s.
 * top: A in class 0; B and C share class 1 on both hosts: b1 waits behind a,
 *   b2 and c split h1's uplink. At 1 s (A done) B is class 0: b1 runs 1..2 s,
 *   b2 ends its last 0.5 GB at 1.5 s, then c its last 0.5 GB at 2 s.
 * even: classes 0, 0, 1 (i * 2 / 3): a and b1 split h0's uplink and end at
 *   2 s, b2 ends at 1 s, c runs once b2 is gone, 1..2 s. CCT A 2 s.
 */
static void test_per_host_quantisation(void **state)
{
	static const uint32_t ph0[4] = {0, 1, 0, 1}, ph1[4] = {CP_NONE, 0, CP_NONE, 0};
	static const uint32_t top0[4] = {0, 1, 1, 1}, top1[4] = {CP_NONE, 0, 0, 1};
	static const uint32_t even0[4] = {0, 0, 0, 1};
	struct cp_builder *b = cp_builder_new(2);
	struct seen_classes sc;
	struct sim_opts o;
	enum sim_quantize q;
	struct golden g;

	(void)state;
	assert_int_equal(cp_builder_add_job(b, 1, 0, 1.0, NULL), 0);
	for (uint64_t c = 1; c <= 3; c++)
		assert_int_equal(cp_builder_add_coflow(b, c, 1, 0, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 1, 0, 1, GB, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 2, 0, 1, GB, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 2, 1, 0, GB, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 3, 1, 0, GB, NULL), 0);
	golden_finish(&g, b, 2);

	/* conflict (loomd's default) is the default; per-host is what loom-replay --quantize takes */
	sim_opts_default(&o);
	assert_int_equal(o.quantize, SIM_QUANT_CONFLICT);
	assert_int_equal(sim_quantize_parse("per-host", &q), 0);
	assert_int_equal(q, SIM_QUANT_PER_HOST);
	assert_int_equal(sim_quantize_parse("top", &q), 0);
	assert_int_equal(q, SIM_QUANT_TOP);
	assert_int_equal(sim_quantize_parse("even", &q), 0);
	assert_int_equal(q, SIM_QUANT_EVEN);
	assert_int_equal(sim_quantize_parse("perhost", &q), -EINVAL);
	assert_string_equal(sim_quantize_name(SIM_QUANT_PER_HOST), "per-host");

	run_k2(&g, SIM_QUANT_PER_HOST, &sc);
	expect_classes(&sc, 0, 0, ph0, "per-host");
	expect_classes(&sc, 1, S(1), ph1, "per-host");
	assert_int_equal(sc.ndecisions, 2);
	assert_int_equal(g.m->flows[0].finish_ns, S(1));
	assert_int_equal(g.m->flows[1].finish_ns, S(2));
	assert_int_equal(g.m->flows[2].finish_ns, S(1));
	assert_int_equal(g.m->flows[3].finish_ns, S(2));
	assert_int_equal(cct(&g, 1), S(1));
	assert_int_equal(cct(&g, 2), S(2));
	assert_int_equal(cct(&g, 3), S(2));

	run_k2(&g, SIM_QUANT_TOP, &sc);
	expect_classes(&sc, 0, 0, top0, "top");
	expect_classes(&sc, 1, S(1), top1, "top");
	assert_int_equal(g.m->flows[0].finish_ns, S(1));
	assert_int_equal(g.m->flows[1].finish_ns, S(2));
	assert_int_equal(g.m->flows[2].finish_ns, S(1.5));
	assert_int_equal(g.m->flows[3].finish_ns, S(2));
	assert_int_equal(cct(&g, 1), S(1));
	assert_int_equal(cct(&g, 2), S(2));
	assert_int_equal(cct(&g, 3), S(2));

	run_k2(&g, SIM_QUANT_EVEN, &sc);
	expect_classes(&sc, 0, 0, even0, "even");
	assert_int_equal(g.m->flows[0].finish_ns, S(2));
	assert_int_equal(g.m->flows[1].finish_ns, S(2));
	assert_int_equal(g.m->flows[2].finish_ns, S(1));
	assert_int_equal(g.m->flows[3].finish_ns, S(2));
	assert_int_equal(cct(&g, 1), S(2));
	golden_free(&g);
}

/*
 * A policy's own classes are kept in classes mode, capped at K-1, the same
 * on every host under every quantisation: fair puts everything in class 0,
 * so two 1 GB coflows into h2 share its downlink and both end at 2 s.
 */
static void test_policy_classes_kept(void **state)
{
	static const enum sim_quantize qs[] = {SIM_QUANT_PER_HOST, SIM_QUANT_TOP, SIM_QUANT_EVEN};
	struct cp_builder *b = cp_builder_new(3);
	struct golden g;

	(void)state;
	add_single(b, 1, 0, 0, 2, GB);
	add_single(b, 2, 0, 1, 2, GB);
	golden_finish(&g, b, 3);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		run(&g, "fair", SIM_MODE_CLASSES, 2, qs[i]);
		assert_int_equal(cct(&g, 1), S(2));
		assert_int_equal(cct(&g, 2), S(2));
	}
	golden_free(&g);
}

/*
 * Capacity a finished flow leaves goes to the waiting flows in priority
 * order, not port by port. 8 hosts; coflows in fifo order:
 *   C1 = {X h0->h1 1 GB, S h6->h7 2 GB}
 *   C2 = {B h2->h1 1 GB, B2 h6->h7 1 kB}
 *   C3 = {A h0->h1 1 GB, A2 h6->h7 1 kB}
 * MADD gives C1 X at 0.5 and S at 1 GB/s; S saturates h6->h7, so C2 and C3
 * get nothing, and backfill gives X the other half of h0/h1: X ends at 1 s.
 * Its freed h0 uplink and h1 downlink must go to B (C2, higher priority)
 * before A: B runs 1..2 s. C2 then still waits for B2 behind S until 2 s,
 * so C2 ends at 2 s + 1 us, C3 (A 2..3 s) at 3 s.
 */
static void test_backfill_priority(void **state)
{
	struct cp_builder *b = cp_builder_new(8);
	struct golden g;

	(void)state;
	assert_int_equal(cp_builder_add_job(b, 1, 0, 1.0, NULL), 0);
	for (uint64_t c = 1; c <= 3; c++)
		assert_int_equal(cp_builder_add_coflow(b, c, 1, 0, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 1, 0, 1, GB, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 1, 6, 7, 2 * GB, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 2, 2, 1, GB, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 2, 6, 7, 1000, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 3, 0, 1, GB, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 3, 6, 7, 1000, NULL), 0);
	golden_finish(&g, b, 8);
	run(&g, "fifo", SIM_MODE_IDEAL, 8, SIM_QUANT_TOP);
	assert_int_equal(g.m->flows[0].finish_ns, S(1));
	assert_int_equal(g.m->flows[2].finish_ns, S(2)); /* B right after X */
	assert_int_equal(g.m->flows[4].finish_ns, S(3)); /* A after B */
	golden_free(&g);
}

/* Epoch admission: arrivals at 0.3 s and 1.2 s admitted at 1 s and 2 s. */
static void test_epochs(void **state)
{
	struct cp_builder *b = cp_builder_new(4);
	struct policy_params pp = {.classes = 8};
	struct loom_err err;
	struct sim_opts o;
	struct policy *p;
	struct golden g;
	uint64_t steps;

	(void)state;
	add_single(b, 1, 0.3, 0, 1, GB);
	add_single(b, 2, 1.2, 2, 3, GB);
	golden_finish(&g, b, 4);
	sim_opts_default(&o);
	o.epoch_ns = S(1);
	guard_steps(&o, &steps);
	p = policy_new("fifo", &pp, g.m, &err);
	assert_non_null(p);
	assert_int_equal(sim_run(g.m, p, &o, NULL, &err), 0);
	policy_free(p);
	assert_int_equal(g.m->coflows[0].release_ns, S(1));
	assert_int_equal(g.m->coflows[1].release_ns, S(2));
	assert_int_equal(g.m->jobs[0].finish_ns, S(2));
	assert_int_equal(g.m->jobs[1].finish_ns, S(3));
	golden_free(&g);
}

/* A coflow without flows completes when released and still gates its child. */
static void test_empty_coflow(void **state)
{
	struct cp_builder *b = cp_builder_new(2);
	struct golden g;

	(void)state;
	assert_int_equal(cp_builder_add_job(b, 1, S(0.5), 1.0, NULL), 0);
	assert_int_equal(cp_builder_add_coflow(b, 1, 1, 0, NULL), 0);
	assert_int_equal(cp_builder_add_coflow(b, 2, 1, 0, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 2, 0, 1, GB, NULL), 0);
	assert_int_equal(cp_builder_add_edge(b, 1, 2, S(0.5), NULL), 0);
	golden_finish(&g, b, 2);
	run(&g, "fair", SIM_MODE_IDEAL, 8, SIM_QUANT_TOP);
	assert_int_equal(cct(&g, 1), 0);
	assert_int_equal(g.m->coflows[1].release_ns, S(1));
	assert_int_equal(g.m->jobs[0].finish_ns, S(2));
	golden_free(&g);
}

/* A policy that drops a schedulable coflow is caught, not simulated. */
static int bad_decide(struct policy *p, const struct cp_model *m, uint64_t now_ns,
		      struct policy_decision *d)
{
	(void)p;
	(void)now_ns;
	d->norder = m->nactive ? m->nactive - 1 : 0;
	for (uint32_t i = 0; i < d->norder; i++)
		d->order[i] = m->active[i];
	return 0;
}

static void test_invalid_decision(void **state)
{
	static const struct policy_class bad = {.name = "bad", .decide = bad_decide};
	struct policy p = {.cls = &bad};
	struct loom_err err = {{0}};
	struct sim_opts o;
	struct golden g;
	uint64_t steps;

	(void)state;
	build_shared_port(&g);
	sim_opts_default(&o);
	guard_steps(&o, &steps);
	assert_int_equal(sim_run(g.m, &p, &o, NULL, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "schedulable"));
	golden_free(&g);
}

/*
 * Conflict classes (policy_decision_conflict_classes()), K = 2, four hosts,
 * 1 GB per flow, all at 0 s, fifo order A, B, C:
 *   A = {h0->h1}, B = {h2->h3}, C = {h2->h3}
 * conflict: A and B share no port, both class 0; C meets B at h2 and h3,
 *   class 1. A and B end at 1 s, C runs 1..2 s.
 * top: A class 0, B and C share class 1 and split h2's uplink until A ends
 *   at 1 s; then B is first (class 0) and sends its last 0.5 GB by 1.5 s,
 *   C its last 0.5 GB by 2 s.
 */
static void test_conflict_quantisation(void **state)
{
	static const uint32_t want0[4] = {0, 0, 1, 0}; /* no flow 3: left 0 */
	struct cp_builder *b = cp_builder_new(4);
	struct seen_classes sc;
	enum sim_quantize q;
	struct golden g;

	(void)state;
	assert_int_equal(cp_builder_add_job(b, 1, 0, 1.0, NULL), 0);
	for (uint64_t c = 1; c <= 3; c++)
		assert_int_equal(cp_builder_add_coflow(b, c, 1, 0, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 1, 0, 1, GB, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 2, 2, 3, GB, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 3, 2, 3, GB, NULL), 0);
	golden_finish(&g, b, 4);
	assert_int_equal(sim_quantize_parse("conflict", &q), 0);
	assert_int_equal(q, SIM_QUANT_CONFLICT);
	assert_string_equal(sim_quantize_name(SIM_QUANT_CONFLICT), "conflict");

	run_k2(&g, SIM_QUANT_CONFLICT, &sc);
	expect_classes(&sc, 0, 0, want0, "conflict");
	assert_int_equal(cct(&g, 1), S(1));
	assert_int_equal(cct(&g, 2), S(1));
	assert_int_equal(cct(&g, 3), S(2));

	run_k2(&g, SIM_QUANT_TOP, &sc);
	assert_int_equal(cct(&g, 1), S(1));
	assert_int_equal(cct(&g, 2), S(1.5));
	assert_int_equal(cct(&g, 3), S(2));
	golden_free(&g);
}

/*
 * The policy sees the bytes of the last report (sim_opts.stats_ns).
 * A: h0->h2, 2 GB at 0 s; B: h1->h2, 1.2 GB at 1 s; lcf, least bytes left
 * first. Exact: at 1 s A has 1 GB left: A first, done at 2 s (CCT 2), B
 * 2..3.2 s (CCT 2.2). Seen from a report before 0.8 s, A has more left than
 * B: B first, 1..2.2 s (CCT 1.2), then A's last GB, 2.2..3.2 s (CCT 3.2).
 * Reports every 0.3 s (the last at 0.9 s: A 1.1 GB) and every 0.5 s (one at
 * 1 s, taken before the decision at that instant) give the exact order;
 * every 0.6 s (0.6 s: A 1.4 GB), 0.75 s, or none before 1 s do not.
 */
static void test_stale_reports(void **state)
{
	static const struct {
		double stats_s;
		bool exact;
	} cases[] = {
		{0, true},     {0.3, true},  {0.5, true},  {0.6, false},
		{0.75, false}, {1.2, false}, {100, false},
	};
	struct golden g;
	struct cp_builder *b = cp_builder_new(3);

	(void)state;
	add_single(b, 1, 0, 0, 2, 2 * GB);
	add_single(b, 2, 1, 1, 2, 6 * GB / 5);
	golden_finish(&g, b, 3);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (int mode = 0; mode < 2; mode++) {
			run_stats(&g, "lcf", mode ? SIM_MODE_CLASSES : SIM_MODE_IDEAL, 8,
				  SIM_QUANT_TOP, S(cases[i].stats_s));
			if (!cct_near(&g, 1, cases[i].exact ? 2 : 3.2) ||
			    !cct_near(&g, 2, cases[i].exact ? 2.2 : 1.2))
				fail_msg("stats %g s, %s: CCT A %llu ns, B %llu ns",
					 cases[i].stats_s, mode ? "classes" : "ideal",
					 (unsigned long long)cct(&g, 1),
					 (unsigned long long)cct(&g, 2));
		}
	}
	/*
	 * Byte thresholds are checked at reports, on the reported bytes: dclas
	 * (whose queues are watches) decides at each report while it watches,
	 * and not at every nanosecond after the exact bytes crossed one that
	 * the reported bytes have not. 3.2 s of reports every 0.1 s: about 32.
	 */
	for (int job = 0; job < 2; job++) {
		uint64_t n = run_stats(&g, job ? "dclas-job:first=100M" : "dclas:first=100M",
				       SIM_MODE_IDEAL, 8, SIM_QUANT_TOP, S(0.1));

		if (n > 100)
			fail_msg("%s with reports every 0.1 s: %llu decisions",
				 job ? "dclas-job" : "dclas", (unsigned long long)n);
		assert_true(n >= 10);
	}
	golden_free(&g);
}

/*
 * A job's reported bytes include its finished coflows': job X is X1 (h0->h2,
 * 2 GB at 0 s) then X2 (h0->h2, 1 GB) 0.5 s after X1 ends; job Y is one
 * 1 GB coflow (h1->h2) at 2.6 s; job Z (h3->h4, 5 GB at 0 s) shares no
 * port with them and keeps the engine stepping. dclas-job with a first
 * queue up to 1.5e9 bytes a job. Exact: at 2.6 s job X has sent 2.1 GB
 * (second queue), Y nothing (first): Y runs 2.6..3.6 (CCT 1), X2 has 0.9 GB
 * left, 3.6..4.5 (CCT 2). With reports every 2.4 s the only one before
 * 2.6 s falls between X1 and X2, when job X has no schedulable coflow: its
 * 2 GB must be in it, or X2 would sit in the first queue, ahead of Y by
 * job arrival (X2 CCT 1, Y 1.9).
 */
static void test_stale_job_bytes(void **state)
{
	struct cp_builder *b = cp_builder_new(5);
	struct golden g;

	(void)state;
	assert_int_equal(cp_builder_add_job(b, 1, 0, 1.0, NULL), 0);
	assert_int_equal(cp_builder_add_coflow(b, 10, 1, 0, NULL), 0);
	assert_int_equal(cp_builder_add_coflow(b, 11, 1, 0, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 10, 0, 2, 2 * GB, NULL), 0);
	assert_int_equal(cp_builder_add_flow(b, 11, 0, 2, GB, NULL), 0);
	assert_int_equal(cp_builder_add_edge(b, 10, 11, S(0.5), NULL), 0);
	add_single(b, 2, 2.6, 1, 2, GB);
	add_single(b, 3, 0, 3, 4, 5 * GB);
	golden_finish(&g, b, 5);
	for (int stale = 0; stale < 2; stale++) {
		run_stats(&g, "dclas-job:first=1500000000", SIM_MODE_IDEAL, 8, SIM_QUANT_TOP,
			  stale ? S(2.4) : 0);
		if (!cct_near(&g, 11, 2) || !cct_near(&g, 2, 1))
			fail_msg("reports every %s: CCT X2 %llu ns, Y %llu ns",
				 stale ? "2.4 s" : "instant (exact)",
				 (unsigned long long)cct(&g, 11), (unsigned long long)cct(&g, 2));
	}
	golden_free(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shared_port_fifo),
		cmocka_unit_test(test_shared_port_fair),
		cmocka_unit_test(test_madd_backfill),
		cmocka_unit_test(test_three_stage_job),
		cmocka_unit_test(test_diamond),
		cmocka_unit_test(test_quantisation),
		cmocka_unit_test(test_backfill_priority),
		cmocka_unit_test(test_epochs),
		cmocka_unit_test(test_empty_coflow),
		cmocka_unit_test(test_invalid_decision),
		cmocka_unit_test(test_per_host_quantisation),
		cmocka_unit_test(test_conflict_quantisation),
		cmocka_unit_test(test_policy_classes_kept),
		cmocka_unit_test(test_stale_reports),
		cmocka_unit_test(test_stale_job_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
