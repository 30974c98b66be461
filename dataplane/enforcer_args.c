/* SPDX-License-Identifier: BSD-3-Clause */
/* The enforcers' shared argument parsers: see enforcer_args.h. */
#include "dataplane/enforcer_args.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

void dp_dscp_map_default(struct dp_dscp_map *map)
{
	for (unsigned int k = 0; k < DP_DSCP_CLASSES; k++)
		map->dscp[k] = k < 8 ? (uint8_t)(8 * (7 - k)) : 0;
}

/* Reads a decimal number < limit at *s, advancing *s; -1 when none or too big. */
static long parse_num(const char **s, long limit)
{
	const char *p = *s;
	long v = 0;

	if (*p < '0' || *p > '9')
		return -1;
	while (*p >= '0' && *p <= '9') {
		v = v * 10 + (*p - '0');
		if (v >= limit)
			return -1;
		p++;
	}
	*s = p;
	return v;
}

int dp_dscp_map_parse(const char *s, uint32_t nclasses, struct dp_dscp_map *ret_map,
		      struct loom_err *err)
{
	struct dp_dscp_map map;
	bool seen[DP_DSCP_CLASSES] = {false};
	const char *p = s;

	if (nclasses > DP_DSCP_CLASSES)
		nclasses = DP_DSCP_CLASSES;
	if (!s || !*s)
		return loom_err_set(err, EINVAL, "empty DSCP map");
	dp_dscp_map_default(&map);
	for (;;) {
		const char *item = p;
		long cls, dscp;

		cls = parse_num(&p, nclasses);
		if (cls < 0 || *p != ':')
			return loom_err_set(
				err, EINVAL,
				"DSCP map at offset %zu: expected CLASS:DSCP with class 0..%u",
				(size_t)(item - s), nclasses - 1);
		p++;
		dscp = parse_num(&p, 64);
		if (dscp < 0 || (*p != ',' && *p != '\0'))
			return loom_err_set(err, EINVAL,
					    "DSCP map at offset %zu: class %ld needs a DSCP 0..63",
					    (size_t)(item - s), cls);
		if (seen[cls])
			return loom_err_set(err, EINVAL, "DSCP map: class %ld given twice", cls);
		seen[cls] = true;
		map.dscp[cls] = (uint8_t)dscp;
		if (*p == '\0')
			break;
		p++;
	}
	*ret_map = map;
	return 0;
}
