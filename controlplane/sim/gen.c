/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DAG shapes (dags.txt, or a random family from dags_random.c) and the
 * multi-stage workload generator behind loom-gen; docs/trace-format.md
 * describes both the input and the output, docs/simulator.md the random family.
 *
 * The dags.txt reader works like the trace readers: line by line over a
 * buffer that need not be NUL-terminated, every declared count checked
 * against the tokens present before anything is sized by it, every defect
 * reported as "name:line: reason".
 */
#include "controlplane/sim/sim.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/dag.h"
#include "common/rng.h"
#include "controlplane/sim/lexer.h"

/* Largest time the generator writes (arrival, offset, delay), in ns; as the trace reader's. */
#define GEN_MAX_NS (1ULL << 62)
/* Largest flow, in bytes. */
#define GEN_MAX_BYTES (1ULL << 62)
/* Most flows one generated workload may have (what a Loom trace may hold). */
#define GEN_MAX_FLOWS (1u << 26)
#define TOKQ          "%.32s"

/* ---- dags.txt ------------------------------------------------------------- */

/* An unsigned integer <= max. */
static int tok_uint(struct sim_lexer *lx, const char *tok, const char *what, uint64_t max,
		    uint64_t *ret, struct loom_err *err)
{
	unsigned long long v = 0;
	int r = loom_parse_u64(tok, &v);

	if (r == -ERANGE || (r == 0 && v > max))
		return sim_lex_err(lx, err, "%s '" TOKQ "' is out of range (max %" PRIu64 ")", what,
				   tok, max);
	if (r < 0)
		return sim_lex_err(lx, err, "%s '" TOKQ "' is not a non-negative integer", what,
				   tok);
	*ret = v;
	return 0;
}

static void dag_done(struct sim_dag *d)
{
	free(d->edges);
	free(d->mean_task_ms);
	free(d->ntasks);
}

struct sim_dags *sim_dags_free(struct sim_dags *d)
{
	if (!d)
		return NULL;
	for (uint32_t i = 0; i < d->n; i++)
		dag_done(&d->dags[i]);
	free(d->dags);
	free(d);
	return NULL;
}

static int cmp_edge(const void *x, const void *y)
{
	const uint32_t *a = x, *b = y;

	if (a[0] != b[0])
		return (a[0] > b[0]) - (a[0] < b[0]);
	return (a[1] > b[1]) - (a[1] < b[1]);
}

/*
 * Checks d's edges: no duplicates, no cycles (Kahn's algorithm, common/dag.h).
 * Returns 0, -EEXIST with the duplicate in ret_a and ret_b, -ELOOP, or -ENOMEM.
 */
static int dag_check(const struct sim_dag *d, uint32_t *ret_a, uint32_t *ret_b)
{
	uint32_t(*sorted)[2] = malloc((d->nedges + 1) * sizeof(*sorted));
	uint32_t *work = malloc(2 * ((size_t)d->nnodes + 1) * sizeof(*work)); /* order, indeg */
	struct loom_dag_csr csr = {NULL, NULL};
	int r = 0;

	/* everything allocated before the checks, so that -ENOMEM comes first */
	if (!sorted || !work ||
	    loom_dag_csr_init(&csr, d->nnodes, d->edges, d->nedges, sizeof(*d->edges)) < 0) {
		r = -ENOMEM;
		goto out;
	}
	memcpy(sorted, d->edges, d->nedges * sizeof(*sorted));
	qsort(sorted, d->nedges, sizeof(*sorted), cmp_edge);
	for (uint32_t e = 1; e < d->nedges; e++) {
		if (sorted[e][0] == sorted[e - 1][0] && sorted[e][1] == sorted[e - 1][1]) {
			*ret_a = sorted[e][0];
			*ret_b = sorted[e][1];
			r = -EEXIST;
			goto out;
		}
	}
	r = loom_dag_order(&(struct loom_dag){d->nnodes, loom_dag_csr_child, &csr}, work,
			   work + d->nnodes + 1, NULL);
	if (r > 0)
		r = -ELOOP;
out:
	loom_dag_csr_done(&csr);
	free(sorted);
	free(work);
	return r;
}

