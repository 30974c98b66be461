/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom-gen: generates a multi-stage coflow workload (TPC-H job DAGs, or a
 * random layered family, whose shuffles take their width and bytes from
 * FB2010 coflows, Poisson arrivals at a target load) and writes it as a Loom
 * trace (docs/trace-format.md).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/datapath.h"
#include "common/log.h"
#include "controlplane/sim/cli.h"
#include "controlplane/sim/sim.h"

#define DEFAULT_HOSTS 150u
#define DAGS_REL      "tpch/dags.txt"
#define FB_REL        "fb2010/FB2010-1Hr-150-0.txt"

struct gen_args {
	const char *out;
	const char *topo;
	const char *dags;
	const char *fb;
	uint32_t hosts;
	bool hosts_given;
	uint64_t rate_bps;
	bool rate_given;
	struct sim_gen_params p;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: loom-gen --out FILE [options]\n"
		"Generates a multi-stage coflow workload and writes it as a Loom trace: each job\n"
		"takes a DAG shape (TPC-H, or a random family: --dags random:...) uniformly at\n"
		"random, each DAG edge is a shuffle coflow whose width and per-reducer bytes come\n"
		"from a coflow sampled from FB2010, placed on random hosts; jobs arrive as a\n"
		"Poisson process at the target load.\n"
		"\n"
		"  -o, --out FILE          Loom trace to write (required; '-' = stdout)\n"
		"  -n, --jobs N            number of jobs (default 100)\n"
		"  -l, --load L            offered load on the host uplinks, > 0 (default 0.7): mean\n"
		"                          job bytes * 8 / (mean inter-arrival * total uplink bps)\n"
		"  -s, --seed S            random seed; same seed, same trace (default 1)\n"
		"  -H, --hosts H           hosts of the default big-switch topology (default %u)\n"
		"  -r, --rate-bps B        port rate of the default topology (default %llu = 1 Gbit/s\n"
		"                          as CoflowSim counts it)\n"
		"  -T, --topo FILE         topology JSON instead of the big switch (docs/topology.md)\n"
		"  -d, --dags PATH|SPEC    DAG shapes: a dags.txt file (default: $LOOM_DATA/" DAGS_REL
		",\n"
		"                          else data/" DAGS_REL
		" under the current directory, else\n"
		"                          under $LOOM_SRCDIR), or a random layered family:\n"
		"                            random[:min=N][:max=N][:layers=A..B|B][:fanin=N]\n"
		"                                  [:count=N][:seed=S][:task-ms=A..B|X]\n"
		"                          min, max: coflows (DAG edges) per job (default 2, 30);\n"
		"                          layers: stages on the longest path (default 2..6; B\n"
		"                          alone = 2..B); fanin: most parents of a stage (3);\n"
		"                          count: shapes in the family (200); seed: the family's\n"
		"                          own seed, not --seed (1); task-ms: stage mean task\n"
		"                          time, log-uniform (20..5000). See docs/simulator.md\n"
		"  -f, --fb PATH           FB2010 trace to sample coflows from (default: as --dags,\n"
		"                          with " FB_REL ")\n"
		"  -c, --compute-scale X   stage compute time = mean task time * X; 0 = no compute\n"
		"                          (default 1)\n"
		"  -b, --bytes-scale X     multiplies every sampled shuffle size, > 0 (default 1)\n"
		"  -w, --weight-max W      job weights are uniform integers in [1, W] (default 1 =\n"
		"                          unweighted)\n"
		"  -h, --help              this text\n"
		"\n"
		"Prints one summary line: jobs, coflows, flows, bytes and the arrival span.\n",
		DEFAULT_HOSTS, (unsigned long long)TOPO_DEFAULT_BPS);
}

