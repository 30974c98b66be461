/* SPDX-License-Identifier: BSD-3-Clause */
/* loomd's configuration: defaults, "key = value" files, checks (docs/loomd.md lists the keys). */
#include "controlplane/loomd/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/addr.h"
#include "common/clock.h"
#include "common/kvfile.h"
#include "common/log.h"
#include "common/units.h"
#include "proto/frame.h"

void loomd_config_default(struct loomd_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->listen_unix, sizeof(c->listen_unix), "/run/loom/loomd.sock");
	snprintf(c->listen_tcp, sizeof(c->listen_tcp), "127.0.0.1:7420");
	snprintf(c->admin_socket, sizeof(c->admin_socket), "/run/loom/admin.sock");
	snprintf(c->metrics, sizeof(c->metrics), "127.0.0.1:9464");
	snprintf(c->journal, sizeof(c->journal), "/var/lib/loom/journal.db");
	c->journal_sync = 2;
	snprintf(c->policy, sizeof(c->policy), "sebf");
	c->hosts = 150;
	c->link_bps = TOPO_DEFAULT_BPS;
	c->classes = 8;
	snprintf(c->class_assign, sizeof(c->class_assign), "conflict");
	c->tick_ns = 10 * LOOM_NS_PER_MS;
	c->pass_gap_ns = LOOM_NS_PER_MS;
	c->seed = 1;
	c->max_frame = WIRE_MAX_FRAME_DEFAULT;
	c->max_jobs = 10000;
	c->max_coflows = 100000;
	c->max_flows = 1000000;
	c->max_connections = 4096;
	c->unknown_flow_bytes = 1ULL << 20;
	c->done_retention_ns = 60 * LOOM_NS_PER_S;
	c->agent_timeout_ns = 30 * LOOM_NS_PER_S;
	snprintf(c->log_level, sizeof(c->log_level), "info");
}

enum ktype {
	K_STR,
	K_U32,
	K_U64,
	K_BYTES,
	K_BPS,
	K_DUR,
	K_BOOL,
	K_SYNC,
	K_LEVEL
};

struct key {
	const char *name;
	enum ktype type;
	size_t off, size;
	uint64_t min, max;
};

#define STR(f)    K_STR, offsetof(struct loomd_config, f), sizeof(((struct loomd_config *)0)->f)
#define NUM(t, f) t, offsetof(struct loomd_config, f), 0
static const struct key keys[] = {
	{"listen_unix", STR(listen_unix), 0, 0},
	{"listen_tcp", STR(listen_tcp), 0, 0},
	{"admin_socket", STR(admin_socket), 0, 0},
	{"metrics", STR(metrics), 0, 0},
	{"journal", STR(journal), 0, 0},
	{"journal_sync", NUM(K_SYNC, journal_sync), 0, 2},
	{"policy", STR(policy), 0, 0},
	{"weights", STR(weights), 0, 0},
	{"topology", STR(topology), 0, 0},
	{"hosts", NUM(K_U32, hosts), 2, TOPO_MAX_HOSTS},
	{"link_bps", NUM(K_BPS, link_bps), 1000, UINT64_MAX},
	{"classes", NUM(K_U32, classes), 1, 64},
	{"class_assign", STR(class_assign), 0, 0},
	{"tick", NUM(K_DUR, tick_ns), LOOM_NS_PER_MS / 10, 10 * LOOM_NS_PER_S},
	{"pass_gap", NUM(K_DUR, pass_gap_ns), 0, LOOM_NS_PER_S},
	{"seed", NUM(K_U64, seed), 0, UINT64_MAX},
	{"max_frame", NUM(K_BYTES, max_frame), 1024, 1u << 30},
	{"max_jobs", NUM(K_U32, max_jobs), 1, UINT32_MAX / 2},
	{"max_coflows", NUM(K_U32, max_coflows), 1, UINT32_MAX / 2},
	{"max_flows", NUM(K_U32, max_flows), 1, UINT32_MAX / 2},
	{"max_connections", NUM(K_U32, max_connections), 1, 1000000},
	{"unknown_flow_bytes", NUM(K_BYTES, unknown_flow_bytes), 1, 1ULL << 50},
	{"done_retention", NUM(K_DUR, done_retention_ns), 0, UINT64_MAX},
	{"agent_timeout", NUM(K_DUR, agent_timeout_ns), 0, UINT64_MAX},
	{"log_level", NUM(K_LEVEL, log_level), 0, 0},
	{"virtual_clock", NUM(K_BOOL, virtual_clock), 0, 1},
	{"tls_cert", STR(tls_cert), 0, 0},
	{"tls_key", STR(tls_key), 0, 0},
	{"tls_ca", STR(tls_ca), 0, 0},
	{"insecure", NUM(K_BOOL, insecure), 0, 1},
	{"tokens", STR(tokens), 0, 0},
	{"tenant_max_jobs", NUM(K_U32, tenant_max_jobs), 0, UINT32_MAX / 2},
	{"tenant_max_coflows", NUM(K_U32, tenant_max_coflows), 0, UINT32_MAX / 2},
	{"tenant_max_flows", NUM(K_U32, tenant_max_flows), 0, UINT32_MAX / 2},
	{"tenant_announce_rate", NUM(K_U32, tenant_announce_rate), 0, UINT32_MAX / 2},
	{"unix_group", STR(unix_group), 0, 0},
	{"admin_group", STR(admin_group), 0, 0},
};

