/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TLS with mutual authentication on loomd's TCP listener (docs/security.md).
 * The test makes its certificates with the openssl CLI in loomd's private
 * directory (a CA, a second CA nobody trusts, loomd's certificate for
 * 127.0.0.1/::1, agents' certificates for host-1 and host-2, a framework's,
 * an expired one) and talks to loomd on 127.0.0.1 as a TLS client of its
 * own (OpenSSL, blocking, every call bounded by H_TIMEOUT_MS).
 *
 * Cases: frameworks and agents (the test's client, loom-agent, libloom) with
 * good certificates are served (an agent gets its table); a client without a certificate, one whose certificate
 * another CA signed, one that trusts another CA, and one with an expired
 * certificate are refused in the handshake; an agent whose certificate names
 * another host, or not the address it announces, gets its Hello refused and
 * the host's agent stays; a framework certificate names its tenant
 * (framework-a's job is not framework-b's to unregister), an agent's may not
 * say Hello as a framework, and a token where loomd has no tokens file is
 * refused; none of these changes the registry. Plain TCP on
 * a non-loopback address does not start without insecure = yes (and starts
 * with it, warning); bad tls_* settings stop loomd with a message naming
 * the key.
 *
 * Without the openssl CLI main() exits 77.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/admin.h"
#include "controlplane/client/loom.h"
#include "harness.h"
#include "tests/precond.h"

static struct h_loomd H;
static char CERTS[320];
static unsigned PORT;

/* ---- certificates -------------------------------------------------------------------------- */

/* Runs a shell command in CERTS; 0 or -1 (its output went to certs.log). */
static int sh(const char *fmt, ...)
{
	char cmd[2048], full[2600];
	va_list ap;
	int r;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	snprintf(full, sizeof(full), "cd '%s' && { %s ; } >>certs.log 2>&1", CERTS, cmd);
	r = system(full);
	if (r != 0)
		fprintf(stderr, "failed (%d): %s\n", r, cmd);
	return r == 0 ? 0 : -1;
}

#define NEWKEY "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"

/* A certificate name.pem + name.key signed by ca (days < 0: already expired). */
static int leaf(const char *name, const char *ca, const char *cn, const char *san, int days)
{
	char ext[300] = "";

	if (san)
		snprintf(ext, sizeof(ext), "-addext 'subjectAltName=%s'", san);
	return sh("openssl req " NEWKEY " -keyout %s.key -subj '/CN=%s' %s -out %s.csr && "
		  "openssl x509 -req -in %s.csr -CA %s.pem -CAkey %s.key -CAcreateserial "
		  "-days %d -copy_extensions copy -out %s.pem",
		  name, cn, ext, name, name, ca, ca, days, name);
}

static int make_certs(void)
{
	snprintf(CERTS, sizeof(CERTS), "%s/certs", H.dir);
	if (mkdir(CERTS, 0700) < 0)
		return -1;
	if (sh("openssl req -x509 " NEWKEY " -keyout ca.key -out ca.pem -days 2 "
	       "-subj '/CN=loom test CA'") < 0 ||
	    sh("openssl req -x509 " NEWKEY " -keyout other-ca.key -out other-ca.pem -days 2 "
	       "-subj '/CN=another CA'") < 0)
		return -1;
	if (leaf("loomd", "ca", "loomd", "DNS:localhost,IP:127.0.0.1,IP:::1", 2) < 0 ||
	    leaf("host1", "ca", "host-1", "DNS:host-1,IP:10.0.0.1", 2) < 0 ||
	    leaf("host2", "ca", "host-2", "DNS:host-2,IP:10.0.0.2", 2) < 0 ||
	    leaf("fw", "ca", "framework-a", NULL, 2) < 0 ||
	    leaf("fw2", "ca", "fw2-cn", "DNS:framework-b", 2) < 0 ||
	    leaf("rogue", "other-ca", "host-1", "DNS:host-1,IP:10.0.0.1", 2) < 0 ||
	    leaf("expired", "ca", "host-1", "DNS:host-1,IP:10.0.0.1", -1) < 0)
		return -1;
	return 0;
}

/* CERTS/name.ext into buf. */
static const char *cpath(char *buf, size_t size, const char *name, const char *ext)
{
	snprintf(buf, size, "%s/%s.%s", CERTS, name, ext);
	return buf;
}

#define CPATH(name, ext) cpath((char[400]){0}, 400, (name), (ext))

/* A free TCP port on 127.0.0.1 (bound, read, closed). */
static unsigned free_port(void)
{
	struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(in);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unsigned port = 0;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&in, sizeof(in)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&in, &len) == 0)
		port = ntohs(in.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* ---- a blocking TLS client ------------------------------------------------------------------ */

struct tc {
	int fd;
	SSL_CTX *ctx;
	SSL *ssl;
	char why[512]; /* the last failure */
	uint64_t seq;
};

static void tc_errors(struct tc *t, const char *what)
{
	unsigned long e;
	size_t n;

	int saved = errno;

	snprintf(t->why, sizeof(t->why), "%s:", what);
	while ((e = ERR_get_error()) != 0) {
		n = strlen(t->why);
		ERR_error_string_n(e, t->why + n + 1, sizeof(t->why) - n - 1);
		t->why[n] = ' ';
	}
	n = strlen(t->why);
	if (t->why[n - 1] == ':')
		snprintf(t->why + n, sizeof(t->why) - n, " %s", saved ? strerror(saved) : "EOF");
}

static void tc_close(struct tc *t)
{
	if (t->ssl)
		SSL_free(t->ssl);
	if (t->ctx)
		SSL_CTX_free(t->ctx);
	if (t->fd >= 0)
		close(t->fd);
	t->ssl = NULL;
	t->ctx = NULL;
	t->fd = -1;
}

/*
 * Connects to loomd's TCP port with the certificate cert (a name in CERTS;
 * NULL: none), trusting ca, checking loomd's certificate names 127.0.0.1.
 * 0, or -1 with t->why (the connection is closed).
 */
static int tc_open(struct tc *t, const char *cert, const char *ca)
{
	struct sockaddr_in in = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)PORT),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct timeval tv = {H_TIMEOUT_MS / 1000, 0};

	memset(t, 0, sizeof(*t));
	t->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (t->fd < 0 || connect(t->fd, (struct sockaddr *)&in, sizeof(in)) < 0) {
		snprintf(t->why, sizeof(t->why), "connect: %s", strerror(errno));
		tc_close(t);
		return -1;
	}
	/* every read and write below is bounded */
	setsockopt(t->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(t->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	ERR_clear_error();
	errno = 0;
	t->ctx = SSL_CTX_new(TLS_client_method());
	if (!t->ctx || SSL_CTX_load_verify_locations(t->ctx, CPATH(ca, "pem"), NULL) != 1 ||
	    (cert &&
	     (SSL_CTX_use_certificate_chain_file(t->ctx, CPATH(cert, "pem")) != 1 ||
	      SSL_CTX_use_PrivateKey_file(t->ctx, CPATH(cert, "key"), SSL_FILETYPE_PEM) != 1))) {
		tc_errors(t, "context");
		tc_close(t);
		return -1;
	}
	SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
	t->ssl = SSL_new(t->ctx);
	if (!t->ssl || !X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), "127.0.0.1") ||
	    !SSL_set_fd(t->ssl, t->fd) || SSL_connect(t->ssl) != 1) {
		tc_errors(t, "handshake");
		tc_close(t);
		return -1;
	}
	return 0;
}

