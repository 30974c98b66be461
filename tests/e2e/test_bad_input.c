/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bad input to a running loomd: framing errors close the connection with a
 * log line; bad requests get an error reply with the right code and a
 * message; loomd keeps serving everyone else and exits cleanly (status 0,
 * which under AddressSanitizer also means no leaks) on SIGTERM. Start-up
 * errors (bad flags and keys, a config file with a bad line, with LF or
 * CRLF line endings, a bad topology= or weights= file, a taken socket, a
 * journal that cannot be opened) exit non-zero with a message naming the
 * key, the file and what is wrong.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

static struct h_loomd H;

static int setup(void **state)
{
	(void)state;
	if (h_loomd_prepare(&H) < 0)
		return -1;
	return h_loomd_start(&H, (const char *const[]){"hosts=4", NULL});
}

static int teardown(void **state)
{
	(void)state;
	if (getenv("KEEP_LOG")) {
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "cp %s /tmp/bad.log", H.log);
		if (system(cmd) < 0)
			perror("system");
	}
	h_loomd_cleanup(&H);
	return 0;
}

/* loomd's log contains needle (it logs synchronously to the file). */
static bool log_has(const char *needle)
{
	char buf[1 << 16];
	FILE *f;
	size_t n;

	for (int tries = 0; tries < 100; tries++) {
		f = fopen(H.log, "r");
		if (!f)
			return false;
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		if (strstr(buf, needle))
			return true;
		h_sleep_ms(20);
	}
	return false;
}

/* The peer closed: a read returns EOF (bounded). */
static bool closed_by_peer(int fd)
{
	Loom__Envelope *env = NULL;
	int r;

	for (;;) {
		r = wire_recv(fd, WIRE_MAX_FRAME_DEFAULT, 3000, &env);
		if (r == 0) {
			wire_free(env);
			continue;
		}
		return r == -EPIPE || r == -ECONNRESET;
	}
}

static void still_serving(void)
{
	assert_true(h_admin_int(&H, "stats", "jobs") >= 0);
}

static int framework(void)
{
	int fd = h_connect(H.sock);

	assert_true(fd >= 0);
	assert_int_equal(h_hello(fd, LOOM__ROLE__FRAMEWORK, 0, 1, 1), 0);
	return fd;
}

/* Sends env, returns the reply's error code (0 OK) and copies its message. */
static int request(int fd, Loom__Envelope *env, char *msg, size_t size)
{
	Loom__Envelope *rep = h_call(fd, env);
	int code;

	if (!rep)
		fail_msg("no reply to %s (seq %llu)", wire_type_name(env->body_case),
			 (unsigned long long)env->seq);
	assert_int_equal(rep->body_case, LOOM__ENVELOPE__BODY_REPLY);
	code = rep->reply->error ? (int)rep->reply->error->code : 0;
	if (msg)
		snprintf(msg, size, "%s",
			 rep->reply->error && rep->reply->error->message ?
				 rep->reply->error->message :
				 "");
	wire_free(rep);
	return code;
}

static void test_garbage_frame(void **state)
{
	static const uint8_t frame[] = {0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff};
	int fd = h_connect(H.sock);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(wire_write_all(fd, frame, sizeof(frame), 1000), 0);
	assert_true(closed_by_peer(fd));
	close(fd);
	assert_true(log_has("not a loom.Envelope; connection closed"));
	still_serving();
}

static void test_oversize_and_zero_frames(void **state)
{
	static const uint8_t big[] = {0x7f, 0xff, 0xff, 0xff};
	static const uint8_t zero[] = {0, 0, 0, 0};
	int fd = h_connect(H.sock);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(wire_write_all(fd, big, sizeof(big), 1000), 0);
	assert_true(closed_by_peer(fd));
	close(fd);
	assert_true(log_has("is too large (max_frame"));
	fd = h_connect(H.sock);
	assert_int_equal(wire_write_all(fd, zero, sizeof(zero), 1000), 0);
	assert_true(closed_by_peer(fd));
	close(fd);
	assert_true(log_has("is zero (max_frame"));
	still_serving();
}

