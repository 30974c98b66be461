/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The framework side of the protocol: wire structs become ours here and
 * nowhere else (STYLE 7). Each change is applied to the registry, then
 * journaled with the request's own bytes; replay at start-up goes through the
 * same functions with journal = false.
 */
#include "controlplane/loomd/rpc_wire.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controlplane/loomd/journal.h"
#include "controlplane/loomd/registry.h"
#include "controlplane/loomd/server.h"
#include "controlplane/loomd/tenants.h"

void loomd_rpc_reply(struct loomd_conn *c, uint64_t seq, int r, const struct loom_err *err,
		     uint32_t accepted)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Reply rep = LOOM__REPLY__INIT;
	Loom__Error e = LOOM__ERROR__INIT;

	env.seq = seq;
	env.body_case = LOOM__ENVELOPE__BODY_REPLY;
	env.reply = &rep;
	rep.accepted = accepted;
	if (r < 0) {
		e.code = wire_errno_to_error(r);
		e.message = (char *)(err && err->msg[0] ? err->msg : strerror(-r));
		rep.error = &e;
		c->srv->st.errors++;
	}
	loomd_rpc_send(c, &env);
}

/* A journal append failing means the disk is gone: stop rather than diverge. */
static int journal_append(struct loomd_server *s, enum loomd_journal_kind kind, uint64_t job_id,
			  uint64_t id, uint64_t now_ns, const void *body, size_t len,
			  struct loom_err *err)
{
	int r;

	if (!s->journal)
		return 0;
	r = loomd_journal_append(s->journal, kind, job_id, id, now_ns, body, len, err);
	if (r < 0) {
		log_err("%s; stopping (a restart replays the journal)", loom_err_str(err));
		s->exit_code = 1;
		loomd_server_stop(s);
		return r;
	}
	loomd_server_need_commit(s);
	return 0;
}

/*
 * Packs m for the journal and checks that the bytes read back: protobuf-c
 * keeps unknown fields it cannot always re-encode readably, and a record
 * that does not replay would lose an acknowledged change. Returns the bytes
 * (caller frees) in *ret_buf, or -EINVAL / -ENOMEM with err.
 */
static int pack_for_journal(const ProtobufCMessage *m, uint8_t **ret_buf, size_t *ret_len,
			    struct loom_err *err)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(len + 1);
	ProtobufCMessage *back;

	if (!buf)
		return loom_err_set(err, ENOMEM, "out of memory");
	protobuf_c_message_pack(m, buf);
	back = protobuf_c_message_unpack(m->descriptor, NULL, len, buf);
	if (!back) {
		free(buf);
		return loom_err_set(
			err, EINVAL,
			"%s carries unknown fields that cannot be stored (is the client "
			"speaking another protocol?)",
			m->descriptor->short_name);
	}
	protobuf_c_message_free_unpacked(back, NULL);
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

/*
 * Converts a flow from the wire. A flow placed by address gets its hosts
 * here, written back into pb too, so that the journal keeps hosts rather
 * than addresses (which only agents connected at the time could resolve).
 */
static int flow_from_pb(struct loomd_server *s, Loom__FlowSpec *pb, struct loomd_flow_spec *ret,
			const char *what, struct loom_err *err)
{
	memset(ret, 0, sizeof(*ret));
	if (!pb)
		return loom_err_set(err, EINVAL, "%s: no flow", what);
	if (pb->tuple) {
		if (wire_tuple_from_pb(pb->tuple, &ret->tuple) < 0)
			return loom_err_set(err, EINVAL,
					    "%s: malformed 5-tuple (addresses must both be 4 or 16 "
					    "bytes, ports <= 65535, protocol <= 255)",
					    what);
		ret->has_tuple = true;
	}
	if (pb->by_address) {
		char buf[128];

		if (!ret->has_tuple)
			return loom_err_set(err, EINVAL, "%s: by_address needs a 5-tuple", what);
		if (loomd_registry_hosts_of(s->reg, &ret->tuple, &pb->src_host, &pb->dst_host) < 0)
			return loom_err_set(
				err, ENOENT,
				"%s: no host owns the addresses of %s (no agent announced "
				"them; give src_host/dst_host instead)",
				what, wire_tuple_str(&ret->tuple, buf, sizeof(buf)));
		pb->by_address = false;
	}
	ret->src = pb->src_host;
	ret->dst = pb->dst_host;
	ret->bytes = pb->bytes;
	return 0;
}

