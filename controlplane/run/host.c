/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom-run's host process (run.h): in one host's network namespace, a TCP
 * receiver on the listen port and a sender for each flow the driver starts,
 * all non-blocking on one libevent loop.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "controlplane/run/run.h"

#define IO_BYTES (256 * 1024)

struct host;

/* The socket's TCP congestion control; 0 or -1 (errno). */
static int set_congestion(int fd, const char *name)
{
	return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, (socklen_t)strlen(name));
}

/* A flow this host sends. */
struct sflow {
	struct host *h;
	struct event *ev;
	int fd;
	uint32_t flow;
	bool connected, sent;
	uint64_t left; /* payload bytes still to write */
	uint8_t hdr[LRUN_HDR_BYTES];
	uint32_t hdr_off;
};

/* A flow this host receives. */
struct rconn {
	struct host *h;
	struct event *ev;
	int fd;
	struct lrun_rx rx;
};

struct host {
	const struct lrun_host_cfg *cfg;
	struct event_base *base;
	struct event *ctl_ev, *listen_ev;
	int ctl, lfd;
	int status;
	uint8_t *buf; /* IO_BYTES: zeros to send, scratch to receive into */
};

static void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get_be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* ---- the header between hosts (run.h) -------------------------------------------------------- */

void lrun_hdr_write(uint8_t *hdr, uint32_t flow, uint64_t bytes)
{
	put_be64(hdr, (uint64_t)LRUN_MAGIC << 32 | flow);
	put_be64(hdr + 8, bytes);
}

int lrun_rx_feed(struct lrun_rx *rx, const uint8_t *p, size_t n, struct loom_err *err)
{
	size_t off = 0;

	if (rx->hdr_off < LRUN_HDR_BYTES) {
		uint64_t w;

		while (rx->hdr_off < LRUN_HDR_BYTES && off < n)
			rx->hdr[rx->hdr_off++] = p[off++];
		if (rx->hdr_off < LRUN_HDR_BYTES)
			return 0;
		/* the header is complete with these bytes */
		w = get_be64(rx->hdr);
		if (w >> 32 != LRUN_MAGIC)
			return loom_err_set(err, EPROTO, "a connection without loom-run's header");
		rx->flow = (uint32_t)w;
		rx->left = get_be64(rx->hdr + 8);
	}
	if (n - off > rx->left)
		return loom_err_set(err, EMSGSIZE,
				    "flow %u brought more bytes than its header says", rx->flow);
	rx->left -= n - off;
	return rx->left == 0;
}

/* Sends one message to the driver; a failure ends the loop. */
static void ctl_send(struct host *h, const struct lrun_msg *m)
{
	if (send(h->ctl, m, sizeof(*m), MSG_NOSIGNAL) != (ssize_t)sizeof(*m)) {
		h->status = 1;
		event_base_loopbreak(h->base);
	}
}

/* ---- sending ---------------------------------------------------------------------------------- */

static void sflow_end(struct sflow *s, int status)
{
	struct lrun_msg m = {.type = LRUN_MSG_DONE, .flow = s->flow, .status = status};

	m.mono_ns = loom_clock_mono_ns();
	ctl_send(s->h, &m);
	event_free(s->ev);
	close(s->fd);
	free(s);
}

static void sflow_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sflow *s = arg;
	struct host *h = s->h;

	if (!s->connected) {
		int e = 0;
		socklen_t len = sizeof(e);

		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
			e = errno;
		if (e == EINPROGRESS)
			return;
		if (e) {
			sflow_end(s, -e);
			return;
		}
		s->connected = true;
	}
	if (s->sent) {
		char ack;
		ssize_t n = recv(fd, &ack, 1, 0);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		sflow_end(s, n == 1 && ack == LRUN_ACK ? 0 : n < 0 ? -errno : -EPIPE);
		return;
	}
	while (s->hdr_off < LRUN_HDR_BYTES || s->left > 0) {
		const void *p;
		size_t len;
		ssize_t n;

		if (s->hdr_off < LRUN_HDR_BYTES) {
			p = s->hdr + s->hdr_off;
			len = LRUN_HDR_BYTES - s->hdr_off;
		} else {
			p = h->buf;
			len = s->left < IO_BYTES ? (size_t)s->left : IO_BYTES;
		}
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			sflow_end(s, -errno);
			return;
		}
		if (s->hdr_off < LRUN_HDR_BYTES)
			s->hdr_off += (uint32_t)n;
		else
			s->left -= (uint64_t)n;
	}
	/* everything written: wait for the receiver's ack */
	s->sent = true;
	event_del(s->ev);
	event_assign(s->ev, h->base, fd, EV_READ | EV_PERSIST, sflow_cb, s);
	if (event_add(s->ev, NULL) < 0)
		sflow_end(s, -ENOMEM);
}

