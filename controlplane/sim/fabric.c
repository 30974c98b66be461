/* SPDX-License-Identifier: BSD-3-Clause */
#include "controlplane/sim/fabric.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Capacity below this fraction of a port's rate counts as none (float residue). */
#define FREE_EPS 1e-9

int sim_fabric_init(struct sim_fabric *fb, const struct cp_model *m)
{
	uint32_t np = m->topo->nports;
	size_t nf = m->nflows ? m->nflows : 1;

	memset(fb, 0, sizeof(*fb));
	fb->nports = np;
	fb->cap = calloc(np, sizeof(*fb->cap));
	fb->free_bps = calloc(np, sizeof(*fb->free_bps));
	fb->cnt = calloc(np, sizeof(*fb->cnt));
	fb->pstart = calloc(np, sizeof(*fb->pstart));
	fb->pfill = calloc(np, sizeof(*fb->pfill));
	fb->touched = calloc(np, sizeof(*fb->touched));
	fb->ver = calloc(np, sizeof(*fb->ver));
	fb->plist = calloc(nf * TOPO_MAX_FLOW_PORTS, sizeof(*fb->plist));
	fb->flows = calloc(nf, sizeof(*fb->flows));
	fb->fstamp = calloc(nf, sizeof(*fb->fstamp));
	fb->heap_cap = (size_t)np + nf * TOPO_MAX_FLOW_PORTS + 1;
	fb->heap = calloc(fb->heap_cap, sizeof(*fb->heap));
	if (!fb->cap || !fb->free_bps || !fb->cnt || !fb->pstart || !fb->pfill || !fb->touched ||
	    !fb->ver || !fb->plist || !fb->flows || !fb->fstamp || !fb->heap) {
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
	free(fb->cnt);
	free(fb->pstart);
	free(fb->pfill);
	free(fb->touched);
	free(fb->ver);
	free(fb->plist);
	free(fb->flows);
	free(fb->fstamp);
	free(fb->heap);
	memset(fb, 0, sizeof(*fb));
}

/* ---- a binary min-heap on share with lazy deletion ------------------------ */

static void heap_push(struct fabric_heap_ent *h, size_t *n, struct fabric_heap_ent e)
{
	size_t i = (*n)++;

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (h[parent].share <= e.share)
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i] = e;
}

static struct fabric_heap_ent heap_pop(struct fabric_heap_ent *h, size_t *n)
{
	struct fabric_heap_ent top = h[0], last = h[--(*n)];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1].share < h[c].share)
			c++;
		if (last.share <= h[c].share)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = last;
	return top;
}

static inline double port_share(const struct sim_fabric *fb, uint32_t p)
{
	double f = fb->free_bps[p];

	return f > 0 ? f / fb->cnt[p] : 0;
}

/*
 * Max-min fair rates for fb->flows[0 .. n) on the capacity still free
 * (progressive filling): repeatedly the port with the smallest fair share
 * freezes its unfrozen flows at that share.
 */
static void waterfill(struct sim_fabric *fb, struct cp_model *m, uint32_t n)
{
	uint32_t ntouched = 0, off = 0;
	size_t hn = 0;
	uint32_t gen = ++fb->gen;

	if (gen == 0) { /* wrapped: restart stamps */
		memset(fb->fstamp, 0, (m->nflows ? m->nflows : 1) * sizeof(*fb->fstamp));
		gen = fb->gen = 1;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct cp_flow *fl = &m->flows[fb->flows[i]];

		for (uint32_t q = 0; q < fl->nports; q++) {
			uint32_t p = fl->ports[q];

			if (fb->cnt[p]++ == 0)
				fb->touched[ntouched++] = p;
		}
	}
	for (uint32_t i = 0; i < ntouched; i++) {
		uint32_t p = fb->touched[i];

		fb->pstart[p] = fb->pfill[p] = off;
		off += fb->cnt[p];
		fb->ver[p]++;
		heap_push(fb->heap, &hn, (struct fabric_heap_ent){port_share(fb, p), p, fb->ver[p]});
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct cp_flow *fl = &m->flows[fb->flows[i]];

		for (uint32_t q = 0; q < fl->nports; q++)
			fb->plist[fb->pfill[fl->ports[q]]++] = fb->flows[i];
	}
	while (hn > 0) {
		struct fabric_heap_ent e = heap_pop(fb->heap, &hn);
		uint32_t p = e.port;
		double share;

		if (e.ver != fb->ver[p] || fb->cnt[p] == 0)
			continue;
		share = e.share;
		if (fb->free_bps[p] <= FREE_EPS * fb->cap[p])
			share = 0;
		for (uint32_t k = fb->pstart[p]; k < fb->pfill[p]; k++) {
			uint32_t f = fb->plist[k];
			struct cp_flow *fl = &m->flows[f];

			if (fb->fstamp[f] == gen)
				continue;
			fb->fstamp[f] = gen;
			fl->rate_bps = share;
			for (uint32_t q = 0; q < fl->nports; q++) {
				uint32_t p2 = fl->ports[q];

				fb->free_bps[p2] -= share;
				if (fb->free_bps[p2] < 0)
					fb->free_bps[p2] = 0;
				fb->cnt[p2]--;
				if (p2 != p && fb->cnt[p2] > 0) {
					fb->ver[p2]++;
					heap_push(fb->heap, &hn,
						  (struct fabric_heap_ent){port_share(fb, p2), p2,
									   fb->ver[p2]});
				}
			}
		}
		fb->free_bps[p] = 0;
	}
}

