/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DAG-shape reader and the workload generator: dags.txt parses (bundled
 * file and bad inputs, one named test each), determinism in the seed, the
 * coflow DAG built from the stage DAG, widths and bytes taken from the FB
 * model, offered load, parameter checks, and a Loom write -> read round trip.
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

#include "controlplane/sim/sim.h"

#define MIB 1048576ULL
#define MS  1000000ULL

static void src_path(char *buf, size_t size, const char *rel)
{
	const char *root = getenv("LOOM_SRCDIR");

	snprintf(buf, size, "%s/%s", root ? root : ".", rel);
}

static struct sim_dags *dags_str(const char *text)
{
	struct loom_err err = {{0}};
	struct sim_dags *d = sim_dags_parse(text, strlen(text), "d.txt", &err);

	if (!d)
		fail_msg("dags parse failed: %s", err.msg);
	return d;
}

static struct cp_model *fb_str(const char *text)
{
	struct loom_err err = {{0}};
	struct cp_model *m =
		sim_trace_parse(text, strlen(text), "fb.txt", SIM_TRACE_FB, NULL, &err);

	if (!m)
		fail_msg("fb parse failed: %s", err.msg);
	return m;
}

static struct sim_dags *bundled_dags(void)
{
	struct loom_err err = {{0}};
	char path[4096];
	struct sim_dags *d;

	src_path(path, sizeof(path), "data/tpch/dags.txt");
	d = sim_dags_load(path, &err);
	if (!d)
		fail_msg("%s", err.msg);
	return d;
}

static struct cp_model *bundled_fb(void)
{
	struct loom_err err = {{0}};
	char path[4096];
	struct cp_model *m;

	src_path(path, sizeof(path), "data/fb2010/FB2010-1Hr-150-0.txt");
	m = sim_trace_load(path, SIM_TRACE_FB, NULL, &err);
	if (!m)
		fail_msg("%s", err.msg);
	return m;
}

static struct cp_model *gen_ok(const struct sim_gen_params *p, const struct sim_dags *d,
			       const struct cp_model *fb, const struct topo *t)
{
	struct loom_err err = {{0}};
	struct cp_model *m = sim_gen(p, d, fb, t, &err);

	if (!m)
		fail_msg("sim_gen failed: %s", err.msg);
	return m;
}

/* Returns m written in Loom's format (caller frees). */
static char *write_str(const struct cp_model *m, size_t *ret_len)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(sim_trace_write_loom(m, f), 0);
	assert_int_equal(fclose(f), 0);
	*ret_len = len;
	return text;
}

/* ---- dags.txt ------------------------------------------------------------------- */

static void test_dags_small(void **state)
{
	struct sim_dags *d =
		dags_str("# size query nodes edges | tasks:ms | edges\n"
			 "2g 1 4 3 | 12:4244.8 200:407.8 200:46.0 5:230.3 | 0>1 1>2 2>3\n"
			 "\n"
			 "100g 22 2 1 | 1:0 3:7.5 | 1>0");

	(void)state;
	assert_int_equal(d->n, 2);
	assert_string_equal(d->dags[0].label, "2g-q1");
	assert_int_equal(d->dags[0].nnodes, 4);
	assert_int_equal(d->dags[0].nedges, 3);
	assert_int_equal(d->dags[0].ntasks[1], 200);
	assert_true(d->dags[0].mean_task_ms[0] == 4244.8);
	assert_true(d->dags[0].mean_task_ms[3] == 230.3);
	assert_int_equal(d->dags[0].edges[2][0], 2);
	assert_int_equal(d->dags[0].edges[2][1], 3);
	assert_string_equal(d->dags[1].label, "100g-q22");
	assert_int_equal(d->dags[1].edges[0][0], 1);
	assert_int_equal(d->dags[1].edges[0][1], 0);
	assert_true(d->dags[1].mean_task_ms[0] == 0);
	sim_dags_free(d);
}

