/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for libloom_mpi's settings (controlplane/client/mpi_env.h),
 * without MPI: decimals and their ranges; $LOOM_MPI_HOST, $LOOM_MPI_JOB and
 * $LOOM_MPI_MIN_BYTES with every refusal's message; $LOOM_MPI_HOSTS lists
 * (good lists, the first match winning, empty entries skipped, malformed
 * entries and empty names refused also after a match, ids beyond the range,
 * the callback's view, names quoted at most 60 bytes), and out of memory.
 * The messages are those tests/mpi/ sees from the library.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controlplane/client/mpi_env.h"
#include "tests/oom.h"
#include "tests/precond.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define SENTINEL     0xa5a5a5a5u

/* ---- decimals --------------------------------------------------------------------------------- */

static void test_dec(void **state)
{
	static const struct {
		const char *s;
		unsigned long long lo, hi;
		bool ok;
		unsigned long long v;
	} cases[] = {
		{"0", 0, 10, true, 0},
		{"10", 0, 10, true, 10},
		{"007", 0, 10, true, 7},
		{"11", 0, 10, false, 0},
		{"0", 1, 10, false, 0},
		{"18446744073709551615", 0, UINT64_MAX, true, UINT64_MAX},
		{"18446744073709551616", 0, UINT64_MAX, false, 0},
		{"99999999999999999999999", 0, UINT64_MAX, false, 0},
		{"", 0, 10, false, 0},
		{"-1", 0, UINT64_MAX, false, 0},
		{"+1", 0, 10, false, 0},
		{" 1", 0, 10, false, 0},
		{"1 ", 0, 10, false, 0},
		{"1k", 0, UINT64_MAX, false, 0},
		{"0x10", 0, UINT64_MAX, false, 0},
		{"1.0", 0, 10, false, 0},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		unsigned long long v = SENTINEL;
		bool ok = loom_client_mpi_env_dec(cases[i].s, cases[i].lo, cases[i].hi, &v);

		if (ok != cases[i].ok)
			fail_msg("\"%s\" in %llu..%llu: %s, expected %s", cases[i].s, cases[i].lo,
				 cases[i].hi, ok ? "accepted" : "refused",
				 cases[i].ok ? "accepted" : "refused");
		assert_true(v == (ok ? cases[i].v : SENTINEL));
	}
	assert_false(loom_client_mpi_env_dec(NULL, 0, 10, NULL));
}

/* ---- LOOM_MPI_HOST, LOOM_MPI_JOB, LOOM_MPI_MIN_BYTES ------------------------------------------ */

static void test_host(void **state)
{
	struct loom_err err = {{0}};
	uint32_t host = SENTINEL;

	(void)state;
	assert_int_equal(loom_client_mpi_env_host("0", &host, &err), 0);
	assert_int_equal(host, 0);
	assert_int_equal(loom_client_mpi_env_host("4294967294", &host, &err), 0);
	assert_int_equal(host, 4294967294u);

	host = SENTINEL;
	assert_int_equal(loom_client_mpi_env_host("4294967295", &host, &err), -EINVAL);
	assert_string_equal(err.msg,
			    "LOOM_MPI_HOST=\"4294967295\" is not a host id (a decimal number)");
	assert_int_equal(host, SENTINEL);
	assert_int_equal(loom_client_mpi_env_host("abc", &host, &err), -EINVAL);
	assert_string_equal(err.msg, "LOOM_MPI_HOST=\"abc\" is not a host id (a decimal number)");
	assert_int_equal(loom_client_mpi_env_host("", &host, &err), -EINVAL);
	assert_int_equal(loom_client_mpi_env_host("-3", &host, &err), -EINVAL);
	assert_int_equal(host, SENTINEL);
}

static void test_job(void **state)
{
	struct loom_err err = {{0}};
	uint64_t job = SENTINEL;

	(void)state;
	assert_int_equal(loom_client_mpi_env_job("1", &job, &err), 0);
	assert_int_equal(job, 1);
	assert_int_equal(loom_client_mpi_env_job("1099511627775", &job, &err), 0);
	assert_true(job == LOOM_CLIENT_MPI_JOB_MAX);

	job = SENTINEL;
	assert_int_equal(loom_client_mpi_env_job("0", &job, &err), -EINVAL);
	assert_string_equal(err.msg, "LOOM_MPI_JOB=\"0\" is not a job id in 1..1099511627775");
	assert_int_equal(loom_client_mpi_env_job("1099511627776", &job, &err), -EINVAL);
	assert_string_equal(err.msg,
			    "LOOM_MPI_JOB=\"1099511627776\" is not a job id in 1..1099511627775");
	assert_int_equal(loom_client_mpi_env_job("77x", &job, &err), -EINVAL);
	assert_int_equal(job, SENTINEL);
}

static void test_min_bytes(void **state)
{
	struct loom_err err = {{0}};
	uint64_t b = SENTINEL;

	(void)state;
	assert_int_equal(loom_client_mpi_env_min_bytes("0", &b, &err), 0);
	assert_int_equal(b, 0);
	assert_int_equal(loom_client_mpi_env_min_bytes("18446744073709551615", &b, &err), 0);
	assert_true(b == UINT64_MAX);

	b = SENTINEL;
	assert_int_equal(loom_client_mpi_env_min_bytes("1k", &b, &err), -EINVAL);
	assert_string_equal(err.msg, "LOOM_MPI_MIN_BYTES=\"1k\" is not a number of bytes");
	assert_int_equal(loom_client_mpi_env_min_bytes("18446744073709551616", &b, &err), -EINVAL);
	assert_int_equal(b, SENTINEL);
}

/* ---- LOOM_MPI_HOSTS --------------------------------------------------------------------------- */

/* r and the host (SENTINEL when refused) for list map and processor name, matched by name. */
static int hosts(const char *map, const char *name, uint32_t *host, struct loom_err *err)
{
	*host = SENTINEL;
	err->msg[0] = '\0';
	return loom_client_mpi_env_hosts(map, name, NULL, NULL, host, err);
}

static void test_hosts_good(void **state)
{
	static const struct {
		const char *map, *name;
		uint32_t host;
	} cases[] = {
		{"node1=0,node2=1", "node1", 0},
		{"node1=0,node2=1", "node2", 1},
		{"elsewhere=9,n=5", "n", 5},
		{"a=1,a=2", "a", 1},                /* the first match wins */
		{"a=1,b=2,a=3", "a", 1},            /* ... also with entries between */
		{",,a=4,", "a", 4},                 /* empty entries are skipped */
		{"a=007", "a", 7},                  /* leading zeros */
		{"a=b=5", "a=b", 5},                /* NAME ends at the last '=' */
		{"a=4294967294", "a", 4294967294u}, /* the largest host id */
		{"node 1=3", "node 1", 3},          /* a NAME is taken as it is */
		{"10.0.0.1=2,::1=3,x=4", "x", 4},   /* addresses are NAMEs here */
	};
	struct loom_err err = {{0}};
	uint32_t host;

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		int r = hosts(cases[i].map, cases[i].name, &host, &err);

		if (r != 0)
			fail_msg("\"%s\" for %s: %d (%s)", cases[i].map, cases[i].name, r, err.msg);
		assert_int_equal(host, cases[i].host);
	}
}

