/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Out-of-memory tests: a forked child caps its address space (RLIMIT_AS)
 * just above what it uses, checks that what must allocate fails with
 * -ENOMEM and leaves everything as it was, and exits 0 (OOM_CHECK exits 1
 * naming the line). oom_run() forks it and asserts that it exited 0. Under
 * AddressSanitizer and ThreadSanitizer the cap cannot be applied (their
 * shadow memory and allocator do not live under it): oom_unsupported()
 * says why, for precond_leave_out() in main().
 */
#ifndef LOOM_TESTS_OOM_H
#define LOOM_TESTS_OOM_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#define OOM_CHECK(cond)                                                                            \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "oom child: %s:%d: %s\n", __FILE__, __LINE__, #cond);      \
			_exit(1);                                                                  \
		}                                                                                  \
	} while (0)

/* Why out-of-memory tests cannot run in this build, or NULL. */
static inline const char *oom_unsupported(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return "under AddressSanitizer, whose shadow memory does not live under RLIMIT_AS";
#elif defined(__SANITIZE_THREAD__)
	return "under ThreadSanitizer, whose own allocator dies (FATAL) under RLIMIT_AS";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return "under AddressSanitizer, whose shadow memory does not live under RLIMIT_AS";
#elif __has_feature(thread_sanitizer)
	return "under ThreadSanitizer, whose own allocator dies (FATAL) under RLIMIT_AS";
#else
	return NULL;
#endif
#else
	return NULL;
#endif
}

/* In the child: caps the address space at what it uses plus 1 MiB; *old to restore. */
static inline void oom_cap(struct rlimit *old)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long pages = 0;
	struct rlimit lim;

	OOM_CHECK(f != NULL);
	OOM_CHECK(fscanf(f, "%lu", &pages) == 1 && pages > 0);
	fclose(f);
	OOM_CHECK(getrlimit(RLIMIT_AS, old) == 0);
	lim = *old;
	lim.rlim_cur = pages * (size_t)sysconf(_SC_PAGESIZE) + (1u << 20);
	OOM_CHECK(setrlimit(RLIMIT_AS, &lim) == 0);
}

/* In the child: lifts the cap again. */
static inline void oom_uncap(const struct rlimit *old)
{
	OOM_CHECK(setrlimit(RLIMIT_AS, old) == 0);
}

/* Runs child (which ends with _exit) in a forked process; asserts it exited 0. */
static inline void oom_run(void (*child)(void))
{
	pid_t pid;
	int st = 0;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		child();
		_exit(3); /* a child that returns is a bug of the test */
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

#endif
