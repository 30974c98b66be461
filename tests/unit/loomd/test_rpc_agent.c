/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for controlplane/loomd/rpc_agent.c: the priority tables loomd
 * keeps for its agents and the versioned deltas it sends them. A server with
 * no listeners, no journal and a virtual clock (8 hosts, fifo, 4 classes
 * per host), agents on socketless test connections (loomd_server_test_conn),
 * jobs put straight into the registry, passes run by loomd_server_pass(); the
 * tables are read from the agents' connections. Checked: a Hello for a host
 * out of range is refused; an agent's table holds exactly its host's flows,
 * with the classes of the order, capped at the agent's own classes; a pass
 * that changes nothing sends no table; a finished coflow's entries go in one
 * delta; Resync gets a full table; with no job left every table empties.
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

#include <cmocka.h>

#include "common/log.h"
#include "controlplane/loomd/config.h"
#include "controlplane/loomd/registry.h"
#include "controlplane/loomd/rpc.h"
#include "controlplane/loomd/rpc_wire.h"
#include "controlplane/loomd/server.h"
#include "proto/wire.h"
#include "tests/unit/loomd/jobspec.h"

#define NHOSTS 8

/* ---- server and agents ---------------------------------------------------------------------- */

static int setup(void **state)
{
	struct loomd_server *s = calloc(1, sizeof(*s));
	struct loomd_config cfg;
	struct loom_err err = {{0}};

	if (!s)
		return -1;
	loom_log_set_level(LOOM_LOG_ERR);
	loomd_config_default(&cfg);
	cfg.listen_unix[0] = 0;
	cfg.listen_tcp[0] = 0;
	cfg.admin_socket[0] = 0;
	cfg.metrics[0] = 0;
	cfg.journal[0] = 0;
	cfg.hosts = NHOSTS;
	cfg.classes = 4;
	snprintf(cfg.policy, sizeof(cfg.policy), "fifo");
	snprintf(cfg.class_assign, sizeof(cfg.class_assign), "per-host");
	cfg.virtual_clock = true;
	/* a test connection has no bufferevent to arm the agent timeout on */
	cfg.agent_timeout_ns = 0;
	if (loomd_server_init(s, &cfg, &err) < 0) {
		fprintf(stderr, "loomd_server_init: %s\n", err.msg);
		free(s);
		return -1;
	}
	*state = s;
	return 0;
}

static int teardown(void **state)
{
	struct loomd_server *s = *state;

	loomd_server_done(s);
	free(s);
	return 0;
}

static Loom__Hello agent_hello(uint32_t host, uint32_t classes)
{
	Loom__Hello h = LOOM__HELLO__INIT;

	h.version_min = WIRE_VERSION_MIN;
	h.version_max = WIRE_VERSION_MAX;
	h.role = LOOM__ROLE__AGENT;
	h.name = "test-agent";
	h.host_id = host;
	h.enforcer = LOOM__ENFORCER__ENFORCER_NULL;
	h.classes = classes;
	return h;
}

/* An agent of host with classes classes, said hello through the wire. */
static struct loomd_conn *agent(struct loomd_server *s, uint32_t host, uint32_t classes)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Hello h = agent_hello(host, classes);
	struct loomd_conn *c = loomd_server_test_conn(s);
	uint8_t *buf;
	size_t len;

	assert_non_null(c);
	env.seq = 1;
	env.body_case = LOOM__ENVELOPE__BODY_HELLO;
	env.hello = &h;
	assert_int_equal(wire_encode(&env, s->cfg.max_frame, &buf, &len), 0);
	assert_int_equal(loomd_conn_feed(c, buf, len), 0);
	free(buf);
	assert_int_equal(c->role, LOOMD_ROLE_AGENT);
	assert_ptr_equal(s->agent_of_host[host], c);
	return c;
}