int loomd_rpc_register_job(struct loomd_server *s, Loom__RegisterJob *m, uint64_t now_ns,
			   bool journal, struct loom_err *err)
{
	struct loomd_job_spec spec = {0};
	struct loomd_flow_spec *flows = NULL;
	size_t nflows = 0, k = 0, jlen = 0;
	uint8_t *jbuf = NULL;
	uint32_t tenant;
	int r;

	/* live: the connection's tenant (set by loomd_rpc_framework); replay: the journal's */
	r = loomd_server_tenant(s, m->tenant, &tenant, err);
	if (r < 0)
		return r;
	spec.id = m->job_id;
	spec.tenant = tenant;
	spec.weight = m->weight == 0 ? 1.0 : m->weight;
	snprintf(spec.name, sizeof(spec.name), "%s", m->name ? m->name : "");
	if (m->n_coflows > s->cfg.max_coflows || m->n_edges > 16u * s->cfg.max_coflows)
		return loom_err_set(err, ENOSPC,
				    "job %llu: %zu coflows, %zu edges: over the limits",
				    (unsigned long long)m->job_id, m->n_coflows, m->n_edges);
	for (size_t i = 0; i < m->n_coflows; i++)
		nflows += m->coflows[i]->n_flows;
	if (nflows > s->cfg.max_flows)
		return loom_err_set(err, ENOSPC, "job %llu: %zu flows: over max_flows",
				    (unsigned long long)m->job_id, nflows);
	spec.ncoflows = (uint32_t)m->n_coflows;
	spec.nedges = (uint32_t)m->n_edges;
	spec.coflows = calloc(m->n_coflows + 1, sizeof(*spec.coflows));
	spec.edges = calloc(m->n_edges + 1, sizeof(*spec.edges));
	flows = calloc(nflows + 1, sizeof(*flows));
	if (!spec.coflows || !spec.edges || !flows) {
		r = loom_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < m->n_coflows; i++) {
		const Loom__CoflowSpec *c = m->coflows[i];
		struct loomd_coflow_spec *cs = &spec.coflows[i];

		cs->id = c->id;
		cs->release_offset_ns = c->release_offset_ns;
		cs->expected_flows = c->expected_flows;
		cs->nflows = (uint32_t)c->n_flows;
		cs->flows = &flows[k];
		for (size_t f = 0; f < c->n_flows; f++, k++) {
			char what[96];

			snprintf(what, sizeof(what), "job %llu coflow %llu flow %zu",
				 (unsigned long long)m->job_id, (unsigned long long)c->id, f);
			r = flow_from_pb(s, c->flows[f], &flows[k], what, err);
			if (r < 0)
				goto out;
		}
	}
	for (size_t e = 0; e < m->n_edges; e++) {
		spec.edges[e].parent = m->edges[e]->parent;
		spec.edges[e].child = m->edges[e]->child;
		spec.edges[e].delay_ns = m->edges[e]->delay_ns;
	}
	if (journal && s->journal) {
		r = pack_for_journal(&m->base, &jbuf, &jlen, err);
		if (r < 0)
			goto out;
	}
	r = m->extend ? loomd_registry_extend_job(s->reg, &spec, now_ns, err) :
			loomd_registry_add_job(s->reg, &spec, now_ns, err);
	if (r == 0 && jbuf)
		r = journal_append(s, LOOMD_J_REGISTER, m->job_id, m->job_id, now_ns, jbuf, jlen,
				   err);
out:
	free(jbuf);
	free(spec.coflows);
	free(spec.edges);
	free(flows);
	return r;
}

int loomd_rpc_announce(struct loomd_server *s, Loom__AnnounceFlow *a, uint64_t now_ns, bool journal,
		       struct loom_err *err)
{
	struct loomd_flow_spec f;
	struct loomd_rcoflow *c;
	uint8_t *jbuf = NULL;
	size_t jlen = 0;
	char what[64];
	int r;

