/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom-agent enforcing priorities on real packets, in network namespaces
 * this test makes (and deletes). Built twice: with NETNS_DPDK for the dpdk
 * enforcer, with NETNS_TC for the tc (eBPF + HTB) one.
 *
 * dpdk: the agent is a bump in the wire between sender and receiver:
 *
 *   S (sender) sa ==veth== as  A (agent: net_af_packet as -> ar,   ar ==veth== ra  R (receiver)
 *              10.77.1.1         DPDK rx=as tx=ar, 100 Mbit/s)            10.77.1.2
 *              s2 ==================== veth (the ACKs' way back) ================ r2
 *              10.77.2.1                                                          10.77.2.2
 *
 * tc: the agent runs in S and enforces on S's egress, HTB at 100 Mbit/s:
 *
 *   S (sender + agent) sa ==veth== ra R (receiver)
 *                      10.77.1.1      10.77.1.2
 *
 * Two TCP bulk flows in two coflows start together from S to R. loomd runs
 * fifo first (the coflow registered first gets class 0), then sebf (the
 * smaller coflow first), which swaps the classes. Each time the flow in the
 * higher class must finish first, every packet must reach R with its
 * class's DSCP, and the bytes the agent reported to loomd must equal the
 * bytes the flows put on S's wire. With tc, nothing of the agent's may
 * remain on the interface after it exits.
 *
 * main() exits 77 (skip) without root, network namespaces, the enforcer in
 * this build, or the tools and kernel support it needs (dpdk: ethtool, CPUs
 * 0-1 for the EAL; tc: tc(8), bpftool, BPF); once the tests run, an agent
 * that does not start, or does not stop cleanly, fails them.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/admin.h"
#include "harness.h"
#include "netns.h"
#include "tests/precond.h"

#define RATE       "100M"
#define FLOW_BYTES (6u << 20)

#if defined(NETNS_DPDK)
#define ENFORCER "dpdk"
#define AGENT_NS A
#define ENFORCER_ARGS                                                                              \
	"--no-huge --no-pci --no-shconf -m 512 -l 0-1 --log-level error "                          \
	"--vdev net_af_packet0,iface=as --vdev net_af_packet1,iface=ar -- rx=0 tx=1 rate=" RATE
#elif defined(NETNS_TC)
#define ENFORCER      "tc"
#define AGENT_NS      S
#define ENFORCER_ARGS "iface=sa rate=" RATE
#else
#error "build with NETNS_DPDK or NETNS_TC"
#endif

static struct h_loomd H;
static struct nsx NS;
static const char *S, *R;
#if defined(NETNS_DPDK)
static const char *A;
#endif
static char AGENT_ADMIN[320], AGENT_LOG[320];
static pid_t AGENT;

static const char *agent_path(void)
{
	const char *p = getenv("LOOM_AGENT");

	return p ? p : "dataplane/loom-agent";
}

static bool agent_has_enforcer(void)
{
	char cmd[512], help[4096];
	size_t n;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s --help 2>&1", agent_path());
	p = popen(cmd, "r");
	if (!p)
		return false;
	n = fread(help, 1, sizeof(help) - 1, p);
	pclose(p);
	help[n] = 0;
	return strstr(help, "  " ENFORCER " ") != NULL;
}

/* No IPv6, no reverse-path filter (the dpdk topology's ACKs come back another way). */
static void ns_sysctls(const char *ns)
{
	nsx_sh("ip netns exec %s sysctl -qw net.ipv4.conf.all.rp_filter=0 "
	       "net.ipv4.conf.default.rp_filter=0",
	       ns);
}

#if defined(NETNS_DPDK)
/* The three namespaces and their links; 0, or -1 (the failing command was printed). */
static int make_topology(void)
{
	S = nsx_add(&NS, "S");
	A = nsx_add(&NS, "A");
	R = nsx_add(&NS, "R");
	if (!S || !A || !R)
		return -1;
	if (nsx_sh("ip -n %s link add sa type veth peer name as netns %s", S, A) ||
	    nsx_sh("ip -n %s link add ra address 02:77:00:00:01:02 type veth peer name ar netns %s",
		   R, A) ||
	    nsx_sh("ip -n %s link add s2 type veth peer name r2 netns %s", S, R))
		return -1;
	/* checksums and segmentation in software: af_packet hands DPDK whole, final frames */
	if (nsx_sh("ip netns exec %s ethtool -K sa tx off tso off gso off >/dev/null", S) ||
	    nsx_sh("ip netns exec %s ethtool -K as gro off >/dev/null", A) ||
	    nsx_sh("ip netns exec %s ethtool -K ar tx off tso off gso off >/dev/null", A) ||
	    nsx_sh("ip netns exec %s ethtool -K ra gro off >/dev/null", R))
		return -1;
	for (int i = 0; i < 3; i++)
		ns_sysctls(NS.name[i]);
	if (nsx_sh("ip -n %s addr add 10.77.1.1/24 dev sa", S) ||
	    nsx_sh("ip -n %s addr add 10.77.2.1/24 dev s2", S) ||
	    nsx_sh("ip -n %s addr add 10.77.1.2/24 dev ra", R) ||
	    nsx_sh("ip -n %s addr add 10.77.2.2/24 dev r2", R))
		return -1;
	nsx_sh("ip netns exec %s sysctl -qw net.ipv4.conf.s2.rp_filter=0", S);
	nsx_sh("ip netns exec %s sysctl -qw net.ipv4.conf.ra.rp_filter=0", R);
	if (nsx_sh("ip -n %s link set sa up", S) || nsx_sh("ip -n %s link set s2 up", S) ||
	    nsx_sh("ip -n %s link set as up", A) || nsx_sh("ip -n %s link set ar up", A) ||
	    nsx_sh("ip -n %s link set ra up", R) || nsx_sh("ip -n %s link set r2 up", R))
		return -1;
	/* S never asks for R's address on sa (nothing answers through the agent's one way) */
	if (nsx_sh("ip -n %s neigh replace 10.77.1.2 lladdr 02:77:00:00:01:02 dev sa nud permanent",
		   S) ||
	    nsx_sh("ip -n %s route replace 10.77.1.1/32 via 10.77.2.1 dev r2", R))
		return -1;
	return 0;
}
#else
/* The two namespaces and their link; 0, or -1 (the failing command was printed). */
static int make_topology(void)
{
	S = nsx_add(&NS, "S");
	R = nsx_add(&NS, "R");
	if (!S || !R)
		return -1;
	ns_sysctls(S);
	ns_sysctls(R);
	if (nsx_sh("ip -n %s link add sa address 02:77:00:00:01:01 type veth peer name ra address "
		   "02:77:00:00:01:02 netns %s",
		   S, R) ||
	    nsx_sh("ip -n %s addr add 10.77.1.1/24 dev sa", S) ||
	    nsx_sh("ip -n %s addr add 10.77.1.2/24 dev ra", R) ||
	    nsx_sh("ip -n %s link set sa up", S) || nsx_sh("ip -n %s link set ra up", R))
		return -1;
	/* no ARP either way: every frame leaving sa is one of the test's flows */
	if (nsx_sh("ip -n %s neigh replace 10.77.1.2 lladdr 02:77:00:00:01:02 dev sa nud permanent",
		   S) ||
	    nsx_sh("ip -n %s neigh replace 10.77.1.1 lladdr 02:77:00:00:01:01 dev ra nud permanent",
		   R))
		return -1;
	return 0;
}

/*
 * What of ours is on S's sa, or loaded: "" when nothing (no HTB, no clsact,
 * no BPF filter, no program of ours in the kernel; netns tests run alone).
 */
/*
 * The ids of the BPF programs attached to sa's egress now (at most max),
 * from tc: programs are not per namespace, so the check after the agent
 * exits looks for these ones only (a test beside this one, a cluster of
 * the cluster suite, loads programs of the same name).
 */
static size_t attached_progs(uint32_t *ids, size_t max)
{
	char cmd[256], line[512];
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ip netns exec %s tc filter show dev sa egress 2>/dev/null", S);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (fgets(line, sizeof(line), p))
		for (char *q = strstr(line, " id "); q && n < max; q = strstr(q + 1, " id "))
			ids[n++] = (uint32_t)strtoul(q + 4, NULL, 10);
	pclose(p);
	return n;
}

/* What is left on sa: its qdiscs and filters, and which of the programs ids still exist. */
static void leftovers(char *buf, size_t len, const uint32_t *ids, size_t nids)
{
	char cmd[256];
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "ip netns exec %s sh -c 'tc qdisc show dev sa | grep -E \"htb|clsact\"; "
		 "tc filter show dev sa egress 2>/dev/null'",
		 S);
	p = popen(cmd, "r");
	if (p) {
		n = fread(buf, 1, len - 1, p);
		pclose(p);
	}
	for (size_t i = 0; i < nids && n < len - 1; i++) {
		snprintf(cmd, sizeof(cmd), "bpftool prog show id %u 2>/dev/null", ids[i]);
		p = popen(cmd, "r");
		if (p) {
			n += fread(buf + n, 1, len - 1 - n, p);
			pclose(p);
		}
	}
	buf[n] = 0;
}
#endif

