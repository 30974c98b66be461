/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for gnn/'s model: backend lookup, configuration and batch
 * validation, finite-difference gradient checks of every layer (DAGNN
 * forward and reverse directions, input projection, embedding + pooling,
 * attention, score head) and of the whole model, pipelined == plain
 * evaluation, attention permutation-equivariance, job independence of the
 * DAGNN embeddings, naive vs cpu backends, and Adam on a toy regression.
 *
 * Gradient checks (float32 model, loss L = sum_i c_i s_i accumulated in
 * double): central differences with eps = 1e-3 on every entry of every
 * parameter tensor of the layer; an entry passes when |num - ana| <= 2e-2 *
 * max(|num|, |ana|) + 1e-4 (the float32 rounding of the loss, ~1e-7, over
 * 2 eps is ~5e-5). Each layer must also have an analytic gradient entry above
 * 2e-3 (20x the absolute tolerance), and every tensor one above 4e-3 x that
 * largest, so a backward that returns zeros fails. The DAGNN attention vectors
 * a_q, a_k have their own check (case_attention, see VEC_SCALE).
 * The whole-model check compares the directional derivative along a random
 * +-1 direction of all parameters (step 2e-4) with grad . direction, 1e-2.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gnn/gnn.h"
#include "gnn_test_util.h"

#define FD_EPS  1e-3f
#define FD_RTOL 2e-2
#define FD_ATOL 1e-4
/*
 * case_attention: a_k scaled by 8 (a sharp attention whose LeakyReLU inputs
 * straddle 0, so a_q matters too). The a_q, a_k gradients stay small (1e-5 ..
 * 1e-3: they act only through the softmax over 3 parents), so this check uses
 * a tighter absolute tolerance (observed FD noise: 1.3e-5) and requires each
 * of the 8 tensors to have an entry above 1e-5.
 */
#define VEC_SCALE 8.0f
#define VEC_ATOL  3e-5
#define VEC_MIN   1e-5
#define FD_MIN    2e-3 /* some analytic entry of each layer must exceed this */

/* Schedulable nodes of the mixed batch: roots, inner nodes, sinks, isolated ones. */
static const uint32_t SCHED[] = {0, 3, 5, 8, 12, 13, 14, 17, 19, 21, 22, 25};
#define NSCHED ((uint32_t)(sizeof(SCHED) / sizeof(SCHED[0])))

static struct gnn_model *new_model(const struct gnn_config *c, const char *backend, uint64_t seed)
{
	struct gnn_err err = {{0}};
	struct gnn_model *m = gnn_model_new(c, backend, seed, &err);

	if (!m)
		fail_msg("gnn_model_new: %s", err.msg);
	return m;
}

static struct gnn_param param_named(struct gnn_model *m, const char *name)
{
	struct gnn_param p;

	for (uint32_t i = 0; i < gnn_param_count(m); i++) {
		assert_int_equal(gnn_param_get(m, i, &p), 0);
		if (strcmp(p.name, name) == 0)
			return p;
	}
	fail_msg("no parameter %s", name);
	return p;
}

/* Makes the score head's last layer larger than its 0.01 init so gradients are well above noise. */
static void boost_head(struct gnn_model *m)
{
	struct gnn_param w2 = param_named(m, "head.w2");

	for (uint32_t i = 0; i < w2.cols; i++)
		w2.value[i] = (i % 2 ? -0.4f : 0.5f) + 0.05f * (float)i;
}

static void forward(struct gnn_model *m, const struct tb *b, const uint32_t *sched, uint32_t n,
		    float *scores)
{
	struct gnn_batch batch = tb_batch(b);
	struct gnn_err err = {{0}};

	if (gnn_forward(m, &batch, sched, n, scores, &err) != 0)
		fail_msg("gnn_forward: %s", err.msg);
}

static void coefs(float *coef, uint32_t n, uint64_t seed)
{
	struct gnn_rng rng;

	gnn_rng_seed(&rng, seed);
	for (uint32_t i = 0; i < n; i++)
		coef[i] = (float)(2 * gnn_rng_uniform(&rng) - 1);
}

/* A finite-difference case: a batch, its schedulable nodes and the loss coefficients. */
struct fd_case {
	struct tb b;
	uint32_t sched[TB_MAXN], n;
	float coef[TB_MAXN];
};

/* The mixed batch (tb_mixed) with SCHED and random coefficients. */
static void case_mixed(struct fd_case *fc, uint32_t F)
{
	tb_mixed(&fc->b, F, 5);
	memcpy(fc->sched, SCHED, sizeof(SCHED));
	fc->n = NSCHED;
	coefs(fc->coef, fc->n, 99);
}

/*
 * Small jobs where the DAGNN attention matters: a fan-in of 3 very different
 * parents (forward softmax over 3), a fan-out to 3 very different children
 * (reverse softmax over 3), a diamond; the scored nodes are the fan-in's sink,
 * the fan-out's root and the diamond's ends.
 */
