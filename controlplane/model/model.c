/* SPDX-License-Identifier: BSD-3-Clause */
#include "controlplane/model/model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/dag.h"
#include "common/grow.h"
#include "common/hmap.h"

/* ---- external id -> index (common/hmap) ------------------------------- */

/* Returns the index stored for id in m, or CP_NONE. */
static uint32_t id_index(const struct loom_hmap *m, uint64_t id)
{
	uint64_t v;

	return loom_hmap_get(m, id, &v) ? (uint32_t)v : CP_NONE;
}

/* ---- the builder -------------------------------------------------------- */

struct b_job {
	uint64_t ext_id, arrival_ns;
	double weight;
};

struct b_coflow {
	uint64_t ext_id, offset_ns;
	uint32_t job; /* builder job index */
	bool open;
	uint32_t cap; /* flow slots to reserve (0: its flows) */
};

struct b_flow {
	uint32_t coflow; /* builder coflow index */
	uint32_t src, dst;
	uint64_t bytes;
};

struct cp_builder {
	uint32_t nhosts;
	struct b_job *jobs;
	struct b_coflow *coflows;
	struct b_flow *flows;
	struct cp_edge *edges; /* builder coflow indices */
	uint32_t njobs, ncoflows, nflows, nedges;
	size_t cap_jobs, cap_coflows, cap_flows, cap_edges;
	struct loom_hmap job_ids, coflow_ids; /* external id -> index */
};

/*
 * Grows *arr (element size sz) to hold n + 1 elements (loom_grow(), from 16);
 * the builder's indices are uint32_t, so a full array of 2^31 or more refuses.
 */
static int grow(void **arr, size_t *cap, uint32_t n, size_t sz)
{
	if (n >= *cap && n >= UINT32_MAX / 2)
		return -ENOMEM;
	return loom_grow(arr, cap, (size_t)n + 1, sz, 16);
}

struct cp_builder *cp_builder_new(uint32_t nhosts)
{
	struct cp_builder *b;

	if (nhosts == 0 || nhosts > TOPO_MAX_HOSTS) {
		errno = EINVAL;
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->nhosts = nhosts;
	return b;
}

struct cp_builder *cp_builder_free(struct cp_builder *b)
{
	if (!b)
		return NULL;
	free(b->jobs);
	free(b->coflows);
	free(b->flows);
	free(b->edges);
	loom_hmap_done(&b->job_ids);
	loom_hmap_done(&b->coflow_ids);
	free(b);
	return NULL;
}

uint32_t cp_builder_ncoflows(const struct cp_builder *b)
{
	return b->ncoflows;
}

int cp_builder_add_job(struct cp_builder *b, uint64_t job_id, uint64_t arrival_ns, double weight,
		       struct loom_err *err)
{
	int r;

	if (!(weight > 0) || !isfinite(weight))
		return loom_err_set(err, EINVAL, "job %llu: weight must be a positive number",
				    (unsigned long long)job_id);
	if (grow((void **)&b->jobs, &b->cap_jobs, b->njobs, sizeof(*b->jobs)) < 0)
		return loom_err_set(err, ENOMEM, "out of memory");
	r = loom_hmap_add(&b->job_ids, job_id, b->njobs);
	if (r == -EEXIST)
		return loom_err_set(err, EEXIST, "duplicate job id %llu",
				    (unsigned long long)job_id);
	if (r < 0)
		return loom_err_set(err, -r, "out of memory");
	b->jobs[b->njobs++] = (struct b_job){job_id, arrival_ns, weight};
	return 0;
}

int cp_builder_add_coflow(struct cp_builder *b, uint64_t coflow_id, uint64_t job_id,
			  uint64_t release_offset_ns, struct loom_err *err)
{
	uint32_t j = id_index(&b->job_ids, job_id);
	int r;

	if (j == CP_NONE)
		return loom_err_set(err, ENOENT, "coflow %llu: unknown job id %llu",
				    (unsigned long long)coflow_id, (unsigned long long)job_id);
	if (grow((void **)&b->coflows, &b->cap_coflows, b->ncoflows, sizeof(*b->coflows)) < 0)
		return loom_err_set(err, ENOMEM, "out of memory");
	r = loom_hmap_add(&b->coflow_ids, coflow_id, b->ncoflows);
	if (r == -EEXIST)
		return loom_err_set(err, EEXIST, "duplicate coflow id %llu",
				    (unsigned long long)coflow_id);
	if (r < 0)
		return loom_err_set(err, -r, "out of memory");
	b->coflows[b->ncoflows++] = (struct b_coflow){coflow_id, release_offset_ns, j, false, 0};
	return 0;
}

int cp_builder_set_coflow_capacity(struct cp_builder *b, uint64_t coflow_id, uint32_t cap,
				   struct loom_err *err)
{
	uint32_t c = id_index(&b->coflow_ids, coflow_id);

