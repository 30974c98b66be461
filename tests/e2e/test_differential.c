/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Differential test: one generated multi-stage workload through the
 * simulator and through loomd must give the same decision sequence.
 *
 * The simulator runs first and records, at each decision, the time, the
 * order and every flow's bytes sent so far; flow completion times come from
 * its final state. loomd then runs on a virtual clock with one fake agent per
 * host: the test registers each job at its arrival time, reports each flow's
 * completion at its time (through the agent of the flow's source host) and,
 * at each recorded decision time, the bytes each flow has sent (rounded up:
 * agents count whole bytes, and a coflow's sum of rounded-down reports could
 * sit below a D-CLAS threshold the simulator's exact sum has reached), then
 * asks loomd to decide. loomd's order must equal the simulator's, decision by
 * decision, and every agent's table must give each coflow the class its rank
 * among that host's coflows says (the policy's class, capped, for a policy
 * that gives classes, or the class its conflicts give under loomd's default
 * class_assign=conflict). Each policy runs three times: with the simulator
 * in ideal mode and loomd's default classes, and in classes mode with each
 * class assignment (the simulator's default quantisation, conflict, against
 * loomd's default; per-host against class_assign=per-host), where the class
 * the simulator serves each flow in must also be, at every decision, the
 * class loomd gave the flow's coflow on the flow's source host.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "tests/gen_fixture.h"

#define NHOSTS  10
#define CLASSES 8

struct rec {
	uint64_t t_ns;
	uint32_t n;
	uint64_t *order; /* coflow ext ids */
	double *sent;    /* per flow */
	bool has_classes;
	uint16_t *class_of; /* per position, when has_classes */
	uint32_t *cls;      /* per flow: the simulator's class (classes mode), CP_NONE if none */
};

struct recs {
	struct rec *v;
	size_t n, cap;
	uint32_t nflows;
};

static void on_decision(void *ctx, const struct cp_model *m, uint64_t now_ns,
			const struct policy_decision *d)
{
	struct recs *rs = ctx;
	struct rec *r;

	if (rs->n == rs->cap) {
		rs->cap = rs->cap ? rs->cap * 2 : 256;
		rs->v = realloc(rs->v, rs->cap * sizeof(*rs->v));
		assert_non_null(rs->v);
	}
	r = &rs->v[rs->n++];
	r->t_ns = now_ns;
	r->n = d->norder;
	r->order = malloc((d->norder + 1) * sizeof(*r->order));
	r->sent = calloc(m->nflows + 1, sizeof(*r->sent));
	r->class_of = calloc(d->norder + 1, sizeof(*r->class_of));
	r->cls = malloc((m->nflows + 1) * sizeof(*r->cls));
	assert_non_null(r->order);
	assert_non_null(r->sent);
	assert_non_null(r->class_of);
	assert_non_null(r->cls);
	r->has_classes = d->has_classes;
	for (uint32_t f = 0; f < m->nflows; f++)
		r->cls[f] = CP_NONE;
	for (uint32_t i = 0; i < d->norder; i++) {
		r->order[i] = m->coflows[d->order[i]].ext_id;
		if (d->has_classes)
			r->class_of[i] = d->class_of[i];
	}
	for (uint32_t f = 0; f < m->nflows; f++) {
		const struct cp_flow *fl = &m->flows[f];

		r->sent[f] = fl->done ? (double)fl->bytes : (double)fl->bytes - fl->remaining_bytes;
	}
	rs->nflows = m->nflows;
}

/* The classes the simulator's fabric serves the flows in, for the decision just recorded. */
static void on_classes(void *ctx, const struct cp_model *m, uint64_t now_ns,
		       const uint32_t *flow_class)
{
	struct recs *rs = ctx;
	struct rec *r;

	assert_true(rs->n > 0);
	r = &rs->v[rs->n - 1];
	assert_int_equal(r->t_ns, now_ns);
	for (uint32_t f = 0; f < m->nflows; f++) {
		const struct cp_flow *fl = &m->flows[f];

		if (!fl->done && m->coflows[fl->coflow].state == CP_COFLOW_ACTIVE)
			r->cls[f] = flow_class[f];
	}
}

static void recs_free(struct recs *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		free(rs->v[i].order);
		free(rs->v[i].sent);
		free(rs->v[i].class_of);
		free(rs->v[i].cls);
	}
	free(rs->v);
}

static void clock_set(struct h_loomd *h, uint64_t t)
{
	char buf[32];
	const char *argv[1] = {buf};
	json_t *r;

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)t);
	r = h_admin(h, "clock-set", 1, argv);
	assert_non_null(r);
	json_decref(r);
}

