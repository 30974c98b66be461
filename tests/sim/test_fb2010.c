/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Properties of replays of the bundled FB2010 trace (526 coflows, 706,397
 * flows on 150 ports at 1 Gbit/s): no port is ever above capacity, every
 * flow delivers exactly its bytes, every coflow and job completes, and no
 * CCT beats the coflow's isolation time. Checked
 *   - on the full trace under fifo (ideal and classes mode) and fair
 *     (ideal mode), and
 *   - under every registered policy (policy_class_list(): the heuristics,
 *     gnn with the shipped model, ensemble, ...; not the offline research
 *     oracle hindsight, which test_lookahead checks), each in ideal and in
 *     classes mode (K = 8), on the trace's first SUBSET_COFLOWS = 200
 *     coflows (the first 200 lines of the file, in arrival order: 168,869
 *     flows, isolation times as in the full trace).
 * Every policy on the full trace in both modes is too slow for the suite
 * (debugoptimized, 2 cores: about 25 s per policy and mode with --check,
 * over 10 minutes in all); the subset, every policy in both modes, takes
 * under a minute, and so does the full-trace part. The subset is cut by
 * this test (header "150 200" and the first 200 coflow lines, into a
 * temporary file) so it follows the bundled trace. Not run under ASan
 * (scripts/run-tests.sh).
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
#include <time.h>
#include <unistd.h>

#include "controlplane/sim/sim.h"

#define SUBSET_COFLOWS 200u
#define MAX_CASES      128u

struct trace {
	struct cp_model *m;
	struct topo *t;
	uint64_t *iso_ns;
};

/* One replay of the subset: a policy in a mode. */
struct subset_case {
	const char *policy;
	enum sim_mode mode;
	char name[64];
};

/* Globals, not a group state: cmocka passes a group state before a test's own. */
static struct trace full, subset;
static struct subset_case cases[MAX_CASES];

static int trace_load(struct trace *tr, const char *path)
{
	struct loom_err err = {{0}};
	uint32_t nhosts;
	double *scratch;

	tr->m = sim_trace_load(path, SIM_TRACE_FB, &nhosts, &err);
	if (!tr->m) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	tr->t = topo_new_bigswitch(nhosts, TOPO_DEFAULT_BPS);
	if (!tr->t || cp_model_bind(tr->m, tr->t) < 0)
		return -1;
	tr->iso_ns = calloc(tr->m->ncoflows, sizeof(*tr->iso_ns));
	scratch = calloc(tr->t->nports, sizeof(*scratch));
	if (!tr->iso_ns || !scratch) {
		free(scratch);
		return -1;
	}
	for (uint32_t c = 0; c < tr->m->ncoflows; c++)
		tr->iso_ns[c] = cp_coflow_isolation_ns(tr->m, c, scratch);
	free(scratch);
	return 0;
}

/* The header "PORTS SUBSET_COFLOWS" and the first SUBSET_COFLOWS coflow lines of path. */
static int subset_write(const char *path, const char *out)
{
	FILE *in = fopen(path, "r"), *o;
	char *line = NULL;
	size_t cap = 0;
	unsigned ports, n;
	uint32_t copied = 0;
	int r = -1;

	if (!in)
		return -1;
	o = fopen(out, "w");
	if (o && getline(&line, &cap, in) > 0 && sscanf(line, "%u %u", &ports, &n) == 2 &&
	    n >= SUBSET_COFLOWS) {
		fprintf(o, "%u %u\n", ports, SUBSET_COFLOWS);
		while (copied < SUBSET_COFLOWS && getline(&line, &cap, in) > 0) {
			fputs(line, o);
			copied++;
		}
		r = copied == SUBSET_COFLOWS ? 0 : -1;
	}
	free(line);
	fclose(in);
	if (o && fclose(o) != 0)
		r = -1;
	return r;
}

static int setup(void **state)
{
	const char *src = getenv("LOOM_SRCDIR");
	char path[4096], sub[64];
	int fd, r;

	(void)state;
	snprintf(path, sizeof(path), "%s/data/fb2010/FB2010-1Hr-150-0.txt", src ? src : ".");
	if (trace_load(&full, path) < 0)
		return -1;
	snprintf(sub, sizeof(sub), "/tmp/loom-fb2010-subset-XXXXXX");
	fd = mkstemp(sub);
	if (fd < 0)
		return -1;
	close(fd);
	r = subset_write(path, sub);
	if (r == 0)
		r = trace_load(&subset, sub);
	unlink(sub);
	return r;
}

static void trace_free(struct trace *tr)
{
	cp_model_free(tr->m);
	topo_free(tr->t);
	free(tr->iso_ns);
}

static int teardown(void **state)
{
	(void)state;
	trace_free(&full);
	trace_free(&subset);
	return 0;
}

