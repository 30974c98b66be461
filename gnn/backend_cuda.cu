/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "cuda" backend of gnn/: every GEMM through cuBLAS (cublasSgemm, default
 * math mode, so no TF32 and results stay comparable with the CPU), and every
 * element-wise operation of struct gnn_kernels (gnn_impl.h) as a CUDA kernel,
 * each the parallel form of the reference loop in kernels.c. Tensors live in
 * managed memory (cudaMallocManaged), allocated once per model and grown
 * with the batch, so the host-side batch preparation of dagnn.c and the
 * public API's reads of scores and parameters work unchanged; every op
 * synchronises before it returns, as the interface promises results visible
 * to the host.
 *
 * Parallel forms: one thread per output element where outputs are
 * independent (bias, GRU gates, gathers, Adam); one thread per row where a
 * row is a reduction (DAGNN message over a node's predecessors, softmax);
 * atomicAdd where several rows add into one place (scatter_add, the
 * message backward into shared parents and the score vectors a_q, a_k,
 * pooling backward, column sums, the squared-norm reduction in double).
 *
 * Built only when nvcc is found (meson option 'cuda'); at run time init
 * fails with ENODEV and the driver's reason when cudaGetDeviceCount reports
 * an error or no device, and the library falls back to "cpu".
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

extern "C" {
#include "gnn/gnn_impl.h"
}

#define THREADS 256

struct cuda_ctx {
	cublasHandle_t blas;
	int device;
	char info[160];
};

static unsigned blocks_for(size_t n)
{
	size_t b = (n + THREADS - 1) / THREADS;

	return (unsigned)(b ? b : 1);
}

/* Waits for the device; the interface returns results visible to the host. */
static void sync(void)
{
	(void)cudaDeviceSynchronize();
}

/* ---- element-wise kernels ------------------------------------------------- */

__global__ void kz_zero(float *x, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] = 0;
}

static void c_zero(float *x, size_t n)
{
	if (!n)
		return;
	kz_zero<<<blocks_for(n), THREADS>>>(x, n);
	sync();
}

__global__ void kz_add_bias(float *y, uint32_t ld, const float *b, uint32_t rows, uint32_t cols)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < (size_t)rows * cols)
		y[(i / cols) * ld + i % cols] += b[i % cols];
}

static void c_add_bias(float *y, uint32_t ld, const float *b, uint32_t rows, uint32_t cols)
{
	size_t n = (size_t)rows * cols;

	if (!n)
		return;
	kz_add_bias<<<blocks_for(n), THREADS>>>(y, ld, b, rows, cols);
	sync();
}

__global__ void kz_colsum_add(float *db, const float *dy, uint32_t ld, uint32_t rows,
			      uint32_t cols)
{
	uint32_t c = blockIdx.x * blockDim.x + threadIdx.x;
	float s = 0;

	if (c >= cols)
		return;
	for (uint32_t r = 0; r < rows; r++)
		s += dy[(size_t)r * ld + c];
	db[c] += s;
}

static void c_colsum_add(float *db, const float *dy, uint32_t ld, uint32_t rows, uint32_t cols)
{
	if (!rows || !cols)
		return;
	kz_colsum_add<<<blocks_for(cols), THREADS>>>(db, dy, ld, rows, cols);
	sync();
}

__global__ void kz_gather(float *dst, uint32_t dst_ld, const float *src, uint32_t src_ld,
			  const int32_t *idx, uint32_t rows, uint32_t cols)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t r, c;

	if (i >= (size_t)rows * cols)
		return;
	r = i / cols;
	c = i % cols;
	dst[r * dst_ld + c] = src[(idx ? (size_t)idx[r] : r) * src_ld + c];
}

static void c_gather(float *dst, uint32_t dst_ld, const float *src, uint32_t src_ld,
		     const int32_t *idx, uint32_t rows, uint32_t cols)
{
	size_t n = (size_t)rows * cols;

	if (!n)
		return;
	kz_gather<<<blocks_for(n), THREADS>>>(dst, dst_ld, src, src_ld, idx, rows, cols);
	sync();
}

