/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for libloom (controlplane/client): the client against an
 * in-process fake controller. The fake is a thread that accepts on a Unix
 * socket under a unique /tmp path, speaks loom.proto with wire_recv/wire_send,
 * records every envelope it receives and answers as the test's script says
 * (errors, silence, dropped connections). The LD_PRELOAD shim is tested by
 * re-running this binary with the shim preloaded (--shim-child).
 *
 * Every wait is bounded (client timeouts of at most a few seconds, server
 * polls of 50 ms) and every socket file is removed when its test ends.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "controlplane/client/loom.h"
#include "proto/wire.h"
#include "tests/precond.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* Private monotonic clock: this test links libloom as a framework does, not common/. */
static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the fake controller ------------------------------------------------------------- */

#define FS_MAX_CONNS   16
#define FS_MAX_RECORDS 2048

/*
 * Decides the answer to a request: *code (OK preset), msg (empty preset) and
 * *accepted (preset to the number of flows of an AnnounceFlows).
 */
typedef void (*fs_decide_fn)(const Loom__Envelope *req, Loom__ErrorCode *code, char *msg,
			     size_t size, uint32_t *accepted);

struct fs_conn {
	int fd;
	int index;   /* 0 for the server's first connection, 1 for the next, ... */
	int replies; /* replies sent to requests on this connection */
};

struct fake_server {
	char path[108];
	int lfd;
	pthread_t thread;
	int stop;
	/* the script; set before fs_start() */
	bool silent_hello;          /* never answer a Hello */
	bool silent;                /* answer Hello, never a request */
	int drop_after;             /* close a connection after this many replies (0: never) */
	bool drop_first_unanswered; /* the first connection's first request: close, no reply */
	uint32_t hello_version;     /* 0: WIRE_VERSION_MAX */
	Loom__ErrorCode hello_code; /* answer to Hello */
	const char *hello_msg;      /* its message */
	fs_decide_fn decide;        /* NULL: every request is OK */
	/* what happened; under lock */
	pthread_mutex_t lock;
	Loom__Envelope *rec[FS_MAX_RECORDS];
	size_t n_rec;
	int n_conns;
};

static int fs_counter;

static void fs_reply(struct fake_server *fs, struct fs_conn *cn, const Loom__Envelope *req)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Error err = LOOM__ERROR__INIT;
	char msg[256] = "";

	env.seq = req->seq;
	if (req->body_case == LOOM__ENVELOPE__BODY_HELLO) {
		Loom__HelloReply hr = LOOM__HELLO_REPLY__INIT;

		if (fs->silent_hello)
			return;
		hr.version = fs->hello_version ? fs->hello_version : WIRE_VERSION_MAX;
		hr.controller_id = 4242;
		if (fs->hello_code != LOOM__ERROR_CODE__OK) {
			err.code = fs->hello_code;
			err.message = (char *)(fs->hello_msg ? fs->hello_msg : "");
			hr.error = &err;
			hr.version = 0;
		}
		env.body_case = LOOM__ENVELOPE__BODY_HELLO_REPLY;
		env.hello_reply = &hr;
		(void)wire_send(cn->fd, &env, WIRE_MAX_FRAME_DEFAULT, 2000);
		return;
	}
	if (fs->silent)
		return;
	if (fs->drop_first_unanswered && cn->index == 0 && cn->replies == 0) {
		close(cn->fd);
		cn->fd = -1;
		return;
	}
	{
		Loom__Reply rep = LOOM__REPLY__INIT;
		Loom__ErrorCode code = LOOM__ERROR_CODE__OK;
		uint32_t accepted = 0;

		if (req->body_case == LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS)
			accepted = (uint32_t)req->announce_flows->n_flows;
		if (fs->decide)
			fs->decide(req, &code, msg, sizeof(msg), &accepted);
		if (code != LOOM__ERROR_CODE__OK) {
			err.code = code;
			err.message = msg;
			rep.error = &err;
		}
		rep.accepted = accepted;
		env.body_case = LOOM__ENVELOPE__BODY_REPLY;
		env.reply = &rep;
		(void)wire_send(cn->fd, &env, WIRE_MAX_FRAME_DEFAULT, 2000);
	}
	cn->replies++;
	if (fs->drop_after && cn->replies == fs->drop_after) {
		close(cn->fd);
		cn->fd = -1;
	}
}

static void *fs_main(void *arg)
{
	struct fake_server *fs = arg;
	struct fs_conn conns[FS_MAX_CONNS];
	int n = 0;

	while (!__atomic_load_n(&fs->stop, __ATOMIC_ACQUIRE)) {
		struct pollfd p[FS_MAX_CONNS + 1];
		int polled = n;

		p[0] = (struct pollfd){.fd = fs->lfd, .events = POLLIN};
		for (int i = 0; i < n; i++)
			p[i + 1] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
		if (poll(p, (nfds_t)n + 1, 50) <= 0)
			continue;
		/* The connections polled first; one accepted now waits for the next round. */
		for (int i = 0; i < polled; i++) {
			Loom__Envelope *env = NULL;
			bool kept;

			if (!(p[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) || conns[i].fd < 0)
				continue;
			if (wire_recv(conns[i].fd, WIRE_MAX_FRAME_DEFAULT, 2000, &env) < 0) {
				close(conns[i].fd);
				conns[i].fd = -1;
				continue;
			}
			/* Recorded before the reply, so the client's caller can look at it. */
			pthread_mutex_lock(&fs->lock);
			kept = fs->n_rec < FS_MAX_RECORDS;
			if (kept)
				fs->rec[fs->n_rec++] = env;
			pthread_mutex_unlock(&fs->lock);
			fs_reply(fs, &conns[i], env);
			if (!kept)
				wire_free(env);
		}
		if ((p[0].revents & POLLIN) && n < FS_MAX_CONNS) {
			int fd = accept4(fs->lfd, NULL, NULL, SOCK_CLOEXEC);

			if (fd >= 0) {
				pthread_mutex_lock(&fs->lock);
				conns[n++] = (struct fs_conn){.fd = fd, .index = fs->n_conns++};
				pthread_mutex_unlock(&fs->lock);
			}
		}
		/* Forget the connections closed above. */
		for (int i = 0; i < n;) {
			if (conns[i].fd < 0)
				conns[i] = conns[--n];
			else
				i++;
		}
	}
	for (int i = 0; i < n; i++)
		close(conns[i].fd);
	return NULL;
}

/* Starts fs (its script already set) on a fresh socket path. */
static void fs_start(struct fake_server *fs)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};

	snprintf(fs->path, sizeof(fs->path), "/tmp/loom-test-client-%ld-%d.sock", (long)getpid(),
		 __atomic_fetch_add(&fs_counter, 1, __ATOMIC_RELAXED));
	unlink(fs->path);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", fs->path);
	fs->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fs->lfd >= 0);
	assert_int_equal(bind(fs->lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(fs->lfd, 16), 0);
	pthread_mutex_init(&fs->lock, NULL);
	fs->stop = 0;
	assert_int_equal(pthread_create(&fs->thread, NULL, fs_main, fs), 0);
}

