/* SPDX-License-Identifier: BSD-3-Clause */
#include "controlplane/client/logline.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

void loom_client_log_line(char *line, size_t size, size_t n, const char *fmt, va_list ap)
{
	vsnprintf(line + n, size - n - 1, fmt, ap);
	n = strlen(line);
	line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, n);
}
