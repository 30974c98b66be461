/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers shared by the gnn unit tests: a batch builder with the DAG shapes
 * the tests use (diamonds, chains, fans, isolated nodes, skip edges, random
 * DAGs with shuffled labels) and a small-model configuration.
 */
#ifndef LOOM_TESTS_GNN_TEST_UTIL_H
#define LOOM_TESTS_GNN_TEST_UTIL_H

#include <stdint.h>
#include <string.h>

#include "gnn/gnn.h"

#define TB_MAXN 128
#define TB_MAXE 512
#define TB_MAXJ 32
#define TB_MAXF 16

struct tb {
	uint32_t N, F, J, E;
	float x[TB_MAXN * TB_MAXF];
	uint32_t js[TB_MAXJ + 1];
	uint32_t edges[2 * TB_MAXE];
};

static inline void tb_init(struct tb *b, uint32_t F)
{
	memset(b, 0, sizeof(*b));
	b->F = F;
}

/* Appends a job of n nodes with local edges (pairs) and random features. */
static inline void tb_job(struct tb *b, struct gnn_rng *rng, uint32_t n, const uint32_t *edges,
			  uint32_t ne)
{
	uint32_t base = b->N;

	for (uint32_t i = 0; i < n * b->F; i++)
		b->x[base * b->F + i] = (float)(2 * gnn_rng_uniform(rng) - 1);
	for (uint32_t e = 0; e < ne; e++) {
		b->edges[2 * b->E] = base + edges[2 * e];
		b->edges[2 * b->E + 1] = base + edges[2 * e + 1];
		b->E++;
	}
	b->N += n;
	b->J++;
	b->js[b->J] = b->N;
}

/* A random DAG on n nodes (edge i -> j, i < j in a shuffled labelling, with probability p). */
static inline void tb_random_job(struct tb *b, struct gnn_rng *rng, uint32_t n, double p)
{
	uint32_t lab[32], edges[2 * 256], ne = 0;

	for (uint32_t i = 0; i < n; i++)
		lab[i] = i;
	for (uint32_t i = n; i-- > 1;) {
		uint32_t j = (uint32_t)(gnn_rng_next(rng) % (i + 1)), t = lab[i];

		lab[i] = lab[j];
		lab[j] = t;
	}
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = i + 1; j < n; j++)
			if (gnn_rng_uniform(rng) < p && ne < 256) {
				edges[2 * ne] = lab[i];
				edges[2 * ne + 1] = lab[j];
				ne++;
			}
	tb_job(b, rng, n, edges, ne);
}

static const uint32_t TB_DIAMOND[] = {0, 1, 0, 2, 1, 3, 2, 3};
static const uint32_t TB_CHAIN[] = {0, 1, 1, 2, 2, 3};
static const uint32_t TB_FAN[] = {0, 4, 1, 4, 2, 4, 3, 4, 0, 1};
static const uint32_t TB_SKIP[] = {0, 1, 1, 2, 0, 2, 3, 2};

/* The standard mixed batch: diamond, chain, fan, isolated, random(7), isolated, skip. */
static inline void tb_mixed(struct tb *b, uint32_t F, uint64_t seed)
{
	struct gnn_rng rng;

	gnn_rng_seed(&rng, seed);
	tb_init(b, F);
	tb_job(b, &rng, 4, TB_DIAMOND, 4);
	tb_job(b, &rng, 4, TB_CHAIN, 3);
	tb_job(b, &rng, 5, TB_FAN, 5);
	tb_job(b, &rng, 1, NULL, 0);
	tb_random_job(b, &rng, 7, 0.4);
	tb_job(b, &rng, 1, NULL, 0);
	tb_job(b, &rng, 4, TB_SKIP, 4);
}

static inline struct gnn_batch tb_batch(const struct tb *b)
{
	return (struct gnn_batch){.nnodes = b->N,
				  .nfeatures = b->F,
				  .features = b->x,
				  .njobs = b->J,
				  .job_start = b->js,
				  .nedges = b->E,
				  .edges = b->edges};
}

/* A small model shape for gradient checks: F=5, d=6, L=2, E=6 (D=12), 3 heads, mlp 7. */
static inline struct gnn_config tb_small_config(void)
{
	struct gnn_config c = gnn_config_default();

	c.nfeatures = 5;
	c.hidden = 6;
	c.layers = 2;
	c.emb = 6;
	c.heads = 3;
	c.mlp_hidden = 7;
	return c;
}

#endif
