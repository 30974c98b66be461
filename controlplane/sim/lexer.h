/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/sim/lexer: the line lexer behind every text reader of the
 * simulator (traces, dags.txt); private to controlplane/sim.
 *
 * Works over a borrowed buffer that need not be NUL-terminated: each line is
 * copied, '#' starts a comment to the end of the line, blank lines are
 * skipped, NUL bytes are rejected. Every error is "name:line: reason".
 * Memory grows with the longest line and its token count only. Also the
 * file reader and growable-array helper those readers share.
 */
#ifndef LOOM_CONTROLPLANE_SIM_LEXER_H
#define LOOM_CONTROLPLANE_SIM_LEXER_H

#include <stddef.h>

#include "common/errors.h"

struct sim_lexer {
	const char *buf; /* borrowed input */
	size_t len, pos;
	const char *name;
	unsigned long lineno; /* of the line last returned */
	char *line;           /* copy of the current line, split in place */
	size_t line_cap;
	char **tok;
	size_t ntok, tok_cap;
};

/* Fills err with "name:line: reason" and returns -EINVAL. */
__attribute__((format(printf, 4, 5))) int sim_lex_err_at(struct loom_err *err, const char *name,
							 unsigned long line, const char *fmt, ...);

/* Fills err with "name:line: out of memory" and returns -ENOMEM. */
int sim_lex_nomem(struct loom_err *err, const char *name, unsigned long line);

/* "name:line: reason" for the lexer's current line; returns -EINVAL. */
#define sim_lex_err(lx, err, ...) sim_lex_err_at((err), (lx)->name, (lx)->lineno, __VA_ARGS__)

/* Makes room for need elements of size elem in *p (capacity *cap). 0 or -ENOMEM. */
int sim_grow(void **p, size_t *cap, size_t need, size_t elem);

/*
 * Advances to the next line that has tokens. Returns 1 with tok[0 .. ntok)
 * set (valid until the next call), 0 at the end of the input, or -errno with
 * err filled.
 */
int sim_lex_next(struct sim_lexer *lx, struct loom_err *err);

/*
 * Reads all of path into *ret_buf (caller frees; not NUL-terminated). Returns
 * 0, or -errno with err filled: missing when path is NULL (-EINVAL), else
 * "path: strerror".
 */
int sim_read_file(const char *path, const char *missing, char **ret_buf, size_t *ret_len,
		  struct loom_err *err);

/* Frees the lexer's buffers (not the input). */
void sim_lex_done(struct sim_lexer *lx);

#endif
