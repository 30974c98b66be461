/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for common/admin: a server on a libevent loop in a thread, called
 * with loom_admin_call() and with raw sockets (bad JSON, oversize lines,
 * pipelining, half-closed clients), plus the socket-file rules (stale file
 * replaced, live socket and other files not stolen, mode 0660) and the
 * client's errors (unreachable, timeout).
 */
#include <errno.h>
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
#include <event2/event.h>
#include <jansson.h>

#include "common/admin.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/errors.h"

#define TIMEOUT_MS 5000

/* ---- a server on a loop thread -------------------------------------------------------- */

struct server {
	struct event_base *base;
	struct loom_admin *admin;
	struct event *stop_ev;
	int stop_pipe[2];
	pthread_t thread;
	char path[108];
	int calls; /* touched only on the loop thread while it runs */
};

/* Every path handed out, removed at exit even when a failed test skipped its cleanup. */
static char made_paths[64][108];
static int n_made_paths;

static void remove_made_paths(void)
{
	for (int i = 0; i < n_made_paths; i++)
		unlink(made_paths[i]);
}

static void test_path(char *buf, size_t size, const char *tag)
{
	snprintf(buf, size, "/tmp/loom-admin-test-%d-%s-%d.sock", (int)getpid(), tag, n_made_paths);
	unlink(buf);
	if (n_made_paths < (int)ARRAY_SIZE(made_paths))
		snprintf(made_paths[n_made_paths++], sizeof(made_paths[0]), "%s", buf);
}

static int h_echo(void *ctx, int argc, const char *const *argv, json_t **ret_result,
		  struct loom_err *err)
{
	struct server *s = ctx;
	json_t *a = json_array();

	s->calls++;
	assert_null(argv[argc]);
	for (int i = 0; i < argc; i++)
		json_array_append_new(a, json_string(argv[i]));
	*ret_result = a;
	return 0;
}

static int h_fail(void *ctx, int argc, const char *const *argv, json_t **ret_result,
		  struct loom_err *err)
{
	return loom_err_set(err, EPERM, "not allowed: %s", argc > 0 ? argv[0] : "(none)");
}

static int h_fail_bare(void *ctx, int argc, const char *const *argv, json_t **ret_result,
		       struct loom_err *err)
{
	/* Fails without a message, after (wrongly) setting a result. */
	*ret_result = json_string("leaked?");
	return -ENOSPC;
}

static int h_nothing(void *ctx, int argc, const char *const *argv, json_t **ret_result,
		     struct loom_err *err)
{
	return 0;
}

/* big N: a string of N 'x' characters. */
static int h_big(void *ctx, int argc, const char *const *argv, json_t **ret_result,
		 struct loom_err *err)
{
	unsigned long long n;
	char *s;

	if (argc != 1 || loom_parse_u64(argv[0], &n) < 0)
		return loom_err_set(err, EINVAL, "usage: big N");
	s = malloc(n);
	if (!s)
		return -ENOMEM;
	memset(s, 'x', n);
	*ret_result = json_stringn(s, n);
	free(s);
	return *ret_result ? 0 : -ENOMEM;
}

static void stop_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;
	char b;

	(void)!read(fd, &b, 1);
	event_base_loopbreak(s->base);
}

static void *server_main(void *arg)
{
	struct server *s = arg;

	event_base_dispatch(s->base);
	return NULL;
}

/* Creates the server on a fresh path (or at_path) without starting its thread. */
static void server_init(struct server *s, const char *at_path)
{
	struct loom_err err = {{0}};

	memset(s, 0, sizeof(*s));
	if (at_path)
		snprintf(s->path, sizeof(s->path), "%s", at_path);
	else
		test_path(s->path, sizeof(s->path), "srv");
	s->base = event_base_new();
	assert_non_null(s->base);
	s->admin = loom_admin_new(s->base, s->path, &err);
	if (!s->admin)
		fail_msg("loom_admin_new: %s", err.msg);
	assert_int_equal(loom_admin_register(s->admin, "echo", "[ARG...]", "return the arguments",
					     h_echo, s),
			 0);
	assert_int_equal(loom_admin_register(s->admin, "fail", "ARG", "always fail", h_fail, s), 0);
	assert_int_equal(loom_admin_register(s->admin, "fail-bare", NULL, NULL, h_fail_bare, s), 0);
	assert_int_equal(loom_admin_register(s->admin, "nothing", "", "return null", h_nothing, s),
			 0);
	assert_int_equal(loom_admin_register(s->admin, "big", "N", "N bytes of x", h_big, s), 0);
	assert_int_equal(pipe(s->stop_pipe), 0);
	s->stop_ev = event_new(s->base, s->stop_pipe[0], EV_READ | EV_PERSIST, stop_cb, s);
	assert_non_null(s->stop_ev);
	assert_int_equal(event_add(s->stop_ev, NULL), 0);
}

