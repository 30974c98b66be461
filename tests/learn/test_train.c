/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom-train's learner (controlplane/learn): on a tiny workload family
 * whose best order is known, reinforcement learning alone (no imitation)
 * converges to it within a bounded number of iterations; training is
 * deterministic given the seed, and resuming from a checkpoint continues
 * the same run; the trainer-state parser rejects bad files.
 *
 * The family: three single-coflow jobs arrive together, each one flow from
 * host 0 (so they share host 0's uplink) of a random size (1-16 MiB, sizes
 * at least 1.5x apart), with random external ids (so index order says
 * nothing). Weights are 1, so the order minimising the total JCT is
 * smallest first (Smith's rule). A random model may already prefer it by
 * chance, so the test first teaches the model the worst order (imitating
 * cpf, which on single-coflow jobs is largest first), checks that it learnt
 * it, and then requires reinforcement learning to turn it around.
 *
 * Residual scoring and expert labels on the same family: a model whose
 * prior is sebf (smallest first here) is optimal before any training; DAgger
 * with a largest-first teacher (cpf) labelling the model's own states must
 * teach it to override its prior; and a lookahead teacher on base=gnn runs
 * the model being trained (expert iteration), deterministically; a
 * hindsight teacher (a searched clairvoyant order) teaches a model without a
 * prior the optimal order. Validation's baselines are the same replays
 * whatever the number of workers they are shared out among.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/rng.h"
#include "controlplane/learn/learn.h"
#include "controlplane/policy/coflow_features.h"
#include "controlplane/policy/policy.h"

#define NJOBS 3

static void sizes_of(uint64_t seed, uint64_t *bytes, uint64_t *ids)
{
	struct loom_rng rng;

	loom_rng_seed(&rng, seed);
	for (;;) {
		bool ok = true;

		for (int i = 0; i < NJOBS; i++)
			bytes[i] = (uint64_t)(1048576.0 * pow(2, 4 * loom_rng_uniform(&rng)));
		for (int i = 0; i < NJOBS; i++)
			for (int k = 0; k < i; k++)
				if (fmax(bytes[i], bytes[k]) < 1.5 * fmin(bytes[i], bytes[k]))
					ok = false;
		if (ok)
			break;
	}
	for (int i = 0; i < NJOBS; i++)
		ids[i] = 1 + loom_rng_below(&rng, 1000) * 10 + (uint64_t)i;
}

/*
 * The family's workload of seed (an episode callback): job weights 1, or,
 * when ctx points to true, 1..4 drawn from the seed (weighted and
 * unweighted orders then differ).
 */
static struct cp_model *tiny_episode(void *ctx, uint64_t seed, uint32_t njobs, double load,
				     struct loom_err *err)
{
	bool weighted = ctx && *(const bool *)ctx;
	struct cp_builder *b = cp_builder_new(4);
	uint64_t bytes[NJOBS], ids[NJOBS];
	struct loom_rng rng;

	(void)njobs;
	(void)load;
	sizes_of(seed, bytes, ids);
	loom_rng_seed(&rng, seed ^ 0x5eedULL);
	for (int i = 0; i < NJOBS; i++) {
		double w = weighted ? 1 + (double)loom_rng_below(&rng, 4) : 1;

		if (cp_builder_add_job(b, ids[i], 0, w, err) < 0 ||
		    cp_builder_add_coflow(b, ids[i], ids[i], 0, err) < 0 ||
		    cp_builder_add_flow(b, ids[i], 0, 1 + (uint32_t)i, bytes[i], err) < 0) {
			cp_builder_free(b);
			return NULL;
		}
	}
	return cp_builder_finish(b, err);
}

static void show(void *ctx, const struct learn_progress *pr)
{
	(void)ctx;
	print_message("iter %u %s: avg wJCT %.4f loss %.4g entropy %.4g grad %.4g decisions %u\n",
		      pr->iter, pr->imitation ? "imitate" : "rl", pr->avg_wjct_s, pr->loss,
		      pr->entropy, pr->grad_norm, pr->decisions);
}

static void tiny_opts(struct learn_opts *o, const struct topo *t)
{
	learn_opts_default(o);
	o->episode = tiny_episode;
	o->topo = t;
	o->imitate_iters = 0;
	o->rollouts = 8;
	o->threads = 2;
	o->train_decisions = 0;
	o->rl_lr = 1e-3f;
	o->entropy_start = 0.01;
	o->entropy_end = 0.0;
	o->entropy_iters = 100;
	o->eval_every = 0;
	o->cfg.hidden = 16;
	o->cfg.emb = 16;
	o->cfg.mlp_hidden = 16;
	o->cfg.layers = 1;
	if (getenv("LOOM_TEST_VERBOSE"))
		o->progress = show;
}

/* Binds m (made by the family) to t and replays it under policy spec with pp. */
static void run_tiny(struct cp_model *m, const struct topo *t, const char *spec,
		     const struct policy_params *pp)
{
	struct loom_err err = {{0}};
	struct sim_opts so;
	struct sim_stats st;
	struct policy *p;

	assert_non_null(m);
	assert_int_equal(cp_model_bind(m, t), 0);
	p = policy_new(spec, pp, m, &err);
	assert_non_null(p);
	sim_opts_default(&so);
	assert_int_equal(sim_run(m, p, &so, &st, &err), 0);
	policy_free(p);
}

/* Fraction of fresh episodes where the greedy policy runs smallest first. */
static double greedy_optimal_share(struct gnn_model *model, const struct topo *t, int n)
{
	struct loom_err err = {{0}};
	int good = 0;

	for (int e = 0; e < n; e++) {
		struct cp_model *m = tiny_episode(NULL, 900000 + (uint64_t)e, NJOBS, 1, &err);
		struct policy_params pp = {.classes = 8, .gnn_model = model};
		bool sorted = true;

		run_tiny(m, t, "gnn", &pp);
		/* smallest first <=> finish times increase with size */
		for (uint32_t a = 0; a < m->ncoflows; a++)
			for (uint32_t b = 0; b < m->ncoflows; b++)
				if (m->coflows[a].total_bytes < m->coflows[b].total_bytes &&
				    m->coflows[a].finish_ns > m->coflows[b].finish_ns)
					sorted = false;
		good += sorted;
		cp_model_free(m);
	}
	return (double)good / n;
}

static void test_converges_to_smallest_first(void **state)
{
	struct topo *t = topo_new_bigswitch(4, 1073741824ULL);
	struct loom_err err = {{0}};
	struct gnn_model *model = NULL;
	struct learn_opts o;
	double before, after;
	struct gnn_err gerr = {{0}};

	(void)state;
	tiny_opts(&o, t);
	o.teacher = "cpf";
	o.imitate_iters = 40;
	o.iters = o.imitate_iters; /* the same seed: the first iterations of the run below */
	assert_int_equal(learn_run(&o, &model, &err), 0);
	before = greedy_optimal_share(model, t, 40);
	gnn_model_free(model);
	model = NULL;
	o.iters = o.imitate_iters + 200;
	if (learn_run(&o, &model, &err) < 0)
		fail_msg("learn_run: %s", err.msg);
	after = greedy_optimal_share(model, t, 40);
	print_message("smallest-first share: %.2f after imitating largest-first, %.2f after %u "
		      "RL iterations\n",
		      before, after, o.iters - o.imitate_iters);
	assert_true(before <= 0.2);
	assert_true(after >= 0.95);
	(void)gerr;
	gnn_model_free(model);
	topo_free(t);
}

static void params_equal(struct gnn_model *a, struct gnn_model *b);

/*
 * DAgger with o's teacher labelling every decision: the greedy smallest-first
 * share of the untrained model (one step of lr 1e-30, which changes nothing)
 * and of the model after iters iterations at lr 3e-3.
 */
static void dagger_shares(struct learn_opts *o, const struct topo *t, uint32_t iters,
			  double *untrained, double *taught)
{
	struct loom_err err = {{0}};
	struct gnn_model *model = NULL;

	o->dagger = true;
	o->label_prob = 1;
	o->iters = o->imitate_iters = 1;
	o->lr = 1e-30f;
	assert_int_equal(learn_run(o, &model, &err), 0);
	*untrained = greedy_optimal_share(model, t, 40);
	gnn_model_free(model);
	model = NULL;
	o->lr = 3e-3f;
	o->iters = o->imitate_iters = iters;
	if (learn_run(o, &model, &err) < 0)
		fail_msg("learn_run: %s", err.msg);
	*taught = greedy_optimal_share(model, t, 40);
	gnn_model_free(model);
}

/*
 * A residual model on prior sebf, taught largest first by cpf, leaves its
 * prior; with 17 inputs and with the heuristics' places (loom-train
 * --place-features), which train through the same path.
 */
static void test_residual_dagger(void **state)
{
	static const uint32_t widths[] = {POLICY_NFEATURES, POLICY_NFEATURES_RANKS};
	struct topo *t = topo_new_bigswitch(4, 1073741824ULL);

	(void)state;
	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
		struct learn_opts o;
		double untrained, taught;

		tiny_opts(&o, t);
		o.cfg.nfeatures = widths[i];
		o.cfg.prior = (uint32_t)policy_gnn_prior_find("sebf");
		o.cfg.prior_scale = 2;
		o.teacher = "cpf";
		dagger_shares(&o, t, 60, &untrained, &taught);
		print_message("%u inputs: smallest-first share %.2f untrained on prior sebf, %.2f "
			      "after %u DAgger iterations labelled by cpf\n",
			      widths[i], untrained, taught, o.iters);
		assert_true(untrained == 1.0);
		assert_true(taught <= 0.2);
	}
	topo_free(t);
}

