/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loomd end to end, as its users meet it: frameworks through libloom
 * (several threads at once, a real socket announced by address), an agent
 * receiving classes and reporting bytes, an operator with loomctl and
 * /metrics switching the policy live, and finished jobs expiring. First,
 * that an idle loomd maps none of CUDA, also once it runs the gnn policy.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "controlplane/client/loom.h"
#include "harness.h"

static struct h_loomd H;
static char ADDR[320];

static int setup(void **state)
{
	(void)state;
	if (h_loomd_prepare(&H) < 0)
		return -1;
	snprintf(ADDR, sizeof(ADDR), "unix:%s", H.sock);
	return h_loomd_start(&H, (const char *const[]){"hosts=8", "metrics=127.0.0.1:0",
						       "done_retention=1s", "policy=sebf", NULL});
}

static int teardown(void **state)
{
	(void)state;
	h_loomd_cleanup(&H);
	return 0;
}

/* Runs argv, returns its exit status and its stdout in out (NUL-terminated). */
static int run(char *const argv[], char *out, size_t size)
{
	int pfd[2];
	pid_t pid;
	size_t n = 0;
	int status = -1;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		ssize_t r = read(pfd[0], out + n, size - 1 - n);

		if (r <= 0 || n + (size_t)r >= size - 1) {
			if (r > 0)
				n += (size_t)r;
			break;
		}
		n += (size_t)r;
	}
	out[n] = 0;
	close(pfd[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static json_t *loomctl_json(const char *sub, const char *arg)
{
	const char *ctl = getenv("LOOMCTL");
	char out[1 << 16];
	char *argv[] = {(char *)ctl, (char *)"--socket", H.admin, (char *)"--json",
			(char *)sub, (char *)arg,        NULL};
	json_error_t e;
	json_t *j;

	assert_non_null(ctl);
	assert_int_equal(run(argv, out, sizeof(out)), 0);
	j = json_loads(out, 0, &e);
	if (!j)
		fail_msg("loomctl %s: not JSON (%s): %s", sub, e.text, out);
	return j;
}

/* The first CUDA library (gnn's cuda module, cuBLAS, the runtime) in loomd's maps, or NULL. */
static const char *loomd_cuda_mapped(void)
{
	static const char *const libs[] = {"libloom_gnn_cuda", "libcublas", "libcudart"};
	char path[64], line[4096];
	const char *found = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)H.pid);
	f = fopen(path, "r");
	if (!f)
		fail_msg("%s: %s", path, strerror(errno));
	while (!found && fgets(line, sizeof(line), f))
		for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]) && !found; i++)
			if (strstr(line, libs[i]))
				found = libs[i];
	fclose(f);
	return found;
}

/*
 * loomd does not pay for CUDA it does not use: gnn/ loads its
 * cuda module, and with it cuBLAS, only for a "cuda" model, so loomd maps
 * none of it idle, nor with the gnn policy (a cpu model). The policy goes
 * back to sebf for the tests after this one.
 */
static void test_idle_maps_no_cuda(void **state)
{
	const char *ctl = getenv("LOOMCTL"), *lib;
	char out[4096];
	char *set_gnn[] = {(char *)ctl,   (char *)"--socket", H.admin, (char *)"policy",
			   (char *)"set", (char *)"gnn",      NULL};
	char *set_sebf[] = {(char *)ctl,   (char *)"--socket", H.admin, (char *)"policy",
			    (char *)"set", (char *)"sebf",     NULL};

	(void)state;
	assert_non_null(ctl);
	if ((lib = loomd_cuda_mapped()))
		fail_msg("idle loomd (policy sebf) maps %s", lib);
	assert_int_equal(run(set_gnn, out, sizeof(out)), 0);
	if ((lib = loomd_cuda_mapped()))
		fail_msg("loomd with the gnn policy (a cpu model) maps %s", lib);
	assert_int_equal(run(set_sebf, out, sizeof(out)), 0);
}

struct worker {
	pthread_t th;
	uint32_t id;
	int failures;
};

#define NTHREADS 8
#define PER      20

