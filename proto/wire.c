/* SPDX-License-Identifier: BSD-3-Clause */
/* loom.proto envelopes as frames, the wire's 5-tuple, error codes; see wire.h. */
#include "proto/wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
	wire_hdr_put(buf, (uint32_t)n);
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

int wire_send(int fd, const Loom__Envelope *env, uint32_t max_frame, int timeout_ms)
{
	uint8_t *buf;
	size_t len;
	int r = wire_encode(env, max_frame, &buf, &len);

	if (r < 0)
		return r;
	r = wire_write_all(fd, buf, len, timeout_ms);
	free(buf);
	return r;
}

int wire_recv(int fd, uint32_t max_frame, int timeout_ms, Loom__Envelope **ret_env)
{
	Loom__Envelope *env;
	uint8_t *body;
	uint32_t n;
	int r = wire_recv_frame(fd, max_frame, timeout_ms, &body, &n);

	if (r < 0)
		return r;
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
