/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The heuristic policies on small constructed cases whose right answer is
 * worked out by hand in each test's comment. Every fabric here is a big
 * switch at 8000 bit/s per port (1000 bytes/s), so bytes read as
 * milliseconds of transfer: 1000 B through one port = 1 s.
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

#include "controlplane/policy/policy.h"
#include "controlplane/sim/sim.h"

#define PORT_BPS 8000ULL
#define NS       1000000000ULL

/* ---- helpers ------------------------------------------------------------ */

struct world {
	struct topo *t;
	struct cp_model *m;
	struct cp_builder *b;
};

static void world_begin(struct world *w, uint32_t hosts)
{
	memset(w, 0, sizeof(*w));
	w->b = cp_builder_new(hosts);
	w->t = topo_new_bigswitch(hosts, PORT_BPS);
	assert_non_null(w->b);
	assert_non_null(w->t);
}

static void job(struct world *w, uint64_t id, uint64_t arrival_ns, double weight)
{
	struct loom_err err;

	if (cp_builder_add_job(w->b, id, arrival_ns, weight, &err) < 0)
		fail_msg("add_job %llu: %s", (unsigned long long)id, loom_err_str(&err));
}

static void coflow(struct world *w, uint64_t id, uint64_t job_id)
{
	struct loom_err err;

	if (cp_builder_add_coflow(w->b, id, job_id, 0, &err) < 0)
		fail_msg("add_coflow %llu: %s", (unsigned long long)id, loom_err_str(&err));
}

static void flow(struct world *w, uint64_t coflow_id, uint32_t src, uint32_t dst, uint64_t bytes)
{
	struct loom_err err;

	if (cp_builder_add_flow(w->b, coflow_id, src, dst, bytes, &err) < 0)
		fail_msg("add_flow: %s", loom_err_str(&err));
}

static void edge(struct world *w, uint64_t parent, uint64_t child, uint64_t delay_ns)
{
	struct loom_err err;

	if (cp_builder_add_edge(w->b, parent, child, delay_ns, &err) < 0)
		fail_msg("add_edge: %s", loom_err_str(&err));
}

/* Builds and binds the model; with arrive, every job arrives and its roots are released. */
static void world_finish(struct world *w, bool arrive)
{
	struct loom_err err;

	w->m = cp_builder_finish(w->b, &err);
	w->b = NULL;
	if (!w->m)
		fail_msg("cp_builder_finish: %s", loom_err_str(&err));
	assert_int_equal(cp_model_bind(w->m, w->t), 0);
	cp_model_reset(w->m);
	if (!arrive)
		return;
	for (uint32_t j = 0; j < w->m->njobs; j++) {
		const struct cp_job *jb = &w->m->jobs[j];

		assert_int_equal(cp_model_job_arrive(w->m, j, jb->arrival_ns), 0);
		for (uint32_t c = jb->first_coflow; c < jb->first_coflow + jb->ncoflows; c++)
			if (w->m->coflows[c].state == CP_COFLOW_READY)
				assert_int_equal(cp_model_coflow_release(w->m, c, jb->arrival_ns),
						 0);
	}
}

static void world_end(struct world *w)
{
	cp_model_free(w->m);
	topo_free(w->t);
}

static uint32_t cf_index(const struct cp_model *m, uint64_t ext)
{
	for (uint32_t c = 0; c < m->ncoflows; c++)
		if (m->coflows[c].ext_id == ext)
			return c;
	fail_msg("no coflow %llu", (unsigned long long)ext);
	return 0;
}

/*
 * Runs spec once on the current state of m and writes the external ids of
 * its order to ids; checks the decision is valid. Returns norder.
 */
static uint32_t decide_ids(const struct cp_model *m, const char *spec, uint64_t now_ns,
			   uint64_t *ids, struct policy_decision *ret)
{
	struct policy_decision d;
	struct loom_err err;
	struct policy *p = policy_new(spec, NULL, m, &err);
	uint32_t *stamp = calloc(m->ncoflows + 1, sizeof(*stamp));
	uint32_t n;

	if (!p)
		fail_msg("policy_new(%s): %s", spec, loom_err_str(&err));
	assert_non_null(stamp);
	assert_int_equal(policy_decision_init(&d, m), 0);
	assert_int_equal(policy_decide(p, m, now_ns, &d), 0);
	if (policy_decision_validate(&d, m, stamp, 1, &err) < 0)
		fail_msg("%s: %s", spec, loom_err_str(&err));
	for (uint32_t i = 0; i < d.norder; i++)
		ids[i] = m->coflows[d.order[i]].ext_id;
	n = d.norder;
	if (ret)
		*ret = d;
	else
		policy_decision_done(&d);
	policy_free(p);
	free(stamp);
	return n;
}

