/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom-train as a user runs it: --help; exit status 2 and a message naming
 * the flag for a bad command line (bad values, unknown flags, a stray
 * argument, flags that contradict each other); exit 1 and a message naming
 * the file for missing input, an unusable --out or --save, and a --resume
 * that does not fit; a tiny run that writes every output and copies the best
 * model to --save; --time-limit stopping after an iteration with exit 3 and
 * a checkpoint, and --resume finishing it into the same model as an
 * uninterrupted run; a warning when --rollouts leaves workers idle or
 * uneven.
 *
 * Runs are tiny (two-job episodes, a model of width 8, one thread, a few
 * iterations): each takes about a second. The program comes from
 * $LOOM_TRAIN, bundled data from $LOOM_SRCDIR; meson sets both. Every run
 * writes its stdout and stderr to files in a fresh folder under /tmp
 * (removed at the end) and is killed if it hangs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/cli_harness.h"

static const char *train_prog(void)
{
	const char *p = getenv("LOOM_TRAIN");

	return p && *p ? p : "controlplane/learn/loom-train";
}

/* loom-train --no-progress ARGS... (NULL-terminated) */
__attribute__((sentinel)) static void train(struct result *r, ...)
{
	va_list ap;

	va_start(ap, r);
	run_va(r, train_prog(), "--no-progress", ap);
	va_end(ap);
}

/* A tiny training run's flags, then the run's own (NULL-terminated). */
#define TINY                                                                                       \
	"--imitate-iters", "1", "--rollouts", "2", "--threads", "1", "--jobs-min", "2",            \
		"--jobs-max", "2", "--eval-every", "1", "--eval-workloads", "1", "--eval-jobs",    \
		"2", "--hidden", "8", "--layers", "1", "--emb", "8", "--heads", "1", "--mlp", "8"

static int setup(void **state)
{
	(void)state;
	return cli_tmpdir_make("/tmp/loom-train-cli-XXXXXX");
}

static int teardown(void **state)
{
	(void)state;
	return cli_tmpdir_remove();
}

static bool exists(const char *dir, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* Lines of a file (0 if unreadable). */
static size_t count_lines(const char *path)
{
	char *text = slurp(path, NULL);
	size_t n = 0;

	for (const char *s = text; s && *s; s++)
		n += *s == '\n';
	free(text);
	return n;
}

static void test_help(void **state)
{
	static const char *const words[] = {
		"Usage: loom-train",
		"--out",
		"--save",
		"--iters",
		"--imitate-iters",
		"--teacher",
		"--seed",
		"--resume",
		"--init",
		"--time-limit",
		"--threads",
		"--hosts",
		"--dags",
		"--fb",
		"--rollouts",
		"--eval-every",
		"--hidden",
		"--no-progress",
		"--help",
		"--dagger",
		"--label-prob",
		"--imitate-top",
		"--prior",
		"--prior-scale",
	};
	struct result r;

	(void)state;
	train(&r, "--help", NULL);
	if (r.status != 0)
		dump_fail(&r, "--help: expected exit 0");
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strstr(r.out, words[i]))
			fail_msg("--help does not mention %s:\n%s", words[i], r.out);
	assert_string_equal(r.err, "");
	result_free(&r);
	train(&r, "-h", NULL);
	expect(&r, 0, "--time-limit");
}

