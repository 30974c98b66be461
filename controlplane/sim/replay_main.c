/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom-replay: replays a trace through the simulator under one or more
 * policies and reports CCT/JCT: a comparison table on stdout, CSV files and
 * gnuplot plots in the output folder.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "controlplane/sim/cli.h"
#include "controlplane/sim/sim.h"

#define MAX_RUNS 64
#define MAX_JOBS 64

/*
 * --bound unset: the LP bound is computed when GLPK is built in and the
 * workload has at most this many coflows, and gives up adding cuts after
 * BOUND_AUTO_TIME_S (the bound of the last round is still valid).
 * --bound lp has neither limit.
 */
#define BOUND_AUTO_MAX_COFLOWS 10000
#define BOUND_AUTO_TIME_S      120.0
#define STR_(x)                #x
#define STR(x)                 STR_(x)

enum replay_bound {
	BOUND_AUTO = 0,
	BOUND_LP,
	BOUND_NONE,
};

struct replay_args {
	const char *trace;
	const char *format;
	const char *topo;
	const char *policies;
	const char *out;
	const char *mode;
	uint32_t classes;
	enum sim_quantize quantize;
	uint64_t rate_bps;
	uint64_t epoch_ns;
	uint64_t reeval_ns;
	uint64_t stats_ns;
	uint64_t start_latency_ns;
	uint64_t seed;
	const char *weights; /* gnn / ensemble model; NULL: the shipped one */
	bool plots;
	bool check;
	int progress;            /* -1 auto, 0 off, 1 on */
	enum replay_bound bound; /* the LP bound */
	enum replay_bound order; /* the best fixed order (AUTO: small workloads) */
	uint32_t jobs;           /* runs at once, each in its own process; 1: in this one */
	bool compat;             /* --compat coflowsim */
	/* flags --compat coflowsim cannot honour, for its error message */
	const char *engine_flag;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: loom-replay --trace FILE [options]\n"
		"Replays a coflow/job trace through Loom's simulator under each policy and\n"
		"prints a comparison table (normalised to the first policy); writes CSV and plots.\n"
		"\n"
		"  -t, --trace FILE       trace to replay (required)\n"
		"  -f, --format FMT       fb | sincronia | loom (default: detected from the file)\n"
		"  -T, --topo FILE        topology JSON (default: big switch, one host per trace port)\n"
		"  -r, --rate-bps BPS     port rate of the default topology (default %llu = 1 Gbit/s\n"
		"                         as CoflowSim counts it)\n"
		"  -p, --policy LIST      comma-separated policy specs, NAME[:KEY=VALUE]...; 'all'\n"
		"                         adds every policy not listed yet but the research\n"
		"                         oracle hindsight, which is named (default: all; the\n"
		"                         table is normalised to the first, e.g. fair,all)\n"
		"  -m, --mode MODE        ideal | classes | both (default: ideal; --classes implies\n"
		"                         classes unless --mode is given)\n"
		"  -k, --classes K        priority classes in classes mode (default 8, 1..4096)\n"
		"  -q, --quantize Q       how an order maps to K classes in classes mode: conflict\n"
		"                         (default: what loomd and the datapath enforce by default;\n"
		"                         a coflow's class is one above every earlier coflow sharing\n"
		"                         a port with it, on every host) | per-host (loomd's\n"
		"                         class_assign=per-host: each source host's i-th coflow gets\n"
		"                         class min(i, K-1) there) | top (the first K-1 coflows get\n"
		"                         their own class, the rest share the last) | even (K equal\n"
		"                         slices of the order)\n"
		"  -e, --epoch-ms E       admit arrivals only every E ms, at the next multiple\n"
		"                         (default 0 = at once)\n"
		"  -R, --reeval-ms R      also re-run the policy every R ms (default 0 = on events only)\n"
		"      --stats-ms S       the policy sees the bytes sent as of the last multiple of\n"
		"                         S ms, as loomd sees them from its agents' reports\n"
		"                         (loom-agent --stats-interval); default 0 = exact\n"
		"      --start-latency-ms L  every coflow starts L ms after its release would\n"
		"                         allow (a fixed per-coflow cost of a live run: announcing\n"
		"                         its flows, the classes reaching the hosts, connecting;\n"
		"                         0..1000000, default 0); JCTs include it, CCTs count\n"
		"                         from the delayed start\n"
		"  -s, --seed S           seed for randomised policies (default 1)\n"
		"  -w, --weights FILE     model of the learned policies gnn and ensemble (default:\n"
		"                         the shipped data/models/gnn-default.lgw)\n"
		"  -o, --out DIR          output folder (default out/<trace name>)\n"
		"      --no-plots         write CSV only\n"
		"      --check            verify port capacities and byte conservation at every step\n"
		"  -b, --bound B          none, or a list of lp (the LP lower bound) and order (the\n"
		"                         best fixed priority order, every order simulated; at most\n"
		"                         %d coflows): rows under the policies (default: lp when\n"
		"                         built with GLPK and the trace has at most %d coflows, cuts\n"
		"                         stop after %.0f s; order when it has at most %d;\n"
		"                         docs/bounds.md)\n"
		"  -j, --jobs N           runs (policy x mode) at once, each in its own process\n"
		"                         (default 1; 0 = one per online CPU); results are the\n"
		"                         same as one at a time, a line is logged as each ends\n"
		"      --progress         always show progress; --no-progress never (default: on a tty;\n"
		"                         with --jobs above 1, only the line per finished run)\n"
		"  -c, --compat SIM       coflowsim: reproduce CoflowSim's numbers (its clock, port\n"
		"                         rate, admission epochs, flow sizes and each policy's rules;\n"
		"                         coflow-benchmark traces; policies fair fifo scf ncf lcf\n"
		"                         sebf dclas; docs/simulator.md)\n"
		"  -v, --verbose          more logging\n"
		"  -h, --help             this text\n"
		"\nPolicies:\n",
		(unsigned long long)TOPO_DEFAULT_BPS, SIM_ORDER_MAX_COFLOWS, BOUND_AUTO_MAX_COFLOWS,
		BOUND_AUTO_TIME_S, SIM_ORDER_MAX_COFLOWS);
	policy_describe(f);
	fprintf(f, "\nOutputs in DIR: <label>-coflows.csv, <label>-jobs.csv, summary.csv,\n"
		   "plots.gp and cct_cdf, jct_cdf, bars as .png and .svg (needs gnuplot).\n");
}

