/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common/log: levelled logging to stderr (or a caller-chosen sink).
 *
 * Libraries log only at LOOM_LOG_DEBUG; programs log once, where they handle
 * an error. The level is process-wide; changing it is not thread-safe with
 * respect to concurrent loggers (set it once at start-up or from the loop).
 */
#ifndef LOOM_COMMON_LOG_H
#define LOOM_COMMON_LOG_H

#include <stdarg.h>
#include <stdio.h>

enum loom_log_level {
	LOOM_LOG_ERR = 0,
	LOOM_LOG_WARN = 1,
	LOOM_LOG_INFO = 2,
	LOOM_LOG_DEBUG = 3,
};

/* Sets the lowest-priority level that is still printed. */
void loom_log_set_level(enum loom_log_level level);
enum loom_log_level loom_log_get_level(void);

/* Parses "err", "warn", "info" or "debug"; returns 0 or -EINVAL. */
int loom_log_level_parse(const char *s, enum loom_log_level *ret_level);

/* Redirects output; NULL restores stderr. The stream stays owned by the caller. */
void loom_log_set_stream(FILE *f);

/* Sets the program name printed before each message (not copied). */
void loom_log_set_ident(const char *ident);

__attribute__((format(printf, 2, 3))) void loom_log(enum loom_log_level level, const char *fmt,
						    ...);
__attribute__((format(printf, 2, 0))) void loom_log_va(enum loom_log_level level, const char *fmt,
						       va_list ap);

#define log_err(...)   loom_log(LOOM_LOG_ERR, __VA_ARGS__)
#define log_warn(...)  loom_log(LOOM_LOG_WARN, __VA_ARGS__)
#define log_info(...)  loom_log(LOOM_LOG_INFO, __VA_ARGS__)
#define log_debug(...) loom_log(LOOM_LOG_DEBUG, __VA_ARGS__)

#endif
