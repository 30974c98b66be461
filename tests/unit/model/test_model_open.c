/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for open coflows in controlplane/model: an open coflow does not
 * complete when its known flows are done, nor when it is released without
 * flows; cp_model_coflow_finish() completes it (finishing its flows first),
 * completes its job when it was the last coflow, and makes its children
 * READY; finishing a coflow that is not ACTIVE is refused and changes
 * nothing; closed coflows behave as before.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

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

static void expect_ev(const struct recorder *r, int i, enum cp_event_type type, uint32_t id,
		      uint64_t t)
{
	assert_true(i < r->n);
	if (r->ev[i].type != type || r->ev[i].id != id || r->ev[i].time_ns != t)
		fail_msg("event %d: got %s %u @%llu, want %s %u @%llu", i,
			 cp_event_type_name(r->ev[i].type), r->ev[i].id,
			 (unsigned long long)r->ev[i].time_ns, cp_event_type_name(type), id,
			 (unsigned long long)t);
}

static int count_type(const struct recorder *r, enum cp_event_type type)
{
	int n = 0;

	for (int i = 0; i < r->n; i++)
		n += r->ev[i].type == type;
	return n;
}

/*
 * One job (id 1, arrival 0) on 4 hosts:
 *   coflow 10 (index 0): flows 0 and 1, open when open_a;
 *   coflow 20 (index 1): flow 2, child of 10 with a 50 ns delay;
 *   coflow 30 (index 2): no flows, open when open_c, child of 10.
 */
static struct cp_model *build(bool open_a, bool open_c)
{
	struct cp_builder *b = cp_builder_new(4);
	struct loom_err err = {{0}};
	struct cp_model *m;

	assert_non_null(b);
	assert_int_equal(cp_builder_add_job(b, 1, 0, 1.0, &err), 0);
	assert_int_equal(cp_builder_add_coflow(b, 10, 1, 0, &err), 0);
	assert_int_equal(cp_builder_add_coflow(b, 20, 1, 0, &err), 0);
	assert_int_equal(cp_builder_add_coflow(b, 30, 1, 0, &err), 0);
	assert_int_equal(cp_builder_add_flow(b, 10, 0, 1, 100, &err), 0);
	assert_int_equal(cp_builder_add_flow(b, 10, 2, 3, 100, &err), 0);
	assert_int_equal(cp_builder_add_flow(b, 20, 1, 2, 100, &err), 0);
	assert_int_equal(cp_builder_add_edge(b, 10, 20, 50, &err), 0);
	assert_int_equal(cp_builder_add_edge(b, 10, 30, 0, &err), 0);
	assert_int_equal(cp_builder_set_coflow_open(b, 10, open_a, &err), 0);
	assert_int_equal(cp_builder_set_coflow_open(b, 30, open_c, &err), 0);
	m = cp_builder_finish(b, &err);
	if (!m)
		fail_msg("finish: %s", err.msg);
	assert_int_equal(m->ncoflows, 3);
	assert_int_equal(m->coflows[0].ext_id, 10);
	assert_int_equal(m->coflows[1].ext_id, 20);
	assert_int_equal(m->coflows[2].ext_id, 30);
	cp_model_reset(m);
	return m;
}

static void test_builder_open_flag(void **state)
{
	struct cp_builder *b = cp_builder_new(2);
	struct loom_err err = {{0}};
	struct cp_model *m;

	(void)state;
	assert_int_equal(cp_builder_add_job(b, 1, 0, 1.0, &err), 0);
	assert_int_equal(cp_builder_add_coflow(b, 5, 1, 0, &err), 0);
	assert_int_equal(cp_builder_add_coflow(b, 6, 1, 0, &err), 0);
	assert_int_equal(cp_builder_set_coflow_open(b, 7, true, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "7"));
	assert_int_equal(cp_builder_set_coflow_open(b, 5, true, &err), 0);
	/* the last word counts */
	assert_int_equal(cp_builder_set_coflow_open(b, 6, true, &err), 0);
	assert_int_equal(cp_builder_set_coflow_open(b, 6, false, &err), 0);
	m = cp_builder_finish(b, &err);
	assert_non_null(m);
	assert_true(m->coflows[0].open);
	assert_false(m->coflows[1].open);
	/* open is static: a reset keeps it */
	cp_model_reset(m);
	assert_true(m->coflows[0].open);
	cp_model_free(m);
}

