/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent side: sessions, flow statistics, and each agent's priority
 * table. loomd remembers what it has sent every agent (flows -> coflow,
 * coflow -> class); after each pass it walks the decision once, stamps the
 * entries each agent should have, and sends an agent only what changed
 * (added or changed entries, removed ones), as one versioned delta. A new
 * agent, or one that asks (Resync), gets a full table.
 */
#include "controlplane/loomd/rpc_wire.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/grow.h"
#include "common/log.h"
#include "controlplane/loomd/journal.h"
#include "controlplane/loomd/metrics.h"
#include "controlplane/loomd/registry.h"
#include "controlplane/loomd/sched.h"
#include "controlplane/loomd/server.h"

/* Addresses one agent may announce for its host. */
#define LOOMD_MAX_HOST_ADDRS 64

/* Entries (flows + coflows + removals) per table frame at most (max_frame may cap it lower). */
#define LOOMD_TABLE_CHUNK 16384

/*
 * An agent's table (server.h): c->coflows maps a coflow id to its struct
 * loomd_agent_coflow, c->flows wire_tuple_hash() of a tuple to its struct
 * loomd_agent_flow (tuples may share a hash: aflow_match tells them apart).
 */
static bool aflow_match(uint64_t val, const void *key)
{
	return wire_tuple_eq(&((const struct loomd_agent_flow *)(uintptr_t)val)->tuple, key);
}

static struct loomd_agent_flow *aflow_find(const struct loomd_conn *c, const struct wire_tuple *t)
{
	size_t p = loom_hmap_find_match(&c->flows, wire_tuple_hash(t), aflow_match, t);

	return p == LOOM_HMAP_NPOS ? NULL :
				     (struct loomd_agent_flow *)(uintptr_t)c->flows.slot[p].val;
}

static struct loomd_agent_coflow *acoflow_find(const struct loomd_conn *c, uint64_t id)
{
	uint64_t v;

	return loom_hmap_get(&c->coflows, id, &v) ? (struct loomd_agent_coflow *)(uintptr_t)v :
						    NULL;
}

/* Frees every value of m, then m's array. */
static void map_free_all(struct loom_hmap *m)
{
	struct loom_hmap_iter it;
	uint64_t v;

	loom_hmap_iter_init(m, &it);
	while (loom_hmap_iter_next(m, &it, NULL, &v))
		free((void *)(uintptr_t)v);
	loom_hmap_done(m);
}

static void table_clear(struct loomd_conn *c)
{
	map_free_all(&c->flows);
	map_free_all(&c->coflows);
}

static enum loomd_enforcer enforcer_from_pb(Loom__Enforcer e)
{
	switch (e) {
	case LOOM__ENFORCER__ENFORCER_NULL:
		return LOOMD_ENFORCER_NULL;
	case LOOM__ENFORCER__ENFORCER_DPDK:
		return LOOMD_ENFORCER_DPDK;
	case LOOM__ENFORCER__ENFORCER_TC:
		return LOOMD_ENFORCER_TC;
	default:
		return LOOMD_ENFORCER_UNSPECIFIED;
	}
}

