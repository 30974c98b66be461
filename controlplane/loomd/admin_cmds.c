/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loomd's admin commands (common/admin.h; loomctl and docs/loomctl.md are
 * their users) and the /metrics text. Both read the loop thread's state and
 * run on the loop thread.
 */
#include "controlplane/loomd/admin_cmds.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/admin.h"
#include "common/clock.h"
#include "common/log.h"
#include "controlplane/loomd/metrics.h"
#include "controlplane/loomd/registry.h"
#include "controlplane/loomd/sched.h"
#include "controlplane/loomd/server.h"
#include "controlplane/loomd/tenants.h"
#include "controlplane/loomd/webui.h"

static const char *const state_names[] = {"waiting", "ready", "active", "done"};

/*
 * "uid 1000, pid 42": who runs the current admin command (SO_PEERCRED), for
 * the log; the web UI's caller when it runs one (s->actor).
 */
static const char *admin_peer(const struct loomd_server *s, char *buf, size_t size)
{
	uid_t uid;
	pid_t pid;

	if (s->actor)
		snprintf(buf, size, "%s", s->actor);
	else if (loom_admin_peer(s->admin, &uid, &pid) == 0)
		snprintf(buf, size, "uid %u, pid %ld", (unsigned)uid, (long)pid);
	else
		snprintf(buf, size, "uid unknown");
	return buf;
}

static const char *enforcer_name(enum loomd_enforcer e)
{
	switch (e) {
	case LOOMD_ENFORCER_NULL:
		return "null";
	case LOOMD_ENFORCER_DPDK:
		return "dpdk";
	case LOOMD_ENFORCER_TC:
		return "tc";
	default:
		return "unspecified";
	}
}

static uint64_t rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long long size = 0, rss = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &size, &rss) != 2)
		rss = 0;
	fclose(f);
	return rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

static double age_s(const struct loomd_server *s, uint64_t t_ns)
{
	uint64_t now = loomd_server_now_ns(s);

	return now > t_ns ? (double)(now - t_ns) * 1e-9 : 0;
}

static int cmd_stats(void *ctx, int argc, const char *const *argv, json_t **ret,
		     struct loom_err *err)
{
	struct loomd_server *s = ctx;
	struct loomd_registry_counts n;

	(void)argc;
	(void)argv;
	(void)err;
	loomd_registry_counts(s->reg, &n);
	*ret = json_pack(
		"{s:s, s:f, s:s, s:i, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, "
		"s:f, s:f, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b}",
		"version", "0.1.0", "uptime_s",
		(double)(loom_clock_mono_ns() - s->start_mono_ns) * 1e-9, "policy",
		loomd_sched_policy(s->sched), "classes", (int)loomd_sched_classes(s->sched),
		"tick_ms", (double)s->cfg.tick_ns * 1e-6, "jobs", (json_int_t)n.jobs, "jobs_done",
		(json_int_t)n.jobs_done, "coflows", (json_int_t)n.coflows, "coflows_active",
		(json_int_t)n.coflows_active, "flows", (json_int_t)n.flows, "flows_done",
		(json_int_t)n.flows_done, "agents", (json_int_t)s->nagents, "frameworks",
		(json_int_t)s->nframeworks, "decisions",
		(json_int_t)loomd_sched_decisions(s->sched), "decision_p50_us",
		loomd_hist_quantile(&s->st.decide_hist, 0.5) * 1e6, "decision_p99_us",
		loomd_hist_quantile(&s->st.decide_hist, 0.99) * 1e6, "push_p50_us",
		loomd_hist_quantile(&s->st.push_hist, 0.5) * 1e6, "push_p99_us",
		loomd_hist_quantile(&s->st.push_hist, 0.99) * 1e6, "journal",
		s->cfg.journal[0] ? s->cfg.journal : "", "rss_bytes", (json_int_t)rss_bytes(),
		"requests", (json_int_t)s->st.requests, "errors", (json_int_t)s->st.errors,
		"flows_announced", (json_int_t)s->st.flows_announced, "tables_sent",
		(json_int_t)s->st.tables_sent, "passes", (json_int_t)s->st.passes, "connections",
		(json_int_t)s->nconns, "virtual_clock", s->cfg.virtual_clock);
	return *ret ? 0 : -ENOMEM;
}

