/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests for ebpf/loader (and, in builds with the live control plane, the
 * "tc" enforcer on it) on a veth pair in a network namespace of the test's
 * own (loomtest-PID, deleted at exit): what ebpf_tc_new installs (HTB root
 * and K classes, clsact, our cls_bpf filter, as `tc` shows them), that
 * UDP packets sent through it land in their flows' counters and HTB
 * classes, that ebpf_tc_free leaves nothing of ours, that a dead agent's
 * leftovers are replaced and cleaned, that a clsact qdisc that is not ours
 * stays. The enforcer cases: bad arguments give clear errors; a table's
 * flows are reported by collect (and a removed flow as done), unknown flows
 * too. Needs root, ip(8), tc(8) and BPF; exits 77 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "ebpf/loader.h"
#ifdef LOOM_HAVE_DATAPLANE
#include "dataplane/agent.h"
#include "dataplane/table.h"
#endif

#define IF_A      "lta%d" /* in the namespace: 10.77.0.1, its peer IF_B has no address */
#define IF_B      "ltb%d"
#define PEER_IP   "10.77.0.2"
#define LOCAL_IP  "10.77.0.1"
#define UDP_BYTES 100
#define FRAME_LEN (14 + 20 + 8 + UDP_BYTES)
#define OUT_MAX   16384

static char ns_name[64], if_a[16], if_b[16];
static int orig_ns = -1;
static bool ns_made;

/* ---- shell helpers ----------------------------------------------------------------------------- */

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int r;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	r = system(cmd);
	return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
}

