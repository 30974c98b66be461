/* SPDX-License-Identifier: BSD-3-Clause */
#include "controlplane/policy/fluid.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"

/* Capacity below this fraction of a port's rate counts as none (as in policy_madd). */
#define FLUID_FREE_EPS 1e-9
/* Events closer than this (relative) to the next one happen with it. */
#define FLUID_T_REL 1e-9
/* Demand drains within this fraction of the first one's time share its event. */
#ifndef FLUID_DRAIN_REL
#define FLUID_DRAIN_REL 0.1
#endif
/*
 * A demand whose rbits / drate exceeds a step by this fraction cannot drain
 * in it: rbits <= drate x step x (1 + FLUID_T_REL) holds for none (a few
 * roundings of 1e-16 each).
 */
#define FLUID_SAFE_REL 1e-12
/* Releases due within this many seconds of now happen now (the engine counts whole ns). */
#define FLUID_T_ABS 1e-9
/* An event's work beyond its passes over the live demands (work_left's units). */
#define FLUID_EVENT_WORK 16

/*
 * x where c holds, else +0, without a branch (the ports' states vary from
 * demand to demand, so a branch on them is mispredicted often).
 */
static inline double keep_if(double x, bool c)
{
	uint64_t u;

	memcpy(&u, &x, sizeof(u));
	u &= -(uint64_t)c;
	memcpy(&x, &u, sizeof(x));
	return x;
}

/* Port classes for the backfill's conservation rule. */
static inline bool host_up(const struct policy_fluid *f, uint32_t p)
{
	return p < f->nhosts;
}

static inline bool host_down(const struct policy_fluid *f, uint32_t p)
{
	return p >= f->nhosts && p < 2 * f->nhosts;
}

int policy_fluid_init(struct policy_fluid *f, const struct cp_model *m)
{
	uint32_t np = m->topo ? m->topo->nports : 0;

	memset(f, 0, sizeof(*f));
	f->work_left = POLICY_FLUID_WORK_ANY;
	if (!m->topo)
		return -EINVAL;
	f->nports = np;
	f->nhosts = m->topo->nhosts;
	f->racks = m->topo->nracks > 0;
	f->cap_bps = calloc(np ? np : 1, sizeof(double));
	f->thr_bps = calloc(np ? np : 1, sizeof(double));
	f->free_bps = calloc(np ? np : 1, sizeof(double));
	f->acc = calloc(np ? np : 1, sizeof(double));
	f->port_stamp = calloc(np ? np : 1, sizeof(uint32_t));
	f->local = malloc((m->ncoflows ? m->ncoflows : 1) * sizeof(uint32_t));
	f->bs_pfirst = calloc(np + 1, sizeof(uint32_t));
	f->bs_fill = calloc(np ? np : 1, sizeof(uint32_t));
	f->bs_ports = calloc(np ? np : 1, sizeof(uint32_t));
	f->bs_cidx = calloc(np ? np : 1, sizeof(uint32_t));
	f->bs_pl = calloc(np ? np : 1, sizeof(double));
	if (!f->cap_bps || !f->thr_bps || !f->free_bps || !f->acc || !f->port_stamp || !f->local ||
	    !f->bs_pfirst || !f->bs_fill || !f->bs_ports || !f->bs_cidx || !f->bs_pl) {
		policy_fluid_done(f);
		return -ENOMEM;
	}
	for (uint32_t p = 0; p < np; p++) {
		f->cap_bps[p] = (double)m->topo->port_bps[p];
		f->thr_bps[p] = FLUID_FREE_EPS * f->cap_bps[p];
		if (f->cap_bps[p] > f->thr_bps[p]) {
			f->nfree0++;
			f->nfree_up0 += host_up(f, p);
			f->nfree_down0 += host_down(f, p);
		}
	}
	for (uint32_t c = 0; c < m->ncoflows; c++)
		f->local[c] = CP_NONE;
	return 0;
}

void policy_fluid_done(struct policy_fluid *f)
{
	free(f->cap_bps);
	free(f->thr_bps);
	free(f->dside);
	free(f->rside);
	free(f->rport);
	free(f->dend);
	free(f->free_bps);
	free(f->acc);
	free(f->port_stamp);
	free(f->cof);
	free(f->local);
	free(f->job);
	free(f->dstart);
	free(f->dport);
	free(f->dbits);
	free(f->kstart);
	free(f->kchild);
	free(f->kdelay_s);
	free(f->state0);
	free(f->parents0);
	free(f->ready0_s);
	free(f->earliest_s);
	free(f->jleft0);
	free(f->jweight);
	free(f->tleft);
	free(f->rbits);
	free(f->drate);
	free(f->rank);
	free(f->rnow);
	free(f->state);
	free(f->moving);
	free(f->timed);
	free(f->tdrain);
	free(f->jlb_s);
	free(f->parents);
	free(f->ready_s);
	free(f->rel0_s);
	free(f->rel_s);
	free(f->width);
	free(f->act);
	free(f->jleft);
	free(f->jfinish_s);
	free(f->cfinish_s);
	free(f->key);
	free(f->key2);
	free(f->jkey);
	free(f->path);
	free(f->bs_pfirst);
	free(f->bs_fill);
	free(f->bs_ports);
	free(f->bs_cidx);
	free(f->bs_pl);
	free(f->bs_coflow);
	free(f->bs_bits);
	free(f->bs_w);
	free(f->bs_placed);
	free(f->vote);
	memset(f, 0, sizeof(*f));
}