/*
 * A hindsight teacher (one clairvoyant order searched over the episode,
 * docs/policies.md#hindsight) runs in loom-train: created per episode, it
 * labels every decision of the model's own episodes (its search at the
 * first), here with the optimal order, smallest first, which a model without
 * a prior learns. On this family the search's start is already optimal, so
 * this checks the plumbing, not the search (test_lookahead does that).
 */
static void test_hindsight_teacher(void **state)
{
	struct topo *t = topo_new_bigswitch(4, 1073741824ULL);
	struct learn_opts o;
	double untrained, taught;

	(void)state;
	tiny_opts(&o, t);
	o.teacher = "hindsight:evals=20";
	dagger_shares(&o, t, 60, &untrained, &taught);
	print_message("smallest-first share: %.2f untrained, %.2f after %u DAgger iterations "
		      "labelled by hindsight\n",
		      untrained, taught, o.iters);
	assert_true(untrained <= 0.5);
	assert_true(taught >= 0.9);
	topo_free(t);
}

/*
 * A residual model is validated before training and kept as best.lgw until
 * a trained one beats it: taught the worst order by cpf, the final model is
 * worse than its prior, and best.lgw is still the untrained prior.
 */
static void test_best_starts_at_prior(void **state)
{
	struct topo *t = topo_new_bigswitch(4, 1073741824ULL);
	struct loom_err err = {{0}};
	struct gnn_err gerr = {{0}};
	struct gnn_model *final = NULL, *best;
	char dir[] = "/tmp/loom-train-best-XXXXXX", path[128], cmd[160];
	struct learn_opts o;
	double share_final, share_best;

	(void)state;
	assert_non_null(mkdtemp(dir));
	tiny_opts(&o, t);
	o.cfg.prior = (uint32_t)policy_gnn_prior_find("sebf");
	o.cfg.prior_scale = 2;
	o.teacher = "cpf";
	o.dagger = true;
	o.label_prob = 1;
	o.lr = 3e-3f;
	o.iters = o.imitate_iters = 60;
	o.eval_every = 20;
	o.eval_workloads = 2;
	o.out_dir = dir;
	if (learn_run(&o, &final, &err) < 0)
		fail_msg("learn_run: %s", err.msg);
	snprintf(path, sizeof(path), "%s/best.lgw", dir);
	best = gnn_model_load(path, "cpu", &gerr);
	if (!best)
		fail_msg("%s: %s", path, gerr.msg);
	share_final = greedy_optimal_share(final, t, 40);
	share_best = greedy_optimal_share(best, t, 40);
	print_message("smallest-first share: final %.2f, best.lgw %.2f\n", share_final, share_best);
	assert_true(share_final <= 0.2);
	assert_true(share_best == 1.0);
	gnn_model_free(best);
	gnn_model_free(final);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	topo_free(t);
}

