/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gnn internals shared by the files of gnn/: the model, its workspace layout
 * and the element-wise kernel table every backend provides. Not installed,
 * not included outside gnn/.
 *
 * Matrices are row-major float32; a weight W of shape out x in is applied as
 * Y = X W^T. "Dir order" is the order of the nodes of a batch sorted by
 * their level in one direction (forward: longest path from a source;
 * reverse: longest path to a sink), so the nodes of one level are
 * contiguous rows.
 */
#ifndef LOOM_GNN_GNN_IMPL_H
#define LOOM_GNN_GNN_IMPL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "gnn/gnn.h"

#define GNN_LEAKY_SLOPE 0.2f
#define GNN_ALIGN       64

/*
 * One DAGNN work unit for the kernels: rows [r0, r1) (dir order, one level)
 * of one direction and layer l. Arrays are whole (the kernels offset by the
 * row themselves): h and the rest are layer l's, hprev and dhprev layer
 * l - 1's, ptr and adj the direction's CSR; aq .. bh point at the layer's
 * parameters (bi at the folded bias for a folded layer 1), daq .. dbh at
 * their gradients.
 */
struct gnn_unit {
	uint32_t r0, r1;
	const int32_t *ptr, *adj;
	const float *hprev, *aq, *ak, *bi, *bh;
	float *h, *m, *pre, *alpha, *gi, *gh, *gates;
	float *dh, *dm, *dgi, *dgh, *ealpha, *dhprev;
	float *daq, *dak, *dbi, *dbh;
};

/*
 * Element-wise kernels. All pointers address backend memory; ranges are
 * rows [r0, r1) or counts. gnn_kernels_ref (kernels.c) is the CPU version.
 */
struct gnn_kernels {
	/* x[0..n) = 0 */
	void (*zero)(float *x, size_t n);
	/* y[r][0..cols) += b for rows [0, rows) (row stride ld) */
	void (*add_bias)(float *y, uint32_t ld, const float *b, uint32_t rows, uint32_t cols);
	/* db[c] += sum_r dy[r][c] */
	void (*colsum_add)(float *db, const float *dy, uint32_t ld, uint32_t rows, uint32_t cols);
	/* dst[r] = src[idx[r]] (idx NULL: src[r]), rows of cols floats */
	void (*gather)(float *dst, uint32_t dst_ld, const float *src, uint32_t src_ld,
		       const int32_t *idx, uint32_t rows, uint32_t cols);
	/* dst[idx[r]] += src[r] (idx NULL: dst[r]); the idx entries are distinct */
	void (*scatter_add)(float *dst, uint32_t dst_ld, const float *src, uint32_t src_ld,
			    const int32_t *idx, uint32_t rows, uint32_t cols);
	/*
	 * The DAGNN ops take the units of one wavefront (or one unit): n
	 * struct gnn_unit, which a backend may run concurrently. Their own rows
	 * never overlap, but in the backward two units of a wavefront may add
	 * into the same rows of a layer's dh (unit (l, k) through its
	 * neighbours, unit (l + 1, k - 1) through dhprev), so a concurrent
	 * backend adds there atomically.
	 *
	 * msg_fwd: the attention message of each row p: over its edges adj[ptr[p]
	 * .. ptr[p+1]) (rows of earlier levels of h), writes pre[e] (score before
	 * LeakyReLU), alpha[e] and m row p.
	 */
	void (*msg_fwd)(const struct gnn_unit *u, uint32_t n, uint32_t d);
	/*
	 * Backward of msg_fwd, given dm rows: adds to dhprev rows, dh rows of the
	 * neighbours, daq and dak; ealpha is edge scratch.
	 */
	void (*msg_bwd)(const struct gnn_unit *u, uint32_t n, uint32_t d);
	/*
	 * GRU cell of each row: gi (+= bi), gh (+= bh) hold the rows x 3d
	 * pre-activations [r | z | n], m the hidden input; writes gates
	 * [r | z | n] and h.
	 */
	void (*gru_fwd)(const struct gnn_unit *u, uint32_t n, uint32_t d);
	/* Backward of gru_fwd: from dh rows writes dgi, dgh (3d wide) and dm = dh * z. */
	void (*gru_bwd)(const struct gnn_unit *u, uint32_t n, uint32_t d);
	/* dbi += column sums of the unit's dgi rows, dbh of its dgh rows (each when not NULL). */
	void (*bias_grad)(const struct gnn_unit *u, uint32_t n, uint32_t d);
	/*
	 * Per-job max-pool of e (nnodes x E) into pool (njobs x E) with the
	 * argmax node per entry (-1 for an empty job).
	 */
	void (*pool_fwd)(const float *e, uint32_t E, const uint32_t *job_start, uint32_t njobs,
			 float *pool, int32_t *argmax);
	/*
	 * Backward of the pooling for rows gradients of pooled vectors: row r
	 * (E floats at dpool + r * ld) belongs to job jobs[r] and goes, column by
	 * column, to that job's argmax nodes in de (nnodes x E). Several rows may
	 * belong to one job.
	 */
	void (*pool_bwd)(const float *dpool, uint32_t ld, const int32_t *jobs, uint32_t rows,
			 uint32_t E, const int32_t *argmax, float *de);
	/* Row-wise softmax, in place. */
	void (*softmax_fwd)(float *a, uint32_t rows, uint32_t cols);
	/* da = scale * a * (da - rowsum(da * a)), in place (a: softmax output). */
	void (*softmax_bwd)(float *da, const float *a, uint32_t rows, uint32_t cols, float scale);
	/* y = tanh(y + b) row-wise (rows x cols). */
	void (*tanh_bias_fwd)(float *y, const float *b, uint32_t rows, uint32_t cols);
	/* dy *= 1 - y^2 */
	void (*tanh_bwd)(float *dy, const float *y, size_t n);
	/* Returns sum g^2 in double; red is one double of backend scratch. */
	double (*sumsq)(const float *g, size_t n, double *red);
	/* Adam update of n parameters with gradient g * gscale; bc1, bc2: bias corrections. */
	void (*adam)(float *p, const float *g, float *mom1, float *mom2, size_t n, float gscale,
		     float lr, float beta1, float beta2, float eps, float bc1, float bc2);
};