static void server_run(struct server *s)
{
	assert_int_equal(pthread_create(&s->thread, NULL, server_main, s), 0);
}

static void server_start(struct server *s)
{
	server_init(s, NULL);
	server_run(s);
}

static void server_stop(struct server *s)
{
	struct stat st;

	assert_int_equal(write(s->stop_pipe[1], "x", 1), 1);
	assert_int_equal(pthread_join(s->thread, NULL), 0);
	assert_null(loom_admin_free(s->admin));
	/* free unlinks the socket file */
	assert_int_equal(lstat(s->path, &st), -1);
	event_free(s->stop_ev);
	close(s->stop_pipe[0]);
	close(s->stop_pipe[1]);
	event_base_free(s->base);
}

/* ---- raw clients ---------------------------------------------------------------------- */

struct raw {
	int fd;
	char *buf;
	size_t len, cap;
};

static int raw_connect_fd(const char *path)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = 5};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)), 0);
	return fd;
}

static void raw_open(struct raw *r, const char *path)
{
	memset(r, 0, sizeof(*r));
	r->fd = raw_connect_fd(path);
}

static void raw_close(struct raw *r)
{
	close(r->fd);
	free(r->buf);
}

static void raw_send(struct raw *r, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = send(r->fd, data, len, MSG_NOSIGNAL);

		assert_true(n > 0);
		data += n;
		len -= (size_t)n;
	}
}

static void raw_sends(struct raw *r, const char *s)
{
	raw_send(r, s, strlen(s));
}

/*
 * Reads the next line; returns it (NUL-terminated, owned by the caller) or
 * NULL at EOF (or ECONNRESET, which Linux reports when the server closed
 * with our data unread).
 */
static char *raw_line(struct raw *r)
{
	for (;;) {
		char *nl = r->len ? memchr(r->buf, '\n', r->len) : NULL;
		ssize_t n;

		if (nl) {
			size_t l = (size_t)(nl - r->buf);
			char *line = strndup(r->buf, l);

			memmove(r->buf, nl + 1, r->len - l - 1);
			r->len -= l + 1;
			return line;
		}
		if (r->cap - r->len < 65536) {
			r->cap = r->cap ? 2 * r->cap : 65536 * 2;
			r->buf = realloc(r->buf, r->cap);
			assert_non_null(r->buf);
		}
		n = recv(r->fd, r->buf + r->len, r->cap - r->len, 0);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return NULL;
		if (n < 0)
			fail_msg("recv: %s", strerror(errno));
		r->len += (size_t)n;
	}
}

/* Reads a reply line and checks ok; returns the parsed reply (caller decrefs). */
static json_t *raw_reply(struct raw *r, int want_ok)
{
	_cleanup_free_ char *line = raw_line(r);
	json_error_t jerr;
	json_t *j;

	assert_non_null(line);
	j = json_loads(line, 0, &jerr);
	if (!j)
		fail_msg("reply is not JSON (%s): %.200s", jerr.text, line);
	assert_true(json_is_boolean(json_object_get(j, "ok")));
	if (json_is_true(json_object_get(j, "ok")) != want_ok)
		fail_msg("unexpected reply: %.300s", line);
	if (!want_ok)
		assert_true(json_is_string(json_object_get(j, "error")));
	return j;
}

static const char *reply_error(json_t *reply)
{
	return json_string_value(json_object_get(reply, "error"));
}

static int64_t now_ms(void)
{
	return (int64_t)(loom_clock_mono_ns() / LOOM_NS_PER_MS);
}

/* ---- tests ---------------------------------------------------------------------------- */

