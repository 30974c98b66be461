/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/loomd/tenants: tenants (docs/security.md): the tokens file's
 * parser, each tenant's quotas and its announcement bucket, and the server's
 * table of tenants (loomd_server_tenant()).
 */
#ifndef LOOM_CONTROLPLANE_LOOMD_TENANTS_H
#define LOOM_CONTROLPLANE_LOOMD_TENANTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/errors.h"

struct loomd_server; /* server.h */

#define LOOMD_TENANT_MAX     64 /* a tenant's name: 1..63 of [A-Za-z0-9._-], NUL */
#define LOOMD_TENANT_DEFAULT "default"
#define LOOMD_TOKEN_MIN      16  /* a token's length, at least */
#define LOOMD_TOKEN_MAX      256 /* ... and less than this */

/* A tenant's quotas; 0 = none. */
struct loomd_quota {
	uint32_t jobs, coflows, flows;
	uint32_t announce_rate; /* flows announced per second (a bucket of one second's worth) */
};

enum {
	LOOMD_QUOTA_JOBS = 1,
	LOOMD_QUOTA_COFLOWS = 2,
	LOOMD_QUOTA_FLOWS = 4,
	LOOMD_QUOTA_RATE = 8,
};

/* One line of the tokens file. */
struct loomd_token_entry {
	char tenant[LOOMD_TENANT_MAX];
	char token[LOOMD_TOKEN_MAX]; /* "" for "-": a certificate's tenant, quotas only */
	struct loomd_quota quota;    /* the fields quota_set names */
	uint32_t quota_set;          /* LOOMD_QUOTA_* */
	unsigned line;
};

struct loomd_tokens {
	struct loomd_token_entry *v; /* owned, in file order */
	uint32_t n;
};

/* Whether name is a tenant name (1..63 of A-Z a-z 0-9 . _ -). */
bool loomd_tenant_name_valid(const char *name);

/*
 * Parses a tokens file's text (len bytes; name for messages) into *ret_tokens
 * (free with loomd_tokens_free()). Returns 0, or -EINVAL / -ERANGE / -EEXIST /
 * -ENOMEM with err = "name:line: what is wrong" (never quoting a token).
 * The format is at the top of tenants.c and in docs/security.md.
 */
int loomd_tokens_parse(const char *name, const char *text, size_t len,
		       struct loomd_tokens **ret_tokens, struct loom_err *err);
/* Reads and parses the file at path (warns when every user may read it); as loomd_tokens_parse(). */
int loomd_tokens_load(const char *path, struct loomd_tokens **ret_tokens, struct loom_err *err);
/* Accepts NULL; returns NULL. */
struct loomd_tokens *loomd_tokens_free(struct loomd_tokens *t);
/*
 * The line whose token is token (compared in constant time against every
 * line), or NULL. Borrowed from t.
 */
const struct loomd_token_entry *loomd_tokens_find(const struct loomd_tokens *t, const char *token);

/* A tenant loomd knows, with its quotas and its announcement bucket. */
struct loomd_tenant {
	char name[LOOMD_TENANT_MAX];
	struct loomd_quota quota;
	double rate_tokens; /* announcements left in the bucket */
	uint64_t rate_ns;   /* when it was last filled */
};

/*
 * Takes one announcement from t's bucket at now_ns: true, or false when its
 * announce_rate is spent (nothing taken).
 */
bool loomd_tenant_take_announce(struct loomd_tenant *t, uint64_t now_ns);

/*
 * tenants.c: the id of the tenant called name ("" or NULL: "default"),
 * added with its quotas (the config's, or its tokens-file line's) when new.
 * 0, or -EINVAL (not a tenant name) / -ENOSPC / -ENOMEM with err.
 */
int loomd_server_tenant(struct loomd_server *s, const char *name, uint32_t *ret_id,
			struct loom_err *err);

#endif
