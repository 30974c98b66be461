/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for dataplane/table: a new table; a full table then deltas
 * (changed flows and classes, removals of flows and of coflows' classes,
 * default_class); lookups of a known flow, of a flow whose coflow has no
 * class and of an unknown flow; refusals (stale base -> -ESTALE, malformed
 * updates and versions that do not grow -> -EINVAL) that change nothing; a
 * full table replacing everything; IPv4 and IPv6 tuples; 100k flows built
 * then half removed by a delta; snapshots (exact, sorted, independent of the
 * table); out of memory (RLIMIT_AS in a child) changing nothing; and random
 * churn against a reference model (fixed seed) through growth and shrinking.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/rng.h"
#include "dataplane/table.h"
#include "tests/oom.h"
#include "tests/precond.h"

#define NCLASSES 8

/* ---- helpers -------------------------------------------------------------------------------- */

static struct wire_tuple tup4(uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport,
			      uint8_t proto)
{
	struct wire_tuple t;

	memset(&t, 0, sizeof(t));
	t.family = 4;
	t.protocol = proto;
	t.src_port = sport;
	t.dst_port = dport;
	for (int i = 0; i < 4; i++) {
		t.src[i] = (uint8_t)(src >> (24 - 8 * i));
		t.dst[i] = (uint8_t)(dst >> (24 - 8 * i));
	}
	return t;
}

/* An IPv6 tuple fd00::<src> -> fd00::<dst>. */
static struct wire_tuple tup6(uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport,
			      uint8_t proto)
{
	struct wire_tuple t = tup4(src, dst, sport, dport, proto);

	t.family = 6;
	memmove(t.src + 12, t.src, 4);
	memmove(t.dst + 12, t.dst, 4);
	memset(t.src, 0, 12);
	memset(t.dst, 0, 12);
	t.src[0] = t.dst[0] = 0xfd;
	return t;
}

static struct dp_table *table_new(void)
{
	struct dp_table *t = dp_table_new(NCLASSES);

	assert_non_null(t);
	return t;
}

/* Asserts that tuple looks up as (cls, coflow, known). */
static void expect(const struct dp_table *t, const struct wire_tuple *tuple, uint32_t cls,
		   uint64_t coflow, bool known)
{
	uint64_t c = 12345;
	bool k = !known;

	assert_int_equal(dp_table_lookup(t, tuple, &c, &k), cls);
	assert_true(k == known);
	assert_int_equal(c, known ? coflow : 0);
	assert_int_equal(dp_table_lookup(t, tuple, NULL, NULL), cls);
}

static void assert_snapshots_equal(const struct dp_snapshot *a, const struct dp_snapshot *b)
{
	assert_int_equal(a->version, b->version);
	assert_int_equal(a->default_class, b->default_class);
	assert_int_equal(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		assert_true(wire_tuple_eq(&a->flows[i].tuple, &b->flows[i].tuple));
		assert_int_equal(a->flows[i].coflow_id, b->flows[i].coflow_id);
		assert_int_equal(a->flows[i].cls, b->flows[i].cls);
		assert_int_equal(a->flows[i].rate_bps, b->flows[i].rate_bps);
	}
}

static void assert_sorted(const struct dp_snapshot *s)
{
	for (size_t i = 1; i < s->n; i++)
		assert_true(dp_tuple_cmp(&s->flows[i - 1].tuple, &s->flows[i].tuple) < 0);
}

/* The small table most tests start from, at version 1:
 *   f[0] 10.0.0.1:1000 -> 10.0.0.2:80 tcp   coflow 100 (class 0, 1 Gb/s)
 *   f[1] 10.0.0.1:1001 -> 10.0.0.3:80 tcp   coflow 100
 *   f[2] fd00::1:2000 -> fd00::2:443 tcp    coflow 200 (class 3, no cap)
 *   f[3] fd00::1:2001 -> fd00::3:443 udp    coflow 300 (no class)
 * default_class 7.
 */
static struct wire_tuple F[4];

static void make_flows(void)
{
	F[0] = tup4(0x0a000001, 0x0a000002, 1000, 80, 6);
	F[1] = tup4(0x0a000001, 0x0a000003, 1001, 80, 6);
	F[2] = tup6(1, 2, 2000, 443, 6);
	F[3] = tup6(1, 3, 2001, 443, 17);
}

static void apply_base(struct dp_table *t)
{
	struct dp_flow_entry fl[] = {
		{F[0], 100},
		{F[1], 100},
		{F[2], 200},
		{F[3], 300},
	};
	struct dp_class_entry cl[] = {
		{.coflow_id = 100, .cls = 0, .rate_bps = 1000000000},
		{.coflow_id = 200, .cls = 3, .rate_bps = 0},
	};
	struct dp_update u = {
		.version = 1,
		.full = true,
		.default_class = 7,
		.flows = fl,
		.nflows = 4,
		.classes = cl,
		.nclasses = 2,
	};

	assert_int_equal(dp_table_apply(t, &u), 0);
}

static void expect_base(const struct dp_table *t)
{
	struct wire_tuple unknown = tup4(0x0a000009, 0x0a000002, 1000, 80, 6);

	assert_int_equal(dp_table_version(t), 1);
	assert_int_equal(dp_table_default_class(t), 7);
	assert_int_equal(dp_table_nflows(t), 4);
	assert_int_equal(dp_table_ncoflows(t), 2);
	expect(t, &F[0], 0, 100, true);
	expect(t, &F[1], 0, 100, true);
	expect(t, &F[2], 3, 200, true);
	expect(t, &F[3], 7, 300, true);
	expect(t, &unknown, 7, 0, false);
}

/* ---- basics ----------------------------------------------------------------------------------- */

