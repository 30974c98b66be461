/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The random layered DAG family (controlplane/sim/dags_random.c): the same
 * spec gives the same shapes and another seed others, a smaller count is a
 * prefix; every shape of many specs has min..max coflows, is acyclic and
 * weakly connected, with its longest path in the layers range and no stage
 * over the fan-in limit; the defaults spread over their ranges; bad specs
 * are rejected with a message naming the key and the value; sim_dags_load()
 * takes a spec as it takes a path, and sim_gen() builds jobs from the family.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/sim/sim.h"

static struct sim_dags *load_ok(const char *spec)
{
	struct loom_err err = {{0}};
	struct sim_dags *d = sim_dags_load(spec, &err);

	if (!d)
		fail_msg("%s: %s", spec, err.msg);
	return d;
}

static struct sim_dags_random parse_ok(const char *spec)
{
	struct loom_err err = {{0}};
	struct sim_dags_random p;

	if (sim_dags_random_parse(spec, &p, &err) < 0)
		fail_msg("%s: %s", spec, err.msg);
	return p;
}

static uint32_t uf_find(uint32_t *parent, uint32_t v)
{
	while (parent[v] != v)
		v = parent[v] = parent[parent[v]];
	return v;
}

/* What one shape measures: sources, the largest fan-in, the longest path in stages. */
struct shape_stats {
	uint32_t sources, fanin, longest;
};

/*
 * Fails unless d is a valid shape of the family p: edges in range, no
 * self-loops or repeats, acyclic (Kahn), weakly connected (union-find),
 * fan-in, longest path and coflow count within p's bounds, stage fields in
 * range. Computed here from the edges alone, not from the generator's state.
 */
static struct shape_stats check_shape(const struct sim_dag *d, const struct sim_dags_random *p)
{
	uint32_t n = d->nnodes, ne = d->nedges, done = 0, comps = n;
	uint32_t *indeg = calloc(n, sizeof(*indeg)), *left = calloc(n, sizeof(*left));
	uint32_t *depth = calloc(n, sizeof(*depth)), *queue = calloc(n, sizeof(*queue));
	uint32_t *uf = calloc(n, sizeof(*uf));
	uint32_t lhi = p->max_layers < ne + 1 ? p->max_layers : ne + 1;
	struct shape_stats st = {0};

	assert_true(indeg && left && depth && queue && uf);
	if (ne < p->min_coflows || ne > p->max_coflows)
		fail_msg("%s: %u coflows, not in [%u, %u]", d->label, ne, p->min_coflows,
			 p->max_coflows);
	assert_true(n >= 2 && n <= ne + 1);
	assert_true(d->label[0] != '\0');
	for (uint32_t v = 0; v < n; v++)
		uf[v] = v;
	for (uint32_t e = 0; e < ne; e++) {
		uint32_t a = d->edges[e][0], b = d->edges[e][1], ra, rb;

		assert_true(a < n && b < n && a != b);
		for (uint32_t f = 0; f < e; f++)
			if (d->edges[f][0] == a && d->edges[f][1] == b)
				fail_msg("%s: edge %u>%u repeats", d->label, a, b);
		indeg[b]++;
		ra = uf_find(uf, a);
		rb = uf_find(uf, b);
		if (ra != rb) {
			uf[ra] = rb;
			comps--;
		}
	}
	if (comps != 1)
		fail_msg("%s: %u weakly connected components", d->label, comps);
	/* Kahn, with the longest path (in stages) ending at each node */
	for (uint32_t v = 0; v < n; v++) {
		if (indeg[v] > p->fanin_max)
			fail_msg("%s: stage %u has %u parents (fanin=%u)", d->label, v, indeg[v],
				 p->fanin_max);
		if (indeg[v] > st.fanin)
			st.fanin = indeg[v];
		left[v] = indeg[v];
		if (indeg[v] == 0) {
			queue[done++] = v;
			depth[v] = 1;
			st.sources++;
		}
	}
	for (uint32_t h = 0; h < done; h++) {
		uint32_t v = queue[h];

		if (depth[v] > st.longest)
			st.longest = depth[v];
		for (uint32_t e = 0; e < ne; e++) {
			uint32_t c = d->edges[e][1];

			if (d->edges[e][0] != v)
				continue;
			if (depth[v] + 1 > depth[c])
				depth[c] = depth[v] + 1;
			if (--left[c] == 0)
				queue[done++] = c;
		}
	}
	if (done != n)
		fail_msg("%s: the edges form a cycle", d->label);
	if (st.longest < p->min_layers || st.longest > lhi)
		fail_msg("%s: longest path of %u stages, not in [%u, %u]", d->label, st.longest,
			 p->min_layers, lhi);
	for (uint32_t v = 0; v < n; v++) {
		assert_true(d->ntasks[v] >= 1 && d->ntasks[v] <= 200);
		if (!(d->mean_task_ms[v] >= p->min_task_ms && d->mean_task_ms[v] <= p->max_task_ms))
			fail_msg("%s: stage %u mean task time %g ms not in [%g, %g]", d->label, v,
				 d->mean_task_ms[v], p->min_task_ms, p->max_task_ms);
	}
	free(indeg);
	free(left);
	free(depth);
	free(queue);
	free(uf);
	return st;
}

