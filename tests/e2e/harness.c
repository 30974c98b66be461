/* SPDX-License-Identifier: BSD-3-Clause */
#include "tests/e2e/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/addr.h"
#include "common/admin.h"
#include "common/clock.h"

uint64_t h_mono_ms(void)
{
	return loom_clock_mono_ns() / LOOM_NS_PER_MS;
}

void h_sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

void h_print_log(const char *path)
{
	char buf[16384];
	size_t n;
	long size;
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "--- %s: %s\n", path, strerror(errno));
		return;
	}
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > (long)sizeof(buf) - 1)
		fseek(f, size - (long)sizeof(buf) + 1, SEEK_SET);
	else
		fseek(f, 0, SEEK_SET);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	fprintf(stderr, "--- %s:\n%s--- end of %s\n", path, buf, path);
}

bool h_log_has_sanitizer_report(const char *path)
{
	static const char *const needles[] = {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
					      "WARNING: ThreadSanitizer", "runtime error:"};
	char line[4096];
	bool found = false;
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "cannot read %s for sanitizer reports: %s\n", path,
			strerror(errno));
		return true;
	}
	while (!found && fgets(line, sizeof(line), f))
		for (size_t i = 0; i < sizeof(needles) / sizeof(needles[0]); i++)
			if (strstr(line, needles[i])) {
				fprintf(stderr, "sanitizer report in %s: %s", path, line);
				found = true;
				break;
			}
	fclose(f);
	return found;
}

int h_check_exit(const char *what, int status, int want, const char *log)
{
	bool bad = true;

	if (status == -1)
		fprintf(stderr, "%s did not end in time and was killed\n", what);
	else if (WIFSIGNALED(status))
		fprintf(stderr, "%s was killed by signal %d (%s)\n", what, WTERMSIG(status),
			strsignal(WTERMSIG(status)));
	else if (!WIFEXITED(status))
		fprintf(stderr, "%s did not exit (wait status 0x%x)\n", what, (unsigned)status);
	else if (WEXITSTATUS(status) != want)
		fprintf(stderr, "%s exited %d, expected %d\n", what, WEXITSTATUS(status), want);
	else
		bad = false;
	if (log && h_log_has_sanitizer_report(log))
		bad = true;
	if (bad && log)
		h_print_log(log);
	return bad ? -1 : 0;
}

bool h_cpus_usable(int n)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return false;
	for (int i = 0; i < n; i++)
		if (!CPU_ISSET(i, &set))
			return false;
	return true;
}

int h_loomd_prepare(struct h_loomd *h)
{
	memset(h, 0, sizeof(*h));
	snprintf(h->dir, sizeof(h->dir), "/tmp/loom-e2e-XXXXXX");
	if (!mkdtemp(h->dir))
		return -errno;
	snprintf(h->sock, sizeof(h->sock), "%s/loomd.sock", h->dir);
	snprintf(h->admin, sizeof(h->admin), "%s/admin.sock", h->dir);
	snprintf(h->journal, sizeof(h->journal), "%s/journal.db", h->dir);
	snprintf(h->log, sizeof(h->log), "%s/loomd.log", h->dir);
	return 0;
}