static void case_attention(struct fd_case *fc, uint32_t F)
{
	static const uint32_t fanin[] = {0, 3, 1, 3, 2, 3};
	static const uint32_t fanout[] = {0, 1, 0, 2, 0, 3};
	struct gnn_rng rng;

	gnn_rng_seed(&rng, 3);
	tb_init(&fc->b, F);
	tb_job(&fc->b, &rng, 4, fanin, 3);
	tb_job(&fc->b, &rng, 4, fanout, 3);
	tb_job(&fc->b, &rng, 4, TB_DIAMOND, 4);
	for (uint32_t v = 0; v < fc->b.N; v++)
		for (uint32_t f = 0; f < F; f++)
			fc->b.x[v * F + f] *= 3.0f;
	fc->n = 0;
	fc->sched[fc->n++] = 3;
	fc->sched[fc->n++] = 4;
	fc->sched[fc->n++] = 8;
	fc->sched[fc->n++] = 11;
	coefs(fc->coef, fc->n, 5);
}

static double loss(struct gnn_model *m, const struct fd_case *fc)
{
	float s[TB_MAXN];
	double l = 0;

	forward(m, &fc->b, fc->sched, fc->n, s);
	for (uint32_t i = 0; i < fc->n; i++)
		l += (double)fc->coef[i] * s[i];
	return l;
}

