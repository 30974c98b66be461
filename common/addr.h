/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common/addr: the one grammar of Loom's endpoint strings, and the dialing
 * and binding of what it parses. loom-agent's --controller, libloom's
 * address, loomd's listen_unix, listen_tcp and metrics, and loomd's
 * benchmark all go through it; nothing else parses "HOST:PORT".
 *
 * The forms loom_addr_parse() accepts:
 *
 *   unix:PATH                 a Unix stream socket at PATH (any bytes, not empty)
 *   /PATH, .PATH              the same: a string starting with '/' or '.' ("./x",
 *                             "../x") is a Unix socket path as it stands
 *   tcp:HOST:PORT, HOST:PORT  TCP; HOST a name or an IPv4 address, without ':'
 *   tcp:[HOST]:PORT, [HOST]:PORT
 *                             TCP; an IPv6 HOST must be in brackets ("[::1]:7420")
 *
 * PATH is shorter than sun_path (at most LOOM_ADDR_PATH_MAX - 1 = 107
 * bytes). HOST is at most LOOM_ADDR_HOST_MAX - 1 bytes, has no '[' or ']'
 * but the brackets around it, and is not checked further: getaddrinfo()
 * decides at dial or bind time. PORT is decimal digits only, 1..65535. With
 * LOOM_ADDR_LISTEN, HOST may be empty (":7420", "[]:7420": every local
 * address) and PORT 0 (a port the kernel picks). With LOOM_ADDR_TCP_ONLY the
 * Unix forms are refused.
 *
 * Every rejection is -EINVAL (-ENAMETOOLONG for a PATH too long for
 * sun_path) with a message "<what> \"<input>\": <why>": an empty path, a
 * path too long, no ':' and port, an empty port, a port not a number or out
 * of range, an unterminated '[', something other than ':' after ']', an
 * empty host, a host too long, a stray '[' or ']' in the host, an IPv6 host
 * without brackets, a Unix form where TCP is required.
 *
 * Binding a Unix path clears a stale socket file by the one rule of
 * common/unixsock.h. Nothing here logs.
 */
#ifndef LOOM_COMMON_ADDR_H
#define LOOM_COMMON_ADDR_H

#include <stdint.h>

#include "common/errors.h"

#define LOOM_ADDR_PATH_MAX 108 /* sizeof(sockaddr_un.sun_path), with its NUL */
#define LOOM_ADDR_HOST_MAX 256 /* a DNS name (253) or an IPv6 address with its zone, NUL */
/* The longest loom_addr_str(): "tcp:[" HOST "]:65535" or "unix:" PATH, with the NUL. */
#define LOOM_ADDR_STR_MAX (sizeof("tcp:[]:65535") - 1 + LOOM_ADDR_HOST_MAX)

/* loom_addr_parse() flags */
#define LOOM_ADDR_LISTEN   0x1u /* an empty HOST (every address) and PORT 0 are allowed */
#define LOOM_ADDR_TCP_ONLY 0x2u /* refuse the Unix forms */
/* loom_addr_dial() and loom_addr_bind() flags */
#define LOOM_ADDR_NONBLOCK 0x4u /* the socket returned is non-blocking (else blocking) */
#define LOOM_ADDR_NOWAIT   0x8u /* dial: -EAGAIN at once on a Unix listener's full backlog */

enum loom_addr_kind {
	LOOM_ADDR_UNIX = 1,
	LOOM_ADDR_TCP,
};

struct loom_addr {
	enum loom_addr_kind kind;
	char path[LOOM_ADDR_PATH_MAX]; /* UNIX: the socket path, not empty */
	char host[LOOM_ADDR_HOST_MAX]; /* TCP: without brackets; "" = every address (LISTEN) */
	uint16_t port;                 /* TCP: 1..65535; 0 = the kernel picks (LISTEN) */
};

/*
 * Parses s (one of the forms above, as narrowed by flags) into *ret. what
 * ("address", "listen_tcp", ...) starts the message written into err (may be
 * NULL). Returns 0, or -EINVAL / -ENAMETOOLONG; *ret is written only on
 * success.
 */
int loom_addr_parse(const char *what, const char *s, unsigned flags, struct loom_addr *ret,
		    struct loom_err *err);

/*
 * The address of the Unix socket at path, taken as it stands (no "unix:"
 * prefix, no TCP forms: a value that can only be a path, such as loomd's
 * listen_unix). Returns 0, or -EINVAL (empty) / -ENAMETOOLONG with
 * "<what> \"<path>\": <why>" (as loom_addr_parse says it) in err; *ret is written only on success.
 */
int loom_addr_unix(const char *what, const char *path, struct loom_addr *ret, struct loom_err *err);

/*
 * Writes a's canonical form into buf (LOOM_ADDR_STR_MAX bytes):
 * "unix:PATH", "tcp:HOST:PORT", or "tcp:[HOST]:PORT" when HOST has a ':'.
 * Parsing it gives a back. Returns buf.
 */
char *loom_addr_str(const struct loom_addr *a, char buf[LOOM_ADDR_STR_MAX]);

/*
 * Opens a stream socket connected to a (close-on-exec; non-blocking with
 * LOOM_ADDR_NONBLOCK). A TCP host is resolved with getaddrinfo() (which the
 * deadline does not bound) and each of its addresses is tried in turn.
 * deadline_ns (on loom_clock_mono_ns(); UINT64_MAX: none) bounds the
 * connecting: a Unix listener whose backlog is full is tried again until
 * then, unless LOOM_ADDR_NOWAIT asks for -EAGAIN at once. Returns the fd (the caller owns it), or -errno
 * (-ETIMEDOUT when the deadline passed, -EHOSTUNREACH when the host does not
 * resolve) with "<what> <canonical address>: <why>" in err (may be NULL).
 */
int loom_addr_dial(const char *what, const struct loom_addr *a, uint64_t deadline_ns,
		   unsigned flags, struct loom_err *err);

/*
 * Opens a stream socket bound to a but not listening yet, so that the
 * caller can set the socket file's mode and group first (close-on-exec;
 * non-blocking with LOOM_ADDR_NONBLOCK). A Unix path in the way is cleared
 * by loom_unixsock_clear_stale() (a stale socket is removed; a live one, or
 * anything that is not a socket, is refused). A TCP address gets
 * SO_REUSEADDR and binds the first address getaddrinfo() gives (an empty
 * host: every address). Returns the fd (the caller owns it and, for a Unix
 * socket, the file), or -errno with "<what> <PATH or HOST:PORT>: <why>" in
 * err (may be NULL).
 */
int loom_addr_bind(const char *what, const struct loom_addr *a, unsigned flags,
		   struct loom_err *err);

#endif
