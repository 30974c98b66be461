/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for controlplane/loomd/config.c: the defaults pass the checks;
 * every key takes a good value and refuses a bad one with a message naming
 * the key (and a refused value changes nothing); durations, rates and sizes
 * with their suffixes; ranges; an unknown key lists the known ones; a file
 * with comments, blank lines and quotes loads, and an error in one reports
 * "path:line:"; the same file with CRLF line endings loads the same, and a
 * bad one fails the same way; the checks refuse no listener and a bad
 * policy spec.
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
#include "controlplane/loomd/config.h"
#include "proto/wire.h"
#include "tests/unit/loomd/fixture.h"

static char tmpdir[PATH_MAX];

static int setup(void **state)
{
	const char *base = getenv("TMPDIR");

	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "%s/loom-config-XXXXXX", base && *base ? base : "/tmp");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* Sets key = value on a default config; it must be taken. */
static void expect_ok(struct loomd_config *c, const char *key, const char *value)
{
	struct loom_err err = {{0}};
	int r = loomd_config_set(c, key, value, &err);

	if (r != 0)
		fail_msg("%s = '%s' refused (%d): %s", key, value, r, err.msg);
}

/*
 * key = value must be refused as a bad value (-EINVAL, or -ERANGE for a
 * number out of its range), with a message that starts with the key, and
 * must leave the configuration as it was.
 */
static void expect_bad(const char *key, const char *value)
{
	struct loomd_config c, before;
	struct loom_err err = {{0}};
	char prefix[64];
	int r;

	loomd_config_default(&c);
	before = c;
	r = loomd_config_set(&c, key, value, &err);
	if (r != -EINVAL && r != -ERANGE)
		fail_msg("%s = '%s': got %d, want a refusal (-EINVAL or -ERANGE)", key, value, r);
	snprintf(prefix, sizeof(prefix), "%s: ", key);
	if (strncmp(err.msg, prefix, strlen(prefix)) != 0)
		fail_msg("%s = '%s': message '%s' does not start with the key", key, value,
			 err.msg);
	assert_memory_equal(&c, &before, sizeof(c));
}

static char *long_string(char *buf, size_t n)
{
	memset(buf, 'a', n);
	buf[n] = 0;
	return buf;
}

/* ---- defaults ------------------------------------------------------------------------------- */

static void test_defaults(void **state)
{
	struct loomd_config c;
	struct loom_err err = {{0}};

	(void)state;
	loomd_config_default(&c);
	assert_int_equal(loomd_config_check(&c, &err), 0);
	assert_string_equal(c.listen_unix, "/run/loom/loomd.sock");
	assert_string_equal(c.listen_tcp, "127.0.0.1:7420");
	assert_string_equal(c.policy, "sebf");
	assert_int_equal(c.journal_sync, 2);
	assert_int_equal(c.hosts, 150);
	assert_int_equal(c.classes, 8);
	assert_true(c.tick_ns == 10 * LOOM_NS_PER_MS);
	assert_int_equal(c.max_frame, WIRE_MAX_FRAME_DEFAULT);
	assert_int_equal(c.max_jobs, 10000);
	assert_int_equal(c.max_coflows, 100000);
	assert_int_equal(c.max_flows, 1000000);
	assert_true(c.unknown_flow_bytes == 1ULL << 20);
	assert_true(c.done_retention_ns == 60 * LOOM_NS_PER_S);
	assert_true(c.agent_timeout_ns == 30 * LOOM_NS_PER_S);
	assert_string_equal(c.log_level, "info");
	assert_false(c.virtual_clock);
}

/* ---- every key -------------------------------------------------------------------------------- */

