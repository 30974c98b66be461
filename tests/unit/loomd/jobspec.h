/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test helper: a job spec builder for the loomd unit tests (a job of up to
 * JB_COFLOWS coflows of up to JB_FLOWS flows each and JB_EDGES edges, added
 * to a registry), the n-th test 5-tuple and the ABC job of three coflows.
 * Shared by the tests that put jobs straight into a registry.
 */
#ifndef LOOM_TESTS_UNIT_LOOMD_JOBSPEC_H
#define LOOM_TESTS_UNIT_LOOMD_JOBSPEC_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "controlplane/loomd/registry.h"

#define JB_COFLOWS 6
#define JB_FLOWS   6
#define JB_EDGES   8

struct jb {
	struct loomd_job_spec s;
	struct loomd_coflow_spec c[JB_COFLOWS];
	struct loomd_flow_spec f[JB_COFLOWS][JB_FLOWS];
	struct loomd_edge_spec e[JB_EDGES];
};

/* The n-th test tuple: 10.1.x.y:1000+n -> 10.2.x.y:80, TCP. */
static inline struct wire_tuple tup(uint32_t n)
{
	struct wire_tuple t;

	memset(&t, 0, sizeof(t));
	t.family = 4;
	t.protocol = 6;
	t.src[0] = 10;
	t.src[1] = 1;
	t.src[2] = (uint8_t)(n >> 8);
	t.src[3] = (uint8_t)n;
	t.dst[0] = 10;
	t.dst[1] = 2;
	t.dst[2] = (uint8_t)(n >> 8);
	t.dst[3] = (uint8_t)n;
	t.src_port = (uint16_t)(1000 + n);
	t.dst_port = 80;
	return t;
}

/* An empty job id named "job<id>" of weight 1. */
static inline void jb_init(struct jb *j, uint64_t id)
{
	memset(j, 0, sizeof(*j));
	j->s.id = id;
	j->s.weight = 1.0;
	snprintf(j->s.name, sizeof(j->s.name), "job%llu", (unsigned long long)id);
}

/* Adds a coflow; returns its index in the spec. */
static inline uint32_t jb_coflow(struct jb *j, uint64_t id, uint32_t expected_flows,
				 uint64_t offset_ns)
{
	uint32_t i = j->s.ncoflows++;

	assert_true(i < JB_COFLOWS);
	j->c[i].id = id;
	j->c[i].expected_flows = expected_flows;
	j->c[i].release_offset_ns = offset_ns;
	return i;
}

/* Adds flow src -> dst of bytes to coflow ci, with tuple *t if t is not NULL. */
static inline void jb_flow(struct jb *j, uint32_t ci, uint32_t src, uint32_t dst, uint64_t bytes,
			   const struct wire_tuple *t)
{
	struct loomd_flow_spec *f = &j->f[ci][j->c[ci].nflows++];

	assert_true(j->c[ci].nflows <= JB_FLOWS);
	f->src = src;
	f->dst = dst;
	f->bytes = bytes;
	if (t) {
		f->has_tuple = true;
		f->tuple = *t;
	}
}

static inline void jb_edge(struct jb *j, uint64_t parent, uint64_t child, uint64_t delay_ns)
{
	uint32_t i = j->s.nedges++;

	assert_true(i < JB_EDGES);
	j->e[i] = (struct loomd_edge_spec){parent, child, delay_ns};
}

/*
 * The ABC job: job 1 with three coflows released 0, 10 and 20 ns after it
 * arrives (so fifo orders them A, B, C), each flow of bytes:
 *   A (id 10): 0 -> 1 (tuple 1), 2 -> 3 (tuple 2)
 *   B (id 11): 0 -> 4 (tuple 3)
 *   C (id 12): c_src -> 5 (tuple 4), 6 -> 7 (tuple 5)
 */
static inline void jb_abc(struct jb *j, uint32_t c_src, uint64_t bytes)
{
	struct wire_tuple t1 = tup(1), t2 = tup(2), t3 = tup(3), t4 = tup(4), t5 = tup(5);

	jb_init(j, 1);
	jb_coflow(j, 10, 2, 0);
	jb_coflow(j, 11, 1, 10);
	jb_coflow(j, 12, 2, 20);
	jb_flow(j, 0, 0, 1, bytes, &t1);
	jb_flow(j, 0, 2, 3, bytes, &t2);
	jb_flow(j, 1, 0, 4, bytes, &t3);
	jb_flow(j, 2, c_src, 5, bytes, &t4);
	jb_flow(j, 2, 6, 7, bytes, &t5);
}

/* Adds the job to r at now_ns: loomd_registry_add_job's result. */
static inline int jb_add(struct loomd_registry *r, struct jb *j, uint64_t now_ns,
			 struct loom_err *err)
{
	j->s.coflows = j->c;
	j->s.edges = j->e;
	for (uint32_t i = 0; i < j->s.ncoflows; i++)
		j->c[i].flows = j->f[i];
	return loomd_registry_add_job(r, &j->s, now_ns, err);
}

/* Adds j's coflows and edges to the registered job j->s.id: loomd_registry_extend_job's result. */
static inline int jb_extend(struct loomd_registry *r, struct jb *j, uint64_t now_ns,
			    struct loom_err *err)
{
	j->s.coflows = j->c;
	j->s.edges = j->e;
	for (uint32_t i = 0; i < j->s.ncoflows; i++)
		j->c[i].flows = j->f[i];
	return loomd_registry_extend_job(r, &j->s, now_ns, err);
}

/* Adds the job to r at now_ns; fails the test if it is refused. */
static inline void jb_add_ok(struct loomd_registry *r, struct jb *j, uint64_t now_ns)
{
	struct loom_err err = {{0}};
	int rc = jb_add(r, j, now_ns, &err);

	if (rc != 0)
		fail_msg("add_job %llu: %d %s", (unsigned long long)j->s.id, rc, err.msg);
}

#endif