	snprintf(what, sizeof(what), "flow of coflow %llu", (unsigned long long)a->coflow_id);
	r = flow_from_pb(s, a->flow, &f, what, err);
	if (r < 0)
		return r;
	if (journal && s->journal) {
		r = pack_for_journal(&a->base, &jbuf, &jlen, err);
		if (r < 0)
			return r;
	}
	r = loomd_registry_add_flow(s->reg, a->coflow_id, &f, now_ns, err);
	if (r == 0) {
		s->st.flows_announced++;
		c = loomd_registry_coflow(s->reg, a->coflow_id);
		if (jbuf)
			r = journal_append(s, LOOMD_J_FLOW, c->job->id, a->coflow_id, now_ns, jbuf,
					   jlen, err);
	}
	free(jbuf);
	return r;
}

int loomd_rpc_coflow_done(struct loomd_server *s, uint64_t coflow_id, uint64_t now_ns, bool journal,
			  struct loom_err *err)
{
	int r = loomd_registry_coflow_done(s->reg, coflow_id, now_ns, err);

	if (r == 0 && journal)
		r = journal_append(s, LOOMD_J_COFLOW_DONE,
				   loomd_registry_coflow(s->reg, coflow_id)->job->id, coflow_id,
				   now_ns, NULL, 0, err);
	return r;
}

int loomd_rpc_job_done(struct loomd_server *s, uint64_t job_id, uint64_t now_ns, bool journal,
		       struct loom_err *err)
{
	int r = loomd_registry_job_done(s->reg, job_id, now_ns, err);

	if (r == 0 && journal)
		r = journal_append(s, LOOMD_J_JOB_DONE, job_id, job_id, now_ns, NULL, 0, err);
	return r;
}

int loomd_rpc_unregister(struct loomd_server *s, uint64_t job_id, bool journal,
			 struct loom_err *err)
{
	int r = loomd_registry_unregister(s->reg, job_id, err);

	if (r == 0 && journal && s->journal) {
		r = loomd_journal_forget(s->journal, job_id, err);
		if (r < 0) {
			log_err("%s; stopping", loom_err_str(err));
			s->exit_code = 1;
			loomd_server_stop(s);
		}
		loomd_server_need_commit(s);
	}
	return r;
}

/* ---- tenants: who may change what, and their quotas ------------------------------------------ */

/* -EACCES when job j (may be NULL: no such job) is another tenant's than c's. */
static int check_owner(const struct loomd_conn *c, const struct loomd_rjob *j, const char *what,
		       uint64_t id, struct loom_err *err)
{
	if (!j || j->tenant == c->tenant)
		return 0;
	return loom_err_set(err, EACCES,
			    "%s %llu belongs to another tenant (this connection is tenant '%s')",
			    what, (unsigned long long)id, c->srv->tenants[c->tenant].name);
}

/*
 * A new job of c's tenant, or an extension of one of its jobs: not another
 * tenant's id, within its jobs (a new job only), coflows and flows quotas.
 */
static int check_register(const struct loomd_conn *c, const Loom__RegisterJob *m,
			  struct loom_err *err)
{
	const struct loomd_tenant *t = &c->srv->tenants[c->tenant];
	struct loomd_tenant_use u;
	uint64_t nflows = 0;
	int r;

	r = check_owner(c, loomd_registry_job(c->srv->reg, m->job_id), "job", m->job_id, err);
	if (r < 0)
		return r;
	loomd_registry_tenant_use(c->srv->reg, c->tenant, &u);
	for (size_t i = 0; i < m->n_coflows; i++)
		nflows += m->coflows[i]->n_flows;
	if (!m->extend && t->quota.jobs && u.jobs >= t->quota.jobs)
		return loom_err_set(err, ENOSPC,
				    "job %llu: tenant '%s' holds %u jobs, its quota 'jobs' "
				    "(unregister some, or wait for done ones to be forgotten)",
				    (unsigned long long)m->job_id, t->name, u.jobs);
	if (t->quota.coflows && u.coflows + m->n_coflows > t->quota.coflows)
		return loom_err_set(err, ENOSPC,
				    "job %llu: %zu more coflows would exceed tenant '%s''s quota "
				    "'coflows' (%u; it holds %u)",
				    (unsigned long long)m->job_id, m->n_coflows, t->name,
				    t->quota.coflows, u.coflows);
	if (t->quota.flows && u.flows + nflows > t->quota.flows)
		return loom_err_set(err, ENOSPC,
				    "job %llu: %llu more flows would exceed tenant '%s''s quota "
				    "'flows' (%u; it holds %llu)",
				    (unsigned long long)m->job_id, (unsigned long long)nflows,
				    t->name, t->quota.flows, (unsigned long long)u.flows);
	return 0;
}

