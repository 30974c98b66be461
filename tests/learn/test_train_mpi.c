/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom-train --mpi under mpirun: two ranks of one thread train, to the
 * byte, the model one process with two threads trains (the same seed and
 * worker count), with the same learning.csv rows (wall time aside) and the
 * same checkpoint state; a run stopped by --time-limit under mpirun resumes
 * under mpirun into that model, and a --resume with another worker count is
 * refused and says both counts; failures end every rank (none hangs).
 *
 * Runs are tiny (two-job episodes, a model of width 8): each takes about a
 * second. The program comes from $LOOM_TRAIN, mpirun from the PATH; the
 * test exits 77 (skipped) when the build has no MPI or mpirun is missing.
 * mpirun gets --oversubscribe (CI machines may have one core) and the
 * environment that lets Open MPI run as root (CI runs as root). Every run
 * is bounded by the harness (killed if it hangs) and its exit status
 * checked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/cli_harness.h"
#include "tests/precond.h"

static char mpirun[4096];

static const char *train_prog(void)
{
	const char *p = getenv("LOOM_TRAIN");

	return p && *p ? p : "controlplane/learn/loom-train";
}

/* The tiny run, as test_train_cli's TINY but for the worker count. */
#define TINY_NO_THREADS                                                                            \
	"--no-progress", "--iters", "3", "--imitate-iters", "1", "--rollouts", "2", "--jobs-min",  \
		"2", "--jobs-max", "2", "--eval-every", "1", "--eval-workloads", "1",              \
		"--eval-jobs", "2", "--hidden", "8", "--layers", "1", "--emb", "8", "--heads",     \
		"1", "--mlp", "8"

/* One process: loom-train TINY --threads 2 --out DIR, then extra (up to 2, NULL-ended). */
static void run_single(struct result *r, const char *threads, const char *dir, const char *x1,
		       const char *x2)
{
	const char *args[] = {TINY_NO_THREADS, "--threads", threads, "--out", dir, x1, x2, NULL};

	run_argv(r, train_prog(), args);
}

/* mpirun -np 2 loom-train --mpi TINY --threads 1 --out DIR, then extra (up to 2). */
static void run_mpi(struct result *r, const char *dir, const char *x1, const char *x2)
{
	const char *args[] = {"-np",        "2",     "--oversubscribe",
			      train_prog(), "--mpi", TINY_NO_THREADS,
			      "--threads",  "1",     "--out",
			      dir,          x1,      x2,
			      NULL};

	run_argv(r, mpirun, args);
}

static int setup(void **state)
{
	(void)state;
	return cli_tmpdir_make("/tmp/loom-train-mpi-XXXXXX");
}

static int teardown(void **state)
{
	(void)state;
	return cli_tmpdir_remove();
}

/* dir/name, whole; fails the test when unreadable. */
static char *read_out(const char *dir, const char *name, size_t *ret_len)
{
	char path[256];
	char *s;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	s = slurp(path, ret_len);
	if (!s)
		fail_msg("%s was not written", path);
	return s;
}

static void assert_same_file(const char *da, const char *db, const char *name)
{
	size_t na, nb;
	char *a = read_out(da, name, &na), *b = read_out(db, name, &nb);

	if (na != nb || memcmp(a, b, na) != 0)
		fail_msg("%s/%s and %s/%s differ (%zu and %zu bytes)", da, name, db, name, na, nb);
	free(a);
	free(b);
}

/* learning.csv with each row's last field (wall_s) cut off. */
static char *csv_without_wall(const char *dir)
{
	char *s = read_out(dir, "learning.csv", NULL), *o = calloc(1, strlen(s) + 1);
	size_t n = 0;

	assert_non_null(o);
	for (char *line = s, *end; *line; line = end + 1) {
		char *comma;

		end = strchr(line, '\n');
		assert_non_null(end);
		*end = '\0';
		comma = strrchr(line, ',');
		assert_non_null(comma);
		n += (size_t)sprintf(o + n, "%.*s\n", (int)(comma - line), line);
	}
	free(s);
	return o;
}

/* The one-process run with two threads, made once. */
static const char *reference(void)
{
	static char dir[128];
	struct result r;

	if (dir[0])
		return dir;
	tmp_path(dir, sizeof(dir), "threads");
	run_single(&r, "2", dir, NULL, NULL);
	expect(&r, 0, "iteration 3/3");
	return dir;
}

static void test_same_as_threads(void **state)
{
	char ob[128];
	const char *ref = reference(), *out = tmp_path(ob, sizeof(ob), "ranks");
	struct result r;
	char *a, *b;

	(void)state;
	run_mpi(&r, out, NULL, NULL);
	if (r.status != 0 || !strstr(r.err, "with 2 workers (2 MPI ranks x 1 threads)") ||
	    !strstr(r.err, "iteration 3/3"))
		dump_fail(&r, "mpirun -np 2: expected exit 0, 2 workers and 3 iterations");
	/* only rank 0 reports */
	assert_null(strstr(strstr(r.err, "iteration 3/3") + 1, "iteration 3/3"));
	result_free(&r);
	assert_same_file(ref, out, "final.lgw");
	assert_same_file(ref, out, "best.lgw");
	assert_same_file(ref, out, "checkpoint.state");
	a = csv_without_wall(ref);
	b = csv_without_wall(out);
	assert_string_equal(a, b);
	free(a);
	free(b);
}

