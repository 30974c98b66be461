/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dataplane/agent: loom-agent's core. One per host: a session with loomd
 * (Hello, then a full table, then deltas; flow statistics back), the
 * versioned priority table (table.h), and an enforcer chosen by name that
 * makes the host's packets obey it (struct dp_enforcer_class: dpdk, tc, or
 * null, which only records).
 *
 * Invariants:
 *   - fail-static: when loomd is unreachable the enforcer keeps the last
 *     table; the agent reconnects with exponential backoff and then gets a
 *     full table;
 *   - the enforcer sees a new snapshot only after an update applied whole;
 *     a delta that does not follow the table's version asks loomd for a full
 *     table (Resync) and changes nothing;
 *   - one thread (a libevent loop) owns the session and the table;
 *     enforcers run their own fast path and take snapshots by pointer.
 */
#ifndef LOOM_DATAPLANE_AGENT_H
#define LOOM_DATAPLANE_AGENT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/errors.h"
#include "dataplane/table.h"
#include "proto/tuple.h"

#define DP_MAX_ADDRS 16

struct dp_agent_config {
	char controller[160]; /* "unix:/path", "/path", "tcp:HOST:PORT" or "HOST:PORT" */
	uint32_t host_id;
	uint64_t link_bps;
	uint32_t classes;
	char enforcer[16];       /* a registered enforcer's name */
	char enforcer_args[512]; /* passed to its init (e.g. EAL arguments for dpdk) */
	char admin_socket[108];  /* "" = none */
	uint8_t addr_family[DP_MAX_ADDRS];
	uint8_t addrs[DP_MAX_ADDRS][16]; /* announced in Hello */
	uint32_t naddrs;
	uint64_t stats_interval_ns;
	uint64_t heartbeat_ns;
	uint64_t backoff_min_ns, backoff_max_ns;
	uint64_t connect_timeout_ns;
	/*
	 * TLS to a TCP controller (docs/security.md): PEM files of this agent's
	 * certificate (naming "host-N" and its addresses), its key, and the CA
	 * that signed loomd's. All three or none; "" = plain TCP.
	 */
	char tls_cert[PATH_MAX], tls_key[PATH_MAX], tls_ca[PATH_MAX];
};

/* Defaults: unix:/run/loom/loomd.sock, host 0, 1 Gbit/s, 8 classes, null enforcer... */
void dp_agent_config_default(struct dp_agent_config *c);

/*
 * agent_config.c: sets one option by its name in snake_case ("host_id",
 * "enforcer_args"...) or in the flags' kebab-case ("host-id"), from its
 * text value (units as docs/units.md says; stats_interval and heartbeat
 * are durations, a bare number milliseconds). Returns 0, or -ENOENT
 * (unknown option, or an enforcer not in this build) or -EINVAL (bad
 * value) with err naming the option; a refused value leaves c as it was.
 */
int dp_agent_config_set(struct dp_agent_config *c, const char *key, const char *value,
			struct loom_err *err);

/*
 * Reads "key = value" lines (common/kvfile.h: '#' comments, blank lines,
 * quotes, CRLF, at most LOOM_KV_LINE_MAX characters each) from path onto
 * c, in order; a kebab-case key is taken with a deprecation warning (one
 * log line naming its snake_case spelling). Returns 0, or -errno (the file
 * cannot be opened or read, e.g. -EISDIR for a folder; -ENOENT or -EINVAL
 * as dp_agent_config_set says for a bad line, -EINVAL for a malformed or
 * too long one) with err = "path[:line]: reason"; c then holds the lines
 * before the bad one.
 */
int dp_agent_config_load(struct dp_agent_config *c, const char *path, struct loom_err *err);

/* ---- enforcers ---------------------------------------------------------------------------- */

struct dp_enforcer;

/* Receives one flow's counters since the last collect. */
typedef void (*dp_counter_fn)(void *ctx, const struct wire_tuple *t, uint64_t bytes, bool done);

struct dp_enforcer_class {
	const char *name;
	const char *summary;
	/* Starts the enforcer; priv goes into e->priv. 0 or -errno with err. */
	int (*init)(struct dp_enforcer *e, const char *args, uint32_t classes,
		    struct loom_err *err);
	/* Stops it and removes whatever it installed (qdiscs, programs...). */
	void (*done)(struct dp_enforcer *e);
	/* Enforces snap from now on; takes ownership of it. 0 or -errno. */
	int (*apply)(struct dp_enforcer *e, struct dp_snapshot *snap);
	/* Reports per-flow counters accumulated since the last call. */
	void (*collect)(struct dp_enforcer *e, dp_counter_fn fn, void *ctx);
	/* Counters for the admin socket: name/value pairs through fn. */
	void (*stats)(struct dp_enforcer *e, void (*fn)(void *ctx, const char *name, uint64_t v),
		      void *ctx);
};

struct dp_enforcer {
	const struct dp_enforcer_class *cls;
	void *priv;
};

/* The registered enforcers (static storage) and their count; NULL-safe lookup by name. */
const struct dp_enforcer_class *const *dp_enforcer_list(size_t *ret_n);
const struct dp_enforcer_class *dp_enforcer_find(const char *name);

extern const struct dp_enforcer_class dp_enforcer_null;
/* Defined in dataplane/dpdk/enforcer_dpdk.c, in builds with DPDK only. */
extern const struct dp_enforcer_class dp_enforcer_dpdk;
/* Defined in dataplane/enforcer_tc.c, in builds with ebpf/ (libbpf, libnl, clang, bpftool) only. */
extern const struct dp_enforcer_class dp_enforcer_tc;

/* ---- the agent ------------------------------------------------------------------------------ */

struct dp_agent;

/* Makes the agent: table, enforcer (started), admin socket. NULL + errno with err. */
struct dp_agent *dp_agent_new(const struct dp_agent_config *cfg, struct loom_err *err);
/* Runs until SIGTERM/SIGINT or dp_agent_stop(); returns the exit code. */
int dp_agent_run(struct dp_agent *a);
void dp_agent_stop(struct dp_agent *a);
/* Stops the enforcer (which removes what it installed) and frees everything. */
struct dp_agent *dp_agent_free(struct dp_agent *a);

#endif