int loomd_agent_hello(struct loomd_conn *c, const Loom__Hello *h, struct loom_err *err)
{
	struct loomd_server *s = c->srv;
	struct loomd_host_addr addrs[LOOMD_MAX_HOST_ADDRS];
	struct loomd_conn *old;
	struct timeval tv;

	if (h->host_id >= s->topo->nhosts)
		return loom_err_set(err, EINVAL,
				    "host id %u is out of range (the fabric has %u hosts)",
				    h->host_id, s->topo->nhosts);
	if (h->classes && h->classes < loomd_sched_classes(s->sched))
		log_warn("agent %s (host %u) has %u classes, loomd uses %u: classes %u.. share "
			 "its lowest",
			 c->peer, h->host_id, h->classes, loomd_sched_classes(s->sched),
			 h->classes - 1);
	if (h->n_addresses > LOOMD_MAX_HOST_ADDRS)
		return loom_err_set(err, EINVAL, "%zu addresses; a host may announce at most %u",
				    h->n_addresses, LOOMD_MAX_HOST_ADDRS);
	for (size_t i = 0; i < h->n_addresses; i++) {
		const ProtobufCBinaryData *a = &h->addresses[i];

		if (a->len != 4 && a->len != 16)
			return loom_err_set(err, EINVAL,
					    "address %zu is %zu bytes (4 or 16 expected)", i,
					    a->len);
		addrs[i].len = (uint8_t)a->len;
		memcpy(addrs[i].bytes, a->data, a->len);
	}
	if (c->tls) {
		/* the certificate is the agent's identity: it must name the host and its addresses */
		int r = loomd_conn_tls_check_agent(c, h->host_id, addrs, h->n_addresses, err);

		if (r < 0)
			return r;
	}
	old = s->agent_of_host[h->host_id];
	if (old) {
		log_info("host %u: agent %s replaces %s", h->host_id, c->peer, old->peer);
		loomd_agent_gone(old);
		/* freed at the next pass or tick (we may be inside its callbacks' caller) */
		old->closing = true;
		old->overflow = true;
		if (old->bev)
			bufferevent_disable(old->bev, EV_READ);
	}
	/* the host's addresses are the ones this hello gives */
	loomd_registry_clear_host_addrs(s->reg, h->host_id);
	for (size_t i = 0; i < h->n_addresses; i++)
		loomd_registry_set_host_addr(s->reg, h->host_id, addrs[i].bytes,
					     addrs[i].len == 4 ? 4 : 6);
	c->role = LOOMD_ROLE_AGENT;
	c->host = h->host_id;
	c->link_bps = h->link_bps;
	c->classes = h->classes;
	c->enforcer = enforcer_from_pb(h->enforcer);
	c->need_full = true;
	s->agent_of_host[c->host] = c;
	s->nagents++;
	tv.tv_sec = (time_t)(s->cfg.agent_timeout_ns / 1000000000ULL);
	tv.tv_usec = (suseconds_t)(s->cfg.agent_timeout_ns % 1000000000ULL / 1000);
	if (s->cfg.agent_timeout_ns && c->bev)
		bufferevent_set_timeouts(c->bev, &tv, NULL);
	if (h->link_bps && h->link_bps != s->topo->port_bps[topo_port_up(s->topo, c->host)])
		log_info("host %u: agent reports %llu bit/s, the fabric models %llu", c->host,
			 (unsigned long long)h->link_bps,
			 (unsigned long long)s->topo->port_bps[topo_port_up(s->topo, c->host)]);
	log_info("host %u: agent '%s' connected from %s (%u addresses)", c->host, c->name, c->peer,
		 (unsigned)h->n_addresses);
	return 0;
}

void loomd_agent_gone(struct loomd_conn *c)
{
	struct loomd_server *s = c->srv;

	if (c->role != LOOMD_ROLE_AGENT)
		return;
	if (c->host < s->topo->nhosts && s->agent_of_host[c->host] == c) {
		s->agent_of_host[c->host] = NULL;
		log_info("host %u: agent '%s' disconnected", c->host, c->name);
	}
	s->nagents--;
	table_clear(c);
	c->role = LOOMD_ROLE_NONE;
}

/*
 * Remembers a flow the agent reported that no framework announced, for the
 * admin command "unknown": the LOOMD_UNKNOWN_MAX most recently active per agent.
 */
