/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/sim: the event-driven fabric simulator behind loom-replay and
 * loom-train, its trace readers, the workload generator and the metrics.
 *
 * The engine advances from event to event (arrivals, releases, flow
 * completions, wake-ups a policy asks for, optional epochs and periodic
 * re-evaluation); rates are constant between events. At each event the
 * policy orders the schedulable coflows and the fabric model turns the order
 * into rates that never exceed any port's capacity:
 *   - ideal mode: every coflow is its own strict-priority class; policy rates
 *     (e.g. MADD) are honoured as caps, otherwise the coflow's flows share
 *     what is left max-min fairly; leftover capacity is then backfilled
 *     greedily in order (work conservation);
 *   - classes mode: the order is quantised into K classes (or the policy's
 *     own classes are used); strict priority across classes, per-flow max-min
 *     fairness inside a class — what the live datapath enforces. By default
 *     (SIM_QUANT_CONFLICT) the classes are loomd's default ones, from the
 *     same function; SIM_QUANT_PER_HOST is loomd's class_assign=per-host;
 *     TOP and EVEN quantise the order once for every host.
 */
#ifndef LOOM_CONTROLPLANE_SIM_SIM_H
#define LOOM_CONTROLPLANE_SIM_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/errors.h"
#include "controlplane/model/model.h"
#include "controlplane/policy/policy.h"
#include "topo/topo.h"

/* ---- trace readers (trace.c) ------------------------------------------ */

enum sim_trace_format {
	SIM_TRACE_FB = 0,    /* coflow-benchmark (FB2010) */
	SIM_TRACE_SINCRONIA, /* Sincronia per-flow */
	SIM_TRACE_LOOM,      /* Loom's multi-stage job format (docs/trace-format.md) */
	/*
	 * coflow-benchmark lines sized as CoflowSim sizes them: each reducer's
	 * MB truncated to bytes and rounded up to a whole MiB, then up to a
	 * multiple of M MiB (M mappers); each of its M flows carries 1/M of that
	 */
	SIM_TRACE_FB_COFLOWSIM,
};

/* Parses "fb", "sincronia", "loom" or "fb-coflowsim". 0 or -EINVAL. */
int sim_trace_format_parse(const char *s, enum sim_trace_format *ret_fmt);
const char *sim_trace_format_name(enum sim_trace_format fmt);

/*
 * Parses a trace held in buf (len bytes, need not be NUL-terminated); name is
 * used in messages. Returns the model (not yet bound to a fabric) and the
 * number of hosts/ports the trace declares in ret_nhosts, or NULL with errno
 * set and err = "name:line: reason".
 */
struct cp_model *sim_trace_parse(const char *buf, size_t len, const char *name,
				 enum sim_trace_format fmt, uint32_t *ret_nhosts,
				 struct loom_err *err);

/* Reads and parses a trace file; as sim_trace_parse, err names the path. */
struct cp_model *sim_trace_load(const char *path, enum sim_trace_format fmt, uint32_t *ret_nhosts,
				struct loom_err *err);

/* Writes m in Loom's format to f (exact: reading it back gives the same model). 0 or -errno. */
int sim_trace_write_loom(const struct cp_model *m, FILE *f);

/* ---- DAG shapes and the workload generator (gen.c) --------------------- */

struct sim_dag {
	uint32_t nnodes, nedges;
	uint32_t (*edges)[2]; /* parent, child node indices */
	double *mean_task_ms; /* per node */
	uint32_t *ntasks;     /* per node */
	char label[32];       /* e.g. "2g-q5" */
};

struct sim_dags {
	uint32_t n;
	struct sim_dag *dags;
};

/* Parses a dags.txt buffer (data/tpch/FORMAT.md). NULL + errno, err "name:line: reason". */
struct sim_dags *sim_dags_parse(const char *buf, size_t len, const char *name,
				struct loom_err *err);
/*
 * Returns the DAG shapes that path names: a random family when path is a
 * random spec (sim_dags_spec_is_random(): "random" or "random:..."; a file
 * of that name is reached as "./random..."), else the dags.txt file at path.
 * The caller owns the result (sim_dags_free()). NULL + errno, err as
 * sim_dags_parse() or sim_dags_random_parse().
 */
struct sim_dags *sim_dags_load(const char *path, struct loom_err *err);
/* Frees d and what it holds; accepts NULL; returns NULL. */
struct sim_dags *sim_dags_free(struct sim_dags *d);

