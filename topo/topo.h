/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo: the fabric Loom schedules.
 *
 * Hosts with one uplink (host -> fabric) and one downlink (fabric -> host),
 * each with its own capacity in bits/s, joined by a non-blocking core (the
 * "big switch" of the coflow literature). Optionally hosts sit in racks whose
 * uplink/downlink to the core have their own (oversubscribed) capacity.
 *
 * Ports are numbered densely so per-port state can live in flat arrays:
 *   host h uplink        h
 *   host h downlink      nhosts + h
 *   rack r uplink        2 * nhosts + r            (only when nracks > 0)
 *   rack r downlink      2 * nhosts + nracks + r
 * A flow src -> dst crosses src's uplink and dst's downlink, plus the rack
 * uplink of src's rack and rack downlink of dst's rack when racks are modelled
 * and the two hosts are in different racks.
 *
 * Invariants: every capacity is > 0; every host's rack is < nracks when
 * nracks > 0; port_bps has nports entries.
 */
#ifndef LOOM_TOPO_TOPO_H
#define LOOM_TOPO_TOPO_H

#include <stddef.h>
#include <stdint.h>

#include "common/errors.h"

/* CoflowSim's port rate: 1 Gbit/s as 1024 * 1048576 bit/s. */
#define TOPO_DEFAULT_BPS    (1024ULL * 1048576ULL)
#define TOPO_MAX_HOSTS      (1u << 20)
#define TOPO_MAX_FLOW_PORTS 4

struct topo {
	uint32_t nhosts;
	uint32_t nracks;    /* 0: big switch, no rack ports */
	uint32_t nports;    /* 2 * nhosts + 2 * nracks */
	uint32_t *rack_of;  /* nhosts entries, or NULL when nracks == 0 */
	uint64_t *port_bps; /* capacity of each port, nports entries */
};

/* Returns a big-switch fabric of nhosts hosts, every port at bps; NULL + errno on error. */
struct topo *topo_new_bigswitch(uint32_t nhosts, uint64_t bps);

/*
 * Returns nracks racks of hosts_per_rack hosts each, host ports at host_bps,
 * and each rack's core link at hosts_per_rack * host_bps / oversub
 * (oversub >= 1; 1 means no oversubscription). NULL + errno on error.
 */
struct topo *topo_new_racks(uint32_t nracks, uint32_t hosts_per_rack, uint64_t host_bps,
			    double oversub);

/* Frees t (NULL is fine); returns NULL. */
struct topo *topo_free(struct topo *t);

/* Returns a deep copy of t, or NULL + errno. */
struct topo *topo_clone(const struct topo *t);

static inline uint32_t topo_port_up(const struct topo *t, uint32_t host)
{
	(void)t;
	return host;
}

static inline uint32_t topo_port_down(const struct topo *t, uint32_t host)
{
	return t->nhosts + host;
}

/*
 * Writes the ports a flow src -> dst crosses into ret_ports (room for
 * TOPO_MAX_FLOW_PORTS) and returns how many (2 or 4). src, dst < nhosts.
 */
uint32_t topo_flow_ports(const struct topo *t, uint32_t src, uint32_t dst, uint32_t *ret_ports);

/* Sum of all host uplink capacities, in bits/s. */
double topo_total_up_bps(const struct topo *t);

/*
 * Topology file (JSON; docs/topology.md):
 *   {"hosts": 150, "link_bps": 1073741824}
 *   {"hosts": [{"up_bps": ..., "down_bps": ..., "rack": 0}, ...],
 *    "racks": {"count": 2, "up_bps": ..., "down_bps": ...}}
 *   {"racks": {"count": 4, "hosts_per_rack": 16, "oversubscription": 4}, "link_bps": ...}
 * Parses buf (len bytes; name is used in messages). Returns the topology, or
 * NULL with errno set and err filled with "name: reason".
 */
struct topo *topo_parse_json(const char *buf, size_t len, const char *name, struct loom_err *err);

/* Loads a topology file; NULL with errno and err ("path: reason") on error. */
struct topo *topo_load_json(const char *path, struct loom_err *err);

/* Writes t as a topology file that topo_load_json reads back identically. 0 or -errno. */
int topo_save_json(const struct topo *t, const char *path);

#endif
