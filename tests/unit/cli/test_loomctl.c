/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for loomctl ($LOOMCTL): a fake loomd admin server (common/admin)
 * on a loop thread answers with canned results in the shapes loomd promises;
 * loomctl runs as a child process and its stdout, stderr and exit status are
 * checked: tables, key/value output, --json, argument passing, and the exit
 * codes 0 (ok), 1 (daemon error), 2 (usage), 3 (unreachable).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>
#include <jansson.h>

#include "common/admin.h"
#include "common/cleanup.h"
#include "common/errors.h"

static const char *loomctl_path;

/* ---- canned results ------------------------------------------------------------------- */

static const char canned_stats[] =
	"{\"version\": \"0.1.0\", \"uptime_s\": 3725.5, \"policy\": \"sincronia\","
	" \"classes\": 8, \"tick_ms\": 10, \"jobs\": 3, \"jobs_done\": 12, \"coflows\": 10,"
	" \"coflows_active\": 4, \"flows\": 200, \"agents\": 4, \"frameworks\": 2,"
	" \"decisions\": 1234, \"decision_p50_us\": 12.5, \"decision_p99_us\": 1500,"
	" \"push_p50_us\": 40, \"push_p99_us\": 90.25, \"journal\": \"/var/lib/loom/j.db\","
	" \"rss_bytes\": 12582912}";

static const char canned_jobs[] =
	"[{\"id\": 1, \"name\": \"shuffle-a\", \"weight\": 1.5, \"state\": \"running\","
	" \"coflows\": 5, \"coflows_done\": 2, \"flows\": 40, \"bytes_sent\": 1073741824,"
	" \"age_s\": 75},"
	" {\"id\": 22, \"name\": \"evil\\u001b[31mname\", \"state\": \"done\"}]";

static const char canned_coflows[] =
	"[{\"id\": 7, \"job\": 1, \"state\": \"active\", \"flows\": 8, \"flows_done\": 3,"
	" \"bytes_sent\": 2048, \"bytes_expected\": 0, \"rank\": 0, \"open\": true},"
	" {\"id\": 8, \"job\": 1, \"state\": \"waiting\", \"flows\": 2, \"flows_done\": 0,"
	" \"bytes_sent\": 0, \"bytes_expected\": 4096, \"rank\": -1, \"open\": false}]";

static const char canned_agents[] =
	"[{\"host\": 3, \"name\": \"rack1-h3\", \"peer\": \"10.0.0.3:41000\", \"enforcer\": "
	"\"ebpf\", \"classes\": 8, \"table_version\": 12, \"acked_version\": 11, \"flows\": 17,"
	" \"connected_s\": 4000, \"unknown_flows\": 2}]";

static const char canned_unknown[] =
	"[{\"host\": 3, \"tuple\": \"tcp 10.0.0.3:41000 -> 10.0.0.9:80\", \"bytes\": 3000000,"
	" \"first_seen_s\": 75, \"last_seen_s\": 2}]";

static const char canned_priorities[] =
	"[{\"rank\": 0, \"coflow\": 7, \"job\": 1, \"class\": 0, \"hosts\": 4},"
	" {\"rank\": 1, \"coflow\": 9, \"job\": 2, \"class\": 1, \"hosts\": 2}]";

static const char canned_priorities_host[] =
	"{\"host\": 3, \"classes\": [{\"coflow\": 7, \"class\": 0}, {\"coflow\": 9, \"class\": 5}]}";

static const char canned_policies[] =
	"[{\"name\": \"fifo\", \"summary\": \"first come first served\"},"
	" {\"name\": \"sincronia\", \"summary\": \"bottleneck-first ordering\"}]";

static const char canned_dump[] = "{\"jobs\": [], \"agents\": [], \"policy\": \"fifo\", "
				  "\"nested\": {\"a\": [1, 2.5, null, true]}}";

/* ---- the fake daemon ------------------------------------------------------------------ */

