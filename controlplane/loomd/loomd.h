/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/loomd: the controller daemon's parts, below main().
 *
 *   config     the configuration file and its defaults (struct cp_config,
 *              immutable once loaded; every key is documented in docs/loomd.md)
 *   registry   jobs, coflows and flows as frameworks registered them, the
 *              facts reported since (flows done, coflows done, bytes sent), and
 *              the *view*: a struct cp_model rebuilt from them when their shape
 *              changes, on which the policies run. The view is the state
 *              machine: releases, completions and their consequences happen in
 *              it (model.h), and the registry mirrors what they say.
 *   journal    every accepted change, in SQLite (WAL), before it is
 *              acknowledged; replayed at start-up.
 *   sched      one scheduling pass: release due coflows, run the policy on the
 *              view, quantise the order into K classes per host.
 *   server     the libevent loop: listeners, connections, framing, agents'
 *              tables and their deltas, timers, the admin commands, metrics.
 *
 * Threads: one loop thread owns everything here; the metrics HTTP thread
 * only reads text the loop publishes (metrics.h).
 */
#ifndef LOOM_CONTROLPLANE_LOOMD_LOOMD_H
#define LOOM_CONTROLPLANE_LOOMD_LOOMD_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/errors.h"
#include "controlplane/model/model.h"
#include "controlplane/policy/policy.h"
#include "proto/wire.h"
#include "topo/topo.h"

/* ---- config (config.c) --------------------------------------------------------------- */

#define CP_ADDR_MAX 128

struct cp_config {
	char listen_unix[108];        /* framework+agent Unix socket; "" = none */
	char listen_tcp[CP_ADDR_MAX]; /* "HOST:PORT"; "" = none */
	char admin_socket[108];       /* "" = none */
	char metrics[CP_ADDR_MAX];    /* "HOST:PORT" for /metrics; "" = none */
	char journal[PATH_MAX];       /* SQLite file; "" = no durability */
	int journal_sync;             /* 0 off, 1 normal, 2 full (SQLite synchronous) */
	char policy[POLICY_SPEC_MAX];
	char weights[PATH_MAX];  /* gnn/ensemble model; "" = the shipped one */
	char topology[PATH_MAX]; /* topology file; "" = big switch of hosts x link_bps */
	uint32_t hosts;
	uint64_t link_bps;
	uint32_t classes;
	char class_assign[16]; /* "conflict" or "per-host" (enum policy_class_assign) */
	uint64_t tick_ns;
	uint64_t pass_gap_ns; /* least time between two passes (changes in between batch up) */
	uint64_t seed;
	uint32_t max_frame;
	uint32_t max_jobs, max_coflows, max_flows;
	uint32_t max_connections;
	uint64_t unknown_flow_bytes; /* modelled remaining bytes of a flow of unknown size */
	uint64_t done_retention_ns;  /* finished jobs are forgotten after this */
	uint64_t agent_timeout_ns;   /* an agent silent this long is disconnected */
	char log_level[8];
	bool virtual_clock; /* tests: time moves only with the admin clock-set command */
	/*
	 * TLS on listen_tcp (docs/security.md): PEM files of loomd's certificate
	 * (chain), its key, and the CA that signs every peer's certificate. All
	 * three or none; "" = plain TCP.
	 */
	char tls_cert[PATH_MAX], tls_key[PATH_MAX], tls_ca[PATH_MAX];
	bool insecure; /* plain TCP on a non-loopback address (refused without it) */
	/*
	 * Tenants (docs/security.md): the tokens file ("" = none: frameworks
	 * off TLS are all tenant "default"), and the quotas every tenant has
	 * unless its line in the tokens file says otherwise (0 = none).
	 */
	char tokens[PATH_MAX];
	uint32_t tenant_max_jobs, tenant_max_coflows, tenant_max_flows;
	uint32_t tenant_announce_rate; /* flows announced per second */
	/* Socket files: listen_unix is 0660, admin_socket 0600 (0660 with admin_group). */
	char unix_group[64];  /* group of listen_unix; "" = loomd's own */
	char admin_group[64]; /* "" = the admin socket is loomd's user's alone */
};

/* Fills the defaults (docs/loomd.md). */
void cp_config_default(struct cp_config *c);

/*
 * Sets one key from its text value. Returns 0, or -ENOENT (unknown key),
 * -EINVAL (bad value) or -ERANGE (out of range) with err naming the key, the
 * value and what is accepted.
 */
