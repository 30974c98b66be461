/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libloom_mpi.so under mpirun (Open MPI, 4 ranks, TCP between them) against
 * a real loomd on a Unix socket: mpi_prog's 13 tracked collectives become 13
 * coflows of one job after its anchor, chained by 12 edges, and every
 * coflow's flows (rank pairs mapped to hosts, and bytes) are the ones the
 * collective's arguments give, as listed in expected() below; ranks map to
 * hosts by LOOM_MPI_HOST (one host per rank) and by LOOM_MPI_HOSTS (the
 * processor name: every rank on one host); with LOOM_MPI_MIN_BYTES only the
 * collectives that move that much (or whose size ranks cannot all know) are
 * coflows. Without loomd, or with a malformed LOOM_CONTROLLER, LOOM_MPI_HOST,
 * LOOM_MPI_HOSTS, LOOM_MPI_JOB or LOOM_MPI_MIN_BYTES,
 * the program still runs to its end with correct results and exit status 0,
 * and the library says why in exactly one line on stderr.
 *
 * The library and the program come from $LOOM_MPI_LIB and $LOOM_MPI_PROG
 * (tests/mpi/meson.build), loomd from $LOOMD, mpirun from the PATH; the test
 * exits 77 (skipped) when one is missing. mpirun runs with the environment
 * that lets Open MPI run as root (CI runs as root) and --oversubscribe; in a
 * sanitizer build (the library cannot be preloaded before the sanitizer's
 * runtime) it exits 77 too. Each
 * run takes about a second; every run is bounded by the CLI harness.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/cli_harness.h"
#include "tests/e2e/harness.h"
#include "tests/precond.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif
#ifndef UNDER_SANITIZER
#define UNDER_SANITIZER 0
#endif

#define NRANKS       4
#define NCOLLECTIVES 13

static char mpirun[4096];
static const char *lib, *prog;

/* mpi_prog's collectives in order: k = 1..13, bytes[src rank][dst rank] (0: no flow). */
static void expected(int k, uint64_t b[NRANKS][NRANKS])
{
	static const uint64_t blk[NRANKS] = {3, 3, 2, 2}; /* 10 elements in 4 blocks */

	memset(b, 0, sizeof(uint64_t) * NRANKS * NRANKS);
	for (int i = 0; i < NRANKS; i++)
		for (int j = 0; j < NRANKS; j++) {
			if (i == j)
				continue;
			switch (k) {
			case 1: /* Bcast of 1000 ints from 0 */
				b[i][j] = i == 0 ? 4000 : 0;
				break;
			case 2: /* Alltoall, 100 doubles a pair */
				b[i][j] = 800;
				break;
			case 3: /* Allgather, 50 ints */
				b[i][j] = 200;
				break;
			case 4: /* Gather of 25 ints to 1 */
				b[i][j] = j == 1 ? 100 : 0;
				break;
			case 5: /* Scatterv from 2: 10 (j + 1) ints to j */
				b[i][j] = i == 2 ? 40 * (uint64_t)(j + 1) : 0;
				break;
			case 6: /* Alltoallv: (i + 1)(j + 1) ints */
				b[i][j] = 4 * (uint64_t)(i + 1) * (uint64_t)(j + 1);
				break;
			case 7: /* Reduce_scatter, j + 1 doubles to j */
				b[i][j] = 8 * (uint64_t)(j + 1);
				break;
			case 8: /* Allreduce of 10 doubles: reduce-scatter + all-gather */
				b[i][j] = 8 * (blk[i] + blk[j]);
				break;
			case 9: /* Reduce of 7 ints to 3 */
				b[i][j] = j == 3 ? 28 : 0;
				break;
			case 10: /* Scatter of 5 ints from 0 */
				b[i][j] = i == 0 ? 20 : 0;
				break;
			case 11: /* Allgatherv: i + 1 ints */
				b[i][j] = 4 * (uint64_t)(i + 1);
				break;
			case 12: /* Gatherv to 0: i + 1 ints */
				b[i][j] = j == 0 ? 4 * (uint64_t)(i + 1) : 0;
				break;
			case 13: /* Reduce_scatter_block, 3 ints */
				b[i][j] = 12;
				break;
			}
		}
}

/*
 * mpirun -np 4 ... with LD_PRELOAD=lib (when lib) and the NULL-ended -x
 * settings; each rank's LOOM_MPI_HOST is its rank + 1 when per_rank_host.
 */