static void test_new_empty(void **state)
{
	struct dp_table *t;
	struct dp_snapshot *s;
	struct wire_tuple x;

	(void)state;
	make_flows();
	errno = 0;
	assert_null(dp_table_new(0));
	assert_int_equal(errno, EINVAL);
	assert_null(dp_table_free(NULL));
	assert_null(dp_snapshot_free(NULL));

	t = table_new();
	assert_int_equal(dp_table_version(t), 0);
	assert_int_equal(dp_table_nclasses(t), NCLASSES);
	assert_int_equal(dp_table_default_class(t), NCLASSES - 1);
	assert_int_equal(dp_table_nflows(t), 0);
	assert_int_equal(dp_table_ncoflows(t), 0);
	expect(t, &F[0], NCLASSES - 1, 0, false);
	assert_int_equal(dp_table_coflow(t, 100, NULL, NULL), -ENOENT);
	/* an ill-formed tuple is simply not found */
	memset(&x, 0, sizeof(x));
	expect(t, &x, NCLASSES - 1, 0, false);

	s = dp_table_snapshot(t);
	assert_non_null(s);
	assert_int_equal(s->version, 0);
	assert_int_equal(s->default_class, NCLASSES - 1);
	assert_int_equal(s->n, 0);
	assert_null(s->flows);
	assert_null(dp_snapshot_find(s, &F[0]));
	assert_null(dp_snapshot_free(s));
	assert_null(dp_table_free(t));
}

static void test_full_then_deltas(void **state)
{
	struct dp_table *t = table_new();
	struct wire_tuple f4 = tup4(0x0a000005, 0x0a000006, 5000, 5001, 17);
	uint32_t cls = 99;
	uint64_t rate = 99;

	(void)state;
	make_flows();
	apply_base(t);
	expect_base(t);
	assert_int_equal(dp_table_coflow(t, 100, &cls, &rate), 0);
	assert_int_equal(cls, 0);
	assert_int_equal(rate, 1000000000);
	assert_int_equal(dp_table_coflow(t, 300, &cls, &rate), -ENOENT);
	assert_int_equal(cls, 0); /* untouched */

	/* v2: f[1] moves to coflow 200, a new flow f4 of coflow 300, coflow 300 gets class 5,
	 * coflow 100's class and cap change, default_class 6 */
	{
		struct dp_flow_entry fl[] = {{F[1], 200}, {f4, 300}};
		struct dp_class_entry cl[] = {
			{.coflow_id = 300, .cls = 5, .rate_bps = 42},
			{.coflow_id = 100, .cls = 1, .rate_bps = 7},
		};
		struct dp_update u = {.version = 2,
				      .base_version = 1,
				      .default_class = 6,
				      .flows = fl,
				      .nflows = 2,
				      .classes = cl,
				      .nclasses = 2};

		assert_int_equal(dp_table_apply(t, &u), 0);
	}
	assert_int_equal(dp_table_version(t), 2);
	assert_int_equal(dp_table_default_class(t), 6);
	assert_int_equal(dp_table_nflows(t), 5);
	assert_int_equal(dp_table_ncoflows(t), 3);
	expect(t, &F[0], 1, 100, true);
	expect(t, &F[1], 3, 200, true);
	expect(t, &F[2], 3, 200, true);
	expect(t, &F[3], 5, 300, true);
	expect(t, &f4, 5, 300, true);
	assert_int_equal(dp_table_coflow(t, 100, &cls, &rate), 0);
	assert_int_equal(cls, 1);
	assert_int_equal(rate, 7);

	/* v3: remove f[0] and an absent flow; remove coflow 200's class and an absent coflow:
	 * its flows stay, now with default_class */
	{
		struct wire_tuple rmf[] = {F[0], tup4(1, 2, 3, 4, 6)};
		uint64_t rmc[] = {200, 999};
		struct dp_update u = {.version = 3,
				      .base_version = 2,
				      .default_class = 6,
				      .removed_flows = rmf,
				      .nremoved_flows = 2,
				      .removed_coflows = rmc,
				      .nremoved_coflows = 2};

		assert_int_equal(dp_table_apply(t, &u), 0);
	}
	assert_int_equal(dp_table_version(t), 3);
	assert_int_equal(dp_table_nflows(t), 4);
	assert_int_equal(dp_table_ncoflows(t), 2);
	expect(t, &F[0], 6, 0, false);
	expect(t, &F[1], 6, 200, true);
	expect(t, &F[2], 6, 200, true);
	expect(t, &F[3], 5, 300, true);
	assert_int_equal(dp_table_coflow(t, 200, NULL, NULL), -ENOENT);

	/* v4: removed then re-added in one delta (removals go first): present; a key twice in
	 * one array: the last entry wins */
	{
		struct dp_flow_entry fl[] = {{F[0], 100}, {F[3], 100}, {F[3], 300}};
		struct dp_class_entry cl[] = {
			{.coflow_id = 200, .cls = 2, .rate_bps = 1},
			{.coflow_id = 200, .cls = 4, .rate_bps = 2},
		};
		struct wire_tuple rmf[] = {F[0]};
		uint64_t rmc[] = {100};
		struct dp_update u = {.version = 4,
				      .base_version = 3,
				      .default_class = 7,
				      .flows = fl,
				      .nflows = 3,
				      .classes = cl,
				      .nclasses = 2,
				      .removed_flows = rmf,
				      .nremoved_flows = 1,
				      .removed_coflows = rmc,
				      .nremoved_coflows = 1};

		assert_int_equal(dp_table_apply(t, &u), 0);
	}
	assert_int_equal(dp_table_nflows(t), 5);
	assert_int_equal(dp_table_ncoflows(t), 2);
	expect(t, &F[0], 7, 100, true);
	expect(t, &F[3], 5, 300, true);
	expect(t, &F[2], 4, 200, true);
	assert_int_equal(dp_table_coflow(t, 200, &cls, &rate), 0);
	assert_int_equal(rate, 2);

	/* an empty delta only moves the version (and default_class) */
	{
		struct dp_update u = {.version = 5, .base_version = 4, .default_class = 0};

		assert_int_equal(dp_table_apply(t, &u), 0);
	}
	assert_int_equal(dp_table_version(t), 5);
	assert_int_equal(dp_table_nflows(t), 5);
	expect(t, &F[0], 0, 100, true);
	dp_table_free(t);
}