/* Collects the unfinished flows of the coflows at order positions [from, to). */
static uint32_t gather(struct sim_fabric *fb, const struct cp_model *m,
		       const struct policy_decision *d, uint32_t from, uint32_t to)
{
	uint32_t n = 0;

	for (uint32_t i = from; i < to; i++) {
		const struct cp_coflow *cf = &m->coflows[d->order[i]];

		memcpy(&fb->flows[n], &m->flow_slot[cf->first_flow],
		       cf->flows_left * sizeof(*fb->flows));
		n += cf->flows_left;
	}
	return n;
}

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

/* Gives each flow of coflow c min(its policy rate, the headroom on its path). */
static void apply_rates(struct sim_fabric *fb, struct cp_model *m, const struct cp_coflow *cf,
			const double *rate_bps)
{
	const uint32_t *slot = &m->flow_slot[cf->first_flow];

	for (uint32_t k = 0; k < cf->flows_left; k++) {
		struct cp_flow *fl = &m->flows[slot[k]];
		double r = rate_bps[slot[k]];
		double h;

		if (!(r > 0)) {
			fl->rate_bps = 0;
			continue;
		}
		h = flow_headroom(fb, fl);
		if (r > h)
			r = h;
		fl->rate_bps = r;
		flow_take(fb, fl, r);
	}
}

/* Work conservation: hands leftover capacity to flows greedily, in order. */
static void backfill(struct sim_fabric *fb, struct cp_model *m, const struct policy_decision *d)
{
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

void sim_fabric_allocate(struct sim_fabric *fb, struct cp_model *m,
			 const struct policy_decision *d, const struct sim_opts *o)
{
	bool use_rates = d->has_rates && o->mode == SIM_MODE_IDEAL;
	uint32_t i = 0;

	memcpy(fb->free_bps, fb->cap, fb->nports * sizeof(*fb->free_bps));
	while (i < d->norder) {
		uint32_t cls = class_at(d, o, i), j = i + 1;

		while (j < d->norder && class_at(d, o, j) == cls)
			j++;
		if (use_rates && j == i + 1)
			apply_rates(fb, m, &m->coflows[d->order[i]], d->rate_bps);
		else
			waterfill(fb, m, gather(fb, m, d, i, j));
		i = j;
	}
	if (use_rates)
		backfill(fb, m, d);
	for (i = 0; i < d->norder; i++) {
		struct cp_coflow *cf = &m->coflows[d->order[i]];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];
		double sum = 0;

		for (uint32_t k = 0; k < cf->flows_left; k++)
			sum += m->flows[slot[k]].rate_bps;
		cf->rate_bps = sum;
	}
}

double sim_fabric_max_load(const struct sim_fabric *fb, const struct cp_model *m)
{
	double *load = fb->free_bps; /* reused as scratch: allocation is over */
	double worst = 0;

	memset(load, 0, fb->nports * sizeof(*load));
	for (uint32_t a = 0; a < m->nactive; a++) {
		const struct cp_coflow *cf = &m->coflows[m->active[a]];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];

		for (uint32_t k = 0; k < cf->flows_left; k++) {
			const struct cp_flow *fl = &m->flows[slot[k]];

			for (uint32_t q = 0; q < fl->nports; q++)
				load[fl->ports[q]] += fl->rate_bps;
		}
	}
	for (uint32_t p = 0; p < fb->nports; p++)
		if (load[p] / fb->cap[p] > worst)
			worst = load[p] / fb->cap[p];
	return worst;
}