/* Stops the server thread and closes its sockets; the records stay. */
static void fs_halt(struct fake_server *fs)
{
	if (fs->lfd < 0)
		return;
	__atomic_store_n(&fs->stop, 1, __ATOMIC_RELEASE);
	pthread_join(fs->thread, NULL);
	close(fs->lfd);
	fs->lfd = -1;
	unlink(fs->path);
}

static void fs_stop(struct fake_server *fs)
{
	fs_halt(fs);
	for (size_t i = 0; i < fs->n_rec; i++)
		wire_free(fs->rec[i]);
	fs->n_rec = 0;
	pthread_mutex_destroy(&fs->lock);
}

/* The i-th recorded envelope of a type (NULL if none); the server keeps it. */
static const Loom__Envelope *fs_nth(struct fake_server *fs, Loom__Envelope__BodyCase c, size_t i)
{
	const Loom__Envelope *found = NULL;

	pthread_mutex_lock(&fs->lock);
	for (size_t k = 0; k < fs->n_rec; k++) {
		if (fs->rec[k]->body_case == c && i-- == 0) {
			found = fs->rec[k];
			break;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	return found;
}

static size_t fs_count(struct fake_server *fs, Loom__Envelope__BodyCase c)
{
	size_t n = 0;

	pthread_mutex_lock(&fs->lock);
	for (size_t k = 0; k < fs->n_rec; k++)
		n += fs->rec[k]->body_case == c;
	pthread_mutex_unlock(&fs->lock);
	return n;
}

static int fs_conns(struct fake_server *fs)
{
	int n;

	pthread_mutex_lock(&fs->lock);
	n = fs->n_conns;
	pthread_mutex_unlock(&fs->lock);
	return n;
}

static struct fake_server *fs_new(void)
{
	struct fake_server *fs = calloc(1, sizeof(*fs));

	assert_non_null(fs);
	fs->lfd = -1;
	return fs;
}

static void fs_free(struct fake_server *fs)
{
	if (!fs)
		return;
	fs_stop(fs);
	free(fs);
}

static struct loom_client *connect_to(struct fake_server *fs, int timeout_ms)
{
	struct loom_client_options o = {.timeout_ms = timeout_ms, .name = "test"};
	char addr[160];
	struct loom_client *c;

	snprintf(addr, sizeof(addr), "unix:%s", fs->path);
	c = loom_client_connect(addr, &o);
	if (!c)
		fail_msg("connect %s: %s", addr, loom_client_strerror());
	return c;
}

/* ---- addresses and the handshake ------------------------------------------------------ */

static void test_bad_addresses(void **state)
{
	static const char *const bad[] = {
		"unix:",   "tcp:", "tcp:host", "host",    "tcp::80", ":80", "h:0",
		"h:65536", "h:x1", "::1:80",   "[::1]80", "[::1",    "h:",
	};
	char longpath[200];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		errno = 0;
		assert_null(loom_client_connect(bad[i], NULL));
		if (errno != EINVAL)
			fail_msg("%s: errno %d (%s)", bad[i], errno, loom_client_strerror());
		assert_non_null(strstr(loom_client_strerror(), "address"));
	}
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = 0;
	assert_null(loom_client_connect(longpath, NULL));
	assert_int_equal(errno, ENAMETOOLONG);
	{
		struct loom_client_options o = {.timeout_ms = -1};

		assert_null(loom_client_connect("/tmp/x", &o));
		assert_int_equal(errno, EINVAL);
	}
}

static void test_handshake(void **state)
{
	struct fake_server *fs = fs_new();
	struct loom_client *c;
	const Loom__Envelope *h;
	char expect_name[64];

	(void)state;
	fs_start(fs);
	c = connect_to(fs, 2000);
	h = fs_nth(fs, LOOM__ENVELOPE__BODY_HELLO, 0);
	assert_non_null(h);
	assert_int_equal(h->hello->version_min, WIRE_VERSION_MIN);
	assert_int_equal(h->hello->version_max, WIRE_VERSION_MAX);
	assert_int_equal(h->hello->role, LOOM__ROLE__FRAMEWORK);
	assert_string_equal(h->hello->name, "test");
	assert_int_equal(loom_client_version(c), WIRE_VERSION_MAX);
	{
		char want[160];

		snprintf(want, sizeof(want), "unix:%s", fs->path);
		assert_string_equal(loom_client_address(c), want);
	}
	c = loom_client_free(c);
	assert_null(c);

	/* A bare path, the default name, and NULL options. */
	c = loom_client_connect(fs->path, NULL);
	assert_non_null(c);
	h = fs_nth(fs, LOOM__ENVELOPE__BODY_HELLO, 1);
	assert_non_null(h);
	snprintf(expect_name, sizeof(expect_name), "libloom[%ld]", (long)getpid());
	assert_string_equal(h->hello->name, expect_name);
	loom_client_free(c);

	/* NULL address: $LOOM_CONTROLLER. */
	setenv(LOOM_CLIENT_ENV_CONTROLLER, fs->path, 1);
	c = loom_client_connect(NULL, NULL);
	unsetenv(LOOM_CLIENT_ENV_CONTROLLER);
	assert_non_null(c);
	assert_int_equal(fs_count(fs, LOOM__ENVELOPE__BODY_HELLO), 3);
	loom_client_free(c);
	assert_null(loom_client_free(NULL));
	fs_free(fs);
}

static void test_hello_refused(void **state)
{
	struct fake_server *fs = fs_new();

	(void)state;
	fs->hello_code = LOOM__ERROR_CODE__BAD_VERSION;
	fs->hello_msg = "no common protocol version (controller speaks 7..9)";
	fs_start(fs);
	{
		char addr[160];

		snprintf(addr, sizeof(addr), "unix:%s", fs->path);
		errno = 0;
		assert_null(loom_client_connect(addr, NULL));
		assert_int_equal(errno, EPROTONOSUPPORT);
		assert_string_equal(loom_client_strerror(), fs->hello_msg);
	}
	fs_free(fs);

	/* A version outside what we offered. */
	fs = fs_new();
	fs->hello_version = WIRE_VERSION_MAX + 5;
	fs_start(fs);
	errno = 0;
	assert_null(loom_client_connect(fs->path, NULL));
	assert_int_equal(errno, EPROTONOSUPPORT);
	assert_non_null(strstr(loom_client_strerror(), "version"));
	fs_free(fs);
}

/* ---- requests ------------------------------------------------------------------------- */

static void assert_tuple_pb(const Loom__FiveTuple *pb, const struct loom_client_tuple *t)
{
	size_t alen = t->family == 4 ? 4 : 16;

	assert_non_null(pb);
	assert_int_equal(pb->src_addr.len, alen);
	assert_int_equal(pb->dst_addr.len, alen);
	assert_memory_equal(pb->src_addr.data, t->src, alen);
	assert_memory_equal(pb->dst_addr.data, t->dst, alen);
	assert_int_equal(pb->src_port, t->src_port);
	assert_int_equal(pb->dst_port, t->dst_port);
	assert_int_equal(pb->protocol, t->protocol);
}

static void assert_flow_pb(const Loom__FlowSpec *pb, const struct loom_client_flow *f)
{
	assert_non_null(pb);
	assert_int_equal(pb->src_host, f->src_host);
	assert_int_equal(pb->dst_host, f->dst_host);
	assert_int_equal(pb->bytes, f->bytes);
	assert_int_equal(!!pb->by_address, f->by_address);
	if (f->tuple.family)
		assert_tuple_pb(pb->tuple, &f->tuple);
	else
		assert_null(pb->tuple);
}

static void test_register_fields(void **state)
{
	struct fake_server *fs = fs_new();
	struct loom_client *c;
	struct loom_client_flow f1[2] = {
		{.src_host = 0, .dst_host = 3, .bytes = 1000000},
		{.src_host = 2,
		 .dst_host = 1,
		 .bytes = 123456789012ULL,
		 .tuple = {.family = 4,
			   .protocol = 6,
			   .src_port = 40000,
			   .dst_port = 7000,
			   .src = {10, 0, 0, 2},
			   .dst = {10, 0, 0, 1}}},
	};
	struct loom_client_flow f2[1] = {
		{.by_address = true,
		 .tuple = {.family = 6,
			   .protocol = 17,
			   .src_port = 1,
			   .dst_port = 65535,
			   .src = {0x20, 0x01, 0x0d, 0xb8, [15] = 1},
			   .dst = {0x20, 0x01, 0x0d, 0xb8, [15] = 2}}},
	};
	struct loom_client_coflow cfs[3] = {
		{.id = 101, .release_offset_ns = 0, .expected_flows = 2, .flows = f1, .n_flows = 2},
		{.id = 102, .release_offset_ns = 5000000, .flows = f2, .n_flows = 1},
		{.id = 103, .release_offset_ns = 7, .expected_flows = 0},
	};
	struct loom_client_edge edges[2] = {
		{.parent = 101, .child = 102, .delay_ns = 250000000},
		{.parent = 102, .child = 103, .delay_ns = 0},
	};
	struct loom_client_job job = {
		.id = 77,
		.weight = 2.5,
		.name = "terasort-3",
		.coflows = cfs,
		.n_coflows = 3,
		.edges = edges,
		.n_edges = 2,
	};
	const Loom__Envelope *e;
	const Loom__RegisterJob *rj;

	(void)state;
	fs_start(fs);
	c = connect_to(fs, 2000);
	assert_int_equal(loom_client_job_register(c, &job), 0);
	e = fs_nth(fs, LOOM__ENVELOPE__BODY_REGISTER_JOB, 0);
	assert_non_null(e);
	assert_true(e->seq > fs_nth(fs, LOOM__ENVELOPE__BODY_HELLO, 0)->seq);
	rj = e->register_job;
	assert_int_equal(rj->job_id, 77);
	assert_true(rj->weight == 2.5);
	assert_string_equal(rj->name, "terasort-3");
	assert_int_equal(rj->n_coflows, 3);
	for (size_t i = 0; i < 3; i++) {
		const Loom__CoflowSpec *cs = rj->coflows[i];

		assert_int_equal(cs->id, cfs[i].id);
		assert_int_equal(cs->release_offset_ns, cfs[i].release_offset_ns);
		assert_int_equal(cs->expected_flows, cfs[i].expected_flows);
		assert_int_equal(cs->n_flows, cfs[i].n_flows);
		for (size_t j = 0; j < cs->n_flows; j++)
			assert_flow_pb(cs->flows[j], &cfs[i].flows[j]);
	}
	assert_int_equal(rj->n_edges, 2);
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(rj->edges[i]->parent, edges[i].parent);
		assert_int_equal(rj->edges[i]->child, edges[i].child);
		assert_int_equal(rj->edges[i]->delay_ns, edges[i].delay_ns);
	}

	/* A job with nothing in it but its id: the name goes as "". */
	{
		struct loom_client_job empty = {.id = 78};

		assert_int_equal(loom_client_job_register(c, &empty), 0);
		rj = fs_nth(fs, LOOM__ENVELOPE__BODY_REGISTER_JOB, 1)->register_job;
		assert_int_equal(rj->job_id, 78);
		assert_string_equal(rj->name, "");
		assert_int_equal(rj->n_coflows, 0);
		assert_int_equal(rj->n_edges, 0);
	}

	/* Done, job done, unregister carry their ids. */
	assert_int_equal(loom_client_coflow_done(c, 103), 0);
	assert_int_equal(loom_client_job_done(c, 77), 0);
	assert_int_equal(loom_client_job_unregister(c, 77), 0);
	assert_int_equal(fs_nth(fs, LOOM__ENVELOPE__BODY_COFLOW_DONE, 0)->coflow_done->coflow_id,
			 103);
	assert_int_equal(fs_nth(fs, LOOM__ENVELOPE__BODY_JOB_DONE, 0)->job_done->job_id, 77);
	assert_int_equal(fs_nth(fs, LOOM__ENVELOPE__BODY_UNREGISTER, 0)->unregister->job_id, 77);
	loom_client_free(c);
	fs_free(fs);
}