int h_loomd_start(struct h_loomd *h, const char *const *extra)
{
	const char *loomd = getenv("LOOMD");
	char *argv[64];
	char o_sock[340], o_admin[340], o_journal[340];
	int n = 0;
	uint64_t deadline;

	if (!loomd)
		loomd = "controlplane/loomd/loomd";
	snprintf(o_sock, sizeof(o_sock), "listen_unix=%s", h->sock);
	snprintf(o_admin, sizeof(o_admin), "admin_socket=%s", h->admin);
	snprintf(o_journal, sizeof(o_journal), "journal=%s", h->journal);
	argv[n++] = (char *)loomd;
	argv[n++] = (char *)"-f";
	argv[n++] = (char *)"-c";
	argv[n++] = (char *)"/dev/null";
	argv[n++] = (char *)"-o";
	argv[n++] = o_sock;
	argv[n++] = (char *)"-o";
	argv[n++] = o_admin;
	argv[n++] = (char *)"-o";
	argv[n++] = o_journal;
	argv[n++] = (char *)"-o";
	argv[n++] = (char *)"listen_tcp=";
	argv[n++] = (char *)"-o";
	argv[n++] = (char *)"metrics=";
	argv[n++] = (char *)"-o";
	argv[n++] = (char *)"journal_sync=normal";
	for (int i = 0; extra && extra[i] && n < 60; i++) {
		argv[n++] = (char *)"-o";
		argv[n++] = (char *)extra[i];
	}
	argv[n] = NULL;
	h->pid = fork();
	if (h->pid < 0)
		return -errno;
	if (h->pid == 0) {
		int fd = open(h->log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		/* a failed assertion jumps past the cleanup: loomd dies with its test */
		prctl(PR_SET_PDEATHSIG, SIGKILL);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(loomd, argv);
		_exit(127);
	}
	deadline = h_mono_ms() + 10000;
	while (h_mono_ms() < deadline) {
		json_t *res = NULL;
		struct loom_err err;
		int status;

		if (waitpid(h->pid, &status, WNOHANG) == h->pid) {
			h->pid = 0;
			break;
		}
		if (loom_admin_call(h->admin, "stats", 0, NULL, 1000, &res, &err) == 0) {
			json_decref(res);
			return 0;
		}
		h_sleep_ms(20);
	}
	h_print_log(h->log);
	return -ETIMEDOUT;
}

int h_wait(pid_t pid, uint64_t deadline_ms)
{
	int status;

	while (h_mono_ms() < deadline_ms) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		h_sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

int h_loomd_stop(struct h_loomd *h, int sig)
{
	uint64_t deadline = h_mono_ms() + 10000;
	int status = -1;

	if (h->pid <= 0)
		return -1;
	kill(h->pid, sig);
	while (h_mono_ms() < deadline) {
		if (waitpid(h->pid, &status, WNOHANG) == h->pid) {
			h->pid = 0;
			return status;
		}
		h_sleep_ms(10);
	}
	kill(h->pid, SIGKILL);
	waitpid(h->pid, &status, 0);
	h->pid = 0;
	return -1;
}

int h_loomd_stop_clean(struct h_loomd *h)
{
	if (h->pid <= 0) {
		fprintf(stderr, "loomd is not running (it ended before it was stopped)\n");
		h_print_log(h->log);
		return -1;
	}
	return h_check_exit("loomd", h_loomd_stop(h, SIGTERM), 0, h->log);
}

void h_loomd_cleanup(struct h_loomd *h)
{
	char cmd[400];

	if (h->pid > 0)
		h_loomd_stop(h, SIGKILL);
	if (!h->dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", h->dir);
	if (system(cmd) < 0)
		perror("system");
}

int h_loomd_metrics_port(const struct h_loomd *h)
{
	static const char needle[] = "metrics on http://";
	char line[1024];
	int port = -1;
	FILE *f = fopen(h->log, "r");

	if (!f)
		return -1;
	while (port < 0 && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, needle), *end, *colon;

		if (!p)
			continue;
		p += strlen(needle);
		end = strchr(p, '/');
		if (!end)
			continue;
		*end = '\0';
		colon = strrchr(p, ':');
		if (colon)
			port = atoi(colon + 1);
	}
	fclose(f);
	return port > 0 && port < 65536 ? port : -1;
}

int h_http_get(uint16_t port, const char *path, char *body, size_t size)
{
	struct loom_addr a = {.kind = LOOM_ADDR_TCP, .host = "127.0.0.1", .port = port};
	uint64_t deadline = h_mono_ms() + H_TIMEOUT_MS;
	size_t cap = 1 << 16, n = 0;
	char *buf = NULL, *hdr_end, req[1200];
	struct loom_err err;
	int fd, code = -1, len;

	body[0] = '\0';
	len = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1:%u\r\n\r\n", path,
		       (unsigned)port);
	if (len < 0 || (size_t)len >= sizeof(req)) {
		fprintf(stderr, "GET %s: the path is too long\n", path);
		return -1;
	}
	fd = loom_addr_dial("http", &a, deadline * LOOM_NS_PER_MS, 0, &err);
	if (fd < 0) {
		fprintf(stderr, "GET %s: %s\n", path, loom_err_str(&err));
		return -1;
	}
	if (wire_write_all(fd, req, (size_t)len, H_TIMEOUT_MS) < 0) {
		fprintf(stderr, "GET %s on port %u: cannot send the request\n", path,
			(unsigned)port);
		goto out;
	}
	/* HTTP/1.0: the server closes the connection after the body */
	buf = malloc(cap);
	while (buf) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint64_t now = h_mono_ms();
		ssize_t got;

		if (now >= deadline || poll(&p, 1, (int)(deadline - now)) != 1) {
			fprintf(stderr, "GET %s on port %u: no whole answer in %d ms\n", path,
				(unsigned)port, H_TIMEOUT_MS);
			goto out;
		}
		if (n + 1 == cap) {
			char *more = realloc(buf, cap * 2);

			if (!more)
				break;
			buf = more;
			cap *= 2;
		}
		got = read(fd, buf + n, cap - 1 - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	if (!buf) {
		fprintf(stderr, "GET %s: out of memory\n", path);
		goto out;
	}
	buf[n] = '\0';
	hdr_end = strstr(buf, "\r\n\r\n");
	if (strncmp(buf, "HTTP/1.", 7) != 0 || strlen(buf) < 12 || !hdr_end) {
		fprintf(stderr, "GET %s on port %u: not an HTTP answer: %.200s\n", path,
			(unsigned)port, buf);
		goto out;
	}
	code = atoi(buf + 9);
	snprintf(body, size, "%s", hdr_end + 4);
out:
	free(buf);
	close(fd);
	return code;
}

json_t *h_admin(struct h_loomd *h, const char *cmd, int argc, const char *const *argv)
{
	json_t *res = NULL;
	struct loom_err err;

	if (loom_admin_call(h->admin, cmd, argc, argv, H_TIMEOUT_MS, &res, &err) < 0) {
		fprintf(stderr, "admin %s: %s\n", cmd, loom_err_str(&err));
		return NULL;
	}
	return res;
}

long long h_admin_int(struct h_loomd *h, const char *cmd, const char *key)
{
	json_t *res = h_admin(h, cmd, 0, NULL);
	long long v = res ? json_integer_value(json_object_get(res, key)) : -1;

	json_decref(res);
	return v;
}

int h_connect(const char *path)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		close(fd);
		return -ENAMETOOLONG;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

Loom__Envelope *h_call(int fd, Loom__Envelope *env)
{
	uint64_t deadline = h_mono_ms() + H_TIMEOUT_MS;

	if (wire_send(fd, env, WIRE_MAX_FRAME_DEFAULT, H_TIMEOUT_MS) < 0)
		return NULL;
	while (h_mono_ms() < deadline) {
		Loom__Envelope *rep = NULL;

		if (wire_recv(fd, WIRE_MAX_FRAME_DEFAULT, H_TIMEOUT_MS, &rep) < 0)
			return NULL;
		if (rep->seq == env->seq && rep->body_case != LOOM__ENVELOPE__BODY_TABLE)
			return rep;
		wire_free(rep);
	}
	return NULL;
}

int h_hello(int fd, Loom__Role role, uint32_t host, uint32_t vmin, uint32_t vmax)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT, *rep;
	Loom__Hello h = LOOM__HELLO__INIT;
	int code;

	h.version_min = vmin;
	h.version_max = vmax;
	h.role = role;
	h.name = (char *)"e2e";
	h.host_id = host;
	h.classes = 8;
	env.seq = 1;
	env.body_case = LOOM__ENVELOPE__BODY_HELLO;
	env.hello = &h;
	rep = h_call(fd, &env);
	if (!rep || rep->body_case != LOOM__ENVELOPE__BODY_HELLO_REPLY) {
		wire_free(rep);
		return -1;
	}
	code = rep->hello_reply->error ? (int)rep->hello_reply->error->code : 0;
	wire_free(rep);
	return code;
}

int h_agent_coflow_class(const struct h_agent *a, uint64_t id)
{
	for (uint32_t i = 0; i < a->ncoflows; i++)
		if (a->coflow_id[i] == id)
			return (int)a->coflow_class[i];
	return -1;
}

/* Applies one table message to a's copy: a full one replaces it, a delta removes, then adds. */
static void h_agent_apply(struct h_agent *a, const Loom__PriorityTable *t)
{
	a->tables++;
	if (t->full) {
		a->fulls++;
		a->nflows = a->ncoflows = 0;
	} else if (t->base_version != a->version) {
		a->gaps++;
	}
	a->version = t->version;
	for (size_t i = 0; i < t->n_removed_flows; i++) {
		struct wire_tuple wt;

		if (wire_tuple_from_pb(t->removed_flows[i], &wt) < 0)
			continue;
		for (uint32_t k = 0; k < a->nflows; k++)
			if (wire_tuple_eq(&a->flow_tuple[k], &wt)) {
				a->flow_tuple[k] = a->flow_tuple[--a->nflows];
				a->flow_coflow[k] = a->flow_coflow[a->nflows];
				break;
			}
	}
	for (size_t i = 0; i < t->n_removed_coflows; i++)
		for (uint32_t k = 0; k < a->ncoflows; k++)
			if (a->coflow_id[k] == t->removed_coflows[i]) {
				a->coflow_id[k] = a->coflow_id[--a->ncoflows];
				a->coflow_class[k] = a->coflow_class[a->ncoflows];
				break;
			}
	for (size_t i = 0; i < t->n_flows; i++) {
		struct wire_tuple wt;
		uint32_t k;

		if (wire_tuple_from_pb(t->flows[i]->tuple, &wt) < 0)
			continue;
		for (k = 0; k < a->nflows && !wire_tuple_eq(&a->flow_tuple[k], &wt); k++)
			;
		if (k == a->nflows && a->nflows < H_MAX_ENTRIES)
			a->flow_tuple[a->nflows++] = wt;
		if (k < H_MAX_ENTRIES)
			a->flow_coflow[k] = t->flows[i]->coflow_id;
	}
	for (size_t i = 0; i < t->n_classes; i++) {
		uint32_t k;

		for (k = 0; k < a->ncoflows && a->coflow_id[k] != t->classes[i]->coflow_id; k++)
			;
		if (k == a->ncoflows && a->ncoflows < H_MAX_ENTRIES)
			a->coflow_id[a->ncoflows++] = t->classes[i]->coflow_id;
		if (k < H_MAX_ENTRIES)
			a->coflow_class[k] = t->classes[i]->class_;
	}
}

int h_agent_connect(struct h_agent *a, const char *sock, uint32_t host)
{
	memset(a, 0, sizeof(*a));
	a->host = host;
	a->seq = 100;
	a->fd = h_connect(sock);
	if (a->fd < 0)
		return -1;
	return h_hello(a->fd, LOOM__ROLE__AGENT, host, WIRE_VERSION_MIN, WIRE_VERSION_MAX) == 0 ?
		       0 :
		       -1;
}

int h_agent_sync(struct h_agent *a)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__Heartbeat hb = LOOM__HEARTBEAT__INIT;
	uint64_t deadline = h_mono_ms() + H_TIMEOUT_MS;

	env.seq = ++a->seq;
	env.body_case = LOOM__ENVELOPE__BODY_HEARTBEAT;
	env.heartbeat = &hb;
	if (wire_send(a->fd, &env, WIRE_MAX_FRAME_DEFAULT, H_TIMEOUT_MS) < 0)
		return -1;
	while (h_mono_ms() < deadline) {
		Loom__Envelope *rep = NULL;

		if (wire_recv(a->fd, WIRE_MAX_FRAME_DEFAULT, H_TIMEOUT_MS, &rep) < 0)
			return -1;
		if (rep->body_case == LOOM__ENVELOPE__BODY_TABLE)
			h_agent_apply(a, rep->table);
		if (rep->body_case == LOOM__ENVELOPE__BODY_HEARTBEAT && rep->seq == a->seq) {
			wire_free(rep);
			return 0;
		}
		wire_free(rep);
	}
	return -1;
}

