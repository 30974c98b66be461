/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom-agent (null enforcer) against loomd: it connects, receives the table
 * of its host, keeps it when loomd dies (fail-static), reconnects with
 * backoff when loomd is back and resynchronises from a full table; bad flags
 * are refused with a message. Config files on disk (-c): a bad line (no
 * '=', unknown key, bad value, bad address, unknown enforcer, a line too
 * long) exits 2 with "path:line: reason", in every spelling of -c; a file
 * with CRLF line endings is read as with LF.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/admin.h"
#include "harness.h"
#include "tests/precond.h"

static struct h_loomd H;
static char AGENT_ADMIN[320], AGENT_LOG[320];
static pid_t AGENT;

static const char *agent_path(void)
{
	const char *p = getenv("LOOM_AGENT");

	return p ? p : "dataplane/loom-agent";
}

static pid_t start_agent(const char *const *extra)
{
	char ctl[400], adm[400];
	char *argv[32];
	int n = 0;
	pid_t pid;

	snprintf(ctl, sizeof(ctl), "unix:%s", H.sock);
	snprintf(adm, sizeof(adm), "%s", AGENT_ADMIN);
	argv[n++] = (char *)agent_path();
	argv[n++] = (char *)"--controller";
	argv[n++] = ctl;
	argv[n++] = (char *)"--admin-socket";
	argv[n++] = adm;
	argv[n++] = (char *)"--enforcer";
	argv[n++] = (char *)"null";
	for (int i = 0; extra && extra[i] && n < 30; i++)
		argv[n++] = (char *)extra[i];
	argv[n] = NULL;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(AGENT_LOG, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static json_t *agent_admin(const char *cmd)
{
	json_t *res = NULL;
	struct loom_err err;

	for (int i = 0; i < 200; i++) {
		if (loom_admin_call(AGENT_ADMIN, cmd, 0, NULL, 2000, &res, &err) == 0)
			return res;
		h_sleep_ms(20);
	}
	fail_msg("agent admin %s: %s", cmd, loom_err_str(&err));
	return NULL;
}

/* Waits (bounded) until the agent's stats key equals want. */
static void wait_stat(const char *key, long long want)
{
	long long v = -1;

	for (int i = 0; i < 300; i++) {
		json_t *s = agent_admin("stats");
		json_t *x = json_object_get(s, key);

		v = json_is_boolean(x) ? json_is_true(x) : json_integer_value(x);
		json_decref(s);
		if (v == want)
			return;
		h_sleep_ms(20);
	}
	fail_msg("agent stat %s is %lld, expected %lld", key, v, want);
}

static int register_job_on(uint64_t job, uint32_t src_host)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT, *rep;
	Loom__RegisterJob rj = LOOM__REGISTER_JOB__INIT;
	Loom__CoflowSpec cs[2], *csp[2] = {&cs[0], &cs[1]};
	Loom__FlowSpec fs[2], *fsp0 = &fs[0], *fsp1 = &fs[1];
	Loom__FiveTuple pt[2];
	struct wire_tuple t[2];
	int fd = h_connect(H.sock), code;

	assert_true(fd >= 0);
	assert_int_equal(h_hello(fd, LOOM__ROLE__FRAMEWORK, 0, 1, 1), 0);
	/* two independent coflows, one flow each, both from host 1 */
	for (int i = 0; i < 2; i++) {
		loom__coflow_spec__init(&cs[i]);
		loom__flow_spec__init(&fs[i]);
		h_tuple((uint32_t)(job * 10 + (uint64_t)i), &t[i]);
		wire_tuple_to_pb(&t[i], &pt[i]);
		fs[i].src_host = src_host;
		fs[i].dst_host = 2;
		fs[i].bytes = (uint64_t)(i + 1) * 1000000;
		fs[i].tuple = &pt[i];
		cs[i].id = job * 10 + (uint64_t)i;
		cs[i].n_flows = 1;
	}
	cs[0].flows = &fsp0;
	cs[1].flows = &fsp1;
	rj.job_id = job;
	rj.n_coflows = 2;
	rj.coflows = csp;
	env.seq = 5;
	env.body_case = LOOM__ENVELOPE__BODY_REGISTER_JOB;
	env.register_job = &rj;
	rep = h_call(fd, &env);
	assert_non_null(rep);
	code = rep->reply->error ? (int)rep->reply->error->code : 0;
	wire_free(rep);
	close(fd);
	return code;
}

static int register_job(uint64_t job)
{
	return register_job_on(job, 1);
}

static int setup(void **state)
{
	(void)state;
	if (h_loomd_prepare(&H) < 0)
		return -1;
	snprintf(AGENT_ADMIN, sizeof(AGENT_ADMIN), "%s/agent.sock", H.dir);
	snprintf(AGENT_LOG, sizeof(AGENT_LOG), "%s/agent.log", H.dir);
	return h_loomd_start(&H, (const char *const[]){"hosts=4", "policy=sebf", NULL});
}

static int teardown(void **state)
{
	(void)state;
	if (AGENT > 0) {
		kill(AGENT, SIGKILL);
		waitpid(AGENT, NULL, 0);
	}
	h_loomd_cleanup(&H);
	return 0;
}

static void test_table_fail_static_resync(void **state)
{
	json_t *t;
	int status;

	(void)state;
	AGENT = start_agent((const char *const[]){"--host-id", "1", "--address", "10.0.0.1",
						  "--stats-interval", "50", NULL});
	wait_stat("connected", 1);
	{
		/* loomd took the agent's Hello as sent: its name, enforcer and classes */
		json_t *ags = h_admin(&H, "agents", 0, NULL), *v;
		size_t i;
		int found = 0;

		assert_non_null(ags);
		json_array_foreach(ags, i, v)
		{
			if (json_integer_value(json_object_get(v, "host")) != 1)
				continue;
			found++;
			assert_string_equal(json_string_value(json_object_get(v, "enforcer")),
					    "null");
			assert_int_equal(json_integer_value(json_object_get(v, "classes")), 8);
			assert_int_equal(strncmp(json_string_value(json_object_get(v, "name")),
						 "loom-agent[", 11),
					 0);
		}
		assert_int_equal(found, 1);
		json_decref(ags);
	}
	assert_int_equal(register_job(7), 0);
	wait_stat("flows", 2);
	t = agent_admin("table");
	{
		/* sebf: the smaller coflow (70) first */
		json_t *f0 = json_array_get(json_object_get(t, "flows"), 0);
		json_t *f1 = json_array_get(json_object_get(t, "flows"), 1);
		int c70 = -1, c71 = -1;

		for (json_t *f = f0; f; f = f == f0 ? f1 : NULL) {
			if (json_integer_value(json_object_get(f, "coflow")) == 70)
				c70 = (int)json_integer_value(json_object_get(f, "class"));
			if (json_integer_value(json_object_get(f, "coflow")) == 71)
				c71 = (int)json_integer_value(json_object_get(f, "class"));
		}
		assert_int_equal(c70, 0);
		assert_int_equal(c71, 1);
	}
	json_decref(t);

	/* loomd dies: the agent keeps its table */
	assert_true(WIFSIGNALED(h_loomd_stop(&H, SIGKILL)));
	wait_stat("connected", 0);
	wait_stat("flows", 2);
	wait_stat("disconnects", 1);

	/* loomd is back (same journal): the agent reconnects and gets a full table */
	assert_int_equal(h_loomd_start(&H, (const char *const[]){"hosts=4", "policy=sebf", NULL}),
			 0);
	wait_stat("connected", 1);
	wait_stat("connects", 2);
	wait_stat("flows", 2);
	wait_stat("bad_tables", 0);

	/* SIGTERM: a clean stop */
	kill(AGENT, SIGTERM);
	assert_int_equal(waitpid(AGENT, &status, 0), AGENT);
	AGENT = 0;
	assert_int_equal(h_check_exit("loom-agent", status, 0, AGENT_LOG), 0);
}

/* Whether loom-agent --help lists enforcer name (the build has it). */
static bool agent_has_enforcer(const char *name)
{
	char cmd[512], help[4096], needle[64];
	size_t n;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s --help 2>&1", agent_path());
	p = popen(cmd, "r");
	if (!p)
		return false;
	n = fread(help, 1, sizeof(help) - 1, p);
	pclose(p);
	help[n] = 0;
	snprintf(needle, sizeof(needle), "  %s ", name);
	return strstr(help, needle) != NULL;
}

/*
 * The dpdk enforcer inside loom-agent, starting the EAL itself (net_null
 * ports, no hugepages, lcores 0-1): the agent connects, the enforcer takes
 * the host's table, and SIGTERM stops the worker and the ports cleanly.
 * main() leaves it out when the build has no dpdk enforcer or this process
 * may not run on CPUs 0 and 1; an agent that exits here fails the test.
 */
static void test_dpdk_enforcer_in_agent(void **state)
{
	json_t *st;
	pid_t pid;
	int status;

	(void)state;
	pid = start_agent((const char *const[]){
		"--host-id", "2", "--enforcer", "dpdk", "--enforcer-args",
		"--no-huge --no-pci --no-shconf -m 512 -l 0-1 --log-level error --vdev net_null0 "
		"--vdev net_null1 -- rx=0 tx=1 rate=0",
		NULL});
	AGENT = pid;
	for (int i = 0; access(AGENT_ADMIN, F_OK) != 0; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			AGENT = 0;
			h_check_exit("loom-agent --enforcer dpdk", status, 0, AGENT_LOG);
			fail_msg(
				"loom-agent --enforcer dpdk exited before its admin socket appeared");
		}
		if (i == 200)
			fail_msg("loom-agent --enforcer dpdk made no admin socket in 10 s");
		h_sleep_ms(50);
	}
	wait_stat("connected", 1);
	assert_int_equal(register_job_on(8, 2), 0);
	wait_stat("flows", 2);
	st = agent_admin("stats");
	assert_string_equal(json_string_value(json_object_get(st, "enforcer")), "dpdk");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "enforcer_stats"),
							    "flows_enforced")),
			 2);
	json_decref(st);
	kill(AGENT, SIGTERM);
	assert_int_equal(waitpid(AGENT, &status, 0), AGENT);
	AGENT = 0;
	assert_int_equal(h_check_exit("loom-agent", status, 0, AGENT_LOG), 0);
}