static void expect_order(const struct cp_model *m, const char *spec, const uint64_t *want,
			 uint32_t n)
{
	uint64_t got[16];

	assert_true(n <= 16);
	assert_int_equal(decide_ids(m, spec, 0, got, NULL), n);
	for (uint32_t i = 0; i < n; i++)
		if (got[i] != want[i])
			fail_msg("%s: position %u holds coflow %llu, want %llu", spec, i,
				 (unsigned long long)got[i], (unsigned long long)want[i]);
}

static void expect_close(double got, double want, double tol, const char *what)
{
	if (fabs(got - want) > tol)
		fail_msg("%s: got %.9g, want %.9g", what, got, want);
}

/* ---- clairvoyant orders --------------------------------------------------- */

/*
 * Coflow 1: four 1000 B flows h0..h3 -> h4..h7 (4000 B in all, bottleneck
 * 1 s, widest, longest flow 1000 B). Coflow 2: one 2000 B flow h0 -> h4
 * (2000 B, bottleneck 2 s). Released together in that order.
 *   sebf: 1 (1 s < 2 s) even though it has twice the bytes;
 *   lcf:  2 (2000 B < 4000 B);  scf: 1 (1000 B < 2000 B);  ncf: 2 (1 flow).
 */
static void test_clairvoyant_orders(void **state)
{
	static const uint64_t first_wide[] = {1, 2}, first_narrow[] = {2, 1};
	struct world w;
	struct policy_decision d;
	uint64_t ids[2];
	uint32_t c1, c2;

	(void)state;
	world_begin(&w, 8);
	job(&w, 1, 0, 1);
	job(&w, 2, 0, 1);
	coflow(&w, 1, 1);
	coflow(&w, 2, 2);
	for (uint32_t i = 0; i < 4; i++)
		flow(&w, 1, i, 4 + i, 1000);
	flow(&w, 2, 0, 4, 2000);
	world_finish(&w, true);

	expect_order(w.m, "sebf", first_wide, 2);
	expect_order(w.m, "scf", first_wide, 2);
	expect_order(w.m, "lcf", first_narrow, 2);
	expect_order(w.m, "ncf", first_narrow, 2);

	/* MADD: coflow 1's flows all finish in 1 s; coflow 2 is blocked on h0. */
	decide_ids(w.m, "sebf", 0, ids, &d);
	assert_true(d.has_rates);
	c1 = cf_index(w.m, 1);
	c2 = cf_index(w.m, 2);
	for (uint32_t f = w.m->coflows[c1].first_flow;
	     f < w.m->coflows[c1].first_flow + w.m->coflows[c1].nflows; f++)
		expect_close(d.rate_bps[f], PORT_BPS, 1e-6, "sebf coflow 1 rate");
	assert_true(d.rate_bps[w.m->coflows[c2].first_flow] == 0);
	policy_decision_done(&d);

	/* Sent bytes count: once coflow 2 has sent 1500 B its bottleneck is 0.5 s. */
	w.m->flows[w.m->coflows[c2].first_flow].remaining_bytes = 500;
	expect_order(w.m, "sebf", first_narrow, 2);
	world_end(&w);
}

