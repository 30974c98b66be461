/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for dataplane/dpdk/classify's two parsers. The first input
 * byte selects one:
 *
 *  - even: the rest is a packet. It is copied into a single-segment mbuf
 *    (truncated to the data room) and given to dp_dpdk_parse(). A refusal must be
 *    a known reason with the outputs untouched; a parsed packet must have a
 *    family of 4 or 6 and its IP header inside the data. Its DSCP is then
 *    rewritten with dp_dpdk_set_dscp() (dscp = first byte >> 1, up to 127: it keeps the low 6 bits), which may change
 *    only the DSCP (and, for IPv4, the header checksum), must write that DSCP
 *    and keep the ECN bits; a second dp_dpdk_parse() must give the same key and
 *    offset. The EAL (--no-huge, in-process) and an mbuf pool are started
 *    once, on the first packet; when the EAL does not start, packets are
 *    skipped and strings still fuzzed.
 *  - odd: the rest is a string (NUL-terminated copy) for dp_dscp_map_parse() (dataplane/enforcer_args.h).
 *    It returns 0 or -EINVAL; a refusal leaves the map untouched and writes a
 *    message (NUL-terminated); every DSCP is < 64; a NULL err gives the same
 *    result; an accepted map, written back as "0:D0,...,7:D7", parses to
 *    itself.
 *
 * A crash, a sanitizer report or an abort() is a bug.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "dataplane/dpdk/classify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rte_mempool *pool;

/* Starts the EAL and the pool once; returns the pool or NULL (then skip). */
static struct rte_mempool *get_pool(void)
{
	static bool tried;
	char *argv[] = {"fuzz", "--no-huge",   "--no-pci", "--no-shconf", "-m",
			"512",  "--log-level", "error",    NULL};

	if (tried)
		return pool;
	tried = true;
	if (rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv) < 0) {
		fprintf(stderr, "fuzz_dpdk_classify: rte_eal_init failed; skipping packets\n");
		return NULL;
	}
	pool = rte_pktmbuf_pool_create("fuzz_dpdk_classify", 63, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				       (int)rte_socket_id());
	if (!pool)
		fprintf(stderr, "fuzz_dpdk_classify: no mbuf pool; skipping packets\n");
	return pool;
}

/* The DSCP of the IP header at p (version 4 or 6). */
static uint8_t read_dscp(const uint8_t *p)
{
	if ((p[0] >> 4) == 4)
		return p[1] >> 2;
	return (uint8_t)((p[0] & 0x0f) << 2 | p[1] >> 6);
}

static uint8_t read_ecn(const uint8_t *p)
{
	if ((p[0] >> 4) == 4)
		return p[1] & 3;
	return (p[1] >> 4) & 3;
}

static void fuzz_packet(uint8_t dscp, const uint8_t *data, size_t size)
{
	struct rte_mempool *mp = get_pool();
	struct dp_dpdk_key key, key2, untouched;
	uint32_t l3_off, l3_off2;
	struct rte_mbuf *m;
	uint8_t *d, *copy;
	size_t len;
	int r;

	if (!mp)
		return;
	m = rte_pktmbuf_alloc(mp);
	if (!m)
		abort();
	len = size < rte_pktmbuf_tailroom(m) ? size : rte_pktmbuf_tailroom(m);
	d = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)len);
	if (!d && len)
		abort();
	if (len)
		memcpy(d, data, len);
	copy = malloc(len ? len : 1);
	if (!copy)
		abort();
	if (len)
		memcpy(copy, d, len);

	memset(&key, 0x5a, sizeof(key));
	untouched = key;
	l3_off = 0xa5a5a5a5;
	r = dp_dpdk_parse(m, &key, &l3_off);
	if (memcmp(d, copy, len) != 0)
		abort(); /* the parser wrote into the packet */
	if (r < 0) {
		if (r <= -DP_DPDK_PARSE_NREASONS || strcmp(dp_dpdk_parse_reason_str(-r), "?") == 0)
			abort();
		if (memcmp(&key, &untouched, sizeof(key)) != 0 || l3_off != 0xa5a5a5a5)
			abort();
		goto out;
	}
	if (r != 0 || (key.family != 4 && key.family != 6))
		abort();
	if (l3_off >= len || len - l3_off < (key.family == 4 ? 20u : 40u))
		abort();
	if ((d[l3_off] >> 4) != key.family)
		abort();

	dp_dpdk_set_dscp(m, l3_off, dscp);
	if (rte_pktmbuf_data_len(m) != len || read_dscp(d + l3_off) != (dscp & 63) ||
	    read_ecn(d + l3_off) != read_ecn(copy + l3_off))
		abort();
	for (size_t i = 0; i < len; i++) {
		size_t rel = i - l3_off;

		if (d[i] == copy[i])
			continue;
		if (i >= l3_off && (rel == 1 || (key.family == 4 && (rel == 10 || rel == 11)) ||
				    (key.family == 6 && rel == 0)))
			continue;
		abort(); /* dp_dpdk_set_dscp wrote outside the DSCP and checksum */
	}

	memset(&key2, 0, sizeof(key2));
	l3_off2 = 0;
	if (dp_dpdk_parse(m, &key2, &l3_off2) != 0 || l3_off2 != l3_off ||
	    memcmp(&key, &key2, sizeof(key)) != 0)
		abort();
out:
	free(copy);
	rte_pktmbuf_free(m);
}

static void fuzz_map(const uint8_t *data, size_t size)
{
	struct dp_dscp_map map, map2, untouched;
	struct loom_err err;
	char back[64];
	char *s = malloc(size + 1);
	int r, n = 0;

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';

	memset(&map, 0x5a, sizeof(map));
	untouched = map;
	memset(&err, 0, sizeof(err));
	r = dp_dscp_map_parse(s, DP_DPDK_MAX_CLASSES, &map, &err);
	if (r != 0 && r != -EINVAL)
		abort();
	if (dp_dscp_map_parse(s, DP_DPDK_MAX_CLASSES, &map2, NULL) != r)
		abort();
	if (r < 0) {
		if (memcmp(&map, &untouched, sizeof(map)) != 0 || err.msg[0] == '\0' ||
		    memchr(err.msg, '\0', sizeof(err.msg)) == NULL)
			abort();
		goto out;
	}
	for (int k = 0; k < DP_DPDK_MAX_CLASSES; k++) {
		if (map.dscp[k] >= 64)
			abort();
		n += snprintf(back + n, sizeof(back) - (size_t)n, "%s%d:%u", k ? "," : "", k,
			      map.dscp[k]);
	}
	memset(&map2, 0x5a, sizeof(map2));
	if (dp_dscp_map_parse(back, DP_DPDK_MAX_CLASSES, &map2, NULL) != 0 ||
	    memcmp(&map, &map2, sizeof(map)) != 0)
		abort();
out:
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] & 1)
		fuzz_map(data + 1, size - 1);
	else
		fuzz_packet((uint8_t)(data[0] >> 1), data + 1, size - 1);
	return 0;
}