static void test_open_not_done_by_flows(void **state)
{
	struct cp_model *m = build(true, false);
	struct recorder rec = {0};

	(void)state;
	cp_model_set_emit(m, record, &rec);
	assert_int_equal(cp_model_job_arrive(m, 0, 0), 0);
	assert_int_equal(cp_model_coflow_release(m, 0, 0), 0);
	rec.n = 0;
	assert_int_equal(cp_model_flow_done(m, 0, 10), 0);
	assert_int_equal(cp_model_flow_done(m, 1, 20), 0);
	/* both flows are done, the coflow is not */
	assert_int_equal(rec.n, 2);
	expect_ev(&rec, 0, CP_EV_FLOW_DONE, 0, 10);
	expect_ev(&rec, 1, CP_EV_FLOW_DONE, 1, 20);
	assert_int_equal(m->coflows[0].state, CP_COFLOW_ACTIVE);
	assert_int_equal(m->coflows[0].flows_left, 0);
	assert_int_equal(m->nactive, 1);
	assert_int_equal(m->coflows_done, 0);
	assert_int_equal(m->coflows[1].state, CP_COFLOW_WAITING);
	assert_int_equal(m->coflows[2].state, CP_COFLOW_WAITING);
	assert_int_equal(m->flows_done, 2);
	/* a done flow cannot be done again */
	assert_int_equal(cp_model_flow_done(m, 0, 25), -EINVAL);

	/* the framework says it is finished: it completes and frees its children */
	rec.n = 0;
	assert_int_equal(cp_model_coflow_finish(m, 0, 30), 0);
	assert_int_equal(rec.n, 3);
	expect_ev(&rec, 0, CP_EV_COFLOW_DONE, 0, 30);
	expect_ev(&rec, 1, CP_EV_COFLOW_READY, 1, 80); /* done + 50 ns delay */
	expect_ev(&rec, 2, CP_EV_COFLOW_READY, 2, 30);
	assert_int_equal(m->coflows[0].state, CP_COFLOW_DONE);
	assert_int_equal(m->coflows[0].finish_ns, 30);
	assert_int_equal(m->coflows[1].state, CP_COFLOW_READY);
	assert_int_equal(m->coflows[1].ready_ns, 80);
	assert_int_equal(m->coflows[2].state, CP_COFLOW_READY);
	assert_int_equal(m->nactive, 0);
	assert_int_equal(m->coflows_done, 1);
	assert_int_equal(m->jobs[0].state, CP_JOB_RUNNING);
	assert_int_equal(m->jobs[0].coflows_left, 2);
	/* and only once */
	assert_int_equal(cp_model_coflow_finish(m, 0, 40), -EINVAL);
	cp_model_free(m);
}