/* Registers job j of m (all coflows, flows with synthetic tuples, edges) at the current clock. */
static void register_job(int fd, const struct cp_model *m, uint32_t j, uint64_t seq)
{
	const struct cp_job *jb = &m->jobs[j];
	Loom__Envelope env = LOOM__ENVELOPE__INIT, *rep;
	Loom__RegisterJob rj = LOOM__REGISTER_JOB__INIT;
	Loom__CoflowSpec *cs = calloc(jb->ncoflows, sizeof(*cs));
	Loom__CoflowSpec **csp = calloc(jb->ncoflows, sizeof(*csp));
	Loom__Edge *es = calloc(m->nedges + 1, sizeof(*es));
	Loom__Edge **esp = calloc(m->nedges + 1, sizeof(*esp));
	Loom__FlowSpec *fs = calloc(m->nflows, sizeof(*fs));
	Loom__FlowSpec **fsp = calloc(m->nflows, sizeof(*fsp));
	Loom__FiveTuple *ts = calloc(m->nflows, sizeof(*ts));
	struct wire_tuple *wt = calloc(m->nflows, sizeof(*wt));
	size_t ne = 0;

	rj.job_id = jb->ext_id;
	rj.weight = jb->weight;
	rj.n_coflows = jb->ncoflows;
	rj.coflows = csp;
	for (uint32_t k = 0; k < jb->ncoflows; k++) {
		uint32_t c = jb->first_coflow + k;
		const struct cp_coflow *cf = &m->coflows[c];

		loom__coflow_spec__init(&cs[k]);
		csp[k] = &cs[k];
		cs[k].id = cf->ext_id;
		cs[k].release_offset_ns = cf->release_offset_ns;
		cs[k].n_flows = cf->nflows;
		cs[k].flows = &fsp[cf->first_flow];
		for (uint32_t f = cf->first_flow; f < cf->first_flow + cf->nflows; f++) {
			loom__flow_spec__init(&fs[f]);
			fsp[f] = &fs[f];
			fs[f].src_host = m->flows[f].src;
			fs[f].dst_host = m->flows[f].dst;
			fs[f].bytes = m->flows[f].bytes;
			h_tuple(f, &wt[f]);
			wire_tuple_to_pb(&wt[f], &ts[f]);
			fs[f].tuple = &ts[f];
		}
		for (uint32_t e = 0; e < cf->nparents; e++) {
			const struct cp_edge *ed = &m->edges[cf->first_parent + e];

			loom__edge__init(&es[ne]);
			es[ne].parent = m->coflows[ed->parent].ext_id;
			es[ne].child = cf->ext_id;
			es[ne].delay_ns = ed->delay_ns;
			esp[ne] = &es[ne];
			ne++;
		}
	}
	rj.n_edges = ne;
	rj.edges = esp;
	env.seq = seq;
	env.body_case = LOOM__ENVELOPE__BODY_REGISTER_JOB;
	env.register_job = &rj;
	rep = h_call(fd, &env);
	assert_non_null(rep);
	assert_int_equal(rep->body_case, LOOM__ENVELOPE__BODY_REPLY);
	if (rep->reply->error && rep->reply->error->code)
		fail_msg("register job %llu: %s", (unsigned long long)jb->ext_id,
			 rep->reply->error->message);
	wire_free(rep);
	free(cs);
	free(csp);
	free(es);
	free(esp);
	free(fs);
	free(fsp);
	free(ts);
	free(wt);
}

/*
 * Expected class of the coflow at position i on host h, worked out here
 * rather than by the code under test: per-host, its rank among h's coflows
 * with unfinished flows; conflict, one above the highest class of an
 * earlier coflow with an unfinished flow on one of its unfinished flows'
 * ports; capped at CLASSES-1 (or the policy's class, capped).
 * In classes mode, every unfinished flow's class in the simulator must be
 * what its source host's agent holds for its coflow.
 */
