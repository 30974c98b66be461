/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libloom_preload: an LD_PRELOAD shim that tags the TCP connections of an
 * unmodified program with the coflow named in $LOOM_COFLOW.
 *
 *   LOOM_COFLOW=42 LD_PRELOAD=libloom_preload.so ./program
 *
 * After each connect() that succeeds (or starts, on a non-blocking socket:
 * EINPROGRESS) and each accept()/accept4() that returns a socket, when the
 * socket is TCP over IPv4 or IPv6, the shim announces its 5-tuple (local end
 * as source, by_address, size unknown) to loomd for that coflow, through one
 * client per process made on first use ($LOOM_CONTROLLER, else the default
 * address; timeout $LOOM_TIMEOUT_MS, default 1000 ms).
 *
 * Invariants: the program's behaviour is unchanged: the real call's result
 * and errno are returned as they were, whatever happens to the announcement.
 * The shim's own sockets (its connection to loomd, name lookups) are never
 * tagged: a thread-local depth counter makes the wrappers pass straight
 * through while the shim works. When loomd cannot be reached the program
 * keeps running; the shim tries again at most every 5 s. It prints nothing
 * unless $LOOM_DEBUG is set (not empty), and then one line per failure.
 * Without $LOOM_COFLOW (or with a value that is not a decimal coflow id) it
 * does nothing but forward the calls.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "controlplane/client/logline.h"
#include "controlplane/client/loom.h"
#include "controlplane/client/sockaddr.h"

#define SHIM_TIMEOUT_MS_DEFAULT 1000
#define SHIM_RETRY_MS           5000

typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);
typedef int (*accept_fn)(int, struct sockaddr *, socklen_t *);
typedef int (*accept4_fn)(int, struct sockaddr *, socklen_t *, int);

/* The exported wrappers; declared here for -Wmissing-prototypes. */
int connect(int fd, const struct sockaddr *addr, socklen_t len);
int accept(int fd, struct sockaddr *addr, socklen_t *len);
int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);

/* Greater than 0 while this thread is inside the shim's own work. */
static _Thread_local int shim_depth;

static pthread_once_t shim_once = PTHREAD_ONCE_INIT;
static bool shim_on;
static bool shim_debug;
static uint64_t shim_coflow;
static int shim_timeout_ms = SHIM_TIMEOUT_MS_DEFAULT;

/* Made on first use, then shared by every thread (libloom is thread-safe). */
static struct loom_client *shim_client;
static int64_t shim_retry_at_ms; /* no new connection attempt before this */

static void *real_sym(void **slot, const char *name)
{
	void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (!f) {
		f = dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	}
	return f;
}

static void *real_connect_p, *real_accept_p, *real_accept4_p;

__attribute__((format(printf, 1, 2))) static void shim_say(const char *fmt, ...)
{
	char line[600];
	va_list ap;
	int n;

	if (!shim_debug)
		return;
	n = snprintf(line, sizeof(line), "loom_preload[%ld]: ", (long)getpid());
	va_start(ap, fmt);
	loom_client_log_line(line, sizeof(line), (size_t)n, fmt, ap);
	va_end(ap);
}

static void shim_init(void)
{
	const char *dbg = getenv("LOOM_DEBUG");
	const char *s = getenv("LOOM_COFLOW");
	const char *t = getenv("LOOM_TIMEOUT_MS");
	unsigned long long v;
	char *end;

	shim_debug = dbg && dbg[0];
	if (!s || !s[0])
		return;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || s[0] < '0' || s[0] > '9') {
		shim_say("LOOM_COFLOW=\"%s\" is not a decimal coflow id; not tagging", s);
		return;
	}
	if (t && t[0]) {
		long ms;

		errno = 0;
		ms = strtol(t, &end, 10);
		if (errno || *end || ms <= 0 || ms > 3600000)
			shim_say("LOOM_TIMEOUT_MS=\"%s\" is not 1..3600000; using %d", t,
				 SHIM_TIMEOUT_MS_DEFAULT);
		else
			shim_timeout_ms = (int)ms;
	}
	shim_coflow = v;
	shim_on = true;
}

static int64_t shim_now_ms(void)
{
	return (int64_t)(loom_clock_mono_ns() / LOOM_NS_PER_MS);
}

/* The process's client, made now if need be; NULL while loomd is unreachable. */
static struct loom_client *shim_get_client(void)
{
	struct loom_client *c = __atomic_load_n(&shim_client, __ATOMIC_ACQUIRE), *expected = NULL;
	struct loom_client_options opts = {.timeout_ms = shim_timeout_ms};
	char name[96];

