/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of controlplane/sim/report.c: distributions, summaries of a
 * hand-finished model, the CSV writers, the table and the gnuplot plots.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controlplane/sim/sim.h"
#include "tests/precond.h"

/* 8 Gbit/s ports: one byte per nanosecond, so isolation times are byte counts. */
#define PORT_BPS 8000000000ULL
#define TEN_MIB  10485760ULL

#define C100_ISO_NS    2000000ULL /* 2 x 1 MB into host 1 */
#define C200_ISO_NS    TEN_MIB    /* one 10 MiB flow */
#define C201_ISO_NS    60000ULL   /* 60 x 1000 B into host 3 */
#define C100_CCT_NS    (2 * C100_ISO_NS)
#define C200_CCT_NS    (3 * C200_ISO_NS)
#define C201_CCT_NS    (4 * C201_ISO_NS)
#define J20_ARRIVAL_NS 1000000ULL
#define C200_FINISH_NS (J20_ARRIVAL_NS + C200_CCT_NS)
#define C201_FINISH_NS (C200_FINISH_NS + C201_CCT_NS)
#define TOTAL_BYTES    (2000000ULL + TEN_MIB + 60000ULL)

struct fixture {
	struct topo *topo;
	struct cp_model *m;
	struct sim_stats st;
	uint64_t iso100_ns, iso200_ns, iso201_ns; /* as cp_coflow_isolation_ns() rounds them */
	char dir[64];
};

static void expect_close(double got, double want)
{
	double tol = 1e-9 * (fabs(want) > 1 ? fabs(want) : 1);

	if (fabs(got - want) > tol)
		fail_msg("got %.12g, want %.12g", got, want);
}

static struct cp_coflow *coflow_by_ext(struct cp_model *m, uint64_t id)
{
	for (uint32_t c = 0; c < m->ncoflows; c++)
		if (m->coflows[c].ext_id == id)
			return &m->coflows[c];
	fail_msg("no coflow %llu", (unsigned long long)id);
	return NULL;
}

static struct cp_job *job_by_ext(struct cp_model *m, uint64_t id)
{
	for (uint32_t j = 0; j < m->njobs; j++)
		if (m->jobs[j].ext_id == id)
			return &m->jobs[j];
	fail_msg("no job %llu", (unsigned long long)id);
	return NULL;
}

static void set_done(struct cp_coflow *c, uint64_t release_ns, uint64_t finish_ns)
{
	c->state = CP_COFLOW_DONE;
	c->release_ns = release_ns;
	c->finish_ns = finish_ns;
	c->flows_left = 0;
}

/*
 * Two jobs on a 4-host big switch:
 *   job 10 (arrival 0, weight 1): coflow 100, flows 0->1 and 2->1 of 1 MB (short-narrow);
 *   job 20 (arrival 1 ms, weight 3): coflow 200, one 10 MiB flow 0->3 (long-narrow),
 *     then its child 201, 60 flows of 1000 B into host 3 (short-wide).
 * Slowdowns are 2, 3 and 4.
 */
static struct cp_model *build_model(const struct topo *t)
{
	struct loom_err err;
	struct cp_builder *b = cp_builder_new(4);
	struct cp_model *m;

	assert_non_null(b);
	assert_int_equal(cp_builder_add_job(b, 10, 0, 1.0, &err), 0);
	assert_int_equal(cp_builder_add_job(b, 20, J20_ARRIVAL_NS, 3.0, &err), 0);
	assert_int_equal(cp_builder_add_coflow(b, 100, 10, 0, &err), 0);
	assert_int_equal(cp_builder_add_coflow(b, 200, 20, 0, &err), 0);
	assert_int_equal(cp_builder_add_coflow(b, 201, 20, 0, &err), 0);
	assert_int_equal(cp_builder_add_flow(b, 100, 0, 1, 1000000, &err), 0);
	assert_int_equal(cp_builder_add_flow(b, 100, 2, 1, 1000000, &err), 0);
	assert_int_equal(cp_builder_add_flow(b, 200, 0, 3, TEN_MIB, &err), 0);
	for (uint32_t i = 0; i < 60; i++)
		assert_int_equal(cp_builder_add_flow(b, 201, i % 3, 3, 1000, &err), 0);
	assert_int_equal(cp_builder_add_edge(b, 200, 201, 0, &err), 0);
	m = cp_builder_finish(b, &err);
	if (!m)
		fail_msg("cp_builder_finish: %s", loom_err_str(&err));
	assert_int_equal(cp_model_bind(m, t), 0);
	cp_model_reset(m);

