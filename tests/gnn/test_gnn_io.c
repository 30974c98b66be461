/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for gnn/'s weights file: save -> load round trips give bitwise
 * equal scores (gnn_model_load and gnn_load_into); truncated, corrupted
 * (checksum), wrong-magic, wrong-version, wrong-size and bad-shape files are
 * rejected with a message; loading into a model of other dims is -EINVAL and
 * leaves it unchanged; the seed corpus of the fuzz target is handled.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gnn/gnn.h"
#include "gnn_test_util.h"

static const uint32_t SCHED[] = {0, 3, 5, 13, 17, 21};
#define NSCHED ((uint32_t)(sizeof(SCHED) / sizeof(SCHED[0])))

static void temp_path(char *buf, size_t len)
{
	int fd;

	snprintf(buf, len, "/tmp/loom-test-gnn-%ld-XXXXXX", (long)getpid());
	fd = mkstemp(buf);
	assert_true(fd >= 0);
	close(fd);
}

static struct gnn_model *new_model(const struct gnn_config *c, uint64_t seed)
{
	struct gnn_err err = {{0}};
	struct gnn_model *m = gnn_model_new(c, "cpu", seed, &err);

	if (!m)
		fail_msg("gnn_model_new: %s", err.msg);
	return m;
}

static void scores(struct gnn_model *m, float *s)
{
	struct tb *b = malloc(sizeof(*b));
	struct gnn_batch batch;
	struct gnn_err err = {{0}};

	assert_non_null(b);
	tb_mixed(b, gnn_model_config(m)->nfeatures, 4);
	batch = tb_batch(b);
	if (gnn_forward(m, &batch, SCHED, NSCHED, s, &err) != 0)
		fail_msg("gnn_forward: %s", err.msg);
	free(b);
}

static uint8_t *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void write_all(const char *path, const uint8_t *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
}

/* Recomputes the trailing FNV-1a 64 checksum (so the test reaches the checks after it). */
static void fix_checksum(uint8_t *buf, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len - 8; i++) {
		h ^= buf[i];
		h *= 0x100000001b3ULL;
	}
	for (int i = 0; i < 8; i++)
		buf[len - 8 + i] = (uint8_t)(h >> (8 * i));
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void test_round_trip(void **state)
{
	struct gnn_config c = tb_small_config();
	struct gnn_model *m = new_model(&c, 7), *m2, *m3 = new_model(&c, 8);
	struct gnn_err err = {{0}};
	char path[128];
	float s1[NSCHED], s2[NSCHED], s3[NSCHED];
	struct gnn_adam opt = gnn_adam_default();

	(void)state;
	temp_path(path, sizeof(path));
	/* train a step so the weights are not just the init */
	scores(m, s1);
	gnn_zero_grad(m);
	assert_int_equal(gnn_backward(m, s1, NSCHED, &err), 0);
	assert_int_equal(gnn_adam_step(m, &opt, NULL, &err), 0);
	scores(m, s1);
	assert_int_equal(gnn_save(m, path, &err), 0);

	m2 = gnn_model_load(path, "naive", &err);
	if (!m2)
		fail_msg("gnn_model_load: %s", err.msg);
	assert_int_equal(gnn_nparams(m2), gnn_nparams(m));
	assert_int_equal(gnn_model_config(m2)->heads, c.heads);
	gnn_model_free(m2);
	m2 = gnn_model_load(path, "cpu", &err);
	assert_non_null(m2);
	scores(m2, s2);
	assert_memory_equal(s1, s2, sizeof(s1));

	scores(m3, s3);
	assert_true(memcmp(s1, s3, sizeof(s1)) != 0);
	assert_int_equal(gnn_load_into(m3, path, &err), 0);
	scores(m3, s3);
	assert_memory_equal(s1, s3, sizeof(s1));
	for (uint32_t t = 0; t < gnn_param_count(m); t++) {
		struct gnn_param a, b;

		gnn_param_get(m, t, &a);
		gnn_param_get(m3, t, &b);
		assert_string_equal(a.name, b.name);
		assert_memory_equal(a.value, b.value, (size_t)a.rows * a.cols * sizeof(float));
	}
	unlink(path);
	gnn_model_free(m);
	gnn_model_free(m2);
	gnn_model_free(m3);
}