#define DAGS_USAGE "<size> <query> <nodes> <edges> | <tasks>:<mean_ms>... | <parent>><child>..."

/* Parses the current line into d (zeroed; on failure the caller frees what it holds). */
static int dags_line(struct sim_lexer *lx, struct sim_dag *d, struct loom_err *err)
{
	uint64_t q = 0, nn = 0, ne = 0;
	size_t ntok = lx->ntok;
	uint32_t a = 0, b = 0;
	int r, n;

	if (ntok < 6)
		return sim_lex_err(lx, err, "truncated line: expected '" DAGS_USAGE "'");
	if ((r = tok_uint(lx, lx->tok[1], "query", UINT32_MAX, &q, err)) < 0 ||
	    (r = tok_uint(lx, lx->tok[2], "node count", UINT32_MAX - 1, &nn, err)) < 0 ||
	    (r = tok_uint(lx, lx->tok[3], "edge count", UINT32_MAX - 1, &ne, err)) < 0)
		return r;
	if (nn == 0)
		return sim_lex_err(lx, err, "node count must be > 0");
	n = snprintf(d->label, sizeof(d->label), "%s-q%" PRIu64, lx->tok[0], q);
	if (n < 0 || (size_t)n >= sizeof(d->label))
		return sim_lex_err(lx, err,
				   "label '" TOKQ "-q%" PRIu64 "' is longer than %zu characters",
				   lx->tok[0], q, sizeof(d->label) - 1);
	if (strcmp(lx->tok[4], "|") != 0)
		return sim_lex_err(lx, err, "expected '|' after the edge count, not '" TOKQ "'",
				   lx->tok[4]);
	if (nn > ntok - 6)
		return sim_lex_err(lx, err,
				   "truncated line: %" PRIu64
				   " nodes declared but %zu tokens follow",
				   nn, ntok - 5);
	if (strcmp(lx->tok[5 + nn], "|") != 0)
		return sim_lex_err(lx, err,
				   "expected '|' after the %" PRIu64 " node fields, not '" TOKQ "'",
				   nn, lx->tok[5 + nn]);
	if (ne > ntok - 6 - nn)
		return sim_lex_err(lx, err,
				   "truncated line: %" PRIu64
				   " edges declared but %zu tokens follow",
				   ne, (size_t)(ntok - 6 - nn));
	if (ne < ntok - 6 - nn)
		return sim_lex_err(lx, err, "extra tokens after the %" PRIu64 " edges", ne);
	d->nnodes = (uint32_t)nn;
	d->nedges = (uint32_t)ne;
	d->mean_task_ms = calloc(nn, sizeof(*d->mean_task_ms));
	d->ntasks = calloc(nn, sizeof(*d->ntasks));
	d->edges = calloc(ne + 1, sizeof(*d->edges));
	if (!d->mean_task_ms || !d->ntasks || !d->edges)
		return sim_lex_nomem(err, lx->name, lx->lineno);
	for (uint64_t i = 0; i < nn; i++) {
		char *tok = lx->tok[5 + i];
		char *colon = strchr(tok, ':');
		uint64_t tasks = 0;
		double ms = 0;

		if (!colon)
			return sim_lex_err(lx, err,
					   "node field '" TOKQ "' is not <tasks>:<mean_ms>", tok);
		*colon = '\0';
		if ((r = tok_uint(lx, tok, "task count", UINT32_MAX, &tasks, err)) < 0)
			return r;
		if (tasks == 0)
			return sim_lex_err(lx, err, "task count of node %" PRIu64 " must be > 0",
					   i);
		if (loom_parse_double(colon + 1, &ms) < 0 || !(ms >= 0))
			return sim_lex_err(lx, err,
					   "mean task time '" TOKQ "' of node %" PRIu64
					   " is not a number >= 0",
					   colon + 1, i);
		d->ntasks[i] = (uint32_t)tasks;
		d->mean_task_ms[i] = ms;
	}
	for (uint64_t e = 0; e < ne; e++) {
		char *tok = lx->tok[6 + nn + e];
		char *gt = strchr(tok, '>');
		uint64_t p = 0, c = 0;

		if (!gt)
			return sim_lex_err(lx, err, "edge '" TOKQ "' is not <parent>><child>", tok);
		*gt = '\0';
		if ((r = tok_uint(lx, tok, "edge parent", nn - 1, &p, err)) < 0 ||
		    (r = tok_uint(lx, gt + 1, "edge child", nn - 1, &c, err)) < 0)
			return r;
		if (p == c)
			return sim_lex_err(lx, err, "edge %" PRIu64 ">%" PRIu64 " is a self-loop",
					   p, c);
		d->edges[e][0] = (uint32_t)p;
		d->edges[e][1] = (uint32_t)c;
	}
	r = dag_check(d, &a, &b);
	if (r == -ENOMEM)
		return sim_lex_nomem(err, lx->name, lx->lineno);
	if (r == -EEXIST)
		return sim_lex_err(lx, err, "duplicate edge %" PRIu32 ">%" PRIu32, a, b);
	if (r == -ELOOP)
		return sim_lex_err(lx, err, "the edges form a cycle");
	return 0;
}

