/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loom-run: plays a Loom trace on a virtual cluster (docs/cluster.md,
 * "Running a workload"): jobs registered with loomd through libloom at their
 * arrival, coflows released as their DAG allows, each flow's bytes moved as
 * real TCP between the hosts' network namespaces, and loom-replay's per-coflow
 * and per-job CSV files written from what happened.
 *
 * The driver keeps the workload in the model (controlplane/model) and drives
 * it with the model's own transitions at real times (nanoseconds since the
 * run started): cp_model_job_arrive() at a job's arrival, a timer for each
 * COFLOW_READY the model emits, cp_model_coflow_release() when it fires,
 * cp_model_flow_done() when a host reports a flow delivered. The CSV files
 * are then sim_write_coflows_csv() and sim_write_jobs_csv() of that model.
 *
 * Faults (docs/cluster.md, "Faults"): a request that finds loomd unreachable
 * is retried, the driver waiting, for up to --retry seconds, and a refusal
 * that says the lost attempt was applied counts as done (lc_call()); --hook
 * commands (loom-cluster's fault injection) start at a fraction of the jobs
 * arrived.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <event2/event.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "controlplane/client/loom.h"
#include "controlplane/run/run.h"
#include "controlplane/sim/cli.h"
#include "controlplane/sim/sim.h"

#define PROG            "loom-run"
#define DEFAULT_PORT    9000u
#define DEFAULT_TIMEOUT 600u
#define READY_MS        10000 /* how long the hosts get to enter their namespaces and listen */
#define REAP_MS         5000  /* how long the hosts get to exit once told to */
#define NETNS_DIR       "/run/netns/"
#define CTL_SNDBUF      (16 << 20) /* bytes: a driver-host socket's send buffer */
#define DEFAULT_RETRY   30u        /* s: how long a request waits for an unreachable loomd */
#define RETRY_MIN_MS    50         /* the first wait between two attempts; doubles */
#define RETRY_MAX_MS    200        /* the longest wait between two attempts */
#define MAX_HOOKS       4
#define DEFAULT_CC      "cubic"
#define CC_AVAILABLE    "/proc/sys/net/ipv4/tcp_available_congestion_control"

/* A command run once a fraction of the jobs has arrived (--hook): fault injection. */
struct hook {
	double at; /* fraction of the jobs, 0 < at < 1 */
	const char *cmd;
};

struct run_args {
	const char *trace, *topo, *controller, *netns, *out, *label;
	const char *congestion; /* TCP congestion control of every flow; NULL: the namespace's */
	enum sim_trace_format fmt;
	uint32_t first_addr; /* host order */
	double bytes_scale, time_scale;
	uint16_t port;
	uint64_t timeout_s, retry_s;
	bool verbose;
	struct hook hooks[MAX_HOOKS];
	size_t nhooks;
};

struct host_proc {
	struct driver *d;
	uint32_t id;
	pid_t pid;
	int fd;
	struct event *ev;
	uint32_t next_port; /* offset into the source port range */
};

/* A coflow's timer: passed to its event_base_once() callback. */
struct tick {
	struct driver *d;
	uint32_t coflow;
	uint64_t due_ns; /* the model's release time of coflow */
};

struct driver {
	const struct run_args *a;
	struct cp_model *m;
	struct loom_client *lc;
	struct event_base *base;
	struct host_proc *hosts;
	uint32_t nhosts;
	struct event *arrive_ev, *deadline_ev, *sigint_ev, *sigterm_ev;
	struct tick *ticks;                /* ncoflows */
	bool *registered;                  /* njobs: registered and not yet unregistered */
	struct loom_client_announce *anns; /* the largest coflow's flows */
	struct loom_client_coflow *cfs;    /* the largest job's coflows */
	struct loom_client_edge *edges;    /* the largest job's edges */
	struct cp_event *evs;              /* the model's events not yet acted on */
	size_t nevs, cap_evs;
	uint64_t t0_ns, last_ns;
	uint32_t next_job;
	uint64_t flows_started, flows_done, bytes_done;
	uint64_t retried_calls, retry_ns; /* requests that met an unreachable loomd, time waited */
	pid_t hook_pid[MAX_HOOKS];        /* started and not yet reaped */
	bool hook_fired[MAX_HOOKS];
	int status; /* 0 while fine; the exit status once something failed */
	bool emit_oom;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " --trace FILE --topo FILE --controller ADDR --netns PREFIX\n"
		"                --first-addr A.B.C.D [options]\n"
		"Plays a trace on a virtual cluster (docs/cluster.md): registers each job's DAG\n"
		"with loomd at its arrival, starts each coflow when its parents are done plus the\n"
		"stage's compute delay, moves each flow's bytes as TCP from its source host's\n"
		"network namespace to its destination's (5-tuple announced to loomd first), and\n"
		"writes loom-replay's per-coflow and per-job CSV files. Run as root.\n"
		"'scripts/loom-cluster run TRACE [options]' fills in the five required flags.\n"
		"\n"
		"  -t, --trace FILE        the workload (required)\n"
		"  -f, --format FMT        loom | fb | sincronia (default loom: what loom-gen writes)\n"
		"  -T, --topo FILE         the cluster's topology JSON (required; docs/topology.md)\n"
		"  -c, --controller ADDR   loomd's address for libloom (required; unix:/PATH, ...)\n"
		"  -n, --netns PREFIX      host i runs in network namespace PREFIX<i> (required)\n"
		"  -a, --first-addr ADDR   host i's IPv4 address is ADDR + i (required)\n"
		"  -o, --out DIR           output folder (default out/<trace name>-live)\n"
		"  -l, --label L           name of the CSV files: L-coflows.csv, L-jobs.csv\n"
		"                          (default live)\n"
		"  -b, --bytes-scale X     multiplies every flow's bytes, > 0 (default 1)\n"
		"  -s, --time-scale X      multiplies every arrival, release offset and compute\n"
		"                          delay, > 0 (default 1)\n"
		"  -p, --port P            TCP port each host receives on, 1..%u (default %u)\n"
		"  -w, --timeout S         bound on the whole run, 1..86400 s (default %u)\n"
		"  -r, --retry S           how long a request is retried while loomd is\n"
		"                          unreachable (restarting), 0..3600 s (default %u)\n"
		"  -C, --congestion NAME   TCP congestion control of both ends of every flow (any of\n"
		"                          net.ipv4.tcp_available_congestion_control; default\n"
		"                          " DEFAULT_CC
		", Linux's default: BBR's bandwidth estimate\n"
		"                          collapses while a low class is starved, docs/cluster.md);\n"
		"                          'default': the hosts' namespace default\n"
		"  -H, --hook F:CMD        run CMD (sh -c, in the background) once a fraction F of\n"
		"                          the jobs has arrived (is registered), 0 < F < 1; up\n"
		"                          to %d (fault injection: loom-cluster run --chaos);\n"
		"                          loom-run waits for it before it exits and fails\n"
		"                          when it fails\n"
		"  -v, --verbose           a line per coflow and job as it finishes\n"
		"  -h, --help              this text\n"
		"\n"
		"Writes to DIR: trace.loom (the scaled trace), topology.json, L-coflows.csv,\n"
		"L-jobs.csv and summary.csv (loom-replay's columns). loom-replay --trace\n"
		"DIR/trace.loom --topo DIR/topology.json predicts the same workload.\n"
		"Exit status: 0 every job done, 1 failed or timed out, 2 bad usage, 130\n"
		"interrupted.\n",
		LRUN_PORT_FIRST - 1, DEFAULT_PORT, DEFAULT_TIMEOUT, DEFAULT_RETRY, MAX_HOOKS);
}