extern const struct gnn_kernels gnn_kernels_ref;

/* The parameter tensors of a model, in file order. */
struct gnn_ptensor {
	char name[24];
	size_t off; /* in floats, into params / grads */
	uint32_t rows, cols;
	float init_scale; /* uniform +-init_scale; 0: zeros */
};

/* Indices into a direction/layer's tensors. */
enum {
	GNN_T_AQ,
	GNN_T_AK,
	GNN_T_WI,
	GNN_T_BI,
	GNN_T_WH,
	GNN_T_BH,
	GNN_T_PER_LAYER
};

/* Per direction and layer activations, in dir order. */
struct gnn_layer_act {
	float *h, *m, *gi, *gh, *gates; /* N x d, N x d, N x 3d, N x 3d, N x 3d */
	float *pre, *alpha;             /* E */
	float *dh, *dm, *dgi, *dgh;     /* backward */
	float *ealpha;                  /* E scratch */
};

/*
 * Per direction: level structure and stacks (act[0] holds h^(0) in dir
 * order). The h_ arrays are built on the host; the unprefixed ones are the
 * backend's copies that kernels read (the same arrays on a host-memory
 * backend). level_start is read only on the host.
 */
struct gnn_dir {
	int32_t *order, *h_order; /* dir-order position -> node */
	int32_t *pos, *h_pos;     /* node -> position */
	int32_t *level_start;     /* nlevels + 1, host */
	uint32_t nlevels;
	int32_t *ptr, *h_ptr; /* CSR over positions: N + 1 */
	int32_t *adj, *h_adj; /* E */
	/*
	 * Layer 1's input GEMM folded through the input projection (used when
	 * F < d): W_i h^(0) = (W_i W_in) x + W_i b_in, so it runs with k = F.
	 * x: N x F in dir order; wf = W_i W_in (3d x F); bf = W_i b_in + b_i (3d).
	 */
	float *x, *wf, *bf;
	struct gnn_layer_act act[GNN_MAX_LAYERS + 1];
};

struct gnn_model {
	struct gnn_config cfg;
	const struct gnn_backend_class *be;
	const struct gnn_kernels *k;
	void *ctx;
	char info[160];

	/* parameters */
	uint32_t ntensors;
	struct gnn_ptensor *tensors;
	size_t nparams;
	float *block; /* params | grads | adam m | adam v | red, from mem_alloc_shared */
	float *params, *grads, *mom1, *mom2;
	uint64_t adam_t;

