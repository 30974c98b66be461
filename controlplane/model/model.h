/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/model: jobs, coflows, flows and their state transitions.
 *
 * A job is a DAG of coflows (edges may carry a compute delay; jobs carry a
 * weight); a coflow is a set of flows plus a release time; a flow is src host,
 * dst host, bytes. Pure code: time comes in as arguments, nothing here reads a
 * clock, logs above debug, or does I/O.
 *
 * Building: a struct cp_builder takes jobs, coflows, flows and edges in any
 * order, by external id; cp_builder_finish() validates (duplicates, unknown
 * references, sizes, host range, cycles) and lays the model out flat:
 *   - the coflows of job j are coflows[j.first_coflow .. + j.ncoflows),
 *   - the flows of coflow c are flows[c.first_flow .. + c.nflows), followed by
 *     c.flow_cap - c.nflows reserved slots (coflow CP_NONE) when a builder
 *     asked for them (loomd); m->nflows counts flows and slots,
 *   - the parent edges of c are edges[c.first_parent .. + c.nparents) (sorted
 *     by child), its child edges are edges[child_edge[c.first_child + i]].
 * Jobs are sorted by (arrival, external id); everything else keeps input order
 * within its owner.
 *
 * Running: cp_model_bind() fixes the fabric; cp_model_reset() puts every job
 * back to not-arrived; the driver (simulator, loomd, trainer) then calls
 * cp_model_job_arrive(), cp_model_coflow_release(), cp_model_flow_done() and
 * receives the consequences as events. Invariants while running:
 *   - active[0 .. nactive) are exactly the released, unfinished coflows (the
 *     schedulable ones), in no particular order;
 *   - the unfinished flows of coflow c are flow_slot[c.first_flow .. + c.flows_left).
 */
#ifndef LOOM_CONTROLPLANE_MODEL_MODEL_H
#define LOOM_CONTROLPLANE_MODEL_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/errors.h"
#include "topo/topo.h"

#define CP_NONE       UINT32_MAX
#define CP_TIME_NEVER UINT64_MAX

enum cp_coflow_state {
	CP_COFLOW_WAITING = 0, /* job not arrived or parents not done */
	CP_COFLOW_READY,       /* parents done; release scheduled at ready_ns */
	CP_COFLOW_ACTIVE,      /* released: schedulable */
	CP_COFLOW_DONE,
};

enum cp_job_state {
	CP_JOB_PENDING = 0,
	CP_JOB_RUNNING,
	CP_JOB_DONE,
};

struct cp_flow {
	/* static */
	uint32_t coflow;
	uint32_t src, dst;
	uint8_t nports;
	uint32_t ports[TOPO_MAX_FLOW_PORTS]; /* filled by cp_model_bind() */
	uint64_t bytes;
	/* dynamic */
	double remaining_bytes;
	double rate_bps;    /* set by the fabric model */
	uint64_t finish_ns; /* CP_TIME_NEVER until done */
	uint32_t slot;      /* position in flow_slot */
	bool done;
};

struct cp_coflow {
	/* static */
	uint64_t ext_id;
	uint32_t job;
	uint32_t first_flow, nflows;
	uint32_t first_parent, nparents;
	uint32_t first_child, nchildren;
	uint64_t release_offset_ns; /* earliest release after the job's arrival */
	uint64_t total_bytes;
	uint64_t max_flow_bytes;
	/*
	 * Open: more flows may come (loomd); the coflow does not complete when
	 * its known flows are done, only through cp_model_coflow_finish().
	 */
	bool open;
	/*
	 * Flow slots reserved: flows[first_flow + nflows .. first_flow +
	 * flow_cap) are free slots (their coflow is CP_NONE) that
	 * cp_model_add_flow fills; flow_cap == nflows unless a builder asked.
	 */
	uint32_t flow_cap;
	/* dynamic */
	enum cp_coflow_state state;
	uint32_t parents_left;
	uint32_t flows_left;
	uint32_t active_pos; /* position in active[] while ACTIVE */
	uint64_t ready_ns;   /* earliest release once parents are done */
	uint64_t release_ns;
	uint64_t finish_ns;
	double sent_bytes;
	double rate_bps; /* sum of its flows' rates, set by the fabric model */
};

struct cp_job {
	/* static */
	uint64_t ext_id;
	double weight;
	uint64_t arrival_ns;
	uint32_t first_coflow, ncoflows;
	uint64_t total_bytes;
	/* dynamic */
	enum cp_job_state state;
	uint32_t coflows_left;
	uint64_t finish_ns;
	double sent_bytes;
};

