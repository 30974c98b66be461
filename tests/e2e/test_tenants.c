/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tenants, quotas and socket permissions of loomd (docs/security.md), end
 * to end on its Unix socket. One loomd runs with a tokens file of six
 * tenants (alpha and beta; qj, qc, qf and qr with a quota each) and the
 * virtual clock (so the announce_rate bucket refills only when the test
 * moves the clock).
 *
 * Cases: a framework without a token, with a wrong one, or with a token
 * where loomd has no tokens file is refused at Hello (DENIED) and is not
 * counted; libloom's $LOOM_TOKEN works and a wrong one fails with EACCES.
 * Tenant beta registering, announcing for, finishing or unregistering
 * alpha's job gets DENIED and the registry (admin jobs, coflows, tenants)
 * is exactly as before. Each quota (jobs, coflows, flows, announce_rate)
 * refused with LIMIT naming it, changing nothing; freed quota is usable
 * again. A restart restores each job's tenant from the journal. A tokens
 * file with a bad line stops loomd with "path:line: what". The sockets are
 * 0660 (listen_unix) and 0600 (admin), with unix_group/admin_group their
 * group; a group that does not exist stops loomd. set-policy and dump are
 * logged with the caller's uid.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "controlplane/client/loom.h"
#include "harness.h"

static struct h_loomd H;
static char TOKENS[400];
static uint64_t CLOCK_NS;

#define TOK_ALPHA "alpha-0123456789abcdef0123"
#define TOK_BETA  "beta-0123456789abcdef01234"
#define TOK_QJ    "qj-0123456789abcdef0123456"
#define TOK_QC    "qc-0123456789abcdef0123456"
#define TOK_QF    "qf-0123456789abcdef0123456"
#define TOK_QR    "qr-0123456789abcdef0123456"

static const char *const OPTS[] = {"hosts=4",
				   "policy=sebf",
				   "virtual_clock=yes",
				   "tenant_max_jobs=50",
				   NULL /* tokens=..., filled in by setup */,
				   NULL};

/* ---- requests ------------------------------------------------------------------------------ */

struct res {
	int code; /* -1: no reply */
	uint32_t accepted;
	char msg[512];
};

static uint64_t SEQ = 10;

/* Sends env and fills ret from its Reply (or HelloReply). */
static struct res call(int fd, Loom__Envelope *env)
{
	struct res r = {.code = -1};
	Loom__Envelope *rep;
	const Loom__Error *e = NULL;

	env->seq = ++SEQ;
	rep = h_call(fd, env);
	if (!rep)
		return r;
	if (rep->body_case == LOOM__ENVELOPE__BODY_REPLY) {
		e = rep->reply->error;
		r.accepted = rep->reply->accepted;
	} else if (rep->body_case == LOOM__ENVELOPE__BODY_HELLO_REPLY) {
		e = rep->hello_reply->error;
	}
	r.code = e ? (int)e->code : 0;
	snprintf(r.msg, sizeof(r.msg), "%s", e && e->message ? e->message : "");
	wire_free(rep);
	return r;
}

/* A framework connection with token (NULL: none); the Hello's result in *ret. */
static int fw_open(const char *token, struct res *ret)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Hello h = LOOM__HELLO__INIT;
	int fd = h_connect(H.sock);

	assert_true(fd >= 0);
	h.version_min = WIRE_VERSION_MIN;
	h.version_max = WIRE_VERSION_MAX;
	h.role = LOOM__ROLE__FRAMEWORK;
	h.name = (char *)"e2e-tenants";
	h.token = (char *)(token ? token : "");
	env.body_case = LOOM__ENVELOPE__BODY_HELLO;
	env.hello = &h;
	*ret = call(fd, &env);
	return fd;
}

/* A framework connection of the tenant of token; Hello must succeed. */
static int fw(const char *token)
{
	struct res r;
	int fd = fw_open(token, &r);

	if (r.code != 0)
		fail_msg("hello with a good token: code %d (%s)", r.code, r.msg);
	return fd;
}