static void test_string_keys(void **state)
{
	static const struct {
		const char *key;
		size_t size;
		size_t off;
	} keys[] = {
		{"listen_unix", sizeof(((struct loomd_config *)0)->listen_unix),
		 offsetof(struct loomd_config, listen_unix)},
		{"listen_tcp", LOOMD_ADDR_MAX, offsetof(struct loomd_config, listen_tcp)},
		{"admin_socket", sizeof(((struct loomd_config *)0)->admin_socket),
		 offsetof(struct loomd_config, admin_socket)},
		{"metrics", LOOMD_ADDR_MAX, offsetof(struct loomd_config, metrics)},
		{"journal", PATH_MAX, offsetof(struct loomd_config, journal)},
		{"policy", POLICY_SPEC_MAX, offsetof(struct loomd_config, policy)},
		{"weights", PATH_MAX, offsetof(struct loomd_config, weights)},
		{"topology", PATH_MAX, offsetof(struct loomd_config, topology)},
	};
	static char buf[PATH_MAX + 2];

	(void)state;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		struct loomd_config c;

		loomd_config_default(&c);
		expect_ok(&c, keys[i].key, "x:1");
		assert_string_equal((char *)&c + keys[i].off, "x:1");
		expect_ok(&c, keys[i].key, "");
		assert_string_equal((char *)&c + keys[i].off, "");
		/* the longest that fits, and one more */
		expect_ok(&c, keys[i].key, long_string(buf, keys[i].size - 1));
		assert_int_equal(strlen((char *)&c + keys[i].off), keys[i].size - 1);
		expect_bad(keys[i].key, long_string(buf, keys[i].size));
	}
}

static void test_number_keys(void **state)
{
	struct loomd_config c;
	char big[32];

	(void)state;
	loomd_config_default(&c);

	expect_ok(&c, "hosts", "16");
	assert_int_equal(c.hosts, 16);
	expect_ok(&c, "hosts", "2");
	snprintf(big, sizeof(big), "%u", TOPO_MAX_HOSTS);
	expect_ok(&c, "hosts", big);
	assert_int_equal(c.hosts, TOPO_MAX_HOSTS);
	snprintf(big, sizeof(big), "%u", TOPO_MAX_HOSTS + 1);
	expect_bad("hosts", big);
	expect_bad("hosts", "1");
	expect_bad("hosts", "sixteen");
	expect_bad("hosts", "-4");
	expect_bad("hosts", "16 ");
	expect_bad("hosts", "");

	expect_ok(&c, "classes", "1");
	assert_int_equal(c.classes, 1);
	expect_ok(&c, "classes", "64");
	assert_int_equal(c.classes, 64);
	expect_bad("classes", "0");
	expect_bad("classes", "65");

	expect_ok(&c, "seed", "0");
	assert_true(c.seed == 0);
	expect_ok(&c, "seed", "18446744073709551615");
	assert_true(c.seed == UINT64_MAX);
	expect_bad("seed", "18446744073709551616");
	expect_bad("seed", "-1");
	expect_bad("seed", "1.5");

	expect_ok(&c, "max_jobs", "1");
	assert_int_equal(c.max_jobs, 1);
	expect_bad("max_jobs", "0");
	expect_ok(&c, "max_coflows", "7");
	assert_int_equal(c.max_coflows, 7);
	expect_bad("max_coflows", "0");
	expect_bad("max_coflows", "4294967295");
	expect_ok(&c, "max_flows", "9");
	assert_int_equal(c.max_flows, 9);
	expect_bad("max_flows", "x");
	expect_ok(&c, "max_connections", "1000000");
	assert_int_equal(c.max_connections, 1000000);
	expect_bad("max_connections", "1000001");
	expect_bad("max_connections", "0");

	/* the other fields were not touched by these 32-bit stores */
	assert_int_equal(c.hosts, TOPO_MAX_HOSTS);
	assert_int_equal(c.classes, 64);
	assert_int_equal(c.max_jobs, 1);
}

