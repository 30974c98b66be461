/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "cuda" backend of gnn/: every GEMM through cuBLAS in FP32 (default
 * math mode: no TF32, so results stay comparable with the CPU backend), and
 * every element-wise operation of struct gnn_kernels (gnn_impl.h) as a CUDA
 * kernel, each the parallel form of the reference loop in kernels.c.
 *
 * Memory: activations in device memory (cudaMalloc), allocated once per
 * model and grown with the batch; the parameter block in managed memory
 * (small: parameters, gradients and Adam moments of a model of a few
 * thousand to a few hundred thousand floats), so the public API reads and
 * writes parameters on the host after a sync. All work goes to the legacy
 * default stream in issue order, so no operation waits for the one before
 * it on the host; sync() waits once and reports the first error.
 *
 * Parallel forms: one thread per output element where outputs are
 * independent (bias, GRU gates, gathers and distinct-index scatters, Adam,
 * job max-pool columns); one warp per row where a row is a reduction (the
 * DAGNN message over a node's neighbours, attention softmax), lanes over the
 * d columns; atomicAdd only where rows of one launch add into shared places
 * (the message backward into shared neighbours, dhprev rows and a_q, a_k;
 * column sums of bias gradients; the squared-norm reduction, in double).
 * The DAGNN ops run all units of a wavefront in one launch (unit_pack), so
 * the pipelined schedule's units really run together on the device. Float
 * atomics make gradients run-to-run nondeterministic in the last bits.
 * GEMMs of a gemm_batch with one shape and constant strides between their
 * operands (the attention heads) go as one cublasSgemmStridedBatched, those
 * of a DAGNN wavefront (shapes differ per unit) as one
 * cublasSgemmGroupedBatched.
 *
 * Built only when nvcc is found (meson option 'cuda'), as a shared module of
 * its own (libloom_gnn_cuda.so, linked against cudart and cuBLAS) that
 * backend.c loads with dlopen() on the first use of "cuda"; its one exported
 * symbol, gnn_cuda_module_get(), returns the descriptor of cuda_module.h.
 * Everything else here has hidden visibility. init fails with ENODEV and
 * the runtime's reason when cudaGetDeviceCount reports an error (35,
 * cudaErrorInsufficientDriver, where there is no driver) or no device;
 * gnn_model_new() then falls back to "cpu". cuda_probe(), which
 * gnn_cuda_probe() (gnn.h) calls once the module is loaded, runs the same
 * check and tells "no device or no driver" (-ENODEV) from any other error
 * of the runtime (-EIO).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

extern "C" {
#include "gnn/cuda_module.h"
#include "gnn/gnn_impl.h"
}

#define THREADS 256
#define WARP    32
#define ROWS_PER_BLOCK (THREADS / WARP)

struct cuda_ctx {
	cublasHandle_t blas;
	char info[160];
	/* first failure since the last sync, reported by it */
	char fail[GNN_ERR_MAX];
	/*
	 * Grouped GEMMs: device array of the A, B, C pointers of a call (3 x
	 * cap) and host arrays of the per-group shapes; grown with the calls.
	 * grouped is false once the library has refused a grouped call.
	 */
	const float **dptrs;
	const float **hptrs;
	int *gint; /* 7 x cap: m, n, k, lda, ldb, ldc, size */
	float *gfl; /* 2 x cap: alpha, beta */
	cublasOperation_t *gop; /* 2 x cap */
	size_t cap;
	bool grouped;
};

static unsigned blocks_for(size_t n)
{
	size_t b = (n + THREADS - 1) / THREADS;

	return (unsigned)(b ? b : 1);
}