int cp_config_set(struct cp_config *c, const char *key, const char *value, struct loom_err *err);

/*
 * Reads "key = value" lines ('#' comments, blank lines) from path onto c.
 * Returns 0 or -errno with err = "path:line: reason".
 */
int cp_config_load(struct cp_config *c, const char *path, struct loom_err *err);

/* Checks the combination (e.g. at least one listener). 0 or -EINVAL with err. */
int cp_config_check(const struct cp_config *c, struct loom_err *err);

/* ---- registry (registry.c) -------------------------------------------------------------- */

#define CP_NAME_MAX 64

/* What a framework says, in our types (rpc_framework.c converts from the wire). */
struct cp_flow_spec {
	uint32_t src, dst;
	uint64_t bytes; /* 0 = unknown */
	bool has_tuple;
	bool by_address; /* src/dst from the tuple's addresses */
	struct wire_tuple tuple;
};

struct cp_coflow_spec {
	uint64_t id;
	uint64_t release_offset_ns;
	uint32_t expected_flows;
	uint32_t nflows;
	struct cp_flow_spec *flows;
};

struct cp_edge_spec {
	uint64_t parent, child, delay_ns;
};

struct cp_job_spec {
	uint64_t id;
	uint32_t tenant; /* the server's tenant id (0 = "default") */
	double weight;
	char name[CP_NAME_MAX];
	uint32_t ncoflows, nedges;
	struct cp_coflow_spec *coflows;
	struct cp_edge_spec *edges;
};

struct cp_rjob;
struct cp_rcoflow;

struct cp_rflow {
	struct cp_rcoflow *coflow;
	uint32_t src, dst;
	uint64_t bytes; /* expected; 0 = unknown */
	bool has_tuple;
	struct wire_tuple tuple;
	uint64_t sent_bytes;
	bool done;
	uint64_t done_ns;
	uint32_t view; /* index in the view, CP_NONE before the next rebuild */
};

struct cp_rcoflow {
	uint64_t id;
	struct cp_rjob *job;
	uint64_t release_offset_ns;
	uint32_t expected_flows; /* 0 with open */
	bool open;               /* completes only by coflow_done */
	struct cp_rflow **flows; /* owned, in announcement order */
	uint32_t nflows, cap_flows;
	bool declared_done; /* the framework said so (coflow_done/job_done) */
	uint64_t declared_ns;
	uint32_t flows_done;
	uint64_t sent_bytes;
	uint64_t done_ns; /* CP_TIME_NEVER until done (mirrored from the view) */
	uint32_t view;
};

struct cp_rjob {
	uint64_t id;
	uint32_t tenant; /* who registered it: only that tenant may change it */
	char name[CP_NAME_MAX];
	double weight;
	uint64_t arrival_ns;
	struct cp_rcoflow *coflows; /* owned */
	uint32_t ncoflows;
	struct cp_edge_spec *edges; /* by coflow id, owned */
	uint32_t nedges;
	bool declared_done;
	uint64_t declared_ns;
	uint32_t coflows_done;
	uint64_t sent_bytes;
	uint64_t done_ns; /* CP_TIME_NEVER until done (mirrored from the view) */
	uint32_t view;
};

struct cp_registry_limits {
	uint32_t max_jobs, max_coflows, max_flows;
	uint64_t unknown_flow_bytes;
};

struct cp_registry;

/* Returns an empty registry over the fabric t (borrowed), or NULL + errno. */
struct cp_registry *cp_registry_new(const struct topo *t, const struct cp_registry_limits *lim);
struct cp_registry *cp_registry_free(struct cp_registry *r);

/*
 * Each change returns 0 or -errno with err saying what was wrong (the text
 * goes back to the client): -EEXIST duplicate id or tuple, -ENOENT unknown
 * id or address, -ELOOP cycle, -EALREADY finished, -EINVAL malformed,
 * -ENOSPC a limit. A failed change changes nothing.
 */
int cp_registry_add_job(struct cp_registry *r, const struct cp_job_spec *spec, uint64_t now_ns,
			struct loom_err *err);
int cp_registry_add_flow(struct cp_registry *r, uint64_t coflow_id, const struct cp_flow_spec *f,
			 uint64_t now_ns, struct loom_err *err);
int cp_registry_coflow_done(struct cp_registry *r, uint64_t coflow_id, uint64_t now_ns,
			    struct loom_err *err);