/* Each thread registers PER jobs of two coflows (a -> b) on its own client. */
static void *register_many(void *arg)
{
	struct worker *w = arg;
	struct loom_client *c = loom_client_connect(ADDR, NULL);

	if (!c) {
		w->failures = PER;
		return NULL;
	}
	for (uint32_t k = 0; k < PER; k++) {
		uint64_t job = 1000 + w->id * PER + k;
		struct loom_client_flow f[2] = {
			{.src_host = w->id % 8, .dst_host = (w->id + 1) % 8, .bytes = 1 << 20},
			{.src_host = (w->id + 2) % 8, .dst_host = (w->id + 1) % 8, .bytes = 2 << 20},
		};
		struct loom_client_coflow cf[2] = {
			{.id = job * 10, .flows = f, .n_flows = 2},
			{.id = job * 10 + 1},
		};
		struct loom_client_edge e = {.parent = job * 10, .child = job * 10 + 1};
		struct loom_client_job j = {.id = job,
					    .name = "e2e",
					    .coflows = cf,
					    .n_coflows = 2,
					    .edges = &e,
					    .n_edges = 1};

		if (loom_client_job_register(c, &j) < 0)
			w->failures++;
	}
	loom_client_free(c);
	return NULL;
}

static void test_concurrent_frameworks(void **state)
{
	struct worker w[NTHREADS];
	json_t *jobs;

	(void)state;
	for (uint32_t i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){.id = i};
		assert_int_equal(pthread_create(&w[i].th, NULL, register_many, &w[i]), 0);
	}
	for (uint32_t i = 0; i < NTHREADS; i++) {
		pthread_join(w[i].th, NULL);
		assert_int_equal(w[i].failures, 0);
	}
	jobs = loomctl_json("jobs", NULL);
	assert_int_equal(json_array_size(jobs), NTHREADS * PER);
	json_decref(jobs);
	/* the same ids again are refused, with the message naming the job */
	{
		struct loom_client *c = loom_client_connect(ADDR, NULL);
		struct loom_client_coflow cf = {.id = 1};
		struct loom_client_job j = {.id = 1000, .coflows = &cf, .n_coflows = 1};

		assert_non_null(c);
		assert_int_equal(loom_client_job_register(c, &j), -EEXIST);
		assert_non_null(strstr(loom_client_strerror(), "job 1000"));
		loom_client_free(c);
	}
}

