/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CoflowSim-exact mode (loom-replay --compat coflowsim): the conventions
 * of CoflowSim (github.com/coflow/coflowsim, the simulator behind Varys' and
 * Aalo's numbers) that change a number, reproduced on Loom's model so that
 * the same reports, CSV files and plots apply. docs/simulator.md lists each
 * convention and its effect on FB2010.
 *
 * CoflowSim steps time in quanta of 8 "milliseconds" of a 1024-millisecond
 * second, each port moving 2^30 bits per such second; it admits arrivals only
 * at the start of 10240-ms epochs (all that arrive within the epoch, so a
 * coflow starts up to one epoch early); it orders coflows by keys fixed at
 * admission (insertion into a sorted list) and sets rates only after an
 * admission or a departure (FAIR: from the per-port flow counts of every
 * quantum).
 *
 * The engine steps quantum by quantum as CoflowSim does, subtracting each
 * flow's bytes per quantum one quantum at a time: the arithmetic follows
 * CoflowSim's expressions in the same order (doubles), because the numbers
 * depend on it. Jumping k quanta at once (rem - k * b) rounds differently,
 * and on FB2010 the last-bit differences moved flows of the big coflows
 * across quanta and CCTs by up to 6% (SCF, FIFO). With the arithmetic and
 * the quirks (reducers done by their drifting bytes-left count, below) as
 * CoflowSim has them, every coflow of FB2010 starts and ends at the
 * millisecond CoflowSim gives it, under all seven algorithms. Stretches with nothing
 * admitted and unfinished are skipped epoch by epoch. The job's deadline
 * factor, which orders CoflowSim's work-conserving pass, comes from the
 * same generator as Java's java.util.Random(17).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "controlplane/sim/sim.h"

#define CFS_SECOND 1024.0                 /* CoflowSim ms per CoflowSim second */
#define CFS_BITS   (1.0 * 1024 * 1048576) /* port rate, bits per CoflowSim second */
#define CFS_BYTES  (CFS_BITS / 8.0)
#define CFS_ZERO   1e-3
#define CFS_END    (86400LL * 1024) /* CoflowSim stops simulating here */
#define CFS_QUEUES 10               /* DARK */
#define CFS_Q0     (1048576.0 * 10)
#define CFS_QMULT  10.0
#define NS_PER_MS  1000000ULL

struct cfs_flow {
	uint32_t src, dst;
	uint32_t model_flow;
	double rem; /* bytes left */
	double bps; /* CoflowSim's currentBps */
	double b;   /* bytes per quantum at the current rate */
	bool done;
};

struct cfs_red {
	uint32_t rack;
	uint32_t first, n, alive; /* flows[first .. first + n), by mapper rack */
	double left;              /* shuffleBytesLeft */
	double rack_left;         /* the job's shuffleBytesPerRack[rack] */
	bool done;
	/*
	 * Done by its bytes-left count (which drifts from its flows' sum) with
	 * flows unfinished: CoflowSim keeps moving those until its next layout
	 * of the flows (layoutFlowsInJobOrder(), which skips done reducers),
	 * and keeps counting them in its rates.
	 */
	bool zombies_move;
};

struct cfs_job {
	uint32_t coflow;
	uint32_t first_red, nred, reds_left; /* reducers by rack */
	uint32_t nmap;
	double alpha;     /* bytes at the most loaded port, at admission */
	double deadline;  /* CoflowSim's deadlineDuration */
	double max_flow;  /* SCF's key: maxShuffleBytes / numMappers */
	double completed; /* shuffleBytesCompleted */
	int64_t start, finish;
	uint32_t queue; /* DARK: currentJobQueue */
};

struct cfs {
	struct cp_model *m;
	enum sim_cfs_algo algo;
	int64_t epoch, quantum; /* CoflowSim ms: 10240 and 8 unless ablated */
	bool rerate;            /* re-decide on every flow completion (ablation) */
	uint32_t nracks;
	struct cfs_flow *flows;
	struct cfs_red *reds;
	struct cfs_job *jobs;
	uint32_t njobs;
	/* the admitted, unfinished jobs in CoflowSim's sortedJobs order */
	uint32_t *order, norder;
	/* DARK's queues */
	uint32_t *q[CFS_QUEUES], nq[CFS_QUEUES];
	uint32_t *scratch, *gone; /* njobs each */
	int32_t *edf_left;        /* njobs: the backfill's sort keys */
	double *send_free, *recv_free, *send_used, *recv_used;
	uint32_t *nmap, *nred; /* flows per sending / receiving rack */
	uint32_t active_reds;
	uint64_t events;
};

/* ---- java.util.Random ---------------------------------------------------- */

struct java_random {
	uint64_t seed;
};

static void jrand_init(struct java_random *r, uint64_t seed)
{
	r->seed = (seed ^ 0x5DEECE66DULL) & ((1ULL << 48) - 1);
}

static uint32_t jrand_next(struct java_random *r, int bits)
{
	r->seed = (r->seed * 0x5DEECE66DULL + 0xBULL) & ((1ULL << 48) - 1);
	return (uint32_t)(r->seed >> (48 - bits));
}

static double jrand_double(struct java_random *r)
{
	uint64_t hi = jrand_next(r, 26), lo = jrand_next(r, 27);

	return (double)((hi << 27) + lo) * 0x1.0p-53;
}

/* ---- set-up ---------------------------------------------------------------- */

struct flow_key {
	uint32_t dst, src, idx;
};

static int cmp_flow_key(const void *a, const void *b)
{
	const struct flow_key *x = a, *y = b;

	if (x->dst != y->dst)
		return x->dst < y->dst ? -1 : 1;
	return x->src < y->src ? -1 : x->src > y->src;
}

/*
 * Builds CoflowSim's view of coflow c as job ji: reducers by rack, each with
 * its flows by mapper rack (Job.coalesceReducers, ReduceTask.createFlows),
 * and the keys and deadline fixed at admission (Job.calcAlphaDeadline).
 */
static int build_job(struct cfs *s, uint32_t ji, uint32_t c, uint32_t *nf, uint32_t *nr,
		     struct java_random *rnd)
{
	const struct cp_coflow *co = &s->m->coflows[c];
	struct cfs_job *j = &s->jobs[ji];
	struct flow_key *key = calloc((size_t)co->nflows + 1, sizeof(*key));
	double max_recv = 0, total = 0, max_send;

	if (!key)
		return -ENOMEM;
	for (uint32_t i = 0; i < co->nflows; i++) {
		const struct cp_flow *f = &s->m->flows[co->first_flow + i];

		key[i] = (struct flow_key){.dst = f->dst, .src = f->src, .idx = co->first_flow + i};
	}
	qsort(key, co->nflows, sizeof(*key), cmp_flow_key);
	j->coflow = c;
	j->first_red = *nr;
	j->finish = 0;
	for (uint32_t i = 0; i < co->nflows; i++) {
		struct cfs_red *r;

		if (i == 0 || key[i].dst != key[i - 1].dst) {
			s->reds[*nr] = (struct cfs_red){.rack = key[i].dst, .first = *nf};
			(*nr)++;
			j->nred++;
		}
		r = &s->reds[*nr - 1];
		s->flows[*nf] = (struct cfs_flow){.src = key[i].src,
						  .dst = key[i].dst,
						  .model_flow = key[i].idx,
						  .rem = (double)s->m->flows[key[i].idx].bytes};
		r->left += s->flows[*nf].rem;
		r->n++;
		(*nf)++;
		if (i == 0 || key[i].dst == key[0].dst)
			j->nmap++; /* every reducer pulls from each of the M mapper racks */
	}
	free(key);
	for (struct cfs_red *r = &s->reds[j->first_red]; r < &s->reds[j->first_red + j->nred];
	     r++) {
		r->rack_left = r->left;
		r->alive = r->n;
		total += r->left;
		max_recv = r->left > max_recv ? r->left : max_recv;
	}
	j->reds_left = j->nred;
	j->max_flow = max_recv / j->nmap;
	max_send = total / j->nmap; /* Job.calcAlphaDeadline's perMapperBytes */
	j->alpha = max_send > max_recv ? max_send : max_recv;
	j->deadline = j->alpha / CFS_BYTES * (1.0 + jrand_double(rnd) * 1.0) * 1000;
	return 0;
}

static void cfs_free(struct cfs *s)
{
	free(s->flows);
	free(s->reds);
	free(s->jobs);
	free(s->order);
	for (int i = 0; i < CFS_QUEUES; i++)
		free(s->q[i]);
	free(s->scratch);
	free(s->gone);
	free(s->edf_left);
	free(s->send_free);
	free(s->recv_free);
	free(s->send_used);
	free(s->recv_used);
	free(s->nmap);
	free(s->nred);
}

static int cfs_init(struct cfs *s, struct cp_model *m, enum sim_cfs_algo algo)
{
	struct java_random rnd;
	uint32_t nf = 0, nr = 0;
	size_t nflows = 0;
	int r;

	*s = (struct cfs){.m = m, .algo = algo, .nracks = m->nhosts, .njobs = m->njobs};
	for (uint32_t c = 0; c < m->ncoflows; c++)
		nflows += m->coflows[c].nflows;
	s->flows = calloc(nflows + 1, sizeof(*s->flows));
	s->reds = calloc(nflows + 1, sizeof(*s->reds));
	s->jobs = calloc((size_t)m->njobs + 1, sizeof(*s->jobs));
	s->order = calloc((size_t)m->njobs + 1, sizeof(*s->order));
	s->scratch = calloc((size_t)m->njobs + 1, sizeof(*s->scratch));
	s->gone = calloc((size_t)m->njobs + 1, sizeof(*s->gone));
	s->edf_left = calloc((size_t)m->njobs + 1, sizeof(*s->edf_left));
	s->send_free = calloc((size_t)s->nracks + 1, sizeof(double));
	s->recv_free = calloc((size_t)s->nracks + 1, sizeof(double));
	s->send_used = calloc((size_t)s->nracks + 1, sizeof(double));
	s->recv_used = calloc((size_t)s->nracks + 1, sizeof(double));
	s->nmap = calloc((size_t)s->nracks + 1, sizeof(uint32_t));
	s->nred = calloc((size_t)s->nracks + 1, sizeof(uint32_t));
	if (!s->flows || !s->reds || !s->jobs || !s->order || !s->scratch || !s->gone ||
	    !s->edf_left || !s->send_free || !s->recv_free || !s->send_used || !s->recv_used ||
	    !s->nmap || !s->nred)
		return -ENOMEM;
	for (int i = 0; i < CFS_QUEUES; i++) {
		s->q[i] = calloc((size_t)m->njobs + 1, sizeof(uint32_t));
		if (!s->q[i])
			return -ENOMEM;
	}
	/* Simulator.mergeTasksByRack(): one deadline factor per job, in arrival order */
	jrand_init(&rnd, 17);
	for (uint32_t ji = 0; ji < m->njobs; ji++) {
		r = build_job(s, ji, m->jobs[ji].first_coflow, &nf, &nr, &rnd);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- flows in flight ------------------------------------------------------- */

/* The coflow algorithms' bytes per quantum: currentBps over one quantum. */
static void flow_set_rate(const struct cfs *s, struct cfs_flow *f)
{
	f->b = (f->bps / 8) * (1.0 * (double)s->quantum / CFS_SECOND);
}

/* Each unfinished flow f of job j, reducer r by reducer (rack order), by mapper rack. */
#define FOR_JOB_FLOWS(s, j, r, f)                                                                  \
	for (struct cfs_red *r = &(s)->reds[(j)->first_red];                                       \
	     r < &(s)->reds[(j)->first_red + (j)->nred]; r++)                                      \
		for (struct cfs_flow *f = &(s)->flows[r->first]; f < &(s)->flows[r->first + r->n]; \
		     f++)                                                                          \
			if (!f->done)

/* The jobs admitted and not finished: sortedJobs, or DARK's queues one after another. */
static uint32_t active_jobs(struct cfs *s, uint32_t **ret)
{
	uint32_t n = 0;

	if (s->algo != SIM_CFS_DARK) {
		*ret = s->order;
		return s->norder;
	}
	for (int q = 0; q < CFS_QUEUES; q++)
		for (uint32_t i = 0; i < s->nq[q]; i++)
			s->scratch[n++] = s->q[q][i];
	*ret = s->scratch;
	return n;
}

/* FAIR: each flow's share of its sending and receiving port, this quantum. */
static void fair_rates(struct cfs *s)
{
	double per_q = CFS_BYTES * (1.0 * (double)s->quantum / CFS_SECOND);

	memset(s->nmap, 0, s->nracks * sizeof(*s->nmap));
	memset(s->nred, 0, s->nracks * sizeof(*s->nred));
	for (uint32_t i = 0; i < s->norder; i++) {
		struct cfs_job *j = &s->jobs[s->order[i]];

		FOR_JOB_FLOWS(s, j, r, f)
		{
			s->nmap[f->src]++;
			s->nred[f->dst]++;
		}
	}
	for (uint32_t i = 0; i < s->norder; i++) {
		struct cfs_job *j = &s->jobs[s->order[i]];

		FOR_JOB_FLOWS(s, j, r, f)
		{
			double a = per_q / s->nred[f->dst], b = per_q / s->nmap[f->src];

			f->b = a < b ? a : b;
		}
	}
}

static void remove_job(struct cfs *s, uint32_t ji)
{
	uint32_t *list, *n;

	if (s->algo == SIM_CFS_DARK) {
		/* the last queue's jobs keep counting up (currentJobQueue) in place */
		uint32_t q = s->jobs[ji].queue < CFS_QUEUES ? s->jobs[ji].queue : CFS_QUEUES - 1;

		list = s->q[q];
		n = &s->nq[q];
	} else {
		list = s->order;
		n = &s->norder;
	}
	for (uint32_t i = 0; i < *n; i++) {
		if (list[i] == ji) {
			memmove(&list[i], &list[i + 1], (*n - i - 1) * sizeof(*list));
			(*n)--;
			return;
		}
	}
}

/*
 * One quantum from t, as CoflowSimulator.proceedFlowsInAllRacks() (and
 * FlowSimulator.fairShare()) moves it: each flow min(its bytes per quantum,
 * what it has left); a flow with at most CFS_ZERO left is done, its reducer
 * when its last flow is (or its bytes left reach CFS_ZERO), its job with its
 * last reducer, all at t + 1 quantum (ReduceTask.cleanupTask(curTime +
 * quantaSize)). Sets *ret_flow_done when a flow finished; returns how many
 * jobs finished (they leave the order).
 */
static uint32_t step(struct cfs *s, int64_t t, bool *ret_flow_done)
{
	uint32_t *act, n = active_jobs(s, &act), ndone = 0;
	uint32_t *gone = s->gone;
	int64_t fin = t + s->quantum;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t ji = act[i];
		struct cfs_job *j = &s->jobs[ji];

		for (struct cfs_red *r = &s->reds[j->first_red];
		     r < &s->reds[j->first_red + j->nred]; r++) {
			if (r->done && !r->zombies_move)
				continue;
			for (struct cfs_flow *f = &s->flows[r->first];
			     f < &s->flows[r->first + r->n]; f++) {
				double moved;

				if (f->done || !(f->b > 0))
					continue;
				moved = f->b < f->rem ? f->b : f->rem;
				f->rem -= moved;
				if (f->rem <= CFS_ZERO) {
					f->done = true;
					*ret_flow_done = true;
					s->m->flows[f->model_flow].finish_ns =
						(uint64_t)fin * NS_PER_MS;
					r->alive--;
				}
				r->left -= moved;
				r->rack_left -= moved;
				if (r->rack_left < 0.0)
					r->rack_left = 0.0;
				j->completed += moved;
			}
			if (!r->done && (r->alive == 0 || r->left <= CFS_ZERO)) {
				r->done = true;
				r->left = 0.0;
				r->zombies_move = r->alive > 0;
				s->active_reds--;
				if (--j->reds_left == 0) {
					j->finish = fin;
					gone[ndone++] = ji;
				}
			}
		}
	}
	for (uint32_t i = 0; i < ndone; i++)
		remove_job(s, gone[i]);
	s->events++;
	return ndone;
}

/* ---- CoflowSimulator: rates from the sorted jobs --------------------------- */

static void reset_free(struct cfs *s)
{
	for (uint32_t i = 0; i < s->nracks; i++) {
		s->send_free[i] = CFS_BITS;
		s->recv_free[i] = CFS_BITS;
	}
}

/* calcAlphaOnline(): the job's time at the free rates, or -1 where a port it needs is full. */
static double alpha_online(struct cfs *s, struct cfs_job *j)
{
	double alpha = 0x1.0p-1074; /* Utils.max starts at Double.MIN_VALUE */
	for (struct cfs_red *r = &s->reds[j->first_red]; r < &s->reds[j->first_red + j->nred];
	     r++) {
		s->recv_used[r->rack] = r->left; /* recvBytes[rack] = shuffleBytesLeft */
		for (struct cfs_flow *f = &s->flows[r->first]; f < &s->flows[r->first + r->n]; f++)
			if (!f->done)
				s->send_used[f->src] += f->rem;
	}
	for (struct cfs_red *r = &s->reds[j->first_red]; r < &s->reds[j->first_red + j->nred];
	     r++) {
		for (struct cfs_flow *f = &s->flows[r->first]; f < &s->flows[r->first + r->n];
		     f++) {
			double send = s->send_used[f->src];

			if (send > 0 && s->send_free[f->src] <= CFS_ZERO)
				alpha = -1;
		}
		if (s->recv_used[r->rack] > 0 && s->recv_free[r->rack] <= CFS_ZERO)
			alpha = -1;
	}
	if (alpha >= 0) {
		for (struct cfs_red *r = &s->reds[j->first_red];
		     r < &s->reds[j->first_red + j->nred]; r++) {
			double v = s->recv_used[r->rack] * 8 / s->recv_free[r->rack];

			if (v > alpha)
				alpha = v;
			for (struct cfs_flow *f = &s->flows[r->first];
			     f < &s->flows[r->first + r->n]; f++) {
				double w = s->send_used[f->src] * 8 / s->send_free[f->src];

				if (w > alpha)
					alpha = w;
			}
		}
	}
	/* clear the scratch demand */
	for (struct cfs_red *r = &s->reds[j->first_red]; r < &s->reds[j->first_red + j->nred];
	     r++) {
		s->recv_used[r->rack] = 0;
		for (struct cfs_flow *f = &s->flows[r->first]; f < &s->flows[r->first + r->n]; f++)
			s->send_used[f->src] = 0;
	}
	return alpha;
}

/* Subtracts the used rates of job j's ports from the free ones and clears them. */
static void take_used(struct cfs *s, struct cfs_job *j)
{
	for (struct cfs_red *r = &s->reds[j->first_red]; r < &s->reds[j->first_red + j->nred];
	     r++) {
		s->recv_free[r->rack] -= s->recv_used[r->rack];
		s->recv_used[r->rack] = 0;
		for (struct cfs_flow *f = &s->flows[r->first]; f < &s->flows[r->first + r->n];
		     f++) {
			s->send_free[f->src] -= s->send_used[f->src];
			s->send_used[f->src] = 0;
		}
	}
}

/* updateRatesDynamicAlphaOneJob(): MADD at the job's online alpha. */
static void madd_job(struct cfs *s, struct cfs_job *j, double alpha)
{
	for (struct cfs_red *r = &s->reds[j->first_red]; r < &s->reds[j->first_red + j->nred];
	     r++) {
		uint32_t dst = r->rack;

		if (s->recv_free[dst] <= CFS_ZERO)
			continue;
		for (struct cfs_flow *f = &s->flows[r->first]; f < &s->flows[r->first + r->n];
		     f++) {
			double cur;

			if (f->done)
				continue;
			cur = f->rem * 8 / alpha;
			if (cur > s->send_free[f->src] || cur > s->recv_free[dst])
				cur = s->send_free[f->src] < s->recv_free[dst] ?
					      s->send_free[f->src] :
					      s->recv_free[dst];
			s->send_used[f->src] += cur;
			s->recv_used[dst] += cur;
			f->bps = cur;
		}
	}
	take_used(s, j);
}

/*
 * updateRatesFairShare() (the skipped jobs, whose rates are 0 already) and
 * DARK's per-job updateRates(): the jobs share what is left by per-port flow
 * counts; a flow with a full port at either end gets 0.
 */
static void fair_share(struct cfs *s, const uint32_t *jobs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct cfs_job *j = &s->jobs[jobs[i]];

		FOR_JOB_FLOWS(s, j, r, f)
		{
			if (s->recv_free[r->rack] <= CFS_ZERO || s->send_free[f->src] <= CFS_ZERO) {
				f->bps = 0;
				continue;
			}
			s->nmap[f->src]++;
			s->nred[r->rack]++;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		struct cfs_job *j = &s->jobs[jobs[i]];

		for (struct cfs_red *r = &s->reds[j->first_red];
		     r < &s->reds[j->first_red + j->nred]; r++) {
			uint32_t dst = r->rack;

			if (s->recv_free[dst] <= CFS_ZERO || s->nred[dst] == 0)
				continue;
			for (struct cfs_flow *f = &s->flows[r->first];
			     f < &s->flows[r->first + r->n]; f++) {
				double a, b, min_free;

				if (f->done || s->send_free[f->src] <= CFS_ZERO ||
				    s->nmap[f->src] == 0)
					continue;
				a = s->send_free[f->src] / s->nmap[f->src];
				b = s->recv_free[dst] / s->nred[dst];
				min_free = a < b ? a : b;
				if (min_free <= CFS_ZERO)
					min_free = 0.0;
				f->bps = min_free;
				s->send_used[f->src] += f->bps;
				s->recv_used[dst] += f->bps;
			}
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		struct cfs_job *j = &s->jobs[jobs[i]];

		take_used(s, j);
		for (struct cfs_red *r = &s->reds[j->first_red];
		     r < &s->reds[j->first_red + j->nred]; r++) {
			s->nred[r->rack] = 0;
			for (struct cfs_flow *f = &s->flows[r->first];
			     f < &s->flows[r->first + r->n]; f++)
				s->nmap[f->src] = 0;
		}
	}
}

/* Java's (int) cast of a double: truncation, saturated, NaN -> 0. */
static int32_t java_int(double v)
{
	if (isnan(v))
		return 0;
	if (v >= 2147483647.0)
		return INT32_MAX;
	if (v <= -2147483648.0)
		return INT32_MIN;
	return (int32_t)v;
}

/* updateRatesDynamicAlpha(curTime, false) of CoflowSimulator. */
static void update_rates(struct cfs *s, int64_t now)
{
	uint32_t nskip = 0, n = s->norder;
	uint32_t *skip = s->scratch;
	int32_t *left = s->edf_left;

	reset_free(s);
	for (uint32_t i = 0; i < n; i++) {
		struct cfs_job *j = &s->jobs[s->order[i]];
		double alpha;

		FOR_JOB_FLOWS(s, j, r, f)
		f->bps = 0;
		alpha = alpha_online(s, j);
		if (alpha < 0) {
			skip[nskip++] = s->order[i];
			continue;
		}
		madd_job(s, j, alpha);
	}
	fair_share(s, skip, nskip);

	/* the work-conserving pass: jobs by time to their deadline (a stable sort) */
	memcpy(skip, s->order, n * sizeof(*skip));
	for (uint32_t i = 0; i < n; i++) {
		struct cfs_job *j = &s->jobs[skip[i]];

		left[i] = java_int((double)j->start + j->deadline - (double)now);
	}
	for (uint32_t i = 1; i < n; i++) { /* insertion sort: stable, as Collections.sort */
		uint32_t jv = skip[i];
		int32_t lv = left[i];
		uint32_t p = i;

		while (p > 0 && left[p - 1] > lv) {
			skip[p] = skip[p - 1];
			left[p] = left[p - 1];
			p--;
		}
		skip[p] = jv;
		left[p] = lv;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct cfs_job *j = &s->jobs[skip[i]];

		for (struct cfs_red *r = &s->reds[j->first_red];
		     r < &s->reds[j->first_red + j->nred]; r++) {
			uint32_t dst = r->rack;

			if (s->recv_free[dst] <= CFS_ZERO)
				continue;
			for (struct cfs_flow *f = &s->flows[r->first];
			     f < &s->flows[r->first + r->n]; f++) {
				double min_free;

				if (f->done)
					continue;
				min_free = s->send_free[f->src] < s->recv_free[dst] ?
						   s->send_free[f->src] :
						   s->recv_free[dst];
				if (min_free <= CFS_ZERO)
					min_free = 0.0;
				f->bps += min_free;
				s->send_free[f->src] -= min_free;
				s->recv_free[dst] -= min_free;
			}
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		struct cfs_job *j = &s->jobs[s->order[i]];

		FOR_JOB_FLOWS(s, j, r, f)
		flow_set_rate(s, f);
	}
}

/* ---- DARK (CoflowSimulatorDark) -------------------------------------------- */

/*
 * updateJobOrder(): queue by queue, a job whose bytes sent passed its
 * queue's threshold moves to the end of the next queue, where the same pass
 * looks at it again; the last queue keeps its jobs.
 */
static void dark_order(struct cfs *s)
{
	for (int i = 0; i < CFS_QUEUES; i++) {
		uint32_t keep = 0, nmove = 0;
		uint32_t *move = s->scratch;

		for (uint32_t x = 0; x < s->nq[i]; x++) {
			struct cfs_job *j = &s->jobs[s->q[i][x]];
			uint32_t cur = 0;

			for (double k = CFS_Q0; k < j->completed; k *= CFS_QMULT)
				cur++;
			if (j->queue < cur) {
				j->queue++;
				move[nmove++] = s->q[i][x];
			}
		}
		if (i + 1 == CFS_QUEUES || nmove == 0)
			continue;
		for (uint32_t x = 0, y = 0; x < s->nq[i]; x++) {
			if (y < nmove && s->q[i][x] == move[y])
				y++;
			else
				s->q[i][keep++] = s->q[i][x];
		}
		s->nq[i] = keep;
		for (uint32_t x = 0; x < nmove; x++)
			s->q[i + 1][s->nq[i + 1]++] = move[x];
	}
}

/* updateRates() of DARK: queue by queue, job by job, per-port fair shares; no backfill. */
static void dark_rates(struct cfs *s)
{
	reset_free(s);
	for (int q = 0; q < CFS_QUEUES; q++) {
		for (uint32_t x = 0; x < s->nq[q]; x++) {
			uint32_t ji = s->q[q][x];

			fair_share(s, &ji, 1);
		}
	}
	for (int q = 0; q < CFS_QUEUES; q++) {
		for (uint32_t x = 0; x < s->nq[q]; x++) {
			struct cfs_job *j = &s->jobs[s->q[q][x]];

			FOR_JOB_FLOWS(s, j, r, f)
			flow_set_rate(s, f);
		}
	}
}

/* ---- admission and the main loop ------------------------------------------- */

/*
 * LCF's key, Job.calcShuffleBytesLeft(): the reducers' bytes not yet moved.
 * CoflowSim starts each from the reducer's size before Job.coalesceReducers
 * rounds it up to a multiple of M MiB; the model holds only the rounded
 * flows, so this starts from the rounded size (the same wherever MB is a
 * multiple of M, as in all of FB2010).
 */
static double lcf_left(const struct cfs *s, const struct cfs_job *j)
{
	double sum = 0;

	for (uint32_t ri = j->first_red; ri < j->first_red + j->nred; ri++)
		sum += s->reds[ri].rack_left;
	return sum;
}

/* compare(j, sj) < 0 of CoflowSimulator's comparators: j goes before sj. */
static bool goes_before(const struct cfs *s, const struct cfs_job *j, const struct cfs_job *sj)
{
	switch (s->algo) {
	case SIM_CFS_SCF:
		return j->max_flow < sj->max_flow;
	case SIM_CFS_NCF: {
		uint32_t n1 = j->nmap < j->nred ? j->nmap : j->nred;
		uint32_t n2 = sj->nmap < sj->nred ? sj->nmap : sj->nred;

		return n1 < n2;
	}
	case SIM_CFS_LCF:
		return lcf_left(s, j) < lcf_left(s, sj);
	case SIM_CFS_SEBF:
		return j->alpha < sj->alpha;
	default:
		return false; /* FIFO, FAIR: arrival order */
	}
}

static void admit(struct cfs *s, uint32_t ji, int64_t now)
{
	struct cfs_job *j = &s->jobs[ji];
	uint32_t at = 0;

	j->start = now;
	s->active_reds += j->nred;
	if (s->algo == SIM_CFS_DARK) {
		s->q[0][s->nq[0]++] = ji;
		j->queue = 0;
		return;
	}
	while (at < s->norder && !goes_before(s, j, &s->jobs[s->order[at]]))
		at++;
	memmove(&s->order[at + 1], &s->order[at], (s->norder - at) * sizeof(*s->order));
	s->order[at] = ji;
	s->norder++;
}

/* layoutFlowsInJobOrder(): the flows of done reducers stop moving. */
static void relayout(struct cfs *s)
{
	uint32_t *act, n = active_jobs(s, &act);

	for (uint32_t i = 0; i < n; i++) {
		struct cfs_job *j = &s->jobs[act[i]];

		for (uint32_t ri = j->first_red; ri < j->first_red + j->nred; ri++)
			s->reds[ri].zombies_move = false;
	}
}

/* Re-decides after admissions or departures, as each CoflowSim simulator does. */
static void reschedule(struct cfs *s, int64_t now)
{
	switch (s->algo) {
	case SIM_CFS_FAIR:
		fair_rates(s);
		break;
	case SIM_CFS_DARK:
		dark_order(s);
		dark_rates(s);
		break;
	default:
		update_rates(s, now);
		break;
	}
}

static void write_back(struct cfs *s, struct sim_stats *st)
{
	struct cp_model *m = s->m;
	uint64_t makespan = 0;

	for (uint32_t ji = 0; ji < s->njobs; ji++) {
		struct cfs_job *j = &s->jobs[ji];
		struct cp_job *mj = &m->jobs[ji];
		struct cp_coflow *c = &m->coflows[j->coflow];
		uint64_t fin = (uint64_t)j->finish * NS_PER_MS;

		c->state = CP_COFLOW_DONE;
		c->release_ns = (uint64_t)j->start * NS_PER_MS;
		c->finish_ns = fin;
		c->flows_left = 0;
		c->sent_bytes = (double)c->total_bytes;
		mj->state = CP_JOB_DONE;
		mj->finish_ns = fin;
		mj->coflows_left = 0;
		mj->sent_bytes = (double)mj->total_bytes;
		for (uint32_t f = c->first_flow; f < c->first_flow + c->nflows; f++) {
			m->flows[f].done = true;
			m->flows[f].remaining_bytes = 0;
			m->flows[f].rate_bps = 0;
		}
		if (fin > makespan)
			makespan = fin;
	}
	st->makespan_ns = makespan;
	st->events = s->events;
	st->steps = s->events;
}

void sim_cfs_opts_default(struct sim_cfs_opts *o)
{
	*o = (struct sim_cfs_opts){.epoch_ms = SIM_CFS_EPOCH_MS, .quantum_ms = SIM_CFS_QUANTUM_MS};
}

/* o, or CoflowSim's own settings; -EINVAL unless the quantum divides the epoch. */
static int opts_check(const struct sim_cfs_opts **o, struct sim_cfs_opts *def, struct loom_err *err)
{
	if (!*o) {
		sim_cfs_opts_default(def);
		*o = def;
	}
	if ((*o)->quantum_ms == 0 || (*o)->epoch_ms == 0 || (*o)->epoch_ms % (*o)->quantum_ms)
		return loom_err_set(err, EINVAL,
				    "CoflowSim mode: the quantum (%u ms) must divide the epoch "
				    "(%u ms), both > 0",
				    (*o)->quantum_ms, (*o)->epoch_ms);
	return 0;
}

int sim_coflowsim_prepare(struct cp_model *m, const struct sim_cfs_opts *o, struct loom_err *err)
{
	struct sim_cfs_opts def;
	int r = opts_check(&o, &def, err);

	if (r < 0)
		return r;
	for (uint32_t ji = 0; ji < m->njobs; ji++) {
		struct cp_job *j = &m->jobs[ji];
		const struct cp_coflow *c = &m->coflows[j->first_coflow];
		double ms;
		int64_t epoch;

		if (j->ncoflows != 1 || c->nparents || c->nchildren || c->release_offset_ns) {
			return loom_err_set(
				err, EINVAL,
				"job %llu: --compat coflowsim takes single-stage traces "
				"(one coflow per job, as CoflowSim's)",
				(unsigned long long)j->ext_id);
		}
		if (c->nflows == 0)
			return loom_err_set(err, EINVAL, "coflow %llu has no flows",
					    (unsigned long long)c->ext_id);
		/* admitted at the start of the epoch whose window (T, T + E] holds it */
		ms = (double)j->arrival_ns / (double)NS_PER_MS;
		epoch = (int64_t)ceil(ms / (double)o->epoch_ms) - 1;
		if (epoch < 0)
			epoch = 0;
		j->arrival_ns = (uint64_t)(epoch * o->epoch_ms) * NS_PER_MS;
	}
	return 0;
}

int sim_coflowsim_run(struct cp_model *m, enum sim_cfs_algo algo, const struct sim_cfs_opts *o,
		      struct sim_stats *ret_stats, struct loom_err *err)
{
	struct sim_stats st = {0};
	struct sim_cfs_opts def;
	struct cfs s;
	uint32_t next = 0;
	int r = opts_check(&o, &def, err);

	if (r < 0)
		return r;
	for (uint32_t ji = 0; ji < m->njobs; ji++) {
		if (m->jobs[ji].arrival_ns % ((uint64_t)o->epoch_ms * NS_PER_MS) != 0 ||
		    m->jobs[ji].ncoflows != 1)
			return loom_err_set(err, EINVAL,
					    "job %llu: the model is not prepared for CoflowSim's "
					    "admission epochs (sim_coflowsim_prepare())",
					    (unsigned long long)m->jobs[ji].ext_id);
	}
	cp_model_reset(m);
	r = cfs_init(&s, m, algo);
	if (r < 0) {
		cfs_free(&s);
		return loom_err_set(err, -r, "CoflowSim mode: %s", strerror(-r));
	}
	s.epoch = o->epoch_ms;
	s.quantum = o->quantum_ms;
	s.rerate = o->rerate_on_flow_done;
	for (int64_t epoch = 0; epoch < CFS_END && (next < s.njobs || s.active_reds > 0);
	     epoch += s.epoch) {
		uint32_t added = 0;
		int64_t t = epoch;

		while (next < s.njobs && (int64_t)(m->jobs[next].arrival_ns / NS_PER_MS) <= epoch) {
			admit(&s, next++, epoch);
			added++;
		}
		if (added) {
			if (algo != SIM_CFS_FAIR)
				relayout(&s);
			reschedule(&s, epoch);
		}
		for (; t < epoch + s.epoch; t += s.quantum) {
			bool flow_done = false;
			uint32_t *act;

			if (active_jobs(&s, &act) == 0)
				break;
			/*
			 * CoflowSim re-decides after a quantum a job left in; FAIR's shares
			 * follow the flow counts, which change when a flow finishes
			 */
			if (step(&s, t, &flow_done) > 0 && algo != SIM_CFS_FAIR) {
				if (algo == SIM_CFS_DARK) /* its afterJobDeparture() lays out too */
					relayout(&s);
				reschedule(&s, t);
			} else if (flow_done && algo == SIM_CFS_FAIR)
				fair_rates(&s);
			else if (flow_done && s.rerate)
				reschedule(&s, t);
		}
	}
	if (next < s.njobs || s.active_reds > 0) {
		cfs_free(&s);
		return loom_err_set(err, EDEADLK,
				    "CoflowSim mode: work left at CoflowSim's end of time (%lld s)",
				    (long long)(CFS_END / 1024));
	}
	write_back(&s, &st);
	cfs_free(&s);
	if (ret_stats)
		*ret_stats = st;
	return 0;
}

int sim_cfs_algo_for_policy(const char *name, enum sim_cfs_algo *ret)
{
	static const struct {
		const char *policy;
		enum sim_cfs_algo algo;
	} map[] = {
		{"fair", SIM_CFS_FAIR},  {"fifo", SIM_CFS_FIFO}, {"scf", SIM_CFS_SCF},
		{"ncf", SIM_CFS_NCF},    {"lcf", SIM_CFS_LCF},   {"sebf", SIM_CFS_SEBF},
		{"dclas", SIM_CFS_DARK},
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (strcmp(name, map[i].policy) == 0) {
			*ret = map[i].algo;
			return 0;
		}
	}
	return -ENOENT;
}

const char *sim_cfs_algo_name(enum sim_cfs_algo a)
{
	static const char *const names[] = {"FAIR", "FIFO", "SCF", "NCF", "LCF", "SEBF", "DARK"};

	return (unsigned)a < sizeof(names) / sizeof(names[0]) ? names[a] : "unknown";
}
