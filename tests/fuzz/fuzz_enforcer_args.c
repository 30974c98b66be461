/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for the enforcers' --enforcer-args parsers, those built:
 *
 *  - tc (LOOM_HAVE_TC): the whole input, as a C string, for
 *    dp_tc_args_parse() (dataplane/enforcer_tc.h);
 *  - dpdk (LOOM_HAVE_DPDK): what follows the first "--" word of the input
 *    (all of it when there is none), as init would pass it, for
 *    dp_dpdk_opts_parse() (dataplane/dpdk/enforcer_dpdk.h). No EAL is started.
 *
 * A refusal must be -EINVAL (or -ENOMEM) with a message naming the enforcer,
 * and leave *ret untouched. Accepted arguments must hold what the enforcer's
 * header says (every DSCP below 64, classes and sizes in range), and,
 * written back as OPTION=VALUE words, parse to the same values. Anything
 * else (crash, sanitizer report, leak, abort) is a bug.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#ifdef LOOM_HAVE_TC
#include "dataplane/enforcer_tc.h"
#endif
#ifdef LOOM_HAVE_DPDK
#include "dataplane/dpdk/enforcer_dpdk.h"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Room for any accepted arguments written back (each option once, the longest values). */
#define OUT_MAX 1024

static void check_refusal(int r, const struct loom_err *err, const char *who)
{
	if ((r != -EINVAL && r != -ENOMEM) || err->msg[0] == '\0')
		abort();
	if (r == -EINVAL && strncmp(err->msg, who, strlen(who)) != 0)
		abort();
}

#ifdef LOOM_HAVE_TC
static void tc_write(const struct tcf_args *a, char *out, size_t cap)
{
	size_t n = 0;

	out[0] = '\0';
	if (a->iface[0])
		n += (size_t)snprintf(out + n, cap - n, "iface=%s ", a->iface);
	if (a->rate_bps)
		n += (size_t)snprintf(out + n, cap - n, "rate=%llu ",
				      (unsigned long long)a->rate_bps);
	if (!a->rewrite_dscp) {
		n += (size_t)snprintf(out + n, cap - n, "dscp=none ");
	} else {
		n += (size_t)snprintf(out + n, cap - n, "dscp=");
		for (unsigned int k = 0; k < LOOM_TC_MAX_CLASSES; k++)
			n += (size_t)snprintf(out + n, cap - n, "%s%u:%u", k ? "," : "", k,
					      a->dscp.dscp[k]);
		n += (size_t)snprintf(out + n, cap - n, " ");
	}
	if (a->default_class >= 0)
		n += (size_t)snprintf(out + n, cap - n, "%s=%ld ",
				      a->pin_default ? "unknown" : "default", a->default_class);
	if (a->small_bytes)
		n += (size_t)snprintf(out + n, cap - n, "small=%u", a->small_bytes);
	if (n >= cap)
		abort();
}

static bool tc_same(const struct tcf_args *a, const struct tcf_args *b)
{
	/* with dscp=none the map is whatever it was: not written back */
	return !strcmp(a->iface, b->iface) && a->rate_bps == b->rate_bps &&
	       a->rewrite_dscp == b->rewrite_dscp && a->default_class == b->default_class &&
	       a->small_bytes == b->small_bytes && a->pin_default == b->pin_default &&
	       (!a->rewrite_dscp || !memcmp(&a->dscp, &b->dscp, sizeof(a->dscp)));
}

static void fuzz_tc(const char *args)
{
	struct tcf_args a, untouched, again;
	struct loom_err err = {{0}};
	char out[OUT_MAX];
	int r;

	memset(&a, 0xa5, sizeof(a));
	untouched = a;
	r = dp_tc_args_parse(args, &a, &err);
	if (r < 0) {
		check_refusal(r, &err, "tc enforcer: ");
		if (memcmp(&a, &untouched, sizeof(a)) != 0)
			abort();
		return;
	}
	if (r != 0 || !memchr(a.iface, 0, sizeof(a.iface)))
		abort();
	if (a.default_class < -1 || a.default_class >= LOOM_TC_MAX_CLASSES || a.small_bytes > 65535)
		abort();
	for (unsigned int k = 0; k < LOOM_TC_MAX_CLASSES; k++)
		if (a.dscp.dscp[k] >= 64)
			abort();
	tc_write(&a, out, sizeof(out));
	if (dp_tc_args_parse(out, &again, &err) != 0 || !tc_same(&a, &again))
		abort();
}
#endif

