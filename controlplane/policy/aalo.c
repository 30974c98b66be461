/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dclas: Aalo's Discretized Coflow-Aware Least-Attained Service (Chowdhury and
 * Stoica, "Efficient Coflow Scheduling Without Prior Knowledge", SIGCOMM
 * 2015, §4). Non-clairvoyant: it reads only what coflows have sent so far.
 *
 * Queues Q_0 .. Q_{K-1}; Q_0 holds coflows that have sent less than `first`
 * bytes, and each next queue's upper threshold is `factor` times the previous
 * one (Q_q: sent in [first * factor^(q-1), first * factor^q)); the last queue
 * is unbounded. The defaults are the paper's (and CoflowSim's): K = 10, first
 * = 10 MiB, factor = 10. Inside a queue, coflows go in FIFO order (release
 * time); across queues, strict priority, or with `sharing=weighted` the
 * paper's weighted sharing across queues (queue q gets weight K - q on each
 * port it uses: every port's capacity is split among the queues with flows
 * there in proportion to their weights, FIFO inside each share, and the
 * fabric backfills what a share leaves unused, in priority order).
 *
 * A coflow moves down a queue the moment its sent bytes cross a threshold: each
 * decision asks the driver to wake it at the next threshold of every coflow
 * (policy_watch), so the simulator steps exactly there.
 *
 * For multi-stage jobs, `scope=job` (registered as "dclas-job") is Aalo's
 * DAG variant (§5.1): a coflow's queue follows the bytes its whole job has
 * sent, so a job's later stages do not restart in the top queue, and FIFO
 * inside a queue is by job arrival.
 *
 * Flows inside a coflow are not told apart (their sizes are unknown): in
 * strict mode each coflow is its own priority level, within which the
 * fabric shares capacity max-min fairly among its flows. With `within=fair`
 * each queue becomes a class instead (coflows of one queue share max-min,
 * which is what a datapath mapping queues to its K classes does).
 */
#include "controlplane/policy/policy.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/policy/util.h"

enum {
	OPT_QUEUES,
	OPT_FIRST,
	OPT_FACTOR,
	OPT_SHARING,
	OPT_SCOPE,
	OPT_WITHIN
};

static const char *const sharing_choices[] = {"strict", "weighted", NULL};
static const char *const scope_choices[] = {"coflow", "job", NULL};
static const char *const within_choices[] = {"fifo", "fair", NULL};

static const struct policy_opt_def dclas_opts[] = {
	[OPT_QUEUES] = {"queues", "number of queues K", POLICY_OPT_INT, 10, 1, 64, NULL},
	[OPT_FIRST] = {"first", "upper threshold of the first queue, bytes", POLICY_OPT_NUM,
		       10.0 * 1048576.0, 1, 1e18, NULL},
	[OPT_FACTOR] = {"factor", "each threshold over the previous one", POLICY_OPT_NUM, 10,
			1.0001, 1e6, NULL},
	[OPT_SHARING] = {"sharing", "across queues", POLICY_OPT_ENUM, 0, 0, 0, sharing_choices},
	[OPT_SCOPE] = {"scope", "bytes that decide the queue: the coflow's or its job's",
		       POLICY_OPT_ENUM, 0, 0, 0, scope_choices},
	[OPT_WITHIN] = {"within", "inside a queue: FIFO, or fair sharing (queue = class)",
			POLICY_OPT_ENUM, 0, 0, 0, within_choices},
};

#define DCLAS_MAX_QUEUES 64

/* Bytes within this of a threshold count as crossed (float accounting). */
#define DCLAS_SLACK_BYTES 0.5

struct dclas {
	uint32_t nqueues;
	double hi[DCLAS_MAX_QUEUES]; /* upper threshold of each queue; last is +inf */
	bool weighted, job_scope, fair;
	struct policy_scratch s;
	double *share;  /* nqueues * nports: weighted mode budgets */
	double *wsum;   /* nports: sum of queue weights present at a port */
	uint64_t *seen; /* nqueues * nports stamps */
	uint64_t gen;
};

static int dclas_init(struct policy *p, const struct cp_model *m)
{
	struct dclas *x = calloc(1, sizeof(*x));
	size_t nports;
	int r;

	if (!x)
		return -ENOMEM;
	x->nqueues = (uint32_t)p->opt[OPT_QUEUES];
	x->weighted = p->opt[OPT_SHARING] == 1;
	x->job_scope = p->opt[OPT_SCOPE] == 1;
	x->fair = p->opt[OPT_WITHIN] == 1;
	/* Shares are per decision: re-split them whenever a flow leaves. */
	p->decide_on_flow_done = x->weighted;
	for (uint32_t q = 0; q < x->nqueues; q++)
		x->hi[q] = q + 1 == x->nqueues ? INFINITY :
						 p->opt[OPT_FIRST] * pow(p->opt[OPT_FACTOR], q);
	r = policy_scratch_init(&x->s, m);
	if (r < 0) {
		free(x);
		return r;
	}
	nports = m->topo->nports ? m->topo->nports : 1;
	x->share = calloc(nports * x->nqueues, sizeof(double));
	x->wsum = calloc(nports, sizeof(double));
	x->seen = calloc(nports * x->nqueues, sizeof(uint64_t));
	if (!x->share || !x->wsum || !x->seen) {
		free(x->share);
		free(x->wsum);
		free(x->seen);
		policy_scratch_done(&x->s);
		free(x);
		return -ENOMEM;
	}
	p->priv = x;
	return 0;
}

