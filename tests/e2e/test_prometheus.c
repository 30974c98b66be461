/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loomd as operators watch it: a real Prometheus server (Debian's
 * `prometheus`) scrapes loomd's /metrics every second while loomd holds a
 * small workload (two jobs registered through libloom, an agent that
 * received and acknowledged its table and reported a flow nobody
 * announced). Through Prometheus's HTTP API: every metric the shipped
 * Grafana dashboard (packaging/grafana/loomd-dashboard.json) queries exists,
 * with the type its name promises (a histogram's _bucket, _sum and _count
 * belong to a family of type histogram; *_total is a counter; the rest are
 * gauges), every query of the dashboard evaluates to data, and the values
 * are the workload's. The metric names come from the dashboard's own `expr`
 * fields, so the dashboard and this test can not drift apart.
 *
 * The dashboard's shape (what Grafana's import needs: __inputs with the
 * DS_PROMETHEUS data source, schemaVersion, panels with ids, grid positions
 * and targets on ${DS_PROMETHEUS}) is checked on every machine; the
 * Prometheus test is left out (precond_leave_out) where `prometheus` is not
 * installed (scripts/install-deps.sh installs it).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "controlplane/client/loom.h"
#include "harness.h"
#include "tests/precond.h"

#define DASHBOARD     "packaging/grafana/loomd-dashboard.json"
#define DS_UID        "${DS_PROMETHEUS}"
#define MAX_EXPRS     256
#define MAX_NAMES     128
#define NAME_MAX_LEN  96
#define BODY_SIZE     (1u << 20)
#define SCRAPES_WAIT  3     /* scrapes of the workload before checking */
#define PROM_WAIT_MS  30000 /* Prometheus's first scrape comes ~5 s after its start */
#define PROM_START_MS 15000

/* Where `prometheus` is (found in main()), or "" when it is not installed. */
static char prometheus[512];

/* The dashboard, loaded by setup. */
static json_t *dash;

/* The exprs of every panel target, in order (owned by dash). */
static const char *exprs[MAX_EXPRS];
static size_t nexprs;

/* The metric names those exprs and the template variables' queries use. */
static char names[MAX_NAMES][NAME_MAX_LEN];
static size_t nnames;

static char body[BODY_SIZE];

/* ---- the dashboard -------------------------------------------------------------------- */

static void add_name(const char *s, size_t n)
{
	for (size_t i = 0; i < nnames; i++)
		if (strlen(names[i]) == n && !strncmp(names[i], s, n))
			return;
	assert_true(n < NAME_MAX_LEN);
	assert_true(nnames < MAX_NAMES);
	memcpy(names[nnames], s, n);
	names[nnames++][n] = '\0';
}

static bool ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static bool ident_char(char c)
{
	return ident_start(c) || (c >= '0' && c <= '9');
}

/*
 * The loom_* metric names in a PromQL expression: identifiers outside string
 * literals and range brackets (so label values and durations are not read
 * as names). Loom's metrics all start with "loom_", and no PromQL function,
 * keyword or label of the dashboard does.
 */
static void expr_names(const char *e)
{
	for (size_t i = 0; e[i];) {
		char c = e[i];

		if (c == '"' || c == '\'' || c == '`') {
			for (i++; e[i] && e[i] != c; i++)
				if (e[i] == '\\' && c != '`' && e[i + 1])
					i++;
			assert_true(e[i] == c); /* a string must end */
			i++;
		} else if (c == '[') {
			while (e[i] && e[i] != ']')
				i++;
		} else if (ident_start(c) && (i == 0 || !ident_char(e[i - 1]))) {
			size_t n = 0;

			while (ident_char(e[i + n]))
				n++;
			if (n > 5 && !strncmp(e + i, "loom_", 5))
				add_name(e + i, n);
			i += n;
		} else {
			i++;
		}
	}
}

/* Checks a {"type": "prometheus", "uid": "${DS_PROMETHEUS}"} data source. */
static void check_ds(const json_t *ds, const char *where)
{
	const char *type = json_string_value(json_object_get(ds, "type"));
	const char *uid = json_string_value(json_object_get(ds, "uid"));

	if (!type || strcmp(type, "prometheus") != 0 || !uid || strcmp(uid, DS_UID) != 0)
		fail_msg("%s: the datasource must be {\"type\": \"prometheus\", \"uid\": \"%s\"} "
			 "(the import asks for it)",
			 where, DS_UID);
}

