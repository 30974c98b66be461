/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of controlplane/run (loom-run's parts): lrun_model_scale()
 * (times and bytes scaled and rounded, at least one byte a flow, a value
 * beyond the trace format's limits refused naming its job, bad scales),
 * the flow header as a receiver reads it (lrun_rx_feed(): in any pieces,
 * refusals and their messages), and the host process on loopback: a flow
 * delivered and acknowledged, a flow to a port nobody listens on reported
 * failed, a connection without loom-run's header closed without an ack, and
 * the process ending with status 0 when the driver closes its socket. The
 * host tests enter the test's own network namespace (setns needs root):
 * without root they are left out.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "controlplane/run/run.h"
#include "controlplane/sim/sim.h"
#include "tests/precond.h"

static const char TRACE[] = "loom-trace 1 hosts 3\n"
			    "job 1 10 1\n"
			    "coflow 10 1 0.5\n"
			    "flow 10 0 1 1000\n"
			    "flow 10 2 1 3\n"
			    "coflow 11 1 0\n"
			    "flow 11 1 2 1\n"
			    "edge 10 11 20\n"
			    "job 2 1000.000001 2.5\n"
			    "coflow 20 2 0\n";

static struct cp_model *load(void)
{
	struct loom_err err = {{0}};
	uint32_t nhosts;
	struct cp_model *m =
		sim_trace_parse(TRACE, sizeof(TRACE) - 1, "t.loom", SIM_TRACE_LOOM, &nhosts, &err);

	if (!m)
		fail_msg("%s", loom_err_str(&err));
	return m;
}

static void test_scale(void **state)
{
	struct loom_err err = {{0}};
	struct cp_model *m = load(), *s;

	(void)state;
	s = lrun_model_scale(m, 2, 0.5, &err);
	if (!s)
		fail_msg("%s", loom_err_str(&err));
	assert_int_equal(s->nhosts, 3);
	assert_int_equal(s->njobs, 2);
	assert_int_equal(s->ncoflows, 3);
	assert_int_equal(s->nflows, 3);
	assert_int_equal(s->nedges, 1);
	assert_int_equal(s->jobs[0].ext_id, 1);
	assert_int_equal(s->jobs[0].arrival_ns, 5000000);
	assert_int_equal(s->jobs[1].ext_id, 2);
	assert_int_equal(s->jobs[1].arrival_ns, 500000000); /* 500000000.5 to even */
	assert_true(s->jobs[1].weight == 2.5);
	assert_int_equal(s->coflows[0].ext_id, 10);
	assert_int_equal(s->coflows[0].release_offset_ns, 250000);
	assert_int_equal(s->flows[0].bytes, 2000);
	assert_int_equal(s->flows[1].bytes, 6);
	assert_int_equal(s->flows[1].src, 2);
	assert_int_equal(s->flows[1].dst, 1);
	assert_int_equal(s->edges[0].delay_ns, 10000000);
	assert_int_equal(s->coflows[s->edges[0].parent].ext_id, 10);
	assert_int_equal(s->coflows[s->edges[0].child].ext_id, 11);
	cp_model_free(s);

	/* every flow keeps at least one byte */
	s = lrun_model_scale(m, 1e-9, 1, &err);
	assert_non_null(s);
	for (uint32_t f = 0; f < s->nflows; f++)
		assert_int_equal(s->flows[f].bytes, 1);
	assert_int_equal(s->jobs[0].arrival_ns, 10000000);
	cp_model_free(s);
	cp_model_free(m);
}

static void test_scale_limits(void **state)
{
	struct loom_err err = {{0}};
	struct cp_model *m = load();

	(void)state;
	/* job 2 arrives at ~1e9 ns: 1e10 times that is beyond 2^62 ns */
	assert_null(lrun_model_scale(m, 1, 1e10, &err));
	assert_int_equal(errno, ERANGE);
	assert_non_null(strstr(loom_err_str(&err), "job 2"));
	assert_null(lrun_model_scale(m, 1e16, 1, &err));
	assert_int_equal(errno, ERANGE);
	assert_non_null(strstr(loom_err_str(&err), "coflow 10"));
	assert_null(lrun_model_scale(m, 0, 1, &err));
	assert_int_equal(errno, EINVAL);
	assert_null(lrun_model_scale(m, 1, -1, &err));
	assert_int_equal(errno, EINVAL);
	cp_model_free(m);
}

/* ---- the host process on loopback ----------------------------------------------------------- */

/* A TCP port free on 127.0.0.1 now. */
static uint16_t free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

struct hostp {
	pid_t pid;
	int fd;
	uint16_t port;
};

/* The driver's ends of the hosts started and not stopped (a host must not hold another's). */
static int driver_fds[4] = {-1, -1, -1, -1};

/* Starts a host process on 127.0.0.1 in this namespace; waits for its READY. */
static void host_start(struct hostp *h, uint32_t id)
{
	int sv[2];
	struct lrun_msg m;
	struct pollfd p;

	h->port = free_port();
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	h->pid = fork();
	assert_true(h->pid >= 0);
	if (h->pid == 0) {
		struct lrun_host_cfg cfg = {.host = id,
					    .netns = "/proc/self/ns/net",
					    .addr = htonl(INADDR_LOOPBACK),
					    .port = h->port};

		close(sv[0]);
		for (int i = 0; i < 4; i++)
			if (driver_fds[i] >= 0)
				close(driver_fds[i]);
		_exit(lrun_host_main(&cfg, sv[1]));
	}
	close(sv[1]);
	h->fd = sv[0];
	driver_fds[id] = h->fd;
	p = (struct pollfd){.fd = h->fd, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 10000), 1);
	assert_int_equal(recv(h->fd, &m, sizeof(m), 0), sizeof(m));
	assert_int_equal(m.type, LRUN_MSG_READY);
	assert_int_equal(m.status, 0);
}

/* Closes the driver's end: the host exits 0. */
static void host_stop(struct hostp *h)
{
	int st;

	for (int i = 0; i < 4; i++)
		if (driver_fds[i] == h->fd)
			driver_fds[i] = -1;
	close(h->fd);
	assert_int_equal(waitpid(h->pid, &st, 0), h->pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* Starts flow `flow` of bytes from h to 127.0.0.1:port; the status its DONE reports. */
static int host_flow(struct hostp *h, uint32_t flow, uint16_t port, uint64_t bytes)
{
	struct lrun_msg m = {.type = LRUN_MSG_START,
			     .flow = flow,
			     .src_port = free_port(),
			     .dst_port = port,
			     .dst_addr = htonl(INADDR_LOOPBACK),
			     .bytes = bytes};
	struct pollfd p = {.fd = h->fd, .events = POLLIN};

	assert_int_equal(send(h->fd, &m, sizeof(m), 0), sizeof(m));
	assert_int_equal(poll(&p, 1, 30000), 1);
	assert_int_equal(recv(h->fd, &m, sizeof(m), 0), sizeof(m));
	assert_int_equal(m.type, LRUN_MSG_DONE);
	assert_int_equal(m.flow, flow);
	assert_true(m.mono_ns > 0);
	return m.status;
}

static void test_host_flows(void **state)
{
	struct hostp a, b;

	(void)state;
	host_start(&a, 0);
	host_start(&b, 1);
	assert_int_equal(host_flow(&a, 7, b.port, 3 * 1024 * 1024 + 5), 0);
	assert_int_equal(host_flow(&b, 8, a.port, 1), 0);
	/* to a port nobody listens on */
	assert_int_equal(host_flow(&a, 9, free_port(), 1000), -ECONNREFUSED);
	host_stop(&a);
	host_stop(&b);
}

/* The header and the bytes it announces, in pieces of any size; what is refused, and why. */
static void test_rx_feed(void **state)
{
	uint8_t in[LRUN_HDR_BYTES + 8] = {0};
	struct loom_err err = {{0}};
	struct lrun_rx rx;

	(void)state;
	lrun_hdr_write(in, 7, 8);
	assert_memory_equal(in, "LRUN\0\0\0\x07\0\0\0\0\0\0\0\x08", LRUN_HDR_BYTES);

	/* whole, and in pieces that cut the header */
	memset(&rx, 0, sizeof(rx));
	assert_int_equal(lrun_rx_feed(&rx, in, sizeof(in), &err), 1);
	assert_int_equal(rx.flow, 7);
	memset(&rx, 0, sizeof(rx));
	assert_int_equal(lrun_rx_feed(&rx, NULL, 0, &err), 0);
	assert_int_equal(lrun_rx_feed(&rx, in, 5, &err), 0);
	assert_int_equal(lrun_rx_feed(&rx, in + 5, 11, &err), 0);
	assert_int_equal(rx.left, 8);
	assert_int_equal(lrun_rx_feed(&rx, in + 16, 7, &err), 0);
	assert_int_equal(lrun_rx_feed(&rx, in + 23, 1, &err), 1);

	/* a flow of no bytes is done with its header */
	lrun_hdr_write(in, 3, 0);
	memset(&rx, 0, sizeof(rx));
	assert_int_equal(lrun_rx_feed(&rx, in, LRUN_HDR_BYTES, &err), 1);

	/* more bytes than announced */
	memset(&rx, 0, sizeof(rx));
	assert_int_equal(lrun_rx_feed(&rx, in, LRUN_HDR_BYTES + 1, &err), -EMSGSIZE);
	assert_string_equal(err.msg, "flow 3 brought more bytes than its header says");

	/* no magic: refused once the 16 bytes are in */
	memset(in, 0xab, sizeof(in));
	memset(&rx, 0, sizeof(rx));
	assert_int_equal(lrun_rx_feed(&rx, in, LRUN_HDR_BYTES - 1, &err), 0);
	assert_int_equal(lrun_rx_feed(&rx, in, 1, &err), -EPROTO);
	assert_string_equal(err.msg, "a connection without loom-run's header");
}

/* A connection that does not start with loom-run's header is closed, without the ack. */
static void test_host_bad_header(void **state)
{
	struct sockaddr_in to = {.sin_family = AF_INET};
	uint8_t junk[64], c;
	struct hostp h;
	int fd;

	(void)state;
	host_start(&h, 0);
	memset(junk, 0xab, sizeof(junk));
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	to.sin_port = htons(h.port);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
	assert_int_equal(send(fd, junk, sizeof(junk), MSG_NOSIGNAL), sizeof(junk));
	/* EOF (or a reset), never the ack byte */
	assert_true(recv(fd, &c, 1, 0) <= 0);
	close(fd);
	host_stop(&h);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scale),           cmocka_unit_test(test_scale_limits),
		cmocka_unit_test(test_rx_feed),         cmocka_unit_test(test_host_flows),
		cmocka_unit_test(test_host_bad_header),
	};
	size_t n = sizeof(tests) / sizeof(tests[0]);
	const char *why = geteuid() != 0 ? "needs root (setns)" : NULL;

	signal(SIGPIPE, SIG_IGN);
	n = precond_leave_out(tests, n, test_host_flows, why);
	n = precond_leave_out(tests, n, test_host_bad_header, why);
	return precond_run(tests, n, NULL, NULL);
}