static void test_round_trip(void **state)
{
	static const char *const args[] = {"a", "b c", "\xc3\xa9\"\n"};
	struct loom_err err = {{0}};
	struct server s;
	json_t *res = NULL, *want;
	struct stat st;

	server_start(&s);
	assert_int_equal(lstat(s.path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0660);
	assert_string_equal(loom_admin_path(s.admin), s.path);

	assert_int_equal(loom_admin_call(s.path, "echo", 0, NULL, TIMEOUT_MS, &res, &err), 0);
	assert_true(json_is_array(res));
	assert_int_equal(json_array_size(res), 0);
	json_decref(res);

	assert_int_equal(loom_admin_call(s.path, "echo", 3, args, TIMEOUT_MS, &res, &err), 0);
	want = json_pack("[s,s,s]", args[0], args[1], args[2]);
	assert_true(json_equal(res, want));
	json_decref(want);
	json_decref(res);

	/* A handler that sets no result replies with null. */
	res = NULL;
	assert_int_equal(loom_admin_call(s.path, "nothing", 0, NULL, TIMEOUT_MS, &res, &err), 0);
	assert_true(json_is_null(res));
	json_decref(res);

	/* Handler errors come back as -EINVAL with the handler's message. */
	res = NULL;
	assert_int_equal(loom_admin_call(s.path, "fail", 1, args, TIMEOUT_MS, &res, &err), -EINVAL);
	assert_null(res);
	assert_string_equal(err.msg, "not allowed: a");
	/* ... or strerror when it left none. */
	assert_int_equal(loom_admin_call(s.path, "fail-bare", 0, NULL, TIMEOUT_MS, &res, &err),
			 -EINVAL);
	assert_string_equal(err.msg, strerror(ENOSPC));
	assert_null(res);

	assert_int_equal(loom_admin_call(s.path, "nope", 0, NULL, TIMEOUT_MS, &res, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "unknown command 'nope'"));
	server_stop(&s);
}

static void test_help(void **state)
{
	struct loom_err err = {{0}};
	struct server s;
	json_t *res = NULL, *e;
	size_t i;
	int seen_echo = 0, seen_help = 0;
	const char *prev = "";

	server_start(&s);
	assert_int_equal(loom_admin_call(s.path, "help", 0, NULL, TIMEOUT_MS, &res, &err), 0);
	assert_true(json_is_array(res));
	assert_int_equal(json_array_size(res), 6);
	json_array_foreach(res, i, e)
	{
		const char *name = json_string_value(json_object_get(e, "cmd"));

		assert_non_null(name);
		assert_true(json_is_string(json_object_get(e, "args")));
		assert_true(json_is_string(json_object_get(e, "help")));
		assert_true(strcmp(prev, name) < 0); /* sorted */
		prev = name;
		if (!strcmp(name, "echo")) {
			seen_echo = 1;
			assert_string_equal(json_string_value(json_object_get(e, "args")),
					    "[ARG...]");
			assert_string_equal(json_string_value(json_object_get(e, "help")),
					    "return the arguments");
		}
		if (!strcmp(name, "help"))
			seen_help = 1;
	}
	assert_true(seen_echo && seen_help);
	json_decref(res);
	server_stop(&s);
}

static void test_register_errors(void **state)
{
	struct server s;

	server_init(&s, NULL);
	assert_int_equal(loom_admin_register(s.admin, "echo", "", "", h_echo, &s), -EEXIST);
	assert_int_equal(loom_admin_register(s.admin, "help", "", "", h_echo, &s), -EEXIST);
	assert_int_equal(loom_admin_register(s.admin, "", "", "", h_echo, &s), -EINVAL);
	assert_int_equal(loom_admin_register(s.admin, "has space", "", "", h_echo, &s), -EINVAL);
	assert_int_equal(loom_admin_register(s.admin, NULL, "", "", h_echo, &s), -EINVAL);
	assert_int_equal(loom_admin_register(s.admin, "ok-name", "", "", NULL, &s), -EINVAL);
	assert_int_equal(loom_admin_register(s.admin, "set-log-level", "LEVEL", "x", h_echo, &s),
			 0);
	server_run(&s);
	server_stop(&s);
	assert_null(loom_admin_free(NULL));
}

static void test_bad_requests(void **state)
{
	static const char *const bad[] = {
		"not json\n",
		"{\"cmd\": 5}\n",
		"{\"args\": []}\n",
		"[1, 2]\n",
		"{\"cmd\": \"echo\", \"args\": [1]}\n",
		"{\"cmd\": \"echo\", \"args\": \"a\"}\n",
		"{\"cmd\": \"echo\", \"cmd\": \"echo\"}\n",
		"{\"cmd\": \"no-such\"}\n",
		"\"\xff\xfe\"\n",
		"{\"cmd\": \"echo\\u0000x\"}\n",
		"{\"cmd\": \"echo\", \"args\": [\"a\\u0000b\"]}\n",
		"{\"cmd\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}\n",
		"{\"cmd\": \"fail\", \"args\": [\"LONG\"]}\n",
	};
	char *long_utf8 = malloc(2000);
	struct server s;
	struct raw r;
	json_t *j;

	/* A handler message cut inside a UTF-8 character by struct loom_err's size. */
	assert_non_null(long_utf8);
	strcpy(long_utf8, "{\"cmd\": \"fail\", \"args\": [\"x");
	for (int i = 0; i < 300; i++)
		strcat(long_utf8, "\xc3\xa9");
	strcat(long_utf8, "\"]}\n");

	server_start(&s);
	raw_open(&r, s.path);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		raw_sends(&r, strcmp(bad[i], "{\"cmd\": \"fail\", \"args\": [\"LONG\"]}\n") ?
				      bad[i] :
				      long_utf8);
		j = raw_reply(&r, 0);
		if (i == 9)
			assert_non_null(strstr(reply_error(j), "invalid JSON")); /* NUL */
		if (i == 10)
			assert_non_null(strstr(reply_error(j), "invalid JSON"));
		if (i == 11)
			assert_non_null(strstr(reply_error(j), "longer than 63"));
		if (i == 12)
			assert_int_equal(
				strncmp(reply_error(j), "not allowed: x\xc3\xa9\xc3\xa9", 17), 0);
		if (i == 0)
			assert_non_null(strstr(reply_error(j), "invalid JSON"));
		if (i == 7)
			assert_non_null(strstr(reply_error(j), "unknown command 'no-such'"));
		json_decref(j);
	}
	/* Blank lines are skipped; CRLF is accepted; the connection still works. */
	raw_sends(&r, "\n  \r\n{\"cmd\": \"echo\", \"args\": [\"still\"]}\r\n");
	j = raw_reply(&r, 1);
	assert_string_equal(json_string_value(json_array_get(json_object_get(j, "result"), 0)),
			    "still");
	json_decref(j);
	/* "args": null is the same as no arguments. */
	raw_sends(&r, "{\"cmd\": \"echo\", \"args\": null}\n");
	j = raw_reply(&r, 1);
	assert_int_equal(json_array_size(json_object_get(j, "result")), 0);
	json_decref(j);
	raw_close(&r);
	free(long_utf8);
	server_stop(&s);
}