static void test_truncated_frame_then_close(void **state)
{
	static const uint8_t part[] = {0, 0, 1, 0, 0x08, 0x01};
	int fd = h_connect(H.sock);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(wire_write_all(fd, part, sizeof(part), 1000), 0);
	close(fd);
	still_serving();
}

static void test_unknown_type(void **state)
{
	/* seq = 7, then field 30 (varint 1): a body case this loomd does not know */
	static const uint8_t frame[] = {0, 0, 0, 5, 0x08, 0x07, 0xf0, 0x01, 0x01};
	int fd = framework();
	Loom__Envelope *rep = NULL;

	(void)state;
	assert_int_equal(wire_write_all(fd, frame, sizeof(frame), 1000), 0);
	assert_int_equal(wire_recv(fd, WIRE_MAX_FRAME_DEFAULT, 3000, &rep), 0);
	assert_int_equal(rep->seq, 7);
	assert_int_equal(rep->body_case, LOOM__ENVELOPE__BODY_REPLY);
	assert_non_null(rep->reply->error);
	assert_int_equal(rep->reply->error->code, LOOM__ERROR_CODE__UNKNOWN_TYPE);
	wire_free(rep);
	/* the connection stays usable: a second hello is refused, a request answered */
	{
		Loom__Envelope env = LOOM__ENVELOPE__INIT;
		Loom__Hello h = LOOM__HELLO__INIT;
		Loom__JobDone jd = LOOM__JOB_DONE__INIT;

		h.version_min = h.version_max = 1;
		h.role = LOOM__ROLE__FRAMEWORK;
		env.seq = 8;
		env.body_case = LOOM__ENVELOPE__BODY_HELLO;
		env.hello = &h;
		assert_int_equal(request(fd, &env, NULL, 0), LOOM__ERROR_CODE__BAD_REQUEST);
		jd.job_id = 5;
		env.seq = 9;
		env.body_case = LOOM__ENVELOPE__BODY_JOB_DONE;
		env.job_done = &jd;
		assert_int_equal(request(fd, &env, NULL, 0), LOOM__ERROR_CODE__NOT_FOUND);
	}
	close(fd);
}

/*
 * A field numbered 0 in a two-byte tag: protobuf-c reads it but re-encodes
 * it unreadably, so loomd cannot journal the request: it refuses it rather
 * than acknowledge a job a restart would lose.
 */
static void test_unstorable_request(void **state)
{
	static const uint8_t frame[] = {0,    0,    0,    16,   0x08, 0x02, 0x2a, 0x0c, 0x08, 0x05,
					0x1a, 0x02, 0x08, 0x32, 0x85, 0x00, 0x01, 0x02, 0x03, 0x04};
	int fd = framework();
	Loom__Envelope *rep = NULL;

	(void)state;
	assert_int_equal(wire_write_all(fd, frame, sizeof(frame), 1000), 0);
	assert_int_equal(wire_recv(fd, WIRE_MAX_FRAME_DEFAULT, 3000, &rep), 0);
	assert_int_equal(rep->body_case, LOOM__ENVELOPE__BODY_REPLY);
	assert_non_null(rep->reply->error);
	assert_int_equal(rep->reply->error->code, LOOM__ERROR_CODE__BAD_REQUEST);
	assert_non_null(strstr(rep->reply->error->message, "cannot be stored"));
	wire_free(rep);
	close(fd);
	assert_int_equal(h_admin_int(&H, "stats", "jobs"), 0);
}

static void test_wrong_version(void **state)
{
	int fd = h_connect(H.sock);

	(void)state;
	assert_int_equal(h_hello(fd, LOOM__ROLE__FRAMEWORK, 0, 5, 9),
			 LOOM__ERROR_CODE__BAD_VERSION);
	assert_true(closed_by_peer(fd));
	close(fd);
	fd = h_connect(H.sock);
	assert_int_equal(h_hello(fd, LOOM__ROLE__AGENT, 99, 1, 1), LOOM__ERROR_CODE__BAD_REQUEST);
	close(fd);
}