static pid_t start_agent(void)
{
	char ctl[400];
	char *argv[] = {
		(char *)agent_path(),
		(char *)"--controller",
		ctl,
		(char *)"--admin-socket",
		AGENT_ADMIN,
		(char *)"--host-id",
		(char *)"0",
		(char *)"--address",
		(char *)"10.77.1.1",
		(char *)"--link-bps",
		(char *)"100000000",
		(char *)"--enforcer",
		(char *)ENFORCER,
		(char *)"--enforcer-args",
		(char *)ENFORCER_ARGS,
		NULL,
	};
	pid_t pid;

	snprintf(ctl, sizeof(ctl), "unix:%s", H.sock);
	pid = fork();
	if (pid == 0) {
		int fd = open(AGENT_LOG, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (nsx_enter(AGENT_NS) < 0)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static json_t *agent_admin(const char *cmd)
{
	struct loom_err err;
	json_t *res = NULL;

	if (loom_admin_call(AGENT_ADMIN, cmd, 0, NULL, 2000, &res, &err) < 0)
		return NULL;
	return res;
}

/* The class of coflow id in the agent's table (-1: not there). */
static int agent_class(json_t *table, uint64_t coflow)
{
	json_t *flows = json_object_get(table, "flows"), *f;
	size_t i;

	json_array_foreach(flows, i, f)
	{
		if ((uint64_t)json_integer_value(json_object_get(f, "coflow")) == coflow)
			return (int)json_integer_value(json_object_get(f, "class"));
	}
	return -1;
}

/* Waits (bounded) until the agent enforces coflow hi in class 0 and lo in class 1. */
static void wait_classes(uint64_t hi, uint64_t lo)
{
	int ch = -1, cl = -1;

	for (int i = 0; i < 250; i++) {
		json_t *t = agent_admin("table");

		ch = agent_class(t, hi);
		cl = agent_class(t, lo);
		json_decref(t);
		if (ch == 0 && cl == 1)
			return;
		h_sleep_ms(20);
	}
	fail_msg("the agent enforces coflow %llu in class %d and %llu in class %d "
		 "(expected 0 and 1)",
		 (unsigned long long)hi, ch, (unsigned long long)lo, cl);
}

static void tuple4(uint16_t sport, struct wire_tuple *t)
{
	memset(t, 0, sizeof(*t));
	t->family = 4;
	t->protocol = 6;
	t->src[0] = 10, t->src[1] = 77, t->src[2] = 1, t->src[3] = 1;
	t->dst[0] = 10, t->dst[1] = 77, t->dst[2] = 1, t->dst[3] = 2;
	t->src_port = sport;
	t->dst_port = 5001;
}

/* Registers job with one coflow (id coflow) of two flows from host 0 to host 1. */
static void register_job(uint64_t job, uint64_t coflow, const uint16_t sport[2], uint64_t bytes)
{
	Loom__Envelope env = LOOM__ENVELOPE__INIT, *rep;
	Loom__RegisterJob rj = LOOM__REGISTER_JOB__INIT;
	Loom__CoflowSpec cs = LOOM__COFLOW_SPEC__INIT, *csp = &cs;
	Loom__FlowSpec fs[2], *fsp[2] = {&fs[0], &fs[1]};
	Loom__FiveTuple pt[2];
	struct wire_tuple t[2];
	int fd = h_connect(H.sock);

	assert_true(fd >= 0);
	assert_int_equal(h_hello(fd, LOOM__ROLE__FRAMEWORK, 0, 1, 1), 0);
	for (int i = 0; i < 2; i++) {
		loom__flow_spec__init(&fs[i]);
		tuple4(sport[i], &t[i]);
		wire_tuple_to_pb(&t[i], &pt[i]);
		fs[i].src_host = 0;
		fs[i].dst_host = 1;
		fs[i].bytes = bytes;
		fs[i].tuple = &pt[i];
	}
	cs.id = coflow;
	cs.n_flows = 2;
	cs.flows = fsp;
	rj.job_id = job;
	rj.n_coflows = 1;
	rj.coflows = &csp;
	env.seq = 7;
	env.body_case = LOOM__ENVELOPE__BODY_REGISTER_JOB;
	env.register_job = &rj;
	rep = h_call(fd, &env);
	assert_non_null(rep);
	if (rep->reply->error)
		fail_msg("register job %llu: %s", (unsigned long long)job,
			 rep->reply->error->message);
	wire_free(rep);
	close(fd);
}

/* Bytes loomd has for coflow id (its agents' reports). */
static long long loomd_coflow_bytes(uint64_t id)
{
	json_t *res = h_admin(&H, "coflows", 0, NULL), *c;
	long long v = -1;
	size_t i;

	json_array_foreach(res, i, c)
	{
		if ((uint64_t)json_integer_value(json_object_get(c, "id")) == id)
			v = json_integer_value(json_object_get(c, "bytes_sent"));
	}
	json_decref(res);
	return v;
}

/* Races flow (sport a, coflow ca) against (sport b, coflow cb); a is in class 0. */
static void race(uint16_t sa, uint16_t sb, struct nsx_race_result *res)
{
	struct nsx_race r = {
		.ns_snd = S,
		.ns_rcv = R,
		.src_ip = "10.77.1.1",
		.dst_ip = "10.77.1.2",
		.sport = {sa, sb},
		.dport = 5001,
		.bytes = FLOW_BYTES,
		.snd_if = "sa",
		.rcv_if = "ra",
		.limit_ms = 30000,
	};
	double share[2];
	int dscp[2];

	if (nsx_race_run(&r, res) < 0)
		fail_msg("race %u vs %u: %s", sa, sb, res->error);
	for (int i = 0; i < 2; i++) {
		dscp[i] = nsx_dscp_mode(&res->f[i], &share[i]);
		print_message(
			"flow %u (class %d): %llu bytes in %llu ms, DSCP %d on %.1f%% of %llu "
			"packets, %llu bytes on the wire\n",
			r.sport[i], i, (unsigned long long)res->f[i].rx_bytes,
			(unsigned long long)res->f[i].done_ms, dscp[i], 100 * share[i],
			(unsigned long long)res->f[i].seen_pkts,
			(unsigned long long)res->f[i].wire_bytes);
		assert_int_equal(res->f[i].rx_bytes, FLOW_BYTES);
	}
	/* the higher class finishes first, by a margin (strict priority, not luck) */
	if (!(res->f[0].done_ms + 100 < res->f[1].done_ms))
		fail_msg("class 0 flow done at %llu ms, class 1 flow at %llu ms",
			 (unsigned long long)res->f[0].done_ms,
			 (unsigned long long)res->f[1].done_ms);
	/* DSCP as the default map says: class k -> 8 * (7 - k); every packet carries it */
	assert_int_equal(dscp[0], 56);
	assert_int_equal(dscp[1], 48);
	if (res->capture_drops == 0) {
		assert_true(share[0] == 1.0);
		assert_true(share[1] == 1.0);
	}
}

static int setup(void **state)
{
	(void)state;
	if (h_loomd_prepare(&H) < 0)
		return -1;
	snprintf(AGENT_ADMIN, sizeof(AGENT_ADMIN), "%s/agent.sock", H.dir);
	snprintf(AGENT_LOG, sizeof(AGENT_LOG), "%s/agent.log", H.dir);
	if (make_topology() < 0)
		return -1;
	return h_loomd_start(&H, (const char *const[]){"hosts=2", "policy=fifo", NULL});
}

static int teardown(void **state)
{
	(void)state;
	if (AGENT > 0) {
		kill(AGENT, SIGTERM);
		nsx_wait(AGENT, h_mono_ms() + 5000);
		AGENT = 0;
	}
	nsx_cleanup(&NS);
	h_loomd_cleanup(&H);
	return 0;
}

static void test_priorities_on_real_packets(void **state)
{
	const uint16_t ports_x[2] = {41001, 41011}, ports_y[2] = {41002, 41012};
	struct nsx_race_result r1, r2;
	long long tx0, tx1, bx, by;
	json_t *st;
	int status;
#if defined(NETNS_TC)
	uint32_t progs[8];
	size_t nprogs;
#endif

	(void)state;
	AGENT = start_agent();
	assert_true(AGENT > 0);
	for (int i = 0; access(AGENT_ADMIN, F_OK) != 0; i++) {
		if (waitpid(AGENT, &status, WNOHANG) == AGENT) {
			AGENT = 0;
			h_check_exit("loom-agent (" ENFORCER ")", status, 0, AGENT_LOG);
			fail_msg("loom-agent (" ENFORCER
				 ") exited before its admin socket appeared");
		}
		if (i == 200) {
			h_print_log(AGENT_LOG);
			fail_msg("loom-agent (" ENFORCER ") made no admin socket in 10 s");
		}
		h_sleep_ms(50);
	}
	/* X (coflow 10) is registered first and is the larger: fifo puts it first, sebf last */
	register_job(1, 10, ports_x, 64u << 20);
	h_sleep_ms(20);
	register_job(2, 20, ports_y, 16u << 20);
	tx0 = nsx_tx_bytes(S, "sa");
	assert_true(tx0 >= 0);

	wait_classes(10, 20);
	race(ports_x[0], ports_y[0], &r1);

	{
		json_t *res = h_admin(&H, "set-policy", 1, (const char *const[]){"sebf"});

		assert_non_null(res);
		json_decref(res);
	}
	wait_classes(20, 10);
	race(ports_y[1], ports_x[1], &r2);

	/* every byte on S's wire was reported to loomd, per coflow */
	tx1 = nsx_tx_bytes(S, "sa");
	for (int i = 0; i < 200; i++) {
		bx = loomd_coflow_bytes(10);
		by = loomd_coflow_bytes(20);
		if (bx + by == tx1 - tx0)
			break;
		h_sleep_ms(25);
	}
	print_message("loomd: coflow 10 %lld bytes, coflow 20 %lld bytes; sa sent %lld\n", bx, by,
		      tx1 - tx0);
	assert_int_equal(bx + by, tx1 - tx0);
	if (r1.capture_drops == 0 && r2.capture_drops == 0) {
		assert_int_equal(bx, (long long)(r1.f[0].wire_bytes + r2.f[1].wire_bytes));
		assert_int_equal(by, (long long)(r1.f[1].wire_bytes + r2.f[0].wire_bytes));
	}
	st = agent_admin("stats");
	assert_non_null(st);
	assert_int_equal(json_integer_value(
				 json_object_get(json_object_get(st, "enforcer_stats"), "unknown")),
			 0);
	json_decref(st);

#if defined(NETNS_TC)
	{
		char left[2048];

		nprogs = attached_progs(progs, sizeof(progs) / sizeof(progs[0]));
		assert_true(nprogs > 0);
		/* the check sees what is there */
		leftovers(left, sizeof(left), progs, nprogs);
		assert_true(strstr(left, "htb") != NULL);
		assert_true(strstr(left, "loom_tc_egress") != NULL);
	}
#endif
	kill(AGENT, SIGTERM);
	status = h_wait(AGENT, h_mono_ms() + 5000);
	AGENT = 0;
	assert_int_equal(h_check_exit("loom-agent (" ENFORCER ")", status, 0, AGENT_LOG), 0);
#if defined(NETNS_TC)
	{
		char left[2048];

		/*
		 * The kernel frees a program after its last reference goes, from a
		 * work queue: on a loaded machine `bpftool prog show` may list it
		 * for a moment after the agent has exited and detached it. An
		 * attachment (qdisc, filter) or a program still there after 3 s is
		 * a leftover.
		 */
		for (int i = 0; i < 60; i++) {
			leftovers(left, sizeof(left), progs, nprogs);
			if (!left[0])
				break;
			h_sleep_ms(50);
		}
		if (left[0])
			fail_msg("after the agent exited, this remains on sa:\n%s", left);
	}
#endif
}

static void test_loomd_exits_cleanly(void **state)
{
	(void)state;
	assert_int_equal(h_loomd_stop_clean(&H), 0);
}

/* Why the tests cannot run on this machine, or NULL when they can. */
static const char *missing_precondition(void)
{
	if (!nsx_usable())
		return "needs root and network namespaces";
	if (access(agent_path(), X_OK) != 0 || !agent_has_enforcer())
		return "loom-agent has no " ENFORCER " enforcer in this build";
#if defined(NETNS_DPDK)
	if (system("ethtool --version >/dev/null 2>&1") != 0)
		return "no ethtool";
	if (!h_cpus_usable(2))
		return "the EAL's lcores 0-1 are not both usable by this process";
#else
	if (system("tc -V >/dev/null 2>&1") != 0 || system("bpftool version >/dev/null 2>&1") != 0)
		return "needs tc(8) and bpftool";
	if (!nsx_bpf_usable())
		return "the kernel loads no BPF tc program here";
#endif
	return NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_priorities_on_real_packets),
		cmocka_unit_test(test_loomd_exits_cleanly),
	};
	const char *why = missing_precondition();

	if (why) {
		printf("skipped: %s\n", why);
		return PRECOND_SKIP;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