/* Runs a command and returns its stdout (and stderr), in a static buffer. */
static const char *out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *out(const char *fmt, ...)
{
	static char buf[OUT_MAX];
	char cmd[512];
	size_t n = 0;
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	strncat(cmd, " 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	buf[0] = '\0';
	f = popen(cmd, "r");
	if (!f)
		return buf;
	while (n + 1 < sizeof(buf)) {
		size_t k = fread(buf + n, 1, sizeof(buf) - 1 - n, f);

		if (k == 0)
			break;
		n += k;
	}
	buf[n] = '\0';
	pclose(f);
	return buf;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* Bytes HTB class major:minor (hex, as tc prints it) has sent, from `tc -s class show`. */
static long long class_sent(const char *classid)
{
	const char *s = out("tc -s class show dev %s", if_a);
	char key[64];
	const char *p;
	long long bytes = -1;

	snprintf(key, sizeof(key), "class htb %s ", classid);
	p = strstr(s, key);
	if (p && (p = strstr(p, "Sent ")))
		sscanf(p, "Sent %lld bytes", &bytes);
	return bytes;
}

/* Nothing of ours on the interface: no HTB, no clsact, no filter. */
static void assert_clean(void)
{
	const char *q = out("tc qdisc show dev %s", if_a);

	if (strstr(q, "htb") || strstr(q, "clsact"))
		fail_msg("left behind on %s:\n%s", if_a, q);
	q = out("tc filter show dev %s egress", if_a);
	assert_null(strstr(q, "loom_tc_egress"));
}

/* ---- namespace --------------------------------------------------------------------------------- */

static void ns_cleanup(void)
{
	if (orig_ns >= 0) {
		setns(orig_ns, CLONE_NEWNET);
		close(orig_ns);
		orig_ns = -1;
	}
	if (ns_made) {
		sh("ip netns del %s >/dev/null 2>&1", ns_name);
		ns_made = false;
	}
}

/* Makes the namespace with the veth pair and enters it. 0, or 77 when the machine cannot. */
static int ns_setup(void)
{
	char path[128];
	int fd;

	snprintf(ns_name, sizeof(ns_name), "loomtest-%d", (int)getpid());
	snprintf(if_a, sizeof(if_a), IF_A, (int)getpid() % 10000000);
	snprintf(if_b, sizeof(if_b), IF_B, (int)getpid() % 10000000);
	if (sh("command -v ip >/dev/null && command -v tc >/dev/null") != 0) {
		printf("skipped: needs ip(8) and tc(8)\n");
		return 77;
	}
	if (sh("ip netns add %s", ns_name) != 0) {
		printf("skipped: cannot make a network namespace\n");
		return 77;
	}
	ns_made = true;
	atexit(ns_cleanup);
	orig_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/run/netns/%s", ns_name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (orig_ns < 0 || fd < 0 || setns(fd, CLONE_NEWNET) < 0) {
		printf("skipped: cannot enter %s: %s\n", ns_name, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 77;
	}
	close(fd);
	/* from here on, ip and tc run in the namespace too (they inherit it) */
	if (sh("ip link add %s address 02:00:00:00:00:0a type veth peer name %s "
	       "address 02:00:00:00:00:0b",
	       if_a, if_b) != 0 ||
	    sh("ip link set lo up && ip link set %s up && ip link set %s up", if_a, if_b) != 0 ||
	    sh("ip addr add " LOCAL_IP "/24 dev %s", if_a) != 0 ||
	    sh("ip neigh replace " PEER_IP " lladdr 02:00:00:00:00:0b dev %s nud permanent",
	       if_a) != 0) {
		printf("skipped: cannot set up the veth pair\n");
		return 77;
	}
	return 0;
}

/* After each test, whatever a failed one left: so that one failure does not fail the rest. */
static int scrub(void **state)
{
	(void)state;
	sh("tc qdisc del dev %s root >/dev/null 2>&1", if_a);
	sh("tc qdisc del dev %s clsact >/dev/null 2>&1", if_a);
	return 0;
}

/* ---- traffic ----------------------------------------------------------------------------------- */

/* Sends n UDP datagrams of UDP_BYTES from LOCAL_IP:sport to PEER_IP:dport (out of if_a). */
static void send_udp(uint16_t sport, uint16_t dport, int n)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(sport)};
	struct sockaddr_in b = {.sin_family = AF_INET, .sin_port = htons(dport)};
	char payload[UDP_BYTES];
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), one = 1;

	assert_true(fd >= 0);
	memset(payload, 0x5a, sizeof(payload));
	inet_pton(AF_INET, LOCAL_IP, &a.sin_addr);
	inet_pton(AF_INET, PEER_IP, &b.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(sendto(fd, payload, sizeof(payload), 0, (struct sockaddr *)&b,
					sizeof(b)),
				 UDP_BYTES);
	close(fd);
}

static struct loom_tc_key udp_key(uint16_t sport, uint16_t dport)
{
	struct loom_tc_key k;

	memset(&k, 0, sizeof(k));
	k.family = 4;
	k.protocol = IPPROTO_UDP;
	k.src_port = htons(sport);
	k.dst_port = htons(dport);
	inet_pton(AF_INET, LOCAL_IP, k.src);
	inet_pton(AF_INET, PEER_IP, k.dst);
	return k;
}

static struct ebpf_tc_opts opts_for(uint32_t classes)
{
	struct ebpf_tc_opts o = {.ifname = if_a,
				 .classes = classes,
				 .rate_bps = 100000000,
				 .rewrite_dscp = true,
				 .default_class = classes - 1};

	for (uint32_t c = 0; c < classes; c++)
		o.dscp[c] = (uint8_t)(c < 8 ? 8 * (7 - c) : 0);
	return o;
}

/* ---- loader tests ------------------------------------------------------------------------------ */

