/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The event loop. State is kept lazily, so a step costs what changes in it,
 * not the number of flows in flight:
 *   - rate mode: a flow's remaining bytes are exact as of t_at[f] and move at
 *     its constant rate; the completion heap holds flows;
 *   - water-fill mode: flows of a fabric pair share one rate, so the pair
 *     keeps a virtual clock (bytes served per member) and each member a tag
 *     (its remaining bytes when the pair was built); members finish in tag
 *     order, kept in a per-pair heap, and the completion heap holds pairs.
 * Flow remaining bytes are brought up to date before every policy decision.
 */
#include "controlplane/sim/sim.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/heap.h"
#include "controlplane/sim/fabric.h"

void sim_opts_default(struct sim_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->mode = SIM_MODE_IDEAL;
	o->classes = 8;
	o->quantize = SIM_QUANT_CONFLICT;
}

int sim_quantize_parse(const char *s, enum sim_quantize *ret_q)
{
	static const enum sim_quantize all[] = {SIM_QUANT_CONFLICT, SIM_QUANT_PER_HOST,
						SIM_QUANT_TOP, SIM_QUANT_EVEN};

	for (size_t i = 0; s && i < sizeof(all) / sizeof(all[0]); i++)
		if (strcmp(s, sim_quantize_name(all[i])) == 0) {
			*ret_q = all[i];
			return 0;
		}
	return -EINVAL;
}

const char *sim_quantize_name(enum sim_quantize q)
{
	switch (q) {
	case SIM_QUANT_TOP:
		return "top";
	case SIM_QUANT_EVEN:
		return "even";
	case SIM_QUANT_PER_HOST:
		return "per-host";
	case SIM_QUANT_CONFLICT:
		return "conflict";
	}
	return "?";
}

/* A unit in the completion heap with its eta (one load per comparison). */
struct eta_ent {
	uint64_t eta_ns;
	uint32_t unit;
};

/* A pending coflow release. */
struct release {
	uint64_t t_ns;
	uint32_t coflow;
};

struct engine {
	struct cp_model *m;
	struct policy *p;
	const struct sim_opts *o;
	struct sim_stats *st;
	struct sim_fabric fabric;
	struct policy_decision d;
	uint32_t *stamp;
	uint32_t stamp_gen;
	uint64_t now;

	uint64_t *t_at; /* per flow: time its remaining_bytes refers to */
	double *tag;    /* per flow, water-fill mode: see above */
	/* Completion heap over units: flows in rate mode, pairs in water-fill mode. */
	uint64_t *eta_ns;      /* per unit: next completion at current rates */
	uint32_t *hpos;        /* per unit: index in fheap, CP_NONE if absent */
	struct eta_ent *fheap; /* units by eta, the eta beside each */
	uint32_t nfheap;
	uint64_t *cf_t_at; /* per coflow: time its sent_bytes refers to */
	uint64_t *job_t_at;
	double *job_rate;
	double *alloc_bps; /* per port, only with opts.check */
	uint32_t *dirty;   /* ports whose allocation changed this step (check) */
	uint32_t ndirty;
	bool *is_dirty;
	uint32_t *done; /* flows finishing in the current step */
	/* opts.stats_ns: the bytes at the last report, swapped in while the policy decides */
	double *rep_rem; /* per flow: remaining bytes */
	double *rep_cf;  /* per coflow: sent bytes */
	double *rep_job; /* per job: sent bytes */

	struct release *rheap; /* pending releases by time */
	uint32_t nrheap;
	struct cp_event *evs; /* events of the current step, for the policy */
	size_t nevs, cap_evs;
	bool significant; /* the step had an event the policy must see */
	int emit_err;
};

/* ---- heaps (common/heap.h) ------------------------------------------------ */

/* Pending releases by time. */
#define REL_LESS(ctx, a, b) ((a).t_ns < (b).t_ns)
LOOM_HEAP_DEFINE(rel_heap, struct release, const void *, REL_LESS, LOOM_HEAP_NO_MOVED)

/* Completion heap: units by eta_ns, each unit's index kept in hpos. */
#define ETA_LESS(e, a, b)  ((a).eta_ns < (b).eta_ns)
#define ETA_MOVED(e, x, i) ((e)->hpos[(x).unit] = (i))
LOOM_HEAP_DEFINE(eta_heap, struct eta_ent, struct engine *, ETA_LESS, ETA_MOVED)

