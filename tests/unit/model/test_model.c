/* SPDX-License-Identifier: BSD-3-Clause */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "controlplane/model/model.h"

#define MAX_EVS 64

struct recorder {
	struct cp_event ev[MAX_EVS];
	int n;
};

static void record(void *ctx, const struct cp_event *ev)
{
	struct recorder *r = ctx;

	assert_true(r->n < MAX_EVS);
	r->ev[r->n++] = *ev;
}

static void expect_err(struct cp_model *m, const struct loom_err *err, const char *needle)
{
	assert_null(m);
	if (!strstr(err->msg, needle))
		fail_msg("message '%s' lacks '%s'", err->msg, needle);
}

static void test_builder_errors(void **state)
{
	struct loom_err err;
	struct cp_builder *b;

	(void)state;
	b = cp_builder_new(4);
	assert_int_equal(cp_builder_add_job(b, 1, 0, 1.0, &err), 0);
	assert_int_equal(cp_builder_add_job(b, 1, 5, 1.0, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "duplicate job id 1"));
	assert_int_equal(cp_builder_add_job(b, 2, 0, 0.0, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "weight"));
	assert_int_equal(cp_builder_add_coflow(b, 10, 9, 0, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "unknown job id 9"));
	assert_int_equal(cp_builder_add_coflow(b, 10, 1, 0, &err), 0);
	assert_int_equal(cp_builder_add_coflow(b, 10, 1, 0, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "duplicate coflow id 10"));
	assert_int_equal(cp_builder_add_flow(b, 11, 0, 1, 5, &err), -ENOENT);
	assert_int_equal(cp_builder_add_flow(b, 10, 0, 4, 5, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "host 4 >= host count 4"));
	assert_int_equal(cp_builder_add_flow(b, 10, 0, 1, 0, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "size must be > 0"));
	assert_int_equal(cp_builder_add_edge(b, 10, 10, 0, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "itself"));
	assert_int_equal(cp_builder_add_job(b, 3, 0, 1.0, &err), 0);
	assert_int_equal(cp_builder_add_coflow(b, 30, 3, 0, &err), 0);
	assert_int_equal(cp_builder_add_edge(b, 10, 30, 0, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "different jobs"));
	assert_int_equal(cp_builder_ncoflows(b), 2);
	cp_builder_free(b);
}

static void test_finish_errors(void **state)
{
	struct loom_err err;
	struct cp_builder *b;

	(void)state;
	b = cp_builder_new(2);
	expect_err(cp_builder_finish(b, &err), &err, "no jobs");

	b = cp_builder_new(2);
	cp_builder_add_job(b, 5, 0, 1.0, NULL);
	expect_err(cp_builder_finish(b, &err), &err, "job 5 has no coflows");

	b = cp_builder_new(2);
	cp_builder_add_job(b, 1, 0, 1.0, NULL);
	for (uint64_t c = 1; c <= 3; c++)
		cp_builder_add_coflow(b, c, 1, 0, NULL);
	cp_builder_add_edge(b, 1, 2, 0, NULL);
	cp_builder_add_edge(b, 2, 3, 0, NULL);
	cp_builder_add_edge(b, 3, 2, 0, NULL);
	expect_err(cp_builder_finish(b, &err), &err, "cyclic DAG");

	b = cp_builder_new(2);
	cp_builder_add_job(b, 1, 0, 1.0, NULL);
	cp_builder_add_coflow(b, 1, 1, 0, NULL);
	cp_builder_add_coflow(b, 2, 1, 0, NULL);
	cp_builder_add_edge(b, 1, 2, 0, NULL);
	cp_builder_add_edge(b, 1, 2, 7, NULL);
	expect_err(cp_builder_finish(b, &err), &err, "duplicate edge 1->2");
}

/* Jobs sort by arrival; coflows group by job, flows by coflow, in input order. */
static void test_layout(void **state)
{
	struct cp_builder *b = cp_builder_new(4);
	struct cp_model *m;
	struct loom_err err;

	(void)state;
	cp_builder_add_job(b, 1, 500, 1.0, NULL);
	cp_builder_add_job(b, 2, 100, 3.0, NULL);
	cp_builder_add_coflow(b, 11, 1, 0, NULL);
	cp_builder_add_coflow(b, 21, 2, 0, NULL);
	cp_builder_add_coflow(b, 12, 1, 0, NULL);
	cp_builder_add_flow(b, 12, 0, 1, 100, NULL);
	cp_builder_add_flow(b, 11, 1, 2, 50, NULL);
	cp_builder_add_flow(b, 12, 2, 3, 300, NULL);
	cp_builder_add_flow(b, 21, 3, 0, 7, NULL);
	cp_builder_add_edge(b, 11, 12, 9, NULL);
	m = cp_builder_finish(b, &err);
	assert_non_null(m);
	assert_int_equal(m->njobs, 2);
	assert_int_equal(m->jobs[0].ext_id, 2);
	assert_int_equal(m->jobs[1].ext_id, 1);
	assert_int_equal(m->jobs[1].ncoflows, 2);
	assert_int_equal(m->coflows[m->jobs[1].first_coflow].ext_id, 11);
	assert_int_equal(m->coflows[m->jobs[1].first_coflow + 1].ext_id, 12);
	assert_int_equal(m->coflows[2].nflows, 2);
	assert_int_equal(m->coflows[2].total_bytes, 400);
	assert_int_equal(m->coflows[2].max_flow_bytes, 300);
	assert_int_equal(m->flows[m->coflows[2].first_flow].bytes, 100);
	assert_int_equal(m->jobs[1].total_bytes, 450);
	assert_int_equal(m->coflows[2].nparents, 1);
	assert_int_equal(m->edges[m->coflows[2].first_parent].parent, 1);
	assert_int_equal(m->edges[m->coflows[2].first_parent].delay_ns, 9);
	assert_int_equal(m->coflows[1].nchildren, 1);
	cp_model_free(m);
}

