/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libloom_mpi: a PMPI interposition library that makes the collectives of an
 * unmodified MPI program coflows of one Loom job, "this MPI_COMM_WORLD run".
 *
 *   mpirun -np 8 -x LD_PRELOAD=libloom_mpi.so -x LOOM_CONTROLLER=unix:/run/loom/loomd.sock \
 *          -x LOOM_MPI_HOSTS=node1=0,node2=1 ./program
 *
 * At MPI_Init rank 0 registers the job with one open coflow, the run's
 * anchor (coflow index 0: it keeps the job unfinished between collectives
 * and is done at MPI_Finalize). Each collective that moves data (Alltoall,
 * Alltoallv, Allgather, Allgatherv, Gather, Gatherv, Scatter, Scatterv,
 * Reduce_scatter, Reduce_scatter_block, Allreduce, Reduce, Bcast) on a
 * communicator congruent with MPI_COMM_WORLD becomes coflow k (1, 2, ...):
 *
 *   1. rank 0 adds it to the job (loom_client_job_extend(): an open coflow
 *      with the edge k-1 -> k, so consecutive collectives form a chain) and
 *      broadcasts whether that worked, on the library's own duplicate of
 *      MPI_COMM_WORLD through PMPI (the program sees no extra collective);
 *   2. every rank announces its own flows: one per other rank it sends to,
 *      with the bytes the arguments say (docs/mpi.md, "Flows"), between the
 *      hosts of the two ranks;
 *   3. the collective runs (PMPI_...);
 *   4. a PMPI reduction to rank 0 tells it that every rank is through, and
 *      rank 0 marks coflow k done.
 *
 * Ranks map to loomd's host ids by $LOOM_MPI_HOST (this rank's host id) or
 * $LOOM_MPI_HOSTS ("NAME=ID,...": NAME is a processor name, as
 * MPI_Get_processor_name() gives it, or one of its IP addresses); rank 0
 * gathers every rank's host at MPI_Init. The settings are parsed by
 * mpi_env.c, which needs no MPI (unit-tested and fuzzed on its own). MPI's own TCP connections carry
 * many collectives at once, so a collective's flows have no 5-tuple of their
 * own: each is announced with a tuple that names it (in 100::/64, the IPv6
 * discard prefix, ports 0) and matches no packet.
 *
 * Invariants: the program's results are unchanged: every wrapper returns
 * what the PMPI call returned. Whatever goes wrong with loomd (unreachable,
 * a malformed variable, a refusal), the program runs on untracked after one
 * warning on stderr (rank 0 warns for problems found at MPI_Init; a later
 * failure is warned by the rank that meets it, once). Tracking is decided
 * collectively at MPI_Init and the library's own PMPI calls are made by
 * every rank or none, so no rank ever waits on another's decision. Calls
 * come from one thread at a time (MPI_THREAD_FUNNELED or SERIALIZED
 * programs). Nonblocking collectives and communicators not congruent with
 * MPI_COMM_WORLD pass through untracked.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "controlplane/client/logline.h"
#include "controlplane/client/loom.h"
#include "controlplane/client/mpi_env.h"

#define MPI_TIMEOUT_MS_DEFAULT 1000
/*
 * Coflow k of job J is J * 2^24 + k: job ids below 2^40
 * (LOOM_CLIENT_MPI_JOB_MAX), at most 2^24 - 1 collectives.
 */
#define MPI_COFLOW_BITS 24
#define MPI_JOB_MAX     LOOM_CLIENT_MPI_JOB_MAX
#define MPI_NO_HOST     LOOM_CLIENT_MPI_NO_HOST
#define MPI_MSG_MAX     200

_Static_assert(MPI_MSG_MAX >= LOOM_CLIENT_MPI_MSG_MAX, "a report holds mpi_env's messages");

/* What each rank tells rank 0 at MPI_Init: its host, or why it has none. */
struct mpi_report {
	uint32_t host; /* MPI_NO_HOST: msg says why */
	char msg[MPI_MSG_MAX];
};