static void test_before_hello(void **state)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__JobDone jd = LOOM__JOB_DONE__INIT;
	int fd = h_connect(H.sock);
	char msg[256];

	(void)state;
	env.seq = 3;
	env.body_case = LOOM__ENVELOPE__BODY_JOB_DONE;
	env.job_done = &jd;
	assert_int_equal(request(fd, &env, msg, sizeof(msg)), LOOM__ERROR_CODE__NOT_READY);
	assert_non_null(strstr(msg, "before hello"));
	close(fd);
}

/* A job of n coflows c0 -> c1 -> ... (ids base+i), each with one flow h0 -> h1. */
struct job_buf {
	Loom__RegisterJob rj;
	Loom__CoflowSpec cs[4];
	Loom__CoflowSpec *csp[4];
	Loom__FlowSpec fs[4];
	Loom__FlowSpec *fsp[4];
	Loom__Edge es[4];
	Loom__Edge *esp[4];
};

static void make_job(struct job_buf *b, uint64_t job, uint64_t base, uint32_t n)
{
	loom__register_job__init(&b->rj);
	b->rj.job_id = job;
	b->rj.n_coflows = n;
	b->rj.coflows = b->csp;
	for (uint32_t i = 0; i < n; i++) {
		loom__coflow_spec__init(&b->cs[i]);
		loom__flow_spec__init(&b->fs[i]);
		b->fs[i].src_host = 0;
		b->fs[i].dst_host = 1;
		b->fs[i].bytes = 1000;
		b->fsp[i] = &b->fs[i];
		b->cs[i].id = base + i;
		b->cs[i].n_flows = 1;
		b->cs[i].flows = &b->fsp[i];
		b->csp[i] = &b->cs[i];
		if (i) {
			loom__edge__init(&b->es[i - 1]);
			b->es[i - 1].parent = base + i - 1;
			b->es[i - 1].child = base + i;
			b->esp[i - 1] = &b->es[i - 1];
		}
	}
	b->rj.n_edges = n ? n - 1 : 0;
	b->rj.edges = b->esp;
}

static int send_job(int fd, struct job_buf *b, uint64_t seq, char *msg, size_t size)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;

	env.seq = seq;
	env.body_case = LOOM__ENVELOPE__BODY_REGISTER_JOB;
	env.register_job = &b->rj;
	return request(fd, &env, msg, size);
}

static void test_bad_jobs(void **state)
{
	struct job_buf b;
	int fd = framework();
	char msg[512];

	(void)state;
	/* a cycle: c0 -> c1 -> c2 -> c0 */
	make_job(&b, 100, 1000, 3);
	b.es[2] = (Loom__Edge)LOOM__EDGE__INIT;
	b.es[2].parent = 1002;
	b.es[2].child = 1000;
	b.esp[2] = &b.es[2];
	b.rj.n_edges = 3;
	assert_int_equal(send_job(fd, &b, 10, msg, sizeof(msg)), LOOM__ERROR_CODE__CYCLE);
	assert_non_null(strstr(msg, "cycle"));
	/* nothing of it was kept: the same ids register fine without the back edge */
	make_job(&b, 100, 1000, 3);
	assert_int_equal(send_job(fd, &b, 11, msg, sizeof(msg)), 0);
	/* duplicate job id, duplicate coflow id (another job) */
	make_job(&b, 100, 2000, 1);
	assert_int_equal(send_job(fd, &b, 12, msg, sizeof(msg)), LOOM__ERROR_CODE__EXISTS);
	assert_non_null(strstr(msg, "job 100"));
	make_job(&b, 101, 1001, 1);
	assert_int_equal(send_job(fd, &b, 13, msg, sizeof(msg)), LOOM__ERROR_CODE__EXISTS);
	assert_non_null(strstr(msg, "1001"));
	/* an edge naming a coflow of no job, a host out of range, no coflows */
	make_job(&b, 102, 3000, 2);
	b.es[0].parent = 999999;
	assert_int_equal(send_job(fd, &b, 14, msg, sizeof(msg)), LOOM__ERROR_CODE__NOT_FOUND);
	make_job(&b, 103, 4000, 1);
	b.fs[0].dst_host = 4;
	assert_int_equal(send_job(fd, &b, 15, msg, sizeof(msg)), LOOM__ERROR_CODE__BAD_REQUEST);
	assert_non_null(strstr(msg, "out of range"));
	make_job(&b, 104, 5000, 0);
	assert_int_equal(send_job(fd, &b, 16, msg, sizeof(msg)), LOOM__ERROR_CODE__BAD_REQUEST);
	close(fd);
	assert_int_equal(h_admin_int(&H, "stats", "jobs"), 1);
}