/* Writes buf to a file, expects gnn_load_into(m) and gnn_model_load() to fail with needle. */
static void expect_rejected(struct gnn_model *m, const uint8_t *buf, size_t len, const char *needle)
{
	struct gnn_err err = {{0}};
	char path[128];
	float before[NSCHED], after[NSCHED];

	temp_path(path, sizeof(path));
	write_all(path, buf, len);
	scores(m, before);
	assert_int_equal(gnn_load_into(m, path, &err), -EINVAL);
	if (!strstr(err.msg, needle) || strncmp(err.msg, path, strlen(path)) != 0)
		fail_msg("message '%s' lacks '%s' or the path", err.msg, needle);
	scores(m, after);
	assert_memory_equal(before, after, sizeof(before));
	errno = 0;
	memset(&err, 0, sizeof(err));
	assert_null(gnn_model_load(path, "cpu", &err));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(err.msg, needle));
	unlink(path);
}

static void test_rejects(void **state)
{
	struct gnn_config c = tb_small_config();
	struct gnn_model *m = new_model(&c, 1);
	struct gnn_err err = {{0}};
	char path[128];
	uint8_t *good, *bad;
	size_t len;

	(void)state;
	temp_path(path, sizeof(path));
	assert_int_equal(gnn_save(m, path, &err), 0);
	good = read_all(path, &len);
	unlink(path);
	assert_int_equal(len, 44 + 4 * gnn_nparams(m) + 8);
	bad = malloc(len + 16);
	assert_non_null(bad);

	/* truncated: empty, inside the header, inside the data, the checksum cut */
	expect_rejected(m, good, 0, "truncated");
	expect_rejected(m, good, 20, "truncated");
	expect_rejected(m, good, len / 2, "truncated");
	expect_rejected(m, good, len - 3, "truncated");
	/* trailing garbage */
	memcpy(bad, good, len);
	memset(bad + len, 0, 16);
	expect_rejected(m, bad, len + 16, "trailing");
	/* corrupted parameter byte */
	memcpy(bad, good, len);
	bad[100] ^= 0x40;
	expect_rejected(m, bad, len, "checksum");
	/* wrong magic */
	memcpy(bad, good, len);
	bad[0] = 'X';
	expect_rejected(m, bad, len, "magic");
	/* wrong version (checksum fixed so the version check is what fails) */
	memcpy(bad, good, len);
	put32(bad + 8, 3);
	fix_checksum(bad, len);
	expect_rejected(m, bad, len, "version 3");
	/* a shape whose float count differs from the file's */
	memcpy(bad, good, len);
	put32(bad + 16, c.hidden + 1);
	fix_checksum(bad, len);
	expect_rejected(m, bad, len, "needs");
	/* an invalid shape: heads not dividing 2 * emb */
	memcpy(bad, good, len);
	put32(bad + 28, 5);
	fix_checksum(bad, len);
	expect_rejected(m, bad, len, "bad shape");
	/* a non-finite parameter */
	memcpy(bad, good, len);
	put32(bad + 44 + 4 * 3, 0x7fc00000u);
	fix_checksum(bad, len);
	expect_rejected(m, bad, len, "not finite");
	/* the unmodified bytes with a fixed checksum still load (the fixer is right) */
	memcpy(bad, good, len);
	fix_checksum(bad, len);
	assert_memory_equal(bad, good, len);

	/* a missing file: -ENOENT */
	assert_int_equal(gnn_load_into(m, "/nonexistent/gnn.weights", &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/gnn.weights"));
	free(good);
	free(bad);
	gnn_model_free(m);
}

/* A valid file of another shape: -EINVAL into this model, which stays as it was. */
static void test_other_dims(void **state)
{
	struct gnn_config c = tb_small_config(), c2 = tb_small_config();
	struct gnn_model *m, *other;
	struct gnn_err err = {{0}};
	char path[128];
	float before[NSCHED], after[NSCHED];

	(void)state;
	c2.hidden = 8;
	m = new_model(&c, 1);
	other = new_model(&c2, 2);
	temp_path(path, sizeof(path));
	assert_int_equal(gnn_save(other, path, &err), 0);
	scores(m, before);
	assert_int_equal(gnn_load_into(m, path, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "shape"));
	assert_non_null(strstr(err.msg, "d=8"));
	scores(m, after);
	assert_memory_equal(before, after, sizeof(before));
	unlink(path);
	gnn_model_free(m);
	gnn_model_free(other);
}

/*
 * Residual scoring: a model with a prior starts with a zero last layer (all
 * scores 0 until trained), is written as version 2 with its prior and scale,
 * and loads back with them; a model without one is still written as version
 * 1. A file of another prior does not load into a model; a version 2 file
 * with prior 0 and a config with a bad prior or scale are refused.
 */
static void test_prior(void **state)
{
	struct gnn_config c = tb_small_config(), plain = tb_small_config();
	struct gnn_model *m, *m2, *other;
	struct gnn_err err = {{0}};
	struct gnn_adam opt = gnn_adam_default();
	float s[NSCHED], s2[NSCHED];
	uint8_t *buf;
	size_t len;
	char path[128];

	(void)state;
	c.prior = 3;
	c.prior_scale = 1.5f;
	m = new_model(&c, 7);
	scores(m, s);
	for (uint32_t i = 0; i < NSCHED; i++)
		assert_true(s[i] == 0.0f);
	/* one step makes the scores move */
	for (uint32_t i = 0; i < NSCHED; i++)
		s2[i] = (float)(i + 1);
	gnn_zero_grad(m);
	assert_int_equal(gnn_backward(m, s2, NSCHED, &err), 0);
	assert_int_equal(gnn_adam_step(m, &opt, NULL, &err), 0);
	scores(m, s);
	assert_true(s[0] != 0.0f);
	temp_path(path, sizeof(path));
	assert_int_equal(gnn_save(m, path, &err), 0);
	buf = read_all(path, &len);
	assert_int_equal(len, 52 + 4 * gnn_nparams(m) + 8);
	assert_int_equal(buf[8], 2);
	m2 = gnn_model_load(path, "cpu", &err);
	if (!m2)
		fail_msg("gnn_model_load: %s", err.msg);
	assert_int_equal(gnn_model_config(m2)->prior, 3);
	assert_true(gnn_model_config(m2)->prior_scale == 1.5f);
	scores(m2, s2);
	assert_memory_equal(s, s2, sizeof(s));
	/* into a model of the same shape without a prior: refused, unchanged */
	other = new_model(&plain, 9);
	scores(other, s);
	assert_int_equal(gnn_load_into(other, path, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "prior"));
	scores(other, s2);
	assert_memory_equal(s, s2, sizeof(s));
	/* a version 2 file that says prior 0 */
	put32(buf + 44, 0);
	fix_checksum(buf, len);
	expect_rejected(m2, buf, len, "prior 0");
	free(buf);
	/* no prior: version 1, 44-byte header, as earlier builds wrote */
	assert_int_equal(gnn_save(other, path, &err), 0);
	buf = read_all(path, &len);
	assert_int_equal(len, 44 + 4 * gnn_nparams(other) + 8);
	assert_int_equal(buf[8], 1);
	free(buf);
	unlink(path);
	/* bad configs */
	c.prior = GNN_MAX_PRIOR + 1;
	assert_null(gnn_model_new(&c, "cpu", 1, &err));
	assert_non_null(strstr(err.msg, "prior"));
	c.prior = 1;
	c.prior_scale = -1;
	assert_null(gnn_model_new(&c, "cpu", 1, &err));
	assert_non_null(strstr(err.msg, "prior_scale"));
	c.prior_scale = NAN;
	assert_null(gnn_model_new(&c, "cpu", 1, &err));
	gnn_model_free(m);
	gnn_model_free(m2);
	gnn_model_free(other);
}

/* Every file of the fuzz target's seed corpus loads or is refused with a message. */
static void test_fuzz_corpus(void **state)
{
	const char *src = getenv("LOOM_SRCDIR");
	char dir[4096], path[4096 + 256];
	struct dirent *de;
	DIR *d;
	int loaded = 0, refused = 0;

	(void)state;
	if (!src)
		fail_msg("LOOM_SRCDIR is not set (meson test sets it to the source root)");
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/gnn", src);
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d))) {
		struct gnn_err err = {{0}};
		struct gnn_model *m;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		m = gnn_model_load(path, "cpu", &err);
		if (m) {
			assert_true(strncmp(de->d_name, "good", 4) == 0);
			loaded++;
			gnn_model_free(m);
		} else {
			assert_true(strncmp(de->d_name, "bad", 3) == 0);
			assert_true(err.msg[0] != '\0');
			refused++;
		}
	}
	closedir(d);
	assert_true(loaded >= 1);
	assert_true(refused >= 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),  cmocka_unit_test(test_rejects),
		cmocka_unit_test(test_other_dims),  cmocka_unit_test(test_prior),
		cmocka_unit_test(test_fuzz_corpus),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
