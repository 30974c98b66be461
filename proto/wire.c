/* SPDX-License-Identifier: BSD-3-Clause */
/* Framing of loom.proto envelopes; see wire.h. */
#include "proto/wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *wire_type_name(Loom__Envelope__BodyCase c)
{
	switch (c) {
	case LOOM__ENVELOPE__BODY__NOT_SET:
		return "unset";
	case LOOM__ENVELOPE__BODY_HELLO:
		return "hello";
	case LOOM__ENVELOPE__BODY_HELLO_REPLY:
		return "hello_reply";
	case LOOM__ENVELOPE__BODY_REPLY:
		return "reply";
	case LOOM__ENVELOPE__BODY_REGISTER_JOB:
		return "register_job";
	case LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS:
		return "announce_flows";
	case LOOM__ENVELOPE__BODY_COFLOW_DONE:
		return "coflow_done";
	case LOOM__ENVELOPE__BODY_JOB_DONE:
		return "job_done";
	case LOOM__ENVELOPE__BODY_UNREGISTER:
		return "unregister";
	case LOOM__ENVELOPE__BODY_TABLE:
		return "table";
	case LOOM__ENVELOPE__BODY_TABLE_ACK:
		return "table_ack";
	case LOOM__ENVELOPE__BODY_RESYNC:
		return "resync";
	case LOOM__ENVELOPE__BODY_FLOW_STATS:
		return "flow_stats";
	case LOOM__ENVELOPE__BODY_HEARTBEAT:
		return "heartbeat";
	default:
		return "unknown";
	}
}

int wire_hdr_parse(const uint8_t hdr[WIRE_HDR_BYTES], uint32_t max_frame, uint32_t *ret_len)
{
	uint32_t n = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 |
		     (uint32_t)hdr[3];

	if (n == 0 || n > max_frame)
		return -EMSGSIZE;
	*ret_len = n;
	return 0;
}

int wire_encode(const Loom__Envelope *env, uint32_t max_frame, uint8_t **ret_buf, size_t *ret_len)
{
	size_t n = loom__envelope__get_packed_size(env);
	uint8_t *buf;

	/* An envelope with nothing set packs to 0 bytes, which no frame may carry. */
	if (n == 0 || n > max_frame)
		return -EMSGSIZE;
	buf = malloc(n + WIRE_HDR_BYTES);
	if (!buf)
		return -ENOMEM;
	buf[0] = (uint8_t)(n >> 24);
	buf[1] = (uint8_t)(n >> 16);
	buf[2] = (uint8_t)(n >> 8);
	buf[3] = (uint8_t)n;
	loom__envelope__pack(env, buf + WIRE_HDR_BYTES);
	*ret_buf = buf;
	*ret_len = n + WIRE_HDR_BYTES;
	return 0;
}

Loom__Envelope *wire_decode(const uint8_t *body, size_t len)
{
	Loom__Envelope *env = loom__envelope__unpack(NULL, len, body);

	if (!env)
		errno = EBADMSG;
	return env;
}

void wire_free(Loom__Envelope *env)
{
	if (env)
		loom__envelope__free_unpacked(env, NULL);
}

