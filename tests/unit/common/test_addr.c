/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for common/addr: every form loom_addr_parse() accepts (with
 * and without LOOM_ADDR_LISTEN and LOOM_ADDR_TCP_ONLY), every rejection and
 * its message, the canonical form and its round trip, loom_addr_unix(), and
 * dialing and binding over Unix sockets, TCP on 127.0.0.1 and, where this
 * machine has it, TCP on ::1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
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

#include "common/addr.h"
#include "common/clock.h"
#include "tests/precond.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- parsing ------------------------------------------------------------------------- */

static void test_parse_good(void **state)
{
	static const struct {
		const char *s;
		unsigned flags;
		enum loom_addr_kind kind;
		const char *path_or_host;
		uint16_t port;
		const char *canonical;
	} good[] = {
		{"unix:/run/loom/loomd.sock", 0, LOOM_ADDR_UNIX, "/run/loom/loomd.sock", 0,
		 "unix:/run/loom/loomd.sock"},
		{"unix:rel.sock", 0, LOOM_ADDR_UNIX, "rel.sock", 0, "unix:rel.sock"},
		{"unix:host:80", 0, LOOM_ADDR_UNIX, "host:80", 0, "unix:host:80"},
		{"/tmp/x.sock", 0, LOOM_ADDR_UNIX, "/tmp/x.sock", 0, "unix:/tmp/x.sock"},
		{"./x.sock", 0, LOOM_ADDR_UNIX, "./x.sock", 0, "unix:./x.sock"},
		{"../x.sock", 0, LOOM_ADDR_UNIX, "../x.sock", 0, "unix:../x.sock"},
		{"/a:1", 0, LOOM_ADDR_UNIX, "/a:1", 0, "unix:/a:1"},
		{"tcp:127.0.0.1:7420", 0, LOOM_ADDR_TCP, "127.0.0.1", 7420, "tcp:127.0.0.1:7420"},
		{"127.0.0.1:7420", 0, LOOM_ADDR_TCP, "127.0.0.1", 7420, "tcp:127.0.0.1:7420"},
		{"ctl.example.net:1", 0, LOOM_ADDR_TCP, "ctl.example.net", 1,
		 "tcp:ctl.example.net:1"},
		{"h:65535", 0, LOOM_ADDR_TCP, "h", 65535, "tcp:h:65535"},
		{"h:007", 0, LOOM_ADDR_TCP, "h", 7, "tcp:h:7"},
		{"[::1]:7420", 0, LOOM_ADDR_TCP, "::1", 7420, "tcp:[::1]:7420"},
		{"tcp:[fd00::5]:80", 0, LOOM_ADDR_TCP, "fd00::5", 80, "tcp:[fd00::5]:80"},
		{"[fe80::1%lo]:80", 0, LOOM_ADDR_TCP, "fe80::1%lo", 80, "tcp:[fe80::1%lo]:80"},
		{"[localhost]:80", 0, LOOM_ADDR_TCP, "localhost", 80, "tcp:localhost:80"},
		/* LOOM_ADDR_LISTEN: every address, a kernel-chosen port */
		{":7420", LOOM_ADDR_LISTEN, LOOM_ADDR_TCP, "", 7420, "tcp::7420"},
		{"[]:7420", LOOM_ADDR_LISTEN, LOOM_ADDR_TCP, "", 7420, "tcp::7420"},
		{"127.0.0.1:0", LOOM_ADDR_LISTEN, LOOM_ADDR_TCP, "127.0.0.1", 0, "tcp:127.0.0.1:0"},
		{"[::]:0", LOOM_ADDR_LISTEN | LOOM_ADDR_TCP_ONLY, LOOM_ADDR_TCP, "::", 0,
		 "tcp:[::]:0"},
		{"tcp:0.0.0.0:9464", LOOM_ADDR_LISTEN | LOOM_ADDR_TCP_ONLY, LOOM_ADDR_TCP,
		 "0.0.0.0", 9464, "tcp:0.0.0.0:9464"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(good); i++) {
		struct loom_err err = {{0}};
		struct loom_addr a, b;
		char buf[LOOM_ADDR_STR_MAX];

		if (loom_addr_parse("address", good[i].s, good[i].flags, &a, &err) != 0)
			fail_msg("%s: %s", good[i].s, err.msg);
		assert_int_equal(a.kind, good[i].kind);
		if (a.kind == LOOM_ADDR_UNIX) {
			assert_string_equal(a.path, good[i].path_or_host);
		} else {
			assert_string_equal(a.host, good[i].path_or_host);
			assert_int_equal(a.port, good[i].port);
		}
		assert_string_equal(loom_addr_str(&a, buf), good[i].canonical);
		/* the canonical form parses back to the same address */
		assert_int_equal(loom_addr_parse("address", buf, good[i].flags, &b, &err), 0);
		assert_int_equal(b.kind, a.kind);
		assert_string_equal(b.kind == LOOM_ADDR_UNIX ? b.path : b.host,
				    a.kind == LOOM_ADDR_UNIX ? a.path : a.host);
		assert_int_equal(b.port, a.port);
	}
}

static void test_parse_bad(void **state)
{
	static const struct {
		const char *s;
		unsigned flags;
		int code;
		const char *why;
	} bad[] = {
		{"unix:", 0, -EINVAL, "empty socket path"},
		{"", 0, -EINVAL, "missing ':' and port; expected unix:PATH"},
		{"host", 0, -EINVAL, "missing ':' and port; expected unix:PATH"},
		{"loomd.sock", 0, -EINVAL, "missing ':' and port"},
		{"tcp:", 0, -EINVAL, "missing ':' and port"},
		{"tcp:host", 0, -EINVAL, "missing ':' and port"},
		{"host", LOOM_ADDR_TCP_ONLY, -EINVAL, "missing ':' and port; expected HOST:PORT"},
		{"h:", 0, -EINVAL, "missing port after ':'"},
		{"[::1]:", 0, -EINVAL, "missing port after ':'"},
		{"h:x1", 0, -EINVAL, "port \"x1\" is not a number"},
		{"h:-1", 0, -EINVAL, "port \"-1\" is not a number"},
		{"h:+80", 0, -EINVAL, "port \"+80\" is not a number"},
		{"h: 80", 0, -EINVAL, "port \" 80\" is not a number"},
		{"h:0", 0, -EINVAL, "port 0 is out of range (1..65535)"},
		{"h:65536", 0, -EINVAL, "port 65536 is out of range (1..65535)"},
		{"h:65536", LOOM_ADDR_LISTEN, -EINVAL, "port 65536 is out of range (0..65535)"},
		{"h:99999999999999999999999", 0, -EINVAL, "out of range"},
		{"[::1", 0, -EINVAL, "unterminated '['"},
		{"tcp:[::1", 0, -EINVAL, "unterminated '['"},
		{"[::1]80", 0, -EINVAL, "expected ':' and a port after ']'"},
		{"[::1]", 0, -EINVAL, "expected ':' and a port after ']'"},
		{"::1:80", 0, -EINVAL, "an IPv6 host goes in brackets: [::1]:80"},
		{"tcp:fd00::5:80", 0, -EINVAL, "an IPv6 host goes in brackets: [fd00::5]:80"},
		{":80", 0, -EINVAL, "empty host"},
		{"tcp::80", 0, -EINVAL, "empty host"},
		{"[]:80", 0, -EINVAL, "empty host"},
		{"[[x]:80", 0, -EINVAL, "stray '[' or ']' in host \"[x\""},
		{"a]b:80", 0, -EINVAL, "stray '[' or ']' in host \"a]b\""},
		{"tcp:a[b:80", 0, -EINVAL, "stray '[' or ']' in host"},
		{"unix:/x", LOOM_ADDR_TCP_ONLY, -EINVAL, "a Unix socket is not accepted here"},
		{"/x", LOOM_ADDR_TCP_ONLY, -EINVAL, "a Unix socket is not accepted here"},
		{"./x", LOOM_ADDR_TCP_ONLY | LOOM_ADDR_LISTEN, -EINVAL,
		 "a Unix socket is not accepted here"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		struct loom_err err = {{0}};
		struct loom_addr a = {.kind = LOOM_ADDR_TCP, .port = 4242};
		char want[256];
		int r = loom_addr_parse("address", bad[i].s, bad[i].flags, &a, &err);

		if (r != bad[i].code)
			fail_msg("%s: %d, not %d (%s)", bad[i].s, r, bad[i].code, err.msg);
		/* the message names the input, then says why */
		snprintf(want, sizeof(want), "address \"%s\": ", bad[i].s);
		if (strncmp(err.msg, want, strlen(want)) || !strstr(err.msg, bad[i].why))
			fail_msg("%s: message \"%s\", expected \"%s...%s\"", bad[i].s, err.msg,
				 want, bad[i].why);
		/* ret is not written on failure */
		assert_int_equal(a.kind, LOOM_ADDR_TCP);
		assert_int_equal(a.port, 4242);
	}
	/* err may be NULL */
	assert_int_equal(loom_addr_parse("address", "h:0", 0, &(struct loom_addr){0}, NULL),
			 -EINVAL);
}

static void test_parse_limits(void **state)
{
	struct loom_err err = {{0}};
	struct loom_addr a;
	char s[600], host[LOOM_ADDR_HOST_MAX + 1];

	(void)state;
	/* the longest path sun_path takes, and one byte more */
	memset(s, 0, sizeof(s));
	memcpy(s, "unix:/", 6);
	memset(s + 6, 'p', LOOM_ADDR_PATH_MAX - 2);
	assert_int_equal(loom_addr_parse("address", s, 0, &a, &err), 0);
	assert_int_equal(strlen(a.path), LOOM_ADDR_PATH_MAX - 1);
	s[6 + LOOM_ADDR_PATH_MAX - 2] = 'p';
	assert_int_equal(loom_addr_parse("address", s, 0, &a, &err), -ENAMETOOLONG);
	assert_non_null(strstr(err.msg, "socket path longer than 107 bytes"));
	assert_int_equal(loom_addr_parse("address", s + 5, 0, &a, &err), -ENAMETOOLONG);

	/* the longest host, and one byte more, bare and in brackets */
	memset(host, 'h', sizeof(host));
	host[LOOM_ADDR_HOST_MAX - 1] = 0;
	snprintf(s, sizeof(s), "%s:1", host);
	assert_int_equal(loom_addr_parse("address", s, 0, &a, &err), 0);
	assert_int_equal(strlen(a.host), LOOM_ADDR_HOST_MAX - 1);
	{
		char buf[LOOM_ADDR_STR_MAX];

		/* the longest canonical form fits */
		snprintf(s, sizeof(s), "[%.*s:]:65535", LOOM_ADDR_HOST_MAX - 2, host);
		assert_int_equal(loom_addr_parse("address", s, 0, &a, &err), 0);
		assert_int_equal(strlen(loom_addr_str(&a, buf)), LOOM_ADDR_STR_MAX - 1);
	}
	host[LOOM_ADDR_HOST_MAX - 1] = 'h';
	host[LOOM_ADDR_HOST_MAX] = 0;
	snprintf(s, sizeof(s), "%s:1", host);
	assert_int_equal(loom_addr_parse("address", s, 0, &a, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "host longer than 255 bytes"));
	snprintf(s, sizeof(s), "[%s]:1", host);
	assert_int_equal(loom_addr_parse("address", s, 0, &a, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "host longer than 255 bytes"));
}

static void test_unix_path(void **state)
{
	struct loom_err err = {{0}};
	struct loom_addr a;
	char buf[LOOM_ADDR_STR_MAX], longp[200];

	(void)state;
	/* taken as it stands: no prefix, no TCP form */
	assert_int_equal(loom_addr_unix("listen_unix", "loomd.sock", &a, &err), 0);
	assert_int_equal(a.kind, LOOM_ADDR_UNIX);
	assert_string_equal(a.path, "loomd.sock");
	assert_string_equal(loom_addr_str(&a, buf), "unix:loomd.sock");
	assert_int_equal(loom_addr_unix("listen_unix", "h:80", &a, &err), 0);
	assert_string_equal(a.path, "h:80");
	assert_int_equal(loom_addr_unix("listen_unix", "unix:/x", &a, &err), 0);
	assert_string_equal(a.path, "unix:/x");

	assert_int_equal(loom_addr_unix("listen_unix", "", &a, &err), -EINVAL);
	assert_string_equal(err.msg, "listen_unix \"\": empty socket path");
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = 0;
	assert_int_equal(loom_addr_unix("listen_unix", longp, &a, &err), -ENAMETOOLONG);
	assert_true(!strncmp(err.msg, "listen_unix \"/aaa", 17));
	assert_non_null(strstr(err.msg, "socket path longer than 107 bytes"));
}

/* ---- sockets ------------------------------------------------------------------------- */

static uint64_t deadline_in_ms(int ms)
{
	return loom_clock_mono_ns() + (uint64_t)ms * LOOM_NS_PER_MS;
}

/* A private folder for socket files: dir (size 64). */
static void make_dir(char *dir)
{
	snprintf(dir, 64, "/tmp/loom-test-addr-XXXXXX");
	assert_non_null(mkdtemp(dir));
}

static void test_unix_bind_dial(void **state)
{
	struct loom_err err = {{0}};
	struct loom_addr a;
	char dir[64], path[128], s[160];
	struct stat st;
	int lfd, cfd, afd;

	(void)state;
	make_dir(dir);
	snprintf(path, sizeof(path), "%s/x.sock", dir);
	snprintf(s, sizeof(s), "unix:%s", path);
	assert_int_equal(loom_addr_parse("address", s, 0, &a, &err), 0);

	/* nobody there yet */
	cfd = loom_addr_dial("connect", &a, deadline_in_ms(2000), 0, &err);
	assert_int_equal(cfd, -ENOENT);
	snprintf(s, sizeof(s), "connect unix:%s: %s", path, strerror(ENOENT));
	assert_string_equal(err.msg, s);

	/* bind, listen, dial: a blocking socket, and a non-blocking one */
	lfd = loom_addr_bind("listen_unix", &a, LOOM_ADDR_NONBLOCK, &err);
	if (lfd < 0)
		fail_msg("bind: %s", err.msg);
	assert_true(fcntl(lfd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(lfd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(listen(lfd, 8), 0);
	cfd = loom_addr_dial("connect", &a, deadline_in_ms(2000), 0, &err);
	if (cfd < 0)
		fail_msg("dial: %s", err.msg);
	assert_false(fcntl(cfd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(cfd, F_GETFD) & FD_CLOEXEC);
	afd = accept(lfd, NULL, NULL);
	assert_true(afd >= 0);
	assert_int_equal(write(cfd, "x", 1), 1);
	{
		char c = 0;

		assert_int_equal(read(afd, &c, 1), 1);
		assert_int_equal(c, 'x');
	}
	close(afd);
	close(cfd);
	cfd = loom_addr_dial("connect", &a, deadline_in_ms(2000), LOOM_ADDR_NONBLOCK, &err);
	assert_true(cfd >= 0);
	assert_true(fcntl(cfd, F_GETFL) & O_NONBLOCK);
	close(cfd);
	/* no deadline */
	cfd = loom_addr_dial("connect", &a, UINT64_MAX, 0, &err);
	assert_true(cfd >= 0);
	close(cfd);

	/* a live socket is not taken over */
	assert_int_equal(loom_addr_bind("listen_unix", &a, 0, &err), -EADDRINUSE);
	assert_non_null(strstr(err.msg, "another process is listening"));
	close(lfd);

	/* a stale one (nobody listens) is */
	lfd = loom_addr_bind("listen_unix", &a, 0, &err);
	if (lfd < 0)
		fail_msg("bind over a stale socket: %s", err.msg);
	assert_false(fcntl(lfd, F_GETFL) & O_NONBLOCK);
	close(lfd);
	unlink(path);

	/* a file that is not a socket is left alone */
	{
		int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);

		assert_true(fd >= 0);
		close(fd);
	}
	assert_int_equal(loom_addr_bind("listen_unix", &a, 0, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "exists and is not a socket; not removing it"));
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	unlink(path);

	/* a folder that is not there */
	snprintf(s, sizeof(s), "%s/nowhere/x.sock", dir);
	assert_int_equal(loom_addr_unix("listen_unix", s, &a, &err), 0);
	assert_int_equal(loom_addr_bind("listen_unix", &a, 0, &err), -ENOENT);
	assert_true(!strncmp(err.msg, "listen_unix /tmp/", 17));
	rmdir(dir);
}

static void test_unix_backlog(void **state)
{
	struct loom_err err = {{0}};
	struct loom_addr a;
	char dir[64], path[128];
	int lfd, fds[64], n = 0, r = 0;

	(void)state;
	make_dir(dir);
	snprintf(path, sizeof(path), "%s/b.sock", dir);
	assert_int_equal(loom_addr_unix("test", path, &a, &err), 0);
	lfd = loom_addr_bind("test", &a, 0, &err);
	assert_true(lfd >= 0);
	assert_int_equal(listen(lfd, 0), 0);
	/* fill the backlog: NOWAIT says EAGAIN at once */
	while (n < (int)ARRAY_LEN(fds)) {
		r = loom_addr_dial("connect", &a, deadline_in_ms(2000),
				   LOOM_ADDR_NONBLOCK | LOOM_ADDR_NOWAIT, &err);
		if (r < 0)
			break;
		fds[n++] = r;
	}
	assert_int_equal(r, -EAGAIN);
	assert_non_null(strstr(err.msg, "connect unix:"));
	/* without NOWAIT it tries again until the deadline */
	r = loom_addr_dial("connect", &a, deadline_in_ms(50), 0, &err);
	assert_int_equal(r, -ETIMEDOUT);
	/* and gets in once the listener accepts */
	close(accept(lfd, NULL, NULL));
	r = loom_addr_dial("connect", &a, deadline_in_ms(10000), 0, &err);
	if (r < 0)
		fail_msg("dial after accept: %s", err.msg);
	close(r);
	while (n > 0)
		close(fds[--n]);
	close(lfd);
	unlink(path);
	rmdir(dir);
}

/* Binds s (LISTEN), listens, dials the port it got; checks a byte goes through. */
static void tcp_round_trip(const char *s, int family)
{
	struct loom_err err = {{0}};
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct loom_addr a, d;
	char dial[LOOM_ADDR_STR_MAX], c = 0;
	int lfd, cfd, afd;
	uint16_t port;

	assert_int_equal(loom_addr_parse("listen_tcp", s, LOOM_ADDR_LISTEN | LOOM_ADDR_TCP_ONLY, &a,
					 &err),
			 0);
	lfd = loom_addr_bind("listen_tcp", &a, LOOM_ADDR_NONBLOCK, &err);
	if (lfd < 0)
		fail_msg("bind %s: %s", s, err.msg);
	assert_int_equal(listen(lfd, 8), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&ss, &len), 0);
	assert_int_equal(ss.ss_family, family);
	port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port :
					 ((struct sockaddr_in6 *)&ss)->sin6_port);
	assert_true(port > 0);
	/* SO_REUSEADDR */
	{
		int one = 0;
		socklen_t ol = sizeof(one);

		assert_int_equal(getsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, &ol), 0);
		assert_true(one);
	}
	d = a;
	d.port = port;
	loom_addr_str(&d, dial);
	assert_int_equal(loom_addr_parse("address", dial, 0, &d, &err), 0);
	cfd = loom_addr_dial("connect", &d, deadline_in_ms(5000), 0, &err);
	if (cfd < 0)
		fail_msg("dial %s: %s", dial, err.msg);
	for (int i = 0; i < 500 && (afd = accept(lfd, NULL, NULL)) < 0; i++)
		usleep(10000);
	assert_true(afd >= 0);
	assert_int_equal(write(cfd, "t", 1), 1);
	assert_int_equal(read(afd, &c, 1), 1);
	assert_int_equal(c, 't');
	close(afd);
	close(cfd);

	/* the same port again while it is bound and listening: refused, naming HOST:PORT */
	d.port = port;
	assert_true(loom_addr_bind("listen_tcp", &d, 0, &err) < 0);
	loom_addr_str(&d, dial);
	assert_true(!strncmp(err.msg, "listen_tcp ", 11));
	assert_non_null(strstr(err.msg, dial + 4));
	close(lfd);

	/* nobody listens there now */
	cfd = loom_addr_dial("connect", &d, deadline_in_ms(5000), 0, &err);
	assert_int_equal(cfd, -ECONNREFUSED);
	assert_true(!strncmp(err.msg, "connect tcp:", 12));
}

static void test_tcp4(void **state)
{
	(void)state;
	tcp_round_trip("127.0.0.1:0", AF_INET);
	tcp_round_trip("tcp:127.0.0.1:0", AF_INET);
}

static void test_tcp6(void **state)
{
	(void)state;
	tcp_round_trip("[::1]:0", AF_INET6);
}

/* Why this machine has no TCP on ::1, or NULL when it has. */
static const char *no_tcp6(void)
{
	static char why[128];
	struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd >= 0 && bind(fd, (struct sockaddr *)&in6, sizeof(in6)) == 0) {
		close(fd);
		return NULL;
	}
	snprintf(why, sizeof(why), "no TCP over IPv6 to ::1 here: %s", strerror(errno));
	if (fd >= 0)
		close(fd);
	return why;
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good),     cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_parse_limits),   cmocka_unit_test(test_unix_path),
		cmocka_unit_test(test_unix_bind_dial), cmocka_unit_test(test_unix_backlog),
		cmocka_unit_test(test_tcp4),           cmocka_unit_test(test_tcp6),
	};
	size_t n = ARRAY_LEN(tests);

	n = precond_leave_out(tests, n, test_tcp6, no_tcp6());
	return precond_run(tests, n, NULL, NULL);
}