static unsigned row_blocks(size_t rows)
{
	size_t b = (rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK;

	return (unsigned)(b ? b : 1);
}

__device__ float warp_sum(float v)
{
	for (int o = WARP / 2; o > 0; o /= 2)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ float warp_max(float v)
{
	for (int o = WARP / 2; o > 0; o /= 2)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

/* a . b over n floats, every lane gets the result */
__device__ float warp_dot(const float *a, const float *b, uint32_t n, unsigned lane)
{
	float s = 0;

	for (uint32_t c = lane; c < n; c += WARP)
		s += a[c] * b[c];
	return warp_sum(s);
}

/* ---- element-wise kernels ------------------------------------------------- */

static void c_zero(float *x, size_t n)
{
	if (n)
		cudaMemsetAsync(x, 0, n * sizeof(*x), 0);
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

	if (n)
		kz_add_bias<<<blocks_for(n), THREADS>>>(y, ld, b, rows, cols);
}

#define COLSUM_ROWS 256

/*
 * One block's share of db[c] += sum over rows [r0, r1) of dy[r][c] (row
 * stride ld): threadIdx.x picks one of 32 columns starting at c0,
 * threadIdx.y one of 8 row strides, then one atomic add per column. Called
 * by every thread of the block (it synchronises them).
 */
__device__ void colsum_block(float *db, const float *dy, size_t ld, size_t r0, size_t r1,
			     uint32_t c0, uint32_t cols)
{
	__shared__ float part[ROWS_PER_BLOCK][WARP];
	uint32_t c = c0 + threadIdx.x;
	float s = 0;

	if (c < cols)
		for (size_t r = r0 + threadIdx.y; r < r1; r += ROWS_PER_BLOCK)
			s += dy[r * ld + c];
	part[threadIdx.y][threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.y == 0 && c < cols) {
		for (int k = 1; k < ROWS_PER_BLOCK; k++)
			s += part[k][threadIdx.x];
		atomicAdd(&db[c], s);
	}
}

/* Block (x: 32 columns, y: a chunk of COLSUM_ROWS rows). */
__global__ void kz_colsum_add(float *db, const float *dy, uint32_t ld, uint32_t rows,
			      uint32_t cols)
{
	size_t r0 = (size_t)blockIdx.y * COLSUM_ROWS, r1 = r0 + COLSUM_ROWS;

	colsum_block(db, dy, ld, r0, r1 < rows ? r1 : rows, blockIdx.x * WARP, cols);
}

static void c_colsum_add(float *db, const float *dy, uint32_t ld, uint32_t rows, uint32_t cols)
{
	dim3 grid((cols + WARP - 1) / WARP, (rows + COLSUM_ROWS - 1) / COLSUM_ROWS);

	if (rows && cols)
		kz_colsum_add<<<grid, dim3(WARP, ROWS_PER_BLOCK)>>>(db, dy, ld, rows, cols);
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

	if (n)
		kz_gather<<<blocks_for(n), THREADS>>>(dst, dst_ld, src, src_ld, idx, rows, cols);
}

/* The idx entries are distinct (gnn_impl.h), so each output has one writer. */
__global__ void kz_scatter_add(float *dst, uint32_t dst_ld, const float *src, uint32_t src_ld,
			       const int32_t *idx, uint32_t rows, uint32_t cols)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t r, c;

	if (i >= (size_t)rows * cols)
		return;
	r = i / cols;
	c = i % cols;
	dst[(idx ? (size_t)idx[r] : r) * dst_ld + c] += src[r * src_ld + c];
}

static void c_scatter_add(float *dst, uint32_t dst_ld, const float *src, uint32_t src_ld,
			  const int32_t *idx, uint32_t rows, uint32_t cols)
{
	size_t n = (size_t)rows * cols;

	if (n)
		kz_scatter_add<<<blocks_for(n), THREADS>>>(dst, dst_ld, src, src_ld, idx, rows,
							   cols);
}

/*
 * The DAGNN ops get the units of a wavefront (struct gnn_unit) and run them
 * in one launch: up to MAXU units travel by value in a unit_pack, with the
 * prefix sums of their work items (rows for the warp-per-row kernels, row x
 * column for the element-wise ones); an item finds its unit by a scan of
 * those (units are few). A wavefront of more than MAXU units (more than 4
 * layers) takes several launches.
 */
#define MAXU 8

struct unit_pack {
	uint32_t n, d;
	size_t start[MAXU + 1];
	struct gnn_unit u[MAXU];
};

/* Returns the unit of work item g (< pk.start[pk.n]). */
__device__ uint32_t unit_of(const struct unit_pack &pk, size_t g)
{
	uint32_t i = 0;

	while (i + 1 < pk.n && g >= pk.start[i + 1])
		i++;
	return i;
}

/* Fills pk with units [i0, i0 + n) of u, items per_row per row; returns the total items. */
static size_t pack(struct unit_pack *pk, const struct gnn_unit *u, uint32_t n, uint32_t d,
		   size_t per_row)
{
	pk->n = n;
	pk->d = d;
	pk->start[0] = 0;
	for (uint32_t i = 0; i < n; i++) {
		pk->u[i] = u[i];
		pk->start[i + 1] = pk->start[i] + (size_t)(u[i].r1 - u[i].r0) * per_row;
	}
	return pk->start[n];
}

/*
 * Runs kernel over the units u[0 .. n) in packs of MAXU, per_row work items
 * per row: one warp per item (warps) or one thread per item.
 */
static void launch_units(void (*kernel)(const struct unit_pack), const struct gnn_unit *u,
			 uint32_t n, uint32_t d, size_t per_row, bool warps)
{
	struct unit_pack pk;

	for (uint32_t i = 0; i < n; i += MAXU) {
		size_t items = pack(&pk, u + i, n - i < MAXU ? n - i : MAXU, d, per_row);

		if (items)
			kernel<<<warps ? row_blocks(items) : blocks_for(items), THREADS>>>(pk);
	}
}

/*
 * One warp per row p of a unit, lanes over the d columns: the scores of its
 * edges (lane 0 stores pre and the LeakyReLU'd score), their softmax, and
 * the message. Edge values written by lane 0 are read by the other lanes
 * after __syncwarp(), which orders the warp's memory accesses.
 */
__global__ void kz_msg_fwd(const struct unit_pack pk)
{
	size_t gw = (size_t)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / WARP;
	unsigned lane = threadIdx.x % WARP;
	uint32_t d = pk.d, i, p;
	const struct gnn_unit *u;
	float *mp;
	float q, mx = -INFINITY, sum = 0;
	int32_t e0, e1;

	if (gw >= pk.start[pk.n])
		return;
	i = unit_of(pk, gw);
	u = &pk.u[i];
	p = u->r0 + (uint32_t)(gw - pk.start[i]);
	e0 = u->ptr[p];
	e1 = u->ptr[p + 1];
	mp = u->m + (size_t)p * d;
	for (uint32_t c = lane; c < d; c += WARP)
		mp[c] = 0;
	if (e0 == e1)
		return;
	q = warp_dot(u->aq, u->hprev + (size_t)p * d, d, lane);
	for (int32_t e = e0; e < e1; e++) {
		float sc = q + warp_dot(u->ak, u->h + (size_t)u->adj[e] * d, d, lane);
		float l = sc > 0 ? sc : GNN_LEAKY_SLOPE * sc;

		if (lane == 0) {
			u->pre[e] = sc;
			u->alpha[e] = l;
		}
		mx = fmaxf(mx, l);
	}
	__syncwarp();
	for (int32_t e = e0; e < e1; e++)
		sum += expf(u->alpha[e] - mx);
	for (int32_t e = e0; e < e1; e++) {
		const float *hu = u->h + (size_t)u->adj[e] * d;
		float a = expf(u->alpha[e] - mx) / sum;

		for (uint32_t c = lane; c < d; c += WARP)
			mp[c] += a * hu[c];
		__syncwarp();
		if (lane == 0)
			u->alpha[e] = a;
	}
}

static void c_msg_fwd(const struct gnn_unit *u, uint32_t n, uint32_t d)
{
	launch_units(kz_msg_fwd, u, n, d, 1, true);
}

/*
 * Backward of kz_msg_fwd, one warp per row. A row's neighbours are shared
 * with other rows, its dhprev row with a neighbour term of another unit of
 * the wavefront (gnn_impl.h), and a_q, a_k with every row of the unit: all
 * of those take atomic adds (one per warp and column for a_q, a_k).
 */
__global__ void kz_msg_bwd(const struct unit_pack pk)
{
	size_t gw = (size_t)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / WARP;
	unsigned lane = threadIdx.x % WARP;
	uint32_t d = pk.d, i, p;
	const struct gnn_unit *u;
	const float *dmp;
	float dq = 0, avg = 0;
	int32_t e0, e1;

	if (gw >= pk.start[pk.n])
		return;
	i = unit_of(pk, gw);
	u = &pk.u[i];
	p = u->r0 + (uint32_t)(gw - pk.start[i]);
	e0 = u->ptr[p];
	e1 = u->ptr[p + 1];
	if (e0 == e1)
		return;
	dmp = u->dm + (size_t)p * d;
	for (int32_t e = e0; e < e1; e++) {
		float ea = warp_dot(dmp, u->h + (size_t)u->adj[e] * d, d, lane);

		if (lane == 0)
			u->ealpha[e] = ea;
		avg += u->alpha[e] * ea;
	}
	__syncwarp();
	for (int32_t e = e0; e < e1; e++) {
		const float *hu = u->h + (size_t)u->adj[e] * d;
		float *dhu = u->dh + (size_t)u->adj[e] * d;
		float al = u->alpha[e], ds = al * (u->ealpha[e] - avg);
		float dpre = u->pre[e] > 0 ? ds : GNN_LEAKY_SLOPE * ds;

		for (uint32_t c = lane; c < d; c += WARP) {
			atomicAdd(&dhu[c], al * dmp[c] + dpre * u->ak[c]);
			atomicAdd(&u->dak[c], dpre * hu[c]);
		}
		dq += dpre;
	}
	for (uint32_t c = lane; c < d; c += WARP) {
		atomicAdd(&u->daq[c], dq * u->hprev[(size_t)p * d + c]);
		atomicAdd(&u->dhprev[(size_t)p * d + c], dq * u->aq[c]);
	}
}

static void c_msg_bwd(const struct gnn_unit *u, uint32_t n, uint32_t d)
{
	launch_units(kz_msg_bwd, u, n, d, 1, true);
}

__device__ float dev_sigm(float x)
{
	return 1.0f / (1.0f + expf(-x));
}

/* One thread per (row, unit c): adds the biases of its three gates, then the cell. */
__global__ void kz_gru_fwd(const struct unit_pack pk)
{
	size_t g = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	uint32_t d = pk.d, i;
	const struct gnn_unit *u;
	size_t r, c;
	float *ir, *hr, *gt;
	float rr, z, n;

	if (g >= pk.start[pk.n])
		return;
	i = unit_of(pk, g);
	u = &pk.u[i];
	r = u->r0 + (g - pk.start[i]) / d;
	c = (g - pk.start[i]) % d;
	ir = u->gi + r * 3 * d;
	hr = u->gh + r * 3 * d;
	gt = u->gates + r * 3 * d;
	for (uint32_t k = 0; k < 3; k++) {
		ir[k * d + c] += u->bi[k * d + c];
		hr[k * d + c] += u->bh[k * d + c];
	}
	rr = dev_sigm(ir[c] + hr[c]);
	z = dev_sigm(ir[d + c] + hr[d + c]);
	n = tanhf(ir[2 * d + c] + rr * hr[2 * d + c]);
	gt[c] = rr;
	gt[d + c] = z;
	gt[2 * d + c] = n;
	u->h[r * d + c] = (1 - z) * n + z * u->m[r * d + c];
}

static void c_gru_fwd(const struct gnn_unit *u, uint32_t n, uint32_t d)
{
	launch_units(kz_gru_fwd, u, n, d, d, false);
}

__global__ void kz_gru_bwd(const struct unit_pack pk)
{
	size_t g = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	uint32_t d = pk.d, i;
	const struct gnn_unit *u;
	size_t r, c, rc;
	const float *gt, *hh;
	float *di, *dhh;
	float rr, z, n, dh, dn, dz, dpn, dpr, dpz;

	if (g >= pk.start[pk.n])
		return;
	i = unit_of(pk, g);
	u = &pk.u[i];
	r = u->r0 + (g - pk.start[i]) / d;
	c = (g - pk.start[i]) % d;
	rc = r * d + c;
	gt = u->gates + r * 3 * d;
	hh = u->gh + r * 3 * d;
	di = u->dgi + r * 3 * d;
	dhh = u->dgh + r * 3 * d;
	rr = gt[c];
	z = gt[d + c];
	n = gt[2 * d + c];
	dh = u->dh[rc];
	dn = dh * (1 - z);
	dz = dh * (u->m[rc] - n);
	dpn = dn * (1 - n * n);
	dpr = dpn * hh[2 * d + c] * rr * (1 - rr);
	dpz = dz * z * (1 - z);
	di[c] = dpr;
	di[d + c] = dpz;
	di[2 * d + c] = dpn;
	dhh[c] = dpr;
	dhh[d + c] = dpz;
	dhh[2 * d + c] = dpn * rr;
	u->dm[rc] = dh * z;
}

static void c_gru_bwd(const struct gnn_unit *u, uint32_t n, uint32_t d)
{
	launch_units(kz_gru_bwd, u, n, d, d, false);
}

/*
 * Bias gradients of the units: block (x: 32 of the 3d columns, y: a chunk of
 * COLSUM_ROWS rows, z: unit * 2 + (0: dgi -> dbi, 1: dgh -> dbh)), 8 threads
 * per column, then one atomic add per column and block.
 */
__global__ void kz_bias_grad(const struct unit_pack pk)
{
	const struct gnn_unit *u = &pk.u[blockIdx.z / 2];
	bool hid = blockIdx.z % 2;
	float *db = hid ? u->dbh : u->dbi;
	uint32_t cols = 3 * pk.d;
	size_t r0 = u->r0 + (size_t)blockIdx.y * COLSUM_ROWS, r1 = r0 + COLSUM_ROWS;

	if (!db || r0 >= u->r1)
		return; /* the whole block: the condition does not depend on the thread */
	colsum_block(db, hid ? u->dgh : u->dgi, cols, r0, r1 < u->r1 ? r1 : u->r1,
		     blockIdx.x * WARP, cols);
}

static void c_bias_grad(const struct gnn_unit *u, uint32_t n, uint32_t d)
{
	struct unit_pack pk;

	for (uint32_t i = 0; i < n; i += MAXU) {
		uint32_t k = n - i < MAXU ? n - i : MAXU, most = 0;

		pack(&pk, u + i, k, d, 1);
		for (uint32_t j = 0; j < k; j++)
			if (u[i + j].r1 - u[i + j].r0 > most)
				most = u[i + j].r1 - u[i + j].r0;
		if (most)
			kz_bias_grad<<<dim3((3 * d + WARP - 1) / WARP,
					    (most + COLSUM_ROWS - 1) / COLSUM_ROWS, 2 * k),
				       dim3(WARP, ROWS_PER_BLOCK)>>>(pk);
	}
}

/* One thread per (job, column); the first node wins ties, as on the CPU. */
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

	if (n)
		kz_pool_fwd<<<blocks_for(n), THREADS>>>(e, E, job_start, njobs, pool, argmax);
}

/*
 * One thread per (row, column): the row's pooled gradient to its job's
 * argmax node. Rows of one job land on the same entries, hence the atomics.
 */
__global__ void kz_pool_bwd(const float *dpool, uint32_t ld, const int32_t *jobs, uint32_t rows,
			    uint32_t E, const int32_t *argmax, float *de)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t r, c;

	if (i >= (size_t)rows * E)
		return;
	r = i / E;
	c = i % E;
	atomicAdd(&de[(size_t)argmax[(size_t)jobs[r] * E + c] * E + c], dpool[r * ld + c]);
}