/*
 * Registers job with ncoflows coflows (ids job*10+i) of nflows flows each
 * (tuples from job*100); open: the last coflow has no flows and is open.
 */
static struct res reg(int fd, uint64_t job, int ncoflows, int nflows, bool open)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__RegisterJob rj = LOOM__REGISTER_JOB__INIT;
	Loom__CoflowSpec cs[8], *csp[8];
	Loom__FlowSpec fs[8][8], *fsp[8][8];
	Loom__FiveTuple pt[8][8];
	struct wire_tuple wt;

	assert_true(ncoflows <= 8 && nflows <= 8);
	for (int i = 0; i < ncoflows; i++) {
		loom__coflow_spec__init(&cs[i]);
		cs[i].id = job * 10 + (uint64_t)i;
		csp[i] = &cs[i];
		if (open && i == ncoflows - 1)
			continue;
		for (int f = 0; f < nflows; f++) {
			loom__flow_spec__init(&fs[i][f]);
			h_tuple((uint32_t)(job * 100 + (uint64_t)i * 10 + (uint64_t)f), &wt);
			wire_tuple_to_pb(&wt, &pt[i][f]);
			fs[i][f].src_host = 0;
			fs[i][f].dst_host = 1;
			fs[i][f].bytes = 1000000;
			fs[i][f].tuple = &pt[i][f];
			fsp[i][f] = &fs[i][f];
		}
		cs[i].n_flows = (size_t)nflows;
		cs[i].flows = fsp[i];
	}
	rj.job_id = job;
	rj.n_coflows = (size_t)ncoflows;
	rj.coflows = csp;
	rj.tenant = (char *)"beta"; /* a client's tenant field is ignored */
	env.body_case = LOOM__ENVELOPE__BODY_REGISTER_JOB;
	env.register_job = &rj;
	return call(fd, &env);
}

/* Announces n flows for coflow (tuples from first, hosts 0 -> 1) in one request. */
static struct res announce(int fd, uint64_t coflow, uint32_t first, int n)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__AnnounceFlows af = LOOM__ANNOUNCE_FLOWS__INIT;
	Loom__AnnounceFlow a[8], *ap[8];
	Loom__FlowSpec fs[8];
	Loom__FiveTuple pt[8];
	struct wire_tuple wt;

	assert_true(n <= 8);
	for (int i = 0; i < n; i++) {
		loom__announce_flow__init(&a[i]);
		loom__flow_spec__init(&fs[i]);
		h_tuple(first + (uint32_t)i, &wt);
		wire_tuple_to_pb(&wt, &pt[i]);
		fs[i].src_host = 0;
		fs[i].dst_host = 1;
		fs[i].tuple = &pt[i];
		a[i].coflow_id = coflow;
		a[i].flow = &fs[i];
		ap[i] = &a[i];
	}
	af.n_flows = (size_t)n;
	af.flows = ap;
	env.body_case = LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS;
	env.announce_flows = &af;
	return call(fd, &env);
}

/* CoflowDone, JobDone or Unregister of id. */
static struct res simple(int fd, Loom__Envelope__BodyCase which, uint64_t id)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__CoflowDone cd = LOOM__COFLOW_DONE__INIT;
	Loom__JobDone jd = LOOM__JOB_DONE__INIT;
	Loom__Unregister un = LOOM__UNREGISTER__INIT;

	env.body_case = which;
	cd.coflow_id = jd.job_id = un.job_id = id;
	env.coflow_done = &cd;
	if (which == LOOM__ENVELOPE__BODY_JOB_DONE)
		env.job_done = &jd;
	else if (which == LOOM__ENVELOPE__BODY_UNREGISTER)
		env.unregister = &un;
	return call(fd, &env);
}

