/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rte_flow DSCP marking: see offload.h.
 */
#include "dataplane/dpdk/offload.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ethdev.h>
#include <rte_flow.h>

/* The rules of one synced table: rules[i] marks flows[i]; catch[0/1] IPv4/IPv6. */
struct dp_dpdk_offload {
	uint16_t port;
	size_t n;
	struct dp_snapshot_flow *flows; /* sorted as a snapshot's (dp_snapshot_find) */
	uint8_t *dscp;
	struct rte_flow **rules;
	struct rte_flow *catch[2];
	uint8_t catch_dscp[2];
};

/* The pattern and action of one rule; t == NULL: every packet of that family. */
struct rule_spec {
	struct rte_flow_item items[4];
	struct rte_flow_item_ipv4 ip4, ip4_mask;
	struct rte_flow_item_ipv6 ip6, ip6_mask;
	struct rte_flow_item_tcp tcp, tcp_mask;
	struct rte_flow_item_udp udp, udp_mask;
	struct rte_flow_action actions[2];
	struct rte_flow_action_set_dscp dscp;
	struct rte_flow_attr attr;
};

static void rule_build(struct rule_spec *r, uint8_t family, const struct wire_tuple *t,
		       uint8_t dscp)
{
	int k = 0;

	memset(r, 0, sizeof(*r));
	r->attr.egress = 1;
	r->attr.priority = t ? 0 : 1; /* 0 wins: flows over the catch-alls */
	r->items[k++].type = RTE_FLOW_ITEM_TYPE_ETH;
	if (family == 4) {
		r->items[k].type = RTE_FLOW_ITEM_TYPE_IPV4;
		if (t) {
			memcpy(&r->ip4.hdr.src_addr, t->src, 4);
			memcpy(&r->ip4.hdr.dst_addr, t->dst, 4);
			r->ip4.hdr.next_proto_id = t->protocol;
			r->ip4_mask.hdr.src_addr = UINT32_MAX;
			r->ip4_mask.hdr.dst_addr = UINT32_MAX;
			r->ip4_mask.hdr.next_proto_id = UINT8_MAX;
			r->items[k].spec = &r->ip4;
			r->items[k].mask = &r->ip4_mask;
		}
	} else {
		r->items[k].type = RTE_FLOW_ITEM_TYPE_IPV6;
		if (t) {
			memcpy(r->ip6.hdr.src_addr, t->src, 16);
			memcpy(r->ip6.hdr.dst_addr, t->dst, 16);
			r->ip6.hdr.proto = t->protocol;
			memset(r->ip6_mask.hdr.src_addr, 0xff, 16);
			memset(r->ip6_mask.hdr.dst_addr, 0xff, 16);
			r->ip6_mask.hdr.proto = UINT8_MAX;
			r->items[k].spec = &r->ip6;
			r->items[k].mask = &r->ip6_mask;
		}
	}
	k++;
	if (t && t->protocol == 6) {
		r->tcp.hdr.src_port = rte_cpu_to_be_16(t->src_port);
		r->tcp.hdr.dst_port = rte_cpu_to_be_16(t->dst_port);
		r->tcp_mask.hdr.src_port = UINT16_MAX;
		r->tcp_mask.hdr.dst_port = UINT16_MAX;
		r->items[k].type = RTE_FLOW_ITEM_TYPE_TCP;
		r->items[k].spec = &r->tcp;
		r->items[k++].mask = &r->tcp_mask;
	} else if (t && t->protocol == 17) {
		r->udp.hdr.src_port = rte_cpu_to_be_16(t->src_port);
		r->udp.hdr.dst_port = rte_cpu_to_be_16(t->dst_port);
		r->udp_mask.hdr.src_port = UINT16_MAX;
		r->udp_mask.hdr.dst_port = UINT16_MAX;
		r->items[k].type = RTE_FLOW_ITEM_TYPE_UDP;
		r->items[k].spec = &r->udp;
		r->items[k++].mask = &r->udp_mask;
	}
	r->items[k].type = RTE_FLOW_ITEM_TYPE_END;
	r->dscp.dscp = dscp & 63;
	r->actions[0].type = family == 4 ? RTE_FLOW_ACTION_TYPE_SET_IPV4_DSCP :
					   RTE_FLOW_ACTION_TYPE_SET_IPV6_DSCP;
	r->actions[0].conf = &r->dscp;
	r->actions[1].type = RTE_FLOW_ACTION_TYPE_END;
}

static struct rte_flow *rule_create(uint16_t port, uint8_t family, const struct wire_tuple *t,
				    uint8_t dscp, struct loom_err *why)
{
	struct rule_spec r;
	struct rte_flow_error fe = {0};
	struct rte_flow *f;

	rule_build(&r, family, t, dscp);
	f = rte_flow_create(port, &r.attr, r.items, r.actions, &fe);
	if (!f)
		loom_err_set(why, ENOSPC, "port %u: rte_flow_create: %s (%s)", port,
			     fe.message ? fe.message : "no message", strerror(rte_errno));
	return f;
}

static void rule_destroy(uint16_t port, struct rte_flow **f)
{
	struct rte_flow_error fe;

	if (*f)
		rte_flow_destroy(port, *f, &fe);
	*f = NULL;
}

static void rules_destroy_all(struct dp_dpdk_offload *o)
{
	for (size_t i = 0; i < o->n; i++)
		rule_destroy(o->port, &o->rules[i]);
	for (int f = 0; f < 2; f++)
		rule_destroy(o->port, &o->catch[f]);
	free(o->flows);
	free(o->dscp);
	free(o->rules);
	o->flows = NULL;
	o->dscp = NULL;
	o->rules = NULL;
	o->n = 0;
}

