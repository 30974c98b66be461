/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom_policy_latency: the wall time of one policy_decide() call (one full
 * ordering of N schedulable coflows, plus any classes, rates or watches), for
 * every registered policy and N in --sizes (default 10, 100, 1000) on a
 * 75-host big switch (150 ports). Each (policy, N) warms up, then times R
 * calls with the monotonic clock, the decision cleared before each as drivers
 * do, and reports the p50 and p99 in microseconds.
 *
 * The workload is deterministic (seed 1): jobs of 1..4 coflows as chains or
 * fan-ins, so DAG-aware policies see parents and children, each of weight
 * 1..4 (--unweighted: 1, as loomd gives a job registered without one);
 * 1..30 flows per coflow (mostly narrow), log-uniform in 10 KiB .. 1 GiB,
 * between distinct random hosts. Every job arrives at time 0 and its sources are released,
 * with the events passed to the policy: exactly N sources, the rest wait on
 * parents, nothing sent yet. Single-threaded: pin it (taskset -c 0).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/rng.h"
#include "controlplane/model/model.h"
#include "controlplane/policy/policy.h"
#include "topo/topo.h"

#ifndef LOOM_BUILD_TYPE
#define LOOM_BUILD_TYPE "unknown"
#endif

#define NHOSTS    75u
#define MAX_SIZES 16u
#define MAX_N     100000u
#define WARMUP    5u
#define SEED      1u

struct bench_args {
	const char *policy; /* NULL: all */
	const char *csv;
	uint32_t sizes[MAX_SIZES];
	uint32_t nsizes;
	uint32_t reps;   /* 0: 1000 for N <= 100, else 200 */
	bool unweighted; /* every job weighs 1 (else 1..4) */
};

/* The events of one job's arrival and releases, held for the policy. */
struct ev_buf {
	struct cp_event ev[32];
	size_t n; /* n == ARRAY_SIZE(ev): full, events may be lost */
};

static void ev_buf_push(void *ctx, const struct cp_event *ev)
{
	struct ev_buf *b = ctx;

	if (b->n < ARRAY_SIZE(b->ev))
		b->ev[b->n++] = *ev;
}

static int add_coflow(struct cp_builder *b, struct loom_rng *rng, uint64_t id, uint64_t job,
		      struct loom_err *err)
{
	double u = loom_rng_uniform(rng); /* width: 70% 1..3, 20% 4..10, 10% 11..30 */
	uint64_t w = u < 0.7 ? 1 + loom_rng_below(rng, 3) :
		     u < 0.9 ? 4 + loom_rng_below(rng, 7) :
			       11 + loom_rng_below(rng, 20);
	int r = cp_builder_add_coflow(b, id, job, 0, err);

	for (uint64_t i = 0; r == 0 && i < w; i++) {
		uint32_t src = (uint32_t)loom_rng_below(rng, NHOSTS);
		uint32_t dst = (uint32_t)loom_rng_below(rng, NHOSTS - 1);
		double lo = log(10.0 * 1024), hi = log(1024.0 * 1048576);

		dst += dst >= src;
		r = cp_builder_add_flow(b, id, src, dst,
					(uint64_t)exp(lo + loom_rng_uniform(rng) * (hi - lo)), err);
	}
	return r;
}

/*
 * Returns a model with exactly n source coflows, or NULL with errno and err;
 * unweighted: the same jobs, each of weight 1.
 */
static struct cp_model *workload_new(uint32_t n, bool unweighted, struct loom_err *err)
{
	struct cp_builder *b = cp_builder_new(NHOSTS);
	struct loom_rng rng;
	uint64_t id = 0;
	int r = 0;

	if (!b)
		return NULL;
	loom_rng_seed(&rng, SEED);
	for (uint64_t job = 0, left = n; r == 0 && left > 0; job++) {
		uint32_t k = 1 + (uint32_t)loom_rng_below(&rng, 4);
		bool fanin = k >= 3 && loom_rng_below(&rng, 2) && k - 1 <= left;
		uint64_t first = id;
		double w = 1.0 + (double)loom_rng_below(&rng, 4);

		r = cp_builder_add_job(b, job, 0, unweighted ? 1.0 : w, err);
		for (uint32_t i = 0; r == 0 && i < k; i++)
			r = add_coflow(b, &rng, id++, job, err);
		/* chain: c0 -> c1 -> ...; fan-in: c0 .. c(k-2) -> c(k-1) */
		for (uint32_t i = 1; r == 0 && i < k; i++)
			r = cp_builder_add_edge(b, first + i - 1, fanin ? first + k - 1 : first + i,
						0, err);
		left -= fanin ? k - 1 : 1;
	}
	if (r < 0) {
		cp_builder_free(b);
		errno = -r;
		return NULL;
	}
	return cp_builder_finish(b, err);
}

