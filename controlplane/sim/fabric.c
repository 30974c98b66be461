/* SPDX-License-Identifier: BSD-3-Clause */
#include "controlplane/sim/fabric.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/heap.h"

/* A pair-port reference (pair * TOPO_MAX_FLOW_PORTS + port index): its tports entry, its record. */
#define PW_ENT(fb, ref)  ((fb)->pw[(ref) / TOPO_MAX_FLOW_PORTS].ent[(ref) % TOPO_MAX_FLOW_PORTS])
#define PW_LREC(fb, ref) ((fb)->pw[(ref) / TOPO_MAX_FLOW_PORTS].lrec[(ref) % TOPO_MAX_FLOW_PORTS])

/* Capacity below this fraction of a port's rate counts as none (float residue). */
#define FREE_EPS 1e-9
/* Pairs ahead that a scan of a port's pairs asks the cache for. */
#define PREFETCH_AHEAD 8
/* Below this many (src, dst) keys, the pair lookup is a table, not a hash map. */
#define PAIR_TAB_MAX (1u << 20)
/* At most this many doubles of per-class free-capacity snapshots. */
#define SNAP_MAX_DOUBLES (1u << 20)

int sim_fabric_init(struct sim_fabric *fb, const struct cp_model *m)
{
	uint32_t np = m->topo->nports;
	size_t nf = m->nflows ? m->nflows : 1, nc = m->ncoflows ? m->ncoflows : 1;
	size_t nfp = nf * TOPO_MAX_FLOW_PORTS;
	bool nomap;

	memset(fb, 0, sizeof(*fb));
	fb->nports = np;
	fb->nhosts = m->topo->nhosts;
	fb->cap = calloc(np, sizeof(*fb->cap));
	fb->free_bps = calloc(np, sizeof(*fb->free_bps));
	fb->fport_start = calloc(np + 1, sizeof(*fb->fport_start));
	fb->fport_list = calloc(nfp, sizeof(*fb->fport_list));
	fb->pairs = calloc(nf, sizeof(*fb->pairs));
	fb->members = calloc(nf, sizeof(*fb->members));
	fb->entries = calloc(nf, sizeof(*fb->entries));
	fb->flow_entry = calloc(nf, sizeof(*fb->flow_entry));
	fb->last_cf = calloc(nf, sizeof(*fb->last_cf));
	fb->pair_of = calloc(nf, sizeof(*fb->pair_of));
	fb->classes = calloc(nc, sizeof(*fb->classes));
	fb->tports = calloc(nfp, sizeof(*fb->tports));
	fb->tl_start = calloc(nfp, sizeof(*fb->tl_start));
	fb->tl_end = calloc(nfp, sizeof(*fb->tl_end));
	fb->tlist = calloc(nfp, sizeof(*fb->tlist));
	fb->cntw = calloc(np, sizeof(*fb->cntw));
	fb->entry_of = calloc(np, sizeof(*fb->entry_of));
	fb->ver = calloc(np, sizeof(*fb->ver));
	fb->pw = aligned_alloc(64, nf * sizeof(*fb->pw));
	if (fb->pw)
		memset(fb->pw, 0, nf * sizeof(*fb->pw));
	fb->efree = calloc(nfp, sizeof(*fb->efree));
	fb->ecnt = calloc(nfp, sizeof(*fb->ecnt));
	fb->ekey = calloc(nfp, sizeof(*fb->ekey));
	fb->pickstep = calloc(nfp, sizeof(*fb->pickstep));
	fb->lg_n = calloc(nfp, sizeof(*fb->lg_n));
	fb->pcnt_last = calloc(nfp, sizeof(*fb->pcnt_last));
	fb->xmark = calloc(nfp, sizeof(*fb->xmark));
	fb->xlist = calloc(nfp, sizeof(*fb->xlist));
	fb->xcur = calloc(nfp, sizeof(*fb->xcur));
	fb->lg = calloc(nfp, sizeof(*fb->lg));
	fb->lg2 = calloc(nfp, sizeof(*fb->lg2));
	fb->lg_keep = calloc(nfp, sizeof(*fb->lg_keep));
	fb->lg_new = calloc(nfp, sizeof(*fb->lg_new));
	fb->newpos = calloc(nfp, sizeof(*fb->newpos));
	fb->rep = calloc(nfp, sizeof(*fb->rep));
	fb->late = calloc(nfp, sizeof(*fb->late));
	fb->late_head = calloc(nfp, sizeof(*fb->late_head));
	fb->inz = calloc(nfp, sizeof(*fb->inz));
	fb->zc = calloc(nfp, sizeof(*fb->zc));
	fb->zset = calloc(nf, sizeof(*fb->zset));
	fb->uset = calloc(nf, sizeof(*fb->uset));

	fb->late_next = calloc(nfp, sizeof(*fb->late_next));
	fb->xbhead = calloc((size_t)np + 1, sizeof(*fb->xbhead));
	fb->xbnext = calloc((size_t)np + 1, sizeof(*fb->xbnext));
	fb->pk_e = calloc(nfp, sizeof(*fb->pk_e));
	fb->pk_key = calloc(nfp, sizeof(*fb->pk_key));
	fb->pk_share = calloc(nfp, sizeof(*fb->pk_share));
	fb->npk_e = calloc((size_t)np + 1, sizeof(*fb->npk_e));
	fb->npk_key = calloc((size_t)np + 1, sizeof(*fb->npk_key));
	fb->npk_share = calloc((size_t)np + 1, sizeof(*fb->npk_share));
	fb->rank = calloc(nf, sizeof(*fb->rank));
	fb->mk_port = calloc(np, sizeof(*fb->mk_port));
	fb->mk_cur = calloc(np, sizeof(*fb->mk_cur));
	fb->mk_seen = calloc(np, sizeof(*fb->mk_seen));
	fb->nflows = nf;
	fb->heap_cap = (size_t)np + nfp + 1;
	fb->heap = calloc(fb->heap_cap, sizeof(*fb->heap));
	fb->old_rate = calloc(nf, sizeof(*fb->old_rate));
	fb->chg = calloc(nf / 64 + 1, sizeof(*fb->chg));
	fb->cnt0 = calloc(nfp, sizeof(*fb->cnt0));
	fb->emptied = calloc(nf, sizeof(*fb->emptied));
	fb->scratch = calloc(np + 1, sizeof(*fb->scratch));
	fb->flow_cls = calloc(nf, sizeof(*fb->flow_cls));
	fb->flow_dense = calloc(nf, sizeof(*fb->flow_dense));
	fb->by_class = calloc(nf, sizeof(*fb->by_class));
	fb->cls_start = calloc(nc + 1, sizeof(*fb->cls_start));
	fb->cls_next = calloc(nc + 1, sizeof(*fb->cls_next));
	fb->class_scratch = calloc(POLICY_CLASSES_SCRATCH(m->topo) + 1, sizeof(*fb->class_scratch));
	fb->snap_classes = SNAP_MAX_DOUBLES / np;
	if (fb->snap_classes > nc)
		fb->snap_classes = (uint32_t)nc;
	fb->snap = calloc((size_t)fb->snap_classes * np + 1, sizeof(*fb->snap));
	fb->dirty_class = CP_NONE;
	/* at most one pair per flow; fixed, so that lookups never allocate */
	nomap = loom_hmap_init(&fb->pair_ids, nf, LOOM_HMAP_FIXED) < 0;
	if ((uint64_t)fb->nhosts * fb->nhosts <= PAIR_TAB_MAX) {
		fb->ptab = calloc((size_t)fb->nhosts * fb->nhosts + 1, sizeof(*fb->ptab));
		nomap |= !fb->ptab;
	}
	if (!fb->snap || !fb->rank || !fb->mk_port || !fb->mk_cur || !fb->mk_seen || !fb->entries ||
	    !fb->flow_entry || !fb->last_cf || !fb->cap || !fb->free_bps || !fb->fport_start ||
	    !fb->fport_list || !fb->pairs || !fb->members || !fb->pair_of || !fb->classes ||
	    !fb->tports || !fb->tl_start || !fb->tl_end || !fb->tlist || !fb->cntw ||
	    !fb->entry_of || !fb->ver || !fb->pw || !fb->heap || !fb->old_rate || nomap ||
	    !fb->scratch || !fb->flow_cls || !fb->flow_dense || !fb->chg || !fb->cnt0 ||
	    !fb->emptied || !fb->by_class || !fb->cls_start || !fb->cls_next ||
	    !fb->class_scratch || !fb->efree || !fb->ecnt || !fb->ekey || !fb->pickstep ||
	    !fb->lg_n || !fb->pcnt_last || !fb->xmark || !fb->xlist || !fb->xcur || !fb->lg ||
	    !fb->lg2 || !fb->lg_keep || !fb->lg_new || !fb->newpos || !fb->rep || !fb->late ||
	    !fb->late_head || !fb->inz || !fb->zc || !fb->zset || !fb->uset || !fb->late_next ||
	    !fb->npk_e || !fb->npk_key || !fb->npk_share || !fb->xbhead || !fb->xbnext ||
	    !fb->pk_e || !fb->pk_key || !fb->pk_share) {
		sim_fabric_done(fb);
		return -ENOMEM;
	}
	for (uint32_t p = 0; p < np; p++)
		fb->cap[p] = (double)m->topo->port_bps[p];
	return 0;
}

