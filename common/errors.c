/* SPDX-License-Identifier: BSD-3-Clause */
#include "common/errors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int loom_err_set(struct loom_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return code > 0 ? -code : code;
}

void loom_err_clear(struct loom_err *err)
{
	if (err)
		err->msg[0] = '\0';
}

const char *loom_err_str(const struct loom_err *err)
{
	return err && err->msg[0] ? err->msg : "unknown error";
}

int loom_parse_u64(const char *s, unsigned long long *ret)
{
	char *end;
	unsigned long long v;

	if (!s || *s == '\0' || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (errno || *end != '\0')
		return -EINVAL;
	*ret = v;
	return 0;
}

int loom_parse_double(const char *s, double *ret)
{
	char *end;
	double v;

	if (!s || *s == '\0' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno == ERANGE)
		return -ERANGE;
	if (errno || *end != '\0' || !isfinite(v))
		return -EINVAL;
	*ret = v;
	return 0;
}
