/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The null enforcer: enforces nothing, keeps the last snapshot and counts
 * what it was given. For tests, and for running the agent's session alone.
 * Its one argument, counters=SIZE, makes it report at each collect that
 * every flow of its table sent SIZE bytes since the last one (no argument:
 * it reports nothing), so that the agent's statistics path can be driven
 * without packets.
 */
#include "dataplane/agent.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"

struct null_enf {
	struct dp_snapshot *snap;
	uint64_t applied;
	uint64_t counter_bytes; /* counters=: bytes reported per flow per collect */
};

static int null_init(struct dp_enforcer *e, const char *args, uint32_t classes,
		     struct loom_err *err)
{
	struct null_enf *n;
	struct loom_err perr = {{0}};
	uint64_t bytes = 0;

	(void)classes;
	if (args && args[0]) {
		if (strncmp(args, "counters=", 9) != 0)
			return loom_err_set(err, EINVAL,
					    "the null enforcer takes only counters=SIZE (got '%s')",
					    args);
		if (loom_units_size(args + 9, 0, &bytes, NULL, &perr) < 0)
			return loom_err_set(err, EINVAL, "null enforcer: counters: %s", perr.msg);
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return loom_err_set(err, ENOMEM, "out of memory");
	n->counter_bytes = bytes;
	e->priv = n;
	return 0;
}

static void null_done(struct dp_enforcer *e)
{
	struct null_enf *n = e->priv;

	if (!n)
		return;
	dp_snapshot_free(n->snap);
	free(n);
	e->priv = NULL;
}

static int null_apply(struct dp_enforcer *e, struct dp_snapshot *snap)
{
	struct null_enf *n = e->priv;

	dp_snapshot_free(n->snap);
	n->snap = snap;
	n->applied++;
	return 0;
}

static void null_collect(struct dp_enforcer *e, dp_counter_fn fn, void *ctx)
{
	struct null_enf *n = e->priv;

	if (!n->counter_bytes || !n->snap)
		return;
	for (size_t i = 0; i < n->snap->n; i++)
		fn(ctx, &n->snap->flows[i].tuple, n->counter_bytes, false);
}

static void null_stats(struct dp_enforcer *e, void (*fn)(void *ctx, const char *name, uint64_t v),
		       void *ctx)
{
	struct null_enf *n = e->priv;

	fn(ctx, "snapshots_applied", n->applied);
	fn(ctx, "flows_enforced", n->snap ? n->snap->n : 0);
}

const struct dp_enforcer_class dp_enforcer_null = {
	.name = "null",
	.summary = "records the table, enforces nothing (tests, dry runs)",
	.init = null_init,
	.done = null_done,
	.apply = null_apply,
	.collect = null_collect,
	.stats = null_stats,
};
