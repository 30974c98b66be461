/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common/admin: a Unix-socket command server for daemons, run inside the
 * daemon's libevent loop (the idea of OVS lib/unixctl.h), and the blocking
 * client that loomctl and tests use to call it.
 *
 * Protocol: newline-delimited JSON over a stream socket. Each request is one
 * line, {"cmd": "NAME", "args": ["a", "b"]} ("args" may be left out or null);
 * each reply is one line, {"ok": true, "result": <json>} or
 * {"ok": false, "error": "message"}. A connection may carry any number of
 * requests; they are answered in order. A request that is not valid JSON, has
 * the wrong types or names an unknown command gets an error reply and the
 * connection stays open; a request line longer than LOOM_ADMIN_LINE_MAX bytes
 * gets an error reply and the connection is closed.
 *
 * Invariants: every callback (command handlers included) runs on the thread
 * that runs the event_base; struct loom_admin is not thread-safe. The server
 * writes with bufferevents, so a process that serves must ignore SIGPIPE (a
 * client that goes away mid-reply would otherwise kill it). The client side,
 * loom_admin_call(), needs no event loop and never raises SIGPIPE.
 */
#ifndef LOOM_COMMON_ADMIN_H
#define LOOM_COMMON_ADMIN_H

#include <jansson.h>
#include <sys/types.h>

#include "common/errors.h"

struct event_base;
struct loom_admin;

/* Longest request line the server accepts, newline excluded. */
#define LOOM_ADMIN_LINE_MAX (64 * 1024)

/* Longest reply line loom_admin_call() accepts. */
#define LOOM_ADMIN_REPLY_MAX (256u * 1024 * 1024)

/*
 * A command handler. argv[0..argc-1] are the request's string arguments
 * (argv[argc] is NULL); they stay valid only for the call. On success it
 * returns 0 and stores a new reference in *ret_result (the server takes it;
 * leaving it NULL replies with a JSON null). On failure it returns -errno and
 * may fill err with the message the client sees; *ret_result is ignored (and
 * released if set). Runs on the loop thread; it must not free the admin.
 */
typedef int (*loom_admin_fn)(void *ctx, int argc, const char *const *argv, json_t **ret_result,
			     struct loom_err *err);

/*
 * Listens on the Unix socket path and serves on base. A socket file left by
 * a dead daemon (nothing answers on it) is removed first; if another process
 * is listening, or path exists and is not a socket, it fails rather than
 * steal it. The socket is created with mode 0660. The built-in command "help"
 * is registered. Returns the server (free with loom_admin_free()), or NULL
 * with errno set and a message in err (EADDRINUSE: another daemon is
 * listening; EEXIST: not a socket; ENAMETOOLONG; or what socket/bind failed
 * with). base stays owned by the caller and must outlive the server.
 */
struct loom_admin *loom_admin_new(struct event_base *base, const char *path, struct loom_err *err);

/*
 * loom_admin_new() with the socket's mode (e.g. 0600: its owner alone) and
 * group (gid; (gid_t)-1 leaves the process's), both set before anyone can
 * connect. Fails as loom_admin_new(), and with the chown's errno (EPERM: a
 * group the process is not in).
 */
struct loom_admin *loom_admin_new_perm(struct event_base *base, const char *path, mode_t mode,
				       gid_t gid, struct loom_err *err);

/*
 * Inside a command handler: the user and process ids of the client whose
 * command runs (SO_PEERCRED, read when it connected). 0, or -ENOENT outside
 * a handler or when the kernel did not say.
 */
int loom_admin_peer(const struct loom_admin *a, uid_t *ret_uid, pid_t *ret_pid);

/*
 * Closes every connection (replies not yet written are dropped), stops
 * listening and unlinks the socket path. Accepts NULL; returns NULL.
 */
struct loom_admin *loom_admin_free(struct loom_admin *a);

/*
 * Registers cmd (1..63 characters of [A-Za-z0-9_.-]) with its usage string
 * for the arguments (may be NULL or "") and a one-line help text; the strings
 * are copied, ctx is passed to fn as is and stays owned by the caller.
 * Returns 0, -EEXIST when cmd is already registered ("help" always is),
 * -EINVAL for a bad name or NULL fn, or -ENOMEM.
 */
int loom_admin_register(struct loom_admin *a, const char *cmd, const char *args_usage,
			const char *help, loom_admin_fn fn, void *ctx);

/* Returns the socket path the server listens on (owned by the server). */
const char *loom_admin_path(const struct loom_admin *a);

/*
 * Registers the daemons' shared "set-log-level LEVEL" command (error, warn,
 * info, debug; result {"level": LEVEL}). Returns as loom_admin_register().
 */
int loom_admin_register_log_level(struct loom_admin *a);

/*
 * Calls cmd with argv[0..argc-1] on the admin socket at path and waits for
 * the reply, for at most timeout_ms in all (timeout_ms <= 0: no limit).
 * Returns 0 and stores the result in *ret_result (a new reference the caller
 * must json_decref; JSON null when the reply has none), or -errno with a
 * message in err:
 *   -ENOENT, -ECONNREFUSED, -EACCES, ...  the socket cannot be reached;
 *   -ETIMEDOUT   no complete reply in time;
 *   -ECONNRESET  the server closed the connection before replying;
 *   -EPROTO      the reply is not {"ok": ..} JSON;
 *   -EMSGSIZE    the reply is longer than LOOM_ADMIN_REPLY_MAX;
 *   -EINVAL      the server replied {"ok": false}; err holds its message.
 */
int loom_admin_call(const char *path, const char *cmd, int argc, const char *const *argv,
		    int timeout_ms, json_t **ret_result, struct loom_err *err);

#endif