static void check_tables(const struct cp_model *m, const struct rec *r, uint64_t t_ns,
			 struct h_agent *agents, const char *policy, size_t k, bool classes_mode,
			 bool per_host)
{
	uint32_t next[NHOSTS] = {0};
	uint32_t *top = calloc(m->topo->nports, sizeof(*top)); /* 1 + highest class on a port */

	assert_non_null(top);
	for (uint32_t i = 0; i < r->n; i++) {
		uint32_t c = CP_NONE;
		bool on[NHOSTS] = {false};

		for (uint32_t x = 0; x < m->ncoflows; x++)
			if (m->coflows[x].ext_id == r->order[i])
				c = x;
		assert_int_not_equal(c, CP_NONE);
		uint32_t conflict = 0;

		for (uint32_t f = m->coflows[c].first_flow;
		     f < m->coflows[c].first_flow + m->coflows[c].nflows; f++)
			if (m->flows[f].finish_ns > t_ns) {
				on[m->flows[f].src] = true;
				for (uint32_t x = 0; x < m->flows[f].nports; x++)
					if (top[m->flows[f].ports[x]] > conflict)
						conflict = top[m->flows[f].ports[x]];
			}
		if (conflict > CLASSES - 1)
			conflict = CLASSES - 1;
		for (uint32_t f = m->coflows[c].first_flow;
		     f < m->coflows[c].first_flow + m->coflows[c].nflows; f++)
			for (uint32_t x = 0; m->flows[f].finish_ns > t_ns && x < m->flows[f].nports;
			     x++)
				if (top[m->flows[f].ports[x]] < conflict + 1)
					top[m->flows[f].ports[x]] = conflict + 1;
		for (uint32_t h = 0; h < NHOSTS; h++) {
			uint32_t want;
			int got;

			if (!on[h])
				continue;
			if (r->has_classes)
				want = r->class_of[i] < CLASSES - 1 ? r->class_of[i] : CLASSES - 1;
			else if (per_host)
				want = next[h] < CLASSES - 1 ? next[h] : CLASSES - 1;
			else
				want = conflict;
			next[h]++;
			got = h_agent_coflow_class(&agents[h], r->order[i]);
			if (got != (int)want)
				fail_msg("%s decision %zu: host %u has coflow %llu in class %d, "
					 "expected %u",
					 policy, k, h, (unsigned long long)r->order[i], got, want);
		}
		for (uint32_t f = m->coflows[c].first_flow;
		     classes_mode && f < m->coflows[c].first_flow + m->coflows[c].nflows; f++) {
			uint32_t h = m->flows[f].src;
			int got;

			if (m->flows[f].finish_ns <= t_ns)
				continue;
			got = h_agent_coflow_class(&agents[h], r->order[i]);
			if (r->cls[f] == CP_NONE || got != (int)r->cls[f])
				fail_msg(
					"%s decision %zu: flow %u of coflow %llu from host %u is in "
					"class %d in the simulator, %d in loomd",
					policy, k, f, (unsigned long long)r->order[i], h,
					r->cls[f] == CP_NONE ? -1 : (int)r->cls[f], got);
		}
	}
	free(top);
}

/*
 * With policy classes (fair: all in class 0) the order inside a class is
 * the model's active list, which loomd's view may keep in another order and
 * which nothing enforces: loomd's coflow id at position i passes when the
 * simulator has it in the same class as the one it has at i.
 */
static bool same_class_elsewhere(const struct rec *r, uint32_t i, json_int_t id)
{
	if (!r->has_classes)
		return false;
	for (uint32_t j = 0; j < r->n; j++)
		if (r->order[j] == (uint64_t)id)
			return r->class_of[j] == r->class_of[i];
	return false;
}