/* ---- refusals --------------------------------------------------------------------------------- */

/* Applies u to a base table and asserts it returns want with nothing changed. */
static void expect_refused(struct dp_table *t, const struct dp_update *u, int want)
{
	struct dp_snapshot *before = dp_table_snapshot(t), *after;

	assert_non_null(before);
	assert_int_equal(dp_table_apply(t, u), want);
	expect_base(t);
	after = dp_table_snapshot(t);
	assert_non_null(after);
	assert_snapshots_equal(before, after);
	dp_snapshot_free(before);
	dp_snapshot_free(after);
}

static void test_stale(void **state)
{
	struct dp_table *t = table_new();
	struct dp_flow_entry fl[] = {{tup4(1, 2, 3, 4, 6), 100}};
	struct wire_tuple rmf[] = {F[0]};
	uint64_t rmc[] = {100};
	struct dp_update u = {.version = 3,
			      .base_version = 2,
			      .default_class = 0,
			      .flows = fl,
			      .nflows = 1,
			      .removed_flows = rmf,
			      .nremoved_flows = 1,
			      .removed_coflows = rmc,
			      .nremoved_coflows = 1};

	(void)state;
	make_flows();
	apply_base(t);
	expect_refused(t, &u, -ESTALE);
	u.base_version = 0; /* behind */
	expect_refused(t, &u, -ESTALE);
	u.base_version = 0;
	u.version = 1; /* a replayed old delta */
	expect_refused(t, &u, -ESTALE);
	/* stale and malformed: stale wins, so the agent resyncs */
	u.base_version = 5;
	u.version = 6;
	u.default_class = NCLASSES;
	expect_refused(t, &u, -ESTALE);
	/* the right base goes through */
	u.base_version = 1;
	u.version = 2;
	u.default_class = 0;
	assert_int_equal(dp_table_apply(t, &u), 0);
	assert_int_equal(dp_table_nflows(t), 4);
	expect(t, &F[0], 0, 0, false);
	expect(t, &F[1], 0, 100, true); /* coflow 100's class is gone: default 0 */
	dp_table_free(t);
}

static void test_malformed(void **state)
{
	struct dp_table *t = table_new();
	struct wire_tuple good = tup4(0x0b000001, 0x0b000002, 1, 2, 6);
	struct wire_tuple bad_fam = good, bad_pad_src = good, bad_pad_dst = good, zero;
	struct dp_flow_entry fl[3];
	struct dp_class_entry cl[2] = {
		{.coflow_id = 100, .cls = 2, .rate_bps = 0},
		{.coflow_id = 900, .cls = 3, .rate_bps = 0},
	};
	struct wire_tuple rmf[2];
	struct dp_update u;

	(void)state;
	make_flows();
	apply_base(t);
	bad_fam.family = 5;
	bad_pad_src.src[9] = 1;
	bad_pad_dst.dst[15] = 1;
	memset(&zero, 0, sizeof(zero));

#define RESET_DELTA()                                                                              \
	do {                                                                                       \
		fl[0] = (struct dp_flow_entry){F[0], 900};                                         \
		fl[1] = (struct dp_flow_entry){good, 900};                                         \
		fl[2] = (struct dp_flow_entry){F[2], 900};                                         \
		cl[0].cls = 2;                                                                     \
		cl[1].cls = 3;                                                                     \
		rmf[0] = F[1];                                                                     \
		rmf[1] = F[3];                                                                     \
		u = (struct dp_update){.version = 2,                                               \
				       .base_version = 1,                                          \
				       .default_class = 0,                                         \
				       .flows = fl,                                                \
				       .nflows = 3,                                                \
				       .classes = cl,                                              \
				       .nclasses = 2,                                              \
				       .removed_flows = rmf,                                       \
				       .nremoved_flows = 2};                                       \
	} while (0)

	assert_int_equal(dp_table_apply(t, NULL), -EINVAL);
	expect_base(t);

	/* a class out of range, first or last in the array */
	RESET_DELTA();
	cl[1].cls = NCLASSES;
	expect_refused(t, &u, -EINVAL);
	RESET_DELTA();
	cl[0].cls = UINT32_MAX;
	expect_refused(t, &u, -EINVAL);
	RESET_DELTA();
	u.default_class = NCLASSES;
	expect_refused(t, &u, -EINVAL);

	/* tuples not in wire_tuple's form, added or removed (the valid ones come first) */
	RESET_DELTA();
	fl[2].tuple = bad_fam;
	expect_refused(t, &u, -EINVAL);
	RESET_DELTA();
	fl[2].tuple = zero;
	expect_refused(t, &u, -EINVAL);
	RESET_DELTA();
	fl[2].tuple = bad_pad_src;
	expect_refused(t, &u, -EINVAL);
	RESET_DELTA();
	fl[2].tuple = bad_pad_dst;
	expect_refused(t, &u, -EINVAL);
	RESET_DELTA();
	rmf[1] = bad_fam;
	expect_refused(t, &u, -EINVAL);

	/* NULL arrays with counts */
	RESET_DELTA();
	u.flows = NULL;
	expect_refused(t, &u, -EINVAL);
	RESET_DELTA();
	u.classes = NULL;
	expect_refused(t, &u, -EINVAL);
	RESET_DELTA();
	u.removed_flows = NULL;
	expect_refused(t, &u, -EINVAL);
	RESET_DELTA();
	u.nremoved_coflows = 1;
	expect_refused(t, &u, -EINVAL);

	/* the same for a full update */
	RESET_DELTA();
	u.full = true;
	cl[0].cls = NCLASSES;
	expect_refused(t, &u, -EINVAL);
	RESET_DELTA();
	u.full = true;
	fl[1].tuple = bad_pad_src;
	expect_refused(t, &u, -EINVAL);

	/* and once fixed, the delta goes through */
	RESET_DELTA();
	assert_int_equal(dp_table_apply(t, &u), 0);
	assert_int_equal(dp_table_nflows(t), 3);
	assert_int_equal(dp_table_ncoflows(t), 3);
	expect(t, &F[0], 3, 900, true);
	expect(t, &good, 3, 900, true);
	expect(t, &F[1], 0, 0, false);
	expect(t, &F[3], 0, 0, false);
#undef RESET_DELTA
	dp_table_free(t);
}

