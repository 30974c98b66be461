/* SPDX-License-Identifier: BSD-3-Clause */
/* Frames without their messages: headers and blocking I/O; see frame.h. */
#include "proto/frame.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int wire_hdr_parse(const uint8_t hdr[WIRE_HDR_BYTES], uint32_t max_frame, uint32_t *ret_len)
{
	uint32_t n = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 |
		     (uint32_t)hdr[3];

	if (n == 0 || n > max_frame)
		return -EMSGSIZE;
	*ret_len = n;
	return 0;
}

void wire_hdr_put(uint8_t hdr[WIRE_HDR_BYTES], uint32_t len)
{
	hdr[0] = (uint8_t)(len >> 24);
	hdr[1] = (uint8_t)(len >> 16);
	hdr[2] = (uint8_t)(len >> 8);
	hdr[3] = (uint8_t)len;
}

/* Private copy of loom_clock_mono_ns() (in ms): proto/ may not use common/ (layering). */
static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for fd to be ready for events; 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, int64_t deadline_ms)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		int left = -1, r;

		if (deadline_ms >= 0) {
			int64_t d = deadline_ms - mono_ms();

			if (d <= 0)
				return -ETIMEDOUT;
			left = d > 1000000 ? 1000000 : (int)d;
		}
		r = poll(&p, 1, left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static int write_all_deadline(int fd, const uint8_t *p, size_t len, int64_t deadline_ms)
{
	while (len) {
		/* send() with MSG_NOSIGNAL: a closed peer is -EPIPE, never SIGPIPE */
		ssize_t w = send(fd, p, len, MSG_NOSIGNAL);

		if (w < 0 && errno == ENOTSOCK)
			w = write(fd, p, len);

		if (w > 0) {
			p += w;
			len -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int r = wait_fd(fd, POLLOUT, deadline_ms);

			if (r < 0)
				return r;
			continue;
		}
		return w < 0 ? -errno : -EPIPE;
	}
	return 0;
}

static int read_all_deadline(int fd, uint8_t *p, size_t len, int64_t deadline_ms)
{
	while (len) {
		int r = wait_fd(fd, POLLIN, deadline_ms);
		ssize_t n;

		if (r < 0)
			return r;
		n = read(fd, p, len);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return -EPIPE;
		if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
			continue;
		return -errno;
	}
	return 0;
}

static int64_t deadline_of(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : mono_ms() + timeout_ms;
}

int wire_write_all(int fd, const void *buf, size_t len, int timeout_ms)
{
	return write_all_deadline(fd, buf, len, deadline_of(timeout_ms));
}

int wire_read_all(int fd, void *buf, size_t len, int timeout_ms)
{
	return read_all_deadline(fd, buf, len, deadline_of(timeout_ms));
}

int wire_recv_frame(int fd, uint32_t max_frame, int timeout_ms, uint8_t **ret_body,
		    uint32_t *ret_len)
{
	int64_t deadline = deadline_of(timeout_ms);
	uint8_t hdr[WIRE_HDR_BYTES];
	uint8_t *body;
	uint32_t n;
	int r;

	r = read_all_deadline(fd, hdr, sizeof(hdr), deadline);
	if (r < 0)
		return r;
	r = wire_hdr_parse(hdr, max_frame, &n);
	if (r < 0)
		return r;
	body = malloc(n);
	if (!body)
		return -ENOMEM;
	r = read_all_deadline(fd, body, n, deadline);
	if (r < 0) {
		free(body);
		return r;
	}
	*ret_body = body;
	*ret_len = n;
	return 0;
}