static json_t *job_json(const struct loomd_server *s, const struct loomd_rjob *j)
{
	uint64_t flows = 0;

	for (uint32_t c = 0; c < j->ncoflows; c++)
		flows += j->coflows[c].nflows;
	return json_pack("{s:I, s:s, s:s, s:f, s:s, s:i, s:i, s:I, s:I, s:f}", "id",
			 (json_int_t)j->id, "tenant", s->tenants[j->tenant].name, "name", j->name,
			 "weight", j->weight, "state",
			 j->done_ns != CP_TIME_NEVER ? "done" : "running", "coflows",
			 (int)j->ncoflows, "coflows_done", (int)j->coflows_done, "flows",
			 (json_int_t)flows, "bytes_sent", (json_int_t)j->sent_bytes, "age_s",
			 age_s(s, j->arrival_ns));
}

static int cmd_jobs(void *ctx, int argc, const char *const *argv, json_t **ret,
		    struct loom_err *err)
{
	struct loomd_server *s = ctx;
	struct loomd_rjob *const *jobs;
	uint32_t n;
	json_t *a = json_array();

	(void)argc;
	(void)argv;
	(void)err;
	jobs = loomd_registry_jobs(s->reg, &n);
	for (uint32_t i = 0; i < n; i++)
		json_array_append_new(a, job_json(s, jobs[i]));
	*ret = a;
	return 0;
}

/* The class of the coflow at rank in the last decision (its hosts' class), or -1 unranked. */
static int rank_class(const struct loomd_server *s, uint32_t rank)
{
	const struct policy_decision *d = loomd_sched_decision(s->sched);
	uint32_t k = loomd_sched_classes(s->sched), cls;

	if (!d || rank == CP_NONE || rank >= d->norder)
		return -1;
	cls = d->has_classes ? d->class_of[rank] : rank;
	return (int)(cls >= k ? k - 1 : cls);
}

static json_t *coflow_json(const struct loomd_server *s, const struct loomd_rcoflow *c)
{
	uint64_t expected = 0;
	bool known = true;
	uint32_t rank = c->view != CP_NONE ? loomd_sched_rank(s->sched, c->view) : CP_NONE;

	for (uint32_t f = 0; f < c->nflows; f++) {
		expected += c->flows[f]->bytes;
		known = known && c->flows[f]->bytes;
	}
	return json_pack("{s:I, s:I, s:s, s:i, s:i, s:I, s:I, s:I, s:i, s:b}", "id",
			 (json_int_t)c->id, "job", (json_int_t)c->job->id, "state",
			 state_names[loomd_registry_coflow_state(s->reg, c)], "flows",
			 (int)c->nflows, "flows_done", (int)c->flows_done, "bytes_sent",
			 (json_int_t)c->sent_bytes, "bytes_expected",
			 (json_int_t)(known ? expected : 0), "rank",
			 (json_int_t)(rank == CP_NONE ? -1 : (json_int_t)rank), "class",
			 rank_class(s, rank), "open", c->open);
}

static int cmd_coflows(void *ctx, int argc, const char *const *argv, json_t **ret,
		       struct loom_err *err)
{
	struct loomd_server *s = ctx;
	struct loomd_rjob *const *jobs;
	unsigned long long want = 0;
	uint32_t n;
	json_t *a;

	if (argc > 1)
		return loom_err_set(err, EINVAL, "usage: coflows [JOB]");
	if (argc == 1 && loom_parse_u64(argv[0], &want) < 0)
		return loom_err_set(err, EINVAL, "'%s' is not a job id", argv[0]);
	if (argc == 1 && !loomd_registry_job(s->reg, want))
		return loom_err_set(err, ENOENT, "no job %llu", want);
	a = json_array();
	jobs = loomd_registry_jobs(s->reg, &n);
	for (uint32_t i = 0; i < n; i++) {
		if (argc == 1 && jobs[i]->id != want)
			continue;
		for (uint32_t c = 0; c < jobs[i]->ncoflows; c++)
			json_array_append_new(a, coflow_json(s, &jobs[i]->coflows[c]));
	}
	*ret = a;
	return 0;
}