/* SEBF runs end to end: coflow 1 finishes at 1 s, coflow 2 at 1 + 2 = 3 s. */
static void test_sebf_simulated(void **state)
{
	struct world w;
	struct sim_opts o;
	struct sim_stats st;
	struct loom_err err;
	struct policy *p;

	(void)state;
	world_begin(&w, 8);
	job(&w, 1, 0, 1);
	job(&w, 2, 0, 1);
	coflow(&w, 1, 1);
	coflow(&w, 2, 2);
	for (uint32_t i = 0; i < 4; i++)
		flow(&w, 1, i, 4 + i, 1000);
	flow(&w, 2, 0, 4, 2000);
	world_finish(&w, false);
	p = policy_new("sebf", NULL, w.m, &err);
	assert_non_null(p);
	sim_opts_default(&o);
	o.check = true;
	if (sim_run(w.m, p, &o, &st, &err) < 0)
		fail_msg("sim_run: %s", loom_err_str(&err));
	assert_int_equal(w.m->coflows[cf_index(w.m, 1)].finish_ns, 1 * NS);
	assert_int_equal(w.m->coflows[cf_index(w.m, 2)].finish_ns, 3 * NS);
	policy_free(p);
	world_end(&w);
}

/* ---- D-CLAS ---------------------------------------------------------------- */

struct rec {
	uint32_t n;
	uint64_t at[64];
	uint64_t head[64]; /* ext id of the first coflow in the order */
};

static struct rec rec;
static struct policy_class rec_cls;
static const struct policy_class *rec_inner;

static int rec_decide(struct policy *p, const struct cp_model *m, uint64_t now_ns,
		      struct policy_decision *d)
{
	int r = rec_inner->decide(p, m, now_ns, d);

	if (r == 0 && rec.n < 64 && d->norder) {
		rec.at[rec.n] = now_ns;
		rec.head[rec.n++] = m->coflows[d->order[0]].ext_id;
	}
	return r;
}

/* Wraps p so every decision is recorded in rec. */
static void record(struct policy *p)
{
	memset(&rec, 0, sizeof(rec));
	rec_inner = p->cls;
	rec_cls = *p->cls;
	rec_cls.decide = rec_decide;
	p->cls = &rec_cls;
}

/* The head of the latest decision made at or before t. */
static uint64_t head_at(uint64_t t)
{
	uint64_t head = 0;

	for (uint32_t i = 0; i < rec.n && rec.at[i] <= t; i++)
		head = rec.head[i];
	return head;
}

static bool decided_at(uint64_t t)
{
	for (uint32_t i = 0; i < rec.n; i++)
		if (rec.at[i] == t)
			return true;
	return false;
}

/*
 * dclas with two queues, first threshold 1000 B. Coflow A (h0 -> h1, 5000 B)
 * starts at 0; coflow B (h0 -> h2, 5000 B) at 0.5 s, both in Q0, FIFO: A
 * keeps h0. A crosses 1000 B at exactly 1 s -> Q1, so B (Q0) takes h0 from
 * there; B crosses 1000 B at 2 s -> Q1, where FIFO puts A first again. A
 * has 4000 B left: done at 6 s; B its last 4000 B: done at 10 s.
 */
static void test_dclas_demotes_at_threshold(void **state)
{
	struct world w;
	struct sim_opts o;
	struct sim_stats st;
	struct loom_err err;
	struct policy *p;

	(void)state;
	world_begin(&w, 3);
	job(&w, 1, 0, 1);
	job(&w, 2, NS / 2, 1);
	coflow(&w, 1, 1);
	coflow(&w, 2, 2);
	flow(&w, 1, 0, 1, 5000);
	flow(&w, 2, 0, 2, 5000);
	world_finish(&w, false);
	p = policy_new("dclas:queues=2:first=1000", NULL, w.m, &err);
	if (!p)
		fail_msg("%s", loom_err_str(&err));
	record(p);
	sim_opts_default(&o);
	o.check = true;
	if (sim_run(w.m, p, &o, &st, &err) < 0)
		fail_msg("sim_run: %s", loom_err_str(&err));

	/* The simulator woke the policy exactly at both crossings. */
	assert_true(decided_at(1 * NS));
	assert_true(decided_at(2 * NS));
	assert_int_equal(head_at(NS / 2), 1);     /* both in Q0: FIFO */
	assert_int_equal(head_at(1 * NS - 1), 1); /* A just under the threshold */
	assert_int_equal(head_at(1 * NS), 2);     /* A demoted */
	assert_int_equal(head_at(2 * NS), 1);     /* B demoted too: FIFO in Q1 */
	assert_int_equal(w.m->coflows[cf_index(w.m, 1)].finish_ns, 6 * NS);
	assert_int_equal(w.m->coflows[cf_index(w.m, 2)].finish_ns, 10 * NS);
	p->cls = rec_inner;
	policy_free(p);
	world_end(&w);
}

