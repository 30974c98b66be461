/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gnn model: configuration, the parameter tensors (one block holding
 * parameters, gradients and the Adam moments), initialisation, gradient
 * accumulation and the Adam optimiser with global-norm clipping (Kingma & Ba,
 * "Adam: A Method for Stochastic Optimization", ICLR 2015; clipping as in
 * Pascanu et al., "On the difficulty of training recurrent neural networks",
 * ICML 2013).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gnn/gnn_impl.h"

struct gnn_config gnn_config_default(void)
{
	return (struct gnn_config){
		.nfeatures = 8,
		.hidden = 32,
		.layers = 2,
		.emb = 32,
		.heads = 2,
		.mlp_hidden = 32,
		.pipelined = true,
	};
}

struct gnn_adam gnn_adam_default(void)
{
	return (struct gnn_adam){
		.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .clip_norm = 1.0f};
}

int gnn_config_check(const struct gnn_config *cfg, struct gnn_err *err)
{
	if (!cfg)
		return gnn_errf(err, EINVAL, "gnn config: NULL");
	if (cfg->nfeatures == 0 || cfg->nfeatures > GNN_MAX_FEATURES)
		return gnn_errf(err, EINVAL, "gnn config: nfeatures %u not in 1..%u",
				cfg->nfeatures, GNN_MAX_FEATURES);
	if (cfg->hidden == 0 || cfg->hidden > GNN_MAX_WIDTH)
		return gnn_errf(err, EINVAL, "gnn config: hidden %u not in 1..%u", cfg->hidden,
				GNN_MAX_WIDTH);
	if (cfg->layers == 0 || cfg->layers > GNN_MAX_LAYERS)
		return gnn_errf(err, EINVAL, "gnn config: layers %u not in 1..%u", cfg->layers,
				GNN_MAX_LAYERS);
	if (cfg->emb == 0 || cfg->emb > GNN_MAX_WIDTH)
		return gnn_errf(err, EINVAL, "gnn config: emb %u not in 1..%u", cfg->emb,
				GNN_MAX_WIDTH);
	if (cfg->mlp_hidden == 0 || cfg->mlp_hidden > GNN_MAX_WIDTH)
		return gnn_errf(err, EINVAL, "gnn config: mlp_hidden %u not in 1..%u",
				cfg->mlp_hidden, GNN_MAX_WIDTH);
	if (cfg->heads == 0 || cfg->heads > GNN_MAX_HEADS || (2 * cfg->emb) % cfg->heads != 0)
		return gnn_errf(err, EINVAL,
				"gnn config: heads %u must be in 1..%u and divide 2 * emb = %u",
				cfg->heads, GNN_MAX_HEADS, 2 * cfg->emb);
	if (cfg->prior > GNN_MAX_PRIOR)
		return gnn_errf(err, EINVAL, "gnn config: prior %u not in 0..%u", cfg->prior,
				GNN_MAX_PRIOR);
	if (!isfinite(cfg->prior_scale) || cfg->prior_scale < 0 || cfg->prior_scale > 1e6f)
		return gnn_errf(err, EINVAL, "gnn config: prior_scale %g not in [0, 1e6]",
				(double)cfg->prior_scale);
	return 0;
}

uint32_t gnn_tidx_layer(const struct gnn_model *m, int dir, uint32_t l, int which)
{
	return GNN_TI_FIRST_LAYER + ((uint32_t)dir * m->cfg.layers + (l - 1)) * GNN_T_PER_LAYER +
	       (uint32_t)which;
}

uint32_t gnn_tidx_after_layers(const struct gnn_model *m)
{
	return GNN_TI_FIRST_LAYER + 2 * m->cfg.layers * GNN_T_PER_LAYER;
}

static void add_tensor(struct gnn_model *m, const char *name, uint32_t rows, uint32_t cols,
		       float scale)
{
	struct gnn_ptensor *t = &m->tensors[m->ntensors++];

	snprintf(t->name, sizeof(t->name), "%s", name);
	t->rows = rows;
	t->cols = cols;
	t->off = m->nparams;
	t->init_scale = scale;
	m->nparams += (size_t)rows * cols;
}