void sim_fabric_done(struct sim_fabric *fb)
{
	free(fb->cap);
	free(fb->free_bps);
	free(fb->fport_start);
	free(fb->fport_list);
	free(fb->pairs);
	free(fb->members);
	free(fb->entries);
	free(fb->flow_entry);
	free(fb->last_cf);
	free(fb->pair_of);
	free(fb->classes);
	free(fb->tports);
	free(fb->tl_start);
	free(fb->tl_end);
	free(fb->tlist);
	free(fb->cntw);
	free(fb->entry_of);
	free(fb->ver);
	free(fb->pw);
	free(fb->efree);
	free(fb->ecnt);
	free(fb->ekey);
	free(fb->pickstep);
	free(fb->lg_n);
	free(fb->pcnt_last);
	free(fb->xmark);
	free(fb->xlist);
	free(fb->xcur);
	free(fb->lg);
	free(fb->lg2);
	free(fb->lg_keep);
	free(fb->lg_new);
	free(fb->newpos);
	free(fb->rep);
	free(fb->late);
	free(fb->late_head);
	free(fb->inz);
	free(fb->zc);
	free(fb->zset);
	free(fb->uset);

	free(fb->late_next);
	free(fb->npk_e);
	free(fb->npk_key);
	free(fb->npk_share);
	free(fb->xbhead);
	free(fb->xbnext);
	free(fb->pk_e);
	free(fb->pk_key);
	free(fb->pk_share);
	free(fb->rank);
	free(fb->mk_port);
	free(fb->mk_cur);
	free(fb->mk_seen);
	free(fb->flow_cls);
	free(fb->flow_dense);
	free(fb->by_class);
	free(fb->cls_start);
	free(fb->cls_next);
	free(fb->class_scratch);
	free(fb->heap);
	free(fb->old_rate);
	free(fb->chg);
	free(fb->cnt0);
	free(fb->emptied);
	loom_hmap_done(&fb->pair_ids);
	free(fb->ptab);
	free(fb->scratch);
	free(fb->snap);
	memset(fb, 0, sizeof(*fb));
}

/* ---- a binary min-heap on share with lazy deletion ------------------------ */

/* Entries go stale when their port's ver moves on; the reader skips those. */
#define SHARE_LESS(ctx, a, b) ((a).share < (b).share)
LOOM_HEAP_DEFINE(share_heap, struct fabric_heap_ent, const void *, SHARE_LESS, LOOM_HEAP_NO_MOVED)

/* ---- path headroom helpers ------------------------------------------------ */

static inline double flow_headroom(const struct sim_fabric *fb, const struct cp_flow *fl)
{
	double h = INFINITY;

	for (uint32_t q = 0; q < fl->nports; q++) {
		uint32_t p = fl->ports[q];
		double f = fb->free_bps[p];

		if (f <= FREE_EPS * fb->cap[p])
			return 0;
		if (f < h)
			h = f;
	}
	return h;
}

static inline void flow_take(struct sim_fabric *fb, const struct cp_flow *fl, double r)
{
	for (uint32_t q = 0; q < fl->nports; q++) {
		uint32_t p = fl->ports[q];

		fb->free_bps[p] -= r;
		if (fb->free_bps[p] < 0)
			fb->free_bps[p] = 0;
	}
}

/* ---- rate mode ------------------------------------------------------------ */

/* Per-port lists of the unfinished flows in priority order (counting sort). */
static void build_port_lists(struct sim_fabric *fb, const struct cp_model *m,
			     const struct policy_decision *d)
{
	uint32_t *cnt = fb->scratch;

	memset(cnt, 0, (fb->nports + 1) * sizeof(*cnt));
	for (uint32_t i = 0; i < d->norder; i++) {
		const struct cp_coflow *cf = &m->coflows[d->order[i]];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];

		for (uint32_t k = 0; k < cf->flows_left; k++) {
			const struct cp_flow *fl = &m->flows[slot[k]];

			for (uint32_t q = 0; q < fl->nports; q++)
				cnt[fl->ports[q] + 1]++;
		}
	}
	for (uint32_t p = 0; p < fb->nports; p++)
		cnt[p + 1] += cnt[p];
	memcpy(fb->fport_start, cnt, (fb->nports + 1) * sizeof(*cnt));
	for (uint32_t i = 0, rank = 0; i < d->norder; i++) {
		const struct cp_coflow *cf = &m->coflows[d->order[i]];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];

		for (uint32_t k = 0; k < cf->flows_left; k++) {
			const struct cp_flow *fl = &m->flows[slot[k]];

			fb->rank[slot[k]] = rank++;
			for (uint32_t q = 0; q < fl->nports; q++)
				fb->fport_list[cnt[fl->ports[q]]++] = slot[k];
		}
	}
}

static void allocate_rates(struct sim_fabric *fb, struct cp_model *m,
			   const struct policy_decision *d)
{
	for (uint32_t i = 0; i < d->norder; i++) {
		const struct cp_coflow *cf = &m->coflows[d->order[i]];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];

		for (uint32_t k = 0; k < cf->flows_left; k++) {
			struct cp_flow *fl = &m->flows[slot[k]];
			double r = d->rate_bps[slot[k]];
			double h;

			fl->rate_bps = 0;
			if (!(r > 0))
				continue;
			h = flow_headroom(fb, fl);
			if (r > h)
				r = h;
			fl->rate_bps = r;
			flow_take(fb, fl, r);
		}
	}
	/* Work conservation: leftover capacity to flows greedily, in order. */
	for (uint32_t i = 0; i < d->norder; i++) {
		const struct cp_coflow *cf = &m->coflows[d->order[i]];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];

		for (uint32_t k = 0; k < cf->flows_left; k++) {
			struct cp_flow *fl = &m->flows[slot[k]];
			double h = flow_headroom(fb, fl);

			if (h > 0) {
				fl->rate_bps += h;
				flow_take(fb, fl, h);
			}
		}
	}
	build_port_lists(fb, m, d);
}

/*
 * Offers the capacity freed on the ports of the finished flows to the flows
 * crossing those ports, in priority order: a k-way merge of the ports' lists
 * (each already in priority order), each flow once, until no freed port has
 * capacity left.
 */