/*
 * Runs the agent with args; its exit status (-1: it did not exit, or was
 * killed after 5 s). A sanitizer report in its stderr fails the test.
 */
static int run_agent_err(const char *const *args, char *out, size_t size)
{
	char *argv[16], err[400];
	int n = 0, status = -1;
	pid_t pid;

	argv[n++] = (char *)agent_path();
	for (int i = 0; args[i] && n < 15; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	snprintf(err, sizeof(err), "%s/run.err", H.dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0)
			_exit(126);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	for (int i = 0; i < 500 && waitpid(pid, &status, WNOHANG) != pid; i++) {
		status = -1;
		h_sleep_ms(10);
	}
	if (status == -1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	if (h_log_has_sanitizer_report(err))
		fail_msg("loom-agent %s: sanitizer report in its stderr", args[0]);
	if (out) {
		FILE *f = fopen(err, "r");
		size_t got;

		assert_non_null(f);
		got = fread(out, 1, size - 1, f);
		out[got] = '\0';
		fclose(f);
	}
	return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int run_agent(const char *const *args)
{
	return run_agent_err(args, NULL, 0);
}

static void test_bad_flags(void **state)
{
	(void)state;
	assert_int_equal(run_agent((const char *const[]){"--host-id", "x", NULL}), 2);
	assert_int_equal(run_agent((const char *const[]){"--enforcer", "nosuch", NULL}), 2);
	assert_int_equal(run_agent((const char *const[]){"--address", "300.1.1.1", NULL}), 2);
	assert_int_equal(run_agent((const char *const[]){"--classes", "0", NULL}), 2);
	assert_int_equal(run_agent((const char *const[]){"--bogus", NULL}), 2);
	assert_int_equal(run_agent((const char *const[]){"-c", "/nonexistent.conf", NULL}), 2);
	assert_int_equal(run_agent((const char *const[]){"--help", NULL}), 0);
}

/* path under the test's folder, written with text. */
static const char *conf_file(char *path, size_t size, const char *name, const char *text)
{
	FILE *f;

	snprintf(path, size, "%s/%s", H.dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
	return path;
}

/* loom-agent -c FILE exits 2 and says "FILE:line: reason" on stderr. */
static void expect_conf_error(const char *name, const char *text, unsigned line, const char *why)
{
	char path[400], err[4096], want[480];

	conf_file(path, sizeof(path), name, text);
	if (run_agent_err((const char *const[]){"-c", path, NULL}, err, sizeof(err)) != 2)
		fail_msg("-c %s (%s): expected exit 2; stderr:\n%s", name, why, err);
	snprintf(want, sizeof(want), "loom-agent: %s:%u: ", path, line);
	if (!strstr(err, want) || !strstr(err, why))
		fail_msg("-c %s: stderr lacks '%s' ... '%s':\n%s", name, want, why, err);
}

static void test_config_file_errors(void **state)
{
	char path[400], err[4096], arg[420], *big;

	(void)state;
	expect_conf_error("noeq.conf", "# agent\nhost_id 3\n", 2, "expected 'key = value'");
	expect_conf_error("unknown.conf", "hostid = 3\n", 1, "unknown option 'hostid'");
	expect_conf_error("value.conf", "host_id = 1\n\nclasses = 0\n", 3,
			  "classes: '0' is not a whole number in [1, 64]");
	expect_conf_error("number.conf", "heartbeat = 5x\n", 1,
			  "heartbeat: '5x' is not a duration");
	expect_conf_error("range.conf", "heartbeat = 5ms\n", 1,
			  "heartbeat: '5ms' is outside [10ms, 600000ms]");
	expect_conf_error("rate.conf", "link_bps = 10GB\n", 1,
			  "link_bps: '10GB' is not a rate in bit/s");
	expect_conf_error("addr.conf", "address = 10.0.0.1\naddress = 300.1.1.1\n", 2,
			  "address: '300.1.1.1' is not an IPv4 or IPv6 address");
	expect_conf_error("enf.conf", "enforcer = nosuch\n", 1,
			  "enforcer: 'nosuch' is not in this build");
	expect_conf_error("empty-key.conf", " = 3\n", 1, "no key before '='");
	big = malloc(5200);
	assert_non_null(big);
	memcpy(big, "host_id = 1\ncontroller = ", 25);
	memset(big + 25, 'x', 5100);
	strcpy(big + 5125, "\n");
	expect_conf_error("long.conf", big, 2, "line longer than");
	free(big);
	/* every spelling of -c reads the file (a bad one shows it was read) */
	conf_file(path, sizeof(path), "spell.conf", "classes = 99\n");
	snprintf(arg, sizeof(arg), "--config=%s", path);
	assert_int_equal(run_agent_err((const char *const[]){arg, NULL}, err, sizeof(err)), 2);
	assert_non_null(strstr(err, "spell.conf:1: classes"));
	snprintf(arg, sizeof(arg), "-c%s", path);
	assert_int_equal(run_agent_err((const char *const[]){arg, NULL}, err, sizeof(err)), 2);
	assert_non_null(strstr(err, "spell.conf:1: classes"));
	assert_int_equal(
		run_agent_err((const char *const[]){"--config", path, NULL}, err, sizeof(err)), 2);
	assert_non_null(strstr(err, "spell.conf:1: classes"));
	assert_int_equal(run_agent_err((const char *const[]){"-v", "--conf", path, NULL}, err,
				       sizeof(err)),
			 2);
	assert_non_null(strstr(err, "spell.conf:1: classes"));
	/* a directory, not a file */
	assert_int_equal(run_agent_err((const char *const[]){"-c", H.dir, NULL}, err, sizeof(err)),
			 2);
	assert_non_null(strstr(err, H.dir));
}

/* A config file saved with CRLF line endings: the agent reads it as with LF. */
static void test_config_file_crlf(void **state)
{
	char path[400], log[8192];
	int status;
	FILE *f;
	size_t n;

	(void)state;
	conf_file(path, sizeof(path), "crlf.conf",
		  "# written on Windows\r\n"
		  "\r\n"
		  "host-id = 3\r\n"
		  "classes=\"4\"\r\n"
		  "address = 10.0.0.3   \r\n"
		  "stats-interval = 50 # ms\r\n");
	unlink(AGENT_LOG);
	AGENT = start_agent((const char *const[]){"-c", path, NULL});
	wait_stat("connected", 1);
	assert_int_equal(register_job_on(9, 3), 0);
	wait_stat("flows", 2);
	kill(AGENT, SIGTERM);
	assert_int_equal(waitpid(AGENT, &status, 0), AGENT);
	AGENT = 0;
	assert_int_equal(h_check_exit("loom-agent", status, 0, AGENT_LOG), 0);
	f = fopen(AGENT_LOG, "r");
	assert_non_null(f);
	n = fread(log, 1, sizeof(log) - 1, f);
	log[n] = '\0';
	fclose(f);
	if (!strstr(log, "host 3, enforcer null, 4 classes"))
		fail_msg("the CRLF config was not applied:\n%s", log);
	/* kebab-case keys are taken, each with one warning naming its new spelling */
	if (!strstr(log, "crlf.conf:3: 'host-id' is deprecated, write 'host_id'") ||
	    !strstr(log, "crlf.conf:6: 'stats-interval' is deprecated, write 'stats_interval'"))
		fail_msg("no deprecation warnings for kebab-case keys:\n%s", log);
}

/*
 * A malformed controller address, as a flag or in a config file: the agent
 * exits 2 at start and says why in common/addr's words.
 */
static void test_bad_controller(void **state)
{
	static const struct {
		const char *addr, *why;
	} bad[] = {
		{"::1:7420", "controller \"::1:7420\": an IPv6 host goes in brackets: [::1]:7420"},
		{"tcp:127.0.0.1", "controller \"tcp:127.0.0.1\": missing ':' and port"},
		{"unix:", "controller \"unix:\": empty socket path"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[1024], text[128];
		int code;

		code = run_agent_err((const char *const[]){"--controller", bad[i].addr, NULL}, err,
				     sizeof(err));
		if (code != 2 || !strstr(err, bad[i].why))
			fail_msg("--controller %s: exit %d, stderr \"%s\"; expected 2 and \"%s\"",
				 bad[i].addr, code, err, bad[i].why);
		snprintf(text, sizeof(text), "host_id = 1\ncontroller = %s\n", bad[i].addr);
		expect_conf_error("badctl.conf", text, 2, bad[i].why);
	}
	/* a socket path longer than sun_path holds (fits the 160-byte setting) */
	{
		char addr[150], err[1024];

		memcpy(addr, "unix:/", 6);
		memset(addr + 6, 'x', sizeof(addr) - 7);
		addr[sizeof(addr) - 1] = '\0';
		if (run_agent_err((const char *const[]){"--controller", addr, NULL}, err,
				  sizeof(err)) != 2 ||
		    !strstr(err, "socket path longer than 107 bytes"))
			fail_msg("--controller (143-byte path): stderr \"%s\"", err);
	}
}

static void test_loomd_exits_cleanly(void **state)
{
	(void)state;
	assert_int_equal(h_loomd_stop_clean(&H), 0);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_fail_static_resync),
		cmocka_unit_test(test_bad_flags),
		cmocka_unit_test(test_config_file_errors),
		cmocka_unit_test(test_config_file_crlf),
		cmocka_unit_test(test_bad_controller),
		cmocka_unit_test(test_dpdk_enforcer_in_agent),
		cmocka_unit_test(test_loomd_exits_cleanly),
	};
	size_t n = sizeof(tests) / sizeof(tests[0]);
	const char *no_dpdk = NULL;

	if (access(agent_path(), X_OK) != 0) {
		fprintf(stderr, "%s: %s (is it built?)\n", agent_path(), strerror(errno));
		return 1;
	}
	/* the machine decides whether the dpdk case can run, before any test does */
	if (!agent_has_enforcer("dpdk"))
		no_dpdk = "loom-agent has no dpdk enforcer in this build";
	else if (!h_cpus_usable(2))
		no_dpdk = "the EAL's lcores 0-1 are not both usable by this process";
	n = precond_leave_out(tests, n, test_dpdk_enforcer_in_agent, no_dpdk);
	return precond_run(tests, n, setup, teardown);
}