static void c_pool_bwd(const float *dpool, uint32_t ld, const int32_t *jobs, uint32_t rows,
		       uint32_t E, const int32_t *argmax, float *de)
{
	size_t n = (size_t)rows * E;

	if (n)
		kz_pool_bwd<<<blocks_for(n), THREADS>>>(dpool, ld, jobs, rows, E, argmax, de);
}

/* One warp per row: max, exp, sum, normalise. */
__global__ void kz_softmax_fwd(float *a, uint32_t rows, uint32_t cols)
{
	unsigned lane = threadIdx.x % WARP;
	size_t r = (size_t)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / WARP;
	float *x, mx = -INFINITY, sum = 0, inv;

	if (r >= rows)
		return;
	x = a + r * cols;
	for (uint32_t c = lane; c < cols; c += WARP)
		mx = fmaxf(mx, x[c]);
	mx = warp_max(mx);
	for (uint32_t c = lane; c < cols; c += WARP) {
		x[c] = expf(x[c] - mx);
		sum += x[c];
	}
	inv = 1.0f / warp_sum(sum);
	for (uint32_t c = lane; c < cols; c += WARP)
		x[c] *= inv;
}

static void c_softmax_fwd(float *a, uint32_t rows, uint32_t cols)
{
	if (rows && cols)
		kz_softmax_fwd<<<row_blocks(rows), THREADS>>>(a, rows, cols);
}

