/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Restart: jobs registered (and acknowledged) survive loomd being killed
 * with SIGKILL; their state (coflows done, jobs done, flows announced) comes
 * back from the journal, unregistered jobs stay gone, a job extended with
 * coflows (loom_client_job_extend()) comes back with them, and an agent that
 * reconnects gets a full table equal to the one it had.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "controlplane/client/loom.h"
#include "harness.h"

#define NJOBS 30

static int request(int fd, Loom__Envelope *env)
{
	Loom__Envelope *rep = h_call(fd, env);
	int code;

	if (!rep)
		fail_msg("no reply to %s", wire_type_name(env->body_case));
	assert_int_equal(rep->body_case, LOOM__ENVELOPE__BODY_REPLY);
	code = rep->reply->error ? (int)rep->reply->error->code : 0;
	if (code)
		fprintf(stderr, "%s: %s\n", wire_type_name(env->body_case),
			rep->reply->error->message);
	wire_free(rep);
	return code;
}

/*
 * Job j: coflow 10j (flows 0->1 and 2->1 with tuples) -> coflow 10j+1 (open,
 * no flows yet).
 */
static int register_job(int fd, uint32_t j)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__RegisterJob rj = LOOM__REGISTER_JOB__INIT;
	Loom__CoflowSpec cs[2], *csp[2] = {&cs[0], &cs[1]};
	Loom__FlowSpec fs[2], *fsp[2] = {&fs[0], &fs[1]};
	Loom__FiveTuple pt[2];
	Loom__Edge e = LOOM__EDGE__INIT, *ep = &e;
	struct wire_tuple t[2];
	char name[32];

	snprintf(name, sizeof(name), "job-%u", j);
	for (int i = 0; i < 2; i++) {
		loom__coflow_spec__init(&cs[i]);
		loom__flow_spec__init(&fs[i]);
		h_tuple(j * 10 + (uint32_t)i, &t[i]);
		wire_tuple_to_pb(&t[i], &pt[i]);
		fs[i].src_host = (uint32_t)i * 2;
		fs[i].dst_host = 1;
		fs[i].bytes = 1000000u * (j + 1);
		fs[i].tuple = &pt[i];
	}
	cs[0].id = 10 * j;
	cs[0].n_flows = 2;
	cs[0].flows = fsp;
	cs[1].id = 10 * j + 1;
	e.parent = 10 * j;
	e.child = 10 * j + 1;
	rj.job_id = j;
	rj.weight = 1 + j % 3;
	rj.name = name;
	rj.n_coflows = 2;
	rj.coflows = csp;
	rj.n_edges = 1;
	rj.edges = &ep;
	env.seq = 1000 + j;
	env.body_case = LOOM__ENVELOPE__BODY_REGISTER_JOB;
	env.register_job = &rj;
	return request(fd, &env);
}

static int simple(int fd, Loom__Envelope__BodyCase kind, uint64_t id)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__CoflowDone cd = LOOM__COFLOW_DONE__INIT;
	Loom__JobDone jd = LOOM__JOB_DONE__INIT;
	Loom__Unregister un = LOOM__UNREGISTER__INIT;

	env.seq = 5000 + id;
	env.body_case = kind;
	if (kind == LOOM__ENVELOPE__BODY_COFLOW_DONE) {
		cd.coflow_id = id;
		env.coflow_done = &cd;
	} else if (kind == LOOM__ENVELOPE__BODY_JOB_DONE) {
		jd.job_id = id;
		env.job_done = &jd;
	} else {
		un.job_id = id;
		env.unregister = &un;
	}
	return request(fd, &env);
}

