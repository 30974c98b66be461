/* SPDX-License-Identifier: BSD-3-Clause */
/* The agent's side of the wire: PriorityTable -> dp_update (protobuf-c stops here). */
#include "dataplane/agent.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void dp_update_release(struct dp_update *u)
{
	free((void *)u->flows);
	free((void *)u->classes);
	free((void *)u->removed_flows);
	free((void *)u->removed_coflows);
	memset(u, 0, sizeof(*u));
}

int dp_update_from_pb(const Loom__PriorityTable *pb, struct dp_update *ret)
{
	struct dp_flow_entry *flows = calloc(pb->n_flows + 1, sizeof(*flows));
	struct dp_class_entry *classes = calloc(pb->n_classes + 1, sizeof(*classes));
	struct wire_tuple *rm = calloc(pb->n_removed_flows + 1, sizeof(*rm));
	uint64_t *rmc = calloc(pb->n_removed_coflows + 1, sizeof(*rmc));
	struct dp_update u = {0};
	int r = -ENOMEM;

	if (!flows || !classes || !rm || !rmc)
		goto fail;
	r = -EINVAL;
	for (size_t i = 0; i < pb->n_flows; i++) {
		if (!pb->flows[i]->tuple ||
		    wire_tuple_from_pb(pb->flows[i]->tuple, &flows[i].tuple) < 0)
			goto fail;
		flows[i].coflow_id = pb->flows[i]->coflow_id;
	}
	for (size_t i = 0; i < pb->n_classes; i++) {
		classes[i].coflow_id = pb->classes[i]->coflow_id;
		classes[i].cls = pb->classes[i]->class_;
		classes[i].rate_bps = pb->classes[i]->rate_bps;
	}
	for (size_t i = 0; i < pb->n_removed_flows; i++)
		if (wire_tuple_from_pb(pb->removed_flows[i], &rm[i]) < 0)
			goto fail;
	if (pb->n_removed_coflows)
		memcpy(rmc, pb->removed_coflows, pb->n_removed_coflows * sizeof(*rmc));
	u.version = pb->version;
	u.base_version = pb->base_version;
	u.full = pb->full;
	u.default_class = pb->default_class;
	u.flows = flows;
	u.nflows = pb->n_flows;
	u.classes = classes;
	u.nclasses = pb->n_classes;
	u.removed_flows = rm;
	u.nremoved_flows = pb->n_removed_flows;
	u.removed_coflows = rmc;
	u.nremoved_coflows = pb->n_removed_coflows;
	*ret = u;
	return 0;
fail:
	free(flows);
	free(classes);
	free(rm);
	free(rmc);
	return r;
}