__global__ void kz_softmax_bwd(float *da, const float *a, uint32_t rows, uint32_t cols,
			       float scale)
{
	unsigned lane = threadIdx.x % WARP;
	size_t r = (size_t)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / WARP;
	float *g;
	const float *x;
	float dotv;

	if (r >= rows)
		return;
	g = da + r * cols;
	x = a + r * cols;
	dotv = warp_dot(g, x, cols, lane);
	for (uint32_t c = lane; c < cols; c += WARP)
		g[c] = scale * x[c] * (g[c] - dotv);
}

static void c_softmax_bwd(float *da, const float *a, uint32_t rows, uint32_t cols, float scale)
{
	if (rows && cols)
		kz_softmax_bwd<<<row_blocks(rows), THREADS>>>(da, a, rows, cols, scale);
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

	if (n)
		kz_tanh_bias_fwd<<<blocks_for(n), THREADS>>>(y, b, rows, cols);
}

__global__ void kz_tanh_bwd(float *dy, const float *y, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		dy[i] *= 1 - y[i] * y[i];
}

static void c_tanh_bwd(float *dy, const float *y, size_t n)
{
	if (n)
		kz_tanh_bwd<<<blocks_for(n), THREADS>>>(dy, y, n);
}

/* Grid-stride sums of squares in double, a block reduction, one atomic add per block. */
__global__ void kz_sumsq(const float *g, size_t n, double *out)
{
	__shared__ double part[THREADS];
	double s = 0;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		s += (double)g[i] * g[i];
	part[threadIdx.x] = s;
	__syncthreads();
	for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
		if (threadIdx.x < k)
			part[threadIdx.x] += part[threadIdx.x + k];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(out, part[0]);
}