static void note_unknown(struct loomd_conn *c, const struct wire_tuple *t, uint64_t bytes)
{
	uint64_t now = loom_clock_mono_ns();
	uint32_t victim = 0;

	for (uint32_t i = 0; i < c->nunknown; i++) {
		struct loomd_unknown_flow *u = &c->unknown[i];

		if (!memcmp(&u->tuple, t, sizeof(*t))) {
			u->bytes += bytes;
			u->last_mono_ns = now;
			return;
		}
		if (u->last_mono_ns < c->unknown[victim].last_mono_ns)
			victim = i;
	}
	if (c->nunknown < LOOMD_UNKNOWN_MAX)
		victim = c->nunknown++;
	c->unknown[victim] = (struct loomd_unknown_flow){
		.tuple = *t, .bytes = bytes, .first_mono_ns = now, .last_mono_ns = now};
	c->unknown_flows++;
	c->srv->st.unknown_flows++;
}

static void handle_stats(struct loomd_conn *c, const Loom__FlowStats *fs)
{
	struct loomd_server *s = c->srv;
	uint64_t now = loomd_server_now_ns(s);
	bool done_any = false;

	s->st.stats_reports++;
	c->unknown_bytes += fs->unknown_bytes;
	for (size_t i = 0; i < fs->n_flows; i++) {
		const Loom__FlowStat *st = fs->flows[i];
		struct wire_tuple t;
		struct loomd_rflow *fl;
		bool was_done;

		if (!st->tuple || wire_tuple_from_pb(st->tuple, &t) < 0)
			continue;
		fl = loomd_registry_flow(s->reg, &t);
		if (!fl) {
			c->unknown_bytes += st->bytes_sent;
			note_unknown(c, &t, st->bytes_sent);
			continue;
		}
		was_done = fl->done;
		loomd_registry_flow_stat(s->reg, &t, st->bytes_sent, st->done, now);
		if (st->done && !was_done) {
			struct loom_err err;
			Loom__FiveTuple canon; /* ours, without whatever else the agent sent */
			size_t len;
			uint8_t buf[128];

			wire_tuple_to_pb(&t, &canon);
			len = loom__five_tuple__get_packed_size(&canon);
			done_any = true;
			if (s->journal && len <= sizeof(buf)) {
				loom__five_tuple__pack(&canon, buf);
				if (loomd_journal_append(s->journal, LOOMD_J_FLOW_DONE,
							 fl->coflow->job->id, fl->coflow->id, now,
							 buf, len, &err) < 0) {
					log_err("%s; stopping", loom_err_str(&err));
					s->exit_code = 1;
					loomd_server_stop(s);
					return;
				}
				loomd_server_need_commit(s);
			}
		}
	}
	s->stats_changed = true;
	if (done_any || s->watches)
		loomd_server_schedule_pass(s);
}

static void handle_ack(struct loomd_conn *c, uint64_t version)
{
	uint32_t i = (uint32_t)(version % LOOMD_PUSH_RING);

	if (version > c->acked_version)
		c->acked_version = version;
	if (c->push_version[i] == version && c->push_mono_ns[i]) {
		loomd_hist_observe(&c->srv->st.push_hist,
				   (double)(loom_clock_mono_ns() - c->push_mono_ns[i]) * 1e-9);
		c->push_mono_ns[i] = 0;
	}
	if (c->push_version[i] == version && c->push_pass[i]) {
		struct loomd_enforce *e = &c->srv->enforce[c->push_pass[i] % LOOMD_PUSH_RING];

		/* the pass's last affected agent: its changes are in force everywhere */
		if (e->pass == c->push_pass[i] && e->left && --e->left == 0)
			loomd_hist_observe(&c->srv->st.enforce_hist,
					   (double)(loom_clock_mono_ns() - e->since_mono_ns) *
						   1e-9);
		c->push_pass[i] = 0;
	}
}

