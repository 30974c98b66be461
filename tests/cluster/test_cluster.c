/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scripts/loom-cluster (docs/cluster.md) on this machine: a 3-host cluster
 * comes up with every agent connected to loomd, the switch's ports have
 * their HTB classes and DSCP filters, host 0 reaches host 2 (one ICMP echo,
 * sent from this process through a socket made in host 0's namespace), and
 * down leaves nothing: no namespace of the run, no process of it, no state
 * folder. An `up` interrupted by SIGINT tears down what it built; a
 * foreground `up` killed with SIGKILL leaves a stale run that `down --name`
 * removes whole. Bad flags exit 2 naming the flag; not root exits 2.
 * `loom-cluster run` plays a small trace with loom-run (controlplane/run):
 * every job and coflow of the trace finishes, the per-job and per-coflow CSV
 * files have loom-replay's columns and one row per job and coflow of the
 * scaled trace, no coflow starts before its parents are done plus the
 * scaled compute delay, loomd saw every flow announced and keeps no job;
 * loom-run's bad flags exit 2 naming the flag, a bad trace exits 1 naming
 * its line. `run --chaos` (a clean run, then one with loomd SIGKILLed and
 * restarted from its journal and one agent SIGKILLed and restarted): every
 * job of both runs is in its per-job CSV file once and finished, the agents
 * kept their tables while loomd was away, loomd and that agent are new
 * processes, loomd holds no job afterwards and down leaves nothing.
 *
 * `up --enforcer dpdk` (2 hosts, a DPDK bump in the wire in each host's
 * NIC namespace): every agent connects with the dpdk enforcer, a TCP flow
 * of a one-job trace goes from host 0 to host 1 through both bumps (its
 * ACKs back through their return path), host 0's agent counted its packets
 * in the flow's class, and the switch's port towards host 1 queued them in
 * that class's DSCP queue; down leaves no namespace, process or DPDK
 * runtime folder.
 *
 * Every run is named after this process (t<pid><letter>), so that it
 * collides with nothing. main() exits 77 (skip) without root, network
 * namespaces, a bridge, HTB and u32 in the kernel, BPF, or a loom-agent
 * with the tc enforcer in this build; the dpdk test is left out without
 * the dpdk enforcer in this build, ethtool, AF_PACKET sockets or two CPUs.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/e2e/harness.h"
#include "tests/e2e/netns.h"
#include "tests/precond.h"

#define STATE_BASE "/run/loom-cluster"
#define HOSTS      3
#define CLASSES    8

static char SCRIPT[512], BUILDDIR[512], LOOMCTL[512], LOOMRUN[512];

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* A name for one run of this test: t<pid><letter>. */
static void run_name(char *buf, size_t len, char letter)
{
	snprintf(buf, len, "t%d%c", (int)getpid(), letter);
}

/* Waits for pid until deadline_ms; the wait status, or -1 (then it was killed and reaped). */
static int wait_until(pid_t pid, uint64_t deadline_ms)
{
	int status;

	while (mono_ms() < deadline_ms) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			return -1;
		sleep_ms(20);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/*
 * Starts the script with args (NULL-terminated), its output (both streams)
 * to the file out; the child gets the default action for every signal (a
 * shell cannot trap a signal ignored when it started). Its pid.
 */
static pid_t spawn(const char *out, const char *const args[])
{
	const char *argv[32];
	int n = 0;
	pid_t pid;

	argv[n++] = "bash";
	argv[n++] = SCRIPT;
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid = fork();
	if (pid == 0) {
		sigset_t none;
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		for (int s = 1; s < NSIG; s++)
			signal(s, SIG_DFL);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		execvp("bash", (char *const *)argv);
		_exit(127);
	}
	assert_true(pid > 0);
	return pid;
}

/* Reads file path into buf (NUL-terminated, truncated to len - 1). */
static void slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (f) {
		n = fread(buf, 1, len - 1, f);
		fclose(f);
	}
	buf[n] = 0;
}

/*
 * Runs the script with args to its end (bounded by limit_s), its output in
 * out; returns its exit status, failing the test when it crashed, was killed
 * or ran past the limit.
 */
static int run_script(char *out, size_t len, unsigned int limit_s, const char *const args[])
{
	char log[128];
	pid_t pid;
	int status;

	snprintf(log, sizeof(log), "/tmp/loom-cluster-test-%d.log", (int)getpid());
	pid = spawn(log, args);
	status = wait_until(pid, mono_ms() + limit_s * 1000ull);
	slurp(log, out, len);
	unlink(log);
	if (status == -1)
		fail_msg("loom-cluster %s did not end within %u s; it printed:\n%s", args[0],
			 limit_s, out);
	if (!WIFEXITED(status))
		fail_msg("loom-cluster %s ended by signal %d; it printed:\n%s", args[0],
			 WIFSIGNALED(status) ? WTERMSIG(status) : -1, out);
	return WEXITSTATUS(status);
}

/* Runs a shell command; its output in out (NUL-terminated). The exit status or -1. */
static int sh_out(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int sh_out(char *out, size_t len, const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	size_t n = 0;
	FILE *p;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	p = popen(cmd, "r");
	if (!p) {
		out[0] = 0;
		return -1;
	}
	n = fread(out, 1, len - 1, p);
	out[n] = 0;
	st = pclose(p);
	return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The run's namespaces that exist, one a line ("" when none). */
static void run_namespaces(const char *name, char *out, size_t len)
{
	sh_out(out, len, "ip netns list | awk '{print $1}' | grep -E '^loomc-%s-' ", name);
}

/* The processes (not zombies) whose command line names the run's state folder. */
static int run_processes(const char *name, char *out, size_t len)
{
	char needle[128];
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t used = 0;
	int n = 0;

	snprintf(needle, sizeof(needle), STATE_BASE "/%s/", name);
	out[0] = 0;
	assert_non_null(d);
	while ((e = readdir(d))) {
		char path[300], buf[4096], stat[512], *p;
		size_t k;
		FILE *f;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		slurp(path, stat, sizeof(stat));
		p = strrchr(stat, ')');
		if (!p || p[1] == 0 || p[2] == 'Z' || p[2] == 'X')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		k = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[k] = 0;
		for (size_t i = 0; i + 1 < k; i++)
			if (!buf[i])
				buf[i] = ' ';
		if (!strstr(buf, needle))
			continue;
		n++;
		used += (size_t)snprintf(out + used, used < len ? len - used : 0, "%s: %.200s\n",
					 e->d_name, buf);
		if (used >= len)
			used = len - 1;
	}
	closedir(d);
	return n;
}

/* Nothing of run name may remain (processes get a few seconds to be reaped). */
static void assert_nothing_left(const char *name)
{
	char dir[256], ns[4096], procs[4096];
	struct stat st;
	int n = 0;

	snprintf(dir, sizeof(dir), STATE_BASE "/%s", name);
	for (int i = 0; i < 100; i++) {
		run_namespaces(name, ns, sizeof(ns));
		n = run_processes(name, procs, sizeof(procs));
		if (!ns[0] && n == 0 && stat(dir, &st) != 0)
			return;
		sleep_ms(50);
	}
	if (ns[0])
		fail_msg("namespaces of run %s left:\n%s", name, ns);
	if (n)
		fail_msg("processes of run %s left:\n%s", name, procs);
	fail_msg("the state folder %s is left", dir);
}

/* Tears run name down whatever happened (the tests' own cleanup); quiet. */
static void force_down(const char *name)
{
	char out[8192];

	run_script(out, sizeof(out), 120, (const char *const[]){"down", "--name", name, NULL});
}

/* The value of KEY=VALUE in the run's state file, into buf ("" when not there). */
static void state_value(const char *name, const char *key, char *buf, size_t len)
{
	char path[256], all[4096], *p;
	size_t kl = strlen(key);

	snprintf(path, sizeof(path), STATE_BASE "/%s/state", name);
	slurp(path, all, sizeof(all));
	buf[0] = 0;
	for (p = all; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
			size_t n = strcspn(p + kl + 1, "\n");

			snprintf(buf, len, "%.*s", (int)n, p + kl + 1);
			return;
		}
	}
}

static bool ns_exists(const char *ns)
{
	char path[256];

	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	return access(path, F_OK) == 0;
}

/* Every host's agent is connected to the run's loomd, with the tc enforcer and K classes. */
static void assert_agents_connected(const char *name)
{
	char out[16384];
	bool seen[HOSTS] = {false};
	json_t *j, *a;
	size_t i;
	int rc;

	rc = sh_out(out, sizeof(out), "%s --socket " STATE_BASE "/%s/admin.sock --json agents",
		    LOOMCTL, name);
	assert_int_equal(rc, 0);
	j = json_loads(out, 0, NULL);
	if (!json_is_array(j))
		fail_msg("loomctl agents printed no JSON array:\n%s", out);
	assert_int_equal(json_array_size(j), HOSTS);
	json_array_foreach(j, i, a)
	{
		json_int_t h = json_integer_value(json_object_get(a, "host"));

		assert_true(h >= 0 && h < HOSTS);
		seen[h] = true;
		assert_string_equal(json_string_value(json_object_get(a, "enforcer")), "tc");
		assert_int_equal(json_integer_value(json_object_get(a, "classes")), CLASSES);
	}
	json_decref(j);
	for (int h = 0; h < HOSTS; h++)
		assert_true(seen[h]);
}

/* loom-cluster's default flow queues per class on a switch port (--switch-queues). */
#define SWQ 32
/* HTB minor of class q's flow queue b, and of the short packets' queue, as loom-cluster's. */
#define SWQ_LEAF(q, b) (0x100u + (unsigned int)(q)*SWQ + (unsigned int)(b))
#define SWQ_SHORT      0xffu
/* Its hash for HOSTS = 3: 2 bits of the source address (hosts .1 .. .3), 3 of the source port. */
#define SWQ_HB 2
#define SWQ_PB 3

/*
 * Each switch port towards a host: HTB root at the link rate; per class q
 * SWQ leaves of priority q, fed by two levels of u32 hash tables (source
 * address, then source port) that its DSCP links to; packets under 128
 * bytes to leaf 1:ff, priority 0.
 */
static void assert_switch_queues(const char *name)
{
	static char out[262144];
	char want[128];

	for (int p = 0; p < HOSTS; p++) {
		assert_int_equal(sh_out(out, sizeof(out), "tc -n loomc-%s-sw qdisc show dev p%d",
					name, p),
				 0);
		snprintf(want, sizeof(want), "qdisc htb 1: root");
		if (!strstr(out, want))
			fail_msg("port p%d: no '%s' in:\n%s", p, want, out);
		assert_int_equal(sh_out(out, sizeof(out), "tc -n loomc-%s-sw class show dev p%d",
					name, p),
				 0);
		assert_true(strlen(out) < sizeof(out) - 1);
		assert_non_null(strstr(out, "class htb 1:1 root rate 100Mbit ceil 100Mbit"));
		assert_non_null(strstr(out, "class htb 1:ff parent 1:1 prio 0 "));
		for (int q = 0; q < CLASSES; q++)
			for (int b = 0; b < SWQ; b++) {
				snprintf(want, sizeof(want), "class htb 1:%x parent 1:1 prio %d ",
					 SWQ_LEAF(q, b), q);
				if (!strstr(out, want))
					fail_msg("port p%d: no '%s'", p, want);
			}
		assert_int_equal(sh_out(out, sizeof(out), "tc -n loomc-%s-sw filter show dev p%d",
					name, p),
				 0);
		assert_true(strlen(out) < sizeof(out) - 1);
		/* any other DSCP: hashed into the lowest class's table */
		snprintf(want, sizeof(want),
			 "link %x: not_in_hw \n  match 00000000/00000000 at 0\n"
			 "    hash mask %08x at 12",
			 CLASSES + 1, (1 << SWQ_HB) - 1);
		if (!strstr(out, want))
			fail_msg("port p%d: no catch-all '%s'", p, want);
		/* IP total length below 128 (u32 shows the IP header's first word) */
		assert_non_null(
			strstr(out, "*flowid 1:ff not_in_hw \n  match 00000000/0000ff80 at 0"));
		for (int q = 0; q < CLASSES; q++) {
			/*
			 * The DSCP match (the TOS byte is the first word's second),
			 * hashed on the source address's low SWQ_HB bits into table
			 * q+2, whose bucket h hashes on the source port's low
			 * SWQ_PB bits into table 0x10 + q * 2^SWQ_HB + h, whose
			 * bucket b is leaf (q, h * 2^SWQ_PB + b).
			 */
			snprintf(want, sizeof(want),
				 "link %x: not_in_hw \n  match 00%02x0000/00fc0000 at 0\n"
				 "    hash mask %08x at 12",
				 q + 2, (8 * (7 - q)) << 2, (1 << SWQ_HB) - 1);
			if (!strstr(out, want))
				fail_msg("port p%d: no DSCP %d match hashed into table %x ('%s')",
					 p, 8 * (7 - q), q + 2, want);
			snprintf(want, sizeof(want), "fh %x: ht divisor %d", q + 2, 1 << SWQ_HB);
			if (!strstr(out, want))
				fail_msg("port p%d: no hash table '%s'", p, want);
			for (int h = 0; h < 1 << SWQ_HB; h++) {
				unsigned int t =
					0x10u + ((unsigned int)q << SWQ_HB) + (unsigned int)h;

				snprintf(want, sizeof(want),
					 "key ht %x bkt %x link %x: not_in_hw \n  match "
					 "00000000/00000000 at 0\n    hash mask %08x at 20",
					 q + 2, h, t, ((1 << SWQ_PB) - 1) << 16);
				if (!strstr(out, want))
					fail_msg("port p%d: no '%s'", p, want);
				for (int b = 0; b < 1 << SWQ_PB; b++) {
					snprintf(want, sizeof(want),
						 "key ht %x bkt %x *flowid 1:%x ", t, b,
						 SWQ_LEAF(q, (h << SWQ_PB) + b));
					if (!strstr(out, want))
						fail_msg("port p%d: no '%s'", p, want);
				}
			}
		}
	}
}

/* Minors of the switch's HTB classes (loom-cluster's numbering), for switch_pkts(). */
#define SWQ_MINORS (0x100u + CLASSES * SWQ)

/* The packets each HTB class of switch port dev sent ("Sent N bytes M pkt"), by minor; 0 or -1. */
static int switch_pkts(const char *name, const char *dev, long long *pkts)
{
	static char out[262144];
	const char *p = out;

	memset(pkts, 0, SWQ_MINORS * sizeof(*pkts));
	if (sh_out(out, sizeof(out), "tc -n loomc-%s-sw -s class show dev %s", name, dev) != 0 ||
	    strlen(out) >= sizeof(out) - 1)
		return -1;
	while ((p = strstr(p, "class htb 1:"))) {
		unsigned long minor = strtoul(p + 12, NULL, 16);
		const char *b = strstr(p, " bytes ");

		p += 12;
		if (b && minor < SWQ_MINORS)
			pkts[minor] = strtoll(b + 7, NULL, 10);
	}
	return 0;
}

/* The packets switch port dev sent from class q's flow queues and the short packets' queue, or -1. */
static long long switch_class_pkts(const char *name, const char *dev, unsigned int q)
{
	static long long pkts[SWQ_MINORS];
	long long n;

	if (switch_pkts(name, dev, pkts) < 0)
		return -1;
	n = pkts[SWQ_SHORT];
	for (unsigned int b = 0; b < SWQ; b++)
		n += pkts[SWQ_LEAF(q, b)];
	return n;
}

static uint16_t icmp_sum(const void *data, size_t len)
{
	const uint8_t *b = data;
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		s += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (len & 1)
		s += (uint32_t)b[len - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return htons((uint16_t)~s);
}

/*
 * One ICMP echo from namespace ns to dst, answered within the deadline (up
 * to 5 requests, one a second: the first may wait for ARP). 0, or -1.
 */
static int ping_from(const char *ns, const char *dst)
{
	struct sockaddr_in to = {.sin_family = AF_INET};
	uint16_t id = (uint16_t)getpid();
	int self, nsfd, fd;
	char path[256];

	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (self < 0 || nsfd < 0 || setns(nsfd, CLONE_NEWNET) < 0)
		return -1;
	fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
	assert_int_equal(setns(self, CLONE_NEWNET), 0);
	close(self);
	close(nsfd);
	if (fd < 0 || inet_pton(AF_INET, dst, &to.sin_addr) != 1)
		return -1;
	for (uint16_t seq = 1; seq <= 5; seq++) {
		struct icmphdr req = {.type = ICMP_ECHO};
		uint64_t until = mono_ms() + 1000;

		req.un.echo.id = htons(id);
		req.un.echo.sequence = htons(seq);
		req.checksum = icmp_sum(&req, sizeof(req));
		if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&to, sizeof(to)) < 0)
			continue;
		while (mono_ms() < until) {
			struct pollfd p = {.fd = fd, .events = POLLIN};
			uint8_t buf[256];
			const struct icmphdr *rep;
			size_t ihl;
			ssize_t n;

			if (poll(&p, 1, (int)(until - mono_ms())) <= 0)
				break;
			n = recv(fd, buf, sizeof(buf), 0);
			if (n < (ssize_t)sizeof(struct iphdr))
				continue;
			ihl = (size_t)((const struct iphdr *)buf)->ihl * 4;
			if ((size_t)n < ihl + sizeof(*rep))
				continue;
			rep = (const void *)(buf + ihl);
			if (rep->type == ICMP_ECHOREPLY && rep->un.echo.id == htons(id)) {
				close(fd);
				return 0;
			}
		}
	}
	close(fd);
	return -1;
}

static void test_up_check_down(void **state)
{
	char name[32], out[16384], subnet[64], dst[80], ns0[80];
	int rc;

	(void)state;
	run_name(name, sizeof(name), 'a');
	rc = run_script(out, sizeof(out), 180,
			(const char *const[]){"up", "--name", name, "--hosts", "3", "--classes",
					      "8", "--rate", "100mbit", "--build", BUILDDIR,
					      "--timeout", "90", NULL});
	if (rc != 0) {
		force_down(name);
		fail_msg("up exited %d:\n%s", rc, out);
	}
	print_message("%s", out);
	assert_non_null(strstr(out, "down --name"));

	assert_agents_connected(name);
	assert_switch_queues(name);
	/* the agents report their flows' bytes every 10 ms (--stats-interval's default) */
	assert_int_equal(sh_out(out, sizeof(out),
				"ps -eo args= | grep -F -- '--admin-socket " STATE_BASE
				"/%s/agent' | grep -v grep",
				name),
			 0);
	{
		int n = 0;

		for (const char *q = out; (q = strstr(q, "--stats-interval 10\n")); q++)
			n++;
		if (n != HOSTS)
			fail_msg("%d of %d agents started with --stats-interval 10:\n%s", n, HOSTS,
				 out);
	}
	state_value(name, "SUBNET", subnet, sizeof(subnet));
	assert_true(subnet[0] != 0);
	snprintf(dst, sizeof(dst), "%s.%d", subnet, HOSTS);
	snprintf(ns0, sizeof(ns0), "loomc-%s-h0", name);
	if (ping_from(ns0, dst) != 0) {
		force_down(name);
		fail_msg("no ICMP echo reply from host 2 (%s) to host 0", dst);
	}
	rc = run_script(out, sizeof(out), 60,
			(const char *const[]){"status", "--name", name, NULL});
	if (rc != 0)
		fail_msg("status exited %d:\n%s", rc, out);
	assert_non_null(strstr(out, "agents running: 3"));

	rc = run_script(out, sizeof(out), 120, (const char *const[]){"down", "--name", name, NULL});
	if (rc != 0)
		fail_msg("down exited %d:\n%s", rc, out);
	assert_nothing_left(name);
}

/* SIGINT while up builds (32 hosts: long enough to be caught half-way) tears down; exit 130. */
static void test_interrupted_up(void **state)
{
	char name[32], log[128], h1[80], out[16384];
	uint64_t deadline = mono_ms() + 120000;
	pid_t pid;
	int status;

	(void)state;
	run_name(name, sizeof(name), 'b');
	snprintf(log, sizeof(log), "/tmp/loom-cluster-test-%s.log", name);
	snprintf(h1, sizeof(h1), "loomc-%s-h1", name);
	pid = spawn(log, (const char *const[]){"up", "--name", name, "--hosts", "32", "--build",
					       BUILDDIR, "--timeout", "90", NULL});
	/* half-way: hosts are being made */
	while (!ns_exists(h1) && mono_ms() < deadline && waitpid(pid, &status, WNOHANG) == 0)
		sleep_ms(5);
	assert_true(ns_exists(h1));
	assert_int_equal(kill(pid, SIGINT), 0);
	status = wait_until(pid, mono_ms() + 120000);
	slurp(log, out, sizeof(out));
	unlink(log);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 130) {
		force_down(name);
		fail_msg("up after SIGINT: wait status %#x (expected exit 130); it printed:\n%s",
			 (unsigned)status, out);
	}
	assert_non_null(strstr(out, "SIGINT"));
	assert_nothing_left(name);
}

