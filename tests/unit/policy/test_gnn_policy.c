/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The gnn policy: weights-file errors (missing, corrupt, wrong shape) fail
 * policy_new() with a message naming the file; decisions are valid,
 * deterministic and follow the scores (invert reverses them); the shipped
 * model loads by default; the training hook sees every decision.
 * backend=cuda against cpu: at every decision of a cuda run, the graph's
 * scores on a "cuda" model are within the gnn suite's tolerance of the
 * "cpu" scores (1e-4 relative, test_gnn_cuda.c) and the ranking taken never
 * puts a coflow ahead of one the cpu scores clearly higher; where no
 * decision met a near-tie the run's weighted JCT equals the cpu run's
 * exactly. Without a GPU the cuda models are cpu models and every
 * comparison is exact.
 * Residual scoring: an untrained model with a prior orders exactly as its
 * heuristic at every decision (the prior handed to a trainer ranks as the
 * heuristic does, and with the heuristic's MADD rates the whole run is the
 * heuristic's); a trained one departs from it. DAgger labels: the model
 * acts, the teacher's order is what is recorded. Place features: a model
 * taking them sees the heuristics' orders in its columns, and untrained on
 * the blend prior is the blend; the columns reach a random model's scores.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controlplane/policy/coflow_features.h"
#include "controlplane/sim/sim.h"
#include "tests/gen_fixture.h"
#include "gnn/gnn.h"

struct fixture {
	struct topo *t;
	struct cp_model *m;
	char dir[64];
	char good[128], wrong_shape[128], corrupt[128];
};

static struct fixture fx;

static int setup(void **state)
{
	struct loom_err err = {{0}};
	struct gnn_err gerr = {{0}};
	struct sim_gen_params gp;
	struct gnn_config cfg = gnn_config_default();
	struct gnn_model *g;
	FILE *f;

	(void)state;
	fx.t = topo_new_bigswitch(150, 1073741824ULL);
	if (!fx.t)
		return -1;
	sim_gen_params_default(&gp);
	gp.njobs = 12;
	gp.load = 0.9;
	gp.seed = 5;
	gp.bytes_scale = 0.05;
	gp.weight_max = 4;
	fx.m = test_gen_workload(&gp, fx.t, &err);
	if (!fx.m) {
		print_error("setup: %s\n", err.msg);
		return -1;
	}
	snprintf(fx.dir, sizeof(fx.dir), "/tmp/loom-gnnpol-XXXXXX");
	if (!mkdtemp(fx.dir))
		return -1;
	snprintf(fx.good, sizeof(fx.good), "%s/good.lgw", fx.dir);
	snprintf(fx.wrong_shape, sizeof(fx.wrong_shape), "%s/f8.lgw", fx.dir);
	snprintf(fx.corrupt, sizeof(fx.corrupt), "%s/corrupt.lgw", fx.dir);
	cfg.nfeatures = POLICY_NFEATURES;
	g = gnn_model_new(&cfg, "cpu", 3, &gerr);
	if (!g || gnn_save(g, fx.good, &gerr) < 0)
		return -1;
	gnn_model_free(g);
	cfg.nfeatures = 8;
	g = gnn_model_new(&cfg, "cpu", 3, &gerr);
	if (!g || gnn_save(g, fx.wrong_shape, &gerr) < 0)
		return -1;
	gnn_model_free(g);
	/* the good file with one byte flipped in the middle */
	{
		char buf[1 << 20];
		size_t n;

		f = fopen(fx.good, "rb");
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		buf[n / 2] ^= 0x40;
		f = fopen(fx.corrupt, "wb");
		fwrite(buf, 1, n, f);
		fclose(f);
	}
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx.dir);
	if (system(cmd) != 0)
		return -1;
	cp_model_free(fx.m);
	topo_free(fx.t);
	return 0;
}

static struct policy *new_policy(const char *spec, const char *weights, struct loom_err *err)
{
	struct policy_params pp = {.classes = 8, .seed = 1, .weights = weights};

	return policy_new(spec, &pp, fx.m, err);
}

