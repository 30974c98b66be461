/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tenants (tenants.h, docs/security.md): the tokens file's parser, and the
 * server's table of tenants with their quotas and announcement buckets.
 *
 * The tokens file: one tenant per line and what it presents,
 *
 *     # TENANT   TOKEN                              [QUOTA=N ...]
 *     spark      9c1f4e0b2a7d4c3e8f5a6b1d0e2c4f7a   jobs=100 flows=100000
 *     mpi        -                                  announce_rate=5000
 *
 * TENANT is 1..63 of [A-Za-z0-9._-]; TOKEN is LOOMD_TOKEN_MIN..LOOMD_TOKEN_MAX-1
 * printable characters without spaces or '#', unique in the file, or "-"
 * for a tenant known by its certificate alone (its line then only sets
 * quotas). A tenant may have several lines (tokens being rotated); its
 * quotas are set on one of them at most. '#' starts a comment; blank lines
 * are skipped. Anything else is an error naming file:line and what is wrong.
 */
#include "controlplane/loomd/tenants.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "controlplane/loomd/server.h"

/* The longest tokens file line, newline excluded. */
#define TOKENS_LINE_MAX 1024
/* The most tenants loomd tracks (tokens file and certificates together). */
#define TENANTS_MAX 65536

bool loomd_tenant_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= LOOMD_TENANT_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '.' && name[i] != '_' &&
		    name[i] != '-')
			return false;
	return true;
}

static const struct {
	const char *name;
	uint32_t bit;
	size_t off;
} quota_keys[] = {
	{"jobs", LOOMD_QUOTA_JOBS, offsetof(struct loomd_quota, jobs)},
	{"coflows", LOOMD_QUOTA_COFLOWS, offsetof(struct loomd_quota, coflows)},
	{"flows", LOOMD_QUOTA_FLOWS, offsetof(struct loomd_quota, flows)},
	{"announce_rate", LOOMD_QUOTA_RATE, offsetof(struct loomd_quota, announce_rate)},
};

struct loomd_tokens *loomd_tokens_free(struct loomd_tokens *t)
{
	if (!t)
		return NULL;
	free(t->v);
	free(t);
	return NULL;
}

/* Splits off the next word of *p (spaces and tabs between words); NULL at the end. */
static char *next_word(char **p)
{
	char *s = *p, *w;

	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s) {
		*p = s;
		return NULL;
	}
	w = s;
	while (*s && *s != ' ' && *s != '\t')
		s++;
	if (*s)
		*s++ = 0;
	*p = s;
	return w;
}

/* One QUOTA=N word into e; 0 or -EINVAL/-ERANGE with err (the caller adds file:line). */
static int parse_quota(struct loomd_token_entry *e, const char *word, struct loom_err *err)
{
	const char *eq = strchr(word, '=');
	unsigned long long v;
	size_t klen;

	if (!eq)
		return loom_err_set(err, EINVAL,
				    "'%.64s' is not QUOTA=N (quotas: jobs, coflows, flows, "
				    "announce_rate)",
				    word);
	klen = (size_t)(eq - word);
	for (size_t i = 0; i < sizeof(quota_keys) / sizeof(quota_keys[0]); i++) {
		if (strlen(quota_keys[i].name) != klen || strncmp(word, quota_keys[i].name, klen))
			continue;
		if (e->quota_set & quota_keys[i].bit)
			return loom_err_set(err, EINVAL, "quota %s is given twice",
					    quota_keys[i].name);
		if (loom_parse_u64(eq + 1, &v) < 0)
			return loom_err_set(err, EINVAL, "quota %s: '%.64s' is not a whole number",
					    quota_keys[i].name, eq + 1);
		if (v > UINT32_MAX / 2)
			return loom_err_set(err, ERANGE, "quota %s: %llu is over %u",
					    quota_keys[i].name, v, UINT32_MAX / 2);
		*(uint32_t *)((char *)&e->quota + quota_keys[i].off) = (uint32_t)v;
		e->quota_set |= quota_keys[i].bit;
		return 0;
	}
	return loom_err_set(err, EINVAL,
			    "unknown quota '%.*s' (quotas: jobs, coflows, flows, announce_rate)",
			    (int)(klen > 64 ? 64 : klen), word);
}

static bool token_char_ok(char ch)
{
	return ch > ' ' && ch < 0x7f && ch != '#';
}