static int cmd_agents(void *ctx, int argc, const char *const *argv, json_t **ret,
		      struct loom_err *err)
{
	struct loomd_server *s = ctx;
	json_t *a = json_array();

	(void)argc;
	(void)argv;
	(void)err;
	for (uint32_t h = 0; h < s->topo->nhosts; h++) {
		const struct loomd_conn *c = s->agent_of_host[h];

		if (!c)
			continue;
		json_array_append_new(
			a, json_pack("{s:i, s:s, s:s, s:s, s:i, s:I, s:I, s:I, s:f, s:I, s:I}",
				     "host", (int)h, "name", c->name, "peer", c->peer, "enforcer",
				     enforcer_name(c->enforcer), "classes", (int)c->classes,
				     "table_version", (json_int_t)c->table_version, "acked_version",
				     (json_int_t)c->acked_version, "flows",
				     (json_int_t)loom_hmap_count(&c->flows), "connected_s",
				     (double)(loom_clock_mono_ns() - c->connected_ns) * 1e-9,
				     "unknown_bytes", (json_int_t)c->unknown_bytes, "unknown_flows",
				     (json_int_t)c->unknown_flows));
	}
	*ret = a;
	return 0;
}

/* Flows agents saw that no framework announced, most recent first per host. */
static int cmd_unknown(void *ctx, int argc, const char *const *argv, json_t **ret,
		       struct loom_err *err)
{
	struct loomd_server *s = ctx;
	unsigned long long want = 0;
	uint64_t now = loom_clock_mono_ns();
	json_t *a;

	if (argc > 1)
		return loom_err_set(err, EINVAL, "usage: unknown [HOST]");
	if (argc == 1 && (loom_parse_u64(argv[0], &want) < 0 || want >= s->topo->nhosts))
		return loom_err_set(err, EINVAL, "'%s' is not a host (0..%u)", argv[0],
				    s->topo->nhosts - 1);
	a = json_array();
	for (uint32_t h = 0; h < s->topo->nhosts; h++) {
		const struct loomd_conn *c = s->agent_of_host[h];
		uint32_t order[LOOMD_UNKNOWN_MAX];

		if (!c || (argc == 1 && h != want))
			continue;
		for (uint32_t i = 0; i < c->nunknown; i++) {
			uint32_t j = i;

			/* insertion sort, most recent first (at most LOOMD_UNKNOWN_MAX) */
			while (j > 0 &&
			       c->unknown[order[j - 1]].last_mono_ns < c->unknown[i].last_mono_ns) {
				order[j] = order[j - 1];
				j--;
			}
			order[j] = i;
		}
		for (uint32_t i = 0; i < c->nunknown; i++) {
			const struct loomd_unknown_flow *u = &c->unknown[order[i]];
			char t[128];

			json_array_append_new(
				a, json_pack("{s:i, s:s, s:I, s:f, s:f}", "host", (int)h, "tuple",
					     wire_tuple_str(&u->tuple, t, sizeof(t)), "bytes",
					     (json_int_t)u->bytes, "first_seen_s",
					     (double)(now - u->first_mono_ns) * 1e-9, "last_seen_s",
					     (double)(now - u->last_mono_ns) * 1e-9));
		}
	}
	*ret = a;
	return 0;
}

static int cmd_priorities(void *ctx, int argc, const char *const *argv, json_t **ret,
			  struct loom_err *err)
{
	struct loomd_server *s = ctx;
	const struct policy_decision *d = loomd_sched_decision(s->sched);
	const struct cp_model *m = loomd_sched_view(s->sched);
	unsigned long long host = 0;
	uint8_t *seen;
	json_t *a;

	if (argc > 1)
		return loom_err_set(err, EINVAL, "usage: priorities [HOST]");
	if (argc == 1 && (loom_parse_u64(argv[0], &host) < 0 || host >= s->topo->nhosts))
		return loom_err_set(err, EINVAL, "'%s' is not a host id (0..%u)", argv[0],
				    s->topo->nhosts - 1);
	a = json_array();
	seen = calloc(s->topo->nhosts, 1);
	for (uint32_t i = 0; d && m && seen && i < d->norder; i++) {
		const struct cp_coflow *cf = &m->coflows[d->order[i]];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];
		uint32_t nh = 0, cls = CP_NONE, gcls;