static struct {
	bool on; /* decided at MPI_Init by rank 0, the same on every rank */
	bool ok; /* this rank still talks to loomd */
	int rank, size;
	MPI_Comm comm; /* our duplicate of MPI_COMM_WORLD */
	uint64_t job;
	uint64_t k;         /* collectives tracked so far */
	uint64_t min_bytes; /* smaller collectives are not tracked (rank 0's $LOOM_MPI_MIN_BYTES) */
	uint32_t *host;     /* by rank */
	struct loom_client *client;
	struct loom_client_announce *ann; /* size - 1 */
} st = {.comm = MPI_COMM_NULL};

/* One line on stderr, in one write() so that ranks' lines do not interleave. */
__attribute__((format(printf, 1, 2))) static void mpi_warn(const char *fmt, ...)
{
	char line[700];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "loom_mpi[rank %d]: ", st.rank);
	va_start(ap, fmt);
	loom_client_log_line(line, sizeof(line), (size_t)n, fmt, ap);
	va_end(ap);
}

/* Whether name (a processor name) is key, or key is one of name's addresses (mpi_env.h). */
static bool host_matches(const char *key, void *name_)
{
	const char *name = name_;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	unsigned char raw[sizeof(struct in6_addr)];
	bool hit = false;

	if (strcmp(name, key) == 0)
		return true;
	/* only an address is looked up among name's (no name lookup for other keys) */
	if (inet_pton(AF_INET, key, raw) != 1 && inet_pton(AF_INET6, key, raw) != 1)
		return false;
	if (getaddrinfo(name, NULL, &hints, &ai) != 0)
		return false;
	for (struct addrinfo *a = ai; a && !hit; a = a->ai_next) {
		char buf[INET6_ADDRSTRLEN] = "";

		if (a->ai_family == AF_INET)
			inet_ntop(AF_INET, &((struct sockaddr_in *)a->ai_addr)->sin_addr, buf,
				  sizeof(buf));
		else if (a->ai_family == AF_INET6)
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)a->ai_addr)->sin6_addr, buf,
				  sizeof(buf));
		hit = buf[0] && strcmp(buf, key) == 0;
	}
	freeaddrinfo(ai);
	return hit;
}

/* This rank's host id from $LOOM_MPI_HOST or $LOOM_MPI_HOSTS, or MPI_NO_HOST with r->msg. */
static void find_host(struct mpi_report *r)
{
	const char *one = getenv("LOOM_MPI_HOST"), *map = getenv("LOOM_MPI_HOSTS");
	char name[MPI_MAX_PROCESSOR_NAME + 1] = "";
	struct loom_err err = {{0}};
	int len = 0, rc;

	r->host = MPI_NO_HOST;
	if (one && one[0]) {
		rc = loom_client_mpi_env_host(one, &r->host, &err);
	} else {
		PMPI_Get_processor_name(name, &len);
		rc = loom_client_mpi_env_hosts(map, name, host_matches, name, &r->host, &err);
	}
	if (rc < 0) /* it fits: LOOM_CLIENT_MPI_MSG_MAX */
		snprintf(r->msg, sizeof(r->msg), "%.*s", (int)sizeof(r->msg) - 1, err.msg);
}

static struct loom_client *connect_loomd(const char *what)
{
	const char *t = getenv("LOOM_TIMEOUT_MS");
	struct loom_client_options opts = {.timeout_ms = MPI_TIMEOUT_MS_DEFAULT};
	unsigned long long ms;
	char name[96];
	struct loom_client *c;

	if (t && t[0]) {
		if (loom_client_mpi_env_dec(t, 1, 3600000, &ms))
			opts.timeout_ms = (int)ms;
		else
			mpi_warn("LOOM_TIMEOUT_MS=\"%.60s\" is not 1..3600000; using %d", t,
				 MPI_TIMEOUT_MS_DEFAULT);
	}
	snprintf(name, sizeof(name), "loom_mpi:%s[rank %d]", program_invocation_short_name,
		 st.rank);
	opts.name = name;
	c = loom_client_connect(NULL, &opts);
	if (!c)
		mpi_warn("%s: %s; collectives run untracked", what, loom_client_strerror());
	return c;
}

