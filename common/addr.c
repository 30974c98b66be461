/* SPDX-License-Identifier: BSD-3-Clause */
#include "common/addr.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/unixsock.h"

_Static_assert(LOOM_ADDR_PATH_MAX == sizeof(((struct sockaddr_un *)0)->sun_path),
	       "LOOM_ADDR_PATH_MAX is sun_path's size");

/* ---- parsing --------------------------------------------------------------------------------- */

#define FORMS "expected unix:PATH, /PATH, ./PATH, tcp:HOST:PORT, HOST:PORT or [IPV6]:PORT"

static int set_path(const char *what, const char *input, const char *path, struct loom_addr *ret,
		    struct loom_err *err)
{
	size_t n = strlen(path);

	if (n == 0)
		return loom_err_set(err, EINVAL, "%s \"%s\": empty socket path", what, input);
	if (n >= LOOM_ADDR_PATH_MAX)
		return loom_err_set(err, ENAMETOOLONG,
				    "%s \"%s\": socket path longer than %d bytes (sun_path)", what,
				    input, LOOM_ADDR_PATH_MAX - 1);
	memset(ret, 0, sizeof(*ret));
	ret->kind = LOOM_ADDR_UNIX;
	memcpy(ret->path, path, n + 1);
	return 0;
}

/* PORT: decimal digits only, 1..65535 (0 too with LOOM_ADDR_LISTEN). */
static int parse_port(const char *what, const char *input, const char *p, unsigned flags,
		      uint16_t *ret, struct loom_err *err)
{
	unsigned long v = 0;
	unsigned long min = flags & LOOM_ADDR_LISTEN ? 0 : 1;

	if (!*p)
		return loom_err_set(err, EINVAL, "%s \"%s\": missing port after ':'", what, input);
	for (const char *q = p; *q; q++) {
		if (*q < '0' || *q > '9')
			return loom_err_set(err, EINVAL, "%s \"%s\": port \"%s\" is not a number",
					    what, input, p);
		if (v <= 65535)
			v = v * 10 + (unsigned long)(*q - '0');
	}
	if (v < min || v > 65535)
		return loom_err_set(err, EINVAL, "%s \"%s\": port %s is out of range (%lu..65535)",
				    what, input, p, min);
	*ret = (uint16_t)v;
	return 0;
}

int loom_addr_parse(const char *what, const char *s, unsigned flags, struct loom_addr *ret,
		    struct loom_err *err)
{
	const char *hp, *host, *colon;
	struct loom_addr a = {.kind = LOOM_ADDR_TCP};
	size_t hlen;
	int r;

	if (!strncmp(s, "unix:", 5) || s[0] == '/' || s[0] == '.') {
		if (flags & LOOM_ADDR_TCP_ONLY)
			return loom_err_set(
				err, EINVAL,
				"%s \"%s\": a Unix socket is not accepted here; expected "
				"HOST:PORT or [IPV6]:PORT",
				what, s);
		return set_path(what, s, !strncmp(s, "unix:", 5) ? s + 5 : s, ret, err);
	}
	hp = !strncmp(s, "tcp:", 4) ? s + 4 : s;
	if (hp[0] == '[') {
		const char *close = strchr(hp, ']');

		if (!close)
			return loom_err_set(err, EINVAL,
					    "%s \"%s\": unterminated '[' (expected [IPV6]:PORT)",
					    what, s);
		if (close[1] != ':')
			return loom_err_set(err, EINVAL,
					    "%s \"%s\": expected ':' and a port after ']'", what,
					    s);
		host = hp + 1;
		hlen = (size_t)(close - host);
		colon = close + 1;
	} else {
		colon = strrchr(hp, ':');
		if (!colon)
			return loom_err_set(err, EINVAL, "%s \"%s\": missing ':' and port; %s",
					    what, s,
					    flags & LOOM_ADDR_TCP_ONLY ?
						    "expected HOST:PORT or [IPV6]:PORT" :
						    FORMS);
		host = hp;
		hlen = (size_t)(colon - host);
		if (memchr(host, ':', hlen))
			return loom_err_set(err, EINVAL,
					    "%s \"%s\": an IPv6 host goes in brackets: [%.*s]:%s",
					    what, s, (int)hlen, host, colon + 1);
	}
	if (memchr(host, '[', hlen) || memchr(host, ']', hlen))
		return loom_err_set(err, EINVAL, "%s \"%s\": stray '[' or ']' in host \"%.*s\"",
				    what, s, (int)hlen, host);
	if (hlen == 0 && !(flags & LOOM_ADDR_LISTEN))
		return loom_err_set(err, EINVAL, "%s \"%s\": empty host", what, s);
	if (hlen >= sizeof(a.host))
		return loom_err_set(err, EINVAL, "%s \"%s\": host longer than %zu bytes", what, s,
				    sizeof(a.host) - 1);
	r = parse_port(what, s, colon + 1, flags, &a.port, err);
	if (r < 0)
		return r;
	memcpy(a.host, host, hlen);
	a.host[hlen] = 0;
	*ret = a;
	return 0;
}