struct sim_dags *sim_dags_parse(const char *buf, size_t len, const char *name, struct loom_err *err)
{
	struct sim_lexer lx = {.buf = buf, .len = buf ? len : 0, .name = name ? name : "<dags>"};
	struct sim_dags *d = calloc(1, sizeof(*d));
	size_t cap = 0;
	int r;

	if (!d) {
		r = sim_lex_nomem(err, lx.name, 0);
		goto fail;
	}
	while ((r = sim_lex_next(&lx, err)) > 0) {
		if (d->n >= UINT32_MAX - 1) {
			r = sim_lex_err(&lx, err, "too many DAGs");
			goto fail;
		}
		if (sim_grow((void **)&d->dags, &cap, (size_t)d->n + 1, sizeof(*d->dags)) < 0) {
			r = sim_lex_nomem(err, lx.name, lx.lineno);
			goto fail;
		}
		memset(&d->dags[d->n], 0, sizeof(d->dags[d->n]));
		r = dags_line(&lx, &d->dags[d->n], err);
		if (r < 0) {
			dag_done(&d->dags[d->n]);
			goto fail;
		}
		d->n++;
	}
	if (r < 0)
		goto fail;
	if (d->n == 0) {
		r = sim_lex_err_at(err, lx.name, lx.lineno ? lx.lineno : 1, "no DAGs in the file");
		goto fail;
	}
	sim_lex_done(&lx);
	return d;
fail:
	sim_lex_done(&lx);
	sim_dags_free(d);
	errno = -r;
	return NULL;
}

struct sim_dags *sim_dags_load(const char *path, struct loom_err *err)
{
	struct sim_dags *d;
	char *buf = NULL;
	size_t len = 0;
	int r;

	if (sim_dags_spec_is_random(path)) {
		struct sim_dags_random p;

		r = sim_dags_random_parse(path, &p, err);
		if (r < 0) {
			errno = -r;
			return NULL;
		}
		return sim_dags_random_new(&p, err);
	}
	r = sim_read_file(path, "no DAG file given", &buf, &len, err);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	d = sim_dags_parse(buf, len, path, err);
	r = errno;
	free(buf);
	errno = r;
	return d;
}

/* ---- the generator ---------------------------------------------------------- */

void sim_gen_params_default(struct sim_gen_params *p)
{
	*p = (struct sim_gen_params){
		.njobs = 100,
		.load = 0.7,
		.seed = 1,
		.compute_scale = 1.0,
		.bytes_scale = 1.0,
		.weight_max = 1.0,
	};
}

/* The shape of one FB coflow: distinct mappers, and bytes into each distinct reducer. */
struct fb_shape {
	uint32_t nmappers, nreducers;
	size_t first; /* into gen.reducer_bytes */
};

