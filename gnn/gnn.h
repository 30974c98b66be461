/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gnn: the neural-network engine of Loom's learned scheduling policy.
 *
 * A standalone library (it includes only itself, libc, libm, CBLAS and, for
 * its cuda backend, the CUDA runtime and cuBLAS, so it can be lifted out
 * whole) that scores the schedulable coflows of a batch of
 * job DAGs and learns from policy-gradient signals:
 *
 *   x_v (F features per coflow)
 *    -> h0_v = W_in x_v + b_in                                        (d wide)
 *    -> DAGNN, forward direction: L layers in topological order over
 *       predecessors; reverse direction: its own L layers in reverse
 *       topological order over successors (Thost & Chen, "Directed Acyclic
 *       Graph Neural Networks", ICLR 2021, with a LeakyReLU(0.2) score)
 *    -> e_v = W_o [fwd h_v^1..h_v^L, rev h_v^1..h_v^L]              (E wide)
 *    -> u_v = [e_v, maxpool over v's job of e]                        (D = 2E)
 *       (formed for the schedulable nodes only: nothing else reads it)
 *    -> multi-head scaled dot-product self-attention over the schedulable
 *       nodes' u, with a residual connection (Vaswani et al., "Attention
 *       Is All You Need", NeurIPS 2017)
 *    -> s_i = w2 . tanh(W1 y_i + b1) + b2, one score per schedulable coflow
 *    -> Plackett-Luce ranking distribution over the scores (sample, log-prob,
 *       entropy term, and their gradients w.r.t. the scores)
 * plus backward through all of it, Adam (Kingma & Ba, ICLR 2015) with global
 * gradient-norm clipping, and a checksummed weights file.
 *
 * DAGNN layer l in one direction, for node v with neighbours P(v) (the
 * predecessors forward, the successors in reverse), nodes taken level by level
 * (level of v: 0 when P(v) is empty, else 1 + the largest level in P(v)):
 *   pre_vu  = a_q . h_v^(l-1) + a_k . h_u^(l)         for u in P(v)
 *   alpha_v = softmax over u of LeakyReLU_0.2(pre_vu)
 *   m_v     = sum_u alpha_vu h_u^(l)                 (zero when P(v) is empty)
 *   h_v^(l) = GRUCell(input = h_v^(l-1), hidden = m_v)
 * with the PyTorch GRUCell: r = sig(W_ir h + b_ir + W_hr m + b_hr),
 * z = sig(W_iz h + b_iz + W_hz m + b_hz), n = tanh(W_in h + b_in + r * (W_hn m
 * + b_hn)), h' = (1 - z) * n + z * m. Each direction is its own L-layer stack
 * over the shared h^(0): the reverse pass's h^(l-1) is the reverse
 * direction's own layer l-1 state (h^(0) for l = 1), never the forward one's.
 * Every layer and direction has its own parameters.
 *
 * Evaluation order. Nodes of one level of all jobs are contiguous rows of one
 * matrix, so a work unit (direction, layer l, level k) is one GEMM per weight.
 * Plain mode runs layer by layer (one GEMM of the input weights over all rows
 * of a layer, then one GEMM of the hidden weights per level). Pipelined mode
 * runs wavefronts w = l + k: unit (l, k) needs only (l-1, k) and (l, < k), so
 * every unit of both directions on a wavefront goes into one grouped GEMM
 * call (the backend's gemm_batch). Both give the same result up to rounding.
 * Backward runs the same schedule in reverse over the stored activations.
 *
 * Memory: parameters, gradients and Adam moments live in one block per model;
 * every activation and scratch array of a step lives in a per-model
 * workspace of two parts, one in backend memory and one on the host (what
 * the host builds for a batch: levels, orders, adjacency), each grown (free +
 * allocate once) only when a batch needs more than any earlier one. A
 * forward or backward pass makes no other allocation.
 *
 * Errors: functions return 0 (or a count) or -errno and write a message into
 * a caller-provided struct gnn_err; constructors return NULL, set errno and
 * write the message. Bad input is -EINVAL with a message, never a crash. The
 * library never prints and keeps no global mutable state; a model is not
 * thread-safe (use one per thread).
 *
 * Backends: a const struct gnn_backend_class looked up by name ("cpu",
 * "naive", and "cuda" in builds where nvcc was found). Every GEMM goes
 * through its gemm_batch; every element-wise operation (message passing, GRU
 * gates, pooling, softmax, tanh, Adam, gathers and scatters) through its
 * kernel table (struct gnn_kernels, gnn/gnn_impl.h), whose CPU version is
 * gnn/kernels.c and CUDA version gnn/backend_cuda.cu. Activations live in
 * backend memory (device memory on CUDA), allocated once and grown only when
 * a batch needs more; the host builds each batch's level orders and
 * adjacency and copies them over. The parameter block (parameters,
 * gradients, Adam moments) is in memory both sides address (CUDA managed
 * memory, a few hundred KiB), so gnn_param_get(), save and load read and
 * write it directly. Work on a backend runs in order on one stream; every
 * public function returns with it finished.
 *
 * Asking for "cuda" where it cannot run (no CUDA in this build, no driver,
 * no device: cudaGetDeviceCount's error) gives a "cpu" model instead;
 * gnn_model_fallback() says why, for the caller to log once.
 */
#ifndef LOOM_GNN_GNN_H
#define LOOM_GNN_GNN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GNN_ERR_MAX 256

/*
 * Error message of the last failing call; msg is "" when none was written.
 * A private copy of common/errors.h's struct loom_err (gnn_errf() in
 * gnn_impl.h is its loom_err_set(): NULL-safe, returns -code): gnn/ may not
 * include common/ (docs/architecture.md, layering), so the shape is the same
 * and a caller copies msg into its loom_err in one line (loom_err_from(), or
 * loom_err_set() with its own context).
 */
struct gnn_err {
	char msg[GNN_ERR_MAX];
};

/* Limits checked by gnn_model_new() and the weights-file loader. */
#define GNN_MAX_FEATURES 4096
#define GNN_MAX_WIDTH    4096
#define GNN_MAX_LAYERS   16
#define GNN_MAX_HEADS    64
#define GNN_MAX_NODES    (1u << 24)
#define GNN_MAX_EDGES    (1u << 26)

/* Model shape and evaluation options. */
struct gnn_config {
	uint32_t nfeatures;  /* F: width of a node's feature vector (no default: set it) */
	uint32_t hidden;     /* d: DAGNN state width, default 32 */
	uint32_t layers;     /* L: DAGNN layers per direction, default 2 */
	uint32_t emb;        /* E: embedding width (e_v), default 32; D = 2E after pooling */
	uint32_t heads;      /* attention heads, default 2; must divide D */
	uint32_t mlp_hidden; /* width of the score head's hidden layer, default 32 */
	bool pipelined;      /* wavefront-pipelined DAGNN (default) or plain layer by layer */
	/*
	 * Residual scoring. prior is the caller's tag of a heuristic whose
	 * scores the network's are added to (0: none, the default; at most
	 * GNN_MAX_PRIOR); prior_scale is the caller's weight of that prior
	 * (finite, >= 0; a model without a prior keeps 0). The library
	 * computes no prior: it keeps both in the model and its weights file,
	 * and a new model with prior != 0 starts with the score head's last
	 * layer (head.w2, head.b2) at zero, so that its untrained scores are
	 * all 0 and the caller's prior alone decides.
	 */
	uint32_t prior;
	float prior_scale;
};

#define GNN_MAX_PRIOR 255u

/* Returns the defaults above with nfeatures = 8. */
struct gnn_config gnn_config_default(void);

/* ---- backends --------------------------------------------------------------------------- */

struct gnn_kernels;

/*
 * One row-major GEMM: C (m x n) = alpha * op(A) * op(B) + beta * C, where
 * op(A) is m x k (A is k x m when trans_a) and op(B) is k x n (B is n x k
 * when trans_b); lda, ldb, ldc are row strides in floats. beta == 0 means C
 * is written without being read.
 */
struct gnn_gemm {
	bool trans_a, trans_b;
	uint32_t m, n, k;
	float alpha, beta;
	const float *a;
	uint32_t lda;
	const float *b;
	uint32_t ldb;
	float *c;
	uint32_t ldc;
};

/*
 * A compute backend. ctx is what init returned. The problems of one
 * gemm_batch call are independent (no C overlaps another's A, B or C) and
 * may run concurrently. Backend work (GEMMs, kernels, copies) runs in the
 * order it is issued; sync waits for all of it. The library asks for few,
 * large blocks of memory.
 */
struct gnn_backend_class {
	const char *name;
	/* true when backend memory is host memory (no copies needed) */
	bool host_memory;
	/* Creates the backend's context (NULL is a valid context). 0 or -errno. */
	int (*init)(void **ret_ctx, struct gnn_err *err);
	/* Frees the context. */
	void (*fini)(void *ctx);
	/* Returns one-line information about the backend (BLAS used, threads, device). */
	const char *(*info)(void *ctx);
	/* Returns bytes of zeroed, 64-byte aligned backend memory, or NULL. */
	void *(*mem_alloc)(void *ctx, size_t bytes);
	void (*mem_free)(void *ctx, void *p);
	/* As mem_alloc, memory the host may also read and write between syncs. */
	void *(*mem_alloc_shared)(void *ctx, size_t bytes);
	void (*mem_free_shared)(void *ctx, void *p);
	/* Copy host -> backend memory (in order with other work). */
	void (*copy_to_dev)(void *ctx, void *dst, const void *src, size_t bytes);
	/* Copy backend -> host memory; returns when dst holds the data. */
	void (*copy_to_host)(void *ctx, void *dst, const void *src, size_t bytes);
	/*
	 * Waits until all issued work is done and visible to the host. Returns
	 * 0, or -EIO with a message when any of it failed (a kernel launch, a
	 * GEMM, a copy).
	 */
	int (*sync)(void *ctx, struct gnn_err *err);
	/* Issues count independent GEMMs. */
	void (*gemm_batch)(void *ctx, const struct gnn_gemm *g, size_t count);
	/* Element-wise ops (gnn/gnn_impl.h); the CPU backends share gnn_kernels_ref. */
	const struct gnn_kernels *kernels;
};

/*
 * Returns the backend called name ("cpu": CBLAS sgemm, single-threaded;
 * "naive": reference triple-loop GEMM; "cuda": cuBLAS + CUDA kernels, in
 * builds with CUDA). Note: with OpenBLAS, creating a "cpu" model calls
 * openblas_set_num_threads(1), which is process-wide (OpenBLAS keeps one
 * setting); a program that wants BLAS threads elsewhere must set them again.
 * NULL + errno ENOENT with a message listing the valid names for an unknown
 * name. "cuda" lives in a module of its own that the first lookup of "cuda"
 * in the process loads (once, thread-safe; see gnn_cuda_probe() for where
 * it is looked for); no other name loads anything, so a program that never
 * asks for "cuda" maps none of CUDA. For "cuda": ENODEV when this build has
 * no CUDA backend or the module cannot be found or loaded, EIO when the file
 * found is not a cuda module of this build, each with a message naming the
 * file. The class is static; do not free it. Finding "cuda" does not mean a
 * device is there: that is known when a model starts it
 * (gnn_model_fallback()).
 */
const struct gnn_backend_class *gnn_backend_find(const char *name, struct gnn_err *err);

/* Returns the comma-separated names of the backends of this build ("cpu, naive[, cuda]"). */
const char *gnn_backend_names(void);

/*
 * Probes what the "cuda" backend needs, without making a model. Returns 0
 * when this build has the backend and the CUDA runtime counts at least one
 * device; -ENOSYS when this build has no CUDA backend; -ENODEV when there is
 * no device or no driver (cudaErrorNoDevice, cudaErrorInsufficientDriver, or
 * a count of zero), or when the cuda module cannot be found or loaded (a
 * missing cuBLAS or CUDA runtime is that); -EIO for any other error of the
 * runtime (a broken installation, a driver that does not match, ...) or a
 * file that is not a cuda module of this build. err says which, with the
 * runtime's message and code, or the module's path and dlerror(). gnn_model_new()
 * falls back to "cpu" on every one of these; a caller that must tell "no
 * GPU here" from "a GPU that does not work" (a test) asks this first.
 *
 * The module (libloom_gnn_cuda.so, which links the CUDA runtime and
 * cuBLAS) is loaded by the first call of this or of gnn_backend_find("cuda")
 * in the process, with dlopen(RTLD_NOW | RTLD_LOCAL), from the file named
 * by the environment variable LOOM_GNN_CUDA_MODULE when it is set and not
 * empty (that file only), else from the first that exists of its path in
 * the build tree and its installed path, <libdir>/loom/. The outcome is
 * kept for the life of the process.
 */
int gnn_cuda_probe(struct gnn_err *err);

/* ---- model ------------------------------------------------------------------------------ */

struct gnn_model;

/*
 * Returns a new model of shape cfg on the backend called backend_name (NULL:
 * "cpu"; "cuda" falls back to "cpu" where it cannot start, see
 * gnn_model_fallback()), its parameters initialised from seed (uniform +-1/sqrt(fan_in),
 * biases 0, the score head's last layer scaled by 0.01), gradients and Adam
 * state zero. NULL + errno (EINVAL bad cfg, ENOENT/ENODEV backend, ENOMEM)
 * with a message on error. Free it with gnn_model_free().
 */
struct gnn_model *gnn_model_new(const struct gnn_config *cfg, const char *backend_name,
				uint64_t seed, struct gnn_err *err);

/* Frees m and everything it owns (NULL is fine); returns NULL. */
struct gnn_model *gnn_model_free(struct gnn_model *m);

/* Returns the model's configuration (owned by the model). */
const struct gnn_config *gnn_model_config(const struct gnn_model *m);

/* Selects pipelined (true) or plain (false) DAGNN evaluation for later passes. */
void gnn_model_set_pipelined(struct gnn_model *m, bool pipelined);

/* Returns the backend's name and information, e.g. "cpu: OpenBLAS cblas_sgemm, 1 thread". */
const char *gnn_model_backend_info(const struct gnn_model *m);

/* Returns the name of the backend the model runs on ("cpu", "naive", "cuda"). */
const char *gnn_model_backend(const struct gnn_model *m);

/*
 * Returns why the model does not run on the backend that was asked for
 * (e.g. "cuda: no usable device: cudaGetDeviceCount: CUDA driver version is
 * insufficient for CUDA runtime version (35)"), or NULL when it does. Owned by
 * the model.
 */
const char *gnn_model_fallback(const struct gnn_model *m);

/* Returns the number of trainable scalars. */
size_t gnn_nparams(const struct gnn_model *m);

/* One parameter tensor: a rows x cols row-major block of value and of grad. */
struct gnn_param {
	const char *name; /* "in.W", "fwd.1.Wi", "rev.2.aq", "emb.Wo", "att.Wqkv", "head.w2", ... */
	float *value;     /* owned by the model; writable (e.g. by tests or a custom init) */
	float *grad;      /* accumulated gradient, same shape */
	uint32_t rows, cols;
};

/* Returns the number of parameter tensors. */
uint32_t gnn_param_count(const struct gnn_model *m);

/* Writes tensor i (< gnn_param_count) into ret; 0, or -EINVAL when out of range. */
int gnn_param_get(struct gnn_model *m, uint32_t i, struct gnn_param *ret);

/* ---- forward / backward ----------------------------------------------------------------- */

/*
 * A batch of job DAGs. Node v is a coflow; job j owns nodes [job_start[j],
 * job_start[j+1]) (job_start[0] == 0, non-decreasing, job_start[njobs] ==
 * nnodes; empty jobs are allowed). Edge i is edges[2i] -> edges[2i+1]: the
 * first node is a predecessor (parent) of the second; both must be in the
 * same job, the graph must be acyclic; parallel edges count twice. All
 * pointers are borrowed for the duration of the call.
 */
struct gnn_batch {
	uint32_t nnodes;
	uint32_t nfeatures;    /* must equal the model's F */
	const float *features; /* nnodes x nfeatures, row-major */
	uint32_t njobs;
	const uint32_t *job_start; /* njobs + 1 entries */
	uint32_t nedges;
	const uint32_t *edges; /* 2 * nedges entries */
};

/*
 * Runs the model on batch b and writes one score per schedulable node:
 * ret_scores[i] scores node sched[i] (nsched distinct node indices; nsched may
 * be 0). Higher scores go first. Stores the activations that gnn_backward()
 * needs (overwriting the previous forward's). Returns 0, or -EINVAL (bad
 * batch: width, ranges, cross-job edge, cycle, duplicate or out-of-range
 * schedulable index), -ENOMEM, with a message.
 */
int gnn_forward(struct gnn_model *m, const struct gnn_batch *b, const uint32_t *sched,
		uint32_t nsched, float *ret_scores, struct gnn_err *err);

/*
 * Back-propagates dscores (d loss / d score, nsched entries, same order as
 * the last gnn_forward's sched) and adds the parameter gradients to the
 * model's gradient. Returns 0, or -EINVAL when there was no successful
 * forward or nsched differs from its.
 */
int gnn_backward(struct gnn_model *m, const float *dscores, uint32_t nsched, struct gnn_err *err);

/* Sets every gradient to zero. */
void gnn_zero_grad(struct gnn_model *m);

/* Activations of the last forward that gnn_copy_activations() can return. */
enum gnn_activation {
	GNN_ACT_DAGNN, /* nnodes x 2*L*d: [fwd h^1..h^L, rev h^1..h^L] per node */
	GNN_ACT_NODE,  /* nnodes x D: [e_v, job max-pool] per node */
	GNN_ACT_ATTN,  /* nsched x D: attention output (with the residual) */
};

/*
 * Copies activation `which` of the last forward, in node (or sched) order,
 * into out (room for cap floats) and its shape into ret_rows/ret_cols.
 * Returns 0, -EINVAL without a forward, -ENOSPC when cap is too small.
 */
int gnn_copy_activations(const struct gnn_model *m, enum gnn_activation which, float *out,
			 size_t cap, uint32_t *ret_rows, uint32_t *ret_cols, struct gnn_err *err);

/* ---- training --------------------------------------------------------------------------- */

struct gnn_adam {
	float lr;        /* learning rate, e.g. 1e-3 */
	float beta1;     /* 0.9 */
	float beta2;     /* 0.999 */
	float eps;       /* 1e-8 */
	float clip_norm; /* scale the gradient down to this global L2 norm when above; 0: off */
};

/* Returns {1e-3, 0.9, 0.999, 1e-8, 1.0}. */
struct gnn_adam gnn_adam_default(void);

/*
 * One Adam step (bias-corrected) over all parameters from the accumulated
 * gradient, after clipping it to opt->clip_norm. The gradient is left as it
 * was (call gnn_zero_grad before the next accumulation). Writes the global
 * gradient norm before clipping into *ret_norm when not NULL. Returns 0, or
 * -EINVAL for a bad option or a non-finite gradient (parameters untouched).
 */
int gnn_adam_step(struct gnn_model *m, const struct gnn_adam *opt, double *ret_norm,
		  struct gnn_err *err);

/*
 * The optimiser's state, for checkpoints: the first and second moments (n =
 * gnn_nparams floats each, in parameter order, owned by the model and
 * writable; host-accessible after the last call returned) and the step count.
 */
struct gnn_adam_state {
	float *mom1, *mom2;
	uint64_t *step;
	size_t n;
};

/* Fills ret with m's optimiser state. */
void gnn_adam_state(struct gnn_model *m, struct gnn_adam_state *ret);

/* ---- Plackett-Luce ranking -------------------------------------------------------------- */

/* xoshiro256** state; the caller owns it (policies keep it in their state). */
struct gnn_rng {
	uint64_t s[4];
};

/* Seeds rng from seed with splitmix64. */
void gnn_rng_seed(struct gnn_rng *rng, uint64_t seed);

/* Returns the next 64 random bits. */
uint64_t gnn_rng_next(struct gnn_rng *rng);

/* Returns a double uniform in (0, 1) (never 0 or 1). */
double gnn_rng_uniform(struct gnn_rng *rng);

/*
 * Samples a ranking from the Plackett-Luce distribution with log-weights
 * scores (n entries): sorts scores[i] + Gumbel noise in decreasing order
 * (ties by index), which is an exact PL sample. work holds n floats of
 * scratch. Writes the permutation (ret_perm[0] goes first) and returns 0, or
 * -EINVAL for n == 0 with NULL pointers or a non-finite score.
 */
int gnn_pl_sample(const float *scores, uint32_t n, struct gnn_rng *rng, float *work,
		  uint32_t *ret_perm, struct gnn_err *err);

/*
 * Writes log P(perm) = sum_k [ s_perm(k) - logsumexp_{j >= k} s_perm(j) ]
 * into *ret_logp (computed in double). When ret_grad is not NULL writes d logP /
 * d scores[i] = 1 - sum_{k <= pos(i)} softmax_k(i) there (n entries), where
 * softmax_k is over perm[k..n). O(n), no allocation. Returns 0, or -EINVAL
 * when perm has an entry >= n or (checked only when ret_grad is given, as it
 * is the scratch for it) a repeated entry; on error *ret_logp is untouched
 * and ret_grad's contents are unspecified.
 */
int gnn_pl_logprob(const float *scores, uint32_t n, const uint32_t *perm, double *ret_logp,
		   float *ret_grad, struct gnn_err *err);

/*
 * As gnn_pl_logprob, for the first `top` places of perm only (the top-k
 * Plackett-Luce likelihood): log P = sum_{k < top} [ s_perm(k) -
 * logsumexp_{j >= k} s_perm(j) ], gradient d logP / d s_i = [pos(i) < top]
 * - sum_{k <= min(pos(i), top - 1)} softmax_k(i). top 0 or >= n is the whole
 * ranking. A teacher whose order matters at its head is imitated with it
 * without the loss being spent on its tail.
 */
int gnn_pl_logprob_top(const float *scores, uint32_t n, const uint32_t *perm, uint32_t top,
		       double *ret_logp, float *ret_grad, struct gnn_err *err);

/*
 * Entropy terms for regularisation (the exact entropy of a PL distribution
 * sums over n! rankings):
 *  GNN_PL_ENTROPY_FIRST: entropy of the first choice, H(softmax(s)) =
 *    -sum p_i log p_i, gradient -p_i (log p_i + H). perm is not used.
 *  GNN_PL_ENTROPY_SEQ: sum over the steps k of perm of the entropy of the
 *    k-th choice given the earlier ones, H_k = H(softmax(s over perm[k..])).
 *    When perm is a sample of PL(s) this is an unbiased estimate of the
 *    entropy of the whole ranking (chain rule of entropy); its gradient is
 *    the pathwise one, sum_k dH_k/ds with perm held fixed (the per-step
 *    entropy bonus of RL, without the score-function term). O(n).
 */
enum gnn_pl_entropy_kind {
	GNN_PL_ENTROPY_FIRST,
	GNN_PL_ENTROPY_SEQ,
};

/*
 * Computes the entropy term `kind` of scores (n entries) into *ret_h and, when
 * ret_grad is not NULL, its gradient w.r.t. the scores. perm (a permutation of
 * 0..n-1) is needed for GNN_PL_ENTROPY_SEQ, and so is work (n floats of
 * scratch) when ret_grad is given; both may be NULL for GNN_PL_ENTROPY_FIRST.
 * Returns 0 or -EINVAL (as gnn_pl_logprob for perm).
 */
int gnn_pl_entropy(const float *scores, uint32_t n, const uint32_t *perm,
		   enum gnn_pl_entropy_kind kind, float *work, double *ret_h, float *ret_grad,
		   struct gnn_err *err);

/* ---- weights file ----------------------------------------------------------------------- */

/*
 * Weights file, little-endian:
 *   "LOOMGNN\0"  8-byte magic
 *   u32 version (1 or 2), u32 F, d, L, E, heads, mlp_hidden
 *   u64 number of floats
 *   version 2 only: u32 prior, f32 prior_scale (struct gnn_config)
 *   then the floats (IEEE-754 binary32), in the order of gnn_param_get()
 *   u64 FNV-1a 64 checksum of every byte before it
 * Only the parameters and the prior are stored (not gradients, Adam state or
 * options). A model without a prior is written as version 1, so files of
 * earlier builds and of this one are the same; both versions are read.
 */
#define GNN_WEIGHTS_MAGIC   "LOOMGNN"
#define GNN_WEIGHTS_VERSION 2u

/* Writes m's parameters to path (atomically: a temporary file renamed). 0 or -errno. */
int gnn_save(const struct gnn_model *m, const char *path, struct gnn_err *err);

/*
 * Loads the weights file at path into m, whose shape must be the file's.
 * Returns 0, -errno for I/O errors, -EINVAL for a bad file (truncated, bad
 * magic, version, checksum or size) or a shape other than m's; m is
 * unchanged on error. Messages start with path.
 */
int gnn_load_into(struct gnn_model *m, const char *path, struct gnn_err *err);

/*
 * Returns a new model with the shape and parameters of the weights file at
 * path, on backend_name (NULL: "cpu"); options as gnn_config_default().
 * NULL + errno with a message on error (as gnn_load_into).
 */
struct gnn_model *gnn_model_load(const char *path, const char *backend_name, struct gnn_err *err);

/*
 * As gnn_model_load, from the len bytes at buf (name is used in messages).
 * Every input is either loaded or rejected; none is trusted.
 */
struct gnn_model *gnn_model_load_mem(const void *buf, size_t len, const char *name,
				     const char *backend_name, struct gnn_err *err);

#endif
