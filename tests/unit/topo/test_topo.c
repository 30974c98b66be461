/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for topo/: the constructors, port numbering, capacities, the
 * topology file (every accepted shape, every rejected kind with its message,
 * save -> load round trips) and the seed corpus of the topo fuzz target.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "topo/topo.h"

#define GBPS 1000000000ULL

static struct topo *parse(const char *json, struct loom_err *err)
{
	return topo_parse_json(json, strlen(json), "t.json", err);
}

/* Makes a unique temporary file name under /tmp (the file exists, empty). */
static void temp_path(char *buf, size_t len)
{
	int fd;

	snprintf(buf, len, "/tmp/loom-test-topo-%ld-XXXXXX", (long)getpid());
	fd = mkstemp(buf);
	assert_true(fd >= 0);
	close(fd);
}

static void assert_same_topo(const struct topo *a, const struct topo *b)
{
	assert_int_equal(a->nhosts, b->nhosts);
	assert_int_equal(a->nracks, b->nracks);
	assert_int_equal(a->nports, b->nports);
	assert_memory_equal(a->port_bps, b->port_bps, a->nports * sizeof(*a->port_bps));
	if (a->nracks)
		assert_memory_equal(a->rack_of, b->rack_of, a->nhosts * sizeof(*a->rack_of));
	else
		assert_null(b->rack_of);
}

/* ---- constructors --------------------------------------------------------------------- */

