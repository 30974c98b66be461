/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for dataplane/agent.c: the agent's session with loomd and its
 * table, against a scripted loomd on a Unix socket that this test holds.
 * The agent (dp_agent_new + dp_agent_run, the null enforcer) runs in a
 * forked child of the test, not the loom-agent program; its table and
 * counters are read on its admin socket, and it is stopped by SIGTERM, its
 * exit checked. Checked: the Hello carries the configuration; a full table
 * is applied and acknowledged; a delta that does not follow, and a table
 * with a malformed tuple, each ask for a full table (Resync) and change
 * nothing; when loomd goes away the agent keeps its table (fail-static)
 * and says Hello again on the next connection; a refused Hello is retried
 * with loomd's reason kept; a frame of a bad length drops the session;
 * flow statistics (the null enforcer's counters=) reach loomd, and those
 * collected while loomd is away are dropped and counted; the null
 * enforcer refuses other arguments.
 */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/admin.h"
#include "common/clock.h"
#include "common/log.h"
#include "dataplane/agent.h"
#include "proto/frame.h"
#include "proto/wire.h"

#define HOST    3
#define CLASSES 4
#define CTRL_ID 0xc0ffeeULL
#define WAIT_MS 5000

struct fixture {
	char dir[64];
	char sock[96];  /* the scripted loomd */
	char admin[96]; /* the agent's admin socket */
	int lfd;        /* listening */
	int fd;         /* the agent's current session, -1: none */
	pid_t agent;
	const char *counters; /* the null enforcer's counters= (NULL: none) */
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	if (!f)
		return -1;
	loom_log_set_level(LOOM_LOG_ERR);
	snprintf(f->dir, sizeof(f->dir), "/tmp/loom-test-agent-XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->sock, sizeof(f->sock), "%s/loomd.sock", f->dir);
	snprintf(f->admin, sizeof(f->admin), "%s/agent.sock", f->dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->sock);
	f->fd = -1;
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(f->lfd, 4) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (f->agent > 0) {
		kill(f->agent, SIGKILL);
		waitpid(f->agent, NULL, 0);
	}
	if (f->fd >= 0)
		close(f->fd);
	close(f->lfd);
	unlink(f->sock);
	unlink(f->admin);
	rmdir(f->dir);
	free(f);
	return 0;
}

/*
 * The agent in a child process, reconnecting after backoff_ms: its exit code
 * is dp_agent_run()'s (2: it could not start). While it says Hello (blocking,
 * bounded by its connect timeout) it answers nothing else, its admin socket
 * included: the script reads its state between sessions' Hellos only.
 */
static void start_agent(struct fixture *f, unsigned backoff_ms)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct dp_agent_config cfg;
		struct loom_err err = {{0}};
		struct dp_agent *a;
		int code;

		dp_agent_config_default(&cfg);
		snprintf(cfg.controller, sizeof(cfg.controller), "unix:%s", f->sock);
		snprintf(cfg.admin_socket, sizeof(cfg.admin_socket), "%s", f->admin);
		snprintf(cfg.enforcer, sizeof(cfg.enforcer), "null");
		if (f->counters)
			snprintf(cfg.enforcer_args, sizeof(cfg.enforcer_args), "counters=%s",
				 f->counters);
		cfg.host_id = HOST;
		cfg.classes = CLASSES;
		cfg.link_bps = 100000000;
		/* no stats (unless asked) or heartbeats in the way of the script */
		cfg.stats_interval_ns = f->counters ? 20 * LOOM_NS_PER_MS : 3600 * LOOM_NS_PER_S;
		cfg.heartbeat_ns = 3600 * LOOM_NS_PER_S;
		cfg.backoff_min_ns = backoff_ms * LOOM_NS_PER_MS;
		cfg.backoff_max_ns = 5 * backoff_ms * LOOM_NS_PER_MS;
		a = dp_agent_new(&cfg, &err);
		if (!a) {
			fprintf(stderr, "dp_agent_new: %s\n", err.msg);
			_exit(2);
		}
		code = dp_agent_run(a);
		dp_agent_free(a);
		_exit(code);
	}
	f->agent = pid;
}

