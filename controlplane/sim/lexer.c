/* SPDX-License-Identifier: BSD-3-Clause */
#include "controlplane/sim/lexer.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sim_lex_err_at(struct loom_err *err, const char *name, unsigned long line, const char *fmt, ...)
{
	char msg[LOOM_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return loom_err_set(err, EINVAL, "%s:%lu: %s", name, line, msg);
}

int sim_lex_nomem(struct loom_err *err, const char *name, unsigned long line)
{
	return loom_err_set(err, ENOMEM, "%s:%lu: out of memory", name, line);
}

int sim_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		n *= 2;
	}
	q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

static bool lex_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

void sim_lex_done(struct sim_lexer *lx)
{
	free(lx->line);
	free(lx->tok);
}

int sim_lex_next(struct sim_lexer *lx, struct loom_err *err)
{
	while (lx->pos < lx->len) {
		const char *start = lx->buf + lx->pos;
		size_t rest = lx->len - lx->pos;
		const char *nl = memchr(start, '\n', rest);
		size_t n = nl ? (size_t)(nl - start) : rest;
		char *p, *hash;

		lx->pos += nl ? n + 1 : n;
		lx->lineno++;
		if (memchr(start, '\0', n))
			return sim_lex_err(lx, err, "NUL byte in line");
		if (sim_grow((void **)&lx->line, &lx->line_cap, n + 1, 1) < 0)
			return sim_lex_nomem(err, lx->name, lx->lineno);
		memcpy(lx->line, start, n);
		lx->line[n] = '\0';
		hash = strchr(lx->line, '#');
		if (hash)
			*hash = '\0';
		lx->ntok = 0;
		p = lx->line;
		for (;;) {
			while (lex_space(*p))
				p++;
			if (*p == '\0')
				break;
			if (sim_grow((void **)&lx->tok, &lx->tok_cap, lx->ntok + 1,
				     sizeof(char *)) < 0)
				return sim_lex_nomem(err, lx->name, lx->lineno);
			lx->tok[lx->ntok++] = p;
			while (*p != '\0' && !lex_space(*p))
				p++;
			if (*p != '\0')
				*p++ = '\0';
		}
		if (lx->ntok > 0)
			return 1;
	}
	return 0;
}

int sim_read_file(const char *path, const char *missing, char **ret_buf, size_t *ret_len,
		  struct loom_err *err)
{
	FILE *f;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int r = 0;

	if (!path)
		return loom_err_set(err, EINVAL, "%s", missing);
	f = fopen(path, "rb");
	if (!f) {
		r = loom_negerrno();
		return loom_err_set(err, -r, "%s: %s", path, strerror(-r));
	}
	for (;;) {
		size_t n;

		if (sim_grow((void **)&buf, &cap, len + 65536, 1) < 0) {
			r = -ENOMEM;
			break;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0) {
			if (ferror(f))
				r = loom_negerrno();
			break;
		}
	}
	fclose(f);
	if (r < 0) {
		free(buf);
		return loom_err_set(err, -r, "%s: %s", path, strerror(-r));
	}
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}