__global__ void kz_scatter_add(float *dst, uint32_t dst_ld, const float *src, uint32_t src_ld,
			       const int32_t *idx, uint32_t rows, uint32_t cols)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t r, c;

	if (i >= (size_t)rows * cols)
		return;
	r = i / cols;
	c = i % cols;
	atomicAdd(&dst[(idx ? (size_t)idx[r] : r) * dst_ld + c], src[r * src_ld + c]);
}

static void c_scatter_add(float *dst, uint32_t dst_ld, const float *src, uint32_t src_ld,
			  const int32_t *idx, uint32_t rows, uint32_t cols)
{
	size_t n = (size_t)rows * cols;

	if (!n)
		return;
	kz_scatter_add<<<blocks_for(n), THREADS>>>(dst, dst_ld, src, src_ld, idx, rows, cols);
	sync();
}

__device__ float dev_dot(const float *a, const float *b, uint32_t n)
{
	float s = 0;

	for (uint32_t i = 0; i < n; i++)
		s += a[i] * b[i];
	return s;
}

/* One thread per row p of [r0, r1): softmax over its predecessors, then the message. */
__global__ void kz_msg_fwd(uint32_t r0, uint32_t r1, uint32_t d, const int32_t *ptr,
			   const int32_t *adj, const float *hprev, const float *hcur,
			   const float *aq, const float *ak, float *pre, float *alpha, float *m)
{
	uint32_t p = r0 + blockIdx.x * blockDim.x + threadIdx.x;
	int32_t e0, e1;
	float q, mx = -INFINITY, sum = 0;
	float *mp;

	if (p >= r1)
		return;
	e0 = ptr[p];
	e1 = ptr[p + 1];
	mp = m + (size_t)p * d;
	for (uint32_t c = 0; c < d; c++)
		mp[c] = 0;
	if (e0 == e1)
		return;
	q = dev_dot(aq, hprev + (size_t)p * d, d);
	for (int32_t e = e0; e < e1; e++) {
		float s = q + dev_dot(ak, hcur + (size_t)adj[e] * d, d);

		pre[e] = s;
		s = s > 0 ? s : GNN_LEAKY_SLOPE * s;
		alpha[e] = s;
		mx = fmaxf(mx, s);
	}
	for (int32_t e = e0; e < e1; e++) {
		alpha[e] = expf(alpha[e] - mx);
		sum += alpha[e];
	}
	for (int32_t e = e0; e < e1; e++) {
		const float *hu = hcur + (size_t)adj[e] * d;

		alpha[e] /= sum;
		for (uint32_t c = 0; c < d; c++)
			mp[c] += alpha[e] * hu[c];
	}
}

static void c_msg_fwd(uint32_t r0, uint32_t r1, uint32_t d, const int32_t *ptr, const int32_t *adj,
		      const float *hprev, const float *hcur, const float *aq, const float *ak,
		      float *pre, float *alpha, float *m)
{
	if (r1 <= r0)
		return;
	kz_msg_fwd<<<blocks_for(r1 - r0), THREADS>>>(r0, r1, d, ptr, adj, hprev, hcur, aq, ak, pre,
						      alpha, m);
	sync();
}

/* One thread per row; parents shared by several rows, a_q and a_k take atomic adds. */
__global__ void kz_msg_bwd(uint32_t r0, uint32_t r1, uint32_t d, const int32_t *ptr,
			   const int32_t *adj, const float *hprev, const float *hcur,
			   const float *aq, const float *ak, const float *pre, const float *alpha,
			   const float *dm, float *ealpha, float *dhprev, float *dhcur, float *daq,
			   float *dak)
{
	uint32_t p = r0 + blockIdx.x * blockDim.x + threadIdx.x;
	int32_t e0, e1;
	const float *dmp;
	float dq = 0, avg = 0;

	if (p >= r1)
		return;
	e0 = ptr[p];
	e1 = ptr[p + 1];
	if (e0 == e1)
		return;
	dmp = dm + (size_t)p * d;
	for (int32_t e = e0; e < e1; e++) {
		ealpha[e] = dev_dot(dmp, hcur + (size_t)adj[e] * d, d);
		avg += alpha[e] * ealpha[e];
	}
	for (int32_t e = e0; e < e1; e++) {
		const float *hu = hcur + (size_t)adj[e] * d;
		float *dhu = dhcur + (size_t)adj[e] * d;
		float ds = alpha[e] * (ealpha[e] - avg);
		float dpre = pre[e] > 0 ? ds : GNN_LEAKY_SLOPE * ds;

		for (uint32_t c = 0; c < d; c++) {
			atomicAdd(&dhu[c], alpha[e] * dmp[c] + dpre * ak[c]);
			atomicAdd(&dak[c], dpre * hu[c]);
		}
		dq += dpre;
	}
	for (uint32_t c = 0; c < d; c++) {
		atomicAdd(&daq[c], dq * hprev[(size_t)p * d + c]);
		dhprev[(size_t)p * d + c] += dq * aq[c];
	}
}