static int tc_send(struct tc *t, const Loom__Envelope *env)
{
	uint8_t *buf;
	size_t len;
	int r;

	if (!t->ssl || wire_encode(env, WIRE_MAX_FRAME_DEFAULT, &buf, &len) < 0)
		return -1;
	ERR_clear_error();
	errno = 0;
	r = SSL_write(t->ssl, buf, (int)len);
	free(buf);
	if (r != (int)len) {
		tc_errors(t, "write");
		return -1;
	}
	return 0;
}

static int tc_read_all(struct tc *t, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		int r = SSL_read(t->ssl, (uint8_t *)buf + got, (int)(len - got));

		if (r <= 0) {
			tc_errors(t, "read");
			return -1;
		}
		got += (size_t)r;
	}
	return 0;
}

/* The next envelope, or NULL with t->why. */
static Loom__Envelope *tc_recv(struct tc *t)
{
	uint8_t hdr[WIRE_HDR_BYTES], *body;
	Loom__Envelope *env;
	uint32_t n;

	if (!t->ssl)
		return NULL;
	ERR_clear_error();
	errno = 0;
	if (tc_read_all(t, hdr, sizeof(hdr)) < 0 ||
	    wire_hdr_parse(hdr, WIRE_MAX_FRAME_DEFAULT, &n) < 0)
		return NULL;
	body = malloc(n);
	if (!body || tc_read_all(t, body, n) < 0) {
		free(body);
		return NULL;
	}
	env = wire_decode(body, n);
	free(body);
	return env;
}

/* Sends env and returns the envelope with its seq (not a table), or NULL. */
static Loom__Envelope *tc_call(struct tc *t, Loom__Envelope *env)
{
	uint64_t deadline = h_mono_ms() + H_TIMEOUT_MS;

	env->seq = ++t->seq;
	if (tc_send(t, env) < 0)
		return NULL;
	while (h_mono_ms() < deadline) {
		Loom__Envelope *rep = tc_recv(t);

		if (!rep)
			return NULL;
		if (rep->seq == env->seq && rep->body_case != LOOM__ENVELOPE__BODY_TABLE)
			return rep;
		wire_free(rep);
	}
	return NULL;
}

/*
 * Hello as role (an agent: host and its address addr, may be NULL); the
 * reply's error code (0 OK) with its message in t->why, or -1 when no reply
 * came (t->why says why).
 */
