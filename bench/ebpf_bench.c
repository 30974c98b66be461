/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom_ebpf_bench: the cost per packet of Loom's tc egress program
 * (ebpf/loom_tc.bpf.c), measured in the kernel with BPF_PROG_TEST_RUN, with
 * a full table (64K flows) in its map, against an empty tc program built the
 * same way (ebpf/loom_tc_empty.bpf.c) as the baseline.
 *
 *   loom_ebpf_bench [--repeat N] [--runs R] [--flows F]
 *
 * Cases (each R runs of N repeats; the median run's ns per repeat):
 *   empty      the baseline: a program that returns TC_ACT_OK
 *   hit4       IPv4/TCP frame of a flow in the table, DSCP already the class's
 *   hit6       the same over IPv6
 *   miss       IPv4/UDP frame of a flow not in the table (after its first
 *              packet: a known unknown, counted in the LRU map)
 * With repeat, the kernel runs the program on one skb over and over, so the
 * DSCP is rewritten at most once. A second table therefore runs one packet
 * per BPF_PROG_TEST_RUN (a fresh skb each): the empty program, a hit whose
 * DSCP is already right and a hit whose DSCP must change (the in-kernel time
 * of single runs includes the kernel's timing overhead and colder caches;
 * compare these three with each other, not with the first table).
 * Also: the time to load a table of F flows into the map (ebpf_tc_sync
 * from empty) and to apply a 1% change (the median of 5). Needs root.
 * Prints Markdown.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ebpf/loader.h"
#include "loom_tc_empty.skel.h"

#define CLASSES  8
#define MAX_RUNS 64

static uint8_t dscp_of(uint32_t c)
{
	return (uint8_t)(8 * (7 - c));
}

static struct loom_tc_key flow_key(uint32_t i, int family)
{
	struct loom_tc_key k;

	memset(&k, 0, sizeof(k));
	k.family = (uint8_t)family;
	k.protocol = IPPROTO_TCP;
	k.src_port = htons((uint16_t)(20000 + i % 40000));
	k.dst_port = htons(5001);
	if (family == 4) {
		k.src[0] = 10, k.src[1] = 1, k.src[2] = (uint8_t)(i >> 8), k.src[3] = (uint8_t)i;
		k.dst[0] = 10, k.dst[1] = 2, k.dst[3] = 1;
	} else {
		k.src[0] = 0xfd, k.src[14] = (uint8_t)(i >> 8), k.src[15] = (uint8_t)i;
		k.dst[0] = 0xfd, k.dst[15] = 2;
	}
	return k;
}

/* An Ethernet frame of key's flow (TCP or UDP per key) with tos; returns its length. */
static size_t frame(uint8_t *p, const struct loom_tc_key *k, uint8_t tos)
{
	size_t n = 14, l4 = k->protocol == IPPROTO_TCP ? 20 : 8, pay = 64;

	memset(p, 0, 256);
	memset(p, 0x02, 12);
	if (k->family == 4) {
		uint32_t s = 0;

		p[12] = 0x08;
		p[n] = 0x45, p[n + 1] = tos;
		p[n + 2] = (uint8_t)((20 + l4 + pay) >> 8), p[n + 3] = (uint8_t)(20 + l4 + pay);
		p[n + 8] = 64, p[n + 9] = k->protocol;
		memcpy(p + n + 12, k->src, 4);
		memcpy(p + n + 16, k->dst, 4);
		for (int i = 0; i < 20; i += 2)
			s += (uint32_t)(p[n + i] << 8 | p[n + i + 1]);
		while (s >> 16)
			s = (s & 0xffff) + (s >> 16);
		p[n + 10] = (uint8_t)(~s >> 8), p[n + 11] = (uint8_t)~s;
		n += 20;
	} else {
		p[12] = 0x86, p[13] = 0xdd;
		p[n] = (uint8_t)(0x60 | tos >> 4), p[n + 1] = (uint8_t)(tos << 4);
		p[n + 4] = (uint8_t)((l4 + pay) >> 8), p[n + 5] = (uint8_t)(l4 + pay);
		p[n + 6] = k->protocol, p[n + 7] = 64;
		memcpy(p + n + 8, k->src, 16);
		memcpy(p + n + 24, k->dst, 16);
		n += 40;
	}
	memcpy(p + n, &k->src_port, 2);
	memcpy(p + n + 2, &k->dst_port, 2);
	if (k->protocol == IPPROTO_TCP)
		p[n + 12] = 0x50;
	return n + l4 + pay;
}

/* ns per repeat of one BPF_PROG_TEST_RUN with repeat; -1 on error. */
static double run_once(int fd, const uint8_t *pkt, size_t len, uint32_t repeat)
{
	uint8_t out[256];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = (uint32_t)len,
		    .data_out = out, .data_size_out = sizeof(out), .repeat = repeat);
	int r = bpf_prog_test_run_opts(fd, &o);

	if (r < 0 || o.retval != TC_ACT_OK) {
		fprintf(stderr, "BPF_PROG_TEST_RUN: %s (retval %u)\n", strerror(-r), o.retval);
		return -1;
	}
	return (double)o.duration;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median over runs of run_once's ns per repeat. */
static double median_ns(int fd, const uint8_t *pkt, size_t len, uint32_t repeat, int runs)
{
	double v[MAX_RUNS];

	for (int i = 0; i < runs; i++)
		if ((v[i] = run_once(fd, pkt, len, repeat)) < 0)
			exit(1);
	qsort(v, (size_t)runs, sizeof(v[0]), cmp_double);
	return v[runs / 2];
}

/* The mean in-kernel ns of n single-repeat runs (a fresh skb each). */
static double single_ns(int fd, const uint8_t *pkt, size_t len, uint32_t n)
{
	double sum = 0;

	for (uint32_t i = 0; i < n; i++) {
		double d = run_once(fd, pkt, len, 1);

		if (d < 0)
			exit(1);
		sum += d;
	}
	return sum / n;
}

/* Private copy of loom_clock_mono_ns() (in ms): this benchmark links ebpf/ alone, no common/. */
static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct loom_tc_key));
}

