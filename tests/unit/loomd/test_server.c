/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for controlplane/loomd/server.c: its listeners and framing, on
 * a real Unix socket in a temporary folder, the loop driven here one
 * non-blocking round at a time (no daemon is spawned). Checked: a Hello
 * written a few bytes at a time, and two frames in one write, each get
 * their reply once whole (the second Hello refused); a zero, an oversized or an undecodable frame
 * closes the connection and is counted; the socket is made 0660; a stale
 * socket file is replaced, a regular file or a live loomd's socket at the
 * path is refused and left as it was; plain TCP on a non-loopback address
 * is refused without TLS or insecure = yes; a bad topology file fails init
 * naming it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "common/log.h"
#include "controlplane/loomd/config.h"
#include "controlplane/loomd/server.h"
#include "proto/frame.h"
#include "proto/wire.h"

struct fixture {
	char dir[64];
	char path[80];
	struct loomd_server s;
	bool up;
};

static void config(struct loomd_config *cfg, const char *unix_path)
{
	loomd_config_default(cfg);
	snprintf(cfg->listen_unix, sizeof(cfg->listen_unix), "%s", unix_path);
	cfg->listen_tcp[0] = 0;
	cfg->admin_socket[0] = 0;
	cfg->metrics[0] = 0;
	cfg->journal[0] = 0;
	cfg->hosts = 4;
	cfg->virtual_clock = true;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	loom_log_set_level(LOOM_LOG_ERR);
	snprintf(f->dir, sizeof(f->dir), "/tmp/loom-test-server-XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/loomd.sock", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (f->up)
		loomd_server_done(&f->s);
	unlink(f->path);
	rmdir(f->dir);
	free(f);
	return 0;
}

static void server_up(struct fixture *f)
{
	struct loomd_config cfg;
	struct loom_err err = {{0}};

	config(&cfg, f->path);
	if (loomd_server_init(&f->s, &cfg, &err) < 0)
		fail_msg("loomd_server_init: %s", err.msg);
	f->up = true;
}

static int dial(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* One round of the server's loop, without waiting. */
static void pump(struct fixture *f)
{
	event_base_loop(f->s.base, EVLOOP_NONBLOCK);
}

/* Runs the loop until fd is readable (or, bounded, 2 s pass); whether it is. */
static bool pump_until_readable(struct fixture *f, int fd)
{
	for (int i = 0; i < 200; i++) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		pump(f);
		if (poll(&p, 1, 10) > 0)
			return true;
	}
	return false;
}

static uint8_t *hello_frame(size_t *len)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Hello h = LOOM__HELLO__INIT;
	uint8_t *buf;

	h.version_min = WIRE_VERSION_MIN;
	h.version_max = WIRE_VERSION_MAX;
	h.role = LOOM__ROLE__FRAMEWORK;
	h.name = "test-framework";
	env.seq = 7;
	env.body_case = LOOM__ENVELOPE__BODY_HELLO;
	env.hello = &h;
	assert_int_equal(wire_encode(&env, 1 << 20, &buf, len), 0);
	return buf;
}

/* The next frame loomd sends on fd (the loop run until it comes). */
static Loom__Envelope *next_frame(struct fixture *f, int fd)
{
	Loom__Envelope *env = NULL;

	assert_true(pump_until_readable(f, fd));
	assert_int_equal(wire_recv(fd, f->s.cfg.max_frame, 1000, &env), 0);
	assert_int_equal(env->seq, 7);
	return env;
}

static void expect_hello_reply(struct fixture *f, int fd)
{
	Loom__Envelope *env = next_frame(f, fd);

	assert_int_equal(env->body_case, LOOM__ENVELOPE__BODY_HELLO_REPLY);
	wire_free(env);
}

/* Runs the loop until loomd closed fd (read gives 0 or an error), bounded. */
static bool closed_by_server(struct fixture *f, int fd)
{
	for (int i = 0; i < 200; i++) {
		char c;

		if (pump_until_readable(f, fd)) {
			ssize_t n = read(fd, &c, 1);

			if (n <= 0)
				return true;
		}
	}
	return false;
}

static void test_hello_in_pieces(void **state)
{
	struct fixture *f = *state;
	size_t len, off = 0;
	uint8_t *buf = hello_frame(&len);
	int fd;

	server_up(f);
	fd = dial(f->path);
	/* 3 bytes at a time, the loop running between: the header itself is split */
	while (off < len) {
		size_t n = len - off < 3 ? len - off : 3;
		struct pollfd p = {.fd = fd, .events = POLLIN};

		assert_int_equal(write(fd, buf + off, n), (ssize_t)n);
		off += n;
		pump(f);
		if (off < len)
			assert_int_equal(poll(&p, 1, 0),
					 0); /* nothing answered before it is whole */
	}
	expect_hello_reply(f, fd);
	assert_int_equal(f->s.st.frames_bad, 0);
	assert_int_equal(f->s.nframeworks, 1);
	close(fd);
	free(buf);
}