static void test_bad_flags(void **state)
{
	char ob[128];
	const char *out = tmp_path(ob, sizeof(ob), "never");
	struct result r;

	(void)state;
	train(&r, "--out", out, "--iters", "0", NULL);
	expect_usage(&r, "--iters: '0'");
	train(&r, "--out", out, "--iters", "many", NULL);
	expect_usage(&r, "--iters: 'many'");
	train(&r, "--out", out, "--rollouts", "1", NULL);
	expect_usage(&r, "--rollouts: '1'");
	train(&r, "--out", out, "--threads", "17", NULL);
	expect_usage(&r, "--threads: '17'");
	train(&r, "--out", out, "--lr", "0", NULL);
	expect_usage(&r, "--lr: '0'");
	train(&r, "--out", out, "--rl-lr", "2", NULL);
	expect_usage(&r, "--rl-lr: '2'");
	train(&r, "--out", out, "--load-min", "-1", NULL);
	expect_usage(&r, "--load-min: '-1'");
	train(&r, "--out", out, "--seed", "-3", NULL);
	expect_usage(&r, "--seed: '-3'");
	train(&r, "--out", out, "--time-limit", "0", NULL);
	expect_usage(&r, "--time-limit: '0'");
	train(&r, "--out", out, "--time-limit", "soon", NULL);
	expect_usage(&r, "--time-limit: 'soon'");
	train(&r, "--out", out, "--hosts", "1", NULL);
	expect_usage(&r, "--hosts: '1'");
	train(&r, "--out", out, "--hidden", "0", NULL);
	expect_usage(&r, "--hidden: '0'");
	train(&r, "--out", out, "--iters", "3x", NULL);
	expect_usage(&r, "--iters: '3x'");
	train(&r, "--out", out, "--bogus", NULL);
	expect_usage(&r, "bogus");
	train(&r, "--out", out, "--iters", NULL);
	expect_usage(&r, "iters");
	train(&r, "--out", out, "stray", NULL);
	expect_usage(&r, "unexpected argument 'stray'");
	/* flags that contradict each other */
	train(&r, "--out", out, "--jobs-min", "5", "--jobs-max", "4", NULL);
	expect_usage(&r, "--jobs-max 4 is below --jobs-min 5");
	train(&r, "--out", out, "--iters", "2", "--imitate-iters", "3", NULL);
	expect_usage(&r, "--imitate-iters 3 exceeds --iters 2");
	train(&r, "--out", out, "--init", out, "--hidden", "8", NULL);
	expect_usage(&r, "--init takes the model's shape");
	train(&r, "--out", out, "--teacher", "nosuch", NULL);
	expect_usage(&r, "--teacher: unknown policy 'nosuch'");
	train(&r, "--out", out, "--teacher", "sebf:bogus=1", NULL);
	expect_usage(&r, "--teacher");
	train(&r, "--out", out, "--prior", "fifo", NULL);
	expect_usage(&r, "--prior: unknown heuristic 'fifo'");
	train(&r, "--out", out, "--prior-scale", "-1", NULL);
	expect_usage(&r, "--prior-scale: '-1'");
	train(&r, "--out", out, "--label-prob", "0", NULL);
	expect_usage(&r, "--label-prob: '0'");
	train(&r, "--out", out, "--label-prob", "1.5", NULL);
	expect_usage(&r, "--label-prob: '1.5'");
	train(&r, "--out", out, "--imitate-top", "x", NULL);
	expect_usage(&r, "--imitate-top: 'x'");
	train(&r, "--out", out, "--agree-weight", "2", NULL);
	expect_usage(&r, "--agree-weight: '2'");
	train(&r, "--out", out, "--rates", "fast", NULL);
	expect_usage(&r, "--rates: 'fast' is not auto, madd or priority");
	train(&r, "--out", out, "--init", out, "--prior", "sebf", NULL);
	expect_usage(&r, "--init takes the model's shape, prior and inputs");
	train(&r, "--out", out, "--init", out, "--place-features", NULL);
	expect_usage(&r, "--prior-scale, --place-features");
	/* none of them started: nothing was written */
	assert_int_equal(access(out, F_OK), -1);
}

static void test_missing_input(void **state)
{
	char ob[128], fb[128], nb[128], sb[160];
	const char *out = tmp_path(ob, sizeof(ob), "missing");
	const char *file = tmp_path(fb, sizeof(fb), "a-file");
	const char *none = tmp_path(nb, sizeof(nb), "none.txt");
	struct result r;

	(void)state;
	write_file(file, "not a folder\n");
	train(&r, "--out", out, "--iters", "2", TINY, "--dags", none, NULL);
	expect(&r, 1, none);
	train(&r, "--out", out, "--iters", "2", TINY, "--fb", none, NULL);
	expect(&r, 1, none);
	/* --out under a regular file */
	snprintf(sb, sizeof(sb), "%s/sub", file);
	train(&r, "--out", sb, "--iters", "2", TINY, NULL);
	expect(&r, 1, "--out");
	/* --init that is not there (no shape flags with --init) */
	train(&r, "--out", out, "--iters", "2", "--imitate-iters", "1", "--jobs-min", "2",
	      "--jobs-max", "2", "--init", none, NULL);
	expect(&r, 1, none);
	/* --resume with no checkpoint in --out */
	train(&r, "--out", out, "--iters", "2", TINY, "--resume", NULL);
	expect(&r, 1, "checkpoint.state");
}