/*
 * The random layered DAG family (dags_random.c; docs/simulator.md), named by
 * "random[:key=value]...". Each shape: coflows (edges) uniform in
 * [min_coflows, max_coflows]; L layers, L uniform in [min_layers,
 * min(max_layers, coflows + 1)], edges only from a layer to a later one and a
 * chain through all L (the longest path has L stages); weakly connected; at
 * most fanin_max parents per stage; no repeated edges; stage mean task times
 * log-uniform in [min_task_ms, max_task_ms] (uniform when min is 0), task
 * counts uniform in 1..200. Deterministic in seed, which is the family's own
 * (not sim_gen_params.seed); shape i does not depend on count.
 */
struct sim_dags_random {
	uint32_t min_coflows, max_coflows; /* min=, max=: 1 .. 1000 (default 2, 30) */
	uint32_t min_layers, max_layers;   /* layers=A..B or =B: 2 .. 1001 (default 2..6) */
	uint32_t fanin_max;                /* fanin=: 1 .. 1000 (default 3) */
	uint32_t count;                    /* count=: shapes, 1 .. 100000 (default 200) */
	uint64_t seed;                     /* seed= (default 1) */
	double min_task_ms, max_task_ms;   /* task-ms=A..B or =X: 0 .. 1e7 (default 20..5000) */
};

/* Whether spec is "random" or starts with "random:". */
bool sim_dags_spec_is_random(const char *spec);
/* Fills the defaults above. */
void sim_dags_random_default(struct sim_dags_random *p);
/*
 * Parses a random spec into *ret_p (defaults for the keys it leaves out).
 * Returns 0, or -EINVAL with err naming the key and the value (unknown key,
 * bad or out-of-range number, repeated key, min > max, a layer range that
 * min coflows cannot reach), or -ENOMEM.
 */
int sim_dags_random_parse(const char *spec, struct sim_dags_random *ret_p, struct loom_err *err);
/* Draws p->count shapes; the caller owns them (sim_dags_free()). NULL + errno, err. */
struct sim_dags *sim_dags_random_new(const struct sim_dags_random *p, struct loom_err *err);

struct sim_gen_params {
	uint32_t njobs;
	double load; /* target offered load on the host uplinks, (0, 1] typical */
	uint64_t seed;
	double compute_scale; /* edge delay = stage mean task time * this; 0 = none */
	double bytes_scale;   /* multiplies sampled coflow bytes; 1 = as in FB2010 */
	double weight_max;    /* job weights uniform integers in [1, weight_max]; 1 = unweighted */
};

/* Fills defaults: 100 jobs, load 0.7, seed 1, compute_scale 1, bytes_scale 1, weight_max 1. */
void sim_gen_params_default(struct sim_gen_params *p);

/*
 * Generates a multi-stage workload: each job takes a DAG shape from dags
 * (uniformly), each edge parent->child becomes a coflow whose width and
 * per-reducer bytes are those of a coflow sampled uniformly from fb (an FB2010
 * model), mappers and reducers placed on distinct random hosts of t; Poisson
 * job arrivals with the mean gap that makes the offered load p->load.
 * Deterministic in p->seed. Returns the model (unbound) or NULL + errno/err.
 */
struct cp_model *sim_gen(const struct sim_gen_params *p, const struct sim_dags *dags,
			 const struct cp_model *fb, const struct topo *t, struct loom_err *err);

/* ---- the engine (sim.c, fabric.c) ----------------------------------------- */

enum sim_mode {
	SIM_MODE_IDEAL = 0,
	SIM_MODE_CLASSES,
};

enum sim_quantize {
	SIM_QUANT_TOP = 0, /* positions 0..K-2 get classes 0..K-2, the rest share K-1 */
	SIM_QUANT_EVEN,    /* position i of n gets class i * K / n */
	/*
	 * what loomd and the datapath enforce (policy_decision_host_classes()):
	 * per source host, the i-th coflow in the order with unfinished flows
	 * from the host gets class min(i, K-1) there
	 */
	SIM_QUANT_PER_HOST,
	/* policy_decision_conflict_classes(): one class above every earlier coflow sharing a port */
	SIM_QUANT_CONFLICT,
};

/* Parses "conflict", "per-host", "top" or "even". 0 or -EINVAL. */
int sim_quantize_parse(const char *s, enum sim_quantize *ret_q);
const char *sim_quantize_name(enum sim_quantize q);

struct sim_progress {
	uint64_t now_ns;
	uint32_t jobs_done, njobs;
	uint64_t events;
};

