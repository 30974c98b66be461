/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Trace readers and the Loom writer: exact parses of small traces in each
 * format, the bundled FB2010 trace, one test per kind of bad input per
 * format (message "name:line: reason"), and write -> read round trips.
 * CRLF line endings (a file saved on Windows) are accepted: every good
 * trace above, the bundled FB2010 trace and the TPC-H DAG shapes parse to
 * the same model with CRLF as with LF, and every bad case fails with the
 * same "name:line: reason" (no carriage return in it).
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

#define MIB 1048576ULL
#define MS  1000000ULL

static struct cp_model *parse_str(const char *text, enum sim_trace_format fmt, uint32_t *ret_nhosts)
{
	struct loom_err err = {{0}};
	struct cp_model *m = sim_trace_parse(text, strlen(text), "t.txt", fmt, ret_nhosts, &err);

	if (!m)
		fail_msg("parse failed: %s", err.msg);
	return m;
}

static void src_path(char *buf, size_t size, const char *rel)
{
	const char *root = getenv("LOOM_SRCDIR");

	snprintf(buf, size, "%s/%s", root ? root : ".", rel);
}

static void assert_flow(const struct cp_model *m, uint32_t f, uint32_t src, uint32_t dst,
			uint64_t bytes)
{
	assert_int_equal(m->flows[f].src, src);
	assert_int_equal(m->flows[f].dst, dst);
	assert_int_equal(m->flows[f].bytes, bytes);
}