/* What tc shows while it runs, packets in their classes, and nothing after. */
static void test_install_and_remove(void **state)
{
	struct ebpf_tc_opts o = opts_for(4);
	struct ebpf_tc_entry e[2] = {
		{.key = udp_key(30001, 5000), .val = {.slot = 3, .cls = 0}},
		{.key = udp_key(30002, 5000), .val = {.slot = 4, .cls = 2}},
	};
	struct loom_tc_counter c[5];
	struct loom_tc_stats st;
	struct ebpf_err err;
	const char *s;
	struct ebpf_tc *tc;

	(void)state;
	tc = ebpf_tc_new(&o, &err);
	if (!tc)
		fail_msg("ebpf_tc_new: %s", err.msg);
	s = out("tc qdisc show dev %s", if_a);
	assert_non_null(strstr(s, "qdisc htb 1: root"));
	assert_non_null(strstr(s, "default 0x13"));
	assert_non_null(strstr(s, "qdisc clsact ffff:"));
	s = out("tc class show dev %s", if_a);
	assert_non_null(strstr(s, "class htb 1:1 root rate 100Mbit ceil 100Mbit"));
	for (int k = 0; k < 4; k++) {
		char want[64];

		snprintf(want, sizeof(want), "class htb 1:1%d parent 1:1 prio %d rate 100Kbit", k,
			 k);
		if (!strstr(s, want))
			fail_msg("no '%s' in:\n%s", want, s);
	}
	assert_int_equal(count(s, "class htb"), 5);
	assert_int_equal(count(s, "ceil 100Mbit"), 5);
	s = out("tc filter show dev %s egress", if_a);
	assert_non_null(strstr(s, "loom_tc_egress"));
	assert_non_null(strstr(s, "direct-action"));
	assert_non_null(strstr(s, "pref 19533"));       /* LOOM_TC_FILTER_PRIO */
	assert_int_equal(count(s, "handle 0x4c4d"), 1); /* LOOM_TC_FILTER_HANDLE, once */

	/* packets: each flow in its counter slot and its HTB class; unknown -> the lowest */
	assert_int_equal(ebpf_tc_sync(tc, e, 2, NULL, &err), 0);
	send_udp(30001, 5000, 3);
	send_udp(30002, 5000, 5);
	send_udp(30003, 5000, 2);
	assert_int_equal(ebpf_tc_counters_read(tc, 5, c), 0);
	assert_int_equal(c[3].packets, 3);
	assert_int_equal(c[3].bytes, 3 * FRAME_LEN);
	assert_int_equal(c[4].packets, 5);
	assert_int_equal(c[4].bytes, 5 * FRAME_LEN);
	assert_true(class_sent("1:10") >= 3 * FRAME_LEN);
	assert_true(class_sent("1:12") >= 5 * FRAME_LEN);
	assert_true(class_sent("1:13") >= 2 * FRAME_LEN);
	assert_int_equal(ebpf_tc_stats_read(tc, &st), 0);
	assert_int_equal(st.known.packets, 8);
	assert_true(st.unknown.packets >= 2);
	assert_true(ebpf_tc_events_poll(tc, NULL, NULL) >= 1);

	ebpf_tc_free(tc);
	assert_clean();
}

static pid_t crashed_agent(uint32_t classes)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct ebpf_tc_opts o = opts_for(classes);
		struct ebpf_err err;

		/* dies without ebpf_tc_free: everything stays on the interface */
		_exit(ebpf_tc_new(&o, &err) ? 0 : 1);
	}
	return pid;
}