struct dp_dpdk_offload *dp_dpdk_offload_probe(uint16_t port, struct loom_err *why)
{
	static const struct wire_tuple t4 = {
		.family = 4, .protocol = 17, 1, 2, {10, 0, 0, 1}, {10, 0, 0, 2}};
	struct wire_tuple t6 = {.family = 6, .protocol = 6, 1, 2, {0}, {0}};
	struct rte_eth_dev_info info;
	struct rte_flow_error fe = {0};
	struct dp_dpdk_offload *o;
	struct rule_spec r;
	const char *driver = "?";

	t6.src[0] = 0xfd;
	t6.dst[0] = 0xfd;
	t6.dst[15] = 1;
	if (rte_eth_dev_info_get(port, &info) == 0 && info.driver_name)
		driver = info.driver_name;
	for (int i = 0; i < 4; i++) {
		uint8_t fam = i < 2 ? 4 : 6;
		const struct wire_tuple *t = i % 2 ? NULL : (fam == 4 ? &t4 : &t6);
		int ret;

		rule_build(&r, fam, t, 46);
		rte_errno = 0;
		ret = rte_flow_validate(port, &r.attr, r.items, r.actions, &fe);
		if (ret != 0) {
			loom_err_set(why, ENOTSUP,
				     "port %u (driver %s) does not take egress %s DSCP rules: %s",
				     port, driver, fam == 4 ? "IPv4" : "IPv6",
				     fe.message ? fe.message : strerror(-ret));
			errno = ENOTSUP;
			return NULL;
		}
	}
	o = calloc(1, sizeof(*o));
	if (!o) {
		loom_err_set(why, ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	o->port = port;
	if (why) /* not an error: why says what the probe found either way */
		snprintf(why->msg, sizeof(why->msg),
			 "port %u (driver %s) marks DSCP in hardware (rte_flow)", port, driver);
	return o;
}

int dp_dpdk_offload_sync(struct dp_dpdk_offload *o, const struct dp_snapshot *snap,
			 const struct dp_dscp_map *map, struct loom_err *why)
{
	struct dp_snapshot old = {.n = o->n, .flows = o->flows};
	size_t n = snap->n;
	struct dp_snapshot_flow *flows = malloc((n ? n : 1) * sizeof(*flows));
	uint8_t *dscp = malloc(n ? n : 1);
	struct rte_flow **rules = calloc(n ? n : 1, sizeof(*rules));
	bool *kept = calloc(o->n ? o->n : 1, sizeof(*kept));
	bool *reused = calloc(n ? n : 1, sizeof(*reused));
	struct rte_flow *catch_new[2] = {NULL, NULL};
	uint8_t dflt = dp_dscp_map_get(map, (uint8_t)snap->default_class);
	int r = 0;

	if (!flows || !dscp || !rules || !kept || !reused) {
		r = loom_err_set(why, ENOMEM, "out of memory");
		goto fail;
	}
	if (n)
		memcpy(flows, snap->flows, n * sizeof(*flows));
	for (size_t i = 0; i < n && r == 0; i++) {
		const struct dp_snapshot_flow *f = &flows[i];
		const struct dp_snapshot_flow *prev = o->n ? dp_snapshot_find(&old, &f->tuple) :
							     NULL;
		size_t j = prev ? (size_t)(prev - o->flows) : 0;

		dscp[i] = dp_dscp_map_get(map, (uint8_t)f->cls);
		if (prev && o->dscp[j] == dscp[i] && o->rules[j]) {
			rules[i] = o->rules[j];
			kept[j] = true;
			reused[i] = true;
			continue;
		}
		rules[i] = rule_create(o->port, f->tuple.family, &f->tuple, dscp[i], why);
		if (!rules[i])
			r = -ENOSPC;
	}
	for (int fam = 0; fam < 2 && r == 0; fam++) {
		if (o->catch[fam] && o->catch_dscp[fam] == dflt)
			continue;
		catch_new[fam] = rule_create(o->port, fam ? 6 : 4, NULL, dflt, why);
		if (!catch_new[fam])
			r = -ENOSPC;
	}
	if (r < 0)
		goto fail;
	/* the new rules are in: the old ones that were not kept go */
	for (size_t j = 0; j < o->n; j++)
		if (!kept[j])
			rule_destroy(o->port, &o->rules[j]);
	for (int fam = 0; fam < 2; fam++)
		if (catch_new[fam]) {
			rule_destroy(o->port, &o->catch[fam]);
			o->catch[fam] = catch_new[fam];
			o->catch_dscp[fam] = dflt;
		}
	free(o->flows);
	free(o->dscp);
	free(o->rules);
	free(kept);
	free(reused);
	o->flows = flows;
	o->dscp = dscp;
	o->rules = rules;
	o->n = n;
	return 0;
fail:
	/* all or nothing: the new rules, then the old ones */
	for (size_t i = 0; rules && reused && i < n; i++)
		if (!reused[i])
			rule_destroy(o->port, &rules[i]);
	for (int fam = 0; fam < 2; fam++)
		rule_destroy(o->port, &catch_new[fam]);
	rules_destroy_all(o);
	free(flows);
	free(dscp);
	free(rules);
	free(kept);
	free(reused);
	return r;
}

size_t dp_dpdk_offload_rules(const struct dp_dpdk_offload *o)
{
	size_t k = 0;

	if (!o)
		return 0;
	for (size_t i = 0; i < o->n; i++)
		k += o->rules[i] != NULL;
	return k + (o->catch[0] != NULL) + (o->catch[1] != NULL);
}

struct dp_dpdk_offload *dp_dpdk_offload_free(struct dp_dpdk_offload *o)
{
	if (!o)
		return NULL;
	rules_destroy_all(o);
	free(o);
	return NULL;
}
