/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The registry and its view (registry.h). Objects are owned by their job: a job
 * owns its coflows (one array) and edges, a coflow its flows (one allocation
 * each, so pointers stay put). Maps (common/hmap) find them by id and tuple,
 * and hosts by address.
 *
 * Facts (arrivals, flows done, coflows and jobs declared done, bytes sent)
 * live in the objects. A change that adds or removes objects marks the view
 * dirty; loomd_registry_view() then rebuilds it and replays the facts through
 * the model's own transitions. A change to objects the view has is applied
 * to it at once, so between rebuilds the view is current for them.
 */
#include "controlplane/loomd/registry.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/dag.h"
#include "common/hash.h"
#include "common/heap.h"
#include "common/hmap.h"
#include "common/log.h"

/* Flow slots an open coflow gets in a rebuilt view at least (see view_add_flow). */
#define LOOMD_MIN_FLOW_SLOTS 16

/*
 * The maps (common/hmap) hold pointers: by_job and by_coflow keyed by id,
 * by_tuple by wire_tuple_hash() and by_addr by addr_hash(), where distinct
 * records may share a key (loom_hmap_add_dup(), found by a match on the
 * record).
 */
static void *map_get(const struct loom_hmap *m, uint64_t key)
{
	uint64_t v;

	return loom_hmap_get(m, key, &v) ? (void *)(uintptr_t)v : NULL;
}

static bool flow_match(uint64_t val, const void *key)
{
	return wire_tuple_eq(&((const struct loomd_rflow *)(uintptr_t)val)->tuple, key);
}

struct host_addr {
	uint8_t family;
	uint8_t addr[16];
	uint32_t host;
};

static bool addr_match(uint64_t val, const void *key)
{
	const struct host_addr *a = (const struct host_addr *)(uintptr_t)val, *b = key;

	return a->family == b->family && !memcmp(a->addr, b->addr, 16);
}

/*
 * FNV-1a over the family, then the address (loom_hmap mixes the result). Only
 * by_addr's slots depend on the value: neither it nor the map's order is kept
 * anywhere (the journal records no addresses; agents send them again).
 */
static uint64_t addr_hash(const struct host_addr *a)
{
	return loom_hash_bytes_from(loom_hash_bytes(&a->family, 1), a->addr, sizeof(a->addr));
}

/* ---- the registry ------------------------------------------------------------------------ */

struct loomd_registry {
	const struct topo *topo;
	struct loomd_registry_limits lim;
	struct loomd_rjob **jobs; /* registration order */
	uint32_t njobs, cap_jobs;
	uint32_t ncoflows;
	uint64_t nflows;
	struct loom_hmap by_job, by_coflow, by_tuple, by_addr; /* see map_get */
	uint64_t now_ns;
	struct loomd_tenant_use *use; /* by tenant id */
	uint32_t nuse;

	/* the view */
	struct cp_model *view;
	bool dirty;
	bool replaying;
	struct loomd_rjob **vjob;       /* view job -> registry job */
	struct loomd_rcoflow **vcoflow; /* view coflow -> registry coflow */
	struct loomd_rflow **vflow;     /* view flow -> registry flow */
	uint32_t *ready;                /* READY view coflows: a heap by ready_key */
	uint64_t *ready_key;            /* per view coflow: its release time once READY */
	uint32_t nready;
	struct cp_event *events; /* live events since the last clear */
	uint32_t nevents, cap_events;
	int emit_err;
};

struct loomd_registry *loomd_registry_new(const struct topo *t,
					  const struct loomd_registry_limits *lim)
{
	struct loomd_registry *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->topo = t;
	r->lim = *lim;
	return r;
}

static void job_free(struct loomd_rjob *j)
{
	if (!j)
		return;
	for (uint32_t c = 0; c < j->ncoflows; c++) {
		for (uint32_t f = 0; f < j->coflows[c].nflows; f++)
			free(j->coflows[c].flows[f]);
		free(j->coflows[c].flows);
	}
	free(j->coflows);
	free(j->edges);
	free(j);
}

static void view_drop(struct loomd_registry *r)
{
	r->view = cp_model_free(r->view);
	free(r->vjob);
	free(r->vcoflow);
	free(r->vflow);
	free(r->ready);
	free(r->ready_key);
	r->ready_key = NULL;
	r->vjob = NULL;
	r->vcoflow = NULL;
	r->vflow = NULL;
	r->ready = NULL;
}

struct loomd_registry *loomd_registry_free(struct loomd_registry *r)
{
	struct loom_hmap_iter it;
	uint64_t v;

	if (!r)
		return NULL;
	for (uint32_t j = 0; j < r->njobs; j++)
		job_free(r->jobs[j]);
	free(r->jobs);
	loom_hmap_iter_init(&r->by_addr, &it);
	while (loom_hmap_iter_next(&r->by_addr, &it, NULL, &v))
		free((void *)(uintptr_t)v);
	loom_hmap_done(&r->by_job);
	loom_hmap_done(&r->by_coflow);
	loom_hmap_done(&r->by_tuple);
	loom_hmap_done(&r->by_addr);
	view_drop(r);
	free(r->events);
	free(r->use);
	free(r);
	return NULL;
}

static void see_time(struct loomd_registry *r, uint64_t now_ns)
{
	if (now_ns > r->now_ns)
		r->now_ns = now_ns;
}

uint64_t loomd_registry_now(const struct loomd_registry *r)
{
	return r->now_ns;
}

struct loomd_rjob *loomd_registry_job(const struct loomd_registry *r, uint64_t id)
{
	return map_get(&r->by_job, id);
}

struct loomd_rcoflow *loomd_registry_coflow(const struct loomd_registry *r, uint64_t id)
{
	return map_get(&r->by_coflow, id);
}

struct loomd_rflow *loomd_registry_flow(const struct loomd_registry *r, const struct wire_tuple *t)
{
	size_t p = loom_hmap_find_match(&r->by_tuple, wire_tuple_hash(t), flow_match, t);

	return p == LOOM_HMAP_NPOS ? NULL :
				     (struct loomd_rflow *)(uintptr_t)r->by_tuple.slot[p].val;
}

struct loomd_rjob *const *loomd_registry_jobs(const struct loomd_registry *r, uint32_t *ret_n)
{
	*ret_n = r->njobs;
	return r->jobs;
}

static struct host_addr *addr_find(const struct loomd_registry *r, const struct host_addr *key)
{
	size_t p = loom_hmap_find_match(&r->by_addr, addr_hash(key), addr_match, key);

	return p == LOOM_HMAP_NPOS ? NULL : (struct host_addr *)(uintptr_t)r->by_addr.slot[p].val;
}

int loomd_registry_set_host_addr(struct loomd_registry *r, uint32_t host, const uint8_t *addr,
				 uint8_t family)
{
	struct host_addr key = {.family = family, .host = host}, *a;

	if ((family != 4 && family != 6) || host >= r->topo->nhosts)
		return -EINVAL;
	memcpy(key.addr, addr, family == 4 ? 4 : 16);
	a = addr_find(r, &key);
	if (a) {
		a->host = host;
		return 0;
	}
	a = malloc(sizeof(*a));
	if (!a)
		return -ENOMEM;
	*a = key;
	if (loom_hmap_add_dup(&r->by_addr, addr_hash(a), (uintptr_t)a) < 0) {
		free(a);
		return -ENOMEM;
	}
	return 0;
}

