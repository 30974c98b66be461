/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common/admin: the admin socket server (a libevent listener and one
 * bufferevent per connection) and its blocking client. See admin.h.
 */
#include "common/admin.h"

#include "common/log.h"

#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "common/addr.h"
#include "common/cleanup.h"
#include "common/clock.h"

/* Stop reading requests while this much reply data waits for the client. */
#define ADMIN_OUT_HIGH (4u * 1024 * 1024)
/* How long accepting pauses after accept() fails (EMFILE and the like). */
#define ADMIN_ACCEPT_RETRY_MS 100
#define ADMIN_CMD_NAME_MAX    63

struct admin_cmd {
	char *name;
	char *usage;
	char *help;
	loom_admin_fn fn;
	void *ctx;
};

struct admin_conn {
	struct loom_admin *admin;
	struct bufferevent *bev;
	struct admin_conn *prev, *next;
	bool closing;   /* flush what is queued, then close; read and discard */
	bool throttled; /* reading paused until the client takes our replies */
	bool has_cred;  /* uid and pid below are the peer's (SO_PEERCRED) */
	uid_t uid;
	pid_t pid;
};

struct loom_admin {
	struct event_base *base;
	struct evconnlistener *listener;
	struct event *accept_retry;
	char *path;
	struct admin_cmd *cmds; /* sorted by name */
	size_t n_cmds, cap_cmds;
	struct admin_conn *conns;
	const struct admin_conn *running; /* the connection whose command runs, or NULL */
};

/* ---- commands ------------------------------------------------------------------------- */

static bool cmd_name_valid(const char *name)
{
	size_t n;

	if (!name)
		return false;
	n = strlen(name);
	if (n == 0 || n > ADMIN_CMD_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.'))
			return false;
	}
	return true;
}

static const struct admin_cmd *cmd_find(const struct loom_admin *a, const char *name)
{
	size_t lo = 0, hi = a->n_cmds;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, a->cmds[mid].name);

		if (c == 0)
			return &a->cmds[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

static void cmd_done(struct admin_cmd *c)
{
	free(c->name);
	free(c->usage);
	free(c->help);
}

int loom_admin_register(struct loom_admin *a, const char *cmd, const char *args_usage,
			const char *help, loom_admin_fn fn, void *ctx)
{
	struct admin_cmd c = {.fn = fn, .ctx = ctx};
	size_t at;

	if (!a || !fn || !cmd_name_valid(cmd))
		return -EINVAL;
	if (cmd_find(a, cmd))
		return -EEXIST;
	if (a->n_cmds == a->cap_cmds) {
		size_t cap = a->cap_cmds ? 2 * a->cap_cmds : 16;
		struct admin_cmd *cmds = realloc(a->cmds, cap * sizeof(*cmds));

		if (!cmds)
			return -ENOMEM;
		a->cmds = cmds;
		a->cap_cmds = cap;
	}
	c.name = strdup(cmd);
	c.usage = strdup(args_usage ? args_usage : "");
	c.help = strdup(help ? help : "");
	if (!c.name || !c.usage || !c.help) {
		cmd_done(&c);
		return -ENOMEM;
	}
	for (at = 0; at < a->n_cmds && strcmp(a->cmds[at].name, cmd) < 0; at++)
		;
	memmove(&a->cmds[at + 1], &a->cmds[at], (a->n_cmds - at) * sizeof(*a->cmds));
	a->cmds[at] = c;
	a->n_cmds++;
	return 0;
}

/* The built-in "help": [{"cmd": .., "args": .., "help": ..}, ...] sorted by name. */
static int cmd_help(void *ctx, int argc, const char *const *argv, json_t **ret_result,
		    struct loom_err *err)
{
	const struct loom_admin *a = ctx;
	json_t *list = json_array();

	if (!list)
		return -ENOMEM;
	for (size_t i = 0; i < a->n_cmds; i++) {
		const struct admin_cmd *c = &a->cmds[i];

		if (json_array_append_new(list, json_pack("{s:s, s:s, s:s}", "cmd", c->name, "args",
							  c->usage, "help", c->help)) < 0) {
			json_decref(list);
			return loom_err_set(err, ENOMEM, "out of memory");
		}
	}
	*ret_result = list;
	return 0;
}

static int cmd_set_log_level(void *ctx, int argc, const char *const *argv, json_t **ret,
			     struct loom_err *err)
{
	enum loom_log_level lvl;

	(void)ctx;
	if (argc != 1 || loom_log_level_parse(argv[0], &lvl) < 0)
		return loom_err_set(err, EINVAL, "usage: set-log-level error|warn|info|debug");
	loom_log_set_level(lvl);
	*ret = json_pack("{s:s}", "level", argv[0]);
	return *ret ? 0 : -ENOMEM;
}

int loom_admin_register_log_level(struct loom_admin *a)
{
	return loom_admin_register(a, "set-log-level", "LEVEL", "error, warn, info or debug",
				   cmd_set_log_level, NULL);
}

const char *loom_admin_path(const struct loom_admin *a)
{
	return a->path;
}

/* ---- connections ---------------------------------------------------------------------- */

static void conn_free(struct admin_conn *c)
{
	struct loom_admin *a = c->admin;

	if (c->prev)
		c->prev->next = c->next;
	else
		a->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	bufferevent_free(c->bev);
	free(c);
}

static int dump_to_evbuffer(const char *buffer, size_t size, void *data)
{
	return evbuffer_add(data, buffer, size);
}

/* Appends reply and a newline to the connection's output; on failure an error reply. */
static void conn_send(struct admin_conn *c, json_t *reply)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	struct evbuffer *tmp = evbuffer_new();

	if (tmp && json_dump_callback(reply, dump_to_evbuffer, tmp, JSON_COMPACT) == 0 &&
	    evbuffer_add(tmp, "\n", 1) == 0 && evbuffer_add_buffer(out, tmp) == 0) {
		evbuffer_free(tmp);
		return;
	}
	if (tmp)
		evbuffer_free(tmp);
	evbuffer_add_printf(out, "{\"ok\":false,\"error\":\"cannot encode the reply\"}\n");
}