/* Resets m, arrives every job at 0 and releases its sources; p sees the events. */
static int workload_start(struct cp_model *m, struct policy *p)
{
	struct ev_buf b;
	int r = 0;

	cp_model_reset(m);
	cp_model_set_emit(m, ev_buf_push, &b);
	for (uint32_t j = 0; r == 0 && j < m->njobs; j++) {
		b.n = 0;
		r = cp_model_job_arrive(m, j, 0);
		/* releases append to b: their own events are not READY */
		for (size_t i = 0; r == 0 && i < b.n; i++)
			if (b.ev[i].type == CP_EV_COFLOW_READY)
				r = cp_model_coflow_release(m, b.ev[i].id, 0);
		if (r == 0 && b.n == ARRAY_SIZE(b.ev))
			r = -ENOBUFS;
		for (size_t i = 0; r == 0 && i < b.n; i++)
			policy_on_event(p, m, &b.ev[i]);
	}
	cp_model_set_emit(m, NULL, NULL);
	return r;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Times reps decisions of policy name on m (n schedulable); writes p50/p99 in us. */
static int bench_one(const char *name, struct cp_model *m, uint32_t n, uint32_t reps,
		     double *ret_p50_us, double *ret_p99_us)
{
	const struct loom_clock *clk = loom_clock_real();
	struct policy_params pp = {.classes = 8, .seed = SEED};
	struct loom_err err = {{0}};
	struct policy_decision d = {0};
	uint64_t *t = calloc(reps, sizeof(*t));
	uint32_t *stamp = calloc(m->ncoflows, sizeof(*stamp));
	struct policy *p = policy_new(name, &pp, m, &err);
	int r = -ENOMEM;

	if (!p) {
		log_err("%s", loom_err_str(&err));
		r = -EINVAL;
		goto out;
	}
	if (!t || !stamp || policy_decision_init(&d, m) < 0) {
		log_err("%s: out of memory", name);
		goto out;
	}
	r = workload_start(m, p);
	if (r == 0 && m->nactive != n)
		r = -EPROTO;
	if (r < 0) {
		log_err("%s, N=%u: workload start failed (%u schedulable): %s", name, n, m->nactive,
			strerror(-r));
		goto out;
	}
	for (uint32_t i = 0; i < WARMUP + reps; i++) {
		uint64_t t0, t1;

		policy_decision_clear(&d);
		t0 = loom_clock_now_ns(clk);
		r = policy_decide(p, m, 0, &d);
		t1 = loom_clock_now_ns(clk);
		if (r < 0) {
			log_err("%s, N=%u: decide failed: %s", name, n, strerror(-r));
			goto out;
		}
		if (i >= WARMUP)
			t[i - WARMUP] = t1 - t0;
	}
	r = policy_decision_validate(&d, m, stamp, 1, &err);
	if (r < 0) {
		log_err("%s, N=%u: invalid decision: %s", name, n, loom_err_str(&err));
		goto out;
	}
	qsort(t, reps, sizeof(*t), cmp_u64);
	*ret_p50_us = (double)t[(reps * 50 + 99) / 100 - 1] / 1e3;
	*ret_p99_us = (double)t[(reps * 99 + 99) / 100 - 1] / 1e3;
out:
	policy_decision_done(&d);
	policy_free(p);
	free(stamp);
	free(t);
	return r;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: loom_policy_latency [options]\n"
		"Times one policy_decide() call of each registered policy with N schedulable\n"
		"coflows on a 150-port big switch; prints p50/p99 in microseconds.\n"
		"\n"
		"  -p, --policy SPEC   only this policy, with options (e.g. lookahead:base=wsrjf;\n"
		"                      default: every registered policy with its defaults)\n"
		"  -s, --sizes LIST    comma-separated N values, 1..%u (default 10,100,1000)\n"
		"  -r, --reps R        timed calls per (policy, N) (default 1000 for N <= 100,\n"
		"                      200 above)\n"
		"  -c, --csv FILE      also write policy,n,p50_us,p99_us,reps to FILE\n"
		"  -u, --unweighted    every job of weight 1 (default: 1..4, drawn per job)\n"
		"  -h, --help          this text\n"
		"\n"
		"Single-threaded; run it as 'taskset -c 0 loom_policy_latency' for stable numbers.\n",
		MAX_N);
}