static void test_version_grows(void **state)
{
	struct dp_table *t = table_new();
	struct dp_flow_entry fl[] = {{tup4(1, 2, 3, 4, 6), 1}};
	struct dp_update u = {.version = 1, .base_version = 1, .flows = fl, .nflows = 1};

	(void)state;
	make_flows();
	/* version 0 is not greater than a new table's */
	u = (struct dp_update){.version = 0, .full = true, .flows = fl, .nflows = 1};
	assert_int_equal(dp_table_apply(t, &u), -EINVAL);
	assert_int_equal(dp_table_nflows(t), 0);
	/* a delta on a new table's version 0 is fine */
	u = (struct dp_update){.version = 1, .base_version = 0, .flows = fl, .nflows = 1};
	assert_int_equal(dp_table_apply(t, &u), 0);
	assert_int_equal(dp_table_nflows(t), 1);

	dp_table_free(t);
	t = table_new();
	apply_base(t);
	/* a delta on the right base that does not move the version */
	u = (struct dp_update){.version = 1, .base_version = 1, .flows = fl, .nflows = 1};
	expect_refused(t, &u, -EINVAL);
	u.version = 0;
	expect_refused(t, &u, -EINVAL);
	/* versions may skip */
	u.version = 10;
	assert_int_equal(dp_table_apply(t, &u), 0);
	assert_int_equal(dp_table_version(t), 10);
	/*
	 * A full table starts the versions afresh, even at an older version (a
	 * restarted controller counts from 1 again); the next delta builds on it.
	 */
	u = (struct dp_update){.version = 1, .full = true, .flows = fl, .nflows = 1};
	assert_int_equal(dp_table_apply(t, &u), 0);
	assert_int_equal(dp_table_version(t), 1);
	assert_int_equal(dp_table_nflows(t), 1);
	u = (struct dp_update){.version = 2, .base_version = 10};
	assert_int_equal(dp_table_apply(t, &u), -ESTALE);
	assert_int_equal(dp_table_version(t), 1);
	u.base_version = 1;
	assert_int_equal(dp_table_apply(t, &u), 0);
	assert_int_equal(dp_table_version(t), 2);
	dp_table_free(t);
}

/* ---- full tables ------------------------------------------------------------------------------ */

static void test_full_replaces(void **state)
{
	struct dp_table *t = table_new();
	struct wire_tuple g = tup6(7, 8, 9, 10, 6);
	struct dp_flow_entry fl[] = {{F[2], 500}, {g, 600}, {g, 500}};
	struct dp_class_entry cl[] = {{.coflow_id = 500, .cls = 4, .rate_bps = 3}};
	struct wire_tuple rmf[] = {F[2]};
	uint64_t rmc[] = {500};
	struct dp_update u;
	struct dp_snapshot *s;

	(void)state;
	make_flows();
	apply_base(t);
	for (uint64_t v = 2; v < 6; v++) {
		struct dp_flow_entry d[] = {{tup4(0x0c000000 + (uint32_t)v, 1, 1, 1, 6), v}};
		struct dp_class_entry c[] = {{.coflow_id = v, .cls = 1, .rate_bps = 0}};

		u = (struct dp_update){.version = v,
				       .base_version = v - 1,
				       .default_class = 2,
				       .flows = d,
				       .nflows = 1,
				       .classes = c,
				       .nclasses = 1};
		assert_int_equal(dp_table_apply(t, &u), 0);
	}
	assert_int_equal(dp_table_nflows(t), 8);
	assert_int_equal(dp_table_ncoflows(t), 6);

	/* base_version and the removed lists of a full table are ignored; last entry wins */
	u = (struct dp_update){.version = 6,
			       .base_version = 77,
			       .full = true,
			       .default_class = 5,
			       .flows = fl,
			       .nflows = 3,
			       .classes = cl,
			       .nclasses = 1,
			       .removed_flows = rmf,
			       .nremoved_flows = 1,
			       .removed_coflows = rmc,
			       .nremoved_coflows = 1};
	assert_int_equal(dp_table_apply(t, &u), 0);
	assert_int_equal(dp_table_version(t), 6);
	assert_int_equal(dp_table_default_class(t), 5);
	assert_int_equal(dp_table_nflows(t), 2);
	assert_int_equal(dp_table_ncoflows(t), 1);
	expect(t, &F[0], 5, 0, false);
	expect(t, &F[1], 5, 0, false);
	expect(t, &F[3], 5, 0, false);
	expect(t, &F[2], 4, 500, true);
	expect(t, &g, 4, 500, true);
	assert_int_equal(dp_table_coflow(t, 100, NULL, NULL), -ENOENT);
	s = dp_table_snapshot(t);
	assert_non_null(s);
	assert_int_equal(s->n, 2);
	dp_snapshot_free(s);

	/* an empty full table empties the table */
	u = (struct dp_update){.version = 7, .full = true, .default_class = 1};
	assert_int_equal(dp_table_apply(t, &u), 0);
	assert_int_equal(dp_table_nflows(t), 0);
	assert_int_equal(dp_table_ncoflows(t), 0);
	expect(t, &g, 1, 0, false);
	dp_table_free(t);
}