void loomd_registry_clear_host_addrs(struct loomd_registry *r, uint32_t host)
{
	struct loom_hmap_iter it;
	uint64_t v;

	loom_hmap_iter_init(&r->by_addr, &it);
	while (loom_hmap_iter_next(&r->by_addr, &it, NULL, &v)) {
		struct host_addr *a = (struct host_addr *)(uintptr_t)v;

		if (a->host != host)
			continue;
		loom_hmap_iter_remove(&r->by_addr, &it);
		free(a);
	}
}

static int host_of(const struct loomd_registry *r, uint8_t family, const uint8_t *addr,
		   uint32_t *ret_host)
{
	struct host_addr key = {.family = family}, *a;

	memcpy(key.addr, addr, family == 4 ? 4 : 16);
	a = addr_find(r, &key);
	if (!a)
		return -ENOENT;
	*ret_host = a->host;
	return 0;
}

int loomd_registry_hosts_of(const struct loomd_registry *r, const struct wire_tuple *t,
			    uint32_t *ret_src, uint32_t *ret_dst)
{
	uint32_t src, dst;

	if (host_of(r, t->family, t->src, &src) < 0 || host_of(r, t->family, t->dst, &dst) < 0)
		return -ENOENT;
	*ret_src = src;
	*ret_dst = dst;
	return 0;
}

/* ---- the view's state of an object, whether or not the view has it yet ----------------------- */

enum cp_coflow_state loomd_registry_coflow_state(const struct loomd_registry *r,
						 const struct loomd_rcoflow *c)
{
	if (c->view != CP_NONE && r->view)
		return r->view->coflows[c->view].state;
	return c->done_ns != CP_TIME_NEVER ? CP_COFLOW_DONE : CP_COFLOW_WAITING;
}

static bool coflow_done(const struct loomd_registry *r, const struct loomd_rcoflow *c)
{
	return c->done_ns != CP_TIME_NEVER || c->declared_done ||
	       loomd_registry_coflow_state(r, c) == CP_COFLOW_DONE;
}

/* ---- validation of a job ------------------------------------------------------------------- */

static int check_flow_spec(const struct loomd_registry *r, const struct loomd_flow_spec *f,
			   struct loomd_flow_spec *ret, const char *what, struct loom_err *err)
{
	struct loomd_flow_spec out = *f;

	if (f->by_address) {
		if (!f->has_tuple)
			return loom_err_set(err, EINVAL, "%s: by_address needs a 5-tuple", what);
		if (host_of(r, f->tuple.family, f->tuple.src, &out.src) < 0 ||
		    host_of(r, f->tuple.family, f->tuple.dst, &out.dst) < 0) {
			char buf[128];

			return loom_err_set(
				err, ENOENT,
				"%s: no host owns the addresses of %s (no agent announced "
				"them; give src_host/dst_host instead)",
				what, wire_tuple_str(&f->tuple, buf, sizeof(buf)));
		}
	}
	if (out.src >= r->topo->nhosts || out.dst >= r->topo->nhosts)
		return loom_err_set(err, EINVAL,
				    "%s: host %u is out of range (the fabric has %u hosts)", what,
				    out.src >= r->topo->nhosts ? out.src : out.dst,
				    r->topo->nhosts);
	if (f->has_tuple && f->tuple.protocol != 6 && f->tuple.protocol != 17)
		return loom_err_set(err, EINVAL, "%s: protocol %u is neither TCP (6) nor UDP (17)",
				    what, f->tuple.protocol);
	if (f->has_tuple && loomd_registry_flow(r, &f->tuple)) {
		char buf[128];

		return loom_err_set(err, EEXIST, "%s: a flow with tuple %s is already announced",
				    what, wire_tuple_str(&f->tuple, buf, sizeof(buf)));
	}
	*ret = out;
	return 0;
}

/* ---- validation of a job: every check O(n log n) in its coflows, flows and edges ------------- */

struct id_idx {
	uint64_t id;
	uint32_t idx;
};

static int cmp_id_idx(const void *a, const void *b)
{
	const struct id_idx *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Index of coflow id in the job (ids sorted), or -1. */
static int find_sorted(const struct id_idx *ids, uint32_t n, uint64_t id)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && ids[lo].id == id ? (int)ids[lo].idx : -1;
}

static int cmp_edge_pair(const void *a, const void *b)
{
	const uint32_t *x = a, *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return (x[1] > y[1]) - (x[1] < y[1]);
}

static int cmp_tuple(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct wire_tuple));
}

/*
 * Kahn's algorithm (common/dag.h) over the job's coflows with the edges as
 * (parent, child) index pairs; -ELOOP naming the lowest coflow on or after a
 * cycle.
 */
static int check_acyclic(const struct loomd_job_spec *s, const uint32_t (*pairs)[2],
			 struct loom_err *err)
{
	struct loom_dag_csr csr;
	uint32_t c;
	int r = loom_dag_csr_init(&csr, s->ncoflows, pairs, s->nedges, sizeof(*pairs));

	if (r == 0) {
		r = loom_dag_order(&(struct loom_dag){s->ncoflows, loom_dag_csr_child, &csr}, NULL,
				   NULL, &c);
		loom_dag_csr_done(&csr);
	}
	if (r < 0)
		return loom_err_set(err, ENOMEM, "out of memory");
	if (r > 0)
		return loom_err_set(err, ELOOP,
				    "job %llu: its coflows form a cycle (coflow %llu is on or "
				    "after one)",
				    (unsigned long long)s->id,
				    (unsigned long long)s->coflows[c].id);
	return 0;
}

/* Edges: both ends in this job, no self-loop, no duplicate, no cycle. */
static int check_edges(const struct loomd_job_spec *s, const struct id_idx *ids,
		       struct loom_err *err)
{
	uint32_t(*pairs)[2] = calloc(s->nedges + 1, sizeof(*pairs));
	int rc = 0;

	if (!pairs)
		return loom_err_set(err, ENOMEM, "out of memory");
	for (uint32_t e = 0; e < s->nedges; e++) {
		int p = find_sorted(ids, s->ncoflows, s->edges[e].parent);
		int c = find_sorted(ids, s->ncoflows, s->edges[e].child);

		if (p < 0 || c < 0) {
			uint64_t bad = p < 0 ? s->edges[e].parent : s->edges[e].child;

			rc = loom_err_set(err, ENOENT,
					  "job %llu edge %u: coflow %llu is not one of this job's",
					  (unsigned long long)s->id, e, (unsigned long long)bad);
			goto out;
		}
		if (p == c) {
			rc = loom_err_set(err, ELOOP,
					  "job %llu edge %u: coflow %llu depends on itself",
					  (unsigned long long)s->id, e,
					  (unsigned long long)s->edges[e].parent);
			goto out;
		}
		pairs[e][0] = (uint32_t)p;
		pairs[e][1] = (uint32_t)c;
	}
	qsort(pairs, s->nedges, sizeof(*pairs), cmp_edge_pair);
	for (uint32_t e = 1; e < s->nedges; e++)
		if (pairs[e][0] == pairs[e - 1][0] && pairs[e][1] == pairs[e - 1][1]) {
			rc = loom_err_set(err, EEXIST, "job %llu: edge %llu -> %llu appears twice",
					  (unsigned long long)s->id,
					  (unsigned long long)s->coflows[pairs[e][0]].id,
					  (unsigned long long)s->coflows[pairs[e][1]].id);
			goto out;
		}
	rc = check_acyclic(s, (const uint32_t(*)[2])pairs, err);
out:
	free(pairs);
	return rc;
}

static int validate_coflows(const struct loomd_registry *r, const struct loomd_job_spec *s,
			    uint32_t from, uint64_t nflows, struct loomd_flow_spec *resolved,
			    struct loom_err *err);

