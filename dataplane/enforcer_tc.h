/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dataplane/enforcer_tc: the "tc" enforcer's --enforcer-args parser, apart
 * from the enforcer's init (which needs root) so that the fuzz target can
 * reach it. Internal to dataplane/: the enforcer itself is dp_enforcer_tc
 * (agent.h), and enforcer_tc.c says what each option means.
 *
 * A parsed struct tcf_args holds: iface NUL-terminated ("" when not given,
 * which init refuses); rate_bps 0 (not given: init asks the interface) or
 * positive; every dscp.dscp[] below 64; default_class -1 (not given) or below
 * LOOM_TC_MAX_CLASSES, pin_default true only with a default_class (the
 * last of default= and unknown= given wins); small_bytes 0 (off, the default) to 65535. Nothing is checked against the system (the
 * interface, the number of classes): init does that.
 */
#ifndef LOOM_DATAPLANE_ENFORCER_TC_H
#define LOOM_DATAPLANE_ENFORCER_TC_H

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/errors.h"
#include "dataplane/enforcer_args.h"
#include "ebpf/loom_tc.h"

struct tcf_args {
	char iface[IF_NAMESIZE];
	uint64_t rate_bps;
	bool rewrite_dscp;
	struct dp_dscp_map dscp; /* classes 0..LOOM_TC_MAX_CLASSES-1 */
	long default_class;      /* -1: the lowest */
	bool pin_default;        /* given as unknown=: kept whatever the tables say */
	uint32_t small_bytes;    /* 0: off; else unknown flows' packets up to this long: class 0 */
};

/*
 * Parses "iface=IF [rate=RATE] [dscp=MAP|none] [default=CLASS]" (options
 * split on whitespace, at most 16; args may be NULL) over the defaults into
 * *ret. Returns 0, or -EINVAL (-ENOMEM) with err naming the option; *ret is
 * written only on success.
 */
int dp_tc_args_parse(const char *args, struct tcf_args *ret, struct loom_err *err);

_Static_assert(LOOM_TC_MAX_CLASSES == DP_DSCP_CLASSES, "a DSCP map covers the tc classes");

#endif
