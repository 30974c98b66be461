/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for proto/wire: the input is a byte stream of frames, read as
 * loomd reads a connection. Each header is parsed (64 KiB maximum), each
 * body decoded; every 5-tuple a decoded envelope carries (flows of a job,
 * announced flows, flow statistics, table entries and removals) goes
 * through wire_tuple_from_pb(), wire_tuple_str() and back through
 * wire_tuple_to_pb(); the envelope is re-encoded, and the re-encoding must
 * decode and encode to the same bytes. A crash, a sanitizer report or an
 * abort() is a bug.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_FRAME (64u << 10)

static void check_tuple(const Loom__FiveTuple *pb)
{
	struct wire_tuple t, t2;
	Loom__FiveTuple back;
	char buf[128], tiny[4];
	int r;

	if (!pb)
		return;
	memset(&t, 0x5a, sizeof(t));
	t2 = t;
	r = wire_tuple_from_pb(pb, &t);
	if (r < 0) {
		/* refused: -EINVAL and nothing written */
		if (r != -EINVAL || memcmp(&t, &t2, sizeof(t)) != 0)
			abort();
		if ((pb->src_addr.len == 4 || pb->src_addr.len == 16) &&
		    pb->src_addr.len == pb->dst_addr.len && pb->src_port <= 65535 &&
		    pb->dst_port <= 65535 && pb->protocol <= 255)
			abort(); /* a valid tuple was refused */
		return;
	}
	if ((t.family != 4 && t.family != 6) || (t.family == 4 && pb->src_addr.len != 4))
		abort();
	if (strlen(wire_tuple_str(&t, buf, sizeof(buf))) >= sizeof(buf))
		abort();
	if (strlen(wire_tuple_str(&t, tiny, sizeof(tiny))) >= sizeof(tiny))
		abort();
	wire_tuple_to_pb(&t, &back);
	if (wire_tuple_from_pb(&back, &t2) < 0 || !wire_tuple_eq(&t, &t2) ||
	    wire_tuple_hash(&t) != wire_tuple_hash(&t2))
		abort();
}

static void check_flow_spec(const Loom__FlowSpec *f)
{
	if (f)
		check_tuple(f->tuple);
}

static void walk(const Loom__Envelope *env)
{
	const char *name = wire_type_name(env->body_case);

	if (!name || !*name)
		abort();
	switch (env->body_case) {
	case LOOM__ENVELOPE__BODY_HELLO:
		for (size_t i = 0; i < env->hello->n_addresses; i++)
			if (env->hello->addresses[i].len && !env->hello->addresses[i].data)
				abort();
		break;
	case LOOM__ENVELOPE__BODY_HELLO_REPLY:
	case LOOM__ENVELOPE__BODY_REPLY: {
		const Loom__Error *e = env->body_case == LOOM__ENVELOPE__BODY_REPLY ?
					       env->reply->error :
					       env->hello_reply->error;

		if (e) {
			int neg = wire_error_to_errno(e->code);

			if (neg > 0 || !wire_error_name(e->code))
				abort();
			/* a known code maps back to itself */
			if (neg != -EPROTO && wire_errno_to_error(neg) != e->code)
				abort();
		}
		break;
	}
	case LOOM__ENVELOPE__BODY_REGISTER_JOB:
		for (size_t c = 0; c < env->register_job->n_coflows; c++)
			for (size_t f = 0; f < env->register_job->coflows[c]->n_flows; f++)
				check_flow_spec(env->register_job->coflows[c]->flows[f]);
		break;
	case LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS:
		for (size_t i = 0; i < env->announce_flows->n_flows; i++)
			check_flow_spec(env->announce_flows->flows[i]->flow);
		break;
	case LOOM__ENVELOPE__BODY_TABLE:
		for (size_t i = 0; i < env->table->n_flows; i++)
			check_tuple(env->table->flows[i]->tuple);
		for (size_t i = 0; i < env->table->n_removed_flows; i++)
			check_tuple(env->table->removed_flows[i]);
		break;
	case LOOM__ENVELOPE__BODY_FLOW_STATS:
		for (size_t i = 0; i < env->flow_stats->n_flows; i++)
			check_tuple(env->flow_stats->flows[i]->tuple);
		break;
	default:
		break;
	}
}