int cp_registry_job_done(struct cp_registry *r, uint64_t job_id, uint64_t now_ns,
			 struct loom_err *err);
int cp_registry_unregister(struct cp_registry *r, uint64_t job_id, struct loom_err *err);

/*
 * An agent's report on the flow with tuple t: bytes sent since the last
 * report, and whether it ended. Returns 0, -ENOENT (no such flow), or
 * -EALREADY (already done; bytes are still counted).
 */
int cp_registry_flow_stat(struct cp_registry *r, const struct wire_tuple *t, uint64_t bytes,
			  bool done, uint64_t now_ns);

/*
 * Host addresses: the host owning an address (agents' Hello). set returns 0,
 * -EINVAL (family or host) or -ENOMEM; clear forgets every address of host.
 */
int cp_registry_set_host_addr(struct cp_registry *r, uint32_t host, const uint8_t *addr,
			      uint8_t family);
void cp_registry_clear_host_addrs(struct cp_registry *r, uint32_t host);
/* The hosts owning t's source and destination addresses: 0, or -ENOENT. */
int cp_registry_hosts_of(const struct cp_registry *r, const struct wire_tuple *t, uint32_t *ret_src,
			 uint32_t *ret_dst);

/* Lookups (NULL when absent). */
struct cp_rjob *cp_registry_job(const struct cp_registry *r, uint64_t id);
struct cp_rcoflow *cp_registry_coflow(const struct cp_registry *r, uint64_t id);
struct cp_rflow *cp_registry_flow(const struct cp_registry *r, const struct wire_tuple *t);

/* Jobs in registration order: ret_jobs borrowed until the next change. */
struct cp_rjob *const *cp_registry_jobs(const struct cp_registry *r, uint32_t *ret_n);

/* What one tenant's jobs hold (done jobs count until they are forgotten). */
struct cp_tenant_use {
	uint32_t jobs, coflows;
	uint64_t flows;
};
/* Fills *ret with tenant's use (zeros for a tenant that never registered). */
void cp_registry_tenant_use(const struct cp_registry *r, uint32_t tenant,
			    struct cp_tenant_use *ret);

struct cp_registry_counts {
	uint32_t jobs, jobs_done, coflows, coflows_active, coflows_done;
	uint64_t flows, flows_done;
};
void cp_registry_counts(const struct cp_registry *r, struct cp_registry_counts *ret);

/*
 * The view: rebuilt from the registry when a job or flow came or went since
 * the last call, else the same model brought up to date in place. Borrowed;
 * valid until the next change. *ret_rebuilt tells whether it is new (then
 * policies made for the old one must be remade). NULL + errno on failure.
 */
struct cp_model *cp_registry_view(struct cp_registry *r, bool *ret_rebuilt, struct loom_err *err);

/* Registry objects of view indices (valid for the current view). */
struct cp_rcoflow *cp_registry_view_coflow(const struct cp_registry *r, uint32_t c);
struct cp_rflow *cp_registry_view_flow(const struct cp_registry *r, uint32_t f);

/*
 * Releases every READY coflow of the view whose time has come (release time
 * = its ready time); returns how many, and the earliest future ready time in
 * *ret_next_ns (CP_TIME_NEVER if none).
 */
uint32_t cp_registry_release_due(struct cp_registry *r, uint64_t now_ns, uint64_t *ret_next_ns);

/* Forgets jobs finished before cutoff_ns; returns their ids (up to cap) and count. */
uint32_t cp_registry_expire(struct cp_registry *r, uint64_t cutoff_ns, uint64_t *ret_ids,
			    uint32_t cap);

/* Model events the view produced since the last call (for policy on_event). */
const struct cp_event *cp_registry_events(struct cp_registry *r, uint32_t *ret_n);
void cp_registry_events_clear(struct cp_registry *r);

/* A coflow's state (model.h), as of the facts known (the view, or its facts before a rebuild). */
enum cp_coflow_state cp_registry_coflow_state(const struct cp_registry *r,
					      const struct cp_rcoflow *c);

/* The latest time the registry was told about. */
uint64_t cp_registry_now(const struct cp_registry *r);
#endif

/* ---- sched (sched.c) ----------------------------------------------------------------------- */

struct cp_sched;