/* One announced flow of c's tenant: its coflow's, within its flows quota and announce rate. */
static int check_announce(struct loomd_conn *c, const Loom__AnnounceFlow *a, uint64_t now_ns,
			  struct loom_err *err)
{
	struct loomd_server *s = c->srv;
	struct loomd_tenant *t = &s->tenants[c->tenant];
	const struct loomd_rcoflow *cf = loomd_registry_coflow(s->reg, a->coflow_id);
	struct loomd_tenant_use u;
	int r;

	if (cf && (r = check_owner(c, cf->job, "coflow", a->coflow_id, err)) < 0)
		return r;
	loomd_registry_tenant_use(s->reg, c->tenant, &u);
	if (t->quota.flows && u.flows >= t->quota.flows)
		return loom_err_set(err, ENOSPC,
				    "flow of coflow %llu: tenant '%s' holds %llu flows, its quota "
				    "'flows'",
				    (unsigned long long)a->coflow_id, t->name,
				    (unsigned long long)u.flows);
	if (!loomd_tenant_take_announce(t, now_ns))
		return loom_err_set(err, ENOSPC,
				    "flow of coflow %llu: tenant '%s' announces faster than its "
				    "quota 'announce_rate' (%u flows per second)",
				    (unsigned long long)a->coflow_id, t->name,
				    t->quota.announce_rate);
	return 0;
}

void loomd_rpc_framework(struct loomd_conn *c, const Loom__Envelope *env)
{
	struct loomd_server *s = c->srv;
	struct loom_err err = {{0}};
	uint64_t now = loomd_server_now_ns(s);
	uint32_t accepted = 0;
	int r;

	switch (env->body_case) {
	case LOOM__ENVELOPE__BODY_REGISTER_JOB: {
		Loom__RegisterJob *m = env->register_job;
		char *theirs = m->tenant;

		r = check_register(c, m, &err);
		if (r < 0)
			break;
		/* the job is the connection's tenant's, whatever the client wrote there */
		m->tenant = s->tenants[c->tenant].name;
		r = loomd_rpc_register_job(s, m, now, true, &err);
		m->tenant = theirs;
		break;
	}
	case LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS:
		r = 0;
		for (size_t i = 0; i < env->announce_flows->n_flows && r == 0; i++) {
			r = check_announce(c, env->announce_flows->flows[i], now, &err);
			if (r == 0)
				r = loomd_rpc_announce(s, env->announce_flows->flows[i], now, true,
						       &err);
			if (r == 0)
				accepted++;
		}
		if (r < 0 && env->announce_flows->n_flows > 1) {
			struct loom_err e2;

			loom_err_set(&e2, -r, "flow %u of %zu: %s", accepted,
				     env->announce_flows->n_flows, loom_err_str(&err));
			err = e2;
		}
		break;
	case LOOM__ENVELOPE__BODY_COFLOW_DONE: {
		const struct loomd_rcoflow *cf =
			loomd_registry_coflow(s->reg, env->coflow_done->coflow_id);

		r = cf ? check_owner(c, cf->job, "coflow", cf->id, &err) : 0;
		if (r == 0)
			r = loomd_rpc_coflow_done(s, env->coflow_done->coflow_id, now, true, &err);
		break;
	}
	case LOOM__ENVELOPE__BODY_JOB_DONE:
		r = check_owner(c, loomd_registry_job(s->reg, env->job_done->job_id), "job",
				env->job_done->job_id, &err);
		if (r == 0)
			r = loomd_rpc_job_done(s, env->job_done->job_id, now, true, &err);
		break;
	case LOOM__ENVELOPE__BODY_UNREGISTER:
		r = check_owner(c, loomd_registry_job(s->reg, env->unregister->job_id), "job",
				env->unregister->job_id, &err);
		if (r == 0)
			r = loomd_rpc_unregister(s, env->unregister->job_id, true, &err);
		break;
	case LOOM__ENVELOPE__BODY_TABLE_ACK:
	case LOOM__ENVELOPE__BODY_FLOW_STATS:
	case LOOM__ENVELOPE__BODY_RESYNC:
		r = loom_err_set(&err, EPERM,
				 "%s is an agent message; this connection said hello "
				 "as a framework",
				 wire_type_name(env->body_case));
		break;
	default:
		r = loom_err_set(&err, EINVAL, "%s is a message loomd sends, not one it takes",
				 wire_type_name(env->body_case));
		break;
	}
	if (r < 0)
		log_debug("%s (%s): %s", c->peer, c->name, loom_err_str(&err));
	loomd_rpc_reply(c, env->seq, r, &err, accepted);
	if (r == 0 || accepted) {
		if (!s->change_mono_ns)
			s->change_mono_ns = loom_clock_mono_ns();
		loomd_server_schedule_pass(s);
	}
}

