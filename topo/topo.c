/* SPDX-License-Identifier: BSD-3-Clause */
#include "topo/topo.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo_impl.h"

struct topo *topo_alloc(uint32_t nhosts, uint32_t nracks)
{
	struct topo *t;

	if (nhosts == 0 || nhosts > TOPO_MAX_HOSTS || nracks > nhosts) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->nhosts = nhosts;
	t->nracks = nracks;
	t->nports = 2 * nhosts + 2 * nracks;
	t->port_bps = calloc(t->nports, sizeof(*t->port_bps));
	if (nracks)
		t->rack_of = calloc(nhosts, sizeof(*t->rack_of));
	if (!t->port_bps || (nracks && !t->rack_of)) {
		topo_free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

struct topo *topo_new_bigswitch(uint32_t nhosts, uint64_t bps)
{
	struct topo *t;

	if (bps == 0) {
		errno = EINVAL;
		return NULL;
	}
	t = topo_alloc(nhosts, 0);
	if (!t)
		return NULL;
	for (uint32_t p = 0; p < t->nports; p++)
		t->port_bps[p] = bps;
	return t;
}

struct topo *topo_new_racks(uint32_t nracks, uint32_t hosts_per_rack, uint64_t host_bps,
			    double oversub)
{
	struct topo *t;
	double core_bps;

	if (nracks == 0 || hosts_per_rack == 0 || host_bps == 0 || !(oversub >= 1.0) ||
	    (uint64_t)nracks * hosts_per_rack > TOPO_MAX_HOSTS) {
		errno = EINVAL;
		return NULL;
	}
	core_bps = (double)hosts_per_rack * (double)host_bps / oversub;
	if (core_bps < 1.0) {
		errno = EINVAL;
		return NULL;
	}
	t = topo_alloc(nracks * hosts_per_rack, nracks);
	if (!t)
		return NULL;
	for (uint32_t h = 0; h < t->nhosts; h++) {
		t->port_bps[topo_port_up(t, h)] = host_bps;
		t->port_bps[topo_port_down(t, h)] = host_bps;
		t->rack_of[h] = h / hosts_per_rack;
	}
	for (uint32_t r = 0; r < 2 * nracks; r++)
		t->port_bps[2 * t->nhosts + r] = (uint64_t)core_bps;
	return t;
}

struct topo *topo_free(struct topo *t)
{
	if (!t)
		return NULL;
	free(t->rack_of);
	free(t->port_bps);
	free(t);
	return NULL;
}

struct topo *topo_clone(const struct topo *t)
{
	struct topo *c = topo_alloc(t->nhosts, t->nracks);

	if (!c)
		return NULL;
	memcpy(c->port_bps, t->port_bps, t->nports * sizeof(*t->port_bps));
	if (t->nracks)
		memcpy(c->rack_of, t->rack_of, t->nhosts * sizeof(*t->rack_of));
	return c;
}

uint32_t topo_flow_ports(const struct topo *t, uint32_t src, uint32_t dst, uint32_t *ret_ports)
{
	uint32_t n = 0;

	ret_ports[n++] = topo_port_up(t, src);
	ret_ports[n++] = topo_port_down(t, dst);
	if (t->nracks && t->rack_of[src] != t->rack_of[dst]) {
		ret_ports[n++] = 2 * t->nhosts + t->rack_of[src];
		ret_ports[n++] = 2 * t->nhosts + t->nracks + t->rack_of[dst];
	}
	return n;
}

double topo_total_up_bps(const struct topo *t)
{
	double sum = 0;

	for (uint32_t h = 0; h < t->nhosts; h++)
		sum += (double)t->port_bps[topo_port_up(t, h)];
	return sum;
}
