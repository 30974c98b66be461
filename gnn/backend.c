/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gnn backends on the CPU and the lookup of every backend by name (struct
 * gnn_backend_class, gnn.h): "cpu" runs every GEMM with CBLAS cblas_sgemm
 * (Debian's OpenBLAS, set to one thread), "naive" with a reference triple
 * loop that the tests compare against. Both use the element-wise kernels of
 * kernels.c and host memory. "cuda" is in backend_cuda.cu, built as a
 * shared module (cuda_module.h) that this file loads with dlopen() the
 * first time a process asks for "cuda", so that a program that never does
 * maps neither the module nor the CUDA runtime and cuBLAS it links.
 * Without BLAS at build time, "cpu" runs the naive GEMM and says so in its
 * info string.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef GNN_HAVE_CBLAS
#include <cblas.h>
#endif
#ifdef GNN_HAVE_CUDA
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>
#endif

#include "gnn/cuda_module.h"
#include "gnn/gnn_impl.h"

static void *cpu_alloc(void *ctx, size_t bytes)
{
	void *p = NULL;

	(void)ctx;
	bytes = (bytes + GNN_ALIGN - 1) / GNN_ALIGN * GNN_ALIGN;
	if (bytes == 0)
		bytes = GNN_ALIGN;
	if (posix_memalign(&p, GNN_ALIGN, bytes) != 0)
		return NULL;
	memset(p, 0, bytes);
	return p;
}

static void cpu_free(void *ctx, void *p)
{
	(void)ctx;
	free(p);
}

static void cpu_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
	(void)ctx;
	memcpy(dst, src, bytes);
}

static int noop_sync(void *ctx, struct gnn_err *err)
{
	(void)ctx;
	(void)err;
	return 0;
}

static int noop_init(void **ret_ctx, struct gnn_err *err)
{
	(void)err;
	*ret_ctx = NULL;
	return 0;
}

static void noop_fini(void *ctx)
{
	(void)ctx;
}

static void naive_gemm1(const struct gnn_gemm *g)
{
	for (uint32_t i = 0; i < g->m; i++) {
		for (uint32_t j = 0; j < g->n; j++) {
			float acc = 0;
			float *c = g->c + (size_t)i * g->ldc + j;

			for (uint32_t p = 0; p < g->k; p++) {
				float a = g->trans_a ? g->a[(size_t)p * g->lda + i] :
						       g->a[(size_t)i * g->lda + p];
				float b = g->trans_b ? g->b[(size_t)j * g->ldb + p] :
						       g->b[(size_t)p * g->ldb + j];

				acc += a * b;
			}
			*c = g->beta == 0 ? g->alpha * acc : g->alpha * acc + g->beta * *c;
		}
	}
}

static void naive_gemm_batch(void *ctx, const struct gnn_gemm *g, size_t count)
{
	(void)ctx;
	for (size_t i = 0; i < count; i++)
		naive_gemm1(&g[i]);
}

static const char *naive_info(void *ctx)
{
	(void)ctx;
	return "reference triple-loop GEMM";
}

#ifdef GNN_HAVE_CBLAS
static void cpu_gemm_batch(void *ctx, const struct gnn_gemm *g, size_t count)
{
	(void)ctx;
	for (size_t i = 0; i < count; i++) {
		const struct gnn_gemm *x = &g[i];

		if (x->m == 0 || x->n == 0)
			continue;
		if (x->k == 0) {
			/* BLAS scales C by beta; keep the beta == 0 "not read" rule. */
			for (uint32_t r = 0; r < x->m; r++)
				for (uint32_t c = 0; c < x->n; c++) {
					float *p = x->c + (size_t)r * x->ldc + c;

					*p = x->beta == 0 ? 0 : x->beta * *p;
				}
			continue;
		}
		cblas_sgemm(CblasRowMajor, x->trans_a ? CblasTrans : CblasNoTrans,
			    x->trans_b ? CblasTrans : CblasNoTrans, (int)x->m, (int)x->n, (int)x->k,
			    x->alpha, x->a, (int)x->lda, x->b, (int)x->ldb, x->beta, x->c,
			    (int)x->ldc);
	}
}