static void test_enum_keys(void **state)
{
	static const char *const yes[] = {"1", "yes", "true", "on"};
	static const char *const no[] = {"0", "no", "false", "off"};
	struct loomd_config c;

	(void)state;
	loomd_config_default(&c);
	expect_ok(&c, "journal_sync", "off");
	assert_int_equal(c.journal_sync, 0);
	expect_ok(&c, "journal_sync", "normal");
	assert_int_equal(c.journal_sync, 1);
	expect_ok(&c, "journal_sync", "full");
	assert_int_equal(c.journal_sync, 2);
	expect_bad("journal_sync", "2");
	expect_bad("journal_sync", "FULL");

	expect_ok(&c, "log_level", "debug");
	assert_string_equal(c.log_level, "debug");
	expect_ok(&c, "log_level", "warn");
	assert_string_equal(c.log_level, "warn");
	expect_ok(&c, "log_level", "info");
	expect_bad("log_level", "loud");
	expect_bad("log_level", "");

	for (size_t i = 0; i < 4; i++) {
		expect_ok(&c, "virtual_clock", yes[i]);
		assert_true(c.virtual_clock);
		expect_ok(&c, "virtual_clock", no[i]);
		assert_false(c.virtual_clock);
	}
	expect_bad("virtual_clock", "maybe");
	expect_bad("virtual_clock", "2");
}

/* ---- units -------------------------------------------------------------------------------------- */

static void test_durations(void **state)
{
	struct loomd_config c;

	(void)state;
	loomd_config_default(&c);
	expect_ok(&c, "tick", "10ms");
	assert_true(c.tick_ns == 10 * LOOM_NS_PER_MS);
	expect_ok(&c, "tick", "2s");
	assert_true(c.tick_ns == 2 * LOOM_NS_PER_S);
	expect_ok(&c, "tick", "500us");
	assert_true(c.tick_ns == 500 * LOOM_NS_PER_US);
	expect_ok(&c, "tick", "1");
	assert_true(c.tick_ns == LOOM_NS_PER_S);
	expect_ok(&c, "tick", "0.25");
	assert_true(c.tick_ns == LOOM_NS_PER_S / 4);
	expect_ok(&c, "tick", "100000ns");
	assert_true(c.tick_ns == 100000);
	expect_ok(&c, "tick", "10s"); /* the top of its range */
	/* tick is bounded to [0.1ms, 10s] */
	expect_bad("tick", "99999ns");
	expect_bad("tick", "11s");
	expect_bad("tick", "0");
	expect_bad("tick", "10 ms");
	expect_bad("tick", "10msec");
	expect_bad("tick", "ms");
	expect_bad("tick", "-1s");
	expect_bad("tick", "");

	expect_ok(&c, "done_retention", "0");
	assert_true(c.done_retention_ns == 0);
	expect_ok(&c, "done_retention", "2m");
	assert_true(c.done_retention_ns == 120 * LOOM_NS_PER_S);
	expect_ok(&c, "done_retention", "1h");
	assert_true(c.done_retention_ns == 3600 * LOOM_NS_PER_S);
	expect_bad("done_retention", "soon");
	expect_bad("done_retention", "1e30h");

	expect_ok(&c, "agent_timeout", "0");
	assert_true(c.agent_timeout_ns == 0);
	expect_ok(&c, "agent_timeout", "30s");
	assert_true(c.agent_timeout_ns == 30 * LOOM_NS_PER_S);
	expect_bad("agent_timeout", "30x");
}

static void test_rates(void **state)
{
	struct loomd_config c;

	(void)state;
	loomd_config_default(&c);
	expect_ok(&c, "link_bps", "10G");
	assert_true(c.link_bps == 10000000000ULL);
	expect_ok(&c, "link_bps", "100M");
	assert_true(c.link_bps == 100000000ULL);
	expect_ok(&c, "link_bps", "1Gbit");
	assert_true(c.link_bps == 1000000000ULL);
	expect_ok(&c, "link_bps", "25k");
	assert_true(c.link_bps == 25000);
	expect_ok(&c, "link_bps", "2.5G");
	assert_true(c.link_bps == 2500000000ULL);
	expect_ok(&c, "link_bps", "1000000");
	assert_true(c.link_bps == 1000000);
	expect_ok(&c, "link_bps", "1000bit");
	assert_true(c.link_bps == 1000);
	expect_bad("link_bps", "999");
	expect_bad("link_bps", "10GB");
	expect_bad("link_bps", "10Gbps");
	expect_bad("link_bps", "fast");
	expect_bad("link_bps", "-1G");
	expect_ok(&c, "link_bps", "100000T");
	assert_true(c.link_bps == 100000000000000000ULL);
	expect_bad("link_bps", "1e20");
}