static int announce(int fd, uint64_t coflow, uint32_t tuple_no)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__AnnounceFlows af = LOOM__ANNOUNCE_FLOWS__INIT;
	Loom__AnnounceFlow a = LOOM__ANNOUNCE_FLOW__INIT, *ap = &a;
	Loom__FlowSpec f = LOOM__FLOW_SPEC__INIT;
	Loom__FiveTuple pt;
	struct wire_tuple t;

	h_tuple(tuple_no, &t);
	wire_tuple_to_pb(&t, &pt);
	f.src_host = 0;
	f.dst_host = 3;
	f.tuple = &pt;
	a.coflow_id = coflow;
	a.flow = &f;
	af.n_flows = 1;
	af.flows = &ap;
	env.seq = 9000 + tuple_no;
	env.body_case = LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS;
	env.announce_flows = &af;
	return request(fd, &env);
}

/* The registry as the admin socket shows it, without ages and byte counters. */
static json_t *snapshot(struct h_loomd *h)
{
	json_t *jobs = h_admin(h, "jobs", 0, NULL), *cfs = h_admin(h, "coflows", 0, NULL), *v;
	size_t i;

	assert_non_null(jobs);
	assert_non_null(cfs);
	json_array_foreach(jobs, i, v)
	{
		json_object_del(v, "age_s");
		json_object_del(v, "bytes_sent");
	}
	json_array_foreach(cfs, i, v)
	{
		json_object_del(v, "bytes_sent");
		json_object_del(v, "rank");
	}
	return json_pack("{s:o, s:o}", "jobs", jobs, "coflows", cfs);
}

static void test_sigkill_restart(void **state)
{
	struct h_loomd h;
	struct h_agent *ag = calloc(1, sizeof(*ag)), *ag2 = calloc(1, sizeof(*ag2));
	json_t *before, *after;
	int fd, status;

	(void)state;
	assert_non_null(ag);
	assert_non_null(ag2);
	assert_int_equal(h_loomd_prepare(&h), 0);
	assert_int_equal(h_loomd_start(&h, (const char *const[]){"hosts=4", "policy=sebf", NULL}),
			 0);
	fd = h_connect(h.sock);
	assert_int_equal(h_hello(fd, LOOM__ROLE__FRAMEWORK, 0, 1, 1), 0);
	assert_int_equal(h_agent_connect(ag, h.sock, 0), 0);
	for (uint32_t j = 0; j < NJOBS; j++)
		assert_int_equal(register_job(fd, j), 0);
	/* some progress: stage 1 of jobs 0-9 done; job 3's open stage gets a flow; job 4 done */
	for (uint32_t j = 0; j < 10; j++)
		assert_int_equal(simple(fd, LOOM__ENVELOPE__BODY_COFLOW_DONE, 10 * j), 0);
	assert_int_equal(announce(fd, 31, 5000), 0);
	assert_int_equal(simple(fd, LOOM__ENVELOPE__BODY_JOB_DONE, 4), 0);
	assert_int_equal(simple(fd, LOOM__ENVELOPE__BODY_UNREGISTER, 7), 0);
	/* the agent's table settles (loomd pushes after each pass) */
	for (int i = 0; i < 50; i++) {
		h_sleep_ms(20);
		assert_int_equal(h_agent_sync(ag), 0);
	}
	before = snapshot(&h);
	assert_int_equal(json_array_size(json_object_get(before, "jobs")), NJOBS - 1);
	assert_true(ag->ncoflows > 0);

	status = h_loomd_stop(&h, SIGKILL);
	assert_true(WIFSIGNALED(status));
	close(fd);
	close(ag->fd);

	assert_int_equal(h_loomd_start(&h, (const char *const[]){"hosts=4", "policy=sebf", NULL}),
			 0);
	after = snapshot(&h);
	if (!json_equal(before, after)) {
		char *a = json_dumps(before, JSON_COMPACT), *b = json_dumps(after, JSON_COMPACT);

		fail_msg("registry differs after restart:\nbefore %s\nafter  %s", a, b);
	}
	/* a reconnecting agent gets a full table equal to what it had */
	assert_int_equal(h_agent_connect(ag2, h.sock, 0), 0);
	for (int i = 0; i < 50 && ag2->tables == 0; i++) {
		h_sleep_ms(20);
		assert_int_equal(h_agent_sync(ag2), 0);
	}
	assert_true(ag2->fulls >= 1);
	assert_int_equal(ag2->ncoflows, ag->ncoflows);
	assert_int_equal(ag2->nflows, ag->nflows);
	for (uint32_t i = 0; i < ag->ncoflows; i++)
		assert_int_equal(h_agent_coflow_class(ag2, ag->coflow_id[i]),
				 (int)ag->coflow_class[i]);
	close(ag2->fd);
	json_decref(before);
	json_decref(after);
	assert_int_equal(h_loomd_stop_clean(&h), 0);
	h_loomd_cleanup(&h);
	free(ag);
	free(ag2);
}

