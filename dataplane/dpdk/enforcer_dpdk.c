/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "dpdk" enforcer: see enforcer_dpdk.h.
 */
#include "dataplane/dpdk/enforcer_dpdk.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "common/log.h"
#include "common/units.h"
#include "dataplane/dpdk/classify.h"
#include "dataplane/dpdk/offload.h"
#include "dataplane/dpdk/prioq.h"

#define DP_DPDK_MAX_ARGS    64
#define DP_DPDK_MAX_BURST   256
#define DP_DPDK_RING_DESC   1024
#define DP_DPDK_POOL_MBUFS  8191
#define DP_DPDK_MAX_IDLE_US 1000
#define DP_DPDK_SYNC_TIMEOUT_NS                                                                    \
	2000000ull /* how long apply waits for the worker (then collect reclaims) */

/*
 * One published table: the classification table, the snapshot it was built
 * from (for mapping counter slots back to tuples), and its own counters,
 * written only by the worker while the table is current. last[] is the
 * control side's copy of each slot's bytes at the last collect.
 */
struct dp_dpdk_state {
	struct dp_dpdk_counters c;
	struct dp_dpdk_ctable *ct; /* NULL once retired and quiescent */
	struct dp_snapshot *snap;  /* NULL for the initial empty table */
	struct dp_dpdk_flow_counter *flows;
	uint64_t *last;
	uint64_t token; /* rte_rcu_qsbr token taken when retired */
	/* latency (TSC): apply called, table published, first used by the worker (atomic) */
	uint64_t apply_tsc, publish_tsc, used_tsc;
	bool latency_noted;
	struct dp_dpdk_state *next;
};

/* The worker's own counters (one worker lcore). */
struct dp_dpdk_wcounters {
	uint64_t rx_pkts;
	uint64_t tx_pkts;
	uint64_t queue_drops; /* a class queue was full */
	uint64_t tx_drops;    /* the TX queue did not take them */
	uint64_t back_pkts;   /* bump=on: returned from the TX port to the RX port */
	uint64_t back_drops;  /* bump=on: the RX port's TX queue did not take them */
} __rte_cache_aligned;

/*
 * Shared with the worker lcore, every access after launch is an __atomic
 * builtin: cur (control side stores with release, the worker loads with
 * acquire), stop, hw_dscp, exited, and the counters (DP_DPDK_COUNT_ADD).
 * Everything else the worker reads is set before rte_eal_remote_launch()
 * and not changed while it runs; the control side frees what the worker
 * used only after an RCU grace period (retired tables) or after exited.
 */
struct dpe {
	/* read by the worker */
	struct dp_dpdk_state *cur; /* atomic: store release, load acquire */
	uint32_t stop;             /* atomic: the control side asks the worker to return */
	uint32_t exited;           /* atomic: the worker's last store (release) before it returns */
	uint16_t rx_port, tx_port;
	uint16_t burst;
	bool bump;
	uint32_t idle_us;
	struct dp_dpdk_prioq *q;
	struct dp_dpdk_shaper sh;
	bool shaping;
	uint32_t hw_dscp; /* atomic: the NIC marks DSCP (offload.h), skip it here */
	struct dp_dscp_map dscp;
	struct rte_rcu_qsbr *qsv;
	struct dp_dpdk_wcounters wc;

	/* control side only */
	uint32_t classes;
	uint32_t qsize;
	uint64_t rate_bps, bucket_bytes;
	unsigned int lcore;
	bool launched, rx_started, tx_started;
	struct rte_mempool *pool;
	struct dp_dpdk_state *retired;     /* newest first */
	struct dp_dpdk_unknown_sink *sink; /* unknown flows from the worker (classify.h) */
	uint64_t unknown_reported;
	enum dp_dpdk_offload_mode offload_mode;
	struct dp_dpdk_offload *off; /* NULL: software marking */
	struct loom_err offload_why;
	/* table update -> fast path latency, ns: last and max of build (apply -> published)
	 * and swap (published -> first used by the worker) */
	uint64_t build_ns_last, build_ns_max, swap_ns_last, swap_ns_max, latency_samples;
	/* counters of tables freed so far, so that stats only grow */
	uint64_t gone_class_packets[DP_DPDK_MAX_CLASSES];
	uint64_t gone_known, gone_unknown, gone_unparseable;
	uint64_t applied;
};

static bool eal_started; /* this module called rte_eal_init */
static unsigned int instances;

/*
 * bump=on: what the TX port (the fabric's side) receives leaves through the
 * RX port (the host's side) as it came. The number of packets moved.
 */
static uint16_t worker_return(struct dpe *d)
{
	struct rte_mbuf *pkts[DP_DPDK_MAX_BURST];
	uint16_t n = rte_eth_rx_burst(d->tx_port, 0, pkts, d->burst), k;

	if (!n)
		return 0;
	k = rte_eth_tx_burst(d->rx_port, 0, pkts, n);
	DP_DPDK_COUNT_ADD(d->wc.back_pkts, k);
	if (k < n) {
		DP_DPDK_COUNT_ADD(d->wc.back_drops, n - k);
		rte_pktmbuf_free_bulk(pkts + k, n - k);
	}
	return n;
}

