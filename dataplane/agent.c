/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom-agent's loop (agent.h): the session with loomd on libevent, the
 * table, the enforcer, the admin socket. Connecting and the Hello exchange
 * are blocking with a deadline (the agent has nothing else to do until
 * then); the session afterwards is event driven. This file moves frames;
 * what they say is encoded and decoded in rpc_loomd.c (rpc_loomd.h), where
 * protobuf-c stops.
 */
#include "dataplane/agent.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/addr.h"
#include "common/admin.h"
#include "common/clock.h"
#include "common/log.h"
#include "dataplane/rpc_loomd.h"
#include "proto/frame.h"

#ifdef LOOM_HAVE_TLS
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#else
typedef struct ssl_st SSL; /* never made without TLS */
#endif

struct dp_agent {
	struct dp_agent_config cfg;
	struct event_base *base;
	struct dp_table *table;
	struct dp_enforcer enf;
	bool enf_started;
	struct loom_admin *admin;
	struct bufferevent *bev; /* the session; NULL while disconnected */
	struct ssl_ctx_st *tls;  /* SSL_CTX when tls-cert is set; NULL: plain TCP */
	struct event *reconnect_ev, *stats_ev, *hb_ev, *sigterm_ev, *sigint_ev;
	uint64_t backoff_ns;
	uint64_t seq;
	uint64_t controller_id;
	/* counters */
	uint64_t connects, connect_failures, disconnects, tables, resyncs, bad_tables;
	uint64_t stats_sent, flows_reported;
	uint64_t flows_dropped; /* flow counters not sent: no session, or no memory */
	char last_error[LOOM_ERR_MSG_MAX];
	int exit_code;
};

void dp_agent_config_default(struct dp_agent_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->controller, sizeof(c->controller), "unix:/run/loom/loomd.sock");
	c->link_bps = 1000000000ULL;
	c->classes = 8;
	snprintf(c->enforcer, sizeof(c->enforcer), "null");
	c->stats_interval_ns = 100 * LOOM_NS_PER_MS;
	c->heartbeat_ns = LOOM_NS_PER_S;
	c->backoff_min_ns = 100 * LOOM_NS_PER_MS;
	c->backoff_max_ns = 5 * LOOM_NS_PER_S;
	c->connect_timeout_ns = 2 * LOOM_NS_PER_S;
}

static struct timeval tv_of(uint64_t ns)
{
	struct timeval tv = {(time_t)(ns / 1000000000ULL),
			     (suseconds_t)(ns % 1000000000ULL / 1000)};

	return tv;
}

/* ---- connecting ------------------------------------------------------------------------------ */

/*
 * Opens a blocking stream to the controller address (common/addr.h: the
 * forms and their messages); fd or -errno with a message in err. ret_host
 * (LOOM_ADDR_HOST_MAX bytes) gets the host of a TCP address, "" for a Unix
 * one.
 */
static int dial(const char *addr, int timeout_ms, char *ret_host, struct loom_err *err)
{
	struct loom_addr a;
	int fd, r;

	ret_host[0] = 0;
	r = loom_addr_parse("controller", addr, 0, &a, err);
	if (r < 0)
		return r;
	fd = loom_addr_dial("connect", &a,
			    loom_clock_mono_ns() + (uint64_t)timeout_ms * LOOM_NS_PER_MS, 0, err);
	if (fd >= 0 && a.kind == LOOM_ADDR_TCP)
		memcpy(ret_host, a.host, sizeof(a.host));
	return fd;
}

/* ---- TLS ---------------------------------------------------------------------------------- */

#ifdef LOOM_HAVE_TLS
/* The OpenSSL errors queued on this thread as one line (emptied), or the socket's errno. */
static const char *tls_errors(char *buf, size_t size, int sys_errno)
{
	unsigned long e;

	buf[0] = 0;
	while ((e = ERR_get_error()) != 0) {
		const char *reason = ERR_reason_error_string(e);
		size_t n = strlen(buf);

		if (n + 3 < size)
			snprintf(buf + n, size - n, "%s%s", n ? "; " : "",
				 reason ? reason : "unknown OpenSSL error");
	}
	if (!buf[0])
		snprintf(buf, size, "%s",
			 sys_errno ? strerror(sys_errno) : "the connection was closed");
	return buf;
}

