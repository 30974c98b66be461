/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom-agent's options: one by its name, or "key = value" lines of a file
 * (common/kvfile.h; docs/agent.md). Names are snake_case ("host_id"); the
 * kebab-case of the flags ("host-id") is taken too, and a file that uses it
 * gets a deprecation warning.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/addr.h"
#include "common/clock.h"
#include "common/kvfile.h"
#include "common/log.h"
#include "common/units.h"
#include "dataplane/agent.h"

static int parse_u64(const char *key, const char *v, uint64_t min, uint64_t max, uint64_t *ret,
		     struct loom_err *err)
{
	unsigned long long x;

	if (loom_parse_u64(v, &x) < 0 || x < min || x > max)
		return loom_err_set(err, EINVAL, "%s: '%s' is not a whole number in [%llu, %llu]",
				    key, v, (unsigned long long)min, (unsigned long long)max);
	*ret = x;
	return 0;
}

/* A duration in [min_ms, max_ms] milliseconds; a bare number is milliseconds. */
static int parse_ms(const char *key, const char *v, uint64_t min_ms, uint64_t max_ms,
		    uint64_t *ret_ns, struct loom_err *err)
{
	struct loom_err e2 = {{0}};
	uint64_t ns;
	int r = loom_units_duration(v, LOOM_NS_PER_MS, &ns, &e2);

	if (r < 0)
		return loom_err_set(err, EINVAL, "%s: %s", key, loom_err_str(&e2));
	if (ns < min_ms * LOOM_NS_PER_MS || ns > max_ms * LOOM_NS_PER_MS)
		return loom_err_set(err, EINVAL, "%s: '%s' is outside [%llums, %llums]", key, v,
				    (unsigned long long)min_ms, (unsigned long long)max_ms);
	*ret_ns = ns;
	return 0;
}

int dp_agent_config_set(struct dp_agent_config *c, const char *key, const char *value,
			struct loom_err *err)
{
	char name[32]; /* key in snake_case: the longest known name fits */
	uint64_t x = 0;
	int r = 0;

	loom_kv_key_snake(key, name, sizeof(name));
	if (!strcmp(name, "controller")) {
		struct loom_addr a;

		if (strlen(value) >= sizeof(c->controller))
			return loom_err_set(err, EINVAL, "controller: address too long");
		/* checked now, so that a malformed address stops the agent at start */
		if (loom_addr_parse("controller", value, 0, &a, err) < 0)
			return -EINVAL; /* a path too long included: a bad value */
		snprintf(c->controller, sizeof(c->controller), "%s", value);
	} else if (!strcmp(name, "host_id")) {
		r = parse_u64(key, value, 0, UINT32_MAX - 1, &x, err);
		if (r == 0)
			c->host_id = (uint32_t)x;
	} else if (!strcmp(name, "enforcer")) {
		if (!dp_enforcer_find(value))
			return loom_err_set(err, ENOENT,
					    "enforcer: '%s' is not in this build (see --help)",
					    value);
		snprintf(c->enforcer, sizeof(c->enforcer), "%s", value);
	} else if (!strcmp(name, "enforcer_args")) {
		if (strlen(value) >= sizeof(c->enforcer_args))
			return loom_err_set(err, EINVAL, "enforcer-args: too long");
		snprintf(c->enforcer_args, sizeof(c->enforcer_args), "%s", value);
	} else if (!strcmp(name, "classes")) {
		r = parse_u64(key, value, 1, 64, &x, err);
		if (r == 0)
			c->classes = (uint32_t)x;
	} else if (!strcmp(name, "link_bps")) {
		struct loom_err e2 = {{0}};

		r = loom_units_rate(value, &x, &e2);
		if (r < 0)
			return loom_err_set(err, EINVAL, "%s: %s", key, loom_err_str(&e2));
		if (x < 1000)
			return loom_err_set(err, EINVAL, "%s: '%s' is below 1000 bit/s", key,
					    value);
		c->link_bps = x;
	} else if (!strcmp(name, "address")) {
		uint8_t buf[16] = {0};

		if (c->naddrs == DP_MAX_ADDRS)
			return loom_err_set(err, EINVAL, "address: at most %d", DP_MAX_ADDRS);
		if (inet_pton(AF_INET, value, buf) == 1)
			c->addr_family[c->naddrs] = 4;
		else if (inet_pton(AF_INET6, value, buf) == 1)
			c->addr_family[c->naddrs] = 6;
		else
			return loom_err_set(err, EINVAL,
					    "address: '%s' is not an IPv4 or IPv6 address", value);
		memcpy(c->addrs[c->naddrs++], buf, 16);
	} else if (!strcmp(name, "admin_socket")) {
		if (strlen(value) >= sizeof(c->admin_socket))
			return loom_err_set(err, EINVAL, "admin-socket: path too long");
		snprintf(c->admin_socket, sizeof(c->admin_socket), "%s", value);
	} else if (!strcmp(name, "stats_interval")) {
		r = parse_ms(key, value, 1, 60000, &c->stats_interval_ns, err);
	} else if (!strcmp(name, "tls_cert") || !strcmp(name, "tls_key") ||
		   !strcmp(name, "tls_ca")) {
		char *dst = !strcmp(name, "tls_cert") ? c->tls_cert :
			    !strcmp(name, "tls_key")  ? c->tls_key :
							c->tls_ca;

		if (strlen(value) >= sizeof(c->tls_cert))
			return loom_err_set(err, EINVAL, "%s: path too long", key);
		snprintf(dst, sizeof(c->tls_cert), "%s", value);
	} else if (!strcmp(name, "heartbeat")) {
		r = parse_ms(key, value, 10, 600000, &c->heartbeat_ns, err);
	} else {
		return loom_err_set(err, ENOENT, "unknown option '%s' (see --help)", key);
	}
	return r;
}

static int load_one(void *ctx, const struct loom_kv *kv, struct loom_err *err)
{
	char name[64];
	int r = dp_agent_config_set(ctx, kv->key, kv->value, err);

	if (r != -ENOENT && loom_kv_key_snake(kv->key, name, sizeof(name)))
		log_warn("%s:%u: '%s' is deprecated, write '%s'", kv->file, kv->line, kv->key,
			 name);
	return r;
}

int dp_agent_config_load(struct dp_agent_config *c, const char *path, struct loom_err *err)
{
	return loom_kv_load(path, load_one, c, err);
}