		memset(seen, 0, s->topo->nhosts);
		for (uint32_t q = 0; q < cf->flows_left; q++) {
			uint32_t h = m->flows[slot[q]].src;

			if (!seen[h]) {
				seen[h] = 1;
				nh++;
			}
			if (h == host)
				cls = loomd_sched_flow_class(s->sched, slot[q]);
		}
		if (argc == 1) {
			if (cls != CP_NONE)
				json_array_append_new(a, json_pack("{s:I, s:i, s:i}", "coflow",
								   (json_int_t)cf->ext_id, "class",
								   (int)cls, "rank", (int)i));
			continue;
		}
		gcls = d->has_classes ? d->class_of[i] : i;
		if (gcls >= loomd_sched_classes(s->sched))
			gcls = loomd_sched_classes(s->sched) - 1;
		json_array_append_new(a, json_pack("{s:i, s:I, s:I, s:i, s:i}", "rank", (int)i,
						   "coflow", (json_int_t)cf->ext_id, "job",
						   (json_int_t)m->jobs[cf->job].ext_id, "class",
						   (int)gcls, "hosts", (int)nh));
	}
	free(seen);
	if (argc == 1)
		*ret = json_pack("{s:i, s:o}", "host", (int)host, "classes", a);
	else
		*ret = a;
	return 0;
}

static int cmd_policy(void *ctx, int argc, const char *const *argv, json_t **ret,
		      struct loom_err *err)
{
	struct loomd_server *s = ctx;

	(void)argv;
	if (argc)
		return loom_err_set(err, EINVAL, "usage: policy");
	*ret = json_pack("{s:s}", "policy", loomd_sched_policy(s->sched));
	return 0;
}

static int cmd_set_policy(void *ctx, int argc, const char *const *argv, json_t **ret,
			  struct loom_err *err)
{
	struct loomd_server *s = ctx;
	char prev[POLICY_SPEC_MAX], who[64];
	int r;

	if (argc != 1)
		return loom_err_set(err, EINVAL, "usage: set-policy SPEC");
	snprintf(prev, sizeof(prev), "%s", loomd_sched_policy(s->sched));
	r = loomd_sched_set_policy(s->sched, argv[0], err);
	if (r < 0) {
		log_info("admin set-policy %s (%s): refused: %s", argv[0],
			 admin_peer(s, who, sizeof(who)), loom_err_str(err));
		return r;
	}
	log_info("policy: %s -> %s (admin set-policy, %s)", prev, argv[0],
		 admin_peer(s, who, sizeof(who)));
	loomd_server_schedule_pass(s);
	*ret = json_pack("{s:s, s:s}", "policy", argv[0], "previous", prev);
	return 0;
}

static int cmd_policies(void *ctx, int argc, const char *const *argv, json_t **ret,
			struct loom_err *err)
{
	const struct policy_class *const *cls;
	size_t n;
	json_t *a = json_array();

	(void)ctx;
	(void)argc;
	(void)argv;
	(void)err;
	cls = policy_class_list(&n);
	for (size_t i = 0; i < n; i++) {
		if (cls[i]->offline)
			continue; /* loomd refuses it */
		json_array_append_new(a, json_pack("{s:s, s:s, s:b}", "name", cls[i]->name,
						   "summary", cls[i]->summary, "clairvoyant",
						   cls[i]->clairvoyant));
	}
	*ret = a;
	return 0;
}

