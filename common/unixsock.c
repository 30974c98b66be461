/* SPDX-License-Identifier: BSD-3-Clause */
#include "common/unixsock.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/cleanup.h"

int loom_unixsock_clear_stale(const char *what, const char *path, struct loom_err *err)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (strlen(path) >= sizeof(sun.sun_path))
		return loom_err_set(err, ENAMETOOLONG, "%s %s: path too long (at most %zu bytes)",
				    what, path, sizeof(sun.sun_path) - 1);
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		return loom_err_set(err, errno, "%s %s: cannot check it: %s", what, path,
				    strerror(errno));
	}
	if (!S_ISSOCK(st.st_mode))
		return loom_err_set(err, EEXIST,
				    "%s %s exists and is not a socket; not removing it", what,
				    path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return loom_err_set(err, errno, "%s %s: socket: %s", what, path, strerror(errno));
	if (connect(fd, (const struct sockaddr *)&sun, sizeof(sun)) == 0 || errno == EAGAIN)
		return loom_err_set(err, EADDRINUSE,
				    "%s %s is in use: another process is listening there", what,
				    path);
	if (errno != ECONNREFUSED && errno != ENOENT)
		return loom_err_set(err, errno, "%s %s: cannot check it: %s", what, path,
				    strerror(errno));
	/* Nobody listens: a socket file left by a process that died. */
	if (unlink(path) < 0 && errno != ENOENT)
		return loom_err_set(err, errno, "%s %s: cannot remove the stale socket: %s", what,
				    path, strerror(errno));
	return 0;
}
