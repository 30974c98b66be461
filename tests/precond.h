/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Machine preconditions of a test binary, decided in main() before cmocka
 * runs any test (never with skip() inside a test, which cmocka counts as a
 * pass). When the whole binary cannot run here, main() exits 77 (meson's
 * SKIP); when only some tests cannot, it leaves those out of the group with
 * precond_leave_out(), which says on stderr which and why, and runs the rest
 * with precond_run(). Whatever fails after that point is a failure.
 */
#ifndef LOOM_TESTS_PRECOND_H
#define LOOM_TESTS_PRECOND_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

/* The exit status meson reads as SKIP. */
#define PRECOND_SKIP 77

/*
 * Removes the test of func from tests[0..n) when why is not NULL (the
 * reason, printed), keeping the others in order. Returns the new count.
 */
static inline size_t precond_leave_out(struct CMUnitTest *tests, size_t n, CMUnitTestFunction func,
				       const char *why)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (why && tests[i].test_func == func) {
			fprintf(stderr, "left out %s: %s\n", tests[i].name, why);
			continue;
		}
		tests[k++] = tests[i];
	}
	return k;
}

/* Runs the first n of tests as one group, as cmocka_run_group_tests() does. */
static inline int precond_run(const struct CMUnitTest *tests, size_t n,
			      CMFixtureFunction group_setup, CMFixtureFunction group_teardown)
{
	return _cmocka_run_group_tests("tests", tests, n, group_setup, group_teardown);
}

/*
 * Whether the program name is an executable in a folder of $PATH (unset:
 * /usr/bin:/bin): true with its path in buf (when buf is not NULL).
 */
static inline bool precond_find_program(const char *name, char *buf, size_t size)
{
	const char *path = getenv("PATH");
	char dirs[4096], where[4096];

	snprintf(dirs, sizeof(dirs), "%s", path && *path ? path : "/usr/bin:/bin");
	for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d;
	     d = strtok_r(NULL, ":", &save)) {
		snprintf(where, sizeof(where), "%s/%s", d, name);
		if (access(where, X_OK) == 0)
			/* a path that does not fit buf is no path */
			return !buf || (size_t)snprintf(buf, size, "%s", where) < size;
	}
	return false;
}

#endif