static void test_ipv4_ipv6(void **state)
{
	struct dp_table *t = table_new();
	/* the same numbers as IPv4, IPv6 and IPv4 with the other protocol or ports swapped */
	struct wire_tuple a4 = tup4(0x01020304, 0x05060708, 10, 20, 6);
	struct wire_tuple a4u = tup4(0x01020304, 0x05060708, 10, 20, 17);
	struct wire_tuple a4s = tup4(0x01020304, 0x05060708, 20, 10, 6);
	struct wire_tuple a6 = a4, a6full;
	struct dp_flow_entry fl[4];
	struct dp_class_entry cl[] = {
		{.coflow_id = 1, .cls = 1, .rate_bps = 0},
		{.coflow_id = 2, .cls = 2, .rate_bps = 0},
		{.coflow_id = 3, .cls = 3, .rate_bps = 0},
		{.coflow_id = 4, .cls = 4, .rate_bps = 0},
	};
	struct dp_update u = {.version = 1,
			      .full = true,
			      .default_class = 0,
			      .flows = fl,
			      .nflows = 4,
			      .classes = cl,
			      .nclasses = 4};
	struct dp_snapshot *s;

	(void)state;
	a6.family = 6; /* 1.2.3.4 in the first 4 of 16 bytes: a valid, different IPv6 address */
	memset(&a6full, 0xff, sizeof(a6full));
	a6full.family = 6;
	fl[0] = (struct dp_flow_entry){a4, 1};
	fl[1] = (struct dp_flow_entry){a6, 2};
	fl[2] = (struct dp_flow_entry){a4u, 3};
	fl[3] = (struct dp_flow_entry){a6full, 4};
	assert_int_equal(dp_table_apply(t, &u), 0);
	assert_int_equal(dp_table_nflows(t), 4);
	expect(t, &a4, 1, 1, true);
	expect(t, &a6, 2, 2, true);
	expect(t, &a4u, 3, 3, true);
	expect(t, &a6full, 4, 4, true);
	expect(t, &a4s, 0, 0, false);

	s = dp_table_snapshot(t);
	assert_non_null(s);
	assert_int_equal(s->n, 4);
	assert_sorted(s);
	/* family first: the IPv4 flows, tcp before udp, then the IPv6 ones */
	assert_int_equal(s->flows[0].coflow_id, 1);
	assert_int_equal(s->flows[1].coflow_id, 3);
	assert_int_equal(s->flows[2].coflow_id, 2);
	assert_int_equal(s->flows[3].coflow_id, 4);
	dp_snapshot_free(s);

	/* removing the IPv6 one leaves its IPv4 twin */
	{
		struct dp_update d = {
			.version = 2, .base_version = 1, .removed_flows = &a6, .nremoved_flows = 1};

		assert_int_equal(dp_table_apply(t, &d), 0);
	}
	expect(t, &a6, 0, 0, false);
	expect(t, &a4, 1, 1, true);
	dp_table_free(t);
}

/* ---- a large table ---------------------------------------------------------------------------- */

#define BIG        100000
#define BIG_COFLOW 1000

static struct wire_tuple big_tuple(uint32_t i)
{
	return i % 3 ? tup4(0x0a000000 + i, 0x0b000000 + (i * 7919u), (uint16_t)i, 80, 6) :
		       tup6(i, i ^ 0x5555u, 443, (uint16_t)(i >> 3), 17);
}

static void test_large(void **state)
{
	struct dp_table *t = table_new();
	struct dp_flow_entry *fl = calloc(BIG, sizeof(*fl));
	struct wire_tuple *rm = calloc(BIG / 2, sizeof(*rm));
	struct dp_class_entry cl[BIG_COFLOW];
	uint64_t rmc[BIG_COFLOW / 2];
	struct dp_update u;
	struct dp_snapshot *s;
	size_t nrm = 0, nrmc = 0;

	(void)state;
	assert_non_null(fl);
	assert_non_null(rm);
	for (uint32_t i = 0; i < BIG; i++)
		fl[i] = (struct dp_flow_entry){big_tuple(i), i % BIG_COFLOW};
	for (uint32_t c = 0; c < BIG_COFLOW; c++)
		cl[c] = (struct dp_class_entry){.coflow_id = c, .cls = c % 6, .rate_bps = c};

	/* built by deltas of 1,000 entries, as the controller chunks a large table */
	for (uint32_t v = 1; v <= BIG / 1000; v++) {
		u = (struct dp_update){.version = v,
				       .base_version = v - 1,
				       .default_class = 7,
				       .flows = fl + (v - 1) * 1000,
				       .nflows = 1000,
				       .classes = v == 1 ? cl : NULL,
				       .nclasses = v == 1 ? BIG_COFLOW : 0};
		assert_int_equal(dp_table_apply(t, &u), 0);
	}
	assert_int_equal(dp_table_nflows(t), BIG);
	assert_int_equal(dp_table_ncoflows(t), BIG_COFLOW);
	for (uint32_t i = 0; i < BIG; i++)
		expect(t, &fl[i].tuple, (i % BIG_COFLOW) % 6, i % BIG_COFLOW, true);

	/* one delta removes every odd flow and the class of every odd coflow */
	for (uint32_t i = 1; i < BIG; i += 2)
		rm[nrm++] = fl[i].tuple;
	for (uint32_t c = 1; c < BIG_COFLOW; c += 2)
		rmc[nrmc++] = c;
	u = (struct dp_update){.version = 101,
			       .base_version = 100,
			       .default_class = 7,
			       .removed_flows = rm,
			       .nremoved_flows = nrm,
			       .removed_coflows = rmc,
			       .nremoved_coflows = nrmc};
	assert_int_equal(dp_table_apply(t, &u), 0);
	assert_int_equal(dp_table_nflows(t), BIG / 2);
	assert_int_equal(dp_table_ncoflows(t), BIG_COFLOW / 2);
	for (uint32_t i = 0; i < BIG; i++) {
		if (i % 2)
			expect(t, &fl[i].tuple, 7, 0, false);
		else
			expect(t, &fl[i].tuple, (i % BIG_COFLOW) % 6, i % BIG_COFLOW, true);
	}

	s = dp_table_snapshot(t);
	assert_non_null(s);
	assert_int_equal(s->version, 101);
	assert_int_equal(s->n, BIG / 2);
	assert_sorted(s);
	for (uint32_t i = 0; i < BIG; i++) {
		const struct dp_snapshot_flow *e = dp_snapshot_find(s, &fl[i].tuple);

		if (i % 2) {
			assert_null(e);
			continue;
		}
		assert_non_null(e);
		assert_int_equal(e->coflow_id, i % BIG_COFLOW);
		assert_int_equal(e->cls, (i % BIG_COFLOW) % 6);
		assert_int_equal(e->rate_bps, i % BIG_COFLOW);
	}
	dp_snapshot_free(s);

	/* a full table of all 100k at once, then one delta removing the rest but one */
	u = (struct dp_update){.version = 102,
			       .full = true,
			       .default_class = 7,
			       .flows = fl,
			       .nflows = BIG,
			       .classes = cl,
			       .nclasses = BIG_COFLOW};
	assert_int_equal(dp_table_apply(t, &u), 0);
	assert_int_equal(dp_table_nflows(t), BIG);
	for (uint32_t half = 0; half < 2; half++) {
		for (uint32_t i = 0; i < BIG / 2; i++)
			rm[i] = fl[half * (BIG / 2) + i].tuple;
		u = (struct dp_update){.version = 103 + half,
				       .base_version = 102 + half,
				       .default_class = 7,
				       .removed_flows = rm,
				       .nremoved_flows = half ? BIG / 2 - 1 : BIG / 2};
		assert_int_equal(dp_table_apply(t, &u), 0);
	}
	assert_int_equal(dp_table_nflows(t), 1);
	expect(t, &fl[BIG - 1].tuple, ((BIG - 1) % BIG_COFLOW) % 6, (BIG - 1) % BIG_COFLOW, true);
	expect(t, &fl[0].tuple, 7, 0, false);
	free(fl);
	free(rm);
	dp_table_free(t);
}