/* The client context from tls-cert, tls-key, tls-ca; 0 or -errno with err naming the option. */
static int tls_init(struct dp_agent *a, struct loom_err *err)
{
	const struct dp_agent_config *c = &a->cfg;
	const char *const files[3][2] = {
		{"tls-cert", c->tls_cert}, {"tls-key", c->tls_key}, {"tls-ca", c->tls_ca}};
	char why[512];

	for (int i = 0; i < 3; i++) {
		if (!files[i][1][0])
			return loom_err_set(
				err, EINVAL,
				"%s is not set: tls-cert, tls-key and tls-ca go together",
				files[i][0]);
		if (access(files[i][1], R_OK) < 0)
			return loom_err_set(err, errno, "%s %s: %s", files[i][0], files[i][1],
					    strerror(errno));
	}
	ERR_clear_error();
	a->tls = SSL_CTX_new(TLS_client_method());
	if (!a->tls)
		return loom_err_set(err, ENOMEM, "TLS: %s", tls_errors(why, sizeof(why), 0));
	SSL_CTX_set_min_proto_version(a->tls, TLS1_2_VERSION);
	if (SSL_CTX_use_certificate_chain_file(a->tls, c->tls_cert) != 1)
		return loom_err_set(err, EINVAL, "tls-cert %s: not a PEM certificate (%s)",
				    c->tls_cert, tls_errors(why, sizeof(why), 0));
	if (SSL_CTX_use_PrivateKey_file(a->tls, c->tls_key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(a->tls) != 1)
		return loom_err_set(err, EINVAL,
				    "tls-key %s: not the unencrypted PEM key of tls-cert %s (%s)",
				    c->tls_key, c->tls_cert, tls_errors(why, sizeof(why), 0));
	if (SSL_CTX_load_verify_locations(a->tls, c->tls_ca, NULL) != 1)
		return loom_err_set(err, EINVAL, "tls-ca %s: no PEM CA certificate (%s)", c->tls_ca,
				    tls_errors(why, sizeof(why), 0));
	SSL_CTX_set_verify(a->tls, SSL_VERIFY_PEER, NULL);
	return 0;
}

/*
 * The TLS handshake on the connected fd (blocking, bounded by the socket's
 * timeouts); loomd's certificate must name host. The SSL, or NULL with err.
 */
static SSL *tls_connect(struct dp_agent *a, int fd, const char *host, struct loom_err *err)
{
	SSL *ssl = SSL_new(a->tls);
	X509_VERIFY_PARAM *param;
	char why[512];
	long v;

	ERR_clear_error();
	if (!ssl) {
		loom_err_set(err, ENOMEM, "TLS: %s", tls_errors(why, sizeof(why), 0));
		return NULL;
	}
	param = SSL_get0_param(ssl);
	if (X509_VERIFY_PARAM_set1_ip_asc(param, host) != 1) {
		/* a name: check it, and send it (SNI) */
		ERR_clear_error();
		X509_VERIFY_PARAM_set1_host(param, host, 0);
		SSL_set_tlsext_host_name(ssl, host);
	}
	SSL_set_fd(ssl, fd);
	errno = 0;
	if (SSL_connect(ssl) != 1) {
		int e = errno;

		v = SSL_get_verify_result(ssl);
		tls_errors(why, sizeof(why), e);
		if (v != X509_V_OK)
			loom_err_set(err, EPROTO, "TLS handshake with %s: loomd's certificate: %s",
				     a->cfg.controller, X509_verify_cert_error_string(v));
		else
			loom_err_set(err, EPROTO, "TLS handshake with %s: %s", a->cfg.controller,
				     why);
		SSL_free(ssl);
		return NULL;
	}
	return ssl;
}

/* Writes all of buf on ssl; 0 or -errno with err. */
static int tls_write_all(struct dp_agent *a, SSL *ssl, const void *buf, size_t len,
			 struct loom_err *err)
{
	char why[512];

	ERR_clear_error();
	errno = 0;
	if (SSL_write(ssl, buf, (int)len) == (int)len)
		return 0;
	return loom_err_set(err, EPROTO, "hello to %s: TLS: %s", a->cfg.controller,
			    tls_errors(why, sizeof(why), errno));
}

/* Reads len bytes from ssl; 0 or -errno with err. */
static int tls_read_all(struct dp_agent *a, SSL *ssl, void *buf, size_t len, struct loom_err *err)
{
	size_t got = 0;
	char why[512];

	ERR_clear_error();
	errno = 0;
	while (got < len) {
		int r = SSL_read(ssl, (uint8_t *)buf + got, (int)(len - got));

		if (r <= 0)
			return loom_err_set(err, EPROTO, "hello to %s: TLS: %s", a->cfg.controller,
					    tls_errors(why, sizeof(why), errno));
		got += (size_t)r;
	}
	return 0;
}
#endif

/* Sends a frame on fd, or on ssl when not NULL; 0 or -errno with err. */
static int sess_send(struct dp_agent *a, int fd, SSL *ssl, const uint8_t *frame, size_t len,
		     int timeout_ms, struct loom_err *err)
{
	int r;

#ifdef LOOM_HAVE_TLS
	if (ssl)
		return tls_write_all(a, ssl, frame, len, err);
#else
	(void)ssl;
#endif
	r = wire_write_all(fd, frame, len, timeout_ms);
	if (r < 0)
		return loom_err_set(err, -r, "hello to %s: %s", a->cfg.controller, strerror(-r));
	return 0;
}

/* Receives one message from fd, or from ssl when not NULL; 0 or -errno with err. */
static int sess_recv(struct dp_agent *a, int fd, SSL *ssl, int timeout_ms, struct dp_rpc_msg *ret,
		     struct loom_err *err)
{
	uint8_t *body;
	uint32_t n;
	int r;

#ifdef LOOM_HAVE_TLS
	if (ssl) {
		uint8_t hdr[WIRE_HDR_BYTES];

		r = tls_read_all(a, ssl, hdr, sizeof(hdr), err);
		if (r < 0)
			return r;
		if (wire_hdr_parse(hdr, WIRE_MAX_FRAME_DEFAULT, &n) < 0)
			return loom_err_set(err, EPROTO, "hello to %s: a frame of a bad length",
					    a->cfg.controller);
		body = malloc(n);
		if (!body)
			return loom_err_set(err, ENOMEM, "out of memory");
		r = tls_read_all(a, ssl, body, n, err);
		if (r == 0 && dp_rpc_msg_decode(body, n, ret) < 0)
			r = loom_err_set(err, EPROTO, "hello to %s: not an Envelope",
					 a->cfg.controller);
		free(body);
		return r;
	}
#else
	(void)ssl;
#endif
	r = wire_recv_frame(fd, WIRE_MAX_FRAME_DEFAULT, timeout_ms, &body, &n);
	if (r == 0) {
		r = dp_rpc_msg_decode(body, n, ret);
		free(body);
	}
	if (r < 0)
		return loom_err_set(err, -r, "hello to %s: %s", a->cfg.controller, strerror(-r));
	return 0;
}

/* Hello as this host's agent; 0 or -errno with err (loomd's message when it refused). */
static int hello(struct dp_agent *a, int fd, SSL *ssl, int timeout_ms, struct loom_err *err)
{
	struct dp_rpc_msg rep;
	uint8_t *frame;
	size_t len;
	char name[64];
	int r;

	snprintf(name, sizeof(name), "loom-agent[%d]", (int)getpid());
	r = dp_rpc_hello_encode(&a->cfg, name, ++a->seq, &frame, &len);
	if (r < 0)
		return loom_err_set(err, -r, "hello: %s", strerror(-r));
	r = sess_send(a, fd, ssl, frame, len, timeout_ms, err);
	free(frame);
	if (r == 0)
		r = sess_recv(a, fd, ssl, timeout_ms, &rep, err);
	if (r < 0)
		return r;
	if (rep.kind != DP_RPC_HELLO_REPLY) {
		dp_rpc_msg_release(&rep);
		return loom_err_set(err, EPROTO, "hello to %s: the answer is not a hello reply",
				    a->cfg.controller);
	}
	if (rep.error) {
		r = rep.error;
		loom_err_set(err, -r, "loomd refused this agent: %s", rep.message);
		dp_rpc_msg_release(&rep);
		return r;
	}
	if (rep.controller_id != a->controller_id && a->controller_id)
		log_info("loomd restarted (a new controller id); its full table replaces ours");
	a->controller_id = rep.controller_id;
	dp_rpc_msg_release(&rep);
	return 0;
}

/* ---- the session ------------------------------------------------------------------------------ */

/*
 * Writes a frame made by an encoder of rpc_loomd.h (r its result; frame is
 * freed here when it made one) to the session. 0 when it was queued, else
 * -errno: the encoder's, -ENOTCONN (no session) or -ENOMEM.
 */
static int send_frame(struct dp_agent *a, int r, uint8_t *frame, size_t len)
{
	if (r < 0)
		return r;
	r = !a->bev ? -ENOTCONN : bufferevent_write(a->bev, frame, len) < 0 ? -ENOMEM : 0;
	free(frame);
	return r;
}

static void send_resync(struct dp_agent *a)
{
	uint8_t *frame;
	size_t len;
	int r = dp_rpc_resync_encode(++a->seq, &frame, &len);

	a->resyncs++;
	send_frame(a, r, frame, len);
}

static void handle_table(struct dp_agent *a, const struct dp_rpc_msg *m)
{
	const struct dp_update *u = &m->table;
	struct dp_snapshot *snap;
	uint8_t *frame;
	size_t len;
	int r;

	a->tables++;
	r = m->error;
	if (r == 0)
		r = dp_table_apply(a->table, u);
	if (r == -ESTALE) {
		log_info("table %llu does not follow ours (%llu): asking for a full one",
			 (unsigned long long)u->version,
			 (unsigned long long)dp_table_version(a->table));
		send_resync(a);
		return;
	}
	if (r < 0) {
		a->bad_tables++;
		log_warn("table %llu refused (%s); asking for a full one",
			 (unsigned long long)u->version, strerror(-r));
		send_resync(a);
		return;
	}
	snap = dp_table_snapshot(a->table);
	if (!snap || a->enf.cls->apply(&a->enf, snap) < 0) {
		log_err("enforcer %s could not take table %llu", a->enf.cls->name,
			(unsigned long long)u->version);
		return;
	}
	r = dp_rpc_ack_encode(++a->seq, u->version, &frame, &len);
	send_frame(a, r, frame, len);
}

static void schedule_reconnect(struct dp_agent *a);

static void drop_session(struct dp_agent *a, const char *why)
{
	if (!a->bev)
		return;
	bufferevent_free(a->bev);
	a->bev = NULL;
	a->disconnects++;
	log_warn("lost loomd (%s); keeping the last table (version %llu) and reconnecting", why,
		 (unsigned long long)dp_table_version(a->table));
	a->backoff_ns = a->cfg.backoff_min_ns;
	schedule_reconnect(a);
}

static void read_cb(struct bufferevent *bev, void *arg)
{
	struct dp_agent *a = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	for (;;) {
		uint8_t hdr[WIRE_HDR_BYTES], *body;
		struct dp_rpc_msg m;
		uint32_t n;
		int r;

		if (evbuffer_get_length(in) < WIRE_HDR_BYTES)
			return;
		evbuffer_copyout(in, hdr, sizeof(hdr));
		if (wire_hdr_parse(hdr, WIRE_MAX_FRAME_DEFAULT, &n) < 0) {
			drop_session(a, "a frame of a bad length");
			return;
		}
		if (evbuffer_get_length(in) < WIRE_HDR_BYTES + (size_t)n)
			return;
		body = evbuffer_pullup(in, WIRE_HDR_BYTES + (ssize_t)n);
		r = body ? dp_rpc_msg_decode(body + WIRE_HDR_BYTES, n, &m) : -ENOMEM;
		evbuffer_drain(in, WIRE_HDR_BYTES + (size_t)n);
		if (r < 0) {
			drop_session(a, "a frame that is not an Envelope");
			return;
		}
		if (m.kind == DP_RPC_TABLE)
			handle_table(a, &m);
		else if (m.kind == DP_RPC_REPLY && m.error)
			log_warn("loomd: %s", m.message);
		dp_rpc_msg_release(&m);
	}
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct dp_agent *a = arg;

	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		drop_session(a, what & BEV_EVENT_EOF ? "closed" : strerror(EVUTIL_SOCKET_ERROR()));
}

static void reconnect_cb(evutil_socket_t fd0, short what, void *arg)
{
	struct dp_agent *a = arg;
	struct loom_err err = {{0}};
	int timeout_ms = (int)(a->cfg.connect_timeout_ns / 1000000ULL);
	char host[LOOM_ADDR_HOST_MAX];
	SSL *ssl = NULL;
	int fd;

	(void)fd0;
	(void)what;
	fd = dial(a->cfg.controller, timeout_ms, host, &err);
#ifdef LOOM_HAVE_TLS
	if (fd >= 0 && a->tls && host[0]) {
		/* the handshake and the hello are blocking: bound them by the socket's timeouts */
		struct timeval tv = {timeout_ms / 1000, (suseconds_t)(timeout_ms % 1000) * 1000};

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		ssl = tls_connect(a, fd, host, &err);
		if (!ssl) {
			close(fd);
			fd = -1;
		}
	}
#endif
	if (fd >= 0 && hello(a, fd, ssl, timeout_ms, &err) < 0) {
#ifdef LOOM_HAVE_TLS
		SSL_free(ssl);
#endif
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		a->connect_failures++;
		if (strcmp(a->last_error, err.msg))
			log_warn("%s; retrying (every %.1f s at most)", loom_err_str(&err),
				 (double)a->cfg.backoff_max_ns * 1e-9);
		snprintf(a->last_error, sizeof(a->last_error), "%s", err.msg);
		schedule_reconnect(a);
		a->backoff_ns = a->backoff_ns * 2 > a->cfg.backoff_max_ns ? a->cfg.backoff_max_ns :
									    a->backoff_ns * 2;
		return;
	}
	evutil_make_socket_nonblocking(fd);
#ifdef LOOM_HAVE_TLS
	if (ssl) {
		a->bev = bufferevent_openssl_socket_new(a->base, fd, ssl, BUFFEREVENT_SSL_OPEN,
							BEV_OPT_CLOSE_ON_FREE);
		if (a->bev)
			bufferevent_openssl_set_allow_dirty_shutdown(a->bev, 1);
	} else
#endif
		a->bev = bufferevent_socket_new(a->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!a->bev) {
#ifdef LOOM_HAVE_TLS
		SSL_free(ssl);
#endif
		close(fd);
		schedule_reconnect(a);
		return;
	}
	bufferevent_setcb(a->bev, read_cb, NULL, event_cb, a);
	bufferevent_enable(a->bev, EV_READ | EV_WRITE);
#ifdef LOOM_HAVE_TLS
	if (ssl && SSL_pending(ssl) > 0) {
		/* what OpenSSL read past the hello reply (a table): the socket will not say so */
		uint8_t buf[4096];
		int n;

		while (SSL_pending(ssl) > 0 && (n = SSL_read(ssl, buf, sizeof(buf))) > 0)
			evbuffer_add(bufferevent_get_input(a->bev), buf, (size_t)n);
		read_cb(a->bev, a);
		if (!a->bev)
			return; /* read_cb dropped the session */
	}
#endif
	a->connects++;
	a->last_error[0] = 0;
	a->backoff_ns = a->cfg.backoff_min_ns;
	log_info("connected to loomd at %s as host %u", a->cfg.controller, a->cfg.host_id);
}

static void schedule_reconnect(struct dp_agent *a)
{
	struct timeval tv = tv_of(a->backoff_ns);

	evtimer_add(a->reconnect_ev, &tv);
}

struct stats_batch {
	struct dp_flow_stat *st;
	size_t n, cap;
	size_t lost; /* counters that found no memory */
};

static void on_counter(void *ctx, const struct wire_tuple *t, uint64_t bytes, bool done)
{
	struct stats_batch *b = ctx;

	if (b->n == b->cap) {
		size_t ncap = b->cap * 2;
		struct dp_flow_stat *st = realloc(b->st, ncap * sizeof(*st));

		if (!st) {
			b->lost++; /* out of memory: this interval's count of that flow is lost */
			return;
		}
		b->st = st;
		b->cap = ncap;
	}
	b->st[b->n] = (struct dp_flow_stat){.tuple = *t, .bytes = bytes, .done = done};
	b->n++;
}

/* Flows per FlowStats frame: a batch of a big table goes in several, each well under max_frame. */
#define STATS_FRAME_FLOWS 2048

static void stats_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dp_agent *a = arg;
	size_t cap = dp_table_nflows(a->table) + 1024;
	struct stats_batch b = {.cap = cap};

	(void)fd;
	(void)what;
	b.st = calloc(cap, sizeof(*b.st));
	if (b.st) {
		/* counters are collected even while disconnected (and then dropped) */
		a->enf.cls->collect(&a->enf, on_counter, &b);
		for (size_t i = 0; i < b.n; i += STATS_FRAME_FLOWS) {
			size_t n = b.n - i < STATS_FRAME_FLOWS ? b.n - i : STATS_FRAME_FLOWS;
			uint8_t *frame = NULL;
			size_t len = 0;
			int r = a->bev ? dp_rpc_stats_encode(++a->seq, b.st + i, n, &frame, &len) :
					 -ENOTCONN;

			if (send_frame(a, r, frame, len) == 0) {
				a->stats_sent++;
				a->flows_reported += n;
			} else {
				a->flows_dropped += n;
			}
		}
		a->flows_dropped += b.lost;
	}
	free(b.st);
}