static void test_bigswitch(void **state)
{
	struct topo *t = topo_new_bigswitch(4, 100);

	(void)state;
	assert_non_null(t);
	assert_int_equal(t->nhosts, 4);
	assert_int_equal(t->nracks, 0);
	assert_int_equal(t->nports, 8);
	assert_null(t->rack_of);
	for (uint32_t p = 0; p < t->nports; p++)
		assert_int_equal(t->port_bps[p], 100);
	assert_int_equal(topo_port_up(t, 3), 3);
	assert_int_equal(topo_port_down(t, 3), 7);
	assert_null(topo_free(t));
	assert_null(topo_free(NULL));

	errno = 0;
	assert_null(topo_new_bigswitch(0, 100));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(topo_new_bigswitch(4, 0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(topo_new_bigswitch(TOPO_MAX_HOSTS + 1, 100));
	assert_int_equal(errno, EINVAL);
	t = topo_new_bigswitch(TOPO_MAX_HOSTS, 1);
	assert_non_null(t);
	topo_free(t);
}

static void test_racks(void **state)
{
	struct topo *t = topo_new_racks(2, 3, 100, 2.0);

	(void)state;
	assert_non_null(t);
	assert_int_equal(t->nhosts, 6);
	assert_int_equal(t->nracks, 2);
	assert_int_equal(t->nports, 16);
	for (uint32_t h = 0; h < 6; h++) {
		assert_int_equal(t->rack_of[h], h / 3);
		assert_int_equal(t->port_bps[topo_port_up(t, h)], 100);
		assert_int_equal(t->port_bps[topo_port_down(t, h)], 100);
	}
	/* Rack links: 3 hosts * 100 / 2. */
	for (uint32_t p = 12; p < 16; p++)
		assert_int_equal(t->port_bps[p], 150);
	topo_free(t);

	t = topo_new_racks(1, 1, 7, 1.0);
	assert_non_null(t);
	assert_int_equal(t->port_bps[2], 7);
	assert_int_equal(t->port_bps[3], 7);
	topo_free(t);

	errno = 0;
	assert_null(topo_new_racks(0, 3, 100, 1.0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(topo_new_racks(2, 0, 100, 1.0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(topo_new_racks(2, 3, 0, 1.0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(topo_new_racks(2, 3, 100, 0.5));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(topo_new_racks(2, 3, 100, NAN));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(topo_new_racks(1024, 1025, 100, 1.0)); /* > TOPO_MAX_HOSTS hosts */
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(topo_new_racks(2, 1, 1, 4.0)); /* rack link below 1 bit/s */
	assert_int_equal(errno, EINVAL);
}

static void test_flow_ports(void **state)
{
	uint32_t ports[TOPO_MAX_FLOW_PORTS];
	struct topo *t = topo_new_racks(2, 3, 100, 1.0);
	struct topo *bs = topo_new_bigswitch(6, 100);

	(void)state;
	assert_non_null(t);
	assert_non_null(bs);

	/* Same rack: the source uplink and destination downlink only. */
	assert_int_equal(topo_flow_ports(t, 0, 2, ports), 2);
	assert_int_equal(ports[0], 0);
	assert_int_equal(ports[1], 6 + 2);

	/* Across racks: plus the rack uplink of src's rack and rack downlink of dst's. */
	assert_int_equal(topo_flow_ports(t, 1, 4, ports), 4);
	assert_int_equal(ports[0], 1);
	assert_int_equal(ports[1], 6 + 4);
	assert_int_equal(ports[2], 12 + 0);
	assert_int_equal(ports[3], 12 + 2 + 1);

	assert_int_equal(topo_flow_ports(t, 5, 0, ports), 4);
	assert_int_equal(ports[0], 5);
	assert_int_equal(ports[1], 6);
	assert_int_equal(ports[2], 12 + 1);
	assert_int_equal(ports[3], 12 + 2 + 0);

	/* Big switch: always two ports, even host to itself. */
	assert_int_equal(topo_flow_ports(bs, 1, 4, ports), 2);
	assert_int_equal(ports[0], 1);
	assert_int_equal(ports[1], 10);
	assert_int_equal(topo_flow_ports(bs, 3, 3, ports), 2);
	assert_int_equal(ports[0], 3);
	assert_int_equal(ports[1], 9);

	topo_free(t);
	topo_free(bs);
}

static void test_capacities(void **state)
{
	struct loom_err err = {{0}};
	struct topo *t, *c;

	(void)state;
	t = topo_new_racks(4, 16, 10 * GBPS, 4.0);
	assert_non_null(t);
	assert_true(topo_total_up_bps(t) == 64.0 * 10 * GBPS);
	assert_int_equal(t->port_bps[2 * 64], 40 * GBPS);

	c = topo_clone(t);
	assert_non_null(c);
	assert_ptr_not_equal(c->port_bps, t->port_bps);
	assert_ptr_not_equal(c->rack_of, t->rack_of);
	assert_same_topo(t, c);
	c->port_bps[0] = 1;
	assert_int_equal(t->port_bps[0], 10 * GBPS);
	topo_free(c);
	topo_free(t);

	t = parse("{\"hosts\": [{\"up_bps\": 5}, {\"up_bps\": 7, \"down_bps\": 1}]}", &err);
	assert_non_null(t);
	assert_true(topo_total_up_bps(t) == 12.0);
	topo_free(t);
}

/* ---- the topology file: accepted shapes ----------------------------------------------- */

static void test_parse_bigswitch(void **state)
{
	struct loom_err err = {{0}};
	struct topo *t;

	(void)state;
	t = parse("{\"hosts\": 150, \"link_bps\": 1073741824}", &err);
	assert_non_null(t);
	assert_int_equal(t->nhosts, 150);
	assert_int_equal(t->nracks, 0);
	for (uint32_t p = 0; p < t->nports; p++)
		assert_int_equal(t->port_bps[p], 1073741824);
	topo_free(t);

	/* link_bps defaults to TOPO_DEFAULT_BPS; a whole-valued real is accepted. */
	t = parse("{\"hosts\": 3}", &err);
	assert_non_null(t);
	assert_int_equal(t->port_bps[5], TOPO_DEFAULT_BPS);
	topo_free(t);
	t = parse("{\"link_bps\": 1e10, \"hosts\": 1}", &err);
	assert_non_null(t);
	assert_int_equal(t->port_bps[1], 10 * GBPS);
	topo_free(t);
}

static void test_parse_host_list(void **state)
{
	struct loom_err err = {{0}};
	struct topo *t;

	(void)state;
	t = parse("{\"link_bps\": 10,"
		  " \"racks\": {\"count\": 2, \"up_bps\": 20, \"down_bps\": [30, 40]},"
		  " \"hosts\": [{\"rack\": 1}, {\"up_bps\": 1, \"down_bps\": 2, \"rack\": 0},"
		  "  {\"bps\": 5, \"rack\": 1}, {\"bps\": 5, \"down_bps\": 6, \"rack\": 0}]}",
		  &err);
	assert_non_null(t);
	assert_int_equal(t->nhosts, 4);
	assert_int_equal(t->nracks, 2);
	assert_int_equal(t->nports, 12);
	{
		const uint64_t want[12] = {10, 1, 5, 5, 10, 2, 5, 6, 20, 20, 30, 40};
		const uint32_t racks[4] = {1, 0, 1, 0};

		assert_memory_equal(t->port_bps, want, sizeof(want));
		assert_memory_equal(t->rack_of, racks, sizeof(racks));
	}
	topo_free(t);

	/* Rack capacities default to racks.bps, then to link_bps, then TOPO_DEFAULT_BPS. */
	t = parse("{\"racks\": {\"count\": 1, \"bps\": 9}, \"hosts\": [{\"rack\": 0}]}", &err);
	assert_non_null(t);
	assert_int_equal(t->port_bps[0], TOPO_DEFAULT_BPS);
	assert_int_equal(t->port_bps[2], 9);
	assert_int_equal(t->port_bps[3], 9);
	topo_free(t);
	t = parse("{\"link_bps\": 3, \"racks\": {\"count\": 1}, \"hosts\": [{\"rack\": 0}]}", &err);
	assert_non_null(t);
	assert_int_equal(t->port_bps[3], 3);
	topo_free(t);

	/* No racks: no rack ports, no rack_of. */
	t = parse("{\"hosts\": [{}, {\"up_bps\": 2}]}", &err);
	assert_non_null(t);
	assert_int_equal(t->nracks, 0);
	assert_int_equal(t->nports, 4);
	assert_null(t->rack_of);
	assert_int_equal(t->port_bps[1], 2);
	assert_int_equal(t->port_bps[3], TOPO_DEFAULT_BPS);
	topo_free(t);
}

static void test_parse_racks(void **state)
{
	struct loom_err err = {{0}};
	struct topo *t, *want;

	(void)state;
	t = parse("{\"racks\": {\"count\": 4, \"hosts_per_rack\": 16, \"oversubscription\": 4},"
		  " \"link_bps\": 10000000000}",
		  &err);
	assert_non_null(t);
	want = topo_new_racks(4, 16, 10 * GBPS, 4.0);
	assert_same_topo(want, t);
	topo_free(want);
	topo_free(t);

	/* oversubscription defaults to 1 and may be fractional. */
	t = parse("{\"racks\": {\"count\": 2, \"hosts_per_rack\": 3}, \"link_bps\": 100}", &err);
	assert_non_null(t);
	assert_int_equal(t->port_bps[12], 300);
	topo_free(t);
	t = parse("{\"racks\": {\"count\": 2, \"hosts_per_rack\": 3, \"oversubscription\": 1.5},"
		  " \"link_bps\": 100}",
		  &err);
	assert_non_null(t);
	assert_int_equal(t->port_bps[15], 200);
	topo_free(t);
}

/* ---- the topology file: rejected inputs ----------------------------------------------- */

struct bad_case {
	const char *json;
	const char *msg; /* the whole expected message */
};

static const struct bad_case bad_cases[] = {
	/* syntax (jansson's line:column) */
	{"{\"hosts\": 4,\n \"link_bps\": }", "t.json:2:14: unexpected token near '}'"},
	{"", "t.json:1:0: '[' or '{' expected near end of file"},
	{"{\"hosts\": 4} x", "t.json:1:14: end of file expected near 'x'"},
	{"{\"hosts\": 4, \"hosts\": 5}", "t.json:1:20: duplicate object key near '\"hosts\"'"},
	{"{\"hosts\": [{\"up_bps\": 99999999999999999999}]}",
	 "t.json:1:42: too big integer near '99999999999999999999'"},
	/* structure */
	{"[1]", "t.json: the top level must be an object, got an array"},
	{"{}", "t.json: hosts: missing (give \"hosts\", or \"racks\" with \"hosts_per_rack\")"},
	{"{\"hosts\": 4, \"speed\": 1}", "t.json: unknown top-level key \"speed\""},
	{"{\"hosts\": \"4\"}",
	 "t.json: hosts: must be a host count or an array of hosts, got a string"},
	{"{\"hosts\": 4.5}",
	 "t.json: hosts: must be a host count or an array of hosts, got a non-integer number"},
	{"{\"hosts\": 4, \"racks\": 2}", "t.json: racks: must be an object, got an integer"},
	{"{\"hosts\": 4, \"racks\": {\"count\": 2, \"hosts_per_rack\": 2}}",
	 "t.json: racks: not allowed with a host count (use \"racks\": {\"hosts_per_rack\": ...} "
	 "or a \"hosts\" array)"},
	{"{\"hosts\": [3]}", "t.json: hosts[0]: must be an object, got an integer"},
	{"{\"hosts\": [{}, {\"uplink\": 1}]}", "t.json: hosts[1]: unknown key \"uplink\""},
	{"{\"hosts\": [{}], \"racks\": {\"count\": 1, \"size\": 1}}",
	 "t.json: racks: unknown key \"size\""},
	/* host counts */
	{"{\"hosts\": 0}", "t.json: hosts: 0 is out of range (1..1048576)"},
	{"{\"hosts\": -3}", "t.json: hosts: -3 is out of range (1..1048576)"},
	{"{\"hosts\": 1048577}", "t.json: hosts: 1048577 is out of range (1..1048576)"},
	{"{\"hosts\": []}", "t.json: hosts: 0 hosts, must be 1..1048576"},
	/* capacities */
	{"{\"hosts\": 4, \"link_bps\": 0}", "t.json: link_bps: capacity must be > 0 bits/s, got 0"},
	{"{\"hosts\": 4, \"link_bps\": -5}",
	 "t.json: link_bps: capacity must be > 0 bits/s, got -5"},
	{"{\"hosts\": 4, \"link_bps\": -2.5}",
	 "t.json: link_bps: capacity must be > 0 bits/s, got -2.5"},
	{"{\"hosts\": 4, \"link_bps\": 1.5}",
	 "t.json: link_bps: capacity must be a whole number of bits/s, got 1.5"},
	{"{\"hosts\": 4, \"link_bps\": 1e19}",
	 "t.json: link_bps: capacity 1e+19 bits/s is too large (limit 2^63 - 1)"},
	{"{\"hosts\": 4, \"link_bps\": \"10G\"}",
	 "t.json: link_bps: capacity must be an integer number of bits/s, got a string"},
	{"{\"hosts\": 4, \"link_bps\": null}",
	 "t.json: link_bps: capacity must be an integer number of bits/s, got null"},
	{"{\"hosts\": [{}, {}, {\"up_bps\": 0}]}",
	 "t.json: hosts[2].up_bps: capacity must be > 0 bits/s, got 0"},
	{"{\"hosts\": [{\"down_bps\": true}]}",
	 "t.json: hosts[0].down_bps: capacity must be an integer number of bits/s, got a boolean"},
	{"{\"hosts\": [{\"bps\": 0.25}]}",
	 "t.json: hosts[0].bps: capacity must be a whole number of bits/s, got 0.25"},
	{"{\"hosts\": [{\"rack\": 0}], \"racks\": {\"count\": 1, \"up_bps\": -1}}",
	 "t.json: racks.up_bps: capacity must be > 0 bits/s, got -1"},
	{"{\"hosts\": [{\"rack\": 0}, {\"rack\": 1}],"
	 " \"racks\": {\"count\": 2, \"down_bps\": [1, 0]}}",
	 "t.json: racks.down_bps[1]: capacity must be > 0 bits/s, got 0"},
	{"{\"hosts\": [{\"rack\": 0}], \"racks\": {\"count\": 1, \"down_bps\": [1, 2]}}",
	 "t.json: racks.down_bps: has 2 entries, racks.count is 1"},
	/* racks with a host list */
	{"{\"hosts\": [{}]}, \"racks\": {}}", "t.json:1:16: end of file expected near ','"},
	{"{\"hosts\": [{}], \"racks\": {}}", "t.json: racks.count: missing"},
	{"{\"hosts\": [{}], \"racks\": {\"count\": 0}}",
	 "t.json: racks.count: 0 is out of range (1..1048576)"},
	{"{\"hosts\": [{\"rack\": 0}], \"racks\": {\"count\": 2}}",
	 "t.json: racks.count: 2 racks but only 1 hosts"},
	{"{\"hosts\": [{\"rack\": 0}, {\"rack\": 2}], \"racks\": {\"count\": 2}}",
	 "t.json: hosts[1].rack: 2 is out of range (racks.count is 2)"},
	{"{\"hosts\": [{\"rack\": -1}], \"racks\": {\"count\": 1}}",
	 "t.json: hosts[0].rack: -1 is out of range (racks.count is 1)"},
	{"{\"hosts\": [{\"rack\": \"a\"}], \"racks\": {\"count\": 1}}",
	 "t.json: hosts[0].rack: must be an integer, got a string"},
	{"{\"hosts\": [{\"rack\": 0}, {}], \"racks\": {\"count\": 1}}",
	 "t.json: hosts[1].rack: missing (required when \"racks\" is given)"},
	{"{\"hosts\": [{\"rack\": 0}]}",
	 "t.json: hosts[0].rack: not allowed without a \"racks\" object"},
	{"{\"hosts\": [{}], \"racks\": {\"count\": 1, \"hosts_per_rack\": 1}}",
	 "t.json: racks: \"hosts_per_rack\" and \"oversubscription\" are only allowed without a "
	 "\"hosts\" array"},
	/* uniform racks */
	{"{\"racks\": {\"hosts_per_rack\": 2}}", "t.json: racks.count: missing"},
	{"{\"racks\": {\"count\": 0, \"hosts_per_rack\": 2}}",
	 "t.json: racks.count: 0 is out of range (1..1048576)"},
	{"{\"racks\": {\"count\": 2}}",
	 "t.json: racks.hosts_per_rack: missing (required when there is no \"hosts\" array)"},
	{"{\"racks\": {\"count\": 2, \"hosts_per_rack\": 0}}",
	 "t.json: racks.hosts_per_rack: 0 is out of range (1..1048576)"},
	{"{\"racks\": {\"count\": 1024, \"hosts_per_rack\": 1025}}",
	 "t.json: racks: 1024 racks of 1025 hosts is more than 1048576 hosts"},
	{"{\"racks\": {\"count\": 2, \"hosts_per_rack\": 2, \"oversubscription\": 0.5}}",
	 "t.json: racks.oversubscription: must be >= 1, got 0.5"},
	{"{\"racks\": {\"count\": 2, \"hosts_per_rack\": 2, \"oversubscription\": 0}}",
	 "t.json: racks.oversubscription: must be >= 1, got 0"},
	{"{\"racks\": {\"count\": 2, \"hosts_per_rack\": 2, \"oversubscription\": \"4\"}}",
	 "t.json: racks.oversubscription: must be a number, got a string"},
	{"{\"link_bps\": 1, \"racks\": {\"count\": 2, \"hosts_per_rack\": 1, "
	 "\"oversubscription\": 4}}",
	 "t.json: racks.oversubscription: 4 leaves the rack links below 1 bit/s"},
	{"{\"racks\": {\"count\": 2, \"hosts_per_rack\": 2, \"up_bps\": 5}}",
	 "t.json: racks: \"bps\", \"up_bps\" and \"down_bps\" are only allowed with a \"hosts\" "
	 "array (uniform racks use link_bps and oversubscription)"},
	{"{\"racks\": {\"count\": 2, \"hosts_per_rack\": 2, \"spine\": 5}}",
	 "t.json: racks: unknown key \"spine\""},
};

static void test_parse_bad(void **state)
{
	unsigned failed = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		struct loom_err err = {{0}};
		struct topo *t;

		errno = 0;
		t = parse(bad_cases[i].json, &err);
		if (t || errno != EINVAL || strcmp(err.msg, bad_cases[i].msg) != 0) {
			print_error(
				"case %zu: %s\n  got:  errno %d, \"%s\"\n  want: EINVAL, \"%s\"\n",
				i, bad_cases[i].json, errno, err.msg, bad_cases[i].msg);
			failed++;
		}
		topo_free(t);
	}
	assert_int_equal(failed, 0);
}

static void test_parse_edge(void **state)
{
	struct loom_err err = {{0}};
	struct topo *t;
	const char nul[] = "{\"hosts\": 4}\0garbage";

	(void)state;
	/* Only len bytes are read: no NUL terminator is needed, and bytes after len are ignored. */
	t = topo_parse_json("{\"hosts\": 2}xyz", 12, "t.json", &err);
	assert_non_null(t);
	assert_int_equal(t->nhosts, 2);
	topo_free(t);
	/* An embedded NUL inside len is a syntax error. */
	errno = 0;
	assert_null(topo_parse_json(nul, sizeof(nul) - 1, "t.json", &err));
	assert_int_equal(errno, EINVAL);
	assert_string_equal(err.msg, "t.json:1:13: end of file expected near end of file");
	/* A NULL err is fine; a NULL name gets a placeholder. */
	errno = 0;
	assert_null(parse("{\"hosts\": 0}", NULL));
	assert_int_equal(errno, EINVAL);
	assert_null(topo_parse_json("{}", 2, NULL, &err));
	assert_string_equal(err.msg,
			    "<topology>: hosts: missing (give \"hosts\", or \"racks\" with "
			    "\"hosts_per_rack\")");
	/* The largest fabric loads. */
	t = parse("{\"hosts\": 1048576, \"link_bps\": 9223372036854775807}", &err);
	assert_non_null(t);
	assert_int_equal(t->port_bps[t->nports - 1], 9223372036854775807ULL);
	topo_free(t);
}

/* ---- load and save -------------------------------------------------------------------- */

static void round_trip(const struct topo *t)
{
	char path[64];
	struct loom_err err = {{0}};
	struct topo *back;

	temp_path(path, sizeof(path));
	assert_int_equal(topo_save_json(t, path), 0);
	back = topo_load_json(path, &err);
	if (!back)
		print_error("%s\n", err.msg);
	assert_non_null(back);
	assert_same_topo(t, back);
	topo_free(back);
	assert_int_equal(unlink(path), 0);
}

static void test_round_trip(void **state)
{
	struct topo *t;

	(void)state;
	/* Big switch (the compact shape). */
	t = topo_new_bigswitch(150, TOPO_DEFAULT_BPS);
	round_trip(t);
	/* Uniform racks with a truncated rack capacity. */
	topo_free(t);
	t = topo_new_racks(3, 7, 1000000007, 3.0);
	round_trip(t);
	/* Every capacity different, racks not contiguous. */
	for (uint32_t p = 0; p < t->nports; p++)
		t->port_bps[p] = 1 + p * 1000003ULL;
	for (uint32_t h = 0; h < t->nhosts; h++)
		t->rack_of[h] = (h * 5) % t->nracks;
	round_trip(t);
	/* Uniform hosts, per-rack capacities that differ only on the downlinks. */
	for (uint32_t p = 0; p < 2 * t->nhosts; p++)
		t->port_bps[p] = 42;
	for (uint32_t r = 0; r < t->nracks; r++)
		t->port_bps[2 * t->nhosts + r] = 99;
	round_trip(t);
	topo_free(t);
	/* Per-host capacities, no racks; the largest capacity a JSON integer holds. */
	t = topo_new_bigswitch(3, 5);
	t->port_bps[4] = 9223372036854775807ULL;
	round_trip(t);
	topo_free(t);
}

static void test_save_errors(void **state)
{
	struct topo *t = topo_new_bigswitch(2, 5);
	char path[64];

	(void)state;
	assert_int_equal(topo_save_json(t, "/nonexistent-loom-dir/t.json"), -ENOENT);
	temp_path(path, sizeof(path));
	t->port_bps[1] = UINT64_MAX; /* no JSON integer holds it */
	assert_int_equal(topo_save_json(t, path), -ERANGE);
	t->port_bps[1] = 0;
	assert_int_equal(topo_save_json(t, path), -EINVAL);
	assert_int_equal(topo_save_json(NULL, path), -EINVAL);
	assert_int_equal(unlink(path), 0);
	topo_free(t);
}

static void test_load_errors(void **state)
{
	struct loom_err err = {{0}};
	char path[64];
	FILE *f;

	(void)state;
	errno = 0;
	assert_null(topo_load_json("/nonexistent-loom-dir/t.json", &err));
	assert_int_equal(errno, ENOENT);
	assert_string_equal(err.msg, "/nonexistent-loom-dir/t.json: No such file or directory");

	errno = 0;
	assert_null(topo_load_json("/tmp", &err));
	assert_int_equal(errno, EISDIR);
	assert_string_equal(err.msg, "/tmp: Is a directory");

	/* Parse errors name the path. */
	temp_path(path, sizeof(path));
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\n  \"hosts\": 4,\n  \"link_bps\": 0\n}\n", f);
	fclose(f);
	errno = 0;
	assert_null(topo_load_json(path, &err));
	assert_int_equal(errno, EINVAL);
	{
		char want[256];

		snprintf(want, sizeof(want), "%s: link_bps: capacity must be > 0 bits/s, got 0",
			 path);
		assert_string_equal(err.msg, want);
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\n  \"hosts\": 4,\n  \"link_bps\": 0,\n}\n", f);
	fclose(f);
	assert_null(topo_load_json(path, &err));
	{
		char want[256];

		snprintf(want, sizeof(want), "%s:4:1: string or '}' expected near '}'", path);
		assert_string_equal(err.msg, want);
	}
	/* An empty file. */
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_null(topo_load_json(path, &err));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(unlink(path), 0);
}

/* ---- the fuzz seed corpus ------------------------------------------------------------- */

/* valid-*.json seeds must load, bad-*.json seeds must be rejected with a message. */
static void test_corpus(void **state)
{
	const char *src = getenv("LOOM_SRCDIR");
	char dir[1024], path[2048];
	unsigned nvalid = 0, nbad = 0;
	struct dirent *de;
	DIR *d;

	(void)state;
	if (!src)
		fail_msg("LOOM_SRCDIR is not set (meson test sets it to the source root)");
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/topo", src);
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d))) {
		struct loom_err err = {{0}};
		struct topo *t;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		errno = 0;
		t = topo_load_json(path, &err);
		if (strncmp(de->d_name, "valid-", 6) == 0) {
			if (!t)
				print_error("%s\n", err.msg);
			assert_non_null(t);
			round_trip(t);
			nvalid++;
		} else if (strncmp(de->d_name, "bad-", 4) == 0) {
			assert_null(t);
			assert_int_equal(errno, EINVAL);
			assert_true(strncmp(err.msg, path, strlen(path)) == 0);
			nbad++;
		}
		topo_free(t);
	}
	closedir(d);
	assert_true(nvalid >= 3);
	assert_true(nbad >= 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bigswitch),       cmocka_unit_test(test_racks),
		cmocka_unit_test(test_flow_ports),      cmocka_unit_test(test_capacities),
		cmocka_unit_test(test_parse_bigswitch), cmocka_unit_test(test_parse_host_list),
		cmocka_unit_test(test_parse_racks),     cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_parse_edge),      cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_save_errors),     cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_corpus),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