	if (c == CP_NONE)
		return loom_err_set(err, ENOENT, "unknown coflow id %llu",
				    (unsigned long long)coflow_id);
	b->coflows[c].cap = cap;
	return 0;
}

int cp_builder_set_coflow_open(struct cp_builder *b, uint64_t coflow_id, bool open,
			       struct loom_err *err)
{
	uint32_t c = id_index(&b->coflow_ids, coflow_id);

	if (c == CP_NONE)
		return loom_err_set(err, ENOENT, "unknown coflow id %llu",
				    (unsigned long long)coflow_id);
	b->coflows[c].open = open;
	return 0;
}

int cp_builder_add_flow(struct cp_builder *b, uint64_t coflow_id, uint32_t src, uint32_t dst,
			uint64_t bytes, struct loom_err *err)
{
	uint32_t c = id_index(&b->coflow_ids, coflow_id);

	if (c == CP_NONE)
		return loom_err_set(err, ENOENT, "flow: unknown coflow id %llu",
				    (unsigned long long)coflow_id);
	if (src >= b->nhosts || dst >= b->nhosts)
		return loom_err_set(err, EINVAL, "flow of coflow %llu: host %u >= host count %u",
				    (unsigned long long)coflow_id, src >= b->nhosts ? src : dst,
				    b->nhosts);
	if (bytes == 0)
		return loom_err_set(err, EINVAL, "flow of coflow %llu: size must be > 0",
				    (unsigned long long)coflow_id);
	if (b->nflows == UINT32_MAX - 1 ||
	    grow((void **)&b->flows, &b->cap_flows, b->nflows, sizeof(*b->flows)) < 0)
		return loom_err_set(err, ENOMEM, "out of memory");
	b->flows[b->nflows++] = (struct b_flow){c, src, dst, bytes};
	return 0;
}

int cp_builder_add_edge(struct cp_builder *b, uint64_t parent_coflow_id, uint64_t child_coflow_id,
			uint64_t delay_ns, struct loom_err *err)
{
	uint32_t p = id_index(&b->coflow_ids, parent_coflow_id);
	uint32_t c = id_index(&b->coflow_ids, child_coflow_id);

	if (p == CP_NONE || c == CP_NONE)
		return loom_err_set(
			err, ENOENT, "edge %llu->%llu: unknown coflow id %llu",
			(unsigned long long)parent_coflow_id, (unsigned long long)child_coflow_id,
			(unsigned long long)(p == CP_NONE ? parent_coflow_id : child_coflow_id));
	if (p == c)
		return loom_err_set(err, EINVAL,
				    "edge %llu->%llu: a coflow cannot depend on itself",
				    (unsigned long long)parent_coflow_id,
				    (unsigned long long)child_coflow_id);
	if (b->coflows[p].job != b->coflows[c].job)
		return loom_err_set(err, EINVAL,
				    "edge %llu->%llu: coflows belong to different jobs",
				    (unsigned long long)parent_coflow_id,
				    (unsigned long long)child_coflow_id);
	if (grow((void **)&b->edges, &b->cap_edges, b->nedges, sizeof(*b->edges)) < 0)
		return loom_err_set(err, ENOMEM, "out of memory");
	b->edges[b->nedges++] = (struct cp_edge){p, c, delay_ns};
	return 0;
}

/* ---- finishing: validate and lay out flat -------------------------------- */

static int cmp_job_idx(const void *a, const void *b, void *ctx)
{
	const struct b_job *jobs = ctx;
	const struct b_job *x = &jobs[*(const uint32_t *)a];
	const struct b_job *y = &jobs[*(const uint32_t *)b];

	if (x->arrival_ns != y->arrival_ns)
		return x->arrival_ns < y->arrival_ns ? -1 : 1;
	if (x->ext_id != y->ext_id)
		return x->ext_id < y->ext_id ? -1 : 1;
	return 0;
}

static int cmp_edge(const void *a, const void *b)
{
	const struct cp_edge *x = a, *y = b;

	if (x->child != y->child)
		return x->child < y->child ? -1 : 1;
	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	return 0;
}

static int model_alloc(struct cp_model *m)
{
	m->jobs = calloc(m->njobs ? m->njobs : 1, sizeof(*m->jobs));
	m->coflows = calloc(m->ncoflows ? m->ncoflows : 1, sizeof(*m->coflows));
	m->flows = calloc(m->nflows ? m->nflows : 1, sizeof(*m->flows));
	m->edges = calloc(m->nedges ? m->nedges : 1, sizeof(*m->edges));
	m->child_edge = calloc(m->nedges ? m->nedges : 1, sizeof(*m->child_edge));
	m->flow_slot = calloc(m->nflows ? m->nflows : 1, sizeof(*m->flow_slot));
	m->active = calloc(m->ncoflows ? m->ncoflows : 1, sizeof(*m->active));
	if (!m->jobs || !m->coflows || !m->flows || !m->edges || !m->child_edge || !m->flow_slot ||
	    !m->active)
		return -ENOMEM;
	return 0;
}

uint32_t cp_coflow_child(const void *ctx, uint32_t c, uint32_t i)
{
	const struct cp_model *m = ctx;
	const struct cp_coflow *cf = &m->coflows[c];

	return i < cf->nchildren ? m->edges[m->child_edge[cf->first_child + i]].child :
				   LOOM_DAG_NONE;
}

/* Scratch of one cp_builder_finish(): index maps and the counting sorts' cursor. */
struct finish_tmp {
	uint32_t *job_perm; /* model job -> builder job */
	uint32_t *job_new;  /* builder job -> model job */
	uint32_t *cf_new;   /* builder coflow -> model coflow */
	uint32_t *cursor;   /* next slot of each group */
};

/* Allocates all of t (each NULL on failure); -ENOMEM if any failed. */
static int finish_tmp_alloc(struct finish_tmp *t, const struct cp_builder *b)
{
	t->job_perm = malloc((size_t)b->njobs * sizeof(*t->job_perm));
	t->job_new = malloc((size_t)b->njobs * sizeof(*t->job_new));
	t->cf_new = malloc((size_t)(b->ncoflows ? b->ncoflows : 1) * sizeof(*t->cf_new));
	t->cursor = calloc((size_t)(b->ncoflows > b->njobs ? b->ncoflows : b->njobs) + 1,
			   sizeof(*t->cursor));
	if (!t->job_perm || !t->job_new || !t->cf_new || !t->cursor)
		return -ENOMEM;
	return 0;
}

static void finish_tmp_done(struct finish_tmp *t)
{
	free(t->job_perm);
	free(t->job_new);
	free(t->cf_new);
	free(t->cursor);
}

/* Sets m's counts from b's; flows include the slots reserved for cp_model_add_flow(). */
static int model_size(struct cp_model *m, const struct cp_builder *b)
{
	uint32_t *count;

	m->nhosts = b->nhosts;
	m->njobs = b->njobs;
	m->ncoflows = b->ncoflows;
	m->nflows = b->nflows;
	m->nedges = b->nedges;
	count = calloc((size_t)b->ncoflows + 1, sizeof(*count));
	if (!count)
		return -ENOMEM;
	for (uint32_t f = 0; f < b->nflows; f++)
		count[b->flows[f].coflow]++;
	for (uint32_t c = 0; c < b->ncoflows; c++)
		if (b->coflows[c].cap > count[c])
			m->nflows += b->coflows[c].cap - count[c];
	free(count);
	return 0;
}

/* Jobs by (arrival, id). */
static void lay_out_jobs(struct cp_model *m, const struct cp_builder *b, struct finish_tmp *t)
{
	for (uint32_t i = 0; i < b->njobs; i++)
		t->job_perm[i] = i;
	qsort_r(t->job_perm, b->njobs, sizeof(*t->job_perm), cmp_job_idx, b->jobs);
	for (uint32_t i = 0; i < b->njobs; i++) {
		const struct b_job *bj = &b->jobs[t->job_perm[i]];

		t->job_new[t->job_perm[i]] = i;
		m->jobs[i].ext_id = bj->ext_id;
		m->jobs[i].arrival_ns = bj->arrival_ns;
		m->jobs[i].weight = bj->weight;
	}
}

/* Coflows grouped by job (stable counting sort); -EINVAL for a job without coflows. */
static int lay_out_coflows(struct cp_model *m, const struct cp_builder *b, struct finish_tmp *t,
			   struct loom_err *err)
{
	for (uint32_t c = 0; c < b->ncoflows; c++)
		m->jobs[t->job_new[b->coflows[c].job]].ncoflows++;
	for (uint32_t j = 0, off = 0; j < m->njobs; j++) {
		if (m->jobs[j].ncoflows == 0)
			return loom_err_set(err, EINVAL, "job %llu has no coflows",
					    (unsigned long long)m->jobs[j].ext_id);
		m->jobs[j].first_coflow = off;
		t->cursor[j] = off;
		off += m->jobs[j].ncoflows;
	}
	for (uint32_t c = 0; c < b->ncoflows; c++) {
		uint32_t j = t->job_new[b->coflows[c].job];
		uint32_t nc = t->cursor[j]++;
		struct cp_coflow *cf = &m->coflows[nc];

		t->cf_new[c] = nc;
		cf->ext_id = b->coflows[c].ext_id;
		cf->job = j;
		cf->release_offset_ns = b->coflows[c].offset_ns;
		cf->open = b->coflows[c].open;
	}
	return 0;
}

/* Flows grouped by coflow, each coflow's reserved slots after its flows; byte totals. */
static void lay_out_flows(struct cp_model *m, const struct cp_builder *b, struct finish_tmp *t)
{
	memset(t->cursor, 0, (size_t)(m->ncoflows + 1) * sizeof(*t->cursor));
	for (uint32_t f = 0; f < b->nflows; f++)
		m->coflows[t->cf_new[b->flows[f].coflow]].nflows++;
	for (uint32_t c = 0; c < b->ncoflows; c++)
		m->coflows[t->cf_new[c]].flow_cap = b->coflows[c].cap;
	for (uint32_t c = 0, off = 0; c < m->ncoflows; c++) {
		struct cp_coflow *cf = &m->coflows[c];

		if (cf->flow_cap < cf->nflows)
			cf->flow_cap = cf->nflows;
		cf->first_flow = off;
		t->cursor[c] = off;
		/* reserved slots are flows of no coflow until cp_model_add_flow fills them */
		for (uint32_t f = off + cf->nflows; f < off + cf->flow_cap; f++)
			m->flows[f].coflow = CP_NONE;
		off += cf->flow_cap;
	}
	for (uint32_t f = 0; f < b->nflows; f++) {
		uint32_t c = t->cf_new[b->flows[f].coflow];
		struct cp_flow *fl = &m->flows[t->cursor[c]++];
		struct cp_coflow *cf = &m->coflows[c];

		fl->coflow = c;
		fl->src = b->flows[f].src;
		fl->dst = b->flows[f].dst;
		fl->bytes = b->flows[f].bytes;
		cf->total_bytes += fl->bytes;
		if (fl->bytes > cf->max_flow_bytes)
			cf->max_flow_bytes = fl->bytes;
		m->jobs[cf->job].total_bytes += fl->bytes;
	}
}

/* Edges sorted by child, child_edge grouped by parent; -EEXIST for a duplicate edge. */
static int lay_out_edges(struct cp_model *m, const struct cp_builder *b, struct finish_tmp *t,
			 struct loom_err *err)
{
	for (uint32_t e = 0; e < b->nedges; e++) {
		m->edges[e].parent = t->cf_new[b->edges[e].parent];
		m->edges[e].child = t->cf_new[b->edges[e].child];
		m->edges[e].delay_ns = b->edges[e].delay_ns;
	}
	qsort(m->edges, m->nedges, sizeof(*m->edges), cmp_edge);
	for (uint32_t e = 0; e < m->nedges; e++) {
		struct cp_edge *ed = &m->edges[e];

		if (e > 0 && ed->child == m->edges[e - 1].child &&
		    ed->parent == m->edges[e - 1].parent)
			return loom_err_set(err, EEXIST, "duplicate edge %llu->%llu",
					    (unsigned long long)m->coflows[ed->parent].ext_id,
					    (unsigned long long)m->coflows[ed->child].ext_id);
		if (m->coflows[ed->child].nparents++ == 0)
			m->coflows[ed->child].first_parent = e;
		m->coflows[ed->parent].nchildren++;
	}
	for (uint32_t c = 0, off = 0; c < m->ncoflows; c++) {
		m->coflows[c].first_child = off;
		t->cursor[c] = off;
		off += m->coflows[c].nchildren;
	}
	for (uint32_t e = 0; e < m->nedges; e++)
		m->child_edge[t->cursor[m->edges[e].parent]++] = e;
	return 0;
}

/* 0 if m's coflow DAG has no cycle; -EINVAL naming a coflow on one, or -ENOMEM. */
static int check_acyclic(const struct cp_model *m, struct loom_err *err)
{
	uint32_t cyc;
	int r;

	r = loom_dag_order(&(struct loom_dag){m->ncoflows, cp_coflow_child, m}, NULL, NULL, &cyc);
	if (r < 0)
		return loom_err_set(err, ENOMEM, "out of memory");
	if (r > 0)
		return loom_err_set(err, EINVAL,
				    "cyclic DAG: coflow %llu of job %llu depends on itself",
				    (unsigned long long)m->coflows[cyc].ext_id,
				    (unsigned long long)m->jobs[m->coflows[cyc].job].ext_id);
	return 0;
}

struct cp_model *cp_builder_finish(struct cp_builder *b, struct loom_err *err)
{
	struct finish_tmp t = {0};
	struct cp_model *m = NULL;
	int r;