/* Every acknowledged registration is durable, even when loomd dies right after. */
static void test_ack_means_durable(void **state)
{
	struct h_loomd h;
	int fd;

	(void)state;
	assert_int_equal(h_loomd_prepare(&h), 0);
	assert_int_equal(h_loomd_start(&h, (const char *const[]){"hosts=4", NULL}), 0);
	fd = h_connect(h.sock);
	assert_int_equal(h_hello(fd, LOOM__ROLE__FRAMEWORK, 0, 1, 1), 0);
	for (uint32_t j = 0; j < NJOBS; j++)
		assert_int_equal(register_job(fd, 100 + j), 0);
	assert_true(WIFSIGNALED(h_loomd_stop(&h, SIGKILL)));
	close(fd);
	assert_int_equal(h_loomd_start(&h, (const char *const[]){"hosts=4", NULL}), 0);
	assert_int_equal(h_admin_int(&h, "stats", "jobs"), NJOBS);
	assert_int_equal(h_admin_int(&h, "stats", "flows"), 2 * NJOBS);
	assert_int_equal(h_loomd_stop_clean(&h), 0);
	h_loomd_cleanup(&h);
}

/* Hello as host's agent announcing one IPv4 address; returns the fd. */
static int agent_with_addr(struct h_loomd *h, uint32_t host, const uint8_t addr[4])
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT, *rep;
	Loom__Hello hello = LOOM__HELLO__INIT;
	ProtobufCBinaryData a = {4, (uint8_t *)addr};
	int fd = h_connect(h->sock);

	assert_true(fd >= 0);
	hello.version_min = hello.version_max = 1;
	hello.role = LOOM__ROLE__AGENT;
	hello.host_id = host;
	hello.n_addresses = 1;
	hello.addresses = &a;
	env.seq = 1;
	env.body_case = LOOM__ENVELOPE__BODY_HELLO;
	env.hello = &hello;
	rep = h_call(fd, &env);
	assert_non_null(rep);
	assert_int_equal(rep->hello_reply->error ? rep->hello_reply->error->code : 0, 0);
	wire_free(rep);
	return fd;
}

/*
 * A flow placed by address is journaled with the hosts it resolved to: it
 * comes back after a restart although no agent is there to resolve it.
 */