void loomd_rpc_agent(struct loomd_conn *c, const Loom__Envelope *env)
{
	struct loom_err err = {{0}};

	switch (env->body_case) {
	case LOOM__ENVELOPE__BODY_FLOW_STATS:
		handle_stats(c, env->flow_stats);
		return;
	case LOOM__ENVELOPE__BODY_TABLE_ACK:
		handle_ack(c, env->table_ack->version);
		return;
	case LOOM__ENVELOPE__BODY_RESYNC:
		c->need_full = true;
		loomd_server_schedule_pass(c->srv);
		return;
	case LOOM__ENVELOPE__BODY_REGISTER_JOB:
	case LOOM__ENVELOPE__BODY_ANNOUNCE_FLOWS:
	case LOOM__ENVELOPE__BODY_COFLOW_DONE:
	case LOOM__ENVELOPE__BODY_JOB_DONE:
	case LOOM__ENVELOPE__BODY_UNREGISTER:
		loom_err_set(&err, EPERM,
			     "%s is a framework message; this connection said hello as "
			     "an agent",
			     wire_type_name(env->body_case));
		loomd_rpc_reply(c, env->seq, -EPERM, &err, 0);
		return;
	default:
		loom_err_set(&err, EINVAL, "%s is a message loomd sends, not one it takes",
			     wire_type_name(env->body_case));
		loomd_rpc_reply(c, env->seq, -EINVAL, &err, 0);
		return;
	}
}

/* ---- table deltas ------------------------------------------------------------------------------ */

/* What one push to one agent carries (pointers into its table). */
struct delta {
	struct loomd_agent_flow **flows;
	struct loomd_agent_coflow **coflows;
	struct wire_tuple *rm_flows;
	uint64_t *rm_coflows;
	size_t nflows, ncoflows, nrm_flows, nrm_coflows;
	size_t cap_flows, cap_coflows, cap_rm_flows, cap_rm_coflows;
};

/* A delta's arrays start at this many entries (loom_grow()) and double. */
#define DELTA_MIN_CAP 64

static void delta_free(struct delta *d)
{
	free(d->flows);
	free(d->coflows);
	free(d->rm_flows);
	free(d->rm_coflows);
	memset(d, 0, sizeof(*d));
}

static bool coflow_seen(struct loomd_conn *c, uint64_t id, uint32_t gen)
{
	struct loomd_agent_coflow *e = acoflow_find(c, id);

	return e && e->stamp == gen;
}

/* Makes c's coflow entry say (cls, rate) as of gen; notes it in d when it changed. */
static int want_coflow(struct loomd_conn *c, struct delta *d, uint64_t id, uint32_t cls,
		       uint64_t rate, uint32_t gen)
{
	struct loomd_agent_coflow *e = acoflow_find(c, id);

	if (c->classes && cls >= c->classes)
		cls = c->classes - 1;
	if (e && e->stamp == gen)
		return 0; /* already seen this pass (several flows) */
	c->stamped_coflows++;
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e || loom_hmap_add(&c->coflows, id, (uintptr_t)e) < 0) {
			free(e);
			return -ENOMEM;
		}
		e->coflow_id = id;
		e->cls = UINT32_MAX;
	}
	e->stamp = gen;
	if (e->cls != cls || e->rate_bps != rate || c->need_full) {
		e->cls = cls;
		e->rate_bps = rate;
		if (loom_grow((void **)&d->coflows, &d->cap_coflows, d->ncoflows + 1,
			      sizeof(*d->coflows), DELTA_MIN_CAP) < 0)
			return -ENOMEM;
		d->coflows[d->ncoflows++] = e;
	}
	return 0;
}

static int want_flow(struct loomd_conn *c, struct delta *d, const struct wire_tuple *t, uint64_t id,
		     uint32_t gen)
{
	struct loomd_agent_flow *e = aflow_find(c, t);

	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e || loom_hmap_add_dup(&c->flows, wire_tuple_hash(t), (uintptr_t)e) < 0) {
			free(e);
			return -ENOMEM;
		}
		e->tuple = *t;
		e->coflow_id = UINT64_MAX;
	}
	if (e->stamp != gen)
		c->stamped_flows++;
	e->stamp = gen;
	if (e->coflow_id != id || c->need_full) {
		e->coflow_id = id;
		if (loom_grow((void **)&d->flows, &d->cap_flows, d->nflows + 1, sizeof(*d->flows),
			      DELTA_MIN_CAP) < 0)
			return -ENOMEM;
		d->flows[d->nflows++] = e;
	}
	return 0;
}