/* Walks panels (and the panels of collapsed rows): shapes, unique ids, the exprs. */
static void walk_panels(const json_t *panels, json_t *ids)
{
	size_t i;
	json_t *p;

	assert_true(json_is_array(panels));
	json_array_foreach(panels, i, p)
	{
		const char *type = json_string_value(json_object_get(p, "type"));
		const char *title = json_string_value(json_object_get(p, "title"));
		json_t *id = json_object_get(p, "id"), *grid = json_object_get(p, "gridPos");
		json_t *targets = json_object_get(p, "targets"), *t;
		char key[32];
		size_t k;

		assert_non_null(type);
		assert_non_null(title);
		if (!json_is_integer(id))
			fail_msg("panel '%s' has no integer id", title);
		snprintf(key, sizeof(key), "%lld", (long long)json_integer_value(id));
		if (json_object_get(ids, key))
			fail_msg("panel '%s' has the id %s of another panel", title, key);
		json_object_set_new(ids, key, json_true());
		for (const char *const *f = (const char *const[]){"h", "w", "x", "y", NULL}; *f;
		     f++)
			if (!json_is_integer(json_object_get(grid, *f)))
				fail_msg("panel '%s': gridPos.%s is not an integer", title, *f);
		if (json_integer_value(json_object_get(grid, "x")) +
			    json_integer_value(json_object_get(grid, "w")) >
		    24)
			fail_msg("panel '%s' is wider than Grafana's 24 columns", title);
		if (!strcmp(type, "row")) {
			walk_panels(json_object_get(p, "panels"), ids);
			continue;
		}
		check_ds(json_object_get(p, "datasource"), title);
		if (json_array_size(targets) == 0)
			fail_msg("panel '%s' has no targets", title);
		json_array_foreach(targets, k, t)
		{
			const char *expr = json_string_value(json_object_get(t, "expr"));
			const char *ref = json_string_value(json_object_get(t, "refId"));

			check_ds(json_object_get(t, "datasource"), title);
			if (!expr || !*expr || !ref || !*ref)
				fail_msg("panel '%s': target %zu needs an expr and a refId", title,
					 k);
			for (size_t m = 0; m < k; m++)
				if (!strcmp(json_string_value(json_object_get(
						    json_array_get(targets, m), "refId")),
					    ref))
					fail_msg("panel '%s': refId %s twice", title, ref);
			assert_true(nexprs < MAX_EXPRS);
			exprs[nexprs++] = expr;
			expr_names(expr);
		}
	}
}

static int setup_dashboard(void **state)
{
	const char *src = getenv("LOOM_SRCDIR");
	char path[600];
	json_error_t jerr;

	(void)state;
	snprintf(path, sizeof(path), "%s/%s", src ? src : ".", DASHBOARD);
	dash = json_load_file(path, 0, &jerr);
	if (!dash) {
		fprintf(stderr, "%s:%d:%d: %s\n", path, jerr.line, jerr.column, jerr.text);
		return -1;
	}
	return 0;
}

static int teardown_dashboard(void **state)
{
	(void)state;
	json_decref(dash);
	return 0;
}

/* What Grafana's import of an exported dashboard needs, and what the dashboard must show. */
static void test_dashboard_shape(void **state)
{
	static const char *const required[] = {
		"loom_jobs",
		"loom_coflows",
		"loom_agents_connected",
		"loom_decision_seconds_bucket",
		"loom_push_seconds_bucket",
		"loom_tables_sent_total",
		"loom_unknown_flows_total",
		"loom_journal_commits_total",
	};
	json_t *inputs = json_object_get(dash, "__inputs"), *in, *v, *ids = json_object();
	bool ds_input = false, ds_required = false;
	size_t i;

	(void)state;
	json_array_foreach(inputs, i,
			   in) if (!strcmp(json_string_value(json_object_get(in, "name")) ?: "",
					   "DS_PROMETHEUS") &&
				   !strcmp(json_string_value(json_object_get(in, "type")) ?: "",
					   "datasource") &&
				   !strcmp(json_string_value(json_object_get(in, "pluginId")) ?: "",
					   "prometheus")) ds_input = true;
	if (!ds_input)
		fail_msg("__inputs has no DS_PROMETHEUS datasource input of plugin prometheus");
	json_array_foreach(json_object_get(dash, "__requires"), i,
			   in) if (!strcmp(json_string_value(json_object_get(in, "id")) ?: "",
					   "prometheus")) ds_required = true;
	assert_true(ds_required);
	assert_true(json_is_integer(json_object_get(dash, "schemaVersion")));
	assert_true(json_integer_value(json_object_get(dash, "schemaVersion")) >= 30);
	assert_true(json_is_null(json_object_get(dash, "id"))); /* the importer gives one */
	assert_true(strlen(json_string_value(json_object_get(dash, "uid")) ?: "") > 0);
	assert_true(strlen(json_string_value(json_object_get(dash, "title")) ?: "") > 0);
	json_array_foreach(json_object_get(json_object_get(dash, "templating"), "list"), i, v)
	{
		const char *def = json_string_value(json_object_get(v, "definition"));

		if (json_object_get(v, "datasource"))
			check_ds(json_object_get(v, "datasource"), "a template variable");
		if (def)
			expr_names(def);
	}
	walk_panels(json_object_get(dash, "panels"), ids);
	json_decref(ids);
	assert_true(nexprs > 0);
	for (i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		size_t k;

		for (k = 0; k < nnames && strcmp(names[k], required[i]); k++)
			;
		if (k == nnames)
			fail_msg("the dashboard does not query %s", required[i]);
	}
}

