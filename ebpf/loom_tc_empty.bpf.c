/* SPDX-License-Identifier: BSD-3-Clause OR GPL-2.0-only */
/*
 * The benchmark's baseline: a tc program that does nothing and passes the
 * packet, built exactly like loom_tc.bpf.c. bench/ebpf_bench.c subtracts its
 * cost per BPF_PROG_TEST_RUN repeat from loom_tc_egress's.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tc")
int loom_tc_empty(struct __sk_buff *skb)
{
	return TC_ACT_OK;
}