/*
 * A scheduler over registry r (borrowed) on fabric t (borrowed): policy spec,
 * weights file for gnn/ensemble ("" or NULL: the shipped model), K classes
 * given to the hosts as assign says, RNG seed. A weights file is loaded whatever the policy (a later
 * set-policy gnn uses it); the shipped model only when the policy runs the
 * gnn. NULL + errno with err (bad spec; unloadable model: "weights: ...").
 */
struct cp_sched *cp_sched_new(struct cp_registry *r, const struct topo *t, const char *spec,
			      const char *weights, uint32_t classes,
			      enum policy_class_assign assign, uint64_t seed, struct loom_err *err);
struct cp_sched *cp_sched_free(struct cp_sched *s);

/* Switches policy from the next pass on. 0 or -errno with err (the old one stays). */
int cp_sched_set_policy(struct cp_sched *s, const char *spec, struct loom_err *err);
const char *cp_sched_policy(const struct cp_sched *s);

struct cp_sched_result {
	bool decided;       /* false: nothing schedulable, no decision made */
	uint32_t released;  /* coflows released in this pass */
	uint64_t next_ns;   /* the pass wants to run again at this time (CP_TIME_NEVER: no) */
	uint64_t decide_ns; /* wall time the policy took */
	bool watches;       /* the decision watches sent bytes: passes on flow stats */
};

/*
 * One pass at now_ns: brings the view up to date (remaking the policy if it
 * was rebuilt), releases due coflows, hands the policy the model's events,
 * decides, validates, and computes each unfinished flow's class on its
 * source host (cp_sched_flow_class). 0 or -errno with err.
 */
int cp_sched_pass(struct cp_sched *s, uint64_t now_ns, struct cp_sched_result *ret,
		  struct loom_err *err);

/* The last decision and the view it was made on (valid until the next change). */
const struct policy_decision *cp_sched_decision(const struct cp_sched *s);
const struct cp_model *cp_sched_view(const struct cp_sched *s);

/* Class of view flow f on its source host in the last decision (K-1 if not ordered). */
uint32_t cp_sched_flow_class(const struct cp_sched *s, uint32_t f);
/* Position of view coflow c in the last order, or CP_NONE. */
uint32_t cp_sched_rank(const struct cp_sched *s, uint32_t c);
uint32_t cp_sched_classes(const struct cp_sched *s);
uint64_t cp_sched_decisions(const struct cp_sched *s);

/* ---- tenants (tenants.c) ------------------------------------------------------------------ */

#define CP_TENANT_MAX     64 /* a tenant's name: 1..63 of [A-Za-z0-9._-], NUL */
#define CP_TENANT_DEFAULT "default"
#define CP_TOKEN_MIN      16  /* a token's length, at least */
#define CP_TOKEN_MAX      256 /* ... and less than this */

/* A tenant's quotas; 0 = none. */
struct cp_quota {
	uint32_t jobs, coflows, flows;
	uint32_t announce_rate; /* flows announced per second (a bucket of one second's worth) */
};

enum {
	CP_QUOTA_JOBS = 1,
	CP_QUOTA_COFLOWS = 2,
	CP_QUOTA_FLOWS = 4,
	CP_QUOTA_RATE = 8,
};

/* One line of the tokens file. */
struct cp_token_entry {
	char tenant[CP_TENANT_MAX];
	char token[CP_TOKEN_MAX]; /* "" for "-": a certificate's tenant, quotas only */
	struct cp_quota quota;    /* the fields quota_set names */
	uint32_t quota_set;       /* CP_QUOTA_* */
	unsigned line;
};

struct cp_tokens {
	struct cp_token_entry *v; /* owned, in file order */
	uint32_t n;
};

/* Whether name is a tenant name (1..63 of A-Z a-z 0-9 . _ -). */
bool cp_tenant_name_valid(const char *name);

/*
 * Parses a tokens file's text (len bytes; name for messages) into *ret_tokens
 * (free with cp_tokens_free()). Returns 0, or -EINVAL / -ERANGE / -EEXIST /
 * -ENOMEM with err = "name:line: what is wrong" (never quoting a token).
 * The format is at the top of tenants.c and in docs/security.md.
 */
int cp_tokens_parse(const char *name, const char *text, size_t len, struct cp_tokens **ret_tokens,
		    struct loom_err *err);