struct fake {
	struct event_base *base;
	struct loom_admin *admin;
	struct event *stop_ev;
	int stop_pipe[2];
	pthread_t thread;
	char path[108];
	pthread_mutex_t lock; /* guards the fields below */
	char last_cmd[64];
	json_t *last_args;
	bool jobs_empty;
	bool hang; /* "stats" never replies in time */
};

static struct fake fake;

static json_t *load(const char *text)
{
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);

	if (!j)
		fail_msg("bad canned JSON: %s", jerr.text);
	return j;
}

static void record(const char *cmd, int argc, const char *const *argv)
{
	pthread_mutex_lock(&fake.lock);
	snprintf(fake.last_cmd, sizeof(fake.last_cmd), "%s", cmd);
	json_decref(fake.last_args);
	fake.last_args = json_array();
	for (int i = 0; i < argc; i++)
		json_array_append_new(fake.last_args, json_string(argv[i]));
	pthread_mutex_unlock(&fake.lock);
}

/* ctx is the canned JSON text; the command name is recorded with its args. */
#define CANNED(fn, name, text)                                                                     \
	static int fn(void *ctx, int argc, const char *const *argv, json_t **ret_result,           \
		      struct loom_err *err)                                                        \
	{                                                                                          \
		record(name, argc, argv);                                                          \
		*ret_result = load(text);                                                          \
		return 0;                                                                          \
	}

CANNED(h_agents, "agents", canned_agents)
CANNED(h_unknown, "unknown", canned_unknown)
CANNED(h_policies, "policies", canned_policies)
CANNED(h_dump, "dump", canned_dump)

static int h_stats(void *ctx, int argc, const char *const *argv, json_t **ret_result,
		   struct loom_err *err)
{
	bool hang;

	record("stats", argc, argv);
	pthread_mutex_lock(&fake.lock);
	hang = fake.hang;
	pthread_mutex_unlock(&fake.lock);
	if (hang)
		usleep(700 * 1000);
	*ret_result = load(canned_stats);
	return 0;
}

static int h_jobs(void *ctx, int argc, const char *const *argv, json_t **ret_result,
		  struct loom_err *err)
{
	bool empty;

	record("jobs", argc, argv);
	pthread_mutex_lock(&fake.lock);
	empty = fake.jobs_empty;
	pthread_mutex_unlock(&fake.lock);
	*ret_result = load(empty ? "[]" : canned_jobs);
	return 0;
}

static int h_coflows(void *ctx, int argc, const char *const *argv, json_t **ret_result,
		     struct loom_err *err)
{
	record("coflows", argc, argv);
	if (argc == 1 && strcmp(argv[0], "1") != 0)
		return loom_err_set(err, ENOENT, "no job %s", argv[0]);
	*ret_result = load(canned_coflows);
	return 0;
}

static int h_priorities(void *ctx, int argc, const char *const *argv, json_t **ret_result,
			struct loom_err *err)
{
	record("priorities", argc, argv);
	*ret_result = load(argc ? canned_priorities_host : canned_priorities);
	return 0;
}

static int h_policy(void *ctx, int argc, const char *const *argv, json_t **ret_result,
		    struct loom_err *err)
{
	record("policy", argc, argv);
	*ret_result = json_pack("{s:s}", "policy", "sincronia");
	return 0;
}

static int h_set_policy(void *ctx, int argc, const char *const *argv, json_t **ret_result,
			struct loom_err *err)
{
	record("set-policy", argc, argv);
	if (argc != 1 || !strcmp(argv[0], "bogus"))
		return loom_err_set(err, EINVAL, "unknown policy '%s'", argc ? argv[0] : "");
	*ret_result = json_pack("{s:s, s:s}", "policy", argv[0], "previous", "sincronia");
	return 0;
}

static int h_set_log_level(void *ctx, int argc, const char *const *argv, json_t **ret_result,
			   struct loom_err *err)
{
	record("set-log-level", argc, argv);
	*ret_result = json_pack("{s:s}", "level", argc ? argv[0] : "?");
	return 0;
}