static int parse_ms_flag(const char *flag, const char *v, uint64_t *ret_ns)
{
	double ms;

	if (loom_parse_double(v, &ms) < 0 || ms < 0 || ms > 1e12) {
		log_err("%s: '%s' is not a duration in milliseconds (>= 0)", flag, v);
		return -EINVAL;
	}
	*ret_ns = (uint64_t)(ms * 1e6 + 0.5);
	return 0;
}

/* --bound: "none", or a comma list of lp and order; what it leaves out is off. */
static int parse_bound(const char *v, struct replay_args *a)
{
	char buf[64], *save = NULL;
	bool any = false;

	a->bound = BOUND_NONE;
	a->order = BOUND_NONE;
	if (strcmp(v, "none") == 0)
		return 0;
	if (strlen(v) >= sizeof(buf))
		goto bad;
	snprintf(buf, sizeof(buf), "%s", v);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "lp") == 0)
			a->bound = BOUND_LP;
		else if (strcmp(tok, "order") == 0)
			a->order = BOUND_LP;
		else
			goto bad;
		any = true;
	}
	if (any)
		return 0;
bad:
	log_err("--bound: '%s' is not none or a list of lp, order", v);
	return -EINVAL;
}

static int parse_args(int argc, char **argv, struct replay_args *a)
{
	enum {
		OPT_NO_PLOTS = 256,
		OPT_CHECK,
		OPT_PROGRESS,
		OPT_NO_PROGRESS,
		OPT_START_LATENCY,
		OPT_STATS
	};
	static const struct option opts[] = {
		{"trace", required_argument, NULL, 't'},
		{"format", required_argument, NULL, 'f'},
		{"topo", required_argument, NULL, 'T'},
		{"rate-bps", required_argument, NULL, 'r'},
		{"policy", required_argument, NULL, 'p'},
		{"mode", required_argument, NULL, 'm'},
		{"classes", required_argument, NULL, 'k'},
		{"quantize", required_argument, NULL, 'q'},
		{"epoch-ms", required_argument, NULL, 'e'},
		{"reeval-ms", required_argument, NULL, 'R'},
		{"stats-ms", required_argument, NULL, OPT_STATS},
		{"seed", required_argument, NULL, 's'},
		{"weights", required_argument, NULL, 'w'},
		{"out", required_argument, NULL, 'o'},
		{"no-plots", no_argument, NULL, OPT_NO_PLOTS},
		{"start-latency-ms", required_argument, NULL, OPT_START_LATENCY},
		{"check", no_argument, NULL, OPT_CHECK},
		{"bound", required_argument, NULL, 'b'},
		{"jobs", required_argument, NULL, 'j'},
		{"progress", no_argument, NULL, OPT_PROGRESS},
		{"no-progress", no_argument, NULL, OPT_NO_PROGRESS},
		{"compat", required_argument, NULL, 'c'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool classes_given = false;
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "t:f:T:r:p:m:k:q:e:R:s:w:o:b:j:c:vh", opts, NULL)) !=
	       -1) {
		switch (c) {
		case 't':
			a->trace = optarg;
			break;
		case 'f':
			a->format = optarg;
			break;
		case 'T':
			a->topo = optarg;
			a->engine_flag = "--topo";
			break;
		case 'r':
			a->engine_flag = "--rate-bps";
			if (sim_cli_u64("--rate-bps", optarg, 1, UINT64_MAX / 16, &a->rate_bps))
				return -EINVAL;
			break;
		case 'p':
			a->policies = optarg;
			break;
		case 'm':
			if (strcmp(optarg, "ideal") && strcmp(optarg, "classes") &&
			    strcmp(optarg, "both")) {
				log_err("--mode: '%s' is not one of ideal, classes, both", optarg);
				return -EINVAL;
			}
			a->mode = optarg;
			if (strcmp(optarg, "ideal") != 0)
				a->engine_flag = "--mode";
			break;
		case 'k':
			if (sim_cli_u64("--classes", optarg, 1, 4096, &v))
				return -EINVAL;
			a->classes = (uint32_t)v;
			classes_given = true;
			a->engine_flag = "--classes";
			break;
		case 'q':
			a->engine_flag = "--quantize";
			if (sim_quantize_parse(optarg, &a->quantize) < 0) {
				log_err("--quantize: '%s' is not one of conflict, per-host, top, even",
					optarg);
				return -EINVAL;
			}
			break;
		case 'e':
			if (parse_ms_flag("--epoch-ms", optarg, &a->epoch_ns))
				return -EINVAL;
			a->engine_flag = "--epoch-ms";
			break;
		case 'R':
			if (parse_ms_flag("--reeval-ms", optarg, &a->reeval_ns))
				return -EINVAL;
			a->engine_flag = "--reeval-ms";
			break;
		case OPT_STATS:
			if (parse_ms_flag("--stats-ms", optarg, &a->stats_ns))
				return -EINVAL;
			a->engine_flag = "--stats-ms";
			break;
		case 's':
			if (sim_cli_u64("--seed", optarg, 0, UINT64_MAX, &a->seed))
				return -EINVAL;
			break;
		case 'w':
			a->weights = optarg;
			break;
		case 'o':
			a->out = optarg;
			break;
		case 'b':
			if (parse_bound(optarg, a) < 0)
				return -EINVAL;
			break;
		case 'j':
			if (sim_cli_u64("--jobs", optarg, 0, MAX_JOBS, &v))
				return -EINVAL;
			a->jobs = (uint32_t)v;
			if (a->jobs == 0) {
				long n = sysconf(_SC_NPROCESSORS_ONLN);

				a->jobs = n < 1 ? 1 : n > MAX_JOBS ? MAX_JOBS : (uint32_t)n;
			}
			break;
		case OPT_NO_PLOTS:
			a->plots = false;
			break;
		case OPT_START_LATENCY:
			if (parse_ms_flag("--start-latency-ms", optarg, &a->start_latency_ns))
				return -EINVAL;
			if (a->start_latency_ns > 1000000 * (uint64_t)1000000) {
				log_err("--start-latency-ms: '%s' is above 1000000 ms", optarg);
				return -EINVAL;
			}
			a->engine_flag = "--start-latency-ms";
			break;
		case OPT_CHECK:
			a->check = true;
			break;
		case OPT_PROGRESS:
			a->progress = 1;
			break;
		case OPT_NO_PROGRESS:
			a->progress = 0;
			break;
		case 'c':
			if (strcmp(optarg, "coflowsim") != 0) {
				log_err("--compat: '%s' is not coflowsim", optarg);
				return -EINVAL;
			}
			a->compat = true;
			break;
		case 'v':
			loom_log_set_level(LOOM_LOG_DEBUG);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr, "Try 'loom-replay --help'.\n");
			return -EINVAL;
		}
	}
	if (optind < argc) {
		log_err("unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (!a->trace) {
		log_err("--trace is required (try --help)");
		return -EINVAL;
	}
	if (a->compat && a->engine_flag) {
		log_err("--compat coflowsim: %s does not apply (CoflowSim's own fabric, clock and "
			"admission epochs are used)",
			a->engine_flag);
		return -EINVAL;
	}
	if (a->compat && a->check) {
		log_err("--compat coflowsim: --check does not apply (it checks Loom's engine)");
		return -EINVAL;
	}
	if (!a->mode)
		a->mode = classes_given ? "classes" : "ideal";
	return 0;
}

