/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loomd's event loop (libevent): listeners, connections and framing, group
 * commit of the journal, scheduling passes, timers and signals. Only this
 * thread touches the registry. The frames' contents (the Hello handshake
 * included) are rpc_*.c's: protobuf-c stops there (rpc.h).
 *
 * Group commit: a handler that changes the registry journals the change and
 * queues its reply on the connection's pending buffer; the commit event, run
 * after the handlers of this loop iteration, commits once and then releases
 * every pending reply. A reply is never seen before its change is durable.
 */
#include "controlplane/loomd/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/addr.h"
#include "common/admin.h"
#include "common/clock.h"
#include "common/log.h"
#include "controlplane/loomd/admin_cmds.h"
#include "controlplane/loomd/config.h"
#include "controlplane/loomd/journal.h"
#include "controlplane/loomd/metrics.h"
#include "controlplane/loomd/registry.h"
#include "controlplane/loomd/rpc.h"
#include "controlplane/loomd/sched.h"
#include "controlplane/loomd/tenants.h"
#include "controlplane/loomd/webui.h"
#include "proto/frame.h"

#ifdef LOOM_HAVE_TLS
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#endif

/* A peer that lets this much output pile up is dropped. */
#define LOOMD_MAX_OUTPUT_BYTES (64u << 20)
/* A connection has this long to say hello. */
#define LOOMD_HELLO_TIMEOUT_S 10

uint64_t loomd_server_now_ns(const struct loomd_server *s)
{
	return s->cfg.virtual_clock ? s->vclock.now_ns : loom_clock_wall_ns();
}

/* ---- connections ------------------------------------------------------------------------------ */

static void conn_free(struct loomd_conn *c)
{
	struct loomd_server *s = c->srv;

	if (c->role == LOOMD_ROLE_AGENT)
		loomd_agent_gone(c);
	else if (c->role == LOOMD_ROLE_FRAMEWORK)
		s->nframeworks--;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (c->dirty) {
		struct loomd_conn **pp = &s->dirty_conns;

		while (*pp && *pp != c)
			pp = &(*pp)->next_dirty;
		if (*pp)
			*pp = c->next_dirty;
	}
	s->nconns--;
	if (c->bev)
		bufferevent_free(c->bev);
	if (c->pending)
		evbuffer_free(c->pending);
	free(c);
}

void loomd_conn_close(struct loomd_conn *c)
{
	c->closing = true;
	if (c->bev)
		bufferevent_disable(c->bev, EV_READ);
}

/* Frees connections dropped for not reading (they may never drain). */
static void sweep_overflowed(struct loomd_server *s)
{
	struct loomd_conn *c = s->conns;

	while (c) {
		struct loomd_conn *next = c->next;

		if (c->overflow)
			conn_free(c);
		c = next;
	}
}

static void commit_cb(evutil_socket_t fd, short what, void *arg);
static bool pass_due(const struct loomd_server *s);

void loomd_server_need_commit(struct loomd_server *s)
{
	if (s->commit_ev)
		event_active(s->commit_ev, EV_WRITE, 0);
}

/*
 * Writes what the socket takes now instead of at the loop's next turn (the
 * bufferevent sends the rest): replies and tables leave before a pass or a
 * journal sync that follows in this turn.
 */
static void conn_write_now(struct loomd_conn *c)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);

	if (c->tls)
		return; /* the bytes must go through OpenSSL: the bufferevent writes them */

	if (evbuffer_get_length(out))
		evbuffer_write(out, bufferevent_getfd(c->bev));
}

/* Appends one frame to out: its header, then fill's body_len bytes. 0 or -errno. */
static int frame_into(struct evbuffer *out, size_t body_len, loomd_frame_fill_fn fill,
		      const void *ctx, uint32_t max_frame)
{
	struct evbuffer_iovec v;
	uint8_t *p;

	if (body_len == 0 || body_len > max_frame)
		return -EMSGSIZE;
	if (evbuffer_reserve_space(out, body_len + WIRE_HDR_BYTES, &v, 1) < 1)
		return -ENOMEM;
	p = v.iov_base;
	wire_hdr_put(p, (uint32_t)body_len);
	fill(ctx, p + WIRE_HDR_BYTES);
	v.iov_len = body_len + WIRE_HDR_BYTES;
	return evbuffer_commit_space(out, &v, 1) == 0 ? 0 : -ENOMEM;
}

static void conn_overflow_check(struct loomd_conn *c)
{
	if (c->bev &&
	    evbuffer_get_length(bufferevent_get_output(c->bev)) > LOOMD_MAX_OUTPUT_BYTES) {
		log_warn("%s (%s): not reading its replies (%u MiB queued); disconnected", c->peer,
			 c->name[0] ? c->name : "?", LOOMD_MAX_OUTPUT_BYTES >> 20);
		c->overflow = true; /* freed by the next tick or pass */
		loomd_conn_close(c);
	}
}

void loomd_conn_send_now(struct loomd_conn *c, const char *what, size_t body_len,
			 loomd_frame_fill_fn fill, const void *ctx)
{
	int r;

	if (!c->bev) {
		/* a test connection (loomd_server_test_conn): encode, then drop */
		struct evbuffer *sink = evbuffer_new();

		if (sink) {
			frame_into(sink, body_len, fill, ctx, c->srv->cfg.max_frame);
			evbuffer_free(sink);
		}
		return;
	}
	r = frame_into(bufferevent_get_output(c->bev), body_len, fill, ctx, c->srv->cfg.max_frame);
	if (r < 0)
		log_warn("%s: cannot send %s: %s", c->peer, what, strerror(-r));
	conn_write_now(c);
	conn_overflow_check(c);
}