static void c_msg_bwd(uint32_t r0, uint32_t r1, uint32_t d, const int32_t *ptr, const int32_t *adj,
		      const float *hprev, const float *hcur, const float *aq, const float *ak,
		      const float *pre, const float *alpha, const float *dm, float *ealpha,
		      float *dhprev, float *dhcur, float *daq, float *dak)
{
	if (r1 <= r0)
		return;
	kz_msg_bwd<<<blocks_for(r1 - r0), THREADS>>>(r0, r1, d, ptr, adj, hprev, hcur, aq, ak, pre,
						      alpha, dm, ealpha, dhprev, dhcur, daq, dak);
	sync();
}

__device__ float dev_sigm(float x)
{
	return 1.0f / (1.0f + expf(-x));
}

/* One thread per (row, unit c): adds the biases of its three gates, then the cell. */
__global__ void kz_gru_fwd(uint32_t rows, uint32_t d, float *gi, float *gh, const float *bi,
			   const float *bh, const float *m, float *gates, float *h)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t r, c;
	float *ir, *hr, *g;
	float rr, z, n;

	if (i >= (size_t)rows * d)
		return;
	r = i / d;
	c = i % d;
	ir = gi + r * 3 * d;
	hr = gh + r * 3 * d;
	g = gates + r * 3 * d;
	for (uint32_t k = 0; k < 3; k++) {
		ir[k * d + c] += bi[k * d + c];
		hr[k * d + c] += bh[k * d + c];
	}
	rr = dev_sigm(ir[c] + hr[c]);
	z = dev_sigm(ir[d + c] + hr[d + c]);
	n = tanhf(ir[2 * d + c] + rr * hr[2 * d + c]);
	g[c] = rr;
	g[d + c] = z;
	g[2 * d + c] = n;
	h[r * d + c] = (1 - z) * n + z * m[r * d + c];
}

static void c_gru_fwd(uint32_t rows, uint32_t d, float *gi, float *gh, const float *bi,
		      const float *bh, const float *m, float *gates, float *h)
{
	size_t n = (size_t)rows * d;

	if (!n)
		return;
	kz_gru_fwd<<<blocks_for(n), THREADS>>>(rows, d, gi, gh, bi, bh, m, gates, h);
	sync();
}

__global__ void kz_gru_bwd(uint32_t rows, uint32_t d, const float *dh, const float *gates,
			   const float *gh, const float *m, float *dgi, float *dgh, float *dm)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t r, c;
	const float *g, *hh;
	float *di, *dhh;
	float rr, z, n, dn, dz, dpn, dpr, dpz;

	if (i >= (size_t)rows * d)
		return;
	r = i / d;
	c = i % d;
	g = gates + r * 3 * d;
	hh = gh + r * 3 * d;
	di = dgi + r * 3 * d;
	dhh = dgh + r * 3 * d;
	rr = g[c];
	z = g[d + c];
	n = g[2 * d + c];
	dn = dh[i] * (1 - z);
	dz = dh[i] * (m[i] - n);
	dpn = dn * (1 - n * n);
	dpr = dpn * hh[2 * d + c] * rr * (1 - rr);
	dpz = dz * z * (1 - z);
	di[c] = dpr;
	di[d + c] = dpz;
	di[2 * d + c] = dpn;
	dhh[c] = dpr;
	dhh[d + c] = dpz;
	dhh[2 * d + c] = dpn * rr;
	dm[i] = dh[i] * z;
}