/*
 * Job scope: job 1 (arrived first) has already sent 20 MiB through earlier
 * stages, so with the default thresholds its new coflow starts in Q1 and
 * job 2's goes first; by coflow bytes both are in Q0 and FIFO keeps job 1 first.
 */
static void test_dclas_job_scope(void **state)
{
	static const uint64_t fifo[] = {1, 2}, demoted[] = {2, 1};
	struct world w;

	(void)state;
	world_begin(&w, 4);
	job(&w, 1, 0, 1);
	job(&w, 2, 1, 1);
	coflow(&w, 1, 1);
	coflow(&w, 2, 2);
	flow(&w, 1, 0, 1, 1000);
	flow(&w, 2, 2, 3, 1000);
	world_finish(&w, true);
	w.m->jobs[w.m->coflows[cf_index(w.m, 1)].job].sent_bytes = 20.0 * 1048576.0;
	expect_order(w.m, "dclas", fifo, 2);
	expect_order(w.m, "dclas-job", demoted, 2);
	expect_order(w.m, "dclas:scope=job", demoted, 2);
	world_end(&w);
}

/*
 * Weighted sharing with 2 queues: a Q0 and a Q1 coflow on the same uplink
 * get capacity 2 : 1 (weights K - q); a Q1 coflow alone on its port gets all.
 */
static void test_dclas_weighted_sharing(void **state)
{
	struct world w;
	struct policy_decision d;
	uint64_t ids[3];
	uint32_t c1, c2, c3;

	(void)state;
	world_begin(&w, 4);
	job(&w, 1, 0, 1);
	job(&w, 2, 1, 1);
	job(&w, 3, 2, 1);
	coflow(&w, 1, 1);
	coflow(&w, 2, 2);
	coflow(&w, 3, 3);
	flow(&w, 1, 0, 1, 5000);
	flow(&w, 2, 0, 2, 5000);
	flow(&w, 3, 3, 2, 5000);
	world_finish(&w, true);
	c1 = cf_index(w.m, 1);
	c2 = cf_index(w.m, 2);
	c3 = cf_index(w.m, 3);
	w.m->coflows[c1].sent_bytes = 2000; /* Q1 */
	w.m->coflows[c3].sent_bytes = 2000; /* Q1, but alone on h3's uplink */

	decide_ids(w.m, "dclas:queues=2:first=1000:sharing=weighted", 0, ids, &d);
	assert_true(d.has_rates);
	assert_int_equal(ids[0], 2); /* Q0 first */
	expect_close(d.rate_bps[w.m->coflows[c2].first_flow], PORT_BPS * 2.0 / 3.0, 1e-6,
		     "Q0 share");
	expect_close(d.rate_bps[w.m->coflows[c1].first_flow], PORT_BPS / 3.0, 1e-6, "Q1 share");
	/* h2's downlink: coflow 2 (Q0) and coflow 3 (Q1) split it 2 : 1 too. */
	expect_close(d.rate_bps[w.m->coflows[c3].first_flow], PORT_BPS / 3.0, 1e-6,
		     "Q1 share at h2");
	policy_decision_done(&d);

	/* Strict priority: no rates, coflow 2 ahead of both Q1 coflows. */
	decide_ids(w.m, "dclas:queues=2:first=1000", 0, ids, &d);
	assert_false(d.has_rates);
	assert_int_equal(ids[0], 2);
	assert_int_equal(ids[1], 1);
	assert_int_equal(ids[2], 3);
	assert_int_equal(d.nwatch, 1); /* only the Q0 coflow has a next threshold */
	assert_int_equal(d.watch[0].coflow, c2);
	expect_close(d.watch[0].sent_bytes, 1000, 0, "watch threshold");
	policy_decision_done(&d);
	world_end(&w);
}

/* ---- Sincronia (BSSI) ------------------------------------------------------- */