/* A dead agent's HTB, filter and clsact are replaced, and removed at the end. */
static void test_crash_recovery(void **state)
{
	struct ebpf_tc_opts o = opts_for(3);
	struct ebpf_err err;
	const char *s;
	struct ebpf_tc *tc;
	int status;

	(void)state;
	waitpid(crashed_agent(8), &status, 0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	s = out("tc class show dev %s", if_a);
	assert_int_equal(count(s, "class htb"), 9); /* left behind */
	assert_non_null(strstr(out("tc filter show dev %s egress", if_a), "loom_tc_egress"));

	tc = ebpf_tc_new(&o, &err);
	if (!tc)
		fail_msg("ebpf_tc_new after a crash: %s", err.msg);
	s = out("tc class show dev %s", if_a);
	assert_int_equal(count(s, "class htb"), 4); /* rebuilt with 3 classes */
	assert_non_null(strstr(out("tc qdisc show dev %s", if_a), "default 0x12"));
	assert_int_equal(count(out("tc filter show dev %s egress", if_a), "handle 0x4c4d"), 1);
	send_udp(30009, 5000, 1); /* ours runs: an unknown flow is announced */
	assert_int_equal(ebpf_tc_events_poll(tc, NULL, NULL), 1);
	ebpf_tc_free(tc);
	assert_clean();
}

/* A clsact qdisc that was there before is not ours: it stays, our filter goes. */
static void test_foreign_clsact(void **state)
{
	struct ebpf_tc_opts o = opts_for(2);
	struct ebpf_err err;
	struct ebpf_tc *tc;
	const char *s;

	(void)state;
	assert_int_equal(sh("tc qdisc add dev %s clsact", if_a), 0);
	tc = ebpf_tc_new(&o, &err);
	if (!tc)
		fail_msg("ebpf_tc_new: %s", err.msg);
	ebpf_tc_free(tc);
	s = out("tc qdisc show dev %s", if_a);
	assert_non_null(strstr(s, "clsact"));
	assert_null(strstr(s, "htb"));
	assert_null(strstr(out("tc filter show dev %s egress", if_a), "loom_tc_egress"));
	assert_int_equal(sh("tc qdisc del dev %s clsact", if_a), 0);
	assert_clean();
}

static void test_bad_opts(void **state)
{
	struct ebpf_tc_opts o = opts_for(4);
	struct ebpf_err err;

	(void)state;
	o.ifname = "nosuch0";
	assert_null(ebpf_tc_new(&o, &err));
	assert_int_equal(errno, ENODEV);
	assert_non_null(strstr(err.msg, "nosuch0"));
	o.ifname = if_a;
	o.rate_bps = 1000;
	assert_null(ebpf_tc_new(&o, &err));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(err.msg, "rate"));
	o.rate_bps = 100000000;
	o.classes = 0;
	assert_null(ebpf_tc_new(&o, &err));
	assert_int_equal(errno, EINVAL);
	assert_clean();
}

/* ---- the tc enforcer --------------------------------------------------------------------------- */

#ifdef LOOM_HAVE_DATAPLANE

static void expect_init_error(const char *args, uint32_t classes, const char *needle)
{
	struct dp_enforcer e = {.cls = &dp_enforcer_tc};
	struct loom_err err;
	int r;

	memset(&err, 0, sizeof(err));
	r = dp_enforcer_tc.init(&e, args, classes, &err);
	if (r == 0) {
		dp_enforcer_tc.done(&e);
		fail_msg("'%s' was accepted", args);
	}
	assert_null(e.priv);
	if (!strstr(loom_err_str(&err), needle))
		fail_msg("'%s': error '%s' does not say '%s'", args, loom_err_str(&err), needle);
	assert_clean();
}