static void run_policy(const char *policy, enum sim_mode mode, bool per_host)
{
	struct topo *t = topo_new_bigswitch(NHOSTS, TOPO_DEFAULT_BPS);
	struct sim_gen_params gp;
	struct loom_err err = {{0}};
	struct cp_model *m;
	struct policy *p;
	struct policy_params pp = {.classes = CLASSES, .seed = 1};
	struct sim_opts o;
	struct sim_stats st;
	struct recs rs = {0};
	struct h_loomd h;
	struct h_agent *agents = calloc(NHOSTS, sizeof(*agents));
	uint64_t *reported;
	bool *done_sent;
	uint32_t next_job = 0;
	char o_policy[128], o_hosts[32], o_bps[64];
	/* loomd's default class_assign (conflict) unless per-host */
	const char *extra[] = {"virtual_clock=yes",
			       o_policy,
			       o_hosts,
			       o_bps,
			       "classes=8",
			       per_host ? "class_assign=per-host" : NULL,
			       NULL};
	int fw;

	assert_non_null(t);
	assert_non_null(agents);
	sim_gen_params_default(&gp);
	gp.njobs = 10;
	gp.load = 0.8;
	gp.seed = 11;
	gp.weight_max = 3;
	m = test_gen_workload(&gp, t, &err);
	if (!m)
		fail_msg("workload: %s", loom_err_str(&err));
	p = policy_new(policy, &pp, m, &err);
	if (!p)
		fail_msg("policy %s: %s", policy, loom_err_str(&err));
	sim_opts_default(&o);
	/* what loom-replay --mode classes runs by default: loomd's default classes */
	assert_int_equal(o.quantize, SIM_QUANT_CONFLICT);
	if (per_host)
		o.quantize = SIM_QUANT_PER_HOST;
	o.mode = mode;
	o.classes = CLASSES;
	o.on_decision = on_decision;
	o.decision_ctx = &rs;
	o.on_classes = on_classes;
	o.classes_ctx = &rs;
	assert_int_equal(sim_run(m, p, &o, &st, &err), 0);
	policy_free(p);
	assert_true(rs.n > 10);

	snprintf(o_policy, sizeof(o_policy), "policy=%s", policy);
	snprintf(o_hosts, sizeof(o_hosts), "hosts=%u", NHOSTS);
	snprintf(o_bps, sizeof(o_bps), "link_bps=%llu", (unsigned long long)TOPO_DEFAULT_BPS);
	assert_int_equal(h_loomd_prepare(&h), 0);
	assert_int_equal(h_loomd_start(&h, extra), 0);
	fw = h_connect(h.sock);
	assert_true(fw >= 0);
	assert_int_equal(h_hello(fw, LOOM__ROLE__FRAMEWORK, 0, 1, 1), 0);
	for (uint32_t a = 0; a < NHOSTS; a++)
		assert_int_equal(h_agent_connect(&agents[a], h.sock, a), 0);
	reported = calloc(m->nflows, sizeof(*reported));
	done_sent = calloc(m->nflows, sizeof(*done_sent));
	assert_non_null(reported);
	assert_non_null(done_sent);

	for (size_t k = 0; k < rs.n; k++) {
		const struct rec *r = &rs.v[k];
		json_t *res, *order;

		/* Inputs up to r->t_ns in time order: completions first at equal times (as the sim). */
		for (;;) {
			uint64_t tf = CP_TIME_NEVER, ta = CP_TIME_NEVER;
			uint32_t ff = CP_NONE;

			for (uint32_t f = 0; f < m->nflows; f++)
				if (!done_sent[f] && m->flows[f].finish_ns <= r->t_ns &&
				    m->flows[f].finish_ns < tf) {
					tf = m->flows[f].finish_ns;
					ff = f;
				}
			if (next_job < m->njobs && m->jobs[next_job].arrival_ns <= r->t_ns)
				ta = m->jobs[next_job].arrival_ns;
			if (tf == CP_TIME_NEVER && ta == CP_TIME_NEVER)
				break;
			if (tf <= ta) {
				struct wire_tuple wt;
				struct h_agent *ag = &agents[m->flows[ff].src];

				clock_set(&h, tf);
				h_tuple(ff, &wt);
				assert_int_equal(h_agent_stats(ag, &wt,
							       m->flows[ff].bytes - reported[ff],
							       true),
						 0);
				reported[ff] = m->flows[ff].bytes;
				done_sent[ff] = true;
				assert_int_equal(h_agent_sync(ag), 0);
			} else {
				clock_set(&h, ta);
				register_job(fw, m, next_job, 1000 + next_job);
				next_job++;
			}
		}
		clock_set(&h, r->t_ns);
		for (uint32_t f = 0; f < m->nflows; f++) {
			uint64_t s = (uint64_t)ceil(r->sent[f] - 1e-6);

			if (done_sent[f] || s <= reported[f])
				continue;
			{
				struct wire_tuple wt;

				h_tuple(f, &wt);
				assert_int_equal(h_agent_stats(&agents[m->flows[f].src], &wt,
							       s - reported[f], false),
						 0);
			}
			reported[f] = s;
		}
		for (uint32_t a = 0; a < NHOSTS; a++)
			assert_int_equal(h_agent_sync(&agents[a]), 0);
		res = h_admin(&h, "decide", 0, NULL);
		assert_non_null(res);
		order = json_object_get(res, "order");
		if (json_array_size(order) != r->n)
			fail_msg(
				"%s decision %zu at %llu ns: loomd orders %zu coflows, the simulator "
				"%u",
				policy, k, (unsigned long long)r->t_ns, json_array_size(order),
				r->n);
		for (uint32_t i = 0; i < r->n; i++)
			if ((uint64_t)json_integer_value(json_array_get(order, i)) != r->order[i] &&
			    !same_class_elsewhere(r, i,
						  json_integer_value(json_array_get(order, i))))
				fail_msg(
					"%s decision %zu at %llu ns, position %u: loomd has coflow "
					"%lld, the simulator %llu",
					policy, k, (unsigned long long)r->t_ns, i,
					json_integer_value(json_array_get(order, i)),
					(unsigned long long)r->order[i]);
		json_decref(res);
		for (uint32_t a = 0; a < NHOSTS; a++)
			assert_int_equal(h_agent_sync(&agents[a]), 0);
		check_tables(m, r, r->t_ns, agents, policy, k, mode == SIM_MODE_CLASSES, per_host);
	}
	for (uint32_t a = 0; a < NHOSTS; a++) {
		assert_int_equal(agents[a].gaps, 0);
		close(agents[a].fd);
	}
	printf("%s (%s, %s classes): %zu decisions identical (%u jobs, %u coflows, %u flows)\n",
	       policy, mode == SIM_MODE_CLASSES ? "classes mode" : "ideal mode",
	       per_host ? "per-host" : "conflict", rs.n, m->njobs, m->ncoflows, m->nflows);
	close(fw);
	assert_int_equal(h_loomd_stop_clean(&h), 0);
	h_loomd_cleanup(&h);
	free(reported);
	free(done_sent);
	free(agents);
	recs_free(&rs);
	cp_model_free(m);
	topo_free(t);
}

