/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libloom: the framework-facing client of the Loom controller (loomd).
 *
 * A framework (a job scheduler, an MPI launcher, a shuffle service) connects
 * to loomd, registers each job as a DAG of coflows, announces the 5-tuples of
 * its flows as they open, and says when coflows and jobs are done; loomd then
 * orders the coflows on the fabric. docs/libloom.md is the guide.
 *
 * Invariants and conventions:
 * - Every int function returns 0 (or a count) on success and -errno on
 *   failure; loom_client_connect() returns NULL and sets errno. After any
 *   failure, loom_client_strerror() holds a message for the calling thread:
 *   the controller's own words when it refused a request, else what failed
 *   ("connect unix:/x: No such file or directory").
 * - A refusal by the controller maps to -errno as follows: BAD_REQUEST
 *   -EINVAL, BAD_VERSION -EPROTONOSUPPORT, UNKNOWN_TYPE -EBADMSG, EXISTS
 *   -EEXIST, NOT_FOUND -ENOENT, CYCLE -ELOOP, FINISHED -EALREADY, WRONG_ROLE
 *   -EPERM, NOT_READY -ENOTCONN, LIMIT -ENOSPC, INTERNAL -EIO, UNAVAILABLE
 *   -ESHUTDOWN, DENIED -EACCES (a refused token or certificate; another
 *   tenant's job); an unknown code is -EPROTO.
 * - Every call blocks for at most the client's timeout (waiting for other
 *   threads' calls on the same client included) and fails with -ETIMEDOUT
 *   past it. A call that meets a broken connection reconnects (and repeats
 *   the Hello handshake) once, then repeats its request once.
 * - One client may be shared by any number of threads; requests are sent and
 *   answered one at a time, in order.
 * - The library never prints, never raises SIGPIPE and never changes signal
 *   dispositions. All memory passed in stays the caller's; nothing passed in
 *   is kept after a call returns (strings are copied).
 *
 * This header uses only libc types and may be included from C++.
 */
#ifndef LOOM_CLIENT_LOOM_H
#define LOOM_CLIENT_LOOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where loom_client_connect(NULL, ...) looks first, and where it falls back. */
#define LOOM_CLIENT_ENV_CONTROLLER     "LOOM_CONTROLLER"
#define LOOM_CLIENT_DEFAULT_ADDRESS    "unix:/run/loom/loomd.sock"
#define LOOM_CLIENT_TIMEOUT_MS_DEFAULT 5000
/*
 * TLS with mutual authentication to a TCP address (docs/security.md): PEM
 * files of this client's certificate, its key, and the CA that signed
 * loomd's, read by loom_client_connect() from these variables (all three or
 * none; ignored for a Unix socket). Unset: plain TCP.
 */
#define LOOM_CLIENT_ENV_TLS_CERT "LOOM_TLS_CERT"
#define LOOM_CLIENT_ENV_TLS_KEY  "LOOM_TLS_KEY"
#define LOOM_CLIENT_ENV_TLS_CA   "LOOM_TLS_CA"
/*
 * The bearer token of this framework's tenant, from loomd's tokens file
 * (docs/security.md): read by loom_client_connect() and sent in every Hello.
 * Unset or empty: none (loomd then refuses the Hello when it has a tokens
 * file and the connection is not TLS with a client certificate).
 */
#define LOOM_CLIENT_ENV_TOKEN "LOOM_TOKEN"

/* A connection to loomd. Opaque; made by loom_client_connect(). */
struct loom_client;

struct loom_client_options {
	/*
	 * Upper bound, in milliseconds, on every blocking call (connecting,
	 * the handshake, each request and its reply, waiting for the client's
	 * lock). 0: LOOM_CLIENT_TIMEOUT_MS_DEFAULT. Negative: EINVAL.
	 */
	int timeout_ms;
	/* Shown in the controller's logs; NULL: "libloom[PID]". Copied. */
	const char *name;
};

/*
 * A flow's 5-tuple as its sending host sees it. family 0 means "no tuple";
 * 4 (IPv4, the address in the first 4 bytes of src/dst, the rest zero) or
 * 6 (IPv6). Addresses are in network byte order, ports in host order.
 */
struct loom_client_tuple {
	uint8_t family;   /* 0, 4 or 6 */
	uint8_t protocol; /* 6 TCP, 17 UDP */
	uint16_t src_port, dst_port;
	uint8_t src[16], dst[16];
};

struct loom_client_flow {
	uint32_t src_host, dst_host; /* host ids of the controller's fabric */
	uint64_t bytes;              /* expected size; 0 = unknown */
	/*
	 * true: the controller finds the hosts from the tuple's addresses
	 * (src_host and dst_host are ignored); needs a tuple.
	 */
	bool by_address;
	struct loom_client_tuple tuple; /* optional at registration */
};

struct loom_client_coflow {
	uint64_t id;                /* unique within the controller, across jobs */
	uint64_t release_offset_ns; /* earliest release after registration */
	/*
	 * Number of flows the coflow will have. 0 with flows listed: exactly
	 * those (the coflow completes when they are done). More than listed:
	 * the rest are announced later. 0 without flows: an open coflow, whose
	 * flows are announced as they start and which completes on
	 * loom_client_coflow_done().
	 */
	uint32_t expected_flows;
	const struct loom_client_flow *flows;
	size_t n_flows;
};

struct loom_client_edge {
	uint64_t parent, child; /* coflow ids of the same job */
	uint64_t delay_ns;      /* compute time between parent done and child release */
};

struct loom_client_job {
	uint64_t id;      /* unique within the controller */
	double weight;    /* 0 = 1 */
	const char *name; /* for logs; may be NULL */
	const struct loom_client_coflow *coflows;
	size_t n_coflows;
	const struct loom_client_edge *edges;
	size_t n_edges;
};

/* One flow announced for a coflow already registered; flow.tuple is required. */
struct loom_client_announce {
	uint64_t coflow_id;
	struct loom_client_flow flow;
};

/* The hosts of a socket's flow, when the caller knows them. */
struct loom_client_hosts {
	uint32_t src_host, dst_host;
};

/*
 * Connects to loomd and completes the Hello handshake (role FRAMEWORK).
 * address: "unix:/path", "/path" or "./path" (a Unix socket), "tcp:HOST:PORT"
 * or "HOST:PORT" (an IPv6 HOST in brackets: "[::1]:7600"); NULL means
 * $LOOM_CONTROLLER when set and not empty, else LOOM_CLIENT_DEFAULT_ADDRESS.
 * opts may be NULL (defaults). Returns a client (free with
 * loom_client_free()) or NULL with errno: EINVAL (bad address or options),
 * ENAMETOOLONG, ECONNREFUSED, ENOENT, ETIMEDOUT, EPROTONOSUPPORT (no
 * protocol version in common), EPROTO (not a Loom controller, or the TLS
 * handshake failed either way: loom_client_strerror() says why), ENOTSUP
 * ($LOOM_TLS_* set in a build without TLS), EACCES (loomd refused
 * $LOOM_TOKEN or the certificate, or needs a token), ...
 * Host names are resolved with getaddrinfo(), which the timeout does not
 * bound; numeric addresses never block on it.
 */
struct loom_client *loom_client_connect(const char *address,
					const struct loom_client_options *opts);

/*
 * Closes the connection and frees c (NULL is fine). Returns NULL. No call on
 * c may be in progress or follow.
 */
struct loom_client *loom_client_free(struct loom_client *c);

/* The address c connects to, canonical ("unix:/path" or "tcp:HOST:PORT"); owned by c. */
const char *loom_client_address(const struct loom_client *c);

/* The protocol version negotiated on the current connection. */
uint32_t loom_client_version(const struct loom_client *c);

/*
 * Registers a job: its coflows (with the flows known now) and the edges
 * between them. Returns 0, or -errno (e.g. -EEXIST for a job or coflow id
 * already known, -ELOOP for a cycle, -EINVAL for inconsistent fields).
 */
int loom_client_job_register(struct loom_client *c, const struct loom_client_job *job);

/*
 * Adds coflows and edges to job->id, a job this tenant registered that has
 * not finished (job->weight and job->name are ignored): for a DAG that grows
 * as the framework learns it (one coflow per MPI collective). Each edge's
 * child must be one of the coflows added; its parent may be any of the
 * job's, done or not (a child of a done parent is released at once, or
 * delay_ns after the parent's end). A job finishes when all its coflows are
 * done: keep one open coflow unfinished while more may come. Returns 0, or
 * -errno as loom_client_job_register() does, and -ENOENT (no such job),
 * -EALREADY (the job has finished), -EINVAL (an edge leads to a coflow
 * registered before).
 */
int loom_client_job_extend(struct loom_client *c, const struct loom_client_job *job);

/*
 * Announces n flows in one request. Each needs a tuple. Returns the number
 * the controller took: n when all were, k < n when it took flows[0..k-1] and
 * refused flows[k] (errno and loom_client_strerror() then say why; announce
 * flows[k..] again to get the error as a return value); -errno when the
 * request failed or flows[0] was refused. n == 0 returns 0 without asking.
 */
int loom_client_flows_announce(struct loom_client *c, const struct loom_client_announce *flows,
			       size_t n);

/*
 * Reads the 5-tuple of a connected TCP or UDP socket (IPv4 or IPv6), from
 * this end: src is the local address (getsockname), dst the peer's
 * (getpeername). An IPv4-mapped IPv6 address gives an IPv4 tuple. Returns 0
 * with *ret_tuple, or -errno (-ENOTCONN, -EAFNOSUPPORT for other families,
 * -EPROTONOSUPPORT for other protocols, -ENOTSOCK, -EBADF).
 */
int loom_client_socket_tuple(int fd, struct loom_client_tuple *ret_tuple);

/*
 * Announces the flow of a connected socket (its tuple as read by
 * loom_client_socket_tuple(), from this end) for coflow_id. hosts NULL: the
 * controller maps the addresses to hosts (by_address); else those hosts.
 * bytes: expected size, 0 = unknown. Call it on the sending end. Returns 0
 * or -errno.
 */
int loom_client_socket_announce(struct loom_client *c, int fd, uint64_t coflow_id,
				const struct loom_client_hosts *hosts, uint64_t bytes);

/* Says that an open coflow has all its flows done. Returns 0 or -errno. */
int loom_client_coflow_done(struct loom_client *c, uint64_t coflow_id);

/* Says that a job has finished (all its coflows done). Returns 0 or -errno. */
int loom_client_job_done(struct loom_client *c, uint64_t job_id);

/* Removes a job and its coflows from the controller. Returns 0 or -errno. */
int loom_client_job_unregister(struct loom_client *c, uint64_t job_id);

/*
 * The message of the calling thread's last failed libloom call ("no error"
 * when there was none). The buffer is the thread's own; a later failure in
 * the same thread overwrites it, successful calls leave it alone.
 */
const char *loom_client_strerror(void);

#ifdef __cplusplus
}
#endif

#endif