static void test_bad_ids_and_finished(void **state)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__JobDone jd = LOOM__JOB_DONE__INIT;
	Loom__CoflowDone cd = LOOM__COFLOW_DONE__INIT;
	Loom__AnnounceFlows af = LOOM__ANNOUNCE_FLOWS__INIT;
	Loom__AnnounceFlow a = LOOM__ANNOUNCE_FLOW__INIT, *ap = &a;
	Loom__FlowSpec f = LOOM__FLOW_SPEC__INIT;
	Loom__FiveTuple pt;
	Loom__FlowStats fs = LOOM__FLOW_STATS__INIT;
	struct wire_tuple t;
	struct job_buf b;
	int fd = framework();
	char msg[512];

	(void)state;
	env.seq = 20;
	env.body_case = LOOM__ENVELOPE__BODY_JOB_DONE;
	env.job_done = &jd;
	jd.job_id = 424242;
	assert_int_equal(request(fd, &env, msg, sizeof(msg)), LOOM__ERROR_CODE__NOT_FOUND);
	env.body_case = LOOM__ENVELOPE__BODY_COFLOW_DONE;
	env.coflow_done = &cd;
	cd.coflow_id = 424242;
	assert_int_equal(request(fd, &env, msg, sizeof(msg)), LOOM__ERROR_CODE__NOT_FOUND);
	/* an open coflow (no flows listed), done, then a flow announced for it */
	make_job(&b, 200, 6000, 1);
	b.cs[0].n_flows = 0;
	assert_int_equal(send_job(fd, &b, 21, msg, sizeof(msg)), 0);
	h_tuple(77, &t);
	wire_tuple_to_pb(&t, &pt);
	f.src_host = 0;
	f.dst_host = 1;
	f.tuple = &pt;
	a.coflow_id = 6000;
	a.flow = &f;
	af.n_flows = 1;
	af.flows = &ap;
	env.body_case = LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS;
	env.announce_flows = &af;
	assert_int_equal(request(fd, &env, msg, sizeof(msg)), 0);
	/* the same tuple again */
	assert_int_equal(request(fd, &env, msg, sizeof(msg)), LOOM__ERROR_CODE__EXISTS);
	cd.coflow_id = 6000;
	env.body_case = LOOM__ENVELOPE__BODY_COFLOW_DONE;
	env.coflow_done = &cd; /* body is a union: set it with every case */
	assert_int_equal(request(fd, &env, msg, sizeof(msg)), 0);
	assert_int_equal(request(fd, &env, msg, sizeof(msg)), LOOM__ERROR_CODE__FINISHED);
	h_tuple(78, &t);
	wire_tuple_to_pb(&t, &pt);
	env.body_case = LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS;
	env.announce_flows = &af;
	assert_int_equal(request(fd, &env, msg, sizeof(msg)), LOOM__ERROR_CODE__FINISHED);
	assert_non_null(strstr(msg, "already done"));
	/* an unknown coflow, a malformed tuple */
	a.coflow_id = 99999;
	assert_int_equal(request(fd, &env, msg, sizeof(msg)), LOOM__ERROR_CODE__NOT_FOUND);
	a.coflow_id = 6000;
	pt.src_addr.len = 5;
	assert_int_equal(request(fd, &env, msg, sizeof(msg)), LOOM__ERROR_CODE__BAD_REQUEST);
	/* an agent message on a framework connection */
	env.body_case = LOOM__ENVELOPE__BODY_FLOW_STATS;
	env.flow_stats = &fs;
	assert_int_equal(request(fd, &env, msg, sizeof(msg)), LOOM__ERROR_CODE__WRONG_ROLE);
	close(fd);
	still_serving();
}

