/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scripts/bundle.sh: the folder it makes holds loom-train, loom-replay and
 * loom-gen with every library they load but the C library's own, and
 * data/. Through its wrapper, in an environment with nothing but PATH, the
 * programs find all of those in the folder (ldd under the bundle's library
 * path resolves every other library there), generate a workload, replay it
 * with the shipped model, and train a tiny model; the wrapper gives the
 * library path to the dynamic loader, not to the programs' environment.
 * Refusals: a folder that is not a bundle, a build folder without the
 * programs, a program the bundle lacks.
 *
 * The build folder is $LOOM_BUILDDIR, the script $LOOM_SRCDIR/scripts/.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/cli_harness.h"

static int setup(void **state)
{
	(void)state;
	return cli_tmpdir_make("/tmp/loom-bundle-XXXXXX");
}

static int teardown(void **state)
{
	(void)state;
	return cli_tmpdir_remove();
}

static const char *builddir(void)
{
	const char *p = getenv("LOOM_BUILDDIR");

	return p && *p ? p : ".";
}

/* bash scripts/bundle.sh --build BUILD OUT */
static void bundle(struct result *r, const char *build, const char *out)
{
	char script[4096];
	const char *args[] = {script, "--build", build, out, NULL};

	snprintf(script, sizeof(script), "%s/scripts/bundle.sh", srcdir());
	run_argv(r, "/bin/bash", args);
}

/* The C library's own objects, which a bundle leaves to the host. */
static bool is_libc(const char *name)
{
	static const char *const libc[] = {"linux-vdso", "ld-linux", "libc.so",        "libm.so",
					   "libpthread", "libdl.so", "librt.so",       "libresolv",
					   "libutil.so", "libmvec",  "/lib64/ld-linux"};

	for (size_t i = 0; i < sizeof(libc) / sizeof(libc[0]); i++)
		if (strncmp(name, libc[i], strlen(libc[i])) == 0)
			return true;
	return false;
}

/* Every library prog loads, as ldd resolves it under the bundle's path, is libc's or in lib. */
static void check_resolved(const char *b, const char *prog)
{
	char cmd[4096];
	const char *args[] = {"-c", cmd, NULL};
	struct result r;
	char lib[4096];
	size_t nlib;
	int seen = 0;

	snprintf(cmd, sizeof(cmd), "LD_LIBRARY_PATH='%s/lib' ldd '%s/bin/%s'", b, b, prog);
	snprintf(lib, sizeof(lib), "%s/lib/", b);
	nlib = strlen(lib);
	run_argv(&r, "/bin/sh", args);
	if (r.status != 0)
		dump_fail(&r, "ldd of a bundled program");
	for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n")) {
		char *arrow = strstr(line, "=> ");

		while (*line == ' ' || *line == '\t')
			line++;
		if (strstr(line, "not found"))
			fail_msg("%s: %s", prog, line);
		if (!arrow || is_libc(line))
			continue;
		if (strncmp(arrow + 3, lib, nlib) != 0)
			fail_msg("%s loads %s from outside the bundle", prog, line);
		seen++;
	}
	print_message("%s: %d libraries from the bundle\n", prog, seen);
	result_free(&r);
}