/* Cuts a UTF-8 sequence that a size limit left incomplete at the end of s. */
static void utf8_trim_tail(char *s)
{
	size_t n = strlen(s), i = n, need;
	unsigned char lead;

	while (i > 0 && n - i < 3 && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
		i--;
	if (i == 0)
		return;
	lead = (unsigned char)s[i - 1];
	if (lead < 0xc0)
		return;
	need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
	if (n - (i - 1) < need)
		s[i - 1] = '\0';
}

static void conn_send_error(struct admin_conn *c, const char *msg)
{
	json_t *reply = json_pack("{s:b, s:s}", "ok", 0, "error", msg);
	char fixed[LOOM_ERR_MSG_MAX + 64];

	if (!reply) {
		/* Not UTF-8: a message truncated mid-character, or raw bytes. */
		snprintf(fixed, sizeof(fixed), "%s", msg);
		utf8_trim_tail(fixed);
		reply = json_pack("{s:b, s:s}", "ok", 0, "error", fixed);
	}
	if (!reply) {
		for (char *p = fixed; *p; p++)
			if ((unsigned char)*p >= 0x80)
				*p = '?';
		reply = json_pack("{s:b, s:s}", "ok", 0, "error", fixed);
		if (!reply) {
			evbuffer_add_printf(bufferevent_get_output(c->bev),
					    "{\"ok\":false,\"error\":\"out of memory\"}\n");
			return;
		}
	}
	conn_send(c, reply);
	json_decref(reply);
}

/* Parses and runs one request line (len bytes, newline excluded) and queues its reply. */
static void conn_handle_line(struct admin_conn *c, const char *line, size_t len)
{
	struct loom_admin *a = c->admin;
	_cleanup_free_ const char **argv = NULL;
	const struct admin_cmd *cmd;
	json_t *req, *jcmd, *jargs, *result = NULL, *reply;
	struct loom_err err;
	json_error_t jerr;
	size_t argc = 0;
	char msg[LOOM_ERR_MSG_MAX + 64];
	int r;

	req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!req) {
		snprintf(msg, sizeof(msg), "bad request: invalid JSON: %s (column %d)", jerr.text,
			 jerr.column);
		conn_send_error(c, msg);
		return;
	}
	jcmd = json_object_get(req, "cmd");
	jargs = json_object_get(req, "args");
	if (!json_is_object(req) || !json_is_string(jcmd)) {
		conn_send_error(c,
				"bad request: expected {\"cmd\": string, \"args\": [string, ...]}");
		goto out;
	}
	if (jargs && !json_is_null(jargs)) {
		if (!json_is_array(jargs)) {
			conn_send_error(c, "bad request: \"args\" must be an array of strings");
			goto out;
		}
		argc = json_array_size(jargs);
	}
	argv = calloc(argc + 1, sizeof(*argv));
	if (!argv) {
		conn_send_error(c, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < argc; i++) {
		json_t *s = json_array_get(jargs, i);

		if (!json_is_string(s) || strlen(json_string_value(s)) != json_string_length(s)) {
			conn_send_error(c, "bad request: \"args\" must be an array of strings "
					   "(without NUL characters)");
			goto out;
		}
		argv[i] = json_string_value(s);
	}
	cmd = strlen(json_string_value(jcmd)) == json_string_length(jcmd) ?
		      cmd_find(a, json_string_value(jcmd)) :
		      NULL;
	if (!cmd) {
		size_t n = json_string_length(jcmd);
		char name[ADMIN_CMD_NAME_MAX + 1];

		if (n > ADMIN_CMD_NAME_MAX) {
			snprintf(msg, sizeof(msg), "unknown command (longer than %d bytes)",
				 ADMIN_CMD_NAME_MAX);
		} else {
			/* Control characters (NUL included) are not sent back. */
			memcpy(name, json_string_value(jcmd), n);
			name[n] = '\0';
			for (size_t i = 0; i < n; i++)
				if ((unsigned char)name[i] < 0x20)
					name[i] = '?';
			snprintf(msg, sizeof(msg), "unknown command '%s' (try 'help')", name);
		}
		conn_send_error(c, msg);
		goto out;
	}
	loom_err_clear(&err);
	a->running = c;
	r = cmd->fn(cmd->ctx, (int)argc, argv, &result, &err);
	a->running = NULL;
	if (r < 0) {
		json_decref(result);
		conn_send_error(c, err.msg[0] ? err.msg : strerror(-r));
		goto out;
	}
	reply = json_pack("{s:b, s:o}", "ok", 1, "result", result ? result : json_null());
	if (!reply) {
		conn_send_error(c, "out of memory");
		goto out;
	}
	conn_send(c, reply);
	json_decref(reply);
out:
	json_decref(req);
}

static bool line_blank(const char *line, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
			return false;
	return true;
}

/* Replies to a line (possibly without its newline) of len bytes at the head of input. */
static void conn_handle_head(struct admin_conn *c, size_t len, size_t drain)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	const char *line = (const char *)evbuffer_pullup(in, (ev_ssize_t)drain);

	if (line) {
		if (len > 0 && line[len - 1] == '\r')
			len--;
		if (!line_blank(line, len))
			conn_handle_line(c, line, len);
	} else {
		conn_send_error(c, "out of memory");
	}
	evbuffer_drain(in, drain);
}

