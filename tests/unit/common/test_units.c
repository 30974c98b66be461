/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for common/units: sizes, rates, durations and scaled numbers
 * (SI and IEC suffixes, exactness, the legacy binary reading, overflow and
 * garbage refused with a message that quotes the input).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/clock.h"
#include "common/units.h"

static void size_ok(const char *s, unsigned int flags, uint64_t want)
{
	struct loom_err err = {{0}};
	uint64_t x = 0;
	int r = loom_units_size(s, flags, &x, NULL, &err);

	if (r != 0)
		fail_msg("size '%s': refused (%d): %s", s, r, err.msg);
	if (x != want)
		fail_msg("size '%s': %llu, want %llu", s, (unsigned long long)x,
			 (unsigned long long)want);
}

static void rate_ok(const char *s, uint64_t want)
{
	struct loom_err err = {{0}};
	uint64_t x = 0;
	int r = loom_units_rate(s, &x, &err);

	if (r != 0)
		fail_msg("rate '%s': refused (%d): %s", s, r, err.msg);
	if (x != want)
		fail_msg("rate '%s': %llu, want %llu", s, (unsigned long long)x,
			 (unsigned long long)want);
}

static void dur_ok(const char *s, uint64_t bare, uint64_t want)
{
	struct loom_err err = {{0}};
	uint64_t x = 0;
	int r = loom_units_duration(s, bare, &x, &err);

	if (r != 0)
		fail_msg("duration '%s': refused (%d): %s", s, r, err.msg);
	if (x != want)
		fail_msg("duration '%s': %llu, want %llu", s, (unsigned long long)x,
			 (unsigned long long)want);
}

/* r must be -code with a message that quotes s and holds why; *x untouched. */
static void check_bad(const char *what, const char *s, int r, int code, uint64_t x,
		      const struct loom_err *err, const char *why)
{
	char quoted[128];

	if (r != -code)
		fail_msg("%s '%s': got %d, want %d", what, s, r, -code);
	if (x != 7)
		fail_msg("%s '%s': result written on failure", what, s);
	snprintf(quoted, sizeof(quoted), "'%s'", s);
	if (!strstr(err->msg, quoted) || !strstr(err->msg, why))
		fail_msg("%s '%s': message '%s' lacks %s or '%s'", what, s, err->msg, quoted, why);
}

static void size_bad(const char *s, int code, const char *why)
{
	struct loom_err err = {{0}};
	uint64_t x = 7;
	int r = loom_units_size(s, LOOM_UNITS_LEGACY_1024, &x, NULL, &err);

	check_bad("size", s, r, code, x, &err, why);
}

static void rate_bad(const char *s, int code, const char *why)
{
	struct loom_err err = {{0}};
	uint64_t x = 7;
	int r = loom_units_rate(s, &x, &err);

	check_bad("rate", s, r, code, x, &err, why);
}

static void dur_bad(const char *s, int code, const char *why)
{
	struct loom_err err = {{0}};
	uint64_t x = 7;
	int r = loom_units_duration(s, LOOM_NS_PER_S, &x, &err);

	check_bad("duration", s, r, code, x, &err, why);
}

