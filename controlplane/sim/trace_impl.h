/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/sim/trace_impl.h: what the trace readers share, private to
 * the simulator (the public interface is in sim.h). trace.c has the token
 * helpers and the entry points, trace_single.c the machinery of the two
 * one-coflow-per-line formats, trace_fb.c and trace_sincronia.c their
 * lines, trace_loom.c Loom's format (reader and writer).
 */
#ifndef LOOM_CONTROLPLANE_SIM_TRACE_IMPL_H
#define LOOM_CONTROLPLANE_SIM_TRACE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hmap.h"
#include "controlplane/sim/lexer.h"
#include "controlplane/sim/sim.h"

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

/* ---- token helpers (trace.c): 0, or -EINVAL with "name:line: reason" in err ---- */

/* Prefixes a message the builder left in err with "name:line: "; returns -EINVAL or -ENOMEM. */
int trace_builder_err(struct loom_err *err, const char *name, unsigned long line, int rc);
/* Checks the line has exactly n tokens; usage is the record's syntax. */
int trace_lex_want(struct sim_lexer *lx, size_t n, const char *usage, struct loom_err *err);
/* A non-negative integer. */
int trace_tok_u64(struct sim_lexer *lx, const char *tok, const char *what, uint64_t *ret,
		  struct loom_err *err);
/* A count that must be > 0. */
int trace_tok_count(struct sim_lexer *lx, const char *tok, const char *what, uint64_t *ret,
		    struct loom_err *err);
/* A port (FB, Sincronia) or host (Loom) number below n; limit names n in messages. */
int trace_tok_port(struct sim_lexer *lx, const char *tok, const char *what, uint32_t n,
		   const char *limit, uint32_t *ret, struct loom_err *err);
/* Decimal milliseconds (up to 6 decimals) into exact nanoseconds, at most TRACE_MAX_NS. */
int trace_tok_ms(struct sim_lexer *lx, const char *tok, const char *what, uint64_t *ret_ns,
		 struct loom_err *err);
/* A size in MB: finite, > 0 and small enough that its bytes fit. */
int trace_tok_mb(struct sim_lexer *lx, const char *tok, const char *what, double *ret,
		 struct loom_err *err);
/* The value stored for key in an id -> index map, or CP_NONE. */
uint32_t trace_idmap_get(const struct loom_hmap *m, uint64_t key);

/* ---- coflow-benchmark and Sincronia: one job of one coflow per line (trace_single.c) ---- */

struct single {
	struct sim_lexer *lx;
	uint32_t nports;
	struct cp_builder *b;
	struct loom_hmap ids; /* coflow id -> line number (saturated) */
	uint64_t nflows, max_flows;
	bool coflowsim_sizes; /* SIM_TRACE_FB_COFLOWSIM */
	/* per-line scratch, grown to the line's token count */
	uint32_t *a, *c, *sorted;
	double *mb;
	size_t cap_a, cap_c, cap_sorted, cap_mb;
};

/* Rejects a port listed twice in ports[0 .. n). */
int trace_single_unique(struct single *s, const uint32_t *ports, size_t n, const char *what,
			struct loom_err *err);
/* Adds the flow count of one line to the total, within s->max_flows. */
int trace_single_count_flows(struct single *s, uint64_t n, struct loom_err *err);
/* Registers coflow id (checking it is new) as a job of one coflow arriving at arrival_ns. */
int trace_single_add_coflow(struct single *s, uint64_t id, uint64_t arrival_ns,
			    struct loom_err *err);
/* Reads a whole coflow-benchmark or Sincronia trace; NULL with *ret_rc and err on failure. */
struct cp_model *trace_parse_single(struct sim_lexer *lx, enum sim_trace_format fmt,
				    uint32_t *ret_nhosts, struct loom_err *err, int *ret_rc);

/* One line of each (trace_fb.c, trace_sincronia.c). */
int trace_fb_line(struct single *s, struct loom_err *err);
int trace_sincronia_line(struct single *s, struct loom_err *err);

/* ---- Loom's format (trace_loom.c) ---- */

/* Reads a whole Loom trace; NULL with *ret_rc and err on failure. */
struct cp_model *trace_parse_loom(struct sim_lexer *lx, uint32_t *ret_nhosts, struct loom_err *err,
				  int *ret_rc);

#endif
