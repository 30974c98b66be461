/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/learn: trains the gnn policy in the simulator (loom-train).
 *
 * An iteration draws one episode: a generated multi-stage workload (TPC-H
 * DAG shapes, FB2010-sampled coflows, Poisson arrivals at a load drawn from
 * [load_min, load_max], a fresh seed), with a number of jobs that grows over
 * training (curriculum). Two phases:
 *   - imitation (optional warm start): the teacher heuristic drives the
 *     episode and the model learns its rankings (maximum likelihood under
 *     Plackett-Luce); one episode per worker thread per iteration;
 *   - reinforcement: `rollouts` runs of the same episode, each ranking the
 *     schedulable coflows at every decision by a Plackett-Luce sample of the
 *     model's scores. The reward is minus the time integral of the weighted
 *     number of unfinished jobs, so the return is minus the total weighted
 *     JCT; a decision at time t is credited with the return from t on, and
 *     the baseline is the mean over the rollouts of their return from the
 *     same time t (Decima's time-based baseline). REINFORCE with that
 *     advantage (normalised per iteration), an entropy bonus on the first
 *     choice annealed linearly to its end value, Adam with gradient clipping.
 * Every eval_every iterations the greedy policy runs on fixed validation
 * workloads (seeds never used for training episodes) and its average
 * weighted JCT is compared with the best heuristic's; the best model so far
 * is kept.
 *
 * Deterministic given the seed and the number of workers: every episode,
 * sample and subsample seed derives from (seed, iteration, rollout), each
 * worker owns its rollouts and model copy, and gradients are summed in a
 * fixed order. Resuming from a checkpoint continues the same sequence.
 *
 * With MPI (opts.mpi, learn_mpi.h) the workers are spread over the ranks:
 * W = ranks x threads, worker g is thread g % threads of rank g / threads,
 * and each rank runs its own workers' rollouts, episodes and validation
 * workloads. Every rank gets every rollout's job results and decision times
 * (so all compute the same baselines), rank 0 adds every worker's gradient
 * in worker order (the additions one process with W threads makes), takes
 * the Adam step and broadcasts the parameters; only rank 0 writes files
 * and reports progress. So a run over R ranks of T threads is bit for bit
 * the run of one process with R x T threads.
 */
#ifndef LOOM_CONTROLPLANE_LEARN_LEARN_H
#define LOOM_CONTROLPLANE_LEARN_LEARN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/errors.h"
#include "controlplane/model/model.h"
#include "controlplane/sim/sim.h"
#include "gnn/gnn.h"
#include "topo/topo.h"

struct learn_progress {
	uint32_t iter, iters;
	bool imitation;
	uint32_t jobs;
	double load;
	double avg_wjct_s;     /* mean over this iteration's rollouts */
	double avg_wjct_ema_s; /* running (exponential) average */
	double loss;      /* the iteration's loss (learn.c, train_rollout: imitation NLL, RL) */
	uint32_t skipped; /* updates skipped so far for a non-finite gradient */
	double entropy;   /* mean first-choice entropy */
	double grad_norm;
	uint32_t decisions;
	double eval_ratio; /* last evaluation: greedy avg wJCT / best heuristic's; NAN if none */
	double best_eval_ratio; /* best so far */
	double wall_s;
};

/*
 * Makes an episode (unbound model), or NULL + errno/err. Called from the
 * worker threads concurrently: it must be thread-safe (sim_gen is).
 */
typedef struct cp_model *(*learn_episode_fn)(void *ctx, uint64_t seed, uint32_t njobs, double load,
					     struct loom_err *err);

struct learn_opts {
	uint64_t seed;
	uint32_t iters;         /* total iterations (imitation + reinforcement) */
	uint32_t imitate_iters; /* the first ones imitate the teacher */
	const char *teacher;    /* policy spec, e.g. "wsrjf" or "lookahead:base=gnn" */
	bool dagger;            /* imitation on the model's own states, labelled by the teacher */
	double label_prob;      /* dagger: share of the model's decisions the teacher labels */
	uint32_t imitate_top;   /* imitation loss on the teacher's first places only; 0 = all */
	uint32_t gnn_rates;  /* the gnn policy's rates=auto: POLICY_GNN_RATES_* (0: the prior's) */
	double agree_weight; /* imitation: weight of a decision the model already gets right
				   (its greedy order starts as the teacher's), 0..1 */
	uint32_t rollouts;   /* per reinforcement iteration, >= 2 */
	uint32_t threads;    /* worker threads (each owns a model copy); per rank with mpi */
	uint32_t jobs_min, jobs_max;
	uint32_t curriculum_iters; /* jobs grow linearly from min to max over these */
	double load_min, load_max;
	uint32_t weight_max;
	uint32_t train_decisions;   /* decisions per rollout used for the gradient; 0 = all */
	float lr, rl_lr, clip_norm; /* Adam learning rate: imitation, reinforcement */
	double entropy_start, entropy_end;
	uint32_t entropy_iters; /* anneal over these reinforcement iterations */
	uint32_t eval_every;    /* 0: no evaluation */
	uint32_t eval_workloads, eval_jobs;
	double time_limit_s; /* stop (with a checkpoint) after this much wall time; 0 = none */
	struct gnn_config cfg;
	const char *init_weights; /* start from these weights (NULL: random init) */
	const char *out_dir;      /* checkpoint, best model, learning curve; NULL = none */
	bool resume;              /* continue from out_dir's checkpoint */
	bool mpi; /* spread the workers over the MPI ranks (after learn_mpi_init); collective */
	/* episodes: when NULL, generated from dags/fb on the topology */
	learn_episode_fn episode;
	void *episode_ctx;
	const struct sim_dags *dags; /* borrowed */
	const struct cp_model *fb;   /* borrowed */
	const struct topo *topo;     /* borrowed; the episodes' fabric */
	/* progress, about once per iteration; NULL = quiet */
	void (*progress)(void *ctx, const struct learn_progress *pr);
	void *progress_ctx;
};

/* Fills defaults (documented in docs/learning.md). */
void learn_opts_default(struct learn_opts *o);

/*
 * Trains. The model starts from init_weights, a checkpoint (resume) or a
 * seeded random initialisation; the trained model (the last iteration's) is
 * returned in *ret_model (caller frees; may be NULL). With out_dir: writes
 * out_dir/checkpoint.lgw + checkpoint.state every eval_every iterations and
 * at the end, out_dir/best.lgw (best evaluation), out_dir/learning.csv and
 * learning.gp (+ learning.png when gnuplot is on PATH). Returns 0 or -errno
 * with err filled. With mpi it is collective: every rank calls it with the
 * same options, gets the same model and the same outcome (an error of one
 * rank, with its message, on all); only rank 0 writes out_dir.
 */
int learn_run(const struct learn_opts *o, struct gnn_model **ret_model, struct loom_err *err);

/* ---- trainer state (checkpoint.state) --------------------------------------------------- */

/*
 * Little-endian: "LOOMTRN\0", u32 version (1), u32 next iteration, u64 seed,
 * u32 workers (MPI ranks x threads; threads without MPI), f64 avg_wjct_ema_s,
 * f64 best_eval_ratio, u64 adam step,
 * u64 n, n f32 first moments, n f32 second moments, u64 FNV-1a 64 of all before.
 */
struct learn_state {
	uint32_t next_iter;
	uint64_t seed;
	uint32_t threads; /* workers: MPI ranks x threads per rank */
	double ema_s, best_ratio;
	uint64_t adam_step;
	size_t n;
	float *mom1, *mom2; /* owned */
};

/* Parses a state file held in buf; name is used in messages. 0 or -EINVAL with err. */
int learn_state_parse(const void *buf, size_t len, const char *name, struct learn_state *ret,
		      struct loom_err *err);
void learn_state_done(struct learn_state *s);

#endif