/* Reads and parses the file at path (warns when every user may read it); as cp_tokens_parse(). */
int cp_tokens_load(const char *path, struct cp_tokens **ret_tokens, struct loom_err *err);
/* Accepts NULL; returns NULL. */
struct cp_tokens *cp_tokens_free(struct cp_tokens *t);
/*
 * The line whose token is token (compared in constant time against every
 * line), or NULL. Borrowed from t.
 */
const struct cp_token_entry *cp_tokens_find(const struct cp_tokens *t, const char *token);

/* A tenant loomd knows, with its quotas and its announcement bucket. */
struct cp_tenant {
	char name[CP_TENANT_MAX];
	struct cp_quota quota;
	double rate_tokens; /* announcements left in the bucket */
	uint64_t rate_ns;   /* when it was last filled */
};

/*
 * Takes one announcement from t's bucket at now_ns: true, or false when its
 * announce_rate is spent (nothing taken).
 */
bool cp_tenant_take_announce(struct cp_tenant *t, uint64_t now_ns);

/* ---- journal (journal.c) ------------------------------------------------------------------- */

/*
 * An append-only log of accepted changes in one SQLite table (WAL mode):
 * (seq, kind, job, id, time, body). Bodies are the requests' protobuf bytes,
 * so replay goes through the same handlers as live requests. Forgetting a
 * job deletes its rows. Writes go into one open transaction that the daemon
 * commits before it acknowledges them (group commit).
 */
enum cp_journal_kind {
	CP_J_REGISTER = 1, /* body: RegisterJob */
	CP_J_FLOW = 2,     /* body: AnnounceFlow */
	CP_J_COFLOW_DONE = 3,
	CP_J_JOB_DONE = 4,
	CP_J_FLOW_DONE = 5, /* body: FiveTuple */
};

struct cp_journal;

/*
 * Opens (creating) the journal at path; sync is SQLite's synchronous level
 * (0 off, 1 normal, 2 full). NULL + errno with err naming the file (e.g.
 * not a journal, a newer schema, unwritable).
 */
struct cp_journal *cp_journal_open(const char *path, int sync, struct loom_err *err);
/* Commits what is pending and closes. Accepts NULL; returns NULL. */
struct cp_journal *cp_journal_close(struct cp_journal *j);

/* Appends a record inside the open transaction (begun on demand). 0 or -EIO with err. */
int cp_journal_append(struct cp_journal *j, enum cp_journal_kind kind, uint64_t job_id, uint64_t id,
		      uint64_t time_ns, const void *body, size_t len, struct loom_err *err);
/* Deletes every record of job_id. 0 or -EIO. */
int cp_journal_forget(struct cp_journal *j, uint64_t job_id, struct loom_err *err);
/* True when records await cp_journal_commit(). */
bool cp_journal_pending(const struct cp_journal *j);
/* Commits the open transaction (if any). 0 or -EIO with err. */
int cp_journal_commit(struct cp_journal *j, struct loom_err *err);
/* Undoes the open transaction. */
void cp_journal_rollback(struct cp_journal *j);

typedef int (*cp_journal_fn)(void *ctx, enum cp_journal_kind kind, uint64_t job_id, uint64_t id,
			     uint64_t time_ns, const void *body, size_t len);

/*
 * Calls fn for every record in append order; stops at fn's first negative
 * return and returns it; 0 or -EIO with err otherwise. *ret_n counts records.
 */
int cp_journal_replay(struct cp_journal *j, cp_journal_fn fn, void *ctx, uint64_t *ret_n,
		      struct loom_err *err);

/* ---- server (server.c, rpc_framework.c, rpc_agent.c, admin_cmds.c) ------------------------ */

#include "common/clock.h"
#include "controlplane/loomd/hmap.h"
#include "controlplane/loomd/metrics.h"

struct event_base;
struct event;
struct evbuffer;
struct bufferevent;
struct evconnlistener;
struct loom_admin;
struct ssl_ctx_st; /* OpenSSL's SSL_CTX */

enum cp_role {
	CP_ROLE_NONE = 0, /* before Hello */
	CP_ROLE_FRAMEWORK,
	CP_ROLE_AGENT,
};

/* What an agent has been sent (its table), for deltas. */
struct cp_agent_flow {
	struct wire_tuple tuple;
	uint64_t coflow_id;
	uint32_t stamp;
};

struct cp_agent_coflow {
	uint64_t coflow_id;
	uint32_t cls;
	uint64_t rate_bps;
	uint32_t stamp;
};

#define CP_PUSH_RING   64
#define CP_UNKNOWN_MAX 64 /* unknown flows remembered per agent (least recent replaced) */

