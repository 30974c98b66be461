/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for loomd's tokens file (controlplane/loomd/tenants.c). The
 * input is parsed twice: from memory (loomd_tokens_parse) and as a file (a
 * memfd, fuzz_file.h, loomd_tokens_load); both must agree.
 *
 * A refusal must be one of the documented errors with a message starting
 * "NAME:LINE: " (the loader's with the path). What parses must hold what the
 * format allows: tenant names that loomd_tenant_name_valid() takes, tokens of
 * LOOMD_TOKEN_MIN..LOOMD_TOKEN_MAX-1 printable characters or none, no token twice,
 * quotas only where quota_set says, one line of quotas per tenant, line
 * numbers increasing; and every token must be found by loomd_tokens_find() on
 * its own line. Anything else (crash, sanitizer report, leak, abort) is a bug.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controlplane/loomd/tenants.h"
#include "tests/fuzz/fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_error(int r, const struct loom_err *err, const char *name)
{
	size_t n = strlen(name);

	if (r != -EINVAL && r != -ERANGE && r != -EEXIST)
		abort();
	if (strncmp(err->msg, name, n) != 0 || err->msg[n] != ':')
		abort();
}

static void check_tokens(const struct loomd_tokens *t)
{
	for (uint32_t i = 0; i < t->n; i++) {
		const struct loomd_token_entry *e = &t->v[i];
		size_t n = strnlen(e->token, LOOMD_TOKEN_MAX);

		if (!memchr(e->tenant, 0, sizeof(e->tenant)) || !loomd_tenant_name_valid(e->tenant))
			abort();
		if (n >= LOOMD_TOKEN_MAX || (n && n < LOOMD_TOKEN_MIN))
			abort();
		for (size_t k = 0; k < n; k++)
			if (e->token[k] <= ' ' || e->token[k] >= 0x7f || e->token[k] == '#')
				abort();
		if (e->quota_set & ~(uint32_t)(LOOMD_QUOTA_JOBS | LOOMD_QUOTA_COFLOWS |
					       LOOMD_QUOTA_FLOWS | LOOMD_QUOTA_RATE))
			abort();
		if ((!(e->quota_set & LOOMD_QUOTA_JOBS) && e->quota.jobs) ||
		    (!(e->quota_set & LOOMD_QUOTA_COFLOWS) && e->quota.coflows) ||
		    (!(e->quota_set & LOOMD_QUOTA_FLOWS) && e->quota.flows) ||
		    (!(e->quota_set & LOOMD_QUOTA_RATE) && e->quota.announce_rate))
			abort();
		if (i && e->line <= t->v[i - 1].line)
			abort();
		if (n && loomd_tokens_find(t, e->token) != e)
			abort();
		for (uint32_t j = 0; j < i; j++) {
			if (n && !strcmp(t->v[j].token, e->token))
				abort();
			if (e->quota_set && t->v[j].quota_set && !strcmp(t->v[j].tenant, e->tenant))
				abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct loomd_tokens *t = NULL, *t2 = NULL;
	struct loom_err err = {{0}}, err2 = {{0}};
	const char *path;
	int r, r2;

	loom_log_set_level(LOOM_LOG_ERR); /* the loader warns about a memfd's mode */
	r = loomd_tokens_parse("fuzz", (const char *)data, size, &t, &err);
	if (r < 0) {
		if (t)
			abort();
		check_error(r, &err, "fuzz");
	} else {
		check_tokens(t);
	}
	path = fuzz_file(data, size);
	if (path) {
		r2 = loomd_tokens_load(path, &t2, &err2);
		if (r2 != r)
			abort();
		if (r2 < 0) {
			check_error(r2, &err2, path);
			/* the same line and reason, after the name */
			if (strcmp(strchr(err.msg, ':'), strchr(err2.msg + strlen(path), ':')))
				abort();
		} else {
			if (t2->n != t->n || (t->n && memcmp(t2->v, t->v, t->n * sizeof(*t->v))))
				abort();
		}
	}
	loomd_tokens_free(t);
	loomd_tokens_free(t2);
	return 0;
}