static void test_transitions(void **state)
{
	struct cp_builder *b = cp_builder_new(3);
	struct topo *t = topo_new_bigswitch(3, 1000);
	struct recorder rec = {0};
	struct cp_model *m;
	struct loom_err err;

	(void)state;
	cp_builder_add_job(b, 1, 10, 1.0, NULL);
	cp_builder_add_coflow(b, 1, 1, 5, NULL);
	cp_builder_add_coflow(b, 2, 1, 0, NULL);
	cp_builder_add_flow(b, 1, 0, 1, 10, NULL);
	cp_builder_add_flow(b, 1, 1, 2, 10, NULL);
	cp_builder_add_flow(b, 2, 2, 0, 10, NULL);
	cp_builder_add_edge(b, 1, 2, 100, NULL);
	m = cp_builder_finish(b, &err);
	assert_non_null(m);
	assert_int_equal(cp_model_bind(m, t), 0);
	assert_int_equal(m->flows[0].nports, 2);
	assert_int_equal(m->flows[0].ports[0], 0);
	assert_int_equal(m->flows[0].ports[1], 3 + 1);
	cp_model_set_emit(m, record, &rec);

	assert_int_equal(cp_model_job_arrive(m, 0, 10), 0);
	assert_int_equal(cp_model_job_arrive(m, 0, 10), -EALREADY);
	assert_int_equal(rec.n, 2);
	assert_int_equal(rec.ev[0].type, CP_EV_JOB_ARRIVAL);
	assert_int_equal(rec.ev[1].type, CP_EV_COFLOW_READY);
	assert_int_equal(rec.ev[1].time_ns, 15);                      /* arrival + offset */
	assert_int_equal(cp_model_coflow_release(m, 1, 15), -EINVAL); /* child not ready */
	assert_int_equal(cp_model_flow_done(m, 0, 15), -EINVAL);      /* not released */
	assert_int_equal(cp_model_coflow_release(m, 0, 15), 0);
	assert_int_equal(m->nactive, 1);
	assert_int_equal(m->active[0], 0);

	rec.n = 0;
	assert_int_equal(cp_model_flow_done(m, 1, 20), 0);
	assert_int_equal(m->coflows[0].flows_left, 1);
	assert_int_equal(m->flow_slot[m->coflows[0].first_flow], 0);
	assert_int_equal(cp_model_flow_done(m, 1, 20), -EINVAL);
	assert_int_equal(cp_model_flow_done(m, 0, 30), 0);
	assert_int_equal(rec.n, 4);
	assert_int_equal(rec.ev[0].type, CP_EV_FLOW_DONE);
	assert_int_equal(rec.ev[1].type, CP_EV_FLOW_DONE);
	assert_int_equal(rec.ev[2].type, CP_EV_COFLOW_DONE);
	assert_int_equal(rec.ev[3].type, CP_EV_COFLOW_READY);
	assert_int_equal(rec.ev[3].time_ns, 130); /* done + edge delay */
	assert_int_equal(m->nactive, 0);
	assert_int_equal(m->coflows[0].finish_ns, 30);

	rec.n = 0;
	assert_int_equal(cp_model_coflow_release(m, 1, 130), 0);
	assert_int_equal(cp_model_flow_done(m, 2, 140), 0);
	assert_int_equal(rec.ev[rec.n - 1].type, CP_EV_JOB_DONE);
	assert_true(cp_model_all_done(m));
	assert_int_equal(m->jobs[0].finish_ns, 140);

	cp_model_reset(m);
	assert_false(cp_model_all_done(m));
	assert_int_equal(m->coflows[0].state, CP_COFLOW_WAITING);
	assert_int_equal(m->flows[1].remaining_bytes, 10);
	assert_int_equal(m->coflows[1].parents_left, 1);
	cp_model_free(m);
	topo_free(t);
}

