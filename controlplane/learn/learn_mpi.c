/* SPDX-License-Identifier: BSD-3-Clause */
#include "controlplane/learn/learn_mpi.h"

#include <limits.h>
#include <string.h>

#ifdef LOOM_HAVE_MPI
#include <mpi.h>

static bool inited; /* by learn_mpi_init (not by someone else) */

bool learn_mpi_built(void)
{
	return true;
}

int learn_mpi_init(int *argc, char ***argv, struct loom_err *err)
{
	int flag = 0, provided = 0;

	MPI_Initialized(&flag);
	if (flag)
		return 0;
	if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
		return loom_err_set(err, EIO, "MPI_Init failed (start it with mpirun)");
	inited = true;
	if (provided < MPI_THREAD_FUNNELED) {
		learn_mpi_finalize();
		return loom_err_set(err, EIO,
				    "this MPI library cannot be used beside threads "
				    "(MPI_THREAD_FUNNELED not provided)");
	}
	return 0;
}

void learn_mpi_finalize(void)
{
	int flag = 0;

	if (!inited)
		return;
	MPI_Finalized(&flag);
	if (!flag)
		MPI_Finalize();
	inited = false;
}

static bool active(void)
{
	int init = 0, fin = 0;

	MPI_Initialized(&init);
	if (!init)
		return false;
	MPI_Finalized(&fin);
	return !fin;
}

uint32_t learn_mpi_rank(void)
{
	int r = 0;

	if (active())
		MPI_Comm_rank(MPI_COMM_WORLD, &r);
	return (uint32_t)r;
}

uint32_t learn_mpi_size(void)
{
	int n = 1;

	if (active())
		MPI_Comm_size(MPI_COMM_WORLD, &n);
	return (uint32_t)n;
}

int learn_mpi_agree(int rc, struct loom_err *err)
{
	int me = (int)learn_mpi_rank(), n = (int)learn_mpi_size(), first, code = rc;
	char msg[LOOM_ERR_MSG_MAX];

	if (n == 1)
		return rc;
	first = rc < 0 ? me : n;
	MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (first == n)
		return rc;
	memset(msg, 0, sizeof(msg));
	if (me == first && err)
		memcpy(msg, err->msg, sizeof(msg));
	MPI_Bcast(&code, 1, MPI_INT, first, MPI_COMM_WORLD);
	MPI_Bcast(msg, (int)sizeof(msg), MPI_CHAR, first, MPI_COMM_WORLD);
	msg[sizeof(msg) - 1] = '\0';
	if (first == 0)
		loom_err_set(err, -code, "%s", msg);
	else
		loom_err_set(err, -code, "MPI rank %d: %s", first, msg);
	return code;
}

int learn_mpi_bcast(void *buf, size_t bytes, uint32_t root)
{
	if (bytes > INT_MAX)
		return -EOVERFLOW;
	if (learn_mpi_size() > 1 && bytes > 0)
		MPI_Bcast(buf, (int)bytes, MPI_BYTE, (int)root, MPI_COMM_WORLD);
	return 0;
}

int learn_mpi_gather(const void *send, size_t bytes, void *recv, uint32_t root)
{
	if (bytes > INT_MAX)
		return -EOVERFLOW;
	if (learn_mpi_size() == 1) {
		memcpy(recv, send, bytes);
		return 0;
	}
	MPI_Gather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, (int)root,
		   MPI_COMM_WORLD);
	return 0;
}

int learn_mpi_allgather(const void *send, size_t bytes, void *recv)
{
	if (bytes > INT_MAX)
		return -EOVERFLOW;
	if (learn_mpi_size() == 1) {
		memcpy(recv, send, bytes);
		return 0;
	}
	MPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
	return 0;
}

int learn_mpi_sum(double *v, size_t n)
{
	if (n > INT_MAX)
		return -EOVERFLOW;
	if (learn_mpi_size() > 1 && n > 0)
		MPI_Allreduce(MPI_IN_PLACE, v, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	return 0;
}

#else /* no MPI in this build: one rank */

bool learn_mpi_built(void)
{
	return false;
}

int learn_mpi_init(int *argc, char ***argv, struct loom_err *err)
{
	(void)argc;
	(void)argv;
	return loom_err_set(err, ENOTSUP,
			    "this build has no MPI (install libopenmpi-dev and reconfigure "
			    "with meson -Dmpi=enabled)");
}

void learn_mpi_finalize(void)
{
}

uint32_t learn_mpi_rank(void)
{
	return 0;
}

uint32_t learn_mpi_size(void)
{
	return 1;
}

int learn_mpi_agree(int rc, struct loom_err *err)
{
	(void)err;
	return rc;
}

int learn_mpi_bcast(void *buf, size_t bytes, uint32_t root)
{
	(void)buf;
	(void)root;
	return bytes > INT_MAX ? -EOVERFLOW : 0;
}

int learn_mpi_gather(const void *send, size_t bytes, void *recv, uint32_t root)
{
	(void)root;
	if (bytes > INT_MAX)
		return -EOVERFLOW;
	memcpy(recv, send, bytes);
	return 0;
}

int learn_mpi_allgather(const void *send, size_t bytes, void *recv)
{
	if (bytes > INT_MAX)
		return -EOVERFLOW;
	memcpy(recv, send, bytes);
	return 0;
}

int learn_mpi_sum(double *v, size_t n)
{
	(void)v;
	return n > INT_MAX ? -EOVERFLOW : 0;
}

#endif
