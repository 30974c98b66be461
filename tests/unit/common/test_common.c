/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for common/: logging, error helpers and number parsers, the real
 * and virtual clocks, the RNG (determinism, ranges, distributions), and the
 * stale-socket rule of common/unixsock.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/datapath.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/rng.h"
#include "common/unixsock.h"

/* ---- log ------------------------------------------------------------------------------ */

static void test_log_level_parse(void **state)
{
	static const struct {
		const char *s;
		enum loom_log_level level;
	} good[] = {
		{"err", LOOM_LOG_ERR},     {"warn", LOOM_LOG_WARN}, {"info", LOOM_LOG_INFO},
		{"debug", LOOM_LOG_DEBUG}, {"error", LOOM_LOG_ERR}, {"warning", LOOM_LOG_WARN},
	};
	static const char *const bad[] = {"",       "ERR",  "Info",  "trace",
					  "debug ", " err", "warn ", "3"};
	enum loom_log_level level;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		level = LOOM_LOG_ERR;
		assert_int_equal(loom_log_level_parse(good[i].s, &level), 0);
		assert_int_equal(level, good[i].level);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		level = LOOM_LOG_WARN;
		assert_int_equal(loom_log_level_parse(bad[i], &level), -EINVAL);
		assert_int_equal(level, LOOM_LOG_WARN); /* untouched on error */
	}
	assert_int_equal(loom_log_level_parse(NULL, &level), -EINVAL);
}

static void test_log_level_set(void **state)
{
	enum loom_log_level saved = loom_log_get_level();

	(void)state;
	loom_log_set_level(LOOM_LOG_DEBUG);
	assert_int_equal(loom_log_get_level(), LOOM_LOG_DEBUG);
	loom_log_set_level(LOOM_LOG_ERR);
	assert_int_equal(loom_log_get_level(), LOOM_LOG_ERR);
	/* Out-of-range levels clamp to debug. */
	loom_log_set_level((enum loom_log_level)42);
	assert_int_equal(loom_log_get_level(), LOOM_LOG_DEBUG);
	loom_log_set_level(saved);
}

static void test_log_output(void **state)
{
	enum loom_log_level saved = loom_log_get_level();
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	(void)state;
	assert_non_null(f);
	loom_log_set_stream(f);
	loom_log_set_level(LOOM_LOG_INFO);

	loom_log_set_ident("loomd");
	log_info("hello %d", 1);
	log_warn("careful");
	log_err("failed: %s", "boom");
	log_debug("not shown at info");
	loom_log_set_ident(NULL);
	log_info("no ident");
	loom_log_set_level(LOOM_LOG_DEBUG);
	log_debug("shown %s", "now");
	loom_log_set_level(LOOM_LOG_ERR);
	log_warn("not shown at err");
	loom_log(LOOM_LOG_ERR, "%s", "direct");

	loom_log_set_stream(NULL);
	loom_log_set_level(saved);
	fclose(f);
	assert_string_equal(out, "loomd: hello 1\n"
				 "loomd: warn: careful\n"
				 "loomd: err: failed: boom\n"
				 "no ident\n"
				 "debug: shown now\n"
				 "err: direct\n");
	free(out);
}

/* ---- errors --------------------------------------------------------------------------- */

static void test_err_set(void **state)
{
	struct loom_err err;
	char longer[2 * LOOM_ERR_MSG_MAX];

	(void)state;
	loom_err_clear(&err);
	assert_string_equal(err.msg, "");
	assert_string_equal(loom_err_str(&err), "unknown error");
	assert_string_equal(loom_err_str(NULL), "unknown error");

	assert_int_equal(loom_err_set(&err, EINVAL, "%s:%u: bad port", "a.txt", 3u), -EINVAL);
	assert_string_equal(err.msg, "a.txt:3: bad port");
	assert_string_equal(loom_err_str(&err), "a.txt:3: bad port");
	/* A negative code passes through; a NULL err only returns the code. */
	assert_int_equal(loom_err_set(&err, -ENOENT, "gone"), -ENOENT);
	assert_string_equal(err.msg, "gone");
	assert_int_equal(loom_err_set(NULL, ERANGE, "x"), -ERANGE);

	/* Long messages are truncated, always terminated. */
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	loom_err_set(&err, EIO, "%s", longer);
	assert_int_equal(strlen(err.msg), LOOM_ERR_MSG_MAX - 1);

	loom_err_clear(&err);
	assert_string_equal(err.msg, "");
	loom_err_clear(NULL);
}

static void test_negerrno(void **state)
{
	(void)state;
	errno = ENOENT;
	assert_int_equal(loom_negerrno(), -ENOENT);
	errno = 0;
	assert_int_equal(loom_negerrno(), -EIO);
}

