/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for gnn/'s Plackett-Luce ranking distribution and its RNG:
 * probabilities of all 24 rankings of 4 items sum to 1; sampled frequencies
 * match them (chi-square); log-probability and entropy gradients match
 * central differences; the sequential entropy is an unbiased estimate of the
 * exact ranking entropy (its expectation over all 24 rankings equals it);
 * bad permutations and scores are refused.
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

#define NPERM4 24

/* Writes the 24 permutations of 0..3 in lexicographic order. */
static void perms4(uint32_t out[NPERM4][4])
{
	uint32_t k = 0;

	for (uint32_t a = 0; a < 4; a++)
		for (uint32_t b = 0; b < 4; b++)
			for (uint32_t c = 0; c < 4; c++)
				for (uint32_t d = 0; d < 4; d++)
					if (a != b && a != c && a != d && b != c && b != d &&
					    c != d) {
						out[k][0] = a;
						out[k][1] = b;
						out[k][2] = c;
						out[k][3] = d;
						k++;
					}
	assert_int_equal(k, NPERM4);
}

static uint32_t perm_index(const uint32_t p[4], uint32_t all[NPERM4][4])
{
	for (uint32_t k = 0; k < NPERM4; k++)
		if (memcmp(p, all[k], sizeof(all[k])) == 0)
			return k;
	fail_msg("not a permutation");
	return 0;
}

static const float SCORES4[4] = {1.2f, -0.3f, 0.4f, 2.0f};

static void test_logprob_sums_to_one(void **state)
{
	static const float sets[3][4] = {
		{1.2f, -0.3f, 0.4f, 2.0f}, {0, 0, 0, 0}, {30.0f, -25.0f, 5.0f, 0.001f}};
	uint32_t all[NPERM4][4];
	struct gnn_err err = {{0}};

	(void)state;
	perms4(all);
	for (int s = 0; s < 3; s++) {
		double sum = 0, lp;

		for (uint32_t k = 0; k < NPERM4; k++) {
			assert_int_equal(gnn_pl_logprob(sets[s], 4, all[k], &lp, NULL, &err), 0);
			assert_true(lp <= 1e-12);
			sum += exp(lp);
		}
		assert_true(fabs(sum - 1) < 1e-5);
	}
	/* equal scores: every ranking has probability 1/24 */
	{
		double lp;

		assert_int_equal(gnn_pl_logprob(sets[1], 4, all[7], &lp, NULL, &err), 0);
		assert_true(fabs(lp + log(24.0)) < 1e-9);
	}
}

/*
 * 20,000 seeded samples of PL(SCORES4): the chi-square statistic over the 24
 * rankings (23 degrees of freedom) must be below 49.73, the 0.999 quantile.
 * Rankings with expected count < 5 are pooled into one cell.
 */
static void test_sample_frequencies(void **state)
{
	uint32_t all[NPERM4][4], perm[4], counts[NPERM4] = {0};
	double p[NPERM4], chi = 0, pooled_e = 0, pooled_o = 0;
	struct gnn_rng rng;
	struct gnn_err err = {{0}};
	float work[4];
	const uint32_t n = 20000;

	(void)state;
	perms4(all);
	for (uint32_t k = 0; k < NPERM4; k++) {
		double lp;

		assert_int_equal(gnn_pl_logprob(SCORES4, 4, all[k], &lp, NULL, &err), 0);
		p[k] = exp(lp);
	}
	gnn_rng_seed(&rng, 2024);
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(gnn_pl_sample(SCORES4, 4, &rng, work, perm, &err), 0);
		counts[perm_index(perm, all)]++;
	}
	for (uint32_t k = 0; k < NPERM4; k++) {
		double e = p[k] * n;

		if (e < 5) {
			pooled_e += e;
			pooled_o += counts[k];
			continue;
		}
		chi += (counts[k] - e) * (counts[k] - e) / e;
	}
	if (pooled_e > 0)
		chi += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e;
	print_message("  chi-square %.2f (critical 49.73)\n", chi);
	assert_true(chi < 49.73);
	/* and a wrong distribution fails the same test: compare with uniform */
	{
		double chi_u = 0;

		for (uint32_t k = 0; k < NPERM4; k++) {
			double e = (double)n / NPERM4;

			chi_u += (counts[k] - e) * (counts[k] - e) / e;
		}
		assert_true(chi_u > 49.73);
	}
}