static bool dag_equal(const struct sim_dag *x, const struct sim_dag *y)
{
	return x->nnodes == y->nnodes && x->nedges == y->nedges &&
	       strcmp(x->label, y->label) == 0 &&
	       memcmp(x->edges, y->edges, x->nedges * sizeof(x->edges[0])) == 0 &&
	       memcmp(x->ntasks, y->ntasks, x->nnodes * sizeof(x->ntasks[0])) == 0 &&
	       memcmp(x->mean_task_ms, y->mean_task_ms, x->nnodes * sizeof(x->mean_task_ms[0])) ==
		       0;
}

static void test_spec_names(void **state)
{
	(void)state;
	assert_true(sim_dags_spec_is_random("random"));
	assert_true(sim_dags_spec_is_random("random:"));
	assert_true(sim_dags_spec_is_random("random:min=3"));
	assert_false(sim_dags_spec_is_random("randomly"));
	assert_false(sim_dags_spec_is_random("./random"));
	assert_false(sim_dags_spec_is_random("data/tpch/dags.txt"));
	assert_false(sim_dags_spec_is_random(""));
	assert_false(sim_dags_spec_is_random(NULL));
}

static void test_defaults(void **state)
{
	struct sim_dags_random p = parse_ok("random"), q;
	struct sim_dags *d = load_ok("random");
	uint32_t lo = UINT32_MAX, hi = 0, lmin = UINT32_MAX, lmax = 0, multi_source = 0, joins = 0;
	double ms_lo = 1e300, ms_hi = 0;

	(void)state;
	sim_dags_random_default(&q);
	assert_memory_equal(&p, &q, sizeof(p));
	assert_int_equal(p.min_coflows, 2);
	assert_int_equal(p.max_coflows, 30);
	assert_int_equal(p.min_layers, 2);
	assert_int_equal(p.max_layers, 6);
	assert_int_equal(p.fanin_max, 3);
	assert_int_equal(p.count, 200);
	assert_int_equal(p.seed, 1);
	assert_int_equal(d->n, 200);
	for (uint32_t i = 0; i < d->n; i++) {
		struct shape_stats st = check_shape(&d->dags[i], &p);

		lo = d->dags[i].nedges < lo ? d->dags[i].nedges : lo;
		hi = d->dags[i].nedges > hi ? d->dags[i].nedges : hi;
		lmin = st.longest < lmin ? st.longest : lmin;
		lmax = st.longest > lmax ? st.longest : lmax;
		multi_source += st.sources > 1;
		joins += st.fanin > 1;
		for (uint32_t v = 0; v < d->dags[i].nnodes; v++) {
			double ms = d->dags[i].mean_task_ms[v];

			ms_lo = ms < ms_lo ? ms : ms_lo;
			ms_hi = ms > ms_hi ? ms : ms_hi;
		}
	}
	/* the family spreads over its ranges, with joins and several sources */
	assert_true(lo <= 3 && hi >= 29);
	assert_int_equal(lmin, 2);
	assert_int_equal(lmax, 6);
	assert_true(multi_source > 20 && multi_source < 200);
	assert_true(joins > 20);
	assert_true(ms_lo < 40 && ms_hi > 2500);
	assert_string_equal(d->dags[0].label, "rand1-0");
	assert_string_equal(d->dags[199].label, "rand1-199");
	sim_dags_free(d);
}

static void test_determinism(void **state)
{
	struct sim_dags *a = load_ok("random:min=3:max=20:seed=7");
	struct sim_dags *b = load_ok("random:seed=7:max=20:min=3");
	struct sim_dags *c = load_ok("random:min=3:max=20:seed=8");
	struct sim_dags *pre = load_ok("random:min=3:max=20:seed=7:count=50");
	uint32_t same = 0;

	(void)state;
	assert_int_equal(a->n, 200);
	assert_int_equal(b->n, 200);
	assert_int_equal(pre->n, 50);
	for (uint32_t i = 0; i < a->n; i++) {
		assert_true(dag_equal(&a->dags[i], &b->dags[i]));
		same += a->dags[i].nedges == c->dags[i].nedges &&
			a->dags[i].nnodes == c->dags[i].nnodes &&
			memcmp(a->dags[i].edges, c->dags[i].edges,
			       a->dags[i].nedges * sizeof(a->dags[i].edges[0])) == 0;
	}
	/* another seed: other shapes (a few tiny ones may coincide) */
	assert_true(same < 20);
	/* a smaller count is a prefix */
	for (uint32_t i = 0; i < pre->n; i++)
		assert_true(dag_equal(&a->dags[i], &pre->dags[i]));
	sim_dags_free(a);
	sim_dags_free(b);
	sim_dags_free(c);
	sim_dags_free(pre);
}

