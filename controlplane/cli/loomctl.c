/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loomctl: the operator's command line for loomd. A table of subcommands
 * (wireguard-tools src/wg.c); each one calls one admin-socket command
 * (common/admin.h) and prints its result as a table, as aligned
 * "key: value" lines, or, with --json, as the daemon's JSON.
 *
 * Exit status: 0 success; 1 the daemon answered with an error (or with a
 * reply loomctl cannot read); 2 usage error; 3 the daemon cannot be reached
 * (no socket, refused, timed out, connection lost).
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/admin.h"
#include "common/cleanup.h"
#include "common/errors.h"
#include "common/log.h"

#ifndef LOOM_VERSION
#define LOOM_VERSION "unknown"
#endif

#define DEFAULT_SOCKET     "/run/loom/admin.sock"
#define DEFAULT_TIMEOUT_MS 5000

enum {
	EXIT_OK = 0,
	EXIT_DAEMON = 1,
	EXIT_USAGE = 2,
	EXIT_UNREACHABLE = 3,
};

struct ctl {
	const char *socket;
	int timeout_ms;
	bool json;
};

struct subcommand {
	const char *name;
	const char *args; /* usage of its arguments */
	const char *help;
	int min_args, max_args;
	/* argv[0] is the subcommand's name; argc - 1 arguments follow. */
	int (*fn)(const struct ctl *ctl, int argc, char **argv);
};

static const struct subcommand *subcommand_find(const char *name);

/* ---- formatting ----------------------------------------------------------------------- */

/* A printable cell: control characters from the daemon's strings become '?'. */
static void sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

/* Display width of a UTF-8 string: one column per code point. */
static size_t text_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

enum fmt {
	FMT_STR,     /* string */
	FMT_INT,     /* integer */
	FMT_NUM,     /* any number, shortest form */
	FMT_BOOL,    /* yes / no */
	FMT_SECONDS, /* seconds -> "2h 03m 04s" */
	FMT_MS,      /* milliseconds -> "10 ms" */
	FMT_US,      /* microseconds -> "12.5 us", "3.20 ms" */
	FMT_BYTES,   /* bytes -> "12.3 MiB" */
	FMT_BYTES_0, /* bytes, 0 meaning unknown -> "?" */
	FMT_RANK,    /* integer, negative meaning none -> "-" */
	FMT_VERSION, /* integer version -> "v12" */
};

static bool num_value(const json_t *v, double *ret)
{
	if (!json_is_number(v))
		return false;
	*ret = json_number_value(v);
	return isfinite(*ret);
}

static void fmt_seconds(char *buf, size_t size, double s)
{
	uint64_t t;

	if (s < 60) {
		snprintf(buf, size, "%.1f s", s);
		return;
	}
	t = (uint64_t)s;
	if (t < 3600)
		snprintf(buf, size, "%" PRIu64 "m %02" PRIu64 "s", t / 60, t % 60);
	else if (t < 86400)
		snprintf(buf, size, "%" PRIu64 "h %02" PRIu64 "m %02" PRIu64 "s", t / 3600,
			 t / 60 % 60, t % 60);
	else
		snprintf(buf, size, "%" PRIu64 "d %02" PRIu64 "h %02" PRIu64 "m", t / 86400,
			 t / 3600 % 24, t / 60 % 60);
}

static void fmt_us(char *buf, size_t size, double us)
{
	if (us < 10)
		snprintf(buf, size, "%.2f us", us);
	else if (us < 1000)
		snprintf(buf, size, "%.1f us", us);
	else if (us < 1e6)
		snprintf(buf, size, "%.2f ms", us / 1e3);
	else
		snprintf(buf, size, "%.2f s", us / 1e6);
}

static void fmt_bytes(char *buf, size_t size, double b)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
	size_t u = 0;

	if (b < 1024) {
		snprintf(buf, size, "%.0f B", b);
		return;
	}
	b /= 1024;
	while (b >= 1024 && u + 1 < ARRAY_SIZE(units)) {
		b /= 1024;
		u++;
	}
	snprintf(buf, size, "%.1f %s", b, units[u]);
}

