/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for the policy spec parser (controlplane/policy/policy.c,
 * "name[:key=value]..."). Every input either parses into a registered class
 * with each option inside its declared range (ENUM and BOOL values being an
 * index, INT values whole), or is rejected with ENOENT/EINVAL and a message;
 * anything else (crash, sanitizer report, abort) is a bug.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_options(const struct policy_class *cls, const double *opt)
{
	for (uint32_t i = 0; i < cls->nopts; i++) {
		const struct policy_opt_def *o = &cls->opts[i];
		double v = opt[i];
		size_t nchoices = 0;

		if (!isfinite(v))
			abort();
		switch (o->type) {
		case POLICY_OPT_INT:
			if (v != floor(v))
				abort();
			/* fall through */
		case POLICY_OPT_NUM:
			if (v < o->min || v > o->max)
				abort();
			break;
		case POLICY_OPT_BOOL:
			if (v != 0 && v != 1)
				abort();
			break;
		case POLICY_OPT_ENUM:
			while (o->choices[nchoices])
				nchoices++;
			if (v < 0 || v >= (double)nchoices || v != floor(v))
				abort();
			break;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct loom_err err = {{0}};
	const struct policy_class *cls = NULL;
	double opt[POLICY_MAX_OPTS];
	char *spec = malloc(size + 1);
	int r;

	if (!spec)
		return 0;
	memcpy(spec, data, size);
	spec[size] = '\0'; /* a spec is a C string: bytes after a NUL are not seen */
	r = policy_spec_parse(spec, &cls, opt, &err);
	if (r == 0) {
		if (!cls || policy_class_find(cls->name) != cls)
			abort();
		check_options(cls, opt);
	} else if ((r != -ENOENT && r != -EINVAL) || err.msg[0] == '\0') {
		abort();
	}
	free(spec);
	return 0;
}