static int parse_sizes(char *s, struct bench_args *a)
{
	char *save = NULL;
	unsigned long long v;

	a->nsizes = 0;
	for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (a->nsizes == MAX_SIZES || loom_parse_u64(tok, &v) < 0 || v < 1 || v > MAX_N) {
			log_err("--sizes: '%s' is not a number in 1..%u (at most %u sizes)", tok,
				MAX_N, MAX_SIZES);
			return -EINVAL;
		}
		a->sizes[a->nsizes++] = (uint32_t)v;
	}
	if (a->nsizes == 0) {
		log_err("--sizes: empty list");
		return -EINVAL;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct bench_args *a)
{
	static const struct option opts[] = {
		{"policy", required_argument, NULL, 'p'},
		{"sizes", required_argument, NULL, 's'},
		{"reps", required_argument, NULL, 'r'},
		{"csv", required_argument, NULL, 'c'},
		{"unweighted", no_argument, NULL, 'u'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	unsigned long long v;
	int c;

	while ((c = getopt_long(argc, argv, "p:s:r:c:uh", opts, NULL)) != -1) {
		switch (c) {
		case 'p': {
			double opt[POLICY_MAX_OPTS];
			struct loom_err err;

			if (policy_spec_parse(optarg, NULL, opt, &err) < 0) {
				log_err("--policy: %s", err.msg);
				return -EINVAL;
			}
			a->policy = optarg;
			break;
		}
		case 's':
			if (parse_sizes(optarg, a) < 0)
				return -EINVAL;
			break;
		case 'r':
			if (loom_parse_u64(optarg, &v) < 0 || v < 1 || v > 10000000) {
				log_err("--reps: '%s' is not a number in 1..10000000", optarg);
				return -EINVAL;
			}
			a->reps = (uint32_t)v;
			break;
		case 'c':
			a->csv = optarg;
			break;
		case 'u':
			a->unweighted = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr, "Try 'loom_policy_latency --help'.\n");
			return -EINVAL;
		}
	}
	if (optind < argc) {
		log_err("unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

static void cpu_model(char *buf, size_t size)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256], *v;

	snprintf(buf, size, "unknown CPU");
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "model name", 10) == 0 && (v = strchr(line, ':'))) {
			v += strspn(v + 1, " \t") + 1;
			snprintf(buf, size, "%.*s", (int)strcspn(v, "\n"), v);
			break;
		}
	if (f)
		fclose(f);
}

int main(int argc, char **argv)
{
	struct bench_args a = {.sizes = {10, 100, 1000}, .nsizes = 3};
	struct cp_model *models[MAX_SIZES] = {0};
	struct loom_err err = {{0}};
	const struct policy_class *const *cls;
	struct topo *t = NULL;
	struct utsname u;
	FILE *csv = NULL;
	char cpu[128];
	size_t ncls;
	int ret = 1;

	loom_log_set_ident("loom_policy_latency");
	if (parse_args(argc, argv, &a) < 0)
		return 2;
	if (a.csv && !(csv = fopen(a.csv, "w"))) {
		log_err("--csv: cannot write %s: %s", a.csv, strerror(errno));
		return 1;
	}
	t = topo_new_bigswitch(NHOSTS, TOPO_DEFAULT_BPS);
	if (!t) {
		log_err("cannot make the %u-host fabric: %s", NHOSTS, strerror(errno));
		goto out;
	}
	for (uint32_t i = 0; i < a.nsizes; i++) {
		models[i] = workload_new(a.sizes[i], a.unweighted, &err);
		if (!models[i] || cp_model_bind(models[i], t) < 0) {
			log_err("N=%u: cannot build the workload: %s", a.sizes[i],
				models[i] ? "bind failed" : loom_err_str(&err));
			goto out;
		}
	}

	cpu_model(cpu, sizeof(cpu));
	printf("machine: %s, %s; build: %s; %u ports; one thread\n\n",
	       uname(&u) == 0 ? u.nodename : "unknown host", cpu, LOOM_BUILD_TYPE, t->nports);
	printf("| policy | N | p50 µs | p99 µs |\n|---|---:|---:|---:|\n");
	if (csv)
		fprintf(csv, "policy,n,p50_us,p99_us,reps\n");
	cls = policy_class_list(&ncls);
	for (size_t k = 0; k < (a.policy ? 1 : ncls); k++) {
		const char *spec = a.policy ? a.policy : cls[k]->name;

		if (!a.policy && cls[k]->offline)
			continue; /* a research oracle: it searches the whole trace first */
		for (uint32_t i = 0; i < a.nsizes; i++) {
			uint32_t n = a.sizes[i], reps = a.reps ? a.reps : n <= 100 ? 1000 : 200;
			double p50, p99;

			if (bench_one(spec, models[i], n, reps, &p50, &p99) < 0)
				goto out;
			printf("| %s | %u | %.2f | %.2f |\n", spec, n, p50, p99);
			fflush(stdout);
			if (csv)
				fprintf(csv, "%s,%u,%.3f,%.3f,%u\n", spec, n, p50, p99, reps);
		}
	}
	ret = 0;
out:
	if (csv && fclose(csv) != 0 && ret == 0) {
		log_err("--csv: cannot write %s: %s", a.csv, strerror(errno));
		ret = 1;
	}
	for (uint32_t i = 0; i < a.nsizes; i++)
		cp_model_free(models[i]);
	topo_free(t);
	return ret;
}