/* Analytic gradient of loss() into the model's grads. */
static void analytic(struct gnn_model *m, const struct fd_case *fc)
{
	struct gnn_err err = {{0}};
	float s[TB_MAXN];

	gnn_zero_grad(m);
	forward(m, &fc->b, fc->sched, fc->n, s);
	if (gnn_backward(m, fc->coef, fc->n, &err) != 0)
		fail_msg("gnn_backward: %s", err.msg);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/*
 * Checks every entry of every tensor whose name starts with one of prefixes
 * against central differences. Every tensor must have an analytic entry
 * above tensor_min (when > 0) or, else, above 4e-3 x the largest of the
 * layer; the DAGNN attention vectors are exempt from the latter (a_q only
 * acts through the LeakyReLU, softmax being shift-invariant: their gradient
 * is legitimately tiny on the mixed batch; case_attention checks them).
 */
static void grad_check_case(const char *const *prefixes, bool pipelined, struct fd_case *fc,
			    double tensor_min, float vec_scale, double atol)
{
	struct gnn_config c = tb_small_config();
	struct gnn_model *m = new_model(&c, "cpu", 11);
	double maxana = 0, worst = 0, tmax[64] = {0};
	bool done[64] = {0};
	uint32_t checked = 0, bad = 0;

	boost_head(m);
	for (uint32_t t = 0; t < gnn_param_count(m); t++) {
		struct gnn_param p;

		gnn_param_get(m, t, &p);
		if (ends_with(p.name, ".ak"))
			for (uint32_t i = 0; i < p.cols; i++)
				p.value[i] *= vec_scale;
	}
	gnn_model_set_pipelined(m, pipelined);
	analytic(m, fc);
	for (uint32_t t = 0; t < gnn_param_count(m); t++) {
		struct gnn_param p;
		bool want = false;

		assert_int_equal(gnn_param_get(m, t, &p), 0);
		for (const char *const *pre = prefixes; *pre; pre++)
			want |= strncmp(p.name, *pre, strlen(*pre)) == 0;
		if (!want)
			continue;
		assert_true(t < 64);
		done[t] = true;
		for (uint32_t i = 0; i < p.rows * p.cols; i++) {
			float v0 = p.value[i], hi = v0 + FD_EPS, lo = v0 - FD_EPS;
			double lp, lm, num, ana = p.grad[i], err;

			p.value[i] = hi;
			lp = loss(m, fc);
			p.value[i] = lo;
			lm = loss(m, fc);
			p.value[i] = v0;
			num = (lp - lm) / ((double)hi - (double)lo);
			err = fabs(num - ana);
			checked++;
			maxana = fmax(maxana, fabs(ana));
			tmax[t] = fmax(tmax[t], fabs(ana));
			worst = fmax(worst, err);
			if (err > FD_RTOL * fmax(fabs(num), fabs(ana)) + atol) {
				if (bad++ < 8)
					print_message("  %s[%u]: numeric %.6g analytic %.6g\n",
						      p.name, i, num, ana);
			}
		}
	}
	for (uint32_t t = 0; t < gnn_param_count(m); t++) {
		struct gnn_param p;
		bool vec;

		gnn_param_get(m, t, &p);
		vec = ends_with(p.name, ".aq") || ends_with(p.name, ".ak");
		if (!done[t])
			continue;
		if (tensor_min > 0 ? tmax[t] <= tensor_min : (!vec && tmax[t] <= 4e-3 * maxana)) {
			print_message("  %s: max |grad| %.3g only\n", p.name, tmax[t]);
			bad++;
		}
	}
	print_message("  %s%s (%s): %u entries, max |grad| %.3g, max abs err %.2g, %u bad\n",
		      prefixes[0], prefixes[1] ? ",..." : "", pipelined ? "pipelined" : "plain",
		      checked, maxana, worst, bad);
	assert_true(checked > 0);
	assert_int_equal(bad, 0);
	assert_true(maxana > 20 * atol);
	gnn_model_free(m);
}

static void grad_check(const char *const *prefixes, bool pipelined)
{
	struct fd_case *fc = malloc(sizeof(*fc));

	assert_non_null(fc);
	case_mixed(fc, tb_small_config().nfeatures);
	grad_check_case(prefixes, pipelined, fc, 0, 1, FD_ATOL);
	free(fc);
}

static void test_grad_dagnn_fwd(void **state)
{
	static const char *const pre[] = {"fwd.", NULL};

	(void)state;
	grad_check(pre, true);
	grad_check(pre, false);
}

static void test_grad_dagnn_rev(void **state)
{
	static const char *const pre[] = {"rev.", NULL};

	(void)state;
	grad_check(pre, true);
	grad_check(pre, false);
}

/* The DAGNN attention vectors a_q, a_k of both directions on case_attention. */
static void test_grad_dagnn_attention(void **state)
{
	static const char *const pre[] = {"fwd.1.a", "fwd.2.a", "rev.1.a", "rev.2.a", NULL};
	struct fd_case *fc = malloc(sizeof(*fc));

	(void)state;
	assert_non_null(fc);
	case_attention(fc, tb_small_config().nfeatures);
	grad_check_case(pre, true, fc, VEC_MIN, VEC_SCALE, VEC_ATOL);
	grad_check_case(pre, false, fc, VEC_MIN, VEC_SCALE, VEC_ATOL);
	free(fc);
}

static void test_grad_input(void **state)
{
	static const char *const pre[] = {"in.", NULL};

	(void)state;
	grad_check(pre, true);
}

static void test_grad_embedding(void **state)
{
	static const char *const pre[] = {"emb.", NULL};

	(void)state;
	grad_check(pre, true);
}

static void test_grad_attention(void **state)
{
	static const char *const pre[] = {"att.", NULL};

	(void)state;
	grad_check(pre, true);
}

static void test_grad_head(void **state)
{
	static const char *const pre[] = {"head.", NULL};

	(void)state;
	grad_check(pre, true);
}

/* Directional derivative of the whole model along a random direction of all parameters. */
/*
 * nfeatures 5 < d = 6 runs layer 1's input GEMM folded through W_in (model
 * option fold); 8 > d runs it on h^(0). The backward is the same in both, so
 * agreement with the finite differences checks the folded forward too.
 */
static void whole_model(bool pipelined, uint32_t nfeatures)
{
	struct gnn_config c = tb_small_config();
	struct gnn_model *m;
	struct fd_case *fc = malloc(sizeof(*fc));
	float *dir;
	size_t np;
	double gv = 0, lp = 0, lm = 0, num, eps = 2e-4;
	struct gnn_rng rng;
	size_t off;

	c.nfeatures = nfeatures;
	m = new_model(&c, "cpu", 3);
	np = gnn_nparams(m);
	dir = malloc(np * sizeof(float));
	assert_non_null(fc);
	assert_non_null(dir);
	gnn_rng_seed(&rng, 8);
	for (size_t i = 0; i < np; i++)
		dir[i] = gnn_rng_uniform(&rng) < 0.5 ? -1.0f : 1.0f;
	case_mixed(fc, c.nfeatures);
	boost_head(m);
	gnn_model_set_pipelined(m, pipelined);
	analytic(m, fc);
	off = 0;
	for (uint32_t t = 0; t < gnn_param_count(m); t++) {
		struct gnn_param p;

		gnn_param_get(m, t, &p);
		for (uint32_t i = 0; i < p.rows * p.cols; i++)
			gv += (double)p.grad[i] * dir[off + i];
		off += (size_t)p.rows * p.cols;
	}
	assert_int_equal(off, np);
	for (int sign = 1; sign >= -1; sign -= 2) {
		off = 0;
		for (uint32_t t = 0; t < gnn_param_count(m); t++) {
			struct gnn_param p;

			gnn_param_get(m, t, &p);
			for (uint32_t i = 0; i < p.rows * p.cols; i++)
				p.value[i] += (float)(sign * eps) * dir[off + i];
			off += (size_t)p.rows * p.cols;
		}
		if (sign == 1)
			lp = loss(m, fc);
		else
			lm = loss(m, fc);
		off = 0;
		for (uint32_t t = 0; t < gnn_param_count(m); t++) {
			struct gnn_param p;

			gnn_param_get(m, t, &p);
			for (uint32_t i = 0; i < p.rows * p.cols; i++)
				p.value[i] -= (float)(sign * eps) * dir[off + i];
			off += (size_t)p.rows * p.cols;
		}
	}
	num = (lp - lm) / (2 * eps);
	print_message("  whole model (%s, F %u, %s): directional numeric %.6g analytic %.6g\n",
		      pipelined ? "pipelined" : "plain", nfeatures,
		      nfeatures < c.hidden ? "layer 1 folded" : "not folded", num, gv);
	assert_true(fabs(gv) > 1e-1);
	assert_true(fabs(num - gv) <= 1e-2 * fabs(gv));
	free(dir);
	free(fc);
	gnn_model_free(m);
}

static void test_grad_whole_model(void **state)
{
	(void)state;
	whole_model(true, 5);
	whole_model(false, 5);
	whole_model(true, 8);
	whole_model(false, 8);
}

static bool close_rel(double a, double b, double tol)
{
	return fabs(a - b) <= tol * fmax(1.0, fmax(fabs(a), fabs(b)));
}

/* Pipelined and plain evaluation agree (1e-6) on scores and DAGNN states, and on gradients. */
static void test_pipelined_equals_plain(void **state)
{
	struct gnn_config c = gnn_config_default();
	struct gnn_model *m;
	struct tb *b = malloc(sizeof(*b));
	struct gnn_rng rng;
	float s1[TB_MAXN], s2[TB_MAXN], coef[TB_MAXN];
	float *a1, *a2, *g1;
	uint32_t rows, cols, sched[TB_MAXN], n = 0;
	struct gnn_err err = {{0}};
	size_t cap, np;

	(void)state;
	assert_non_null(b);
	c.nfeatures = 6;
	c.layers = 3;
	m = new_model(&c, "cpu", 21);
	gnn_rng_seed(&rng, 4);
	tb_init(b, c.nfeatures);
	for (int j = 0; j < 6; j++)
		tb_random_job(b, &rng, 4 + 3 * (uint32_t)j, 0.3);
	tb_job(b, &rng, 4, TB_DIAMOND, 4);
	for (uint32_t v = 0; v < b->N; v += 2)
		sched[n++] = v;
	coefs(coef, n, 1);
	boost_head(m);
	cap = (size_t)b->N * 2 * c.layers * c.hidden;
	np = gnn_nparams(m);
	a1 = malloc(cap * sizeof(float));
	a2 = malloc(cap * sizeof(float));
	g1 = malloc(np * sizeof(float));
	assert_true(a1 && a2 && g1);

	gnn_model_set_pipelined(m, true);
	gnn_zero_grad(m);
	forward(m, b, sched, n, s1);
	assert_int_equal(gnn_copy_activations(m, GNN_ACT_DAGNN, a1, cap, &rows, &cols, &err), 0);
	assert_int_equal(gnn_backward(m, coef, n, &err), 0);
	for (uint32_t t = 0, off = 0; t < gnn_param_count(m); t++) {
		struct gnn_param p;

		gnn_param_get(m, t, &p);
		memcpy(g1 + off, p.grad, (size_t)p.rows * p.cols * sizeof(float));
		off += p.rows * p.cols;
	}

	gnn_model_set_pipelined(m, false);
	gnn_zero_grad(m);
	forward(m, b, sched, n, s2);
	assert_int_equal(gnn_copy_activations(m, GNN_ACT_DAGNN, a2, cap, &rows, &cols, &err), 0);
	assert_int_equal(gnn_backward(m, coef, n, &err), 0);
	for (uint32_t i = 0; i < n; i++)
		assert_true(close_rel(s1[i], s2[i], 1e-6));
	for (size_t i = 0; i < cap; i++)
		assert_true(close_rel(a1[i], a2[i], 1e-6));
	for (uint32_t t = 0, off = 0; t < gnn_param_count(m); t++) {
		struct gnn_param p;

		gnn_param_get(m, t, &p);
		for (uint32_t i = 0; i < p.rows * p.cols; i++)
			if (!close_rel(g1[off + i], p.grad[i], 1e-5))
				fail_msg("%s[%u]: pipelined %g plain %g", p.name, i, g1[off + i],
					 p.grad[i]);
		off += p.rows * p.cols;
	}
	free(a1);
	free(a2);
	free(g1);
	free(b);
	gnn_model_free(m);
}

/* Permuting the schedulable subset permutes the scores. */
static void test_attention_equivariant(void **state)
{
	struct gnn_config c = tb_small_config();
	struct gnn_model *m = new_model(&c, "cpu", 5);
	struct tb b;
	uint32_t perm[NSCHED], sched2[NSCHED];
	float s1[NSCHED], s2[NSCHED];
	struct gnn_rng rng;

	(void)state;
	tb_mixed(&b, c.nfeatures, 9);
	boost_head(m);
	forward(m, &b, SCHED, NSCHED, s1);
	gnn_rng_seed(&rng, 77);
	for (uint32_t i = 0; i < NSCHED; i++)
		perm[i] = i;
	for (uint32_t i = NSCHED; i-- > 1;) {
		uint32_t j = (uint32_t)(gnn_rng_next(&rng) % (i + 1)), t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	for (uint32_t i = 0; i < NSCHED; i++)
		sched2[i] = SCHED[perm[i]];
	forward(m, &b, sched2, NSCHED, s2);
	for (uint32_t i = 0; i < NSCHED; i++)
		assert_true(close_rel(s2[i], s1[perm[i]], 1e-5));
	/* and the scores do depend on which others are schedulable (attention mixes them) */
	forward(m, &b, SCHED, NSCHED - 3, s2);
	{
		double diff = 0;

		for (uint32_t i = 0; i < NSCHED - 3; i++)
			diff += fabs(s2[i] - s1[i]);
		assert_true(diff > 1e-6);
	}
	gnn_model_free(m);
}

/* A job's DAGNN states and node embeddings do not depend on the other jobs in the batch. */
static void test_job_independence(void **state)
{
	struct gnn_config c = tb_small_config();
	struct gnn_model *m = new_model(&c, "cpu", 6);
	struct tb *alone = malloc(sizeof(*alone)), *mixed = malloc(sizeof(*mixed));
	struct gnn_rng rng, rng2;
	uint32_t w = 2 * c.layers * c.hidden, D = 2 * c.emb, rows, cols, base, one = 0;
	static float a1[TB_MAXN * 64], a2[TB_MAXN * 64];
	struct gnn_err err = {{0}};
	float s;
	enum gnn_activation acts[2] = {GNN_ACT_DAGNN, GNN_ACT_NODE};

	(void)state;
	assert_true(alone && mixed);
	gnn_rng_seed(&rng, 31);
	tb_init(alone, c.nfeatures);
	tb_random_job(alone, &rng, 9, 0.35);
	/* the same job (same features: same seed) between two others */
	tb_mixed(mixed, c.nfeatures, 2);
	base = mixed->N;
	gnn_rng_seed(&rng2, 31);
	tb_random_job(mixed, &rng2, 9, 0.35);
	tb_job(mixed, &rng2, 4, TB_DIAMOND, 4);
	assert_memory_equal(alone->x, mixed->x + (size_t)base * c.nfeatures,
			    9 * c.nfeatures * sizeof(float));
	for (int a = 0; a < 2; a++) {
		uint32_t width = a == 0 ? w : D, sched = base;

		forward(m, alone, &one, 1, &s);
		assert_int_equal(gnn_copy_activations(m, acts[a], a1, sizeof(a1) / 4, &rows, &cols,
						      &err),
				 0);
		assert_int_equal(cols, width);
		forward(m, mixed, &sched, 1, &s);
		assert_int_equal(gnn_copy_activations(m, acts[a], a2, sizeof(a2) / 4, &rows, &cols,
						      &err),
				 0);
		for (uint32_t i = 0; i < 9 * width; i++)
			assert_true(close_rel(a1[i], a2[(size_t)base * width + i], 1e-5));
	}
	free(alone);
	free(mixed);
	gnn_model_free(m);
}

/* The naive and cpu backends give the same scores and gradients (1e-5 relative). */
static void test_backends_agree(void **state)
{
	struct gnn_config c = gnn_config_default();
	struct gnn_model *m1, *m2;
	struct tb *b = malloc(sizeof(*b));
	struct gnn_rng rng;
	uint32_t sched[TB_MAXN], n = 0;
	float s1[TB_MAXN], s2[TB_MAXN], coef[TB_MAXN];
	struct gnn_err err = {{0}};

	(void)state;
	assert_non_null(b);
	c.nfeatures = 7;
	m1 = new_model(&c, "cpu", 42);
	m2 = new_model(&c, "naive", 42);
	print_message("  %s | %s\n", gnn_model_backend_info(m1), gnn_model_backend_info(m2));
	gnn_rng_seed(&rng, 12);
	tb_init(b, c.nfeatures);
	for (int j = 0; j < 5; j++)
		tb_random_job(b, &rng, 10, 0.25);
	for (uint32_t v = 1; v < b->N; v += 3)
		sched[n++] = v;
	coefs(coef, n, 2);
	boost_head(m1);
	boost_head(m2);
	gnn_zero_grad(m1);
	gnn_zero_grad(m2);
	forward(m1, b, sched, n, s1);
	forward(m2, b, sched, n, s2);
	assert_int_equal(gnn_backward(m1, coef, n, &err), 0);
	assert_int_equal(gnn_backward(m2, coef, n, &err), 0);
	for (uint32_t i = 0; i < n; i++)
		if (!close_rel(s1[i], s2[i], 1e-5))
			fail_msg("score %u: cpu %.9g naive %.9g", i, s1[i], s2[i]);
	for (uint32_t t = 0; t < gnn_param_count(m1); t++) {
		struct gnn_param p1, p2;

		gnn_param_get(m1, t, &p1);
		gnn_param_get(m2, t, &p2);
		for (uint32_t i = 0; i < p1.rows * p1.cols; i++)
			if (!close_rel(p1.grad[i], p2.grad[i], 1e-5))
				fail_msg("%s[%u]: cpu %g naive %g", p1.name, i, p1.grad[i],
					 p2.grad[i]);
	}
	free(b);
	gnn_model_free(m1);
	gnn_model_free(m2);
}

/*
 * Adam fits the scores to a target that is a function of each node's own
 * features and its job (t = x0 - 0.5 x1 + 0.3 tanh(x2)): the MSE must fall
 * from its initial value (about 0.4) below 0.01 in 400 steps.
 */
static void test_adam_regression(void **state)
{
	struct gnn_config c = tb_small_config();
	struct gnn_model *m = new_model(&c, "cpu", 1);
	struct tb *b = malloc(sizeof(*b));
	struct gnn_adam opt = gnn_adam_default();
	float s[TB_MAXN], ds[TB_MAXN], target[TB_MAXN];
	struct gnn_err err = {{0}};
	double mse0 = 0, mse = 0, norm;

	(void)state;
	assert_non_null(b);
	tb_mixed(b, c.nfeatures, 17);
	for (uint32_t i = 0; i < NSCHED; i++) {
		const float *x = b->x + (size_t)SCHED[i] * c.nfeatures;

		target[i] = x[0] - 0.5f * x[1] + 0.3f * tanhf(x[2]);
	}
	opt.lr = 1e-2f;
	for (int step = 0; step <= 400; step++) {
		forward(m, b, SCHED, NSCHED, s);
		mse = 0;
		for (uint32_t i = 0; i < NSCHED; i++) {
			mse += (double)(s[i] - target[i]) * (s[i] - target[i]) / NSCHED;
			ds[i] = 2 * (s[i] - target[i]) / NSCHED;
		}
		if (step == 0)
			mse0 = mse;
		if (step == 400)
			break;
		gnn_zero_grad(m);
		assert_int_equal(gnn_backward(m, ds, NSCHED, &err), 0);
		assert_int_equal(gnn_adam_step(m, &opt, &norm, &err), 0);
	}
	print_message("  adam: mse %.4g -> %.4g\n", mse0, mse);
	assert_true(mse0 > 0.1);
	assert_true(mse < 0.01);
	/* bad options are refused */
	opt.lr = -1;
	assert_int_equal(gnn_adam_step(m, &opt, NULL, &err), -EINVAL);
	free(b);
	gnn_model_free(m);
}

/* Sets every gradient entry i of m to scale * f(i); returns the global norm of f. */
static double set_grad(struct gnn_model *m, double scale, int which)
{
	double sq = 0;

	for (uint32_t t = 0, off = 0; t < gnn_param_count(m); t++) {
		struct gnn_param p;

		gnn_param_get(m, t, &p);
		for (uint32_t i = 0; i < p.rows * p.cols; i++, off++) {
			double f = which ? cos(0.37 * off) : (double)((off % 7) + 1) - 3.5;

			p.grad[i] = (float)(scale * f);
			sq += f * f;
		}
	}
	return sqrt(sq);
}

/*
 * Clipping: two Adam steps with clip_norm 1 on gradients G1 (norm 10) and G2
 * (norm 0.1, not clipped) must equal two unclipped steps on G1 / |G1| and G2,
 * and differ from two unclipped steps on G1 and G2 (Adam is invariant to one
 * common gradient scale, not to the ratio between steps).
 */
static void test_adam_clipping(void **state)
{
	struct gnn_config c = tb_small_config();
	struct gnn_model *m[3];
	struct gnn_adam clip = gnn_adam_default(), raw = gnn_adam_default();
	struct gnn_err err = {{0}};
	double n1, norm, maxdiff_ab = 0, maxdiff_ac = 0;

	(void)state;
	for (int k = 0; k < 3; k++)
		m[k] = new_model(&c, "cpu", 2);
	clip.clip_norm = 1;
	raw.clip_norm = 0;
	n1 = set_grad(m[0], 1, 0);
	set_grad(m[0], 10 / n1, 0);
	assert_int_equal(gnn_adam_step(m[0], &clip, &norm, &err), 0);
	assert_true(fabs(norm - 10) < 1e-4);
	set_grad(m[1], 1 / n1, 0);
	assert_int_equal(gnn_adam_step(m[1], &raw, NULL, &err), 0);
	set_grad(m[2], 10 / n1, 0);
	assert_int_equal(gnn_adam_step(m[2], &raw, NULL, &err), 0);
	for (int k = 0; k < 3; k++) {
		double n = set_grad(m[k], 1, 1);

		set_grad(m[k], 0.1 / n, 1);
		assert_int_equal(gnn_adam_step(m[k], k == 0 ? &clip : &raw, &norm, &err), 0);
		assert_true(fabs(norm - 0.1) < 1e-5);
	}
	for (uint32_t t = 0; t < gnn_param_count(m[0]); t++) {
		struct gnn_param a, b, cc;

		gnn_param_get(m[0], t, &a);
		gnn_param_get(m[1], t, &b);
		gnn_param_get(m[2], t, &cc);
		for (uint32_t i = 0; i < a.rows * a.cols; i++) {
			maxdiff_ab = fmax(maxdiff_ab, fabs(a.value[i] - b.value[i]));
			maxdiff_ac = fmax(maxdiff_ac, fabs(a.value[i] - cc.value[i]));
		}
	}
	print_message("  clip: |clipped - rescaled| %.3g, |clipped - raw| %.3g\n", maxdiff_ab,
		      maxdiff_ac);
	assert_true(maxdiff_ab < 1e-7);
	assert_true(maxdiff_ac > 1e-5);
	for (int k = 0; k < 3; k++)
		gnn_model_free(m[k]);
}

static void test_backend_lookup(void **state)
{
	struct gnn_err err = {{0}};
	struct gnn_config c = tb_small_config();

	(void)state;
	assert_non_null(gnn_backend_find("cpu", &err));
	assert_non_null(gnn_backend_find("naive", &err));
	assert_string_equal(gnn_backend_find(NULL, &err)->name, "cpu");
	errno = 0;
	assert_null(gnn_backend_find("tpu", &err));
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(err.msg, "tpu"));
	assert_non_null(strstr(err.msg, "cpu, naive"));
	errno = 0;
	if (strstr(gnn_backend_names(), "cuda")) {
		assert_non_null(gnn_backend_find("cuda", &err));
	} else {
		assert_null(gnn_backend_find("cuda", &err));
		assert_int_equal(errno, ENODEV);
		assert_non_null(strstr(err.msg, "CUDA"));
	}
	errno = 0;
	assert_null(gnn_model_new(&c, "tpu", 1, &err));
	assert_int_equal(errno, ENOENT);
}

/*
 * Asking for "cuda" always gives a working model: on a GPU, a cuda one with
 * no fallback; elsewhere (no CUDA in the build, no driver, no device) a cpu
 * one whose fallback reason names cuda. Either way it scores like a cpu
 * model with the same seed.
 */
static void test_cuda_fallback(void **state)
{
	struct gnn_config c = tb_small_config();
	struct gnn_model *want = new_model(&c, "cpu", 7), *m = new_model(&c, "cuda", 7);
	const char *why = gnn_model_fallback(m);
	float s1[NSCHED], s2[NSCHED];
	struct tb b;

	(void)state;
	if (why) {
		assert_string_equal(gnn_model_backend(m), "cpu");
		assert_non_null(strstr(why, "cuda"));
		assert_non_null(strstr(gnn_model_backend_info(m), "cuda unavailable"));
		printf("  fallback: %s\n", why);
	} else {
		assert_string_equal(gnn_model_backend(m), "cuda");
		printf("  running on %s\n", gnn_model_backend_info(m));
	}
	assert_null(gnn_model_fallback(want));
	tb_mixed(&b, c.nfeatures, 5);
	forward(want, &b, SCHED, NSCHED, s1);
	forward(m, &b, SCHED, NSCHED, s2);
	for (uint32_t i = 0; i < NSCHED; i++)
		assert_true(fabsf(s1[i] - s2[i]) <= 1e-4f * fmaxf(1e-3f, fabsf(s1[i])));
	gnn_model_free(want);
	gnn_model_free(m);
}

static void test_bad_config(void **state)
{
	struct gnn_err err = {{0}};
	struct gnn_config c = tb_small_config();

	(void)state;
	c.heads = 5; /* does not divide D = 12 */
	errno = 0;
	assert_null(gnn_model_new(&c, "cpu", 1, &err));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(err.msg, "heads"));
	c = tb_small_config();
	c.nfeatures = 0;
	assert_null(gnn_model_new(&c, "cpu", 1, &err));
	assert_non_null(strstr(err.msg, "nfeatures"));
	c = tb_small_config();
	c.layers = GNN_MAX_LAYERS + 1;
	assert_null(gnn_model_new(&c, "cpu", 1, &err));
	assert_int_equal(errno, EINVAL);
}

