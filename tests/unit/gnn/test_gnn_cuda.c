/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "cuda" backend against "cpu" on the same inputs and parameters:
 * scores within 1e-4 relative, every parameter gradient within 1e-3
 * (relative to the tensor's largest gradient), and an Adam step that moves
 * the parameters the same way where the gradient is clearly non-zero. Suite gpu: exits 77 (skipped) when this build
 * has no CUDA backend or the machine has no usable device, with the reason.
 */
#include <setjmp.h>
#include <stdarg.h>
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
		/* A skip, not a failure: no CUDA in this build, or no device. */
		printf("gnn cuda: skipped: %s\n", err.msg);
		exit(77);
	}
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

static void test_scores_and_gradients(void **state)
{
	float sc[JOBS * 2], sg[JOBS * 2];

	(void)state;
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
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scores_and_gradients),
		cmocka_unit_test(test_adam_step),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