void loomd_conn_send(struct loomd_conn *c, const char *what, size_t body_len,
		     loomd_frame_fill_fn fill, const void *ctx)
{
	struct loomd_server *s = c->srv;

	if (!loomd_journal_pending(s->journal) && !c->dirty) {
		loomd_conn_send_now(c, what, body_len, fill, ctx);
		return;
	}
	if (!c->pending)
		c->pending = evbuffer_new();
	if (!c->pending || frame_into(c->pending, body_len, fill, ctx, s->cfg.max_frame) < 0) {
		log_warn("%s: cannot queue a reply; disconnecting", c->peer);
		c->closing = true;
		return;
	}
	if (!c->dirty) {
		c->dirty = true;
		c->next_dirty = s->dirty_conns;
		s->dirty_conns = c;
	}
	loomd_server_need_commit(s);
}

static void commit_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loomd_server *s = arg;
	struct loom_err err;
	uint64_t t0 = loom_clock_mono_ns();

	(void)fd;
	(void)what;
	/* a pass that is due goes first: agents get their tables before the sync */
	if (s->pass_scheduled && pass_due(s)) {
		struct loom_err perr = {{0}};

		if (loomd_server_pass(s, &perr) < 0)
			log_err("scheduling pass: %s", loom_err_str(&perr));
	}
	if (loomd_journal_pending(s->journal)) {
		if (loomd_journal_commit(s->journal, &err) < 0) {
			/* The registry is ahead of the journal: stop, so a restart replays truth. */
			log_err("%s; stopping (a restart replays the journal)", loom_err_str(&err));
			s->exit_code = 1;
			loomd_server_stop(s);
			return;
		}
		s->st.commits++;
		loomd_hist_observe(&s->st.commit_hist, (double)(loom_clock_mono_ns() - t0) * 1e-9);
	}
	while (s->dirty_conns) {
		struct loomd_conn *c = s->dirty_conns;

		s->dirty_conns = c->next_dirty;
		c->dirty = false;
		if (c->pending && c->bev) {
			bufferevent_write_buffer(c->bev, c->pending);
			conn_write_now(c);
			conn_overflow_check(c);
		}
	}
}

/*
 * Takes every whole frame off in and dispatches it. Returns 0, or -1 when the
 * connection must be dropped at once (a framing error, logged here).
 */
static int process_input(struct loomd_conn *c, struct evbuffer *in)
{
	uint32_t max = c->srv->cfg.max_frame;

	while (!c->closing) {
		uint8_t hdr[WIRE_HDR_BYTES];
		uint32_t n;
		uint8_t *body;
		int r;

		if (evbuffer_get_length(in) < WIRE_HDR_BYTES)
			break;
		evbuffer_copyout(in, hdr, sizeof(hdr));
		if (wire_hdr_parse(hdr, max, &n) < 0) {
			uint32_t len = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
				       (uint32_t)hdr[2] << 8 | hdr[3];

			log_warn("%s (%s): frame length %u is %s (max_frame %u); connection closed",
				 c->peer, c->name[0] ? c->name : "no hello", len,
				 len ? "too large" : "zero", max);
			c->srv->st.frames_bad++;
			return -1;
		}
		if (evbuffer_get_length(in) < WIRE_HDR_BYTES + (size_t)n)
			break;
		body = evbuffer_pullup(in, WIRE_HDR_BYTES + (ssize_t)n);
		/* decoded before anything is handled: the frame may go at once */
		r = body ? loomd_rpc_frame(c, body + WIRE_HDR_BYTES, n) : -EBADMSG;
		evbuffer_drain(in, WIRE_HDR_BYTES + (size_t)n);
		if (r < 0) {
			log_warn("%s (%s): a %u-byte frame that is not a loom.Envelope; connection "
				 "closed",
				 c->peer, c->name[0] ? c->name : "no hello", n);
			c->srv->st.frames_bad++;
			return -1;
		}
	}
	return 0;
}

static void read_cb(struct bufferevent *bev, void *arg)
{
	struct loomd_conn *c = arg;

	if (process_input(c, bufferevent_get_input(bev)) < 0) {
		conn_free(c);
		return;
	}
	if (c->closing && (!c->bev || !evbuffer_get_length(bufferevent_get_output(c->bev))))
		conn_free(c);
}

struct loomd_conn *loomd_server_test_conn(struct loomd_server *s)
{
	struct loomd_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->srv = s;
	c->host = CP_NONE;
	c->connected_ns = loom_clock_mono_ns();
	snprintf(c->peer, sizeof(c->peer), "test");
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->nconns++;
	return c;
}

int loomd_conn_feed(struct loomd_conn *c, const void *buf, size_t len)
{
	struct evbuffer *in = evbuffer_new();
	int r;

	if (!in)
		return -ENOMEM;
	evbuffer_add(in, buf, len);
	r = process_input(c, in);
	evbuffer_free(in);
	if (r < 0 || c->closing) {
		conn_free(c);
		return -EPIPE;
	}
	return 0;
}

void loomd_server_flush(struct loomd_server *s)
{
	commit_cb(-1, 0, s);
}

static void write_cb(struct bufferevent *bev, void *arg)
{
	struct loomd_conn *c = arg;

	if (c->closing && !evbuffer_get_length(bufferevent_get_output(bev)))
		conn_free(c);
}

/* ---- TLS ---------------------------------------------------------------------------------- */

#ifdef LOOM_HAVE_TLS
/* Appends OpenSSL error e's reason to buf ("; "-separated). */
static void tls_append_error(char *buf, size_t size, unsigned long e)
{
	const char *reason = ERR_reason_error_string(e);
	size_t n = strlen(buf);
	char one[256];

	if (!reason) {
		ERR_error_string_n(e, one, sizeof(one));
		reason = one;
	}
	if (n + 3 < size)
		snprintf(buf + n, size - n, "%s%s", n ? "; " : "", reason);
}