/* red: the model's reduction scratch; NaN when a CUDA call fails (sync says why). */
static double c_sumsq(const float *g, size_t n, double *red)
{
	unsigned blocks = blocks_for(n);
	double s = 0;

	if (!n)
		return 0;
	if (blocks > 1024)
		blocks = 1024;
	cudaMemsetAsync(red, 0, sizeof(*red), 0);
	kz_sumsq<<<blocks, THREADS>>>(g, n, red);
	if (cudaMemcpy(&s, red, sizeof(s), cudaMemcpyDefault) != cudaSuccess)
		return NAN;
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
	if (n)
		kz_adam<<<blocks_for(n), THREADS>>>(p, g, mom1, mom2, n, gscale, lr, beta1, beta2,
						    eps, bc1, bc2);
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
	.bias_grad = c_bias_grad,
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

/* Records the first failure since the last sync. */
static void note(struct cuda_ctx *x, const char *what, int code, const char *why)
{
	if (x && !x->fail[0])
		snprintf(x->fail, sizeof(x->fail), "cuda: %s failed: %s (%d)", what, why, code);
}

static int cuda_probe(struct gnn_err *err)
{
	int n = 0;
	cudaError_t ce = cudaGetDeviceCount(&n);

	if (ce == cudaErrorNoDevice || ce == cudaErrorInsufficientDriver)
		return gnn_errf(err, ENODEV, "cuda: no usable device: cudaGetDeviceCount: %s (%d)",
				cudaGetErrorString(ce), (int)ce);
	if (ce != cudaSuccess)
		return gnn_errf(err, EIO, "cuda: cudaGetDeviceCount failed: %s (%d)",
				cudaGetErrorString(ce), (int)ce);
	if (n <= 0)
		return gnn_errf(err, ENODEV, "cuda: no CUDA device");
	return 0;
}

static int cuda_init(void **ret_ctx, struct gnn_err *err)
{
	struct cuda_ctx *x;
	struct cudaDeviceProp prop;
	int device;
	cudaError_t ce;
	int r = cuda_probe(err);

	*ret_ctx = NULL;
	if (r < 0)
		return -ENODEV; /* the probe wrote why */
	x = (struct cuda_ctx *)calloc(1, sizeof(*x));
	if (!x)
		return gnn_errf(err, ENOMEM, "cuda: out of memory");
	if ((ce = cudaGetDevice(&device)) != cudaSuccess ||
	    (ce = cudaGetDeviceProperties(&prop, device)) != cudaSuccess) {
		free(x);
		return gnn_errf(err, ENODEV, "cuda: %s (%d)", cudaGetErrorString(ce), (int)ce);
	}
	if (cublasCreate(&x->blas) != CUBLAS_STATUS_SUCCESS) {
		free(x);
		return gnn_errf(err, ENODEV, "cuda: cublasCreate failed");
	}
	/* Plain FP32 GEMMs (no TF32 tensor ops), comparable with the CPU backend. */
	cublasSetMathMode(x->blas, CUBLAS_DEFAULT_MATH);
	snprintf(x->info, sizeof(x->info), "%.100s (sm_%d%d), cuBLAS sgemm, FP32", prop.name,
		 prop.major, prop.minor);
	x->grouped = true;
	*ret_ctx = x;
	return 0;
}

static void cuda_fini(void *ctx)
{
	struct cuda_ctx *x = (struct cuda_ctx *)ctx;

	if (!x)
		return;
	cudaDeviceSynchronize();
	cublasDestroy(x->blas);
	cudaFree(x->dptrs);
	free(x->hptrs);
	free(x->gint);
	free(x->gfl);
	free(x->gop);
	free(x);
}

static const char *cuda_info(void *ctx)
{
	return ctx ? ((struct cuda_ctx *)ctx)->info : "cuda";
}

static size_t round_up(size_t bytes)
{
	bytes = (bytes + GNN_ALIGN - 1) / GNN_ALIGN * GNN_ALIGN;
	return bytes ? bytes : GNN_ALIGN;
}

static void *cuda_alloc(void *ctx, size_t bytes)
{
	void *p = NULL;

	(void)ctx;
	bytes = round_up(bytes);
	if (cudaMalloc(&p, bytes) != cudaSuccess)
		return NULL;
	if (cudaMemset(p, 0, bytes) != cudaSuccess) {
		cudaFree(p);
		return NULL;
	}
	return p;
}

static void *cuda_alloc_shared(void *ctx, size_t bytes)
{
	void *p = NULL;

	(void)ctx;
	bytes = round_up(bytes);
	if (cudaMallocManaged(&p, bytes, cudaMemAttachGlobal) != cudaSuccess)
		return NULL;
	if (cudaDeviceSynchronize() != cudaSuccess) {
		cudaFree(p);
		return NULL;
	}
	memset(p, 0, bytes);
	return p;
}

static void cuda_free(void *ctx, void *p)
{
	(void)ctx;
	if (p) {
		cudaDeviceSynchronize();
		cudaFree(p);
	}
}

static void cuda_copy_to_dev(void *ctx, void *dst, const void *src, size_t bytes)
{
	cudaError_t ce;

	if (!bytes)
		return;
	/* From pageable memory: returns once src is staged, so the caller may reuse it. */
	ce = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, 0);
	if (ce != cudaSuccess)
		note((struct cuda_ctx *)ctx, "copy to device", (int)ce, cudaGetErrorString(ce));
}