static void backfill_freed(struct sim_fabric *fb, struct cp_model *m, const uint32_t *freed,
			   uint32_t nfreed, fabric_rate_fn set_rate, void *ctx)
{
	uint32_t k = 0, last = CP_NONE;

	for (uint32_t i = 0; i < nfreed; i++) {
		const struct cp_flow *fl = &m->flows[freed[i]];

		for (uint32_t q = 0; q < fl->nports; q++) {
			uint32_t p = fl->ports[q];

			if (!fb->mk_seen[p]) {
				fb->mk_seen[p] = true;
				fb->mk_cur[k] = fb->fport_start[p];
				fb->mk_port[k++] = p;
			}
		}
	}
	for (;;) {
		uint32_t best = CP_NONE, best_rank = UINT32_MAX, f;
		const struct cp_flow *fl;
		double h;

		for (uint32_t j = 0; j < k; j++) {
			uint32_t p = fb->mk_port[j], c = fb->mk_cur[j];

			if (c >= fb->fport_start[p + 1] || fb->free_bps[p] <= FREE_EPS * fb->cap[p])
				continue;
			if (fb->rank[fb->fport_list[c]] < best_rank) {
				best_rank = fb->rank[fb->fport_list[c]];
				best = j;
			}
		}
		if (best == CP_NONE)
			break;
		f = fb->fport_list[fb->mk_cur[best]++];
		if (best_rank == last)
			continue; /* the same flow through a second freed port */
		last = best_rank;
		fl = &m->flows[f];
		if (fl->done)
			continue;
		h = flow_headroom(fb, fl);
		if (h > 0) {
			flow_take(fb, fl, h);
			set_rate(ctx, f, fl->rate_bps + h);
		}
	}
	for (uint32_t j = 0; j < k; j++)
		fb->mk_seen[fb->mk_port[j]] = false;
}

/* ---- water-fill mode ------------------------------------------------------ */

/*
 * Returns the pair of (src, dst) in the class being built, numbering a new
 * one fb->npairs. pair_ids has room for every flow (sim_fabric_init), so the
 * add cannot fail.
 */
static uint32_t pair_lookup(struct sim_fabric *fb, uint32_t src, uint32_t dst, bool *ret_new)
{
	uint64_t key = (uint64_t)src * fb->nhosts + dst, g;

	if (fb->ptab) {
		struct fabric_ptab *t = &fb->ptab[key];

		*ret_new = t->stamp != fb->ptab_gen;
		if (*ret_new) {
			t->stamp = fb->ptab_gen;
			t->pair = fb->npairs++;
		}
		return t->pair;
	}

	*ret_new = loom_hmap_get_or_add(&fb->pair_ids, key, fb->npairs, &g) == 1;
	if (*ret_new)
		fb->npairs++;
	return (uint32_t)g;
}

static uint32_t class_at(const struct policy_decision *d, const struct sim_opts *o, uint32_t i)
{
	uint32_t k = o->classes ? o->classes : 1;

	if (o->mode == SIM_MODE_IDEAL)
		return d->has_classes ? d->class_of[i] : i;
	if (d->has_classes)
		return d->class_of[i] < k ? d->class_of[i] : k - 1;
	if (o->quantize == SIM_QUANT_EVEN)
		return (uint32_t)((uint64_t)i * k / d->norder);
	return i < k - 1 ? i : k - 1;
}

/*
 * The class of every unfinished flow of the ordered coflows: into
 * fb->flow_cls the class as the driver numbers it (in classes mode, what a
 * host's datapath holds), into *ret_dense an array of dense class indices
 * (0, 1, ..., no gaps; lower is served first); returns how many dense
 * classes. Classes mode with --quantize conflict or per-host: the classes
 * loomd gives each source host, from the one implementation both share
 * (policy_decision_assign_classes()); with per-host a coflow's flows may
 * sit in different classes on different hosts. Otherwise (and for a policy's own
 * classes, which every quantisation keeps, capped at K-1, on every host)
 * every flow of position i is in class_at(i), non-decreasing along the order.
 */
static uint32_t flow_classes(struct sim_fabric *fb, const struct cp_model *m,
			     const struct policy_decision *d, const struct sim_opts *o,
			     const uint32_t **ret_dense)
{
	uint32_t n = 0, last = CP_NONE;

	if (o->mode == SIM_MODE_CLASSES && !d->has_classes &&
	    (o->quantize == SIM_QUANT_PER_HOST || o->quantize == SIM_QUANT_CONFLICT)) {
		/* both give classes 0 .. n-1, each to some flow: already dense */
		*ret_dense = fb->flow_cls;
		return policy_decision_assign_classes(d, m, o->classes ? o->classes : 1,
						      o->quantize == SIM_QUANT_PER_HOST ?
							      POLICY_CLASSES_PER_HOST :
							      POLICY_CLASSES_CONFLICT,
						      fb->flow_cls, fb->class_scratch);
	}
	for (uint32_t i = 0; i < d->norder; i++) {
		const struct cp_coflow *cf = &m->coflows[d->order[i]];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];
		uint32_t cls = class_at(d, o, i);

		if (cf->flows_left == 0)
			continue;
		if (cls != last) {
			last = cls;
			n++;
		}
		for (uint32_t k = 0; k < cf->flows_left; k++) {
			fb->flow_cls[slot[k]] = cls;
			fb->flow_dense[slot[k]] = n - 1;
		}
	}
	*ret_dense = fb->flow_dense;
	return n;
}

/* Groups the unfinished flows into classes and (class, src, dst) pairs. */
static void build_pairs(struct sim_fabric *fb, struct cp_model *m, const struct policy_decision *d,
			const struct sim_opts *o)
{
	const uint32_t *dense;
	uint32_t i, nt = 0, nl = 0, ncls = flow_classes(fb, m, d, o, &dense);

	/* flows by class, each class in order and slot order (a stable counting sort) */
	memset(fb->cls_start, 0, (ncls + 1) * sizeof(*fb->cls_start));
	for (i = 0; i < d->norder; i++) {
		const struct cp_coflow *cf = &m->coflows[d->order[i]];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];

		for (uint32_t k = 0; k < cf->flows_left; k++)
			fb->cls_start[dense[slot[k]] + 1]++;
	}
	for (uint32_t c = 0; c < ncls; c++) {
		fb->cls_start[c + 1] += fb->cls_start[c];
		fb->cls_next[c] = fb->cls_start[c];
	}
	for (i = 0; i < d->norder; i++) {
		const struct cp_coflow *cf = &m->coflows[d->order[i]];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];

		for (uint32_t k = 0; k < cf->flows_left; k++)
			fb->by_class[fb->cls_next[dense[slot[k]]]++] = slot[k];
	}

	fb->npairs = 0;
	fb->nclasses = 0;
	for (uint32_t cls = 0; cls < ncls; cls++) {
		struct fabric_class *fc = &fb->classes[fb->nclasses++];

		if (!fb->ptab)
			loom_hmap_clear(&fb->pair_ids);
		else if (++fb->ptab_gen == 0) {
			memset(fb->ptab, 0, (size_t)fb->nhosts * fb->nhosts * sizeof(*fb->ptab));
			fb->ptab_gen = 1;
		}
		fc->pstart = fb->npairs;
		for (uint32_t x = fb->cls_start[cls]; x < fb->cls_start[cls + 1]; x++) {
			uint32_t f = fb->by_class[x];
			const struct cp_flow *fl = &m->flows[f];
			bool is_new;
			uint32_t g = pair_lookup(fb, fl->src, fl->dst, &is_new);
			struct fabric_pair *pr = &fb->pairs[g];

			if (is_new) {
				fb->pw[g].nports = (uint8_t)fl->nports;
				fb->pw[g].zn = 0;
				fb->pw[g].rate_bps = 0;
				fb->pw[g].fstep = CP_NONE;
				pr->cls = fb->nclasses - 1;
				pr->src = fl->src;
				pr->dst = fl->dst;
				pr->nports = fl->nports;
				memcpy(pr->ports, fl->ports, sizeof(pr->ports));
				pr->n = 0;
				pr->rate_bps = 0;
			}
			pr->n++;
			fb->pair_of[f] = g;
		}
		fc->pend = fb->npairs;
		/* Ports this class touches, and its pairs by port. */
		fc->tstart = nt;
		for (uint32_t g = fc->pstart; g < fc->pend; g++) {
			const struct fabric_pair *pr = &fb->pairs[g];

			for (uint32_t q = 0; q < pr->nports; q++) {
				uint32_t p = pr->ports[q];

				if (fb->scratch[p] != fb->nclasses) {
					fb->scratch[p] = fb->nclasses;
					fb->entry_of[p] = nt;
					fb->tports[nt] = p;
					fb->tl_start[nt] = 0;
					nt++;
				}
				fb->tl_start[fb->entry_of[p]]++;
			}
		}
		fc->tend = nt;
		for (uint32_t e = fc->tstart; e < fc->tend; e++) {
			uint32_t cnt = fb->tl_start[e];

			fb->tl_start[e] = fb->tl_end[e] = nl;
			nl += cnt;
			fb->cnt0[e] = 0;
		}
		for (uint32_t g = fc->pstart; g < fc->pend; g++) {
			const struct fabric_pair *pr = &fb->pairs[g];

			for (uint32_t q = 0; q < pr->nports; q++) {
				uint32_t e = fb->entry_of[pr->ports[q]];

				fb->tlist[fb->tl_end[e]++] = g;
				fb->pw[g].ent[q] = e;
				fb->pw[g].lrec[q] = CP_NONE;
				fb->cnt0[e] += pr->n;
			}
			fb->pw[g].n = pr->n;
		}
	}
	/*
	 * Members of each pair, and per pair its flows counted per coflow (the
	 * engine keeps coflow rates from pair rates). Flows arrive coflow by
	 * coflow, so a pair's entries are the runs of equal coflows.
	 */
	for (uint32_t g = 0; g < fb->npairs; g++) {
		fb->last_cf[g] = CP_NONE;
		fb->pairs[g].eend = 0;
	}
	for (i = 0; i < d->norder; i++) {
		uint32_t c = d->order[i];
		const struct cp_coflow *cf = &m->coflows[c];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];

		for (uint32_t k = 0; k < cf->flows_left; k++) {
			uint32_t g = fb->pair_of[slot[k]];

			if (fb->last_cf[g] != c) {
				fb->last_cf[g] = c;
				fb->pairs[g].eend++;
			}
		}
	}
	for (uint32_t g = 0, off = 0, eoff = 0; g < fb->npairs; g++) {
		struct fabric_pair *pr = &fb->pairs[g];
		uint32_t ne = pr->eend;

		pr->mstart = pr->mend = off;
		off += pr->n;
		pr->estart = pr->eend = eoff;
		eoff += ne;
		fb->last_cf[g] = CP_NONE;
	}
	for (i = 0; i < d->norder; i++) {
		uint32_t c = d->order[i];
		const struct cp_coflow *cf = &m->coflows[c];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];

		for (uint32_t k = 0; k < cf->flows_left; k++) {
			uint32_t f = slot[k], g = fb->pair_of[f];
			struct fabric_pair *pr = &fb->pairs[g];

			fb->members[pr->mend++] = f;
			if (fb->last_cf[g] != c) {
				fb->last_cf[g] = c;
				fb->entries[pr->eend++] = (struct fabric_entry){c, 0};
			}
			fb->entries[pr->eend - 1].count++;
			fb->flow_entry[f] = pr->eend - 1;
		}
	}
}

