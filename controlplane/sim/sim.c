/* SPDX-License-Identifier: BSD-3-Clause */
#include "controlplane/sim/sim.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/sim/fabric.h"

void sim_opts_default(struct sim_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->mode = SIM_MODE_IDEAL;
	o->classes = 8;
	o->quantize = SIM_QUANT_TOP;
}

/* A pending coflow release (the only timed model event besides arrivals). */
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
	uint64_t *eta_ns; /* per flow: completion time at current rates */
	uint32_t *done;   /* flows completing at the current step */
	struct release *heap;
	size_t nheap;
	struct cp_event *evs; /* events produced during a step, for the policy */
	size_t nevs, cap_evs;
	int emit_err;
	double *job_rate; /* scratch for job-level watches */
};

static void rel_push(struct engine *e, uint64_t t, uint32_t c)
{
	size_t i = e->nheap++;

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (e->heap[parent].t_ns <= t)
			break;
		e->heap[i] = e->heap[parent];
		i = parent;
	}
	e->heap[i] = (struct release){t, c};
}

static struct release rel_pop(struct engine *e)
{
	struct release top = e->heap[0], last = e->heap[--e->nheap];
	size_t i = 0, n = e->nheap;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && e->heap[c + 1].t_ns < e->heap[c].t_ns)
			c++;
		if (last.t_ns <= e->heap[c].t_ns)
			break;
		e->heap[i] = e->heap[c];
		i = c;
	}
	if (n)
		e->heap[i] = last;
	return top;
}

static void on_model_event(void *ctx, const struct cp_event *ev)
{
	struct engine *e = ctx;

	if (ev->type == CP_EV_COFLOW_READY)
		rel_push(e, ev->time_ns, ev->id); /* heap holds at most ncoflows */
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
	free(e->eta_ns);
	free(e->done);
	free(e->heap);
	free(e->evs);
	free(e->job_rate);
	cp_model_set_emit(e->m, NULL, NULL);
}

static int engine_init(struct engine *e, struct cp_model *m)
{
	size_t nf = m->nflows ? m->nflows : 1, nc = m->ncoflows ? m->ncoflows : 1;

	if (sim_fabric_init(&e->fabric, m) < 0 || policy_decision_init(&e->d, m) < 0)
		return -ENOMEM;
	e->stamp = calloc(nc, sizeof(*e->stamp));
	e->eta_ns = malloc(nf * sizeof(*e->eta_ns));
	e->done = malloc(nf * sizeof(*e->done));
	e->heap = malloc(nc * sizeof(*e->heap));
	e->job_rate = calloc(m->njobs ? m->njobs : 1, sizeof(*e->job_rate));
	if (!e->stamp || !e->eta_ns || !e->done || !e->heap || !e->job_rate)
		return -ENOMEM;
	return 0;
}

static uint64_t admit_time(const struct engine *e, uint32_t j)
{
	uint64_t t = e->m->jobs[j].arrival_ns, ep = e->o->epoch_ns;

	if (!ep || t % ep == 0)
		return t;
	return (t / ep + 1) * ep;
}

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

/*
 * Moves every unfinished flow from now to t at its current rate and collects
 * the flows due by t. Returns how many are due.
 */
static uint32_t advance(struct engine *e, uint64_t now, uint64_t t)
{
	struct cp_model *m = e->m;
	double dt_s = (double)(t - now) * 1e-9;
	uint32_t ndone = 0;

	for (uint32_t a = 0; a < m->nactive; a++) {
		struct cp_coflow *cf = &m->coflows[m->active[a]];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];
		double moved = cf->rate_bps * dt_s / 8.0;

		cf->sent_bytes += moved;
		m->jobs[cf->job].sent_bytes += moved;
		if (cf->rate_bps <= 0)
			continue;
		for (uint32_t k = 0; k < cf->flows_left; k++) {
			uint32_t f = slot[k];
			struct cp_flow *fl = &m->flows[f];

			if (fl->rate_bps <= 0)
				continue;
			fl->remaining_bytes -= fl->rate_bps * dt_s / 8.0;
			if (e->eta_ns[f] <= t)
				e->done[ndone++] = f;
		}
	}
	return ndone;
}

/* After an allocation: each flow's completion time; returns the earliest. */
static uint64_t plan(struct engine *e, uint64_t now)
{
	struct cp_model *m = e->m;
	uint64_t next = CP_TIME_NEVER;

	for (uint32_t a = 0; a < m->nactive; a++) {
		const struct cp_coflow *cf = &m->coflows[m->active[a]];
		const uint32_t *slot = &m->flow_slot[cf->first_flow];

		for (uint32_t k = 0; k < cf->flows_left; k++) {
			uint32_t f = slot[k];
			const struct cp_flow *fl = &m->flows[f];
			uint64_t eta = CP_TIME_NEVER;

			if (fl->rate_bps > 0) {
				double left = fl->remaining_bytes > 0 ? fl->remaining_bytes : 0;
				uint64_t dt = time_to_send(left, fl->rate_bps);

				if (dt != CP_TIME_NEVER)
					eta = now + dt;
			}
			e->eta_ns[f] = eta;
			if (eta < next)
				next = eta;
		}
	}
	return next;
}