static void test_register_invalid(void **state)
{
	struct fake_server *fs = fs_new();
	struct loom_client *c;
	struct loom_client_flow bad_family = {.tuple = {.family = 5}};
	struct loom_client_flow by_addr_no_tuple = {.by_address = true};
	struct loom_client_coflow cf = {.id = 1, .flows = &bad_family, .n_flows = 1};
	struct loom_client_job job = {.id = 1, .coflows = &cf, .n_coflows = 1};

	(void)state;
	fs_start(fs);
	c = connect_to(fs, 2000);
	assert_int_equal(loom_client_job_register(c, &job), -EINVAL);
	assert_non_null(strstr(loom_client_strerror(), "family"));
	cf.flows = &by_addr_no_tuple;
	assert_int_equal(loom_client_job_register(c, &job), -EINVAL);
	assert_non_null(strstr(loom_client_strerror(), "by_address"));
	cf.flows = NULL;
	assert_int_equal(loom_client_job_register(c, &job), -EINVAL);
	job.n_edges = 1;
	job.coflows = NULL;
	job.n_coflows = 0;
	assert_int_equal(loom_client_job_register(c, &job), -EINVAL);
	assert_int_equal(loom_client_job_register(c, NULL), -EINVAL);
	assert_int_equal(loom_client_job_register(NULL, &job), -EINVAL);
	assert_int_equal(loom_client_coflow_done(NULL, 1), -EINVAL);
	/* Nothing reached the server. */
	assert_int_equal(fs_count(fs, LOOM__ENVELOPE__BODY_REGISTER_JOB), 0);
	loom_client_free(c);
	fs_free(fs);
}

/* Refuses the announced flow whose src_port is 666 (accepted: those before it). */
static void decide_announce(const Loom__Envelope *req, Loom__ErrorCode *code, char *msg,
			    size_t size, uint32_t *accepted)
{
	const Loom__AnnounceFlows *af;

	if (req->body_case != LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS)
		return;
	af = req->announce_flows;
	for (size_t i = 0; i < af->n_flows; i++) {
		if (af->flows[i]->flow->tuple->src_port == 666) {
			*code = LOOM__ERROR_CODE__NOT_FOUND;
			snprintf(msg, size, "coflow %llu is not known",
				 (unsigned long long)af->flows[i]->coflow_id);
			*accepted = (uint32_t)i;
			return;
		}
	}
}

