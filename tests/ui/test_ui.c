/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The web UI (controlplane/loomd/webui.h) in a real browser: loomd with a
 * small workload (three jobs, one a diamond DAG of four coflows, and an
 * agent), its JSON API over HTTP (answers, errors, the credential of
 * writes, agreement with loomctl --json), then its pages in headless
 * Chromium (Debian's chromium): the DOM after the script ran (job rows,
 * the DAG's nodes and edges, a coflow's class colour changing after
 * `loomctl policy set`), screenshots under BUILDDIR/ui-screenshots/, and no
 * console message at all (the UI writes none; an error, a failed load or a
 * refused inline style would print one). Last, policy_form.py drives the
 * policy page as a user would (DevTools protocol): read-only without a token,
 * a wrong token refused, the right one switching the policy. Exits 77
 * without chromium.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "controlplane/client/loom.h"
#include "tests/e2e/harness.h"
#include "tests/precond.h"

#define BROWSER_TIMEOUT_MS 40000
#define LOOM_BIG_BODY      5000

static struct h_loomd H;
static struct h_agent *AG;
static char CHROMIUM[512], SHOTS[512], TOKEN[128];
static unsigned PORT;

/* ---- HTTP ----------------------------------------------------------------------------- */

struct resp {
	int status;
	char *body; /* owned, NUL-terminated */
	size_t len;
	char head[2048];
};