	set_done(coflow_by_ext(m, 100), 0, C100_CCT_NS);
	set_done(coflow_by_ext(m, 200), J20_ARRIVAL_NS, C200_FINISH_NS);
	set_done(coflow_by_ext(m, 201), C200_FINISH_NS, C201_FINISH_NS);
	for (uint32_t f = 0; f < m->nflows; f++) {
		m->flows[f].done = true;
		m->flows[f].remaining_bytes = 0;
		m->flows[f].finish_ns = m->coflows[m->flows[f].coflow].finish_ns;
	}
	job_by_ext(m, 10)->state = CP_JOB_DONE;
	job_by_ext(m, 10)->finish_ns = C100_CCT_NS;
	job_by_ext(m, 10)->coflows_left = 0;
	job_by_ext(m, 20)->state = CP_JOB_DONE;
	job_by_ext(m, 20)->finish_ns = C201_FINISH_NS;
	job_by_ext(m, 20)->coflows_left = 0;
	m->jobs_arrived = m->jobs_done = 2;
	m->coflows_done = 3;
	m->nactive = 0;
	return m;
}

/* Returns coflow ext_id's isolation time, checked to be want_ns give or take 1 ns rounding. */
static uint64_t isolation(struct cp_model *m, uint64_t ext_id, uint64_t want_ns)
{
	double *scratch = calloc(m->topo->nports, sizeof(*scratch));
	uint64_t got;

	assert_non_null(scratch);
	got = cp_coflow_isolation_ns(m, cp_coflow_index(m, coflow_by_ext(m, ext_id)), scratch);
	free(scratch);
	if (got + 1 < want_ns || got > want_ns + 1)
		fail_msg("coflow %llu isolation %llu ns, want %llu", (unsigned long long)ext_id,
			 (unsigned long long)got, (unsigned long long)want_ns);
	return got;
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	fx->topo = topo_new_bigswitch(4, PORT_BPS);
	assert_non_null(fx->topo);
	fx->m = build_model(fx->topo);
	fx->iso100_ns = isolation(fx->m, 100, C100_ISO_NS);
	fx->iso200_ns = isolation(fx->m, 200, C200_ISO_NS);
	fx->iso201_ns = isolation(fx->m, 201, C201_ISO_NS);
	fx->st.makespan_ns = C201_FINISH_NS;
	fx->st.steps = 7;
	fx->st.decisions = 5;
	fx->st.events = 11;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/loom-test-report-XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	*state = fx;
	return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	nftw(fx->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	cp_model_free(fx->m);
	topo_free(fx->topo);
	free(fx);
	return 0;
}

/* Reads a whole file into a NUL-terminated malloc'd buffer (caller frees). */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long len;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc((size_t)len + 1, 1);
	if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static long file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static void test_dist_small(void **state)
{
	double v[] = {5, 1, 4, 2, 3};
	struct sim_dist d;

	(void)state;
	sim_dist_compute(v, 5, &d);
	assert_int_equal(d.n, 5);
	expect_close(d.avg, 3);
	expect_close(d.p50, 3); /* rank ceil(2.5) = 3 */
	expect_close(d.p95, 5);
	expect_close(d.p99, 5);
	expect_close(d.max, 5);
	expect_close(v[0], 1); /* sorted in place */
	expect_close(v[4], 5);
}

static void test_dist_hundred(void **state)
{
	double v[100], one = 7.5;
	struct sim_dist d;

	(void)state;
	for (int i = 0; i < 100; i++)
		v[i] = (double)((i * 37) % 100 + 1); /* 1 .. 100, shuffled */
	sim_dist_compute(v, 100, &d);
	assert_int_equal(d.n, 100);
	expect_close(d.avg, 50.5);
	expect_close(d.p50, 50);
	expect_close(d.p95, 95);
	expect_close(d.p99, 99);
	expect_close(d.max, 100);

	/* 20 values: p95 rank is exactly 19, p99 rank ceil(19.8) = 20. */
	for (int i = 0; i < 20; i++)
		v[i] = (double)(20 - i);
	sim_dist_compute(v, 20, &d);
	expect_close(d.p50, 10);
	expect_close(d.p95, 19);
	expect_close(d.p99, 20);

	sim_dist_compute(&one, 1, &d);
	assert_int_equal(d.n, 1);
	expect_close(d.avg, 7.5);
	expect_close(d.p50, 7.5);
	expect_close(d.p99, 7.5);
	expect_close(d.max, 7.5);
}

static void test_dist_empty(void **state)
{
	struct sim_dist d;

	(void)state;
	memset(&d, 0xff, sizeof(d));
	sim_dist_compute(NULL, 0, &d);
	assert_int_equal(d.n, 0);
	expect_close(d.avg, 0);
	expect_close(d.p50, 0);
	expect_close(d.p95, 0);
	expect_close(d.p99, 0);
	expect_close(d.max, 0);
}

static void test_summarise(void **state)
{
	struct fixture *fx = *state;
	struct sim_summary s;
	double j10 = C100_CCT_NS / 1e9, j20 = (C201_FINISH_NS - J20_ARRIVAL_NS) / 1e9;
	double makespan_s = C201_FINISH_NS / 1e9;

	/* The fixture's bins are what the Varys thresholds say. */
	assert_int_equal(cp_coflow_bin(coflow_by_ext(fx->m, 100)), CP_BIN_SN);
	assert_int_equal(cp_coflow_bin(coflow_by_ext(fx->m, 200)), CP_BIN_LN);
	assert_int_equal(cp_coflow_bin(coflow_by_ext(fx->m, 201)), CP_BIN_SW);

	assert_int_equal(sim_summarise(fx->m, &fx->st, "fifo/K8", &s), 0);
	assert_string_equal(s.label, "fifo/K8");

	assert_int_equal(s.cct_s.n, 3);
	expect_close(s.cct_s.avg, (C100_CCT_NS + C200_CCT_NS + C201_CCT_NS) / 3.0 / 1e9);
	expect_close(s.cct_s.p50, C100_CCT_NS / 1e9);
	expect_close(s.cct_s.max, C200_CCT_NS / 1e9);

	assert_int_equal(s.bin_cct_s[CP_BIN_SN].n, 1);
	expect_close(s.bin_cct_s[CP_BIN_SN].avg, C100_CCT_NS / 1e9);
	assert_int_equal(s.bin_cct_s[CP_BIN_LN].n, 1);
	expect_close(s.bin_cct_s[CP_BIN_LN].avg, C200_CCT_NS / 1e9);
	assert_int_equal(s.bin_cct_s[CP_BIN_SW].n, 1);
	expect_close(s.bin_cct_s[CP_BIN_SW].p95, C201_CCT_NS / 1e9);
	assert_int_equal(s.bin_cct_s[CP_BIN_LW].n, 0);
	expect_close(s.bin_cct_s[CP_BIN_LW].avg, 0);

	assert_int_equal(s.jct_s.n, 2);
	expect_close(s.jct_s.avg, (j10 + j20) / 2);
	expect_close(s.jct_s.max, j20);
	expect_close(s.avg_wjct_s, (1.0 * j10 + 3.0 * j20) / 2);

	expect_close(s.avg_isolation_s,
		     (double)(fx->iso100_ns + fx->iso200_ns + fx->iso201_ns) / 3.0 / 1e9);
	expect_close(s.avg_cct_slowdown, ((double)C100_CCT_NS / (double)fx->iso100_ns +
					  (double)C200_CCT_NS / (double)fx->iso200_ns +
					  (double)C201_CCT_NS / (double)fx->iso201_ns) /
						 3.0);
	assert_true(fabs(s.avg_cct_slowdown - 3.0) < 1e-3);

	/* Job bounds: job 10 is coflow 100 alone; job 20 is the chain 200 -> 201. */
	expect_close(s.avg_job_isolation_s,
		     (double)(fx->iso100_ns + fx->iso200_ns + fx->iso201_ns) / 2.0 / 1e9);
	expect_close(s.avg_wjob_isolation_s,
		     (1.0 * (double)fx->iso100_ns + 3.0 * (double)(fx->iso200_ns + fx->iso201_ns)) /
			     2.0 / 1e9);
	expect_close(s.avg_jct_slowdown, ((double)C100_CCT_NS / (double)fx->iso100_ns +
					  (double)(C201_FINISH_NS - J20_ARRIVAL_NS) /
						  (double)(fx->iso200_ns + fx->iso201_ns)) /
						 2.0);

	expect_close(s.makespan_s, makespan_s);
	expect_close(s.utilisation, TOTAL_BYTES * 8.0 / (4.0 * PORT_BPS * makespan_s));
	assert_int_equal(s.stats.steps, 7);
	assert_int_equal(s.stats.decisions, 5);
	assert_int_equal(s.stats.makespan_ns, C201_FINISH_NS);
}

static void test_coflows_csv(void **state)
{
	struct fixture *fx = *state;
	char path[128], row[256], *text;

	snprintf(path, sizeof(path), "%s/coflows.csv", fx->dir);
	assert_int_equal(sim_write_coflows_csv(fx->m, path), 0);
	text = slurp(path);
	assert_non_null(text);
	assert_memory_equal(text,
			    "coflow_id,job_id,release_ns,finish_ns,cct_ns,bytes,width,bin,"
			    "isolation_ns\n",
			    strlen("coflow_id,job_id,release_ns,finish_ns,cct_ns,bytes,width,bin,"
				   "isolation_ns\n"));
	snprintf(row, sizeof(row), "\n100,10,0,%llu,%llu,2000000,2,%s,%llu\n",
		 (unsigned long long)C100_CCT_NS, (unsigned long long)C100_CCT_NS,
		 cp_bin_name(CP_BIN_SN), (unsigned long long)fx->iso100_ns);
	if (!strstr(text, row))
		fail_msg("no row %s in:\n%s", row + 1, text);
	snprintf(row, sizeof(row), "\n201,20,%llu,%llu,%llu,60000,60,%s,%llu\n",
		 (unsigned long long)C200_FINISH_NS, (unsigned long long)C201_FINISH_NS,
		 (unsigned long long)C201_CCT_NS, cp_bin_name(CP_BIN_SW),
		 (unsigned long long)fx->iso201_ns);
	if (!strstr(text, row))
		fail_msg("no row %s in:\n%s", row + 1, text);
	free(text);

	assert_int_equal(sim_write_coflows_csv(fx->m, "/nonexistent-dir/x.csv"), -ENOENT);
}

static void test_jobs_csv(void **state)
{
	struct fixture *fx = *state;
	char path[128], row[256], *text;

	snprintf(path, sizeof(path), "%s/jobs.csv", fx->dir);
	assert_int_equal(sim_write_jobs_csv(fx->m, path), 0);
	text = slurp(path);
	assert_non_null(text);
	assert_memory_equal(text, "job_id,arrival_ns,finish_ns,jct_ns,weight\n",
			    strlen("job_id,arrival_ns,finish_ns,jct_ns,weight\n"));
	snprintf(row, sizeof(row), "\n10,0,%llu,%llu,1\n", (unsigned long long)C100_CCT_NS,
		 (unsigned long long)C100_CCT_NS);
	if (!strstr(text, row))
		fail_msg("no row %s in:\n%s", row + 1, text);
	snprintf(row, sizeof(row), "\n20,%llu,%llu,%llu,3\n", (unsigned long long)J20_ARRIVAL_NS,
		 (unsigned long long)C201_FINISH_NS,
		 (unsigned long long)(C201_FINISH_NS - J20_ARRIVAL_NS));
	if (!strstr(text, row))
		fail_msg("no row %s in:\n%s", row + 1, text);
	free(text);
}

static int count_fields(const char *line)
{
	int n = 1;

	for (; *line && *line != '\n'; line++)
		n += *line == ',';
	return n;
}

static void test_summary_csv(void **state)
{
	struct fixture *fx = *state;
	struct sim_summary s[2];
	char path[128], *text, *row;

	assert_int_equal(sim_summarise(fx->m, &fx->st, "fifo", &s[0]), 0);
	assert_int_equal(sim_summarise(fx->m, &fx->st, "sebf,K8", &s[1]), 0);
	snprintf(path, sizeof(path), "%s/summary.csv", fx->dir);
	assert_int_equal(sim_write_summary_csv(s, 2, path), 0);
	text = slurp(path);
	assert_non_null(text);
	assert_memory_equal(text, "label,coflows,avg_cct_s,", strlen("label,coflows,avg_cct_s,"));
	for (const char *col = "p95_cct_s\0p99_cct_s\0avg_jct_s\0p95_jct_s\0avg_wjct_s\0"
			       "avg_isolation_s\0avg_cct_slowdown\0avg_job_isolation_s\0"
			       "avg_wjob_isolation_s\0avg_jct_slowdown\0makespan_s\0utilisation\0"
			       "steps\0decisions\0wall_s\0";
	     *col; col += strlen(col) + 1)
		if (!strstr(text, col))
			fail_msg("no column %s", col);
	row = strchr(text, '\n');
	assert_non_null(row);
	row++;
	assert_memory_equal(row, "fifo,3,", strlen("fifo,3,"));
	assert_int_equal(count_fields(row), count_fields(text));
	row = strchr(row, '\n');
	assert_non_null(row);
	row++;
	assert_memory_equal(row, "\"sebf,K8\",3,", strlen("\"sebf,K8\",3,"));
	free(text);
}

static void test_print_table(void **state)
{
	struct fixture *fx = *state;
	struct sim_summary s[2];
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	assert_int_equal(sim_summarise(fx->m, &fx->st, "fifo", &s[0]), 0);
	s[1] = s[0];
	snprintf(s[1].label, sizeof(s[1].label), "loom-gnn");
	s[1].cct_s.avg = s[0].cct_s.avg / 2;
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	sim_print_table(f, s, 2);
	fclose(f);
	if (!strstr(buf, "normalised to fifo") || !strstr(buf, "0.500x") ||
	    !strstr(buf, "1.000x") || !strstr(buf, "loom-gnn") || !strstr(buf, "JCT slow") ||
	    !strstr(buf, "(isolation bound)"))
		fail_msg("unexpected table:\n%s", buf);
	free(buf);
}

static void test_label_file(void **state)
{
	char buf[16];

	(void)state;
	assert_string_equal(sim_label_file("fifo/K8", buf, sizeof(buf)), "fifo-K8");
	assert_string_equal(sim_label_file("a b.c_d-e", buf, sizeof(buf)), "a-b.c_d-e");
	assert_string_equal(sim_label_file("..", buf, sizeof(buf)), "-.");
	assert_string_equal(sim_label_file("", buf, sizeof(buf)), "run");
	assert_string_equal(sim_label_file("0123456789abcdefghij", buf, sizeof(buf)),
			    "0123456789abcde");
}

static void test_plots(void **state)
{
	struct fixture *fx = *state;
	static const char *const labels[] = {"fifo", "sebf/K8"};
	static const char *const images[] = {"cct_cdf", "jct_cdf", "bars"};
	struct sim_summary s[2];
	char path[256], file[64];
	int r;

	for (int i = 0; i < 2; i++) {
		assert_int_equal(sim_summarise(fx->m, &fx->st, labels[i], &s[i]), 0);
		sim_label_file(labels[i], file, sizeof(file));
		snprintf(path, sizeof(path), "%s/%s-coflows.csv", fx->dir, file);
		assert_int_equal(sim_write_coflows_csv(fx->m, path), 0);
		snprintf(path, sizeof(path), "%s/%s-jobs.csv", fx->dir, file);
		assert_int_equal(sim_write_jobs_csv(fx->m, path), 0);
	}
	r = sim_write_plots(fx->dir, s, 2);
	assert_int_equal(r, precond_find_program("gnuplot", NULL, 0) ? 0 : 1);
	snprintf(path, sizeof(path), "%s/plots.gp", fx->dir);
	assert_true(file_size(path) > 0);
	snprintf(path, sizeof(path), "%s/sebf-K8-cct.dat", fx->dir);
	assert_true(file_size(path) > 0);
	if (r == 1) {
		print_message("gnuplot not on PATH: images not checked\n");
		return;
	}
	for (size_t i = 0; i < sizeof(images) / sizeof(images[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s.png", fx->dir, images[i]);
		if (file_size(path) <= 0)
			fail_msg("%s missing or empty", path);
		snprintf(path, sizeof(path), "%s/%s.svg", fx->dir, images[i]);
		if (file_size(path) <= 0)
			fail_msg("%s missing or empty", path);
	}
}

static void test_plots_missing_csv(void **state)
{
	struct fixture *fx = *state;
	struct sim_summary s;

	assert_int_equal(sim_summarise(fx->m, &fx->st, "absent", &s), 0);
	assert_int_equal(sim_write_plots(fx->dir, &s, 1), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dist_small),
		cmocka_unit_test(test_dist_hundred),
		cmocka_unit_test(test_dist_empty),
		cmocka_unit_test(test_label_file),
		cmocka_unit_test_setup_teardown(test_summarise, setup, teardown),
		cmocka_unit_test_setup_teardown(test_coflows_csv, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jobs_csv, setup, teardown),
		cmocka_unit_test_setup_teardown(test_summary_csv, setup, teardown),
		cmocka_unit_test_setup_teardown(test_print_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_plots, setup, teardown),
		cmocka_unit_test_setup_teardown(test_plots_missing_csv, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