static bool netns_prefix_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 200)
		return false;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '-' || *s == '_' || *s == '.'))
			return false;
	return true;
}

/* A name TCP_CONGESTION can take: 1 to 15 of a-z 0-9 _ (TCP_CA_NAME_MAX - 1). */
static bool cc_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 15)
		return false;
	for (; *s; s++)
		if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '_'))
			return false;
	return true;
}

/*
 * Whether this kernel lets the flows use congestion control name (root may
 * set any available one, loading its module): 0, or -1 with the reason
 * logged. The hosts' namespaces share the kernel's algorithms.
 */
static int cc_check(const char *name)
{
	char avail[256] = "";
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), r = 0;
	FILE *f;

	if (fd < 0) {
		log_err("--congestion: cannot open a TCP socket to try '%s': %s", name,
			strerror(errno));
		return -1;
	}
	if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, (socklen_t)strlen(name)) < 0) {
		f = fopen(CC_AVAILABLE, "r");
		if (f) {
			if (!fgets(avail, sizeof(avail), f))
				avail[0] = 0;
			avail[strcspn(avail, "\n")] = 0;
			fclose(f);
		}
		log_err("--congestion: '%s' cannot be used here: %s (available: %s)", name,
			errno == ENOENT ? "this kernel has no such algorithm" : strerror(errno),
			avail[0] ? avail : "unknown");
		r = -1;
	}
	close(fd);
	return r;
}

/* --hook F:CMD into the next of a->hooks; 0 or -EINVAL (logged). */
static int hook_parse(char *v, struct run_args *a)
{
	char *colon = strchr(v, ':');
	struct hook *h;

	if (a->nhooks == MAX_HOOKS) {
		log_err("--hook: at most %d", MAX_HOOKS);
		return -EINVAL;
	}
	if (!colon || !colon[1]) {
		log_err("--hook: '%s' is not FRACTION:COMMAND (0.4:'touch /tmp/x')", v);
		return -EINVAL;
	}
	h = &a->hooks[a->nhooks];
	*colon = 0;
	if (sim_cli_double("--hook", v, 0, true, 1, &h->at) < 0 || h->at >= 1) {
		if (h->at >= 1)
			log_err("--hook: fraction '%s' is not below 1", v);
		*colon = ':';
		return -EINVAL;
	}
	*colon = ':';
	h->cmd = colon + 1;
	a->nhooks++;
	return 0;
}

static int parse_args(int argc, char **argv, struct run_args *a)
{
	static const struct option opts[] = {
		{"trace", required_argument, NULL, 't'},
		{"format", required_argument, NULL, 'f'},
		{"topo", required_argument, NULL, 'T'},
		{"controller", required_argument, NULL, 'c'},
		{"netns", required_argument, NULL, 'n'},
		{"first-addr", required_argument, NULL, 'a'},
		{"out", required_argument, NULL, 'o'},
		{"label", required_argument, NULL, 'l'},
		{"bytes-scale", required_argument, NULL, 'b'},
		{"time-scale", required_argument, NULL, 's'},
		{"port", required_argument, NULL, 'p'},
		{"timeout", required_argument, NULL, 'w'},
		{"retry", required_argument, NULL, 'r'},
		{"hook", required_argument, NULL, 'H'},
		{"congestion", required_argument, NULL, 'C'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct in_addr ia;
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "t:f:T:c:n:a:o:l:b:s:p:w:r:H:C:vh", opts, NULL)) !=
	       -1) {
		switch (c) {
		case 't':
			a->trace = optarg;
			break;
		case 'f':
			if (sim_trace_format_parse(optarg, &a->fmt) < 0) {
				log_err("--format: '%s' is not loom, fb or sincronia", optarg);
				return -EINVAL;
			}
			break;
		case 'T':
			a->topo = optarg;
			break;
		case 'c':
			a->controller = optarg;
			break;
		case 'n':
			if (!netns_prefix_ok(optarg)) {
				log_err("--netns: '%s' is not a namespace name prefix (1 to 200 of "
					"A-Z a-z 0-9 - _ .)",
					optarg);
				return -EINVAL;
			}
			a->netns = optarg;
			break;
		case 'a':
			if (inet_pton(AF_INET, optarg, &ia) != 1) {
				log_err("--first-addr: '%s' is not an IPv4 address", optarg);
				return -EINVAL;
			}
			a->first_addr = ntohl(ia.s_addr);
			break;
		case 'o':
			a->out = optarg;
			break;
		case 'l':
			if (!netns_prefix_ok(optarg) || strlen(optarg) > 64) {
				log_err("--label: '%s' is not 1 to 64 of A-Z a-z 0-9 - _ .",
					optarg);
				return -EINVAL;
			}
			a->label = optarg;
			break;
		case 'b':
			if (sim_cli_double("--bytes-scale", optarg, 0, true, 1e12, &a->bytes_scale))
				return -EINVAL;
			break;
		case 's':
			if (sim_cli_double("--time-scale", optarg, 0, true, 1e6, &a->time_scale))
				return -EINVAL;
			break;
		case 'p':
			if (sim_cli_u64("--port", optarg, 1, LRUN_PORT_FIRST - 1, &v))
				return -EINVAL;
			a->port = (uint16_t)v;
			break;
		case 'w':
			if (sim_cli_u64("--timeout", optarg, 1, 86400, &a->timeout_s))
				return -EINVAL;
			break;
		case 'r':
			if (sim_cli_u64("--retry", optarg, 0, 3600, &a->retry_s))
				return -EINVAL;
			break;
		case 'H':
			if (hook_parse(optarg, a) < 0)
				return -EINVAL;
			break;
		case 'C':
			if (!cc_name_ok(optarg)) {
				log_err("--congestion: '%s' is not a congestion control name (1 to "
					"15 of a-z 0-9 _) or 'default'",
					optarg);
				return -EINVAL;
			}
			a->congestion = strcmp(optarg, "default") ? optarg : NULL;
			break;
		case 'v':
			a->verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr, "Try '" PROG " --help'.\n");
			return -EINVAL;
		}
	}
	if (optind < argc) {
		log_err("unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (!a->trace || !a->topo || !a->controller || !a->netns || !a->first_addr) {
		log_err("--trace, --topo, --controller, --netns and --first-addr are required "
			"(missing:%s%s%s%s%s; try --help)",
			a->trace ? "" : " --trace", a->topo ? "" : " --topo",
			a->controller ? "" : " --controller", a->netns ? "" : " --netns",
			a->first_addr ? "" : " --first-addr");
		return -EINVAL;
	}
	return 0;
}

