/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MPI program of the mpi suite: four ranks run a known sequence of
 * collectives with known sizes (listed in test_mpi.c's table, which must
 * follow this file), check every result, and exit 0 when all are right
 * (rank 0 prints "mpi_prog: ok"), else 1 naming the first wrong one. It
 * knows nothing of Loom: test_mpi.c runs it with and without libloom_mpi.so.
 * A Barrier and an Allreduce on a communicator of half the ranks come in the
 * middle: neither is a collective the library tracks.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me, n;

#define CHECK(cond, what)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "mpi_prog[rank %d]: wrong result of %s\n", me, what);      \
			MPI_Abort(MPI_COMM_WORLD, 1);                                              \
		}                                                                                  \
	} while (0)

int main(int argc, char **argv)
{
	int ibuf[1000], ibig[4000], counts[4], displs[4], rcounts[4], rdispls[4];
	double d[400], dr[400];
	MPI_Comm dup, half;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (n != 4) {
		if (me == 0)
			fprintf(stderr, "mpi_prog: run with 4 ranks (mpirun -np 4)\n");
		MPI_Finalize();
		return 2;
	}

	/* 1. Bcast of 1000 ints from rank 0 */
	for (int i = 0; i < 1000; i++)
		ibuf[i] = me == 0 ? i : -1;
	MPI_Bcast(ibuf, 1000, MPI_INT, 0, MPI_COMM_WORLD);
	CHECK(ibuf[999] == 999, "Bcast");

	/* 2. Alltoall of 100 doubles per pair */
	for (int i = 0; i < 400; i++)
		d[i] = me * 1000 + i;
	MPI_Alltoall(d, 100, MPI_DOUBLE, dr, 100, MPI_DOUBLE, MPI_COMM_WORLD);
	for (int j = 0; j < 4; j++)
		CHECK(dr[j * 100] == j * 1000 + me * 100, "Alltoall");

	/* 3. Allgather of 50 ints */
	for (int i = 0; i < 50; i++)
		ibuf[i] = me;
	MPI_Allgather(ibuf, 50, MPI_INT, ibig, 50, MPI_INT, MPI_COMM_WORLD);
	for (int j = 0; j < 4; j++)
		CHECK(ibig[j * 50 + 49] == j, "Allgather");

	/* 4. Gather of 25 ints to rank 1 */
	for (int i = 0; i < 25; i++)
		ibuf[i] = me + 10;
	MPI_Gather(ibuf, 25, MPI_INT, ibig, 25, MPI_INT, 1, MPI_COMM_WORLD);
	if (me == 1)
		for (int j = 0; j < 4; j++)
			CHECK(ibig[j * 25] == j + 10, "Gather");

	/* 5. Scatterv from rank 2: 10, 20, 30, 40 ints */
	for (int j = 0, off = 0; j < 4; j++) {
		counts[j] = 10 * (j + 1);
		displs[j] = off;
		for (int i = 0; i < counts[j]; i++)
			ibig[off + i] = j;
		off += counts[j];
	}
	MPI_Scatterv(ibig, counts, displs, MPI_INT, ibuf, counts[me], MPI_INT, 2, MPI_COMM_WORLD);
	CHECK(ibuf[counts[me] - 1] == me, "Scatterv");

	/* 6. Alltoallv: rank r sends (r + 1) * (j + 1) ints to rank j */
	for (int j = 0, so = 0, ro = 0; j < 4; j++) {
		counts[j] = (me + 1) * (j + 1);
		displs[j] = so;
		rcounts[j] = (j + 1) * (me + 1);
		rdispls[j] = ro;
		for (int i = 0; i < counts[j]; i++)
			ibig[so + i] = me * 100 + j;
		so += counts[j];
		ro += rcounts[j];
	}
	MPI_Alltoallv(ibig, counts, displs, MPI_INT, ibig + 2000, rcounts, rdispls, MPI_INT,
		      MPI_COMM_WORLD);
	for (int j = 0; j < 4; j++)
		CHECK(ibig[2000 + rdispls[j]] == j * 100 + me, "Alltoallv");

	/* 7. Reduce_scatter of 10 doubles into 1, 2, 3, 4 per rank (a sum) */
	for (int j = 0; j < 4; j++)
		counts[j] = j + 1;
	for (int i = 0; i < 10; i++)
		d[i] = i;
	MPI_Reduce_scatter(d, dr, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	CHECK(dr[0] == 4.0 * (me * (me + 1) / 2), "Reduce_scatter");

	/* 8. Allreduce of 10 doubles on a duplicate of MPI_COMM_WORLD (congruent: tracked) */
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	for (int i = 0; i < 10; i++)
		d[i] = me + i;
	MPI_Allreduce(d, dr, 10, MPI_DOUBLE, MPI_SUM, dup);
	CHECK(dr[9] == 6 + 4 * 9, "Allreduce");

	/* not tracked: a Barrier, and an Allreduce on half the ranks */
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
	ibuf[0] = me;
	MPI_Allreduce(ibuf, ibuf + 1, 1, MPI_INT, MPI_SUM, half);
	CHECK(ibuf[1] == (me % 2 ? 1 + 3 : 0 + 2), "Allreduce on half");

	/* 10. Reduce of 7 ints to rank 3 */
	for (int i = 0; i < 7; i++)
		ibuf[i] = me;
	MPI_Reduce(ibuf, ibuf + 10, 7, MPI_INT, MPI_SUM, 3, MPI_COMM_WORLD);
	if (me == 3)
		CHECK(ibuf[16] == 6, "Reduce");

	/* 11. Scatter of 5 ints from rank 0 */
	for (int i = 0; i < 20; i++)
		ibig[i] = i / 5;
	MPI_Scatter(ibig, 5, MPI_INT, ibuf, 5, MPI_INT, 0, MPI_COMM_WORLD);
	CHECK(ibuf[4] == me, "Scatter");

	/* 12. Allgatherv: rank r gives r + 1 ints */
	for (int j = 0, off = 0; j < 4; j++) {
		counts[j] = j + 1;
		displs[j] = off;
		off += counts[j];
	}
	for (int i = 0; i < me + 1; i++)
		ibuf[i] = me;
	MPI_Allgatherv(ibuf, me + 1, MPI_INT, ibig, counts, displs, MPI_INT, MPI_COMM_WORLD);
	CHECK(ibig[9] == 3 && ibig[0] == 0, "Allgatherv");

	/* 13. Gatherv to rank 0: rank r gives r + 1 ints */
	MPI_Gatherv(ibuf, me + 1, MPI_INT, ibig, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
	if (me == 0)
		CHECK(ibig[9] == 3, "Gatherv");

	/* 14. Reduce_scatter_block: 3 ints per rank */
	for (int i = 0; i < 12; i++)
		ibuf[i] = i;
	MPI_Reduce_scatter_block(ibuf, ibuf + 20, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	CHECK(ibuf[20] == 4 * 3 * me, "Reduce_scatter_block");

	MPI_Comm_free(&half);
	MPI_Comm_free(&dup);
	if (me == 0)
		printf("mpi_prog: ok\n");
	MPI_Finalize();
	return 0;
}
