/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dataplane/enforcer_args: what the enforcers' --enforcer-args share: the
 * class -> DSCP map ("CLASS:DSCP,..." over the default, class k -> CS(7-k)).
 * One parser, so that the dpdk and tc enforcers take the same text and say
 * the same things about it; their rate= (and dpdk's bucket=) take
 * common/units.h's rates and sizes.
 */
#ifndef LOOM_DATAPLANE_ENFORCER_ARGS_H
#define LOOM_DATAPLANE_ENFORCER_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "common/errors.h"

#define DP_DSCP_CLASSES 16 /* classes a map can name */

/* class -> DSCP (0..63). */
struct dp_dscp_map {
	uint8_t dscp[DP_DSCP_CLASSES];
};

/*
 * Class k -> CS(7 - k) = 8 * (7 - k) for k < 8 (class 0 -> 56, CS7 ... class
 * 7 -> 0, best effort); 0 for the rest. CS6/CS7 are conventionally network
 * control: a site that uses them so should give its own map (e.g.
 * "0:46,1:34,2:26,...").
 */
void dp_dscp_map_default(struct dp_dscp_map *map);

/*
 * Parses "CLASS:DSCP[,CLASS:DSCP]..." (class < nclasses <= DP_DSCP_CLASSES,
 * DSCP 0..63, each class at most once) over the default map into *ret_map.
 * Returns 0, or -EINVAL with the reason in err (may be NULL) and *ret_map
 * untouched.
 */
int dp_dscp_map_parse(const char *s, uint32_t nclasses, struct dp_dscp_map *ret_map,
		      struct loom_err *err);

/* cls's DSCP; 0 for a class beyond the map. */
static inline uint8_t dp_dscp_map_get(const struct dp_dscp_map *map, uint32_t cls)
{
	return cls < DP_DSCP_CLASSES ? map->dscp[cls] : 0;
}

#endif
