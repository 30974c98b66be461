/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom-replay and loom-gen as a user runs them: exit codes and messages for
 * bad input, and the files and table of a good run. Programs come from
 * $LOOM_REPLAY and $LOOM_GEN; data from $LOOM_SRCDIR.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ARGS  32
#define TIMEOUT_S 120

static char tmpdir[256];

struct result {
	int status; /* exit code, or -1 when killed */
	char *out;  /* stdout + stderr */
};

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* Runs prog with a NULL-terminated argument list, output captured, bounded in time. */
static struct result run(const char *prog, const char *const *args)
{
	char log[300], *argv[MAX_ARGS + 2];
	struct result r = {-1, NULL};
	int n = 0, status;
	pid_t pid;

	snprintf(log, sizeof(log), "%s/out.log", tmpdir);
	argv[n++] = (char *)prog;
	while (args[n - 1] && n <= MAX_ARGS) {
		argv[n] = (char *)args[n - 1];
		n++;
	}
	argv[n] = NULL;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(fd, 1);
		dup2(fd, 2);
		alarm(TIMEOUT_S); /* a hang fails the test */
		execv(prog, argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	r.out = slurp(log);
	assert_non_null(r.out);
	return r;
}

static void expect(struct result r, int status, const char *needle)
{
	if (r.status != status || (needle && !strstr(r.out, needle)))
		fail_msg("expected exit %d and '%s', got exit %d:\n%s", status,
			 needle ? needle : "", r.status, r.out);
	free(r.out);
}

static const char *replay(void)
{
	const char *p = getenv("LOOM_REPLAY");

	return p ? p : "controlplane/sim/loom-replay";
}

static const char *gen(void)
{
	const char *p = getenv("LOOM_GEN");

	return p ? p : "controlplane/sim/loom-gen";
}

static const char *path_in(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", tmpdir, name);
	return buf;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Five coflows on four ports, FB format. */
static const char small_fb[] = "4 5\n"
			       "1 0 2 0 1 1 2:10.0\n"
			       "2 5 1 3 2 0:4.0 1:2.0\n"
			       "3 10 1 1 1 3:1.0\n"
			       "4 10 2 2 3 1 0:20.0\n"
			       "5 400 1 0 1 1:0.5\n";

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/loom-cli-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_help(void **state)
{
	static const char *const flags[] = {
		"--trace",       "--format",  "--topo",     "--rate-bps", "--policy",
		"--mode",        "--classes", "--quantize", "--epoch-ms", "--reeval-ms",
		"--seed",        "--out",     "--no-plots", "--check",    "--progress",
		"--no-progress", "--verbose", "--help",     "fifo",       "fair",
	};
	const char *args[] = {"--help", NULL};
	struct result r = run(replay(), args);

	(void)state;
	assert_int_equal(r.status, 0);
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (!strstr(r.out, flags[i]))
			fail_msg("--help does not mention %s", flags[i]);
	free(r.out);
}

static void test_bad_flags(void **state)
{
	char trace[300];
	const char *t = path_in(trace, sizeof(trace), "small.txt");

	(void)state;
	write_file(t, small_fb);
	expect(run(replay(), (const char *[]){"--no-progress", NULL}), 2, "--trace is required");
	expect(run(replay(), (const char *[]){"--bogus", NULL}), 2, "unrecognized option");
	expect(run(replay(), (const char *[]){"-t", t, "--classes", "0", NULL}), 2, "--classes");
	expect(run(replay(), (const char *[]){"-t", t, "--classes", "abc", NULL}), 2,
	       "--classes: 'abc'");
	expect(run(replay(), (const char *[]){"-t", t, "--mode", "bogus", NULL}), 2, "--mode");
	expect(run(replay(), (const char *[]){"-t", t, "--quantize", "x", NULL}), 2, "--quantize");
	expect(run(replay(), (const char *[]){"-t", t, "--epoch-ms", "-1", NULL}), 2, "--epoch-ms");
	expect(run(replay(), (const char *[]){"-t", t, "--format", "csv", NULL}), 2, "--format");
	expect(run(replay(), (const char *[]){"-t", t, "--policy", "fifo,nope", NULL}), 2,
	       "unknown policy 'nope' (known: fifo, fair");
	expect(run(replay(), (const char *[]){"-t", t, "extra", NULL}), 2,
	       "unexpected argument 'extra'");
}

static void test_bad_input(void **state)
{
	char trace[300], topo[300], out[300], msg[400];
	const char *t = path_in(trace, sizeof(trace), "bad.txt");
	const char *tp = path_in(topo, sizeof(topo), "topo.json");
	const char *o = path_in(out, sizeof(out), "out-bad");

	(void)state;
	expect(run(replay(),
		   (const char *[]){"-t", "/nonexistent/trace.txt", "--no-progress", NULL}),
	       1, "/nonexistent/trace.txt: No such file");
	/* port 9 >= 4 ports on line 3 */
	write_file(t, "4 2\n1 0 1 0 1 1:1.0\n2 5 1 9 1 0:1.0\n");
	snprintf(msg, sizeof(msg), "%s:3:", t);
	expect(run(replay(), (const char *[]){"-t", t, "-o", o, "--no-progress", NULL}), 1, msg);
	write_file(t, small_fb);
	write_file(tp, "{\"hosts\": 4, \"link_bps\": -5}");
	expect(run(replay(), (const char *[]){"-t", t, "-T", tp, "-o", o, "--no-progress", NULL}),
	       1, tp);
	write_file(tp, "{\"hosts\": 2}");
	expect(run(replay(), (const char *[]){"-t", t, "-T", tp, "-o", o, "--no-progress", NULL}),
	       1, "beyond the topology");
}

static void test_good_run(void **state)
{
	char trace[300], out[300], path[400];
	const char *t = path_in(trace, sizeof(trace), "small.txt");
	const char *o = path_in(out, sizeof(out), "out");
	struct result r;
	char *csv;

	(void)state;
	write_file(t, small_fb);
	r = run(replay(), (const char *[]){"-t", t, "-p", "fifo,fair", "--mode", "both", "-o", o,
					   "--check", "--no-progress", NULL});
	if (r.status != 0)
		fail_msg("exit %d:\n%s", r.status, r.out);
	assert_non_null(strstr(r.out, "normalised to fifo"));
	assert_non_null(strstr(r.out, "\nfifo/K8 "));
	assert_non_null(strstr(r.out, "\nfair/K8 "));
	assert_non_null(strstr(r.out, "max port load 1.0"));
	free(r.out);

	snprintf(path, sizeof(path), "%s/summary.csv", o);
	csv = slurp(path);
	assert_non_null(csv);
	assert_non_null(strstr(csv, "\nfifo,"));
	assert_non_null(strstr(csv, "\nfifo/K8,"));
	assert_non_null(strstr(csv, "\nfair/K8,"));
	free(csv);
	snprintf(path, sizeof(path), "%s/fifo-K8-coflows.csv", o);
	csv = slurp(path);
	assert_non_null(csv);
	assert_true(
		strncmp(csv,
			"coflow_id,job_id,release_ns,finish_ns,cct_ns,bytes,width,bin,"
			"isolation_ns\n",
			sizeof("coflow_id,job_id,release_ns,finish_ns,cct_ns,bytes,width,bin,isolation_ns\n") -
				1) == 0);
	{
		int lines = 0;

		for (char *c = csv; *c; c++)
			lines += *c == '\n';
		assert_int_equal(lines, 6); /* header + 5 coflows */
	}
	free(csv);
	snprintf(path, sizeof(path), "%s/fair-jobs.csv", o);
	csv = slurp(path);
	assert_non_null(csv);
	{
		static const char hdr[] = "job_id,arrival_ns,finish_ns,jct_ns,weight\n";

		assert_true(strncmp(csv, hdr, strlen(hdr)) == 0);
	}
	free(csv);
	/* Plots: the script is always written. */
	r = run(replay(), (const char *[]){"-t", t, "-p", "fifo", "-o", o, "--no-progress", NULL});
	assert_int_equal(r.status, 0);
	free(r.out);
	snprintf(path, sizeof(path), "%s/plots.gp", o);
	assert_int_equal(access(path, R_OK), 0);
}

static void test_formats_and_gen(void **state)
{
	const char *src = getenv("LOOM_SRCDIR");
	char sinc[400], jobs[300], jobs2[300], out[300];
	const char *j = path_in(jobs, sizeof(jobs), "jobs.loom");
	const char *j2 = path_in(jobs2, sizeof(jobs2), "jobs2.loom");
	const char *o = path_in(out, sizeof(out), "out-fmt");
	char *a, *b;

	(void)state;
	snprintf(sinc, sizeof(sinc), "%s/data/sincronia/526-0.9-FB-UPWS-CHUNKS.txt",
		 src ? src : "..");
	/* Sincronia format, detected. */
	expect(run(replay(),
		   (const char *[]){"-t", sinc, "-o", o, "--no-plots", "--no-progress", NULL}),
	       0, "(sincronia): 526 jobs, 526 coflows");
	/* loom-gen: deterministic in its seed; the output replays (format detected). */
	expect(run(gen(), (const char *[]){"--out", j, "--jobs", "20", "--hosts", "16", "--seed",
					   "3", NULL}),
	       0, "20 jobs");
	expect(run(gen(), (const char *[]){"--out", j2, "--jobs", "20", "--hosts", "16", "--seed",
					   "3", NULL}),
	       0, "20 jobs");
	a = slurp(j);
	b = slurp(j2);
	assert_non_null(a);
	assert_non_null(b);
	assert_string_equal(a, b);
	free(b);
	expect(run(gen(), (const char *[]){"--out", j2, "--jobs", "20", "--hosts", "16", "--seed",
					   "4", NULL}),
	       0, NULL);
	b = slurp(j2);
	assert_true(strcmp(a, b) != 0);
	free(a);
	free(b);
	expect(run(replay(),
		   (const char *[]){"-t", j, "-o", o, "--no-plots", "--no-progress", NULL}),
	       0, "(loom): 20 jobs");
	expect(run(gen(), (const char *[]){"--out", j, "--jobs", "0", NULL}), 2, "--jobs");
	expect(run(gen(), (const char *[]){"--out", j, "--load", "abc", NULL}), 2, "--load");
	expect(run(gen(), (const char *[]){"--out", j, "--dags", "/nonexistent/dags.txt", NULL}), 1,
	       "/nonexistent/dags.txt");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_bad_flags),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_good_run),
		cmocka_unit_test(test_formats_and_gen),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