static void pass_ok(struct loomd_server *s)
{
	struct loom_err err = {{0}};

	if (loomd_server_pass(s, &err) < 0)
		fail_msg("pass: %s", err.msg);
}

/*
 * The ABC job (jb_abc()) arriving at 0, C's first flow from host 0, 1 MB a
 * flow, and the clock at 100 ns (all three released): host 0 sends a flow of
 * each, in classes 0, 1, 2 there.
 */
static void add_abc(struct loomd_server *s)
{
	struct jb j;

	jb_abc(&j, 0, 1000000);
	jb_add_ok(s->reg, &j, 0);
	assert_int_equal(loom_vclock_advance_to(&s->vclock, 100), 0);
}

/* ---- reading an agent's table --------------------------------------------------------------- */

/* The class agent c has for coflow id, or -1 when it has no entry. */
static int64_t table_class(const struct loomd_conn *c, uint64_t id)
{
	uint64_t v;

	if (!loom_hmap_get(&c->coflows, id, &v))
		return -1;
	return ((const struct loomd_agent_coflow *)(uintptr_t)v)->cls;
}

/* The coflow agent c maps the flow with test tuple n to, or 0 when it has no entry. */
static uint64_t table_flow(const struct loomd_conn *c, uint32_t n)
{
	struct wire_tuple t = tup(n);
	struct loom_hmap_iter it;
	uint64_t v;

	loom_hmap_iter_init(&c->flows, &it);
	while (loom_hmap_iter_next(&c->flows, &it, NULL, &v)) {
		const struct loomd_agent_flow *e = (const struct loomd_agent_flow *)(uintptr_t)v;

		if (wire_tuple_eq(&e->tuple, &t))
			return e->coflow_id;
	}
	return 0;
}

/* ---- tests ---------------------------------------------------------------------------------- */

/*
 * A Hello naming a host the fabric does not have is refused with a message, and
 * makes no agent.
 */
static void test_hello_bad_host(void **state)
{
	struct loomd_server *s = *state;
	struct loomd_conn *c = loomd_server_test_conn(s);
	Loom__Hello h = agent_hello(NHOSTS, 4);
	struct loom_err err = {{0}};

	assert_non_null(c);
	assert_int_equal(loomd_agent_hello(c, &h, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "out of range"));
	assert_int_equal(s->nagents, 0);
	assert_int_not_equal(c->role, LOOMD_ROLE_AGENT);
}

/*
 * The first table an agent gets is version 1 and holds exactly the flows its host
 * sends, mapped to their coflows, and those coflows in the classes of the order.
 */
static void test_first_table(void **state)
{
	struct loomd_server *s = *state;
	struct loomd_conn *a0 = agent(s, 0, 4), *a6 = agent(s, 6, 4);

	add_abc(s);
	pass_ok(s);
	assert_int_equal(a0->table_version, 1);
	assert_false(a0->need_full);
	assert_int_equal(loom_hmap_count(&a0->flows), 3);
	assert_int_equal(table_flow(a0, 1), 10);
	assert_int_equal(table_flow(a0, 3), 11);
	assert_int_equal(table_flow(a0, 4), 12);
	assert_int_equal(table_flow(a0, 2), 0); /* host 2's */
	assert_int_equal(loom_hmap_count(&a0->coflows), 3);
	assert_int_equal(table_class(a0, 10), 0);
	assert_int_equal(table_class(a0, 11), 1);
	assert_int_equal(table_class(a0, 12), 2);

	/* host 6 sends only C's flow 5: C is its first coflow */
	assert_int_equal(a6->table_version, 1);
	assert_int_equal(loom_hmap_count(&a6->flows), 1);
	assert_int_equal(table_flow(a6, 5), 12);
	assert_int_equal(loom_hmap_count(&a6->coflows), 1);
	assert_int_equal(table_class(a6, 12), 0);
}

