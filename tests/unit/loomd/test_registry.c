/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for controlplane/loomd/registry.c on an 8-host big switch:
 * every refusal of a job (duplicates, unknown references, cycles, hosts,
 * weights, limits) and that a refused job changes nothing; every refusal of
 * an announced flow, and flows placed by address; the view: releases on
 * time, flow statistics completing coflows and releasing their children,
 * coflows and jobs declared done, jobs extended with coflows (and every
 * refusal of an extension), unregistering and expiring jobs, and a
 * rebuilt view that keeps the states and sent bytes of the old one.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controlplane/loomd/registry.h"
#include "tests/unit/loomd/fixture.h"
#include "tests/unit/loomd/jobspec.h"
#include "topo/topo.h"

#define NHOSTS FX_HOSTS /* the fixture's big switch */

/* ---- job specs ------------------------------------------------------------------------------ */

static struct loomd_flow_spec flow_spec(uint32_t src, uint32_t dst, uint64_t bytes, uint32_t n)
{
	struct loomd_flow_spec f = {.src = src, .dst = dst, .bytes = bytes, .has_tuple = true};

	f.tuple = tup(n);
	return f;
}

/* ---- fixtures and helpers ------------------------------------------------------------------ */

static struct cp_model *view(struct loomd_registry *r, bool *ret_rebuilt)
{
	struct loom_err err = {{0}};
	struct cp_model *m = loomd_registry_view(r, ret_rebuilt, &err);

	if (!m)
		fail_msg("view: %s", err.msg);
	return m;
}

static enum cp_coflow_state state_of(const struct loomd_registry *r, uint64_t coflow_id)
{
	const struct loomd_rcoflow *c = loomd_registry_coflow(r, coflow_id);

	assert_non_null(c);
	return loomd_registry_coflow_state(r, c);
}

/* The view coflow of a registry coflow. */
static struct cp_coflow *vcoflow(struct cp_model *m, const struct loomd_registry *r, uint64_t id)
{
	const struct loomd_rcoflow *c = loomd_registry_coflow(r, id);

	assert_non_null(c);
	assert_true(c->view != CP_NONE && c->view < m->ncoflows);
	assert_true(m->coflows[c->view].ext_id == id);
	assert_ptr_equal(loomd_registry_view_coflow(r, c->view), c);
	return &m->coflows[c->view];
}

static bool has_event(struct loomd_registry *r, enum cp_event_type type, uint32_t id, uint64_t t)
{
	uint32_t n;
	const struct cp_event *ev = loomd_registry_events(r, &n);

	for (uint32_t i = 0; i < n; i++)
		if (ev[i].type == type && ev[i].id == id && ev[i].time_ns == t)
			return true;
	return false;
}

/* What a refused change must not change. */
struct snap {
	struct loomd_registry_counts counts;
	uint32_t njobs;
	uint64_t ids[16];
	uint64_t now_ns;
};

static void take_snap(const struct loomd_registry *r, struct snap *s)
{
	struct loomd_rjob *const *jobs;

	memset(s, 0, sizeof(*s));
	jobs = loomd_registry_jobs(r, &s->njobs);
	loomd_registry_counts(r, &s->counts);
	for (uint32_t i = 0; i < s->njobs && i < 16; i++)
		s->ids[i] = jobs[i]->id;
	s->now_ns = loomd_registry_now(r);
}

static void assert_snap(const struct loomd_registry *r, const struct snap *want)
{
	struct snap got;

	take_snap(r, &got);
	assert_memory_equal(&got, want, sizeof(got));
}

/*
 * Adds j, which must be refused with code and a message containing needle,
 * leaving the registry as it was: same counts and jobs, none of j's coflows
 * or tuples known unless they were before, and no rebuild of the view.
 */
static void expect_refused(struct loomd_registry *r, struct jb *j, int code, const char *needle)
{
	struct loom_err err = {{0}};
	bool known_c[JB_COFLOWS], known_t[JB_COFLOWS][JB_FLOWS], rebuilt = true;
	bool known_job = loomd_registry_job(r, j->s.id) != NULL;
	struct snap before;
	int rc;

	view(r, NULL);
	take_snap(r, &before);
	for (uint32_t c = 0; c < j->s.ncoflows; c++) {
		known_c[c] = loomd_registry_coflow(r, j->c[c].id) != NULL;
		for (uint32_t f = 0; f < j->c[c].nflows; f++)
			known_t[c][f] = j->f[c][f].has_tuple &&
					loomd_registry_flow(r, &j->f[c][f].tuple) != NULL;
	}
	rc = jb_add(r, j, 1000000, &err);
	if (rc != code)
		fail_msg("job %llu: got %d (%s), want %d", (unsigned long long)j->s.id, rc, err.msg,
			 code);
	assert_contains(err.msg, needle);
	assert_snap(r, &before);
	assert_int_equal(loomd_registry_job(r, j->s.id) != NULL, known_job);
	for (uint32_t c = 0; c < j->s.ncoflows; c++) {
		assert_int_equal(loomd_registry_coflow(r, j->c[c].id) != NULL, known_c[c]);
		for (uint32_t f = 0; f < j->c[c].nflows; f++)
			if (j->f[c][f].has_tuple)
				assert_int_equal(loomd_registry_flow(r, &j->f[c][f].tuple) != NULL,
						 known_t[c][f]);
	}
	view(r, &rebuilt);
	assert_false(rebuilt);
}

/* ---- add_job refusals ------------------------------------------------------------------------- */

/* Job 1: coflows 10 -> 11, flows with tuples 1 and 2. */
static void add_base_job(struct loomd_registry *r)
{
	struct jb j;
	struct wire_tuple t1 = tup(1), t2 = tup(2);

	jb_init(&j, 1);
	jb_coflow(&j, 10, 0, 0);
	jb_coflow(&j, 11, 0, 0);
	jb_flow(&j, 0, 0, 1, 1000, &t1);
	jb_flow(&j, 1, 1, 2, 1000, &t2);
	jb_edge(&j, 10, 11, 0);
	jb_add_ok(r, &j, 0);
}