static int tc_hello(struct tc *t, Loom__Role role, uint32_t host, const char *addr)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT, *rep;
	Loom__Hello h = LOOM__HELLO__INIT;
	ProtobufCBinaryData a;
	uint8_t ip[4];
	int code;

	h.version_min = WIRE_VERSION_MIN;
	h.version_max = WIRE_VERSION_MAX;
	h.role = role;
	h.name = (char *)"e2e-tls";
	h.host_id = host;
	h.classes = 8;
	if (addr) {
		assert_int_equal(inet_pton(AF_INET, addr, ip), 1);
		a.data = ip;
		a.len = 4;
		h.n_addresses = 1;
		h.addresses = &a;
	}
	env.body_case = LOOM__ENVELOPE__BODY_HELLO;
	env.hello = &h;
	rep = tc_call(t, &env);
	if (!rep || rep->body_case != LOOM__ENVELOPE__BODY_HELLO_REPLY) {
		wire_free(rep);
		return -1;
	}
	code = rep->hello_reply->error ? (int)rep->hello_reply->error->code : 0;
	snprintf(t->why, sizeof(t->why), "%s",
		 rep->hello_reply->error && rep->hello_reply->error->message ?
			 rep->hello_reply->error->message :
			 "");
	wire_free(rep);
	return code;
}

/* Registers job (two coflows of one flow each, from host 1); the reply's code, -1: none. */
static int tc_register(struct tc *t, uint64_t job)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT, *rep;
	Loom__RegisterJob rj = LOOM__REGISTER_JOB__INIT;
	Loom__CoflowSpec cs[2], *csp[2] = {&cs[0], &cs[1]};
	Loom__FlowSpec fs[2], *fsp0 = &fs[0], *fsp1 = &fs[1];
	Loom__FiveTuple pt[2];
	struct wire_tuple wt[2];
	int code;

	for (int i = 0; i < 2; i++) {
		loom__coflow_spec__init(&cs[i]);
		loom__flow_spec__init(&fs[i]);
		h_tuple((uint32_t)(job * 10 + (uint64_t)i), &wt[i]);
		wire_tuple_to_pb(&wt[i], &pt[i]);
		fs[i].src_host = 1;
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
	env.body_case = LOOM__ENVELOPE__BODY_REGISTER_JOB;
	env.register_job = &rj;
	rep = tc_call(t, &env);
	if (!rep)
		return -1;
	code = rep->reply && rep->reply->error ? (int)rep->reply->error->code : 0;
	wire_free(rep);
	return code;
}

/*
 * Reads (bounded) until a table with at least nflows flows came, answering
 * nothing; 0 or -1.
 */
static int tc_wait_table(struct tc *t, size_t nflows)
{
	uint64_t deadline = h_mono_ms() + H_TIMEOUT_MS;

	while (h_mono_ms() < deadline) {
		Loom__Envelope *env = tc_recv(t);
		bool ok;

		if (!env)
			return -1;
		ok = env->body_case == LOOM__ENVELOPE__BODY_TABLE && env->table->n_flows >= nflows;
		wire_free(env);
		if (ok)
			return 0;
	}
	return -1;
}

/* ---- loomd's state ------------------------------------------------------------------------- */

struct counts {
	long long jobs, agents, frameworks;
};

static struct counts counts(void)
{
	json_t *res = h_admin(&H, "stats", 0, NULL);
	struct counts c = {-1, -1, -1};

	assert_non_null(res);
	c.jobs = json_integer_value(json_object_get(res, "jobs"));
	c.agents = json_integer_value(json_object_get(res, "agents"));
	c.frameworks = json_integer_value(json_object_get(res, "frameworks"));
	json_decref(res);
	return c;
}

static void assert_counts(struct counts want)
{
	struct counts now = counts();

	assert_int_equal(now.jobs, want.jobs);
	assert_int_equal(now.agents, want.agents);
	assert_int_equal(now.frameworks, want.frameworks);
}