/* ---- snapshots -------------------------------------------------------------------------------- */

static void test_snapshot(void **state)
{
	struct dp_table *t = table_new();
	struct dp_snapshot *s;
	/* expected order: IPv4 by protocol, then addresses, then ports; then IPv6 */
	struct dp_snapshot_flow want[] = {
		{F[0], 100, 0, 1000000000},
		{F[1], 100, 0, 1000000000},
		{F[2], 200, 3, 0},
		{F[3], 300, 7, 0},
	};

	(void)state;
	make_flows();
	apply_base(t);
	s = dp_table_snapshot(t);
	assert_non_null(s);
	assert_int_equal(s->version, 1);
	assert_int_equal(s->default_class, 7);
	assert_int_equal(s->n, 4);
	for (size_t i = 0; i < 4; i++) {
		assert_true(wire_tuple_eq(&s->flows[i].tuple, &want[i].tuple));
		assert_int_equal(s->flows[i].coflow_id, want[i].coflow_id);
		assert_int_equal(s->flows[i].cls, want[i].cls);
		assert_int_equal(s->flows[i].rate_bps, want[i].rate_bps);
		assert_ptr_equal(dp_snapshot_find(s, &F[i]), &s->flows[i]);
	}
	assert_sorted(s);

	/* the snapshot shares nothing with the table */
	{
		struct wire_tuple rmf[] = {F[0], F[1], F[2], F[3]};
		struct dp_update u = {
			.version = 2, .base_version = 1, .removed_flows = rmf, .nremoved_flows = 4};

		assert_int_equal(dp_table_apply(t, &u), 0);
	}
	dp_table_free(t);
	assert_int_equal(s->n, 4);
	assert_true(wire_tuple_eq(&s->flows[3].tuple, &F[3]));
	assert_int_equal(s->flows[3].cls, 7);
	dp_snapshot_free(s);

	/* dp_tuple_cmp: ports compare as numbers (not host-order bytes) and last */
	{
		struct wire_tuple a = tup4(1, 2, 0x0100, 5, 6), b = tup4(1, 2, 0x00ff, 5, 6);
		struct wire_tuple c = tup4(1, 3, 0, 0, 6);

		assert_true(dp_tuple_cmp(&a, &b) > 0);
		assert_true(dp_tuple_cmp(&b, &a) < 0);
		assert_true(dp_tuple_cmp(&a, &c) < 0);
		assert_int_equal(dp_tuple_cmp(&a, &a), 0);
	}
}

/* ---- out of memory ---------------------------------------------------------------------------- */

/* In a child: a table of BIG/10 flows, address space capped, then updates that must grow it. */
static void oom_child(void)
{
	struct dp_table *t = dp_table_new(NCLASSES);
	struct dp_flow_entry *fl = calloc(BIG * 2, sizeof(*fl));
	struct dp_class_entry *cl = calloc(BIG * 2, sizeof(*cl));
	struct wire_tuple rmf[100];
	uint64_t rmc[100];
	struct dp_update u;
	struct rlimit old;
	int r;

	OOM_CHECK(t && fl && cl);
	for (uint32_t i = 0; i < BIG * 2; i++) {
		fl[i] = (struct dp_flow_entry){big_tuple(i), i};
		cl[i] = (struct dp_class_entry){.coflow_id = i, .cls = 1, .rate_bps = i};
	}
	for (uint32_t i = 0; i < 100; i++) {
		rmf[i] = fl[i].tuple;
		rmc[i] = i;
	}
	u = (struct dp_update){.version = 1,
			       .full = true,
			       .default_class = NCLASSES - 1,
			       .flows = fl,
			       .nflows = BIG / 10,
			       .classes = cl,
			       .nclasses = 1000};
	OOM_CHECK(dp_table_apply(t, &u) == 0);

	oom_cap(&old);

	/* a delta with removals whose flow map must grow */
	u = (struct dp_update){.version = 2,
			       .base_version = 1,
			       .flows = fl + 100,
			       .nflows = BIG * 2 - 100,
			       .removed_flows = rmf,
			       .nremoved_flows = 100,
			       .removed_coflows = rmc,
			       .nremoved_coflows = 100};
	r = dp_table_apply(t, &u);
	OOM_CHECK(r == -ENOMEM);
	/* one whose class map must grow (its flow map need not) */
	u.flows = fl + BIG / 10;
	u.nflows = 10;
	u.classes = cl;
	u.nclasses = BIG * 2;
	r = dp_table_apply(t, &u);
	OOM_CHECK(r == -ENOMEM);
	/* a full table too large to build */
	u = (struct dp_update){.version = 2, .full = true, .flows = fl + 5, .nflows = BIG * 2 - 5};
	r = dp_table_apply(t, &u);
	OOM_CHECK(r == -ENOMEM);
	/* nothing changed (lookups do not allocate) */
	OOM_CHECK(dp_table_version(t) == 1);
	OOM_CHECK(dp_table_nflows(t) == BIG / 10);
	OOM_CHECK(dp_table_ncoflows(t) == 1000);
	for (uint32_t i = 0; i < BIG * 2; i++) {
		bool known;
		uint64_t c;
		uint32_t cls = dp_table_lookup(t, &fl[i].tuple, &c, &known);

		OOM_CHECK(known == (i < BIG / 10));
		OOM_CHECK(!known || c == i);
		OOM_CHECK(cls == (i < 1000 ? 1u : NCLASSES - 1u));
	}

	/* with memory again, it goes through */
	oom_uncap(&old);
	OOM_CHECK(dp_table_apply(t, &u) == 0);
	OOM_CHECK(dp_table_nflows(t) == BIG * 2 - 5);
	free(fl);
	free(cl);
	dp_table_free(t);
	_exit(0);
}

