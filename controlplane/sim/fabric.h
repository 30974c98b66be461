/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/sim/fabric: turns a policy decision into per-flow rates
 * (private to the simulator). All scratch is sized at init; allocation
 * never mallocs.
 */
#ifndef LOOM_CONTROLPLANE_SIM_FABRIC_H
#define LOOM_CONTROLPLANE_SIM_FABRIC_H

#include "controlplane/sim/sim.h"

struct fabric_heap_ent {
	double share;
	uint32_t port;
	uint32_t ver;
};

struct sim_fabric {
	uint32_t nports;
	double *cap; /* port capacities as doubles */
	double *free_bps;
	uint32_t *cnt;     /* unfrozen flows per port in the current water-fill */
	uint32_t *pstart;  /* per port: first index in plist */
	uint32_t *pfill;   /* per port: next free index in plist */
	uint32_t *plist;   /* flows by port, capacity TOPO_MAX_FLOW_PORTS * nflows */
	uint32_t *touched; /* ports touched by the current water-fill */
	uint32_t *ver;     /* per port: version for lazy heap deletion */
	uint32_t *flows;   /* flows of the current group */
	uint32_t *fstamp;  /* per flow: == gen when frozen in the current water-fill */
	uint32_t gen;
	struct fabric_heap_ent *heap;
	size_t heap_cap;
};

int sim_fabric_init(struct sim_fabric *fb, const struct cp_model *m);
void sim_fabric_done(struct sim_fabric *fb);

/*
 * Sets rate_bps of every unfinished flow of every active coflow (and each
 * coflow's rate_bps) from decision d, in opts' mode. Never exceeds a port's
 * capacity.
 */
void sim_fabric_allocate(struct sim_fabric *fb, struct cp_model *m, const struct policy_decision *d,
			 const struct sim_opts *o);

/* Returns the largest allocated/capacity ratio over all ports (for checks). */
double sim_fabric_max_load(const struct sim_fabric *fb, const struct cp_model *m);

#endif
