/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/learn/learn_mpi: loom-train past one machine (MPI).
 *
 * A thin layer over the few MPI collectives the trainer needs (learn.c):
 * broadcast, gather, all-gather and a sum of doubles on MPI_COMM_WORLD, and
 * an agreement on errors so that a rank that fails never leaves the others
 * waiting in a collective. Built with MPI (meson option mpi) it calls Open
 * MPI; built without, learn_mpi_init() fails with a message and everything
 * else behaves as one rank (rank 0 of 1), so callers need no #ifdef.
 *
 * Invariants: every call comes from the thread that called learn_mpi_init()
 * (MPI_THREAD_FUNNELED: the trainer's worker threads never call MPI), and
 * every rank makes the same collective calls in the same order with the
 * same sizes. Errors of MPI itself abort the job (MPI's default handler).
 */
#ifndef LOOM_CONTROLPLANE_LEARN_LEARN_MPI_H
#define LOOM_CONTROLPLANE_LEARN_LEARN_MPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/errors.h"

/* Whether this build has MPI. */
bool learn_mpi_built(void);

/*
 * Initialises MPI (once; later calls return 0). argc/argv are main()'s.
 * Returns 0, or -ENOTSUP (a build without MPI) or -EIO (MPI_Init failed)
 * with err saying so.
 */
int learn_mpi_init(int *argc, char ***argv, struct loom_err *err);

/* Finalises MPI if learn_mpi_init() initialised it; otherwise does nothing. */
void learn_mpi_finalize(void);

/* This process's rank (0 without MPI) and the number of ranks (1 without MPI). */
uint32_t learn_mpi_rank(void);
uint32_t learn_mpi_size(void);

/*
 * Collective: agrees on an outcome. Returns rc when no rank's rc is
 * negative; otherwise the lowest failing rank's rc on every rank, with that
 * rank's message copied into err (prefixed "MPI rank N: " when N != 0).
 */
int learn_mpi_agree(int rc, struct loom_err *err);

/* Collective: root's bytes bytes of buf into every rank's buf. 0 or -EOVERFLOW (> INT_MAX). */
int learn_mpi_bcast(void *buf, size_t bytes, uint32_t root);

/*
 * Collective: every rank's bytes bytes of send, in rank order, into root's
 * recv (size x bytes; ignored elsewhere). 0 or -EOVERFLOW.
 */
int learn_mpi_gather(const void *send, size_t bytes, void *recv, uint32_t root);

/* Collective: as learn_mpi_gather, into every rank's recv. 0 or -EOVERFLOW. */
int learn_mpi_allgather(const void *send, size_t bytes, void *recv);

/* Collective: v[i] = the sum over the ranks of v[i], on every rank. 0 or -EOVERFLOW. */
int learn_mpi_sum(double *v, size_t n);

#endif