/* Sizes the per-coflow and per-job arrays for n coflows and nj jobs. */
static int size_coflows(struct policy_fluid *f, uint32_t n, uint32_t nj)
{
	if (n + 1 > f->ncap) {
		size_t c = f->ncap;
		size_t cap;

		if (loom_grow((void **)&f->cof, &c, n + 1, sizeof(uint32_t), 64) < 0)
			return -ENOMEM;
		cap = c;
#define RE(field)                                                                                  \
	do {                                                                                       \
		void *q = realloc(f->field, cap * sizeof(*f->field));                              \
		if (!q)                                                                            \
			return -ENOMEM;                                                            \
		f->field = q;                                                                      \
	} while (0)
		RE(job);
		RE(dstart);
		RE(dend);
		RE(kstart);
		RE(state0);
		RE(parents0);
		RE(ready0_s);
		RE(earliest_s);
		RE(tleft);
		RE(rank);
		RE(rnow);
		RE(state);
		RE(moving);
		RE(timed);
		RE(tdrain);
		RE(parents);
		RE(ready_s);
		RE(rel0_s);
		RE(rel_s);
		RE(width);
		RE(act);
		RE(key);
		RE(key2);
		RE(vote);
		RE(path);
		RE(bs_w);
		RE(bs_placed);
		RE(cfinish_s);
		f->ncap = c;
	}
	if (nj + 1 > f->njcap) {
		size_t c = f->njcap;
		size_t cap;

		if (loom_grow((void **)&f->jleft0, &c, nj + 1, sizeof(uint32_t), 64) < 0)
			return -ENOMEM;
		cap = c;
		RE(jweight);
		RE(jleft);
		RE(jfinish_s);
		RE(jkey);
		RE(jlb_s);
#undef RE
		f->njcap = c;
	}
	return 0;
}

static int push_demand(struct policy_fluid *f, uint32_t *nd, uint32_t port, double bits)
{
	if (*nd + 1 > f->ndcap) {
		size_t c = f->ndcap;
		void *q;

		if (loom_grow((void **)&f->dport, &c, *nd + 1, sizeof(uint32_t), 64) < 0)
			return -ENOMEM;
		q = realloc(f->dbits, (size_t)c * sizeof(double));
		if (!q)
			return -ENOMEM;
		f->dbits = q;
		q = realloc(f->rbits, (size_t)c * sizeof(double));
		if (!q)
			return -ENOMEM;
		f->rbits = q;
		q = realloc(f->drate, (size_t)c * sizeof(double));
		if (!q)
			return -ENOMEM;
		f->drate = q;
		q = realloc(f->bs_bits, (size_t)c * sizeof(double));
		if (!q)
			return -ENOMEM;
		f->bs_bits = q;
		q = realloc(f->bs_coflow, (size_t)c * sizeof(uint32_t));
		if (!q)
			return -ENOMEM;
		f->bs_coflow = q;
		q = realloc(f->dside, (size_t)c * sizeof(uint8_t));
		if (!q)
			return -ENOMEM;
		f->dside = q;
		q = realloc(f->rside, (size_t)c * sizeof(uint8_t));
		if (!q)
			return -ENOMEM;
		f->rside = q;
		q = realloc(f->rport, (size_t)c * sizeof(uint32_t));
		if (!q)
			return -ENOMEM;
		f->rport = q;
		f->ndcap = c;
	}
	f->dside[*nd] = port < f->nhosts ? 0 : port < 2 * f->nhosts ? 1 : 2;
	f->dport[*nd] = port;
	f->dbits[*nd] = bits;
	(*nd)++;
	return 0;
}

/* Adds coflow c's bits still to move to its demand vector (entries from *nd on). */
static int add_coflow_demand(struct policy_fluid *f, const struct cp_model *m, uint32_t c,
			     uint32_t *nd)
{
	const struct cp_coflow *cf = &m->coflows[c];
	bool active = cf->state == CP_COFLOW_ACTIVE;
	uint32_t nfl = active ? cf->flows_left : cf->nflows;
	uint32_t first = *nd;

	if (++f->stamp == 0) {
		memset(f->port_stamp, 0, f->nports * sizeof(uint32_t));
		f->stamp = 1;
	}
	for (uint32_t k = 0; k < nfl; k++) {
		uint32_t fi = active ? m->flow_slot[cf->first_flow + k] : cf->first_flow + k;
		const struct cp_flow *fl = &m->flows[fi];
		double bits;

		if (fl->coflow != c) /* a reserved slot (loomd) */
			continue;
		bits = (active ? fl->remaining_bytes : (double)fl->bytes) * 8.0;
		if (!(bits > 0))
			continue;
		for (uint32_t q = 0; q < fl->nports; q++) {
			uint32_t p = fl->ports[q];

			if (f->port_stamp[p] != f->stamp) {
				f->port_stamp[p] = f->stamp;
				if (push_demand(f, nd, p, 0) < 0)
					return -ENOMEM;
			}
			f->acc[p] += bits;
		}
	}
	for (uint32_t e = first; e < *nd; e++) {
		f->dbits[e] = f->acc[f->dport[e]];
		f->acc[f->dport[e]] = 0;
	}
	return 0;
}

static double ns_from(uint64_t t_ns, uint64_t now_ns)
{
	if (t_ns >= now_ns)
		return (double)(t_ns - now_ns) * 1e-9;
	return -(double)(now_ns - t_ns) * 1e-9;
}

static double path_s(struct policy_fluid *f, uint32_t i);

/* The rollout's demands from the snapshot's: every entry live, in snapshot order. */
static void load_demands(struct policy_fluid *f)
{
	uint32_t nd = f->dstart[f->n];

	memcpy(f->rbits, f->dbits, nd * sizeof(double));
	memcpy(f->rport, f->dport, nd * sizeof(uint32_t));
	memcpy(f->rside, f->dside, nd * sizeof(uint8_t));
	for (uint32_t i = 0; i < f->n; i++)
		f->dend[i] = f->dstart[i + 1];
}

