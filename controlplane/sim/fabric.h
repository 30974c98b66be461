/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/sim/fabric: turns a policy decision into per-flow rates
 * (private to the simulator). All scratch is sized at init; nothing here
 * mallocs after sim_fabric_init().
 *
 * Two regimes, chosen per decision:
 *   - rate mode (ideal order, policy rates, no policy classes): each flow
 *     gets min(its policy rate, the headroom on its path) in order, then
 *     leftover capacity is backfilled greedily in order. When flows finish,
 *     their capacity is offered again to the flows crossing the freed ports,
 *     in priority order (sim_fabric_update): no full recomputation.
 *   - water-fill mode (classes): strict priority across classes, per-flow
 *     max-min fairness inside a class. A class is a set of flows: with
 *     --quantize per-host a coflow's flows may be in different classes on
 *     different source hosts, as loomd gives them. Flows of one class with the same
 *     src and dst always get the same max-min rate, so the water-fill runs
 *     over such pairs weighted by their number of unfinished flows; after
 *     completions the classes from the highest one that lost a flow are
 *     re-filled, starting from per-port flow counts kept as flows finish:
 *     the pairs through ports with no capacity left at all are kept at rate
 *     0 as counts (the zero prefix), and the rest of each class's logged
 *     filling is walked again, only the ports that now differ from the log
 *     filled live (fabric.c, walk_class()); the pairs whose rate changed
 *     (noted as they are frozen) are reported in one call.
 */
#ifndef LOOM_CONTROLPLANE_SIM_FABRIC_H
#define LOOM_CONTROLPLANE_SIM_FABRIC_H

#include "common/hmap.h"
#include "controlplane/sim/sim.h"

struct fabric_heap_ent {
	double share;
	uint32_t entry; /* index into tports */
	uint32_t ver;
};

struct fabric_pair {
	uint32_t src, dst;
	uint32_t nports;
	uint32_t ports[TOPO_MAX_FLOW_PORTS];
	uint32_t cls;          /* index into classes */
	uint32_t n;            /* unfinished member flows */
	double rate_bps;       /* each member's rate */
	uint32_t mstart, mend; /* members[mstart .. mend) */
	uint32_t estart, eend; /* entries[estart .. eend): its flows per coflow */
	/*
	 * Virtual clock, kept by the engine: bytes served to each member since
	 * the pair was built, as of tv_ns. A member with tag T (its remaining
	 * bytes at build time) has T - vbytes left.
	 */
	double vbytes;
	uint64_t tv_ns;
	double head_tag; /* the engine's: its first member's tag (the next to finish) */
};

/*
 * A pair as the water-fill sees it, in one cache line (an update visits
 * pairs in no order). rate_bps is the water-fill's; fabric_pair.rate_bps
 * follows it when the engine is told (sim_fabric_allocate(), and each
 * changed pair in sim_fabric_update()). n follows fabric_pair.n.
 */
struct fabric_pw {
	double rate_bps;
	uint32_t n;
	uint32_t stamp;  /* frozen when == gen */
	uint32_t fstep;  /* the step that froze it (CP_NONE: none, or the zero prefix) */
	uint32_t ofstep; /* frozen in the current walk: the step that froze it before */
	uint8_t nports;
	uint8_t zn; /* its ports with no capacity at all in its class's input */
	uint32_t ent[TOPO_MAX_FLOW_PORTS];  /* each port's tports entry */
	uint32_t lrec[TOPO_MAX_FLOW_PORTS]; /* its record there in the log (or CP_NONE) */
} __attribute__((aligned(64)));

struct fabric_ptab {
	uint32_t stamp;
	uint32_t pair;
};

/* How many unfinished flows of one coflow a pair holds. */
struct fabric_entry {
	uint32_t coflow;
	uint32_t count;
};

/*
 * A change the filling made to a port: at step `step` (the bottleneck's
 * tports entry) a pair (ref: pair * TOPO_MAX_FLOW_PORTS + the port's index
 * in it) with pn unfinished flows (kept up to date as flows finish, through
 * fabric_pw.lrec) was frozen, leaving the port cnt unfrozen flows and free_bps.
 */