	if (b->njobs == 0) {
		r = loom_err_set(err, EINVAL, "no jobs");
		goto out;
	}
	m = calloc(1, sizeof(*m));
	r = finish_tmp_alloc(&t, b);
	if (!m || r < 0 || model_size(m, b) < 0 || model_alloc(m) < 0) {
		r = loom_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	lay_out_jobs(m, b, &t);
	r = lay_out_coflows(m, b, &t, err);
	if (r < 0)
		goto out;
	lay_out_flows(m, b, &t);
	r = lay_out_edges(m, b, &t, err);
	if (r < 0)
		goto out;
	r = check_acyclic(m, err);
	if (r < 0)
		goto out;
	cp_model_reset(m);
out:
	finish_tmp_done(&t);
	cp_builder_free(b);
	if (r < 0) {
		cp_model_free(m);
		errno = -r;
		return NULL;
	}
	return m;
}

struct cp_model *cp_model_free(struct cp_model *m)
{
	if (!m)
		return NULL;
	free(m->jobs);
	free(m->coflows);
	free(m->flows);
	free(m->edges);
	free(m->child_edge);
	free(m->flow_slot);
	free(m->active);
	free(m);
	return NULL;
}

int cp_model_bind(struct cp_model *m, const struct topo *t)
{
	if (m->nhosts > t->nhosts)
		for (uint32_t f = 0; f < m->nflows; f++)
			if (m->flows[f].src >= t->nhosts || m->flows[f].dst >= t->nhosts)
				return -EINVAL;
	for (uint32_t f = 0; f < m->nflows; f++) {
		struct cp_flow *fl = &m->flows[f];

		fl->nports = (uint8_t)topo_flow_ports(t, fl->src, fl->dst, fl->ports);
	}
	m->topo = t;
	return 0;
}

void cp_model_set_emit(struct cp_model *m, cp_event_fn fn, void *ctx)
{
	m->emit = fn;
	m->emit_ctx = ctx;
}

void cp_model_reset(struct cp_model *m)
{
	for (uint32_t f = 0; f < m->nflows; f++) {
		struct cp_flow *fl = &m->flows[f];

		fl->remaining_bytes = (double)fl->bytes;
		fl->rate_bps = 0;
		fl->finish_ns = CP_TIME_NEVER;
		fl->slot = f;
		fl->done = false;
		m->flow_slot[f] = f;
	}
	for (uint32_t c = 0; c < m->ncoflows; c++) {
		struct cp_coflow *cf = &m->coflows[c];

		cf->state = CP_COFLOW_WAITING;
		cf->parents_left = cf->nparents;
		cf->flows_left = cf->nflows;
		cf->active_pos = CP_NONE;
		cf->ready_ns = 0;
		cf->release_ns = CP_TIME_NEVER;
		cf->finish_ns = CP_TIME_NEVER;
		cf->sent_bytes = 0;
		cf->rate_bps = 0;
	}
	for (uint32_t j = 0; j < m->njobs; j++) {
		struct cp_job *jb = &m->jobs[j];

		jb->state = CP_JOB_PENDING;
		jb->coflows_left = jb->ncoflows;
		jb->finish_ns = CP_TIME_NEVER;
		jb->sent_bytes = 0;
	}
	m->nactive = 0;
	m->jobs_arrived = m->jobs_done = m->coflows_done = 0;
	m->flows_done = 0;
}

/* a + b, or CP_TIME_NEVER - 1 when it would wrap (times far in the future stay far) */
static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > CP_TIME_NEVER - 1 - b ? CP_TIME_NEVER - 1 : a + b;
}

static void emit(struct cp_model *m, enum cp_event_type type, uint32_t id, uint64_t t_ns)
{
	struct cp_event ev = {type, id, t_ns};

	if (m->emit)
		m->emit(m->emit_ctx, &ev);
}

static void coflow_make_ready(struct cp_model *m, uint32_t c)
{
	struct cp_coflow *cf = &m->coflows[c];
	uint64_t earliest = sat_add(m->jobs[cf->job].arrival_ns, cf->release_offset_ns);

	if (cf->ready_ns < earliest)
		cf->ready_ns = earliest;
	cf->state = CP_COFLOW_READY;
	emit(m, CP_EV_COFLOW_READY, c, cf->ready_ns);
}

int cp_model_job_arrive(struct cp_model *m, uint32_t j, uint64_t now_ns)
{
	struct cp_job *jb = &m->jobs[j];

	if (jb->state != CP_JOB_PENDING)
		return -EALREADY;
	jb->state = CP_JOB_RUNNING;
	m->jobs_arrived++;
	emit(m, CP_EV_JOB_ARRIVAL, j, now_ns);
	for (uint32_t c = jb->first_coflow; c < jb->first_coflow + jb->ncoflows; c++) {
		if (m->coflows[c].nparents == 0) {
			/* Released no earlier than the admission time. */
			if (m->coflows[c].ready_ns < now_ns)
				m->coflows[c].ready_ns = now_ns;
			coflow_make_ready(m, c);
		}
	}
	return 0;
}

static void coflow_complete(struct cp_model *m, uint32_t c, uint64_t now_ns)
{
	struct cp_coflow *cf = &m->coflows[c];
	struct cp_job *jb = &m->jobs[cf->job];
	uint32_t last;

	cf->state = CP_COFLOW_DONE;
	cf->finish_ns = now_ns;
	cf->rate_bps = 0;
	last = m->active[--m->nactive];
	m->active[cf->active_pos] = last;
	m->coflows[last].active_pos = cf->active_pos;
	cf->active_pos = CP_NONE;
	m->coflows_done++;
	emit(m, CP_EV_COFLOW_DONE, c, now_ns);
	for (uint32_t i = 0; i < cf->nchildren; i++) {
		const struct cp_edge *e = &m->edges[m->child_edge[cf->first_child + i]];
		struct cp_coflow *ch = &m->coflows[e->child];

		if (ch->ready_ns < sat_add(now_ns, e->delay_ns))
			ch->ready_ns = sat_add(now_ns, e->delay_ns);
		if (--ch->parents_left == 0)
			coflow_make_ready(m, e->child);
	}
	if (--jb->coflows_left == 0) {
		jb->state = CP_JOB_DONE;
		jb->finish_ns = now_ns;
		m->jobs_done++;
		emit(m, CP_EV_JOB_DONE, cf->job, now_ns);
	}
}

int cp_model_coflow_release(struct cp_model *m, uint32_t c, uint64_t now_ns)
{
	struct cp_coflow *cf = &m->coflows[c];

	if (cf->state != CP_COFLOW_READY)
		return -EINVAL;
	cf->state = CP_COFLOW_ACTIVE;
	cf->release_ns = now_ns;
	cf->active_pos = m->nactive;
	m->active[m->nactive++] = c;
	emit(m, CP_EV_COFLOW_RELEASE, c, now_ns);
	if (cf->flows_left == 0 && !cf->open)
		coflow_complete(m, c, now_ns);
	return 0;
}

int cp_model_flow_done(struct cp_model *m, uint32_t f, uint64_t now_ns)
{
	struct cp_flow *fl = &m->flows[f];
	struct cp_coflow *cf = &m->coflows[fl->coflow];
	uint32_t last_slot, last;

	if (fl->done || cf->state != CP_COFLOW_ACTIVE)
		return -EINVAL;
	fl->done = true;
	fl->finish_ns = now_ns;
	fl->remaining_bytes = 0;
	fl->rate_bps = 0;
	last_slot = cf->first_flow + --cf->flows_left;
	last = m->flow_slot[last_slot];
	m->flow_slot[fl->slot] = last;
	m->flows[last].slot = fl->slot;
	m->flow_slot[last_slot] = f;
	fl->slot = last_slot;
	m->flows_done++;
	emit(m, CP_EV_FLOW_DONE, f, now_ns);
	if (cf->flows_left == 0 && !cf->open)
		coflow_complete(m, fl->coflow, now_ns);
	return 0;
}

int cp_model_coflow_finish(struct cp_model *m, uint32_t c, uint64_t now_ns)
{
	struct cp_coflow *cf = &m->coflows[c];

	if (cf->state != CP_COFLOW_ACTIVE)
		return -EINVAL;
	while (cf->flows_left > 0) {
		/* A closed coflow completes with its last flow, an open one below. */
		if (cp_model_flow_done(m, m->flow_slot[cf->first_flow], now_ns) < 0)
			return -EINVAL;
	}
	if (cf->state == CP_COFLOW_ACTIVE)
		coflow_complete(m, c, now_ns);
	return 0;
}

int cp_model_add_flow(struct cp_model *m, uint32_t c, uint32_t src, uint32_t dst, uint64_t bytes,
		      uint32_t *ret_f)
{
	struct cp_coflow *cf = &m->coflows[c];
	struct cp_flow *fl;
	uint32_t f, p, moved;

	if (cf->state == CP_COFLOW_DONE || !m->topo || src >= m->topo->nhosts ||
	    dst >= m->topo->nhosts || bytes == 0)
		return -EINVAL;
	if (cf->nflows >= cf->flow_cap)
		return -ENOSPC;
	f = cf->first_flow + cf->nflows;
	fl = &m->flows[f];
	memset(fl, 0, sizeof(*fl));
	fl->coflow = c;
	fl->src = src;
	fl->dst = dst;
	fl->bytes = bytes;
	fl->nports = (uint8_t)topo_flow_ports(m->topo, src, dst, fl->ports);
	fl->remaining_bytes = (double)bytes;
	fl->finish_ns = CP_TIME_NEVER;
	cf->total_bytes += bytes;
	if (bytes > cf->max_flow_bytes)
		cf->max_flow_bytes = bytes;
	m->jobs[cf->job].total_bytes += bytes;
	/* the slots: unfinished flows first; the done one in the way moves to the end */
	p = cf->first_flow + cf->flows_left;
	moved = m->flow_slot[p];
	if (p != f) {
		m->flow_slot[f] = moved;
		m->flows[moved].slot = f;
	}
	m->flow_slot[p] = f;
	fl->slot = p;
	cf->nflows++;
	cf->flows_left++;
	*ret_f = f;
	return 0;
}

enum cp_bin cp_coflow_bin(const struct cp_coflow *c)
{
	bool is_long = c->max_flow_bytes >= CP_BIN_SHORT_BYTES;
	bool wide = c->nflows > CP_BIN_NARROW_FLOWS;