static void build_tensors(struct gnn_model *m)
{
	const struct gnn_config *c = &m->cfg;
	uint32_t d = c->hidden, D = 2 * c->emb, cat = 2 * c->layers * d;
	float sd = 1.0f / sqrtf((float)d), sD = 1.0f / sqrtf((float)D);
	char name[24];

	add_tensor(m, "in.W", d, c->nfeatures, 1.0f / sqrtf((float)c->nfeatures));
	add_tensor(m, "in.b", 1, d, 0);
	for (int dir = 0; dir < 2; dir++) {
		for (uint32_t l = 1; l <= c->layers; l++) {
			static const char *const what[GNN_T_PER_LAYER] = {"aq", "ak", "Wi",
									  "bi", "Wh", "bh"};
			static const uint32_t rows[GNN_T_PER_LAYER] = {1, 1, 3, 1, 3, 1};
			static const uint32_t bias[GNN_T_PER_LAYER] = {0, 0, 0, 1, 0, 1};

			for (int w = 0; w < GNN_T_PER_LAYER; w++) {
				snprintf(name, sizeof(name), "%s.%u.%s", dir ? "rev" : "fwd", l,
					 what[w]);
				add_tensor(m, name, rows[w] == 3 ? 3 * d : 1, bias[w] ? 3 * d : d,
					   bias[w] ? 0 : sd);
			}
		}
	}
	add_tensor(m, "emb.Wo", c->emb, cat, 1.0f / sqrtf((float)cat));
	add_tensor(m, "att.Wqkv", 3 * D, D, sD);
	add_tensor(m, "att.Wa", D, D, sD);
	add_tensor(m, "head.W1", c->mlp_hidden, D, sD);
	add_tensor(m, "head.b1", 1, c->mlp_hidden, 0);
	/* a residual model's untrained scores are 0: its caller's prior alone decides */
	add_tensor(m, "head.w2", 1, c->mlp_hidden,
		   c->prior ? 0.0f : 0.01f / sqrtf((float)c->mlp_hidden));
	add_tensor(m, "head.b2", 1, 1, 0);
}

/*
 * Starts backend `name` for m; a "cuda" that cannot start (no CUDA in this
 * build, no driver, no device) falls back to "cpu" and says why in
 * m->fallback. 0 or -errno with a message.
 */
static int start_backend(struct gnn_model *m, const char *name, struct gnn_err *err)
{
	struct gnn_err why = {{0}};
	int r;

	m->be = gnn_backend_find(name, &why);
	if (m->be) {
		r = m->be->init(&m->ctx, &why);
		if (r == 0)
			return 0;
	} else {
		r = -errno;
	}
	if (!name || strcmp(name, "cuda") != 0) {
		m->be = NULL;
		return gnn_errf(err, -r, "%s", why.msg);
	}
	snprintf(m->fallback, sizeof(m->fallback), "%s", why.msg);
	m->be = gnn_backend_find("cpu", err);
	if (!m->be)
		return -errno;
	return m->be->init(&m->ctx, err);
}