/* A double in the shortest form that reads back the same ("1.5", "1234567.89"). */
static void fmt_real(char *buf, size_t size, double d)
{
	if (d == floor(d) && fabs(d) < 1e15) {
		snprintf(buf, size, "%.0f", d == 0 ? 0.0 : d);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, size, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			return;
	}
}

/* Any JSON scalar as text; objects and arrays as compact JSON. */
static void fmt_json(char *buf, size_t size, const json_t *v)
{
	char *s;

	if (json_is_string(v)) {
		snprintf(buf, size, "%s", json_string_value(v));
	} else if (json_is_integer(v)) {
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	} else if (json_is_real(v)) {
		fmt_real(buf, size, json_real_value(v));
	} else if (json_is_true(v) || json_is_false(v)) {
		snprintf(buf, size, "%s", json_is_true(v) ? "true" : "false");
	} else if (!v || json_is_null(v)) {
		snprintf(buf, size, "-");
	} else {
		s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		snprintf(buf, size, "%s", s ? s : "-");
		free(s);
	}
}

/* Formats v (may be NULL) as f into buf; "-" when it is missing or of the wrong type. */
static void fmt_value(char *buf, size_t size, const json_t *v, enum fmt f)
{
	double d;

	snprintf(buf, size, "-");
	switch (f) {
	case FMT_STR:
		if (json_is_string(v))
			snprintf(buf, size, "%s", json_string_value(v));
		else if (json_is_number(v))
			fmt_json(buf, size, v);
		break;
	case FMT_INT:
	case FMT_NUM:
		if (json_is_integer(v))
			snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		else if (num_value(v, &d) && f == FMT_INT)
			snprintf(buf, size, "%.0f", d);
		else if (num_value(v, &d))
			fmt_real(buf, size, d);
		break;
	case FMT_BOOL:
		if (json_is_boolean(v))
			snprintf(buf, size, "%s", json_is_true(v) ? "yes" : "no");
		break;
	case FMT_SECONDS:
		if (num_value(v, &d) && d >= 0)
			fmt_seconds(buf, size, d);
		break;
	case FMT_MS:
		if (num_value(v, &d))
			snprintf(buf, size, "%g ms", d);
		break;
	case FMT_US:
		if (num_value(v, &d) && d >= 0)
			fmt_us(buf, size, d);
		break;
	case FMT_BYTES:
	case FMT_BYTES_0:
		if (num_value(v, &d) && d >= 0) {
			if (f == FMT_BYTES_0 && d == 0)
				snprintf(buf, size, "?");
			else
				fmt_bytes(buf, size, d);
		}
		break;
	case FMT_RANK:
		if (num_value(v, &d) && d >= 0)
			snprintf(buf, size, "%.0f", d);
		break;
	case FMT_VERSION:
		if (num_value(v, &d))
			snprintf(buf, size, "v%.0f", d);
		break;
	}
	sanitize(buf);
}

/* ---- tables and key/value lists -------------------------------------------------------- */

#define CELL_MAX 256

struct column {
	const char *header;
	const char *key;
	enum fmt fmt;
	bool right; /* right-aligned (numbers) */
};

static void print_padded(const char *s, size_t width, bool right, bool last)
{
	size_t pad = width - text_width(s);

	if (right)
		printf("%*s%s", (int)pad, "", s);
	else if (last)
		fputs(s, stdout);
	else
		printf("%s%*s", s, (int)pad, "");
}

/*
 * Prints the array of objects rows as a table with a header row, or empty_msg
 * when it is empty. Returns an exit status.
 */
