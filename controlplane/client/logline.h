/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/client/logline: the one way libloom's preloaded libraries
 * (libloom_preload.so, libloom_mpi.so) print a line on stderr (not
 * installed, not exported from libloom.so).
 */
#ifndef LOOM_CONTROLPLANE_CLIENT_LOGLINE_H
#define LOOM_CONTROLPLANE_CLIENT_LOGLINE_H

#include <stdarg.h>
#include <stddef.h>

/*
 * Ends the line in line[0, size), whose first n bytes (n + 1 < size) the
 * caller wrote (its prefix, e.g. the library's name and the pid), with fmt's
 * message, cut to fit, and a newline, and writes it to stderr in one write()
 * so that the lines of several processes or ranks do not interleave. The
 * line ends up at most size - 1 bytes long; a failed write is ignored.
 */
__attribute__((visibility("hidden"), format(printf, 4, 0))) void
loom_client_log_line(char *line, size_t size, size_t n, const char *fmt, va_list ap);

#endif
