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

struct loomd_sched;

/*
 * A scheduler over registry r (borrowed) on fabric t (borrowed): policy spec,
 * weights file for gnn/ensemble ("" or NULL: the shipped model), K classes
 * given to the hosts as assign says, RNG seed. A weights file is loaded whatever the policy (a later
 * set-policy gnn uses it); the shipped model only when the policy runs the
 * gnn. NULL + errno with err (bad spec; unloadable model: "weights: ...").
 */
struct loomd_sched *loomd_sched_new(struct loomd_registry *r, const struct topo *t,
				    const char *spec, const char *weights, uint32_t classes,
				    enum policy_class_assign assign, uint64_t seed,
				    struct loom_err *err);
struct loomd_sched *loomd_sched_free(struct loomd_sched *s);

/* Switches policy from the next pass on. 0 or -errno with err (the old one stays). */
int loomd_sched_set_policy(struct loomd_sched *s, const char *spec, struct loom_err *err);
const char *loomd_sched_policy(const struct loomd_sched *s);

struct loomd_sched_result {
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
 * source host (loomd_sched_flow_class). 0 or -errno with err.
 */
int loomd_sched_pass(struct loomd_sched *s, uint64_t now_ns, struct loomd_sched_result *ret,
		     struct loom_err *err);

/* The last decision and the view it was made on (valid until the next change). */
const struct policy_decision *loomd_sched_decision(const struct loomd_sched *s);
const struct cp_model *loomd_sched_view(const struct loomd_sched *s);

/* Class of view flow f on its source host in the last decision (K-1 if not ordered). */
uint32_t loomd_sched_flow_class(const struct loomd_sched *s, uint32_t f);
/* Position of view coflow c in the last order, or CP_NONE. */
uint32_t loomd_sched_rank(const struct loomd_sched *s, uint32_t c);
uint32_t loomd_sched_classes(const struct loomd_sched *s);
uint64_t loomd_sched_decisions(const struct loomd_sched *s);

#endif
