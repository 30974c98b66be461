/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gnn_errf() (gnn_impl.h), in a file of its own because two binaries use it:
 * libloom_gnn and the cuda module (libloom_gnn_cuda.so), which each get a
 * copy; the module's is hidden, so the two never meet.
 */
#include <stdarg.h>
#include <stdio.h>

#include "gnn/gnn_impl.h"

int gnn_errf(struct gnn_err *err, int e, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return -e;
}
