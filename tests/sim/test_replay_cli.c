/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom-replay as a user runs it: --help, exit status 2 and a message naming
 * the flag for a bad command line, a message naming the file (and line) for
 * bad input, and the table, CSV files and plots of a good run; format
 * detection for FB, Sincronia and Loom traces.
 *
 * The program comes from $LOOM_REPLAY (and $LOOM_GEN to make a Loom trace),
 * bundled data from $LOOM_SRCDIR; meson sets all three. Every run gets
 * --no-progress, writes its stdout and stderr to files in a fresh folder
 * under /tmp (removed at the end) and is killed if it hangs.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controlplane/policy/policy.h"
#include "controlplane/sim/sim.h"
#include "tests/cli_harness.h"
#include "tests/precond.h"

static size_t count_char(const char *s, char c)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == c;
	return n;
}

static bool file_nonempty(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

/*
 * Five coflows on four ports, FB format; every coflow is a job with the same
 * id, and several share ports so the policies disagree.
 */
static const char small_fb[] = "4 5\n"
			       "1 0 2 0 1 1 2:10.0\n"
			       "2 5 1 3 2 0:4.0 1:2.0\n"
			       "3 10 1 1 1 3:1.0\n"
			       "4 10 2 2 3 1 0:20.0\n"
			       "5 400 1 0 1 1:0.5\n";

/* The example of docs/trace-format.md: a comment line before the header. */
static const char doc_loom[] =
	"# Loom trace (docs/trace-format.md): 2 jobs, 4 coflows, 5 flows, 2 edges\n"
	"loom-trace 1 hosts 8\n"
	"job 7 250.5 2.5\n"
	"coflow 70 7 0\n"
	"flow 70 0 1 1000\n"
	"flow 70 2 1 2000\n"
	"coflow 71 7 1.000001\n"
	"flow 71 1 3 500\n"
	"coflow 72 7 0\n"
	"flow 72 3 7 42\n"
	"edge 70 72 12.25\n"
	"edge 71 72 0\n"
	"job 3 1000 1\n"
	"coflow 30 3 0.000001\n"
	"flow 30 5 5 1\n";

static const char coflows_hdr[] =
	"coflow_id,job_id,release_ns,finish_ns,cct_ns,bytes,width,bin,isolation_ns\n";
static const char jobs_hdr[] = "job_id,arrival_ns,finish_ns,jct_ns,weight\n";

static const char *small_trace(char *buf, size_t size)
{
	tmp_path(buf, size, "small-fb.txt");
	write_file(buf, small_fb);
	return buf;
}

static int setup(void **state)
{
	(void)state;
	return cli_tmpdir_make("/tmp/loom-replay-cli-XXXXXX");
}

static int teardown(void **state)
{
	(void)state;
	return cli_tmpdir_remove();
}

static void test_help(void **state)
{
	static const char *const words[] = {
		"--trace",    "--format",      "--topo",     "--rate-bps", "--policy",
		"--mode",     "--classes",     "--quantize", "--epoch-ms", "--reeval-ms",
		"--stats-ms", "--seed",        "--out",      "--no-plots", "--check",
		"--progress", "--no-progress", "--verbose",  "--help",     "Usage: loom-replay",
	};
	struct result r;

	(void)state;
	replay(&r, "--help", NULL);
	if (r.status != 0)
		dump_fail(&r, "--help: expected exit 0");
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strstr(r.out, words[i]))
			fail_msg("--help does not mention %s:\n%s", words[i], r.out);
	if (!strstr(r.out, "per-host") || !strstr(r.out, "classes mode: conflict\n") ||
	    !strstr(r.out, "(default: what loomd"))
		fail_msg("--help does not give conflict as --quantize's default:\n%s", r.out);
	if (!strstr(r.out, "--bound B") || !strstr(r.out, "none, or a list of lp"))
		fail_msg("--help does not describe --bound:\n%s", r.out);
	/* The policy list: one line per policy, name first. */
	assert_true(strstr(r.out, "Policies:") != NULL);
	assert_true(has_line(r.out, "  fifo "));
	assert_true(has_line(r.out, "  fair "));
	assert_true(has_line(r.out, "  sebf "));
	assert_true(has_line(r.out, "  dclas "));
	assert_true(has_line(r.out, "  sincronia "));
	assert_true(has_line(r.out, "  wsrjf "));
	assert_true(strstr(r.out, ":sharing=strict|weighted") != NULL);
	result_free(&r);

	replay(&r, "-h", NULL);
	expect(&r, 0, "--trace");
}