/* ---- the hosts -------------------------------------------------------------------------------- */

static uint32_t host_addr(const struct driver *d, uint32_t host)
{
	return htonl(d->a->first_addr + host);
}

/*
 * Forks host i's process: it enters PREFIX<i> and listens. The driver keeps
 * one end of a SOCK_SEQPACKET pair; 0 or -errno.
 */
static int host_spawn(struct driver *d, uint32_t i)
{
	char ns[PATH_MAX];
	int sv[2];
	pid_t pid;

	snprintf(ns, sizeof(ns), NETNS_DIR "%s%u", d->a->netns, i);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	/*
	 * Both sides send blocking: room for some 16k messages each way, so that
	 * the driver starting a wide coflow and a host reporting many flows done
	 * do not both wait for the other to read
	 */
	for (int k = 0; k < 2; k++) {
		int sz = CTL_SNDBUF;

		if (setsockopt(sv[k], SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)) < 0)
			setsockopt(sv[k], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return -errno;
	}
	if (pid == 0) {
		struct lrun_host_cfg cfg = {
			.host = i,
			.netns = ns,
			.addr = host_addr(d, i),
			.port = d->a->port,
			.congestion = d->a->congestion,
		};

		/* the driver's death ends the hosts; signals are the driver's to handle */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		close(sv[0]);
		for (uint32_t k = 0; k < i; k++)
			close(d->hosts[k].fd);
		_exit(lrun_host_main(&cfg, sv[1]));
	}
	close(sv[1]);
	d->hosts[i].pid = pid;
	d->hosts[i].fd = sv[0];
	return 0;
}

/* Waits (bounded) for every host's READY; 0, or -1 with the reason logged. */
static int hosts_ready(struct driver *d)
{
	uint64_t deadline = loom_clock_mono_ns() + READY_MS * LOOM_NS_PER_MS;

	for (uint32_t i = 0; i < d->nhosts; i++) {
		struct pollfd p = {.fd = d->hosts[i].fd, .events = POLLIN};
		struct lrun_msg m;
		uint64_t now = loom_clock_mono_ns();
		int r = now < deadline ? poll(&p, 1, (int)((deadline - now) / LOOM_NS_PER_MS)) : 0;
		ssize_t n;

		if (r <= 0) {
			log_err("host %u (namespace %s%u) did not start within %d ms", i,
				d->a->netns, i, READY_MS);
			return -1;
		}
		n = recv(d->hosts[i].fd, &m, sizeof(m), 0);
		if (n != (ssize_t)sizeof(m) || m.type != LRUN_MSG_READY) {
			log_err("host %u (namespace %s%u) exited while starting", i, d->a->netns,
				i);
			return -1;
		}
		if (m.status < 0) {
			log_err("host %u: cannot enter namespace " NETNS_DIR "%s%u and listen on "
				"port %u: %s%s",
				i, d->a->netns, i, d->a->port, strerror(-m.status),
				m.status == -EPERM ? " (run as root)" : "");
			return -1;
		}
	}
	return 0;
}

/* Closes the hosts' sockets (they exit on it) and reaps them, killing laggards. */
static void hosts_stop(struct driver *d)
{
	uint64_t deadline = loom_clock_mono_ns() + REAP_MS * LOOM_NS_PER_MS;

	for (uint32_t i = 0; i < d->nhosts; i++) {
		if (d->hosts[i].ev)
			event_free(d->hosts[i].ev);
		d->hosts[i].ev = NULL;
		if (d->hosts[i].fd >= 0)
			close(d->hosts[i].fd);
		d->hosts[i].fd = -1;
	}
	for (uint32_t i = 0; i < d->nhosts; i++) {
		int st;

		if (d->hosts[i].pid <= 0)
			continue;
		while (waitpid(d->hosts[i].pid, &st, WNOHANG) == 0) {
			if (loom_clock_mono_ns() > deadline) {
				kill(d->hosts[i].pid, SIGKILL);
				waitpid(d->hosts[i].pid, &st, 0);
				break;
			}
			usleep(10000);
		}
		d->hosts[i].pid = 0;
	}
}