void h_tuple(uint32_t i, struct wire_tuple *t)
{
	memset(t, 0, sizeof(*t));
	t->family = 4;
	t->protocol = 6;
	t->src[0] = 10;
	t->src[1] = (uint8_t)(i >> 16);
	t->src[2] = (uint8_t)(i >> 8);
	t->src[3] = (uint8_t)i;
	t->dst[0] = 10;
	t->dst[1] = 255;
	t->dst[2] = (uint8_t)(i >> 8);
	t->dst[3] = (uint8_t)i;
	t->src_port = (uint16_t)(10000 + i % 50000);
	t->dst_port = 7000;
}

int h_agent_stats(struct h_agent *a, const struct wire_tuple *t, uint64_t bytes, bool done)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT;
	Loom__FlowStats fs = LOOM__FLOW_STATS__INIT;
	Loom__FlowStat st = LOOM__FLOW_STAT__INIT, *stp = &st;
	Loom__FiveTuple pt;

	wire_tuple_to_pb(t, &pt);
	st.tuple = &pt;
	st.bytes_sent = bytes;
	st.done = done;
	fs.n_flows = 1;
	fs.flows = &stp;
	env.seq = ++a->seq;
	env.body_case = LOOM__ENVELOPE__BODY_FLOW_STATS;
	env.flow_stats = &fs;
	return wire_send(a->fd, &env, WIRE_MAX_FRAME_DEFAULT, H_TIMEOUT_MS) < 0 ? -1 : 0;
}
