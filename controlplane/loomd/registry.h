/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/loomd/registry: jobs, coflows and flows as frameworks
 * registered them, the facts reported since (flows done, coflows done, bytes
 * sent), and the *view*: a struct cp_model rebuilt from them when their shape
 * changes, on which the policies run. The view is the state machine:
 * releases, completions and their consequences happen in it (model.h), and
 * the registry mirrors what they say.
 */
#ifndef LOOM_CONTROLPLANE_LOOMD_REGISTRY_H
#define LOOM_CONTROLPLANE_LOOMD_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "common/errors.h"
#include "controlplane/model/model.h"
#include "proto/tuple.h"
#include "topo/topo.h"

#define LOOMD_NAME_MAX 64

/* What a framework says, in our types (rpc_framework.c converts from the wire). */
struct loomd_flow_spec {
	uint32_t src, dst;
	uint64_t bytes; /* 0 = unknown */
	bool has_tuple;
	bool by_address; /* src/dst from the tuple's addresses */
	struct wire_tuple tuple;
};

struct loomd_coflow_spec {
	uint64_t id;
	uint64_t release_offset_ns;
	uint32_t expected_flows;
	uint32_t nflows;
	struct loomd_flow_spec *flows;
};

struct loomd_edge_spec {
	uint64_t parent, child, delay_ns;
};

struct loomd_job_spec {
	uint64_t id;
	uint32_t tenant; /* the server's tenant id (0 = "default") */
	double weight;
	char name[LOOMD_NAME_MAX];
	uint32_t ncoflows, nedges;
	struct loomd_coflow_spec *coflows;
	struct loomd_edge_spec *edges;
};

struct loomd_rjob;
struct loomd_rcoflow;

struct loomd_rflow {
	struct loomd_rcoflow *coflow;
	uint32_t src, dst;
	uint64_t bytes; /* expected; 0 = unknown */
	bool has_tuple;
	struct wire_tuple tuple;
	uint64_t sent_bytes;
	bool done;
	uint64_t done_ns;
	uint32_t view; /* index in the view, CP_NONE before the next rebuild */
};

struct loomd_rcoflow {
	uint64_t id;
	struct loomd_rjob *job;
	uint64_t release_offset_ns;
	uint32_t expected_flows;    /* 0 with open */
	bool open;                  /* completes only by coflow_done */
	struct loomd_rflow **flows; /* owned, in announcement order */
	uint32_t nflows, cap_flows;
	bool declared_done; /* the framework said so (coflow_done/job_done) */
	uint64_t declared_ns;
	uint32_t flows_done;
	uint64_t sent_bytes;
	uint64_t done_ns; /* CP_TIME_NEVER until done (mirrored from the view) */
	uint32_t view;
};

struct loomd_rjob {
	uint64_t id;
	uint32_t tenant; /* who registered it: only that tenant may change it */
	char name[LOOMD_NAME_MAX];
	double weight;
	uint64_t arrival_ns;
	struct loomd_rcoflow *coflows; /* owned */
	uint32_t ncoflows;
	struct loomd_edge_spec *edges; /* by coflow id, owned */
	uint32_t nedges;
	bool declared_done;
	uint64_t declared_ns;
	uint32_t coflows_done;
	uint64_t sent_bytes;
	uint64_t done_ns; /* CP_TIME_NEVER until done (mirrored from the view) */
	uint32_t view;
};

struct loomd_registry_limits {
	uint32_t max_jobs, max_coflows, max_flows;
	uint64_t unknown_flow_bytes;
};

struct loomd_registry;

/* Returns an empty registry over the fabric t (borrowed), or NULL + errno. */
struct loomd_registry *loomd_registry_new(const struct topo *t,
					  const struct loomd_registry_limits *lim);
struct loomd_registry *loomd_registry_free(struct loomd_registry *r);

/*
 * Each change returns 0 or -errno with err saying what was wrong (the text
 * goes back to the client): -EEXIST duplicate id or tuple, -ENOENT unknown
 * id or address, -ELOOP cycle, -EALREADY finished, -EINVAL malformed,
 * -ENOSPC a limit. A failed change changes nothing.
 */
int loomd_registry_add_job(struct loomd_registry *r, const struct loomd_job_spec *spec,
			   uint64_t now_ns, struct loom_err *err);
/*
 * Adds spec's coflows and edges to the registered job spec->id (weight and
 * name ignored; spec->tenant must be the job's): -ENOENT no such job,
 * -EALREADY it finished (or all its coflows are done), -EINVAL an edge to a
 * coflow registered before, and the checks of add_job for the new coflows.
 */
int loomd_registry_extend_job(struct loomd_registry *r, const struct loomd_job_spec *spec,
			      uint64_t now_ns, struct loom_err *err);