static void test_parse_u64(void **state)
{
	static const struct {
		const char *s;
		int ret;
		unsigned long long v;
	} cases[] = {
		{"0", 0, 0},
		{"1", 0, 1},
		{"007", 0, 7},
		{"4294967296", 0, 4294967296ULL},
		{"18446744073709551615", 0, 18446744073709551615ULL},
		{"18446744073709551616", -ERANGE, 0},
		{"99999999999999999999999", -ERANGE, 0},
		{"", -EINVAL, 0},
		{"-1", -EINVAL, 0},
		{"-0", -EINVAL, 0},
		{"+1", -EINVAL, 0},
		{" 1", -EINVAL, 0},
		{"1 ", -EINVAL, 0},
		{"1x", -EINVAL, 0},
		{"x", -EINVAL, 0},
		{"0x10", -EINVAL, 0},
		{"1.0", -EINVAL, 0},
		{"1e3", -EINVAL, 0},
	};
	unsigned long long v;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		v = 12345;
		if (loom_parse_u64(cases[i].s, &v) != cases[i].ret)
			print_error("case \"%s\"\n", cases[i].s);
		assert_int_equal(loom_parse_u64(cases[i].s, &v), cases[i].ret);
		assert_int_equal(v, cases[i].ret == 0 ? cases[i].v : 12345);
	}
	assert_int_equal(loom_parse_u64(NULL, &v), -EINVAL);
}

static void test_parse_double(void **state)
{
	static const struct {
		const char *s;
		int ret;
		double v;
	} cases[] = {
		{"0", 0, 0.0},
		{"1.5", 0, 1.5},
		{"-2", 0, -2.0},
		{"+3", 0, 3.0},
		{"1e3", 0, 1000.0},
		{".25", 0, 0.25},
		{"1.7976931348623157e308", 0, 1.7976931348623157e308},
		{"1e999", -ERANGE, 0},
		{"-1e999", -ERANGE, 0},
		{"", -EINVAL, 0},
		{" 1", -EINVAL, 0},
		{"1 ", -EINVAL, 0},
		{"1x", -EINVAL, 0},
		{"x", -EINVAL, 0},
		{"nan", -EINVAL, 0},
		{"NaN", -EINVAL, 0},
		{"inf", -EINVAL, 0},
		{"-inf", -EINVAL, 0},
		{"infinity", -EINVAL, 0},
		{"1e", -EINVAL, 0},
	};
	double v;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		v = 12345.0;
		if (loom_parse_double(cases[i].s, &v) != cases[i].ret)
			print_error("case \"%s\"\n", cases[i].s);
		assert_int_equal(loom_parse_double(cases[i].s, &v), cases[i].ret);
		assert_true(v == (cases[i].ret == 0 ? cases[i].v : 12345.0));
	}
	assert_int_equal(loom_parse_double(NULL, &v), -EINVAL);
}

/* ---- clocks --------------------------------------------------------------------------- */

static void test_vclock(void **state)
{
	struct loom_vclock vc;
	const struct loom_clock *clock = &vc.clock;

	(void)state;
	loom_vclock_init(&vc, 5);
	assert_int_equal(loom_clock_now_ns(clock), 5);
	assert_int_equal(loom_vclock_advance_to(&vc, 10), 0);
	assert_int_equal(loom_clock_now_ns(clock), 10);
	/* Standing still is allowed; going backwards is refused and changes nothing. */
	assert_int_equal(loom_vclock_advance_to(&vc, 10), 0);
	assert_int_equal(loom_vclock_advance_to(&vc, 9), -EINVAL);
	assert_int_equal(loom_clock_now_ns(clock), 10);
	assert_int_equal(loom_vclock_advance_to(&vc, 0), -EINVAL);
	assert_int_equal(loom_vclock_advance_to(&vc, UINT64_MAX), 0);
	assert_true(loom_clock_now_ns(clock) == UINT64_MAX);

	loom_vclock_init(&vc, 0);
	assert_int_equal(loom_clock_now_ns(clock), 0);
	assert_int_equal(loom_vclock_advance_to(&vc, 3 * LOOM_NS_PER_S), 0);
	assert_int_equal(loom_clock_now_ns(clock), 3000000000ULL);
}