/*
 * Three coflows, all released at 0:
 *   A: h0 -> h2 3000 B                  (up0 3000, down2 3000)
 *   B: h0 -> h3 1000 B, h1 -> h3 1000 B (up0 1000, up1 1000, down3 2000)
 *   C: h1 -> h2 2000 B                  (up1 2000, down2 2000)
 * Port loads: up0 4000, up1 3000, down2 5000, down3 2000.
 * Unit weights. Round 1: most loaded port down2; A and C use it, w/d is
 * 1/3000 (A) < 1/2000 (C): A goes last; C's weight becomes
 * 1 - 1 * 2000/3000 = 1/3. Round 2 (A gone): up1 3000 is the most loaded;
 * B: 1/1000, C: (1/3)/2000 = 1/6000: C goes last. Order: B, C, A.
 * With job weight 10 on C: round 1 still puts A last (1/3000 < 10/2000)
 * and C keeps 10 - 2/3; round 2: B 1/1000 < C (28/3)/2000: B last.
 * Order: C, B, A — the weight moved C ahead of B.
 */
static void build_bssi(struct world *w, double weight_c)
{
	world_begin(w, 4);
	job(w, 1, 0, 1);
	job(w, 2, 0, 1);
	job(w, 3, 0, weight_c);
	coflow(w, 1, 1); /* A */
	coflow(w, 2, 2); /* B */
	coflow(w, 3, 3); /* C */
	flow(w, 1, 0, 2, 3000);
	flow(w, 2, 0, 3, 1000);
	flow(w, 2, 1, 3, 1000);
	flow(w, 3, 1, 2, 2000);
	world_finish(w, true);
}

static void test_bssi(void **state)
{
	static const uint64_t unit[] = {2, 3, 1}, weighted[] = {3, 2, 1};
	struct world w;

	(void)state;
	build_bssi(&w, 1);
	expect_order(w.m, "sincronia", unit, 3);
	expect_order(w.m, "sincronia:rates=greedy", unit, 3);
	world_end(&w);

	build_bssi(&w, 10);
	expect_order(w.m, "sincronia", weighted, 3);
	expect_order(w.m, "sincronia:weights=unit", unit, 3);
	world_end(&w);
}

/*
 * Near ties are ties: A (released first, 1,000,000 bytes) and B (released
 * later, 999,999 bytes) share one port with equal weights, so A has the
 * lower weight per byte by one part in a million. Agents report whole
 * bytes, so loomd sees such a state a fraction of a byte per flow away from
 * the simulator: BSSI treats weights per byte within 1e-5 as equal and puts
 * the later release last (A, B), as it does for an exact tie (B at
 * 1,000,000). A clear difference (B at 900,000 bytes) orders by weight per
 * byte: the lower one, A's, goes last (B, A).
 */
static void test_bssi_near_tie(void **state)
{
	static const uint64_t tie[] = {1, 2}, clear[] = {2, 1};
	static const uint64_t bytes_b[] = {999999, 1000000, 900000};
	struct world w;

	(void)state;
	for (int i = 0; i < 3; i++) {
		world_begin(&w, 2);
		job(&w, 1, 0, 1);
		job(&w, 2, 1, 1);
		coflow(&w, 1, 1);
		coflow(&w, 2, 2);
		flow(&w, 1, 0, 1, 1000000);
		flow(&w, 2, 0, 1, bytes_b[i]);
		world_finish(&w, true);
		expect_order(w.m, "sincronia", i < 2 ? tie : clear, 2);
		world_end(&w);
	}
}

/*
 * Order-preserving greedy rates: B takes up0/up1 and down3 first, C then
 * gets up1's rest and A the rest of up0 — so nobody is idle where capacity is
 * free, but no flow takes capacity from an earlier coflow.
 */