/* Private copy of loom_clock_mono_ns() (in ms): proto/ may not use common/ (layering). */
static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for fd to be ready for events; 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, int64_t deadline_ms)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		int left = -1, r;

		if (deadline_ms >= 0) {
			int64_t d = deadline_ms - mono_ms();

			if (d <= 0)
				return -ETIMEDOUT;
			left = d > 1000000 ? 1000000 : (int)d;
		}
		r = poll(&p, 1, left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static int write_all_deadline(int fd, const uint8_t *p, size_t len, int64_t deadline_ms)
{
	while (len) {
		/* send() with MSG_NOSIGNAL: a closed peer is -EPIPE, never SIGPIPE */
		ssize_t w = send(fd, p, len, MSG_NOSIGNAL);

		if (w < 0 && errno == ENOTSOCK)
			w = write(fd, p, len);

		if (w > 0) {
			p += w;
			len -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int r = wait_fd(fd, POLLOUT, deadline_ms);

			if (r < 0)
				return r;
			continue;
		}
		return w < 0 ? -errno : -EPIPE;
	}
	return 0;
}

static int read_all_deadline(int fd, uint8_t *p, size_t len, int64_t deadline_ms)
{
	while (len) {
		int r = wait_fd(fd, POLLIN, deadline_ms);
		ssize_t n;

		if (r < 0)
			return r;
		n = read(fd, p, len);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return -EPIPE;
		if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
			continue;
		return -errno;
	}
	return 0;
}

static int64_t deadline_of(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : mono_ms() + timeout_ms;
}

int wire_write_all(int fd, const void *buf, size_t len, int timeout_ms)
{
	return write_all_deadline(fd, buf, len, deadline_of(timeout_ms));
}

int wire_read_all(int fd, void *buf, size_t len, int timeout_ms)
{
	return read_all_deadline(fd, buf, len, deadline_of(timeout_ms));
}

int wire_send(int fd, const Loom__Envelope *env, uint32_t max_frame, int timeout_ms)
{
	uint8_t *buf;
	size_t len;
	int r = wire_encode(env, max_frame, &buf, &len);

	if (r < 0)
		return r;
	r = write_all_deadline(fd, buf, len, deadline_of(timeout_ms));
	free(buf);
	return r;
}

int wire_recv(int fd, uint32_t max_frame, int timeout_ms, Loom__Envelope **ret_env)
{
	int64_t deadline = deadline_of(timeout_ms);
	uint8_t hdr[WIRE_HDR_BYTES];
	Loom__Envelope *env;
	uint8_t *body;
	uint32_t n;
	int r;

	r = read_all_deadline(fd, hdr, sizeof(hdr), deadline);
	if (r < 0)
		return r;
	r = wire_hdr_parse(hdr, max_frame, &n);
	if (r < 0)
		return r;
	body = malloc(n);
	if (!body)
		return -ENOMEM;
	r = read_all_deadline(fd, body, n, deadline);
	if (r < 0) {
		free(body);
		return r;
	}
	env = wire_decode(body, n);
	free(body);
	if (!env)
		return -EBADMSG;
	*ret_env = env;
	return 0;
}

int wire_tuple_from_pb(const Loom__FiveTuple *pb, struct wire_tuple *ret)
{
	struct wire_tuple t;

	if (!pb)
		return -EINVAL;
	memset(&t, 0, sizeof(t));
	if (pb->src_addr.len != pb->dst_addr.len ||
	    (pb->src_addr.len != 4 && pb->src_addr.len != 16))
		return -EINVAL;
	if (pb->src_port > 65535 || pb->dst_port > 65535 || pb->protocol > 255)
		return -EINVAL;
	t.family = pb->src_addr.len == 4 ? 4 : 6;
	memcpy(t.src, pb->src_addr.data, pb->src_addr.len);
	memcpy(t.dst, pb->dst_addr.data, pb->dst_addr.len);
	t.src_port = (uint16_t)pb->src_port;
	t.dst_port = (uint16_t)pb->dst_port;
	t.protocol = (uint8_t)pb->protocol;
	*ret = t;
	return 0;
}

void wire_tuple_to_pb(const struct wire_tuple *t, Loom__FiveTuple *pb)
{
	size_t alen = t->family == 4 ? 4 : 16;

	loom__five_tuple__init(pb);
	pb->src_addr.data = (uint8_t *)t->src;
	pb->src_addr.len = alen;
	pb->dst_addr.data = (uint8_t *)t->dst;
	pb->dst_addr.len = alen;
	pb->src_port = t->src_port;
	pb->dst_port = t->dst_port;
	pb->protocol = t->protocol;
}

const char *wire_tuple_str(const struct wire_tuple *t, char *buf, size_t size)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
	int af = t->family == 4 ? AF_INET : AF_INET6;
	const char *pname = t->protocol == 6 ? "tcp" : t->protocol == 17 ? "udp" : "ip";

	if (!inet_ntop(af, t->src, s, sizeof(s)))
		snprintf(s, sizeof(s), "?");
	if (!inet_ntop(af, t->dst, d, sizeof(d)))
		snprintf(d, sizeof(d), "?");
	if (af == AF_INET6)
		snprintf(buf, size, "%s [%s]:%u->[%s]:%u", pname, s, t->src_port, d, t->dst_port);
	else
		snprintf(buf, size, "%s %s:%u->%s:%u", pname, s, t->src_port, d, t->dst_port);
	return buf;
}

uint64_t wire_tuple_hash(const struct wire_tuple *t)
{
	/*
	 * FNV-1a over the fields, then a final avalanche: a private copy of
	 * loom_hash_u64() (common/hash.h), since proto/ includes nothing of ours.
	 */
	uint64_t h = 1469598103934665603ULL;
	const uint8_t *parts[2] = {t->src, t->dst};

	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 16; i++)
			h = (h ^ parts[k][i]) * 1099511628211ULL;
	h ^= (uint64_t)t->src_port << 32 | (uint64_t)t->dst_port << 16 |
	     (uint64_t)t->protocol << 8 | t->family;
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return h;
}

static const struct {
	Loom__ErrorCode code;
	int neg_errno;
	const char *name;
} error_map[] = {
	{LOOM__ERROR_CODE__OK, 0, "ok"},
	{LOOM__ERROR_CODE__BAD_REQUEST, -EINVAL, "bad_request"},
	{LOOM__ERROR_CODE__BAD_VERSION, -EPROTONOSUPPORT, "bad_version"},
	{LOOM__ERROR_CODE__UNKNOWN_TYPE, -EBADMSG, "unknown_type"},
	{LOOM__ERROR_CODE__EXISTS, -EEXIST, "exists"},
	{LOOM__ERROR_CODE__NOT_FOUND, -ENOENT, "not_found"},
	{LOOM__ERROR_CODE__CYCLE, -ELOOP, "cycle"},
	{LOOM__ERROR_CODE__FINISHED, -EALREADY, "finished"},
	{LOOM__ERROR_CODE__WRONG_ROLE, -EPERM, "wrong_role"},
	{LOOM__ERROR_CODE__NOT_READY, -ENOTCONN, "not_ready"},
	{LOOM__ERROR_CODE__LIMIT, -ENOSPC, "limit"},
	{LOOM__ERROR_CODE__INTERNAL, -EIO, "internal"},
	{LOOM__ERROR_CODE__UNAVAILABLE, -ESHUTDOWN, "unavailable"},
	{LOOM__ERROR_CODE__DENIED, -EACCES, "denied"},
};

int wire_error_to_errno(Loom__ErrorCode code)
{
	for (size_t i = 0; i < sizeof(error_map) / sizeof(error_map[0]); i++)
		if (error_map[i].code == code)
			return error_map[i].neg_errno;
	return -EPROTO;
}

Loom__ErrorCode wire_errno_to_error(int neg_errno)
{
	for (size_t i = 0; i < sizeof(error_map) / sizeof(error_map[0]); i++)
		if (error_map[i].neg_errno == neg_errno)
			return error_map[i].code;
	return LOOM__ERROR_CODE__INTERNAL;
}

const char *wire_error_name(Loom__ErrorCode code)
{
	for (size_t i = 0; i < sizeof(error_map) / sizeof(error_map[0]); i++)
		if (error_map[i].code == code)
			return error_map[i].name;
	return "unknown";
}