/* The OpenSSL errors queued on this thread as one line (the queue is emptied). */
static const char *tls_errors(char *buf, size_t size)
{
	unsigned long e;

	buf[0] = 0;
	while ((e = ERR_get_error()) != 0)
		tls_append_error(buf, size, e);
	if (!buf[0])
		snprintf(buf, size, "no detail from OpenSSL");
	return buf;
}

/* Says once why a TLS connection failed (a refused handshake: which certificate check). */
static void tls_log_failure(struct loomd_conn *c)
{
	SSL *ssl = bufferevent_openssl_get_ssl(c->bev);
	long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
	char why[512] = "";
	unsigned long e;

	while ((e = bufferevent_get_openssl_error(c->bev)) != 0)
		tls_append_error(why, sizeof(why), e);
	if (v != X509_V_OK && strlen(why) + 3 < sizeof(why))
		snprintf(why + strlen(why), sizeof(why) - strlen(why), "%s%s", why[0] ? ": " : "",
			 X509_verify_cert_error_string(v));
	if (!why[0])
		snprintf(why, sizeof(why), "%s", strerror(EVUTIL_SOCKET_ERROR()));
	log_info("%s: TLS %s: %s", c->peer, c->role == LOOMD_ROLE_NONE ? "refused" : "error", why);
}

/* 0 when path is readable, else -errno with err naming the key. */
static int tls_file_check(const char *key, const char *path, struct loom_err *err)
{
	if (access(path, R_OK) < 0)
		return loom_err_set(err, errno, "%s %s: %s", key, path, strerror(errno));
	return 0;
}

static int tls_no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return 0;
}

/* The server context from tls_cert, tls_key and tls_ca; 0 or -errno with err naming the key. */
static int tls_init(struct loomd_server *s, struct loom_err *err)
{
	const struct loomd_config *cfg = &s->cfg;
	STACK_OF(X509_NAME) * cas;
	EVP_PKEY *key;
	char why[512];
	FILE *f;
	int r;

	if ((r = tls_file_check("tls_cert", cfg->tls_cert, err)) < 0 ||
	    (r = tls_file_check("tls_key", cfg->tls_key, err)) < 0 ||
	    (r = tls_file_check("tls_ca", cfg->tls_ca, err)) < 0)
		return r;
	ERR_clear_error();
	s->tls = SSL_CTX_new(TLS_server_method());
	if (!s->tls)
		return loom_err_set(err, ENOMEM, "TLS: cannot make a context: %s",
				    tls_errors(why, sizeof(why)));
	SSL_CTX_set_min_proto_version(s->tls, TLS1_2_VERSION);
	SSL_CTX_set_session_cache_mode(s->tls, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(s->tls, 0);
	if (SSL_CTX_use_certificate_chain_file(s->tls, cfg->tls_cert) != 1)
		return loom_err_set(err, EINVAL, "tls_cert %s: not a PEM certificate (%s)",
				    cfg->tls_cert, tls_errors(why, sizeof(why)));
	f = fopen(cfg->tls_key, "r");
	if (!f)
		return loom_err_set(err, errno, "tls_key %s: %s", cfg->tls_key, strerror(errno));
	key = PEM_read_PrivateKey(f, NULL, tls_no_passphrase, NULL);
	fclose(f);
	if (!key)
		return loom_err_set(err, EINVAL,
				    "tls_key %s: not an unencrypted PEM private key (%s)",
				    cfg->tls_key, tls_errors(why, sizeof(why)));
	r = SSL_CTX_use_PrivateKey(s->tls, key) == 1 && SSL_CTX_check_private_key(s->tls) == 1;
	EVP_PKEY_free(key);
	if (!r)
		return loom_err_set(err, EINVAL, "tls_key %s does not match tls_cert %s (%s)",
				    cfg->tls_key, cfg->tls_cert, tls_errors(why, sizeof(why)));
	if (SSL_CTX_load_verify_locations(s->tls, cfg->tls_ca, NULL) != 1)
		return loom_err_set(err, EINVAL, "tls_ca %s: no PEM CA certificate (%s)",
				    cfg->tls_ca, tls_errors(why, sizeof(why)));
	cas = SSL_load_client_CA_file(cfg->tls_ca);
	if (cas)
		SSL_CTX_set_client_CA_list(s->tls, cas);
	/* mutual: every peer shows a certificate of tls_ca, or the handshake fails */
	SSL_CTX_set_verify(s->tls, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	ERR_clear_error();
	return 0;
}

/* "DNS:a, IP:b, CN=c": what cert names, for messages. */
static void tls_describe(X509 *cert, char *buf, size_t size)
{
	GENERAL_NAMES *sans = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
	char cn[128] = "";

	buf[0] = 0;
	for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
		size_t n = strlen(buf);
		char ip[INET6_ADDRSTRLEN] = "?";

		if (g->type == GEN_DNS)
			snprintf(buf + n, size - n, "%sDNS:%.*s", n ? ", " : "",
				 ASN1_STRING_length(g->d.dNSName),
				 (const char *)ASN1_STRING_get0_data(g->d.dNSName));
		else if (g->type == GEN_IPADD) {
			int len = ASN1_STRING_length(g->d.iPAddress);

			if (len == 4 || len == 16)
				inet_ntop(len == 4 ? AF_INET : AF_INET6,
					  ASN1_STRING_get0_data(g->d.iPAddress), ip, sizeof(ip));
			snprintf(buf + n, size - n, "%sIP:%s", n ? ", " : "", ip);
		}
	}
	GENERAL_NAMES_free(sans);
	X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof(cn));
	if (strlen(buf) + 2 < size)
		snprintf(buf + strlen(buf), size - strlen(buf), "%sCN=%s", buf[0] ? ", " : "",
			 cn[0] ? cn : "(none)");
}
#else
static void tls_log_failure(struct loomd_conn *c)
{
	(void)c;
}
#endif