/* ---- Prometheus ----------------------------------------------------------------------- */

static struct h_loomd H;
static struct h_agent agent;
static struct loom_client *client;
static char prom_dir[400], prom_log[420];
static uint16_t prom_port;
static pid_t prom_pid;

static void url_encode(const char *s, char *out, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		assert_true(n + 4 < size);
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~') {
			out[n++] = (char)c;
		} else {
			out[n++] = '%';
			out[n++] = hex[c >> 4];
			out[n++] = hex[c & 15];
		}
	}
	out[n] = '\0';
}

/* GET path from Prometheus; its JSON answer, which must say "status": "success". */
static json_t *prom_get(const char *path)
{
	json_error_t jerr;
	json_t *r;
	int code = h_http_get(prom_port, path, body, sizeof(body));

	if (code != 200)
		fail_msg("Prometheus GET %s: HTTP %d: %.500s", path, code, body);
	r = json_loads(body, 0, &jerr);
	if (!r)
		fail_msg("Prometheus GET %s: not JSON (%s): %.300s", path, jerr.text, body);
	if (strcmp(json_string_value(json_object_get(r, "status")) ?: "", "success") != 0)
		fail_msg("Prometheus GET %s: %.500s", path, body);
	return r;
}

/* An instant query's result vector (a new reference). */
static json_t *prom_query(const char *q)
{
	char enc[4096], path[4200];
	json_t *r, *res;

	url_encode(q, enc, sizeof(enc));
	snprintf(path, sizeof(path), "/api/v1/query?query=%s", enc);
	r = prom_get(path);
	res = json_object_get(json_object_get(r, "data"), "result");
	if (!json_is_array(res))
		fail_msg("query %s: no result vector: %.300s", q, body);
	json_incref(res);
	json_decref(r);
	return res;
}

/* The value of a query's only series (-1 when it has none, or more than one). */
static double prom_value(const char *q)
{
	json_t *res = prom_query(q);
	const char *v = json_string_value(
		json_array_get(json_object_get(json_array_get(res, 0), "value"), 1));
	double d = json_array_size(res) == 1 && v ? strtod(v, NULL) : -1;

	json_decref(res);
	return d;
}

/* A free TCP port on 127.0.0.1 (the kernel's pick; free again once closed). */
static uint16_t free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	uint16_t port = 0;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static int write_config(const char *path, int loomd_port)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fprintf(f,
		"global:\n"
		"  scrape_interval: 1s\n"
		"  scrape_timeout: 1s\n"
		"scrape_configs:\n"
		"  - job_name: loomd\n"
		"    static_configs:\n"
		"      - targets: ['127.0.0.1:%d']\n",
		loomd_port);
	return fclose(f) == 0 ? 0 : -EIO;
}

/*
 * Starts Prometheus on a free port and waits (bounded) until it is ready.
 * A port taken between free_port() and Prometheus's bind makes it exit: tried
 * again, three times at most. 0 or -1 (its log printed).
 */
