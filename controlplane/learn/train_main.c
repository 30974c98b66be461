/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom-train: trains the gnn policy's model in the simulator (learn.h,
 * docs/learning.md) and writes its weights.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/datapath.h"
#include "common/log.h"
#include "controlplane/learn/learn.h"
#include "controlplane/learn/learn_mpi.h"
#include "controlplane/policy/coflow_features.h"
#include "controlplane/policy/policy.h"
#include "controlplane/sim/cli.h"

#define DAGS_REL "tpch/dags.txt"
#define FB_REL   "fb2010/FB2010-1Hr-150-0.txt"

struct train_args {
	struct learn_opts o;
	const char *dags, *fb, *save;
	uint32_t hosts;
	bool shape_given; /* a model-shape flag was given */
	int progress;     /* -1 auto (tty), 0, 1 */
};

static void usage(FILE *f)
{
	struct learn_opts d;

	learn_opts_default(&d);
	fprintf(f,
		"Usage: loom-train [OPTIONS]\n"
		"Trains the gnn policy's model on generated multi-stage workloads in the\n"
		"simulator: imitation of a heuristic as a warm start, then policy-gradient\n"
		"reinforcement learning (docs/learning.md).\n\n"
		"Output (--out DIR): checkpoint.lgw + checkpoint.state (resume), best.lgw (best\n"
		"validation), final.lgw, learning.csv + learning.gp (+ learning.png with gnuplot).\n\n"
		"  -o, --out DIR             output directory (default out/train)\n"
		"  -S, --save PATH           also copy the best model (else the final one) to PATH\n"
		"  -n, --iters N             iterations in all (default %u)\n"
		"  -I, --imitate-iters N     of which the first N imitate the teacher (default %u)\n"
		"  -t, --teacher SPEC        the policy imitated (default %s); a lookahead on\n"
		"                            base=gnn runs the model being trained (expert iteration)\n"
		"      --dagger              imitation on the model's own states: the model drives\n"
		"                            each episode, the teacher labels its decisions (default %s)\n"
		"      --label-prob P        share of those decisions labelled, 0..1 (default %g)\n"
		"      --imitate-top K       imitation loss on the teacher's first K places only,\n"
		"                            0 = its whole order (default %u)\n"
		"      --agree-weight X      weight of an imitated decision the model already gets\n"
		"                            right (its greedy order starts as the teacher's), 0..1\n"
		"                            (default %g)\n"
		"      --rates R             the gnn policy's rates in training, validation and a\n"
		"                            lookahead teacher's gnn base: auto (by the prior:\n"
		"                            strict priority for sincronia and blend, else\n"
		"                            MADD), madd or priority (default auto)\n"
		"      --prior NAME          residual scoring: scores are the network's output plus\n"
		"                            the heuristic NAME's order (none, sincronia, sebf,\n"
		"                            wsrjf, srjf, scf, lcf, blend; default %s)\n"
		"      --prior-scale X       score per place of the prior's order (default %g)\n"
		"      --place-features      the model also sees each coflow's place in\n"
		"                            sincronia's, wsrjf's, sebf's and lcf's orders\n"
		"                            (8 more inputs; a new model: not with --init;\n"
		"                            default off)\n"
		"  -k, --rollouts K          rollouts of each episode per iteration, >= 2 (default %u)\n"
		"  -j, --threads T           worker threads (default %u; per rank with --mpi);\n"
		"                            results depend on the workers in all\n"
		"      --mpi                 spread the workers over MPI ranks (start with\n"
		"                            mpirun -np R): R x T workers, the same model as one\n"
		"                            process with R x T threads; only rank 0 writes (%s)\n"
		"      --jobs-min N          jobs in the first episodes (default %u)\n"
		"      --jobs-max N          jobs once the curriculum is done (default %u)\n"
		"      --curriculum N        iterations over which episodes grow (default %u)\n"
		"      --load-min L          episode loads are uniform in [min, max]\n"
		"      --load-max L            (default %.1f, %.1f)\n"
		"      --weight-max W        job weights uniform in 1..W (default %u)\n"
		"      --decisions N         decisions per rollout in each gradient, 0 = all\n"
		"                            (default %u)\n"
		"      --lr X                Adam learning rate, imitation (default %g)\n"
		"      --rl-lr X             ... and reinforcement (default %g)\n"
		"      --clip X              gradient norm clip (default %g)\n"
		"      --entropy-start X     entropy bonus at the start of RL (default %g)\n"
		"      --entropy-end X       ... annealed linearly to this (default %g)\n"
		"      --entropy-iters N     ... over N RL iterations (default %u)\n"
		"      --eval-every N        validate the greedy policy every N iterations, 0 = never\n"
		"                            (default %u)\n"
		"      --eval-workloads N    validation workloads (seeds 1000001.., loads 0.7/0.9;\n"
		"                            default %u)\n"
		"      --eval-jobs N         jobs per validation workload (default %u)\n"
		"  -s, --seed S              seed; same seed and workers, same model (default %llu)\n"
		"      --init PATH           start from these weights instead of a random model\n"
		"      --resume              continue from DIR/checkpoint.* (same seed, workers)\n"
		"      --time-limit SEC      stop with a checkpoint after SEC seconds\n"
		"      --hidden N --layers N --emb N --heads N --mlp N   model shape (gnn/)\n"
		"  -H, --hosts H             hosts of the big-switch fabric (default 150)\n"
		"  -d, --dags PATH           DAG shapes (default $LOOM_DATA/" DAGS_REL ", else\n"
		"                            data/" DAGS_REL ")\n"
		"  -f, --fb PATH             FB2010 trace (default as --dags, " FB_REL ")\n"
		"      --progress / --no-progress   progress bar on stderr (default: when a tty)\n"
		"  -h, --help\n",
		d.iters, d.imitate_iters, d.teacher, d.dagger ? "on" : "off", d.label_prob,
		d.imitate_top, d.agree_weight, policy_gnn_prior_name(d.cfg.prior),
		(double)d.cfg.prior_scale, d.rollouts, d.threads,
		learn_mpi_built() ? "this build has MPI" : "not in this build", d.jobs_min,
		d.jobs_max, d.curriculum_iters, d.load_min, d.load_max, d.weight_max,
		d.train_decisions, (double)d.lr, (double)d.rl_lr, (double)d.clip_norm,
		d.entropy_start, d.entropy_end, d.entropy_iters, d.eval_every, d.eval_workloads,
		d.eval_jobs, (unsigned long long)d.seed);
}

