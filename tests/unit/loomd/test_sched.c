/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for controlplane/loomd/sched.c, the scheduling pass of loomd,
 * on an 8-host big switch with jobs registered through the registry API (no
 * sockets): policy specs refused at creation and at set-policy with a
 * message, a pass over an empty registry, the classes each host gets under
 * per-host and conflict assignment, the K-classes cap, a policy's own
 * classes, releases and the next wake-up, finished coflows leaving the
 * order, a policy switch taking effect on the next pass, and a pass over an
 * unchanged registry deciding the same.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controlplane/loomd/registry.h"
#include "controlplane/loomd/sched.h"
#include "tests/unit/loomd/fixture.h"
#include "tests/unit/loomd/jobspec.h"
#include "topo/topo.h"

#define NHOSTS FX_HOSTS /* the fixture's big switch */

/* ---- fixture and helpers -------------------------------------------------------------------- */

/* Makes fx's scheduler, which must succeed. */
static struct loomd_sched *new_sched(struct fx *fx, const char *spec, uint32_t k,
				     enum policy_class_assign a)
{
	struct loom_err err = {{0}};

	fx->s = loomd_sched_new(fx->r, fx->t, spec, NULL, k, a, 1, &err);
	if (!fx->s)
		fail_msg("loomd_sched_new '%s': %s", spec, err.msg);
	return fx->s;
}

static struct loomd_sched_result pass_ok(struct loomd_sched *s, uint64_t now_ns)
{
	struct loom_err err = {{0}};
	struct loomd_sched_result res;
	int rc;

	memset(&res, 0xa5, sizeof(res));
	rc = loomd_sched_pass(s, now_ns, &res, &err);
	if (rc != 0)
		fail_msg("pass at %llu: %d %s", (unsigned long long)now_ns, rc, err.msg);
	return res;
}

/* The class of the flow with test tuple n on its source host, in the last pass. */
static uint32_t cls(const struct fx *fx, uint32_t n)
{
	struct wire_tuple t = tup(n);
	const struct loomd_rflow *f = loomd_registry_flow(fx->r, &t);

	assert_non_null(f);
	assert_true(f->view != CP_NONE);
	return loomd_sched_flow_class(fx->s, f->view);
}

/* The position of coflow id in the last order (CP_NONE: not ordered). */
static uint32_t rank_of(const struct fx *fx, uint64_t id)
{
	const struct loomd_rcoflow *c = loomd_registry_coflow(fx->r, id);

	assert_non_null(c);
	assert_true(c->view != CP_NONE);
	return loomd_sched_rank(fx->s, c->view);
}

/*
 * The ABC job (jb_abc()) arriving at 0, C's first flow from host 2, 1000
 * bytes a flow: B meets A at host 0's uplink, C meets A at host 2's; host 6
 * carries only C.
 */
static void add_abc(struct fx *fx)
{
	struct jb j;

	jb_abc(&j, 2, 1000);
	jb_add_ok(fx->r, &j, 0);
}

/* ---- creation and policy specs --------------------------------------------------------------- */

/*
 * A bad spec (unknown policy, unknown option) or an unloadable weights file fails
 * loomd_sched_new with errno and a message, not a crash; K = 0 becomes one class.
 */
static void test_new_refusals(void **state)
{
	struct fx *fx = *state;
	struct loom_err err = {{0}};
	struct loomd_sched *s;

	errno = 0;
	s = loomd_sched_new(fx->r, fx->t, "nosuch", NULL, 4, POLICY_CLASSES_CONFLICT, 1, &err);
	assert_null(s);
	assert_int_equal(errno, ENOENT);
	assert_contains(err.msg, "unknown policy 'nosuch'");

	memset(&err, 0, sizeof(err));
	errno = 0;
	s = loomd_sched_new(fx->r, fx->t, "fifo:nosuchopt=1", NULL, 4, POLICY_CLASSES_CONFLICT, 1,
			    &err);
	assert_null(s);
	assert_int_not_equal(errno, 0);
	assert_contains(err.msg, "nosuchopt");

	memset(&err, 0, sizeof(err));
	errno = 0;
	s = loomd_sched_new(fx->r, fx->t, "fifo", "/nonexistent/loom-weights.bin", 4,
			    POLICY_CLASSES_CONFLICT, 1, &err);
	assert_null(s);
	assert_int_not_equal(errno, 0);
	assert_contains(err.msg, "weights: ");

	/* a research oracle that needs the whole trace in advance */
	memset(&err, 0, sizeof(err));
	errno = 0;
	s = loomd_sched_new(fx->r, fx->t, "hindsight", NULL, 4, POLICY_CLASSES_CONFLICT, 1, &err);
	assert_null(s);
	assert_int_equal(errno, EINVAL);
	assert_contains(err.msg, "runs in loom-replay, not in loomd");

	s = new_sched(fx, "fifo", 0, POLICY_CLASSES_CONFLICT);
	assert_int_equal(loomd_sched_classes(s), 1);
	assert_string_equal(loomd_sched_policy(s), "fifo");
}

