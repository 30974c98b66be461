/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The element-wise kernels of gnn/ on the CPU (struct gnn_kernels,
 * gnn_impl.h): everything that is not a GEMM. Kept in this one file, with
 * flat loops over plain arrays, so a CUDA backend can replace them one by one.
 *
 * Implements the DAGNN message (Thost & Chen, "Directed Acyclic Graph Neural
 * Networks", ICLR 2021) with a LeakyReLU(0.2) attention score, the GRU cell
 * (Cho et al. 2014, PyTorch's GRUCell layout), row softmax for scaled
 * dot-product attention (Vaswani et al. 2017), and the Adam update (Kingma &
 * Ba, "Adam: A Method for Stochastic Optimization", ICLR 2015).
 */
#include <math.h>
#include <string.h>

#include "gnn/gnn_impl.h"

/*
 * The kernels that carry transcendental work are built three times on x86-64
 * (baseline SSE2, AVX2 + FMA, AVX-512) and the loader picks the widest the
 * CPU has, so the library stays portable and still uses wide vectors. Not
 * under ThreadSanitizer: the loader runs the clones' ifunc resolver while it
 * relocates the program, before the TSan runtime is set up, and the
 * resolver's instrumentation (__tsan_func_entry) then crashes it.
 */
#if defined(__SANITIZE_THREAD__)
#define LOOM_GNN_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LOOM_GNN_TSAN 1
#endif
#endif
#if defined(__x86_64__) && defined(__has_attribute) && !defined(LOOM_GNN_TSAN)
#if __has_attribute(target_clones)
#define VECTOR_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#endif
#endif
#ifndef VECTOR_CLONES
#define VECTOR_CLONES
#endif

/*
 * exp, tanh and the logistic function without libm calls, so that the loops
 * over them vectorise (libm's expf and tanhf were over half of a forward
 * pass). exp: x = n ln2 + r with |r| <= ln2 / 2 (Cody-Waite split of ln2),
 * e^r by its degree-7 Taylor polynomial, 2^n put into the exponent bits.
 * Inputs are clamped to [-87.3, 88.3], so results stay normal and finite.
 * tanh uses e^(-2|x|) and, below |x| = 1/8 where 1 - e^(-2|x|) would
 * cancel, its odd Taylor series; both branches are computed and one
 * selected, which keeps the loops branch-free. Measured against libm in
 * double (test_gnn_kernels): exp and the logistic function within 1.5e-7
 * relative, tanh within 9e-8 absolute and 2.6e-7 relative.
 */
static inline float fexp(float x)
{
	const float magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
	float n, r, p, scale;
	int32_t bits;

	x = x < -87.3f ? -87.3f : x;
	x = x > 88.3f ? 88.3f : x;
	n = (x * 1.44269504088896341f + magic) - magic;
	r = x - n * 0.693145751953125f;
	r = r - n * 1.42860682030941723e-6f;
	p = 1.0f / 5040;
	p = p * r + 1.0f / 720;
	p = p * r + 1.0f / 120;
	p = p * r + 1.0f / 24;
	p = p * r + 1.0f / 6;
	p = p * r + 0.5f;
	p = p * r + 1.0f;
	p = p * r + 1.0f;
	bits = ((int32_t)n + 127) * (1 << 23);
	memcpy(&scale, &bits, sizeof(scale));
	return p * scale;
}

static inline float fsigm(float x)
{
	return 1.0f / (1.0f + fexp(-x));
}

static inline float ftanh(float x)
{
	float a = fabsf(x), t = fexp(-2.0f * a), big = copysignf((1.0f - t) / (1.0f + t), x);
	float x2 = x * x;
	float small = x * (1.0f + x2 * (-1.0f / 3 + x2 * (2.0f / 15 + x2 * (-17.0f / 315))));

	return a < 0.125f ? small : big;
}

static void k_zero(float *x, size_t n)
{
	memset(x, 0, n * sizeof(*x));
}

static void k_add_bias(float *y, uint32_t ld, const float *b, uint32_t rows, uint32_t cols)
{
	for (uint32_t r = 0; r < rows; r++)
		for (uint32_t c = 0; c < cols; c++)
			y[(size_t)r * ld + c] += b[c];
}

static void k_colsum_add(float *db, const float *dy, uint32_t ld, uint32_t rows, uint32_t cols)
{
	for (uint32_t r = 0; r < rows; r++)
		for (uint32_t c = 0; c < cols; c++)
			db[c] += dy[(size_t)r * ld + c];
}

static void k_gather(float *dst, uint32_t dst_ld, const float *src, uint32_t src_ld,
		     const int32_t *idx, uint32_t rows, uint32_t cols)
{
	for (uint32_t r = 0; r < rows; r++) {
		size_t s = idx ? (size_t)idx[r] : r;

		memcpy(dst + (size_t)r * dst_ld, src + s * src_ld, cols * sizeof(float));
	}
}

static void k_scatter_add(float *dst, uint32_t dst_ld, const float *src, uint32_t src_ld,
			  const int32_t *idx, uint32_t rows, uint32_t cols)
{
	for (uint32_t r = 0; r < rows; r++) {
		float *o = dst + (idx ? (size_t)idx[r] : r) * dst_ld;
		const float *i = src + (size_t)r * src_ld;

		for (uint32_t c = 0; c < cols; c++)
			o[c] += i[c];
	}
}

/*
 * Reductions over LANES independent partial results, which the vectoriser
 * turns into vector operations (a single running float sum or max is a
 * dependency chain it may not reorder).
 */
#define LANES 16

static inline float dot(const float *restrict a, const float *restrict b, size_t n)
{
	float acc[LANES] = {0}, s = 0;
	size_t i = 0;

	for (; i + LANES <= n; i += LANES)
		for (size_t j = 0; j < LANES; j++)
			acc[j] += a[i + j] * b[i + j];
	for (; i < n; i++)
		s += a[i] * b[i];
	for (size_t j = 0; j < LANES; j++)
		s += acc[j];
	return s;
}

static inline float row_max(const float *restrict x, size_t n)
{
	float acc[LANES], mx = -INFINITY;
	size_t i = 0;

	for (size_t j = 0; j < LANES; j++)
		acc[j] = -INFINITY;
	for (; i + LANES <= n; i += LANES)
		for (size_t j = 0; j < LANES; j++)
			acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
	for (; i < n; i++)
		mx = x[i] > mx ? x[i] : mx;
	for (size_t j = 0; j < LANES; j++)
		mx = acc[j] > mx ? acc[j] : mx;
	return mx;
}

static inline float row_sum(const float *restrict x, size_t n)
{
	float acc[LANES] = {0}, s = 0;
	size_t i = 0;

	for (; i + LANES <= n; i += LANES)
		for (size_t j = 0; j < LANES; j++)
			acc[j] += x[i + j];
	for (; i < n; i++)
		s += x[i];
	for (size_t j = 0; j < LANES; j++)
		s += acc[j];
	return s;
}

/* y += a * x */
static inline void axpy(size_t n, float a, const float *restrict x, float *restrict y)
{
	for (size_t c = 0; c < n; c++)
		y[c] += a * x[c];
}

VECTOR_CLONES
static void k_msg_fwd(uint32_t r0, uint32_t r1, uint32_t d, const int32_t *ptr, const int32_t *adj,
		      const float *hprev, const float *hcur, const float *aq, const float *ak,
		      float *pre, float *alpha, float *m)
{
	for (uint32_t p = r0; p < r1; p++) {
		int32_t e0 = ptr[p], e1 = ptr[p + 1];
		float *mp = m + (size_t)p * d;
		float q, mx = -INFINITY, sum = 0;

		memset(mp, 0, d * sizeof(*mp));
		if (e0 == e1)
			continue;
		q = dot(aq, hprev + (size_t)p * d, d);
		for (int32_t e = e0; e < e1; e++) {
			float s = q + dot(ak, hcur + (size_t)adj[e] * d, d);

			pre[e] = s;
			s = s > 0 ? s : GNN_LEAKY_SLOPE * s;
			alpha[e] = s;
			mx = s > mx ? s : mx;
		}
		for (int32_t e = e0; e < e1; e++) {
			alpha[e] = fexp(alpha[e] - mx);
			sum += alpha[e];
		}
		for (int32_t e = e0; e < e1; e++) {
			alpha[e] /= sum;
			axpy(d, alpha[e], hcur + (size_t)adj[e] * d, mp);
		}
	}
}

VECTOR_CLONES
static void k_msg_bwd(uint32_t r0, uint32_t r1, uint32_t d, const int32_t *ptr, const int32_t *adj,
		      const float *hprev, const float *hcur, const float *aq, const float *ak,
		      const float *pre, const float *alpha, const float *dm, float *ealpha,
		      float *dhprev, float *dhcur, float *daq, float *dak)
{
	for (uint32_t p = r0; p < r1; p++) {
		int32_t e0 = ptr[p], e1 = ptr[p + 1];
		const float *dmp = dm + (size_t)p * d;
		float dq = 0, avg = 0;

		if (e0 == e1)
			continue;
		for (int32_t e = e0; e < e1; e++) {
			ealpha[e] = dot(dmp, hcur + (size_t)adj[e] * d, d);
			avg += alpha[e] * ealpha[e];
		}
		for (int32_t e = e0; e < e1; e++) {
			const float *hu = hcur + (size_t)adj[e] * d;
			float *dhu = dhcur + (size_t)adj[e] * d;
			float ds = alpha[e] * (ealpha[e] - avg);
			float dpre = pre[e] > 0 ? ds : GNN_LEAKY_SLOPE * ds;

			for (uint32_t c = 0; c < d; c++) {
				dhu[c] += alpha[e] * dmp[c] + dpre * ak[c];
				dak[c] += dpre * hu[c];
			}
			dq += dpre;
		}
		for (uint32_t c = 0; c < d; c++) {
			daq[c] += dq * hprev[(size_t)p * d + c];
			dhprev[(size_t)p * d + c] += dq * aq[c];
		}
	}
}

/* One row of the GRU cell: pre-activations (biases added) in, gates and h out. */
static inline void gru_row_fwd(size_t D, const float *restrict ir, const float *restrict iz,
			       const float *restrict in, const float *restrict hr_,
			       const float *restrict hz, const float *restrict hn,
			       const float *restrict m, float *restrict gr, float *restrict gz,
			       float *restrict gn, float *restrict h)
{
	for (size_t c = 0; c < D; c++) {
		float rr = fsigm(ir[c] + hr_[c]);
		float z = fsigm(iz[c] + hz[c]);
		float n = ftanh(in[c] + rr * hn[c]);

		gr[c] = rr;
		gz[c] = z;
		gn[c] = n;
		h[c] = (1 - z) * n + z * m[c];
	}
}

static inline void add_rows(size_t n, float *restrict y, const float *restrict b)
{
	for (size_t c = 0; c < n; c++)
		y[c] += b[c];
}

VECTOR_CLONES
static void k_gru_fwd(uint32_t rows, uint32_t d, float *gi, float *gh, const float *bi,
		      const float *bh, const float *m, float *gates, float *h)
{
	size_t D = d;

	for (size_t r = 0; r < rows; r++) {
		float *i = gi + r * 3 * D, *hh = gh + r * 3 * D, *g = gates + r * 3 * D;

		add_rows(3 * D, i, bi);
		add_rows(3 * D, hh, bh);
		gru_row_fwd(D, i, i + D, i + 2 * D, hh, hh + D, hh + 2 * D, m + r * D, g, g + D,
			    g + 2 * D, h + r * D);
	}
}

/* One row of the GRU backward (see k_gru_bwd). */
static inline void gru_row_bwd(size_t D, const float *restrict dh, const float *restrict gr,
			       const float *restrict gz, const float *restrict gn,
			       const float *restrict hn, const float *restrict m,
			       float *restrict dir, float *restrict diz, float *restrict din,
			       float *restrict dhr, float *restrict dhz, float *restrict dhn,
			       float *restrict dm)
{
	for (size_t c = 0; c < D; c++) {
		float rr = gr[c], z = gz[c], n = gn[c];
		float dn = dh[c] * (1 - z), dz = dh[c] * (m[c] - n);
		float dpn = dn * (1 - n * n);
		float dpr = dpn * hn[c] * rr * (1 - rr);
		float dpz = dz * z * (1 - z);

		dir[c] = dpr;
		diz[c] = dpz;
		din[c] = dpn;
		dhr[c] = dpr;
		dhz[c] = dpz;
		dhn[c] = dpn * rr;
		dm[c] = dh[c] * z;
	}
}

VECTOR_CLONES
static void k_gru_bwd(uint32_t rows, uint32_t d, const float *dh, const float *gates,
		      const float *gh, const float *m, float *dgi, float *dgh, float *dm)
{
	size_t D = d;

	for (size_t r = 0; r < rows; r++) {
		const float *g = gates + r * 3 * D;
		float *di = dgi + r * 3 * D, *dhh = dgh + r * 3 * D;

		gru_row_bwd(D, dh + r * D, g, g + D, g + 2 * D, gh + r * 3 * D + 2 * D, m + r * D,
			    di, di + D, di + 2 * D, dhh, dhh + D, dhh + 2 * D, dm + r * D);
	}
}

/* pool = max(pool, row) with argmax = v where row wins (strictly greater). */
static inline void max_row(size_t E, const float *restrict row, int32_t v, float *restrict pool,
			   int32_t *restrict arg)
{
	for (size_t c = 0; c < E; c++) {
		int take = row[c] > pool[c];

		pool[c] = take ? row[c] : pool[c];
		arg[c] = take ? v : arg[c];
	}
}

VECTOR_CLONES
static void k_pool_fwd(const float *e, uint32_t E, const uint32_t *job_start, uint32_t njobs,
		       float *pool, int32_t *argmax)
{
	for (uint32_t j = 0; j < njobs; j++) {
		float *pj = pool + (size_t)j * E;
		int32_t *aj = argmax + (size_t)j * E;
		uint32_t v0 = job_start[j], v1 = job_start[j + 1];

		if (v0 == v1) {
			for (uint32_t c = 0; c < E; c++) {
				pj[c] = 0;
				aj[c] = -1;
			}
			continue;
		}
		memcpy(pj, e + (size_t)v0 * E, E * sizeof(*pj));
		for (uint32_t c = 0; c < E; c++)
			aj[c] = (int32_t)v0;
		for (uint32_t v = v0 + 1; v < v1; v++)
			max_row(E, e + (size_t)v * E, (int32_t)v, pj, aj);
	}
}

static void k_pool_bwd(const float *dpool, uint32_t ld, const int32_t *jobs, uint32_t rows,
		       uint32_t E, const int32_t *argmax, float *de)
{
	for (uint32_t r = 0; r < rows; r++) {
		const int32_t *aj = argmax + (size_t)jobs[r] * E;

		for (uint32_t c = 0; c < E; c++)
			de[(size_t)aj[c] * E + c] += dpool[(size_t)r * ld + c];
	}
}

VECTOR_CLONES
static void k_softmax_fwd(float *a, uint32_t rows, uint32_t cols)
{
	for (uint32_t r = 0; r < rows; r++) {
		float *restrict x = a + (size_t)r * cols;
		float mx, inv;

		mx = row_max(x, cols);
		for (uint32_t c = 0; c < cols; c++)
			x[c] = fexp(x[c] - mx);
		inv = 1.0f / row_sum(x, cols);
		for (uint32_t c = 0; c < cols; c++)
			x[c] *= inv;
	}
}

VECTOR_CLONES
static void k_softmax_bwd(float *da, const float *a, uint32_t rows, uint32_t cols, float scale)
{
	for (uint32_t r = 0; r < rows; r++) {
		float *restrict g = da + (size_t)r * cols;
		const float *restrict x = a + (size_t)r * cols;
		float dotv = dot(g, x, cols);

		for (uint32_t c = 0; c < cols; c++)
			g[c] = scale * x[c] * (g[c] - dotv);
	}
}

VECTOR_CLONES
static void k_tanh_bias_fwd(float *y, const float *b, uint32_t rows, uint32_t cols)
{
	for (uint32_t r = 0; r < rows; r++) {
		float *restrict yr = y + (size_t)r * cols;
		const float *restrict br = b;

		for (uint32_t c = 0; c < cols; c++)
			yr[c] = ftanh(yr[c] + br[c]);
	}
}

static void k_tanh_bwd(float *dy, const float *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dy[i] *= 1 - y[i] * y[i];
}

static double k_sumsq(const float *g, size_t n, double *red)
{
	(void)red;
	double s = 0;

	for (size_t i = 0; i < n; i++)
		s += (double)g[i] * g[i];
	return s;
}

VECTOR_CLONES
static void k_adam(float *p, const float *g, float *mom1, float *mom2, size_t n, float gscale,
		   float lr, float beta1, float beta2, float eps, float bc1, float bc2)
{
	for (size_t i = 0; i < n; i++) {
		float gi = g[i] * gscale;

		mom1[i] = beta1 * mom1[i] + (1 - beta1) * gi;
		mom2[i] = beta2 * mom2[i] + (1 - beta2) * gi * gi;
		p[i] -= lr * (mom1[i] / bc1) / (sqrtf(mom2[i] / bc2) + eps);
	}
}

/* ---- the DAGNN ops over a list of units (gnn_impl.h), one after the other ---- */

static void u_msg_fwd(const struct gnn_unit *u, uint32_t n, uint32_t d)
{
	for (uint32_t i = 0; i < n; i++, u++)
		k_msg_fwd(u->r0, u->r1, d, u->ptr, u->adj, u->hprev, u->h, u->aq, u->ak, u->pre,
			  u->alpha, u->m);
}

static void u_msg_bwd(const struct gnn_unit *u, uint32_t n, uint32_t d)
{
	for (uint32_t i = 0; i < n; i++, u++)
		k_msg_bwd(u->r0, u->r1, d, u->ptr, u->adj, u->hprev, u->h, u->aq, u->ak, u->pre,
			  u->alpha, u->dm, u->ealpha, u->dhprev, u->dh, u->daq, u->dak);
}

static void u_gru_fwd(const struct gnn_unit *u, uint32_t n, uint32_t d)
{
	for (uint32_t i = 0; i < n; i++, u++) {
		size_t r0 = u->r0, D = d;

		k_gru_fwd(u->r1 - u->r0, d, u->gi + r0 * 3 * D, u->gh + r0 * 3 * D, u->bi, u->bh,
			  u->m + r0 * D, u->gates + r0 * 3 * D, u->h + r0 * D);
	}
}

static void u_gru_bwd(const struct gnn_unit *u, uint32_t n, uint32_t d)
{
	for (uint32_t i = 0; i < n; i++, u++) {
		size_t r0 = u->r0, D = d;

		k_gru_bwd(u->r1 - u->r0, d, u->dh + r0 * D, u->gates + r0 * 3 * D,
			  u->gh + r0 * 3 * D, u->m + r0 * D, u->dgi + r0 * 3 * D,
			  u->dgh + r0 * 3 * D, u->dm + r0 * D);
	}
}

static void u_bias_grad(const struct gnn_unit *u, uint32_t n, uint32_t d)
{
	for (uint32_t i = 0; i < n; i++, u++) {
		size_t r0 = u->r0;

		if (u->dbi)
			k_colsum_add(u->dbi, u->dgi + r0 * 3 * d, 3 * d, u->r1 - u->r0, 3 * d);
		if (u->dbh)
			k_colsum_add(u->dbh, u->dgh + r0 * 3 * d, 3 * d, u->r1 - u->r0, 3 * d);
	}
}

const struct gnn_kernels gnn_kernels_ref = {
	.zero = k_zero,
	.add_bias = k_add_bias,
	.colsum_add = k_colsum_add,
	.gather = k_gather,
	.scatter_add = k_scatter_add,
	.msg_fwd = u_msg_fwd,
	.msg_bwd = u_msg_bwd,
	.gru_fwd = u_gru_fwd,
	.gru_bwd = u_gru_bwd,
	.bias_grad = u_bias_grad,
	.pool_fwd = k_pool_fwd,
	.pool_bwd = k_pool_bwd,
	.softmax_fwd = k_softmax_fwd,
	.softmax_bwd = k_softmax_bwd,
	.tanh_bias_fwd = k_tanh_bias_fwd,
	.tanh_bwd = k_tanh_bwd,
	.sumsq = k_sumsq,
	.adam = k_adam,
};