struct gen {
	const struct sim_gen_params *p;
	const struct sim_dags *dags;
	const struct topo *t;
	struct loom_rng rng;
	/* FB shapes */
	struct fb_shape *shapes;
	uint32_t nshapes;
	double *reducer_bytes;
	/* per DAG: in-edges of each node, CSR */
	uint32_t **in_start, **in_edges;
	/* host sampling */
	uint32_t *mark, stamp;
	uint32_t *mappers, *reducers;
	/* totals */
	uint64_t next_coflow, nflows;
	double total_bytes;
};

static int gen_params_check(const struct sim_gen_params *p, const struct sim_dags *dags,
			    const struct cp_model *fb, const struct topo *t, struct loom_err *err)
{
	if (!p || !dags || !fb || !t)
		return loom_err_set(err, EINVAL,
				    "sim_gen: missing parameters, DAGs, FB model or topology");
	if (p->njobs == 0)
		return loom_err_set(err, EINVAL, "sim_gen: the job count must be > 0");
	if (!isfinite(p->load) || !(p->load > 0))
		return loom_err_set(err, EINVAL,
				    "sim_gen: the load must be a finite number > 0 (got %g)",
				    p->load);
	if (!isfinite(p->compute_scale) || !(p->compute_scale >= 0))
		return loom_err_set(
			err, EINVAL,
			"sim_gen: the compute scale must be a finite number >= 0 (got %g)",
			p->compute_scale);
	if (!isfinite(p->bytes_scale) || !(p->bytes_scale > 0))
		return loom_err_set(err, EINVAL,
				    "sim_gen: the bytes scale must be a finite number > 0 (got %g)",
				    p->bytes_scale);
	if (!(p->weight_max >= 1) || !(p->weight_max <= 1e15))
		return loom_err_set(err, EINVAL,
				    "sim_gen: the maximum weight must be in [1, 1e15] (got %g)",
				    p->weight_max);
	if (dags->n == 0)
		return loom_err_set(err, EINVAL, "sim_gen: no DAG shapes");
	for (uint32_t i = 0; i < dags->n; i++) {
		const struct sim_dag *d = &dags->dags[i];

		if (d->nedges == 0)
			return loom_err_set(
				err, EINVAL,
				"sim_gen: DAG %s has no edges, so its jobs would have no "
				"coflows",
				d->label);
		for (uint32_t v = 0; v < d->nnodes; v++)
			if (!isfinite(d->mean_task_ms[v]) || !(d->mean_task_ms[v] >= 0) ||
			    d->mean_task_ms[v] * p->compute_scale * 1e6 > (double)GEN_MAX_NS)
				return loom_err_set(err, EINVAL,
						    "sim_gen: DAG %s: stage %" PRIu32
						    " compute time is out of range",
						    d->label, v);
		for (uint32_t e = 0; e < d->nedges; e++)
			if (d->edges[e][0] >= d->nnodes || d->edges[e][1] >= d->nnodes)
				return loom_err_set(err, EINVAL,
						    "sim_gen: DAG %s: edge %" PRIu32
						    " is out of range",
						    d->label, e);
	}
	if (t->nhosts == 0 || !(topo_total_up_bps(t) > 0))
		return loom_err_set(err, EINVAL, "sim_gen: the topology has no uplink capacity");
	return 0;
}