static void test_bins_and_isolation(void **state)
{
	struct cp_builder *b = cp_builder_new(3);
	struct topo *t = topo_new_bigswitch(3, 8000);
	double scratch[6] = {0};
	struct cp_model *m;
	struct loom_err err;

	(void)state;
	cp_builder_add_job(b, 1, 0, 1.0, NULL);
	cp_builder_add_coflow(b, 1, 1, 0, NULL);
	/* h0 sends 3000 B in all (3 s at 1000 B/s); h2 receives 2000 B. */
	cp_builder_add_flow(b, 1, 0, 1, 1000, NULL);
	cp_builder_add_flow(b, 1, 0, 2, 2000, NULL);
	m = cp_builder_finish(b, &err);
	assert_non_null(m);
	assert_int_equal(cp_model_bind(m, t), 0);
	assert_int_equal(cp_coflow_isolation_ns(m, 0, scratch), 3000000000ULL);
	for (int i = 0; i < 6; i++)
		assert_true(scratch[i] == 0);
	assert_int_equal(cp_coflow_bin(&m->coflows[0]), CP_BIN_SN);
	m->coflows[0].max_flow_bytes = CP_BIN_SHORT_BYTES;
	assert_int_equal(cp_coflow_bin(&m->coflows[0]), CP_BIN_LN);
	m->coflows[0].nflows = 51;
	assert_int_equal(cp_coflow_bin(&m->coflows[0]), CP_BIN_LW);
	m->coflows[0].nflows = 2;
	assert_string_equal(cp_bin_name(CP_BIN_SW), "short_wide");
	cp_model_free(m);
	topo_free(t);
}

/*
 * Job critical paths: job 1 is a diamond 1 -> {2, 3} -> 4 whose slow branch
 * (via 3, with a 2 s compute delay) sets the bound; job 2 is one coflow with
 * a release offset. 1000 B/s ports, so 1000 B through a port is 1 s.
 */
static void test_critical_paths(void **state)
{
	struct cp_builder *b = cp_builder_new(3);
	struct topo *t = topo_new_bigswitch(3, 8000);
	uint64_t cp[2];
	struct cp_model *m;
	struct loom_err err;

	(void)state;
	cp_builder_add_job(b, 1, 0, 1.0, NULL);
	cp_builder_add_job(b, 2, 5, 2.0, NULL);
	for (uint64_t c = 1; c <= 4; c++)
		cp_builder_add_coflow(b, c, 1, 0, NULL);
	cp_builder_add_coflow(b, 5, 2, 4000000000ULL, NULL);
	cp_builder_add_flow(b, 1, 0, 1, 1000, NULL); /* 1 s */
	cp_builder_add_flow(b, 2, 0, 1, 5000, NULL); /* 5 s */
	cp_builder_add_flow(b, 3, 1, 2, 2000, NULL); /* 2 s, then a 2 s delay */
	cp_builder_add_flow(b, 3, 0, 1, 2000, NULL); /* on other ports: still 2 s */
	cp_builder_add_flow(b, 4, 2, 0, 1000, NULL); /* 1 s */
	cp_builder_add_flow(b, 5, 0, 1, 3000, NULL); /* 3 s after a 4 s offset */
	cp_builder_add_edge(b, 1, 2, 0, NULL);
	cp_builder_add_edge(b, 1, 3, 0, NULL);
	cp_builder_add_edge(b, 2, 4, 0, NULL);
	cp_builder_add_edge(b, 3, 4, 2000000000ULL, NULL);
	m = cp_builder_finish(b, &err);
	assert_non_null(m);
	assert_int_equal(cp_model_bind(m, t), 0);
	assert_int_equal(cp_job_critical_paths_ns(m, cp), 0);
	/* Branch via 2: 1 + 5 = 6 s; via 3: 1 + 2 + 2 = 5 s; then 4: 1 s. */
	assert_int_equal(cp[0], 7000000000ULL);
	assert_int_equal(cp[1], 7000000000ULL);
	/* A 4 s delay on 3 -> 4 makes that branch the critical one: 1 + 2 + 4 + 1. */
	for (uint32_t e = 0; e < m->nedges; e++)
		if (m->coflows[m->edges[e].parent].ext_id == 3)
			m->edges[e].delay_ns = 4000000000ULL;
	assert_int_equal(cp_job_critical_paths_ns(m, cp), 0);
	assert_int_equal(cp[0], 8000000000ULL);
	assert_int_equal(cp[1], 7000000000ULL);
	cp_model_free(m);
	topo_free(t);
}

/* A trace with hosts beyond the fabric cannot be bound. */
static void test_bind_range(void **state)
{
	struct cp_builder *b = cp_builder_new(10);
	struct topo *t = topo_new_bigswitch(4, 8000);
	struct cp_model *m;
	struct loom_err err;

	(void)state;
	cp_builder_add_job(b, 1, 0, 1.0, NULL);
	cp_builder_add_coflow(b, 1, 1, 0, NULL);
	cp_builder_add_flow(b, 1, 0, 9, 1000, NULL);
	m = cp_builder_finish(b, &err);
	assert_non_null(m);
	assert_int_equal(cp_model_bind(m, t), -EINVAL);
	cp_model_free(m);
	topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builder_errors),
		cmocka_unit_test(test_finish_errors),
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_transitions),
		cmocka_unit_test(test_bins_and_isolation),
		cmocka_unit_test(test_critical_paths),
		cmocka_unit_test(test_bind_range),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