struct cp_edge {
	uint32_t parent, child; /* coflow indices */
	uint64_t delay_ns;      /* compute time between parent done and child release */
};

enum cp_event_type {
	CP_EV_JOB_ARRIVAL = 0,
	CP_EV_COFLOW_RELEASE,
	CP_EV_FLOW_DONE,
	CP_EV_COFLOW_DONE,
	CP_EV_JOB_DONE,
	CP_EV_COFLOW_READY, /* parents done; release due at time_ns (may be later) */
};

struct cp_event {
	enum cp_event_type type;
	uint32_t id; /* job, coflow or flow index depending on type */
	uint64_t time_ns;
};

/* Receives events as the model produces them; ctx is the caller's. */
typedef void (*cp_event_fn)(void *ctx, const struct cp_event *ev);

struct cp_model {
	uint32_t nhosts;
	uint32_t njobs, ncoflows, nflows, nedges;
	struct cp_job *jobs;
	struct cp_coflow *coflows;
	struct cp_flow *flows;
	struct cp_edge *edges;   /* sorted by child */
	uint32_t *child_edge;    /* edge indices grouped by parent */
	const struct topo *topo; /* borrowed, set by cp_model_bind() */

	/* dynamic */
	uint32_t *flow_slot; /* nflows: unfinished flows of each coflow first */
	uint32_t *active;    /* ncoflows capacity; nactive used */
	uint32_t nactive;
	uint32_t jobs_arrived, jobs_done, coflows_done;
	uint64_t flows_done;

	cp_event_fn emit;
	void *emit_ctx;
};

/* Builder: accumulates a workload; external ids are the trace's. */
struct cp_builder;

/* Returns a builder for hosts 0 .. nhosts-1, or NULL + errno. */
struct cp_builder *cp_builder_new(uint32_t nhosts);
struct cp_builder *cp_builder_free(struct cp_builder *b);

/* Each returns 0, or -EINVAL/-EEXIST/-ENOENT/-ENOMEM with err filled (no file/line). */
int cp_builder_add_job(struct cp_builder *b, uint64_t job_id, uint64_t arrival_ns, double weight,
		       struct loom_err *err);
int cp_builder_add_coflow(struct cp_builder *b, uint64_t coflow_id, uint64_t job_id,
			  uint64_t release_offset_ns, struct loom_err *err);
int cp_builder_add_flow(struct cp_builder *b, uint64_t coflow_id, uint32_t src, uint32_t dst,
			uint64_t bytes, struct loom_err *err);
int cp_builder_add_edge(struct cp_builder *b, uint64_t parent_coflow_id, uint64_t child_coflow_id,
			uint64_t delay_ns, struct loom_err *err);

/* Marks a coflow open (see struct cp_coflow). 0, or -ENOENT with err filled. */
int cp_builder_set_coflow_open(struct cp_builder *b, uint64_t coflow_id, bool open,
			       struct loom_err *err);

/*
 * Reserves cap flow slots for a coflow (if more than its flows), which
 * cp_model_add_flow can fill later without a rebuild. m->nflows counts the
 * slots. 0, or -ENOENT with err filled.
 */
int cp_builder_set_coflow_capacity(struct cp_builder *b, uint64_t coflow_id, uint32_t cap,
				   struct loom_err *err);

/* Returns the number of coflows added so far. */
uint32_t cp_builder_ncoflows(const struct cp_builder *b);

/*
 * Validates and lays out the model; the builder is consumed (freed) either
 * way. Returns the model, or NULL with errno and err set (e.g. a cycle, a job
 * without coflows, an edge across jobs).
 */
struct cp_model *cp_builder_finish(struct cp_builder *b, struct loom_err *err);

struct cp_model *cp_model_free(struct cp_model *m);

/*
 * Binds the model to a fabric (borrowed; must outlive the model's use) and
 * fills each flow's ports. Returns 0, or -EINVAL when a host id is >= the
 * fabric's host count.
 */
int cp_model_bind(struct cp_model *m, const struct topo *t);

/* Sets the event receiver (may be NULL). */
void cp_model_set_emit(struct cp_model *m, cp_event_fn fn, void *ctx);

/* Puts every dynamic field back to its state before any arrival. */
void cp_model_reset(struct cp_model *m);

