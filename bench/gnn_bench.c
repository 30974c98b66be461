/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom_gnn_bench: speed of the gnn/ model.
 *
 * Inference: one gnn_forward() scoring N schedulable coflows, N = 10, 100,
 * 1,000, drawn from N jobs of 10 coflows each (10 N DAG nodes, so 10,000 at
 * N = 1,000), each job a random DAG (a chain of stages with fan-ins and
 * skips, like the TPC-H shapes), one schedulable root per job; d = 32, L = 2,
 * 2 heads, 8 features. p50/p99 over R calls after a warm-up, for the "cpu"
 * backend (OpenBLAS, one thread) pipelined and plain, and the "naive"
 * reference kernel in the same run: the ratio naive / cpu is what BLAS buys.
 *
 * Training: decisions per second of a full policy-gradient step at each N
 * (forward, Plackett-Luce sample, log-probability gradient, backward, and an
 * Adam step every 16 decisions), cpu backend.
 *
 * With --cuda, the same on the "cuda" backend, with the cpu p50 measured in
 * the same run for the ratio.
 *
 * Single-threaded; pin it (taskset -c 0 loom_gnn_bench).
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gnn/gnn.h"

#define NODES_PER_JOB 10u
#define MAX_SIZES     8u
#define WARMUP        3u

struct workload {
	struct gnn_batch b;
	float *feat;
	uint32_t *job_start, *edges, *sched;
	uint32_t nsched;
};

/* Private copy of loom_clock_mono_ns() (in s): this benchmark links gnn/ alone, no common/. */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void workload_free(struct workload *w)
{
	free(w->feat);
	free(w->job_start);
	free(w->edges);
	free(w->sched);
	memset(w, 0, sizeof(*w));
}