static void expect_einval(struct gnn_model *m, const struct gnn_batch *b, const uint32_t *sched,
			  uint32_t n, const char *needle)
{
	struct gnn_err err = {{0}};
	float s[TB_MAXN];

	assert_int_equal(gnn_forward(m, b, sched, n, s, &err), -EINVAL);
	if (!strstr(err.msg, needle))
		fail_msg("message '%s' lacks '%s'", err.msg, needle);
	/* no forward to go back through */
	assert_int_equal(gnn_backward(m, s, n, &err), -EINVAL);
}

static void test_bad_batch(void **state)
{
	struct gnn_config c = tb_small_config();
	struct gnn_model *m = new_model(&c, "cpu", 1);
	struct tb *b = malloc(sizeof(*b));
	struct gnn_batch batch;
	uint32_t sched[3] = {0, 1, 2}, saved;
	struct gnn_err err = {{0}};
	float s[TB_MAXN];

	(void)state;
	assert_non_null(b);
	tb_mixed(b, c.nfeatures, 1);
	batch = tb_batch(b);

	batch.nfeatures = 4;
	expect_einval(m, &batch, sched, 3, "features");
	batch = tb_batch(b);
	b->edges[3] = b->N; /* out of range */
	expect_einval(m, &batch, sched, 3, "out of range");
	b->edges[3] = 8; /* diamond node 1 -> node of the fan job */
	expect_einval(m, &batch, sched, 3, "joins jobs");
	b->edges[3] = 1;
	saved = b->edges[0];
	b->edges[0] = 3; /* diamond 3 -> 1 -> 3: a cycle */
	expect_einval(m, &batch, sched, 3, "cycle");
	b->edges[0] = 1; /* self-loop 1 -> 1 */
	expect_einval(m, &batch, sched, 3, "cycle");
	b->edges[0] = saved;
	sched[2] = b->N;
	expect_einval(m, &batch, sched, 3, "schedulable index");
	sched[2] = 1;
	expect_einval(m, &batch, sched, 3, "twice");
	sched[2] = 2;
	b->js[2] = 2; /* decreasing */
	expect_einval(m, &batch, sched, 3, "job_start");
	b->js[2] = 8;
	batch.job_start = NULL;
	expect_einval(m, &batch, sched, 3, "NULL");
	batch = tb_batch(b);
	/* the same model still works after all that */
	assert_int_equal(gnn_forward(m, &batch, sched, 3, s, &err), 0);
	assert_int_equal(gnn_backward(m, s, 2, &err), -EINVAL);
	assert_int_equal(gnn_backward(m, s, 3, &err), 0);
	free(b);
	gnn_model_free(m);
}

