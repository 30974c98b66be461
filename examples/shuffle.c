/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom-example-shuffle: a two-stage shuffle between processes on loopback,
 * registered with loomd through libloom. It shows what a framework does:
 *
 *   1. the driver connects and registers the job's DAG:
 *        coflow JOB*10+1 "shuffle" (M mappers -> R reducers, M*R flows)
 *        -> coflow JOB*10+2 "collect" (R reducers -> 1 collector, R flows)
 *   2. it forks M mappers, R reducers and a collector; process i pretends to
 *      be host i % HOSTS of the controller's fabric (mappers are processes
 *      0..M-1, reducers M..M+R-1, the collector M+R);
 *   3. every sender opens its TCP connections on 127.0.0.1, announces each
 *      with loom_client_socket_announce() and explicit host ids, and sends
 *      BYTES on each; receivers check that every flow brought BYTES;
 *   4. when all receivers of a stage have everything, the driver marks the
 *      stage's coflow done (the reducers start the second stage only then);
 *   5. job done, unregister, a summary on stdout.
 *
 * Every wait is bounded by --timeout-ms; on any failure the driver kills its
 * children, unregisters the job and exits 1 (2 for bad usage).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "controlplane/client/loom.h"

#define PROG        "loom-example-shuffle"
#define MAX_PROCS   256 /* mappers, reducers: each holds one socket per peer */
#define CHUNK_BYTES (64 * 1024)
#define MAX_BYTES   (1ULL << 40)

enum role {
	ROLE_MAPPER,
	ROLE_REDUCER_IN,
	ROLE_REDUCER_OUT,
	ROLE_COLLECTOR
};

static const char *const role_names[] = {"mapper", "reducer", "reducer", "collector"};

/* What a child tells the driver, in one atomic pipe write. */
struct report {
	uint32_t role;
	uint32_t index;
	int32_t status; /* 0 or -errno */
	uint32_t pad;
	uint64_t bytes; /* moved by this process in this stage */
};

struct opts {
	unsigned mappers, reducers, hosts;
	uint64_t bytes;
	uint64_t job_id;
	const char *controller;
	int timeout_ms;
};

/* Shared with the children (copied by fork). */
static struct opts O = {
	.mappers = 4,
	.reducers = 4,
	.hosts = 4,
	.bytes = 1 << 20,
	.timeout_ms = 60000,
};
static uint16_t reducer_port[MAX_PROCS];
static uint16_t collector_port;
static int64_t deadline_ms;
static pid_t driver_pid;

/* Private monotonic clock: the example uses libloom's public API (loom.h) only, not common/. */
static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int left_ms(void)
{
	int64_t d = deadline_ms - now_ms();

	return d <= 0 ? 0 : d > INT_MAX ? INT_MAX : (int)d;
}

__attribute__((format(printf, 1, 2))) static void say_err(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n = snprintf(line, sizeof(line), "%s: ", PROG);

	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	n = (int)strlen(line);
	line[n++] = '\n';
	/* One write: children and the driver share stderr. */
	(void)!write(STDERR_FILENO, line, (size_t)n);
}

static uint64_t coflow_shuffle(void)
{
	return O.job_id * 10 + 1;
}

static uint64_t coflow_collect(void)
{
	return O.job_id * 10 + 2;
}

static uint32_t host_of_process(unsigned i)
{
	return i % O.hosts;
}

/* ---- sockets ------------------------------------------------------------------------ */

/* A listener on 127.0.0.1 with an ephemeral port; fd or -errno. */
static int listen_loopback(uint16_t *ret_port)
{
	struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(in);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), r;

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&in, sizeof(in)) < 0 || listen(fd, MAX_PROCS) < 0 ||
	    getsockname(fd, (struct sockaddr *)&in, &len) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	*ret_port = ntohs(in.sin_port);
	return fd;
}