static void test_resume_across_mpirun(void **state)
{
	char ob[128], pa[160];
	const char *ref = reference(), *out = tmp_path(ob, sizeof(ob), "resumed");
	struct result r;

	(void)state;
	/* a limit every iteration exceeds: both ranks stop after the first, exit 3 */
	run_mpi(&r, out, "--time-limit", "0.001");
	if (r.status != 3 || !strstr(r.err, "time limit reached after iteration 1") ||
	    strstr(r.err, "iteration 2/3"))
		dump_fail(&r, "mpirun --time-limit: expected exit 3 after iteration 1");
	result_free(&r);
	snprintf(pa, sizeof(pa), "%s/checkpoint.state", out);
	assert_int_equal(access(pa, F_OK), 0);
	/* another worker count cannot resume it, and is told both */
	run_single(&r, "1", out, "--resume", NULL);
	if (r.status != 1 || !strstr(r.err, "2 workers") ||
	    !strstr(r.err, "has --seed 1, 1 workers"))
		dump_fail(&r, "--resume with 1 worker: expected exit 1 naming 2 and 1 workers");
	result_free(&r);
	/* mpirun again finishes it into the unbroken run's model */
	run_mpi(&r, out, "--resume", NULL);
	if (r.status != 0 || strstr(r.err, "iteration 1/3") || !strstr(r.err, "iteration 3/3"))
		dump_fail(&r, "mpirun --resume: expected exit 0 with iterations 2 and 3");
	result_free(&r);
	assert_same_file(ref, out, "final.lgw");
	/* resumed rows replace nothing: header and three iterations */
	{
		char *a = csv_without_wall(ref), *b = csv_without_wall(out);

		assert_string_equal(a, b);
		free(a);
		free(b);
	}
}

/*
 * Failures under mpirun end every rank, none left waiting: a bad flag
 * before MPI starts (exit 2), and an --out that only rank 0 makes (under a
 * regular file): rank 0 fails, rank 1 learns it and both exit 1.
 */
static void test_errors(void **state)
{
	char fb[128], sb[160];
	const char *file = tmp_path(fb, sizeof(fb), "a-file");
	const char *bad[] = {"-np", "2", "--oversubscribe", train_prog(), "--mpi", "--threads",
			     "0",   NULL};
	struct result r;

	(void)state;
	run_argv(&r, mpirun, bad);
	expect_usage(&r, "--threads: '0'");
	write_file(file, "not a folder\n");
	snprintf(sb, sizeof(sb), "%s/sub", file);
	run_mpi(&r, sb, NULL, NULL);
	expect(&r, 1, "--out");
	/*
	 * A file error on rank 0 alone (an earlier run's best.lgw it cannot
	 * remove, here a folder with a file in it) ends both ranks, with
	 * validation on: none waits in a collective the other has left.
	 */
	{
		char dir[128], best[160], in[192];

		tmp_path(dir, sizeof(dir), "stale");
		snprintf(best, sizeof(best), "%s/best.lgw", dir);
		snprintf(in, sizeof(in), "%s/keep", best);
		assert_int_equal(mkdir(dir, 0700), 0);
		assert_int_equal(mkdir(best, 0700), 0);
		write_file(in, "x\n");
		run_mpi(&r, dir, NULL, NULL);
		expect(&r, 1, "best.lgw");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_as_threads),
		cmocka_unit_test(test_resume_across_mpirun),
		cmocka_unit_test(test_errors),
	};

#ifndef LOOM_HAVE_MPI
	fprintf(stderr, "skipped: this build has no MPI (meson option mpi, libopenmpi-dev)\n");
	return 77;
#endif
	if (!precond_find_program("mpirun", mpirun, sizeof(mpirun))) {
		fprintf(stderr, "skipped: no mpirun on the PATH (openmpi-bin)\n");
		return 77;
	}
	/* CI runs as root; single-copy shared memory needs ptrace, which containers deny */
	setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
	setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
	setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
	/*
	 * Under AddressSanitizer the children run with leak detection off: Open
	 * MPI does not free what its components allocate (MPI_Finalize leaves it,
	 * and its dlopened components show as unknown modules that no
	 * suppression can name). Memory errors still abort them, and this
	 * binary's own leaks are still checked (its options were read at start);
	 * loom-train's single-process leaks are checked by train_cli.
	 */
	{
		const char *asan = getenv("ASAN_OPTIONS");

		if (asan) {
			char buf[1024];

			snprintf(buf, sizeof(buf), "%s:detect_leaks=0", asan);
			setenv("ASAN_OPTIONS", buf, 1);
		}
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