static inline double entry_share(const struct sim_fabric *fb, uint32_t p)
{
	double f = fb->free_bps[p];

	return f > 0 ? f / fb->cntw[p] : 0;
}

/* Classes touching more ports than this use a heap to find the bottleneck. */
#define LINEAR_SCAN_MAX_PORTS 1024

/* Freezes the unfrozen pairs of tports entry e at share; returns nothing. */
static void freeze_entry(struct sim_fabric *fb, uint32_t e, double share, uint32_t gen,
			 uint32_t *hn)
{
	uint32_t p = fb->tports[e];

	for (uint32_t k = fb->tl_start[e]; k < fb->tl_end[e]; k++) {
		uint32_t g = fb->tlist[k];
		struct fabric_pair *pr;

		/* the stamp first: half the visits are to pairs already frozen */
		if (fb->pw[g].stamp == gen)
			continue;
		pr = &fb->pairs[g];
		if (pr->n == 0)
			continue;
		fb->pw[g].stamp = gen;
		if (fb->tracking && fb->pw[g].rate_bps != share) {
			fb->old_rate[g] = fb->pw[g].rate_bps;
			fb->chg[g / 64] |= 1ULL << (g % 64);
		}
		fb->pw[g].rate_bps = share;
		for (uint32_t q = 0; q < pr->nports; q++) {
			uint32_t p2 = pr->ports[q];

			fb->free_bps[p2] -= share * pr->n;
			if (fb->free_bps[p2] < 0)
				fb->free_bps[p2] = 0;
			fb->cntw[p2] -= pr->n;
			if (p2 != p && fb->cntw[p2] > 0) {
				fb->ver[p2]++;
				share_heap_push(NULL, fb->heap, hn,
						(struct fabric_heap_ent){entry_share(fb, p2),
									 fb->entry_of[p2],
									 fb->ver[p2]});
			}
		}
	}
	fb->free_bps[p] = 0;
	fb->cntw[p] = 0;
}

static uint32_t next_gen(struct sim_fabric *fb)
{
	if (++fb->gen == 0) {
		for (size_t g = 0; g < fb->nflows; g++)
			fb->pw[g].stamp = 0;
		memset(fb->xmark, 0, fb->nflows * TOPO_MAX_FLOW_PORTS * sizeof(*fb->xmark));
		memset(fb->rep, 0, fb->nflows * TOPO_MAX_FLOW_PORTS * sizeof(*fb->rep));
		fb->gen = 1;
	}
	return fb->gen;
}

/* A port's fair share: free capacity per unfrozen flow (none: INFINITY). */
static inline double share_of(double free_bps, double cnt)
{
	return cnt > 0 ? free_bps / cnt : INFINITY;
}

/*
 * A narrow class's filling, and its re-filling after an update.
 *
 * A filling picks, at each step, the port with the smallest fair share
 * (ties: the first in tports), freezes its unfrozen pairs at that share and
 * takes their flows and capacity off their other ports, until every pair is
 * frozen (fill_reference() does just that). Two things make an update cheap.
 *
 * The zero prefix. Ports whose input capacity is exactly 0 (a class above
 * used all of it) have share 0, below every other, so the filling starts
 * with them: each freezes its pairs at 0. Freezing at 0 changes no port's
 * capacity (f - 0 * n = f) and counts are integers, so these steps leave
 * the same state in any order: every pair through such a port (zn > 0) at
 * rate 0, every other port short of those pairs' flows (zc). They are kept
 * as counts, changed only where a port's input goes to 0 or leaves it.
 *
 * The walk. The rest of the filling is logged: per step, the bottleneck,
 * its key and share (pk_*; a step is named by its bottleneck's tports
 * entry, its position is pickstep[]); per port, a record of each change to
 * it in step order (lg); per pair, the step that froze it (fstep, CP_NONE
 * for a pair of the zero prefix). An update walks the logged steps in order
 * (a: the next one). A port is live (xmark == gen) once its state may
 * differ from the log's: its input changed, or a change reached it that the
 * log does not have there. Every other port is as the log has it after step
 * a - 1, so among them step a's bottleneck has the smallest share (or the
 * same and comes first). Each step takes the first of that bottleneck and
 * the live port with the smallest share (xmin, found again only when its
 * own share grows or it is taken):
 *   - logged step a again, when its bottleneck is not live, or is live with
 *     the logged key and share and no pair that the log froze before step a
 *     still unfrozen (late; allowed at share 0, where the order of changes
 *     does not matter): its pairs keep their rates, but for those frozen
 *     early in this walk (their records flagged LREC_EARLY), and only the
 *     live ports' records of the step are replayed;
 *   - a live port: a filling step, each port it changes made live first (at
 *     its logged state after step a - 1); a pair it freezes before its
 *     logged step is early (its records flagged), after it was late;
 *   - otherwise logged step a is dropped: the ports of its unfrozen pairs
 *     made live, those pairs late (listed per port).
 * Pairs entering the zero prefix in an update count as frozen early, those
 * leaving it as late. The same, bit for bit, as filling the class again:
 * each port goes through the same operations in the same order, or, at
 * share 0, the same set. A filling without a log is the same walk with
 * every port live. Its cost follows the ports that differ from the log and
 * the pairs whose rate changes, not the class.
 */