/* SIGTERM, and the agent must exit 0. */
static void stop_agent(struct fixture *f)
{
	int status;

	assert_int_equal(kill(f->agent, SIGTERM), 0);
	assert_int_equal(waitpid(f->agent, &status, 0), f->agent);
	f->agent = 0;
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Waits (bounded) for the agent's next connection. */
static void accept_session(struct fixture *f)
{
	struct pollfd p = {.fd = f->lfd, .events = POLLIN};

	if (f->fd >= 0)
		close(f->fd);
	assert_int_equal(poll(&p, 1, WAIT_MS), 1);
	f->fd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(f->fd >= 0);
}

/* The agent's next message (a heartbeat or stats skipped). */
static Loom__Envelope *next_msg(struct fixture *f)
{
	for (int i = 0; i < 16; i++) {
		Loom__Envelope *env = NULL;

		assert_int_equal(wire_recv(f->fd, WIRE_MAX_FRAME_DEFAULT, WAIT_MS, &env), 0);
		if (env->body_case != LOOM__ENVELOPE__BODY_HEARTBEAT &&
		    env->body_case != LOOM__ENVELOPE__BODY_FLOW_STATS)
			return env;
		wire_free(env);
	}
	fail_msg("only heartbeats and stats from the agent");
	return NULL;
}

/* The agent's next FlowStats (heartbeats skipped). */
static Loom__Envelope *next_stats(struct fixture *f)
{
	for (int i = 0; i < 16; i++) {
		Loom__Envelope *env = NULL;

		assert_int_equal(wire_recv(f->fd, WIRE_MAX_FRAME_DEFAULT, WAIT_MS, &env), 0);
		if (env->body_case == LOOM__ENVELOPE__BODY_FLOW_STATS)
			return env;
		assert_int_equal(env->body_case, LOOM__ENVELOPE__BODY_HEARTBEAT);
		wire_free(env);
	}
	fail_msg("no statistics from the agent");
	return NULL;
}

static void send_env(struct fixture *f, Loom__Envelope *env)
{
	assert_int_equal(wire_send(f->fd, env, WIRE_MAX_FRAME_DEFAULT, WAIT_MS), 0);
}

/* Takes the agent's Hello (checked against its configuration) and answers it (refusal: NULL). */
static void hello(struct fixture *f, const char *refusal)
{
	Loom__Envelope *env = next_msg(f), out = LOOM__ENVELOPE__INIT;
	Loom__HelloReply rep = LOOM__HELLO_REPLY__INIT;
	Loom__Error e = LOOM__ERROR__INIT;

	assert_int_equal(env->body_case, LOOM__ENVELOPE__BODY_HELLO);
	assert_int_equal(env->hello->role, LOOM__ROLE__AGENT);
	assert_int_equal(env->hello->host_id, HOST);
	assert_int_equal(env->hello->classes, CLASSES);
	assert_int_equal(env->hello->link_bps, 100000000);
	assert_int_equal(env->hello->enforcer, LOOM__ENFORCER__ENFORCER_NULL);
	out.seq = env->seq;
	wire_free(env);
	rep.version = WIRE_VERSION_MAX;
	rep.classes = CLASSES;
	rep.controller_id = CTRL_ID;
	if (refusal) {
		e.code = LOOM__ERROR_CODE__DENIED;
		e.message = (char *)refusal;
		rep.error = &e;
	}
	out.body_case = LOOM__ENVELOPE__BODY_HELLO_REPLY;
	out.hello_reply = &rep;
	send_env(f, &out);
}

/* A table of version v (full, or a delta on base) with flows port 1000+i of coflow 100+i, class i % CLASSES. */
static void send_table(struct fixture *f, uint64_t v, uint64_t base, bool full, size_t nflows,
		       bool bad_tuple)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__PriorityTable t = LOOM__PRIORITY_TABLE__INIT;
	Loom__FlowEntry *fe = calloc(nflows, sizeof(*fe)), **fep = calloc(nflows, sizeof(*fep));
	Loom__FiveTuple *ft = calloc(nflows, sizeof(*ft));
	Loom__CoflowClass *cc = calloc(nflows, sizeof(*cc)), **ccp = calloc(nflows, sizeof(*ccp));
	uint8_t src[4] = {10, 0, 0, HOST}, dst[4] = {10, 0, 0, 9};

	assert_true(nflows > 0 && fe && fep && ft && cc && ccp);
	for (size_t i = 0; i < nflows; i++) {
		loom__five_tuple__init(&ft[i]);
		ft[i].src_addr.data = src;
		ft[i].src_addr.len = bad_tuple && i == 0 ? 3 : 4; /* 3 bytes: no address */
		ft[i].dst_addr.data = dst;
		ft[i].dst_addr.len = 4;
		ft[i].src_port = 1000 + (uint32_t)i;
		ft[i].dst_port = 80;
		ft[i].protocol = 6;
		loom__flow_entry__init(&fe[i]);
		fe[i].tuple = &ft[i];
		fe[i].coflow_id = 100 + i;
		fep[i] = &fe[i];
		loom__coflow_class__init(&cc[i]);
		cc[i].coflow_id = 100 + i;
		cc[i].class_ = (uint32_t)i % CLASSES;
		ccp[i] = &cc[i];
	}
	t.version = v;
	t.base_version = base;
	t.full = full;
	t.n_flows = nflows;
	t.flows = fep;
	t.n_classes = nflows;
	t.classes = ccp;
	t.default_class = CLASSES - 1;
	env.seq = v;
	env.body_case = LOOM__ENVELOPE__BODY_TABLE;
	env.table = &t;
	send_env(f, &env);
	free(fe);
	free(fep);
	free(ft);
	free(cc);
	free(ccp);
}

