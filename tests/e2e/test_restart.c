/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Restart: jobs registered (and acknowledged) survive loomd being killed
 * with SIGKILL; their state (coflows done, jobs done, flows announced) comes
 * back from the journal, unregistered jobs stay gone, and an agent that
 * reconnects gets a full table equal to the one it had.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

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
	status = h_loomd_stop(&h, SIGTERM);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
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
	h_loomd_stop(&h, SIGKILL);
	close(fd);
	assert_int_equal(h_loomd_start(&h, (const char *const[]){"hosts=4", NULL}), 0);
	assert_int_equal(h_admin_int(&h, "stats", "jobs"), NJOBS);
	assert_int_equal(h_admin_int(&h, "stats", "flows"), 2 * NJOBS);
	h_loomd_stop(&h, SIGTERM);
	h_loomd_cleanup(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sigkill_restart),
		cmocka_unit_test(test_ack_means_durable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