int loomd_conn_tls_check_agent(struct loomd_conn *c, uint32_t host,
			       const struct loomd_host_addr *addrs, size_t naddrs,
			       struct loom_err *err)
{
#ifdef LOOM_HAVE_TLS
	SSL *ssl = c->bev ? bufferevent_openssl_get_ssl(c->bev) : NULL;
	X509 *cert = ssl ? SSL_get_peer_certificate(ssl) : NULL;
	char name[32], names[512];
	int r = 0;

	if (!cert)
		return loom_err_set(err, EPERM, "no client certificate on this TLS connection");
	snprintf(name, sizeof(name), "host-%u", host);
	tls_describe(cert, names, sizeof(names));
	/* DNS subjectAltNames, or the subject's CN when there are none; no wildcards */
	if (X509_check_host(cert, name, 0, X509_CHECK_FLAG_NO_WILDCARDS, NULL) != 1) {
		r = loom_err_set(err, EPERM,
				 "host %u: the client certificate does not name %s (it names %s)",
				 host, name, names);
		goto out;
	}
	for (size_t i = 0; i < naddrs; i++) {
		const struct loomd_host_addr *a = &addrs[i];
		char ip[INET6_ADDRSTRLEN] = "?";

		if (X509_check_ip(cert, a->bytes, a->len, 0) == 1)
			continue;
		inet_ntop(a->len == 4 ? AF_INET : AF_INET6, a->bytes, ip, sizeof(ip));
		r = loom_err_set(err, EPERM,
				 "host %u: address %s is not an IP subjectAltName of the client "
				 "certificate (it names %s)",
				 host, ip, names);
		goto out;
	}
out:
	X509_free(cert);
	return r;
#else
	(void)c;
	(void)host;
	(void)addrs;
	(void)naddrs;
	return loom_err_set(err, ENOTSUP, "this loomd was built without TLS");
#endif
}

/*
 * The tenant c's certificate names: its first DNS subjectAltName, or the
 * subject's CN when it has none. 0 with the name in buf, or -EACCES/-EPERM
 * with err.
 */
static int tls_tenant(struct loomd_conn *c, char *buf, size_t size, struct loom_err *err)
{
#ifdef LOOM_HAVE_TLS
	SSL *ssl = c->bev ? bufferevent_openssl_get_ssl(c->bev) : NULL;
	X509 *cert = ssl ? SSL_get_peer_certificate(ssl) : NULL;
	GENERAL_NAMES *sans;
	char name[256] = "";
	unsigned long long host;
	int r = 0;

	if (!cert)
		return loom_err_set(err, EACCES, "no client certificate on this TLS connection");
	sans = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
	for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans) && !name[0]; i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);

		if (g->type == GEN_DNS)
			snprintf(name, sizeof(name), "%.*s", ASN1_STRING_length(g->d.dNSName),
				 (const char *)ASN1_STRING_get0_data(g->d.dNSName));
	}
	GENERAL_NAMES_free(sans);
	if (!name[0])
		X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, name,
					  sizeof(name));
	X509_free(cert);
	for (char *p = name; *p; p++)
		if ((unsigned char)*p < ' ' || (unsigned char)*p >= 0x7f)
			*p = '?';
	if (!strncmp(name, "host-", 5) && loom_parse_u64(name + 5, &host) == 0)
		r = loom_err_set(err, EPERM,
				 "the client certificate names %s: an agent's certificate cannot "
				 "say hello as a framework",
				 name);
	else if (!loomd_tenant_name_valid(name))
		r = loom_err_set(
			err, EACCES,
			"the client certificate names '%.64s', which is not a tenant name "
			"(1..%d of A-Z a-z 0-9 . _ -; its first DNS subjectAltName, or its "
			"CN without one)",
			name, LOOMD_TENANT_MAX - 1);
	else
		snprintf(buf, size, "%s", name);
	return r;
#else
	(void)c;
	(void)buf;
	(void)size;
	return loom_err_set(err, ENOTSUP, "this loomd was built without TLS");
#endif
}

int loomd_conn_auth_framework(struct loomd_conn *c, const char *token, struct loom_err *err)
{
	struct loomd_server *s = c->srv;
	const struct loomd_token_entry *e = NULL;
	char name[LOOMD_TENANT_MAX] = LOOMD_TENANT_DEFAULT;
	int r;

	if (token && !token[0])
		token = NULL;
	/* the token is a secret: no message quotes it */
	if (token && !s->tokens)
		return loom_err_set(err, EACCES,
				    "hello: a token was given but loomd has no tokens file "
				    "(tokens = PATH)");
	if (token && !(e = loomd_tokens_find(s->tokens, token)))
		return loom_err_set(err, EACCES, "hello: the token is not in loomd's tokens file");
	if (c->tls) {
		r = tls_tenant(c, name, sizeof(name), err);
		if (r < 0)
			return r;
		if (e && strcmp(e->tenant, name))
			return loom_err_set(err, EACCES,
					    "hello: the token is tenant %s's but the certificate "
					    "names %s",
					    e->tenant, name);
	} else if (e) {
		snprintf(name, sizeof(name), "%s", e->tenant);
	} else if (s->tokens) {
		return loom_err_set(err, EACCES,
				    "hello: loomd has a tokens file: a framework needs a token "
				    "(LOOM_TOKEN) or, on listen_tcp, a client certificate");
	}
	return loomd_server_tenant(s, name, &c->tenant, err);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct loomd_conn *c = arg;

	(void)bev;
	if (what & BEV_EVENT_TIMEOUT)
		log_info("%s (%s): silent for too long (%s); disconnected", c->peer,
			 c->name[0] ? c->name : "no hello",
			 c->role == LOOMD_ROLE_AGENT ? "agent_timeout" : "no hello in 10 s");
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR) && c->bev &&
	    evbuffer_get_length(bufferevent_get_output(c->bev))) {
		/* half-closed: the peer still reads what it is owed, then write_cb frees */
		loomd_conn_close(c);
		return;
	} else if ((what & BEV_EVENT_ERROR) && c->tls) {
		tls_log_failure(c);
	} else if (what & BEV_EVENT_ERROR)
		log_debug("%s: %s", c->peer, strerror(EVUTIL_SOCKET_ERROR()));
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
		conn_free(c);
}