static int prom_start(const char *config)
{
	for (int attempt = 0; attempt < 3; attempt++) {
		char a_config[600], a_tsdb[600], a_listen[64];
		uint64_t deadline = h_mono_ms() + PROM_START_MS;
		int status;

		prom_port = free_port();
		if (!prom_port)
			return -1;
		snprintf(a_config, sizeof(a_config), "--config.file=%s", config);
		snprintf(a_tsdb, sizeof(a_tsdb), "--storage.tsdb.path=%s/tsdb", prom_dir);
		snprintf(a_listen, sizeof(a_listen), "--web.listen-address=127.0.0.1:%u",
			 (unsigned)prom_port);
		prom_pid = fork();
		if (prom_pid < 0)
			return -1;
		if (prom_pid == 0) {
			int fd = open(prom_log, O_WRONLY | O_CREAT | O_APPEND, 0644);

			prctl(PR_SET_PDEATHSIG, SIGKILL); /* dies with a failed test */
			if (fd >= 0) {
				dup2(fd, 1);
				dup2(fd, 2);
			}
			execl(prometheus, prometheus, a_config, a_tsdb, a_listen,
			      "--log.level=warn", (char *)NULL);
			_exit(127);
		}
		while (h_mono_ms() < deadline) {
			struct sockaddr_in sa = {.sin_family = AF_INET,
						 .sin_port = htons(prom_port)};
			int fd;

			if (waitpid(prom_pid, &status, WNOHANG) == prom_pid) {
				prom_pid = 0;
				break;
			}
			/* connect first: h_http_get() would complain of every refusal */
			sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
				close(fd);
				if (h_http_get(prom_port, "/-/ready", body, sizeof(body)) == 200)
					return 0;
			} else if (fd >= 0) {
				close(fd);
			}
			h_sleep_ms(50);
		}
		if (prom_pid > 0) {
			fprintf(stderr, "Prometheus was not ready in %d ms\n", PROM_START_MS);
			kill(prom_pid, SIGKILL);
			waitpid(prom_pid, &status, 0);
			prom_pid = 0;
			break;
		}
		fprintf(stderr, "Prometheus ended before it was ready (port %u taken?)\n",
			(unsigned)prom_port);
	}
	h_print_log(prom_log);
	return -1;
}

static void client_tuple(uint32_t i, struct loom_client_tuple *ret)
{
	struct wire_tuple t;

	h_tuple(i, &t);
	memset(ret, 0, sizeof(*ret));
	ret->family = t.family;
	ret->protocol = t.protocol;
	ret->src_port = t.src_port;
	ret->dst_port = t.dst_port;
	memcpy(ret->src, t.src, sizeof(ret->src));
	memcpy(ret->dst, t.dst, sizeof(ret->dst));
}

/* Acknowledges the table the agent holds, as loom-agent does after applying it. */
static int agent_ack(struct h_agent *a)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__TableAck ack = LOOM__TABLE_ACK__INIT;

	ack.version = a->version;
	env.seq = ++a->seq;
	env.body_case = LOOM__ENVELOPE__BODY_TABLE_ACK;
	env.table_ack = &ack;
	return wire_send(a->fd, &env, WIRE_MAX_FRAME_DEFAULT, H_TIMEOUT_MS) < 0 ? -1 : 0;
}

/*
 * The workload: an agent on host 1; job 1 (coflow 11 of two flows from host
 * 1, then coflow 12 after it) and job 2 (coflow 21, one flow from host 1),
 * registered through libloom; the agent gets its table and acknowledges it,
 * then reports a flow nobody announced.
 */
static int register_workload(void)
{
	struct loom_client_flow f11[2] = {{.src_host = 1, .dst_host = 2, .bytes = 1 << 20},
					  {.src_host = 1, .dst_host = 3, .bytes = 1 << 20}};
	struct loom_client_flow f12[1] = {{.src_host = 2, .dst_host = 1, .bytes = 1 << 20}};
	struct loom_client_flow f21[1] = {{.src_host = 1, .dst_host = 4, .bytes = 4 << 20}};
	struct loom_client_coflow c1[2] = {{.id = 11, .flows = f11, .n_flows = 2},
					   {.id = 12, .flows = f12, .n_flows = 1}};
	struct loom_client_coflow c2[1] = {{.id = 21, .flows = f21, .n_flows = 1}};
	struct loom_client_edge e1 = {.parent = 11, .child = 12};
	struct loom_client_job j1 = {
		.id = 1, .name = "etl", .coflows = c1, .n_coflows = 2, .edges = &e1, .n_edges = 1};
	struct loom_client_job j2 = {.id = 2, .name = "shuffle", .coflows = c2, .n_coflows = 1};
	struct wire_tuple unknown;
	char addr[320];

	client_tuple(1, &f11[0].tuple);
	client_tuple(2, &f11[1].tuple);
	client_tuple(3, &f12[0].tuple);
	client_tuple(4, &f21[0].tuple);
	if (h_agent_connect(&agent, H.sock, 1) < 0)
		return -1;
	snprintf(addr, sizeof(addr), "unix:%s", H.sock);
	client = loom_client_connect(addr, NULL);
	if (!client || loom_client_job_register(client, &j1) < 0 ||
	    loom_client_job_register(client, &j2) < 0) {
		fprintf(stderr, "registering the workload: %s\n", loom_client_strerror());
		return -1;
	}
	/* a table with the new coflows reaches the agent (bounded) */
	for (int k = 0; k < 100 && h_agent_coflow_class(&agent, 21) < 0; k++) {
		if (h_agent_sync(&agent) < 0)
			return -1;
		if (h_agent_coflow_class(&agent, 21) < 0)
			h_sleep_ms(20);
	}
	if (h_agent_coflow_class(&agent, 21) < 0) {
		fprintf(stderr, "the agent got no table with coflow 21\n");
		return -1;
	}
	h_tuple(999, &unknown);
	if (agent_ack(&agent) < 0 || h_agent_stats(&agent, &unknown, 1500, false) < 0)
		return -1;
	return h_agent_sync(&agent); /* loomd has taken the ack and the report */
}