static int print_table(const json_t *rows, const struct column *cols, size_t ncols,
		       const char *empty_msg)
{
	size_t nrows = json_array_size(rows);
	_cleanup_free_ char *cells = NULL;
	size_t width[16] = {0};

	assert(ncols <= ARRAY_SIZE(width));
	if (nrows == 0) {
		puts(empty_msg);
		return EXIT_OK;
	}
	cells = calloc(nrows * ncols, CELL_MAX);
	if (!cells) {
		fprintf(stderr, "loomctl: out of memory\n");
		return EXIT_DAEMON;
	}
	for (size_t c = 0; c < ncols; c++)
		width[c] = text_width(cols[c].header);
	for (size_t r = 0; r < nrows; r++) {
		const json_t *row = json_array_get(rows, r);

		for (size_t c = 0; c < ncols; c++) {
			char *cell = cells + (r * ncols + c) * CELL_MAX;

			fmt_value(cell, CELL_MAX, json_object_get(row, cols[c].key), cols[c].fmt);
			if (text_width(cell) > width[c])
				width[c] = text_width(cell);
		}
	}
	for (size_t c = 0; c < ncols; c++) {
		print_padded(cols[c].header, width[c], cols[c].right, c + 1 == ncols);
		fputs(c + 1 == ncols ? "\n" : "  ", stdout);
	}
	for (size_t r = 0; r < nrows; r++) {
		for (size_t c = 0; c < ncols; c++) {
			print_padded(cells + (r * ncols + c) * CELL_MAX, width[c], cols[c].right,
				     c + 1 == ncols);
			fputs(c + 1 == ncols ? "\n" : "  ", stdout);
		}
	}
	return EXIT_OK;
}

struct field {
	const char *label;
	const char *key;
	enum fmt fmt;
};

