/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Accuracy of the CPU element-wise kernels' own exp, tanh and logistic
 * functions (gnn/kernels.c, which avoids libm so its loops vectorise),
 * against double-precision libm on the exact float inputs the kernels see:
 * tanh (tanh_bias_fwd) on [-20, 20] and near 0 on both sides of the
 * series/exp switch at 1/8, the logistic function (the GRU's r gate) on
 * [-30, 30], and exp through a softmax of 4001 values over [-85, 0].
 * Measured on the development machine: tanh 8.8e-8 absolute and 2.5e-7
 * relative, logistic 1.5e-7 relative, softmax 4.4e-7 relative (exp's error
 * plus the float sum); the bounds below leave about 2x.
 * Extreme inputs saturate to finite values. This test reads the kernel
 * table of gnn/gnn_impl.h, the library's internal header.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gnn/gnn_impl.h"

#define N 200001

/* The GRU cell of one row of d units, through the kernels' unit interface. */
static void gru_row(float *gi, float *gh, const float *bias, float *m, float *gates, float *h,
		    uint32_t d)
{
	struct gnn_unit u = {.r0 = 0,
			     .r1 = 1,
			     .bi = bias,
			     .bh = bias,
			     .h = h,
			     .m = m,
			     .gi = gi,
			     .gh = gh,
			     .gates = gates};

	gnn_kernels_ref.gru_fwd(&u, 1, d);
}

static void test_tanh(void **state)
{
	static float y[N + 8], x0[N + 8], b[N + 8];
	static const float near_zero[] = {1e-30f,  -1e-7f, 1e-4f,    -0.1249f,
					  0.1249f, 0.125f, -0.1251f, 0.1251f};
	double max_abs = 0, max_rel = 0;
	size_t n = 0;

	(void)state;
	for (size_t i = 0; i < N; i++)
		y[n++] = -20.0f + 40.0f * (float)i / (N - 1);
	for (size_t i = 0; i < sizeof(near_zero) / sizeof(near_zero[0]); i++)
		y[n++] = near_zero[i];
	memcpy(x0, y, n * sizeof(float));
	gnn_kernels_ref.tanh_bias_fwd(y, b, 1, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		double t = tanh((double)x0[i]), e = fabs(y[i] - t);

		max_abs = fmax(max_abs, e);
		if (t != 0)
			max_rel = fmax(max_rel, e / fabs(t));
	}
	printf("  tanh: max abs %.3g, max rel %.3g\n", max_abs, max_rel);
	assert_true(max_abs <= 2e-7);
	assert_true(max_rel <= 6e-7);
}

static void test_logistic(void **state)
{
	static float gi[3 * N], gh[3 * N], bias[3 * N], m[N], gates[3 * N], h[N];
	double max_rel = 0;

	(void)state;
	for (size_t i = 0; i < N; i++)
		gi[i] = -30.0f + 60.0f * (float)i / (N - 1);
	/* r = sigm(gi_r + gh_r), with gh = 0 and zero biases: one row, N columns */
	gru_row(gi, gh, bias, m, gates, h, N);
	for (size_t i = 0; i < N; i++) {
		double s = 1 / (1 + exp(-(double)gi[i]));

		max_rel = fmax(max_rel, fabs(gates[i] - s) / s);
	}
	printf("  logistic: max rel %.3g\n", max_rel);
	assert_true(max_rel <= 3e-7);
}

static void test_softmax_exp(void **state)
{
	enum {
		M = 4001
	};
	static float row[M];
	double ref[M], sum = 0, max_rel = 0;

	(void)state;
	for (size_t i = 0; i < M; i++) {
		row[i] = -85.0f * (float)i / (M - 1);
		ref[i] = exp((double)row[i]);
		sum += ref[i];
	}
	gnn_kernels_ref.softmax_fwd(row, 1, M);
	for (size_t i = 0; i < M; i++)
		max_rel = fmax(max_rel, fabs(row[i] - ref[i] / sum) / (ref[i] / sum));
	printf("  softmax: max rel %.3g\n", max_rel);
	/* exp's 1.5e-7 plus the float sum of 4001 terms (measured 4.4e-7 in all) */
	assert_true(max_rel <= 1e-6);
}

/* Inputs far outside the clamping range give finite, saturated results. */
static void test_extremes(void **state)
{
	float t[] = {-1e30f, -1e4f, -88.5f, 88.5f, 1e4f, 1e30f}, b[6] = {0};
	float gi[3 * 4] = {-1e30f, -200.0f, 200.0f, 1e30f}, gh[12] = {0}, bias[12] = {0};
	float m[4] = {0}, gates[12], h[4];
	float s[2][3] = {{0.0f, -1e30f, -200.0f}, {1e30f, 0.0f, -1e30f}};

	(void)state;
	gnn_kernels_ref.tanh_bias_fwd(t, b, 1, 6);
	for (int i = 0; i < 6; i++)
		assert_true(t[i] == (i < 3 ? -1.0f : 1.0f));
	gru_row(gi, gh, bias, m, gates, h, 4);
	for (int i = 0; i < 4; i++)
		assert_true(isfinite(gates[i]) && gates[i] >= 0 && gates[i] <= 1);
	assert_true(gates[0] < 1e-30f && gates[3] == 1.0f);
	gnn_kernels_ref.softmax_fwd(&s[0][0], 2, 3);
	assert_true(s[0][0] == 1.0f && s[0][1] < 1e-30f && s[0][2] < 1e-30f);
	assert_true(s[1][0] == 1.0f && s[1][1] < 1e-30f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tanh),
		cmocka_unit_test(test_logistic),
		cmocka_unit_test(test_softmax_exp),
		cmocka_unit_test(test_extremes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
