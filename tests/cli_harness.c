/* SPDX-License-Identifier: BSD-3-Clause */
#include "tests/cli_harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ARGS      48
#define RUN_TIMEOUT_S 60 /* a hang, not a slow run: every run here takes well under 1 s */

/* the test's temp folder (cli_tmpdir_make()) */
static char tmpdir[64];

char *slurp(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return NULL;
	do {
		if (cap - len < 4096) {
			char *nb = realloc(buf, cap + 65536);

			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
			cap += 65536;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	fclose(f);
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	return buf;
}

const char *tmp_path(char *buf, size_t size, const char *name)
{
	int n = snprintf(buf, size, "%s/%s", tmpdir, name);

	assert_true(n > 0 && (size_t)n < size);
	return buf;
}

void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

void result_free(struct result *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

/* "prog arg..." into buf, for messages. */
static const char *cmdline(char *buf, size_t size, char *const *argv)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; argv[i] && off < size; i++)
		off += (size_t)snprintf(buf + off, size - off, "%s%s", i ? " " : "", argv[i]);
	return buf;
}

void run_argv(struct result *r, const char *prog, const char *const *args)
{
	char out_path[128], err_path[128], cmd[1024], *argv[MAX_ARGS + 2];
	struct timespec start, now, nap = {0, 5 * 1000 * 1000};
	int n = 0, st = 0;
	pid_t pid, w;

	tmp_path(out_path, sizeof(out_path), "stdout.txt");
	tmp_path(err_path, sizeof(err_path), "stderr.txt");
	argv[n++] = (char *)prog;
	for (; args[n - 1]; n++) {
		assert_true(n <= MAX_ARGS);
		argv[n] = (char *)args[n - 1];
	}
	argv[n] = NULL;
	fflush(NULL);
	assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &start), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY);
		int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		setpgid(0, 0);
		if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 ||
		    dup2(err, 2) < 0)
			_exit(126);
		execv(prog, argv);
		_exit(127);
	}
	setpgid(pid, pid); /* as the child does: whichever runs first */
	for (;;) {
		w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			break;
		assert_true(w == 0 || errno == EINTR);
		assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &now), 0);
		if (now.tv_sec - start.tv_sec > RUN_TIMEOUT_S) {
			kill(-pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail_msg("%s: still running after %d s; killed",
				 cmdline(cmd, sizeof(cmd), argv), RUN_TIMEOUT_S);
		}
		nanosleep(&nap, NULL);
	}
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	r->sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	r->out = slurp(out_path, NULL);
	r->err = slurp(err_path, NULL);
	assert_non_null(r->out);
	assert_non_null(r->err);
	if (r->status == 127 || r->status == 126)
		fail_msg("cannot run %s (exit %d)", prog, r->status);
	cmdline(r->cmd, sizeof(r->cmd), argv);
}

void run_va(struct result *r, const char *prog, const char *first, va_list ap)
{
	const char *args[MAX_ARGS + 1];
	size_t n = 0;

	if (first)
		args[n++] = first;
	for (const char *a = va_arg(ap, const char *); a; a = va_arg(ap, const char *)) {
		assert_true(n < MAX_ARGS);
		args[n++] = a;
	}
	args[n] = NULL;
	run_argv(r, prog, args);
}

static const char *replay_prog(void)
{
	const char *p = getenv("LOOM_REPLAY");

	return p && *p ? p : "controlplane/sim/loom-replay";
}

static const char *gen_prog(void)
{
	const char *p = getenv("LOOM_GEN");

	return p && *p ? p : "controlplane/sim/loom-gen";
}

const char *srcdir(void)
{
	const char *p = getenv("LOOM_SRCDIR");

	return p && *p ? p : "..";
}

void replay(struct result *r, ...)
{
	va_list ap;

	va_start(ap, r);
	run_va(r, replay_prog(), "--no-progress", ap);
	va_end(ap);
}

void gen(struct result *r, ...)
{
	va_list ap;

	va_start(ap, r);
	run_va(r, gen_prog(), NULL, ap);
	va_end(ap);
}

void dump_fail(const struct result *r, const char *what)
{
	fail_msg("%s\n%s; got exit %d (signal %d)\n--- stdout:\n%s--- stderr:\n%s", r->cmd, what,
		 r->status, r->sig, r->out, r->err);
}

void expect(struct result *r, int status, const char *needle)
{
	char what[512];

	if (r->status != status || (needle && !strstr(r->out, needle) && !strstr(r->err, needle))) {
		snprintf(what, sizeof(what), "expected exit %d and '%s'", status,
			 needle ? needle : "");
		dump_fail(r, what);
	}
	result_free(r);
}

void expect_usage(struct result *r, const char *needle)
{
	char what[512];

	if (r->status != 2 || !strstr(r->err, needle)) {
		snprintf(what, sizeof(what), "expected exit 2 and '%s' on stderr", needle);
		dump_fail(r, what);
	}
	result_free(r);
}

bool has_line(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);

	for (const char *s = text; s; s = strchr(s, '\n')) {
		if (*s == '\n')
			s++;
		if (strncmp(s, prefix, n) == 0)
			return true;
	}
	return false;
}

static int cli_rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

int cli_tmpdir_make(const char *tmpl)
{
	signal(SIGPIPE, SIG_IGN);
	snprintf(tmpdir, sizeof(tmpdir), "%s", tmpl);
	return mkdtemp(tmpdir) ? 0 : -1;
}

int cli_tmpdir_remove(void)
{
	return nftw(tmpdir, cli_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}