/* Guesses the format: "loom-trace" header, else FB's "port:MB" tokens, else Sincronia. */
static enum sim_trace_format detect_format(const char *path)
{
	FILE *f = fopen(path, "r");
	enum sim_trace_format fmt = SIM_TRACE_FB;
	char *line = NULL;
	size_t cap = 0;
	int n = 0;

	if (!f)
		return SIM_TRACE_FB; /* the loader reports the error */
	while (n < 2 && getline(&line, &cap, f) >= 0) {
		char *s = line + strspn(line, " \t\r\n");

		s[strcspn(s, "#")] = '\0'; /* '#' starts a comment anywhere */
		if (s[strspn(s, " \t\r\n")] == '\0')
			continue;
		if (n == 0 && strncmp(s, "loom-trace", 10) == 0) {
			fmt = SIM_TRACE_LOOM;
			break;
		}
		if (n == 1)
			fmt = strchr(s, ':') ? SIM_TRACE_FB : SIM_TRACE_SINCRONIA;
		n++;
	}
	free(line);
	fclose(f);
	return fmt;
}

struct progress_ctx {
	const char *label;
	const struct loom_clock *clock;
	uint64_t last_ns;
	bool shown;
};

static void show_progress(void *ctx, const struct sim_progress *pr)
{
	struct progress_ctx *pc = ctx;
	uint64_t wall = loom_clock_now_ns(pc->clock);
	double frac = pr->njobs ? (double)pr->jobs_done / pr->njobs : 1;
	char bar[31];
	int filled = (int)(frac * 30);

	if (pr->jobs_done < pr->njobs && wall - pc->last_ns < 100 * LOOM_NS_PER_MS)
		return;
	pc->last_ns = wall;
	for (int i = 0; i < 30; i++)
		bar[i] = i < filled ? '#' : '-';
	bar[30] = '\0';
	fprintf(stderr, "\r%-14s [%s] %5.1f%%  jobs %u/%u  sim t=%.1fs  events %llu", pc->label,
		bar, frac * 100, pr->jobs_done, pr->njobs, (double)pr->now_ns * 1e-9,
		(unsigned long long)pr->events);
	pc->shown = true;
}