/* r must be code with a message holding needle. */
static void expect(struct res r, int code, const char *needle)
{
	if (r.code != code || (needle && !strstr(r.msg, needle)))
		fail_msg("expected code %d with \"%s\", got %d: \"%s\"", code, needle ? needle : "",
			 r.code, r.msg);
	if (code)
		fprintf(stderr, "refused as expected: %s\n", r.msg);
}

#define OK(r) expect((r), 0, NULL)

/* ---- loomd's state --------------------------------------------------------------------------- */

/* What the registry holds, as the admin socket says: jobs, every coflow, tenants' use. */
static json_t *state(void)
{
	json_t *jobs = h_admin(&H, "jobs", 0, NULL), *coflows = h_admin(&H, "coflows", 0, NULL),
	       *tenants = h_admin(&H, "tenants", 0, NULL);

	assert_non_null(jobs);
	assert_non_null(coflows);
	assert_non_null(tenants);
	return json_pack("{s:o, s:o, s:o}", "jobs", jobs, "coflows", coflows, "tenants", tenants);
}

static void assert_state(json_t *before)
{
	json_t *now = state();

	if (!json_equal(before, now)) {
		char *a = json_dumps(before, JSON_COMPACT), *b = json_dumps(now, JSON_COMPACT);

		fprintf(stderr, "before: %s\nnow:    %s\n", a, b);
		free(a);
		free(b);
		fail_msg("a refused request changed the registry");
	}
	json_decref(now);
}

/* The tenant named name in admin tenants (a new reference). */
static json_t *tenant(const char *name)
{
	json_t *all = h_admin(&H, "tenants", 0, NULL), *t = NULL, *x;
	size_t i;

	assert_non_null(all);
	json_array_foreach(all, i, x)
	{
		if (!strcmp(json_string_value(json_object_get(x, "name")), name))
			t = json_incref(x);
	}
	json_decref(all);
	if (!t)
		fail_msg("loomd knows no tenant %s", name);
	return t;
}

static long long tenant_use(const char *name, const char *key)
{
	json_t *t = tenant(name);
	long long v = json_integer_value(json_object_get(t, key));

	json_decref(t);
	return v;
}

/* The tenant of job id in admin jobs ("" when there is no such job). */
static const char *job_tenant(uint64_t id, char *buf, size_t size)
{
	json_t *jobs = h_admin(&H, "jobs", 0, NULL), *j;
	size_t i;

	assert_non_null(jobs);
	buf[0] = 0;
	json_array_foreach(jobs, i, j)
	{
		if ((uint64_t)json_integer_value(json_object_get(j, "id")) == id)
			snprintf(buf, size, "%s", json_string_value(json_object_get(j, "tenant")));
	}
	json_decref(jobs);
	return buf;
}

static long long frameworks(void)
{
	return h_admin_int(&H, "stats", "frameworks");
}

/* Whether the log at path holds needle. */
static bool file_has(const char *path, const char *needle)
{
	char buf[1 << 16];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = 0;
	return strstr(buf, needle) != NULL;
}

/* Whether loomd's log holds needle (bounded wait: the line may still be on its way). */
static bool log_has(const char *needle)
{
	for (int i = 0; i < 100; i++) {
		if (file_has(H.log, needle))
			return true;
		h_sleep_ms(20);
	}
	fprintf(stderr, "loomd's log does not say \"%s\"\n", needle);
	h_print_log(H.log);
	return false;
}

/* ---- fixtures -------------------------------------------------------------------------------- */

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static int start(void)
{
	static char opt[420];
	const char *opts[8];
	int n = 0;

	for (; OPTS[n]; n++)
		opts[n] = OPTS[n];
	snprintf(opt, sizeof(opt), "tokens=%s", TOKENS);
	opts[n++] = opt;
	opts[n] = NULL;
	CLOCK_NS = 0;
	return h_loomd_start(&H, opts);
}