/* Sends raw (a whole request) to loomd's HTTP port; reads the response until it closes. */
static struct resp http_raw(const char *raw, size_t rawlen)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)PORT)};
	struct timeval tv = {10, 0};
	struct resp r = {0};
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap), *sep;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_non_null(buf);
	assert_true(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	/* a refused request may be answered before all of it is sent */
	for (size_t off = 0; off < rawlen;) {
		ssize_t w = send(fd, raw + off, rawlen - off, MSG_NOSIGNAL);

		if (w <= 0)
			break;
		off += (size_t)w;
	}
	for (;;) {
		ssize_t k;

		if (n + 1 >= cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		k = recv(fd, buf + n, cap - 1 - n, 0);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	buf[n] = 0;
	assert_true(sscanf(buf, "HTTP/1.%*d %d", &r.status) == 1);
	sep = strstr(buf, "\r\n\r\n");
	assert_non_null(sep);
	snprintf(r.head, sizeof(r.head), "%.*s", (int)(sep - buf), buf);
	r.len = n - (size_t)(sep + 4 - buf);
	r.body = malloc(r.len + 1);
	assert_non_null(r.body);
	memcpy(r.body, sep + 4, r.len);
	r.body[r.len] = 0;
	free(buf);
	return r;
}

static struct resp http(const char *method, const char *path, const char *auth, const char *body)
{
	size_t blen = body ? strlen(body) : 0, cap = strlen(path) + blen + 512;
	char *raw = malloc(cap);
	struct resp r;
	int n;

	assert_non_null(raw);
	n = snprintf(raw, cap,
		     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s%s%s"
		     "Content-Length: %zu\r\n\r\n%s",
		     method, path, auth ? "Authorization: " : "", auth ? auth : "",
		     auth ? "\r\n" : "", blen, body ? body : "");
	r = http_raw(raw, (size_t)n);
	free(raw);
	return r;
}

/* GET path: must be 200 with JSON; the document (caller decrefs). */
static json_t *api_json(const char *path)
{
	struct resp r = http("GET", path, NULL, NULL);
	json_error_t e;
	json_t *j;

	if (r.status != 200)
		fail_msg("GET %s: %d %s", path, r.status, r.body);
	assert_non_null(strstr(r.head, "application/json"));
	j = json_loads(r.body, 0, &e);
	if (!j)
		fail_msg("GET %s: not JSON (%s): %s", path, e.text, r.body);
	free(r.body);
	return j;
}

/* An error answer: status want, a JSON object with a string "error". */
static void expect_error(struct resp r, int want, const char *what)
{
	json_t *j = json_loads(r.body, 0, NULL);

	if (r.status != want)
		fail_msg("%s: status %d, want %d: %s", what, r.status, want, r.body);
	if (!j || !json_is_string(json_object_get(j, "error")))
		fail_msg("%s: not a JSON error: %s", what, r.body);
	json_decref(j);
	free(r.body);
}

/* ---- the browser ---------------------------------------------------------------------- */

/* Whether chromium (or $LOOM_CHROMIUM) is on this machine: its path in CHROMIUM. */
static bool find_chromium(void)
{
	const char *env = getenv("LOOM_CHROMIUM");

	if (env && env[0]) {
		snprintf(CHROMIUM, sizeof(CHROMIUM), "%s", env);
		return access(CHROMIUM, X_OK) == 0;
	}
	return precond_find_program("chromium", CHROMIUM, sizeof(CHROMIUM)) ||
	       precond_find_program("chromium-browser", CHROMIUM, sizeof(CHROMIUM));
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (buf)
		buf[n] = 0;
	fclose(f);
	return buf;
}

/*
 * Opens the page at hash in headless Chromium with mode "--dump-dom" (the
 * DOM after 4 s of the page's virtual time) or "--screenshot=PATH". Fails
 * the test when Chromium fails or the page wrote to the console. Returns
 * what Chromium printed (the DOM; caller frees).
 */
static char *browse(const char *hash, const char *mode)
{
	char url[128], out[400], err[400], profile[400];
	char *argv[] = {CHROMIUM,
			"--headless=new",
			"--no-sandbox",
			"--disable-gpu",
			"--disable-dev-shm-usage",
			"--no-first-run",
			"--no-default-browser-check",
			"--disable-extensions",
			"--disable-background-networking",
			"--disable-sync",
			"--window-size=1280,900",
			"--hide-scrollbars",
			"--enable-logging=stderr",
			"--v=0",
			"--virtual-time-budget=4000",
			profile,
			(char *)mode,
			url,
			NULL};
	char *text, *log, *line;
	pid_t pid;
	int status;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/%s", PORT, hash);
	snprintf(out, sizeof(out), "%s/chromium.out", H.dir);
	snprintf(err, sizeof(err), "%s/chromium.err", H.dir);
	snprintf(profile, sizeof(profile), "--user-data-dir=%s/chromium-profile", H.dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (o < 0 || e < 0)
			_exit(127);
		dup2(o, 1);
		dup2(e, 2);
		setenv("HOME", H.dir, 1);
		execv(CHROMIUM, argv);
		_exit(127);
	}
	status = h_wait(pid, h_mono_ms() + BROWSER_TIMEOUT_MS);
	log = read_file(err);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "%s\n", log ? log : "(no stderr)");
		fail_msg("chromium %s %s: %s %d", mode, url,
			 status == -1 ? "did not end in time" : "status",
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	/* every console message (errors, warnings, logs: the UI writes none) fails */
	for (line = log; line && (line = strstr(line, ":CONSOLE")); line++) {
		char *eol = strchr(line, '\n');

		fail_msg("console message on %s: %.*s", url, eol ? (int)(eol - line) : 300, line);
	}
	free(log);
	text = read_file(out);
	assert_non_null(text);
	return text;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The fill of the DAG node of coflow id in a dumped DOM ("" when not there). */
static void node_fill(const char *dom, unsigned id, char *buf, size_t size)
{
	char key[96];
	const char *p, *f;

	snprintf(key, sizeof(key), "class=\"dag-node\" data-coflow=\"%u\"", id);
	buf[0] = 0;
	p = strstr(dom, key);
	f = p ? strstr(p, "fill=\"") : NULL;
	if (f)
		snprintf(buf, size, "%.*s", (int)strcspn(f + 6, "\""), f + 6);
}

/* The attribute name="..." on <html> or <body> of a dumped DOM, as a number (-1: absent). */
static long dom_attr(const char *dom, const char *name)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), " %s=\"", name);
	p = strstr(dom, key);
	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

/* ---- the workload --------------------------------------------------------------------- */

/* The class the API gives coflow id of job (-1: none). */
static long api_class(unsigned job, unsigned id)
{
	char path[64];
	json_t *j, *c;
	size_t i;
	long cls = -2;

	snprintf(path, sizeof(path), "/api/v1/jobs/%u", job);
	j = api_json(path);
	json_array_foreach(json_object_get(j, "coflow_list"), i,
			   c) if (json_integer_value(json_object_get(c, "id")) == id)
		cls = (long)json_integer_value(json_object_get(c, "class"));
	json_decref(j);
	assert_true(cls != -2);
	return cls;
}

/* The decisions loomd has made so far. */
static long long decisions(void)
{
	json_t *j = api_json("/api/v1/decisions");
	long long n = json_integer_value(json_object_get(j, "decisions"));

	json_decref(j);
	return n;
}

/* Waits (bounded) until loomd has made more than n decisions; fails otherwise. */
static void wait_decisions(long long n)
{
	uint64_t deadline = h_mono_ms() + H_TIMEOUT_MS;

	while (decisions() <= n) {
		if (h_mono_ms() > deadline)
			fail_msg("no decision after %lld in %d ms", n, H_TIMEOUT_MS);
		h_sleep_ms(20);
	}
}

static void register_workload(void)
{
	char addr[320];
	struct loom_client *c;
	/* job 1 "etl": a diamond 101 -> {102, 103} -> 104; 101 moves 2 x 1 GB */
	struct loom_client_flow big[2] = {{.src_host = 0, .dst_host = 1, .bytes = 1000000000},
					  {.src_host = 2, .dst_host = 3, .bytes = 1000000000}};
	struct loom_client_flow mid[2] = {{.src_host = 1, .dst_host = 2, .bytes = 50000000},
					  {.src_host = 3, .dst_host = 0, .bytes = 50000000}};
	struct loom_client_coflow diamond[4] = {
		{.id = 101, .flows = big, .n_flows = 2},
		{.id = 102, .flows = &mid[0], .n_flows = 1},
		{.id = 103, .flows = &mid[1], .n_flows = 1},
		{.id = 104, .flows = &mid[0], .n_flows = 1},
	};
	struct loom_client_edge edges[4] = {
		{.parent = 101, .child = 102},
		{.parent = 101, .child = 103},
		{.parent = 102, .child = 104},
		{.parent = 103, .child = 104},
	};
	/* job 2 "small": one coflow of 1 MB from host 0, registered after 101 */
	struct loom_client_flow small = {.src_host = 0, .dst_host = 1, .bytes = 1000000};
	struct loom_client_coflow one = {.id = 201, .flows = &small, .n_flows = 1};
	/* job 3 "open": an open coflow (no flows yet) */
	struct loom_client_coflow open_cf = {.id = 301};
	struct loom_client_job jobs[3] = {
		{.id = 1,
		 .name = "etl",
		 .coflows = diamond,
		 .n_coflows = 4,
		 .edges = edges,
		 .n_edges = 4},
		{.id = 2, .name = "small", .coflows = &one, .n_coflows = 1},
		{.id = 3, .name = "open", .coflows = &open_cf, .n_coflows = 1},
	};

	snprintf(addr, sizeof(addr), "unix:%s", H.sock);
	c = loom_client_connect(addr, NULL);
	assert_non_null(c);
	for (int i = 0; i < 3; i++)
		if (loom_client_job_register(c, &jobs[i]) < 0)
			fail_msg("register job %d: %s", i + 1, loom_client_strerror());
	loom_client_free(c);
}

static int setup(void **state)
{
	json_t *t;

	(void)state;
	if (h_loomd_prepare(&H) < 0)
		return -1;
	snprintf(SHOTS, sizeof(SHOTS), "%s/ui-screenshots",
		 getenv("LOOM_BUILDDIR") ? getenv("LOOM_BUILDDIR") : ".");
	if (mkdir(SHOTS, 0755) < 0 && errno != EEXIST)
		return -1;
	if (h_loomd_start(&H, (const char *const[]){"hosts=8", "metrics=127.0.0.1:0", "policy=fifo",
						    "classes=4", NULL}) < 0)
		return -1;
	t = h_admin(&H, "web-token", 0, NULL);
	if (!t)
		return -1;
	PORT = (unsigned)json_integer_value(json_object_get(t, "port"));
	snprintf(TOKEN, sizeof(TOKEN), "Bearer %s", json_string_value(json_object_get(t, "token")));
	json_decref(t);
	AG = calloc(1, sizeof(*AG));
	if (!AG || h_agent_connect(AG, H.sock, 0) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	int r;

	(void)state;
	if (AG && AG->fd >= 0)
		close(AG->fd);
	free(AG);
	r = h_loomd_stop_clean(&H);
	h_loomd_cleanup(&H);
	return r;
}

/* Every key of want's objects is in got's (same shape: object, or array of objects). */
static void same_keys(json_t *want, json_t *got, const char *what)
{
	const char *k;
	json_t *v;

	if (json_is_array(want)) {
		assert_true(json_is_array(got));
		assert_int_equal(json_array_size(want), json_array_size(got));
		if (json_array_size(want))
			same_keys(json_array_get(want, 0), json_array_get(got, 0), what);
		return;
	}
	assert_true(json_is_object(want) && json_is_object(got));
	assert_int_equal(json_object_size(want), json_object_size(got));
	json_object_foreach(want, k, v) if (!json_object_get(got, k))
		fail_msg("%s: the API has no '%s'", what, k);
}

/* The API: documents, loomctl's field names, errors, and the credential of writes. */
static void test_api(void **state)
{
	static const char *const pairs[][3] = {
		{"/api/v1/jobs", "jobs", NULL},
		{"/api/v1/agents", "agents", NULL},
		{"/api/v1/jobs/1", "job", "1"},
		{"/api/v1/policy", "policy", NULL},
		{"/api/v1/priorities", "priorities", NULL},
		{"/api/v1/status", "stats", NULL},
	};
	char big[LOOM_BIG_BODY], longurl[700];
	json_t *j, *a;
	long long n;

	(void)state;
	register_workload();
	assert_int_equal(h_agent_sync(AG), 0);
	wait_decisions(0);
	j = api_json("/api/v1/jobs");
	assert_int_equal(json_array_size(j), 3);
	json_decref(j);
	j = api_json("/api/v1/jobs/1");
	assert_int_equal(json_array_size(json_object_get(j, "coflow_list")), 4);
	assert_int_equal(json_array_size(json_object_get(j, "edges")), 4);
	json_decref(j);
	/* the API's documents are the admin commands' (loomctl --json prints these) */
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		const char *arg = pairs[i][2];

		a = h_admin(&H, pairs[i][1], arg ? 1 : 0, arg ? &arg : NULL);
		assert_non_null(a);
		j = api_json(pairs[i][0]);
		same_keys(a, j, pairs[i][0]);
		json_decref(a);
		json_decref(j);
	}
	wait_decisions(0);
	j = api_json("/api/v1/decisions");
	assert_true(json_is_array(json_object_get(j, "recent")));
	assert_true(json_array_size(json_object_get(j, "recent")) > 0);
	json_decref(j);

	/* bad input */
	expect_error(http("GET", "/api/v1/jobs/abc", NULL, NULL), 400, "bad job id");
	expect_error(http("GET", "/api/v1/jobs/-1", NULL, NULL), 400, "negative job id");
	expect_error(http("GET", "/api/v1/jobs/99999999999999999999999", NULL, NULL), 400,
		     "job id over 64 bits");
	expect_error(http("GET", "/api/v1/jobs/42", NULL, NULL), 404, "unknown job");
	expect_error(http("GET", "/api/v1/nothing", NULL, NULL), 404, "unknown endpoint");
	{
		struct resp r = http("GET", "/nothing.html", NULL, NULL);

		assert_int_equal(r.status, 404);
		free(r.body);
	}
	expect_error(http("PUT", "/api/v1/policy", TOKEN, "{}"), 405, "PUT");
	memset(longurl, 'a', sizeof(longurl));
	memcpy(longurl, "/api/v1/", 8);
	longurl[sizeof(longurl) - 1] = 0;
	expect_error(http("GET", longurl, NULL, NULL), 414, "long URL");

	/* writes: no token, a wrong one, too big, not JSON, a bad policy; then one that works */
	expect_error(http("POST", "/api/v1/policy", NULL, "{\"policy\":\"sebf\"}"), 401,
		     "no token");
	expect_error(http("POST", "/api/v1/policy", "Bearer 0123", "{\"policy\":\"sebf\"}"), 403,
		     "wrong token");
	memset(big, ' ', sizeof(big));
	big[0] = '{';
	big[sizeof(big) - 2] = '}';
	big[sizeof(big) - 1] = 0;
	expect_error(http("POST", "/api/v1/policy", TOKEN, big), 413, "oversized body");
	expect_error(http("POST", "/api/v1/policy", TOKEN, "policy=sebf"), 400, "not JSON");
	expect_error(http("POST", "/api/v1/policy", TOKEN, "{\"policy\":\"nonsense\"}"), 400,
		     "unknown policy");
	expect_error(http("POST", "/api/v1/jobs", TOKEN, "{}"), 404, "POST elsewhere");
	j = api_json("/api/v1/policy");
	assert_string_equal(json_string_value(json_object_get(j, "policy")), "fifo");
	json_decref(j);
	{
		struct resp r = http("POST", "/api/v1/policy", TOKEN, "{\"policy\":\"sebf\"}");

		if (r.status != 200)
			fail_msg("policy switch: %d %s", r.status, r.body);
		free(r.body);
		n = decisions();
		r = http("POST", "/api/v1/policy", TOKEN, "{\"policy\":\"fifo\"}");
		assert_int_equal(r.status, 200);
		free(r.body);
		wait_decisions(n); /* test_pages starts from fifo's classes */
	}
}

/* Runs loomctl with args; its exit status. */
static int loomctl(const char *a1, const char *a2, const char *a3)
{
	const char *ctl = getenv("LOOMCTL");
	char *argv[] = {(char *)ctl, (char *)"--socket", H.admin, (char *)a1,
			(char *)a2,  (char *)a3,         NULL};
	pid_t pid;
	int status;

	assert_non_null(ctl);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, 1); /* what it prints is not checked here */
		execv(ctl, argv);
		_exit(127);
	}
	status = h_wait(pid, h_mono_ms() + H_TIMEOUT_MS);
	return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The pages in Chromium: the overview, a job's DAG and its colours, agents, policy. */