/*
 * idle=USEC: sleeps after a pass that moved nothing, offline for RCU
 * meanwhile (the control side need not wait for a sleeping worker; the
 * loop reloads the current table after it comes back online).
 */
static void worker_idle(struct dpe *d)
{
	struct timespec ts = {0, (long)d->idle_us * 1000};

	rte_rcu_qsbr_thread_offline(d->qsv, 0);
	nanosleep(&ts, NULL);
	rte_rcu_qsbr_thread_online(d->qsv, 0);
}

static int worker_main(void *arg)
{
	struct dpe *d = arg;
	struct rte_mbuf *pkts[DP_DPDK_MAX_BURST], *out[DP_DPDK_MAX_BURST];
	uint8_t cls[DP_DPDK_MAX_BURST];
	struct dp_dpdk_state *prev = NULL;

	rte_rcu_qsbr_thread_register(d->qsv, 0);
	rte_rcu_qsbr_thread_online(d->qsv, 0);
	while (!__atomic_load_n(&d->stop, __ATOMIC_RELAXED)) {
		struct dp_dpdk_state *s = __atomic_load_n(&d->cur, __ATOMIC_ACQUIRE);
		uint16_t n = rte_eth_rx_burst(d->rx_port, 0, pkts, d->burst);
		uint16_t k;
		uint32_t moved = n;

		if (s != prev) { /* a new table: note when it is first used */
			__atomic_store_n(&s->used_tsc, rte_rdtsc(), __ATOMIC_RELAXED);
			prev = s;
		}
		if (n) {
			DP_DPDK_COUNT_ADD(d->wc.rx_pkts, n);
			/* DSCP is marked here unless the NIC does it (offload.h) */
			dp_dpdk_classify_burst(
				s->ct, pkts, n, cls, &s->c,
				__atomic_load_n(&d->hw_dscp, __ATOMIC_RELAXED) ? NULL : &d->dscp);
			k = dp_dpdk_prioq_enqueue_burst(d->q, pkts, cls, n);
			if (k < n) {
				DP_DPDK_COUNT_ADD(d->wc.queue_drops, n - k);
				rte_pktmbuf_free_bulk(pkts + k, n - k);
			}
		}
		n = dp_dpdk_prioq_dequeue_burst(d->q, out, d->burst, d->shaping ? &d->sh : NULL,
						rte_rdtsc());
		moved += n;
		if (n) {
			k = rte_eth_tx_burst(d->tx_port, 0, out, n);
			DP_DPDK_COUNT_ADD(d->wc.tx_pkts, k);
			if (k < n) {
				DP_DPDK_COUNT_ADD(d->wc.tx_drops, n - k);
				rte_pktmbuf_free_bulk(out + k, n - k);
			}
		}
		if (d->bump)
			moved += worker_return(d);
		rte_rcu_qsbr_quiescent(d->qsv, 0);
		if (!moved && d->idle_us)
			worker_idle(d);
	}
	rte_rcu_qsbr_thread_offline(d->qsv, 0);
	rte_rcu_qsbr_thread_unregister(d->qsv, 0);
	/* dp_dpdk_done() frees what this thread used once it reads this (acquire) */
	__atomic_store_n(&d->exited, 1, __ATOMIC_RELEASE);
	return 0;
}

/* The current table, as the control side (its only writer) reads it. */
static struct dp_dpdk_state *cur_state(const struct dpe *d)
{
	return __atomic_load_n(&d->cur, __ATOMIC_RELAXED);
}

/* ---- tables ---------------------------------------------------------------------------------- */

static struct dp_dpdk_state *state_free(struct dp_dpdk_state *s)
{
	if (!s)
		return NULL;
	dp_dpdk_ctable_free(s->ct);
	dp_snapshot_free(s->snap);
	free(s->flows);
	free(s->last);
	free(s);
	return NULL;
}

/* Builds a state for snap (NULL: an empty table with default_class). Takes snap. */
static struct dp_dpdk_state *state_new(struct dp_snapshot *snap, uint32_t default_class,
				       struct dp_dpdk_unknown_sink *sink)
{
	struct dp_dpdk_state *s = calloc(1, sizeof(*s));
	struct dp_snapshot empty = {.default_class = default_class};
	size_t n = snap ? snap->n : 0;

	if (!s) {
		dp_snapshot_free(snap);
		return NULL;
	}
	s->snap = snap;
	s->flows = calloc(n ? n : 1, sizeof(*s->flows));
	s->last = calloc(n ? n : 1, sizeof(*s->last));
	if (!s->flows || !s->last || n > UINT32_MAX) {
		errno = ENOMEM;
		return state_free(s);
	}
	s->ct = dp_dpdk_ctable_new(snap ? snap : &empty, SOCKET_ID_ANY);
	if (!s->ct) {
		int e = errno;

		state_free(s);
		errno = e;
		return NULL;
	}
	dp_dpdk_counters_init(&s->c, s->flows, (uint32_t)n);
	s->c.sink = sink;
	return s;
}