static void expect_failure(const char *weights, const char *what)
{
	struct loom_err err = {{0}};
	struct policy *p = new_policy("gnn", weights, &err);

	assert_null(p);
	print_message("%s: %s\n", what, err.msg);
	assert_non_null(strstr(err.msg, weights));
	assert_non_null(strstr(err.msg, what));
}

static void test_bad_weights(void **state)
{
	char missing[160];

	(void)state;
	snprintf(missing, sizeof(missing), "%s/none.lgw", fx.dir);
	expect_failure(missing, "No such file");
	expect_failure(fx.corrupt, "checksum");
	expect_failure(fx.wrong_shape, "17");
}

/*
 * A run of spec on the fixture (with hook set on the gnn policy p, when
 * given); its weighted JCT.
 */
static void run_hooked(const char *spec, const char *weights, const struct policy_gnn_hook *hook,
		       double *ret_wjct)
{
	struct loom_err err = {{0}};
	struct policy *p = new_policy(spec, weights, &err);
	struct sim_opts so;
	struct sim_stats st;
	double s = 0;

	if (!p)
		fail_msg("%s: %s", spec, err.msg);
	if (hook)
		assert_int_equal(policy_gnn_set_hook(p, hook), 0);
	sim_opts_default(&so);
	so.check = true;
	if (sim_run(fx.m, p, &so, &st, &err) < 0)
		fail_msg("%s: %s", spec, err.msg);
	policy_free(p);
	for (uint32_t j = 0; j < fx.m->njobs; j++)
		s += fx.m->jobs[j].weight *
		     (double)(fx.m->jobs[j].finish_ns - fx.m->jobs[j].arrival_ns);
	*ret_wjct = s;
}

static void run(const char *spec, const char *weights, double *ret_wjct)
{
	run_hooked(spec, weights, NULL, ret_wjct);
}

static void test_runs_deterministic(void **state)
{
	double a, b;

	(void)state;
	run("gnn", fx.good, &a);
	run("gnn", fx.good, &b);
	assert_true(a > 0);
	assert_true(a == b);
}

/* The gnn suite's score tolerance (tests/gpu/test_gnn_cuda.c). */
static bool score_close(float ref, float x)
{
	return fabsf(ref - x) <= 1e-4f * fmaxf(1e-3f, fabsf(ref));
}

struct cuda_cmp {
	struct gnn_model *cpu, *cuda;
	float ref[4096], got[4096];
	uint32_t decisions, failures, near_ties;
	char first[256];
};

static void cuda_cmp_fail(struct cuda_cmp *c, const char *fmt, ...)
{
	va_list ap;

	if (c->failures++ == 0) {
		va_start(ap, fmt);
		vsnprintf(c->first, sizeof(c->first), fmt, ap);
		va_end(ap);
	}
}

/*
 * A decision of the cuda-backed policy: the graph's scores on the cpu and
 * the cuda model, and the ranking taken against the cpu scores.
 */