/*
 * f->jlb_s: no rollout finishes job j before the longest remaining critical
 * path from its released or releasing coflows (every waiting coflow descends
 * from one), as no rate exceeds a port's capacity; a little slack covers the
 * rollouts' completion tolerances.
 */
static void job_floors(struct policy_fluid *f)
{
	/* path_s() of the snapshot: the rollout's bits as they are now */
	load_demands(f);
	for (uint32_t i = 0; i < f->n; i++)
		f->path[i] = -1;
	for (uint32_t j = 0; j < f->nj; j++)
		f->jlb_s[j] = 0;
	for (uint32_t i = 0; i < f->n; i++) {
		double start;

		if (f->state0[i] == CP_COFLOW_ACTIVE)
			start = 0;
		else if (f->state0[i] == CP_COFLOW_READY)
			start = fmax(0, f->ready0_s[i]);
		else
			continue;
		f->jlb_s[f->job[i]] = fmax(f->jlb_s[f->job[i]], start + path_s(f, i));
	}
	for (uint32_t j = 0; j < f->nj; j++)
		f->jlb_s[j] = f->jlb_s[j] * (1 - 1e-6) - 1e-6;
}

/* Whether job jb is in the snapshot at now_ns: running, or due within f->future_s. */
static bool in_snapshot(const struct policy_fluid *f, const struct cp_job *jb, uint64_t now_ns)
{
	if (jb->state == CP_JOB_RUNNING)
		return true;
	return jb->state == CP_JOB_PENDING && f->future_s > 0 &&
	       ns_from(jb->arrival_ns, now_ns) <= f->future_s;
}

int policy_fluid_build(struct policy_fluid *f, const struct cp_model *m, uint64_t now_ns)
{
	uint32_t n = 0, nj = 0, nd = 0, nk = 0;

	for (uint32_t i = 0; i < f->n; i++)
		f->local[f->cof[i]] = CP_NONE;
	f->n = 0;
	/* Count first, so every array is sized once. */
	for (uint32_t j = 0; j < m->njobs; j++) {
		const struct cp_job *jb = &m->jobs[j];

		if (!in_snapshot(f, jb, now_ns))
			continue;
		nj++;
		n += jb->state == CP_JOB_RUNNING ? jb->coflows_left : jb->ncoflows;
	}
	if (size_coflows(f, n, nj) < 0)
		return -ENOMEM;
	n = 0;
	nj = 0;
	f->dstart[0] = 0;
	f->unit_weights = true;
	for (uint32_t j = 0; j < m->njobs; j++) {
		const struct cp_job *jb = &m->jobs[j];
		bool future = jb->state == CP_JOB_PENDING;

		if (!in_snapshot(f, jb, now_ns))
			continue;
		f->jweight[nj] = jb->weight;
		f->unit_weights &= jb->weight == 1.0;
		f->jleft0[nj] = 0;
		for (uint32_t c = jb->first_coflow; c < jb->first_coflow + jb->ncoflows; c++) {
			const struct cp_coflow *cf = &m->coflows[c];

			if (cf->state == CP_COFLOW_DONE)
				continue;
			f->cof[n] = c;
			f->local[c] = n;
			f->job[n] = nj;
			f->state0[n] = (uint8_t)cf->state;
			f->parents0[n] = cf->parents_left;
			f->ready0_s[n] = ns_from(cf->ready_ns, now_ns);
			f->rel0_s[n] =
				cf->state == CP_COFLOW_ACTIVE ? ns_from(cf->release_ns, now_ns) : 0;
			f->width[n] = cf->nflows;
			f->earliest_s[n] = ns_from(jb->arrival_ns, now_ns) +
					   (double)cf->release_offset_ns * 1e-9;
			if (future) {
				/* not arrived: its roots are due at their earliest release */
				f->parents0[n] = cf->nparents;
				f->state0[n] = cf->nparents ? CP_COFLOW_WAITING : CP_COFLOW_READY;
				f->ready0_s[n] = cf->nparents ? 0 : f->earliest_s[n];
			}
			if (add_coflow_demand(f, m, c, &nd) < 0)
				return -ENOMEM;
			f->dstart[n + 1] = nd;
			f->jleft0[nj]++;
			n++;
		}
		nj++;
	}
	f->n = n;
	f->nj = nj;
	/* Child edges among the snapshot's coflows. */
	f->kstart[0] = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct cp_coflow *cf = &m->coflows[f->cof[i]];

		for (uint32_t k = 0; k < cf->nchildren; k++) {
			const struct cp_edge *e = &m->edges[m->child_edge[cf->first_child + k]];
			uint32_t ch = f->local[e->child];

			if (ch == CP_NONE)
				continue;
			if (nk + 1 > f->nkcap) {
				size_t c = f->nkcap;
				void *q;

				if (loom_grow((void **)&f->kchild, &c, nk + 1, sizeof(uint32_t),
					      64) < 0)
					return -ENOMEM;
				q = realloc(f->kdelay_s, (size_t)c * sizeof(double));
				if (!q)
					return -ENOMEM;
				f->kdelay_s = q;
				f->nkcap = c;
			}
			f->kchild[nk] = ch;
			f->kdelay_s[nk] = (double)e->delay_ns * 1e-9;
			nk++;
		}
		f->kstart[i + 1] = nk;
	}
	job_floors(f);
	return (int)n;
}

/* Inserts coflow i into the schedulable list, ordered by (rnow, index). */
static void act_insert(struct policy_fluid *f, uint32_t i)
{
	uint32_t pos = f->nact;

	while (pos > 0) {
		uint32_t o = f->act[pos - 1];

		if (f->rnow[o] < f->rnow[i] || (f->rnow[o] == f->rnow[i] && o < i))
			break;
		f->act[pos] = o;
		pos--;
	}
	f->act[pos] = i;
	f->nact++;
	f->live_act += f->dend[i] - f->dstart[i];
}