/* One line (comment already cut) into e; 0, 1 (blank), or -errno with err. */
static int parse_line(char *line, struct loomd_token_entry *e, struct loom_err *err)
{
	char *p = line, *tenant, *token, *w;
	size_t n;

	for (char *q = line; *q; q++)
		if ((unsigned char)*q < ' ' && *q != '\t' && *q != '\r')
			return loom_err_set(err, EINVAL, "control character 0x%02x",
					    (unsigned char)*q);
		else if (*q == '\r')
			*q = ' ';
	tenant = next_word(&p);
	if (!tenant)
		return 1;
	if (!loomd_tenant_name_valid(tenant))
		return loom_err_set(err, EINVAL,
				    "'%.64s' is not a tenant name (1..%d of A-Z a-z 0-9 . _ -)",
				    tenant, LOOMD_TENANT_MAX - 1);
	token = next_word(&p);
	if (!token)
		return loom_err_set(
			err, EINVAL,
			"tenant %s has no token (expected 'TENANT TOKEN [QUOTA=N ...]'; "
			"'-' for none)",
			tenant);
	memset(e, 0, sizeof(*e));
	snprintf(e->tenant, sizeof(e->tenant), "%s", tenant);
	if (strcmp(token, "-") != 0) {
		n = strlen(token);
		/* the token itself is never quoted back: it is a secret */
		if (n < LOOMD_TOKEN_MIN || n >= LOOMD_TOKEN_MAX)
			return loom_err_set(err, EINVAL,
					    "tenant %s: its token has %zu characters; tokens have "
					    "%d..%d",
					    tenant, n, LOOMD_TOKEN_MIN, LOOMD_TOKEN_MAX - 1);
		for (size_t i = 0; i < n; i++)
			if (!token_char_ok(token[i]))
				return loom_err_set(err, EINVAL,
						    "tenant %s: its token has a character that is "
						    "not printable ASCII (position %zu)",
						    tenant, i + 1);
		memcpy(e->token, token, n + 1);
	}
	while ((w = next_word(&p)) != NULL) {
		struct loom_err e2;
		int r = parse_quota(e, w, &e2);

		if (r < 0)
			return loom_err_set(err, -r, "tenant %s: %s", tenant, loom_err_str(&e2));
	}
	return 0;
}

/* Constant-time equality of two NUL-terminated strings of at most LOOMD_TOKEN_MAX - 1. */
static bool token_eq(const char *a, const char *b)
{
	size_t na = strnlen(a, LOOMD_TOKEN_MAX), nb = strnlen(b, LOOMD_TOKEN_MAX);
	unsigned char diff = (unsigned char)(na != nb);

	for (size_t i = 0; i < LOOMD_TOKEN_MAX; i++) {
		unsigned char x = i < na ? (unsigned char)a[i] : 0;
		unsigned char y = i < nb ? (unsigned char)b[i] : 0;

		diff |= x ^ y;
	}
	return diff == 0;
}

/* Checks e against the lines before it: duplicate token, quotas set twice. */
static int check_against(const struct loomd_tokens *t, const struct loomd_token_entry *e,
			 struct loom_err *err)
{
	for (uint32_t i = 0; i < t->n; i++) {
		const struct loomd_token_entry *o = &t->v[i];

		if (e->token[0] && o->token[0] && !strcmp(e->token, o->token))
			return loom_err_set(err, EEXIST,
					    "this token is also on line %u (tenant %s)", o->line,
					    o->tenant);
		if (e->quota_set && o->quota_set && !strcmp(e->tenant, o->tenant))
			return loom_err_set(err, EEXIST,
					    "tenant %s has quotas on line %u already (give a "
					    "tenant's quotas on one line)",
					    e->tenant, o->line);
	}
	return 0;
}

int loomd_tokens_parse(const char *name, const char *text, size_t len, struct loomd_tokens **ret,
		       struct loom_err *err)
{
	struct loomd_tokens *t = calloc(1, sizeof(*t));
	uint32_t cap = 0;
	unsigned lineno = 0;
	size_t pos = 0;
	int r = 0;

	if (!t)
		return loom_err_set(err, ENOMEM, "%s: out of memory", name);
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
		char line[TOKENS_LINE_MAX + 1], *hash;
		struct loomd_token_entry e;
		struct loom_err e2;

		lineno++;
		if (n > TOKENS_LINE_MAX) {
			r = loom_err_set(err, EINVAL, "%s:%u: line longer than %d characters", name,
					 lineno, TOKENS_LINE_MAX);
			goto fail;
		}
		memcpy(line, text + pos, n);
		line[n] = 0;
		pos += n + (nl ? 1 : 0);
		if (strlen(line) != n) {
			r = loom_err_set(err, EINVAL, "%s:%u: a NUL character", name, lineno);
			goto fail;
		}
		hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		r = parse_line(line, &e, &e2);
		if (r == 0) {
			e.line = lineno;
			r = check_against(t, &e, &e2);
		}
		if (r < 0) {
			r = loom_err_set(err, -r, "%s:%u: %s", name, lineno, loom_err_str(&e2));
			goto fail;
		}
		if (r == 1) {
			r = 0;
			continue;
		}
		if (t->n == cap) {
			uint32_t ncap = cap ? 2 * cap : 16;
			struct loomd_token_entry *v = realloc(t->v, ncap * sizeof(*v));

			if (!v) {
				r = loom_err_set(err, ENOMEM, "%s: out of memory", name);
				goto fail;
			}
			t->v = v;
			cap = ncap;
		}
		t->v[t->n++] = e;
	}
	*ret = t;
	return 0;