static int run_one(struct cp_model *m, const char *name, const struct replay_args *a,
		   enum sim_mode mode, const char *dir, struct sim_summary *ret);

/* One run of the table: a policy in a mode. */
struct run_spec {
	const char *name;
	enum sim_mode mode;
};

/* A run in a child process: its pid and the pipe its summary comes back on. */
struct worker {
	pid_t pid;
	int fd;
	size_t run;
};

/* Reads exactly n bytes; 0, or -errno (-EPIPE when the writer stopped short). */
static int read_full(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n > 0) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EPIPE;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Starts run i in a child that writes its summary to a pipe; 0 or -errno. */
static int worker_start(struct cp_model *m, const struct run_spec *rs, size_t i,
			const struct replay_args *a, const char *dir, struct worker *w)
{
	int fds[2];
	pid_t pid;

	if (pipe(fds) < 0)
		return -errno;
	fflush(NULL); /* nothing buffered is written twice */
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(fds[0]);
		close(fds[1]);
		return -e;
	}
	if (pid == 0) {
		struct sim_summary s;
		const char *p = (const char *)&s;
		size_t left = sizeof(s);
		int rc;

		close(fds[0]);
		memset(&s, 0, sizeof(s));
		rc = run_one(m, rs[i].name, a, rs[i].mode, dir, &s);
		fflush(NULL);
		if (rc < 0)
			_exit(1);
		while (left > 0) {
			ssize_t r = write(fds[1], p, left);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				_exit(1);
			p += r;
			left -= (size_t)r;
		}
		_exit(0);
	}
	close(fds[1]);
	w->pid = pid;
	w->fd = fds[0];
	w->run = i;
	return 0;
}

/*
 * Waits for one of the n workers to end and collects its summary into
 * runs[]; removes it from w[]. 0, or -1 when the run failed (it logged why,
 * or its end is logged here).
 */
static int worker_reap(struct worker *w, size_t *n, const struct run_spec *rs,
		       struct sim_summary *runs, size_t *ndone, size_t nruns)
{
	int status, r = 0;
	size_t k;
	pid_t pid;

	do
		pid = waitpid(-1, &status, 0);
	while (pid < 0 && errno == EINTR);
	if (pid < 0) {
		log_err("waiting for a run: %s", strerror(errno));
		return -1;
	}
	for (k = 0; k < *n && w[k].pid != pid; k++)
		;
	if (k == *n)
		return 0; /* not one of ours (gnuplot is run later, not now) */
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		if (WIFSIGNALED(status))
			log_err("%s (%s): the run's process was killed by signal %d",
				rs[w[k].run].name,
				rs[w[k].run].mode == SIM_MODE_CLASSES ? "classes" : "ideal",
				WTERMSIG(status));
		r = -1;
	} else if (read_full(w[k].fd, &runs[w[k].run], sizeof(runs[0])) < 0) {
		log_err("%s: no result came back from the run's process", rs[w[k].run].name);
		r = -1;
	} else {
		(*ndone)++;
		log_info("%s: done in %.1f s (%zu of %zu runs)", runs[w[k].run].label,
			 runs[w[k].run].wall_s, *ndone, nruns);
	}
	close(w[k].fd);
	w[k] = w[--*n];
	return r;
}

/*
 * Runs every run of rs, a->jobs at a time in child processes (each on its
 * own copy of m), or one after the other here when a->jobs <= 1. runs[i] is
 * run i's summary either way. 0, or -1 after every started run has ended.
 */