static void test_dags_bundled(void **state)
{
	struct sim_dags *d = bundled_dags();
	uint32_t edges = 0;

	(void)state;
	assert_int_equal(d->n, 154);
	assert_string_equal(d->dags[0].label, "2g-q1");
	assert_int_equal(d->dags[0].nnodes, 4);
	assert_string_equal(d->dags[1].label, "2g-q2");
	assert_int_equal(d->dags[1].nnodes, 18);
	assert_int_equal(d->dags[1].nedges, 19);
	for (uint32_t i = 0; i < d->n; i++)
		edges += d->dags[i].nedges;
	assert_int_equal(edges, 1309); /* 8.5 edges per DAG */
	sim_dags_free(d);
}

static void test_dags_load_missing(void **state)
{
	struct loom_err err = {{0}};

	(void)state;
	errno = 0;
	assert_null(sim_dags_load("/nonexistent/dags.txt", &err));
	assert_int_equal(errno, ENOENT);
	assert_string_equal(err.msg, "/nonexistent/dags.txt: No such file or directory");
}

struct bad_dags {
	const char *name;
	const char *text;
	unsigned line;
	const char *reason;
};

static const struct bad_dags bad_dags_cases[] = {
	{"dags_empty", "", 1, "no DAGs"},
	{"dags_only_comments", "# header\n# more\n", 2, "no DAGs"},
	{"dags_truncated", "2g 1 2 1 |\n", 1, "truncated line"},
	{"dags_nodes_fewer_than_declared", "2g 1 3 1 | 1:1 1:1 | 0>1\n", 1, "expected '|' after"},
	{"dags_nodes_more_than_declared", "2g 1 2 1 | 1:1 1:1 1:1 | 0>1\n", 1,
	 "expected '|' after the 2 node fields"},
	{"dags_huge_node_count", "2g 1 4000000000 1 | 1:1 | 0>1\n", 1, "truncated line"},
	{"dags_node_count_zero", "2g 1 0 0 | |\n", 1, "node count must be > 0"},
	{"dags_edges_fewer_than_declared", "2g 1 2 2 | 1:1 1:1 | 0>1\n", 1, "truncated line"},
	{"dags_edges_more_than_declared", "2g 1 3 1 | 1:1 1:1 1:1 | 0>1 1>2\n", 1,
	 "extra tokens after the 1 edges"},
	{"dags_missing_bar", "2g 1 2 1 1:1 1:1 | 0>1\n", 1, "expected '|' after the edge count"},
	{"dags_count_non_numeric", "2g 1 two 1 | 1:1 1:1 | 0>1\n", 1,
	 "node count 'two' is not a non-negative integer"},
	{"dags_query_non_numeric", "2g q1 2 1 | 1:1 1:1 | 0>1\n", 1, "query 'q1'"},
	{"dags_label_too_long", "abcdefghijklmnopqrstuvwxyz0123456789 1 2 1 | 1:1 1:1 | 0>1\n", 1,
	 "longer than 31 characters"},
	{"dags_node_field_no_colon", "2g 1 2 1 | 1:1 5 | 0>1\n", 1,
	 "node field '5' is not <tasks>:<mean_ms>"},
	{"dags_node_tasks_zero", "2g 1 2 1 | 1:1 0:5 | 0>1\n", 1,
	 "task count of node 1 must be > 0"},
	{"dags_node_tasks_non_numeric", "2g 1 2 1 | 1:1 x:5 | 0>1\n", 1, "task count 'x'"},
	{"dags_node_time_negative", "2g 1 2 1 | 1:1 1:-5 | 0>1\n", 1,
	 "mean task time '-5' of node 1 is not a number >= 0"},
	{"dags_node_time_nan", "2g 1 2 1 | 1:1 1:nan | 0>1\n", 1, "is not a number >= 0"},
	{"dags_edge_no_gt", "2g 1 2 1 | 1:1 1:1 | 0-1\n", 1, "edge '0-1' is not <parent>><child>"},
	{"dags_edge_parent_range", "2g 1 2 1 | 1:1 1:1 | 2>1\n", 1,
	 "edge parent '2' is out of range (max 1)"},
	{"dags_edge_child_range", "2g 1 2 1 | 1:1 1:1 | 0>7\n", 1,
	 "edge child '7' is out of range (max 1)"},
	{"dags_edge_non_numeric", "2g 1 2 1 | 1:1 1:1 | a>1\n", 1, "edge parent 'a'"},
	{"dags_self_loop", "2g 1 2 1 | 1:1 1:1 | 1>1\n", 1, "edge 1>1 is a self-loop"},
	{"dags_duplicate_edge", "2g 1 2 2 | 1:1 1:1 | 0>1 0>1\n", 1, "duplicate edge 0>1"},
	{"dags_cycle", "ok 1 2 1 | 1:1 1:1 | 0>1\n2g 1 3 3 | 1:1 1:1 1:1 | 0>1 1>2 2>0\n", 2,
	 "the edges form a cycle"},
	{"dags_nul_byte", "2g 1 2 1 | 1:1 1:1 | 0>1\n2g\0", 2, "NUL byte"},
};