/* A job with its coflows (each with its flows) and its edges: the DAG (dump, job). */
static json_t *job_detail_json(const struct loomd_server *s, const struct loomd_rjob *j)
{
	json_t *jo = job_json(s, j), *cs = json_array(), *es = json_array();

	for (uint32_t c = 0; c < j->ncoflows; c++) {
		const struct loomd_rcoflow *rc = &j->coflows[c];
		json_t *co = coflow_json(s, rc), *fs = json_array();

		for (uint32_t f = 0; f < rc->nflows; f++) {
			const struct loomd_rflow *fl = rc->flows[f];
			char t[128] = "";

			if (fl->has_tuple)
				wire_tuple_str(&fl->tuple, t, sizeof(t));
			json_array_append_new(fs, json_pack("{s:i, s:i, s:I, s:I, s:b, s:s}", "src",
							    (int)fl->src, "dst", (int)fl->dst,
							    "bytes", (json_int_t)fl->bytes, "sent",
							    (json_int_t)fl->sent_bytes, "done",
							    fl->done, "tuple", t));
		}
		json_object_set_new(co, "flow_list", fs);
		json_array_append_new(cs, co);
	}
	for (uint32_t e = 0; e < j->nedges; e++)
		json_array_append_new(es, json_pack("{s:I, s:I, s:I}", "parent",
						    (json_int_t)j->edges[e].parent, "child",
						    (json_int_t)j->edges[e].child, "delay_ns",
						    (json_int_t)j->edges[e].delay_ns));
	json_object_set_new(jo, "coflow_list", cs);
	json_object_set_new(jo, "edges", es);
	return jo;
}

static int cmd_job(void *ctx, int argc, const char *const *argv, json_t **ret, struct loom_err *err)
{
	struct loomd_server *s = ctx;
	unsigned long long id;
	const struct loomd_rjob *j;

	if (argc != 1)
		return loom_err_set(err, EINVAL, "usage: job JOB");
	if (loom_parse_u64(argv[0], &id) < 0)
		return loom_err_set(err, EINVAL, "'%s' is not a job id", argv[0]);
	j = loomd_registry_job(s->reg, id);
	if (!j)
		return loom_err_set(err, ENOENT, "no job %llu", id);
	*ret = job_detail_json(s, j);
	return *ret ? 0 : -ENOMEM;
}

static int cmd_dump(void *ctx, int argc, const char *const *argv, json_t **ret,
		    struct loom_err *err)
{
	struct loomd_server *s = ctx;
	struct loomd_rjob *const *jobs;
	json_t *stats = NULL, *ja = json_array(), *agents = NULL, *prio = NULL;
	uint32_t n;
	char who[64];

	(void)argc;
	(void)argv;
	jobs = loomd_registry_jobs(s->reg, &n);
	log_info("admin dump (%s): %u jobs", admin_peer(s, who, sizeof(who)), n);
	for (uint32_t i = 0; i < n; i++)
		json_array_append_new(ja, job_detail_json(s, jobs[i]));
	cmd_stats(s, 0, NULL, &stats, err);
	cmd_agents(s, 0, NULL, &agents, err);
	cmd_priorities(s, 0, NULL, &prio, err);
	*ret = json_pack("{s:o, s:o, s:o, s:o}", "stats", stats ? stats : json_null(), "jobs", ja,
			 "agents", agents ? agents : json_null(), "priorities",
			 prio ? prio : json_null());
	return *ret ? 0 : -ENOMEM;
}

/* Every tenant loomd knows: what its jobs hold and its quotas (0 = none). */
static int cmd_tenants(void *ctx, int argc, const char *const *argv, json_t **ret,
		       struct loom_err *err)
{
	struct loomd_server *s = ctx;
	json_t *a;

	(void)argv;
	if (argc)
		return loom_err_set(err, EINVAL, "usage: tenants");
	a = json_array();
	for (uint32_t i = 0; i < s->ntenants; i++) {
		const struct loomd_tenant *t = &s->tenants[i];
		struct loomd_tenant_use u;

		loomd_registry_tenant_use(s->reg, i, &u);
		json_array_append_new(a,
				      json_pack("{s:s, s:i, s:i, s:I, s:{s:i, s:i, s:i, s:i}}",
						"name", t->name, "jobs", (int)u.jobs, "coflows",
						(int)u.coflows, "flows", (json_int_t)u.flows,
						"quota", "jobs", (int)t->quota.jobs, "coflows",
						(int)t->quota.coflows, "flows", (int)t->quota.flows,
						"announce_rate", (int)t->quota.announce_rate));
	}
	*ret = a;
	return 0;
}

