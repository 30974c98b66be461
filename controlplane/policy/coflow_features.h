/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/policy/coflow_features: what the learned policy sees of the model.
 *
 * At a decision, the graph holds every job with at least one schedulable
 * coflow, in job order (arrival, then external id: not the order jobs were
 * registered in), and of each such job every unfinished coflow (waiting,
 * ready or schedulable) with the DAG edges between them. Each node gets
 * POLICY_NFEATURES numbers, normalised so that typical values lie in
 * [0, ~10] (log1p of seconds, MiB or counts where the raw value is
 * heavy-tailed). docs/learning.md lists them; in short, per coflow:
 *
 *    0 total MiB              1 remaining MiB           2 width (flows)
 *    3 longest remaining flow (MiB)                     4 remaining bottleneck s
 *    5 fraction sent          6 waiting s since release 7 schedulable (0/1)
 *    8 depth                  9 height                  10 descendants
 *   11 descendants' remaining MiB                       12 remaining critical path s
 *   13 job weight             14 job age s              15 job remaining bottleneck s
 *   16 port contention s: max over its ports of the remaining bytes every
 *      schedulable coflow has through the port / capacity
 *
 * Pure: no allocation after policy_graph_init(), no clock, no I/O.
 */
#ifndef LOOM_CONTROLPLANE_POLICY_COFLOW_FEATURES_H
#define LOOM_CONTROLPLANE_POLICY_COFLOW_FEATURES_H

#include <stdbool.h>
#include <stdint.h>

#include "controlplane/model/model.h"

#define POLICY_NFEATURES 17

/*
 * A model may also take the heuristics' places (policy_graph.nfeat =
 * POLICY_NFEATURES_RANKS): per heuristic of policy_rank_heuristics, two
 * numbers per node, the coflow's place in that heuristic's order over the
 * schedulable coflows as a fraction of their number (0 first) and
 * log1p(place); a node that is not schedulable gets 1 and log1p(n). The
 * builder leaves them to the gnn policy, which runs the heuristics.
 */
#define POLICY_NRANK_HEUR      4
#define POLICY_NFEATURES_RANKS (POLICY_NFEATURES + 2 * POLICY_NRANK_HEUR)
extern const char *const policy_rank_heuristics[POLICY_NRANK_HEUR];

enum policy_feature {
	PF_TOTAL_MIB = 0,
	PF_REMAINING_MIB,
	PF_WIDTH,
	PF_LONGEST_FLOW_MIB,
	PF_BOTTLENECK_S,
	PF_SENT_FRACTION,
	PF_WAIT_S,
	PF_SCHEDULABLE,
	PF_DEPTH,
	PF_HEIGHT,
	PF_DESCENDANTS,
	PF_DESC_REMAINING_MIB,
	PF_PATH_S,
	PF_WEIGHT,
	PF_JOB_AGE_S,
	PF_JOB_BOTTLENECK_S,
	PF_CONTENTION_S,
};

/* Short names of the features, e.g. "remaining_mib", in feature order. */
extern const char *const policy_feature_names[POLICY_NFEATURES];

struct policy_graph {
	/* the graph of the last build; arrays sized for the whole model */
	uint32_t nnodes, njobs, nedges, nsched;
	float *x;              /* nnodes x nfeat, row-major */
	uint32_t nfeat;        /* POLICY_NFEATURES (init's default) or POLICY_NFEATURES_RANKS */
	uint32_t *job_start;   /* njobs + 1 */
	uint32_t *edges;       /* 2 x nedges: parent node, child node */
	uint32_t *sched;       /* nsched node indices of the schedulable coflows */
	uint32_t *node_coflow; /* coflow index of each node */
	/*
	 * nsched: the residual prior of each schedulable coflow (in sched
	 * order), which the gnn policy adds to the model's score when the model
	 * has one (has_prior); the builder does not set it.
	 */
	float *prior;
	bool has_prior;

	/* private scratch */
	uint32_t *topo;      /* per job: its coflows in topological order */
	uint32_t *node_of;   /* per coflow: node index at the last build, or CP_NONE */
	uint32_t *job_seen;  /* per job: stamp */
	uint32_t *desc_seen; /* per coflow: stamp of the descendant walk */
	uint32_t *stack;     /* ncoflows: the descendant walk */
	uint32_t *jobs;      /* njobs: the jobs of the build, sorted */
	double *port_bytes;  /* nports: remaining bytes of schedulable coflows */
	double *port_load;   /* nports, zero between uses */
	double *path_s;      /* per coflow */
	uint32_t *depth;     /* per coflow */
	uint32_t *height;    /* per coflow */
	uint32_t stamp, dstamp;
	uint32_t nports;
};

/*
 * Sizes g for m (bound to a fabric): every array for the whole model, so
 * builds never allocate. 0, -EINVAL (unbound model or a cyclic job) or -ENOMEM.
 * policy_graph_init_nfeat: nodes of nfeat numbers, POLICY_NFEATURES or
 * POLICY_NFEATURES_RANKS (-EINVAL otherwise); policy_graph_init: the first.
 */
int policy_graph_init(struct policy_graph *g, const struct cp_model *m);
int policy_graph_init_nfeat(struct policy_graph *g, const struct cp_model *m, uint32_t nfeat);
void policy_graph_done(struct policy_graph *g);

/* Builds the graph of m's current state at now_ns (see above). */
void policy_graph_build(struct policy_graph *g, const struct cp_model *m, uint64_t now_ns);

#endif
