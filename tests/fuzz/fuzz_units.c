/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for the unit parsers (common/units.h). The input is one value
 * (up to its first NUL) given to each parser: size (plain and legacy),
 * rate, duration (bare seconds and bare milliseconds) and scaled number.
 *
 * A parser must either accept, or return -EINVAL or -ERANGE with a
 * message and its result untouched. What it accepts must hold up: a size,
 * rate or duration printed back as a whole number ("%llu", "%lluns") parses
 * to the same value; a value of digits alone is what loom_parse_u64 reads
 * (in every parser, durations in their bare unit); a legacy size is at least
 * the plain one; a scaled number is finite. Anything else (crash, sanitizer
 * report, abort) is a bug.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* r is 0, or a refusal with a message and the result left at its sentinel. */
static void check_result(int r, uint64_t x, const struct loom_err *err)
{
	if (r == 0)
		return;
	if ((r != -EINVAL && r != -ERANGE) || x != 7 || !err->msg[0])
		abort();
}

static void round_trip_u64(int (*parse)(const char *, uint64_t *, struct loom_err *), uint64_t x)
{
	char buf[32];
	uint64_t y = 0;

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)x);
	if (parse(buf, &y, NULL) != 0 || y != x)
		abort();
}

static int size_plain(const char *s, uint64_t *ret, struct loom_err *err)
{
	return loom_units_size(s, 0, ret, NULL, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct loom_err err = {{0}};
	unsigned long long whole = 0;
	uint64_t a = 7, b = 7, rate = 7, sec = 7, ms = 7;
	double d = 7;
	bool legacy = false, digits_only;
	int r, rb, whole_r;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	digits_only = s[0] && strspn(s, "0123456789") == strlen(s);
	whole_r = loom_parse_u64(s, &whole);

	r = loom_units_size(s, 0, &a, NULL, &err);
	check_result(r, a, &err);
	if (r == 0)
		round_trip_u64(size_plain, a);
	if (digits_only && ((r == 0) != (whole_r == 0) || (r == 0 && a != whole)))
		abort();

	err.msg[0] = '\0';
	rb = loom_units_size(s, LOOM_UNITS_LEGACY_1024, &b, &legacy, &err);
	check_result(rb, b, &err);
	if (rb == 0 && r == 0 && b < a)
		abort();
	if (rb == 0 && !legacy && r == 0 && a != b)
		abort();

	err.msg[0] = '\0';
	r = loom_units_rate(s, &rate, &err);
	check_result(r, rate, &err);
	if (r == 0)
		round_trip_u64(loom_units_rate, rate);
	if (digits_only && ((r == 0) != (whole_r == 0) || (r == 0 && rate != whole)))
		abort();

	err.msg[0] = '\0';
	r = loom_units_duration(s, LOOM_NS_PER_S, &sec, &err);
	check_result(r, sec, &err);
	if (r == 0) {
		char buf[32];
		uint64_t y = 0;

		snprintf(buf, sizeof(buf), "%lluns", (unsigned long long)sec);
		if (loom_units_duration(buf, LOOM_NS_PER_S, &y, NULL) != 0 || y != sec)
			abort();
	}
	if (digits_only && r == 0 && (whole_r != 0 || sec != whole * LOOM_NS_PER_S))
		abort();
	err.msg[0] = '\0';
	r = loom_units_duration(s, LOOM_NS_PER_MS, &ms, &err);
	check_result(r, ms, &err);

	err.msg[0] = '\0';
	r = loom_units_scaled(s, 0, &d, &err);
	if (r == 0 && !isfinite(d))
		abort();
	if (r != 0 && ((r != -EINVAL && r != -ERANGE) || d != 7 || !err.msg[0]))
		abort();
	free(s);
	return 0;
}