/* The progress callback's last validation ratio. */
static void keep_eval(void *ctx, const struct learn_progress *pr)
{
	*(double *)ctx = pr->eval_ratio;
}

/*
 * Validation's ratio for model, replay by replay: its avg wJCT over the
 * best heuristic's, averaged. *ret_apart: the workloads on which the
 * heuristics do not all tie.
 */
static double replayed_ratio(struct gnn_model *model, const struct learn_opts *o,
			     const struct topo *t, uint32_t *ret_apart)
{
	static const char *const heur[] = {"wsrjf", "sincronia", "sebf", "gnn"};
	struct loom_err err = {{0}};
	double sum = 0;

	*ret_apart = 0;
	for (uint32_t i = 0; i < o->eval_workloads; i++) {
		double best = INFINITY, worst = 0, mine = 0;

		for (size_t h = 0; h < sizeof(heur) / sizeof(heur[0]); h++) {
			struct cp_model *m =
				o->episode(o->episode_ctx, 1000001 + i, NJOBS, 1, &err);
			struct policy_params pp = {.classes = 8, .seed = 1};
			double s = 0;

			if (strcmp(heur[h], "gnn") == 0) {
				pp.gnn_model = model;
				pp.gnn_rates = o->gnn_rates;
			}
			run_tiny(m, t, heur[h], &pp);
			for (uint32_t j = 0; j < m->njobs; j++)
				s += m->jobs[j].weight *
				     (double)(m->jobs[j].finish_ns - m->jobs[j].arrival_ns) * 1e-9;
			s /= m->njobs;
			if (pp.gnn_model) {
				mine = s;
			} else {
				best = fmin(best, s);
				worst = fmax(worst, s);
			}
			cp_model_free(m);
		}
		*ret_apart += worst > best;
		sum += mine / best;
	}
	return sum / o->eval_workloads;
}