/* Prints "label: value" lines with the values aligned. */
static void print_fields(const json_t *obj, const struct field *fields, size_t n)
{
	size_t w = 0;

	for (size_t i = 0; i < n; i++)
		if (strlen(fields[i].label) > w)
			w = strlen(fields[i].label);
	for (size_t i = 0; i < n; i++) {
		char val[CELL_MAX];

		fmt_value(val, sizeof(val), json_object_get(obj, fields[i].key), fields[i].fmt);
		printf("%s:%*s %s\n", fields[i].label, (int)(w - strlen(fields[i].label)), "", val);
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Prints every key of obj, sorted, as aligned "key: value" lines. */
static int print_all_keys(const json_t *obj)
{
	size_t n = json_object_size(obj), i = 0, w = 0;
	_cleanup_free_ const char **keys = calloc(n + 1, sizeof(*keys));
	const char *key;
	json_t *v;

	if (!keys) {
		fprintf(stderr, "loomctl: out of memory\n");
		return EXIT_DAEMON;
	}
	json_object_foreach((json_t *)obj, key, v)
	{
		keys[i++] = key;
		if (text_width(key) > w)
			w = text_width(key);
	}
	qsort(keys, n, sizeof(*keys), cmp_str);
	for (i = 0; i < n; i++) {
		char k[CELL_MAX], val[CELL_MAX];

		snprintf(k, sizeof(k), "%s", keys[i]);
		sanitize(k);
		fmt_json(val, sizeof(val), json_object_get(obj, keys[i]));
		sanitize(val);
		printf("%s:%*s %s\n", k, (int)(w - text_width(k)), "", val);
	}
	return EXIT_OK;
}

static int print_pretty_json(const json_t *v)
{
	if (json_dumpf(v, stdout, JSON_INDENT(2) | JSON_ENCODE_ANY) < 0) {
		fprintf(stderr, "loomctl: cannot print the result\n");
		return EXIT_DAEMON;
	}
	putchar('\n');
	return EXIT_OK;
}

/* ---- calling the daemon --------------------------------------------------------------- */

static int exit_status_of(int r)
{
	switch (-r) {
	case ENOENT:
	case ECONNREFUSED:
	case EACCES:
	case EPERM:
	case ENOTSOCK:
	case ENAMETOOLONG:
	case ETIMEDOUT:
	case ECONNRESET:
	case EPIPE:
		return EXIT_UNREACHABLE;
	default:
		return EXIT_DAEMON;
	}
}

typedef int (*printer_fn)(const struct ctl *ctl, const json_t *result, const char *cmd);

/*
 * Calls cmd with args on the daemon and prints the result with print (or as
 * JSON with --json). Returns the exit status; errors go to stderr.
 */
static int ctl_run(const struct ctl *ctl, const char *cmd, int argc, const char *const *argv,
		   printer_fn print)
{
	struct loom_err err = {{0}};
	json_t *result = NULL;
	int r;

	r = loom_admin_call(ctl->socket, cmd, argc, argv, ctl->timeout_ms, &result, &err);
	if (r < 0) {
		fprintf(stderr, "loomctl: %s\n", loom_err_str(&err));
		return exit_status_of(r);
	}
	if (ctl->json || !print)
		r = print_pretty_json(result);
	else
		r = print(ctl, result, cmd);
	json_decref(result);
	if (fflush(stdout) != 0 && r == EXIT_OK) {
		fprintf(stderr, "loomctl: cannot write the output: %s\n", strerror(errno));
		r = EXIT_DAEMON;
	}
	return r;
}

static int unexpected(const char *cmd, const char *what)
{
	fprintf(stderr, "loomctl: unexpected reply to '%s': expected %s\n", cmd, what);
	return EXIT_DAEMON;
}

/* Checks that arg is a non-negative integer id; prints a usage error otherwise. */
static bool id_arg_valid(const char *arg, const char *what)
{
	unsigned long long v;

	if (loom_parse_u64(arg, &v) == 0)
		return true;
	fprintf(stderr, "loomctl: invalid %s '%s': expected a non-negative integer\n", what, arg);
	return false;
}

/* ---- subcommands ---------------------------------------------------------------------- */

static int print_status(const struct ctl *ctl, const json_t *res, const char *cmd)
{
	static const struct field fields[] = {
		{"version", "version", FMT_STR},
		{"uptime", "uptime_s", FMT_SECONDS},
		{"policy", "policy", FMT_STR},
		{"classes", "classes", FMT_INT},
		{"tick", "tick_ms", FMT_MS},
		{"jobs", "jobs", FMT_INT},
		{"jobs done", "jobs_done", FMT_INT},
		{"coflows", "coflows", FMT_INT},
		{"coflows active", "coflows_active", FMT_INT},
		{"flows", "flows", FMT_INT},
		{"agents", "agents", FMT_INT},
		{"frameworks", "frameworks", FMT_INT},
		{"decisions", "decisions", FMT_INT},
		{"decision p50", "decision_p50_us", FMT_US},
		{"decision p99", "decision_p99_us", FMT_US},
		{"push p50", "push_p50_us", FMT_US},
		{"push p99", "push_p99_us", FMT_US},
		{"journal", "journal", FMT_STR},
		{"memory (rss)", "rss_bytes", FMT_BYTES},
	};

	if (!json_is_object(res))
		return unexpected(cmd, "an object");
	print_fields(res, fields, ARRAY_SIZE(fields));
	return EXIT_OK;
}

static int cmd_status(const struct ctl *ctl, int argc, char **argv)
{
	return ctl_run(ctl, "stats", 0, NULL, print_status);
}

static int print_stats(const struct ctl *ctl, const json_t *res, const char *cmd)
{
	if (!json_is_object(res))
		return unexpected(cmd, "an object");
	return print_all_keys(res);
}

static int cmd_stats(const struct ctl *ctl, int argc, char **argv)
{
	return ctl_run(ctl, "stats", 0, NULL, print_stats);
}

static int print_jobs(const struct ctl *ctl, const json_t *res, const char *cmd)
{
	static const struct column cols[] = {
		{"ID", "id", FMT_INT, true},           {"NAME", "name", FMT_STR, false},
		{"WEIGHT", "weight", FMT_NUM, true},   {"STATE", "state", FMT_STR, false},
		{"COFLOWS", "coflows", FMT_INT, true}, {"DONE", "coflows_done", FMT_INT, true},
		{"FLOWS", "flows", FMT_INT, true},     {"SENT", "bytes_sent", FMT_BYTES, true},
		{"AGE", "age_s", FMT_SECONDS, true},
	};

	if (!json_is_array(res))
		return unexpected(cmd, "an array");
	return print_table(res, cols, ARRAY_SIZE(cols), "no jobs");
}

static int cmd_jobs(const struct ctl *ctl, int argc, char **argv)
{
	return ctl_run(ctl, "jobs", 0, NULL, print_jobs);
}

static int print_coflows(const struct ctl *ctl, const json_t *res, const char *cmd)
{
	static const struct column cols[] = {
		{"ID", "id", FMT_INT, true},
		{"JOB", "job", FMT_INT, true},
		{"STATE", "state", FMT_STR, false},
		{"RANK", "rank", FMT_RANK, true},
		{"FLOWS", "flows", FMT_INT, true},
		{"DONE", "flows_done", FMT_INT, true},
		{"SENT", "bytes_sent", FMT_BYTES, true},
		{"EXPECTED", "bytes_expected", FMT_BYTES_0, true},
		{"OPEN", "open", FMT_BOOL, false},
	};

	if (!json_is_array(res))
		return unexpected(cmd, "an array");
	return print_table(res, cols, ARRAY_SIZE(cols), "no coflows");
}

static int cmd_coflows(const struct ctl *ctl, int argc, char **argv)
{
	if (argc > 1 && !id_arg_valid(argv[1], "job id"))
		return EXIT_USAGE;
	return ctl_run(ctl, "coflows", argc - 1, (const char *const *)argv + 1, print_coflows);
}

static int print_agents(const struct ctl *ctl, const json_t *res, const char *cmd)
{
	static const struct column cols[] = {
		{"HOST", "host", FMT_INT, true},
		{"NAME", "name", FMT_STR, false},
		{"PEER", "peer", FMT_STR, false},
		{"ENFORCER", "enforcer", FMT_STR, false},
		{"CLASSES", "classes", FMT_INT, true},
		{"TABLE", "table_version", FMT_VERSION, true},
		{"ACKED", "acked_version", FMT_VERSION, true},
		{"FLOWS", "flows", FMT_INT, true},
		{"CONNECTED", "connected_s", FMT_SECONDS, true},
		{"UNKNOWN", "unknown_flows", FMT_INT, true},
	};

	if (!json_is_array(res))
		return unexpected(cmd, "an array");
	return print_table(res, cols, ARRAY_SIZE(cols), "no agents");
}

static int cmd_agents(const struct ctl *ctl, int argc, char **argv)
{
	return ctl_run(ctl, "agents", 0, NULL, print_agents);
}

static int print_unknown(const struct ctl *ctl, const json_t *res, const char *cmd)
{
	static const struct column cols[] = {
		{"HOST", "host", FMT_INT, true},
		{"FLOW", "tuple", FMT_STR, false},
		{"BYTES", "bytes", FMT_BYTES, true},
		{"FIRST SEEN", "first_seen_s", FMT_SECONDS, true},
		{"LAST SEEN", "last_seen_s", FMT_SECONDS, true},
	};

	if (!json_is_array(res))
		return unexpected(cmd, "an array");
	return print_table(res, cols, ARRAY_SIZE(cols), "no unknown flows");
}

static int cmd_unknown(const struct ctl *ctl, int argc, char **argv)
{
	if (argc > 1 && !id_arg_valid(argv[1], "host id"))
		return EXIT_USAGE;
	return ctl_run(ctl, "unknown", argc - 1, (const char *const *)argv + 1, print_unknown);
}

static int print_priorities(const struct ctl *ctl, const json_t *res, const char *cmd)
{
	static const struct column all_cols[] = {
		{"RANK", "rank", FMT_RANK, true},  {"COFLOW", "coflow", FMT_INT, true},
		{"JOB", "job", FMT_INT, true},     {"CLASS", "class", FMT_INT, true},
		{"HOSTS", "hosts", FMT_INT, true},
	};
	static const struct column host_cols[] = {
		{"COFLOW", "coflow", FMT_INT, true},
		{"CLASS", "class", FMT_INT, true},
	};
	const json_t *classes;
	char host[CELL_MAX];

	if (json_is_array(res))
		return print_table(res, all_cols, ARRAY_SIZE(all_cols), "no coflows scheduled");
	classes = json_object_get(res, "classes");
	if (!json_is_object(res) || !json_is_array(classes))
		return unexpected(cmd, "an array, or an object with \"classes\"");
	fmt_value(host, sizeof(host), json_object_get(res, "host"), FMT_INT);
	printf("host %s\n", host);
	return print_table(classes, host_cols, ARRAY_SIZE(host_cols), "no coflows on this host");
}

static int cmd_priorities(const struct ctl *ctl, int argc, char **argv)
{
	if (argc > 1 && !id_arg_valid(argv[1], "host id"))
		return EXIT_USAGE;
	return ctl_run(ctl, "priorities", argc - 1, (const char *const *)argv + 1,
		       print_priorities);
}

static int print_policy(const struct ctl *ctl, const json_t *res, const char *cmd)
{
	char cur[CELL_MAX], prev[CELL_MAX];

	if (!json_is_object(res))
		return unexpected(cmd, "an object");
	fmt_value(cur, sizeof(cur), json_object_get(res, "policy"), FMT_STR);
	if (json_object_get(res, "previous")) {
		fmt_value(prev, sizeof(prev), json_object_get(res, "previous"), FMT_STR);
		printf("policy: %s (was %s)\n", cur, prev);
	} else {
		printf("policy: %s\n", cur);
	}
	return EXIT_OK;
}

static int print_policies(const struct ctl *ctl, const json_t *res, const char *cmd)
{
	static const struct column cols[] = {
		{"NAME", "name", FMT_STR, false},
		{"SUMMARY", "summary", FMT_STR, false},
	};

	if (!json_is_array(res))
		return unexpected(cmd, "an array");
	return print_table(res, cols, ARRAY_SIZE(cols), "no policies");
}

static void policy_usage(FILE *f)
{
	fprintf(f, "Usage: loomctl policy get\n"
		   "       loomctl policy set SPEC\n"
		   "       loomctl policy list\n");
}

static int cmd_policy(const struct ctl *ctl, int argc, char **argv)
{
	const char *verb = argc > 1 ? argv[1] : "get";

	if (!strcmp(verb, "get") && argc <= 2)
		return ctl_run(ctl, "policy", 0, NULL, print_policy);
	if (!strcmp(verb, "list") && argc == 2)
		return ctl_run(ctl, "policies", 0, NULL, print_policies);
	if (!strcmp(verb, "set") && argc == 3)
		return ctl_run(ctl, "set-policy", 1, (const char *const *)argv + 2, print_policy);
	if (strcmp(verb, "get") && strcmp(verb, "set") && strcmp(verb, "list"))
		fprintf(stderr, "loomctl: unknown policy command '%s'\n", verb);
	else
		fprintf(stderr, "loomctl: wrong number of arguments for 'policy %s'\n", verb);
	policy_usage(stderr);
	return EXIT_USAGE;
}

static int print_log_level(const struct ctl *ctl, const json_t *res, const char *cmd)
{
	char level[CELL_MAX];

	if (!json_is_object(res))
		return unexpected(cmd, "an object");
	fmt_value(level, sizeof(level), json_object_get(res, "level"), FMT_STR);
	printf("log level: %s\n", level);
	return EXIT_OK;
}

static int cmd_log_level(const struct ctl *ctl, int argc, char **argv)
{
	enum loom_log_level level;

	if (loom_log_level_parse(argv[1], &level) < 0) {
		fprintf(stderr, "loomctl: unknown log level '%s' (err, warn, info, debug)\n",
			argv[1]);
		return EXIT_USAGE;
	}
	return ctl_run(ctl, "set-log-level", 1, (const char *const *)argv + 1, print_log_level);
}

static int cmd_dump(const struct ctl *ctl, int argc, char **argv)
{
	return ctl_run(ctl, "dump", 0, NULL, NULL);
}

static int cmd_job(const struct ctl *ctl, int argc, char **argv)
{
	if (!id_arg_valid(argv[1], "job id"))
		return EXIT_USAGE;
	return ctl_run(ctl, "job", 1, (const char *const *)argv + 1, NULL);
}

static int print_web_token(const struct ctl *ctl, const json_t *res, const char *cmd)
{
	char token[CELL_MAX];

	(void)ctl;
	if (!json_is_object(res) || !json_is_string(json_object_get(res, "token")))
		return unexpected(cmd, "an object with a token");
	fmt_value(token, sizeof(token), json_object_get(res, "token"), FMT_STR);
	printf("%s\n", token);
	return EXIT_OK;
}

static int cmd_web_token(const struct ctl *ctl, int argc, char **argv)
{
	return ctl_run(ctl, "web-token", 0, NULL, print_web_token);
}

static int cmd_help(const struct ctl *ctl, int argc, char **argv);

static const struct subcommand subcommands[] = {
	{"status", "", "summary of the daemon: policy, counts, latencies", 0, 0, cmd_status},
	{"jobs", "", "list the jobs", 0, 0, cmd_jobs},
	{"coflows", "[JOB]", "list the coflows (of one job)", 0, 1, cmd_coflows},
	{"agents", "", "list the connected agents", 0, 0, cmd_agents},
	{"unknown", "[HOST]", "flows agents saw that no framework announced", 0, 1, cmd_unknown},
	{"priorities", "[HOST]", "the current coflow order (or one host's classes)", 0, 1,
	 cmd_priorities},
	{"policy", "get | set SPEC | list", "show, change or list scheduling policies", 0, 2,
	 cmd_policy},
	{"stats", "", "every counter of the daemon, as key: value", 0, 0, cmd_stats},
	{"log-level", "LEVEL", "set the daemon's log level (err, warn, info, debug)", 1, 1,
	 cmd_log_level},
	{"dump", "", "the daemon's whole state as JSON", 0, 0, cmd_dump},
	{"job", "JOB", "one job with its coflows and edges (its DAG), as JSON", 1, 1, cmd_job},
	{"web-token", "", "the web UI's admin token (for switching the policy there)", 0, 0,
	 cmd_web_token},
	{"help", "[COMMAND]", "show this help, or a command's", 0, 1, cmd_help},
};

static const struct subcommand *subcommand_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(subcommands); i++)
		if (!strcmp(subcommands[i].name, name))
			return &subcommands[i];
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: loomctl [OPTIONS] COMMAND [ARGS]\n"
		"\n"
		"Talks to loomd over its admin socket.\n"
		"\n"
		"Options:\n"
		"  -s, --socket PATH   admin socket (default: $LOOMD_ADMIN, else %s)\n"
		"  -j, --json          print the daemon's result as JSON\n"
		"  -t, --timeout MS    give up after MS milliseconds (default %d)\n"
		"  -h, --help          show this help\n"
		"  -V, --version       show the version\n"
		"\n"
		"Commands:\n",
		DEFAULT_SOCKET, DEFAULT_TIMEOUT_MS);
	for (size_t i = 0; i < ARRAY_SIZE(subcommands); i++) {
		char head[64];

		snprintf(head, sizeof(head), "%s %s", subcommands[i].name, subcommands[i].args);
		fprintf(f, "  %-32s %s\n", head, subcommands[i].help);
	}
	fprintf(f, "\nExit status: 0 ok, 1 daemon error, 2 usage error, 3 daemon unreachable.\n");
}

