/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for loom-agent's options (dataplane/agent_config.c). The input
 * is used twice:
 *
 *  - as a config file (a memfd, fuzz_file.h) for dp_agent_config_load()
 *    over the defaults;
 *  - line by line, each split at its first '=' into KEY and VALUE taken as
 *    they are (as the flags' values come), for dp_agent_config_set() on one
 *    config; a refused line must leave the config as it was.
 *
 * A failing call must return one of the errors it documents and leave a
 * message (dp_agent_config_load's starting with the path). A config that came
 * out of them must hold what the options accept: strings NUL-terminated in
 * their fields, an enforcer of this build, numbers inside their ranges, at
 * most DP_MAX_ADDRS addresses, each IPv4 or IPv6. Anything else (crash,
 * sanitizer report, leak, abort) is a bug.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/agent.h"
#include "tests/fuzz/fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HAS_NUL(f) (memchr((f), 0, sizeof(f)) != NULL)

static void check_config(const struct dp_agent_config *c)
{
	if (!HAS_NUL(c->controller) || !HAS_NUL(c->enforcer) || !HAS_NUL(c->enforcer_args) ||
	    !HAS_NUL(c->admin_socket))
		abort();
	if (!dp_enforcer_find(c->enforcer))
		abort();
	if (c->host_id == UINT32_MAX || c->classes < 1 || c->classes > 64 || c->link_bps < 1000)
		abort();
	if (c->stats_interval_ns < 1000000ULL || c->stats_interval_ns > 60000 * 1000000ULL ||
	    c->heartbeat_ns < 10 * 1000000ULL || c->heartbeat_ns > 600000 * 1000000ULL)
		abort();
	if (c->naddrs > DP_MAX_ADDRS)
		abort();
	for (uint32_t i = 0; i < c->naddrs; i++)
		if (c->addr_family[i] != 4 && c->addr_family[i] != 6)
			abort();
}

static void fuzz_load(const uint8_t *data, size_t size)
{
	struct dp_agent_config c;
	struct loom_err err = {{0}};
	const char *path = fuzz_file(data, size);
	int r;

	if (!path)
		return;
	dp_agent_config_default(&c);
	r = dp_agent_config_load(&c, path, &err);
	if (r < 0) {
		if ((r != -EINVAL && r != -ENOENT) || strncmp(err.msg, path, strlen(path)) != 0 ||
		    err.msg[strlen(path)] != ':')
			abort();
		return;
	}
	check_config(&c);
}

static void fuzz_set(const uint8_t *data, size_t size)
{
	struct dp_agent_config c, next;
	char *text = malloc(size + 1);
	char *line, *save = NULL;

	if (!text)
		abort();
	memcpy(text, data, size);
	text[size] = '\0'; /* the parser takes C strings: a NUL ends the input */
	dp_agent_config_default(&c);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct loom_err err = {{0}};
		char *eq = strchr(line, '=');
		const char *value = "";
		int r;

		if (eq) {
			*eq = '\0';
			value = eq + 1;
		}
		next = c;
		r = dp_agent_config_set(&next, line, value, &err);
		if (r < 0) {
			if ((r != -ENOENT && r != -EINVAL) || err.msg[0] == '\0' ||
			    memcmp(&next, &c, sizeof(c)) != 0)
				abort();
			continue;
		}
		c = next;
		check_config(&c);
	}
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_load(data, size);
	fuzz_set(data, size);
	return 0;
}