static uint64_t coflow_id(uint64_t k)
{
	return (st.job << MPI_COFLOW_BITS) + k;
}

/* Rank 0: the job id ($LOOM_MPI_JOB, else random), registered with its anchor coflow. */
static bool register_job(const struct mpi_report *reports)
{
	const char *j = getenv("LOOM_MPI_JOB"), *mb = getenv("LOOM_MPI_MIN_BYTES");
	char name[160];
	struct loom_err err = {{0}};
	uint64_t v;
	uint32_t bad = 0, first = 0;
	struct loom_client_coflow anchor = {0};
	struct loom_client_job job = {.coflows = &anchor, .n_coflows = 1, .name = name};

	for (int r = st.size - 1; r >= 0; r--)
		if (reports[r].host == MPI_NO_HOST) {
			bad++;
			first = (uint32_t)r;
		}
	if (bad) {
		mpi_warn("rank %u: %s%s; collectives run untracked", first, reports[first].msg,
			 bad > 1 ? " (and other ranks too)" : "");
		return false;
	}
	if (mb && mb[0]) {
		if (loom_client_mpi_env_min_bytes(mb, &v, &err) < 0) {
			mpi_warn("%s; collectives run untracked", err.msg);
			return false;
		}
		st.min_bytes = v;
	}
	if (j && j[0]) {
		if (loom_client_mpi_env_job(j, &v, &err) < 0) {
			mpi_warn("%s; collectives run untracked", err.msg);
			return false;
		}
	} else {
		uint64_t rnd = 0;

		if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			rnd = (uint64_t)getpid() * 2654435761u ^ (uint64_t)time(NULL);
		v = (rnd & MPI_JOB_MAX) | 1;
	}
	st.job = v;
	st.client = connect_loomd("cannot reach loomd");
	if (!st.client)
		return false;
	snprintf(name, sizeof(name), "mpi:%.100s (%d ranks)", program_invocation_short_name,
		 st.size);
	job.id = st.job;
	anchor.id = coflow_id(0);
	if (loom_client_job_register(st.client, &job) < 0) {
		mpi_warn("cannot register job %llu: %s; collectives run untracked",
			 (unsigned long long)st.job, loom_client_strerror());
		st.client = loom_client_free(st.client);
		return false;
	}
	return true;
}

/* After PMPI_Init: decides, with every rank, whether this run is tracked. */
static void mpi_setup(void)
{
	struct mpi_report me = {0}, *all = NULL;
	uint64_t job = 0, dec[2];

	PMPI_Comm_rank(MPI_COMM_WORLD, &st.rank);
	PMPI_Comm_size(MPI_COMM_WORLD, &st.size);
	if (PMPI_Comm_dup(MPI_COMM_WORLD, &st.comm) != MPI_SUCCESS) {
		st.comm = MPI_COMM_NULL;
		if (st.rank == 0)
			mpi_warn("MPI_Comm_dup failed; collectives run untracked");
		return;
	}
	st.host = calloc((size_t)st.size, sizeof(*st.host));
	st.ann = calloc((size_t)st.size, sizeof(*st.ann));
	if (st.host && st.ann)
		find_host(&me);
	else
		snprintf(me.msg, sizeof(me.msg), "out of memory");
	if (st.rank == 0)
		all = calloc((size_t)st.size, sizeof(*all));
	/* every rank makes the same calls: the gather, then the broadcast of the decision */
	PMPI_Gather(&me, (int)sizeof(me), MPI_BYTE, all, (int)sizeof(me), MPI_BYTE, 0, st.comm);
	if (st.rank == 0) {
		if (!all)
			mpi_warn("out of memory; collectives run untracked");
		else if (register_job(all))
			job = st.job;
		free(all);
	}
	dec[0] = job;
	dec[1] = st.min_bytes;
	PMPI_Bcast(dec, 2, MPI_UINT64_T, 0, st.comm);
	job = dec[0];
	st.min_bytes = dec[1];
	if (!job) {
		free(st.host);
		free(st.ann);
		st.host = NULL;
		st.ann = NULL;
		return;
	}
	/* tracked: every rank has its host (rank 0 checked) and learns the others' */
	st.job = job;
	PMPI_Allgather(&me.host, 1, MPI_UINT32_T, st.host, 1, MPI_UINT32_T, st.comm);
	st.on = st.ok = true;
	if (st.rank != 0) {
		st.client = connect_loomd("cannot reach loomd");
		st.ok = st.client != NULL;
	}
}