static void test_trace_shape(void **state)
{
	double sum_s = 0;

	(void)state;
	assert_int_equal(full.m->ncoflows, 526);
	assert_int_equal(full.m->nflows, 706397);
	assert_int_equal(full.t->nhosts, 150);
	/* data/fb2010/FORMAT.md: average isolation time 14.38 s over the 526 coflows. */
	for (uint32_t c = 0; c < full.m->ncoflows; c++)
		sum_s += (double)full.iso_ns[c] * 1e-9;
	assert_true(sum_s / 526 > 14.375 && sum_s / 526 < 14.385);
	/* the subset: the first coflows, the same ports */
	assert_int_equal(subset.m->ncoflows, SUBSET_COFLOWS);
	assert_int_equal(subset.m->nflows, 168869);
	assert_int_equal(subset.t->nhosts, 150);
	for (uint32_t c = 0; c < SUBSET_COFLOWS; c++) {
		assert_int_equal(subset.m->coflows[c].nflows, full.m->coflows[c].nflows);
		assert_int_equal(subset.m->coflows[c].total_bytes, full.m->coflows[c].total_bytes);
		assert_int_equal(subset.iso_ns[c], full.iso_ns[c]);
	}
}

static void replay(struct trace *fx, const char *policy, enum sim_mode mode)
{
	struct policy_params pp = {.classes = 8, .seed = 1};
	struct loom_err err = {{0}};
	struct sim_stats st;
	struct sim_opts o;
	struct policy *p;

	sim_opts_default(&o);
	o.mode = mode;
	o.check = true;
	p = policy_new(policy, &pp, fx->m, &err);
	if (!p)
		fail_msg("%s: %s", policy, err.msg);
	if (sim_run(fx->m, p, &o, &st, &err) < 0)
		fail_msg("%s: %s", policy, err.msg);
	policy_free(p);
	assert_true(cp_model_all_done(fx->m));
	assert_int_equal(fx->m->coflows_done, fx->m->ncoflows);
	assert_int_equal(fx->m->flows_done, fx->m->nflows);
	/* No port above capacity at any step (float tolerance 1e-9). */
	assert_true(st.checked_steps > 0); /* the checks below did run */
	if (st.max_port_load > 1.0 + 1e-9)
		fail_msg("%s: port load %.12f of capacity", policy, st.max_port_load);
	/*
	 * Each flow moved exactly its bytes: what is left (or over-sent) at its
	 * completion is at most what one nanosecond moves (rounding to whole ns).
	 */
	if (st.max_residual_ns > 1.0 + 1e-6)
		fail_msg("%s: residual of %.3f ns of transfer at a flow completion", policy,
			 st.max_residual_ns);
	for (uint32_t f = 0; f < fx->m->nflows; f++) {
		const struct cp_flow *fl = &fx->m->flows[f];

		assert_true(fl->done);
		assert_true(fl->finish_ns >= fx->m->coflows[fl->coflow].release_ns);
	}
	for (uint32_t c = 0; c < fx->m->ncoflows; c++) {
		const struct cp_coflow *cf = &fx->m->coflows[c];
		double sent_err = cf->sent_bytes - (double)cf->total_bytes;

		assert_int_equal(cf->state, CP_COFLOW_DONE);
		/* Lower bound: never faster than alone on an empty fabric (1 ns rounding). */
		assert_true(cf->finish_ns - cf->release_ns + 1 >= fx->iso_ns[c]);
		/*
		 * Bytes accounted to the coflow match its size: completions are
		 * rounded up to the next nanosecond, so each flow may be counted
		 * for less than a byte more (0.134 B at 1 Gbit/s).
		 */
		assert_true(fabs(sent_err) < (double)cf->nflows + 1e-9 * (double)cf->total_bytes);
	}
	for (uint32_t j = 0; j < fx->m->njobs; j++)
		assert_int_equal(fx->m->jobs[j].state, CP_JOB_DONE);
}

static void test_fifo_ideal(void **state)
{
	(void)state;
	replay(&full, "fifo", SIM_MODE_IDEAL);
}

static void test_fifo_classes(void **state)
{
	(void)state;
	replay(&full, "fifo", SIM_MODE_CLASSES);
}

static void test_fair(void **state)
{
	(void)state;
	replay(&full, "fair", SIM_MODE_IDEAL);
}

/* One registered policy in one mode on the subset (the case is the test's state). */
static void test_subset(void **state)
{
	const struct subset_case *c = *state;
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	replay(&subset, c->policy, c->mode);
	clock_gettime(CLOCK_MONOTONIC, &b);
	print_message("%s: %.2f s\n", c->name,
		      (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec));
}

int main(void)
{
	static struct CMUnitTest tests[4 + MAX_CASES];
	const struct policy_class *const *cls;
	size_t ncls, n = 0, ncases = 0;

	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_trace_shape);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_fifo_ideal);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_fifo_classes);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_fair);
	cls = policy_class_list(&ncls);
	if (ncls == 0 || 2 * ncls > MAX_CASES) {
		fprintf(stderr, "fb2010: %zu registered policies (want 1..%u)\n", ncls,
			MAX_CASES / 2);
		return 1;
	}
	for (size_t i = 0; i < ncls; i++)
		for (int k = 0; k < 2 && !cls[i]->offline; k++) {
			struct subset_case *c = &cases[ncases++];

			c->policy = cls[i]->name;
			c->mode = k ? SIM_MODE_CLASSES : SIM_MODE_IDEAL;
			snprintf(c->name, sizeof(c->name), "subset %s %s", c->policy,
				 k ? "classes" : "ideal");
			tests[n++] = (struct CMUnitTest){
				.name = c->name, .test_func = test_subset, .initial_state = c};
		}
	return _cmocka_run_group_tests("fb2010", tests, n, setup, teardown);
}
