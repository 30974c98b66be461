/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/loomd/sched: one scheduling pass: release due coflows, run the
 * policy on the view, quantise the order into K classes per host.
 */
#ifndef LOOM_CONTROLPLANE_LOOMD_SCHED_H
#define LOOM_CONTROLPLANE_LOOMD_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "common/errors.h"
#include "controlplane/loomd/registry.h"
#include "controlplane/model/model.h"
#include "controlplane/policy/policy.h"
#include "topo/topo.h"

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

#endif