static void test_bssi_greedy_rates(void **state)
{
	struct world w;
	struct policy_decision d;
	uint64_t ids[3];
	double rb0, rb1, rc, ra;

	(void)state;
	build_bssi(&w, 1);
	decide_ids(w.m, "sincronia:rates=greedy", 0, ids, &d);
	assert_true(d.has_rates);
	rb0 = d.rate_bps[w.m->coflows[cf_index(w.m, 2)].first_flow];
	rb1 = d.rate_bps[w.m->coflows[cf_index(w.m, 2)].first_flow + 1];
	rc = d.rate_bps[w.m->coflows[cf_index(w.m, 3)].first_flow];
	ra = d.rate_bps[w.m->coflows[cf_index(w.m, 1)].first_flow];
	/* Ports are never over-subscribed. */
	assert_true(rb0 + ra <= PORT_BPS + 1e-6);  /* up0 */
	assert_true(rb1 + rc <= PORT_BPS + 1e-6);  /* up1 */
	assert_true(rb0 + rb1 <= PORT_BPS + 1e-6); /* down3 */
	assert_true(rc + ra <= PORT_BPS + 1e-6);   /* down2 */
	/* B, first, saturates down3. */
	expect_close(rb0 + rb1, PORT_BPS, 1e-6, "B on down3");
	/* Work conserving: up0, up1 and down2 are full too. */
	expect_close(rb0 + ra, PORT_BPS, 1e-6, "up0");
	expect_close(rb1 + rc, PORT_BPS, 1e-6, "up1");
	policy_decision_done(&d);
	world_end(&w);
}

/* ---- DAG-aware --------------------------------------------------------------- */

/*
 * One job with two roots: R1 (h0 -> h1, 3000 B: 3 s) gates L1 (h2 -> h3,
 * 10000 B: 10 s); R2 (h4 -> h5, 1000 B: 1 s) gates L2 (h4 -> h5, 1000 B).
 * Remaining paths: R1 13 s, R2 2 s. cpf: R1 first; sebf: R2 (1 s < 3 s);
 * srjf (one job): inside the job, the longer path first, R1.
 */
static void test_cpf_longer_path_first(void **state)
{
	static const uint64_t path[] = {1, 2}, small[] = {2, 1};
	struct world w;

	(void)state;
	world_begin(&w, 6);
	job(&w, 1, 0, 1);
	coflow(&w, 1, 1);  /* R1 */
	coflow(&w, 2, 1);  /* R2 */
	coflow(&w, 11, 1); /* L1 */
	coflow(&w, 12, 1); /* L2 */
	flow(&w, 1, 0, 1, 3000);
	flow(&w, 2, 4, 5, 1000);
	flow(&w, 11, 2, 3, 10000);
	flow(&w, 12, 4, 5, 1000);
	edge(&w, 1, 11, 0);
	edge(&w, 2, 12, 0);
	world_finish(&w, true);
	assert_int_equal(w.m->nactive, 2);
	expect_order(w.m, "cpf", path, 2);
	expect_order(w.m, "srjf", path, 2);
	expect_order(w.m, "sebf", small, 2);
	world_end(&w);
}

/*
 * A compute delay on an edge counts in the path: with a 20 s delay before
 * L2, R2's path (1 + 20 + 1 = 22 s) beats R1's (13 s).
 */
static void test_cpf_counts_delays(void **state)
{
	static const uint64_t want[] = {2, 1};
	struct world w;

	(void)state;
	world_begin(&w, 6);
	job(&w, 1, 0, 1);
	coflow(&w, 1, 1);
	coflow(&w, 2, 1);
	coflow(&w, 11, 1);
	coflow(&w, 12, 1);
	flow(&w, 1, 0, 1, 3000);
	flow(&w, 2, 4, 5, 1000);
	flow(&w, 11, 2, 3, 10000);
	flow(&w, 12, 4, 5, 1000);
	edge(&w, 1, 11, 0);
	edge(&w, 2, 12, 20 * NS);
	world_finish(&w, true);
	expect_order(w.m, "cpf", want, 2);
	world_end(&w);
}

/*
 * Two single-path jobs. Job 1 (weight 1): coflow 1 (h0 -> h1, 1000 B: 1 s)
 * then coflow 11 (3000 B): path 4 s, job bottleneck 4000 B at h0/h1 = 4 s.
 * Job 2 (weight w2): coflow 2 (h2 -> h3, 2000 B) alone: path 2 s, 2 s.
 *   cpf: 1 (4 s > 2 s) whatever the weights; srjf: 2 (2 s < 4 s).
 *   w2 = 3: wcpf compares 1 x 4 with 3 x 2: job 2 first;
 *   wsrjf compares 4 / 1 with 2 / 3: job 2 first (as srjf).
 *   w2 = 1 / 4 (job 1 four times as important): wsrjf compares 4 with 8:
 *   job 1 first; wcpf 4 with 0.5: job 1.
 */