struct fabric_lrec {
	uint32_t step;
	uint32_t pn;
	uint32_t ref;
	uint32_t cnt;
	double free_bps;
};

struct fabric_class {
	uint32_t pstart, pend; /* pairs */
	uint32_t tstart, tend; /* entries in tports (ports this class touches) */
	uint32_t nsteps;       /* bottleneck freezes of its last filling */
	bool logged;           /* that filling kept its log (narrow class) */
};

/* Rate mode: called for every flow whose rate changes in sim_fabric_update(). */
typedef void (*fabric_rate_fn)(void *ctx, uint32_t flow, double rate_bps);
/* Water-fill mode: called for every pair whose rate changed (pairs[pair] has the new one). */
typedef void (*fabric_pair_fn)(void *ctx, uint32_t pair, double old_rate_bps);

struct sim_fabric {
	uint32_t nports, nhosts;
	double *cap;      /* port capacities as doubles */
	double *free_bps; /* capacity not allocated */
	bool rate_mode;   /* regime of the current decision */

	/* rate mode: unfinished flows by port, in priority order */
	uint32_t *fport_start; /* nports + 1 */
	uint32_t *fport_list;  /* TOPO_MAX_FLOW_PORTS * nflows */
	uint32_t *rank;        /* per flow: position in the priority order */
	uint32_t *mk_port;     /* freed ports being merged (update scratch) */
	uint32_t *mk_cur;      /* per merged port: cursor into its list */
	bool *mk_seen;         /* per port: already among mk_port */
	size_t nflows;         /* capacity of the per-flow arrays */