static void drain(void *ctx, const struct loom_tc_event *ev)
{
	(void)ctx;
	(void)ev;
}

int main(int argc, char **argv)
{
	uint32_t repeat = 1000000, flows = 65536, singles = 200000;
	int runs = 5;
	struct ebpf_tc_opts o = {
		.classes = CLASSES, .rewrite_dscp = true, .default_class = CLASSES - 1};
	struct ebpf_tc_entry *e;
	struct ebpf_tc_sync_result res;
	struct loom_tc_empty *empty;
	struct ebpf_tc *tc;
	struct loom_tc_key k;
	uint8_t hit4[256], hit6[256], miss[256], rewrite[256];
	size_t lhit4, lhit6, lmiss, lrewrite;
	double t0, load_ms, diff_ms, ns_empty, ns_hit4, ns_hit6, ns_miss, ns_s_empty, ns_s_hit,
		ns_s_rw;
	struct ebpf_err err;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
			repeat = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--flows") && i + 1 < argc)
			flows = (uint32_t)strtoul(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "usage: %s [--repeat N] [--runs R] [--flows F]\n", argv[0]);
			return 2;
		}
	}
	if (runs < 1 || runs > MAX_RUNS || repeat < 1 || flows < 2 || flows > LOOM_TC_MAX_FLOWS) {
		fprintf(stderr, "%s: runs 1..%d, repeat >= 1, flows 2..%d\n", argv[0], MAX_RUNS,
			LOOM_TC_MAX_FLOWS);
		return 2;
	}
	for (uint32_t c = 0; c < CLASSES; c++)
		o.dscp[c] = dscp_of(c);
	tc = ebpf_tc_new(&o, &err);
	if (!tc) {
		fprintf(stderr, "loom_ebpf_bench: %s\n", err.msg);
		return errno == EPERM ? 77 : 1;
	}
	empty = loom_tc_empty__open_and_load();
	if (!empty) {
		fprintf(stderr, "loom_ebpf_bench: loading the empty program: %s\n",
			strerror(errno));
		ebpf_tc_free(tc);
		return 1;
	}

	/* the table: half IPv4, half IPv6 flows, classes round robin */
	e = calloc(flows, sizeof(*e));
	if (!e)
		return 1;
	for (uint32_t i = 0; i < flows; i++) {
		e[i].key = flow_key(i / 2, i % 2 ? 6 : 4);
		e[i].val.slot = i;
		e[i].val.cls = (uint8_t)(i % CLASSES);
	}
	/* in key order, as the tc enforcer hands them over (its snapshots are sorted so) */
	qsort(e, flows, sizeof(*e), key_cmp);
	t0 = now_ms();
	if (ebpf_tc_sync(tc, e, flows, &res, &err) < 0) {
		fprintf(stderr, "loom_ebpf_bench: %s\n", err.msg);
		return 1;
	}
	load_ms = now_ms() - t0;
	/* 1% of the flows change class: the median of 5 such tables (the first one also
	 * touches the loader's second buffer for the first time) */
	{
		double d[5];

		for (int round = 0; round < 5; round++) {
			for (uint32_t i = (uint32_t)round; i < flows; i += 100)
				e[i].val.cls = (uint8_t)((e[i].val.cls + 1) % CLASSES);
			t0 = now_ms();
			if (ebpf_tc_sync(tc, e, flows, &res, &err) < 0) {
				fprintf(stderr, "loom_ebpf_bench: %s\n", err.msg);
				return 1;
			}
			d[round] = now_ms() - t0;
		}
		qsort(d, 5, sizeof(d[0]), cmp_double);
		diff_ms = d[2];
	}

	/* sorted by key: the IPv4 flows first, then the IPv6 ones; take one from each middle */
	k = e[flows / 4].key;
	lhit4 = frame(hit4, &k, (uint8_t)(dscp_of(e[flows / 4].val.cls) << 2));
	lrewrite = frame(rewrite, &k, 0x01);
	k = e[flows / 4 * 3].key;
	lhit6 = frame(hit6, &k, (uint8_t)(dscp_of(e[flows / 4 * 3].val.cls) << 2));
	k = flow_key(flows + 7, 4);
	k.protocol = IPPROTO_UDP;
	lmiss = frame(miss, &k, (uint8_t)(dscp_of(CLASSES - 1) << 2));

	/* warm up (and let the miss flow enter the LRU map) */
	run_once(ebpf_tc_prog_fd(tc), miss, lmiss, 1000);
	run_once(bpf_program__fd(empty->progs.loom_tc_empty), hit4, lhit4, 1000);
	ns_empty =
		median_ns(bpf_program__fd(empty->progs.loom_tc_empty), hit4, lhit4, repeat, runs);
	ns_hit4 = median_ns(ebpf_tc_prog_fd(tc), hit4, lhit4, repeat, runs);
	ns_hit6 = median_ns(ebpf_tc_prog_fd(tc), hit6, lhit6, repeat, runs);
	ns_miss = median_ns(ebpf_tc_prog_fd(tc), miss, lmiss, repeat, runs);
	ns_s_empty =
		single_ns(bpf_program__fd(empty->progs.loom_tc_empty), rewrite, lrewrite, singles);
	ns_s_hit = single_ns(ebpf_tc_prog_fd(tc), hit4, lhit4, singles);
	ns_s_rw = single_ns(ebpf_tc_prog_fd(tc), rewrite, lrewrite, singles);
	ebpf_tc_events_poll(tc, drain, NULL);

	printf("flows in the map: %u (IPv4 and IPv6 TCP), classes: %d, repeat %u, median of %d "
	       "runs\n\n",
	       flows, CLASSES, repeat, runs);
	printf("| case | ns/packet | minus empty |\n|---|---|---|\n");
	printf("| empty program (baseline) | %.1f | |\n", ns_empty);
	printf("| hit, IPv4/TCP | %.1f | %.1f |\n", ns_hit4, ns_hit4 - ns_empty);
	printf("| hit, IPv6/TCP | %.1f | %.1f |\n", ns_hit6, ns_hit6 - ns_empty);
	printf("| miss (unknown IPv4/UDP flow) | %.1f | %.1f |\n", ns_miss, ns_miss - ns_empty);
	printf("\nOne packet per BPF_PROG_TEST_RUN (%u calls each, a fresh skb per call):\n\n",
	       singles);
	printf("| case | ns/packet | minus empty |\n|---|---|---|\n");
	printf("| empty program (baseline) | %.1f | |\n", ns_s_empty);
	printf("| hit, IPv4/TCP, DSCP already right | %.1f | %.1f |\n", ns_s_hit,
	       ns_s_hit - ns_s_empty);
	printf("| hit, IPv4/TCP, DSCP rewritten | %.1f | %.1f |\n", ns_s_rw, ns_s_rw - ns_s_empty);
	printf("\ntable load: %u flows into an empty map %.1f ms; 1%% of them changed %.2f ms "
	       "(%zu written; median of 5)\n",
	       flows, load_ms, diff_ms, res.updated);

	loom_tc_empty__destroy(empty);
	ebpf_tc_free(tc);
	free(e);
	return 0;
}
