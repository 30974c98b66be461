/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * controlplane/loomd/admin_cmds: loomd's admin socket commands (registered
 * on the server's struct loom_admin) and the Prometheus text of /metrics,
 * both read from the server's state on the loop thread.
 */
#ifndef LOOM_CONTROLPLANE_LOOMD_ADMIN_CMDS_H
#define LOOM_CONTROLPLANE_LOOMD_ADMIN_CMDS_H

#include "controlplane/loomd/metrics.h"
#include "controlplane/loomd/server.h"

#include <jansson.h>

/* admin_cmds.c */
int loomd_admin_register_all(struct loomd_server *s);
/*
 * Runs admin command name (as registered; loop thread) without the socket:
 * the web UI's API (webui.h). 0 with *ret (caller decrefs), or -errno with
 * err (-ENOENT: also no such command).
 */
int loomd_admin_call(struct loomd_server *s, const char *name, int argc, const char *const *argv,
		     json_t **ret, struct loom_err *err);
/* Renders the Prometheus text for /metrics into p. */
void loomd_metrics_render(struct loomd_server *s, struct loomd_prom *p);

#endif