static void test_add_job_refusals(void **state)
{
	struct fx *fx = *state;
	struct loomd_registry *r = fx->r;
	struct wire_tuple t1 = tup(1), t3 = tup(3), t4 = tup(4);
	struct jb j;

	add_base_job(r);

	/* duplicate job id */
	jb_init(&j, 1);
	jb_coflow(&j, 20, 0, 0);
	expect_refused(r, &j, -EEXIST, "job 1 is already registered");

	/* duplicate coflow id within the job */
	jb_init(&j, 2);
	jb_coflow(&j, 20, 0, 0);
	jb_coflow(&j, 21, 0, 0);
	jb_coflow(&j, 20, 0, 0);
	expect_refused(r, &j, -EEXIST, "coflow id 20 appears twice");

	/* a coflow id of another job */
	jb_init(&j, 2);
	jb_coflow(&j, 20, 0, 0);
	jb_coflow(&j, 11, 0, 0);
	expect_refused(r, &j, -EEXIST, "coflow id 11 is already registered");

	/* an edge to an unknown coflow, and to another job's coflow */
	jb_init(&j, 2);
	jb_coflow(&j, 20, 0, 0);
	jb_coflow(&j, 21, 0, 0);
	jb_edge(&j, 20, 21, 0);
	jb_edge(&j, 21, 99, 0);
	expect_refused(r, &j, -ENOENT, "coflow 99 is not one of this job's");
	j.s.nedges = 0;
	jb_edge(&j, 10, 21, 0);
	expect_refused(r, &j, -ENOENT, "coflow 10 is not one of this job's");

	/* a cycle, and a self-loop */
	jb_init(&j, 2);
	jb_coflow(&j, 20, 0, 0);
	jb_coflow(&j, 21, 0, 0);
	jb_coflow(&j, 22, 0, 0);
	jb_edge(&j, 20, 21, 0);
	jb_edge(&j, 21, 22, 0);
	jb_edge(&j, 22, 21, 0);
	expect_refused(r, &j, -ELOOP, "cycle");
	j.s.nedges = 0;
	jb_edge(&j, 20, 21, 0);
	jb_edge(&j, 22, 22, 0);
	expect_refused(r, &j, -ELOOP, "coflow 22 depends on itself");

	/* a duplicate edge */
	j.s.nedges = 0;
	jb_edge(&j, 20, 21, 0);
	jb_edge(&j, 20, 21, 5);
	expect_refused(r, &j, -EEXIST, "edge 20 -> 21 appears twice");

	/* hosts out of range */
	jb_init(&j, 2);
	jb_coflow(&j, 20, 0, 0);
	jb_flow(&j, 0, 0, 1, 10, NULL);
	jb_flow(&j, 0, NHOSTS, 1, 10, NULL);
	expect_refused(r, &j, -EINVAL, "host 8 is out of range");
	j.f[0][1].src = 0;
	j.f[0][1].dst = UINT32_MAX;
	expect_refused(r, &j, -EINVAL, "out of range");

	/* weights */
	{
		const double bad[] = {0.0, -1.0, NAN, INFINITY, -INFINITY};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			jb_init(&j, 2);
			jb_coflow(&j, 20, 0, 0);
			j.s.weight = bad[i];
			expect_refused(r, &j, -EINVAL, "is not a positive number");
		}
	}

	/* no coflows */
	jb_init(&j, 2);
	expect_refused(r, &j, -EINVAL, "job 2 has no coflows");

	/* tuples: twice in the job, already registered, neither TCP nor UDP */
	jb_init(&j, 2);
	jb_coflow(&j, 20, 0, 0);
	jb_coflow(&j, 21, 0, 0);
	jb_flow(&j, 0, 0, 1, 10, &t3);
	jb_flow(&j, 1, 0, 1, 10, &t3);
	expect_refused(r, &j, -EEXIST, "appears twice");
	j.f[1][0].tuple = t1;
	expect_refused(r, &j, -EEXIST, "is already announced");
	j.f[1][0].tuple = t4;
	j.f[1][0].tuple.protocol = 1;
	expect_refused(r, &j, -EINVAL, "protocol 1");

	/* more flows listed than expected */
	jb_init(&j, 2);
	jb_coflow(&j, 20, 1, 0);
	jb_flow(&j, 0, 0, 1, 10, NULL);
	jb_flow(&j, 0, 0, 2, 10, NULL);
	expect_refused(r, &j, -EINVAL, "more than its expected_flows 1");

	/* by_address without a tuple, and with addresses no host owns */
	jb_init(&j, 2);
	jb_coflow(&j, 20, 0, 0);
	jb_flow(&j, 0, 0, 1, 10, NULL);
	j.f[0][0].by_address = true;
	expect_refused(r, &j, -EINVAL, "by_address needs a 5-tuple");
	j.f[0][0].has_tuple = true;
	j.f[0][0].tuple = t4;
	expect_refused(r, &j, -ENOENT, "no host owns the addresses");

	/* after all that, job 2 still goes in */
	jb_init(&j, 2);
	jb_coflow(&j, 20, 0, 0);
	jb_flow(&j, 0, 0, 1, 10, &t3);
	jb_add_ok(r, &j, 5);
	assert_non_null(loomd_registry_job(r, 2));
	assert_non_null(loomd_registry_flow(r, &t3));
}

static void test_limits(void **state)
{
	struct fx *fx = *state;
	struct loomd_registry *r = fx_registry_new(fx->t, 2, 3, 4);
	struct loom_err err = {{0}};
	struct loomd_flow_spec f;
	struct jb j;

	jb_init(&j, 1);
	jb_coflow(&j, 10, 0, 0);
	jb_flow(&j, 0, 0, 1, 10, NULL);
	jb_flow(&j, 0, 0, 2, 10, NULL);
	jb_add_ok(r, &j, 0);
	jb_init(&j, 2);
	jb_coflow(&j, 20, 0, 0); /* open: no flows listed */
	jb_add_ok(r, &j, 0);

	jb_init(&j, 3);
	jb_coflow(&j, 30, 0, 0);
	expect_refused(r, &j, -ENOSPC, "max_jobs");

	assert_int_equal(loomd_registry_unregister(r, 2, &err), 0);
	jb_init(&j, 3);
	jb_coflow(&j, 30, 0, 0);
	jb_coflow(&j, 31, 0, 0);
	jb_coflow(&j, 32, 0, 0);
	expect_refused(r, &j, -ENOSPC, "max_coflows");

	jb_init(&j, 3);
	jb_coflow(&j, 30, 0, 0);
	jb_coflow(&j, 31, 0, 0);
	jb_flow(&j, 0, 1, 2, 10, NULL);
	jb_flow(&j, 0, 1, 3, 10, NULL);
	jb_flow(&j, 1, 1, 4, 10, NULL);
	expect_refused(r, &j, -ENOSPC, "max_flows");

	/* exactly at every limit is fine */
	j.c[1].nflows = 0;
	j.c[1].expected_flows = 0; /* coflow 31 open */
	jb_add_ok(r, &j, 0);
	{
		struct loomd_registry_counts c;

		loomd_registry_counts(r, &c);
		assert_int_equal(c.jobs, 2);
		assert_int_equal(c.coflows, 3);
		assert_int_equal(c.flows, 4);
	}
	/* an announced flow counts too */
	f = flow_spec(0, 1, 10, 7);
	assert_int_equal(loomd_registry_add_flow(r, 31, &f, 0, &err), -ENOSPC);
	assert_contains(err.msg, "max_flows");
	assert_null(loomd_registry_flow(r, &f.tuple));
	assert_int_equal(loomd_registry_unregister(r, 1, &err), 0);
	assert_int_equal(loomd_registry_add_flow(r, 31, &f, 0, &err), 0);
	loomd_registry_free(r);
}

/* ---- announcing flows --------------------------------------------------------------------- */

