/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/client/mpi_env: how libloom_mpi (mpi.c, docs/mpi.md) reads
 * its settings, apart from MPI, so that the unit tests and a fuzz target
 * (tests/fuzz/fuzz_mpi_env.c) run it without MPI. Pure: the caller reads the
 * variables (getenv) and the processor name, and says through a callback
 * whether a NAME of $LOOM_MPI_HOSTS is this processor (mpi.c: its name, or
 * one of its addresses, looked up).
 *
 * A value is taken whole: a decimal is digits only (no sign, space or
 * suffix). A refusal returns -errno and a message in err that names the
 * variable and quotes (the first 60 bytes of) the value or entry, shorter
 * than LOOM_CLIENT_MPI_MSG_MAX; out-parameters are written only on success.
 * libloom_mpi.so links this from a static library and hides it
 * (--exclude-libs): the module exports only the MPI_* it wraps.
 */
#ifndef LOOM_CONTROLPLANE_CLIENT_MPI_ENV_H
#define LOOM_CONTROLPLANE_CLIENT_MPI_ENV_H

#include <stdbool.h>
#include <stdint.h>

#include "common/errors.h"

/* Every message of this file, its NUL included, fits in this many bytes. */
#define LOOM_CLIENT_MPI_MSG_MAX 160
/* Host ids are 0 .. LOOM_CLIENT_MPI_NO_HOST - 1; job ids 1 .. LOOM_CLIENT_MPI_JOB_MAX. */
#define LOOM_CLIENT_MPI_NO_HOST UINT32_MAX
#define LOOM_CLIENT_MPI_JOB_MAX ((UINT64_C(1) << 40) - 1)

/* Whether key, a NAME of $LOOM_MPI_HOSTS (not empty, no ','), is this processor. */
typedef bool loom_client_mpi_match_fn(const char *key, void *ctx);

/* A decimal in [lo, hi] from the whole of s (may be NULL): true and *ret, or false. */
bool loom_client_mpi_env_dec(const char *s, unsigned long long lo, unsigned long long hi,
			     unsigned long long *ret);

/* $LOOM_MPI_HOST (s, not NULL): a host id. 0, or -EINVAL with err. */
int loom_client_mpi_env_host(const char *s, uint32_t *ret_host, struct loom_err *err);

/*
 * $LOOM_MPI_HOSTS (map, may be NULL or empty): "NAME=ID,..." for the
 * processor name (which only messages show): the ID of the first entry
 * whose NAME match() says is this processor (match NULL: NAME is name).
 * NAME is what precedes an entry's last '=' (not empty), ID a host id;
 * empty entries (",,", a leading or trailing ',') are skipped; every entry
 * must be well-formed, also after the match, and match() is not called
 * after it said yes. 0; -EINVAL (a malformed entry, named), -ENOENT (map
 * empty, or no NAME matched), -ENOMEM; with err.
 */
int loom_client_mpi_env_hosts(const char *map, const char *name, loom_client_mpi_match_fn *match,
			      void *ctx, uint32_t *ret_host, struct loom_err *err);

/* $LOOM_MPI_JOB (s, not NULL): a job id. 0, or -EINVAL with err. */
int loom_client_mpi_env_job(const char *s, uint64_t *ret_job, struct loom_err *err);

/* $LOOM_MPI_MIN_BYTES (s, not NULL): a number of bytes. 0, or -EINVAL with err. */
int loom_client_mpi_env_min_bytes(const char *s, uint64_t *ret_bytes, struct loom_err *err);

#endif
