/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Plackett-Luce ranking distribution over scores (Plackett, "The
 * Analysis of Permutations", Applied Statistics 1975; Luce, "Individual
 * Choice Behavior", 1959): sampling by the Gumbel-max trick applied to a
 * whole sort (Yellott 1977; Kool et al., "Stochastic Beams and Where to Find
 * Them", ICML 2019), the log-probability of a ranking, entropy terms, and
 * their gradients w.r.t. the scores. Randomness is a caller-owned
 * xoshiro256** state (Blackman & Vigna 2018) seeded with splitmix64.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "gnn/gnn_impl.h"

/*
 * A private copy of common/rng.c's splitmix64 (loom_hash_u64() of common/hash.h
 * over a counter): gnn/ includes nothing of ours, so that it can be lifted out
 * whole. Keep the two the same.
 */
static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void gnn_rng_seed(struct gnn_rng *rng, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		rng->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/*
 * A private copy of common/rng.c's xoshiro256** step (loom_rng_u64()): gnn/
 * includes nothing of ours, not even common/, so that it can be lifted out
 * whole (docs/style.md, scripts/check-layering.py). Keep the two the same;
 * only the uniform below differs on purpose (it never returns 0).
 */
uint64_t gnn_rng_next(struct gnn_rng *rng)
{
	uint64_t *s = rng->s;
	uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

double gnn_rng_uniform(struct gnn_rng *rng)
{
	/* 53 random bits, shifted off 0: (k + 0.5) / 2^53 */
	return ((double)(gnn_rng_next(rng) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* Does key[a] go after key[b] (decreasing keys, ties by increasing index)? */
static int after(const float *key, uint32_t a, uint32_t b)
{
	return key[a] < key[b] || (key[a] == key[b] && a > b);
}

/*
 * A private copy of a binary heap's sift-down (the heap of Loom is
 * common/heap.h): gnn/ includes nothing of ours, not even common/, so that it
 * can be lifted out whole (docs/style.md, scripts/check-layering.py). The order
 * it sorts by is total (ties by index), so the permutation does not depend on
 * the sift rules.
 */
static void sift(uint32_t *h, uint32_t n, uint32_t i, const float *key)
{
	for (;;) {
		uint32_t c = 2 * i + 1, t;

		if (c >= n)
			return;
		/* min-heap w.r.t. the final order: the root is the item that goes last */
		if (c + 1 < n && after(key, h[c + 1], h[c]))
			c++;
		if (!after(key, h[c], h[i]))
			return;
		t = h[c];
		h[c] = h[i];
		h[i] = t;
		i = c;
	}
}

int gnn_pl_sample(const float *scores, uint32_t n, struct gnn_rng *rng, float *work,
		  uint32_t *ret_perm, struct gnn_err *err)
{
	if (n == 0)
		return 0;
	if (!scores || !rng || !work || !ret_perm)
		return gnn_errf(err, EINVAL, "gnn pl sample: NULL argument");
	for (uint32_t i = 0; i < n; i++) {
		if (!isfinite(scores[i]))
			return gnn_errf(err, EINVAL, "gnn pl sample: score %u is not finite", i);
		work[i] = (float)((double)scores[i] - log(-log(gnn_rng_uniform(rng))));
		ret_perm[i] = i;
	}
	/* heapsort into decreasing key order, no allocation */
	for (uint32_t i = n / 2; i-- > 0;)
		sift(ret_perm, n, i, work);
	for (uint32_t end = n; end-- > 1;) {
		uint32_t t = ret_perm[0];

		ret_perm[0] = ret_perm[end];
		ret_perm[end] = t;
		sift(ret_perm, end, 0, work);
	}
	return 0;
}

/* Checks that perm is a permutation of 0..n-1; duplicates only when mark (n floats) is given. */
static int check_perm(uint32_t n, const uint32_t *perm, float *mark, const char *what,
		      struct gnn_err *err)
{
	for (uint32_t k = 0; k < n; k++)
		if (perm[k] >= n)
			return gnn_errf(err, EINVAL, "gnn pl %s: perm[%u] = %u out of range %u",
					what, k, perm[k], n);
	if (!mark)
		return 0;
	for (uint32_t k = 0; k < n; k++)
		mark[k] = 0;
	for (uint32_t k = 0; k < n; k++) {
		if (mark[perm[k]] != 0)
			return gnn_errf(err, EINVAL, "gnn pl %s: %u appears twice in perm", what,
					perm[k]);
		mark[perm[k]] = 1;
	}
	return 0;
}

static double logaddexp(double a, double b)
{
	if (a == -INFINITY)
		return b;
	if (b == -INFINITY)
		return a;
	return a > b ? a + log1p(exp(b - a)) : b + log1p(exp(a - b));
}

int gnn_pl_logprob(const float *scores, uint32_t n, const uint32_t *perm, double *ret_logp,
		   float *ret_grad, struct gnn_err *err)
{
	return gnn_pl_logprob_top(scores, n, perm, n, ret_logp, ret_grad, err);
}

int gnn_pl_logprob_top(const float *scores, uint32_t n, const uint32_t *perm, uint32_t top,
		       double *ret_logp, float *ret_grad, struct gnn_err *err)
{
	double lp = 0, lse = -INFINITY, run = -INFINITY;
	int r;

	if (!ret_logp || (n && (!scores || !perm)))
		return gnn_errf(err, EINVAL, "gnn pl logprob: NULL argument");
	if ((r = check_perm(n, perm, ret_grad, "logprob", err)) < 0)
		return r;
	if (top == 0 || top > n)
		top = n;
	/* suffix logsumexp LSE_k, from the back; only the first top steps count */
	for (uint32_t k = n; k-- > 0;) {
		double s = scores[perm[k]];

		lse = logaddexp(lse, s);
		if (k < top)
			lp += s - lse;
		if (ret_grad)
			ret_grad[perm[k]] = (float)lse; /* LSE_k, read below */
	}
	*ret_logp = lp;
	/*
	 * d logP / d s_i = [pos(i) < top] - sum_{k <= min(pos(i), top - 1)}
	 * exp(s_i - LSE_k) = [pos(i) < top] - exp(s_i + run), run = log sum of
	 * exp(-LSE_k) over those k; every term is <= 1.
	 */
	for (uint32_t k = 0; ret_grad && k < n; k++) {
		uint32_t i = perm[k];

		if (k < top) {
			run = logaddexp(run, -(double)ret_grad[i]);
			ret_grad[i] = (float)(1 - exp((double)scores[i] + run));
		} else {
			ret_grad[i] = (float)-exp((double)scores[i] + run);
		}
	}
	return 0;
}

static int entropy_first(const float *scores, uint32_t n, double *ret_h, float *ret_grad)
{
	double mx = -INFINITY, z = 0, h = 0, lz;

	for (uint32_t i = 0; i < n; i++)
		if (scores[i] > mx)
			mx = scores[i];
	for (uint32_t i = 0; i < n; i++)
		z += exp(scores[i] - mx);
	lz = mx + log(z);
	for (uint32_t i = 0; i < n; i++) {
		double lp = scores[i] - lz;

		h -= exp(lp) * lp;
	}
	*ret_h = h;
	for (uint32_t i = 0; ret_grad && i < n; i++) {
		double lp = scores[i] - lz;

		ret_grad[i] = (float)(-exp(lp) * (lp + h));
	}
	return 0;
}

/*
 * Step k chooses among R_k = perm[k..n) with p_kj = exp(s_j - LSE_k); its
 * entropy is H_k = LSE_k - A_k with A_k = sum_{j in R_k} p_kj s_j. A backward
 * sweep gives LSE_k and A_k by the stable recursions LSE_k = logaddexp(s_k,
 * LSE_{k+1}) and A_k = p_kk s_k + (1 - p_kk) A_{k+1}. The gradient of
 * sum_k H_k w.r.t. s_i is -sum_{k <= pos(i)} p_ki (s_i - A_k) = -exp(s_i +
 * run) (s_i + mean), where run = log sum_{k <= pos(i)} exp(-LSE_k) and mean is
 * the exp(-LSE_k)-weighted mean of -A_k, accumulated front to back.
 */
static void entropy_seq(const float *scores, uint32_t n, const uint32_t *perm, double *ret_h,
			float *g, float *work)
{
	double lse = -INFINITY, a = 0, h = 0, run = -INFINITY, mean = 0;

	for (uint32_t k = n; k-- > 0;) {
		double s = scores[perm[k]], p;

		lse = logaddexp(lse, s);
		p = exp(s - lse);
		a = p * s + (1 - p) * a;
		h += lse - a;
		if (g) {
			g[perm[k]] = (float)lse;
			work[k] = (float)a;
		}
	}
	*ret_h = h;
	for (uint32_t k = 0; g && k < n; k++) {
		uint32_t i = perm[k];
		double s = scores[i], lse_k = g[i], nrun = logaddexp(run, -lse_k);

		mean = (run == -INFINITY ? 0 : mean * exp(run - nrun)) -
		       (double)work[k] * exp(-lse_k - nrun);
		run = nrun;
		g[i] = (float)(-exp(s + run) * (s + mean));
	}
}

int gnn_pl_entropy(const float *scores, uint32_t n, const uint32_t *perm,
		   enum gnn_pl_entropy_kind kind, float *work, double *ret_h, float *ret_grad,
		   struct gnn_err *err)
{
	int r;

	if (!ret_h || (n && !scores))
		return gnn_errf(err, EINVAL, "gnn pl entropy: NULL argument");
	if (kind != GNN_PL_ENTROPY_FIRST && kind != GNN_PL_ENTROPY_SEQ)
		return gnn_errf(err, EINVAL, "gnn pl entropy: unknown kind %d", (int)kind);
	if (n == 0) {
		*ret_h = 0;
		return 0;
	}
	if (kind == GNN_PL_ENTROPY_FIRST)
		return entropy_first(scores, n, ret_h, ret_grad);
	if (!perm || (ret_grad && !work))
		return gnn_errf(err, EINVAL,
				"gnn pl entropy: the sequential entropy needs perm (and work "
				"for a gradient)");
	if ((r = check_perm(n, perm, ret_grad, "entropy", err)) < 0)
		return r;
	entropy_seq(scores, n, perm, ret_h, ret_grad, work);
	return 0;
}