/* Whether loomd's log holds needle (bounded wait: the line may still be on its way). */
static bool log_has(const char *needle)
{
	for (int i = 0; i < 100; i++) {
		char buf[1 << 16];
		FILE *f = fopen(H.log, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = 0;
		if (strstr(buf, needle))
			return true;
		h_sleep_ms(20);
	}
	fprintf(stderr, "loomd's log does not say \"%s\"\n", needle);
	h_print_log(H.log);
	return false;
}

/*
 * A client with cert (trusting ca) that must be refused: no Hello goes
 * through, no job is registered, and loomd's log says needle.
 */
static void expect_refused(const char *cert, const char *ca, const char *needle)
{
	struct counts before = counts();
	struct tc t;

	if (tc_open(&t, cert, ca) == 0) {
		/* TLS 1.3: the client finishes first; loomd's verdict comes with the next read */
		assert_int_equal(tc_hello(&t, LOOM__ROLE__AGENT, 1, "10.0.0.1"), -1);
		fprintf(stderr, "refused as expected (%s): %s\n", cert ? cert : "no certificate",
			t.why);
		assert_int_equal(tc_register(&t, 999), -1);
	} else {
		fprintf(stderr, "refused as expected (%s): %s\n", cert ? cert : "no certificate",
			t.why);
	}
	tc_close(&t);
	if (needle)
		assert_true(log_has(needle));
	assert_counts(before);
}

/* ---- fixtures ------------------------------------------------------------------------------ */

static int setup(void **state)
{
	char tcp[64], cert[400], key[400], ca[400];

	(void)state;
	if (h_loomd_prepare(&H) < 0 || make_certs() < 0)
		return -1;
	PORT = free_port();
	if (!PORT)
		return -1;
	snprintf(tcp, sizeof(tcp), "listen_tcp=127.0.0.1:%u", PORT);
	snprintf(cert, sizeof(cert), "tls_cert=%s", CPATH("loomd", "pem"));
	snprintf(key, sizeof(key), "tls_key=%s", CPATH("loomd", "key"));
	snprintf(ca, sizeof(ca), "tls_ca=%s", CPATH("ca", "pem"));
	return h_loomd_start(&H, (const char *const[]){"hosts=4", "policy=sebf", tcp, cert, key, ca,
						       NULL});
}

static int teardown(void **state)
{
	(void)state;
	h_loomd_cleanup(&H);
	return 0;
}

/* ---- tests --------------------------------------------------------------------------------- */

/* A framework and an agent with certificates of the CA are served over TLS. */
static void test_tls_served(void **state)
{
	struct counts before = counts();
	struct tc fw, ag;

	(void)state;
	assert_int_equal(tc_open(&ag, "host1", "ca"), 0);
	assert_int_equal(tc_hello(&ag, LOOM__ROLE__AGENT, 1, "10.0.0.1"), 0);
	assert_int_equal(tc_open(&fw, "fw", "ca"), 0);
	assert_int_equal(tc_hello(&fw, LOOM__ROLE__FRAMEWORK, 0, NULL), 0);
	assert_int_equal(tc_register(&fw, 1), 0);
	/* host 1's agent gets the job's two flows */
	assert_int_equal(tc_wait_table(&ag, 2), 0);
	assert_int_equal(counts().jobs, before.jobs + 1);
	assert_int_equal(counts().agents, 1);
	/* the job goes (the other tests count on an empty registry) */
	{
		Loom__Envelope env = LOOM__ENVELOPE__INIT, *rep;
		Loom__Unregister un = LOOM__UNREGISTER__INIT;

		un.job_id = 1;
		env.body_case = LOOM__ENVELOPE__BODY_UNREGISTER;
		env.unregister = &un;
		rep = tc_call(&fw, &env);
		assert_non_null(rep);
		assert_true(!rep->reply->error || !rep->reply->error->code);
		wire_free(rep);
	}
	tc_close(&fw);
	tc_close(&ag);
}

static void test_tls_no_certificate(void **state)
{
	(void)state;
	expect_refused(NULL, "ca", "peer did not return a certificate");
}

static void test_tls_wrong_ca(void **state)
{
	struct tc t;

	(void)state;
	/* a certificate another CA signed */
	expect_refused("rogue", "ca", "unable to get local issuer certificate");
	/* a client that trusts another CA refuses loomd itself */
	assert_int_equal(tc_open(&t, "host1", "other-ca"), -1);
	assert_non_null(strstr(t.why, "certificate verify failed"));
}

static void test_tls_expired(void **state)
{
	(void)state;
	expect_refused("expired", "ca", "certificate has expired");
}

/*
 * An agent whose certificate names host 2 says Hello as host 1; one of
 * host 1 announces an address its certificate does not hold; a framework's
 * certificate says Hello as an agent. Each is refused, and host 1's agent
 * stays (it still gets its table).
 */
static void test_tls_agent_identity(void **state)
{
	struct tc ag, bad, fw;
	struct counts before;

	(void)state;
	assert_int_equal(tc_open(&ag, "host1", "ca"), 0);
	assert_int_equal(tc_hello(&ag, LOOM__ROLE__AGENT, 1, "10.0.0.1"), 0);
	before = counts();
	assert_int_equal(before.agents, 1);

	assert_int_equal(tc_open(&bad, "host2", "ca"), 0);
	assert_int_equal(tc_hello(&bad, LOOM__ROLE__AGENT, 1, "10.0.0.1"),
			 LOOM__ERROR_CODE__WRONG_ROLE);
	fprintf(stderr, "host-2 as host 1: %s\n", bad.why);
	assert_non_null(strstr(bad.why, "does not name host-1"));
	assert_non_null(strstr(bad.why, "DNS:host-2"));
	tc_close(&bad);

	assert_int_equal(tc_open(&bad, "host1", "ca"), 0);
	assert_int_equal(tc_hello(&bad, LOOM__ROLE__AGENT, 1, "10.0.0.9"),
			 LOOM__ERROR_CODE__WRONG_ROLE);
	assert_non_null(strstr(bad.why, "address 10.0.0.9 is not an IP subjectAltName"));
	tc_close(&bad);

	assert_int_equal(tc_open(&bad, "fw", "ca"), 0);
	assert_int_equal(tc_hello(&bad, LOOM__ROLE__AGENT, 1, NULL), LOOM__ERROR_CODE__WRONG_ROLE);
	assert_non_null(strstr(bad.why, "CN=framework-a"));
	tc_close(&bad);
	assert_counts(before);

	/* host 1's agent was not replaced: a new job still reaches it */
	assert_int_equal(tc_open(&fw, "fw", "ca"), 0);
	assert_int_equal(tc_hello(&fw, LOOM__ROLE__FRAMEWORK, 0, NULL), 0);
	assert_int_equal(tc_register(&fw, 2), 0);
	assert_int_equal(tc_wait_table(&ag, 2), 0);
	{
		Loom__Envelope env = LOOM__ENVELOPE__INIT, *rep;
		Loom__Unregister un = LOOM__UNREGISTER__INIT;

		un.job_id = 2;
		env.body_case = LOOM__ENVELOPE__BODY_UNREGISTER;
		env.unregister = &un;
		rep = tc_call(&fw, &env);
		assert_non_null(rep);
		wire_free(rep);
	}
	tc_close(&fw);
	tc_close(&ag);
}

/* A framework Hello with token (NULL: none); the reply's code (message in t->why), -1: none. */
static int tc_hello_token(struct tc *t, const char *token)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT, *rep;
	Loom__Hello h = LOOM__HELLO__INIT;
	int code;

	h.version_min = WIRE_VERSION_MIN;
	h.version_max = WIRE_VERSION_MAX;
	h.role = LOOM__ROLE__FRAMEWORK;
	h.name = (char *)"e2e-tls";
	h.token = (char *)(token ? token : "");
	env.body_case = LOOM__ENVELOPE__BODY_HELLO;
	env.hello = &h;
	rep = tc_call(t, &env);
	if (!rep || rep->body_case != LOOM__ENVELOPE__BODY_HELLO_REPLY) {
		wire_free(rep);
		return -1;
	}
	code = rep->hello_reply->error ? (int)rep->hello_reply->error->code : 0;
	snprintf(t->why, sizeof(t->why), "%s",
		 rep->hello_reply->error && rep->hello_reply->error->message ?
			 rep->hello_reply->error->message :
			 "");
	wire_free(rep);
	return code;
}