int loomd_registry_add_flow(struct loomd_registry *r, uint64_t coflow_id,
			    const struct loomd_flow_spec *f, uint64_t now_ns, struct loom_err *err);
int loomd_registry_coflow_done(struct loomd_registry *r, uint64_t coflow_id, uint64_t now_ns,
			       struct loom_err *err);
int loomd_registry_job_done(struct loomd_registry *r, uint64_t job_id, uint64_t now_ns,
			    struct loom_err *err);
int loomd_registry_unregister(struct loomd_registry *r, uint64_t job_id, struct loom_err *err);

/*
 * An agent's report on the flow with tuple t: bytes sent since the last
 * report, and whether it ended. Returns 0, -ENOENT (no such flow), or
 * -EALREADY (already done; bytes are still counted).
 */
int loomd_registry_flow_stat(struct loomd_registry *r, const struct wire_tuple *t, uint64_t bytes,
			     bool done, uint64_t now_ns);

/*
 * Host addresses: the host owning an address (agents' Hello). set returns 0,
 * -EINVAL (family or host) or -ENOMEM; clear forgets every address of host.
 */
int loomd_registry_set_host_addr(struct loomd_registry *r, uint32_t host, const uint8_t *addr,
				 uint8_t family);
void loomd_registry_clear_host_addrs(struct loomd_registry *r, uint32_t host);
/* The hosts owning t's source and destination addresses: 0, or -ENOENT. */
int loomd_registry_hosts_of(const struct loomd_registry *r, const struct wire_tuple *t,
			    uint32_t *ret_src, uint32_t *ret_dst);

/* Lookups (NULL when absent). */
struct loomd_rjob *loomd_registry_job(const struct loomd_registry *r, uint64_t id);
struct loomd_rcoflow *loomd_registry_coflow(const struct loomd_registry *r, uint64_t id);
struct loomd_rflow *loomd_registry_flow(const struct loomd_registry *r, const struct wire_tuple *t);

/* Jobs in registration order: ret_jobs borrowed until the next change. */
struct loomd_rjob *const *loomd_registry_jobs(const struct loomd_registry *r, uint32_t *ret_n);

/* What one tenant's jobs hold (done jobs count until they are forgotten). */
struct loomd_tenant_use {
	uint32_t jobs, coflows;
	uint64_t flows;
};
/* Fills *ret with tenant's use (zeros for a tenant that never registered). */
void loomd_registry_tenant_use(const struct loomd_registry *r, uint32_t tenant,
			       struct loomd_tenant_use *ret);

struct loomd_registry_counts {
	uint32_t jobs, jobs_done, coflows, coflows_active, coflows_done;
	uint64_t flows, flows_done;
};
void loomd_registry_counts(const struct loomd_registry *r, struct loomd_registry_counts *ret);

/*
 * The view: rebuilt from the registry when a job or flow came or went since
 * the last call, else the same model brought up to date in place. Borrowed;
 * valid until the next change. *ret_rebuilt tells whether it is new (then
 * policies made for the old one must be remade). NULL + errno on failure.
 */
struct cp_model *loomd_registry_view(struct loomd_registry *r, bool *ret_rebuilt,
				     struct loom_err *err);

/* Registry objects of view indices (valid for the current view). */
struct loomd_rcoflow *loomd_registry_view_coflow(const struct loomd_registry *r, uint32_t c);
struct loomd_rflow *loomd_registry_view_flow(const struct loomd_registry *r, uint32_t f);

/*
 * Releases every READY coflow of the view whose time has come (release time
 * = its ready time); returns how many, and the earliest future ready time in
 * *ret_next_ns (CP_TIME_NEVER if none).
 */
uint32_t loomd_registry_release_due(struct loomd_registry *r, uint64_t now_ns,
				    uint64_t *ret_next_ns);

/* Forgets jobs finished before cutoff_ns; returns their ids (up to cap) and count. */
uint32_t loomd_registry_expire(struct loomd_registry *r, uint64_t cutoff_ns, uint64_t *ret_ids,
			       uint32_t cap);

/* Model events the view produced since the last call (for policy on_event). */
const struct cp_event *loomd_registry_events(struct loomd_registry *r, uint32_t *ret_n);
void loomd_registry_events_clear(struct loomd_registry *r);

/* A coflow's state (model.h), as of the facts known (the view, or its facts before a rebuild). */
enum cp_coflow_state loomd_registry_coflow_state(const struct loomd_registry *r,
						 const struct loomd_rcoflow *c);

/* The latest time the registry was told about. */
uint64_t loomd_registry_now(const struct loomd_registry *r);

#endif