#define DIFF_TEST(name, spec)                                                                      \
	static void test_##name(void **state)                                                      \
	{                                                                                          \
		(void)state;                                                                       \
		run_policy(spec, SIM_MODE_IDEAL, false);                                           \
	}                                                                                          \
	static void test_##name##_classes(void **state)                                            \
	{                                                                                          \
		(void)state;                                                                       \
		run_policy(spec, SIM_MODE_CLASSES, false);                                         \
	}                                                                                          \
	static void test_##name##_per_host(void **state)                                           \
	{                                                                                          \
		(void)state;                                                                       \
		run_policy(spec, SIM_MODE_CLASSES, true);                                          \
	}

DIFF_TEST(fifo, "fifo")
DIFF_TEST(sebf, "sebf")
DIFF_TEST(sincronia, "sincronia")
DIFF_TEST(wsrjf, "wsrjf")
DIFF_TEST(dclas, "dclas")
DIFF_TEST(gnn, "gnn")
DIFF_TEST(blend, "blend")
DIFF_TEST(fair, "fair")

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fifo),
		cmocka_unit_test(test_fifo_classes),
		cmocka_unit_test(test_fifo_per_host),
		cmocka_unit_test(test_sebf),
		cmocka_unit_test(test_sebf_classes),
		cmocka_unit_test(test_sebf_per_host),
		cmocka_unit_test(test_sincronia),
		cmocka_unit_test(test_sincronia_classes),
		cmocka_unit_test(test_sincronia_per_host),
		cmocka_unit_test(test_wsrjf),
		cmocka_unit_test(test_wsrjf_classes),
		cmocka_unit_test(test_wsrjf_per_host),
		cmocka_unit_test(test_dclas),
		cmocka_unit_test(test_dclas_classes),
		cmocka_unit_test(test_dclas_per_host),
		cmocka_unit_test(test_gnn),
		cmocka_unit_test(test_gnn_classes),
		cmocka_unit_test(test_gnn_per_host),
		cmocka_unit_test(test_blend),
		cmocka_unit_test(test_blend_classes),
		cmocka_unit_test(test_blend_per_host),
		cmocka_unit_test(test_fair),
		cmocka_unit_test(test_fair_classes),
		cmocka_unit_test(test_fair_per_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