/* A record's pn with this bit: its pair was frozen earlier in the walk. */
#define LREC_EARLY 0x80000000u

struct fill_walk {
	struct fabric_class *c;
	struct fabric_lrec *wr; /* where the new records go (lg itself without a log) */
	uint32_t gen;
	uint32_t nlog;   /* logged steps */
	uint32_t a;      /* the next logged step */
	uint32_t kn;     /* steps of the new filling */
	uint32_t nx;     /* live ports, in xlist */
	uint32_t xmin;   /* the live port with the smallest share, first (CP_NONE: none) */
	bool xmin_stale; /* xmin to be found again (its share grew, or it was the bottleneck) */
};

/* Pair g's rate, its old one noted once per update when it changes. */
static inline void pair_set_rate(struct sim_fabric *fb, uint32_t g, double r)
{
	struct fabric_pw *pr = &fb->pw[g];

	if (fb->tracking && pr->rate_bps != r && !(fb->chg[g / 64] & (1ULL << (g % 64)))) {
		fb->old_rate[g] = pr->rate_bps;
		fb->chg[g / 64] |= 1ULL << (g % 64);
	}
	pr->rate_bps = r;
}

/* Of two ports (CP_NONE: none), the one with the smaller share, or the first. */
static inline uint32_t x_first(const struct sim_fabric *fb, uint32_t a, uint32_t b)
{
	if (a == CP_NONE)
		return b;
	if (b == CP_NONE)
		return a;
	return fb->ekey[a] < fb->ekey[b] || (fb->ekey[a] == fb->ekey[b] && a < b) ? a : b;
}

/* The live port with the smallest share (ties: the first), CP_NONE if none has flows. */
static uint32_t walk_xmin(struct sim_fabric *fb, struct fill_walk *w)
{
	if (w->xmin_stale) {
		uint32_t x = CP_NONE;

		for (uint32_t i = 0; i < w->nx; i++)
			x = x_first(fb, x, fb->xlist[i]);
		w->xmin = x;
		w->xmin_stale = false;
	}
	return w->xmin != CP_NONE && fb->ekey[w->xmin] < INFINITY ? w->xmin : CP_NONE;
}

/* Live port i (xlist) waits for the logged step of its record l, if any. */
static inline void walk_bucket(struct sim_fabric *fb, uint32_t i, uint32_t x, uint32_t l)
{
	if (l < fb->tl_start[x] + fb->lg_n[x]) {
		uint32_t s = fb->pickstep[fb->lg[l].step];

		fb->xbnext[i] = fb->xbhead[s];
		fb->xbhead[s] = i;
	}
}

/* Port e becomes live with capacity f and cn flows, the first keep of its records kept. */
static void walk_live(struct sim_fabric *fb, struct fill_walk *w, uint32_t e, double f, double cn,
		      uint32_t keep)
{
	uint32_t i = w->nx++;

	fb->xmark[e] = w->gen;
	fb->xlist[i] = e;
	fb->efree[e] = f;
	fb->ecnt[e] = cn;
	fb->ekey[e] = share_of(f, cn);
	fb->lg_keep[e] = keep;
	fb->lg_new[e] = 0;
	fb->xcur[e] = keep;
	fb->late[e] = 0;
	fb->late_head[e] = CP_NONE;
	if (w->nlog)
		walk_bucket(fb, i, e, fb->tl_start[e] + keep);
	if (!w->xmin_stale)
		w->xmin = x_first(fb, w->xmin, e);
}

/* Port e's input: its capacity, and its flows less those of the zero prefix. */
static inline double input_cnt(const struct sim_fabric *fb, uint32_t e)
{
	return (double)(fb->cnt0[e] - fb->zc[e]);
}

/* Port e (not live) becomes live as the log has it after step a - 1. */
static void walk_join(struct sim_fabric *fb, struct fill_walk *w, uint32_t e)
{
	const struct fabric_lrec *r = fb->lg + fb->tl_start[e];
	uint32_t lo = 0, hi = fb->lg_n[e];

	/* its records before step a: lo */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (fb->pickstep[r[mid].step] < w->a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo)
		walk_live(fb, w, e, r[lo - 1].free_bps, r[lo - 1].cnt, lo);
	else
		walk_live(fb, w, e, fb->free_bps[fb->tports[e]], input_cnt(fb, e), 0);
}

/* Live port x's capacity or flows changed: its share, and xmin. */
static inline void walk_moved(struct sim_fabric *fb, struct fill_walk *w, uint32_t x)
{
	double was = fb->ekey[x];

	fb->ekey[x] = share_of(fb->efree[x], fb->ecnt[x]);
	if (w->xmin_stale)
		return;
	if (x == w->xmin)
		w->xmin_stale = fb->ekey[x] > was;
	else if (x_first(fb, w->xmin, x) == x)
		w->xmin = x;
}

/* Live port e's change at step eb (pair-port ref, pn flows): its record. */
static inline void walk_record(struct sim_fabric *fb, struct fill_walk *w, uint32_t e, uint32_t eb,
			       uint32_t pn, uint32_t ref)
{
	uint32_t l = fb->tl_start[e] + fb->lg_keep[e] + fb->lg_new[e]++;

	w->wr[l] = (struct fabric_lrec){eb, pn, ref, (uint32_t)fb->ecnt[e], fb->efree[e]};
	PW_LREC(fb, ref) = l;
}

/* Live port e: pair g (n flows, pair-port ref) frozen at share by step eb. */
static inline void walk_change(struct sim_fabric *fb, struct fill_walk *w, uint32_t e, uint32_t eb,
			       double share, uint32_t n, uint32_t ref)
{
	double f = fb->efree[e] - share * n;

	fb->efree[e] = f < 0 ? 0 : f;
	fb->ecnt[e] = fb->ecnt[e] - n;
	walk_record(fb, w, e, eb, n, ref);
	walk_moved(fb, w, e);
}

/* The new filling's next step. */
static inline void walk_step(struct sim_fabric *fb, struct fill_walk *w, uint32_t eb, double key,
			     double share)
{
	fb->newpos[eb] = w->kn;
	fb->npk_e[w->kn] = eb;
	fb->npk_key[w->kn] = key;
	fb->npk_share[w->kn] = share;
	w->kn++;
}

/* Live port eb's late pairs frozen at share (0) at its logged step. */
static void walk_late(struct sim_fabric *fb, struct fill_walk *w, uint32_t eb, double share)
{
	for (uint32_t r = fb->late_head[eb]; r != CP_NONE; r = fb->late_next[r]) {
		uint32_t g = r / TOPO_MAX_FLOW_PORTS;
		const struct fabric_pw *pr = &fb->pw[g];

		if (fb->pw[g].stamp == w->gen)
			continue;
		fb->pw[g].stamp = w->gen;
		fb->pw[g].ofstep = fb->pw[g].fstep;
		fb->pw[g].fstep = eb;
		pair_set_rate(fb, g, share);
		for (uint32_t q = 0; q < pr->nports; q++) {
			uint32_t ref = g * TOPO_MAX_FLOW_PORTS + q, e2 = PW_ENT(fb, ref);

			if (e2 == eb) {
				PW_LREC(fb, ref) = CP_NONE;
				continue;
			}
			fb->late[e2]--;
			walk_change(fb, w, e2, eb, share, pr->n, ref);
		}
	}
}

