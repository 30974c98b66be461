/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom-gen as a user runs it: --help, exit status 2 and a message naming the
 * flag for a bad command line, a message naming the file for missing input,
 * and a run: a Loom trace that is the same for the same seed, differs for
 * another, and replays under loom-replay; the same for the random DAG family
 * (--dags random:...), and exit 2 naming the key and value for a bad spec.
 *
 * The programs come from $LOOM_GEN and $LOOM_REPLAY, bundled data from
 * $LOOM_SRCDIR; meson sets all three. Every run writes its stdout and stderr
 * to files in a fresh folder under /tmp (removed at the end) and is killed
 * if it hangs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/cli_harness.h"

static int setup(void **state)
{
	(void)state;
	return cli_tmpdir_make("/tmp/loom-gen-cli-XXXXXX");
}

static int teardown(void **state)
{
	(void)state;
	return cli_tmpdir_remove();
}

static void test_help(void **state)
{
	static const char *const words[] = {
		"Usage: loom-gen", "--out",         "--jobs",       "--load",   "--seed",
		"--hosts",         "--rate-bps",    "--topo",       "--dags",   "--fb",
		"--compute-scale", "--bytes-scale", "--weight-max", "--help",   "random[:min=N]",
		"layers=",         "fanin=",        "count=",       "task-ms=",
	};
	struct result r;

	(void)state;
	gen(&r, "--help", NULL);
	if (r.status != 0)
		dump_fail(&r, "--help: expected exit 0");
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strstr(r.out, words[i]))
			fail_msg("--help does not mention %s:\n%s", words[i], r.out);
	result_free(&r);
	gen(&r, "-h", NULL);
	expect(&r, 0, "--out");
}

static void test_bad_flags(void **state)
{
	char fb[128], jb[128];
	const char *f = tmp_path(fb, sizeof(fb), "flags.loom");
	const char *topo = tmp_path(jb, sizeof(jb), "topo.json");
	struct result r;

	(void)state;
	gen(&r, "--out", f, "--jobs", "0", NULL);
	expect_usage(&r, "--jobs: '0'");
	gen(&r, "--out", f, "--jobs", "many", NULL);
	expect_usage(&r, "--jobs: 'many'");
	gen(&r, "--out", f, "--load", "0", NULL);
	expect_usage(&r, "--load: '0'");
	gen(&r, "--out", f, "--load", "-0.5", NULL);
	expect_usage(&r, "--load: '-0.5'");
	gen(&r, "--out", f, "--load", "abc", NULL);
	expect_usage(&r, "--load: 'abc'");
	gen(&r, "--out", f, "--seed", "x", NULL);
	expect_usage(&r, "--seed: 'x'");
	gen(&r, "--out", f, "--hosts", "0", NULL);
	expect_usage(&r, "--hosts: '0'");
	gen(&r, "--out", f, "--bytes-scale", "0", NULL);
	expect_usage(&r, "--bytes-scale: '0'");
	gen(&r, "--out", f, "--weight-max", "0.5", NULL);
	expect_usage(&r, "--weight-max: '0.5'");
	gen(&r, "--out", f, "--bogus", NULL);
	if (r.status != 2 || !strstr(r.err, "--bogus") || !strstr(r.err, "loom-gen --help"))
		dump_fail(&r, "--bogus: expected exit 2, the option and a pointer to --help");
	result_free(&r);
	gen(&r, "--out", f, "--jobs", NULL);
	expect_usage(&r, "--jobs");
	gen(&r, "--jobs", "3", NULL);
	expect_usage(&r, "--out is required");
	gen(&r, "--out", f, "extra", NULL);
	expect_usage(&r, "unexpected argument 'extra'");
	write_file(topo, "{\"hosts\": 8}");
	gen(&r, "--out", f, "--topo", topo, "--hosts", "8", NULL);
	expect_usage(&r, "--topo cannot be combined");
	/* None of these wrote the trace. */
	assert_int_equal(access(f, F_OK), -1);
}

/* Fails unless the trace at path is a Loom trace of njobs jobs on nhosts hosts. */
static char *check_trace(const char *path, unsigned njobs, unsigned nhosts, size_t *ret_len)
{
	char hdr[64];
	char *t = slurp(path, ret_len);
	const char *s;
	unsigned jobs = 0;

	if (!t)
		fail_msg("%s was not written", path);
	/* The header is the first line that is not a comment. */
	for (s = t; *s == '#'; s = strchr(s, '\n') + 1)
		assert_non_null(strchr(s, '\n'));
	snprintf(hdr, sizeof(hdr), "loom-trace 1 hosts %u\n", nhosts);
	if (strncmp(s, hdr, strlen(hdr)) != 0)
		fail_msg("%s does not start with the Loom header %s", path, hdr);
	assert_true(strncmp(t, "# Loom trace", 12) == 0);
	for (s = t; (s = strstr(s, "\njob ")) != NULL; s++)
		jobs++;
	assert_int_equal(jobs, njobs);
	assert_true(has_line(t, "coflow "));
	assert_true(has_line(t, "flow "));
	return t;
}