static void test_two_frames_one_write(void **state)
{
	struct fixture *f = *state;
	size_t len;
	uint8_t *buf = hello_frame(&len), *two = malloc(2 * len);
	Loom__Envelope *env;
	int fd;

	assert_non_null(two);
	memcpy(two, buf, len);
	memcpy(two + len, buf, len);
	server_up(f);
	fd = dial(f->path);
	assert_int_equal(write(fd, two, 2 * len), (ssize_t)(2 * len));
	/* both handled in order: the first Hello is answered, the second refused */
	expect_hello_reply(f, fd);
	env = next_frame(f, fd);
	assert_int_equal(env->body_case, LOOM__ENVELOPE__BODY_REPLY);
	assert_non_null(env->reply->error);
	assert_non_null(strstr(env->reply->error->message, "second hello"));
	wire_free(env);
	assert_int_equal(f->s.nframeworks, 1);
	close(fd);
	free(two);
	free(buf);
}

static void bad_frame(struct fixture *f, const uint8_t *bytes, size_t len)
{
	int fd;

	server_up(f);
	fd = dial(f->path);
	pump(f);
	assert_int_equal(f->s.nconns, 1);
	assert_int_equal(write(fd, bytes, len), (ssize_t)len);
	assert_true(closed_by_server(f, fd));
	assert_int_equal(f->s.st.frames_bad, 1);
	assert_int_equal(f->s.nconns, 0);
	close(fd);
}

static void test_zero_frame_closes(void **state)
{
	uint8_t hdr[WIRE_HDR_BYTES];

	wire_hdr_put(hdr, 0);
	bad_frame(*state, hdr, sizeof(hdr));
}

static void test_oversized_frame_closes(void **state)
{
	struct fixture *f = *state;
	uint8_t hdr[WIRE_HDR_BYTES];
	struct loomd_config cfg;

	loomd_config_default(&cfg);
	wire_hdr_put(hdr, cfg.max_frame + 1);
	bad_frame(f, hdr, sizeof(hdr));
}

static void test_garbage_frame_closes(void **state)
{
	uint8_t frame[WIRE_HDR_BYTES + 8];

	wire_hdr_put(frame, 8);
	memset(frame + WIRE_HDR_BYTES, 0xff, 8); /* not a protobuf message */
	bad_frame(*state, frame, sizeof(frame));
}

static void test_socket_mode(void **state)
{
	struct fixture *f = *state;
	struct stat st;

	server_up(f);
	assert_int_equal(stat(f->path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0660);
}

static void test_stale_socket_replaced(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0), cfd;

	/* a socket file whose owner is gone, as a killed loomd leaves it */
	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	server_up(f);
	cfd = dial(f->path);
	pump(f);
	assert_int_equal(f->s.nconns, 1);
	close(cfd);
}

static void init_refused(struct fixture *f, const struct loomd_config *cfg, int code,
			 const char *what)
{
	struct loomd_server s;
	struct loom_err err = {{0}};

	memset(&s, 0, sizeof(s));
	assert_int_equal(loomd_server_init(&s, cfg, &err), -code);
	loomd_server_done(&s); /* as loomd's main does after a failed init */
	if (!strstr(err.msg, what))
		fail_msg("error '%s' does not name '%s'", err.msg, what);
	(void)f;
}

static void test_regular_file_refused(void **state)
{
	struct fixture *f = *state;
	struct loomd_config cfg;
	struct stat st;
	int fd = open(f->path, O_WRONLY | O_CREAT | O_EXCL, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "keep", 4), 4);
	close(fd);
	config(&cfg, f->path);
	init_refused(f, &cfg, EEXIST, f->path);
	/* left as it was */
	assert_int_equal(stat(f->path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_size, 4);
}

static void test_live_socket_refused(void **state)
{
	struct fixture *f = *state;
	struct loomd_config cfg;
	size_t len;
	uint8_t *buf = hello_frame(&len);
	int fd;

	server_up(f);
	config(&cfg, f->path);
	init_refused(f, &cfg, EADDRINUSE, f->path);
	/* the first loomd still answers on it */
	fd = dial(f->path);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	expect_hello_reply(f, fd);
	close(fd);
	free(buf);
}

static void test_plain_tcp_nonloopback_refused(void **state)
{
	struct fixture *f = *state;
	struct loomd_config cfg;

	config(&cfg, f->path);
	cfg.listen_unix[0] = 0;
	/* bound and closed before listen(): nothing is ever reachable on it */
	snprintf(cfg.listen_tcp, sizeof(cfg.listen_tcp), "0.0.0.0:0");
	init_refused(f, &cfg, EACCES, "tls_cert");
}

static void test_bad_topology_named(void **state)
{
	struct fixture *f = *state;
	struct loomd_config cfg;
	char topo[160];
	FILE *fp;

	snprintf(topo, sizeof(topo), "%s/topo.json", f->dir);
	fp = fopen(topo, "w");
	assert_non_null(fp);
	fputs("{\"hosts\": [", fp);
	fclose(fp);
	config(&cfg, f->path);
	snprintf(cfg.topology, sizeof(cfg.topology), "%s", topo);
	{
		struct loomd_server s;
		struct loom_err err = {{0}};

		memset(&s, 0, sizeof(s));
		assert_true(loomd_server_init(&s, &cfg, &err) < 0);
		loomd_server_done(&s);
		if (!strstr(err.msg, "topo.json"))
			fail_msg("error '%s' does not name the topology file", err.msg);
	}
	/* nothing was left listening */
	assert_int_equal(access(f->path, F_OK), -1);
	unlink(topo);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hello_in_pieces, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_frames_one_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_frame_closes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oversized_frame_closes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage_frame_closes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_socket_mode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_socket_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_regular_file_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_live_socket_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_plain_tcp_nonloopback_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_topology_named, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
