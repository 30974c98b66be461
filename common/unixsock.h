/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common/unixsock: the one rule for the path of a Unix socket a daemon is
 * about to bind() (loomd's listen_unix, the admin socket).
 *
 * A socket file nobody listens on was left by a process that died: it is
 * removed. A socket something answers on belongs to a running process, and
 * anything that is not a socket (a regular file, a directory, a symbolic
 * link) is someone's data: both are left alone and refused.
 */
#ifndef LOOM_COMMON_UNIXSOCK_H
#define LOOM_COMMON_UNIXSOCK_H

#include "common/errors.h"

/*
 * Makes path free for bind(): returns 0 if nothing is there or a stale
 * socket was removed; -EEXIST if path exists and is not a socket ("<what>
 * <path> exists and is not a socket; not removing it"); -EADDRINUSE if a
 * process listens on it; -ENAMETOOLONG, or another -errno if it cannot be
 * checked or removed. what (e.g. "listen_unix", "admin socket") starts the
 * message written into err (may be NULL). Nothing is removed on error.
 */
int loom_unixsock_clear_stale(const char *what, const char *path, struct loom_err *err);

#endif