/* Empty batches and empty schedulable sets are fine; so is growing the batch afterwards. */
static void test_empty_and_growth(void **state)
{
	struct gnn_config c = tb_small_config();
	struct gnn_model *m = new_model(&c, "cpu", 1);
	struct tb *b = malloc(sizeof(*b));
	struct gnn_batch batch;
	struct gnn_err err = {{0}};
	float s[TB_MAXN];
	uint32_t z = 0;

	(void)state;
	assert_non_null(b);
	tb_init(b, c.nfeatures);
	batch = tb_batch(b);
	batch.job_start = &z;
	assert_int_equal(gnn_forward(m, &batch, NULL, 0, NULL, &err), 0);
	assert_int_equal(gnn_backward(m, NULL, 0, &err), 0);
	tb_mixed(b, c.nfeatures, 1);
	batch = tb_batch(b);
	assert_int_equal(gnn_forward(m, &batch, NULL, 0, NULL, &err), 0);
	assert_int_equal(gnn_backward(m, NULL, 0, &err), 0);
	assert_int_equal(gnn_forward(m, &batch, SCHED, NSCHED, s, &err), 0);
	for (uint32_t i = 0; i < NSCHED; i++)
		assert_true(isfinite(s[i]));
	free(b);
	gnn_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backend_lookup),
		cmocka_unit_test(test_cuda_fallback),
		cmocka_unit_test(test_bad_config),
		cmocka_unit_test(test_bad_batch),
		cmocka_unit_test(test_empty_and_growth),
		cmocka_unit_test(test_grad_dagnn_fwd),
		cmocka_unit_test(test_grad_dagnn_rev),
		cmocka_unit_test(test_grad_dagnn_attention),
		cmocka_unit_test(test_grad_input),
		cmocka_unit_test(test_grad_embedding),
		cmocka_unit_test(test_grad_attention),
		cmocka_unit_test(test_grad_head),
		cmocka_unit_test(test_grad_whole_model),
		cmocka_unit_test(test_pipelined_equals_plain),
		cmocka_unit_test(test_attention_equivariant),
		cmocka_unit_test(test_job_independence),
		cmocka_unit_test(test_backends_agree),
		cmocka_unit_test(test_adam_regression),
		cmocka_unit_test(test_adam_clipping),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