static void test_announce(void **state)
{
	struct fx *fx = *state;
	struct loomd_registry *r = fx->r;
	struct loom_err err = {{0}};
	struct wire_tuple t1 = tup(1);
	struct loomd_flow_spec f;
	struct loomd_rflow *fl;
	struct loomd_registry_counts c;
	struct jb j;

	jb_init(&j, 1);
	jb_coflow(&j, 10, 0, 0); /* open */
	jb_coflow(&j, 11, 2, 0); /* closed, one of two flows listed */
	jb_coflow(&j, 12, 0, 0); /* closed, its one flow listed */
	jb_flow(&j, 1, 0, 1, 100, NULL);
	jb_flow(&j, 2, 0, 1, 100, &t1);
	jb_add_ok(r, &j, 0);
	assert_true(loomd_registry_coflow(r, 10)->open);
	assert_false(loomd_registry_coflow(r, 11)->open);
	assert_int_equal(loomd_registry_coflow(r, 11)->expected_flows, 2);
	assert_int_equal(loomd_registry_coflow(r, 12)->expected_flows, 1);

	f = flow_spec(0, 1, 100, 2);
	assert_int_equal(loomd_registry_add_flow(r, 99, &f, 0, &err), -ENOENT);
	assert_contains(err.msg, "no such coflow");
	f.has_tuple = false;
	assert_int_equal(loomd_registry_add_flow(r, 10, &f, 0, &err), -EINVAL);
	assert_contains(err.msg, "needs its 5-tuple");

	f = flow_spec(0, 1, 100, 2);
	assert_int_equal(loomd_registry_add_flow(r, 10, &f, 10, &err), 0);
	fl = loomd_registry_flow(r, &f.tuple);
	assert_non_null(fl);
	assert_ptr_equal(fl->coflow, loomd_registry_coflow(r, 10));
	assert_int_equal(fl->src, 0);
	assert_int_equal(fl->dst, 1);
	assert_int_equal(loomd_registry_now(r), 10);
	/* the same tuple again, here or in another coflow */
	assert_int_equal(loomd_registry_add_flow(r, 10, &f, 0, &err), -EEXIST);
	assert_contains(err.msg, "already announced");
	assert_int_equal(loomd_registry_add_flow(r, 11, &f, 0, &err), -EEXIST);
	f = flow_spec(0, 1, 100, 1); /* listed with the job */
	assert_int_equal(loomd_registry_add_flow(r, 10, &f, 0, &err), -EEXIST);

	/* a closed coflow takes flows up to its expected count */
	f = flow_spec(1, 2, 100, 3);
	assert_int_equal(loomd_registry_add_flow(r, 11, &f, 0, &err), 0);
	f = flow_spec(1, 2, 100, 4);
	assert_int_equal(loomd_registry_add_flow(r, 11, &f, 0, &err), -ENOSPC);
	assert_contains(err.msg, "already has its 2 expected flows");
	assert_int_equal(loomd_registry_add_flow(r, 12, &f, 0, &err), -ENOSPC);
	assert_null(loomd_registry_flow(r, &f.tuple));

	/* malformed flows */
	f = flow_spec(0, NHOSTS, 100, 4);
	assert_int_equal(loomd_registry_add_flow(r, 10, &f, 0, &err), -EINVAL);
	assert_contains(err.msg, "out of range");
	f = flow_spec(0, 1, 100, 4);
	f.tuple.protocol = 132;
	assert_int_equal(loomd_registry_add_flow(r, 10, &f, 0, &err), -EINVAL);

	/* a done coflow takes no more */
	assert_int_equal(loomd_registry_coflow_done(r, 10, 20, &err), 0);
	f = flow_spec(0, 1, 100, 4);
	assert_int_equal(loomd_registry_add_flow(r, 10, &f, 30, &err), -EALREADY);
	assert_contains(err.msg, "already done");
	assert_int_equal(loomd_registry_coflow_done(r, 10, 30, &err), -EALREADY);
	assert_int_equal(loomd_registry_coflow_done(r, 99, 30, &err), -ENOENT);

	loomd_registry_counts(r, &c);
	assert_int_equal(c.jobs, 1);
	assert_int_equal(c.coflows, 3);
	assert_int_equal(c.flows, 4);
	assert_int_equal(loomd_registry_coflow(r, 10)->nflows, 1);
	assert_int_equal(loomd_registry_coflow(r, 11)->nflows, 2);
}

static void test_announce_by_address(void **state)
{
	struct fx *fx = *state;
	struct loomd_registry *r = fx->r;
	struct loom_err err = {{0}};
	const uint8_t h3[4] = {10, 0, 0, 3}, h5[4] = {10, 0, 0, 5};
	uint8_t v6a[16] = {0xfd, 0, [15] = 6}, v6b[16] = {0xfd, 0, [15] = 7};
	struct loomd_flow_spec f = {.by_address = true, .has_tuple = true, .bytes = 10};
	struct loomd_rflow *fl;
	struct jb j;

	jb_init(&j, 1);
	jb_coflow(&j, 10, 0, 0);
	jb_add_ok(r, &j, 0);

	f.src = 7; /* ignored with by_address */
	f.dst = 7;
	f.tuple.family = 4;
	f.tuple.protocol = 17;
	memcpy(f.tuple.src, h3, 4);
	memcpy(f.tuple.dst, h5, 4);
	f.tuple.src_port = 5000;
	f.tuple.dst_port = 5001;
	/* no host announced these addresses */
	assert_int_equal(loomd_registry_add_flow(r, 10, &f, 0, &err), -ENOENT);
	assert_contains(err.msg, "udp 10.0.0.3:5000->10.0.0.5:5001");
	assert_int_equal(loomd_registry_set_host_addr(r, 3, h3, 4), 0);
	/* only one end known */
	assert_int_equal(loomd_registry_add_flow(r, 10, &f, 0, &err), -ENOENT);
	assert_int_equal(loomd_registry_set_host_addr(r, 5, h5, 4), 0);
	assert_int_equal(loomd_registry_add_flow(r, 10, &f, 0, &err), 0);
	fl = loomd_registry_flow(r, &f.tuple);
	assert_non_null(fl);
	assert_int_equal(fl->src, 3);
	assert_int_equal(fl->dst, 5);

	/* refused host ids and families */
	assert_int_equal(loomd_registry_set_host_addr(r, NHOSTS, h3, 4), -EINVAL);
	assert_int_equal(loomd_registry_set_host_addr(r, 0, h3, 5), -EINVAL);
	assert_int_equal(loomd_registry_set_host_addr(r, 0, h3, 0), -EINVAL);

	/* an address that moves to another host: later flows follow it */
	assert_int_equal(loomd_registry_set_host_addr(r, 4, h5, 4), 0);
	f.tuple.src_port = 5002;
	assert_int_equal(loomd_registry_add_flow(r, 10, &f, 0, &err), 0);
	fl = loomd_registry_flow(r, &f.tuple);
	assert_int_equal(fl->src, 3);
	assert_int_equal(fl->dst, 4);

	/* IPv6; the same bytes as IPv4 addresses are another family */
	assert_int_equal(loomd_registry_set_host_addr(r, 6, v6a, 6), 0);
	assert_int_equal(loomd_registry_set_host_addr(r, 7, v6b, 6), 0);
	memset(&f.tuple, 0, sizeof(f.tuple));
	f.tuple.family = 6;
	f.tuple.protocol = 6;
	memcpy(f.tuple.src, v6a, 16);
	memcpy(f.tuple.dst, v6b, 16);
	f.tuple.src_port = 1;
	f.tuple.dst_port = 2;
	assert_int_equal(loomd_registry_add_flow(r, 10, &f, 0, &err), 0);
	fl = loomd_registry_flow(r, &f.tuple);
	assert_int_equal(fl->src, 6);
	assert_int_equal(fl->dst, 7);
	f.tuple.family = 4;
	memcpy(f.tuple.src, h3, 4);
	memset(f.tuple.src + 4, 0, 12);
	memcpy(f.tuple.dst, v6b, 4); /* fd00:: as IPv4 253.0.0.0: nobody's */
	memset(f.tuple.dst + 4, 0, 12);
	assert_int_equal(loomd_registry_add_flow(r, 10, &f, 0, &err), -ENOENT);

	/* by_address in a registered job too */
	jb_init(&j, 2);
	jb_coflow(&j, 20, 0, 0);
	jb_flow(&j, 0, 0, 0, 10, NULL);
	j.f[0][0].by_address = true;
	j.f[0][0].has_tuple = true;
	j.f[0][0].tuple.family = 4;
	j.f[0][0].tuple.protocol = 6;
	memcpy(j.f[0][0].tuple.src, h5, 4);
	memcpy(j.f[0][0].tuple.dst, h3, 4);
	jb_add_ok(r, &j, 0);
	fl = loomd_registry_flow(r, &j.f[0][0].tuple);
	assert_non_null(fl);
	assert_int_equal(fl->src, 4);
	assert_int_equal(fl->dst, 3);
}

/* ---- the view ------------------------------------------------------------------------------- */

/*
 * Job 1 at t=0: coflow 100 (release offset 1000; flows tuple 1, 2 of 1000
 * bytes) -> coflow 200 (delay 100; flow tuple 3 of 500 bytes).
 */
static void add_two_stage(struct loomd_registry *r)
{
	struct wire_tuple t1 = tup(1), t2 = tup(2), t3 = tup(3);
	struct jb j;

	jb_init(&j, 1);
	jb_coflow(&j, 100, 0, 1000);
	jb_coflow(&j, 200, 0, 0);
	jb_flow(&j, 0, 0, 1, 1000, &t1);
	jb_flow(&j, 0, 2, 3, 1000, &t2);
	jb_flow(&j, 1, 1, 2, 500, &t3);
	jb_edge(&j, 100, 200, 100);
	jb_add_ok(r, &j, 0);
}