static void test_open_empty_release(void **state)
{
	struct cp_model *m = build(false, true);
	struct recorder rec = {0};

	(void)state;
	cp_model_set_emit(m, record, &rec);
	assert_int_equal(cp_model_job_arrive(m, 0, 0), 0);
	assert_int_equal(cp_model_coflow_release(m, 0, 0), 0);
	assert_int_equal(cp_model_flow_done(m, 0, 5), 0);
	assert_int_equal(cp_model_flow_done(m, 1, 6), 0); /* closed: completes */
	assert_int_equal(m->coflows[0].state, CP_COFLOW_DONE);
	assert_int_equal(m->coflows[2].state, CP_COFLOW_READY);

	/* open without flows: released, it stays active */
	rec.n = 0;
	assert_int_equal(cp_model_coflow_release(m, 2, 6), 0);
	assert_int_equal(rec.n, 1);
	expect_ev(&rec, 0, CP_EV_COFLOW_RELEASE, 2, 6);
	assert_int_equal(m->coflows[2].state, CP_COFLOW_ACTIVE);
	assert_int_equal(m->coflows[2].flows_left, 0);
	assert_int_equal(m->nactive, 1);
	assert_int_equal(m->active[0], 2);
	assert_int_equal(m->coflows[2].active_pos, 0);

	/* coflow 20 (closed) runs alongside and finishes: the job still waits on 30 */
	assert_int_equal(m->coflows[1].ready_ns, 56);
	assert_int_equal(cp_model_coflow_release(m, 1, 56), 0);
	assert_int_equal(m->nactive, 2);
	rec.n = 0;
	assert_int_equal(cp_model_flow_done(m, 2, 60), 0);
	assert_int_equal(rec.n, 2);
	expect_ev(&rec, 0, CP_EV_FLOW_DONE, 2, 60);
	expect_ev(&rec, 1, CP_EV_COFLOW_DONE, 1, 60);
	assert_int_equal(m->jobs[0].state, CP_JOB_RUNNING);
	assert_int_equal(m->nactive, 1);
	assert_int_equal(m->active[0], 2);
	assert_int_equal(m->coflows[2].active_pos, 0);

	/* finishing the last coflow finishes the job */
	rec.n = 0;
	assert_int_equal(cp_model_coflow_finish(m, 2, 70), 0);
	assert_int_equal(rec.n, 2);
	expect_ev(&rec, 0, CP_EV_COFLOW_DONE, 2, 70);
	expect_ev(&rec, 1, CP_EV_JOB_DONE, 0, 70);
	assert_int_equal(m->jobs[0].state, CP_JOB_DONE);
	assert_int_equal(m->jobs[0].finish_ns, 70);
	assert_int_equal(m->nactive, 0);
	assert_true(cp_model_all_done(m));
	cp_model_free(m);
}

static void test_finish_with_flows_left(void **state)
{
	struct cp_model *m = build(true, true);
	struct recorder rec = {0};

	(void)state;
	cp_model_set_emit(m, record, &rec);
	assert_int_equal(cp_model_job_arrive(m, 0, 0), 0);
	assert_int_equal(cp_model_coflow_release(m, 0, 1), 0);
	assert_int_equal(cp_model_flow_done(m, 1, 5), 0);
	rec.n = 0;
	/* one flow still running: it is finished first, then the coflow */
	assert_int_equal(cp_model_coflow_finish(m, 0, 9), 0);
	assert_int_equal(count_type(&rec, CP_EV_FLOW_DONE), 1);
	assert_int_equal(count_type(&rec, CP_EV_COFLOW_DONE), 1);
	expect_ev(&rec, 0, CP_EV_FLOW_DONE, 0, 9);
	expect_ev(&rec, 1, CP_EV_COFLOW_DONE, 0, 9);
	assert_true(m->flows[0].done);
	assert_int_equal(m->flows[0].finish_ns, 9);
	assert_true(m->flows[0].remaining_bytes == 0);
	assert_int_equal(m->flows[1].finish_ns, 5);
	assert_int_equal(m->flows_done, 2);
	assert_int_equal(m->coflows[0].state, CP_COFLOW_DONE);
	cp_model_free(m);
}