static void expect_ack(struct fixture *f, uint64_t version)
{
	Loom__Envelope *env = next_msg(f);

	assert_int_equal(env->body_case, LOOM__ENVELOPE__BODY_TABLE_ACK);
	assert_int_equal(env->table_ack->version, version);
	wire_free(env);
}

static void expect_resync(struct fixture *f)
{
	Loom__Envelope *env = next_msg(f);

	assert_int_equal(env->body_case, LOOM__ENVELOPE__BODY_RESYNC);
	wire_free(env);
}

/* The agent's admin command cmd (its socket may take a moment to appear). */
static json_t *admin(struct fixture *f, const char *cmd)
{
	struct loom_err err = {{0}};
	json_t *res = NULL;

	for (int i = 0; i < 100; i++) {
		int r = loom_admin_call(f->admin, cmd, 0, NULL, WAIT_MS, &res, &err);

		if (r == 0)
			return res;
		if (r != -ENOENT && r != -ECONNREFUSED)
			break;
		usleep(20000);
	}
	fail_msg("admin %s: %s", cmd, err.msg);
	return NULL;
}

static long long admin_int(struct fixture *f, const char *cmd, const char *key)
{
	json_t *res = admin(f, cmd);
	long long v = json_integer_value(json_object_get(res, key));

	json_decref(res);
	return v;
}

/* The agent's table: its version, and its flows' count. */
static void table_is(struct fixture *f, long long version, size_t nflows)
{
	json_t *res = admin(f, "table");

	assert_int_equal(json_integer_value(json_object_get(res, "version")), version);
	assert_int_equal(json_array_size(json_object_get(res, "flows")), nflows);
	json_decref(res);
}

/* An agent (reconnecting after backoff_ms) connected with table 5 (two flows) in force. */
static void agent_with_table(struct fixture *f, unsigned backoff_ms)
{
	start_agent(f, backoff_ms);
	accept_session(f);
	hello(f, NULL);
	send_table(f, 5, 0, true, 2, false);
	expect_ack(f, 5);
}

static void test_full_table(void **state)
{
	struct fixture *f = *state;
	json_t *res, *fl;

	agent_with_table(f, 20);
	res = admin(f, "table");
	assert_int_equal(json_integer_value(json_object_get(res, "version")), 5);
	assert_int_equal(json_integer_value(json_object_get(res, "default_class")), CLASSES - 1);
	fl = json_object_get(res, "flows");
	assert_int_equal(json_array_size(fl), 2);
	for (size_t i = 0; i < 2; i++) {
		json_t *e = json_array_get(fl, i);
		long long co = json_integer_value(json_object_get(e, "coflow"));

		assert_true(co == 100 || co == 101);
		assert_int_equal(json_integer_value(json_object_get(e, "class")), co - 100);
	}
	json_decref(res);
	/* a delta that follows is applied */
	send_table(f, 6, 5, false, 3, false);
	expect_ack(f, 6);
	table_is(f, 6, 3);
	stop_agent(f);
}

static void test_gap_resyncs(void **state)
{
	struct fixture *f = *state;

	agent_with_table(f, 20);
	send_table(f, 8, 7, false, 3, false); /* 6 and 7 never came */
	expect_resync(f);
	table_is(f, 5, 2);
	assert_int_equal(admin_int(f, "stats", "resyncs"), 1);
	/* the full table loomd answers with is taken */
	send_table(f, 8, 0, true, 1, false);
	expect_ack(f, 8);
	table_is(f, 8, 1);
	stop_agent(f);
}

static void test_bad_table_resyncs(void **state)
{
	struct fixture *f = *state;

	agent_with_table(f, 20);
	send_table(f, 6, 5, false, 3, true);
	expect_resync(f);
	table_is(f, 5, 2);
	assert_int_equal(admin_int(f, "stats", "bad_tables"), 1);
	stop_agent(f);
}