enum {
	OPT_JOBS_MIN = 256,
	OPT_JOBS_MAX,
	OPT_CURRICULUM,
	OPT_LOAD_MIN,
	OPT_LOAD_MAX,
	OPT_WEIGHT_MAX,
	OPT_DECISIONS,
	OPT_LR,
	OPT_RL_LR,
	OPT_CLIP,
	OPT_ENT_START,
	OPT_ENT_END,
	OPT_ENT_ITERS,
	OPT_EVAL_EVERY,
	OPT_EVAL_WL,
	OPT_EVAL_JOBS,
	OPT_INIT,
	OPT_RESUME,
	OPT_TIME_LIMIT,
	OPT_HIDDEN,
	OPT_LAYERS,
	OPT_EMB,
	OPT_HEADS,
	OPT_MLP,
	OPT_PROGRESS,
	OPT_NO_PROGRESS,
	OPT_DAGGER,
	OPT_NO_DAGGER,
	OPT_LABEL_PROB,
	OPT_IMITATE_TOP,
	OPT_AGREE_WEIGHT,
	OPT_RATES,
	OPT_PRIOR,
	OPT_PRIOR_SCALE,
	OPT_PLACE_FEATURES,
	OPT_MPI,
};

static int u32_arg(const char *flag, const char *v, uint64_t min, uint64_t max, uint32_t *ret)
{
	uint64_t x;

	if (sim_cli_u64(flag, v, min, max, &x) < 0)
		return -EINVAL;
	*ret = (uint32_t)x;
	return 0;
}

