/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libloom's edge of the wire (rpc_client.h): the caller's structs (loom.h)
 * become protobuf-c messages here, and loomd's answers ours. protobuf-c
 * stops here.
 */
#include "controlplane/client/rpc_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

/* Arrays a request owns (RegisterJob: seven; AnnounceFlows: four). */
#define MSG_MAX_ARRAYS 7

struct loom_client_msg {
	Loom__Envelope env;
	union {
		Loom__Hello hello;
		Loom__RegisterJob register_job;
		Loom__AnnounceFlows announce_flows;
		Loom__CoflowDone coflow_done;
		Loom__JobDone job_done;
		Loom__Unregister unregister;
	} body;
	void *arrays[MSG_MAX_ARRAYS];
};

static struct loom_client_msg *msg_new(Loom__Envelope__BodyCase body)
{
	struct loom_client_msg *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	loom__envelope__init(&m->env);
	m->env.body_case = body;
	return m;
}

/* calloc() of n (at least 1) elements, owned by m; NULL when out of memory. */
static void *msg_array(struct loom_client_msg *m, size_t n, size_t size)
{
	for (int i = 0; i < MSG_MAX_ARRAYS; i++)
		if (!m->arrays[i])
			return m->arrays[i] = calloc(n ? n : 1, size);
	return NULL;
}

struct loom_client_msg *loom_client_rpc_free(struct loom_client_msg *m)
{
	if (!m)
		return NULL;
	for (int i = 0; i < MSG_MAX_ARRAYS; i++)
		free(m->arrays[i]);
	free(m);
	return NULL;
}

int loom_client_rpc_hello_new(const char *name, const char *token, struct loom_client_msg **ret)
{
	struct loom_client_msg *m = msg_new(LOOM__ENVELOPE__BODY_HELLO);
	Loom__Hello *h;

	if (!m)
		return -ENOMEM;
	h = &m->body.hello;
	loom__hello__init(h);
	h->version_min = WIRE_VERSION_MIN;
	h->version_max = WIRE_VERSION_MAX;
	h->role = LOOM__ROLE__FRAMEWORK;
	h->name = (char *)name;
	if (token)
		h->token = (char *)token;
	m->env.hello = h;
	*ret = m;
	return 0;
}

/* Fills pb (and tpb, the tuple's storage) from f; addresses are borrowed from f. */
static void flow_to_pb(const struct loom_client_flow *f, Loom__FlowSpec *pb, Loom__FiveTuple *tpb)
{
	loom__flow_spec__init(pb);
	pb->src_host = f->src_host;
	pb->dst_host = f->dst_host;
	pb->bytes = f->bytes;
	pb->by_address = f->by_address;
	if (f->tuple.family) {
		size_t alen = f->tuple.family == 4 ? 4 : 16;

		loom__five_tuple__init(tpb);
		tpb->src_addr.data = (uint8_t *)f->tuple.src;
		tpb->src_addr.len = alen;
		tpb->dst_addr.data = (uint8_t *)f->tuple.dst;
		tpb->dst_addr.len = alen;
		tpb->src_port = f->tuple.src_port;
		tpb->dst_port = f->tuple.dst_port;
		tpb->protocol = f->tuple.protocol;
		pb->tuple = tpb;
	}
}

int loom_client_rpc_register_new(const struct loom_client_job *job, bool extend,
				 struct loom_client_msg **ret)
{
	struct loom_client_msg *m = msg_new(LOOM__ENVELOPE__BODY_REGISTER_JOB);
	Loom__RegisterJob *rj;
	Loom__CoflowSpec *cfs, **cfp;
	Loom__FlowSpec *fs, **fsp;
	Loom__FiveTuple *ts;
	Loom__Edge *es, **esp;
	size_t n_flows = 0, k = 0;

	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < job->n_coflows; i++)
		n_flows += job->coflows[i].n_flows;
	cfs = msg_array(m, job->n_coflows, sizeof(*cfs));
	cfp = msg_array(m, job->n_coflows, sizeof(*cfp));
	fs = msg_array(m, n_flows, sizeof(*fs));
	fsp = msg_array(m, n_flows, sizeof(*fsp));
	ts = msg_array(m, n_flows, sizeof(*ts));
	es = msg_array(m, job->n_edges, sizeof(*es));
	esp = msg_array(m, job->n_edges, sizeof(*esp));
	if (!cfs || !cfp || !fs || !fsp || !ts || !es || !esp) {
		loom_client_rpc_free(m);
		return -ENOMEM;
	}
	for (size_t i = 0; i < job->n_coflows; i++) {
		const struct loom_client_coflow *cf = &job->coflows[i];

		loom__coflow_spec__init(&cfs[i]);
		cfs[i].id = cf->id;
		cfs[i].release_offset_ns = cf->release_offset_ns;
		cfs[i].expected_flows = cf->expected_flows;
		cfs[i].n_flows = cf->n_flows;
		cfs[i].flows = cf->n_flows ? &fsp[k] : NULL;
		for (size_t j = 0; j < cf->n_flows; j++, k++) {
			flow_to_pb(&cf->flows[j], &fs[k], &ts[k]);
			fsp[k] = &fs[k];
		}
		cfp[i] = &cfs[i];
	}
	for (size_t i = 0; i < job->n_edges; i++) {
		loom__edge__init(&es[i]);
		es[i].parent = job->edges[i].parent;
		es[i].child = job->edges[i].child;
		es[i].delay_ns = job->edges[i].delay_ns;
		esp[i] = &es[i];
	}
	rj = &m->body.register_job;
	loom__register_job__init(rj);
	rj->job_id = job->id;
	rj->weight = job->weight;
	rj->name = (char *)(job->name ? job->name : "");
	rj->n_coflows = job->n_coflows;
	rj->coflows = job->n_coflows ? cfp : NULL;
	rj->n_edges = job->n_edges;
	rj->edges = job->n_edges ? esp : NULL;
	rj->extend = extend;
	m->env.register_job = rj;
	*ret = m;
	return 0;
}