static void cuda_record(void *ctx, const struct policy_graph *g, const uint32_t *perm, uint32_t n,
			uint64_t now_ns)
{
	struct cuda_cmp *c = ctx;
	struct gnn_err err = {{0}};
	struct gnn_batch b;

	policy_graph_gnn_batch(g, &b);
	c->decisions++;
	if (n != g->nsched || n > sizeof(c->ref) / sizeof(c->ref[0])) {
		cuda_cmp_fail(c, "decision at %" PRIu64 " ns: %u ranked of %u", now_ns, n,
			      g->nsched);
		return;
	}
	if (gnn_forward(c->cpu, &b, g->sched, n, c->ref, &err) < 0 ||
	    gnn_forward(c->cuda, &b, g->sched, n, c->got, &err) < 0) {
		cuda_cmp_fail(c, "forward: %s", err.msg);
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		if (!score_close(c->ref[i], c->got[i]))
			cuda_cmp_fail(c, "at %" PRIu64 " ns score %u: cpu %.9g cuda %.9g", now_ns,
				      i, c->ref[i], c->got[i]);
	/* Highest first; a swap only between scores the tolerance cannot tell apart. */
	for (uint32_t i = 0; i + 1 < n; i++) {
		float hi = c->ref[perm[i]], lo = c->ref[perm[i + 1]];

		if (hi > lo)
			continue;
		if (hi == lo &&
		    g->node_coflow[g->sched[perm[i]]] < g->node_coflow[g->sched[perm[i + 1]]])
			continue; /* the policy's tie-break: lower coflow first */
		if (score_close(lo, hi))
			c->near_ties++;
		else
			cuda_cmp_fail(c, "at %" PRIu64 " ns rank %u: cpu score %.9g before %.9g",
				      now_ns, i, hi, lo);
	}
}

static void test_cuda_matches_cpu(void **state)
{
	struct loom_err err = {{0}};
	struct gnn_err gerr = {{0}};
	struct cuda_cmp *c = calloc(1, sizeof(*c));
	struct policy_gnn_hook hook = {.record = cuda_record};
	struct policy *p;
	struct sim_opts so;
	struct sim_stats st;
	double want, got = 0;
	bool gpu = gnn_cuda_probe(&gerr) == 0;

	(void)state;
	assert_non_null(c);
	hook.ctx = c;
	print_message("cuda probe: %s\n", gpu ? "a device is there" : gerr.msg);
	c->cpu = policy_gnn_model_load(fx.good, "cpu", &err);
	c->cuda = policy_gnn_model_load(fx.good, "cuda", &err);
	if (!c->cpu || !c->cuda)
		fail_msg("model: %s", err.msg);
	/* With a device, "cuda" runs on it; without one it is the cpu backend. */
	if (gpu && gnn_model_fallback(c->cuda))
		fail_msg("cuda model fell back on a machine with a GPU: %s",
			 gnn_model_fallback(c->cuda));
	print_message("cuda model: %s\n", gnn_model_backend_info(c->cuda));
	run("gnn", fx.good, &want);
	p = new_policy("gnn:backend=cuda", fx.good, &err);
	if (!p)
		fail_msg("gnn:backend=cuda: %s", err.msg);
	assert_int_equal(policy_gnn_set_hook(p, &hook), 0);
	sim_opts_default(&so);
	so.check = true;
	if (sim_run(fx.m, p, &so, &st, &err) < 0)
		fail_msg("gnn:backend=cuda: %s", err.msg);
	policy_free(p);
	for (uint32_t j = 0; j < fx.m->njobs; j++)
		got += fx.m->jobs[j].weight *
		       (double)(fx.m->jobs[j].finish_ns - fx.m->jobs[j].arrival_ns);
	print_message("cuda: %u decisions, %u near-ties, weighted JCT cpu %.6g cuda %.6g\n",
		      c->decisions, c->near_ties, want, got);
	policy_gnn_model_free(c->cpu);
	policy_gnn_model_free(c->cuda);
	if (c->failures)
		fail_msg("%u mismatches with cpu; first: %s", c->failures, c->first);
	assert_true(c->decisions > 0);
	/* Same rankings at every decision: the same run, to the bit. */
	if (c->near_ties == 0 || !gpu)
		assert_true(got == want);
	free(c);
}

/* One decision with every root coflow released: the order is the score order. */
static void test_invert_and_hook_order(void **state)
{
	struct loom_err err = {{0}};
	struct policy *p = new_policy("gnn", fx.good, &err),
		      *q = new_policy("gnn:invert=1", fx.good, &err);
	struct policy_decision d1, d2;
	uint32_t n;

	(void)state;
	assert_non_null(p);
	assert_non_null(q);
	cp_model_reset(fx.m);
	for (uint32_t j = 0; j < fx.m->njobs; j++)
		assert_int_equal(cp_model_job_arrive(fx.m, j, 0), 0);
	for (uint32_t c = 0; c < fx.m->ncoflows; c++)
		if (fx.m->coflows[c].state == CP_COFLOW_READY)
			assert_int_equal(cp_model_coflow_release(fx.m, c, 0), 0);
	n = fx.m->nactive;
	assert_true(n >= 4);
	assert_int_equal(policy_decision_init(&d1, fx.m), 0);
	assert_int_equal(policy_decision_init(&d2, fx.m), 0);
	policy_decision_clear(&d1);
	policy_decision_clear(&d2);
	assert_int_equal(policy_decide(p, fx.m, 0, &d1), 0);
	assert_int_equal(policy_decide(q, fx.m, 0, &d2), 0);
	assert_int_equal(d1.norder, n);
	assert_int_equal(d2.norder, n);
	assert_true(d1.has_rates);
	/* distinct scores (a random model gives them): exact reversal */
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(d1.order[i], d2.order[n - 1 - i]);
	policy_decision_done(&d1);
	policy_decision_done(&d2);
	policy_free(p);
	policy_free(q);
}

struct rec {
	uint32_t calls, bad;
};

static void record(void *ctx, const struct policy_graph *g, const uint32_t *perm, uint32_t n,
		   uint64_t now_ns)
{
	struct rec *r = ctx;
	uint8_t seen[4096] = {0};

	(void)now_ns;
	r->calls++;
	if (n != g->nsched || n > sizeof(seen))
		r->bad++;
	for (uint32_t i = 0; i < n && n <= sizeof(seen); i++) {
		if (perm[i] >= n || seen[perm[i]])
			r->bad++;
		else
			seen[perm[i]] = 1;
	}
}

static void test_hooks(void **state)
{
	struct loom_err err = {{0}};
	struct policy *p = new_policy("gnn", fx.good, &err);
	struct policy_params pp = {.classes = 8, .seed = 1};
	struct gnn_rng rng;
	struct rec r = {0};
	struct policy_gnn_hook hook = {.record = record, .ctx = &r, .sample_rng = &rng};
	struct sim_opts so;
	struct sim_stats st;
	double teacher_wjct = 0, imitated = 0;

	(void)state;
	assert_non_null(p);
	gnn_rng_seed(&rng, 1);
	assert_int_equal(policy_gnn_set_hook(p, &hook), 0);
	sim_opts_default(&so);
	assert_int_equal(sim_run(fx.m, p, &so, &st, &err), 0);
	assert_true(r.calls > 0);
	assert_int_equal(r.bad, 0);
	policy_free(p);
	/* imitation: the teacher decides, so the outcome is the teacher's */
	run("wsrjf", NULL, &teacher_wjct);
	p = new_policy("gnn", fx.good, &err);
	hook = (struct policy_gnn_hook){.record = record, .ctx = &r};
	hook.teacher = policy_new("wsrjf", &pp, fx.m, &err);
	assert_non_null(hook.teacher);
	assert_int_equal(policy_gnn_set_hook(p, &hook), 0);
	assert_int_equal(sim_run(fx.m, p, &so, &st, &err), 0);
	for (uint32_t j = 0; j < fx.m->njobs; j++)
		imitated += fx.m->jobs[j].weight *
			    (double)(fx.m->jobs[j].finish_ns - fx.m->jobs[j].arrival_ns);
	assert_true(imitated == teacher_wjct);
	assert_int_equal(r.bad, 0);
	policy_free(hook.teacher);
	policy_free(p);
	/* the hook is for gnn policies only */
	p = new_policy("sebf", NULL, &err);
	assert_int_equal(policy_gnn_set_hook(p, &hook), -EINVAL);
	policy_free(p);
}

/*
 * Saves an untrained residual model on prior `name` taking nfeat features
 * into dir; returns its path in buf.
 */
static const char *residual_model_nf(const char *name, uint32_t nfeat, char *buf, size_t size)
{
	struct gnn_config cfg = gnn_config_default();
	struct gnn_err gerr = {{0}};
	struct gnn_model *g;
	int id = policy_gnn_prior_find(name);

	assert_true(id > 0);
	assert_string_equal(policy_gnn_prior_name((uint32_t)id), name);
	cfg.nfeatures = nfeat;
	cfg.prior = (uint32_t)id;
	cfg.prior_scale = 2;
	snprintf(buf, size, "%s/res-%s-%u.lgw", fx.dir, name, nfeat);
	g = gnn_model_new(&cfg, "cpu", 3, &gerr);
	assert_non_null(g);
	assert_int_equal(gnn_save(g, buf, &gerr), 0);
	gnn_model_free(g);
	return buf;
}

static const char *residual_model(const char *name, char *buf, size_t size)
{
	return residual_model_nf(name, POLICY_NFEATURES, buf, size);
}

struct prior_check {
	uint32_t calls, bad, ties;
};

/* record() with the prior's own heuristic as the teacher: its order must be the prior's. */
static void prior_record(void *ctx, const struct policy_graph *g, const uint32_t *perm, uint32_t n,
			 uint64_t now_ns)
{
	struct prior_check *c = ctx;

	(void)now_ns;
	c->calls++;
	if (!g->has_prior) {
		c->bad++;
		return;
	}
	for (uint32_t i = 0; i + 1 < n; i++) {
		if (g->prior[perm[i]] == g->prior[perm[i + 1]])
			c->ties++;
		if (!(g->prior[perm[i]] > g->prior[perm[i + 1]]))
			c->bad++;
	}
}

static void test_residual_prior(void **state)
{
	/* every decision for four priors (srjf and scf are wsrjf's and sebf's unweighted kin) */
	static const char *const priors[] = {"sincronia", "sebf", "wsrjf", "lcf", "blend"};
	/*
	 * rates=auto gives a residual model its prior's rates: MADD + backfill
	 * for these, strict priority for sincronia and blend
	 */
	static const char *const exact[] = {"sincronia", "sebf", "wsrjf", "blend"};
	struct policy_params pp = {.classes = 8, .seed = 1};
	struct loom_err err = {{0}};
	char path[256];
	double want, got;

	(void)state;
	for (size_t i = 0; i < sizeof(priors) / sizeof(priors[0]); i++) {
		struct prior_check c = {0};
		struct policy_gnn_hook hook = {
			.record = prior_record, .ctx = &c, .dagger = true, .label_prob = 1};
		double wjct;

		hook.teacher = policy_new(priors[i], &pp, fx.m, &err);
		assert_non_null(hook.teacher);
		run_hooked("gnn", residual_model(priors[i], path, sizeof(path)), &hook, &wjct);
		print_message("prior %s: %u decisions labelled, %u out of the prior's order\n",
			      priors[i], c.calls, c.bad);
		assert_true(c.calls > 10);
		assert_int_equal(c.bad, 0);
		assert_int_equal(c.ties, 0);
		policy_free(hook.teacher);
	}
	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++) {
		run(exact[i], NULL, &want);
		run("gnn", residual_model(exact[i], path, sizeof(path)), &got);
		print_message("%s: weighted JCT %.6g, untrained residual gnn %.6g\n", exact[i],
			      want, got);
		assert_true(got == want);
	}
	/* with the other rates the sincronia-residual model is no longer sincronia */
	run("sincronia", NULL, &want);
	run("gnn:rates=madd", residual_model("sincronia", path, sizeof(path)), &got);
	print_message("sincronia order with MADD rates: %.6g\n", got);
	assert_true(got != want);
	/* a prior this build does not know: refused with the model named */
	{
		struct gnn_config cfg = gnn_config_default();
		struct gnn_err gerr = {{0}};
		struct gnn_model *g;

		cfg.nfeatures = POLICY_NFEATURES;
		cfg.prior = 200;
		snprintf(path, sizeof(path), "%s/res-200.lgw", fx.dir);
		g = gnn_model_new(&cfg, "cpu", 3, &gerr);
		assert_non_null(g);
		assert_int_equal(gnn_save(g, path, &gerr), 0);
		gnn_model_free(g);
		assert_null(new_policy("gnn", path, &err));
		assert_non_null(strstr(err.msg, "prior 200"));
		assert_null(policy_gnn_prior_name(200));
		assert_int_equal(policy_gnn_prior_find("nonesuch"), -ENOENT);
	}
}