/* The request is too long: say so, discard input, close once the reply is written. */
static void conn_oversize(struct admin_conn *c)
{
	char msg[128];

	snprintf(msg, sizeof(msg), "request line longer than %u bytes; closing",
		 (unsigned)LOOM_ADMIN_LINE_MAX);
	conn_send_error(c, msg);
	c->closing = true;
	evbuffer_drain(bufferevent_get_input(c->bev),
		       evbuffer_get_length(bufferevent_get_input(c->bev)));
}

/* Answers every complete request waiting in the input, as far as backpressure allows. */
static void conn_process(struct admin_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	struct evbuffer *out = bufferevent_get_output(c->bev);

	while (!c->closing) {
		struct evbuffer_ptr eol;
		size_t eol_len = 0;

		if (evbuffer_get_length(out) >= ADMIN_OUT_HIGH) {
			c->throttled = true;
			bufferevent_disable(c->bev, EV_READ);
			return;
		}
		eol = evbuffer_search_eol(in, NULL, &eol_len, EVBUFFER_EOL_LF);
		if (eol.pos < 0) {
			if (evbuffer_get_length(in) > LOOM_ADMIN_LINE_MAX)
				conn_oversize(c);
			return;
		}
		if ((size_t)eol.pos > LOOM_ADMIN_LINE_MAX) {
			conn_oversize(c);
			return;
		}
		conn_handle_head(c, (size_t)eol.pos, (size_t)eol.pos + eol_len);
	}
}

static void conn_read_cb(struct bufferevent *bev, void *arg)
{
	struct admin_conn *c = arg;

	if (c->closing) {
		evbuffer_drain(bufferevent_get_input(bev),
			       evbuffer_get_length(bufferevent_get_input(bev)));
		return;
	}
	conn_process(c);
}