int loom_addr_unix(const char *what, const char *path, struct loom_addr *ret, struct loom_err *err)
{
	return set_path(what, path, path, ret, err);
}

char *loom_addr_str(const struct loom_addr *a, char buf[LOOM_ADDR_STR_MAX])
{
	if (a->kind == LOOM_ADDR_UNIX)
		snprintf(buf, LOOM_ADDR_STR_MAX, "unix:%s", a->path);
	else
		snprintf(buf, LOOM_ADDR_STR_MAX, strchr(a->host, ':') ? "tcp:[%s]:%u" : "tcp:%s:%u",
			 a->host, (unsigned)a->port);
	return buf;
}

/* ---- sockets --------------------------------------------------------------------------------- */

static socklen_t sun_of(const struct loom_addr *a, struct sockaddr_un *sun)
{
	size_t n = strlen(a->path);

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path, a->path, n + 1);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
}

/* getaddrinfo() of a TCP address; 0 with *ret, or -errno with err. */
static int resolve(const char *what, const struct loom_addr *a, bool passive, struct addrinfo **ret,
		   struct loom_err *err)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)};
	char port[8], s[LOOM_ADDR_STR_MAX];
	int r, e;

	snprintf(port, sizeof(port), "%u", (unsigned)a->port);
	r = getaddrinfo(a->host[0] ? a->host : NULL, port, &hints, ret);
	if (r == 0)
		return 0;
	e = r == EAI_SYSTEM ? (errno ? errno : EIO) : r == EAI_MEMORY ? ENOMEM : EHOSTUNREACH;
	return loom_err_set(err, e, "%s %s: resolving %s: %s", what,
			    passive ? loom_addr_str(a, s) + 4 : loom_addr_str(a, s), a->host,
			    r == EAI_SYSTEM ? strerror(e) : gai_strerror(r));
}

/* ms left before deadline_ns, rounded up (at least 1 while it has not passed); 0 once it has. */
static int left_ms(uint64_t deadline_ns)
{
	uint64_t now = loom_clock_mono_ns(), d, ms;

	if (now >= deadline_ns)
		return 0;
	d = deadline_ns - now;
	ms = d / LOOM_NS_PER_MS + (d % LOOM_NS_PER_MS != 0);
	return ms > 1000000000ULL ? 1000000000 : (int)ms;
}