/* A flow an agent saw that no framework announced (admin "unknown"). */
struct cp_unknown_flow {
	struct wire_tuple tuple;
	uint64_t bytes;
	uint64_t first_mono_ns, last_mono_ns;
};

struct cp_conn {
	struct cp_server *srv;
	struct bufferevent *bev;
	struct cp_conn *prev, *next;
	enum cp_role role;
	char name[CP_NAME_MAX];
	char peer[CP_ADDR_MAX];
	uint32_t version;
	uint64_t connected_ns;
	struct evbuffer *pending; /* replies held until the journal commits */
	bool dirty;               /* on srv->dirty_conns */
	struct cp_conn *next_dirty;
	bool tls;        /* on listen_tcp with TLS: the peer showed a certificate of tls_ca */
	uint32_t tenant; /* frameworks: the server's tenant id, set at Hello */
	bool closing;    /* close once the output is flushed */
	bool overflow;   /* dropped (not reading, or replaced): freed at the next tick or pass */
	/* agents */
	uint32_t host;
	uint64_t link_bps;
	uint32_t classes;
	int enforcer;
	uint64_t table_version, acked_version;
	bool need_full;
	struct hmap flows, coflows; /* struct cp_agent_flow / cp_agent_coflow, owned */
	uint64_t push_version[CP_PUSH_RING];
	uint64_t push_mono_ns[CP_PUSH_RING];
	uint64_t unknown_bytes;
	struct cp_unknown_flow unknown[CP_UNKNOWN_MAX];
	uint32_t nunknown;
	uint64_t unknown_flows; /* distinct unknown flows reported (or evicted and seen again) */
	uint32_t stamped_flows, stamped_coflows; /* entries confirmed by this pass */
	bool table_failed;                       /* the last table could not be sent */
};

struct cp_server_stats {
	uint64_t requests, errors, frames_bad, conns_total;
	uint64_t flows_announced, stats_reports, tables_sent, table_entries_sent;
	uint64_t unknown_flows;
	uint64_t passes, commits;
	struct cp_hist decide_hist, push_hist, pass_hist, commit_hist;
};

struct cp_server {
	struct cp_config cfg;
	struct event_base *base;
	struct topo *topo;
	struct cp_registry *reg;
	struct cp_sched *sched;
	struct cp_journal *journal;
	struct loom_admin *admin;
	struct cp_metrics_http *http;
	struct evconnlistener *lis_unix, *lis_tcp;
	struct ssl_ctx_st *tls;    /* NULL: listen_tcp is plain TCP */
	struct cp_tokens *tokens;  /* the tokens file; NULL: none */
	struct cp_tenant *tenants; /* by id; 0 is "default" */
	uint32_t ntenants, cap_tenants;
	struct event *pass_ev, *commit_ev, *tick_ev, *wake_ev, *sigterm_ev, *sigint_ev;
	struct cp_conn *conns;
	uint32_t nconns, nagents, nframeworks;
	struct cp_conn **agent_of_host; /* nhosts */
	struct cp_conn *dirty_conns;
	struct loom_vclock vclock;
	uint64_t controller_id;
	uint64_t start_mono_ns;
	uint64_t wake_at_ns; /* the timer's target, CP_TIME_NEVER if unset */
	bool pass_scheduled, stats_changed, watches;
	uint32_t gen; /* agent table diff generation */
	uint64_t last_publish_mono_ns;
	uint64_t last_pass_mono_ns;
	uint64_t last_pass_dur_ns;
	uint64_t last_expire_mono_ns;
	bool stopping;
	int exit_code;
	struct cp_server_stats st;
	struct loom_err last_err;
};

/* Loads topology, journal, policy, binds listeners. 0 or -errno with err. */
int cp_server_init(struct cp_server *s, const struct cp_config *cfg, struct loom_err *err);
/* Runs the loop until SIGTERM/SIGINT or cp_server_stop(). Returns the exit code. */
int cp_server_run(struct cp_server *s);
void cp_server_stop(struct cp_server *s);
void cp_server_done(struct cp_server *s);

/* The controller's clock: wall time, or the virtual clock in tests. */
uint64_t cp_server_now_ns(const struct cp_server *s);
uint64_t cp_mono_ns(void);