static void test_run(void **state)
{
	char ab[128], bb[128], cb[128], db[128], eb[128], ob[128], msg[256];
	const char *a = tmp_path(ab, sizeof(ab), "a.loom");
	const char *b = tmp_path(bb, sizeof(bb), "b.loom");
	const char *c = tmp_path(cb, sizeof(cb), "c.loom");
	const char *d = tmp_path(db, sizeof(db), "d.loom");
	const char *topo = tmp_path(eb, sizeof(eb), "topo.json");
	const char *o = tmp_path(ob, sizeof(ob), "out-replay");
	char dags_src[512], fb_src[512];
	char *ta, *tb;
	size_t la, lb;
	struct result r;

	(void)state;
	gen(&r, "--out", a, "--jobs", "20", "--load", "0.7", "--seed", "3", "--hosts", "16", NULL);
	snprintf(msg, sizeof(msg), "wrote %s: 20 jobs", a);
	expect(&r, 0, msg);
	ta = check_trace(a, 20, 16, &la);

	/* Same seed, same bytes. */
	gen(&r, "--out", b, "--jobs", "20", "--load", "0.7", "--seed", "3", "--hosts", "16", NULL);
	expect(&r, 0, NULL);
	tb = check_trace(b, 20, 16, &lb);
	assert_true(la == lb && memcmp(ta, tb, la) == 0);
	free(tb);
	/* The bundled files named explicitly are the ones found by default. */
	snprintf(dags_src, sizeof(dags_src), "%s/data/tpch/dags.txt", srcdir());
	snprintf(fb_src, sizeof(fb_src), "%s/data/fb2010/FB2010-1Hr-150-0.txt", srcdir());
	gen(&r, "--out", b, "--jobs", "20", "--load", "0.7", "--seed", "3", "--hosts", "16",
	    "--dags", dags_src, "--fb", fb_src, NULL);
	expect(&r, 0, NULL);
	tb = check_trace(b, 20, 16, &lb);
	assert_true(la == lb && memcmp(ta, tb, la) == 0);
	free(tb);
	/* '-' writes the same trace to stdout and the summary to stderr. */
	gen(&r, "--out", "-", "--jobs", "20", "--load", "0.7", "--seed", "3", "--hosts", "16",
	    NULL);
	if (r.status != 0 || strlen(r.out) != la || memcmp(r.out, ta, la) != 0 ||
	    !strstr(r.err, "20 jobs"))
		dump_fail(&r, "--out -: expected the trace of --out FILE on stdout");
	result_free(&r);

	/* Another seed, another trace. */
	gen(&r, "--out", c, "--jobs", "20", "--load", "0.7", "--seed", "4", "--hosts", "16", NULL);
	expect(&r, 0, "20 jobs");
	tb = check_trace(c, 20, 16, &lb);
	assert_false(la == lb && memcmp(ta, tb, la) == 0);
	free(tb);
	free(ta);

	/* A topology file instead of --hosts. */
	write_file(topo, "{\"hosts\": 8}");
	gen(&r, "--out", d, "--jobs", "3", "--topo", topo, NULL);
	expect(&r, 0, "3 jobs");
	free(check_trace(d, 3, 8, NULL));

	/* The trace replays: format detected, 20 jobs. */
	replay(&r, "--trace", a, "--out", o, "--no-plots", "--policy", "fifo,fair", NULL);
	if (r.status != 0 || !strstr(r.err, "(loom): 20 jobs") || !strstr(r.out, "20 jobs in fifo"))
		dump_fail(&r, "loom-replay of the generated trace");
	result_free(&r);
}

static void test_random_bad_specs(void **state)
{
	char fb[128];
	const char *f = tmp_path(fb, sizeof(fb), "bad-random.loom");
	struct result r;

	(void)state;
	gen(&r, "--out", f, "--dags", "random:foo=1", NULL);
	expect_usage(&r, "unknown key 'foo'");
	gen(&r, "--out", f, "--dags", "random:min=5:max=3", NULL);
	expect_usage(&r, "min=5 exceeds max=3");
	gen(&r, "--out", f, "--dags", "random:fanin=x", NULL);
	expect_usage(&r, "fanin=x: 'x' is not an integer");
	gen(&r, "--out", f, "--dags", "random:layers=9..4", NULL);
	expect_usage(&r, "layers=9..4");
	gen(&r, "--out", f, "--dags", "random:count=0", NULL);
	expect_usage(&r, "count=0");
	gen(&r, "--out", f, "--dags", "random:min=3:", NULL);
	expect_usage(&r, "--dags: random DAG spec 'random:min=3:'");
	assert_int_equal(access(f, F_OK), -1);
}