/*
 * Validation's baselines (the best of wsrjf, sincronia and sebf on each
 * workload) are replays shared out among the workers, a (workload,
 * heuristic) each: with 1 and with 3 workers, the last validation is the
 * ratio computed here replay by replay for the model the run ends with (one
 * taught largest first, so above 1: a baseline left out would count its
 * workload as 1). The jobs are weighted, so that sebf (unweighted) does
 * worse than the weighted two on some workloads: a baseline taken from the
 * wrong heuristic changes the ratio too.
 */
static void test_validation_baselines(void **state)
{
	struct topo *t = topo_new_bigswitch(4, 1073741824ULL);
	struct loom_err err = {{0}};
	bool weighted = true;

	(void)state;
	for (uint32_t threads = 1; threads <= 3; threads += 2) {
		struct gnn_model *final = NULL;
		struct learn_opts o;
		double got = NAN, want;
		uint32_t apart;

		tiny_opts(&o, t);
		o.episode_ctx = &weighted;
		o.threads = threads;
		o.teacher = "cpf";
		o.lr = 3e-3f;
		o.iters = o.imitate_iters = 40;
		o.eval_every = o.iters;
		o.eval_workloads = 4;
		o.progress = keep_eval;
		o.progress_ctx = &got;
		if (learn_run(&o, &final, &err) < 0)
			fail_msg("learn_run: %s", err.msg);
		want = replayed_ratio(final, &o, t, &apart);
		print_message("%u workers: validation %.6f, replayed %.6f (heuristics apart on %u "
			      "of %u workloads)\n",
			      threads, got, want, apart, o.eval_workloads);
		assert_true(want > 1.05);
		assert_true(apart > 0);
		assert_true(fabs(got - want) <= 1e-12 * want);
		gnn_model_free(final);
	}
	topo_free(t);
}