static int setup(void **state_)
{
	(void)state_;
	if (h_loomd_prepare(&H) < 0)
		return -1;
	snprintf(TOKENS, sizeof(TOKENS), "%s/tokens", H.dir);
	write_file(TOKENS,
		   "# tenants of the test\n"
		   "alpha  " TOK_ALPHA "\n"
		   "beta   " TOK_BETA "    # beta's\n"
		   "qj     " TOK_QJ "  jobs=1\n"
		   "qc     " TOK_QC "  coflows=2\n"
		   "qf     " TOK_QF "  flows=3\n"
		   "qr     " TOK_QR "  announce_rate=2\n",
		   0600);
	return start();
}

static int teardown(void **state_)
{
	(void)state_;
	h_loomd_cleanup(&H);
	return 0;
}

/* ---- tests ------------------------------------------------------------------------------------ */

/* No token, a wrong token: refused at Hello, not counted, nothing more on that connection. */
static void test_token_refused(void **state_)
{
	long long before = frameworks();
	json_t *st = state();
	struct res r;
	int fd;

	(void)state_;
	fd = fw_open(NULL, &r);
	expect(r, LOOM__ERROR_CODE__DENIED, "a framework needs a token (LOOM_TOKEN)");
	/* loomd closed it: a request gets no reply */
	assert_int_equal(reg(fd, 1, 1, 1, false).code, -1);
	close(fd);
	fd = fw_open("alpha-0123456789abcdef0124", &r);
	expect(r, LOOM__ERROR_CODE__DENIED, "the token is not in loomd's tokens file");
	assert_null(strstr(r.msg, "alpha-0123456789abcdef0124"));
	close(fd);
	fd = fw_open(TOK_ALPHA "x", &r);
	expect(r, LOOM__ERROR_CODE__DENIED, "not in loomd's tokens file");
	close(fd);
	assert_true(log_has("refused: hello: the token is not in loomd's tokens file"));
	assert_false(file_has(H.log, "alpha-0123456789abcdef0124"));
	assert_int_equal(frameworks(), before);
	assert_state(st);
	json_decref(st);
}

/* libloom: $LOOM_TOKEN names the tenant; a wrong one fails with EACCES. */
static void test_libloom_token(void **state_)
{
	const struct loom_client_options opts = {.timeout_ms = 3000};
	struct loom_client_flow fl = {.src_host = 0, .dst_host = 1, .bytes = 1000};
	struct loom_client_coflow cf = {.id = 900, .flows = &fl, .n_flows = 1};
	struct loom_client_job job = {.id = 90, .coflows = &cf, .n_coflows = 1};
	struct loom_client *c;
	char addr[340], buf[64];
	json_t *st;

	(void)state_;
	snprintf(addr, sizeof(addr), "unix:%s", H.sock);
	setenv(LOOM_CLIENT_ENV_TOKEN, TOK_BETA, 1);
	c = loom_client_connect(addr, &opts);
	if (!c)
		fail_msg("libloom with a good token: %s", loom_client_strerror());
	assert_int_equal(loom_client_job_register(c, &job), 0);
	assert_string_equal(job_tenant(90, buf, sizeof(buf)), "beta");
	assert_int_equal(loom_client_job_unregister(c, 90), 0);
	loom_client_free(c);

	st = state();
	setenv(LOOM_CLIENT_ENV_TOKEN, "beta-0123456789abcdef0000", 1);
	assert_null(loom_client_connect(addr, &opts));
	assert_int_equal(errno, EACCES);
	assert_non_null(strstr(loom_client_strerror(), "not in loomd's tokens file"));
	unsetenv(LOOM_CLIENT_ENV_TOKEN);
	assert_null(loom_client_connect(addr, &opts));
	assert_int_equal(errno, EACCES);
	assert_non_null(strstr(loom_client_strerror(), "needs a token"));
	assert_state(st);
	json_decref(st);
}