static void test_view_two_stage(void **state)
{
	struct fx *fx = *state;
	struct loomd_registry *r = fx->r;
	struct wire_tuple t1 = tup(1), t2 = tup(2), t3 = tup(3), t9 = tup(9);
	struct loomd_registry_counts c;
	struct cp_model *m;
	struct cp_coflow *a, *b;
	struct loomd_rflow *f1;
	uint64_t next = 0;
	bool rebuilt = false;

	add_two_stage(r);
	m = view(r, &rebuilt);
	assert_true(rebuilt);
	assert_int_equal(m->njobs, 1);
	assert_int_equal(m->ncoflows, 2);
	assert_int_equal(m->nflows, 3);
	a = vcoflow(m, r, 100);
	b = vcoflow(m, r, 200);
	assert_int_equal(a->state, CP_COFLOW_READY);
	assert_int_equal(a->ready_ns, 1000);
	assert_int_equal(b->state, CP_COFLOW_WAITING);
	/* the same view while nothing changes */
	assert_ptr_equal(view(r, &rebuilt), m);
	assert_false(rebuilt);

	/* not yet due */
	assert_int_equal(loomd_registry_release_due(r, 500, &next), 0);
	assert_int_equal(next, 1000);
	assert_int_equal(a->state, CP_COFLOW_READY);
	/* due: A only */
	loomd_registry_events_clear(r);
	assert_int_equal(loomd_registry_release_due(r, 1000, &next), 1);
	assert_true(next == CP_TIME_NEVER);
	assert_int_equal(a->state, CP_COFLOW_ACTIVE);
	assert_int_equal(a->release_ns, 1000);
	assert_int_equal(b->state, CP_COFLOW_WAITING);
	assert_int_equal(state_of(r, 100), CP_COFLOW_ACTIVE);
	assert_int_equal(state_of(r, 200), CP_COFLOW_WAITING);
	assert_true(has_event(r, CP_EV_COFLOW_RELEASE, loomd_registry_coflow(r, 100)->view, 1000));
	assert_int_equal(loomd_registry_release_due(r, 5000, NULL), 0);

	/* bytes accumulate into the flow, the coflow and the job, in the registry and the view */
	f1 = loomd_registry_flow(r, &t1);
	assert_int_equal(loomd_registry_flow_stat(r, &t1, 600, false, 1100), 0);
	assert_int_equal(loomd_registry_flow_stat(r, &t2, 50, false, 1100), 0);
	assert_int_equal(f1->sent_bytes, 600);
	assert_int_equal(loomd_registry_coflow(r, 100)->sent_bytes, 650);
	assert_int_equal(loomd_registry_job(r, 1)->sent_bytes, 650);
	assert_true(a->sent_bytes == 650);
	assert_true(m->jobs[a->job].sent_bytes == 650);
	assert_true(m->flows[f1->view].remaining_bytes == 400);
	assert_ptr_equal(loomd_registry_view_flow(r, f1->view), f1);
	/* a flow of a coflow not yet released counts too */
	assert_int_equal(loomd_registry_flow_stat(r, &t3, 7, false, 1100), 0);
	assert_int_equal(loomd_registry_coflow(r, 200)->sent_bytes, 7);
	assert_int_equal(loomd_registry_job(r, 1)->sent_bytes, 657);
	assert_true(b->sent_bytes == 7);
	assert_true(m->jobs[a->job].sent_bytes == 657);
	/* unknown tuples */
	assert_int_equal(loomd_registry_flow_stat(r, &t9, 10, true, 1100), -ENOENT);

	/* flow 1 ends: A goes on */
	assert_int_equal(loomd_registry_flow_stat(r, &t1, 400, true, 1200), 0);
	assert_true(f1->done);
	assert_int_equal(f1->done_ns, 1200);
	assert_true(m->flows[f1->view].done);
	assert_int_equal(a->state, CP_COFLOW_ACTIVE);
	assert_int_equal(a->flows_left, 1);
	/* a report on a done flow: -EALREADY, its bytes still counted */
	assert_int_equal(loomd_registry_flow_stat(r, &t1, 10, true, 1250), -EALREADY);
	assert_int_equal(f1->sent_bytes, 1010);
	assert_int_equal(loomd_registry_coflow(r, 100)->flows_done, 1);

	/* flow 2 ends: A is done, B is ready after its delay */
	loomd_registry_events_clear(r);
	assert_int_equal(loomd_registry_flow_stat(r, &t2, 950, true, 1300), 0);
	assert_int_equal(a->state, CP_COFLOW_DONE);
	assert_int_equal(a->finish_ns, 1300);
	assert_int_equal(loomd_registry_coflow(r, 100)->done_ns, 1300);
	assert_int_equal(loomd_registry_job(r, 1)->coflows_done, 1);
	assert_int_equal(b->state, CP_COFLOW_READY);
	assert_int_equal(b->ready_ns, 1400);
	assert_true(has_event(r, CP_EV_COFLOW_DONE, loomd_registry_coflow(r, 100)->view, 1300));
	assert_true(has_event(r, CP_EV_COFLOW_READY, loomd_registry_coflow(r, 200)->view, 1400));
	assert_int_equal(loomd_registry_release_due(r, 1300, &next), 0);
	assert_int_equal(next, 1400);
	assert_int_equal(loomd_registry_release_due(r, 1400, &next), 1);
	assert_int_equal(b->state, CP_COFLOW_ACTIVE);
	assert_int_equal(b->release_ns, 1400);

	loomd_registry_counts(r, &c);
	assert_int_equal(c.jobs, 1);
	assert_int_equal(c.jobs_done, 0);
	assert_int_equal(c.coflows, 2);
	assert_int_equal(c.coflows_done, 1);
	assert_int_equal(c.coflows_active, 1);
	assert_int_equal(c.flows, 3);
	assert_int_equal(c.flows_done, 2);

	/* the last flow ends the job */
	assert_int_equal(loomd_registry_flow_stat(r, &t3, 493, true, 1500), 0);
	assert_int_equal(b->state, CP_COFLOW_DONE);
	assert_int_equal(loomd_registry_job(r, 1)->done_ns, 1500);
	assert_true(has_event(r, CP_EV_JOB_DONE, loomd_registry_job(r, 1)->view, 1500));
	loomd_registry_counts(r, &c);
	assert_int_equal(c.jobs_done, 1);
	assert_int_equal(c.coflows_done, 2);
	assert_int_equal(c.coflows_active, 0);
	assert_int_equal(c.flows_done, 3);
	/* and the job takes no more */
	{
		struct loom_err err = {{0}};

		assert_int_equal(loomd_registry_job_done(r, 1, 1600, &err), -EALREADY);
		assert_int_equal(loomd_registry_coflow_done(r, 200, 1600, &err), -EALREADY);
	}
}