/* Members of a pair form a min-heap on tag in members[mstart .. mstart + n). */
#define TAG_LESS(e, a, b) ((e)->tag[a] < (e)->tag[b])
LOOM_HEAP_DEFINE(tag_heap, uint32_t, struct engine *, TAG_LESS, LOOM_HEAP_NO_MOVED)

static void fh_remove(struct engine *e, uint32_t f)
{
	uint32_t i = e->hpos[f];

	if (i == CP_NONE)
		return;
	e->hpos[f] = CP_NONE;
	eta_heap_remove_at(e, e->fheap, &e->nfheap, i);
}

/* Puts f at its eta (or removes it when it never completes). */
static void fh_update(struct engine *e, uint32_t f)
{
	if (e->eta_ns[f] == CP_TIME_NEVER) {
		fh_remove(e, f);
		return;
	}
	if (e->hpos[f] == CP_NONE) {
		eta_heap_push(e, e->fheap, &e->nfheap, (struct eta_ent){e->eta_ns[f], f});
		return;
	}
	e->fheap[e->hpos[f]].eta_ns = e->eta_ns[f];
	eta_heap_fix(e, e->fheap, e->nfheap, e->hpos[f]);
}

/* ---- lazy accounting ------------------------------------------------------ */

/* Time to move `bytes` at `rate_bps`, rounded up to a whole nanosecond (>= 1). */
static inline uint64_t time_to_send(double bytes, double rate_bps)
{
	double ns = ceil(bytes * 8e9 / rate_bps);

	if (ns < 1)
		return 1;
	if (ns >= 1.8e19)
		return CP_TIME_NEVER;
	return (uint64_t)ns;
}

static inline void flow_sync(struct engine *e, uint32_t f)
{
	struct cp_flow *fl = &e->m->flows[f];

	if (fl->rate_bps > 0)
		fl->remaining_bytes -= fl->rate_bps * (double)(e->now - e->t_at[f]) * 1.25e-10;
	e->t_at[f] = e->now;
}

static inline void coflow_sync(struct engine *e, uint32_t c)
{
	struct cp_coflow *cf = &e->m->coflows[c];
	struct cp_job *jb = &e->m->jobs[cf->job];

	if (cf->rate_bps > 0)
		cf->sent_bytes += cf->rate_bps * (double)(e->now - e->cf_t_at[c]) * 1.25e-10;
	e->cf_t_at[c] = e->now;
	if (e->job_rate[cf->job] > 0)
		jb->sent_bytes +=
			e->job_rate[cf->job] * (double)(e->now - e->job_t_at[cf->job]) * 1.25e-10;
	e->job_t_at[cf->job] = e->now;
}

static void flow_plan(struct engine *e, uint32_t f)
{
	const struct cp_flow *fl = &e->m->flows[f];
	uint64_t dt;

	e->eta_ns[f] = CP_TIME_NEVER;
	if (fl->rate_bps > 0) {
		dt = time_to_send(fl->remaining_bytes > 0 ? fl->remaining_bytes : 0, fl->rate_bps);
		if (dt != CP_TIME_NEVER)
			e->eta_ns[f] = e->now + dt;
	}
}

/* With opts.check: tracks each port's allocated rate (checked at the end of a step). */
static void alloc_add(struct engine *e, const struct cp_flow *fl, double delta)
{
	for (uint32_t q = 0; q < fl->nports; q++) {
		uint32_t p = fl->ports[q];

		e->alloc_bps[p] += delta;
		if (!e->is_dirty[p]) {
			e->is_dirty[p] = true;
			e->dirty[e->ndirty++] = p;
		}
	}
}

/* End of a step: no port may carry more than its capacity. */
static void check_ports(struct engine *e)
{
	for (uint32_t i = 0; i < e->ndirty; i++) {
		uint32_t p = e->dirty[i];
		double load = e->alloc_bps[p] / (double)e->m->topo->port_bps[p];

		if (load > e->st->max_port_load)
			e->st->max_port_load = load;
		e->is_dirty[p] = false;
	}
	e->ndirty = 0;
}