/* beta touching alpha's job: DENIED each time, and the registry is exactly as it was. */
static void test_cross_tenant(void **state_)
{
	int a = fw(TOK_ALPHA), b = fw(TOK_BETA);
	char buf[64];
	json_t *st;

	(void)state_;
	/* job 1: coflow 10 with one flow, coflow 11 open */
	OK(reg(a, 1, 2, 1, true));
	assert_string_equal(job_tenant(1, buf, sizeof(buf)), "alpha");
	st = state();
	expect(reg(b, 1, 1, 1, false), LOOM__ERROR_CODE__DENIED,
	       "job 1 belongs to another tenant (this connection is tenant 'beta')");
	expect(announce(b, 11, 5000, 1), LOOM__ERROR_CODE__DENIED,
	       "coflow 11 belongs to another tenant");
	expect(announce(b, 11, 5000, 3), LOOM__ERROR_CODE__DENIED, "flow 0 of 3: coflow 11");
	expect(simple(b, LOOM__ENVELOPE__BODY_COFLOW_DONE, 11), LOOM__ERROR_CODE__DENIED,
	       "coflow 11 belongs to another tenant");
	expect(simple(b, LOOM__ENVELOPE__BODY_COFLOW_DONE, 10), LOOM__ERROR_CODE__DENIED,
	       "coflow 10 belongs to another tenant");
	expect(simple(b, LOOM__ENVELOPE__BODY_JOB_DONE, 1), LOOM__ERROR_CODE__DENIED,
	       "job 1 belongs to another tenant");
	expect(simple(b, LOOM__ENVELOPE__BODY_UNREGISTER, 1), LOOM__ERROR_CODE__DENIED,
	       "job 1 belongs to another tenant");
	assert_state(st);
	json_decref(st);
	/* alpha still owns and changes it */
	OK(announce(a, 11, 5000, 1));
	OK(simple(a, LOOM__ENVELOPE__BODY_COFLOW_DONE, 11));
	OK(simple(a, LOOM__ENVELOPE__BODY_UNREGISTER, 1));
	assert_string_equal(job_tenant(1, buf, sizeof(buf)), "");
	/* and beta may take the id now that it is free */
	OK(reg(b, 1, 1, 1, false));
	assert_string_equal(job_tenant(1, buf, sizeof(buf)), "beta");
	expect(simple(a, LOOM__ENVELOPE__BODY_UNREGISTER, 1), LOOM__ERROR_CODE__DENIED,
	       "(this connection is tenant 'alpha')");
	OK(simple(b, LOOM__ENVELOPE__BODY_UNREGISTER, 1));
	close(a);
	close(b);
}

/* The config's tenant_max_jobs for tenants without their own; the tokens file's otherwise. */
static void test_quota_settings(void **state_)
{
	json_t *t;

	(void)state_;
	t = tenant("alpha");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "quota"), "jobs")),
			 50);
	json_decref(t);
	t = tenant("qj");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "quota"), "jobs")),
			 1);
	json_decref(t);
	t = tenant("qr");
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(t, "quota"), "announce_rate")),
		2);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "quota"), "jobs")),
			 50);
	json_decref(t);
}

static void test_quota_jobs(void **state_)
{
	int fd = fw(TOK_QJ);
	json_t *st;

	(void)state_;
	OK(reg(fd, 100, 1, 1, false));
	st = state();
	expect(reg(fd, 101, 1, 1, false), LOOM__ERROR_CODE__LIMIT,
	       "job 101: tenant 'qj' holds 1 jobs, its quota 'jobs'");
	assert_state(st);
	json_decref(st);
	assert_int_equal(tenant_use("qj", "jobs"), 1);
	/* a job gone frees its place */
	OK(simple(fd, LOOM__ENVELOPE__BODY_UNREGISTER, 100));
	OK(reg(fd, 101, 1, 1, false));
	OK(simple(fd, LOOM__ENVELOPE__BODY_UNREGISTER, 101));
	assert_int_equal(tenant_use("qj", "jobs"), 0);
	close(fd);
}