static void test_coflow_done_open(void **state)
{
	struct fx *fx = *state;
	struct loomd_registry *r = fx->r;
	struct loom_err err = {{0}};
	struct loomd_flow_spec f = flow_spec(0, 1, 100, 1);
	struct cp_model *m;
	uint64_t next;
	struct jb j;

	/* open coflow 10 -> open coflow 11 */
	jb_init(&j, 1);
	jb_coflow(&j, 10, 0, 0);
	jb_coflow(&j, 11, 0, 0);
	jb_edge(&j, 10, 11, 0);
	jb_add_ok(r, &j, 0);
	assert_int_equal(loomd_registry_add_flow(r, 10, &f, 5, &err), 0);
	m = view(r, NULL);
	loomd_registry_release_due(r, 10, &next);
	assert_int_equal(state_of(r, 10), CP_COFLOW_ACTIVE);
	/* its only flow ends: an open coflow stays active */
	assert_int_equal(loomd_registry_flow_stat(r, &f.tuple, 100, true, 20), 0);
	assert_int_equal(state_of(r, 10), CP_COFLOW_ACTIVE);
	assert_int_equal(vcoflow(m, r, 10)->flows_left, 0);

	/* 11 is declared done while it still waits: it ends as soon as it is released */
	assert_int_equal(loomd_registry_coflow_done(r, 11, 25, &err), 0);
	assert_true(loomd_registry_coflow(r, 11)->declared_done);
	assert_int_equal(state_of(r, 11), CP_COFLOW_WAITING);
	assert_int_equal(loomd_registry_coflow_done(r, 11, 26, &err), -EALREADY);
	/* 10 is declared done: it completes at once, 11 becomes ready */
	assert_int_equal(loomd_registry_coflow_done(r, 10, 30, &err), 0);
	assert_int_equal(state_of(r, 10), CP_COFLOW_DONE);
	assert_int_equal(loomd_registry_coflow(r, 10)->done_ns, 30);
	assert_int_equal(state_of(r, 11), CP_COFLOW_READY);
	assert_ptr_equal(view(r, NULL), m);
	assert_int_equal(loomd_registry_release_due(r, 30, &next), 1);
	assert_int_equal(state_of(r, 11), CP_COFLOW_DONE);
	assert_int_equal(loomd_registry_coflow(r, 11)->done_ns, 30);
	assert_int_equal(loomd_registry_job(r, 1)->done_ns, 30);
	assert_int_equal(m->jobs[0].state, CP_JOB_DONE);
}

/* An extension refused with code and a message containing needle changes nothing. */
static void expect_extend_refused(struct loomd_registry *r, struct jb *j, int code,
				  const char *needle)
{
	struct loom_err err = {{0}};
	struct snap before;
	bool rebuilt = true;

	view(r, NULL);
	take_snap(r, &before);
	assert_int_equal(jb_extend(r, j, loomd_registry_now(r), &err), code);
	assert_contains(err.msg, needle);
	assert_snap(r, &before);
	view(r, &rebuilt);
	assert_false(rebuilt);
}

/*
 * A job that grows: an open anchor coflow 10 and coflow 11 (one flow), then
 * coflow 12 added with an edge 11 -> 12 while 11 runs, and 13 after 12 is
 * done. The coflows already registered keep their flows, states and sent
 * bytes across the move; the new ones wait for their parents; every refusal
 * changes nothing; a finished job cannot grow.
 */
static void test_extend(void **state)
{
	struct fx *fx = *state;
	struct loomd_registry *r = fx->r;
	struct loom_err err = {{0}};
	struct wire_tuple t1 = tup(1), t2 = tup(2), t3 = tup(3);
	struct loomd_registry_counts c;
	struct cp_model *m;
	bool rebuilt;
	struct jb j, x;

	jb_init(&j, 1);
	jb_coflow(&j, 10, 0, 0);
	jb_coflow(&j, 11, 0, 0);
	jb_flow(&j, 1, 0, 1, 1000, &t1);
	jb_add_ok(r, &j, 0);
	view(r, NULL);
	loomd_registry_release_due(r, 0, NULL);
	assert_int_equal(state_of(r, 11), CP_COFLOW_ACTIVE);
	assert_int_equal(loomd_registry_flow_stat(r, &t1, 400, false, 10), 0);

	/* 12 (one flow, open) after 11 */
	jb_init(&x, 1);
	jb_coflow(&x, 12, 0, 0);
	jb_flow(&x, 0, 1, 2, 500, &t2);
	jb_edge(&x, 11, 12, 0);
	assert_int_equal(jb_extend(r, &x, 20, &err), 0);
	loomd_registry_counts(r, &c);
	assert_int_equal(c.jobs, 1);
	assert_int_equal(c.coflows, 3);
	assert_int_equal(c.flows, 2);
	assert_int_equal(loomd_registry_job(r, 1)->ncoflows, 3);
	assert_int_equal(loomd_registry_job(r, 1)->nedges, 1);
	/* every pointer to the moved coflows followed them */
	assert_ptr_equal(loomd_registry_flow(r, &t1)->coflow, loomd_registry_coflow(r, 11));
	assert_ptr_equal(loomd_registry_coflow(r, 11)->job, loomd_registry_job(r, 1));
	assert_ptr_equal(loomd_registry_flow(r, &t2)->coflow, loomd_registry_coflow(r, 12));
	assert_int_equal(loomd_registry_coflow(r, 11)->sent_bytes, 400);
	/* before the rebuild, the old view reaches the moved coflows */
	assert_int_equal(state_of(r, 11), CP_COFLOW_ACTIVE);
	assert_int_equal(loomd_registry_flow_stat(r, &t1, 0, false, 21), 0);
	m = view(r, &rebuilt);
	assert_true(rebuilt);
	assert_int_equal(m->ncoflows, 3);
	assert_int_equal(state_of(r, 11), CP_COFLOW_ACTIVE);
	assert_int_equal(state_of(r, 12), CP_COFLOW_WAITING);
	assert_true(vcoflow(m, r, 11)->sent_bytes == 400);

	/* refusals */
	jb_init(&x, 2);
	jb_coflow(&x, 20, 0, 0);
	expect_extend_refused(r, &x, -ENOENT, "job 2 is not registered");
	jb_init(&x, 1);
	expect_extend_refused(r, &x, -EINVAL, "adds no coflows");
	jb_init(&x, 1);
	jb_coflow(&x, 12, 0, 0);
	expect_extend_refused(r, &x, -EEXIST, "coflow id 12 is already registered");
	jb_init(&x, 1);
	jb_coflow(&x, 13, 0, 0);
	jb_edge(&x, 13, 11, 0);
	expect_extend_refused(r, &x, -EINVAL, "coflow 11 was registered before");
	jb_init(&x, 1);
	jb_coflow(&x, 13, 0, 0);
	jb_edge(&x, 99, 13, 0);
	expect_extend_refused(r, &x, -ENOENT, "coflow 99 is not one of this job's");
	jb_init(&x, 1);
	jb_coflow(&x, 13, 0, 0);
	jb_coflow(&x, 14, 0, 0);
	jb_edge(&x, 13, 14, 0);
	jb_edge(&x, 14, 13, 0);
	expect_extend_refused(r, &x, -ELOOP, "cycle");
	jb_init(&x, 1);
	jb_coflow(&x, 13, 0, 0);
	jb_flow(&x, 0, 0, 1, 10, &t1);
	expect_extend_refused(r, &x, -EEXIST, "already announced");
	jb_init(&x, 1);
	jb_coflow(&x, 13, 0, 0);
	jb_flow(&x, 0, 0, NHOSTS, 10, NULL);
	expect_extend_refused(r, &x, -EINVAL, "out of range");
	jb_init(&x, 1);
	x.s.tenant = 3;
	jb_coflow(&x, 13, 0, 0);
	expect_extend_refused(r, &x, -EACCES, "another tenant");

	/* 11 ends: 12 is released; 13 joins after 12, which is then declared done */
	assert_int_equal(loomd_registry_flow_stat(r, &t1, 600, true, 30), 0);
	assert_int_equal(state_of(r, 11), CP_COFLOW_DONE);
	loomd_registry_release_due(r, 30, NULL);
	assert_int_equal(state_of(r, 12), CP_COFLOW_ACTIVE);
	assert_int_equal(loomd_registry_coflow_done(r, 12, 40, &err), 0);
	jb_init(&x, 1);
	jb_coflow(&x, 13, 0, 0);
	jb_flow(&x, 0, 2, 3, 70, &t3);
	jb_edge(&x, 12, 13, 5);
	assert_int_equal(jb_extend(r, &x, 50, &err), 0);
	view(r, &rebuilt);
	assert_true(rebuilt);
	assert_int_equal(state_of(r, 12), CP_COFLOW_DONE);
	assert_int_equal(loomd_registry_coflow(r, 12)->done_ns, 40);
	/* its parent ended at 40 with a delay of 5: due at 45, released by now */
	loomd_registry_release_due(r, 50, NULL);
	assert_int_equal(state_of(r, 13), CP_COFLOW_ACTIVE);
	assert_int_equal(loomd_registry_job(r, 1)->done_ns, CP_TIME_NEVER);

	/* the anchor and 13 end: the job is finished and cannot grow */
	assert_int_equal(loomd_registry_flow_stat(r, &t3, 70, true, 60), 0);
	assert_int_equal(loomd_registry_coflow_done(r, 10, 70, &err), 0);
	view(r, NULL);
	assert_int_equal(loomd_registry_job(r, 1)->done_ns, 70);
	jb_init(&x, 1);
	jb_coflow(&x, 14, 0, 0);
	expect_extend_refused(r, &x, -EALREADY, "job 1 has finished");
}