static void test_finish_refused_when_not_active(void **state)
{
	struct cp_model *m = build(true, true);
	struct recorder rec = {0};

	(void)state;
	cp_model_set_emit(m, record, &rec);
	/* WAITING: the job has not arrived */
	assert_int_equal(cp_model_coflow_finish(m, 0, 0), -EINVAL);
	assert_int_equal(rec.n, 0);
	assert_int_equal(cp_model_job_arrive(m, 0, 0), 0);
	/* READY, not yet released */
	assert_int_equal(m->coflows[0].state, CP_COFLOW_READY);
	rec.n = 0;
	assert_int_equal(cp_model_coflow_finish(m, 0, 0), -EINVAL);
	/* WAITING on a parent */
	assert_int_equal(cp_model_coflow_finish(m, 1, 0), -EINVAL);
	assert_int_equal(cp_model_coflow_finish(m, 2, 0), -EINVAL);
	assert_int_equal(rec.n, 0);
	assert_int_equal(m->coflows[0].state, CP_COFLOW_READY);
	assert_int_equal(m->coflows[1].state, CP_COFLOW_WAITING);
	assert_false(m->flows[0].done);
	assert_int_equal(m->flows_done, 0);
	/* DONE */
	assert_int_equal(cp_model_coflow_release(m, 0, 1), 0);
	assert_int_equal(cp_model_coflow_finish(m, 0, 2), 0);
	rec.n = 0;
	assert_int_equal(cp_model_coflow_finish(m, 0, 3), -EINVAL);
	assert_int_equal(rec.n, 0);
	assert_int_equal(m->coflows[0].finish_ns, 2);
	cp_model_free(m);
}

static void test_closed_as_before(void **state)
{
	struct cp_model *m = build(false, false);
	struct recorder rec = {0};

	(void)state;
	cp_model_set_emit(m, record, &rec);
	assert_int_equal(cp_model_job_arrive(m, 0, 0), 0);
	assert_int_equal(cp_model_coflow_release(m, 0, 0), 0);
	rec.n = 0;
	assert_int_equal(cp_model_flow_done(m, 0, 10), 0);
	assert_int_equal(rec.n, 1);
	assert_int_equal(cp_model_flow_done(m, 1, 20), 0);
	/* the last flow completes it; children are READY; the empty closed one completes on release */
	expect_ev(&rec, 1, CP_EV_FLOW_DONE, 1, 20);
	expect_ev(&rec, 2, CP_EV_COFLOW_DONE, 0, 20);
	expect_ev(&rec, 3, CP_EV_COFLOW_READY, 1, 70);
	expect_ev(&rec, 4, CP_EV_COFLOW_READY, 2, 20);
	assert_int_equal(rec.n, 5);
	rec.n = 0;
	assert_int_equal(cp_model_coflow_release(m, 2, 20), 0);
	assert_int_equal(rec.n, 2);
	expect_ev(&rec, 0, CP_EV_COFLOW_RELEASE, 2, 20);
	expect_ev(&rec, 1, CP_EV_COFLOW_DONE, 2, 20);
	assert_int_equal(m->coflows[2].state, CP_COFLOW_DONE);

	/* finish on a closed coflow: its flows are done and it completes exactly once */
	assert_int_equal(cp_model_coflow_release(m, 1, 70), 0);
	rec.n = 0;
	assert_int_equal(cp_model_coflow_finish(m, 1, 75), 0);
	assert_int_equal(rec.n, 3);
	expect_ev(&rec, 0, CP_EV_FLOW_DONE, 2, 75);
	expect_ev(&rec, 1, CP_EV_COFLOW_DONE, 1, 75);
	expect_ev(&rec, 2, CP_EV_JOB_DONE, 0, 75);
	assert_true(cp_model_all_done(m));
	assert_int_equal(m->coflows_done, 3);
	assert_int_equal(m->nactive, 0);

	/* after a reset the same run gives the same result */
	cp_model_reset(m);
	assert_int_equal(m->coflows[0].state, CP_COFLOW_WAITING);
	assert_int_equal(m->coflows[0].flows_left, 2);
	assert_false(m->flows[0].done);
	cp_model_free(m);
}

/*
 * Reserved slots: an open coflow built with capacity 4 (2 flows) takes 2
 * more flows in any state, keeps "unfinished flows first" in its slots, and
 * refuses a fifth; the slots beyond are flows of no coflow.
 */
