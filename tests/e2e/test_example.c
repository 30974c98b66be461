/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The example framework (examples/shuffle.c) against a running loomd: it
 * registers its two-stage job, runs the shuffle between processes on
 * loopback, announces its sockets, marks everything done and unregisters;
 * loomd saw its flows. And the LD_PRELOAD shim tags an unmodified program's
 * connection with the coflow named in $LOOM_COFLOW.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "controlplane/client/loom.h"
#include "harness.h"
#include "tests/precond.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static struct h_loomd H;

static int setup(void **state)
{
	(void)state;
	if (h_loomd_prepare(&H) < 0)
		return -1;
	return h_loomd_start(&H, (const char *const[]){"hosts=8", NULL});
}

static int teardown(void **state)
{
	(void)state;
	h_loomd_cleanup(&H);
	return 0;
}

static void build_path(char *buf, size_t size, const char *rel)
{
	const char *b = getenv("LOOM_BUILDDIR");

	snprintf(buf, size, "%s/%s", b ? b : ".", rel);
}

static void test_shuffle_example(void **state)
{
	char exe[600], addr[400];
	pid_t pid;
	int status;

	(void)state;
	build_path(exe, sizeof(exe), "examples/loom-example-shuffle");
	if (access(exe, X_OK) != 0)
		fail_msg("%s: %s (the build makes it)", exe, strerror(errno));
	snprintf(addr, sizeof(addr), "unix:%s", H.sock);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl(exe, exe, "--controller", addr, "--mappers", "3", "--reducers", "2",
		      "--bytes", "200000", "--job-id", "42", "--hosts", "4", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* it announced its flows (3 x 2 shuffle + 2 to the collector) and cleaned up */
	assert_true(h_admin_int(&H, "stats", "flows_announced") >= 8);
	assert_int_equal(h_admin_int(&H, "stats", "jobs"), 0);
}

static void test_preload_shim(void **state)
{
	char shim[600], env_ctl[400], cmd[256];
	struct loom_client *c;
	struct loom_client_coflow cf = {.id = 9001};
	struct loom_client_job j = {.id = 900, .coflows = &cf, .n_coflows = 1};
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	json_t *cfs;
	int lfd, afd, status;
	pid_t pid;
	uint8_t a[4] = {127, 0, 0, 1};
	int agent;

	(void)state;
	build_path(shim, sizeof(shim), "controlplane/client/libloom_preload.so");
	if (access(shim, R_OK) != 0)
		fail_msg("%s: %s (the build makes it)", shim, strerror(errno));
	snprintf(env_ctl, sizeof(env_ctl), "unix:%s", H.sock);
	c = loom_client_connect(env_ctl, NULL);
	assert_non_null(c);
	assert_int_equal(loom_client_job_register(c, &j), 0);
	/* an agent owning 127.0.0.1 (so the shim's by-address announcement maps to a host) */
	{
		Loom__Envelope env = LOOM__ENVELOPE__INIT, *rep;
		Loom__Hello hello = LOOM__HELLO__INIT;
		ProtobufCBinaryData addr = {4, a};

		hello.version_min = hello.version_max = 1;
		hello.role = LOOM__ROLE__AGENT;
		hello.host_id = 3;
		hello.n_addresses = 1;
		hello.addresses = &addr;
		env.seq = 1;
		env.body_case = LOOM__ENVELOPE__BODY_HELLO;
		env.hello = &hello;
		agent = h_connect(H.sock);
		rep = h_call(agent, &env);
		assert_non_null(rep);
		wire_free(rep);
	}
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	sa.sin_addr.s_addr = htonl(0x7f000001);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
	/* an unmodified program (bash) connects; the shim announces its socket */
	snprintf(cmd, sizeof(cmd), "exec 3<>/dev/tcp/127.0.0.1/%u && echo hi >&3",
		 ntohs(sa.sin_port));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("LD_PRELOAD", shim, 1);
		setenv("LOOM_COFLOW", "9001", 1);
		setenv("LOOM_CONTROLLER", env_ctl, 1);
		execl("/bin/bash", "bash", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	{
		struct pollfd p = {.fd = lfd, .events = POLLIN};

		/* bounded: a child that failed to start never connects */
		if (poll(&p, 1, 10000) != 1) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fail_msg("the preloaded program did not connect within 10 s");
		}
	}
	afd = accept(lfd, NULL, NULL);
	assert_true(afd >= 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	cfs = h_admin(&H, "coflows", 1, (const char *const[]){"900"});
	assert_non_null(cfs);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(cfs, 0), "flows")), 1);
	json_decref(cfs);
	close(afd);
	close(lfd);
	close(agent);
	loom_client_free(c);
}

static void test_loomd_exits_cleanly(void **state)
{
	(void)state;
	assert_int_equal(h_loomd_stop_clean(&H), 0);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shuffle_example),
		cmocka_unit_test(test_preload_shim),
		cmocka_unit_test(test_loomd_exits_cleanly),
	};
	size_t n = sizeof(tests) / sizeof(tests[0]);
	const char *no_shim = NULL;

#ifdef UNDER_ASAN
	no_shim = "an ASan-built shim cannot be preloaded into a program without ASan (bash)";
#endif
	if (!no_shim && access("/bin/bash", X_OK) != 0)
		no_shim = "no /bin/bash to preload the shim into";
	n = precond_leave_out(tests, n, test_preload_shim, no_shim);
	return precond_run(tests, n, setup, teardown);
}