static void test_real_clock(void **state)
{
	const struct loom_clock *clock = loom_clock_real();
	struct timespec pause = {0, 2 * (long)LOOM_NS_PER_MS};
	uint64_t prev, now, start;

	(void)state;
	assert_non_null(clock);
	assert_ptr_equal(clock, loom_clock_real());
	start = prev = loom_clock_now_ns(clock);
	assert_true(prev > 0);
	for (int i = 0; i < 10000; i++) {
		now = loom_clock_now_ns(clock);
		assert_true(now >= prev);
		prev = now;
	}
	nanosleep(&pause, NULL);
	now = loom_clock_now_ns(clock);
	assert_true(now - start >= 2 * LOOM_NS_PER_MS);
	/* The plain function reads the same clock: never behind the real clock. */
	prev = loom_clock_now_ns(clock);
	now = loom_clock_mono_ns();
	assert_true(now >= prev);
	assert_true(loom_clock_now_ns(clock) >= now);
	nanosleep(&pause, NULL);
	assert_true(loom_clock_mono_ns() - now >= 2 * LOOM_NS_PER_MS);
	/* Wall time is after 2020-01-01. */
	assert_true(loom_clock_wall_ns() > 1577836800ULL * LOOM_NS_PER_S);
}

/* ---- rng ------------------------------------------------------------------------------ */

static void test_rng_determinism(void **state)
{
	struct loom_rng a, b, c;

	(void)state;
	/* xoshiro256** seeded through splitmix64: fixed on every platform. */
	loom_rng_seed(&a, 0);
	assert_true(loom_rng_u64(&a) == 0x99ec5f36cb75f2b4ULL);
	assert_true(loom_rng_u64(&a) == 0xbf6e1f784956452aULL);
	assert_true(loom_rng_u64(&a) == 0x1a5f849d4933e6e0ULL);
	loom_rng_seed(&a, 42);
	assert_true(loom_rng_u64(&a) == 0x15780b2e0c2ec716ULL);

	/* Same seed, same sequence; a copied state forks an identical stream. */
	loom_rng_seed(&a, 1234);
	loom_rng_seed(&b, 1234);
	for (int i = 0; i < 1000; i++)
		assert_true(loom_rng_u64(&a) == loom_rng_u64(&b));
	c = a;
	for (int i = 0; i < 1000; i++) {
		assert_true(loom_rng_uniform(&a) == loom_rng_uniform(&c));
		assert_true(loom_rng_below(&a, 1000) == loom_rng_below(&c, 1000));
		assert_true(loom_rng_exp(&a, 3.0) == loom_rng_exp(&c, 3.0));
	}

	/* Different seeds, different sequences. */
	loom_rng_seed(&a, 1);
	loom_rng_seed(&b, 2);
	{
		int same = 0;

		for (int i = 0; i < 100; i++)
			same += loom_rng_u64(&a) == loom_rng_u64(&b);
		assert_true(same < 2);
	}
}

static void test_rng_uniform(void **state)
{
	struct loom_rng rng;
	double sum = 0;
	const int n = 100000;

	(void)state;
	loom_rng_seed(&rng, 7);
	for (int i = 0; i < n; i++) {
		double u = loom_rng_uniform(&rng);

		assert_true(u >= 0.0 && u < 1.0);
		sum += u;
	}
	assert_true(fabs(sum / n - 0.5) < 0.01);
}

static void test_rng_below(void **state)
{
	enum {
		NBUCKETS = 10,
		N = 100000
	};
	unsigned counts[NBUCKETS] = {0};
	const uint64_t big = (1ULL << 63) + 1; /* the worst case for rejection sampling */
	struct loom_rng rng;
	double chi2 = 0;

	(void)state;
	loom_rng_seed(&rng, 99);
	assert_int_equal(loom_rng_below(&rng, 0), 0);
	assert_int_equal(loom_rng_below(&rng, 1), 0);
	for (int i = 0; i < N; i++) {
		uint64_t x = loom_rng_below(&rng, NBUCKETS);

		assert_true(x < NBUCKETS);
		counts[x]++;
	}
	/* Each bucket expects 10000 (sd ~95); chi-square with 9 dof: 99.9% below 27.9. */
	for (int b = 0; b < NBUCKETS; b++) {
		double d = (double)counts[b] - (double)N / NBUCKETS;

		assert_true(counts[b] > 9500 && counts[b] < 10500);
		chi2 += d * d / ((double)N / NBUCKETS);
	}
	assert_true(chi2 < 27.9);

	for (int i = 0; i < 1000; i++) {
		assert_true(loom_rng_below(&rng, big) < big);
		assert_true(loom_rng_below(&rng, 2) < 2);
		assert_true(loom_rng_below(&rng, UINT64_MAX) < UINT64_MAX);
	}
	/* Both halves of [0, 2) show up. */
	{
		unsigned ones = 0;

		for (int i = 0; i < 1000; i++)
			ones += (unsigned)loom_rng_below(&rng, 2);
		assert_true(ones > 400 && ones < 600);
	}
}