/* A foreground up killed with SIGKILL leaves a stale run; down --name removes it whole. */
static void test_killed_up_then_down(void **state)
{
	char name[32], log[128], st[64], out[16384], ns[4096];
	uint64_t deadline = mono_ms() + 120000;
	pid_t pid;
	int status = 0, rc;

	(void)state;
	run_name(name, sizeof(name), 'c');
	snprintf(log, sizeof(log), "/tmp/loom-cluster-test-%s.log", name);
	pid = spawn(log, (const char *const[]){"up", "--foreground", "--name", name, "--hosts", "3",
					       "--switch-queues", "1", "--build", BUILDDIR,
					       "--timeout", "90", NULL});
	for (st[0] = 0; strcmp(st, "up") != 0 && mono_ms() < deadline; sleep_ms(50)) {
		state_value(name, "STATUS", st, sizeof(st));
		if (waitpid(pid, &status, WNOHANG) == pid) {
			pid = 0;
			break;
		}
	}
	if (strcmp(st, "up") != 0) {
		slurp(log, out, sizeof(out));
		if (pid > 0)
			wait_until(pid, 0);
		force_down(name);
		fail_msg("foreground up did not come up; it printed:\n%s", out);
	}
	/* --switch-queues 1: one queue per class, 1:10 .. 1:17, as the DSCP filters name them */
	rc = sh_out(out, sizeof(out),
		    "tc -n loomc-%s-sw class show dev p2; "
		    "tc -n loomc-%s-sw filter show dev p2",
		    name, name);
	for (int q = 0; q < CLASSES && rc == 0; q++) {
		char want[64];

		snprintf(want, sizeof(want), "class htb 1:1%x parent 1:1 prio %d ", q, q);
		if (!strstr(out, want))
			rc = -1;
		snprintf(want, sizeof(want), "*flowid 1:1%x", q);
		if (!strstr(out, want))
			rc = -1;
	}
	if (rc != 0 || strstr(out, "1:100") || strstr(out, "1:ff")) {
		kill(pid, SIGKILL);
		wait_until(pid, mono_ms() + 30000);
		force_down(name);
		fail_msg("--switch-queues 1: not one queue per class on p2:\n%s", out);
	}
	assert_int_equal(kill(pid, SIGKILL), 0);
	status = wait_until(pid, mono_ms() + 30000);
	unlink(log);
	assert_true(status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	/* the run is still there, and status calls it stale */
	run_namespaces(name, ns, sizeof(ns));
	assert_true(ns[0] != 0);
	rc = run_script(out, sizeof(out), 60, (const char *const[]){"status", NULL});
	assert_int_equal(rc, 0);
	if (!strstr(out, name) || !strstr(out, "died"))
		fail_msg("status does not list run %s as stale:\n%s", name, out);

	rc = run_script(out, sizeof(out), 120, (const char *const[]){"down", "--name", name, NULL});
	if (rc != 0)
		fail_msg("down exited %d:\n%s", rc, out);
	assert_nothing_left(name);
}

/* Bad flags: exit 2, a message naming the flag, and nothing made. */
static void test_bad_flags(void **state)
{
	static const struct {
		const char *args[4], *says;
	} cases[] = {
		{{"up", "--hosts", "0"}, "--hosts"},
		{{"up", "--hosts", "33"}, "--hosts"},
		{{"up", "--hosts", "many"}, "--hosts"},
		{{"up", "--rate", "5"}, "--rate"},
		{{"up", "--rate", "100mbps"}, "--rate"},
		{{"up", "--rate", "20gbit"}, "--rate"},
		{{"up", "--classes", "9"}, "--classes"},
		{{"up", "--classes", "0"}, "--classes"},
		{{"up", "--switch-queues", "3"}, "--switch-queues"},
		{{"up", "--switch-queues", "128"}, "--switch-queues"},
		{{"up", "--switch-queues", "0"}, "--switch-queues"},
		{{"up", "--stats-interval", "0"}, "--stats-interval"},
		{{"up", "--stats-interval", "2000"}, "--stats-interval"},
		{{"up", "--name", "Bad-Name"}, "--name"},
		{{"up", "--timeout", "0"}, "--timeout"},
		{{"up", "--hosts"}, "--hosts"},
		{{"up", "--frobnicate"}, "--frobnicate"},
		{{"down"}, "--name"},
		{{"run"}, "TRACE"},
		{{"run", "--chaos-at", "1", "t.loom"}, "--chaos-at"},
		{{"run", "--chaos-at", "0", "t.loom"}, "--chaos-at"},
		{{"run", "--chaos-host", "x", "t.loom"}, "--chaos-host"},
		{{"fault", "--down", "99", "loomd"}, "--down"},
		{{"fault", "nothing"}, "fault takes"},
		{{"fault", "agent", "x"}, "HOST"},
		{{"frobnicate"}, "frobnicate"},
	};
	char out[8192];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *args[8] = {NULL};
		int k = 0, rc;

		for (int a = 0; a < 4 && cases[i].args[a]; a++)
			args[k++] = cases[i].args[a];
		args[k] = NULL;
		rc = run_script(out, sizeof(out), 60, args);
		if (rc != 2 || !strstr(out, cases[i].says))
			fail_msg("case %zu (%s %s %s): exit %d, expected 2 and a message naming "
				 "'%s':\n%s",
				 i, args[0], args[1] ? args[1] : "",
				 args[1] && args[2] ? args[2] : "", rc, cases[i].says, out);
	}
}