static void build_two_jobs(struct world *w, double w2)
{
	world_begin(w, 4);
	job(w, 1, 0, 1);
	job(w, 2, 0, w2);
	coflow(w, 1, 1);
	coflow(w, 11, 1);
	coflow(w, 2, 2);
	flow(w, 1, 0, 1, 1000);
	flow(w, 11, 0, 1, 3000);
	flow(w, 2, 2, 3, 2000);
	edge(w, 1, 11, 0);
	world_finish(w, true);
}

static void test_weighted_dag_orders(void **state)
{
	static const uint64_t one[] = {1, 2}, two[] = {2, 1};
	struct world w;

	(void)state;
	build_two_jobs(&w, 1);
	expect_order(w.m, "cpf", one, 2);
	expect_order(w.m, "wcpf", one, 2);
	expect_order(w.m, "srjf", two, 2);
	expect_order(w.m, "wsrjf", two, 2);
	world_end(&w);

	build_two_jobs(&w, 3);
	expect_order(w.m, "cpf", one, 2); /* weights ignored */
	expect_order(w.m, "wcpf", two, 2);
	expect_order(w.m, "cpf:weighted=1", two, 2);
	world_end(&w);

	build_two_jobs(&w, 0.25);
	expect_order(w.m, "srjf", two, 2); /* weights ignored */
	expect_order(w.m, "wsrjf", one, 2);
	expect_order(w.m, "wcpf", one, 2);
	world_end(&w);
}

/* Every policy orders exactly the two schedulable roots of the DAG workload. */
static void test_every_policy_valid_on_dags(void **state)
{
	struct world w;
	size_t n;
	const struct policy_class *const *list = policy_class_list(&n);
	uint64_t ids[4];

	(void)state;
	build_two_jobs(&w, 2);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(decide_ids(w.m, list[i]->name, 0, ids, NULL), 2);
	world_end(&w);
}

/* Every registered policy runs the two-job DAG workload to the end. */
static void test_every_policy_simulates(void **state)
{
	size_t n;
	const struct policy_class *const *list = policy_class_list(&n);

	(void)state;
	for (size_t i = 0; i < n; i++) {
		for (int mode = 0; mode < 2; mode++) {
			struct world w;
			struct sim_opts o;
			struct sim_stats st;
			struct loom_err err;
			struct policy *p;

			build_two_jobs(&w, 2);
			p = policy_new(list[i]->name, NULL, w.m, &err);
			assert_non_null(p);
			sim_opts_default(&o);
			o.check = true;
			o.mode = mode ? SIM_MODE_CLASSES : SIM_MODE_IDEAL;
			o.classes = 2;
			if (sim_run(w.m, p, &o, &st, &err) < 0)
				fail_msg("%s: %s", list[i]->name, loom_err_str(&err));
			assert_int_equal(w.m->jobs_done, 2);
			assert_true(st.max_port_load <= 1 + 1e-9);
			policy_free(p);
			world_end(&w);
		}
	}
}

/* ---- specs and errors ------------------------------------------------------- */

static void expect_spec_error(const char *spec, int want, const char *const *needles)
{
	struct loom_err err;
	double opt[POLICY_MAX_OPTS];
	int r = policy_spec_parse(spec, NULL, opt, &err);

	if (r != want)
		fail_msg("%s: got %d, want %d", spec, r, want);
	for (; *needles; needles++)
		if (!strstr(err.msg, *needles))
			fail_msg("%s: '%s' not in error: %s", spec, *needles, err.msg);
}

