/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/policy private helpers shared by the policy families: scratch
 * buffers sized to a model, a stable sort of coflows by keys, and remaining
 * bottleneck times of coflows and jobs.
 */
#ifndef LOOM_CONTROLPLANE_POLICY_UTIL_H
#define LOOM_CONTROLPLANE_POLICY_UTIL_H

#include <stdint.h>

#include "controlplane/model/model.h"

struct policy_scratch {
	double *free_bps;  /* nports */
	double *port_load; /* nports; all zero between uses */
	double *key;       /* ncoflows: primary sort key per coflow index */
	double *key2;      /* ncoflows: secondary sort key per coflow index */
};

/* Allocates scratch for m (which must be bound to a fabric). 0, -EINVAL or -ENOMEM. */
int policy_scratch_init(struct policy_scratch *s, const struct cp_model *m);
void policy_scratch_done(struct policy_scratch *s);

/*
 * Copies m->active into order and sorts it by key[c] ascending, then key2[c]
 * ascending (key2 may be NULL), then release time, then coflow index: a
 * total order, so decisions are deterministic. Returns the count.
 */
uint32_t policy_sort_active(const struct cp_model *m, uint32_t *order, const double *key,
			    const double *key2);

/*
 * Seconds coflow c needs alone on the fabric for what it has left: max over
 * its ports of (remaining bytes through the port * 8 / port capacity), the
 * effective bottleneck of Varys. Waiting coflows count all their bytes.
 * port_load: nports doubles, all zero; left all zero.
 */
double policy_coflow_bottleneck_s(const struct cp_model *m, uint32_t c, double *port_load);

/*
 * Kahn's algorithm (common/dag.h) inside each job: writes job j's coflows
 * in topological order (parents first) to out[jobs[j].first_coflow ..].
 * indeg is ncoflows uint32_t of scratch; nothing is allocated. 0, or -EINVAL
 * when a job has a cycle (the builder rejects those, so only a corrupted
 * model gets it).
 */
int policy_topo_order(const struct cp_model *m, uint32_t *out, uint32_t *indeg);

/* The same over every unfinished coflow of job j together. */
double policy_job_bottleneck_s(const struct cp_model *m, uint32_t j, double *port_load);

#endif
