/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "cuda" backend against "cpu" on the same inputs and parameters:
 * scores within 1e-4 relative, every parameter gradient within 1e-3
 * (relative to the tensor's largest gradient), in pipelined and plain
 * evaluation; every stored activation; a larger batch that grows the device
 * workspace; and an Adam step that moves the parameters the same way where
 * the gradient is clearly non-zero. Suite gpu. main() asks
 * gnn_cuda_probe() before any test runs and exits 77 (skipped), printing the
 * reason, only when this build has no CUDA backend or the machine has no
 * device or no driver (cudaErrorNoDevice, cudaErrorInsufficientDriver). Any
 * other failure, of the probe or of the "cuda" model after it (a fallback
 * to "cpu" on a machine with a GPU), fails the test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gnn/gnn.h"

#define JOBS          12u
#define NODES_PER_JOB 9u
#define NODES         (JOBS * NODES_PER_JOB)

struct fixture {
	struct gnn_model *cpu, *cuda;
	struct gnn_batch b;
	float feat[NODES * 8];
	uint32_t job_start[JOBS + 1];
	uint32_t edges[NODES * 4];
	uint32_t sched[JOBS * 2];
	uint32_t nsched;
};

static struct fixture fx;

/* Jobs of NODES_PER_JOB nodes: a chain with skips and a fan-in, two schedulable nodes each. */
static void build_batch(struct fixture *f, uint32_t nfeat)
{
	struct gnn_rng rng;
	uint32_t ne = 0;

	gnn_rng_seed(&rng, 42);
	for (uint32_t i = 0; i < NODES * nfeat; i++)
		f->feat[i] = (float)(gnn_rng_uniform(&rng) * 2 - 1);
	for (uint32_t j = 0; j < JOBS; j++) {
		uint32_t base = j * NODES_PER_JOB;

		f->job_start[j] = base;
		for (uint32_t i = 2; i < NODES_PER_JOB; i++) {
			f->edges[2 * ne] = base + i - 1 - (i % 3 == 0);
			f->edges[2 * ne++ + 1] = base + i;
			if (i % 4 == 0) {
				f->edges[2 * ne] = base + i - 3;
				f->edges[2 * ne++ + 1] = base + i;
			}
		}
		f->sched[f->nsched++] = base;     /* a root */
		f->sched[f->nsched++] = base + 1; /* an isolated node */
	}
	f->job_start[JOBS] = NODES;
	f->b = (struct gnn_batch){.nnodes = NODES,
				  .nfeatures = nfeat,
				  .features = f->feat,
				  .njobs = JOBS,
				  .job_start = f->job_start,
				  .nedges = ne,
				  .edges = f->edges};
}

static int setup(void **state)
{
	struct gnn_config cfg = gnn_config_default();
	struct gnn_err err;

	fx.cuda = gnn_model_new(&cfg, "cuda", 3, &err);
	if (!fx.cuda) {
		print_error("gnn cuda: model: %s\n", err.msg);
		return -1;
	}
	if (gnn_model_fallback(fx.cuda)) {
		/* main() found a device: a model that cannot use it is a failure */
		print_error("gnn cuda: fell back to cpu on a machine with a GPU: %s\n",
			    gnn_model_fallback(fx.cuda));
		return -1;
	}
	printf("gnn cuda: %s\n", gnn_model_backend_info(fx.cuda));
	fx.cpu = gnn_model_new(&cfg, "cpu", 3, &err);
	if (!fx.cpu)
		return -1;
	/* The same parameters on both. */
	for (uint32_t i = 0; i < gnn_param_count(fx.cpu); i++) {
		struct gnn_param a, b;

		if (gnn_param_get(fx.cpu, i, &a) < 0 || gnn_param_get(fx.cuda, i, &b) < 0)
			return -1;
		memcpy(b.value, a.value, (size_t)a.rows * a.cols * sizeof(float));
	}
	build_batch(&fx, cfg.nfeatures);
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	gnn_model_free(fx.cpu);
	gnn_model_free(fx.cuda);
	return 0;
}

static void run(struct gnn_model *m, float *scores)
{
	struct gnn_err err;
	float d[JOBS * 2];

	if (gnn_forward(m, &fx.b, fx.sched, fx.nsched, scores, &err) < 0)
		fail_msg("forward: %s", err.msg);
	/* A loss whose gradient differs per score: sum_i (i + 1) * s_i / n. */
	for (uint32_t i = 0; i < fx.nsched; i++)
		d[i] = (float)(i + 1) / (float)fx.nsched;
	gnn_zero_grad(m);
	if (gnn_backward(m, d, fx.nsched, &err) < 0)
		fail_msg("backward: %s", err.msg);
}

static void compare_scores_and_gradients(bool pipelined)
{
	float sc[JOBS * 2], sg[JOBS * 2];

	gnn_model_set_pipelined(fx.cpu, pipelined);
	gnn_model_set_pipelined(fx.cuda, pipelined);
	run(fx.cpu, sc);
	run(fx.cuda, sg);
	for (uint32_t i = 0; i < fx.nsched; i++)
		if (fabsf(sc[i] - sg[i]) > 1e-4f * fmaxf(1e-3f, fabsf(sc[i])))
			fail_msg("score %u: cpu %.9g cuda %.9g", i, sc[i], sg[i]);
	for (uint32_t t = 0; t < gnn_param_count(fx.cpu); t++) {
		struct gnn_param a, b;
		float scale = 0;
		size_t n;

		assert_int_equal(gnn_param_get(fx.cpu, t, &a), 0);
		assert_int_equal(gnn_param_get(fx.cuda, t, &b), 0);
		n = (size_t)a.rows * a.cols;
		for (size_t i = 0; i < n; i++)
			scale = fmaxf(scale, fabsf(a.grad[i]));
		for (size_t i = 0; i < n; i++)
			if (fabsf(a.grad[i] - b.grad[i]) > 1e-3f * fmaxf(scale, 1e-6f))
				fail_msg("%s[%zu]: cpu grad %.9g cuda %.9g", a.name, i, a.grad[i],
					 b.grad[i]);
	}
}

static void test_scores_and_gradients(void **state)
{
	(void)state;
	compare_scores_and_gradients(true);
	compare_scores_and_gradients(false);
	gnn_model_set_pipelined(fx.cpu, true);
	gnn_model_set_pipelined(fx.cuda, true);
}

/* Every stored activation of the last forward, within 1e-4 of the largest. */
static void test_activations(void **state)
{
	static const enum gnn_activation which[] = {GNN_ACT_DAGNN, GNN_ACT_NODE, GNN_ACT_ATTN};
	static float a[NODES * 256], b[NODES * 256];
	float s[JOBS * 2];
	struct gnn_err err;

	(void)state;
	run(fx.cpu, s);
	run(fx.cuda, s);
	for (size_t w = 0; w < sizeof(which) / sizeof(which[0]); w++) {
		uint32_t ra, ca, rb, cb;
		float scale = 0;

		assert_int_equal(
			gnn_copy_activations(fx.cpu, which[w], a, NODES * 256, &ra, &ca, &err), 0);
		assert_int_equal(
			gnn_copy_activations(fx.cuda, which[w], b, NODES * 256, &rb, &cb, &err), 0);
		assert_int_equal(ra, rb);
		assert_int_equal(ca, cb);
		for (size_t i = 0; i < (size_t)ra * ca; i++)
			scale = fmaxf(scale, fabsf(a[i]));
		for (size_t i = 0; i < (size_t)ra * ca; i++)
			if (fabsf(a[i] - b[i]) > 1e-4f * fmaxf(scale, 1e-6f))
				fail_msg("activation %zu [%zu]: cpu %.9g cuda %.9g", w, i, a[i],
					 b[i]);
	}
}

/*
 * A second, larger batch (workspace growth on the device) and then the
 * first again: scores still agree.
 */
static void test_regrow(void **state)
{
	enum {
		J2 = 40,
		P = 6
	};
	static float feat[J2 * P * 8];
	uint32_t js[J2 + 1], edges[J2 * P * 2], sched[J2];
	float sc[J2], sg[J2], s1[JOBS * 2];
	struct gnn_rng rng;
	struct gnn_err err;
	struct gnn_batch b2;
	uint32_t ne = 0;

	(void)state;
	gnn_rng_seed(&rng, 5);
	for (size_t i = 0; i < sizeof(feat) / sizeof(feat[0]); i++)
		feat[i] = (float)(gnn_rng_uniform(&rng) * 4 - 2);
	for (uint32_t j = 0; j < J2; j++) {
		js[j] = j * P;
		sched[j] = j * P + (j % P);
		for (uint32_t i = 1; i < P; i++) {
			/* a fan-in into the last node and a chain */
			edges[2 * ne] =
				j * P + (i == P - 1 ? (uint32_t)(gnn_rng_next(&rng) % i) : i - 1);
			edges[2 * ne++ + 1] = j * P + i;
		}
	}
	js[J2] = J2 * P;
	b2 = (struct gnn_batch){.nnodes = J2 * P,
				.nfeatures = 8,
				.features = feat,
				.njobs = J2,
				.job_start = js,
				.nedges = ne,
				.edges = edges};
	assert_int_equal(gnn_forward(fx.cpu, &b2, sched, J2, sc, &err), 0);
	assert_int_equal(gnn_forward(fx.cuda, &b2, sched, J2, sg, &err), 0);
	for (uint32_t i = 0; i < J2; i++)
		if (fabsf(sc[i] - sg[i]) > 1e-4f * fmaxf(1e-3f, fabsf(sc[i])))
			fail_msg("big batch score %u: cpu %.9g cuda %.9g", i, sc[i], sg[i]);
	run(fx.cpu, s1);
	run(fx.cuda, sg);
	for (uint32_t i = 0; i < fx.nsched; i++)
		if (fabsf(s1[i] - sg[i]) > 1e-4f * fmaxf(1e-3f, fabsf(s1[i])))
			fail_msg("score %u after regrow: cpu %.9g cuda %.9g", i, s1[i], sg[i]);
}

static void test_adam_step(void **state)
{
	struct gnn_adam opt = gnn_adam_default();
	struct gnn_err err;
	float sc[JOBS * 2], sg[JOBS * 2];
	double nc, ng;

	(void)state;
	run(fx.cpu, sc);
	run(fx.cuda, sg);
	assert_int_equal(gnn_adam_step(fx.cpu, &opt, &nc, &err), 0);
	assert_int_equal(gnn_adam_step(fx.cuda, &opt, &ng, &err), 0);
	assert_true(fabs(nc - ng) <= 1e-3 * nc);
	for (uint32_t t = 0; t < gnn_param_count(fx.cpu); t++) {
		struct gnn_param a, b;

		assert_int_equal(gnn_param_get(fx.cpu, t, &a), 0);
		assert_int_equal(gnn_param_get(fx.cuda, t, &b), 0);
		size_t n = (size_t)a.rows * a.cols;
		float scale = 0;

		/*
		 * Adam moves each parameter by about lr * sign(grad): where a
		 * gradient is near zero, rounding may flip its sign, so only
		 * entries with a clear gradient (the gradient is kept) count.
		 */
		for (size_t i = 0; i < n; i++)
			scale = fmaxf(scale, fabsf(a.grad[i]));
		for (size_t i = 0; i < n; i++)
			if (fabsf(a.grad[i]) > 0.05f * scale &&
			    fabsf(a.value[i] - b.value[i]) > 1e-4f * fmaxf(1.0f, fabsf(a.value[i])))
				fail_msg("%s[%zu] after Adam: cpu %.9g cuda %.9g", a.name, i,
					 a.value[i], b.value[i]);
	}
}

int main(void)
{
	struct gnn_err err = {{0}};
	int r = gnn_cuda_probe(&err);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scores_and_gradients),
		cmocka_unit_test(test_activations),
		cmocka_unit_test(test_regrow),
		cmocka_unit_test(test_adam_step),
	};

	/* The machine's precondition: a CUDA build, a driver and a device. */
	if (r == -ENOSYS || r == -ENODEV) {
		printf("gnn cuda: skipped: %s\n", err.msg);
		return 77;
	}
	if (r < 0) {
		fprintf(stderr, "gnn cuda: the CUDA runtime fails on this machine: %s\n", err.msg);
		return 1;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