static void hb_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dp_agent *a = arg;
	uint8_t *frame;
	size_t len;
	int r;

	(void)fd;
	(void)what;
	r = dp_rpc_heartbeat_encode(++a->seq, loom_clock_wall_ns(), &frame, &len);
	send_frame(a, r, frame, len);
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)what;
	log_info("%s: stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	dp_agent_stop(arg);
}

/* ---- admin commands ------------------------------------------------------------------------ */

static void add_stat(void *ctx, const char *name, uint64_t v)
{
	json_object_set_new(ctx, name, json_integer((json_int_t)v));
}

static int cmd_stats(void *ctx, int argc, const char *const *argv, json_t **ret,
		     struct loom_err *err)
{
	struct dp_agent *a = ctx;
	json_t *enf = json_object();

	(void)argc;
	(void)argv;
	(void)err;
	a->enf.cls->stats(&a->enf, add_stat, enf);
	*ret = json_pack("{s:s, s:b, s:i, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
			 "s:I, s:I, s:s, s:o}",
			 "controller", a->cfg.controller, "connected", a->bev != NULL, "host",
			 (int)a->cfg.host_id, "enforcer", a->enf.cls->name, "table_version",
			 (json_int_t)dp_table_version(a->table), "flows",
			 (json_int_t)dp_table_nflows(a->table), "coflows",
			 (json_int_t)dp_table_ncoflows(a->table), "connects",
			 (json_int_t)a->connects, "connect_failures",
			 (json_int_t)a->connect_failures, "disconnects", (json_int_t)a->disconnects,
			 "tables", (json_int_t)a->tables, "resyncs", (json_int_t)a->resyncs,
			 "bad_tables", (json_int_t)a->bad_tables, "stats_sent",
			 (json_int_t)a->stats_sent, "flows_reported", (json_int_t)a->flows_reported,
			 "flows_dropped", (json_int_t)a->flows_dropped, "last_error", a->last_error,
			 "enforcer_stats", enf);
	return *ret ? 0 : -ENOMEM;
}