/* Logged step a again (see above); its bottleneck, if live, is done. */
static void walk_replay(struct sim_fabric *fb, struct fill_walk *w)
{
	const uint32_t k = w->c->tstart + w->a, eb = fb->pk_e[k];
	const double share = fb->pk_share[k];

	fb->rep[eb] = w->gen;
	walk_step(fb, w, eb, fb->pk_key[k], share);
	if (fb->xmark[eb] == w->gen) {
		if (fb->late[eb])
			walk_late(fb, w, eb, share);
		fb->efree[eb] = 0;
		fb->ecnt[eb] = 0;
		fb->ekey[eb] = INFINITY;
		if (eb == w->xmin)
			w->xmin_stale = true;
	}
	for (uint32_t i = fb->xbhead[w->a], inext; i != CP_NONE; i = inext) {
		uint32_t x = fb->xlist[i], l = fb->tl_start[x] + fb->xcur[x];
		uint32_t lend = fb->tl_start[x] + fb->lg_n[x];
		bool moved = false;

		inext = fb->xbnext[i];
		for (; l < lend && fb->lg[l].step == eb; l++) {
			const struct fabric_lrec *r = &fb->lg[l];

			if (r->pn & LREC_EARLY)
				continue;
			if (r->pn) {
				double f = fb->efree[x] - share * r->pn;

				fb->efree[x] = f < 0 ? 0 : f;
				fb->ecnt[x] -= r->pn;
				moved = true;
			}
			walk_record(fb, w, x, eb, r->pn, r->ref);
		}
		fb->xcur[x] = l - fb->tl_start[x];
		if (moved)
			walk_moved(fb, w, x);
		walk_bucket(fb, i, x, l);
	}
}

/* Pair g to be frozen later than the log has it: listed late at each of its ports, made live. */
static void walk_mark_late(struct sim_fabric *fb, struct fill_walk *w, uint32_t g)
{
	for (uint32_t q = 0; q < fb->pw[g].nports; q++) {
		uint32_t ref = g * TOPO_MAX_FLOW_PORTS + q, e2 = PW_ENT(fb, ref);

		if (fb->xmark[e2] != w->gen)
			walk_join(fb, w, e2);
		fb->late[e2]++;
		fb->late_next[ref] = fb->late_head[e2];
		fb->late_head[e2] = ref;
	}
}

/* Logged step a dropped (see above). */
static void walk_drop(struct sim_fabric *fb, struct fill_walk *w)
{
	const uint32_t eb = fb->pk_e[w->c->tstart + w->a];

	/* none of them is unfrozen once its bottleneck has no unfrozen flows (it was taken) */
	for (uint32_t j = fb->tl_start[eb], jend = fb->ecnt[eb] > 0 ? fb->tl_end[eb] : j; j < jend;
	     j++) {
		uint32_t g = fb->tlist[j];
		const struct fabric_pw *pr = &fb->pw[g];

		if (j + PREFETCH_AHEAD < jend)
			__builtin_prefetch(&fb->pw[fb->tlist[j + PREFETCH_AHEAD]]);
		if (pr->stamp == w->gen || pr->fstep != eb || pr->n == 0)
			continue;
		walk_mark_late(fb, w, g);
	}
	for (uint32_t i = fb->xbhead[w->a], inext; i != CP_NONE; i = inext) {
		uint32_t x = fb->xlist[i], l = fb->tl_start[x] + fb->xcur[x];
		uint32_t lend = fb->tl_start[x] + fb->lg_n[x];

		inext = fb->xbnext[i];
		while (l < lend && fb->lg[l].step == eb)
			l++;
		fb->xcur[x] = l - fb->tl_start[x];
		walk_bucket(fb, i, x, l);
	}
}

/* A step at live port eb: its unfrozen pairs frozen at its share. */
static void walk_pick(struct sim_fabric *fb, struct fill_walk *w, uint32_t eb)
{
	const uint32_t gen = w->gen;
	const double bkey = fb->ekey[eb];
	const double share = fb->efree[eb] <= FREE_EPS * fb->cap[fb->tports[eb]] ? 0 : bkey;

	walk_step(fb, w, eb, bkey, share);
	for (uint32_t j = fb->tl_start[eb], jend = fb->tl_end[eb]; j < jend; j++) {
		uint32_t g = fb->tlist[j], fs;
		struct fabric_pw *pr = &fb->pw[g];
		bool early;

		if (j + PREFETCH_AHEAD < jend)
			__builtin_prefetch(&fb->pw[fb->tlist[j + PREFETCH_AHEAD]], 1);
		/* frozen in this walk, or by a logged step taken again */
		if (pr->stamp == gen)
			continue;
		fs = pr->fstep;
		if (fs != CP_NONE && fb->rep[fs] == gen)
			continue;
		if (pr->n == 0 || pr->zn)
			continue;
		/* before its logged step (early), or after it (it was late) */
		early = w->nlog && fs != CP_NONE && fb->pickstep[fs] >= w->a;
		fb->pw[g].stamp = gen;
		fb->pw[g].ofstep = fs;
		fb->pw[g].fstep = eb;
		pair_set_rate(fb, g, share);
		for (uint32_t q = 0; q < pr->nports; q++) {
			uint32_t ref = g * TOPO_MAX_FLOW_PORTS + q, e2 = PW_ENT(fb, ref);

			if (early && PW_LREC(fb, ref) != CP_NONE)
				fb->lg[PW_LREC(fb, ref)].pn |= LREC_EARLY;
			/* the bottleneck's own capacity and flows go to 0 below */
			if (e2 == eb) {
				PW_LREC(fb, ref) = CP_NONE;
				continue;
			}
			if (fb->xmark[e2] != gen)
				walk_join(fb, w, e2);
			if (!early && w->nlog)
				fb->late[e2]--;
			walk_change(fb, w, e2, eb, share, pr->n, ref);
		}
	}
	fb->efree[eb] = 0;
	fb->ecnt[eb] = 0;
	fb->ekey[eb] = INFINITY;
	w->xmin_stale = true;
}

/*
 * Whether logged step a can be taken again: its bottleneck is not live, or
 * is live with the logged key and share and, unless the share is 0, no late
 * pair.
 */
static inline bool walk_replayable(const struct sim_fabric *fb, const struct fill_walk *w)
{
	const uint32_t k = w->c->tstart + w->a, eb = fb->pk_e[k];

	if (fb->xmark[eb] != w->gen)
		return true;
	if (fb->ekey[eb] != fb->pk_key[k] || (fb->late[eb] && fb->pk_share[k] != 0))
		return false;
	return (fb->efree[eb] <= FREE_EPS * fb->cap[fb->tports[eb]] ? 0 : fb->ekey[eb]) ==
	       fb->pk_share[k];
}

/*
 * The zero prefix after the class's input changed: each port whose input
 * went to 0 or left it counts itself in or out of its pairs' zn; a pair
 * entering the prefix gets rate 0 (into zset), one leaving it (into uset)
 * is filled again; their ports' zc follow. Returns through ret_nu.
 */
static uint32_t zero_update(struct sim_fabric *fb, const struct fabric_class *c, uint32_t *ret_nu)
{
	uint32_t nz = 0, nu = 0;

	for (uint32_t e = c->tstart; e < c->tend; e++) {
		bool z = fb->free_bps[fb->tports[e]] == 0;

		if (z == fb->inz[e])
			continue;
		fb->inz[e] = z;
		for (uint32_t j = fb->tl_start[e]; j < fb->tl_end[e]; j++) {
			uint32_t g = fb->tlist[j];
			struct fabric_pw *pr = &fb->pw[g];
			bool edge = z ? pr->zn++ == 0 : --pr->zn == 0;

			if (!edge || pr->n == 0)
				continue;
			for (uint32_t q = 0; q < pr->nports; q++) {
				uint32_t e2 = fb->pw[g].ent[q];

				fb->zc[e2] = z ? fb->zc[e2] + pr->n : fb->zc[e2] - pr->n;
			}
			if (z) {
				pair_set_rate(fb, g, 0);
				fb->zset[nz++] = g;
			} else {
				fb->uset[nu++] = g;
			}
		}
	}
	*ret_nu = nu;
	return nz;
}

/* The zero prefix from scratch (no log): zn, zc, and rate 0 for its pairs. */
static void zero_build(struct sim_fabric *fb, const struct fabric_class *c)
{
	for (uint32_t e = c->tstart; e < c->tend; e++) {
		fb->inz[e] = fb->free_bps[fb->tports[e]] == 0;
		fb->zc[e] = 0;
	}
	for (uint32_t g = c->pstart; g < c->pend; g++) {
		struct fabric_pw *pr = &fb->pw[g];

		pr->zn = 0;
		fb->pw[g].fstep = CP_NONE;
		for (uint32_t q = 0; q < pr->nports; q++)
			pr->zn += fb->inz[fb->pw[g].ent[q]];
		if (pr->zn == 0 || pr->n == 0)
			continue;
		pair_set_rate(fb, g, 0);
		for (uint32_t q = 0; q < pr->nports; q++) {
			uint32_t ref = g * TOPO_MAX_FLOW_PORTS + q;

			fb->zc[PW_ENT(fb, ref)] += pr->n;
			PW_LREC(fb, ref) = CP_NONE;
		}
	}
}

