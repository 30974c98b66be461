/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for loomd's configuration (controlplane/loomd/config.c). The
 * input is used twice:
 *
 *  - as a config file (a memfd, fuzz_file.h) for loomd_config_load() over the
 *    defaults, then loomd_config_check() on what it loaded;
 *  - line by line, each split at its first '=' into KEY and VALUE taken as
 *    they are (no trimming, no quotes), for loomd_config_set() on one config,
 *    then loomd_config_check() on the result.
 *
 * A failing call must return one of the errors it documents and leave a
 * message (loomd_config_load's starting with the path); a refused
 * loomd_config_set() must leave the config as it was. A config that came out
 * of them must hold what the keys accept: strings NUL-terminated in their
 * fields, numbers inside their ranges, a log level that parses. Anything
 * else (crash, sanitizer report, leak, abort) is a bug.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "controlplane/loomd/config.h"
#include "tests/fuzz/fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HAS_NUL(f) (memchr((f), 0, sizeof(f)) != NULL)

static void check_config(const struct loomd_config *c)
{
	enum loom_log_level lvl;

	if (!HAS_NUL(c->listen_unix) || !HAS_NUL(c->listen_tcp) || !HAS_NUL(c->admin_socket) ||
	    !HAS_NUL(c->metrics) || !HAS_NUL(c->journal) || !HAS_NUL(c->policy) ||
	    !HAS_NUL(c->weights) || !HAS_NUL(c->topology) || !HAS_NUL(c->log_level) ||
	    !HAS_NUL(c->class_assign))
		abort();
	if (c->journal_sync < 0 || c->journal_sync > 2)
		abort();
	if (c->hosts < 2 || c->hosts > TOPO_MAX_HOSTS || c->link_bps < 1000 || c->classes < 1 ||
	    c->classes > 64)
		abort();
	if (c->tick_ns < LOOM_NS_PER_MS / 10 || c->tick_ns > 10 * LOOM_NS_PER_S ||
	    c->pass_gap_ns > LOOM_NS_PER_S)
		abort();
	if (c->max_frame < 1024 || c->max_frame > (1u << 30))
		abort();
	if (c->max_jobs < 1 || c->max_jobs > UINT32_MAX / 2 || c->max_coflows < 1 ||
	    c->max_coflows > UINT32_MAX / 2 || c->max_flows < 1 || c->max_flows > UINT32_MAX / 2)
		abort();
	if (c->max_connections < 1 || c->max_connections > 1000000)
		abort();
	if (c->unknown_flow_bytes < 1 || c->unknown_flow_bytes > (1ULL << 50))
		abort();
	if (loom_log_level_parse(c->log_level, &lvl) < 0)
		abort();
}

/* loomd_config_check() on c: 0, or -EINVAL with a message. */
static void check_check(const struct loomd_config *c)
{
	struct loom_err err = {{0}};
	int r = loomd_config_check(c, &err);

	if (r != 0 && (r != -EINVAL || err.msg[0] == '\0'))
		abort();
}

static void fuzz_load(const uint8_t *data, size_t size)
{
	struct loomd_config c;
	struct loom_err err = {{0}};
	const char *path = fuzz_file(data, size);
	int r;

	if (!path)
		return;
	loomd_config_default(&c);
	r = loomd_config_load(&c, path, &err);
	if (r < 0) {
		if ((r != -EINVAL && r != -ENOENT && r != -ERANGE && r != -EIO) ||
		    strncmp(err.msg, path, strlen(path)) != 0 || err.msg[strlen(path)] != ':')
			abort();
		return;
	}
	check_config(&c);
	check_check(&c);
}

static void fuzz_set(const uint8_t *data, size_t size)
{
	struct loomd_config *c = malloc(sizeof(*c)), *before = malloc(sizeof(*c));
	char *text = malloc(size + 1);
	char *line, *save = NULL;

	if (!c || !before || !text)
		abort();
	memcpy(text, data, size);
	text[size] = '\0'; /* the parser takes C strings: a NUL ends the input */
	loomd_config_default(c);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct loom_err err = {{0}};
		char *eq = strchr(line, '=');
		const char *value = "";
		int r;

		if (eq) {
			*eq = '\0';
			value = eq + 1;
		}
		memcpy(before, c, sizeof(*c));
		r = loomd_config_set(c, line, value, &err);
		if (r < 0) {
			if ((r != -ENOENT && r != -EINVAL && r != -ERANGE) || err.msg[0] == '\0')
				abort();
			if (memcmp(before, c, sizeof(*c)) != 0)
				abort(); /* a refused value changed the config */
		}
		check_config(c);
	}
	check_check(c);
	free(text);
	free(before);
	free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_load(data, size);
	fuzz_set(data, size);
	return 0;
}