static void cuda_copy_to_host(void *ctx, void *dst, const void *src, size_t bytes)
{
	cudaError_t ce;

	if (!bytes)
		return;
	ce = cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
	if (ce != cudaSuccess)
		note((struct cuda_ctx *)ctx, "copy to host", (int)ce, cudaGetErrorString(ce));
}

static int cuda_sync(void *ctx, struct gnn_err *err)
{
	struct cuda_ctx *x = (struct cuda_ctx *)ctx;
	cudaError_t ce = cudaDeviceSynchronize();

	if (ce == cudaSuccess)
		ce = cudaGetLastError();
	if (ce != cudaSuccess)
		note(x, "a kernel", (int)ce, cudaGetErrorString(ce));
	if (!x->fail[0])
		return 0;
	gnn_errf(err, EIO, "%s", x->fail);
	x->fail[0] = 0;
	return -EIO;
}

static bool same_shape(const struct gnn_gemm *a, const struct gnn_gemm *b)
{
	return a->trans_a == b->trans_a && a->trans_b == b->trans_b && a->m == b->m &&
	       a->n == b->n && a->k == b->k && a->lda == b->lda && a->ldb == b->ldb &&
	       a->ldc == b->ldc && a->alpha == b->alpha && a->beta == b->beta;
}

/* Can g[i + 1] join a strided batch of g[i]'s shape whose strides are sa, sb, sc? */
static bool same_stride(const struct gnn_gemm *a, const struct gnn_gemm *b, long long sa,
			long long sb, long long sc)
{
	return same_shape(a, b) && b->a - a->a == sa && b->b - a->b == sb && b->c - a->c == sc;
}

