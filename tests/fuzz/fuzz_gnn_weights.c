/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for the gnn weights-file parser (gnn/io.c). Every input must
 * either load into a model whose shape is valid and whose parameter count
 * matches the input's size (with the header of its version: 1 without a
 * residual prior, 2 with one), or be rejected with errno and a message that
 * starts with the name given; anything else (crash, sanitizer report,
 * abort) is a bug. Each input is tried twice: as it is, and with its trailing
 * FNV-1a checksum recomputed, so mutations reach the checks behind the
 * checksum (version, shape, sizes, values).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gnn/gnn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void try_load(const uint8_t *data, size_t size)
{
	struct gnn_err err = {{0}};
	struct gnn_model *m;
	struct gnn_param p;

	errno = 0;
	m = gnn_model_load_mem(data, size, "fuzz", "naive", &err);
	if (!m) {
		if (errno == 0 || err.msg[0] == '\0' || strncmp(err.msg, "fuzz", 4) != 0)
			abort();
		return;
	}
	/* version 1 (no prior): a 44-byte header; version 2 (a prior): 52 */
	if (size != (gnn_model_config(m)->prior ? 52 : 44) + 4 * gnn_nparams(m) + 8)
		abort();
	for (uint32_t t = 0; t < gnn_param_count(m); t++) {
		if (gnn_param_get(m, t, &p) != 0)
			abort();
		for (uint32_t i = 0; i < p.rows * p.cols; i++)
			if (!isfinite(p.value[i]))
				abort();
	}
	gnn_model_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	uint8_t *copy;

	try_load(data, size);
	if (size < 8)
		return 0;
	copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	for (size_t i = 0; i < size - 8; i++) {
		h ^= copy[i];
		h *= 0x100000001b3ULL;
	}
	for (int i = 0; i < 8; i++)
		copy[size - 8 + i] = (uint8_t)(h >> (8 * i));
	try_load(copy, size);
	free(copy);
	return 0;
}