/*
 * set-policy refuses an unknown policy, a bad option and an over-long spec with a
 * message and keeps the old policy, which still schedules; a good spec is taken.
 */
static void test_set_policy(void **state)
{
	struct fx *fx = *state;
	struct loom_err err = {{0}};
	char longspec[POLICY_SPEC_MAX + 8];
	struct loomd_sched *s = new_sched(fx, "fifo", 4, POLICY_CLASSES_PER_HOST);

	add_abc(fx);
	assert_int_equal(loomd_sched_set_policy(s, "nosuch", &err), -ENOENT);
	assert_contains(err.msg, "unknown policy 'nosuch'");
	assert_string_equal(loomd_sched_policy(s), "fifo");

	memset(&err, 0, sizeof(err));
	assert_true(loomd_sched_set_policy(s, "scf:nosuchopt=2", &err) < 0);
	assert_contains(err.msg, "nosuchopt");
	assert_string_equal(loomd_sched_policy(s), "fifo");

	memset(longspec, 'x', sizeof(longspec) - 1);
	longspec[sizeof(longspec) - 1] = '\0';
	memset(&err, 0, sizeof(err));
	assert_int_equal(loomd_sched_set_policy(s, longspec, &err), -EINVAL);
	assert_contains(err.msg, "longer than");
	assert_string_equal(loomd_sched_policy(s), "fifo");

	/* the old policy still decides */
	assert_true(pass_ok(s, 100).decided);
	assert_int_equal(loomd_sched_decisions(s), 1);

	assert_int_equal(loomd_sched_set_policy(s, "scf", &err), 0);
	assert_string_equal(loomd_sched_policy(s), "scf");
	assert_true(pass_ok(s, 100).decided);
}

/* ---- passes --------------------------------------------------------------------------------- */

/*
 * With nothing registered a pass decides nothing and leaves no view or decision (the
 * agents' tables empty out); so does a pass after the last job is unregistered.
 */
static void test_empty_registry(void **state)
{
	struct fx *fx = *state;
	struct loom_err err = {{0}};
	struct loomd_sched *s = new_sched(fx, "fifo", 4, POLICY_CLASSES_CONFLICT);
	struct loomd_sched_result res = pass_ok(s, 0);

	assert_false(res.decided);
	assert_int_equal(res.released, 0);
	assert_true(res.next_ns == CP_TIME_NEVER);
	assert_null(loomd_sched_view(s));
	assert_null(loomd_sched_decision(s));
	assert_int_equal(loomd_sched_decisions(s), 0);

	add_abc(fx);
	res = pass_ok(s, 100);
	assert_true(res.decided);
	assert_non_null(loomd_sched_view(s));
	assert_non_null(loomd_sched_decision(s));
	assert_int_equal(loomd_sched_decision(s)->norder, 3);

	assert_int_equal(loomd_registry_unregister(fx->r, 1, &err), 0);
	res = pass_ok(s, 200);
	assert_false(res.decided);
	assert_null(loomd_sched_view(s));
	assert_null(loomd_sched_decision(s));
}

/*
 * Per-host: walking the policy's order, the i-th coflow with a flow from host h gets
 * class i there, so C is class 1 on host 2 (after A) but class 0 on host 6.
 */
static void test_per_host_classes(void **state)
{
	struct fx *fx = *state;
	struct loomd_sched *s = new_sched(fx, "fifo", 4, POLICY_CLASSES_PER_HOST);
	struct loomd_sched_result res;

	add_abc(fx);
	res = pass_ok(s, 100);
	assert_true(res.decided);
	assert_int_equal(loomd_sched_decision(s)->norder, 3);
	assert_int_equal(rank_of(fx, 10), 0);
	assert_int_equal(rank_of(fx, 11), 1);
	assert_int_equal(rank_of(fx, 12), 2);
	assert_int_equal(cls(fx, 1), 0); /* A on host 0 */
	assert_int_equal(cls(fx, 2), 0); /* A on host 2 */
	assert_int_equal(cls(fx, 3), 1); /* B on host 0, after A */
	assert_int_equal(cls(fx, 4), 1); /* C on host 2, after A */
	assert_int_equal(cls(fx, 5), 0); /* C on host 6, alone */
}