static void test_spec_errors(void **state)
{
	static const char *const unknown[] = {
		"unknown policy 'sebff'", "sebf", "dclas", "sincronia", "wsrjf", NULL};
	static const char *const empty[] = {"empty policy name", "fifo", NULL};
	static const char *const badkey[] = {
		"dclas", "unknown option 'queue'", "queues", "first", "factor", "sharing", NULL};
	static const char *const nokeys[] = {"sebf", "takes no options", NULL};
	static const char *const range[] = {"queues", "[1, 64]", "'0'", NULL};
	static const char *const notint[] = {"queues", "integer", "'2.5'", NULL};
	static const char *const choice[] = {"sharing", "strict, weighted", "'wfq'", NULL};
	static const char *const boolean[] = {"weighted", "0 or 1", NULL};
	static const char *const noeq[] = {"not key=value", NULL};
	static const char *const unit[] = {"first", "'10X'", NULL};

	(void)state;
	expect_spec_error("sebff", -ENOENT, unknown);
	expect_spec_error("", -ENOENT, empty);
	expect_spec_error(":queues=1", -ENOENT, empty);
	expect_spec_error("dclas:queue=4", -EINVAL, badkey);
	expect_spec_error("sebf:x=1", -EINVAL, nokeys);
	expect_spec_error("dclas:queues=0", -EINVAL, range);
	expect_spec_error("dclas:queues=2.5", -EINVAL, notint);
	expect_spec_error("dclas:sharing=wfq", -EINVAL, choice);
	expect_spec_error("cpf:weighted=maybe", -EINVAL, boolean);
	expect_spec_error("dclas:queues", -EINVAL, noeq);
	expect_spec_error("dclas:first=10X", -EINVAL, unit);
}

static void test_spec_values(void **state)
{
	const struct policy_class *cls;
	struct loom_err err;
	double opt[POLICY_MAX_OPTS];

	(void)state;
	assert_int_equal(policy_spec_parse("dclas", &cls, opt, &err), 0);
	assert_ptr_equal(cls, &policy_dclas);
	expect_close(opt[0], 10, 0, "default queues");
	expect_close(opt[1], 10.0 * 1048576, 0, "default first");
	assert_int_equal(
		policy_spec_parse("dclas:first=10M:queues=4:sharing=weighted", &cls, opt, &err), 0);
	expect_close(opt[0], 4, 0, "queues");
	expect_close(opt[1], 10.0 * 1048576, 0, "first");
	expect_close(opt[3], 1, 0, "sharing");
	assert_int_equal(policy_spec_parse("dclas:first=1k", &cls, opt, &err), 0);
	expect_close(opt[1], 1024, 0, "1k");
	/* A preset applies first; the user's value wins over it. */
	assert_int_equal(policy_spec_parse("dclas-job", &cls, opt, &err), 0);
	expect_close(opt[4], 1, 0, "dclas-job scope");
	assert_int_equal(policy_spec_parse("dclas-job:scope=coflow", &cls, opt, &err), 0);
	expect_close(opt[4], 0, 0, "overridden scope");
	assert_int_equal(policy_spec_parse("wcpf:weighted=off", &cls, opt, &err), 0);
	expect_close(opt[0], 0, 0, "wcpf weighted=off");
}

/* --help text names every policy and every option with its default. */
static void test_describe(void **state)
{
	char *buf = NULL;
	size_t len = 0, n;
	FILE *f = open_memstream(&buf, &len);
	const struct policy_class *const *list = policy_class_list(&n);

	(void)state;
	assert_non_null(f);
	policy_describe(f);
	fclose(f);
	for (size_t i = 0; i < n; i++) {
		if (!strstr(buf, list[i]->name))
			fail_msg("%s missing from:\n%s", list[i]->name, buf);
		for (uint32_t k = 0; k < list[i]->nopts; k++)
			if (!strstr(buf, list[i]->opts[k].key))
				fail_msg("%s:%s missing", list[i]->name, list[i]->opts[k].key);
	}
	assert_non_null(strstr(buf, "strict"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clairvoyant_orders),
		cmocka_unit_test(test_sebf_simulated),
		cmocka_unit_test(test_dclas_demotes_at_threshold),
		cmocka_unit_test(test_dclas_job_scope),
		cmocka_unit_test(test_dclas_weighted_sharing),
		cmocka_unit_test(test_bssi),
		cmocka_unit_test(test_bssi_near_tie),
		cmocka_unit_test(test_bssi_greedy_rates),
		cmocka_unit_test(test_cpf_longer_path_first),
		cmocka_unit_test(test_cpf_counts_delays),
		cmocka_unit_test(test_weighted_dag_orders),
		cmocka_unit_test(test_every_policy_valid_on_dags),
		cmocka_unit_test(test_every_policy_simulates),
		cmocka_unit_test(test_spec_errors),
		cmocka_unit_test(test_spec_values),
		cmocka_unit_test(test_describe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
