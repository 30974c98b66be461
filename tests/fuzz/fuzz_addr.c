/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for the endpoint parser (common/addr.c, loom_addr_parse() and
 * loom_addr_unix()). The input, up to its first NUL, is parsed under every
 * combination of LOOM_ADDR_LISTEN and LOOM_ADDR_TCP_ONLY, and as a bare
 * path. A refusal must be -EINVAL or -ENAMETOOLONG with a message starting
 * with what it was given and nothing written to the result. What parses must
 * hold what the grammar allows (a path of 1..107 bytes, or a host without
 * ':' unless it came in brackets, of at most 255 bytes, a port in range for
 * the flags, TCP only under LOOM_ADDR_TCP_ONLY), and its canonical form
 * (loom_addr_str()) must parse back to the same address under the same
 * flags. Anything else (crash, sanitizer report, abort) is a bug.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/addr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same(const struct loom_addr *a, const struct loom_addr *b)
{
	if (a->kind != b->kind)
		return false;
	if (a->kind == LOOM_ADDR_UNIX)
		return !strcmp(a->path, b->path);
	return !strcmp(a->host, b->host) && a->port == b->port;
}

static void check_refusal(int r, const struct loom_err *err, const char *what,
			  const struct loom_addr *a)
{
	if (r != -EINVAL && r != -ENAMETOOLONG)
		abort();
	if (strncmp(err->msg, what, strlen(what)) != 0)
		abort();
	if (a->kind != 0) /* written on failure */
		abort();
}

static void check_parsed(const struct loom_addr *a, const char *s, unsigned flags)
{
	struct loom_err err = {{0}};
	struct loom_addr b = {0};
	char buf[LOOM_ADDR_STR_MAX];
	size_t n;

	if (a->kind == LOOM_ADDR_UNIX) {
		n = strnlen(a->path, LOOM_ADDR_PATH_MAX);
		if (n == 0 || n >= LOOM_ADDR_PATH_MAX || (flags & LOOM_ADDR_TCP_ONLY))
			abort();
	} else if (a->kind == LOOM_ADDR_TCP) {
		n = strnlen(a->host, LOOM_ADDR_HOST_MAX);
		if (n >= LOOM_ADDR_HOST_MAX)
			abort();
		if (!(flags & LOOM_ADDR_LISTEN) && (n == 0 || a->port == 0))
			abort();
		/* a host with ':' only from brackets */
		if (strchr(a->host, ':') && !strchr(s, '['))
			abort();
	} else {
		abort();
	}
	loom_addr_str(a, buf);
	if (strnlen(buf, LOOM_ADDR_STR_MAX) >= LOOM_ADDR_STR_MAX)
		abort();
	if (loom_addr_parse("again", buf, flags, &b, &err) != 0 || !same(a, &b))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned flag_sets[] = {0, LOOM_ADDR_LISTEN, LOOM_ADDR_TCP_ONLY,
					     LOOM_ADDR_LISTEN | LOOM_ADDR_TCP_ONLY};
	char *s = malloc(size + 1);

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0'; /* an address is a C string: bytes after a NUL are not seen */
	for (size_t i = 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++) {
		struct loom_err err = {{0}};
		struct loom_addr a = {0};
		int r = loom_addr_parse("fuzz", s, flag_sets[i], &a, &err);

		if (r == 0)
			check_parsed(&a, s, flag_sets[i]);
		else
			check_refusal(r, &err, "fuzz \"", &a);
	}
	{
		struct loom_err err = {{0}};
		struct loom_addr a = {0};
		int r = loom_addr_unix("path", s, &a, &err);

		if (r == 0) {
			if (a.kind != LOOM_ADDR_UNIX || strcmp(a.path, s) != 0)
				abort();
		} else {
			check_refusal(r, &err, "path", &a);
		}
	}
	free(s);
	return 0;
}