static void peer_name(const struct sockaddr *sa, char *buf, size_t size)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(buf, size, "%s:%u", host, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof(host));
		snprintf(buf, size, "[%s]:%u", host, ntohs(in->sin6_port));
	} else {
		snprintf(buf, size, "unix");
	}
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len,
		      void *arg)
{
	struct loomd_server *s = arg;
	struct loomd_conn *c;

	(void)len;
	if (s->stopping || s->nconns >= s->cfg.max_connections) {
		if (!s->stopping)
			log_warn("refusing a connection: %u connections open (max_connections)",
				 s->nconns);
		evutil_closesocket(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		evutil_closesocket(fd);
		return;
	}
	c->srv = s;
	c->host = CP_NONE;
	c->connected_ns = loom_clock_mono_ns();
	peer_name(sa, c->peer, sizeof(c->peer));
	if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6) {
		int one = 1;

		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
#ifdef LOOM_HAVE_TLS
	if (s->tls && l == s->lis_tcp) {
		SSL *ssl = SSL_new(s->tls);

		c->bev = ssl ? bufferevent_openssl_socket_new(s->base, fd, ssl,
							      BUFFEREVENT_SSL_ACCEPTING,
							      BEV_OPT_CLOSE_ON_FREE) :
			       NULL;
		if (c->bev) {
			c->tls = true;
			/* a peer that closes without close_notify has ended, not failed */
			bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
		}
	} else
#endif
		c->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c->bev) {
		evutil_closesocket(fd);
		free(c);
		return;
	}
	bufferevent_setcb(c->bev, read_cb, write_cb, event_cb, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	{
		/* a connection must say hello in time; frameworks may then idle */
		struct timeval tv = {LOOMD_HELLO_TIMEOUT_S, 0};

		bufferevent_set_timeouts(c->bev, &tv, NULL);
	}
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->nconns++;
	s->st.conns_total++;
}

static void listener_error_cb(struct evconnlistener *l, void *arg)
{
	(void)l;
	(void)arg;
	log_warn("accept: %s", strerror(EVUTIL_SOCKET_ERROR()));
}

/*
 * The group id of name (a group name, or a number) for config key; 0 or
 * -ENOENT/-errno with err naming the key.
 */
static int group_id(const char *key, const char *name, gid_t *ret, struct loom_err *err)
{
	struct group gr, *found = NULL;
	unsigned long long n;
	char buf[16384];
	int r;

	if (loom_parse_u64(name, &n) == 0 && n < (gid_t)-1) {
		*ret = (gid_t)n;
		return 0;
	}
	r = getgrnam_r(name, &gr, buf, sizeof(buf), &found);
	if (r != 0)
		return loom_err_set(err, r, "%s '%s': %s", key, name, strerror(r));
	if (!found)
		return loom_err_set(err, ENOENT, "%s '%s': no such group", key, name);
	*ret = found->gr_gid;
	return 0;
}

/*
 * Gives the socket file path its mode and (group != "") its group, before
 * anyone can connect (the socket is bound, not yet listening). 0 or -errno
 * with err naming key.
 */
static int socket_perms(const char *key, const char *path, mode_t mode, const char *group_key,
			const char *group, struct loom_err *err)
{
	gid_t gid;
	int r;

	if (group[0]) {
		r = group_id(group_key, group, &gid, err);
		if (r < 0)
			return r;
		if (chown(path, (uid_t)-1, gid) < 0)
			return loom_err_set(err, errno,
					    "%s %s: cannot give it group %s (%s = %s): %s", key,
					    path, group, group_key, group, strerror(errno));
	}
	if (chmod(path, mode) < 0)
		return loom_err_set(err, errno, "%s %s: chmod %04o: %s", key, path, (unsigned)mode,
				    strerror(errno));
	return 0;
}

static int listen_unix(struct loomd_server *s, const char *path, struct loom_err *err)
{
	struct loom_addr a;
	int fd, r;

	r = loom_addr_unix("listen_unix", path, &a, err);
	if (r < 0)
		return r;
	/* A socket file nobody answers on is stale; a live one belongs to another loomd. */
	fd = loom_addr_bind("listen_unix", &a, LOOM_ADDR_NONBLOCK, err);
	if (fd < 0)
		return fd;
	/* 0660 and its group before listen(): nobody else connects meanwhile */
	r = socket_perms("listen_unix", path, 0660, "unix_group", s->cfg.unix_group, err);
	if (r < 0) {
		close(fd);
		unlink(path);
		return r;
	}
	s->lis_unix = evconnlistener_new(s->base, accept_cb, s,
					 LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 512, fd);
	if (!s->lis_unix) {
		r = loom_err_set(err, errno ? errno : EIO, "listen_unix %s: %s", path,
				 strerror(errno ? errno : EIO));
		close(fd);
		unlink(path);
		return r;
	}
	evconnlistener_set_error_cb(s->lis_unix, listener_error_cb);
	return 0;
}

static bool addr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24 == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

static int listen_tcp(struct loomd_server *s, const char *addr, struct loom_err *err)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct loom_addr a;
	int fd, r;

	r = loom_addr_parse("listen_tcp", addr, LOOM_ADDR_LISTEN | LOOM_ADDR_TCP_ONLY, &a, err);
	if (r < 0)
		return r;
	fd = loom_addr_bind("listen_tcp", &a, LOOM_ADDR_NONBLOCK, err);
	if (fd < 0)
		return fd;
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
		r = loom_err_set(err, errno, "listen_tcp %s: getsockname: %s", addr,
				 strerror(errno));
		close(fd);
		return r;
	}
	/* bound, not listening yet: nobody has connected to a refused address */
	if (!s->tls && !addr_is_loopback((const struct sockaddr *)&ss)) {
		if (!s->cfg.insecure) {
			close(fd);
			return loom_err_set(
				err, EACCES,
				"listen_tcp %s: plain TCP on a non-loopback address; set tls_cert, "
				"tls_key and tls_ca (docs/security.md), or insecure = yes to run "
				"without authentication",
				addr);
		}
		log_warn("listen_tcp %s: plain TCP on a non-loopback address (insecure = yes): "
			 "whoever reaches it can register and unregister any job and act as any "
			 "host's agent",
			 addr);
	}
	s->lis_tcp = evconnlistener_new(s->base, accept_cb, s,
					LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 512, fd);
	if (!s->lis_tcp) {
		r = loom_err_set(err, errno ? errno : EIO, "listen_tcp %s: %s", addr,
				 strerror(errno ? errno : EIO));
		close(fd);
		return r;
	}
	evconnlistener_set_error_cb(s->lis_tcp, listener_error_cb);
	return 0;
}

