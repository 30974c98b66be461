/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The body shared by the trace-reader fuzz targets (fuzz_trace_*.c): any
 * input must either parse or be rejected with a "name:line: reason" message,
 * never crash or leak; a small model that parses must survive a Loom
 * write -> read -> write round trip byte for byte.
 */
#ifndef LOOM_TESTS_FUZZ_FUZZ_TRACE_H
#define LOOM_TESTS_FUZZ_FUZZ_TRACE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/sim/sim.h"

/* Writes m as Loom text into a fresh buffer (caller frees); NULL on failure. */
static char *to_loom(const struct cp_model *m, size_t *ret_len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, ret_len);

	if (!f)
		return NULL;
	if (sim_trace_write_loom(m, f) < 0) {
		fclose(f);
		free(text);
		return NULL;
	}
	fclose(f);
	return text;
}

/*
 * Parses data in format fmt: it must parse or be rejected with a "fuzz:" message;
 * a small model that parses must survive a Loom write -> read round trip unchanged.
 */
static int fuzz_trace_one(const uint8_t *data, size_t size, enum sim_trace_format fmt)
{
	struct loom_err err = {{0}};
	struct cp_model *m, *back;
	uint32_t nhosts = 0;
	char *text, *text2;
	size_t len = 0, len2 = 0;

	m = sim_trace_parse((const char *)data, size, "fuzz", fmt, &nhosts, &err);
	if (!m) {
		if (strncmp(err.msg, "fuzz:", 5) != 0)
			abort(); /* every rejection names the input and a line */
		return 0;
	}
	if (nhosts == 0 || m->nhosts != nhosts)
		abort();
	if (m->nflows > 20000) {
		cp_model_free(m);
		return 0;
	}
	text = to_loom(m, &len);
	if (!text)
		abort();
	back = sim_trace_parse(text, len, "fuzz-rt", SIM_TRACE_LOOM, NULL, &err);
	if (!back)
		abort();
	text2 = to_loom(back, &len2);
	if (!text2 || len != len2 || memcmp(text, text2, len) != 0)
		abort();
	free(text);
	free(text2);
	cp_model_free(back);
	cp_model_free(m);
	return 0;
}

#endif