static void stop_cb(evutil_socket_t fd, short what, void *arg)
{
	char b;

	(void)!read(fd, &b, 1);
	event_base_loopbreak(fake.base);
}

static void *fake_main(void *arg)
{
	event_base_dispatch(fake.base);
	return NULL;
}

static int fake_start(void **state)
{
	static const struct {
		const char *name;
		loom_admin_fn fn;
	} cmds[] = {
		{"stats", h_stats},       {"jobs", h_jobs},
		{"coflows", h_coflows},   {"agents", h_agents},
		{"unknown", h_unknown},   {"priorities", h_priorities},
		{"policy", h_policy},     {"set-policy", h_set_policy},
		{"policies", h_policies}, {"set-log-level", h_set_log_level},
		{"dump", h_dump},
	};
	struct loom_err err = {{0}};

	pthread_mutex_init(&fake.lock, NULL);
	snprintf(fake.path, sizeof(fake.path), "/tmp/loom-loomctl-test-%d.sock", (int)getpid());
	unlink(fake.path);
	fake.base = event_base_new();
	if (!fake.base)
		return -1;
	fake.admin = loom_admin_new(fake.base, fake.path, &err);
	if (!fake.admin) {
		fprintf(stderr, "loom_admin_new: %s\n", err.msg);
		return -1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		if (loom_admin_register(fake.admin, cmds[i].name, "", "", cmds[i].fn, NULL) < 0)
			return -1;
	if (pipe(fake.stop_pipe) < 0)
		return -1;
	fake.stop_ev = event_new(fake.base, fake.stop_pipe[0], EV_READ | EV_PERSIST, stop_cb, NULL);
	if (!fake.stop_ev || event_add(fake.stop_ev, NULL) < 0)
		return -1;
	if (pthread_create(&fake.thread, NULL, fake_main, NULL) != 0)
		return -1;
	return 0;
}

static int fake_stop(void **state)
{
	(void)!write(fake.stop_pipe[1], "x", 1);
	pthread_join(fake.thread, NULL);
	loom_admin_free(fake.admin);
	event_free(fake.stop_ev);
	close(fake.stop_pipe[0]);
	close(fake.stop_pipe[1]);
	event_base_free(fake.base);
	json_decref(fake.last_args);
	pthread_mutex_destroy(&fake.lock);
	return 0;
}

/* ---- running loomctl ------------------------------------------------------------------ */

struct run {
	int status; /* exit status, or -1 if it did not exit normally */
	char *out, *err;
};

static char *slurp_fd(int fd)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;

	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	for (;;) {
		ssize_t n;

		if (cap - len < 4096) {
			cap = cap ? 2 * cap : 8192;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		n = read(fd, buf + len, cap - len - 1);
		assert_true(n >= 0);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(fd);
	return buf;
}

static int tmp_fd(void)
{
	char name[] = "/tmp/loom-loomctl-out-XXXXXX";
	int fd = mkstemp(name);

	assert_true(fd >= 0);
	unlink(name);
	return fd;
}

/*
 * Runs loomctl with the NULL-terminated arguments (after argv[0]), with
 * LOOMD_ADMIN set to socket (unset when NULL).
 */
static struct run run_with(const char *socket, const char *const *args)
{
	const char *argv[32] = {"loomctl"};
	int out = tmp_fd(), err = tmp_fd(), status;
	struct run r = {.status = -1};
	size_t n = 1;
	pid_t pid;

	for (; args[n - 1]; n++) {
		assert_true(n + 1 < ARRAY_SIZE(argv));
		argv[n] = args[n - 1];
	}
	argv[n] = NULL;
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(out, 1);
		dup2(err, 2);
		if (socket)
			setenv("LOOMD_ADMIN", socket, 1);
		else
			unsetenv("LOOMD_ADMIN");
		execv(loomctl_path, (char *const *)argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status))
		r.status = WEXITSTATUS(status);
	r.out = slurp_fd(out);
	r.err = slurp_fd(err);
	return r;
}

#define RUN(...) run_with(fake.path, (const char *const[]){__VA_ARGS__, NULL})

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

static void expect_status(const struct run *r, int want)
{
	if (r->status != want)
		fail_msg("loomctl exited %d, want %d\nstdout:\n%s\nstderr:\n%s", r->status, want,
			 r->out, r->err);
}

static void expect_has(const char *text, const char *needle)
{
	if (!strstr(text, needle))
		fail_msg("expected \"%s\" in:\n%s", needle, text);
}

/* Returns the line of text that contains needle (malloc'ed), failing if none does. */
static char *line_with(const char *text, const char *needle)
{
	const char *p = strstr(text, needle), *b, *e;

	if (!p)
		fail_msg("expected a line with \"%s\" in:\n%s", needle, text);
	for (b = p; b > text && b[-1] != '\n'; b--)
		;
	e = strchr(p, '\n');
	return strndup(b, e ? (size_t)(e - b) : strlen(b));
}

/* Checks the words of the line containing needle, in order, separated by spaces. */
static void expect_row(const char *text, const char *needle, const char *const *words)
{
	_cleanup_free_ char *line = line_with(text, needle);
	char *save = NULL, *tok;
	size_t i = 0;

	for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save), i++) {
		if (!words[i])
			fail_msg("extra column '%s' in row '%s'", tok, needle);
		if (strcmp(tok, words[i]) != 0)
			fail_msg("column %zu of row '%s': got '%s', want '%s'", i, needle, tok,
				 words[i]);
	}
	if (words[i])
		fail_msg("row '%s' lacks column '%s'", needle, words[i]);
}