static void test_dags_bad(void **state)
{
	const struct bad_dags *bc = *state;
	size_t len = strlen(bc->text);
	struct loom_err err = {{0}};
	struct sim_dags *d;
	char want[64];

	if (strstr(bc->name, "nul_byte"))
		len += 1;
	errno = 0;
	d = sim_dags_parse(bc->text, len, "bad.txt", &err);
	if (d) {
		sim_dags_free(d);
		fail_msg("%s: accepted", bc->name);
	}
	assert_int_equal(errno, EINVAL);
	snprintf(want, sizeof(want), "bad.txt:%u: ", bc->line);
	if (strncmp(err.msg, want, strlen(want)) != 0 || !strstr(err.msg, bc->reason))
		fail_msg("%s: message '%s' lacks '%s' ... '%s'", bc->name, err.msg, want,
			 bc->reason);
}

/* ---- the generator --------------------------------------------------------------- */

static void test_gen_defaults(void **state)
{
	struct sim_gen_params p;

	(void)state;
	memset(&p, 0xab, sizeof(p));
	sim_gen_params_default(&p);
	assert_int_equal(p.njobs, 100);
	assert_true(p.load == 0.7);
	assert_int_equal(p.seed, 1);
	assert_true(p.compute_scale == 1.0);
	assert_true(p.bytes_scale == 1.0);
	assert_true(p.weight_max == 1.0);
}

static void test_gen_deterministic(void **state)
{
	struct sim_dags *d = bundled_dags();
	struct cp_model *fb = bundled_fb();
	struct topo *t = topo_new_bigswitch(150, TOPO_DEFAULT_BPS);
	struct sim_gen_params p;
	struct cp_model *a, *b, *c;
	char *ta, *tb, *tc;
	size_t la, lb, lc;

	(void)state;
	sim_gen_params_default(&p);
	p.njobs = 20;
	p.weight_max = 4;
	a = gen_ok(&p, d, fb, t);
	b = gen_ok(&p, d, fb, t);
	p.seed = 2;
	c = gen_ok(&p, d, fb, t);
	ta = write_str(a, &la);
	tb = write_str(b, &lb);
	tc = write_str(c, &lc);
	assert_int_equal(la, lb);
	assert_memory_equal(ta, tb, la);
	assert_true(la != lc || memcmp(ta, tc, la) != 0);
	free(ta);
	free(tb);
	free(tc);
	cp_model_free(a);
	cp_model_free(b);
	cp_model_free(c);
	cp_model_free(fb);
	sim_dags_free(d);
	topo_free(t);
}

/*
 * Two shapes: a chain 0>1>2 (2 coflows) and a diamond-ish 0>2 1>2 2>3 0>3
 * (4 coflows); an FB model of one coflow, 2 mappers x 3 reducers of 1, 2, 3 MB.
 */