/* Changes one flow's rate at the current time (the fabric's callback). */
static void set_rate(void *ctx, uint32_t f, double rate_bps)
{
	struct engine *e = ctx;
	struct cp_flow *fl = &e->m->flows[f];
	struct cp_coflow *cf = &e->m->coflows[fl->coflow];
	double delta = rate_bps - fl->rate_bps;

	flow_sync(e, f);
	coflow_sync(e, fl->coflow);
	cf->rate_bps += delta;
	e->job_rate[cf->job] += delta;
	if (e->o->check)
		alloc_add(e, fl, delta);
	fl->rate_bps = rate_bps;
	flow_plan(e, f);
	fh_update(e, f);
}

/* ---- model events --------------------------------------------------------- */

static void on_model_event(void *ctx, const struct cp_event *ev)
{
	struct engine *e = ctx;

	if (ev->type == CP_EV_COFLOW_READY)
		rel_heap_push(NULL, e->rheap, &e->nrheap,
			      (struct release){ev->time_ns > e->now ? ev->time_ns : e->now,
					       ev->id});
	if (ev->type != CP_EV_FLOW_DONE || e->p->decide_on_flow_done)
		e->significant = true;
	if (e->nevs == e->cap_evs) {
		size_t ncap = e->cap_evs ? e->cap_evs * 2 : 1024;
		struct cp_event *v = realloc(e->evs, ncap * sizeof(*v));

		if (!v) {
			e->emit_err = -ENOMEM;
			return;
		}
		e->evs = v;
		e->cap_evs = ncap;
	}
	e->evs[e->nevs++] = *ev;
}

static void engine_done(struct engine *e)
{
	sim_fabric_done(&e->fabric);
	policy_decision_done(&e->d);
	free(e->stamp);
	free(e->t_at);
	free(e->tag);
	free(e->eta_ns);
	free(e->hpos);
	free(e->fheap);
	free(e->cf_t_at);
	free(e->job_t_at);
	free(e->job_rate);
	free(e->alloc_bps);
	free(e->dirty);
	free(e->is_dirty);
	free(e->done);
	free(e->rep_rem);
	free(e->rep_cf);
	free(e->rep_job);
	free(e->rheap);
	free(e->evs);
	cp_model_set_emit(e->m, NULL, NULL);
}

static int engine_init(struct engine *e, struct cp_model *m)
{
	size_t nf = m->nflows ? m->nflows : 1, nc = m->ncoflows ? m->ncoflows : 1;
	size_t nj = m->njobs ? m->njobs : 1;

	if (sim_fabric_init(&e->fabric, m) < 0 || policy_decision_init(&e->d, m) < 0)
		return -ENOMEM;
	e->stamp = calloc(nc, sizeof(*e->stamp));
	e->t_at = calloc(nf, sizeof(*e->t_at));
	e->tag = calloc(nf, sizeof(*e->tag));
	e->eta_ns = calloc(nf, sizeof(*e->eta_ns));
	e->hpos = malloc(nf * sizeof(*e->hpos));
	e->fheap = malloc(nf * sizeof(*e->fheap));
	e->cf_t_at = calloc(nc, sizeof(*e->cf_t_at));
	e->job_t_at = calloc(nj, sizeof(*e->job_t_at));
	e->job_rate = calloc(nj, sizeof(*e->job_rate));
	e->alloc_bps = calloc(m->topo->nports, sizeof(*e->alloc_bps));
	e->dirty = calloc(m->topo->nports, sizeof(*e->dirty));
	e->is_dirty = calloc(m->topo->nports, sizeof(*e->is_dirty));
	e->done = malloc(nf * sizeof(*e->done));
	e->rheap = malloc(nc * sizeof(*e->rheap));
	if (!e->stamp || !e->t_at || !e->tag || !e->eta_ns || !e->hpos || !e->fheap ||
	    !e->cf_t_at || !e->job_t_at || !e->job_rate || !e->alloc_bps || !e->dirty ||
	    !e->is_dirty || !e->done || !e->rheap)
		return -ENOMEM;
	memset(e->hpos, 0xff, nf * sizeof(*e->hpos));
	if (e->o->stats_ns) {
		e->rep_rem = malloc(nf * sizeof(*e->rep_rem));
		e->rep_cf = calloc(nc, sizeof(*e->rep_cf));
		e->rep_job = calloc(nj, sizeof(*e->rep_job));
		if (!e->rep_rem || !e->rep_cf || !e->rep_job)
			return -ENOMEM;
		for (uint32_t f = 0; f < m->nflows; f++)
			e->rep_rem[f] = (double)m->flows[f].bytes;
	}
	return 0;
}