struct sim_opts {
	enum sim_mode mode;
	uint32_t classes; /* K in classes mode (default 8) */
	enum sim_quantize quantize;
	uint64_t epoch_ns;  /* admit job arrivals only at multiples of this; 0 = at once */
	uint64_t reeval_ns; /* also re-decide every reeval_ns; 0 = only on events */
	/*
	 * The policy sees the bytes as loomd does, from reports its agents send
	 * every stats_ns: each unfinished flow's remaining bytes and each
	 * coflow's and job's sent bytes as they were at the last multiple of
	 * stats_ns (a flow released since then: nothing sent); a decision's
	 * watches are checked at those instants, on those counts. Completions,
	 * arrivals and releases it sees at once. 0: the exact bytes, now.
	 */
	uint64_t stats_ns;
	bool check; /* verify capacities and byte conservation at every step */
	/*
	 * Tests: after completions, re-fill every class from scratch and compare
	 * every pair's rate (the simple way the incremental update must equal).
	 */
	bool full_refill;
	/*
	 * Called every progress_every steps (0: at none of them), and once more
	 * when the run has finished every job (not after an error).
	 */
	void (*progress)(void *ctx, const struct sim_progress *pr);
	void *progress_ctx;
	uint64_t progress_every;
	/*
	 * Called after every valid decision, before the fabric acts on it, with
	 * the model synced to now (remaining and sent bytes exact): the
	 * differential test against loomd records the decision sequence here.
	 */
	void (*on_decision)(void *ctx, const struct cp_model *m, uint64_t now_ns,
			    const struct policy_decision *d);
	void *decision_ctx;
	/*
	 * Called after every decision's allocation that serves classes (all
	 * but ideal mode with policy rates), with the model synced to now:
	 * flow_class[f] (borrowed, valid during the call) is the class the
	 * fabric serves each unfinished flow f of every ordered coflow in, 0
	 * first. In classes mode that is what the flow's source host holds
	 * (loomd's classes with SIM_QUANT_CONFLICT or PER_HOST); in ideal mode it is the
	 * coflow's position, or the policy's class. Entries of other flows are
	 * stale. The differential test against loomd compares them here.
	 */
	void (*on_classes)(void *ctx, const struct cp_model *m, uint64_t now_ns,
			   const uint32_t *flow_class);
	void *classes_ctx;
};

/* Fills defaults: ideal mode, K = 8, quantise CONFLICT, no epochs, no re-evaluation, no checks. */
void sim_opts_default(struct sim_opts *o);

/* Units in the last place of a flow's bytes that the residual check allows (sim_stats). */
#define SIM_RESID_ULPS 64

struct sim_stats {
	uint64_t events;    /* model events processed */
	uint64_t steps;     /* distinct event times (allocations) */
	uint64_t decisions; /* policy decide calls */
	uint64_t makespan_ns;
	/* filled when opts.check: */
	double max_port_load; /* max over steps and ports of allocated / capacity */
	/*
	 * max over flow completions of |bytes left| (0 ideally), less
	 * SIM_RESID_ULPS units in the last place of the flow's bytes (the
	 * rounding of the doubles that count them), in nanoseconds of transfer
	 * at the flow's rate: completions are rounded up to whole nanoseconds,
	 * which bounds it by 1
	 */
	double max_residual_ns;
	uint64_t checked_steps;
};

/*
 * Runs the model (bound to its fabric, reset here) under policy p until every
 * job is done. Returns 0, or -errno with err filled: -EPROTO when the policy
 * returns an invalid decision, -EDEADLK when work remains but nothing can move.
 */
int sim_run(struct cp_model *m, struct policy *p, const struct sim_opts *o,
	    struct sim_stats *ret_stats, struct loom_err *err);

/* ---- the CoflowSim-exact mode (coflowsim.c; docs/simulator.md) -------- */

/* CoflowSim's clock: 1024 of its milliseconds make its second. */
#define SIM_CFS_EPOCH_MS   10240 /* admission epoch */
#define SIM_CFS_QUANTUM_MS 8     /* time step */
/* Its port rate, 2^30 bits per 1024 ms, in bits per (1000-ms) second. */
#define SIM_CFS_RATE_BPS 1048576000ULL

enum sim_cfs_algo {
	SIM_CFS_FAIR = 0, /* per-flow shares of each port, every quantum (not max-min) */
	SIM_CFS_FIFO,
	SIM_CFS_SCF,  /* smallest largest flow */
	SIM_CFS_NCF,  /* narrowest: min(mappers, reducers) */
	SIM_CFS_LCF,  /* least bytes left, at admission */
	SIM_CFS_SEBF, /* smallest bottleneck, at admission */
	SIM_CFS_DARK, /* Aalo's D-CLAS: 10 queues, 10 MB x 10^i */
};

