/* SPDX-License-Identifier: BSD-3-Clause */
/* Sizes, rates, durations and scaled numbers: see units.h and docs/units.md. */
#include "common/units.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIGITS 36 /* significant digits kept: 10^36 < 2^120 */
#define MAX_EXP    400

typedef unsigned __int128 u128;

/* A decimal number: digits x 10^exp10, exact unless lost (a nonzero digit was dropped). */
struct decimal {
	u128 digits;
	int exp10;
	bool lost;
	bool too_long; /* more integer digits than MAX_DIGITS */
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Reads digits [. digits] [(e|E) [+-] digits] at s into *ret; returns
 * where it stopped, or NULL when s does not start with a digit or an
 * exponent has no digits.
 */
static const char *read_decimal(const char *s, struct decimal *ret)
{
	struct decimal d = {0, 0, false, false};
	unsigned int ndig = 0;
	const char *p = s;

	if (!is_digit(*p))
		return NULL;
	for (; is_digit(*p); p++) {
		unsigned int v = (unsigned int)(*p - '0');

		if (ndig < MAX_DIGITS) {
			d.digits = d.digits * 10 + v;
			if (d.digits)
				ndig++;
		} else {
			d.too_long = true;
		}
	}
	if (*p == '.') {
		for (p++; is_digit(*p); p++) {
			unsigned int v = (unsigned int)(*p - '0');

			if (ndig < MAX_DIGITS) {
				d.digits = d.digits * 10 + v;
				d.exp10--;
				if (d.digits)
					ndig++;
			} else if (v) {
				d.lost = true;
			}
		}
	}
	if (*p == 'e' || *p == 'E') {
		const char *q = p + 1;
		bool neg = false;
		int e = 0;

		if (*q == '+' || *q == '-')
			neg = *q++ == '-';
		if (!is_digit(*q))
			return NULL;
		for (; is_digit(*q); q++)
			if (e < MAX_EXP)
				e = e * 10 + (*q - '0');
		d.exp10 += neg ? -e : e;
		p = q;
	}
	*ret = d;
	return p;
}

/*
 * d x mult as a whole uint64_t: 0, -ERANGE (above UINT64_MAX or too many
 * digits) or -EDOM (not whole).
 */
static int decimal_whole(struct decimal d, uint64_t mult, uint64_t *ret)
{
	u128 t = d.digits, p10 = 1;

	if (d.too_long)
		return -ERANGE;
	if (t == 0) {
		*ret = 0;
		return d.lost ? -EDOM : 0;
	}
	while (d.exp10 < 0 && t % 10 == 0) {
		t /= 10;
		d.exp10++;
	}
	for (; d.exp10 > 0; d.exp10--) {
		t *= 10;
		if (t > UINT64_MAX)
			return -ERANGE;
	}
	if (t > ~(u128)0 / mult)
		return -ERANGE;
	t *= mult;
	if (d.exp10 < -38)
		return -EDOM; /* t < 10^39: a fraction */
	for (int i = 0; i < -d.exp10; i++)
		p10 *= 10;
	if (t % p10 || d.lost)
		return -EDOM;
	t /= p10;
	if (t > UINT64_MAX)
		return -ERANGE;
	*ret = (uint64_t)t;
	return 0;
}

/*
 * An SI or IEC prefix at s ("k", "K", "M", "G", "T", "P", each optionally
 * followed by 'i'): its multiplier, and where the rest starts. 1 and s
 * itself when there is none.
 */
static const char *read_prefix(const char *s, unsigned int flags, uint64_t *ret_mult,
			       bool *ret_legacy)
{
	static const char letters[] = "kMGTP";
	const char *l = *s == 'K' ? letters : *s ? strchr(letters, *s) : NULL;
	uint64_t m = 1;
	int n;

	*ret_legacy = false;
	if (!l) {
		*ret_mult = 1;
		return s;
	}
	n = (int)(l - letters) + 1;
	if (s[1] == 'i' || (flags & LOOM_UNITS_LEGACY_1024)) {
		*ret_legacy = s[1] != 'i';
		for (int i = 0; i < n; i++)
			m *= 1024;
		*ret_mult = m;
		return *ret_legacy ? s + 1 : s + 2;
	}
	for (int i = 0; i < n; i++)
		m *= 1000;
	*ret_mult = m;
	return s + 1;
}

enum kind {
	SIZE,
	RATE
};

static const char *const kind_word[] = {[SIZE] = "B", [RATE] = "bit"};
static const char *const kind_unit[] = {[SIZE] = "bytes", [RATE] = "bit/s"};
static const char *const kind_what[] = {
	[SIZE] = "a size (e.g. 4Mi, 64k, 65536)",
	[RATE] = "a rate in bit/s (e.g. 10G, 100M, 1000000)",
};

static int report(int r, const char *s, const char *what, const char *unit, struct loom_err *err)
{
	if (r == -ERANGE)
		return loom_err_set(err, ERANGE, "'%s' is too large (at most %llu %s)", s,
				    (unsigned long long)UINT64_MAX, unit);
	if (r == -EDOM)
		return loom_err_set(err, EINVAL, "'%s' is not a whole number of %s", s, unit);
	return loom_err_set(err, EINVAL, "'%s' is not %s", s, what);
}

static int parse_kind(const char *s, enum kind k, unsigned int flags, uint64_t *ret,
		      bool *ret_legacy, struct loom_err *err)
{
	struct decimal d;
	const char *p = s ? read_decimal(s, &d) : NULL;
	uint64_t mult, x;
	bool legacy;
	int r;

	if (!p)
		return report(-EINVAL, s ? s : "", kind_what[k], kind_unit[k], err);
	p = read_prefix(p, flags, &mult, &legacy);
	if (*p && strcmp(p, kind_word[k]) != 0)
		return report(-EINVAL, s, kind_what[k], kind_unit[k], err);
	r = decimal_whole(d, mult, &x);
	if (r < 0)
		return report(r, s, kind_what[k], kind_unit[k], err);
	*ret = x;
	if (ret_legacy)
		*ret_legacy = legacy;
	return 0;
}

int loom_units_size(const char *s, unsigned int flags, uint64_t *ret_bytes, bool *ret_legacy,
		    struct loom_err *err)
{
	return parse_kind(s, SIZE, flags, ret_bytes, ret_legacy, err);
}

int loom_units_rate(const char *s, uint64_t *ret_bps, struct loom_err *err)
{
	return parse_kind(s, RATE, 0, ret_bps, NULL, err);
}

int loom_units_duration(const char *s, uint64_t bare_ns, uint64_t *ret_ns, struct loom_err *err)
{
	static const struct {
		const char *suffix;
		uint64_t ns;
	} units[] = {
		{"ns", 1},
		{"us", 1000ULL},
		{"ms", 1000000ULL},
		{"s", 1000000000ULL},
		{"m", 60ULL * 1000000000ULL},
		{"h", 3600ULL * 1000000000ULL},
	};
	static const char what[] = "a duration (e.g. 10ms, 2s, 500us)";
	struct decimal d;
	const char *p = s ? read_decimal(s, &d) : NULL;
	uint64_t mult = 0, x;
	int r;

	if (!p)
		return report(-EINVAL, s ? s : "", what, "nanoseconds", err);
	if (!*p)
		mult = bare_ns;
	for (size_t i = 0; *p && i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(p, units[i].suffix) == 0)
			mult = units[i].ns;
	if (mult == 0)
		return report(-EINVAL, s, what, "nanoseconds", err);
	r = decimal_whole(d, mult, &x);
	if (r < 0)
		return report(r, s, what, "nanoseconds", err);
	*ret_ns = x;
	return 0;
}

int loom_units_scaled(const char *s, unsigned int flags, double *ret, struct loom_err *err)
{
	static const char what[] = "a number (e.g. 0.5, 10k, 4Mi)";
	const char *num = s && *s == '-' ? s + 1 : s;
	struct decimal d;
	const char *p = num ? read_decimal(num, &d) : NULL;
	char buf[64], *end;
	uint64_t mult;
	bool legacy;
	double x;

	if (!p || (size_t)(p - s) >= sizeof(buf))
		return report(-EINVAL, s ? s : "", what, "", err);
	if (*read_prefix(p, flags, &mult, &legacy) != '\0')
		return report(-EINVAL, s, what, "", err);
	memcpy(buf, s, (size_t)(p - s));
	buf[p - s] = '\0';
	errno = 0;
	x = strtod(buf, &end) * (double)mult;
	if (*end || !isfinite(x))
		return loom_err_set(err, ERANGE, "'%s' is too large", s);
	*ret = x;
	return 0;
}