static void test_sample_determinism(void **state)
{
	float s[50], work[50];
	uint32_t p1[50], p2[50], seen[50] = {0};
	struct gnn_rng a, b;
	struct gnn_err err = {{0}};

	(void)state;
	for (int i = 0; i < 50; i++)
		s[i] = (float)sin(i * 1.7);
	gnn_rng_seed(&a, 5);
	gnn_rng_seed(&b, 5);
	assert_int_equal(gnn_pl_sample(s, 50, &a, work, p1, &err), 0);
	assert_int_equal(gnn_pl_sample(s, 50, &b, work, p2, &err), 0);
	assert_memory_equal(p1, p2, sizeof(p1));
	for (int i = 0; i < 50; i++)
		seen[p1[i]]++;
	for (int i = 0; i < 50; i++)
		assert_int_equal(seen[i], 1);
	for (int i = 0; i < 1000; i++) {
		double u = gnn_rng_uniform(&a);

		assert_true(u > 0 && u < 1);
	}
	/* very large score gaps: the top item always comes first */
	s[17] = 1e4f;
	assert_int_equal(gnn_pl_sample(s, 50, &a, work, p1, &err), 0);
	assert_int_equal(p1[0], 17);
}

/* Central differences (eps 1e-3, in double over float scores) of a function of the scores. */
typedef double (*score_fn)(const float *s, uint32_t n, const uint32_t *perm);

static double f_logprob(const float *s, uint32_t n, const uint32_t *perm)
{
	double lp;
	struct gnn_err err = {{0}};

	assert_int_equal(gnn_pl_logprob(s, n, perm, &lp, NULL, &err), 0);
	return lp;
}

static double f_ent_first(const float *s, uint32_t n, const uint32_t *perm)
{
	double h;
	struct gnn_err err = {{0}};

	assert_int_equal(gnn_pl_entropy(s, n, perm, GNN_PL_ENTROPY_FIRST, NULL, &h, NULL, &err), 0);
	return h;
}

static double f_ent_seq(const float *s, uint32_t n, const uint32_t *perm)
{
	double h;
	struct gnn_err err = {{0}};

	assert_int_equal(gnn_pl_entropy(s, n, perm, GNN_PL_ENTROPY_SEQ, NULL, &h, NULL, &err), 0);
	return h;
}

static uint32_t g_top; /* f_logprob_top's number of places */

static double f_logprob_top(const float *s, uint32_t n, const uint32_t *perm)
{
	double lp;
	struct gnn_err err = {{0}};

	assert_int_equal(gnn_pl_logprob_top(s, n, perm, g_top, &lp, NULL, &err), 0);
	return lp;
}

static void check_grad(score_fn f, const float *s0, uint32_t n, const uint32_t *perm,
		       const float *grad)
{
	float s[64];
	double maxg = 0;

	memcpy(s, s0, n * sizeof(float));
	for (uint32_t i = 0; i < n; i++) {
		float v = s[i], hi = v + 1e-3f, lo = v - 1e-3f;
		double fp, fm, num;

		s[i] = hi;
		fp = f(s, n, perm);
		s[i] = lo;
		fm = f(s, n, perm);
		s[i] = v;
		num = (fp - fm) / ((double)hi - (double)lo);
		maxg = fmax(maxg, fabs(grad[i]));
		if (fabs(num - grad[i]) > 1e-3 * fmax(1, fabs(num)))
			fail_msg("entry %u: numeric %.7g analytic %.7g", i, num, grad[i]);
	}
	assert_true(maxg > 1e-2);
}