static void test_run_and_save(void **state)
{
	char ob[128], sb[128], bb[160], nb[160];
	const char *out = tmp_path(ob, sizeof(ob), "run");
	const char *save = tmp_path(sb, sizeof(sb), "saved.lgw");
	static const char *const outputs[] = {"final.lgw",        "best.lgw",     "checkpoint.lgw",
					      "checkpoint.state", "learning.csv", "learning.gp"};
	struct result r;
	char *a, *b;
	size_t na, nb_len;

	(void)state;
	train(&r, "--out", out, "--iters", "2", TINY, "--save", save, NULL);
	if (r.status != 0 || !strstr(r.err, "training 2 iterations (1 imitating wsrjf)") ||
	    !strstr(r.err, "iteration 2/2") || !strstr(r.err, "as ") || !strstr(r.err, save))
		dump_fail(&r, "a tiny run: expected exit 0, both iterations and the --save line");
	result_free(&r);
	for (size_t i = 0; i < sizeof(outputs) / sizeof(outputs[0]); i++)
		if (!exists(out, outputs[i]))
			fail_msg("%s/%s was not written", out, outputs[i]);
	/* header + one line per iteration */
	snprintf(bb, sizeof(bb), "%s/learning.csv", out);
	assert_int_equal(count_lines(bb), 3);
	/* --save is a copy of the best model */
	snprintf(bb, sizeof(bb), "%s/best.lgw", out);
	a = slurp(bb, &na);
	b = slurp(save, &nb_len);
	assert_non_null(a);
	assert_non_null(b);
	assert_true(na > 0);
	assert_int_equal(na, nb_len);
	assert_memory_equal(a, b, na);
	free(a);
	free(b);
	/* the saved model is a start for another run */
	snprintf(nb, sizeof(nb), "%s-init", out);
	train(&r, "--out", nb, "--iters", "1", "--imitate-iters", "1", "--threads", "1",
	      "--jobs-min", "2", "--jobs-max", "2", "--eval-every", "0", "--init", save, NULL);
	expect(&r, 0, "done: ");
	/* expert iteration on a residual model: the saved model keeps its prior */
	snprintf(nb, sizeof(nb), "%s-ei", out);
	snprintf(bb, sizeof(bb), "%s-ei/final.lgw", out);
	train(&r, "--out", nb, "--iters", "1", "--imitate-iters", "1", "--threads", "1",
	      "--jobs-min", "2", "--jobs-max", "2", "--eval-every", "0", "--prior", "sebf",
	      "--dagger", "--label-prob", "1", "--imitate-top", "3", "--teacher",
	      "lookahead:base=gnn", NULL);
	if (r.status != 0 || !strstr(r.err, "imitating lookahead:base=gnn on the model's states"))
		dump_fail(&r, "a DAgger run: expected exit 0 and the teacher named");
	result_free(&r);
	a = slurp(bb, &na);
	assert_non_null(a);
	assert_true(na > 52);
	assert_int_equal(a[8], 2); /* a version 2 weights file: it has a prior */
	free(a);
	/* --save where it cannot be written: the run fails and says so */
	snprintf(nb, sizeof(nb), "%s/no/such/dir/x.lgw", out);
	snprintf(bb, sizeof(bb), "%s-nosave", out);
	train(&r, "--out", bb, "--iters", "1", "--imitate-iters", "1", "--threads", "1",
	      "--jobs-min", "2", "--jobs-max", "2", "--eval-every", "0", "--hidden", "8", "--save",
	      nb, NULL);
	if (r.status != 1 || !strstr(r.err, "--save") || !strstr(r.err, nb))
		dump_fail(&r, "an unwritable --save: expected exit 1 naming it");
	result_free(&r);
}

