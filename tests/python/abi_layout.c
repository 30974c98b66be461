/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Prints the layout of loom.h's structs as this C compiler lays them out, one
 * line per struct ("STRUCT size SIZE") and per field ("STRUCT.FIELD OFFSET
 * SIZE"), for tests/python/test_bindings.py to compare with the ctypes
 * structs of bindings/python/loom.py.
 */
#include <stddef.h>
#include <stdio.h>

#include "controlplane/client/loom.h"

#define S(T)    printf("%s size %zu\n", #T, sizeof(struct T))
#define F(T, f) printf("%s.%s %zu %zu\n", #T, #f, offsetof(struct T, f), sizeof(((struct T *)0)->f))

int main(void)
{
	S(loom_client_tuple);
	F(loom_client_tuple, family);
	F(loom_client_tuple, protocol);
	F(loom_client_tuple, src_port);
	F(loom_client_tuple, dst_port);
	F(loom_client_tuple, src);
	F(loom_client_tuple, dst);
	S(loom_client_flow);
	F(loom_client_flow, src_host);
	F(loom_client_flow, dst_host);
	F(loom_client_flow, bytes);
	F(loom_client_flow, by_address);
	F(loom_client_flow, tuple);
	S(loom_client_coflow);
	F(loom_client_coflow, id);
	F(loom_client_coflow, release_offset_ns);
	F(loom_client_coflow, expected_flows);
	F(loom_client_coflow, flows);
	F(loom_client_coflow, n_flows);
	S(loom_client_edge);
	F(loom_client_edge, parent);
	F(loom_client_edge, child);
	F(loom_client_edge, delay_ns);
	S(loom_client_job);
	F(loom_client_job, id);
	F(loom_client_job, weight);
	F(loom_client_job, name);
	F(loom_client_job, coflows);
	F(loom_client_job, n_coflows);
	F(loom_client_job, edges);
	F(loom_client_job, n_edges);
	S(loom_client_announce);
	F(loom_client_announce, coflow_id);
	F(loom_client_announce, flow);
	S(loom_client_hosts);
	F(loom_client_hosts, src_host);
	F(loom_client_hosts, dst_host);
	S(loom_client_options);
	F(loom_client_options, timeout_ms);
	F(loom_client_options, name);
	return 0;
}