/* Unregisters job; the reply's code (message in t->why), -1: none. */
static int tc_unregister(struct tc *t, uint64_t job)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT, *rep;
	Loom__Unregister un = LOOM__UNREGISTER__INIT;
	int code;

	un.job_id = job;
	env.body_case = LOOM__ENVELOPE__BODY_UNREGISTER;
	env.unregister = &un;
	rep = tc_call(t, &env);
	if (!rep)
		return -1;
	code = rep->reply && rep->reply->error ? (int)rep->reply->error->code : 0;
	snprintf(t->why, sizeof(t->why), "%s",
		 rep->reply && rep->reply->error && rep->reply->error->message ?
			 rep->reply->error->message :
			 "");
	wire_free(rep);
	return code;
}

/* The tenant of job in admin jobs ("" when absent). */
static void job_tenant(uint64_t job, char *buf, size_t size)
{
	json_t *jobs = h_admin(&H, "jobs", 0, NULL), *j;
	size_t i;

	assert_non_null(jobs);
	buf[0] = 0;
	json_array_foreach(jobs, i, j)
	{
		if ((uint64_t)json_integer_value(json_object_get(j, "id")) == job)
			snprintf(buf, size, "%s", json_string_value(json_object_get(j, "tenant")));
	}
	json_decref(jobs);
}

/*
 * Over TLS the certificate names the tenant (its first DNS subjectAltName,
 * or its CN without one): framework-b may not unregister framework-a's
 * job; an agent's certificate may not say Hello as a framework; a token
 * where loomd has no tokens file is refused. None changes the registry.
 */
static void test_tls_tenants(void **state)
{
	struct tc a, b, bad;
	struct counts before;
	char tenant[64];

	(void)state;
	assert_int_equal(tc_open(&a, "fw", "ca"), 0);
	assert_int_equal(tc_hello_token(&a, NULL), 0);
	assert_int_equal(tc_register(&a, 5), 0);
	job_tenant(5, tenant, sizeof(tenant));
	assert_string_equal(tenant, "framework-a");
	before = counts();

	assert_int_equal(tc_open(&b, "fw2", "ca"), 0);
	assert_int_equal(tc_hello_token(&b, NULL), 0);
	assert_int_equal(tc_unregister(&b, 5), LOOM__ERROR_CODE__DENIED);
	fprintf(stderr, "framework-b unregistering framework-a's job: %s\n", b.why);
	assert_non_null(strstr(b.why, "job 5 belongs to another tenant (this connection is "
				      "tenant 'framework-b')"));
	assert_int_equal(tc_register(&b, 5), LOOM__ERROR_CODE__DENIED);
	tc_close(&b);

	assert_int_equal(tc_open(&bad, "host1", "ca"), 0);
	assert_int_equal(tc_hello_token(&bad, NULL), LOOM__ERROR_CODE__WRONG_ROLE);
	assert_non_null(strstr(bad.why, "an agent's certificate cannot say hello as a framework"));
	tc_close(&bad);

	assert_int_equal(tc_open(&bad, "fw2", "ca"), 0);
	assert_int_equal(tc_hello_token(&bad, "framework-b-token-0123456789"),
			 LOOM__ERROR_CODE__DENIED);
	assert_non_null(strstr(bad.why, "loomd has no tokens file"));
	tc_close(&bad);
	assert_counts(before);
	job_tenant(5, tenant, sizeof(tenant));
	assert_string_equal(tenant, "framework-a");

	assert_int_equal(tc_unregister(&a, 5), 0);
	tc_close(&a);
}