int loomd_config_set(struct loomd_config *c, const char *key, const char *value,
		     struct loom_err *err)
{
	const struct key *k = NULL;
	struct loom_err e2 = {{0}};
	unsigned long long u;
	uint64_t x = 0;
	bool legacy = false;
	int r = 0;
	char *base = (char *)c;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(keys[i].name, key))
			k = &keys[i];
	if (!k) {
		char list[1024] = "";

		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 i ? ", " : "", keys[i].name);
		return loom_err_set(err, ENOENT, "unknown key '%s' (keys: %s)", key, list);
	}
	switch (k->type) {
	case K_STR:
		if (strlen(value) >= k->size)
			return loom_err_set(err, EINVAL, "%s: value longer than %zu characters",
					    key, k->size - 1);
		snprintf(base + k->off, k->size, "%s", value);
		return 0;
	case K_BOOL:
		if (!strcmp(value, "1") || !strcmp(value, "yes") || !strcmp(value, "true") ||
		    !strcmp(value, "on"))
			*(bool *)(base + k->off) = true;
		else if (!strcmp(value, "0") || !strcmp(value, "no") || !strcmp(value, "false") ||
			 !strcmp(value, "off"))
			*(bool *)(base + k->off) = false;
		else
			return loom_err_set(err, EINVAL, "%s: '%s' is not a boolean (yes/no)", key,
					    value);
		return 0;
	case K_SYNC:
		if (!strcmp(value, "off"))
			c->journal_sync = 0;
		else if (!strcmp(value, "normal"))
			c->journal_sync = 1;
		else if (!strcmp(value, "full"))
			c->journal_sync = 2;
		else
			return loom_err_set(err, EINVAL, "%s: '%s' is not off, normal or full", key,
					    value);
		return 0;
	case K_LEVEL: {
		enum loom_log_level lvl;

		if (loom_log_level_parse(value, &lvl) < 0)
			return loom_err_set(err, EINVAL,
					    "%s: '%s' is not a level (error, warn, info, debug)",
					    key, value);
		snprintf(c->log_level, sizeof(c->log_level), "%s", value);
		return 0;
	}
	case K_DUR:
		r = loom_units_duration(value, LOOM_NS_PER_S, &x, &e2);
		break;
	case K_BPS:
		r = loom_units_rate(value, &x, &e2);
		break;
	case K_BYTES:
		/* bare k/M/G/T stay powers of 1024 here (docs/units.md) */
		r = loom_units_size(value, LOOM_UNITS_LEGACY_1024, &x, &legacy, &e2);
		break;
	case K_U32:
	case K_U64:
		if (loom_parse_u64(value, &u) < 0)
			return loom_err_set(err, EINVAL, "%s: '%s' is not a whole number", key,
					    value);
		x = u;
		break;
	}
	if (r < 0)
		return loom_err_set(err, -r, "%s: %s", key, loom_err_str(&e2));
	if (x < k->min || x > k->max)
		return loom_err_set(err, ERANGE, "%s: %llu is outside [%llu, %llu]", key,
				    (unsigned long long)x, (unsigned long long)k->min,
				    (unsigned long long)k->max);
	if (legacy)
		log_warn("%s = %s: read as %llu bytes; a k, M, G or T without 'i' on a size is "
			 "deprecated: write Ki, Mi, Gi or Ti (docs/units.md)",
			 key, value, (unsigned long long)x);
	if (k->type == K_U32 || (k->type == K_BYTES && !strcmp(key, "max_frame")))
		*(uint32_t *)(base + k->off) = (uint32_t)x;
	else
		*(uint64_t *)(base + k->off) = x;
	return 0;
}