struct gnn_model *gnn_model_new(const struct gnn_config *cfg, const char *backend_name,
				uint64_t seed, struct gnn_err *err)
{
	struct gnn_model *m;
	struct gnn_rng rng;
	size_t bytes;
	int r;

	if ((r = gnn_config_check(cfg, err)) < 0) {
		errno = -r;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		goto nomem;
	m->cfg = *cfg;
	if (!cfg->prior)
		m->cfg.prior_scale = 0; /* no prior: nothing to scale (as a version 1 file reads) */
	m->fold = cfg->nfeatures < cfg->hidden;
	r = start_backend(m, backend_name, err);
	if (r < 0) {
		free(m);
		errno = -r;
		return NULL;
	}
	m->k = m->be->kernels;
	if (m->fallback[0])
		snprintf(m->info, sizeof(m->info), "%s: %s (cuda unavailable)", m->be->name,
			 m->be->info(m->ctx));
	else
		snprintf(m->info, sizeof(m->info), "%s: %s", m->be->name, m->be->info(m->ctx));
	m->tensors = calloc(gnn_tidx_after_layers(m) + 7, sizeof(*m->tensors));
	m->gemms = calloc(8 * (size_t)cfg->layers + 2 * (size_t)cfg->heads + 8, sizeof(*m->gemms));
	if (!m->tensors || !m->gemms)
		goto nomem_m;
	build_tensors(m);
	/* params | grads | Adam m | Adam v | reduction scratch, host- and backend-visible */
	bytes = 4 * m->nparams * sizeof(float) + sizeof(double);
	m->block = m->be->mem_alloc_shared(m->ctx, bytes);
	if (!m->block)
		goto nomem_m;
	m->params = m->block;
	m->grads = m->params + m->nparams;
	m->mom1 = m->grads + m->nparams;
	m->mom2 = m->mom1 + m->nparams;
	m->red = (double *)(void *)((char *)m->block + 4 * m->nparams * sizeof(float));
	gnn_rng_seed(&rng, seed);
	for (uint32_t t = 0; t < m->ntensors; t++) {
		const struct gnn_ptensor *pt = &m->tensors[t];
		size_t n = (size_t)pt->rows * pt->cols;

		for (size_t i = 0; i < n; i++)
			m->params[pt->off + i] =
				pt->init_scale * (float)(2 * gnn_rng_uniform(&rng) - 1);
	}
	return m;

nomem_m:
	gnn_model_free(m);
nomem:
	gnn_errf(err, ENOMEM, "gnn model: out of memory");
	errno = ENOMEM;
	return NULL;
}

struct gnn_model *gnn_model_free(struct gnn_model *m)
{
	if (!m)
		return NULL;
	if (m->ws)
		m->be->mem_free(m->ctx, m->ws);
	if (m->block)
		m->be->mem_free_shared(m->ctx, m->block);
	m->be->fini(m->ctx);
	free(m->hws);
	free(m->tensors);
	free(m->gemms);
	free(m);
	return NULL;
}

const struct gnn_config *gnn_model_config(const struct gnn_model *m)
{
	return &m->cfg;
}

void gnn_model_set_pipelined(struct gnn_model *m, bool pipelined)
{
	m->cfg.pipelined = pipelined;
}

const char *gnn_model_backend_info(const struct gnn_model *m)
{
	return m->info;
}

const char *gnn_model_backend(const struct gnn_model *m)
{
	return m->be->name;
}

const char *gnn_model_fallback(const struct gnn_model *m)
{
	return m->fallback[0] ? m->fallback : NULL;
}

size_t gnn_nparams(const struct gnn_model *m)
{
	return m->nparams;
}

uint32_t gnn_param_count(const struct gnn_model *m)
{
	return m->ntensors;
}

int gnn_param_get(struct gnn_model *m, uint32_t i, struct gnn_param *ret)
{
	const struct gnn_ptensor *t;

	if (i >= m->ntensors)
		return -EINVAL;
	m->be->sync(m->ctx, NULL);
	t = &m->tensors[i];
	*ret = (struct gnn_param){.name = t->name,
				  .value = m->params + t->off,
				  .grad = m->grads + t->off,
				  .rows = t->rows,
				  .cols = t->cols};
	return 0;
}

void gnn_zero_grad(struct gnn_model *m)
{
	m->k->zero(m->grads, m->nparams);
	m->be->sync(m->ctx, NULL); /* an error stays pending: the next forward reports it */
}

int gnn_adam_step(struct gnn_model *m, const struct gnn_adam *opt, double *ret_norm,
		  struct gnn_err *err)
{
	double norm;
	float scale = 1, bc1, bc2;

	if (!opt || !(opt->lr > 0) || !(opt->beta1 >= 0 && opt->beta1 < 1) ||
	    !(opt->beta2 >= 0 && opt->beta2 < 1) || !(opt->eps > 0) || !(opt->clip_norm >= 0))
		return gnn_errf(err, EINVAL,
				"gnn adam: need lr > 0, 0 <= beta1, beta2 < 1, eps > 0, clip >= 0");
	norm = sqrt(m->k->sumsq(m->grads, m->nparams, m->red));
	if (!isfinite(norm)) {
		int r = m->be->sync(m->ctx, err);

		return r < 0 ? r : gnn_errf(err, EINVAL, "gnn adam: gradient is not finite");
	}
	if (ret_norm)
		*ret_norm = norm;
	if (opt->clip_norm > 0 && norm > opt->clip_norm)
		scale = (float)(opt->clip_norm / norm);
	m->adam_t++;
	bc1 = (float)(1 - pow(opt->beta1, (double)m->adam_t));
	bc2 = (float)(1 - pow(opt->beta2, (double)m->adam_t));
	m->k->adam(m->params, m->grads, m->mom1, m->mom2, m->nparams, scale, opt->lr, opt->beta1,
		   opt->beta2, opt->eps, bc1, bc2);
	return m->be->sync(m->ctx, err);
}

void gnn_adam_state(struct gnn_model *m, struct gnn_adam_state *ret)
{
	ret->mom1 = m->mom1;
	ret->mom2 = m->mom2;
	ret->step = &m->adam_t;
	ret->n = m->nparams;
}

/*
 * GNN_ACT_NODE: [e_v, pool of v's job] per node. The forward keeps e and the
 * pools (it builds those rows for the schedulable nodes only), so the rows
 * are put together here, through a host copy of both.
 */
static int copy_node_activations(const struct gnn_model *m, float *out, size_t cap,
				 uint32_t *ret_rows, uint32_t *ret_cols, struct gnn_err *err)
{
	size_t N = m->N, E = m->cfg.emb, J = m->njobs;
	float *tmp;

	if (N * 2 * E > cap)
		return gnn_errf(err, ENOSPC, "gnn: activation needs %zu floats, room for %zu",
				N * 2 * E, cap);
	tmp = malloc((N + J) * E * sizeof(float) + 1);
	if (!tmp)
		return gnn_errf(err, ENOMEM, "gnn: out of memory");
	if (N)
		m->be->copy_to_host(m->ctx, tmp, m->e, N * E * sizeof(float));
	if (J)
		m->be->copy_to_host(m->ctx, tmp + N * E, m->pool, J * E * sizeof(float));
	for (size_t v = 0; v < N; v++) {
		memcpy(out + v * 2 * E, tmp + v * E, E * sizeof(float));
		memcpy(out + v * 2 * E + E, tmp + (N + (size_t)m->h_job_of[v]) * E,
		       E * sizeof(float));
	}
	free(tmp);
	*ret_rows = (uint32_t)N;
	*ret_cols = (uint32_t)(2 * E);
	return 0;
}

int gnn_copy_activations(const struct gnn_model *m, enum gnn_activation which, float *out,
			 size_t cap, uint32_t *ret_rows, uint32_t *ret_cols, struct gnn_err *err)
{
	const float *src;
	uint32_t rows, cols;

	if (!m->have_fwd)
		return gnn_errf(err, EINVAL, "gnn: no forward pass to copy activations from");
	switch (which) {
	case GNN_ACT_DAGNN:
		src = m->zcat;
		rows = m->N;
		cols = 2 * m->cfg.layers * m->cfg.hidden;
		break;
	case GNN_ACT_NODE:
		return copy_node_activations(m, out, cap, ret_rows, ret_cols, err);
	case GNN_ACT_ATTN:
		src = m->y;
		rows = m->nsched;
		cols = 2 * m->cfg.emb;
		break;
	default:
		return gnn_errf(err, EINVAL, "gnn: unknown activation %d", (int)which);
	}
	if ((size_t)rows * cols > cap)
		return gnn_errf(err, ENOSPC, "gnn: activation needs %zu floats, room for %zu",
				(size_t)rows * cols, cap);
	if (rows)
		m->be->copy_to_host(m->ctx, out, src, (size_t)rows * cols * sizeof(float));
	*ret_rows = rows;
	*ret_cols = cols;
	return 0;
}