/*
 * One demand of bits at rate into its coflow's time left *t (the latest
 * drain; INFINITY once a demand has no rate) and first drain *dmin.
 */
static inline void take_time(double bits, double rate, double *t, double *dmin)
{
	double d;

	if (!(rate > 0)) {
		*t = INFINITY;
		return;
	}
	d = bits / rate;
	if (d > *t)
		*t = d;
	if (d < *dmin)
		*dmin = d;
}

/*
 * Seconds until the last of demands [e0, e1) drains at their rates
 * (INFINITY: never, a demand without a rate); lowers *drain to the time
 * the first drains. The arrays are allocate()'s, which holds them as
 * restrict pointers: they are passed, not read through f.
 */
static double time_left_s(const double *rbits, const double *drate, uint32_t e0, uint32_t e1,
			  double *drain)
{
	double t = 0, dmin = *drain;

	for (uint32_t e = e0; e < e1; e++)
		take_time(rbits[e], drate[e], &t, &dmin);
	*drain = dmin;
	return t;
}

/*
 * Rates for the schedulable list, in order: MADD (every port demand of a
 * coflow finishes at its bottleneck time on the capacity left; a coflow with
 * a saturated port gets nothing), then backfill in the same order: each
 * coflow's demands take what their ports have left, the uplink and downlink
 * sides scaled to the smaller of the two (a bit leaves one uplink and enters
 * one downlink), as the engine's greedy per-flow backfill does in sum. On a
 * fabric with racks the backfill is left out (it cannot be balanced port by
 * port there), which only makes the model more pessimistic.
 *
 * Then each schedulable coflow's time left at these rates (f->tleft: INFINITY
 * without a rate, unless nothing is left) and the time its first demand
 * drains (f->tdrain); returns the least of the latter, and the least of the
 * former in *ret_tmin. A backfilled coflow's are taken in its backfill pass,
 * once its rates are final (the rates of coflows later in the order do not
 * change them).
 *
 * The arrays are read through restrict copies: the stores to the uint8_t
 * moving[] would otherwise make the compiler reload every pointer of f.
 * A port's capacity left at or below its threshold (none, as in
 * policy_madd) is stored as 0, so every test of a port is against 0.
 */
static double allocate(struct policy_fluid *f, double *ret_tmin)
{
	const uint32_t *restrict act = f->act, *restrict dstart = f->dstart,
				 *restrict dend = f->dend, *restrict rport = f->rport;
	const uint8_t *restrict rside = f->rside;
	const double *restrict rbits = f->rbits, *restrict thr = f->thr_bps;
	double *restrict drate = f->drate, *restrict freeb = f->free_bps,
			 *restrict tleft = f->tleft, *restrict tdrain = f->tdrain;
	uint8_t *restrict moving = f->moving, *restrict timed = f->timed;
	const uint32_t nact = f->nact;
	/* ports with capacity left (all, host uplinks, host downlinks): none left, nothing moves */
	uint32_t nfree = f->nfree0, nfree_up = f->nfree_up0, nfree_down = f->nfree_down0;
	double drain = INFINITY, tmin = INFINITY;

	memcpy(freeb, f->cap_bps, f->nports * sizeof(double));
	for (uint32_t a = 0; a < nact; a++) {
		uint32_t i = act[a], e0 = dstart[i], e1 = dend[i];
		double g = 0; /* seconds to finish at the bottleneck */
		bool blocked = false;

		moving[i] = 0;
		timed[i] = 0;
		if (nfree == 0)
			continue; /* a coflow with bits left would be blocked */
		for (uint32_t e = e0; e < e1; e++) {
			uint32_t p = rport[e];

			if (!(freeb[p] > 0)) { /* at or below its threshold */
				blocked = true;
				break;
			}
			if (rbits[e] > g * freeb[p]) /* divide only on a new max */
				g = rbits[e] / freeb[p];
		}
		if (blocked || !(g > 0))
			continue;
		g = 1 / g;
		moving[i] = 1;
		for (uint32_t e = e0; e < e1; e++) {
			uint32_t p = rport[e];
			bool had = freeb[p] > 0;

			drate[e] = rbits[e] * g;
			freeb[p] -= drate[e];
			if (freeb[p] <= thr[p]) {
				freeb[p] = 0;
				if (had) {
					nfree--;
					nfree_up -= rside[e] == 0;
					nfree_down -= rside[e] == 1;
				}
			}
		}
	}
	for (uint32_t a = 0; !f->racks && a < nact && nfree_up > 0 && nfree_down > 0; a++) {
		uint32_t i = act[a], e0 = dstart[i], e1 = dend[i];
		double up = 0, down = 0, su, sd, t = 0, dmin = INFINITY;

		for (uint32_t e = e0; e < e1; e++) {
			uint32_t p = rport[e];
			/* a full port's is +0, which leaves a sum as it is */
			double fr = freeb[p];

			up += keep_if(fr, rside[e] == 0);
			down += keep_if(fr, rside[e] == 1);
		}
		if (!(up > 0) || !(down > 0))
			continue;
		su = up > down ? down / up : 1;
		sd = down > up ? up / down : 1;
		if (!moving[i]) {
			/* no MADD rate: its rates are stale, start them from 0 */
			for (uint32_t e = e0; e < e1; e++)
				drate[e] = 0;
			moving[i] = 1;
		}
		for (uint32_t e = e0; e < e1; e++) {
			uint32_t p = rport[e];

			if (freeb[p] > 0) {
				double extra = freeb[p] * (rside[e] == 0 ? su : sd);

				drate[e] += extra;
				freeb[p] -= extra;
				if (freeb[p] <= thr[p]) {
					freeb[p] = 0;
					nfree--;
					nfree_up -= rside[e] == 0;
					nfree_down -= rside[e] == 1;
				}
			}
			take_time(rbits[e], drate[e], &t, &dmin);
		}
		tleft[i] = t;
		tdrain[i] = dmin;
		timed[i] = 1;
	}
	for (uint32_t a = 0; a < nact; a++) {
		uint32_t i = act[a];

		if (!timed[i]) {
			double dmin = INFINITY;

			/* no rate: never, unless nothing is left */
			if (!moving[i])
				tleft[i] = dend[i] > dstart[i] ? INFINITY : 0;
			else
				tleft[i] = time_left_s(rbits, drate, dstart[i], dend[i], &dmin);
			tdrain[i] = dmin;
		}
		if (tdrain[i] < drain)
			drain = tdrain[i];
		if (tleft[i] < tmin)
			tmin = tleft[i];
	}
	*ret_tmin = tmin;
	return drain;
}