static void test_bad_flags(void **state)
{
	char tb[128], ob[128];
	const char *t = small_trace(tb, sizeof(tb));
	const char *o = tmp_path(ob, sizeof(ob), "out-flags");
	struct result r;

	(void)state;
	replay(&r, NULL);
	expect_usage(&r, "--trace is required");
	replay(&r, "-o", o, NULL);
	expect_usage(&r, "--trace is required");
	replay(&r, "-t", t, "-o", o, "--bogus", NULL);
	if (r.status != 2 || !strstr(r.err, "--bogus") || !strstr(r.err, "loom-replay --help"))
		dump_fail(&r, "--bogus: expected exit 2, the option and a pointer to --help");
	result_free(&r);
	replay(&r, "-t", t, "-o", o, "--jobs", "65", NULL);
	expect_usage(&r, "--jobs: '65'");
	replay(&r, "-t", t, "-o", o, "--jobs", "two", NULL);
	expect_usage(&r, "--jobs: 'two'");
	replay(&r, "-t", t, "-o", o, "--classes", "0", NULL);
	expect_usage(&r, "--classes: '0'");
	replay(&r, "-t", t, "-o", o, "--classes", "abc", NULL);
	expect_usage(&r, "--classes: 'abc'");
	replay(&r, "-t", t, "-o", o, "--classes", "4097", NULL);
	expect_usage(&r, "--classes: '4097'");
	replay(&r, "-t", t, "-o", o, "--classes", NULL);
	expect_usage(&r, "--classes");
	replay(&r, "-t", t, "-o", o, "--mode", "bogus", NULL);
	expect_usage(&r, "--mode: 'bogus'");
	replay(&r, "-t", t, "-o", o, "--quantize", "bogus", NULL);
	expect_usage(&r, "--quantize: 'bogus' is not one of conflict, per-host, top, even");
	replay(&r, "-t", t, "-o", o, "--epoch-ms", "-1", NULL);
	expect_usage(&r, "--epoch-ms: '-1'");
	replay(&r, "-t", t, "-o", o, "--reeval-ms", "soon", NULL);
	expect_usage(&r, "--reeval-ms: 'soon'");
	replay(&r, "-t", t, "-o", o, "--stats-ms", "-5", NULL);
	expect_usage(&r, "--stats-ms: '-5'");
	replay(&r, "-t", t, "-o", o, "--seed", "x", NULL);
	expect_usage(&r, "--seed: 'x'");
	replay(&r, "-t", t, "-o", o, "--rate-bps", "0", NULL);
	expect_usage(&r, "--rate-bps: '0'");
	replay(&r, "-t", t, "-o", o, "--format", "bogus", NULL);
	expect_usage(&r, "--format: 'bogus' is not one of fb, sincronia, loom");
	replay(&r, "-t", t, "-o", o, "--policy", "fifo,nope", NULL);
	expect_usage(&r, "unknown policy 'nope' (known: ");
	replay(&r, "-t", t, "-o", o, "--policy", "fifo,nope", NULL);
	if (r.status != 2 || !strstr(r.err, "fifo") || !strstr(r.err, "fair"))
		dump_fail(&r, "--policy fifo,nope: expected exit 2 and the known policies");
	result_free(&r);
	/* A bad option names the valid keys, or the accepted values. */
	replay(&r, "-t", t, "-o", o, "--policy", "sebf,dclas:queue=2", NULL);
	expect_usage(&r, "unknown option 'queue' (valid: queues, first, factor");
	replay(&r, "-t", t, "-o", o, "--policy", "dclas:sharing=wfq", NULL);
	expect_usage(&r, "must be one of strict, weighted, got 'wfq'");
	replay(&r, "-t", t, "-o", o, "--policy", "dclas:queues=99", NULL);
	expect_usage(&r, "wants an integer in [1, 64], got '99'");
	replay(&r, "-t", t, "-o", o, "extra", NULL);
	expect_usage(&r, "unexpected argument 'extra'");
	replay(&r, "-t", t, "-o", o, "--bound", "opt", NULL);
	expect_usage(&r, "--bound: 'opt' is not none or a list of lp, order");
	replay(&r, "-t", t, "-o", o, "--bound", "lp,none", NULL);
	expect_usage(&r, "--bound: 'lp,none' is not none or a list of lp, order");
	replay(&r, "-t", t, "-o", o, "--bound", "", NULL);
	expect_usage(&r, "--bound: '' is not none or a list of lp, order");
	replay(&r, "-t", t, "-o", o, "--bound", NULL);
	expect_usage(&r, "--bound");
	/* An empty policy list is refused (not a crash, not an empty table). */
	replay(&r, "-t", t, "-o", o, "--policy", ",", NULL);
	if (r.status <= 0 || !strstr(r.err, "--policy"))
		dump_fail(&r, "--policy ,: expected a non-zero exit naming --policy");
	result_free(&r);
	/* None of these got as far as writing output. */
	assert_int_equal(access(o, F_OK), -1);
}