static const char two_dags[] = "chain 1 3 2 | 1:10 1:20 1:30 | 0>1 1>2\n"
			       "join 2 4 4 | 1:5 1:6 1:7 1:8 | 0>2 1>2 2>3 0>3\n";
static const char one_fb[] = "8 1\n1 0 2 0 1 3 2:1 3:2 4:3\n";

static void check_parents(const struct cp_model *m, uint32_t c, uint32_t n, const uint32_t *par,
			  uint64_t delay_ns)
{
	const struct cp_coflow *co = &m->coflows[c];

	assert_int_equal(co->nparents, n);
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(m->edges[co->first_parent + i].parent, par[i]);
		assert_int_equal(m->edges[co->first_parent + i].delay_ns, delay_ns);
	}
}

static void test_gen_structure(void **state)
{
	struct sim_dags *d = dags_str(two_dags);
	struct cp_model *fb = fb_str(one_fb);
	struct topo *t = topo_new_bigswitch(16, TOPO_DEFAULT_BPS);
	struct sim_gen_params p;
	struct cp_model *m;
	uint32_t chains = 0, joins = 0, coflows = 0, edges = 0;

	(void)state;
	sim_gen_params_default(&p);
	p.njobs = 60;
	p.compute_scale = 2;
	p.bytes_scale = 0.5;
	m = gen_ok(&p, d, fb, t);
	assert_int_equal(m->njobs, 60);
	assert_int_equal(m->nhosts, 16);
	for (uint32_t j = 0; j < m->njobs; j++) {
		const struct cp_job *job = &m->jobs[j];
		uint32_t f0 = job->first_coflow;

		coflows += job->ncoflows;
		assert_true(job->weight == 1.0);
		if (job->ncoflows == 2) {
			/* chain: coflow 0>1 released after stage 0 (10 ms * 2); 1>2 waits 20 ms * 2 */
			chains++;
			edges += 1;
			assert_int_equal(m->coflows[f0].release_offset_ns, 20 * MS);
			assert_int_equal(m->coflows[f0 + 1].release_offset_ns, 0);
			check_parents(m, f0, 0, NULL, 0);
			check_parents(m, f0 + 1, 1, (uint32_t[]){f0}, 40 * MS);
		} else {
			/* join: 0>2 and 0>3 after stage 0 (5 ms), 1>2 after stage 1 (6 ms) */
			assert_int_equal(job->ncoflows, 4);
			joins++;
			edges += 2;
			assert_int_equal(m->coflows[f0].release_offset_ns, 10 * MS);
			assert_int_equal(m->coflows[f0 + 1].release_offset_ns, 12 * MS);
			assert_int_equal(m->coflows[f0 + 2].release_offset_ns, 0);
			assert_int_equal(m->coflows[f0 + 3].release_offset_ns, 10 * MS);
			check_parents(m, f0, 0, NULL, 0);
			check_parents(m, f0 + 1, 0, NULL, 0);
			check_parents(m, f0 + 2, 2, (uint32_t[]){f0, f0 + 1}, 14 * MS);
			check_parents(m, f0 + 3, 0, NULL, 0);
		}
		for (uint32_t c = f0; c < f0 + job->ncoflows; c++) {
			const struct cp_coflow *co = &m->coflows[c];
			uint32_t srcs = 0, dsts = 0, seen_src[16] = {0}, seen_dst[16] = {0};

			assert_int_equal(co->job, j);
			/* 2 mappers x 3 reducers; reducer k pulls (k+1) MB / 2 * 0.5 from each */
			assert_int_equal(co->nflows, 6);
			assert_int_equal(co->total_bytes, 3 * MIB);
			for (uint32_t i = 0; i < 6; i++) {
				const struct cp_flow *f = &m->flows[co->first_flow + i];

				assert_int_equal(f->bytes, (i / 2 + 1) * MIB / 4);
				srcs += seen_src[f->src]++ == 0;
				dsts += seen_dst[f->dst]++ == 0;
			}
			assert_int_equal(srcs, 2);
			assert_int_equal(dsts, 3);
		}
	}
	assert_int_equal(m->ncoflows, coflows);
	assert_int_equal(m->nedges, edges);
	assert_true(chains > 10 && joins > 10);
	cp_model_free(m);
	cp_model_free(fb);
	sim_dags_free(d);
	topo_free(t);
}

