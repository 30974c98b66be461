/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/policy/fluid: a coflow-level fluid model of the fabric, the
 * forward model of the lookahead policy (private to controlplane/policy).
 *
 * A snapshot of a running model is taken at one instant (policy_fluid_build):
 * every unfinished coflow of every job that has arrived, as a sparse vector
 * of the bits it still has to move through each port, its DAG edges with
 * their compute delays, and its release state. Jobs that have not arrived
 * are not in it: the model knows only what a live controller knows.
 *
 * A rollout (policy_fluid_run) then plays the snapshot forward. Between events
 * rates are constant: the schedulable coflows, in priority order, first get
 * MADD (each port demand of a coflow at the rate that finishes them all at
 * its bottleneck time on the capacity earlier coflows left; a coflow with a
 * saturated port gets nothing), then the capacity left is backfilled in the
 * same order, a coflow's uplink and downlink sides balanced (every bit leaves
 * one uplink and enters one downlink). Events: a coflow completes, a demand
 * drains (its port's capacity goes to the others, as a finished flow's does
 * in the engine), a coflow is released (its parents done, plus the edge's
 * compute delay). The first interval follows the ranks given; from the first
 * completion or release on, a rule re-orders (enum policy_fluid_rule), as the
 * base policy would when the engine consults it.
 *
 * What it leaves out, against the flow-level engine (controlplane/sim): the
 * flows inside a coflow (a coflow's demand on one port is one number, so its
 * backfill is balanced per side rather than flow by flow, and per-flow
 * max-min inside a coflow is not modelled); rack ports get no backfill;
 * completions are not rounded to nanoseconds. With one flow per coflow on a
 * big switch it is the engine (test_lookahead checks it to 1e-6); on
 * generated multi-stage workloads its weighted JCT is within about 1% of
 * the engine's (docs/policies.md).
 *
 * Invariants: all scratch is sized at build; a run allocates nothing and
 * does not change the snapshot, so runs with different ranks are independent
 * and deterministic.
 */
#ifndef LOOM_CONTROLPLANE_POLICY_FLUID_H
#define LOOM_CONTROLPLANE_POLICY_FLUID_H

#include <stdbool.h>
#include <stdint.h>

#include "controlplane/model/model.h"

#define POLICY_FLUID_WORK_ANY UINT64_MAX

/*
 * How a rollout completes the order after its first interval: the ranks it
 * was given, frozen (released coflows inherit their parent's, or keep their
 * own with own_rank), or re-sorted at every event by a heuristic computed on
 * the fluid state.
 */
enum policy_fluid_rule {
	POLICY_FLUID_FROZEN = 0,
	POLICY_FLUID_SEBF,  /* smallest remaining bottleneck x * max_p D_p / cap_p first */
	POLICY_FLUID_LCF,   /* least remaining bits first */
	POLICY_FLUID_SRJF,  /* jobs by remaining job bottleneck; in a job, longest remaining path */
	POLICY_FLUID_WSRJF, /* the same with the job bottleneck divided by its weight */
	POLICY_FLUID_WSEBF, /* sebf's bottleneck divided by the job's weight (Smith's rule) */
	POLICY_FLUID_FIFO,  /* earliest release first */
	POLICY_FLUID_NCF,   /* fewest flows first */
	POLICY_FLUID_CPF,   /* longest remaining critical path first */
	POLICY_FLUID_WCPF,  /* largest weight x remaining critical path first */
	POLICY_FLUID_BSSI,  /* Sincronia's bottleneck-select-scale-iterate, job weights */
	POLICY_FLUID_BLEND, /* the blend policy's default vote: bssi 1, wsrjf 1, sebf 0.5, lcf 0.3 */
	POLICY_FLUID_NRULES,
};

struct policy_fluid {
	/* the fabric */
	uint32_t nports, nhosts;
	bool racks;
	double *cap_bps; /* nports */
	double *thr_bps; /* nports: FLUID_FREE_EPS x capacity; free at or below it is none */
	uint32_t nfree0, nfree_up0, nfree_down0; /* ports (host uplinks, downlinks) above it */
	double *free_bps;
	double *acc; /* nports: scratch while building, all zero between uses */
	uint32_t *port_stamp;
	uint32_t stamp;

