/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/sim/cli: flag-value parsing shared by the simulator's
 * programs (loom-replay, loom-gen). Programs only: these log the error they
 * find, naming the flag and the value, and return -EINVAL.
 */
#ifndef LOOM_CONTROLPLANE_SIM_CLI_H
#define LOOM_CONTROLPLANE_SIM_CLI_H

#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/errors.h"
#include "common/log.h"

/* An integer in [min, max] into *ret; 0 or -EINVAL (logged). */
static inline int sim_cli_u64(const char *flag, const char *v, uint64_t min, uint64_t max,
			      uint64_t *ret)
{
	unsigned long long x;

	if (loom_parse_u64(v, &x) < 0 || x < min || x > max) {
		log_err("%s: '%s' is not an integer in [%llu, %llu]", flag, v,
			(unsigned long long)min, (unsigned long long)max);
		return -EINVAL;
	}
	*ret = x;
	return 0;
}

/* A finite number in [min, max] (min excluded when min_open) into *ret; 0 or -EINVAL. */
static inline int sim_cli_double(const char *flag, const char *v, double min, bool min_open,
				 double max, double *ret)
{
	double x;

	if (loom_parse_double(v, &x) < 0 || x < min || (min_open && x == min) || x > max) {
		log_err("%s: '%s' is not a number in %s%g, %g]", flag, v, min_open ? "(" : "[", min,
			max);
		return -EINVAL;
	}
	*ret = x;
	return 0;
}

/* mkdir -p: creates path and its missing parents (0755). 0 or -errno. */
static inline int sim_cli_mkdirs(const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *s = buf + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

#endif