static void test_bounds(void **state)
{
	static const char *const specs[] = {
		"random:min=1:max=1",
		"random:min=30:max=30:layers=2:fanin=1",
		"random:min=30:max=30:layers=31:fanin=1:count=20",
		"random:min=10:max=40:layers=3..12:fanin=1",
		"random:min=5:max=60:layers=2..20:fanin=2:count=1000:seed=9",
		"random:min=2:max=30:layers=2..6:fanin=3:count=2000:seed=12345",
		"random:min=100:max=200:fanin=5:layers=50..101:count=20",
		"random:min=990:max=1000:layers=2:fanin=1000:count=2",
		"random:min=40:max=40:layers=2..3:fanin=1000:count=100",
		"random:min=6:max=6:layers=7:count=50:seed=0",
		"random:task-ms=0:count=20",
		"random:task-ms=0..10:count=20",
		"random:task-ms=7:count=20",
		"random:seed=18446744073709551615:count=20",
	};

	(void)state;
	for (size_t s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
		struct sim_dags_random p = parse_ok(specs[s]);
		struct sim_dags *d = load_ok(specs[s]);

		assert_int_equal(d->n, p.count);
		for (uint32_t i = 0; i < d->n; i++)
			check_shape(&d->dags[i], &p);
		sim_dags_free(d);
	}
}

/* A grid of coflow, layer and fan-in ranges, 30 shapes each. */
static void test_sweep(void **state)
{
	static const uint32_t mins[] = {1, 2, 5, 17}, fanins[] = {1, 2, 3, 8};
	uint64_t seed = 100;

	(void)state;
	for (size_t a = 0; a < sizeof(mins) / sizeof(mins[0]); a++) {
		uint32_t maxs[] = {mins[a], mins[a] + 3, 40};

		for (size_t b = 0; b < sizeof(maxs) / sizeof(maxs[0]); b++) {
			uint32_t lmins[] = {2, 2 + mins[a] / 2, mins[a] + 1};

			for (size_t c = 0; c < sizeof(lmins) / sizeof(lmins[0]); c++) {
				uint32_t lmaxs[] = {lmins[c], lmins[c] + 2, 50};

				for (size_t e = 0; e < sizeof(lmaxs) / sizeof(lmaxs[0]); e++) {
					for (size_t f = 0; f < sizeof(fanins) / sizeof(fanins[0]);
					     f++) {
						char spec[160];
						struct sim_dags_random p;
						struct sim_dags *d;

						snprintf(
							spec, sizeof(spec),
							"random:min=%u:max=%u:layers=%u..%u:fanin=%"
							"u:count=30:seed=%llu",
							mins[a], maxs[b], lmins[c], lmaxs[e],
							fanins[f], (unsigned long long)seed++);
						p = parse_ok(spec);
						d = load_ok(spec);
						for (uint32_t i = 0; i < d->n; i++)
							check_shape(&d->dags[i], &p);
						sim_dags_free(d);
					}
				}
			}
		}
	}
}

/* fanin=1 makes trees out of one source; layers=N with min=N-1 makes paths */
static void test_shapes_at_the_limits(void **state)
{
	struct sim_dags_random p = parse_ok("random:min=3:max=25:fanin=1:count=100");
	struct sim_dags *d = load_ok("random:min=3:max=25:fanin=1:count=100");

	(void)state;
	for (uint32_t i = 0; i < d->n; i++) {
		struct shape_stats st = check_shape(&d->dags[i], &p);

		assert_int_equal(st.sources, 1);
		assert_int_equal(d->dags[i].nnodes, d->dags[i].nedges + 1);
	}
	sim_dags_free(d);
	p = parse_ok("random:min=6:max=6:layers=7:count=10");
	d = load_ok("random:min=6:max=6:layers=7:count=10");
	assert_int_equal(p.min_layers, 2);
	for (uint32_t i = 0; i < d->n; i++)
		check_shape(&d->dags[i], &p);
	sim_dags_free(d);
	p = parse_ok("random:min=6:max=6:layers=7..7:count=10");
	d = load_ok("random:min=6:max=6:layers=7..7:count=10");
	for (uint32_t i = 0; i < d->n; i++) {
		struct shape_stats st = check_shape(&d->dags[i], &p);

		assert_int_equal(st.longest, 7);
		assert_int_equal(d->dags[i].nnodes, 7);
	}
	sim_dags_free(d);
	p = parse_ok("random:layers=3..4:task-ms=1.5..2.5:fanin=7");
	assert_int_equal(p.min_layers, 3);
	assert_int_equal(p.max_layers, 4);
	assert_int_equal(p.fanin_max, 7);
	assert_true(p.min_task_ms == 1.5 && p.max_task_ms == 2.5);
	p = parse_ok("random:");
	assert_int_equal(p.count, 200);
	p = parse_ok("random:max=3"); /* the default min=2 is within it */
	assert_int_equal(p.min_coflows, 2);
	assert_int_equal(p.max_coflows, 3);
}