static int validate_job(const struct loomd_registry *r, const struct loomd_job_spec *s,
			struct loomd_flow_spec *resolved, struct loom_err *err)
{
	uint64_t nflows = 0;

	if (loomd_registry_job(r, s->id))
		return loom_err_set(err, EEXIST, "job %llu is already registered",
				    (unsigned long long)s->id);
	if (!(s->weight > 0) || !isfinite(s->weight))
		return loom_err_set(err, EINVAL, "job %llu: weight %g is not a positive number",
				    (unsigned long long)s->id, s->weight);
	if (s->ncoflows == 0)
		return loom_err_set(err, EINVAL, "job %llu has no coflows",
				    (unsigned long long)s->id);
	if (r->njobs >= r->lim.max_jobs)
		return loom_err_set(err, ENOSPC,
				    "job %llu: the controller holds %u jobs (max_jobs)",
				    (unsigned long long)s->id, r->lim.max_jobs);
	if (r->ncoflows + s->ncoflows > r->lim.max_coflows)
		return loom_err_set(err, ENOSPC,
				    "job %llu: %u more coflows would exceed max_coflows (%u)",
				    (unsigned long long)s->id, s->ncoflows, r->lim.max_coflows);
	for (uint32_t i = 0; i < s->ncoflows; i++)
		nflows += s->coflows[i].nflows;
	if (r->nflows + nflows > r->lim.max_flows)
		return loom_err_set(err, ENOSPC,
				    "job %llu: %llu more flows would exceed max_flows (%u)",
				    (unsigned long long)s->id, (unsigned long long)nflows,
				    r->lim.max_flows);
	return validate_coflows(r, s, 0, nflows, resolved, err);
}

/*
 * The coflows s->coflows[from..] (those before are the job's registered
 * ones, given by id only) with their nflows flows: new ids, flows within the
 * limits and the fabric, tuples new, then the edges (check_edges, over all).
 */
static int validate_coflows(const struct loomd_registry *r, const struct loomd_job_spec *s,
			    uint32_t from, uint64_t nflows, struct loomd_flow_spec *resolved,
			    struct loom_err *err)
{
	struct id_idx *ids = NULL;
	struct wire_tuple *tuples = NULL;
	uint32_t k = 0, nt = 0;
	int rc = 0;

	ids = calloc(s->ncoflows, sizeof(*ids));
	tuples = calloc(nflows + 1, sizeof(*tuples));
	if (!ids || !tuples) {
		rc = loom_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < s->ncoflows; i++) {
		const struct loomd_coflow_spec *c = &s->coflows[i];

		ids[i] = (struct id_idx){c->id, i};
		if (i < from)
			continue;
		if (loomd_registry_coflow(r, c->id)) {
			rc = loom_err_set(err, EEXIST,
					  "job %llu: coflow id %llu is already registered (coflow "
					  "ids are unique across jobs)",
					  (unsigned long long)s->id, (unsigned long long)c->id);
			goto out;
		}
		if (c->expected_flows > r->lim.max_flows) {
			rc = loom_err_set(
				err, ENOSPC,
				"job %llu coflow %llu: expected_flows %u exceeds max_flows "
				"(%u)",
				(unsigned long long)s->id, (unsigned long long)c->id,
				c->expected_flows, r->lim.max_flows);
			goto out;
		}
		if (c->expected_flows && c->nflows > c->expected_flows) {
			rc = loom_err_set(err, EINVAL,
					  "job %llu coflow %llu: %u flows listed, more than its "
					  "expected_flows %u",
					  (unsigned long long)s->id, (unsigned long long)c->id,
					  c->nflows, c->expected_flows);
			goto out;
		}
		for (uint32_t f = 0; f < c->nflows; f++, k++) {
			char what[96];

			snprintf(what, sizeof(what), "job %llu coflow %llu flow %u",
				 (unsigned long long)s->id, (unsigned long long)c->id, f);
			rc = check_flow_spec(r, &c->flows[f], &resolved[k], what, err);
			if (rc < 0)
				goto out;
			if (c->flows[f].has_tuple)
				tuples[nt++] = c->flows[f].tuple;
		}
	}
	qsort(ids, s->ncoflows, sizeof(*ids), cmp_id_idx);
	for (uint32_t i = 1; i < s->ncoflows; i++)
		if (ids[i].id == ids[i - 1].id) {
			rc = loom_err_set(err, EEXIST, "job %llu: coflow id %llu appears twice",
					  (unsigned long long)s->id, (unsigned long long)ids[i].id);
			goto out;
		}
	qsort(tuples, nt, sizeof(*tuples), cmp_tuple);
	for (uint32_t i = 1; i < nt; i++)
		if (wire_tuple_eq(&tuples[i], &tuples[i - 1])) {
			char buf[128];

			rc = loom_err_set(err, EEXIST, "job %llu: tuple %s appears twice",
					  (unsigned long long)s->id,
					  wire_tuple_str(&tuples[i], buf, sizeof(buf)));
			goto out;
		}
	rc = check_edges(s, ids, err);
out:
	free(ids);
	free(tuples);
	return rc;
}

/* ---- changes -------------------------------------------------------------------------------- */

static struct loomd_rflow *flow_new(const struct loomd_flow_spec *f, struct loomd_rcoflow *c)
{
	struct loomd_rflow *fl = calloc(1, sizeof(*fl));

	if (!fl)
		return NULL;
	fl->coflow = c;
	fl->src = f->src;
	fl->dst = f->dst;
	fl->bytes = f->bytes;
	fl->has_tuple = f->has_tuple;
	fl->tuple = f->tuple;
	fl->done_ns = CP_TIME_NEVER;
	fl->view = CP_NONE;
	return fl;
}