/* ---- the run ---------------------------------------------------------------------------------- */

static uint64_t run_now(const struct driver *d)
{
	return loom_clock_mono_ns() - d->t0_ns;
}

static void fail(struct driver *d, int status)
{
	if (!d->status)
		d->status = status;
	event_base_loopbreak(d->base);
}

static void on_model_event(void *ctx, const struct cp_event *ev)
{
	struct driver *d = ctx;

	if (d->nevs == d->cap_evs) {
		size_t ncap = d->cap_evs ? d->cap_evs * 2 : 256;
		struct cp_event *v = realloc(d->evs, ncap * sizeof(*v));

		if (!v) {
			d->emit_oom = true;
			return;
		}
		d->evs = v;
		d->cap_evs = ncap;
	}
	d->evs[d->nevs++] = *ev;
}

static void coflow_due(evutil_socket_t fd, short what, void *arg);

/* ---- hooks ---------------------------------------------------------------------------------- */

/*
 * Starts (once) each hook whose fraction of the jobs has arrived (been
 * registered; so the jobs it hits are under way), in a process group of its
 * own.
 */
static void hooks_fire(struct driver *d)
{
	for (size_t i = 0; i < d->a->nhooks; i++) {
		const struct hook *h = &d->a->hooks[i];
		pid_t pid;

		if (d->hook_fired[i] || (double)d->next_job < h->at * (double)d->m->njobs)
			continue;
		d->hook_fired[i] = true;
		log_info("hook %zu (%u of %u jobs arrived, %u done): %s", i + 1, d->next_job,
			 d->m->njobs, d->m->jobs_done, h->cmd);
		fflush(NULL);
		pid = fork();
		if (pid < 0) {
			log_err("hook %zu: cannot start '%s': %s", i + 1, h->cmd, strerror(errno));
			fail(d, 1);
			return;
		}
		if (pid == 0) {
			setpgid(0, 0);
			execl("/bin/sh", "sh", "-c", h->cmd, (char *)NULL);
			_exit(127);
		}
		setpgid(pid, pid);
		d->hook_pid[i] = pid;
	}
}

/*
 * Waits for the hooks that were started, until deadline_ns (then kills their
 * process groups); 0, or -1 when one failed or was killed (logged).
 */
