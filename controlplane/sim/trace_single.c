/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The two one-coflow-per-line formats (coflow-benchmark, Sincronia): their
 * header, the checks they share and the reading loop; each line is read by
 * trace_fb.c or trace_sincronia.c (docs/trace-format.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/sim/trace_impl.h"

/* ---- coflow-benchmark and Sincronia: one job of one coflow per line ---------- */

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return (a > b) - (a < b);
}

/* Rejects a port listed twice in ports[0 .. n). */
int trace_single_unique(struct single *s, const uint32_t *ports, size_t n, const char *what,
			struct loom_err *err)
{
	if (sim_grow((void **)&s->sorted, &s->cap_sorted, n, sizeof(*s->sorted)) < 0)
		return sim_lex_nomem(err, s->lx->name, s->lx->lineno);
	memcpy(s->sorted, ports, n * sizeof(*ports));
	qsort(s->sorted, n, sizeof(*s->sorted), cmp_u32);
	for (size_t i = 1; i < n; i++)
		if (s->sorted[i] == s->sorted[i - 1])
			return sim_lex_err(s->lx, err, "duplicate %s %" PRIu32, what, s->sorted[i]);
	return 0;
}

/* Adds the flow count of one line to the total, within TRACE_MAX_FLOWS. */
int trace_single_count_flows(struct single *s, uint64_t n, struct loom_err *err)
{
	if (n > s->max_flows || s->nflows + n > s->max_flows)
		return sim_lex_err(s->lx, err,
				   "too many flows (this trace may expand to at most %" PRIu64 ")",
				   s->max_flows);
	s->nflows += n;
	return 0;
}

/* Registers coflow id (checking it is new) as a job of one coflow arriving at arrival_ns. */
int trace_single_add_coflow(struct single *s, uint64_t id, uint64_t arrival_ns,
			    struct loom_err *err)
{
	struct sim_lexer *lx = s->lx;
	uint32_t first = trace_idmap_get(&s->ids, id);
	int r;

	if (first != CP_NONE)
		return sim_lex_err(lx, err,
				   "duplicate coflow id %" PRIu64 " (first on line %" PRIu32 ")",
				   id, first);
	if (loom_hmap_add(&s->ids, id, lx->lineno < CP_NONE ? (uint32_t)lx->lineno : CP_NONE - 1) <
	    0)
		return sim_lex_nomem(err, lx->name, lx->lineno);
	r = cp_builder_add_job(s->b, id, arrival_ns, 1.0, err);
	if (r == 0)
		r = cp_builder_add_coflow(s->b, id, id, 0, err);
	return r < 0 ? trace_builder_err(err, lx->name, lx->lineno, r) : 0;
}

/* Reads the "<num_ports> <num_coflows>" header; 0 or -errno. */
static int read_ports_header(struct sim_lexer *lx, uint32_t *ret_nports, uint64_t *ret_count,
			     struct loom_err *err)
{
	uint64_t nports = 0, count = 0;
	int r = sim_lex_next(lx, err);

	if (r < 0)
		return r;
	if (r == 0)
		return sim_lex_err_at(
			err, lx->name, lx->lineno ? lx->lineno : 1,
			"empty trace: expected the header '<num_ports> <num_coflows>'");
	if ((r = trace_lex_want(lx, 2, "<num_ports> <num_coflows>", err)) < 0 ||
	    (r = trace_tok_count(lx, lx->tok[0], "port count", &nports, err)) < 0 ||
	    (r = trace_tok_count(lx, lx->tok[1], "coflow count", &count, err)) < 0)
		return r;
	if (nports > TOPO_MAX_HOSTS)
		return sim_lex_err(lx, err, "port count %" PRIu64 " is above the limit of %u",
				   nports, TOPO_MAX_HOSTS);
	*ret_nports = (uint32_t)nports;
	*ret_count = count;
	return 0;
}

struct cp_model *trace_parse_single(struct sim_lexer *lx, enum sim_trace_format fmt,
				    uint32_t *ret_nhosts, struct loom_err *err, int *ret_rc)
{
	bool fb = fmt == SIM_TRACE_FB || fmt == SIM_TRACE_FB_COFLOWSIM;
	struct single s = {.lx = lx,
			   .max_flows = TRACE_MAX_FLOWS,
			   .coflowsim_sizes = fmt == SIM_TRACE_FB_COFLOWSIM};
	struct cp_model *m = NULL;
	uint64_t declared = 0, seen = 0;
	unsigned long header_line;
	int r;

	r = read_ports_header(lx, &s.nports, &declared, err);
	if (r < 0)
		goto out;
	header_line = lx->lineno;
	if (fb && lx->len < (TRACE_MAX_FLOWS - TRACE_FB_BASE_FLOWS) / TRACE_FB_FLOWS_PER_BYTE)
		s.max_flows = TRACE_FB_BASE_FLOWS + (uint64_t)lx->len * TRACE_FB_FLOWS_PER_BYTE;
	s.b = cp_builder_new(s.nports);
	if (!s.b) {
		r = errno == ENOMEM ?
			    sim_lex_nomem(err, lx->name, lx->lineno) :
			    sim_lex_err_at(err, lx->name, lx->lineno, "cannot start a model");
		goto out;
	}
	while ((r = sim_lex_next(lx, err)) > 0) {
		if (++seen > declared) {
			r = sim_lex_err(lx, err,
					"more coflow lines than the %" PRIu64
					" the header declares",
					declared);
			goto out;
		}
		r = fb ? trace_fb_line(&s, err) : trace_sincronia_line(&s, err);
		if (r < 0)
			goto out;
	}
	if (r < 0)
		goto out;
	if (seen < declared) {
		r = sim_lex_err_at(err, lx->name, header_line,
				   "header declares %" PRIu64 " coflows but the trace has %" PRIu64,
				   declared, seen);
		goto out;
	}
	m = cp_builder_finish(s.b, err);
	s.b = NULL;
	if (!m) {
		r = trace_builder_err(err, lx->name, lx->lineno, errno > 0 ? -errno : -EINVAL);
		goto out;
	}
	*ret_nhosts = s.nports;
	r = 0;
out:
	cp_builder_free(s.b);
	loom_hmap_done(&s.ids);
	free(s.a);
	free(s.c);
	free(s.sorted);
	free(s.mb);
	*ret_rc = r;
	return m;
}
