/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/loomd/config: the configuration file and its defaults
 * (struct loomd_config, immutable once loaded; every key is documented in
 * docs/loomd.md).
 */
#ifndef LOOM_CONTROLPLANE_LOOMD_CONFIG_H
#define LOOM_CONTROLPLANE_LOOMD_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/errors.h"
#include "controlplane/policy/policy.h"

#define LOOMD_ADDR_MAX 128

struct loomd_config {
	char listen_unix[108];           /* framework+agent Unix socket; "" = none */
	char listen_tcp[LOOMD_ADDR_MAX]; /* "HOST:PORT"; "" = none */
	char admin_socket[108];          /* "" = none */
	char metrics[LOOMD_ADDR_MAX];    /* "HOST:PORT" for /metrics; "" = none */
	char journal[PATH_MAX];          /* SQLite file; "" = no durability */
	int journal_sync;                /* 0 off, 1 normal, 2 full (SQLite synchronous) */
	char policy[POLICY_SPEC_MAX];
	char weights[PATH_MAX];  /* gnn/ensemble model; "" = the shipped one */
	char topology[PATH_MAX]; /* topology file; "" = big switch of hosts x link_bps */
	uint32_t hosts;
	uint64_t link_bps;
	uint32_t classes;
	char class_assign[16]; /* "conflict" or "per-host" (enum policy_class_assign) */
	uint64_t tick_ns;
	uint64_t pass_gap_ns; /* least time between two passes (changes in between batch up) */
	uint64_t seed;
	uint32_t max_frame;
	uint32_t max_jobs, max_coflows, max_flows;
	uint32_t max_connections;
	uint64_t unknown_flow_bytes; /* modelled remaining bytes of a flow of unknown size */
	uint64_t done_retention_ns;  /* finished jobs are forgotten after this */
	uint64_t agent_timeout_ns;   /* an agent silent this long is disconnected */
	char log_level[8];
	bool virtual_clock; /* tests: time moves only with the admin clock-set command */
	/*
	 * TLS on listen_tcp (docs/security.md): PEM files of loomd's certificate
	 * (chain), its key, and the CA that signs every peer's certificate. All
	 * three or none; "" = plain TCP.
	 */
	char tls_cert[PATH_MAX], tls_key[PATH_MAX], tls_ca[PATH_MAX];
	bool insecure; /* plain TCP on a non-loopback address (refused without it) */
	/*
	 * Tenants (docs/security.md): the tokens file ("" = none: frameworks
	 * off TLS are all tenant "default"), and the quotas every tenant has
	 * unless its line in the tokens file says otherwise (0 = none).
	 */
	char tokens[PATH_MAX];
	uint32_t tenant_max_jobs, tenant_max_coflows, tenant_max_flows;
	uint32_t tenant_announce_rate; /* flows announced per second */
	/* Socket files: listen_unix is 0660, admin_socket 0600 (0660 with admin_group). */
	char unix_group[64];  /* group of listen_unix; "" = loomd's own */
	char admin_group[64]; /* "" = the admin socket is loomd's user's alone */
};

/* Fills the defaults (docs/loomd.md). */
void loomd_config_default(struct loomd_config *c);

/*
 * Sets one key from its text value. Returns 0, or -ENOENT (unknown key),
 * -EINVAL (bad value) or -ERANGE (out of range) with err naming the key, the
 * value and what is accepted.
 */
int loomd_config_set(struct loomd_config *c, const char *key, const char *value,
		     struct loom_err *err);

/*
 * Reads "key = value" lines from path onto c, in order (the format is
 * common/kvfile.h's: '#' comments, blank lines, quotes, CRLF). Returns 0 or
 * -errno with err = "path[:line]: reason"; c then holds the lines before
 * the bad one.
 */
int loomd_config_load(struct loomd_config *c, const char *path, struct loom_err *err);

/* Checks the combination (e.g. at least one listener). 0 or -EINVAL with err. */
int loomd_config_check(const struct loomd_config *c, struct loom_err *err);

#endif