static void run_mpi(struct result *r, bool preload, bool per_rank_host, const char *const *xs)
{
	const char *args[48];
	char pre[4200];
	int n = 0;

	args[n++] = "-np";
	args[n++] = "4";
	args[n++] = "--oversubscribe";
	args[n++] = "--mca";
	args[n++] = "btl";
	args[n++] = "tcp,self";
	if (preload) {
		snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", lib);
		args[n++] = "-x";
		args[n++] = pre;
	}
	for (int i = 0; xs && xs[i] && n < 40; i++) {
		args[n++] = "-x";
		args[n++] = xs[i];
	}
	if (per_rank_host) {
		args[n++] = "/bin/sh";
		args[n++] = "-c";
		args[n++] = "LOOM_MPI_HOST=$((OMPI_COMM_WORLD_RANK + 1)) exec \"$0\"";
	}
	args[n++] = prog;
	args[n] = NULL;
	run_argv(r, mpirun, args);
}

/* The program ran to its end with right results; stderr has want_warnings loom_mpi lines. */
static void expect_ran(struct result *r, int want_warnings, const char *needle)
{
	int lines = 0;

	for (const char *p = r->err; (p = strstr(p, "loom_mpi[")); p++)
		lines++;
	if (r->status != 0 || !strstr(r->out, "mpi_prog: ok") || lines != want_warnings ||
	    (needle && !strstr(r->err, needle))) {
		char what[256];

		snprintf(what, sizeof(what),
			 "expected exit 0, \"mpi_prog: ok\", %d loom_mpi warnings%s%s (got %d)",
			 want_warnings, needle ? " with " : "", needle ? needle : "", lines);
		dump_fail(r, what);
	}
}

/* Job id's entry of loomd's dump (borrowed from dump), or NULL. */
static json_t *find_job(json_t *dump, uint64_t id)
{
	json_t *jobs = json_object_get(dump, "jobs"), *j;
	size_t i;

	json_array_foreach(jobs, i, j) if ((uint64_t)json_integer_value(json_object_get(j, "id")) ==
					   id) return j;
	return NULL;
}

static long long jint(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_integer(v))
		fail_msg("no integer '%s' in the dump", key);
	return json_integer_value(v);
}

/*
 * Checks job id in loomd: the anchor, then one coflow for each of mpi_prog's
 * collectives ks[0..nks-1] (numbers of expected()) with their flows and
 * bytes, chained, all done. host_of_rank[r] is rank r's host.
 * Adds the coflows, flows and bytes found to the totals.
 */
static void check_job(struct h_loomd *h, uint64_t id, const uint32_t host_of_rank[NRANKS],
		      const int *ks, int nks, uint64_t *ret_flows, uint64_t *ret_bytes)
{
	json_t *dump = h_admin(h, "dump", 0, NULL), *job, *cfs, *edges, *e;
	size_t i;

	assert_non_null(dump);
	job = find_job(dump, id);
	if (!job)
		fail_msg("loomd has no job %llu", (unsigned long long)id);
	assert_string_equal(json_string_value(json_object_get(job, "state")), "done");
	assert_string_equal(json_string_value(json_object_get(job, "name")),
			    "mpi:loom_mpi_prog (4 ranks)");
	cfs = json_object_get(job, "coflow_list");
	assert_int_equal(json_array_size(cfs), (size_t)nks + 1);
	/* the anchor: no flows */
	assert_int_equal(jint(json_array_get(cfs, 0), "id"), (long long)(id << 24));
	assert_int_equal(jint(json_array_get(cfs, 0), "flows"), 0);
	for (int c = 1; c <= nks; c++) {
		json_t *cf = json_array_get(cfs, (size_t)c), *fl = json_object_get(cf, "flow_list"),
		       *f;
		int k = ks[c - 1];
		uint64_t want[NRANKS][NRANKS], got[NRANKS][NRANKS] = {{0}}, nwant = 0, sum = 0;

		expected(k, want);
		assert_int_equal(jint(cf, "id"), (long long)((id << 24) + (uint64_t)c));
		assert_string_equal(json_string_value(json_object_get(cf, "state")), "done");
		for (int s = 0; s < NRANKS; s++)
			for (int d = 0; d < NRANKS; d++) {
				nwant += want[s][d] != 0;
				sum += want[s][d];
			}
		if (json_array_size(fl) != nwant)
			fail_msg("collective %d: %zu flows in loomd, %llu expected", k,
				 json_array_size(fl), (unsigned long long)nwant);
		assert_int_equal(jint(cf, "bytes_expected"), (long long)sum);
		/* each flow is one rank pair's: its hosts name the ranks (per-rank hosts) */
		json_array_foreach(fl, i, f)
		{
			int s = -1, d = -1;

			for (int r = 0; r < NRANKS; r++) {
				if (host_of_rank[r] == (uint32_t)jint(f, "src") && s < 0)
					s = r;
				if (host_of_rank[r] == (uint32_t)jint(f, "dst") && d < 0)
					d = r;
			}
			assert_true(s >= 0 && d >= 0);
			if (host_of_rank[1] != host_of_rank[0])
				got[s][d] += (uint64_t)jint(f, "bytes");
		}
		if (host_of_rank[1] != host_of_rank[0])
			assert_memory_equal(got, want, sizeof(got));
		*ret_flows += nwant;
		*ret_bytes += sum;
	}
	/* the chain: coflow k -> k + 1, nothing to or from the anchor */
	edges = json_object_get(job, "edges");
	assert_int_equal(json_array_size(edges), (size_t)nks - 1);
	json_array_foreach(edges, i, e)
	{
		assert_int_equal(jint(e, "parent"), (long long)((id << 24) + i + 1));
		assert_int_equal(jint(e, "child"), (long long)((id << 24) + i + 2));
	}
	json_decref(dump);
}