/* Called when the output has drained completely. */
static void conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct admin_conn *c = arg;

	if (c->closing) {
		conn_free(c);
		return;
	}
	if (c->throttled) {
		c->throttled = false;
		bufferevent_enable(bev, EV_READ);
		conn_process(c);
	}
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct admin_conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t left;

	if (what & BEV_EVENT_ERROR) {
		conn_free(c);
		return;
	}
	if (!(what & BEV_EVENT_EOF))
		return;
	/* The client is done sending: answer a last request that lacks its newline. */
	if (!c->closing) {
		conn_process(c);
		left = evbuffer_get_length(in);
		if (!c->closing && !c->throttled && left > 0)
			conn_handle_head(c, left, left);
	}
	if (c->throttled) {
		/* Replies still to come from input already read; keep going on write. */
		return;
	}
	if (evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
		conn_free(c);
		return;
	}
	c->closing = true;
}

static void admin_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
			    int socklen, void *arg)
{
	struct loom_admin *a = arg;
	struct admin_conn *c = calloc(1, sizeof(*c));

	if (!c) {
		evutil_closesocket(fd);
		return;
	}
	c->admin = a;
	{
		struct ucred cred;
		socklen_t len = sizeof(cred);

		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
		    len == sizeof(cred)) {
			c->has_cred = true;
			c->uid = cred.uid;
			c->pid = cred.pid;
		}
	}
	c->bev = bufferevent_socket_new(a->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c->bev) {
		evutil_closesocket(fd);
		free(c);
		return;
	}
	bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
	if (bufferevent_enable(c->bev, EV_READ | EV_WRITE) < 0) {
		bufferevent_free(c->bev);
		free(c);
		return;
	}
	c->next = a->conns;
	if (a->conns)
		a->conns->prev = c;
	a->conns = c;
}

static void admin_accept_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loom_admin *a = arg;

	evconnlistener_enable(a->listener);
}

/* accept() failed other than EAGAIN (EMFILE, ENOBUFS...): pause instead of spinning. */
static void admin_accept_error_cb(struct evconnlistener *l, void *arg)
{
	struct loom_admin *a = arg;
	struct timeval tv = {.tv_sec = 0, .tv_usec = ADMIN_ACCEPT_RETRY_MS * 1000};

	evconnlistener_disable(l);
	evtimer_add(a->accept_retry, &tv);
}

/* ---- server lifecycle ----------------------------------------------------------------- */

/* The admin socket at path, by the rules of common/addr.h; 0 or -errno with err. */
static int admin_addr(const char *path, struct loom_addr *ret, struct loom_err *err)
{
	if (!path)
		return loom_err_set(err, EINVAL, "admin socket: empty socket path");
	return loom_addr_unix("admin socket", path, ret, err);
}

int loom_admin_peer(const struct loom_admin *a, uid_t *ret_uid, pid_t *ret_pid)
{
	if (!a || !a->running || !a->running->has_cred)
		return -ENOENT;
	*ret_uid = a->running->uid;
	*ret_pid = a->running->pid;
	return 0;
}

struct loom_admin *loom_admin_new(struct event_base *base, const char *path, struct loom_err *err)
{
	return loom_admin_new_perm(base, path, 0660, (gid_t)-1, err);
}