static int cmd_table(void *ctx, int argc, const char *const *argv, json_t **ret,
		     struct loom_err *err)
{
	struct dp_agent *a = ctx;
	struct dp_snapshot *s = dp_table_snapshot(a->table);
	json_t *arr = json_array();

	(void)argc;
	(void)argv;
	if (!s) {
		json_decref(arr);
		return loom_err_set(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < s->n; i++) {
		char t[128];

		json_array_append_new(arr,
				      json_pack("{s:s, s:I, s:i, s:I}", "tuple",
						wire_tuple_str(&s->flows[i].tuple, t, sizeof(t)),
						"coflow", (json_int_t)s->flows[i].coflow_id,
						"class", (int)s->flows[i].cls, "rate_bps",
						(json_int_t)s->flows[i].rate_bps));
	}
	*ret = json_pack("{s:I, s:i, s:o}", "version", (json_int_t)s->version, "default_class",
			 (int)s->default_class, "flows", arr);
	dp_snapshot_free(s);
	return 0;
}

/* ---- lifecycle ------------------------------------------------------------------------------- */

struct dp_agent *dp_agent_new(const struct dp_agent_config *cfg, struct loom_err *err)
{
	struct dp_agent *a = calloc(1, sizeof(*a));
	struct timeval tv;
	int r;

