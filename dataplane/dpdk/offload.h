/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dataplane/dpdk/offload: DSCP marking in the NIC through rte_flow, where the
 * egress port's driver takes it.
 *
 * What goes to hardware: one egress rule per flow of the table (the exact
 * 5-tuple, IPv4 or IPv6, TCP or UDP -> SET_IPV4_DSCP / SET_IPV6_DSCP with
 * its class's DSCP), and two catch-all rules at a lower priority (any IPv4,
 * any IPv6 -> the default class's DSCP). With them in place every IP packet
 * leaving the port is marked by the NIC, so the fast path skips its own
 * DSCP rewrite (and the checksum update). Classification into queues stays
 * in software: strict-priority queueing and shaping happen before the NIC.
 *
 * All or nothing: when any rule of a sync fails (a full rule table, an
 * action the driver takes only sometimes), every rule is destroyed and the
 * caller falls back to software marking for good. Probe and sync say why in
 * a message for the log and the stats.
 *
 * Control thread only; nothing here runs on the fast path.
 */
#ifndef LOOM_DATAPLANE_DPDK_OFFLOAD_H
#define LOOM_DATAPLANE_DPDK_OFFLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "common/errors.h"
#include "dataplane/dpdk/classify.h"
#include "dataplane/table.h"

struct dp_dpdk_offload;

/*
 * Asks port's driver (rte_flow_validate) whether it takes the rules above.
 * Returns a handle with no rules yet, or NULL with errno (ENOTSUP: the
 * driver has no rte_flow or not these actions; ENOMEM) and the reason in
 * why. why (may be NULL) is written on success too: what the port does.
 */
struct dp_dpdk_offload *dp_dpdk_offload_probe(uint16_t port, struct loom_err *why);

/*
 * Makes the NIC mark snap's flows with map's DSCPs: keeps the rules of flows
 * whose DSCP did not change, creates the new ones, destroys the rest (new
 * rules go in before old ones go, so a flow is never unmarked in between).
 * Returns 0, or -errno with the reason in why after destroying every rule.
 */
int dp_dpdk_offload_sync(struct dp_dpdk_offload *o, const struct dp_snapshot *snap,
			 const struct dp_dscp_map *map, struct loom_err *why);

/* The number of rules installed now (flows plus catch-alls). */
size_t dp_dpdk_offload_rules(const struct dp_dpdk_offload *o);

/* Destroys every rule and frees o. Accepts NULL; returns NULL. */
struct dp_dpdk_offload *dp_dpdk_offload_free(struct dp_dpdk_offload *o);

#endif