static void test_tracked(void **state)
{
	static const uint32_t per_rank[NRANKS] = {1, 2, 3, 4}, one_host[NRANKS] = {5, 5, 5, 5};
	struct h_loomd h;
	struct result r;
	char ctl[400], hosts[300], host[256] = "";
	static const int all[NCOLLECTIVES] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
	static const int big[] = {1, 2, 3, 5, 6, 12}; /* >= 1000 bytes, or v-collectives */
	uint64_t flows = 0, bytes = 0;

	(void)state;
	assert_int_equal(h_loomd_prepare(&h), 0);
	assert_int_equal(h_loomd_start(&h, NULL), 0);
	snprintf(ctl, sizeof(ctl), "LOOM_CONTROLLER=unix:%s", h.sock);

	/* one host per rank (LOOM_MPI_HOST = rank + 1) */
	run_mpi(&r, true, true, (const char *const[]){ctl, "LOOM_MPI_JOB=77", NULL});
	expect_ran(&r, 0, NULL);
	result_free(&r);
	check_job(&h, 77, per_rank, all, NCOLLECTIVES, &flows, &bytes);
	print_message("mpi: job 77: %d collectives -> %d coflows (with the anchor), %llu flows, "
		      "%llu bytes\n",
		      NCOLLECTIVES, NCOLLECTIVES + 1, (unsigned long long)flows,
		      (unsigned long long)bytes);
	assert_int_equal(flows, 102);
	assert_int_equal(bytes, 26024);

	/* every rank on the host its processor name maps to */
	assert_int_equal(gethostname(host, sizeof(host) - 1), 0);
	snprintf(hosts, sizeof(hosts), "LOOM_MPI_HOSTS=elsewhere=9,%s=5", host);
	run_mpi(&r, true, false, (const char *const[]){ctl, "LOOM_MPI_JOB=78", hosts, NULL});
	expect_ran(&r, 0, NULL);
	result_free(&r);
	check_job(&h, 78, one_host, all, NCOLLECTIVES, &flows, &bytes);

	/* collectives under 1000 bytes in all pass through, but those whose size ranks cannot know */
	run_mpi(&r, true, true,
		(const char *const[]){ctl, "LOOM_MPI_JOB=79", "LOOM_MPI_MIN_BYTES=1000", NULL});
	expect_ran(&r, 0, NULL);
	result_free(&r);
	check_job(&h, 79, per_rank, big, (int)(sizeof(big) / sizeof(big[0])), &flows, &bytes);

	assert_int_equal(h_loomd_stop_clean(&h), 0);
	h_loomd_cleanup(&h);
}