	if (!a) {
		loom_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	a->cfg = *cfg;
	a->backoff_ns = cfg->backoff_min_ns;
	signal(SIGPIPE, SIG_IGN);
	a->enf.cls = dp_enforcer_find(cfg->enforcer);
	if (!a->enf.cls) {
		size_t n;
		const struct dp_enforcer_class *const *all = dp_enforcer_list(&n);
		char names[128] = "";

		for (size_t i = 0; i < n; i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 i ? ", " : "", all[i]->name);
		loom_err_set(err, ENOENT, "no enforcer '%s' in this build (available: %s)",
			     cfg->enforcer, names);
		errno = ENOENT;
		goto fail;
	}
	a->table = dp_table_new(cfg->classes);
	a->base = event_base_new();
	if (!a->table || !a->base) {
		loom_err_set(err, ENOMEM, "out of memory");
		errno = ENOMEM;
		goto fail;
	}
	if (cfg->tls_cert[0] || cfg->tls_key[0] || cfg->tls_ca[0]) {
#ifdef LOOM_HAVE_TLS
		r = tls_init(a, err);
#else
		r = loom_err_set(
			err, ENOTSUP,
			"tls-cert: this loom-agent was built without TLS (meson option tls "
			"needs OpenSSL and libevent_openssl)");
#endif
		if (r < 0) {
			errno = -r;
			goto fail;
		}
	}
	r = a->enf.cls->init(&a->enf, cfg->enforcer_args, cfg->classes, err);
	if (r < 0) {
		errno = -r;
		goto fail;
	}
	a->enf_started = true;
	a->reconnect_ev = evtimer_new(a->base, reconnect_cb, a);
	a->stats_ev = event_new(a->base, -1, EV_PERSIST, stats_cb, a);
	a->hb_ev = event_new(a->base, -1, EV_PERSIST, hb_cb, a);
	a->sigterm_ev = evsignal_new(a->base, SIGTERM, signal_cb, a);
	a->sigint_ev = evsignal_new(a->base, SIGINT, signal_cb, a);
	if (!a->reconnect_ev || !a->stats_ev || !a->hb_ev || !a->sigterm_ev || !a->sigint_ev) {
		loom_err_set(err, ENOMEM, "out of memory");
		errno = ENOMEM;
		goto fail;
	}
	event_add(a->sigterm_ev, NULL);
	event_add(a->sigint_ev, NULL);
	tv = tv_of(cfg->stats_interval_ns);
	event_add(a->stats_ev, &tv);
	tv = tv_of(cfg->heartbeat_ns);
	event_add(a->hb_ev, &tv);
	if (cfg->admin_socket[0]) {
		a->admin = loom_admin_new(a->base, cfg->admin_socket, err);
		if (!a->admin)
			goto fail;
		if (loom_admin_register(a->admin, "stats", "",
					"session, table and enforcer counters", cmd_stats, a) < 0 ||
		    loom_admin_register(a->admin, "table", "", "the table being enforced",
					cmd_table, a) < 0 ||
		    loom_admin_register_log_level(a->admin) < 0) {
			loom_err_set(err, ENOMEM, "cannot register the admin commands");
			errno = ENOMEM;
			goto fail;
		}
	}
	a->backoff_ns = 0; /* the first attempt at once */
	schedule_reconnect(a);
	a->backoff_ns = cfg->backoff_min_ns;
	return a;
fail : {
	int e = errno;

	dp_agent_free(a);
	errno = e;
	return NULL;
}
}

int dp_agent_run(struct dp_agent *a)
{
	event_base_dispatch(a->base);
	return a->exit_code;
}

void dp_agent_stop(struct dp_agent *a)
{
	event_base_loopexit(a->base, NULL);
}

struct dp_agent *dp_agent_free(struct dp_agent *a)
{
	if (!a)
		return NULL;
	if (a->bev)
		bufferevent_free(a->bev);
	if (a->enf_started)
		a->enf.cls->done(&a->enf);
	a->admin = loom_admin_free(a->admin);
	if (a->reconnect_ev)
		event_free(a->reconnect_ev);
	if (a->stats_ev)
		event_free(a->stats_ev);
	if (a->hb_ev)
		event_free(a->hb_ev);
	if (a->sigterm_ev)
		event_free(a->sigterm_ev);
	if (a->sigint_ev)
		event_free(a->sigint_ev);
	if (a->base)
		event_base_free(a->base);
	dp_table_free(a->table);
#ifdef LOOM_HAVE_TLS
	SSL_CTX_free(a->tls);
#endif
	free(a);
	return NULL;
}