/* The bearer token of the web UI's writes (webui.h), for whoever may run admin commands. */
static int cmd_web_token(void *ctx, int argc, const char *const *argv, json_t **ret,
			 struct loom_err *err)
{
	struct loomd_server *s = ctx;

	(void)argv;
	if (argc)
		return loom_err_set(err, EINVAL, "usage: web-token");
	if (!s->ui)
		return loom_err_set(err, ENOENT, "no web UI: the metrics listener is off");
	*ret = json_pack("{s:s, s:i}", "token", loomd_webui_token(s->ui), "port",
			 (int)loomd_metrics_http_port(s->http));
	return *ret ? 0 : -ENOMEM;
}

/* Test-only commands (virtual_clock = yes). */
static int cmd_clock_set(void *ctx, int argc, const char *const *argv, json_t **ret,
			 struct loom_err *err)
{
	struct loomd_server *s = ctx;
	unsigned long long t;

	if (!s->cfg.virtual_clock)
		return loom_err_set(err, EPERM, "clock-set needs virtual_clock = yes");
	if (argc != 1 || loom_parse_u64(argv[0], &t) < 0)
		return loom_err_set(err, EINVAL, "usage: clock-set NS");
	if (loom_vclock_advance_to(&s->vclock, t) < 0)
		return loom_err_set(err, EINVAL, "the clock is at %llu ns; it never goes back",
				    (unsigned long long)s->vclock.now_ns);
	*ret = json_pack("{s:I}", "now_ns", (json_int_t)s->vclock.now_ns);
	return 0;
}

static int cmd_decide(void *ctx, int argc, const char *const *argv, json_t **ret,
		      struct loom_err *err)
{
	struct loomd_server *s = ctx;
	const struct policy_decision *d;
	const struct cp_model *m;
	json_t *order;
	int r;

	(void)argv;
	if (argc)
		return loom_err_set(err, EINVAL, "usage: decide");
	r = loomd_server_pass(s, err);
	if (r < 0)
		return r;
	d = loomd_sched_decision(s->sched);
	m = loomd_sched_view(s->sched);
	order = json_array();
	for (uint32_t i = 0; d && m && i < d->norder; i++)
		json_array_append_new(order,
				      json_integer((json_int_t)m->coflows[d->order[i]].ext_id));
	*ret = json_pack("{s:I, s:o}", "now_ns", (json_int_t)loomd_server_now_ns(s), "order",
			 order);
	return 0;
}

static const struct {
	const char *name, *usage, *help;
	loom_admin_fn fn;
} admin_cmds[] = {
	{"stats", "", "counters, latencies and settings", cmd_stats},
	{"jobs", "", "registered jobs", cmd_jobs},
	{"job", "JOB", "one job: its coflows, flows and edges (its DAG)", cmd_job},
	{"coflows", "[JOB]", "coflows (of one job)", cmd_coflows},
	{"agents", "", "connected agents and their table versions", cmd_agents},
	{"priorities", "[HOST]", "the current order (classes on one host)", cmd_priorities},
	{"unknown", "[HOST]", "flows agents saw that no framework announced", cmd_unknown},
	{"policy", "", "the policy in use", cmd_policy},
	{"set-policy", "SPEC", "switch policy (e.g. sincronia, dclas:sharing=fair)",
	 cmd_set_policy},
	{"policies", "", "every policy loomd can run", cmd_policies},
	{"dump", "", "the whole registry as JSON", cmd_dump},
	{"tenants", "", "tenants: what their jobs hold, their quotas", cmd_tenants},
	{"web-token", "", "the web UI's bearer token for writes", cmd_web_token},
	{"clock-set", "NS", "tests: move the virtual clock", cmd_clock_set},
	{"decide", "", "run a scheduling pass now; returns the order", cmd_decide},
};

int loomd_admin_register_all(struct loomd_server *s)
{
	for (size_t i = 0; i < sizeof(admin_cmds) / sizeof(admin_cmds[0]); i++) {
		int r = loom_admin_register(s->admin, admin_cmds[i].name, admin_cmds[i].usage,
					    admin_cmds[i].help, admin_cmds[i].fn, s);

		if (r < 0)
			return r;
	}
	return loom_admin_register_log_level(s->admin);
}