/*
 * --agree-weight 0: decisions the model already gets right weigh nothing, so
 * a residual model on sebf taught by sebf itself does not move at all, while
 * with the default weight 1 the same run sharpens it (its parameters change).
 */
static void test_agree_weight(void **state)
{
	struct topo *t = topo_new_bigswitch(4, 1073741824ULL);
	struct loom_err err = {{0}};
	struct gnn_model *a = NULL, *b = NULL, *c = NULL;
	struct learn_opts o;

	(void)state;
	tiny_opts(&o, t);
	o.cfg.prior = (uint32_t)policy_gnn_prior_find("sebf");
	o.teacher = "sebf";
	o.dagger = true;
	o.label_prob = 1;
	o.imitate_top = 2;
	{
		struct gnn_err gerr = {{0}};

		a = gnn_model_new(&o.cfg, "cpu", o.seed, &gerr); /* learn_run's initial model */
		assert_non_null(a);
	}
	o.lr = 3e-3f;
	o.iters = o.imitate_iters = 5;
	o.agree_weight = 0;
	assert_int_equal(learn_run(&o, &b, &err), 0);
	params_equal(a, b);
	o.agree_weight = 1;
	assert_int_equal(learn_run(&o, &c, &err), 0);
	{
		struct gnn_param pa, pc;
		uint32_t last = gnn_param_count(a) - 2; /* head.w2 */

		gnn_param_get(a, last, &pa);
		gnn_param_get(c, last, &pc);
		assert_memory_not_equal(pa.value, pc.value, (size_t)pa.rows * pa.cols * 4);
	}
	o.agree_weight = 1.5;
	assert_int_equal(learn_run(&o, NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "agreement"));
	gnn_model_free(a);
	gnn_model_free(b);
	gnn_model_free(c);
	topo_free(t);
}

/* Expert iteration: the teacher's base is the model in training; same seed, same model. */
static void test_expert_iteration(void **state)
{
	struct topo *t = topo_new_bigswitch(4, 1073741824ULL);
	struct loom_err err = {{0}};
	struct gnn_model *a = NULL, *b = NULL;
	struct learn_opts o;

	(void)state;
	tiny_opts(&o, t);
	o.cfg.prior = (uint32_t)policy_gnn_prior_find("lcf");
	o.teacher = "lookahead:base=gnn";
	o.dagger = true;
	o.label_prob = 0.5;
	o.imitate_top = 2;
	o.iters = o.imitate_iters = 8;
	assert_int_equal(learn_run(&o, &a, &err), 0);
	assert_int_equal(learn_run(&o, &b, &err), 0);
	params_equal(a, b);
	gnn_model_free(a);
	gnn_model_free(b);
	/* a bad label probability */
	o.label_prob = 0;
	assert_int_equal(learn_run(&o, NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "label"));
	topo_free(t);
}

static void params_equal(struct gnn_model *a, struct gnn_model *b)
{
	assert_int_equal(gnn_param_count(a), gnn_param_count(b));
	for (uint32_t i = 0; i < gnn_param_count(a); i++) {
		struct gnn_param pa, pb;

		gnn_param_get(a, i, &pa);
		gnn_param_get(b, i, &pb);
		assert_memory_equal(pa.value, pb.value, (size_t)pa.rows * pa.cols * sizeof(float));
	}
}