static int run_all(struct cp_model *m, const struct run_spec *rs, size_t nruns,
		   const struct replay_args *a, const char *dir, struct sim_summary *runs)
{
	struct worker w[MAX_JOBS];
	size_t nw = 0, next = 0, ndone = 0;
	int failed = 0;

	if (a->jobs <= 1 || nruns <= 1) {
		for (size_t i = 0; i < nruns; i++)
			if (run_one(m, rs[i].name, a, rs[i].mode, dir, &runs[i]) < 0)
				return -1;
		return 0;
	}
	while (next < nruns || nw > 0) {
		while (!failed && next < nruns && nw < a->jobs) {
			int r = worker_start(m, rs, next, a, dir, &w[nw]);

			if (r < 0) {
				log_err("cannot start a process for %s: %s", rs[next].name,
					strerror(-r));
				failed = 1;
				break;
			}
			nw++;
			next++;
		}
		if (nw == 0)
			break;
		if (worker_reap(w, &nw, rs, runs, &ndone, nruns) < 0 && !failed) {
			failed = 1;
			/* the others' results are no use now: stop them */
			for (size_t k = 0; k < nw; k++)
				kill(w[k].pid, SIGTERM);
		}
	}
	return failed ? -1 : 0;
}

/* Writes label's per-coflow and per-job CSV files into dir; 0 or -errno (logged). */
static int write_run_csv(const struct cp_model *m, const char *label, const char *dir)
{
	char file[POLICY_SPEC_MAX + 16], path[PATH_MAX];
	int r;

	sim_label_file(label, file, sizeof(file));
	snprintf(path, sizeof(path), "%s/%s-coflows.csv", dir, file);
	r = sim_write_coflows_csv(m, path);
	if (r >= 0) {
		snprintf(path, sizeof(path), "%s/%s-jobs.csv", dir, file);
		r = sim_write_jobs_csv(m, path);
	}
	if (r < 0)
		log_err("cannot write %s: %s", path, strerror(-r));
	return r;
}

/* One run of --compat coflowsim: policy name as CoflowSim runs its counterpart. */
static int run_coflowsim(struct cp_model *m, const char *name, const char *label, const char *dir,
			 struct sim_summary *ret)
{
	const struct loom_clock *clock = loom_clock_real();
	struct loom_err err = {{0}};
	struct sim_stats st;
	enum sim_cfs_algo algo;
	uint64_t t0 = loom_clock_now_ns(clock);
	int r;

	if (sim_cfs_algo_for_policy(name, &algo) < 0) {
		log_err("--compat coflowsim: policy '%s' has no CoflowSim counterpart", name);
		return -EINVAL;
	}
	r = sim_coflowsim_run(m, algo, NULL, &st, &err);
	if (r < 0) {
		log_err("%s: %s", label, loom_err_str(&err));
		return r;
	}
	r = sim_summarise(m, &st, label, ret);
	if (r < 0) {
		log_err("%s: cannot summarise: %s", label, strerror(-r));
		return r;
	}
	ret->wall_s = (double)(loom_clock_now_ns(clock) - t0) * 1e-9;
	return write_run_csv(m, label, dir);
}

static int run_one(struct cp_model *m, const char *name, const struct replay_args *a,
		   enum sim_mode mode, const char *dir, struct sim_summary *ret)
{
	struct policy_params pp = {.classes = a->classes, .seed = a->seed, .weights = a->weights};
	struct progress_ctx pc = {.clock = loom_clock_real()};
	struct loom_err err = {{0}};
	struct sim_stats st;
	struct sim_opts o;
	struct policy *p;
	char label[POLICY_SPEC_MAX + 16], file[POLICY_SPEC_MAX + 16], path[PATH_MAX];
	uint64_t t0;
	int r;

