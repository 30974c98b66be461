/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom_dpdk_bench: the DPDK enforcer's packet rate and table update latency
 * (bench/dpdk.sh runs it against dpdk-testpmd).
 *
 * It starts the EAL itself (--no-huge --no-pci --no-shconf -m 512 -l 0-1,
 * two net_null vdevs, 64-byte frames: net_null's default size), starts the
 * real "dpdk" enforcer on it (rx = net_null0, tx = net_null1, no rate: the
 * shaper is off, software DSCP marking), and applies a table of F flows
 * (default 65,536) spread over K classes (default 8) through the agent's own
 * path (dp_table full update -> dp_table_snapshot -> apply).
 *
 * net_null's RX hands out mbufs it does not write. An RX callback on the RX
 * port (run by rte_eth_rx_burst, so on the enforcer's worker lcore, and
 * charged to it) writes an Ethernet/IPv4/UDP header into each one: a flow
 * drawn pseudo-randomly (xorshift) among the F tuples of the table, or, for
 * the given share of packets, a tuple not in it.
 *
 * Throughput: after a warm-up, the enforcer's own rx/tx counters (its stats)
 * over a fixed window, once with every packet a known flow and once with
 * the unknown share. Table update latency: N full tables of F flows, each
 * with one flow moved to a coflow of another class, then N small tables;
 * after each apply the control side reads table_build_ns_last (apply called
 * -> published) and table_swap_ns_last (published -> first used by the
 * worker) from stats, as the agent's admin socket would. Traffic keeps
 * flowing while it does.
 *
 * Prints human-readable lines, then one line of JSON. Needs two lcores (the
 * main one only sleeps and polls stats during the windows).
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "common/clock.h"
#include "common/log.h"
#include "dataplane/agent.h"
#include "dataplane/table.h"

#define FRAME_BYTES       64u /* net_null's default packet size */
#define HDR_BYTES         (RTE_ETHER_HDR_LEN + 20u + 8u)
#define DST_PORT          4791u
#define MAX_UPDATES       1000u
#define COFLOWS_PER_CLASS 32u /* a class's flows are spread over several coflows */

struct opts {
	double duration_s, warmup_s;
	uint32_t flows, classes, burst, updates, small_flows;
	double unknown_share;
	const char *eal;
};

/* The RX callback's state: written by the main lcore before traffic, read by the worker. */
struct gen {
	uint64_t rng;
	uint32_t nflows;
	uint32_t unknown_thresh; /* atomic: a packet is unknown when rng's top half < this */
	uint8_t tmpl[HDR_BYTES];
	uint32_t base_sum; /* the IPv4 header's ones'-complement sum without its source address */
} __rte_cache_aligned;

static struct gen gen;
static bool verbose;

static double now_s(void)
{
	return (double)loom_clock_mono_ns() * 1e-9;
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Flow i's source address (host order): 10.0.0.0/8 for the table's flows, 11/8 for unknown. */
static inline uint32_t flow_src(uint32_t i, bool unknown)
{
	return ((unknown ? 11u : 10u) << 24) | (i & 0xffffffu);
}

static inline uint16_t flow_sport(uint32_t i)
{
	return (uint16_t)(10000u + (i & 0x3fffu));
}

static void flow_tuple(uint32_t i, struct wire_tuple *t)
{
	uint32_t src = flow_src(i, false);

	memset(t, 0, sizeof(*t));
	t->family = 4;
	t->protocol = IPPROTO_UDP;
	t->src[0] = (uint8_t)(src >> 24), t->src[1] = (uint8_t)(src >> 16);
	t->src[2] = (uint8_t)(src >> 8), t->src[3] = (uint8_t)src;
	t->dst[0] = 192, t->dst[1] = 168, t->dst[2] = 0, t->dst[3] = 1;
	t->src_port = flow_sport(i);
	t->dst_port = DST_PORT;
}

/* The header template: Ethernet, IPv4 (no options, DSCP 0, checksum 0), UDP to 192.168.0.1. */
static void gen_init(struct gen *g, uint32_t nflows, double unknown_share)
{
	static const uint8_t eth[RTE_ETHER_HDR_LEN] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0};
	uint8_t *ip = g->tmpl + RTE_ETHER_HDR_LEN, *udp = ip + 20;
	uint32_t sum = 0;

	memset(g, 0, sizeof(*g));
	g->rng = 0x9e3779b97f4a7c15ull;
	g->nflows = nflows;
	g->unknown_thresh = (uint32_t)(unknown_share * 4294967296.0);
	memcpy(g->tmpl, eth, sizeof(eth));
	ip[0] = 0x45;
	ip[2] = 0, ip[3] = FRAME_BYTES - RTE_ETHER_HDR_LEN;
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	ip[16] = 192, ip[17] = 168, ip[18] = 0, ip[19] = 1;
	udp[2] = (uint8_t)(DST_PORT >> 8), udp[3] = (uint8_t)DST_PORT;
	udp[5] = FRAME_BYTES - RTE_ETHER_HDR_LEN - 20;
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	g->base_sum = sum;
}

/* Fast path: writes one flow's headers into m (a net_null frame of FRAME_BYTES). */
static inline void gen_write(struct gen *g, struct rte_mbuf *m)
{
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	uint64_t r;
	uint32_t i, src, sum;
	uint16_t sport;
	bool unknown;

	g->rng ^= g->rng << 13;
	g->rng ^= g->rng >> 7;
	g->rng ^= g->rng << 17;
	r = g->rng;
	i = (uint32_t)(((r & 0xffffffffu) * g->nflows) >> 32);
	unknown = (uint32_t)(r >> 32) < __atomic_load_n(&g->unknown_thresh, __ATOMIC_RELAXED);
	src = flow_src(i, unknown);
	sport = flow_sport(i);
	sum = g->base_sum + (src >> 16) + (src & 0xffff);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	memcpy(p, g->tmpl, HDR_BYTES);
	p[RTE_ETHER_HDR_LEN + 10] = (uint8_t)(sum >> 8);
	p[RTE_ETHER_HDR_LEN + 11] = (uint8_t)sum;
	p[RTE_ETHER_HDR_LEN + 12] = (uint8_t)(src >> 24);
	p[RTE_ETHER_HDR_LEN + 13] = (uint8_t)(src >> 16);
	p[RTE_ETHER_HDR_LEN + 14] = (uint8_t)(src >> 8);
	p[RTE_ETHER_HDR_LEN + 15] = (uint8_t)src;
	p[RTE_ETHER_HDR_LEN + 20] = (uint8_t)(sport >> 8);
	p[RTE_ETHER_HDR_LEN + 21] = (uint8_t)sport;
}

static uint16_t rx_callback(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n,
			    uint16_t max, void *user)
{
	struct gen *g = user;

	(void)port, (void)queue, (void)max;
	for (uint16_t i = 0; i < n; i++)
		gen_write(g, pkts[i]);
	return n;
}

/* ---- the control side: tables and stats -------------------------------------------------- */

struct stats {
	uint64_t rx, tx, dropped, known, unknown, unparseable, measured;
	uint64_t build_ns_last, swap_ns_last;
	uint64_t cls[8];
};

static void on_stat(void *ctx, const char *name, uint64_t v)
{
	struct stats *s = ctx;
	unsigned int c;

	if (!strcmp(name, "rx_packets"))
		s->rx = v;
	else if (!strcmp(name, "tx_packets"))
		s->tx = v;
	else if (!strcmp(name, "dropped_packets"))
		s->dropped = v;
	else if (!strcmp(name, "known"))
		s->known = v;
	else if (!strcmp(name, "unknown"))
		s->unknown = v;
	else if (!strcmp(name, "unparseable"))
		s->unparseable = v;
	else if (!strcmp(name, "table_updates_measured"))
		s->measured = v;
	else if (!strcmp(name, "table_build_ns_last"))
		s->build_ns_last = v;
	else if (!strcmp(name, "table_swap_ns_last"))
		s->swap_ns_last = v;
	else if (sscanf(name, "class%u_packets", &c) == 1 && c < 8)
		s->cls[c] = v;
}

static void read_stats(struct dp_enforcer *e, struct stats *s)
{
	memset(s, 0, sizeof(*s));
	e->cls->stats(e, on_stat, s);
}

static void on_counter(void *ctx, const struct wire_tuple *t, uint64_t bytes, bool done)
{
	(void)ctx, (void)t, (void)bytes, (void)done;
}

/* Flow i is in coflow 1 + i mod (classes * COFLOWS_PER_CLASS); coflow c has class (c - 1) mod classes. */
static uint64_t coflow_of(uint32_t i, uint32_t classes)
{
	return 1 + i % (classes * COFLOWS_PER_CLASS);
}

/* Applies a full update of flows 0..n-1 to t (coflows and classes as coflow_of says). */
static int table_fill(struct dp_table *t, uint32_t n, uint32_t classes, uint64_t version)
{
	uint32_t ncoflows = classes * COFLOWS_PER_CLASS;
	struct dp_flow_entry *fl = calloc(n ? n : 1, sizeof(*fl));
	struct dp_class_entry *cl = calloc(ncoflows, sizeof(*cl));
	struct dp_update u = {.version = version, .full = true, .default_class = classes - 1};
	int r = -ENOMEM;

	if (fl && cl) {
		for (uint32_t i = 0; i < n; i++) {
			flow_tuple(i, &fl[i].tuple);
			fl[i].coflow_id = coflow_of(i, classes);
		}
		for (uint32_t c = 0; c < ncoflows; c++)
			cl[c] = (struct dp_class_entry){.coflow_id = c + 1, .cls = c % classes};
		u.flows = fl, u.nflows = n;
		u.classes = cl, u.nclasses = ncoflows;
		r = dp_table_apply(t, &u);
	}
	free(fl);
	free(cl);
	return r;
}

/* Moves flow i to the next coflow (so the next class) as a delta on t. */
static int table_move_flow(struct dp_table *t, uint32_t i, uint32_t step, uint32_t classes)
{
	struct dp_flow_entry f;
	uint64_t v = dp_table_version(t);
	struct dp_update u = {.version = v + 1,
			      .base_version = v,
			      .default_class = classes - 1,
			      .flows = &f,
			      .nflows = 1};

	flow_tuple(i, &f.tuple);
	f.coflow_id = 1 + (coflow_of(i, classes) - 1 + step) % (classes * COFLOWS_PER_CLASS);
	return dp_table_apply(t, &u);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

struct lat {
	uint64_t build[MAX_UPDATES], swap[MAX_UPDATES];
	double snapshot_s[MAX_UPDATES]; /* the agent's side before apply: dp_table_snapshot */
	uint32_t n;
};

static uint64_t median_u64(uint64_t *v, uint32_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return n ? v[n / 2] : 0;
}

static uint64_t max_u64(const uint64_t *v, uint32_t n)
{
	uint64_t m = 0;

	for (uint32_t i = 0; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

/*
 * Applies one snapshot of t and waits until the enforcer has measured its
 * latency (the worker has used it). 0 or -errno.
 */
static int apply_and_measure(struct dp_enforcer *e, struct dp_table *t, struct lat *l)
{
	struct stats before, s;
	struct dp_snapshot *snap;
	double t0 = now_s(), deadline;
	int r;

	read_stats(e, &before);
	snap = dp_table_snapshot(t);
	if (!snap)
		return -ENOMEM;
	l->snapshot_s[l->n] = now_s() - t0;
	r = e->cls->apply(e, snap);
	if (r < 0)
		return r;
	deadline = now_s() + 2.0;
	do {
		read_stats(e, &s);
		if (s.measured > before.measured)
			break;
		sleep_s(20e-6);
	} while (now_s() < deadline);
	if (s.measured <= before.measured)
		return -ETIMEDOUT;
	l->build[l->n] = s.build_ns_last;
	l->swap[l->n] = s.swap_ns_last;
	if (verbose)
		printf("  update to %zu flows: snapshot %.1f us, build %.1f us, swap %.2f us\n",
		       dp_table_nflows(t), l->snapshot_s[l->n] * 1e6, (double)s.build_ns_last / 1e3,
		       (double)s.swap_ns_last / 1e3);
	l->n++;
	e->cls->collect(e, on_counter, NULL); /* as the agent does: frees retired tables */
	return 0;
}

/*
 * The nanoseconds DPDK's worker lcore threads ("rte-worker-N") of this
 * process have run on a CPU (/proc/self/task/TID/schedstat), or 0 when not
 * known. Over a window, it tells how much of it the worker really ran: on a
 * shared machine other processes take the worker's core now and then.
 */
static uint64_t worker_cpu_ns(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	uint64_t sum = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char path[300], comm[32] = "";
		unsigned long long run = 0;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		fclose(f);
		if (strncmp(comm, "rte-worker-", 11) != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%llu", &run) == 1)
			sum += run;
		fclose(f);
	}
	closedir(d);
	return sum;
}

struct window {
	double mpps_tx, mpps_rx, seconds;
	double cpu_share;    /* the worker's time on a CPU / the window (0: not known) */
	double mpps_per_cpu; /* tx packets per second the worker ran, millions */
	uint64_t tx, rx, dropped, known, unknown, unparseable;
	uint64_t cls[8];
};

static void measure(struct dp_enforcer *e, double warmup_s, double duration_s, struct window *w)
{
	struct stats a, b;
	double t0, t1;
	uint64_t c0, c1;

	sleep_s(warmup_s);
	c0 = worker_cpu_ns();
	read_stats(e, &a);
	t0 = now_s();
	sleep_s(duration_s);
	read_stats(e, &b);
	c1 = worker_cpu_ns();
	t1 = now_s();
	memset(w, 0, sizeof(*w));
	w->seconds = t1 - t0;
	w->tx = b.tx - a.tx;
	w->rx = b.rx - a.rx;
	w->dropped = b.dropped - a.dropped;
	w->known = b.known - a.known;
	w->unknown = b.unknown - a.unknown;
	w->unparseable = b.unparseable - a.unparseable;
	for (int c = 0; c < 8; c++)
		w->cls[c] = b.cls[c] - a.cls[c];
	w->mpps_tx = (double)w->tx / w->seconds / 1e6;
	w->mpps_rx = (double)w->rx / w->seconds / 1e6;
	if (c0 && c1 > c0) {
		w->cpu_share = (double)(c1 - c0) / 1e9 / w->seconds;
		w->mpps_per_cpu = (double)w->tx / ((double)(c1 - c0) / 1e9) / 1e6;
	}
}

static void print_window(const char *name, const struct window *w, uint32_t classes)
{
	uint64_t all = w->known + w->unknown + w->unparseable;

	printf("%-22s %7.3f Mpps tx  (%7.3f Mpps rx; %" PRIu64
	       " packets in %.2f s, dropped %" PRIu64
	       ", known %.1f%%, unknown %.1f%%, unparseable %" PRIu64 ")\n",
	       name, w->mpps_tx, w->mpps_rx, w->tx, w->seconds, w->dropped,
	       all ? 100.0 * (double)w->known / (double)all : 0.0,
	       all ? 100.0 * (double)w->unknown / (double)all : 0.0, w->unparseable);
	printf("%-22s worker on a CPU %.1f%% of the window: %.3f Mpps per worker CPU-second\n", "",
	       w->cpu_share * 100, w->mpps_per_cpu);
	printf("%-22s by class:", "");
	for (uint32_t c = 0; c < classes; c++)
		printf(" %.1f%%", all ? 100.0 * (double)w->cls[c] / (double)all : 0.0);
	printf("\n");
}

struct lat_summary {
	uint64_t build_med, build_max, swap_med, swap_max;
	double snapshot_med_s;
};

static void summarise(struct lat *l, struct lat_summary *s)
{
	double sn[MAX_UPDATES];

	s->build_max = max_u64(l->build, l->n);
	s->swap_max = max_u64(l->swap, l->n);
	s->build_med = median_u64(l->build, l->n);
	s->swap_med = median_u64(l->swap, l->n);
	memcpy(sn, l->snapshot_s, l->n * sizeof(double));
	for (uint32_t i = 1; i < l->n; i++) /* insertion sort: n is small */
		for (uint32_t j = i; j > 0 && sn[j - 1] > sn[j]; j--) {
			double x = sn[j];

			sn[j] = sn[j - 1];
			sn[j - 1] = x;
		}
	s->snapshot_med_s = l->n ? sn[l->n / 2] : 0;
}

static void print_lat(uint32_t flows, const struct lat_summary *s, uint32_t n)
{
	printf("table update, %6u flows: build median %8.1f us max %8.1f us; swap median %6.2f us "
	       "max %6.2f us (%u updates; agent snapshot median %.1f us)\n",
	       flows, (double)s->build_med / 1e3, (double)s->build_max / 1e3,
	       (double)s->swap_med / 1e3, (double)s->swap_max / 1e3, n, s->snapshot_med_s * 1e6);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: loom_dpdk_bench [OPTIONS]\n"
		"  -d, --duration S      measured window per throughput run (default 5)\n"
		"  -w, --warmup S        warm-up before each window (default 1)\n"
		"  -f, --flows N         flows in the table (default 65536)\n"
		"  -k, --classes K       classes, 1..8 (default 8)\n"
		"  -b, --burst N         enforcer rx/tx burst, 1..256 (default 32)\n"
		"  -u, --unknown SHARE   share of unknown flows in the mixed run, 0..1 (default 0.1)\n"
		"  -n, --updates N       table updates per latency series (default 20; 0: none)\n"
		"  -s, --small-flows N   flows of the small tables (default 16)\n"
		"  -e, --eal ARGS        EAL arguments (default: --no-huge --no-pci --no-shconf\n"
		"                        -m 512 -l 0-1 --vdev net_null0 --vdev net_null1)\n"
		"  -v, --verbose         print every table update's latency\n"
		"  -h, --help\n");
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {{"duration", required_argument, NULL, 'd'},
						 {"warmup", required_argument, NULL, 'w'},
						 {"flows", required_argument, NULL, 'f'},
						 {"classes", required_argument, NULL, 'k'},
						 {"burst", required_argument, NULL, 'b'},
						 {"unknown", required_argument, NULL, 'u'},
						 {"updates", required_argument, NULL, 'n'},
						 {"small-flows", required_argument, NULL, 's'},
						 {"eal", required_argument, NULL, 'e'},
						 {"verbose", no_argument, NULL, 'v'},
						 {"help", no_argument, NULL, 'h'},
						 {NULL, 0, NULL, 0}};
	int c;

	*o = (struct opts){.duration_s = 5,
			   .warmup_s = 1,
			   .flows = 65536,
			   .classes = 8,
			   .burst = 32,
			   .updates = 20,
			   .small_flows = 16,
			   .unknown_share = 0.1,
			   .eal = "--no-huge --no-pci --no-shconf -m 512 -l 0-1 --vdev net_null0 "
				  "--vdev net_null1"};
	while ((c = getopt_long(argc, argv, "d:w:f:k:b:u:n:s:e:vh", longopts, NULL)) != -1) {
		char *end = NULL;

		errno = 0;
		switch (c) {
		case 'd':
			o->duration_s = strtod(optarg, &end);
			if (o->duration_s <= 0 || o->duration_s > 3600)
				end = NULL;
			break;
		case 'w':
			o->warmup_s = strtod(optarg, &end);
			if (o->warmup_s < 0 || o->warmup_s > 3600)
				end = NULL;
			break;
		case 'u':
			o->unknown_share = strtod(optarg, &end);
			if (o->unknown_share < 0 || o->unknown_share > 1)
				end = NULL;
			break;
		case 'f':
		case 'k':
		case 'b':
		case 'n':
		case 's': {
			unsigned long v = strtoul(optarg, &end, 10);
			bool ok = true;

			if (c == 'f')
				ok = v >= 1 && v <= (1u << 24), o->flows = (uint32_t)v;
			else if (c == 'k')
				ok = v >= 1 && v <= 8, o->classes = (uint32_t)v;
			else if (c == 'b')
				ok = v >= 1 && v <= 256, o->burst = (uint32_t)v;
			else if (c == 'n')
				ok = v <= MAX_UPDATES, o->updates = (uint32_t)v;
			else
				ok = v >= 1 && v <= (1u << 24), o->small_flows = (uint32_t)v;
			if (!ok)
				end = NULL;
			break;
		}
		case 'e':
			o->eal = optarg;
			end = (char *)"";
			break;
		case 'v':
			verbose = true;
			end = (char *)"";
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
		if (!end || *end || errno) {
			fprintf(stderr, "loom_dpdk_bench: bad value '%s' for -%c\n", optarg, c);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return -EINVAL;
	}
	return 0;
}

/* Starts the EAL on o->eal (split on spaces). 0 or -1. */
static int eal_start(const struct opts *o)
{
	char *buf = strdup(o->eal), *argv[64], *save = NULL;
	int argc = 0;

	if (!buf)
		return -1;
	argv[argc++] = (char *)"loom_dpdk_bench";
	for (char *t = strtok_r(buf, " \t", &save); t && argc < 63;
	     t = strtok_r(NULL, " \t", &save))
		argv[argc++] = t;
	argv[argc] = NULL;
	if (rte_eal_init(argc, argv) < 0) {
		fprintf(stderr, "loom_dpdk_bench: rte_eal_init failed: %s\n",
			rte_strerror(rte_errno));
		return -1; /* buf stays: the EAL may keep pointers into argv */
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct dp_enforcer e = {0};
	struct loom_err err = {0};
	struct dp_table *t = NULL;
	struct window wk, wu;
	static struct lat big, small;
	struct lat_summary sb = {0}, ss = {0};
	const struct rte_eth_rxtx_callback *cb = NULL;
	uint16_t rx_port, tx_port;
	char args[128];
	int r;

	if (parse_opts(argc, argv, &o) < 0)
		return 2;
	if (eal_start(&o) < 0)
		return 1;
	if (rte_lcore_count() < 2) {
		fprintf(stderr, "loom_dpdk_bench: needs two lcores (e.g. -l 0-1)\n");
		return 1;
	}
	if (rte_eth_dev_get_port_by_name("net_null0", &rx_port) != 0 ||
	    rte_eth_dev_get_port_by_name("net_null1", &tx_port) != 0) {
		fprintf(stderr, "loom_dpdk_bench: needs the vdevs net_null0 and net_null1\n");
		return 1;
	}
	loom_log_set_level(LOOM_LOG_WARN);
	e.cls = dp_enforcer_find("dpdk");
	if (!e.cls) {
		fprintf(stderr, "loom_dpdk_bench: this build has no dpdk enforcer\n");
		return 1;
	}
	/* the EAL is up: init takes only the options after "--" */
	snprintf(args, sizeof(args), "-- rx=%u tx=%u burst=%u offload=off", rx_port, tx_port,
		 o.burst);
	r = e.cls->init(&e, args, o.classes, &err);
	if (r < 0) {
		fprintf(stderr, "loom_dpdk_bench: init: %s\n", err.msg);
		return 1;
	}

	t = dp_table_new(o.classes);
	if (!t || table_fill(t, o.flows, o.classes, 1) < 0) {
		fprintf(stderr, "loom_dpdk_bench: building the table failed\n");
		goto fail;
	}
	{
		struct dp_snapshot *snap = dp_table_snapshot(t);

		if (!snap || (r = e.cls->apply(&e, snap)) < 0) {
			fprintf(stderr, "loom_dpdk_bench: apply: %s\n",
				strerror(snap ? -r : ENOMEM));
			goto fail;
		}
	}
	/* the worker is already polling: frames before the callback are unparseable (warm-up) */
	gen_init(&gen, o.flows, 0);
	cb = rte_eth_add_rx_callback(rx_port, 0, rx_callback, &gen);
	if (!cb) {
		fprintf(stderr, "loom_dpdk_bench: rte_eth_add_rx_callback: %s\n",
			rte_strerror(rte_errno));
		goto fail;
	}

	printf("loom_dpdk_bench: %u flows, %u classes, burst %u, %u-byte frames, rx port %u -> tx "
	       "port %u, shaper off, DSCP in software\n",
	       o.flows, o.classes, o.burst, FRAME_BYTES, rx_port, tx_port);
	printf("EAL: %s\n", o.eal);
	measure(&e, o.warmup_s, o.duration_s, &wk);
	print_window("all known flows:", &wk, o.classes);
	__atomic_store_n(&gen.unknown_thresh, (uint32_t)(o.unknown_share * 4294967295.0),
			 __ATOMIC_RELAXED);
	measure(&e, o.warmup_s < 0.5 ? o.warmup_s : 0.5, o.duration_s, &wu);
	{
		char name[40];

		snprintf(name, sizeof(name), "%.0f%% unknown flows:", o.unknown_share * 100);
		print_window(name, &wu, o.classes);
	}
	__atomic_store_n(&gen.unknown_thresh, 0, __ATOMIC_RELAXED);

	/* table update latency, traffic flowing */
	for (uint32_t i = 0; i < o.updates; i++) {
		r = table_move_flow(t, (i * 7919u) % o.flows, 1, o.classes);
		if (r == 0)
			r = apply_and_measure(&e, t, &big);
		if (r < 0) {
			fprintf(stderr, "loom_dpdk_bench: update %u: %s\n", i, strerror(-r));
			goto fail;
		}
	}
	if (o.updates) {
		uint64_t v = dp_table_version(t);

		summarise(&big, &sb);
		print_lat(o.flows, &sb, o.updates);
		t = dp_table_free(t);
		t = dp_table_new(o.classes);
		if (!t || table_fill(t, o.small_flows, o.classes, v + 1) < 0) {
			fprintf(stderr, "loom_dpdk_bench: building the small table failed\n");
			goto fail;
		}
		for (uint32_t i = 0; i < o.updates; i++) {
			r = table_move_flow(t, i % o.small_flows, 1, o.classes);
			if (r == 0)
				r = apply_and_measure(&e, t, &small);
			if (r < 0) {
				fprintf(stderr, "loom_dpdk_bench: small update %u: %s\n", i,
					strerror(-r));
				goto fail;
			}
		}
		summarise(&small, &ss);
		print_lat(o.small_flows, &ss, o.updates);
	}

	printf("{\"bench\":\"dpdk\",\"flows\":%u,\"classes\":%u,\"burst\":%u,\"frame_bytes\":%u,"
	       "\"duration_s\":%.3f,\"mpps\":%.4f,\"mpps_rx\":%.4f,\"worker_cpu_share\":%.4f,"
	       "\"mpps_per_worker_cpu_s\":%.4f,\"mpps_unknown_mix_per_worker_cpu_s\":%.4f,\"dropped\":%" PRIu64
	       ",\"unknown_share\":%.3f,\"mpps_unknown_mix\":%.4f,\"unknown_measured\":%.4f,"
	       "\"updates\":%u,\"full_build_ns_median\":%" PRIu64 ",\"full_build_ns_max\":%" PRIu64
	       ",\"full_swap_ns_median\":%" PRIu64 ",\"full_swap_ns_max\":%" PRIu64
	       ",\"full_snapshot_ns_median\":%.0f,\"small_flows\":%u,\"small_build_ns_median\":%" PRIu64
	       ",\"small_build_ns_max\":%" PRIu64 ",\"small_swap_ns_median\":%" PRIu64
	       ",\"small_swap_ns_max\":%" PRIu64 "}\n",
	       o.flows, o.classes, o.burst, FRAME_BYTES, wk.seconds, wk.mpps_tx, wk.mpps_rx,
	       wk.cpu_share, wk.mpps_per_cpu, wu.mpps_per_cpu, wk.dropped, o.unknown_share,
	       wu.mpps_tx,
	       wu.known + wu.unknown ? (double)wu.unknown / (double)(wu.known + wu.unknown) : 0.0,
	       o.updates, sb.build_med, sb.build_max, sb.swap_med, sb.swap_max,
	       sb.snapshot_med_s * 1e9, o.small_flows, ss.build_med, ss.build_max, ss.swap_med,
	       ss.swap_max);
	fflush(stdout);
	e.cls->done(&e); /* stops the worker before the callback goes */
	rte_eth_remove_rx_callback(rx_port, 0, cb);
	dp_table_free(t);
	rte_eal_cleanup();
	return 0;
fail:
	e.cls->done(&e);
	if (cb)
		rte_eth_remove_rx_callback(rx_port, 0, cb);
	dp_table_free(t);
	return 1;
}