/* The number of "coflow " lines of each job of trace t, in order: between min and max. */
static void check_job_coflows(const char *t, unsigned njobs, unsigned min, unsigned max)
{
	const char *s = strstr(t, "\njob ");
	unsigned jobs = 0;

	assert_non_null(s);
	while (s) {
		const char *next = strstr(s + 1, "\njob ");
		unsigned n = 0;

		for (const char *c = s; (c = strstr(c, "\ncoflow ")) && (!next || c < next); c++)
			n++;
		if (n < min || n > max)
			fail_msg("job %u has %u coflows, not in [%u, %u]", jobs, n, min, max);
		jobs++;
		s = next;
	}
	assert_int_equal(jobs, njobs);
}

static void test_random_run(void **state)
{
	char ab[128], bb[128], cb[128], ob[128];
	const char *a = tmp_path(ab, sizeof(ab), "ra.loom");
	const char *b = tmp_path(bb, sizeof(bb), "rb.loom");
	const char *c = tmp_path(cb, sizeof(cb), "rc.loom");
	const char *o = tmp_path(ob, sizeof(ob), "out-random");
	const char *spec = "random:min=3:max=8:layers=2..4:fanin=2:count=50:seed=5";
	char *ta, *tb;
	size_t la, lb;
	struct result r;

	(void)state;
	gen(&r, "--out", a, "--jobs", "15", "--seed", "3", "--hosts", "16", "--dags", spec, NULL);
	expect(&r, 0, "15 jobs");
	ta = check_trace(a, 15, 16, &la);
	check_job_coflows(ta, 15, 3, 8);
	/* The same spec and seed: the same trace. */
	gen(&r, "--out", b, "--jobs", "15", "--seed", "3", "--hosts", "16", "--dags", spec, NULL);
	expect(&r, 0, NULL);
	tb = check_trace(b, 15, 16, &lb);
	assert_true(la == lb && memcmp(ta, tb, la) == 0);
	free(tb);
	/* Another family seed, same --seed: another trace. */
	gen(&r, "--out", c, "--jobs", "15", "--seed", "3", "--hosts", "16", "--dags",
	    "random:min=3:max=8:layers=2..4:fanin=2:count=50:seed=6", NULL);
	expect(&r, 0, "15 jobs");
	tb = check_trace(c, 15, 16, &lb);
	check_job_coflows(tb, 15, 3, 8);
	assert_false(la == lb && memcmp(ta, tb, la) == 0);
	free(tb);
	free(ta);
	/* The defaults: 2..30 coflows a job. */
	gen(&r, "--out", c, "--jobs", "10", "--hosts", "16", "--dags", "random", NULL);
	expect(&r, 0, "10 jobs");
	tb = check_trace(c, 10, 16, NULL);
	check_job_coflows(tb, 10, 2, 30);
	free(tb);
	/* The trace replays. */
	replay(&r, "--trace", a, "--out", o, "--no-plots", "--policy", "fifo,fair", NULL);
	if (r.status != 0 || !strstr(r.err, "(loom): 15 jobs") || !strstr(r.out, "15 jobs in fifo"))
		dump_fail(&r, "loom-replay of the trace generated from a random family");
	result_free(&r);
}

static void test_missing_files(void **state)
{
	char fb[128], msg[256];
	const char *f = tmp_path(fb, sizeof(fb), "missing.loom");
	struct result r;

	(void)state;
	gen(&r, "--out", f, "--jobs", "2", "--dags", "/nonexistent/dags.txt", NULL);
	expect(&r, 1, "/nonexistent/dags.txt: No such file");
	gen(&r, "--out", f, "--jobs", "2", "--fb", "/nonexistent/fb.txt", NULL);
	expect(&r, 1, "/nonexistent/fb.txt: No such file");
	gen(&r, "--out", f, "--jobs", "2", "--topo", "/nonexistent/topo.json", NULL);
	expect(&r, 1, "/nonexistent/topo.json: No such file");
	assert_int_equal(access(f, F_OK), -1);
	gen(&r, "--out", "/nonexistent/dir/x.loom", "--jobs", "2", NULL);
	snprintf(msg, sizeof(msg), "cannot write %s", "/nonexistent/dir/x.loom");
	expect(&r, 1, msg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help),       cmocka_unit_test(test_bad_flags),
		cmocka_unit_test(test_run),        cmocka_unit_test(test_random_bad_specs),
		cmocka_unit_test(test_random_run), cmocka_unit_test(test_missing_files),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