static void test_oom(void **state)
{
	(void)state;
	oom_run(oom_child);
}

/* ---- churn against a reference model ---------------------------------------------------------- */

#define POOL      6000
#define NCOF      300
#define STEPS     3000
#define MAX_OPS   2500
#define DP_SEED   0x10013ULL
#define PHASE_LEN 400

struct model {
	bool present[POOL];
	uint32_t coflow[POOL]; /* index into the coflow pool */
	bool has_class[NCOF];
	uint32_t cls[NCOF];
	uint64_t rate[NCOF];
	uint32_t default_class;
	uint64_t version;
	size_t nflows, ncoflows;
};

static struct wire_tuple pool_tuple(uint32_t i)
{
	return i % 2 ? tup4(0x0a000000 + i, 0x0a800000 + i / 3, (uint16_t)(i * 31), 9000, 6) :
		       tup6(i, i / 5, (uint16_t)i, 443, (uint8_t)(i % 3 ? 6 : 17));
}

/* Coflow ids over the whole range, 0 and UINT64_MAX included. */
static uint64_t cof_id(uint32_t c)
{
	return c == 0 ? 0 : c == 1 ? UINT64_MAX : (uint64_t)c * 0x9e3779b97f4a7c15ULL;
}

static void model_put_flow(struct model *m, uint32_t i, uint32_t c)
{
	if (!m->present[i])
		m->nflows++;
	m->present[i] = true;
	m->coflow[i] = c;
}

static void model_put_class(struct model *m, uint32_t c, uint32_t cls, uint64_t rate)
{
	if (!m->has_class[c])
		m->ncoflows++;
	m->has_class[c] = true;
	m->cls[c] = cls;
	m->rate[c] = rate;
}

static void check_flow(const struct dp_table *t, const struct model *m, uint32_t i)
{
	struct wire_tuple tu = pool_tuple(i);
	uint64_t c;
	bool known;
	uint32_t cls = dp_table_lookup(t, &tu, &c, &known);

	assert_true(known == m->present[i]);
	if (!m->present[i]) {
		assert_int_equal(cls, m->default_class);
		return;
	}
	assert_int_equal(c, cof_id(m->coflow[i]));
	assert_int_equal(cls, m->has_class[m->coflow[i]] ? m->cls[m->coflow[i]] : m->default_class);
}

static void check_all(const struct dp_table *t, const struct model *m)
{
	struct dp_snapshot *s = dp_table_snapshot(t);
	size_t found = 0;

	for (uint32_t i = 0; i < POOL; i++)
		check_flow(t, m, i);
	for (uint32_t c = 0; c < NCOF; c++) {
		uint32_t cls;
		uint64_t rate;
		int r = dp_table_coflow(t, cof_id(c), &cls, &rate);

		assert_int_equal(r, m->has_class[c] ? 0 : -ENOENT);
		if (!r) {
			assert_int_equal(cls, m->cls[c]);
			assert_int_equal(rate, m->rate[c]);
		}
	}
	assert_non_null(s);
	assert_int_equal(s->version, m->version);
	assert_int_equal(s->default_class, m->default_class);
	assert_int_equal(s->n, m->nflows);
	assert_sorted(s);
	/* every flow of the model is in the snapshot, resolved; there are no others */
	for (uint32_t i = 0; i < POOL; i++) {
		struct wire_tuple tu = pool_tuple(i);
		const struct dp_snapshot_flow *e = dp_snapshot_find(s, &tu);
		uint32_t c = m->coflow[i];

		assert_true((e != NULL) == m->present[i]);
		if (!e)
			continue;
		found++;
		assert_int_equal(e->coflow_id, cof_id(c));
		assert_int_equal(e->cls, m->has_class[c] ? m->cls[c] : m->default_class);
		assert_int_equal(e->rate_bps, m->has_class[c] ? m->rate[c] : 0);
	}
	assert_int_equal(found, s->n);
	dp_snapshot_free(s);
}

struct churn_bufs {
	struct dp_flow_entry fl[MAX_OPS];
	struct dp_class_entry cl[MAX_OPS];
	struct wire_tuple rmf[MAX_OPS];
	uint64_t rmc[MAX_OPS];
	/* pool indices of the entries above, for the model */
	uint32_t fl_idx[MAX_OPS], fl_cof[MAX_OPS], cl_cof[MAX_OPS], rmf_idx[MAX_OPS],
		rmc_cof[MAX_OPS];
};

