/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for controlplane/loomd/tenants.c: the tokens file's parser
 * (comments, blank lines, tabs, CRLF, several lines of one tenant, "-" for
 * a certificate's tenant, quotas), every kind of bad line refused with
 * "name:line: what" and never quoting a token, the file loader (a missing
 * file names the path), the token lookup (exact matches only, never a "-"
 * line), tenant names, and the announcement bucket of announce_rate.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "controlplane/loomd/tenants.h"

#define TOK_A  "aaaaaaaaaaaaaaaaaaaaaaaa"
#define TOK_A2 "a2a2a2a2a2a2a2a2a2a2a2a2"
#define TOK_B  "bbbbbbbbbbbbbbbb" /* LOOMD_TOKEN_MIN characters exactly */

static struct loomd_tokens *parse_ok(const char *text)
{
	struct loomd_tokens *t = NULL;
	struct loom_err err = {{0}};

	if (loomd_tokens_parse("t.tokens", text, strlen(text), &t, &err) < 0)
		fail_msg("unexpected error: %s", err.msg);
	assert_non_null(t);
	return t;
}

/* text must be refused with -want and a message starting "t.tokens:LINE: " holding needle. */
static void parse_bad(const char *text, size_t len, int want, unsigned line, const char *needle)
{
	struct loomd_tokens *t = NULL;
	struct loom_err err = {{0}};
	char prefix[64];
	int r = loomd_tokens_parse("t.tokens", text, len == SIZE_MAX ? strlen(text) : len, &t,
				   &err);

	if (r != -want)
		fail_msg("expected %d, got %d (%s) for:\n%s", -want, r, err.msg, text);
	assert_null(t);
	snprintf(prefix, sizeof(prefix), "t.tokens:%u: ", line);
	if (strncmp(err.msg, prefix, strlen(prefix)) || !strstr(err.msg, needle))
		fail_msg("message \"%s\" is not \"%s...%s...\"", err.msg, prefix, needle);
	/* a token is a secret: no message quotes one */
	assert_null(strstr(err.msg, TOK_A));
	assert_null(strstr(err.msg, TOK_B));
}

static void test_parse_good(void **state)
{
	const char *text = "# tenants of the test cluster\n"
			   "\n"
			   "spark   " TOK_A "   jobs=10 coflows=20   # rotated next week\n"
			   "spark\t" TOK_A2 "\r\n"
			   "  mpi  -  announce_rate=500 flows=1000\n"
			   "x.y_z-1 " TOK_B;
	struct loomd_tokens *t;

	(void)state;
	t = parse_ok(text);
	assert_int_equal(t->n, 4);
	assert_string_equal(t->v[0].tenant, "spark");
	assert_string_equal(t->v[0].token, TOK_A);
	assert_int_equal(t->v[0].line, 3);
	assert_int_equal(t->v[0].quota_set, LOOMD_QUOTA_JOBS | LOOMD_QUOTA_COFLOWS);
	assert_int_equal(t->v[0].quota.jobs, 10);
	assert_int_equal(t->v[0].quota.coflows, 20);
	assert_string_equal(t->v[1].tenant, "spark");
	assert_string_equal(t->v[1].token, TOK_A2);
	assert_int_equal(t->v[1].quota_set, 0);
	assert_int_equal(t->v[1].line, 4);
	assert_string_equal(t->v[2].tenant, "mpi");
	assert_string_equal(t->v[2].token, "");
	assert_int_equal(t->v[2].quota_set, LOOMD_QUOTA_RATE | LOOMD_QUOTA_FLOWS);
	assert_int_equal(t->v[2].quota.announce_rate, 500);
	assert_int_equal(t->v[2].quota.flows, 1000);
	assert_string_equal(t->v[3].tenant, "x.y_z-1");
	assert_string_equal(t->v[3].token, TOK_B);
	assert_int_equal(t->v[3].line, 6);

	/* lookups: exact tokens only; "-" lines have none */
	assert_ptr_equal(loomd_tokens_find(t, TOK_A), &t->v[0]);
	assert_ptr_equal(loomd_tokens_find(t, TOK_A2), &t->v[1]);
	assert_ptr_equal(loomd_tokens_find(t, TOK_B), &t->v[3]);
	assert_null(loomd_tokens_find(t, TOK_A "a"));
	assert_null(loomd_tokens_find(t, "aaaaaaaaaaaaaaaaaaaaaaa"));
	assert_null(loomd_tokens_find(t, ""));
	assert_null(loomd_tokens_find(t, "-"));
	assert_null(loomd_tokens_find(t, NULL));
	assert_null(loomd_tokens_find(NULL, TOK_A));
	loomd_tokens_free(t);

	/* an empty file, and one of comments: no tenants */
	t = parse_ok("");
	assert_int_equal(t->n, 0);
	loomd_tokens_free(t);
	t = parse_ok("# nothing yet\n   \n\t# still nothing\n");
	assert_int_equal(t->n, 0);
	loomd_tokens_free(t);
	assert_null(loomd_tokens_free(NULL));
}

static void test_parse_bad(void **state)
{
	char longline[1100], token300[400];
	static const char nul[] = "spark " TOK_A "\nmpi \0 -\n";

	(void)state;
	parse_bad("# one\nsp@rk " TOK_A "\n", SIZE_MAX, EINVAL, 2, "'sp@rk' is not a tenant name");
	parse_bad("spark\n", SIZE_MAX, EINVAL, 1, "tenant spark has no token");
	parse_bad("spark short\n", SIZE_MAX, EINVAL, 1, "its token has 5 characters");
	parse_bad("spark " TOK_A "\nmpi " TOK_A "\n", SIZE_MAX, EEXIST, 2,
		  "this token is also on line 1 (tenant spark)");
	parse_bad("spark " TOK_A " bogus=1\n", SIZE_MAX, EINVAL, 1, "unknown quota 'bogus'");
	parse_bad("spark " TOK_A " jobs\n", SIZE_MAX, EINVAL, 1, "'jobs' is not QUOTA=N");
	parse_bad("spark " TOK_A " jobs=ten\n", SIZE_MAX, EINVAL, 1,
		  "quota jobs: 'ten' is not a whole number");
	parse_bad("spark " TOK_A " jobs=-1\n", SIZE_MAX, EINVAL, 1, "quota jobs");
	parse_bad("spark " TOK_A " flows=1 flows=2\n", SIZE_MAX, EINVAL, 1,
		  "quota flows is given twice");
	parse_bad("spark " TOK_A " coflows=9999999999\n", SIZE_MAX, ERANGE, 1,
		  "quota coflows: 9999999999 is over");
	parse_bad("spark " TOK_A " jobs=1\nspark " TOK_B " jobs=2\n", SIZE_MAX, EEXIST, 2,
		  "tenant spark has quotas on line 1 already");
	parse_bad("spark " TOK_A "\x01\n", SIZE_MAX, EINVAL, 1, "control character 0x01");
	memset(longline, 'x', sizeof(longline));
	longline[sizeof(longline) - 1] = 0;
	parse_bad(longline, SIZE_MAX, EINVAL, 1, "line longer than 1024 characters");
	memset(token300, 'k', sizeof(token300));
	memcpy(token300, "spark ", 6);
	token300[6 + 300] = 0;
	parse_bad(token300, SIZE_MAX, EINVAL, 1, "its token has 300 characters");
	parse_bad(nul, sizeof(nul) - 1, EINVAL, 2, "a NUL character");
}

static void test_parse_bad_lengths(void **state)
{
	(void)state;
	/* an over-long tenant name, and a token with a non-ASCII byte */
	parse_bad("nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn " TOK_A,
		  SIZE_MAX, EINVAL, 1, "is not a tenant name");
	parse_bad("spark bbbbbbbbbbbbbbbb\xc3\xa9\n", SIZE_MAX, EINVAL, 1,
		  "not printable ASCII (position 17)");
}

static void test_load(void **state)
{
	char dir[] = "/tmp/loom-tokens-XXXXXX", path[64], cmd[96];
	struct loomd_tokens *t = NULL;
	struct loom_err err = {{0}};
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/tokens", dir);
	assert_int_equal(loomd_tokens_load(path, &t, &err), -ENOENT);
	assert_null(t);
	assert_non_null(strstr(err.msg, path));
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("# ok\nspark " TOK_A "\nmpi - jobs=3\nbroken\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(loomd_tokens_load(path, &t, &err), -EINVAL);
	assert_null(t);
	{
		char want[128];

		snprintf(want, sizeof(want), "%s:4: tenant broken has no token", path);
		assert_non_null(strstr(err.msg, want));
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("spark " TOK_A "\nmpi - jobs=3\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(loomd_tokens_load(path, &t, &err), 0);
	assert_int_equal(t->n, 2);
	assert_int_equal(t->v[1].quota.jobs, 3);
	loomd_tokens_free(t);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_names(void **state)
{
	(void)state;
	assert_true(loomd_tenant_name_valid("default"));
	assert_true(loomd_tenant_name_valid("a"));
	assert_true(loomd_tenant_name_valid("spark-1.prod_eu"));
	assert_false(loomd_tenant_name_valid(""));
	assert_false(loomd_tenant_name_valid("with space"));
	assert_false(loomd_tenant_name_valid("slash/y"));
	assert_false(loomd_tenant_name_valid("*.example.net"));
	assert_false(loomd_tenant_name_valid(
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
	assert_true(loomd_tenant_name_valid(
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
}

/* announce_rate: a bucket of one second's worth, refilled with time, never beyond. */
static void test_announce_bucket(void **state)
{
	struct loomd_tenant t = {.quota = {.announce_rate = 3}, .rate_tokens = 3, .rate_ns = 0};
	struct loomd_tenant free_ = {.quota = {0}};

	(void)state;
	for (int i = 0; i < 3; i++)
		assert_true(loomd_tenant_take_announce(&t, 0));
	assert_false(loomd_tenant_take_announce(&t, 0));
	assert_false(loomd_tenant_take_announce(&t, 0));
	/* a third of a second brings one back */
	assert_true(loomd_tenant_take_announce(&t, LOOM_NS_PER_S / 3 + 1000));
	assert_false(loomd_tenant_take_announce(&t, LOOM_NS_PER_S / 3 + 1000));
	/* a long pause fills the bucket, no further */
	for (int i = 0; i < 3; i++)
		assert_true(loomd_tenant_take_announce(&t, 100 * LOOM_NS_PER_S));
	assert_false(loomd_tenant_take_announce(&t, 100 * LOOM_NS_PER_S));
	/* a clock that goes back takes nothing and gives nothing */
	assert_false(loomd_tenant_take_announce(&t, 50 * LOOM_NS_PER_S));
	/* no quota: always */
	for (int i = 0; i < 1000; i++)
		assert_true(loomd_tenant_take_announce(&free_, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_parse_bad_lengths),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_announce_bucket),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