static void test_sizes(void **state)
{
	bool legacy = true;
	uint64_t x;

	(void)state;
	size_ok("0", 0, 0);
	size_ok("65536", 0, 65536);
	size_ok("65536B", 0, 65536);
	size_ok("64k", 0, 64000);
	size_ok("64K", 0, 64000);
	size_ok("64kB", 0, 64000);
	size_ok("4M", 0, 4000000);
	size_ok("1G", 0, 1000000000);
	size_ok("3T", 0, 3000000000000ULL);
	size_ok("2P", 0, 2000000000000000ULL);
	size_ok("64Ki", 0, 65536);
	size_ok("64KiB", 0, 65536);
	size_ok("4Mi", 0, 4194304);
	size_ok("4MiB", 0, 4194304);
	size_ok("1Gi", 0, 1073741824);
	size_ok("3Ti", 0, 3ULL << 40);
	size_ok("1Pi", 0, 1ULL << 50);
	size_ok("1.5Ki", 0, 1536);
	size_ok("2.5M", 0, 2500000);
	size_ok("1e6", 0, 1000000);
	size_ok("1.0", 0, 1);
	size_ok("00012", 0, 12);
	size_ok("0.000", 0, 0);
	size_ok("18446744073709551615", 0, UINT64_MAX);
	size_ok("18446744073709551615.000", 0, UINT64_MAX);
	/* the legacy reading: a bare prefix is binary, Ki stays Ki */
	size_ok("4M", LOOM_UNITS_LEGACY_1024, 4194304);
	size_ok("2MB", LOOM_UNITS_LEGACY_1024, 2097152);
	size_ok("64k", LOOM_UNITS_LEGACY_1024, 65536);
	size_ok("4Mi", LOOM_UNITS_LEGACY_1024, 4194304);
	assert_int_equal(loom_units_size("4M", LOOM_UNITS_LEGACY_1024, &x, &legacy, NULL), 0);
	assert_true(legacy);
	assert_int_equal(loom_units_size("4Mi", LOOM_UNITS_LEGACY_1024, &x, &legacy, NULL), 0);
	assert_false(legacy);
	assert_int_equal(loom_units_size("4096", LOOM_UNITS_LEGACY_1024, &x, &legacy, NULL), 0);
	assert_false(legacy);
	assert_int_equal(loom_units_size("4M", 0, &x, &legacy, NULL), 0);
	assert_false(legacy);

	size_bad("", EINVAL, "is not a size");
	size_bad("big", EINVAL, "is not a size");
	size_bad("-1", EINVAL, "is not a size");
	size_bad("+1", EINVAL, "is not a size");
	size_bad(" 1", EINVAL, "is not a size");
	size_bad("1 ", EINVAL, "is not a size");
	size_bad("4 M", EINVAL, "is not a size");
	size_bad(".5", EINVAL, "is not a size");
	size_bad("0x10", EINVAL, "is not a size");
	size_bad("inf", EINVAL, "is not a size");
	size_bad("nan", EINVAL, "is not a size");
	size_bad("4Mbit", EINVAL, "is not a size");
	size_bad("4MiBB", EINVAL, "is not a size");
	size_bad("4m", EINVAL, "is not a size");
	size_bad("4E", EINVAL, "is not a size");
	size_bad("1e", EINVAL, "is not a size");
	size_bad("1e+", EINVAL, "is not a size");
	size_bad("1.5", EINVAL, "whole number of bytes");
	size_bad("1e-1", EINVAL, "whole number of bytes");
	size_bad("0.1k", EINVAL, "whole number of bytes"); /* legacy: 102.4 bytes */
	size_bad("18446744073709551616", ERANGE, "too large");
	size_bad("16384Pi", ERANGE, "too large"); /* 2^64 */
	size_bad("1e20", ERANGE, "too large");
	size_bad("1e999999999", ERANGE, "too large");
	size_bad("123456789012345678901234567890123456789012", ERANGE, "too large");
}

static void test_rates(void **state)
{
	(void)state;
	rate_ok("1000000", 1000000);
	rate_ok("100M", 100000000);
	rate_ok("10G", 10000000000ULL);
	rate_ok("25k", 25000);
	rate_ok("25K", 25000);
	rate_ok("2.5G", 2500000000ULL);
	rate_ok("1Gbit", 1000000000);
	rate_ok("1000bit", 1000);
	rate_ok("1Gi", 1073741824);
	rate_ok("1Gibit", 1073741824);
	rate_ok("100000T", 100000000000000000ULL);
	rate_ok("0", 0);
	rate_bad("10GB", EINVAL, "is not a rate in bit/s");
	rate_bad("10Gbps", EINVAL, "is not a rate in bit/s");
	rate_bad("fast", EINVAL, "is not a rate in bit/s");
	rate_bad("-1G", EINVAL, "is not a rate in bit/s");
	rate_bad("1.5", EINVAL, "whole number of bit/s");
	rate_bad("1e20", ERANGE, "too large");
	rate_bad("20000P", ERANGE, "too large");
}

