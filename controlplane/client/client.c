/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libloom: the framework side of loom.proto (see loom.h). This file keeps
 * the connection: addresses, TLS, the lock, deadlines, reconnecting, and
 * the bytes of frames; rpc_client.c is the RPC edge, where the caller's
 * structs become protobuf-c messages and loomd's answers ours.
 *
 * One connection per client, taken by one call at a time for a whole
 * request and its reply, so replies come back in the order requests went
 * out and each carries the seq of its request. Every call has one deadline
 * (now + timeout) that bounds waiting for other calls, reconnecting,
 * sending and receiving. An I/O failure or a timeout closes the connection (its stream
 * position is unknown); the next call opens a new one.
 */
#include "controlplane/client/loom.h"
#include "controlplane/client/rpc_client.h"
#include "controlplane/client/sockaddr.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "common/addr.h"
#include "common/clock.h"
#include "proto/frame.h"

#ifdef LOOM_HAVE_TLS
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <signal.h>
#endif

struct loom_client {
	/*
	 * The connection is taken by one call at a time: `busy`, guarded by
	 * `lock` (held only briefly) and waited for on `idle` (a monotonic
	 * condition variable), so that the wait has the call's deadline.
	 */
	pthread_mutex_t lock;
	pthread_cond_t idle;
	bool busy;
	int fd;    /* -1 while not connected */
	pid_t pid; /* the process that owns fd (see client_check_fork) */
	uint64_t seq;
	uint32_t version;
	int timeout_ms;
	char *name;
	char *token;           /* $LOOM_TOKEN, or NULL */
	char *address;         /* canonical: "unix:/path" or "tcp:HOST:PORT" */
	struct loom_addr addr; /* parsed from the caller's string (common/addr.h) */
	/* TLS on tcp ($LOOM_TLS_*): NULL = plain */
	struct ssl_ctx_st *tls;
	struct ssl_st *ssl; /* the connection's, while fd >= 0 and tls */
	char tls_err[256];  /* the last TLS failure's reason */
};

/* ---- the calling thread's last error ------------------------------------------------- */

static _Thread_local char err_buf[LOOM_CLIENT_ERR_MAX];
static _Thread_local bool err_set;

__attribute__((format(printf, 2, 3))) static int fail(int neg_errno, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err_buf, sizeof(err_buf), fmt, ap);
	va_end(ap);
	err_set = true;
	return neg_errno;
}

const char *loom_client_strerror(void)
{
	return err_set ? err_buf : "no error";
}

/* strerror() of a positive or negative errno, thread-safe. */
static const char *errstr(int e, char *buf, size_t size)
{
	return strerror_r(e < 0 ? -e : e, buf, size);
}

#define ERRSTR(e) errstr((e), (char[128]){0}, 128)

/* ---- time --------------------------------------------------------------------------- */

/* Deadlines are in milliseconds on CLOCK_MONOTONIC (loom_clock_mono_ns()). */
static int64_t now_ms(void)
{
	return (int64_t)(loom_clock_mono_ns() / LOOM_NS_PER_MS);
}

/* Milliseconds left before deadline_ms; 0 when it has passed. */
static int left_ms(int64_t deadline_ms)
{
	int64_t d = deadline_ms - now_ms();

	if (d <= 0)
		return 0;
	return d > INT_MAX ? INT_MAX : (int)d;
}

/* ---- addresses and connecting ------------------------------------------------------ */

/* Fills c's address from the caller's string; 0 or -errno with the message set. */
static int client_parse_address(struct loom_client *c, const char *address)
{
	struct loom_err err;
	char canon[LOOM_ADDR_STR_MAX];
	int r;

	r = loom_addr_parse("address", address, 0, &c->addr, &err);
	if (r < 0)
		return fail(r, "%s", err.msg);
	c->address = strdup(loom_addr_str(&c->addr, canon));
	if (!c->address)
		return fail(-ENOMEM, "out of memory");
	return 0;
}

/* Opens a connection to c's address; 0 with *ret_fd or -errno with the message set. */
static int client_dial(struct loom_client *c, int64_t deadline, int *ret_fd)
{
	struct loom_err err;
	int fd, one = 1;

	fd = loom_addr_dial("connect", &c->addr, (uint64_t)deadline * LOOM_NS_PER_MS,
			    LOOM_ADDR_NONBLOCK, &err);
	if (fd < 0)
		return fail(fd, "%s", err.msg);
	/* Requests are small and answered one at a time: no Nagle delay. */
	if (c->addr.kind == LOOM_ADDR_TCP)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*ret_fd = fd;
	return 0;
}

/* ---- TLS ---------------------------------------------------------------------------- */

