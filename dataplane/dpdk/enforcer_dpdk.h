/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dataplane/dpdk/enforcer_dpdk: the "dpdk" enforcer (struct
 * dp_enforcer_class). One worker lcore moves packets from one RX port to one
 * TX port: rx -> classify (classify.h) -> DSCP by class -> strict-priority
 * queues -> token-bucket shaper (prioq.h) -> tx; with bump=on also from the
 * TX port back to the RX port, unchanged.
 *
 * init's args: "[EAL ARGS] -- [OPTION=VALUE]...", split on whitespace. The
 * EAL arguments go to rte_eal_init unless the EAL is already up in this
 * process (then they are ignored); the options go to dp_dpdk_opts_parse, and
 * init then checks that the ports exist. Options:
 *   rx=PORT      RX port id (default 0)
 *   tx=PORT      TX port id (default 1; may equal rx)
 *   rate=BPS     egress rate in bit/s, suffix k/M/G (x1000); 0 = no shaping (default)
 *   bucket=BYTES shaper bucket (default 64 KiB; clamped as dp_dpdk_shaper_init says)
 *   dscp=MAP     class -> DSCP, "CLASS:DSCP,..." over the default (classify.h)
 *   burst=N      packets per rx/tx burst, 1..256 (default 32)
 *   qsize=N      packets per class queue (default 1024)
 *   offload=MODE DSCP marking by the TX port's NIC through rte_flow
 *                (offload.h): auto (default: where the driver takes the
 *                rules, else software), on (init fails without it), off
 *   bump=MODE    on: a bump in the wire both ways: every frame the TX port
 *                receives also leaves through the RX port, unchanged (no
 *                classification, queueing or shaping: the return path);
 *                rx and tx must differ. off (default): one way
 *   idle=USEC    after a pass of the worker's loop that moved no packet,
 *                sleep USEC microseconds, 0..1000 (default 0: busy-poll).
 *                The worker is an RCU offline thread while it sleeps
 *
 * Flows not in the table are announced by the worker, each once, through a
 * ring (classify.h, struct dp_dpdk_unknown_sink); collect reports them with
 * their first packet's bytes, so that loomd can list them.
 *
 * The log says at init whether DSCP is marked in hardware or software and
 * why; stats carry it too (offload_hw_dscp, offload_rules), with the
 * latency of table updates: build (apply called -> new table published)
 * and swap (published -> first used by the worker), last and max.
 *
 * Threads: init, apply, collect, stats and done run on one control thread
 * (the agent's loop); the worker lcore runs the fast path. The control side
 * publishes a new classification table with an atomic pointer store and
 * frees the old one only after the worker has reported quiescence
 * (rte_rcu_qsbr). Each table carries its own counters, so a table's per-flow
 * counters are final once it is retired: collect reports every flow's bytes
 * since the last collect, including the last bytes of retired tables.
 *
 * done stops the ports (it does not close them) and never calls
 * rte_eal_cleanup: the EAL and its ports stay up for the process, and a
 * later init reuses them (tests; DPDK cannot start its EAL twice in one
 * process anyway). The same holds when init fails after starting the EAL:
 * loom-agent exits then, which releases everything.
 */
#ifndef LOOM_DATAPLANE_DPDK_ENFORCER_DPDK_H
#define LOOM_DATAPLANE_DPDK_ENFORCER_DPDK_H

#include <stdint.h>

#include "common/errors.h"
#include "dataplane/agent.h"
#include "dataplane/dpdk/classify.h"

extern const struct dp_enforcer_class dp_enforcer_dpdk;

/* offload=MODE */
enum dp_dpdk_offload_mode {
	DP_DPDK_OFFLOAD_AUTO,
	DP_DPDK_OFFLOAD_ON,
	DP_DPDK_OFFLOAD_OFF
};

/* The options after "--", each at its default unless given. */
struct dp_dpdk_opts {
	uint16_t rx_port, tx_port; /* numbers only: init checks that the ports exist */
	uint64_t rate_bps;         /* 0: no shaping */
	uint64_t bucket_bytes;
	uint16_t burst;
	uint32_t qsize;
	struct dp_dscp_map dscp;
	enum dp_dpdk_offload_mode offload_mode;
	bool bump;        /* bump=on: forward the TX port's RX to the RX port */
	uint32_t idle_us; /* 0: busy-poll */
};

/*
 * Parses the options after init's "--" ("OPTION=VALUE...", split on
 * whitespace; opts may be NULL) over the defaults into *ret, touching
 * nothing of DPDK (no EAL needed). Returns 0, or -EINVAL (-ENOMEM) with err
 * naming the option; *ret is written only on success.
 */
int dp_dpdk_opts_parse(const char *opts, struct dp_dpdk_opts *ret, struct loom_err *err);

#endif
