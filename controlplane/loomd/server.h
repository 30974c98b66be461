/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/loomd/server: the libevent loop: listeners, connections,
 * framing, agents' tables and their deltas, timers, the admin commands,
 * metrics. struct loomd_server holds the daemon's parts (config.h, registry.h,
 * sched.h, journal.h, tenants.h, metrics.h); the requests themselves are
 * handled in rpc.h's functions, the admin commands in admin_cmds.h's. The
 * server moves frames; it never reads or writes their protobuf-c contents
 * (rpc_wire.h's functions do).
 *
 * Threads: one loop thread owns everything here; the metrics HTTP thread
 * only reads text the loop publishes (metrics.h) and the answers the loop
 * gives the web UI's requests (webui.h).
 */
#ifndef LOOM_CONTROLPLANE_LOOMD_SERVER_H
#define LOOM_CONTROLPLANE_LOOMD_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/hmap.h"
#include "controlplane/loomd/config.h"
#include "controlplane/loomd/journal.h"
#include "controlplane/loomd/metrics.h"
#include "controlplane/loomd/registry.h"
#include "controlplane/loomd/sched.h"
#include "controlplane/loomd/tenants.h"
#include "proto/tuple.h"
#include "topo/topo.h"

struct event_base;
struct event;
struct evbuffer;
struct bufferevent;
struct evconnlistener;
struct loom_admin;
struct loomd_webui;
struct ssl_ctx_st; /* OpenSSL's SSL_CTX */

enum loomd_role {
	LOOMD_ROLE_NONE = 0, /* before Hello */
	LOOMD_ROLE_FRAMEWORK,
	LOOMD_ROLE_AGENT,
};

/* The enforcer an agent says (Hello) it runs; an unknown one is UNSPECIFIED. */
enum loomd_enforcer {
	LOOMD_ENFORCER_UNSPECIFIED = 0,
	LOOMD_ENFORCER_NULL,
	LOOMD_ENFORCER_DPDK,
	LOOMD_ENFORCER_TC,
};

/* A host's address as its agent announces it: 4 (IPv4) or 16 (IPv6) bytes, network order. */
struct loomd_host_addr {
	uint8_t len;
	uint8_t bytes[16];
};

/* What an agent has been sent (its table), for deltas. */
struct loomd_agent_flow {
	struct wire_tuple tuple;
	uint64_t coflow_id;
	uint32_t stamp;
};

struct loomd_agent_coflow {
	uint64_t coflow_id;
	uint32_t cls;
	uint64_t rate_bps;
	uint32_t stamp;
};

#define LOOMD_PUSH_RING   64
#define LOOMD_UNKNOWN_MAX 64 /* unknown flows remembered per agent (least recent replaced) */

/* A flow an agent saw that no framework announced (admin "unknown"). */
struct loomd_unknown_flow {
	struct wire_tuple tuple;
	uint64_t bytes;
	uint64_t first_mono_ns, last_mono_ns;
};

struct loomd_conn {
	struct loomd_server *srv;
	struct bufferevent *bev;
	struct loomd_conn *prev, *next;
	enum loomd_role role;
	char name[LOOMD_NAME_MAX];
	char peer[LOOMD_ADDR_MAX];
	uint32_t version;
	uint64_t connected_ns;
	struct evbuffer *pending; /* replies held until the journal commits */
	bool dirty;               /* on srv->dirty_conns */
	struct loomd_conn *next_dirty;
	bool tls;        /* on listen_tcp with TLS: the peer showed a certificate of tls_ca */
	uint32_t tenant; /* frameworks: the server's tenant id, set at Hello */
	bool closing;    /* close once the output is flushed */
	bool overflow;   /* dropped (not reading, or replaced): freed at the next tick or pass */
	/* agents */
	uint32_t host;
	uint64_t link_bps;
	uint32_t classes;
	enum loomd_enforcer enforcer;
	uint64_t table_version, acked_version;
	bool need_full;
	/* tuple hash -> struct loomd_agent_flow, coflow id -> loomd_agent_coflow (rpc_agent.c); owned */
	struct loom_hmap flows, coflows;
	uint64_t push_version[LOOMD_PUSH_RING];
	uint64_t push_mono_ns[LOOMD_PUSH_RING];
	uint64_t push_pass[LOOMD_PUSH_RING]; /* the pass (1-based) that sent the version; 0: none */
	uint64_t enforce_pass; /* the last pass that counted c in its struct loomd_enforce */
	uint32_t enforce_slot; /* the push slot of that pass's last frame to c */
	uint64_t unknown_bytes;
	struct loomd_unknown_flow unknown[LOOMD_UNKNOWN_MAX];
	uint32_t nunknown;
	uint64_t unknown_flows; /* distinct unknown flows reported (or evicted and seen again) */
	uint32_t stamped_flows, stamped_coflows; /* entries confirmed by this pass */
	bool table_failed;                       /* the last table could not be sent */
};

struct loomd_server_stats {
	uint64_t requests, errors, frames_bad, conns_total;
	uint64_t flows_announced, stats_reports, tables_sent, table_entries_sent;
	uint64_t unknown_flows;
	uint64_t passes, commits;
	struct loomd_hist decide_hist, push_hist, pass_hist, commit_hist;
	struct loomd_hist enforce_hist; /* a change to the last affected agent's ack */
};

/*
 * A pass that carried framework changes: when the oldest of them came, and
 * how many agents it sent tables to have not acknowledged them yet. When
 * the last one does, enforce_hist takes the time since the change.
 */
struct loomd_enforce {
	uint64_t pass; /* 1-based; 0: the slot is free */
	uint64_t since_mono_ns;
	uint32_t left;
};

struct loomd_server {
	struct loomd_config cfg;
	struct event_base *base;
	struct topo *topo;
	struct loomd_registry *reg;
	struct loomd_sched *sched;
	struct loomd_journal *journal;
	struct loom_admin *admin;
	struct loomd_metrics_http *http;
	struct loomd_webui *ui; /* on http; NULL without it */
	const char *actor;      /* who runs the admin command the web UI runs ("web 1.2.3.4") */
	struct evconnlistener *lis_unix, *lis_tcp;
	struct ssl_ctx_st *tls;       /* NULL: listen_tcp is plain TCP */
	struct loomd_tokens *tokens;  /* the tokens file; NULL: none */
	struct loomd_tenant *tenants; /* by id; 0 is "default" */
	uint32_t ntenants, cap_tenants;
	struct event *pass_ev, *commit_ev, *tick_ev, *wake_ev, *sigterm_ev, *sigint_ev;
	struct loomd_conn *conns;
	uint32_t nconns, nagents, nframeworks;
	struct loomd_conn **agent_of_host; /* nhosts */
	struct loomd_conn *dirty_conns;
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
	uint64_t change_mono_ns; /* the oldest framework change no pass has pushed yet; 0: none */
	uint64_t enforce_cur;    /* the pass being pushed when it carries changes; else 0 */
	struct loomd_enforce enforce[LOOMD_PUSH_RING];
	bool stopping;
	int exit_code;
	struct loomd_server_stats st;
	struct loom_err last_err;
};

/* Loads topology, journal, policy, binds listeners. 0 or -errno with err. */
int loomd_server_init(struct loomd_server *s, const struct loomd_config *cfg, struct loom_err *err);
/* Runs the loop until SIGTERM/SIGINT or loomd_server_stop(). Returns the exit code. */
int loomd_server_run(struct loomd_server *s);
void loomd_server_stop(struct loomd_server *s);
void loomd_server_done(struct loomd_server *s);

/* The controller's clock: wall time, or the virtual clock in tests. */
uint64_t loomd_server_now_ns(const struct loomd_server *s);

/* Asks for a scheduling pass as soon as the loop is free. */
void loomd_server_schedule_pass(struct loomd_server *s);
/* Runs one pass now (admin 'decide'); 0 or -errno with err. */
int loomd_server_pass(struct loomd_server *s, struct loom_err *err);
/* Writes a frame's body of the length announced (rpc_*.c: packs an envelope there). */
typedef void (*loomd_frame_fill_fn)(const void *ctx, uint8_t *body);
/*
 * Queues one frame on c, held until the journal commits when a change is
 * pending (replies): its header here, its body_len bytes by fill(ctx, body).
 * what names it in the log ("reply"). A frame of 0 bytes or over max_frame,
 * or no memory: logged; a reply that cannot be held closes c.
 */
void loomd_conn_send(struct loomd_conn *c, const char *what, size_t body_len,
		     loomd_frame_fill_fn fill, const void *ctx);
/* The same, sent now, bypassing the journal hold (tables, hello replies without changes). */
void loomd_conn_send_now(struct loomd_conn *c, const char *what, size_t body_len,
			 loomd_frame_fill_fn fill, const void *ctx);
/* Closes c once its output has drained (freed by a callback of the loop, never here). */
void loomd_conn_close(struct loomd_conn *c);
/* Makes sure pending journal writes are committed before replies go out. */
void loomd_server_need_commit(struct loomd_server *s);

/*
 * server.c: whether the certificate of c (a TLS connection) names the agent
 * of host (subjectAltName DNS, or the subject's CN without one, "host-N")
 * and holds every one of the naddrs addresses its Hello gave as an IP
 * subjectAltName. 0, or -EPERM (wire code WRONG_ROLE) with err saying what
 * the certificate names instead.
 */
int loomd_conn_tls_check_agent(struct loomd_conn *c, uint32_t host,
			       const struct loomd_host_addr *addrs, size_t naddrs,
			       struct loom_err *err);

/*
 * server.c: who a framework saying Hello with token (NULL or "": none) on c
 * is. Sets c->tenant, or returns -EACCES (wire DENIED: a token that is not
 * in the tokens file, a token where loomd has none, none where it needs
 * one, a token of another tenant than the certificate's) or -EPERM (an
 * agent's certificate, host-N) with err saying which.
 */
int loomd_conn_auth_framework(struct loomd_conn *c, const char *token, struct loom_err *err);

/* ---- for tests and fuzz targets ----------------------------------------------------------- */

/*
 * Tests and fuzz targets: a connection without a socket (its replies are
 * encoded and dropped), fed bytes as if read. loomd_conn_feed returns 0, or
 * -EPIPE when loomd dropped the connection (then c is freed).
 * loomd_server_flush commits the journal and releases held replies, as the loop
 * would after a batch of input.
 */
struct loomd_conn *loomd_server_test_conn(struct loomd_server *s);
int loomd_conn_feed(struct loomd_conn *c, const void *buf, size_t len);
void loomd_server_flush(struct loomd_server *s);

#endif
