/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common/kvfile: the one reader of "KEY = VALUE" configuration files
 * (loomd's, loom-agent's). It splits lines and hands each key and value
 * to a callback; what a key means is the caller's business.
 *
 * The format (docs/units.md has the user's version):
 *   - one "KEY = VALUE" per line; spaces around both are dropped;
 *   - '#' starts a comment to the end of the line, except inside a quoted
 *     value; blank and comment-only lines are skipped;
 *   - a value wholly inside double quotes loses them ("" is the empty
 *     string; "a # b" keeps its spaces and '#'); there are no escapes, and
 *     a quote anywhere else is an ordinary character;
 *   - lines end in LF or CRLF; at most LOOM_KV_LINE_MAX characters each,
 *     the line ending not counted; a NUL byte is an error;
 *   - keys are passed as written: the reader neither folds case nor
 *     rejects repeats (loom-agent's address may repeat).
 *
 * Every error is "FILE:LINE: reason" in err; the first one stops the
 * reading, after the callback has seen every line before it.
 */
#ifndef LOOM_COMMON_KVFILE_H
#define LOOM_COMMON_KVFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/errors.h"

#define LOOM_KV_LINE_MAX 4096

/* One "KEY = VALUE" line, valid during the callback only. */
struct loom_kv {
	const char *file;  /* the name given to the reader */
	unsigned int line; /* 1-based */
	const char *key;   /* not empty, no surrounding space */
	const char *value; /* may be empty; quotes removed */
};

/*
 * Takes one key and value: returns 0 to go on, or -errno to stop with the
 * reason in err (the reader puts "FILE:LINE: " in front of it).
 */
typedef int (*loom_kv_fn)(void *ctx, const struct loom_kv *kv, struct loom_err *err);

/*
 * Reads f (not closed) to its end, calling fn for each key, in order; name
 * is what errors call the file. Returns 0, -EINVAL for a malformed line,
 * -errno of a read error, or what fn returned.
 */
int loom_kv_read(FILE *f, const char *name, loom_kv_fn fn, void *ctx, struct loom_err *err);

/*
 * loom_kv_read() on the file at path. Also -errno when it cannot be opened
 * ("PATH: No such file or directory") or read ("PATH: Is a directory").
 */
int loom_kv_load(const char *path, loom_kv_fn fn, void *ctx, struct loom_err *err);

/*
 * Writes key into buf (size bytes) with every '-' made '_' (the snake_case
 * spelling). Returns true when it changed something, false when not (or
 * when key does not fit: buf then holds "").
 */
bool loom_kv_key_snake(const char *key, char *buf, size_t size);

#endif