static void job_coflow_done(struct policy_fluid *f, uint32_t i, double t)
{
	uint32_t j = f->job[i];

	if (--f->jleft[j] == 0) {
		f->jfinish_s[j] = t;
		f->jobs_open--;
		f->done_cost += f->jweight[j] * t;
	}
}

/* Coflow i finished at t: its children may become ready. */
static void complete(struct policy_fluid *f, uint32_t i, double t)
{
	f->state[i] = CP_COFLOW_DONE;
	f->cfinish_s[i] = t;
	for (uint32_t e = f->dstart[i]; e < f->dend[i]; e++)
		f->rbits[e] = 0;
	f->dend[i] = f->dstart[i];
	for (uint32_t k = f->kstart[i]; k < f->kstart[i + 1]; k++) {
		uint32_t ch = f->kchild[k];
		double r = t + f->kdelay_s[k];

		if (f->ready_s[ch] < r)
			f->ready_s[ch] = r;
		if (!f->own_rank)
			f->rnow[ch] = f->rnow[i];
		if (--f->parents[ch] == 0) {
			if (f->ready_s[ch] < f->earliest_s[ch])
				f->ready_s[ch] = f->earliest_s[ch];
			f->state[ch] = CP_COFLOW_READY;
			f->nready++;
			if (f->ready_s[ch] < f->next_ready_s)
				f->next_ready_s = f->ready_s[ch];
		}
	}
	job_coflow_done(f, i, t);
}

/* f->next_ready_s: the earliest release of a READY coflow (INFINITY: none). */
static void find_next_ready(struct policy_fluid *f)
{
	double r = INFINITY;

	for (uint32_t i = 0; f->nready > 0 && i < f->n; i++)
		if (f->state[i] == CP_COFLOW_READY && f->ready_s[i] < r)
			r = f->ready_s[i];
	f->next_ready_s = r;
}

/* Releases every READY coflow due by t; a coflow with nothing to move completes at once. */
static void release_due(struct policy_fluid *f, double t)
{
	bool again = true;

	if (f->nready == 0 || f->next_ready_s > t + FLUID_T_ABS)
		return; /* nothing due */
	while (again && f->nready > 0) {
		again = false;
		for (uint32_t i = 0; i < f->n; i++) {
			if (f->state[i] != CP_COFLOW_READY || f->ready_s[i] > t + FLUID_T_ABS)
				continue;
			f->nready--;
			if (f->dstart[i] == f->dstart[i + 1]) {
				complete(f, i, t);
				again = true;
				continue;
			}
			f->state[i] = CP_COFLOW_ACTIVE;
			f->rel_s[i] = t;
			act_insert(f, i);
		}
	}
	find_next_ready(f);
}

/* Seconds coflow i needs alone on the empty fabric for what it has left. */
static double bottleneck_s(const struct policy_fluid *f, uint32_t i)
{
	double b = 0;

	for (uint32_t e = f->dstart[i]; e < f->dend[i]; e++)
		if (f->rbits[e] / f->cap_bps[f->rport[e]] > b)
			b = f->rbits[e] / f->cap_bps[f->rport[e]];
	return b;
}

/* Remaining critical path of coflow i: its bottleneck, then its longest child path. */
static double path_s(struct policy_fluid *f, uint32_t i)
{
	double tail = 0;

	if (f->path[i] >= 0)
		return f->path[i];
	for (uint32_t k = f->kstart[i]; k < f->kstart[i + 1]; k++) {
		double t = f->kdelay_s[k] + path_s(f, f->kchild[k]);

		if (t > tail)
			tail = t;
	}
	f->path[i] = bottleneck_s(f, i) + tail;
	return f->path[i];
}

/* Job j's bottleneck over all its unfinished coflows, s (snapshot coflows of a job are contiguous). */
static double job_bottleneck_s(struct policy_fluid *f, uint32_t first, uint32_t j)
{
	double worst = 0;
	uint32_t end = first;

	while (end < f->n && f->job[end] == j)
		end++;
	for (uint32_t i = first; i < end; i++) {
		if (f->state[i] == CP_COFLOW_DONE)
			continue;
		for (uint32_t e = f->dstart[i]; e < f->dend[i]; e++) {
			uint32_t p = f->rport[e];
			double t;

			f->acc[p] += f->rbits[e];
			t = f->acc[p] / f->cap_bps[p];
			if (t > worst)
				worst = t;
		}
	}
	for (uint32_t i = first; i < end; i++)
		for (uint32_t e = f->dstart[i]; e < f->dend[i]; e++)
			f->acc[f->rport[e]] = 0;
	return worst;
}

/*
 * The first place of the largest of x[0 .. n) (x >= 0, no NaN; n > 0), in
 * one pass without branches (the loads are in no order): four lanes keep
 * each its largest and its first place; of the lanes' the largest wins,
 * then the first place, as a scan in order would find it.
 */