int loomd_admin_call(struct loomd_server *s, const char *name, int argc, const char *const *argv,
		     json_t **ret, struct loom_err *err)
{
	*ret = NULL;
	for (size_t i = 0; i < sizeof(admin_cmds) / sizeof(admin_cmds[0]); i++)
		if (!strcmp(admin_cmds[i].name, name))
			return admin_cmds[i].fn(s, argc, argv, ret, err);
	return loom_err_set(err, ENOENT, "no admin command '%s'", name);
}

void loomd_metrics_render(struct loomd_server *s, struct loomd_prom *p)
{
	struct loomd_registry_counts n;

	loomd_registry_counts(s->reg, &n);
	loomd_prom_gauge(p, "loom_jobs", "Registered jobs (running and done, not yet forgotten)",
			 n.jobs);
	loomd_prom_gauge(p, "loom_jobs_done", "Registered jobs that are done", n.jobs_done);
	loomd_prom_gauge(p, "loom_coflows", "Registered coflows", n.coflows);
	loomd_prom_gauge(p, "loom_coflows_active", "Schedulable (released, unfinished) coflows",
			 n.coflows_active);
	loomd_prom_gauge(p, "loom_flows", "Registered flows", (double)n.flows);
	loomd_prom_gauge(p, "loom_agents_connected", "Connected agents", s->nagents);
	loomd_prom_gauge(p, "loom_frameworks_connected", "Connected framework clients",
			 s->nframeworks);
	loomd_prom_gauge(p, "loom_connections", "Open connections", s->nconns);
	loomd_prom_counter(p, "loom_decisions_total", "Policy decisions",
			   (double)loomd_sched_decisions(s->sched));
	loomd_prom_counter(p, "loom_passes_total", "Scheduling passes", (double)s->st.passes);
	loomd_prom_counter(p, "loom_requests_total", "Protocol messages received",
			   (double)s->st.requests);
	loomd_prom_counter(p, "loom_request_errors_total", "Requests answered with an error",
			   (double)s->st.errors);
	loomd_prom_counter(p, "loom_bad_frames_total", "Connections closed for a bad frame",
			   (double)s->st.frames_bad);
	loomd_prom_counter(p, "loom_flows_announced_total", "Flows announced",
			   (double)s->st.flows_announced);
	loomd_prom_counter(p, "loom_tables_sent_total", "Priority tables sent to agents",
			   (double)s->st.tables_sent);
	loomd_prom_counter(p, "loom_table_entries_sent_total",
			   "Entries (flows, classes, removals) in the tables sent",
			   (double)s->st.table_entries_sent);
	loomd_prom_counter(p, "loom_flow_stats_reports_total",
			   "Flow statistics reports from agents", (double)s->st.stats_reports);
	loomd_prom_counter(p, "loom_unknown_flows_total",
			   "Flows agents reported that no framework announced",
			   (double)s->st.unknown_flows);
	loomd_prom_counter(p, "loom_connections_total", "Connections accepted",
			   (double)s->st.conns_total);
	loomd_prom_counter(p, "loom_journal_commits_total", "Journal commits",
			   (double)s->st.commits);
	loomd_prom_gauge(p, "loom_resident_memory_bytes", "loomd resident set size",
			 (double)rss_bytes());
	loomd_prom_gauge_labeled(p, "loom_policy_info", "The policy in use", "policy",
				 loomd_sched_policy(s->sched), 1);
	loomd_prom_hist(p, "loom_decision_seconds", "Time the policy takes to decide",
			&s->st.decide_hist);
	loomd_prom_hist(p, "loom_push_seconds", "Time from a table push to the agent's ack",
			&s->st.push_hist);
	loomd_prom_hist(p, "loom_enforce_seconds",
			"Time from a framework's change to the last affected agent's ack of it",
			&s->st.enforce_hist);
	loomd_prom_hist(p, "loom_pass_seconds", "Time of a whole scheduling pass (decide + push)",
			&s->st.pass_hist);
	loomd_prom_hist(p, "loom_journal_commit_seconds", "Time of a journal commit",
			&s->st.commit_hist);
}