struct place_check {
	uint32_t h; /* the heuristic labelling: policy_rank_heuristics[h] */
	uint32_t calls, bad, bad_rest;
};

/*
 * record() with heuristic h as the labelling teacher: the q-th coflow of its
 * order has place features q / n and log1p(q) in h's columns, every node
 * that is not schedulable 1 and log1p(n) in all of them.
 */
static void place_record(void *ctx, const struct policy_graph *g, const uint32_t *perm, uint32_t n,
			 uint64_t now_ns)
{
	struct place_check *c = ctx;
	uint32_t col = POLICY_NFEATURES + 2 * c->h;

	(void)now_ns;
	c->calls++;
	if (g->nfeat != POLICY_NFEATURES_RANKS || n != g->nsched) {
		c->bad++;
		return;
	}
	for (uint32_t q = 0; q < n; q++) {
		const float *x = &g->x[(size_t)g->sched[perm[q]] * g->nfeat];

		if (x[col] != (float)q / (float)n || x[col + 1] != log1pf((float)q))
			c->bad++;
	}
	for (uint32_t v = 0; v < g->nnodes; v++) {
		const float *x = &g->x[(size_t)v * g->nfeat];

		if (x[PF_SCHEDULABLE] != 0)
			continue;
		for (uint32_t h = 0; h < POLICY_NRANK_HEUR; h++)
			if (x[POLICY_NFEATURES + 2 * h] != 1 ||
			    x[POLICY_NFEATURES + 2 * h + 1] != log1pf((float)n))
				c->bad_rest++;
	}
}