static int setup_prometheus(void **state)
{
	char config[500];
	int port;

	(void)state;
	if (h_loomd_prepare(&H) < 0)
		return -1;
	if (h_loomd_start(&H, (const char *const[]){"hosts=8", "metrics=127.0.0.1:0", NULL}) < 0)
		return -1;
	port = h_loomd_metrics_port(&H);
	if (port < 0) {
		h_print_log(H.log);
		return -1;
	}
	if (register_workload() < 0)
		return -1;
	snprintf(prom_dir, sizeof(prom_dir), "%s/prometheus", H.dir);
	snprintf(prom_log, sizeof(prom_log), "%s/prometheus.log", H.dir);
	snprintf(config, sizeof(config), "%s/prometheus.yml", prom_dir);
	if (mkdir(prom_dir, 0755) < 0 || write_config(config, port) < 0)
		return -1;
	return prom_start(config);
}

static int teardown_prometheus(void **state)
{
	(void)state;
	if (prom_pid > 0) {
		kill(prom_pid, SIGKILL);
		waitpid(prom_pid, NULL, 0);
		prom_pid = 0;
	}
	loom_client_free(client);
	if (agent.fd > 0)
		close(agent.fd);
	h_loomd_cleanup(&H);
	return 0;
}

/* The Grafana variables the dashboard's exprs may use, and what they stand for here. */
static void substitute(const char *expr, char *out, size_t size)
{
	static const char *const vars[][2] = {
		{"$__rate_interval", "1m"},
		{"$instance", ".*"},
	};
	size_t n = 0;

	while (*expr) {
		size_t v;

		for (v = 0; v < sizeof(vars) / sizeof(vars[0]); v++)
			if (!strncmp(expr, vars[v][0], strlen(vars[v][0])) &&
			    !ident_char(expr[strlen(vars[v][0])]))
				break;
		if (*expr == '$' && v == sizeof(vars) / sizeof(vars[0]))
			fail_msg("%s: a Grafana variable this test does not know", expr);
		if (*expr == '$') {
			assert_true(n + strlen(vars[v][1]) < size);
			memcpy(out + n, vars[v][1], strlen(vars[v][1]));
			n += strlen(vars[v][1]);
			expr += strlen(vars[v][0]);
		} else {
			assert_true(n + 1 < size);
			out[n++] = *expr++;
		}
	}
	out[n] = '\0';
}

/* The type a metric name promises: its family and "counter", "gauge" or "histogram". */
static const char *promised_type(const char *name, char *family, size_t size)
{
	static const char *const hist_suffixes[] = {"_bucket", "_sum", "_count"};
	size_t n = strlen(name);

	snprintf(family, size, "%s", name);
	for (size_t i = 0; i < 3; i++) {
		size_t k = strlen(hist_suffixes[i]);

		if (n > k && !strcmp(name + n - k, hist_suffixes[i])) {
			family[n - k] = '\0';
			return "histogram";
		}
	}
	if (n > 6 && !strcmp(name + n - 6, "_total"))
		return "counter";
	return "gauge";
}