/* Reports s's per-flow bytes since the last collect; done when its table is retired and
 * the flow is not in cur. */
static void state_report(struct dp_dpdk_state *s, const struct dp_dpdk_state *cur, dp_counter_fn fn,
			 void *ctx)
{
	bool retired = s != cur;
	uint64_t ver = __atomic_load_n(&s->c.flows_version, __ATOMIC_ACQUIRE);

	if (!s->snap || ver != s->snap->version)
		return; /* the worker has not used this table yet */
	for (size_t i = 0; i < s->snap->n; i++) {
		uint64_t b = __atomic_load_n(&s->flows[i].bytes, __ATOMIC_RELAXED);
		const struct wire_tuple *t = &s->snap->flows[i].tuple;
		/* done only once the worker cannot count into the retired table any more */
		bool done = retired && !s->ct && !(cur->snap && dp_snapshot_find(cur->snap, t));

		if (b == s->last[i])
			continue;
		fn(ctx, t, b - s->last[i], done);
		s->last[i] = b;
	}
}

/* Adds a table's final counters to the totals kept for stats. */
static void state_bury(struct dpe *d, const struct dp_dpdk_state *s)
{
	for (uint32_t c = 0; c < DP_DPDK_MAX_CLASSES; c++)
		d->gone_class_packets[c] +=
			__atomic_load_n(&s->c.class_packets[c], __ATOMIC_RELAXED);
	d->gone_known += __atomic_load_n(&s->c.known, __ATOMIC_RELAXED);
	d->gone_unknown += __atomic_load_n(&s->c.unknown, __ATOMIC_RELAXED);
	for (uint32_t r = 1; r < DP_DPDK_PARSE_NREASONS; r++)
		d->gone_unparseable += __atomic_load_n(&s->c.unparseable[r], __ATOMIC_RELAXED);
}

/* Waits (bounded) until the worker has passed a quiescent point after token. */
static bool wait_quiescent(struct dpe *d, uint64_t token)
{
	uint64_t deadline = rte_get_timer_cycles() +
			    rte_get_timer_hz() * DP_DPDK_SYNC_TIMEOUT_NS / 1000000000ull;

	while (!rte_rcu_qsbr_check(d->qsv, token, false)) {
		struct timespec ts = {0, 20000};

		if (rte_get_timer_cycles() > deadline)
			return false;
		nanosleep(&ts, NULL);
	}
	return true;
}

/* Frees the classification tables of retired states the worker no longer uses. */
static void reclaim(struct dpe *d)
{
	for (struct dp_dpdk_state *s = d->retired; s; s = s->next)
		if (s->ct && rte_rcu_qsbr_check(d->qsv, s->token, false))
			s->ct = dp_dpdk_ctable_free(s->ct);
}

/* Reports the flows the worker announced as unknown since the last call (once each). */
static void report_unknown(struct dpe *d, dp_counter_fn fn, void *ctx)
{
	struct dp_dpdk_unknown_event ev[64];
	unsigned int n;

	while ((n = rte_ring_sc_dequeue_burst_elem(d->sink->ring, ev, sizeof(ev[0]), RTE_DIM(ev),
						   NULL)) > 0) {
		for (unsigned int i = 0; i < n; i++) {
			struct wire_tuple t;

			memset(&t, 0, sizeof(t));
			t.family = ev[i].key.family;
			t.protocol = ev[i].key.protocol;
			t.src_port = ev[i].key.src_port;
			t.dst_port = ev[i].key.dst_port;
			memcpy(t.src, ev[i].key.src, 16);
			memcpy(t.dst, ev[i].key.dst, 16);
			fn(ctx, &t, ev[i].bytes, false);
		}
		d->unknown_reported += n;
	}
}

/* Notes cur's update latency once the worker has used it. */
static void note_latency(struct dpe *d)
{
	struct dp_dpdk_state *s = cur_state(d);
	uint64_t used = __atomic_load_n(&s->used_tsc, __ATOMIC_RELAXED);
	uint64_t hz = rte_get_tsc_hz();
	uint64_t build, swap;

	if (s->latency_noted || !s->apply_tsc || used < s->publish_tsc)
		return; /* the initial table, or not used since it was published */
	s->latency_noted = true;
	build = (s->publish_tsc - s->apply_tsc) * 1000000000ull / hz;
	swap = (used - s->publish_tsc) * 1000000000ull / hz;
	d->build_ns_last = build;
	d->swap_ns_last = swap;
	d->build_ns_max = RTE_MAX(d->build_ns_max, build);
	d->swap_ns_max = RTE_MAX(d->swap_ns_max, swap);
	d->latency_samples++;
}