static int sflow_start(struct host *h, const struct lrun_msg *m)
{
	struct sockaddr_in src = {.sin_family = AF_INET}, dst = {.sin_family = AF_INET};
	struct sflow *s = calloc(1, sizeof(*s));
	int one = 1, r;

	if (!s)
		return -ENOMEM;
	s->h = h;
	s->flow = m->flow;
	s->left = m->bytes;
	lrun_hdr_write(s->hdr, m->flow, m->bytes);
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		r = -errno;
		free(s);
		return r;
	}
	src.sin_addr.s_addr = h->cfg->addr;
	src.sin_port = htons(m->src_port);
	dst.sin_addr.s_addr = m->dst_addr;
	dst.sin_port = htons(m->dst_port);
	setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if ((h->cfg->congestion && set_congestion(s->fd, h->cfg->congestion) < 0) ||
	    bind(s->fd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
	    (connect(s->fd, (struct sockaddr *)&dst, sizeof(dst)) < 0 && errno != EINPROGRESS)) {
		r = -errno;
		close(s->fd);
		free(s);
		return r;
	}
	s->ev = event_new(h->base, s->fd, EV_WRITE | EV_PERSIST, sflow_cb, s);
	if (!s->ev || event_add(s->ev, NULL) < 0) {
		if (s->ev)
			event_free(s->ev);
		close(s->fd);
		free(s);
		return -ENOMEM;
	}
	return 0;
}

/* ---- receiving -------------------------------------------------------------------------------- */

static void rconn_end(struct rconn *c)
{
	event_free(c->ev);
	close(c->fd);
	free(c);
}

static void rconn_cb(evutil_socket_t fd, short what, void *arg)
{
	struct rconn *c = arg;
	struct host *h = c->h;

	for (;;) {
		ssize_t n = recv(fd, h->buf, IO_BYTES, 0);
		struct loom_err err;
		int r;

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			/* the sender went away before its last byte: it sees no ack */
			rconn_end(c);
			return;
		}
		r = lrun_rx_feed(&c->rx, h->buf, (size_t)n, &err);
		if (r < 0) {
			log_warn("host %u: %s", h->cfg->host, err.msg);
			rconn_end(c);
			return;
		}
		if (r == 1) {
			char ack = LRUN_ACK;

			/* a fresh socket has room for one byte; a failure shows at the sender */
			(void)send(fd, &ack, 1, MSG_NOSIGNAL);
			rconn_end(c);
			return;
		}
	}
}

static void listen_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct host *h = arg;

	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct rconn *c;

		if (fd < 0)
			return; /* EAGAIN, or a connection that went away */
		c = calloc(1, sizeof(*c));
		if (c)
			c->ev = event_new(h->base, fd, EV_READ | EV_PERSIST, rconn_cb, c);
		if (!c || !c->ev || event_add(c->ev, NULL) < 0) {
			if (c && c->ev)
				event_free(c->ev);
			free(c);
			close(fd);
			continue;
		}
		c->h = h;
		c->fd = fd;
	}
}

/* ---- the driver's requests -------------------------------------------------------------------- */

static void ctl_cb(evutil_socket_t fd, short what, void *arg)
{
	struct host *h = arg;
	struct lrun_msg m;
	ssize_t n = recv(fd, &m, sizeof(m), 0);
	int r;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n != (ssize_t)sizeof(m) || m.type != LRUN_MSG_START) {
		/* the driver closed its end (or broke the protocol): stop */
		h->status = n == 0 ? 0 : 1;
		event_base_loopbreak(h->base);
		return;
	}
	r = sflow_start(h, &m);
	if (r < 0) {
		struct lrun_msg d = {.type = LRUN_MSG_DONE, .flow = m.flow, .status = r};

		d.mono_ns = loom_clock_mono_ns();
		ctl_send(h, &d);
	}
}

/* Enters the namespace and listens; 0 or -errno. */
static int host_setup(struct host *h)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	int nfd, one = 1, r;

	nfd = open(h->cfg->netns, O_RDONLY | O_CLOEXEC);
	if (nfd < 0)
		return -errno;
	r = setns(nfd, CLONE_NEWNET) < 0 ? -errno : 0;
	close(nfd);
	if (r < 0)
		return r;
	h->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (h->lfd < 0)
		return -errno;
	a.sin_addr.s_addr = htonl(INADDR_ANY);
	a.sin_port = htons(h->cfg->port);
	setsockopt(h->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* the receiving ends too (accepted sockets inherit it): both ends alike */
	if ((h->cfg->congestion && set_congestion(h->lfd, h->cfg->congestion) < 0) ||
	    bind(h->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(h->lfd, 4096) < 0)
		return -errno;
	h->buf = calloc(1, IO_BYTES);
	h->base = event_base_new();
	if (!h->buf || !h->base)
		return -ENOMEM;
	h->ctl_ev = event_new(h->base, h->ctl, EV_READ | EV_PERSIST, ctl_cb, h);
	h->listen_ev = event_new(h->base, h->lfd, EV_READ | EV_PERSIST, listen_cb, h);
	if (!h->ctl_ev || !h->listen_ev || event_add(h->ctl_ev, NULL) < 0 ||
	    event_add(h->listen_ev, NULL) < 0)
		return -ENOMEM;
	return 0;
}

int lrun_host_main(const struct lrun_host_cfg *cfg, int fd)
{
	struct host h = {.cfg = cfg, .ctl = fd, .lfd = -1};
	struct lrun_msg m = {.type = LRUN_MSG_READY};
	int r;

	r = host_setup(&h);
	m.status = r;
	if (send(fd, &m, sizeof(m), MSG_NOSIGNAL) != (ssize_t)sizeof(m))
		r = r < 0 ? r : -EPIPE;
	if (r == 0)
		event_base_dispatch(h.base);
	/* the process exits next: its flows' sockets close with it */
	if (h.ctl_ev)
		event_free(h.ctl_ev);
	if (h.listen_ev)
		event_free(h.listen_ev);
	if (h.base)
		event_base_free(h.base);
	if (h.lfd >= 0)
		close(h.lfd);
	free(h.buf);
	return r < 0 ? 1 : h.status;
}