/* Whether comm is MPI_COMM_WORLD or congruent with it (the same ranks in the same order). */
static bool tracked_comm(MPI_Comm comm)
{
	int res = MPI_UNEQUAL;

	if (!st.on)
		return false;
	if (comm == MPI_COMM_WORLD)
		return true;
	return PMPI_Comm_compare(comm, MPI_COMM_WORLD, &res) == MPI_SUCCESS &&
	       (res == MPI_IDENT || res == MPI_CONGRUENT);
}

/* ---- flows: what this rank sends to each other rank ------------------------------------------ */

static uint64_t type_bytes(int count, MPI_Datatype t)
{
	int size = 0;

	if (count <= 0 || PMPI_Type_size(t, &size) != MPI_SUCCESS || size <= 0)
		return 0;
	return (uint64_t)count * (uint64_t)size;
}

/* Ranks other than this one, and ordered pairs of ranks. */
static uint64_t others(void)
{
	return (uint64_t)st.size - 1;
}

static uint64_t pairs(void)
{
	return (uint64_t)st.size * ((uint64_t)st.size - 1);
}

/* Bytes of counts[0..size-1] elements of t. */
static uint64_t sum_bytes(const int counts[], MPI_Datatype t)
{
	uint64_t b = 0;

	for (int j = 0; j < st.size; j++)
		b += type_bytes(counts[j], t);
	return b;
}

/* Elements of block b when count elements are cut into n blocks (the first count % n one bigger). */
static uint64_t block(int count, int n, int b)
{
	return (uint64_t)(count / n) + (b < count % n ? 1 : 0);
}

/* Rank 0 adds coflow k (after k - 1) and says whether it did; every rank learns it. */
static bool coflow_begin(void)
{
	int go = 0;

	if (st.rank == 0 && st.ok) {
		struct loom_client_coflow cf = {.id = coflow_id(st.k + 1)};
		struct loom_client_edge e = {.parent = coflow_id(st.k), .child = cf.id};
		struct loom_client_job x = {.id = st.job, .coflows = &cf, .n_coflows = 1};

		if (st.k + 1 >= (UINT64_C(1) << MPI_COFLOW_BITS)) {
			mpi_warn("%llu collectives: no more are tracked", (unsigned long long)st.k);
			st.ok = false;
		} else {
			x.edges = st.k ? &e : NULL;
			x.n_edges = st.k ? 1 : 0;
			if (loom_client_job_extend(st.client, &x) < 0) {
				mpi_warn("cannot add collective %llu to job %llu: %s; the rest "
					 "run untracked",
					 (unsigned long long)st.k + 1, (unsigned long long)st.job,
					 loom_client_strerror());
				st.ok = false;
			}
		}
		go = st.ok;
	}
	PMPI_Bcast(&go, 1, MPI_INT, 0, st.comm);
	if (go)
		st.k++;
	return go;
}

