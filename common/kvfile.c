/* SPDX-License-Identifier: BSD-3-Clause */
/* The "KEY = VALUE" reader: see kvfile.h. */
#include "common/kvfile.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

static char *skip_space(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	return s;
}

static void trim_end(char *s)
{
	char *e = s + strlen(s);

	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
}

/*
 * Splits line (modified) into key and value. 0 with *ret_key NULL for a
 * blank or comment line; -EINVAL with the reason in err.
 */
static int split(char *line, char **ret_key, char **ret_value, struct loom_err *err)
{
	char *key = skip_space(line), *eq, *val, *close, *hash;
	size_t len;

	*ret_key = NULL;
	if (!*key || *key == '#')
		return 0;
	eq = strpbrk(key, "=#");
	if (!eq || *eq == '#')
		return loom_err_set(err, EINVAL, "expected 'key = value'");
	*eq = '\0';
	trim_end(key);
	if (!*key)
		return loom_err_set(err, EINVAL, "expected 'key = value': no key before '='");
	val = skip_space(eq + 1);
	/* '#' inside a closed quote is the value's */
	close = *val == '"' ? strchr(val + 1, '"') : NULL;
	hash = strchr(close ? close + 1 : val, '#');
	if (hash)
		*hash = '\0';
	trim_end(val);
	len = strlen(val);
	if (len >= 2 && val[0] == '"' && val[len - 1] == '"') {
		val[len - 1] = '\0';
		val++;
	}
	*ret_key = key;
	*ret_value = val;
	return 0;
}

int loom_kv_read(FILE *f, const char *name, loom_kv_fn fn, void *ctx, struct loom_err *err)
{
	/* the longest line, a carriage return, and the NUL */
	char line[LOOM_KV_LINE_MAX + 2];
	unsigned int lineno = 0;
	int ch = 0;

	while (ch != EOF) {
		struct loom_kv kv;
		struct loom_err e2 = {{0}};
		char *key, *value;
		size_t n = 0;
		bool nul = false;
		int r;

		while ((ch = getc(f)) != EOF && ch != '\n') {
			if (n == LOOM_KV_LINE_MAX + 1)
				return loom_err_set(err, EINVAL,
						    "%s:%u: line longer than %d characters", name,
						    lineno + 1, LOOM_KV_LINE_MAX);
			nul |= ch == '\0';
			line[n++] = (char)ch;
		}
		if (ch == EOF && ferror(f)) {
			r = errno > 0 ? errno : EIO;
			return loom_err_set(err, r, "%s: %s", name, strerror(r));
		}
		if (ch == EOF && n == 0)
			break;
		lineno++;
		if (n > 0 && line[n - 1] == '\r')
			n--;
		if (n > LOOM_KV_LINE_MAX)
			return loom_err_set(err, EINVAL, "%s:%u: line longer than %d characters",
					    name, lineno, LOOM_KV_LINE_MAX);
		if (nul)
			return loom_err_set(err, EINVAL, "%s:%u: NUL byte in the line", name,
					    lineno);
		line[n] = '\0';
		r = split(line, &key, &value, &e2);
		if (r == 0 && !key)
			continue;
		if (r == 0) {
			kv = (struct loom_kv){name, lineno, key, value};
			r = fn(ctx, &kv, &e2);
		}
		if (r < 0)
			return loom_err_set(err, -r, "%s:%u: %s", name, lineno, loom_err_str(&e2));
	}
	return 0;
}

int loom_kv_load(const char *path, loom_kv_fn fn, void *ctx, struct loom_err *err)
{
	FILE *f = fopen(path, "r");
	int r;

	if (!f) {
		r = errno;
		return loom_err_set(err, r, "%s: %s", path, strerror(r));
	}
	r = loom_kv_read(f, path, fn, ctx, err);
	fclose(f);
	return r;
}

bool loom_kv_key_snake(const char *key, char *buf, size_t size)
{
	size_t len = strlen(key);
	bool changed = false;

	if (size == 0)
		return false;
	if (len >= size) {
		buf[0] = '\0';
		return false;
	}
	for (size_t i = 0; i <= len; i++) {
		buf[i] = key[i] == '-' ? '_' : key[i];
		changed |= key[i] == '-';
	}
	return changed;
}
