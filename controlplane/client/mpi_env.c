/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libloom_mpi's settings, parsed without MPI (mpi_env.h). The messages are
 * those libloom_mpi has always printed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/client/mpi_env.h"

bool loom_client_mpi_env_dec(const char *s, unsigned long long lo, unsigned long long hi,
			     unsigned long long *ret)
{
	unsigned long long v;
	char *end;

	if (!s || s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return false;
	*ret = v;
	return true;
}

int loom_client_mpi_env_host(const char *s, uint32_t *ret_host, struct loom_err *err)
{
	unsigned long long v;

	if (!loom_client_mpi_env_dec(s, 0, LOOM_CLIENT_MPI_NO_HOST - 1, &v))
		return loom_err_set(err, EINVAL,
				    "LOOM_MPI_HOST=\"%.60s\" is not a host id (a decimal number)",
				    s);
	*ret_host = (uint32_t)v;
	return 0;
}

int loom_client_mpi_env_hosts(const char *map, const char *name, loom_client_mpi_match_fn *match,
			      void *ctx, uint32_t *ret_host, struct loom_err *err)
{
	uint32_t host = LOOM_CLIENT_MPI_NO_HOST;
	char *copy, *save = NULL;
	unsigned long long v;

	if (!map || !map[0])
		return loom_err_set(
			err, ENOENT,
			"no host id for processor '%.60s': set LOOM_MPI_HOST or LOOM_MPI_HOSTS",
			name);
	copy = strdup(map);
	if (!copy)
		return loom_err_set(err, ENOMEM, "out of memory");
	for (char *e = strtok_r(copy, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
		char *eq = strrchr(e, '=');

		if (!eq || eq == e ||
		    !loom_client_mpi_env_dec(eq + 1, 0, LOOM_CLIENT_MPI_NO_HOST - 1, &v)) {
			loom_err_set(err, EINVAL,
				     "LOOM_MPI_HOSTS: entry \"%.60s\" is not NAME=ID (ID a decimal "
				     "host id)",
				     e);
			free(copy);
			return -EINVAL;
		}
		*eq = '\0';
		if (host == LOOM_CLIENT_MPI_NO_HOST && (match ? match(e, ctx) : !strcmp(e, name)))
			host = (uint32_t)v;
	}
	free(copy);
	if (host == LOOM_CLIENT_MPI_NO_HOST)
		return loom_err_set(
			err, ENOENT,
			"LOOM_MPI_HOSTS names neither processor '%.60s' nor any of its addresses",
			name);
	*ret_host = host;
	return 0;
}

int loom_client_mpi_env_job(const char *s, uint64_t *ret_job, struct loom_err *err)
{
	unsigned long long v;

	if (!loom_client_mpi_env_dec(s, 1, LOOM_CLIENT_MPI_JOB_MAX, &v))
		return loom_err_set(err, EINVAL,
				    "LOOM_MPI_JOB=\"%.60s\" is not a job id in 1..%llu", s,
				    (unsigned long long)LOOM_CLIENT_MPI_JOB_MAX);
	*ret_job = v;
	return 0;
}

int loom_client_mpi_env_min_bytes(const char *s, uint64_t *ret_bytes, struct loom_err *err)
{
	unsigned long long v;

	if (!loom_client_mpi_env_dec(s, 0, UINT64_MAX, &v))
		return loom_err_set(err, EINVAL,
				    "LOOM_MPI_MIN_BYTES=\"%.60s\" is not a number of bytes", s);
	*ret_bytes = v;
	return 0;
}
