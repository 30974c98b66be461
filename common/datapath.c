/* SPDX-License-Identifier: BSD-3-Clause */
#include "common/datapath.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

const char *loom_data_path(const char *rel, char *buf, size_t size)
{
	const char *src = getenv("LOOM_SRCDIR");
	char srcdata[PATH_MAX] = "", path[PATH_MAX];
	const char *dirs[] = {
		getenv("LOOM_DATA"),  "data", srcdata,
#ifdef LOOM_INSTALL_DATADIR
		LOOM_INSTALL_DATADIR,
#endif
#ifdef LOOM_SOURCE_DATADIR
		LOOM_SOURCE_DATADIR,
#endif
	};
	bool first = true;

	if (src && *src)
		snprintf(srcdata, sizeof(srcdata), "%s/data", src);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (!dirs[i] || !*dirs[i])
			continue;
		snprintf(path, sizeof(path), "%s/%s", dirs[i], rel);
		if (first) {
			snprintf(buf, size, "%s", path);
			first = false;
		}
		if (access(path, R_OK) == 0) {
			snprintf(buf, size, "%s", path);
			break;
		}
	}
	return buf;
}
