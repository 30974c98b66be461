/* SPDX-License-Identifier: BSD-3-Clause */
/* Fuzz target: the Sincronia per-flow trace reader (see fuzz_trace.h). */
#include "tests/fuzz/fuzz_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_trace_one(data, size, SIM_TRACE_SINCRONIA);
}