static void test_quota_coflows(void **state_)
{
	int fd = fw(TOK_QC);
	json_t *st;

	(void)state_;
	OK(reg(fd, 200, 2, 1, false));
	st = state();
	expect(reg(fd, 201, 1, 1, false), LOOM__ERROR_CODE__LIMIT,
	       "1 more coflows would exceed tenant 'qc''s quota 'coflows' (2; it holds 2)");
	assert_state(st);
	json_decref(st);
	assert_int_equal(tenant_use("qc", "coflows"), 2);
	OK(simple(fd, LOOM__ENVELOPE__BODY_UNREGISTER, 200));
	close(fd);
}

static void test_quota_flows(void **state_)
{
	int fd = fw(TOK_QF);
	json_t *st;
	struct res r;

	(void)state_;
	/* job 300: coflow 3000 with 2 flows, coflow 3001 open */
	OK(reg(fd, 300, 2, 2, true));
	OK(announce(fd, 3001, 7000, 1));
	st = state();
	r = announce(fd, 3001, 7001, 2);
	expect(r, LOOM__ERROR_CODE__LIMIT, "tenant 'qf' holds 3 flows, its quota 'flows'");
	assert_int_equal(r.accepted, 0);
	expect(reg(fd, 301, 1, 1, false), LOOM__ERROR_CODE__LIMIT,
	       "1 more flows would exceed tenant 'qf''s quota 'flows' (3; it holds 3)");
	assert_state(st);
	json_decref(st);
	assert_int_equal(tenant_use("qf", "flows"), 3);
	OK(simple(fd, LOOM__ENVELOPE__BODY_UNREGISTER, 300));
	assert_int_equal(tenant_use("qf", "flows"), 0);
	close(fd);
}

/* announce_rate 2: two of three flows in one request, the third refused; a second later, more. */
static void test_quota_announce_rate(void **state_)
{
	int fd = fw(TOK_QR);
	json_t *st;
	struct res r;
	char now[32];

	(void)state_;
	OK(reg(fd, 400, 1, 0, true));
	r = announce(fd, 4000, 8000, 3);
	expect(r, LOOM__ERROR_CODE__LIMIT,
	       "flow 2 of 3: flow of coflow 4000: tenant 'qr' announces faster than its quota "
	       "'announce_rate' (2 flows per second)");
	assert_int_equal(r.accepted, 2);
	assert_int_equal(tenant_use("qr", "flows"), 2);
	st = state();
	expect(announce(fd, 4000, 8002, 1), LOOM__ERROR_CODE__LIMIT, "'announce_rate'");
	assert_state(st);
	json_decref(st);
	/* the (virtual) clock moves one second: two more */
	CLOCK_NS += 1000000000ULL;
	snprintf(now, sizeof(now), "%llu", (unsigned long long)CLOCK_NS);
	json_decref(h_admin(&H, "clock-set", 1, (const char *const[]){now}));
	r = announce(fd, 4000, 8002, 2);
	OK(r);
	assert_int_equal(r.accepted, 2);
	assert_int_equal(tenant_use("qr", "flows"), 4);
	OK(simple(fd, LOOM__ENVELOPE__BODY_UNREGISTER, 400));
	close(fd);
}

/* set-policy and dump are logged with the caller's uid. */
static void test_admin_logged(void **state_)
{
	char want[128];
	json_t *r;

	(void)state_;
	r = h_admin(&H, "set-policy", 1, (const char *const[]){"sincronia"});
	assert_non_null(r);
	json_decref(r);
	snprintf(want, sizeof(want), "policy: sebf -> sincronia (admin set-policy, uid %u, pid",
		 (unsigned)getuid());
	assert_true(log_has(want));
	r = h_admin(&H, "set-policy", 1, (const char *const[]){"sebf"});
	json_decref(r);
	r = h_admin(&H, "dump", 0, NULL);
	assert_non_null(r);
	json_decref(r);
	snprintf(want, sizeof(want), "admin dump (uid %u, pid", (unsigned)getuid());
	assert_true(log_has(want));
}

static void assert_socket(const char *path, unsigned mode, gid_t gid)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	if ((st.st_mode & 0777) != mode)
		fail_msg("%s: mode %03o, expected %03o", path, st.st_mode & 0777, mode);
	assert_int_equal(st.st_gid, gid);
}