/* Starts DSCP offload on the TX port as the mode says. 0, or -errno with err (mode on only). */
static int offload_start(struct dpe *d, struct loom_err *err)
{
	struct dp_snapshot empty = {.default_class = d->classes - 1};

	if (d->offload_mode == DP_DPDK_OFFLOAD_OFF) {
		snprintf(d->offload_why.msg, sizeof(d->offload_why.msg),
			 "turned off (offload=off)");
		return 0;
	}
	d->off = dp_dpdk_offload_probe(d->tx_port, &d->offload_why);
	if (d->off && dp_dpdk_offload_sync(d->off, &empty, &d->dscp, &d->offload_why) < 0)
		d->off = dp_dpdk_offload_free(d->off);
	if (!d->off && d->offload_mode == DP_DPDK_OFFLOAD_ON)
		return loom_err_set(err, ENOTSUP, "dpdk enforcer: offload=on: %s",
				    d->offload_why.msg);
	__atomic_store_n(&d->hw_dscp, d->off != NULL, __ATOMIC_RELAXED);
	if (d->off)
		log_info("dpdk enforcer: DSCP offload on: %s", d->offload_why.msg);
	else
		log_info("dpdk enforcer: DSCP marking in software: %s", d->offload_why.msg);
	return 0;
}

/* ---- the class ------------------------------------------------------------------------------- */

/* A whole decimal number <= max (loom_parse_u64). */
static int parse_u64(const char *v, uint64_t max, uint64_t *ret)
{
	unsigned long long x;

	if (loom_parse_u64(v, &x) < 0 || x > max)
		return -EINVAL;
	*ret = x;
	return 0;
}

/* Parses one OPTION=VALUE into o. */
static int parse_option(struct dp_dpdk_opts *o, char *opt, struct loom_err *err)
{
	char *v = strchr(opt, '=');
	struct loom_err e2 = {{0}};
	uint64_t x;

	if (!v)
		return loom_err_set(err, EINVAL, "dpdk enforcer: '%s' is not OPTION=VALUE", opt);
	*v++ = '\0';
	if (!strcmp(opt, "rx") || !strcmp(opt, "tx")) {
		if (parse_u64(v, UINT16_MAX, &x) < 0)
			return loom_err_set(err, EINVAL, "dpdk enforcer: %s: no port '%s'", opt, v);
		if (opt[0] == 'r')
			o->rx_port = (uint16_t)x;
		else
			o->tx_port = (uint16_t)x;
	} else if (!strcmp(opt, "rate")) {
		if (loom_units_rate(v, &o->rate_bps, &e2) < 0)
			return loom_err_set(err, EINVAL, "dpdk enforcer: rate: %s", e2.msg);
	} else if (!strcmp(opt, "bucket")) {
		if (loom_units_size(v, 0, &x, NULL, &e2) < 0)
			return loom_err_set(err, EINVAL, "dpdk enforcer: bucket: %s", e2.msg);
		if (x > UINT32_MAX)
			return loom_err_set(err, EINVAL,
					    "dpdk enforcer: bucket: '%s' is above %u bytes", v,
					    UINT32_MAX);
		o->bucket_bytes = x;
	} else if (!strcmp(opt, "burst")) {
		if (parse_u64(v, DP_DPDK_MAX_BURST, &x) < 0 || x == 0)
			return loom_err_set(err, EINVAL, "dpdk enforcer: burst: '%s' is not 1..%d",
					    v, DP_DPDK_MAX_BURST);
		o->burst = (uint16_t)x;
	} else if (!strcmp(opt, "qsize")) {
		if (parse_u64(v, 1u << 20, &x) < 0 || x == 0)
			return loom_err_set(err, EINVAL, "dpdk enforcer: qsize: '%s' is not 1..%u",
					    v, 1u << 20);
		o->qsize = (uint32_t)x;
	} else if (!strcmp(opt, "offload")) {
		if (!strcmp(v, "auto"))
			o->offload_mode = DP_DPDK_OFFLOAD_AUTO;
		else if (!strcmp(v, "on"))
			o->offload_mode = DP_DPDK_OFFLOAD_ON;
		else if (!strcmp(v, "off"))
			o->offload_mode = DP_DPDK_OFFLOAD_OFF;
		else
			return loom_err_set(err, EINVAL,
					    "dpdk enforcer: offload: '%s' is not auto, on or off",
					    v);
	} else if (!strcmp(opt, "bump")) {
		if (strcmp(v, "on") && strcmp(v, "off"))
			return loom_err_set(err, EINVAL,
					    "dpdk enforcer: bump: '%s' is not on or off", v);
		o->bump = v[1] == 'n';
	} else if (!strcmp(opt, "idle")) {
		if (parse_u64(v, DP_DPDK_MAX_IDLE_US, &x) < 0)
			return loom_err_set(err, EINVAL,
					    "dpdk enforcer: idle: '%s' is not 0..%d microseconds",
					    v, DP_DPDK_MAX_IDLE_US);
		o->idle_us = (uint32_t)x;
	} else if (!strcmp(opt, "dscp")) {
		if (dp_dscp_map_parse(v, DP_DPDK_MAX_CLASSES, &o->dscp, &e2) < 0)
			return loom_err_set(err, EINVAL, "dpdk enforcer: dscp: %s", e2.msg);
	} else {
		return loom_err_set(err, EINVAL, "dpdk enforcer: unknown option '%s'", opt);
	}
	return 0;
}