/* N jobs of NODES_PER_JOB nodes: node i of a job has parent i - 1, and maybe i - 2 or i - 3. */
static int workload_new(struct workload *w, uint32_t n, uint32_t nfeat, struct gnn_rng *rng)
{
	uint32_t nodes = n * NODES_PER_JOB, ne = 0;

	memset(w, 0, sizeof(*w));
	w->feat = malloc((size_t)nodes * nfeat * sizeof(float));
	w->job_start = malloc(((size_t)n + 1) * sizeof(uint32_t));
	w->edges = malloc((size_t)nodes * 2 * 2 * sizeof(uint32_t));
	w->sched = malloc((size_t)n * sizeof(uint32_t));
	if (!w->feat || !w->job_start || !w->edges || !w->sched) {
		workload_free(w);
		return -ENOMEM;
	}
	for (size_t i = 0; i < (size_t)nodes * nfeat; i++)
		w->feat[i] = (float)(gnn_rng_uniform(rng) * 2 - 1);
	for (uint32_t j = 0; j < n; j++) {
		uint32_t base = j * NODES_PER_JOB;

		w->job_start[j] = base;
		w->sched[j] = base; /* the root is schedulable */
		for (uint32_t i = 1; i < NODES_PER_JOB; i++) {
			w->edges[2 * ne] = base + i - 1;
			w->edges[2 * ne++ + 1] = base + i;
			if (i >= 2 && gnn_rng_next(rng) % 3 == 0) {
				uint32_t back =
					2 + (uint32_t)(gnn_rng_next(rng) % (i >= 3 ? 2 : 1));

				w->edges[2 * ne] = base + i - back;
				w->edges[2 * ne++ + 1] = base + i;
			}
		}
	}
	w->job_start[n] = nodes;
	w->b = (struct gnn_batch){.nnodes = nodes,
				  .nfeatures = nfeat,
				  .features = w->feat,
				  .njobs = n,
				  .job_start = w->job_start,
				  .nedges = ne,
				  .edges = w->edges};
	w->nsched = n;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted v[0 .. n). */
static double pct(const double *v, uint32_t n, double p)
{
	uint32_t k = (uint32_t)(p * n + 0.999999);

	return v[k ? (k > n ? n : k) - 1 : 0];
}

/* Times reps forwards; writes p50 and p99 in microseconds. */
static int time_forward(struct gnn_model *m, const struct workload *w, uint32_t reps, double *p50,
			double *p99)
{
	struct gnn_err err;
	double *t = malloc(reps * sizeof(*t));
	float *scores = malloc(((size_t)w->nsched + 1) * sizeof(*scores));

	if (!t || !scores) {
		free(t);
		free(scores);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < WARMUP + reps; i++) {
		double t0 = now_s();
		int r = gnn_forward(m, &w->b, w->sched, w->nsched, scores, &err);

		if (r < 0) {
			fprintf(stderr, "loom_gnn_bench: forward: %s\n", err.msg);
			free(t);
			free(scores);
			return r;
		}
		if (i >= WARMUP)
			t[i - WARMUP] = (now_s() - t0) * 1e6;
	}
	qsort(t, reps, sizeof(*t), cmp_double);
	*p50 = pct(t, reps, 0.50);
	*p99 = pct(t, reps, 0.99);
	free(t);
	free(scores);
	return 0;
}

/* Policy-gradient steps for about `seconds`; returns decisions per second (< 0: error). */
static double train_rate(struct gnn_model *m, const struct workload *w, double seconds)
{
	struct gnn_err err;
	struct gnn_adam opt = gnn_adam_default();
	struct gnn_rng rng;
	uint32_t n = w->nsched, steps = 0;
	float *s = malloc(n * sizeof(*s)), *g = malloc(n * sizeof(*g)),
	      *work = malloc(n * sizeof(*work));
	uint32_t *perm = malloc(n * sizeof(*perm));
	double t0 = now_s(), logp;
	int r = 0;

	if (!s || !g || !work || !perm)
		r = -ENOMEM;
	gnn_rng_seed(&rng, 7);
	gnn_zero_grad(m);
	while (r == 0 && (steps < 3 || now_s() - t0 < seconds)) {
		r = gnn_forward(m, &w->b, w->sched, n, s, &err);
		if (r == 0)
			r = gnn_pl_sample(s, n, &rng, work, perm, &err);
		if (r == 0)
			r = gnn_pl_logprob(s, n, perm, &logp, g, &err);
		if (r == 0)
			r = gnn_backward(m, g, n, &err);
		if (r == 0 && ++steps % 16 == 0) {
			r = gnn_adam_step(m, &opt, NULL, &err);
			gnn_zero_grad(m);
		}
	}
	if (r < 0)
		fprintf(stderr, "loom_gnn_bench: training step: %s\n", err.msg);
	free(s);
	free(g);
	free(work);
	free(perm);
	return r < 0 ? r : steps / (now_s() - t0);
}

/*
 * The cuda table: per N, cuda pipelined and plain p50/p99, the cpu
 * (pipelined) p50 measured again in the same loop, their ratio, and cuda
 * training decisions per second. Returns 0, or 1 on error; when cuda falls
 * back to cpu, says why in one line and returns 0.
 */
static int cuda_table(const struct gnn_config *cfg, const uint32_t *sizes, uint32_t nsizes,
		      uint32_t reps, double train_s, FILE *cf)
{
	struct gnn_err err;
	struct gnn_model *probe = gnn_model_new(cfg, "cuda", 1, &err);
	int ret = 0;

	if (!probe) {
		fprintf(stderr, "loom_gnn_bench: %s\n", err.msg);
		return 1;
	}
	if (gnn_model_fallback(probe)) {
		printf("\ncuda: not measured, falling back to cpu: %s\n",
		       gnn_model_fallback(probe));
		gnn_model_free(probe);
		return 0;
	}
	printf("\n%s\n", gnn_model_backend_info(probe));
	gnn_model_free(probe);
	printf("%6s %7s  %-22s %-22s %-14s %9s %12s\n", "N", "nodes", "cuda pipelined p50/p99 us",
	       "cuda plain p50/p99 us", "cpu p50 us", "cpu/cuda", "train dec/s");
	for (uint32_t i = 0; i < nsizes && ret == 0; i++) {
		struct gnn_model *gpu = gnn_model_new(cfg, "cuda", 1, &err);
		struct gnn_model *cpu = gpu ? gnn_model_new(cfg, "cpu", 1, &err) : NULL;
		struct workload w;
		struct gnn_rng rng;
		double p[6] = {0}, rate = 0;
		uint32_t nreps = sizes[i] >= 1000 ? reps / 4 + 1 : reps;

		if (!gpu || !cpu) {
			fprintf(stderr, "loom_gnn_bench: %s\n", err.msg);
			gnn_model_free(gpu);
			return 1;
		}
		gnn_rng_seed(&rng, sizes[i]);
		if (workload_new(&w, sizes[i], cfg->nfeatures, &rng) < 0) {
			fprintf(stderr, "loom_gnn_bench: out of memory\n");
			ret = 1;
		}
		if (ret == 0)
			ret = time_forward(gpu, &w, nreps, &p[0], &p[1]);
		gnn_model_set_pipelined(gpu, false);
		if (ret == 0)
			ret = time_forward(gpu, &w, nreps, &p[2], &p[3]);
		gnn_model_set_pipelined(gpu, true);
		if (ret == 0)
			ret = time_forward(cpu, &w, nreps, &p[4], &p[5]);
		if (ret == 0 && train_s > 0)
			rate = train_rate(gpu, &w, train_s);
		if (ret == 0 && rate < 0)
			ret = 1;
		if (ret == 0) {
			char a[32], b[32];

			snprintf(a, sizeof(a), "%.1f / %.1f", p[0], p[1]);
			snprintf(b, sizeof(b), "%.1f / %.1f", p[2], p[3]);
			printf("%6u %7u  %-22s %-22s %-14.1f %8.2fx %12.1f\n", sizes[i], w.b.nnodes,
			       a, b, p[4], p[4] / p[0], rate);
			if (cf) {
				fprintf(cf, "cuda,pipelined,%u,%u,%.3f,%.3f\n", sizes[i],
					w.b.nnodes, p[0], p[1]);
				fprintf(cf, "cuda,plain,%u,%u,%.3f,%.3f\n", sizes[i], w.b.nnodes,
					p[2], p[3]);
			}
		}
		workload_free(&w);
		gnn_model_free(gpu);
		gnn_model_free(cpu);
	}
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: loom_gnn_bench [options]\n"
		"Inference latency and training throughput of the gnn/ model (d 32, L 2, 2 heads)\n"
		"scoring N schedulable coflows from N jobs of %u coflows each.\n\n"
		"  -s, --sizes LIST   comma-separated N values, 1..5000 (default 10,100,1000)\n"
		"  -r, --reps R       timed forwards per (backend, N) (default 200; 20 for naive)\n"
		"  -t, --train-s S    seconds of training steps per N (default 2; 0 = skip)\n"
		"  -c, --csv FILE     also write backend,mode,n,nodes,p50_us,p99_us rows to FILE\n"
		"  -n, --no-naive     skip the reference backend (for profiling the cpu one)\n"
		"  -g, --cuda         also measure the cuda backend (says why when it cannot)\n"
		"  -h, --help         this text\n\n"
		"Single-threaded; run it as 'taskset -c 0 loom_gnn_bench' for stable numbers.\n",
		NODES_PER_JOB);
}