static uint64_t admit_time(const struct engine *e, uint32_t j)
{
	uint64_t t = e->m->jobs[j].arrival_ns, ep = e->o->epoch_ns;

	if (!ep || t % ep == 0)
		return t;
	return (t / ep + 1) * ep;
}

/* ---- water-fill mode: pairs with a virtual clock --------------------------- */

static inline void pair_sync(struct engine *e, struct fabric_pair *pr, double rate_bps)
{
	if (rate_bps > 0)
		pr->vbytes += rate_bps * (double)(e->now - pr->tv_ns) * 1.25e-10;
	pr->tv_ns = e->now;
}

/* The pair's next completion (pair synced to now). */
static void pair_plan(struct engine *e, uint32_t g)
{
	const struct fabric_pair *pr = &e->fabric.pairs[g];
	uint64_t dt;
	double left;

	e->eta_ns[g] = CP_TIME_NEVER;
	if (pr->n == 0 || pr->rate_bps <= 0)
		return;
	left = pr->head_tag - pr->vbytes;
	dt = time_to_send(left > 0 ? left : 0, pr->rate_bps);
	if (dt != CP_TIME_NEVER)
		e->eta_ns[g] = e->now + dt;
}

/* Fabric callback: pair g's rate changed from old_bps to pairs[g].rate_bps. */
static void pair_rate(void *ctx, uint32_t g, double old_bps)
{
	struct engine *e = ctx;
	struct fabric_pair *pr = &e->fabric.pairs[g];
	double delta = pr->rate_bps - old_bps;

	pair_sync(e, pr, old_bps);
	for (uint32_t k = pr->estart; k < pr->eend; k++) {
		const struct fabric_entry *en = &e->fabric.entries[k];
		struct cp_coflow *cf = &e->m->coflows[en->coflow];

		if (!en->count)
			continue;
		coflow_sync(e, en->coflow);
		cf->rate_bps += delta * en->count;
		e->job_rate[cf->job] += delta * en->count;
	}
	if (e->o->check)
		for (uint32_t k = 0; k < pr->nports; k++) {
			uint32_t p = pr->ports[k];

			e->alloc_bps[p] += delta * pr->n;
			if (!e->is_dirty[p]) {
				e->is_dirty[p] = true;
				e->dirty[e->ndirty++] = p;
			}
		}
	pair_plan(e, g);
	fh_update(e, g);
}

/* Brings every active flow, coflow and job up to now (before a decision). */
static void sync_all(struct engine *e)
{
	struct cp_model *m = e->m;
	struct sim_fabric *fb = &e->fabric;

	for (uint32_t a = 0; a < m->nactive; a++)
		coflow_sync(e, m->active[a]);
	if (fb->rate_mode) {
		for (uint32_t a = 0; a < m->nactive; a++) {
			const struct cp_coflow *cf = &m->coflows[m->active[a]];
			const uint32_t *slot = &m->flow_slot[cf->first_flow];

			for (uint32_t k = 0; k < cf->flows_left; k++)
				flow_sync(e, slot[k]);
		}
		return;
	}
	/* Flows released since the last decision are in no pair and have not moved. */
	for (uint32_t g = 0; g < fb->npairs; g++) {
		struct fabric_pair *pr = &fb->pairs[g];

		pair_sync(e, pr, pr->rate_bps);
		for (uint32_t k = 0; k < pr->n; k++) {
			uint32_t f = fb->members[pr->mstart + k];
			struct cp_flow *fl = &m->flows[f];

			fl->remaining_bytes = e->tag[f] - pr->vbytes;
			fl->rate_bps = pr->rate_bps;
			e->t_at[f] = e->now;
		}
	}
}

