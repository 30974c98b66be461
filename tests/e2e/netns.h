/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Network-namespace test helpers (beside harness.h): make namespaces with
 * unique names and delete them at the end, run shell commands in them, run
 * a process inside one (setns), and race two TCP bulk flows from a sender
 * namespace to a receiver namespace, recording for each flow when the
 * receiver got its last byte, the DSCP of its packets as the receiver saw
 * them, and the bytes its packets took on the sender's wire.
 *
 * Everything is bounded in time; failures say which command or step broke.
 * Needs root and `ip netns`; nsx_usable() says whether they are there.
 * Built once (netns.c) into the e2e harness library (tests/e2e/meson.build).
 */
#ifndef LOOM_TESTS_E2E_NETNS_H
#define LOOM_TESTS_E2E_NETNS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define NSX_MAX 4

/* The namespaces a test made (nsx_add()), for nsx_cleanup(). */
struct nsx {
	char name[NSX_MAX][40];
	int n;
};

/* Runs the printf-formatted shell command; its exit status (stderr goes to the test log). */
int nsx_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Whether we are root and can make a namespace (the probe is deleted again). */
bool nsx_usable(void);

/* Whether the kernel loads a tc program from us ("r0 = 0; exit"): no BPF here when not. */
bool nsx_bpf_usable(void);

/* Makes a namespace named loom<tag><pid> (lo up, no IPv6); its name (in x), or NULL. */
const char *nsx_add(struct nsx *x, const char *tag);

/* Deletes every namespace made (their interfaces go with them). */
void nsx_cleanup(struct nsx *x);

/* Moves the calling process into namespace name. 0 or -errno. */
int nsx_enter(const char *name);

/* The tx byte counter of ifname in namespace ns (from ip -s -j link), or -1. */
long long nsx_tx_bytes(const char *ns, const char *ifname);

/* Waits (bounded) for pid; its exit status, or -1 when it did not exit (killed). */
int nsx_wait(pid_t pid, uint64_t deadline_ms);

/* ---- two TCP bulk flows ------------------------------------------------------------------------ */

struct nsx_race {
	const char *ns_snd, *ns_rcv;
	const char *src_ip, *dst_ip;
	uint16_t sport[2], dport;
	uint64_t bytes;        /* each flow sends this many */
	const char *snd_if;    /* in ns_snd: where the flows leave (bytes on the wire) */
	const char *rcv_if;    /* in ns_rcv: where they arrive (DSCP) */
	unsigned int limit_ms; /* the whole race */
};

struct nsx_flow_result {
	uint64_t rx_bytes;      /* payload the receiver read */
	uint64_t done_ms;       /* receiver's EOF, ms after the start (0: never) */
	uint64_t wire_bytes;    /* frames of this flow leaving snd_if (with Ethernet) */
	uint64_t wire_pkts;     /* ... and their number */
	uint64_t dscp_pkts[64]; /* packets of this flow at rcv_if, by DSCP */
	uint64_t seen_pkts;
};

struct nsx_race_result {
	struct nsx_flow_result f[2];
	uint64_t capture_drops; /* the packet sockets could not keep up: byte counts are partial */
	char error[160];
};

/*
 * Races r's two flows: both connect first, then start sending at the same
 * instant. 0 with res filled, or -1 with res->error saying what broke.
 */
int nsx_race_run(const struct nsx_race *r, struct nsx_race_result *res);

/* The DSCP most packets of a flow carried, and the share of packets that carried it. */
int nsx_dscp_mode(const struct nsx_flow_result *f, double *ret_share);

#endif