static void test_announce_batch(void **state)
{
	struct fake_server *fs = fs_new();
	struct loom_client *c;
	struct loom_client_announce a[3];
	const Loom__AnnounceFlows *af;

	(void)state;
	fs->decide = decide_announce;
	fs_start(fs);
	c = connect_to(fs, 2000);
	memset(a, 0, sizeof(a));
	for (int i = 0; i < 3; i++) {
		a[i].coflow_id = 10 + (uint64_t)i;
		a[i].flow = (struct loom_client_flow){
			.src_host = (uint32_t)i,
			.dst_host = (uint32_t)i + 1,
			.bytes = (uint64_t)i * 1000,
			.by_address = i == 2,
			.tuple = {.family = 4,
				  .protocol = 6,
				  .src_port = (uint16_t)(5000 + i),
				  .dst_port = 80,
				  .src = {192, 168, 0, (uint8_t)i},
				  .dst = {192, 168, 1, (uint8_t)i}},
		};
	}
	assert_int_equal(loom_client_flows_announce(c, a, 3), 3);
	af = fs_nth(fs, LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS, 0)->announce_flows;
	assert_int_equal(af->n_flows, 3);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(af->flows[i]->coflow_id, a[i].coflow_id);
		assert_flow_pb(af->flows[i]->flow, &a[i].flow);
	}

	/* The third refused: 2 taken, errno and the message say why. */
	a[2].flow.tuple.src_port = 666;
	errno = 0;
	assert_int_equal(loom_client_flows_announce(c, a, 3), 2);
	assert_int_equal(errno, ENOENT);
	assert_string_equal(loom_client_strerror(), "coflow 12 is not known");
	/* The first refused: -errno. */
	assert_int_equal(loom_client_flows_announce(c, &a[2], 1), -ENOENT);
	assert_string_equal(loom_client_strerror(), "coflow 12 is not known");

	/* Checked before sending: a flow without a tuple; nothing to send. */
	a[1].flow.tuple.family = 0;
	assert_int_equal(loom_client_flows_announce(c, a, 2), -EINVAL);
	assert_non_null(strstr(loom_client_strerror(), "flow 1"));
	assert_int_equal(loom_client_flows_announce(c, a, 0), 0);
	assert_int_equal(loom_client_flows_announce(c, NULL, 1), -EINVAL);
	assert_int_equal(fs_count(fs, LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS), 3);
	loom_client_free(c);
	fs_free(fs);
}

/* Answers every request with the code in its id (coflow_done, job_done, unregister). */
static void decide_code_from_id(const Loom__Envelope *req, Loom__ErrorCode *code, char *msg,
				size_t size, uint32_t *accepted)
{
	uint64_t id = 0;

	(void)accepted;
	switch (req->body_case) {
	case LOOM__ENVELOPE__BODY_COFLOW_DONE:
		id = req->coflow_done->coflow_id;
		break;
	case LOOM__ENVELOPE__BODY_JOB_DONE:
		id = req->job_done->job_id;
		break;
	case LOOM__ENVELOPE__BODY_UNREGISTER:
		id = req->unregister->job_id;
		break;
	default:
		return;
	}
	*code = (Loom__ErrorCode)(id % 1000);
	/* Ids >= 1000 get no message: the client must name the failure itself. */
	if (id < 1000)
		snprintf(msg, size, "server says %s for %llu", wire_error_name(*code),
			 (unsigned long long)id);
}

static void test_error_replies(void **state)
{
	static const struct {
		Loom__ErrorCode code;
		int neg_errno;
	} map[] = {
		{LOOM__ERROR_CODE__BAD_REQUEST, -EINVAL},
		{LOOM__ERROR_CODE__EXISTS, -EEXIST},
		{LOOM__ERROR_CODE__NOT_FOUND, -ENOENT},
		{LOOM__ERROR_CODE__CYCLE, -ELOOP},
		{LOOM__ERROR_CODE__FINISHED, -EALREADY},
		{LOOM__ERROR_CODE__WRONG_ROLE, -EPERM},
		{LOOM__ERROR_CODE__NOT_READY, -ENOTCONN},
		{LOOM__ERROR_CODE__LIMIT, -ENOSPC},
		{LOOM__ERROR_CODE__INTERNAL, -EIO},
		{LOOM__ERROR_CODE__UNKNOWN_TYPE, -EBADMSG},
		{LOOM__ERROR_CODE__DENIED, -EACCES},
		{(Loom__ErrorCode)99, -EPROTO},
	};
	struct fake_server *fs = fs_new();
	struct loom_client *c;
	char want[128];

	(void)state;
	fs->decide = decide_code_from_id;
	fs_start(fs);
	c = connect_to(fs, 2000);
	for (size_t i = 0; i < ARRAY_LEN(map); i++) {
		uint64_t id = (uint64_t)map[i].code;

		assert_int_equal(loom_client_coflow_done(c, id), map[i].neg_errno);
		snprintf(want, sizeof(want), "server says %s for %llu",
			 wire_error_name(map[i].code), (unsigned long long)id);
		assert_string_equal(loom_client_strerror(), want);
		assert_int_equal(loom_client_job_done(c, id), map[i].neg_errno);
		assert_int_equal(loom_client_job_unregister(c, id), map[i].neg_errno);
	}
	/* No message from the server: ours names the request and the code. */
	assert_int_equal(loom_client_job_unregister(c, 1000 + LOOM__ERROR_CODE__NOT_FOUND),
			 -ENOENT);
	assert_non_null(strstr(loom_client_strerror(), "unregister"));
	assert_non_null(strstr(loom_client_strerror(), "not_found"));
	/* The connection survived all of it, and OK is 0. */
	assert_int_equal(loom_client_coflow_done(c, 0), 0);
	assert_int_equal(fs_conns(fs), 1);
	/* UNAVAILABLE: -ESHUTDOWN, and the next call opens a new connection. */
	assert_int_equal(loom_client_job_done(c, LOOM__ERROR_CODE__UNAVAILABLE), -ESHUTDOWN);
	assert_int_equal(loom_client_job_done(c, 0), 0);
	assert_int_equal(fs_conns(fs), 2);
	loom_client_free(c);
	fs_free(fs);
}

/* ---- sockets -------------------------------------------------------------------------- */

/*
 * A connected TCP pair on loopback of family af (AF_INET or AF_INET6,
 * peer: the address to connect to). Returns 0 with the connecting and the
 * accepted socket, or -errno (e.g. no IPv6).
 */