static void test_enforcer_bad_args(void **state)
{
	char a[128];

	(void)state;
	expect_init_error("", 8, "iface=IF");
	expect_init_error("rate=100M", 8, "no interface");
	expect_init_error("iface=nosuch0 rate=100M", 8, "no interface 'nosuch0'");
	snprintf(a, sizeof(a), "iface=%s rate=abc", if_a);
	expect_init_error(a, 8, "rate: 'abc'");
	snprintf(a, sizeof(a), "iface=%s rate=10X", if_a);
	expect_init_error(a, 8, "rate");
	snprintf(a, sizeof(a), "iface=%s rate=100M dscp=9:99", if_a);
	expect_init_error(a, 8, "needs a DSCP 0..63");
	snprintf(a, sizeof(a), "iface=%s rate=100M dscp=3", if_a);
	expect_init_error(a, 8, "expected CLASS:DSCP");
	snprintf(a, sizeof(a), "iface=%s rate=100M dscp=1:10,1:12", if_a);
	expect_init_error(a, 8, "given twice");
	snprintf(a, sizeof(a), "iface=%s rate=100M default=8", if_a);
	expect_init_error(a, 8, "default");
	snprintf(a, sizeof(a), "iface=%s rate=100M unknown=99", if_a);
	expect_init_error(a, 8, "unknown: '99' is not a class");
	snprintf(a, sizeof(a), "iface=%s rate=100M small=65536", if_a);
	expect_init_error(a, 8, "small: '65536' is not a packet length");
	snprintf(a, sizeof(a), "iface=%s rate=100M small=-1", if_a);
	expect_init_error(a, 8, "small");
	snprintf(a, sizeof(a), "iface=%s rate=100M speed=1", if_a);
	expect_init_error(a, 8, "unknown option 'speed'");
	snprintf(a, sizeof(a), "iface=%s rate", if_a);
	expect_init_error(a, 8, "not OPTION=VALUE");
	snprintf(a, sizeof(a), "iface=%s rate=100M", if_a);
	expect_init_error(a, 0, "classes");
	expect_init_error(a, LOOM_TC_MAX_CLASSES + 1, "classes");
	snprintf(a, sizeof(a), "iface=%s rate=100", if_a);
	expect_init_error(a, 8, "rate"); /* below 1 Mbit/s: the loader says */
}

struct report {
	struct wire_tuple t;
	uint64_t bytes;
	bool done;
};

struct reports {
	struct report r[64];
	int n;
};

static void on_counter(void *ctx, const struct wire_tuple *t, uint64_t bytes, bool done)
{
	struct reports *rs = ctx;

	assert_true(rs->n < 64);
	rs->r[rs->n].t = *t;
	rs->r[rs->n].bytes = bytes;
	rs->r[rs->n++].done = done;
}

static struct wire_tuple udp_tuple(uint16_t sport, uint16_t dport)
{
	struct wire_tuple t;

	memset(&t, 0, sizeof(t));
	t.family = 4;
	t.protocol = IPPROTO_UDP;
	t.src_port = sport;
	t.dst_port = dport;
	inet_pton(AF_INET, LOCAL_IP, t.src);
	inet_pton(AF_INET, PEER_IP, t.dst);
	return t;
}

static const struct report *find(const struct reports *rs, uint16_t sport)
{
	for (int i = 0; i < rs->n; i++)
		if (rs->r[i].t.src_port == sport)
			return &rs->r[i];
	return NULL;
}

static struct dp_snapshot *snapshot_of(struct dp_table *t, uint64_t version,
				       const struct dp_flow_entry *f, size_t nf,
				       const struct dp_class_entry *c, size_t nc)
{
	struct dp_update u = {.version = version,
			      .full = true,
			      .default_class = 7,
			      .flows = f,
			      .nflows = nf,
			      .classes = c,
			      .nclasses = nc};

	assert_int_equal(dp_table_apply(t, &u), 0);
	return dp_table_snapshot(t);
}

static uint64_t stat_of(struct dp_enforcer *e, const char *name);