static int hooks_wait(struct driver *d, uint64_t deadline_ns)
{
	int rc = 0;

	for (size_t i = 0; i < d->a->nhooks; i++) {
		pid_t pid = d->hook_pid[i], r;
		int st = 0;

		if (pid <= 0)
			continue;
		while ((r = waitpid(pid, &st, WNOHANG)) == 0 && loom_clock_mono_ns() < deadline_ns)
			usleep(20000);
		if (r == 0) {
			kill(-pid, SIGKILL);
			waitpid(pid, &st, 0);
			log_err("hook %zu (%s) was still running at the end: killed", i + 1,
				d->a->hooks[i].cmd);
			rc = -1;
		} else if (r == pid && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
			log_err("hook %zu (%s) failed: %s %d", i + 1, d->a->hooks[i].cmd,
				WIFEXITED(st) ? "exit status" : "signal",
				WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			rc = -1;
		}
		d->hook_pid[i] = 0;
	}
	return rc;
}

/* ---- requests to loomd ------------------------------------------------------------------------ */

enum lc_op {
	LC_REGISTER,
	LC_ANNOUNCE,
	LC_COFLOW_DONE,
	LC_JOB_DONE,
	LC_UNREGISTER
};

static const char *const lc_what[] = {"registering job", "announcing the flows of coflow",
				      "coflow done:", "job done:", "unregistering job"};

static int job_register(struct driver *d, uint32_t j);

/*
 * Whether a failed request met no loomd (killed, restarting, not answering)
 * rather than a refusal: worth another attempt. -ENOENT is loomd's NOT_FOUND
 * or, over a Unix socket, a socket file that is not there (a loomd stopped
 * cleanly removes it).
 */
static bool loomd_unreachable(const struct driver *d, int r)
{
	const char *addr = loom_client_address(d->lc);

	if (r == -ENOENT)
		return strncmp(addr, "unix:", 5) == 0 && access(addr + 5, F_OK) != 0;
	return r == -ECONNREFUSED || r == -ECONNRESET || r == -EPIPE || r == -ECONNABORTED ||
	       r == -ENOTCONN || r == -ESHUTDOWN || r == -ETIMEDOUT;
}

/* One attempt at request op (idx: the job or coflow index; n: flows in d->anns). */
static int lc_once(struct driver *d, enum lc_op op, uint32_t idx, uint64_t id, uint32_t n)
{
	int r;

	switch (op) {
	case LC_REGISTER:
		return job_register(d, idx);
	case LC_ANNOUNCE:
		r = loom_client_flows_announce(d->lc, d->anns, n);
		return r >= 0 && (uint32_t)r < n ? -errno : r;
	case LC_COFLOW_DONE:
		return loom_client_coflow_done(d->lc, id);
	case LC_JOB_DONE:
		return loom_client_job_done(d->lc, id);
	case LC_UNREGISTER:
		return loom_client_job_unregister(d->lc, id);
	}
	return -EINVAL;
}

/*
 * Makes request op about id, retrying while loomd is unreachable (waits of
 * RETRY_MIN_MS doubling to RETRY_MAX_MS) for up to --retry seconds. A
 * request that was retried may have been applied by the loomd that went away
 * (its journal has it, and a restarted loomd replays it): then a refusal
 * saying so means done: registering, a duplicate job (-EEXIST); announcing
 * (all of a coflow's flows in one request), a duplicate 5-tuple (-EEXIST),
 * a coflow that already has its expected flows (-ENOSPC; loom-cluster sets
 * no tenant quotas, the other -ENOSPC) or is already done (-EALREADY);
 * unregistering, an unknown job (-ENOENT). Coflow and job done take
 * -EALREADY as done whether retried or not.
 * 0, or -1 with the run failed (logged).
 */
static int lc_call(struct driver *d, enum lc_op op, uint32_t idx, uint64_t id, uint32_t n)
{
	uint64_t t0 = loom_clock_mono_ns(), now = t0;
	uint64_t deadline = t0 + d->a->retry_s * LOOM_NS_PER_S;
	uint64_t wait_ms = RETRY_MIN_MS;
	bool retried = false;
	int r;

	for (;;) {
		r = lc_once(d, op, idx, id, n);
		now = loom_clock_mono_ns();
		if (r >= 0 || !loomd_unreachable(d, r) || now >= deadline)
			break;
		if (!retried)
			log_warn("%s %" PRIu64 ": %s; retrying for up to %" PRIu64 " s",
				 lc_what[op], id, loom_client_strerror(), d->a->retry_s);
		retried = true;
		if (wait_ms * LOOM_NS_PER_MS > deadline - now)
			wait_ms = (deadline - now) / LOOM_NS_PER_MS + 1;
		usleep((useconds_t)(wait_ms * 1000));
		wait_ms = wait_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : wait_ms * 2;
	}
	if (retried) {
		d->retried_calls++;
		d->retry_ns += now - t0;
		if (r >= 0 || !loomd_unreachable(d, r))
			log_info("%s %" PRIu64 ": loomd answered again after %.3f s", lc_what[op],
				 id, (double)(now - t0) / 1e9);
	}
	if (r >= 0 || ((op == LC_COFLOW_DONE || op == LC_JOB_DONE) && r == -EALREADY))
		return 0;
	if (retried && ((op == LC_REGISTER && r == -EEXIST) ||
			(op == LC_ANNOUNCE && (r == -EEXIST || r == -ENOSPC || r == -EALREADY)) ||
			(op == LC_UNREGISTER && r == -ENOENT))) {
		log_info("%s %" PRIu64 ": already done by the loomd that went away (%s)",
			 lc_what[op], id, loom_client_strerror());
		return 0;
	}
	log_err("%s %" PRIu64 ": %s%s", lc_what[op], id, loom_client_strerror(),
		retried && loomd_unreachable(d, r) ? " (still unreachable after --retry)" : "");
	fail(d, 1);
	return -1;
}

/* Announces coflow c's flows to loomd, then has each source host send its flow. */
static void coflow_start(struct driver *d, uint32_t c)
{
	const struct cp_coflow *co = &d->m->coflows[c];

	for (uint32_t k = 0; k < co->nflows; k++) {
		const struct cp_flow *fl = &d->m->flows[co->first_flow + k];
		struct host_proc *h = &d->hosts[fl->src];
		struct loom_client_announce *an = &d->anns[k];
		uint32_t src = host_addr(d, fl->src), dst = host_addr(d, fl->dst);

		memset(an, 0, sizeof(*an));
		an->coflow_id = co->ext_id;
		an->flow.src_host = fl->src;
		an->flow.dst_host = fl->dst;
		an->flow.bytes = fl->bytes;
		an->flow.tuple.family = 4;
		an->flow.tuple.protocol = IPPROTO_TCP;
		an->flow.tuple.src_port = (uint16_t)(LRUN_PORT_FIRST + h->next_port);
		an->flow.tuple.dst_port = d->a->port;
		memcpy(an->flow.tuple.src, &src, 4);
		memcpy(an->flow.tuple.dst, &dst, 4);
		h->next_port = (h->next_port + 1) % LRUN_PORT_COUNT;
	}
	if (lc_call(d, LC_ANNOUNCE, c, co->ext_id, co->nflows) < 0)
		return;
	for (uint32_t k = 0; k < co->nflows; k++) {
		const struct cp_flow *fl = &d->m->flows[co->first_flow + k];
		struct lrun_msg m = {.type = LRUN_MSG_START,
				     .flow = co->first_flow + k,
				     .src_port = d->anns[k].flow.tuple.src_port,
				     .dst_port = d->a->port,
				     .dst_addr = host_addr(d, fl->dst),
				     .bytes = fl->bytes};

		if (send(d->hosts[fl->src].fd, &m, sizeof(m), MSG_NOSIGNAL) != (ssize_t)sizeof(m)) {
			log_err("host %u: cannot start a flow of coflow %" PRIu64 ": %s", fl->src,
				co->ext_id, strerror(errno));
			fail(d, 1);
			return;
		}
		d->flows_started++;
	}
}

/* A timer for t's coflow at t->due_ns (run time), rounded up to the microsecond. */
static void arm_tick(struct tick *t)
{
	struct driver *d = t->d;
	uint64_t now = run_now(d), wait_ns = t->due_ns > now ? t->due_ns - now : 0;
	struct timeval tv;

	wait_ns += 999;
	tv.tv_sec = (time_t)(wait_ns / LOOM_NS_PER_S);
	tv.tv_usec = (suseconds_t)(wait_ns % LOOM_NS_PER_S / 1000);
	if (event_base_once(d->base, -1, EV_TIMEOUT, coflow_due, t, &tv) < 0) {
		log_err("out of memory");
		fail(d, 1);
	}
}

/* Acts on the model's events: timers, announcements, loomd's done calls. */
static void drain(struct driver *d)
{
	if (d->emit_oom) {
		log_err("out of memory");
		fail(d, 1);
	}
	for (size_t i = 0; i < d->nevs && !d->status; i++) {
		const struct cp_event *ev = &d->evs[i];
		const struct cp_coflow *co;
		const struct cp_job *jb;

		switch (ev->type) {
		case CP_EV_COFLOW_READY:
			d->ticks[ev->id].due_ns = ev->time_ns;
			arm_tick(&d->ticks[ev->id]);
			break;
		case CP_EV_COFLOW_RELEASE:
			coflow_start(d, ev->id);
			break;
		case CP_EV_COFLOW_DONE:
			co = &d->m->coflows[ev->id];
			if (d->a->verbose)
				log_info("coflow %" PRIu64 " of job %" PRIu64 " done: %.3f s after "
					 "its release",
					 co->ext_id, cp_coflow_job(d->m, co)->ext_id,
					 (double)(co->finish_ns - co->release_ns) / 1e9);
			/* the job's last coflow: the job's done call below covers it */
			if (cp_coflow_job(d->m, co)->state != CP_JOB_DONE)
				lc_call(d, LC_COFLOW_DONE, ev->id, co->ext_id, 0);
			break;
		case CP_EV_JOB_DONE:
			jb = &d->m->jobs[ev->id];
			if (d->a->verbose)
				log_info("job %" PRIu64 " done: JCT %.3f s (%u of %u jobs)",
					 jb->ext_id, (double)(jb->finish_ns - jb->arrival_ns) / 1e9,
					 d->m->jobs_done, d->m->njobs);
			if (lc_call(d, LC_JOB_DONE, ev->id, jb->ext_id, 0) < 0 ||
			    lc_call(d, LC_UNREGISTER, ev->id, jb->ext_id, 0) < 0)
				break;
			d->registered[ev->id] = false;
			if (cp_model_all_done(d->m))
				event_base_loopbreak(d->base);
			break;
		default:
			break;
		}
	}
	d->nevs = 0;
}

/* A model time for an event at monotonic mono_ns (never before the last one). */
static uint64_t model_time(struct driver *d, uint64_t mono_ns)
{
	uint64_t t = mono_ns > d->t0_ns ? mono_ns - d->t0_ns : 0;

	if (t < d->last_ns)
		t = d->last_ns;
	d->last_ns = t;
	return t;
}

static void coflow_due(evutil_socket_t fd, short what, void *arg)
{
	struct tick *t = arg;
	struct driver *d = t->d;

	if (d->status)
		return;
	/* libevent measures timeouts from the loop's cached time: it may fire early */
	if (run_now(d) < t->due_ns) {
		arm_tick(t);
		return;
	}
	cp_model_coflow_release(d->m, t->coflow, model_time(d, loom_clock_mono_ns()));
	drain(d);
}

/* Registers job j's DAG with loomd: coflows (flows announced at release) and edges. */
static int job_register(struct driver *d, uint32_t j)
{
	const struct cp_job *jb = &d->m->jobs[j];
	struct loom_client_job job = {.id = jb->ext_id, .weight = jb->weight, .name = NULL};
	size_t ne = 0;
	char name[40];

	snprintf(name, sizeof(name), "loom-run job %" PRIu64, jb->ext_id);
	job.name = name;
	for (uint32_t k = 0; k < jb->ncoflows; k++) {
		const struct cp_coflow *co = &d->m->coflows[jb->first_coflow + k];

		/*
		 * expected_flows announced later; a coflow without flows is open and
		 * is declared done at its release
		 */
		d->cfs[k] = (struct loom_client_coflow){.id = co->ext_id,
							.release_offset_ns = co->release_offset_ns,
							.expected_flows = co->nflows};
		for (uint32_t e = 0; e < co->nparents; e++) {
			const struct cp_edge *ed = &d->m->edges[co->first_parent + e];

			d->edges[ne++] = (struct loom_client_edge){
				.parent = d->m->coflows[ed->parent].ext_id,
				.child = co->ext_id,
				.delay_ns = ed->delay_ns};
		}
	}
	job.coflows = d->cfs;
	job.n_coflows = jb->ncoflows;
	job.edges = d->edges;
	job.n_edges = ne;
	return loom_client_job_register(d->lc, &job);
}

static void arm_arrival(struct driver *d);

static void job_arrive(evutil_socket_t fd, short what, void *arg)
{
	struct driver *d = arg;
	uint64_t now = run_now(d);

	while (!d->status && d->next_job < d->m->njobs &&
	       d->m->jobs[d->next_job].arrival_ns <= now) {
		uint32_t j = d->next_job++;

		if (lc_call(d, LC_REGISTER, j, d->m->jobs[j].ext_id, 0) < 0)
			return;
		d->registered[j] = true;
		cp_model_job_arrive(d->m, j, model_time(d, loom_clock_mono_ns()));
		drain(d);
		hooks_fire(d);
	}
	arm_arrival(d);
}

static void arm_arrival(struct driver *d)
{
	uint64_t now = run_now(d), at, wait_ns;
	struct timeval tv;

	if (d->status || d->next_job >= d->m->njobs)
		return;
	at = d->m->jobs[d->next_job].arrival_ns;
	wait_ns = at > now ? at - now : 0;
	tv.tv_sec = (time_t)(wait_ns / LOOM_NS_PER_S);
	tv.tv_usec = (suseconds_t)(wait_ns % LOOM_NS_PER_S / 1000);
	evtimer_add(d->arrive_ev, &tv);
}

/* A host's report: a flow delivered (or failed), or the host gone. */
static void host_cb(evutil_socket_t fd, short what, void *arg)
{
	struct host_proc *h = arg;
	struct driver *d = h->d;

	while (!d->status) {
		struct lrun_msg m;
		ssize_t n = recv(fd, &m, sizeof(m), MSG_DONTWAIT);
		const struct cp_flow *fl;

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n != (ssize_t)sizeof(m) || m.type != LRUN_MSG_DONE || m.flow >= d->m->nflows ||
		    d->m->flows[m.flow].src != h->id || d->m->flows[m.flow].done) {
			log_err("host %u (namespace %s%u) %s", h->id, d->a->netns, h->id,
				n == 0 ? "exited" : "sent a report that makes no sense");
			fail(d, 1);
			return;
		}
		fl = &d->m->flows[m.flow];
		if (m.status < 0) {
			log_err("flow %u of coflow %" PRIu64 " (host %u -> host %u, %" PRIu64
				" bytes) failed: %s",
				m.flow, d->m->coflows[fl->coflow].ext_id, fl->src, fl->dst,
				fl->bytes, strerror(-m.status));
			fail(d, 1);
			return;
		}
		d->flows_done++;
		d->bytes_done += fl->bytes;
		cp_model_flow_done(d->m, m.flow, model_time(d, m.mono_ns));
		drain(d);
	}
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct driver *d = arg;

	log_err("the run took longer than --timeout %" PRIu64 " s: %u of %u jobs done, %" PRIu64
		" of %" PRIu64 " started flows delivered",
		d->a->timeout_s, d->m->jobs_done, d->m->njobs, d->flows_done, d->flows_started);
	fail(d, 1);
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct driver *d = arg;

	log_err("got %s: stopping (%u of %u jobs done)", sig == SIGINT ? "SIGINT" : "SIGTERM",
		d->m->jobs_done, d->m->njobs);
	fail(d, 130);
}