static int tcp_pair(int af, const char *peer, int *ret_cfd, int *ret_afd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int lfd, cfd, afd, r;

	memset(&ss, 0, sizeof(ss));
	lfd = socket(af, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return -errno;
	if (af == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		inet_pton(AF_INET, "127.0.0.1", &in->sin_addr);
		len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_addr = in6addr_any;
		len = sizeof(*in6);
	}
	if (bind(lfd, (struct sockaddr *)&ss, len) < 0 || listen(lfd, 4) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&ss, &len) < 0) {
		r = -errno;
		close(lfd);
		return r;
	}
	if (af == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		if (inet_pton(AF_INET6, peer, &in6->sin6_addr) != 1) {
			close(lfd);
			return -EINVAL;
		}
	}
	cfd = socket(af, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (cfd < 0 || connect(cfd, (struct sockaddr *)&ss, len) < 0) {
		r = -errno;
		if (cfd >= 0)
			close(cfd);
		close(lfd);
		return r;
	}
	afd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	r = afd < 0 ? -errno : 0;
	close(lfd);
	if (r < 0) {
		close(cfd);
		return r;
	}
	*ret_cfd = cfd;
	*ret_afd = afd;
	return 0;
}

/* The tuple of fd as the kernel sees it: local -> peer (IPv4 or IPv6). */
static void expect_tuple(int fd, struct loom_client_tuple *t, int family)
{
	struct sockaddr_storage l, p;
	socklen_t ll = sizeof(l), pl = sizeof(p);

	memset(t, 0, sizeof(*t));
	assert_int_equal(getsockname(fd, (struct sockaddr *)&l, &ll), 0);
	assert_int_equal(getpeername(fd, (struct sockaddr *)&p, &pl), 0);
	t->protocol = 6;
	t->family = (uint8_t)family;
	if (l.ss_family == AF_INET) {
		t->src_port = ntohs(((struct sockaddr_in *)&l)->sin_port);
		t->dst_port = ntohs(((struct sockaddr_in *)&p)->sin_port);
		memcpy(t->src, &((struct sockaddr_in *)&l)->sin_addr, 4);
		memcpy(t->dst, &((struct sockaddr_in *)&p)->sin_addr, 4);
	} else {
		const uint8_t *la = ((struct sockaddr_in6 *)&l)->sin6_addr.s6_addr;
		const uint8_t *pa = ((struct sockaddr_in6 *)&p)->sin6_addr.s6_addr;

		t->src_port = ntohs(((struct sockaddr_in6 *)&l)->sin6_port);
		t->dst_port = ntohs(((struct sockaddr_in6 *)&p)->sin6_port);
		/* A v4-mapped address is expected as plain IPv4. */
		memcpy(t->src, family == 4 ? la + 12 : la, family == 4 ? 4 : 16);
		memcpy(t->dst, family == 4 ? pa + 12 : pa, family == 4 ? 4 : 16);
	}
}

static void test_socket_ipv4(void **state)
{
	struct fake_server *fs = fs_new();
	struct loom_client_tuple got, want, back;
	struct loom_client_hosts hosts = {.src_host = 3, .dst_host = 1};
	struct loom_client *c;
	const Loom__AnnounceFlow *a;
	int cfd, afd;

	(void)state;
	fs_start(fs);
	c = connect_to(fs, 2000);
	assert_int_equal(tcp_pair(AF_INET, NULL, &cfd, &afd), 0);
	expect_tuple(cfd, &want, 4);
	assert_int_equal(loom_client_socket_tuple(cfd, &got), 0);
	assert_memory_equal(&got, &want, sizeof(got));
	assert_int_equal(got.src[0], 127);
	/* The accepting end sees the same connection the other way round. */
	assert_int_equal(loom_client_socket_tuple(afd, &back), 0);
	assert_int_equal(back.src_port, want.dst_port);
	assert_int_equal(back.dst_port, want.src_port);

	/* By address, size unknown. */
	assert_int_equal(loom_client_socket_announce(c, cfd, 9, NULL, 0), 0);
	a = fs_nth(fs, LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS, 0)->announce_flows->flows[0];
	assert_int_equal(a->coflow_id, 9);
	assert_true(a->flow->by_address);
	assert_int_equal(a->flow->bytes, 0);
	assert_tuple_pb(a->flow->tuple, &want);
	/* With hosts and a size. */
	assert_int_equal(loom_client_socket_announce(c, cfd, 9, &hosts, 4096), 0);
	a = fs_nth(fs, LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS, 1)->announce_flows->flows[0];
	assert_false(a->flow->by_address);
	assert_int_equal(a->flow->src_host, 3);
	assert_int_equal(a->flow->dst_host, 1);
	assert_int_equal(a->flow->bytes, 4096);
	assert_tuple_pb(a->flow->tuple, &want);
	close(cfd);
	close(afd);

	/* A connected UDP socket: protocol 17. */
	{
		struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(9)};
		int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

		inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
		assert_int_equal(connect(u, (struct sockaddr *)&to, sizeof(to)), 0);
		assert_int_equal(loom_client_socket_tuple(u, &got), 0);
		assert_int_equal(got.protocol, 17);
		assert_int_equal(got.dst_port, 9);
		close(u);
	}
	/* Not connected, not IP, not a socket, not open. */
	{
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int sv[2];

		assert_int_equal(loom_client_socket_tuple(s, &got), -ENOTCONN);
		assert_non_null(strstr(loom_client_strerror(), "getpeername"));
		assert_int_equal(loom_client_socket_announce(c, s, 9, NULL, 0), -ENOTCONN);
		close(s);
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		assert_int_equal(loom_client_socket_tuple(sv[0], &got), -EAFNOSUPPORT);
		close(sv[0]);
		close(sv[1]);
		assert_int_equal(fcntl(9999, F_GETFD), -1);
		assert_int_equal(loom_client_socket_tuple(9999, &got), -EBADF);
	}
	assert_int_equal(fs_count(fs, LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS), 2);
	loom_client_free(c);
	fs_free(fs);
}

/* main() leaves it out when this machine has no IPv6 loopback (tcp_pair() to ::1 fails). */
static void test_socket_ipv6(void **state)
{
	struct loom_client_tuple got, want;
	int cfd, afd, r;

	(void)state;
	r = tcp_pair(AF_INET6, "::1", &cfd, &afd);
	if (r < 0)
		fail_msg("TCP over ::1: %s", strerror(-r));
	expect_tuple(cfd, &want, 6);
	assert_int_equal(loom_client_socket_tuple(cfd, &got), 0);
	assert_memory_equal(&got, &want, sizeof(got));
	assert_int_equal(got.family, 6);
	assert_int_equal(got.src[15], 1); /* ::1 */
	close(cfd);
	close(afd);
}

/*
 * An IPv6 socket talking to an IPv4 peer (v4-mapped) is an IPv4 flow. main()
 * leaves it out when this machine maps no IPv4 into IPv6 sockets (no IPv6,
 * or net.ipv6.bindv6only=1).
 */
static void test_socket_v4_mapped(void **state)
{
	struct loom_client_tuple got, want;
	int cfd, afd, r;

	(void)state;
	r = tcp_pair(AF_INET6, "::ffff:127.0.0.1", &cfd, &afd);
	if (r < 0)
		fail_msg("TCP over ::ffff:127.0.0.1: %s", strerror(-r));
	expect_tuple(cfd, &want, 4);
	assert_int_equal(loom_client_socket_tuple(cfd, &got), 0);
	assert_memory_equal(&got, &want, sizeof(got));
	assert_int_equal(got.src[0], 127);
	close(cfd);
	close(afd);
}

/* ---- threads -------------------------------------------------------------------------- */

#define N_THREADS       8
#define JOBS_PER_THREAD 40

