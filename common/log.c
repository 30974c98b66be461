/* SPDX-License-Identifier: BSD-3-Clause */
#include "common/log.h"

#include <errno.h>
#include <string.h>

static enum loom_log_level log_level = LOOM_LOG_INFO;
static FILE *log_stream;
static const char *log_ident;

static const char *const level_names[] = {"err", "warn", "info", "debug"};

void loom_log_set_level(enum loom_log_level level)
{
	if (level > LOOM_LOG_DEBUG)
		level = LOOM_LOG_DEBUG;
	log_level = level;
}

enum loom_log_level loom_log_get_level(void)
{
	return log_level;
}

int loom_log_level_parse(const char *s, enum loom_log_level *ret_level)
{
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (s && strcmp(s, level_names[i]) == 0) {
			*ret_level = (enum loom_log_level)i;
			return 0;
		}
	}
	/* the long spellings too */
	if (s && !strcmp(s, "error")) {
		*ret_level = LOOM_LOG_ERR;
		return 0;
	}
	if (s && !strcmp(s, "warning")) {
		*ret_level = LOOM_LOG_WARN;
		return 0;
	}
	return -EINVAL;
}

void loom_log_set_stream(FILE *f)
{
	log_stream = f;
}

void loom_log_set_ident(const char *ident)
{
	log_ident = ident;
}

void loom_log_va(enum loom_log_level level, const char *fmt, va_list ap)
{
	FILE *f = log_stream ? log_stream : stderr;

	if (level > log_level)
		return;
	if (log_ident)
		fprintf(f, "%s: ", log_ident);
	if (level != LOOM_LOG_INFO)
		fprintf(f, "%s: ", level_names[level]);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
}

void loom_log(enum loom_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	loom_log_va(level, fmt, ap);
	va_end(ap);
}