static void test_sizes(void **state)
{
	struct loomd_config c;

	(void)state;
	loomd_config_default(&c);
	expect_ok(&c, "max_frame", "4M");
	assert_int_equal(c.max_frame, 4u << 20);
	expect_ok(&c, "max_frame", "65536");
	assert_int_equal(c.max_frame, 65536);
	expect_ok(&c, "max_frame", "64k");
	assert_int_equal(c.max_frame, 65536);
	expect_ok(&c, "max_frame", "1G");
	assert_int_equal(c.max_frame, 1u << 30);
	expect_ok(&c, "max_frame", "2MB");
	assert_int_equal(c.max_frame, 2u << 20);
	/* IEC prefixes are exact powers of 1024, SI ones with a B powers of 1000 */
	expect_ok(&c, "max_frame", "4Mi");
	assert_int_equal(c.max_frame, 4u << 20);
	expect_ok(&c, "max_frame", "4MiB");
	assert_int_equal(c.max_frame, 4u << 20);
	expect_ok(&c, "max_frame", "1.5Ki");
	assert_int_equal(c.max_frame, 1536);
	expect_bad("max_frame", "1024.5");
	expect_bad("max_frame", "1e30");
	expect_ok(&c, "max_frame", "1024");
	expect_bad("max_frame", "1023");
	expect_bad("max_frame", "2G");
	expect_bad("max_frame", "4Mbit");
	expect_bad("max_frame", "4 M");
	expect_bad("max_frame", "big");

	expect_ok(&c, "unknown_flow_bytes", "1M");
	assert_true(c.unknown_flow_bytes == 1ULL << 20);
	expect_ok(&c, "unknown_flow_bytes", "3T");
	assert_true(c.unknown_flow_bytes == 3ULL << 40);
	expect_bad("unknown_flow_bytes", "0");
	expect_bad("unknown_flow_bytes", "2048T"); /* above 2^50 */
	/* max_frame is 32-bit: setting it did not spill into its neighbours */
	assert_int_equal(c.max_frame, 1024);
	assert_int_equal(c.max_jobs, 10000);
}

/* ---- unknown keys ----------------------------------------------------------------------------- */

static void test_unknown_key(void **state)
{
	static const char *const all[] = {
		"listen_unix",    "listen_tcp",    "admin_socket",    "metrics",
		"journal",        "journal_sync",  "policy",          "weights",
		"topology",       "hosts",         "link_bps",        "classes",
		"tick",           "seed",          "max_frame",       "max_jobs",
		"max_coflows",    "max_flows",     "max_connections", "unknown_flow_bytes",
		"done_retention", "agent_timeout", "log_level",       "virtual_clock",
	};
	struct loomd_config c, before;
	struct loom_err err = {{0}};

	(void)state;
	loomd_config_default(&c);
	before = c;
	assert_int_equal(loomd_config_set(&c, "hostz", "4", &err), -ENOENT);
	assert_contains(err.msg, "unknown key 'hostz'");
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		assert_contains(err.msg, all[i]);
	assert_memory_equal(&c, &before, sizeof(c));
	/* keys are case-sensitive and whole */
	assert_int_equal(loomd_config_set(&c, "Hosts", "4", &err), -ENOENT);
	assert_int_equal(loomd_config_set(&c, "host", "4", &err), -ENOENT);
	assert_int_equal(loomd_config_set(&c, "", "4", &err), -ENOENT);
}

/* ---- files ---------------------------------------------------------------------------------- */