static void test_hosts_bad(void **state)
{
	static const struct {
		const char *map, *entry;
	} cases[] = {
		{"nohostid", "nohostid"},                             /* no '=' */
		{"=3", "=3"},                                         /* empty NAME */
		{"node1=1,=3", "=3"},                                 /* ... after a match */
		{"node1=1,nohostid", "nohostid"},                     /* malformed after a match */
		{"a=", "a="},                                         /* empty ID */
		{"a==", "a=="},                                       /* ID after the last '=' */
		{"a=x", "a=x"},                                       /* ID not a number */
		{"a=-1", "a=-1"},                                     /* ... signed */
		{"a=+1", "a=+1"},                                     /* ... signed */
		{"a= 1", "a= 1"},                                     /* ... spaced */
		{"a=1 ", "a=1 "},                                     /* ... spaced */
		{"a=4294967295", "a=4294967295"},                     /* beyond the host ids */
		{"a=18446744073709551616", "a=18446744073709551616"}, /* beyond 64 bits */
		{"b=1,a=1k,c=2", "a=1k"},                             /* the first malformed one */
	};
	struct loom_err err = {{0}};
	char want[LOOM_ERR_MSG_MAX];
	uint32_t host;

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		assert_int_equal(hosts(cases[i].map, "node1", &host, &err), -EINVAL);
		snprintf(want, sizeof(want),
			 "LOOM_MPI_HOSTS: entry \"%s\" is not NAME=ID (ID a decimal host id)",
			 cases[i].entry);
		assert_string_equal(err.msg, want);
		assert_int_equal(host, SENTINEL);
	}
}