	/* workspace, grown by gnn_forward: backend part and host part (dagnn.c) */
	void *ws;
	size_t ws_cap;
	void *hws;
	size_t hws_cap;
	double *red;                /* one double of backend scratch for sumsq */
	char fallback[GNN_ERR_MAX]; /* why the requested backend was not used; "" if it was */
	struct gnn_gemm *gemms;     /* room for 8 * L + 2 * heads + 8 descriptors */

	bool fold; /* layer 1 reads x through wf, bf (struct gnn_dir) */

	/* the last forward's shape and activations (valid when have_fwd) */
	bool have_fwd;
	uint32_t N, nedges, njobs, nsched;
	float *x;         /* N x F */
	float *h0;        /* N x d, node order */
	float *dh0;       /* N x d */
	uint32_t *jstart; /* njobs + 1 (backend copy; h_jstart on the host) */
	uint32_t *h_jstart;
	int32_t *h_job_of; /* N, host: node -> job */
	int32_t *h_sched, *h_sched_job;
	float *zcat;        /* N x 2Ld */
	float *dzcat;       /* N x 2Ld */
	float *e, *de;      /* N x E */
	float *pool;        /* njobs x E */
	int32_t *argmax;    /* njobs x E */
	int32_t *sched;     /* nsched: the schedulable nodes (backend copy) */
	int32_t *sched_job; /* nsched: their jobs (backend copy) */
	float *us;          /* nsched x D: [e_v, pool of v's job] of the schedulable v */
	float *qkv, *dqkv;  /* nsched x 3D */
	float *att, *datt;  /* heads x nsched x nsched */
	float *o, *dout;    /* nsched x D */
	float *y, *dy;      /* nsched x D; dy ends as d loss / d us */
	float *t, *dt;      /* nsched x mlp */
	float *s, *ds;      /* nsched */
	int32_t *scratch;   /* prepare: two CSRs, queue, counters, two level arrays */
	struct gnn_dir dir[2];
};

/* Writes a formatted message into err (if not NULL) and returns -e. */
int gnn_errf(struct gnn_err *err, int e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Tensor indices of the model's named parameters. */
uint32_t gnn_tidx_layer(const struct gnn_model *m, int dir, uint32_t l, int which);
enum {
	GNN_TI_IN_W,
	GNN_TI_IN_B,
	GNN_TI_FIRST_LAYER,
};
/* Index of the tensor after the DAGNN layers: emb.Wo, att.Wqkv, att.Wa, head.W1, head.b1,
 * head.w2, head.b2 follow in this order. */
uint32_t gnn_tidx_after_layers(const struct gnn_model *m);

static inline float *gnn_pv(const struct gnn_model *m, uint32_t t)
{
	return m->params + m->tensors[t].off;
}

static inline float *gnn_pg(const struct gnn_model *m, uint32_t t)
{
	return m->grads + m->tensors[t].off;
}

/* Validates a configuration; 0 or -EINVAL with a message. */
int gnn_config_check(const struct gnn_config *cfg, struct gnn_err *err);

/* Returns the GEMM descriptor C = op(A) op(B) + beta C with alpha 1 (struct gnn_gemm). */
static inline struct gnn_gemm gnn_gemm_of(bool ta, bool tb, uint32_t M, uint32_t N, uint32_t K,
					  const float *a, uint32_t lda, const float *b,
					  uint32_t ldb, float beta, float *c, uint32_t ldc)
{
	return (struct gnn_gemm){.trans_a = ta,
				 .trans_b = tb,
				 .m = M,
				 .n = N,
				 .k = K,
				 .alpha = 1,
				 .beta = beta,
				 .a = a,
				 .lda = lda,
				 .b = b,
				 .ldb = ldb,
				 .c = c,
				 .ldc = ldc};
}

/* Runs one GEMM on m's backend. */
void gnn_gemm1(struct gnn_model *m, bool ta, bool tb, uint32_t M, uint32_t N, uint32_t K,
	       float alpha, const float *a, uint32_t lda, const float *b, uint32_t ldb, float beta,
	       float *c, uint32_t ldc);

/* Sets up the batch: validates, grows the workspace, builds levels. 0 or -errno. */
int gnn_prepare(struct gnn_model *m, const struct gnn_batch *b, const uint32_t *sched,
		uint32_t nsched, struct gnn_err *err);

/* DAGNN forward / backward (dagnn.c). */
void gnn_dagnn_forward(struct gnn_model *m);
void gnn_dagnn_backward(struct gnn_model *m);

/* Embedding, pooling, attention and score head (head.c). */
void gnn_head_forward(struct gnn_model *m);
void gnn_head_backward(struct gnn_model *m);

#endif