#define ROW(text, needle, ...) expect_row(text, needle, (const char *const[]){__VA_ARGS__, NULL})

static void expect_last(const char *cmd, const char *args_json)
{
	json_t *want = load(args_json);

	pthread_mutex_lock(&fake.lock);
	assert_string_equal(fake.last_cmd, cmd);
	if (!json_equal(fake.last_args, want))
		fail_msg("'%s' got other args than %s", cmd, args_json);
	fake.last_cmd[0] = '\0';
	pthread_mutex_unlock(&fake.lock);
	json_decref(want);
}

static void expect_json_equal(const char *out, const char *canned)
{
	json_error_t jerr;
	json_t *got = json_loads(out, 0, &jerr), *want = load(canned);

	if (!got)
		fail_msg("--json output is not JSON (%s):\n%s", jerr.text, out);
	assert_true(json_equal(got, want));
	json_decref(got);
	json_decref(want);
}

/* ---- tests ---------------------------------------------------------------------------- */

static void test_status(void **state)
{
	struct run r = RUN("status");
	const char *p;
	long col = -1;

	expect_status(&r, 0);
	expect_last("stats", "[]");
	ROW(r.out, "version:", "version:", "0.1.0");
	ROW(r.out, "uptime:", "uptime:", "1h", "02m", "05s");
	ROW(r.out, "policy:", "policy:", "sincronia");
	ROW(r.out, "tick:", "tick:", "10", "ms");
	ROW(r.out, "decision p50:", "decision", "p50:", "12.5", "us");
	ROW(r.out, "decision p99:", "decision", "p99:", "1.50", "ms");
	ROW(r.out, "memory (rss):", "memory", "(rss):", "12.0", "MiB");
	ROW(r.out, "journal:", "journal:", "/var/lib/loom/j.db");
	ROW(r.out, "coflows active:", "coflows", "active:", "4");
	/* Values are aligned: each starts in the same column. */
	for (p = r.out; *p; p = strchr(p, '\n') + 1) {
		const char *colon = strchr(p, ':');
		const char *v = colon + 1;

		while (*v == ' ')
			v++;
		if (col < 0)
			col = v - p;
		assert_int_equal(v - p, col);
	}
	assert_string_equal(r.err, "");
	run_free(&r);

	r = RUN("--json", "status");
	expect_status(&r, 0);
	expect_json_equal(r.out, canned_stats);
	run_free(&r);
}