static void test_rng_exp(void **state)
{
	const int n = 100000;
	const double mean = 2.0;
	struct loom_rng rng;
	double sum = 0, sumsq = 0;

	(void)state;
	loom_rng_seed(&rng, 2024);
	for (int i = 0; i < n; i++) {
		double x = loom_rng_exp(&rng, mean);

		assert_true(x >= 0.0 && isfinite(x));
		sum += x;
		sumsq += x * x;
	}
	/* The sample mean's sd is mean / sqrt(n) ~ 0.0063; allow 2%. */
	assert_true(fabs(sum / n - mean) < 0.02 * mean);
	/* Variance of an exponential is mean^2; allow 5%. */
	assert_true(fabs(sumsq / n - (sum / n) * (sum / n) - mean * mean) < 0.05 * mean * mean);
}

/* $LOOM_DATA wins when it has the file; a missing file still gets a path to report. */
static void test_data_path(void **state)
{
	char dir[] = "/tmp/loom-datapath-XXXXXX", file[64], buf[4096];
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/x.txt", dir);
	f = fopen(file, "w");
	assert_non_null(f);
	fclose(f);
	setenv("LOOM_DATA", dir, 1);
	assert_string_equal(loom_data_path("x.txt", buf, sizeof(buf)), file);
	/* not there: the first candidate, $LOOM_DATA's */
	snprintf(file, sizeof(file), "%s/none.txt", dir);
	assert_string_equal(loom_data_path("none.txt", buf, sizeof(buf)), file);
	/* without $LOOM_DATA a bundled file is still found (./data, $LOOM_SRCDIR or the source tree) */
	unsetenv("LOOM_DATA");
	loom_data_path("tpch/dags.txt", buf, sizeof(buf));
	assert_int_equal(access(buf, R_OK), 0);
	assert_string_equal(loom_data_path("none.txt", buf, sizeof(buf)), "data/none.txt");
	snprintf(file, sizeof(file), "%s/x.txt", dir);
	remove(file);
	rmdir(dir);
}

/* ---- unixsock ------------------------------------------------------------------------- */

/* Binds (and, if listen_too, listens on) a Unix socket at path; returns its fd. */
static int unix_bind(const char *path, bool listen_too)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	if (listen_too)
		assert_int_equal(listen(fd, 1), 0);
	return fd;
}

/* A regular file is refused and kept; a stale socket goes; a live one is refused. */
static void test_unixsock_clear_stale(void **state)
{
	char dir[] = "/tmp/loom-unixsock-XXXXXX", path[64], buf[16] = {0};
	struct loom_err err = {{0}};
	struct stat st;
	FILE *f;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s", dir);

	/* nothing there */
	assert_int_equal(loom_unixsock_clear_stale("test", path, &err), 0);

	/* a regular file: refused, named in the message, left in place */
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("keep me", f);
	fclose(f);
	assert_int_equal(loom_unixsock_clear_stale("test", path, &err), -EEXIST);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "exists and is not a socket; not removing it"));
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "keep me");
	assert_int_equal(unlink(path), 0);

	/* a stale socket (bound, closed): removed, and a new bind succeeds */
	close(unix_bind(path, false));
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(loom_unixsock_clear_stale("test", path, &err), 0);
	assert_int_equal(lstat(path, &st), -1);
	fd = unix_bind(path, true);

	/* a live socket: refused and left alone */
	assert_int_equal(loom_unixsock_clear_stale("test", path, &err), -EADDRINUSE);
	assert_non_null(strstr(err.msg, "another process is listening"));
	assert_int_equal(lstat(path, &st), 0);
	close(fd);

	/* a path too long for sun_path */
	char longp[200];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = 0;
	assert_int_equal(loom_unixsock_clear_stale("test", longp, &err), -ENAMETOOLONG);

	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_level_parse),
		cmocka_unit_test(test_log_level_set),
		cmocka_unit_test(test_log_output),
		cmocka_unit_test(test_err_set),
		cmocka_unit_test(test_negerrno),
		cmocka_unit_test(test_parse_u64),
		cmocka_unit_test(test_parse_double),
		cmocka_unit_test(test_vclock),
		cmocka_unit_test(test_real_clock),
		cmocka_unit_test(test_rng_determinism),
		cmocka_unit_test(test_rng_uniform),
		cmocka_unit_test(test_rng_below),
		cmocka_unit_test(test_rng_exp),
		cmocka_unit_test(test_data_path),
		cmocka_unit_test(test_unixsock_clear_stale),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