/* ---- setting up and reporting ----------------------------------------------------------------- */

/* Sizes the driver's scratch from the model; 0 or -ENOMEM. */
static int driver_alloc(struct driver *d)
{
	const struct cp_model *m = d->m;
	size_t max_flows = 1, max_cfs = 1, max_edges = 1;

	for (uint32_t c = 0; c < m->ncoflows; c++)
		if (m->coflows[c].nflows > max_flows)
			max_flows = m->coflows[c].nflows;
	for (uint32_t j = 0; j < m->njobs; j++) {
		size_t ne = 0;

		if (m->jobs[j].ncoflows > max_cfs)
			max_cfs = m->jobs[j].ncoflows;
		for (uint32_t k = 0; k < m->jobs[j].ncoflows; k++)
			ne += m->coflows[m->jobs[j].first_coflow + k].nparents;
		if (ne > max_edges)
			max_edges = ne;
	}
	d->ticks = calloc((size_t)m->ncoflows + 1, sizeof(*d->ticks));
	d->registered = calloc((size_t)m->njobs + 1, sizeof(*d->registered));
	d->anns = calloc(max_flows, sizeof(*d->anns));
	d->cfs = calloc(max_cfs, sizeof(*d->cfs));
	d->edges = calloc(max_edges, sizeof(*d->edges));
	d->hosts = calloc(d->nhosts, sizeof(*d->hosts));
	if (!d->ticks || !d->registered || !d->anns || !d->cfs || !d->edges || !d->hosts)
		return -ENOMEM;
	for (uint32_t c = 0; c < m->ncoflows; c++)
		d->ticks[c] = (struct tick){.d = d, .coflow = c};
	for (uint32_t i = 0; i < d->nhosts; i++)
		d->hosts[i] = (struct host_proc){.d = d, .id = i, .fd = -1};
	return 0;
}

