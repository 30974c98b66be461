/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Trace readers (coflow-benchmark, Sincronia, Loom) and the Loom writer; the
 * formats are described in docs/trace-format.md.
 *
 * Every reader works line by line over a buffer that need not be
 * NUL-terminated: a line is copied into a scratch buffer and split into
 * tokens in place, every count a line declares is checked against the tokens
 * it actually has before anything is sized by it, so memory stays
 * proportional to the input (the coflow-benchmark format's mapper x reducer
 * expansion is capped in proportion to the input size too). Every
 * defect is reported as "name:line: reason" with errno EINVAL; nothing is
 * skipped silently. The readers check ids, references, sizes, host ranges and
 * (Loom) cycles themselves so each message can name its line; the model
 * builder then validates everything once more.
 */
#include "controlplane/sim/sim.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/hmap.h"
#include "controlplane/sim/lexer.h"

/* Most flows one trace may hold. */
#define TRACE_MAX_FLOWS (1u << 26)
/*
 * A coflow-benchmark line expands to mappers x reducers flows, so there the
 * flows are also capped by input size: at most TRACE_FB_BASE_FLOWS plus
 * TRACE_FB_FLOWS_PER_BYTE per input byte (FB2010 has about 5 per byte).
 */
#define TRACE_FB_BASE_FLOWS     (1u << 20)
#define TRACE_FB_FLOWS_PER_BYTE 64u
/* Largest time (arrival, offset, delay), in ns: about 146 years. */
#define TRACE_MAX_NS (1ULL << 62)
/* Largest flow, coflow or job, in bytes. */
#define TRACE_MAX_BYTES (1ULL << 62)
#define TRACE_MIB       1048576.0
/* Largest size in MB whose bytes stay within TRACE_MAX_BYTES. */
#define TRACE_MAX_MB ((double)(TRACE_MAX_BYTES / 1048576ULL))
/* Longest token quoted back in a message. */
#define TOKQ "%.32s"

/* ---- errors -------------------------------------------------------------- */

/* Prefixes a message the builder left in err with "name:line: "; returns -EINVAL or -ENOMEM. */
static int trace_builder_err(struct loom_err *err, const char *name, unsigned long line, int rc)
{
	char msg[LOOM_ERR_MSG_MAX];

	if (rc == -ENOMEM)
		return sim_lex_nomem(err, name, line);
	snprintf(msg, sizeof(msg), "%s", loom_err_str(err));
	return sim_lex_err_at(err, name, line, "%s", msg);
}

/* Checks the line has exactly n tokens; usage is the record's syntax. */
static int lex_want(struct sim_lexer *lx, size_t n, const char *usage, struct loom_err *err)
{
	if (lx->ntok < n)
		return sim_lex_err(lx, err, "truncated line: expected '%s'", usage);
	if (lx->ntok > n)
		return sim_lex_err(lx, err, "extra tokens after '%s'", usage);
	return 0;
}

static int tok_u64(struct sim_lexer *lx, const char *tok, const char *what, uint64_t *ret,
		   struct loom_err *err)
{
	unsigned long long v;
	int r = loom_parse_u64(tok, &v);

	if (r == -ERANGE)
		return sim_lex_err(lx, err, "%s '" TOKQ "' is out of range", what, tok);
	if (r < 0)
		return sim_lex_err(lx, err, "%s '" TOKQ "' is not a non-negative integer", what,
				   tok);
	*ret = v;
	return 0;
}

/* A count that must be > 0. */
static int tok_count(struct sim_lexer *lx, const char *tok, const char *what, uint64_t *ret,
		     struct loom_err *err)
{
	int r = tok_u64(lx, tok, what, ret, err);

	if (r < 0)
		return r;
	if (*ret == 0)
		return sim_lex_err(lx, err, "%s must be > 0", what);
	return 0;
}