/* ---- loom-agent over TLS ------------------------------------------------------------------ */

/* Starts loom-agent as host 1 (address 10.0.0.1) on loomd's TLS port with cert; its pid. */
static pid_t start_agent(const char *cert, const char *admin, const char *log)
{
	const char *agent = getenv("LOOM_AGENT");
	char ctl[64], c[400], k[400], ca[400];
	pid_t pid;

	snprintf(ctl, sizeof(ctl), "tcp:127.0.0.1:%u", PORT);
	cpath(c, sizeof(c), cert, "pem");
	cpath(k, sizeof(k), cert, "key");
	cpath(ca, sizeof(ca), "ca", "pem");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(agent ? agent : "dataplane/loom-agent", "loom-agent", "--controller", ctl,
		      "--host-id", "1", "--address", "10.0.0.1", "--enforcer", "null",
		      "--admin-socket", admin, "--tls-cert", c, "--tls-key", k, "--tls-ca", ca,
		      "--stats-interval", "50", (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Waits (bounded) until the agent's stats say key == want (string: contains want_str). */
static void wait_agent(const char *admin, const char *key, long long want, const char *want_str)
{
	char last[512] = "";

	for (int i = 0; i < 300; i++) {
		json_t *res = NULL, *x;
		struct loom_err err;
		bool ok = false;

		if (loom_admin_call(admin, "stats", 0, NULL, 2000, &res, &err) == 0) {
			x = json_object_get(res, key);
			if (want_str) {
				snprintf(last, sizeof(last), "%s", json_string_value(x) ?: "");
				ok = strstr(last, want_str) != NULL;
			} else {
				long long v = json_is_boolean(x) ? json_is_true(x) :
								   json_integer_value(x);

				snprintf(last, sizeof(last), "%lld", v);
				ok = v == want;
			}
			json_decref(res);
		}
		if (ok)
			return;
		h_sleep_ms(20);
	}
	fail_msg("agent stat %s is \"%s\", expected %s", key, last,
		 want_str ? want_str : "another value");
}

/*
 * loom-agent with host-1's certificate connects over TLS and receives its
 * table; with host-2's certificate as host 1 it is refused, says why, and
 * keeps trying (bounded here); loomd then has no agent.
 */
static void test_tls_agent_daemon(void **state)
{
	char admin[400], log[400];
	struct counts before = counts();
	struct tc fw;
	pid_t pid;

	(void)state;
	snprintf(admin, sizeof(admin), "%s/agent.sock", H.dir);
	snprintf(log, sizeof(log), "%s/agent.log", H.dir);
	pid = start_agent("host1", admin, log);
	wait_agent(admin, "connected", 1, NULL);
	assert_int_equal(tc_open(&fw, "fw", "ca"), 0);
	assert_int_equal(tc_hello(&fw, LOOM__ROLE__FRAMEWORK, 0, NULL), 0);
	assert_int_equal(tc_register(&fw, 3), 0);
	wait_agent(admin, "flows", 2, NULL);
	{
		Loom__Envelope env = LOOM__ENVELOPE__INIT, *rep;
		Loom__Unregister un = LOOM__UNREGISTER__INIT;

		un.job_id = 3;
		env.body_case = LOOM__ENVELOPE__BODY_UNREGISTER;
		env.unregister = &un;
		rep = tc_call(&fw, &env);
		assert_non_null(rep);
		wire_free(rep);
	}
	tc_close(&fw);
	wait_agent(admin, "flows", 0, NULL);
	kill(pid, SIGTERM);
	assert_int_equal(h_check_exit("loom-agent", h_wait(pid, h_mono_ms() + 10000), 0, log), 0);
	for (int i = 0; i < 100 && counts().agents != before.agents; i++)
		h_sleep_ms(20);
	assert_counts(before);

	/* host-2's certificate, host 1's hello */
	pid = start_agent("host2", admin, log);
	wait_agent(admin, "last_error", 0, "does not name host-1");
	wait_agent(admin, "connected", 0, NULL);
	assert_counts(before);
	kill(pid, SIGTERM);
	assert_int_equal(h_check_exit("loom-agent", h_wait(pid, h_mono_ms() + 10000), 0, log), 0);

	/* an expired certificate: refused in the handshake */
	pid = start_agent("expired", admin, log);
	wait_agent(admin, "last_error", 0, "TLS");
	wait_agent(admin, "connected", 0, NULL);
	assert_counts(before);
	kill(pid, SIGTERM);
	assert_int_equal(h_check_exit("loom-agent", h_wait(pid, h_mono_ms() + 10000), 0, log), 0);
}

/* ---- libloom over TLS ---------------------------------------------------------------------- */

/* Sets $LOOM_TLS_* to cert's files (NULL: unsets them). */
static void tls_env(const char *cert)
{
	if (!cert) {
		unsetenv(LOOM_CLIENT_ENV_TLS_CERT);
		unsetenv(LOOM_CLIENT_ENV_TLS_KEY);
		unsetenv(LOOM_CLIENT_ENV_TLS_CA);
		return;
	}
	setenv(LOOM_CLIENT_ENV_TLS_CERT, CPATH(cert, "pem"), 1);
	setenv(LOOM_CLIENT_ENV_TLS_KEY, CPATH(cert, "key"), 1);
	setenv(LOOM_CLIENT_ENV_TLS_CA, CPATH("ca", "pem"), 1);
}

/*
 * libloom with $LOOM_TLS_* of a framework's certificate registers and
 * unregisters a job over TLS; without them, with an expired certificate, or
 * with only some of them it cannot connect, says why, and changes nothing.
 */
static void test_tls_libloom(void **state)
{
	const struct loom_client_options opts = {.timeout_ms = 3000};
	struct loom_client_flow fl = {.src_host = 1, .dst_host = 2, .bytes = 1000};
	struct loom_client_coflow cf = {.id = 40, .flows = &fl, .n_flows = 1};
	struct loom_client_job job = {.id = 4, .coflows = &cf, .n_coflows = 1};
	struct counts before = counts();
	struct loom_client *c;
	char addr[64];

	(void)state;
	snprintf(addr, sizeof(addr), "tcp:127.0.0.1:%u", PORT);
	tls_env("fw");
	c = loom_client_connect(addr, &opts);
	if (!c)
		fail_msg("libloom over TLS: %s", loom_client_strerror());
	assert_int_equal(loom_client_job_register(c, &job), 0);
	assert_int_equal(counts().jobs, before.jobs + 1);
	assert_int_equal(loom_client_job_unregister(c, 4), 0);
	loom_client_free(c);

	/* plain TCP to the TLS port: loomd's handshake fails on our hello */
	tls_env(NULL);
	assert_null(loom_client_connect(addr, &opts));
	fprintf(stderr, "libloom without TLS: %s\n", loom_client_strerror());

	tls_env("expired");
	assert_null(loom_client_connect(addr, &opts));
	assert_int_equal(errno, EPROTO);
	fprintf(stderr, "libloom, expired certificate: %s\n", loom_client_strerror());
	assert_non_null(strstr(loom_client_strerror(), "TLS"));

	/* a client that trusts another CA refuses loomd */
	tls_env("fw");
	setenv(LOOM_CLIENT_ENV_TLS_CA, CPATH("other-ca", "pem"), 1);
	assert_null(loom_client_connect(addr, &opts));
	assert_int_equal(errno, EPROTO);
	assert_non_null(strstr(loom_client_strerror(), "loomd's certificate"));

	tls_env(NULL);
	setenv(LOOM_CLIENT_ENV_TLS_CERT, CPATH("fw", "pem"), 1);
	assert_null(loom_client_connect(addr, &opts));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(loom_client_strerror(), "LOOM_TLS_KEY is not set"));
	tls_env(NULL);
	assert_counts(before);
}

/*
 * Runs loomd -f -c /dev/null with no Unix socket, admin socket, metrics or
 * journal, plus the NULL-ended "-o" settings, until it exits (bounded);
 * returns its wait status (-1: killed after 10 s) and its stderr in err.
 * Its stderr goes to log (which h_check_exit reads for sanitizer reports).
 */
static int run_loomd(const char *const *sets, const char *log, char *err, size_t size)
{
	static const char *const base[] = {"listen_unix=", "admin_socket=", "metrics=", "journal="};
	const char *loomd = getenv("LOOMD");
	char *argv[48];
	int n = 0, status;
	size_t got;
	pid_t pid;
	FILE *f;

	argv[n++] = (char *)(loomd ? loomd : "controlplane/loomd/loomd");
	argv[n++] = (char *)"-f";
	argv[n++] = (char *)"-c";
	argv[n++] = (char *)"/dev/null";
	for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++) {
		argv[n++] = (char *)"-o";
		argv[n++] = (char *)base[i];
	}
	for (int i = 0; sets[i] && n < 44; i++) {
		argv[n++] = (char *)"-o";
		argv[n++] = (char *)sets[i];
	}
	argv[n] = NULL;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0)
			_exit(126);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	status = h_wait(pid, h_mono_ms() + 10000);
	f = fopen(log, "r");
	assert_non_null(f);
	got = fread(err, 1, size - 1, f);
	err[got] = 0;
	fclose(f);
	return status;
}