static void test_deterministic_and_resume(void **state)
{
	struct topo *t = topo_new_bigswitch(4, 1073741824ULL);
	struct loom_err err = {{0}};
	struct gnn_model *a = NULL, *b = NULL, *c = NULL;
	char dir[] = "/tmp/loom-train-test-XXXXXX";
	struct learn_opts o;

	(void)state;
	assert_non_null(mkdtemp(dir));
	tiny_opts(&o, t);
	o.iters = 6;
	o.imitate_iters = 2;
	o.teacher = "sebf";
	o.eval_every = 3;
	o.eval_workloads = 2;
	assert_int_equal(learn_run(&o, &a, &err), 0);
	assert_int_equal(learn_run(&o, &b, &err), 0);
	params_equal(a, b);
	/* 3 iterations with a checkpoint, then resume for the other 3 */
	o.out_dir = dir;
	o.iters = 3;
	gnn_model_free(b);
	b = NULL;
	assert_int_equal(learn_run(&o, &b, &err), 0);
	/* as if the run had died after writing row 4 past its checkpoint at 3 */
	{
		char path[128];
		FILE *f;

		snprintf(path, sizeof(path), "%s/learning.csv", dir);
		f = fopen(path, "a");
		assert_non_null(f);
		fputs("4,rl,3,0.5,1,1,0,0,0,16,,0,1\n", f);
		fclose(f);
	}
	o.iters = 6;
	o.resume = true;
	if (learn_run(&o, &c, &err) < 0)
		fail_msg("resume: %s", err.msg);
	params_equal(a, c);
	/* learning.csv: the header, then iterations 1..6 once each, in order (row 4 rewritten) */
	{
		char path[128], line[512];
		unsigned long want = 1;
		FILE *f;

		snprintf(path, sizeof(path), "%s/learning.csv", dir);
		f = fopen(path, "r");
		assert_non_null(f);
		assert_non_null(fgets(line, sizeof(line), f));
		assert_int_equal(strncmp(line, "iter,", 5), 0);
		while (fgets(line, sizeof(line), f))
			assert_int_equal(strtoul(line, NULL, 10), want++);
		fclose(f);
		assert_int_equal(want, 7);
	}
	/* a different seed gives a different model */
	gnn_model_free(b);
	b = NULL;
	o.resume = false;
	o.out_dir = NULL;
	o.seed = 2;
	assert_int_equal(learn_run(&o, &b, &err), 0);
	{
		struct gnn_param pa, pb;

		gnn_param_get(a, 0, &pa);
		gnn_param_get(b, 0, &pb);
		assert_memory_not_equal(pa.value, pb.value, (size_t)pa.rows * pa.cols * 4);
	}
	/* resuming a checkpoint that is past --iters is refused */
	o.resume = true;
	o.out_dir = dir;
	o.seed = 1;
	o.iters = 2;
	gnn_model_free(b);
	b = NULL;
	assert_true(learn_run(&o, &b, &err) < 0);
	assert_non_null(strstr(err.msg, "past --iters"));
	o.iters = 6;
	o.seed = 2;
	/* resume with another seed is refused with a message */
	o.out_dir = dir;
	o.resume = true;
	gnn_model_free(b);
	b = NULL;
	assert_true(learn_run(&o, &b, &err) < 0);
	assert_non_null(strstr(err.msg, "--seed"));
	gnn_model_free(a);
	gnn_model_free(c);
	{
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		assert_int_equal(system(cmd), 0);
	}
	topo_free(t);
}

static void test_bad_options(void **state)
{
	struct topo *t = topo_new_bigswitch(4, 1073741824ULL);
	struct loom_err err = {{0}};
	struct learn_opts o;

	(void)state;
	tiny_opts(&o, t);
	o.rollouts = 1;
	assert_int_equal(learn_run(&o, NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "rollouts"));
	tiny_opts(&o, t);
	o.init_weights = "/nonexistent/weights.lgw";
	assert_true(learn_run(&o, NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "/nonexistent/weights.lgw"));
	topo_free(t);
}

static void test_state_parse(void **state)
{
	uint8_t buf[256] = "LOOMTRN";
	struct learn_state s;
	struct loom_err err = {{0}};

	(void)state;
	assert_int_equal(learn_state_parse(buf, 4, "x", &s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "magic"));
	assert_int_equal(learn_state_parse(buf, 12, "x", &s, &err), -EINVAL);
	buf[8] = 1; /* version 1, then a truncated header */
	assert_int_equal(learn_state_parse(buf, 20, "x", &s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "truncated"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_parse),
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_deterministic_and_resume),
		cmocka_unit_test(test_converges_to_smallest_first),
		cmocka_unit_test(test_residual_dagger),
		cmocka_unit_test(test_best_starts_at_prior),
		cmocka_unit_test(test_validation_baselines),
		cmocka_unit_test(test_expert_iteration),
		cmocka_unit_test(test_hindsight_teacher),
		cmocka_unit_test(test_agree_weight),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
