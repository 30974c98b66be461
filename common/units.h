/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common/units: the one reading of sizes, rates, durations and scaled
 * numbers that every configuration file, flag, policy option and enforcer
 * argument of Loom takes (docs/units.md is the user's page).
 *
 *   - a number is decimal: digits, an optional fraction, an optional
 *     exponent ("2.5", "1e9"); it starts with a digit; no sign, hex, inf
 *     or nan (loom_units_scaled() alone takes a leading '-');
 *   - k/K, M, G, T, P are powers of 1000 (SI), Ki, Mi, Gi, Ti, Pi powers
 *     of 1024 (IEC); both exact;
 *   - sizes are bytes and may end in "B" ("4MiB", "64kB", "65536");
 *     rates are bit/s and may end in "bit" ("10G", "25Gbit"; "B", "bps"
 *     are refused so that bytes are never taken for bits);
 *     durations take ns, us, ms, s, m, h, and a bare number is in the
 *     unit the caller names (loomd: seconds; the agent: milliseconds);
 *   - the result is whole: a size, rate or duration that is not a whole
 *     number of bytes, bit/s or nanoseconds ("1.5B", "0.5ns") is refused,
 *     as is one above UINT64_MAX.
 *
 * Every parser returns 0 and writes its result, or -EINVAL (not of that
 * form) or -ERANGE (too large, too many digits) with the reason in err
 * ("'10 ms' is not a duration (e.g. 10ms, 2s, 500us)"); the caller puts
 * the key or flag in front. Pure: no allocation, no logging.
 */
#ifndef LOOM_COMMON_UNITS_H
#define LOOM_COMMON_UNITS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/errors.h"

/*
 * Flag of loom_units_size() and loom_units_scaled(): a bare k/K, M, G, T, P
 * (no 'i') is a power of 1024, as loomd's size keys and the policy options
 * read it before this module; deprecated (docs/units.md), for those two.
 */
#define LOOM_UNITS_LEGACY_1024 1u

/*
 * A size in bytes: "65536", "64k", "4Mi", "4MiB", "1.5G". With
 * LOOM_UNITS_LEGACY_1024 in flags, a bare prefix is binary and, when
 * ret_legacy is not NULL, *ret_legacy says whether one was used.
 */
int loom_units_size(const char *s, unsigned int flags, uint64_t *ret_bytes, bool *ret_legacy,
		    struct loom_err *err);

/* A rate in bit/s: "1000000", "100M", "2.5G", "10Gbit", "1Gi". */
int loom_units_rate(const char *s, uint64_t *ret_bps, struct loom_err *err);

/*
 * A duration: "10ms", "2s", "500us", "1m", "1h", "100ns"; a bare number
 * counts bare_ns nanoseconds per unit (LOOM_NS_PER_S for seconds).
 */
int loom_units_duration(const char *s, uint64_t bare_ns, uint64_t *ret_ns, struct loom_err *err);

/*
 * A plain number with an optional SI or IEC suffix and no unit word, as a
 * double ("0.1", "-2", "10M" = 1e7, "10Mi" = 10485760): for options that
 * are counts, fractions or bytes alike (policy options). Finite results
 * only. flags as loom_units_size()'s.
 */
int loom_units_scaled(const char *s, unsigned int flags, double *ret, struct loom_err *err);

#endif