struct loom_admin *loom_admin_new_perm(struct event_base *base, const char *path, mode_t mode,
				       gid_t gid, struct loom_err *err)
{
	struct loom_admin *a = NULL;
	struct loom_addr addr;
	int fd = -1, r;

	r = admin_addr(path, &addr, err);
	if (r < 0)
		goto fail;
	if (!base) {
		r = loom_err_set(err, EINVAL, "no event base");
		goto fail;
	}
	a = calloc(1, sizeof(*a));
	if (!a || !(a->path = strdup(path))) {
		r = loom_err_set(err, ENOMEM, "out of memory");
		goto fail;
	}
	a->base = base;
	a->accept_retry = evtimer_new(base, admin_accept_retry_cb, a);
	if (!a->accept_retry) {
		r = loom_err_set(err, ENOMEM, "out of memory");
		goto fail;
	}
	r = loom_admin_register(a, "help", "", "list the commands with their arguments", cmd_help,
				a);
	if (r < 0) {
		r = loom_err_set(err, -r, "out of memory");
		goto fail;
	}
	/* a stale socket file is removed; a live one, or what is not a socket, refused */
	fd = loom_addr_bind("admin socket", &addr, LOOM_ADDR_NONBLOCK, err);
	if (fd < 0) {
		r = fd;
		goto fail;
	}
	/* Nobody can connect before listen(), so mode and group are right before anyone can. */
	if (gid != (gid_t)-1 && chown(path, (uid_t)-1, gid) < 0) {
		r = loom_err_set(err, errno, "cannot give admin socket %s group %u: %s", path,
				 (unsigned)gid, strerror(errno));
		unlink(path);
		goto fail;
	}
	if (chmod(path, mode) < 0) {
		r = loom_err_set(err, errno, "cannot chmod admin socket %s: %s", path,
				 strerror(errno));
		unlink(path);
		goto fail;
	}
	a->listener = evconnlistener_new(base, admin_accept_cb, a,
					 LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd);
	if (!a->listener) {
		r = loom_err_set(err, errno ? errno : ENOMEM, "cannot listen on admin socket %s",
				 path);
		unlink(path);
		goto fail;
	}
	evconnlistener_set_error_cb(a->listener, admin_accept_error_cb);
	return a;
fail:
	if (fd >= 0)
		close(fd);
	if (a) {
		for (size_t i = 0; i < a->n_cmds; i++)
			cmd_done(&a->cmds[i]);
		free(a->cmds);
		if (a->accept_retry)
			event_free(a->accept_retry);
		free(a->path);
		free(a);
	}
	errno = -r;
	return NULL;
}

struct loom_admin *loom_admin_free(struct loom_admin *a)
{
	if (!a)
		return NULL;
	while (a->conns)
		conn_free(a->conns);
	evconnlistener_free(a->listener);
	event_free(a->accept_retry);
	unlink(a->path);
	for (size_t i = 0; i < a->n_cmds; i++)
		cmd_done(&a->cmds[i]);
	free(a->cmds);
	free(a->path);
	free(a);
	return NULL;
}

/* ---- client --------------------------------------------------------------------------- */

static int64_t mono_ms(void)
{
	return (int64_t)(loom_clock_mono_ns() / LOOM_NS_PER_MS);
}

/* Milliseconds left before deadline for poll(): -1 without deadline, 0 when past. */
static int ms_left(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - mono_ms();
	if (left <= 0)
		return 0;
	return left > INT32_MAX ? INT32_MAX : (int)left;
}

/* Waits for events on fd until the deadline: 0, -ETIMEDOUT, or -errno. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		int left = ms_left(deadline);
		int n;

		if (left == 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, left);
		if (n > 0)
			return 0;
		if (n == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

static int client_connect(const char *path, int64_t deadline, struct loom_err *err)
{
	struct loom_addr a;
	int fd, r;

	r = admin_addr(path, &a, err);
	if (r < 0)
		return r;
	/* a full listen backlog (the server is busy) is tried again until the deadline */
	fd = loom_addr_dial("admin socket", &a,
			    deadline < 0 ? UINT64_MAX : (uint64_t)deadline * LOOM_NS_PER_MS,
			    LOOM_ADDR_NONBLOCK, NULL);
	if (fd == -ETIMEDOUT)
		return loom_err_set(err, ETIMEDOUT, "admin socket %s: timed out connecting", path);
	if (fd < 0)
		return loom_err_set(
			err, -fd, "cannot reach admin socket %s: %s%s", path, strerror(-fd),
			fd == -ENOENT || fd == -ECONNREFUSED ? " (is loomd running?)" : "");
	return fd;
}

static int client_send(int fd, const char *path, const char *buf, size_t len, int64_t deadline,
		       struct loom_err *err)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		int r;

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return loom_err_set(err, errno, "admin socket %s: send: %s", path,
					    strerror(errno));
		r = wait_fd(fd, POLLOUT, deadline);
		if (r == -ETIMEDOUT)
			return loom_err_set(err, ETIMEDOUT,
					    "admin socket %s: timed out sending the request", path);
		if (r < 0)
			return loom_err_set(err, -r, "admin socket %s: poll: %s", path,
					    strerror(-r));
	}
	return 0;
}