/* A connection to 127.0.0.1:port before the deadline; fd (non-blocking) or -errno. */
static int connect_loopback(uint16_t port)
{
	struct sockaddr_in in = {.sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), err = 0, r;
	socklen_t elen = sizeof(err);
	struct pollfd p;

	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&in, sizeof(in)) == 0)
		return fd;
	if (errno != EINPROGRESS) {
		r = -errno;
		goto fail;
	}
	p = (struct pollfd){.fd = fd, .events = POLLOUT};
	do {
		r = poll(&p, 1, left_ms());
	} while (r < 0 && errno == EINTR);
	if (r <= 0) {
		r = r == 0 ? -ETIMEDOUT : -errno;
		goto fail;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err) {
		r = err ? -err : -errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return r;
}

/*
 * Sends O.bytes on each of the n non-blocking sockets at once, then closes
 * them. Returns 0 or -errno.
 */
static int send_flows(int *fds, unsigned n)
{
	static uint8_t chunk[CHUNK_BYTES];
	struct pollfd p[MAX_PROCS];
	uint64_t left[MAX_PROCS];
	unsigned open = n;
	int r = 0;

	memset(chunk, 0x5a, sizeof(chunk));
	for (unsigned i = 0; i < n; i++) {
		left[i] = O.bytes;
		p[i] = (struct pollfd){.fd = fds[i], .events = POLLOUT};
	}
	while (open) {
		int k = poll(p, n, left_ms());

		if (k == 0) {
			r = -ETIMEDOUT;
			break;
		}
		if (k < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		for (unsigned i = 0; i < n; i++) {
			ssize_t w;

			if (p[i].fd < 0 || !p[i].revents)
				continue;
			w = send(p[i].fd, chunk, left[i] < sizeof(chunk) ? left[i] : sizeof(chunk),
				 MSG_NOSIGNAL);
			if (w < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (w < 0) {
				r = -errno;
				goto out;
			}
			left[i] -= (uint64_t)w;
			if (left[i] == 0) {
				p[i].fd = -1;
				open--;
			}
		}
	}
out:
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
	return r;
}

/*
 * Accepts n connections on lfd and reads each to its end; every one must
 * bring exactly O.bytes. Returns 0 or -errno (-EPROTO: a flow of the wrong
 * size).
 */
static int receive_flows(int lfd, unsigned n, const char *who)
{
	static uint8_t buf[CHUNK_BYTES];
	struct pollfd p[MAX_PROCS + 1];
	uint64_t got[MAX_PROCS + 1];
	unsigned accepted = 0, ended = 0;
	int r = 0;

	p[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
	while (ended < n) {
		int k = poll(p, accepted + 1, left_ms());

		if (k == 0) {
			r = -ETIMEDOUT;
			break;
		}
		if (k < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		if ((p[0].revents & POLLIN) && accepted < n) {
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

			if (fd >= 0) {
				accepted++;
				p[accepted] = (struct pollfd){.fd = fd, .events = POLLIN};
				got[accepted] = 0;
				if (accepted == n)
					p[0].fd = -1;
			} else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
				r = -errno;
				break;
			}
		}
		for (unsigned i = 1; i <= accepted; i++) {
			ssize_t m;

			if (p[i].fd < 0 || !p[i].revents)
				continue;
			m = read(p[i].fd, buf, sizeof(buf));
			if (m < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (m < 0) {
				r = -errno;
				goto out;
			}
			if (m > 0) {
				got[i] += (uint64_t)m;
				continue;
			}
			if (got[i] != O.bytes) {
				say_err("a flow ended after %" PRIu64 " of %" PRIu64 " bytes",
					got[i], O.bytes);
				r = -EPROTO;
				goto out;
			}
			close(p[i].fd);
			p[i].fd = -1;
			ended++;
		}
	}
out:
	for (unsigned i = 1; i <= accepted; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
	return r;
}

/* ---- the children ------------------------------------------------------------------- */

static void report(int fd, enum role role, unsigned index, int status, uint64_t bytes)
{
	struct report rep = {.role = role, .index = index, .status = status, .bytes = bytes};

	(void)!write(fd, &rep, sizeof(rep));
}

/* The child's own client; NULL with *ret_err (-errno) after saying why. */
static struct loom_client *child_client(const char *role, unsigned index, int *ret_err)
{
	struct loom_client_options o = {0};
	struct loom_client *c;
	char name[64];

	snprintf(name, sizeof(name), "shuffle-%" PRIu64 "-%s-%u", O.job_id, role, index);
	o.name = name;
	c = loom_client_connect(O.controller, &o);
	if (!c) {
		*ret_err = -errno;
		say_err("%s %u: %s", role, index, loom_client_strerror());
	}
	return c;
}

/*
 * Opens one connection per destination port, announcing each for coflow
 * from host src, then sends O.bytes on all. Returns 0 or -errno.
 */
static int send_stage(struct loom_client *c, const char *who, uint64_t coflow, uint32_t src,
		      const uint16_t *ports, const uint32_t *dst_hosts, unsigned n)
{
	int fds[MAX_PROCS];
	unsigned opened = 0;
	int r = 0;

	for (; opened < n; opened++) {
		struct loom_client_hosts h = {.src_host = src, .dst_host = dst_hosts[opened]};
		int fd = connect_loopback(ports[opened]);

		if (fd < 0) {
			r = fd;
			say_err("%s: connect 127.0.0.1:%u: %s", who, ports[opened], strerror(-r));
			break;
		}
		fds[opened] = fd;
		/* Announced before the first byte, so the flow is scheduled from its start. */
		r = loom_client_socket_announce(c, fd, coflow, &h, O.bytes);
		if (r < 0) {
			say_err("%s: %s", who, loom_client_strerror());
			close(fd);
			break;
		}
	}
	if (r < 0) {
		for (unsigned j = 0; j < opened; j++)
			close(fds[j]);
		return r;
	}
	r = send_flows(fds, n);
	if (r < 0)
		say_err("%s: sending: %s", who, strerror(-r));
	return r;
}

static int mapper_main(unsigned i, int rep_fd)
{
	uint32_t dst[MAX_PROCS];
	char who[32];
	int r = 0;
	struct loom_client *c = child_client("mapper", i, &r);

	snprintf(who, sizeof(who), "mapper %u", i);
	if (!c) {
		report(rep_fd, ROLE_MAPPER, i, r, 0);
		return 1;
	}
	for (unsigned j = 0; j < O.reducers; j++)
		dst[j] = host_of_process(O.mappers + j);
	r = send_stage(c, who, coflow_shuffle(), host_of_process(i), reducer_port, dst, O.reducers);
	report(rep_fd, ROLE_MAPPER, i, r, r < 0 ? 0 : O.bytes * O.reducers);
	loom_client_free(c);
	return r < 0;
}

static int reducer_main(unsigned j, int lfd, int go_fd, int rep_fd)
{
	uint32_t dst = host_of_process(O.mappers + O.reducers);
	struct pollfd p = {.fd = go_fd, .events = POLLIN};
	char who[32], go;
	int r = 0;
	struct loom_client *c = child_client("reducer", j, &r);

	snprintf(who, sizeof(who), "reducer %u", j);
	if (!c) {
		report(rep_fd, ROLE_REDUCER_IN, j, r, 0);
		return 1;
	}
	r = receive_flows(lfd, O.mappers, who);
	close(lfd);
	if (r < 0 && r != -EPROTO)
		say_err("%s: receiving: %s", who, strerror(-r));
	report(rep_fd, ROLE_REDUCER_IN, j, r, r < 0 ? 0 : O.bytes * O.mappers);
	if (r < 0)
		goto out;
	/* The second stage starts when the driver has marked the shuffle done. */
	do {
		r = poll(&p, 1, left_ms());
	} while (r < 0 && errno == EINTR);
	if (r <= 0 || read(go_fd, &go, 1) != 1) {
		/* Timed out, or the driver gave up (the pipe closed). */
		r = r == 0 ? -ETIMEDOUT : -ECANCELED;
		if (r == -ETIMEDOUT)
			say_err("%s: timed out waiting for the second stage", who);
	} else {
		r = send_stage(c, who, coflow_collect(), host_of_process(O.mappers + j),
			       &collector_port, &dst, 1);
	}
	report(rep_fd, ROLE_REDUCER_OUT, j, r, r < 0 ? 0 : O.bytes);
out:
	loom_client_free(c);
	return r < 0;
}

static int collector_main(int lfd, int rep_fd)
{
	int r = receive_flows(lfd, O.reducers, "collector");

	if (r < 0 && r != -EPROTO)
		say_err("collector: receiving: %s", strerror(-r));
	report(rep_fd, ROLE_COLLECTOR, 0, r, r < 0 ? 0 : O.bytes * O.reducers);
	return r < 0;
}

/* ---- the driver --------------------------------------------------------------------- */

struct run {
	struct loom_client *c;
	pid_t pids[2 * MAX_PROCS + 1];
	unsigned n_pids;
	int rep_fd; /* read end */
	bool registered;
};

/* Waits for `want` reports of the given roles; 0, or -errno after saying why. */
static int wait_reports(struct run *run, const char *stage, unsigned want, uint32_t role_a,
			uint32_t role_b)
{
	unsigned got = 0;

	while (got < want) {
		struct pollfd p = {.fd = run->rep_fd, .events = POLLIN};
		struct report rep;
		ssize_t n;
		int r = poll(&p, 1, left_ms());

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			say_err("%s: timed out after %d ms (%u of %u processes finished)", stage,
				O.timeout_ms, got, want);
			return -ETIMEDOUT;
		}
		n = read(run->rep_fd, &rep, sizeof(rep));
		if (n == 0) {
			say_err("%s: the workers exited before finishing", stage);
			return -ECHILD;
		}
		if (n != (ssize_t)sizeof(rep)) {
			if (n < 0 && errno == EINTR)
				continue;
			say_err("%s: reading reports: %s", stage,
				n < 0 ? strerror(errno) : "short");
			return n < 0 ? -errno : -EIO;
		}
		if (rep.status < 0) {
			say_err("%s: %s %u failed: %s", stage, role_names[rep.role], rep.index,
				strerror(-rep.status));
			return rep.status;
		}
		if (rep.role == role_a || rep.role == role_b)
			got++;
	}
	return 0;
}

/* Kills and reaps the children still running (failure path). */
static void kill_children(struct run *run)
{
	for (unsigned i = 0; i < run->n_pids; i++)
		if (run->pids[i] > 0)
			kill(run->pids[i], SIGKILL);
	for (unsigned i = 0; i < run->n_pids; i++)
		if (run->pids[i] > 0)
			waitpid(run->pids[i], NULL, 0);
	run->n_pids = 0;
}

/* Reaps every child before the deadline; 0 when all exited with 0. */
static int reap_children(struct run *run)
{
	unsigned left = run->n_pids;
	int bad = 0;

	while (left) {
		for (unsigned i = 0; i < run->n_pids; i++) {
			int st;

			if (run->pids[i] <= 0 ||
			    waitpid(run->pids[i], &st, WNOHANG) != run->pids[i])
				continue;
			run->pids[i] = 0;
			left--;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				bad++;
		}
		if (!left)
			break;
		if (!left_ms()) {
			say_err("%u worker processes did not exit in time", left);
			kill_children(run);
			return -ETIMEDOUT;
		}
		nanosleep(&(struct timespec){.tv_nsec = 5 * 1000000}, NULL);
	}
	run->n_pids = 0;
	if (bad) {
		say_err("%d worker processes failed", bad);
		return -ECHILD;
	}
	return 0;
}

static int register_job(struct run *run)
{
	struct loom_client_coflow cfs[2] = {
		{.id = coflow_shuffle(), .expected_flows = O.mappers * O.reducers},
		{.id = coflow_collect(), .expected_flows = O.reducers},
	};
	struct loom_client_edge edge = {.parent = cfs[0].id, .child = cfs[1].id};
	struct loom_client_job job = {.id = O.job_id,
				      .weight = 1,
				      .name = "example-shuffle",
				      .coflows = cfs,
				      .n_coflows = 2,
				      .edges = &edge,
				      .n_edges = 1};
	int r = loom_client_job_register(run->c, &job);

	if (r < 0)
		say_err("registering job %" PRIu64 ": %s", O.job_id, loom_client_strerror());
	else
		run->registered = true;
	return r;
}

/* Forks the child of a role (ROLE_REDUCER_IN: a reducer); its pid, or -errno. */
static pid_t spawn(struct run *run, enum role role, unsigned index, const int *lfds, int lfd_coll,
		   int go[2], int rep[2])
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		run->pids[run->n_pids++] = pid;
		return pid;
	}
	/* The child: gone with the driver, whatever happens to it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != driver_pid)
		_exit(1);
	/* Keep only what this role uses. */
	close(rep[0]);
	close(go[1]);
	for (unsigned j = 0; j < O.reducers; j++)
		if (!(role == ROLE_REDUCER_IN && j == index))
			close(lfds[j]);
	if (role != ROLE_COLLECTOR)
		close(lfd_coll);
	if (role != ROLE_REDUCER_IN)
		close(go[0]);
	switch (role) {
	case ROLE_MAPPER:
		_exit(mapper_main(index, rep[1]));
	case ROLE_REDUCER_IN:
		_exit(reducer_main(index, lfds[index], go[0], rep[1]));
	default:
		_exit(collector_main(lfd_coll, rep[1]));
	}
}

static double secs(int64_t ms)
{
	return (double)ms / 1000.0;
}

static int run_driver(void)
{
	struct run run = {.rep_fd = -1};
	int lfds[MAX_PROCS], lfd_coll = -1, go[2] = {-1, -1}, rep[2] = {-1, -1};
	unsigned n_l = 0;
	int64_t t0, t1, t2;
	int r;
	char gobuf[MAX_PROCS];

	run.c = loom_client_connect(O.controller, &(struct loom_client_options){.name = "shuffle"});
	if (!run.c) {
		say_err("%s", loom_client_strerror());
		return 1;
	}
	r = register_job(&run);
	if (r < 0)
		goto fail;

	for (n_l = 0; n_l < O.reducers; n_l++) {
		lfds[n_l] = listen_loopback(&reducer_port[n_l]);
		if (lfds[n_l] < 0) {
			r = lfds[n_l];
			say_err("listening on 127.0.0.1: %s", strerror(-r));
			goto fail;
		}
	}
	lfd_coll = listen_loopback(&collector_port);
	if (lfd_coll < 0 || pipe2(go, O_CLOEXEC) < 0 || pipe2(rep, O_CLOEXEC) < 0) {
		r = lfd_coll < 0 ? lfd_coll : -errno;
		say_err("setting up: %s", strerror(-r));
		goto fail;
	}

	t0 = now_ms();
	if ((r = spawn(&run, ROLE_COLLECTOR, 0, lfds, lfd_coll, go, rep)) < 0)
		goto fail_spawn;
	for (unsigned j = 0; j < O.reducers; j++)
		if ((r = spawn(&run, ROLE_REDUCER_IN, j, lfds, lfd_coll, go, rep)) < 0)
			goto fail_spawn;
	for (unsigned i = 0; i < O.mappers; i++)
		if ((r = spawn(&run, ROLE_MAPPER, i, lfds, lfd_coll, go, rep)) < 0)
			goto fail_spawn;
	/* The children hold the listeners and the pipe ends they use. */
	for (unsigned j = 0; j < n_l; j++)
		close(lfds[j]);
	n_l = 0;
	close(lfd_coll);
	lfd_coll = -1;
	close(go[0]);
	close(rep[1]);
	go[0] = rep[1] = -1;
	run.rep_fd = rep[0];

	/* Stage 1: every mapper sent, every reducer has all its input. */
	r = wait_reports(&run, "shuffle", O.mappers + O.reducers, ROLE_MAPPER, ROLE_REDUCER_IN);
	if (r < 0)
		goto fail;
	r = loom_client_coflow_done(run.c, coflow_shuffle());
	if (r < 0) {
		say_err("marking coflow %" PRIu64 " done: %s", coflow_shuffle(),
			loom_client_strerror());
		goto fail;
	}
	t1 = now_ms();
	memset(gobuf, 'g', sizeof(gobuf));
	if (write(go[1], gobuf, O.reducers) != (ssize_t)O.reducers) {
		r = -errno;
		say_err("starting the second stage: %s", strerror(errno));
		goto fail;
	}

	/* Stage 2: every reducer sent its output, the collector has it all. */
	r = wait_reports(&run, "collect", O.reducers + 1, ROLE_REDUCER_OUT, ROLE_COLLECTOR);
	if (r < 0)
		goto fail;
	r = loom_client_coflow_done(run.c, coflow_collect());
	if (r < 0) {
		say_err("marking coflow %" PRIu64 " done: %s", coflow_collect(),
			loom_client_strerror());
		goto fail;
	}
	t2 = now_ms();

	/* The controller may have seen the job finish with its last coflow. */
	r = loom_client_job_done(run.c, O.job_id);
	if (r < 0 && r != -EALREADY) {
		say_err("job %" PRIu64 " done: %s", O.job_id, loom_client_strerror());
		goto fail;
	}
	r = loom_client_job_unregister(run.c, O.job_id);
	if (r < 0) {
		say_err("unregistering job %" PRIu64 ": %s", O.job_id, loom_client_strerror());
		goto fail;
	}
	run.registered = false;
	r = reap_children(&run);
	if (r < 0)
		goto fail;

	printf("%s: job %" PRIu64 " on %s (%u hosts)\n", PROG, O.job_id, loom_client_address(run.c),
	       O.hosts);
	printf("  coflow %" PRIu64 " shuffle: %u mappers -> %u reducers, %u flows of %" PRIu64
	       " bytes, %.3f s\n",
	       coflow_shuffle(), O.mappers, O.reducers, O.mappers * O.reducers, O.bytes,
	       secs(t1 - t0));
	printf("  coflow %" PRIu64 " collect: %u reducers -> 1 collector, %u flows of %" PRIu64
	       " bytes, %.3f s\n",
	       coflow_collect(), O.reducers, O.reducers, O.bytes, secs(t2 - t1));
	printf("  %u flows, %" PRIu64 " bytes in %.3f s; job done and unregistered\n",
	       O.mappers * O.reducers + O.reducers, O.bytes * (O.mappers + 1) * O.reducers,
	       secs(t2 - t0));
	close(go[1]);
	close(rep[0]);
	loom_client_free(run.c);
	return 0;

fail_spawn:
	say_err("fork: %s", strerror(-r));
fail:
	kill_children(&run);
	for (unsigned j = 0; j < n_l; j++)
		close(lfds[j]);
	if (lfd_coll >= 0)
		close(lfd_coll);
	for (int k = 0; k < 2; k++) {
		if (go[k] >= 0)
			close(go[k]);
		if (rep[k] >= 0)
			close(rep[k]);
	}
	/* Leave nothing behind in the controller. */
	if (run.registered && loom_client_job_unregister(run.c, O.job_id) < 0)
		say_err("unregistering job %" PRIu64 ": %s", O.job_id, loom_client_strerror());
	loom_client_free(run.c);
	return 1;
}

/* ---- options ------------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [OPTIONS]\n"
		"A two-stage shuffle between processes on 127.0.0.1, scheduled by loomd:\n"
		"coflow JOB*10+1 (mappers -> reducers) then coflow JOB*10+2 (reducers ->\n"
		"one collector). Every flow is announced with its socket's 5-tuple.\n"
		"\n"
		"  -m, --mappers N        mapper processes (default 4, at most %d)\n"
		"  -r, --reducers N       reducer processes (default 4, at most %d)\n"
		"  -b, --bytes SIZE       bytes per flow, k/M/G suffixes (default 1M)\n"
		"  -c, --controller ADDR  loomd: unix:/PATH, /PATH, tcp:HOST:PORT, HOST:PORT\n"
		"                         (default $LOOM_CONTROLLER, else %s)\n"
		"  -j, --job-id ID        job id (default: this process's id)\n"
		"  -H, --hosts N          process i pretends to be host i %% N (default 4)\n"
		"  -t, --timeout-ms MS    bound on the whole run (default 60000)\n"
		"  -h, --help             this text\n"
		"\n"
		"Exit status: 0 when every flow arrived whole and loomd took every\n"
		"request, 1 on any failure, 2 for bad usage.\n",
		PROG, MAX_PROCS, MAX_PROCS, LOOM_CLIENT_DEFAULT_ADDRESS);
}

static bool parse_u64(const char *s, uint64_t max, uint64_t *ret)
{
	unsigned long long v;
	char *end;

	if (!s || s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return false;
	*ret = v;
	return true;
}

static bool parse_size(const char *s, uint64_t *ret)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (!s || s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return false;
	if (*end == 'k' || *end == 'K')
		shift = 10;
	else if (*end == 'M')
		shift = 20;
	else if (*end == 'G')
		shift = 30;
	if (shift)
		end++;
	if (*end == 'B')
		end++;
	if (*end || v == 0 || v > (MAX_BYTES >> shift))
		return false;
	*ret = (uint64_t)v << shift;
	return true;
}

/* Parses argv into O; 0, 1 (--help done) or -EINVAL after saying why. */
static int parse_args(int argc, char **argv)
{
	bool job_given = false;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t x;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 1;
		}
		if (!v) {
			say_err("%s: missing value (see --help)", a);
			return -EINVAL;
		}
		i++;
		if (!strcmp(a, "-m") || !strcmp(a, "--mappers")) {
			if (!parse_u64(v, MAX_PROCS, &x) || !x)
				goto bad;
			O.mappers = (unsigned)x;
		} else if (!strcmp(a, "-r") || !strcmp(a, "--reducers")) {
			if (!parse_u64(v, MAX_PROCS, &x) || !x)
				goto bad;
			O.reducers = (unsigned)x;
		} else if (!strcmp(a, "-b") || !strcmp(a, "--bytes")) {
			if (!parse_size(v, &O.bytes))
				goto bad;
		} else if (!strcmp(a, "-c") || !strcmp(a, "--controller")) {
			O.controller = v;
		} else if (!strcmp(a, "-j") || !strcmp(a, "--job-id")) {
			/* coflow ids are JOB*10+1 and JOB*10+2 */
			if (!parse_u64(v, (UINT64_MAX - 2) / 10, &O.job_id))
				goto bad;
			job_given = true;
		} else if (!strcmp(a, "-H") || !strcmp(a, "--hosts")) {
			if (!parse_u64(v, 1u << 20, &x) || !x)
				goto bad;
			O.hosts = (unsigned)x;
		} else if (!strcmp(a, "-t") || !strcmp(a, "--timeout-ms")) {
			if (!parse_u64(v, 24 * 3600 * 1000, &x) || !x)
				goto bad;
			O.timeout_ms = (int)x;
		} else {
			say_err("unknown option %s (see --help)", a);
			return -EINVAL;
		}
		continue;
bad:
		say_err("%s %s: not a valid value (see --help)", a, v);
		return -EINVAL;
	}
	if (!job_given)
		O.job_id = (uint64_t)getpid();
	return 0;
}

int main(int argc, char **argv)
{
	int r = parse_args(argc, argv);

	if (r)
		return r > 0 ? 0 : 2;
	deadline_ms = now_ms() + O.timeout_ms;
	driver_pid = getpid();
	/* Peers that are gone show up as EPIPE, never as a fatal signal. */
	signal(SIGPIPE, SIG_IGN);
	return run_driver();
}