/*
 * Runs loomd (-f -c /dev/null, its sockets and journal in a directory of
 * its own, plus the "-o" settings sets) until it exits (bounded): it must
 * exit 1, leave no sanitizer report, and its stderr must hold needle.
 */
static void expect_start_error(const char *const *sets, const char *needle)
{
	const char *loomd = getenv("LOOMD");
	char o_sock[340], o_admin[340], o_journal[340];
	char *argv[48];
	struct h_loomd h2;
	int n = 0;
	pid_t pid;

	assert_int_equal(h_loomd_prepare(&h2), 0);
	snprintf(o_sock, sizeof(o_sock), "listen_unix=%s", h2.sock);
	snprintf(o_admin, sizeof(o_admin), "admin_socket=%s", h2.admin);
	snprintf(o_journal, sizeof(o_journal), "journal=%s", h2.journal);
	argv[n++] = (char *)(loomd ? loomd : "controlplane/loomd/loomd");
	argv[n++] = (char *)"-f";
	argv[n++] = (char *)"-c";
	argv[n++] = (char *)"/dev/null";
	{
		const char *base[] = {o_sock, o_admin, o_journal, "listen_tcp=", "metrics="};

		for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++) {
			argv[n++] = (char *)"-o";
			argv[n++] = (char *)base[i];
		}
	}
	for (int i = 0; sets[i] && n < 44; i++) {
		argv[n++] = (char *)"-o";
		argv[n++] = (char *)sets[i];
	}
	argv[n] = NULL;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(h2.log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0)
			_exit(126);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	assert_int_equal(
		h_check_exit("loomd (bad start)", h_wait(pid, h_mono_ms() + 10000), 1, h2.log), 0);
	if (!file_has(h2.log, needle)) {
		h_print_log(h2.log);
		fail_msg("loomd's stderr does not say \"%s\"", needle);
	}
	fprintf(stderr, "refused to start as expected: %s\n", needle);
	h_loomd_cleanup(&h2);
}

/* listen_unix 0660 and the admin socket 0600; with unix_group and admin_group, their group. */
static void test_socket_modes(void **state_)
{
	struct group *g = getgrgid(getgid());
	char ug[128], ag[128];
	struct h_loomd h2;

	(void)state_;
	assert_socket(H.sock, 0660, getgid());
	assert_socket(H.admin, 0600, getgid());
	if (!g)
		fail_msg("this process's group %u has no name", (unsigned)getgid());
	snprintf(ug, sizeof(ug), "unix_group=%s", g->gr_name);
	snprintf(ag, sizeof(ag), "admin_group=%s", g->gr_name);
	assert_int_equal(h_loomd_prepare(&h2), 0);
	assert_int_equal(h_loomd_start(&h2, (const char *const[]){ug, ag, NULL}), 0);
	assert_socket(h2.sock, 0660, getgid());
	assert_socket(h2.admin, 0660, getgid());
	assert_int_equal(h_loomd_stop_clean(&h2), 0);
	h_loomd_cleanup(&h2);
	expect_start_error((const char *const[]){"unix_group=no-such-group-loom", NULL},
			   "unix_group 'no-such-group-loom': no such group");
	expect_start_error((const char *const[]){"admin_group=no-such-group-loom", NULL},
			   "admin_group 'no-such-group-loom': no such group");
}