/* Announces this rank's flows of the current coflow: bytes[j] to rank j (0: none). */
static void announce(const uint64_t *bytes)
{
	size_t n = 0;
	int r;

	if (!st.ok)
		return;
	for (int j = 0; j < st.size; j++) {
		struct loom_client_announce *a = &st.ann[n];
		uint64_t lo = ((uint64_t)(uint32_t)st.rank << 32) | (uint32_t)j;

		if (j == st.rank || !bytes[j])
			continue;
		memset(a, 0, sizeof(*a));
		a->coflow_id = coflow_id(st.k);
		a->flow.src_host = st.host[st.rank];
		a->flow.dst_host = st.host[j];
		a->flow.bytes = bytes[j];
		/* a name, not an address: 100::/64 (discard-only) + coflow id, 100:: + ranks */
		a->flow.tuple.family = 6;
		a->flow.tuple.protocol = 6;
		a->flow.tuple.src[0] = a->flow.tuple.dst[0] = 0x01;
		for (int b = 0; b < 8; b++) {
			a->flow.tuple.src[8 + b] = (uint8_t)(a->coflow_id >> (56 - 8 * b));
			a->flow.tuple.dst[8 + b] = (uint8_t)(lo >> (56 - 8 * b));
		}
		n++;
	}
	r = loom_client_flows_announce(st.client, st.ann, n);
	if (r < 0 || (size_t)r != n) {
		mpi_warn("cannot announce the flows of collective %llu: %s; this rank's flows "
			 "are no longer announced",
			 (unsigned long long)st.k, loom_client_strerror());
		st.ok = false;
	}
}

/* Every rank is through the collective: rank 0 marks its coflow done. */
static void coflow_end(void)
{
	int mine = 1, all = 0;

	PMPI_Reduce(&mine, &all, 1, MPI_INT, MPI_MIN, 0, st.comm);
	if (st.rank != 0 || !st.ok)
		return;
	if (loom_client_coflow_done(st.client, coflow_id(st.k)) < 0) {
		mpi_warn("cannot mark collective %llu done: %s; the rest run untracked",
			 (unsigned long long)st.k, loom_client_strerror());
		st.ok = false;
	}
}

/*
 * The frame of every wrapper: when comm is tracked and the collective moves
 * TOTAL bytes or more (an expression every rank evaluates alike; UINT64_MAX
 * where ranks cannot know it), begin the coflow, fill bytes (one per rank,
 * zeroed) with FILL, announce, run CALL, end the coflow.
 */
#define TRACKED(comm, TOTAL, FILL, CALL)                                                           \
	do {                                                                                       \
		uint64_t *bytes;                                                                   \
		int rc_;                                                                           \
		if (!tracked_comm(comm) || (TOTAL) < st.min_bytes)                                 \
			return CALL;                                                               \
		bytes = calloc((size_t)st.size, sizeof(*bytes));                                   \
		if (coflow_begin() && bytes) {                                                     \
			FILL;                                                                      \
			announce(bytes);                                                           \
		}                                                                                  \
		free(bytes);                                                                       \
		rc_ = CALL;                                                                        \
		coflow_end();                                                                      \
		return rc_;                                                                        \
	} while (0)

/* What each rank sends each other one in an all-to-all or all-gather (MPI_IN_PLACE: a recv block). */
static uint64_t block_bytes(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			    int recvcount, MPI_Datatype recvtype)
{
	return sendbuf == MPI_IN_PLACE ? type_bytes(recvcount, recvtype) :
					 type_bytes(sendcount, sendtype);
}

/* The same b bytes to every rank. */
static void fill_bytes(uint64_t *bytes, uint64_t b)
{
	for (int j = 0; j < st.size; j++)
		bytes[j] = b;
}

/* ---- the wrappers ----------------------------------------------------------------------------- */

int MPI_Init(int *argc, char ***argv)
{
	int rc = PMPI_Init(argc, argv);

	if (rc == MPI_SUCCESS)
		mpi_setup();
	return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int rc = PMPI_Init_thread(argc, argv, required, provided);

	if (rc == MPI_SUCCESS)
		mpi_setup();
	return rc;
}

