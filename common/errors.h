/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common/errors: -errno conventions and a small error-message buffer.
 *
 * Functions return 0 (or a count) on success and -errno on failure. Parsers
 * that can say more fill a struct loom_err with "file:line: reason" so the
 * program that handles the error prints it once.
 */
#ifndef LOOM_COMMON_ERRORS_H
#define LOOM_COMMON_ERRORS_H

#include <errno.h>
#include <stdarg.h>

#define LOOM_ERR_MSG_MAX 1024 /* "file:line: " + a reason naming every config key fits */

struct loom_err {
	char msg[LOOM_ERR_MSG_MAX];
};

/* Returns a negative errno from the current errno (never 0: -EIO if unset). */
static inline int loom_negerrno(void)
{
	return errno > 0 ? -errno : -EIO;
}

/*
 * Writes a message into err (may be NULL) and returns -code (code > 0), so a
 * parser can `return loom_err_set(err, EINVAL, "%s:%u: bad port", ...)`.
 */
__attribute__((format(printf, 3, 4))) int loom_err_set(struct loom_err *err, int code,
						       const char *fmt, ...);

/*
 * The adapter at the edge of gnn/ and ebpf/: they may not include this
 * header, so they keep a private copy of its shape (struct gnn_err and
 * struct ebpf_err: a msg[] and a NULL-safe setter returning -code). Copies
 * their msg into err (may be NULL) and returns -code (code > 0); a caller
 * that adds context uses loom_err_set(err, code, "context: %s", e.msg).
 */
static inline int loom_err_from(struct loom_err *err, int code, const char *msg)
{
	return loom_err_set(err, code, "%s", msg);
}

/* Clears the message. */
void loom_err_clear(struct loom_err *err);

/* Returns "file:line: "-style context strings safely: never NULL. */
const char *loom_err_str(const struct loom_err *err);

/* Parses a base-10 unsigned integer that must fill the whole string. 0 or -EINVAL/-ERANGE. */
int loom_parse_u64(const char *s, unsigned long long *ret);

/* Parses a finite double that must fill the whole string. 0 or -EINVAL/-ERANGE. */
int loom_parse_double(const char *s, double *ret);

#endif