/* Without loomd: the same results, one warning. */
static void test_no_loomd(void **state)
{
	struct result r;

	(void)state;
	run_mpi(&r, true, true,
		(const char *const[]){"LOOM_CONTROLLER=unix:/nonexistent/loomd.sock", NULL});
	expect_ran(&r, 1, "cannot reach loomd: connect unix:/nonexistent/loomd.sock");
	result_free(&r);
	/* and the program alone, for comparison */
	run_mpi(&r, false, false, NULL);
	expect_ran(&r, 0, NULL);
	result_free(&r);
}

/* Malformed settings: each named in one warning; the program runs on. */
static void test_bad_env(void **state)
{
	static const struct {
		const char *x1, *x2;
		bool per_rank_host;
		const char *needle;
	} cases[] = {
		{"LOOM_CONTROLLER=tcp:nohost", NULL, true, "\"tcp:nohost\": missing ':' and port"},
		{"LOOM_CONTROLLER=unix:", NULL, true, "cannot reach loomd"},
		{"LOOM_MPI_HOST=abc", NULL, false, "LOOM_MPI_HOST=\"abc\" is not a host id"},
		{"LOOM_MPI_HOSTS=nohostid", NULL, false, "entry \"nohostid\" is not NAME=ID"},
		{"LOOM_MPI_HOSTS=elsewhere=3", NULL, false, "LOOM_MPI_HOSTS names neither"},
		{NULL, NULL, false, "no host id for processor"},
		{"LOOM_MPI_JOB=0", NULL, true, "LOOM_MPI_JOB=\"0\" is not a job id"},
		{"LOOM_MPI_MIN_BYTES=1k", NULL, true, "LOOM_MPI_MIN_BYTES=\"1k\" is not a number"},
	};
	struct result r;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		run_mpi(&r, true, cases[i].per_rank_host,
			(const char *const[]){"LOOM_CONTROLLER=unix:/nonexistent/loomd.sock",
					      cases[i].x1, cases[i].x2, NULL});
		expect_ran(&r, 1, cases[i].needle);
		result_free(&r);
	}
	/* a bad timeout is said and the default used: then loomd is not there either */
	run_mpi(&r, true, true,
		(const char *const[]){"LOOM_CONTROLLER=unix:/nonexistent/loomd.sock",
				      "LOOM_TIMEOUT_MS=abc", NULL});
	expect_ran(&r, 2, "LOOM_TIMEOUT_MS=\"abc\" is not 1..3600000; using 1000");
	result_free(&r);
}

static int setup(void **state)
{
	(void)state;
	return cli_tmpdir_make("/tmp/loom-mpi-XXXXXX");
}

static int teardown(void **state)
{
	(void)state;
	return cli_tmpdir_remove();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tracked),
		cmocka_unit_test(test_no_loomd),
		cmocka_unit_test(test_bad_env),
	};
	const char *loomd = getenv("LOOMD");

	if (UNDER_SANITIZER) {
		/* the library would come before the sanitizer's runtime (and into /bin/sh) */
		fprintf(stderr,
			"skipped: a sanitizer build's libloom_mpi.so cannot be preloaded\n");
		return 77;
	}
	lib = getenv("LOOM_MPI_LIB");
	prog = getenv("LOOM_MPI_PROG");
	if (!precond_find_program("mpirun", mpirun, sizeof(mpirun))) {
		fprintf(stderr, "skipped: no mpirun on the PATH (openmpi-bin)\n");
		return 77;
	}
	if (!lib || access(lib, R_OK) != 0 || !prog || access(prog, X_OK) != 0 || !loomd ||
	    access(loomd, X_OK) != 0) {
		fprintf(stderr, "skipped: $LOOM_MPI_LIB, $LOOM_MPI_PROG or $LOOMD is not there "
				"(run it with meson test)\n");
		return 77;
	}
	/* CI runs as root; single-copy shared memory needs ptrace, which containers deny */
	setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
	setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
	setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
	/* the ranks' environment is what -x passes: none of the test's own LOOM_ settings */
	unsetenv("LOOM_CONTROLLER");
	unsetenv("LOOM_MPI_HOST");
	unsetenv("LOOM_MPI_HOSTS");
	unsetenv("LOOM_MPI_JOB");
	unsetenv("LOOM_MPI_MIN_BYTES");
	unsetenv("LOOM_TIMEOUT_MS");
	return cmocka_run_group_tests(tests, setup, teardown);
}