static void c_gru_bwd(uint32_t rows, uint32_t d, const float *dh, const float *gates,
		      const float *gh, const float *m, float *dgi, float *dgh, float *dm)
{
	size_t n = (size_t)rows * d;

	if (!n)
		return;
	kz_gru_bwd<<<blocks_for(n), THREADS>>>(rows, d, dh, gates, gh, m, dgi, dgh, dm);
	sync();
}

/* One thread per (job, column). */
__global__ void kz_pool_fwd(const float *e, uint32_t E, const uint32_t *job_start, uint32_t njobs,
			    float *pool, int32_t *argmax)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t j, c;
	float best = 0;
	int32_t arg = -1;

	if (i >= (size_t)njobs * E)
		return;
	j = i / E;
	c = i % E;
	for (uint32_t v = job_start[j]; v < job_start[j + 1]; v++)
		if (arg < 0 || e[(size_t)v * E + c] > best) {
			best = e[(size_t)v * E + c];
			arg = (int32_t)v;
		}
	pool[i] = best;
	argmax[i] = arg;
}

static void c_pool_fwd(const float *e, uint32_t E, const uint32_t *job_start, uint32_t njobs,
		       float *pool, int32_t *argmax)
{
	size_t n = (size_t)njobs * E;

	if (!n)
		return;
	kz_pool_fwd<<<blocks_for(n), THREADS>>>(e, E, job_start, njobs, pool, argmax);
	sync();
}

/* Copies the node's own half of du for nodes [v0, v0 + nnodes); one thread per (node, column). */
__global__ void kz_pool_bwd_copy(const float *du, uint32_t E, size_t v0, size_t nnodes, float *de)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t v = v0 + i / E;

	if (i < nnodes * E)
		de[v * E + i % E] = du[v * 2 * E + i % E];
}

/* Routes the pooled half to each job's argmax node; one thread per (job, column). */
__global__ void kz_pool_bwd_route(const float *du, uint32_t E, const uint32_t *job_start,
				  uint32_t njobs, const int32_t *argmax, float *de)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t j, c;
	float s = 0;

	if (i >= (size_t)njobs * E)
		return;
	j = i / E;
	c = i % E;
	if (argmax[i] < 0)
		return;
	for (uint32_t v = job_start[j]; v < job_start[j + 1]; v++)
		s += du[(size_t)v * 2 * E + E + c];
	atomicAdd(&de[(size_t)argmax[i] * E + c], s);
}

static void c_pool_bwd(const float *du, uint32_t E, const uint32_t *job_start, uint32_t njobs,
		       const int32_t *argmax, float *de)
{
	size_t nnodes, n;

	if (!njobs || !E)
		return;
	sync(); /* job_start is read on the host below */
	nnodes = job_start[njobs] - job_start[0];
	n = nnodes * E;
	if (n)
		kz_pool_bwd_copy<<<blocks_for(n), THREADS>>>(du, E, job_start[0], nnodes, de);
	kz_pool_bwd_route<<<blocks_for((size_t)njobs * E), THREADS>>>(du, E, job_start, njobs,
								       argmax, de);
	sync();
}

/* One thread per row. */
__global__ void kz_softmax_fwd(float *a, uint32_t rows, uint32_t cols, float scale)
{
	uint32_t r = blockIdx.x * blockDim.x + threadIdx.x;
	float *x, mx = -INFINITY, sum = 0;

	if (r >= rows)
		return;
	x = a + (size_t)r * cols;
	for (uint32_t c = 0; c < cols; c++) {
		x[c] *= scale;
		mx = fmaxf(mx, x[c]);
	}
	for (uint32_t c = 0; c < cols; c++) {
		x[c] = expf(x[c] - mx);
		sum += x[c];
	}
	for (uint32_t c = 0; c < cols; c++)
		x[c] /= sum;
}

static void c_softmax_fwd(float *a, uint32_t rows, uint32_t cols, float scale)
{
	if (!rows || !cols)
		return;
	kz_softmax_fwd<<<blocks_for(rows), THREADS>>>(a, rows, cols, scale);
	sync();
}