static void test_fail_static(void **state)
{
	struct fixture *f = *state;

	agent_with_table(f, 20);
	/* loomd goes away: the table stays in force, the agent comes back */
	close(f->fd);
	f->fd = -1;
	accept_session(f);
	hello(f, NULL);
	table_is(f, 5, 2);
	assert_int_equal(admin_int(f, "stats", "disconnects"), 1);
	send_table(f, 1, 0, true, 1, false); /* a restarted loomd starts its versions again */
	expect_ack(f, 1);
	table_is(f, 1, 1);
	stop_agent(f);
}

static void test_refused_hello_retried(void **state)
{
	struct fixture *f = *state;
	json_t *res;

	start_agent(f, 1000);
	accept_session(f);
	hello(f, "host 3 belongs to another agent");
	/* waiting to try again (1 s), it says why it could not connect */
	res = admin(f, "stats");
	assert_int_equal(json_integer_value(json_object_get(res, "connect_failures")), 1);
	assert_int_equal(json_integer_value(json_object_get(res, "connects")), 0);
	assert_non_null(
		strstr(json_string_value(json_object_get(res, "last_error")), "another agent"));
	json_decref(res);
	accept_session(f);
	hello(f, NULL);
	send_table(f, 2, 0, true, 1, false);
	expect_ack(f, 2);
	stop_agent(f);
}

static void test_bad_frame_drops_session(void **state)
{
	struct fixture *f = *state;
	uint8_t hdr[WIRE_HDR_BYTES];

	agent_with_table(f, 20);
	wire_hdr_put(hdr, 0);
	assert_int_equal(write(f->fd, hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	accept_session(f); /* it dropped that session and connected again */
	hello(f, NULL);
	table_is(f, 5, 2);
	stop_agent(f);
}

static void test_stats(void **state)
{
	struct fixture *f = *state;
	Loom__Envelope *env;
	long long dropped0;
	json_t *res;

	f->counters = "1500";
	/* 300 ms between losing loomd and dialling again: ~15 statistics intervals */
	agent_with_table(f, 300);
	/* every flow of the table, 1500 bytes each interval, in one frame */
	env = next_stats(f);
	assert_int_equal(env->flow_stats->n_flows, 2);
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(env->flow_stats->flows[i]->bytes_sent, 1500);
		assert_false(env->flow_stats->flows[i]->done);
		assert_int_equal(env->flow_stats->flows[i]->tuple->dst_port, 80);
	}
	wire_free(env);
	/* loomd goes away: what is collected meanwhile is dropped, and counted */
	close(f->fd);
	f->fd = -1;
	accept_session(f);
	hello(f, NULL);
	res = admin(f, "stats");
	dropped0 = json_integer_value(json_object_get(res, "flows_dropped"));
	assert_true(dropped0 >= 2);
	assert_int_equal(dropped0 % 2, 0); /* whole batches of the 2 flows */
	assert_true(json_integer_value(json_object_get(res, "flows_reported")) >= 2);
	json_decref(res);
	/* reporting again on the new session */
	env = next_stats(f);
	assert_int_equal(env->flow_stats->n_flows, 2);
	wire_free(env);
	stop_agent(f);
}

static void test_stats_frames(void **state)
{
	struct fixture *f = *state;
	size_t total = 0, frames = 0;

	f->counters = "1";
	start_agent(f, 20);
	accept_session(f);
	hello(f, NULL);
	send_table(f, 5, 0, true, 3000, false);
	expect_ack(f, 5);
	/* one interval's 3000 flows: a frame of 2048, then one of 952 */
	while (total < 3000) {
		Loom__Envelope *env = next_stats(f);

		assert_int_equal(env->flow_stats->n_flows, frames == 0 ? 2048 : 952);
		total += env->flow_stats->n_flows;
		frames++;
		wire_free(env);
	}
	assert_int_equal(frames, 2);
	stop_agent(f);
}

static void test_null_counters_refused(void **state)
{
	static const char *const bad[] = {"counters=", "counters=lots", "count=5", "5"};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct dp_agent_config cfg;
		struct loom_err err = {{0}};
		struct dp_agent *a;

		dp_agent_config_default(&cfg);
		snprintf(cfg.enforcer, sizeof(cfg.enforcer), "null");
		snprintf(cfg.enforcer_args, sizeof(cfg.enforcer_args), "%s", bad[i]);
		a = dp_agent_new(&cfg, &err);
		if (a)
			fail_msg("null enforcer took '%s'", bad[i]);
		if (!strstr(err.msg, "null enforcer") && !strstr(err.msg, "the null enforcer"))
			fail_msg("'%s': error '%s' does not name the enforcer", bad[i], err.msg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_full_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gap_resyncs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_table_resyncs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fail_static, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_hello_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_frame_drops_session, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats_frames, setup, teardown),
		cmocka_unit_test(test_null_counters_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