#ifdef LOOM_HAVE_DPDK
static void dpdk_write(const struct dp_dpdk_opts *o, char *out, size_t cap)
{
	static const char *const modes[] = {"auto", "on", "off"};
	size_t n;

	n = (size_t)snprintf(
		out, cap,
		"rx=%u tx=%u rate=%llu bucket=%llu burst=%u qsize=%u offload=%s bump=%s idle=%u dscp=",
		o->rx_port, o->tx_port, (unsigned long long)o->rate_bps,
		(unsigned long long)o->bucket_bytes, o->burst, o->qsize, modes[o->offload_mode],
		o->bump ? "on" : "off", o->idle_us);
	for (unsigned int k = 0; k < DP_DPDK_MAX_CLASSES && n < cap; k++)
		n += (size_t)snprintf(out + n, cap - n, "%s%u:%u", k ? "," : "", k,
				      o->dscp.dscp[k]);
	if (n >= cap)
		abort();
}

static bool dpdk_same(const struct dp_dpdk_opts *a, const struct dp_dpdk_opts *b)
{
	return a->rx_port == b->rx_port && a->tx_port == b->tx_port && a->rate_bps == b->rate_bps &&
	       a->bucket_bytes == b->bucket_bytes && a->burst == b->burst && a->qsize == b->qsize &&
	       a->offload_mode == b->offload_mode && a->bump == b->bump &&
	       a->idle_us == b->idle_us && !memcmp(&a->dscp, &b->dscp, sizeof(a->dscp));
}

/* What init passes to dp_dpdk_opts_parse: the text after the first "--" word, or NULL. */
static const char *after_separator(const char *args)
{
	const char *p = args;

	for (;;) {
		size_t n;

		p += strspn(p, " \t\n");
		if (!*p)
			return NULL;
		n = strcspn(p, " \t\n");
		if (n == 2 && p[0] == '-' && p[1] == '-')
			return p + 2;
		p += n;
	}
}

static void fuzz_dpdk(const char *args)
{
	struct dp_dpdk_opts o, untouched, again;
	struct loom_err err = {{0}};
	const char *opts = after_separator(args);
	char out[OUT_MAX];
	int r;

	memset(&o, 0xa5, sizeof(o));
	untouched = o;
	r = dp_dpdk_opts_parse(opts ? opts : args, &o, &err);
	if (r < 0) {
		check_refusal(r, &err, "dpdk enforcer: ");
		if (memcmp(&o, &untouched, sizeof(o)) != 0)
			abort();
		return;
	}
	if (r != 0 || o.burst < 1 || o.burst > 256 || o.qsize < 1 || o.qsize > (1u << 20) ||
	    o.bucket_bytes > UINT32_MAX || o.idle_us > 1000)
		abort();
	if (o.offload_mode != DP_DPDK_OFFLOAD_AUTO && o.offload_mode != DP_DPDK_OFFLOAD_ON &&
	    o.offload_mode != DP_DPDK_OFFLOAD_OFF)
		abort();
	for (unsigned int k = 0; k < DP_DPDK_MAX_CLASSES; k++)
		if (o.dscp.dscp[k] >= 64)
			abort();
	dpdk_write(&o, out, sizeof(out));
	if (dp_dpdk_opts_parse(out, &again, &err) != 0 || !dpdk_same(&o, &again))
		abort();
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *args = malloc(size + 1);

	if (!args)
		return 0;
	memcpy(args, data, size);
	args[size] = '\0'; /* the parsers take C strings: a NUL ends the input */
#ifdef LOOM_HAVE_TC
	fuzz_tc(args);
#endif
#ifdef LOOM_HAVE_DPDK
	fuzz_dpdk(args);
#endif
	free(args);
	return 0;
}