static void test_churn(void **state)
{
	struct dp_table *t = table_new();
	struct model *m = calloc(1, sizeof(*m));
	struct churn_bufs *b = calloc(1, sizeof(*b));
	struct loom_rng rng;
	size_t peak = 0, low_after_peak = SIZE_MAX;
	unsigned nfull = 0, nbad = 0, nstale = 0;

	(void)state;
	assert_non_null(m);
	assert_non_null(b);
	loom_rng_seed(&rng, DP_SEED);
	m->default_class = NCLASSES - 1;

	for (uint32_t step = 0; step < STEPS; step++) {
		/* phases: grow towards the whole pool, then shrink towards nothing */
		bool growing = (step / PHASE_LEN) % 2 == 0;
		uint64_t kind = loom_rng_below(&rng, 100);
		size_t nops = loom_rng_below(&rng, 10) ? loom_rng_below(&rng, 60) :
							 loom_rng_below(&rng, MAX_OPS);
		size_t nf = 0, nc = 0, nrf = 0, nrc = 0;
		struct dp_update u;
		int r;

		for (size_t k = 0; k < nops; k++) {
			uint64_t op = loom_rng_below(&rng, 100);
			uint32_t i = (uint32_t)loom_rng_below(&rng, POOL);
			uint32_t c = (uint32_t)loom_rng_below(&rng, NCOF);

			if (op < (growing ? 70u : 3u)) {
				b->fl_idx[nf] = i;
				b->fl_cof[nf] = c;
				b->fl[nf++] = (struct dp_flow_entry){pool_tuple(i), cof_id(c)};
			} else if (op < 75) {
				b->rmf_idx[nrf] = i;
				b->rmf[nrf++] = pool_tuple(i);
			} else if (op < (growing ? 93u : 85u)) {
				b->cl_cof[nc] = c;
				b->cl[nc++] = (struct dp_class_entry){
					.coflow_id = cof_id(c),
					.cls = (uint32_t)loom_rng_below(&rng, NCLASSES),
					.rate_bps = loom_rng_below(&rng, 3) ? 0 :
									      loom_rng_u64(&rng)};
			} else {
				b->rmc_cof[nrc] = c;
				b->rmc[nrc++] = cof_id(c);
			}
		}
		u = (struct dp_update){.version = m->version + 1 + loom_rng_below(&rng, 3),
				       .base_version = m->version,
				       .default_class = (uint32_t)loom_rng_below(&rng, NCLASSES),
				       .flows = b->fl,
				       .nflows = nf,
				       .classes = b->cl,
				       .nclasses = nc,
				       .removed_flows = b->rmf,
				       .nremoved_flows = nrf,
				       .removed_coflows = b->rmc,
				       .nremoved_coflows = nrc};

		if (kind < 2) {
			u.full = true;
			nfull++;
		} else if (kind < 7 && (nf || nc)) {
			/* spoil one entry: nothing may change */
			if (nf && (!nc || loom_rng_below(&rng, 2)))
				b->fl[loom_rng_below(&rng, nf)].tuple.family = 0;
			else
				b->cl[loom_rng_below(&rng, nc)].cls =
					NCLASSES + (uint32_t)loom_rng_below(&rng, 5);
			assert_int_equal(dp_table_apply(t, &u), -EINVAL);
			nbad++;
			goto check;
		} else if (kind < 9) {
			u.base_version = m->version + 1 + loom_rng_below(&rng, 5);
			assert_int_equal(dp_table_apply(t, &u), -ESTALE);
			nstale++;
			goto check;
		}

		r = dp_table_apply(t, &u);
		assert_int_equal(r, 0);
		if (u.full) {
			memset(m->present, 0, sizeof(m->present));
			memset(m->has_class, 0, sizeof(m->has_class));
			m->nflows = m->ncoflows = 0;
		} else {
			for (size_t k = 0; k < nrf; k++)
				if (m->present[b->rmf_idx[k]]) {
					m->present[b->rmf_idx[k]] = false;
					m->nflows--;
				}
			for (size_t k = 0; k < nrc; k++) {
				uint32_t c = b->rmc_cof[k];

				if (m->has_class[c]) {
					m->has_class[c] = false;
					m->ncoflows--;
				}
			}
		}
		for (size_t k = 0; k < nf; k++)
			model_put_flow(m, b->fl_idx[k], b->fl_cof[k]);
		for (size_t k = 0; k < nc; k++)
			model_put_class(m, b->cl_cof[k], b->cl[k].cls, b->cl[k].rate_bps);
		m->version = u.version;
		m->default_class = u.default_class;
check:
		assert_int_equal(dp_table_version(t), m->version);
		assert_int_equal(dp_table_default_class(t), m->default_class);
		assert_int_equal(dp_table_nflows(t), m->nflows);
		assert_int_equal(dp_table_ncoflows(t), m->ncoflows);
		for (int k = 0; k < 64; k++)
			check_flow(t, m, (uint32_t)loom_rng_below(&rng, POOL));
		if (step % 100 == 99)
			check_all(t, m);
		if (m->nflows > peak)
			peak = m->nflows;
		if (peak > POOL / 2 && m->nflows < low_after_peak)
			low_after_peak = m->nflows;
	}
	check_all(t, m);
	/* the run went through growth and deep shrinking, and tried every kind of update */
	assert_true(peak > POOL * 3 / 4);
	assert_true(low_after_peak < POOL / 10);
	assert_true(nfull > 10 && nbad > 10 && nstale > 10);
	free(m);
	free(b);
	dp_table_free(t);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_empty),     cmocka_unit_test(test_full_then_deltas),
		cmocka_unit_test(test_stale),         cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_version_grows), cmocka_unit_test(test_full_replaces),
		cmocka_unit_test(test_ipv4_ipv6),     cmocka_unit_test(test_large),
		cmocka_unit_test(test_snapshot),      cmocka_unit_test(test_oom),
		cmocka_unit_test(test_churn),
	};
	size_t n = sizeof(tests) / sizeof(tests[0]);
	n = precond_leave_out(tests, n, test_oom, oom_unsupported());
	return precond_run(tests, n, NULL, NULL);
}