int MPI_Finalize(void)
{
	if (st.on && st.rank == 0 && st.ok && loom_client_job_done(st.client, st.job) < 0)
		mpi_warn("cannot mark job %llu done: %s", (unsigned long long)st.job,
			 loom_client_strerror());
	st.on = st.ok = false;
	st.client = loom_client_free(st.client);
	free(st.host);
	free(st.ann);
	st.host = NULL;
	st.ann = NULL;
	if (st.comm != MPI_COMM_NULL)
		PMPI_Comm_free(&st.comm);
	return PMPI_Finalize();
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		 int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
	const uint64_t b = block_bytes(sendbuf, sendcount, sendtype, recvcount, recvtype);

	TRACKED(comm, pairs() * b, fill_bytes(bytes, b),
		PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm));
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
		  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
		  MPI_Datatype recvtype, MPI_Comm comm)
{
	TRACKED(
		comm, UINT64_MAX,
		{
			for (int j = 0; j < st.size; j++)
				bytes[j] = sendbuf == MPI_IN_PLACE ?
						   type_bytes(recvcounts[j], recvtype) :
						   type_bytes(sendcounts[j], sendtype);
		},
		PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
			       recvtype, comm));
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
	const uint64_t b = block_bytes(sendbuf, sendcount, sendtype, recvcount, recvtype);

	TRACKED(comm, pairs() * b, fill_bytes(bytes, b),
		PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm));
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		   const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
	TRACKED(
		comm, others() * sum_bytes(recvcounts, recvtype),
		{
			uint64_t b = sendbuf == MPI_IN_PLACE ?
					     type_bytes(recvcounts[st.rank], recvtype) :
					     type_bytes(sendcount, sendtype);

			for (int j = 0; j < st.size; j++)
				bytes[j] = b;
		},
		PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
				comm));
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
	       int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	TRACKED(
		comm,
		others() * (st.rank == root ? type_bytes(recvcount, recvtype) :
					      type_bytes(sendcount, sendtype)),
		{
			if (st.rank != root && root >= 0 && root < st.size)
				bytes[root] = type_bytes(sendcount, sendtype);
		},
		PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
			    comm));
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
		MPI_Comm comm)
{
	TRACKED(
		comm, UINT64_MAX,
		{
			if (st.rank != root && root >= 0 && root < st.size)
				bytes[root] = type_bytes(sendcount, sendtype);
		},
		PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
			     root, comm));
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	TRACKED(
		comm,
		others() * (st.rank == root ? type_bytes(sendcount, sendtype) :
					      type_bytes(recvcount, recvtype)),
		{
			if (st.rank == root)
				for (int j = 0; j < st.size; j++)
					bytes[j] = type_bytes(sendcount, sendtype);
		},
		PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
			     comm));
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
		 MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
		 int root, MPI_Comm comm)
{
	TRACKED(
		comm, UINT64_MAX,
		{
			if (st.rank == root)
				for (int j = 0; j < st.size; j++)
					bytes[j] = type_bytes(sendcounts[j], sendtype);
		},
		PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype,
			      root, comm));
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
		       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
	TRACKED(
		comm, others() * sum_bytes(recvcounts, datatype),
		{
			for (int j = 0; j < st.size; j++)
				bytes[j] = type_bytes(recvcounts[j], datatype);
		},
		PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm));
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
			     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
	TRACKED(
		comm, pairs() * type_bytes(recvcount, datatype),
		{
			for (int j = 0; j < st.size; j++)
				bytes[j] = type_bytes(recvcount, datatype);
		},
		PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm));
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
		  MPI_Comm comm)
{
	/* reduce-scatter (block j to rank j) then all-gather (own block to everyone) */
	TRACKED(
		comm, 2 * others() * type_bytes(count, datatype),
		{
			uint64_t size = type_bytes(1, datatype);

			for (int j = 0; j < st.size && count > 0; j++)
				bytes[j] = (block(count, st.size, j) +
					    block(count, st.size, st.rank)) *
					   size;
		},
		PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm));
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
	       int root, MPI_Comm comm)
{
	TRACKED(
		comm, others() * type_bytes(count, datatype),
		{
			if (st.rank != root && root >= 0 && root < st.size)
				bytes[root] = type_bytes(count, datatype);
		},
		PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm));
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
	TRACKED(
		comm, others() * type_bytes(count, datatype),
		{
			if (st.rank == root)
				for (int j = 0; j < st.size; j++)
					bytes[j] = type_bytes(count, datatype);
		},
		PMPI_Bcast(buffer, count, datatype, root, comm));
}