/*
 * True when m or a message inside it kept an unknown field numbered 0.
 * protobuf-c takes field number 0 when its tag is written in more bytes
 * than needed (0x85 0x00), keeps it as an unknown field, packs it again as
 * the single byte 0x05, and then refuses those bytes: such an envelope does
 * not survive a re-encoding (nor, in loomd, a trip through the journal).
 */
static bool has_field0(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	for (unsigned i = 0; i < m->n_unknown_fields; i++)
		if (m->unknown_fields[i].tag == 0)
			return true;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *base = (const char *)m;

		if (f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset);
			ProtobufCMessage *const *v =
				*(ProtobufCMessage *const *const *)(base + f->offset);

			for (size_t k = 0; k < n; k++)
				if (v[k] && has_field0(v[k]))
					return true;
			continue;
		}
		if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
		    *(const uint32_t *)(base + f->quantifier_offset) != f->id)
			continue;
		if (*(ProtobufCMessage *const *)(base + f->offset) &&
		    has_field0(*(ProtobufCMessage *const *)(base + f->offset)))
			return true;
	}
	return false;
}

/* Re-encodes env; the result must decode, and encode again to the same bytes. */
static void check_reencode(const Loom__Envelope *env)
{
	uint8_t *buf = NULL, *buf2 = NULL;
	size_t len = 0, len2 = 0;
	Loom__Envelope *again;
	uint32_t n;
	int r;

	r = wire_encode(env, WIRE_MAX_FRAME_DEFAULT, &buf, &len);
	if (r == -EMSGSIZE && loom__envelope__get_packed_size(env) == 0)
		return; /* nothing set (seq 0, no body): not a frame */
	if (r < 0)
		abort();
	if (wire_hdr_parse(buf, WIRE_MAX_FRAME_DEFAULT, &n) < 0 || n != len - WIRE_HDR_BYTES)
		abort();
	again = wire_decode(buf + WIRE_HDR_BYTES, n);
	if (!again && has_field0(&env->base)) {
		free(buf);
		return; /* see has_field0() */
	}
	if (!again || again->seq != env->seq || again->body_case != env->body_case)
		abort();
	walk(again);
	if (wire_encode(again, WIRE_MAX_FRAME_DEFAULT, &buf2, &len2) < 0 || len2 != len ||
	    memcmp(buf, buf2, len) != 0)
		abort();
	/* a maximum one byte short refuses it, writing nothing */
	{
		uint8_t *none = NULL;
		size_t none_len = 0;

		if (wire_encode(again, n - 1, &none, &none_len) != -EMSGSIZE || none || none_len)
			abort();
	}
	wire_free(again);
	free(buf);
	free(buf2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;

	while (size - off >= WIRE_HDR_BYTES) {
		Loom__Envelope *env;
		uint32_t n = 0;

		if (wire_hdr_parse(data + off, FUZZ_MAX_FRAME, &n) < 0) {
			uint32_t raw = (uint32_t)data[off] << 24 | (uint32_t)data[off + 1] << 16 |
				       (uint32_t)data[off + 2] << 8 | data[off + 3];

			if (raw != 0 && raw <= FUZZ_MAX_FRAME)
				abort(); /* a length in range was refused */
			break;
		}
		if (n == 0 || n > FUZZ_MAX_FRAME)
			abort();
		off += WIRE_HDR_BYTES;
		if (size - off < n)
			break; /* a truncated frame: wait for more, as loomd does */
		errno = 0;
		env = wire_decode(data + off, n);
		off += n;
		if (!env) {
			if (errno != EBADMSG)
				abort();
			continue;
		}
		walk(env);
		check_reencode(env);
		wire_free(env);
	}
	return 0;
}
