/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The null enforcer: enforces nothing, keeps the last snapshot and counts
 * what it was given. For tests, and for running the agent's session alone.
 */
#include "dataplane/agent.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct null_enf {
	struct dp_snapshot *snap;
	uint64_t applied;
};

static int null_init(struct dp_enforcer *e, const char *args, uint32_t classes,
		     struct loom_err *err)
{
	(void)classes;
	if (args && args[0])
		return loom_err_set(err, EINVAL, "the null enforcer takes no arguments (got '%s')",
				    args);
	e->priv = calloc(1, sizeof(struct null_enf));
	return e->priv ? 0 : loom_err_set(err, ENOMEM, "out of memory");
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
	(void)e;
	(void)fn;
	(void)ctx;
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