static void driver_free(struct driver *d)
{
	struct event *evs[] = {d->arrive_ev, d->deadline_ev, d->sigint_ev, d->sigterm_ev};

	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		if (evs[i])
			event_free(evs[i]);
	if (d->hosts)
		hosts_stop(d);
	if (d->base)
		event_base_free(d->base);
	loom_client_free(d->lc);
	free(d->ticks);
	free(d->registered);
	free(d->anns);
	free(d->cfs);
	free(d->edges);
	free(d->hosts);
	free(d->evs);
}

/* Writes the scaled trace and the topology into the output folder; 0 or -1 (logged). */
static int write_inputs(const struct run_args *a, const char *out, const struct cp_model *m,
			const struct topo *t)
{
	char path[PATH_MAX];
	FILE *f;
	int r;

	snprintf(path, sizeof(path), "%s/trace.loom", out);
	f = fopen(path, "w");
	if (!f) {
		log_err("cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	r = sim_trace_write_loom(m, f);
	if (fclose(f) != 0 && r == 0)
		r = loom_negerrno();
	if (r < 0) {
		log_err("cannot write %s: %s", path, strerror(-r));
		return -1;
	}
	snprintf(path, sizeof(path), "%s/topology.json", out);
	r = topo_save_json(t, path);
	if (r < 0) {
		log_err("cannot write %s: %s", path, strerror(-r));
		return -1;
	}
	(void)a;
	return 0;
}

/* Writes the CSV files (and the summary when every job finished); 0 or -1 (logged). */
static int write_results(const struct driver *d, const char *out, uint64_t wall_ns)
{
	char path[PATH_MAX];
	struct sim_summary s;
	struct sim_stats st = {0};
	int r;

	snprintf(path, sizeof(path), "%s/%s-coflows.csv", out, d->a->label);
	r = sim_write_coflows_csv(d->m, path);
	if (r == 0) {
		snprintf(path, sizeof(path), "%s/%s-jobs.csv", out, d->a->label);
		r = sim_write_jobs_csv(d->m, path);
	}
	if (r < 0) {
		log_err("cannot write %s: %s", path, strerror(-r));
		return -1;
	}
	if (!cp_model_all_done(d->m))
		return 0;
	for (uint32_t j = 0; j < d->m->njobs; j++)
		if (d->m->jobs[j].finish_ns > st.makespan_ns)
			st.makespan_ns = d->m->jobs[j].finish_ns;
	r = sim_summarise(d->m, &st, d->a->label, &s);
	if (r == 0) {
		s.wall_s = (double)wall_ns / 1e9;
		snprintf(path, sizeof(path), "%s/summary.csv", out);
		r = sim_write_summary_csv(&s, 1, path);
	}
	if (r < 0) {
		log_err("cannot write %s: %s", path, strerror(-r));
		return -1;
	}
	sim_print_table(stdout, &s, 1);
	return 0;
}

/* Loads, scales, binds and saves the workload; the model, or NULL (logged). */
static struct cp_model *load_workload(const struct run_args *a, const char *out,
				      struct topo **ret_topo)
{
	struct loom_err err = {{0}};
	struct cp_model *raw, *m;
	struct topo *t;
	uint32_t nhosts;
	int r;

	t = topo_load_json(a->topo, &err);
	if (!t) {
		log_err("%s", loom_err_str(&err));
		return NULL;
	}
	raw = sim_trace_load(a->trace, a->fmt, &nhosts, &err);
	if (!raw) {
		log_err("%s", loom_err_str(&err));
		topo_free(t);
		return NULL;
	}
	if (nhosts > t->nhosts) {
		log_err("%s: the trace has %u hosts, the cluster (%s) %u", a->trace, nhosts,
			a->topo, t->nhosts);
		goto fail;
	}
	m = lrun_model_scale(raw, a->bytes_scale, a->time_scale, &err);
	cp_model_free(raw);
	raw = NULL;
	if (!m) {
		log_err("%s: %s", a->trace, loom_err_str(&err));
		goto fail;
	}
	r = sim_cli_mkdirs(out);
	if (r < 0) {
		log_err("cannot make %s: %s", out, strerror(-r));
		cp_model_free(m);
		goto fail;
	}
	if (write_inputs(a, out, m, t) < 0 || cp_model_bind(m, t) < 0) {
		cp_model_free(m);
		goto fail;
	}
	cp_model_reset(m);
	*ret_topo = t;
	return m;
fail:
	cp_model_free(raw);
	topo_free(t);
	return NULL;
}

/* Starts the hosts, connects to loomd and plays the workload; the exit status. */
static int drive(struct driver *d)
{
	struct loom_client_options lo = {.name = PROG};
	struct timeval tv = {.tv_sec = (time_t)d->a->timeout_s};

	for (uint32_t i = 0; i < d->nhosts; i++) {
		int r = host_spawn(d, i);

		if (r < 0) {
			log_err("cannot start host %u: %s", i, strerror(-r));
			return 1;
		}
	}
	if (hosts_ready(d) < 0)
		return 1;
	d->lc = loom_client_connect(d->a->controller, &lo);
	if (!d->lc) {
		log_err("%s", loom_client_strerror());
		return 1;
	}
	d->base = event_base_new();
	if (!d->base)
		return 1;
	d->arrive_ev = evtimer_new(d->base, job_arrive, d);
	d->deadline_ev = evtimer_new(d->base, deadline_cb, d);
	d->sigint_ev = evsignal_new(d->base, SIGINT, signal_cb, d);
	d->sigterm_ev = evsignal_new(d->base, SIGTERM, signal_cb, d);
	if (!d->arrive_ev || !d->deadline_ev || !d->sigint_ev || !d->sigterm_ev ||
	    evtimer_add(d->deadline_ev, &tv) < 0 || event_add(d->sigint_ev, NULL) < 0 ||
	    event_add(d->sigterm_ev, NULL) < 0) {
		log_err("out of memory");
		return 1;
	}
	for (uint32_t i = 0; i < d->nhosts; i++) {
		struct host_proc *h = &d->hosts[i];

		h->ev = event_new(d->base, h->fd, EV_READ | EV_PERSIST, host_cb, h);
		if (!h->ev || event_add(h->ev, NULL) < 0) {
			log_err("out of memory");
			return 1;
		}
	}
	cp_model_set_emit(d->m, on_model_event, d);
	d->t0_ns = loom_clock_mono_ns();
	arm_arrival(d);
	event_base_dispatch(d->base);
	cp_model_set_emit(d->m, NULL, NULL);
	if (!d->status && !cp_model_all_done(d->m)) {
		log_err("the run stopped with %u of %u jobs done", d->m->jobs_done, d->m->njobs);
		d->status = 1;
	}
	/* a run that stopped early leaves nothing registered behind */
	for (uint32_t j = 0; j < d->m->njobs; j++)
		if (d->registered[j])
			loom_client_job_unregister(d->lc, d->m->jobs[j].ext_id);
	return d->status;
}

static const char *trace_base(const char *path, char *buf, size_t len)
{
	const char *b = strrchr(path, '/');
	size_t n;

	b = b ? b + 1 : path;
	n = strcspn(b, ".");
	snprintf(buf, len, "%.*s", (int)(n ? n : strlen(b)), b);
	return buf;
}

int main(int argc, char **argv)
{
	struct run_args a = {.fmt = SIM_TRACE_LOOM,
			     .label = "live",
			     .bytes_scale = 1,
			     .time_scale = 1,
			     .port = DEFAULT_PORT,
			     .timeout_s = DEFAULT_TIMEOUT,
			     .retry_s = DEFAULT_RETRY,
			     .congestion = DEFAULT_CC};
	struct driver d = {.a = &a};
	char out_buf[PATH_MAX], base[NAME_MAX + 1];
	const char *out;
	struct topo *t = NULL;
	uint64_t wall_ns;
	int status;

	loom_log_set_ident(PROG);
	if (parse_args(argc, argv, &a) < 0)
		return 2;
	if (geteuid() != 0) {
		log_err("must run as root (it enters the hosts' network namespaces)");
		return 2;
	}
	if (a.congestion && cc_check(a.congestion) < 0)
		return 2;
	if (a.out) {
		out = a.out;
	} else {
		snprintf(out_buf, sizeof(out_buf), "out/%s-live",
			 trace_base(a.trace, base, sizeof(base)));
		out = out_buf;
	}
	d.m = load_workload(&a, out, &t);
	if (!d.m)
		return 1;
	d.nhosts = t->nhosts;
	if (driver_alloc(&d) < 0) {
		log_err("out of memory");
		status = 1;
		goto out;
	}
	status = drive(&d);
	wall_ns = d.t0_ns ? loom_clock_mono_ns() - d.t0_ns : 0;
	/* the hooks get what is left of --timeout (none after a signal) */
	if (hooks_wait(&d, status == 130 ? 0 : d.t0_ns + a.timeout_s * LOOM_NS_PER_S) < 0 &&
	    status == 0)
		status = 1;
	hosts_stop(&d);
	if (d.t0_ns && write_results(&d, out, wall_ns) < 0 && status == 0)
		status = 1;
	if (d.t0_ns)
		printf(PROG ": %u of %u jobs, %u coflows, %" PRIu64 " of %u flows (%" PRIu64
			    " bytes) in %.3f s; wrote %s/%s-coflows.csv, %s-jobs.csv, trace.loom, "
			    "topology.json%s\n",
		       d.m->jobs_done, d.m->njobs, d.m->coflows_done, d.flows_done, d.m->nflows,
		       d.bytes_done, (double)wall_ns / 1e9, out, a.label, a.label,
		       cp_model_all_done(d.m) ? ", summary.csv" : "");
	if (d.t0_ns && (d.retried_calls || a.nhooks))
		printf(PROG ": %" PRIu64 " requests met loomd unreachable and were retried, "
			    "%.3f s waited in all\n",
		       d.retried_calls, (double)d.retry_ns / 1e9);
out:
	driver_free(&d);
	cp_model_free(d.m);
	topo_free(t);
	return status;
}