static void test_stats(void **state)
{
	struct run r = RUN("stats");
	const char *prev = NULL;
	char *save = NULL, *line;
	int lines = 0;

	expect_status(&r, 0);
	ROW(r.out, "rss_bytes:", "rss_bytes:", "12582912");
	ROW(r.out, "uptime_s:", "uptime_s:", "3725.5");
	/* Every key, sorted. */
	for (line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (prev)
			assert_true(strcmp(prev, line) < 0);
		prev = line;
		lines++;
	}
	assert_int_equal(lines, 19);
	run_free(&r);
}

static void test_jobs(void **state)
{
	struct run r = RUN("jobs");
	_cleanup_free_ char *evil = NULL;

	expect_status(&r, 0);
	expect_last("jobs", "[]");
	ROW(r.out, "NAME", "ID", "NAME", "WEIGHT", "STATE", "COFLOWS", "DONE", "FLOWS", "SENT",
	    "AGE");
	ROW(r.out, "shuffle-a", "1", "shuffle-a", "1.5", "running", "5", "2", "40", "1.0", "GiB",
	    "1m", "15s");
	/* Missing keys print "-"; control characters never reach the terminal. */
	ROW(r.out, "evil", "22", "evil?[31mname", "-", "done", "-", "-", "-", "-", "-");
	assert_null(strchr(r.out, '\x1b'));
	/* The header comes first. */
	assert_true(strncmp(r.out, " ID", 3) == 0 || strncmp(r.out, "ID", 2) == 0);
	run_free(&r);

	r = RUN("jobs", "--json");
	expect_status(&r, 0);
	expect_json_equal(r.out, canned_jobs);
	run_free(&r);

	pthread_mutex_lock(&fake.lock);
	fake.jobs_empty = true;
	pthread_mutex_unlock(&fake.lock);
	r = RUN("jobs");
	expect_status(&r, 0);
	assert_string_equal(r.out, "no jobs\n");
	run_free(&r);
	pthread_mutex_lock(&fake.lock);
	fake.jobs_empty = false;
	pthread_mutex_unlock(&fake.lock);
}

static void test_coflows(void **state)
{
	struct run r = RUN("coflows");

	expect_status(&r, 0);
	expect_last("coflows", "[]");
	ROW(r.out, "STATE", "ID", "JOB", "STATE", "RANK", "FLOWS", "DONE", "SENT", "EXPECTED",
	    "OPEN");
	ROW(r.out, "active", "7", "1", "active", "0", "8", "3", "2.0", "KiB", "?", "yes");
	ROW(r.out, "waiting", "8", "1", "waiting", "-", "2", "0", "0", "B", "4.0", "KiB", "no");
	run_free(&r);

	r = RUN("coflows", "1");
	expect_status(&r, 0);
	expect_last("coflows", "[\"1\"]");
	run_free(&r);

	/* A daemon error: exit 1 and its message. */
	r = RUN("coflows", "99");
	expect_status(&r, 1);
	expect_last("coflows", "[\"99\"]");
	assert_string_equal(r.err, "loomctl: no job 99\n");
	assert_string_equal(r.out, "");
	run_free(&r);

	/* A job id that is not a number never reaches the daemon. */
	r = RUN("coflows", "abc");
	expect_status(&r, 2);
	expect_has(r.err, "invalid job id 'abc'");
	run_free(&r);

	r = RUN("coflows", "1", "2");
	expect_status(&r, 2);
	expect_has(r.err, "wrong number of arguments for 'coflows'");
	run_free(&r);
}

static void test_agents(void **state)
{
	struct run r = RUN("agents");

	expect_status(&r, 0);
	expect_last("agents", "[]");
	ROW(r.out, "ENFORCER", "HOST", "NAME", "PEER", "ENFORCER", "CLASSES", "TABLE", "ACKED",
	    "FLOWS", "CONNECTED", "UNKNOWN");
	ROW(r.out, "rack1-h3", "3", "rack1-h3", "10.0.0.3:41000", "ebpf", "8", "v12", "v11", "17",
	    "1h", "06m", "40s", "2");
	run_free(&r);
}