/* Earliest time a watched threshold is reached at current rates. */
static uint64_t watch_time(struct engine *e, uint64_t now)
{
	const struct policy_decision *d = &e->d;
	struct cp_model *m = e->m;
	uint64_t next = CP_TIME_NEVER;
	bool jobs = false;

	for (uint32_t i = 0; i < d->nwatch; i++)
		jobs |= d->watch[i].job_level;
	if (jobs) {
		for (uint32_t a = 0; a < m->nactive; a++)
			e->job_rate[m->coflows[m->active[a]].job] = 0;
		for (uint32_t a = 0; a < m->nactive; a++) {
			const struct cp_coflow *cf = &m->coflows[m->active[a]];

			e->job_rate[cf->job] += cf->rate_bps;
		}
	}
	for (uint32_t i = 0; i < d->nwatch; i++) {
		const struct policy_watch *w = &d->watch[i];
		const struct cp_coflow *cf = &m->coflows[w->coflow];
		double sent, rate;
		uint64_t dt;

		if (cf->state != CP_COFLOW_ACTIVE)
			continue;
		sent = w->job_level ? m->jobs[cf->job].sent_bytes : cf->sent_bytes;
		rate = w->job_level ? e->job_rate[cf->job] : cf->rate_bps;
		if (rate <= 0)
			continue;
		dt = sent >= w->sent_bytes ? 1 : time_to_send(w->sent_bytes - sent, rate);
		if (dt != CP_TIME_NEVER && now + dt < next)
			next = now + dt;
	}
	return next;
}

static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

int sim_run(struct cp_model *m, struct policy *p, const struct sim_opts *o,
	    struct sim_stats *ret_stats, struct loom_err *err)
{
	struct engine e = {.m = m, .p = p, .o = o};
	struct sim_stats st = {0};
	uint64_t now = 0, next_done = CP_TIME_NEVER, next_watch = CP_TIME_NEVER;
	uint64_t next_tick = o->reeval_ns ? o->reeval_ns : CP_TIME_NEVER;
	uint32_t next_job = 0;
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
		uint64_t t = CP_TIME_NEVER;
		uint32_t ndone;

		if (next_job < m->njobs)
			t = admit_time(&e, next_job);
		if (e.nheap)
			t = min_u64(t, e.heap[0].t_ns);
		t = min_u64(t, next_done);
		t = min_u64(t, next_watch);
		t = min_u64(t, e.d.wakeup_ns > now ? e.d.wakeup_ns : CP_TIME_NEVER);
		if (m->nactive)
			t = min_u64(t, next_tick);
		if (t == CP_TIME_NEVER) {
			r = loom_err_set(err, EDEADLK,
					 "policy '%s' left %u schedulable coflows without "
					 "bandwidth and nothing else can happen",
					 p->cls->name, m->nactive);
			goto out;
		}

		/* Move the fabric to t and retire the flows that finished. */
		ndone = advance(&e, now, t);
		now = t;
		e.nevs = 0;
		for (uint32_t i = 0; i < ndone; i++) {
			struct cp_flow *fl = &m->flows[e.done[i]];
			double resid = fabs(fl->remaining_bytes);

			if (o->check && resid > st.max_residual_bytes)
				st.max_residual_bytes = resid;
			cp_model_flow_done(m, e.done[i], now);
		}
		while (next_job < m->njobs && admit_time(&e, next_job) <= now)
			cp_model_job_arrive(m, next_job++, now);
		while (e.nheap && e.heap[0].t_ns <= now) {
			struct release rl = rel_pop(&e);

			cp_model_coflow_release(m, rl.coflow, now);
		}
		if (e.emit_err) {
			r = loom_err_set(err, -e.emit_err, "out of memory");
			goto out;
		}
		if (next_tick <= now)
			next_tick = o->reeval_ns ? (now / o->reeval_ns + 1) * o->reeval_ns
						 : CP_TIME_NEVER;
		st.events += e.nevs;
		st.steps++;
		for (size_t i = 0; i < e.nevs; i++)
			policy_on_event(p, m, &e.evs[i]);
		if (cp_model_all_done(m))
			break;

		/* Decide and turn the decision into rates. */
		policy_decision_clear(&e.d);
		r = policy_decide(p, m, now, &e.d);
		st.decisions++;
		if (r < 0) {
			r = loom_err_set(err, -r, "policy '%s' failed at t=%llu ns", p->cls->name,
					 (unsigned long long)now);
			goto out;
		}
		if (++e.stamp_gen == 0) {
			memset(e.stamp, 0, m->ncoflows * sizeof(*e.stamp));
			e.stamp_gen = 1;
		}
		r = policy_decision_validate(&e.d, m, e.stamp, e.stamp_gen, err);
		if (r < 0)
			goto out;
		sim_fabric_allocate(&e.fabric, m, &e.d, o);
		if (o->check) {
			double load = sim_fabric_max_load(&e.fabric, m);

			if (load > st.max_port_load)
				st.max_port_load = load;
			st.checked_steps++;
		}
		next_done = plan(&e, now);
		next_watch = e.d.nwatch ? watch_time(&e, now) : CP_TIME_NEVER;
		if (o->progress && o->progress_every && st.steps % o->progress_every == 0) {
			struct sim_progress pr = {now, m->jobs_done, m->njobs, st.events};

			o->progress(o->progress_ctx, &pr);
		}
	}
	st.makespan_ns = now;
	if (o->progress) {
		struct sim_progress pr = {now, m->jobs_done, m->njobs, st.events};

		o->progress(o->progress_ctx, &pr);
	}
out:
	engine_done(&e);
	if (ret_stats)
		*ret_stats = st;
	return r;
}