static void test_bad_input(void **state)
{
	char tb[128], bb[128], jb[128], ob[128], msg[256];
	const char *t = small_trace(tb, sizeof(tb));
	const char *bad = tmp_path(bb, sizeof(bb), "bad-fb.txt");
	const char *topo = tmp_path(jb, sizeof(jb), "topo.json");
	const char *o = tmp_path(ob, sizeof(ob), "out-input");
	const char *missing = "/nonexistent/loom-trace.txt";
	struct result r;

	(void)state;
	/* Missing trace: exit 1 (bad input; 2 is for the command line). */
	replay(&r, "-t", missing, "-o", o, NULL);
	snprintf(msg, sizeof(msg), "%s: No such file", missing);
	expect(&r, 1, msg);
	replay(&r, "-t", missing, "-o", o, "--format", "sincronia", NULL);
	expect(&r, 1, msg);

	/* Mapper port 9 on line 3 of a 4-port trace. */
	write_file(bad, "4 2\n1 0 1 0 1 1:1.0\n2 5 1 9 1 0:1.0\n");
	replay(&r, "-t", bad, "-o", o, NULL);
	snprintf(msg, sizeof(msg), "%s:3:", bad);
	expect(&r, 1, msg);
	/* A reducer port out of range, format given. */
	write_file(bad, "4 2\n1 0 1 0 1 1:1.0\n2 5 1 2 1 4:1.0\n");
	replay(&r, "-t", bad, "-o", o, "--format", "fb", NULL);
	expect(&r, 1, msg);
	/* The FB trace read as another format names the file and a line. */
	replay(&r, "-t", t, "-o", o, "--format", "loom", NULL);
	snprintf(msg, sizeof(msg), "%s:1:", t);
	expect(&r, 1, msg);
	replay(&r, "-t", t, "-o", o, "--format", "sincronia", NULL);
	snprintf(msg, sizeof(msg), "%s:2:", t);
	expect(&r, 1, msg);

	/* Topology: unparsable JSON, a bad value, a missing file. */
	write_file(topo, "{\"hosts\": 4,");
	replay(&r, "-t", t, "-T", topo, "-o", o, NULL);
	expect(&r, 1, topo);
	write_file(topo, "{\"hosts\": 4, \"link_bps\": -5}");
	replay(&r, "-t", t, "--topo", topo, "-o", o, NULL);
	expect(&r, 1, topo);
	replay(&r, "-t", t, "--topo", "/nonexistent/topo.json", "-o", o, NULL);
	expect(&r, 1, "/nonexistent/topo.json: No such file");
	/* Too small for the trace's 4 ports. */
	write_file(topo, "{\"hosts\": 2}");
	replay(&r, "-t", t, "--topo", topo, "-o", o, NULL);
	if (r.status != 1 || !strstr(r.err, t) || !strstr(r.err, "beyond the topology"))
		dump_fail(&r, "a 2-host topology for a 4-port trace: expected exit 1");
	result_free(&r);
	/* Big enough is fine. */
	write_file(topo, "{\"hosts\": 4}");
	replay(&r, "-t", t, "--topo", topo, "-o", o, "--no-plots", "-p", "fifo", NULL);
	expect(&r, 0, "normalised to fifo");
}

/*
 * DIR/FILE has the header line, then rows rows of the header's columns, one
 * per id first_id .. first_id + rows - 1: "id," (or "id,id," when id_twice:
 * a coflow of an FB or Sincronia trace is a job with the same id).
 */
static void check_csv(const char *dir, const char *file, const char *hdr, unsigned first_id,
		      unsigned rows, bool id_twice)
{
	char path[256], row[64];
	char *csv;
	size_t commas = count_char(hdr, ',');

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	csv = slurp(path, NULL);
	if (!csv)
		fail_msg("%s was not written", path);
	if (strncmp(csv, hdr, strlen(hdr)) != 0)
		fail_msg("%s: header is not %s:\n%s", path, hdr, csv);
	if (count_char(csv, '\n') != rows + 1 || csv[strlen(csv) - 1] != '\n')
		fail_msg("%s: expected the header and %u rows:\n%s", path, rows, csv);
	if (count_char(csv, ',') != commas * (rows + 1))
		fail_msg("%s: a row does not have the header's %zu columns:\n%s", path, commas + 1,
			 csv);
	for (unsigned id = first_id; id < first_id + rows; id++) {
		if (id_twice)
			snprintf(row, sizeof(row), "%u,%u,", id, id);
		else
			snprintf(row, sizeof(row), "%u,", id);
		if (!has_line(csv + strlen(hdr), row))
			fail_msg("%s: no row for id %u:\n%s", path, id, csv);
	}
	free(csv);
}