	/* water-fill mode */
	struct fabric_pair *pairs;
	uint32_t npairs;
	uint32_t *members; /* flows grouped by pair */
	struct fabric_entry *entries;
	uint32_t *flow_entry; /* per flow: its entry */
	uint32_t *last_cf;    /* per pair: scratch while building entries */
	uint32_t *pair_of;    /* per flow */
	struct fabric_class *classes;
	uint32_t nclasses;
	uint32_t *tports;   /* per class: touched ports */
	uint32_t *tl_start; /* per tports entry: first index in tlist */
	uint32_t *tl_end;
	uint32_t *tlist;      /* pairs by (class, port) */
	double *cntw;         /* per port: unfrozen flows (weighted) in the current class */
	uint32_t *entry_of;   /* per port: its tports entry in the current class */
	uint32_t *ver;        /* per port: heap entry version */
	struct fabric_pw *pw; /* per pair */
	uint32_t gen;
	/*
	 * The log of each narrow class's last filling, so that an update can
	 * walk it instead of filling again (fabric.c, walk_class()). A step is
	 * named by its bottleneck's tports entry. Per tports entry: the port's
	 * free capacity, unfrozen flows and fair share (INFINITY without
	 * flows) as the filling left them, the position of its step (pickstep,
	 * CP_NONE if never the bottleneck), and lg_n[e] records of its changes
	 * in lg[tl_start[e] ..], in step order. Per class, from tstart on, its
	 * bottleneck at each position with the share and its pairs' rate. Per
	 * pair: the step that froze it.
	 */
	double *efree, *ecnt, *ekey;
	uint32_t *pickstep, *lg_n, *pcnt_last;
	struct fabric_lrec *lg;
	uint32_t *pk_e;
	double *pk_key, *pk_share;
	/*
	 * walk_class() scratch: live ports (xmark == gen, listed in xlist),
	 * per port its next logged record (xcur), the records kept (lg_keep)
	 * and written anew (lg_new, into lg2 while lg is read); live ports by
	 * the position of their next record (xbhead/xbnext); per step, the
	 * stamp of being taken again (rep) and its new position (newpos); the
	 * new filling's steps (npk_*).
	 */
	uint32_t *xmark, *xlist, *xcur, *lg_keep, *lg_new, *xbhead, *xbnext, *rep, *newpos;
	uint32_t *late, *late_head, *late_next;
	/*
	 * The zero prefix (fabric.c): per tports entry, whether its input was
	 * exactly 0 at the last filling (inz) and the flows of zero-prefix
	 * pairs through it (zc); pairs entering or leaving it in an update.
	 */
	bool *inz;
	uint32_t *zc, *zset, *uset;
	struct fabric_lrec *lg2;
	uint32_t *npk_e;
	double *npk_key, *npk_share;
	struct fabric_heap_ent *heap;
	size_t heap_cap;
	/*
	 * Unfinished member flows of the class's pairs through each tports
	 * entry, kept as flows finish: a re-fill starts from these instead of
	 * summing over every pair.
	 */
	uint32_t *cnt0;
	/*
	 * An update's re-fill notes, as it freezes each pair, whether the
	 * pair's rate changed (chg bit, old_rate) instead of comparing every
	 * pair of the re-filled classes afterwards; pairs that lost their last
	 * flow since the last update are in emptied.
	 */
	double *old_rate; /* per pair */
	uint64_t *chg;    /* per pair, a bit */
	bool tracking;    /* a re-fill of sim_fabric_update is running */
	bool full_refill; /* sim_opts.full_refill of the current decision */
	uint32_t *emptied;
	uint32_t nemptied;
	/*
	 * (src, dst) -> pair while building a class: a table indexed by src *
	 * nhosts + dst, valid where stamp == ptab_gen (one per class), when
	 * nhosts^2 is small enough; else a fixed hash map, cleared per class.
	 */
	struct fabric_ptab *ptab;
	uint32_t ptab_gen;
	struct loom_hmap pair_ids;
	uint32_t *scratch; /* nports + 1 */
	/*
	 * Classes of the current decision (water-fill mode), per unfinished
	 * flow of an ordered coflow: flow_cls as the driver numbers them (what
	 * a host's datapath holds in classes mode), flow_dense renumbered
	 * 0, 1, ... without gaps; then the flows grouped by dense class.
	 */
	uint32_t *flow_cls;      /* per flow */
	uint32_t *flow_dense;    /* per flow */
	uint32_t *by_class;      /* flows, class by class (cls_start) */
	uint32_t *cls_start;     /* ncoflows + 1 */
	uint32_t *cls_next;      /* ncoflows + 1, cursor */
	uint32_t *class_scratch; /* POLICY_CLASSES_SCRATCH(topo), policy_decision_assign_classes() */
	/*
	 * free_bps before each class (class c at snap[c * nports]) for the first
	 * snap_classes classes, so an update re-fills only from the highest class
	 * that lost a flow: strict priority leaves the classes above it as they are.
	 */
	double *snap;
	uint32_t snap_classes;
	uint32_t dirty_class; /* lowest class index with a finished flow, or CP_NONE */
};

int sim_fabric_init(struct sim_fabric *fb, const struct cp_model *m);
void sim_fabric_done(struct sim_fabric *fb);

/*
 * Sets rate_bps of every unfinished flow of every active coflow from
 * decision d in opts' mode (writes the flows directly; the caller has
 * brought their remaining bytes up to date). Never exceeds a port's capacity.
 */
void sim_fabric_allocate(struct sim_fabric *fb, struct cp_model *m, const struct policy_decision *d,
			 const struct sim_opts *o);

/*
 * Flow f (rate rate_bps) has finished: in rate mode returns its capacity; in
 * water-fill mode marks its class for the next update (the engine has taken
 * it out of its pair).
 */
void sim_fabric_flow_gone(struct sim_fabric *fb, const struct cp_model *m, uint32_t f,
			  double rate_bps);

/*
 * Redistributes capacity after sim_fabric_flow_gone() calls: reports each
 * flow whose rate changes through set_rate (which must update the flow).
 * freed lists the flows that finished (their ports are where capacity was freed).
 */
void sim_fabric_update(struct sim_fabric *fb, struct cp_model *m, const uint32_t *freed,
		       uint32_t nfreed, fabric_rate_fn set_rate, fabric_pair_fn pair_rate,
		       void *ctx);

#endif