/*
 * Runs loomd with argv (NULL-ended, after the program), returns its exit
 * status (-1: it did not exit) and its stderr; a sanitizer report in that
 * stderr fails the test.
 */
static int run_loomd(const char *const *args, char *err, size_t size)
{
	const char *loomd = getenv("LOOMD");
	char *argv[16], path[400];
	int n = 0, status = -1;
	size_t got = 0;
	pid_t pid;
	FILE *f;

	argv[n++] = (char *)(loomd ? loomd : "controlplane/loomd/loomd");
	for (int i = 0; args[i] && n < 15; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	snprintf(path, sizeof(path), "%s/run.err", H.dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0)
			_exit(126);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	f = fopen(path, "r");
	assert_non_null(f);
	got = fread(err, 1, size - 1, f);
	err[got] = 0;
	fclose(f);
	if (h_log_has_sanitizer_report(path))
		fail_msg("loomd %s: sanitizer report in its stderr", args[0]);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_bad_startup(void **state)
{
	char err[4096], sock[420], conf[400];
	FILE *f;

	(void)state;
	assert_int_equal(run_loomd((const char *const[]){"--bogus", NULL}, err, sizeof(err)), 2);
	assert_int_equal(run_loomd((const char *const[]){"-f", "-o", "classes=99", NULL}, err,
				   sizeof(err)),
			 2);
	assert_non_null(strstr(err, "classes"));
	assert_int_equal(run_loomd((const char *const[]){"-f", "-o", "nosuchkey=1", NULL}, err,
				   sizeof(err)),
			 2);
	assert_non_null(strstr(err, "unknown key 'nosuchkey'"));
	assert_int_equal(run_loomd((const char *const[]){"-f", "-o", "policy=nosuch", NULL}, err,
				   sizeof(err)),
			 2);
	assert_non_null(strstr(err, "unknown policy"));
	/* a config file with a bad line: path and line number */
	snprintf(conf, sizeof(conf), "%s/bad.conf", H.dir);
	f = fopen(conf, "w");
	assert_non_null(f);
	fprintf(f, "# ok\nhosts = 4\ntick = soon\n");
	fclose(f);
	assert_int_equal(run_loomd((const char *const[]){"-f", "-c", conf, NULL}, err, sizeof(err)),
			 2);
	assert_non_null(strstr(err, "bad.conf:3:"));
	/* the socket of the running loomd is not stolen */
	snprintf(sock, sizeof(sock), "listen_unix=%s", H.sock);
	assert_int_equal(run_loomd((const char *const[]){"-f", "-c", "/dev/null", "-o", sock, "-o",
							 "listen_tcp=", "-o", "admin_socket=", "-o",
							 "metrics=", "-o", "journal=", NULL},
				   err, sizeof(err)),
			 1);
	assert_non_null(strstr(err, "another process is listening"));
	/* a regular file at listen_unix is refused and left in place, not unlinked */
	snprintf(conf, sizeof(conf), "%s/notasock", H.dir);
	f = fopen(conf, "w");
	assert_non_null(f);
	fputs("keep me\n", f);
	fclose(f);
	snprintf(sock, sizeof(sock), "listen_unix=%s", conf);
	assert_int_equal(run_loomd((const char *const[]){"-f", "-c", "/dev/null", "-o", sock, "-o",
							 "listen_tcp=", "-o", "admin_socket=", "-o",
							 "metrics=", "-o", "journal=", NULL},
				   err, sizeof(err)),
			 1);
	assert_non_null(strstr(err, "exists and is not a socket; not removing it"));
	assert_non_null(strstr(err, conf));
	assert_int_equal(access(conf, F_OK), 0);
	unlink(conf);
	/* a journal that cannot be opened */
	assert_int_equal(run_loomd((const char *const[]){"-f", "-c", "/dev/null", "-o",
							 "listen_unix=", "-o",
							 "listen_tcp=127.0.0.1:0", "-o",
							 "admin_socket=", "-o", "metrics=", "-o",
							 "journal=/proc/loom.db", NULL},
				   err, sizeof(err)),
			 1);
	assert_non_null(strstr(err, "/proc/loom.db"));
	/*
	 * malformed listen_tcp and metrics: a configuration error (exit 2, found
	 * before anything starts); common/addr's message names the key, the
	 * value, why
	 */
	{
		static const struct {
			const char *tcp, *metrics, *needle;
		} bad[] = {
			{"listen_tcp=127.0.0.1", "metrics=",
			 "listen_tcp \"127.0.0.1\": missing ':' and port; expected HOST:PORT"},
			{"listen_tcp=::1:0", "metrics=",
			 "listen_tcp \"::1:0\": an IPv6 host goes in brackets: [::1]:0"},
			{"listen_tcp=[::1", "metrics=", "listen_tcp \"[::1\": unterminated '['"},
			{"listen_tcp=unix:/tmp/x", "metrics=",
			 "listen_tcp \"unix:/tmp/x\": a Unix socket is not accepted here"},
			{"listen_tcp=127.0.0.1:0", "metrics=127.0.0.1:65536",
			 "metrics \"127.0.0.1:65536\": port 65536 is out of range (0..65535)"},
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			assert_int_equal(run_loomd((const char *const[]){"-f", "-c", "/dev/null",
									 "-o", "listen_unix=", "-o",
									 bad[i].tcp, "-o",
									 "admin_socket=", "-o",
									 bad[i].metrics, "-o",
									 "journal=", NULL},
						   err, sizeof(err)),
					 2);
			if (!strstr(err, bad[i].needle))
				fail_msg("%s %s: stderr does not say \"%s\":\n%s", bad[i].tcp,
					 bad[i].metrics, bad[i].needle, err);
		}
	}
	still_serving();
}

/*
 * Runs loomd -f -c on a config of no listeners but TCP on an ephemeral
 * loopback port, no admin socket, metrics or journal, plus extra lines;
 * returns its exit status and stderr (run_loomd).
 */
static int run_loomd_conf(const char *extra, char *err, size_t size)
{
	char conf[400];
	FILE *f;

	snprintf(conf, sizeof(conf), "%s/start.conf", H.dir);
	f = fopen(conf, "w");
	assert_non_null(f);
	fprintf(f,
		"listen_unix =\nlisten_tcp = 127.0.0.1:0\nadmin_socket =\nmetrics =\n"
		"journal =\n%s",
		extra);
	assert_int_equal(fclose(f), 0);
	return run_loomd((const char *const[]){"-f", "-c", conf, NULL}, err, size);
}

/* loomd with extra config exits want with every needle (NULL-ended) in its stderr. */
__attribute__((sentinel)) static void expect_start_error(int want, const char *extra, ...)
{
	char err[4096];
	const char *needle;
	int st = run_loomd_conf(extra, err, sizeof(err));
	va_list ap;

	if (st != want)
		fail_msg("loomd with '%s': exit %d, expected %d; stderr:\n%s", extra, st, want,
			 err);
	va_start(ap, extra);
	while ((needle = va_arg(ap, const char *)))
		if (!strstr(err, needle)) {
			va_end(ap);
			fail_msg("loomd with '%s': stderr lacks '%s':\n%s", extra, needle, err);
		}
	va_end(ap);
}

static void write_bytes(const char *path, const void *buf, size_t n)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/* loomd refuses to start on a topology= or weights= file it cannot use. */
static void test_bad_topology_and_weights(void **state)
{
	const char *src = getenv("LOOM_SRCDIR");
	char path[400], line[512], shipped[400], *buf;
	size_t n;
	FILE *f;

	(void)state;
	/* topology: missing, a folder, bad JSON (line and column), bad content */
	snprintf(path, sizeof(path), "%s/none.json", H.dir);
	snprintf(line, sizeof(line), "topology = %s\n", path);
	expect_start_error(1, line, "topology: ", path, "No such file or directory", NULL);
	snprintf(line, sizeof(line), "topology = %s\n", H.dir);
	expect_start_error(1, line, "topology: ", H.dir, NULL);
	snprintf(path, sizeof(path), "%s/broken.json", H.dir);
	write_bytes(path, "{\"hosts\": [\n", 12);
	snprintf(line, sizeof(line), "topology = %s\n", path);
	expect_start_error(1, line, "topology: ", path, ":2:", NULL);
	snprintf(path, sizeof(path), "%s/words.json", H.dir);
	write_bytes(path, "[1, 2, 3]\n", 10);
	snprintf(line, sizeof(line), "topology = %s\n", path);
	expect_start_error(1, line, "topology: ", path, NULL);
	/* weights: missing, garbage, a corrupted copy of the shipped model */
	snprintf(path, sizeof(path), "%s/none.lgw", H.dir);
	snprintf(line, sizeof(line), "policy = gnn\nweights = %s\n", path);
	expect_start_error(1, line, "weights: ", path, "No such file or directory", NULL);
	snprintf(path, sizeof(path), "%s/garbage.lgw", H.dir);
	write_bytes(path, "garbage\n", 8);
	snprintf(line, sizeof(line), "policy = ensemble\nweights = %s\n", path);
	expect_start_error(1, line, "weights: ", path, "truncated", NULL);
	/* ... and with a policy that does not run the gnn: refused at start all the same */
	snprintf(line, sizeof(line), "policy = sebf\nweights = %s\n", path);
	expect_start_error(1, line, "weights: ", path, "truncated", NULL);
	snprintf(shipped, sizeof(shipped), "%s/data/models/gnn-default.lgw", src ? src : "..");
	f = fopen(shipped, "rb");
	assert_non_null(f);
	buf = malloc(1 << 22);
	assert_non_null(buf);
	n = fread(buf, 1, 1 << 22, f);
	fclose(f);
	assert_true(n > 1000 && n < (1 << 22));
	buf[n / 2] ^= 0x40;
	snprintf(path, sizeof(path), "%s/flipped.lgw", H.dir);
	write_bytes(path, buf, n);
	free(buf);
	snprintf(line, sizeof(line), "policy = gnn\nweights = %s\n", path);
	expect_start_error(1, line, "weights: ", path, "checksum", NULL);
	/* a config with CRLF line endings: read as LF, errors at the right line */
	expect_start_error(2, "# crlf\r\nhosts = 4\r\ntick = soon\r\n", "start.conf:8:", "tick",
			   NULL);
	still_serving();
}

static void test_clean_exit(void **state)
{
	(void)state;
	assert_int_equal(h_loomd_stop_clean(&H), 0);
	assert_true(log_has("stopped"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_garbage_frame),
		cmocka_unit_test(test_oversize_and_zero_frames),
		cmocka_unit_test(test_truncated_frame_then_close),
		cmocka_unit_test(test_unknown_type),
		cmocka_unit_test(test_unstorable_request),
		cmocka_unit_test(test_wrong_version),
		cmocka_unit_test(test_before_hello),
		cmocka_unit_test(test_bad_jobs),
		cmocka_unit_test(test_bad_ids_and_finished),
		cmocka_unit_test(test_bad_startup),
		cmocka_unit_test(test_bad_topology_and_weights),
		cmocka_unit_test(test_clean_exit),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