int dp_dpdk_opts_parse(const char *opts, struct dp_dpdk_opts *ret, struct loom_err *err)
{
	char *buf = strdup(opts ? opts : "");
	struct dp_dpdk_opts o;
	int n = 0, r = 0;

	if (!buf)
		return loom_err_set(err, ENOMEM, "out of memory");
	memset(&o, 0, sizeof(o));
	o.rx_port = 0;
	o.tx_port = 1;
	o.burst = 32;
	o.qsize = 1024;
	o.bucket_bytes = 65536;
	o.offload_mode = DP_DPDK_OFFLOAD_AUTO;
	dp_dscp_map_default(&o.dscp);
	for (char *save = NULL, *t = strtok_r(buf, " \t\n", &save); t && r == 0;
	     t = strtok_r(NULL, " \t\n", &save)) {
		if (++n > DP_DPDK_MAX_ARGS - 1)
			r = loom_err_set(err, EINVAL, "dpdk enforcer: more than %d arguments",
					 DP_DPDK_MAX_ARGS - 1);
		else
			r = parse_option(&o, t, err);
	}
	free(buf);
	if (r == 0)
		*ret = o;
	return r;
}

/*
 * Splits args; starts the EAL on the part before "--" when it is not up;
 * parses the rest into o (dp_dpdk_opts_parse).
 */
static int parse_args(const char *args, struct dp_dpdk_opts *o, struct loom_err *err)
{
	char *buf = strdup(args ? args : "");
	char *argv[DP_DPDK_MAX_ARGS + 1];
	const char *opts = NULL;
	int argc = 1, sep = -1, r = 0;

	if (!buf)
		return loom_err_set(err, ENOMEM, "out of memory");
	argv[0] = (char *)"loom-agent";
	for (char *save = NULL, *t = strtok_r(buf, " \t\n", &save); t;
	     t = strtok_r(NULL, " \t\n", &save)) {
		if (argc == DP_DPDK_MAX_ARGS) {
			r = loom_err_set(err, EINVAL, "dpdk enforcer: more than %d arguments",
					 DP_DPDK_MAX_ARGS - 1);
			goto out;
		}
		if (sep < 0 && !strcmp(t, "--")) {
			sep = argc;
			opts = args + (t - buf) + 2; /* what follows it in args (buf is a copy) */
		}
		argv[argc++] = t;
	}
	argv[argc] = NULL;
	if (sep < 0)
		sep = argc; /* all EAL arguments */
	if (!eal_started && rte_lcore_count() == 0) {
		char *eal_argv[DP_DPDK_MAX_ARGS + 1];

		memcpy(eal_argv, argv, (size_t)sep * sizeof(char *));
		eal_argv[sep] = NULL;
		if (rte_eal_init(sep, eal_argv) < 0) {
			r = loom_err_set(err, EINVAL, "dpdk enforcer: rte_eal_init failed: %s",
					 rte_strerror(rte_errno));
			goto out;
		}
		eal_started = true;
	}
	r = dp_dpdk_opts_parse(opts, o, err);
out:
	free(buf);
	return r;
}

static int port_setup(struct dpe *d, uint16_t port, bool rx, bool tx, struct loom_err *err)
{
	struct rte_eth_conf conf;
	uint16_t nrx = DP_DPDK_RING_DESC, ntx = DP_DPDK_RING_DESC;
	int socket = rte_eth_dev_socket_id(port);
	int r;

	memset(&conf, 0, sizeof(conf));
	if (socket < 0)
		socket = (int)rte_socket_id();
	r = rte_eth_dev_configure(port, rx ? 1 : 0, tx ? 1 : 0, &conf);
	if (r < 0)
		return loom_err_set(err, -r, "dpdk enforcer: port %u: configure: %s", port,
				    rte_strerror(-r));
	r = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrx, &ntx);
	if (r == 0 && rx)
		r = rte_eth_rx_queue_setup(port, 0, nrx, (unsigned int)socket, NULL, d->pool);
	if (r == 0 && tx)
		r = rte_eth_tx_queue_setup(port, 0, ntx, (unsigned int)socket, NULL);
	if (r == 0)
		r = rte_eth_dev_start(port);
	if (r < 0) {
		rte_eth_dev_close(port);
		return loom_err_set(err, -r, "dpdk enforcer: port %u: setup: %s", port,
				    rte_strerror(-r));
	}
	/* a bump in the wire: take every frame, not only those to the port's MAC */
	if (rx)
		rte_eth_promiscuous_enable(port);
	return 0;
}