/* A tokens file with a bad line, or none at the path: loomd does not start, and says where. */
static void test_bad_tokens_file(void **state_)
{
	static const struct {
		const char *text, *needle;
	} cases[] = {
		{"alpha " TOK_ALPHA "\nbroken\n", ":2: tenant broken has no token"},
		{"# c\n\nalpha short\n", ":3: tenant alpha: its token has 5 characters"},
		{"alpha " TOK_ALPHA "\nbeta " TOK_ALPHA "\n",
		 ":2: this token is also on line 1 (tenant alpha)"},
		{"alpha " TOK_ALPHA " jobs=lots\n", ":1: tenant alpha: quota jobs: 'lots' is not a "
						    "whole number"},
		{"alpha " TOK_ALPHA " nodes=1\n", ":1: tenant alpha: unknown quota 'nodes'"},
		{"al/pha " TOK_ALPHA "\n", ":1: 'al/pha' is not a tenant name"},
	};
	char path[400], opt[420], needle[600];

	(void)state_;
	snprintf(path, sizeof(path), "%s/bad.tokens", H.dir);
	snprintf(opt, sizeof(opt), "tokens=%s", path);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		write_file(path, cases[i].text, 0600);
		snprintf(needle, sizeof(needle), "%s%s", path, cases[i].needle);
		expect_start_error((const char *const[]){opt, NULL}, needle);
	}
	snprintf(opt, sizeof(opt), "tokens=%s/none.tokens", H.dir);
	snprintf(needle, sizeof(needle), "tokens %s/none.tokens: No such file or directory", H.dir);
	expect_start_error((const char *const[]){opt, NULL}, needle);
}

/* Without a tokens file every framework is tenant "default"; a token is refused. */
static void test_no_tokens_file(void **state_)
{
	struct h_loomd h2, saved = H;
	char buf[64];
	struct res r;
	int fd;

	(void)state_;
	assert_int_equal(h_loomd_prepare(&h2), 0);
	assert_int_equal(h_loomd_start(&h2, (const char *const[]){"hosts=4", NULL}), 0);
	H = h2; /* the helpers talk to H */
	fd = fw_open(NULL, &r);
	OK(r);
	OK(reg(fd, 7, 1, 1, false));
	assert_string_equal(job_tenant(7, buf, sizeof(buf)), "default");
	close(fd);
	fd = fw_open(TOK_ALPHA, &r);
	expect(r, LOOM__ERROR_CODE__DENIED, "a token was given but loomd has no tokens file");
	close(fd);
	h2 = H;
	H = saved;
	assert_int_equal(h_loomd_stop_clean(&h2), 0);
	h_loomd_cleanup(&h2);
}

/* A restart replays each job with its tenant. */
static void test_restart_keeps_tenant(void **state_)
{
	int a = fw(TOK_ALPHA), b;
	char buf[64];

	(void)state_;
	OK(reg(a, 500, 1, 1, false));
	close(a);
	assert_int_equal(h_loomd_stop_clean(&H), 0);
	assert_int_equal(start(), 0);
	assert_string_equal(job_tenant(500, buf, sizeof(buf)), "alpha");
	assert_int_equal(tenant_use("alpha", "jobs"), 1);
	b = fw(TOK_BETA);
	expect(simple(b, LOOM__ENVELOPE__BODY_UNREGISTER, 500), LOOM__ERROR_CODE__DENIED,
	       "job 500 belongs to another tenant");
	close(b);
	a = fw(TOK_ALPHA);
	OK(simple(a, LOOM__ENVELOPE__BODY_UNREGISTER, 500));
	close(a);
	assert_int_equal(h_loomd_stop_clean(&H), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_token_refused),
		cmocka_unit_test(test_libloom_token),
		cmocka_unit_test(test_cross_tenant),
		cmocka_unit_test(test_quota_settings),
		cmocka_unit_test(test_quota_jobs),
		cmocka_unit_test(test_quota_coflows),
		cmocka_unit_test(test_quota_flows),
		cmocka_unit_test(test_quota_announce_rate),
		cmocka_unit_test(test_admin_logged),
		cmocka_unit_test(test_socket_modes),
		cmocka_unit_test(test_bad_tokens_file),
		cmocka_unit_test(test_no_tokens_file),
		cmocka_unit_test(test_restart_keeps_tenant),
	};

	signal(SIGPIPE, SIG_IGN); /* a refused framework's writes fail with EPIPE instead */
	return cmocka_run_group_tests(tests, setup, teardown);
}