static int cpu_init(void **ret_ctx, struct gnn_err *err)
{
	(void)err;
#ifdef GNN_HAVE_OPENBLAS_THREADS
	/* A scheduler step is small: BLAS threads cost more than they save. */
	openblas_set_num_threads(1);
#endif
	*ret_ctx = NULL;
	return 0;
}

static const char *cpu_info(void *ctx)
{
	(void)ctx;
#ifdef GNN_HAVE_OPENBLAS_THREADS
	return "OpenBLAS cblas_sgemm, 1 thread";
#else
	return "CBLAS cblas_sgemm (library's default threading)";
#endif
}
#else
#define cpu_gemm_batch naive_gemm_batch
#define cpu_init       noop_init
static const char *cpu_info(void *ctx)
{
	(void)ctx;
	return "no BLAS at build time: reference triple-loop GEMM";
}
#endif

static const struct gnn_backend_class cpu_class = {
	.name = "cpu",
	.host_memory = true,
	.init = cpu_init,
	.fini = noop_fini,
	.info = cpu_info,
	.mem_alloc = cpu_alloc,
	.mem_free = cpu_free,
	.mem_alloc_shared = cpu_alloc,
	.mem_free_shared = cpu_free,
	.copy_to_dev = cpu_copy,
	.copy_to_host = cpu_copy,
	.sync = noop_sync,
	.gemm_batch = cpu_gemm_batch,
	.kernels = &gnn_kernels_ref,
};

static const struct gnn_backend_class naive_class = {
	.name = "naive",
	.host_memory = true,
	.init = noop_init,
	.fini = noop_fini,
	.info = naive_info,
	.mem_alloc = cpu_alloc,
	.mem_free = cpu_free,
	.mem_alloc_shared = cpu_alloc,
	.mem_free_shared = cpu_free,
	.copy_to_dev = cpu_copy,
	.copy_to_host = cpu_copy,
	.sync = noop_sync,
	.gemm_batch = naive_gemm_batch,
	.kernels = &gnn_kernels_ref,
};

static const struct gnn_backend_class *const classes[] = {
	&cpu_class,
	&naive_class,
};

#ifdef GNN_HAVE_CUDA
/*
 * The cuda module, loaded once per process (pthread_once) by cuda_load():
 * mod when it loaded, else the error (ENODEV: not found or not loadable;
 * EIO: not a module of this build) and its message. Neither changes after.
 */
static struct {
	pthread_once_t once;
	const struct gnn_cuda_module *mod;
	int error;
	char msg[GNN_ERR_MAX];
} cuda = {.once = PTHREAD_ONCE_INIT};

/*
 * Where the module is looked for when GNN_CUDA_MODULE_ENV is not set, in
 * order: the build tree (meson bakes in the path, so programs and tests run
 * from it find it), then the installed copy, under <libdir>/loom/.
 */
static const char *const cuda_module_paths[] = {GNN_CUDA_MODULE_BUILD, GNN_CUDA_MODULE_INSTALL};
#define NPATHS (sizeof(cuda_module_paths) / sizeof(cuda_module_paths[0]))

/* Writes the loading error e into cuda. */
__attribute__((format(printf, 2, 3))) static void cuda_fail(int e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cuda.msg, sizeof(cuda.msg), fmt, ap);
	va_end(ap);
	cuda.error = e;
}

/*
 * Loads the module: the file GNN_CUDA_MODULE_ENV names when it is set and
 * not empty (that one only), else the first of cuda_module_paths that
 * exists. The handle is never closed: the class handed out must stay valid
 * for the life of the process, and a file that fails the checks is left
 * mapped too (it is opened at most once).
 */