/*
 * The pairs that entered the zero prefix count as frozen early in this walk
 * (their records flagged), those that left it as late; their ports live.
 */
static void walk_zero_pairs(struct sim_fabric *fb, struct fill_walk *w, uint32_t nz, uint32_t nu)
{
	for (uint32_t i = 0; i < nz; i++) {
		uint32_t g = fb->zset[i];
		const struct fabric_pw *pr = &fb->pw[g];

		if (pr->zn == 0)
			continue; /* left it again */
		fb->pw[g].stamp = w->gen;
		fb->pw[g].ofstep = fb->pw[g].fstep;
		fb->pw[g].fstep = CP_NONE;
		for (uint32_t q = 0; q < pr->nports; q++) {
			uint32_t ref = g * TOPO_MAX_FLOW_PORTS + q, e2 = PW_ENT(fb, ref);

			if (PW_LREC(fb, ref) != CP_NONE)
				fb->lg[PW_LREC(fb, ref)].pn |= LREC_EARLY;
			PW_LREC(fb, ref) = CP_NONE;
			if (fb->xmark[e2] != w->gen)
				walk_join(fb, w, e2);
		}
	}
	for (uint32_t i = 0; i < nu; i++) {
		uint32_t g = fb->uset[i];
		const struct fabric_pw *pr = &fb->pw[g];

		if (pr->zn)
			continue; /* back in it */
		fb->pw[g].fstep = CP_NONE;
		walk_mark_late(fb, w, g);
	}
}

/*
 * Class c's filling: with snap_in (its input at its last filling; free_bps
 * holds the new one), the walk over its log; without, from scratch. Leaves
 * the class's output capacity in free_bps, and the new log.
 */
static void walk_class(struct sim_fabric *fb, struct fabric_class *c, double *snap_in)
{
	struct fill_walk w = {.c = c, .gen = next_gen(fb), .xmin = CP_NONE};
	uint32_t nz = 0, nu = 0;

	w.nlog = snap_in ? c->nsteps : 0;
	for (uint32_t k = 0; k < w.nlog; k++)
		fb->xbhead[k] = CP_NONE;
	if (snap_in)
		nz = zero_update(fb, c, &nu);
	else
		zero_build(fb, c);
	for (uint32_t e = c->tstart; e < c->tend; e++) {
		uint32_t p = fb->tports[e];

		fb->newpos[e] = CP_NONE;
		if (snap_in && fb->free_bps[p] == snap_in[p] &&
		    fb->cnt0[e] - fb->zc[e] == fb->pcnt_last[e])
			continue;
		walk_live(fb, &w, e, fb->free_bps[p], input_cnt(fb, e), 0);
	}
	if (snap_in) {
		memcpy(snap_in, fb->free_bps, fb->nports * sizeof(*snap_in));
		if (w.nx == 0 && nz == 0 && nu == 0) {
			for (uint32_t e = c->tstart; e < c->tend; e++)
				fb->free_bps[fb->tports[e]] = fb->efree[e];
			return;
		}
		walk_zero_pairs(fb, &w, nz, nu);
	}
	w.wr = w.nlog ? fb->lg2 : fb->lg;
	for (;;) {
		uint32_t eb = CP_NONE, x;
		double bkey = INFINITY;

		while (w.a < w.nlog && !walk_replayable(fb, &w)) {
			walk_drop(fb, &w);
			w.a++;
		}
		if (w.a < w.nlog) {
			eb = fb->pk_e[c->tstart + w.a];
			bkey = fb->pk_key[c->tstart + w.a];
		}
		x = walk_xmin(fb, &w);
		if (x != CP_NONE && (fb->ekey[x] < bkey || (fb->ekey[x] == bkey && x < eb))) {
			walk_pick(fb, &w, x);
		} else if (eb != CP_NONE) {
			walk_replay(fb, &w);
			w.a++;
		} else {
			break;
		}
	}
	for (uint32_t i = 0; i < w.nx; i++) {
		uint32_t x = fb->xlist[i], l = fb->tl_start[x] + fb->lg_keep[x];

		if (w.wr != fb->lg)
			memcpy(fb->lg + l, w.wr + l, fb->lg_new[x] * sizeof(*fb->lg));
		fb->lg_n[x] = fb->lg_keep[x] + fb->lg_new[x];
	}
	for (uint32_t e = c->tstart; e < c->tend; e++) {
		fb->pickstep[e] = fb->newpos[e];
		fb->free_bps[fb->tports[e]] = fb->efree[e];
		fb->pcnt_last[e] = fb->cnt0[e] - fb->zc[e];
	}
	memcpy(fb->pk_e + c->tstart, fb->npk_e, w.kn * sizeof(*fb->pk_e));
	memcpy(fb->pk_key + c->tstart, fb->npk_key, w.kn * sizeof(*fb->pk_key));
	memcpy(fb->pk_share + c->tstart, fb->npk_share, w.kn * sizeof(*fb->pk_share));
	c->nsteps = w.kn;
}

/*
 * The filling as its definition reads (sim_opts.full_refill, the reference
 * the walk must equal): no log, no zero prefix; the bottleneck found by a
 * scan of the class's ports.
 */
static void fill_reference(struct sim_fabric *fb, struct fabric_class *c)
{
	uint32_t gen = next_gen(fb);

	for (uint32_t e = c->tstart; e < c->tend; e++) {
		fb->efree[e] = fb->free_bps[fb->tports[e]];
		fb->ecnt[e] = fb->cnt0[e];
		fb->ekey[e] = share_of(fb->efree[e], fb->ecnt[e]);
	}
	for (;;) {
		uint32_t eb = CP_NONE;
		double bkey = INFINITY, share;

		for (uint32_t e = c->tstart; e < c->tend; e++)
			if (fb->ekey[e] < bkey) {
				bkey = fb->ekey[e];
				eb = e;
			}
		if (eb == CP_NONE)
			break;
		share = fb->efree[eb] <= FREE_EPS * fb->cap[fb->tports[eb]] ? 0 : bkey;
		for (uint32_t j = fb->tl_start[eb]; j < fb->tl_end[eb]; j++) {
			uint32_t g = fb->tlist[j];
			struct fabric_pw *pr = &fb->pw[g];
			double n = pr->n;

			if (pr->stamp == gen || pr->n == 0)
				continue;
			pr->stamp = gen;
			pr->rate_bps = share;
			for (uint32_t q = 0; q < pr->nports; q++) {
				uint32_t e2 = fb->pw[g].ent[q];
				double f;

				if (e2 == eb)
					continue;
				f = fb->efree[e2] - share * n;
				fb->efree[e2] = f < 0 ? 0 : f;
				fb->ecnt[e2] = fb->ecnt[e2] - n;
				fb->ekey[e2] = share_of(fb->efree[e2], fb->ecnt[e2]);
			}
		}
		fb->efree[eb] = 0;
		fb->ecnt[eb] = 0;
		fb->ekey[eb] = INFINITY;
	}
	for (uint32_t e = c->tstart; e < c->tend; e++)
		fb->free_bps[fb->tports[e]] = fb->efree[e];
}

/*
 * Max-min fair rates for the pairs of class c on the capacity still free
 * (progressive filling, weighted by each pair's number of flows): the port
 * with the smallest fair share freezes its pairs at that share, until every
 * pair is frozen. A narrow class by walk_class() (by fill_reference() with
 * sim_opts.full_refill), a very wide one (over LINEAR_SCAN_MAX_PORTS ports)
 * with a lazy heap, unlogged.
 */
