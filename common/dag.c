/* SPDX-License-Identifier: BSD-3-Clause */
#include "common/dag.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int loom_dag_order(const struct loom_dag *g, uint32_t *order, uint32_t *indeg, uint32_t *ret_node)
{
	uint32_t n = g->n, head = 0, tail = 0, ch;
	size_t size = (size_t)(n ? n : 1) * sizeof(uint32_t);
	uint32_t *own_order = NULL, *own_indeg = NULL;
	int r = 0;

	if (!order)
		order = own_order = malloc(size);
	if (!indeg)
		indeg = own_indeg = malloc(size);
	if (!order || !indeg) {
		r = -ENOMEM;
		goto out;
	}
	memset(indeg, 0, (size_t)n * sizeof(*indeg));
	for (uint32_t v = 0; v < n; v++)
		for (uint32_t i = 0; (ch = g->child(g->ctx, v, i)) != LOOM_DAG_NONE; i++) {
			assert(ch < n);
			indeg[ch]++;
		}
	for (uint32_t v = 0; v < n; v++)
		if (indeg[v] == 0)
			order[tail++] = v;
	/* the queue is order[head .. tail) */
	while (head < tail) {
		uint32_t v = order[head++];

		for (uint32_t i = 0; (ch = g->child(g->ctx, v, i)) != LOOM_DAG_NONE; i++)
			if (--indeg[ch] == 0)
				order[tail++] = ch;
	}
	if (tail < n) {
		uint32_t v = 0;

		while (indeg[v] == 0)
			v++;
		for (uint32_t k = tail; k < n; k++)
			order[k] = LOOM_DAG_NONE;
		if (ret_node)
			*ret_node = v;
		r = 1;
	}
out:
	free(own_order);
	free(own_indeg);
	return r;
}

int loom_dag_csr_init(struct loom_dag_csr *g, uint32_t n, const void *pairs, uint32_t npairs,
		      size_t stride)
{
	const unsigned char *rec = pairs;
	uint32_t pc[2];

	g->first = calloc((size_t)n + 1, sizeof(*g->first));
	g->child = malloc((size_t)(npairs ? npairs : 1) * sizeof(*g->child));
	if (!g->first || !g->child) {
		loom_dag_csr_done(g);
		return -ENOMEM;
	}
	for (uint32_t e = 0; e < npairs; e++) {
		memcpy(pc, rec + (size_t)e * stride, sizeof(pc));
		assert(pc[0] < n && pc[1] < n);
		g->first[pc[0] + 1]++;
	}
	for (uint32_t v = 0; v < n; v++)
		g->first[v + 1] += g->first[v];
	/* first[v] runs ahead while v's children go in, ending at v + 1's start */
	for (uint32_t e = 0; e < npairs; e++) {
		memcpy(pc, rec + (size_t)e * stride, sizeof(pc));
		g->child[g->first[pc[0]]++] = pc[1];
	}
	for (uint32_t v = n; v > 0; v--)
		g->first[v] = g->first[v - 1];
	g->first[0] = 0;
	return 0;
}

void loom_dag_csr_done(struct loom_dag_csr *g)
{
	free(g->first);
	free(g->child);
	g->first = g->child = NULL;
}

uint32_t loom_dag_csr_child(const void *ctx, uint32_t v, uint32_t i)
{
	const struct loom_dag_csr *g = ctx;
	uint32_t k = g->first[v] + i;

	return k < g->first[v + 1] ? g->child[k] : LOOM_DAG_NONE;
}