static void subcommand_usage(FILE *f, const struct subcommand *sc)
{
	if (!strcmp(sc->name, "policy")) {
		policy_usage(f);
	} else {
		fprintf(f, "Usage: loomctl %s%s%s\n", sc->name, sc->args[0] ? " " : "", sc->args);
	}
	fprintf(f, "%s\n", sc->help);
}

static int cmd_help(const struct ctl *ctl, int argc, char **argv)
{
	const struct subcommand *sc;

	if (argc < 2) {
		usage(stdout);
		return EXIT_OK;
	}
	sc = subcommand_find(argv[1]);
	if (!sc) {
		fprintf(stderr, "loomctl: unknown command '%s'\n", argv[1]);
		usage(stderr);
		return EXIT_USAGE;
	}
	subcommand_usage(stdout, sc);
	return EXIT_OK;
}

/* ---- main ----------------------------------------------------------------------------- */

/* Matches "--name", "--name=VALUE" or short form "-c"; sets *ret_value for =VALUE. */
static bool opt_match(const char *arg, const char *lng, char shrt, const char **ret_value)
{
	size_t n = strlen(lng);

	*ret_value = NULL;
	if (arg[1] == shrt && arg[2] == '\0')
		return true;
	if (arg[1] != '-' || strncmp(arg + 2, lng, n) != 0)
		return false;
	if (arg[2 + n] == '\0')
		return true;
	if (arg[2 + n] == '=') {
		*ret_value = arg + 3 + n;
		return true;
	}
	return false;
}