/* Takes o's ports (which must be the EAL's, now that it is up) and settings. */
static int dp_dpdk_take_opts(struct dpe *d, const struct dp_dpdk_opts *o, struct loom_err *err)
{
	if (!rte_eth_dev_is_valid_port(o->rx_port) || !rte_eth_dev_is_valid_port(o->tx_port)) {
		bool rx = !rte_eth_dev_is_valid_port(o->rx_port);

		return loom_err_set(err, EINVAL, "dpdk enforcer: %s: no port '%u'",
				    rx ? "rx" : "tx", (unsigned int)(rx ? o->rx_port : o->tx_port));
	}
	if (o->bump && o->rx_port == o->tx_port)
		return loom_err_set(
			err, EINVAL,
			"dpdk enforcer: bump=on needs two ports (rx and tx are both %u)",
			(unsigned int)o->rx_port);
	d->bump = o->bump;
	d->idle_us = o->idle_us;
	d->rx_port = o->rx_port;
	d->tx_port = o->tx_port;
	d->rate_bps = o->rate_bps;
	d->bucket_bytes = o->bucket_bytes;
	d->burst = o->burst;
	d->qsize = o->qsize;
	d->dscp = o->dscp;
	d->offload_mode = o->offload_mode;
	return 0;
}

/* Picks the worker lcore: the first one after the main, which must be idle. */
static int lcore_pick(struct dpe *d, struct loom_err *err)
{
	d->lcore = rte_get_next_lcore(-1, 1, 0);
	if (d->lcore >= RTE_MAX_LCORE || rte_eal_get_lcore_state(d->lcore) != WAIT) {
		d->lcore = RTE_MAX_LCORE;
		return loom_err_set(err, EINVAL,
				    "dpdk enforcer: no idle worker lcore (give the EAL two lcores, "
				    "e.g. -l 0-1)");
	}
	return 0;
}

/* The RCU quiescent-state variable of the one worker thread, or NULL. */
static struct rte_rcu_qsbr *qsbr_new(void)
{
	size_t sz = rte_rcu_qsbr_get_memsize(1);
	struct rte_rcu_qsbr *v = rte_zmalloc("loom_dpe_rcu", sz, RTE_CACHE_LINE_SIZE);

	if (v && rte_rcu_qsbr_init(v, 1) != 0)
		v = (rte_free(v), NULL);
	return v;
}

/* The unknown-flow sink with its ring named for instance id (ring NULL if not made), or NULL. */
static struct dp_dpdk_unknown_sink *sink_new(unsigned int id)
{
	struct dp_dpdk_unknown_sink *s;
	char name[32];