/* Every static field of a and b is equal. */
static void assert_models_equal(const struct cp_model *a, const struct cp_model *b)
{
	assert_int_equal(a->nhosts, b->nhosts);
	assert_int_equal(a->njobs, b->njobs);
	assert_int_equal(a->ncoflows, b->ncoflows);
	assert_int_equal(a->nflows, b->nflows);
	assert_int_equal(a->nedges, b->nedges);
	for (uint32_t j = 0; j < a->njobs; j++) {
		const struct cp_job *x = &a->jobs[j], *y = &b->jobs[j];

		assert_int_equal(x->ext_id, y->ext_id);
		assert_true(x->weight == y->weight);
		assert_int_equal(x->arrival_ns, y->arrival_ns);
		assert_int_equal(x->first_coflow, y->first_coflow);
		assert_int_equal(x->ncoflows, y->ncoflows);
		assert_int_equal(x->total_bytes, y->total_bytes);
	}
	for (uint32_t c = 0; c < a->ncoflows; c++) {
		const struct cp_coflow *x = &a->coflows[c], *y = &b->coflows[c];

		assert_int_equal(x->ext_id, y->ext_id);
		assert_int_equal(x->job, y->job);
		assert_int_equal(x->first_flow, y->first_flow);
		assert_int_equal(x->nflows, y->nflows);
		assert_int_equal(x->first_parent, y->first_parent);
		assert_int_equal(x->nparents, y->nparents);
		assert_int_equal(x->first_child, y->first_child);
		assert_int_equal(x->nchildren, y->nchildren);
		assert_int_equal(x->release_offset_ns, y->release_offset_ns);
		assert_int_equal(x->total_bytes, y->total_bytes);
		assert_int_equal(x->max_flow_bytes, y->max_flow_bytes);
	}
	for (uint32_t f = 0; f < a->nflows; f++) {
		assert_int_equal(a->flows[f].coflow, b->flows[f].coflow);
		assert_int_equal(a->flows[f].src, b->flows[f].src);
		assert_int_equal(a->flows[f].dst, b->flows[f].dst);
		assert_int_equal(a->flows[f].bytes, b->flows[f].bytes);
	}
	for (uint32_t e = 0; e < a->nedges; e++) {
		assert_int_equal(a->edges[e].parent, b->edges[e].parent);
		assert_int_equal(a->edges[e].child, b->edges[e].child);
		assert_int_equal(a->edges[e].delay_ns, b->edges[e].delay_ns);
		assert_int_equal(a->child_edge[e], b->child_edge[e]);
	}
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

/* Writes m, reads it back, checks the models and a second write are identical. */
static void assert_round_trip(const struct cp_model *m)
{
	struct loom_err err = {{0}};
	struct cp_model *back;
	size_t len, len2;
	char *text = write_str(m, &len), *text2;
	uint32_t nhosts = 0;

	back = sim_trace_parse(text, len, "rt.txt", SIM_TRACE_LOOM, &nhosts, &err);
	if (!back)
		fail_msg("reading back failed: %s", err.msg);
	assert_int_equal(nhosts, m->nhosts);
	assert_models_equal(m, back);
	text2 = write_str(back, &len2);
	assert_int_equal(len, len2);
	assert_memory_equal(text, text2, len);
	free(text);
	free(text2);
	cp_model_free(back);
}

/* ---- good inputs ----------------------------------------------------------- */

static void test_format_names(void **state)
{
	enum sim_trace_format fmt;

	(void)state;
	assert_int_equal(sim_trace_format_parse("fb", &fmt), 0);
	assert_int_equal(fmt, SIM_TRACE_FB);
	assert_int_equal(sim_trace_format_parse("sincronia", &fmt), 0);
	assert_int_equal(fmt, SIM_TRACE_SINCRONIA);
	assert_int_equal(sim_trace_format_parse("loom", &fmt), 0);
	assert_int_equal(fmt, SIM_TRACE_LOOM);
	assert_int_equal(sim_trace_format_parse("FB", &fmt), -EINVAL);
	assert_int_equal(sim_trace_format_parse("", &fmt), -EINVAL);
	assert_int_equal(sim_trace_format_parse(NULL, &fmt), -EINVAL);
	assert_string_equal(sim_trace_format_name(SIM_TRACE_FB), "fb");
	assert_string_equal(sim_trace_format_name(SIM_TRACE_SINCRONIA), "sincronia");
	assert_string_equal(sim_trace_format_name(SIM_TRACE_LOOM), "loom");
}

static void test_fb_small(void **state)
{
	/* no trailing newline, a blank line and a comment: all fine */
	static const char text[] = "4 4\n"
				   "1 0 2 0 1 2 2:1.0 3:2\n"
				   "\n"
				   "# a comment\n"
				   "2 1500 1 3 1 0:0.5\n"
				   "3 2000 3 0 1 2 1 3:1\n"
				   "4 7 1 1 1 1:0.0000001";
	uint32_t nhosts = 0;
	struct cp_model *m = parse_str(text, SIM_TRACE_FB, &nhosts);

	(void)state;
	assert_int_equal(nhosts, 4);
	assert_int_equal(m->nhosts, 4);
	assert_int_equal(m->njobs, 4);
	assert_int_equal(m->ncoflows, 4);
	assert_int_equal(m->nflows, 4 + 1 + 3 + 1);
	assert_int_equal(m->nedges, 0);
	/* jobs sorted by arrival: 1 (0), 4 (7 ms), 2 (1500 ms), 3 (2000 ms) */
	assert_int_equal(m->jobs[0].ext_id, 1);
	assert_int_equal(m->jobs[1].ext_id, 4);
	assert_int_equal(m->jobs[2].ext_id, 2);
	assert_int_equal(m->jobs[3].ext_id, 3);
	assert_int_equal(m->jobs[1].arrival_ns, 7 * MS);
	assert_int_equal(m->jobs[2].arrival_ns, 1500 * MS);
	assert_int_equal(m->jobs[3].arrival_ns, 2000 * MS);
	for (uint32_t j = 0; j < 4; j++) {
		const struct cp_coflow *c = &m->coflows[m->jobs[j].first_coflow];

		assert_true(m->jobs[j].weight == 1.0);
		assert_int_equal(m->jobs[j].ncoflows, 1);
		assert_int_equal(c->ext_id, m->jobs[j].ext_id);
		assert_int_equal(c->release_offset_ns, 0);
	}
	/* coflow 1: each reducer pulls MB / M from each mapper, reducer by reducer */
	assert_int_equal(m->coflows[0].nflows, 4);
	assert_flow(m, m->coflows[0].first_flow + 0, 0, 2, MIB / 2);
	assert_flow(m, m->coflows[0].first_flow + 1, 1, 2, MIB / 2);
	assert_flow(m, m->coflows[0].first_flow + 2, 0, 3, MIB);
	assert_flow(m, m->coflows[0].first_flow + 3, 1, 3, MIB);
	assert_int_equal(m->coflows[0].total_bytes, 3 * MIB);
	/* coflow 4: a tiny size still makes a 1-byte flow */
	assert_flow(m, m->coflows[1].first_flow, 1, 1, 1);
	/* coflow 2 */
	assert_flow(m, m->coflows[2].first_flow, 3, 0, MIB / 2);
	/* coflow 3: 1 MB over 3 mappers rounds to 349525 bytes each */
	assert_int_equal(m->coflows[3].nflows, 3);
	for (uint32_t i = 0; i < 3; i++)
		assert_flow(m, m->coflows[3].first_flow + i, i, 3, 349525);
	cp_model_free(m);
}

static void test_fb_bundled(void **state)
{
	struct loom_err err = {{0}};
	char path[4096];
	uint32_t nhosts = 0;
	uint64_t bytes = 0;
	struct cp_model *m;

	(void)state;
	src_path(path, sizeof(path), "data/fb2010/FB2010-1Hr-150-0.txt");
	m = sim_trace_load(path, SIM_TRACE_FB, &nhosts, &err);
	if (!m)
		fail_msg("%s", err.msg);
	assert_int_equal(nhosts, 150);
	assert_int_equal(m->njobs, 526);
	assert_int_equal(m->ncoflows, 526);
	assert_int_equal(m->nflows, 706397);
	assert_int_equal(m->nedges, 0);
	for (uint32_t j = 0; j < m->njobs; j++)
		bytes += m->jobs[j].total_bytes;
	/* 35,533,534 MB in all; each flow rounds to the byte */
	assert_true(llabs((long long)bytes - (long long)(35533534ULL * MIB)) < 706397);
	assert_int_equal(m->jobs[0].arrival_ns, 0);
	assert_int_equal(m->jobs[m->njobs - 1].arrival_ns, 3629235ULL * MS);
	assert_round_trip(m);
	cp_model_free(m);
}

static void test_sincronia_small(void **state)
{
	static const char text[] = "5 3\n"
				   "0 8 2 2 1 0 1 1 3 1 2.5\n"
				   "1 10 1 1 1 4 0 1\n"
				   "2 10.5 2 1 1 2 3 4 2 3 4\n";
	uint32_t nhosts = 0;
	struct cp_model *m = parse_str(text, SIM_TRACE_SINCRONIA, &nhosts);

	(void)state;
	assert_int_equal(nhosts, 5);
	assert_int_equal(m->njobs, 3);
	assert_int_equal(m->ncoflows, 3);
	assert_int_equal(m->nflows, 5);
	assert_int_equal(m->jobs[0].ext_id, 0);
	assert_int_equal(m->jobs[0].arrival_ns, 8 * MS);
	assert_int_equal(m->jobs[1].arrival_ns, 10 * MS);
	assert_int_equal(m->jobs[2].arrival_ns, 10500 * 1000ULL);
	assert_flow(m, 0, 0, 1, MIB);
	assert_flow(m, 1, 3, 1, 5 * MIB / 2);
	assert_flow(m, 2, 4, 0, MIB);
	/* a repeated (src, dst) pair is kept as two flows, as upstream files have them */
	assert_flow(m, 3, 2, 3, 4 * MIB);
	assert_flow(m, 4, 2, 3, 4 * MIB);
	assert_int_equal(m->coflows[2].total_bytes, 8 * MIB);
	cp_model_free(m);
}

static void test_sincronia_bundled(void **state)
{
	struct loom_err err = {{0}};
	char path[4096];
	uint32_t nhosts = 0;
	struct cp_model *m;

	(void)state;
	src_path(path, sizeof(path), "data/sincronia/526-0.9-FB-UPWS-CHUNKS.txt");
	m = sim_trace_load(path, SIM_TRACE_SINCRONIA, &nhosts, &err);
	if (!m)
		fail_msg("%s", err.msg);
	assert_int_equal(nhosts, 16);
	assert_int_equal(m->ncoflows, 526);
	assert_int_equal(m->nflows, 5249);
	assert_round_trip(m);
	cp_model_free(m);
}

static const char loom_small[] = "# two jobs\n"
				 "loom-trace 1 hosts 8   # header\n"
				 "\n"
				 "job 7 250.5 2.5\n"
				 "coflow 70 7 0\n"
				 "flow 70 0 1 1000\n"
				 "flow 70 2 1 2000\n"
				 "coflow 71 7 1.000001\n"
				 "flow 71 1 3 500\n"
				 "coflow 72 7 0\n"
				 "edge 70 72 12.25\n"
				 "edge 71 72 0\n"
				 "flow 72 3 7 42\n"
				 "job 3 1000 1\n"
				 "coflow 30 3 0.000001\n"
				 "flow 30 5 5 1\n";

static void test_loom_small(void **state)
{
	uint32_t nhosts = 0;
	struct cp_model *m = parse_str(loom_small, SIM_TRACE_LOOM, &nhosts);
	const struct cp_coflow *c72;

	(void)state;
	assert_int_equal(nhosts, 8);
	assert_int_equal(m->njobs, 2);
	assert_int_equal(m->ncoflows, 4);
	assert_int_equal(m->nflows, 5);
	assert_int_equal(m->nedges, 2);
	assert_int_equal(m->jobs[0].ext_id, 7);
	assert_int_equal(m->jobs[0].arrival_ns, 250500000ULL);
	assert_true(m->jobs[0].weight == 2.5);
	assert_int_equal(m->jobs[0].ncoflows, 3);
	assert_int_equal(m->jobs[0].total_bytes, 3542);
	assert_int_equal(m->jobs[1].ext_id, 3);
	assert_int_equal(m->jobs[1].arrival_ns, 1000 * MS);
	assert_int_equal(m->coflows[1].ext_id, 71);
	assert_int_equal(m->coflows[1].release_offset_ns, 1000001);
	assert_int_equal(m->coflows[3].release_offset_ns, 1);
	c72 = &m->coflows[2];
	assert_int_equal(c72->ext_id, 72);
	assert_int_equal(c72->nparents, 2);
	assert_int_equal(m->edges[c72->first_parent].parent, 0);
	assert_int_equal(m->edges[c72->first_parent].delay_ns, 12250000ULL);
	assert_int_equal(m->edges[c72->first_parent + 1].parent, 1);
	assert_int_equal(m->edges[c72->first_parent + 1].delay_ns, 0);
	assert_int_equal(m->coflows[0].nchildren, 1);
	assert_flow(m, m->coflows[0].first_flow + 1, 2, 1, 2000);
	assert_flow(m, c72->first_flow, 3, 7, 42);
	assert_flow(m, m->coflows[3].first_flow, 5, 5, 1);
	cp_model_free(m);
}

static void test_loom_round_trip(void **state)
{
	struct cp_model *m = parse_str(loom_small, SIM_TRACE_LOOM, NULL);
	size_t len;
	char *text;

	(void)state;
	assert_round_trip(m);
	/* the writer's times are exact decimal ms */
	text = write_str(m, &len);
	assert_non_null(strstr(text, "job 7 250.5 2.5\n"));
	assert_non_null(strstr(text, "coflow 71 7 1.000001\n"));
	assert_non_null(strstr(text, "edge 70 72 12.25\n"));
	free(text);
	cp_model_free(m);
}

static void test_loom_extreme_values(void **state)
{
	static const char text[] = "loom-trace 1 hosts 1048576\n"
				   "job 18446744073709551615 4611686018427.387904 0.1\n"
				   "coflow 18446744073709551615 18446744073709551615 0.000000000\n"
				   "flow 18446744073709551615 1048575 0 4611686018427387904\n";
	struct cp_model *m = parse_str(text, SIM_TRACE_LOOM, NULL);

	(void)state;
	assert_int_equal(m->jobs[0].ext_id, UINT64_MAX);
	assert_int_equal(m->jobs[0].arrival_ns, 1ULL << 62);
	assert_true(m->jobs[0].weight == 0.1);
	assert_int_equal(m->flows[0].bytes, 1ULL << 62);
	assert_round_trip(m);
	cp_model_free(m);
}

static void test_load_missing(void **state)
{
	struct loom_err err = {{0}};
	uint32_t nhosts = 77;

	(void)state;
	errno = 0;
	assert_null(sim_trace_load("/nonexistent/trace.txt", SIM_TRACE_FB, &nhosts, &err));
	assert_int_equal(errno, ENOENT);
	assert_string_equal(err.msg, "/nonexistent/trace.txt: No such file or directory");
	assert_int_equal(nhosts, 77);
}

static void test_not_nul_terminated(void **state)
{
	/* the reader must stop at len: what follows is not part of the trace */
	static const char text[] = "2 1\n1 0 1 0 1 1:1\nGARBAGE";
	struct loom_err err = {{0}};
	struct cp_model *m;
	char *buf = malloc(sizeof(text) - 1 - 7);

	(void)state;
	memcpy(buf, text, sizeof(text) - 1 - 7);
	m = sim_trace_parse(buf, sizeof(text) - 1 - 7, "t", SIM_TRACE_FB, NULL, &err);
	if (!m)
		fail_msg("%s", err.msg);
	assert_int_equal(m->nflows, 1);
	cp_model_free(m);
	free(buf);
}

/* ---- CRLF line endings ------------------------------------------------------------ */

/* text (len bytes) with every "\n" made "\r\n"; malloc'd, NUL-terminated. */
static char *crlf_of(const char *text, size_t len, size_t *ret_len)
{
	char *out = malloc(2 * len + 1);
	size_t n = 0;

	assert_non_null(out);
	for (size_t i = 0; i < len; i++) {
		if (text[i] == '\n')
			out[n++] = '\r';
		out[n++] = text[i];
	}
	out[n] = '\0';
	*ret_len = n;
	return out;
}

/* text parses to the same model with CRLF line endings as with LF. */
static void assert_crlf_same(const char *text, size_t len, enum sim_trace_format fmt)
{
	struct loom_err err = {{0}};
	uint32_t na = 0, nb = 0;
	size_t clen;
	char *c = crlf_of(text, len, &clen);
	struct cp_model *a = sim_trace_parse(text, len, "lf.txt", fmt, &na, &err), *b;

	if (!a)
		fail_msg("LF: %s", err.msg);
	b = sim_trace_parse(c, clen, "crlf.txt", fmt, &nb, &err);
	if (!b)
		fail_msg("CRLF (%s): %s", sim_trace_format_name(fmt), err.msg);
	assert_int_equal(na, nb);
	assert_models_equal(a, b);
	cp_model_free(a);
	cp_model_free(b);
	free(c);
}

static char *read_all(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*ret_len = (size_t)n;
	return buf;
}

static void test_crlf(void **state)
{
	static const char fb[] = "4 4\n"
				 "1 0 2 0 1 2 2:1.0 3:2\n"
				 "\n"
				 "# a comment\n"
				 "2 1500 1 3 1 0:0.5\n"
				 "3 2000 3 0 1 2 1 3:1\n"
				 "4 7 1 1 1 1:0.0000001\n";
	static const char sincronia[] = "5 3\n"
					"0 8 2 2 1 0 1 1 3 1 2.5\n"
					"1 10 1 1 1 4 0 1\n"
					"2 10.5 2 1 1 2 3 4 2 3 4\n";
	struct loom_err err = {{0}};
	struct sim_dags *da, *db;
	char path[4096], *text, *c;
	size_t len, clen;

	(void)state;
	assert_crlf_same(fb, strlen(fb), SIM_TRACE_FB);
	assert_crlf_same(sincronia, strlen(sincronia), SIM_TRACE_SINCRONIA);
	assert_crlf_same(loom_small, strlen(loom_small), SIM_TRACE_LOOM);
	src_path(path, sizeof(path), "data/fb2010/FB2010-1Hr-150-0.txt");
	text = read_all(path, &len);
	assert_crlf_same(text, len, SIM_TRACE_FB);
	free(text);
	/* the DAG shapes of the workload generator */
	src_path(path, sizeof(path), "data/tpch/dags.txt");
	text = read_all(path, &len);
	c = crlf_of(text, len, &clen);
	da = sim_dags_parse(text, len, "lf.txt", &err);
	if (!da)
		fail_msg("dags LF: %s", err.msg);
	db = sim_dags_parse(c, clen, "crlf.txt", &err);
	if (!db)
		fail_msg("dags CRLF: %s", err.msg);
	assert_int_equal(da->n, db->n);
	for (uint32_t i = 0; i < da->n; i++) {
		const struct sim_dag *x = &da->dags[i], *y = &db->dags[i];

		assert_string_equal(x->label, y->label);
		assert_int_equal(x->nnodes, y->nnodes);
		assert_int_equal(x->nedges, y->nedges);
		assert_memory_equal(x->edges, y->edges, x->nedges * sizeof(x->edges[0]));
		assert_memory_equal(x->ntasks, y->ntasks, x->nnodes * sizeof(x->ntasks[0]));
		for (uint32_t k = 0; k < x->nnodes; k++)
			assert_true(x->mean_task_ms[k] == y->mean_task_ms[k]);
	}
	sim_dags_free(da);
	sim_dags_free(db);
	free(c);
	free(text);
}

/* ---- bad inputs: one named test per kind per format ------------------------------ */

struct bad_case {
	const char *name;
	enum sim_trace_format fmt;
	const char *text;
	size_t len; /* 0: strlen(text) */
	unsigned line;
	const char *reason;
};

#define BAD(n, f, t, l, r)                                                                         \
	{                                                                                          \
		.name = (n), .fmt = (f), .text = (t), .line = (l), .reason = (r)                   \
	}

static const struct bad_case bad_cases[] = {
	/* coflow-benchmark */
	BAD("fb_empty", SIM_TRACE_FB, "", 1, "empty trace"),
	BAD("fb_only_comments", SIM_TRACE_FB, "# nothing\n\n", 2, "empty trace"),
	BAD("fb_header_truncated", SIM_TRACE_FB, "4\n", 1, "truncated line"),
	BAD("fb_header_extra", SIM_TRACE_FB, "4 1 1\n1 0 1 0 1 1:1\n", 1, "extra tokens"),
	BAD("fb_header_non_numeric", SIM_TRACE_FB, "four 1\n", 1,
	    "port count 'four' is not a non-negative integer"),
	BAD("fb_header_zero_ports", SIM_TRACE_FB, "0 1\n", 1, "port count must be > 0"),
	BAD("fb_header_zero_coflows", SIM_TRACE_FB, "4 0\n", 1, "coflow count must be > 0"),
	BAD("fb_header_too_many_ports", SIM_TRACE_FB, "1048577 1\n", 1, "above the limit"),
	BAD("fb_truncated_mappers", SIM_TRACE_FB, "4 1\n1 0 2 0\n", 2, "truncated line"),
	BAD("fb_truncated_short", SIM_TRACE_FB, "4 1\n1 0\n", 2, "truncated line"),
	BAD("fb_truncated_reducers", SIM_TRACE_FB, "4 1\n1 0 1 0 2 1:1\n", 2, "truncated line"),
	BAD("fb_huge_mapper_count", SIM_TRACE_FB, "4 1\n1 0 4000000000 0 1 1:1\n", 2,
	    "truncated line"),
	BAD("fb_huge_reducer_count", SIM_TRACE_FB, "4 1\n1 0 1 0 18446744073709551615 1:1\n", 2,
	    "truncated line"),
	BAD("fb_extra_tokens", SIM_TRACE_FB, "4 1\n1 0 1 0 1 1:1 2:1\n", 2, "extra tokens"),
	BAD("fb_id_non_numeric", SIM_TRACE_FB, "4 1\nx 0 1 0 1 1:1\n", 2,
	    "coflow id 'x' is not a non-negative integer"),
	BAD("fb_id_negative", SIM_TRACE_FB, "4 1\n-1 0 1 0 1 1:1\n", 2,
	    "coflow id '-1' is not a non-negative integer"),
	BAD("fb_id_overflow", SIM_TRACE_FB, "4 1\n18446744073709551616 0 1 0 1 1:1\n", 2,
	    "out of range"),
	BAD("fb_arrival_non_numeric", SIM_TRACE_FB, "4 1\n1 abc 1 0 1 1:1\n", 2,
	    "arrival 'abc' is not a time"),
	BAD("fb_arrival_negative", SIM_TRACE_FB, "4 1\n1 -5 1 0 1 1:1\n", 2, "is not a time"),
	BAD("fb_arrival_too_precise", SIM_TRACE_FB, "4 1\n1 0.0000001 1 0 1 1:1\n", 2,
	    "is not a time"),
	BAD("fb_arrival_overflow", SIM_TRACE_FB, "4 1\n1 99999999999999 1 0 1 1:1\n", 2,
	    "out of range"),
	BAD("fb_mapper_count_zero", SIM_TRACE_FB, "4 1\n1 0 0 1 1:1\n", 2,
	    "mapper count must be > 0"),
	BAD("fb_reducer_count_zero", SIM_TRACE_FB, "4 1\n1 0 1 0 0\n", 2,
	    "reducer count must be > 0"),
	BAD("fb_mapper_port_range", SIM_TRACE_FB, "4 1\n1 0 1 4 1 1:1\n", 2,
	    "mapper port 4 >= port count 4"),
	BAD("fb_mapper_port_non_numeric", SIM_TRACE_FB, "4 1\n1 0 1 0x1 1 1:1\n", 2,
	    "mapper port '0x1' is not a non-negative integer"),
	BAD("fb_reducer_port_range", SIM_TRACE_FB, "4 1\n1 0 1 0 1 9:1\n", 2,
	    "reducer port 9 >= port count 4"),
	BAD("fb_reducer_no_colon", SIM_TRACE_FB, "4 1\n1 0 1 0 1 1\n", 2,
	    "reducer '1' is not <port>:<MB>"),
	BAD("fb_reducer_two_colons", SIM_TRACE_FB, "4 1\n1 0 1 0 1 1:1:1\n", 2,
	    "is not <port>:<MB>"),
	BAD("fb_size_non_numeric", SIM_TRACE_FB, "4 1\n1 0 1 0 1 1:x\n", 2,
	    "reducer size 'x' is not a number"),
	BAD("fb_size_empty", SIM_TRACE_FB, "4 1\n1 0 1 0 1 1:\n", 2, "is not a number"),
	BAD("fb_size_nan", SIM_TRACE_FB, "4 1\n1 0 1 0 1 1:nan\n", 2, "is not a number"),
	BAD("fb_size_inf", SIM_TRACE_FB, "4 1\n1 0 1 0 1 1:inf\n", 2, "is not a number"),
	BAD("fb_size_zero", SIM_TRACE_FB, "4 1\n1 0 1 0 1 1:0\n", 2, "must be > 0"),
	BAD("fb_size_negative", SIM_TRACE_FB, "4 1\n1 0 1 0 1 1:-2\n", 2, "must be > 0"),
	BAD("fb_size_overflow", SIM_TRACE_FB, "4 1\n1 0 1 0 1 1:1e300\n", 2, "too large"),
	BAD("fb_coflow_overflow", SIM_TRACE_FB, "4 1\n1 0 1 0 2 1:4e12 2:4e12\n", 2,
	    "coflow is too large"),
	BAD("fb_duplicate_mapper", SIM_TRACE_FB, "4 1\n1 0 2 3 3 1 1:1\n", 2,
	    "duplicate mapper port 3"),
	BAD("fb_duplicate_reducer", SIM_TRACE_FB, "4 1\n1 0 1 0 2 1:1 1:2\n", 2,
	    "duplicate reducer port 1"),
	BAD("fb_duplicate_id", SIM_TRACE_FB, "4 2\n1 0 1 0 1 1:1\n1 5 1 0 1 2:1\n", 3,
	    "duplicate coflow id 1 (first on line 2)"),
	BAD("fb_fewer_lines", SIM_TRACE_FB, "4 3\n1 0 1 0 1 1:1\n", 1,
	    "header declares 3 coflows but the trace has 1"),
	BAD("fb_more_lines", SIM_TRACE_FB, "4 1\n1 0 1 0 1 1:1\n2 0 1 0 1 1:1\n", 3,
	    "more coflow lines than the 1 the header declares"),
	BAD("fb_nul_byte", SIM_TRACE_FB, "4 1\n1 0 1\0 0 1 1:1\n", 2, "NUL byte"),
	/* Sincronia */
	BAD("sincronia_empty", SIM_TRACE_SINCRONIA, "", 1, "empty trace"),
	BAD("sincronia_header_truncated", SIM_TRACE_SINCRONIA, "16\n", 1, "truncated line"),
	BAD("sincronia_header_too_many_ports", SIM_TRACE_SINCRONIA, "99999999999 1\n", 1,
	    "above the limit"),
	BAD("sincronia_truncated", SIM_TRACE_SINCRONIA, "4 1\n0 8 1 1\n", 2, "truncated line"),
	BAD("sincronia_truncated_flows", SIM_TRACE_SINCRONIA, "4 1\n0 8 2 1 1 0 1 1 2 3\n", 2,
	    "truncated line"),
	BAD("sincronia_huge_flow_count", SIM_TRACE_SINCRONIA, "4 1\n0 8 4000000000 1 1 0 1 1\n", 2,
	    "truncated line"),
	BAD("sincronia_extra_tokens", SIM_TRACE_SINCRONIA, "4 1\n0 8 1 1 1 0 1 1 2\n", 2,
	    "extra tokens"),
	BAD("sincronia_flow_count_zero", SIM_TRACE_SINCRONIA, "4 1\n0 8 0 1 1\n", 2,
	    "flow count must be > 0"),
	BAD("sincronia_id_non_numeric", SIM_TRACE_SINCRONIA, "4 1\nid 8 1 1 1 0 1 1\n", 2,
	    "coflow id 'id' is not a non-negative integer"),
	BAD("sincronia_arrival_non_numeric", SIM_TRACE_SINCRONIA, "4 1\n0 8ms 1 1 1 0 1 1\n", 2,
	    "arrival '8ms' is not a time"),
	BAD("sincronia_count_non_numeric", SIM_TRACE_SINCRONIA, "4 1\n0 8 1 one 1 0 1 1\n", 2,
	    "source count 'one' is not a non-negative integer"),
	BAD("sincronia_src_range", SIM_TRACE_SINCRONIA, "4 1\n0 8 1 1 1 4 1 1\n", 2,
	    "source port 4 >= port count 4"),
	BAD("sincronia_dst_range", SIM_TRACE_SINCRONIA, "4 1\n0 8 1 1 1 0 5 1\n", 2,
	    "destination port 5 >= port count 4"),
	BAD("sincronia_src_non_numeric", SIM_TRACE_SINCRONIA, "4 1\n0 8 1 1 1 a 1 1\n", 2,
	    "source port 'a' is not a non-negative integer"),
	BAD("sincronia_size_zero", SIM_TRACE_SINCRONIA, "4 1\n0 8 1 1 1 0 1 0\n", 2,
	    "flow size '0' must be > 0"),
	BAD("sincronia_size_negative", SIM_TRACE_SINCRONIA, "4 1\n0 8 1 1 1 0 1 -1\n", 2,
	    "must be > 0"),
	BAD("sincronia_size_nan", SIM_TRACE_SINCRONIA, "4 1\n0 8 1 1 1 0 1 NaN\n", 2,
	    "is not a number"),
	BAD("sincronia_size_overflow", SIM_TRACE_SINCRONIA, "4 1\n0 8 1 1 1 0 1 1e19\n", 2,
	    "too large"),
	BAD("sincronia_duplicate_id", SIM_TRACE_SINCRONIA,
	    "4 2\n0 8 1 1 1 0 1 1\n0 9 1 1 1 0 1 1\n", 3,
	    "duplicate coflow id 0 (first on line 2)"),
	BAD("sincronia_fewer_lines", SIM_TRACE_SINCRONIA, "4 2\n0 8 1 1 1 0 1 1\n", 1,
	    "header declares 2 coflows but the trace has 1"),
	BAD("sincronia_more_lines", SIM_TRACE_SINCRONIA, "4 1\n0 8 1 1 1 0 1 1\n1 9 1 1 1 0 1 1\n",
	    3, "more coflow lines"),
	/* Loom */
	BAD("loom_empty", SIM_TRACE_LOOM, "", 1, "empty trace"),
	BAD("loom_header_missing", SIM_TRACE_LOOM, "job 1 0 1\n", 1,
	    "expected the header 'loom-trace 1 hosts <N>'"),
	BAD("loom_header_truncated", SIM_TRACE_LOOM, "loom-trace 1 hosts\n", 1, "truncated line"),
	BAD("loom_header_extra", SIM_TRACE_LOOM, "loom-trace 1 hosts 4 5\n", 1, "extra tokens"),
	BAD("loom_header_version", SIM_TRACE_LOOM, "loom-trace 2 hosts 4\n", 1,
	    "unsupported loom-trace version 2"),
	BAD("loom_header_keyword", SIM_TRACE_LOOM, "loom-trace 1 ports 4\n", 1,
	    "expected the header"),
	BAD("loom_header_zero_hosts", SIM_TRACE_LOOM, "loom-trace 1 hosts 0\n", 1,
	    "host count must be > 0"),
	BAD("loom_header_too_many_hosts", SIM_TRACE_LOOM, "loom-trace 1 hosts 1048577\n", 1,
	    "above the limit"),
	BAD("loom_no_jobs", SIM_TRACE_LOOM, "loom-trace 1 hosts 4\n# nothing\n", 2,
	    "trace defines no jobs"),
	BAD("loom_unknown_record", SIM_TRACE_LOOM, "loom-trace 1 hosts 4\njob 1 0 1\nstage 1\n", 3,
	    "unknown record 'stage'"),
	BAD("loom_second_header", SIM_TRACE_LOOM, "loom-trace 1 hosts 4\nloom-trace 1 hosts 4\n", 2,
	    "unknown record 'loom-trace'"),
	BAD("loom_job_truncated", SIM_TRACE_LOOM, "loom-trace 1 hosts 4\njob 1 0\n", 2,
	    "truncated line"),
	BAD("loom_job_extra", SIM_TRACE_LOOM, "loom-trace 1 hosts 4\njob 1 0 1 1\n", 2,
	    "extra tokens"),
	BAD("loom_job_id_non_numeric", SIM_TRACE_LOOM, "loom-trace 1 hosts 4\njob j1 0 1\n", 2,
	    "job id 'j1' is not a non-negative integer"),
	BAD("loom_job_arrival_bad", SIM_TRACE_LOOM, "loom-trace 1 hosts 4\njob 1 1e3 1\n", 2,
	    "arrival '1e3' is not a time"),
	BAD("loom_job_arrival_too_precise", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0.1234567 1\n", 2, "is not a time"),
	BAD("loom_job_arrival_overflow", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 4611686018427.387905 1\n", 2, "out of range"),
	BAD("loom_job_weight_non_numeric", SIM_TRACE_LOOM, "loom-trace 1 hosts 4\njob 1 0 heavy\n",
	    2, "job weight 'heavy' is not a number"),
	BAD("loom_job_weight_zero", SIM_TRACE_LOOM, "loom-trace 1 hosts 4\njob 1 0 0\n", 2,
	    "job weight '0' must be > 0"),
	BAD("loom_job_weight_negative", SIM_TRACE_LOOM, "loom-trace 1 hosts 4\njob 1 0 -1\n", 2,
	    "must be > 0"),
	BAD("loom_job_weight_nan", SIM_TRACE_LOOM, "loom-trace 1 hosts 4\njob 1 0 nan\n", 2,
	    "is not a number"),
	BAD("loom_job_duplicate", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 1 1 0\njob 1 5 1\n", 4,
	    "duplicate job id 1 (first on line 2)"),
	BAD("loom_job_without_coflows", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 1 1 0\njob 2 0 1\n", 4,
	    "job 2 has no coflows"),
	BAD("loom_coflow_truncated", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 1 1\n", 3, "truncated line"),
	BAD("loom_coflow_unknown_job", SIM_TRACE_LOOM, "loom-trace 1 hosts 4\ncoflow 1 1 0\n", 2,
	    "coflow 1 refers to job 1, not defined above"),
	BAD("loom_coflow_forward_reference", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\ncoflow 1 1 0\njob 1 0 1\n", 2, "not defined above"),
	BAD("loom_coflow_duplicate", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 1 1 0\ncoflow 1 1 0\n", 4,
	    "duplicate coflow id 1"),
	BAD("loom_coflow_offset_bad", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 1 1 -1\n", 3, "release offset '-1'"),
	BAD("loom_flow_truncated", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 1 1 0\nflow 1 0 1\n", 4, "truncated line"),
	BAD("loom_flow_extra", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 1 1 0\nflow 1 0 1 5 6\n", 4, "extra tokens"),
	BAD("loom_flow_unknown_coflow", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 1 1 0\nflow 2 0 1 5\n", 4,
	    "flow refers to coflow 2, not defined above"),
	BAD("loom_flow_src_range", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 1 1 0\nflow 1 4 1 5\n", 4,
	    "source host 4 >= host count 4"),
	BAD("loom_flow_dst_range", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 1 1 0\nflow 1 0 99 5\n", 4,
	    "destination host 99 >= host count 4"),
	BAD("loom_flow_size_zero", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 1 1 0\nflow 1 0 1 0\n", 4,
	    "flow size must be > 0"),
	BAD("loom_flow_size_fraction", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 1 1 0\nflow 1 0 1 1.5\n", 4,
	    "flow size '1.5' is not a non-negative integer"),
	BAD("loom_flow_size_overflow", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 1 1 0\nflow 1 0 1 4611686018427387905\n", 4,
	    "too large"),
	BAD("loom_edge_truncated", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 1 1 0\ncoflow 2 1 0\nedge 1 2\n", 5,
	    "truncated line"),
	BAD("loom_edge_unknown_coflow", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 1 1 0\nedge 1 2 0\n", 4,
	    "edge refers to coflow 2, not defined above"),
	BAD("loom_edge_self_loop", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 1 1 0\nedge 1 1 0\n", 4,
	    "edge 1 -> 1 is a self-loop"),
	BAD("loom_edge_across_jobs", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 1 1 0\njob 2 0 1\ncoflow 2 2 0\nedge 1 2 0\n",
	    6, "edge 1 -> 2 crosses jobs 1 and 2"),
	BAD("loom_edge_duplicate", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 1 1 0\ncoflow 2 1 0\nedge 1 2 0\nedge 1 2 5\n",
	    6, "duplicate edge 1 -> 2 (first on line 5)"),
	BAD("loom_edge_delay_bad", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 1 1 0\ncoflow 2 1 0\nedge 1 2 soon\n", 5,
	    "delay 'soon' is not a time"),
	BAD("loom_cycle", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 1 1 0\ncoflow 2 1 0\ncoflow 3 1 0\n"
	    "edge 1 2 0\nedge 2 3 0\n# closes it:\nedge 3 1 0\ncoflow 4 1 0\nedge 4 1 0\n",
	    9, "edge 3 -> 1 closes a cycle"),
	BAD("loom_cycle_two", SIM_TRACE_LOOM,
	    "loom-trace 1 hosts 4\njob 1 0 1\ncoflow 5 1 0\ncoflow 6 1 0\nedge 6 5 1\nedge 5 6 1\n",
	    6, "edge 5 -> 6 closes a cycle"),
	BAD("loom_nul_byte", SIM_TRACE_LOOM, "loom-trace 1 hosts 4\njob 1\0 0 1\n", 2, "NUL byte"),
};

static void test_bad(void **state)
{
	const struct bad_case *bc = *state;
	size_t len = bc->len ? bc->len : strlen(bc->text);
	struct loom_err err = {{0}};
	char want[64];
	uint32_t nhosts = 12345;
	struct cp_model *m;

	/* strings with an embedded NUL: take everything up to the final newline */
	if (strstr(bc->name, "nul_byte"))
		len = strlen(bc->text) + 1 + strlen(bc->text + strlen(bc->text) + 1);
	errno = 0;
	m = sim_trace_parse(bc->text, len, "bad.txt", bc->fmt, &nhosts, &err);
	if (m) {
		cp_model_free(m);
		fail_msg("%s: accepted", bc->name);
	}
	assert_int_equal(errno, EINVAL);
	assert_int_equal(nhosts, 12345);
	snprintf(want, sizeof(want), "bad.txt:%u: ", bc->line);
	if (strncmp(err.msg, want, strlen(want)) != 0 || !strstr(err.msg, bc->reason))
		fail_msg("%s: message '%s' lacks '%s' ... '%s'", bc->name, err.msg, want,
			 bc->reason);
	/* the same with CRLF line endings: the same line and reason, no '\r' in it */
	{
		struct loom_err cerr = {{0}};
		size_t clen;
		char *c = crlf_of(bc->text, len, &clen);

		nhosts = 12345;
		m = sim_trace_parse(c, clen, "bad.txt", bc->fmt, &nhosts, &cerr);
		free(c);
		if (m) {
			cp_model_free(m);
			fail_msg("%s: accepted with CRLF", bc->name);
		}
		assert_int_equal(nhosts, 12345);
		if (strncmp(cerr.msg, want, strlen(want)) != 0 || !strstr(cerr.msg, bc->reason) ||
		    strchr(cerr.msg, '\r'))
			fail_msg("%s: with CRLF, message '%s' (LF: '%s')", bc->name, cerr.msg,
				 err.msg);
	}
}

int main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_format_names),
		cmocka_unit_test(test_fb_small),
		cmocka_unit_test(test_fb_bundled),
		cmocka_unit_test(test_sincronia_small),
		cmocka_unit_test(test_sincronia_bundled),
		cmocka_unit_test(test_loom_small),
		cmocka_unit_test(test_loom_round_trip),
		cmocka_unit_test(test_loom_extreme_values),
		cmocka_unit_test(test_load_missing),
		cmocka_unit_test(test_not_nul_terminated),
		cmocka_unit_test(test_crlf),
	};
	size_t nfixed = sizeof(fixed) / sizeof(fixed[0]);
	size_t nbad = sizeof(bad_cases) / sizeof(bad_cases[0]);
	struct CMUnitTest *tests = calloc(nfixed + nbad, sizeof(*tests));
	int r;

	if (!tests)
		return 1;
	memcpy(tests, fixed, sizeof(fixed));
	for (size_t i = 0; i < nbad; i++)
		tests[nfixed + i] = (struct CMUnitTest){
			.name = bad_cases[i].name,
			.test_func = test_bad,
			.initial_state = (void *)&bad_cases[i],
		};
	r = _cmocka_run_group_tests("trace", tests, nfixed + nbad, NULL, NULL);
	free(tests);
	return r;
}