static uint32_t argmax_first(const double *x, uint32_t n)
{
	double m[4] = {-1, -1, -1, -1};
	uint32_t at[4] = {0, 0, 0, 0}, q = 0, best = 0;

	for (; q + 4 <= n; q += 4)
		for (uint32_t l = 0; l < 4; l++) {
			bool gt = x[q + l] > m[l];

			at[l] = gt ? q + l : at[l];
			m[l] = gt ? x[q + l] : m[l];
		}
	for (; q < n; q++) {
		bool gt = x[q] > m[0];

		at[0] = gt ? q : at[0];
		m[0] = gt ? x[q] : m[0];
	}
	for (uint32_t l = 1; l < 4; l++)
		if (m[l] > m[best] || (m[l] == m[best] && at[l] < at[best]))
			best = l;
	return at[best];
}

/*
 * Sincronia's BSSI over the schedulable list (controlplane/policy/sincronia.c
 * on the fluid state): fills the order from the back; key[i] = position.
 */
static void bssi(struct policy_fluid *f)
{
	uint32_t left = f->nact, front = 0, nused = 0;

	memset(f->bs_pfirst, 0, (f->nports + 1) * sizeof(uint32_t));
	for (uint32_t a = 0; a < f->nact; a++) {
		uint32_t i = f->act[a];

		f->bs_w[i] = f->jweight[f->job[i]];
		f->bs_placed[i] = 0;
		for (uint32_t e = f->dstart[i]; e < f->dend[i]; e++)
			f->bs_pfirst[f->rport[e] + 1]++;
	}
	for (uint32_t p = 0; p < f->nports; p++) {
		if (f->bs_pfirst[p + 1]) {
			/* the ports with demands, ascending; their loads below */
			f->bs_cidx[p] = nused;
			f->bs_pl[nused] = 0;
			f->bs_ports[nused++] = p;
		}
		f->bs_pfirst[p + 1] += f->bs_pfirst[p];
	}
	memcpy(f->bs_fill, f->bs_pfirst, f->nports * sizeof(uint32_t));
	for (uint32_t a = 0; a < f->nact; a++) {
		uint32_t i = f->act[a];

		for (uint32_t e = f->dstart[i]; e < f->dend[i]; e++) {
			uint32_t k = f->bs_fill[f->rport[e]]++;

			f->bs_coflow[k] = i;
			f->bs_bits[k] = f->rbits[e];
			f->bs_pl[f->bs_cidx[f->rport[e]]] += f->rbits[e];
		}
	}
	while (left > 0) {
		uint32_t b, last = CP_NONE;
		double ratio = INFINITY, dl = 0;

		/*
		 * The first most loaded port: the most load, then the first port
		 * with it (bs_ports ascending; a port with no demand has no load).
		 * Ports at the end with no load left leave the list, so the last
		 * has some: the most is above 0 while any port is left.
		 */
		while (nused > 0 && !(f->bs_pl[nused - 1] > 0))
			nused--;
		if (nused == 0)
			break;
		b = f->bs_ports[argmax_first(f->bs_pl, nused)];
		for (uint32_t k = f->bs_pfirst[b]; k < f->bs_pfirst[b + 1]; k++) {
			uint32_t i = f->bs_coflow[k];
			double v;

			if (f->bs_placed[i])
				continue;
			v = f->bs_w[i] / f->bs_bits[k];
			/* ties: the later release goes last */
			if (v < ratio ||
			    (v == ratio && last != CP_NONE && f->rel_s[i] > f->rel_s[last])) {
				ratio = v;
				last = i;
				dl = f->bs_bits[k];
			}
		}
		if (last == CP_NONE)
			break;
		for (uint32_t k = f->bs_pfirst[b]; k < f->bs_pfirst[b + 1]; k++) {
			uint32_t i = f->bs_coflow[k];

			if (f->bs_placed[i] || i == last)
				continue;
			f->bs_w[i] -= f->bs_w[last] * f->bs_bits[k] / dl;
			if (f->bs_w[i] < 0)
				f->bs_w[i] = 0;
		}
		f->bs_placed[last] = 1;
		for (uint32_t e = f->dstart[last]; e < f->dend[last]; e++) {
			double *l = &f->bs_pl[f->bs_cidx[f->rport[e]]];

			*l -= f->rbits[e];
			if (*l < 0)
				*l = 0;
		}
		f->key[last] = --left;
	}
	/* nothing left to send (or float residue): first, in release order */
	for (uint32_t a = 0; a < f->nact; a++) {
		uint32_t i = f->act[a];

		if (!f->bs_placed[i])
			f->key[i] = (double)front++ - (double)f->nact;
	}
}

static int cmp_keys(const void *a, const void *b, void *arg)
{
	const struct policy_fluid *f = arg;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;

	if (f->key[i] != f->key[j])
		return f->key[i] < f->key[j] ? -1 : 1;
	if (f->key2[i] != f->key2[j])
		return f->key2[i] < f->key2[j] ? -1 : 1;
	/* as the policies break ties (policy_sort_active): earlier release, then index */
	if (f->rel_s[i] != f->rel_s[j])
		return f->rel_s[i] < f->rel_s[j] ? -1 : 1;
	return i < j ? -1 : i > j;
}

/*
 * Sorts the schedulable list by cmp_keys(), a total order, so any sort gives
 * the same list. A short list is sorted in place by insertion: it is nearly
 * in order already (the last event's order, by the same keys but for the
 * coflows the event changed), so that costs little more than one pass.
 */
static void sort_act(struct policy_fluid *f)
{
	if (f->nact > 64) {
		qsort_r(f->act, f->nact, sizeof(*f->act), cmp_keys, f);
		return;
	}
	for (uint32_t a = 1; a < f->nact; a++) {
		uint32_t i = f->act[a], b = a;

		while (b > 0 && cmp_keys(&i, &f->act[b - 1], f) < 0) {
			f->act[b] = f->act[b - 1];
			b--;
		}
		f->act[b] = i;
	}
}