static void dclas_done(struct policy *p)
{
	struct dclas *x = p->priv;

	if (!x)
		return;
	free(x->share);
	free(x->wsum);
	free(x->seen);
	policy_scratch_done(&x->s);
	free(x);
	p->priv = NULL;
}

static double sent_of(const struct dclas *x, const struct cp_model *m, uint32_t c)
{
	const struct cp_coflow *cf = &m->coflows[c];

	return x->job_scope ? m->jobs[cf->job].sent_bytes : cf->sent_bytes;
}

static uint32_t queue_of(const struct dclas *x, double sent)
{
	uint32_t q = 0;

	while (q + 1 < x->nqueues && sent + DCLAS_SLACK_BYTES >= x->hi[q])
		q++;
	return q;
}

/*
 * Weighted sharing: per-flow caps. Each port's capacity is split among the
 * queues with unfinished flows there by weight (K - q); inside a queue, flows
 * take from their share greedily in FIFO order.
 */
static void weighted_rates(struct dclas *x, const struct cp_model *m,
			   const struct policy_decision *d)
{
	const struct topo *t = m->topo;
	uint32_t np = t->nports, nq = x->nqueues;

	x->gen++;
	for (uint32_t p = 0; p < np; p++)
		x->wsum[p] = 0;
	for (uint32_t i = 0; i < d->norder; i++) {
		const struct cp_coflow *cf = &m->coflows[d->order[i]];
		uint32_t q = (uint32_t)x->s.key[d->order[i]];

		for (uint32_t k = 0; k < cf->flows_left; k++) {
			const struct cp_flow *fl = &m->flows[m->flow_slot[cf->first_flow + k]];

			for (uint32_t j = 0; j < fl->nports; j++) {
				uint32_t p = fl->ports[j];

				if (x->seen[(size_t)q * np + p] == x->gen)
					continue;
				x->seen[(size_t)q * np + p] = x->gen;
				x->wsum[p] += (double)(nq - q);
			}
		}
	}
	for (uint32_t i = 0; i < d->norder; i++) {
		const struct cp_coflow *cf = &m->coflows[d->order[i]];
		uint32_t q = (uint32_t)x->s.key[d->order[i]];
		double *share = &x->share[(size_t)q * np];

		for (uint32_t k = 0; k < cf->flows_left; k++) {
			uint32_t f = m->flow_slot[cf->first_flow + k];
			const struct cp_flow *fl = &m->flows[f];
			double r = INFINITY;

			for (uint32_t j = 0; j < fl->nports; j++) {
				uint32_t p = fl->ports[j];

				/* First use of (q, p) in this decision: set its budget. */
				if (x->seen[(size_t)q * np + p] == x->gen) {
					share[p] = (double)t->port_bps[p] * (double)(nq - q) /
						   x->wsum[p];
					x->seen[(size_t)q * np + p] = x->gen + 1;
				}
				if (share[p] < r)
					r = share[p];
			}
			if (!(r > 0))
				r = 0;
			d->rate_bps[f] = r;
			for (uint32_t j = 0; j < fl->nports; j++)
				share[fl->ports[j]] -= r;
		}
	}
	x->gen++; /* the stamps used gen + 1 */
}

static int dclas_decide(struct policy *p, const struct cp_model *m, uint64_t now_ns,
			struct policy_decision *d)
{
	struct dclas *x = p->priv;

	(void)now_ns;
	for (uint32_t a = 0; a < m->nactive; a++) {
		uint32_t c = m->active[a];
		const struct cp_coflow *cf = &m->coflows[c];

		x->s.key[c] = (double)queue_of(x, sent_of(x, m, c));
		x->s.key2[c] = x->job_scope ? (double)m->jobs[cf->job].arrival_ns :
					      (double)cf->release_ns;
	}
	d->norder = policy_sort_active(m, d->order, x->s.key, x->s.key2);
	for (uint32_t i = 0; i < d->norder; i++) {
		uint32_t c = d->order[i], q = (uint32_t)x->s.key[c];

		if (q + 1 < x->nqueues)
			d->watch[d->nwatch++] = (struct policy_watch){
				.coflow = c, .job_level = x->job_scope, .sent_bytes = x->hi[q]};
		if (x->fair)
			d->class_of[i] = (uint16_t)q;
	}
	d->has_classes = x->fair;
	if (x->weighted) {
		weighted_rates(x, m, d);
		d->has_rates = true;
	}
	return 0;
}

const struct policy_class policy_dclas = {
	.name = "dclas",
	.summary = "Aalo D-CLAS: queues by bytes sent, FIFO inside, priority across "
		   "(non-clairvoyant)",
	.clairvoyant = false,
	.opts = dclas_opts,
	.nopts = sizeof(dclas_opts) / sizeof(dclas_opts[0]),
	.init = dclas_init,
	.done = dclas_done,
	.decide = dclas_decide,
};

const struct policy_class policy_dclas_job = {
	.name = "dclas-job",
	.summary = "Aalo D-CLAS for DAGs: a coflow's queue follows its job's bytes sent "
		   "(non-clairvoyant)",
	.clairvoyant = false,
	.opts = dclas_opts,
	.nopts = sizeof(dclas_opts) / sizeof(dclas_opts[0]),
	.preset = "scope=job",
	.init = dclas_init,
	.done = dclas_done,
	.decide = dclas_decide,
};