/* Odd job ids exist already, with a message naming the id. */
static void decide_odd_exists(const Loom__Envelope *req, Loom__ErrorCode *code, char *msg,
			      size_t size, uint32_t *accepted)
{
	(void)accepted;
	if (req->body_case == LOOM__ENVELOPE__BODY_REGISTER_JOB && req->register_job->job_id % 2) {
		*code = LOOM__ERROR_CODE__EXISTS;
		snprintf(msg, size, "job %llu exists",
			 (unsigned long long)req->register_job->job_id);
	}
}

struct worker {
	struct loom_client *c;
	int index;
	int wrong; /* calls whose result did not belong to their own request */
	int ok, exists;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < JOBS_PER_THREAD; i++) {
		uint64_t id = (uint64_t)w->index * 1000 + (uint64_t)i;
		struct loom_client_coflow cf = {.id = id * 10};
		struct loom_client_job job = {.id = id, .coflows = &cf, .n_coflows = 1};
		char want[64];
		int r = loom_client_job_register(w->c, &job);

		snprintf(want, sizeof(want), "job %llu exists", (unsigned long long)id);
		if (id % 2 == 0 && r == 0)
			w->ok++;
		else if (id % 2 == 1 && r == -EEXIST && !strcmp(loom_client_strerror(), want))
			w->exists++;
		else
			w->wrong++;
	}
	return NULL;
}

static void test_concurrent(void **state)
{
	struct fake_server *fs = fs_new();
	struct worker w[N_THREADS];
	pthread_t t[N_THREADS];
	struct loom_client *c;
	uint64_t last_seq = 0;

	(void)state;
	fs->decide = decide_odd_exists;
	fs_start(fs);
	c = connect_to(fs, 5000);
	for (int i = 0; i < N_THREADS; i++) {
		w[i] = (struct worker){.c = c, .index = i + 1};
		assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < N_THREADS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].wrong, 0);
		assert_int_equal(w[i].ok, JOBS_PER_THREAD / 2);
		assert_int_equal(w[i].exists, JOBS_PER_THREAD / 2);
	}
	assert_int_equal(fs_count(fs, LOOM__ENVELOPE__BODY_REGISTER_JOB),
			 N_THREADS * JOBS_PER_THREAD);
	/* One connection; seqs strictly increase in the order they arrived. */
	assert_int_equal(fs_conns(fs), 1);
	for (size_t i = 0; i < N_THREADS * JOBS_PER_THREAD; i++) {
		const Loom__Envelope *e = fs_nth(fs, LOOM__ENVELOPE__BODY_REGISTER_JOB, i);

		assert_true(e->seq > last_seq);
		last_seq = e->seq;
		assert_int_equal(e->register_job->coflows[0]->id, e->register_job->job_id * 10);
	}
	loom_client_free(c);
	fs_free(fs);
}

/* ---- failures and timeouts ------------------------------------------------------------ */

static void test_nothing_listens(void **state)
{
	char path[108], addr[140];
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct loom_client_options o = {.timeout_ms = 10000};
	int64_t t0;
	int fd;

	(void)state;
	/* No such file. */
	snprintf(path, sizeof(path), "/tmp/loom-test-client-%ld-none.sock", (long)getpid());
	unlink(path);
	snprintf(addr, sizeof(addr), "unix:%s", path);
	t0 = mono_ms();
	assert_null(loom_client_connect(addr, &o));
	assert_int_equal(errno, ENOENT);
	assert_true(mono_ms() - t0 < 5000);
	{
		char want[200];

		snprintf(want, sizeof(want), "connect %s: %s", addr, strerror(ENOENT));
		assert_string_equal(loom_client_strerror(), want);
	}

	/* A socket file nobody listens on. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);
	t0 = mono_ms();
	assert_null(loom_client_connect(addr, &o));
	assert_int_equal(errno, ECONNREFUSED);
	assert_true(mono_ms() - t0 < 5000);
	unlink(path);

	/* A TCP port nobody listens on (bound, then closed). */
	{
		struct sockaddr_in in = {.sin_family = AF_INET};
		socklen_t len = sizeof(in);
		char taddr[64];

		inet_pton(AF_INET, "127.0.0.1", &in.sin_addr);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		assert_int_equal(bind(fd, (struct sockaddr *)&in, sizeof(in)), 0);
		assert_int_equal(getsockname(fd, (struct sockaddr *)&in, &len), 0);
		close(fd);
		snprintf(taddr, sizeof(taddr), "tcp:127.0.0.1:%u", ntohs(in.sin_port));
		t0 = mono_ms();
		assert_null(loom_client_connect(taddr, &o));
		assert_int_equal(errno, ECONNREFUSED);
		assert_true(mono_ms() - t0 < 5000);
		assert_non_null(strstr(loom_client_strerror(), taddr));
		/* The same without "tcp:". */
		assert_null(loom_client_connect(taddr + 4, &o));
		assert_int_equal(errno, ECONNREFUSED);
	}
}

static void test_timeout_silent_hello(void **state)
{
	struct fake_server *fs = fs_new();
	struct loom_client_options o = {.timeout_ms = 300};

	(void)state;
	fs->silent_hello = true;
	fs_start(fs);
	errno = 0;
	assert_null(loom_client_connect(fs->path, &o));
	assert_int_equal(errno, ETIMEDOUT);
	assert_non_null(strstr(loom_client_strerror(), "hello"));
	fs_free(fs);
}

struct silent_call {
	struct loom_client *c;
	int r;
};

static void *silent_call_main(void *arg)
{
	struct silent_call *sc = arg;

	sc->r = loom_client_coflow_done(sc->c, 6);
	return NULL;
}

static void test_timeout_silent_request(void **state)
{
	struct fake_server *fs = fs_new();
	struct loom_client *c;

	(void)state;
	fs->silent = true;
	fs_start(fs);
	c = connect_to(fs, 300);
	assert_int_equal(loom_client_coflow_done(c, 5), -ETIMEDOUT);
	assert_non_null(strstr(loom_client_strerror(), "coflow_done"));
	/* The next call starts over on a new connection, and times out again. */
	assert_int_equal(loom_client_job_done(c, 5), -ETIMEDOUT);
	assert_int_equal(fs_conns(fs), 2);
	/* Two threads at once: one waits on the server, the other on the first. */
	{
		struct silent_call sc[2] = {{.c = c}, {.c = c}};
		pthread_t t[2];

		for (int i = 0; i < 2; i++)
			assert_int_equal(pthread_create(&t[i], NULL, silent_call_main, &sc[i]), 0);
		for (int i = 0; i < 2; i++) {
			pthread_join(t[i], NULL);
			assert_int_equal(sc[i].r, -ETIMEDOUT);
		}
	}
	loom_client_free(c);
	fs_free(fs);
}

/* TCP: the same silence through a TCP listener that never accepts. */
static void test_timeout_tcp_backlog(void **state)
{
	struct sockaddr_in in = {.sin_family = AF_INET};
	struct loom_client_options o = {.timeout_ms = 300};
	socklen_t len = sizeof(in);
	char addr[64];
	int lfd;

	(void)state;
	inet_pton(AF_INET, "127.0.0.1", &in.sin_addr);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&in, sizeof(in)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&in, &len), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", ntohs(in.sin_port));
	/* The kernel completes the handshake; nobody ever answers the Hello. */
	assert_null(loom_client_connect(addr, &o));
	assert_int_equal(errno, ETIMEDOUT);
	close(lfd);
}

