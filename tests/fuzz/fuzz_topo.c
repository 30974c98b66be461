/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for the topology file parser (topo/topo_json.c). Every input
 * must either parse into a topology that satisfies topo.h's invariants and
 * round-trips through topo_flow_ports(), or be rejected with errno and a
 * message; anything else (crash, sanitizer report, abort) is a bug.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_invariants(const struct topo *t)
{
	uint32_t ports[TOPO_MAX_FLOW_PORTS];

	if (t->nhosts == 0 || t->nhosts > TOPO_MAX_HOSTS ||
	    t->nports != 2 * t->nhosts + 2 * t->nracks || (t->nracks && !t->rack_of))
		abort();
	for (uint32_t p = 0; p < t->nports; p++)
		if (t->port_bps[p] == 0)
			abort();
	for (uint32_t h = 0; t->nracks && h < t->nhosts; h++)
		if (t->rack_of[h] >= t->nracks)
			abort();
	/* Both ends of the host range, which exercises the rack ports when present. */
	for (uint32_t n = topo_flow_ports(t, 0, t->nhosts - 1, ports); n--;)
		if (ports[n] >= t->nports)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct loom_err err = {{0}};
	struct topo *t;

	errno = 0;
	t = topo_parse_json((const char *)data, size, "fuzz", &err);
	if (!t) {
		if (errno == 0 || err.msg[0] == '\0' || strncmp(err.msg, "fuzz", 4) != 0)
			abort();
		return 0;
	}
	check_invariants(t);
	topo_free(t);
	return 0;
}
