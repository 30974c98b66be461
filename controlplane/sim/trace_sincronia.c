/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A line of Sincronia's per-flow format (docs/trace-format.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/sim/trace_impl.h"

#define SINC_USAGE "<id> <arrival_ms> <F> <nsrc> <ndst> (<src> <dst> <MB>)..."

/* <id> <arrival_ms> <F> <num_sources> <num_dests> (<src> <dst> <MB>)*F */
int trace_sincronia_line(struct single *s, struct loom_err *err)
{
	struct sim_lexer *lx = s->lx;
	uint64_t id = 0, arrival_ns = 0, f = 0, nsrc = 0, ndst = 0, total = 0;
	size_t ntok = lx->ntok;
	int r;

	if (ntok < 5)
		return sim_lex_err(lx, err, "truncated line: expected '" SINC_USAGE "'");
	if ((r = trace_tok_u64(lx, lx->tok[0], "coflow id", &id, err)) < 0 ||
	    (r = trace_tok_ms(lx, lx->tok[1], "arrival", &arrival_ns, err)) < 0 ||
	    (r = trace_tok_count(lx, lx->tok[2], "flow count", &f, err)) < 0 ||
	    (r = trace_tok_u64(lx, lx->tok[3], "source count", &nsrc, err)) < 0 ||
	    (r = trace_tok_u64(lx, lx->tok[4], "destination count", &ndst, err)) < 0)
		return r;
	/* the source and destination counts are informational: upstream files disagree with them */
	if (f > (ntok - 5) / 3)
		return sim_lex_err(lx, err,
				   "truncated line: %" PRIu64
				   " flows declared but %zu tokens follow "
				   "(3 per flow)",
				   f, ntok - 5);
	if (ntok - 5 != 3 * f)
		return sim_lex_err(lx, err, "extra tokens after the %" PRIu64 " flows", f);
	if ((r = trace_single_count_flows(s, f, err)) < 0)
		return r;
	if (sim_grow((void **)&s->a, &s->cap_a, f, sizeof(*s->a)) < 0 ||
	    sim_grow((void **)&s->c, &s->cap_c, f, sizeof(*s->c)) < 0 ||
	    sim_grow((void **)&s->mb, &s->cap_mb, f, sizeof(*s->mb)) < 0)
		return sim_lex_nomem(err, lx->name, lx->lineno);
	for (uint64_t i = 0; i < f; i++) {
		char **t = &lx->tok[5 + 3 * i];

		if ((r = trace_tok_port(lx, t[0], "source port", s->nports, "port count", &s->a[i],
					err)) < 0 ||
		    (r = trace_tok_port(lx, t[1], "destination port", s->nports, "port count",
					&s->c[i], err)) < 0 ||
		    (r = trace_tok_mb(lx, t[2], "flow size", &s->mb[i], err)) < 0)
			return r;
		total += (uint64_t)llround(s->mb[i] * TRACE_MIB);
		if (total > TRACE_MAX_BYTES)
			return sim_lex_err(lx, err, "coflow is too large (max %llu bytes)",
					   (unsigned long long)TRACE_MAX_BYTES);
	}
	if ((r = trace_single_add_coflow(s, id, arrival_ns, err)) < 0)
		return r;
	for (uint64_t i = 0; i < f; i++) {
		long long bytes = llround(s->mb[i] * TRACE_MIB);

		if (bytes < 1)
			bytes = 1;
		r = cp_builder_add_flow(s->b, id, s->a[i], s->c[i], (uint64_t)bytes, err);
		if (r < 0)
			return trace_builder_err(err, lx->name, lx->lineno, r);
	}
	return 0;
}
