/* SPDX-License-Identifier: BSD-3-Clause */
#include "tests/e2e/netns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/bpf.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/e2e/harness.h"

int nsx_sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int r;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	r = system(cmd);
	r = r == -1 ? -1 : WIFEXITED(r) ? WEXITSTATUS(r) : 128;
	if (r != 0)
		fprintf(stderr, "nsx: '%s' exited %d\n", cmd, r);
	return r;
}

bool nsx_usable(void)
{
	char name[40];

	if (geteuid() != 0)
		return false;
	snprintf(name, sizeof(name), "loomprobe%d", (int)getpid());
	if (nsx_sh("ip netns add %s 2>/dev/null", name) != 0)
		return false;
	nsx_sh("ip netns del %s", name);
	return true;
}

bool nsx_bpf_usable(void)
{
	struct bpf_insn prog[] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0},
		{.code = BPF_JMP | BPF_EXIT},
	};
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_SCHED_CLS;
	attr.insns = (uint64_t)(uintptr_t)prog;
	attr.insn_cnt = 2;
	attr.license = (uint64_t)(uintptr_t) "GPL";
	fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

const char *nsx_add(struct nsx *x, const char *tag)
{
	char *name;

	if (x->n == NSX_MAX)
		return NULL;
	name = x->name[x->n];
	snprintf(name, sizeof(x->name[0]), "loom%s%d", tag, (int)getpid());
	if (nsx_sh("ip netns add %s", name) != 0)
		return NULL;
	x->n++;
	nsx_sh("ip -n %s link set lo up", name);
	/* no IPv6 chatter (router solicitations, MLD): every frame is the test's */
	nsx_sh("ip netns exec %s sysctl -qw net.ipv6.conf.all.disable_ipv6=1 "
	       "net.ipv6.conf.default.disable_ipv6=1",
	       name);
	return name;
}

void nsx_cleanup(struct nsx *x)
{
	for (int i = 0; i < x->n; i++)
		nsx_sh("ip netns del %s", x->name[i]);
	x->n = 0;
}

int nsx_enter(const char *name)
{
	char path[128];
	int fd, r;

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = setns(fd, CLONE_NEWNET) < 0 ? -errno : 0;
	close(fd);
	return r;
}

long long nsx_tx_bytes(const char *ns, const char *ifname)
{
	char cmd[256], buf[8192];
	json_t *j, *tx;
	long long v = -1;
	size_t n;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ip -n %s -s -j link show dev %s", ns, ifname);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, p);
	pclose(p);
	buf[n] = 0;
	j = json_loads(buf, 0, NULL);
	tx = json_object_get(json_object_get(json_array_get(j, 0), "stats64"), "tx");
	if (json_is_integer(json_object_get(tx, "bytes")))
		v = json_integer_value(json_object_get(tx, "bytes"));
	json_decref(j);
	return v;
}

/* A packet socket on ifname (every frame, both directions); fd or -1. */
static int nsx_capture_open(const char *ifname)
{
	/* ETH_P_ALL: a socket of one protocol sees only incoming frames, not outgoing ones */
	struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL)};
	int fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ETH_P_ALL));
	int sz = 8 << 20;

	if (fd < 0)
		return -1;
	sll.sll_ifindex = (int)if_nametoindex(ifname);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz));
	if (!sll.sll_ifindex || bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Reads what is queued on a capture socket; counts frames of r's flows by direction. */
static void nsx_capture_drain(int fd, const struct nsx_race *r, bool outgoing,
			      struct nsx_race_result *res)
{
	uint8_t b[128];
	struct sockaddr_ll from;
	socklen_t fl = sizeof(from);
	ssize_t n;

	while ((n = recvfrom(fd, b, sizeof(b), MSG_DONTWAIT | MSG_TRUNC, (struct sockaddr *)&from,
			     &fl)) > 0) {
		const struct iphdr *ip = (const void *)b;
		uint32_t ihl;
		uint16_t sport;

		fl = sizeof(from);
		if ((from.sll_pkttype == PACKET_OUTGOING) != outgoing ||
		    from.sll_protocol != htons(ETH_P_IP) || n < 24 || ip->version != 4 ||
		    ip->protocol != IPPROTO_TCP)
			continue;
		ihl = ip->ihl * 4u;
		if (ihl + 2 > sizeof(b) || (ssize_t)ihl + 2 > n)
			continue;
		memcpy(&sport, b + ihl, 2);
		sport = ntohs(sport);
		for (int i = 0; i < 2; i++) {
			if (sport != r->sport[i])
				continue;
			if (outgoing) {
				res->f[i].wire_bytes +=
					(uint64_t)n + 14; /* SOCK_DGRAM: no MAC header */
				res->f[i].wire_pkts++;
			} else {
				res->f[i].dscp_pkts[ip->tos >> 2]++;
				res->f[i].seen_pkts++;
			}
		}
	}
}

/* The frames the capture socket fd dropped so far (its queue was full). */
static uint64_t nsx_capture_dropped(int fd)
{
	struct tpacket_stats st = {0};
	socklen_t l = sizeof(st);

	if (getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &l) < 0)
		return 0;
	return st.tp_drops;
}