static void test_prometheus_scrapes_loomd(void **state)
{
	uint64_t deadline = h_mono_ms() + PROM_WAIT_MS;
	json_t *meta, *data;
	double scrapes = -1;
	int status;

	(void)state;
	/* the names come from the dashboard (test_dashboard_shape ran first) */
	assert_true(nnames > 0);
	/* a few scrapes of loomd holding the workload */
	while (h_mono_ms() < deadline) {
		scrapes = prom_value("count_over_time(up{job=\"loomd\"}[5m])");
		if (scrapes >= SCRAPES_WAIT)
			break;
		h_sleep_ms(250);
	}
	if (scrapes < SCRAPES_WAIT) {
		h_print_log(prom_log);
		fail_msg("Prometheus scraped loomd %g times in %d ms, expected %d", scrapes,
			 PROM_WAIT_MS, SCRAPES_WAIT);
	}
	assert_true(prom_value("up{job=\"loomd\"}") == 1);

	/* every metric of the dashboard: there, with the type its name promises */
	meta = prom_get("/api/v1/metadata");
	data = json_object_get(meta, "data");
	for (size_t i = 0; i < nnames; i++) {
		char family[NAME_MAX_LEN];
		const char *want = promised_type(names[i], family, sizeof(family));
		const char *got = json_string_value(
			json_object_get(json_array_get(json_object_get(data, family), 0), "type"));
		json_t *res;

		if (!got)
			fail_msg("%s (family %s): Prometheus has no metadata for it", names[i],
				 family);
		if (strcmp(got, want) != 0)
			fail_msg("%s: family %s is a %s in /metrics, the dashboard reads a %s",
				 names[i], family, got, want);
		res = prom_query(names[i]);
		if (json_array_size(res) == 0)
			fail_msg("%s: no series in Prometheus", names[i]);
		json_decref(res);
	}
	json_decref(meta);

	/* every query of the dashboard evaluates, to data */
	for (size_t i = 0; i < nexprs; i++) {
		char q[4096];
		json_t *res;

		substitute(exprs[i], q, sizeof(q));
		res = prom_query(q);
		if (json_array_size(res) == 0)
			fail_msg("the dashboard's query %s gives no data", q);
		json_decref(res);
	}

	/* and the values are the workload's */
	assert_true(prom_value("loom_jobs") == 2);
	assert_true(prom_value("loom_coflows") == 3);
	assert_true(prom_value("loom_agents_connected") == 1);
	assert_true(prom_value("loom_frameworks_connected") == 1);
	assert_true(prom_value("loom_unknown_flows_total") == 1);
	assert_true(prom_value("loom_tables_sent_total") >= 1);
	assert_true(prom_value("loom_push_seconds_count") >= 1);
	/* the agent acknowledged the table of the pass that took job 2 */
	assert_true(prom_value("loom_enforce_seconds_count") >= 1);
	assert_true(prom_value("loom_enforce_seconds_count") <= prom_value("loom_passes_total"));
	assert_true(prom_value("loom_decision_seconds_count") >= 1);
	assert_true(prom_value("loom_journal_commits_total") >= 1);
	assert_true(prom_value("loom_decision_seconds_bucket{le=\"+Inf\"}") ==
		    prom_value("loom_decision_seconds_count"));
	assert_true(prom_value("count(loom_decision_seconds_bucket)") >= 2);

	/* Prometheus stops cleanly on SIGTERM; so does loomd */
	kill(prom_pid, SIGTERM);
	status = h_wait(prom_pid, h_mono_ms() + 10000);
	prom_pid = 0;
	assert_int_equal(h_check_exit("prometheus", status, 0, NULL), 0);
	close(agent.fd);
	agent.fd = -1;
	client = loom_client_free(client);
	assert_int_equal(h_loomd_stop_clean(&H), 0);
}

static int setup_all(void **state)
{
	if (setup_dashboard(state) < 0)
		return -1;
	if (!prometheus[0])
		return 0;
	return setup_prometheus(state);
}

static int teardown_all(void **state)
{
	if (prometheus[0])
		teardown_prometheus(state);
	return teardown_dashboard(state);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dashboard_shape),
		cmocka_unit_test(test_prometheus_scrapes_loomd),
	};
	size_t n = sizeof(tests) / sizeof(tests[0]);

	n = precond_leave_out(tests, n, test_prometheus_scrapes_loomd,
			      precond_find_program("prometheus", prometheus, sizeof(prometheus)) ?
				      NULL :
				      "prometheus is not installed (Debian: apt-get "
				      "install prometheus; scripts/install-deps.sh)");
	return precond_run(tests, n, setup_all, teardown_all);
}