/* Drops c's entries not stamped this pass, noting them in d. */
static int sweep(struct loomd_conn *c, struct delta *d, uint32_t gen)
{
	struct loom_hmap_iter it;
	uint64_t v;

	loom_hmap_iter_init(&c->flows, &it);
	while (loom_hmap_iter_next(&c->flows, &it, NULL, &v)) {
		struct loomd_agent_flow *e = (struct loomd_agent_flow *)(uintptr_t)v;

		if (e->stamp == gen)
			continue;
		if (loom_grow((void **)&d->rm_flows, &d->cap_rm_flows, d->nrm_flows + 1,
			      sizeof(*d->rm_flows), DELTA_MIN_CAP) < 0)
			return -ENOMEM;
		d->rm_flows[d->nrm_flows++] = e->tuple;
		loom_hmap_iter_remove(&c->flows, &it);
		free(e);
	}
	loom_hmap_iter_init(&c->coflows, &it);
	while (loom_hmap_iter_next(&c->coflows, &it, NULL, &v)) {
		struct loomd_agent_coflow *e = (struct loomd_agent_coflow *)(uintptr_t)v;

		if (e->stamp == gen)
			continue;
		if (loom_grow((void **)&d->rm_coflows, &d->cap_rm_coflows, d->nrm_coflows + 1,
			      sizeof(*d->rm_coflows), DELTA_MIN_CAP) < 0)
			return -ENOMEM;
		d->rm_coflows[d->nrm_coflows++] = e->coflow_id;
		loom_hmap_iter_remove(&c->coflows, &it);
		free(e);
	}
	return 0;
}

/*
 * Sends one table frame: entries [fo, fo+nf) of d's flows, [co, co+nc) of
 * its coflows, [ro, ro+nr) of removed flows, [qo, qo+nq) of removed coflows.
 * full marks the first frame of a full table. Returns 0, or -errno (nothing
 * sent, version unchanged).
 */
