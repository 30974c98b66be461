/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Everything of gnn/ after the DAGNN, forward and backward: the embedding
 * e_v = W_o [h_v^1 .. h_v^L of both directions] (the layer-concatenating
 * readout of DAGNN, Thost & Chen, ICLR 2021), the per-job max-pool appended
 * to each node, multi-head scaled dot-product self-attention over the
 * schedulable nodes with a residual connection (Vaswani et al., "Attention
 * Is All You Need", NeurIPS 2017; no biases, one packed Q|K|V projection and
 * an output projection), and the score head s = w2 . tanh(W1 y + b1) + b2.
 */
#include <math.h>

#include "gnn/gnn_impl.h"

struct dims {
	uint32_t N, n, E, D, H, dh, mlp, cat, J;
	uint32_t t_wo, t_wqkv, t_wa, t_w1, t_b1, t_w2, t_b2;
};

static struct dims dims_of(const struct gnn_model *m)
{
	const struct gnn_config *g = &m->cfg;
	uint32_t t = gnn_tidx_after_layers(m);

	return (struct dims){.N = m->N,
			     .n = m->nsched,
			     .E = g->emb,
			     .D = 2 * g->emb,
			     .H = g->heads,
			     .dh = 2 * g->emb / g->heads,
			     .mlp = g->mlp_hidden,
			     .cat = 2 * g->layers * g->hidden,
			     .J = m->njobs,
			     .t_wo = t,
			     .t_wqkv = t + 1,
			     .t_wa = t + 2,
			     .t_w1 = t + 3,
			     .t_b1 = t + 4,
			     .t_w2 = t + 5,
			     .t_b2 = t + 6};
}

void gnn_head_forward(struct gnn_model *m)
{
	struct dims z = dims_of(m);
	const struct gnn_kernels *k = m->k;
	size_t nn = (size_t)z.n * z.n;

	if (z.N == 0)
		return;
	gnn_gemm1(m, false, true, z.N, z.E, z.cat, 1, m->zcat, z.cat, gnn_pv(m, z.t_wo), z.cat, 0,
		  m->e, z.E);
	k->pool_fwd(m->e, z.E, m->jstart, z.J, m->pool, m->argmax);
	if (z.n == 0)
		return;

	/* attention, over us = [e_v, pool of v's job] of the schedulable v only */
	k->gather(m->us, z.D, m->e, z.E, m->sched, z.n, z.E);
	k->gather(m->us + z.E, z.D, m->pool, z.E, m->sched_job, z.n, z.E);
	gnn_gemm1(m, false, true, z.n, 3 * z.D, z.D, 1, m->us, z.D, gnn_pv(m, z.t_wqkv), z.D, 0,
		  m->qkv, 3 * z.D);
	/* The 1/sqrt(dh) scale goes into the GEMM's alpha rather than a pass over att. */
	for (uint32_t h = 0; h < z.H; h++) {
		m->gemms[h] = gnn_gemm_of(false, true, z.n, z.n, z.dh, m->qkv + h * z.dh, 3 * z.D,
					  m->qkv + z.D + h * z.dh, 3 * z.D, 0, m->att + h * nn,
					  z.n);
		m->gemms[h].alpha = 1.0f / sqrtf((float)z.dh);
	}
	m->be->gemm_batch(m->ctx, m->gemms, z.H);
	k->softmax_fwd(m->att, z.H * z.n, z.n);
	for (uint32_t h = 0; h < z.H; h++)
		m->gemms[h] = gnn_gemm_of(false, false, z.n, z.dh, z.n, m->att + h * nn, z.n,
					  m->qkv + 2 * z.D + h * z.dh, 3 * z.D, 0, m->o + h * z.dh,
					  z.D);
	m->be->gemm_batch(m->ctx, m->gemms, z.H);
	k->gather(m->y, z.D, m->us, z.D, NULL, z.n, z.D);
	gnn_gemm1(m, false, true, z.n, z.D, z.D, 1, m->o, z.D, gnn_pv(m, z.t_wa), z.D, 1, m->y,
		  z.D);

	/* score head */
	gnn_gemm1(m, false, true, z.n, z.mlp, z.D, 1, m->y, z.D, gnn_pv(m, z.t_w1), z.D, 0, m->t,
		  z.mlp);
	k->tanh_bias_fwd(m->t, gnn_pv(m, z.t_b1), z.n, z.mlp);
	gnn_gemm1(m, false, true, z.n, 1, z.mlp, 1, m->t, z.mlp, gnn_pv(m, z.t_w2), z.mlp, 0, m->s,
		  1);
	k->add_bias(m->s, 1, gnn_pv(m, z.t_b2), z.n, 1);
}