static int parse_sizes(const char *s, uint32_t *out, uint32_t *n)
{
	char *end;

	*n = 0;
	while (*s) {
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || v < 1 || v > 5000 || *n == MAX_SIZES || (*end && *end != ','))
			return -EINVAL;
		out[(*n)++] = (uint32_t)v;
		s = *end ? end + 1 : end;
	}
	return *n ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"sizes", required_argument, NULL, 's'},   {"reps", required_argument, NULL, 'r'},
		{"train-s", required_argument, NULL, 't'}, {"csv", required_argument, NULL, 'c'},
		{"no-naive", no_argument, NULL, 'n'},      {"cuda", no_argument, NULL, 'g'},
		{"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
	};
	uint32_t sizes[MAX_SIZES] = {10, 100, 1000}, nsizes = 3, reps = 200;
	double train_s = 2;
	bool naive_too = true, cuda = false;
	const char *csv = NULL;
	struct gnn_config cfg = gnn_config_default();
	struct gnn_err err;
	FILE *cf = NULL;
	int c, ret = 0;

	while ((c = getopt_long(argc, argv, "s:r:t:c:ngh", longopts, NULL)) != -1) {
		char *end = NULL;

		switch (c) {
		case 's':
			if (parse_sizes(optarg, sizes, &nsizes) < 0) {
				fprintf(stderr,
					"loom_gnn_bench: --sizes: '%s' is not a list of 1..5000\n",
					optarg);
				return 2;
			}
			break;
		case 'r':
			reps = (uint32_t)strtoul(optarg, &end, 10);
			if (!*optarg || *end || reps < 1 || reps > 100000) {
				fprintf(stderr, "loom_gnn_bench: --reps: '%s' is not 1..100000\n",
					optarg);
				return 2;
			}
			break;
		case 't':
			train_s = strtod(optarg, &end);
			if (!*optarg || *end || !(train_s >= 0 && train_s <= 600)) {
				fprintf(stderr, "loom_gnn_bench: --train-s: '%s' is not 0..600\n",
					optarg);
				return 2;
			}
			break;
		case 'c':
			csv = optarg;
			break;
		case 'n':
			naive_too = false;
			break;
		case 'g':
			cuda = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "Try 'loom_gnn_bench --help'.\n");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "loom_gnn_bench: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (csv && !(cf = fopen(csv, "w"))) {
		fprintf(stderr, "loom_gnn_bench: %s: %s\n", csv, strerror(errno));
		return 1;
	}
	if (cf)
		fprintf(cf, "backend,mode,n,nodes,p50_us,p99_us\n");

	printf("gnn: F %u, d %u, L %u, E %u, heads %u, MLP %u; %u nodes per job, one schedulable\n",
	       cfg.nfeatures, cfg.hidden, cfg.layers, cfg.emb, cfg.heads, cfg.mlp_hidden,
	       NODES_PER_JOB);
	printf("%6s %7s  %-22s %-22s %-22s %9s %12s\n", "N", "nodes", "cpu pipelined p50/p99 us",
	       "cpu plain p50/p99 us", "naive p50/p99 us", "naive/cpu", "train dec/s");
	for (uint32_t i = 0; i < nsizes && ret == 0; i++) {
		struct gnn_model *cpu = gnn_model_new(&cfg, "cpu", 1, &err);
		struct gnn_model *naive = cpu ? gnn_model_new(&cfg, "naive", 1, &err) : NULL;
		struct workload w;
		struct gnn_rng rng;
		double p[6] = {0}, rate = 0;
		uint32_t nreps = sizes[i] >= 1000 ? reps / 4 + 1 : reps;

		if (!cpu || !naive) {
			fprintf(stderr, "loom_gnn_bench: %s\n", err.msg);
			gnn_model_free(cpu);
			ret = 1;
			break;
		}
		gnn_rng_seed(&rng, sizes[i]);
		if (workload_new(&w, sizes[i], cfg.nfeatures, &rng) < 0) {
			fprintf(stderr, "loom_gnn_bench: out of memory\n");
			ret = 1;
		}
		if (ret == 0)
			ret = time_forward(cpu, &w, nreps, &p[0], &p[1]);
		gnn_model_set_pipelined(cpu, false);
		if (ret == 0)
			ret = time_forward(cpu, &w, nreps, &p[2], &p[3]);
		gnn_model_set_pipelined(cpu, true);
		if (ret == 0 && naive_too)
			ret = time_forward(naive, &w, nreps / 10 + 1, &p[4], &p[5]);
		if (ret == 0 && train_s > 0)
			rate = train_rate(cpu, &w, train_s);
		if (ret == 0 && rate < 0)
			ret = 1;
		if (ret == 0) {
			char a[32], b[32], d[32] = "-", ratio[16] = "-";

			snprintf(a, sizeof(a), "%.1f / %.1f", p[0], p[1]);
			snprintf(b, sizeof(b), "%.1f / %.1f", p[2], p[3]);
			if (naive_too) {
				snprintf(d, sizeof(d), "%.1f / %.1f", p[4], p[5]);
				snprintf(ratio, sizeof(ratio), "%.2fx", p[4] / p[0]);
			}
			printf("%6u %7u  %-22s %-22s %-22s %9s %12.1f\n", sizes[i], w.b.nnodes, a,
			       b, d, ratio, rate);
			if (cf) {
				fprintf(cf, "cpu,pipelined,%u,%u,%.3f,%.3f\n", sizes[i], w.b.nnodes,
					p[0], p[1]);
				fprintf(cf, "cpu,plain,%u,%u,%.3f,%.3f\n", sizes[i], w.b.nnodes,
					p[2], p[3]);
				if (naive_too)
					fprintf(cf, "naive,pipelined,%u,%u,%.3f,%.3f\n", sizes[i],
						w.b.nnodes, p[4], p[5]);
			}
		}
		workload_free(&w);
		gnn_model_free(cpu);
		gnn_model_free(naive);
	}
	if (ret == 0 && cuda)
		ret = cuda_table(&cfg, sizes, nsizes, reps, train_s, cf);
	if (cf && fclose(cf) != 0 && ret == 0) {
		fprintf(stderr, "loom_gnn_bench: %s: %s\n", csv, strerror(errno));
		ret = 1;
	}
	return ret ? 1 : 0;
}