	if (!is_long)
		return wide ? CP_BIN_SW : CP_BIN_SN;
	return wide ? CP_BIN_LW : CP_BIN_LN;
}

const char *cp_bin_name(enum cp_bin bin)
{
	static const char *const names[] = {"short_narrow", "long_narrow", "short_wide",
					    "long_wide"};

	return bin < CP_BIN_COUNT ? names[bin] : "?";
}

uint64_t cp_coflow_isolation_ns(const struct cp_model *m, uint32_t c, double *port_scratch)
{
	const struct cp_coflow *cf = &m->coflows[c];
	double worst_s = 0;

	for (uint32_t f = cf->first_flow; f < cf->first_flow + cf->nflows; f++) {
		const struct cp_flow *fl = &m->flows[f];

		for (uint32_t k = 0; k < fl->nports; k++)
			port_scratch[fl->ports[k]] += (double)fl->bytes;
	}
	for (uint32_t f = cf->first_flow; f < cf->first_flow + cf->nflows; f++) {
		const struct cp_flow *fl = &m->flows[f];

		for (uint32_t k = 0; k < fl->nports; k++) {
			uint32_t p = fl->ports[k];
			double s = port_scratch[p] * 8.0 / (double)m->topo->port_bps[p];

			if (s > worst_s)
				worst_s = s;
			port_scratch[p] = 0;
		}
	}
	return (uint64_t)ceil(worst_s * 1e9);
}

int cp_job_critical_paths_ns(const struct cp_model *m, uint64_t *job_ns)
{
	_cleanup_free_ double *ports = NULL;
	_cleanup_free_ uint64_t *finish = NULL;
	_cleanup_free_ uint32_t *order = NULL;
	uint32_t n = m->ncoflows ? m->ncoflows : 1;
	int r;

	ports = calloc((size_t)m->topo->nports + 1, sizeof(*ports));
	finish = calloc(n, sizeof(*finish));
	order = calloc(n, sizeof(*order));
	if (!ports || !finish || !order)
		return -ENOMEM;
	/* Kahn: every coflow comes after all its parents (the builder rejected cycles) */
	r = loom_dag_order(&(struct loom_dag){m->ncoflows, cp_coflow_child, m}, order, NULL, NULL);
	if (r < 0)
		return r;
	for (uint32_t j = 0; j < m->njobs; j++)
		job_ns[j] = 0;
	for (uint32_t k = 0; k < m->ncoflows && order[k] != LOOM_DAG_NONE; k++) {
		uint32_t c = order[k];
		const struct cp_coflow *cf = &m->coflows[c];
		uint64_t start = cf->release_offset_ns;

		for (uint32_t i = 0; i < cf->nparents; i++) {
			const struct cp_edge *e = &m->edges[cf->first_parent + i];

			if (finish[e->parent] + e->delay_ns > start)
				start = finish[e->parent] + e->delay_ns;
		}
		finish[c] = start + cp_coflow_isolation_ns(m, c, ports);
		if (finish[c] > job_ns[cf->job])
			job_ns[cf->job] = finish[c];
	}
	return 0;
}

const char *cp_event_type_name(enum cp_event_type type)
{
	static const char *const names[] = {"job_arrival", "coflow_release", "flow_done",
					    "coflow_done", "job_done",       "coflow_ready"};

	return (unsigned)type < sizeof(names) / sizeof(names[0]) ? names[type] : "?";
}
