/* SPDX-License-Identifier: BSD-3-Clause */
/* loom-agent's options: one by its long name, or "KEY = VALUE" lines of a file (docs/agent.md). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int dp_agent_config_set(struct dp_agent_config *c, const char *key, const char *value,
			struct loom_err *err)
{
	uint64_t x = 0;
	int r = 0;

	if (!strcmp(key, "controller")) {
		if (strlen(value) >= sizeof(c->controller))
			return loom_err_set(err, EINVAL, "controller: address too long");
		snprintf(c->controller, sizeof(c->controller), "%s", value);
	} else if (!strcmp(key, "host-id")) {
		r = parse_u64(key, value, 0, UINT32_MAX - 1, &x, err);
		if (r == 0)
			c->host_id = (uint32_t)x;
	} else if (!strcmp(key, "enforcer")) {
		if (!dp_enforcer_find(value))
			return loom_err_set(err, ENOENT,
					    "enforcer: '%s' is not in this build (see --help)",
					    value);
		snprintf(c->enforcer, sizeof(c->enforcer), "%s", value);
	} else if (!strcmp(key, "enforcer-args")) {
		if (strlen(value) >= sizeof(c->enforcer_args))
			return loom_err_set(err, EINVAL, "enforcer-args: too long");
		snprintf(c->enforcer_args, sizeof(c->enforcer_args), "%s", value);
	} else if (!strcmp(key, "classes")) {
		r = parse_u64(key, value, 1, 64, &x, err);
		if (r == 0)
			c->classes = (uint32_t)x;
	} else if (!strcmp(key, "link-bps")) {
		r = parse_u64(key, value, 1000, UINT64_MAX, &c->link_bps, err);
	} else if (!strcmp(key, "address")) {
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
	} else if (!strcmp(key, "admin-socket")) {
		if (strlen(value) >= sizeof(c->admin_socket))
			return loom_err_set(err, EINVAL, "admin-socket: path too long");
		snprintf(c->admin_socket, sizeof(c->admin_socket), "%s", value);
	} else if (!strcmp(key, "stats-interval")) {
		r = parse_u64(key, value, 1, 60000, &x, err);
		if (r == 0)
			c->stats_interval_ns = x * 1000000ULL;
	} else if (!strcmp(key, "tls-cert") || !strcmp(key, "tls-key") || !strcmp(key, "tls-ca")) {
		char *dst = !strcmp(key, "tls-cert") ? c->tls_cert :
			    !strcmp(key, "tls-key")  ? c->tls_key :
						       c->tls_ca;

		if (strlen(value) >= sizeof(c->tls_cert))
			return loom_err_set(err, EINVAL, "%s: path too long", key);
		snprintf(dst, sizeof(c->tls_cert), "%s", value);
	} else if (!strcmp(key, "heartbeat")) {
		r = parse_u64(key, value, 10, 600000, &x, err);
		if (r == 0)
			c->heartbeat_ns = x * 1000000ULL;
	} else {
		return loom_err_set(err, ENOENT, "unknown option '%s' (see --help)", key);
	}
	return r;
}

int dp_agent_config_load(struct dp_agent_config *c, const char *path, struct loom_err *err)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	unsigned no = 0;
	int r;

	if (!f)
		return loom_err_set(err, errno, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *k = line, *eq, *v, *e;
		struct loom_err e2;

		no++;
		if (!strchr(line, '\n') && !feof(f)) {
			fclose(f);
			return loom_err_set(err, EINVAL, "%s:%u: line longer than %zu characters",
					    path, no, sizeof(line) - 2);
		}
		if ((e = strchr(line, '#')))
			*e = 0;
		while (isspace((unsigned char)*k))
			k++;
		if (!*k)
			continue;
		eq = strchr(k, '=');
		if (!eq) {
			fclose(f);
			return loom_err_set(err, EINVAL, "%s:%u: expected KEY = VALUE", path, no);
		}
		*eq = 0;
		v = eq + 1;
		for (e = eq; e > k && isspace((unsigned char)e[-1]);)
			*--e = 0;
		while (isspace((unsigned char)*v))
			v++;
		for (e = v + strlen(v); e > v && isspace((unsigned char)e[-1]);)
			*--e = 0;
		if ((r = dp_agent_config_set(c, k, v, &e2)) < 0) {
			fclose(f);
			return loom_err_set(err, -r, "%s:%u: %s", path, no, loom_err_str(&e2));
		}
	}
	if (ferror(f)) {
		/* errno is fgets' (e.g. EISDIR for a folder) */
		r = errno ? errno : EIO;
		fclose(f);
		return loom_err_set(err, r, "%s: %s", path, strerror(r));
	}
	fclose(f);
	return 0;
}
