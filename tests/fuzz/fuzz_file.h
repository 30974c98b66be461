/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * For fuzz targets of parsers that take a path: fuzz_file() puts the input
 * into one memfd, made on the first call and rewritten on each, and returns
 * a path that opens it ("/proc/self/fd/N"), so no file is left behind.
 */
#ifndef LOOM_TESTS_FUZZ_FUZZ_FILE_H
#define LOOM_TESTS_FUZZ_FUZZ_FILE_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Returns the path (static storage) of a file holding data, or NULL when no memfd can be made. */
static inline const char *fuzz_file(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static int tried;
	static char path[64];
	size_t done = 0;

	if (fd < 0) {
		if (tried)
			return NULL;
		tried = 1;
		fd = memfd_create("fuzz-input", MFD_CLOEXEC);
		if (fd < 0) {
			perror("fuzz: memfd_create; skipping the file parser");
			return NULL;
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) < 0)
		abort();
	while (done < size) {
		ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			abort();
		done += (size_t)n;
	}
	return path;
}

#endif