static void test_unknown(void **state)
{
	struct run r = RUN("unknown", "3");

	expect_status(&r, 0);
	expect_last("unknown", "[\"3\"]");
	ROW(r.out, "FLOW", "HOST", "FLOW", "BYTES", "FIRST", "SEEN", "LAST", "SEEN");
	ROW(r.out, "10.0.0.9:80", "3", "tcp", "10.0.0.3:41000", "->", "10.0.0.9:80", "2.9", "MiB",
	    "1m", "15s", "2.0", "s");
	run_free(&r);
	r = RUN("unknown", "x");
	expect_status(&r, 2);
	run_free(&r);
}

static void test_priorities(void **state)
{
	struct run r = RUN("priorities");

	expect_status(&r, 0);
	expect_last("priorities", "[]");
	ROW(r.out, "RANK", "RANK", "COFLOW", "JOB", "CLASS", "HOSTS");
	ROW(r.out, " 9 ", "1", "9", "2", "1", "2");
	run_free(&r);

	r = RUN("priorities", "3");
	expect_status(&r, 0);
	expect_last("priorities", "[\"3\"]");
	ROW(r.out, "host", "host", "3");
	ROW(r.out, "COFLOW", "COFLOW", "CLASS");
	ROW(r.out, " 9 ", "9", "5");
	run_free(&r);

	r = RUN("--json", "priorities", "3");
	expect_status(&r, 0);
	expect_json_equal(r.out, canned_priorities_host);
	run_free(&r);
}

static void test_policy(void **state)
{
	struct run r = RUN("policy", "get");

	expect_status(&r, 0);
	expect_last("policy", "[]");
	assert_string_equal(r.out, "policy: sincronia\n");
	run_free(&r);

	r = RUN("policy");
	expect_status(&r, 0);
	expect_last("policy", "[]");
	run_free(&r);

	r = RUN("policy", "set", "ensemble:fifo,sincronia");
	expect_status(&r, 0);
	expect_last("set-policy", "[\"ensemble:fifo,sincronia\"]");
	assert_string_equal(r.out, "policy: ensemble:fifo,sincronia (was sincronia)\n");
	run_free(&r);

	r = RUN("--json", "policy", "set", "fifo");
	expect_status(&r, 0);
	expect_json_equal(r.out, "{\"policy\": \"fifo\", \"previous\": \"sincronia\"}");
	run_free(&r);

	r = RUN("policy", "set", "bogus");
	expect_status(&r, 1);
	assert_string_equal(r.err, "loomctl: unknown policy 'bogus'\n");
	run_free(&r);

	r = RUN("policy", "list");
	expect_status(&r, 0);
	expect_last("policies", "[]");
	ROW(r.out, "SUMMARY", "NAME", "SUMMARY");
	ROW(r.out, "fifo", "fifo", "first", "come", "first", "served");
	run_free(&r);

	r = RUN("policy", "set");
	expect_status(&r, 2);
	expect_has(r.err, "wrong number of arguments for 'policy set'");
	run_free(&r);

	r = RUN("policy", "frob");
	expect_status(&r, 2);
	expect_has(r.err, "unknown policy command 'frob'");
	run_free(&r);
}

static void test_log_level_and_dump(void **state)
{
	struct run r = RUN("log-level", "debug");

	expect_status(&r, 0);
	expect_last("set-log-level", "[\"debug\"]");
	assert_string_equal(r.out, "log level: debug\n");
	run_free(&r);

	r = RUN("log-level", "loud");
	expect_status(&r, 2);
	expect_has(r.err, "unknown log level 'loud'");
	run_free(&r);

	r = RUN("log-level");
	expect_status(&r, 2);
	run_free(&r);

	/* dump is always JSON, pretty (indented). */
	r = RUN("dump");
	expect_status(&r, 0);
	expect_last("dump", "[]");
	expect_json_equal(r.out, canned_dump);
	expect_has(r.out, "\n  \"jobs\": []");
	run_free(&r);
}