/* loomd with sets exits want, and its stderr holds needle. */
static void expect_start_error(const char *const *sets, int want, const char *needle)
{
	char err[8192], log[400];

	snprintf(log, sizeof(log), "%s/run.log", H.dir);
	assert_int_equal(h_check_exit("loomd (bad start)", run_loomd(sets, log, err, sizeof(err)),
				      want, log),
			 0);
	if (!strstr(err, needle))
		fail_msg("loomd's stderr does not say \"%s\":\n%s", needle, err);
	fprintf(stderr, "refused as expected: %s", err);
}

/* Plain TCP on a non-loopback address: refused without insecure = yes, a warning with it. */
static void test_plain_tcp_nonloopback(void **state)
{
	struct h_loomd h2;

	(void)state;
	expect_start_error((const char *const[]){"listen_tcp=0.0.0.0:0", NULL}, 1,
			   "listen_tcp 0.0.0.0:0: plain TCP on a non-loopback address");
	expect_start_error((const char *const[]){"listen_tcp=[::]:0", NULL}, 1,
			   "plain TCP on a non-loopback address");
	/* loopback needs nothing */
	assert_int_equal(h_loomd_prepare(&h2), 0);
	assert_int_equal(h_loomd_start(&h2, (const char *const[]){"listen_tcp=[::1]:0", NULL}), 0);
	assert_int_equal(h_loomd_stop_clean(&h2), 0);
	/* insecure = yes: it starts, and says what that means (nothing connects to it) */
	assert_int_equal(h_loomd_start(&h2, (const char *const[]){"listen_tcp=0.0.0.0:0",
								  "insecure=yes", NULL}),
			 0);
	assert_int_equal(h_loomd_stop_clean(&h2), 0);
	{
		char buf[1 << 15];
		FILE *f = fopen(h2.log, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = 0;
		assert_non_null(strstr(buf, "warn"));
		assert_non_null(
			strstr(buf, "plain TCP on a non-loopback address (insecure = yes)"));
	}
	h_loomd_cleanup(&h2);
}

/* Bad tls_* settings stop loomd at start-up with a message naming the key. */
static void test_tls_bad_config(void **state)
{
	char cert[400], key[400], ca[400], wrongkey[400], notca[400];

	(void)state;
	snprintf(cert, sizeof(cert), "tls_cert=%s", CPATH("loomd", "pem"));
	snprintf(key, sizeof(key), "tls_key=%s", CPATH("loomd", "key"));
	snprintf(ca, sizeof(ca), "tls_ca=%s", CPATH("ca", "pem"));
	snprintf(wrongkey, sizeof(wrongkey), "tls_key=%s", CPATH("host1", "key"));
	snprintf(notca, sizeof(notca), "tls_ca=%s", CPATH("ca", "key"));
	expect_start_error((const char *const[]){"listen_tcp=127.0.0.1:0",
						 "tls_cert=/nonexistent/loomd.pem", key, ca, NULL},
			   1, "tls_cert /nonexistent/loomd.pem: No such file or directory");
	expect_start_error((const char *const[]){"listen_tcp=127.0.0.1:0", cert,
						 "tls_key=/nonexistent/loomd.key", ca, NULL},
			   1, "tls_key /nonexistent/loomd.key: No such file or directory");
	expect_start_error((const char *const[]){"listen_tcp=127.0.0.1:0", cert, wrongkey, ca,
						 NULL},
			   1, "does not match tls_cert");
	expect_start_error((const char *const[]){"listen_tcp=127.0.0.1:0", cert, key, notca, NULL},
			   1, "tls_ca ");
	expect_start_error((const char *const[]){"listen_tcp=127.0.0.1:0", cert, NULL}, 2,
			   "tls_key is not set");
	expect_start_error((const char *const[]){"listen_tcp=127.0.0.1:0", key, ca, NULL}, 2,
			   "tls_cert is not set");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tls_served),
		cmocka_unit_test(test_tls_no_certificate),
		cmocka_unit_test(test_tls_wrong_ca),
		cmocka_unit_test(test_tls_expired),
		cmocka_unit_test(test_tls_agent_identity),
		cmocka_unit_test(test_tls_tenants),
		cmocka_unit_test(test_tls_agent_daemon),
		cmocka_unit_test(test_tls_libloom),
		cmocka_unit_test(test_plain_tcp_nonloopback),
		cmocka_unit_test(test_tls_bad_config),
	};

	signal(SIGPIPE, SIG_IGN); /* a refused peer's writes fail with EPIPE instead */
	if (system("openssl version >/dev/null 2>&1") != 0) {
		fprintf(stderr, "no openssl command: the test cannot make its certificates\n");
		return PRECOND_SKIP;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