/*
 * Conflict: a coflow gets one class above every earlier coflow it shares a port with,
 * the same on every host, so C is class 1 on host 6 too.
 */
static void test_conflict_classes(void **state)
{
	struct fx *fx = *state;
	struct loomd_sched *s = new_sched(fx, "fifo", 4, POLICY_CLASSES_CONFLICT);

	add_abc(fx);
	assert_true(pass_ok(s, 100).decided);
	assert_int_equal(cls(fx, 1), 0);
	assert_int_equal(cls(fx, 2), 0);
	assert_int_equal(cls(fx, 3), 1);
	assert_int_equal(cls(fx, 4), 1);
	assert_int_equal(cls(fx, 5), 1); /* C meets A at host 2: class 1 on every host */
}

/*
 * With K classes no flow gets a class above K-1, in either mode; flows outside the
 * view get K-1.
 */
static void test_k_cap(void **state)
{
	struct fx *fx = *state;
	static const enum policy_class_assign modes[] = {POLICY_CLASSES_PER_HOST,
							 POLICY_CLASSES_CONFLICT};
	struct jb j;

	/* four coflows, all from host 0 to host 1, released in turn */
	jb_init(&j, 1);
	for (uint32_t i = 0; i < 4; i++) {
		struct wire_tuple t = tup(1 + i);

		jb_coflow(&j, 10 + i, 1, 10 * i);
		jb_flow(&j, i, 0, 1, 1000, &t);
	}
	jb_add_ok(fx->r, &j, 0);
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct loomd_sched *s = new_sched(fx, "fifo", 2, modes[m]);

		assert_true(pass_ok(s, 100).decided);
		assert_int_equal(rank_of(fx, 13), 3);
		assert_int_equal(cls(fx, 1), 0);
		assert_int_equal(cls(fx, 2), 1);
		assert_int_equal(cls(fx, 3), 1);
		assert_int_equal(cls(fx, 4), 1);
		assert_int_equal(loomd_sched_flow_class(s, 1000000), 1);
		assert_int_equal(loomd_sched_rank(s, 1000000), CP_NONE);
		fx->s = loomd_sched_free(s);
	}
}

/*
 * A policy that gives its own classes (fair: all in class 0) keeps them on every
 * host: B stays in class 0 on host 0 although A comes first there.
 */
static void test_policy_classes_kept(void **state)
{
	struct fx *fx = *state;
	struct loomd_sched *s = new_sched(fx, "fair", 4, POLICY_CLASSES_PER_HOST);

	add_abc(fx);
	assert_true(pass_ok(s, 100).decided);
	for (uint32_t n = 1; n <= 5; n++)
		assert_int_equal(cls(fx, n), 0);
}

/*
 * A coflow is ordered only from its release: before it the pass reports the next
 * release time, and the pass at that time releases and ranks it.
 */
static void test_release_and_next(void **state)
{
	struct fx *fx = *state;
	struct loomd_sched *s = new_sched(fx, "fifo", 4, POLICY_CLASSES_PER_HOST);
	struct loomd_sched_result res;
	struct wire_tuple t1 = tup(1), t2 = tup(2);
	struct jb j;

	jb_init(&j, 1);
	jb_coflow(&j, 10, 1, 1000);
	jb_coflow(&j, 11, 1, 6000);
	jb_flow(&j, 0, 0, 1, 1000, &t1);
	jb_flow(&j, 1, 0, 2, 1000, &t2);
	jb_add_ok(fx->r, &j, 0);

	/* the first view is made at time 0: both releases come from the pass */
	res = pass_ok(s, 1000);
	assert_true(res.decided);
	assert_int_equal(res.released, 1);
	assert_true(res.next_ns == 6000);
	assert_int_equal(loomd_sched_decision(s)->norder, 1);
	assert_int_equal(rank_of(fx, 10), 0);
	assert_int_equal(rank_of(fx, 11), CP_NONE);
	assert_int_equal(cls(fx, 2), 3); /* not released: the lowest class */

	res = pass_ok(s, 6000);
	assert_int_equal(res.released, 1);
	assert_true(res.next_ns == CP_TIME_NEVER);
	assert_int_equal(rank_of(fx, 11), 1);
	assert_int_equal(cls(fx, 2), 1);
}