/*
 * CoflowSim's settings, and knobs to measure what each convention costs
 * (bench/coflowsim_ablate.c); loom-replay --compat coflowsim uses the defaults.
 */
struct sim_cfs_opts {
	uint32_t epoch_ms;        /* admission epoch (10240) */
	uint32_t quantum_ms;      /* time step (8); divides epoch_ms */
	bool rerate_on_flow_done; /* also re-decide when a flow finishes (CoflowSim: no) */
};

void sim_cfs_opts_default(struct sim_cfs_opts *o);

/* The CoflowSim counterpart of a Loom policy name (fair fifo scf ncf lcf sebf dclas); -ENOENT. */
int sim_cfs_algo_for_policy(const char *name, enum sim_cfs_algo *ret);
const char *sim_cfs_algo_name(enum sim_cfs_algo a);

/*
 * Makes m (single-stage: one coflow per job, as CoflowSim's) start each job
 * where CoflowSim does: at the start of the epoch (o->epoch_ms; o NULL:
 * CoflowSim's 10240 ms) whose window (T, T + epoch] holds its arrival; its
 * arrival_ns becomes that time, so CCT and JCT are measured from it. m is
 * not bound yet or bound; jobs keep their order (arrival, id). 0 or -EINVAL
 * with err naming the job (or the bad option).
 */
int sim_coflowsim_prepare(struct cp_model *m, const struct sim_cfs_opts *o, struct loom_err *err);

/*
 * Runs m, prepared with the same o (NULL: CoflowSim's settings; flows sized
 * as SIM_TRACE_FB_COFLOWSIM reads them for an exact match), as CoflowSim's
 * simulator for algo does: 8-ms quanta, each
 * port 2^30 bits per 1024 ms, admissions at epoch starts, rates set only
 * after admissions and departures (FAIR: every quantum). Leaves every
 * coflow's release and finish in m, as sim_run() does. 0 or -errno with err:
 * -EINVAL (m not prepared), -EDEADLK (work left at CoflowSim's end of time,
 * 86400 s), -ENOMEM.
 */
int sim_coflowsim_run(struct cp_model *m, enum sim_cfs_algo algo, const struct sim_cfs_opts *o,
		      struct sim_stats *ret_stats, struct loom_err *err);

/* ---- the LP lower bound (bound_lp.c; docs/bounds.md) ------------------- */

/*
 * A lower bound on the average weighted JCT of any schedule of a workload
 * (and on the average CCT when every job is one coflow): the optimum of an
 * LP over completion times with isolation and DAG precedence rows and, per
 * port, Queyranne's parallel inequalities with release dates, added lazily
 * (the most violated per port and round). Every round's optimum is a valid
 * bound; more rounds only tighten it. Needs GLPK (meson option lp).
 */
struct sim_bound_opts {
	uint32_t max_rounds; /* separation rounds at most (default 500) */
	double tol;          /* a cut is violated beyond tol x mean isolation time (1e-4) */
	double time_limit_s; /* stop adding cuts after this long; 0 = no limit (default) */
	uint32_t thresholds; /* release thresholds per port and round; 0 = all (default) */
};

struct sim_bound_result {
	double avg_wjct_s;      /* bound on the mean over jobs of weight x JCT */
	double avg_cct_s;       /* bound on the mean CCT; NAN unless every job is one coflow */
	uint32_t rounds, cuts;  /* separation rounds solved, cuts added */
	uint32_t rows, cols;    /* final LP size */
	double max_violation_s; /* largest violation left (normalised cut, seconds) */
	bool converged;         /* no cut violated beyond the tolerance at the end */
	bool timed_out;         /* stopped by time_limit_s */
	double solve_s;         /* wall time of the whole computation */
};

/* Fills the defaults above. */
void sim_bound_opts_default(struct sim_bound_opts *o);

/* Whether the LP bound was built in (GLPK found). */
bool sim_bound_lp_available(void);

/*
 * Computes the LP bound of m (bound to its fabric; read only; its dynamic
 * state is not used) with options o (NULL: defaults) into *ret. Returns 0,
 * or -EINVAL (model not bound, no jobs), -ENOTSUP (built without GLPK),
 * -EIO (the solver failed) or -ENOMEM, with err filled.
 */
int sim_bound_lp(const struct cp_model *m, const struct sim_bound_opts *o,
		 struct sim_bound_result *ret, struct loom_err *err);