static void test_by_address_survives_restart(void **state)
{
	static const uint8_t a2[4] = {10, 9, 9, 2}, a3[4] = {10, 9, 9, 3};
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__AnnounceFlows af = LOOM__ANNOUNCE_FLOWS__INIT;
	Loom__AnnounceFlow an = LOOM__ANNOUNCE_FLOW__INIT, *ap = &an;
	Loom__FlowSpec f = LOOM__FLOW_SPEC__INIT;
	Loom__FiveTuple pt;
	struct wire_tuple t;
	struct h_loomd h;
	json_t *cfs;
	int fd, g2, g3;

	(void)state;
	assert_int_equal(h_loomd_prepare(&h), 0);
	assert_int_equal(h_loomd_start(&h, (const char *const[]){"hosts=4", NULL}), 0);
	g2 = agent_with_addr(&h, 2, a2);
	g3 = agent_with_addr(&h, 3, a3);
	fd = h_connect(h.sock);
	assert_int_equal(h_hello(fd, LOOM__ROLE__FRAMEWORK, 0, 1, 1), 0);
	assert_int_equal(register_job(fd, 1), 0);
	memset(&t, 0, sizeof(t));
	t.family = 4;
	t.protocol = 6;
	memcpy(t.src, a2, 4);
	memcpy(t.dst, a3, 4);
	t.src_port = 40000;
	t.dst_port = 80;
	wire_tuple_to_pb(&t, &pt);
	f.by_address = true;
	f.tuple = &pt;
	an.coflow_id = 11; /* job 1's open coflow */
	an.flow = &f;
	af.n_flows = 1;
	af.flows = &ap;
	env.seq = 77;
	env.body_case = LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS;
	env.announce_flows = &af;
	assert_int_equal(request(fd, &env), 0);
	assert_true(WIFSIGNALED(h_loomd_stop(&h, SIGKILL)));
	close(fd);
	close(g2);
	close(g3);
	assert_int_equal(h_loomd_start(&h, (const char *const[]){"hosts=4", NULL}), 0);
	cfs = h_admin(&h, "dump", 0, NULL);
	assert_non_null(cfs);
	{
		json_t *job = json_array_get(json_object_get(cfs, "jobs"), 0);
		json_t *cf = json_array_get(json_object_get(job, "coflow_list"), 1);
		json_t *fl = json_array_get(json_object_get(cf, "flow_list"), 0);

		assert_int_equal(json_integer_value(json_object_get(cf, "id")), 11);
		assert_non_null(fl);
		assert_int_equal(json_integer_value(json_object_get(fl, "src")), 2);
		assert_int_equal(json_integer_value(json_object_get(fl, "dst")), 3);
	}
	json_decref(cfs);
	assert_int_equal(h_loomd_stop_clean(&h), 0);
	h_loomd_cleanup(&h);
}

/*
 * A job that grew (libloom's loom_client_job_extend()) comes back whole from
 * the journal: coflows, edges, flows and states; refused extensions left no
 * trace; a finished job cannot grow.
 */
static void test_extend_survives_restart(void **state)
{
	struct loom_client_coflow first[2] = {{.id = 70}, {.id = 71}};
	struct loom_client_flow f = {.src_host = 0, .dst_host = 1, .bytes = 500};
	struct loom_client_coflow more = {.id = 72, .flows = &f, .n_flows = 1};
	struct loom_client_edge e = {.parent = 71, .child = 72}, back = {.parent = 72, .child = 71};
	struct loom_client_job job = {.id = 7, .name = "grows", .coflows = first, .n_coflows = 2};
	struct loom_client_job x = {
		.id = 7, .coflows = &more, .n_coflows = 1, .edges = &e, .n_edges = 1};
	struct loom_client_coflow c73 = {.id = 73};
	struct loom_client *c;
	struct h_loomd h;
	char addr[320];
	json_t *d, *jb, *cfs;

	(void)state;
	f.tuple.family = 4;
	f.tuple.protocol = 6;
	f.tuple.src[0] = f.tuple.dst[0] = 10;
	f.tuple.src[3] = 1;
	f.tuple.dst[3] = 2;
	f.tuple.src_port = 4000;
	f.tuple.dst_port = 80;
	assert_int_equal(h_loomd_prepare(&h), 0);
	assert_int_equal(h_loomd_start(&h, (const char *const[]){"hosts=4", NULL}), 0);
	snprintf(addr, sizeof(addr), "unix:%s", h.sock);
	c = loom_client_connect(addr, NULL);
	assert_non_null(c);
	assert_int_equal(loom_client_job_register(c, &job), 0);
	assert_int_equal(loom_client_job_extend(c, &x), 0);
	/* refused: an edge into a coflow registered before; a job loomd does not know */
	x = (struct loom_client_job){
		.id = 7, .coflows = &c73, .n_coflows = 1, .edges = &back, .n_edges = 1};
	back.parent = 73;
	assert_int_equal(loom_client_job_extend(c, &x), -EINVAL);
	assert_non_null(strstr(loom_client_strerror(), "coflow 71 was registered before"));
	x = (struct loom_client_job){.id = 8, .coflows = &c73, .n_coflows = 1};
	assert_int_equal(loom_client_job_extend(c, &x), -ENOENT);
	assert_int_equal(loom_client_coflow_done(c, 71), 0);
	c = loom_client_free(c);
	assert_true(WIFSIGNALED(h_loomd_stop(&h, SIGKILL)));

	assert_int_equal(h_loomd_start(&h, (const char *const[]){"hosts=4", NULL}), 0);
	d = h_admin(&h, "dump", 0, NULL);
	assert_non_null(d);
	jb = json_array_get(json_object_get(d, "jobs"), 0);
	assert_int_equal(json_array_size(json_object_get(d, "jobs")), 1);
	cfs = json_object_get(jb, "coflow_list");
	assert_int_equal(json_array_size(cfs), 3);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(cfs, 2), "id")), 72);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(cfs, 2), "flows")), 1);
	assert_int_equal(
		json_integer_value(json_object_get(json_array_get(cfs, 2), "bytes_expected")), 500);
	assert_string_equal(json_string_value(json_object_get(json_array_get(cfs, 1), "state")),
			    "done");
	assert_int_equal(json_array_size(json_object_get(jb, "edges")), 1);
	assert_int_equal(json_integer_value(json_object_get(
				 json_array_get(json_object_get(jb, "edges"), 0), "child")),
			 72);
	json_decref(d);
	/* finished: no more coflows */
	c = loom_client_connect(addr, NULL);
	assert_non_null(c);
	assert_int_equal(loom_client_job_done(c, 7), 0);
	x = (struct loom_client_job){.id = 7, .coflows = &c73, .n_coflows = 1};
	assert_int_equal(loom_client_job_extend(c, &x), -EALREADY);
	c = loom_client_free(c);
	assert_int_equal(h_loomd_stop_clean(&h), 0);
	h_loomd_cleanup(&h);
}