static void test_hosts_none(void **state)
{
	struct loom_err err = {{0}};
	uint32_t host;

	(void)state;
	assert_int_equal(hosts("elsewhere=3", "node1", &host, &err), -ENOENT);
	assert_string_equal(
		err.msg, "LOOM_MPI_HOSTS names neither processor 'node1' nor any of its addresses");
	assert_int_equal(host, SENTINEL);
	assert_int_equal(hosts(",,,", "node1", &host, &err), -ENOENT);
	assert_int_equal(hosts("node=1,node10=2", "node1", &host, &err), -ENOENT);
	assert_int_equal(hosts("a=1", "", &host, &err), -ENOENT);

	assert_int_equal(hosts("", "node1", &host, &err), -ENOENT);
	assert_string_equal(
		err.msg, "no host id for processor 'node1': set LOOM_MPI_HOST or LOOM_MPI_HOSTS");
	assert_int_equal(hosts(NULL, "node1", &host, &err), -ENOENT);
	assert_string_equal(
		err.msg, "no host id for processor 'node1': set LOOM_MPI_HOST or LOOM_MPI_HOSTS");
	assert_int_equal(host, SENTINEL);
}

/* A processor known as "node1" and by the addresses 10.0.0.1 and fe80::1. */
struct matcher {
	char keys[8][32];
	unsigned calls;
};

static bool match_node1(const char *key, void *ctx)
{
	struct matcher *m = ctx;

	assert_true(m->calls < ARRAY_LEN(m->keys));
	snprintf(m->keys[m->calls++], sizeof(m->keys[0]), "%s", key);
	return !strcmp(key, "node1") || !strcmp(key, "10.0.0.1") || !strcmp(key, "fe80::1");
}

static void test_hosts_match(void **state)
{
	struct loom_err err = {{0}};
	struct matcher m = {0};
	uint32_t host = SENTINEL;

	(void)state;
	/* by address; NAMEs as the callback sees them, none after the match */
	assert_int_equal(loom_client_mpi_env_hosts("other=1,10.0.0.1=2,node1=3,x=y=4", "node1",
						   match_node1, &m, &host, &err),
			 0);
	assert_int_equal(host, 2);
	assert_int_equal(m.calls, 2);
	assert_string_equal(m.keys[0], "other");
	assert_string_equal(m.keys[1], "10.0.0.1");

	/* every entry is checked, also after the match: the list is refused */
	memset(&m, 0, sizeof(m));
	host = SENTINEL;
	assert_int_equal(loom_client_mpi_env_hosts("fe80::1=5,bad", "node1", match_node1, &m, &host,
						   &err),
			 -EINVAL);
	assert_int_equal(host, SENTINEL);
	assert_int_equal(m.calls, 1);

	/* no entry matches: the message names the processor given */
	memset(&m, 0, sizeof(m));
	assert_int_equal(loom_client_mpi_env_hosts("a=1,b=2", "node1", match_node1, &m, &host,
						   &err),
			 -ENOENT);
	assert_int_equal(m.calls, 2);
	assert_string_equal(
		err.msg, "LOOM_MPI_HOSTS names neither processor 'node1' nor any of its addresses");
}

