/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for libloom_mpi's settings (controlplane/client/mpi_env.h).
 * The input, up to its first NUL, is "NAME\nVALUE" (NAME the processor name)
 * or, without a newline, VALUE alone for processor "node1". VALUE is given to
 * each parser: the decimal one over the ranges libloom_mpi uses,
 * $LOOM_MPI_HOST, $LOOM_MPI_JOB, $LOOM_MPI_MIN_BYTES, and $LOOM_MPI_HOSTS
 * for NAME (matched by name, and through a callback).
 *
 * Every answer must be what a plain second reading of mpi_env.h says: a
 * decimal is accepted when it is digits only and in range, with that value;
 * a LOOM_MPI_HOSTS list gives the ID of its first entry whose NAME (before
 * the entry's last '=') is NAME, when every non-empty entry is NAME=ID. A
 * refusal is the documented -errno with a message that names the variable,
 * shorter than LOOM_CLIENT_MPI_MSG_MAX, and leaves the result untouched;
 * the callback sees only entries' NAMEs, and none after it said yes; an
 * entry appended to a list changes nothing when the list already has an
 * answer or a malformed entry. Anything else (crash, sanitizer report,
 * leak, abort) is a bug.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/client/mpi_env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SENTINEL 0xa5a5a5a5u

/* The decimal in [lo, hi] that s[0, n) is, read digit by digit: true and *ret, or false. */
static bool ref_dec(const char *s, size_t n, unsigned long long lo, unsigned long long hi,
		    unsigned long long *ret)
{
	unsigned long long v = 0;

	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned char)s[i] - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (v < lo || v > hi)
		return false;
	*ret = v;
	return true;
}

/* A refusal: -code, with a message that starts with prefix and fits. */
static void check_refusal(int r, int code, const struct loom_err *err, const char *prefix)
{
	size_t len = strnlen(err->msg, sizeof(err->msg));

	if (r != -code || len == 0 || len >= LOOM_CLIENT_MPI_MSG_MAX ||
	    strncmp(err->msg, prefix, strlen(prefix)) != 0)
		abort();
}

/* The callback's view: what it was asked, and whether it said yes. */
struct match_ctx {
	const char *name, *value;
	bool said_yes;
	unsigned calls;
};

static bool match_name(const char *key, void *arg)
{
	struct match_ctx *m = arg;

	if (m->said_yes || !key[0] || strchr(key, ',') || !strstr(m->value, key))
		abort();
	m->calls++;
	m->said_yes = strcmp(key, m->name) == 0;
	return m->said_yes;
}

/*
 * The same list read again, without strtok or a copy: 0 and *ret (the first
 * match), -EINVAL (a malformed entry) or -ENOENT.
 */
static int ref_hosts(const char *map, const char *name, uint32_t *ret)
{
	size_t nlen = strlen(name);
	bool found = false;
	const char *e = map;

	if (!map[0])
		return -ENOENT;
	while (*e) {
		size_t len = strcspn(e, ",");
		const char *eq = NULL;
		unsigned long long v;

		for (size_t i = 0; i < len; i++)
			if (e[i] == '=')
				eq = e + i;
		if (len > 0) {
			if (!eq || eq == e ||
			    !ref_dec(eq + 1, len - (size_t)(eq + 1 - e), 0,
				     LOOM_CLIENT_MPI_NO_HOST - 1, &v))
				return -EINVAL;
			if (!found && (size_t)(eq - e) == nlen && !memcmp(e, name, nlen)) {
				*ret = (uint32_t)v;
				found = true;
			}
		}
		e += len;
		if (*e == ',')
			e++;
	}
	return found ? 0 : -ENOENT;
}

/* The decimals over the ranges libloom_mpi reads them in. */
static void fuzz_dec(const char *value)
{
	static const unsigned long long ranges[][2] = {
		{0, UINT64_MAX},
		{0, LOOM_CLIENT_MPI_NO_HOST - 1},
		{1, LOOM_CLIENT_MPI_JOB_MAX},
		{1, 3600000},
	};

	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		unsigned long long got = SENTINEL, want = 0;
		bool ok = loom_client_mpi_env_dec(value, ranges[i][0], ranges[i][1], &got);

		if (ok != ref_dec(value, strlen(value), ranges[i][0], ranges[i][1], &want))
			abort();
		if (ok ? got != want : got != SENTINEL)
			abort();
	}
	if (loom_client_mpi_env_dec(NULL, 0, UINT64_MAX, NULL))
		abort();
}