	s = rte_zmalloc("loom_dpe_unknown", sizeof(*s), RTE_CACHE_LINE_SIZE);
	if (s) {
		snprintf(name, sizeof(name), "dpe%u_unknown", id);
		s->ring = rte_ring_create_elem(name, sizeof(struct dp_dpdk_unknown_event), 1024,
					       (int)rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	}
	return s;
}

/* The fast path's memory on the EAL's heap: mbuf pool, queues, RCU, unknown-flow ring. */
static int dp_dpdk_mem_create(struct dpe *d, unsigned int id, struct loom_err *err)
{
	char name[32];

	snprintf(name, sizeof(name), "loom_dpe%u", id);
	/*
	 * Room for every queue full plus the RX and TX rings, bursts and the
	 * per-lcore caches: a low-class backlog must never starve RX of mbufs
	 * (which would drop class 0 too).
	 */
	d->pool = rte_pktmbuf_pool_create(
		name,
		(unsigned int)(d->classes * d->qsize + 2 * DP_DPDK_RING_DESC +
			       2 * DP_DPDK_MAX_BURST + 256 * (rte_lcore_count() + 1) +
			       DP_DPDK_POOL_MBUFS),
		256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	snprintf(name, sizeof(name), "dpe%u", id);
	d->q = dp_dpdk_prioq_new(name, d->classes, d->qsize, (int)rte_socket_id());
	d->qsv = qsbr_new();
	d->sink = sink_new(id);
	if (!d->pool || !d->q || !d->qsv || !d->sink || !d->sink->ring)
		return loom_err_set(
			err, ENOMEM,
			"dpdk enforcer: out of memory (pool, queues, rcu or unknown-flow ring)");
	return 0;
}

/* The first table (empty: every flow unknown, in the lowest class) and the shaper. */
static int dp_dpdk_table_init(struct dpe *d, struct loom_err *err)
{
	d->cur = state_new(NULL, d->classes - 1, d->sink);
	if (!d->cur)
		return loom_err_set(err, errno, "dpdk enforcer: empty table: %s", strerror(errno));
	d->shaping = d->rate_bps > 0;
	dp_dpdk_shaper_init(&d->sh, d->rate_bps, d->bucket_bytes, rte_get_tsc_hz(), rte_rdtsc());
	return 0;
}

/* Starts the ports: one both ways, or the rx port and then the tx port (each both ways with
 * bump=on). */
static int ports_start(struct dpe *d, struct loom_err *err)
{
	int r;

	if (d->rx_port == d->tx_port) {
		r = port_setup(d, d->rx_port, true, true, err);
		d->rx_started = r == 0;
		return r;
	}
	/* bump=on: the return path receives on the tx port and sends on the rx port */
	r = port_setup(d, d->rx_port, true, d->bump, err);
	d->rx_started = r == 0;
	if (r == 0) {
		r = port_setup(d, d->tx_port, d->bump, true, err);
		d->tx_started = r == 0;
	}
	return r;
}

/* Starts the fast path (worker_main) on the worker lcore. */
static int worker_launch(struct dpe *d, struct loom_err *err)
{
	int r = rte_eal_remote_launch(worker_main, d, d->lcore);

	if (r < 0)
		return loom_err_set(err, -r, "dpdk enforcer: launch on lcore %u: %s", d->lcore,
				    rte_strerror(-r));
	d->launched = true;
	return 0;
}

static void dp_dpdk_done(struct dp_enforcer *e);

static int dp_dpdk_init(struct dp_enforcer *e, const char *args, uint32_t classes,
			struct loom_err *err)
{
	struct dpe *d;
	struct dp_dpdk_opts o;
	unsigned int id = instances++;
	int r;

	if (classes == 0 || classes > DP_DPDK_MAX_CLASSES)
		return loom_err_set(err, EINVAL, "dpdk enforcer: %u classes (1..%u)", classes,
				    DP_DPDK_MAX_CLASSES);
	/* the C heap: the EAL may not be up yet */
	d = aligned_alloc(RTE_CACHE_LINE_SIZE, RTE_ALIGN_CEIL(sizeof(*d), RTE_CACHE_LINE_SIZE));
	if (!d)
		return loom_err_set(err, ENOMEM, "out of memory");
	memset(d, 0, sizeof(*d));
	e->priv = d;
	d->classes = classes;
	d->lcore = RTE_MAX_LCORE;
	r = parse_args(args, &o, err);
	if (r < 0)
		goto fail;
	r = dp_dpdk_take_opts(d, &o, err);
	if (r < 0)
		goto fail;
	r = lcore_pick(d, err);
	if (r < 0)
		goto fail;
	r = dp_dpdk_mem_create(d, id, err);
	if (r < 0)
		goto fail;
	r = dp_dpdk_table_init(d, err);
	if (r < 0)
		goto fail;
	r = ports_start(d, err);
	if (r < 0)
		goto fail;
	r = offload_start(d, err);
	if (r < 0)
		goto fail;
	r = worker_launch(d, err);
	if (r < 0)
		goto fail;
	return 0;
fail:
	dp_dpdk_done(e);
	return r;
}

static void dp_dpdk_done(struct dp_enforcer *e)
{
	struct dpe *d = e->priv;

	if (!d)
		return;
	if (d->launched) {
		__atomic_store_n(&d->stop, 1, __ATOMIC_RELAXED);
		rte_eal_wait_lcore(d->lcore);
		/*
		 * The worker has returned. Its last store, read with acquire, orders
		 * everything it did before what follows (freeing its tables, queue
		 * and pool) in the C11 model itself, not only through how the EAL's
		 * wait happens to hand over (which ThreadSanitizer cannot see).
		 */
		while (!__atomic_load_n(&d->exited, __ATOMIC_ACQUIRE))
			rte_pause();
	}
	d->off = dp_dpdk_offload_free(d->off);
	/* stopped, not closed: the ports are the EAL's, and a later init may use them again */
	if (d->rx_started)
		rte_eth_dev_stop(d->rx_port);
	if (d->tx_started)
		rte_eth_dev_stop(d->tx_port);
	while (d->retired) {
		struct dp_dpdk_state *s = d->retired;

		d->retired = s->next;
		state_free(s);
	}
	state_free(d->cur);
	dp_dpdk_prioq_free(d->q);
	rte_mempool_free(d->pool);
	rte_free(d->qsv);
	if (d->sink)
		rte_ring_free(d->sink->ring);
	rte_free(d->sink);
	free(d);
	e->priv = NULL;
}

/*
 * Publishes snap's table (after the NIC's rules for it, when offloading).
 * The old table is retired: the worker stops using it at its next quiescent
 * point, waited for here for at most DP_DPDK_SYNC_TIMEOUT_NS (the worker passes
 * one every loop, microseconds) and otherwise left to collect's reclaim; its
 * counters are final then and the next collect reports their last bytes and
 * frees it. Takes snap even on failure (then frees it and keeps the old
 * table).
 */
static int dp_dpdk_apply(struct dp_enforcer *e, struct dp_snapshot *snap)
{
	struct dpe *d = e->priv;
	struct dp_dpdk_state *s, *old;
	uint64_t t0 = rte_rdtsc();

	if (!snap)
		return -EINVAL;
	if (snap->default_class >= d->classes) {
		dp_snapshot_free(snap);
		return -EINVAL;
	}
	/* a class beyond this enforcer's shares its lowest (queue and DSCP alike) */
	for (size_t i = 0; i < snap->n; i++)
		if (snap->flows[i].cls >= d->classes)
			snap->flows[i].cls = d->classes - 1;
	reclaim(d);
	s = state_new(snap, snap->default_class, d->sink);
	if (!s)
		return -errno;
	if (d->off && dp_dpdk_offload_sync(d->off, snap, &d->dscp, &d->offload_why) < 0) {
		/* every rule is gone: mark in software from this burst on */
		__atomic_store_n(&d->hw_dscp, 0, __ATOMIC_RELAXED);
		d->off = dp_dpdk_offload_free(d->off);
		log_warn("dpdk enforcer: DSCP offload failed, marking in software from now on: %s",
			 d->offload_why.msg);
	}
	note_latency(d);
	old = cur_state(d);
	s->apply_tsc = t0;
	s->publish_tsc = rte_rdtsc();
	__atomic_store_n(&d->cur, s, __ATOMIC_RELEASE);
	old->token = rte_rcu_qsbr_start(d->qsv);
	old->next = d->retired;
	d->retired = old;
	d->applied++;
	if (wait_quiescent(d, old->token))
		old->ct = dp_dpdk_ctable_free(old->ct);
	return 0;
}

static void dp_dpdk_collect(struct dp_enforcer *e, dp_counter_fn fn, void *ctx)
{
	struct dpe *d = e->priv;
	struct dp_dpdk_state **pp = &d->retired, *cur = cur_state(d);

	note_latency(d);
	reclaim(d);
	/* oldest last in the list: report them in any order, a flow's bytes just add up */
	while (*pp) {
		struct dp_dpdk_state *s = *pp;

		state_report(s, cur, fn, ctx);
		if (s->ct) { /* the worker may still use it: keep it for the next collect */
			pp = &s->next;
			continue;
		}
		*pp = s->next;
		state_bury(d, s);
		state_free(s);
	}
	state_report(cur, cur, fn, ctx);
	report_unknown(d, fn, ctx);
}

static void dp_dpdk_stats(struct dp_enforcer *e,
			  void (*fn)(void *ctx, const char *name, uint64_t v), void *ctx)
{
	struct dpe *d = e->priv;
	uint64_t cls[DP_DPDK_MAX_CLASSES], known = d->gone_known, unknown = d->gone_unknown;
	uint64_t unparseable = d->gone_unparseable, qdrops = 0;
	struct dp_dpdk_state *cur = cur_state(d);
	char name[32];

	memcpy(cls, d->gone_class_packets, sizeof(cls));
	for (struct dp_dpdk_state *s = cur; s; s = s == cur ? d->retired : s->next) {
		for (uint32_t c = 0; c < DP_DPDK_MAX_CLASSES; c++)
			cls[c] += __atomic_load_n(&s->c.class_packets[c], __ATOMIC_RELAXED);
		known += __atomic_load_n(&s->c.known, __ATOMIC_RELAXED);
		unknown += __atomic_load_n(&s->c.unknown, __ATOMIC_RELAXED);
		for (uint32_t r = 1; r < DP_DPDK_PARSE_NREASONS; r++)
			unparseable += __atomic_load_n(&s->c.unparseable[r], __ATOMIC_RELAXED);
	}
	for (uint32_t c = 0; c < d->classes; c++) {
		struct dp_dpdk_prioq_stats ps;

		if (dp_dpdk_prioq_stats(d->q, c, &ps) == 0)
			qdrops += ps.drop_pkts;
	}
	fn(ctx, "rx_packets", __atomic_load_n(&d->wc.rx_pkts, __ATOMIC_RELAXED));
	fn(ctx, "tx_packets", __atomic_load_n(&d->wc.tx_pkts, __ATOMIC_RELAXED));
	fn(ctx, "dropped_packets", qdrops + __atomic_load_n(&d->wc.tx_drops, __ATOMIC_RELAXED));
	fn(ctx, "return_packets", __atomic_load_n(&d->wc.back_pkts, __ATOMIC_RELAXED));
	fn(ctx, "return_dropped_packets", __atomic_load_n(&d->wc.back_drops, __ATOMIC_RELAXED));
	for (uint32_t c = 0; c < d->classes; c++) {
		snprintf(name, sizeof(name), "class%u_packets", c);
		fn(ctx, name, cls[c]);
	}
	fn(ctx, "known", known);
	fn(ctx, "unknown", unknown);
	fn(ctx, "unparseable", unparseable);
	fn(ctx, "unknown_flows_reported", d->unknown_reported);
	fn(ctx, "unknown_events_dropped", __atomic_load_n(&d->sink->dropped, __ATOMIC_RELAXED));
	fn(ctx, "snapshots_applied", d->applied);
	fn(ctx, "flows_enforced", cur->snap ? cur->snap->n : 0);
	fn(ctx, "offload_hw_dscp", d->off != NULL);
	fn(ctx, "offload_rules", dp_dpdk_offload_rules(d->off));
	fn(ctx, "rate_bps", d->rate_bps);
	note_latency(d);
	fn(ctx, "table_updates_measured", d->latency_samples);
	fn(ctx, "table_build_ns_last", d->build_ns_last);
	fn(ctx, "table_build_ns_max", d->build_ns_max);
	fn(ctx, "table_swap_ns_last", d->swap_ns_last);
	fn(ctx, "table_swap_ns_max", d->swap_ns_max);
}

const struct dp_enforcer_class dp_enforcer_dpdk = {
	.name = "dpdk",
	.summary = "DPDK fast path: classify, DSCP, strict-priority queues, shaper",
	.init = dp_dpdk_init,
	.done = dp_dpdk_done,
	.apply = dp_dpdk_apply,
	.collect = dp_dpdk_collect,
	.stats = dp_dpdk_stats,
};