__global__ void kz_softmax_bwd(float *da, const float *a, uint32_t rows, uint32_t cols,
			       float scale)
{
	uint32_t r = blockIdx.x * blockDim.x + threadIdx.x;
	float *g;
	const float *x;
	float dotv = 0;

	if (r >= rows)
		return;
	g = da + (size_t)r * cols;
	x = a + (size_t)r * cols;
	for (uint32_t c = 0; c < cols; c++)
		dotv += g[c] * x[c];
	for (uint32_t c = 0; c < cols; c++)
		g[c] = scale * x[c] * (g[c] - dotv);
}

static void c_softmax_bwd(float *da, const float *a, uint32_t rows, uint32_t cols, float scale)
{
	if (!rows || !cols)
		return;
	kz_softmax_bwd<<<blocks_for(rows), THREADS>>>(da, a, rows, cols, scale);
	sync();
}

__global__ void kz_tanh_bias_fwd(float *y, const float *b, uint32_t rows, uint32_t cols)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < (size_t)rows * cols)
		y[i] = tanhf(y[i] + b[i % cols]);
}

static void c_tanh_bias_fwd(float *y, const float *b, uint32_t rows, uint32_t cols)
{
	size_t n = (size_t)rows * cols;

	if (!n)
		return;
	kz_tanh_bias_fwd<<<blocks_for(n), THREADS>>>(y, b, rows, cols);
	sync();
}

__global__ void kz_tanh_bwd(float *dy, const float *y, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		dy[i] *= 1 - y[i] * y[i];
}

static void c_tanh_bwd(float *dy, const float *y, size_t n)
{
	if (!n)
		return;
	kz_tanh_bwd<<<blocks_for(n), THREADS>>>(dy, y, n);
	sync();
}

/* Block-wise sums of squares in double, then one atomic add per block. */
__global__ void kz_sumsq(const float *g, size_t n, double *out)
{
	__shared__ double part[THREADS];
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	part[threadIdx.x] = i < n ? (double)g[i] * g[i] : 0.0;
	__syncthreads();
	for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s)
			part[threadIdx.x] += part[threadIdx.x + s];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(out, part[0]);
}

/*
 * The one allocation outside the model's blocks: an 8-byte managed
 * accumulator per call (once per training step, for gradient clipping),
 * since kernels get no backend context to keep it in.
 */
static double c_sumsq(const float *g, size_t n)
{
	double *acc = NULL, s = 0;

	if (!n)
		return 0;
	if (cudaMallocManaged(&acc, sizeof(*acc)) != cudaSuccess)
		return NAN; /* the caller's clipping sees a non-finite norm */
	*acc = 0;
	kz_sumsq<<<blocks_for(n), THREADS>>>(g, n, acc);
	sync();
	s = *acc;
	cudaFree(acc);
	return s;
}

__global__ void kz_adam(float *p, const float *g, float *mom1, float *mom2, size_t n, float gscale,
			float lr, float beta1, float beta2, float eps, float bc1, float bc2)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	float gi;

	if (i >= n)
		return;
	gi = g[i] * gscale;
	mom1[i] = beta1 * mom1[i] + (1 - beta1) * gi;
	mom2[i] = beta2 * mom2[i] + (1 - beta2) * gi * gi;
	p[i] -= lr * (mom1[i] / bc1) / (sqrtf(mom2[i] / bc2) + eps);
}

static void c_adam(float *p, const float *g, float *mom1, float *mom2, size_t n, float gscale,
		   float lr, float beta1, float beta2, float eps, float bc1, float bc2)
{
	if (!n)
		return;
	kz_adam<<<blocks_for(n), THREADS>>>(p, g, mom1, mom2, n, gscale, lr, beta1, beta2, eps, bc1,
					    bc2);
	sync();
}

/* C++20 designated initializers: in member order, checked by the compiler. */
static const struct gnn_kernels cuda_kernels = {
	.zero = c_zero,
	.add_bias = c_add_bias,
	.colsum_add = c_colsum_add,
	.gather = c_gather,
	.scatter_add = c_scatter_add,
	.msg_fwd = c_msg_fwd,
	.msg_bwd = c_msg_bwd,
	.gru_fwd = c_gru_fwd,
	.gru_bwd = c_gru_bwd,
	.pool_fwd = c_pool_fwd,
	.pool_bwd = c_pool_bwd,
	.softmax_fwd = c_softmax_fwd,
	.softmax_bwd = c_softmax_bwd,
	.tanh_bias_fwd = c_tanh_bias_fwd,
	.tanh_bwd = c_tanh_bwd,
	.sumsq = c_sumsq,
	.adam = c_adam,
};