static void test_add_flow_in_reserved_slots(void **state)
{
	struct cp_builder *b = cp_builder_new(4);
	struct loom_err err = {{0}};
	struct topo *t = topo_new_bigswitch(4, 1000000000ULL);
	struct cp_model *m;
	uint32_t f, g;

	(void)state;
	assert_non_null(t);
	assert_int_equal(cp_builder_add_job(b, 1, 0, 1.0, &err), 0);
	assert_int_equal(cp_builder_add_coflow(b, 10, 1, 0, &err), 0);
	assert_int_equal(cp_builder_add_coflow(b, 20, 1, 0, &err), 0);
	assert_int_equal(cp_builder_add_flow(b, 10, 0, 1, 100, &err), 0);
	assert_int_equal(cp_builder_add_flow(b, 10, 2, 3, 100, &err), 0);
	assert_int_equal(cp_builder_add_flow(b, 20, 1, 2, 100, &err), 0);
	assert_int_equal(cp_builder_set_coflow_open(b, 10, true, &err), 0);
	assert_int_equal(cp_builder_set_coflow_capacity(b, 10, 4, &err), 0);
	assert_int_equal(cp_builder_set_coflow_capacity(b, 99, 4, &err), -ENOENT);
	m = cp_builder_finish(b, &err);
	assert_non_null(m);
	assert_int_equal(cp_model_bind(m, t), 0);
	cp_model_reset(m);
	/* 3 flows and 2 reserved slots; coflow 20 starts after the slots */
	assert_int_equal(m->nflows, 5);
	assert_int_equal(m->coflows[0].flow_cap, 4);
	assert_int_equal(m->coflows[1].first_flow, 4);
	assert_int_equal(m->flows[2].coflow, CP_NONE);
	assert_int_equal(m->flows[3].coflow, CP_NONE);
	/* while waiting */
	assert_int_equal(cp_model_add_flow(m, 0, 3, 0, 50, &f), 0);
	assert_int_equal(f, 2);
	assert_int_equal(m->coflows[0].nflows, 3);
	assert_int_equal(m->coflows[0].flows_left, 3);
	assert_int_equal(m->coflows[0].total_bytes, 250);
	assert_int_equal(m->flows[f].nports, 2);
	/* active, after a flow is done: the new flow goes before the done one */
	assert_int_equal(cp_model_job_arrive(m, 0, 0), 0);
	assert_int_equal(cp_model_coflow_release(m, 0, 0), 0);
	assert_int_equal(cp_model_flow_done(m, 0, 10), 0);
	assert_int_equal(m->coflows[0].flows_left, 2);
	assert_int_equal(cp_model_add_flow(m, 0, 1, 3, 70, &g), 0);
	assert_int_equal(g, 3);
	assert_int_equal(m->coflows[0].flows_left, 3);
	for (uint32_t k = 0; k < 3; k++)
		assert_false(m->flows[m->flow_slot[k]].done);
	assert_true(m->flows[m->flow_slot[3]].done);
	for (uint32_t k = 0; k < 4; k++)
		assert_int_equal(m->flows[m->flow_slot[k]].slot, k);
	/* full; bad arguments */
	assert_int_equal(cp_model_add_flow(m, 0, 1, 3, 70, &g), -ENOSPC);
	assert_int_equal(cp_model_add_flow(m, 1, 1, 9, 70, &g), -EINVAL);
	assert_int_equal(cp_model_add_flow(m, 1, 1, 2, 0, &g), -EINVAL);
	/* finishing takes the added flows too */
	assert_int_equal(cp_model_coflow_finish(m, 0, 20), 0);
	assert_int_equal(m->coflows[0].state, CP_COFLOW_DONE);
	assert_true(m->flows[2].done && m->flows[3].done);
	assert_int_equal(cp_model_add_flow(m, 0, 1, 3, 70, &g), -EINVAL);
	cp_model_free(m);
	topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builder_open_flag),
		cmocka_unit_test(test_open_not_done_by_flows),
		cmocka_unit_test(test_open_empty_release),
		cmocka_unit_test(test_finish_with_flows_left),
		cmocka_unit_test(test_finish_refused_when_not_active),
		cmocka_unit_test(test_closed_as_before),
		cmocka_unit_test(test_add_flow_in_reserved_slots),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