static void cuda_load(void)
{
	static const struct gnn_cuda_module want = {GNN_CUDA_MODULE_INIT};
	const char *path = getenv(GNN_CUDA_MODULE_ENV), *from = GNN_CUDA_MODULE_ENV;
	const struct gnn_cuda_module *mod;
	gnn_cuda_module_fn *get;
	void *h;

	if (!path || !path[0]) {
		path = NULL;
		from = "built-in path";
		for (size_t i = 0; i < NPATHS && !path; i++)
			if (access(cuda_module_paths[i], F_OK) == 0)
				path = cuda_module_paths[i];
		if (!path) {
			cuda_fail(ENODEV,
				  "cuda: module not found: neither %s nor %s exists (set %s)",
				  cuda_module_paths[0], cuda_module_paths[1], GNN_CUDA_MODULE_ENV);
			return;
		}
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		cuda_fail(ENODEV, "cuda: cannot load module %s (%s): %s", path, from, dlerror());
		return;
	}
	get = (gnn_cuda_module_fn *)dlsym(h, GNN_CUDA_MODULE_SYMBOL);
	if (!get) {
		cuda_fail(EIO, "cuda: %s (%s) is not a cuda module: %s", path, from, dlerror());
		return;
	}
	mod = get();
	if (!mod || !mod->backend || !mod->probe) {
		cuda_fail(EIO, "cuda: module %s (%s) gave no backend", path, from);
		return;
	}
	if (mod->abi != want.abi || mod->class_bytes != want.class_bytes ||
	    mod->kernels_bytes != want.kernels_bytes || mod->unit_bytes != want.unit_bytes ||
	    mod->gemm_bytes != want.gemm_bytes || mod->err_bytes != want.err_bytes) {
		cuda_fail(EIO,
			  "cuda: module %s (%s) is of another build: ABI %u, sizes %u/%u/%u/%u/%u; "
			  "want ABI %u, sizes %u/%u/%u/%u/%u",
			  path, from, mod->abi, mod->class_bytes, mod->kernels_bytes,
			  mod->unit_bytes, mod->gemm_bytes, mod->err_bytes, want.abi,
			  want.class_bytes, want.kernels_bytes, want.unit_bytes, want.gemm_bytes,
			  want.err_bytes);
		return;
	}
	cuda.mod = mod;
}

/* The loaded module, or NULL + errno with the reason in err. */
static const struct gnn_cuda_module *cuda_module(struct gnn_err *err)
{
	pthread_once(&cuda.once, cuda_load);
	if (!cuda.mod)
		errno = -gnn_errf(err, cuda.error, "%s", cuda.msg);
	return cuda.mod;
}

int gnn_cuda_probe(struct gnn_err *err)
{
	const struct gnn_cuda_module *mod = cuda_module(err);

	return mod ? mod->probe(err) : -cuda.error;
}
#else
int gnn_cuda_probe(struct gnn_err *err)
{
	return gnn_errf(err, ENOSYS, "cuda: this build has no CUDA backend (valid: %s)",
			gnn_backend_names());
}
#endif

const char *gnn_backend_names(void)
{
#ifdef GNN_HAVE_CUDA
	return "cpu, naive, cuda";
#else
	return "cpu, naive";
#endif
}

const struct gnn_backend_class *gnn_backend_find(const char *name, struct gnn_err *err)
{
	if (!name)
		name = "cpu";
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (strcmp(classes[i]->name, name) == 0)
			return classes[i];
	if (strcmp(name, "cuda") == 0) {
#ifdef GNN_HAVE_CUDA
		const struct gnn_cuda_module *mod = cuda_module(err);

		return mod ? mod->backend : NULL;
#else
		errno = -gnn_errf(err, ENODEV,
				  "gnn backend 'cuda': this build has no CUDA backend (valid: %s)",
				  gnn_backend_names());
		return NULL;
#endif
	}
	errno = -gnn_errf(err, ENOENT, "unknown gnn backend '%s' (valid: %s)", name,
			  gnn_backend_names());
	return NULL;
}