#ifdef LOOM_HAVE_TLS
/* Keeps c->tls_err: OpenSSL's queued reasons (emptied), or what the socket said. */
static void tls_note(struct loom_client *c, int sys_errno)
{
	unsigned long e;

	c->tls_err[0] = 0;
	while ((e = ERR_get_error()) != 0) {
		const char *reason = ERR_reason_error_string(e);
		size_t n = strlen(c->tls_err);

		if (n + 3 < sizeof(c->tls_err))
			snprintf(c->tls_err + n, sizeof(c->tls_err) - n, "%s%s", n ? "; " : "",
				 reason ? reason : "unknown OpenSSL error");
	}
	if (!c->tls_err[0])
		snprintf(c->tls_err, sizeof(c->tls_err), "%s",
			 sys_errno ? ERRSTR(sys_errno) : "the connection was closed");
}

/*
 * After an SSL call on c returned r: waits (poll, before deadline) for what
 * it wants and returns 0 to try again, or -errno (-EPROTO: a TLS failure,
 * c->tls_err says which; -EPIPE: closed).
 */
static int tls_wait(struct loom_client *c, int r, int64_t deadline)
{
	int e = SSL_get_error(c->ssl, r), sys = errno, ms;
	struct pollfd p = {.fd = c->fd};

	if (e == SSL_ERROR_WANT_READ)
		p.events = POLLIN;
	else if (e == SSL_ERROR_WANT_WRITE)
		p.events = POLLOUT;
	else if (e == SSL_ERROR_ZERO_RETURN)
		return -EPIPE;
	else if (e == SSL_ERROR_SYSCALL && !ERR_peek_error()) {
		tls_note(c, sys);
		return sys ? -sys : -EPIPE;
	} else {
		tls_note(c, sys);
		return -EPROTO;
	}
	for (;;) {
		ms = left_ms(deadline);
		if (!ms)
			return -ETIMEDOUT;
		r = poll(&p, 1, ms);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/*
 * SSL_write() writes with write(), which raises SIGPIPE on a closed
 * connection: the calling thread blocks it for the call and takes a
 * SIGPIPE the call raised (not one that was already pending).
 */
static int tls_write_all(struct loom_client *c, const void *buf, size_t len, int64_t deadline)
{
	sigset_t pipe_set, old, pend;
	bool was_pending;
	int r = 0;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigpending(&pend);
	was_pending = sigismember(&pend, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	ERR_clear_error();
	for (;;) {
		int n;

		errno = 0;
		n = SSL_write(c->ssl, buf, (int)len);
		if (n > 0)
			break;
		r = tls_wait(c, n, deadline);
		if (r < 0)
			break;
	}
	if (!was_pending) {
		struct timespec zero = {0, 0};

		sigpending(&pend);
		if (sigismember(&pend, SIGPIPE))
			sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

static int tls_read_all(struct loom_client *c, void *buf, size_t len, int64_t deadline)
{
	size_t got = 0;

	ERR_clear_error();
	while (got < len) {
		int n, r;

		errno = 0;
		n = SSL_read(c->ssl, (uint8_t *)buf + got, (int)(len - got));
		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		r = tls_wait(c, n, deadline);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The TLS handshake on c->fd (non-blocking) before deadline; 0 or -errno with the message set. */
static int tls_handshake(struct loom_client *c, int64_t deadline)
{
	X509_VERIFY_PARAM *param;
	int r;

	ERR_clear_error();
	c->ssl = SSL_new(c->tls);
	if (!c->ssl)
		return fail(-ENOMEM, "connect %s: TLS: out of memory", c->address);
	param = SSL_get0_param(c->ssl);
	if (X509_VERIFY_PARAM_set1_ip_asc(param, c->addr.host) != 1) {
		ERR_clear_error();
		X509_VERIFY_PARAM_set1_host(param, c->addr.host, 0);
		SSL_set_tlsext_host_name(c->ssl, c->addr.host);
	}
	SSL_set_fd(c->ssl, c->fd);
	for (;;) {
		errno = 0;
		r = SSL_connect(c->ssl);
		if (r == 1)
			return 0;
		r = tls_wait(c, r, deadline);
		if (r == -ETIMEDOUT)
			return fail(r, "connect %s: TLS handshake: no answer within %d ms",
				    c->address, c->timeout_ms);
		if (r < 0) {
			long v = SSL_get_verify_result(c->ssl);

			if (v != X509_V_OK)
				return fail(-EPROTO, "connect %s: TLS: loomd's certificate: %s",
					    c->address, X509_verify_cert_error_string(v));
			return fail(r == -EPROTO ? r : -EPROTO, "connect %s: TLS handshake: %s",
				    c->address, c->tls_err);
		}
	}
}

/* The client context from the three files; 0 or -errno with the message set. */
static int tls_setup(struct loom_client *c, const char *cert, const char *key, const char *ca)
{
	ERR_clear_error();
	c->tls = SSL_CTX_new(TLS_client_method());
	if (!c->tls)
		return fail(-ENOMEM, "TLS: out of memory");
	SSL_CTX_set_min_proto_version(c->tls, TLS1_2_VERSION);
	if (SSL_CTX_use_certificate_chain_file(c->tls, cert) != 1) {
		tls_note(c, errno);
		return fail(-EINVAL, "%s %s: not a readable PEM certificate (%s)",
			    LOOM_CLIENT_ENV_TLS_CERT, cert, c->tls_err);
	}
	if (SSL_CTX_use_PrivateKey_file(c->tls, key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(c->tls) != 1) {
		tls_note(c, errno);
		return fail(-EINVAL, "%s %s: not the readable, unencrypted PEM key of %s (%s)",
			    LOOM_CLIENT_ENV_TLS_KEY, key, cert, c->tls_err);
	}
	if (SSL_CTX_load_verify_locations(c->tls, ca, NULL) != 1) {
		tls_note(c, errno);
		return fail(-EINVAL, "%s %s: no readable PEM CA certificate (%s)",
			    LOOM_CLIENT_ENV_TLS_CA, ca, c->tls_err);
	}
	SSL_CTX_set_verify(c->tls, SSL_VERIFY_PEER, NULL);
	return 0;
}
#endif

/* Frames m with seq and sends it on c before deadline (no SIGPIPE); 0 or -errno. */
static int msg_send(struct loom_client *c, struct loom_client_msg *m, uint64_t seq,
		    int64_t deadline)
{
	uint8_t *buf;
	size_t len;
	int r = loom_client_rpc_frame(m, seq, &buf, &len);

	if (r < 0)
		return r;
#ifdef LOOM_HAVE_TLS
	if (c->ssl)
		r = tls_write_all(c, buf, len, deadline);
	else
#endif
		r = wire_write_all(c->fd, buf, len, left_ms(deadline));
	free(buf);
	return r;
}

/*
 * Receives one answer from c before deadline; 0, or -errno as
 * wire_recv_frame() says, or -EBADMSG (not a loom.Envelope).
 */
static int reply_recv(struct loom_client *c, int64_t deadline, struct loom_client_reply *ret)
{
	uint8_t *body = NULL;
	uint32_t n;
	int r;

#ifdef LOOM_HAVE_TLS
	if (c->ssl) {
		uint8_t hdr[WIRE_HDR_BYTES];

		r = tls_read_all(c, hdr, sizeof(hdr), deadline);
		if (r < 0)
			return r;
		r = wire_hdr_parse(hdr, WIRE_MAX_FRAME_DEFAULT, &n);
		if (r < 0)
			return r;
		body = malloc(n);
		if (!body)
			return -ENOMEM;
		r = tls_read_all(c, body, n, deadline);
	} else
#endif
		r = wire_recv_frame(c->fd, WIRE_MAX_FRAME_DEFAULT, left_ms(deadline), &body, &n);
	if (r == 0)
		r = loom_client_rpc_decode(body, n, ret);
	free(body);
	return r;
}

/* The errors after which the connection is gone and a new one may work. */
static bool is_broken(int r)
{
	return r == -EPIPE || r == -ECONNRESET || r == -ENOTCONN || r == -ECONNABORTED ||
	       r == -ESHUTDOWN;
}

/*
 * The Hello exchange on a new connection fd. Returns 0 (c->version set) or
 * -errno with the message set.
 */
static int client_hello(struct loom_client *c, int64_t deadline)
{
	struct loom_client_msg *hello = NULL;
	struct loom_client_reply rep;
	uint64_t seq = ++c->seq;
	int r;

	r = loom_client_rpc_hello_new(c->name, c->token, &hello);
	if (r < 0)
		return fail(r, "hello to %s: %s", c->address, ERRSTR(r));
	r = msg_send(c, hello, seq, deadline);
	loom_client_rpc_free(hello);
	if (r == 0)
		r = reply_recv(c, deadline, &rep);
	if (r < 0 && c->ssl && r != -ETIMEDOUT && r != -EMSGSIZE && r != -EBADMSG)
		/* loomd checks our certificate after our handshake returned (TLS 1.3) */
		return fail(-EPROTO,
			    "hello to %s: TLS: %s (did loomd refuse this certificate? its log says "
			    "why)",
			    c->address, c->tls_err);
	if (r < 0) {
		if (r == -EPIPE)
			return fail(r, "hello to %s: the controller closed the connection",
				    c->address);
		if (r == -ETIMEDOUT)
			return fail(r, "hello to %s: no answer within %d ms", c->address,
				    c->timeout_ms);
		if (r == -EMSGSIZE || r == -EBADMSG)
			return fail(-EPROTO, "hello to %s: not a Loom controller (%s)", c->address,
				    ERRSTR(r));
		return fail(r, "hello to %s: %s", c->address, ERRSTR(r));
	}
	if (rep.kind != LOOM_CLIENT_REPLY_HELLO || rep.seq != seq)
		return fail(-EPROTO, "hello to %s: expected hello_reply seq %llu, got %s seq %llu",
			    c->address, (unsigned long long)seq, rep.type,
			    (unsigned long long)rep.seq);
	if (rep.error) {
		if (rep.message[0])
			return fail(rep.error, "%s", rep.message);
		return fail(rep.error, "hello to %s: refused by the controller (%s)", c->address,
			    rep.error_name);
	}
	if (rep.version < WIRE_VERSION_MIN || rep.version > WIRE_VERSION_MAX)
		return fail(
			-EPROTONOSUPPORT,
			"hello to %s: the controller chose protocol version %u, we speak %u..%u",
			c->address, rep.version, WIRE_VERSION_MIN, WIRE_VERSION_MAX);
	__atomic_store_n(&c->version, rep.version, __ATOMIC_RELAXED);
	return 0;
}

/* Connects and says Hello; on success c->fd is the new connection. */
static void client_close_fd(struct loom_client *c);

static int client_open(struct loom_client *c, int64_t deadline)
{
	int fd, r;

	r = client_dial(c, deadline, &fd);
	if (r < 0)
		return r;
	c->fd = fd;
#ifdef LOOM_HAVE_TLS
	if (c->tls && c->addr.kind == LOOM_ADDR_TCP && (r = tls_handshake(c, deadline)) < 0) {
		client_close_fd(c);
		return r;
	}
#endif
	r = client_hello(c, deadline);
	if (r < 0)
		client_close_fd(c);
	return r;
}

/* Drops the connection (a TLS one without close_notify: it may be a fork's copy). */
static void client_close_fd(struct loom_client *c)
{
#ifdef LOOM_HAVE_TLS
	SSL_free(c->ssl);
#endif
	c->ssl = NULL;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* True when the peer has closed (or reset) c's idle connection. */
static bool peer_gone(int fd, bool tls)
{
	struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
	char b;

	if (poll(&p, 1, 0) <= 0)
		return false;
	if (p.revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL))
		return true;
	/* TLS: loomd sends nothing on an idle connection but an alert before it closes */
	if (tls)
		return true;
	/* Readable while idle: a stray frame (skipped later) or EOF. */
	return recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* Initialises the lock, the condition variable (monotonic clock) and the busy flag. */
static void client_sync_init(struct loom_client *c)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&c->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->idle, &ca);
	pthread_condattr_destroy(&ca);
	c->busy = false;
}

/*
 * After fork(), the child's copy of c must not talk on the parent's
 * connection: the first call in the child drops its copy of the descriptor
 * (the parent's connection is untouched) and starts afresh. No thread of the
 * parent was inside a call when it forked (documented); the lock and the
 * busy flag are re-initialised all the same, as the child has no thread
 * that could own them.
 */
static void client_check_fork(struct loom_client *c)
{
	pid_t pid = getpid();
	pid_t old = __atomic_load_n(&c->pid, __ATOMIC_ACQUIRE);

	if (old == pid)
		return;
	if (!__atomic_compare_exchange_n(&c->pid, &old, pid, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	client_sync_init(c);
	client_close_fd(c);
}

/* Takes the connection for one call before deadline; 0 or -ETIMEDOUT. */
static int client_acquire(struct loom_client *c, int64_t deadline, const char *op)
{
	int ms = left_ms(deadline), r = 0;
	/* c->idle waits on CLOCK_MONOTONIC (client_sync_init()), the clock of loom_clock_mono_ns() */
	uint64_t at_ns = loom_clock_mono_ns() + (uint64_t)ms * LOOM_NS_PER_MS;
	struct timespec ts = {.tv_sec = (time_t)(at_ns / LOOM_NS_PER_S),
			      .tv_nsec = (long)(at_ns % LOOM_NS_PER_S)};
	pthread_mutex_lock(&c->lock);
	while (c->busy && r == 0)
		r = pthread_cond_timedwait(&c->idle, &c->lock, &ts);
	if (!c->busy) {
		c->busy = true;
		r = 0;
	}
	pthread_mutex_unlock(&c->lock);
	if (r == ETIMEDOUT)
		return fail(-ETIMEDOUT,
			    "%s: timed out after %d ms waiting for other calls on this client", op,
			    c->timeout_ms);
	if (r)
		return fail(-r, "%s: waiting for the client: %s", op, ERRSTR(r));
	return 0;
}

static void client_release(struct loom_client *c)
{
	pthread_mutex_lock(&c->lock);
	c->busy = false;
	pthread_cond_signal(&c->idle);
	pthread_mutex_unlock(&c->lock);
}

/*
 * Drops a connection the peer has closed, then connects if not connected,
 * once per call (*reconnected). Returns 0, or -errno with the message set.
 */
static int call_connect(struct loom_client *c, const char *op, int64_t deadline, bool *reconnected)
{
	char saved[sizeof(err_buf)];
	int r;

	if (c->fd >= 0 && !*reconnected && peer_gone(c->fd, c->ssl != NULL))
		client_close_fd(c);
	if (c->fd >= 0)
		return 0;
	/* At most one new connection per call (the loop runs twice at most). */
	*reconnected = true;
	r = client_open(c, deadline);
	if (r < 0) {
		snprintf(saved, sizeof(saved), "%s", err_buf);
		fail(r, "%s: %s", op, saved);
	}
	return r;
}

/* Receives until the answer to seq or later, skipping late answers to earlier requests. */
static int recv_reply(struct loom_client *c, uint64_t seq, int64_t deadline,
		      struct loom_client_reply *rep)
{
	int r;

	for (;;) {
		r = reply_recv(c, deadline, rep);
		if (r < 0 || rep->seq >= seq)
			return r;
		/* A late answer to a request of an earlier connection state: skip. */
	}
}

/* Sets the message for sending op's request failing with r; returns r. */
static int send_fail(const struct loom_client *c, int r, const char *op)
{
	if (r == -ETIMEDOUT)
		return fail(r, "%s: timed out sending to %s", op, c->address);
	return fail(r, "%s: sending to %s: %s", op, c->address, ERRSTR(r));
}

/* Sets the message for receiving op's reply failing with r; returns the errno to report. */
static int recv_fail(const struct loom_client *c, int r, const char *op)
{
	if (r == -ETIMEDOUT)
		return fail(r, "%s: no reply from %s within %d ms", op, c->address, c->timeout_ms);
	if (r == -EPIPE)
		return fail(-ECONNRESET, "%s: %s closed the connection before replying", op,
			    c->address);
	if (r == -EMSGSIZE || r == -EBADMSG)
		return fail(-EPROTO, "%s: bad frame from %s (%s)", op, c->address, ERRSTR(r));
	return fail(r, "%s: receiving from %s: %s", op, c->address, ERRSTR(r));
}

/*
 * Sends req and receives its answer in *rep, over a new connection when
 * there is none or it broke (once per call; *resent when the request may
 * have gone out twice); *ret_seq is the seq req last went out with.
 * Returns 0, or -errno with the message set.
 */
static int call_exchange(struct loom_client *c, struct loom_client_msg *req, const char *op,
			 int64_t deadline, struct loom_client_reply *rep, bool *resent,
			 uint64_t *ret_seq)
{
	bool reconnected = false;
	int r;

	for (;;) {
		uint64_t seq;

		r = call_connect(c, op, deadline, &reconnected);
		if (r < 0)
			return r;
		seq = ++c->seq;
		*ret_seq = seq;
		r = msg_send(c, req, seq, deadline);
		if (r == -EMSGSIZE)
			return fail(r, "%s: request of %zu bytes is over the %u-byte frame limit",
				    op, loom_client_rpc_size(req), WIRE_MAX_FRAME_DEFAULT);
		if (r < 0) {
			client_close_fd(c);
			if (is_broken(r) && !reconnected)
				continue;
			return send_fail(c, r, op);
		}
		r = recv_reply(c, seq, deadline, rep);
		if (r < 0) {
			client_close_fd(c);
			if (is_broken(r) && !reconnected) {
				*resent = true;
				continue;
			}
			return recv_fail(c, r, op);
		}
		return 0;
	}
}

/* 0 if rep is the Reply to seq; else closes the connection, -EPROTO with the message set. */
static int expect_reply(struct loom_client *c, uint64_t seq, const struct loom_client_reply *rep,
			const char *op)
{
	if (rep->seq == seq && rep->kind == LOOM_CLIENT_REPLY_REPLY)
		return 0;
	client_close_fd(c);
	return fail(-EPROTO, "%s: expected reply seq %llu from %s, got %s seq %llu", op,
		    (unsigned long long)seq, c->address, rep->type, (unsigned long long)rep->seq);
}

/*
 * The controller's refusal in reply as -errno with the message set, or 0 if
 * it accepted. A refusal for being unavailable closes the connection.
 */
static int reply_error(struct loom_client *c, const struct loom_client_reply *reply, const char *op,
		       bool resent)
{
	const char *note =
		resent ? " (after a reconnect; the first attempt may have been applied)" : "";

	if (!reply->error)
		return 0;
	if (reply->message[0])
		fail(reply->error, "%s%s", reply->message, note);
	else
		fail(reply->error, "%s: refused by the controller: %s%s", op, reply->error_name,
		     note);
	/* The controller is going away (UNAVAILABLE): do not keep its connection. */
	if (reply->error == -ESHUTDOWN)
		client_close_fd(c);
	return reply->error;
}

/*
 * Sends req (framed with a new seq each time) and waits for its Reply. Returns 0 with
 * *ret_accepted (may be NULL), or -errno with the message set. A broken
 * connection, found before sending or while waiting, is replaced by a new
 * one once and the request sent again.
 */
static int client_call(struct loom_client *c, struct loom_client_msg *req, const char *op,
		       uint32_t *ret_accepted)
{
	int64_t deadline = now_ms() + c->timeout_ms;
	struct loom_client_reply rep;
	bool resent = false;
	uint64_t seq = 0;
	int r;

	client_check_fork(c);
	r = client_acquire(c, deadline, op);
	if (r < 0)
		return r;
	r = call_exchange(c, req, op, deadline, &rep, &resent, &seq);
	if (r == 0)
		r = expect_reply(c, seq, &rep, op);
	if (r == 0) {
		r = reply_error(c, &rep, op, resent);
		if (ret_accepted)
			*ret_accepted = rep.accepted;
	}
	client_release(c);
	return r;
}

/* ---- lifecycle ---------------------------------------------------------------------- */

struct loom_client *loom_client_connect(const char *address, const struct loom_client_options *opts)
{
	struct loom_client *c;
	int64_t deadline;
	int r;

	if (!address) {
		address = getenv(LOOM_CLIENT_ENV_CONTROLLER);
		if (!address || !address[0])
			address = LOOM_CLIENT_DEFAULT_ADDRESS;
	}
	if (opts && opts->timeout_ms < 0) {
		errno = -fail(-EINVAL, "timeout_ms %d is negative", opts->timeout_ms);
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = -fail(-ENOMEM, "out of memory");
		return NULL;
	}
	c->fd = -1;
	c->pid = getpid();
	c->timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms :
						   LOOM_CLIENT_TIMEOUT_MS_DEFAULT;
	client_sync_init(c);
	if (opts && opts->name)
		c->name = strdup(opts->name);
	else if (asprintf(&c->name, "libloom[%ld]", (long)getpid()) < 0)
		c->name = NULL;
	if (!c->name) {
		r = fail(-ENOMEM, "out of memory");
		goto fail;
	}
	r = client_parse_address(c, address);
	if (r < 0)
		goto fail;
	{
		const char *token = getenv(LOOM_CLIENT_ENV_TOKEN);

		if (token && token[0] && !(c->token = strdup(token))) {
			r = fail(-ENOMEM, "out of memory");
			goto fail;
		}
	}
	{
		const char *cert = getenv(LOOM_CLIENT_ENV_TLS_CERT);
		const char *key = getenv(LOOM_CLIENT_ENV_TLS_KEY);
		const char *ca = getenv(LOOM_CLIENT_ENV_TLS_CA);
		bool any = (cert && cert[0]) || (key && key[0]) || (ca && ca[0]);

		if (any && c->addr.kind == LOOM_ADDR_TCP) {
			if (!cert || !cert[0] || !key || !key[0] || !ca || !ca[0]) {
				r = fail(-EINVAL, "%s is not set: %s, %s and %s go together",
					 !cert || !cert[0] ? LOOM_CLIENT_ENV_TLS_CERT :
					 !key || !key[0]   ? LOOM_CLIENT_ENV_TLS_KEY :
							     LOOM_CLIENT_ENV_TLS_CA,
					 LOOM_CLIENT_ENV_TLS_CERT, LOOM_CLIENT_ENV_TLS_KEY,
					 LOOM_CLIENT_ENV_TLS_CA);
				goto fail;
			}
#ifdef LOOM_HAVE_TLS
			r = tls_setup(c, cert, key, ca);
#else
			r = fail(-ENOTSUP, "%s: this libloom was built without TLS",
				 LOOM_CLIENT_ENV_TLS_CERT);
#endif
			if (r < 0)
				goto fail;
		}
	}
	deadline = now_ms() + c->timeout_ms;
	r = client_open(c, deadline);
	if (r < 0)
		goto fail;
	return c;
fail:
	loom_client_free(c);
	errno = -r;
	return NULL;
}

struct loom_client *loom_client_free(struct loom_client *c)
{
	if (!c)
		return NULL;
	client_close_fd(c);
#ifdef LOOM_HAVE_TLS
	SSL_CTX_free(c->tls);
#endif
	pthread_cond_destroy(&c->idle);
	pthread_mutex_destroy(&c->lock);
	free(c->name);
	if (c->token)
		explicit_bzero(c->token, strlen(c->token));
	free(c->token);
	free(c->address);
	free(c);
	return NULL;
}

const char *loom_client_address(const struct loom_client *c)
{
	return c ? c->address : NULL;
}

uint32_t loom_client_version(const struct loom_client *c)
{
	return c ? __atomic_load_n(&c->version, __ATOMIC_RELAXED) : 0;
}

/* ---- requests ----------------------------------------------------------------------- */

/* Checks a flow; 0 or -EINVAL with the message set (what names the flow). */
static int flow_check(const struct loom_client_flow *f, bool need_tuple, const char *op,
		      const char *what)
{
	uint8_t fam = f->tuple.family;

	if (fam != 0 && fam != 4 && fam != 6)
		return fail(-EINVAL, "%s: %s: tuple family %u is not 4 or 6", op, what, fam);
	if (fam == 0 && need_tuple)
		return fail(-EINVAL, "%s: %s: an announced flow needs its 5-tuple", op, what);
	if (fam == 0 && f->by_address)
		return fail(-EINVAL, "%s: %s: by_address needs a 5-tuple", op, what);
	return 0;
}

/* RegisterJob of job (extend: coflows added to a registered job), checked first. */
static int job_send(struct loom_client *c, const struct loom_client_job *job, bool extend,
		    const char *op)
{
	struct loom_client_msg *req;
	size_t n_flows = 0;
	int r;

	if (!c || !job)
		return fail(-EINVAL, "%s: %s is NULL", op, c ? "job" : "client");
	if ((job->n_coflows && !job->coflows) || (job->n_edges && !job->edges))
		return fail(-EINVAL, "%s: job %llu: %s array is NULL", op,
			    (unsigned long long)job->id,
			    job->n_coflows && !job->coflows ? "coflow" : "edge");
	for (size_t i = 0; i < job->n_coflows; i++) {
		const struct loom_client_coflow *cf = &job->coflows[i];

		if (cf->n_flows && !cf->flows)
			return fail(-EINVAL, "%s: coflow %llu: flow array is NULL", op,
				    (unsigned long long)cf->id);
		for (size_t j = 0; j < cf->n_flows; j++) {
			char what[64];

			snprintf(what, sizeof(what), "coflow %llu flow %zu",
				 (unsigned long long)cf->id, j);
			r = flow_check(&cf->flows[j], false, op, what);
			if (r < 0)
				return r;
		}
		if (cf->n_flows > SIZE_MAX / 4 - n_flows)
			return fail(-EINVAL, "%s: too many flows", op);
		n_flows += cf->n_flows;
	}

	if (loom_client_rpc_register_new(job, extend, &req) < 0)
		return fail(-ENOMEM, "%s: out of memory", op);
	r = client_call(c, req, op, NULL);
	loom_client_rpc_free(req);
	return r;
}

int loom_client_job_register(struct loom_client *c, const struct loom_client_job *job)
{
	return job_send(c, job, false, "register_job");
}

int loom_client_job_extend(struct loom_client *c, const struct loom_client_job *job)
{
	return job_send(c, job, true, "extend_job");
}

int loom_client_flows_announce(struct loom_client *c, const struct loom_client_announce *flows,
			       size_t n)
{
	static const char op[] = "announce_flows";
	struct loom_client_msg *req;
	uint32_t accepted = 0;
	int r;

	if (!c)
		return fail(-EINVAL, "%s: client is NULL", op);
	if (n == 0)
		return 0;
	if (!flows)
		return fail(-EINVAL, "%s: flow array is NULL", op);
	if (n > INT_MAX)
		return fail(-EINVAL, "%s: %zu flows in one request", op, n);
	for (size_t i = 0; i < n; i++) {
		char what[64];

		snprintf(what, sizeof(what), "flow %zu (coflow %llu)", i,
			 (unsigned long long)flows[i].coflow_id);
		r = flow_check(&flows[i].flow, true, op, what);
		if (r < 0)
			return r;
	}
	if (loom_client_rpc_announce_new(flows, n, &req) < 0)
		return fail(-ENOMEM, "%s: out of memory", op);
	r = client_call(c, req, op, &accepted);
	loom_client_rpc_free(req);
	if (r == 0)
		return (int)n;
	if (accepted > 0 && accepted < n) {
		/* Like write(): report what was done; the error comes again on a retry. */
		errno = -r;
		return (int)accepted;
	}
	return r;
}

bool loom_client_sockaddr_side(const struct sockaddr *sa, uint8_t *family, uint8_t addr[16],
			       uint16_t *port)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	memset(addr, 0, 16);
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		memcpy(addr, &in->sin_addr, 4);
		*port = ntohs(in->sin_port);
		*family = 4;
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		*port = ntohs(in6->sin6_port);
		if (!memcmp(in6->sin6_addr.s6_addr, mapped, sizeof(mapped))) {
			memcpy(addr, in6->sin6_addr.s6_addr + 12, 4);
			*family = 4;
		} else {
			memcpy(addr, in6->sin6_addr.s6_addr, 16);
			*family = 6;
		}
		return true;
	}
	return false;
}

int loom_client_socket_tuple(int fd, struct loom_client_tuple *ret_tuple)
{
	struct sockaddr_storage local, peer;
	socklen_t llen = sizeof(local), plen = sizeof(peer), olen;
	struct loom_client_tuple t;
	uint8_t lfam = 0, pfam = 0;
	int type = 0, proto = 0;

	if (!ret_tuple)
		return fail(-EINVAL, "socket %d: no tuple to fill", fd);
	memset(&t, 0, sizeof(t));
	olen = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &olen) < 0)
		return fail(-errno, "socket %d: %s", fd, ERRSTR(errno));
	olen = sizeof(proto);
	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &olen) < 0 || proto == 0)
		proto = type == SOCK_STREAM ? IPPROTO_TCP : type == SOCK_DGRAM ? IPPROTO_UDP : 0;
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return fail(-EPROTONOSUPPORT, "socket %d: not a TCP or UDP socket", fd);
	if (getsockname(fd, (struct sockaddr *)&local, &llen) < 0)
		return fail(-errno, "socket %d: getsockname: %s", fd, ERRSTR(errno));
	if (local.ss_family != AF_INET && local.ss_family != AF_INET6)
		return fail(-EAFNOSUPPORT, "socket %d: not an IPv4 or IPv6 socket", fd);
	if (getpeername(fd, (struct sockaddr *)&peer, &plen) < 0)
		return fail(-errno, "socket %d: getpeername: %s", fd, ERRSTR(errno));
	if (!loom_client_sockaddr_side((struct sockaddr *)&local, &lfam, t.src, &t.src_port) ||
	    !loom_client_sockaddr_side((struct sockaddr *)&peer, &pfam, t.dst, &t.dst_port) ||
	    lfam != pfam)
		return fail(-EAFNOSUPPORT, "socket %d: local and peer address families differ", fd);
	t.family = lfam;
	t.protocol = (uint8_t)proto;
	*ret_tuple = t;
	return 0;
}

int loom_client_socket_announce(struct loom_client *c, int fd, uint64_t coflow_id,
				const struct loom_client_hosts *hosts, uint64_t bytes)
{
	struct loom_client_announce a = {.coflow_id = coflow_id};
	int r;

	if (!c)
		return fail(-EINVAL, "announce_flows: client is NULL");
	r = loom_client_socket_tuple(fd, &a.flow.tuple);
	if (r < 0)
		return r;
	a.flow.bytes = bytes;
	if (hosts) {
		a.flow.src_host = hosts->src_host;
		a.flow.dst_host = hosts->dst_host;
	} else {
		a.flow.by_address = true;
	}
	r = loom_client_flows_announce(c, &a, 1);
	return r < 0 ? r : 0;
}

/* One request whose body is a single id, made by make. */
static int client_simple(struct loom_client *c, int (*make)(uint64_t, struct loom_client_msg **),
			 uint64_t id, const char *op)
{
	struct loom_client_msg *req;
	int r;

	if (!c)
		return fail(-EINVAL, "%s: client is NULL", op);
	if (make(id, &req) < 0)
		return fail(-ENOMEM, "%s: out of memory", op);
	r = client_call(c, req, op, NULL);
	loom_client_rpc_free(req);
	return r;
}

int loom_client_coflow_done(struct loom_client *c, uint64_t coflow_id)
{
	return client_simple(c, loom_client_rpc_coflow_done_new, coflow_id, "coflow_done");
}

int loom_client_job_done(struct loom_client *c, uint64_t job_id)
{
	return client_simple(c, loom_client_rpc_job_done_new, job_id, "job_done");
}

int loom_client_job_unregister(struct loom_client *c, uint64_t job_id)
{
	return client_simple(c, loom_client_rpc_unregister_new, job_id, "unregister");
}