static int coflow_push_flow(struct loomd_rcoflow *c, struct loomd_rflow *fl)
{
	if (c->nflows == c->cap_flows) {
		uint32_t ncap = c->cap_flows ? c->cap_flows * 2 : 4;
		struct loomd_rflow **v = realloc(c->flows, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->flows = v;
		c->cap_flows = ncap;
	}
	c->flows[c->nflows++] = fl;
	return 0;
}

/* Unhooks j from the maps (not from jobs[]). */
static void job_unmap(struct loomd_registry *r, struct loomd_rjob *j)
{
	loom_hmap_remove_val(&r->by_job, j->id, (uintptr_t)j);
	for (uint32_t c = 0; c < j->ncoflows; c++) {
		struct loomd_rcoflow *rc = &j->coflows[c];

		loom_hmap_remove_val(&r->by_coflow, rc->id, (uintptr_t)rc);
		for (uint32_t f = 0; f < rc->nflows; f++)
			if (rc->flows[f]->has_tuple)
				loom_hmap_remove_val(&r->by_tuple,
						     wire_tuple_hash(&rc->flows[f]->tuple),
						     (uintptr_t)rc->flows[f]);
		r->nflows -= rc->nflows;
		r->use[j->tenant].flows -= rc->nflows;
	}
	r->ncoflows -= j->ncoflows;
	r->use[j->tenant].coflows -= j->ncoflows;
	r->use[j->tenant].jobs--;
}

/* Makes room in use[] for tenant (zeros for new ones). 0 or -ENOMEM. */
static int use_reserve(struct loomd_registry *r, uint32_t tenant)
{
	struct loomd_tenant_use *v;
	uint32_t n;

	if (tenant < r->nuse)
		return 0;
	n = tenant + 16;
	v = realloc(r->use, n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memset(v + r->nuse, 0, (n - r->nuse) * sizeof(*v));
	r->use = v;
	r->nuse = n;
	return 0;
}

/* Counts j's objects as in the registry (the inverse of job_unmap's counts). */
static void job_count(struct loomd_registry *r, const struct loomd_rjob *j, uint64_t nflows)
{
	r->ncoflows += j->ncoflows;
	r->nflows += nflows;
	r->use[j->tenant].jobs++;
	r->use[j->tenant].coflows += j->ncoflows;
	r->use[j->tenant].flows += nflows;
}

void loomd_registry_tenant_use(const struct loomd_registry *r, uint32_t tenant,
			       struct loomd_tenant_use *ret)
{
	if (tenant < r->nuse)
		*ret = r->use[tenant];
	else
		memset(ret, 0, sizeof(*ret));
}

/* Fills c, a new coflow of j, from cs and its resolved flows. 0 or -ENOMEM (c's flows freed). */
static int coflow_fill(struct loomd_rjob *j, struct loomd_rcoflow *c,
		       const struct loomd_coflow_spec *cs, const struct loomd_flow_spec *resolved)
{
	c->id = cs->id;
	c->job = j;
	c->release_offset_ns = cs->release_offset_ns;
	c->expected_flows = cs->expected_flows ? cs->expected_flows : cs->nflows;
	c->open = c->expected_flows == 0;
	c->done_ns = CP_TIME_NEVER;
	c->view = CP_NONE;
	for (uint32_t f = 0; f < cs->nflows; f++) {
		struct loomd_rflow *fl = flow_new(&resolved[f], c);

		if (!fl || coflow_push_flow(c, fl) < 0) {
			free(fl);
			for (uint32_t g = 0; g < c->nflows; g++)
				free(c->flows[g]);
			free(c->flows);
			c->flows = NULL;
			c->nflows = 0;
			return -ENOMEM;
		}
	}
	return 0;
}

int loomd_registry_add_job(struct loomd_registry *r, const struct loomd_job_spec *spec,
			   uint64_t now_ns, struct loom_err *err)
{
	struct loomd_flow_spec *resolved;
	struct loomd_rjob *j = NULL;
	uint64_t nflows = 0;
	uint32_t k = 0;
	int rc;

	for (uint32_t i = 0; i < spec->ncoflows; i++)
		nflows += spec->coflows[i].nflows;
	resolved = calloc(nflows + 1, sizeof(*resolved));
	if (!resolved)
		return loom_err_set(err, ENOMEM, "out of memory");
	rc = validate_job(r, spec, resolved, err);
	if (rc < 0)
		goto out;
	rc = -ENOMEM;
	if (use_reserve(r, spec->tenant) < 0)
		goto fail;
	if (r->njobs == r->cap_jobs) {
		uint32_t ncap = r->cap_jobs ? r->cap_jobs * 2 : 64;
		struct loomd_rjob **v = realloc(r->jobs, ncap * sizeof(*v));

		if (!v)
			goto fail;
		r->jobs = v;
		r->cap_jobs = ncap;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		goto fail;
	j->id = spec->id;
	j->tenant = spec->tenant;
	snprintf(j->name, sizeof(j->name), "%s", spec->name);
	j->weight = spec->weight;
	see_time(r, now_ns);
	j->arrival_ns = now_ns;
	j->done_ns = CP_TIME_NEVER;
	j->view = CP_NONE;
	j->coflows = calloc(spec->ncoflows, sizeof(*j->coflows));
	j->edges = calloc(spec->nedges + 1, sizeof(*j->edges));
	if (!j->coflows || !j->edges)
		goto fail;
	j->ncoflows = spec->ncoflows;
	j->nedges = spec->nedges;
	memcpy(j->edges, spec->edges, spec->nedges * sizeof(*j->edges));
	for (uint32_t i = 0; i < spec->ncoflows; i++) {
		if (coflow_fill(j, &j->coflows[i], &spec->coflows[i], &resolved[k]) < 0)
			goto fail;
		k += spec->coflows[i].nflows;
	}
	/* Maps last: nothing can fail after the first insert but memory. */
	if (loom_hmap_add_dup(&r->by_job, j->id, (uintptr_t)j) < 0)
		goto fail;
	for (uint32_t i = 0; i < j->ncoflows; i++) {
		struct loomd_rcoflow *c = &j->coflows[i];

		if (loom_hmap_add_dup(&r->by_coflow, c->id, (uintptr_t)c) < 0)
			goto fail_mapped;
		for (uint32_t f = 0; f < c->nflows; f++)
			if (c->flows[f]->has_tuple &&
			    loom_hmap_add_dup(&r->by_tuple, wire_tuple_hash(&c->flows[f]->tuple),
					      (uintptr_t)c->flows[f]) < 0)
				goto fail_mapped;
	}
	job_count(r, j, nflows);
	r->jobs[r->njobs++] = j;
	r->dirty = true;
	rc = 0;
	goto out;
fail_mapped:
	/* removing absent entries is harmless; job_unmap takes back these counts */
	job_count(r, j, nflows);
	job_unmap(r, j);
fail:
	job_free(j);
	loom_err_set(err, ENOMEM, "out of memory");
out:
	free(resolved);
	return rc;
}

/* Whether every coflow of j is done (by the facts or the view): j is finished or about to be. */
static bool job_all_done(const struct loomd_registry *r, const struct loomd_rjob *j)
{
	for (uint32_t c = 0; c < j->ncoflows; c++)
		if (!coflow_done(r, &j->coflows[c]))
			return false;
	return true;
}

/*
 * Checks an extension of j: j not finished, the limits, the new coflows
 * (validate_coflows over j's coflow ids followed by the new ones) and every
 * edge leading to a new coflow. resolved gets the new flows' hosts.
 */
static int validate_extend(const struct loomd_registry *r, const struct loomd_rjob *j,
			   const struct loomd_job_spec *spec, uint64_t nflows,
			   struct loomd_flow_spec *resolved, struct loom_err *err)
{
	struct loomd_job_spec all = *spec;
	struct loomd_coflow_spec *cs;
	int rc;

	if (j->declared_done || j->done_ns != CP_TIME_NEVER || job_all_done(r, j))
		return loom_err_set(
			err, EALREADY,
			"job %llu has finished (all its coflows are done): it cannot be "
			"extended",
			(unsigned long long)j->id);
	if (spec->ncoflows == 0)
		return loom_err_set(err, EINVAL, "job %llu: the extension adds no coflows",
				    (unsigned long long)j->id);
	if (r->ncoflows + spec->ncoflows > r->lim.max_coflows)
		return loom_err_set(err, ENOSPC,
				    "job %llu: %u more coflows would exceed max_coflows (%u)",
				    (unsigned long long)j->id, spec->ncoflows, r->lim.max_coflows);
	if (r->nflows + nflows > r->lim.max_flows)
		return loom_err_set(err, ENOSPC,
				    "job %llu: %llu more flows would exceed max_flows (%u)",
				    (unsigned long long)j->id, (unsigned long long)nflows,
				    r->lim.max_flows);
	cs = calloc((size_t)j->ncoflows + spec->ncoflows, sizeof(*cs));
	if (!cs)
		return loom_err_set(err, ENOMEM, "out of memory");
	for (uint32_t i = 0; i < j->ncoflows; i++)
		cs[i].id = j->coflows[i].id;
	memcpy(cs + j->ncoflows, spec->coflows, spec->ncoflows * sizeof(*cs));
	all.coflows = cs;
	all.ncoflows = j->ncoflows + spec->ncoflows;
	rc = validate_coflows(r, &all, j->ncoflows, nflows, resolved, err);
	for (uint32_t e = 0; rc == 0 && e < spec->nedges; e++)
		if (loomd_registry_coflow(r, spec->edges[e].child))
			rc = loom_err_set(err, EINVAL,
					  "job %llu edge %u: coflow %llu was registered before; an "
					  "extension's edges lead to the coflows it adds",
					  (unsigned long long)j->id, e,
					  (unsigned long long)spec->edges[e].child);
	free(cs);
	return rc;
}

int loomd_registry_extend_job(struct loomd_registry *r, const struct loomd_job_spec *spec,
			      uint64_t now_ns, struct loom_err *err)
{
	struct loomd_rjob *j = loomd_registry_job(r, spec->id);
	struct loomd_flow_spec *resolved = NULL;
	struct loomd_rcoflow *nc = NULL;
	struct loomd_edge_spec *ne = NULL;
	uint64_t nflows = 0, ntuples = 0;
	uint32_t old, k = 0, made = 0;
	int rc;

	if (!j)
		return loom_err_set(err, ENOENT, "job %llu is not registered (nothing to extend)",
				    (unsigned long long)spec->id);
	if (j->tenant != spec->tenant)
		return loom_err_set(err, EACCES, "job %llu belongs to another tenant",
				    (unsigned long long)spec->id);
	for (uint32_t i = 0; i < spec->ncoflows; i++)
		for (uint32_t f = 0; f < spec->coflows[i].nflows; f++, nflows++)
			ntuples += spec->coflows[i].flows[f].has_tuple;
	resolved = calloc(nflows + 1, sizeof(*resolved));
	if (!resolved)
		return loom_err_set(err, ENOMEM, "out of memory");
	rc = validate_extend(r, j, spec, nflows, resolved, err);
	if (rc < 0)
		goto out;
	old = j->ncoflows;
	rc = -ENOMEM;
	nc = calloc((size_t)old + spec->ncoflows, sizeof(*nc));
	ne = calloc((size_t)j->nedges + spec->nedges + 1, sizeof(*ne));
	if (!nc || !ne || loom_hmap_reserve(&r->by_coflow, spec->ncoflows) < 0 ||
	    loom_hmap_reserve(&r->by_tuple, ntuples) < 0)
		goto fail;
	memcpy(nc, j->coflows, old * sizeof(*nc));
	for (; made < spec->ncoflows; made++) {
		if (coflow_fill(j, &nc[old + made], &spec->coflows[made], &resolved[k]) < 0)
			goto fail;
		k += spec->coflows[made].nflows;
	}
	/* Nothing fails from here: the old coflows move to nc, every pointer to them follows. */
	for (uint32_t i = 0; i < old; i++) {
		struct loomd_rcoflow *was = &j->coflows[i], *now = &nc[i];
		size_t pos = loom_hmap_find_val(&r->by_coflow, was->id, (uintptr_t)was);

		r->by_coflow.slot[pos].val = (uintptr_t)now;
		for (uint32_t f = 0; f < now->nflows; f++)
			now->flows[f]->coflow = now;
		if (r->vcoflow && now->view != CP_NONE)
			r->vcoflow[now->view] = now;
	}
	for (uint32_t i = old; i < old + spec->ncoflows; i++) {
		(void)loom_hmap_add_dup(&r->by_coflow, nc[i].id, (uintptr_t)&nc[i]);
		for (uint32_t f = 0; f < nc[i].nflows; f++)
			if (nc[i].flows[f]->has_tuple)
				(void)loom_hmap_add_dup(&r->by_tuple,
							wire_tuple_hash(&nc[i].flows[f]->tuple),
							(uintptr_t)nc[i].flows[f]);
	}
	memcpy(ne, j->edges, j->nedges * sizeof(*ne));
	memcpy(ne + j->nedges, spec->edges, spec->nedges * sizeof(*ne));
	free(j->coflows);
	free(j->edges);
	j->coflows = nc;
	j->edges = ne;
	j->ncoflows = old + spec->ncoflows;
	j->nedges += spec->nedges;
	r->ncoflows += spec->ncoflows;
	r->nflows += nflows;
	r->use[j->tenant].coflows += spec->ncoflows;
	r->use[j->tenant].flows += nflows;
	see_time(r, now_ns);
	r->dirty = true;
	rc = 0;
	goto out;
fail:
	for (uint32_t i = 0; i < made; i++) {
		for (uint32_t f = 0; f < nc[old + i].nflows; f++)
			free(nc[old + i].flows[f]);
		free(nc[old + i].flows);
	}
	free(nc);
	free(ne);
	loom_err_set(err, ENOMEM, "out of memory");
out:
	free(resolved);
	return rc;
}

/* Applies a flow's done fact to the view when its coflow runs there. */
static void view_flow_done(struct loomd_registry *r, struct loomd_rflow *fl)
{
	struct cp_model *m = r->view;

	if (!m || fl->view == CP_NONE || m->flows[fl->view].done)
		return;
	if (m->coflows[m->flows[fl->view].coflow].state == CP_COFLOW_ACTIVE)
		cp_model_flow_done(m, fl->view, fl->done_ns);
}

/*
 * Puts a new flow of coflow c into the current view, in a slot the rebuild
 * reserved, when the view is up to date and has room. Returns whether it did
 * (otherwise the next view is rebuilt).
 */
static double flow_remaining(const struct loomd_registry *r, const struct loomd_rflow *fl);

static bool view_add_flow(struct loomd_registry *r, struct loomd_rcoflow *c, struct loomd_rflow *fl)
{
	struct cp_model *m = r->view;
	uint64_t bytes = fl->bytes ? fl->bytes : r->lim.unknown_flow_bytes;
	uint32_t f;

	if (!m || r->dirty || c->view == CP_NONE)
		return false;
	if (cp_model_add_flow(m, c->view, fl->src, fl->dst, bytes, &f) < 0)
		return false;
	fl->view = f;
	r->vflow[f] = fl;
	m->flows[f].remaining_bytes = flow_remaining(r, fl);
	/* a coflow announced up to its expected flows is closed from now on */
	if (!c->open && c->nflows >= c->expected_flows)
		m->coflows[c->view].open = false;
	return true;
}

int loomd_registry_add_flow(struct loomd_registry *r, uint64_t coflow_id,
			    const struct loomd_flow_spec *f, uint64_t now_ns, struct loom_err *err)
{
	struct loomd_rcoflow *c = loomd_registry_coflow(r, coflow_id);
	struct loomd_flow_spec res;
	struct loomd_rflow *fl;
	char what[64];
	int rc;

	snprintf(what, sizeof(what), "flow of coflow %llu", (unsigned long long)coflow_id);
	if (!c)
		return loom_err_set(err, ENOENT, "%s: no such coflow", what);
	if (!f->has_tuple)
		return loom_err_set(err, EINVAL, "%s: an announced flow needs its 5-tuple", what);
	if (coflow_done(r, c))
		return loom_err_set(err, EALREADY, "%s: the coflow is already done", what);
	if (!c->open && c->nflows >= c->expected_flows)
		return loom_err_set(err, ENOSPC, "%s: the coflow already has its %u expected flows",
				    what, c->expected_flows);
	if (r->nflows >= r->lim.max_flows)
		return loom_err_set(err, ENOSPC, "%s: the controller holds %llu flows (max_flows)",
				    what, (unsigned long long)r->nflows);
	rc = check_flow_spec(r, f, &res, what, err);
	if (rc < 0)
		return rc;
	fl = flow_new(&res, c);
	if (!fl)
		return loom_err_set(err, ENOMEM, "out of memory");
	if (loom_hmap_add_dup(&r->by_tuple, wire_tuple_hash(&fl->tuple), (uintptr_t)fl) < 0) {
		free(fl);
		return loom_err_set(err, ENOMEM, "out of memory");
	}
	if (coflow_push_flow(c, fl) < 0) {
		loom_hmap_remove_val(&r->by_tuple, wire_tuple_hash(&fl->tuple), (uintptr_t)fl);
		free(fl);
		return loom_err_set(err, ENOMEM, "out of memory");
	}
	see_time(r, now_ns);
	r->nflows++;
	r->use[c->job->tenant].flows++;
	if (!view_add_flow(r, c, fl))
		r->dirty = true;
	return 0;
}

int loomd_registry_coflow_done(struct loomd_registry *r, uint64_t coflow_id, uint64_t now_ns,
			       struct loom_err *err)
{
	struct loomd_rcoflow *c = loomd_registry_coflow(r, coflow_id);
	struct cp_model *m = r->view;

	if (!c)
		return loom_err_set(err, ENOENT, "coflow %llu: no such coflow",
				    (unsigned long long)coflow_id);
	if (coflow_done(r, c))
		return loom_err_set(err, EALREADY, "coflow %llu is already done",
				    (unsigned long long)coflow_id);
	see_time(r, now_ns);
	c->declared_done = true;
	c->declared_ns = now_ns;
	if (m && c->view != CP_NONE && m->coflows[c->view].state == CP_COFLOW_ACTIVE)
		cp_model_coflow_finish(m, c->view, now_ns);
	/* otherwise it completes as soon as it is released (a rebuild or release_due) */
	return 0;
}

int loomd_registry_job_done(struct loomd_registry *r, uint64_t job_id, uint64_t now_ns,
			    struct loom_err *err)
{
	struct loomd_rjob *j = loomd_registry_job(r, job_id);

	if (!j)
		return loom_err_set(err, ENOENT, "job %llu: no such job",
				    (unsigned long long)job_id);
	if (j->declared_done || j->done_ns != CP_TIME_NEVER)
		return loom_err_set(err, EALREADY, "job %llu is already done",
				    (unsigned long long)job_id);
	see_time(r, now_ns);
	j->declared_done = true;
	j->declared_ns = now_ns;
	for (uint32_t i = 0; i < j->ncoflows; i++)
		if (!j->coflows[i].declared_done && j->coflows[i].done_ns == CP_TIME_NEVER) {
			j->coflows[i].declared_done = true;
			j->coflows[i].declared_ns = now_ns;
		}
	/* Coflows still waiting for parents are released and finished at once. */
	r->dirty = true;
	return 0;
}

int loomd_registry_unregister(struct loomd_registry *r, uint64_t job_id, struct loom_err *err)
{
	struct loomd_rjob *j = loomd_registry_job(r, job_id);
	uint32_t i;

	if (!j)
		return loom_err_set(err, ENOENT, "job %llu: no such job",
				    (unsigned long long)job_id);
	job_unmap(r, j);
	for (i = 0; i < r->njobs && r->jobs[i] != j; i++)
		;
	memmove(&r->jobs[i], &r->jobs[i + 1], (r->njobs - i - 1) * sizeof(*r->jobs));
	r->njobs--;
	job_free(j);
	r->dirty = true;
	return 0;
}

static double flow_remaining(const struct loomd_registry *r, const struct loomd_rflow *fl)
{
	if (fl->bytes == 0)
		return (double)r->lim.unknown_flow_bytes;
	if (fl->sent_bytes + 1 >= fl->bytes)
		return 1;
	return (double)(fl->bytes - fl->sent_bytes);
}

int loomd_registry_flow_stat(struct loomd_registry *r, const struct wire_tuple *t, uint64_t bytes,
			     bool done, uint64_t now_ns)
{
	struct loomd_rflow *fl = loomd_registry_flow(r, t);
	struct cp_model *m = r->view;

	if (!fl)
		return -ENOENT;
	see_time(r, now_ns);
	fl->sent_bytes += bytes;
	fl->coflow->sent_bytes += bytes;
	fl->coflow->job->sent_bytes += bytes;
	if (m && fl->view != CP_NONE) {
		struct cp_flow *vf = &m->flows[fl->view];
		struct cp_coflow *vc = &m->coflows[vf->coflow];

		/* sent bytes in the view follow the registry exactly, late reports too */
		if (!vf->done)
			vf->remaining_bytes = flow_remaining(r, fl);
		vc->sent_bytes += (double)bytes;
		m->jobs[vc->job].sent_bytes += (double)bytes;
	}
	if (fl->done)
		return -EALREADY;
	if (done) {
		fl->done = true;
		fl->done_ns = now_ns;
		fl->coflow->flows_done++;
		view_flow_done(r, fl);
	}
	return 0;
}

void loomd_registry_counts(const struct loomd_registry *r, struct loomd_registry_counts *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->jobs = r->njobs;
	ret->coflows = r->ncoflows;
	ret->flows = r->nflows;
	for (uint32_t j = 0; j < r->njobs; j++) {
		const struct loomd_rjob *jb = r->jobs[j];

		if (jb->done_ns != CP_TIME_NEVER)
			ret->jobs_done++;
		for (uint32_t c = 0; c < jb->ncoflows; c++) {
			const struct loomd_rcoflow *rc = &jb->coflows[c];
			enum cp_coflow_state st = loomd_registry_coflow_state(r, rc);

			if (st == CP_COFLOW_DONE)
				ret->coflows_done++;
			else if (st == CP_COFLOW_ACTIVE)
				ret->coflows_active++;
			ret->flows_done += rc->flows_done;
		}
	}
}

/* ---- the view --------------------------------------------------------------------------------- */

static void rel_push(struct loomd_registry *r, uint32_t c);

static void on_view_event(void *ctx, const struct cp_event *ev)
{
	struct loomd_registry *r = ctx;

	switch (ev->type) {
	case CP_EV_COFLOW_DONE:
		r->vcoflow[ev->id]->done_ns = ev->time_ns;
		r->vcoflow[ev->id]->job->coflows_done++;
		break;
	case CP_EV_JOB_DONE:
		r->vjob[ev->id]->done_ns = ev->time_ns;
		break;
	case CP_EV_COFLOW_READY:
		rel_push(r, ev->id);
		break;
	default:
		break;
	}
	if (r->replaying)
		return;
	if (r->nevents == r->cap_events) {
		uint32_t ncap = r->cap_events ? r->cap_events * 2 : 256;
		struct cp_event *v = realloc(r->events, ncap * sizeof(*v));

		if (!v) {
			r->emit_err = -ENOMEM;
			return;
		}
		r->events = v;
		r->cap_events = ncap;
	}
	r->events[r->nevents++] = *ev;
}

const struct cp_event *loomd_registry_events(struct loomd_registry *r, uint32_t *ret_n)
{
	*ret_n = r->nevents;
	return r->events;
}

void loomd_registry_events_clear(struct loomd_registry *r)
{
	r->nevents = 0;
}

/* ---- releases: a heap of READY coflows by release time --------------------------------------- */

/* When READY view coflow c is released: its ready time, or its job's declared end if earlier. */
static uint64_t release_key(const struct loomd_registry *r, uint32_t c)
{
	const struct cp_coflow *cf = &r->view->coflows[c];
	const struct loomd_rjob *j = r->vcoflow[c]->job;

	if (j->declared_done && j->declared_ns < cf->ready_ns)
		return j->declared_ns;
	return cf->ready_ns;
}

static bool rel_less(const struct loomd_registry *r, uint32_t a, uint32_t b)
{
	uint64_t ka = r->ready_key[a], kb = r->ready_key[b];

	return ka != kb ? ka < kb : a < b;
}

LOOM_HEAP_DEFINE(ready_heap, uint32_t, const struct loomd_registry *, rel_less, LOOM_HEAP_NO_MOVED)

static void rel_push(struct loomd_registry *r, uint32_t c)
{
	r->ready_key[c] = release_key(r, c);
	ready_heap_push(r, r->ready, &r->nready, c);
}

static int cmp_done_ns(const void *a, const void *b)
{
	const struct loomd_rflow *x = *(struct loomd_rflow *const *)a,
				 *y = *(struct loomd_rflow *const *)b;

	return x->done_ns < y->done_ns ? -1 : x->done_ns > y->done_ns;
}

/*
 * Just after view coflow c's release: the facts of it dated up to upto_ns
 * (its flows done, in time order, then its declared end), each at its own
 * time or the release time if later. Later facts are the caller's.
 */
static void apply_coflow_facts(struct loomd_registry *r, uint32_t c, uint64_t upto_ns)
{
	struct cp_model *m = r->view;
	struct loomd_rcoflow *rc = r->vcoflow[c];
	struct loomd_rflow *stack_buf[64];
	struct loomd_rflow **done = stack_buf;
	uint64_t rel = m->coflows[c].release_ns;
	uint32_t n = 0;

	if (rc->flows_done > 64) {
		done = malloc(rc->flows_done * sizeof(*done));
		if (!done) {
			r->emit_err = -ENOMEM;
			return;
		}
	}
	for (uint32_t f = 0; f < rc->nflows && n < rc->flows_done; f++)
		if (rc->flows[f]->done && rc->flows[f]->done_ns <= upto_ns)
			done[n++] = rc->flows[f];
	qsort(done, n, sizeof(*done), cmp_done_ns);
	for (uint32_t i = 0; i < n && m->coflows[c].state == CP_COFLOW_ACTIVE; i++)
		if (!m->flows[done[i]->view].done)
			cp_model_flow_done(m, done[i]->view,
					   done[i]->done_ns > rel ? done[i]->done_ns : rel);
	if (done != stack_buf)
		free(done);
	if (rc->declared_done && rc->declared_ns <= upto_ns &&
	    m->coflows[c].state == CP_COFLOW_ACTIVE)
		cp_model_coflow_finish(m, c, rc->declared_ns > rel ? rc->declared_ns : rel);
}

/*
 * Releases, in time order, the READY coflows due by now_ns (a coflow of a
 * job declared done is due at the declaration), applying their facts up to
 * upto_ns; releases cause completions that make more coflows READY, which
 * are taken too. Returns how many; the next release time in *next.
 */
static uint32_t drain_ready(struct loomd_registry *r, uint64_t now_ns, uint64_t upto_ns,
			    uint64_t *next)
{
	struct cp_model *m = r->view;
	uint32_t released = 0;

	while (r->nready && r->ready_key[r->ready[0]] <= now_ns) {
		uint32_t c = ready_heap_pop(r, r->ready, &r->nready);
		uint64_t t = r->ready_key[c];

		if (m->coflows[c].state != CP_COFLOW_READY)
			continue;
		cp_model_coflow_release(m, c, t);
		apply_coflow_facts(r, c, upto_ns < t ? t : upto_ns);
		released++;
	}
	if (next)
		*next = r->nready ? r->ready_key[r->ready[0]] : CP_TIME_NEVER;
	return released;
}

/* One dated fact, for the replay after a rebuild. */
struct fact {
	uint64_t t_ns;
	struct loomd_rflow *flow;     /* a flow done, or */
	struct loomd_rcoflow *coflow; /* a coflow declared done */
};

static int cmp_fact(const void *a, const void *b)
{
	const struct fact *x = a, *y = b;

	if (x->t_ns != y->t_ns)
		return x->t_ns < y->t_ns ? -1 : 1;
	/* flows before declarations at the same time, then a stable order */
	if (!x->flow != !y->flow)
		return x->flow ? -1 : 1;
	return x->flow ? (x->flow->view > y->flow->view) - (x->flow->view < y->flow->view) :
			 (x->coflow->view > y->coflow->view) - (x->coflow->view < y->coflow->view);
}

/*
 * Replays every fact through the fresh view in time order, interleaved with
 * the releases they cause, so that completion times (and the job's) are
 * those of the facts however they were reported.
 */
static int replay_facts(struct loomd_registry *r)
{
	struct cp_model *m = r->view;
	struct fact *facts;
	size_t n = 0, cap = 1;
	uint64_t next;

	for (uint32_t c = 0; c < m->ncoflows; c++)
		cap += r->vcoflow[c]->flows_done + 1;
	facts = malloc(cap * sizeof(*facts));
	if (!facts)
		return -ENOMEM;
	for (uint32_t c = 0; c < m->ncoflows; c++) {
		struct loomd_rcoflow *rc = r->vcoflow[c];

		for (uint32_t f = 0; f < rc->nflows; f++)
			if (rc->flows[f]->done)
				facts[n++] =
					(struct fact){rc->flows[f]->done_ns, rc->flows[f], NULL};
		if (rc->declared_done)
			facts[n++] = (struct fact){rc->declared_ns, NULL, rc};
	}
	qsort(facts, n, sizeof(*facts), cmp_fact);
	for (size_t i = 0; i < n; i++) {
		const struct fact *f = &facts[i];
		uint32_t c = f->flow ? f->flow->coflow->view : f->coflow->view;

		/* releases due before this fact come first; they apply what they can */
		drain_ready(r, f->t_ns < r->now_ns ? f->t_ns : r->now_ns, f->t_ns, NULL);
		if (m->coflows[c].state != CP_COFLOW_ACTIVE)
			continue; /* not released yet: applied at its release; or done already */
		if (f->flow && !m->flows[f->flow->view].done)
			cp_model_flow_done(m, f->flow->view, f->t_ns);
		else if (!f->flow)
			cp_model_coflow_finish(m, c, f->t_ns);
	}
	free(facts);
	drain_ready(r, r->now_ns, CP_TIME_NEVER, &next);
	return 0;
}

/*
 * Flow slots open or still-filling coflow c gets in a rebuilt view: room to
 * announce flows without a rebuild, double what it has, never more than it
 * expects (a coflow expecting millions of flows reserves as it fills, not at
 * once), and at least LOOMD_MIN_FLOW_SLOTS.
 */
static uint32_t view_flow_slots(const struct loomd_rcoflow *c)
{
	uint32_t cap = 2 * c->nflows;

	if (!c->open && c->expected_flows < cap)
		cap = c->expected_flows;
	return cap < LOOMD_MIN_FLOW_SLOTS ? LOOMD_MIN_FLOW_SLOTS : cap;
}

/* Adds coflow c of job jb to b: the coflow, its reserved slots, its flows. */
static int view_build_coflow(const struct loomd_registry *r, struct cp_builder *b,
			     const struct loomd_rjob *jb, const struct loomd_rcoflow *c,
			     struct loom_err *err)
{
	int rc = cp_builder_add_coflow(b, c->id, jb->id, c->release_offset_ns, err);

	if (rc == 0 && (c->open || c->nflows < c->expected_flows)) {
		rc = cp_builder_set_coflow_open(b, c->id, true, err);
		if (rc == 0)
			rc = cp_builder_set_coflow_capacity(b, c->id, view_flow_slots(c), err);
	}
	for (uint32_t f = 0; f < c->nflows && rc == 0; f++) {
		const struct loomd_rflow *fl = c->flows[f];
		uint64_t bytes = fl->bytes ? fl->bytes : fl->sent_bytes + r->lim.unknown_flow_bytes;

		rc = cp_builder_add_flow(b, c->id, fl->src, fl->dst, bytes ? bytes : 1, err);
	}
	return rc;
}

/* Adds job jb to b: the job, its coflows, its edges. */
static int view_build_job(const struct loomd_registry *r, struct cp_builder *b,
			  const struct loomd_rjob *jb, struct loom_err *err)
{
	int rc = cp_builder_add_job(b, jb->id, jb->arrival_ns, jb->weight, err);

	for (uint32_t c = 0; c < jb->ncoflows && rc == 0; c++)
		rc = view_build_coflow(r, b, jb, &jb->coflows[c], err);
	for (uint32_t e = 0; e < jb->nedges && rc == 0; e++)
		rc = cp_builder_add_edge(b, jb->edges[e].parent, jb->edges[e].child,
					 jb->edges[e].delay_ns, err);
	return rc;
}

/* A fresh model of every registered job, bound to the fabric: *ret_m, the caller's to free. */
static int view_build(const struct loomd_registry *r, struct cp_model **ret_m, struct loom_err *err)
{
	struct cp_builder *b = cp_builder_new(r->topo->nhosts);
	struct cp_model *m;
	int rc = 0;

	if (!b)
		return loom_err_set(err, ENOMEM, "out of memory");
	for (uint32_t j = 0; j < r->njobs && rc == 0; j++)
		rc = view_build_job(r, b, r->jobs[j], err);
	if (rc < 0) {
		cp_builder_free(b);
		return rc;
	}
	m = cp_builder_finish(b, err);
	if (!m)
		return -errno;
	rc = cp_model_bind(m, r->topo);
	if (rc < 0) {
		cp_model_free(m);
		return loom_err_set(err, -rc, "the view does not fit the fabric");
	}
	*ret_m = m;
	return 0;
}

/* Drops the view and marks it for a rebuild; returns -ENOMEM with err filled. */
static int view_oom(struct loomd_registry *r, struct loom_err *err)
{
	view_drop(r);
	r->dirty = true;
	return loom_err_set(err, ENOMEM, "out of memory");
}

/* Replaces the view with m (taking it), its index maps and release heap sized to it. */
static int view_install(struct loomd_registry *r, struct cp_model *m, struct loom_err *err)
{
	view_drop(r);
	r->view = m;
	r->vjob = calloc(m->njobs + 1, sizeof(*r->vjob));
	r->vcoflow = calloc(m->ncoflows + 1, sizeof(*r->vcoflow));
	r->vflow = calloc(m->nflows + 1, sizeof(*r->vflow));
	r->ready = calloc(m->ncoflows + 1, sizeof(*r->ready));
	r->ready_key = calloc(m->ncoflows + 1, sizeof(*r->ready_key));
	if (!r->vjob || !r->vcoflow || !r->vflow || !r->ready || !r->ready_key)
		return view_oom(r, err);
	return 0;
}

/*
 * Fills the index maps both ways (the model keeps coflows and flows in input
 * order within their owner) and clears the completions the replay sets again.
 */
static void view_map_objects(struct loomd_registry *r)
{
	struct cp_model *m = r->view;

	for (uint32_t j = 0; j < m->njobs; j++) {
		struct loomd_rjob *jb = loomd_registry_job(r, m->jobs[j].ext_id);

		jb->view = j;
		jb->done_ns = CP_TIME_NEVER;
		jb->coflows_done = 0;
		r->vjob[j] = jb;
		for (uint32_t k = 0; k < jb->ncoflows; k++) {
			uint32_t c = m->jobs[j].first_coflow + k;
			struct loomd_rcoflow *rc = &jb->coflows[k];

			rc->view = c;
			rc->done_ns = CP_TIME_NEVER;
			r->vcoflow[c] = rc;
			for (uint32_t f = 0; f < rc->nflows; f++) {
				rc->flows[f]->view = m->coflows[c].first_flow + f;
				r->vflow[m->coflows[c].first_flow + f] = rc->flows[f];
			}
		}
	}
}

/* Replays arrivals and facts through the model's transitions, recording no events. */
static int view_replay(struct loomd_registry *r)
{
	struct cp_model *m = r->view;
	int rc;

	cp_model_reset(m);
	cp_model_set_emit(m, on_view_event, r);
	r->replaying = true;
	r->nready = 0;
	for (uint32_t j = 0; j < m->njobs; j++)
		cp_model_job_arrive(m, j, m->jobs[j].arrival_ns);
	rc = replay_facts(r);
	r->replaying = false;
	return rc;
}

/* Carries the bytes sent into the view: coflow and job totals, flows' remaining bytes. */
static void view_apply_sent(struct loomd_registry *r)
{
	struct cp_model *m = r->view;

	for (uint32_t f = 0; f < m->nflows; f++) {
		const struct loomd_rflow *fl = r->vflow[f];
		struct cp_flow *vf = &m->flows[f];

		if (!fl)
			continue; /* a reserved slot */
		m->coflows[vf->coflow].sent_bytes += (double)fl->sent_bytes;
		m->jobs[m->coflows[vf->coflow].job].sent_bytes += (double)fl->sent_bytes;
		if (!vf->done)
			vf->remaining_bytes = flow_remaining(r, fl);
	}
}

static int view_rebuild(struct loomd_registry *r, struct loom_err *err)
{
	struct cp_model *m = NULL;
	int rc;

	rc = view_build(r, &m, err);
	if (rc < 0)
		return rc;
	rc = view_install(r, m, err);
	if (rc < 0)
		return rc;
	view_map_objects(r);
	if (view_replay(r) < 0)
		return view_oom(r, err);
	view_apply_sent(r);
	r->dirty = false;
	if (r->emit_err) {
		rc = r->emit_err;
		r->emit_err = 0;
		r->dirty = true;
		return loom_err_set(err, -rc, "out of memory");
	}
	return 0;
}

struct cp_model *loomd_registry_view(struct loomd_registry *r, bool *ret_rebuilt,
				     struct loom_err *err)
{
	bool rebuilt = false;

	if (r->dirty || !r->view) {
		int rc = view_rebuild(r, err);

		if (rc < 0) {
			errno = -rc;
			return NULL;
		}
		rebuilt = true;
	}
	if (ret_rebuilt)
		*ret_rebuilt = rebuilt;
	return r->view;
}

struct loomd_rcoflow *loomd_registry_view_coflow(const struct loomd_registry *r, uint32_t c)
{
	return r->vcoflow[c];
}

struct loomd_rflow *loomd_registry_view_flow(const struct loomd_registry *r, uint32_t f)
{
	return r->vflow[f];
}

uint32_t loomd_registry_release_due(struct loomd_registry *r, uint64_t now_ns,
				    uint64_t *ret_next_ns)
{
	uint64_t next = CP_TIME_NEVER;
	uint32_t n = 0;

	see_time(r, now_ns);
	if (r->view && !r->dirty)
		n = drain_ready(r, now_ns, CP_TIME_NEVER, &next);
	if (ret_next_ns)
		*ret_next_ns = next;
	return n;
}

uint32_t loomd_registry_expire(struct loomd_registry *r, uint64_t cutoff_ns, uint64_t *ret_ids,
			       uint32_t cap)
{
	uint32_t n = 0, w = 0;

	for (uint32_t j = 0; j < r->njobs; j++) {
		struct loomd_rjob *jb = r->jobs[j];

		if (jb->done_ns != CP_TIME_NEVER && jb->done_ns < cutoff_ns && n < cap) {
			ret_ids[n++] = jb->id;
			job_unmap(r, jb);
			job_free(jb);
			r->dirty = true;
			continue;
		}
		r->jobs[w++] = jb;
	}
	r->njobs = w;
	return n;
}