static void test_oversize(void **state)
{
	size_t n = LOOM_ADMIN_LINE_MAX + 5000;
	char *junk = malloc(n + 1);
	struct server s;
	struct raw r;
	json_t *j;
	char *line;

	assert_non_null(junk);
	memset(junk, 'x', n);
	server_start(&s);

	/* A line that never ends. */
	raw_open(&r, s.path);
	raw_send(&r, junk, n);
	j = raw_reply(&r, 0);
	assert_non_null(strstr(reply_error(j), "longer than"));
	json_decref(j);
	assert_null(raw_line(&r)); /* closed */
	raw_close(&r);

	/* A complete but oversize line, after a good request that is still answered. */
	raw_open(&r, s.path);
	raw_sends(&r, "{\"cmd\": \"echo\"}\n");
	junk[n - 1] = '\n';
	raw_send(&r, junk, n);
	json_decref(raw_reply(&r, 1));
	j = raw_reply(&r, 0);
	assert_non_null(strstr(reply_error(j), "longer than"));
	json_decref(j);
	line = raw_line(&r);
	assert_null(line);
	raw_close(&r);

	/* Exactly at the limit is fine (and answered with an error: not JSON). */
	raw_open(&r, s.path);
	junk[LOOM_ADMIN_LINE_MAX] = '\n';
	raw_send(&r, junk, LOOM_ADMIN_LINE_MAX + 1);
	j = raw_reply(&r, 0);
	assert_non_null(strstr(reply_error(j), "invalid JSON"));
	json_decref(j);
	raw_sends(&r, "{\"cmd\": \"echo\"}\n");
	json_decref(raw_reply(&r, 1));
	raw_close(&r);

	free(junk);
	server_stop(&s);
}