static int load_one(void *ctx, const struct loom_kv *kv, struct loom_err *err)
{
	return loomd_config_set(ctx, kv->key, kv->value, err);
}

int loomd_config_load(struct loomd_config *c, const char *path, struct loom_err *err)
{
	return loom_kv_load(path, load_one, c, err);
}

int loomd_config_check(const struct loomd_config *c, struct loom_err *err)
{
	enum policy_class_assign assign;
	const struct policy_class *cls;
	double opt[POLICY_MAX_OPTS];
	struct loom_addr a;
	struct loom_err e2;
	int r;

	if (!c->listen_unix[0] && !c->listen_tcp[0])
		return loom_err_set(
			err, EINVAL,
			"nothing to listen on: set listen_unix or listen_tcp (or both)");
	/* the addresses now, before the journal is replayed and anything starts */
	if (c->listen_tcp[0]) {
		r = loom_addr_parse("listen_tcp", c->listen_tcp,
				    LOOM_ADDR_LISTEN | LOOM_ADDR_TCP_ONLY, &a, err);
		if (r < 0)
			return -EINVAL; /* whatever the parser says: a bad value (config.h) */
	}
	if (c->metrics[0]) {
		r = loom_addr_parse("metrics", c->metrics, LOOM_ADDR_LISTEN | LOOM_ADDR_TCP_ONLY,
				    &a, err);
		if (r < 0)
			return -EINVAL;
	}
	if (policy_spec_parse(c->policy, &cls, opt, &e2) < 0)
		return loom_err_set(err, EINVAL, "policy: %s", loom_err_str(&e2));
	if (policy_class_check_live(cls, err) < 0)
		return -EINVAL;
	if (policy_class_assign_parse(c->class_assign, &assign) < 0)
		return loom_err_set(err, EINVAL,
				    "class_assign: '%s' is not one of conflict, per-host",
				    c->class_assign);
	if (c->tick_ns == 0)
		return loom_err_set(err, EINVAL, "tick must be positive");
	if (c->tls_cert[0] || c->tls_key[0] || c->tls_ca[0]) {
		const char *missing = !c->tls_cert[0] ? "tls_cert" :
				      !c->tls_key[0]  ? "tls_key" :
				      !c->tls_ca[0]   ? "tls_ca" :
							NULL;

		if (missing)
			return loom_err_set(
				err, EINVAL,
				"%s is not set: tls_cert, tls_key and tls_ca go together", missing);
#ifndef LOOM_HAVE_TLS
		return loom_err_set(err, ENOTSUP,
				    "tls_cert: this loomd was built without TLS (meson option tls "
				    "needs OpenSSL and libevent_openssl)");
#endif
	}
	return 0;
}