static void test_pages(void **state)
{
	char shot[700], before[64], after[64];
	struct resp r;
	size_t weight = 0;
	char *dom;
	long cls_before, cls_after;
	long long n;

	(void)state;
	/* the page's weight: the three files the UI loads before its API calls */
	for (int i = 0; i < 3; i++) {
		r = http("GET", (const char *[]){"/", "/app.js", "/style.css"}[i], NULL, NULL);
		assert_int_equal(r.status, 200);
		weight += r.len;
		free(r.body);
	}
	fprintf(stderr, "ui: page weight %zu bytes (/, /app.js, /style.css)\n", weight);

	dom = browse("#/", "--dump-dom");
	assert_non_null(strstr(dom, "data-page=\"overview\""));
	assert_int_equal(count(dom, "class=\"job-row\""), 3);
	assert_non_null(strstr(dom, "id=\"jobs-table\""));
	fprintf(stderr, "ui: overview first rendered at %ld ms of the page's (virtual) time\n",
		dom_attr(dom, "data-first-render-ms"));
	free(dom);
	snprintf(shot, sizeof(shot), "--screenshot=%s/overview.png", SHOTS);
	free(browse("#/", shot));

	cls_before = api_class(1, 101);
	dom = browse("#/job/1", "--dump-dom");
	assert_non_null(strstr(dom, "data-page=\"job\""));
	assert_int_equal(count(dom, "class=\"dag-node\""), 4);
	assert_int_equal(count(dom, "class=\"dag-edge\""), 4);
	node_fill(dom, 101, before, sizeof(before));
	assert_true(before[0]);
	free(dom);
	snprintf(shot, sizeof(shot), "--screenshot=%s/job.png", SHOTS);
	free(browse("#/job/1", shot));

	/* sebf serves the 1 MB coflow 201 before 101, which shares host 0: 101's class moves */
	/* loomctl's side of it: the token, a job's DAG, and their usage errors */
	assert_int_equal(loomctl("web-token", NULL, NULL), 0);
	assert_int_equal(loomctl("--json", "job", "1"), 0);
	assert_int_equal(loomctl("job", "abc", NULL), 2);
	assert_int_equal(loomctl("job", "42", NULL), 1);

	n = decisions();
	assert_int_equal(loomctl("policy", "set", "sebf"), 0);
	wait_decisions(n);
	cls_after = api_class(1, 101);
	fprintf(stderr, "ui: coflow 101: class %ld under fifo, %ld under sebf\n", cls_before,
		cls_after);
	assert_true(cls_before != cls_after);
	dom = browse("#/job/1", "--dump-dom");
	node_fill(dom, 101, after, sizeof(after));
	fprintf(stderr, "ui: coflow 101's fill: %s -> %s\n", before, after);
	assert_true(after[0]);
	assert_string_not_equal(before, after);
	free(dom);

	dom = browse("#/agents", "--dump-dom");
	assert_int_equal(count(dom, "class=\"agent-row\""), 1);
	free(dom);

	dom = browse("#/policy", "--dump-dom");
	assert_non_null(strstr(dom, "Read-only"));
	assert_non_null(strstr(dom, "<td>sebf</td>"));
	free(dom);

	dom = browse("#/job/424242", "--dump-dom");
	assert_non_null(strstr(dom, "no job 424242"));
	free(dom);
}