/*
 * Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so each
 * problem goes to cuBLAS with A and B swapped and m and n swapped.
 */
static void one_gemm(struct cuda_ctx *x, const struct gnn_gemm *p)
{
	cublasStatus_t st = cublasSgemm(x->blas, p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
					p->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)p->n, (int)p->m,
					(int)p->k, &p->alpha, p->b, (int)p->ldb, p->a, (int)p->lda,
					&p->beta, p->c, (int)p->ldc);

	if (st != CUBLAS_STATUS_SUCCESS)
		note(x, "cuBLAS sgemm", (int)st, cublasGetStatusString(st));
}

/* Grows the grouped-GEMM arrays to n problems; false when out of memory. */
static bool group_room(struct cuda_ctx *x, size_t n)
{
	size_t cap = x->cap ? x->cap : 64;
	const float **dp = NULL;

	if (n <= x->cap)
		return true;
	while (cap < n)
		cap *= 2;
	if (cudaMalloc((void **)&dp, 3 * cap * sizeof(*dp)) != cudaSuccess)
		return false;
	cudaFree(x->dptrs); /* waits for the calls that read the old one */
	free(x->hptrs);
	free(x->gint);
	free(x->gfl);
	free(x->gop);
	x->dptrs = dp;
	x->hptrs = (const float **)malloc(3 * cap * sizeof(*x->hptrs));
	x->gint = (int *)malloc(7 * cap * sizeof(*x->gint));
	x->gfl = (float *)malloc(2 * cap * sizeof(*x->gfl));
	x->gop = (cublasOperation_t *)malloc(2 * cap * sizeof(*x->gop));
	x->cap = cap;
	if (!x->hptrs || !x->gint || !x->gfl || !x->gop) {
		x->cap = 0; /* the next call tries again */
		return false;
	}
	return true;
}

/*
 * All non-empty problems of g in one cublasSgemmGroupedBatched: runs of one
 * shape form a group. The pointer arrays go to device memory in stream order
 * (from pageable memory, staged before the copy returns). Returns false when
 * the call could not be made (then nothing was issued).
 */