/* "fair,all": fair first (the baseline), then every other policy once, with options. */
static void test_all_policies(void **state)
{
	char tb[128], ob[128], path[256], line[64];
	const char *t = small_trace(tb, sizeof(tb));
	const char *o = tmp_path(ob, sizeof(ob), "out-all");
	size_t n;
	const struct policy_class *const *list = policy_class_list(&n);
	size_t noffline = 0;
	struct result r;
	char *csv;

	(void)state;
	replay(&r, "--trace", t, "--policy", "fair,all,dclas:sharing=weighted", "--out", o,
	       "--no-plots", "--check", NULL);
	if (r.status != 0)
		dump_fail(&r, "fair,all: expected exit 0");
	if (!strstr(r.out, "normalised to fair"))
		dump_fail(&r, "fair,all: not normalised to fair");
	for (size_t i = 0; i < n; i++) {
		noffline += list[i]->offline;
		snprintf(line, sizeof(line), "%s ", list[i]->name);
		if (has_line(r.out, line) == list[i]->offline)
			dump_fail(&r, list[i]->offline ?
					      "fair,all: an offline policy (named only) has a row" :
					      "fair,all: a policy's row is missing");
	}
	if (!has_line(r.out, "dclas:sharing=weighted "))
		dump_fail(&r, "fair,all: the spec's row is missing");
	result_free(&r);
	snprintf(path, sizeof(path), "%s/summary.csv", o);
	csv = slurp(path, NULL);
	assert_non_null(csv);
	/* header + each policy but the offline ones once + the spec */
	assert_int_equal(count_char(csv, '\n'), n - noffline + 2);
	assert_true(strncmp(strchr(csv, '\n') + 1, "fair,", 5) == 0);
	free(csv);
}

static const char *const labels[] = {"fifo", "fifo/K8", "fair", "fair/K8"};
static const char *const files[] = {"fifo", "fifo-K8", "fair", "fair-K8"};

static void test_good_run(void **state)
{
	char tb[128], ob[128], path[256], line[64];
	const char *t = small_trace(tb, sizeof(tb));
	const char *o = tmp_path(ob, sizeof(ob), "out-good");
	struct result r;
	char *csv;

	(void)state;
	replay(&r, "--trace", t, "--policy", "fifo,fair", "--mode", "both", "--out", o,
	       "--no-plots", NULL);
	if (r.status != 0)
		dump_fail(&r, "good run: expected exit 0");
	if (!strstr(r.out, "normalised to fifo"))
		dump_fail(&r, "no 'normalised to fifo' on stdout");
	for (size_t i = 0; i < 4; i++) {
		snprintf(line, sizeof(line), "%s ", labels[i]);
		if (!has_line(r.out, line))
			dump_fail(&r, "a table row is missing");
	}
	/* The first row is in seconds, the others ratios to it. */
	assert_true(has_line(r.out, "policy "));
	assert_non_null(strstr(r.out, "x "));
	result_free(&r);

	snprintf(path, sizeof(path), "%s/summary.csv", o);
	csv = slurp(path, NULL);
	assert_non_null(csv);
	assert_true(strncmp(csv, "label,", 6) == 0);
	assert_int_equal(count_char(csv, '\n'), 5); /* header + 4 runs */
	for (size_t i = 0; i < 4; i++) {
		snprintf(line, sizeof(line), "%s,5,", labels[i]); /* label, coflows */
		if (!has_line(csv, line))
			fail_msg("summary.csv has no row %s:\n%s", line, csv);
	}
	free(csv);
	for (size_t i = 0; i < 4; i++) {
		char name[64];

		snprintf(name, sizeof(name), "%s-coflows.csv", files[i]);
		check_csv(o, name, coflows_hdr, 1, 5, true);
		snprintf(name, sizeof(name), "%s-jobs.csv", files[i]);
		check_csv(o, name, jobs_hdr, 1, 5, false);
	}
	/* --no-plots: CSV only. */
	snprintf(path, sizeof(path), "%s/plots.gp", o);
	assert_int_equal(access(path, F_OK), -1);

	/* --mode classes alone, and --classes implying it. */
	replay(&r, "-t", t, "-p", "fair", "-o", o, "--no-plots", "--classes", "2", NULL);
	if (r.status != 0 || !has_line(r.out, "fair/K2 ") || has_line(r.out, "fair "))
		dump_fail(&r, "--classes 2: expected exactly the row fair/K2");
	result_free(&r);
	check_csv(o, "fair-K2-coflows.csv", coflows_hdr, 1, 5, true);
}

/*
 * --bound: lp gives the "(LP bound)" row and the summary.csv columns (or,
 * built without GLPK, exit 1 naming GLPK); none gives neither (nan columns);
 * the default is lp where GLPK is built in (the small trace is under the cap).
 * order gives the "(best order)" row (its 5 coflows: 120 orders), also by
 * default; on more than 8 coflows it is refused (exit 1), or skipped by
 * default.
 */