static void test_load_file(void **state)
{
	char path[PATH_MAX + 32];
	struct loomd_config c;
	struct loom_err err = {{0}};

	(void)state;
	snprintf(path, sizeof(path), "%s/good.conf", tmpdir);
	write_file(path, "# loomd configuration\n"
			 "\n"
			 "   # an indented comment\n"
			 "hosts = 16\n"
			 "\tclasses=4   \n"
			 "policy = \"sincronia:rates=greedy\"   # a comment after a value\n"
			 "listen_unix = \"\"\n"
			 "listen_tcp = [::1]:7420\n"
			 "journal = \"/tmp/with space/j.db\"\n"
			 "tick = 5ms\n"
			 "link_bps = 10G\n"
			 "max_frame = 1M\n"
			 "\n"
			 "virtual_clock = yes\n"
			 "topology = \"/tmp/a # b.topo\" # '#' in quotes is the value's\n"
			 "weights = \"\n"    /* one quote alone is kept */
			 "log_level=debug"); /* no final newline */
	loomd_config_default(&c);
	if (loomd_config_load(&c, path, &err) != 0)
		fail_msg("load: %s", err.msg);
	assert_int_equal(c.hosts, 16);
	assert_int_equal(c.classes, 4);
	assert_string_equal(c.policy, "sincronia:rates=greedy");
	assert_string_equal(c.listen_unix, "");
	assert_string_equal(c.listen_tcp, "[::1]:7420");
	assert_string_equal(c.journal, "/tmp/with space/j.db");
	assert_string_equal(c.topology, "/tmp/a # b.topo");
	assert_true(c.tick_ns == 5 * LOOM_NS_PER_MS);
	assert_true(c.link_bps == 10000000000ULL);
	assert_int_equal(c.max_frame, 1u << 20);
	assert_true(c.virtual_clock);
	assert_string_equal(c.weights, "\"");
	assert_string_equal(c.log_level, "debug");
	/* untouched keys keep their defaults */
	assert_string_equal(c.admin_socket, "/run/loom/admin.sock");
	assert_int_equal(loomd_config_check(&c, &err), 0);

	/* an empty file changes nothing */
	snprintf(path, sizeof(path), "%s/empty.conf", tmpdir);
	write_file(path, "");
	{
		struct loomd_config d, before;

		loomd_config_default(&d);
		before = d;
		assert_int_equal(loomd_config_load(&d, path, &err), 0);
		assert_memory_equal(&d, &before, sizeof(d));
	}
}

static void test_load_errors(void **state)
{
	char path[PATH_MAX + 32], want[PATH_MAX + 128];
	struct loomd_config c;
	struct loom_err err = {{0}};
	char *big;

	(void)state;
	/* a bad value on line 4 */
	snprintf(path, sizeof(path), "%s/bad-value.conf", tmpdir);
	write_file(path, "# comment\n"
			 "hosts = 16\n"
			 "\n"
			 "classes = 65\n"
			 "tick = 1s\n");
	loomd_config_default(&c);
	assert_true(loomd_config_load(&c, path, &err) < 0);
	snprintf(want, sizeof(want), "%s:4: classes: ", path);
	if (strncmp(err.msg, want, strlen(want)) != 0)
		fail_msg("'%s' does not start with '%s'", err.msg, want);
	assert_int_equal(c.hosts, 16); /* lines before the error were applied */

	/* an unknown key on line 2 */
	snprintf(path, sizeof(path), "%s/bad-key.conf", tmpdir);
	write_file(path, "hosts = 8\nhostz = 8\n");
	loomd_config_default(&c);
	assert_int_equal(loomd_config_load(&c, path, &err), -ENOENT);
	snprintf(want, sizeof(want), "%s:2: unknown key 'hostz'", path);
	assert_contains(err.msg, want);

	/* a line that is not key = value */
	snprintf(path, sizeof(path), "%s/no-equals.conf", tmpdir);
	write_file(path, "hosts = 8\n\n\njust words\n");
	loomd_config_default(&c);
	assert_int_equal(loomd_config_load(&c, path, &err), -EINVAL);
	snprintf(want, sizeof(want), "%s:4: expected 'key = value'", path);
	assert_contains(err.msg, want);

	/* a bad duration after a comment-only line */
	snprintf(path, sizeof(path), "%s/bad-dur.conf", tmpdir);
	write_file(path, "#\nagent_timeout = \"soon\"\n");
	loomd_config_default(&c);
	assert_int_equal(loomd_config_load(&c, path, &err), -EINVAL);
	snprintf(want, sizeof(want), "%s:2: agent_timeout: 'soon' is not a duration", path);
	assert_contains(err.msg, want);

	/* a line too long to read */
	snprintf(path, sizeof(path), "%s/long.conf", tmpdir);
	big = malloc(9000);
	assert_non_null(big);
	memcpy(big, "hosts = 8\npolicy = ", 19);
	memset(big + 19, 'x', 8000);
	strcpy(big + 8019, "\n");
	write_file(path, big);
	free(big);
	loomd_config_default(&c);
	assert_int_equal(loomd_config_load(&c, path, &err), -EINVAL);
	snprintf(want, sizeof(want), "%s:2: line longer than", path);
	assert_contains(err.msg, want);

	/* a file that is not there */
	snprintf(path, sizeof(path), "%s/absent.conf", tmpdir);
	loomd_config_default(&c);
	assert_int_equal(loomd_config_load(&c, path, &err), -ENOENT);
	assert_contains(err.msg, path);
}