/*
 * The policy page as a user drives it (policy_form.py, over the DevTools
 * protocol): read-only without a token, a wrong token refused, the right one
 * switching sebf (left by test_pages) back to fifo.
 */
static void test_policy_form(void **state)
{
	char script[600], url[64];
	const char *src = getenv("LOOM_SRCDIR");
	char *argv[] = {(char *)"python3",         script,         CHROMIUM, url,
			TOKEN + strlen("Bearer "), (char *)"fifo", NULL};
	json_t *j;
	pid_t pid;
	int status;

	(void)state;
	snprintf(script, sizeof(script), "%s/tests/ui/policy_form.py", src ? src : ".");
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", PORT);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	status = h_wait(pid, h_mono_ms() + BROWSER_TIMEOUT_MS);
	if (h_check_exit("policy_form.py", status, 0, NULL) < 0)
		fail_msg("the policy page did not switch the policy");
	j = api_json("/api/v1/policy");
	assert_string_equal(json_string_value(json_object_get(j, "policy")), "fifo");
	json_decref(j);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(test_api),
		cmocka_unit_test(test_pages),
		cmocka_unit_test(test_policy_form),
	};
	size_t n = sizeof(tests) / sizeof(tests[0]);
	char python[512];

	if (!find_chromium()) {
		fprintf(stderr,
			"skip: no chromium (apt-get install chromium, or set LOOM_CHROMIUM)\n");
		return PRECOND_SKIP;
	}
	n = precond_leave_out(tests, n, test_policy_form,
			      precond_find_program("python3", python, sizeof(python)) ?
				      NULL :
				      "no python3 in PATH");
	return precond_run(tests, n, setup, teardown);
}