static void test_gradients(void **state)
{
	float s[40], g[40], work[40];
	uint32_t perm[40];
	struct gnn_rng rng;
	struct gnn_err err = {{0}};
	double v;

	(void)state;
	gnn_rng_seed(&rng, 9);
	for (uint32_t n = 1; n <= 40; n += 13) {
		for (uint32_t i = 0; i < n; i++)
			s[i] = (float)(4 * gnn_rng_uniform(&rng) - 2);
		assert_int_equal(gnn_pl_sample(s, n, &rng, work, perm, &err), 0);
		assert_int_equal(gnn_pl_logprob(s, n, perm, &v, g, &err), 0);
		if (n > 1)
			check_grad(f_logprob, s, n, perm, g);
		assert_int_equal(
			gnn_pl_entropy(s, n, perm, GNN_PL_ENTROPY_FIRST, NULL, &v, g, &err), 0);
		if (n > 1)
			check_grad(f_ent_first, s, n, perm, g);
		assert_int_equal(gnn_pl_entropy(s, n, perm, GNN_PL_ENTROPY_SEQ, work, &v, g, &err),
				 0);
		if (n > 1)
			check_grad(f_ent_seq, s, n, perm, g);
	}
	/* the log-probability gradient sums to 0 (shift invariance) */
	assert_int_equal(gnn_pl_logprob(s, 40, perm, &v, g, &err), 0);
	{
		double sum = 0;

		for (int i = 0; i < 40; i++)
			sum += g[i];
		assert_true(fabs(sum) < 1e-4);
	}
}

/*
 * The top-k likelihood: its value is the sum of the first k steps' log
 * choice probabilities (k = n and k = 0 give the whole ranking's, k = 1 the
 * first choice's softmax), its gradient matches finite differences, sums to
 * 0, and places past k get only the negative part.
 */
static void test_logprob_top(void **state)
{
	float s[40], g[40], gfull[40], work[40];
	uint32_t perm[40];
	struct gnn_rng rng;
	struct gnn_err err = {{0}};
	double v, full, first, lse = -INFINITY;

	(void)state;
	gnn_rng_seed(&rng, 21);
	for (uint32_t i = 0; i < 40; i++)
		s[i] = (float)(4 * gnn_rng_uniform(&rng) - 2);
	assert_int_equal(gnn_pl_sample(s, 40, &rng, work, perm, &err), 0);
	assert_int_equal(gnn_pl_logprob(s, 40, perm, &full, gfull, &err), 0);
	assert_int_equal(gnn_pl_logprob_top(s, 40, perm, 40, &v, g, &err), 0);
	assert_true(v == full);
	assert_memory_equal(g, gfull, sizeof(g));
	assert_int_equal(gnn_pl_logprob_top(s, 40, perm, 0, &v, NULL, &err), 0);
	assert_true(v == full);
	for (uint32_t i = 0; i < 40; i++)
		lse = fmax(lse, s[i]) + log1p(exp(-fabs(lse - s[i])));
	assert_int_equal(gnn_pl_logprob_top(s, 40, perm, 1, &first, NULL, &err), 0);
	assert_true(fabs(first - (s[perm[0]] - lse)) < 1e-9);
	for (g_top = 1; g_top <= 7; g_top += 3) {
		double sum = 0, prev;

		assert_int_equal(gnn_pl_logprob_top(s, 40, perm, g_top, &v, g, &err), 0);
		for (uint32_t k = 0; k < 40; k++) {
			sum += g[perm[k]];
			if (k >= g_top)
				assert_true(g[perm[k]] <= 0);
		}
		assert_true(fabs(sum) < 1e-4);
		/* more places, a lower (more negative) log-likelihood */
		assert_int_equal(gnn_pl_logprob_top(s, 40, perm, g_top + 1, &prev, NULL, &err), 0);
		assert_true(prev < v);
	}
	for (uint32_t n = 2; n <= 40; n += 19) {
		uint32_t p2[40];

		for (uint32_t i = 0; i < n; i++)
			s[i] = (float)(4 * gnn_rng_uniform(&rng) - 2);
		assert_int_equal(gnn_pl_sample(s, n, &rng, work, p2, &err), 0);
		for (g_top = 1; g_top <= n; g_top += 5) {
			assert_int_equal(gnn_pl_logprob_top(s, n, p2, g_top, &v, g, &err), 0);
			check_grad(f_logprob_top, s, n, p2, g);
		}
	}
}