/* A non-blocking socket connected to sa before deadline_ns; fd or -errno. */
static int connect_one(const struct sockaddr *sa, socklen_t len, uint64_t deadline_ns,
		       unsigned flags)
{
	int fd, r, soerr = 0;
	socklen_t sl = sizeof(soerr);

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (connect(fd, sa, len) == 0)
			return fd;
		if (errno == EINTR)
			continue;
		/* A Unix listener whose backlog is full: try again shortly. */
		if (errno == EAGAIN && sa->sa_family == AF_UNIX) {
			struct timespec ts = {.tv_nsec = 5 * 1000000};

			if (flags & LOOM_ADDR_NOWAIT) {
				r = -EAGAIN;
				goto fail;
			}
			if (!left_ms(deadline_ns)) {
				r = -ETIMEDOUT;
				goto fail;
			}
			nanosleep(&ts, NULL);
			continue;
		}
		break;
	}
	if (errno != EINPROGRESS) {
		r = -errno;
		goto fail;
	}
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		int ms = left_ms(deadline_ns);

		if (!ms) {
			r = -ETIMEDOUT;
			goto fail;
		}
		r = poll(&p, 1, ms);
		if (r > 0)
			break;
		if (r < 0 && errno != EINTR) {
			r = -errno;
			goto fail;
		}
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0) {
		r = -errno;
		goto fail;
	}
	if (soerr) {
		r = -soerr;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return r;
}

int loom_addr_dial(const char *what, const struct loom_addr *a, uint64_t deadline_ns,
		   unsigned flags, struct loom_err *err)
{
	struct addrinfo *res = NULL;
	char s[LOOM_ADDR_STR_MAX];
	int fd = -EHOSTUNREACH, r;

	if (a->kind == LOOM_ADDR_UNIX) {
		struct sockaddr_un sun;
		socklen_t len = sun_of(a, &sun);

		fd = connect_one((const struct sockaddr *)&sun, len, deadline_ns, flags);
	} else {
		r = resolve(what, a, false, &res, err);
		if (r < 0)
			return r;
		for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
			fd = connect_one(ai->ai_addr, ai->ai_addrlen, deadline_ns, flags);
			if (fd >= 0 || fd == -ETIMEDOUT)
				break;
		}
		freeaddrinfo(res);
	}
	if (fd < 0)
		return loom_err_set(err, -fd, "%s %s: %s", what, loom_addr_str(a, s),
				    strerror(-fd));
	if (!(flags & LOOM_ADDR_NONBLOCK) &&
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		r = loom_err_set(err, errno, "%s %s: fcntl: %s", what, loom_addr_str(a, s),
				 strerror(errno));
		close(fd);
		return r;
	}
	return fd;
}

int loom_addr_bind(const char *what, const struct loom_addr *a, unsigned flags,
		   struct loom_err *err)
{
	int type = SOCK_STREAM | SOCK_CLOEXEC | (flags & LOOM_ADDR_NONBLOCK ? SOCK_NONBLOCK : 0);
	char s[LOOM_ADDR_STR_MAX];
	const char *name;
	int fd, r;

	if (a->kind == LOOM_ADDR_UNIX) {
		struct sockaddr_un sun;
		socklen_t len = sun_of(a, &sun);

		r = loom_unixsock_clear_stale(what, a->path, err);
		if (r < 0)
			return r;
		fd = socket(AF_UNIX, type, 0);
		if (fd < 0)
			return loom_err_set(err, errno, "%s %s: socket: %s", what, a->path,
					    strerror(errno));
		if (bind(fd, (const struct sockaddr *)&sun, len) < 0) {
			r = loom_err_set(err, errno, "%s %s: %s", what, a->path, strerror(errno));
			close(fd);
			return r;
		}
		return fd;
	}
	{
		struct addrinfo *res = NULL;
		int one = 1;

		name = loom_addr_str(a, s) + 4; /* HOST:PORT */
		r = resolve(what, a, true, &res, err);
		if (r < 0)
			return r;
		fd = socket(res->ai_family, type, 0);
		if (fd < 0) {
			r = loom_err_set(err, errno, "%s %s: socket: %s", what, name,
					 strerror(errno));
			freeaddrinfo(res);
			return r;
		}
		if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
		    bind(fd, res->ai_addr, res->ai_addrlen) < 0) {
			r = loom_err_set(err, errno, "%s %s: %s", what, name, strerror(errno));
			close(fd);
			freeaddrinfo(res);
			return r;
		}
		freeaddrinfo(res);
		return fd;
	}
}
