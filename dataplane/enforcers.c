/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The registry of enforcers. Its own file (and library, see meson.build) so
 * that it can name the DPDK enforcer, which is built after dataplane_lib and
 * only when DPDK is found (then with -DLOOM_HAVE_DPDK), and the tc enforcer,
 * built only with ebpf/ (then with -DLOOM_HAVE_BPF).
 */
#include "dataplane/agent.h"

#include <string.h>

static const struct dp_enforcer_class *const enforcers[] = {
	&dp_enforcer_null,
#ifdef LOOM_HAVE_DPDK
	&dp_enforcer_dpdk,
#endif
#ifdef LOOM_HAVE_BPF
	&dp_enforcer_tc,
#endif
};

const struct dp_enforcer_class *const *dp_enforcer_list(size_t *ret_n)
{
	*ret_n = sizeof(enforcers) / sizeof(enforcers[0]);
	return enforcers;
}

const struct dp_enforcer_class *dp_enforcer_find(const char *name)
{
	for (size_t i = 0; i < sizeof(enforcers) / sizeof(enforcers[0]); i++)
		if (name && !strcmp(enforcers[i]->name, name))
			return enforcers[i];
	return NULL;
}