/* A real loopback connection, announced by address; an agent for host 5 owns 127.0.0.5. */
static void test_socket_flow_and_agent(void **state)
{
	struct loom_client *c = loom_client_connect(ADDR, NULL);
	struct h_agent *ag = calloc(1, sizeof(*ag));
	struct loom_client_coflow cf = {.id = 777};
	struct loom_client_job j = {.id = 77, .coflows = &cf, .n_coflows = 1};
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	int lfd, cfd, afd;
	json_t *cfs, *v;
	size_t i;
	bool found = false;

	(void)state;
	assert_non_null(c);
	assert_non_null(ag);
	/* the agent says hello with its address */
	{
		Loom__Envelope env = LOOM__ENVELOPE__INIT, *rep;
		Loom__Hello hello = LOOM__HELLO__INIT;
		ProtobufCBinaryData addr;
		uint8_t a[4] = {127, 0, 0, 5};

		addr.data = a;
		addr.len = 4;
		hello.version_min = hello.version_max = 1;
		hello.role = LOOM__ROLE__AGENT;
		hello.host_id = 5;
		hello.classes = 8;
		hello.n_addresses = 1;
		hello.addresses = &addr;
		env.seq = 1;
		env.body_case = LOOM__ENVELOPE__BODY_HELLO;
		env.hello = &hello;
		ag->fd = h_connect(H.sock);
		ag->host = 5;
		ag->seq = 10;
		rep = h_call(ag->fd, &env);
		assert_non_null(rep);
		assert_int_equal(rep->body_case, LOOM__ENVELOPE__BODY_HELLO_REPLY);
		assert_int_equal(rep->hello_reply->error ? rep->hello_reply->error->code : 0, 0);
		wire_free(rep);
	}
	assert_int_equal(loom_client_job_register(c, &j), 0);
	/* a TCP connection from 127.0.0.5 to a listener on 127.0.0.1 */
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	sa.sin_addr.s_addr = htonl(0x7f000001);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
	cfd = socket(AF_INET, SOCK_STREAM, 0);
	{
		struct sockaddr_in me = {.sin_family = AF_INET};

		me.sin_addr.s_addr = htonl(0x7f000005);
		assert_int_equal(bind(cfd, (struct sockaddr *)&me, sizeof(me)), 0);
	}
	assert_int_equal(connect(cfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	afd = accept(lfd, NULL, NULL);
	assert_true(afd >= 0);
	/* by address: the destination 127.0.0.1 has no agent yet: refused, clearly */
	assert_int_equal(loom_client_socket_announce(c, cfd, 777, NULL, 0), -ENOENT);
	assert_non_null(strstr(loom_client_strerror(), "no host owns"));
	/* with the hosts given it goes in */
	assert_int_equal(loom_client_socket_announce(c, cfd, 777, &(struct loom_client_hosts){5, 2},
						     5000000),
			 0);
	/* the agent of host 5 gets the flow and the coflow's class */
	for (int k = 0; k < 100 && h_agent_coflow_class(ag, 777) < 0; k++) {
		h_sleep_ms(10);
		assert_int_equal(h_agent_sync(ag), 0);
	}
	/* the class is the one loomctl shows for host 5 (its rank among host 5's coflows) */
	{
		json_t *pr = loomctl_json("priorities", "5"), *cl = json_object_get(pr, "classes");
		int want = -1;

		json_array_foreach(cl, i, v)
		{
			if (json_integer_value(json_object_get(v, "coflow")) == 777)
				want = (int)json_integer_value(json_object_get(v, "class"));
		}
		assert_true(want >= 0 && want < 8);
		assert_int_equal(h_agent_coflow_class(ag, 777), want);
		json_decref(pr);
	}
	assert_int_equal(ag->nflows, 1);
	assert_int_equal(ag->flow_coflow[0], 777);
	/* bytes reported by the agent show up in the coflow */
	{
		struct loom_client_tuple t;
		struct wire_tuple wt;

		assert_int_equal(loom_client_socket_tuple(cfd, &t), 0);
		memset(&wt, 0, sizeof(wt));
		wt.family = t.family;
		wt.protocol = t.protocol;
		wt.src_port = t.src_port;
		wt.dst_port = t.dst_port;
		memcpy(wt.src, t.src, 16);
		memcpy(wt.dst, t.dst, 16);
		assert_int_equal(h_agent_stats(ag, &wt, 123456, false), 0);
		assert_int_equal(h_agent_sync(ag), 0);
	}
	cfs = loomctl_json("coflows", "77");
	json_array_foreach(cfs, i, v)
	{
		if (json_integer_value(json_object_get(v, "id")) != 777)
			continue;
		found = true;
		assert_int_equal(json_integer_value(json_object_get(v, "bytes_sent")), 123456);
		assert_string_equal(json_string_value(json_object_get(v, "state")), "active");
		assert_true(json_is_true(json_object_get(v, "open")));
	}
	assert_true(found);
	json_decref(cfs);
	/* a flow no framework announced: loomd lists it under the agent's host, bytes summed */
	{
		struct wire_tuple u;
		json_t *un, *ags;
		int nun = 0;

		h_tuple(4242, &u);
		assert_int_equal(h_agent_stats(ag, &u, 1000, false), 0);
		assert_int_equal(h_agent_stats(ag, &u, 500, false), 0);
		assert_int_equal(h_agent_sync(ag), 0);
		un = loomctl_json("unknown", "5");
		json_array_foreach(un, i, v)
		{
			nun++;
			assert_int_equal(json_integer_value(json_object_get(v, "host")), 5);
			assert_int_equal(json_integer_value(json_object_get(v, "bytes")), 1500);
			assert_non_null(
				strstr(json_string_value(json_object_get(v, "tuple")), "14242"));
		}
		assert_int_equal(nun, 1);
		json_decref(un);
		ags = loomctl_json("agents", NULL);
		json_array_foreach(ags, i, v)
		{
			if (json_integer_value(json_object_get(v, "host")) != 5)
				continue;
			assert_int_equal(json_integer_value(json_object_get(v, "unknown_flows")),
					 1);
			/* the harness's Hello names no enforcer */
			assert_string_equal(json_string_value(json_object_get(v, "enforcer")),
					    "unspecified");
		}
		json_decref(ags);
	}
	/* done: the coflow and its table entries go */
	assert_int_equal(loom_client_coflow_done(c, 777), 0);
	for (int k = 0; k < 100 && h_agent_coflow_class(ag, 777) >= 0; k++) {
		h_sleep_ms(10);
		assert_int_equal(h_agent_sync(ag), 0);
	}
	assert_int_equal(h_agent_coflow_class(ag, 777), -1);
	assert_int_equal(ag->nflows, 0);
	assert_int_equal(ag->gaps, 0);
	close(afd);
	close(cfd);
	close(lfd);
	close(ag->fd);
	free(ag);
	loom_client_free(c);
}

/* The first line of /metrics text naming metric (its value), or -1. */
static double metric(const char *text, const char *name)
{
	const char *p = text;
	size_t n = strlen(name);

	while ((p = strstr(p, name))) {
		if ((p == text || p[-1] == '\n') && (p[n] == ' ' || p[n] == '{'))
			return strtod(strchr(p, ' ') + 1, NULL);
		p += n;
	}
	return -1;
}

static void test_metrics_and_policy_switch(void **state)
{
	static char body[1 << 16];
	int port = h_loomd_metrics_port(&H);
	json_t *r;

	(void)state;
	assert_true(port > 0);
	/* switch the policy through loomctl; /metrics shows the new one */
	{
		const char *ctl = getenv("LOOMCTL");
		char out[4096];
		char *argv[] = {(char *)ctl,   (char *)"--socket",  H.admin, (char *)"policy",
				(char *)"set", (char *)"sincronia", NULL};

		assert_int_equal(run(argv, out, sizeof(out)), 0);
	}
	r = loomctl_json("policy", "get");
	assert_string_equal(json_string_value(json_object_get(r, "policy")), "sincronia");
	json_decref(r);
	h_sleep_ms(600); /* the loop republishes about every 250 ms */
	assert_int_equal(h_http_get((uint16_t)port, "/metrics", body, sizeof(body)), 200);
	assert_non_null(strstr(body, "loom_policy_info{policy=\"sincronia\"} 1"));
	assert_true(metric(body, "loom_jobs") >= NTHREADS * PER);
	assert_true(metric(body, "loom_decisions_total") > 0);
	assert_true(metric(body, "loom_agents_connected") >= 0);
	assert_non_null(strstr(body, "loom_decision_seconds_bucket{le=\"+Inf\"}"));
	/* a bad spec is refused and the policy stays */
	{
		const char *ctl = getenv("LOOMCTL");
		char out[4096];
		char *argv[] = {(char *)ctl,   (char *)"--socket", H.admin, (char *)"policy",
				(char *)"set", (char *)"nosuch",   NULL};

		assert_int_equal(run(argv, out, sizeof(out)), 1);
	}
	r = loomctl_json("policy", "get");
	assert_string_equal(json_string_value(json_object_get(r, "policy")), "sincronia");
	json_decref(r);
}

static void test_done_jobs_expire(void **state)
{
	struct loom_client *c = loom_client_connect(ADDR, NULL);
	json_t *jobs;

	(void)state;
	assert_non_null(c);
	for (uint64_t job = 1000; job < 1000 + NTHREADS * PER; job++)
		assert_int_equal(loom_client_job_done(c, job), 0);
	assert_int_equal(loom_client_job_done(c, 1000), -EALREADY);
	assert_int_equal(loom_client_job_unregister(c, 77), 0);
	assert_int_equal(loom_client_job_unregister(c, 77), -ENOENT);
	/* done_retention = 1s: the tick forgets them */
	for (int k = 0; k < 100; k++) {
		size_t n;

		jobs = loomctl_json("jobs", NULL);
		n = json_array_size(jobs);

		json_decref(jobs);
		if (n == 0)
			break;
		h_sleep_ms(50);
	}
	jobs = loomctl_json("jobs", NULL);
	assert_int_equal(json_array_size(jobs), 0);
	json_decref(jobs);
	loom_client_free(c);
	assert_int_equal(h_loomd_stop_clean(&H), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_maps_no_cuda),
		cmocka_unit_test(test_concurrent_frameworks),
		cmocka_unit_test(test_socket_flow_and_agent),
		cmocka_unit_test(test_metrics_and_policy_switch),
		cmocka_unit_test(test_done_jobs_expire),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