/* Reads one reply line; returns its length (newline excluded) with *ret_buf malloc'ed. */
static int client_recv_line(int fd, const char *path, int64_t deadline, char **ret_buf,
			    size_t *ret_len, struct loom_err *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0, scanned = 0;

	for (;;) {
		char *nl;
		ssize_t n;
		int r;

		if (cap - len < 4096) {
			size_t ncap = cap ? 2 * cap : 16384;
			char *nbuf;

			if (cap > LOOM_ADMIN_REPLY_MAX)
				return loom_err_set(err, EMSGSIZE,
						    "admin socket %s: reply longer than %u bytes",
						    path, LOOM_ADMIN_REPLY_MAX);
			nbuf = realloc(buf, ncap);
			if (!nbuf)
				return loom_err_set(err, ENOMEM, "out of memory");
			buf = nbuf;
			cap = ncap;
		}
		n = recv(fd, buf + len, cap - len - 1, 0);
		if (n > 0) {
			len += (size_t)n;
			nl = memchr(buf + scanned, '\n', len - scanned);
			if (nl) {
				*nl = '\0';
				*ret_len = (size_t)(nl - buf);
				*ret_buf = TAKE_PTR(buf);
				return 0;
			}
			scanned = len;
			continue;
		}
		if (n == 0)
			return loom_err_set(err, ECONNRESET,
					    "admin socket %s: the server closed the connection "
					    "without replying",
					    path);
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return loom_err_set(err, errno, "admin socket %s: recv: %s", path,
					    strerror(errno));
		r = wait_fd(fd, POLLIN, deadline);
		if (r == -ETIMEDOUT)
			return loom_err_set(err, ETIMEDOUT,
					    "admin socket %s: no reply within the timeout", path);
		if (r < 0)
			return loom_err_set(err, -r, "admin socket %s: poll: %s", path,
					    strerror(-r));
	}
}

/* Builds the request line {"cmd":..,"args":[..]}\n; malloc'ed, NULL when out of memory or not UTF-8. */
static char *request_line(const char *cmd, int argc, const char *const *argv)
{
	json_t *req = json_object(), *args = json_array();
	char *s = NULL, *line = NULL;
	bool ok = req && args;

	for (int i = 0; ok && i < argc; i++)
		ok = json_array_append_new(args, json_string(argv[i])) == 0;
	ok = ok && json_object_set_new(req, "cmd", json_string(cmd)) == 0;
	ok = ok && json_object_set(req, "args", args) == 0;
	if (ok)
		s = json_dumps(req, JSON_COMPACT);
	if (s && asprintf(&line, "%s\n", s) < 0)
		line = NULL;
	free(s);
	json_decref(args);
	json_decref(req);
	return line;
}

int loom_admin_call(const char *path, const char *cmd, int argc, const char *const *argv,
		    int timeout_ms, json_t **ret_result, struct loom_err *err)
{
	int64_t deadline = timeout_ms > 0 ? mono_ms() + timeout_ms : -1;
	_cleanup_free_ char *line = NULL, *reply = NULL;
	_cleanup_close_ int fd = -1;
	json_t *root, *ok, *result, *msg;
	json_error_t jerr;
	size_t reply_len = 0;
	int r;

	if (!cmd || argc < 0 || (argc > 0 && !argv) || !ret_result)
		return loom_err_set(err, EINVAL, "invalid arguments");
	line = request_line(cmd, argc, argv);
	if (!line)
		return loom_err_set(err, EINVAL,
				    "cannot encode the request (arguments not UTF-8?)");
	fd = client_connect(path, deadline, err);
	if (fd < 0)
		return fd;
	r = client_send(fd, path, line, strlen(line), deadline, err);
	if (r < 0)
		return r;
	r = client_recv_line(fd, path, deadline, &reply, &reply_len, err);
	if (r < 0)
		return r;
	root = json_loadb(reply, reply_len, 0, &jerr);
	if (!root)
		return loom_err_set(err, EPROTO, "admin socket %s: malformed reply: %s", path,
				    jerr.text);
	ok = json_object_get(root, "ok");
	if (!json_is_boolean(ok)) {
		json_decref(root);
		return loom_err_set(err, EPROTO, "admin socket %s: malformed reply: no \"ok\"",
				    path);
	}
	if (json_is_false(ok)) {
		msg = json_object_get(root, "error");
		r = loom_err_set(err, EINVAL, "%s",
				 json_is_string(msg) ? json_string_value(msg) : "unknown error");
		json_decref(root);
		return r;
	}
	result = json_object_get(root, "result");
	*ret_result = result ? json_incref(result) : json_null();
	json_decref(root);
	return 0;
}