static void test_gen_clamp_width(void **state)
{
	struct sim_dags *d = dags_str(two_dags);
	struct cp_model *fb = fb_str(one_fb);
	struct topo *t = topo_new_bigswitch(2, TOPO_DEFAULT_BPS);
	struct sim_gen_params p;
	struct cp_model *m;

	(void)state;
	sim_gen_params_default(&p);
	p.njobs = 5;
	p.compute_scale = 0;
	m = gen_ok(&p, d, fb, t);
	for (uint32_t c = 0; c < m->ncoflows; c++) {
		const struct cp_coflow *co = &m->coflows[c];

		/* 2 hosts: 2 mappers x 2 reducers (the first two: 1 and 2 MB) */
		assert_int_equal(co->nflows, 4);
		assert_int_equal(co->release_offset_ns, 0);
		assert_int_equal(co->total_bytes, 3 * MIB);
	}
	for (uint32_t e = 0; e < m->nedges; e++)
		assert_int_equal(m->edges[e].delay_ns, 0);
	cp_model_free(m);
	cp_model_free(fb);
	sim_dags_free(d);
	topo_free(t);
}

/* Offered load: mean job bytes * 8 / (mean inter-arrival gap * total uplink capacity). */
static double offered_load(const struct cp_model *m, const struct topo *t)
{
	double bytes = 0;
	uint64_t last = 0;

	for (uint32_t j = 0; j < m->njobs; j++) {
		bytes += (double)m->jobs[j].total_bytes;
		if (m->jobs[j].arrival_ns > last)
			last = m->jobs[j].arrival_ns;
	}
	assert_int_equal(m->jobs[0].arrival_ns, 0);
	return bytes / m->njobs * 8 / ((double)last * 1e-9 / (m->njobs - 1) * topo_total_up_bps(t));
}

static void test_gen_load(void **state)
{
	static const double loads[] = {0.1, 0.5, 0.9, 2.0};
	struct sim_dags *d = bundled_dags();
	struct cp_model *fb = bundled_fb();
	struct topo *t = topo_new_bigswitch(150, TOPO_DEFAULT_BPS);
	struct sim_gen_params p;

	(void)state;
	sim_gen_params_default(&p);
	p.njobs = 30;
	p.bytes_scale = 0.01;
	for (size_t i = 0; i < sizeof(loads) / sizeof(loads[0]); i++) {
		struct cp_model *m;
		double got;

		p.load = loads[i];
		p.seed = 10 + i;
		m = gen_ok(&p, d, fb, t);
		got = offered_load(m, t);
		if (fabs(got - loads[i]) > 0.01 * loads[i])
			fail_msg("load %g: offered %g", loads[i], got);
		cp_model_free(m);
	}
	cp_model_free(fb);
	sim_dags_free(d);
	topo_free(t);
}

