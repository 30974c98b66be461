/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Loom's trace format: the reader (jobs, coflows, flows, edges, with cycle
 * checks that name a line) and the writer (docs/trace-format.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/dag.h"
#include "controlplane/sim/trace_impl.h"

/* ---- Loom's format ---------------------------------------------------------- */

struct ljob {
	uint64_t id;
	unsigned long line;
	uint32_t ncoflows;
	uint64_t bytes;
};

struct lcoflow {
	uint64_t id;
	uint32_t job;
	uint64_t bytes;
};

struct ledge {
	uint32_t parent, child;
	unsigned long line;
};

struct loom {
	struct sim_lexer *lx;
	uint32_t nhosts;
	struct cp_builder *b;
	struct loom_hmap job_ids, coflow_ids, edge_ids;
	struct ljob *jobs;
	struct lcoflow *coflows;
	struct ledge *edges;
	size_t njobs, ncoflows, nedges, cap_jobs, cap_coflows, cap_edges;
	uint64_t nflows;
};

#define LOOM_HEADER_USAGE "loom-trace 1 hosts <N>"

static int loom_header(struct loom *l, struct loom_err *err)
{
	struct sim_lexer *lx = l->lx;
	uint64_t version = 0, n = 0;
	int r = sim_lex_next(lx, err);

	if (r < 0)
		return r;
	if (r == 0)
		return sim_lex_err_at(err, lx->name, lx->lineno ? lx->lineno : 1,
				      "empty trace: expected the header '" LOOM_HEADER_USAGE "'");
	if (strcmp(lx->tok[0], "loom-trace") != 0)
		return sim_lex_err(lx, err,
				   "expected the header '" LOOM_HEADER_USAGE "', not '" TOKQ "'",
				   lx->tok[0]);
	if ((r = trace_lex_want(lx, 4, LOOM_HEADER_USAGE, err)) < 0 ||
	    (r = trace_tok_u64(lx, lx->tok[1], "version", &version, err)) < 0)
		return r;
	if (version != 1)
		return sim_lex_err(lx, err,
				   "unsupported loom-trace version %" PRIu64 " (expected 1)",
				   version);
	if (strcmp(lx->tok[2], "hosts") != 0)
		return sim_lex_err(lx, err,
				   "expected the header '" LOOM_HEADER_USAGE "', not '" TOKQ "'",
				   lx->tok[2]);
	if ((r = trace_tok_count(lx, lx->tok[3], "host count", &n, err)) < 0)
		return r;
	if (n > TOPO_MAX_HOSTS)
		return sim_lex_err(lx, err, "host count %" PRIu64 " is above the limit of %u", n,
				   TOPO_MAX_HOSTS);
	l->nhosts = (uint32_t)n;
	return 0;
}

static int loom_job(struct loom *l, struct loom_err *err)
{
	struct sim_lexer *lx = l->lx;
	uint64_t id = 0, arrival_ns = 0;
	uint32_t prev;
	double weight = 0;
	int r;

	if ((r = trace_lex_want(lx, 4, "job <job_id> <arrival_ms> <weight>", err)) < 0 ||
	    (r = trace_tok_u64(lx, lx->tok[1], "job id", &id, err)) < 0 ||
	    (r = trace_tok_ms(lx, lx->tok[2], "arrival", &arrival_ns, err)) < 0)
		return r;
	if (loom_parse_double(lx->tok[3], &weight) < 0)
		return sim_lex_err(lx, err, "job weight '" TOKQ "' is not a number", lx->tok[3]);
	if (!(weight > 0))
		return sim_lex_err(lx, err, "job weight '" TOKQ "' must be > 0", lx->tok[3]);
	prev = trace_idmap_get(&l->job_ids, id);
	if (prev != CP_NONE)
		return sim_lex_err(lx, err, "duplicate job id %" PRIu64 " (first on line %lu)", id,
				   l->jobs[prev].line);
	if (l->njobs >= CP_NONE - 1)
		return sim_lex_err(lx, err, "too many jobs");
	if (sim_grow((void **)&l->jobs, &l->cap_jobs, l->njobs + 1, sizeof(*l->jobs)) < 0 ||
	    loom_hmap_add(&l->job_ids, id, (uint32_t)l->njobs) < 0)
		return sim_lex_nomem(err, lx->name, lx->lineno);
	l->jobs[l->njobs++] = (struct ljob){.id = id, .line = lx->lineno};
	r = cp_builder_add_job(l->b, id, arrival_ns, weight, err);
	return r < 0 ? trace_builder_err(err, lx->name, lx->lineno, r) : 0;
}

static int loom_coflow(struct loom *l, struct loom_err *err)
{
	struct sim_lexer *lx = l->lx;
	uint64_t id = 0, job_id = 0, offset_ns = 0;
	uint32_t job;
	int r;

	if ((r = trace_lex_want(lx, 4, "coflow <coflow_id> <job_id> <release_offset_ms>", err)) <
		    0 ||
	    (r = trace_tok_u64(lx, lx->tok[1], "coflow id", &id, err)) < 0 ||
	    (r = trace_tok_u64(lx, lx->tok[2], "job id", &job_id, err)) < 0 ||
	    (r = trace_tok_ms(lx, lx->tok[3], "release offset", &offset_ns, err)) < 0)
		return r;
	if (trace_idmap_get(&l->coflow_ids, id) != CP_NONE)
		return sim_lex_err(lx, err, "duplicate coflow id %" PRIu64, id);
	job = trace_idmap_get(&l->job_ids, job_id);
	if (job == CP_NONE)
		return sim_lex_err(lx, err,
				   "coflow %" PRIu64 " refers to job %" PRIu64
				   ", not defined above",
				   id, job_id);
	if (l->ncoflows >= CP_NONE - 1)
		return sim_lex_err(lx, err, "too many coflows");
	if (sim_grow((void **)&l->coflows, &l->cap_coflows, l->ncoflows + 1, sizeof(*l->coflows)) <
		    0 ||
	    loom_hmap_add(&l->coflow_ids, id, (uint32_t)l->ncoflows) < 0)
		return sim_lex_nomem(err, lx->name, lx->lineno);
	l->coflows[l->ncoflows++] = (struct lcoflow){.id = id, .job = job};
	l->jobs[job].ncoflows++;
	r = cp_builder_add_coflow(l->b, id, job_id, offset_ns, err);
	return r < 0 ? trace_builder_err(err, lx->name, lx->lineno, r) : 0;
}

static int loom_flow(struct loom *l, struct loom_err *err)
{
	struct sim_lexer *lx = l->lx;
	uint64_t id = 0, bytes = 0;
	uint32_t c, src = 0, dst = 0, n = l->nhosts;
	struct lcoflow *co;
	struct ljob *job;
	int r;

	if ((r = trace_lex_want(lx, 5, "flow <coflow_id> <src> <dst> <bytes>", err)) < 0 ||
	    (r = trace_tok_u64(lx, lx->tok[1], "coflow id", &id, err)) < 0 ||
	    (r = trace_tok_port(lx, lx->tok[2], "source host", n, "host count", &src, err)) < 0 ||
	    (r = trace_tok_port(lx, lx->tok[3], "destination host", n, "host count", &dst, err)) <
		    0 ||
	    (r = trace_tok_count(lx, lx->tok[4], "flow size", &bytes, err)) < 0)
		return r;
	c = trace_idmap_get(&l->coflow_ids, id);
	if (c == CP_NONE)
		return sim_lex_err(lx, err, "flow refers to coflow %" PRIu64 ", not defined above",
				   id);
	co = &l->coflows[c];
	job = &l->jobs[co->job];
	if (bytes > TRACE_MAX_BYTES || co->bytes + bytes > TRACE_MAX_BYTES ||
	    job->bytes + bytes > TRACE_MAX_BYTES)
		return sim_lex_err(lx, err,
				   "flow size %" PRIu64 " makes its job too large (max %llu)",
				   bytes, (unsigned long long)TRACE_MAX_BYTES);
	if (l->nflows >= TRACE_MAX_FLOWS)
		return sim_lex_err(lx, err, "too many flows (a trace may have at most %u)",
				   TRACE_MAX_FLOWS);
	l->nflows++;
	co->bytes += bytes;
	job->bytes += bytes;
	r = cp_builder_add_flow(l->b, id, src, dst, bytes, err);
	return r < 0 ? trace_builder_err(err, lx->name, lx->lineno, r) : 0;
}

#define EDGE_USAGE "edge <parent_coflow_id> <child_coflow_id> <delay_ms>"

static int loom_edge(struct loom *l, struct loom_err *err)
{
	struct sim_lexer *lx = l->lx;
	uint64_t pid = 0, cid = 0, delay_ns = 0, key;
	uint32_t p, c, prev;
	int r;

	if ((r = trace_lex_want(lx, 4, EDGE_USAGE, err)) < 0 ||
	    (r = trace_tok_u64(lx, lx->tok[1], "parent coflow id", &pid, err)) < 0 ||
	    (r = trace_tok_u64(lx, lx->tok[2], "child coflow id", &cid, err)) < 0 ||
	    (r = trace_tok_ms(lx, lx->tok[3], "delay", &delay_ns, err)) < 0)
		return r;
	p = trace_idmap_get(&l->coflow_ids, pid);
	c = trace_idmap_get(&l->coflow_ids, cid);
	if (p == CP_NONE)
		return sim_lex_err(lx, err, "edge refers to coflow %" PRIu64 ", not defined above",
				   pid);
	if (c == CP_NONE)
		return sim_lex_err(lx, err, "edge refers to coflow %" PRIu64 ", not defined above",
				   cid);
	if (p == c)
		return sim_lex_err(lx, err, "edge %" PRIu64 " -> %" PRIu64 " is a self-loop", pid,
				   cid);
	if (l->coflows[p].job != l->coflows[c].job)
		return sim_lex_err(lx, err,
				   "edge %" PRIu64 " -> %" PRIu64 " crosses jobs %" PRIu64
				   " and %" PRIu64,
				   pid, cid, l->jobs[l->coflows[p].job].id,
				   l->jobs[l->coflows[c].job].id);
	key = (uint64_t)p << 32 | c;
	prev = trace_idmap_get(&l->edge_ids, key);
	if (prev != CP_NONE)
		return sim_lex_err(lx, err,
				   "duplicate edge %" PRIu64 " -> %" PRIu64 " (first on line %lu)",
				   pid, cid, l->edges[prev].line);
	if (l->nedges >= CP_NONE - 1)
		return sim_lex_err(lx, err, "too many edges");
	if (sim_grow((void **)&l->edges, &l->cap_edges, l->nedges + 1, sizeof(*l->edges)) < 0 ||
	    loom_hmap_add(&l->edge_ids, key, (uint32_t)l->nedges) < 0)
		return sim_lex_nomem(err, lx->name, lx->lineno);
	l->edges[l->nedges++] = (struct ledge){.parent = p, .child = c, .line = lx->lineno};
	r = cp_builder_add_edge(l->b, pid, cid, delay_ns, err);
	return r < 0 ? trace_builder_err(err, lx->name, lx->lineno, r) : 0;
}

/* loom_dag_csr_init() reads an edge's parent and child as the two uint32_t it starts with. */
_Static_assert(offsetof(struct ledge, parent) == 0 &&
		       offsetof(struct ledge, child) == sizeof(uint32_t),
	       "struct ledge starts with uint32_t parent, child");

/*
 * Looks for a cycle among the edges (Kahn's algorithm, common/dag.h, then a
 * walk back through parents that are still blocked). Returns 1 with
 * *ret_edge the edge of the cycle defined last, 0 when acyclic, or -ENOMEM.
 */
static int loom_find_cycle(const struct loom *l, size_t *ret_edge)
{
	size_t nc = l->ncoflows, ne = l->nedges;
	struct loom_dag_csr out = {NULL, NULL};
	uint32_t *indeg = malloc((nc + 1) * sizeof(*indeg));
	uint32_t *in_start = calloc(nc + 1, sizeof(*in_start));
	uint32_t *in = malloc((ne + 1) * sizeof(*in));
	uint32_t *step = malloc((nc + 1) * sizeof(*step));
	uint32_t *via = malloc((nc + 1) * sizeof(*via));
	uint32_t v = 0;
	int ret = -ENOMEM;

	if (!indeg || !in_start || !in || !step || !via ||
	    loom_dag_csr_init(&out, (uint32_t)nc, l->edges, (uint32_t)ne, sizeof(*l->edges)) < 0)
		goto out;
	ret = loom_dag_order(&(struct loom_dag){(uint32_t)nc, loom_dag_csr_child, &out}, NULL,
			     indeg, &v);
	if (ret <= 0)
		goto out;
	/* CSR of in-edges (by child) */
	for (size_t e = 0; e < ne; e++)
		in_start[l->edges[e].child + 1]++;
	for (size_t u = 0; u < nc; u++)
		in_start[u + 1] += in_start[u];
	for (size_t e = 0; e < ne; e++)
		in[in_start[l->edges[e].child]++] = (uint32_t)e;
	for (size_t u = nc; u > 0; u--)
		in_start[u] = in_start[u - 1];
	in_start[0] = 0;
	/* every coflow left has a parent left: walk back from the first until one repeats */
	memset(step, 0xff, (nc + 1) * sizeof(*step));
	{
		uint32_t n = 0, u;
		size_t best = ne;

		while (step[v] == CP_NONE) {
			step[v] = n++;
			for (uint32_t i = in_start[v]; i < in_start[v + 1]; i++) {
				if (indeg[l->edges[in[i]].parent] > 0) {
					via[v] = in[i];
					break;
				}
			}
			v = l->edges[via[v]].parent;
		}
		u = v;
		do {
			size_t e = via[u];

			if (best == ne || l->edges[e].line > l->edges[best].line)
				best = e;
			u = l->edges[e].parent;
		} while (u != v);
		*ret_edge = best;
	}
out:
	loom_dag_csr_done(&out);
	free(indeg);
	free(in_start);
	free(in);
	free(step);
	free(via);
	return ret;
}

/* Whole-trace checks once every record is in: jobs, empty jobs, cycles. */
static int loom_check(struct loom *l, struct loom_err *err)
{
	struct sim_lexer *lx = l->lx;
	size_t e;
	int r;

	if (l->njobs == 0)
		return sim_lex_err(lx, err, "trace defines no jobs");
	for (size_t j = 0; j < l->njobs; j++)
		if (l->jobs[j].ncoflows == 0)
			return sim_lex_err_at(err, lx->name, l->jobs[j].line,
					      "job %" PRIu64 " has no coflows", l->jobs[j].id);
	r = loom_find_cycle(l, &e);
	if (r < 0)
		return sim_lex_nomem(err, lx->name, lx->lineno);
	if (r > 0)
		return sim_lex_err_at(err, lx->name, l->edges[e].line,
				      "edge %" PRIu64 " -> %" PRIu64 " closes a cycle",
				      l->coflows[l->edges[e].parent].id,
				      l->coflows[l->edges[e].child].id);
	return 0;
}

struct cp_model *trace_parse_loom(struct sim_lexer *lx, uint32_t *ret_nhosts, struct loom_err *err,
				  int *ret_rc)
{
	struct loom l = {.lx = lx};
	struct cp_model *m = NULL;
	int r;

	r = loom_header(&l, err);
	if (r < 0)
		goto out;
	l.b = cp_builder_new(l.nhosts);
	if (!l.b) {
		r = errno == ENOMEM ?
			    sim_lex_nomem(err, lx->name, lx->lineno) :
			    sim_lex_err_at(err, lx->name, lx->lineno, "cannot start a model");
		goto out;
	}
	while ((r = sim_lex_next(lx, err)) > 0) {
		const char *kind = lx->tok[0];

		if (strcmp(kind, "job") == 0)
			r = loom_job(&l, err);
		else if (strcmp(kind, "coflow") == 0)
			r = loom_coflow(&l, err);
		else if (strcmp(kind, "flow") == 0)
			r = loom_flow(&l, err);
		else if (strcmp(kind, "edge") == 0)
			r = loom_edge(&l, err);
		else
			r = sim_lex_err(lx, err,
					"unknown record '" TOKQ
					"' (expected job, coflow, flow or edge)",
					kind);
		if (r < 0)
			goto out;
	}
	if (r < 0 || (r = loom_check(&l, err)) < 0)
		goto out;
	m = cp_builder_finish(l.b, err);
	l.b = NULL;
	if (!m) {
		r = trace_builder_err(err, lx->name, lx->lineno, errno > 0 ? -errno : -EINVAL);
		goto out;
	}
	*ret_nhosts = l.nhosts;
	r = 0;
out:
	cp_builder_free(l.b);
	loom_hmap_done(&l.job_ids);
	loom_hmap_done(&l.coflow_ids);
	loom_hmap_done(&l.edge_ids);
	free(l.jobs);
	free(l.coflows);
	free(l.edges);
	*ret_rc = r;
	return m;
}

/* Writes ns as decimal milliseconds, exactly (no trailing zeros). */
static void ms_str(char *buf, size_t size, uint64_t ns)
{
	uint64_t ip = ns / 1000000, frac = ns % 1000000;
	int width = 6;

	if (frac == 0) {
		snprintf(buf, size, "%" PRIu64, ip);
		return;
	}
	while (frac % 10 == 0) {
		frac /= 10;
		width--;
	}
	snprintf(buf, size, "%" PRIu64 ".%0*" PRIu64, ip, width, frac);
}

/* Checks that m can be written so the reader takes it back. 0 or -ERANGE. */
static int loom_writable(const struct cp_model *m)
{
	if (m->njobs == 0 || m->nhosts == 0 || m->nhosts > TOPO_MAX_HOSTS ||
	    m->nflows > TRACE_MAX_FLOWS)
		return -ERANGE;
	for (uint32_t j = 0; j < m->njobs; j++)
		if (m->jobs[j].arrival_ns > TRACE_MAX_NS || !(m->jobs[j].weight > 0) ||
		    !isfinite(m->jobs[j].weight) || m->jobs[j].total_bytes > TRACE_MAX_BYTES)
			return -ERANGE;
	for (uint32_t c = 0; c < m->ncoflows; c++)
		if (m->coflows[c].release_offset_ns > TRACE_MAX_NS)
			return -ERANGE;
	for (uint32_t e = 0; e < m->nedges; e++)
		if (m->edges[e].delay_ns > TRACE_MAX_NS)
			return -ERANGE;
	return 0;
}

int sim_trace_write_loom(const struct cp_model *m, FILE *f)
{
	char t1[32];
	int r;

	if (!m || !f)
		return -EINVAL;
	r = loom_writable(m);
	if (r < 0)
		return r;
	fprintf(f,
		"# Loom trace (docs/trace-format.md): %" PRIu32 " jobs, %" PRIu32
		" coflows, %" PRIu32 " flows, %" PRIu32 " edges\n",
		m->njobs, m->ncoflows, m->nflows, m->nedges);
	fprintf(f, "loom-trace 1 hosts %" PRIu32 "\n", m->nhosts);
	for (uint32_t j = 0; j < m->njobs; j++) {
		const struct cp_job *job = &m->jobs[j];
		uint32_t end = job->first_coflow + job->ncoflows;

		ms_str(t1, sizeof(t1), job->arrival_ns);
		fprintf(f, "job %" PRIu64 " %s %.17g\n", job->ext_id, t1, job->weight);
		for (uint32_t c = job->first_coflow; c < end; c++) {
			const struct cp_coflow *co = &m->coflows[c];

			ms_str(t1, sizeof(t1), co->release_offset_ns);
			fprintf(f, "coflow %" PRIu64 " %" PRIu64 " %s\n", co->ext_id, job->ext_id,
				t1);
			for (uint32_t i = co->first_flow; i < co->first_flow + co->nflows; i++) {
				const struct cp_flow *fl = &m->flows[i];

				fprintf(f, "flow %" PRIu64 " %" PRIu32 " %" PRIu32 " %" PRIu64 "\n",
					co->ext_id, fl->src, fl->dst, fl->bytes);
			}
		}
		for (uint32_t c = job->first_coflow; c < end; c++) {
			const struct cp_coflow *co = &m->coflows[c];

			for (uint32_t i = co->first_parent; i < co->first_parent + co->nparents;
			     i++) {
				const struct cp_edge *e = &m->edges[i];

				ms_str(t1, sizeof(t1), e->delay_ns);
				fprintf(f, "edge %" PRIu64 " %" PRIu64 " %s\n",
					m->coflows[e->parent].ext_id, co->ext_id, t1);
			}
		}
	}
	if (fflush(f) != 0 || ferror(f))
		return loom_negerrno();
	return 0;
}