/* Reads n bytes from fd within the deadline; 0 or -1. */
static int nsx_read_full(int fd, void *buf, size_t n, uint64_t deadline_ms)
{
	size_t got = 0;

	while (got < n) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint64_t now = h_mono_ms();
		ssize_t k;

		if (now >= deadline_ms || poll(&p, 1, (int)(deadline_ms - now)) <= 0)
			return -1;
		k = read(fd, (char *)buf + got, n - got);
		if (k <= 0)
			return -1;
		got += (size_t)k;
	}
	return 0;
}

/* The receiver (in ns_rcv): accepts both flows, reads them to EOF, watches DSCP. */
static void nsx_receiver(const struct nsx_race *r, int ready_fd, int out_fd, uint64_t deadline_ms)
{
	struct nsx_race_result res;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(r->dport)};
	int one = 1, lfd, cap, conn[2] = {-1, -1}, open_flows = 2;
	uint64_t done_abs[2] = {0, 0};
	char buf[65536];

	memset(&res, 0, sizeof(res));
	if (nsx_enter(r->ns_rcv) < 0)
		_exit(10);
	cap = nsx_capture_open(r->rcv_if);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	inet_pton(AF_INET, r->dst_ip, &a.sin_addr);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (cap < 0 || lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(lfd, 4) < 0)
		_exit(11);
	if (write(ready_fd, "r", 1) != 1)
		_exit(12);
	while (open_flows > 0 && h_mono_ms() < deadline_ms) {
		struct pollfd p[4] = {{.fd = lfd, .events = POLLIN},
				      {.fd = cap, .events = POLLIN},
				      {.fd = conn[0], .events = POLLIN},
				      {.fd = conn[1], .events = POLLIN}};

		if (poll(p, 4, 100) < 0)
			break;
		if (p[0].revents & POLLIN) {
			struct sockaddr_in peer;
			socklen_t pl = sizeof(peer);
			int c = accept4(lfd, (struct sockaddr *)&peer, &pl, SOCK_CLOEXEC);

			for (int i = 0; c >= 0 && i < 2; i++)
				if (ntohs(peer.sin_port) == r->sport[i] && conn[i] < 0) {
					conn[i] = c;
					c = -1;
				}
			if (c >= 0)
				close(c);
		}
		if (p[1].revents & POLLIN)
			nsx_capture_drain(cap, r, false, &res);
		for (int i = 0; i < 2; i++) {
			ssize_t k;

			if (conn[i] < 0 || !(p[2 + i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			k = read(conn[i], buf, sizeof(buf));
			if (k > 0) {
				res.f[i].rx_bytes += (uint64_t)k;
				continue;
			}
			done_abs[i] = h_mono_ms();
			close(conn[i]);
			conn[i] = -1;
			open_flows--;
		}
	}
	/* the last frames may still sit in the capture queue */
	h_sleep_ms(50);
	nsx_capture_drain(cap, r, false, &res);
	res.capture_drops = nsx_capture_dropped(cap);
	for (int i = 0; i < 2; i++)
		res.f[i].done_ms = done_abs[i]; /* absolute: the parent subtracts its start */
	if (write(out_fd, &res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(13);
	_exit(open_flows ? 14 : 0);
}

/* One sender (in ns_snd): connects, waits for the go, sends r->bytes, waits for the close. */
static void nsx_sender(const struct nsx_race *r, int i, int ready_fd, int go_fd,
		       uint64_t deadline_ms)
{
	struct sockaddr_in src = {.sin_family = AF_INET, .sin_port = htons(r->sport[i])};
	struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(r->dport)};
	struct timeval tv = {.tv_sec = (time_t)(r->limit_ms / 1000 + 1)};
	static char buf[65536];
	uint64_t left = r->bytes;
	int one = 1, fd;
	char go;

	if (nsx_enter(r->ns_snd) < 0)
		_exit(20);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	inet_pton(AF_INET, r->src_ip, &src.sin_addr);
	inet_pton(AF_INET, r->dst_ip, &dst.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
	    connect(fd, (struct sockaddr *)&dst, sizeof(dst)) < 0)
		_exit(21);
	if (write(ready_fd, "c", 1) != 1 || nsx_read_full(go_fd, &go, 1, deadline_ms) < 0)
		_exit(22);
	memset(buf, 'x', sizeof(buf));
	while (left > 0) {
		size_t n = left < sizeof(buf) ? (size_t)left : sizeof(buf);
		ssize_t k = send(fd, buf, n, MSG_NOSIGNAL);

		if (k <= 0)
			_exit(23);
		left -= (uint64_t)k;
	}
	shutdown(fd, SHUT_WR);
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
	_exit(0);
}

int nsx_wait(pid_t pid, uint64_t deadline_ms)
{
	int status = h_wait(pid, deadline_ms);

	return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int nsx_race_run(const struct nsx_race *r, struct nsx_race_result *res)
{
	uint64_t deadline = h_mono_ms() + r->limit_ms, start;
	int ready[2], out[2], go[2][2], cap = -1, rc = -1;
	pid_t rcv, snd[2] = {-1, -1};
	char c;

	memset(res, 0, sizeof(*res));
	if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
	    pipe2(go[0], O_CLOEXEC) < 0 || pipe2(go[1], O_CLOEXEC) < 0) {
		snprintf(res->error, sizeof(res->error), "pipe: %s", strerror(errno));
		return -1;
	}
	rcv = fork();
	if (rcv == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		nsx_receiver(r, ready[1], out[1], deadline);
	}
	if (rcv < 0 || nsx_read_full(ready[0], &c, 1, deadline) < 0) {
		snprintf(res->error, sizeof(res->error), "the receiver did not start in %s",
			 r->ns_rcv);
		goto out;
	}
	/* the sender side's capture runs in this process, which enters ns_snd only to make
	 * the socket (a packet socket stays in the namespace it was made in) */
	{
		int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);

		if (self >= 0 && nsx_enter(r->ns_snd) == 0) {
			cap = nsx_capture_open(r->snd_if);
			setns(self, CLONE_NEWNET);
		}
		if (self >= 0)
			close(self);
		if (cap < 0) {
			snprintf(res->error, sizeof(res->error), "no packet socket on %s in %s",
				 r->snd_if, r->ns_snd);
			goto out;
		}
	}
	for (int i = 0; i < 2; i++) {
		snd[i] = fork();
		if (snd[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			nsx_sender(r, i, ready[1], go[i][0], deadline);
		}
		if (snd[i] < 0 || nsx_read_full(ready[0], &c, 1, deadline) < 0) {
			snprintf(res->error, sizeof(res->error),
				 "flow %d (port %u) did not connect from %s to %s", i, r->sport[i],
				 r->ns_snd, r->dst_ip);
			goto out;
		}
	}
	start = h_mono_ms();
	if (write(go[0][1], "g", 1) != 1 || write(go[1][1], "g", 1) != 1) {
		snprintf(res->error, sizeof(res->error), "go: %s", strerror(errno));
		goto out;
	}
	/* count the sender's frames while the race runs */
	while (h_mono_ms() < deadline) {
		struct pollfd p[2] = {{.fd = cap, .events = POLLIN},
				      {.fd = out[0], .events = POLLIN}};

		if (poll(p, 2, 100) < 0)
			break;
		nsx_capture_drain(cap, r, true, res);
		if (p[1].revents & POLLIN)
			break;
	}
	{
		struct nsx_race_result rr;
		uint64_t wb[2], wp[2];

		h_sleep_ms(50);
		nsx_capture_drain(cap, r, true, res);
		for (int i = 0; i < 2; i++) {
			wb[i] = res->f[i].wire_bytes;
			wp[i] = res->f[i].wire_pkts;
		}
		if (nsx_read_full(out[0], &rr, sizeof(rr), deadline) < 0) {
			snprintf(res->error, sizeof(res->error),
				 "the receiver in %s gave no result within %u ms", r->ns_rcv,
				 r->limit_ms);
			goto out;
		}
		rr.capture_drops += nsx_capture_dropped(cap);
		*res = rr;
		for (int i = 0; i < 2; i++) {
			res->f[i].wire_bytes = wb[i];
			res->f[i].wire_pkts = wp[i];
			res->f[i].done_ms = res->f[i].done_ms ? res->f[i].done_ms - start : 0;
		}
	}
	rc = 0;
	for (int i = 0; i < 2; i++)
		if (nsx_wait(snd[i], deadline + 1000) != 0 && rc == 0) {
			snprintf(res->error, sizeof(res->error), "sender %d failed", i);
			rc = -1;
		}
	if (nsx_wait(rcv, deadline + 1000) != 0 && rc == 0) {
		snprintf(res->error, sizeof(res->error),
			 "the receiver did not get both flows whole");
		rc = -1;
	}
	rcv = snd[0] = snd[1] = -1;
out:
	for (int i = 0; i < 2; i++)
		if (snd[i] > 0)
			nsx_wait(snd[i], 0);
	if (rcv > 0)
		nsx_wait(rcv, 0);
	if (cap >= 0)
		close(cap);
	close(ready[0]), close(ready[1]), close(out[0]), close(out[1]);
	for (int i = 0; i < 2; i++)
		close(go[i][0]), close(go[i][1]);
	return rc;
}

int nsx_dscp_mode(const struct nsx_flow_result *f, double *ret_share)
{
	int best = 0;

	for (int d = 1; d < 64; d++)
		if (f->dscp_pkts[d] > f->dscp_pkts[best])
			best = d;
	*ret_share = f->seen_pkts ? (double)f->dscp_pkts[best] / (double)f->seen_pkts : 0;
	return best;
}