/* $LOOM_MPI_HOST, $LOOM_MPI_JOB, $LOOM_MPI_MIN_BYTES: a decimal each, in its range. */
static void fuzz_numbers(const char *value)
{
	struct loom_err err = {{0}};
	unsigned long long want = 0;
	uint32_t host = SENTINEL;
	uint64_t x = SENTINEL;
	bool ok;
	int r;

	r = loom_client_mpi_env_host(value, &host, &err);
	ok = ref_dec(value, strlen(value), 0, LOOM_CLIENT_MPI_NO_HOST - 1, &want);
	if (ok != (r == 0) || (ok && host != want) || (!ok && host != SENTINEL))
		abort();
	if (!ok)
		check_refusal(r, EINVAL, &err, "LOOM_MPI_HOST=\"");

	err.msg[0] = '\0';
	r = loom_client_mpi_env_job(value, &x, &err);
	ok = ref_dec(value, strlen(value), 1, LOOM_CLIENT_MPI_JOB_MAX, &want);
	if (ok != (r == 0) || (ok && x != want) || (!ok && x != SENTINEL))
		abort();
	if (!ok)
		check_refusal(r, EINVAL, &err, "LOOM_MPI_JOB=\"");

	err.msg[0] = '\0';
	x = SENTINEL;
	r = loom_client_mpi_env_min_bytes(value, &x, &err);
	ok = ref_dec(value, strlen(value), 0, UINT64_MAX, &want);
	if (ok != (r == 0) || (ok && x != want) || (!ok && x != SENTINEL))
		abort();
	if (!ok)
		check_refusal(r, EINVAL, &err, "LOOM_MPI_MIN_BYTES=\"");
}

/* $LOOM_MPI_HOSTS for processor name: by name, through the callback, and read again. */
static void fuzz_hosts(const char *name, const char *value)
{
	struct loom_err err = {{0}}, err2 = {{0}};
	struct match_ctx m = {.name = name, .value = value};
	uint32_t host = SENTINEL, host2 = SENTINEL, want = 0;
	int r, r2, want_r;
	char *longer;
	size_t n;

	r = loom_client_mpi_env_hosts(value, name, NULL, NULL, &host, &err);
	r2 = loom_client_mpi_env_hosts(value, name, match_name, &m, &host2, &err2);
	want_r = ref_hosts(value, name, &want);
	if (r == -ENOMEM || r2 == -ENOMEM)
		return;
	if (r != want_r || r2 != r || host != host2 || strcmp(err.msg, err2.msg) != 0)
		abort();
	if ((r == 0 && (host != want || !m.said_yes)) || (r != 0 && host != SENTINEL))
		abort();
	if (r == -EINVAL)
		check_refusal(r, EINVAL, &err, "LOOM_MPI_HOSTS: entry \"");
	else if (r != 0)
		check_refusal(r, ENOENT, &err,
			      value[0] ? "LOOM_MPI_HOSTS names neither" : "no host id for");

	/* an entry for name appended: the answer stays (or, when none was, is that entry's) */
	n = strlen(value) + strlen(name) + 16;
	longer = malloc(n);
	if (!longer)
		return;
	snprintf(longer, n, "%s,%s=1", value, name);
	host2 = SENTINEL;
	err2.msg[0] = '\0';
	r2 = loom_client_mpi_env_hosts(longer, name, NULL, NULL, &host2, &err2);
	if (r2 != -ENOMEM) {
		if (r == 0 && (r2 != 0 || host2 != host))
			abort();
		if (r == -EINVAL && (r2 != r || strcmp(err.msg, err2.msg) != 0))
			abort();
		if (r == -ENOENT && name[0] && !strchr(name, ',') && (r2 != 0 || host2 != 1))
			abort();
	}
	free(longer);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	const char *name = "node1", *value;
	char *nl;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0'; /* the variables are C strings: a NUL ends the input */
	nl = strchr(s, '\n');
	if (nl) {
		*nl = '\0';
		name = s;
		value = nl + 1;
	} else {
		value = s;
	}
	fuzz_dec(value);
	fuzz_numbers(value);
	fuzz_hosts(name, value);
	free(s);
	return 0;
}