static void test_reconnect_after_drop(void **state)
{
	struct fake_server *fs = fs_new();
	struct loom_client *c;

	(void)state;
	fs->drop_after = 1; /* every connection closes after its first reply */
	fs_start(fs);
	c = connect_to(fs, 2000);
	assert_int_equal(loom_client_coflow_done(c, 1), 0);
	/* Let the close arrive, so the client sees it before sending. */
	nanosleep(&(struct timespec){.tv_nsec = 50 * 1000000}, NULL);
	assert_int_equal(loom_client_coflow_done(c, 2), 0);
	assert_int_equal(loom_client_coflow_done(c, 3), 0);
	assert_int_equal(fs_conns(fs), 3);
	assert_int_equal(fs_count(fs, LOOM__ENVELOPE__BODY_HELLO), 3);
	assert_int_equal(fs_count(fs, LOOM__ENVELOPE__BODY_COFLOW_DONE), 3);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(
			fs_nth(fs, LOOM__ENVELOPE__BODY_COFLOW_DONE, i)->coflow_done->coflow_id,
			i + 1);
	loom_client_free(c);
	fs_free(fs);
}

static void test_reconnect_before_reply(void **state)
{
	struct fake_server *fs = fs_new();
	struct loom_client *c;

	(void)state;
	fs->drop_first_unanswered = true;
	fs_start(fs);
	c = connect_to(fs, 2000);
	/* Sent, the connection dies unanswered, sent again on a new one. */
	assert_int_equal(loom_client_job_done(c, 11), 0);
	assert_int_equal(fs_conns(fs), 2);
	assert_int_equal(fs_count(fs, LOOM__ENVELOPE__BODY_JOB_DONE), 2);
	assert_int_equal(fs_nth(fs, LOOM__ENVELOPE__BODY_JOB_DONE, 1)->job_done->job_id, 11);
	assert_int_equal(loom_client_job_done(c, 12), 0);
	assert_int_equal(fs_conns(fs), 2);
	loom_client_free(c);
	fs_free(fs);
}

static void test_reconnect_fails(void **state)
{
	struct fake_server *fs = fs_new();
	struct loom_client *c;
	char want[200];

	(void)state;
	fs_start(fs);
	c = connect_to(fs, 2000);
	assert_int_equal(loom_client_coflow_done(c, 1), 0);
	fs_halt(fs); /* closes the connection and removes the socket file */
	assert_int_equal(loom_client_coflow_done(c, 2), -ENOENT);
	snprintf(want, sizeof(want), "coflow_done: connect unix:%s: %s", fs->path,
		 strerror(ENOENT));
	assert_string_equal(loom_client_strerror(), want);
	/* A controller back at the same path: the next call finds it. */
	fs_stop(fs);
	{
		char path[108];

		memcpy(path, fs->path, sizeof(path));
		fs_start(fs); /* a new path; move it where the client looks */
		assert_int_equal(rename(fs->path, path), 0);
		memcpy(fs->path, path, sizeof(path));
	}
	assert_int_equal(loom_client_coflow_done(c, 3), 0);
	assert_int_equal(fs_count(fs, LOOM__ENVELOPE__BODY_COFLOW_DONE), 1);
	loom_client_free(c);
	fs_free(fs);
}

/* A child after fork() uses its own connection; the parent's stays. */
static void test_fork(void **state)
{
	struct fake_server *fs = fs_new();
	struct loom_client *c;
	int status = -1;
	pid_t pid;

	(void)state;
	fs_start(fs);
	c = connect_to(fs, 2000);
	assert_int_equal(loom_client_coflow_done(c, 1), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(loom_client_coflow_done(c, 2) == 0 ? 0 : 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(loom_client_coflow_done(c, 3), 0);
	assert_int_equal(fs_conns(fs), 2);
	assert_int_equal(fs_count(fs, LOOM__ENVELOPE__BODY_COFLOW_DONE), 3);
	loom_client_free(c);
	fs_free(fs);
}

/* ---- the LD_PRELOAD shim -------------------------------------------------------------- */

/*
 * The child's side (this binary run with --shim-child, the shim preloaded):
 * a blocking and a non-blocking connection on 127.0.0.1, each accepted.
 * Prints "PORTS listen conn1 conn2" on stdout; exits 0 when every call gave
 * what it gives without the shim.
 */
static int shim_child(void)
{
	struct sockaddr_in in = {.sin_family = AF_INET}, l1, l2;
	socklen_t len = sizeof(in), ll = sizeof(l1);
	int lfd, c1, c2, a1, a2, r;

	inet_pton(AF_INET, "127.0.0.1", &in.sin_addr);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&in, sizeof(in)) < 0 || listen(lfd, 4) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&in, &len) < 0)
		return 2;
	c1 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	errno = 0;
	if (connect(c1, (struct sockaddr *)&in, sizeof(in)) != 0)
		return 3;
	a1 = accept(lfd, NULL, NULL);
	if (a1 < 0)
		return 4;
	c2 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	r = connect(c2, (struct sockaddr *)&in, sizeof(in));
	/* errno must be the real one, not what the shim did meanwhile. */
	if (r != 0 && errno != EINPROGRESS)
		return 5;
	{
		struct pollfd p = {.fd = c2, .events = POLLOUT};

		if (poll(&p, 1, 5000) != 1)
			return 6;
	}
	a2 = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (a2 < 0)
		return 7;
	/* A refused connect keeps its errno. */
	{
		struct sockaddr_in none = in;
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		close(lfd);
		if (connect(s, (struct sockaddr *)&none, sizeof(none)) == 0 ||
		    errno != ECONNREFUSED)
			return 8;
		close(s);
	}
	getsockname(c1, (struct sockaddr *)&l1, &ll);
	ll = sizeof(l2);
	getsockname(c2, (struct sockaddr *)&l2, &ll);
	printf("PORTS %u %u %u\n", ntohs(in.sin_port), ntohs(l1.sin_port), ntohs(l2.sin_port));
	fflush(stdout);
	close(c1);
	close(c2);
	close(a1);
	close(a2);
	return 0;
}

static char shim_path[512];

/*
 * Runs this binary with the shim and env (NULL-terminated "K=V" strings).
 * Returns the exit status; *out and *err get what it printed.
 */