struct place_reach {
	struct gnn_model *model;
	uint32_t calls, differ, bad;
};

/*
 * record() of a place-feature model: its scores of the graph as built, and
 * with the place columns cleared; they must differ at some decisions.
 */
static void reach_record(void *ctx, const struct policy_graph *g, const uint32_t *perm, uint32_t n,
			 uint64_t now_ns)
{
	struct place_reach *c = ctx;
	static float x[64 * POLICY_NFEATURES_RANKS], a[64], b[64];
	struct gnn_err err = {{0}};
	struct gnn_batch bt;

	(void)perm;
	(void)now_ns;
	if (g->nfeat != POLICY_NFEATURES_RANKS || g->nnodes > 64 || n < 2) {
		c->bad += g->nfeat != POLICY_NFEATURES_RANKS;
		return;
	}
	c->calls++;
	policy_graph_gnn_batch(g, &bt);
	memcpy(x, g->x, (size_t)g->nnodes * g->nfeat * sizeof(float));
	bt.features = x; /* a copy whose place columns can be cleared */
	if (gnn_forward(c->model, &bt, g->sched, n, a, &err) < 0) {
		c->bad++;
		return;
	}
	for (uint32_t v = 0; v < g->nnodes; v++)
		memset(&x[(size_t)v * g->nfeat + POLICY_NFEATURES], 0,
		       2 * POLICY_NRANK_HEUR * sizeof(float));
	if (gnn_forward(c->model, &bt, g->sched, n, b, &err) < 0) {
		c->bad++;
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		if (a[i] != b[i]) {
			c->differ++;
			break;
		}
}

/*
 * A model that takes the heuristics' places: the first and the last
 * heuristic's columns hold their orders at every decision (the columns
 * between are written by the same loop); untrained on the blend prior it is
 * the blend;
 * with random weights it runs deterministically, and its scores change when
 * the place columns are cleared.
 */
static void test_place_features(void **state)
{
	struct policy_params pp = {.classes = 8, .seed = 1};
	struct loom_err err = {{0}};
	char path[256], rnd[256];
	double want, got, a, b;

	(void)state;
	residual_model_nf("blend", POLICY_NFEATURES_RANKS, path, sizeof(path));
	/* the first heuristic's columns and the last's (a run each: ASan's budget) */
	for (uint32_t h = 0; h < POLICY_NRANK_HEUR; h += POLICY_NRANK_HEUR - 1) {
		struct place_check c = {.h = h};
		struct policy_gnn_hook hook = {
			.record = place_record, .ctx = &c, .dagger = true, .label_prob = 1};

		hook.teacher = policy_new(policy_rank_heuristics[h], &pp, fx.m, &err);
		assert_non_null(hook.teacher);
		run_hooked("gnn", path, &hook, &got);
		print_message("%s: %u decisions, %u places wrong, %u other nodes wrong\n",
			      policy_rank_heuristics[h], c.calls, c.bad, c.bad_rest);
		assert_true(c.calls > 10);
		assert_int_equal(c.bad, 0);
		assert_int_equal(c.bad_rest, 0);
		policy_free(hook.teacher);
	}
	run("blend", NULL, &want);
	run("gnn", path, &got);
	print_message("blend: weighted JCT %.6g, untrained place-feature residual gnn %.6g\n", want,
		      got);
	assert_true(got == want);
	/* random weights, no prior: the places reach the scores */
	{
		struct gnn_config cfg = gnn_config_default();
		struct gnn_err gerr = {{0}};
		struct gnn_model *g;

		cfg.nfeatures = POLICY_NFEATURES_RANKS;
		snprintf(rnd, sizeof(rnd), "%s/places.lgw", fx.dir);
		g = gnn_model_new(&cfg, "cpu", 3, &gerr);
		assert_non_null(g);
		assert_int_equal(gnn_save(g, rnd, &gerr), 0);
		gnn_model_free(g);
	}
	run("gnn", rnd, &a);
	/* the place columns reach its scores; the run again, with the hook, is the same */
	{
		struct gnn_err gerr = {{0}};
		struct place_reach c = {.model = gnn_model_load(rnd, "cpu", &gerr)};
		struct policy_gnn_hook hook = {.record = reach_record, .ctx = &c};

		assert_non_null(c.model);
		run_hooked("gnn", rnd, &hook, &b);
		print_message("random place-feature model: weighted JCT %.6g, again %.6g; scores "
			      "with and without the place columns differ at %u of %u decisions\n",
			      a, b, c.differ, c.calls);
		assert_true(a > 0);
		assert_true(a == b);
		assert_int_equal(c.bad, 0);
		assert_true(c.calls > 10);
		assert_true(c.differ > c.calls / 2);
		gnn_model_free(c.model);
	}
}

struct label_count {
	uint32_t calls, bad;
	uint64_t sum; /* of the recorded rankings' first entries, to tell rankings apart */
};

static void label_record(void *ctx, const struct policy_graph *g, const uint32_t *perm, uint32_t n,
			 uint64_t now_ns)
{
	struct label_count *c = ctx;

	(void)now_ns;
	c->calls++;
	if (n != g->nsched)
		c->bad++;
	c->sum += g->node_coflow[g->sched[perm[0]]];
}

/*
 * DAgger: with a labelling teacher the model still acts (the run is the
 * plain model's, not the teacher's), record() gets the teacher's rankings,
 * and label_prob 0.5 labels some decisions, not all.
 */
static void test_dagger_labels(void **state)
{
	struct policy_params pp = {.classes = 8, .seed = 1};
	struct loom_err err = {{0}};
	double plain, teacher, labelled;
	struct label_count all = {0}, half = {0}, own = {0};
	struct gnn_rng lrng;

	(void)state;
	run("gnn", fx.good, &plain);
	run("wsrjf", NULL, &teacher);
	assert_true(plain != teacher);
	gnn_rng_seed(&lrng, 5);
	for (int k = 0; k < 3; k++) {
		struct label_count *c = k == 0 ? &all : k == 1 ? &half : &own;
		struct policy_gnn_hook hook = {.record = label_record,
					       .ctx = c,
					       .dagger = k < 2,
					       .label_prob = k == 0 ? 1 : 0.5,
					       .label_rng = &lrng};
		if (k < 2) {
			hook.teacher = policy_new("wsrjf", &pp, fx.m, &err);
			assert_non_null(hook.teacher);
		}
		run_hooked("gnn", fx.good, &hook, &labelled);
		assert_true(labelled == plain);
		policy_free(hook.teacher);
	}
	print_message("decisions labelled: %u of %u (p = 1), %u (p = 0.5)\n", all.calls, own.calls,
		      half.calls);
	assert_int_equal(all.bad + half.bad + own.bad, 0);
	assert_int_equal(all.calls, own.calls);
	assert_true(half.calls > 0 && half.calls < all.calls);
	/* the teacher's rankings, not the model's own */
	assert_true(all.sum != own.sum);
}

static void test_shipped_model(void **state)
{
	char path[4096];
	double w;

	(void)state;
	policy_gnn_default_weights(path, sizeof(path));
	print_message("shipped model: %s\n", path);
	assert_int_equal(access(path, R_OK), 0);
	run("gnn", NULL, &w);
	assert_true(w > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_weights),
		cmocka_unit_test(test_runs_deterministic),
		cmocka_unit_test(test_cuda_matches_cpu),
		cmocka_unit_test(test_invert_and_hook_order),
		cmocka_unit_test(test_hooks),
		cmocka_unit_test(test_residual_prior),
		cmocka_unit_test(test_place_features),
		cmocka_unit_test(test_dagger_labels),
		cmocka_unit_test(test_shipped_model),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