	sim_opts_default(&o);
	o.mode = mode;
	o.classes = a->classes;
	o.quantize = a->quantize;
	o.epoch_ns = a->epoch_ns;
	o.reeval_ns = a->reeval_ns;
	o.stats_ns = a->stats_ns;
	o.check = a->check;
	if (mode == SIM_MODE_CLASSES)
		snprintf(label, sizeof(label), "%s/K%u", name, a->classes);
	else
		snprintf(label, sizeof(label), "%s", name);
	if (a->jobs <= 1 && (a->progress == 1 || (a->progress < 0 && isatty(STDERR_FILENO)))) {
		pc.label = label;
		o.progress = show_progress;
		o.progress_ctx = &pc;
		o.progress_every = 64;
	}
	if (a->compat)
		return run_coflowsim(m, name, label, dir, ret);
	p = policy_new(name, &pp, m, &err);
	if (!p) {
		log_err("%s", loom_err_str(&err));
		return -EINVAL;
	}
	t0 = loom_clock_now_ns(pc.clock);
	r = sim_run(m, p, &o, &st, &err);
	if (pc.shown)
		fputc('\n', stderr);
	if (r < 0) {
		policy_free(p);
		log_err("%s: %s", label, loom_err_str(&err));
		return r;
	}
	sim_label_file(label, file, sizeof(file));
	if (p->cls == &policy_ensemble) {
		/* Which candidate ran when: its switch log as CSV, and one line of shares. */
		const char *cand[8];
		uint64_t cand_ns[8], total_ns = 0;
		uint32_t nc = policy_ensemble_candidates(p, cand, 8), nsw;
		const struct policy_ensemble_switch *sw = policy_ensemble_switches(p, &nsw);
		char line[256];
		size_t off = 0;
		FILE *f;

		nc = nc < 8 ? nc : 8;
		snprintf(path, sizeof(path), "%s/%s-switches.csv", dir, file);
		f = fopen(path, "w");
		if (f) {
			fprintf(f, "time_s,from,to,explore,est_from,est_to\n");
			for (uint32_t i = 0; i < nsw; i++) {
				double t_s = (double)sw[i].time_ns * 1e-9;

				fprintf(f, "%.9f,%s,%s,%d,%.6g,%.6g\n", t_s,
					sw[i].from < nc ? cand[sw[i].from] : "none",
					sw[i].to < nc ? cand[sw[i].to] : "none", sw[i].explore,
					sw[i].est_from, sw[i].est_to);
			}
			r = ferror(f) ? -EIO : 0;
			if (fclose(f) != 0 && r == 0)
				r = loom_negerrno();
		} else {
			r = loom_negerrno();
		}
		if (r < 0) {
			policy_free(p);
			log_err("cannot write %s: %s", path, strerror(-r));
			return r;
		}
		policy_ensemble_time_ns(p, cand_ns, nc);
		for (uint32_t k = 0; k < nc; k++)
			total_ns += cand_ns[k];
		line[0] = '\0';
		for (uint32_t k = 0; k < nc && off < sizeof(line); k++) {
			double pct = total_ns ? 100.0 * (double)cand_ns[k] / (double)total_ns : 0;

			off += (size_t)snprintf(line + off, sizeof(line) - off, "%s%s %.1f%%",
						k ? ", " : "", cand[k], pct);
		}
		/* the first entry of the log is the initial pick, not a switch */
		log_info("%s: %u switches; in charge: %s", label, nsw ? nsw - 1 : 0, line);
	}
	policy_free(p);
	r = sim_summarise(m, &st, label, ret);
	if (r < 0) {
		log_err("%s: cannot summarise: %s", label, strerror(-r));
		return r;
	}
	ret->wall_s = (double)(loom_clock_now_ns(pc.clock) - t0) * 1e-9;
	if (a->check)
		log_info("%s: checked %llu steps: max port load %.9f of capacity, max residual "
			 "%.3g ns of transfer at flow completion",
			 label, (unsigned long long)st.checked_steps, st.max_port_load,
			 st.max_residual_ns);
	return write_run_csv(m, label, dir);
}

/*
 * Computes the workload's LP bound as a->bound asks into *ret (NANs when
 * skipped). Returns 0 (also when skipped), or -errno (logged) when --bound lp
 * was asked for and cannot be given.
 */
static int compute_bound(const struct cp_model *m, const struct replay_args *a,
			 struct sim_bound_result *ret)
{
	struct sim_bound_opts o;
	struct loom_err err = {{0}};
	const char *status;
	char cct[48];
	int r;

	ret->avg_wjct_s = NAN;
	ret->avg_cct_s = NAN;
	if (a->bound == BOUND_NONE)
		return 0;
	if (a->bound == BOUND_AUTO &&
	    (!sim_bound_lp_available() || m->ncoflows > BOUND_AUTO_MAX_COFLOWS)) {
		log_info("LP bound skipped (%s; --bound lp forces it)",
			 sim_bound_lp_available() ? "over " STR(BOUND_AUTO_MAX_COFLOWS) " coflows" :
						    "built without GLPK");
		return 0;
	}
	sim_bound_opts_default(&o);
	if (a->bound == BOUND_AUTO)
		o.time_limit_s = BOUND_AUTO_TIME_S;
	r = sim_bound_lp(m, &o, ret, &err);
	if (r < 0) {
		log_err("--bound lp: %s", loom_err_str(&err));
		ret->avg_wjct_s = NAN;
		ret->avg_cct_s = NAN;
		return a->bound == BOUND_LP ? r : 0;
	}
	if (ret->converged)
		status = "converged";
	else if (ret->timed_out)
		status = "stopped by the time limit";
	else
		status = "stopped by the round cap";
	if (isnan(ret->avg_cct_s))
		cct[0] = '\0';
	else
		snprintf(cct, sizeof(cct), ", avg CCT >= %.6g s", ret->avg_cct_s);
	log_info("LP bound: avg wJCT >= %.6g s%s; %u rounds, %u cuts, %u rows, %s, %.2f s",
		 ret->avg_wjct_s, cct, ret->rounds, ret->cuts, ret->rows, status, ret->solve_s);
	return 0;
}

/* Writes the coflows' external ids of order[0 .. n) into buf, "a > b > c". */
static const char *order_str(const struct cp_model *m, const uint32_t *order, uint32_t n, char *buf,
			     size_t size)
{
	size_t off = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < n && off < size; i++)
		off += (size_t)snprintf(buf + off, size - off, "%s%llu", i ? " > " : "",
					(unsigned long long)m->coflows[order[i]].ext_id);
	return buf;
}

/*
 * The best fixed order as a->order asks into *ret (NANs when skipped).
 * Returns 0 (also when skipped), or -errno (logged) when --bound order was
 * asked for and cannot be given.
 */