/* ---- replay ------------------------------------------------------------------------------------ */

struct replay {
	struct loomd_server *s;
	uint64_t skipped;
	struct loom_err first;
};

static int replay_one(void *ctx, enum loomd_journal_kind kind, uint64_t job_id, uint64_t id,
		      uint64_t time_ns, const void *body, size_t len)
{
	struct replay *rp = ctx;
	struct loomd_server *s = rp->s;
	struct loom_err err = {{0}};
	int r = -EBADMSG;

	switch (kind) {
	case LOOMD_J_REGISTER: {
		Loom__RegisterJob *m = loom__register_job__unpack(NULL, len, body);

		if (m) {
			r = loomd_rpc_register_job(s, m, time_ns, false, &err);
			loom__register_job__free_unpacked(m, NULL);
		}
		break;
	}
	case LOOMD_J_FLOW: {
		Loom__AnnounceFlow *a = loom__announce_flow__unpack(NULL, len, body);

		if (a) {
			r = loomd_rpc_announce(s, a, time_ns, false, &err);
			loom__announce_flow__free_unpacked(a, NULL);
		}
		break;
	}
	case LOOMD_J_COFLOW_DONE:
		r = loomd_rpc_coflow_done(s, id, time_ns, false, &err);
		break;
	case LOOMD_J_JOB_DONE:
		r = loomd_rpc_job_done(s, id, time_ns, false, &err);
		break;
	case LOOMD_J_FLOW_DONE: {
		Loom__FiveTuple *t = loom__five_tuple__unpack(NULL, len, body);
		struct wire_tuple wt;

		if (t) {
			r = wire_tuple_from_pb(t, &wt);
			if (r == 0)
				r = loomd_registry_flow_stat(s->reg, &wt, 0, true, time_ns);
			loom__five_tuple__free_unpacked(t, NULL);
		}
		break;
	}
	}
	if (r < 0) {
		/* A record that no longer applies is skipped, never fatal: say so once. */
		if (!rp->skipped++)
			loom_err_set(&rp->first, -r, "job %llu record kind %d: %s",
				     (unsigned long long)job_id, (int)kind,
				     err.msg[0] ? err.msg : strerror(-r));
	}
	return 0;
}

int loomd_rpc_replay(struct loomd_server *s, struct loom_err *err)
{
	struct replay rp = {.s = s};
	uint64_t n = 0;
	int r = loomd_journal_replay(s->journal, replay_one, &rp, &n, err);

	if (r < 0)
		return r;
	if (rp.skipped)
		log_warn("journal %s: %llu of %llu records did not apply (first: %s)",
			 s->cfg.journal, (unsigned long long)rp.skipped, (unsigned long long)n,
			 loom_err_str(&rp.first));
	return 0;
}