/* Reduces every FB coflow with flows to its shape. 0, -EINVAL or -ENOMEM. */
static int gen_shapes(struct gen *g, const struct cp_model *fb, struct loom_err *err)
{
	uint32_t *src_mark = calloc((size_t)fb->nhosts + 1, sizeof(*src_mark));
	uint32_t *dst_mark = calloc((size_t)fb->nhosts + 1, sizeof(*dst_mark));
	uint32_t *dst_pos = calloc((size_t)fb->nhosts + 1, sizeof(*dst_pos));
	size_t nr = 0;
	int r = 0;

	g->shapes = calloc((size_t)fb->ncoflows + 1, sizeof(*g->shapes));
	g->reducer_bytes = calloc((size_t)fb->nflows + 1, sizeof(*g->reducer_bytes));
	if (!src_mark || !dst_mark || !dst_pos || !g->shapes || !g->reducer_bytes) {
		r = loom_err_set(err, ENOMEM, "sim_gen: out of memory");
		goto out;
	}
	for (uint32_t c = 0; c < fb->ncoflows; c++) {
		const struct cp_coflow *co = &fb->coflows[c];
		struct fb_shape *s = &g->shapes[g->nshapes];

		if (co->nflows == 0)
			continue;
		*s = (struct fb_shape){.first = nr};
		for (uint32_t i = co->first_flow; i < co->first_flow + co->nflows; i++) {
			const struct cp_flow *f = &fb->flows[i];

			if (f->src >= fb->nhosts || f->dst >= fb->nhosts) {
				r = loom_err_set(err, EINVAL,
						 "sim_gen: FB model flow %" PRIu32
						 " has a host out of range",
						 i);
				goto out;
			}
			if (src_mark[f->src] != c + 1) {
				src_mark[f->src] = c + 1;
				s->nmappers++;
			}
			if (dst_mark[f->dst] != c + 1) {
				dst_mark[f->dst] = c + 1;
				dst_pos[f->dst] = s->nreducers++;
				g->reducer_bytes[nr++] = 0;
			}
			g->reducer_bytes[s->first + dst_pos[f->dst]] += (double)f->bytes;
		}
		g->nshapes++;
	}
	if (g->nshapes == 0)
		r = loom_err_set(err, EINVAL, "sim_gen: the FB model has no flows to sample");
out:
	free(src_mark);
	free(dst_mark);
	free(dst_pos);
	return r;
}

/* In-edge lists of every DAG node: in_edges[d][in_start[d][v] .. in_start[d][v + 1]). */
static int gen_in_edges(struct gen *g, struct loom_err *err)
{
	const struct sim_dags *dags = g->dags;

	g->in_start = calloc(dags->n, sizeof(*g->in_start));
	g->in_edges = calloc(dags->n, sizeof(*g->in_edges));
	if (!g->in_start || !g->in_edges)
		return loom_err_set(err, ENOMEM, "sim_gen: out of memory");
	for (uint32_t i = 0; i < dags->n; i++) {
		const struct sim_dag *d = &dags->dags[i];
		uint32_t *start = calloc((size_t)d->nnodes + 2, sizeof(*start));
		uint32_t *in = calloc((size_t)d->nedges + 1, sizeof(*in));

		g->in_start[i] = start;
		g->in_edges[i] = in;
		if (!start || !in)
			return loom_err_set(err, ENOMEM, "sim_gen: out of memory");
		for (uint32_t e = 0; e < d->nedges; e++)
			start[d->edges[e][1] + 1]++;
		for (uint32_t v = 0; v < d->nnodes; v++)
			start[v + 1] += start[v];
		for (uint32_t e = 0; e < d->nedges; e++)
			in[start[d->edges[e][1]]++] = e;
		for (uint32_t v = d->nnodes; v > 0; v--)
			start[v] = start[v - 1];
		start[0] = 0;
	}
	return 0;
}

/* Writes k distinct hosts out of n into out (Floyd's algorithm). */
static void gen_pick_hosts(struct gen *g, uint32_t n, uint32_t k, uint32_t *out)
{
	uint32_t cnt = 0;

	if (++g->stamp == 0) {
		memset(g->mark, 0, (size_t)n * sizeof(*g->mark));
		g->stamp = 1;
	}
	for (uint32_t j = n - k; j < n; j++) {
		uint32_t h = (uint32_t)loom_rng_below(&g->rng, (uint64_t)j + 1);

		if (g->mark[h] == g->stamp)
			h = j;
		g->mark[h] = g->stamp;
		out[cnt++] = h;
	}
}

static uint64_t gen_ms_to_ns(double ms, double scale)
{
	return (uint64_t)llround(ms * scale * 1e6);
}

/*
 * Draws job j: its DAG, weight, and for every DAG edge a coflow with its
 * parents and flows. With b NULL (the sizing pass) it only makes the draws
 * and sums the bytes; otherwise it adds everything to b, the job arriving at
 * arrival_ns. Returns 0 or -errno with err filled.
 */