static int compute_order(struct cp_model *m, const struct replay_args *a,
			 struct sim_order_result *ret)
{
	struct loom_err err = {{0}};
	char wj[512], cc[512];
	int r;

	if (a->order == BOUND_NONE || a->compat)
		return 0;
	if (a->order == BOUND_AUTO && m->ncoflows > SIM_ORDER_MAX_COFLOWS)
		return 0;
	r = sim_bound_order(m, NULL, ret, &err);
	if (r < 0) {
		log_err("--bound order: %s", loom_err_str(&err));
		ret->avg_wjct_s = NAN;
		ret->avg_cct_s = NAN;
		return a->order == BOUND_LP ? r : 0;
	}
	log_info("best order: avg wJCT %.6g s (%s), avg CCT %.6g s (%s); %llu orders, %.2f s",
		 ret->avg_wjct_s, order_str(m, ret->best_wjct_order, ret->n, wj, sizeof(wj)),
		 ret->avg_cct_s, order_str(m, ret->best_cct_order, ret->n, cc, sizeof(cc)),
		 (unsigned long long)ret->orders, ret->solve_s);
	sim_order_result_done(ret);
	return 0;
}

/*
 * Appends every registered policy not already in names[0 .. n) (by name,
 * default options; with compat only those CoflowSim has), in registry order,
 * as "--policy all" asks; returns the new count (at most MAX_RUNS / 2). Offline
 * policies (research oracles that search the whole trace first) are only run
 * when named.
 */
static size_t add_all_policies(const char **names, size_t n, bool compat)
{
	size_t ncls;
	const struct policy_class *const *cls = policy_class_list(&ncls);

	for (size_t i = 0; i < ncls && n < MAX_RUNS / 2; i++) {
		enum sim_cfs_algo algo;
		bool listed = cls[i]->offline ||
			      (compat && sim_cfs_algo_for_policy(cls[i]->name, &algo) < 0);

		for (size_t k = 0; k < n && !listed; k++)
			listed = strcmp(names[k], cls[i]->name) == 0;
		if (!listed)
			names[n++] = cls[i]->name;
	}
	return n;
}