static int send_frame(struct loomd_conn *c, const struct delta *d, bool full, size_t fo, size_t nf,
		      size_t co, size_t nc, size_t ro, size_t nr, size_t qo, size_t nq)
{
	struct loomd_server *s = c->srv;
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__PriorityTable t = LOOM__PRIORITY_TABLE__INIT;
	Loom__FlowEntry *fe = calloc(nf + 1, sizeof(*fe));
	Loom__FlowEntry **fep = calloc(nf + 1, sizeof(*fep));
	Loom__FiveTuple *ft = calloc(nf + nr + 1, sizeof(*ft));
	Loom__FiveTuple **rmp = calloc(nr + 1, sizeof(*rmp));
	Loom__CoflowClass *cc = calloc(nc + 1, sizeof(*cc));
	Loom__CoflowClass **ccp = calloc(nc + 1, sizeof(*ccp));
	uint32_t slot;
	int r = -ENOMEM;

	if (!fe || !fep || !ft || !rmp || !cc || !ccp)
		goto out;
	for (size_t i = 0; i < nf; i++) {
		loom__flow_entry__init(&fe[i]);
		wire_tuple_to_pb(&d->flows[fo + i]->tuple, &ft[i]);
		fe[i].tuple = &ft[i];
		fe[i].coflow_id = d->flows[fo + i]->coflow_id;
		fep[i] = &fe[i];
	}
	for (size_t i = 0; i < nr; i++) {
		wire_tuple_to_pb(&d->rm_flows[ro + i], &ft[nf + i]);
		rmp[i] = &ft[nf + i];
	}
	for (size_t i = 0; i < nc; i++) {
		loom__coflow_class__init(&cc[i]);
		cc[i].coflow_id = d->coflows[co + i]->coflow_id;
		cc[i].class_ = d->coflows[co + i]->cls;
		cc[i].rate_bps = d->coflows[co + i]->rate_bps;
		ccp[i] = &cc[i];
	}
	t.full = full;
	t.base_version = full ? 0 : c->table_version;
	t.version = c->table_version + 1;
	t.n_flows = nf;
	t.flows = fep;
	t.n_classes = nc;
	t.classes = ccp;
	t.n_removed_flows = nr;
	t.removed_flows = rmp;
	t.n_removed_coflows = nq;
	t.removed_coflows = nq ? d->rm_coflows + qo : NULL; /* NULL + 0 is undefined */
	t.default_class = loomd_sched_classes(s->sched) - 1;
	if (c->classes && t.default_class >= c->classes)
		t.default_class = c->classes - 1;
	t.sent_ns = loomd_server_now_ns(s);
	env.body_case = LOOM__ENVELOPE__BODY_TABLE;
	env.table = &t;
	if (loom__envelope__get_packed_size(&env) > s->cfg.max_frame) {
		r = -EMSGSIZE;
		goto out;
	}
	loomd_rpc_send_now(c, &env);
	c->table_version = t.version;
	slot = (uint32_t)(t.version % LOOMD_PUSH_RING);
	c->push_version[slot] = t.version;
	c->push_mono_ns[slot] = loom_clock_mono_ns();
	c->push_pass[slot] = 0;
	if (s->enforce_cur) {
		/* the pass waits for c's ack of its last frame to c */
		if (c->enforce_pass == s->enforce_cur)
			c->push_pass[c->enforce_slot] = 0;
		else
			s->enforce[s->enforce_cur % LOOMD_PUSH_RING].left++;
		c->enforce_pass = s->enforce_cur;
		c->enforce_slot = slot;
		c->push_pass[slot] = s->enforce_cur;
	}
	s->st.tables_sent++;
	s->st.table_entries_sent += nf + nc + nr + nq;
	r = 0;
out:
	free(fe);
	free(fep);
	free(ft);
	free(rmp);
	free(cc);
	free(ccp);
	return r;
}

static size_t take(size_t *left, size_t avail)
{
	size_t n = avail < *left ? avail : *left;

	*left -= n;
	return n;
}

/*
 * Sends d to c as one table, or as several frames of at most LOOMD_TABLE_CHUNK
 * entries each (a full table's first frame is full, the rest deltas on it),
 * so that no table exceeds max_frame. On failure the agent is marked for a
 * full table and the error logged once per agent.
 */
static void send_table(struct loomd_conn *c, struct delta *d)
{
	size_t fo = 0, co = 0, ro = 0, qo = 0;
	/* an entry takes at most ~70 bytes on the wire (an IPv6 flow); keep a margin */
	size_t chunk = c->srv->cfg.max_frame / 128;
	bool full = c->need_full, first = true;

	if (chunk > LOOMD_TABLE_CHUNK)
		chunk = LOOMD_TABLE_CHUNK;
	if (chunk == 0)
		chunk = 1;
	if (full)
		d->nrm_flows = d->nrm_coflows = 0;
	while (first || fo < d->nflows || co < d->ncoflows || ro < d->nrm_flows ||
	       qo < d->nrm_coflows) {
		size_t left = chunk;
		size_t nq = take(&left, d->nrm_coflows - qo), nr = take(&left, d->nrm_flows - ro);
		size_t nc = take(&left, d->ncoflows - co), nf = take(&left, d->nflows - fo);
		int r = send_frame(c, d, full && first, fo, nf, co, nc, ro, nr, qo, nq);

		if (r == -EMSGSIZE && chunk > 1) {
			chunk /= 2; /* larger entries than assumed: smaller frames */
			continue;
		}
		if (r < 0) {
			if (!c->table_failed)
				log_err("host %u: cannot send its table: %s (raise max_frame?)",
					c->host, strerror(-r));
			c->table_failed = true;
			c->need_full = true;
			return;
		}
		fo += nf;
		co += nc;
		ro += nr;
		qo += nq;
		first = false;
	}
	c->table_failed = false;
	c->need_full = false;
}