static void waterfill_class(struct sim_fabric *fb, struct fabric_class *c)
{
	uint32_t gen, hn = 0;

	c->logged = !fb->full_refill && c->tend - c->tstart <= LINEAR_SCAN_MAX_PORTS;
	if (c->logged) {
		walk_class(fb, c, NULL);
		return;
	}
	if (fb->full_refill && c->tend - c->tstart <= LINEAR_SCAN_MAX_PORTS) {
		fill_reference(fb, c);
		return;
	}
	gen = next_gen(fb);
	/* Every pair with flows is frozen below, so its rate is set there. */
	for (uint32_t e = c->tstart; e < c->tend; e++) {
		uint32_t p = fb->tports[e];

		fb->cntw[p] = fb->cnt0[e];
		fb->entry_of[p] = e;
		fb->ver[p]++;
		if (fb->cntw[p] > 0)
			share_heap_push(NULL, fb->heap, &hn,
					(struct fabric_heap_ent){entry_share(fb, p), e,
								 fb->ver[p]});
	}
	while (hn > 0) {
		struct fabric_heap_ent he = share_heap_pop(NULL, fb->heap, &hn);
		uint32_t p = fb->tports[he.entry];

		if (he.ver != fb->ver[p] || fb->cntw[p] <= 0)
			continue;
		freeze_entry(fb, he.entry, fb->free_bps[p] <= FREE_EPS * fb->cap[p] ? 0 : he.share,
			     gen, &hn);
	}
}

/*
 * Water-fills classes from..nclasses-1, starting from the capacity before
 * `from`; with inc, classes with a log and a snapshot by walk_class() over it.
 */
static void waterfill_from(struct sim_fabric *fb, uint32_t from, bool inc)
{
	size_t np = fb->nports;

	if (from == 0)
		memcpy(fb->free_bps, fb->cap, np * sizeof(*fb->free_bps));
	else
		memcpy(fb->free_bps, &fb->snap[(size_t)from * np], np * sizeof(*fb->free_bps));
	for (uint32_t c = from; c < fb->nclasses; c++) {
		struct fabric_class *fc = &fb->classes[c];

		if (c < fb->snap_classes && inc && fc->logged) {
			walk_class(fb, fc, &fb->snap[(size_t)c * np]);
			continue;
		}
		if (c < fb->snap_classes)
			memcpy(&fb->snap[(size_t)c * np], fb->free_bps, np * sizeof(*fb->free_bps));
		waterfill_class(fb, fc);
	}
}

/* ---- the interface -------------------------------------------------------- */

void sim_fabric_allocate(struct sim_fabric *fb, struct cp_model *m, const struct policy_decision *d,
			 const struct sim_opts *o)
{
	memcpy(fb->free_bps, fb->cap, fb->nports * sizeof(*fb->free_bps));
	fb->rate_mode = d->has_rates && !d->has_classes && o->mode == SIM_MODE_IDEAL;
	if (fb->rate_mode) {
		allocate_rates(fb, m, d);
		return;
	}
	memset(fb->scratch, 0, (fb->nports + 1) * sizeof(*fb->scratch));
	build_pairs(fb, m, d, o);
	fb->dirty_class = CP_NONE;
	fb->nemptied = 0;
	fb->full_refill = o->full_refill;
	waterfill_from(fb, 0, false);
	for (uint32_t g = 0; g < fb->npairs; g++) {
		struct fabric_pair *pr = &fb->pairs[g];

		pr->rate_bps = fb->pw[g].rate_bps;
		for (uint32_t k = pr->mstart; k < pr->mend; k++)
			m->flows[fb->members[k]].rate_bps = pr->rate_bps;
	}
}

void sim_fabric_flow_gone(struct sim_fabric *fb, const struct cp_model *m, uint32_t f,
			  double rate_bps)
{
	const struct cp_flow *fl = &m->flows[f];

	if (!fb->rate_mode) {
		uint32_t g = fb->pair_of[f];
		struct fabric_pw *pr = &fb->pw[g];
		bool logged = fb->classes[fb->pairs[g].cls].logged;

		pr->n = fb->pairs[g].n;
		if (fb->pairs[g].cls < fb->dirty_class)
			fb->dirty_class = fb->pairs[g].cls;
		for (uint32_t q = 0; q < pr->nports; q++) {
			uint32_t l = fb->pw[g].lrec[q];
			uint32_t e = fb->pw[g].ent[q];

			fb->cnt0[e]--;
			/* the zero prefix's flows, or the log's count of its flows, for walk_class() */
			if (pr->zn)
				fb->zc[e]--;
			else if (logged && l != CP_NONE)
				fb->lg[l].pn = pr->n;
		}
		if (pr->n == 0)
			fb->emptied[fb->nemptied++] = g;
		return;
	}
	for (uint32_t q = 0; q < fl->nports; q++) {
		uint32_t p = fl->ports[q];

		fb->free_bps[p] += rate_bps;
		if (fb->free_bps[p] > fb->cap[p])
			fb->free_bps[p] = fb->cap[p];
	}
}

/*
 * sim_opts.full_refill: every class re-filled from the full capacity as the
 * filling reads (fill_reference(): no log, no zero prefix), its per-port
 * flow counts summed again over its pairs, every pair compared with its rate
 * before: what the incremental update must give, bit for bit.
 */
static void refill_reference(struct sim_fabric *fb, fabric_pair_fn pair_rate, void *ctx)
{
	for (uint32_t c = 0; c < fb->nclasses; c++) {
		const struct fabric_class *fc = &fb->classes[c];

		for (uint32_t e = fc->tstart; e < fc->tend; e++)
			fb->cnt0[e] = 0;
		for (uint32_t g = fc->pstart; g < fc->pend; g++) {
			const struct fabric_pw *pr = &fb->pw[g];

			for (uint32_t q = 0; q < pr->nports; q++)
				fb->cnt0[pr->ent[q]] += pr->n;
		}
	}
	for (uint32_t g = 0; g < fb->npairs; g++) {
		fb->old_rate[g] = fb->pw[g].rate_bps;
		fb->pw[g].rate_bps = 0;
	}
	fb->dirty_class = CP_NONE;
	fb->nemptied = 0;
	waterfill_from(fb, 0, false);
	for (uint32_t g = 0; g < fb->npairs; g++) {
		const struct fabric_pw *pr = &fb->pw[g];

		if (pr->n == 0 || pr->rate_bps == fb->old_rate[g])
			continue;
		fb->pairs[g].rate_bps = pr->rate_bps;
		pair_rate(ctx, g, fb->old_rate[g]);
	}
}

void sim_fabric_update(struct sim_fabric *fb, struct cp_model *m, const uint32_t *freed,
		       uint32_t nfreed, fabric_rate_fn set_rate, fabric_pair_fn pair_rate,
		       void *ctx)
{
	if (fb->rate_mode) {
		backfill_freed(fb, m, freed, nfreed, set_rate, ctx);
		return;
	}
	uint32_t from = fb->dirty_class;

	if (from == CP_NONE || fb->npairs == 0)
		return;
	if (fb->full_refill) {
		refill_reference(fb, pair_rate, ctx);
		return;
	}
	if (from >= fb->snap_classes)
		from = 0;
	fb->dirty_class = CP_NONE;
	/* A pair without flows is not frozen again: it has no rate (unreported). */
	for (uint32_t i = 0; i < fb->nemptied; i++)
		fb->pairs[fb->emptied[i]].rate_bps = fb->pw[fb->emptied[i]].rate_bps = 0;
	fb->nemptied = 0;
	fb->tracking = true;
	waterfill_from(fb, from, true);
	fb->tracking = false;
	/* Changed pairs in index order (classes from `from` on), bits cleared. */
	for (uint32_t w = fb->classes[from].pstart / 64; w <= (fb->npairs - 1) / 64; w++) {
		while (fb->chg[w]) {
			uint32_t g = w * 64 + (uint32_t)__builtin_ctzll(fb->chg[w]);

			fb->chg[w] &= fb->chg[w] - 1;
			if (fb->pw[g].rate_bps == fb->old_rate[g])
				continue;
			fb->pairs[g].rate_bps = fb->pw[g].rate_bps;
			pair_rate(ctx, g, fb->old_rate[g]);
		}
	}
}