	/* the snapshot: n coflows of nj jobs */
	uint32_t n, nj;
	uint32_t *cof;    /* n: model coflow index */
	uint32_t *local;  /* model ncoflows: compact index, CP_NONE when not in the snapshot */
	uint32_t *job;    /* n: compact job index */
	uint32_t *dstart; /* n + 1: demand entries of coflow i are [dstart[i], dstart[i+1]) */
	uint32_t *dport;  /* demand entries: port */
	uint8_t *dside;   /* demand entries: 0 host uplink, 1 host downlink, 2 other */
	double *dbits;    /* demand entries: bits left at the snapshot */
	/*
	 * The rollout's demands: a copy of the snapshot's entries, each coflow's
	 * live ones (bits left) first, [dstart[i], dend[i]), in snapshot order;
	 * a demand that drains leaves them (the rest move up, keeping their
	 * order, so every sum is the same as over all entries), and the loops of
	 * every event skip the drained ones
	 */
	uint32_t *dend;     /* n */
	uint32_t *rport;    /* demand entries */
	uint8_t *rside;     /* demand entries */
	double *rbits;      /* demand entries: bits left in the rollout (0 beyond dend) */
	double *drate;      /* demand entries: current rate, bits/s */
	uint32_t *kstart;   /* n + 1: child edges of coflow i are [kstart[i], kstart[i+1]) */
	uint32_t *kchild;   /* child edges: compact child */
	double *kdelay_s;   /* child edges: compute delay */
	uint8_t *state0;    /* n: CP_COFLOW_WAITING, READY or ACTIVE at the snapshot */
	uint32_t *parents0; /* n: unfinished parents at the snapshot */
	double *ready0_s;   /* n: earliest release from the snapshot's parents, s from now */
	double *rel0_s;     /* n: release time of an ACTIVE coflow, s from now (<= 0) */
	uint32_t *width;    /* n: flows */
	double *earliest_s; /* n: job arrival + release offset, s from now (may be < 0) */
	uint32_t *jleft0;   /* nj: unfinished coflows at the snapshot */
	double *jweight;    /* nj */
	bool unit_weights;  /* every jweight is 1 (policy_fluid_rules_alike()) */
	size_t ncap, ndcap, nkcap, njcap; /* capacities */

	/* rollout state */
	double *tleft;   /* n: seconds to finish at the current rates */
	double *rank;    /* n: priority, lower first (input of policy_fluid_run) */
	double *rnow;    /* n: rank in the rollout (inherited on release unless own_rank) */
	uint8_t *state;  /* n */
	uint8_t *moving; /* n: the last allocation gave coflow i a rate (else its drate is stale) */
	uint8_t *timed;  /* n: scratch of the allocation: tleft[i] taken in the backfill */
	double *tdrain;  /* n: seconds until coflow i's first demand drains at the current rates */
	double *jlb_s;   /* nj: the snapshot's lower bound on each job's finish, s from now */
	double done_cost; /* the run so far: sum of weight x finish over its finished jobs */
	uint32_t *parents;
	double *ready_s;
	double *rel_s; /* n: release time in the rollout */
	uint32_t *act; /* schedulable coflows, by (rnow, index) */
	uint32_t nact;
	uint32_t *jleft;
	uint32_t nready, jobs_open; /* READY coflows, unfinished jobs */
	double next_ready_s;        /* the earliest ready_s of a READY coflow; INFINITY: none */
	double *jfinish_s;          /* nj: completion, s from now; < 0 while unfinished */
	double first_s;    /* the last run's first interval: when its first event came, s */
	uint32_t live_act; /* live demands of the schedulable coflows */
	/*
	 * The work runs may still do (POLICY_FLUID_WORK_ANY, the initial value:
	 * in effect no limit), counted per event as the live demands of the
	 * schedulable coflows plus a little: set by the caller, lowered by
	 * every run. A run that would exceed it stops, returns INFINITY and
	 * sets out_of_work.
	 */
	uint64_t work_left;
	bool out_of_work;
	/*
	 * Set by the caller before policy_fluid_build: jobs that arrive within
	 * this many seconds after now are in the snapshot too (an oracle of the
	 * future, for research in the simulator, whose model holds every job of
	 * the trace; a live model has no such jobs). 0: only arrived jobs.
	 */
	double future_s;
	/*
	 * Set by the caller: a coflow released in a rollout keeps its own rank
	 * (f->rank) instead of its parent's, so that POLICY_FLUID_FROZEN plays
	 * one fixed priority order over every coflow of the snapshot.
	 */
	bool own_rank;
	double *cfinish_s;  /* n: the last run's completion of each coflow, s from now; -1: none */
	double *key, *key2; /* n: re-sort keys */
	double *vote;       /* n: POLICY_FLUID_BLEND's weighted places */
	double *jkey;       /* nj */
	double *path;       /* n: remaining critical path, s (-1: not computed) */
	/* BSSI scratch */
	uint32_t *bs_pfirst; /* nports + 1: schedulable demands grouped by port */
	uint32_t *bs_fill;   /* nports */
	uint32_t *bs_ports;  /* nports: the ports with schedulable demands */
	uint32_t *bs_cidx;   /* nports: a port's place in bs_ports */
	double *bs_pl;       /* nports: the load left on bs_ports[q] */
	uint32_t *bs_coflow; /* demand entries, grouped by port: coflow */
	double *bs_bits;     /* and its bits there */
	double *bs_w;        /* n: scaled weights */
	uint8_t *bs_placed;  /* n */
};