static void test_job_done(void **state)
{
	struct fx *fx = *state;
	struct loomd_registry *r = fx->r;
	struct loom_err err = {{0}};
	struct wire_tuple t1 = tup(1);
	struct loomd_registry_counts c;
	struct cp_model *m;
	bool rebuilt;
	struct jb j;

	/* 10 -> 11 -> 12, 10 has a flow */
	jb_init(&j, 1);
	jb_coflow(&j, 10, 0, 0);
	jb_coflow(&j, 11, 0, 0);
	jb_coflow(&j, 12, 0, 0);
	jb_flow(&j, 0, 0, 1, 100, &t1);
	jb_edge(&j, 10, 11, 0);
	jb_edge(&j, 11, 12, 1000);
	jb_add_ok(r, &j, 0);
	view(r, NULL);
	loomd_registry_release_due(r, 0, NULL);
	assert_int_equal(state_of(r, 10), CP_COFLOW_ACTIVE);
	assert_int_equal(state_of(r, 11), CP_COFLOW_WAITING);

	assert_int_equal(loomd_registry_job_done(r, 99, 50, &err), -ENOENT);
	assert_int_equal(loomd_registry_job_done(r, 1, 50, &err), 0);
	assert_int_equal(loomd_registry_job_done(r, 1, 60, &err), -EALREADY);
	m = view(r, &rebuilt);
	assert_true(rebuilt);
	assert_int_equal(state_of(r, 10), CP_COFLOW_DONE);
	assert_int_equal(state_of(r, 11), CP_COFLOW_DONE);
	assert_int_equal(state_of(r, 12), CP_COFLOW_DONE);
	assert_int_equal(m->jobs[0].state, CP_JOB_DONE);
	assert_int_equal(loomd_registry_job(r, 1)->done_ns, 50);
	for (uint64_t id = 10; id <= 12; id++)
		assert_int_equal(loomd_registry_coflow(r, id)->done_ns, 50);
	loomd_registry_counts(r, &c);
	assert_int_equal(c.jobs_done, 1);
	assert_int_equal(c.coflows_done, 3);
	assert_int_equal(c.coflows_active, 0);
	/* a done job's coflows take no more flows */
	{
		struct loomd_flow_spec f = flow_spec(0, 1, 1, 2);

		assert_int_equal(loomd_registry_add_flow(r, 12, &f, 70, &err), -EALREADY);
	}
	assert_int_equal(loomd_registry_coflow_done(r, 12, 70, &err), -EALREADY);
}

static void test_unregister(void **state)
{
	struct fx *fx = *state;
	struct loomd_registry *r = fx->r;
	struct loom_err err = {{0}};
	struct wire_tuple t1 = tup(1), t2 = tup(2), t3 = tup(3), t5 = tup(5);
	struct loomd_registry_counts c;
	struct loomd_rjob *const *jobs;
	struct cp_model *m;
	bool rebuilt;
	uint32_t n;
	struct jb j;

	add_two_stage(r); /* job 1: coflows 100, 200; tuples 1-3 */
	jb_init(&j, 2);
	jb_coflow(&j, 300, 0, 0);
	jb_flow(&j, 0, 4, 5, 100, &t5);
	jb_add_ok(r, &j, 0);
	view(r, NULL);
	loomd_registry_release_due(r, 1000, NULL);
	assert_int_equal(loomd_registry_flow_stat(r, &t1, 10, false, 1000), 0);

	assert_int_equal(loomd_registry_unregister(r, 1, &err), 0);
	assert_null(loomd_registry_job(r, 1));
	assert_null(loomd_registry_coflow(r, 100));
	assert_null(loomd_registry_coflow(r, 200));
	assert_null(loomd_registry_flow(r, &t1));
	assert_null(loomd_registry_flow(r, &t2));
	assert_null(loomd_registry_flow(r, &t3));
	assert_non_null(loomd_registry_job(r, 2));
	assert_non_null(loomd_registry_flow(r, &t5));
	jobs = loomd_registry_jobs(r, &n);
	assert_int_equal(n, 1);
	assert_int_equal(jobs[0]->id, 2);
	loomd_registry_counts(r, &c);
	assert_int_equal(c.jobs, 1);
	assert_int_equal(c.coflows, 1);
	assert_int_equal(c.flows, 1);
	/* its flows' stats are unknown now */
	assert_int_equal(loomd_registry_flow_stat(r, &t1, 10, true, 1100), -ENOENT);
	assert_int_equal(loomd_registry_unregister(r, 1, &err), -ENOENT);

	m = view(r, &rebuilt);
	assert_true(rebuilt);
	assert_int_equal(m->njobs, 1);
	assert_int_equal(m->jobs[0].ext_id, 2);
	assert_int_equal(m->ncoflows, 1);
	assert_int_equal(m->coflows[0].ext_id, 300);
	assert_int_equal(m->nflows, 1);

	/* its ids and tuples are free again */
	add_two_stage(r);
	assert_non_null(loomd_registry_flow(r, &t1));
	assert_int_equal(loomd_registry_flow(r, &t1)->sent_bytes, 0);

	assert_int_equal(loomd_registry_unregister(r, 2, &err), 0);
	assert_int_equal(loomd_registry_unregister(r, 1, &err), 0);
	loomd_registry_counts(r, &c);
	assert_int_equal(c.jobs, 0);
	assert_int_equal(c.coflows, 0);
	assert_int_equal(c.flows, 0);
	assert_int_equal(c.jobs_done, 0);
	loomd_registry_jobs(r, &n);
	assert_int_equal(n, 0);
	assert_null(loomd_registry_flow(r, &t5));
}