static int run_shim_child(char *const env[], char *out, size_t osize, char *err, size_t esize)
{
	int po[2], pe[2], status = -1;
	size_t no = 0, ne = 0;
	pid_t pid;

	assert_int_equal(pipe2(po, O_CLOEXEC), 0);
	assert_int_equal(pipe2(pe, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[] = {"test_client", "--shim-child", NULL};

		dup2(po[1], STDOUT_FILENO);
		dup2(pe[1], STDERR_FILENO);
		alarm(20);
		execve("/proc/self/exe", argv, env);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	/* Both pipes until EOF (the child has 20 s before SIGALRM). */
	{
		struct pollfd p[2] = {{.fd = po[0], .events = POLLIN},
				      {.fd = pe[0], .events = POLLIN}};
		char *buf[2] = {out, err};
		size_t *used[2] = {&no, &ne}, size[2] = {osize, esize};

		while ((p[0].fd >= 0 || p[1].fd >= 0) && poll(p, 2, 25000) > 0) {
			for (int k = 0; k < 2; k++) {
				ssize_t n;

				if (p[k].fd < 0 || !p[k].revents)
					continue;
				n = read(p[k].fd, buf[k] + *used[k], size[k] - 1 - *used[k]);
				if (n <= 0)
					p[k].fd = -1;
				else
					*used[k] += (size_t)n;
			}
		}
	}
	out[no] = 0;
	err[ne] = 0;
	close(po[0]);
	close(pe[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void expect_announce(struct fake_server *fs, size_t i, unsigned sport, unsigned dport)
{
	const Loom__Envelope *e = fs_nth(fs, LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS, i);
	const Loom__AnnounceFlow *a;
	static const uint8_t lo[4] = {127, 0, 0, 1};

	assert_non_null(e);
	assert_int_equal(e->announce_flows->n_flows, 1);
	a = e->announce_flows->flows[0];
	assert_int_equal(a->coflow_id, 5);
	assert_true(a->flow->by_address);
	assert_int_equal(a->flow->bytes, 0);
	assert_int_equal(a->flow->tuple->protocol, 6);
	assert_int_equal(a->flow->tuple->src_addr.len, 4);
	assert_memory_equal(a->flow->tuple->src_addr.data, lo, 4);
	assert_memory_equal(a->flow->tuple->dst_addr.data, lo, 4);
	assert_int_equal(a->flow->tuple->src_port, sport);
	assert_int_equal(a->flow->tuple->dst_port, dport);
}

static void test_shim(void **state)
{
	struct fake_server *fs;
	char pre[600], ctl[200], out[256], err[1024];
	unsigned lport, p1, p2;
	struct stat st;

	(void)state;
	if (!shim_path[0])
		fail_msg("LOOM_BUILDDIR is not set (meson test sets it to the build root)");
	if (stat(shim_path, &st) < 0)
		fail_msg("%s: %s (the build makes it)", shim_path, strerror(errno));
	fs = fs_new();
	fs_start(fs);
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", shim_path);
	snprintf(ctl, sizeof(ctl), "LOOM_CONTROLLER=unix:%s", fs->path);
	{
		char *env[] = {pre, ctl, "LOOM_COFLOW=5", NULL};

		assert_int_equal(run_shim_child(env, out, sizeof(out), err, sizeof(err)), 0);
	}
	assert_int_equal(sscanf(out, "PORTS %u %u %u", &lport, &p1, &p2), 3);
	assert_string_equal(err, "");
	/* connect, accept, connect (in progress), accept4: in that order. */
	assert_int_equal(fs_count(fs, LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS), 4);
	expect_announce(fs, 0, p1, lport);
	expect_announce(fs, 1, lport, p1);
	expect_announce(fs, 2, p2, lport);
	expect_announce(fs, 3, lport, p2);
	assert_int_equal(fs_conns(fs), 1); /* the shim's own connection, untagged */

	/* Without $LOOM_COFLOW: nothing at all. */
	{
		char *env[] = {pre, ctl, NULL};

		assert_int_equal(run_shim_child(env, out, sizeof(out), err, sizeof(err)), 0);
		assert_int_equal(fs_conns(fs), 1);
		assert_string_equal(err, "");
	}
	fs_free(fs);

	/* No controller: the program runs as ever, silently... */
	snprintf(ctl, sizeof(ctl), "LOOM_CONTROLLER=unix:/tmp/loom-test-client-%ld-gone.sock",
		 (long)getpid());
	{
		char *env[] = {pre, ctl, "LOOM_COFLOW=5", NULL};

		assert_int_equal(run_shim_child(env, out, sizeof(out), err, sizeof(err)), 0);
		assert_string_equal(err, "");
	}
	/* ...or with one line on stderr under $LOOM_DEBUG. */
	{
		char *env[] = {pre, ctl, "LOOM_COFLOW=5", "LOOM_DEBUG=1", NULL};
		char *nl;

		assert_int_equal(run_shim_child(env, out, sizeof(out), err, sizeof(err)), 0);
		assert_non_null(strstr(err, "loom_preload"));
		assert_non_null(strstr(err, "No such file or directory"));
		nl = strchr(err, '\n');
		assert_non_null(nl);
		assert_string_equal(nl + 1, ""); /* one line: retries wait 5 s */
	}
	/* A bad $LOOM_COFLOW: untouched program. */
	{
		char *env[] = {pre, ctl, "LOOM_COFLOW=5x", NULL};

		assert_int_equal(run_shim_child(env, out, sizeof(out), err, sizeof(err)), 0);
		assert_string_equal(err, "");
	}
}

/* Why TCP between IPv6 sockets to peer does not work on this machine, or NULL when it does. */
static const char *no_tcp6(const char *peer)
{
	static char why[128];
	int cfd, afd, r = tcp_pair(AF_INET6, peer, &cfd, &afd);

	if (r == 0) {
		close(cfd);
		close(afd);
		return NULL;
	}
	snprintf(why, sizeof(why), "no TCP over IPv6 to %s here: %s", peer, strerror(-r));
	return why;
}

int main(int argc, char **argv)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_addresses),
		cmocka_unit_test(test_handshake),
		cmocka_unit_test(test_hello_refused),
		cmocka_unit_test(test_register_fields),
		cmocka_unit_test(test_register_invalid),
		cmocka_unit_test(test_announce_batch),
		cmocka_unit_test(test_error_replies),
		cmocka_unit_test(test_socket_ipv4),
		cmocka_unit_test(test_socket_ipv6),
		cmocka_unit_test(test_socket_v4_mapped),
		cmocka_unit_test(test_concurrent),
		cmocka_unit_test(test_nothing_listens),
		cmocka_unit_test(test_timeout_silent_hello),
		cmocka_unit_test(test_timeout_silent_request),
		cmocka_unit_test(test_timeout_tcp_backlog),
		cmocka_unit_test(test_reconnect_after_drop),
		cmocka_unit_test(test_reconnect_before_reply),
		cmocka_unit_test(test_reconnect_fails),
		cmocka_unit_test(test_fork),
		cmocka_unit_test(test_shim),
	};
	size_t n = ARRAY_LEN(tests);
	const char *bd = getenv("LOOM_BUILDDIR");

	if (argc > 1 && !strcmp(argv[1], "--shim-child"))
		return shim_child();
	/* The fake server writes with write(): a client gone must not kill us. */
	signal(SIGPIPE, SIG_IGN);
	if (bd)
		snprintf(shim_path, sizeof(shim_path), "%s/controlplane/client/libloom_preload.so",
			 bd);
	/* what this machine (or this build) cannot run is decided here, before any test */
	n = precond_leave_out(tests, n, test_socket_ipv6, no_tcp6("::1"));
	n = precond_leave_out(tests, n, test_socket_v4_mapped, no_tcp6("::ffff:127.0.0.1"));
	n = precond_leave_out(tests, n, test_shim,
			      UNDER_ASAN ? "the shim cannot be preloaded before the ASan runtime" :
					   NULL);
	return precond_run(tests, n, NULL, NULL);
}