/* After a full allocation: etas, the heap, coflow and job rates, checks. */
static void replan_all(struct engine *e)
{
	struct cp_model *m = e->m;
	uint32_t n = 0;

	for (uint32_t a = 0; a < m->nactive; a++)
		e->job_rate[m->coflows[m->active[a]].job] = 0;
	for (uint32_t i = 0; i < e->nfheap; i++)
		e->hpos[e->fheap[i].unit] = CP_NONE;
	if (e->o->check)
		memset(e->alloc_bps, 0, m->topo->nports * sizeof(*e->alloc_bps));
	for (uint32_t a = 0; a < m->nactive; a++) {
		struct cp_coflow *cf = &m->coflows[m->active[a]];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];
		double sum = 0;

		for (uint32_t k = 0; k < cf->flows_left; k++) {
			uint32_t f = slot[k];
			const struct cp_flow *fl = &m->flows[f];

			sum += fl->rate_bps;
			e->t_at[f] = e->now;
			if (e->fabric.rate_mode) {
				flow_plan(e, f);
				if (e->eta_ns[f] != CP_TIME_NEVER)
					e->fheap[n++] = (struct eta_ent){e->eta_ns[f], f};
			} else {
				e->tag[f] = fl->remaining_bytes;
			}
			if (e->o->check)
				alloc_add(e, fl, fl->rate_bps);
		}
		cf->rate_bps = sum;
		e->job_rate[cf->job] += sum;
	}
	for (uint32_t g = 0; !e->fabric.rate_mode && g < e->fabric.npairs; g++) {
		struct fabric_pair *pr = &e->fabric.pairs[g];
		uint32_t *h = &e->fabric.members[pr->mstart];

		pr->vbytes = 0;
		pr->tv_ns = e->now;
		tag_heap_heapify(e, h, pr->n);
		pr->head_tag = pr->n ? e->tag[h[0]] : 0;
		pair_plan(e, g);
		if (e->eta_ns[g] != CP_TIME_NEVER)
			e->fheap[n++] = (struct eta_ent){e->eta_ns[g], g};
	}
	e->nfheap = n;
	for (uint32_t i = 0; i < n; i++)
		e->hpos[e->fheap[i].unit] = i;
	eta_heap_heapify(e, e->fheap, n);
}

/* Earliest time a watched threshold is reached at current rates. */
static uint64_t watch_time(struct engine *e)
{
	const struct policy_decision *d = &e->d;
	struct cp_model *m = e->m;
	uint64_t next = CP_TIME_NEVER;

	for (uint32_t i = 0; i < d->nwatch; i++) {
		const struct policy_watch *w = &d->watch[i];
		const struct cp_coflow *cf = &m->coflows[w->coflow];
		double sent, rate;
		uint64_t dt;

		if (cf->state != CP_COFLOW_ACTIVE)
			continue;
		coflow_sync(e, w->coflow);
		sent = w->job_level ? m->jobs[cf->job].sent_bytes : cf->sent_bytes;
		rate = w->job_level ? e->job_rate[cf->job] : cf->rate_bps;
		if (rate <= 0)
			continue;
		dt = sent >= w->sent_bytes ? 1 : time_to_send(w->sent_bytes - sent, rate);
		if (dt != CP_TIME_NEVER && e->now + dt < next)
			next = e->now + dt;
	}
	return next;
}

static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* One finished flow's bookkeeping (both modes); rate is what it ran at. */
static void flow_finished(struct engine *e, uint32_t f, double rate, double resid, uint32_t *n)
{
	struct cp_model *m = e->m;
	struct cp_flow *fl = &m->flows[f];
	struct cp_coflow *cf = &m->coflows[fl->coflow];

	/*
	 * In nanoseconds of transfer at the flow's rate, less what double
	 * precision leaves on a count of the flow's size (SIM_RESID_ULPS units
	 * in the last place of its bytes: 2.3e-6 B of a 162 MB flow, where one
	 * nanosecond at 44 Mbit/s moves 5.5e-3 B).
	 */
	if (e->o->check && rate > 0) {
		double ns = fmax(0, resid - SIM_RESID_ULPS * DBL_EPSILON * (double)fl->bytes) *
			    8e9 / rate;

		if (ns > e->st->max_residual_ns)
			e->st->max_residual_ns = ns;
	}
	coflow_sync(e, fl->coflow);
	cf->rate_bps -= rate;
	e->job_rate[cf->job] -= rate;
	if (e->o->check)
		alloc_add(e, fl, -rate);
	sim_fabric_flow_gone(&e->fabric, m, f, rate);
	e->done[(*n)++] = f;
	cp_model_flow_done(m, f, e->now);
}

