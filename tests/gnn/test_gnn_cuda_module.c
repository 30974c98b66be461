/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "cuda" backend lives in a module of its own (libloom_gnn_cuda.so)
 * that gnn/backend.c loads with dlopen() the first time a process asks for
 * "cuda" (gnn/cuda_module.h). Checked here, each in a fresh child process
 * (the module is loaded at most once per process):
 *
 *   - a process that only makes and runs "cpu" models maps neither the
 *     module nor cuBLAS nor the CUDA runtime;
 *   - with $LOOM_GNN_CUDA_MODULE naming a file that is not there,
 *     gnn_cuda_probe() and gnn_backend_find("cuda") give ENODEV naming the
 *     path and the variable, and gnn_model_new("cuda") gives a "cpu" model
 *     whose fallback reason says the same; nothing of CUDA is mapped;
 *   - with $LOOM_GNN_CUDA_MODULE naming a library that is not a cuda module
 *     (libc), the probe gives EIO and "cuda" models fall back to "cpu";
 *   - without the variable the module of this build tree loads: the probe's
 *     answer is the CUDA runtime's (0 with a device, else its reason), and
 *     the module and cuBLAS are mapped afterwards, which is what shows the
 *     first check can see them.
 *
 * Suite gnn. main() exits 77 when this build has no CUDA backend (there is
 * no module to load) or /proc/self/maps cannot be read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gnn/gnn.h"
#include "gnn_test_util.h"

#define ENV     "LOOM_GNN_CUDA_MODULE"
#define MISSING "/nonexistent-loom-test/libloom_gnn_cuda.so"

/* What a check run in a child found wrong; sent to the parent through a pipe. */
static char child_why[1024];

__attribute__((format(printf, 1, 2))) static const char *why(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(child_why, sizeof(child_why), fmt, ap);
	va_end(ap);
	return child_why;
}

/*
 * The first line of /proc/self/maps that contains needle, copied into line
 * (size bytes); false when there is none or the file cannot be read.
 */