static void test_enforcer_collect(void **state)
{
	struct dp_enforcer e = {.cls = &dp_enforcer_tc};
	struct dp_table *table = dp_table_new(8);
	struct dp_flow_entry f[2] = {{udp_tuple(31001, 5000), 100}, {udp_tuple(31002, 5000), 200}};
	struct dp_class_entry c[2] = {{100, 0, 0}, {200, 1, 0}};
	struct loom_err err;
	struct reports rs = {.n = 0};
	const struct report *r;
	char a[128];

	(void)state;
	snprintf(a, sizeof(a), "iface=%s rate=100M dscp=0:46,1:26", if_a);
	if (dp_enforcer_tc.init(&e, a, 8, &err) < 0)
		fail_msg("init: %s", loom_err_str(&err));
	assert_int_equal(dp_enforcer_tc.apply(&e, snapshot_of(table, 1, f, 2, c, 2)), 0);
	send_udp(31001, 5000, 4);
	send_udp(31002, 5000, 2);
	send_udp(31003, 5000, 3); /* unknown */
	dp_enforcer_tc.collect(&e, on_counter, &rs);
	assert_int_equal(rs.n, 3);
	assert_non_null(r = find(&rs, 31001));
	assert_int_equal(r->bytes, 4 * FRAME_LEN);
	assert_false(r->done);
	assert_non_null(r = find(&rs, 31002));
	assert_int_equal(r->bytes, 2 * FRAME_LEN);
	assert_non_null(r = find(&rs, 31003));
	assert_int_equal(r->bytes, 3 * FRAME_LEN);
	{
		struct wire_tuple want = udp_tuple(31003, 5000);

		assert_memory_equal(&r->t, &want, sizeof(want));
	}
	assert_true(class_sent("1:10") >= 4 * FRAME_LEN);
	assert_true(class_sent("1:11") >= 2 * FRAME_LEN);
	assert_true(class_sent("1:17") >= 3 * FRAME_LEN);

	/* only growth is reported */
	rs.n = 0;
	send_udp(31001, 5000, 1);
	dp_enforcer_tc.collect(&e, on_counter, &rs);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.r[0].t.src_port, 31001);
	assert_int_equal(rs.r[0].bytes, FRAME_LEN);

	/* a table without 31001: its last bytes, done; 31002 keeps its slot and counts on */
	assert_int_equal(dp_enforcer_tc.apply(&e, snapshot_of(table, 2, f + 1, 1, c, 2)), 0);
	send_udp(31002, 5000, 1);
	rs.n = 0;
	dp_enforcer_tc.collect(&e, on_counter, &rs);
	assert_int_equal(rs.n, 2);
	assert_non_null(r = find(&rs, 31001));
	assert_true(r->done);
	assert_int_equal(r->bytes, 0);
	assert_non_null(r = find(&rs, 31002));
	assert_false(r->done);
	assert_int_equal(r->bytes, FRAME_LEN);
	/* 31001 is unknown now */
	send_udp(31001, 5000, 1);
	rs.n = 0;
	dp_enforcer_tc.collect(&e, on_counter, &rs);
	assert_int_equal(rs.n, 1);
	assert_int_equal(rs.r[0].t.src_port, 31001);
	assert_int_equal(rs.r[0].bytes, FRAME_LEN);
	assert_false(rs.r[0].done);

	assert_int_equal(stat_of(&e, "offload_tc"), 1);
	assert_int_equal(stat_of(&e, "flows_enforced"), 1);
	assert_int_equal(stat_of(&e, "flows_in_map"), 1);
	assert_int_equal(stat_of(&e, "snapshots_applied"), 2);
	assert_true(stat_of(&e, "class0_packets") >= 5);
	assert_true(stat_of(&e, "unknown_flows_reported") >= 2);
	assert_int_equal(stat_of(&e, "rate_bps"), 100000000);

	/* a bad table is refused and the last one stays */
	{
		struct dp_snapshot *bad = calloc(1, sizeof(*bad));

		bad->default_class = 8;
		assert_int_equal(dp_enforcer_tc.apply(&e, bad), -EINVAL);
		assert_int_equal(stat_of(&e, "flows_enforced"), 1);
	}
	dp_enforcer_tc.done(&e);
	assert_null(e.priv);
	dp_table_free(table);
	assert_clean();
}