/* Retires the flows due at now; returns how many. */
static uint32_t retire_due(struct engine *e)
{
	struct cp_model *m = e->m;
	struct sim_fabric *fb = &e->fabric;
	uint32_t n = 0;

	while (e->nfheap && e->fheap[0].eta_ns <= e->now) {
		uint32_t u = e->fheap[0].unit;

		if (fb->rate_mode) {
			struct cp_flow *fl = &m->flows[u];
			double rate = fl->rate_bps;

			fh_remove(e, u);
			flow_sync(e, u);
			flow_finished(e, u, rate, fabs(fl->remaining_bytes), &n);
			continue;
		}
		/* The pair's first member is due; so is any member with the same tag. */
		struct fabric_pair *pr = &fb->pairs[u];
		bool first = true;

		pair_sync(e, pr, pr->rate_bps);
		while (pr->n) {
			uint32_t f = fb->members[pr->mstart];
			double left = e->tag[f] - pr->vbytes;

			if (!first && left > 0)
				break;
			first = false;
			tag_heap_pop(e, &fb->members[pr->mstart], &pr->n);
			fb->entries[fb->flow_entry[f]].count--;
			flow_finished(e, f, pr->rate_bps, fabs(left), &n);
		}
		if (pr->n)
			pr->head_tag = e->tag[fb->members[pr->mstart]];
		pair_plan(e, u);
		fh_update(e, u);
	}
	return n;
}

/* opts.stats_ns: the jobs whose bytes are reported (and swapped in). */
static inline bool job_reported(const struct cp_job *jb, uint64_t now)
{
	return jb->arrival_ns <= now && jb->finish_ns == CP_TIME_NEVER;
}

/*
 * opts.stats_ns: the agents' report: the bytes of every schedulable coflow
 * now, and of every job that has arrived and not finished (a job's count
 * includes its finished coflows', as loomd's registry adds every report to
 * the job).
 */
static void take_reports(struct engine *e)
{
	struct cp_model *m = e->m;

	sync_all(e);
	for (uint32_t a = 0; a < m->nactive; a++) {
		uint32_t c = m->active[a];
		const struct cp_coflow *cf = &m->coflows[c];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];

		for (uint32_t k = 0; k < cf->flows_left; k++)
			e->rep_rem[slot[k]] = m->flows[slot[k]].remaining_bytes;
		e->rep_cf[c] = cf->sent_bytes;
	}
	/* a job without a schedulable coflow has no rate: its count is current */
	for (uint32_t j = 0; j < m->njobs; j++)
		if (job_reported(&m->jobs[j], e->now))
			e->rep_job[j] = m->jobs[j].sent_bytes;
}

static inline void swap_d(double *a, double *b)
{
	double t = *a;

	*a = *b;
	*b = t;
}

/*
 * Swaps the reported bytes and the model's (of every schedulable coflow and
 * its unfinished flows, and of every reported job): before the policy
 * decides, and again after.
 */
static void swap_reports(struct engine *e)
{
	struct cp_model *m = e->m;

	for (uint32_t j = 0; j < m->njobs; j++)
		if (job_reported(&m->jobs[j], e->now))
			swap_d(&e->rep_job[j], &m->jobs[j].sent_bytes);
	for (uint32_t a = 0; a < m->nactive; a++) {
		uint32_t c = m->active[a];
		struct cp_coflow *cf = &m->coflows[c];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];

		for (uint32_t k = 0; k < cf->flows_left; k++)
			swap_d(&e->rep_rem[slot[k]], &m->flows[slot[k]].remaining_bytes);
		swap_d(&e->rep_cf[c], &cf->sent_bytes);
	}
}

/*
 * A decision now. synced: sync_all() already ran at this instant (in
 * take_reports()) and nothing has moved since, so it is not run again.
 */
static int decide(struct engine *e, bool synced, struct loom_err *err)
{
	struct cp_model *m = e->m;
	int r;

	if (!synced)
		sync_all(e);
	policy_decision_clear(&e->d);
	if (e->o->stats_ns)
		swap_reports(e);
	r = policy_decide(e->p, m, e->now, &e->d);
	if (e->o->stats_ns)
		swap_reports(e);
	e->st->decisions++;
	if (r < 0)
		return loom_err_set(err, -r, "policy '%s' failed at t=%llu ns", e->p->cls->name,
				    (unsigned long long)e->now);
	if (++e->stamp_gen == 0) {
		memset(e->stamp, 0, m->ncoflows * sizeof(*e->stamp));
		e->stamp_gen = 1;
	}
	r = policy_decision_validate(&e->d, m, e->stamp, e->stamp_gen, err);
	if (r < 0)
		return r;
	if (e->o->on_decision)
		e->o->on_decision(e->o->decision_ctx, m, e->now, &e->d);
	sim_fabric_allocate(&e->fabric, m, &e->d, e->o);
	if (e->o->on_classes && !e->fabric.rate_mode)
		e->o->on_classes(e->o->classes_ctx, m, e->now, e->fabric.flow_cls);
	replan_all(e);
	if (e->o->check)
		e->st->checked_steps++;
	return 0;
}