static void test_bundle_runs(void **state)
{
	char b[512], trace[512], out[512], run[600], train[512];
	static const char *const progs[] = {"loom-train", "loom-replay", "loom-gen"};
	struct result r;

	(void)state;
	tmp_path(b, sizeof(b), "b");
	tmp_path(trace, sizeof(trace), "t.loom");
	tmp_path(out, sizeof(out), "replay");
	tmp_path(train, sizeof(train), "train");
	snprintf(run, sizeof(run), "%s/loom", b);
	bundle(&r, builddir(), b);
	expect(&r, 0, "programs");
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		check_resolved(b, progs[i]);

	/* nothing but PATH in the environment: the bundle alone tells where data and libraries are */
	{
		const char *args[] = {"-i",     "PATH=/usr/bin:/bin",
				      run,      "loom-gen",
				      "--out",  trace,
				      "--jobs", "2",
				      "--seed", "3",
				      NULL};

		run_argv(&r, "/usr/bin/env", args);
		expect(&r, 0, "wrote");
	}
	{
		const char *args[] = {
			"-i",         "PATH=/usr/bin:/bin", run,     "loom-replay", "-t", trace,
			"-p",         "gnn,sebf",           "-m",    "ideal",       "-b", "none",
			"--no-plots", "--no-progress",      "--out", out,           NULL};

		run_argv(&r, "/usr/bin/env", args);
		expect(&r, 0, NULL);
	}
	{
		const char *args[] = {"-i",
				      "PATH=/usr/bin:/bin",
				      run,
				      "loom-train",
				      "--out",
				      train,
				      "--iters",
				      "1",
				      "--imitate-iters",
				      "1",
				      "--rollouts",
				      "2",
				      "--threads",
				      "1",
				      "--jobs-min",
				      "2",
				      "--jobs-max",
				      "2",
				      "--eval-every",
				      "0",
				      "--hidden",
				      "8",
				      "--layers",
				      "1",
				      "--emb",
				      "8",
				      "--heads",
				      "1",
				      "--mlp",
				      "8",
				      "--no-progress",
				      NULL};

		run_argv(&r, "/usr/bin/env", args);
		expect(&r, 0, "done");
	}

	/*
	 * The wrapper's environment, seen by a program put in bin/: LOOM_DATA
	 * on the bundle's data/ (this machine's programs would also find data/
	 * through the source path compiled into them; another host's would
	 * not), and no LD_LIBRARY_PATH, which the programs' own children
	 * (gnuplot) would inherit: the library path goes to the loader alone.
	 */
	{
		char cmd[2048], want[1200];
		const char *sh[] = {"-c", cmd, NULL};
		const char *data[] = {"-i",       "PATH=/usr/bin:/bin", run,
				      "printenv", "LOOM_DATA",          NULL};
		const char *ld[] = {"-i",       "PATH=/usr/bin:/bin", run,
				    "printenv", "LD_LIBRARY_PATH",    NULL};

		snprintf(cmd, sizeof(cmd), "cp /usr/bin/printenv '%s/bin/'", b);
		run_argv(&r, "/bin/sh", sh);
		expect(&r, 0, NULL);
		run_argv(&r, "/usr/bin/env", data);
		snprintf(want, sizeof(want), "%s/data\n", b);
		if (r.status != 0 || strcmp(r.out, want) != 0)
			dump_fail(&r, "LOOM_DATA on the bundle's data/");
		result_free(&r);
		run_argv(&r, "/usr/bin/env", ld);
		if (r.status != 1 || r.out[0])
			dump_fail(&r, "no LD_LIBRARY_PATH in a bundled program's environment");
		result_free(&r);
		snprintf(want, sizeof(want), "%s/data/models/gnn-default.lgw", b);
		assert_int_equal(access(want, R_OK), 0);
	}

	/* making it again over itself is fine */
	bundle(&r, builddir(), b);
	expect(&r, 0, "programs");
}

static void test_bundle_refusals(void **state)
{
	char other[512], file[512], b[512], run[600];
	struct result r;

	(void)state;
	tmp_path(other, sizeof(other), "other");
	tmp_path(file, sizeof(file), "other/keep");
	tmp_path(b, sizeof(b), "b2");
	snprintf(run, sizeof(run), "%s/loom", b);
	assert_int_equal(mkdir(other, 0700), 0);
	write_file(file, "mine\n");
	bundle(&r, builddir(), other);
	expect(&r, 1, "is not a bundle");
	assert_int_equal(access(file, F_OK), 0);

	bundle(&r, "/nonexistent-build", b);
	expect(&r, 1, "not built");

	bundle(&r, builddir(), b);
	expect(&r, 0, "programs");
	{
		const char *args[] = {"loomd", NULL};

		run_argv(&r, run, args);
		expect(&r, 2, "PROGRAM one of");
	}
	{
		const char *args[] = {"../loom", NULL};

		run_argv(&r, run, args);
		expect(&r, 2, "PROGRAM one of");
	}
	{
		const char *args[] = {"..", NULL};

		run_argv(&r, run, args);
		expect(&r, 2, "PROGRAM one of");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bundle_runs),
		cmocka_unit_test(test_bundle_refusals),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