static void test_bound(void **state)
{
	char tb[128], ob[128], path[256];
	const char *t = small_trace(tb, sizeof(tb));
	const char *o = tmp_path(ob, sizeof(ob), "out-bound");
	struct result r;
	char *csv;

	(void)state;
	replay(&r, "-t", t, "-p", "fifo,sebf", "-o", o, "--no-plots", "--bound", "lp", NULL);
	if (!sim_bound_lp_available()) {
		if (r.status != 1 || !strstr(r.err, "GLPK"))
			dump_fail(&r, "--bound lp without GLPK: expected exit 1 naming GLPK");
		result_free(&r);
		return;
	}
	if (r.status != 0 || !has_line(r.out, "(LP bound) ") ||
	    !has_line(r.out, "(isolation bound) ") || !strstr(r.err, "LP bound: avg wJCT >= "))
		dump_fail(&r, "--bound lp: expected exit 0, the LP row and its log line");
	result_free(&r);
	snprintf(path, sizeof(path), "%s/summary.csv", o);
	csv = slurp(path, NULL);
	assert_non_null(csv);
	assert_non_null(strstr(csv, ",lp_bound_wjct_s,lp_bound_cct_s,order_wjct_s,order_cct_s\n"));
	assert_non_null(strstr(csv, ",nan,nan\n")); /* no order: --bound lp alone */
	free(csv);

	replay(&r, "-t", t, "-p", "fifo,sebf", "-o", o, "--no-plots", "--bound", "order,lp", NULL);
	if (r.status != 0 || !has_line(r.out, "(LP bound) ") || !has_line(r.out, "(best order) ") ||
	    !strstr(r.err, "best order: avg wJCT ") || !strstr(r.err, "; 120 orders,"))
		dump_fail(&r, "--bound order,lp: expected both rows and the search's log line");
	result_free(&r);
	csv = slurp(path, NULL);
	assert_non_null(csv);
	assert_null(strstr(csv, ",nan"));
	free(csv);
	{
		char big[128];
		const char *b = tmp_path(big, sizeof(big), "nine.txt");

		write_file(b, "4 9\n1 0 1 0 1 1:1\n2 0 1 0 1 1:1\n3 0 1 0 1 1:1\n"
			      "4 0 1 0 1 1:1\n5 0 1 0 1 1:1\n6 0 1 0 1 1:1\n7 0 1 0 1 1:1\n"
			      "8 0 1 0 1 1:1\n9 0 1 0 1 1:1\n");
		replay(&r, "-t", b, "-p", "fifo", "-o", o, "--no-plots", "--bound", "order", NULL);
		if (r.status != 1 || !strstr(r.err, "9 coflows is over the 8"))
			dump_fail(&r, "--bound order on 9 coflows: expected exit 1 and the limit");
		result_free(&r);
		replay(&r, "-t", b, "-p", "fifo", "-o", o, "--no-plots", NULL);
		if (r.status != 0 || has_line(r.out, "(best order) "))
			dump_fail(&r, "default --bound on 9 coflows: expected no best-order row");
		result_free(&r);
	}

	replay(&r, "-t", t, "-p", "fifo", "-o", o, "--no-plots", "--bound", "none", NULL);
	if (r.status != 0 || has_line(r.out, "(LP bound) "))
		dump_fail(&r, "--bound none: expected exit 0 and no LP row");
	result_free(&r);
	csv = slurp(path, NULL);
	assert_non_null(csv);
	assert_non_null(strstr(csv, ",nan,nan,nan,nan\n"));
	free(csv);

	replay(&r, "-t", t, "-p", "fifo", "-o", o, "--no-plots", NULL);
	if (r.status != 0 || !has_line(r.out, "(LP bound) ") || !has_line(r.out, "(best order) "))
		dump_fail(&r, "default --bound: expected the LP and best-order rows");
	result_free(&r);
}