static int gen_job(struct gen *g, struct cp_builder *b, uint32_t j, uint64_t arrival_ns,
		   double *ret_bytes, struct loom_err *err)
{
	uint32_t dag_index = (uint32_t)loom_rng_below(&g->rng, g->dags->n);
	const struct sim_dag *d = &g->dags->dags[dag_index];
	const uint32_t *in_start = g->in_start[dag_index], *in = g->in_edges[dag_index];
	double weight = 1.0 + (double)loom_rng_below(&g->rng, (uint64_t)floor(g->p->weight_max));
	uint32_t nhosts = g->t->nhosts;
	uint64_t base = g->next_coflow;
	double job_bytes = 0;
	int r;

	if (base + d->nedges >= CP_NONE)
		return loom_err_set(err, EINVAL, "sim_gen: too many coflows");
	if (b && (r = cp_builder_add_job(b, j, arrival_ns, weight, err)) < 0)
		return r;
	/* every coflow first: an edge may point at a coflow listed after it */
	for (uint32_t e = 0; b && e < d->nedges; e++) {
		uint32_t stage = d->edges[e][0];
		bool source = in_start[stage] == in_start[stage + 1];
		uint64_t compute_ns = gen_ms_to_ns(d->mean_task_ms[stage], g->p->compute_scale);

		r = cp_builder_add_coflow(b, base + e, j, source ? compute_ns : 0, err);
		if (r < 0)
			return r;
	}
	for (uint32_t e = 0; e < d->nedges; e++) {
		uint32_t stage = d->edges[e][0];
		uint64_t id = base + e;
		uint64_t compute_ns = gen_ms_to_ns(d->mean_task_ms[stage], g->p->compute_scale);
		const struct fb_shape *s = &g->shapes[loom_rng_below(&g->rng, g->nshapes)];
		uint32_t m = s->nmappers < nhosts ? s->nmappers : nhosts;
		uint32_t nr = s->nreducers < nhosts ? s->nreducers : nhosts;

		/* a shuffle out of stage i waits for stage i's tasks after its inputs arrive */
		for (uint32_t i = in_start[stage]; b && i < in_start[stage + 1]; i++) {
			r = cp_builder_add_edge(b, base + in[i], id, compute_ns, err);
			if (r < 0)
				return r;
		}
		if ((uint64_t)m * nr > GEN_MAX_FLOWS - g->nflows)
			return loom_err_set(err, EINVAL,
					    "sim_gen: the workload would have more than %u flows",
					    GEN_MAX_FLOWS);
		g->nflows += (uint64_t)m * nr;
		gen_pick_hosts(g, nhosts, m, g->mappers);
		gen_pick_hosts(g, nhosts, nr, g->reducers);
		for (uint32_t k = 0; k < nr; k++) {
			double fb = g->reducer_bytes[s->first + k] / m * g->p->bytes_scale;
			uint64_t bytes;

			if (!(fb < (double)GEN_MAX_BYTES))
				return loom_err_set(err, EINVAL,
						    "sim_gen: a flow would exceed %llu bytes "
						    "(bytes scale too large)",
						    (unsigned long long)GEN_MAX_BYTES);
			bytes = fb < 1 ? 1 : (uint64_t)llround(fb);
			job_bytes += (double)bytes * m;
			for (uint32_t i = 0; b && i < m; i++) {
				r = cp_builder_add_flow(b, id, g->mappers[i], g->reducers[k], bytes,
							err);
				if (r < 0)
					return r;
			}
		}
	}
	g->next_coflow = base + d->nedges;
	*ret_bytes = job_bytes;
	return 0;
}

/* Restarts the draws of the jobs (the second pass repeats the first). */
static void gen_rewind(struct gen *g, const struct loom_rng *start)
{
	g->rng = *start;
	g->next_coflow = 0;
	g->nflows = 0;
}

static void gen_done(struct gen *g)
{
	free(g->shapes);
	free(g->reducer_bytes);
	for (uint32_t i = 0; g->in_start && i < g->dags->n; i++)
		free(g->in_start[i]);
	for (uint32_t i = 0; g->in_edges && i < g->dags->n; i++)
		free(g->in_edges[i]);
	free(g->in_start);
	free(g->in_edges);
	free(g->mark);
	free(g->mappers);
	free(g->reducers);
}