static void test_gen_weights_and_arrivals(void **state)
{
	struct sim_dags *d = dags_str(two_dags);
	struct cp_model *fb = fb_str(one_fb);
	struct topo *t = topo_new_bigswitch(16, TOPO_DEFAULT_BPS);
	struct sim_gen_params p;
	struct cp_model *m;
	uint32_t count[4] = {0};

	(void)state;
	sim_gen_params_default(&p);
	p.njobs = 400;
	p.weight_max = 3.5; /* integers 1..3 */
	m = gen_ok(&p, d, fb, t);
	for (uint32_t j = 0; j < m->njobs; j++) {
		double w = m->jobs[j].weight;

		assert_true(w >= 1 && w <= 3 && w == floor(w));
		count[(int)w]++;
		if (j > 0)
			assert_true(m->jobs[j].arrival_ns >= m->jobs[j - 1].arrival_ns);
	}
	assert_true(count[1] > 80 && count[2] > 80 && count[3] > 80);
	/* Poisson: gaps vary (coefficient of variation near 1) */
	{
		double mean = (double)m->jobs[m->njobs - 1].arrival_ns / (m->njobs - 1), var = 0;

		for (uint32_t j = 1; j < m->njobs; j++) {
			double g =
				(double)(m->jobs[j].arrival_ns - m->jobs[j - 1].arrival_ns) - mean;

			var += g * g;
		}
		var /= m->njobs - 1;
		assert_true(sqrt(var) / mean > 0.7 && sqrt(var) / mean < 1.3);
	}
	cp_model_free(m);
	cp_model_free(fb);
	sim_dags_free(d);
	topo_free(t);
}

static void test_gen_single_job(void **state)
{
	struct sim_dags *d = dags_str(two_dags);
	struct cp_model *fb = fb_str(one_fb);
	struct topo *t = topo_new_bigswitch(16, TOPO_DEFAULT_BPS);
	struct sim_gen_params p;
	struct cp_model *m;

	(void)state;
	sim_gen_params_default(&p);
	p.njobs = 1;
	m = gen_ok(&p, d, fb, t);
	assert_int_equal(m->njobs, 1);
	assert_int_equal(m->jobs[0].arrival_ns, 0);
	cp_model_free(m);
	cp_model_free(fb);
	sim_dags_free(d);
	topo_free(t);
}

static void test_gen_round_trip(void **state)
{
	struct sim_dags *d = bundled_dags();
	struct cp_model *fb = bundled_fb();
	struct topo *t = topo_new_bigswitch(64, TOPO_DEFAULT_BPS);
	struct loom_err err = {{0}};
	struct sim_gen_params p;
	struct cp_model *m, *back;
	char *text, *text2;
	size_t len, len2;
	uint32_t nhosts = 0;

	(void)state;
	sim_gen_params_default(&p);
	p.njobs = 10;
	p.weight_max = 9;
	p.compute_scale = 0.37;
	m = gen_ok(&p, d, fb, t);
	text = write_str(m, &len);
	back = sim_trace_parse(text, len, "gen.txt", SIM_TRACE_LOOM, &nhosts, &err);
	if (!back)
		fail_msg("%s", err.msg);
	assert_int_equal(nhosts, 64);
	assert_int_equal(back->nedges, m->nedges);
	assert_int_equal(back->nflows, m->nflows);
	for (uint32_t e = 0; e < m->nedges; e++) {
		assert_int_equal(back->edges[e].parent, m->edges[e].parent);
		assert_int_equal(back->edges[e].child, m->edges[e].child);
		assert_int_equal(back->edges[e].delay_ns, m->edges[e].delay_ns);
	}
	for (uint32_t c = 0; c < m->ncoflows; c++)
		assert_int_equal(back->coflows[c].release_offset_ns,
				 m->coflows[c].release_offset_ns);
	text2 = write_str(back, &len2);
	assert_int_equal(len, len2);
	assert_memory_equal(text, text2, len);
	free(text);
	free(text2);
	cp_model_free(back);
	cp_model_free(m);
	cp_model_free(fb);
	sim_dags_free(d);
	topo_free(t);
}

static void expect_gen_error(const struct sim_gen_params *p, const struct sim_dags *d,
			     const struct cp_model *fb, const struct topo *t, const char *reason)
{
	struct loom_err err = {{0}};
	struct cp_model *m;

	errno = 0;
	m = sim_gen(p, d, fb, t, &err);
	if (m) {
		cp_model_free(m);
		fail_msg("accepted; expected '%s'", reason);
	}
	assert_int_equal(errno, EINVAL);
	if (!strstr(err.msg, reason))
		fail_msg("message '%s' lacks '%s'", err.msg, reason);
}