/*
 * Job j arrives at now_ns: emits JOB_ARRIVAL, then COFLOW_READY for each
 * coflow without parents (due at arrival + release offset). Returns 0 or
 * -EALREADY.
 */
int cp_model_job_arrive(struct cp_model *m, uint32_t j, uint64_t now_ns);

/*
 * Coflow c (READY) becomes schedulable at now_ns: emits COFLOW_RELEASE; a
 * coflow without flows completes at once (COFLOW_DONE ...). Returns 0 or
 * -EINVAL when c is not READY.
 */
int cp_model_coflow_release(struct cp_model *m, uint32_t c, uint64_t now_ns);

/*
 * Flow f has delivered all its bytes at now_ns: emits FLOW_DONE and, as they
 * follow, COFLOW_DONE, COFLOW_READY for children whose parents are now all
 * done, and JOB_DONE. Returns 0 or -EINVAL when f is not running.
 */
int cp_model_flow_done(struct cp_model *m, uint32_t f, uint64_t now_ns);

/*
 * Coflow c (ACTIVE) is declared finished at now_ns (loomd: the framework says
 * so): its unfinished flows are done (FLOW_DONE each), then COFLOW_DONE and
 * what follows, as with the last flow of a closed coflow. Returns 0 or
 * -EINVAL when c is not ACTIVE.
 */
int cp_model_coflow_finish(struct cp_model *m, uint32_t c, uint64_t now_ns);

/*
 * Adds a flow to coflow c (not done) in one of its reserved slots, in any
 * state: unfinished, with all its bytes to go. Requires cp_model_bind().
 * Returns 0 with the flow's index in *ret_f, -ENOSPC when no slot is left,
 * or -EINVAL (c done, a host out of range, bytes 0). Emits nothing.
 */
int cp_model_add_flow(struct cp_model *m, uint32_t c, uint32_t src, uint32_t dst, uint64_t bytes,
		      uint32_t *ret_f);

/* True when every job has finished. */
static inline bool cp_model_all_done(const struct cp_model *m)
{
	return m->jobs_done == m->njobs;
}

/* Coflow helpers. */
static inline const struct cp_job *cp_coflow_job(const struct cp_model *m,
						 const struct cp_coflow *c)
{
	return &m->jobs[c->job];
}

static inline uint32_t cp_coflow_index(const struct cp_model *m, const struct cp_coflow *c)
{
	return (uint32_t)(c - m->coflows);
}

/* Varys bins: short = longest flow < 5 MiB; narrow = at most 50 flows. */
#define CP_BIN_SHORT_BYTES  (5ULL * 1048576ULL)
#define CP_BIN_NARROW_FLOWS 50u

enum cp_bin {
	CP_BIN_SN = 0, /* short-narrow */
	CP_BIN_LN,     /* long-narrow */
	CP_BIN_SW,     /* short-wide */
	CP_BIN_LW,     /* long-wide */
	CP_BIN_COUNT,
};

enum cp_bin cp_coflow_bin(const struct cp_coflow *c);
const char *cp_bin_name(enum cp_bin bin);

/*
 * The i-th child of coflow c (in child_edge order), or LOOM_DAG_NONE
 * (UINT32_MAX) past the last: the model's DAG as a loom_dag_child_fn
 * (common/dag.h), ctx the const struct cp_model.
 */
uint32_t cp_coflow_child(const void *ctx, uint32_t c, uint32_t i);

/*
 * Isolation time of coflow c: its bottleneck time alone on an empty fabric,
 * max over ports of (bytes through the port * 8 / capacity), rounded up to a
 * nanosecond. port_scratch must hold topo->nports doubles, all zero; it is
 * left all zero. A lower bound on c's CCT. Requires cp_model_bind().
 */
uint64_t cp_coflow_isolation_ns(const struct cp_model *m, uint32_t c, double *port_scratch);

/*
 * Critical-path isolation time of every job: the earliest it could finish
 * after its arrival if each of its coflows ran alone on an empty fabric as
 * soon as its parents (plus edge delays) and release offset allow, so
 * finish(c) = max(offset(c), max over parents p of finish(p) + delay) +
 * isolation(c), and the job's time is the latest finish. A lower bound on its
 * JCT. Fills job_ns[0 .. njobs). Returns 0 or -ENOMEM. Requires cp_model_bind().
 */
int cp_job_critical_paths_ns(const struct cp_model *m, uint64_t *job_ns);

const char *cp_event_type_name(enum cp_event_type type);

#endif