/* ---- passes and timers ------------------------------------------------------------------------ */

static void arm_wake(struct loomd_server *s, uint64_t next_ns)
{
	uint64_t now = loomd_server_now_ns(s);
	struct timeval tv;
	uint64_t d;

	if (s->cfg.virtual_clock || next_ns == CP_TIME_NEVER) {
		s->wake_at_ns = CP_TIME_NEVER;
		return;
	}
	if (s->wake_at_ns != CP_TIME_NEVER && s->wake_at_ns <= next_ns &&
	    evtimer_pending(s->wake_ev, NULL))
		return;
	d = next_ns > now ? next_ns - now : 0;
	tv.tv_sec = (time_t)(d / 1000000000ULL);
	tv.tv_usec = (suseconds_t)(d % 1000000000ULL / 1000 + 1);
	s->wake_at_ns = next_ns;
	evtimer_add(s->wake_ev, &tv);
}

int loomd_server_pass(struct loomd_server *s, struct loom_err *err)
{
	struct loomd_sched_result res;
	uint64_t t0 = loom_clock_mono_ns();
	int r;

	s->pass_scheduled = false;
	s->stats_changed = false;
	s->last_pass_mono_ns = loom_clock_mono_ns();
	if (s->pass_ev)
		event_del(s->pass_ev);
	r = loomd_sched_pass(s->sched, loomd_server_now_ns(s), &res, err);
	if (r < 0)
		return r;
	s->st.passes++;
	s->watches = res.watches;
	if (res.decided) {
		const struct policy_decision *d = loomd_sched_decision(s->sched);

		loomd_hist_observe(&s->st.decide_hist, (double)res.decide_ns * 1e-9);
		loomd_webui_note_decision(s->ui, res.decide_ns, d ? d->norder : 0);
	}
	if (s->change_mono_ns) {
		struct loomd_enforce *e = &s->enforce[s->st.passes % LOOMD_PUSH_RING];

		e->pass = s->st.passes;
		e->since_mono_ns = s->change_mono_ns;
		e->left = 0;
		s->enforce_cur = s->st.passes;
		s->change_mono_ns = 0;
	}
	loomd_agents_push(s);
	s->enforce_cur = 0;
	s->last_pass_dur_ns = loom_clock_mono_ns() - t0;
	loomd_hist_observe(&s->st.pass_hist, (double)s->last_pass_dur_ns * 1e-9);
	arm_wake(s, res.next_ns);
	return 0;
}

static void pass_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loomd_server *s = arg;
	struct loom_err err = {{0}};

	(void)fd;
	(void)what;
	if (loomd_server_pass(s, &err) < 0) {
		/* Keep what agents have (fail-static) and try again on the next tick. */
		if (strcmp(err.msg, s->last_err.msg))
			log_err("scheduling pass: %s", loom_err_str(&err));
		s->last_err = err;
		s->stats_changed = true;
	} else {
		s->last_err.msg[0] = 0;
	}
	sweep_overflowed(s);
}

/*
 * The least time from one pass's start to the next's: pass_gap, and twice
 * the last pass's duration, so that passes (whose cost grows with the
 * registry) never take more than half of the loop's time however fast
 * changes come.
 */
static uint64_t pass_gap_ns(const struct loomd_server *s)
{
	uint64_t adaptive = 2 * s->last_pass_dur_ns;

	return adaptive > s->cfg.pass_gap_ns ? adaptive : s->cfg.pass_gap_ns;
}

static bool pass_due(const struct loomd_server *s)
{
	return s->cfg.virtual_clock ||
	       loom_clock_mono_ns() - s->last_pass_mono_ns >= pass_gap_ns(s);
}

void loomd_server_schedule_pass(struct loomd_server *s)
{
	uint64_t since;

	if (s->pass_scheduled || !s->pass_ev)
		return;
	s->pass_scheduled = true;
	since = loom_clock_mono_ns() - s->last_pass_mono_ns;
	if (pass_due(s)) {
		event_active(s->pass_ev, EV_TIMEOUT, 0);
	} else {
		/* under load, one pass takes all the changes of its gap */
		uint64_t wait_us = (pass_gap_ns(s) - since) / 1000 + 1;
		struct timeval tv = {(time_t)(wait_us / 1000000), (suseconds_t)(wait_us % 1000000)};

		event_add(s->pass_ev, &tv);
	}
}