/*
 * A table larger than max_frame goes to the agent as several frames (a full
 * table, then deltas on it), and the agent ends up with all of it.
 */
static void test_large_table_in_chunks(void **state)
{
	struct h_loomd h;
	struct h_agent *ag = calloc(1, sizeof(*ag));
	int fd;

	(void)state;
	assert_non_null(ag);
	assert_int_equal(h_loomd_prepare(&h), 0);
	assert_int_equal(
		h_loomd_start(&h, (const char *const[]){"hosts=4", "max_frame=1024", NULL}), 0);
	fd = h_connect(h.sock);
	assert_int_equal(h_hello(fd, LOOM__ROLE__FRAMEWORK, 0, 1, 1), 0);
	assert_int_equal(register_job(fd, 2), 0);
	for (uint32_t i = 0; i < 300; i++)
		assert_int_equal(announce(fd, 21, 100 + i), 0); /* host 0 -> 3, coflow 21 */
	/* coflow 21 runs once its parent 20 is done */
	assert_int_equal(simple(fd, LOOM__ENVELOPE__BODY_COFLOW_DONE, 20), 0);
	assert_int_equal(h_agent_connect(ag, h.sock, 0), 0);
	for (int k = 0; k < 200 && ag->nflows < 300; k++) {
		h_sleep_ms(10);
		assert_int_equal(h_agent_sync(ag), 0);
	}
	assert_int_equal(ag->nflows, 300);
	assert_int_equal(h_agent_coflow_class(ag, 21), 0);
	assert_true(ag->tables > 1);
	assert_int_equal(ag->gaps, 0);
	close(ag->fd);
	close(fd);
	free(ag);
	assert_int_equal(h_loomd_stop_clean(&h), 0);
	h_loomd_cleanup(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sigkill_restart),
		cmocka_unit_test(test_ack_means_durable),
		cmocka_unit_test(test_by_address_survives_restart),
		cmocka_unit_test(test_extend_survives_restart),
		cmocka_unit_test(test_large_table_in_chunks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