static void test_plots(void **state)
{
	static const char *const images[] = {"cct_cdf.png", "cct_cdf.svg", "jct_cdf.png",
					     "jct_cdf.svg", "bars.png",    "bars.svg"};
	char tb[128], ob[128], path[256];
	const char *t = small_trace(tb, sizeof(tb));
	const char *o = tmp_path(ob, sizeof(ob), "out-plots");
	struct result r;

	(void)state;
	replay(&r, "-t", t, "-p", "fifo,fair", "--mode", "both", "-o", o, NULL);
	expect(&r, 0, "normalised to fifo");
	snprintf(path, sizeof(path), "%s/plots.gp", o);
	assert_true(file_nonempty(path));
	snprintf(path, sizeof(path), "%s/summary.csv", o);
	assert_true(file_nonempty(path));
	if (!precond_find_program("gnuplot", NULL, 0)) {
		print_message("gnuplot not on PATH: only plots.gp checked\n");
		return;
	}
	for (size_t i = 0; i < sizeof(images) / sizeof(images[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", o, images[i]);
		if (!file_nonempty(path))
			fail_msg("gnuplot is on PATH but %s is missing or empty", path);
	}
}

static void test_format_detection(void **state)
{
	char tb[128], ob[128], lb[128], db[128], sinc[512];
	const char *t = small_trace(tb, sizeof(tb));
	const char *o = tmp_path(ob, sizeof(ob), "out-detect");
	const char *loom = tmp_path(lb, sizeof(lb), "gen.loom");
	const char *doc = tmp_path(db, sizeof(db), "doc.loom");
	struct result r;
	char *detected;

	(void)state;
	/* FB: detected, and the same table as with --format fb. */
	replay(&r, "-t", t, "-o", o, "--no-plots", "-p", "fifo,fair", NULL);
	if (r.status != 0 || !strstr(r.err, "(fb): 5 jobs, 5 coflows, 8 flows"))
		dump_fail(&r, "FB trace without --format");
	detected = r.out;
	r.out = NULL;
	result_free(&r);
	replay(&r, "-t", t, "-o", o, "--no-plots", "-p", "fifo,fair", "--format", "fb", NULL);
	if (r.status != 0 || strcmp(detected, r.out) != 0)
		dump_fail(&r, "--format fb: expected the table of the detected run");
	free(detected);
	result_free(&r);

	/* Sincronia. */
	snprintf(sinc, sizeof(sinc), "%s/data/sincronia/10-0.9-FB-UPWS.txt", srcdir());
	replay(&r, "-t", sinc, "-o", o, "--no-plots", "-p", "fifo,fair", NULL);
	expect(&r, 0, "(sincronia): 10 jobs, 10 coflows");
	replay(&r, "-t", sinc, "-o", o, "--no-plots", "-p", "fifo", "-f", "sincronia", NULL);
	expect(&r, 0, "(sincronia): 10 jobs, 10 coflows");

	/* Loom, written by loom-gen. */
	gen(&r, "--out", loom, "--jobs", "5", "--hosts", "8", "--seed", "2", NULL);
	expect(&r, 0, "5 jobs");
	replay(&r, "-t", loom, "-o", o, "--no-plots", "-p", "fifo,fair", NULL);
	expect(&r, 0, "(loom): 5 jobs");
	/* Loom by hand, comment line first (docs/trace-format.md). */
	write_file(doc, doc_loom);
	replay(&r, "-t", doc, "-o", o, "--no-plots", "-p", "fifo,fair", NULL);
	expect(&r, 0, "(loom): 2 jobs, 4 coflows, 5 flows");
}

static void test_check(void **state)
{
	char tb[128], ob[128], msg[64];
	const char *t = small_trace(tb, sizeof(tb));
	const char *o = tmp_path(ob, sizeof(ob), "out-check");
	struct result r;

	(void)state;
	replay(&r, "-t", t, "-o", o, "--no-plots", "-p", "fifo,fair", "--mode", "both", "--check",
	       NULL);
	if (r.status != 0 || !strstr(r.err, "max port load"))
		dump_fail(&r, "--check: expected exit 0 and 'max port load'");
	for (size_t i = 0; i < 4; i++) {
		snprintf(msg, sizeof(msg), "%s: checked ", labels[i]);
		if (!strstr(r.err, msg))
			dump_fail(&r, "--check: a run did not log 'checked'");
	}
	result_free(&r);
	/* Without --check nothing is checked. */
	replay(&r, "-t", t, "-o", o, "--no-plots", "-p", "fifo", NULL);
	if (r.status != 0 || strstr(r.err, "checked") || strstr(r.err, "max port load"))
		dump_fail(&r, "without --check: expected no check log");
	result_free(&r);
}

static void test_bundled_sincronia(void **state)
{
	char ob[128], sinc[512];
	const char *o = tmp_path(ob, sizeof(ob), "out-526");
	struct result r;

	(void)state;
	snprintf(sinc, sizeof(sinc), "%s/data/sincronia/526-0.9-FB-UPWS-CHUNKS.txt", srcdir());
	replay(&r, "-t", sinc, "-p", "fifo,fair", "-o", o, "--no-plots", NULL);
	if (r.status != 0 || !strstr(r.err, "(sincronia): 526 jobs, 526 coflows") ||
	    !strstr(r.out, "normalised to fifo") || !has_line(r.out, "fifo ") ||
	    !has_line(r.out, "fair "))
		dump_fail(&r, "526-0.9-FB-UPWS-CHUNKS.txt under fifo,fair");
	result_free(&r);
	check_csv(o, "fair-coflows.csv", coflows_hdr, 0, 526, true);
	check_csv(o, "fair-jobs.csv", jobs_hdr, 0, 526, false);
}

/*
 * --compat coflowsim: the seven CoflowSim algorithms by default, CoflowSim's
 * numbers (under fifo the small trace's first coflow, 10 MiB over two 5-MiB
 * flows into port 2, goes first and takes 80 ms at 1 MiB per 8-ms quantum;
 * every coflow starts at 0, the epoch its arrival falls in), and clear
 * refusals of what it cannot honour.
 */
static void test_compat(void **state)
{
	static const char *const algos[] = {"fifo", "fair", "scf", "ncf", "lcf", "sebf", "dclas"};
	char tb[128], ob[128], path[256], sinc[512];
	const char *t = small_trace(tb, sizeof(tb));
	const char *o = tmp_path(ob, sizeof(ob), "out-compat");
	struct result r;
	char *csv;

	(void)state;
	replay(&r, "-t", t, "-o", o, "--no-plots", "--compat", "coflowsim", "--bound", "none",
	       NULL);
	if (r.status != 0 || !strstr(r.err, "CoflowSim-exact mode") ||
	    !strstr(r.err, "(fb-coflowsim)"))
		dump_fail(&r, "--compat coflowsim: expected exit 0 and the mode named");
	for (size_t i = 0; i < sizeof(algos) / sizeof(algos[0]); i++) {
		char line[32];

		snprintf(line, sizeof(line), "%s ", algos[i]);
		if (!has_line(r.out, line))
			dump_fail(&r, "a CoflowSim algorithm's row is missing");
	}
	if (has_line(r.out, "sincronia ") || has_line(r.out, "gnn "))
		dump_fail(&r, "--compat coflowsim ran a policy CoflowSim does not have");
	result_free(&r);
	snprintf(path, sizeof(path), "%s/summary.csv", o);
	csv = slurp(path, NULL);
	assert_non_null(csv);
	assert_int_equal(count_char(csv, '\n'), 8); /* header + 7 runs */
	free(csv);
	snprintf(path, sizeof(path), "%s/fifo-coflows.csv", o);
	csv = slurp(path, NULL);
	assert_non_null(csv);
	if (!strstr(csv, "\n1,1,0,80000000,80000000,") || !strstr(csv, "\n5,5,0,"))
		fail_msg("fifo-coflows.csv: coflow 1 should run from 0 to 80 ms:\n%s", csv);
	free(csv);

	replay(&r, "-t", t, "-o", o, "--compat", "bogus", NULL);
	expect_usage(&r, "--compat: 'bogus' is not coflowsim");
	replay(&r, "-t", t, "-o", o, "--compat", "coflowsim", "--mode", "classes", NULL);
	expect_usage(&r, "--compat coflowsim: --mode does not apply");
	replay(&r, "-t", t, "-o", o, "--compat", "coflowsim", "--rate-bps", "1000", NULL);
	expect_usage(&r, "--compat coflowsim: --rate-bps does not apply");
	replay(&r, "-t", t, "-o", o, "--epoch-ms", "100", "--compat", "coflowsim", NULL);
	expect_usage(&r, "--compat coflowsim: --epoch-ms does not apply");
	replay(&r, "-t", t, "-o", o, "--stats-ms", "10", "--compat", "coflowsim", NULL);
	expect_usage(&r, "--compat coflowsim: --stats-ms does not apply");
	replay(&r, "-t", t, "-o", o, "--compat", "coflowsim", "--check", NULL);
	expect_usage(&r, "--check does not apply");
	replay(&r, "-t", t, "-o", o, "--compat", "coflowsim", "-p", "sebf,sincronia", NULL);
	expect_usage(&r, "policy 'sincronia' has no CoflowSim counterpart");
	replay(&r, "-t", t, "-o", o, "--compat", "coflowsim", "-p", "dclas:queues=4", NULL);
	expect_usage(&r, "policy 'dclas:queues=4' has no CoflowSim counterpart");
	snprintf(sinc, sizeof(sinc), "%s/data/sincronia/526-0.9-FB-UPWS-CHUNKS.txt", srcdir());
	replay(&r, "-t", sinc, "-o", o, "--compat", "coflowsim", NULL);
	expect_usage(&r, "CoflowSim reads coflow-benchmark (fb) traces");
}

/* summary.csv without its wall_s column (the one thing a run's timing changes). */
static char *summary_without_wall(const char *dir)
{
	char path[256], *csv, *out, *w;
	size_t col = 0, k = 0;
	const char *hdr_end, *p;

	snprintf(path, sizeof(path), "%s/summary.csv", dir);
	csv = slurp(path, NULL);
	assert_non_null(csv);
	hdr_end = strchr(csv, '\n');
	assert_non_null(hdr_end);
	p = strstr(csv, "wall_s");
	assert_true(p && p < hdr_end);
	for (const char *q = csv; q < p; q++)
		col += *q == ',';
	out = calloc(strlen(csv) + 1, 1);
	assert_non_null(out);
	w = out;
	for (p = csv; *p; p++) {
		if (*p == '\n') {
			k = 0;
			*w++ = *p;
			continue;
		}
		if (*p == ',')
			k++;
		if (k != col && !(k == col + 1 && *p == ',' && col > 0))
			*w++ = *p;
	}
	free(csv);
	return out;
}

/*
 * --jobs 3 runs the policy x mode runs in child processes: the same table,
 * the same per-run CSV files and summary (but for wall_s) as one at a time,
 * and a line on stderr as each run ends.
 */
static void test_jobs(void **state)
{
	static const char *const runs[] = {"fifo", "fifo-K8", "fair", "fair-K8", "sebf", "sebf-K8"};
	char tb[128], o1b[128], o3b[128];
	const char *t = small_trace(tb, sizeof(tb));
	const char *o1 = tmp_path(o1b, sizeof(o1b), "out-jobs1");
	const char *o3 = tmp_path(o3b, sizeof(o3b), "out-jobs3");
	struct result r1, r3;
	char *s1, *s3;

	(void)state;
	replay(&r1, "-t", t, "-p", "fifo,fair,sebf", "-m", "both", "-o", o1, "--no-plots", NULL);
	if (r1.status != 0)
		dump_fail(&r1, "--jobs 1: expected exit 0");
	replay(&r3, "-t", t, "-p", "fifo,fair,sebf", "-m", "both", "-o", o3, "--no-plots", "--jobs",
	       "3", NULL);
	if (r3.status != 0)
		dump_fail(&r3, "--jobs 3: expected exit 0");
	assert_string_equal(r1.out, r3.out);
	if (!strstr(r3.err, "6 runs, 3 at a time") || !strstr(r3.err, "sebf/K8: done in") ||
	    !strstr(r3.err, "(6 of 6 runs)"))
		dump_fail(&r3, "--jobs 3: expected a line per finished run");
	result_free(&r1);
	result_free(&r3);
	s1 = summary_without_wall(o1);
	s3 = summary_without_wall(o3);
	assert_string_equal(s1, s3);
	assert_null(strstr(s1, "wall_s"));
	free(s1);
	free(s3);
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		static const char *const kinds[] = {"coflows", "jobs"};

		for (size_t k = 0; k < 2; k++) {
			char p1[256], p3[256];
			size_t n1, n3;
			char *a, *b;

			snprintf(p1, sizeof(p1), "%s/%s-%s.csv", o1, runs[i], kinds[k]);
			snprintf(p3, sizeof(p3), "%s/%s-%s.csv", o3, runs[i], kinds[k]);
			a = slurp(p1, &n1);
			b = slurp(p3, &n3);
			if (!a || !b || n1 != n3 || memcmp(a, b, n1) != 0)
				fail_msg("%s differs between --jobs 1 and --jobs 3", p3);
			free(a);
			free(b);
		}
	}
}

/* The JCT of job id in a loom-replay jobs CSV file; fails the test without it. */
static long long jct_of(const char *csv, long long id)
{
	char *text = slurp(csv, NULL), *line;
	long long j, arrival, finish, jct = -1;

	if (!text)
		fail_msg("%s: cannot read", csv);
	for (line = strchr(text, '\n'); line; line = strchr(line + 1, '\n'))
		if (sscanf(line + 1, "%lld,%lld,%lld,%lld", &j, &arrival, &finish, &jct) == 4 &&
		    j == id)
			break;
	free(text);
	if (!line)
		fail_msg("%s: no job %lld", csv, id);
	return jct;
}

/*
 * --start-latency-ms: every coflow starts that much later than its release
 * would allow, so a job's JCT grows by it once per coflow on its critical
 * path (doc_loom: job 3 has one coflow, job 7 two stages); bad values are
 * refused.
 */
static void test_start_latency(void **state)
{
	char db[128], o0b[128], o5b[128], p[256];
	const char *doc = tmp_path(db, sizeof(db), "latency.loom");
	const char *o0 = tmp_path(o0b, sizeof(o0b), "out-lat0");
	const char *o5 = tmp_path(o5b, sizeof(o5b), "out-lat5");
	long long j3, j7;
	struct result r;

	(void)state;
	write_file(doc, doc_loom);
	replay(&r, "-t", doc, "-o", o0, "--no-plots", "-p", "fifo", NULL);
	expect(&r, 0, NULL);
	replay(&r, "-t", doc, "-o", o5, "--no-plots", "-p", "fifo", "--start-latency-ms", "5",
	       NULL);
	expect(&r, 0, NULL);
	snprintf(p, sizeof(p), "%s/fifo-jobs.csv", o0);
	j3 = jct_of(p, 3);
	j7 = jct_of(p, 7);
	snprintf(p, sizeof(p), "%s/fifo-jobs.csv", o5);
	assert_int_equal(jct_of(p, 3) - j3, 5000000);
	assert_int_equal(jct_of(p, 7) - j7, 10000000);
	replay(&r, "-t", doc, "--start-latency-ms", "-1", NULL);
	expect_usage(&r, "--start-latency-ms");
	replay(&r, "-t", doc, "--start-latency-ms", "1000001", NULL);
	expect_usage(&r, "above 1000000 ms");
	replay(&r, "-t", doc, "--start-latency-ms", "5", "--compat", "coflowsim", NULL);
	expect_usage(&r, "--start-latency-ms");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jobs),
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_bad_flags),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_good_run),
		cmocka_unit_test(test_all_policies),
		cmocka_unit_test(test_plots),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_format_detection),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_bundled_sincronia),
		cmocka_unit_test(test_compat),
		cmocka_unit_test(test_start_latency),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