/* ---- the backend ------------------------------------------------------------ */

static int cuda_init(void **ret_ctx, struct gnn_err *err)
{
	struct cuda_ctx *x;
	struct cudaDeviceProp prop;
	int n = 0;
	cudaError_t ce = cudaGetDeviceCount(&n);

	*ret_ctx = NULL;
	if (ce != cudaSuccess)
		return gnn_errf(err, ENODEV, "cuda: no usable device: cudaGetDeviceCount: %s (%d)",
				cudaGetErrorString(ce), (int)ce);
	if (n <= 0)
		return gnn_errf(err, ENODEV, "cuda: no CUDA device");
	x = (struct cuda_ctx *)calloc(1, sizeof(*x));
	if (!x)
		return gnn_errf(err, ENOMEM, "cuda: out of memory");
	if ((ce = cudaGetDevice(&x->device)) != cudaSuccess ||
	    (ce = cudaGetDeviceProperties(&prop, x->device)) != cudaSuccess) {
		free(x);
		return gnn_errf(err, ENODEV, "cuda: %s", cudaGetErrorString(ce));
	}
	if (cublasCreate(&x->blas) != CUBLAS_STATUS_SUCCESS) {
		free(x);
		return gnn_errf(err, ENODEV, "cuda: cublasCreate failed");
	}
	/* Plain FP32 GEMMs (no TF32 tensor ops), comparable with the CPU backend. */
	cublasSetMathMode(x->blas, CUBLAS_DEFAULT_MATH);
	snprintf(x->info, sizeof(x->info), "cuda: %.100s (sm_%d%d), cuBLAS sgemm, FP32", prop.name,
		 prop.major, prop.minor);
	*ret_ctx = x;
	return 0;
}

static void cuda_fini(void *ctx)
{
	struct cuda_ctx *x = (struct cuda_ctx *)ctx;

	if (!x)
		return;
	cublasDestroy(x->blas);
	free(x);
}

static const char *cuda_info(void *ctx)
{
	return ctx ? ((struct cuda_ctx *)ctx)->info : "cuda";
}

static void *cuda_alloc(void *ctx, size_t bytes)
{
	void *p = NULL;

	(void)ctx;
	bytes = (bytes + GNN_ALIGN - 1) / GNN_ALIGN * GNN_ALIGN;
	if (bytes == 0)
		bytes = GNN_ALIGN;
	if (cudaMallocManaged(&p, bytes) != cudaSuccess)
		return NULL;
	if (cudaMemset(p, 0, bytes) != cudaSuccess) {
		cudaFree(p);
		return NULL;
	}
	sync();
	return p;
}

static void cuda_free(void *ctx, void *p)
{
	(void)ctx;
	if (p)
		cudaFree(p);
}

/*
 * Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so each
 * problem goes to cuBLAS with A and B swapped and m and n swapped.
 */
static void cuda_gemm_batch(void *ctx, const struct gnn_gemm *g, size_t count)
{
	struct cuda_ctx *x = (struct cuda_ctx *)ctx;

	for (size_t i = 0; i < count; i++) {
		const struct gnn_gemm *p = &g[i];

		if (!p->m || !p->n)
			continue;
		cublasSgemm(x->blas, p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
			    p->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)p->n, (int)p->m, (int)p->k,
			    &p->alpha, p->b, (int)p->ldb, p->a, (int)p->lda, &p->beta, p->c,
			    (int)p->ldc);
	}
	sync();
}

extern "C" const struct gnn_backend_class gnn_backend_cuda = {
	.name = "cuda",
	.init = cuda_init,
	.fini = cuda_fini,
	.info = cuda_info,
	.mem_alloc = cuda_alloc,
	.mem_free = cuda_free,
	.gemm_batch = cuda_gemm_batch,
	.kernels = &cuda_kernels,
};