/* text with every "\n" made "\r\n" (malloc'd). */
static char *crlf_of(const char *text)
{
	char *out = malloc(2 * strlen(text) + 1), *o = out;

	assert_non_null(out);
	for (const char *s = text; *s; s++) {
		if (*s == '\n')
			*o++ = '\r';
		*o++ = *s;
	}
	*o = '\0';
	return out;
}

/* Writes text to name and its CRLF form to crlf-name under tmpdir. */
static void write_both(const char *name, const char *text, char *lf, char *crlf, size_t size)
{
	char *c = crlf_of(text);

	snprintf(lf, size, "%s/%s", tmpdir, name);
	snprintf(crlf, size, "%s/crlf-%s", tmpdir, name);
	write_file(lf, text);
	write_file(crlf, c);
	free(c);
}

/*
 * CRLF line endings (a file edited on Windows) read as LF: the same
 * configuration, and for a bad file the same error at the same line, with
 * no carriage return in the message.
 */
static void test_load_crlf(void **state)
{
	static const char *const bad[] = {
		"# comment\nhosts = 16\n\nclasses = 65\n",
		"hosts = 8\nhostz = 8\n",
		"hosts = 8\n\n\njust words\n",
		"#\nagent_timeout = \"soon\"\n",
		"policy = nosuch\n",
	};
	char lf[PATH_MAX + 32], crlf[PATH_MAX + 32];
	struct loomd_config a, b;
	struct loom_err ea = {{0}}, eb = {{0}};

	(void)state;
	write_both("good.conf",
		   "# loomd configuration\n"
		   "\n"
		   "hosts = 16\n"
		   "\tclasses=4   \n"
		   "policy = \"sincronia:rates=greedy\"   # a comment after a value\n"
		   "listen_unix = \"\"\n"
		   "journal = \"/tmp/with space/j.db\"\n"
		   "tick = 5ms\n"
		   "link_bps = 10G\n"
		   "virtual_clock = yes\n"
		   "log_level=debug\n",
		   lf, crlf, sizeof(lf));
	loomd_config_default(&a);
	loomd_config_default(&b);
	if (loomd_config_load(&a, lf, &ea) != 0)
		fail_msg("LF: %s", ea.msg);
	if (loomd_config_load(&b, crlf, &eb) != 0)
		fail_msg("CRLF: %s", eb.msg);
	assert_string_equal(b.policy, "sincronia:rates=greedy");
	assert_string_equal(b.journal, "/tmp/with space/j.db");
	assert_string_equal(b.log_level, "debug");
	assert_int_equal(b.classes, 4);
	assert_true(b.virtual_clock);
	assert_memory_equal(&a, &b, sizeof(a));
	assert_int_equal(loomd_config_check(&b, &eb), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char name[32];
		int ra, rb;

		snprintf(name, sizeof(name), "bad%zu.conf", i);
		write_both(name, bad[i], lf, crlf, sizeof(lf));
		loomd_config_default(&a);
		loomd_config_default(&b);
		ra = loomd_config_load(&a, lf, &ea);
		if (ra == 0)
			ra = loomd_config_check(&a, &ea);
		rb = loomd_config_load(&b, crlf, &eb);
		if (rb == 0)
			rb = loomd_config_check(&b, &eb);
		assert_true(ra < 0);
		assert_int_equal(ra, rb);
		assert_null(strchr(eb.msg, '\r'));
		/* the same message but for the file name */
		if (strstr(ea.msg, lf) == ea.msg) {
			assert_true(strstr(eb.msg, crlf) == eb.msg);
			assert_string_equal(ea.msg + strlen(lf), eb.msg + strlen(crlf));
		} else {
			assert_string_equal(ea.msg, eb.msg);
		}
	}
}