static void test_expire(void **state)
{
	struct fx *fx = *state;
	struct loomd_registry *r = fx->r;
	struct loom_err err = {{0}};
	uint64_t ids[4] = {0};
	struct cp_model *m;
	uint32_t n;
	struct jb j;

	for (uint64_t id = 1; id <= 4; id++) {
		jb_init(&j, id);
		jb_coflow(&j, id * 10, 0, 0);
		jb_add_ok(r, &j, 0);
	}
	view(r, NULL);
	loomd_registry_release_due(r, 0, NULL);
	assert_int_equal(loomd_registry_coflow_done(r, 10, 100, &err), 0);
	assert_int_equal(loomd_registry_coflow_done(r, 20, 300, &err), 0);
	assert_int_equal(loomd_registry_coflow_done(r, 30, 200, &err), 0);
	assert_int_equal(loomd_registry_job(r, 1)->done_ns, 100);
	assert_int_equal(loomd_registry_job(r, 2)->done_ns, 300);
	assert_int_equal(loomd_registry_job(r, 3)->done_ns, 200);

	/* done strictly before the cutoff */
	assert_int_equal(loomd_registry_expire(r, 100, ids, 4), 0);
	assert_int_equal(loomd_registry_expire(r, 201, ids, 4), 2);
	assert_int_equal(ids[0], 1);
	assert_int_equal(ids[1], 3);
	assert_null(loomd_registry_job(r, 1));
	assert_null(loomd_registry_coflow(r, 10));
	assert_null(loomd_registry_job(r, 3));
	assert_non_null(loomd_registry_job(r, 2));
	assert_non_null(loomd_registry_job(r, 4));
	loomd_registry_jobs(r, &n);
	assert_int_equal(n, 2);
	/* no room for ids: nothing forgotten */
	assert_int_equal(loomd_registry_expire(r, 1000, ids, 0), 0);
	assert_non_null(loomd_registry_job(r, 2));
	/* a job not done never expires */
	assert_int_equal(loomd_registry_expire(r, UINT64_MAX, ids, 4), 1);
	assert_int_equal(ids[0], 2);
	assert_non_null(loomd_registry_job(r, 4));
	m = view(r, NULL);
	assert_int_equal(m->njobs, 1);
	assert_int_equal(m->jobs[0].ext_id, 4);
	assert_int_equal(loomd_registry_coflow_state(r, loomd_registry_coflow(r, 40)),
			 CP_COFLOW_ACTIVE);
}

/* ---- rebuilds --------------------------------------------------------------------------------- */

struct cstate {
	uint64_t id;
	enum cp_coflow_state state;
	uint64_t ready_ns, release_ns, finish_ns;
	uint32_t flows_left;
	double sent_bytes, job_sent_bytes;
};

static uint32_t capture(struct cp_model *m, const struct loomd_registry *r, struct cstate *out,
			uint32_t cap)
{
	uint32_t n = 0;

	for (uint32_t c = 0; c < m->ncoflows && n < cap; c++) {
		const struct cp_coflow *cf = &m->coflows[c];

		out[n++] = (struct cstate){cf->ext_id,     cf->state,
					   cf->ready_ns,   cf->release_ns,
					   cf->finish_ns,  cf->flows_left,
					   cf->sent_bytes, m->jobs[cf->job].sent_bytes};
		assert_ptr_equal(loomd_registry_view_coflow(r, c)->view, c);
	}
	return n;
}

static void assert_same_states(const struct cstate *a, uint32_t na, const struct cstate *b,
			       uint32_t nb)
{
	for (uint32_t i = 0; i < na; i++) {
		const struct cstate *x = &a[i], *y = NULL;

		for (uint32_t k = 0; k < nb; k++)
			if (b[k].id == x->id)
				y = &b[k];
		if (!y)
			fail_msg("coflow %llu is gone after the rebuild",
				 (unsigned long long)x->id);
		if (x->state != y->state || x->release_ns != y->release_ns ||
		    x->finish_ns != y->finish_ns || x->sent_bytes != y->sent_bytes ||
		    x->job_sent_bytes != y->job_sent_bytes ||
		    (x->state != CP_COFLOW_WAITING && x->ready_ns != y->ready_ns))
			fail_msg("coflow %llu: before state %d ready %llu release %llu finish %llu "
				 "sent %.0f job sent %.0f; after state %d ready %llu release %llu "
				 "finish %llu sent %.0f job sent %.0f",
				 (unsigned long long)x->id, x->state,
				 (unsigned long long)x->ready_ns, (unsigned long long)x->release_ns,
				 (unsigned long long)x->finish_ns, x->sent_bytes, x->job_sent_bytes,
				 y->state, (unsigned long long)y->ready_ns,
				 (unsigned long long)y->release_ns,
				 (unsigned long long)y->finish_ns, y->sent_bytes,
				 y->job_sent_bytes);
	}
}

static void test_rebuild_keeps_state(void **state)
{
	struct fx *fx = *state;
	struct loomd_registry *r = fx->r;
	struct loom_err err = {{0}};
	struct wire_tuple t[8];
	struct cstate before[8], after[8];
	uint32_t nb, na;
	struct loomd_flow_spec f;
	struct cp_model *m;
	bool rebuilt;
	struct jb j;

	for (uint32_t i = 0; i < 8; i++)
		t[i] = tup(i + 1);
	/* job 1: open 10 (tuples 1, 2 announced) -> 11 (tuples 3, 4), 10 -> 12 (tuple 5) */
	jb_init(&j, 1);
	jb_coflow(&j, 10, 0, 0);
	jb_coflow(&j, 11, 0, 0);
	jb_coflow(&j, 12, 0, 200);
	jb_flow(&j, 1, 0, 1, 1000, &t[2]);
	jb_flow(&j, 1, 2, 1, 0, &t[3]); /* unknown size */
	jb_flow(&j, 2, 3, 4, 300, &t[4]);
	jb_edge(&j, 10, 11, 50);
	jb_edge(&j, 10, 12, 0);
	jb_add_ok(r, &j, 0);
	/* job 2 arrives later: coflow 20 (tuple 6) */
	jb_init(&j, 2);
	jb_coflow(&j, 20, 0, 0);
	jb_flow(&j, 0, 5, 6, 800, &t[5]);
	jb_add_ok(r, &j, 40);
	f = (struct loomd_flow_spec){.src = 0, .dst = 2, .bytes = 500, .has_tuple = true};
	f.tuple = t[0];
	assert_int_equal(loomd_registry_add_flow(r, 10, &f, 45, &err), 0);
	f.src = 1;
	f.tuple = t[1];
	assert_int_equal(loomd_registry_add_flow(r, 10, &f, 45, &err), 0);

	m = view(r, NULL);
	loomd_registry_release_due(r, 50, NULL);
	assert_int_equal(state_of(r, 10), CP_COFLOW_ACTIVE);
	assert_int_equal(state_of(r, 20), CP_COFLOW_ACTIVE);
	/* 10: some bytes, one flow done, then declared done */
	assert_int_equal(loomd_registry_flow_stat(r, &t[0], 500, true, 60), 0);
	assert_int_equal(loomd_registry_flow_stat(r, &t[1], 200, false, 60), 0);
	/* bytes for 11 while it waits */
	assert_int_equal(loomd_registry_flow_stat(r, &t[2], 30, false, 70), 0);
	assert_int_equal(loomd_registry_coflow_done(r, 10, 80, &err), 0);
	/* 11 ready at 130, 12 at 200 */
	assert_int_equal(loomd_registry_release_due(r, 150, NULL), 1);
	assert_int_equal(state_of(r, 11), CP_COFLOW_ACTIVE);
	assert_int_equal(state_of(r, 12), CP_COFLOW_READY);
	assert_int_equal(loomd_registry_flow_stat(r, &t[2], 970, true, 160), 0);
	assert_int_equal(loomd_registry_flow_stat(r, &t[3], 12345, false, 170), 0);
	assert_int_equal(loomd_registry_flow_stat(r, &t[5], 100, false, 170), 0);
	assert_ptr_equal(view(r, &rebuilt), m);
	assert_false(rebuilt);
	nb = capture(m, r, before, 8);
	assert_int_equal(nb, 4);

	/* a new flow for job 2's open coflow 20 would change the shape: use a new job instead */
	jb_init(&j, 3);
	jb_coflow(&j, 30, 0, 0);
	jb_add_ok(r, &j, 175);
	m = view(r, &rebuilt);
	assert_true(rebuilt);
	na = capture(m, r, after, 8);
	assert_int_equal(na, 5);
	assert_same_states(before, nb, after, na);
	/* flows too */
	for (uint32_t i = 0; i < 6; i++) {
		struct loomd_rflow *fl = loomd_registry_flow(r, &t[i]);

		assert_non_null(fl);
		assert_int_equal(m->flows[fl->view].done, fl->done || i == 1);
		if (!m->flows[fl->view].done && fl->bytes)
			assert_true(m->flows[fl->view].remaining_bytes ==
				    (double)(fl->bytes - fl->sent_bytes));
	}
	assert_true(m->flows[loomd_registry_flow(r, &t[3])->view].remaining_bytes ==
		    (double)(1u << 20));

	/* an announced flow goes into a slot the view reserved: no rebuild, same states */
	nb = capture(m, r, before, 8);
	f = (struct loomd_flow_spec){.src = 6, .dst = 7, .bytes = 10, .has_tuple = true};
	f.tuple = t[6];
	assert_int_equal(loomd_registry_add_flow(r, 30, &f, 180, &err), 0);
	m = view(r, &rebuilt);
	assert_false(rebuilt);
	na = capture(m, r, after, 8);
	assert_same_states(before, nb, after, na);
	{
		struct loomd_rflow *fl = loomd_registry_flow(r, &t[6]);

		assert_int_not_equal(fl->view, CP_NONE);
		assert_int_equal(m->flows[fl->view].coflow, loomd_registry_coflow(r, 30)->view);
		assert_false(m->flows[fl->view].done);
		assert_true(m->flows[fl->view].remaining_bytes == 10.0);
	}
	/* a forced rebuild gives the same view */
	nb = capture(m, r, before, 8);
	assert_int_equal(loomd_registry_unregister(r, 99, &err), -ENOENT);
	m = view(r, &rebuilt);
	na = capture(m, r, after, 8);
	assert_same_states(before, nb, after, na);

	/* rebuilt after the last flow of 11 ends: the job's end survives rebuilds too */
	assert_int_equal(loomd_registry_release_due(r, 200, NULL), 1);
	assert_int_equal(loomd_registry_flow_stat(r, &t[3], 1, true, 210), 0);
	assert_int_equal(loomd_registry_flow_stat(r, &t[4], 300, true, 220), 0);
	assert_int_equal(loomd_registry_job(r, 1)->done_ns, 220);
	nb = capture(m, r, before, 8);
	assert_int_equal(loomd_registry_unregister(r, 2, &err), 0);
	m = view(r, &rebuilt);
	assert_true(rebuilt);
	na = capture(m, r, after, 8);
	assert_int_equal(na, nb - 1);
	assert_same_states(after, na, before, nb);
	assert_int_equal(m->jobs[loomd_registry_job(r, 1)->view].state, CP_JOB_DONE);
}

