/* SPDX-License-Identifier: BSD-3-Clause */
/* loom-agent: flags and configuration; the agent itself is in agent.c. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
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
		"  -c, --config FILE          KEY = VALUE lines (the long options' names)\n"
		"      --controller ADDR      loomd: unix:/path, /path, tcp:HOST:PORT or HOST:PORT\n"
		"                             (default unix:/run/loom/loomd.sock)\n"
		"      --host-id N            this host's id in loomd's fabric (default 0)\n"
		"      --enforcer NAME        how to enforce (default null)\n"
		"      --enforcer-args STR    passed to the enforcer\n"
		"      --classes K            priority classes (default 8)\n"
		"      --link-bps RATE        this host's link, bit/s (default 1000000000)\n"
		"      --address IP           an address of this host (repeatable, up to %d)\n"
		"      --admin-socket PATH    admin socket for loomctl (default none)\n"
		"      --stats-interval MS    flow statistics period (default 100)\n"
		"      --heartbeat MS         heartbeat period (default 1000)\n"
		"  -v, --verbose              log at debug level\n"
		"  -h, --help                 this text\n"
		"\n"
		"Enforcers in this build:\n",
		DP_MAX_ADDRS);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  %-8s %s\n", all[i]->name, all[i]->summary);
}

static int parse_u64(const char *key, const char *v, uint64_t min, uint64_t max, uint64_t *ret,
		     struct loom_err *err)
{
	unsigned long long x;

	if (loom_parse_u64(v, &x) < 0 || x < min || x > max)
		return loom_err_set(err, EINVAL, "%s: '%s' is not a whole number in [%llu, %llu]",
				    key, v, (unsigned long long)min, (unsigned long long)max);
	*ret = x;
	return 0;
}

/* Sets one option by its long name. 0 or -EINVAL/-ENOENT with err. */
static int set_opt(struct dp_agent_config *c, const char *key, const char *v, struct loom_err *err)
{
	uint64_t x = 0;
	int r = 0;

	if (!strcmp(key, "controller")) {
		if (strlen(v) >= sizeof(c->controller))
			return loom_err_set(err, EINVAL, "controller: address too long");
		snprintf(c->controller, sizeof(c->controller), "%s", v);
	} else if (!strcmp(key, "host-id")) {
		r = parse_u64(key, v, 0, UINT32_MAX - 1, &x, err);
		c->host_id = (uint32_t)x;
	} else if (!strcmp(key, "enforcer")) {
		if (!dp_enforcer_find(v))
			return loom_err_set(err, ENOENT,
					    "enforcer: '%s' is not in this build (see --help)", v);
		snprintf(c->enforcer, sizeof(c->enforcer), "%s", v);
	} else if (!strcmp(key, "enforcer-args")) {
		if (strlen(v) >= sizeof(c->enforcer_args))
			return loom_err_set(err, EINVAL, "enforcer-args: too long");
		snprintf(c->enforcer_args, sizeof(c->enforcer_args), "%s", v);
	} else if (!strcmp(key, "classes")) {
		r = parse_u64(key, v, 1, 64, &x, err);
		c->classes = (uint32_t)x;
	} else if (!strcmp(key, "link-bps")) {
		r = parse_u64(key, v, 1000, UINT64_MAX, &c->link_bps, err);
	} else if (!strcmp(key, "address")) {
		uint8_t buf[16] = {0};

		if (c->naddrs == DP_MAX_ADDRS)
			return loom_err_set(err, EINVAL, "address: at most %d", DP_MAX_ADDRS);
		if (inet_pton(AF_INET, v, buf) == 1)
			c->addr_family[c->naddrs] = 4;
		else if (inet_pton(AF_INET6, v, buf) == 1)
			c->addr_family[c->naddrs] = 6;
		else
			return loom_err_set(err, EINVAL,
					    "address: '%s' is not an IPv4 or IPv6 address", v);
		memcpy(c->addrs[c->naddrs++], buf, 16);
	} else if (!strcmp(key, "admin-socket")) {
		if (strlen(v) >= sizeof(c->admin_socket))
			return loom_err_set(err, EINVAL, "admin-socket: path too long");
		snprintf(c->admin_socket, sizeof(c->admin_socket), "%s", v);
	} else if (!strcmp(key, "stats-interval")) {
		r = parse_u64(key, v, 1, 60000, &x, err);
		c->stats_interval_ns = x * 1000000ULL;
	} else if (!strcmp(key, "heartbeat")) {
		r = parse_u64(key, v, 10, 600000, &x, err);
		c->heartbeat_ns = x * 1000000ULL;
	} else {
		return loom_err_set(err, ENOENT, "unknown option '%s' (see --help)", key);
	}
	return r;
}

static int load_config(struct dp_agent_config *c, const char *path, struct loom_err *err)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	unsigned no = 0;

	if (!f)
		return loom_err_set(err, errno, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *k = line, *eq, *v, *e;
		struct loom_err e2;

		no++;
		if ((e = strchr(line, '#')))
			*e = 0;
		while (isspace((unsigned char)*k))
			k++;
		if (!*k)
			continue;
		eq = strchr(k, '=');
		if (!eq) {
			fclose(f);
			return loom_err_set(err, EINVAL, "%s:%u: expected KEY = VALUE", path, no);
		}
		*eq = 0;
		v = eq + 1;
		for (e = eq; e > k && isspace((unsigned char)e[-1]);)
			*--e = 0;
		while (isspace((unsigned char)*v))
			v++;
		for (e = v + strlen(v); e > v && isspace((unsigned char)e[-1]);)
			*--e = 0;
		if (set_opt(c, k, v, &e2) < 0) {
			fclose(f);
			return loom_err_set(err, EINVAL, "%s:%u: %s", path, no, loom_err_str(&e2));
		}
	}
	fclose(f);
	return 0;
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
	/* the config file first, so that flags override it wherever they stand */
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "-c") || !strcmp(argv[i], "--config")) {
			if (load_config(&cfg, argv[i + 1], &err) < 0) {
				fprintf(stderr, "loom-agent: %s\n", loom_err_str(&err));
				return 2;
			}
		}
	while ((c = getopt_long(argc, argv, "c:vh", opts, &idx)) != -1) {
		switch (c) {
		case 'c':
			break;
		case 1:
			if (set_opt(&cfg, opts[idx].name, optarg, &err) < 0) {
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