static void rerank(struct policy_fluid *f, enum policy_fluid_rule rule);

/*
 * The blend policy's default vote (controlplane/policy/blend.c) on the fluid
 * state: each rule's place, weighted, over the schedulable count; ties by
 * BSSI's place.
 */
static void blend(struct policy_fluid *f)
{
	static const struct {
		enum policy_fluid_rule rule;
		double w;
	} votes[] = {
		{POLICY_FLUID_BSSI, 1},
		{POLICY_FLUID_WSRJF, 1},
		{POLICY_FLUID_SEBF, 0.5},
		{POLICY_FLUID_LCF, 0.3},
	};
	double inv = 1.0 / f->nact;

	for (uint32_t a = 0; a < f->nact; a++)
		f->vote[f->act[a]] = 0;
	for (size_t v = 0; v < sizeof(votes) / sizeof(votes[0]); v++) {
		rerank(f, votes[v].rule);
		for (uint32_t a = 0; a < f->nact; a++)
			f->vote[f->act[a]] += votes[v].w * a * inv;
		if (v == 0)
			for (uint32_t a = 0; a < f->nact; a++)
				f->bs_w[f->act[a]] = a; /* BSSI's place, the tie-break */
	}
	for (uint32_t a = 0; a < f->nact; a++) {
		f->key[f->act[a]] = f->vote[f->act[a]];
		f->key2[f->act[a]] = f->bs_w[f->act[a]];
	}
}

/* Re-sorts the schedulable list by rule. */
static void rerank(struct policy_fluid *f, enum policy_fluid_rule rule)
{
	if (rule == POLICY_FLUID_FROZEN || f->nact < 2)
		return;
	if (rule == POLICY_FLUID_BLEND) {
		blend(f);
		sort_act(f);
		return;
	}
	if (rule == POLICY_FLUID_SRJF || rule == POLICY_FLUID_WSRJF || rule == POLICY_FLUID_CPF ||
	    rule == POLICY_FLUID_WCPF) {
		for (uint32_t i = 0; i < f->n; i++)
			f->path[i] = -1;
		for (uint32_t j = 0; j < f->nj; j++)
			f->jkey[j] = -1;
	}
	if (rule == POLICY_FLUID_BSSI) {
		for (uint32_t a = 0; a < f->nact; a++)
			f->key2[f->act[a]] = 0;
		bssi(f);
		sort_act(f);
		return;
	}
	for (uint32_t a = 0; a < f->nact; a++) {
		uint32_t i = f->act[a], j = f->job[i];

		f->key2[i] = 0;
		switch (rule) {
		case POLICY_FLUID_SEBF:
			f->key[i] = bottleneck_s(f, i);
			break;
		case POLICY_FLUID_WSEBF:
			f->key[i] = bottleneck_s(f, i) / f->jweight[j];
			break;
		case POLICY_FLUID_LCF: {
			double bits = 0;

			/* every port's demand: twice the bits on the big switch, a constant factor */
			for (uint32_t e = f->dstart[i]; e < f->dend[i]; e++)
				bits += f->rbits[e];
			f->key[i] = bits;
			break;
		}
		case POLICY_FLUID_SRJF:
		case POLICY_FLUID_WSRJF:
			if (f->jkey[j] < 0) {
				uint32_t first = i;

				while (first > 0 && f->job[first - 1] == j)
					first--;
				f->jkey[j] = job_bottleneck_s(f, first, j);
				if (rule == POLICY_FLUID_WSRJF)
					f->jkey[j] /= f->jweight[j];
			}
			f->key[i] = f->jkey[j];
			f->key2[i] = -path_s(f, i);
			break;
		case POLICY_FLUID_FIFO:
			f->key[i] = f->rel_s[i];
			break;
		case POLICY_FLUID_NCF:
			f->key[i] = f->width[i];
			break;
		case POLICY_FLUID_CPF:
			f->key[i] = -path_s(f, i);
			break;
		case POLICY_FLUID_WCPF:
			f->key[i] = -f->jweight[j] * path_s(f, i);
			break;
		case POLICY_FLUID_FROZEN:
		case POLICY_FLUID_BSSI:
		case POLICY_FLUID_BLEND:
		case POLICY_FLUID_NRULES:
			break;
		}
	}
	sort_act(f);
}

/* Puts the rollout state back to the snapshot; the schedulable list by rank. */
static void reset(struct policy_fluid *f)
{
	f->nact = 0;
	f->nready = 0;
	f->jobs_open = 0;
	f->done_cost = 0;
	for (uint32_t j = 0; j < f->nj; j++) {
		f->jleft[j] = f->jleft0[j];
		f->jfinish_s[j] = -1;
		f->jobs_open += f->jleft[j] > 0;
	}
	load_demands(f);
	for (uint32_t i = 0; i < f->n; i++) {
		f->tleft[i] = INFINITY;
		f->cfinish_s[i] = -1;
		f->rnow[i] = f->rank[i];
		f->state[i] = f->state0[i];
		f->parents[i] = f->parents0[i];
		f->ready_s[i] = f->ready0_s[i];
		f->rel_s[i] = f->rel0_s[i];
		f->nready += f->state[i] == CP_COFLOW_READY;
	}
	find_next_ready(f);
}

uint32_t policy_fluid_order(struct policy_fluid *f, enum policy_fluid_rule rule,
			    uint32_t *ret_order)
{
	for (uint32_t i = 0; i < f->n; i++)
		f->rank[i] = 0;
	reset(f);
	for (uint32_t i = 0; i < f->n; i++)
		if (f->state[i] == CP_COFLOW_ACTIVE)
			f->act[f->nact++] = i;
	rerank(f, rule);
	for (uint32_t a = 0; a < f->nact; a++)
		ret_order[a] = f->cof[f->act[a]];
	return f->nact;
}