/* ---- the best priority order of a small workload (bound_order.c) ------- */

#define SIM_ORDER_MAX_COFLOWS 8 /* 8! = 40320 runs */

struct sim_order_opts {
	uint32_t max_coflows; /* refuse workloads with more coflows (default 8) */
};

struct sim_order_result {
	double avg_wjct_s;         /* min over orders of the average weighted JCT */
	double avg_cct_s;          /* min over orders of the average CCT (maybe another order) */
	uint32_t *best_wjct_order; /* n coflow indices, highest priority first */
	uint32_t *best_cct_order;  /* (sim_order_result_done() frees both) */
	uint32_t n;                /* coflows */
	uint64_t orders;           /* orders simulated: n! */
	double solve_s;            /* wall time */
};

void sim_order_opts_default(struct sim_order_opts *o);

/*
 * The best fixed priority order of m (bound; its dynamic state is reset and
 * left at the last order's run): every permutation of its coflows served in
 * ideal mode with MADD rates and backfill, as fifo serves arrival order,
 * each through sim_run(). An exact optimum over such schedules, an upper
 * bound on the optimum over all schedules. Returns 0, or -E2BIG (more than
 * o->max_coflows coflows), -EINVAL, -ENOMEM or sim_run()'s error, with err
 * filled. o may be NULL (defaults).
 */
int sim_bound_order(struct cp_model *m, const struct sim_order_opts *o,
		    struct sim_order_result *ret, struct loom_err *err);
/* Frees what a result holds. */
void sim_order_result_done(struct sim_order_result *r);

/* ---- metrics and reports (report.c) ----------------------------------- */

struct sim_dist {
	uint32_t n;
	double avg, p50, p95, p99, max;
};

/* Summarises values[0 .. n) (reordered in place). */
void sim_dist_compute(double *values, uint32_t n, struct sim_dist *ret);

struct sim_summary {
	char label[112]; /* e.g. "fifo" or "dclas:sharing=weighted/K8" */
	struct sim_dist cct_s;
	struct sim_dist bin_cct_s[CP_BIN_COUNT];
	struct sim_dist jct_s;
	double avg_wjct_s;           /* mean over jobs of weight * JCT */
	double avg_isolation_s;      /* mean coflow isolation time (CCT lower bound) */
	double avg_cct_slowdown;     /* mean over coflows of CCT / isolation time */
	double avg_job_isolation_s;  /* mean job critical-path isolation time (JCT bound) */
	double avg_wjob_isolation_s; /* mean of weight x that (weighted JCT bound) */
	double avg_jct_slowdown;     /* mean over jobs of JCT / critical-path isolation */
	double makespan_s;
	double utilisation; /* bytes moved / (uplink capacity * makespan) */
	struct sim_stats stats;
	double wall_s;
	/* the workload's LP bounds (sim_bound_lp()); NAN until the caller sets them */
	double lp_bound_wjct_s;
	double lp_bound_cct_s;
	/* its best fixed priority order's (sim_bound_order()); NAN until set */
	double order_wjct_s;
	double order_cct_s;
};

/* Fills s from a finished run of m. 0 or -ENOMEM. */
int sim_summarise(const struct cp_model *m, const struct sim_stats *st, const char *label,
		  struct sim_summary *ret);

/* Per-coflow CSV: coflow_id,job_id,release_ns,finish_ns,cct_ns,bytes,width,bin,isolation_ns. */
int sim_write_coflows_csv(const struct cp_model *m, const char *path);
/* Per-job CSV: job_id,arrival_ns,finish_ns,jct_ns,weight. */
int sim_write_jobs_csv(const struct cp_model *m, const char *path);
/* One row per summary. */
int sim_write_summary_csv(const struct sim_summary *s, size_t n, const char *path);
/* Prints the comparison table, each column normalised to s[0]. */
void sim_print_table(FILE *f, const struct sim_summary *s, size_t n);

/*
 * Writes dir/plots.gp and, when gnuplot is on PATH, runs it: CCT and JCT
 * CDFs per summary (reading dir/<label>-coflows.csv, dir/<label>-jobs.csv)
 * and bars of average CCT/JCT normalised to s[0], as PNG and SVG.
 * Returns 0, 1 when gnuplot is missing (script written, no images), or -errno.
 */
int sim_write_plots(const char *dir, const struct sim_summary *s, size_t n);

/* Returns a file-name-safe copy of label ("fifo/K8" -> "fifo-K8") in buf. */
const char *sim_label_file(const char *label, char *buf, size_t size);

#endif