int sim_run(struct cp_model *m, struct policy *p, const struct sim_opts *o,
	    struct sim_stats *ret_stats, struct loom_err *err)
{
	struct engine e = {.m = m, .p = p, .o = o};
	struct sim_stats st = {0};
	uint64_t next_watch = CP_TIME_NEVER;
	uint64_t next_tick = o->reeval_ns ? o->reeval_ns : CP_TIME_NEVER;
	uint64_t next_report = o->stats_ns ? o->stats_ns : CP_TIME_NEVER;
	uint32_t next_job = 0;
	bool synced;
	int r = 0;

	if (!m->topo)
		return loom_err_set(err, EINVAL, "model is not bound to a fabric");
	e.st = &st;
	if (engine_init(&e, m) < 0) {
		r = loom_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	cp_model_reset(m);
	cp_model_set_emit(m, on_model_event, &e);

	while (!cp_model_all_done(m)) {
		uint64_t t = CP_TIME_NEVER,
			 wake = e.d.wakeup_ns > e.now ? e.d.wakeup_ns : CP_TIME_NEVER;
		uint32_t ndone;

		if (next_job < m->njobs)
			t = admit_time(&e, next_job);
		if (e.nrheap)
			t = min_u64(t, e.rheap[0].t_ns);
		if (e.nfheap)
			t = min_u64(t, e.fheap[0].eta_ns);
		t = min_u64(t, next_watch);
		t = min_u64(t, wake);
		if (m->nactive)
			t = min_u64(t, next_tick);
		if (t == CP_TIME_NEVER) {
			r = loom_err_set(err, EDEADLK,
					 "policy '%s' left %u schedulable coflows without "
					 "bandwidth and nothing else can happen",
					 p->cls->name, m->nactive);
			goto out;
		}
		/* a report changes nothing that moves: not counted above */
		if (m->nactive)
			t = min_u64(t, next_report);

		e.now = t;
		e.nevs = 0;
		e.significant = t == next_watch || t == wake;
		ndone = retire_due(&e);
		while (next_job < m->njobs && admit_time(&e, next_job) <= e.now)
			cp_model_job_arrive(m, next_job++, e.now);
		while (e.nrheap && e.rheap[0].t_ns <= e.now)
			cp_model_coflow_release(m, rel_heap_pop(NULL, e.rheap, &e.nrheap).coflow,
						e.now);
		if (e.emit_err) {
			r = loom_err_set(err, -e.emit_err, "out of memory");
			goto out;
		}
		synced = false;
		if (next_report <= e.now) {
			take_reports(&e);
			synced = true;
			next_report = (e.now / o->stats_ns + 1) * o->stats_ns;
			/* loomd checks a decision's watches at every report, on its counts */
			if (e.d.nwatch)
				e.significant = true;
		}
		if (next_tick <= e.now) {
			e.significant = true;
			next_tick = o->reeval_ns ? (e.now / o->reeval_ns + 1) * o->reeval_ns :
						   CP_TIME_NEVER;
		}
		st.events += e.nevs;
		st.steps++;
		for (size_t i = 0; i < e.nevs; i++)
			policy_on_event(p, m, &e.evs[i]);
		if (cp_model_all_done(m))
			break;

		if (e.significant) {
			r = decide(&e, synced, err);
			if (r < 0)
				goto out;
		} else if (ndone) {
			sim_fabric_update(&e.fabric, m, e.done, ndone, set_rate, pair_rate, &e);
		}
		if (o->check)
			check_ports(&e);
		next_watch = e.d.nwatch && !o->stats_ns ? watch_time(&e) : CP_TIME_NEVER;
		if (o->progress && o->progress_every && st.steps % o->progress_every == 0) {
			struct sim_progress pr = {e.now, m->jobs_done, m->njobs, st.events};

			o->progress(o->progress_ctx, &pr);
		}
	}
	st.makespan_ns = e.now;
	if (o->progress) {
		struct sim_progress pr = {e.now, m->jobs_done, m->njobs, st.events};

		o->progress(o->progress_ctx, &pr);
	}
out:
	engine_done(&e);
	if (ret_stats)
		*ret_stats = st;
	return r;
}