/* The unweighted rule a weighted one becomes when every weight is 1 (else itself). */
static enum policy_fluid_rule unweighted(enum policy_fluid_rule r)
{
	return r == POLICY_FLUID_WSEBF ? POLICY_FLUID_SEBF :
	       r == POLICY_FLUID_WSRJF ? POLICY_FLUID_SRJF :
					 r;
}

bool policy_fluid_rules_alike(const struct policy_fluid *f, enum policy_fluid_rule a,
			      enum policy_fluid_rule b)
{
	return a == b || (f->unit_weights && unweighted(a) == unweighted(b));
}

/* The least the run from t on can cost in all (policy_fluid_run's bound). */
static double cost_floor(const struct policy_fluid *f, double t, double end)
{
	double c = f->done_cost;

	for (uint32_t j = 0; j < f->nj; j++)
		if (f->jfinish_s[j] < 0)
			c += f->jweight[j] * (f->jlb_s[j] > t ?
						      (f->jlb_s[j] < end ? f->jlb_s[j] : end) :
						      (t < end ? t : end));
	return c;
}

double policy_fluid_run(struct policy_fluid *f, enum policy_fluid_rule rule, double horizon_s,
			double bound)
{
	double t = 0, cost = 0, end = horizon_s > 0 ? horizon_s : INFINITY;
	bool resort = false;

	f->first_s = INFINITY;
	f->out_of_work = false;
	reset(f);
	f->live_act = 0;
	for (uint32_t i = 0; i < f->n; i++) {
		if (f->state[i] != CP_COFLOW_ACTIVE)
			continue;
		if (f->dstart[i] == f->dstart[i + 1]) {
			complete(f, i, 0);
			continue;
		}
		act_insert(f, i);
	}
	release_due(f, 0);
	for (;;) {
		double dt = end - t;     /* time to the next event */
		double drain = INFINITY; /* time to the first demand that drains */
		double tmin;             /* time to the first coflow that completes */
		uint64_t work;
		uint32_t w = 0;

		/* an event costs a few passes over the live demands of the schedulable */
		work = f->live_act + f->nact + FLUID_EVENT_WORK;
		if (work > f->work_left) {
			f->work_left = 0;
			f->out_of_work = true;
			return INFINITY;
		}
		f->work_left -= work;
		if (resort)
			rerank(f, rule);
		/* a demand that drains frees its port's capacity for the others */
		drain = allocate(f, &tmin);
		if (tmin < dt)
			dt = tmin;
		/*
		 * Drains close together are taken as one event: the step runs a little
		 * past the first of them, whose capacity idles for the difference
		 * (pessimistic), so that wide coflows do not cost an event per port.
		 */
		if (drain * (1 + FLUID_DRAIN_REL) < dt)
			dt = drain * (1 + FLUID_DRAIN_REL);
		/* the earliest due release (f->next_ready_s: the least of READY ready_s) */
		if (f->nready > 0 && f->next_ready_s - t < dt)
			dt = f->next_ready_s > t ? f->next_ready_s - t : 0;
		if (!isfinite(dt))
			break; /* nothing can move and nothing is due: leave the rest unfinished */
		/* Completions are decided on durations, not on the clock (no drift at large t). */
		t += dt;
		resort = false;
		f->live_act = 0;
		for (uint32_t a = 0; a < f->nact; a++) {
			uint32_t i = f->act[a], live;

			if (f->tleft[i] <= dt * (1 + FLUID_T_REL)) {
				complete(f, i, t);
				resort = true;
				continue;
			}
			if (!f->moving[i]) {
				f->live_act += f->dend[i] - f->dstart[i];
				f->act[w++] = i;
				continue;
			}
			if (f->tdrain[i] > dt * (1 + FLUID_T_REL) * (1 + FLUID_SAFE_REL)) {
				/*
				 * None drains (each rbits / drate is past the step by more than
				 * rounding): as below, without the test (a rate of 0 takes 0)
				 */
				double *restrict rbits = f->rbits;
				const double *restrict drate = f->drate;

				for (uint32_t e = f->dstart[i], e1 = f->dend[i]; e < e1; e++)
					rbits[e] -= drate[e] * dt;
				f->live_act += f->dend[i] - f->dstart[i];
				f->act[w++] = i;
				continue;
			}
			/* drained demands leave the live ones, which keep their order */
			live = f->dstart[i];
			for (uint32_t e = f->dstart[i]; e < f->dend[i]; e++) {
				if (f->drate[e] > 0) {
					if (f->rbits[e] <= f->drate[e] * dt * (1 + FLUID_T_REL)) {
						f->rbits[e] = 0;
						continue;
					}
					f->rbits[e] -= f->drate[e] * dt;
				}
				if (live != e) {
					f->rbits[live] = f->rbits[e];
					f->drate[live] = f->drate[e];
					f->rport[live] = f->rport[e];
					f->rside[live] = f->rside[e];
					f->rbits[e] = 0;
				}
				live++;
			}
			f->dend[i] = live;
			f->live_act += live - f->dstart[i];
			f->act[w++] = i;
		}
		f->nact = w;
		release_due(f, t);
		if (f->nact != w)
			resort = true;
		/* The order given holds until the first completion or release. */
		if (resort && !isfinite(f->first_s))
			f->first_s = t;
		if (t >= end)
			break;
		if (f->jobs_open == 0)
			break;
		if (bound < INFINITY && cost_floor(f, t, end) >= bound)
			return INFINITY; /* it cannot win */
	}
	for (uint32_t j = 0; j < f->nj; j++)
		cost += f->jweight[j] * (f->jfinish_s[j] >= 0 ? f->jfinish_s[j] : t);
	return cost;
}
