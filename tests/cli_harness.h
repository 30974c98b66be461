/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The harness the CLI tests share (tests/sim/test_replay_cli.c,
 * tests/sim/test_gen_cli.c, tests/learn/test_train_cli.c and
 * tests/learn/test_train_mpi.c): runs a program with its stdout and stderr
 * in files of a fresh folder under /tmp, in its own process group, killed if
 * it hangs; plus helpers to read files and look for lines. Its functions fail
 * the running cmocka test (fail_msg(), assert_*()) where they say so.
 *
 * Built once (cli_harness.c) into a static library the CLI tests link
 * (cli_harness_dep, tests/meson.build).
 */
#ifndef LOOM_TESTS_CLI_HARNESS_H
#define LOOM_TESTS_CLI_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* A finished run: how it ended and what it printed (result_free() frees). */
struct result {
	int status;     /* exit status, or -1 when killed by a signal */
	int sig;        /* the signal when status is -1 */
	char *out;      /* stdout */
	char *err;      /* stderr */
	char cmd[1024]; /* the command line, for messages */
};

/* Makes the test's temp folder from a mkdtemp template; ignores SIGPIPE. 0 or -1. */
int cli_tmpdir_make(const char *tmpl);

/* Removes the temp folder and everything in it (nftw()'s result). */
int cli_tmpdir_remove(void);

/* buf = the temp folder's path of name (fails the test if it does not fit); returns buf. */
const char *tmp_path(char *buf, size_t size, const char *name);

/* The whole file, NUL-terminated (caller frees), length in *ret_len (if not NULL); NULL if unreadable. */
char *slurp(const char *path, size_t *ret_len);

/* Writes text to the file at path (fails the test if it cannot). */
void write_file(const char *path, const char *text);

/* Frees r's output. */
void result_free(struct result *r);

/*
 * Runs prog with args (NULL-terminated), stdin from /dev/null, stdout and
 * stderr into files read back into r. The child leads its own process group
 * so that a hang (over a minute) kills whatever it started too, and fails
 * the test; so does a program that cannot be run (exit 126 or 127).
 */
void run_argv(struct result *r, const char *prog, const char *const *args);

/* run_argv() with first (unless NULL) and the NULL-ended arguments of ap. */
void run_va(struct result *r, const char *prog, const char *first, va_list ap);

/* The source root: $LOOM_SRCDIR, else "..". */
const char *srcdir(void);

/* loom-replay ($LOOM_REPLAY) --no-progress ARGS... (NULL-terminated) */
void replay(struct result *r, ...) __attribute__((sentinel));

/* loom-gen ($LOOM_GEN) ARGS... (NULL-terminated) */
void gen(struct result *r, ...) __attribute__((sentinel));

/* Fails the test: r's command, what was expected, how it ended and its output. */
void dump_fail(const struct result *r, const char *what);

/* Exit status is status and needle (if any) is on stdout or stderr; frees r. */
void expect(struct result *r, int status, const char *needle);

/* Expects a usage error: exit 2 and needle (naming the flag) on stderr; frees r. */
void expect_usage(struct result *r, const char *needle);

/* Whether text has a line that starts with prefix. */
bool has_line(const char *text, const char *prefix);

#endif