static void test_pipelined(void **state)
{
	enum {
		N = 500
	};
	char *all = NULL;
	size_t all_len = 0;
	FILE *f = open_memstream(&all, &all_len);
	struct server s;
	struct raw r;

	assert_non_null(f);
	for (int i = 0; i < N; i++) {
		if (i % 50 == 7)
			fprintf(f, "{\"cmd\": \"fail\", \"args\": [\"%d\"]}\n", i);
		else
			fprintf(f, "{\"cmd\": \"echo\", \"args\": [\"%d\"]}\n", i);
	}
	fclose(f);

	server_start(&s);
	raw_open(&r, s.path);
	raw_send(&r, all, all_len);
	for (int i = 0; i < N; i++) {
		char want[32];
		json_t *j;

		if (i % 50 == 7) {
			j = raw_reply(&r, 0);
			snprintf(want, sizeof(want), "not allowed: %d", i);
			assert_string_equal(reply_error(j), want);
		} else {
			j = raw_reply(&r, 1);
			snprintf(want, sizeof(want), "%d", i);
			assert_string_equal(
				json_string_value(json_array_get(json_object_get(j, "result"), 0)),
				want);
		}
		json_decref(j);
	}
	raw_close(&r);
	free(all);
	server_stop(&s);
}

static void test_half_close(void **state)
{
	struct server s;
	struct raw r;
	json_t *j;

	server_start(&s);
	/* Two requests, the last without its newline, then EOF: both are answered. */
	raw_open(&r, s.path);
	raw_sends(&r,
		  "{\"cmd\": \"echo\", \"args\": [\"y\"]}\n{\"cmd\": \"echo\", \"args\": [\"z\"]}");
	assert_int_equal(shutdown(r.fd, SHUT_WR), 0);
	j = raw_reply(&r, 1);
	assert_string_equal(json_string_value(json_array_get(json_object_get(j, "result"), 0)),
			    "y");
	json_decref(j);
	j = raw_reply(&r, 1);
	assert_string_equal(json_string_value(json_array_get(json_object_get(j, "result"), 0)),
			    "z");
	json_decref(j);
	assert_null(raw_line(&r));
	raw_close(&r);
	server_stop(&s);
}

static void test_large_reply(void **state)
{
	static const char *const n_arg[] = {"12000000"};
	struct loom_err err = {{0}};
	struct server s;
	json_t *res = NULL;
	struct raw r;
	const char *v;

	server_start(&s);
	assert_int_equal(loom_admin_call(s.path, "big", 1, n_arg, TIMEOUT_MS, &res, &err), 0);
	assert_true(json_is_string(res));
	assert_int_equal(json_string_length(res), 12000000);
	v = json_string_value(res);
	assert_int_equal(v[0], 'x');
	assert_int_equal(v[11999999], 'x');
	json_decref(res);

	/* Several large replies pipelined on one connection (backpressure path). */
	raw_open(&r, s.path);
	for (int i = 0; i < 4; i++)
		raw_sends(&r, "{\"cmd\": \"big\", \"args\": [\"3000000\"]}\n");
	raw_sends(&r, "{\"cmd\": \"echo\", \"args\": [\"after\"]}\n");
	for (int i = 0; i < 4; i++) {
		json_t *j = raw_reply(&r, 1);

		assert_int_equal(json_string_length(json_object_get(j, "result")), 3000000);
		json_decref(j);
	}
	json_decref(raw_reply(&r, 1));
	raw_close(&r);

	/* A client that leaves in the middle of a large reply does not hurt the server. */
	raw_open(&r, s.path);
	raw_sends(&r, "{\"cmd\": \"big\", \"args\": [\"20000000\"]}\n");
	raw_close(&r);
	res = NULL;
	assert_int_equal(loom_admin_call(s.path, "echo", 0, NULL, TIMEOUT_MS, &res, &err), 0);
	json_decref(res);
	server_stop(&s);
}

static void test_stale_socket_replaced(void **state)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct loom_err err = {{0}};
	char path[108];
	struct server s;
	json_t *res = NULL;
	int fd;

	test_path(path, sizeof(path), "stale");
	/* A socket file whose daemon died: bound, never listened, closed. */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);
	assert_int_equal(access(path, F_OK), 0);

	/* The client reports it as refused, with the hint. */
	assert_int_equal(loom_admin_call(path, "echo", 0, NULL, TIMEOUT_MS, &res, &err),
			 -ECONNREFUSED);
	assert_non_null(strstr(err.msg, "cannot reach admin socket"));
	assert_non_null(strstr(err.msg, "is loomd running?"));

	server_init(&s, path);
	server_run(&s);
	assert_int_equal(loom_admin_call(path, "echo", 0, NULL, TIMEOUT_MS, &res, &err), 0);
	json_decref(res);
	server_stop(&s);
}

