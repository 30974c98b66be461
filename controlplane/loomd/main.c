/* SPDX-License-Identifier: BSD-3-Clause */
/* loomd: the Loom controller daemon. Flags and start-up; the rest is in server.c. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "controlplane/loomd/config.h"
#include "controlplane/loomd/server.h"

#define DEFAULT_CONFIG "/etc/loom/loomd.conf"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: loomd [OPTIONS]\n"
		"The Loom controller: frameworks register job DAGs and announce flows, a\n"
		"scheduling policy orders the coflows, agents receive priority classes.\n"
		"\n"
		"  -c, --config FILE     configuration file (default %s if it exists;\n"
		"                        every key is in docs/loomd.md)\n"
		"  -o, --set KEY=VALUE   override one configuration key (repeatable)\n"
		"  -f, --foreground      stay in the foreground (systemd, containers, tests)\n"
		"      --check-config    check the configuration and the policy, then exit\n"
		"  -v, --verbose         log at debug level\n"
		"  -h, --help            this text\n"
		"      --version         print the version\n"
		"\n"
		"Examples:\n"
		"  loomd -f -o journal=/tmp/loom.db -o listen_unix=/tmp/loomd.sock \\\n"
		"        -o admin_socket=/tmp/loom-admin.sock -o policy=sincronia\n"
		"  loomctl --socket /tmp/loom-admin.sock status\n",
		DEFAULT_CONFIG);
}

static int make_parent_dir(const char *path)
{
	char dir[PATH_MAX];
	char *slash;

	if (!path[0])
		return 0;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		mkdir(dir, 0755);
		*p = '/';
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'}, {"set", required_argument, NULL, 'o'},
		{"foreground", no_argument, NULL, 'f'},   {"check-config", no_argument, NULL, 'C'},
		{"verbose", no_argument, NULL, 'v'},      {"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},      {NULL, 0, NULL, 0},
	};
	const char *config = NULL;
	char **sets = calloc((size_t)argc + 1, sizeof(*sets));
	int nsets = 0, c, code;
	bool foreground = false, check = false, verbose = false;
	struct loomd_config cfg;
	struct loomd_server *srv;
	struct loom_err err = {{0}};
	enum loom_log_level lvl;

	loom_log_set_ident("loomd");
	if (!sets)
		return 1;
	while ((c = getopt_long(argc, argv, "c:o:fvh", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 'o':
			sets[nsets++] = optarg;
			break;
		case 'f':
			foreground = true;
			break;
		case 'C':
			check = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage(stdout);
			free(sets);
			return 0;
		case 'V':
			printf("loomd 0.1.0\n");
			free(sets);
			return 0;
		default:
			usage(stderr);
			free(sets);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "loomd: unexpected argument '%s' (see --help)\n", argv[optind]);
		free(sets);
		return 2;
	}
	loomd_config_default(&cfg);
	if (!config && access(DEFAULT_CONFIG, R_OK) == 0)
		config = DEFAULT_CONFIG;
	if (config && loomd_config_load(&cfg, config, &err) < 0) {
		fprintf(stderr, "loomd: %s\n", loom_err_str(&err));
		free(sets);
		return 2;
	}
	for (int i = 0; i < nsets; i++) {
		char *eq = strchr(sets[i], '=');

		if (!eq) {
			fprintf(stderr, "loomd: --set %s: expected KEY=VALUE\n", sets[i]);
			free(sets);
			return 2;
		}
		*eq = 0;
		if (loomd_config_set(&cfg, sets[i], eq + 1, &err) < 0) {
			fprintf(stderr, "loomd: --set: %s\n", loom_err_str(&err));
			free(sets);
			return 2;
		}
	}
	free(sets);
	if (loomd_config_check(&cfg, &err) < 0) {
		fprintf(stderr, "loomd: %s\n", loom_err_str(&err));
		return 2;
	}
	if (loom_log_level_parse(cfg.log_level, &lvl) == 0)
		loom_log_set_level(verbose ? LOOM_LOG_DEBUG : lvl);
	if (check) {
		printf("loomd: configuration OK (policy %s, %u classes)\n", cfg.policy,
		       cfg.classes);
		return 0;
	}
	if (make_parent_dir(cfg.journal) < 0 || make_parent_dir(cfg.listen_unix) < 0 ||
	    make_parent_dir(cfg.admin_socket) < 0)
		log_warn("cannot create a parent directory: %s", strerror(errno));
	if (!foreground && daemon(0, 1) < 0) {
		fprintf(stderr, "loomd: daemon: %s\n", strerror(errno));
		return 1;
	}
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return 1;
	if (loomd_server_init(srv, &cfg, &err) < 0) {
		log_err("%s", loom_err_str(&err));
		loomd_server_done(srv);
		free(srv);
		return 1;
	}
	log_info("listening on %s%s%s%s; admin %s; metrics %s; policy %s, %u classes, tick %.1f ms",
		 cfg.listen_unix, cfg.listen_unix[0] && cfg.listen_tcp[0] ? " and " : "",
		 cfg.listen_tcp, cfg.listen_tcp[0] && cfg.tls_cert[0] ? " (TLS)" : "",
		 cfg.admin_socket[0] ? cfg.admin_socket : "off",
		 cfg.metrics[0] ? cfg.metrics : "off", cfg.policy, cfg.classes,
		 (double)cfg.tick_ns * 1e-6);
	if (!cfg.journal[0])
		log_warn("no journal: a restart forgets every job (set journal = PATH)");
	code = loomd_server_run(srv);
	loomd_server_done(srv);
	free(srv);
	log_info("stopped");
	return code;
}