/* Asks for a scheduling pass as soon as the loop is free. */
void cp_server_schedule_pass(struct cp_server *s);
/* Runs one pass now (admin 'decide'); 0 or -errno with err. */
int cp_server_pass(struct cp_server *s, struct loom_err *err);
/* Queues a reply envelope on c (held until the journal commits). */
void cp_conn_send(struct cp_conn *c, const Loom__Envelope *env);
/* Sends now, bypassing the journal hold (tables, hello replies without changes). */
void cp_conn_send_now(struct cp_conn *c, const Loom__Envelope *env);
/* Makes sure pending journal writes are committed before replies go out. */
void cp_server_need_commit(struct cp_server *s);

/*
 * Tests and fuzz targets: a connection without a socket (its replies are
 * encoded and dropped), fed bytes as if read. cp_conn_feed returns 0, or
 * -EPIPE when loomd dropped the connection (then c is freed).
 * cp_server_flush commits the journal and releases held replies, as the loop
 * would after a batch of input.
 */
struct cp_conn *cp_server_test_conn(struct cp_server *s);
int cp_conn_feed(struct cp_conn *c, const void *buf, size_t len);
void cp_server_flush(struct cp_server *s);

/*
 * rpc_framework.c: framework requests, live and from the journal. Flows
 * placed by address are resolved into m (hosts written back) before it is
 * journaled.
 */
int cp_rpc_register_job(struct cp_server *s, Loom__RegisterJob *m, uint64_t now_ns, bool journal,
			struct loom_err *err);
int cp_rpc_announce(struct cp_server *s, Loom__AnnounceFlow *a, uint64_t now_ns, bool journal,
		    struct loom_err *err);
int cp_rpc_coflow_done(struct cp_server *s, uint64_t coflow_id, uint64_t now_ns, bool journal,
		       struct loom_err *err);
int cp_rpc_job_done(struct cp_server *s, uint64_t job_id, uint64_t now_ns, bool journal,
		    struct loom_err *err);
int cp_rpc_unregister(struct cp_server *s, uint64_t job_id, bool journal, struct loom_err *err);
/* Handles one framework envelope on c (after Hello). */
void cp_rpc_framework(struct cp_conn *c, const Loom__Envelope *env);
/* Replays the journal into the registry. 0 or -errno with err. */
int cp_rpc_replay(struct cp_server *s, struct loom_err *err);
/* Fills a Reply envelope: error code from r (0 = OK) and err's text. */
void cp_rpc_reply(struct cp_conn *c, uint64_t seq, int r, const struct loom_err *err,
		  uint32_t accepted);

/*
 * server.c: whether the certificate of c (a TLS connection) names the agent
 * of host (subjectAltName DNS, or the subject's CN without one, "host-N")
 * and holds every address of h as an IP subjectAltName. 0, or -EPERM (wire
 * code WRONG_ROLE) with
 * err saying what the certificate names instead.
 */
int cp_conn_tls_check_agent(struct cp_conn *c, uint32_t host, const Loom__Hello *h,
			    struct loom_err *err);

/*
 * tenants.c: the id of the tenant called name ("" or NULL: "default"),
 * added with its quotas (the config's, or its tokens-file line's) when new.
 * 0, or -EINVAL (not a tenant name) / -ENOSPC / -ENOMEM with err.
 */
int cp_server_tenant(struct cp_server *s, const char *name, uint32_t *ret_id, struct loom_err *err);

/*
 * server.c: who a framework saying Hello h on c is. Sets c->tenant, or
 * returns -EACCES (wire DENIED: a token that is not in the tokens file, a
 * token where loomd has none, none where it needs one, a token of another
 * tenant than the certificate's) or -EPERM (an agent's certificate, host-N)
 * with err saying which.
 */
int cp_conn_auth_framework(struct cp_conn *c, const Loom__Hello *h, struct loom_err *err);

/* rpc_agent.c: agents' sessions and tables. */
int cp_agent_hello(struct cp_conn *c, const Loom__Hello *h, struct loom_err *err);
void cp_agent_gone(struct cp_conn *c);
void cp_rpc_agent(struct cp_conn *c, const Loom__Envelope *env);
/* After a pass: diff every agent's table against the decision and push deltas. */
void cp_agents_push(struct cp_server *s);

/* admin_cmds.c */
int cp_admin_register_all(struct cp_server *s);
/* Renders the Prometheus text for /metrics into p. */
void cp_metrics_render(struct cp_server *s, struct cp_prom *p);