static void test_live_socket_not_stolen(void **state)
{
	struct loom_err err = {{0}};
	struct event_base *base2 = event_base_new();
	struct server s;
	json_t *res = NULL;
	char path[108];
	FILE *f;

	server_start(&s);
	errno = 0;
	assert_null(loom_admin_new(base2, s.path, &err));
	assert_int_equal(errno, EADDRINUSE);
	assert_non_null(strstr(err.msg, "in use"));
	/* The first server still owns the path and answers. */
	assert_int_equal(loom_admin_call(s.path, "echo", 0, NULL, TIMEOUT_MS, &res, &err), 0);
	json_decref(res);
	server_stop(&s);

	/* A file that is not a socket is left alone. */
	test_path(path, sizeof(path), "file");
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("keep me\n", f);
	fclose(f);
	errno = 0;
	assert_null(loom_admin_new(base2, path, &err));
	assert_int_equal(errno, EEXIST);
	assert_non_null(strstr(err.msg, "not a socket"));
	assert_int_equal(access(path, F_OK), 0);
	unlink(path);

	/* Too long a path. */
	char longp[200];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	errno = 0;
	assert_null(loom_admin_new(base2, longp, &err));
	assert_int_equal(errno, ENAMETOOLONG);
	event_base_free(base2);
}

static void test_unreachable(void **state)
{
	struct loom_err err = {{0}};
	char path[108];
	json_t *res = NULL;

	test_path(path, sizeof(path), "none");
	assert_int_equal(loom_admin_call(path, "stats", 0, NULL, TIMEOUT_MS, &res, &err), -ENOENT);
	assert_null(res);
	assert_non_null(strstr(err.msg, "cannot reach admin socket"));
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "(is loomd running?)"));
}

static void test_client_timeout(void **state)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct loom_err err = {{0}};
	json_t *res = NULL;
	char path[108];
	int64_t t0, dt;
	int fd;

	/* A server that accepts connections (the kernel does) but never answers. */
	test_path(path, sizeof(path), "mute");
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(fd, 8), 0);

	t0 = now_ms();
	assert_int_equal(loom_admin_call(path, "stats", 0, NULL, 300, &res, &err), -ETIMEDOUT);
	dt = now_ms() - t0;
	assert_true(dt >= 250);
	assert_true(dt < 3000);
	assert_null(res);
	assert_non_null(strstr(err.msg, "within the timeout"));

	/* Drop the connection the timed-out call left in the backlog. */
	close(accept(fd, NULL, NULL));

	/* A server that answers with garbage, or closes without answering. */
	{
		pid_t pid = fork();
		int status;

		assert_true(pid >= 0);
		if (pid == 0) {
			char buf[4096];
			int c;

			alarm(10); /* never outlive a parent that failed */
			c = accept(fd, NULL, NULL);
			(void)!read(c, buf, sizeof(buf));
			(void)!write(c, "this is not json\n", 17);
			close(c);
			c = accept(fd, NULL, NULL);
			(void)!read(c, buf, sizeof(buf));
			(void)!write(c, "{\"result\": 1}\n", 14);
			close(c);
			c = accept(fd, NULL, NULL);
			(void)!read(c, buf, sizeof(buf));
			close(c);
			_exit(0);
		}
		assert_int_equal(loom_admin_call(path, "x", 0, NULL, TIMEOUT_MS, &res, &err),
				 -EPROTO);
		assert_non_null(strstr(err.msg, "malformed reply"));
		assert_int_equal(loom_admin_call(path, "x", 0, NULL, TIMEOUT_MS, &res, &err),
				 -EPROTO);
		assert_int_equal(loom_admin_call(path, "x", 0, NULL, TIMEOUT_MS, &res, &err),
				 -ECONNRESET);
		assert_null(res);
		assert_int_equal(waitpid(pid, &status, 0), pid);
	}
	close(fd);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_register_errors),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_oversize),
		cmocka_unit_test(test_pipelined),
		cmocka_unit_test(test_half_close),
		cmocka_unit_test(test_large_reply),
		cmocka_unit_test(test_stale_socket_replaced),
		cmocka_unit_test(test_live_socket_not_stolen),
		cmocka_unit_test(test_unreachable),
		cmocka_unit_test(test_client_timeout),
	};

	/* A server must ignore SIGPIPE (admin.h). */
	signal(SIGPIPE, SIG_IGN);
	atexit(remove_made_paths);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