/*
 * A coflow that expects many flows gets view slots as it fills (the room
 * doubles at each rebuild), not all at once: a peer declaring millions of
 * expected flows cannot make loomd allocate them (fuzz_loomd found a 5 GB
 * allocation). More expected flows than max_flows is refused.
 */
static void test_expected_flows_reserve(void **state)
{
	struct fx *fx = *state;
	struct loomd_registry *r = fx_registry_new(fx->t, 10, 10, 1u << 20);
	struct loom_err err = {{0}};
	uint32_t rebuilds = 0;
	struct cp_model *m;
	bool rebuilt;
	struct jb j;

	jb_init(&j, 1);
	jb_coflow(&j, 10, 1u << 20, 0);
	jb_add_ok(r, &j, 0);
	m = view(r, &rebuilt);
	assert_true(m->nflows <= 64);
	for (uint32_t i = 0; i < 100; i++) {
		struct loomd_flow_spec f = flow_spec(i % NHOSTS, (i + 1) % NHOSTS, 10, i);

		assert_int_equal(loomd_registry_add_flow(r, 10, &f, 1, &err), 0);
		m = view(r, &rebuilt);
		rebuilds += rebuilt;
		assert_int_not_equal(loomd_registry_flow(r, &f.tuple)->view, CP_NONE);
		assert_true(m->nflows <= 2 * (i + 1) + 64);
	}
	/* 16, 32, 64, 128 slots: a few rebuilds, not one per flow */
	assert_true(rebuilds >= 1 && rebuilds <= 4);
	jb_init(&j, 2);
	jb_coflow(&j, 20, (1u << 20) + 1, 0);
	expect_refused(r, &j, -ENOSPC, "expected_flows 1048577 exceeds max_flows (1048576)");
	loomd_registry_free(r);
}

/*
 * A job's end is its last coflow's end, whatever order the rebuild replays
 * its coflows in: two root coflows, the first one listed ends last.
 */
static void test_rebuild_job_finish_time(void **state)
{
	struct fx *fx = *state;
	struct loomd_registry *r = fx->r;
	struct wire_tuple t1 = tup(1), t2 = tup(2);
	struct cp_model *m;
	bool rebuilt;
	struct jb j;

	jb_init(&j, 1);
	jb_coflow(&j, 10, 0, 0);
	jb_coflow(&j, 11, 0, 0);
	jb_flow(&j, 0, 0, 1, 100, &t1);
	jb_flow(&j, 1, 1, 2, 100, &t2);
	jb_add_ok(r, &j, 0);
	m = view(r, NULL);
	assert_int_equal(loomd_registry_flow_stat(r, &t2, 100, true, 100), 0);
	assert_int_equal(loomd_registry_flow_stat(r, &t1, 100, true, 200), 0);
	assert_int_equal(loomd_registry_coflow(r, 11)->done_ns, 100);
	assert_int_equal(loomd_registry_coflow(r, 10)->done_ns, 200);
	assert_int_equal(loomd_registry_job(r, 1)->done_ns, 200);
	assert_int_equal(m->jobs[0].finish_ns, 200);

	/* any change of shape rebuilds the view: job 1 still ended at 200 */
	jb_init(&j, 2);
	jb_coflow(&j, 20, 0, 0);
	jb_add_ok(r, &j, 300);
	m = view(r, &rebuilt);
	assert_true(rebuilt);
	assert_int_equal(loomd_registry_coflow(r, 11)->done_ns, 100);
	assert_int_equal(loomd_registry_coflow(r, 10)->done_ns, 200);
	assert_int_equal(m->jobs[loomd_registry_job(r, 1)->view].finish_ns, 200);
	assert_int_equal(loomd_registry_job(r, 1)->done_ns, 200);
}

/*
 * Bytes an agent reports for a flow the view already counts as done (the
 * flow ended, or its coflow was declared done) go into the registry; the
 * view must count them the same way before and after a rebuild.
 */
static void test_rebuild_late_bytes(void **state)
{
	struct fx *fx = *state;
	struct loomd_registry *r = fx->r;
	struct wire_tuple t1 = tup(1), t2 = tup(2);
	struct cstate before[4], after[4];
	uint32_t nb, na;
	struct cp_model *m;
	bool rebuilt;
	struct jb j;

	jb_init(&j, 1);
	jb_coflow(&j, 10, 0, 0);
	jb_coflow(&j, 11, 0, 0);
	jb_flow(&j, 0, 0, 1, 100, &t1);
	jb_flow(&j, 0, 1, 2, 100, &t2);
	jb_add_ok(r, &j, 0);
	m = view(r, NULL);
	loomd_registry_release_due(r, 0, NULL);
	assert_int_equal(loomd_registry_flow_stat(r, &t1, 100, true, 10), 0);
	/* late bytes on a done flow */
	assert_int_equal(loomd_registry_flow_stat(r, &t1, 40, false, 20), -EALREADY);
	assert_int_equal(loomd_registry_coflow(r, 10)->sent_bytes, 140);
	nb = capture(m, r, before, 4);

	jb_init(&j, 2);
	jb_coflow(&j, 20, 0, 0);
	jb_add_ok(r, &j, 30);
	m = view(r, &rebuilt);
	assert_true(rebuilt);
	na = capture(m, r, after, 4);
	assert_same_states(before, nb, after, na);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_add_job_refusals, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_limits, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_announce, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_announce_by_address, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_view_two_stage, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_coflow_done_open, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_job_done, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_extend, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_unregister, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_expire, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_rebuild_keeps_state, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_expected_flows_reserve, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_rebuild_job_finish_time, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_rebuild_late_bytes, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
