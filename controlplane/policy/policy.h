/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/policy: the scheduling-policy interface and its registry.
 *
 * A policy is pure: time comes in as now_ns, randomness as the seeded RNG in
 * struct policy, state changes as model events (on_event); the output is a
 * struct policy_decision. loomd, the simulator and the trainer drive the same
 * policy code and a policy never knows which of them called it.
 *
 * A decision orders every schedulable coflow (m->active) exactly once,
 * highest priority first. Optionally it also gives:
 *   - a class per position (policy-defined priority classes, 0 = highest,
 *     non-decreasing along the order); otherwise the driver quantises;
 *   - per-flow rates (bits/s, indexed by flow), as Varys' MADD does; the
 *     fabric treats them as caps and then backfills leftover capacity;
 *   - a wake-up time and byte thresholds ("call me again when coflow c, or
 *     its job, has sent X bytes") for policies that react to progress.
 */
#ifndef LOOM_CONTROLPLANE_POLICY_POLICY_H
#define LOOM_CONTROLPLANE_POLICY_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/errors.h"
#include "common/rng.h"
#include "controlplane/model/model.h"

struct policy_watch {
	uint32_t coflow;   /* coflow index */
	bool job_level;    /* threshold on the coflow's job's sent bytes */
	double sent_bytes; /* wake when sent bytes reach this */
};

struct policy_decision {
	uint32_t norder;
	uint32_t *order; /* capacity: ncoflows */
	bool has_classes;
	uint16_t *class_of; /* per position in order; capacity ncoflows */
	bool has_rates;
	double *rate_bps;   /* per flow index; capacity nflows; read only when has_rates */
	uint64_t wakeup_ns; /* CP_TIME_NEVER for none */
	uint32_t nwatch;
	struct policy_watch *watch; /* capacity: ncoflows */
};

/* Allocates a decision sized for m; 0 or -ENOMEM. Free with policy_decision_done(). */
int policy_decision_init(struct policy_decision *d, const struct cp_model *m);
void policy_decision_done(struct policy_decision *d);

/* Empties d (no order, no classes, no rates, no wake-ups). */
void policy_decision_clear(struct policy_decision *d);

/*
 * Checks that d orders exactly the active coflows of m, once each, and that
 * classes (if any) are non-decreasing. stamp is scratch of ncoflows uint32_t
 * initialised to 0 by the caller and reused across calls with increasing
 * gen (gen > 0). Returns 0 or -EPROTO with err filled.
 */
int policy_decision_validate(const struct policy_decision *d, const struct cp_model *m,
			     uint32_t *stamp, uint32_t gen, struct loom_err *err);

/*
 * The classes the datapath enforces for decision d (validated against m)
 * with k >= 1 priority classes, per source host, as loomd sends them to the
 * agents and the simulator's classes mode (--quantize per-host) models them.
 * Walking the order, the i-th coflow with unfinished flows from host h gets
 * class min(i, k-1) on h, so each host spends its k classes on its own most
 * urgent coflows; a decision with its own classes keeps them, capped at k-1,
 * on every host. Writes flow_class[f] for every unfinished flow f of every
 * ordered coflow and leaves the other entries alone. host_next and
 * host_seen are scratch of m->topo->nhosts uint32_t each, owned by the
 * caller (no state is kept between calls). Returns the number of classes
 * used: 1 + the highest class written, 0 when no flow was.
 */
uint32_t policy_decision_host_classes(const struct policy_decision *d, const struct cp_model *m,
				      uint32_t k, uint32_t *flow_class, uint32_t *host_next,
				      uint32_t *host_seen);

/*
 * Classes for decision d with k >= 1 classes, the same on every host, as
 * few as the order's conflicts need: walking the order, a coflow gets the
 * class one above the highest class of any earlier coflow that has a flow
 * on one of its ports (uplink or downlink), capped at k-1; 0 when it shares
 * no port with an earlier one. So two coflows that meet at a port are in
 * the order's classes there, on every host (what a switch serving DSCP
 * classes in strict priority sees at a receiver's port), and coflows that
 * never meet share classes. A decision with its own classes keeps them,
 * capped at k-1. Writes flow_class[f] for every unfinished flow f of every
 * ordered coflow; port_top is scratch of m->topo->nports uint32_t. Returns
 * the number of classes used.
 */
uint32_t policy_decision_conflict_classes(const struct policy_decision *d, const struct cp_model *m,
					  uint32_t k, uint32_t *flow_class, uint32_t *port_top);

/*
 * How loomd (and the simulator's classes mode) turns an order into the
 * classes each host enforces.
 */
enum policy_class_assign {
	/* policy_decision_conflict_classes(): the same on every host (default) */
	POLICY_CLASSES_CONFLICT = 0,
	/* policy_decision_host_classes(): each host's own rank */
	POLICY_CLASSES_PER_HOST,
};

/* Parses "conflict" or "per-host". 0 or -EINVAL. */
int policy_class_assign_parse(const char *s, enum policy_class_assign *ret_a);
const char *policy_class_assign_name(enum policy_class_assign a);

/*
 * The classes of decision d under assignment a: one of the two functions
 * above. scratch holds POLICY_CLASSES_SCRATCH(m->topo) uint32_t.
 */
#define POLICY_CLASSES_SCRATCH(t)                                                                  \
	((size_t)(t)->nports > 2 * (size_t)(t)->nhosts ? (size_t)(t)->nports :                     \
							 2 * (size_t)(t)->nhosts)
uint32_t policy_decision_assign_classes(const struct policy_decision *d, const struct cp_model *m,
					uint32_t k, enum policy_class_assign a,
					uint32_t *flow_class, uint32_t *scratch);

struct policy_params {
	uint32_t classes; /* number of priority classes the datapath has (K) */
	uint64_t seed;
	/*
	 * Weights file of the learned policies (gnn, ensemble); borrowed, read
	 * at policy_new(). NULL: the shipped model, policy_gnn_default_weights().
	 */
	const char *weights;
	/*
	 * A model already in memory for the gnn policy (borrowed, must outlive
	 * the policy); overrides weights. The trainer's way in.
	 */
	struct gnn_model *gnn_model;
	/*
	 * Rates of gnn policies whose spec leaves rates=auto (a lookahead's gnn
	 * base among them): POLICY_GNN_RATES_PRIOR (0) by the model's prior, or
	 * MADD or PRIORITY for all. The trainer's way to hold them fixed.
	 */
	uint32_t gnn_rates;
};

enum {
	POLICY_GNN_RATES_PRIOR = 0,
	POLICY_GNN_RATES_MADD = 1,
	POLICY_GNN_RATES_PRIORITY = 2,
};

struct policy;
struct gnn_model;

/*
 * Options. A policy spec is "name" or "name:key=value:key=value"; each class
 * declares the keys it accepts with their types, ranges and defaults, and a
 * preset (a spec tail applied before the user's) lets one implementation be
 * registered under several names (e.g. "wcpf" = "cpf:weighted=1").
 */
#define POLICY_MAX_OPTS 12
#define POLICY_SPEC_MAX 96

enum policy_opt_type {
	POLICY_OPT_NUM,  /* a number; a k, M, G or T suffix multiplies by 1024^n */
	POLICY_OPT_INT,  /* the same, and whole */
	POLICY_OPT_BOOL, /* 0/1, no/yes, false/true, off/on; value 0 or 1 */
	POLICY_OPT_ENUM, /* one of choices; the value is its index */
};

struct policy_opt_def {
	const char *key;
	const char *help;
	enum policy_opt_type type;
	double def;
	double min, max;            /* NUM: accepted range, inclusive */
	const char *const *choices; /* ENUM: NULL-terminated */
};

struct policy_class {
	const char *name;
	const char *summary; /* one line for --help */
	bool clairvoyant;    /* needs flow sizes in advance */
	/*
	 * Needs every job of the trace in advance (a research oracle for the
	 * simulator): loomd refuses it.
	 */
	bool offline;
	/*
	 * Drivers consult the policy on every model event except a lone flow
	 * completion (arrivals, releases, coflow and job completions), on its
	 * wake-ups and thresholds, and on periodic ticks; between those the
	 * fabric keeps the last decision and only redistributes the capacity
	 * finished flows leave. Set this to be consulted on flow completions too.
	 */
	bool decide_on_flow_done;
	const struct policy_opt_def *opts; /* nopts entries, at most POLICY_MAX_OPTS */
	uint32_t nopts;
	const char *preset; /* options applied before the user's, "key=value:..." or NULL */
	/* Allocates private state into p->priv. 0 or -errno. */
	int (*init)(struct policy *p, const struct cp_model *m);
	/* Frees p->priv (may be NULL). */
	void (*done)(struct policy *p);
	/* Optional: observes one model event (before the next decide). */
	void (*on_event)(struct policy *p, const struct cp_model *m, const struct cp_event *ev);
	/* Orders m->active into d (already cleared by the caller). 0 or -errno. */
	int (*decide)(struct policy *p, const struct cp_model *m, uint64_t now_ns,
		      struct policy_decision *d);
};

struct policy {
	const struct policy_class *cls;
	struct policy_params params;
	struct loom_rng rng;
	double opt[POLICY_MAX_OPTS]; /* value of cls->opts[i] */
	bool decide_on_flow_done;    /* cls->decide_on_flow_done; init may set it */
	char spec[POLICY_SPEC_MAX];  /* the spec it was made from */
	void *priv;
	/* init may explain a failure here (policy_new reports it); empty otherwise */
	struct loom_err init_err;
};

/* Returns the class registered under name, or NULL. */
const struct policy_class *policy_class_find(const char *name);

/* Returns the registered classes (static storage) and their count in ret_n. */
const struct policy_class *const *policy_class_list(size_t *ret_n);

/*
 * 0 if a live controller may run cls; -EINVAL with the reason in err for an
 * offline class (it needs every job of a trace in advance).
 */
int policy_class_check_live(const struct policy_class *cls, struct loom_err *err);

/*
 * Parses spec ("name[:key=value]..."): finds the class and fills opt
 * (POLICY_MAX_OPTS doubles) with defaults, preset and the given values.
 * Returns 0, or -ENOENT (unknown name; err lists the known ones) or -EINVAL
 * (unknown key, bad value; err lists the valid keys or the accepted range).
 * Needs no model: drivers check their specs before loading anything.
 */
int policy_spec_parse(const char *spec, const struct policy_class **ret_cls, double *opt,
		      struct loom_err *err);

/*
 * Returns a new policy instance for model m (borrowed) from spec, or NULL
 * with errno (ENOENT: unknown name, EINVAL: bad option, both explained in
 * err with the valid choices).
 */
struct policy *policy_new(const char *spec, const struct policy_params *params,
			  const struct cp_model *m, struct loom_err *err);

/* Writes every policy, its summary and its options (for --help). */
void policy_describe(FILE *f);
struct policy *policy_free(struct policy *p);

static inline int policy_decide(struct policy *p, const struct cp_model *m, uint64_t now_ns,
				struct policy_decision *d)
{
	return p->cls->decide(p, m, now_ns, d);
}

static inline void policy_on_event(struct policy *p, const struct cp_model *m,
				   const struct cp_event *ev)
{
	if (p->cls->on_event)
		p->cls->on_event(p, m, ev);
}

/*
 * MADD (Varys): walking order[0 .. n), gives each unfinished flow of coflow c
 * the rate remaining_bytes / G_c where G_c = max over c's ports of (c's
 * remaining bytes there / capacity still free there), so all of c's flows
 * finish together; subtracts from free capacity. A coflow that a saturated
 * port blocks gets rate 0 for every flow. free_bps (topo->nports doubles) is
 * scratch, overwritten; port_load (nports doubles) must be all zero and is
 * left all zero. Writes rate_bps[flow] for the flows of the ordered coflows.
 */
void policy_madd(const struct cp_model *m, const uint32_t *order, uint32_t n, double *free_bps,
		 double *port_load, double *rate_bps);

/*
 * MADD as policy_madd(), then the capacity left filled coflow by coflow in
 * the same order, shared among each coflow's flows in equal-share rounds
 * (each round gives every flow that still has bytes and free capacity on all
 * its ports the smallest of those ports' equal shares among such flows; a
 * round saturates at least one port; at most POLICY_FILL_ROUNDS rounds a
 * coflow), instead of the flow-by-flow greedy backfill the simulator gives
 * MADD rates (a coflow's first flow on a port taking all of it). Not exact
 * max-min: a flow held to the share of a port it shares with a flow limited
 * elsewhere keeps less than max-min would give it (which also takes fewer
 * rounds than exact water-filling, one saturated port a round, would). A flow's rate is never below its MADD rate, no port is
 * oversubscribed, and (within the rounds) every flow of an ordered coflow
 * that still has bytes ends with a saturated port. Same scratch contract as
 * policy_madd().
 */
#define POLICY_FILL_ROUNDS 16
void policy_madd_fill(const struct cp_model *m, const uint32_t *order, uint32_t n, double *free_bps,
		      double *port_load, double *rate_bps);

/* Registered policy classes. */
extern const struct policy_class policy_fifo;
extern const struct policy_class policy_fair;
extern const struct policy_class policy_scf;
extern const struct policy_class policy_ncf;
extern const struct policy_class policy_lcf;
extern const struct policy_class policy_sebf;
extern const struct policy_class policy_dclas;
extern const struct policy_class policy_dclas_job;
extern const struct policy_class policy_sincronia;
extern const struct policy_class policy_cpf;
extern const struct policy_class policy_wcpf;
extern const struct policy_class policy_srjf;
extern const struct policy_class policy_wsrjf;
extern const struct policy_class policy_gnn;
extern const struct policy_class policy_ensemble;
extern const struct policy_class policy_lookahead;
extern const struct policy_class policy_hindsight;
extern const struct policy_class policy_blend;

/* ---- the learned policy (gnn_policy.c) ------------------------------------------------- */

/* The shipped model, relative to a data directory. */
#define POLICY_GNN_WEIGHTS_REL "models/gnn-default.lgw"

/* Path of the shipped model: loom_data_path(POLICY_GNN_WEIGHTS_REL) (common/datapath.h). */
const char *policy_gnn_default_weights(char *buf, size_t size);

/*
 * Loads a gnn model file once for drivers that remake policies often
 * (loomd: params.gnn_model). weights NULL: the shipped model; backend NULL:
 * "cpu". Returns the model (free with policy_gnn_model_free) or NULL + errno
 * with err naming the file.
 */
struct gnn_model *policy_gnn_model_load(const char *weights, const char *backend,
					struct loom_err *err);
struct gnn_model *policy_gnn_model_free(struct gnn_model *m);

/* True when the policy named by spec (or one of an ensemble's candidates) runs the gnn. */
bool policy_spec_uses_gnn(const char *spec);

struct policy_graph;
struct gnn_rng;
struct gnn_batch;

/*
 * Training hooks of the gnn policy (loom-train). With a hook set, every
 * decision calls record() with the graph the model saw and the ranking taken
 * (perm[i] indexes g->sched, highest priority first), and:
 *   - sample_rng set: the ranking is a Plackett-Luce sample of the scores
 *     (exploration) rather than their argmax;
 *   - teacher set: the teacher policy decides (order and rates) and the
 *     ranking is its order (imitation); the model is not run;
 *   - teacher and dagger set: the model decides (greedy, or sampled with
 *     sample_rng) and the teacher labels the same state: record() gets the
 *     teacher's order, never the model's, on each decision with probability
 *     label_prob (drawn from label_rng; 1: every decision). DAgger (Ross,
 *     Gordon and Bagnell, AISTATS 2011): the states are the model's own.
 * g->prior (when g->has_prior) holds the residual prior the model's scores
 * were added to, per schedulable coflow; a trainer adds it again. g->x has
 * g->nfeat numbers per node (the model's input width: 17, or 25 with the
 * heuristics' places).
 */
struct policy_gnn_hook {
	void (*record)(void *ctx, const struct policy_graph *g, const uint32_t *perm, uint32_t n,
		       uint64_t now_ns);
	void *ctx;
	struct gnn_rng *sample_rng; /* borrowed */
	struct policy *teacher;     /* borrowed; gets the model events through the gnn policy */
	bool dagger;
	double label_prob;         /* dagger: share of decisions labelled (0..1) */
	struct gnn_rng *label_rng; /* borrowed; dagger with label_prob < 1 */
};

/*
 * Residual priors of gnn models (gnn_config.prior): the heuristic's name for
 * an id (0 is "none"), NULL when unknown; and the id of a name, or -ENOENT.
 */
const char *policy_gnn_prior_name(uint32_t prior);
int policy_gnn_prior_find(const char *name);

/* Sets (hook non-NULL, copied) or clears the hook of a gnn policy. 0, or -EINVAL otherwise. */
int policy_gnn_set_hook(struct policy *p, const struct policy_gnn_hook *hook);

/*
 * The gnn batch of graph g as built: g's own arrays, not copies, and g->nfeat
 * numbers per node. What the gnn policy scores, and what a hook's record()
 * can score again.
 */
void policy_graph_gnn_batch(const struct policy_graph *g, struct gnn_batch *b);

/* ---- the ensemble (ensemble.c) ---------------------------------------------------------- */

/* One switch of the ensemble's active candidate. */
struct policy_ensemble_switch {
	uint64_t time_ns;
	uint32_t from, to; /* candidate indices (from == CP_NONE for the first pick) */
	bool explore;      /* an exploration pick rather than the best estimate */
	double est_from;   /* estimated cost (mean weighted slowdown) of from; NAN if none */
	double est_to;     /* and of to */
};

/*
 * The ensemble's candidates (names, e.g. "gnn", "wsrjf") in ret_names (up to
 * cap), their count as return value; 0 when p is not an ensemble.
 */
uint32_t policy_ensemble_candidates(const struct policy *p, const char **ret_names, uint32_t cap);

/*
 * The switches so far (borrowed, valid until the next decide or policy_free)
 * and their count in *ret_n; NULL + 0 when p is not an ensemble.
 */
const struct policy_ensemble_switch *policy_ensemble_switches(const struct policy *p,
							      uint32_t *ret_n);

/* Nanoseconds each candidate has been in charge so far, into ret_ns[0 .. ncandidates). */
void policy_ensemble_time_ns(const struct policy *p, uint64_t *ret_ns, uint32_t cap);

#endif