static void test_usage_errors(void **state)
{
	struct run r = RUN("frobnicate");

	expect_status(&r, 2);
	expect_has(r.err, "unknown command 'frobnicate'");
	expect_has(r.err, "Usage: loomctl");
	assert_string_equal(r.out, "");
	run_free(&r);

	r = RUN("--frob", "status");
	expect_status(&r, 2);
	expect_has(r.err, "unknown option '--frob'");
	expect_has(r.err, "Usage: loomctl");
	run_free(&r);

	r = RUN("jobs", "extra");
	expect_status(&r, 2);
	run_free(&r);

	r = RUN("--timeout", "soon", "status");
	expect_status(&r, 2);
	expect_has(r.err, "invalid timeout 'soon'");
	run_free(&r);

	r = RUN("--socket");
	expect_status(&r, 2);
	expect_has(r.err, "needs a value");
	run_free(&r);

	r = run_with(fake.path, (const char *const[]){NULL});
	expect_status(&r, 2);
	expect_has(r.err, "no command given");
	run_free(&r);

	r = RUN("--help");
	expect_status(&r, 0);
	expect_has(r.out, "Usage: loomctl");
	expect_has(r.out, "priorities [HOST]");
	run_free(&r);

	r = RUN("coflows", "--help");
	expect_status(&r, 0);
	expect_has(r.out, "Usage: loomctl coflows [JOB]");
	run_free(&r);

	r = RUN("help", "policy");
	expect_status(&r, 0);
	expect_has(r.out, "loomctl policy set SPEC");
	run_free(&r);

	r = RUN("--version");
	expect_status(&r, 0);
	expect_has(r.out, "loomctl ");
	run_free(&r);
}

static void test_unreachable(void **state)
{
	char path[108];
	struct run r;

	snprintf(path, sizeof(path), "/tmp/loom-loomctl-none-%d.sock", (int)getpid());
	unlink(path);
	r = run_with(path, (const char *const[]){"status", NULL});
	expect_status(&r, 3);
	expect_has(r.err, "loomctl: cannot reach admin socket");
	expect_has(r.err, path);
	expect_has(r.err, "is loomd running?");
	run_free(&r);

	/* --socket wins over $LOOMD_ADMIN. */
	r = run_with(path, (const char *const[]){"--socket", fake.path, "policy", NULL});
	expect_status(&r, 0);
	run_free(&r);
	r = run_with(fake.path,
		     (const char *const[]){"--socket=/nonexistent/x.sock", "jobs", NULL});
	expect_status(&r, 3);
	expect_has(r.err, "/nonexistent/x.sock");
	run_free(&r);

	/* A daemon that does not answer in time counts as unreachable. */
	pthread_mutex_lock(&fake.lock);
	fake.hang = true;
	pthread_mutex_unlock(&fake.lock);
	r = RUN("--timeout", "200", "status");
	pthread_mutex_lock(&fake.lock);
	fake.hang = false;
	pthread_mutex_unlock(&fake.lock);
	expect_status(&r, 3);
	expect_has(r.err, "timeout");
	run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_jobs),
		cmocka_unit_test(test_coflows),
		cmocka_unit_test(test_agents),
		cmocka_unit_test(test_unknown),
		cmocka_unit_test(test_priorities),
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_log_level_and_dump),
		cmocka_unit_test(test_usage_errors),
		cmocka_unit_test(test_unreachable),
	};

	loomctl_path = getenv("LOOMCTL");
	/* not this machine's precondition but the build's: meson test sets it */
	if (!loomctl_path || access(loomctl_path, X_OK) != 0) {
		fprintf(stderr, "FAIL: LOOMCTL is not set to the loomctl binary\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, fake_start, fake_stop);
}
