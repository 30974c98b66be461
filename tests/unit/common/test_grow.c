/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for common/grow: the capacities (min_cap, then doubling, a
 * jump straight to a large need), nothing done when there is room, the
 * elements kept across a move, sizes past SIZE_MAX refused without a call
 * to realloc and without touching the array, and a failed realloc (out of
 * memory, in a capped child) leaving the array as it was.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/grow.h"
#include "tests/oom.h"
#include "tests/precond.h"

static void test_capacities(void **state)
{
	uint32_t *a = NULL, *was;
	size_t cap = 0;

	(void)state;
	assert_int_equal(loom_grow((void **)&a, &cap, 0, sizeof(*a), 16), 0);
	assert_null(a); /* nothing needed, nothing allocated */
	assert_int_equal(cap, 0);
	assert_int_equal(loom_grow((void **)&a, &cap, 1, sizeof(*a), 16), 0);
	assert_non_null(a);
	assert_int_equal(cap, 16);
	for (uint32_t i = 0; i < 16; i++)
		a[i] = i * 7;
	was = a;
	assert_int_equal(loom_grow((void **)&a, &cap, 16, sizeof(*a), 16), 0);
	assert_ptr_equal(a, was); /* room enough: untouched */
	assert_int_equal(cap, 16);
	assert_int_equal(loom_grow((void **)&a, &cap, 17, sizeof(*a), 16), 0);
	assert_int_equal(cap, 32);
	assert_int_equal(loom_grow((void **)&a, &cap, 100, sizeof(*a), 16), 0);
	assert_int_equal(cap, 128); /* doubled until it holds need */
	for (uint32_t i = 0; i < 16; i++)
		assert_int_equal(a[i], i * 7);
	/* min_cap counts only from empty */
	assert_int_equal(loom_grow((void **)&a, &cap, 129, sizeof(*a), 1000), 0);
	assert_int_equal(cap, 256);
	free(a);

	/* min_cap 0 starts at 1 */
	a = NULL;
	cap = 0;
	assert_int_equal(loom_grow((void **)&a, &cap, 1, sizeof(*a), 0), 0);
	assert_int_equal(cap, 1);
	assert_int_equal(loom_grow((void **)&a, &cap, 3, sizeof(*a), 0), 0);
	assert_int_equal(cap, 4);
	free(a);

	/* a min_cap above need: min_cap */
	a = NULL;
	cap = 0;
	assert_int_equal(loom_grow((void **)&a, &cap, 1, sizeof(*a), 64), 0);
	assert_int_equal(cap, 64);
	free(a);
}

static void test_overflow(void **state)
{
	uint64_t *a = NULL, *was;
	size_t cap = 0;

	(void)state;
	/* 2^61 elements of 8 bytes: the doubling reaches need, the bytes pass SIZE_MAX */
	assert_int_equal(loom_grow((void **)&a, &cap, SIZE_MAX / 8 + 1, sizeof(*a), 16), -ENOMEM);
	assert_null(a);
	assert_int_equal(cap, 0);
	/* SIZE_MAX elements: doubling would wrap, so need itself, still too many bytes */
	assert_int_equal(loom_grow((void **)&a, &cap, SIZE_MAX, 2, 16), -ENOMEM);
	assert_null(a);
	assert_int_equal(cap, 0);
	/* from an array: unchanged, still usable */
	assert_int_equal(loom_grow((void **)&a, &cap, 3, sizeof(*a), 3), 0);
	assert_int_equal(cap, 3);
	a[0] = 1;
	a[2] = 3;
	was = a;
	assert_int_equal(loom_grow((void **)&a, &cap, SIZE_MAX / 4, sizeof(*a), 16), -ENOMEM);
	assert_ptr_equal(a, was);
	assert_int_equal(cap, 3);
	assert_int_equal(a[0], 1);
	assert_int_equal(a[2], 3);
	free(a);
}

static void oom_child(void)
{
	struct rlimit old;
	char *a = NULL, *was;
	size_t cap = 0;
	int r;

	OOM_CHECK(loom_grow((void **)&a, &cap, 100, 1, 64) == 0);
	OOM_CHECK(cap == 128);
	memset(a, 'x', cap);
	was = a;
	oom_cap(&old);
	r = loom_grow((void **)&a, &cap, 64 << 20, 1, 64); /* 64 MiB under a 1 MiB margin */
	oom_uncap(&old);
	OOM_CHECK(r == -ENOMEM);
	OOM_CHECK(a == was && cap == 128);
	for (size_t i = 0; i < cap; i++)
		OOM_CHECK(a[i] == 'x');
	free(a);
	_exit(0);
}

static void test_oom(void **state)
{
	(void)state;
	oom_run(oom_child);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capacities),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_oom),
	};
	size_t n = sizeof(tests) / sizeof(tests[0]);

	n = precond_leave_out(tests, n, test_oom, oom_unsupported());
	return precond_run(tests, n, NULL, NULL);
}