void gnn_head_backward(struct gnn_model *m)
{
	struct dims z = dims_of(m);
	const struct gnn_kernels *k = m->k;
	size_t nn = (size_t)z.n * z.n;

	if (z.N == 0)
		return;
	k->zero(m->de, (size_t)z.N * z.E);
	if (z.n > 0) {
		/* score head */
		k->colsum_add(gnn_pg(m, z.t_b2), m->ds, 1, z.n, 1);
		gnn_gemm1(m, true, false, 1, z.mlp, z.n, 1, m->ds, 1, m->t, z.mlp, 1,
			  gnn_pg(m, z.t_w2), z.mlp);
		gnn_gemm1(m, false, false, z.n, z.mlp, 1, 1, m->ds, 1, gnn_pv(m, z.t_w2), z.mlp, 0,
			  m->dt, z.mlp);
		k->tanh_bwd(m->dt, m->t, (size_t)z.n * z.mlp);
		k->colsum_add(gnn_pg(m, z.t_b1), m->dt, z.mlp, z.n, z.mlp);
		gnn_gemm1(m, true, false, z.mlp, z.D, z.n, 1, m->dt, z.mlp, m->y, z.D, 1,
			  gnn_pg(m, z.t_w1), z.D);
		gnn_gemm1(m, false, false, z.n, z.D, z.mlp, 1, m->dt, z.mlp, gnn_pv(m, z.t_w1), z.D,
			  0, m->dy, z.D);

		/*
		 * attention: output projection, heads, Q|K|V projection; dy keeps
		 * the residual's share of d us and gets the projection's added.
		 */
		gnn_gemm1(m, true, false, z.D, z.D, z.n, 1, m->dy, z.D, m->o, z.D, 1,
			  gnn_pg(m, z.t_wa), z.D);
		gnn_gemm1(m, false, false, z.n, z.D, z.D, 1, m->dy, z.D, gnn_pv(m, z.t_wa), z.D, 0,
			  m->dout, z.D);
		for (uint32_t h = 0; h < z.H; h++) {
			m->gemms[2 * h] = gnn_gemm_of(false, true, z.n, z.n, z.dh,
						      m->dout + h * z.dh, z.D,
						      m->qkv + 2 * z.D + h * z.dh, 3 * z.D, 0,
						      m->datt + h * nn, z.n);
			m->gemms[2 * h + 1] = gnn_gemm_of(true, false, z.n, z.dh, z.n,
							  m->att + h * nn, z.n, m->dout + h * z.dh,
							  z.D, 0, m->dqkv + 2 * z.D + h * z.dh,
							  3 * z.D);
		}
		m->be->gemm_batch(m->ctx, m->gemms, 2 * z.H);
		k->softmax_bwd(m->datt, m->att, z.H * z.n, z.n, 1.0f / sqrtf((float)z.dh));
		for (uint32_t h = 0; h < z.H; h++) {
			m->gemms[2 * h] = gnn_gemm_of(false, false, z.n, z.dh, z.n,
						      m->datt + h * nn, z.n,
						      m->qkv + z.D + h * z.dh, 3 * z.D, 0,
						      m->dqkv + h * z.dh, 3 * z.D);
			m->gemms[2 * h + 1] = gnn_gemm_of(true, false, z.n, z.dh, z.n,
							  m->datt + h * nn, z.n, m->qkv + h * z.dh,
							  3 * z.D, 0, m->dqkv + z.D + h * z.dh,
							  3 * z.D);
		}
		m->be->gemm_batch(m->ctx, m->gemms, 2 * z.H);
		gnn_gemm1(m, true, false, 3 * z.D, z.D, z.n, 1, m->dqkv, 3 * z.D, m->us, z.D, 1,
			  gnn_pg(m, z.t_wqkv), z.D);
		gnn_gemm1(m, false, false, z.n, z.D, 3 * z.D, 1, m->dqkv, 3 * z.D,
			  gnn_pv(m, z.t_wqkv), z.D, 1, m->dy, z.D);
		/* d us -> de: each row's own half to its node, the pooled half to its job */
		k->scatter_add(m->de, z.E, m->dy, z.D, m->sched, z.n, z.E);
		k->pool_bwd(m->dy + z.E, z.D, m->sched_job, z.n, z.E, m->argmax, m->de);
	}

	/* embedding */
	gnn_gemm1(m, true, false, z.E, z.cat, z.N, 1, m->de, z.E, m->zcat, z.cat, 1,
		  gnn_pg(m, z.t_wo), z.cat);
	gnn_gemm1(m, false, false, z.N, z.cat, z.E, 1, m->de, z.E, gnn_pv(m, z.t_wo), z.cat, 0,
		  m->dzcat, z.cat);
}
