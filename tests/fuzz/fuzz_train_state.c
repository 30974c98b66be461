/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for loom-train's trainer-state parser (learn_state_parse, the
 * checkpoint.state file --resume reads). Every input must either parse into
 * a state whose moment count matches its size, or be rejected with -EINVAL
 * and a message starting with the name given. Each input is tried as it is
 * and with its trailing FNV-1a checksum recomputed, so mutations reach the
 * checks behind the checksum.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controlplane/learn/learn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void try_parse(const uint8_t *data, size_t size)
{
	struct loom_err err = {{0}};
	struct learn_state s;
	int r = learn_state_parse(data, size, "fuzz", &s, &err);

	if (r < 0) {
		if (r != -EINVAL && r != -ENOMEM)
			abort();
		if (strncmp(err.msg, "fuzz", 4) != 0)
			abort();
		return;
	}
	if (size != 60 + 8 * s.n + 8 || !s.mom1 || !s.mom2 || s.threads == 0)
		abort();
	learn_state_done(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;
	uint64_t h = 0xcbf29ce484222325ULL;

	try_parse(data, size);
	if (size < 8)
		return 0;
	copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	for (size_t i = 0; i + 8 < size; i++)
		h = (h ^ copy[i]) * 0x100000001b3ULL;
	memcpy(copy + size - 8, &h, 8);
	try_parse(copy, size);
	free(copy);
	return 0;
}