fail:
	loomd_tokens_free(t);
	return r;
}

int loomd_tokens_load(const char *path, struct loomd_tokens **ret, struct loom_err *err)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	struct stat st;
	int r;

	if (!f)
		return loom_err_set(err, errno, "tokens %s: %s", path, strerror(errno));
	if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0004))
		log_warn("tokens %s: readable by every user (mode %03o); its tokens are secrets "
			 "(chmod 0600)",
			 path, (unsigned)(st.st_mode & 0777));
	for (;;) {
		size_t n;

		if (len + 4096 + 1 > cap) {
			size_t ncap = cap ? 2 * cap : 8192;
			char *b = ncap > (64u << 20) ? NULL : realloc(buf, ncap);

			if (!b) {
				free(buf);
				fclose(f);
				return loom_err_set(err, cap ? EFBIG : ENOMEM,
						    "tokens %s: larger than 64 MiB", path);
			}
			buf = b;
			cap = ncap;
		}
		n = fread(buf + len, 1, 4096, f);
		len += n;
		if (n < 4096)
			break;
	}
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return loom_err_set(err, EIO, "tokens %s: read error", path);
	}
	fclose(f);
	r = loomd_tokens_parse(path, buf, len, ret, err);
	free(buf);
	return r;
}

const struct loomd_token_entry *loomd_tokens_find(const struct loomd_tokens *t, const char *token)
{
	const struct loomd_token_entry *found = NULL;

	if (!t || !token || !token[0] || strnlen(token, LOOMD_TOKEN_MAX) >= LOOMD_TOKEN_MAX)
		return NULL;
	/* every entry is compared, in constant time each: no early exit on a match */
	for (uint32_t i = 0; i < t->n; i++)
		if (t->v[i].token[0] && token_eq(t->v[i].token, token))
			found = &t->v[i];
	return found;
}

/* ---- the server's tenants ---------------------------------------------------------------- */

int loomd_server_tenant(struct loomd_server *s, const char *name, uint32_t *ret_id,
			struct loom_err *err)
{
	struct loomd_tenant *t;

	if (!name || !name[0])
		name = LOOMD_TENANT_DEFAULT;
	for (uint32_t i = 0; i < s->ntenants; i++)
		if (!strcmp(s->tenants[i].name, name)) {
			*ret_id = i;
			return 0;
		}
	if (!loomd_tenant_name_valid(name))
		return loom_err_set(err, EINVAL,
				    "'%.64s' is not a tenant name (1..%d of A-Z a-z "
				    "0-9 . _ -)",
				    name, LOOMD_TENANT_MAX - 1);
	if (s->ntenants >= TENANTS_MAX)
		return loom_err_set(err, ENOSPC, "loomd tracks %u tenants already", TENANTS_MAX);
	if (s->ntenants == s->cap_tenants) {
		uint32_t ncap = s->cap_tenants ? 2 * s->cap_tenants : 16;
		struct loomd_tenant *v = realloc(s->tenants, ncap * sizeof(*v));

		if (!v)
			return loom_err_set(err, ENOMEM, "out of memory");
		s->tenants = v;
		s->cap_tenants = ncap;
	}
	t = &s->tenants[s->ntenants];
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->quota = (struct loomd_quota){s->cfg.tenant_max_jobs, s->cfg.tenant_max_coflows,
					s->cfg.tenant_max_flows, s->cfg.tenant_announce_rate};
	for (uint32_t i = 0; s->tokens && i < s->tokens->n; i++) {
		const struct loomd_token_entry *e = &s->tokens->v[i];

		if (!e->quota_set || strcmp(e->tenant, name))
			continue;
		for (size_t k = 0; k < sizeof(quota_keys) / sizeof(quota_keys[0]); k++)
			if (e->quota_set & quota_keys[k].bit)
				*(uint32_t *)((char *)&t->quota + quota_keys[k].off) =
					*(const uint32_t *)((const char *)&e->quota +
							    quota_keys[k].off);
	}
	t->rate_tokens = t->quota.announce_rate;
	t->rate_ns = loomd_server_now_ns(s);
	*ret_id = s->ntenants++;
	return 0;
}

bool loomd_tenant_take_announce(struct loomd_tenant *t, uint64_t now_ns)
{
	double rate = t->quota.announce_rate;

	if (!t->quota.announce_rate)
		return true;
	if (now_ns > t->rate_ns) {
		t->rate_tokens += (double)(now_ns - t->rate_ns) * 1e-9 * rate;
		if (t->rate_tokens > rate)
			t->rate_tokens = rate; /* a burst of one second's worth at most */
	}
	t->rate_ns = now_ns > t->rate_ns ? now_ns : t->rate_ns;
	if (t->rate_tokens < 1)
		return false;
	t->rate_tokens -= 1;
	return true;
}