struct bad_spec {
	const char *spec;
	const char *msg; /* expected in the message */
};

static void test_bad_specs(void **state)
{
	static const struct bad_spec bad[] = {
		{"random:foo=1", "unknown key 'foo'"},
		{"random:min=abc", "min=abc: 'abc' is not an integer in [1, 1000]"},
		{"random:min=0", "min=0"},
		{"random:max=1001", "max=1001"},
		{"random:min=-3", "min=-3"},
		{"random:max=", "max=: '' is not an integer"},
		{"random:min=5:max=3", "min=5 exceeds max=3"},
		{"random:layers=1", "layers=1"},
		{"random:layers=6..2", "layers=6..2: the low end exceeds the high end"},
		{"random:layers=2..x", "layers=x"},
		{"random:layers=5..6", "layers=5..6 needs at least 4 coflows per DAG, but min=2"},
		{"random:fanin=0", "fanin=0"},
		{"random:count=0", "count=0"},
		{"random:count=100001", "count=100001"},
		{"random:seed=1.5", "seed=1.5"},
		{"random:seed=18446744073709551616", "seed=18446744073709551616"},
		{"random:task-ms=-1", "task-ms=-1"},
		{"random:task-ms=9..3", "task-ms=9..3: the low end exceeds the high end"},
		{"random:task-ms=nan", "task-ms=nan"},
		{"random:task-ms=1e8", "task-ms=1e8"},
		{"random:min", "'min' is not key=value"},
		{"random::min=3", "empty item"},
		{"random:min=3:", "empty item"},
		{"random:min=3:min=4", "min=4: the key is given twice"},
		{"randomx", "is not a random DAG spec"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct loom_err err = {{0}};
		struct sim_dags_random p;
		struct sim_dags *d;
		int r = sim_dags_random_parse(bad[i].spec, &p, &err);

		if (r != -EINVAL)
			fail_msg("%s: expected -EINVAL, got %d", bad[i].spec, r);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("%s: message '%s' lacks '%s'", bad[i].spec, err.msg, bad[i].msg);
		if (strcmp(bad[i].spec, "randomx") == 0)
			continue; /* a path to sim_dags_load() */
		if (!strstr(err.msg, bad[i].spec))
			fail_msg("%s: message '%s' does not quote the spec", bad[i].spec, err.msg);
		/* sim_dags_load() says the same */
		loom_err_clear(&err);
		errno = 0;
		d = sim_dags_load(bad[i].spec, &err);
		assert_null(d);
		assert_int_equal(errno, EINVAL);
		assert_non_null(strstr(err.msg, bad[i].msg));
	}
}

static void test_gen_from_family(void **state)
{
	struct sim_dags_random p = parse_ok("random:min=4:max=12:count=40:seed=3");
	struct sim_dags *d = load_ok("random:min=4:max=12:count=40:seed=3");
	struct loom_err err = {{0}};
	struct sim_gen_params gp;
	struct cp_model *fb, *m;
	struct topo *t = topo_new_bigswitch(16, TOPO_DEFAULT_BPS);
	char path[4096];
	const char *root = getenv("LOOM_SRCDIR");

	(void)state;
	assert_non_null(t);
	snprintf(path, sizeof(path), "%s/data/fb2010/FB2010-1Hr-150-0.txt", root ? root : ".");
	fb = sim_trace_load(path, SIM_TRACE_FB, NULL, &err);
	if (!fb)
		fail_msg("%s", err.msg);
	sim_gen_params_default(&gp);
	gp.njobs = 60;
	m = sim_gen(&gp, d, fb, t, &err);
	if (!m)
		fail_msg("sim_gen: %s", err.msg);
	assert_int_equal(m->njobs, 60);
	for (uint32_t j = 0; j < m->njobs; j++)
		if (m->jobs[j].ncoflows < p.min_coflows || m->jobs[j].ncoflows > p.max_coflows)
			fail_msg("job %u has %u coflows", j, m->jobs[j].ncoflows);
	cp_model_free(m);
	cp_model_free(fb);
	topo_free(t);
	sim_dags_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_names),  cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_determinism), cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_sweep),       cmocka_unit_test(test_shapes_at_the_limits),
		cmocka_unit_test(test_bad_specs),   cmocka_unit_test(test_gen_from_family),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