static int parse_args(int argc, char **argv, struct train_args *a)
{
	static const struct option opts[] = {
		{"out", required_argument, NULL, 'o'},
		{"save", required_argument, NULL, 'S'},
		{"iters", required_argument, NULL, 'n'},
		{"imitate-iters", required_argument, NULL, 'I'},
		{"teacher", required_argument, NULL, 't'},
		{"rollouts", required_argument, NULL, 'k'},
		{"threads", required_argument, NULL, 'j'},
		{"jobs-min", required_argument, NULL, OPT_JOBS_MIN},
		{"jobs-max", required_argument, NULL, OPT_JOBS_MAX},
		{"curriculum", required_argument, NULL, OPT_CURRICULUM},
		{"load-min", required_argument, NULL, OPT_LOAD_MIN},
		{"load-max", required_argument, NULL, OPT_LOAD_MAX},
		{"weight-max", required_argument, NULL, OPT_WEIGHT_MAX},
		{"decisions", required_argument, NULL, OPT_DECISIONS},
		{"lr", required_argument, NULL, OPT_LR},
		{"rl-lr", required_argument, NULL, OPT_RL_LR},
		{"clip", required_argument, NULL, OPT_CLIP},
		{"entropy-start", required_argument, NULL, OPT_ENT_START},
		{"entropy-end", required_argument, NULL, OPT_ENT_END},
		{"entropy-iters", required_argument, NULL, OPT_ENT_ITERS},
		{"eval-every", required_argument, NULL, OPT_EVAL_EVERY},
		{"eval-workloads", required_argument, NULL, OPT_EVAL_WL},
		{"eval-jobs", required_argument, NULL, OPT_EVAL_JOBS},
		{"seed", required_argument, NULL, 's'},
		{"init", required_argument, NULL, OPT_INIT},
		{"resume", no_argument, NULL, OPT_RESUME},
		{"time-limit", required_argument, NULL, OPT_TIME_LIMIT},
		{"hidden", required_argument, NULL, OPT_HIDDEN},
		{"layers", required_argument, NULL, OPT_LAYERS},
		{"emb", required_argument, NULL, OPT_EMB},
		{"heads", required_argument, NULL, OPT_HEADS},
		{"mlp", required_argument, NULL, OPT_MLP},
		{"hosts", required_argument, NULL, 'H'},
		{"dags", required_argument, NULL, 'd'},
		{"fb", required_argument, NULL, 'f'},
		{"dagger", no_argument, NULL, OPT_DAGGER},
		{"no-dagger", no_argument, NULL, OPT_NO_DAGGER},
		{"label-prob", required_argument, NULL, OPT_LABEL_PROB},
		{"imitate-top", required_argument, NULL, OPT_IMITATE_TOP},
		{"agree-weight", required_argument, NULL, OPT_AGREE_WEIGHT},
		{"rates", required_argument, NULL, OPT_RATES},
		{"prior", required_argument, NULL, OPT_PRIOR},
		{"prior-scale", required_argument, NULL, OPT_PRIOR_SCALE},
		{"place-features", no_argument, NULL, OPT_PLACE_FEATURES},
		{"mpi", no_argument, NULL, OPT_MPI},
		{"progress", no_argument, NULL, OPT_PROGRESS},
		{"no-progress", no_argument, NULL, OPT_NO_PROGRESS},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct learn_opts *o = &a->o;
	double x;
	int c, r = 0;

	while ((c = getopt_long(argc, argv, "o:S:n:I:t:k:j:s:H:d:f:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->out_dir = optarg;
			break;
		case 'S':
			a->save = optarg;
			break;
		case 'n':
			r = u32_arg("--iters", optarg, 1, 100000000, &o->iters);
			break;
		case 'I':
			r = u32_arg("--imitate-iters", optarg, 0, 100000000, &o->imitate_iters);
			break;
		case 't':
			o->teacher = optarg;
			break;
		case 'k':
			r = u32_arg("--rollouts", optarg, 2, 64, &o->rollouts);
			break;
		case 'j':
			r = u32_arg("--threads", optarg, 1, 16, &o->threads);
			break;
		case OPT_JOBS_MIN:
			r = u32_arg("--jobs-min", optarg, 1, 100000, &o->jobs_min);
			break;
		case OPT_JOBS_MAX:
			r = u32_arg("--jobs-max", optarg, 1, 100000, &o->jobs_max);
			break;
		case OPT_CURRICULUM:
			r = u32_arg("--curriculum", optarg, 0, 100000000, &o->curriculum_iters);
			break;
		case OPT_LOAD_MIN:
			r = sim_cli_double("--load-min", optarg, 0, true, 100, &o->load_min);
			break;
		case OPT_LOAD_MAX:
			r = sim_cli_double("--load-max", optarg, 0, true, 100, &o->load_max);
			break;
		case OPT_WEIGHT_MAX:
			r = u32_arg("--weight-max", optarg, 1, 1000000, &o->weight_max);
			break;
		case OPT_DECISIONS:
			r = u32_arg("--decisions", optarg, 0, 100000000, &o->train_decisions);
			break;
		case OPT_LR:
			r = sim_cli_double("--lr", optarg, 0, true, 1, &x);
			o->lr = (float)x;
			break;
		case OPT_RL_LR:
			r = sim_cli_double("--rl-lr", optarg, 0, true, 1, &x);
			o->rl_lr = (float)x;
			break;
		case OPT_CLIP:
			r = sim_cli_double("--clip", optarg, 0, false, 1e6, &x);
			o->clip_norm = (float)x;
			break;
		case OPT_ENT_START:
			r = sim_cli_double("--entropy-start", optarg, 0, false, 10,
					   &o->entropy_start);
			break;
		case OPT_ENT_END:
			r = sim_cli_double("--entropy-end", optarg, 0, false, 10, &o->entropy_end);
			break;
		case OPT_ENT_ITERS:
			r = u32_arg("--entropy-iters", optarg, 0, 100000000, &o->entropy_iters);
			break;
		case OPT_EVAL_EVERY:
			r = u32_arg("--eval-every", optarg, 0, 100000000, &o->eval_every);
			break;
		case OPT_EVAL_WL:
			r = u32_arg("--eval-workloads", optarg, 1, 1000, &o->eval_workloads);
			break;
		case OPT_EVAL_JOBS:
			r = u32_arg("--eval-jobs", optarg, 1, 100000, &o->eval_jobs);
			break;
		case 's':
			r = sim_cli_u64("--seed", optarg, 0, UINT64_MAX, &o->seed);
			break;
		case OPT_INIT:
			o->init_weights = optarg;
			break;
		case OPT_RESUME:
			o->resume = true;
			break;
		case OPT_TIME_LIMIT:
			r = sim_cli_double("--time-limit", optarg, 0, true, 1e9, &o->time_limit_s);
			break;
		case OPT_HIDDEN:
			a->shape_given = true;
			r = u32_arg("--hidden", optarg, 1, 4096, &o->cfg.hidden);
			break;
		case OPT_LAYERS:
			a->shape_given = true;
			r = u32_arg("--layers", optarg, 1, 64, &o->cfg.layers);
			break;
		case OPT_EMB:
			a->shape_given = true;
			r = u32_arg("--emb", optarg, 1, 4096, &o->cfg.emb);
			break;
		case OPT_HEADS:
			a->shape_given = true;
			r = u32_arg("--heads", optarg, 1, 64, &o->cfg.heads);
			break;
		case OPT_MLP:
			a->shape_given = true;
			r = u32_arg("--mlp", optarg, 1, 4096, &o->cfg.mlp_hidden);
			break;
		case 'H':
			r = u32_arg("--hosts", optarg, 2, TOPO_MAX_HOSTS, &a->hosts);
			break;
		case 'd':
			a->dags = optarg;
			break;
		case 'f':
			a->fb = optarg;
			break;
		case OPT_DAGGER:
			o->dagger = true;
			break;
		case OPT_NO_DAGGER:
			o->dagger = false;
			break;
		case OPT_LABEL_PROB:
			r = sim_cli_double("--label-prob", optarg, 0, true, 1, &o->label_prob);
			break;
		case OPT_IMITATE_TOP:
			r = u32_arg("--imitate-top", optarg, 0, 1000000, &o->imitate_top);
			break;
		case OPT_AGREE_WEIGHT:
			r = sim_cli_double("--agree-weight", optarg, 0, false, 1, &o->agree_weight);
			break;
		case OPT_RATES:
			if (strcmp(optarg, "auto") == 0) {
				o->gnn_rates = POLICY_GNN_RATES_PRIOR;
			} else if (strcmp(optarg, "madd") == 0) {
				o->gnn_rates = POLICY_GNN_RATES_MADD;
			} else if (strcmp(optarg, "priority") == 0) {
				o->gnn_rates = POLICY_GNN_RATES_PRIORITY;
			} else {
				log_err("--rates: '%s' is not auto, madd or priority", optarg);
				return -EINVAL;
			}
			break;
		case OPT_PRIOR: {
			int id = policy_gnn_prior_find(optarg);

			a->shape_given = true;
			if (id < 0) {
				log_err("--prior: unknown heuristic '%s' (valid: none, sincronia, "
					"sebf, wsrjf, srjf, scf, lcf, blend)",
					optarg);
				return -EINVAL;
			}
			o->cfg.prior = (uint32_t)id;
			break;
		}
		case OPT_PRIOR_SCALE:
			a->shape_given = true;
			r = sim_cli_double("--prior-scale", optarg, 0, true, 1e6, &x);
			o->cfg.prior_scale = (float)x;
			break;
		case OPT_PLACE_FEATURES:
			a->shape_given = true;
			o->cfg.nfeatures = POLICY_NFEATURES_RANKS;
			break;
		case OPT_MPI:
			o->mpi = true;
			break;
		case OPT_PROGRESS:
			a->progress = 1;
			break;
		case OPT_NO_PROGRESS:
			a->progress = 0;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
		if (r < 0)
			return r;
	}
	if (optind < argc) {
		log_err("unexpected argument '%s' (see --help)", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

static void show_progress(void *ctx, const struct learn_progress *pr)
{
	int *mode = ctx, width = 24, fill = (int)((double)pr->iter / pr->iters * width);
	double eta = pr->iter ? pr->wall_s / pr->iter * (pr->iters - pr->iter) : 0;
	char eval[48] = "-";

	if (isfinite(pr->best_eval_ratio))
		snprintf(eval, sizeof(eval), "%.3fx (best %.3fx)",
			 isnan(pr->eval_ratio) ? pr->best_eval_ratio : pr->eval_ratio,
			 pr->best_eval_ratio);
	if (*mode == 1) {
		fprintf(stderr,
			"\r[%.*s%*s] %u/%u %-7s jobs %2u | avg wJCT %8.1f s (avg %8.1f) | "
			"eval/best heur %s | ETA %.0f min   ",
			fill, "########################", width - fill, "", pr->iter, pr->iters,
			pr->imitation ? "imitate" : "rl", pr->jobs, pr->avg_wjct_s,
			pr->avg_wjct_ema_s, eval, eta / 60);
		if (pr->iter == pr->iters)
			fputc('\n', stderr);
	} else if (!isnan(pr->eval_ratio)) {
		/* no tty: one line per evaluation */
		log_info("iteration %u/%u (%s, %u jobs): avg wJCT %.1f s (running %.1f s), "
			 "validation %.4f of the best heuristic (best %.4f), %.0f s%s",
			 pr->iter, pr->iters, pr->imitation ? "imitation" : "rl", pr->jobs,
			 pr->avg_wjct_s, pr->avg_wjct_ema_s, pr->eval_ratio, pr->best_eval_ratio,
			 pr->wall_s, pr->skipped ? " (updates skipped: non-finite gradient)" : "");
	}
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536], tmp[PATH_MAX + 8];
	FILE *in = fopen(from, "rb"), *out;
	size_t n;
	int r = 0;

	if (!in)
		return -errno;
	snprintf(tmp, sizeof(tmp), "%s.tmp", to);
	out = fopen(tmp, "wb");
	if (!out) {
		r = -errno;
		fclose(in);
		return r;
	}
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			r = -EIO;
	if (ferror(in))
		r = -EIO;
	fclose(in);
	if (fclose(out) != 0)
		r = -EIO;
	if (r == 0 && rename(tmp, to) != 0)
		r = -errno;
	if (r < 0)
		remove(tmp);
	return r;
}

/* gnuplot learning.gp in dir, when gnuplot is on PATH; quiet otherwise. */
static void plot(const char *dir)
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (chdir(dir) < 0)
			_exit(126);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		execlp("gnuplot", "gnuplot", "learning.gp", (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}

/*
 * final.lgw, the plot and --save (rank 0's work). 0, or -errno after
 * logging why.
 */
static int write_outputs(const struct train_args *a, const struct gnn_model *model)
{
	struct gnn_err gerr = {{0}};
	char path[PATH_MAX], best[PATH_MAX];
	int r;

	snprintf(path, sizeof(path), "%s/final.lgw", a->o.out_dir);
	r = gnn_save(model, path, &gerr);
	if (r < 0) {
		log_err("%s", gerr.msg);
		return r;
	}
	plot(a->o.out_dir);
	snprintf(best, sizeof(best), "%s/best.lgw", a->o.out_dir);
	if (access(best, R_OK) != 0)
		snprintf(best, sizeof(best), "%s", path);
	if (a->save) {
		r = copy_file(best, a->save);
		if (r < 0) {
			log_err("--save %s: %s", a->save, strerror(-r));
			return r;
		}
		log_info("saved %s as %s", best, a->save);
	}
	log_info("done: %s (best validation), %s (last), learning curve %s/learning.csv", best,
		 path, a->o.out_dir);
	return 0;
}

/*
 * The fabric, the DAG shapes and the FB2010 trace (every rank reads its
 * own), and --out (rank 0 makes it). 0, or -errno with err saying why.
 */
static int load_inputs(const struct train_args *a, uint32_t rank, struct topo **ret_t,
		       struct sim_dags **ret_dags, struct cp_model **ret_fb, struct loom_err *err)
{
	char dags_buf[PATH_MAX], fb_buf[PATH_MAX];
	int r;

	*ret_t = topo_new_bigswitch(a->hosts, TOPO_DEFAULT_BPS);
	if (!*ret_t)
		return loom_err_set(err, ENOMEM, "cannot make the fabric");
	*ret_dags = sim_dags_load(
		a->dags ? a->dags : loom_data_path(DAGS_REL, dags_buf, sizeof(dags_buf)), err);
	if (!*ret_dags)
		return -(errno ? errno : EINVAL);
	*ret_fb = sim_trace_load(a->fb ? a->fb : loom_data_path(FB_REL, fb_buf, sizeof(fb_buf)),
				 SIM_TRACE_FB, NULL, err);
	if (!*ret_fb)
		return -(errno ? errno : EINVAL);
	if (rank == 0) {
		r = sim_cli_mkdirs(a->o.out_dir);
		if (r < 0)
			return loom_err_set(err, -r, "--out %s: %s", a->o.out_dir, strerror(-r));
	}
	return 0;
}

/*
 * Reinforcement gives rollout k to worker k mod W and an iteration waits for
 * the busiest worker: say so when --rollouts leaves workers idle or uneven
 * (rank 0 only; the run goes on).
 */
static void warn_uneven_rollouts(const struct learn_opts *o, uint32_t rank, uint32_t workers)
{
	if (rank != 0 || o->iters <= o->imitate_iters || workers < 2 || o->rollouts % workers == 0)
		return;
	if (o->rollouts < workers)
		log_warn("--rollouts %u with %u workers: %u of the workers get no rollout in "
			 "reinforcement; make --rollouts a multiple of %u",
			 o->rollouts, workers, workers - o->rollouts, workers);
	else
		log_warn("--rollouts %u with %u workers: %u of the workers run one rollout more "
			 "than the others, and every reinforcement iteration waits for those; make "
			 "--rollouts a multiple of %u",
			 o->rollouts, workers, o->rollouts % workers, workers);
}

int main(int argc, char **argv)
{
	struct train_args a = {.hosts = 150, .progress = -1};
	struct loom_err err = {{0}};
	struct gnn_model *model = NULL;
	struct sim_dags *dags = NULL;
	struct cp_model *fb = NULL;
	struct topo *t = NULL;
	uint32_t rank = 0, ranks = 1;
	int mode, rc = 1, r;
	bool stopped;

	loom_log_set_ident("loom-train");
	learn_opts_default(&a.o);
	a.o.out_dir = "out/train";
	if (parse_args(argc, argv, &a) < 0)
		return 2;
	if (a.o.jobs_max < a.o.jobs_min) {
		log_err("--jobs-max %u is below --jobs-min %u", a.o.jobs_max, a.o.jobs_min);
		return 2;
	}
	if (a.o.init_weights && a.shape_given) {
		log_err("--init takes the model's shape, prior and inputs from the weights file; "
			"drop --hidden, --layers, --emb, --heads, --mlp, --prior, --prior-scale, "
			"--place-features");
		return 2;
	}
	if (a.o.imitate_iters > a.o.iters) {
		log_err("--imitate-iters %u exceeds --iters %u", a.o.imitate_iters, a.o.iters);
		return 2;
	}
	if (policy_spec_parse(a.o.teacher, NULL, (double[POLICY_MAX_OPTS]){0}, &err) < 0) {
		log_err("--teacher: %s", loom_err_str(&err));
		return 2;
	}
	if (a.o.mpi) {
		r = learn_mpi_init(&argc, &argv, &err);
		if (r < 0) {
			log_err("--mpi: %s", loom_err_str(&err));
			return 1;
		}
		rank = learn_mpi_rank();
		ranks = learn_mpi_size();
	}
	r = load_inputs(&a, rank, &t, &dags, &fb, &err);
	/* a rank that cannot start must not leave the others waiting in learn_run */
	if (a.o.mpi)
		r = learn_mpi_agree(r, &err);
	if (r < 0) {
		if (rank == 0)
			log_err("%s", loom_err_str(&err));
		goto out;
	}
	a.o.dags = dags;
	a.o.fb = fb;
	a.o.topo = t;
	mode = a.progress < 0 ? (isatty(STDERR_FILENO) ? 1 : 2) : (a.progress ? 1 : 2);
	a.o.progress = show_progress;
	a.o.progress_ctx = &mode;
	if (rank == 0 && ranks > 1)
		log_info("training %u iterations (%u imitating %s%s) with %u workers (%u MPI ranks "
			 "x %u threads), seed %llu, into %s",
			 a.o.iters, a.o.imitate_iters, a.o.teacher,
			 a.o.dagger ? " on the model's states" : "", ranks * a.o.threads, ranks,
			 a.o.threads, (unsigned long long)a.o.seed, a.o.out_dir);
	else if (rank == 0)
		log_info("training %u iterations (%u imitating %s%s) with %u threads, seed %llu, "
			 "into %s",
			 a.o.iters, a.o.imitate_iters, a.o.teacher,
			 a.o.dagger ? " on the model's states" : "", a.o.threads,
			 (unsigned long long)a.o.seed, a.o.out_dir);
	warn_uneven_rollouts(&a.o, rank, ranks * a.o.threads);
	r = learn_run(&a.o, &model, &err);
	stopped = r == -ETIME;
	if (r < 0 && r != -ETIME) {
		if (rank == 0 && mode == 1)
			fputc('\n', stderr);
		if (rank == 0)
			log_err("%s", loom_err_str(&err));
		goto out;
	}
	/* every rank holds the same model; rank 0 writes, the others wait for it */
	if (rank == 0) {
		if (stopped) {
			if (mode == 1)
				fputc('\n', stderr);
			log_info("%s", loom_err_str(&err));
		}
		r = write_outputs(&a, model);
	} else {
		r = 0;
	}
	if (a.o.mpi)
		r = learn_mpi_agree(r, &err);
	if (r < 0)
		goto out;
	rc = stopped ? 3 : 0;
out:
	gnn_model_free(model);
	cp_model_free(fb);
	sim_dags_free(dags);
	topo_free(t);
	learn_mpi_finalize();
	return rc;
}
