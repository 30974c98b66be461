/* SPDX-License-Identifier: BSD-3-Clause */
/* loom-agent: flags and configuration (agent_config.c); the agent itself is in agent.c. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "dataplane/agent.h"

static void usage(FILE *f)
{
	size_t n;
	const struct dp_enforcer_class *const *all = dp_enforcer_list(&n);

	fprintf(f,
		"Usage: loom-agent [OPTIONS]\n"
		"Loom's host agent: takes its priority table from loomd and makes this host's\n"
		"traffic obey it through an enforcer.\n"
		"\n"
		"  -c, --config FILE          key = value lines (the long options' names in\n"
		"                             snake_case: host_id = 3; docs/agent.md)\n"
		"      --controller ADDR      loomd: unix:/path, /path, tcp:HOST:PORT or HOST:PORT\n"
		"                             (default unix:/run/loom/loomd.sock)\n"
		"      --host-id N            this host's id in loomd's fabric (default 0)\n"
		"      --enforcer NAME        how to enforce (default null)\n"
		"      --enforcer-args STR    passed to the enforcer\n"
		"      --classes K            priority classes (default 8)\n"
		"      --link-bps RATE        this host's link, bit/s: 10G, 100M (default 1G)\n"
		"      --address IP           an address of this host (repeatable, up to %d)\n"
		"      --admin-socket PATH    admin socket for loomctl (default none)\n"
		"      --stats-interval TIME  flow statistics period: 100ms, 1s; a bare number is\n"
		"                             milliseconds (default 100)\n"
		"      --heartbeat TIME       heartbeat period, as --stats-interval (default 1000)\n"
		"      --tls-cert FILE        TLS to a TCP controller: this agent's PEM certificate\n"
		"                             (naming host-N and its addresses; docs/security.md)\n"
		"      --tls-key FILE         its PEM private key\n"
		"      --tls-ca FILE          PEM CA certificate that signed loomd's\n"
		"  -v, --verbose              log at debug level\n"
		"  -h, --help                 this text\n"
		"\n"
		"Enforcers in this build:\n",
		DP_MAX_ADDRS);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  %-8s %s\n", all[i]->name, all[i]->summary);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"controller", required_argument, NULL, 1},
		{"host-id", required_argument, NULL, 1},
		{"enforcer", required_argument, NULL, 1},
		{"enforcer-args", required_argument, NULL, 1},
		{"classes", required_argument, NULL, 1},
		{"link-bps", required_argument, NULL, 1},
		{"address", required_argument, NULL, 1},
		{"admin-socket", required_argument, NULL, 1},
		{"stats-interval", required_argument, NULL, 1},
		{"heartbeat", required_argument, NULL, 1},
		{"tls-cert", required_argument, NULL, 1},
		{"tls-key", required_argument, NULL, 1},
		{"tls-ca", required_argument, NULL, 1},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct dp_agent_config cfg;
	struct loom_err err = {{0}};
	struct dp_agent *a;
	int c, idx, code;

	loom_log_set_ident("loom-agent");
	dp_agent_config_default(&cfg);
	/*
	 * The config file first, so that flags override it wherever they stand:
	 * a first pass of getopt takes -c in every spelling getopt accepts
	 * (-c F, -cF, --config F, --config=F, --conf=F) and reports nothing;
	 * the second pass sets the flags and reports bad ones.
	 */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "c:vh", opts, &idx)) != -1)
		if (c == 'c' && dp_agent_config_load(&cfg, optarg, &err) < 0) {
			fprintf(stderr, "loom-agent: %s\n", loom_err_str(&err));
			return 2;
		}
	opterr = 1;
	optind = 0; /* glibc: start over */
	while ((c = getopt_long(argc, argv, "c:vh", opts, &idx)) != -1) {
		switch (c) {
		case 'c':
			break;
		case 1:
			if (dp_agent_config_set(&cfg, opts[idx].name, optarg, &err) < 0) {
				fprintf(stderr, "loom-agent: --%s\n", loom_err_str(&err));
				return 2;
			}
			break;
		case 'v':
			loom_log_set_level(LOOM_LOG_DEBUG);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "loom-agent: unexpected argument '%s' (see --help)\n",
			argv[optind]);
		return 2;
	}
	a = dp_agent_new(&cfg, &err);
	if (!a) {
		fprintf(stderr, "loom-agent: %s\n", loom_err_str(&err));
		return 1;
	}
	log_info("host %u, enforcer %s, %u classes; loomd at %s", cfg.host_id, cfg.enforcer,
		 cfg.classes, cfg.controller);
	code = dp_agent_run(a);
	dp_agent_free(a);
	log_info("stopped");
	return code;
}