/* A port (FB, Sincronia) or host (Loom) number below n; limit names n in messages. */
static int tok_port(struct sim_lexer *lx, const char *tok, const char *what, uint32_t n,
		    const char *limit, uint32_t *ret, struct loom_err *err)
{
	uint64_t v = 0;
	int r = tok_u64(lx, tok, what, &v, err);

	if (r < 0)
		return r;
	if (v >= n)
		return sim_lex_err(lx, err, "%s %" PRIu64 " >= %s %" PRIu32, what, v, limit, n);
	*ret = (uint32_t)v;
	return 0;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Parses decimal milliseconds with at most 6 decimals (further decimals must
 * be zeros) into exact nanoseconds. 0, -EINVAL or -ERANGE.
 */
static int parse_ms(const char *s, uint64_t *ret_ns)
{
	uint64_t ip = 0, frac = 0, ns;
	int nd = 0;

	if (!is_digit(*s))
		return -EINVAL;
	for (; is_digit(*s); s++) {
		if (ip > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		ip = ip * 10 + (uint64_t)(*s - '0');
	}
	if (*s == '.') {
		s++;
		if (!is_digit(*s))
			return -EINVAL;
		for (; is_digit(*s); s++) {
			if (nd == 6) {
				if (*s != '0')
					return -EINVAL;
				continue;
			}
			frac = frac * 10 + (uint64_t)(*s - '0');
			nd++;
		}
	}
	if (*s != '\0')
		return -EINVAL;
	for (; nd < 6; nd++)
		frac *= 10;
	if (ip > TRACE_MAX_NS / 1000000)
		return -ERANGE;
	ns = ip * 1000000 + frac;
	if (ns > TRACE_MAX_NS)
		return -ERANGE;
	*ret_ns = ns;
	return 0;
}

static int tok_ms(struct sim_lexer *lx, const char *tok, const char *what, uint64_t *ret_ns,
		  struct loom_err *err)
{
	int r = parse_ms(tok, ret_ns);

	if (r == -ERANGE)
		return sim_lex_err(lx, err, "%s '" TOKQ "' is out of range (max %llu ms)", what,
				   tok, (unsigned long long)(TRACE_MAX_NS / 1000000));
	if (r < 0)
		return sim_lex_err(lx, err,
				   "%s '" TOKQ
				   "' is not a time in ms (digits, optionally '.' and up "
				   "to 6 decimals)",
				   what, tok);
	return 0;
}

/* A size in MB: finite, > 0 and small enough that its bytes fit. */
static int tok_mb(struct sim_lexer *lx, const char *tok, const char *what, double *ret,
		  struct loom_err *err)
{
	double v;

	if (loom_parse_double(tok, &v) < 0)
		return sim_lex_err(lx, err, "%s '" TOKQ "' is not a number", what, tok);
	if (!(v > 0))
		return sim_lex_err(lx, err, "%s '" TOKQ "' must be > 0", what, tok);
	if (v > TRACE_MAX_MB)
		return sim_lex_err(lx, err, "%s '" TOKQ "' is too large (max %.0f MB)", what, tok,
				   TRACE_MAX_MB);
	*ret = v;
	return 0;
}

/* ---- id -> index (common/hmap) ------------------------------------------- */

/* Returns the value stored for key, or CP_NONE. */
static uint32_t idmap_get(const struct loom_hmap *m, uint64_t key)
{
	uint64_t v;

	return loom_hmap_get(m, key, &v) ? (uint32_t)v : CP_NONE;
}

/* ---- coflow-benchmark and Sincronia: one job of one coflow per line ---------- */

struct single {
	struct sim_lexer *lx;
	uint32_t nports;
	struct cp_builder *b;
	struct loom_hmap ids; /* coflow id -> line number (saturated) */
	uint64_t nflows, max_flows;
	/* per-line scratch, grown to the line's token count */
	uint32_t *a, *c, *sorted;
	double *mb;
	size_t cap_a, cap_c, cap_sorted, cap_mb;
};

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return (a > b) - (a < b);
}

/* Rejects a port listed twice in ports[0 .. n). */
static int single_unique(struct single *s, const uint32_t *ports, size_t n, const char *what,
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
static int single_count_flows(struct single *s, uint64_t n, struct loom_err *err)
{
	if (n > s->max_flows || s->nflows + n > s->max_flows)
		return sim_lex_err(s->lx, err,
				   "too many flows (this trace may expand to at most %" PRIu64 ")",
				   s->max_flows);
	s->nflows += n;
	return 0;
}

/* Registers coflow id (checking it is new) as a job of one coflow arriving at arrival_ns. */
static int single_add_coflow(struct single *s, uint64_t id, uint64_t arrival_ns,
			     struct loom_err *err)
{
	struct sim_lexer *lx = s->lx;
	uint32_t first = idmap_get(&s->ids, id);
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

#define FB_USAGE "<id> <arrival_ms> <M> <mapper>... <R> <reducer>:<MB>..."

/* <id> <arrival_ms> <M> <map_port>*M <R> <red_port>:<MB>*R */
static int fb_line(struct single *s, struct loom_err *err)
{
	struct sim_lexer *lx = s->lx;
	uint64_t id = 0, arrival_ns = 0, m = 0, nr = 0, total = 0;
	size_t ntok = lx->ntok;
	int r;

	if (ntok < 3)
		return sim_lex_err(lx, err, "truncated line: expected '" FB_USAGE "'");
	if ((r = tok_u64(lx, lx->tok[0], "coflow id", &id, err)) < 0 ||
	    (r = tok_ms(lx, lx->tok[1], "arrival", &arrival_ns, err)) < 0 ||
	    (r = tok_count(lx, lx->tok[2], "mapper count", &m, err)) < 0)
		return r;
	if (m > ntok - 3 || m + 3 >= ntok)
		return sim_lex_err(lx, err,
				   "truncated line: %" PRIu64
				   " mappers declared but %zu tokens follow "
				   "before the reducer count",
				   m, ntok - 3);
	if ((r = tok_count(lx, lx->tok[3 + m], "reducer count", &nr, err)) < 0)
		return r;
	if (nr > ntok - 4 - m)
		return sim_lex_err(lx, err,
				   "truncated line: %" PRIu64
				   " reducers declared but %zu tokens follow",
				   nr, (size_t)(ntok - 4 - m));
	if (nr < ntok - 4 - m)
		return sim_lex_err(lx, err, "extra tokens after the %" PRIu64 " reducers", nr);
	if ((r = single_count_flows(s, m * nr, err)) < 0)
		return r;
	if (sim_grow((void **)&s->a, &s->cap_a, m, sizeof(*s->a)) < 0 ||
	    sim_grow((void **)&s->c, &s->cap_c, nr, sizeof(*s->c)) < 0 ||
	    sim_grow((void **)&s->mb, &s->cap_mb, nr, sizeof(*s->mb)) < 0)
		return sim_lex_nomem(err, lx->name, lx->lineno);
	for (uint64_t i = 0; i < m; i++)
		if ((r = tok_port(lx, lx->tok[3 + i], "mapper port", s->nports, "port count",
				  &s->a[i], err)) < 0)
			return r;
	for (uint64_t j = 0; j < nr; j++) {
		char *tok = lx->tok[4 + m + j];
		char *colon = strchr(tok, ':');

		if (!colon || strchr(colon + 1, ':'))
			return sim_lex_err(lx, err, "reducer '" TOKQ "' is not <port>:<MB>", tok);
		*colon = '\0';
		if ((r = tok_port(lx, tok, "reducer port", s->nports, "port count", &s->c[j],
				  err)) < 0 ||
		    (r = tok_mb(lx, colon + 1, "reducer size", &s->mb[j], err)) < 0)
			return r;
		/* the coflow moves about MB_j * 2^20 bytes into reducer j */
		total += (uint64_t)llround(s->mb[j] * TRACE_MIB) + m;
		if (total > TRACE_MAX_BYTES)
			return sim_lex_err(lx, err, "coflow is too large (max %llu bytes)",
					   (unsigned long long)TRACE_MAX_BYTES);
	}
	if ((r = single_unique(s, s->a, m, "mapper port", err)) < 0 ||
	    (r = single_unique(s, s->c, nr, "reducer port", err)) < 0 ||
	    (r = single_add_coflow(s, id, arrival_ns, err)) < 0)
		return r;
	/* CoflowSim: each reducer pulls MB_j / M from every mapper */
	for (uint64_t j = 0; j < nr; j++) {
		long long bytes = llround(s->mb[j] * TRACE_MIB / (double)m);

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

#define SINC_USAGE "<id> <arrival_ms> <F> <nsrc> <ndst> (<src> <dst> <MB>)..."

/* <id> <arrival_ms> <F> <num_sources> <num_dests> (<src> <dst> <MB>)*F */
static int sincronia_line(struct single *s, struct loom_err *err)
{
	struct sim_lexer *lx = s->lx;
	uint64_t id = 0, arrival_ns = 0, f = 0, nsrc = 0, ndst = 0, total = 0;
	size_t ntok = lx->ntok;
	int r;

	if (ntok < 5)
		return sim_lex_err(lx, err, "truncated line: expected '" SINC_USAGE "'");
	if ((r = tok_u64(lx, lx->tok[0], "coflow id", &id, err)) < 0 ||
	    (r = tok_ms(lx, lx->tok[1], "arrival", &arrival_ns, err)) < 0 ||
	    (r = tok_count(lx, lx->tok[2], "flow count", &f, err)) < 0 ||
	    (r = tok_u64(lx, lx->tok[3], "source count", &nsrc, err)) < 0 ||
	    (r = tok_u64(lx, lx->tok[4], "destination count", &ndst, err)) < 0)
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
	if ((r = single_count_flows(s, f, err)) < 0)
		return r;
	if (sim_grow((void **)&s->a, &s->cap_a, f, sizeof(*s->a)) < 0 ||
	    sim_grow((void **)&s->c, &s->cap_c, f, sizeof(*s->c)) < 0 ||
	    sim_grow((void **)&s->mb, &s->cap_mb, f, sizeof(*s->mb)) < 0)
		return sim_lex_nomem(err, lx->name, lx->lineno);
	for (uint64_t i = 0; i < f; i++) {
		char **t = &lx->tok[5 + 3 * i];

		if ((r = tok_port(lx, t[0], "source port", s->nports, "port count", &s->a[i],
				  err)) < 0 ||
		    (r = tok_port(lx, t[1], "destination port", s->nports, "port count", &s->c[i],
				  err)) < 0 ||
		    (r = tok_mb(lx, t[2], "flow size", &s->mb[i], err)) < 0)
			return r;
		total += (uint64_t)llround(s->mb[i] * TRACE_MIB);
		if (total > TRACE_MAX_BYTES)
			return sim_lex_err(lx, err, "coflow is too large (max %llu bytes)",
					   (unsigned long long)TRACE_MAX_BYTES);
	}
	if ((r = single_add_coflow(s, id, arrival_ns, err)) < 0)
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
	if ((r = lex_want(lx, 2, "<num_ports> <num_coflows>", err)) < 0 ||
	    (r = tok_count(lx, lx->tok[0], "port count", &nports, err)) < 0 ||
	    (r = tok_count(lx, lx->tok[1], "coflow count", &count, err)) < 0)
		return r;
	if (nports > TOPO_MAX_HOSTS)
		return sim_lex_err(lx, err, "port count %" PRIu64 " is above the limit of %u",
				   nports, TOPO_MAX_HOSTS);
	*ret_nports = (uint32_t)nports;
	*ret_count = count;
	return 0;
}

static struct cp_model *parse_single(struct sim_lexer *lx, enum sim_trace_format fmt,
				     uint32_t *ret_nhosts, struct loom_err *err, int *ret_rc)
{
	struct single s = {.lx = lx, .max_flows = TRACE_MAX_FLOWS};
	struct cp_model *m = NULL;
	uint64_t declared = 0, seen = 0;
	unsigned long header_line;
	int r;

	r = read_ports_header(lx, &s.nports, &declared, err);
	if (r < 0)
		goto out;
	header_line = lx->lineno;
	if (fmt == SIM_TRACE_FB &&
	    lx->len < (TRACE_MAX_FLOWS - TRACE_FB_BASE_FLOWS) / TRACE_FB_FLOWS_PER_BYTE)
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
		r = fmt == SIM_TRACE_FB ? fb_line(&s, err) : sincronia_line(&s, err);
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
	if ((r = lex_want(lx, 4, LOOM_HEADER_USAGE, err)) < 0 ||
	    (r = tok_u64(lx, lx->tok[1], "version", &version, err)) < 0)
		return r;
	if (version != 1)
		return sim_lex_err(lx, err,
				   "unsupported loom-trace version %" PRIu64 " (expected 1)",
				   version);
	if (strcmp(lx->tok[2], "hosts") != 0)
		return sim_lex_err(lx, err,
				   "expected the header '" LOOM_HEADER_USAGE "', not '" TOKQ "'",
				   lx->tok[2]);
	if ((r = tok_count(lx, lx->tok[3], "host count", &n, err)) < 0)
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

	if ((r = lex_want(lx, 4, "job <job_id> <arrival_ms> <weight>", err)) < 0 ||
	    (r = tok_u64(lx, lx->tok[1], "job id", &id, err)) < 0 ||
	    (r = tok_ms(lx, lx->tok[2], "arrival", &arrival_ns, err)) < 0)
		return r;
	if (loom_parse_double(lx->tok[3], &weight) < 0)
		return sim_lex_err(lx, err, "job weight '" TOKQ "' is not a number", lx->tok[3]);
	if (!(weight > 0))
		return sim_lex_err(lx, err, "job weight '" TOKQ "' must be > 0", lx->tok[3]);
	prev = idmap_get(&l->job_ids, id);
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

	if ((r = lex_want(lx, 4, "coflow <coflow_id> <job_id> <release_offset_ms>", err)) < 0 ||
	    (r = tok_u64(lx, lx->tok[1], "coflow id", &id, err)) < 0 ||
	    (r = tok_u64(lx, lx->tok[2], "job id", &job_id, err)) < 0 ||
	    (r = tok_ms(lx, lx->tok[3], "release offset", &offset_ns, err)) < 0)
		return r;
	if (idmap_get(&l->coflow_ids, id) != CP_NONE)
		return sim_lex_err(lx, err, "duplicate coflow id %" PRIu64, id);
	job = idmap_get(&l->job_ids, job_id);
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

	if ((r = lex_want(lx, 5, "flow <coflow_id> <src> <dst> <bytes>", err)) < 0 ||
	    (r = tok_u64(lx, lx->tok[1], "coflow id", &id, err)) < 0 ||
	    (r = tok_port(lx, lx->tok[2], "source host", n, "host count", &src, err)) < 0 ||
	    (r = tok_port(lx, lx->tok[3], "destination host", n, "host count", &dst, err)) < 0 ||
	    (r = tok_count(lx, lx->tok[4], "flow size", &bytes, err)) < 0)
		return r;
	c = idmap_get(&l->coflow_ids, id);
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

	if ((r = lex_want(lx, 4, EDGE_USAGE, err)) < 0 ||
	    (r = tok_u64(lx, lx->tok[1], "parent coflow id", &pid, err)) < 0 ||
	    (r = tok_u64(lx, lx->tok[2], "child coflow id", &cid, err)) < 0 ||
	    (r = tok_ms(lx, lx->tok[3], "delay", &delay_ns, err)) < 0)
		return r;
	p = idmap_get(&l->coflow_ids, pid);
	c = idmap_get(&l->coflow_ids, cid);
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
	prev = idmap_get(&l->edge_ids, key);
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

/*
 * Looks for a cycle among the edges (Kahn's algorithm, then a walk back
 * through parents that are still blocked). Returns 1 with *ret_edge the
 * edge of the cycle defined last, 0 when acyclic, or -ENOMEM.
 */
static int loom_find_cycle(const struct loom *l, size_t *ret_edge)
{
	size_t nc = l->ncoflows, ne = l->nedges, head = 0, tail = 0;
	uint32_t *indeg = calloc(nc + 1, sizeof(*indeg));
	uint32_t *out_start = calloc(nc + 1, sizeof(*out_start));
	uint32_t *in_start = calloc(nc + 1, sizeof(*in_start));
	uint32_t *out = malloc((ne + 1) * sizeof(*out));
	uint32_t *in = malloc((ne + 1) * sizeof(*in));
	uint32_t *queue = malloc((nc + 1) * sizeof(*queue));
	uint32_t *step = malloc((nc + 1) * sizeof(*step));
	uint32_t *via = malloc((nc + 1) * sizeof(*via));
	int ret = 0;

	if (!indeg || !out_start || !in_start || !out || !in || !queue || !step || !via) {
		ret = -ENOMEM;
		goto out;
	}
	/* CSR of out-edges (by parent) and in-edges (by child) */
	for (size_t e = 0; e < ne; e++) {
		out_start[l->edges[e].parent + 1]++;
		in_start[l->edges[e].child + 1]++;
		indeg[l->edges[e].child]++;
	}
	for (size_t v = 0; v < nc; v++) {
		out_start[v + 1] += out_start[v];
		in_start[v + 1] += in_start[v];
	}
	for (size_t e = 0; e < ne; e++) {
		out[out_start[l->edges[e].parent]++] = (uint32_t)e;
		in[in_start[l->edges[e].child]++] = (uint32_t)e;
	}
	for (size_t v = nc; v > 0; v--) {
		out_start[v] = out_start[v - 1];
		in_start[v] = in_start[v - 1];
	}
	out_start[0] = in_start[0] = 0;
	for (size_t v = 0; v < nc; v++)
		if (indeg[v] == 0)
			queue[tail++] = (uint32_t)v;
	while (head < tail) {
		uint32_t v = queue[head++];

		for (uint32_t i = out_start[v]; i < out_start[v + 1]; i++)
			if (--indeg[l->edges[out[i]].child] == 0)
				queue[tail++] = l->edges[out[i]].child;
	}
	if (tail == nc)
		goto out;
	/* every coflow left has a parent left: walk back until a coflow repeats */
	memset(step, 0xff, (nc + 1) * sizeof(*step));
	{
		uint32_t v = 0, n = 0, u;
		size_t best = ne;

		while (indeg[v] == 0)
			v++;
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
		ret = 1;
	}
out:
	free(indeg);
	free(out_start);
	free(in_start);
	free(out);
	free(in);
	free(queue);
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

static struct cp_model *parse_loom(struct sim_lexer *lx, uint32_t *ret_nhosts, struct loom_err *err,
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

/* ---- public entry points ----------------------------------------------------- */

int sim_trace_format_parse(const char *s, enum sim_trace_format *ret_fmt)
{
	static const struct {
		const char *name;
		enum sim_trace_format fmt;
	} names[] = {
		{"fb", SIM_TRACE_FB},
		{"sincronia", SIM_TRACE_SINCRONIA},
		{"loom", SIM_TRACE_LOOM},
	};

	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(s, names[i].name) == 0) {
			*ret_fmt = names[i].fmt;
			return 0;
		}
	}
	return -EINVAL;
}

const char *sim_trace_format_name(enum sim_trace_format fmt)
{
	switch (fmt) {
	case SIM_TRACE_FB:
		return "fb";
	case SIM_TRACE_SINCRONIA:
		return "sincronia";
	case SIM_TRACE_LOOM:
		return "loom";
	}
	return "unknown";
}

struct cp_model *sim_trace_parse(const char *buf, size_t len, const char *name,
				 enum sim_trace_format fmt, uint32_t *ret_nhosts,
				 struct loom_err *err)
{
	struct loom_err local;
	struct sim_lexer lx = {.buf = buf, .len = buf ? len : 0, .name = name ? name : "<trace>"};
	struct cp_model *m;
	uint32_t nhosts = 0;
	int rc = -EINVAL;

	if (!err)
		err = &local;
	loom_err_clear(err);
	switch (fmt) {
	case SIM_TRACE_FB:
	case SIM_TRACE_SINCRONIA:
		m = parse_single(&lx, fmt, &nhosts, err, &rc);
		break;
	case SIM_TRACE_LOOM:
		m = parse_loom(&lx, &nhosts, err, &rc);
		break;
	default:
		m = NULL;
		loom_err_set(err, EINVAL, "%s: unknown trace format %d", lx.name, (int)fmt);
		break;
	}
	sim_lex_done(&lx);
	if (!m) {
		errno = rc < 0 ? -rc : EINVAL;
		return NULL;
	}
	if (ret_nhosts)
		*ret_nhosts = nhosts;
	return m;
}

struct cp_model *sim_trace_load(const char *path, enum sim_trace_format fmt, uint32_t *ret_nhosts,
				struct loom_err *err)
{
	struct cp_model *m;
	char *buf = NULL;
	size_t len = 0;
	int r, saved;

	r = sim_read_file(path, "no trace path given", &buf, &len, err);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	m = sim_trace_parse(buf, len, path, fmt, ret_nhosts, err);
	saved = errno;
	free(buf);
	errno = saved;
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