/*
 * The exact entropy of PL(SCORES4), -sum_pi p(pi) log p(pi) over the 24
 * rankings, equals the expectation of the sequential entropy term (1e-9),
 * and the first-choice entropy equals H(softmax(s)).
 */
static void test_entropy_values(void **state)
{
	uint32_t all[NPERM4][4];
	double exact = 0, expect_seq = 0, h, first = 0, z = 0;
	struct gnn_err err = {{0}};

	(void)state;
	perms4(all);
	for (uint32_t k = 0; k < NPERM4; k++) {
		double lp, hs;

		assert_int_equal(gnn_pl_logprob(SCORES4, 4, all[k], &lp, NULL, &err), 0);
		assert_int_equal(gnn_pl_entropy(SCORES4, 4, all[k], GNN_PL_ENTROPY_SEQ, NULL, &hs,
						NULL, &err),
				 0);
		exact -= exp(lp) * lp;
		expect_seq += exp(lp) * hs;
	}
	print_message("  exact ranking entropy %.9f, E[sequential] %.9f\n", exact, expect_seq);
	assert_true(fabs(exact - expect_seq) < 1e-9);
	for (int i = 0; i < 4; i++)
		z += exp(SCORES4[i]);
	for (int i = 0; i < 4; i++)
		first -= exp(SCORES4[i]) / z * log(exp(SCORES4[i]) / z);
	assert_int_equal(
		gnn_pl_entropy(SCORES4, 4, NULL, GNN_PL_ENTROPY_FIRST, NULL, &h, NULL, &err), 0);
	assert_true(fabs(h - first) < 1e-9);
}

static void test_bad_input(void **state)
{
	float s[4] = {0, 1, 2, 3}, g[4], work[4];
	uint32_t dup[4] = {0, 1, 1, 3}, range[4] = {0, 1, 4, 2}, perm[4];
	struct gnn_err err = {{0}};
	struct gnn_rng rng;
	double v;

	(void)state;
	gnn_rng_seed(&rng, 1);
	assert_int_equal(gnn_pl_logprob(s, 4, range, &v, NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "out of range"));
	assert_int_equal(gnn_pl_logprob(s, 4, dup, &v, g, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "twice"));
	assert_int_equal(gnn_pl_entropy(s, 4, dup, GNN_PL_ENTROPY_SEQ, work, &v, g, &err), -EINVAL);
	assert_int_equal(gnn_pl_entropy(s, 4, NULL, GNN_PL_ENTROPY_SEQ, work, &v, g, &err),
			 -EINVAL);
	assert_int_equal(gnn_pl_entropy(s, 4, NULL, (enum gnn_pl_entropy_kind)7, NULL, &v, NULL,
					&err),
			 -EINVAL);
	s[2] = NAN;
	assert_int_equal(gnn_pl_sample(s, 4, &rng, work, perm, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "finite"));
	assert_int_equal(gnn_pl_sample(s, 0, &rng, work, perm, &err), 0);
	assert_int_equal(gnn_pl_logprob(s, 0, NULL, &v, NULL, &err), 0);
	assert_true(v == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_logprob_sums_to_one),
		cmocka_unit_test(test_sample_frequencies),
		cmocka_unit_test(test_sample_determinism),
		cmocka_unit_test(test_gradients),
		cmocka_unit_test(test_logprob_top),
		cmocka_unit_test(test_entropy_values),
		cmocka_unit_test(test_bad_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