/* An agent with fewer classes than loomd gets them capped at its lowest. */
static void test_agent_classes_cap(void **state)
{
	struct loomd_server *s = *state;
	struct loomd_conn *a0 = agent(s, 0, 2);

	add_abc(s);
	pass_ok(s);
	assert_int_equal(table_class(a0, 10), 0);
	assert_int_equal(table_class(a0, 11), 1);
	assert_int_equal(table_class(a0, 12), 1);
}

/*
 * A pass that changes nothing sends no table: versions and the count of tables
 * sent stay where they were.
 */
static void test_unchanged_pass_sends_nothing(void **state)
{
	struct loomd_server *s = *state;
	struct loomd_conn *a0 = agent(s, 0, 4);
	uint64_t sent;

	add_abc(s);
	pass_ok(s);
	assert_int_equal(a0->table_version, 1);
	sent = s->st.tables_sent;
	assert_true(sent >= 1);
	pass_ok(s);
	pass_ok(s);
	assert_int_equal(a0->table_version, 1);
	assert_int_equal(s->st.tables_sent, sent);
}

/*
 * When a coflow finishes, one delta removes its entries and moves up the coflows
 * behind it; other entries stay.
 */
static void test_finished_coflow_delta(void **state)
{
	struct loomd_server *s = *state;
	struct loomd_conn *a0 = agent(s, 0, 4);
	struct wire_tuple t1 = tup(1), t2 = tup(2);
	uint64_t sent;

	add_abc(s);
	pass_ok(s);
	sent = s->st.tables_sent;
	assert_int_equal(loomd_registry_flow_stat(s->reg, &t1, 1000000, true, 150), 0);
	assert_int_equal(loomd_registry_flow_stat(s->reg, &t2, 1000000, true, 150), 0);
	assert_int_equal(loom_vclock_advance_to(&s->vclock, 200), 0);
	pass_ok(s);
	assert_int_equal(a0->table_version, 2);
	assert_int_equal(s->st.tables_sent, sent + 1);
	assert_int_equal(table_flow(a0, 1), 0);
	assert_int_equal(table_class(a0, 10), -1);
	assert_int_equal(loom_hmap_count(&a0->flows), 2);
	assert_int_equal(table_flow(a0, 3), 11);
	assert_int_equal(table_class(a0, 11), 0);
	assert_int_equal(table_class(a0, 12), 1);
}

/*
 * Resync makes the next pass send a full table (a new version) even though
 * nothing changed.
 */
static void test_resync(void **state)
{
	struct loomd_server *s = *state;
	struct loomd_conn *a0 = agent(s, 0, 4);
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Resync rs = LOOM__RESYNC__INIT;

	add_abc(s);
	pass_ok(s);
	assert_int_equal(a0->table_version, 1);
	env.body_case = LOOM__ENVELOPE__BODY_RESYNC;
	env.resync = &rs;
	loomd_rpc_agent(a0, &env);
	assert_true(a0->need_full);
	pass_ok(s);
	assert_int_equal(a0->table_version, 2);
	assert_false(a0->need_full);
	assert_int_equal(loom_hmap_count(&a0->flows), 3);
}

/* With the last job unregistered, the next pass empties every agent's table. */
static void test_no_jobs_empties_tables(void **state)
{
	struct loomd_server *s = *state;
	struct loomd_conn *a0 = agent(s, 0, 4);
	struct loom_err err = {{0}};

	add_abc(s);
	pass_ok(s);
	assert_int_equal(loom_hmap_count(&a0->flows), 3);
	assert_int_equal(loomd_registry_unregister(s->reg, 1, &err), 0);
	pass_ok(s);
	assert_int_equal(a0->table_version, 2);
	assert_int_equal(loom_hmap_count(&a0->flows), 0);
	assert_int_equal(loom_hmap_count(&a0->coflows), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hello_bad_host, setup, teardown),
		cmocka_unit_test_setup_teardown(test_first_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_agent_classes_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unchanged_pass_sends_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_finished_coflow_delta, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resync, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_jobs_empties_tables, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