int loom_client_rpc_announce_new(const struct loom_client_announce *flows, size_t n,
				 struct loom_client_msg **ret)
{
	struct loom_client_msg *m = msg_new(LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS);
	Loom__AnnounceFlows *af;
	Loom__AnnounceFlow *a, **ap;
	Loom__FlowSpec *fs;
	Loom__FiveTuple *ts;

	if (!m)
		return -ENOMEM;
	a = msg_array(m, n, sizeof(*a));
	ap = msg_array(m, n, sizeof(*ap));
	fs = msg_array(m, n, sizeof(*fs));
	ts = msg_array(m, n, sizeof(*ts));
	if (!a || !ap || !fs || !ts) {
		loom_client_rpc_free(m);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		loom__announce_flow__init(&a[i]);
		a[i].coflow_id = flows[i].coflow_id;
		flow_to_pb(&flows[i].flow, &fs[i], &ts[i]);
		a[i].flow = &fs[i];
		ap[i] = &a[i];
	}
	af = &m->body.announce_flows;
	loom__announce_flows__init(af);
	af->n_flows = n;
	af->flows = ap;
	m->env.announce_flows = af;
	*ret = m;
	return 0;
}

int loom_client_rpc_coflow_done_new(uint64_t coflow_id, struct loom_client_msg **ret)
{
	struct loom_client_msg *m = msg_new(LOOM__ENVELOPE__BODY_COFLOW_DONE);

	if (!m)
		return -ENOMEM;
	loom__coflow_done__init(&m->body.coflow_done);
	m->body.coflow_done.coflow_id = coflow_id;
	m->env.coflow_done = &m->body.coflow_done;
	*ret = m;
	return 0;
}

int loom_client_rpc_job_done_new(uint64_t job_id, struct loom_client_msg **ret)
{
	struct loom_client_msg *m = msg_new(LOOM__ENVELOPE__BODY_JOB_DONE);

	if (!m)
		return -ENOMEM;
	loom__job_done__init(&m->body.job_done);
	m->body.job_done.job_id = job_id;
	m->env.job_done = &m->body.job_done;
	*ret = m;
	return 0;
}

int loom_client_rpc_unregister_new(uint64_t job_id, struct loom_client_msg **ret)
{
	struct loom_client_msg *m = msg_new(LOOM__ENVELOPE__BODY_UNREGISTER);

	if (!m)
		return -ENOMEM;
	loom__unregister__init(&m->body.unregister);
	m->body.unregister.job_id = job_id;
	m->env.unregister = &m->body.unregister;
	*ret = m;
	return 0;
}

int loom_client_rpc_frame(struct loom_client_msg *m, uint64_t seq, uint8_t **ret_frame,
			  size_t *ret_len)
{
	m->env.seq = seq;
	return wire_encode(&m->env, WIRE_MAX_FRAME_DEFAULT, ret_frame, ret_len);
}

size_t loom_client_rpc_size(const struct loom_client_msg *m)
{
	return loom__envelope__get_packed_size(&m->env);
}

/* Sets r's error fields from a wire Error (NULL or OK: accepted). */
static void error_from_pb(const Loom__Error *e, struct loom_client_reply *r)
{
	if (!e || e->code == LOOM__ERROR_CODE__OK)
		return;
	r->error = wire_error_to_errno(e->code);
	r->error_name = wire_error_name(e->code);
	snprintf(r->message, sizeof(r->message), "%s", e->message ? e->message : "");
}

int loom_client_rpc_decode(const uint8_t *body, size_t len, struct loom_client_reply *ret)
{
	Loom__Envelope *env = wire_decode(body, len);
	struct loom_client_reply r = {.error_name = wire_error_name(LOOM__ERROR_CODE__OK)};

	if (!env)
		return -EBADMSG;
	r.seq = env->seq;
	r.type = wire_type_name(env->body_case);
	switch (env->body_case) {
	case LOOM__ENVELOPE__BODY_HELLO_REPLY:
		r.kind = LOOM_CLIENT_REPLY_HELLO;
		error_from_pb(env->hello_reply->error, &r);
		r.version = env->hello_reply->version;
		break;
	case LOOM__ENVELOPE__BODY_REPLY:
		r.kind = LOOM_CLIENT_REPLY_REPLY;
		error_from_pb(env->reply->error, &r);
		r.accepted = env->reply->accepted;
		break;
	default:
		r.kind = LOOM_CLIENT_REPLY_OTHER;
		break;
	}
	wire_free(env);
	*ret = r;
	return 0;
}