int main(int argc, char **argv)
{
	struct ctl ctl = {.timeout_ms = DEFAULT_TIMEOUT_MS};
	_cleanup_free_ char **pos = calloc((size_t)argc + 1, sizeof(*pos));
	const struct subcommand *sc;
	bool help = false, opts_done = false;
	int npos = 0;

	if (!pos) {
		fprintf(stderr, "loomctl: out of memory\n");
		return EXIT_DAEMON;
	}
	ctl.socket = getenv("LOOMD_ADMIN");
	if (!ctl.socket || !ctl.socket[0])
		ctl.socket = DEFAULT_SOCKET;

	/* Options may come before or after the command; "--" ends them. */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val;

		if (opts_done || a[0] != '-' || a[1] == '\0') {
			pos[npos++] = argv[i];
		} else if (!strcmp(a, "--")) {
			opts_done = true;
		} else if (opt_match(a, "json", 'j', &val) && !val) {
			ctl.json = true;
		} else if (opt_match(a, "help", 'h', &val) && !val) {
			help = true;
		} else if (opt_match(a, "version", 'V', &val) && !val) {
			printf("loomctl %s\n", LOOM_VERSION);
			return EXIT_OK;
		} else if (opt_match(a, "socket", 's', &val) ||
			   opt_match(a, "timeout", 't', &val)) {
			bool is_socket = a[1] == 's' || !strncmp(a, "--socket", 8);
			unsigned long long ms;

			if (!val) {
				if (i + 1 >= argc) {
					fprintf(stderr, "loomctl: option '%s' needs a value\n", a);
					usage(stderr);
					return EXIT_USAGE;
				}
				val = argv[++i];
			}
			if (is_socket) {
				if (!val[0]) {
					fprintf(stderr, "loomctl: empty socket path\n");
					return EXIT_USAGE;
				}
				ctl.socket = val;
			} else if (loom_parse_u64(val, &ms) < 0 || ms == 0 || ms > INT32_MAX) {
				fprintf(stderr,
					"loomctl: invalid timeout '%s': expected milliseconds > 0\n",
					val);
				return EXIT_USAGE;
			} else {
				ctl.timeout_ms = (int)ms;
			}
		} else {
			fprintf(stderr, "loomctl: unknown option '%s'\n", a);
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (npos == 0) {
		if (help) {
			usage(stdout);
			return EXIT_OK;
		}
		fprintf(stderr, "loomctl: no command given\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	sc = subcommand_find(pos[0]);
	if (!sc) {
		fprintf(stderr, "loomctl: unknown command '%s'\n", pos[0]);
		usage(stderr);
		return EXIT_USAGE;
	}
	if (help) {
		subcommand_usage(stdout, sc);
		return EXIT_OK;
	}
	if (npos - 1 < sc->min_args || npos - 1 > sc->max_args) {
		fprintf(stderr, "loomctl: wrong number of arguments for '%s'\n", sc->name);
		subcommand_usage(stderr, sc);
		return EXIT_USAGE;
	}
	return sc->fn(&ctl, npos, pos);
}