static void test_time_limit_and_resume(void **state)
{
	char ob[128], wb[128], pa[160], pb[160];
	const char *whole = tmp_path(wb, sizeof(wb), "whole");
	const char *out = tmp_path(ob, sizeof(ob), "limited");
	struct result r;
	char *a, *b;
	size_t na, nb;

	(void)state;
	/* the run without a stop */
	train(&r, "--out", whole, "--iters", "3", TINY, NULL);
	expect(&r, 0, "iteration 3/3");
	/* a limit any iteration exceeds: stopped after the first, exit 3 */
	train(&r, "--out", out, "--iters", "3", TINY, "--time-limit", "0.001", NULL);
	if (r.status != 3 || !strstr(r.err, "time limit reached after iteration 1") ||
	    strstr(r.err, "iteration 2/3"))
		dump_fail(&r, "--time-limit: expected exit 3 after iteration 1");
	result_free(&r);
	assert_true(exists(out, "checkpoint.state"));
	assert_true(exists(out, "checkpoint.lgw"));
	assert_true(exists(out, "final.lgw"));
	snprintf(pa, sizeof(pa), "%s/learning.csv", out);
	assert_int_equal(count_lines(pa), 2);
	/* a resume that does not fit the checkpoint changes nothing */
	train(&r, "--out", out, "--iters", "3", TINY, "--seed", "5", "--resume", NULL);
	if (r.status != 1 || !strstr(r.err, "--resume") || !strstr(r.err, "--seed 1") ||
	    !strstr(r.err, "--seed 5"))
		dump_fail(&r, "--resume with another seed: expected exit 1 naming both");
	result_free(&r);
	assert_int_equal(count_lines(pa), 2);
	/* --resume finishes it: iterations 2 and 3 only */
	train(&r, "--out", out, "--iters", "3", TINY, "--resume", NULL);
	if (r.status != 0 || strstr(r.err, "iteration 1/3") || !strstr(r.err, "iteration 2/3") ||
	    !strstr(r.err, "iteration 3/3"))
		dump_fail(&r, "--resume: expected exit 0 with iterations 2 and 3");
	result_free(&r);
	assert_int_equal(count_lines(pa), 4);
	/* ... into the model the uninterrupted run made, to the byte */
	snprintf(pa, sizeof(pa), "%s/final.lgw", whole);
	snprintf(pb, sizeof(pb), "%s/final.lgw", out);
	a = slurp(pa, &na);
	b = slurp(pb, &nb);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(na, nb);
	assert_memory_equal(a, b, na);
	free(a);
	free(b);
	/* the checkpoint is now at iteration 3: fewer --iters cannot resume it */
	train(&r, "--out", out, "--iters", "2", TINY, "--resume", NULL);
	expect(&r, 1, "past --iters 2");
}

/*
 * Workers that --rollouts leaves idle or uneven in reinforcement: a warning
 * naming the fix, and the run goes on; none when the rollouts divide evenly
 * or when no iteration is reinforcement.
 */
static void test_uneven_rollouts(void **state)
{
	static const char *const cases[][4] = {
		/* threads, rollouts, imitate-iters, expected words (NULL: no warning) */
		{"3", "2", "0", "1 of the workers get no rollout"},
		{"3", "4", "0", "1 of the workers run one rollout more"},
		{"2", "4", "0", NULL},
		{"3", "2", "1", NULL},
	};
	char ob[128];
	struct result r;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *out = tmp_path(ob, sizeof(ob), i % 2 ? "uneven-b" : "uneven-a");

		train(&r, "--out", out, "--iters", "1", "--imitate-iters", cases[i][2], "--threads",
		      cases[i][0], "--rollouts", cases[i][1], "--jobs-min", "2", "--jobs-max", "2",
		      "--eval-every", "0", "--hidden", "8", "--layers", "1", "--emb", "8",
		      "--heads", "1", "--mlp", "8", NULL);
		if (r.status != 0)
			dump_fail(&r, "a run with uneven rollouts: expected exit 0");
		if (cases[i][3] && (!strstr(r.err, cases[i][3]) ||
				    !strstr(r.err, "make --rollouts a multiple of 3")))
			dump_fail(&r, "expected the uneven-rollouts warning naming the fix");
		if (!cases[i][3] && strstr(r.err, "make --rollouts a multiple"))
			dump_fail(&r, "expected no warning");
		result_free(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_bad_flags),
		cmocka_unit_test(test_missing_input),
		cmocka_unit_test(test_run_and_save),
		cmocka_unit_test(test_time_limit_and_resume),
		cmocka_unit_test(test_uneven_rollouts),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
