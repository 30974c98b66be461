/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A line of the coflow benchmark's format (FB2010; docs/trace-format.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/sim/trace_impl.h"

#define FB_USAGE "<id> <arrival_ms> <M> <mapper>... <R> <reducer>:<MB>..."

/*
 * A flow's bytes as CoflowSim sizes reducer j of a coflow with m mappers
 * (SIM_TRACE_FB_COFLOWSIM): MB x 2^20 truncated to whole bytes, rounded up to
 * a whole MiB (ReduceTask's constructor), then up to a multiple of m MiB
 * (Job.coalesceReducers), split evenly over the m mappers, each flow at least
 * 1 MiB (ReduceTask.createFlows). mb is at most TRACE_MAX_MB and m at most
 * the port count, so the result stays below 2^63.
 */
static uint64_t coflowsim_flow_bytes(double mb, uint64_t m)
{
	const uint64_t mib = 1048576;
	uint64_t whole = (uint64_t)(mb * TRACE_MIB);
	uint64_t nmib = whole / mib + (whole % mib > 0);
	uint64_t per_mapper = nmib / m + (nmib % m > 0); /* MiB per flow */

	return per_mapper ? per_mapper * mib : mib;
}

/* <id> <arrival_ms> <M> <map_port>*M <R> <red_port>:<MB>*R */
int trace_fb_line(struct single *s, struct loom_err *err)
{
	struct sim_lexer *lx = s->lx;
	uint64_t id = 0, arrival_ns = 0, m = 0, nr = 0, total = 0;
	size_t ntok = lx->ntok;
	int r;

	if (ntok < 3)
		return sim_lex_err(lx, err, "truncated line: expected '" FB_USAGE "'");
	if ((r = trace_tok_u64(lx, lx->tok[0], "coflow id", &id, err)) < 0 ||
	    (r = trace_tok_ms(lx, lx->tok[1], "arrival", &arrival_ns, err)) < 0 ||
	    (r = trace_tok_count(lx, lx->tok[2], "mapper count", &m, err)) < 0)
		return r;
	if (m > ntok - 3 || m + 3 >= ntok)
		return sim_lex_err(lx, err,
				   "truncated line: %" PRIu64
				   " mappers declared but %zu tokens follow "
				   "before the reducer count",
				   m, ntok - 3);
	if ((r = trace_tok_count(lx, lx->tok[3 + m], "reducer count", &nr, err)) < 0)
		return r;
	if (nr > ntok - 4 - m)
		return sim_lex_err(lx, err,
				   "truncated line: %" PRIu64
				   " reducers declared but %zu tokens follow",
				   nr, (size_t)(ntok - 4 - m));
	if (nr < ntok - 4 - m)
		return sim_lex_err(lx, err, "extra tokens after the %" PRIu64 " reducers", nr);
	if ((r = trace_single_count_flows(s, m * nr, err)) < 0)
		return r;
	if (sim_grow((void **)&s->a, &s->cap_a, m, sizeof(*s->a)) < 0 ||
	    sim_grow((void **)&s->c, &s->cap_c, nr, sizeof(*s->c)) < 0 ||
	    sim_grow((void **)&s->mb, &s->cap_mb, nr, sizeof(*s->mb)) < 0)
		return sim_lex_nomem(err, lx->name, lx->lineno);
	for (uint64_t i = 0; i < m; i++)
		if ((r = trace_tok_port(lx, lx->tok[3 + i], "mapper port", s->nports, "port count",
					&s->a[i], err)) < 0)
			return r;
	for (uint64_t j = 0; j < nr; j++) {
		char *tok = lx->tok[4 + m + j];
		char *colon = strchr(tok, ':');

		if (!colon || strchr(colon + 1, ':'))
			return sim_lex_err(lx, err, "reducer '" TOKQ "' is not <port>:<MB>", tok);
		*colon = '\0';
		if ((r = trace_tok_port(lx, tok, "reducer port", s->nports, "port count", &s->c[j],
					err)) < 0 ||
		    (r = trace_tok_mb(lx, colon + 1, "reducer size", &s->mb[j], err)) < 0)
			return r;
		/* the coflow moves about MB_j * 2^20 bytes into reducer j */
		total += s->coflowsim_sizes ? coflowsim_flow_bytes(s->mb[j], m) * m :
					      (uint64_t)llround(s->mb[j] * TRACE_MIB) + m;
		if (total > TRACE_MAX_BYTES)
			return sim_lex_err(lx, err, "coflow is too large (max %llu bytes)",
					   (unsigned long long)TRACE_MAX_BYTES);
	}
	if ((r = trace_single_unique(s, s->a, m, "mapper port", err)) < 0 ||
	    (r = trace_single_unique(s, s->c, nr, "reducer port", err)) < 0 ||
	    (r = trace_single_add_coflow(s, id, arrival_ns, err)) < 0)
		return r;
	/* CoflowSim: each reducer pulls MB_j / M from every mapper */
	for (uint64_t j = 0; j < nr; j++) {
		long long bytes = s->coflowsim_sizes ?
					  (long long)coflowsim_flow_bytes(s->mb[j], m) :
					  llround(s->mb[j] * TRACE_MIB / (double)m);

		if (bytes < 1)
			bytes = 1;
		for (uint64_t i = 0; i < m; i++) {
			r = cp_builder_add_flow(s->b, id, s->a[i], s->c[j], (uint64_t)bytes, err);
			if (r < 0)
				return trace_builder_err(err, lx->name, lx->lineno, r);
		}
	}
	return 0;
}