void loomd_agents_push(struct loomd_server *s)
{
	const struct cp_model *m = loomd_sched_view(s->sched);
	const struct policy_decision *dec = loomd_sched_decision(s->sched);
	struct delta *deltas;
	uint32_t gen;

	if (!s->nagents)
		return;
	if (!m)
		dec = NULL; /* no jobs: every table empties */
	deltas = calloc(s->topo->nhosts, sizeof(*deltas));
	if (!deltas) {
		log_err("out of memory pushing tables");
		return;
	}
	if (++s->gen == 0)
		s->gen = 1;
	gen = s->gen;
	for (struct loomd_conn *a = s->conns; a; a = a->next)
		a->stamped_flows = a->stamped_coflows = 0;
	for (uint32_t i = 0; dec && i < dec->norder; i++) {
		uint32_t c = dec->order[i];
		const struct cp_coflow *cf = &m->coflows[c];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];
		uint64_t cid = cf->ext_id;

		for (uint32_t q = 0; q < cf->flows_left; q++) {
			uint32_t f = slot[q];
			const struct loomd_rflow *rf = loomd_registry_view_flow(s->reg, f);
			struct loomd_conn *a = s->agent_of_host[m->flows[f].src];
			uint64_t rate = 0;

			if (!a || !rf->has_tuple)
				continue;
			if (dec->has_rates && !coflow_seen(a, cid, gen)) {
				/* the coflow's rate on this host: the sum of its flows' there */
				for (uint32_t q2 = 0; q2 < cf->flows_left; q2++)
					if (m->flows[slot[q2]].src == m->flows[f].src)
						rate += (uint64_t)dec->rate_bps[slot[q2]];
			}
			if (want_coflow(a, &deltas[a->host], cid,
					loomd_sched_flow_class(s->sched, f), rate, gen) < 0 ||
			    want_flow(a, &deltas[a->host], &rf->tuple, cid, gen) < 0) {
				log_err("host %u: out of memory updating its table", a->host);
				a->need_full = true;
			}
		}
	}
	for (struct loomd_conn *a = s->conns; a; a = a->next) {
		struct delta *d;

		if (a->role != LOOMD_ROLE_AGENT || a->closing)
			continue;
		d = &deltas[a->host];
		/* entries not confirmed by this pass go: only look when there are some */
		if ((loom_hmap_count(&a->flows) > a->stamped_flows ||
		     loom_hmap_count(&a->coflows) > a->stamped_coflows) &&
		    sweep(a, d, gen) < 0)
			a->need_full = true;
		if (a->need_full || d->nflows || d->ncoflows || d->nrm_flows || d->nrm_coflows) {
			if (a->need_full) {
				/* a full table lists everything the agent should have */
				d->nflows = d->ncoflows = 0;
				struct loom_hmap_iter it;
				uint64_t v;

				loom_hmap_iter_init(&a->flows, &it);
				while (loom_hmap_iter_next(&a->flows, &it, NULL, &v))
					if (loom_grow((void **)&d->flows, &d->cap_flows,
						      d->nflows + 1, sizeof(*d->flows),
						      DELTA_MIN_CAP) == 0)
						d->flows[d->nflows++] =
							(struct loomd_agent_flow *)(uintptr_t)v;
				loom_hmap_iter_init(&a->coflows, &it);
				while (loom_hmap_iter_next(&a->coflows, &it, NULL, &v))
					if (loom_grow((void **)&d->coflows, &d->cap_coflows,
						      d->ncoflows + 1, sizeof(*d->coflows),
						      DELTA_MIN_CAP) == 0)
						d->coflows[d->ncoflows++] =
							(struct loomd_agent_coflow *)(uintptr_t)v;
			}
			send_table(a, d);
		}
	}
	for (uint32_t h = 0; h < s->topo->nhosts; h++)
		delta_free(&deltas[h]);
	free(deltas);
}