	if (c)
		return c;
	if (shim_now_ms() < __atomic_load_n(&shim_retry_at_ms, __ATOMIC_RELAXED))
		return NULL;
	snprintf(name, sizeof(name), "loom_preload:%s[%ld]", program_invocation_short_name,
		 (long)getpid());
	opts.name = name;
	c = loom_client_connect(NULL, &opts);
	if (!c) {
		__atomic_store_n(&shim_retry_at_ms, shim_now_ms() + SHIM_RETRY_MS,
				 __ATOMIC_RELAXED);
		shim_say("coflow %llu: %s (flows not tagged; retrying in %d s)",
			 (unsigned long long)shim_coflow, loom_client_strerror(),
			 SHIM_RETRY_MS / 1000);
		return NULL;
	}
	if (!__atomic_compare_exchange_n(&shim_client, &expected, c, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		/* Another thread made one first: use that. */
		loom_client_free(c);
		c = expected;
	}
	return c;
}

/*
 * The tuple of a TCP socket whose connection is still being set up: the
 * local end from getsockname(), the peer from the address given to connect().
 */
static int shim_tuple_pending(int fd, const struct sockaddr *peer, socklen_t plen,
			      struct loom_client_tuple *ret)
{
	struct sockaddr_storage local;
	socklen_t llen = sizeof(local);
	struct loom_client_tuple t = {.protocol = IPPROTO_TCP};
	uint8_t pfam = 0;

	if (plen < sizeof(struct sockaddr_in) ||
	    (peer->sa_family == AF_INET6 && plen < sizeof(struct sockaddr_in6)))
		return -EINVAL;
	if (getsockname(fd, (struct sockaddr *)&local, &llen) < 0)
		return -errno;
	if (!loom_client_sockaddr_side((struct sockaddr *)&local, &t.family, t.src, &t.src_port) ||
	    !loom_client_sockaddr_side(peer, &pfam, t.dst, &t.dst_port) || pfam != t.family)
		return -EAFNOSUPPORT;
	*ret = t;
	return 0;
}

/* True when fd is a TCP socket over IPv4 or IPv6. */
static bool shim_is_tcp(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int type = 0, proto = 0;
	socklen_t olen = sizeof(type);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &olen) < 0 || type != SOCK_STREAM)
		return false;
	olen = sizeof(proto);
	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &olen) == 0 && proto != IPPROTO_TCP)
		return false;
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return false;
	return ss.ss_family == AF_INET || ss.ss_family == AF_INET6;
}

/*
 * Announces fd's flow for $LOOM_COFLOW. peer: the address given to a
 * connect() still in progress, else NULL (the socket is connected). Keeps
 * errno as it was.
 */
static void shim_tag(int fd, const struct sockaddr *peer, socklen_t plen)
{
	struct loom_client_announce a = {0};
	struct loom_client *c;
	int saved = errno, r;

	pthread_once(&shim_once, shim_init);
	if (!shim_on)
		goto out;
	shim_depth++;
	if (!shim_is_tcp(fd))
		goto done;
	a.coflow_id = shim_coflow;
	a.flow.by_address = true;
	r = peer ? shim_tuple_pending(fd, peer, plen, &a.flow.tuple) :
		   loom_client_socket_tuple(fd, &a.flow.tuple);
	if (r < 0) {
		shim_say("coflow %llu: socket %d: cannot read its addresses: %s",
			 (unsigned long long)shim_coflow, fd, strerror(-r));
		goto done;
	}
	c = shim_get_client();
	if (!c)
		goto done;
	r = loom_client_flows_announce(c, &a, 1);
	if (r != 1) {
		const struct loom_client_tuple *t = &a.flow.tuple;
		int af = t->family == 4 ? AF_INET : AF_INET6;
		char s[INET6_ADDRSTRLEN] = "?", d[INET6_ADDRSTRLEN] = "?";

		inet_ntop(af, t->src, s, sizeof(s));
		inet_ntop(af, t->dst, d, sizeof(d));
		shim_say("socket %d (tcp %s%s%s:%u -> %s%s%s:%u) not tagged: %s", fd,
			 af == AF_INET6 ? "[" : "", s, af == AF_INET6 ? "]" : "", t->src_port,
			 af == AF_INET6 ? "[" : "", d, af == AF_INET6 ? "]" : "", t->dst_port,
			 loom_client_strerror());
	}
done:
	shim_depth--;
out:
	errno = saved;
}

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	connect_fn real = (connect_fn)real_sym(&real_connect_p, "connect");
	int r;

	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	r = real(fd, addr, len);
	if (shim_depth || !addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return r;
	if (r == 0)
		shim_tag(fd, NULL, 0);
	else if (errno == EINPROGRESS)
		shim_tag(fd, addr, len);
	return r;
}

int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	accept_fn real = (accept_fn)real_sym(&real_accept_p, "accept");
	int r;

	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	r = real(fd, addr, len);
	if (r >= 0 && !shim_depth)
		shim_tag(r, NULL, 0);
	return r;
}

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	accept4_fn real = (accept4_fn)real_sym(&real_accept4_p, "accept4");
	int r;

	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	r = real(fd, addr, len, flags);
	if (r >= 0 && !shim_depth)
		shim_tag(r, NULL, 0);
	return r;
}