static void test_durations(void **state)
{
	(void)state;
	dur_ok("10ms", LOOM_NS_PER_S, 10 * LOOM_NS_PER_MS);
	dur_ok("2s", LOOM_NS_PER_S, 2 * LOOM_NS_PER_S);
	dur_ok("500us", LOOM_NS_PER_S, 500 * LOOM_NS_PER_US);
	dur_ok("100ns", LOOM_NS_PER_S, 100);
	dur_ok("2m", LOOM_NS_PER_S, 120 * LOOM_NS_PER_S);
	dur_ok("1h", LOOM_NS_PER_S, 3600 * LOOM_NS_PER_S);
	dur_ok("1.5ms", LOOM_NS_PER_S, 1500000);
	dur_ok("0.25", LOOM_NS_PER_S, LOOM_NS_PER_S / 4);
	dur_ok("1", LOOM_NS_PER_S, LOOM_NS_PER_S);
	dur_ok("50", LOOM_NS_PER_MS, 50 * LOOM_NS_PER_MS); /* the agent's bare milliseconds */
	dur_ok("0", LOOM_NS_PER_S, 0);
	dur_ok("18446744073709551615ns", LOOM_NS_PER_S, UINT64_MAX);
	dur_bad("soon", EINVAL, "is not a duration");
	dur_bad("10 ms", EINVAL, "is not a duration");
	dur_bad("10msec", EINVAL, "is not a duration");
	dur_bad("10S", EINVAL, "is not a duration");
	dur_bad("ms", EINVAL, "is not a duration");
	dur_bad("-1s", EINVAL, "is not a duration");
	dur_bad("", EINVAL, "is not a duration");
	dur_bad("0.5ns", EINVAL, "whole number of nanoseconds");
	dur_bad("1e30h", ERANGE, "too large");
	dur_bad("18446744073709551616ns", ERANGE, "too large");
	dur_bad("5124096h", ERANGE, "too large"); /* just above 2^64 ns */
}

static void test_scaled(void **state)
{
	struct loom_err err = {{0}};
	double x = 7;

	(void)state;
	assert_int_equal(loom_units_scaled("0.1", 0, &x, &err), 0);
	assert_true(x == 0.1);
	assert_int_equal(loom_units_scaled("-2", 0, &x, &err), 0);
	assert_true(x == -2);
	assert_int_equal(loom_units_scaled("10M", 0, &x, &err), 0);
	assert_true(x == 1e7);
	assert_int_equal(loom_units_scaled("10Mi", 0, &x, &err), 0);
	assert_true(x == 10485760);
	assert_int_equal(loom_units_scaled("10M", LOOM_UNITS_LEGACY_1024, &x, &err), 0);
	assert_true(x == 10485760);
	assert_int_equal(loom_units_scaled("1k", LOOM_UNITS_LEGACY_1024, &x, &err), 0);
	assert_true(x == 1024);
	assert_int_equal(loom_units_scaled("1e-3", 0, &x, &err), 0);
	assert_true(x == 1e-3);
	x = 7;
	assert_int_equal(loom_units_scaled("10MB", 0, &x, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "'10MB' is not a number"));
	assert_int_equal(loom_units_scaled("", 0, &x, &err), -EINVAL);
	assert_int_equal(loom_units_scaled("-", 0, &x, &err), -EINVAL);
	assert_int_equal(loom_units_scaled("--1", 0, &x, &err), -EINVAL);
	assert_int_equal(loom_units_scaled("inf", 0, &x, &err), -EINVAL);
	assert_int_equal(loom_units_scaled("0x10", 0, &x, &err), -EINVAL);
	assert_int_equal(loom_units_scaled("1e400", 0, &x, &err), -ERANGE);
	assert_int_equal(loom_units_scaled("1e308P", 0, &x, &err), -ERANGE);
	assert_true(x == 7);
	/* NULL err is allowed */
	assert_int_equal(loom_units_scaled("x", 0, &x, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_scaled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