/* unknown=0: the tables' default class (7 here) is not applied; unknown flows stay in class 0. */
static void test_enforcer_unknown_pinned(void **state)
{
	struct dp_enforcer e = {.cls = &dp_enforcer_tc};
	struct dp_table *table = dp_table_new(8);
	struct dp_flow_entry f[1] = {{udp_tuple(31001, 5000), 100}};
	struct dp_class_entry c[1] = {{100, 2, 0}};
	struct loom_err err;
	uint64_t c0, c7;
	char a[128];

	(void)state;
	snprintf(a, sizeof(a), "iface=%s rate=100M unknown=0", if_a);
	if (dp_enforcer_tc.init(&e, a, 8, &err) < 0)
		fail_msg("init: %s", loom_err_str(&err));
	assert_int_equal(dp_enforcer_tc.apply(&e, snapshot_of(table, 1, f, 1, c, 1)), 0);
	c0 = stat_of(&e, "class0_packets");
	c7 = stat_of(&e, "class7_packets");
	send_udp(31003, 5000, 3); /* unknown */
	assert_int_equal(stat_of(&e, "class0_packets") - c0, 3);
	assert_int_equal(stat_of(&e, "class7_packets"), c7);
	send_udp(31001, 5000, 2); /* known: its coflow's class */
	assert_true(stat_of(&e, "class2_packets") >= 2);
	dp_enforcer_tc.done(&e);
	dp_table_free(table);
	assert_clean();
}

struct stat_find {
	const char *name;
	uint64_t v;
	bool found;
};

static void on_stat(void *ctx, const char *name, uint64_t v)
{
	struct stat_find *s = ctx;

	if (!strcmp(name, s->name)) {
		s->v = v;
		s->found = true;
	}
}

static uint64_t stat_of(struct dp_enforcer *e, const char *name)
{
	struct stat_find s = {.name = name};

	e->cls->stats(e, on_stat, &s);
	if (!s.found)
		fail_msg("no stat '%s'", name);
	return s.v;
}

/* iface alone: the rate is the interface's speed (a veth says 10 Gbit/s). */
static void test_enforcer_speed(void **state)
{
	struct dp_enforcer e = {.cls = &dp_enforcer_tc};
	struct loom_err err;
	char a[64];

	(void)state;
	snprintf(a, sizeof(a), "iface=%s dscp=none default=2", if_a);
	if (dp_enforcer_tc.init(&e, a, 4, &err) < 0)
		fail_msg("init: %s", loom_err_str(&err));
	assert_int_equal(stat_of(&e, "rate_bps"), 10000000000ull);
	assert_int_equal(stat_of(&e, "dscp_rewrite"), 0);
	assert_non_null(strstr(out("tc class show dev %s", if_a), "ceil 10Gbit"));
	dp_enforcer_tc.done(&e);
	assert_clean();
}

#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_install_and_remove, scrub),
		cmocka_unit_test_teardown(test_crash_recovery, scrub),
		cmocka_unit_test_teardown(test_foreign_clsact, scrub),
		cmocka_unit_test_teardown(test_bad_opts, scrub),
#ifdef LOOM_HAVE_DATAPLANE
		cmocka_unit_test_teardown(test_enforcer_bad_args, scrub),
		cmocka_unit_test_teardown(test_enforcer_collect, scrub),
		cmocka_unit_test_teardown(test_enforcer_unknown_pinned, scrub),
		cmocka_unit_test_teardown(test_enforcer_speed, scrub),
#endif
	};
	struct ebpf_tc_opts o = {.classes = 1};
	struct ebpf_tc *probe;
	struct ebpf_err err;
	int r;

	if (geteuid() != 0) {
		printf("skipped: needs root (network namespaces, BPF)\n");
		return 77;
	}
	probe = ebpf_tc_new(&o, &err); /* the program alone, no interface */
	if (!probe && (errno == EPERM || errno == ENOSYS || errno == EOPNOTSUPP)) {
		printf("skipped: no BPF here: %s\n", err.msg);
		return 77;
	}
	if (!probe) {
		printf("the program does not load: %s\n", err.msg);
		return 1;
	}
	ebpf_tc_free(probe);
	r = ns_setup();
	if (r != 0) {
		ns_cleanup();
		return r;
	}
	r = cmocka_run_group_tests(tests, NULL, NULL);
	ns_cleanup();
	return r;
}
