/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test helper of the loomd unit tests: assert_contains() for error
 * messages, and the fixture of the tests that drive a registry (and a
 * scheduler on it) without a server: an FX_HOSTS-host big switch and a
 * registry of 100 jobs, 1000 coflows and 1000 flows on it. Job specs are
 * jobspec.h's.
 */
#ifndef LOOM_TESTS_UNIT_LOOMD_FIXTURE_H
#define LOOM_TESTS_UNIT_LOOMD_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controlplane/loomd/registry.h"
#include "controlplane/loomd/sched.h"
#include "topo/topo.h"

#define FX_HOSTS 8

/* Fails the test unless hay contains needle. */
static inline void assert_contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("'%s' does not contain '%s'", hay, needle);
}

/*
 * Returns a registry on t (borrowed) with these limits and 1 MiB of bytes of
 * unknown flows; fails the test when it cannot be made.
 */
static inline struct loomd_registry *fx_registry_new(const struct topo *t, uint32_t max_jobs,
						     uint32_t max_coflows, uint32_t max_flows)
{
	struct loomd_registry_limits lim = {max_jobs, max_coflows, max_flows, 1u << 20};
	struct loomd_registry *r = loomd_registry_new(t, &lim);

	assert_non_null(r);
	return r;
}

/* The fixture's state: the fabric, the registry, a scheduler the test made (or NULL). */
struct fx {
	struct topo *t;
	struct loomd_registry *r;
	struct loomd_sched *s;
};

/* cmocka setup: a struct fx in *state with t and r made, s NULL. */
static inline int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	f->t = topo_new_bigswitch(FX_HOSTS, TOPO_DEFAULT_BPS);
	if (!f->t) {
		free(f);
		return -1;
	}
	f->r = fx_registry_new(f->t, 100, 1000, 1000);
	*state = f;
	return 0;
}

/* cmocka teardown: frees what fx_setup() and the test made. */
static inline int fx_teardown(void **state)
{
	struct fx *f = *state;

	loomd_sched_free(f->s);
	loomd_registry_free(f->r);
	topo_free(f->t);
	free(f);
	return 0;
}

#endif