static bool maps_find(const char *needle, char *line, size_t size)
{
	FILE *f = fopen("/proc/self/maps", "r");
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, (int)size, f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

/* The first library of CUDA (the module, cuBLAS, the runtime) mapped here, or NULL. */
static const char *cuda_mapped(void)
{
	static const char *const libs[] = {"libloom_gnn_cuda", "libcublas", "libcudart"};
	char line[4096];

	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
		if (maps_find(libs[i], line, sizeof(line)))
			return libs[i];
	return NULL;
}

/* A cpu model's forward pass on the standard batch; NULL or what failed. */
static const char *cpu_forward(struct gnn_model *m)
{
	struct gnn_err err = {{0}};
	struct tb b;
	struct gnn_batch gb;
	uint32_t sched[] = {0, 3, 4, 8, 13, 14, 20};
	float scores[sizeof(sched) / sizeof(sched[0])];

	tb_mixed(&b, 5, 3);
	gb = tb_batch(&b);
	if (gnn_forward(m, &gb, sched, sizeof(sched) / sizeof(sched[0]), scores, &err) < 0)
		return why("gnn_forward: %s", err.msg);
	return NULL;
}

/* A child's check: NULL when it holds, else what is wrong. */
typedef const char *check_fn(void);

/* Runs check in a child process; fails the test with the child's reason. */
static void in_child(check_fn *check)
{
	char buf[sizeof(child_why)];
	size_t n = 0;
	ssize_t got;
	int fd[2], status = 0;
	pid_t pid;

	assert_int_equal(pipe(fd), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const char *w;

		close(fd[0]);
		w = check();
		if (w && write(fd[1], w, strlen(w)) < 0)
			_exit(2);
		_exit(w ? 1 : 0);
	}
	close(fd[1]);
	while (n < sizeof(buf) - 1 && (got = read(fd[0], buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)got;
	buf[n] = 0;
	close(fd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		fail_msg("the child was killed by signal %d", WTERMSIG(status));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("%s", n ? buf : "the child failed without saying why");
}

static const char *check_cpu_only(void)
{
	struct gnn_config c = tb_small_config();
	struct gnn_err err = {{0}};
	struct gnn_model *m[3];
	const char *w = NULL, *lib;

	/* the module is where this build put it, so a load would map it */
	unsetenv(ENV);
	if (!gnn_backend_find("cpu", &err) || !gnn_backend_find("naive", &err) ||
	    gnn_backend_find("tpu", &err))
		return why("backend lookup: %s", err.msg);
	m[0] = gnn_model_new(&c, "cpu", 1, &err);
	m[1] = gnn_model_new(&c, NULL, 2, &err);
	m[2] = gnn_model_new(&c, "naive", 3, &err);
	for (int i = 0; i < 3 && !w; i++)
		w = m[i] ? cpu_forward(m[i]) : why("gnn_model_new: %s", err.msg);
	for (int i = 0; i < 3; i++)
		gnn_model_free(m[i]);
	if (w)
		return w;
	if ((lib = cuda_mapped()))
		return why("%s is mapped in a process that made only cpu and naive models", lib);
	return NULL;
}

static const char *check_missing_module(void)
{
	struct gnn_config c = tb_small_config();
	struct gnn_err err = {{0}};
	struct gnn_model *m;
	const char *w = NULL, *lib;
	int r;

	setenv(ENV, MISSING, 1);
	r = gnn_cuda_probe(&err);
	if (r != -ENODEV)
		return why("gnn_cuda_probe = %d (want -ENODEV): %s", r, err.msg);
	if (!strstr(err.msg, MISSING) || !strstr(err.msg, ENV))
		return why("the probe's message names neither the path nor %s: %s", ENV, err.msg);
	errno = 0;
	err.msg[0] = 0;
	if (gnn_backend_find("cuda", &err) || errno != ENODEV || !strstr(err.msg, MISSING))
		return why("gnn_backend_find(cuda): errno %d, %s", errno, err.msg);
	m = gnn_model_new(&c, "cuda", 1, &err);
	if (!m)
		return why("gnn_model_new(cuda) did not fall back: %s", err.msg);
	if (strcmp(gnn_model_backend(m), "cpu") != 0)
		w = why("the model runs on %s, not cpu", gnn_model_backend(m));
	else if (!gnn_model_fallback(m) || !strstr(gnn_model_fallback(m), MISSING))
		w = why("fallback reason %s does not name the module",
			gnn_model_fallback(m) ? gnn_model_fallback(m) : "(none)");
	else
		w = cpu_forward(m);
	gnn_model_free(m);
	if (w)
		return w;
	if ((lib = cuda_mapped()))
		return why("%s is mapped though the module was not found", lib);
	return NULL;
}

static const char *check_not_a_module(void)
{
	struct gnn_config c = tb_small_config();
	struct gnn_err err = {{0}};
	struct gnn_model *m;
	char line[4096], *path;
	const char *w = NULL;
	int r;

	if (!maps_find("/libc.so", line, sizeof(line)) || !(path = strchr(line, '/')))
		return why("libc is not in /proc/self/maps");
	path[strcspn(path, "\n")] = 0;
	setenv(ENV, path, 1);
	r = gnn_cuda_probe(&err);
	if (r != -EIO || !strstr(err.msg, "not a cuda module") || !strstr(err.msg, path))
		return why("gnn_cuda_probe on %s = %d (want -EIO, not a cuda module): %s", path, r,
			   err.msg);
	m = gnn_model_new(&c, "cuda", 1, &err);
	if (!m)
		return why("gnn_model_new(cuda) did not fall back: %s", err.msg);
	if (strcmp(gnn_model_backend(m), "cpu") != 0 || !gnn_model_fallback(m) ||
	    !strstr(gnn_model_fallback(m), "not a cuda module"))
		w = why("backend %s, fallback %s", gnn_model_backend(m),
			gnn_model_fallback(m) ? gnn_model_fallback(m) : "(none)");
	gnn_model_free(m);
	return w;
}

static const char *check_module_loads(void)
{
	struct gnn_config c = tb_small_config();
	struct gnn_err err = {{0}};
	const struct gnn_backend_class *be;
	struct gnn_model *m;
	char line[4096];
	const char *w = NULL;
	int r;

	unsetenv(ENV);
	r = gnn_cuda_probe(&err);
	/* the runtime's answer: a device, or its reason (cuda_probe in backend_cuda.cu) */
	if (r != 0 && !strstr(err.msg, "cudaGetDeviceCount") && !strstr(err.msg, "no CUDA device"))
		return why("gnn_cuda_probe = %d, not the runtime's answer: %s", r, err.msg);
	be = gnn_backend_find("cuda", &err);
	if (!be || strcmp(be->name, "cuda") != 0 || be->host_memory)
		return why("gnn_backend_find(cuda) after the module loaded: %s",
			   be ? be->name : err.msg);
	if (!maps_find("libloom_gnn_cuda", line, sizeof(line)) ||
	    !maps_find("libcublas", line, sizeof(line)))
		return why("the module or cuBLAS is not mapped after the module loaded");
	m = gnn_model_new(&c, "cuda", 1, &err);
	if (!m)
		return why("gnn_model_new(cuda): %s", err.msg);
	if (r == 0 && gnn_model_fallback(m))
		w = why("a device is there but the model fell back: %s", gnn_model_fallback(m));
	else if (r != 0 && (!gnn_model_fallback(m) || strcmp(gnn_model_backend(m), "cpu") != 0))
		w = why("no device, yet the model runs on %s", gnn_model_backend(m));
	gnn_model_free(m);
	return w;
}

static void test_cpu_only_maps_no_cuda(void **state)
{
	(void)state;
	in_child(check_cpu_only);
}

static void test_missing_module(void **state)
{
	(void)state;
	in_child(check_missing_module);
}

static void test_not_a_module(void **state)
{
	(void)state;
	in_child(check_not_a_module);
}

static void test_module_loads(void **state)
{
	(void)state;
	in_child(check_module_loads);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_only_maps_no_cuda),
		cmocka_unit_test(test_missing_module),
		cmocka_unit_test(test_not_a_module),
		cmocka_unit_test(test_module_loads),
	};

	/* The machine's preconditions: a module to load, and a way to see what is mapped. */
	if (!strstr(gnn_backend_names(), "cuda")) {
		printf("gnn cuda module: skipped: this build has no CUDA backend\n");
		return 77;
	}
	if (access("/proc/self/maps", R_OK) != 0) {
		printf("gnn cuda module: skipped: /proc/self/maps: %s\n", strerror(errno));
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