/*
 * A coflow that finished leaves the order: its flows fall to K-1 and the coflows
 * behind it move up on its hosts.
 */
static void test_finished_coflow(void **state)
{
	struct fx *fx = *state;
	struct loomd_sched *s = new_sched(fx, "fifo", 4, POLICY_CLASSES_PER_HOST);
	struct wire_tuple t1 = tup(1), t2 = tup(2);

	add_abc(fx);
	assert_true(pass_ok(s, 100).decided);
	assert_int_equal(cls(fx, 3), 1);

	assert_int_equal(loomd_registry_flow_stat(fx->r, &t1, 1000, true, 150), 0);
	assert_int_equal(loomd_registry_flow_stat(fx->r, &t2, 1000, true, 150), 0);
	assert_true(pass_ok(s, 200).decided);
	assert_int_equal(loomd_sched_decision(s)->norder, 2);
	assert_int_equal(rank_of(fx, 10), CP_NONE);
	assert_int_equal(rank_of(fx, 11), 0);
	assert_int_equal(rank_of(fx, 12), 1);
	assert_int_equal(cls(fx, 1), 3);
	assert_int_equal(cls(fx, 2), 3);
	assert_int_equal(cls(fx, 3), 0); /* B: first on host 0 now */
	assert_int_equal(cls(fx, 4), 0); /* C: first on host 2 now */
}

/*
 * A pass over an unchanged registry keeps the view (no rebuild) and decides the same
 * order and classes; only the decision count moves.
 */
static void test_pass_unchanged(void **state)
{
	struct fx *fx = *state;
	struct loomd_sched *s = new_sched(fx, "fifo", 4, POLICY_CLASSES_PER_HOST);
	uint32_t before[5], order[3];
	const struct cp_model *v;
	struct loomd_sched_result res;

	add_abc(fx);
	assert_true(pass_ok(s, 100).decided);
	v = loomd_sched_view(s);
	memcpy(order, loomd_sched_decision(s)->order, sizeof(order));
	for (uint32_t n = 1; n <= 5; n++)
		before[n - 1] = cls(fx, n);

	res = pass_ok(s, 100);
	assert_true(res.decided);
	assert_int_equal(res.released, 0);
	assert_ptr_equal(loomd_sched_view(s), v);
	assert_int_equal(loomd_sched_decision(s)->norder, 3);
	assert_memory_equal(loomd_sched_decision(s)->order, order, sizeof(order));
	for (uint32_t n = 1; n <= 5; n++)
		assert_int_equal(cls(fx, n), before[n - 1]);
	assert_int_equal(loomd_sched_decisions(s), 2);
}

/*
 * A policy switched between passes orders the next pass: fifo puts the early big
 * coflow first, scf the later small one.
 */
static void test_switch_policy(void **state)
{
	struct fx *fx = *state;
	struct loom_err err = {{0}};
	struct loomd_sched *s = new_sched(fx, "fifo", 4, POLICY_CLASSES_PER_HOST);
	struct wire_tuple t1 = tup(1), t2 = tup(2);
	struct jb j;

	jb_init(&j, 1);
	jb_coflow(&j, 10, 1, 0);
	jb_coflow(&j, 11, 1, 10);
	jb_flow(&j, 0, 0, 1, 1000000, &t1);
	jb_flow(&j, 1, 0, 2, 1000, &t2);
	jb_add_ok(fx->r, &j, 0);

	assert_true(pass_ok(s, 100).decided);
	assert_int_equal(rank_of(fx, 10), 0);
	assert_int_equal(cls(fx, 2), 1);

	assert_int_equal(loomd_sched_set_policy(s, "scf", &err), 0);
	assert_true(pass_ok(s, 200).decided);
	assert_int_equal(rank_of(fx, 11), 0);
	assert_int_equal(rank_of(fx, 10), 1);
	assert_int_equal(cls(fx, 2), 0);
	assert_int_equal(cls(fx, 1), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_new_refusals, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_set_policy, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_empty_registry, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_per_host_classes, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_conflict_classes, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_k_cap, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_policy_classes_kept, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_release_and_next, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_finished_coflow, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_pass_unchanged, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_switch_policy, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