/* Values and names are quoted at most 60 bytes: every message fits libloom_mpi's report. */
static void test_long_values(void **state)
{
	char name[300], map[700], want[LOOM_ERR_MSG_MAX];
	struct loom_err err = {{0}};
	uint32_t host;
	uint64_t x;

	(void)state;
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(map, sizeof(map), "%s=oops", name);

	assert_int_equal(hosts(map, name, &host, &err), -EINVAL);
	snprintf(want, sizeof(want),
		 "LOOM_MPI_HOSTS: entry \"%.60s\" is not NAME=ID (ID a decimal host id)", name);
	assert_string_equal(err.msg, want);
	assert_true(strlen(err.msg) < LOOM_CLIENT_MPI_MSG_MAX);

	assert_int_equal(hosts("a=1", name, &host, &err), -ENOENT);
	assert_true(strlen(err.msg) < LOOM_CLIENT_MPI_MSG_MAX);
	assert_int_equal(hosts("", name, &host, &err), -ENOENT);
	assert_true(strlen(err.msg) < LOOM_CLIENT_MPI_MSG_MAX);

	assert_int_equal(loom_client_mpi_env_host(map, &host, &err), -EINVAL);
	assert_true(strlen(err.msg) < LOOM_CLIENT_MPI_MSG_MAX);
	assert_int_equal(loom_client_mpi_env_job(map, &x, &err), -EINVAL);
	assert_true(strlen(err.msg) < LOOM_CLIENT_MPI_MSG_MAX);
	assert_int_equal(loom_client_mpi_env_min_bytes(map, &x, &err), -EINVAL);
	assert_true(strlen(err.msg) < LOOM_CLIENT_MPI_MSG_MAX);

	/* a long list: the match is found past the first entries */
	snprintf(map, sizeof(map), "%s=1,node1=2", name);
	assert_int_equal(hosts(map, "node1", &host, &err), 0);
	assert_int_equal(host, 2);
}

/* ---- out of memory ---------------------------------------------------------------------------- */

/* In a child: a list too big to copy under the cap is refused with -ENOMEM, host untouched. */
static void oom_child(void)
{
	const size_t big = 8u << 20;
	char *map = malloc(big);
	struct loom_err err = {{0}};
	uint32_t host = SENTINEL;
	struct rlimit old;

	OOM_CHECK(map != NULL);
	memset(map, 'a', big - 3);
	memcpy(map + big - 3, "=1", 3);
	oom_cap(&old);
	OOM_CHECK(loom_client_mpi_env_hosts(map, "a", NULL, NULL, &host, &err) == -ENOMEM);
	OOM_CHECK(host == SENTINEL && !strcmp(err.msg, "out of memory"));
	oom_uncap(&old);
	free(map);
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
		cmocka_unit_test(test_dec),         cmocka_unit_test(test_host),
		cmocka_unit_test(test_job),         cmocka_unit_test(test_min_bytes),
		cmocka_unit_test(test_hosts_good),  cmocka_unit_test(test_hosts_bad),
		cmocka_unit_test(test_hosts_none),  cmocka_unit_test(test_hosts_match),
		cmocka_unit_test(test_long_values), cmocka_unit_test(test_oom),
	};
	size_t n = ARRAY_LEN(tests);

	n = precond_leave_out(tests, n, test_oom, oom_unsupported());
	return precond_run(tests, n, NULL, NULL);
}