static bool grouped_gemm(struct cuda_ctx *x, const struct gnn_gemm *g, size_t count)
{
	size_t np = 0, ng = 0;
	int *m, *n, *k, *lda, *ldb, *ldc, *size;
	cublasStatus_t st;

	if (!x->grouped || !group_room(x, count))
		return false;
	m = x->gint;
	n = m + x->cap;
	k = n + x->cap;
	lda = k + x->cap;
	ldb = lda + x->cap;
	ldc = ldb + x->cap;
	size = ldc + x->cap;
	for (size_t i = 0; i < count; i++) {
		const struct gnn_gemm *p = &g[i];

		if (!p->m || !p->n)
			continue;
		if (ng == 0 || !same_shape(&g[i - 1], p) || !g[i - 1].m || !g[i - 1].n) {
			x->gop[ng] = p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
			x->gop[x->cap + ng] = p->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
			m[ng] = (int)p->n;
			n[ng] = (int)p->m;
			k[ng] = (int)p->k;
			lda[ng] = (int)p->ldb;
			ldb[ng] = (int)p->lda;
			ldc[ng] = (int)p->ldc;
			x->gfl[ng] = p->alpha;
			x->gfl[x->cap + ng] = p->beta;
			size[ng++] = 0;
		}
		size[ng - 1]++;
		x->hptrs[np] = p->b;
		x->hptrs[x->cap + np] = p->a;
		x->hptrs[2 * x->cap + np] = p->c;
		np++;
	}
	if (np == 0)
		return true;
	for (int t = 0; t < 3; t++)
		if (cudaMemcpyAsync(x->dptrs + (size_t)t * x->cap, x->hptrs + (size_t)t * x->cap,
				    np * sizeof(*x->dptrs), cudaMemcpyHostToDevice, 0) != cudaSuccess)
			return false;
	st = cublasSgemmGroupedBatched(x->blas, x->gop, x->gop + x->cap, m, n, k, x->gfl,
				       x->dptrs, lda, x->dptrs + x->cap, ldb, x->gfl + x->cap,
				       (float *const *)(x->dptrs + 2 * x->cap), ldc, (int)ng, size);
	if (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE) {
		x->grouped = false; /* this library or shape cannot: per problem from now on */
		return false;
	}
	if (st != CUBLAS_STATUS_SUCCESS)
		note(x, "cuBLAS sgemm grouped batched", (int)st, cublasGetStatusString(st));
	return true;
}

/*
 * One problem: cublasSgemm. Problems of one shape whose operands are evenly
 * spaced (non-negative strides; the attention heads): one strided-batched
 * call. Anything else (the units of a DAGNN wavefront, of different row
 * counts): one grouped-batched call, or one call per problem where the
 * library refuses that.
 */
static void cuda_gemm_batch(void *ctx, const struct gnn_gemm *g, size_t count)
{
	struct cuda_ctx *x = (struct cuda_ctx *)ctx;
	bool strided = count > 1;
	long long sa = 0, sb = 0, sc = 0;

	if (count == 0)
		return;
	if (strided) {
		sa = g[1].a - g[0].a;
		sb = g[1].b - g[0].b;
		sc = g[1].c - g[0].c;
		strided = sa >= 0 && sb >= 0 && sc > 0 && g[0].m && g[0].n;
		for (size_t i = 1; strided && i < count; i++)
			strided = same_stride(&g[i - 1], &g[i], sa, sb, sc);
	}
	if (strided) {
		const struct gnn_gemm *p = &g[0];
		cublasStatus_t st = cublasSgemmStridedBatched(
			x->blas, p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
			p->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)p->n, (int)p->m, (int)p->k,
			&p->alpha, p->b, (int)p->ldb, sb, p->a, (int)p->lda, sa, &p->beta, p->c,
			(int)p->ldc, sc, (int)count);

		if (st != CUBLAS_STATUS_SUCCESS)
			note(x, "cuBLAS sgemm strided batched", (int)st, cublasGetStatusString(st));
		return;
	}
	if (count > 1 && grouped_gemm(x, g, count))
		return;
	for (size_t i = 0; i < count; i++)
		if (g[i].m && g[i].n)
			one_gemm(x, &g[i]);
}

static const struct gnn_backend_class cuda_class = {
	.name = "cuda",
	.host_memory = false,
	.init = cuda_init,
	.fini = cuda_fini,
	.info = cuda_info,
	.mem_alloc = cuda_alloc,
	.mem_free = cuda_free,
	.mem_alloc_shared = cuda_alloc_shared,
	.mem_free_shared = cuda_free,
	.copy_to_dev = cuda_copy_to_dev,
	.copy_to_host = cuda_copy_to_host,
	.sync = cuda_sync,
	.gemm_batch = cuda_gemm_batch,
	.kernels = &cuda_kernels,
};

static const struct gnn_cuda_module cuda_module = {
	GNN_CUDA_MODULE_INIT,
	.backend = &cuda_class,
	.probe = cuda_probe,
};

/* The module's entry point (GNN_CUDA_MODULE_SYMBOL), the one symbol it exports. */
extern "C" __attribute__((visibility("default"))) const struct gnn_cuda_module *
gnn_cuda_module_get(void)
{
	return &cuda_module;
}
