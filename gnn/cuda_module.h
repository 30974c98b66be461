/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The interface between libloom_gnn and the shared module that holds the
 * "cuda" backend (libloom_gnn_cuda.so, built from backend_cuda.cu and linked
 * against the CUDA runtime and cuBLAS). A program that never asks for "cuda"
 * never maps the module, cudart or cuBLAS: backend.c dlopen()s the module on
 * the first gnn_backend_find("cuda") or gnn_cuda_probe() of the process and
 * calls its one exported symbol, GNN_CUDA_MODULE_SYMBOL, a
 * gnn_cuda_module_fn. Not installed, not included outside gnn/.
 *
 * The module is built with the library and must come from the same build:
 * the descriptor carries an ABI number and the sizes of the structures the
 * two sides share, and the loader refuses a module whose values differ from
 * its own.
 */
#ifndef LOOM_GNN_CUDA_MODULE_H
#define LOOM_GNN_CUDA_MODULE_H

#include <stdint.h>

#include "gnn/gnn_impl.h"

/* Raise when the meaning of a shared structure changes but not its size. */
#define GNN_CUDA_MODULE_ABI 1u

/* The module's one exported symbol. */
#define GNN_CUDA_MODULE_SYMBOL "gnn_cuda_module_get"

/* Environment variable naming the module file to load instead of the built-in places. */
#define GNN_CUDA_MODULE_ENV "LOOM_GNN_CUDA_MODULE"

struct gnn_cuda_module {
	uint32_t abi;           /* GNN_CUDA_MODULE_ABI */
	uint32_t class_bytes;   /* sizeof(struct gnn_backend_class) */
	uint32_t kernels_bytes; /* sizeof(struct gnn_kernels) */
	uint32_t unit_bytes;    /* sizeof(struct gnn_unit) */
	uint32_t gemm_bytes;    /* sizeof(struct gnn_gemm) */
	uint32_t err_bytes;     /* sizeof(struct gnn_err) */
	/* the "cuda" backend; static in the module */
	const struct gnn_backend_class *backend;
	/* gnn_cuda_probe() once the module is loaded: 0, -ENODEV or -EIO with a message */
	int (*probe)(struct gnn_err *err);
};

#define GNN_CUDA_MODULE_INIT                                                                       \
	.abi = GNN_CUDA_MODULE_ABI, .class_bytes = sizeof(struct gnn_backend_class),               \
	.kernels_bytes = sizeof(struct gnn_kernels), .unit_bytes = sizeof(struct gnn_unit),        \
	.gemm_bytes = sizeof(struct gnn_gemm), .err_bytes = sizeof(struct gnn_err)

/* Returns the module's descriptor (static; never NULL). */
typedef const struct gnn_cuda_module *gnn_cuda_module_fn(void);

#endif