/* Not root: exit 2, saying so (run as nobody through setpriv). */
static void test_not_root(void **state)
{
	char out[4096];
	int rc;

	(void)state;
	rc = sh_out(out, sizeof(out),
		    "setpriv --reuid=65534 --regid=65534 --clear-groups bash %s up --hosts 3 2>&1",
		    SCRIPT);
	if (rc != 2 || !strstr(out, "root"))
		fail_msg("as nobody: exit %d, expected 2 and a message about root:\n%s", rc, out);
}

/* ---- loom-cluster run: loom-run on a live cluster ------------------------------------------- */

/*
 * The workload: 4 jobs on 3 hosts, played with --bytes-scale 2 --time-scale
 * 0.5: a two-stage job, a job whose second coflow has no flows (and a flow
 * from a host to itself), a job of one flowless coflow, and a diamond.
 */
static const char RUN_TRACE[] = "loom-trace 1 hosts 3\n"
				"job 1 0 1\n"
				"coflow 10 1 0\n"
				"flow 10 0 1 400000\n"
				"flow 10 2 1 200000\n"
				"coflow 11 1 0\n"
				"flow 11 1 2 100000\n"
				"edge 10 11 20\n"
				"job 2 50 2\n"
				"coflow 20 2 10\n"
				"flow 20 2 0 300000\n"
				"flow 20 0 0 1000\n"
				"coflow 21 2 0\n"
				"edge 20 21 5\n"
				"job 3 80 1\n"
				"coflow 30 3 0\n"
				"job 4 100 1\n"
				"coflow 40 4 0\n"
				"flow 40 1 0 250000\n"
				"flow 40 1 2 250000\n"
				"coflow 41 4 0\n"
				"flow 41 0 2 100000\n"
				"coflow 42 4 0\n"
				"flow 42 2 1 50000\n"
				"edge 40 42 0\n"
				"edge 41 42 0\n";
