/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/run: loom-run, the live workload driver of a virtual cluster
 * (docs/cluster.md, "Running a workload"). A driver in the root namespace
 * plays a Loom trace on real hosts: it registers each job's DAG with loomd
 * through libloom at the job's arrival, releases each coflow when its parents
 * are done plus the edge's compute delay (the model's own transitions,
 * controlplane/model), announces each flow's 5-tuple and has the flow's
 * source host send its bytes over TCP to the destination host; a host
 * process per host (forked, moved into the host's network namespace) sends
 * and receives. The per-coflow and per-job CSV files are loom-replay's.
 *
 * Driver and hosts talk over one SOCK_SEQPACKET socketpair per host, one
 * struct lrun_msg per packet. Between hosts, a flow is one TCP connection
 * from (source address, the port the driver chose) to (destination address,
 * the listen port): a 16-byte header (LRUN_MAGIC, the flow, its bytes, all
 * big-endian), then that many bytes; the receiver answers one byte
 * (LRUN_ACK) once it has them all and closes, and the flow is done when the
 * sender reads that byte.
 */
#ifndef LOOM_CONTROLPLANE_RUN_RUN_H
#define LOOM_CONTROLPLANE_RUN_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "common/errors.h"
#include "controlplane/model/model.h"

#define LRUN_MAGIC     0x4c52554eu /* "LRUN" */
#define LRUN_HDR_BYTES 16
#define LRUN_ACK       'K'

/* The source ports flows are bound to, per source host, in turn. */
#define LRUN_PORT_FIRST 10000u
#define LRUN_PORT_COUNT 50000u

enum lrun_msg_type {
	LRUN_MSG_READY = 1, /* host -> driver: listening (status 0) or not (-errno) */
	LRUN_MSG_START,     /* driver -> host: send flow `flow` */
	LRUN_MSG_DONE,      /* host -> driver: flow `flow` delivered (status 0) or failed */
};

struct lrun_msg {
	uint32_t type; /* enum lrun_msg_type */
	uint32_t flow; /* the model's flow index */
	int32_t status;
	uint16_t src_port, dst_port; /* host order */
	uint32_t dst_addr;           /* IPv4, network order */
	uint32_t pad;
	uint64_t bytes;
	uint64_t mono_ns; /* DONE: CLOCK_MONOTONIC when the sender read the ack */
};

/* Writes the header of a flow of `bytes` bytes (LRUN_HDR_BYTES bytes at hdr). */
void lrun_hdr_write(uint8_t *hdr, uint32_t flow, uint64_t bytes);

/*
 * The receiving end of a flow's connection: the header as it arrives, then
 * the bytes it announced. Starts zeroed.
 */
struct lrun_rx {
	uint8_t hdr[LRUN_HDR_BYTES];
	uint32_t hdr_off; /* header bytes in */
	uint32_t flow;    /* once the header is in */
	uint64_t left;    /* payload bytes still to come, once the header is in */
};

/*
 * Takes the next n bytes (p may be NULL when n is 0) of rx's connection,
 * in pieces of any size (the header too). 0: more are expected; 1: every
 * byte the header announced is in (the receiver acks); -EPROTO: the first
 * LRUN_HDR_BYTES bytes are not loom-run's header (no LRUN_MAGIC);
 * -EMSGSIZE: this piece goes past the last byte announced. A refusal comes
 * with err (naming the flow once the header is read). After a refusal or 1
 * the connection is over: rx is not fed again.
 */
int lrun_rx_feed(struct lrun_rx *rx, const uint8_t *p, size_t n, struct loom_err *err);

/* What a host process needs. */
struct lrun_host_cfg {
	uint32_t host;     /* its host id */
	const char *netns; /* path of its network namespace (/run/netns/NAME) */
	uint32_t addr;     /* its IPv4 address, network order */
	uint16_t port;     /* where it listens */
	/* TCP congestion control of both ends of its flows; NULL: the namespace's default */
	const char *congestion;
};

/*
 * The body of a host process (a forked child of the driver): enters
 * cfg->netns, listens on cfg->port, says READY on fd, then runs flows as
 * the driver asks until fd closes. Returns the process's exit status: 0
 * when the driver closed fd, 1 on a failure (reported on fd when it can).
 */
int lrun_host_main(const struct lrun_host_cfg *cfg, int fd);

/*
 * A copy of m (not bound) with every time (arrivals, release offsets, edge
 * delays) multiplied by time_scale and every flow's bytes by bytes_scale
 * (rounded to the nearest, at least 1 byte). Both scales are finite and > 0.
 * NULL with errno and err (a scaled value beyond the trace format's limits,
 * 2^62 ns or bytes, names the job or flow) on failure.
 */
struct cp_model *lrun_model_scale(const struct cp_model *m, double bytes_scale, double time_scale,
				  struct loom_err *err);

#endif