/* ---- checks --------------------------------------------------------------------------------- */

static void test_check(void **state)
{
	struct loomd_config c;
	struct loom_err err = {{0}};

	(void)state;
	loomd_config_default(&c);
	expect_ok(&c, "listen_unix", "");
	expect_ok(&c, "listen_tcp", "");
	assert_int_equal(loomd_config_check(&c, &err), -EINVAL);
	assert_contains(err.msg, "nothing to listen on");
	expect_ok(&c, "listen_tcp", "127.0.0.1:1");
	assert_int_equal(loomd_config_check(&c, &err), 0);
	expect_ok(&c, "listen_tcp", "");
	expect_ok(&c, "listen_unix", "/tmp/x.sock");
	assert_int_equal(loomd_config_check(&c, &err), 0);

	/* malformed addresses: -EINVAL, in common/addr's words */
	loomd_config_default(&c);
	expect_ok(&c, "listen_tcp", "::1:7420");
	assert_int_equal(loomd_config_check(&c, &err), -EINVAL);
	assert_contains(err.msg, "listen_tcp \"::1:7420\": an IPv6 host goes in brackets");
	loomd_config_default(&c);
	expect_ok(&c, "metrics", "127.0.0.1:70000");
	assert_int_equal(loomd_config_check(&c, &err), -EINVAL);
	assert_contains(err.msg, "metrics \"127.0.0.1:70000\"");

	loomd_config_default(&c);
	expect_ok(&c, "policy", "nosuchpolicy");
	assert_int_equal(loomd_config_check(&c, &err), -EINVAL);
	assert_contains(err.msg, "policy: ");
	assert_contains(err.msg, "nosuchpolicy");
	expect_ok(&c, "policy", "sincronia:rates=sideways");
	assert_int_equal(loomd_config_check(&c, &err), -EINVAL);
	assert_contains(err.msg, "policy: ");
	expect_ok(&c, "policy", "hindsight:evals=10");
	assert_int_equal(loomd_config_check(&c, &err), -EINVAL);
	assert_contains(err.msg, "policy 'hindsight' needs every job of a trace in advance");
	expect_ok(&c, "policy", "sincronia:rates=greedy");
	assert_int_equal(loomd_config_check(&c, &err), 0);
	expect_ok(&c, "policy", "");
	assert_int_equal(loomd_config_check(&c, &err), -EINVAL);

	/* class_assign: conflict by default, per-host, nothing else */
	loomd_config_default(&c);
	assert_string_equal(c.class_assign, "conflict");
	assert_int_equal(loomd_config_check(&c, &err), 0);
	expect_ok(&c, "class_assign", "per-host");
	assert_int_equal(loomd_config_check(&c, &err), 0);
	expect_ok(&c, "class_assign", "perhost");
	assert_int_equal(loomd_config_check(&c, &err), -EINVAL);
	assert_contains(err.msg, "class_assign: 'perhost' is not one of conflict, per-host");
	expect_ok(&c, "class_assign", "");
	assert_int_equal(loomd_config_check(&c, &err), -EINVAL);
	assert_contains(err.msg, "class_assign");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),    cmocka_unit_test(test_string_keys),
		cmocka_unit_test(test_number_keys), cmocka_unit_test(test_enum_keys),
		cmocka_unit_test(test_durations),   cmocka_unit_test(test_rates),
		cmocka_unit_test(test_sizes),       cmocka_unit_test(test_unknown_key),
		cmocka_unit_test(test_load_file),   cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_load_crlf),   cmocka_unit_test(test_check),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
