/* SPDX-License-Identifier: BSD-3-Clause */
#include "controlplane/sim/fabric.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/heap.h"

/* Capacity below this fraction of a port's rate counts as none (float residue). */
#define FREE_EPS 1e-9
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
	fb->pstamp = calloc(nf, sizeof(*fb->pstamp));
	fb->efree = calloc(nfp, sizeof(*fb->efree));
	fb->ecnt = calloc(nfp, sizeof(*fb->ecnt));
	fb->ekey = calloc(nfp, sizeof(*fb->ekey));
	fb->pickstep = calloc(nfp, sizeof(*fb->pickstep));
	fb->lg_n = calloc(nfp, sizeof(*fb->lg_n));
	fb->cnt0_last = calloc(nfp, sizeof(*fb->cnt0_last));
	fb->xmark = calloc(nfp, sizeof(*fb->xmark));
	fb->xlist = calloc(nfp, sizeof(*fb->xlist));
	fb->xcur = calloc(nfp, sizeof(*fb->xcur));
	fb->lg_pn = calloc(nfp, sizeof(*fb->lg_pn));
	fb->pair_lrec = calloc(nfp, sizeof(*fb->pair_lrec));
	fb->xbhead = calloc((size_t)np + 1, sizeof(*fb->xbhead));
	fb->xbnext = calloc((size_t)np + 1, sizeof(*fb->xbnext));
	fb->lg_step = calloc(nfp, sizeof(*fb->lg_step));
	fb->lg_free = calloc(nfp, sizeof(*fb->lg_free));
	fb->lg_cnt = calloc(nfp, sizeof(*fb->lg_cnt));
	fb->pk_e = calloc(nfp, sizeof(*fb->pk_e));
	fb->pk_key = calloc(nfp, sizeof(*fb->pk_key));
	fb->pk_share = calloc(nfp, sizeof(*fb->pk_share));
	fb->fstep = calloc(nf, sizeof(*fb->fstep));
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
	fb->pair_ent = calloc(nfp, sizeof(*fb->pair_ent));
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
	if (!fb->snap || !fb->rank || !fb->mk_port || !fb->mk_cur || !fb->mk_seen || !fb->entries ||
	    !fb->flow_entry || !fb->last_cf || !fb->cap || !fb->free_bps || !fb->fport_start ||
	    !fb->fport_list || !fb->pairs || !fb->members || !fb->pair_of || !fb->classes ||
	    !fb->tports || !fb->tl_start || !fb->tl_end || !fb->tlist || !fb->cntw ||
	    !fb->entry_of || !fb->ver || !fb->pstamp || !fb->heap || !fb->old_rate || nomap ||
	    !fb->scratch || !fb->flow_cls || !fb->flow_dense || !fb->chg || !fb->cnt0 ||
	    !fb->pair_ent || !fb->emptied || !fb->by_class || !fb->cls_start || !fb->cls_next ||
	    !fb->class_scratch || !fb->efree || !fb->ecnt || !fb->ekey || !fb->pickstep ||
	    !fb->lg_n || !fb->cnt0_last || !fb->xmark || !fb->xlist || !fb->xcur || !fb->lg_pn ||
	    !fb->pair_lrec || !fb->xbhead || !fb->xbnext || !fb->lg_step || !fb->lg_free ||
	    !fb->lg_cnt || !fb->pk_e || !fb->pk_key || !fb->pk_share || !fb->fstep) {
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
	free(fb->pstamp);
	free(fb->efree);
	free(fb->ecnt);
	free(fb->ekey);
	free(fb->pickstep);
	free(fb->lg_n);
	free(fb->cnt0_last);
	free(fb->xmark);
	free(fb->xlist);
	free(fb->xcur);
	free(fb->lg_pn);
	free(fb->pair_lrec);
	free(fb->xbhead);
	free(fb->xbnext);
	free(fb->lg_step);
	free(fb->lg_free);
	free(fb->lg_cnt);
	free(fb->pk_e);
	free(fb->pk_key);
	free(fb->pk_share);
	free(fb->fstep);
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
	free(fb->pair_ent);
	free(fb->emptied);
	loom_hmap_done(&fb->pair_ids);
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

		loom_hmap_clear(&fb->pair_ids);
		fc->pstart = fb->npairs;
		for (uint32_t x = fb->cls_start[cls]; x < fb->cls_start[cls + 1]; x++) {
			uint32_t f = fb->by_class[x];
			const struct cp_flow *fl = &m->flows[f];
			bool is_new;
			uint32_t g = pair_lookup(fb, fl->src, fl->dst, &is_new);
			struct fabric_pair *pr = &fb->pairs[g];

			if (is_new) {
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
				fb->pair_ent[(size_t)g * TOPO_MAX_FLOW_PORTS + q] = e;
				fb->cnt0[e] += pr->n;
			}
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
		if (fb->pstamp[g] == gen)
			continue;
		pr = &fb->pairs[g];
		if (pr->n == 0)
			continue;
		fb->pstamp[g] = gen;
		if (fb->tracking && pr->rate_bps != share) {
			fb->old_rate[g] = pr->rate_bps;
			fb->chg[g / 64] |= 1ULL << (g % 64);
		}
		pr->rate_bps = share;
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
		memset(fb->pstamp, 0, fb->nflows * sizeof(*fb->pstamp));
		memset(fb->xmark, 0, fb->nflows * TOPO_MAX_FLOW_PORTS * sizeof(*fb->xmark));
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
 * Filling of a narrow class from step k0 on, from the state of its ports in
 * efree/ecnt/ekey: at each step the port with the smallest fair share
 * (ties: the first in tports) freezes its unfrozen pairs at that share,
 * until every pair is frozen. Pairs frozen before k0 (fstep) or in this
 * filling (pstamp == gen) are frozen. The bottleneck is found by a linear
 * scan over the class's shares (a few hundred ports in a rack-scale
 * fabric: cheaper than a heap keyed by thousands of pair updates); each
 * port's share is kept as it changes. Every step, and every change to a
 * port, is logged for refill_class().
 */
static void fill_steps(struct sim_fabric *fb, struct fabric_class *c, uint32_t k0, uint32_t gen)
{
	const uint32_t ts = c->tstart, nt = c->tend - c->tstart;
	const double *ekey = fb->ekey + ts;
	uint32_t k;

	for (k = k0;; k++) {
		uint32_t best = CP_NONE, eb;
		double bkey = INFINITY, share;

		for (uint32_t i = 0; i < nt; i++)
			if (ekey[i] < bkey) {
				bkey = ekey[i];
				best = i;
			}
		if (best == CP_NONE)
			break;
		eb = ts + best;
		share = fb->efree[eb] <= FREE_EPS * fb->cap[fb->tports[eb]] ? 0 : bkey;
		fb->pk_e[ts + k] = eb;
		fb->pk_key[ts + k] = bkey;
		fb->pk_share[ts + k] = share;
		fb->pickstep[eb] = k;
		for (uint32_t j = fb->tl_start[eb]; j < fb->tl_end[eb]; j++) {
			uint32_t g = fb->tlist[j];
			struct fabric_pair *pr;
			double n;

			/* the stamp first: half the visits are to pairs already frozen */
			if (fb->pstamp[g] == gen || fb->fstep[g] < k0)
				continue;
			pr = &fb->pairs[g];
			if (pr->n == 0)
				continue;
			fb->pstamp[g] = gen;
			fb->fstep[g] = k;
			if (fb->tracking && pr->rate_bps != share) {
				fb->old_rate[g] = pr->rate_bps;
				fb->chg[g / 64] |= 1ULL << (g % 64);
			}
			pr->rate_bps = share;
			n = pr->n;
			for (uint32_t q = 0; q < pr->nports; q++) {
				uint32_t e2 = fb->pair_ent[(size_t)g * TOPO_MAX_FLOW_PORTS + q], l;
				double f, cn;

				/* the bottleneck's own capacity and flows go to 0 below */
				if (e2 == eb) {
					fb->pair_lrec[(size_t)g * TOPO_MAX_FLOW_PORTS + q] =
						CP_NONE;
					continue;
				}
				f = fb->efree[e2] - share * n;
				if (f < 0)
					f = 0;
				cn = fb->ecnt[e2] - n;
				fb->efree[e2] = f;
				fb->ecnt[e2] = cn;
				fb->ekey[e2] = share_of(f, cn);
				l = fb->tl_start[e2] + fb->lg_n[e2]++;
				fb->pair_lrec[(size_t)g * TOPO_MAX_FLOW_PORTS + q] = l;
				fb->lg_pn[l] = pr->n;
				fb->lg_step[l] = k;
				fb->lg_free[l] = f;
				fb->lg_cnt[l] = cn;
			}
		}
		fb->efree[eb] = 0;
		fb->ecnt[eb] = 0;
		fb->ekey[eb] = INFINITY;
	}
	c->nsteps = k;
	for (uint32_t e = c->tstart; e < c->tend; e++) {
		fb->free_bps[fb->tports[e]] = fb->efree[e];
		fb->cnt0_last[e] = fb->cnt0[e];
	}
}

/*
 * Resumes class c's filling at step j: every port as the filling left it
 * after step j - 1 (ports in xlist were brought there by the caller), the
 * log of later steps dropped, then fill_steps() from j.
 */
static void resume_at(struct sim_fabric *fb, struct fabric_class *c, uint32_t j, uint32_t gen)
{
	for (uint32_t e = c->tstart; e < c->tend; e++) {
		uint32_t ps = fb->pickstep[e];

		if (fb->xmark[e] == gen) {
			fb->lg_n[e] = fb->xcur[e]; /* replayed up to there */
		} else if (ps != CP_NONE && ps < j) {
			fb->efree[e] = 0;
			fb->ecnt[e] = 0;
		} else {
			uint32_t lo = 0, hi = j ? fb->lg_n[e] : 0;
			const uint32_t *st = fb->lg_step + fb->tl_start[e];

			/* records before step j: lo */
			while (lo < hi) {
				uint32_t mid = lo + (hi - lo) / 2;

				if (st[mid] < j)
					lo = mid + 1;
				else
					hi = mid;
			}
			fb->lg_n[e] = lo;
			if (lo) {
				fb->efree[e] = fb->lg_free[fb->tl_start[e] + lo - 1];
				fb->ecnt[e] = fb->lg_cnt[fb->tl_start[e] + lo - 1];
			} else {
				fb->efree[e] = fb->free_bps[fb->tports[e]];
				fb->ecnt[e] = fb->cnt0[e];
			}
		}
		if (ps != CP_NONE && ps >= j)
			fb->pickstep[e] = CP_NONE;
		fb->ekey[e] = share_of(fb->efree[e], fb->ecnt[e]);
	}
	fill_steps(fb, c, j, gen);
}

/* Of two ports of X (CP_NONE: none), the one with the smaller share, or the first. */
static inline uint32_t x_first(const struct sim_fabric *fb, uint32_t a, uint32_t b)
{
	if (a == CP_NONE)
		return b;
	if (b == CP_NONE)
		return a;
	return fb->ekey[a] < fb->ekey[b] || (fb->ekey[a] == fb->ekey[b] && a < b) ? a : b;
}

/*
 * Class c again after an update: free_bps holds its new input, snap_in its
 * input at its last filling. The ports whose input capacity or flow count
 * changed (X) are replayed along the logged steps, the others kept as
 * logged: a step is the same as long as its bottleneck is not in X and no
 * port of X now has a smaller share (or the same and comes first). At
 * the first step that differs the filling resumes (resume_at()); if none,
 * the class keeps its rates and passes on its logged capacities, X's
 * replayed. The same, bit for bit, as filling it again: every port
 * outside X has the same capacity and flows at each step, every port of
 * X goes through the same operations in the same order. X's ports are
 * visited only at the steps where the log has a change to them.
 */
static void refill_class(struct sim_fabric *fb, struct fabric_class *c, double *snap_in)
{
	uint32_t gen = next_gen(fb), nx = 0, xmin = CP_NONE, k;
	uint32_t *xl = fb->xlist, *bhead = fb->xbhead, *bnext = fb->xbnext;
	bool xmin_stale = true;

	for (uint32_t e = c->tstart; e < c->tend; e++) {
		uint32_t p = fb->tports[e];

		if (fb->free_bps[p] == snap_in[p] && fb->cnt0[e] == fb->cnt0_last[e])
			continue;
		fb->xmark[e] = gen;
		xl[nx++] = e;
		fb->efree[e] = fb->free_bps[p];
		fb->ecnt[e] = fb->cnt0[e];
		fb->ekey[e] = share_of(fb->efree[e], fb->ecnt[e]);
		fb->xcur[e] = 0;
	}
	memcpy(snap_in, fb->free_bps, fb->nports * sizeof(*snap_in));
	if (nx == 0) {
		for (uint32_t e = c->tstart; e < c->tend; e++)
			fb->free_bps[fb->tports[e]] = fb->efree[e];
		return;
	}
	/*
	 * X's ports by the step of their next logged change (bhead: a list
	 * per step); xmin, X's port with the smallest share, found again when
	 * its own share grows.
	 */
	for (k = 0; k < c->nsteps; k++)
		bhead[k] = CP_NONE;
	for (uint32_t i = 0; i < nx; i++) {
		uint32_t x = xl[i];

		if (fb->lg_n[x] == 0)
			continue;
		k = fb->lg_step[fb->tl_start[x]];
		bnext[i] = bhead[k];
		bhead[k] = i;
	}
	for (k = 0; k < c->nsteps; k++) {
		uint32_t eb = fb->pk_e[c->tstart + k];
		double bkey = fb->pk_key[c->tstart + k], share = fb->pk_share[c->tstart + k];

		if (xmin_stale) {
			xmin = CP_NONE;
			for (uint32_t i = 0; i < nx; i++)
				xmin = x_first(fb, xmin, xl[i]);
			xmin_stale = false;
		}
		if (fb->xmark[eb] == gen ||
		    (fb->ekey[xmin] < bkey || (fb->ekey[xmin] == bkey && xmin < eb)))
			break;
		for (uint32_t i = bhead[k], inext; i != CP_NONE; i = inext) {
			uint32_t x = xl[i], l = fb->tl_start[x] + fb->xcur[x], lend;
			bool moved = false;

			inext = bnext[i];
			for (lend = fb->tl_start[x] + fb->lg_n[x]; l < lend && fb->lg_step[l] == k;
			     l++) {
				uint32_t n = fb->lg_pn[l];

				if (n) {
					double f = fb->efree[x] - share * n;

					fb->efree[x] = f < 0 ? 0 : f;
					fb->ecnt[x] -= n;
					moved = true;
				}
				fb->lg_free[l] = fb->efree[x];
				fb->lg_cnt[l] = fb->ecnt[x];
			}
			fb->xcur[x] = l - fb->tl_start[x];
			if (moved) {
				double was = fb->ekey[x];

				fb->ekey[x] = share_of(fb->efree[x], fb->ecnt[x]);
				if (x == xmin)
					xmin_stale |= fb->ekey[x] > was;
				else if (x_first(fb, xmin, x) == x)
					xmin = x;
			}
			if (l < lend) {
				uint32_t s = fb->lg_step[l];

				bnext[i] = bhead[s];
				bhead[s] = i;
			}
		}
	}
	if (k < c->nsteps) {
		resume_at(fb, c, k, gen);
		return;
	}
	for (uint32_t e = c->tstart; e < c->tend; e++) {
		fb->free_bps[fb->tports[e]] = fb->efree[e];
		fb->cnt0_last[e] = fb->cnt0[e];
	}
}

/*
 * Max-min fair rates for the pairs of class c on the capacity still free
 * (progressive filling, weighted by each pair's number of flows): the port
 * with the smallest fair share freezes its pairs at that share, until every
 * pair is frozen. A narrow class by fill_steps(), a very wide one (over
 * LINEAR_SCAN_MAX_PORTS ports) with a lazy heap, unlogged.
 */
static void waterfill_class(struct sim_fabric *fb, struct fabric_class *c)
{
	uint32_t gen = next_gen(fb), hn = 0;

	c->logged = c->tend - c->tstart <= LINEAR_SCAN_MAX_PORTS;
	if (c->logged) {
		resume_at(fb, c, 0, gen);
		return;
	}
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
 * `from`; with inc, classes with a log and a snapshot by refill_class().
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
			refill_class(fb, fc, &fb->snap[(size_t)c * np]);
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
		const struct fabric_pair *pr = &fb->pairs[g];

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
		const struct fabric_pair *pr = &fb->pairs[g];

		bool logged = fb->classes[pr->cls].logged;

		if (pr->cls < fb->dirty_class)
			fb->dirty_class = pr->cls;
		for (uint32_t q = 0; q < pr->nports; q++) {
			uint32_t l = fb->pair_lrec[(size_t)g * TOPO_MAX_FLOW_PORTS + q];

			fb->cnt0[fb->pair_ent[(size_t)g * TOPO_MAX_FLOW_PORTS + q]]--;
			/* the log's count of its flows, for refill_class()'s replay */
			if (logged && l != CP_NONE)
				fb->lg_pn[l] = pr->n;
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
 * sim_opts.full_refill: every class re-filled from the full capacity, its
 * per-port flow counts summed again over its pairs, every pair compared
 * with its rate before: what the incremental update must give, bit for bit.
 */
static void refill_reference(struct sim_fabric *fb, fabric_pair_fn pair_rate, void *ctx)
{
	for (uint32_t c = 0; c < fb->nclasses; c++) {
		const struct fabric_class *fc = &fb->classes[c];

		for (uint32_t e = fc->tstart; e < fc->tend; e++)
			fb->cnt0[e] = 0;
		for (uint32_t g = fc->pstart; g < fc->pend; g++) {
			const struct fabric_pair *pr = &fb->pairs[g];

			for (uint32_t q = 0; q < pr->nports; q++)
				fb->cnt0[fb->pair_ent[(size_t)g * TOPO_MAX_FLOW_PORTS + q]] +=
					pr->n;
		}
	}
	for (uint32_t g = 0; g < fb->npairs; g++) {
		fb->old_rate[g] = fb->pairs[g].rate_bps;
		fb->pairs[g].rate_bps = 0;
	}
	fb->dirty_class = CP_NONE;
	fb->nemptied = 0;
	waterfill_from(fb, 0, false);
	for (uint32_t g = 0; g < fb->npairs; g++) {
		const struct fabric_pair *pr = &fb->pairs[g];

		if (pr->n == 0 || pr->rate_bps == fb->old_rate[g])
			continue;
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
		fb->pairs[fb->emptied[i]].rate_bps = 0;
	fb->nemptied = 0;
	fb->tracking = true;
	waterfill_from(fb, from, true);
	fb->tracking = false;
	/* Changed pairs in index order (classes from `from` on), bits cleared. */
	for (uint32_t w = fb->classes[from].pstart / 64; w <= (fb->npairs - 1) / 64; w++) {
		while (fb->chg[w]) {
			uint32_t g = w * 64 + (uint32_t)__builtin_ctzll(fb->chg[w]);

			fb->chg[w] &= fb->chg[w] - 1;
			pair_rate(ctx, g, fb->old_rate[g]);
		}
	}
}
