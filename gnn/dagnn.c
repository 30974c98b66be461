/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DAGNN part of gnn/ and the forward/backward entry points: batch
 * validation, the workspace, topological levels in both directions, and the
 * plain and wavefront-pipelined evaluation of the layers with their backward.
 *
 * Implements DAGNN (Thost & Chen, "Directed Acyclic Graph Neural Networks",
 * ICLR 2021) with a non-linear LeakyReLU(0.2) attention score and a GRU
 * combine; the exact layer is written out in gnn.h. Work unit (dir, l, k) is
 * layer l of one direction on the nodes of level k (contiguous rows in that
 * direction's order). Plain mode: per direction and layer, one GEMM of the
 * input weights over all rows, then per level the message, one GEMM of the
 * hidden weights, the gates. Pipelined mode: per wavefront w = l + k, all
 * units of both directions: messages, one grouped GEMM call (two problems
 * per unit), gates. Backward runs the same schedules in reverse; a unit's
 * output gradient is complete when it runs because only units (l + 1, k) and
 * (l, > k) add to it, and they lie on later wavefronts (later levels).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gnn/gnn_impl.h"

struct carve {
	char *base;
	size_t off;
};

static void *take(struct carve *c, size_t n, size_t elem)
{
	size_t o = (c->off + GNN_ALIGN - 1) / GNN_ALIGN * GNN_ALIGN;

	c->off = o + n * elem;
	return c->base ? c->base + o : NULL;
}

#define TAKE_F(c, n) ((float *)take((c), (n), sizeof(float)))
#define TAKE_I(c, n) ((int32_t *)take((c), (n), sizeof(int32_t)))

/*
 * The workspace comes in two parts. The host part holds what gnn_prepare()
 * builds on the CPU: validation scratch, topological levels, the level
 * orders and the CSR adjacency. The device part (backend memory) holds every
 * activation and the copies of the index arrays that kernels read. On a
 * host-memory backend the copies are the host arrays themselves.
 */

/* Assigns the host part's pointers from c (sizes only when c->base is NULL). */
static void layout_host(struct gnn_model *m, struct carve *c, uint32_t N, uint32_t E, uint32_t J,
			uint32_t n)
{
	m->h_jstart = (uint32_t *)take(c, (size_t)J + 1, sizeof(uint32_t));
	m->h_job_of = TAKE_I(c, N);
	m->h_sched = TAKE_I(c, n);
	m->h_sched_job = TAKE_I(c, n);
	/* pred CSR, succ CSR (node-indexed), topological queue, counters, two level arrays */
	m->scratch = TAKE_I(c, 2 * ((size_t)N + 1) + 2 * (size_t)E + 4 * (size_t)N);
	for (int dir = 0; dir < 2; dir++) {
		struct gnn_dir *dr = &m->dir[dir];

		dr->h_order = TAKE_I(c, N);
		dr->h_pos = TAKE_I(c, N);
		dr->level_start = TAKE_I(c, (size_t)N + 1);
		dr->h_ptr = TAKE_I(c, (size_t)N + 1);
		dr->h_adj = TAKE_I(c, E);
	}
}

/* Assigns the device part's pointers from c (sizes only when c->base is NULL). */
static void layout_dev(struct gnn_model *m, struct carve *c, uint32_t N, uint32_t E, uint32_t J,
		       uint32_t n)
{
	const struct gnn_config *g = &m->cfg;
	size_t d = g->hidden, L = g->layers, D = 2 * (size_t)g->emb, cat = 2 * L * d;
	size_t F = m->fold ? g->nfeatures : 0; /* the folded layer 1's arrays */
	bool copies = !m->be->host_memory;

	m->x = TAKE_F(c, (size_t)N * g->nfeatures);
	m->h0 = TAKE_F(c, N * d);
	m->dh0 = TAKE_F(c, N * d);
	m->zcat = TAKE_F(c, N * cat);
	m->dzcat = TAKE_F(c, N * cat);
	m->e = TAKE_F(c, (size_t)N * g->emb);
	m->de = TAKE_F(c, (size_t)N * g->emb);
	m->pool = TAKE_F(c, (size_t)J * g->emb);
	m->argmax = TAKE_I(c, (size_t)J * g->emb);
	m->us = TAKE_F(c, n * D);
	m->qkv = TAKE_F(c, n * 3 * D);
	m->dqkv = TAKE_F(c, n * 3 * D);
	m->att = TAKE_F(c, (size_t)g->heads * n * n);
	m->datt = TAKE_F(c, (size_t)g->heads * n * n);
	m->o = TAKE_F(c, n * D);
	m->dout = TAKE_F(c, n * D);
	m->y = TAKE_F(c, n * D);
	m->dy = TAKE_F(c, n * D);
	m->t = TAKE_F(c, (size_t)n * g->mlp_hidden);
	m->dt = TAKE_F(c, (size_t)n * g->mlp_hidden);
	m->s = TAKE_F(c, n);
	m->ds = TAKE_F(c, n);
	m->jstart = copies ? (uint32_t *)take(c, (size_t)J + 1, sizeof(uint32_t)) : m->h_jstart;
	m->sched = copies ? TAKE_I(c, n) : m->h_sched;
	m->sched_job = copies ? TAKE_I(c, n) : m->h_sched_job;
	for (int dir = 0; dir < 2; dir++) {
		struct gnn_dir *dr = &m->dir[dir];

		dr->order = copies ? TAKE_I(c, N) : dr->h_order;
		dr->pos = copies ? TAKE_I(c, N) : dr->h_pos;
		dr->ptr = copies ? TAKE_I(c, (size_t)N + 1) : dr->h_ptr;
		dr->adj = copies ? TAKE_I(c, E) : dr->h_adj;
		dr->x = TAKE_F(c, N * F);
		dr->wf = TAKE_F(c, 3 * d * F);
		dr->bf = TAKE_F(c, F ? 3 * d : 0);
		for (size_t l = 0; l <= L; l++) {
			struct gnn_layer_act *a = &dr->act[l];

			memset(a, 0, sizeof(*a));
			a->h = TAKE_F(c, N * d);
			a->dh = TAKE_F(c, N * d);
			if (l == 0)
				continue;
			a->m = TAKE_F(c, N * d);
			a->dm = TAKE_F(c, N * d);
			a->gi = TAKE_F(c, N * 3 * d);
			a->gh = TAKE_F(c, N * 3 * d);
			a->gates = TAKE_F(c, N * 3 * d);
			a->dgi = TAKE_F(c, N * 3 * d);
			a->dgh = TAKE_F(c, N * 3 * d);
			a->pre = TAKE_F(c, E);
			a->alpha = TAKE_F(c, E);
			a->ealpha = TAKE_F(c, E);
		}
	}
}

/* Checks what can be checked without memory. */
static int check_batch(const struct gnn_model *m, const struct gnn_batch *b, const uint32_t *sched,
		       uint32_t nsched, struct gnn_err *err)
{
	if (!b)
		return gnn_errf(err, EINVAL, "gnn batch: NULL");
	if (b->nfeatures != m->cfg.nfeatures)
		return gnn_errf(err, EINVAL, "gnn batch: %u features per node, the model takes %u",
				b->nfeatures, m->cfg.nfeatures);
	if (b->nnodes > GNN_MAX_NODES || b->nedges > GNN_MAX_EDGES || b->njobs > GNN_MAX_NODES)
		return gnn_errf(err, EINVAL,
				"gnn batch: %u nodes, %u edges, %u jobs: limits %u, %u, %u",
				b->nnodes, b->nedges, b->njobs, GNN_MAX_NODES, GNN_MAX_EDGES,
				GNN_MAX_NODES);
	if (nsched > b->nnodes)
		return gnn_errf(err, EINVAL, "gnn batch: %u schedulable nodes of %u", nsched,
				b->nnodes);
	if ((b->nnodes && !b->features) || !b->job_start || (b->nedges && !b->edges) ||
	    (nsched && !sched))
		return gnn_errf(err, EINVAL, "gnn batch: NULL array");
	if (b->job_start[0] != 0 || b->job_start[b->njobs] != b->nnodes)
		return gnn_errf(
			err, EINVAL,
			"gnn batch: job_start must run from 0 to nnodes = %u (got %u .. %u)",
			b->nnodes, b->job_start[0], b->job_start[b->njobs]);
	for (uint32_t j = 0; j < b->njobs; j++)
		if (b->job_start[j + 1] < b->job_start[j])
			return gnn_errf(err, EINVAL, "gnn batch: job_start decreases at job %u", j);
	for (uint32_t i = 0; i < b->nedges; i++)
		if (b->edges[2 * i] >= b->nnodes || b->edges[2 * i + 1] >= b->nnodes)
			return gnn_errf(err, EINVAL,
					"gnn batch: edge %u (%u -> %u) out of range %u", i,
					b->edges[2 * i], b->edges[2 * i + 1], b->nnodes);
	for (uint32_t i = 0; i < nsched; i++)
		if (sched[i] >= b->nnodes)
			return gnn_errf(
				err, EINVAL,
				"gnn batch: schedulable index %u (entry %u) out of range %u",
				sched[i], i, b->nnodes);
	return 0;
}

/* Node-indexed CSR of edges (src -> dst when fwd, else dst -> src). */
static void build_csr(uint32_t N, uint32_t E, const uint32_t *edges, int by_dst, int32_t *ptr,
		      int32_t *adj, int32_t *cnt)
{
	memset(ptr, 0, ((size_t)N + 1) * sizeof(*ptr));
	for (uint32_t i = 0; i < E; i++)
		ptr[edges[2 * i + (by_dst ? 1 : 0)] + 1]++;
	for (uint32_t v = 0; v < N; v++)
		ptr[v + 1] += ptr[v];
	memcpy(cnt, ptr, (size_t)N * sizeof(*cnt));
	for (uint32_t i = 0; i < E; i++) {
		uint32_t key = edges[2 * i + (by_dst ? 1 : 0)];
		uint32_t other = edges[2 * i + (by_dst ? 0 : 1)];

		adj[cnt[key]++] = (int32_t)other;
	}
}

/* Orders the nodes of dr by level (stable) and rebuilds nptr/nadj in position space. */
static void order_dir(struct gnn_dir *dr, uint32_t N, const int32_t *level, const int32_t *nptr,
		      const int32_t *nadj, int32_t *cnt)
{
	uint32_t nl = 0;

	for (uint32_t v = 0; v < N; v++)
		if ((uint32_t)level[v] + 1 > nl)
			nl = (uint32_t)level[v] + 1;
	dr->nlevels = nl;
	memset(dr->level_start, 0, ((size_t)nl + 1) * sizeof(int32_t));
	for (uint32_t v = 0; v < N; v++)
		dr->level_start[level[v] + 1]++;
	for (uint32_t k = 0; k < nl; k++)
		dr->level_start[k + 1] += dr->level_start[k];
	memcpy(cnt, dr->level_start, (size_t)nl * sizeof(*cnt));
	for (uint32_t v = 0; v < N; v++) {
		int32_t p = cnt[level[v]]++;

		dr->h_order[p] = (int32_t)v;
		dr->h_pos[v] = p;
	}
	dr->h_ptr[0] = 0;
	for (uint32_t p = 0; p < N; p++) {
		int32_t v = dr->h_order[p], o = dr->h_ptr[p];

		for (int32_t e = nptr[v]; e < nptr[v + 1]; e++)
			dr->h_adj[o++] = dr->h_pos[nadj[e]];
		dr->h_ptr[p + 1] = o;
	}
}

/* Grows both parts of the workspace to fit the batch; 0 or -ENOMEM. */
static int grow(struct gnn_model *m, uint32_t N, uint32_t E, uint32_t J, uint32_t n,
		struct gnn_err *err)
{
	struct carve h = {0}, dv = {0};

	layout_host(m, &h, N, E, J, n);
	if (h.off > m->hws_cap) {
		free(m->hws);
		m->hws_cap = 0;
		if (posix_memalign(&m->hws, GNN_ALIGN, h.off) != 0) {
			m->hws = NULL;
			return gnn_errf(err, ENOMEM,
					"gnn: out of memory for a %zu-byte host workspace", h.off);
		}
		m->hws_cap = h.off;
	}
	h = (struct carve){.base = m->hws};
	layout_host(m, &h, N, E, J, n);
	layout_dev(m, &dv, N, E, J, n);
	if (dv.off > m->ws_cap) {
		if (m->ws)
			m->be->mem_free(m->ctx, m->ws);
		m->ws_cap = 0;
		m->ws = m->be->mem_alloc(m->ctx, dv.off);
		if (!m->ws)
			return gnn_errf(err, ENOMEM,
					"gnn: out of %s memory for a %zu-byte workspace",
					m->be->name, dv.off);
		m->ws_cap = dv.off;
	}
	dv = (struct carve){.base = m->ws};
	layout_dev(m, &dv, N, E, J, n);
	return 0;
}

/* Copies the index arrays built on the host and the features to the backend. */
static void upload(struct gnn_model *m, const struct gnn_batch *b)
{
	const struct gnn_backend_class *be = m->be;
	size_t N = m->N, E = m->nedges, I = sizeof(int32_t);

	if (N)
		be->copy_to_dev(m->ctx, m->x, b->features, N * b->nfeatures * sizeof(float));
	if (be->host_memory)
		return;
	be->copy_to_dev(m->ctx, m->jstart, m->h_jstart, ((size_t)m->njobs + 1) * I);
	be->copy_to_dev(m->ctx, m->sched, m->h_sched, (size_t)m->nsched * I);
	be->copy_to_dev(m->ctx, m->sched_job, m->h_sched_job, (size_t)m->nsched * I);
	for (int dir = 0; dir < 2; dir++) {
		struct gnn_dir *dr = &m->dir[dir];

		be->copy_to_dev(m->ctx, dr->order, dr->h_order, N * I);
		be->copy_to_dev(m->ctx, dr->pos, dr->h_pos, N * I);
		be->copy_to_dev(m->ctx, dr->ptr, dr->h_ptr, (N + 1) * I);
		be->copy_to_dev(m->ctx, dr->adj, dr->h_adj, E * I);
	}
}

int gnn_prepare(struct gnn_model *m, const struct gnn_batch *b, const uint32_t *sched,
		uint32_t nsched, struct gnn_err *err)
{
	uint32_t N, E;
	int32_t *pptr, *padj, *sptr, *sadj, *queue, *cnt, *lv0, *lv1;
	uint32_t head = 0, tail = 0;
	int r;

	m->have_fwd = false;
	if ((r = check_batch(m, b, sched, nsched, err)) < 0)
		return r;
	N = b->nnodes;
	E = b->nedges;
	if ((r = grow(m, N, E, b->njobs, nsched, err)) < 0)
		return r;
	m->N = N;
	m->nedges = E;
	m->njobs = b->njobs;
	m->nsched = nsched;
	memcpy(m->h_jstart, b->job_start, ((size_t)b->njobs + 1) * sizeof(uint32_t));
	for (uint32_t j = 0; j < b->njobs; j++)
		for (uint32_t v = b->job_start[j]; v < b->job_start[j + 1]; v++)
			m->h_job_of[v] = (int32_t)j;
	for (uint32_t i = 0; i < E; i++) {
		uint32_t s = b->edges[2 * i], t = b->edges[2 * i + 1];

		if (m->h_job_of[s] != m->h_job_of[t])
			return gnn_errf(err, EINVAL,
					"gnn batch: edge %u (%u -> %u) joins jobs %d and %d", i, s,
					t, m->h_job_of[s], m->h_job_of[t]);
	}
	pptr = m->scratch;
	padj = pptr + N + 1;
	sptr = padj + E;
	sadj = sptr + N + 1;
	queue = sadj + E;
	cnt = queue + N;
	lv0 = cnt + N;
	lv1 = lv0 + N;
	for (uint32_t v = 0; v < N; v++)
		cnt[v] = 0;
	for (uint32_t i = 0; i < nsched; i++) {
		if (cnt[sched[i]]++)
			return gnn_errf(err, EINVAL, "gnn batch: schedulable node %u listed twice",
					sched[i]);
		m->h_sched[i] = (int32_t)sched[i];
		m->h_sched_job[i] = m->h_job_of[sched[i]];
	}
	build_csr(N, E, b->edges, 1, pptr, padj, cnt);
	build_csr(N, E, b->edges, 0, sptr, sadj, cnt);
	/*
	 * Kahn: forward levels in topological order, then reverse levels backwards.
	 * A private copy of common/dag.c's walk (loom_dag_order()): gnn/ includes
	 * nothing of ours, not even common/, so that it can be lifted out whole
	 * (docs/style.md, scripts/check-layering.py).
	 */
	for (uint32_t v = 0; v < N; v++) {
		cnt[v] = pptr[v + 1] - pptr[v];
		lv0[v] = 0;
		if (cnt[v] == 0)
			queue[tail++] = (int32_t)v;
	}
	while (head < tail) {
		int32_t v = queue[head++];

		for (int32_t e = sptr[v]; e < sptr[v + 1]; e++) {
			int32_t w = sadj[e];

			if (lv0[v] + 1 > lv0[w])
				lv0[w] = lv0[v] + 1;
			if (--cnt[w] == 0)
				queue[tail++] = w;
		}
	}
	if (tail != N) {
		for (uint32_t v = 0; v < N; v++)
			if (cnt[v] > 0)
				return gnn_errf(err, EINVAL,
						"gnn batch: the edges have a cycle (through node "
						"%u, job %d)",
						v, m->h_job_of[v]);
	}
	for (uint32_t i = N; i-- > 0;) {
		int32_t v = queue[i];

		lv1[v] = 0;
		for (int32_t e = sptr[v]; e < sptr[v + 1]; e++)
			if (lv1[sadj[e]] + 1 > lv1[v])
				lv1[v] = lv1[sadj[e]] + 1;
	}
	order_dir(&m->dir[0], N, lv0, pptr, padj, cnt);
	order_dir(&m->dir[1], N, lv1, sptr, sadj, cnt);
	upload(m, b);
	return 0;
}

void gnn_gemm1(struct gnn_model *m, bool ta, bool tb, uint32_t M, uint32_t N, uint32_t K,
	       float alpha, const float *a, uint32_t lda, const float *b, uint32_t ldb, float beta,
	       float *c, uint32_t ldc)
{
	struct gnn_gemm g = gnn_gemm_of(ta, tb, M, N, K, a, lda, b, ldb, beta, c, ldc);

	if (M == 0 || N == 0)
		return;
	g.alpha = alpha;
	m->be->gemm_batch(m->ctx, &g, 1);
}

/* A work unit: direction, layer (1-based), level, and its rows [r0, r1) in dir order. */
struct unit {
	int dir;
	uint32_t l, r0, r1;
};

/* Lists the units on wavefront w (l + k == w) of both directions; returns how many. */
static uint32_t wavefront(const struct gnn_model *m, uint32_t w, struct unit *u)
{
	uint32_t n = 0;

	for (int dir = 0; dir < 2; dir++) {
		const struct gnn_dir *dr = &m->dir[dir];

		for (uint32_t l = 1; l <= m->cfg.layers; l++) {
			if (w < l || w - l >= dr->nlevels)
				continue;
			u[n++] = (struct unit){.dir = dir,
					       .l = l,
					       .r0 = (uint32_t)dr->level_start[w - l],
					       .r1 = (uint32_t)dr->level_start[w - l + 1]};
		}
	}
	return n;
}

/* The kernels' view of a unit (struct gnn_unit). */
static struct gnn_unit unit_io(struct gnn_model *m, const struct unit *u)
{
	struct gnn_dir *dr = &m->dir[u->dir];
	struct gnn_layer_act *a = &dr->act[u->l], *p = &dr->act[u->l - 1];
	uint32_t t = gnn_tidx_layer(m, u->dir, u->l, 0);

	return (struct gnn_unit){
		.r0 = u->r0,
		.r1 = u->r1,
		.ptr = dr->ptr,
		.adj = dr->adj,
		.hprev = p->h,
		.aq = gnn_pv(m, t + GNN_T_AQ),
		.ak = gnn_pv(m, t + GNN_T_AK),
		.bi = u->l == 1 && m->fold ? dr->bf : gnn_pv(m, t + GNN_T_BI),
		.bh = gnn_pv(m, t + GNN_T_BH),
		.h = a->h,
		.m = a->m,
		.pre = a->pre,
		.alpha = a->alpha,
		.gi = a->gi,
		.gh = a->gh,
		.gates = a->gates,
		.dh = a->dh,
		.dm = a->dm,
		.dgi = a->dgi,
		.dgh = a->dgh,
		.ealpha = a->ealpha,
		.dhprev = p->dh,
		.daq = gnn_pg(m, t + GNN_T_AQ),
		.dak = gnn_pg(m, t + GNN_T_AK),
		.dbi = gnn_pg(m, t + GNN_T_BI),
		.dbh = gnn_pg(m, t + GNN_T_BH),
	};
}

/* The GEMM of a unit's input (hidden when hid) weights: rows [r0, r1) of gi (gh). */
static struct gnn_gemm unit_gemm_fwd(struct gnn_model *m, int dir, uint32_t l, uint32_t r0,
				     uint32_t r1, bool hid)
{
	struct gnn_layer_act *a = &m->dir[dir].act[l];
	uint32_t d = m->cfg.hidden, F = m->cfg.nfeatures;
	const float *x = hid ? a->m : m->dir[dir].act[l - 1].h;
	const float *w = gnn_pv(m, gnn_tidx_layer(m, dir, l, hid ? GNN_T_WH : GNN_T_WI));

	if (!hid && l == 1 && m->fold)
		return gnn_gemm_of(false, true, r1 - r0, 3 * d, F, m->dir[dir].x + (size_t)r0 * F,
				   F, m->dir[dir].wf, F, 0, a->gi + (size_t)r0 * 3 * d, 3 * d);
	return gnn_gemm_of(false, true, r1 - r0, 3 * d, d, x + (size_t)r0 * d, d, w, d, 0,
			   (hid ? a->gh : a->gi) + (size_t)r0 * 3 * d, 3 * d);
}

/* Sets up each direction's folded layer-1 input: x in dir order, wf and bf (struct gnn_dir). */
static void fold_layer1(struct gnn_model *m)
{
	uint32_t d = m->cfg.hidden, F = m->cfg.nfeatures;

	for (int dir = 0; dir < 2; dir++) {
		struct gnn_dir *dr = &m->dir[dir];
		const float *wi = gnn_pv(m, gnn_tidx_layer(m, dir, 1, GNN_T_WI));

		m->gemms[2 * dir] = gnn_gemm_of(false, false, 3 * d, F, d, wi, d,
						gnn_pv(m, GNN_TI_IN_W), F, 0, dr->wf, F);
		m->gemms[2 * dir + 1] = gnn_gemm_of(false, true, 1, 3 * d, d,
						    gnn_pv(m, GNN_TI_IN_B), d, wi, d, 0, dr->bf,
						    3 * d);
	}
	m->be->gemm_batch(m->ctx, m->gemms, 4);
	for (int dir = 0; dir < 2; dir++) {
		struct gnn_dir *dr = &m->dir[dir];

		m->k->add_bias(dr->bf, 3 * d, gnn_pv(m, gnn_tidx_layer(m, dir, 1, GNN_T_BI)), 1,
			       3 * d);
		m->k->gather(dr->x, F, m->x, F, dr->order, m->N, F);
	}
}

static uint32_t nwavefronts(const struct gnn_model *m)
{
	uint32_t k = m->dir[0].nlevels > m->dir[1].nlevels ? m->dir[0].nlevels : m->dir[1].nlevels;

	return m->cfg.layers + k - 1;
}

void gnn_dagnn_forward(struct gnn_model *m)
{
	const struct gnn_config *g = &m->cfg;
	uint32_t N = m->N, d = g->hidden, L = g->layers, cat = 2 * L * d;
	struct unit units[2 * GNN_MAX_LAYERS];
	struct gnn_unit io[2 * GNN_MAX_LAYERS];

	if (N == 0)
		return;
	gnn_gemm1(m, false, true, N, d, g->nfeatures, 1, m->x, g->nfeatures, gnn_pv(m, GNN_TI_IN_W),
		  g->nfeatures, 0, m->h0, d);
	m->k->add_bias(m->h0, d, gnn_pv(m, GNN_TI_IN_B), N, d);
	for (int dir = 0; dir < 2; dir++)
		m->k->gather(m->dir[dir].act[0].h, d, m->h0, d, m->dir[dir].order, N, d);
	if (m->fold)
		fold_layer1(m);

	if (g->pipelined) {
		uint32_t nw = nwavefronts(m);

		for (uint32_t w = 1; w <= nw; w++) {
			uint32_t nu = wavefront(m, w, units), ng = 0;

			for (uint32_t i = 0; i < nu; i++) {
				io[i] = unit_io(m, &units[i]);
				m->gemms[ng++] = unit_gemm_fwd(m, units[i].dir, units[i].l,
							       units[i].r0, units[i].r1, false);
				m->gemms[ng++] = unit_gemm_fwd(m, units[i].dir, units[i].l,
							       units[i].r0, units[i].r1, true);
			}
			m->k->msg_fwd(io, nu, d);
			m->be->gemm_batch(m->ctx, m->gemms, ng);
			m->k->gru_fwd(io, nu, d);
		}
	} else {
		for (int dir = 0; dir < 2; dir++) {
			struct gnn_dir *dr = &m->dir[dir];

			for (uint32_t l = 1; l <= L; l++) {
				m->gemms[0] = unit_gemm_fwd(m, dir, l, 0, N, false);
				m->be->gemm_batch(m->ctx, m->gemms, 1);
				for (uint32_t k = 0; k < dr->nlevels; k++) {
					struct unit u = {.dir = dir,
							 .l = l,
							 .r0 = (uint32_t)dr->level_start[k],
							 .r1 = (uint32_t)dr->level_start[k + 1]};

					io[0] = unit_io(m, &u);
					m->k->msg_fwd(io, 1, d);
					m->gemms[0] = unit_gemm_fwd(m, dir, l, u.r0, u.r1, true);
					m->be->gemm_batch(m->ctx, m->gemms, 1);
					m->k->gru_fwd(io, 1, d);
				}
			}
		}
	}
	for (int dir = 0; dir < 2; dir++)
		for (uint32_t l = 1; l <= L; l++)
			m->k->gather(m->zcat + ((size_t)dir * L + l - 1) * d, cat,
				     m->dir[dir].act[l].h, d, m->dir[dir].pos, N, d);
}

/* Appends the hidden-weight GEMMs of a unit (dM += dGH Wh, gWh += dGH^T M). */
static uint32_t unit_gemm_bwd_hid(struct gnn_model *m, const struct unit *u, struct gnn_gemm *g)
{
	struct gnn_layer_act *a = &m->dir[u->dir].act[u->l];
	uint32_t d = m->cfg.hidden, R = u->r1 - u->r0,
		 t = gnn_tidx_layer(m, u->dir, u->l, GNN_T_WH);
	size_t r0 = u->r0;

	g[0] = gnn_gemm_of(false, false, R, d, 3 * d, a->dgh + r0 * 3 * d, 3 * d, gnn_pv(m, t), d,
			   1, a->dm + r0 * d, d);
	g[1] = gnn_gemm_of(true, false, 3 * d, d, R, a->dgh + r0 * 3 * d, 3 * d, a->m + r0 * d, d,
			   1, gnn_pg(m, t), d);
	return 2;
}

/* Appends the input-weight GEMMs of a unit (dHprev += dGI Wi, gWi += dGI^T Hprev). */
static uint32_t unit_gemm_bwd_in(struct gnn_model *m, const struct unit *u, struct gnn_gemm *g)
{
	struct gnn_layer_act *a = &m->dir[u->dir].act[u->l];
	struct gnn_layer_act *p = &m->dir[u->dir].act[u->l - 1];
	uint32_t d = m->cfg.hidden, R = u->r1 - u->r0,
		 t = gnn_tidx_layer(m, u->dir, u->l, GNN_T_WI);
	size_t r0 = u->r0;

	g[0] = gnn_gemm_of(false, false, R, d, 3 * d, a->dgi + r0 * 3 * d, 3 * d, gnn_pv(m, t), d,
			   1, p->dh + r0 * d, d);
	g[1] = gnn_gemm_of(true, false, 3 * d, d, R, a->dgi + r0 * 3 * d, 3 * d, p->h + r0 * d, d,
			   1, gnn_pg(m, t), d);
	return 2;
}

void gnn_dagnn_backward(struct gnn_model *m)
{
	const struct gnn_config *g = &m->cfg;
	uint32_t N = m->N, d = g->hidden, L = g->layers, cat = 2 * L * d;
	struct unit units[2 * GNN_MAX_LAYERS];
	struct gnn_unit io[2 * GNN_MAX_LAYERS];

	if (N == 0)
		return;
	/* dh of layer l >= 1 starts as its share of dzcat, in dir order; layer 0's from zero */
	for (int dir = 0; dir < 2; dir++) {
		m->k->zero(m->dir[dir].act[0].dh, (size_t)N * d);
		for (uint32_t l = 1; l <= L; l++)
			m->k->gather(m->dir[dir].act[l].dh, d,
				     m->dzcat + ((size_t)dir * L + l - 1) * d, cat,
				     m->dir[dir].order, N, d);
	}

	if (g->pipelined) {
		for (uint32_t w = nwavefronts(m); w >= 1; w--) {
			uint32_t nu = wavefront(m, w, units), ng = 0;

			for (uint32_t i = 0; i < nu; i++) {
				io[i] = unit_io(m, &units[i]);
				ng += unit_gemm_bwd_hid(m, &units[i], m->gemms + ng);
				ng += unit_gemm_bwd_in(m, &units[i], m->gemms + ng);
			}
			m->k->gru_bwd(io, nu, d);
			m->be->gemm_batch(m->ctx, m->gemms, ng);
			m->k->bias_grad(io, nu, d);
			m->k->msg_bwd(io, nu, d);
		}
	} else {
		for (int dir = 0; dir < 2; dir++) {
			struct gnn_dir *dr = &m->dir[dir];

			for (uint32_t l = L; l >= 1; l--) {
				struct unit all = {.dir = dir, .l = l, .r0 = 0, .r1 = N};

				for (uint32_t k = dr->nlevels; k-- > 0;) {
					struct unit u = {.dir = dir,
							 .l = l,
							 .r0 = (uint32_t)dr->level_start[k],
							 .r1 = (uint32_t)dr->level_start[k + 1]};

					io[0] = unit_io(m, &u);
					io[0].dbi = NULL; /* added once over all rows, below */
					m->k->gru_bwd(io, 1, d);
					m->be->gemm_batch(m->ctx, m->gemms,
							  unit_gemm_bwd_hid(m, &u, m->gemms));
					m->k->bias_grad(io, 1, d);
					m->k->msg_bwd(io, 1, d);
				}
				m->be->gemm_batch(m->ctx, m->gemms,
						  unit_gemm_bwd_in(m, &all, m->gemms));
				io[0] = unit_io(m, &all);
				io[0].dbh = NULL;
				m->k->bias_grad(io, 1, d);
			}
		}
	}
	/* dh0 in node order: the forward direction's share, plus the reverse one's */
	m->k->gather(m->dh0, d, m->dir[0].act[0].dh, d, m->dir[0].pos, N, d);
	m->k->scatter_add(m->dh0, d, m->dir[1].act[0].dh, d, m->dir[1].order, N, d);
	gnn_gemm1(m, true, false, d, g->nfeatures, N, 1, m->dh0, d, m->x, g->nfeatures, 1,
		  gnn_pg(m, GNN_TI_IN_W), g->nfeatures);
	m->k->colsum_add(gnn_pg(m, GNN_TI_IN_B), m->dh0, d, N, d);
}

int gnn_forward(struct gnn_model *m, const struct gnn_batch *b, const uint32_t *sched,
		uint32_t nsched, float *ret_scores, struct gnn_err *err)
{
	int r;

	if (nsched && !ret_scores)
		return gnn_errf(err, EINVAL, "gnn forward: NULL scores");
	if ((r = gnn_prepare(m, b, sched, nsched, err)) < 0)
		return r;
	gnn_dagnn_forward(m);
	gnn_head_forward(m);
	if (nsched)
		m->be->copy_to_host(m->ctx, ret_scores, m->s, (size_t)nsched * sizeof(float));
	if ((r = m->be->sync(m->ctx, err)) < 0)
		return r;
	m->have_fwd = true;
	return 0;
}

int gnn_backward(struct gnn_model *m, const float *dscores, uint32_t nsched, struct gnn_err *err)
{
	if (!m->have_fwd)
		return gnn_errf(err, EINVAL, "gnn backward: no successful forward pass before it");
	if (nsched != m->nsched)
		return gnn_errf(err, EINVAL, "gnn backward: %u score gradients for %u scores",
				nsched, m->nsched);
	if (nsched && !dscores)
		return gnn_errf(err, EINVAL, "gnn backward: NULL dscores");
	if (nsched)
		m->be->copy_to_dev(m->ctx, m->ds, dscores, (size_t)nsched * sizeof(float));
	gnn_head_backward(m);
	gnn_dagnn_backward(m);
	return m->be->sync(m->ctx, err);
}