static void wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loomd_server *s = arg;

	(void)fd;
	(void)what;
	s->wake_at_ns = CP_TIME_NEVER;
	loomd_server_schedule_pass(s);
}

static void publish_metrics(struct loomd_server *s)
{
	struct loomd_prom p;

	if (!s->http)
		return;
	loomd_prom_init(&p);
	loomd_metrics_render(s, &p);
	loomd_metrics_http_publish(s->http, loomd_prom_text(&p), loomd_prom_len(&p));
	loomd_prom_done(&p);
	s->last_publish_mono_ns = loom_clock_mono_ns();
}

/* Forgets jobs finished more than done_retention ago (and their journal records). */
static void expire_done(struct loomd_server *s)
{
	uint64_t now = loomd_server_now_ns(s), ids[256];
	struct loom_err err;
	uint32_t n;

	if (now < s->cfg.done_retention_ns)
		return;
	n = loomd_registry_expire(s->reg, now - s->cfg.done_retention_ns, ids, 256);
	for (uint32_t i = 0; i < n && s->journal; i++)
		if (loomd_journal_forget(s->journal, ids[i], &err) < 0) {
			log_err("%s; stopping", loom_err_str(&err));
			s->exit_code = 1;
			loomd_server_stop(s);
			return;
		}
	if (n) {
		log_debug("forgot %u finished jobs", n);
		loomd_server_need_commit(s);
		loomd_server_schedule_pass(s);
	}
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loomd_server *s = arg;

	(void)fd;
	(void)what;
	if (loom_clock_mono_ns() - s->last_expire_mono_ns > 1000000000ULL) {
		s->last_expire_mono_ns = loom_clock_mono_ns();
		expire_done(s);
	}
	sweep_overflowed(s);
	if (s->stats_changed)
		loomd_server_schedule_pass(s);
	if (loom_clock_mono_ns() - s->last_publish_mono_ns > 250 * 1000000ULL)
		publish_metrics(s);
	loomd_webui_tick(s->ui);
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct loomd_server *s = arg;

	(void)what;
	log_info("%s: shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	loomd_server_stop(s);
}

void loomd_server_stop(struct loomd_server *s)
{
	s->stopping = true;
	event_base_loopexit(s->base, NULL);
}

/* ---- start-up --------------------------------------------------------------------------------- */

static int load_topology(struct loomd_server *s, struct loom_err *err)
{
	if (s->cfg.topology[0]) {
		struct loom_err e2 = {{0}};

		s->topo = topo_load_json(s->cfg.topology, &e2);
		if (!s->topo) {
			int e = errno ? errno : EINVAL;

			/* e2 names the file (and line:column); say which key gave it */
			return loom_err_set(err, e, "topology: %s", loom_err_str(&e2));
		}
		return 0;
	}
	s->topo = topo_new_bigswitch(s->cfg.hosts, s->cfg.link_bps);
	if (!s->topo)
		return loom_err_set(err, errno, "cannot make a fabric of %u hosts", s->cfg.hosts);
	return 0;
}

int loomd_server_init(struct loomd_server *s, const struct loomd_config *cfg, struct loom_err *err)
{
	enum policy_class_assign assign;
	struct loomd_registry_limits lim;
	struct timeval tick;
	int r;

	memset(s, 0, sizeof(*s));
	s->cfg = *cfg;
	s->wake_at_ns = CP_TIME_NEVER;
	s->start_mono_ns = loom_clock_mono_ns();
	s->controller_id = loom_clock_wall_ns() ^ ((uint64_t)getpid() << 40);
	loom_vclock_init(&s->vclock, 0);
	loomd_hist_init(&s->st.decide_hist);
	loomd_hist_init(&s->st.push_hist);
	loomd_hist_init(&s->st.enforce_hist);
	loomd_hist_init(&s->st.pass_hist);
	loomd_hist_init(&s->st.commit_hist);
	signal(SIGPIPE, SIG_IGN);
	r = load_topology(s, err);
	if (r < 0)
		return r;
	lim = (struct loomd_registry_limits){cfg->max_jobs, cfg->max_coflows, cfg->max_flows,
					     cfg->unknown_flow_bytes};
	s->reg = loomd_registry_new(s->topo, &lim);
	s->agent_of_host = calloc(s->topo->nhosts, sizeof(*s->agent_of_host));
	if (!s->reg || !s->agent_of_host)
		return loom_err_set(err, ENOMEM, "out of memory");
	if (policy_class_assign_parse(cfg->class_assign, &assign) < 0)
		return loom_err_set(err, EINVAL,
				    "class_assign: '%s' is not one of conflict, per-host",
				    cfg->class_assign);
	s->sched = loomd_sched_new(s->reg, s->topo, cfg->policy, cfg->weights, cfg->classes, assign,
				   cfg->seed, err);
	if (!s->sched)
		return -errno;
	/* tenant 0 is "default"; then the tokens file's, in its order (the journal's come after) */
	if (cfg->tokens[0] && (r = loomd_tokens_load(cfg->tokens, &s->tokens, err)) < 0)
		return r;
	{
		uint32_t id;

		r = loomd_server_tenant(s, LOOMD_TENANT_DEFAULT, &id, err);
		for (uint32_t i = 0; r == 0 && s->tokens && i < s->tokens->n; i++)
			r = loomd_server_tenant(s, s->tokens->v[i].tenant, &id, err);
		if (r < 0)
			return r;
	}
	if (s->tokens)
		log_info("tokens %s: %u lines, %u tenants", cfg->tokens, s->tokens->n,
			 s->ntenants - 1);
	if (cfg->journal[0]) {
		uint64_t t0 = loom_clock_mono_ns();

		s->journal = loomd_journal_open(cfg->journal, cfg->journal_sync, err);
		if (!s->journal)
			return -errno;
		r = loomd_rpc_replay(s, err);
		if (r < 0)
			return r;
		uint32_t njobs;

		loomd_registry_jobs(s->reg, &njobs);
		log_info("journal %s: %u jobs restored in %.1f ms", cfg->journal, njobs,
			 (double)(loom_clock_mono_ns() - t0) * 1e-6);
	}
	s->base = event_base_new();
	if (!s->base)
		return loom_err_set(err, ENOMEM, "cannot create the event loop");
	s->pass_ev = event_new(s->base, -1, 0, pass_cb, s);
	s->commit_ev = event_new(s->base, -1, 0, commit_cb, s);
	s->wake_ev = evtimer_new(s->base, wake_cb, s);
	s->tick_ev = event_new(s->base, -1, EV_PERSIST, tick_cb, s);
	s->sigterm_ev = evsignal_new(s->base, SIGTERM, signal_cb, s);
	s->sigint_ev = evsignal_new(s->base, SIGINT, signal_cb, s);
	if (!s->pass_ev || !s->commit_ev || !s->wake_ev || !s->tick_ev || !s->sigterm_ev ||
	    !s->sigint_ev)
		return loom_err_set(err, ENOMEM, "out of memory");
	event_add(s->sigterm_ev, NULL);
	event_add(s->sigint_ev, NULL);
	if (!cfg->virtual_clock) {
		tick.tv_sec = (time_t)(cfg->tick_ns / 1000000000ULL);
		tick.tv_usec = (suseconds_t)(cfg->tick_ns % 1000000000ULL / 1000);
		event_add(s->tick_ev, &tick);
	}
	if (cfg->listen_unix[0] && (r = listen_unix(s, cfg->listen_unix, err)) < 0)
		return r;
#ifdef LOOM_HAVE_TLS
	if (cfg->tls_cert[0] && (r = tls_init(s, err)) < 0)
		return r;
#endif
	if (cfg->listen_tcp[0] && (r = listen_tcp(s, cfg->listen_tcp, err)) < 0)
		return r;
	if (cfg->admin_socket[0]) {
		gid_t gid = (gid_t)-1;

		/* the admin socket is loomd's user's alone, or its group's with admin_group */
		if (cfg->admin_group[0] &&
		    (r = group_id("admin_group", cfg->admin_group, &gid, err)) < 0)
			return r;
		s->admin = loom_admin_new_perm(s->base, cfg->admin_socket,
					       cfg->admin_group[0] ? 0660 : 0600, gid, err);
		if (!s->admin)
			return -errno;
		r = loomd_admin_register_all(s);
		if (r < 0)
			return loom_err_set(err, -r, "cannot register the admin commands");
	}
	if (cfg->metrics[0]) {
		struct loom_addr m;

		r = loom_addr_parse("metrics", cfg->metrics, LOOM_ADDR_LISTEN | LOOM_ADDR_TCP_ONLY,
				    &m, err);
		if (r < 0)
			return r;
		s->http = loomd_metrics_http_start(m.host, m.port, err);
		if (!s->http)
			return -errno;
		/* an IPv6 host goes in brackets in a URL */
		log_info("metrics on http://%s%s%s:%u/metrics, web UI on /",
			 strchr(m.host, ':') ? "[" : "", m.host, strchr(m.host, ':') ? "]" : "",
			 loomd_metrics_http_port(s->http));
		publish_metrics(s);
		s->ui = loomd_webui_new(s, s->http, err);
		if (!s->ui)
			return -errno;
	}
	loomd_server_schedule_pass(s);
	return 0;
}

int loomd_server_run(struct loomd_server *s)
{
	event_base_dispatch(s->base);
	return s->exit_code;
}

void loomd_server_done(struct loomd_server *s)
{
	struct loom_err err;

	while (s->conns)
		conn_free(s->conns);
	if (s->journal && loomd_journal_pending(s->journal) &&
	    loomd_journal_commit(s->journal, &err) < 0)
		log_err("%s", loom_err_str(&err));
	s->journal = loomd_journal_close(s->journal);
	s->admin = loom_admin_free(s->admin);
	loomd_webui_shutdown(s->ui);
	s->http = loomd_metrics_http_stop(s->http);
	s->ui = loomd_webui_free(s->ui);
	if (s->lis_unix) {
		evconnlistener_free(s->lis_unix);
		unlink(s->cfg.listen_unix);
	}
	if (s->lis_tcp)
		evconnlistener_free(s->lis_tcp);
#ifdef LOOM_HAVE_TLS
	SSL_CTX_free(s->tls);
	s->tls = NULL;
#endif
	if (s->pass_ev)
		event_free(s->pass_ev);
	if (s->commit_ev)
		event_free(s->commit_ev);
	if (s->wake_ev)
		event_free(s->wake_ev);
	if (s->tick_ev)
		event_free(s->tick_ev);
	if (s->sigterm_ev)
		event_free(s->sigterm_ev);
	if (s->sigint_ev)
		event_free(s->sigint_ev);
	if (s->base)
		event_base_free(s->base);
	s->sched = loomd_sched_free(s->sched);
	s->reg = loomd_registry_free(s->reg);
	s->tokens = loomd_tokens_free(s->tokens);
	free(s->tenants);
	s->tenants = NULL;
	s->ntenants = s->cap_tenants = 0;
	free(s->agent_of_host);
	s->topo = topo_free(s->topo);
}