static int parse_args(int argc, char **argv, struct gen_args *a)
{
	static const struct option opts[] = {
		{"out", required_argument, NULL, 'o'},
		{"jobs", required_argument, NULL, 'n'},
		{"load", required_argument, NULL, 'l'},
		{"seed", required_argument, NULL, 's'},
		{"hosts", required_argument, NULL, 'H'},
		{"rate-bps", required_argument, NULL, 'r'},
		{"topo", required_argument, NULL, 'T'},
		{"dags", required_argument, NULL, 'd'},
		{"fb", required_argument, NULL, 'f'},
		{"compute-scale", required_argument, NULL, 'c'},
		{"bytes-scale", required_argument, NULL, 'b'},
		{"weight-max", required_argument, NULL, 'w'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "o:n:l:s:H:r:T:d:f:c:b:w:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			a->out = optarg;
			break;
		case 'n':
			if (sim_cli_u64("--jobs", optarg, 1, 100000000, &v))
				return -EINVAL;
			a->p.njobs = (uint32_t)v;
			break;
		case 'l':
			if (sim_cli_double("--load", optarg, 0, true, 1e6, &a->p.load))
				return -EINVAL;
			break;
		case 's':
			if (sim_cli_u64("--seed", optarg, 0, UINT64_MAX, &a->p.seed))
				return -EINVAL;
			break;
		case 'H':
			if (sim_cli_u64("--hosts", optarg, 1, TOPO_MAX_HOSTS, &v))
				return -EINVAL;
			a->hosts = (uint32_t)v;
			a->hosts_given = true;
			break;
		case 'r':
			if (sim_cli_u64("--rate-bps", optarg, 1, UINT64_MAX / 16, &a->rate_bps))
				return -EINVAL;
			a->rate_given = true;
			break;
		case 'T':
			a->topo = optarg;
			break;
		case 'd':
			a->dags = optarg;
			if (sim_dags_spec_is_random(optarg)) {
				struct sim_dags_random rp;
				struct loom_err err = {{0}};

				if (sim_dags_random_parse(optarg, &rp, &err) < 0) {
					log_err("--dags: %s", loom_err_str(&err));
					return -EINVAL;
				}
			}
			break;
		case 'f':
			a->fb = optarg;
			break;
		case 'c':
			if (sim_cli_double("--compute-scale", optarg, 0, false, 1e9,
					   &a->p.compute_scale))
				return -EINVAL;
			break;
		case 'b':
			if (sim_cli_double("--bytes-scale", optarg, 0, true, 1e12,
					   &a->p.bytes_scale))
				return -EINVAL;
			break;
		case 'w':
			if (sim_cli_double("--weight-max", optarg, 1, false, 1e15,
					   &a->p.weight_max))
				return -EINVAL;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr, "Try 'loom-gen --help'.\n");
			return -EINVAL;
		}
	}
	if (optind < argc) {
		log_err("unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (!a->out) {
		log_err("--out is required (try --help)");
		return -EINVAL;
	}
	if (a->topo && (a->hosts_given || a->rate_given)) {
		log_err("--topo cannot be combined with --hosts or --rate-bps");
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct gen_args a = {.hosts = DEFAULT_HOSTS, .rate_bps = TOPO_DEFAULT_BPS};
	struct loom_err err = {{0}};
	struct sim_dags *dags = NULL;
	struct cp_model *fb = NULL, *m = NULL;
	struct topo *t = NULL;
	char dags_buf[PATH_MAX], fb_buf[PATH_MAX];
	const char *dags_path, *fb_path;
	uint64_t bytes = 0, span_ns = 0;
	uint32_t fb_hosts;
	FILE *f = NULL;
	int r, ret = 1;

	loom_log_set_ident("loom-gen");
	sim_gen_params_default(&a.p);
	if (parse_args(argc, argv, &a) < 0)
		return 2;
	dags_path = a.dags ? a.dags : loom_data_path(DAGS_REL, dags_buf, sizeof(dags_buf));
	fb_path = a.fb ? a.fb : loom_data_path(FB_REL, fb_buf, sizeof(fb_buf));

	if (a.topo) {
		t = topo_load_json(a.topo, &err);
		if (!t) {
			log_err("%s", loom_err_str(&err));
			goto out;
		}
	} else {
		t = topo_new_bigswitch(a.hosts, a.rate_bps);
		if (!t) {
			log_err("cannot make a %u-host topology: %s", a.hosts, strerror(errno));
			goto out;
		}
	}
	dags = sim_dags_load(dags_path, &err);
	if (!dags) {
		log_err("%s", loom_err_str(&err));
		goto out;
	}
	fb = sim_trace_load(fb_path, SIM_TRACE_FB, &fb_hosts, &err);
	if (!fb) {
		log_err("%s", loom_err_str(&err));
		goto out;
	}
	m = sim_gen(&a.p, dags, fb, t, &err);
	if (!m) {
		log_err("%s", loom_err_str(&err));
		goto out;
	}

	f = strcmp(a.out, "-") == 0 ? stdout : fopen(a.out, "w");
	if (!f) {
		log_err("cannot write %s: %s", a.out, strerror(errno));
		goto out;
	}
	r = sim_trace_write_loom(m, f);
	if (f == stdout && fflush(stdout) != 0 && r == 0)
		r = loom_negerrno();
	if (f != stdout && fclose(f) != 0 && r == 0)
		r = loom_negerrno();
	if (r < 0) {
		log_err("cannot write %s: %s", a.out, strerror(-r));
		if (f != stdout)
			unlink(a.out); /* no partial trace left behind */
		f = NULL;
		goto out;
	}
	f = NULL;
	for (uint32_t j = 0; j < m->njobs; j++) {
		bytes += m->jobs[j].total_bytes;
		if (m->jobs[j].arrival_ns > span_ns)
			span_ns = m->jobs[j].arrival_ns;
	}
	fprintf(a.out && strcmp(a.out, "-") == 0 ? stderr : stdout,
		"loom-gen: wrote %s: %u jobs, %u coflows, %u flows, %llu bytes (%.2f GiB), "
		"arrivals over %.3f s, load %g on %u hosts\n",
		a.out, m->njobs, m->ncoflows, m->nflows, (unsigned long long)bytes,
		(double)bytes / (1024.0 * 1024.0 * 1024.0), (double)span_ns * 1e-9, a.p.load,
		t->nhosts);
	ret = 0;
out:
	cp_model_free(m);
	cp_model_free(fb);
	sim_dags_free(dags);
	topo_free(t);
	return ret;
}
