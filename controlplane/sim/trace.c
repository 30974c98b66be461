/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Trace readers (coflow-benchmark, Sincronia, Loom) and the Loom writer; the
 * formats are described in docs/trace-format.md. This file: the token
 * helpers every reader uses and the public entry points; one file per format
 * besides (trace_impl.h says which).
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
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/sim/trace_impl.h"

/* ---- errors -------------------------------------------------------------- */

/* Prefixes a message the builder left in err with "name:line: "; returns -EINVAL or -ENOMEM. */
int trace_builder_err(struct loom_err *err, const char *name, unsigned long line, int rc)
{
	char msg[LOOM_ERR_MSG_MAX];

	if (rc == -ENOMEM)
		return sim_lex_nomem(err, name, line);
	snprintf(msg, sizeof(msg), "%s", loom_err_str(err));
	return sim_lex_err_at(err, name, line, "%s", msg);
}

/* Checks the line has exactly n tokens; usage is the record's syntax. */
int trace_lex_want(struct sim_lexer *lx, size_t n, const char *usage, struct loom_err *err)
{
	if (lx->ntok < n)
		return sim_lex_err(lx, err, "truncated line: expected '%s'", usage);
	if (lx->ntok > n)
		return sim_lex_err(lx, err, "extra tokens after '%s'", usage);
	return 0;
}

int trace_tok_u64(struct sim_lexer *lx, const char *tok, const char *what, uint64_t *ret,
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
int trace_tok_count(struct sim_lexer *lx, const char *tok, const char *what, uint64_t *ret,
		    struct loom_err *err)
{
	int r = trace_tok_u64(lx, tok, what, ret, err);

	if (r < 0)
		return r;
	if (*ret == 0)
		return sim_lex_err(lx, err, "%s must be > 0", what);
	return 0;
}

/* A port (FB, Sincronia) or host (Loom) number below n; limit names n in messages. */
int trace_tok_port(struct sim_lexer *lx, const char *tok, const char *what, uint32_t n,
		   const char *limit, uint32_t *ret, struct loom_err *err)
{
	uint64_t v = 0;
	int r = trace_tok_u64(lx, tok, what, &v, err);

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

int trace_tok_ms(struct sim_lexer *lx, const char *tok, const char *what, uint64_t *ret_ns,
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
int trace_tok_mb(struct sim_lexer *lx, const char *tok, const char *what, double *ret,
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
uint32_t trace_idmap_get(const struct loom_hmap *m, uint64_t key)
{
	uint64_t v;

	return loom_hmap_get(m, key, &v) ? (uint32_t)v : CP_NONE;
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
		{"fb-coflowsim", SIM_TRACE_FB_COFLOWSIM},
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
	case SIM_TRACE_FB_COFLOWSIM:
		return "fb-coflowsim";
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
	case SIM_TRACE_FB_COFLOWSIM:
	case SIM_TRACE_SINCRONIA:
		m = trace_parse_single(&lx, fmt, &nhosts, err, &rc);
		break;
	case SIM_TRACE_LOOM:
		m = trace_parse_loom(&lx, &nhosts, err, &rc);
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