#define RUN_JOBS    4
#define RUN_COFLOWS 8
#define RUN_FLOWS   9

struct csv_row {
	uint64_t v[9];
	bool empty[9];
	char bin[32];
};

/* dir = /tmp/loom-TAG-PID (made here), trace = dir/in.loom holding text. */
static void trace_file(char *dir, size_t dsize, char *trace, size_t tsize, const char *tag,
		       const char *text)
{
	FILE *f;

	snprintf(dir, dsize, "/tmp/loom-%s-%d", tag, (int)getpid());
	snprintf(trace, tsize, "%s/in.loom", dir);
	assert_int_equal(mkdir(dir, 0700), 0);
	f = fopen(trace, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* `up` of run name with hosts hosts and enforcer (NULL: the default), or the test fails. */
static void up_or_fail(const char *name, const char *hosts, const char *enforcer)
{
	const char *args[] = {"up",     "--name",    name, "--hosts", hosts, "--build",
			      BUILDDIR, "--timeout", "90", NULL,      NULL,  NULL};
	char out[16384];
	int rc;

	if (enforcer) {
		args[9] = "--enforcer";
		args[10] = enforcer;
	}
	rc = run_script(out, sizeof(out), 180, args);
	if (rc != 0) {
		force_down(name);
		fail_msg("up%s%s exited %d:\n%s", enforcer ? " --enforcer " : "",
			 enforcer ? enforcer : "", rc, out);
	}
	if (enforcer)
		print_message("%s", out);
}

/*
 * Reads a CSV file of loom-replay's (header exactly `header`) into rows of
 * unsigned fields (column `text_col`, if any, kept as text); the row count.
 */
static int read_csv(const char *path, const char *header, int text_col, struct csv_row *rows,
		    int max)
{
	char buf[8192], *line, *save = NULL;
	int n = 0;

	slurp(path, buf, sizeof(buf));
	line = strtok_r(buf, "\n", &save);
	if (!line)
		fail_msg("%s is empty", path);
	assert_string_equal(line, header);
	while ((line = strtok_r(NULL, "\n", &save))) {
		struct csv_row *r = &rows[n];
		char *p = line;

		if (n == max)
			fail_msg("%s: more than %d rows", path, max);
		memset(r, 0, sizeof(*r));
		for (int c = 0; c < 9 && p; c++) {
			char *end = strchr(p, ',');
			size_t len = end ? (size_t)(end - p) : strlen(p);

			r->empty[c] = len == 0;
			if (c == text_col)
				snprintf(r->bin, sizeof(r->bin), "%.*s", (int)len, p);
			else if (len)
				r->v[c] = strtoull(p, NULL, 10);
			p = end ? end + 1 : NULL;
		}
		n++;
	}
	return n;
}

static const struct csv_row *row_of(const struct csv_row *rows, int n, uint64_t id)
{
	for (int i = 0; i < n; i++)
		if (rows[i].v[0] == id)
			return &rows[i];
	fail_msg("no row for id %llu", (unsigned long long)id);
	return NULL;
}

static void test_run_trace(void **state)
{
	static const struct {
		uint64_t id, arrival_ns, weight;
	} jobs[RUN_JOBS] = {{1, 0, 1}, {2, 25000000, 2}, {3, 40000000, 1}, {4, 50000000, 1}};
	static const struct {
		uint64_t id, job, bytes, width;
	} coflows[RUN_COFLOWS] = {{10, 1, 1200000, 2}, {11, 1, 200000, 1}, {20, 2, 602000, 2},
				  {21, 2, 0, 0},       {30, 3, 0, 0},      {40, 4, 1000000, 2},
				  {41, 4, 200000, 1},  {42, 4, 100000, 1}};
	/* parent, child, scaled delay */
	static const uint64_t edges[][3] = {
		{10, 11, 10000000}, {20, 21, 2500000}, {40, 42, 0}, {41, 42, 0}};
	char name[32], dir[128], trace[160], path[256], out[16384];
	struct csv_row jr[8], cr[16];
	int rc, n;

	(void)state;
	run_name(name, sizeof(name), 'd');
	trace_file(dir, sizeof(dir), trace, sizeof(trace), "run-test", RUN_TRACE);
	up_or_fail(name, "3", NULL);
	snprintf(path, sizeof(path), "%s/out", dir);
	rc = run_script(out, sizeof(out), 180,
			(const char *const[]){"run", "--name", name, "--build", BUILDDIR, trace,
					      "--out", path, "--bytes-scale", "2", "--time-scale",
					      "0.5", "--timeout", "120", "--verbose", NULL});
	if (rc != 0) {
		force_down(name);
		fail_msg("run exited %d:\n%s", rc, out);
	}
	print_message("%s", out);
	if (!strstr(out, "4 of 4 jobs, 8 coflows, 9 of 9 flows")) {
		force_down(name);
		fail_msg("run did not say every job, coflow and flow finished:\n%s", out);
	}

	/*
	 * The switch's flow queues: coflow 10's flows from hosts 0 and 2 into
	 * host 1 share a class but went through different flow queues of port
	 * p1 (the source address's bits tell them apart); their
	 * acknowledgements (short packets) through the short packets' queue of
	 * p0 and p2.
	 */
	{
		static long long pk[SWQ_MINORS];
		int used = 0;

		if (switch_pkts(name, "p1", pk) < 0) {
			force_down(name);
			fail_msg("no class statistics from the switch's port p1");
		}
		/*
		 * Some class of p1 carried packets from host 0 (address .1:
		 * address bucket 1) and from host 2 (.3: bucket 3) in the flow
		 * queues of those buckets: leaves (q, h * 2^SWQ_PB + b).
		 */
		for (unsigned int q = 0; q < CLASSES; q++) {
			bool h1 = false, h3 = false;

			for (unsigned int b = 0; b < 1u << SWQ_PB; b++) {
				h1 = h1 || pk[SWQ_LEAF(q, (1u << SWQ_PB) + b)] > 0;
				h3 = h3 || pk[SWQ_LEAF(q, (3u << SWQ_PB) + b)] > 0;
			}
			used += h1 && h3;
		}
		print_message("switch p1: %d class(es) with packets in both hosts' flow queues\n",
			      used);
		if (used < 1) {
			force_down(name);
			fail_msg(
				"switch p1: no class whose flow queues of host 0 (address bucket 1) "
				"and of host 2 (bucket 3) both carried packets");
		}
		for (int p = 0; p < HOSTS; p += 2) {
			char dev[8];

			snprintf(dev, sizeof(dev), "p%d", p);
			assert_int_equal(switch_pkts(name, dev, pk), 0);
			if (pk[SWQ_SHORT] <= 0) {
				force_down(name);
				fail_msg(
					"switch %s: no packet through the short packets' queue 1:ff",
					dev);
			}
		}
	}

	/* loomd saw every flow announced, and the finished jobs are gone from it */
	rc = sh_out(out, sizeof(out), "%s --socket " STATE_BASE "/%s/admin.sock --json stats",
		    LOOMCTL, name);
	{
		json_t *j = json_loads(out, 0, NULL);
		json_int_t announced = json_integer_value(json_object_get(j, "flows_announced"));
		json_int_t held = json_integer_value(json_object_get(j, "jobs"));
		json_int_t errors = json_integer_value(json_object_get(j, "errors"));

		json_decref(j);
		force_down(name);
		assert_int_equal(rc, 0);
		assert_int_equal(announced, RUN_FLOWS);
		assert_int_equal(held, 0);
		assert_int_equal(errors, 0);
	}
	assert_nothing_left(name);

	/* the jobs: one row each, scaled arrivals, finished after they arrived */
	snprintf(path, sizeof(path), "%s/out/live-jobs.csv", dir);
	n = read_csv(path, "job_id,arrival_ns,finish_ns,jct_ns,weight", -1, jr, 8);
	assert_int_equal(n, RUN_JOBS);
	for (int i = 0; i < RUN_JOBS; i++) {
		const struct csv_row *r = row_of(jr, n, jobs[i].id);

		assert_int_equal(r->v[1], jobs[i].arrival_ns);
		assert_false(r->empty[2]);
		assert_true(r->v[2] >= r->v[1]);
		assert_int_equal(r->v[3], r->v[2] - r->v[1]);
		assert_int_equal(r->v[4], jobs[i].weight);
	}
	/* the coflows: scaled bytes, released after their job arrived, finished */
	snprintf(path, sizeof(path), "%s/out/live-coflows.csv", dir);
	n = read_csv(path,
		     "coflow_id,job_id,release_ns,finish_ns,cct_ns,bytes,width,bin,isolation_ns", 7,
		     cr, 16);
	assert_int_equal(n, RUN_COFLOWS);
	for (int i = 0; i < RUN_COFLOWS; i++) {
		const struct csv_row *r = row_of(cr, n, coflows[i].id);
		const struct csv_row *j = row_of(jr, RUN_JOBS, coflows[i].job);

		assert_int_equal(r->v[1], coflows[i].job);
		assert_false(r->empty[2] || r->empty[3]);
		assert_true(r->v[2] >= j->v[1]);
		assert_true(r->v[3] >= r->v[2] && r->v[3] <= j->v[2]);
		assert_int_equal(r->v[4], r->v[3] - r->v[2]);
		assert_int_equal(r->v[5], coflows[i].bytes);
		assert_int_equal(r->v[6], coflows[i].width);
		assert_string_equal(r->bin, "short_narrow");
		assert_false(r->empty[8]);
	}
	/* no child before its parent's finish plus the scaled delay */
	for (size_t e = 0; e < sizeof(edges) / sizeof(edges[0]); e++) {
		const struct csv_row *p = row_of(cr, n, edges[e][0]);
		const struct csv_row *c = row_of(cr, n, edges[e][1]);

		if (c->v[2] < p->v[3] + edges[e][2])
			fail_msg(
				"coflow %llu released at %llu ns, before parent %llu's finish %llu "
				"+ %llu ns",
				(unsigned long long)edges[e][1], (unsigned long long)c->v[2],
				(unsigned long long)edges[e][0], (unsigned long long)p->v[3],
				(unsigned long long)edges[e][2]);
	}
	/* the scaled trace and the topology loom-replay predicts from */
	snprintf(path, sizeof(path), "%s/out/trace.loom", dir);
	slurp(path, out, sizeof(out));
	assert_non_null(strstr(out, "\njob 2 25 2\n"));
	assert_non_null(strstr(out, "\nflow 10 0 1 800000\n"));
	assert_non_null(strstr(out, "\nedge 10 11 10\n"));
	snprintf(path, sizeof(path), "%s/out/topology.json", dir);
	slurp(path, out, sizeof(out));
	assert_non_null(strstr(out, "100000000"));
	sh_out(out, sizeof(out), "rm -rf '%s'", dir);
}

/*
 * run --chaos: 8 two-stage jobs on 3 hosts, arriving 150 ms apart, each
 * flow 1.5 MB (about 0.12 s at 100 Mbit/s), so that flows are running when
 * loomd dies.
 */
static const char CHAOS_TRACE[] =
	"loom-trace 1 hosts 3\n"
	"job 1 0 1\ncoflow 10 1 0\nflow 10 1 2 1500000\nflow 10 2 0 1500000\n"
	"coflow 11 1 0\nflow 11 2 1 1500000\nedge 10 11 20\n"
	"job 2 150 1\ncoflow 20 2 0\nflow 20 2 0 1500000\nflow 20 0 1 1500000\n"
	"coflow 21 2 0\nflow 21 0 2 1500000\nedge 20 21 20\n"
	"job 3 300 1\ncoflow 30 3 0\nflow 30 0 1 1500000\nflow 30 1 2 1500000\n"
	"coflow 31 3 0\nflow 31 1 0 1500000\nedge 30 31 20\n"
	"job 4 450 1\ncoflow 40 4 0\nflow 40 1 2 1500000\nflow 40 2 0 1500000\n"
	"coflow 41 4 0\nflow 41 2 1 1500000\nedge 40 41 20\n"
	"job 5 600 1\ncoflow 50 5 0\nflow 50 2 0 1500000\nflow 50 0 1 1500000\n"
	"coflow 51 5 0\nflow 51 0 2 1500000\nedge 50 51 20\n"
	"job 6 750 1\ncoflow 60 6 0\nflow 60 0 1 1500000\nflow 60 1 2 1500000\n"
	"coflow 61 6 0\nflow 61 1 0 1500000\nedge 60 61 20\n"
	"job 7 900 1\ncoflow 70 7 0\nflow 70 1 2 1500000\nflow 70 2 0 1500000\n"
	"coflow 71 7 0\nflow 71 2 1 1500000\nedge 70 71 20\n"
	"job 8 1050 1\ncoflow 80 8 0\nflow 80 2 0 1500000\nflow 80 0 1 1500000\n"
	"coflow 81 8 0\nflow 81 0 2 1500000\nedge 80 81 20\n";
#define CHAOS_JOBS 8

/* The jobs CSV at path has one finished row for each of the trace's jobs 1..CHAOS_JOBS. */
static void assert_jobs_once(const char *path)
{
	struct csv_row jr[CHAOS_JOBS + 4];
	int n = read_csv(path, "job_id,arrival_ns,finish_ns,jct_ns,weight", -1, jr, CHAOS_JOBS + 4);

	assert_int_equal(n, CHAOS_JOBS);
	for (uint64_t id = 1; id <= CHAOS_JOBS; id++) {
		int seen = 0;

		for (int i = 0; i < n; i++) {
			if (jr[i].v[0] != id)
				continue;
			seen++;
			if (jr[i].empty[2] || jr[i].v[2] < jr[i].v[1])
				fail_msg("%s: job %llu did not finish", path,
					 (unsigned long long)id);
		}
		if (seen != 1)
			fail_msg("%s: job %llu in %d rows", path, (unsigned long long)id, seen);
	}
}

/*
 * run --chaos: loomd SIGKILLed with jobs under way and restarted from its
 * journal, host 1's agent SIGKILLed and restarted; every job of both runs
 * finishes exactly once, the agents were fail-static while loomd was away,
 * loomd and that agent are new processes (the others are not), loomd holds
 * no job afterwards, and down leaves nothing.
 */
static void test_run_chaos(void **state)
{
	char name[32], dir[128], trace[160], path[256], out[16384], report[8192];
	char loomd0[32], agents0[128], loomd1[32], agents1[128], procs[4096];
	char a0[3][16], a1[3][16];
	const char *p;
	int rc, n;

	(void)state;
	run_name(name, sizeof(name), 'f');
	trace_file(dir, sizeof(dir), trace, sizeof(trace), "chaos-test", CHAOS_TRACE);
	up_or_fail(name, "3", NULL);
	state_value(name, "LOOMD_PID", loomd0, sizeof(loomd0));
	state_value(name, "AGENT_PIDS", agents0, sizeof(agents0));
	snprintf(path, sizeof(path), "%s/out", dir);
	rc = run_script(out, sizeof(out), 300,
			(const char *const[]){"run", "--name", name, "--build", BUILDDIR, "--chaos",
					      "--down", "0.5", trace, "--out", path, "--timeout",
					      "120", NULL});
	state_value(name, "LOOMD_PID", loomd1, sizeof(loomd1));
	state_value(name, "AGENT_PIDS", agents1, sizeof(agents1));
	n = run_processes(name, procs, sizeof(procs));
	snprintf(path, sizeof(path), "%s/out/chaos-report.txt", dir);
	slurp(path, report, sizeof(report));
	if (rc != 0) {
		force_down(name);
		fail_msg("run --chaos exited %d:\n%s\nreport:\n%s", rc, out, report);
	}
	print_message("%s", report);
	/* loomd holds no job after the run */
	rc = sh_out(out, sizeof(out), "%s --socket " STATE_BASE "/%s/admin.sock --json stats",
		    LOOMCTL, name);
	{
		json_t *j = json_loads(out, 0, NULL);
		json_int_t held = json_integer_value(json_object_get(j, "jobs"));

		json_decref(j);
		force_down(name);
		assert_int_equal(rc, 0);
		assert_int_equal(held, 0);
	}
	assert_nothing_left(name);
	/* one loomd and one agent per host ran after the faults: nothing was left behind */
	if (n != 1 + HOSTS)
		fail_msg("%d processes of the run after the faults, expected %d:\n%s", n, 1 + HOSTS,
			 procs);
	/* loomd and host 1's agent are new processes, hosts 0 and 2 kept theirs */
	assert_true(loomd0[0] && loomd1[0]);
	assert_string_not_equal(loomd0, loomd1);
	assert_int_equal(sscanf(agents0, "%15s %15s %15s", a0[0], a0[1], a0[2]), 3);
	assert_int_equal(sscanf(agents1, "%15s %15s %15s", a1[0], a1[1], a1[2]), 3);
	assert_string_equal(a0[0], a1[0]);
	assert_string_not_equal(a0[1], a1[1]);
	assert_string_equal(a0[2], a1[2]);
	/* the report: every job once, loomd and the agent restarted, fail-static meanwhile */
	assert_non_null(strstr(report, "jobs: 8 in the trace; chaos-jobs.csv: 8 rows, 8 distinct, "
				       "8 finished; loomd holds 0 jobs"));
	assert_non_null(strstr(report, "avg JCT: clean "));
	assert_non_null(strstr(report, "fault: loomd restarted from its journal: pid "));
	assert_non_null(strstr(report, "fault: all 3 agents reconnected"));
	assert_non_null(strstr(report, "fault: agent of host 1 restarted: pid "));
	assert_null(strstr(report, "not fail-static"));
	n = 0;
	for (p = report; (p = strstr(p, "disconnected, still enforcing table version")); p++)
		n++;
	assert_int_equal(n, HOSTS);
	/* both runs' per-job CSV files: each job exactly once, finished */
	snprintf(path, sizeof(path), "%s/out/clean-jobs.csv", dir);
	assert_jobs_once(path);
	snprintf(path, sizeof(path), "%s/out/chaos-jobs.csv", dir);
	assert_jobs_once(path);
	sh_out(out, sizeof(out), "rm -rf '%s'", dir);
}

/* loom-run's own bad flags exit 2 naming the flag; a bad trace exits 1 naming its line. */
static void test_run_bad_flags(void **state)
{
	/* full: the flags after every required one, right, and a trace that is wrong */
	static const struct {
		const char *args;
		int rc;
		const char *says;
		bool full;
	} cases[] = {
		{"", 2, "--trace", false},
		{"--trace T --topo T --controller C --netns n", 2, "--first-addr", false},
		{"--bytes-scale 0", 2, "--bytes-scale", false},
		{"--bytes-scale x", 2, "--bytes-scale", false},
		{"--time-scale -1", 2, "--time-scale", false},
		{"--port 0", 2, "--port", false},
		{"--port 20000", 2, "--port", false},
		{"--timeout 0", 2, "--timeout", false},
		{"--netns a/b", 2, "--netns", false},
		{"--first-addr 10.1", 2, "--first-addr", false},
		{"--format nope", 2, "--format", false},
		{"--retry 4000", 2, "--retry", false},
		{"--hook 0.5", 2, "--hook", false},
		{"--hook 1:true", 2, "--hook", false},
		{"--hook 0:true", 2, "--hook", false},
		{"--hook x:true", 2, "--hook", false},
		{"--hook 0.1:a --hook 0.2:b --hook 0.3:c --hook 0.4:d --hook 0.5:e", 2, "--hook",
		 false},
		{"--frobnicate", 2, "frobnicate", false},
		{"--congestion 'bbr x'", 2, "--congestion", false},
		{"--congestion CUBIC", 2, "--congestion", false},
		{"--congestion abcdefghijklmnop", 2, "--congestion", false},
		{"", 1, "bad.loom:2:", true},
		/* an algorithm this kernel lacks: refused before the trace is read */
		{"--congestion nosuchcc9", 2, "--congestion: 'nosuchcc9' cannot be used here",
		 true},
	};
	char dir[128], bad[160], topo[160], outdir[160], out[4096], args[600];
	FILE *f;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/loom-run-flags-%d", (int)getpid());
	snprintf(bad, sizeof(bad), "%s/bad.loom", dir);
	snprintf(topo, sizeof(topo), "%s/topo.json", dir);
	snprintf(outdir, sizeof(outdir), "%s/out", dir);
	assert_int_equal(mkdir(dir, 0700), 0);
	f = fopen(bad, "w");
	assert_non_null(f);
	fputs("loom-trace 1 hosts 2\njob 1 zero 1\n", f);
	assert_int_equal(fclose(f), 0);
	f = fopen(topo, "w");
	assert_non_null(f);
	fputs("{\"hosts\": 2, \"link_bps\": 100000000}\n", f);
	assert_int_equal(fclose(f), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc;

		if (!cases[i].full)
			snprintf(args, sizeof(args), "%s", cases[i].args);
		else
			snprintf(args, sizeof(args),
				 "--trace %s --topo %s --controller unix:/nonexistent --netns x "
				 "--first-addr 10.0.0.1 --out %s %s",
				 bad, topo, outdir, cases[i].args);
		rc = sh_out(out, sizeof(out), "%s %s 2>&1", LOOMRUN, args);
		if (rc != cases[i].rc || !strstr(out, cases[i].says))
			fail_msg("loom-run %s: exit %d, expected %d and a message naming '%s':\n%s",
				 args, rc, cases[i].rc, cases[i].says, out);
	}
	sh_out(out, sizeof(out), "rm -rf '%s'", dir);
}

/* ---- the DPDK variant: up --enforcer dpdk ---------------------------------------------------- */

#define DPDK_FLOW_BYTES 3000000
#define DPDK_FLOW_PKTS  (DPDK_FLOW_BYTES / 1448) /* full-sized TCP segments */

/* An agent's admin "stats" reply (loomctl --json), or NULL. */
static json_t *agent_stats(const char *name, int host)
{
	char out[16384];

	if (sh_out(out, sizeof(out), "%s --socket " STATE_BASE "/%s/agent%d.sock --json stats",
		   LOOMCTL, name, host) != 0)
		return NULL;
	return json_loads(out, 0, NULL);
}

static uint64_t enforcer_stat(json_t *st, const char *key)
{
	json_t *v = json_object_get(json_object_get(st, "enforcer_stats"), key);

	if (!json_is_integer(v))
		fail_msg("no enforcer_stats.%s in the agent's stats", key);
	return (uint64_t)json_integer_value(v);
}

/* Both agents connected to loomd with the dpdk enforcer. */
static void assert_dpdk_agents(const char *name)
{
	char out[16384];
	json_t *j, *a;
	size_t i;

	assert_int_equal(sh_out(out, sizeof(out),
				"%s --socket " STATE_BASE "/%s/admin.sock --json agents", LOOMCTL,
				name),
			 0);
	j = json_loads(out, 0, NULL);
	if (!json_is_array(j) || json_array_size(j) != 2)
		fail_msg("loomctl agents: not 2 agents:\n%s", out);
	json_array_foreach(j, i, a)
	{
		assert_string_equal(json_string_value(json_object_get(a, "enforcer")), "dpdk");
		assert_int_equal(json_integer_value(json_object_get(a, "classes")), CLASSES);
	}
	json_decref(j);
}

/* Nothing of DPDK's is left of run name: its agents' runtime folders (--file-prefix). */
static void assert_no_dpdk_files(const char *name)
{
	char out[4096];

	sh_out(out, sizeof(out), "ls -d /var/run/dpdk/loomc-%s-* /dev/shm/*loomc-%s* 2>/dev/null",
	       name, name);
	if (out[0])
		fail_msg("DPDK files of run %s left:\n%s", name, out);
}

static void test_dpdk_variant(void **state)
{
	char name[32], dir[128], trace[160], path[256], out[16384], text[128];
	json_t *st0, *st1;
	uint64_t pkts[CLASSES], known;
	unsigned int k = 0;
	long long queued;
	int rc;

	(void)state;
	run_name(name, sizeof(name), 'e');
	snprintf(text, sizeof(text),
		 "loom-trace 1 hosts 2\njob 1 0 1\ncoflow 10 1 0\nflow 10 0 1 %d\n",
		 DPDK_FLOW_BYTES);
	trace_file(dir, sizeof(dir), trace, sizeof(trace), "run-dpdk", text);
	up_or_fail(name, "2", "dpdk");
	assert_dpdk_agents(name);

	snprintf(path, sizeof(path), "%s/out", dir);
	rc = run_script(out, sizeof(out), 180,
			(const char *const[]){"run", "--name", name, "--build", BUILDDIR, trace,
					      "--out", path, "--timeout", "120", NULL});
	if (rc != 0 || !strstr(out, "1 of 1 jobs, 1 coflows, 1 of 1 flows")) {
		force_down(name);
		fail_msg("run through the DPDK bumps exited %d:\n%s", rc, out);
	}
	print_message("%s", out);

	/*
	 * Host 0's agent: most of the flow's packets in one class k, classified
	 * by the table (known; packets sent before the agent has the flow's
	 * entry go in the default class), none dropped.
	 */
	st0 = agent_stats(name, 0);
	st1 = agent_stats(name, 1);
	if (!st0 || !st1) {
		force_down(name);
		fail_msg("no stats from the agents' admin sockets");
	}
	for (unsigned int c = 0; c < CLASSES; c++) {
		char key[32];

		snprintf(key, sizeof(key), "class%u_packets", c);
		pkts[c] = enforcer_stat(st0, key);
		if (pkts[c] > pkts[k])
			k = c;
	}
	known = enforcer_stat(st0, "known");
	print_message("host 0's agent: packets per class %llu %llu %llu %llu %llu %llu %llu %llu, "
		      "known %llu, returned %llu; host 1's agent returned %llu\n",
		      (unsigned long long)pkts[0], (unsigned long long)pkts[1],
		      (unsigned long long)pkts[2], (unsigned long long)pkts[3],
		      (unsigned long long)pkts[4], (unsigned long long)pkts[5],
		      (unsigned long long)pkts[6], (unsigned long long)pkts[7],
		      (unsigned long long)known,
		      (unsigned long long)enforcer_stat(st0, "return_packets"),
		      (unsigned long long)enforcer_stat(st1, "return_packets"));
	assert_true(pkts[k] >= DPDK_FLOW_PKTS / 2);
	assert_true(known >= pkts[k] || k == CLASSES - 1);
	assert_int_equal(enforcer_stat(st0, "dropped_packets"), 0);
	/* the data reached host 1, and its ACKs host 0, through the bumps' return paths */
	assert_true(enforcer_stat(st1, "return_packets") >= DPDK_FLOW_PKTS);
	assert_true(enforcer_stat(st0, "return_packets") > 0);
	json_decref(st0);
	json_decref(st1);

	/*
	 * They reached the switch with class k's DSCP: its port towards host 1
	 * sent at least as many packets from class k's flow queues (DSCP
	 * 8 * (7 - k)) and the short packets' queue, which host 0's agent is
	 * the only source of.
	 */
	queued = switch_class_pkts(name, "p1", k);
	print_message("switch p1: class %u's queues (DSCP %u) and 1:ff sent %lld packets\n", k,
		      8 * (7 - k), queued);
	if (queued < (long long)pkts[k]) {
		force_down(name);
		fail_msg("switch port p1's class %u queues (DSCP %u) and 1:ff sent %lld packets, "
			 "fewer than the %llu host 0's agent put in class %u",
			 k, 8 * (7 - k), queued, (unsigned long long)pkts[k], k);
	}

	rc = run_script(out, sizeof(out), 120, (const char *const[]){"down", "--name", name, NULL});
	if (rc != 0)
		fail_msg("down exited %d:\n%s", rc, out);
	assert_nothing_left(name);
	assert_no_dpdk_files(name);
	sh_out(out, sizeof(out), "rm -rf '%s'", dir);
}

/* --enforcer and --dpdk-idle out of range: exit 2 naming the flag, nothing made. */
static void test_enforcer_flags(void **state)
{
	static const char *const cases[][3] = {
		{"--enforcer", "ebpf", "--enforcer"},   {"--enforcer", "", "--enforcer"},
		{"--dpdk-idle", "1001", "--dpdk-idle"}, {"--dpdk-idle", "-1", "--dpdk-idle"},
		{"--dpdk-idle", "1ms", "--dpdk-idle"},
	};
	char out[8192];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = run_script(out, sizeof(out), 60,
				    (const char *const[]){"up", cases[i][0], cases[i][1], NULL});

		if (rc != 2 || !strstr(out, cases[i][2]))
			fail_msg("up %s '%s': exit %d, expected 2 and a message naming '%s':\n%s",
				 cases[i][0], cases[i][1], rc, cases[i][2], out);
	}
}

/* Why the dpdk variant cannot run here (left out), or NULL. */
static const char *dpdk_missing(const char *agent)
{
	char out[8192];
	int fd;

	sh_out(out, sizeof(out), "%s --help 2>&1", agent);
	if (!strstr(out, "\n  dpdk "))
		return "loom-agent has no dpdk enforcer in this build";
	if (system("ethtool --version >/dev/null 2>&1") != 0)
		return "no ethtool";
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return "no AF_PACKET sockets (DPDK's net_af_packet)";
	close(fd);
	if (!h_cpus_usable(2))
		return "fewer than 2 CPUs usable (an agent's two lcores)";
	return NULL;
}

/* Whether a namespace takes a bridge, a veth on it, HTB and a u32 filter (the probe is deleted). */
static bool kernel_usable(void)
{
	char out[2048];
	int rc;

	rc = sh_out(out, sizeof(out),
		    "n=loomcprobe%d; ip netns add $n 2>/dev/null || exit 1; "
		    "ip -n $n link add br0 type bridge && "
		    "ip -n $n link add p0 type veth peer name q0 && "
		    "ip -n $n link set p0 master br0 && "
		    "tc -n $n qdisc add dev p0 root handle 1: htb default 10 && "
		    "tc -n $n class add dev p0 parent 1: classid 1:10 htb rate 1mbit prio 0 && "
		    "tc -n $n filter add dev p0 parent 1: protocol ip prio 1 u32 "
		    "match ip dsfield 0xe0 0xfc flowid 1:10; r=$?; ip netns del $n; exit $r",
		    (int)getpid());
	return rc == 0;
}

static bool agent_has_tc(const char *agent)
{
	char out[8192];

	sh_out(out, sizeof(out), "%s --help 2>&1", agent);
	return strstr(out, "\n  tc ") != NULL;
}

/* Why the tests cannot run here, or NULL. */
static const char *missing_precondition(void)
{
	const char *src = getenv("LOOM_SRCDIR"), *build = getenv("LOOM_BUILDDIR");
	const char *agent = getenv("LOOM_AGENT"), *ctl = getenv("LOOMCTL");
	const char *lrun = getenv("LOOM_RUN");

	if (!src || !build || !agent || !ctl || !lrun)
		return "run by meson test (LOOM_SRCDIR, LOOM_BUILDDIR, LOOM_AGENT, LOOMCTL, LOOM_RUN)";
	snprintf(SCRIPT, sizeof(SCRIPT), "%s/scripts/loom-cluster", src);
	snprintf(BUILDDIR, sizeof(BUILDDIR), "%s", build);
	snprintf(LOOMCTL, sizeof(LOOMCTL), "%s", ctl);
	snprintf(LOOMRUN, sizeof(LOOMRUN), "%s", lrun);
	if (geteuid() != 0)
		return "needs root";
	if (system("ip -V >/dev/null 2>&1") != 0 || system("tc -V >/dev/null 2>&1") != 0)
		return "needs ip(8) and tc(8)";
	if (!kernel_usable())
		return "needs network namespaces, a bridge, veth, HTB and u32 filters";
	if (!nsx_bpf_usable())
		return "the kernel loads no BPF tc program here";
	if (access(agent, X_OK) != 0 || !agent_has_tc(agent))
		return "loom-agent has no tc enforcer in this build";
	if (access(lrun, X_OK) != 0)
		return "no loom-run in this build";
	return NULL;
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(test_up_check_down),
		cmocka_unit_test(test_interrupted_up),
		cmocka_unit_test(test_killed_up_then_down),
		cmocka_unit_test(test_bad_flags),
		cmocka_unit_test(test_not_root),
		cmocka_unit_test(test_run_trace),
		cmocka_unit_test(test_run_chaos),
		cmocka_unit_test(test_run_bad_flags),
		cmocka_unit_test(test_enforcer_flags),
		cmocka_unit_test(test_dpdk_variant),
	};
	size_t n = sizeof(tests) / sizeof(tests[0]);
	const char *why = missing_precondition();

	if (why) {
		printf("skipped: %s\n", why);
		return PRECOND_SKIP;
	}
	n = precond_leave_out(tests, n, test_not_root,
			      system("setpriv --version >/dev/null 2>&1") != 0 ? "no setpriv(1)" :
										 NULL);
	n = precond_leave_out(tests, n, test_dpdk_variant, dpdk_missing(getenv("LOOM_AGENT")));
	return precond_run(tests, n, NULL, NULL);
}