int main(int argc, char **argv)
{
	struct replay_args a = {
		.classes = 8,
		.quantize = SIM_QUANT_CONFLICT,
		.rate_bps = TOPO_DEFAULT_BPS,
		.seed = 1,
		.plots = true,
		.progress = -1,
		.jobs = 1,
	};
	struct sim_summary runs[MAX_RUNS];
	struct run_spec specs[MAX_RUNS];
	struct sim_bound_result bound;
	struct sim_order_result order = {.avg_wjct_s = NAN, .avg_cct_s = NAN};
	struct loom_err err = {{0}};
	enum sim_trace_format fmt;
	struct cp_model *m = NULL;
	struct topo *t = NULL;
	/* outdir leaves room in path for "/<label>-coflows.csv" and the like */
	char outdir[PATH_MAX - 128], path[PATH_MAX], *list = NULL, *save = NULL;
	const char *base;
	uint32_t nhosts = 0;
	size_t nruns = 0, npol = 0;
	const char *names[MAX_RUNS];
	int r, ret = 1;

	loom_log_set_ident("loom-replay");
	if (parse_args(argc, argv, &a) < 0)
		return 2;

	if (a.format) {
		if (sim_trace_format_parse(a.format, &fmt) < 0) {
			log_err("--format: '%s' is not one of fb, sincronia, loom, fb-coflowsim",
				a.format);
			return 2;
		}
	} else {
		fmt = detect_format(a.trace);
	}
	if (a.compat) {
		/* CoflowSim reads coflow-benchmark traces and sizes flows its own way */
		if (fmt == SIM_TRACE_FB)
			fmt = SIM_TRACE_FB_COFLOWSIM;
		if (fmt != SIM_TRACE_FB_COFLOWSIM) {
			log_err("--compat coflowsim: %s is a %s trace; CoflowSim reads "
				"coflow-benchmark (fb) traces",
				a.trace, sim_trace_format_name(fmt));
			return 2;
		}
		a.rate_bps = SIM_CFS_RATE_BPS;
	}
	if (a.policies) {
		list = strdup(a.policies);
		if (!list) {
			log_err("out of memory");
			return 1;
		}
		for (char *tok = strtok_r(list, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			struct loom_err e2;
			double opt[POLICY_MAX_OPTS];

			if (strcmp(tok, "all") == 0) {
				npol = add_all_policies(names, npol, a.compat);
				continue;
			}
			if (policy_spec_parse(tok, NULL, opt, &e2) < 0) {
				log_err("--policy: %s", loom_err_str(&e2));
				free(list);
				return 2;
			}
			if (npol == MAX_RUNS / 2) {
				log_err("--policy: at most %d policies", MAX_RUNS / 2);
				free(list);
				return 2;
			}
			names[npol++] = tok;
		}
	} else {
		npol = add_all_policies(names, npol, a.compat);
	}
	for (size_t i = 0; a.compat && i < npol; i++) {
		enum sim_cfs_algo algo;

		if (sim_cfs_algo_for_policy(names[i], &algo) < 0) {
			log_err("--compat coflowsim: policy '%s' has no CoflowSim counterpart "
				"(fair fifo scf ncf lcf sebf dclas, without options)",
				names[i]);
			ret = 2;
			goto out;
		}
	}
	if (npol == 0) {
		log_err("--policy: no policy given");
		ret = 2;
		goto out;
	}

	m = sim_trace_load(a.trace, fmt, &nhosts, &err);
	if (!m) {
		log_err("%s", loom_err_str(&err));
		goto out;
	}
	if (a.compat) {
		if (sim_coflowsim_prepare(m, NULL, &err) < 0) {
			log_err("%s: %s", a.trace, loom_err_str(&err));
			goto out;
		}
		log_info("CoflowSim-exact mode: its flow sizes, 10.24-s admission epochs, "
			 "8-ms quanta, ports at 2^30 bit per 1.024 s");
	}
	/* a fixed start latency: every release offset and every edge's delay, plus it */
	for (uint32_t i = 0; a.start_latency_ns && i < m->ncoflows; i++)
		m->coflows[i].release_offset_ns += a.start_latency_ns;
	for (uint32_t i = 0; a.start_latency_ns && i < m->nedges; i++)
		m->edges[i].delay_ns += a.start_latency_ns;
	if (a.topo) {
		t = topo_load_json(a.topo, &err);
		if (!t) {
			log_err("%s", loom_err_str(&err));
			goto out;
		}
	} else {
		t = topo_new_bigswitch(nhosts, a.rate_bps);
		if (!t) {
			log_err("cannot build a %u-host fabric: %s", nhosts, strerror(errno));
			goto out;
		}
	}
	if (cp_model_bind(m, t) < 0) {
		log_err("%s: the trace uses hosts beyond the topology's %u hosts", a.trace,
			t->nhosts);
		goto out;
	}
	base = strrchr(a.trace, '/');
	base = base ? base + 1 : a.trace;
	if (a.out)
		r = snprintf(outdir, sizeof(outdir), "%s", a.out);
	else
		r = snprintf(outdir, sizeof(outdir), "out/%.*s", (int)strcspn(base, "."), base);
	if (r < 0 || (size_t)r >= sizeof(outdir)) {
		log_err("--out: folder name longer than %zu characters", sizeof(outdir) - 1);
		goto out;
	}
	r = sim_cli_mkdirs(outdir);
	if (r < 0) {
		log_err("cannot create output folder %s: %s", outdir, strerror(-r));
		goto out;
	}
	log_info("%s (%s): %u jobs, %u coflows, %u flows on %u hosts (%u ports); output in %s",
		 a.trace, sim_trace_format_name(fmt), m->njobs, m->ncoflows, m->nflows, t->nhosts,
		 t->nports, outdir);

	if (compute_bound(m, &a, &bound) < 0 || compute_order(m, &a, &order) < 0)
		goto out;
	for (size_t i = 0; i < npol; i++) {
		if (strcmp(a.mode, "classes") != 0)
			specs[nruns++] = (struct run_spec){names[i], SIM_MODE_IDEAL};
		if (strcmp(a.mode, "ideal") != 0)
			specs[nruns++] = (struct run_spec){names[i], SIM_MODE_CLASSES};
	}
	if (a.jobs > 1 && nruns > 1)
		log_info("%zu runs, %u at a time", nruns,
			 a.jobs < nruns ? a.jobs : (uint32_t)nruns);
	if (run_all(m, specs, nruns, &a, outdir, runs) < 0)
		goto out;
	for (size_t i = 0; i < nruns; i++) {
		runs[i].lp_bound_wjct_s = bound.avg_wjct_s;
		runs[i].lp_bound_cct_s = bound.avg_cct_s;
		runs[i].order_wjct_s = order.avg_wjct_s;
		runs[i].order_cct_s = order.avg_cct_s;
	}
	sim_print_table(stdout, runs, nruns);
	snprintf(path, sizeof(path), "%s/summary.csv", outdir);
	r = sim_write_summary_csv(runs, nruns, path);
	if (r < 0) {
		log_err("cannot write %s: %s", path, strerror(-r));
		goto out;
	}
	if (a.plots) {
		r = sim_write_plots(outdir, runs, nruns);
		if (r < 0)
			log_warn("plots: %s", strerror(-r));
		else if (r == 1)
			log_warn("gnuplot not found: wrote %s/plots.gp but no images", outdir);
		else
			log_info("plots: %s/{cct_cdf,jct_cdf,bars}.{png,svg}", outdir);
	}
	log_info("CSV: %s/summary.csv and per-policy coflow/job files", outdir);
	{
		struct rusage ru;

		if (getrusage(RUSAGE_SELF, &ru) == 0)
			log_info("peak RSS %.1f MiB", (double)ru.ru_maxrss / 1024.0);
	}
	ret = 0;
out:
	free(list);
	sim_order_result_done(&order);
	cp_model_free(m);
	topo_free(t);
	return ret;
}