static void test_gen_bad_params(void **state)
{
	struct sim_dags *d = dags_str(two_dags);
	struct sim_dags *flat = dags_str("flat 1 1 0 | 1:1 |\n");
	struct cp_model *fb = fb_str(one_fb);
	struct topo *t = topo_new_bigswitch(16, TOPO_DEFAULT_BPS);
	struct sim_gen_params p, ok;

	(void)state;
	sim_gen_params_default(&ok);
	p = ok;
	p.njobs = 0;
	expect_gen_error(&p, d, fb, t, "job count must be > 0");
	p = ok;
	p.load = 0;
	expect_gen_error(&p, d, fb, t, "load must be a finite number > 0");
	p.load = -1;
	expect_gen_error(&p, d, fb, t, "load must be a finite number > 0");
	p.load = NAN;
	expect_gen_error(&p, d, fb, t, "load must be a finite number > 0");
	p.load = INFINITY;
	expect_gen_error(&p, d, fb, t, "load must be a finite number > 0");
	p = ok;
	p.compute_scale = -1;
	expect_gen_error(&p, d, fb, t, "compute scale");
	p.compute_scale = NAN;
	expect_gen_error(&p, d, fb, t, "compute scale");
	p.compute_scale = 1e300;
	expect_gen_error(&p, d, fb, t, "compute time is out of range");
	p = ok;
	p.bytes_scale = 0;
	expect_gen_error(&p, d, fb, t, "bytes scale");
	p.bytes_scale = INFINITY;
	expect_gen_error(&p, d, fb, t, "bytes scale");
	p.bytes_scale = 1e300;
	expect_gen_error(&p, d, fb, t, "bytes scale too large");
	p = ok;
	p.weight_max = 0.5;
	expect_gen_error(&p, d, fb, t, "maximum weight");
	p.weight_max = NAN;
	expect_gen_error(&p, d, fb, t, "maximum weight");
	p = ok;
	p.load = 1e-300;
	expect_gen_error(&p, d, fb, t, "load too low");
	expect_gen_error(&ok, flat, fb, t, "DAG flat-q1 has no edges");
	expect_gen_error(NULL, d, fb, t, "missing");
	expect_gen_error(&ok, NULL, fb, t, "missing");
	expect_gen_error(&ok, d, NULL, t, "missing");
	expect_gen_error(&ok, d, fb, NULL, "missing");
	cp_model_free(fb);
	sim_dags_free(d);
	sim_dags_free(flat);
	topo_free(t);
}

int main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_dags_small),
		cmocka_unit_test(test_dags_bundled),
		cmocka_unit_test(test_dags_load_missing),
		cmocka_unit_test(test_gen_defaults),
		cmocka_unit_test(test_gen_deterministic),
		cmocka_unit_test(test_gen_structure),
		cmocka_unit_test(test_gen_clamp_width),
		cmocka_unit_test(test_gen_load),
		cmocka_unit_test(test_gen_weights_and_arrivals),
		cmocka_unit_test(test_gen_single_job),
		cmocka_unit_test(test_gen_round_trip),
		cmocka_unit_test(test_gen_bad_params),
	};
	size_t nfixed = sizeof(fixed) / sizeof(fixed[0]);
	size_t nbad = sizeof(bad_dags_cases) / sizeof(bad_dags_cases[0]);
	struct CMUnitTest *tests = calloc(nfixed + nbad, sizeof(*tests));
	int r;

	if (!tests)
		return 1;
	memcpy(tests, fixed, sizeof(fixed));
	for (size_t i = 0; i < nbad; i++)
		tests[nfixed + i] = (struct CMUnitTest){
			.name = bad_dags_cases[i].name,
			.test_func = test_dags_bad,
			.initial_state = (void *)&bad_dags_cases[i],
		};
	r = _cmocka_run_group_tests("gen", tests, nfixed + nbad, NULL, NULL);
	free(tests);
	return r;
}