/*
 * Arrivals: job 0 at t = 0, then n - 1 exponential gaps (a Poisson process)
 * rescaled so their mean is exactly the target gap, i.e. a Poisson process
 * conditioned on its span; the offered load (mean job bytes * 8 / (mean gap *
 * uplink capacity)) is then p->load up to nanosecond rounding.
 */
static int gen_arrivals(struct gen *g, uint64_t *arrival_ns, struct loom_err *err)
{
	uint32_t n = g->p->njobs;
	double gap_s = g->total_bytes / n * 8.0 / (g->p->load * topo_total_up_bps(g->t));
	struct loom_rng replay = g->rng; /* draw the gaps twice: to sum them, then to place jobs */
	double sum = 0, scale, at = 0;

	arrival_ns[0] = 0;
	for (uint32_t k = 1; k < n; k++)
		sum += loom_rng_exp(&g->rng, 1.0);
	scale = sum > 0 ? gap_s * (n - 1) / sum : 0;
	for (uint32_t k = 1; k < n; k++) {
		double x = loom_rng_exp(&replay, 1.0), ns;

		at += sum > 0 ? x * scale : gap_s;
		ns = round(at * 1e9);
		if (!(ns <= (double)GEN_MAX_NS))
			return loom_err_set(err, EINVAL,
					    "sim_gen: arrivals run past %llu ns (load too low?)",
					    (unsigned long long)GEN_MAX_NS);
		arrival_ns[k] = (uint64_t)ns;
	}
	return 0;
}

struct cp_model *sim_gen(const struct sim_gen_params *p, const struct sim_dags *dags,
			 const struct cp_model *fb, const struct topo *t, struct loom_err *err)
{
	struct loom_err local;
	struct gen g = {.p = p, .dags = dags, .t = t};
	struct cp_model *m = NULL;
	struct cp_builder *b = NULL;
	struct loom_rng start;
	uint64_t *arrival_ns = NULL;
	double bytes = 0;
	int r;

	if (!err)
		err = &local;
	loom_err_clear(err);
	r = gen_params_check(p, dags, fb, t, err);
	if (r < 0)
		goto out;
	g.mark = calloc((size_t)t->nhosts + 1, sizeof(*g.mark));
	g.mappers = calloc((size_t)t->nhosts + 1, sizeof(*g.mappers));
	g.reducers = calloc((size_t)t->nhosts + 1, sizeof(*g.reducers));
	arrival_ns = calloc(p->njobs, sizeof(*arrival_ns));
	if (!g.mark || !g.mappers || !g.reducers || !arrival_ns) {
		r = loom_err_set(err, ENOMEM, "sim_gen: out of memory");
		goto out;
	}
	if ((r = gen_shapes(&g, fb, err)) < 0 || (r = gen_in_edges(&g, err)) < 0)
		goto out;
	/* pass 1 sizes the workload; the arrivals follow from its bytes */
	loom_rng_seed(&g.rng, p->seed);
	start = g.rng;
	for (uint32_t j = 0; j < p->njobs; j++) {
		r = gen_job(&g, NULL, j, 0, &bytes, err);
		if (r < 0)
			goto out;
		g.total_bytes += bytes;
	}
	r = gen_arrivals(&g, arrival_ns, err);
	if (r < 0)
		goto out;
	/* pass 2 repeats the same draws into the builder */
	gen_rewind(&g, &start);
	b = cp_builder_new(t->nhosts);
	if (!b) {
		r = loom_err_set(err, errno, "sim_gen: cannot start a model");
		goto out;
	}
	for (uint32_t j = 0; j < p->njobs; j++) {
		r = gen_job(&g, b, j, arrival_ns[j], &bytes, err);
		if (r < 0)
			goto out;
	}
	m = cp_builder_finish(b, err);
	b = NULL;
	r = m ? 0 : loom_negerrno();
out:
	cp_builder_free(b);
	gen_done(&g);
	free(arrival_ns);
	if (!m)
		errno = r < 0 ? -r : EINVAL;
	return m;
}