/* Readies f for models on m's fabric (bound). 0 or -errno. Free with policy_fluid_done(). */
int policy_fluid_init(struct policy_fluid *f, const struct cp_model *m);
void policy_fluid_done(struct policy_fluid *f);

/*
 * Takes the snapshot of m at now_ns (m synced: remaining bytes exact).
 * Returns the number of coflows in it, or -ENOMEM.
 */
int policy_fluid_build(struct policy_fluid *f, const struct cp_model *m, uint64_t now_ns);

/*
 * Plays the snapshot forward with f->rank[i] set by the caller for every
 * coflow of the snapshot: the order until the first event; after it, rule
 * orders (POLICY_FLUID_FROZEN: the ranks stay, a coflow released in the rollout
 * takes the rank of the parent that released it, or keeps its own with
 * f->own_rank). Stops when every job of
 * the snapshot is done or at horizon_s (> 0; 0 = no horizon). Returns the
 * cost: the sum over the snapshot's jobs of weight x the time each spends
 * unfinished from now until the end (its weighted JCT from now on with no
 * horizon). Job completion times (s from now, or -1 when unfinished at the
 * horizon) are left in f->jfinish_s.
 *
 * bound (INFINITY: none): a run whose cost cannot be below bound may stop
 * as soon as that is certain and return INFINITY (f->jfinish_s and
 * f->first_s are then partial). What it can still cost is bounded below by
 * the finished jobs' cost plus, for each open job, its weight times the
 * later of now and its finish alone on the fabric from the snapshot
 * (f->jlb_s, its remaining critical path); so a finite return is exactly
 * the cost without a bound, and a run that would cost less than bound is
 * never cut short (test_lookahead checks both).
 */
double policy_fluid_run(struct policy_fluid *f, enum policy_fluid_rule rule, double horizon_s,
			double bound);

/*
 * The order rule gives the snapshot's schedulable coflows now, as model
 * coflow indices into ret_order (room for the snapshot's coflows); returns
 * their count. Overwrites f->rank.
 */
uint32_t policy_fluid_order(struct policy_fluid *f, enum policy_fluid_rule rule,
			    uint32_t *ret_order);

/*
 * Whether rules a and b order the snapshot alike at every event of any run
 * from it: the same rule, or a weighted rule and its unweighted one (wsebf
 * and sebf, wsrjf and srjf) when every job of the snapshot weighs 1, so
 * that the division by the weight is exact. Then the same order run by
 * either gives the same cost, bit for bit.
 */
bool policy_fluid_rules_alike(const struct policy_fluid *f, enum policy_fluid_rule a,
			      enum policy_fluid_rule b);

#endif
